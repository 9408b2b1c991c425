/* SPDX-License-Identifier: MIT */
/*
 * Reuse of blocks given back within a batch (reuse.c): the lists of free
 * blocks by size class, and what the adapters and the arena call.  Never
 * installed.
 */
#ifndef ARENA_REUSE_H
#define ARENA_REUSE_H

#include "pages.h"

/* ---- Reuse (src/reuse.c) ------------------------------------------------------------ */

/* Mixed into a free block's link (reuse.c) and into a block header's key
 * (current.c).  They differ by ARENA__FREED_OWNER, so that the header of a
 * block of the arena_cur_* family that a node overwrote decodes to that
 * owner, which no arena has (its low bits are set): a free of it again is
 * told from a foreign pointer. */
#define ARENA__KEY_MIX     ((uintptr_t)UINT64_C(0x9E3779B97F4A7C15))
#define ARENA__FREED_OWNER ((uintptr_t)2)
#define ARENA__LINK_MIX    (ARENA__KEY_MIX ^ ARENA__FREED_OWNER)

/* The smallest free block the lists keep: a node, and room for a value
 * with its header and guard when instrumented. */
static inline size_t arena__reuse_min(void) { return arena__hdr() + 16; }

/* The bytes between two free blocks that a merge joins across (reuse.c):
 * fewer than any value takes in an instrumented build, so they hold none,
 * only the padding before an aligned value and what a value's block kept
 * past its guard (arena_free.inc.c: take_fitting()).  The checked build may leave a
 * value of no bytes, its header and a granule of guard; the builds without
 * a header never do (a shrink to nothing gives the value back), and a value
 * there takes a granule and its guard, ARENA_ALIGN bytes, at least.  None
 * in a plain build, where a value of one byte at alignment 1 may lie
 * between two blocks. */
static inline size_t arena__reuse_gap(void)
{
    if (!arena__instrumented())
        return 0;
    return ARENA_CHECKED ? arena__hdr() + ARENA__GRANULE - 1 : 2 * ARENA__GRANULE - 1;
}

/* The table of `a`, its lists made valid first: NULL when the arena keeps
 * no lists (a fixed-size arena, or its backing failed). */
ARENA__HIDDEN struct arena__reuse *arena__reuse_live(arena *a);
/* Files the block [s, s + len) (s ARENA_ALIGN-aligned, len >=
 * arena__reuse_min()); false when the arena keeps no lists (a fixed-size
 * arena, or its backing failed): the block then stays unused until the
 * batch ends. */
ARENA__HIDDEN bool arena__reuse_file(arena *a, char *s, size_t len);
/* A filed block of at least `need` bytes, unlinked (its length in *len), or
 * NULL: the head of the smallest class whose every block holds it, else a
 * block of the class below that does (among its first few), else the head
 * of the smallest larger class that has one, to be split (a good fit). */
ARENA__HIDDEN char *arena__reuse_take(arena *a, size_t need, size_t *len);
/* Merges the filed blocks that lie side by side in a chunk into one (where
 * a value would otherwise take a new chunk), when enough blocks were filed
 * since the last merge: true when it ran.  O(n) in the blocks filed (O(n
 * log n) past MERGE_SPANS of them), amortized over as many filings.  Pages are recycled first. */
ARENA__HIDDEN bool arena__reuse_merge(arena *a);
/* Recycles the pages whose blocks are all free (and orders the classes'
 * lists so that nearly empty pages drain), when enough page blocks were
 * given back since the last time: true when a page became a free block.
 * O(free page blocks), amortized over as many frees. */
ARENA__HIDDEN bool arena__pages_recycle(arena *a);
/* Before a page is carved: the pages recycled and the lists merged, where
 * each is due, so that the memory given back can hold the page. */
ARENA__HIDDEN void arena__pages_tidy(arena *a);
/* Instrumented builds: room to log one more placement; then the placement
 * of the value `p` in the block [from, to) of the chunk at `base`, which a
 * rewind to a mark taken before it expires. */
ARENA__HIDDEN bool arena__reuse_log_room(arena *a);
ARENA__HIDDEN void arena__reuse_log(arena *a, const char *base, char *from, char *to, char *p);
/* The position of the chunk at `base` went down to `pos`, into what such
 * placements held, or the most recent value, whose header is at `pos`,
 * grew in place from one: the bytes from `pos` on are the position's, where
 * values lie in the order they were placed (a rewind's cut finds them by
 * their headers), so the placements keep only what lies below it. */
ARENA__HIDDEN void arena__reuse_log_trim(arena *a, const char *base, char *pos);
/* Forgets every filed block (a reset: serial 0), or, for a rewind to the
 * mark of `serial`, also expires the placements logged since it. */
ARENA__HIDDEN void arena__reuse_forget(arena *a, uint64_t serial);
/* Frees the lists' table (a release). */
ARENA__HIDDEN void arena__reuse_release(arena *a);

/* ---- The table of lists (reuse.c), and the adapters' fast path -------------------------
 *
 * Here rather than in reuse.c so that the adapters (hooks.c, current.c,
 * adapters.h) take and give back a block inline, with no call: a Lua state
 * or a realloc loop calls them for every value it makes and drops. */

/* Classes: 15 of 16-byte steps (16..240), then eight per doubling from 256
 * to 2^36. */
#define ARENA__SMALL_CLASSES 16
#define ARENA__SUB_BITS      3
#define ARENA__NCLASS        (ARENA__SMALL_CLASSES + (36 - 8) * (1 << ARENA__SUB_BITS))
#define ARENA__MAP_WORDS     ((ARENA__NCLASS + 63) / 64)

/* A placement made through reuse while a mark was live, for a rewind to
 * expire (instrumented builds: see arena__reuse_forget()). */
struct arena__placement {
    const char *base; /* its chunk */
    char *from;       /* the block: [from, to) */
    char *to;
    char *p; /* the value */
    uint64_t saves;
};

/* The pages' state comes first: arena__pages_live() reaches it from the
 * table's address. */
struct arena__reuse {
    struct arena__pages pages;
    uint64_t map[ARENA__MAP_WORDS]; /* the classes whose list holds a block */
    char *head[ARENA__NCLASS];      /* valid where the map's bit is set */
    uint64_t epoch;                 /* drawn anew each time the lists become valid (revive()) */
    size_t filed;                   /* blocks filed since the last merge, or since revive() */
    size_t merged;                  /* blocks the last merge left filed */
    size_t page_frees;              /* page blocks given back since pages were last recycled */
    uint64_t page_puts;             /* blocks of a page or more filed, ever */
    uint64_t page_miss;             /* page_puts + 1 when the lists last held no whole page
                                       (pages.c), else 0 */
    /* The reusing calls' values of each page class placed after a head, in
     * every batch since the table was made (arena_free.inc.c: PAGE_AFTER). */
    uint32_t placed[ARENA__PAGE_CLASSES];
    size_t page_kept; /* free page blocks the last recycling left listed */
    size_t nlog, caplog;
    struct arena__placement log[]; /* caplog entries: LOG_CAP when instrumented, else none */
};

/* The node of a free block outside the checked build: its length, and its
 * successor XORed with the length and ARENA__LINK_MIX. */
struct arena__free_node {
    size_t len;
    uintptr_t link;
};

/* A node's link: its successor's address mixed with its length, and back
 * (XOR: the same call decodes a link to the address). */
static inline uintptr_t arena__link(uintptr_t x, size_t len)
{
    return x ^ (uintptr_t)len ^ ARENA__LINK_MIX;
}

/* A plain build's free block of ARENA__CANARY_AT + a word or more also keeps
 * a canary there, where a value given back had its first bytes (a head is
 * ARENA__CANARY_AT long): a write after free into them is then reported too
 * when the block is read, as a write over its node is. */
#define ARENA__CANARY_AT  ((size_t)16)
#define ARENA__CANARY_MIX ((uintptr_t)UINT64_C(0x2545F4914F6CDD1D))

static inline bool arena__has_canary(size_t len)
{
    return !arena__instrumented() && len >= ARENA__CANARY_AT + sizeof(uintptr_t);
}

/* A node that does not decode may tell a length its block does not have:
 * its canary is read only where it lies in the node's own OS page. */
static inline bool arena__canary_readable(const char *s)
{
    return ((uintptr_t)s & (ARENA__PAGE - 1)) <= ARENA__PAGE - ARENA__CANARY_AT - sizeof(uintptr_t);
}

static inline uintptr_t arena__canary(const char *s, uintptr_t link)
{
    return (uintptr_t)s ^ link ^ ARENA__CANARY_MIX;
}

static inline unsigned arena__floor_log2(size_t n)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)(sizeof(unsigned long long) * 8 - 1) -
           (unsigned)__builtin_clzll((unsigned long long)n);
#else
    unsigned lg = 0;
    while (n >>= 1)
        lg++;
    return lg;
#endif
}

/* The lower bound of class `c`. */
static inline size_t arena__class_size(unsigned c)
{
    unsigned lg, sub;
    if (c < ARENA__SMALL_CLASSES)
        return (size_t)c << 4;
    lg = 8 + (c - ARENA__SMALL_CLASSES) / (1u << ARENA__SUB_BITS);
    sub = (c - ARENA__SMALL_CLASSES) % (1u << ARENA__SUB_BITS);
    return ((size_t)(1u << ARENA__SUB_BITS) + sub) << (lg - ARENA__SUB_BITS);
}

/* The class of a block of `len` bytes: the largest lower bound <= len. */
static inline unsigned arena__class_of(size_t len)
{
    unsigned lg;
    if (len < 256)
        return (unsigned)(len >> 4);
    lg = arena__floor_log2(len);
    if (lg >= 36)
        return ARENA__NCLASS - 1;
    return ARENA__SMALL_CLASSES + (lg - 8) * (1u << ARENA__SUB_BITS) +
           (unsigned)((len >> (lg - ARENA__SUB_BITS)) & ((1u << ARENA__SUB_BITS) - 1));
}

/* The smallest class whose every block holds `n` bytes (ARENA__NCLASS:
 * none). */
static inline unsigned arena__class_up(size_t n)
{
    unsigned c = arena__class_of(n);
    return arena__class_size(c) < n ? c + 1 : c;
}

/* The page state of `a` while the lists are valid (NULL otherwise): the
 * reuse table starts with it.  revive() (reuse.c) clears all of it but
 * `newest` whenever the lists become valid again (after a reset or a
 * rewind), so a batch starts with no page current; `newest` lists every
 * page whose header is live, which the end of the batch erases. */
static inline struct arena__pages *arena__pages_live(const arena *a)
{
    if (!(a->pending & ARENA__PENDING_REUSE))
        return NULL;
    return (struct arena__pages *)(void *)arena__cold(a)->reuse;
}

/* The family's page state of `a`, the lists made valid first (NULL: the
 * arena keeps no table: a fixed-size arena, or its backing failed). */
ARENA__HIDDEN struct arena__pages *arena__pages_of(arena *a);
/* ---- Blocks after a head (arena_free.inc.c) ------------------------------------------ */

struct arena__head {
    uint64_t extent; /* from the head's start to the block's end */
    uint64_t key;    /* arena__head_key() */
};

#define ARENA__HEAD ((size_t)sizeof(struct arena__head))

/* Two odd multipliers and the secret: a head copied to another address, or
 * read in another arena or epoch, or with another extent, has another key. */
static inline uint64_t arena__head_key(const char *h, const arena *a, uint64_t extent,
                                       uint64_t epoch)
{
    uint64_t x = ((uint64_t)(uintptr_t)h ^ epoch) * UINT64_C(0xFF51AFD7ED558CCD);
    uint64_t y = ((uint64_t)(uintptr_t)a ^ extent) * UINT64_C(0xC4CEB9FE1A85EC53);
    return x ^ (y >> 17) ^ (y << 47) ^ (uint64_t)arena__secret();
}

static inline void arena__head_write(arena *a, char *h, size_t extent)
{
    struct arena__head hd;
    hd.extent = extent;
    hd.key = arena__head_key(h, a, hd.extent, arena__cold(a)->reuse->epoch);
    memcpy(h, &hd, sizeof hd);
}

/* The extent of the block whose head is at `h`, a head of `a` in the
 * lists' current epoch; 0 when there is none. */
static inline size_t arena__head_extent(const arena *a, const char *h)
{
    const struct arena__reuse *t = arena__cold(a)->reuse;
    struct arena__head hd;
    if (!(a->pending & ARENA__PENDING_REUSE) || !t)
        return 0;
    memcpy(&hd, h, sizeof hd);
    if (hd.key != arena__head_key(h, a, hd.extent, t->epoch) || hd.extent > SIZE_MAX / 2)
        return 0;
    return (size_t)hd.extent;
}

/* `n` (> 256, below SIZE_MAX / 4) rounded up to the bound of its size
 * class (at most 12.5% above), or to ARENA_ALIGN past the largest: the
 * blocks of headed values are whole classes, so that one given back fits
 * the next value of its class with no remainder. */
static inline size_t arena__class_round(size_t n)
{
    unsigned up = arena__class_up(n);
    size_t r = up < ARENA__NCLASS ? arena__class_size(up) : 0;
    return r >= n ? r : (size_t)arena__align_up(n, ARENA_ALIGN);
}

/* A value of `n` (> ARENA__PAGE_BLOCK_MAX) bytes after a head in the block at
 * the head of its class's list when that block is exactly the class's size
 * (one a value of the class gave back), in a plain build whose lists are
 * valid and arena under its limit; NULL otherwise (arena__reuse_alloc()
 * then places it).  Inline, so that the adapters take such a block with no
 * call. */
static ARENA__ALWAYS_INLINE void *arena__headed_take(arena *a, size_t n)
{
    struct arena__reuse *t;
    struct arena__free_node nd;
    size_t need;
    uintptr_t next;
    unsigned c;
    char *s;

    if (!arena__paging() ||
        (a->pending & (ARENA__PENDING_REUSE | ARENA__PENDING_OVER)) != ARENA__PENDING_REUSE ||
        n > arena__chunk_size(a))
        return NULL;
    need = arena__class_round(ARENA__HEAD + n);
    c = arena__class_of(need);
    t = arena__cold(a)->reuse;
    if (need > arena__chunk_size(a) || !(t->map[c / 64] >> (c % 64) & 1))
        return NULL;
    s = t->head[c];
    memcpy(&nd, s, sizeof nd);
    next = arena__link(nd.link, nd.len);
    if (nd.len != need || (next & (ARENA_ALIGN - 1)) != 0)
        return NULL;
    if (arena__canary_readable(s)) {
        uintptr_t k;
        memcpy(&k, s + ARENA__CANARY_AT, sizeof k);
        if (k != arena__canary(s, nd.link))
            return NULL; /* overwritten: the general path reports it */
    }
    t->head[c] = (char *)next;
    if (!next)
        t->map[c / 64] &= ~((uint64_t)1 << (c % 64));
    arena__head_write(a, s, need);
    a->size += n;
    arena__cold(a)->counts.reused += n;
    return s + ARENA__HEAD;
}

/* The extent of the block of the value `p` of `n` (> ARENA__PAGE_BLOCK_MAX)
 * bytes when it lies after a head of `a` (plain build), its block exactly a
 * class's size and not at the position; 0 otherwise (for arena_free()). */
static ARENA__ALWAYS_INLINE size_t arena__headed_held(const arena *a, const char *p, size_t n)
{
    const char *h = p - ARENA__HEAD;
    size_t extent;
    if (!arena__paging() || ((uintptr_t)p & ARENA__PAGE_MASK) < ARENA__HEAD ||
        (extent = arena__head_extent(a, h)) == 0 || n > extent - ARENA__HEAD ||
        h + extent == a->ptr || arena__class_size(arena__class_of(extent)) != extent)
        return 0;
    return extent;
}

/* Gives the value `p` of `n` bytes, after a head whose block is `extent`
 * bytes (arena__headed_held()), back: its block to the head of its class's
 * list (the caller notes the high point, as for arena__small_put()). */
static ARENA__ALWAYS_INLINE void arena__headed_put(arena *a, char *p, size_t n, size_t extent)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    struct arena__free_node nd;
    char *h = p - ARENA__HEAD;
    unsigned c = arena__class_of(extent);
    uint64_t bit = (uint64_t)1 << (c % 64);

    a->size -= n;
    nd.len = extent;
    nd.link = arena__link((t->map[c / 64] & bit) ? (uintptr_t)t->head[c] : 0, extent);
    memcpy(h, &nd, sizeof nd);
    if (arena__canary_readable(h)) {
        uintptr_t k = arena__canary(h, nd.link);
        memcpy(h + ARENA__CANARY_AT, &k, sizeof k);
    }
    t->head[c] = h;
    t->map[c / 64] |= bit;
    t->filed++;
}

/* Gives the value `p` of `n` (> ARENA__PAGE_BLOCK_MAX) bytes back when it
 * lies after a head of `a` (plain build), its block exactly a class's size
 * and not at the position: true when it did. */
static ARENA__ALWAYS_INLINE bool arena__headed_give(arena *a, char *p, size_t n)
{
    size_t extent = arena__headed_held(a, p, n);
    if (!extent)
        return false;
    arena__note_high(a);
    arena__headed_put(a, p, n, extent);
    return true;
}

/* The page class of a value of `n` (1 to ARENA__PAGE_BLOCK_MAX) bytes at
 * ARENA_ALIGN: 16 bytes at least. */
static inline unsigned arena__small_class(size_t n)
{
    return n <= 16 ? 2 : (unsigned)((n + 15) >> 4) << 1;
}

/* A value of `n` (1 to ARENA__PAGE_BLOCK_MAX) bytes of page class `c` from
 * the pages of `a` while they are live and the arena is under its limit
 * (plain build): the head of its class's list, or the next block of the
 * class's page, counted in arena_size(); NULL otherwise
 * (arena__reuse_alloc() then finds one).  Inline, so that the adapters hand
 * out a block with no call. */
static ARENA__ALWAYS_INLINE void *arena__small_take_in(arena *a, size_t n, unsigned c)
{
    struct arena__pages *pg;
    bool reused;
    char *b;
    if (!arena__paging() || (a->pending & ARENA__PENDING_OVER) ||
        (pg = arena__pages_live(a)) == NULL)
        return NULL;
    b = arena__page_take(&pg->cls[c], c, &reused);
    if (b) {
        a->size += n;
        if (reused)
            arena__cold(a)->counts.reused += n;
    }
    return b;
}

/* arena__small_take_in() of the class of a value at ARENA_ALIGN. */
static ARENA__ALWAYS_INLINE void *arena__small_take(arena *a, size_t n)
{
    return arena__small_take_in(a, n, arena__small_class(n));
}

/* The block of the value `p` of `n` (1 to ARENA__PAGE_BLOCK_MAX) bytes when
 * it is a live block of one of the live pages of `a` (plain build); 0
 * otherwise (a value with a head or none, misuse: for arena_free()). */
static ARENA__ALWAYS_INLINE size_t arena__small_held(const arena *a, const char *p, size_t n)
{
    const arena *owner;
    size_t block;
    uintptr_t page;
    if (!arena__paging() || !arena__pages_live(a) ||
        (page = arena__page_of(p, &owner, &block)) == 0 || owner != a || n > block ||
        !arena__page_on_boundary(p, page, block) || arena__page_is_freed(p, block))
        return 0;
    return block;
}

/* Gives the value `p` of `n` bytes, a page's block of `block` bytes
 * (arena__small_held()), back to its class (the caller notes the high point
 * where the size it leaves was the program's to see). */
static ARENA__ALWAYS_INLINE void arena__small_put(arena *a, char *p, size_t n, size_t block)
{
    a->size -= n;
    arena__page_give(&arena__pages_live(a)->cls[arena__page_class_at(block)], p, block);
    arena__cold(a)->reuse->page_frees++; /* its page may be free whole: see reuse.c */
}

/* Gives the value `p` of `n` (1 to ARENA__PAGE_BLOCK_MAX) bytes back to its
 * class when it is a live block of one of the live pages of `a` (plain
 * build): true when it did. */
static ARENA__ALWAYS_INLINE bool arena__small_give(arena *a, char *p, size_t n)
{
    size_t block = arena__small_held(a, p, n);
    if (!block)
        return false;
    arena__note_high(a);
    arena__small_put(a, p, n, block);
    return true;
}

/* How a value is placed (arena__reuse_alloc_as(), and the adapters'
 * resizes): in no page (a block of the arena_cur_* family with a header
 * must never lie in a page: a page's pointers are that family's own
 * blocks), or at 8-byte alignment (arena_hook_lua_align8(): a value of at most
 * ARENA__PAGE_BLOCK_MAX bytes takes a page block of the next multiple of 8
 * bytes, 8-aligned; a larger one is placed at ARENA_ALIGN as any). */
#define ARENA__PLACE_NO_PAGES 2u
#define ARENA__PLACE_ALIGN8   4u

/* The page class of a value of `n` bytes placed as `how` says. */
static inline unsigned arena__small_class_as(size_t n, unsigned how)
{
    return how & ARENA__PLACE_ALIGN8 ? arena__page_class_align8(n) : arena__small_class(n);
}

/* A value of `n` bytes at ARENA_ALIGN for a reusing call (arena_free.inc.c): in a
 * plain build a block of a page (at most ARENA__PAGE_BLOCK_MAX bytes) or one
 * after a head, which the lists' free blocks serve first; in an
 * instrumented one a free block, else a new place.  The lists are made
 * valid.  Size 0 and failure as arena_alloc(). */
ARENA__HIDDEN void *arena__reuse_alloc(arena *a, size_t n);
/* arena__reuse_alloc(), placed as `how` says (ARENA__PLACE_ flags; 0: as
 * arena__reuse_alloc()). */
ARENA__HIDDEN void *arena__reuse_alloc_as(arena *a, size_t n, unsigned how);
/* A value of `n` bytes after a head in a free block of the lists (plain
 * build, lists open, arena under its limit); NULL when none holds it. */
ARENA__HIDDEN void *arena__reuse_alloc_listed(arena *a, size_t n);

/* The adapters' shrink (adapters.h): arena_realloc() to `new_size` (<
 * old_size), except that a value that is not the most recent moves to a
 * block of the new size, and its own goes back whole, so that no remainder
 * of an odd size is left to fragment the lists; in place, its tail given
 * back, only when that fails (size 0: in place).  NULL after a reported
 * misuse. */
#define ARENA__RESIZE_SHRINK_MOVES 1u /* (set by arena__shrink_moving() itself) */
/* (and a move is placed as the ARENA__PLACE_ flags in `how` say) */
ARENA__HIDDEN void *arena__shrink_moving(arena *a, void *ptr, size_t old_size, size_t new_size,
                                         unsigned how);
/* arena_realloc(), a move placed as the ARENA__PLACE_ flags in `how` say. */
ARENA__HIDDEN void *arena__realloc_as(arena *a, void *ptr, size_t old_size, size_t new_size,
                                      unsigned how);

/* arena_allocator_of()'s functions (hooks.c): a block of `size` bytes that
 * starts ARENA_ALIGN bytes into a value of `a`, and its way back. */
ARENA__HIDDEN void *arena__nested_alloc(arena *a, size_t size);
ARENA__HIDDEN void arena__nested_free(arena *a, void *ptr, size_t size);

#endif /* ARENA_REUSE_H */
