#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make lint`: every static check CI runs, each with zero findings allowed.
#   - the SPDX licence line in every tracked source (scripts/check-spdx.sh);
#   - lines of at most 100 columns, comments included, and trailing comments
#     whose lines stay aligned (scripts/check-lines.py);
#   - the size bounds of src/'s files and functions (scripts/check-sizes.sh);
#   - clang-format: the sources match .clang-format (`make format` fixes them);
#   - cppcheck on src/ and include/;
#   - clang-tidy (.clang-tidy) on src/, plain and checked builds (the lint-*
#     presets export compile_commands.json for it);
#   - gcc -fanalyzer on src/, plain and checked.
# A part of a source (src/*.inc.c) is checked as the source that includes it.
set -euo pipefail
cd "$(dirname "$0")/.."
sources=()
for f in src/*.c; do
    [[ $f == *.inc.c ]] || sources+=("$f")
done

step() { printf '\n==== lint: %s\n' "$*"; }

step "licence: every tracked source carries its SPDX line"
scripts/check-spdx.sh

step "lines of at most 100 columns; trailing comments aligned"
scripts/check-lines.py
step "sizes: src/'s files and functions"
scripts/check-sizes.sh

step "clang-format (make format applies it)"
scripts/format.sh --check

step "cppcheck on src/ and include/"
cmake --preset lint-plain >/dev/null
cppcheck -q --enable=warning,style,performance,portability --std=c11 --error-exitcode=1 \
    --inline-suppr -Iinclude -Ibuild-lint-plain/include -Isrc -DARENA_HAVE_VALGRIND=1 \
    "${sources[@]}" include

step "clang-tidy on src/, plain and checked"
for preset in lint-plain lint-checked; do
    cmake --preset "$preset" >/dev/null
    clang-tidy -p "build-$preset" --quiet "${sources[@]}"
done

# -Wanalyzer-malloc-leak is off: gcc 12's analyzer loses a chunk once it is
# stored in the heap-allocated chunk index and calls it a leak.  Leaks are
# checked for real by memcheck and LeakSanitizer (the ASan presets).
step "gcc -fanalyzer on src/, plain and checked"
for checked in 0 1; do
    for f in "${sources[@]}"; do
        gcc -std=c11 -O2 -fanalyzer -Wno-analyzer-malloc-leak -Werror -Wall -Wextra \
            -Iinclude -Ibuild-lint-plain/include -Isrc -DARENA_HAVE_VALGRIND=1 \
            -DARENA_CHECKED=$checked -c "$f" -o /dev/null
    done
done
step "clean"
