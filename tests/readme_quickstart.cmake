# SPDX-License-Identifier: MIT
# The README's example: runs COMMAND and checks what it prints, in every
# configuration.  Three batches, each a thousand rows named user-B-0 ..
# user-B-999 and stored as 1000 rows (two pointers' worth each) plus 10,890
# bytes of names; the same bytes held after each reset (the chunks are
# kept), never fewer than are stored.  (tests/readme_install.sh checks the
# README's printed output itself, against a plain 64-bit build.)
# Use: cmake -DCOMMAND=... -DSIZEOF_VOID_P=... -P readme_quickstart.cmake
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit status ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "expected exit status 0")
endif()
math(EXPR want_stored "1000 * 2 * ${SIZEOF_VOID_P} + 10890")
set(line "batch ([0-9]): user-([0-9])-0 [.][.] user-([0-9])-999, ")
string(APPEND line "([0-9]+) bytes in ([0-9]+) retained")
string(REGEX MATCHALL "[^\n]+" lines "${out}")
list(LENGTH lines n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "expected 3 lines, got ${n}")
endif()
set(batch 0)
foreach(l IN LISTS lines)
  if(NOT l MATCHES "^${line}$")
    message(FATAL_ERROR "not a batch's line: ${l}")
  endif()
  if(NOT CMAKE_MATCH_1 EQUAL batch OR NOT CMAKE_MATCH_2 EQUAL batch
     OR NOT CMAKE_MATCH_3 EQUAL batch)
    message(FATAL_ERROR "batch ${batch}'s line names another batch: ${l}")
  endif()
  if(NOT CMAKE_MATCH_4 EQUAL want_stored)
    message(FATAL_ERROR "batch ${batch} stored ${CMAKE_MATCH_4} bytes, not ${want_stored}")
  endif()
  if(CMAKE_MATCH_5 LESS CMAKE_MATCH_4)
    message(FATAL_ERROR "batch ${batch} holds ${CMAKE_MATCH_5} bytes, fewer than it stored")
  endif()
  if(batch GREATER 0 AND NOT CMAKE_MATCH_5 EQUAL retained)
    message(FATAL_ERROR "batch ${batch} holds ${CMAKE_MATCH_5} bytes, batch 0 ${retained}: "
                        "the reset did not keep the chunks")
  endif()
  set(retained ${CMAKE_MATCH_5})
  math(EXPR batch "${batch} + 1")
endforeach()
