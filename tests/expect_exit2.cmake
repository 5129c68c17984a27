# ctest helper: run CMD with ARGS and require exit status 2 and a message on stderr.
execute_process(COMMAND ${CMD} ${ARGS} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit status 2 from '${CMD} ${ARGS}', got ${rc}")
endif()
if(err STREQUAL "")
  message(FATAL_ERROR "expected a message on stderr from '${CMD} ${ARGS}'")
endif()
