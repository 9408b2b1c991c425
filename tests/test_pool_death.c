/* SPDX-License-Identifier: MIT */
/* The default error handler aborts on a bad pool free, with a message that
 * names the misuse, the function and the pointer.  Run by tests/expect_abort.cmake:
 * `test_pool_death KIND` with KIND null, foreign, interior, double or never. */
#include <stdio.h>
#include <string.h>

#include <arena/pool.h>

int main(int argc, char **argv)
{
    arena_pool p;
    char *a, *b;
    const char *kind = argc > 1 ? argv[1] : "double";

    if (!arena_pool_init(&p, 16, 8, 4, NULL))
        return 2;
    a = (char *)arena_pool_alloc(&p);
    b = (char *)arena_pool_alloc(&p);
    arena_pool_free(&p, b);
    fprintf(stderr, "freeing %p\n",
            strcmp(kind, "null") == 0       ? NULL
            : strcmp(kind, "foreign") == 0  ? (void *)&p
            : strcmp(kind, "interior") == 0 ? (void *)(a + 1)
            : strcmp(kind, "never") == 0    ? (void *)(a + 48)
                                            : (void *)b);
    if (strcmp(kind, "null") == 0)
        arena_pool_free(&p, NULL);
    else if (strcmp(kind, "foreign") == 0)
        arena_pool_free(&p, &p);
    else if (strcmp(kind, "interior") == 0)
        arena_pool_free(&p, a + 1);
    else if (strcmp(kind, "never") == 0)
        arena_pool_free(&p, a + 48);
    else
        arena_pool_free(&p, b);
    printf("the default handler returned\n");
    arena_pool_destroy(&p);
    return 0;
}
