/* SPDX-License-Identifier: MIT */
/* Formatting into an arena: arena_sprintf writes straight into the arena
 * when the string fits its current chunk (one pass, no copy), and arena_free
 * gives a temporary back when it is the most recent value. */
#include <arena/arena.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    arena a = {0};
    const char *names[] = {"ada", "grace", "edsger", "barbara"};
    const char *line = "";
    for (int i = 0; i < 4; i++) {
        char *tmp = arena_sprintf(&a, "%s%s%s", line, *line ? ", " : "", names[i]);
        if (!tmp)
            return 1;
        line = tmp; /* the previous line stays until the batch ends */
    }
    printf("%s (%zu bytes in the arena)\n", line, arena_size(&a));

    size_t before = arena_size(&a);
    char *probe = arena_sprintf(&a, "%0*d", 60, 7);
    if (!probe)
        return 1;
    arena_free(&a, probe, strlen(probe) + 1); /* the most recent value: given back */
    printf("a temporary of 61 bytes came and went: %zu bytes before, %zu after\n", before,
           arena_size(&a));
    arena_release(&a);
    return 0;
}
