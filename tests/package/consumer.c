/* SPDX-License-Identifier: MIT */
/* A program built against the installed package. */
#include <arena/arena.h>
#include <arena/hooks.h>
#include <arena/pool.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    arena a = {0};
    char *s = arena_strdup(&a, "consumer");
    arena_ref r = arena_ref_strndup(&a, "ok", 2);
    int good = s && strcmp(arena_ref_str(&a, r), "ok") == 0 &&
               strcmp(arena_version(), ARENA_VERSION_STRING) == 0;
    {
        char *f = arena_sprintf(&a, "%s!", s);
        arena *prev = arena_set_current(&a);
        good = good && f && strcmp(f, "consumer!") == 0;
        char *m = arena_cur_strdup("hooks");
        good = good && m && arena_cur_size(m) >= 6;
        arena_cur_free(m);
        arena_set_current(prev);
    }
    printf("%s %s (libarena %s)\n", s, good ? arena_ref_str(&a, r) : "BROKEN", arena_version());
    arena_release(&a);
    {
        arena_pool pool;
        if (arena_pool_init(&pool, 24, 8, 4, NULL)) {
            void *q = arena_pool_alloc(&pool);
            good = good && q && arena_pool_used(&pool) == 1;
            arena_pool_free(&pool, q);
            arena_pool_destroy(&pool);
        } else {
            good = 0;
        }
    }
    return good ? 0 : 1;
}
