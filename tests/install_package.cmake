# SPDX-License-Identifier: MIT
# Installs the build into a scratch prefix, then builds and runs a consumer
# through find_package(arena CONFIG) and through pkg-config.
# Run by CTest with -DSOURCE_DIR= -DBUILD_DIR= -DWORK_DIR= -DC_COMPILER= -DC_FLAGS=,
# -DEXE_SUFFIX=, and in a cross build -DTOOLCHAIN= (the toolchain file) and
# -DRUN= (its emulator).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# CMake consumer.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER} "-DCMAKE_C_FLAGS=${C_FLAGS}"
    -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
# Windows looks for a program's DLLs beside it: the installed ones go there.
file(GLOB dlls ${prefix}/bin/*.dll)
if(dlls)
  file(COPY ${dlls} DESTINATION ${WORK_DIR}/consumer)
  file(COPY ${dlls} DESTINATION ${WORK_DIR})
endif()
run(${RUN} ${WORK_DIR}/consumer/consumer${EXE_SUFFIX})
if(NOT last_output MATCHES "consumer ok")
  message(FATAL_ERROR "CMake consumer printed: ${last_output}")
endif()

# pkg-config consumer.
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB_RECURSE pcs ${prefix}/*/arena.pc)
list(GET pcs 0 pc)
get_filename_component(pcdir ${pc} DIRECTORY)
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} ${PKG_CONFIG} --cflags --libs arena)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(cflags UNIX_COMMAND "${C_FLAGS}")
run(${C_COMPILER} -std=c11 ${cflags} ${SOURCE_DIR}/tests/package/consumer.c ${flags}
    -o ${WORK_DIR}/pc_consumer${EXE_SUFFIX})
get_filename_component(libdir ${pcdir} DIRECTORY)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${RUN} ${WORK_DIR}/pc_consumer${EXE_SUFFIX})
if(NOT last_output MATCHES "consumer ok")
  message(FATAL_ERROR "pkg-config consumer printed: ${last_output}")
endif()
message(STATUS "installed package works through find_package and pkg-config")
