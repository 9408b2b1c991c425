# SPDX-License-Identifier: MIT
# A program must be compiled with the ARENA_CHECKED of the library it links
# (the checked build changes the inline code and what each value carries).
# tests/package/consumer.c compiled as the installed arena/version.h says
# links against both libraries and runs; compiled with ARENA_CHECKED=1
# against a plain library it must not link, the linker naming the symbol
# that only a checked library exports.  Run by CTest with -DSOURCE_DIR=
# -DBUILD_DIR= -DWORK_DIR= -DC_COMPILER= -DC_FLAGS= -DSTATIC_LIB= -DSHARED_LIB=
# -DCHECKED= (the library's setting), and in a cross build -DRUN= (its
# emulator).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
separate_arguments(flags UNIX_COMMAND "${C_FLAGS}")
get_filename_component(libdir ${SHARED_LIB} DIRECTORY)
# compile(NAME LIB [DEFINES...]): the consumer linked with LIB; sets `rc` and
# `out` in the caller's scope.
function(compile name lib)
  execute_process(
    COMMAND ${C_COMPILER} -std=c11 ${flags} ${ARGN} -I${SOURCE_DIR}/include -I${BUILD_DIR}/include
            ${SOURCE_DIR}/tests/package/consumer.c ${lib} -pthread -o ${WORK_DIR}/${name}
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  set(rc ${result} PARENT_SCOPE)
  set(out "${output}" PARENT_SCOPE)
endfunction()

foreach(kind static shared)
  if(kind STREQUAL "static")
    set(lib ${STATIC_LIB})
  else()
    set(lib ${SHARED_LIB})
  endif()
  compile(as_built_${kind} ${lib})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the consumer, compiled as the library was built, did not link "
                        "(${kind}):\n${out}")
  endif()
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${RUN} ${WORK_DIR}/as_built_${kind})
  if(NOT last_output MATCHES "consumer ok")
    message(FATAL_ERROR "the consumer (${kind}) printed: ${last_output}")
  endif()
  if(NOT CHECKED)
    compile(checked_${kind} ${lib} -DARENA_CHECKED=1)
    if(rc EQUAL 0)
      message(FATAL_ERROR "a program compiled with ARENA_CHECKED=1 linked against the plain "
                          "${kind} library: its misuse would go unreported")
    endif()
    if(NOT out MATCHES "arena__checked_library")
      message(FATAL_ERROR "linking a checked program against the plain ${kind} library failed, "
                          "but not for the checked build's symbol:\n${out}")
    endif()
  endif()
endforeach()
if(CHECKED)
  message(STATUS "a checked program links against the checked libraries")
else()
  message(STATUS "a checked program does not link against the plain libraries: ${out}")
endif()
