# The two commands: `make test` and `make bench`.  Both install what they need
# first (scripts/deps.sh), then configure, build and run through CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# `make bench`: a release build (-O2) of its own; BENCH_QUICK=1 for the short
# CI mode, BENCH_ARGS for bench/run.py (e.g. --docs, --rounds 9, --filter copy).
# bench/targets.py then prints the targets met and missed (it never fails the build).
BENCH_BUILD ?= build-bench
BENCH_ARGS ?=

.PHONY: test build deps clean bench

test: deps
	cmake -S . -B $(BUILD) -DARENA_WERROR=ON $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

build:
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

deps:
	scripts/deps.sh test

clean:
	rm -rf $(BUILD) build-*

bench:
	scripts/deps.sh bench
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release \
	    -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
	    -DARENA_BUILD_BENCH=ON -DARENA_BUILD_TESTS=OFF -DARENA_BUILD_EXAMPLES=OFF $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j $(JOBS)
	python3 bench/run.py --build $(BENCH_BUILD) $(BENCH_ARGS)
	python3 bench/targets.py
