/* SPDX-License-Identifier: MIT */
/* A scope that costs no heap allocation: the arena's first chunk is a stack
 * buffer, and a mark rewinds a sub-scope. */
#include <arena/arena.h>
#include <stdio.h>
#include <string.h>

static const char *join(arena *a, const char *x, const char *y)
{
    size_t nx = strlen(x), ny = strlen(y);
    char *s = (char *)arena_alloc_aligned(a, nx + ny + 2, 1);
    if (!s)
        return "(out of memory)";
    memcpy(s, x, nx);
    s[nx] = ' ';
    memcpy(s + nx + 1, y, ny + 1);
    return s;
}

int main(void)
{
    char buf[4096];
    arena a;
    arena_init_buffer(&a, buf, sizeof buf, NULL); /* fixed: never touches the heap */

    const char *greeting = join(&a, "hello,", "world");
    arena_mark m = arena_save(&a);
    for (int i = 0; i < 100; i++) {
        (void)join(&a, greeting, "again"); /* scratch values, dropped below */
        arena_rewind(&a, m);
    }
    printf("%s (%zu bytes used of %zu)\n", greeting, arena_size(&a), arena_retained(&a));
    arena_release(&a);
    return 0;
}
