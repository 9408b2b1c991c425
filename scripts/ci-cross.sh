#!/usr/bin/env bash
# The suite on other architectures, C libraries and operating systems, each
# built once in build-cross/<target> and run whole under emulation:
#   aarch64   gcc-aarch64-linux-gnu, qemu-aarch64, multiarch cmocka (arm64)
#   s390x     big-endian, 64-bit: gcc-s390x-linux-gnu, qemu-s390x (s390x)
#   armhf     32-bit, 8-byte aligned 64-bit types, every access checked for
#             alignment (-fsanitize=alignment, trapping): qemu-arm (armhf)
#   musl      musl-gcc, cmocka built from Debian's source against musl
#   mingw     x86_64-w64-mingw32 (winpthreads), static library and DLL, the
#             DLL's exports checked against ARENA_API, the suite under wine64
#   msvc      the public headers under clang --target=x86_64-pc-windows-msvc
#             -fms-compatibility (syntax only: no MSVC headers or linker here)
# Each Linux cross target builds twice: plain and checked (-DARENA_CHECKED=ON).
# Usage: scripts/ci-cross.sh [TARGET...]   (default: all of them, in that order)
# Packages: scripts/deps.sh cross.  Prints the time each target took.
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
    ctest --test-dir "$dir" -j "$jobs"
}

# Debian's cmocka source, unpacked once in build-cross/cmocka-src: apt-get
# source through a private apt state (the machine's own sources, as deb-src)
# so that the system's configuration is left alone.
cmocka_source() {
    local d=$out/cmocka-src
    if [ ! -f "$d/done" ]; then
        rm -rf "$d"
        mkdir -p "$d/parts" "$d/lists/partial" "$d/cache/archives/partial"
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -e "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" >"$d/parts/$(basename "$f")"
        done
        if [ -f /etc/apt/sources.list ]; then
            sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$d/parts/main.list"
        fi
        : >"$d/none"
        local apt=(apt-get -qq -o "Dir::Etc::SourceList=$d/none" -o "Dir::Etc::SourceParts=$d/parts"
            -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o APT::Sandbox::User=root)
        # A mirror that is mid-sync for one suite must not stop the others.
        "${apt[@]}" update || echo "cross: some source indexes failed to update; using the others"
        (cd "$d" && "${apt[@]}" source cmocka >/dev/null)
        touch "$d/done"
    fi
    cmocka_dir=$(find "$d" -mindepth 1 -maxdepth 1 -type d -name 'cmocka-*' | head -n1)
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

# linux_cross TRIPLET FLAGS [CMAKE ARGS...]
linux_cross() {
    local triplet=$1 flags=$2 checked
    shift 2
    for checked in OFF ON; do
        step "$triplet, ARENA_CHECKED=$checked"
        configure_build_test "$out/$triplet-checked-$checked" \
            -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/$triplet.cmake" -DARENA_CHECKED=$checked \
            "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" "$@"
    done
}

target_aarch64() { linux_cross aarch64-linux-gnu ""; }
# ASan's shadow memory on s390x (2^49 bytes) does not fit the address space
# qemu-user can give a guest on x86-64: the test that builds the program with
# -fsanitize=address (tests/test_mixed.c) is left out here.
target_s390x() { linux_cross s390x-linux-gnu "" -DARENA_CAN_ASAN=OFF; }
# Trapping instead of reporting: no sanitizer runtime is needed under qemu.
target_armhf() {
    linux_cross arm-linux-gnueabihf "-fsanitize=alignment -fsanitize-undefined-trap-on-error"
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
    PKG_CONFIG_LIBDIR=$cmocka_prefix/lib/pkgconfig configure_build_test "$b" -DCMAKE_TOOLCHAIN_FILE="$tc" \
        -DCMAKE_FIND_ROOT_PATH="$cmocka_prefix"
    step "mingw-w64: the DLL exports exactly the ARENA_API functions"
    scripts/check-exports.sh "$b/libarena.dll"
}

target_msvc() {
    step "public headers, clang --target=x86_64-pc-windows-msvc -fms-compatibility"
    local b=$out/msvc
    mkdir -p "$b/include/arena"
    # version.h as CMake makes it (configure_file), without a CMake run.
    sed -e "s/@PROJECT_VERSION_MAJOR@/0/; s/@PROJECT_VERSION_MINOR@/0/; s/@PROJECT_VERSION_PATCH@/0/" \
        -e 's/@PROJECT_VERSION@/0.0.0/; s/@ARENA_CHECKED_VALUE@/0/' \
        include/arena/version.h.in >"$b/include/arena/version.h"
    printf '#include <arena/arena.h>\n#include <arena/pool.h>\n#include <arena/thread.h>\n' >"$b/all.c"
    local shared
    for shared in "" -DARENA_SHARED_LIBRARY; do
        for lang in "-x c -std=c11" "-x c++ -std=c++17"; do
            # -ffreestanding: the MSVC C library's headers are not here; the
            # compiler's own (stddef.h, stdint.h, stdbool.h) are.  string.h
            # is the one the headers take from the C library.
            mkdir -p "$b/crt"
            printf '#pragma once\n#include <stddef.h>\nvoid *memcpy(void *, const void *, size_t);\nvoid *memset(void *, int, size_t);\nsize_t strlen(const char *);\nint memcmp(const void *, const void *, size_t);\n' >"$b/crt/string.h"
            # shellcheck disable=SC2086
            clang --target=x86_64-pc-windows-msvc -fms-compatibility -fms-extensions $lang \
                -ffreestanding -fsyntax-only -Wall -Wextra -Werror -Wno-language-extension-token \
                -isystem "$b/crt" -Iinclude -I"$b/include" $shared "$b/all.c"
        done
    done
    echo "headers compile as MSVC C11 and C++17, static and DLL"
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
