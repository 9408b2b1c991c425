#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds and runs the Meson consumer (tests/meson-consumer) three ways:
# libarena as a subproject (subprojects/arena, a link to this tree), and
# installed (Meson's install of the root meson.build, then CMake's install of
# CMAKE_BUILD, when given) found through pkg-config by dependency('arena').
#   tests/meson-consumer/run.sh [WORK_DIR [CMAKE_BUILD]]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/build-meson-consumer}
cmake_build=${2:-}
rm -rf "$work"
mkdir -p "$work/src/subprojects"
work=$(cd "$work" && pwd) # Meson takes only an absolute prefix
cp "$root"/tests/meson-consumer/meson.build "$root"/tests/meson-consumer/consumer.c \
    "$root"/tests/meson-consumer/consumer.cpp "$work/src/"
ln -s "$root" "$work/src/subprojects/arena"

echo "meson-consumer: libarena as a subproject"
meson setup "$work/sub" "$work/src" --force-fallback-for=arena >"$work/sub.log"
meson test -C "$work/sub" --print-errorlogs

echo "meson-consumer: libarena installed by Meson, found through pkg-config"
meson setup "$work/lib" "$root" --prefix="$work/meson-prefix" --libdir=lib -Dwerror=true \
    >"$work/lib.log"
meson install -C "$work/lib" --quiet
PKG_CONFIG_PATH="$work/meson-prefix/lib/pkgconfig" \
    meson setup "$work/inst" "$work/src" --wrap-mode=nofallback >"$work/inst.log"
LD_LIBRARY_PATH="$work/meson-prefix/lib" meson test -C "$work/inst" --print-errorlogs

if [ -n "$cmake_build" ]; then
    echo "meson-consumer: libarena installed by CMake ($cmake_build), found through pkg-config"
    cmake --install "$cmake_build" --prefix "$work/cmake-prefix" >"$work/cmake-install.log"
    pc=$(dirname "$(find "$work/cmake-prefix" -name arena.pc | head -n1)")
    PKG_CONFIG_PATH="$pc" meson setup "$work/cmake" "$work/src" --wrap-mode=nofallback \
        >"$work/cmake.log"
    LD_LIBRARY_PATH="$(dirname "$pc")" meson test -C "$work/cmake" --print-errorlogs
fi
