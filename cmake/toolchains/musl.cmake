# SPDX-License-Identifier: MIT
# A build against musl instead of glibc, with Debian's musl-gcc (package
# musl-tools).  Not a cross build: the programs run here as they are.
# musl-gcc has no C++ library, so the C++ header test is left out.
# Use: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/musl.cmake, with
# PKG_CONFIG_LIBDIR naming a cmocka built by musl-gcc (scripts/ci-cross.sh musl).
set(CMAKE_C_COMPILER musl-gcc)
set(CMAKE_CXX_COMPILER NOTFOUND)
