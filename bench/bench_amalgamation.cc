// SPDX-License-Identifier: MIT
/*
 * The amalgamation against the library: the same rows, built twice.  In
 * bench_arena they run on the library compiled from the sources of src/ (impl
 * "arena_library"); in bench_amalgamation, on the library compiled from the
 * one file scripts/amalgamate.py writes (impl "arena_amalgamation"), with the
 * same flags.  The inline fast paths are the headers' in both, so the rows
 * that can differ are those that call into the library: reuse, the global
 * hooks, a reset of a batch that took chunks.
 */
#include <arena/arena.h>
#include <arena/hooks.h>

#include <cstdint>
#include <vector>

#include "harness.h"

#ifdef BENCH_AMALGAMATION_MAIN
#  include <malloc.h>
#endif

using namespace bench;
using benchmark::State;

namespace bench {
void register_amalgamation(const char *impl, const char *label);
}

namespace {

// 16..128 bytes, a different size each time.
inline size_t small_size(size_t i) { return 16 + ((i * 40503u) & 112u); }

// The fast path: 16-byte arena_alloc()s, a batch kept live, then a reset.
void alloc16(State &st)
{
    arena a;
    arena_init(&a, 0);
    std::vector<void *> live(kBatch);
    size_t n = bench::opaque(16), fails = 0;
    for (auto _ : st) {
        for (size_t i = 0; i < kBatch; i++)
            fails += !(live[i] = arena_alloc(&a, n));
        benchmark::DoNotOptimize(live.data());
        arena_reset(&a);
    }
    arena_release(&a);
    if (fails)
        st.SkipWithError("allocation failed");
}

// Values freed as they go: arena_alloc_reuse() of 16..128 B, every other one
// given back at once (arena_free()), a reset every kBatch values.
void reuse(State &st)
{
    arena a;
    arena_init(&a, 0);
    std::vector<void *> live(kBatch);
    size_t fails = 0;
    for (auto _ : st) {
        for (size_t i = 0; i < kBatch; i++) {
            size_t n = small_size(i);
            fails += !(live[i] = arena_alloc_reuse(&a, n));
            if (i & 1)
                arena_free(&a, live[i - 1], small_size(i - 1));
        }
        benchmark::DoNotOptimize(live.data());
        arena_reset(&a);
    }
    arena_release(&a);
    if (fails)
        st.SkipWithError("allocation failed");
}

// The global hooks (cJSON's shape): arena_cur_malloc() of 16..128 B with an
// arena current, every other block arena_cur_free()d, a reset per batch.
void cur_hooks(State &st)
{
    arena a;
    arena_init(&a, 0);
    arena *prev = arena_set_current(&a);
    std::vector<void *> live(kBatch);
    size_t fails = 0;
    for (auto _ : st) {
        for (size_t i = 0; i < kBatch; i++) {
            fails += !(live[i] = arena_cur_malloc(small_size(i)));
            if (i & 1)
                arena_cur_free(live[i - 1]);
        }
        benchmark::DoNotOptimize(live.data());
        arena_reset(&a);
    }
    arena_set_current(prev);
    arena_release(&a);
    if (fails)
        st.SkipWithError("allocation failed");
}

} // namespace

void bench::register_amalgamation(const char *impl, const char *label)
{
    std::string i = impl;
    add("amalgamation/alloc16/" + i, label, kBatch, alloc16);
    add("amalgamation/reuse/" + i, label, kBatch, reuse);
    add("amalgamation/cur_hooks/" + i, label, kBatch, cur_hooks);
}

#ifdef BENCH_AMALGAMATION_MAIN
namespace bench {
void return_memory() { malloc_trim(0); }
} // namespace bench

int main(int argc, char **argv)
{
    bench::check_malloc_is("libc.so");
    bench::register_amalgamation("arena_amalgamation",
                                 "libarena, amalgamated (one translation unit)");
    return bench::run_main(argc, argv);
}
#endif
