/* SPDX-License-Identifier: MIT */
/*
 * The shapes of the workloads, shared by bench_arena.cc (libarena, the limit
 * proxies, the peers on glibc malloc) and malloc_family.cc (one binary per
 * malloc).  Each implementation supplies only its calls; the loop, what is
 * kept live and what is read are the same for all.
 */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H

#include <cstring>
#include <vector>

#include "harness.h"

namespace bench {

inline bool failed(const void *p) { return p == nullptr; }

/*
 * A batch: `put(i)` stores value i (the value, or a ref to it, is kept in an
 * array until the batch ends, as a decoder keeps its fields), then
 * impl.drop(live) drops the whole batch.
 *   warm: one instance for the whole run, already through one batch, so that
 *         chunks and caches are reused;
 *   cold: before each batch (untimed) the instance is destroyed and the
 *         allocator gives its free memory back to the OS; the timed part
 *         creates the instance and takes the page faults of fresh memory.
 * Impl: open(), drop(V *live) and close(), with close() after open() and
 * open() after close() both valid.
 */
// One batch: value i stored by put(i), kept in live[i].  Forced inline, with
// put inlined into it, so that every implementation's loop is compiled the
// same way (left to itself gcc inlined it for some and not for others, and
// the out-of-line copy paid memory round trips on its own counters).
template <class V, class Put>
__attribute__((always_inline, flatten)) inline size_t fill_batch(V *live, Put &put)
{
    size_t fails = 0;
    for (size_t i = 0; i < kBatch; i++) {
        live[i] = put(i);
        fails += failed(live[i]);
    }
    touch(live);
    return fails;
}

template <class Impl, class Put>
void batch(benchmark::State &st, Impl &impl, bool cold, Put put)
{
    using V = decltype(put(size_t(0)));
    std::vector<V> live(kBatch);
    size_t fails = 0;
    impl.open();
    if (!cold) {
        fails += fill_batch(live.data(), put);
        impl.drop(live.data());
    }
    for (auto _ : st) {
        if (cold) {
            st.PauseTiming();
            impl.close();
            return_memory();
            st.ResumeTiming();
            impl.open();
        }
        fails += fill_batch(live.data(), put);
        impl.drop(live.data());
    }
    impl.close();
    if (fails)
        st.SkipWithError("allocation failed");
}

// The scoped-block workload: kScopes scopes per iteration, each obtaining one
// block of `n` bytes, filling it with 3 and dropping it.  scope(n) returns
// false when the allocation failed.
template <class Scope> void scoped(benchmark::State &st, size_t n, Scope scope)
{
    size_t fails = 0;
    for (auto _ : st)
        for (size_t k = 0; k < kScopes; k++)
            fails += !scope(n);
    if (fails)
        st.SkipWithError("allocation failed");
}

// The body of every zeroed scope: the zeroes are made visible (so that the
// compiler cannot drop the zeroing as a dead store before the fill), then the
// block is filled with 3, which is made visible too.
inline bool use_zeroed(void *p, size_t n)
{
    if (!p)
        return false;
    touch(p);
    std::memset(p, 3, n);
    touch(p);
    return true;
}

// The body of every uninitialised scope.
inline bool use_block(void *p, size_t n)
{
    if (!p)
        return false;
    std::memset(p, 3, n);
    touch(p);
    return true;
}

// The tree workload: a complete binary tree of kTreeDepth levels, built,
// walked and dropped per iteration.
struct Node {
    Node *l, *r;
    int64_t v;
};

// `alloc()` returns one uninitialised Node (nullptr on failure).
template <class Alloc> Node *build(Alloc &alloc, int depth)
{
    Node *n = alloc();
    if (!n)
        return nullptr;
    n->v = depth;
    if (depth > 0) {
        n->l = build(alloc, depth - 1);
        n->r = build(alloc, depth - 1);
    } else {
        n->l = n->r = nullptr;
    }
    return n;
}

inline size_t count(const Node *n)
{
    if (!n)
        return 0;
    return 1 + (n->v > 0 ? count(n->l) + count(n->r) : 0);
}

constexpr size_t kTreeNodes = (size_t(1) << kTreeDepth) - 1; // 8191

// One tree per iteration: begin() before the build (may be empty),
// alloc() per node, drop(root) after the walk.
template <class Begin, class Alloc, class Drop>
void tree(benchmark::State &st, Begin begin, Alloc alloc, Drop drop)
{
    bool ok = true;
    for (auto _ : st) {
        begin();
        Node *root = build(alloc, kTreeDepth - 1);
        ok &= count(root) == kTreeNodes;
        benchmark::DoNotOptimize(root);
        drop(root);
    }
    if (!ok)
        st.SkipWithError("allocation failed");
}

// The pool workloads, for capacities kPoolCaps and object sizes kPoolSizes;
// one op is one take or one give.
constexpr size_t kPoolCaps[] = {1024, 8192, 65536, 262144};
constexpr size_t kPoolSizes[] = {16, 256};

// Batch: take every slot (kept live), then give them all back, last first.
template <class Take, class Give>
void pool_batch(benchmark::State &st, size_t cap, Take take, Give give)
{
    std::vector<void *> live(cap);
    size_t fails = 0;
    for (auto _ : st) {
        for (size_t i = 0; i < cap; i++) {
            live[i] = take();
            fails += live[i] == nullptr;
        }
        touch(live.data());
        for (size_t i = cap; i-- > 0;)
            give(live[i]);
    }
    if (fails)
        st.SkipWithError("allocation failed");
}

// Rolling: cap/2 objects live; each step gives back the oldest and takes one
// (a queue).  `cap` steps per iteration.
template <class Take, class Give>
void pool_rolling(benchmark::State &st, size_t cap, Take take, Give give)
{
    size_t half = cap / 2, head = 0, fails = 0;
    std::vector<void *> ring(half);
    for (size_t i = 0; i < half; i++)
        fails += (ring[i] = take()) == nullptr;
    for (auto _ : st) {
        for (size_t k = 0; k < cap; k++) {
            give(ring[head]);
            void *p = take();
            fails += p == nullptr;
            ring[head] = p;
            head = head + 1 == half ? 0 : head + 1;
        }
        touch(ring.data());
    }
    for (void *p : ring)
        if (p)
            give(p);
    if (fails)
        st.SkipWithError("allocation failed");
}

inline std::string pool_name(bool rolling, size_t size, size_t cap, const std::string &impl)
{
    return std::string("pool/") + (rolling ? "rolling/" : "batch/") + std::to_string(size) + "/" +
           std::to_string(cap) + "/" + impl;
}

inline std::string sz(size_t n) { return std::to_string(n); }

// ---- Huge batches --------------------------------------------------------------------

// One huge batch stores kHugeBytes of values of kHugeMin..kHugeMax bytes.
constexpr size_t kHugeBytes = size_t(256) << 20;
constexpr size_t kHugeMin = 64, kHugeMax = 4096;

// The sizes of a huge batch's values, in order: uniform in kHugeMin..kHugeMax
// from a fixed seed, the last one or two cut to make the sum kHugeBytes
// exactly.  The same sequence for every implementation.
inline const std::vector<uint16_t> &huge_sizes()
{
    static const std::vector<uint16_t> sizes = [] {
        std::vector<uint16_t> v;
        uint64_t s = 0x2545f4914f6cdd1dull;
        size_t left = kHugeBytes;
        while (left > kHugeMax + kHugeMin) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            size_t n = kHugeMin + s % (kHugeMax - kHugeMin + 1);
            v.push_back(static_cast<uint16_t>(n));
            left -= n;
        }
        if (left > kHugeMax) { // kHugeMax < left <= kHugeMax + kHugeMin: two halves
            v.push_back(static_cast<uint16_t>(left / 2));
            left -= left / 2;
        }
        v.push_back(static_cast<uint16_t>(left));
        return v;
    }();
    return sizes;
}

// The huge-batch workload: one iteration stores every value of huge_sizes()
// through `put(n)` (which returns the value's n bytes, or nullptr), fills it
// with its index's low byte, keeps it in an array, then `drop(live, count)`
// ends the batch.  open() and close() bracket an instance, as in batch():
//   warm: one instance for the run, through one untimed batch first;
//   cold: before each batch (untimed) the instance is closed and the
//         allocator gives its free memory back to the OS (return_memory()).
// Counters: the minor page faults of the timed part per batch (getrusage),
// and the batch's size.  One item is one value.
template <class Open, class Put, class Drop, class Close>
void huge_batch(benchmark::State &st, bool cold, Open open, Put put, Drop drop, Close close)
{
    const std::vector<uint16_t> &sizes = huge_sizes();
    const size_t count = sizes.size();
    std::vector<void *> live(count);
    size_t fails = 0;
    auto fill = [&] {
        for (size_t i = 0; i < count; i++) {
            void *p = put(opaque(sizes[i]));
            if (p)
                std::memset(p, static_cast<int>(i & 0xff), sizes[i]);
            else
                fails++;
            live[i] = p;
        }
        touch(live.data());
        drop(live.data(), count);
    };
    open();
    if (!cold)
        fill();
    long faults = 0;
    for (auto _ : st) {
        if (cold) {
            st.PauseTiming();
            close();
            return_memory();
            st.ResumeTiming();
        }
        long before = minor_faults();
        if (cold)
            open();
        fill();
        faults += minor_faults() - before;
    }
    close();
    st.counters["faults/batch"] = per_iteration(static_cast<double>(faults));
    st.counters["values"] = static_cast<double>(count);
    if (fails)
        st.SkipWithError("allocation failed");
}

// Iterations of a huge row per repetition: a batch takes tenths of a second.
inline int64_t huge_iterations() { return quick_mode() ? 1 : 2; }

inline std::string huge_name(bool cold, const std::string &impl)
{
    return std::string("huge/256M/") + (cold ? "cold/" : "warm/") + impl;
}

} // namespace bench

#endif
