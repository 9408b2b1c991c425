#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make format`: applies .clang-format to the project's C sources and
# headers; with --check, lists the files that differ and fails instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 'tests/*.c' 'tests/*.h' \
    'examples/*.c' 'fuzz/*.c' 'scripts/*.c')
if [ "${1:-}" = --check ]; then
    clang-format --dry-run -Werror "${files[@]}"
else
    clang-format -i "${files[@]}"
fi
