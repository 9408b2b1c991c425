#!/bin/sh
# SPDX-License-Identifier: MIT
# Checks that a Windows build of libarena (DLL) exports exactly the functions
# the public headers mark ARENA_API: none missing (a program would fail to
# link), none more (internals would leak into the ABI).
# Use: scripts/check-exports.sh path/to/libarena.dll   (needs mingw-w64's objdump)
set -eu
cd "$(dirname "$0")/.."
dll=$1
objdump=${OBJDUMP:-x86_64-w64-mingw32-objdump}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# An ARENA_API declaration names its function before the first '(' after
# ARENA_API, on that line or, where the attributes before ARENA_API filled
# the line (clang-format), on the next (a variable: `ARENA_API extern TYPE
# NAME;`).
cat include/arena/*.h include/arena/internal/*.h | grep -v '^#' |
    awk '/ARENA_API[[:space:]]*$/ { line = $0; getline; print line " " $0; next } /ARENA_API/' |
    sed -n -e 's/^ARENA_API extern [^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' \
        -e 's/^.*ARENA_API[^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)(.*$/\1/p' |
    sort -u >"$tmp/declared"
"$objdump" -p "$dll" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' |
    sed -n 's/^[[:space:]]*\[ *[0-9]*\] \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' | sort -u >"$tmp/exported"

declared=$(wc -l <"$tmp/declared")
if [ "$declared" -lt 10 ]; then
    echo "check-exports: only $declared ARENA_API declarations found: the pattern is broken" >&2
    exit 1
fi
if ! diff -u "$tmp/declared" "$tmp/exported" >"$tmp/diff"; then
    echo "check-exports: $dll exports differ from the ARENA_API declarations" \
        "(-: declared, not exported; +: exported, not declared):" >&2
    cat "$tmp/diff" >&2
    exit 1
fi
echo "check-exports: $dll exports the $declared ARENA_API functions and nothing else"
