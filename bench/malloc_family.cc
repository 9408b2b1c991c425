// SPDX-License-Identifier: MIT
/*
 * The malloc rows of every workload, for one allocator per binary:
 * bench_malloc_glibc, _jemalloc, _mimalloc, _tcmalloc (BENCH_MALLOC_NAME).
 * Debian's jemalloc, mimalloc and tcmalloc replace malloc for the whole
 * process when linked, so each runs alone; main() checks that malloc really
 * is the allocator this binary is named after.  Built without the allocator
 * (BENCH_INSTALLED undefined), every row reports "not installed".
 *
 * Two of them also give rows to a malloc with a bulk drop, the nearest thing
 * to an arena a malloc offers: bench_malloc_mimalloc's mimalloc_heap (a
 * first-class heap per batch: mi_heap_new, mi_heap_malloc/realloc, mi_free,
 * mi_heap_destroy) and bench_malloc_jemalloc's jemalloc_arena (an explicit
 * arena, arenas.create, used through mallocx/rallocx/dallocx with
 * MALLOCX_TCACHE_NONE, and arena.<i>.reset per batch).  They run in the
 * copy-in, request and real-client workloads.
 */
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "churn.h"
#include "clients.h"
#include "harness.h"
#include "ingest.h"
#include "workloads.h"
#include "threads.h"

#if BENCH_INSTALLED && BENCH_MALLOC_MIMALLOC
#  include <mimalloc.h>
#endif

#if BENCH_INSTALLED && BENCH_MALLOC_JEMALLOC
#  include <jemalloc/jemalloc.h>
#endif
#if BENCH_INSTALLED && BENCH_MALLOC_TCMALLOC
extern "C" void MallocExtension_ReleaseFreeMemory(void);
#endif

// This binary's malloc has a bulk drop (see the top of the file): it has
// the bulk rows, measured when the malloc is installed.
#if BENCH_MALLOC_MIMALLOC || BENCH_MALLOC_JEMALLOC
#  define BENCH_BULK 1
#endif

namespace bench {
void return_memory()
{
#if BENCH_INSTALLED && BENCH_MALLOC_GLIBC
    malloc_trim(0);
#elif BENCH_INSTALLED && BENCH_MALLOC_JEMALLOC
    mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0); // MALLCTL_ARENAS_ALL
#elif BENCH_INSTALLED && BENCH_MALLOC_MIMALLOC
    mi_collect(true);
#elif BENCH_INSTALLED && BENCH_MALLOC_TCMALLOC
    MallocExtension_ReleaseFreeMemory();
#endif
}
} // namespace bench

using namespace bench;
using benchmark::State;

namespace {

const std::string kName = BENCH_MALLOC_NAME;
// The display name of the plain malloc rows.
const std::string kLabel = kName == "glibc" ? "glibc malloc" : kName;

#if BENCH_INSTALLED
Row row(const std::string &name, const std::string &label, double items, Fn fn)
{
    return add(name, label, items, std::move(fn));
}
#else
Row row(const std::string &name, const std::string &label, double, Fn)
{
    return absent(name, label, "not installed");
}
#endif

// A batch of malloc'd values, each freed when the batch is dropped.
struct MallocBatch {
    void open() {}
    template <class V> void drop(V *live)
    {
        for (size_t i = 0; i < kBatch; i++)
            std::free(live[i]);
    }
    void close() {}
};

void register_copy()
{
    for (size_t size : {16, 256, 4096, 65536})
        for (bool cold : {false, true})
            row("copy/" + sz(size) + (cold ? "/cold/" : "/warm/") + kName, kLabel, kBatch,
                [size, cold](State &st) {
                    size_t n = opaque(size);
                    Source src(n);
                    MallocBatch impl;
                    batch(st, impl, cold, [&](size_t i) {
                        void *p = std::malloc(n);
                        return p ? std::memcpy(p, src.at(i), n) : p;
                    });
                });
}

void register_alloc()
{
    for (size_t size : {16, 256})
        row("alloc/" + sz(size) + "/" + kName, kLabel, kBatch, [size](State &st) {
            size_t n = opaque(size);
            MallocBatch impl;
            batch(st, impl, false, [&](size_t) { return std::malloc(n); });
        });
}

void register_pool()
{
    for (bool rolling : {false, true})
        for (size_t size : kPoolSizes)
            for (size_t cap : kPoolCaps)
                row(pool_name(rolling, size, cap, kName), kLabel, 2.0 * cap,
                    [rolling, size, cap](State &st) {
                        size_t n = opaque(size);
                        auto take = [n] { return std::malloc(n); };
                        auto give = [](void *p) { std::free(p); };
                        if (rolling)
                            pool_rolling(st, cap, take, give);
                        else
                            pool_batch(st, cap, take, give);
                    });
}

void register_scoped()
{
    for (size_t size : {512, 1024, 4096}) {
        std::string z = "scoped/" + sz(size) + "/zeroed/", u = "scoped/" + sz(size) + "/uninit/";
        row(z + kName + "_calloc", kName + " calloc+free", kScopes, [size](State &st) {
            scoped(st, opaque(size), [](size_t n) {
                void *p = std::calloc(1, n);
                bool ok = use_zeroed(p, n);
                std::free(p);
                return ok;
            });
        });
        row(z + kName + "_memset", kName + " malloc+memset+free", kScopes, [size](State &st) {
            scoped(st, opaque(size), [](size_t n) {
                void *p = std::malloc(n);
                bool ok = p && use_zeroed(std::memset(p, 0, n), n);
                std::free(p);
                return ok;
            });
        });
        row(u + kName, kLabel, kScopes, [size](State &st) {
            scoped(st, opaque(size), [](size_t n) {
                void *p = std::malloc(n);
                bool ok = use_block(p, n);
                std::free(p);
                return ok;
            });
        });
    }
}

void free_tree(Node *n)
{
    if (!n)
        return;
    if (n->v > 0) {
        free_tree(n->l);
        free_tree(n->r);
    }
    std::free(n);
}

void register_tree()
{
    const std::string t = "tree/depth" + sz(kTreeDepth) + "/";
    row(t + kName, kLabel, 1, [](State &st) {
        tree(
            st, [] {}, [] { return static_cast<Node *>(std::malloc(sizeof(Node))); },
            [](Node *root) {
                if (root)
                    free_tree(root);
            });
    });
#if BENCH_MALLOC_MIMALLOC
    row(t + "mimalloc_heap", "mimalloc heap (mi_heap_destroy)", 1, [](State &st) {
#  if BENCH_INSTALLED
        mi_heap_t *heap = nullptr;
        tree(
            st, [&] { heap = mi_heap_new(); },
            [&] { return static_cast<Node *>(mi_heap_malloc(heap, sizeof(Node))); },
            [&](Node *) { mi_heap_destroy(heap); });
#  else
        (void)st;
#  endif
    });
#endif
}

struct MallocStore {
    std::vector<char *> labels;
    char *copy(const char *s, size_t n)
    {
        char *p = static_cast<char *>(std::malloc(n + 1));
        if (p) {
            std::memcpy(p, s, n);
            p[n] = '\0';
        }
        return p;
    }
    char *label(const char *s, size_t n)
    {
        char *p = copy(s, n);
        if (p)
            labels.push_back(p);
        return p;
    }
    LogRow *row() { return static_cast<LogRow *>(std::malloc(sizeof(LogRow))); }
    void drop(LogRow **rows, size_t n)
    {
        for (size_t i = 0; i < n; i++) {
            LogRow *r = rows[i];
            std::free(const_cast<char *>(r->ts));
            std::free(const_cast<char *>(r->user));
            std::free(const_cast<char *>(r->path));
            std::free(const_cast<char *>(r->msg));
            std::free(r);
        }
        for (char *l : labels)
            std::free(l);
        labels.clear();
    }
};

void register_ingest()
{
    row("ingest/log/" + kName, kLabel, -1, run_ingest<MallocStore>);
}

// The real clients on their default hooks, which call this process's malloc.
void register_real_clients()
{
    ClientImpl im;
    im.name = kName;
    im.label = kLabel;
#if BENCH_INSTALLED
    im.make = [] { return std::unique_ptr<ClientAlloc>(new NoClientAlloc); };
#endif
    register_clients(im);
}

// The churn rows (bench/churn.h): the values freed one by one.
#if BENCH_INSTALLED && BENCH_MALLOC_GLIBC
// What glibc held at most over one more replay, untimed, after the timed
// ones: the most its heap held (mallinfo2()'s arena + hblkhd, read after
// every malloc, since a free never raises it) less what was allocated when
// the replay began (uordblks + hblkhd).  The same figure the property test
// (tests/test_reuse_churn.c) compares the arena with.
size_t glibc_churn_held(int dist)
{
    const ChurnSeq &q = churn_sequence(dist);
    std::vector<void *> slots(q.initial.size());
    struct mallinfo2 m0 = mallinfo2();
    size_t peak = 0;
    churn_once(
        q, slots,
        [&peak](size_t n) {
            void *p = std::malloc(n);
            struct mallinfo2 m = mallinfo2();
            peak = m.arena + m.hblkhd > peak ? m.arena + m.hblkhd : peak;
            return p;
        },
        [](void *p, size_t) { std::free(p); });
    return peak - (m0.uordblks + m0.hblkhd);
}
#endif

void register_churn()
{
    for (int d = 0; d < 4; d++) {
        auto start = std::make_shared<long>(-1);
        row(churn_name(d, kName), kLabel, -1, [d, start](State &st) {
            churn_row(
                st, d, start.get(), [](size_t n) { return std::malloc(n); },
                [](void *p, size_t) { std::free(p); }, [] {});
#if BENCH_INSTALLED && BENCH_MALLOC_GLIBC
            st.counters["peak_held"] = bytes_counter(static_cast<double>(glibc_churn_held(d)));
#endif
        });
    }
}

// The huge batch (workloads.h): every value malloc'd, every value freed when
// the batch ends; warm, what the malloc keeps after the frees is its own
// policy; cold, return_memory() before each batch.
void register_huge()
{
    for (bool cold : {false, true})
        row(huge_name(cold, kName), kLabel, static_cast<double>(huge_sizes().size()),
            [cold](State &st) {
                huge_batch(
                    st, cold, [] {}, [](size_t n) { return std::malloc(n); },
                    [](void **live, size_t count) {
                        for (size_t i = 0; i < count; i++)
                            std::free(live[i]);
                    },
                    [] {});
            })
            ->Iterations(huge_iterations())
            ->Unit(benchmark::kMillisecond);
}

// ---- Mallocs with a bulk drop ------------------------------------------------------

// Copy-in at every size, warm and cold, but for a cold 64 KiB batch: that is
// the page faults of 256 MiB of fresh memory, the plain malloc row's figure.
// Quick mode leaves out the warm 64 KiB batch too: after a reset of
// jemalloc's arena the pages of its 64 KiB values fault in again, all 256 MiB
// of them every batch (about a second).
[[maybe_unused]] bool bulk_copy_row(size_t size, bool cold)
{
    return size != 65536 || (!cold && !quick_mode());
}

#if BENCH_MALLOC_MIMALLOC
const char *const kBulkName = "mimalloc_heap";
const char *const kBulkLabel = "mimalloc heap (mi_heap_destroy)";
#elif BENCH_MALLOC_JEMALLOC
const char *const kBulkName = "jemalloc_arena";
const char *const kBulkLabel = "jemalloc arena (arena.<i>.reset)";
#endif

#if BENCH_INSTALLED && BENCH_MALLOC_MIMALLOC
// The batch's heap: what the hooks without a context allocate from.
mi_heap_t *bulk_heap;

void bulk_open()
{
    bulk_heap = mi_heap_new();
    if (!bulk_heap)
        std::abort();
}
void bulk_drop()
{
    mi_heap_destroy(bulk_heap);
    bulk_heap = nullptr;
}
void *bulk_malloc(size_t n) { return mi_heap_malloc(bulk_heap, n); }
void *bulk_zalloc(size_t n) { return mi_heap_zalloc(bulk_heap, n); }
void *bulk_realloc(void *p, size_t n) { return mi_heap_realloc(bulk_heap, p, n); }
void bulk_free(void *p) { mi_free(p); }
#elif BENCH_INSTALLED && BENCH_MALLOC_JEMALLOC
// One explicit arena for the process, reset after each batch.  The thread
// cache is bypassed (MALLOCX_TCACHE_NONE) on every call, frees included:
// arena.<i>.reset requires that no thread cache holds the arena's blocks.
// Measured with Debian's 5.3: after a reset, some of the arena's pages fault
// in again on their next use (every page of a batch of 64 KiB values, none
// of a batch of 4 KiB ones), whatever its decay settings.
int bulk_flags;
std::string bulk_reset_ctl;

size_t arena_allocated(unsigned ind)
{
    uint64_t epoch = 1;
    size_t sz = sizeof epoch;
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    size_t total = 0;
    for (const char *what : {"small.allocated", "large.allocated"}) {
        std::string name = "stats.arenas." + std::to_string(ind) + "." + what;
        size_t v = 0;
        sz = sizeof v;
        if (mallctl(name.c_str(), &v, &sz, nullptr, 0) != 0)
            return SIZE_MAX; // a build without statistics: cannot tell
        total += v;
    }
    return total;
}

// Creates the arena and checks that a reset really drops what it held.
void bulk_init()
{
    unsigned ind;
    size_t sz = sizeof ind;
    if (mallctl("arenas.create", &ind, &sz, nullptr, 0) != 0) {
        std::fprintf(stderr, "bench: jemalloc: arenas.create failed\n");
        std::exit(3);
    }
    bulk_flags = MALLOCX_ARENA(ind) | MALLOCX_TCACHE_NONE;
    bulk_reset_ctl = "arena." + std::to_string(ind) + ".reset";
    for (size_t i = 0; i < 1000; i++) {
        void *p = mallocx(16 + i * 97 % 40000, bulk_flags);
        if (!p)
            std::abort();
        if (i % 3 == 0)
            dallocx(p, MALLOCX_TCACHE_NONE);
    }
    size_t before = arena_allocated(ind);
    if (mallctl(bulk_reset_ctl.c_str(), nullptr, nullptr, nullptr, 0) != 0) {
        std::fprintf(stderr, "bench: jemalloc: %s failed\n", bulk_reset_ctl.c_str());
        std::exit(3);
    }
    size_t after = arena_allocated(ind);
    if (after != SIZE_MAX && (before == 0 || after != 0)) {
        std::fprintf(stderr, "bench: jemalloc: %s left %zu of %zu bytes allocated\n",
                     bulk_reset_ctl.c_str(), after, before);
        std::exit(3);
    }
    benchmark::AddCustomContext("jemalloc_arena",
                                after == SIZE_MAX ? "reset not verified (no statistics)"
                                                  : "reset verified");
}

void bulk_open() {}
void bulk_drop() { mallctl(bulk_reset_ctl.c_str(), nullptr, nullptr, nullptr, 0); }
// mallocx and rallocx take no size 0.
void *bulk_malloc(size_t n) { return mallocx(n ? n : 1, bulk_flags); }
void *bulk_zalloc(size_t n) { return mallocx(n ? n : 1, bulk_flags | MALLOCX_ZERO); }
void *bulk_realloc(void *p, size_t n)
{
    return p ? rallocx(p, n ? n : 1, bulk_flags) : bulk_malloc(n);
}
void bulk_free(void *p)
{
    if (p)
        dallocx(p, MALLOCX_TCACHE_NONE);
}
#endif

#if BENCH_BULK && BENCH_INSTALLED
// lua_Alloc and ProtobufCAllocator over the batch's allocator (the context
// is unused: the batch's heap or arena is the process's current one).
void *bulk_lua(void *, void *ptr, size_t, size_t nsize)
{
    if (nsize == 0) {
        bulk_free(ptr);
        return nullptr;
    }
    return bulk_realloc(ptr, nsize);
}
void *bulk_pb_alloc(void *, size_t n) { return bulk_malloc(n); }
void bulk_pb_free(void *, void *p) { bulk_free(p); }

// The real clients' batch: opened by begin(), dropped whole by end().
class BulkClient : public ClientAlloc {
public:
    void *begin() override
    {
        bulk_open();
        return nullptr;
    }
    void end() override { bulk_drop(); }
};

// The copy-in batch: a batch's values dropped at once, then the next batch.
struct BulkBatch {
    void open() { bulk_open(); }
    template <class V> void drop(V *)
    {
        bulk_drop();
        bulk_open();
    }
    void close() { bulk_drop(); }
};

void register_bulk()
{
    for (size_t size : {16, 256, 4096, 65536})
        for (bool cold : {false, true}) {
            if (!bulk_copy_row(size, cold))
                continue;
            add("copy/" + sz(size) + (cold ? "/cold/" : "/warm/") + kBulkName, kBulkLabel, kBatch,
                [size, cold](State &st) {
                    size_t n = opaque(size);
                    Source src(n);
                    BulkBatch impl;
                    batch(st, impl, cold, [&](size_t i) {
                        void *p = bulk_malloc(n);
                        return p ? std::memcpy(p, src.at(i), n) : p;
                    });
                });
        }
    add(std::string("request/512/zeroed/") + kBulkName, kBulkLabel, kScopes, [](State &st) {
        scoped(st, opaque(512), [](size_t m) {
            bulk_open();
            return zeroed_request(m, bulk_zalloc, bulk_drop);
        });
    });
    add(std::string("request/100/small/") + kBulkName, kBulkLabel, 1, [](State &st) {
        size_t base = 0, fails = 0;
        for (auto _ : st) {
            bulk_open();
            fails += !small_request(base++, bulk_malloc, [](void **) { bulk_drop(); });
        }
        if (fails)
            st.SkipWithError("allocation failed");
    });

    for (bool cold : {false, true})
        add(huge_name(cold, kBulkName), kBulkLabel, static_cast<double>(huge_sizes().size()),
            [cold](State &st) {
                huge_batch(
                    st, cold, bulk_open, bulk_malloc,
                    [](void **, size_t) {
                        bulk_drop();
                        bulk_open();
                    },
                    bulk_drop);
            })
            ->Iterations(huge_iterations())
            ->Unit(benchmark::kMillisecond);

    ClientImpl im;
    im.name = kBulkName;
    im.label = kBulkLabel;
    im.hooks.malloc_fn = bulk_malloc;
    im.hooks.realloc_fn = bulk_realloc;
    im.hooks.free_fn = bulk_free;
    im.hooks.lua_fn = bulk_lua;
    im.hooks.pb_alloc = bulk_pb_alloc;
    im.hooks.pb_free = bulk_pb_free;
    im.walk = false; // the batch is dropped whole
    im.make = [] { return std::unique_ptr<ClientAlloc>(new BulkClient); };
    register_clients(im);
}
#elif BENCH_BULK
// Not installed: the same rows, saying so.
void register_bulk()
{
    const std::string name = kBulkName, label = kBulkLabel;
    for (size_t size : {16, 256, 4096, 65536})
        for (bool cold : {false, true})
            if (bulk_copy_row(size, cold))
                absent("copy/" + sz(size) + (cold ? "/cold/" : "/warm/") + name, label,
                       "not installed");
    absent("request/512/zeroed/" + name, label, "not installed");
    absent("request/100/small/" + name, label, "not installed");
    for (bool cold : {false, true})
        absent(huge_name(cold, name), label, "not installed");
    ClientImpl im;
    im.name = name;
    im.label = label;
    register_clients(im); // no make: every row says "not installed"
}
#endif

} // namespace

int main(int argc, char **argv)
{
#if BENCH_INSTALLED
#  if BENCH_MALLOC_GLIBC
    check_malloc_is("libc.so");
#  else
    check_malloc_is(("lib" + kName).c_str());
#  endif
#endif
    register_copy();
    register_alloc();
    register_pool();
    register_scoped();
    register_tree();
    register_ingest();
    register_threads_malloc(kName, kLabel, row);
    register_real_clients();
    register_churn();
    register_huge();
#if BENCH_BULK
#  if BENCH_INSTALLED && BENCH_MALLOC_JEMALLOC
    bulk_init();
#  endif
    register_bulk();
#endif
    return run_main(argc, argv);
}
