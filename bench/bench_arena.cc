// SPDX-License-Identifier: MIT
/*
 * bench_arena: libarena, the limit proxies, and the peers that run on glibc
 * malloc (obstack, talloc, APR pools, GLib, std::pmr).  It links no malloc
 * replacement, and checks at start-up that malloc is glibc's.  The malloc
 * rows themselves come from malloc_family.cc, one process per allocator.
 */
#include <arena/arena.h>
#include <arena/thread.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "clients.h"
#include "harness.h"
#include "ingest.h"
#include "workloads.h"
#include "threads.h"

#if __has_include(<arena/pool.h>)
#  include <arena/pool.h>
#  define HAVE_ARENA_POOL 1
#endif
#if HAVE_BOOST_POOL
#  include <boost/pool/pool.hpp>
#endif
#if HAVE_OBSTACK
#  define obstack_chunk_alloc std::malloc
#  define obstack_chunk_free std::free
#  include <obstack.h>
#endif
#if HAVE_TALLOC
#  include <talloc.h>
#endif
#if HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#  include <apr_strings.h>
#endif
#if HAVE_GLIB
#  include <glib.h>
#endif
#if HAVE_PMR
#  include <memory_resource>
#  include <arena/arena.hpp> // needs <memory_resource>
#endif

// A ref is a failure when it is empty (found by the batch loop through ADL).
inline bool failed(arena_ref r) { return arena_ref_empty(r); }

namespace bench {
void return_memory() { malloc_trim(0); }
#if HAVE_PMR
void register_cxx(); // bench_cxx.cc: the C++ layer
#endif
void register_churn_arena(); // bench_churn.cc: values freed one by one
void register_amalgamation(const char *impl, const char *label); // bench_amalgamation.cc
} // namespace bench

using namespace bench;
using benchmark::State;

namespace {

const char *const kNotInstalled = "not installed";
constexpr size_t kCopySizes[] = {16, 256, 4096, 65536};

// ---- The instances a batch runs on --------------------------------------------------

// The limit proxy: a bump pointer over one buffer sized for the batch.
struct ProxyBatch {
    size_t cap;
    char *buf = nullptr;
    Bump b{};
    explicit ProxyBatch(size_t value_size) : cap(value_size * kBatch) {}
    void open()
    {
        buf = static_cast<char *>(std::malloc(cap));
        if (!buf)
            std::abort();
        b = {buf, buf + cap};
    }
    template <class V> void drop(V *) { b.cur = buf; }
    void close()
    {
        std::free(buf);
        buf = nullptr;
    }
};

// The limit ArenaBatch sets (arena_set_limit()), SIZE_MAX for none: the
// row of arena_alloc under a limit runs the same code as the one without.
size_t arena_batch_limit = SIZE_MAX;

struct ArenaBatch {
    arena a;
    void open()
    {
        arena_init(&a, 0);
        if (arena_batch_limit != SIZE_MAX)
            arena_set_limit(&a, arena_batch_limit);
    }
    template <class V> void drop(V *) { arena_reset(&a); }
    void close() { arena_release(&a); }
};


#if HAVE_OBSTACK
struct ObstackBatch {
    struct obstack ob;
    void open() { obstack_begin(&ob, 65536); }
    template <class V> void drop(V *live) { obstack_free(&ob, live[0]); } // the batch's first
    void close() { obstack_free(&ob, nullptr); }
};
#endif

#if HAVE_TALLOC
struct TallocBatch {
    void *ctx = nullptr;
    void open() { ctx = talloc_new(nullptr); }
    template <class V> void drop(V *) { talloc_free_children(ctx); }
    void close()
    {
        talloc_free(ctx);
        ctx = nullptr;
    }
};
#endif

#if HAVE_APR
// A pool with its own allocator, so that destroying it gives its blocks back
// to malloc (the cold rows); clearing it keeps them (the warm rows).
struct AprBatch {
    apr_pool_t *pool = nullptr;
    void open()
    {
        apr_allocator_t *al;
        if (apr_allocator_create(&al) != APR_SUCCESS ||
            apr_pool_create_ex(&pool, nullptr, nullptr, al) != APR_SUCCESS)
            std::abort();
        apr_allocator_owner_set(al, pool);
    }
    template <class V> void drop(V *) { apr_pool_clear(pool); }
    void close()
    {
        if (pool)
            apr_pool_destroy(pool);
        pool = nullptr;
    }
};
#endif

#if HAVE_GLIB
struct GlibBatch {
    GStringChunk *c = nullptr;
    void open() { c = g_string_chunk_new(65536); }
    template <class V> void drop(V *) { g_string_chunk_clear(c); }
    void close()
    {
        if (c)
            g_string_chunk_free(c);
        c = nullptr;
    }
};
#endif

#if HAVE_PMR
struct PmrBatch {
    std::optional<std::pmr::monotonic_buffer_resource> mr;
    void open() { mr.emplace(65536); }
    template <class V> void drop(V *) { mr->release(); }
    void close() { mr.reset(); }
};
#endif

// ---- 1. Copy-in ----------------------------------------------------------------------

// Registers copy/<size>/<warm|cold>/<impl> for one implementation.  `Make`
// builds the instance, `Copy(impl, src, n)` stores one value.
template <class Impl, class Copy>
void copy_row(const char *impl_name, const char *label, Copy copy)
{
    for (size_t size : kCopySizes)
        for (bool cold : {false, true}) {
            std::string name = "copy/" + sz(size) + (cold ? "/cold/" : "/warm/") + impl_name;
            add(name, label, kBatch, [size, cold, copy](State &st) {
                size_t n = opaque(size);
                Source src(n);
                Impl impl(n);
                batch(st, impl, cold, [&](size_t i) { return copy(impl, src.at(i), n); });
            });
        }
}

[[maybe_unused]] void copy_absent(const char *impl_name, const char *label)
{
    for (size_t size : kCopySizes)
        for (const char *temp : {"/warm/", "/cold/"})
            absent("copy/" + sz(size) + temp + impl_name, label, kNotInstalled);
}

// Adapts an instance type without a size argument.
template <class T> struct Sized : T {
    explicit Sized(size_t) {}
};

void register_copy()
{
    copy_row<ProxyBatch>("proxy", "limit proxy", [](ProxyBatch &p, const char *s, size_t n) {
        return std::memcpy(p.b.take(n), s, n);
    });
    copy_row<Sized<ArenaBatch>>("arena_copy", "libarena arena_copy",
        [](ArenaBatch &p, const char *s, size_t n) {
            return arena_copy(&p.a, s, n, 0);
        });
    copy_row<Sized<ArenaBatch>>("arena_strndup", "libarena arena_strndup",
        [](ArenaBatch &p, const char *s, size_t n) {
            return arena_strndup(&p.a, s, n);
        });
    copy_row<Sized<ArenaBatch>>("arena_ref_copy", "libarena arena_ref_copy",
        [](ArenaBatch &p, const char *s, size_t n) {
            return arena_ref_copy(&p.a, s, n, 0);
        });
#if HAVE_OBSTACK
    copy_row<Sized<ObstackBatch>>("obstack", "glibc obstack",
        [](ObstackBatch &p, const char *s, size_t n) {
            return obstack_copy(&p.ob, s, n);
        });
#else
    copy_absent("obstack", "glibc obstack");
#endif
#if HAVE_TALLOC
    copy_row<Sized<TallocBatch>>("talloc", "talloc", [](TallocBatch &p, const char *s, size_t n) {
        return talloc_memdup(p.ctx, s, n);
    });
#else
    copy_absent("talloc", "talloc");
#endif
#if HAVE_APR
    copy_row<Sized<AprBatch>>("apr", "APR pool", [](AprBatch &p, const char *s, size_t n) {
        return apr_pmemdup(p.pool, s, n);
    });
#else
    copy_absent("apr", "APR pool");
#endif
#if HAVE_GLIB
    copy_row<Sized<GlibBatch>>("gstringchunk", "GLib GStringChunk",
        [](GlibBatch &p, const char *s, size_t n) {
            return g_string_chunk_insert_len(p.c, s, static_cast<gssize>(n));
        });
#else
    copy_absent("gstringchunk", "GLib GStringChunk");
#endif
#if HAVE_PMR
    copy_row<Sized<PmrBatch>>("pmr_monotonic", "std::pmr::monotonic_buffer_resource",
        [](PmrBatch &p, const char *s, size_t n) {
            return std::memcpy(p.mr->allocate(n, alignof(std::max_align_t)), s, n);
        });
#else
    copy_absent("pmr_monotonic", "std::pmr::monotonic_buffer_resource");
#endif
}

// ---- 2. Uninitialised allocation -----------------------------------------------------

// 8 of them make 256 bytes: an element that holds a pointer.
struct Item {
    const char *p;
    uint64_t a, b, c;
};
static_assert(sizeof(Item) == 32, "Item is 32 bytes");

// The body of an allocation row, one copy per implementation and call: two
// rows that share it run the same instructions at the same address (two
// copies of one loop differed by 20% for where the linker placed them).
template <class Impl, class Alloc>
__attribute__((noinline)) void alloc_body(State &st, size_t size, Alloc alloc)
{
    size_t n = opaque(size);
    Impl impl(n);
    batch(st, impl, false, [&](size_t) { return alloc(impl, n); });
}

template <class Impl, class Alloc>
void alloc_row(size_t size, const char *impl_name, const char *label, Alloc alloc)
{
    add("alloc/" + sz(size) + "/" + impl_name, label, kBatch,
        [size, alloc](State &st) { alloc_body<Impl>(st, size, alloc); });
}

// Not a limit: the proxy's bump pointer kept in memory, as any allocator
// whose state is a struct reached through a pointer keeps it (the compiler
// cannot hold it in a register across a call that may change it).  Shows
// what of the gap to the proxy is the memory round trip itself.
struct EscapedBatch : ProxyBatch {
    explicit EscapedBatch(size_t n) : ProxyBatch(n) {}
};

__attribute__((noinline)) void grow_escaped(Bump *b) { benchmark::DoNotOptimize(b); }

void cleanup_noop(void *ctx) { benchmark::DoNotOptimize(ctx); }

// The CPU time of the calling thread, in seconds.
double thread_seconds()
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void register_alloc()
{
    const char *const kEscaped = "(bump pointer kept in memory, not a peer)";
    alloc_row<EscapedBatch>(16, "bump_in_memory", kEscaped, [](EscapedBatch &p, size_t n) {
        Bump *b = &p.b;
        if (static_cast<size_t>(b->end - b->cur) < n)
            grow_escaped(b); // never taken; makes *b escape, as a slow path does
        char *q = b->cur;
        b->cur = q + n;
        return static_cast<void *>(q);
    });
    auto plain = [](ArenaBatch &p, size_t n) { return arena_alloc(&p.a, n); };
    for (size_t size : {16, 256}) {
        alloc_row<ProxyBatch>(size, "proxy", "limit proxy", [](ProxyBatch &p, size_t n) {
            return static_cast<void *>(p.b.take(n));
        });
        alloc_row<Sized<ArenaBatch>>(size, size == 16 ? "arena_alloc" : "arena_bytes",
                                     size == 16 ? "libarena arena_alloc"
                                                : "libarena arena_alloc, bytes",
                                     plain);
    }
    // arena_alloc under a limit (1 GiB) that the batch never reaches: the
    // same code as the row above, the inline path not looking at the limit.
    add("alloc/16/arena_alloc_limited", "libarena arena_alloc, a limit set", kBatch,
        [plain](State &st) {
            arena_batch_limit = size_t(1) << 30;
            alloc_body<Sized<ArenaBatch>>(st, 16, plain);
            arena_batch_limit = SIZE_MAX;
        });
    // A cleanup pushed per item and run by the batch's reset, against
    // arena_alloc() of its record's size (48 bytes on 64-bit targets).
    alloc_row<Sized<ArenaBatch>>(48, "arena_alloc", "libarena arena_alloc",
                                 [](ArenaBatch &p, size_t n) { return arena_alloc(&p.a, n); });
    alloc_row<Sized<ArenaBatch>>(48, "arena_cleanup", "libarena cleanup register+run",
                                 [](ArenaBatch &p, size_t) {
                                     return static_cast<void *>(
                                         arena_cleanup_push(&p.a, cleanup_noop, nullptr));
                                 });
    // The two costs apart, each per cleanup: the push alone (the reset that
    // runs them untimed), and the run alone (the reset, timed, over the
    // batch's pushes, untimed).  Manual time, on the thread's CPU clock as
    // the other rows' rates are: a pause of the timer per batch would cost
    // more than the work it leaves out.
    for (bool run : {false, true}) {
        add(std::string("alloc/48/") + (run ? "arena_cleanup_run" : "arena_cleanup_push"),
            run ? "libarena cleanup run, at the reset" : "libarena cleanup register", kBatch,
            [run](State &st) {
                arena a;
                std::vector<arena_cleanup *> live(kBatch);
                size_t fails = 0;
                arena_init(&a, 0);
                for (int warm = 0; warm < 2; warm++) {
                    for (size_t i = 0; i < kBatch; i++)
                        live[i] = arena_cleanup_push(&a, cleanup_noop, nullptr);
                    arena_reset(&a);
                }
                for (auto _ : st) {
                    double t0 = thread_seconds();
                    for (size_t i = 0; i < kBatch; i++) {
                        live[i] = arena_cleanup_push(&a, cleanup_noop, nullptr);
                        fails += live[i] == nullptr;
                    }
                    touch(live.data());
                    double t1 = thread_seconds();
                    arena_reset(&a);
                    double t2 = thread_seconds();
                    st.SetIterationTime(run ? t2 - t1 : t1 - t0);
                }
                arena_release(&a);
                if (fails)
                    st.SkipWithError("allocation failed");
            })
            ->UseManualTime();
    }
    alloc_row<Sized<ArenaBatch>>(
        256, "arena_int64x32", "libarena ARENA_ALLOC_ARRAY int64_t[32]",
        [](ArenaBatch &p, size_t n) {
            return ARENA_ALLOC_ARRAY(&p.a, int64_t, n / sizeof(int64_t));
        });
    alloc_row<Sized<ArenaBatch>>(
        256, "arena_structx8", "libarena ARENA_ALLOC_ARRAY struct{ptr,..}[8]",
        [](ArenaBatch &p, size_t n) { return ARENA_ALLOC_ARRAY(&p.a, Item, n / sizeof(Item)); });
}

// ---- 3. The pool ---------------------------------------------------------------------

// The limit proxy: a bare intrusive LIFO free list over one slab, no checks.
class FreeList {
public:
    FreeList(size_t size, size_t cap)
        : slab_(static_cast<char *>(std::aligned_alloc(64, (size * cap + 63) & ~size_t(63))))
    {
        if (!slab_)
            std::abort();
        for (size_t i = cap; i-- > 0;)
            give(slab_ + i * size);
    }
    ~FreeList() { std::free(slab_); }
    FreeList(const FreeList &) = delete;
    FreeList &operator=(const FreeList &) = delete;
    void *take()
    {
        void *p = head_;
        if (p)
            head_ = *static_cast<void **>(p);
        return p;
    }
    void give(void *p)
    {
        *static_cast<void **>(p) = head_;
        head_ = p;
    }

private:
    char *slab_;
    void *head_ = nullptr;
};

template <class Run> void pool_rows(const std::string &impl, const char *label, Run run)
{
    for (bool rolling : {false, true})
        for (size_t size : kPoolSizes)
            for (size_t cap : kPoolCaps)
                add(pool_name(rolling, size, cap, impl), label, 2.0 * cap,
                    [=](State &st) { run(st, rolling, size, cap); });
}

[[maybe_unused]] void pool_absent(const std::string &impl, const char *label, const char *why)
{
    for (bool rolling : {false, true})
        for (size_t size : kPoolSizes)
            for (size_t cap : kPoolCaps)
                absent(pool_name(rolling, size, cap, impl), label, why);
}

// Runs the batch or the rolling workload with `take` and `give`.
template <class Take, class Give>
void pool_run(State &st, bool rolling, size_t cap, Take take, Give give)
{
    if (rolling)
        pool_rolling(st, cap, take, give);
    else
        pool_batch(st, cap, take, give);
}

// The typed rows' objects: N bytes at the alignment the C pool's rows ask.
template <size_t N> struct alignas(std::max_align_t) PoolObj {
    unsigned char b[N];
};
static_assert(kPoolSizes[0] == 16 && kPoolSizes[1] == 256, "a PoolObj for each pool size");

#if HAVE_PMR
template <class T> void typed_pool_run(State &st, bool rolling, size_t cap)
{
    libarena::pool<T> p(cap);
    pool_run(
        st, rolling, cap, [&] { return static_cast<void *>(p.allocate()); },
        [&](void *q) { p.deallocate(static_cast<T *>(q)); });
}
#endif

template <class T> void new_delete_run(State &st, bool rolling, size_t cap)
{
    pool_run(
        st, rolling, cap, [] { return static_cast<void *>(new T); },
        [](void *q) { delete static_cast<T *>(q); });
}

void register_pool()
{
    const char *const kFreeList = "limit proxy (bare free list)";
    const char *const kArenaPool = "libarena arena_pool";
    const char *const kPmrPool = "std::pmr::unsynchronized_pool_resource";
    pool_rows("proxy", kFreeList, [](State &st, bool rolling, size_t size, size_t cap) {
        FreeList fl(opaque(size), cap);
        pool_run(st, rolling, cap, [&] { return fl.take(); }, [&](void *p) { fl.give(p); });
    });
#if HAVE_ARENA_POOL
    pool_rows("arena_pool", kArenaPool, [](State &st, bool rolling, size_t size, size_t cap) {
        arena_pool p;
        if (!arena_pool_init(&p, opaque(size), alignof(std::max_align_t), cap, nullptr))
            return st.SkipWithError("arena_pool_init failed");
        pool_run(
            st, rolling, cap, [&] { return arena_pool_alloc(&p); },
            [&](void *q) { arena_pool_free(&p, q); });
        arena_pool_destroy(&p);
    });
#else
    pool_absent("arena_pool", kArenaPool, "not built (no arena/pool.h)");
#endif
#if HAVE_PMR
    // The C++ layer's pool (arena/arena.hpp) must cost what the C calls
    // above cost: the same harness, the object type chosen by size.
    pool_rows("arena_pool_cxx", "libarena::pool<T> (C++)",
              [](State &st, bool rolling, size_t size, size_t cap) {
                  if (size == 16)
                      typed_pool_run<PoolObj<16>>(st, rolling, cap);
                  else
                      typed_pool_run<PoolObj<256>>(st, rolling, cap);
              });
#endif
    pool_rows("new_delete", "new/delete (glibc)",
              [](State &st, bool rolling, size_t size, size_t cap) {
                  if (size == 16)
                      new_delete_run<PoolObj<16>>(st, rolling, cap);
                  else
                      new_delete_run<PoolObj<256>>(st, rolling, cap);
              });
#if HAVE_BOOST_POOL
    pool_rows("boost_pool", "Boost.Pool", [](State &st, bool rolling, size_t size, size_t cap) {
        boost::pool<> p(opaque(size), cap);
        pool_run(st, rolling, cap, [&] { return p.malloc(); }, [&](void *q) { p.free(q); });
    });
#else
    pool_absent("boost_pool", "Boost.Pool", kNotInstalled);
#endif
#if HAVE_PMR
    pool_rows("pmr_pool", kPmrPool, [](State &st, bool rolling, size_t size, size_t cap) {
        std::pmr::unsynchronized_pool_resource r;
        size_t n = opaque(size);
        pool_run(
            st, rolling, cap, [&] { return r.allocate(n, alignof(std::max_align_t)); },
            [&](void *q) { r.deallocate(q, n, alignof(std::max_align_t)); });
    });
#else
    pool_absent("pmr_pool", kPmrPool, kNotInstalled);
#endif
}

// ---- 4. Scoped blocks ---------------------------------------------------------------

constexpr size_t kScopedSizes[] = {512, 1024, 4096};
constexpr size_t kStackBuf = 8192;

template <class Scope>
void scoped_row(const std::string &name, const char *label, size_t size, Scope scope)
{
    add(name, label, kScopes, [size, scope](State &st) { scoped(st, opaque(size), scope); });
}

// The heap arena reused across scopes: `body(a, n)` is one scope.
template <class Body>
void scoped_heap_row(const std::string &name, const char *label, size_t size, Body body)
{
    add(name, label, kScopes, [size, body](State &st) {
        arena a;
        arena_init(&a, 0);
        scoped(st, opaque(size), [&](size_t n) { return body(&a, n); });
        arena_release(&a);
    });
}

void register_scoped()
{
    const char *const kStackLabel = "libarena, stack-buffer arena per scope";
    const char *const kHeapLabel = "libarena, heap arena reset per scope";
    const char *const kRewindLabel = "libarena, heap arena save/rewind";
    const char *const kScratchLabel = "libarena, scratch scope (arena_scratch_begin)";
    for (size_t size : kScopedSizes) {
        std::string z = "scoped/" + sz(size) + "/zeroed/", u = "scoped/" + sz(size) + "/uninit/";
        scoped_row(z + "proxy", "limit proxy", size, [](size_t n) {
            alignas(64) char buf[kStackBuf];
            Bump b{buf, buf + sizeof buf};
            return use_zeroed(std::memset(b.take(n), 0, n), n);
        });
        scoped_row(z + "arena_stack", kStackLabel, size, [](size_t n) {
            alignas(64) char buf[kStackBuf];
            arena a;
            arena_init_buffer(&a, buf, sizeof buf, nullptr);
            bool ok = use_zeroed(arena_calloc(&a, 1, n), n);
            arena_release(&a);
            return ok;
        });
        scoped_heap_row(z + "arena_heap", kHeapLabel, size, [](arena *a, size_t n) {
            bool ok = use_zeroed(arena_calloc(a, 1, n), n);
            arena_reset(a);
            return ok;
        });
        scoped_heap_row(z + "arena_rewind", kRewindLabel, size, [](arena *a, size_t n) {
            arena_mark m = arena_save(a);
            bool ok = use_zeroed(arena_calloc(a, 1, n), n);
            arena_rewind(a, m);
            return ok;
        });
        scoped_row(z + "arena_scratch", kScratchLabel, size, [](size_t n) {
            arena_scope s = arena_scratch_begin(nullptr, 0);
            bool ok = s.arena && use_zeroed(arena_calloc(s.arena, 1, n), n);
            arena_scope_end(&s);
            return ok;
        });
        scoped_row(u + "proxy", "limit proxy", size, [](size_t n) {
            alignas(64) char buf[kStackBuf];
            Bump b{buf, buf + sizeof buf};
            return use_block(b.take(n), n);
        });
        scoped_row(u + "arena_stack", kStackLabel, size, [](size_t n) {
            alignas(64) char buf[kStackBuf];
            arena a;
            arena_init_buffer(&a, buf, sizeof buf, nullptr);
            bool ok = use_block(arena_alloc(&a, n), n);
            arena_release(&a);
            return ok;
        });
        scoped_heap_row(u + "arena_heap", kHeapLabel, size, [](arena *a, size_t n) {
            bool ok = use_block(arena_alloc(a, n), n);
            arena_reset(a);
            return ok;
        });
    }
}

// ---- 5. Tree -------------------------------------------------------------------------

const std::string kTree = "tree/depth" + sz(kTreeDepth) + "/";

void register_tree()
{
    add(kTree + "proxy", "limit proxy", 1, [](State &st) {
        // malloc's and the arena's layout: 24-byte nodes at a 32-byte stride.
        const size_t stride = opaque(32);
        std::vector<char> buf(kTreeNodes * 32);
        Bump b{};
        tree(
            st, [&] { b = {buf.data(), buf.data() + buf.size()}; },
            [&] { return reinterpret_cast<Node *>(b.take(stride)); }, [](Node *) {});
    });
    add(kTree + "arena", "libarena", 1, [](State &st) {
        arena a;
        arena_init(&a, 0);
        tree(
            st, [] {}, [&] { return static_cast<Node *>(arena_alloc(&a, sizeof(Node))); },
            [&](Node *) { arena_reset(&a); });
        arena_release(&a);
    });
#if HAVE_APR
    add(kTree + "apr", "APR pool", 1, [](State &st) {
        AprBatch p;
        p.open();
        tree(
            st, [] {}, [&] { return static_cast<Node *>(apr_palloc(p.pool, sizeof(Node))); },
            [&](Node *) { apr_pool_clear(p.pool); });
        p.close();
    });
#else
    absent(kTree + "apr", "APR pool", kNotInstalled);
#endif
#if HAVE_TALLOC
    add(kTree + "talloc", "talloc", 1, [](State &st) {
        void *ctx = talloc_new(nullptr);
        tree(
            st, [] {}, [&] { return talloc(ctx, Node); },
            [&](Node *) { talloc_free_children(ctx); });
        talloc_free(ctx);
    });
#else
    absent(kTree + "talloc", "talloc", kNotInstalled);
#endif
#if HAVE_OBSTACK
    add(kTree + "obstack", "glibc obstack", 1, [](State &st) {
        struct obstack ob;
        obstack_begin(&ob, 65536);
        tree(
            st, [] {}, [&] { return static_cast<Node *>(obstack_alloc(&ob, sizeof(Node))); },
            [&](Node *root) { obstack_free(&ob, root); }); // the root is allocated first
        obstack_free(&ob, nullptr);
    });
#else
    absent(kTree + "obstack", "glibc obstack", kNotInstalled);
#endif
#if HAVE_PMR
    add(kTree + "pmr_monotonic", "std::pmr::monotonic_buffer_resource", 1, [](State &st) {
        std::pmr::monotonic_buffer_resource mr(65536);
        tree(
            st, [] {},
            [&] { return static_cast<Node *>(mr.allocate(sizeof(Node), alignof(Node))); },
            [&](Node *) { mr.release(); });
    });
#else
    absent(kTree + "pmr_monotonic", "std::pmr::monotonic_buffer_resource", kNotInstalled);
#endif
}

// ---- 6. Refs at scale -----------------------------------------------------------------

const std::string kRefs = "refs/" + sz(kRefCount) + "x" + sz(kRefValue) + "B/";

// Reads every value: `get(i, &len)` resolves descriptor i.
template <class Get> void walk(State &st, size_t n, Get get)
{
    uint64_t sum = 0;
    for (auto _ : st) {
        for (size_t i = 0; i < n; i++) {
            size_t len;
            const unsigned char *p = get(i, &len);
            for (size_t j = 0; j + 8 <= len; j += 8) {
                uint64_t w;
                std::memcpy(&w, p + j, 8);
                sum += w;
            }
        }
        benchmark::DoNotOptimize(sum);
    }
}

// Memory per value: the descriptor, and the descriptor plus the storage.
void memory_counters(State &st, size_t desc, size_t storage, size_t n)
{
    st.counters["descriptor"] = bytes_counter(static_cast<double>(desc));
    st.counters["bytes/value"] =
        bytes_counter(static_cast<double>(desc) + static_cast<double>(storage) / n);
}

void register_refs()
{
    add(kRefs + "arena_ref", "libarena arena_ref[]", kRefCount, [](State &st) {
        size_t n = opaque(kRefCount);
        Source src(kRefValue);
        arena a;
        arena_init(&a, 0);
        std::vector<arena_ref> refs(n);
        for (size_t i = 0; i < n; i++)
            if (arena_ref_empty(refs[i] = arena_ref_copy(&a, src.at(i), kRefValue, 0)))
                return st.SkipWithError("allocation failed");
        walk(st, n, [&](size_t i, size_t *len) {
            *len = arena_ref_len(refs[i]);
            return static_cast<const unsigned char *>(arena_ref_ptr(&a, refs[i]));
        });
        memory_counters(st, sizeof(arena_ref), arena_retained(&a), n);
        arena_release(&a);
    });
    // The plain pointer: char *[] + lengths into the very same arena values.
    add(kRefs + "proxy", "plain pointer: char*[] + len[] into the arena", kRefCount, [](State &st) {
        size_t n = opaque(kRefCount);
        Source src(kRefValue);
        arena a;
        arena_init(&a, 0);
        std::vector<char *> ptrs(n);
        std::vector<size_t> lens(n);
        for (size_t i = 0; i < n; i++) {
            if (!(ptrs[i] = static_cast<char *>(arena_copy(&a, src.at(i), kRefValue, 0))))
                return st.SkipWithError("allocation failed");
            lens[i] = kRefValue;
        }
        walk(st, n, [&](size_t i, size_t *len) {
            *len = lens[i];
            return reinterpret_cast<const unsigned char *>(ptrs[i]);
        });
        memory_counters(st, sizeof(char *) + sizeof(size_t), arena_retained(&a), n);
        arena_release(&a);
    });
    add(kRefs + "glibc", "char*[] + len[], glibc malloc", kRefCount, [](State &st) {
        size_t n = opaque(kRefCount);
        Source src(kRefValue);
        std::vector<char *> ptrs(n);
        std::vector<size_t> lens(n);
        size_t before = mallinfo2().uordblks;
        for (size_t i = 0; i < n; i++) {
            if (!(ptrs[i] = static_cast<char *>(std::malloc(kRefValue))))
                return st.SkipWithError("allocation failed");
            std::memcpy(ptrs[i], src.at(i), kRefValue);
            lens[i] = kRefValue;
        }
        size_t heap = mallinfo2().uordblks - before + n * 8; // + glibc's chunk header
        walk(st, n, [&](size_t i, size_t *len) {
            *len = lens[i];
            return reinterpret_cast<const unsigned char *>(ptrs[i]);
        });
        memory_counters(st, sizeof(char *) + sizeof(size_t), heap, n);
        for (char *p : ptrs)
            std::free(p);
    });
    add(kRefs + "glibc_ptr_len_cap", "{ptr,len,cap}[], glibc malloc", kRefCount, [](State &st) {
        struct Str {
            char *p;
            size_t len, cap;
        };
        size_t n = opaque(kRefCount);
        Source src(kRefValue);
        std::vector<Str> v(n);
        size_t before = mallinfo2().uordblks;
        for (size_t i = 0; i < n; i++) {
            if (!(v[i].p = static_cast<char *>(std::malloc(kRefValue))))
                return st.SkipWithError("allocation failed");
            std::memcpy(v[i].p, src.at(i), kRefValue);
            v[i].len = v[i].cap = kRefValue;
        }
        size_t heap = mallinfo2().uordblks - before + n * 8;
        walk(st, n, [&](size_t i, size_t *len) {
            *len = v[i].len;
            return reinterpret_cast<const unsigned char *>(v[i].p);
        });
        memory_counters(st, sizeof(Str), heap, n);
        for (Str &s : v)
            std::free(s.p);
    });
}

// ---- 7. Ingest -----------------------------------------------------------------------

struct ArenaStore {
    arena a;
    ArenaStore() { arena_init(&a, 0); }
    ~ArenaStore() { arena_release(&a); }
    char *copy(const char *s, size_t n) { return arena_strndup(&a, s, n); }
    char *label(const char *s, size_t n) { return arena_strndup(&a, s, n); }
    LogRow *row() { return ARENA_ALLOC_ARRAY(&a, LogRow, 1); }
    void drop(LogRow **, size_t) { arena_reset(&a); }
};

void register_ingest()
{
    add("ingest/log/arena", "libarena", -1, run_ingest<ArenaStore>);
}

// ---- 13. Child arenas ---------------------------------------------------------------

// One cycle: a child made under a long-lived parent, 64 values of 48 bytes
// stored in it (each written), the child ended.  The parent's batch never
// ends during the row, so its memory must stay flat by the children giving
// their chunks back; the counters say how many backing calls the parent
// made per cycle once warm, and what it holds at the end.
constexpr int kChildValues = 64;
constexpr size_t kChildValue = 48;

template <class Cycle> void child_row(const char *impl, const char *label, Cycle cycle)
{
    add(std::string("child/64x48/") + impl, label, 1, [cycle](State &st) {
        size_t fails = 0;
        for (int warm = 0; warm < 1000; warm++)
            fails += cycle();
        for (auto _ : st)
            fails += cycle();
        if (fails)
            st.SkipWithError("allocation failed");
    });
}

// Stores the cycle's values through `put` (each written); the failures.
template <class Put> size_t child_values(Put put)
{
    size_t fails = 0;
    for (int i = 0; i < kChildValues; i++) {
        void *p = put(kChildValue);
        if (!p) {
            fails++;
            continue;
        }
        std::memset(p, i, kChildValue);
        touch(p);
    }
    return fails;
}

void register_child()
{
    add("child/64x48/arena_child", "libarena arena_init_child, released", 1, [](State &st) {
        arena parent;
        arena_stats before, after;
        size_t fails = 0;
        arena_init(&parent, 0);
        auto cycle = [&] {
            arena child;
            arena_init_child(&child, &parent, 0);
            size_t f = child_values([&](size_t n) { return arena_alloc(&child, n); });
            arena_release(&child);
            return f;
        };
        for (int warm = 0; warm < 1000; warm++)
            fails += cycle();
        arena_get_stats(&parent, &before);
        for (auto _ : st)
            fails += cycle();
        arena_get_stats(&parent, &after);
        st.counters["parent_calls/cycle"] = per_iteration(
            static_cast<double>(after.backing_calls - before.backing_calls));
        st.counters["parent_held"] = bytes_counter(static_cast<double>(after.held));
        st.counters["parent_growth"] =
            bytes_counter(static_cast<double>(after.held) - static_cast<double>(before.held));
        arena_release(&parent);
        if (fails)
            st.SkipWithError("allocation failed");
    });
    child_row("arena_fresh", "libarena, a fresh arena per cycle (malloc'd chunk)", [] {
        arena a;
        arena_init(&a, 4096);
        size_t f = child_values([&](size_t n) { return arena_alloc(&a, n); });
        arena_release(&a);
        return f;
    });
#if HAVE_TALLOC
    {
        static void *parent = talloc_new(nullptr);
        child_row("talloc", "talloc child context, talloc_free", [] {
            void *child = talloc_new(parent);
            size_t f = child_values([&](size_t n) { return talloc_size(child, n); });
            talloc_free(child);
            return f + (child == nullptr);
        });
    }
#endif
#if HAVE_APR
    {
        static apr_pool_t *parent = [] {
            apr_pool_t *p = nullptr;
            if (apr_pool_create(&p, nullptr) != APR_SUCCESS)
                std::abort();
            return p;
        }();
        child_row("apr", "APR subpool, apr_pool_destroy", [] {
            apr_pool_t *child = nullptr;
            if (apr_pool_create(&child, parent) != APR_SUCCESS)
                return size_t(1);
            size_t f = child_values([&](size_t n) { return apr_palloc(child, n); });
            apr_pool_destroy(child);
            return f;
        });
    }
#endif
}

// ---- 16. Huge batches -------------------------------------------------------------------

// The huge batch through arena_alloc: warm, arena_reset between batches;
// cold, arena_release and arena_init.  Whether the arena uses huge pages is
// read once per process, so the rows with them off come from another
// process, started with ARENA_HUGE_PAGES=0 (bench/run.py does): there they
// are named arena_nohuge.
void register_huge()
{
    const char *env = std::getenv("ARENA_HUGE_PAGES");
    bool off = env && std::strcmp(env, "0") == 0;
    const char *impl = off ? "arena_nohuge" : "arena";
    const char *label = off ? "libarena arena_alloc, ARENA_HUGE_PAGES=0" : "libarena arena_alloc";
    for (bool cold : {false, true})
        add(huge_name(cold, impl), label, static_cast<double>(huge_sizes().size()),
            [cold](State &st) {
                arena a;
                huge_batch(
                    st, cold, [&] { arena_init(&a, 0); },
                    [&](size_t n) { return arena_alloc(&a, n); },
                    [&](void **, size_t) { arena_reset(&a); }, [&] { arena_release(&a); });
            })
            ->Iterations(huge_iterations())
            ->Unit(benchmark::kMillisecond);
}

} // namespace

int main(int argc, char **argv)
{
    check_malloc_is("libc.so");
#if HAVE_APR
    apr_initialize();
#endif
    register_copy();
    register_alloc();
    register_pool();
    register_scoped();
    register_tree();
    register_refs();
    register_ingest();
    register_threads_arena();
    register_clients_arena();
    register_churn_arena();
#if HAVE_PMR
    register_cxx();
#endif
    register_amalgamation("arena_library", "libarena, the library (src/)");
    register_child();
    register_huge();
    return run_main(argc, argv);
}
