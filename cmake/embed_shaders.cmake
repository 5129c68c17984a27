# Writes OUT: a header with each file of SOURCES (comma-separated) as a string constant named
# after the file (math_f64.glsl -> tandem_shader_math_f64).
string(REPLACE "," ";" files "${SOURCES}")
set(text "// Generated from shaders/ by cmake/embed_shaders.cmake; do not edit.\n#pragma once\n\n")
foreach(f IN LISTS files)
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} body)
  string(APPEND text "inline constexpr const char tandem_shader_${name}[] = R\"tandem_glsl(${body})tandem_glsl\";\n\n")
endforeach()
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
