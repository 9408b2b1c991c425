# SPDX-License-Identifier: MIT
# Configures and builds tests/subproject (libarena under add_subdirectory()),
# then runs its consumer.  Run by CTest with -DSOURCE_DIR= -DWORK_DIR=
# -DC_COMPILER= -DC_FLAGS= -DEXE_SUFFIX=, and in a cross build -DTOOLCHAIN= and
# -DRUN= (its emulator).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/../run_step.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/subproject -B ${WORK_DIR}
    -DARENA_SOURCE_DIR=${SOURCE_DIR} -DCMAKE_C_COMPILER=${C_COMPILER} "-DCMAKE_C_FLAGS=${C_FLAGS}"
    -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN})
run(${CMAKE_COMMAND} --build ${WORK_DIR} --target consumer)
run(${RUN} ${WORK_DIR}/consumer${EXE_SUFFIX})
if(NOT last_output MATCHES "consumer ok")
  message(FATAL_ERROR "the subproject's consumer printed: ${last_output}")
endif()
message(STATUS "libarena works under add_subdirectory(), without its tests and examples")
