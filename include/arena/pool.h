/*
 * libarena: the fixed-capacity pool.
 *
 * A pool hands out slots of one size from storage reserved once, at init, in
 * one contiguous region; a slot's address never changes.  Allocation and
 * freeing are O(1), never touch the heap, and recycle LIFO: the slot freed
 * last is the next one handed out.  Every bad free (NULL, a pointer that is
 * not the start of one of the pool's slots, a slot that is already free) is
 * detected exactly, in every build, reported through the error handler of
 * arena.h, and leaves the pool as it was.
 *
 * Thread-safety: a pool is NOT thread-safe.  One thread at a time may use a
 * given pool (several threads may use several pools).  Do not copy a pool
 * struct after init (the copy would share the storage); pass `arena_pool *`.
 *
 * This header includes only arena.h, and is usable from C++.
 */
#ifndef ARENA_POOL_H
#define ARENA_POOL_H

#include "arena/arena.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Slot states, one byte per slot (internal).  A free slot remembers whether
 * it was ever handed out, so that a bad free can say which mistake it was. */
#define ARENA__POOL_NEVER 0u /* free, never handed out */
#define ARENA__POOL_LIVE  1u /* handed out */
#define ARENA__POOL_FREED 2u /* free, handed out and given back */

/*
 * The pool.  The first eight fields are what the inline paths read; the rest
 * is the library's.  The zero value (`arena_pool p = {0};`) is a valid empty
 * pool of capacity 0, and so is a pool after arena_pool_destroy() or a failed
 * init: alloc returns NULL, free reports, destroy does nothing.
 *
 * The free-list links live in the metadata (`stack`), not in the slots, so a
 * stray write into a freed slot cannot corrupt the pool: it can only spoil
 * bytes that are the program's own garbage.  Layout of the one region:
 *
 *     [ cap slots of `stride` bytes | stack: cap uint32 | state: cap bytes ]
 *
 * The hot fields fill the first 64 bytes.  The counters are size_t so that
 * the fast paths index with them directly (no zero extension).
 */
typedef struct arena_pool {
    char *base;      /* slot 0; slot i starts at base + i * stride */
    uint32_t *stack; /* free slot indices; stack[nfree - 1] is handed out next */
    unsigned char *state; /* one ARENA__POOL_* byte per slot */
    size_t nfree;    /* free slots */
    size_t open;     /* cap while the inline paths are open; 0 closes them */
    size_t inv;      /* inverse of the stride's odd part, modulo 2^N (N: size_t bits) */
    size_t stride;   /* slot size: obj_size rounded up to obj_align */
    size_t shift;    /* trailing zero bits of stride */

    size_t cap;              /* slots (at most UINT32_MAX) */
    size_t obj_size;         /* as asked (0 counts as 1) */
    size_t obj_align;        /* as asked */
    void *block;             /* the region as the backing allocator gave it; NULL: the caller's */
    size_t block_size;       /* its size, as asked of the backing allocator */
    arena_allocator backing; /* alloc == NULL: malloc */
} arena_pool;

/* ---- Lifetime ------------------------------------------------------------------ */

/**
 * Initialises `p` with `capacity` slots for objects of `obj_size` bytes at
 * alignment `obj_align` (a power of two; 0 and other values are refused).
 * Slot size is obj_size rounded up to obj_align (obj_size 0 counts as 1);
 * no slot is smaller than the object, none needs to hold a pointer.
 * All storage (slots and bookkeeping) is one block from `backing` (copied;
 * NULL: malloc), padded when obj_align > ARENA_ALIGN; destroy gives it back.
 *
 * Returns false, with `*p` the empty pool and nothing allocated, when the
 * backing allocator fails, capacity is 0 or above UINT32_MAX, obj_align is not
 * a power of two, or the storage size would overflow size_t.  Do not call it
 * on a pool that holds storage (destroy it first).  Not thread-safe.
 */
ARENA_NODISCARD
ARENA_API bool arena_pool_init(arena_pool *p, size_t obj_size, size_t obj_align, size_t capacity,
                               const arena_allocator *backing);

/**
 * The bytes a caller's buffer needs for arena_pool_init_buffer() with these
 * arguments; 0 when they are invalid (as for arena_pool_init()) or the size
 * would overflow size_t.  Thread-safe (pure).
 */
ARENA_API size_t arena_pool_buffer_size(size_t obj_size, size_t obj_align, size_t capacity);

/**
 * arena_pool_init() on the caller's `buf` of `len` bytes: nothing is ever
 * allocated and destroy never frees `buf`.  `buf` must be aligned to both
 * obj_align and ARENA_ALIGN (e.g. `_Alignas(max_align_t)` or malloc), and
 * `len >= arena_pool_buffer_size(obj_size, obj_align, capacity)`; otherwise,
 * or for arguments arena_pool_init() refuses, returns false with `*p` the
 * empty pool.  `buf` must outlive the pool; the pool owns it until destroy.
 */
ARENA_NODISCARD
ARENA_API bool arena_pool_init_buffer(arena_pool *p, void *buf, size_t len, size_t obj_size,
                                      size_t obj_align, size_t capacity);

/**
 * Gives the storage back to where it came from (the backing allocator or
 * malloc; a caller's buffer is left to the caller, unpoisoned) and leaves `*p`
 * the empty pool of capacity 0: safe to destroy again, to alloc from (NULL)
 * or to init again.  Every slot pointer expires.  Not thread-safe.
 */
ARENA_API void arena_pool_destroy(arena_pool *p);

/* ---- Slow paths (internal; called by the inline functions below) ------------ */

ARENA_API void *arena__pool_alloc_slow(arena_pool *p);
ARENA_API void arena__pool_free_slow(arena_pool *p, void *obj);

/* ---- Slot-state transitions (internal) ----------------------------------------
 * Every change of a slot's state goes through these two, inline or not, so
 * that the library's wrappers (src/pool.c take/give) are the one place that
 * adds sanitizer annotations. */

/* Hands out the top of the free stack.  Requires nfree > 0.  The count is
 * stored last (see arena_pool_alloc). */
static inline void *arena__pool_pop(arena_pool *p)
{
    size_t n = p->nfree - 1;
    size_t i = p->stack[n];
    p->state[i] = (unsigned char)ARENA__POOL_LIVE;
    p->nfree = n;
    return p->base + i * p->stride;
}

/* Takes slot i back.  Requires i < cap and state[i] == LIVE.  The count is
 * stored last. */
static inline void arena__pool_push(arena_pool *p, size_t i)
{
    size_t n = p->nfree;
    p->stack[n] = (uint32_t)i;
    p->state[i] = (unsigned char)ARENA__POOL_FREED;
    p->nfree = n + 1;
}

/*
 * The slot index of `obj`, or a value >= cap when `obj` is not a slot start
 * (outside the storage, inside a slot, or NULL).  No division: with
 * stride = d * 2^k (d odd) and inv = d^-1 mod 2^N, an offset that is i * stride
 * maps to i exactly, and any other offset, below the storage or past it
 * included, maps to a value >= cap (the low k bits of off * inv are non-zero
 * and rotate to the top, or the quotient is not exact and comes out above
 * SIZE_MAX / stride >= cap).  One multiply, one rotate, one compare: a range
 * and stride check in one.
 */
static inline size_t arena__pool_index(const arena_pool *p, const void *obj)
{
    size_t x = (size_t)((uintptr_t)obj - (uintptr_t)p->base) * p->inv;
    size_t k = p->shift;
    return (x >> k) | (x << ((0 - k) & (sizeof(size_t) * 8 - 1)));
}

/* ---- Slots ------------------------------------------------------------------------ */

/**
 * A free slot (uninitialised: the pool never zeroes or constructs), aligned
 * to obj_align, of at least obj_size bytes; NULL when every slot is taken
 * (pool unchanged).  O(1), no heap work.  LIFO: the slot freed last comes
 * back first.  Under AddressSanitizer the slot's obj_size bytes are
 * unpoisoned (every free slot is poisoned).  Not thread-safe.
 *
 * Fast path, gcc 12 -O2 x86-64: 11 instructions and one not-taken branch
 * (load nfree, lea nfree - 1, compare with the `open` field, load the stack
 * top, store nfree, store the slot state, imul by the stride, add the base).
 * Checked by objdump; see docs/fast-path.md.
 */
ARENA_NODISCARD ARENA_MALLOC
static inline void *arena_pool_alloc(arena_pool *p)
{
    size_t n = p->nfree - 1;
    void *obj;
    if (ARENA__INLINE_WINDOW && ARENA_LIKELY(n < p->open)) {
        obj = arena__pool_pop(p);
    } else {
        obj = arena__pool_alloc_slow(p);
        n = p->nfree;
    }
    /* The count is stored on every path (the slow one stores back what the
     * call left): then a loop of calls carries it in a register instead of
     * reloading it through memory at every call. */
    p->nfree = n;
    return obj;
}

/**
 * Gives slot `obj` back.  O(1), no heap work.  Misuse is detected exactly in
 * every build, reported once through the error handler, and then the call
 * does nothing: NULL (ARENA_ERR_NULL_FREE), a pointer outside the storage or
 * not at a slot start (ARENA_ERR_FOREIGN_POINTER), a slot already free, freed
 * before or never handed out (ARENA_ERR_DOUBLE_FREE).  `obj` may be any
 * pointer (the checks never dereference it).  Under AddressSanitizer the
 * slot is poisoned again, so a use after free is reported.  Not thread-safe.
 *
 * Fast path, gcc 12 -O2 x86-64: 17 instructions and two not-taken branches
 * (offset from the base, imul by the inverse, rotate by the shift, compare
 * with `open`, load and compare the slot state, store it, push the index),
 * plus a push and pop of `p` in a function that does nothing else (the slow
 * path's write-back of the count needs it after the call).  Checked by
 * objdump; see docs/fast-path.md.
 */
static inline void arena_pool_free(arena_pool *p, void *obj)
{
    size_t i = arena__pool_index(p, obj);
    size_t n;
    if (ARENA__INLINE_WINDOW && ARENA_LIKELY(i < p->open) &&
        ARENA_LIKELY(p->state[i] == ARENA__POOL_LIVE)) {
        arena__pool_push(p, i);
        n = p->nfree;
    } else {
        arena__pool_free_slow(p, obj);
        n = p->nfree;
    }
    p->nfree = n; /* on every path, as in arena_pool_alloc */
}

/* ---- Queries ---------------------------------------------------------------------- */

/** True when `obj` is the start of one of the pool's slots, live or free
 *  (any pointer may be asked; none is dereferenced).  O(1).  Reads only
 *  fields that init sets, so it may run beside other queries. */
static inline bool arena_pool_owns(const arena_pool *p, const void *obj)
{
    return arena__pool_index(p, obj) < p->cap;
}

/** Number of slots. */
static inline size_t arena_pool_capacity(const arena_pool *p) { return p->cap; }

/** Live objects: slots handed out and not freed. */
static inline size_t arena_pool_used(const arena_pool *p) { return p->cap - p->nfree; }

/** Free slots: how many allocations will succeed from now. */
static inline size_t arena_pool_available(const arena_pool *p) { return p->nfree; }

/**
 * Walks the pool's bookkeeping (every slot state and the whole free stack)
 * and reports the first inconsistency through the error handler
 * (ARENA_ERR_CORRUPT).  Returns true when consistent.  Any build.  O(cap).
 * It marks slot states while it walks and restores them before it returns
 * (or reports), so like every pool call it must not run concurrently with
 * another call on the same pool.
 */
ARENA_API bool arena_pool_check(const arena_pool *p);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_POOL_H */
