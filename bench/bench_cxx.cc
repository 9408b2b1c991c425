// SPDX-License-Identifier: MIT
/*
 * The C++ layer (arena/arena.hpp) in bench_arena: std::pmr containers over
 * libarena's resources against the standard library's.  libarena::pool<T>'s
 * rows are in bench_arena.cc, beside the C pool's and built the same way.
 */
#include <arena/arena.hpp>

#include <cstdint>
#include <map>
#include <memory_resource>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "workloads.h"

using namespace bench;
using benchmark::State;

namespace bench {
void register_cxx();
}

namespace {

// Elements per container: a batch, as the other rows keep live.
constexpr size_t kElems = kBatch;

// How each resource is used for a batch: made once, `end()` after each
// container is dropped (the arena's reset, the monotonic resource's release).
struct ArenaRes {
    libarena::arena a;
    libarena::resource r{a};
    std::pmr::memory_resource *get() { return &r; }
    void end() { a.reset(); }
};
struct ArenaMonotonicRes {
    libarena::arena a;
    libarena::monotonic_resource r{a};
    std::pmr::memory_resource *get() { return &r; }
    void end() { a.reset(); }
};
struct MonotonicRes {
    std::pmr::monotonic_buffer_resource r{65536};
    std::pmr::memory_resource *get() { return &r; }
    void end() { r.release(); }
};
struct PoolRes {
    std::pmr::unsynchronized_pool_resource r;
    std::pmr::memory_resource *get() { return &r; }
    void end() {}
};
struct DefaultRes {
    std::pmr::memory_resource *get() { return std::pmr::new_delete_resource(); }
    void end() {}
};

// A std::pmr::vector<std::pmr::string> of kElems strings of 16..47 bytes
// (none fits the small-string buffer), grown one push_back at a time, then
// dropped.
template <class Res> void vector_of_strings(State &st)
{
    Res res;
    const std::string text(64, 'v');
    size_t n = opaque(kElems);
    for (auto _ : st) {
        {
            std::pmr::vector<std::pmr::string> v(res.get());
            for (size_t i = 0; i < n; i++)
                v.emplace_back(text.data(), 16 + (i & 31));
            benchmark::DoNotOptimize(v.data());
        }
        res.end();
    }
}

// A std::pmr::map<uint64_t, uint64_t> of kElems entries inserted in a
// scattered order, then dropped.
template <class Res> void map_of_ints(State &st)
{
    Res res;
    size_t n = opaque(kElems);
    for (auto _ : st) {
        {
            std::pmr::map<uint64_t, uint64_t> m(res.get());
            for (uint64_t i = 0; i < n; i++)
                m.emplace((i * 2654435761u) & 0xffffffu, i);
            benchmark::DoNotOptimize(&m);
        }
        res.end();
    }
}

template <class Res> void pmr_rows(const char *impl, const char *label)
{
    add(std::string("cxx/vector_string/") + impl, label, kElems, vector_of_strings<Res>);
    add(std::string("cxx/map/") + impl, label, kElems, map_of_ints<Res>);
}

} // namespace

void bench::register_cxx()
{
    pmr_rows<ArenaRes>("arena_resource", "libarena::resource");
    pmr_rows<ArenaMonotonicRes>("arena_monotonic", "libarena::monotonic_resource");
    pmr_rows<MonotonicRes>("pmr_monotonic", "std::pmr::monotonic_buffer_resource");
    pmr_rows<PoolRes>("pmr_pool", "std::pmr::unsynchronized_pool_resource");
    pmr_rows<DefaultRes>("glibc", "std::pmr::new_delete_resource (glibc)");
}
