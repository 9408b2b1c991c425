# SPDX-License-Identifier: MIT
# The commands: `make test`, `make docs` and `make bench` (and for developers
# `make format` and `make lint`).  Each installs what
# it needs first (scripts/deps.sh), then configures, builds and runs through
# CMake.  `make test` runs one of the presets of CMakePresets.json, in
# build-<preset>: PRESET=asan, tsan, checked, checked-asan, checked-asan-only, memcheck, m32,
# fuzz or clang for the other configurations CI runs (default: default).
PRESET ?= default
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# `make bench`: a release build (-O2) of its own; BENCH_QUICK=1 for the short
# CI mode, BENCH_ARGS for bench/run.py (e.g. --docs, --rounds 9, --filter copy).
# bench/targets.py then prints the targets met and missed (it never fails the build).
BENCH_BUILD ?= build-bench
BENCH_ARGS ?=

# `make amalgamation`: the library as two files, arena.h and arena.c, in
# $(AMALGAMATION_DIR) (scripts/amalgamate.py; never committed).
AMALGAMATION_DIR ?= build-amalgamation

# `make dist`: the release tarballs of the commit checked out (the source and
# the one-file build, each with a .sha256) in $(DIST_DIR) (scripts/dist.sh;
# refuses a tree with uncommitted changes); `make distcheck` then builds
# consumers from both (scripts/dist-check.sh).
DIST_DIR ?= build-dist

.PHONY: test build deps docs clean bench format lint amalgamation dist distcheck

test: deps
	cmake --preset $(PRESET) $(CMAKE_ARGS)
	cmake --build --preset $(PRESET) -j $(JOBS)
	ctest --preset $(PRESET) -j $(JOBS)

build:
	cmake --preset $(PRESET) $(CMAKE_ARGS)
	cmake --build --preset $(PRESET) -j $(JOBS)

deps:
	scripts/deps.sh test

# The API reference from the public headers' comments, in build-docs/docs/html;
# any Doxygen warning fails it.
docs:
	@command -v doxygen >/dev/null || { echo "make docs: needs doxygen (scripts/deps.sh ci installs it)" >&2; exit 1; }
	cmake --preset docs $(CMAKE_ARGS)
	cmake --build --preset docs

clean:
	rm -rf build build-*

# `make format` applies .clang-format to the C sources; `make lint` runs every
# static check CI runs (the SPDX lines, the line lengths, the format check,
# cppcheck, clang-tidy, gcc -fanalyzer).
format:
	scripts/format.sh

lint:
	scripts/deps.sh ci
	scripts/lint.sh

amalgamation:
	python3 scripts/amalgamate.py $(AMALGAMATION_DIR)

dist:
	scripts/dist.sh $(DIST_DIR)

distcheck: dist
	scripts/dist-check.sh $(DIST_DIR)

bench:
	scripts/deps.sh bench
	cmake --preset bench -B $(BENCH_BUILD) $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j $(JOBS)
	python3 bench/run.py --build $(BENCH_BUILD) $(BENCH_ARGS)
	python3 bench/targets.py
