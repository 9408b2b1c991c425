# SPDX-License-Identifier: MIT
# Runs COMMAND (a ;-list) and passes when it dies abnormally (not a plain exit)
# and its output matches EXPECT.  CTest cannot do both itself: a crashed test
# fails whatever its PASS_REGULAR_EXPRESSION says.
# Use: cmake -DCOMMAND=... -DEXPECT=regex [-DABORT_STATUS=n] -P expect_abort.cmake
# ABORT_STATUS: the exit status abort() gives where it is no signal (3 on Windows),
# or a regex of such statuses (a fault's on Windows: "5|3221225477").
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(DEFINED ABORT_STATUS AND rc MATCHES "^(${ABORT_STATUS})$")
  set(rc "abort (exit status ${rc})")
endif()
message("result: ${rc}\n${out}")
if(rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "expected an abort, got exit status ${rc}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match: ${EXPECT}")
endif()
