# SPDX-License-Identifier: MIT
# Cross build for aarch64-linux-gnu with Debian's gcc-aarch64-linux-gnu, run under qemu-aarch64
# (qemu-user).  Use: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(ARENA_TRIPLET aarch64-linux-gnu)
set(ARENA_PROCESSOR aarch64)
set(ARENA_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake)
