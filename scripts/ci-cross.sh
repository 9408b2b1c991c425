#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The suite on other architectures, C libraries and operating systems, each
# built in build-cross/<target> and run whole, under emulation where needed:
#   aarch64   gcc-aarch64-linux-gnu, under qemu-aarch64
#   s390x     big-endian, 64-bit: gcc-s390x-linux-gnu, under qemu-s390x
#   armhf     32-bit, 8-byte aligned 64-bit types, every access checked for
#             alignment (-fsanitize=alignment, trapping): under qemu-arm
#   musl      musl-gcc, with cmocka built from Debian's source against musl
#   mingw     x86_64-w64-mingw32 (winpthreads), static library and DLL, the
#             DLL's exports checked against ARENA_API, the suite under wine64
#   msvc      the public headers under clang --target=x86_64-pc-windows-msvc
#             -fms-compatibility (syntax only: no MSVC headers or linker here)
# s390x builds twice, plain and checked (-DARENA_CHECKED=ON); armhf builds
# checked only (the -m32 job runs a plain 32-bit build); aarch64, a 64-bit
# little-endian target like the host, plain only.  Each Linux build
# has the adapter tests' libraries (ARENA_CLIENTS=ON).
# Usage: scripts/ci-cross.sh [TARGET...]   (default: all of them, in that order)
# Packages: scripts/deps.sh cross.  Prints the time each target took.
#
# Nothing here changes the machine's package state: Debian's cross compilers
# conflict with gcc-multilib (the -m32 job's), and packages of another
# architecture must match the installed ones' versions to the last security
# update.  So the target libraries (the C library, cmocka, the adapter
# tests' libraries) are unpacked from Debian's packages of the target
# architecture into build-cross/root-<arch>, fetched through a private apt
# state in build-cross/apt; and where gcc-<triplet> is not installed, its
# compiler driver is unpacked beside the installed parts (cpp-12-<triplet>,
# libgcc-12-dev-<arch>-cross...) in build-cross/toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/build-cross
jobs=$(nproc 2>/dev/null || echo 2)
export CTEST_OUTPUT_ON_FAILURE=1
mkdir -p "$out"

step() { printf '\n==== cross: %s\n' "$*"; }

# configure_build_test DIR [CMAKE ARGS...]: the project's build and suite.
configure_build_test() {
    local dir=$1
    shift
    mkdir -p "$dir"
    cmake -S "$root" -B "$dir" -DARENA_WERROR=ON "$@" >"$dir/configure.log" 2>&1 ||
        { cat "$dir/configure.log"; return 1; }
    cmake --build "$dir" -j "$jobs"
    ctest --test-dir "$dir" -j "$jobs" && return 0
    # Under wine (rerun=1), a program once in a few thousand launches ends at
    # once with no output and no status of its own (seen: 0.02 s, where any
    # run takes 0.09 s or more); the failed tests run once more, one at a
    # time.  A test that fails twice fails the target.
    [ "${rerun:-0}" = 1 ] || return 1
    step "the failed tests once more"
    ctest --test-dir "$dir" --rerun-failed
}

# apt-get on the private state: the machine's Debian sources, for the target
# architectures' binary packages and for source packages.
apt_dir=$out/apt
apt_private() {
    apt-get -qq -o "Dir::Etc::SourceList=$apt_dir/none" -o "Dir::Etc::SourceParts=$apt_dir/parts" \
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::State::status=$apt_dir/none" \
        -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root \
        -o APT::Architectures::=arm64 -o APT::Architectures::=s390x -o APT::Architectures::=armhf "$@"
}
apt_private_update() {
    [ ! -f "$apt_dir/updated" ] || return 0
    rm -rf "$apt_dir"
    mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] && sed 's/^Types: deb$/Types: deb deb-src/' "$f" >"$apt_dir/parts/$(basename "$f")"
    done
    if [ -f /etc/apt/sources.list ]; then
        sed -n 's/^deb \(.*\)$/deb \1\ndeb-src \1/p' /etc/apt/sources.list >"$apt_dir/parts/main.list"
    fi
    : >"$apt_dir/none"
    # A mirror still syncing one index (seen: armhf security updates) must not
    # stop the rest; a package that is really missing fails its download.
    apt_private update || echo "cross: some package indexes failed to update; using the others"
    touch "$apt_dir/updated"
}

# Debian's cmocka source, unpacked once in build-cross/cmocka-src.
cmocka_source() {
    local d=$out/cmocka-src
    if [ ! -f "$d/done" ]; then
        apt_private_update
        rm -rf "$d"
        mkdir -p "$d"
        (cd "$d" && apt_private source cmocka >/dev/null)
        touch "$d/done"
    fi
    cmocka_dir=$(find "$d" -mindepth 1 -maxdepth 1 -type d -name 'cmocka-*' | head -n1)
}

# target_root ARCH: the target's libraries, unpacked in build-cross/root-ARCH.
target_root() {
    local arch=$1 d=$out/root-$1 p pkgs
    target_root_dir=$d
    [ ! -f "$d/done" ] || return 0
    apt_private_update
    rm -rf "$d" "$d.debs"
    mkdir -p "$d" "$d.debs"
    pkgs="libc6 libgcc-s1 libstdc++6 libcmocka0 libcmocka-dev libcjson1 libcjson-dev liblua5.4-0
        liblua5.4-dev zlib1g zlib1g-dev libexpat1 libexpat1-dev libprotobuf-c1 libprotobuf-c-dev"
    [ "$arch" = s390x ] || pkgs="$pkgs libasan8"
    # shellcheck disable=SC2086
    (cd "$d.debs" && apt_private download $(for p in $pkgs; do printf '%s:%s ' "$p" "$arch"; done))
    for p in "$d.debs"/*.deb; do dpkg-deb -x "$p" "$d"; done
    rm -rf "$d.debs"
    touch "$d/done"
}

# cross_compiler TRIPLET: puts TRIPLET-gcc and -g++ on PATH.  Where they are
# not installed, the drivers (gcc-12-TRIPLET, g++-12-TRIPLET, of the version
# of the installed cpp-12-TRIPLET) are unpacked in build-cross/toolchain,
# with links to the installed compiler proper, libraries and headers.
cross_compiler() {
    local t=$1 d=$out/toolchain v
    export PATH=$d/bin:$PATH
    ! command -v "$t-gcc" >/dev/null || return 0
    v=$(dpkg-query -W -f='${Version}' "cpp-12-$t")
    mkdir -p "$d/debs-$t" "$d/bin"
    (cd "$d/debs-$t" && apt-get -qq download "gcc-12-$t=$v" "g++-12-$t=$v")
    for p in "$d/debs-$t"/*.deb; do dpkg-deb -x "$p" "$d"; done
    rm -rf "$d/debs-$t"
    cp -rsn "/usr/lib/gcc-cross/$t/12/." "$d/usr/lib/gcc-cross/$t/12/"
    ln -sfn "/usr/$t" "$d/usr/$t"
    ln -sf "../usr/bin/$t-gcc-12" "$d/bin/$t-gcc"
    ln -sf "../usr/bin/$t-g++-12" "$d/bin/$t-g++"
}

# cmocka_build NAME [CMAKE ARGS...]: cmocka for a target, installed in
# build-cross/cmocka-NAME/prefix.
cmocka_build() {
    local name=$1
    shift
    cmocka_source
    local b=$out/cmocka-$name
    mkdir -p "$b"
    cmake -S "$cmocka_dir" -B "$b/build" -DCMAKE_BUILD_TYPE=Release -DWITH_EXAMPLES=OFF \
        -DCMAKE_INSTALL_PREFIX="$b/prefix" -DCMAKE_INSTALL_LIBDIR=lib "$@" >"$b/configure.log" 2>&1 ||
        { cat "$b/configure.log"; return 1; }
    cmake --build "$b/build" -j "$jobs" >/dev/null
    cmake --install "$b/build" >/dev/null
    cmocka_prefix=$b/prefix
}

# linux_cross TRIPLET ARCH FLAGS CHECKED [CMAKE ARGS...]: CHECKED lists the
# ARENA_CHECKED values to build ("OFF" or "OFF ON"); the checked build leaves
# out the package tests, which the plain one runs.
linux_cross() {
    local triplet=$1 arch=$2 flags=$3 modes=$4 checked
    shift 4
    cross_compiler "$triplet"
    target_root "$arch"
    for checked in $modes; do
        step "$triplet, ARENA_CHECKED=$checked"
        configure_build_test "$out/$triplet-checked-$checked" \
            -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/$triplet.cmake" \
            -DARENA_TARGET_ROOT="$target_root_dir" -DARENA_CHECKED=$checked -DARENA_CLIENTS=ON \
            -DARENA_PACKAGE_TESTS=$([ "$checked" = ON ] && echo OFF || echo ON) \
            ${flags:+"-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags"} "$@"
    done
}

target_aarch64() { linux_cross aarch64-linux-gnu arm64 "" OFF; }
# ASan's shadow memory on s390x (2^49 bytes) does not fit the address space
# qemu-user can give a guest on x86-64: the test that builds the program with
# -fsanitize=address (tests/test_mixed.c) is left out here.
target_s390x() { linux_cross s390x-linux-gnu s390x "" "OFF ON" -DARENA_CAN_ASAN=OFF; }
# Trapping instead of reporting: no sanitizer runtime is needed under qemu.
target_armhf() {
    linux_cross arm-linux-gnueabihf armhf "-fsanitize=alignment -fsanitize-undefined-trap-on-error" ON
}

# AddressSanitizer does not support musl: the -fsanitize=address program of
# tests/test_mixed.c is left out.  Valgrind's headers (plain C, nothing from
# the C library) are handed to musl-gcc, which searches no glibc folder, so
# that the memcheck misuse cases run against musl too.
target_musl() {
    step "musl: cmocka"
    cmocka_build musl -DCMAKE_C_COMPILER=musl-gcc
    step "musl: libarena"
    local vg=$out/musl-valgrind-include
    mkdir -p "$vg"
    [ ! -d /usr/include/valgrind ] || ln -sfn /usr/include/valgrind "$vg/valgrind"
    PKG_CONFIG_LIBDIR=$cmocka_prefix/lib/pkgconfig configure_build_test "$out/musl" \
        -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/musl.cmake" "-DCMAKE_C_FLAGS=-isystem $vg" \
        -DARENA_CAN_ASAN=OFF
}

target_mingw() {
    local tc=$root/cmake/toolchains/x86_64-w64-mingw32.cmake b=$out/mingw
    step "mingw-w64: cmocka"
    cmocka_build mingw -DCMAKE_TOOLCHAIN_FILE="$tc" -DCMAKE_C_FLAGS=-D__USE_MINGW_ANSI_STDIO=1
    step "mingw-w64: libarena (static library and DLL)"
    # Wine finds the DLLs (libarena's, cmocka's) through WINEPATH; its prefix
    # is made once, here, rather than by the first tests that run at once.
    export WINEPREFIX=$out/wineprefix WINEDEBUG=-all WINEPATH="$b;$cmocka_prefix/bin"
    [ -d "$WINEPREFIX" ] || /usr/lib/wine/wine64 wineboot --init >/dev/null 2>&1
    # One wineserver for the whole suite: started on demand, it exits a few
    # seconds after its last client, and a test that starts in that instant
    # cannot connect ("recvmsg: Connection reset by peer").  Wine's services
    # start now, away from CTest's output pipes (the first test would start
    # them, and CTest would wait for them to close its pipe).  Stopped on exit.
    /usr/lib/wine/wineserver -w # the server a first wineboot left, if any, exits
    /usr/lib/wine/wineserver -p
    trap '/usr/lib/wine/wineserver -k 2>/dev/null || true' EXIT
    /usr/lib/wine/wine64 wineboot >/dev/null 2>&1 </dev/null || true
    rerun=1 PKG_CONFIG_LIBDIR=$cmocka_prefix/lib/pkgconfig configure_build_test "$b" -DCMAKE_TOOLCHAIN_FILE="$tc" \
        -DCMAKE_FIND_ROOT_PATH="$cmocka_prefix"
    step "mingw-w64: the DLL exports exactly the ARENA_API functions"
    scripts/check-exports.sh "$b/libarena.dll"
}

# MSVC's own headers are not here, but the compiler's are (stddef.h, stdint.h,
# stdarg.h, stdbool.h); string.h, the one the headers take from the C
# library, is stood in for by the declarations they use.  Each public header
# alone and all together, as C11 and C++17, for a static library and for the
# DLL (dllimport), plain and checked, as clang-cl sees them and, without
# __clang__, as MSVC's cl does (no GNU attribute or builtin).  arena.hpp is
# not among them: it needs a C++ standard library (<memory_resource>), and
# MSVC's is not here to stand in for.
target_msvc() {
    step "public headers, clang --target=x86_64-pc-windows-msvc -fms-compatibility"
    local b=$out/msvc h lang shared checked cl n=0
    mkdir -p "$b/include/arena" "$b/crt"
    sed -e 's/@PROJECT_VERSION_MAJOR@/0/; s/@PROJECT_VERSION_MINOR@/0/; s/@PROJECT_VERSION_PATCH@/0/' \
        -e 's/@PROJECT_VERSION@/0.0.0/; s/@ARENA_CHECKED_VALUE@/0/' \
        include/arena/version.h.in >"$b/include/arena/version.h"
    cat >"$b/crt/string.h" <<'EOF2'
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *memcpy(void *, const void *, size_t);
void *memmove(void *, const void *, size_t);
void *memset(void *, int, size_t);
int memcmp(const void *, const void *, size_t);
size_t strlen(const char *);
#ifdef __cplusplus
}
#endif
EOF2
    : >"$b/all.c"
    for h in include/arena/*.h; do
        h=arena/$(basename "$h")
        printf '#include <%s>\n' "$h" >>"$b/all.c"
        printf '#include <%s>\n#include <%s>\n' "$h" "$h" >"$b/$(basename "$h" .h).c"
    done
    for lang in "-x c -std=c11" "-x c++ -std=c++17"; do
        for shared in "" -DARENA_SHARED_LIBRARY; do
            for checked in 0 1; do
                for cl in "" -U__clang__; do
                    for src in "$b"/*.c; do
                        # shellcheck disable=SC2086
                        clang --target=x86_64-pc-windows-msvc -fms-compatibility -ffreestanding \
                            -fsyntax-only -Wall -Wextra -Wpedantic -Wgnu -Werror $lang $cl \
                            -isystem "$b/crt" -Iinclude -I"$b/include" $shared \
                            -DARENA_CHECKED=$checked "$src"
                        n=$((n + 1))
                    done
                done
            done
        done
    done
    echo "cross: $n compilations of the public headers for MSVC, all clean"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(aarch64 s390x armhf musl mingw msvc)
times=""
for t in "${targets[@]}"; do
    declare -F "target_$t" >/dev/null || { echo "ci-cross.sh: unknown target '$t'" >&2; exit 2; }
    start=$(date +%s)
    "target_$t"
    times="$times$(printf '%-8s %4d s' "$t" $(($(date +%s) - start)))\n"
done
printf '\n==== cross: time per target\n%b' "$times"
