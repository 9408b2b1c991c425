/* SPDX-License-Identifier: MIT */
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
 * rounded.  Its class in *c (a plain build's fast path; 0 otherwise). */
static ARENA__ALWAYS_INLINE size_t hook_size(size_t n, unsigned *c)
{
    *c = 0;
    if (arena__instrumented())
        return n;
    if (n == 0) /* a block of no bytes (arena_hook_realloc()'s shrink to nothing) */
        return 0;
    if (n <= 240) { /* the classes of 16-byte steps */
        *c = n <= 16 ? 1 : (unsigned)((n + 15) >> 4);
        return (size_t)*c << 4;
    }
    return n > SIZE_MAX / 2 ? SIZE_MAX : arena__reuse_round(n, c);
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

/* The fast path's halves are inlined into each hook and the general path's
 * are calls, so that Lua's hook takes or gives back a block with no call
 * beyond the jump to its kind's function (arena_hook_lua()). */
static ARENA__NOINLINE void *hook_alloc_general(arena *a, size_t n, size_t r)
{
    void *p = arena_alloc_reuse(a, r);
    if (p)
        a->size -= r - n;
    return p;
}

static ARENA__ALWAYS_INLINE void *hook_alloc(arena *a, size_t n)
{
    unsigned c;
    size_t r = hook_size(n, &c);
    void *p;
    if (fast(a) && r != SIZE_MAX && (p = arena__reuse_pop(a, c, r)) != NULL) {
        a->size += n;
        arena__cold(a)->counts.reused += n;
        return p;
    }
    return hook_alloc_general(a, n, r);
}

/* Whether `p` of `r` bytes ends where the inline window starts: the arena's
 * most recent value, which goes back to the position. */
static bool ends_at_window(const arena *a, const void *p, size_t r)
{
    return a->ptr && (uintptr_t)p + r == (uintptr_t)a->ptr;
}

static ARENA__NOINLINE void hook_free_general(arena *a, void *p, size_t n, size_t r)
{
    arena_free(a, p, r);
    a->size += r - n;
}

/* A size that hook_size() cannot round (SIZE_MAX) is no block's: the
 * general path reports it. */
static ARENA__ALWAYS_INLINE void hook_free(arena *a, void *p, size_t n)
{
    unsigned c;
    size_t r = hook_size(n, &c);
    if (!p || n == 0)
        return;
    if (fast(a) && r != SIZE_MAX && !ends_at_window(a, p, r)) {
        arena__note_high(a);
        a->size -= n;
        arena__reuse_push(a, (char *)p, c, r);
        return;
    }
    hook_free_general(a, p, n, r);
}

static void *hook_resize(arena *a, void *p, size_t old_size, size_t new_size)
{
    unsigned rc, sc;
    size_t r = hook_size(old_size, &rc), s = hook_size(new_size, &sc);
    void *q;
    if (r == s) { /* the block holds both */
        if (new_size < old_size)
            arena__note_high(a);
        a->size += new_size - old_size;
        return p;
    }
    /* A block of no bytes (a shrink to nothing gave its place back) has
     * nothing to give back: the general path moves it. */
    if (fast(a) && r != 0 && r != SIZE_MAX && s != SIZE_MAX && !ends_at_window(a, p, r) &&
        (q = arena__reuse_pop(a, sc, s)) != NULL) {
        memcpy(q, p, r < s ? r : s);
        arena__reuse_push(a, (char *)p, rc, r);
        if (new_size < old_size)
            arena__note_high(a);
        a->size += new_size - old_size;
        arena__cold(a)->counts.reused += new_size;
        return q;
    }
    q = s < r ? arena__shrink_moving(a, p, r, s) : arena_realloc(a, p, r, s);
    if (q)
        a->size += (r - old_size) - (s - new_size);
    return q;
}

/* The hooks that take every kind of call pass each kind on to a function of
 * its own, as a tail call (a jump): each then saves only the registers its
 * own path needs, where one body holding all three paths saved five on
 * every call. */
static ARENA__NOINLINE void *alloc_call(arena *a, size_t n) { return hook_alloc(a, n); }

static ARENA__NOINLINE void *free_call(arena *a, void *p, size_t n)
{
    hook_free(a, p, n);
    return NULL;
}

void *arena_hook_lua(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    arena *a = (arena *)arena_ctx;
    if (new_size == 0)
        return free_call(a, ptr, old_size);
    if (!ptr)
        return alloc_call(a, new_size);
    return hook_resize(a, ptr, old_size, new_size);
}

void *arena_hook_realloc(void *arena_ctx, void *ptr, size_t old_size, size_t new_size)
{
    arena *a = (arena *)arena_ctx;
    if (!ptr)
        return alloc_call(a, new_size);
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
    arena__ask_valgrind(); /* the hooks decide their layout before they call the arena */
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
 * (page_of() reads that page's start). */
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
 * arena has no header: blocks of one class (8 bytes, then 16-byte steps;
 * a block of 8 bytes is 8-aligned, as any object that small needs, and as
 * C23 asks of malloc) share a page of
 * ARENA__PAGE bytes at that alignment, carved from regions the arena stores
 * (arena__alloc_pages(): 1 page, then twice the last, up to REGION_PAGES, in
 * each batch).  The page starts with its header, which names the owner and
 * the class; free, realloc and size find it by masking the block's address.
 * A cJSON node of 64 bytes then takes 64, not 80.
 *
 * The test reads the first word of the page a pointer lies in, whatever the
 * pointer is: that page is mapped, since the block has a byte (a block with
 * a header is never empty: headed()).  A header is live only while its page
 * is (the end of the batch, a rewind past the page and a release erase
 * every header they free: arena__pages_erase()), and its check word mixes
 * the page's address, its fields and a per-process secret (the address of a
 * static, which address-space randomisation moves), so that no other data,
 * a copy of a header elsewhere included, passes it by accident.  A block of
 * the C heap or with a header is told apart by its failing the test.
 *
 * A free block of a class starts with its node: the next block (XORed with
 * its own address and a constant) and a key, the block's address mixed
 * with the secret, which a block handed out never keeps (allocation clears
 * it), so that a second free is reported.  A block of 8 bytes has no room
 * for the key: its page keeps a bit per block instead, after its header.  The classes' lists and current
 * pages are forgotten with the arena's other lists (reuse.c: revive()).
 *
 * The tools' builds (ASan, Valgrind, the checked build) keep a header on
 * every block, which they poison, mark and check: there a page would hide
 * the blocks' bounds. */

static bool paging(void) { return ARENA_ALIGN <= 16 && !arena__instrumented(); }

struct page_header {
    uintptr_t check;    /* page_check() of the fields and the page's address */
    const arena *owner; /* the arena whose batch it belongs to */
    uintptr_t link;     /* the page carved before it, ORed with its class (0-15) */
    uint64_t saves;     /* the owner's marks taken when it was carved */
};

#define PAGE_HDR   ((sizeof(struct page_header) + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1))
#define PAGE_MASK  ((uintptr_t)ARENA__PAGE - 1)
#define PAGE_MIX   ((uintptr_t)UINT64_C(0xD6E8FEB86659FD93))
#define FREED_MIX  ((uintptr_t)UINT64_C(0x94D049BB133111EB))
#define NODE_MIX   ((uintptr_t)UINT64_C(0xBF58476D1CE4E5B9))
#define SECRET_MUL ((uintptr_t)UINT64_C(0x9E3779B97F4A7C15))
/* Pages of the largest region carved at once (256 KiB). */
#define REGION_PAGES 64

static const char secret_anchor;

static uintptr_t secret(void) { return (uintptr_t)&secret_anchor * SECRET_MUL; }

static uintptr_t page_check(uintptr_t page, const arena *owner, uintptr_t link)
{
    return page ^ (uintptr_t)owner ^ link ^ secret() ^ PAGE_MIX;
}

/* The blocks of a class, from its index: 8 bytes, then 16-byte steps. */
static size_t class_block(unsigned c) { return c ? (size_t)c * 16 : 8; }

/* The class of a block of `size` (<= ARENA__PAGE_BLOCK_MAX) bytes. */
static unsigned class_of(size_t size) { return size <= 8 ? 0 : (unsigned)((size + 15) >> 4); }

static size_t class_bytes(uintptr_t link) { return class_block((unsigned)(link & PAGE_MASK)); }

/* The smallest class's page: a bit per block says it is free. */
#define TINY         ((size_t)8)
#define BITMAP_BYTES ((ARENA__PAGE / TINY + 7) / 8)

/* Where a page's first block of `block` bytes starts. */
static size_t first_block(size_t block)
{
    return block == TINY ? PAGE_HDR + BITMAP_BYTES : PAGE_HDR;
}

/* The page with a live header that `p` lies in (its owner and block size in
 * *owner and *block), or 0.  The word read may belong to anything, another
 * thread's block included, and is only compared. */
ARENA__NO_TSAN static uintptr_t page_of(const void *p, const arena **owner, size_t *block)
{
    uintptr_t page = (uintptr_t)p & ~PAGE_MASK;
    struct page_header h;
    memcpy(&h, (const void *)page, sizeof h);
    if (h.check != page_check(page, h.owner, h.link))
        return 0;
    *owner = h.owner;
    *block = class_bytes(h.link);
    return page;
}

/* The key a free block of a page holds in its second word. */
static uintptr_t freed_key(const char *b) { return (uintptr_t)b ^ secret() ^ FREED_MIX; }

static uintptr_t word(const char *b, size_t i)
{
    uintptr_t w;
    memcpy(&w, b + i * sizeof w, sizeof w);
    return w;
}

static void set_word(char *b, size_t i, uintptr_t w) { memcpy(b + i * sizeof w, &w, sizeof w); }

/* The byte of the bitmap of the page of the 8-byte block `b` that holds its
 * bit, and the bit. */
static unsigned char *tiny_bit(const char *b, unsigned *bit)
{
    uintptr_t page = (uintptr_t)b & ~PAGE_MASK;
    size_t i = (size_t)((uintptr_t)b - page - first_block(TINY)) / TINY;
    *bit = 1u << (i % 8);
    return (unsigned char *)page + PAGE_HDR + i / 8;
}

/* Whether the block `b` of `block` bytes of a page is free. */
static bool is_freed(const char *b, size_t block)
{
    unsigned bit;
    if (block == TINY)
        return (*tiny_bit(b, &bit) & bit) != 0;
    return word(b, 1) == freed_key(b);
}

/* Marks the block `b` of `block` bytes of a page free, or not.  Inlined
 * into each caller, where `freed` is a constant (gcc, left to itself, made
 * it a call in arena_cur_malloc()'s path: callgrind). */
static ARENA__ALWAYS_INLINE void set_freed(char *b, size_t block, bool freed)
{
    unsigned bit;
    unsigned char *w;
    if (block != TINY) {
        set_word(b, 1, freed ? freed_key(b) : 0);
        return;
    }
    w = tiny_bit(b, &bit);
    *w = (unsigned char)(freed ? *w | bit : *w & ~bit);
}

/* Carves a page for class `c` from the current region (a new one when it is
 * used up); NULL when the arena cannot store one. */
static char *carve(arena *a, struct arena__pages *pg, unsigned c)
{
    struct page_header h;
    char *page;
    if (pg->rnext == pg->rend) {
        size_t n = pg->rpages ? 2 * pg->rpages : 1;
        char *r;
        if (n > REGION_PAGES)
            n = REGION_PAGES;
        r = arena__alloc_pages(a, n * ARENA__PAGE);
        if (!r && n > 1) {
            n = 1;
            r = arena__alloc_pages(a, ARENA__PAGE);
        }
        if (!r)
            return NULL;
        pg->rnext = r;
        pg->rend = r + n * ARENA__PAGE;
        pg->rpages = n;
    }
    page = pg->rnext;
    pg->rnext += ARENA__PAGE;
    h.owner = a;
    h.link = (uintptr_t)pg->newest | c;
    h.saves = a->saves;
    h.check = page_check((uintptr_t)page, a, h.link);
    memcpy(page, &h, sizeof h);
    if (c == 0)
        memset(page + PAGE_HDR, 0, BITMAP_BYTES);
    pg->newest = page;
    return page;
}

void arena__pages_erase(arena *a, struct arena__pages *pg, uint64_t serial)
{
    char *page = pg->newest;
    (void)a;
    while (page) {
        struct page_header h;
        memcpy(&h, page, sizeof h);
        if (serial != 0 && h.saves < serial)
            break;
        set_word(page, 0, 0);
        page = (char *)(h.link & ~PAGE_MASK);
    }
    pg->newest = page;
}

/* The head of the free list of `k`, of blocks of `block` bytes, unlinked;
 * NULL when its node does not decode (overwritten: a write after free). */
static ARENA__ALWAYS_INLINE char *pop(struct arena__page_class *k, size_t block)
{
    char *b = k->free;
    char *next = (char *)(word(b, 0) ^ (uintptr_t)b ^ NODE_MIX);
    if (ARENA__UNLIKELY(!is_freed(b, block) || ((uintptr_t)next & (TINY - 1)) != 0))
        return NULL;
    k->free = next;
    return b;
}

/* Hands out the block `b` of `block` bytes of `a`'s pages. */
static void *hand_out(arena *a, char *b, size_t block)
{
    set_freed(b, block, false);
    a->size += block;
    return b;
}

/* A block of class `c` (its list `k`) handed out: the head of its free list,
 * or the next of its page; NULL when the list's head does not decode
 * (overwritten) or the class has no list and its page is used up. */
static ARENA__ALWAYS_INLINE void *take(arena *a, struct arena__page_class *k, unsigned c)
{
    size_t block = class_block(c);
    char *b;
    if (k->free) {
        b = pop(k, block);
        if (ARENA__UNLIKELY(b == NULL))
            return NULL;
        arena__cold(a)->counts.reused += block;
        return hand_out(a, b, block);
    }
    if (k->next == k->end)
        return NULL;
    b = k->next;
    k->next += block;
    return hand_out(a, b, block);
}

/* Makes class `c` of `a`'s pages able to hand out a block, where take()
 * found none: the lists made valid, an overwritten list reported and
 * dropped, a page carved when the class's is used up.  False when the arena
 * keeps no table or cannot store a page. */
static ARENA__NOINLINE bool page_ready(arena *a, unsigned c)
{
    struct arena__pages *pg = arena__pages_of(a);
    size_t block = class_block(c);
    struct arena__page_class *k;

    if (!pg)
        return false;
    k = &pg->cls[c];
    if (k->free) { /* take() could not decode its head */
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                      "arena_cur_malloc: arena %p: the free block at %p was overwritten (a "
                      "write after free)",
                      (void *)a, (void *)k->free);
        k->free = NULL;
    }
    if (k->next == k->end) {
        char *page = carve(a, pg, c);
        if (!page)
            return false;
        k->next = page + first_block(block);
        k->end = k->next + (ARENA__PAGE - first_block(block)) / block * block;
    }
    return true;
}

/* Whether `p` is the start of a block of the page at `page` whose blocks
 * are `block` bytes long. */
static bool on_boundary(const char *p, uintptr_t page, size_t block)
{
/* With no division: for x below 2^32, d divides x exactly when x * m <= m - 1
 * (modulo 2^64), m being 2^64 / d rounded up; one m for each block size a
 * page has (8, and 16 c for the classes c of 1 to 16), at index block / 16. */
#define DIVIDES(d) (UINT64_MAX / (d) + 1)
    static const uint64_t m[] = {
        DIVIDES(8),   DIVIDES(16),  DIVIDES(32),  DIVIDES(48),  DIVIDES(64),  DIVIDES(80),
        DIVIDES(96),  DIVIDES(112), DIVIDES(128), DIVIDES(144), DIVIDES(160), DIVIDES(176),
        DIVIDES(192), DIVIDES(208), DIVIDES(224), DIVIDES(240), DIVIDES(256)};
#undef DIVIDES
    size_t off = (size_t)((uintptr_t)p - page), i = block / 16;
    uint64_t x;
    if (off < first_block(block))
        return false;
    x = (uint64_t)(off - first_block(block)); /* below ARENA__PAGE */
    return i < sizeof m / sizeof m[0] ? x * m[i] <= m[i] - 1 : x % block == 0;
}

/* What the block `p` of a page is: FOREIGN (not a block's start), FREED,
 * MINE or OTHER.  An 8-byte block's free bit shares a byte with its
 * neighbours', which the owner's thread may be writing: another arena's
 * tells nothing. */
static ARENA__ALWAYS_INLINE enum origin page_origin(const char *p, uintptr_t page,
                                                    const arena *owner, size_t block)
{
    if (!on_boundary(p, page, block))
        return FOREIGN;
    if (block == TINY && owner != current)
        return OTHER;
    if (is_freed(p, block))
        return FREED;
    return owner == current ? MINE : OTHER;
}

/* Marks the block `p` of another arena's page freed, so that a second free
 * is reported: in its own bytes, which the program gave up; an 8-byte block
 * has no room (its arena's bits are not touched). */
static void give_up_paged(char *p, size_t block)
{
    if (block != TINY)
        set_freed(p, block, true);
}

/* Gives the block `b` of `block` bytes (a block of `a`'s pages) back to its
 * class's list. */
static ARENA__ALWAYS_INLINE void page_free(arena *a, char *b, size_t block)
{
    /* A live page of `a` keeps its lists valid (reuse.c: revive()). */
    struct arena__page_class *k = &arena__pages_live(a)->cls[class_of(block)];
    set_word(b, 0, (uintptr_t)k->free ^ (uintptr_t)b ^ NODE_MIX);
    set_freed(b, block, true);
    k->free = b;
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
    h = a ? (char *)hook_alloc(a, headed(size)) : (char *)malloc(headed(size));
    return h ? stamp(h, size, a) : NULL;
}

/* arena_cur_malloc() of a block of pages where take() found none at once:
 * after page_ready(), take() hands out a block.  An arena that only the
 * inline paths have touched (arena_init_buffer() without a backing: lazy)
 * has not written its bookkeeping, where the pages' state would be: it keeps
 * no table anyway (a fixed-size arena), and its blocks take headers. */
static ARENA__NOINLINE void *cur_malloc_paged(arena *a, size_t size)
{
    unsigned c = class_of(size);
    while (!a->lazy && page_ready(a, c)) {
        struct arena__pages *pg = arena__pages_live(a);
        void *p;
        if (pg && (p = take(a, &pg->cls[c], c)) != NULL)
            return p;
    }
    return cur_malloc(a, size);
}

void *arena_cur_malloc(size_t size)
{
    arena *a = current;
    /* The block of a class's list or page: no call, so no saved register
     * (the loop that readies a page is out of line). */
    if (a && size <= ARENA__PAGE_BLOCK_MAX && paging()) {
        struct arena__pages *pg = arena__pages_live(a);
        unsigned c = class_of(size);
        void *p;
        if (ARENA__LIKELY(pg != NULL) && (p = take(a, &pg->cls[c], c)) != NULL)
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
    return paging() ? page_of(ptr, owner, block) : 0;
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
        hook_free(current, h, headed(size));
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
    q = (char *)hook_resize(current, h, headed(old_size), headed(size));
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
    /* A block of the same class stays. */
    if (class_of(size) == class_of(block))
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
