#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI check: builds libarena.so as it is released (RelWithDebInfo: -O2 -g,
# not checked) in build-abi, describes its ABI with abidw (libabigail: Debian
# abigail-tools) and compares it with the committed baseline of its SONAME,
# abi/<soname>.abi, with abidiff.
#   scripts/abi-check.sh           fails on a change that breaks programs built
#                                  against the baseline: a symbol removed, a
#                                  function's or a public type's size, layout or
#                                  signature changed.  Added functions and
#                                  variables are compatible: reported, not failed.
#                                  The opaque types' layouts are not compared
#                                  (abi/opaque.abignore).
#   scripts/abi-check.sh --update  writes the baseline from this tree: run it at
#                                  release time, once the API is settled, and
#                                  commit abi/.
# The arena__ functions are part of the ABI: the inline code in the public
# headers, compiled into programs, calls them.
set -euo pipefail
cd "$(dirname "$0")/.."
build="build-abi"
jobs=$(nproc 2>/dev/null || echo 2)

update=0
case "${1:-}" in
    --update) update=1 ;;
    "") ;;
    *) echo "usage: scripts/abi-check.sh [--update]" >&2; exit 2 ;;
esac
for tool in abidw abidiff; do
    command -v "$tool" >/dev/null ||
        { echo "abi-check: needs $tool (Debian abigail-tools: scripts/deps.sh ci)" >&2; exit 1; }
done

mkdir -p "$build"
# The debug information names the sources relative to the checkout.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARENA_CHECKED=OFF \
    "-DCMAKE_C_FLAGS=-ffile-prefix-map=$PWD/=" \
    -DARENA_BUILD_TESTS=OFF -DARENA_BUILD_EXAMPLES=OFF >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" --target arena >"$build/build.log" 2>&1 ||
    { cat "$build/build.log"; exit 1; }
lib=$(readlink -f "$build/libarena.so")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
baseline=abi/$soname.abi
current=$build/$soname.abi

# No paths, line numbers or build directories: the description depends on the
# library alone, so that the baseline is the same from any checkout.
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --out-file "$current" "$lib"

if [ "$update" = 1 ]; then
    mkdir -p abi
    cp "$current" "$baseline"
    echo "abi-check: wrote $baseline from this tree; commit it"
    exit 0
fi
if [ ! -f "$baseline" ]; then
    echo "abi-check: no baseline for $soname ($baseline): a new SONAME starts from" \
        "scripts/abi-check.sh --update" >&2
    exit 1
fi

# The opaque types (abi/opaque.abignore) are left out of the comparison; each
# must stay undefined in the public headers.
suppr=abi/opaque.abignore
for name in $(awk '$1 == "name" { print $3 }' "$suppr"); do
    if grep -rqE "struct $name[[:space:]]*\{" include/; then
        echo "abi-check: struct $name is defined under include/, so its layout is ABI:" \
            "remove it from $suppr" >&2
        exit 1
    fi
done

# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI change,
# 8 incompatible ABI change.  A change to a type reachable from the exported
# functions (struct arena's size, a field's offset) sets only 4, so 4 fails
# too unless added symbols are all there is to it.
status() { "$@" >"$build/abidiff.txt" 2>&1 && echo 0 || echo $?; }
rc=$(status abidiff --suppressions "$suppr" "$baseline" "$current")
cat "$build/abidiff.txt"
if [ $((rc & 3)) -ne 0 ]; then
    echo "abi-check: abidiff failed (status $rc)" >&2
    exit 1
fi
if [ $((rc & 8)) -ne 0 ]; then
    echo "abi-check: INCOMPATIBLE ABI change against $baseline (above)" >&2
    exit 1
fi
if [ $((rc & 4)) -ne 0 ]; then
    rc=$(status abidiff --suppressions "$suppr" --no-added-syms "$baseline" "$current")
    if [ $((rc & 4)) -ne 0 ]; then
        echo "abi-check: the ABI of existing symbols or types changed against $baseline (above):" \
            "programs built against it would break" >&2
        exit 1
    fi
    echo "abi-check: compatible: only additions against $baseline"
    exit 0
fi
echo "abi-check: $soname matches $baseline"
