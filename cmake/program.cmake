# SPDX-License-Identifier: MIT
# arena_add_program(NAME SOURCE [LIBS...]): a program of the project (an
# example, a test suite) from one source, linked to the static library and
# LIBS, built with the project's warnings.
function(arena_add_program name source)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE arena::arena_static ${ARGN})
  target_compile_options(${name} PRIVATE ${ARENA_WARNINGS})
endfunction()
