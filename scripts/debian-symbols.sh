#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes debian/libarena2.symbols from what libarena.so exports: a symbol
# already listed keeps the version it came with, a new one gets this
# version, and one gone is named on stderr (a removed symbol is an ABI break:
# scripts/abi-check.sh and docs/reference.md, "ABI and versioning").  The package
# build checks the file (DPKG_GENSYMBOLS_CHECK_LEVEL=4 in debian/rules), so
# run this when a change adds an exported function, and commit the result.
#   scripts/debian-symbols.sh [LIBARENA_SO]   (default: builds one in build-symbols)
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n '/^project(arena/,/)/s/^ *VERSION \([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p' CMakeLists.txt)
file=debian/libarena2.symbols

lib=${1:-}
if [ -z "$lib" ]; then
    cmake -S . -B build-symbols -DARENA_BUILD_TESTS=OFF -DARENA_BUILD_EXAMPLES=OFF >/dev/null
    cmake --build build-symbols --target arena -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
    lib=build-symbols/libarena.so
fi
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" != "libarena.so.${version%%.*}" ]; then
    echo "debian-symbols: $lib has SONAME '$soname', not libarena.so.${version%%.*}" >&2
    exit 1
fi

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    echo "# SPDX-License-Identifier: MIT"
    echo "# Written by scripts/debian-symbols.sh: every symbol libarena.so exports, with the"
    echo "# version that first exported it (the arena__ ones are the inline code's: ABI, not API)."
    echo "$soname libarena2 #MINVER#"
    echo "* Build-Depends-Package: libarena-dev"
    nm -D --defined-only "$lib" | awk '{ print $3 }' | sort | while read -r sym; do
        old=$( [ -f "$file" ] && sed -n "s/^ $sym@Base \(.*\)\$/\1/p" "$file" || true)
        echo " $sym@Base ${old:-$version}"
    done
} >"$tmp"
if [ -f "$file" ]; then
    comm -23 <(sed -n 's/^ \([^@]*\)@Base .*/\1/p' "$file" | sort) \
        <(sed -n 's/^ \([^@]*\)@Base .*/\1/p' "$tmp" | sort) |
        sed 's/^/debian-symbols: no longer exported: /' >&2
fi
cat "$tmp" >"$file"
echo "debian-symbols: $file lists $(grep -c '@Base' "$file") symbols of $soname"
