# SPDX-License-Identifier: MIT
# The guide's limits example (docs/guide.md): runs COMMAND and checks what it
# prints.  A hostile request stopped at its cap of 100,000 bytes: 1,000-byte
# values up to the cap, one refusal (told to the callback on stderr), and the
# report printed right after arena_get_stats() showing the same figures.
# Use: cmake -DCOMMAND=... -P guide_limits.cmake
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit status ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "expected exit status 0")
endif()
set(num "([0-9]+)")
if(NOT out MATCHES "${num} values: ${num} bytes stored, ${num} held of ${num}, ${num} refused\n")
  message(FATAL_ERROR "no line of the stats")
endif()
set(values ${CMAKE_MATCH_1})
set(stored ${CMAKE_MATCH_2})
set(held ${CMAKE_MATCH_3})
set(limit ${CMAKE_MATCH_4})
set(refused ${CMAKE_MATCH_5})
math(EXPR want_stored "${values} * 1000")
if(NOT stored EQUAL want_stored OR NOT limit EQUAL 100000 OR held GREATER limit
   OR NOT refused EQUAL 1 OR values LESS 90)
  message(FATAL_ERROR "the stats are not those of the example")
endif()
# The report: its heading, then the arena's row (name, kind, then stored,
# retained, held, limit, peak held, resets, refused).
if(NOT out MATCHES "\nname +kind +stored +retained +held +limit +peak held +resets +refused\n")
  message(FATAL_ERROR "no report heading")
endif()
set(sp " +")
set(row "\nrequest 42${sp}arena")
foreach(column RANGE 1 7)
  string(APPEND row "${sp}${num}")
endforeach()
if(NOT out MATCHES "${row}\n")
  message(FATAL_ERROR "no report row for \"request 42\"")
endif()
foreach(pair "stored:1" "held:3" "limit:4" "refused:7")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 figure)
  list(GET pair 1 group)
  if(NOT CMAKE_MATCH_${group} EQUAL ${figure})
    message(FATAL_ERROR
            "the report's ${figure} is ${CMAKE_MATCH_${group}}, the stats' ${${figure}}")
  endif()
endforeach()
if(CMAKE_MATCH_5 LESS held)
  message(FATAL_ERROR "the report's peak held is below what is held")
endif()
if(NOT err MATCHES "request 42: refused [0-9]+ bytes [(]limit 100000, held [0-9]+[)]\n")
  message(FATAL_ERROR "the callback did not tell the refusal")
endif()
