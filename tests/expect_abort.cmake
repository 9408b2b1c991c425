# Runs COMMAND (a ;-list) and passes when it dies abnormally (not a plain exit)
# and its output matches EXPECT.  CTest cannot do both itself: a crashed test
# fails whatever its PASS_REGULAR_EXPRESSION says.
# Use: cmake -DCOMMAND=... -DEXPECT=regex -P expect_abort.cmake
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("result: ${rc}\n${out}")
if(rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "expected an abort, got exit status ${rc}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match: ${EXPECT}")
endif()
