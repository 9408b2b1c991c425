#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make distcheck`: what scripts/dist.sh made, used as a stranger would, in a
# scratch directory outside any git checkout:
#   - each .sha256 file matches its tarball;
#   - the source tarball configures, builds (-Werror) and installs with CMake
#     into a scratch prefix, and tests/dist's C and C++ consumers build
#     against the installed copy through find_package and pkg-config, run,
#     and print the tarball's version;
#   - the source tarball, taken in by FetchContent with its URL and hash,
#     builds the static library alone (no tests), and the consumers with it;
#   - the one-file tarball's arena.c compiles alone, and the same consumers,
#     unchanged (<arena/arena.h>, ..., <arena/arena.hpp>), build against it
#     with -I on its directory, plain and checked, and run.
#   - arena.wrap: tests/meson-consumer's project, dependency('arena'), with
#     the wrap in subprojects/ and the source tarball in
#     subprojects/packagecache, offline (--wrap-mode=nodownload; the wrap's
#     address does not resolve either), builds and runs its C and C++
#     consumers.
#   scripts/dist-check.sh [DIST_DIR]        (default: build-dist)
set -euo pipefail
cd "$(dirname "$0")/.."
dist=$(cd "${1:-build-dist}" && pwd)
version=$(sed -n '/^project(arena/,/)/s/^ *VERSION \([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p' CMakeLists.txt)
name=libarena-$version
jobs=$(nproc 2>/dev/null || echo 2)
cc=${CC:-cc}
cxx=${CXX:-c++}

step() { printf '\n==== distcheck: %s\n' "$*"; }
# expect WHAT LINE COMMAND...: runs COMMAND, which must succeed and print LINE.
expect() {
    local what=$1 line=$2 got
    shift 2
    got=$("$@") || { echo "distcheck: $what failed: $got" >&2; exit 1; }
    if [ "$got" != "$line" ]; then
        printf 'distcheck: %s printed\n    %s\nnot\n    %s\n' "$what" "$got" "$line" >&2
        exit 1
    fi
    echo "$what: $got"
}

step "checksums"
(cd "$dist" && sha256sum -c "$name.tar.gz.sha256" "$name-onefile.tar.gz.sha256")
grep -qxF "source_hash = $(cut -d' ' -f1 "$dist/$name.tar.gz.sha256")" "$dist/arena.wrap" ||
    { echo "distcheck: arena.wrap's source_hash is not the tarball's" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$dist/$name.tar.gz" -C "$work"
src=$work/$name
if [ -e "$src/.git" ] || [ ! -s "$src/REVISION" ]; then
    echo "distcheck: $name.tar.gz has a .git or lacks its REVISION" >&2
    exit 1
fi
c_ok="dist consumer (C): libarena $version, checked 0: ok"
cxx_ok="dist consumer (C++): libarena $version: ok"

step "the source tarball: CMake build and install, outside git"
(
    export GIT_CEILING_DIRECTORIES=$work
    cmake -S "$src" -B "$work/build" -DARENA_WERROR=ON -DARENA_BUILD_TESTS=OFF \
        -DARENA_BUILD_EXAMPLES=OFF >"$work/configure.log"
    cmake --build "$work/build" -j "$jobs" >"$work/build.log"
    cmake --install "$work/build" --prefix "$work/prefix" >"$work/install.log"
) || { cat "$work"/*.log >&2; exit 1; }
cmake -S "$src/tests/dist" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
expect "find_package, C" "$c_ok" "$work/consumer/consumer_c"
expect "find_package, C++" "$cxx_ok" "$work/consumer/consumer_cxx"
pc_dir=$(dirname "$(find "$work/prefix" -name arena.pc)")
read -r -a flags <<<"$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs arena)"
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$src/tests/dist/consumer.c" "${flags[@]}" \
    -o "$work/pc_c"
"$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror "$src/tests/dist/consumer.cpp" "${flags[@]}" \
    -o "$work/pc_cxx"
expect "pkg-config, C" "$c_ok" env LD_LIBRARY_PATH="$(dirname "$pc_dir")" "$work/pc_c"
expect "pkg-config, C++" "$cxx_ok" env LD_LIBRARY_PATH="$(dirname "$pc_dir")" "$work/pc_cxx"

step "the source tarball through FetchContent (URL and URL_HASH), the static library"
cmake -S "$src/tests/dist" -B "$work/fetch" -DARENA_TARBALL="file://$dist/$name.tar.gz" \
    -DARENA_TARBALL_SHA256="$(cut -d' ' -f1 "$dist/$name.tar.gz.sha256")" >"$work/fetch.log" ||
    { cat "$work/fetch.log" >&2; exit 1; }
cmake --build "$work/fetch" -j "$jobs" >>"$work/fetch.log" || { cat "$work/fetch.log" >&2; exit 1; }
expect "FetchContent, C" "$c_ok" "$work/fetch/consumer_c"
expect "FetchContent, C++" "$cxx_ok" "$work/fetch/consumer_cxx"
fetched=$work/fetch/_deps/arena-build
if [ -d "$fetched/tests" ] || ls "$fetched"/libarena.so* >/dev/null 2>&1; then
    echo "distcheck: FetchContent built libarena's tests or its shared library" >&2
    exit 1
fi

step "the one-file tarball: arena.c alone, the same consumers unchanged, plain and checked"
tar -xzf "$dist/$name-onefile.tar.gz" -C "$work"
one=$work/$name-onefile
for checked in 0 1; do
    o=$work/onefile-$checked
    mkdir -p "$o"
    # arena.c with the warnings the library's own build has.
    "$cc" -std=c11 -O2 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Werror -pthread -DARENA_CHECKED=$checked \
        -I"$one" -c "$one/arena.c" -o "$o/arena.o"
    "$cc" -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -pthread -DARENA_CHECKED=$checked \
        -I"$one" "$src/tests/dist/consumer.c" "$o/arena.o" -o "$o/consumer_c"
    "$cxx" -std=c++17 -O2 -Wall -Wextra -Wpedantic -Werror -pthread -DARENA_CHECKED=$checked \
        -I"$one" "$src/tests/dist/consumer.cpp" "$o/arena.o" -o "$o/consumer_cxx"
    expect "one file, checked $checked, C" "${c_ok/checked 0/checked $checked}" "$o/consumer_c"
    expect "one file, checked $checked, C++" "$cxx_ok" "$o/consumer_cxx"
done

step "the Meson wrap: dependency('arena') from the tarball in subprojects/packagecache, offline"
command -v meson >/dev/null || { echo "distcheck: needs meson (scripts/deps.sh ci)" >&2; exit 1; }
m=$work/meson
mkdir -p "$m/src/subprojects/packagecache"
cp "$src"/tests/meson-consumer/{meson.build,consumer.c,consumer.cpp} "$m/src/"
cp "$dist/arena.wrap" "$m/src/subprojects/"
cp "$dist/$name.tar.gz" "$m/src/subprojects/packagecache/"
# --force-fallback-for: the wrap's copy, not one that pkg-config may find here.
meson setup "$m/build" "$m/src" --wrap-mode=nodownload --force-fallback-for=arena \
    >"$m/setup.log" 2>&1 || { cat "$m/setup.log" >&2; exit 1; }
[ -s "$m/src/subprojects/$name/REVISION" ] ||
    { echo "distcheck: Meson did not unpack $name.tar.gz from the package cache" >&2; exit 1; }
meson test -C "$m/build" --print-errorlogs >"$m/test.log" 2>&1 || { cat "$m/test.log" >&2; exit 1; }
for line in "libarena $version: ok" "libarena C++: ok"; do
    grep -qxF "$line" "$m/build/meson-logs/testlog.txt" ||
        { echo "distcheck: the Meson consumers did not print '$line'" >&2; exit 1; }
done
echo "meson wrap: consumer_c and consumer_cxx built from the wrap, ran, printed their lines"

step "passed: $name.tar.gz, $name-onefile.tar.gz and arena.wrap"
