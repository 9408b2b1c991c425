/*
 * Adapters: an arena behind other libraries' allocator hooks (arena/hooks.h),
 * and free-last (arena_free).
 *
 * The hooks with a context are one call into the arena's inline paths.  The
 * global family (arena_cur_*) serves libraries whose hooks have neither a
 * context nor the old size: the arena comes from a thread-local pointer, and
 * each block carries a header,
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
 * all but a forged header.  Under ASan the header is poisoned while the block
 * is live, so a write before the block is reported, and a block given up to
 * its batch (freed but not the most recent, or moved by realloc) is poisoned
 * whole.
 *
 * Costs: the context hooks are arena_alloc() plus a call; arena_cur_malloc is
 * a thread-local load, arena_alloc() and two stores; free is a header check
 * and, for the most recent block only, a call to arena_realloc().
 */
#include <stdlib.h>
#include <string.h>

#include "arena/hooks.h"
#include "internal.h"

/* ---- Free-last -------------------------------------------------------------------- */

void arena_free(arena *a, void *ptr, size_t size)
{
    void *kept;
    /* While the inline window is open its position is where the most recent
     * value ends, so a value that ends anywhere else is not the most recent:
     * the common case of a library freeing an old block costs no call. */
    if (!ptr || (a->ptr && (uintptr_t)ptr + size != (uintptr_t)a->ptr))
        return;
    kept = arena_realloc(a, ptr, size, 0);
    (void)kept;
}

/* ---- Hooks with a context ------------------------------------------------------------ */

void *arena_hook_alloc(void *arena_ctx, size_t size)
{
    return arena_alloc((arena *)arena_ctx, size);
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
    return arena_alloc((arena *)arena_ctx, n);
}

void *arena_hook_lua(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    arena *a = (arena *)arena_ctx;
    if (new_size == 0) {
        arena_free(a, ptr, old_size);
        return NULL;
    }
    if (!ptr)
        return arena_alloc(a, new_size);
    return arena_realloc(a, ptr, old_size, new_size);
}

void *arena_hook_realloc(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    arena *a = (arena *)arena_ctx;
    if (!ptr)
        return arena_alloc(a, new_size);
    return arena_realloc(a, ptr, old_size, new_size);
}

/* The backing blocks of arena_allocator_of() start ARENA_ALIGN bytes into a
 * value of `a`: a nested arena's chunk then never starts where one of `a`'s
 * own chunks starts, which Valgrind needs (both arenas describe their chunks
 * as mempools, named by their start address). */
static void *backing_alloc(void *arena_ctx, size_t size)
{
    char *p;
    if (size > SIZE_MAX - ARENA_ALIGN)
        return NULL;
    p = (char *)arena_alloc((arena *)arena_ctx, size + ARENA_ALIGN);
    return p ? p + ARENA_ALIGN : NULL;
}

static void backing_free(void *arena_ctx, void *ptr, size_t size)
{
    arena_free((arena *)arena_ctx, (char *)ptr - ARENA_ALIGN, size + ARENA_ALIGN);
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

/* ---- The block header ------------------------------------------------------------------- */

struct header {
    size_t size;   /* usable bytes, as asked */
    uintptr_t key; /* owner ^ size ^ KEY_MIX; owner NULL: the C heap */
#if ARENA_CHECKED
    uintptr_t check; /* key ^ CHECK_MIX */
#endif
};

/* Bytes before each block: the header rounded up to ARENA_ALIGN. */
#define HDR ((sizeof(struct header) + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1))

/* Odd in the low bits, so that a zeroed or copied-over header fails the
 * alignment test; the rest is arbitrary. */
#define KEY_MIX ((uintptr_t)UINT64_C(0x9E3779B97F4A7C15))
#define CHECK_MIX ((uintptr_t)UINT64_C(0xC2B2AE3D27D4EB4F))

/* Low bits every arena pointer has clear. */
#define OWNER_MASK ((uintptr_t)ARENA__ALIGNOF(arena) - 1)

/* The largest block: no object may exceed PTRDIFF_MAX bytes, header included. */
#define BLOCK_MAX ((size_t)PTRDIFF_MAX - HDR)

enum origin {
    FOREIGN, /* not a header of this family */
    HEAP,    /* the C heap */
    MINE,    /* the current arena */
    OTHER    /* an arena that is not current */
};

/* Writes the header of a block of `size` bytes at `h` from `owner` (NULL:
 * heap) and closes it; returns the block. */
static void *stamp(char *h, size_t size, const arena *owner)
{
    struct header *hd = (struct header *)(void *)h;
    hd->size = size;
    hd->key = (uintptr_t)owner ^ size ^ KEY_MIX;
#if ARENA_CHECKED
    hd->check = hd->key ^ CHECK_MIX;
#endif
    arena__poison(h, HDR);
    return h + HDR;
}

/* Where the block whose header is at `h` came from; its size goes to *size. */
ARENA__NO_ASAN static enum origin inspect(const char *h, size_t *size)
{
    const struct header *hd = (const struct header *)(const void *)h;
    uintptr_t owner = hd->key ^ hd->size ^ KEY_MIX;

#if ARENA_CHECKED
    if (hd->check != (hd->key ^ CHECK_MIX))
        return FOREIGN;
#endif
    if ((owner & OWNER_MASK) != 0 || hd->size > BLOCK_MAX)
        return FOREIGN;
    *size = hd->size;
    if (owner == 0)
        return HEAP;
    return owner == (uintptr_t)current ? MINE : OTHER;
}

static void foreign(const char *fn, const void *ptr)
{
    arena__report(ARENA_ERR_FOREIGN_POINTER,
                  "%s: %p was not allocated by arena_cur_malloc/calloc/realloc, or the header "
                  "before it was overwritten",
                  fn, ptr);
}


/* ---- The global family ------------------------------------------------------------------- */

void *arena_cur_malloc(size_t size)
{
    arena *a = current;
    char *h;
    if (size > BLOCK_MAX)
        return NULL;
    h = a ? (char *)arena_alloc(a, HDR + size) : (char *)malloc(HDR + size);
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

/* A block the program gave up that stays in its arena until the batch ends:
 * closed whole, so that a use after free or after realloc is reported. */
static void give_up(const char *h, size_t size) { arena__poison(h, HDR + size); }

void arena_cur_free(void *ptr)
{
    size_t size = 0;
    char *h;
    if (!ptr)
        return;
    h = (char *)ptr - HDR;
    switch (inspect(h, &size)) {
    case FOREIGN:
        foreign("arena_cur_free", ptr);
        return;
    case HEAP:
        arena__unpoison(h, HDR);
        free(h);
        return;
    case MINE:
        give_up(h, size);
        arena_free(current, h, HDR + size);
        return;
    case OTHER:
        give_up(h, size);
        return;
    }
}

/* realloc of a block of the current arena. */
static void *resize_mine(char *h, size_t old_size, size_t size)
{
    char *q;
    /* arena_realloc copies the header with the bytes when it moves the block. */
    arena__unpoison(h, HDR);
    q = (char *)arena_realloc(current, h, HDR + old_size, HDR + size);
    if (!q) {
        arena__poison(h, HDR);
        return NULL;
    }
    if (q != h)
        give_up(h, old_size);
    else if (size < old_size) /* kept where it was: the tail is gone */
        arena__poison(h + HDR + size, old_size - size);
    return stamp(q, size, current);
}

/* realloc of a block of an arena that is not current: a copy on the heap. */
static void *move_to_heap(char *h, size_t old_size, size_t size)
{
    char *q = (char *)malloc(HDR + size);
    if (!q)
        return NULL;
    memcpy(q + HDR, h + HDR, old_size < size ? old_size : size);
    give_up(h, old_size);
    return stamp(q, size, NULL);
}

void *arena_cur_realloc(void *ptr, size_t size)
{
    size_t old_size = 0;
    char *h, *q;
    if (!ptr)
        return arena_cur_malloc(size);
    h = (char *)ptr - HDR;
    switch (inspect(h, &old_size)) {
    case FOREIGN:
        foreign("arena_cur_realloc", ptr);
        return NULL;
    case HEAP:
        if (size > BLOCK_MAX)
            return NULL;
        arena__unpoison(h, HDR);
        q = (char *)realloc(h, HDR + size);
        if (!q) {
            arena__poison(h, HDR);
            return NULL;
        }
        return stamp(q, size, NULL);
    case MINE:
        return size > BLOCK_MAX ? NULL : resize_mine(h, old_size, size);
    case OTHER:
        return size > BLOCK_MAX ? NULL : move_to_heap(h, old_size, size);
    }
    return NULL;
}

size_t arena_cur_size(const void *ptr)
{
    size_t size = 0;
    if (!ptr)
        return 0;
    if (inspect((const char *)ptr - HDR, &size) == FOREIGN) {
        foreign("arena_cur_size", ptr);
        return 0;
    }
    return size;
}
