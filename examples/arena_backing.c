/* SPDX-License-Identifier: MIT */
/* An arena as the memory of other allocators: a pool of connection slots and
 * a nested scratch arena, both carved out of one request arena by
 * arena_allocator_of().  Release them before the request arena is reset. */
#include <arena/hooks.h>
#include <arena/pool.h>
#include <stdio.h>

struct conn {
    int fd;
    const char *peer;
};

int main(void)
{
    arena request;
    arena_init(&request, 1 << 20);
    arena_allocator from_request = arena_allocator_of(&request);

    for (int r = 1; r <= 2; r++) {
        arena_pool conns;
        if (!arena_pool_init(&conns, sizeof(struct conn), _Alignof(struct conn), 64, &from_request))
            return 1;
        arena scratch;
        arena_init_with(&scratch, 16384, &from_request);
        for (int i = 0; i < 3; i++) {
            struct conn *c = (struct conn *)arena_pool_alloc(&conns);
            if (!c)
                return 1;
            c->fd = 10 * r + i;
            c->peer = arena_sprintf(&scratch, "10.0.%d.%d:443", r, i);
            printf("request %d: conn fd %d to %s\n", r, c->fd, c->peer ? c->peer : "?");
        }
        printf("request %d: %zu slots live; the request arena holds %zu bytes\n", r,
               arena_pool_used(&conns), arena_size(&request));
        arena_release(&scratch);    /* its chunk goes back to `request` */
        arena_pool_destroy(&conns); /* the most recent value: given back too */
        printf("request %d: after both, the request arena holds %zu bytes\n", r,
               arena_size(&request));
        arena_reset(&request);
    }
    arena_release(&request);
    return 0;
}
