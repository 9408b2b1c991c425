# SPDX-License-Identifier: MIT
# Configures and builds tests/subproject (libarena under add_subdirectory(),
# static and shared, and through FetchContent), runs its consumer, and
# installs the parent: nothing of libarena's may land in the prefix.  Run by
# CTest with -DSOURCE_DIR= -DWORK_DIR= -DC_COMPILER= -DC_FLAGS= -DEXE_SUFFIX=,
# and in a cross build -DTOOLCHAIN= and -DRUN= (its emulator).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/../run_step.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
foreach(way "add_subdirectory;OFF" "add_subdirectory;ON" "FetchContent;OFF")
  list(GET way 0 via)
  list(GET way 1 shared)
  set(build ${WORK_DIR}/${via}-shared-${shared})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/subproject -B ${build}
      -DARENA_SOURCE_DIR=${SOURCE_DIR} -DARENA_VIA=${via} -DBUILD_SHARED_LIBS=${shared}
      -DFETCHCONTENT_SOURCE_DIR_ARENA=${SOURCE_DIR} -DCMAKE_C_COMPILER=${C_COMPILER}
      "-DCMAKE_C_FLAGS=${C_FLAGS}" -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN})
  run(${CMAKE_COMMAND} --build ${build} --target consumer)
  # Windows looks for a program's DLLs beside it.
  file(GLOB dlls ${build}/arena/*.dll)
  if(dlls)
    file(COPY ${dlls} DESTINATION ${build})
  endif()
  run(${RUN} ${build}/consumer${EXE_SUFFIX})
  if(NOT last_output MATCHES "consumer ok")
    message(FATAL_ERROR
      "the consumer (${via}, BUILD_SHARED_LIBS=${shared}) printed: ${last_output}")
  endif()
  run(${CMAKE_COMMAND} --install ${build} --prefix ${build}/prefix)
  file(GLOB_RECURSE installed ${build}/prefix/*)
  if(installed)
    message(FATAL_ERROR
      "installing a parent of libarena (${via}) installed libarena's files: ${installed}")
  endif()
endforeach()
message(STATUS "libarena as a subproject (add_subdirectory static and shared, FetchContent): "
               "one library kind, no tests, examples or install rules")
