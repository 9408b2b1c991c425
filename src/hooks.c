/*
 * Adapters: an arena behind other libraries' allocator hooks (arena/hooks.h).
 *
 * The hooks with a context are one call into the arena.  Where a hook
 * frees with the size (Lua's, a realloc that moves, the arena_cur_* family,
 * arena_allocator_of()'s free), the block goes back through arena_free()
 * and the allocations take free blocks first (arena_alloc_reuse()), so a
 * client that frees inside a batch holds about what it uses.  In a plain
 * build the adapters ask for and give back sizes rounded up to the bound of
 * their size class (hook_size(): 16-byte steps below 256 bytes, at most
 * 12.5% above): a block given back is then exactly the block handed out,
 * and it fits the next value of its class with no search and no remainder,
 * so that churn of varied sizes neither loses bytes nor fragments.
 * Instrumented builds keep the exact sizes, so that a guard follows each
 * block's last byte (their reuse is first fit, and may hold more).
 *
 * The global family (arena_cur_*) serves libraries whose hooks have neither
 * a context nor the old size: the arena comes from a thread-local pointer,
 * and each block carries a header,
 *
 *     [size][key][check: checked build][pad to ARENA_ALIGN][block ...]
 *
 * `key` is the block's owner (the arena it came from, NULL for the C heap)
 * mixed with the size and a constant.  The owner is only ever compared with
 * the current arena, never dereferenced: a block from an arena that is not
 * current may belong to another thread, or to an arena already gone.  An arena
 * pointer is aligned, so a key that decodes to an unaligned owner is not a
 * header (a foreign pointer, or an overwritten header): one AND catches most
 * such misuse in every build; the checked build adds a check word that catches
 * all but a forged header.  A freed block's header decodes to
 * ARENA__FREED_OWNER, whether written so by the free or overwritten by the
 * free block's node (internal.h), so a second free is told apart.  Under
 * ASan the header is poisoned while the block is live, so a write before
 * the block is reported, and a freed block is poisoned whole.
 *
 * Costs: arena_cur_malloc is a thread-local load, a test of the arena's
 * free blocks, arena_alloc() and two stores; free is a header check and
 * arena_free().
 */
#include <stdlib.h>
#include <string.h>

#include "arena/hooks.h"
#include "reuse.h"

/* ---- Hooks with a context ------------------------------------------------------------ */

/* The size an adapter that also frees asks for and gives back (see the top
 * of this file); SIZE_MAX, which no allocation gets, when it cannot be
 * rounded. */
static size_t hook_size(size_t n)
{
    if (arena__instrumented())
        return n;
    if (n == 0) /* a block of no bytes (arena_hook_realloc()'s shrink to nothing) */
        return 0;
    if (n <= 240) /* the classes of 16-byte steps */
        return n <= 16 ? 16 : (n + 15) & ~(size_t)15;
    return n > SIZE_MAX / 2 ? SIZE_MAX : arena__reuse_round(n);
}

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

/* The adapters' blocks through arena_alloc_reuse(), arena_free() and
 * arena_realloc() at their hook_size(); arena_size() still counts the sizes
 * asked (the counter's arithmetic is modular, so the correction may come
 * before or after the bytes it corrects).
 *
 * A plain build whose lists are valid first tries the fast path: a block of
 * exactly its class's size taken from (or given to) the head of its list,
 * with the arena's counter adjusted in place.  Everything else (the most
 * recent value, a class whose head is another size, no free block, the
 * first block given back, instrumented builds) goes through the library's
 * general path, which the fast path agrees with. */
static bool fast(const arena *a)
{
    return !arena__instrumented() &&
           (a->pending & (ARENA__PENDING_REUSE | ARENA__PENDING_OVER)) == ARENA__PENDING_REUSE;
}

static void *hook_alloc(arena *a, size_t n)
{
    size_t r = hook_size(n);
    void *p;
    if (fast(a) && r != SIZE_MAX && (p = arena__reuse_pop(a, r)) != NULL) {
        a->size += n;
        arena__cold(a)->counts.reused += n;
        arena__note_stored(a);
        return p;
    }
    p = arena_alloc_reuse(a, r);
    if (p)
        a->size -= r - n;
    return p;
}

/* Whether `p` of `r` bytes ends where the inline window starts: the arena's
 * most recent value, which goes back to the position. */
static bool ends_at_window(const arena *a, const void *p, size_t r)
{
    return a->ptr && (uintptr_t)p + r == (uintptr_t)a->ptr;
}

static void hook_free(arena *a, void *p, size_t n)
{
    size_t r = hook_size(n);
    if (!p || n == 0)
        return;
    if (fast(a) && !ends_at_window(a, p, r)) {
        arena__reuse_push(a, (char *)p, r);
        a->size -= n;
        return;
    }
    arena_free(a, p, r);
    a->size += r - n;
}

static void *hook_resize(arena *a, void *p, size_t old_size, size_t new_size)
{
    size_t r = hook_size(old_size), s = hook_size(new_size);
    void *q;
    if (r == s) { /* the block holds both */
        a->size += new_size - old_size;
        return p;
    }
    if (fast(a) && s != SIZE_MAX && !ends_at_window(a, p, r) &&
        (q = arena__reuse_pop(a, s)) != NULL) {
        memcpy(q, p, r < s ? r : s);
        arena__reuse_push(a, (char *)p, r);
        a->size += new_size - old_size;
        arena__cold(a)->counts.reused += new_size;
        arena__note_stored(a);
        return q;
    }
    q = s < r ? arena__shrink_moving(a, p, r, s) : arena_realloc(a, p, r, s);
    if (q)
        a->size += (r - old_size) - (s - new_size);
    return q;
}

void *arena_hook_lua(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    arena *a = (arena *)arena_ctx;
    if (new_size == 0) {
        hook_free(a, ptr, old_size);
        return NULL;
    }
    if (!ptr)
        return hook_alloc(a, new_size);
    return hook_resize(a, ptr, old_size, new_size);
}

void *arena_hook_realloc(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    arena *a = (arena *)arena_ctx;
    if (!ptr)
        return hook_alloc(a, new_size);
    return hook_resize(a, ptr, old_size, new_size);
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
    p = (char *)hook_alloc(a, size + ARENA_ALIGN);
    return p ? p + ARENA_ALIGN : NULL;
}

void arena__nested_free(arena *a, void *ptr, size_t size)
{
    hook_free(a, (char *)ptr - ARENA_ALIGN, size + ARENA_ALIGN);
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
    al.alloc = backing_alloc;
    al.free = backing_free;
    al.ctx = a;
    return al;
}

/* ---- The current arena ------------------------------------------------------------------ */

static ARENA__TLS arena *current;

arena *arena_set_current(arena *a)
{
    arena *prev = current;
    current = a;
    return prev;
}

arena *arena_current(void) { return current; }

arena *arena_current_begin(arena *a) { return arena_set_current(a); }

void arena_current_end(arena *prev) { current = prev; }

void arena__current_restore(arena **prev) { current = *prev; }

/* ---- The block header ------------------------------------------------------------------- */

struct cur_header {
    size_t size;   /* usable bytes, as asked */
    uintptr_t key; /* owner ^ size ^ KEY_MIX; owner NULL: the C heap */
#if ARENA_CHECKED
    uintptr_t check; /* key ^ CHECK_MIX */
#endif
};

/* Bytes before each block: the header rounded up to ARENA_ALIGN. */
#define CUR_HDR ((sizeof(struct cur_header) + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1))

/* Odd in the low bits, so that a zeroed or copied-over header fails the
 * alignment test; the rest is arbitrary. */
#define KEY_MIX   ARENA__KEY_MIX
#define CHECK_MIX ((uintptr_t)UINT64_C(0xC2B2AE3D27D4EB4F))

/* Low bits every arena pointer has clear. */
#define OWNER_MASK ((uintptr_t)ARENA__ALIGNOF(arena) - 1)

/* The largest block: no object may exceed PTRDIFF_MAX bytes, header included. */
#define BLOCK_MAX ((size_t)PTRDIFF_MAX - CUR_HDR)

enum origin {
    FOREIGN, /* not a header of this family */
    FREED,   /* a block of this family freed already */
    HEAP,    /* the C heap */
    MINE,    /* the current arena */
    OTHER    /* an arena that is not current */
};

/* Writes the header of a block of `size` bytes at `h` from `owner` (NULL:
 * heap) and closes it; returns the block. */
static void *stamp(char *h, size_t size, const arena *owner)
{
    struct cur_header *hd = (struct cur_header *)(void *)h;
    hd->size = size;
    hd->key = (uintptr_t)owner ^ size ^ KEY_MIX;
#if ARENA_CHECKED
    hd->check = hd->key ^ CHECK_MIX;
#endif
    arena__poison(h, CUR_HDR);
    return h + CUR_HDR;
}

/* Where the block whose header is at `h` came from; its size goes to *size. */
ARENA__NO_ASAN static enum origin inspect(const char *h, size_t *size)
{
    const struct cur_header *hd = (const struct cur_header *)(const void *)h;
    uintptr_t owner = hd->key ^ hd->size ^ KEY_MIX;
    const uintptr_t clobbered = (uintptr_t)UINT64_C(0x0101010101010101) * ARENA__CLOBBER;

    /* The checked build clobbers a freed block whole, header included. */
    if (ARENA_CHECKED && hd->key == clobbered && hd->size == (size_t)clobbered)
        return FREED;
#if ARENA_CHECKED
    if (hd->check != (hd->key ^ CHECK_MIX))
        return FOREIGN;
#endif
    if ((owner & OWNER_MASK) == ARENA__FREED_OWNER)
        return FREED;
    if ((owner & OWNER_MASK) != 0 || hd->size > BLOCK_MAX)
        return FOREIGN;
    *size = hd->size;
    if (owner == 0)
        return HEAP;
    return owner == (uintptr_t)current ? MINE : OTHER;
}

/* Reports a pointer a call of this family cannot take. */
static void misused(const char *fn, const void *ptr, enum origin o)
{
    if (o == FREED)
        arena__report(ARENA_ERR_DOUBLE_FREE, "%s: the block at %p was freed already", fn, ptr);
    else
        arena__report(ARENA_ERR_FOREIGN_POINTER,
                      "%s: %p was not allocated by arena_cur_malloc/calloc/realloc, or the "
                      "header before it was overwritten",
                      fn, ptr);
}

/* ---- The global family ------------------------------------------------------------------- */

void *arena_cur_malloc(size_t size)
{
    arena *a = current;
    char *h;
    if (size > BLOCK_MAX)
        return NULL;
    h = a ? (char *)hook_alloc(a, CUR_HDR + size) : (char *)malloc(CUR_HDR + size);
    return h ? stamp(h, size, a) : NULL;
}

void *arena_cur_calloc(size_t count, size_t size)
{
    size_t n;
    void *p;
    if (ARENA__MUL_OVERFLOWS(count, size, &n))
        return NULL;
    p = arena_cur_malloc(n);
    return p ? memset(p, 0, n) : NULL;
}

char *arena_cur_strdup(const char *s)
{
    size_t n = strlen(s);
    char *p = (char *)arena_cur_malloc(n + 1);
    return p ? (char *)memcpy(p, s, n + 1) : NULL;
}

/* Marks the block whose header is at `h` freed (its header poisoned again). */
static void mark_freed(char *h, size_t size)
{
    arena__unpoison(h, CUR_HDR);
    stamp(h, size, (const arena *)ARENA__FREED_OWNER);
}

/* A block the program gave up that stays in its arena (one that is not
 * current) until the batch ends: marked freed and closed whole, so that a
 * use after free or after realloc is reported. */
static void give_up(char *h, size_t size)
{
    mark_freed(h, size);
    arena__poison(h, CUR_HDR + size);
}

void arena_cur_free(void *ptr)
{
    size_t size = 0;
    char *h;
    enum origin o;
    if (!ptr)
        return;
    h = (char *)ptr - CUR_HDR;
    switch (o = inspect(h, &size)) {
    case FOREIGN:
    case FREED: misused("arena_cur_free", ptr, o); return;
    case HEAP:
        arena__unpoison(h, CUR_HDR);
        free(h);
        return;
    case MINE:
        /* Marked freed for the builds whose node does not overwrite it. */
        mark_freed(h, size);
        arena__unpoison(h, CUR_HDR);
        hook_free(current, h, CUR_HDR + size);
        return;
    case OTHER: give_up(h, size); return;
    }
}

/* realloc of a block of the current arena: arena_realloc() moves the header
 * with the bytes, and gives the old block back when it moves it. */
static void *resize_mine(char *h, size_t old_size, size_t size)
{
    char *q;
    arena__unpoison(h, CUR_HDR);
    q = (char *)hook_resize(current, h, CUR_HDR + old_size, CUR_HDR + size);
    if (!q) {
        arena__poison(h, CUR_HDR);
        return NULL;
    }
    return stamp(q, size, current);
}

/* realloc of a block of an arena that is not current: a copy on the heap. */
static void *move_to_heap(char *h, size_t old_size, size_t size)
{
    char *q = (char *)malloc(CUR_HDR + size);
    if (!q)
        return NULL;
    memcpy(q + CUR_HDR, h + CUR_HDR, old_size < size ? old_size : size);
    give_up(h, old_size);
    return stamp(q, size, NULL);
}

void *arena_cur_realloc(void *ptr, size_t size)
{
    size_t old_size = 0;
    char *h, *q;
    enum origin o;
    if (!ptr)
        return arena_cur_malloc(size);
    h = (char *)ptr - CUR_HDR;
    switch (o = inspect(h, &old_size)) {
    case FOREIGN:
    case FREED: misused("arena_cur_realloc", ptr, o); return NULL;
    case HEAP:
        if (size > BLOCK_MAX)
            return NULL;
        arena__unpoison(h, CUR_HDR);
        q = (char *)realloc(h, CUR_HDR + size);
        if (!q) {
            arena__poison(h, CUR_HDR);
            return NULL;
        }
        return stamp(q, size, NULL);
    case MINE: return size > BLOCK_MAX ? NULL : resize_mine(h, old_size, size);
    case OTHER: return size > BLOCK_MAX ? NULL : move_to_heap(h, old_size, size);
    }
    return NULL;
}

size_t arena_cur_size(const void *ptr)
{
    size_t size = 0;
    if (!ptr)
        return 0;
    enum origin o = inspect((const char *)ptr - CUR_HDR, &size);
    if (o == FOREIGN || o == FREED) {
        misused("arena_cur_size", ptr, o);
        return 0;
    }
    return size;
}
