/* SPDX-License-Identifier: MIT */
/*
 * Pages: small blocks without a header (pages.c).  Never installed.
 *
 * In a plain build a block of at most ARENA__PAGE_BLOCK_MAX bytes that may be
 * given back (the reusing allocations' small values, the arena_cur_*
 * family's blocks) has no header.  Blocks of one size class share a page of
 * ARENA__PAGE bytes, aligned to its size.  The classes are the multiples of
 * 8 bytes up to 256: values at ARENA_ALIGN take 8 bytes (a block of 8 bytes
 * is 8-aligned, as any object that small needs, and as C23 asks of malloc),
 * then the 16-byte steps; the values of arena_hook_lua_align8() (8-byte
 * alignment) take any of them.  Pages are carved from regions the
 * arena stores (arena__alloc_pages()): 1 page, then twice the last, up to
 * REGION_PAGES, in each batch.  The page
 * starts with its header, which names the owner and the class; a free, a
 * realloc and a size query find it by masking the block's address.  So the
 * address of a block tells what it is, and how many bytes it holds, with no
 * byte of its own spent on it: a value of 64 bytes takes 64, not 80.
 *
 * The test reads the first word of the page a pointer lies in, whatever the
 * pointer is: that page is mapped, since the pointer's value has a byte
 * there.  A header is live only while its page is (the end of the batch, a
 * rewind past the page and a release erase every header they free:
 * arena__pages_erase()), and its check word mixes the page's address, its
 * fields and a per-process secret (the address of a static, which
 * address-space randomisation moves), so that no other data, a copy of a
 * header elsewhere included, passes it by accident.
 *
 * A free block of a class starts with its node: the next block (XORed with
 * its own address and a constant) and a key, the block's address mixed with
 * the secret, which a block handed out never keeps (handing out clears it),
 * so that a second free is reported.  A block of 8 bytes has no room for the
 * key: its page keeps a bit per block instead, after its header.  The
 * classes' lists and current pages live in the arena's reuse table
 * (reuse.h), forgotten with its other lists.
 *
 * The tools' builds (ASan, Valgrind, the checked build) keep no pages: they
 * poison, mark and check each value's own bounds, which a page would hide.
 */
#ifndef ARENA_PAGES_H
#define ARENA_PAGES_H

#include "instrument.h"

#define ARENA__PAGE           ((size_t)4096)
#define ARENA__PAGE_CLASSES   33 /* class c: blocks of 8 c bytes (c = 1..32; 0 unused) */
#define ARENA__PAGE_BLOCK_MAX ((size_t)256)

/* A class's state in an arena: its free blocks, and its current page. */
struct arena__page_class {
    char *free; /* a LIFO list of blocks given back, or NULL */
    char *next; /* the next block never handed out in the class's page */
    char *end;  /* the end of that page's blocks */
};

struct arena__pages {
    struct arena__page_class cls[ARENA__PAGE_CLASSES];
    char *rnext, *rend; /* pages of the current region not carved yet */
    size_t rpages;      /* pages of the last region (doubling, up to a bound) */
    char *newest;       /* the latest page carved, whose header links to the one before */
};

/* Whether values of at most ARENA__PAGE_BLOCK_MAX bytes go to pages. */
static inline bool arena__paging(void) { return ARENA_ALIGN <= 16 && !arena__instrumented(); }

struct arena__page_header {
    uintptr_t check;    /* arena__page_check() of the fields and the page's address */
    const arena *owner; /* the arena whose batch it belongs to */
    uintptr_t link;     /* the page carved before it, ORed with its class (1-32) */
    uint64_t saves;     /* the owner's marks taken when it was carved */
};

/* A page header's bytes, rounded up to ARENA_ALIGN. */
#define ARENA__PAGE_HDR ((sizeof(struct arena__page_header) + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1))
/* The bits of an address below its page's start. */
#define ARENA__PAGE_MASK ((uintptr_t)ARENA__PAGE - 1)
/* The smallest class's blocks: a bit per block of their page says it is free. */
#define ARENA__TINY        ((size_t)8)
#define ARENA__TINY_BITMAP ((ARENA__PAGE / ARENA__TINY + 7) / 8)
#define ARENA__PAGE_MIX    ((uintptr_t)UINT64_C(0xD6E8FEB86659FD93))
#define ARENA__PAGE_FREED  ((uintptr_t)UINT64_C(0x94D049BB133111EB))
#define ARENA__PAGE_NODE   ((uintptr_t)UINT64_C(0xBF58476D1CE4E5B9))

/* The per-process secret: the address of an object of the library's
 * (pages.c), which address-space randomisation moves, mixed. */
ARENA__HIDDEN extern const char arena__secret_anchor;

static inline uintptr_t arena__secret(void)
{
    return (uintptr_t)&arena__secret_anchor * (uintptr_t)UINT64_C(0x9E3779B97F4A7C15);
}

static inline uintptr_t arena__page_check(uintptr_t page, const arena *owner, uintptr_t link)
{
    return page ^ (uintptr_t)owner ^ link ^ arena__secret() ^ ARENA__PAGE_MIX;
}

/* The blocks of class `c`: 8 c bytes. */
static inline size_t arena__page_block(unsigned c) { return (size_t)c * 8; }

/* The class of the blocks of `block` bytes. */
static inline unsigned arena__page_class_at(size_t block) { return (unsigned)(block >> 3); }

/* The class of a value of `size` (1 to ARENA__PAGE_BLOCK_MAX) bytes at
 * ARENA_ALIGN where a value of at most 8 bytes needs only 8: class 1 (8
 * bytes, 8-aligned) for at most 8, then the 16-byte steps. */
static inline unsigned arena__page_class_of(size_t size)
{
    return size <= 8 ? 1 : (unsigned)((size + 15) >> 4) << 1;
}

/* The class of a value at 8-byte alignment of `size` (1 to
 * ARENA__PAGE_BLOCK_MAX) bytes: the next multiple of 8. */
static inline unsigned arena__page_class_align8(size_t size) { return (unsigned)((size + 7) >> 3); }

/* Where a page's first block of `block` bytes starts. */
static inline size_t arena__page_first(size_t block)
{
    return block == ARENA__TINY ? ARENA__PAGE_HDR + ARENA__TINY_BITMAP : ARENA__PAGE_HDR;
}

/* The page with a live header that `p` lies in (its owner and block size in
 * *owner and *block), or 0.  The word read may belong to anything, another
 * thread's block included, and is only compared. */
ARENA__NO_TSAN static inline uintptr_t arena__page_of(const void *p, const arena **owner,
                                                      size_t *block)
{
    uintptr_t page = (uintptr_t)p & ~ARENA__PAGE_MASK;
    struct arena__page_header h;
    memcpy(&h, (const void *)page, sizeof h);
    if (h.check != arena__page_check(page, h.owner, h.link))
        return 0;
    *owner = h.owner;
    *block = arena__page_block((unsigned)(h.link & ARENA__PAGE_MASK));
    return page;
}

static inline uintptr_t arena__page_word(const char *b, size_t i)
{
    uintptr_t w;
    memcpy(&w, b + i * sizeof w, sizeof w);
    return w;
}

static inline void arena__page_set_word(char *b, size_t i, uintptr_t w)
{
    memcpy(b + i * sizeof w, &w, sizeof w);
}

/* The key a free block of a page holds in its second word. */
static inline uintptr_t arena__page_freed_key(const char *b)
{
    return (uintptr_t)b ^ arena__secret() ^ ARENA__PAGE_FREED;
}

/* The byte of the bitmap of the page of the 8-byte block `b` that holds its
 * bit, and the bit. */
static inline unsigned char *arena__page_tiny_bit(const char *b, unsigned *bit)
{
    uintptr_t page = (uintptr_t)b & ~ARENA__PAGE_MASK;
    size_t i = (size_t)((uintptr_t)b - page - arena__page_first(ARENA__TINY)) / ARENA__TINY;
    *bit = 1u << (i % 8);
    return (unsigned char *)page + ARENA__PAGE_HDR + i / 8;
}

/* Whether the block `b` of `block` bytes of a page is free. */
static inline bool arena__page_is_freed(const char *b, size_t block)
{
    unsigned bit;
    if (block == ARENA__TINY)
        return (*arena__page_tiny_bit(b, &bit) & bit) != 0;
    return arena__page_word(b, 1) == arena__page_freed_key(b);
}

/* Marks the block `b` of `block` bytes of a page free, or not.  Always
 * inlined: each caller passes a constant `freed`, and arena_cur_malloc()'s
 * path must not pay a call for it. */
static ARENA__ALWAYS_INLINE void arena__page_set_freed(char *b, size_t block, bool freed)
{
    unsigned bit;
    unsigned char *w;
    if (block != ARENA__TINY) {
        arena__page_set_word(b, 1, freed ? arena__page_freed_key(b) : 0);
        return;
    }
    w = arena__page_tiny_bit(b, &bit);
    *w = (unsigned char)(freed ? *w | bit : *w & ~bit);
}

/* The head of the free list of `k`, of blocks of `block` bytes, unlinked;
 * NULL when its node does not decode (overwritten: a write after free). */
static ARENA__ALWAYS_INLINE char *arena__page_pop(struct arena__page_class *k, size_t block)
{
    char *b = k->free;
    char *next = (char *)(arena__page_word(b, 0) ^ (uintptr_t)b ^ ARENA__PAGE_NODE);
    if (ARENA__UNLIKELY(!arena__page_is_freed(b, block) ||
                        ((uintptr_t)next & (ARENA__TINY - 1)) != 0))
        return NULL;
    k->free = next;
    return b;
}

/* A block of class `c` (its state `k`), marked taken: the head of its free
 * list (*reused set), or the next of its page; NULL when the list's head does
 * not decode (overwritten) or the class has no list and its page is used up. */
static ARENA__ALWAYS_INLINE char *arena__page_take(struct arena__page_class *k, unsigned c,
                                                   bool *reused)
{
    size_t block = arena__page_block(c);
    char *b;
    if (k->free) {
        b = arena__page_pop(k, block);
        if (ARENA__UNLIKELY(b == NULL))
            return NULL;
        *reused = true;
    } else {
        if (k->next == k->end)
            return NULL;
        b = k->next;
        k->next += block;
        *reused = false;
    }
    arena__page_set_freed(b, block, false);
    return b;
}

/* Gives the block `b` of `block` bytes back to its class's list `k`. */
static ARENA__ALWAYS_INLINE void arena__page_give(struct arena__page_class *k, char *b,
                                                  size_t block)
{
    arena__page_set_word(b, 0, (uintptr_t)k->free ^ (uintptr_t)b ^ ARENA__PAGE_NODE);
    arena__page_set_freed(b, block, true);
    k->free = b;
}

/* Whether `p` is the start of a block of the page at `page` whose blocks
 * are `block` bytes long. */
static inline bool arena__page_on_boundary(const char *p, uintptr_t page, size_t block)
{
/* With no division: for x below 2^32, d divides x exactly when x * m <= m - 1
 * (modulo 2^64), m being 2^64 / d rounded up; one m for each block size a
 * page has (8 c for the classes c of 1 to 32), at index c. */
#define ARENA__DIVIDES(c) (UINT64_MAX / ((uint64_t)8 * (c)) + 1)
#define ARENA__DIVIDES4(c)                                                                         \
  ARENA__DIVIDES(c), ARENA__DIVIDES(c + 1), ARENA__DIVIDES(c + 2), ARENA__DIVIDES(c + 3)
    static const uint64_t m[] = {0,
                                 ARENA__DIVIDES4(1),
                                 ARENA__DIVIDES4(5),
                                 ARENA__DIVIDES4(9),
                                 ARENA__DIVIDES4(13),
                                 ARENA__DIVIDES4(17),
                                 ARENA__DIVIDES4(21),
                                 ARENA__DIVIDES4(25),
                                 ARENA__DIVIDES4(29)};
#undef ARENA__DIVIDES4
#undef ARENA__DIVIDES
    size_t off = (size_t)((uintptr_t)p - page), i = arena__page_class_at(block);
    uint64_t x;
    if (off < arena__page_first(block))
        return false;
    x = (uint64_t)(off - arena__page_first(block)); /* below ARENA__PAGE */
    return i < sizeof m / sizeof m[0] ? i && x * m[i] <= m[i] - 1 : x % block == 0;
}

/* `n` bytes (whole pages) at ARENA__PAGE alignment, in the arena (arena.c),
 * not counted in arena_size(): the blocks carved from them count as they
 * are handed out.  NULL on out-of-memory or a limit (arena unchanged), which
 * is neither counted nor told to the limit's callback: the caller falls back
 * to a smaller request, which is. */
ARENA__HIDDEN char *arena__alloc_pages(arena *a, size_t n);
/* Makes class `c` of the page state `pg` of `a` able to hand out a block,
 * where arena__page_take() found none: a list whose head did not decode
 * reported (ARENA_ERR_CORRUPT, naming `fn`) and dropped, a page carved when
 * the class's is used up, from the region in hand, else from the lists'
 * free blocks, else (only where `grow`) from a new region of the arena.
 * False when no page can be had so. */
ARENA__HIDDEN bool arena__page_refill(arena *a, struct arena__pages *pg, unsigned c, bool grow,
                                      const char *fn);
/* Erases the header of every page carved after the mark of `serial` (0:
 * every page), newest first, so that no stale header outlives its page:
 * called by a reset, a rewind and a release before any memory is reused
 * or given back (reuse.c). */
ARENA__HIDDEN void arena__pages_erase(struct arena__pages *pg, uint64_t serial);

#endif /* ARENA_PAGES_H */
