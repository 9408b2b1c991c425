#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The size bounds of src/ (run by scripts/lint.sh): no file over MAX_FILE lines,
# no function over MAX_FUNCTION lines, counted from the first line of its
# signature to its closing brace, comments and blank lines included.  A
# function is found by the project's brace style (.clang-format, Linux): its
# body opens with `{` alone at column 0 and closes with `}` alone at column 0.
# Usage: scripts/check-sizes.sh [-v] [FILE...] (default: src/*.c src/*.h);
# -v also lists every function with its length.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_FILE=1400
MAX_FUNCTION=60
verbose=0
if [ "${1:-}" = -v ]; then
    verbose=1
    shift
fi
if [ $# -eq 0 ]; then
    set -- src/*.c src/*.h
fi
awk -v max_file=$MAX_FILE -v max_fn=$MAX_FUNCTION -v verbose=$verbose '
    function check_file() {
        if (file != "" && lines > max_file) {
            printf "check-sizes: %s is %d lines (at most %d)\n", file, lines,
                   max_file > "/dev/stderr"
            bad = 1
        }
    }
    FNR == 1 { check_file(); file = FILENAME; sig = 0; open = 0 }
    { lines = FNR }
    # A signature begins at column 0 (a declaration continues indented).
    !open && /^[A-Za-z_]/ { sig = FNR; name = $0 }
    !open && /^\{$/ { open = FNR; start = sig ? sig : FNR }
    open && /^\}/ {
        n = FNR - start + 1
        fn = name
        sub(/\(.*/, "", fn)
        sub(/.*[ *]/, "", fn)
        if (verbose)
            printf "%5d %s:%d %s\n", n, FILENAME, start, fn
        if (n > max_fn) {
            printf "check-sizes: %s:%d: %s() is %d lines (at most %d)\n", FILENAME, start, fn,
                   n, max_fn > "/dev/stderr"
            bad = 1
        }
        open = 0
        sig = 0
    }
    END { check_file(); exit bad }
' "$@"
