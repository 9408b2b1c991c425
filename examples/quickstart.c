/* SPDX-License-Identifier: MIT */
/* The README's example (tests/CMakeLists.txt compiles the README's copy, and checks they agree). */
#include <arena/arena.h>
#include <stdio.h>

struct row {
    const char *name;
    int score;
};

int main(void)
{
    arena a = {0}; /* no init call needed: 64 KiB chunks from malloc */
    for (int batch = 0; batch < 3; batch++) {
        struct row *rows = ARENA_NEW_ARRAY(&a, struct row, 1000);
        if (!rows)
            return 1;
        for (int i = 0; i < 1000; i++) {
            rows[i].name = arena_sprintf(&a, "user-%d-%d", batch, i); /* NULL: out of memory */
            rows[i].score = i;
        }
        printf("batch %d: %s .. %s, %zu bytes in %zu retained\n", batch, rows[0].name,
               rows[999].name, arena_size(&a), arena_retained(&a));
        arena_reset(&a); /* drop the whole batch, keep the chunks */
    }
    arena_release(&a); /* free everything */
    return 0;
}
