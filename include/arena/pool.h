/* SPDX-License-Identifier: MIT */
/*
 * libarena: the fixed-capacity pool.
 *
 * A pool hands out slots of one size from storage reserved once, at init, in
 * one contiguous region; a slot's address never changes.  Allocation and
 * freeing are O(1), never touch the heap, and recycle LIFO: the slot freed
 * last is the next one handed out.
 *
 * The contract every pool function shares, unless its comment says otherwise:
 *   - Thread-safety: a pool is NOT thread-safe.  One thread at a time may use
 *     a given pool (several threads may use several pools).
 *   - Ownership: the pool owns its storage; a slot belongs to the caller from
 *     arena_pool_alloc() to arena_pool_free(), and every slot pointer expires
 *     at arena_pool_destroy().  Do not copy a pool struct after init (the
 *     copy would share the storage); pass `arena_pool *`.
 *   - Failure: a full pool or out-of-memory is not an error (NULL, false),
 *     and the pool is as it was.  Every bad free (NULL, a pointer that is not
 *     the start of one of the pool's slots, a slot that is already free) is
 *     detected exactly, in every build, reported through the error handler
 *     of arena.h, and leaves the pool as it was.
 *   - Checked build: a freed slot is filled with 0xDD, and a write into it
 *     after the free is reported (ARENA_ERR_CORRUPT) when it is handed out
 *     again; arena_pool_check() runs when the pool becomes empty and at
 *     destroy.  Under AddressSanitizer every free slot is poisoned.
 *
 * The inline functions declared here are defined in arena/internal/pool.h,
 * which this header includes at its end.  This header includes only arena.h,
 * and is usable from C++.
 */
#ifndef ARENA_POOL_H
#define ARENA_POOL_H

#include "arena/arena.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The pool.  A program reads none of its fields (the queries below report
 * them); they are visible because the inline functions read them: the first
 * eight on alloc and free, and cap and nfree for the queries.  The zero value
 * (`arena_pool p = {0};`) is a valid empty pool of capacity 0, and so is a
 * pool after arena_pool_destroy() or a failed init: alloc returns NULL, free
 * reports, destroy does nothing.
 *
 * The free-list links live in the metadata (the stack), not in the slots, so
 * a stray write into a freed slot cannot corrupt the pool: it can only spoil
 * bytes that are the program's own garbage.  Layout of the one region:
 *
 *     [ cap slots of `stride` bytes | stack: cap uint32 | states: cap uint32 ]
 *
 * The addresses are held as integers, and states take 4 bytes, so that no
 * store of a loop of pool calls (a pointer, an index, a state) may alias a
 * hot field: the compiler keeps them in registers (docs/fast-path.md).
 */
typedef struct arena_pool {
    uintptr_t base;  /**< address of slot 0; slot i starts at base + i * stride */
    uintptr_t stack; /**< address of the free stack (uint32_t); its top is [nfree - 1] */
    uintptr_t state; /**< address of the slot states, one uint32_t per slot */
    size_t nfree;    /**< free slots */
    size_t open;     /**< cap while the inline paths are enabled; 0 disables them */
    size_t inv;      /**< inverse of the stride's odd part, modulo 2^N (N: size_t bits) */
    size_t stride;   /**< slot size: obj_size rounded up to obj_align */
    size_t shift;    /**< trailing zero bits of stride */

    size_t cap;              /**< slots (at most UINT32_MAX) */
    size_t obj_size;         /**< as asked (0 counts as 1) */
    size_t obj_align;        /**< as asked */
    void *block;             /**< the region as the backing allocator gave it; NULL: the caller's */
    size_t block_size;       /**< its size, as asked of the backing allocator */
    arena_allocator backing; /**< alloc == NULL: malloc */
    /** Reserved for the library (later 2.x releases keep more state here);
     *  its contents are private. */
    union {
        unsigned char bytes[64];
        uint64_t align_u64;
        void *align_ptr;
    } reserved;
} arena_pool;

/* ---- Lifetime ------------------------------------------------------------------ */

/**
 * Initialises `p` with `capacity` slots for objects of `obj_size` bytes at
 * alignment `obj_align` (a power of two; 0 and other values are refused).
 * Slot size is obj_size rounded up to obj_align (obj_size 0 counts as 1);
 * no slot is smaller than the object, none needs to hold a pointer.
 * All storage (slots and bookkeeping) is one block from `backing` (the struct
 * is copied; NULL: malloc), padded when obj_align > ARENA_ALIGN; destroy gives
 * it back.
 *
 * Returns false, with `*p` the empty pool and nothing allocated, when the
 * backing allocator fails, capacity is 0 or above UINT32_MAX, obj_align is not
 * a power of two, or the storage size would overflow size_t.  Requires a pool
 * that holds no storage (destroy it first).
 */
ARENA__NODISCARD
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
ARENA__NODISCARD
ARENA_API bool arena_pool_init_buffer(arena_pool *p, void *buf, size_t len, size_t obj_size,
                                      size_t obj_align, size_t capacity);

/**
 * Gives the storage back to where it came from (the backing allocator or
 * malloc; a caller's buffer is left to the caller, unpoisoned) and leaves `*p`
 * the empty pool of capacity 0: safe to destroy again, to alloc from (NULL)
 * or to init again.  Every slot pointer expires.  Never fails.  Checked
 * build: runs arena_pool_check() first.
 */
ARENA_API void arena_pool_destroy(arena_pool *p);

/* ---- Slots ------------------------------------------------------------------------ */

/**
 * A free slot (uninitialised: the pool never zeroes or constructs), aligned
 * to obj_align, of at least obj_size bytes, the caller's until it frees it;
 * NULL when every slot is taken (pool unchanged).  O(1), no heap work.  LIFO:
 * the slot freed last comes back first.  Inline: one compare on the count,
 * and the pool's fields stay in registers across a loop of calls
 * (docs/fast-path.md).  Checked build: reports a write into the slot since it
 * was freed (ARENA_ERR_CORRUPT).  Under AddressSanitizer the slot's obj_size
 * bytes are unpoisoned.
 */
ARENA__NODISCARD ARENA__MALLOC static inline void *arena_pool_alloc(arena_pool *p);

/**
 * Gives slot `obj` back.  O(1), no heap work.  Misuse is detected exactly in
 * every build, reported once through the error handler, and then the call
 * does nothing: NULL (ARENA_ERR_NULL_FREE), a pointer outside the storage or
 * not at a slot start (ARENA_ERR_FOREIGN_POINTER), a slot already free, freed
 * before or never handed out (ARENA_ERR_DOUBLE_FREE).  `obj` may be any
 * pointer (the checks never dereference it).  Inline: one multiply and one
 * rotate check range and stride at once.  Checked build: fills the slot with
 * 0xDD.  Under AddressSanitizer the slot is poisoned again, so a use after
 * free is reported.
 */
static inline void arena_pool_free(arena_pool *p, void *obj);

/* ---- Queries ---------------------------------------------------------------------- */

/** True when `obj` is the start of one of the pool's slots, live or free
 *  (any pointer may be asked; none is dereferenced).  O(1).  Reads only
 *  fields that init sets, so it may run beside other queries. */
static inline bool arena_pool_owns(const arena_pool *p, const void *obj);

/** Number of slots.  O(1). */
static inline size_t arena_pool_capacity(const arena_pool *p);

/** Live objects: slots handed out and not freed.  O(1). */
static inline size_t arena_pool_used(const arena_pool *p);

/** Free slots: how many allocations will succeed from now.  O(1). */
static inline size_t arena_pool_available(const arena_pool *p);

/** What arena_pool_get_stats() reports of a pool. */
typedef struct arena_pool_stats {
    const char *name;       /**< arena_pool_name() */
    size_t capacity;        /**< slots */
    size_t used;            /**< slots handed out now */
    size_t peak_used;       /**< the most slots handed out at once since init */
    size_t slot_size;       /**< bytes per slot: obj_size rounded up to obj_align */
    size_t stored;          /**< used * obj_size: the bytes the live objects ask for */
    size_t held;            /**< bytes taken from the backing allocator (0 on a caller's
                                 buffer), which holds them from init to destroy */
    size_t waste;           /**< bytes of the storage (the block, or the caller's
                                 buffer's used part) that no object can use: slot
                                 padding, alignment, the bookkeeping */
    uint64_t backing_calls; /**< calls to the backing allocator: 1 at init, 1 at destroy */
} arena_pool_stats;

/**
 * Fills `*out` with the pool's figures.  Exact in every build: the inline
 * paths keep nothing beside the count of free slots, and the peak is read
 * from the slot states (slots are first handed out in order: those ever
 * handed out are a prefix, as long as the most ever live at once), in
 * O(log capacity).  The pool's own thread calls it, as every call on it.
 */
ARENA_API void arena_pool_get_stats(const arena_pool *p, arena_pool_stats *out);

/** Names the pool for arena_pool_get_stats() and the report (report.h): the
 *  caller's string, kept alive by the caller while the pool has it (NULL:
 *  none; again: replaces it).  Init clears it. */
ARENA_API void arena_pool_set_name(arena_pool *p, const char *name);

/** The pool's name, NULL when it has none. */
ARENA_API const char *arena_pool_name(const arena_pool *p);

/**
 * Walks the pool's bookkeeping (every slot state and the whole free stack)
 * and reports the first inconsistency through the error handler
 * (ARENA_ERR_CORRUPT).  Returns true when consistent.  Any build.  O(cap), no
 * allocation.  It marks slot states while it walks (the one exact way to find
 * a slot the free stack names twice without memory of its own) and restores
 * them before it returns or reports, hence the non-const pool: it must not
 * run concurrently with any other call on the same pool, queries included.
 */
ARENA_API bool arena_pool_check(arena_pool *p);

#ifdef __cplusplus
}
#endif

#include "arena/internal/pool.h"

#endif /* ARENA_POOL_H */
