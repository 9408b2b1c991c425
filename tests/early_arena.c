/* SPDX-License-Identifier: MIT */
/*
 * An arena made by a program's own constructor, which may run before the
 * library's (a C++ static initializer, a constructor of the same priority):
 * under memcheck its memory must be described as every other arena's is
 * (tests/CMakeLists.txt runs it there).  "clean" frees, reuses, resets and
 * releases with no error; "stale" reads a value after the reset, which
 * memcheck must report.
 */
#include <stdio.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/hooks.h>

static arena early;  /* zero: a valid empty arena, no call needed */
static arena hooked; /* its first call a hook's, which decides its sizes first */
static char *x, *y, *h1, *h2, *c1;

/* The earliest priority a program may use. */
__attribute__((constructor(101))) static void make_early(void)
{
    x = (char *)arena_alloc(&early, 64);
    y = (char *)arena_alloc(&early, 64);
    h1 = (char *)arena_hook_realloc(&hooked, NULL, 0, 24);
    h2 = (char *)arena_hook_realloc(&hooked, NULL, 0, 24);
    arena_set_current(&hooked);
    c1 = (char *)arena_cur_malloc(40);
    arena_set_current(NULL);
}

static volatile char sink;

int main(int argc, char **argv)
{
    char *z;
    if (argc != 2 || !x || !y || !h1 || !h2 || !c1)
        return 2;
    memset(h1, 5, 24);
    memset(h2, 6, 24);
    memset(c1, 7, 40);
    arena_set_current(&hooked);
    arena_cur_free(c1);
    arena_set_current(NULL);
    arena_hook_lua(&hooked, h1, 24, 0); /* not the most recent */
    h1 = (char *)arena_hook_lua(&hooked, NULL, 0, 24);
    if (!h1)
        return 5;
    memset(h1, 8, 24);
    arena_release(&hooked);
    memset(x, 1, 64);
    memset(y, 2, 64);
    arena_free(&early, x, 64); /* not the most recent */
    z = (char *)arena_alloc_reuse(&early, 64);
    if (!z)
        return 3;
    memset(z, 3, 64);
    arena_reset(&early);
    if (strcmp(argv[1], "stale") == 0) {
        const char *volatile hidden = y;
        sink = *hidden;
        puts("not reported");
        arena_release(&early);
        return 1;
    }
    z = (char *)arena_alloc(&early, 32);
    if (!z)
        return 4;
    memset(z, 4, 32);
    arena_release(&early);
    puts("done");
    return 0;
}
