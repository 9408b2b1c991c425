// SPDX-License-Identifier: MIT
// The public headers, the C++ layer included, compile as C++17 (-Wall -Wextra
// -Werror) and work.
#include <arena/arena.h>
#include <arena/arena.hpp>
#include <arena/hooks.h>
#include <arena/pool.h>
#include <arena/thread.h>

#include <cstdio>
#include <cstring>

struct point {
    double x, y;
};

int main()
{
    arena a = {};
    point *p = ARENA_NEW(&a, point);
    int *v = ARENA_ALLOC_ARRAY(&a, int, 10);
    char *s = arena_strdup(&a, "c++");
    arena_ref r = arena_ref_copy(&a, "abc", 3, 1);
    bool ok = p && p->x == 0.0 && v && s && std::strcmp(s, "c++") == 0 &&
              arena_ref_len(r) == 3 && std::memcmp(arena_ref_ptr(&a, r), "abc", 3) == 0;
    {
        ARENA_SCOPE(&a);
        ok = ok && arena_alloc(&a, 100) != nullptr;
    }
    arena_scope sc = arena_scope_begin(&a);
    arena_scope_end(&sc);
    arena_scope s2 = arena_scratch_begin(nullptr, 0);
    ok = ok && s2.arena && arena_strdup(s2.arena, "x");
    arena_scope_end(&s2);
    arena_cache *c = arena_cache_create(nullptr);
    arena *ca = c ? arena_cache_acquire(c) : nullptr;
    ok = ok && ca && arena_calloc(ca, 1, 512);
    if (ca)
        arena_cache_recycle(c, ca);
    arena_cache_destroy(c);
    arena_shared *sh = arena_shared_create(0, 0, nullptr);
    ok = ok && sh && arena_shared_alloc(sh, 10);
    arena_shared_destroy(sh);
    arena_scratch_release_thread();
    {
        char *f = arena_sprintf(&a, "%s-%d", "c++", 17);
        ok = ok && f && std::strcmp(f, "c++-17") == 0;
        arena *prev = arena_set_current(&a);
        void *m = arena_cur_malloc(10);
        ok = ok && prev == nullptr && m && arena_cur_size(m) >= 10;
        arena_cur_free(m);
        arena_set_current(prev);
        void *(*lua_shape)(void *, void *, size_t, size_t) = arena_hook_lua;
        ok = ok && lua_shape(&a, nullptr, 0, 8) != nullptr;
    }
    arena_release(&a);

    arena_pool pool = {};
    if (arena_pool_init(&pool, sizeof(point), alignof(point), 4, nullptr)) {
        point *q = static_cast<point *>(arena_pool_alloc(&pool));
        ok = ok && q && arena_pool_owns(&pool, q) && arena_pool_used(&pool) == 1;
        arena_pool_free(&pool, q);
        ok = ok && arena_pool_available(&pool) == 4 && arena_pool_check(&pool);
        arena_pool_destroy(&pool);
    } else {
        ok = false;
    }
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
