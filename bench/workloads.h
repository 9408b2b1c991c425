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
template <class Impl, class Put>
void batch(benchmark::State &st, Impl &impl, bool cold, Put put)
{
    using V = decltype(put(size_t(0)));
    std::vector<V> live(kBatch);
    size_t fails = 0;
    auto fill = [&] {
        for (size_t i = 0; i < kBatch; i++) {
            live[i] = put(i);
            fails += failed(live[i]);
        }
        touch(live.data());
    };
    impl.open();
    if (!cold) {
        fill();
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
        fill();
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

inline std::string sz(size_t n) { return std::to_string(n); }

} // namespace bench

#endif
