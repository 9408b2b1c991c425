// SPDX-License-Identifier: MIT
/*
 * The C++ layer (arena/arena.hpp) in bench_arena: std::pmr containers over
 * libarena's resources against the standard library's.  libarena::pool<T>'s
 * rows are in bench_arena.cc, beside the C pool's and built the same way.
 *
 * Two workloads: a container of kElems elements built and dropped (cxx/),
 * and churn (cxx_churn/): kChurnEntries entries live while each step erases
 * one and inserts another, the strings longer than the small-string buffer,
 * so that every step frees and allocates through the resource.  The rows
 * that count what a resource took (peak_held) run over the churn's
 * resources, whose upstream counts it.
 */
#include <arena/arena.hpp>

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
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

// ---- Churn ------------------------------------------------------------------------



constexpr size_t kChurnEntries = 500;
size_t cxx_churn_steps() { return quick_mode() ? 5000 : 20000; }

// An upstream resource that counts the bytes it has handed out and their
// peak: what a standard resource holds.
class Counting : public std::pmr::memory_resource {
public:
    size_t peak() const { return peak_; }

private:
    void *do_allocate(size_t bytes, size_t align) override
    {
        void *p = std::pmr::new_delete_resource()->allocate(bytes, align);
        now_ += bytes;
        peak_ = now_ > peak_ ? now_ : peak_;
        return p;
    }
    void do_deallocate(void *p, size_t bytes, size_t align) override
    {
        std::pmr::new_delete_resource()->deallocate(p, bytes, align);
        now_ -= bytes;
    }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
    {
        return this == &o;
    }
    size_t now_ = 0, peak_ = 0;
};

// The churn's resources: held() is the most memory the resource held (0:
// not known), end() ends a batch as ArenaRes and the others do.
struct ArenaChurnRes : ArenaRes {
    size_t held()
    {
        arena_stats s;
        arena_get_stats(a.get(), &s);
        return s.peak_held;
    }
};
struct ArenaMonotonicChurnRes : ArenaMonotonicRes {
    size_t held()
    {
        arena_stats s;
        arena_get_stats(a.get(), &s);
        return s.peak_held;
    }
};
struct PoolChurnRes {
    Counting up;
    std::pmr::unsynchronized_pool_resource r{&up};
    std::pmr::memory_resource *get() { return &r; }
    void end() {}
    size_t held() { return up.peak(); }
};
struct MonotonicChurnRes {
    Counting up;
    std::pmr::monotonic_buffer_resource r{65536, &up};
    std::pmr::memory_resource *get() { return &r; }
    void end() { r.release(); }
    size_t held() { return up.peak(); }
};
struct DefaultChurnRes : DefaultRes {
    size_t held() { return 0; }
};

// The keys, made once: kChurnEntries + cxx_churn_steps() distinct strings of
// 16..127 bytes, and the entry each step replaces.
struct ChurnKeys {
    std::vector<std::string> keys;
    std::vector<uint32_t> victim;
};

const ChurnKeys &churn_keys()
{
    static ChurnKeys k;
    if (!k.keys.empty())
        return k;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    auto next = [&s] {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s * 0x2545F4914F6CDD1Dull;
    };
    size_t n = kChurnEntries + cxx_churn_steps();
    for (size_t i = 0; i < n; i++) {
        std::string key = "key:" + std::to_string(i) + ":";
        key.resize(16 + next() % 112, static_cast<char>('a' + i % 26));
        k.keys.push_back(std::move(key));
    }
    for (size_t i = 0; i < cxx_churn_steps(); i++)
        k.victim.push_back(static_cast<uint32_t>(next() % kChurnEntries));
    return k;
}

// A map of string keys (ordered or not): fill kChurnEntries, then each step
// erases a random entry and inserts a new key (`Reinsert`: the same key
// again, so that the node and the string given back are the sizes asked
// next); dropped at the end.
template <class Map, class Res, bool Reinsert = false> void map_churn(State &st)
{
    Res res;
    const ChurnKeys &k = churn_keys();
    std::vector<typename Map::iterator> its(kChurnEntries);
    for (auto _ : st) {
        {
            Map m(res.get());
            if constexpr (!std::is_same_v<Map, std::pmr::map<std::pmr::string, int>>)
                m.reserve(2 * kChurnEntries); // no rehash: the iterators stay valid
            for (size_t i = 0; i < kChurnEntries; i++)
                its[i] = m.emplace(std::string_view(k.keys[i]), static_cast<int>(i)).first;
            for (size_t j = 0; j < k.victim.size(); j++) {
                uint32_t v = k.victim[j];
                m.erase(its[v]);
                its[v] = m.emplace(std::string_view(k.keys[Reinsert ? v : kChurnEntries + j]),
                                   static_cast<int>(j))
                             .first;
            }
            benchmark::DoNotOptimize(&m);
        }
        res.end();
    }
    st.counters["peak_held"] = bytes_counter(static_cast<double>(res.held()));
    st.counters["entries"] = static_cast<double>(kChurnEntries);
}

// A list or deque of strings as a queue: fill kChurnEntries, then each step
// drops the oldest and appends a new one (a deque's blocks come and go
// too).
template <class Queue, class Res> void queue_churn(State &st)
{
    Res res;
    const ChurnKeys &k = churn_keys();
    for (auto _ : st) {
        {
            Queue q(res.get());
            for (size_t i = 0; i < kChurnEntries; i++)
                q.emplace_back(std::string_view(k.keys[i]));
            for (size_t j = 0; j < k.victim.size(); j++) {
                q.pop_front();
                q.emplace_back(std::string_view(k.keys[kChurnEntries + j]));
            }
            benchmark::DoNotOptimize(&q);
        }
        res.end();
    }
    st.counters["peak_held"] = bytes_counter(static_cast<double>(res.held()));
    st.counters["entries"] = static_cast<double>(kChurnEntries);
}

template <class Res> void churn_rows(const char *impl, const char *label)
{
    double steps = static_cast<double>(kChurnEntries + cxx_churn_steps());
    add(std::string("cxx_churn/map/") + impl, label, steps,
        map_churn<std::pmr::map<std::pmr::string, int>, Res>);
    add(std::string("cxx_churn/unordered_map/") + impl, label, steps,
        map_churn<std::pmr::unordered_map<std::pmr::string, int>, Res>);
    add(std::string("cxx_churn/list/") + impl, label, steps,
        queue_churn<std::pmr::list<std::pmr::string>, Res>);
    add(std::string("cxx_churn/unordered_map_reinsert/") + impl, label, steps,
        map_churn<std::pmr::unordered_map<std::pmr::string, int>, Res, true>);
    add(std::string("cxx_churn/deque/") + impl, label, steps,
        queue_churn<std::pmr::deque<std::pmr::string>, Res>);
}

// A JSON-like document: an array of kElems / 8 records, each an array of
// a number, a string of 16..47 bytes, a flag and an array of 4 numbers,
// built one value at a time (each array grown by push_back) and dropped.
struct JsonValue;
using JsonArray = std::pmr::vector<JsonValue>;
struct JsonValue {
    std::variant<std::monostate, bool, double, std::pmr::string, JsonArray> v;
};

template <class Res> void json_tree(State &st)
{
    Res res;
    const std::string text(64, 'j');
    size_t n = opaque(kElems / 8);
    for (auto _ : st) {
        {
            std::pmr::polymorphic_allocator<JsonValue> al(res.get());
            JsonArray doc(al);
            for (size_t i = 0; i < n; i++) {
                JsonArray rec(al);
                rec.push_back(JsonValue{static_cast<double>(i)});
                rec.push_back(JsonValue{std::pmr::string(text.data(), 16 + (i & 31), al)});
                rec.push_back(JsonValue{(i & 1) != 0});
                JsonArray nums(al);
                for (size_t j = 0; j < 4; j++)
                    nums.push_back(JsonValue{static_cast<double>(i * j)});
                rec.push_back(JsonValue{std::move(nums)});
                doc.push_back(JsonValue{std::move(rec)});
            }
            benchmark::DoNotOptimize(doc.data());
        }
        res.end();
    }
    st.counters["peak_held"] = bytes_counter(static_cast<double>(res.held()));
}

// Vectors grown one push_back at a time: kElems / 64 vectors of 64
// uint64_t, each growth a new buffer and the old one given back, then
// dropped.  `Vec` makes one over the resource.
template <class Res, class Vec> void vector_growth_of(State &st, Vec make)
{
    Res res;
    size_t n = opaque(kElems / 64);
    for (auto _ : st) {
        for (size_t i = 0; i < n; i++) {
            auto v = make(res);
            for (uint64_t j = 0; j < 64; j++)
                v.push_back(j);
            benchmark::DoNotOptimize(v.data());
        }
        res.end();
    }
    st.counters["peak_held"] = bytes_counter(static_cast<double>(res.held()));
}

template <class Res> void vector_growth(State &st)
{
    vector_growth_of<Res>(st, [](Res &r) { return std::pmr::vector<uint64_t>(r.get()); });
}

// std::vector<T, libarena::allocator<T>>: the same, over the arena itself.
void vector_growth_allocator(State &st);

template <class Res> void held_rows(const char *impl, const char *label)
{
    add(std::string("cxx/json_tree/") + impl, label, kElems / 8 * 9, json_tree<Res>);
    add(std::string("cxx/vector_growth/") + impl, label, kElems, vector_growth<Res>);
}

void vector_growth_allocator(State &st)
{
    vector_growth_of<ArenaChurnRes>(st, [](ArenaChurnRes &r) {
        return std::vector<uint64_t, libarena::allocator<uint64_t>>(
            libarena::allocator<uint64_t>(r.a));
    });
}

} // namespace

void bench::register_cxx()
{
    pmr_rows<ArenaRes>("arena_resource", "libarena::resource");
    pmr_rows<ArenaMonotonicRes>("arena_monotonic", "libarena::monotonic_resource");
    pmr_rows<MonotonicRes>("pmr_monotonic", "std::pmr::monotonic_buffer_resource");
    pmr_rows<PoolRes>("pmr_pool", "std::pmr::unsynchronized_pool_resource");
    pmr_rows<DefaultRes>("glibc", "std::pmr::new_delete_resource (glibc)");
    held_rows<ArenaChurnRes>("arena_resource", "libarena::resource");
    add("cxx/vector_growth/arena_allocator", "std::vector<T, libarena::allocator<T>>", kElems,
        vector_growth_allocator);
    held_rows<ArenaMonotonicChurnRes>("arena_monotonic", "libarena::monotonic_resource");
    held_rows<MonotonicChurnRes>("pmr_monotonic", "std::pmr::monotonic_buffer_resource");
    held_rows<PoolChurnRes>("pmr_pool", "std::pmr::unsynchronized_pool_resource");
    held_rows<DefaultChurnRes>("glibc", "std::pmr::new_delete_resource (glibc)");
    churn_rows<ArenaChurnRes>("arena_resource", "libarena::resource");
    churn_rows<PoolChurnRes>("pmr_pool", "std::pmr::unsynchronized_pool_resource");
    churn_rows<MonotonicChurnRes>("pmr_monotonic", "std::pmr::monotonic_buffer_resource");
    churn_rows<DefaultChurnRes>("glibc", "std::pmr::new_delete_resource (glibc)");
}
