/* SPDX-License-Identifier: MIT */
/*
 * The arena's private bookkeeping: the layout of the `cold` bytes of the
 * public struct.  Never installed; the white-box tests include it.
 */
#ifndef ARENA_COLD_H
#define ARENA_COLD_H

#include <stdint.h>

#include "arena/arena.h"

/* Serials (from, to] of marks that a rewind expired. */
struct arena__span {
    uint64_t from, to;
};

/* The history of demand the retention policy keeps: the largest demand of
 * each block of ARENA__BLOCK batches, for the latest ARENA__BLOCKS blocks
 * (ARENA_RETAIN_BATCHES batches in all). */
#define ARENA__BLOCK  32u
#define ARENA__BLOCKS (ARENA_RETAIN_BATCHES / ARENA__BLOCK)

/* Spans an arena remembers (see arena_rewind()). */
#define ARENA__DEAD_SPANS 4

struct arena__reuse;
struct arena__node;

/* What arena_get_stats() reports beside the arena's own fields: counts kept
 * on the library's paths only (the inline paths touch none of them). */
struct arena__counts {
    size_t held;                /* bytes taken from the backing now: chunks with their
                                   overhead, the index, the reuse table */
    size_t peak_held;           /* the most `held` has been since init */
    size_t inuse;               /* what values may fill of the chunks in use, [0, nused)
                                   (fill_cap() in arena.c) */
    size_t peak_retained;       /* the largest arena_retained() since init */
    size_t peak_retained_batch; /* ... since the batch began */
    uint64_t reused;            /* bytes handed out again from blocks given back */
    uint64_t calls;             /* calls to the backing allocator (both ways) */
    uint64_t resets;            /* batches ended by the library (resets, releases) */
    uint64_t limit_hits;        /* allocations refused by a limit or the backing */
};

/* Settings an operator gives (limits, names: arena_set_limit() and the like). */
struct arena__settings {
    size_t limit;             /* the arena's limit, when ARENA__LIMITED */
    const char *name;         /* the caller's string, or NULL */
    arena_limit_fn *on_limit; /* NULL: none */
    void *on_limit_ctx;
    struct arena_budget *budget; /* a group limit charged beside, or NULL */
    struct arena__node *node;    /* its entry in the registry, or NULL */
    uint32_t changed;            /* nonzero: one of the above was set since the arena
                                    cache last gave the arena its settings (cache.c) */
};
struct arena_cleanup;

/* What the library keeps of each chunk beside its entry of the index (see
 * the chunk index in src/arena.c). */
struct arena__slot {
    uint64_t key;   /* its place in the order of the spares */
    uint32_t last;  /* the last batch that used it (arena__cold.batch) */
    uint32_t paged; /* nonzero: mapped by the page layer for a guarded batch
                       (src/guard.c), not the backing's */
};

/* Flags of arena__guard_state: ON, every batch guarded (arena_set_guard());
 * NOW, the batch in progress is guarded; DECIDED, the batch in progress was
 * decided. */
#define ARENA__GUARD_ON      1u
#define ARENA__GUARD_NOW     2u
#define ARENA__GUARD_DECIDED 4u

/* An arena's part in guarded batches (src/guard.c, src/arena_guard.inc.c). */
struct arena__guard_state {
    uint32_t flags; /* ARENA__GUARD_* */
    uint32_t cut;   /* inline resets `countdown` withholds, so that the
                       library sees the batch of the next decision begin */
    uint64_t gap;   /* sampled: the batches that begin before the next
                       decision (by count, the guarded batch; by time, a look
                       at the clock: src/guard.c) */
    uint64_t id;    /* identity in the quarantine's records; 0: none yet */
    uint64_t ended; /* batches ended, as the fault reporter counts them */
    uint32_t clock; /* the slot of its clock (arena__guard_identity()) */
    uint32_t seen;  /* sampled by time: `ended` at the last look at the clock */
    char *keep;     /* this batch's highest position that the shrink of a most
                       recent value left behind: an enclosing mark may lie
                       there, so no rewind retires below it; NULL: none */
    uint64_t look;  /* sampled by time: the clock at that look */
    uint32_t gen;   /* the sampling's setting that `gap` was drawn under */
    uint32_t scope; /* `ended` as the last sampled scratch scope began */
};

/* Instrumented builds: what a rewind needs to cut a value grown in place
 * after its mark back to the size it had at the mark (instrument.c). */
struct arena__sizes {
    uint64_t calm; /* no value was resized in place since marks above this serial */
    char *at;      /* the value noted (NULL: none, or its size unknown) ... */
    size_t size;   /* ... had this size, as the tools saw it, ... */
    uint64_t from; /* ... at every mark of a serial in (from, to] */
    uint64_t to;
};

/* What only the library reads, in the public struct's `cold` bytes (the
 * inline functions never touch it, so its layout may change in any 2.x
 * release as long as it fits). */
struct arena__cold {
    char *lim;                     /* end of the current chunk; NULL: none */
    uint32_t ncap;                 /* slots in the index */
    uint32_t batch;                /* the batch in progress, counted from the start */
    uint64_t nkeys;                /* `key` of the next new chunk */
    uint64_t born;                 /* keys from `born` on: chunks allocated this batch */
    uint32_t flags;                /* ARENA__FIXED, ARENA__BUF_OPEN, ARENA__OUTGREW(_LAST);
                                      the checked build's tag serial in bits 8-31 */
    size_t retained;               /* arena_retained() */
    size_t chunk_size;             /* regular chunk capacity; 0: ARENA_DEFAULT_CHUNK */
    arena_allocator backing;       /* alloc == NULL: malloc */
    size_t demand[ARENA__BLOCKS];  /* the largest demand of each of the latest blocks
                                      of ARENA__BLOCK batches (see retention_target()) */
    struct arena__reuse *reuse;    /* blocks given back for reuse (src/reuse.c); NULL: none yet */
    struct arena__slot first_slot; /* the slot of `first` while the index is there */
    uint32_t ndead;                /* spans in `dead` */
    struct arena__span dead[ARENA__DEAD_SPANS]; /* marks expired by rewinds, by serial:
                                                   the latest spans, oldest first */
    struct arena__counts counts;
    struct arena__settings set;
    struct arena_cleanup *cleanups; /* the latest registered (src/cleanup.c); NULL: none */
    arena *parent;                  /* a child arena's parent (src/child.c), else NULL */
    struct arena_cleanup *tie;      /* the child's cleanup on its parent while it holds
                                       memory of the parent's; NULL: none */
    struct arena__guard_state guard;
    struct arena__sizes sizes;
};

/* The arena's bookkeeping.  Access is through this one accessor, which
 * views the public struct's bytes as the library's struct. */
static inline struct arena__cold *arena__cold(const arena *a)
{
    return (struct arena__cold *)(void *)(uintptr_t)a->cold.bytes;
}

/* The capacity of a regular chunk of `a` (arena_init()'s chunk_bytes). */
static inline size_t arena__chunk_size(const arena *a)
{
    return arena__cold(a)->chunk_size ? arena__cold(a)->chunk_size : ARENA_DEFAULT_CHUNK;
}

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct arena__cold) <= ARENA__COLD_BYTES,
               "struct arena__cold outgrew the room arena.h reserves for it");
_Static_assert(_Alignof(struct arena__cold) <= _Alignof(arena__cold_space),
               "struct arena__cold needs more alignment than arena.h gives it");
#endif

#endif /* ARENA_COLD_H */
