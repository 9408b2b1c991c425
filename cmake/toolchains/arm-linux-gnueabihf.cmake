# SPDX-License-Identifier: MIT
# Cross build for arm-linux-gnueabihf with Debian's gcc-arm-linux-gnueabihf, run under qemu-arm
# (qemu-user).  Use: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake
set(ARENA_TRIPLET arm-linux-gnueabihf)
set(ARENA_PROCESSOR arm)
set(ARENA_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake)
