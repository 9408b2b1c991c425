/* SPDX-License-Identifier: MIT */
/*
 * The backing allocator: every byte the library holds (arena chunks and
 * bookkeeping, pool storage, cache and shared-arena structs) comes from an
 * arena_allocator, or from the C library's heap when it has none.
 */
#include <stdlib.h>
#if defined(_WIN32)
#  include <malloc.h>
#endif

#include "internal.h"

/* The default backing: the C library's heap, with every block aligned to a
 * cache line (64 bytes) instead of malloc's 16.  A value at the start of a
 * chunk (the scratch block of an arena reset per scope, the first row of a
 * batch) then never straddles a line more than it must, which a wide memset
 * pays for (docs/fast-path.md).  Windows' C library has no aligned_alloc
 * (its free() cannot take such a block): it has _aligned_malloc, whose blocks
 * go back through _aligned_free. */
static void *heap_alloc(size_t n)
{
    if (n > SIZE_MAX - 63)
        return NULL;
    n = (n + 63) & ~(size_t)63;
#if defined(_WIN32)
    return _aligned_malloc(n, 64);
#else
    return aligned_alloc(64, n);
#endif
}

static void heap_free(void *p)
{
#if defined(_WIN32)
    _aligned_free(p);
#else
    free(p);
#endif
}

void *arena__back_alloc(const arena_allocator *b, size_t n)
{
    return b->alloc ? b->alloc(b->ctx, n) : heap_alloc(n);
}

void arena__back_free(const arena_allocator *b, void *p, size_t n)
{
    if (b->alloc)
        b->free(b->ctx, p, n);
    else
        heap_free(p);
}
