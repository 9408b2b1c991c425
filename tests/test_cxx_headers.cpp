// The public headers compile as C++17 (-Wall -Wextra -Werror) and work.
#include <arena/arena.h>
#include <arena/pool.h>

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
