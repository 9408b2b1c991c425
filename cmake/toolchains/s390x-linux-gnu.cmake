# SPDX-License-Identifier: MIT
# Cross build for s390x-linux-gnu with Debian's gcc-s390x-linux-gnu, run under qemu-s390x
# (qemu-user).  Use: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/s390x-linux-gnu.cmake
set(ARENA_TRIPLET s390x-linux-gnu)
set(ARENA_PROCESSOR s390x)
set(ARENA_QEMU qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake)
