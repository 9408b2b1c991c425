// SPDX-License-Identifier: MIT
/*
 * libarena's rows of the request and scaling workloads (threads.h): the arena
 * cache (one arena per request), the shared arena (all threads storing into
 * one arena), and, for reference, the same shared arena code with one arena
 * per thread (nothing shared), the limit proxy (a bump pointer per thread,
 * batches ended together as the shared arena's are) and one shared atomic
 * bump pointer (what the shared arena does not do).  Part of bench_arena.
 */
#include <arena/guard.h>
#include <arena/thread.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <vector>

#include "threads.h"

namespace bench {

namespace {

using benchmark::State;

const char *const kCacheLabel = "libarena arena_cache (acquire, recycle)";

const char *const kGuardLabel =
    "libarena arena_cache, guard sampled by time (arena_guard_sample_interval, 1 s)";

void zeroed_cache(State &st)
{
    arena_cache *c = arena_cache_create(nullptr);
    scoped(st, opaque(512), [c](size_t n) {
        arena *a = arena_cache_acquire(c);
        return a && zeroed_request(
                        n, [a](size_t k) { return arena_calloc(a, 1, k); },
                        [c, a] { arena_cache_recycle(c, a); });
    });
    arena_cache_destroy(c);
}

void small_cache(State &st)
{
    arena_cache *c = arena_cache_create(nullptr);
    size_t base = 0, fails = 0;
    for (auto _ : st) {
        arena *a = arena_cache_acquire(c);
        fails += !a || !small_request(
                           base++, [a](size_t n) { return arena_alloc(a, n); },
                           [c, a](void **) { arena_cache_recycle(c, a); });
    }
    arena_cache_destroy(c);
    if (fails)
        st.SkipWithError("allocation failed");
}

// Guard sampling by time for one row; the sampling before it afterwards.
struct Sampled {
    unsigned long every = arena_guard_sampling();
    uint64_t interval = arena_guard_sampling_interval();
    explicit Sampled(uint64_t ns) { arena_guard_sample_interval(ns); }
    ~Sampled()
    {
        if (interval)
            arena_guard_sample_interval(interval);
        else
            arena_guard_sample(every);
    }
    Sampled(const Sampled &) = delete;
};

void register_requests()
{
    add("request/512/zeroed/arena_cache", kCacheLabel, kScopes,
        [](State &st) { zeroed_cache(st); });
    add("request/100/small/arena_cache", kCacheLabel, 1, [](State &st) { small_cache(st); });
    // The same requests sampled by time at the interval the guide recommends:
    // what leaving the guard on in production costs.
    add("request/512/zeroed/arena_cache_guard_interval", kGuardLabel, kScopes, [](State &st) {
        Sampled on(ARENA_GUARD_INTERVAL);
        zeroed_cache(st);
    });
    add("request/100/small/arena_cache_guard_interval", kGuardLabel, 1, [](State &st) {
        Sampled on(ARENA_GUARD_INTERVAL);
        small_cache(st);
    });
}

// One thread's batches, each in an arena of the cache.
bool cache_batches(arena_cache *c)
{
    bool ok = true;
    for (size_t b = 0; b < kThreadBatches; b++) {
        arena *a = arena_cache_acquire(c);
        if (!a)
            return false;
        for (size_t i = 0; i < kThreadBatch; i++) {
            void *p = arena_copy(a, thread_source(), kThreadValue, 0);
            ok = ok && p;
            touch(p);
        }
        arena_cache_recycle(c, a);
    }
    return ok;
}

// Threads that store into one shared arena and end each batch together: the
// arena is reset only when no thread allocates (the last thread to reach the
// end of the batch resets it while the others wait), as its contract asks.
struct SharedBatches {
    arena_shared *s = arena_shared_create(0, 0, nullptr);
    BatchEnd batch_end;
    explicit SharedBatches(int threads) : batch_end(threads) {}
    ~SharedBatches() { arena_shared_destroy(s); }
    SharedBatches(const SharedBatches &) = delete;
    SharedBatches &operator=(const SharedBatches &) = delete;
    void end_batch()
    {
        batch_end.wait([this] { arena_shared_reset(s, SIZE_MAX); });
    }
};

// One thread's batches into `s`, each ended by `end_batch()`.
template <class EndBatch> bool shared_arena_batches(arena_shared *s, EndBatch end_batch)
{
    bool ok = s != nullptr;
    for (size_t b = 0; b < kThreadBatches; b++) {
        for (size_t i = 0; ok && i < kThreadBatch; i++) {
            void *p = arena_shared_alloc(s, kThreadValue);
            ok = p != nullptr;
            if (p)
                touch(std::memcpy(p, thread_source(), kThreadValue));
        }
        end_batch();
    }
    return ok;
}

bool shared_batches(SharedBatches &sh)
{
    return shared_arena_batches(sh.s, [&sh] { sh.end_batch(); });
}

// The reference for what sharing costs: the same code and the same batch end,
// but each thread stores into a shared arena of its own, so that nothing is
// shared.  What this row gains from 1 to 2 threads is what running two
// threads and ending their batches together costs on the machine; what the
// shared arena gains beyond it is the cost of sharing one arena.
struct OwnShared {
    std::vector<arena_shared *> s;
    BatchEnd batch_end;
    explicit OwnShared(int threads) : s(size_t(threads)), batch_end(threads)
    {
        for (auto &one : s)
            one = arena_shared_create(0, 0, nullptr);
    }
    ~OwnShared()
    {
        for (auto *one : s)
            arena_shared_destroy(one);
    }
    OwnShared(const OwnShared &) = delete;
    OwnShared &operator=(const OwnShared &) = delete;
};

bool own_shared_batches(OwnShared &own, int index)
{
    return shared_arena_batches(own.s[size_t(index)], [&own] {
        own.batch_end.wait([&own] {
            for (auto *one : own.s)
                arena_shared_reset(one, SIZE_MAX);
        });
    });
}

// The reference: every value takes one atomic add on a pointer all threads
// share (a line that moves between the cores at every value: it collapses
// from 2 threads on).
struct AtomicBump {
    std::unique_ptr<char[]> buf;
    std::atomic<size_t> top{0};
    BatchEnd batch_end;
    explicit AtomicBump(int threads)
        : buf(new char[size_t(threads) * kThreadBatch * kThreadValue]), batch_end(threads)
    {
    }
};

bool atomic_batches(AtomicBump &ab)
{
    for (size_t b = 0; b < kThreadBatches; b++) {
        for (size_t i = 0; i < kThreadBatch; i++) {
            size_t at = ab.top.fetch_add(kThreadValue, std::memory_order_relaxed);
            touch(std::memcpy(ab.buf.get() + at, thread_source(), kThreadValue));
        }
        ab.batch_end.wait([&ab] { ab.top.store(0, std::memory_order_relaxed); });
    }
    return true;
}

// The limit proxy: each thread bumps through a buffer of its own (the least
// work a batch can be stored with), and the batches end together as the
// shared arena's do.  What it costs at 2 threads beyond 1 is the cost of
// ending each batch together, which no allocator avoids.
struct ProxyThreads {
    std::unique_ptr<char[]> buf;
    BatchEnd batch_end;
    explicit ProxyThreads(int threads)
        : buf(new char[size_t(threads) * kThreadBatch * kThreadValue]), batch_end(threads)
    {
    }
};

bool proxy_batches(ProxyThreads &pt, int index)
{
    char *mine = pt.buf.get() + size_t(index) * kThreadBatch * kThreadValue;
    for (size_t b = 0; b < kThreadBatches; b++) {
        Bump bump{mine, mine + kThreadBatch * kThreadValue};
        for (size_t i = 0; i < kThreadBatch; i++)
            touch(std::memcpy(bump.take(kThreadValue), thread_source(), kThreadValue));
        pt.batch_end.wait([] {});
    }
    return true;
}

void register_scaling()
{
    for (int t : kThreadCounts) {
        std::string g = "threads/" + std::to_string(t) + "/";
        // Each row owns its cache, shared arena or pointer for its whole run.
        auto cache = std::shared_ptr<arena_cache>(arena_cache_create(nullptr), arena_cache_destroy);
        scaling_row(add, g + "arena_cache", kCacheLabel, t,
                    [cache](int) { return cache_batches(cache.get()); });
        auto shared = std::make_shared<SharedBatches>(t);
        scaling_row(add, g + "arena_shared", "libarena arena_shared (one arena, all threads)", t,
                    [shared](int) { return shared_batches(*shared); });
        auto own = std::make_shared<OwnShared>(t);
        scaling_row(add, g + "arena_shared_own",
                    "libarena arena_shared, one per thread (reference: nothing shared)", t,
                    [own](int i) { return own_shared_batches(*own, i); });
        auto proxy = std::make_shared<ProxyThreads>(t);
        scaling_row(add, g + "proxy", "limit proxy (a bump pointer per thread, same batch end)",
                    t, [proxy](int i) { return proxy_batches(*proxy, i); });
        auto bump = std::make_shared<AtomicBump>(t);
        scaling_row(add, g + "atomic_bump", "one shared atomic bump pointer (reference)", t,
                    [bump](int) { return atomic_batches(*bump); });
    }
}

} // namespace

void register_threads_arena()
{
    register_requests();
    register_scaling();
}

} // namespace bench
