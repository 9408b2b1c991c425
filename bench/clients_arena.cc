// SPDX-License-Identifier: MIT
// The real-client rows of bench_arena (see clients.h): libarena through its
// adapters, the limit proxy, and talloc and APR through the same hook shapes.
// Every one of them drops the operation's memory at once in end(); only
// arena_walk also runs the library's own free walk first.
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <arena/arena.h>
#include <arena/hooks.h>
#include <arena/thread.h>

#if HAVE_TALLOC
#  include <talloc.h>
#endif
#if HAVE_APR
#  include <apr_pools.h>
#endif

#include "clients.h"

namespace bench {
namespace {

// ---- libarena --------------------------------------------------------------------------

const ClientHooks kArenaHooks = [] {
    ClientHooks h;
    h.malloc_fn = arena_cur_malloc;
    h.realloc_fn = arena_cur_realloc;
    h.free_fn = arena_cur_free;
    h.lua_fn = arena_hook_lua_align8; // Lua 5.4 asks LUAI_MAXALIGN: 8 bytes here
    h.pb_alloc = arena_hook_alloc;
    h.pb_free = arena_hook_free;
    return h;
}();

// One arena for the whole run, with the defaults, reset after each operation.
class ArenaClient : public ClientAlloc {
public:
    ArenaClient() { arena_init(&a_, 0); }
    ~ArenaClient() override { arena_release(&a_); }
    void *begin() override
    {
        prev_ = arena_set_current(&a_);
        return &a_;
    }
    void end() override
    {
        arena_set_current(prev_);
        arena_reset(&a_);
    }

private:
    arena a_;
    arena *prev_ = nullptr;
};

// A request server's shape: each operation takes an arena from a cache with
// the defaults and recycles it.
class ArenaCacheClient : public ClientAlloc {
public:
    ArenaCacheClient() : c_(arena_cache_create(nullptr))
    {
        if (!c_)
            std::abort();
    }
    ~ArenaCacheClient() override { arena_cache_destroy(c_); }
    void *begin() override
    {
        a_ = arena_cache_acquire(c_);
        if (!a_)
            std::abort();
        prev_ = arena_set_current(a_);
        return a_;
    }
    void end() override
    {
        arena_set_current(prev_);
        arena_cache_recycle(c_, a_);
    }

private:
    arena_cache *c_;
    arena *a_ = nullptr, *prev_ = nullptr;
};

// ---- The limit proxy: a bare bump pointer over reserved memory, never freeing ----------

// Address space reserved once; pages are touched by the warm-up and reused.
constexpr size_t kProxyReserve = size_t(4) << 30;
constexpr size_t kProxyHeader = 16; // the size, for realloc without an old size

char *proxy_cur, *proxy_end;

// Rounds to 16 bytes; the room is a multiple of 16, so n <= room is enough.
void *proxy_take(size_t n)
{
    if (n > static_cast<size_t>(proxy_end - proxy_cur)) {
        std::fprintf(stderr, "bench: the proxy's %zu GiB are not enough\n", kProxyReserve >> 30);
        std::abort();
    }
    char *p = proxy_cur;
    proxy_cur += (n + 15) & ~size_t(15);
    return p;
}

void *proxy_malloc(size_t n)
{
    if (n > SIZE_MAX - kProxyHeader)
        return nullptr;
    char *p = static_cast<char *>(proxy_take(n + kProxyHeader));
    std::memcpy(p, &n, sizeof n);
    return p + kProxyHeader;
}

void *proxy_realloc(void *ptr, size_t n)
{
    if (!ptr)
        return proxy_malloc(n);
    size_t old;
    std::memcpy(&old, static_cast<char *>(ptr) - kProxyHeader, sizeof old);
    if (n <= old)
        return ptr;
    void *q = proxy_malloc(n);
    return q ? std::memcpy(q, ptr, old) : q;
}

void proxy_free(void *) {}

void *proxy_lua(void *, void *ptr, size_t osize, size_t nsize)
{
    if (nsize == 0)
        return nullptr;
    if (!ptr)
        return proxy_take(nsize);
    if (nsize <= osize)
        return ptr;
    return std::memcpy(proxy_take(nsize), ptr, osize);
}

void *proxy_pb_alloc(void *, size_t n) { return proxy_take(n); }
void proxy_pb_free(void *, void *) {}

class ProxyClient : public ClientAlloc {
public:
    ProxyClient()
    {
        void *p = mmap(nullptr, kProxyReserve, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            std::abort();
        base_ = static_cast<char *>(p);
    }
    ~ProxyClient() override { munmap(base_, kProxyReserve); }
    void *begin() override
    {
        proxy_cur = base_;
        proxy_end = base_ + kProxyReserve;
        return base_;
    }
    void end() override {}

private:
    char *base_;
};

// ---- talloc: the operation's memory hangs off one context -------------------------

#if HAVE_TALLOC
void *talloc_current;

void *tc_malloc(size_t n) { return talloc_size(talloc_current, n); }
void *tc_realloc(void *p, size_t n) { return talloc_realloc_size(talloc_current, p, n); }
void tc_free(void *p) { talloc_free(p); }

void *tc_lua(void *ctx, void *ptr, size_t, size_t nsize)
{
    if (nsize == 0) {
        talloc_free(ptr);
        return nullptr;
    }
    return talloc_realloc_size(ctx, ptr, nsize);
}

void *tc_pb_alloc(void *ctx, size_t n) { return talloc_size(ctx, n); }
void tc_pb_free(void *, void *p) { talloc_free(p); }

class TallocClient : public ClientAlloc {
public:
    TallocClient() : ctx_(talloc_new(nullptr))
    {
        if (!ctx_)
            std::abort();
    }
    ~TallocClient() override { talloc_free(ctx_); }
    void *begin() override { return talloc_current = ctx_; }
    void end() override
    {
        talloc_current = nullptr;
        talloc_free_children(ctx_);
    }

private:
    void *ctx_;
};
#endif

// ---- APR: a pool cleared after each operation ------------------------------------------

#if HAVE_APR
apr_pool_t *apr_current;
constexpr size_t kAprHeader = 16; // the size, for realloc (APR has none)

void *apr_malloc(size_t n)
{
    if (n > SIZE_MAX - kAprHeader)
        return nullptr;
    char *p = static_cast<char *>(apr_palloc(apr_current, n + kAprHeader));
    if (!p)
        return nullptr;
    std::memcpy(p, &n, sizeof n);
    return p + kAprHeader;
}

void *apr_realloc(void *ptr, size_t n)
{
    if (!ptr)
        return apr_malloc(n);
    size_t old;
    std::memcpy(&old, static_cast<char *>(ptr) - kAprHeader, sizeof old);
    if (n <= old)
        return ptr;
    void *q = apr_malloc(n);
    return q ? std::memcpy(q, ptr, old) : q;
}

void apr_free(void *) {}

void *apr_lua(void *ctx, void *ptr, size_t osize, size_t nsize)
{
    if (nsize == 0)
        return nullptr;
    if (ptr && nsize <= osize)
        return ptr;
    void *q = apr_palloc(static_cast<apr_pool_t *>(ctx), nsize);
    return q && ptr ? std::memcpy(q, ptr, osize) : q;
}

void *apr_pb_alloc(void *ctx, size_t n) { return apr_palloc(static_cast<apr_pool_t *>(ctx), n); }
void apr_pb_free(void *, void *) {}

// A pool with an allocator of its own, as the copy rows use.
class AprClient : public ClientAlloc {
public:
    AprClient()
    {
        apr_allocator_t *al;
        if (apr_allocator_create(&al) != APR_SUCCESS ||
            apr_pool_create_ex(&pool_, nullptr, nullptr, al) != APR_SUCCESS)
            std::abort();
        apr_allocator_owner_set(al, pool_);
    }
    ~AprClient() override { apr_pool_destroy(pool_); }
    void *begin() override { return apr_current = pool_; }
    void end() override
    {
        apr_current = nullptr;
        apr_pool_clear(pool_);
    }

private:
    apr_pool_t *pool_ = nullptr;
};
#endif

template <class T> std::unique_ptr<ClientAlloc> make() { return std::make_unique<T>(); }

} // namespace

void register_clients_arena()
{
    ClientImpl proxy;
    proxy.name = "proxy";
    proxy.label = "limit proxy (bare bump, never frees)";
    proxy.hooks.malloc_fn = proxy_malloc;
    proxy.hooks.realloc_fn = proxy_realloc;
    proxy.hooks.free_fn = proxy_free;
    proxy.hooks.lua_fn = proxy_lua;
    proxy.hooks.pb_alloc = proxy_pb_alloc;
    proxy.hooks.pb_free = proxy_pb_free;
    proxy.walk = false;
    proxy.make = make<ProxyClient>;
    register_clients(proxy);

    ClientImpl a;
    a.name = "arena";
    a.label = "libarena, dropped by arena_reset";
    a.hooks = kArenaHooks;
    a.walk = false;
    a.make = make<ArenaClient>;
    register_clients(a);
    a.name = "arena_walk";
    a.label = "libarena, the library's free walk, then arena_reset";
    a.walk = true;
    register_clients(a);
    a.name = "arena_cache";
    a.label = "libarena arena_cache (acquire, recycle)";
    a.walk = false;
    a.clients = kLua;
    a.make = make<ArenaCacheClient>;
    register_clients(a);

    ClientImpl t;
    t.name = "talloc";
    t.label = "talloc, talloc_free_children";
    t.walk = false;
#if HAVE_TALLOC
    t.hooks.malloc_fn = tc_malloc;
    t.hooks.realloc_fn = tc_realloc;
    t.hooks.free_fn = tc_free;
    t.hooks.lua_fn = tc_lua;
    t.hooks.pb_alloc = tc_pb_alloc;
    t.hooks.pb_free = tc_pb_free;
    t.make = make<TallocClient>;
#endif
    register_clients(t);

    ClientImpl p;
    p.name = "apr";
    p.label = "APR pool, apr_pool_clear";
    p.walk = false;
#if HAVE_APR
    p.hooks.malloc_fn = apr_malloc;
    p.hooks.realloc_fn = apr_realloc;
    p.hooks.free_fn = apr_free;
    p.hooks.lua_fn = apr_lua;
    p.hooks.pb_alloc = apr_pb_alloc;
    p.hooks.pb_free = apr_pb_free;
    p.make = make<AprClient>;
#endif
    register_clients(p);
}

} // namespace bench
