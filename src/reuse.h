/*
 * Reuse of blocks given back within a batch (reuse.c): the lists of free
 * blocks by size class, and what the adapters and the arena call.  Never
 * installed.
 */
#ifndef ARENA_REUSE_H
#define ARENA_REUSE_H

#include "instrument.h"

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
/* `n` rounded up to the bound of its size class (16 at least; ARENA_ALIGN
 * steps above the largest class): the size the adapters of a plain build
 * ask for and give back, so that a freed block fits the next value of its
 * class exactly. */
ARENA__HIDDEN size_t arena__reuse_round(size_t n);
/* A filed block of at least `need` bytes, unlinked (its length in *len), or
 * NULL; one of a larger class, to be split, only if `carve`. */
ARENA__HIDDEN char *arena__reuse_take(arena *a, size_t need, bool carve, size_t *len);
/* Merges the filed blocks that lie side by side in a chunk into one (where
 * a value would otherwise take a new chunk), when enough blocks were filed
 * since the last merge: true when it ran.  O(n log n) in the blocks filed,
 * amortized over as many filings. */
ARENA__HIDDEN bool arena__reuse_merge(arena *a);
/* The adapters' fast path in a plain build (never an instrumented one: it
 * tells no tool), while the lists are valid
 * (ARENA__PENDING_REUSE): the head of the class of `len` (a class bound, as
 * arena__reuse_round() gives), unlinked, when it is exactly `len` bytes
 * long (as every block the adapters give back is); NULL otherwise. */
ARENA__HIDDEN char *arena__reuse_pop(arena *a, size_t len);
/* The same way back: files the block `s` of `len` bytes (a class bound). */
ARENA__HIDDEN void arena__reuse_push(arena *a, char *s, size_t len);
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

/* ---- Pages of the arena_cur_* family (hooks.c) ------------------------------------------
 *
 * A plain build keeps the family's blocks of at most ARENA__PAGE_BLOCK_MAX
 * bytes without a header: blocks of one size class share a page of
 * ARENA__PAGE bytes, aligned to it, whose header (at the page's start, which
 * the block's address finds) names the owner and the class.  The state below
 * lives in the reuse table; revive() (reuse.c) clears all of it but `newest`
 * whenever the lists become valid again (after a reset or a rewind), so a
 * batch starts with no page current; `newest` lists every page whose header
 * is live, which the end of the batch erases (arena__pages_erase()). */
#define ARENA__PAGE           ((size_t)4096)
#define ARENA__PAGE_CLASSES   17 /* blocks of 8, then 16, 32, ..., 256 bytes */
#define ARENA__PAGE_BLOCK_MAX ((size_t)256)

struct arena__page_class {
    char *free; /* a LIFO list of blocks given back (hooks.c), or NULL */
    char *next; /* the next block never handed out in the class's page */
    char *end;  /* the end of that page's blocks */
};

struct arena__pages {
    struct arena__page_class cls[ARENA__PAGE_CLASSES];
    char *rnext, *rend; /* pages of the current region not carved yet */
    size_t rpages;      /* pages of the last region (doubling, up to a bound) */
    char *newest;       /* the latest page carved, whose header links to the one before */
};

/* `n` bytes (whole pages) at ARENA__PAGE alignment, in the arena (arena.c),
 * not counted in arena_size(): the blocks carved from them count as they
 * are handed out.  NULL on out-of-memory or a limit (arena unchanged), which
 * is neither counted nor told to the limit's callback: the caller falls back
 * to a smaller request, which is. */
ARENA__HIDDEN char *arena__alloc_pages(arena *a, size_t n);
/* The family's page state of `a` while the lists are valid (NULL
 * otherwise): the reuse table starts with it (reuse.c). */
static inline struct arena__pages *arena__pages_live(const arena *a)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    return t && (a->pending & ARENA__PENDING_REUSE) ? (struct arena__pages *)(void *)t : NULL;
}

/* The family's page state of `a`, the lists made valid first (NULL: the
 * arena keeps no table: a fixed-size arena, or its backing failed). */
ARENA__HIDDEN struct arena__pages *arena__pages_of(arena *a);
/* Erases the header of every page carved after the mark of `serial` (0:
 * every page), newest first, so that no stale header outlives its page:
 * called by a reset, a rewind and a release before any memory is reused
 * or given back (reuse.c). */
ARENA__HIDDEN void arena__pages_erase(arena *a, struct arena__pages *pg, uint64_t serial);

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
