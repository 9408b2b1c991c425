// SPDX-License-Identifier: MIT
/*
 * libarena's churn rows (bench/churn.h) in bench_arena: the values freed one
 * by one inside a batch, through arena_alloc_reuse() and arena_free(), and
 * through Lua's hook (arena_hook_lua()).
 * The mallocs' rows come from malloc_family.cc, one process per malloc.
 * Besides the time and the resident set, each row reports what the arena
 * held at most (arena_get_stats()'s peak_held, exact).
 */
#include <arena/arena.h>
#include <arena/hooks.h>

#include <memory>

#include "churn.h"

namespace bench {
void register_churn_arena();
}

using namespace bench;
using benchmark::State;

namespace {

// A fresh arena (ARENA_DEFAULT_CHUNK) per row: its peak is the row's.
template <class Alloc, class Release>
void arena_churn(State &st, int dist, long *start_kib, Alloc alloc, Release release)
{
    arena a;
    arena_stats s;
    arena_init(&a, 0);
    churn_row(
        st, dist, start_kib, [&](size_t n) { return alloc(&a, n); },
        [&](void *p, size_t n) { release(&a, p, n); }, [&] { arena_reset(&a); });
    arena_get_stats(&a, &s);
    st.counters["peak_held"] = bytes_counter(static_cast<double>(s.peak_held));
    st.counters["budget"] = static_cast<double>(ARENA_DEFAULT_CHUNK);
    arena_release(&a);
}

} // namespace

void bench::register_churn_arena()
{
    for (int d = 0; d < 4; d++) {
        auto reuse_start = std::make_shared<long>(-1), lua_start = std::make_shared<long>(-1);
        add(churn_name(d, "arena_reuse"), "libarena arena_alloc_reuse + arena_free", -1,
            [d, reuse_start](State &st) {
                arena_churn(
                    st, d, reuse_start.get(),
                    [](arena *a, size_t n) { return arena_alloc_reuse(a, n); },
                    [](arena *a, void *p, size_t n) { arena_free(a, p, n); });
            });
        add(churn_name(d, "arena_lua"), "libarena arena_hook_lua", -1, [d, lua_start](State &st) {
            arena_churn(
                st, d, lua_start.get(),
                [](arena *a, size_t n) { return arena_hook_lua(a, nullptr, 5, n); },
                [](arena *a, void *p, size_t n) { arena_hook_lua(a, p, n, 0); });
        });
    }
}
