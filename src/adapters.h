/* SPDX-License-Identifier: MIT */
/*
 * The adapters' inline halves that the hooks (hooks.c) and the arena_cur_*
 * family (current.c) share.  Never installed.
 *
 * The adapters that free take and give back blocks as the reusing calls
 * do, told the sizes asked (arena_free.inc.c).  In a plain build a value of
 * at most ARENA__PAGE_BLOCK_MAX bytes is a page's block, a larger one a
 * block after a head.  The halves here and in reuse.h take or give back
 * such a block inline, with no call, where a block of its class is at hand.
 * Everything else (a page to carve, a block to split or merge, instrumented
 * builds, misuse) goes through the library's general path, which they agree
 * with.
 */
#ifndef ARENA_ADAPTERS_H
#define ARENA_ADAPTERS_H

#include <string.h>

#include "reuse.h"

/* arena_free(), out of line: the inline half saves no register for it. */
static ARENA__NOINLINE void arena__hook_free_general(arena *a, void *p, size_t n)
{
    arena_free(a, p, n);
}

/* Gives the value `p` of `n` bytes back: to its class inline where it is a
 * page's block or a block after a head of a class's size, else through
 * arena_free(). */
static ARENA__ALWAYS_INLINE void arena__hook_free(arena *a, void *p, size_t n)
{
    if (!p || n == 0)
        return;
    if (n <= ARENA__PAGE_BLOCK_MAX ? arena__small_give(a, (char *)p, n)
                                   : arena__headed_give(a, (char *)p, n))
        return;
    arena__hook_free_general(a, p, n);
}

/* A growth of a page's block, or of a block after a head not at the
 * position (neither grows in place), to a block at hand (of the class that
 * `how` places it in): taken, the bytes copied, the old block given back,
 * inline; NULL where there is none. */
static ARENA__ALWAYS_INLINE void *arena__hook_grow_fast(arena *a, char *p, size_t old_size,
                                                        size_t new_size, unsigned how)
{
    size_t held = old_size <= ARENA__PAGE_BLOCK_MAX ? arena__small_held(a, p, old_size)
                                                    : arena__headed_held(a, p, old_size);
    char *q;
    if (!held)
        return NULL;
    q = (char *)(new_size <= ARENA__PAGE_BLOCK_MAX
                     ? arena__small_take_in(a, new_size, arena__small_class_as(new_size, how))
                     : arena__headed_take(a, new_size));
    if (!q)
        return NULL;
    memcpy(q, p, old_size);
    if (old_size <= ARENA__PAGE_BLOCK_MAX)
        arena__small_put(a, p, old_size, held);
    else
        arena__headed_put(a, p, old_size, held);
    return q;
}

/* A shrink moves a value to a block of its new size where that frees a
 * block (arena__shrink_moving(), `how`); a growth is arena_realloc()'s. */
static void *arena__hook_resize(arena *a, void *p, size_t old_size, size_t new_size, unsigned how)
{
    void *q;
    if (new_size < old_size)
        return arena__shrink_moving(a, p, old_size, new_size, how);
    if (old_size && new_size > old_size && !(how & ARENA__PLACE_NO_PAGES) &&
        (q = arena__hook_grow_fast(a, (char *)p, old_size, new_size, how)) != NULL)
        return q;
    return arena__realloc_as(a, p, old_size, new_size, how);
}

#endif /* ARENA_ADAPTERS_H */
