/* SPDX-License-Identifier: MIT */
/*
 * libarena: the private layout of the public structs.
 *
 * Included by arena.h before anything else it declares, never by itself.
 * The fields below are visible because the inline functions (internal/
 * arena.h) use them; nothing here is API, and any of it may change in any
 * release as long as the struct's size and alignment stay (the ABI).
 */
#ifndef ARENA_INTERNAL_TYPES_H
#define ARENA_INTERNAL_TYPES_H

#ifndef ARENA_ARENA_H
#  error "include <arena/arena.h>, not arena/internal/types.h"
#endif

#include <stddef.h>
#include <stdint.h>

/* One chunk of the chunk index.  Internal: refs resolve through it. */
struct arena__chunk {
    char *base; /* ARENA_ALIGN-aligned start */
    size_t cap; /* capacity in bytes */
};

/* Bytes of an arena's private bookkeeping, `cold`: its layout is the
 * library's own (src/cold.h) and may change in any 2.x release; only its
 * size and alignment are ABI, and they leave room for what later releases
 * add.  Internal. */
#define ARENA__COLD_BYTES 512

/* The storage of `cold`: bytes, aligned for anything the library keeps
 * there.  Internal. */
typedef union arena__cold_space {
    unsigned char bytes[ARENA__COLD_BYTES];
    uint64_t align_u64;
    void *align_ptr;
    size_t align_size;
} arena__cold_space;

/*
 * The arena.  A program reads none of its fields (arena_size(),
 * arena_retained() and the like report them); those before `cold` are
 * visible because the inline functions use them: ptr, end, size and counted on
 * every allocation, chunks and cur for refs, pos, cur, nused and saves for
 * marks, nchunks, buf, first, expired and countdown for the one-chunk reset
 * and release, high and peak for the peaks of arena_size() that the inline
 * rewind and reset must not lose, and all of these and lazy for the inline
 * arena_init_buffer().
 * `cold` holds the library's own bookkeeping.
 * `arena a = {0};` is a valid empty arena (64 KiB chunks, malloc backing).
 *
 * Invariant of the inline window: ptr <= end, end is ARENA_ALIGN-aligned, and
 * ptr rounded up to ARENA_ALIGN is still <= end.  When the window is closed
 * (ptr == end == NULL) every allocation takes the slow path; the library closes
 * it when it must see every allocation (sanitizers, Valgrind, checked builds).
 */
struct arena {
    char *ptr;     /* inline bump position, or NULL */
    char *end;     /* inline limit, or NULL */
    size_t size;   /* arena_size(), less the bytes the window holds past `counted` */
    char *counted; /* where the window's uncounted bytes start: the inline paths
                      bump ptr without touching size (a read-modify-write of a
                      counter on every allocation would chain each one to the
                      last through memory); arena_size() = size + (ptr - counted) */

    char *pos;                   /* position in the current chunk when ptr == NULL */
    struct arena__chunk *chunks; /* the chunk index: [0, nused) in use, then spares */
    uint32_t cur;                /* index of the current chunk (valid when cold.lim) */
    uint32_t nused;              /* chunks holding values of this batch */
    uint32_t nchunks;            /* chunks held (in use + spare) */
    uint32_t lazy;               /* nonzero: `cold` is not written yet (the inline
                                    arena_init_buffer() leaves it to the library) */
    uint32_t pending;            /* nonzero: the library holds state that a reset,
                                    rewind or release must see, so the inline ones
                                    call it (ARENA__PENDING_*, below) */
    uint32_t countdown;          /* 1 + the resets the inline path may still make
                                    before the library's next call; 0: released
                                    inline (see arena__reset_first()) */
    char *buf;                   /* the caller's first chunk, or NULL */
    struct arena__chunk first;   /* the index while it has one slot */
    uint64_t saves;              /* marks taken: the serial of the latest */
    uint64_t expired;            /* marks up to this serial expired (reset, release) */
    size_t high;                 /* this batch's largest arena_size() before its latest
                                    fall: every path that forgets values (a rewind, a
                                    value given back; inline or not) notes the size
                                    it leaves first, so the peak is max(high, size) */
    size_t peak;                 /* the largest `high` of the batches ended (a reset,
                                    a release folds the batch's in) */
    arena__cold_space cold;      /* the library's: private */
};

/*
 * Bits of `pending`: state of the library's that the end of a batch or of a
 * scope must see.  While any bit is set, the inline release calls the
 * library; while any bit but HOLDS is set, the inline reset and rewind do.
 *
 *   REUSE    the lists of free blocks are valid (src/reuse.c);
 *   CLEANUP  cleanups are registered, or running (src/cleanup.c);
 *   OVER     the arena holds more than its limit (arena_set_limit()): its
 *            window stays closed and the library refuses allocations until
 *            it is under the limit again;
 *   HOLDS    the library holds something for the arena beyond its chunks
 *            (the reuse table, a record in the registry), which the inline
 *            release would leak;
 *   GUARD    the batch in progress is guarded, or every batch is
 *            (src/guard.c), so that its end comes to the library, which
 *            makes its pages inaccessible.
 */
#define ARENA__PENDING_REUSE   1u
#define ARENA__PENDING_CLEANUP 2u
#define ARENA__PENDING_OVER    4u
#define ARENA__PENDING_HOLDS   8u
#define ARENA__PENDING_GUARD   16u

#endif /* ARENA_INTERNAL_TYPES_H */
