# SPDX-License-Identifier: MIT
# run(COMMAND...): runs a step of a scripted test, failing the test with the
# command line and its output when it fails; its output goes to
# `last_output` in the caller's scope.  Included by the -P scripts here.
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGV}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
