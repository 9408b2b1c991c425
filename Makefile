# The two commands: `make test` and `make bench`.  Both install what they need
# first (scripts/deps.sh), then configure, build and run through CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: test build deps clean

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
