#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compares the machine code of the inline fast paths (scripts/fast-path-probe.c)
# built against the public headers of a git revision and of the working tree,
# with gcc and clang at -O2: a behaviour-neutral change of the headers must
# leave them identical.  Usage: scripts/fast-path-diff.sh [REV] (default HEAD).
# Needs a configured build-default (for arena/version.h).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old"
git archive "$rev" include | tar -x -C "$tmp/old"
status=0
for cc in gcc clang; do
    command -v "$cc" >/dev/null || { echo "fast-path-diff: no $cc, skipped"; continue; }
    for side in old new; do
        inc=$([ $side = old ] && echo "$tmp/old/include" || echo include)
        "$cc" -std=c11 -O2 -c scripts/fast-path-probe.c -I"$inc" -Ibuild-default/include \
            -o "$tmp/$cc.o"
        objdump -d --no-show-raw-insn "$tmp/$cc.o" | sed -n '/^Disassembly/,$p' |
            sed -E 's/^ *[0-9a-f]+:[[:space:]]*//; s/^[0-9a-f]+ </</; s/[0-9a-f]+ <([a-z_0-9]+)\+0x[0-9a-f]+>/<\1+.>/g' \
            >"$tmp/$side-$cc.s"
    done
    if diff -u "$tmp/old-$cc.s" "$tmp/new-$cc.s"; then
        echo "fast-path-diff: $cc: identical to $rev ($(grep -c . "$tmp/new-$cc.s") lines)"
    else
        status=1
    fi
done
exit $status
