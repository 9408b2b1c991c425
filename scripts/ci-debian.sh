#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI: the Debian package (debian/).  Builds libarena2 and libarena-dev from a
# copy of the tree with `dpkg-buildpackage -us -uc -b` (the suite runs in the
# build; dpkg-gensymbols checks debian/libarena2.symbols), runs lintian (no
# error, no warning: overrides carry their reason), then installs both
# packages, builds the README's quick start through pkg-config and through
# CMake (arena::arena and arena::arena_static) and a C++ std::pmr program
# against them, runs each and checks what it prints, and purges the packages.
# Everything lands in build-debian/.
#   scripts/ci-debian.sh
# Installing takes root (CI runs as root).  Anyone else is refused, unless
# ARENA_DEBIAN_NO_INSTALL=1 asks for the build and lintian alone.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/build-debian

install=1
if [ "$(id -u)" -ne 0 ]; then
    if [ "${ARENA_DEBIAN_NO_INSTALL:-}" != 1 ]; then
        echo "ci-debian: installing the packages (dpkg -i) needs root, and this is uid $(id -u)." \
            "Run it as root (as CI does), or with ARENA_DEBIAN_NO_INSTALL=1 to build and" \
            "lint the packages without installing them." >&2
        exit 1
    fi
    install=0
fi
for p in libarena2 libarena-dev; do
    if [ "$install" = 1 ] &&
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        echo "ci-debian: $p is installed already; this script installs and purges its own" \
            "build, so it leaves this machine's alone: remove it first" >&2
        exit 1
    fi
done
scripts/deps.sh debian

step() { printf '\n==== debian: %s\n' "$*"; }
# expect WHAT REGEX COMMAND...: COMMAND must succeed and print lines that
# each match REGEX (at least one).
expect() {
    local what=$1 re=$2 got
    shift 2
    got=$("$@") || { echo "ci-debian: $what failed: $got" >&2; exit 1; }
    if [ -z "$got" ] || printf '%s\n' "$got" | grep -qvE "$re"; then
        printf 'ci-debian: %s printed\n%s\nwhere every line should match %s\n' \
            "$what" "$got" "$re" >&2
        exit 1
    fi
    printf '%s:\n%s\n' "$what" "$(printf '%s\n' "$got" | sed 's/^/    /')"
}

version=$(sed -n '/^project(arena/,/)/s/^ *VERSION \([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p' CMakeLists.txt)
debversion=$(dpkg-parsechangelog -S Version)
if [ "${debversion%-*}" != "$version" ]; then
    echo "ci-debian: debian/changelog is at $debversion, CMakeLists.txt at $version" >&2
    exit 1
fi
arch=$(dpkg --print-architecture)
rm -rf "$out"
src=$out/libarena-$version
mkdir -p "$src"
# The working tree as git sees it (tracked and new files, not ignored ones),
# so that an uncommitted change is built too.
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -x -C "$src"

step "dpkg-buildpackage -us -uc -b (the suite runs in the build)"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
    tail -n 60 "$out/build.log"
    echo "ci-debian: the package build failed (whole log: $out/build.log)" >&2
    exit 1
fi
grep -E '^[0-9]+% tests passed|dpkg-gensymbols' "$out/build.log" || true
changes=$out/libarena_${debversion}_$arch.changes
(cd "$out" && ls -l ./*.deb | awk '{ print "    " $5 "\t" $9 }')

step "lintian (fails on any error or warning)"
# Shown with the overridden tags (O:) and their reasons; an E: or W: fails.
lintian --allow-root --display-info --show-overrides "$changes" | tee "$out/lintian.txt"
if grep -qE '^[EW]: ' "$out/lintian.txt"; then
    echo "ci-debian: lintian reported errors or warnings (above)" >&2
    exit 1
fi
echo "lintian: no error, no warning"

if [ "$install" = 0 ]; then
    step "not installed (ARENA_DEBIAN_NO_INSTALL=1, not root): built and linted only"
    exit 0
fi

step "dpkg -i libarena2 libarena-dev"
purge() { dpkg --purge libarena-dev libarena2 >/dev/null; }
trap purge EXIT
dpkg -i "$out/libarena2_${debversion}_$arch.deb" "$out/libarena-dev_${debversion}_$arch.deb"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

step "the README's quick start and a C++ std::pmr program against the installed packages"
work=$out/use
mkdir -p "$work/cmake"
awk 'on && /^```$/ { exit } on { print } /^```c$/ { on = 1 }' README.md >"$work/quickstart.c"
if [ ! -s "$work/quickstart.c" ]; then
    echo "ci-debian: no \`\`\`c block (the quick start's example) in the README" >&2
    exit 1
fi
batch='^batch [0-2]: user-[0-2]-0 \.\. user-[0-2]-999, [0-9]+ bytes in [0-9]+ retained$'
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$work/quickstart.c" \
    $(pkg-config --cflags --libs arena) -o "$work/quickstart"
ldd "$work/quickstart" | grep -qE "libarena.so.2 => (/usr)?/lib/$multiarch/libarena.so.2 " ||
    { echo "ci-debian: the quick start does not load the package's libarena.so.2" >&2; exit 1; }
expect "quick start, pkg-config" "$batch" "$work/quickstart"
cat >"$work/cmake/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(quickstart LANGUAGES C)
find_package(arena 2 CONFIG REQUIRED)
add_executable(quickstart ../quickstart.c)
target_link_libraries(quickstart PRIVATE arena::arena)
add_executable(quickstart_static ../quickstart.c)
target_link_libraries(quickstart_static PRIVATE arena::arena_static)
EOF
cmake -S "$work/cmake" -B "$work/cmake/build" >/dev/null
cmake --build "$work/cmake/build" >/dev/null
expect "quick start, CMake arena::arena" "$batch" "$work/cmake/build/quickstart"
if ldd "$work/cmake/build/quickstart_static" | grep -q libarena; then
    echo "ci-debian: arena::arena_static linked the shared library" >&2
    exit 1
fi
expect "quick start, CMake arena::arena_static" "$batch" "$work/cmake/build/quickstart_static"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror tests/dist/consumer.cpp \
    $(pkg-config --cflags --libs arena) -o "$work/pmr"
expect "C++ std::pmr, pkg-config" "^dist consumer \(C\+\+\): libarena $version: ok$" "$work/pmr"

step "dpkg --purge libarena-dev libarena2"
trap - EXIT
purge
if dpkg-query -W -f='${Status}' libarena2 libarena-dev 2>/dev/null | grep -q "ok installed" ||
    [ -e /usr/include/arena ] || [ -e "/usr/lib/$multiarch/libarena.so.2" ]; then
    echo "ci-debian: the purge left the packages or their files behind" >&2
    exit 1
fi
echo "purged: no libarena package or file left"
