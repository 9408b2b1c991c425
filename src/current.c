/* SPDX-License-Identifier: MIT */
/*
 * The current arena and the arena_cur_* family (arena/hooks.h).
 *
 * The family serves libraries whose hooks have neither a context nor the
 * old size: the arena comes from a thread-local pointer, and each block
 * carries a header,
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
 * free block's node (reuse.h), so a second free is told apart.  Under
 * ASan the header is poisoned while the block is live, so a write before
 * the block is reported, and a freed block is poisoned whole.  A small
 * block of a plain build has no header: it is a page's (pages.h).
 *
 * The family's blocks go back and are taken as the hooks' are (hooks.c,
 * adapters.h), told the sizes the headers and the pages record.
 *
 * Costs: arena_cur_malloc is a thread-local load, a test of the arena's
 * free blocks, arena_alloc() and two stores; free is a header check and
 * arena_free().
 */
#include <stdlib.h>
#include <string.h>

#include "arena/hooks.h"
#include "adapters.h"

/* ---- The current arena ------------------------------------------------------------------ */

static ARENA__TLS arena *current;

arena *arena_set_current(arena *a)
{
    arena *prev = current;
    arena__ask_valgrind(); /* the family decides its layout before it calls the arena */
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

/* The bytes a block of `size` bytes with a header takes: at least a byte
 * after the header, so that the page its address lies in is mapped
 * (arena__page_of() reads that page's start). */
static size_t headed(size_t size) { return CUR_HDR + (size ? size : 1); }

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

/* The header at `h`, field by field (ASan poisons it: no memcpy, which ASan
 * would check). */
ARENA__NO_ASAN static void read_header(const char *h, struct cur_header *to)
{
    const struct cur_header *hd = (const struct cur_header *)(const void *)h;
    to->size = hd->size;
    to->key = hd->key;
#if ARENA_CHECKED
    to->check = hd->check;
#endif
}

/* Where the block whose header is at `h` came from; its size goes to *size. */
ARENA__NO_ASAN static enum origin inspect(const char *h, size_t *size)
{
    struct cur_header copy;
    uintptr_t owner;
    const uintptr_t clobbered = (uintptr_t)UINT64_C(0x0101010101010101) * ARENA__CLOBBER;
    unsigned char vbits[sizeof copy];

    /* No block's header is misaligned: such a pointer is no block's, and
     * reading it as a header would be undefined (a bus error where loads
     * must be aligned). */
    if ((uintptr_t)h % ARENA__ALIGNOF(struct cur_header) != 0)
        return FOREIGN;
    /* Under Valgrind, a freed block given back for reuse is closed whole,
     * header included: read it as it is, and leave it closed. */
    if (ARENA__VALGRIND && VALGRIND_GET_VBITS(h, vbits, sizeof copy) == 3) {
        VALGRIND_MAKE_MEM_DEFINED(h, sizeof copy);
        read_header(h, &copy);
        VALGRIND_MAKE_MEM_NOACCESS(h, sizeof copy);
    } else {
        read_header(h, &copy);
    }
    owner = copy.key ^ copy.size ^ KEY_MIX;

    /* The checked build clobbers a freed block whole, header included. */
    if (ARENA_CHECKED && copy.key == clobbered && copy.size == (size_t)clobbered)
        return FREED;
#if ARENA_CHECKED
    if (copy.check != (copy.key ^ CHECK_MIX))
        return FOREIGN;
#endif
    if ((owner & OWNER_MASK) == ARENA__FREED_OWNER)
        return FREED;
    if ((owner & OWNER_MASK) != 0 || copy.size > BLOCK_MAX)
        return FOREIGN;
    *size = copy.size;
    if (owner == 0)
        return HEAP;
    return owner == (uintptr_t)current ? MINE : OTHER;
}

/* Reports a pointer a call of this family cannot take. */
static void misused(const char *fn, const void *ptr, enum origin o)
{
    if (o == FREED)
        arena__report(ARENA__ABOUT_ARENA(current), ARENA_ERR_DOUBLE_FREE,
                      "%s: the block at %p was freed already", fn, ptr);
    else
        arena__report(ARENA__ABOUT_ARENA(current), ARENA_ERR_FOREIGN_POINTER,
                      "%s: %p was not allocated by arena_cur_malloc/calloc/realloc, or the "
                      "header before it was overwritten",
                      fn, ptr);
}

/* ---- Pages: the family's small blocks without a header ------------------------------------
 *
 * In a plain build a block of at most ARENA__PAGE_BLOCK_MAX bytes from an
 * arena has no header: it lies in a page of blocks of its class (pages.h).
 * A block of the C heap or with a header is told apart by its failing the
 * page test. */

/* The class of a block of `block` bytes' page state in `a`, `a`'s pages
 * being live. */
static struct arena__page_class *page_class(arena *a, size_t block)
{
    return &arena__pages_live(a)->cls[arena__page_class_at(block)];
}

/* What the block `p` of a page is: FOREIGN (not a block's start), FREED,
 * MINE or OTHER.  An 8-byte block's free bit shares a byte with its
 * neighbours', which the owner's thread may be writing: another arena's
 * tells nothing. */
static ARENA__ALWAYS_INLINE enum origin page_origin(const char *p, uintptr_t page,
                                                    const arena *owner, size_t block)
{
    if (!arena__page_on_boundary(p, page, block))
        return FOREIGN;
    if (block == ARENA__TINY && owner != current)
        return OTHER;
    if (arena__page_is_freed(p, block))
        return FREED;
    return owner == current ? MINE : OTHER;
}

/* Marks the block `p` of another arena's page freed, so that a second free
 * is reported: in its own bytes, which the program gave up; an 8-byte block
 * has no room (its arena's bits are not touched). */
static void give_up_paged(char *p, size_t block)
{
    if (block != ARENA__TINY)
        arena__page_set_freed(p, block, true);
}

/* Gives the block `b` of `block` bytes (a block of `a`'s pages) back to its
 * class's list. */
static ARENA__ALWAYS_INLINE void page_free(arena *a, char *b, size_t block)
{
    /* A live page of `a` keeps its lists valid (reuse.c: revive()). */
    arena__page_give(page_class(a, block), b, block);
    arena__cold(a)->reuse->page_frees++; /* its page may be free whole: see reuse.c */
    a->size -= block;
}

/* ---- The global family ------------------------------------------------------------------- */

/* arena_cur_malloc() of a block with a header: from the arena `a`, or the
 * heap when it is NULL. */
static ARENA__NOINLINE void *cur_malloc(arena *a, size_t size)
{
    char *h;
    if (size > BLOCK_MAX)
        return NULL;
    h = a ? (char *)arena__reuse_alloc_as(a, headed(size), ARENA__PLACE_NO_PAGES)
          : (char *)malloc(headed(size));
    return h ? stamp(h, size, a) : NULL;
}

/* A block of class `c` of the current arena's pages, counted at its
 * class's size; NULL when take found none at once. */
static ARENA__ALWAYS_INLINE void *cur_take(arena *a, struct arena__pages *pg, unsigned c)
{
    bool reused;
    char *b = arena__page_take(&pg->cls[c], c, &reused);
    if (b) {
        size_t block = arena__page_block(c);
        a->size += block;
        if (reused)
            arena__cold(a)->counts.reused += block;
    }
    return b;
}

/* arena_cur_malloc() of a block of pages where cur_take() found none at
 * once: after arena__page_refill(), it hands out a block.  An arena that
 * only the inline paths have touched (arena_init_buffer() without a
 * backing: lazy) has not written its bookkeeping, where the pages' state
 * would be: it keeps no table anyway (a fixed-size arena), and its blocks
 * take headers. */
static ARENA__NOINLINE void *cur_malloc_paged(arena *a, size_t size)
{
    unsigned c = arena__page_class_of(size);
    struct arena__pages *pg;
    int grow;
    /* Pages whose blocks are all free are recycled before one is carved:
     * a page from memory given back, else a free block (the block with a
     * header), before a page of new memory, as arena_alloc_reuse() does. */
    if (!a->lazy && (pg = arena__pages_of(a)) != NULL && pg->cls[c].next == pg->cls[c].end)
        arena__pages_tidy(a);
    for (grow = 0; grow < 2; grow++) {
        while (!a->lazy && (pg = arena__pages_of(a)) != NULL &&
               arena__page_refill(a, pg, c, grow, "arena_cur_malloc")) {
            void *p = cur_take(a, pg, c);
            if (p)
                return p;
        }
        if (!grow) {
            char *h = (char *)arena__reuse_alloc_listed(a, headed(size));
            if (h)
                return stamp(h, size, a);
        }
    }
    return cur_malloc(a, size);
}

void *arena_cur_malloc(size_t size)
{
    arena *a = current;
    /* The block of a class's list or page: no call, so no saved register
     * (the loop that readies a page is out of line). */
    if (a && size <= ARENA__PAGE_BLOCK_MAX && arena__paging()) {
        struct arena__pages *pg = arena__pages_live(a);
        void *p;
        if (ARENA__LIKELY(pg != NULL) && (p = cur_take(a, pg, arena__page_class_of(size))) != NULL)
            return p;
        return cur_malloc_paged(a, size);
    }
    return cur_malloc(a, size);
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
    arena__poison(h, headed(size));
}

/* The page test of a pointer given to this family: the page it lies in, or
 * 0 (a block with a header, or not the family's). */
static uintptr_t paged(const void *ptr, const arena **owner, size_t *block)
{
    return arena__paging() ? arena__page_of(ptr, owner, block) : 0;
}

void arena_cur_free(void *ptr)
{
    size_t size = 0;
    const arena *owner;
    uintptr_t page;
    char *h;
    enum origin o;
    if (!ptr)
        return;
    if ((page = paged(ptr, &owner, &size)) != 0) {
        switch (o = page_origin((char *)ptr, page, owner, size)) {
        case MINE:
            arena__note_high(current);
            page_free(current, (char *)ptr, size);
            return;
        case OTHER: give_up_paged((char *)ptr, size); return;
        default: misused("arena_cur_free", ptr, o); return;
        }
    }
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
        arena__hook_free(current, h, headed(size));
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
    q = (char *)arena__hook_resize(current, h, headed(old_size), headed(size),
                                   ARENA__PLACE_NO_PAGES);
    if (!q) {
        arena__poison(h, CUR_HDR);
        return NULL;
    }
    return stamp(q, size, current);
}

/* A heap block of `size` bytes holding the first bytes of `src` (`have`
 * bytes long); NULL on out-of-memory. */
static void *heap_copy(const char *src, size_t have, size_t size)
{
    char *q = (char *)malloc(headed(size));
    if (!q)
        return NULL;
    memcpy(q + CUR_HDR, src, have < size ? have : size);
    return stamp(q, size, NULL);
}

/* realloc of a block of an arena that is not current: a copy on the heap. */
static void *move_to_heap(char *h, size_t old_size, size_t size)
{
    void *q = heap_copy(h + CUR_HDR, old_size, size);
    if (q)
        give_up(h, old_size);
    return q;
}

/* realloc of the block `p` of a page, `block` bytes long. */
static void *resize_paged(char *p, enum origin o, size_t block, size_t size)
{
    void *q;
    if (o == OTHER) {
        q = heap_copy(p, block, size);
        if (q)
            give_up_paged(p, block);
        return q;
    }
    /* A block that holds the size, and no smaller class would, stays (a
     * packed hook's block of 24 bytes among them). */
    if (size <= block && arena__page_class_of(size) >= arena__page_class_at(block))
        return p;
    arena__note_high(current); /* before the copy is counted with the block */
    q = arena_cur_malloc(size);
    if (!q) /* a shrink never fails */
        return size < block ? p : NULL;
    memcpy(q, p, size < block ? size : block);
    page_free(current, p, block);
    return q;
}

void *arena_cur_realloc(void *ptr, size_t size)
{
    size_t old_size = 0;
    const arena *owner;
    uintptr_t page;
    char *h, *q;
    enum origin o;
    if (!ptr)
        return arena_cur_malloc(size);
    if ((page = paged(ptr, &owner, &old_size)) != 0) {
        o = page_origin((char *)ptr, page, owner, old_size);
        if (o == FOREIGN || o == FREED) {
            misused("arena_cur_realloc", ptr, o);
            return NULL;
        }
        return size > BLOCK_MAX ? NULL : resize_paged((char *)ptr, o, old_size, size);
    }
    h = (char *)ptr - CUR_HDR;
    switch (o = inspect(h, &old_size)) {
    case FOREIGN:
    case FREED: misused("arena_cur_realloc", ptr, o); return NULL;
    case HEAP:
        if (size > BLOCK_MAX)
            return NULL;
        arena__unpoison(h, CUR_HDR);
        q = (char *)realloc(h, headed(size));
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
    const arena *owner;
    uintptr_t page;
    enum origin o;
    if (!ptr)
        return 0;
    if ((page = paged(ptr, &owner, &size)) != 0)
        o = page_origin((const char *)ptr, page, owner, size);
    else
        o = inspect((const char *)ptr - CUR_HDR, &size);
    if (o == FOREIGN || o == FREED) {
        misused("arena_cur_size", ptr, o);
        return 0;
    }
    return size;
}
