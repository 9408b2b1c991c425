/*
 * The malloc rows of every workload, for one allocator per binary:
 * bench_malloc_glibc, _jemalloc, _mimalloc, _tcmalloc (BENCH_MALLOC_NAME).
 * Debian's jemalloc, mimalloc and tcmalloc replace malloc for the whole
 * process when linked, so each runs alone; main() checks that malloc really
 * is the allocator this binary is named after.  Built without the allocator
 * (BENCH_INSTALLED undefined), every row reports "not installed".
 */
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "clients.h"
#include "harness.h"
#include "ingest.h"
#include "workloads.h"
#include "threads.h"

#if BENCH_INSTALLED && BENCH_MALLOC_MIMALLOC
#  include <mimalloc.h>
#endif

#if BENCH_INSTALLED && BENCH_MALLOC_JEMALLOC
extern "C" int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
#endif
#if BENCH_INSTALLED && BENCH_MALLOC_TCMALLOC
extern "C" void MallocExtension_ReleaseFreeMemory(void);
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
    return run_main(argc, argv);
}
