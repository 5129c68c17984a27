# Writes OUT: the GLSL libraries of SOURCES (comma-separated) as C++, so that the CPU executor runs
# the same elementary functions as the generated kernels, operation for operation (the bits may not
# depend on where a region runs). The GLSL is kept to a subset that C++ reads once these few
# spellings are rewritten; backends/cpu/glsl_prelude.hpp supplies dvec2 and the GLSL builtins.
#   1.0LF -> 1.0           (GLSL's double literal suffix)
#   precise                (dropped: the C++ is compiled with -ffp-contract=off, so nothing contracts)
#   out T x, inout T x     -> T& x
#   [[dont_flatten]]       (dropped: a GLSL control-flow hint)
#   double tdm_f(          -> inline; tdm_*_fast and TDM_INLINE helpers always inlined (the CPU's vector
#                             loops need them whole)
string(REPLACE "," ";" files "${SOURCES}")
set(text "// Generated from shaders/ by cmake/glsl_to_cpp.cmake; do not edit.\n")
foreach(f IN LISTS files)
  file(READ ${f} body)
  string(REGEX REPLACE "([0-9])LF" "\\1" body "${body}")
  string(REGEX REPLACE "precise " "" body "${body}")
  string(REGEX REPLACE "([(,] *)(in)?out +([A-Za-z0-9_]+) " "\\1\\3& " body "${body}")
  string(REGEX REPLACE "\\[\\[[a-z_]+\\]\\] *" "" body "${body}")
  # The fast paths run in the CPU's vectorised loops: inlined whole, or GCC cannot vectorise them;
  # `inline` on the rest lets GCC inline their helpers by the larger limit for inline functions.
  string(REGEX REPLACE "\n(double|float|bool|int|uint|dvec2) (tdm_[a-z0-9_]+)\\(" "\ninline \\1 \\2(" body "${body}")
  string(REGEX REPLACE "\ninline ([a-z0-9]+) (tdm_[a-z0-9_]+_fast)\\(" "\n[[gnu::always_inline]] inline \\1 \\2(" body "${body}")
  # ... and so are the helpers they call, marked TDM_INLINE in the GLSL (an empty macro there).
  string(REGEX REPLACE "\nTDM_INLINE ([a-z0-9]+) (tdm_[a-z0-9_]+)\\(" "\n[[gnu::always_inline]] inline \\1 \\2(" body "${body}")
  get_filename_component(name ${f} NAME)
  string(APPEND text "// ---- ${name}\n${body}\n")
endforeach()
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
