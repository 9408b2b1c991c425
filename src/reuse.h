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
 * (hooks.c).  They differ by ARENA__FREED_OWNER, so that the header of a
 * block of the arena_cur_* family that a node overwrote decodes to that
 * owner, which no arena has (its low bits are set): a free of it again is
 * told from a foreign pointer. */
#define ARENA__KEY_MIX     ((uintptr_t)UINT64_C(0x9E3779B97F4A7C15))
#define ARENA__FREED_OWNER ((uintptr_t)2)
#define ARENA__LINK_MIX    (ARENA__KEY_MIX ^ ARENA__FREED_OWNER)

/* The smallest free block the lists keep: a node, and room for a value
 * with its header and guard when instrumented. */
static inline size_t arena__reuse_min(void) { return arena__hdr() + 16; }

/* Files the block [s, s + len) (s ARENA_ALIGN-aligned, len >=
 * arena__reuse_min()); false when the arena keeps no lists (a fixed-size
 * arena, or its backing failed): the block then stays unused until the
 * batch ends. */
ARENA__HIDDEN bool arena__reuse_file(arena *a, char *s, size_t len);
/* A filed block of at least `need` bytes, unlinked (its length in *len), or
 * NULL; one of a larger class, to be split, only if `carve`. */
ARENA__HIDDEN char *arena__reuse_take(arena *a, size_t need, bool carve, size_t *len);
/* Merges the filed blocks that lie side by side in a chunk into one (where
 * a value would otherwise take a new chunk), when enough blocks were filed
 * since the last merge: true when it ran.  O(n log n) in the blocks filed,
 * amortized over as many filings. */
ARENA__HIDDEN bool arena__reuse_merge(arena *a);
/* Instrumented builds: room to log one more placement; then the placement
 * of the value `p` in the block [from, to) of the chunk at `base`, which a
 * rewind to a mark taken before it expires. */
ARENA__HIDDEN bool arena__reuse_log_room(arena *a);
ARENA__HIDDEN void arena__reuse_log(arena *a, const char *base, char *from, char *to, char *p);
/* Forgets every filed block (a reset: serial 0), or, for a rewind to the
 * mark of `serial`, also expires the placements logged since it. */
ARENA__HIDDEN void arena__reuse_forget(arena *a, uint64_t serial);
/* Frees the lists' table (a release). */
ARENA__HIDDEN void arena__reuse_release(arena *a);

/* ---- The table of lists (reuse.c), and the adapters' fast path -------------------------
 *
 * Here rather than in reuse.c so that the adapters (hooks.c) take and give
 * back a block inline, with no call: a Lua state or a realloc loop calls
 * them for every value it makes and drops. */

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
    size_t filed;                   /* blocks filed since the last merge, or since revive() */
    size_t merged;                  /* blocks the last merge left filed */
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

/* `n` rounded up to the bound of its size class (16 at least; ARENA_ALIGN
 * steps above the largest class), its class in *c: the size the adapters
 * of a plain build ask for and give back, so that a freed block fits the
 * next value of its class exactly. */
static inline size_t arena__reuse_round(size_t n, unsigned *c)
{
    unsigned up;
    size_t r;
    if (n <= 16) {
        *c = 1;
        return 16;
    }
    /* A bound that does not fit size_t (a 32-bit one) wraps below n. */
    up = arena__class_up(n);
    r = up < ARENA__NCLASS ? arena__class_size(up) : 0;
    if (r >= n) {
        *c = up;
        return r;
    }
    r = (size_t)arena__align_up(n, ARENA_ALIGN);
    *c = arena__class_of(r);
    return r;
}

/* The adapters' fast path in a plain build (never an instrumented one: it
 * tells no tool), while the lists are valid (ARENA__PENDING_REUSE): the
 * head of class `c` (`len`'s: a class bound, as arena__reuse_round()
 * gives), unlinked, when it is exactly `len` bytes long (as every block the
 * adapters give back is); NULL otherwise.  A head that does not decode is
 * left where it is: the caller's general path (arena_alloc_reuse()) reads
 * it next, reports it and drops its list. */
static inline char *arena__reuse_pop(arena *a, unsigned c, size_t len)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    uint64_t bit = (uint64_t)1 << (c % 64);
    const struct arena__free_node *nd;
    char *s;
    uintptr_t next;

    if (!(t->map[c / 64] & bit))
        return NULL;
    s = t->head[c];
    nd = (const struct arena__free_node *)(const void *)s;
    next = arena__link(nd->link, nd->len);
    /* Not exactly `len`: a longer block (arena_free's), which the general
     * path splits, or a node that does not decode. */
    if (nd->len != len || (next & (ARENA_ALIGN - 1)) != 0)
        return NULL;
    t->head[c] = (char *)next;
    if (!next)
        t->map[c / 64] &= ~bit;
    return s;
}

/* The same way back: files the block `s` of `len` bytes (a class bound) in
 * its class `c`.  (The map's bit is tested and set here as reuse.c's
 * listed() and set_head() do, written out: through those two, gcc kept
 * three registers saved in the Lua hook's free path instead of one.) */
static inline void arena__reuse_push(arena *a, char *s, unsigned c, size_t len)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    uint64_t bit = (uint64_t)1 << (c % 64);
    struct arena__free_node *nd = (struct arena__free_node *)(void *)s;
    uintptr_t next = (t->map[c / 64] & bit) ? (uintptr_t)t->head[c] : 0;

    nd->len = len;
    nd->link = arena__link(next, len);
    t->head[c] = s;
    t->map[c / 64] |= bit;
    t->filed++;
}

/* The page state of `a` while the lists are valid (NULL otherwise): the
 * reuse table starts with it.  revive() (reuse.c) clears all of it but
 * `newest` whenever the lists become valid again (after a reset or a
 * rewind), so a batch starts with no page current; `newest` lists every
 * page whose header is live, which the end of the batch erases. */
static inline struct arena__pages *arena__pages_live(const arena *a)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    return t && (a->pending & ARENA__PENDING_REUSE) ? (struct arena__pages *)(void *)t : NULL;
}

/* The family's page state of `a`, the lists made valid first (NULL: the
 * arena keeps no table: a fixed-size arena, or its backing failed). */
ARENA__HIDDEN struct arena__pages *arena__pages_of(arena *a);
/* The adapters' shrink (hooks.c): arena_realloc() to `new_size` (<
 * old_size), except that a value that is not the most recent moves to a
 * block of the new size, and its own goes back whole, so that no remainder
 * of an odd size is left to fragment the lists; in place, its tail given
 * back, only when that fails (size 0: in place).  NULL after a reported
 * misuse. */
ARENA__HIDDEN void *arena__shrink_moving(arena *a, void *ptr, size_t old_size, size_t new_size);

/* arena_allocator_of()'s functions (hooks.c): a block of `size` bytes that
 * starts ARENA_ALIGN bytes into a value of `a`, and its way back. */
ARENA__HIDDEN void *arena__nested_alloc(arena *a, size_t size);
ARENA__HIDDEN void arena__nested_free(arena *a, void *ptr, size_t size);

#endif /* ARENA_REUSE_H */
