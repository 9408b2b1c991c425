/* SPDX-License-Identifier: MIT */
/*
 * Adapters: an arena behind other libraries' allocator hooks (arena/hooks.h),
 * and behind an arena_allocator (arena_allocator_of()).
 *
 * The hooks with a context are one call into the arena.  Where a hook
 * frees with the size (Lua's, a realloc that moves, arena_allocator_of()'s
 * free, and the arena_cur_* family's: current.c), the block goes back
 * through arena_free() and the allocations take free blocks first
 * (arena__reuse_alloc()), so a client that frees inside a batch holds about
 * what it uses.  Sizes follow the arena's one rule: a value holds the bytes
 * asked, and any call told a size may give it back or resize it
 * (src/arena_free.inc.c).
 */
#include "arena/hooks.h"
#include "adapters.h"

/* ---- Hooks with a context ------------------------------------------------------------ */

void *arena_hook_alloc(void *arena_ctx, size_t size)
{
    return arena_alloc_reuse((arena *)arena_ctx, size);
}

void arena_hook_free(void *arena_ctx, void *ptr)
{
    (void)arena_ctx;
    (void)ptr;
}

void *arena_hook_zalloc(void *arena_ctx, unsigned items, unsigned size)
{
    size_t n;
    /* A 32-bit size_t cannot hold every product of two unsigned. */
    if (ARENA__MUL_OVERFLOWS((size_t)items, (size_t)size, &n))
        return NULL;
    return arena_alloc_reuse((arena *)arena_ctx, n);
}

/* arena__reuse_alloc_as(), out of line: the inline half saves no register
 * for it. */
static ARENA__NOINLINE void *hook_alloc_general(arena *a, size_t n, unsigned how)
{
    return arena__reuse_alloc_as(a, n, how);
}

/* A value of `n` bytes for an adapter, placed as `how` says (0, or
 * ARENA__PLACE_ALIGN8): taken inline where a block of its class is at hand
 * (reuse.h), else through the general path. */
static ARENA__ALWAYS_INLINE void *hook_alloc(arena *a, size_t n, unsigned how)
{
    void *p;
    if (n && n <= ARENA__PAGE_BLOCK_MAX
            ? (p = arena__small_take_in(a, n, arena__small_class_as(n, how))) != NULL
            : n && (p = arena__headed_take(a, n)) != NULL)
        return p;
    return hook_alloc_general(a, n, how);
}

/* The hooks that take every kind of call pass each kind on to a function of
 * its own, as a tail call (a jump): each then saves only the registers its
 * own path needs, where one body holding all three paths saved five on
 * every call. */
static ARENA__NOINLINE void *alloc_call(arena *a, size_t n) { return hook_alloc(a, n, 0); }

static ARENA__NOINLINE void *alloc_align8_call(arena *a, size_t n)
{
    return hook_alloc(a, n, ARENA__PLACE_ALIGN8);
}

static ARENA__NOINLINE void *free_call(arena *a, void *p, size_t n)
{
    arena__hook_free(a, p, n);
    return NULL;
}

/* Lua's protocol, placed as `how` says: a free, a new block, a resize. */
static ARENA__ALWAYS_INLINE void *lua_call(arena *a, void *ptr, size_t old_size, size_t new_size,
                                           unsigned how)
{
    if (new_size == 0)
        return free_call(a, ptr, old_size);
    if (!ptr)
        return how ? alloc_align8_call(a, new_size) : alloc_call(a, new_size);
    return arena__hook_resize(a, ptr, old_size, new_size, how);
}

void *arena_hook_lua(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    return lua_call((arena *)arena_ctx, ptr, old_size, new_size, 0);
}

void *arena_hook_lua_align8(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    return lua_call((arena *)arena_ctx, ptr, old_size, new_size, ARENA__PLACE_ALIGN8);
}

void *arena_hook_realloc(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    arena *a = (arena *)arena_ctx;
    if (!ptr)
        return alloc_call(a, new_size);
    return arena__hook_resize(a, ptr, old_size, new_size, 0);
}

/* The backing blocks of arena_allocator_of() start ARENA_ALIGN bytes into a
 * value of `a`: a nested arena's chunk then never starts where one of `a`'s
 * own chunks starts, which Valgrind needs (both arenas describe their chunks
 * as mempools, named by their start address). */
void *arena__nested_alloc(arena *a, size_t size)
{
    char *p;
    if (size > SIZE_MAX - ARENA_ALIGN)
        return NULL;
    p = (char *)hook_alloc(a, size + ARENA_ALIGN, 0);
    return p ? p + ARENA_ALIGN : NULL;
}

void arena__nested_free(arena *a, void *ptr, size_t size)
{
    arena__hook_free(a, (char *)ptr - ARENA_ALIGN, size + ARENA_ALIGN);
}

static void *backing_alloc(void *arena_ctx, size_t size)
{
    return arena__nested_alloc((arena *)arena_ctx, size);
}

static void backing_free(void *arena_ctx, void *ptr, size_t size)
{
    arena__nested_free((arena *)arena_ctx, ptr, size);
}

arena_allocator arena_allocator_of(arena *a)
{
    arena_allocator al;
    arena__ask_valgrind(); /* the hooks decide their layout before they call the arena */
    al.alloc = backing_alloc;
    al.free = backing_free;
    al.ctx = a;
    return al;
}
