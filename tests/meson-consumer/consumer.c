/* SPDX-License-Identifier: MIT */
/* A C program built by Meson against libarena (tests/meson-consumer). */
#include <arena/arena.h>
#include <arena/pool.h>
#include <arena/thread.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    arena a = {0};
    char *s = arena_strdup(&a, "meson");
    arena_pool p;
    int ok = s && strcmp(s, "meson") == 0 && strcmp(arena_version(), ARENA_VERSION_STRING) == 0 &&
             ARENA_VERSION_MAJOR >= 2;
    if (arena_pool_init(&p, 24, 8, 16, NULL)) {
        void *slot = arena_pool_alloc(&p);
        ok = ok && slot && arena_pool_used(&p) == 1;
        arena_pool_free(&p, slot);
        arena_pool_destroy(&p);
    } else {
        ok = 0;
    }
    arena_scope sc = arena_scratch_begin(NULL, 0);
    ok = ok && sc.arena && arena_alloc(sc.arena, 100);
    arena_scope_end(&sc);
    arena_scratch_release_thread();
    arena_release(&a);
    printf("libarena %s: %s\n", arena_version(), ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
