/* SPDX-License-Identifier: MIT */
/*
 * A reference model of the arena, and a generator of mixed operations checked
 * against it.  Shared by the randomized suite (test_arena_model.c), the
 * failure sweep (test_arena_failure.c) and the fuzzer (fuzz/fuzz_arena.c),
 * which draws the model's choices from its input bytes instead of a seeded
 * generator.
 *
 * The model knows only what arena.h promises:
 *   - every live value keeps its bytes (each is filled with a pattern derived
 *     from its id, so any overlap or stray write shows);
 *   - arena_size() is the sum of the sizes stored (strings with their NUL),
 *     restored by a rewind, 0 after a reset;
 *   - arena_retained() is at least base + the sizes of the live oversized
 *     values (each has a chunk of its own), where base is the caller's
 *     buffer; it never decreases but at a reset or release (stores and
 *     rewinds keep every chunk), and a reset never increases it;
 *   - a value goes to the current chunk when it fits, else to a chunk of
 *     its own when its size, plus the padding its alignment may need beyond
 *     ARENA_ALIGN, exceeds the chunk size, else to a regular chunk that becomes
 *     the current one (so the model knows which value grow may extend in
 *     place, with no positions, padding or guard bytes);
 *   - a failed call returns NULL (or the empty ref) only when the backing
 *     refused a request during it, and changes nothing;
 *   - misuse (drawn when `misuse` is set: a rewind to an expired mark, a
 *     scope ended after an enclosing one, a stale ref in a checked build, a
 *     ref too large) is reported once, with its code, and changes nothing.
 *
 * Two optional parts (model_limits(), model_cleanups()) add:
 *   - limits: the arena's limit set at random (0, SIZE_MAX, below what it
 *     holds, just above), a budget it may charge, a trim now and then, and
 *     resets that keep at most a number of bytes (arena_reset_to()).  The
 *     limit callback is told of every refusal, and each one crosses its
 *     limit (or the backing failed); a call fails only with a refusal, and
 *     then, unless the request refused was the chunk index's, the value's
 *     smallest chunk exceeds the room left (a chunk is cut down to the room);
 *     arena_get_stats() is exact: held is what the counting backing holds,
 *     backing calls are its calls, resets and limit hits are counted here;
 *     held never crosses the limit but where the limit was set below it, and
 *     then every store fails, and nothing more is taken, until the arena is
 *     under it again;
 *   - cleanups: pushed between marks, cancelled now and then; each runs
 *     exactly once, the latest first, at the reset, release or rewind to a
 *     mark taken before it, and never otherwise; its record is a value of
 *     the arena (48 bytes on 64-bit targets), given back by a cancel.  A
 *     cleanup may store a value (it dies with the batch or scope), cancel a
 *     cleanup yet to run, or misuse the arena (a push, a reset, a rewind or
 *     a release from a cleanup; a cancel of one that ran): reported as
 *     ARENA_ERR_CLEANUP, and nothing happens.
 *
 * Checking: after every step the counters and two values; every value every
 * 128 steps, before a reset or release, and before and after a rewind (those
 * it forgets, those it keeps); arena_check() after every step too, unless
 * `light` (a fuzzer, which calls model_finish() at the end of each input
 * instead).  So every value is checked before it is forgotten.
 */
#ifndef ARENA_TEST_MODEL_H
#define ARENA_TEST_MODEL_H

#include "support.h"

#include <stdio.h>

#include <arena/thread.h>

#include "cold.h" /* white-box: the chunk index */

/* Draw rewinds to marks that a rewind to an earlier mark expired (a scope
 * ended after an enclosing one) as misuse: reported as ARENA_ERR_BAD_MARK,
 * nothing changed.  0 leaves them out. */
#ifndef MODEL_UNORDERED_ENDS
#  define MODEL_UNORDERED_ENDS 1
#endif

typedef struct mval {
    uint64_t id;
    unsigned char *p; /* for pointer values */
    arena_ref ref;    /* for ref values */
    size_t stored;    /* bytes stored: the size given to the arena */
    size_t size;      /* leading bytes that hold the pattern */
    size_t align;
    bool is_ref;
    bool has_nul;   /* a NUL at [size] */
    bool growable;  /* a pointer value with alignment <= ARENA_ALIGN */
    bool oversized; /* in a chunk of its own, counted in `over` */
    bool freed;     /* given back (a grow that moved it): no longer checked */
    bool opaque;    /* a cleanup's record: the library's bytes, not checked */
} mval;

typedef struct mmark {
    arena_mark m;
    size_t nvals, size, over;
    long tail;
    bool tail_known, tail_clean;
    size_t tail_stored, tail_size;
    bool tail_has_nul;
    bool tail_shrank; /* a rewind to it found the tail shrunk below tail_stored */
    uint64_t pushes;  /* cleanups pushed before it */
} mmark;

#define MODEL_MAX_MARKS 8
#define MODEL_MAX_DEAD  4 /* expired marks kept to rewind to (misuse) */

/* arena_rewind() tells a mark that a rewind expired by the serials its latest
 * four rewinds expired: a mark is rewound to as misuse only while fewer rewinds
 * than that followed the one that expired it (one that expired nothing may
 * count for the arena too: the model's count of rewinds errs on the safe side). */
#define MODEL_REWINDS_REMEMBERED 4
#define MODEL_MAX_STALE          16 /* refs of forgotten values kept to resolve (misuse) */

/* A checked build tells a stale ref by a 13-bit tag drawn per value stored:
 * after this many stores the tag may come round again, so an older stale
 * ref is not resolved (ids are drawn at least once per store). */
#define MODEL_TAG_SPAN 8000

/* Kinds of operation, in the order model_step() draws them. */
enum {
    MODEL_ALLOC,
    MODEL_ZEROED,
    MODEL_COPY,
    MODEL_STRING,
    MODEL_REF,
    MODEL_DEGENERATE,
    MODEL_GROW,
    MODEL_SAVE,
    MODEL_REWIND,
    MODEL_RESET,
    MODEL_RELEASE,
    MODEL_OPS
};

#define MODEL_MAX_CLEANUPS 8

struct model;

/* A cleanup the model pushed, and what it does when it runs. */
enum { CLEANUP_PLAIN, CLEANUP_MISUSE, CLEANUP_STORES, CLEANUP_CANCELS, CLEANUP_KINDS };

typedef struct mcleanup {
    struct model *m;
    arena_cleanup *h;
    uint64_t seq; /* its push's number (a mark keeps the count) */
    size_t val;   /* its record among the values */
    unsigned kind;
    bool live; /* pushed, neither run nor cancelled */
    bool ran;  /* ran in the run under way */
} mcleanup;

/* Bytes to draw choices from (a fuzzer's input): zeros once used up. */
typedef struct model_input {
    const unsigned char *p;
    size_t n;
} model_input;

typedef struct model {
    arena *a;  /* the arena under test */
    arena own; /* its storage, where the caller has none of its own */
    test_backing *tb;
    size_t chunk_size; /* uniform chunk capacity */
    size_t base;       /* retained capacity of the caller's buffer */
    mval *vals;
    size_t nvals, capvals;
    mmark marks[MODEL_MAX_MARKS];
    size_t nmarks;
    struct {
        arena_mark m;
        size_t rewinds;     /* `rewinds` when it expired */
        bool always;        /* expired by a reset or release: always reported */
    } dead[MODEL_MAX_DEAD]; /* expired marks */
    size_t ndead;
    size_t rewinds; /* rewinds of the arena so far */
    struct {
        arena_ref r;
        uint64_t id;
    } stale[MODEL_MAX_STALE]; /* with its value's id */
    size_t nstale;
    size_t size;             /* expected arena_size() */
    size_t peak, peak_batch; /* its largest after a step, since the start and
                                since the batch began (arena_get_stats()) */
    size_t over;             /* expected oversized bytes in arena_retained() */
    size_t floor;            /* arena_retained() at the last check */
    bool dropped;            /* a reset or release since: retained may have come down */
    /* The most recent value stored in a uniform chunk (the one arena_realloc may
     * extend in place); unknown after it was shrunk to nothing.  Not clean
     * when an oversized value was stored after it. */
    long tail;
    bool tail_known, tail_clean;
    /* Bytes were given back to the arena's free blocks since the last reset
     * or rewind: a value that moves may land in one (not at the position,
     * and not in a chunk of its own). */
    bool reusable;
    uint64_t rng, seed, next_id;
    size_t step, failures, stores, checks, misuses;
    size_t refused;        /* calls that fail anyway (near SIZE_MAX) and met a backing refusal */
    size_t ops[MODEL_OPS]; /* steps per kind of operation */
    unsigned big_rarity;   /* oversized values are this many times rarer (0: 1) */
    bool fixed;            /* a caller's buffer without backing: full means NULL */
    bool misuse;           /* draw misuse too (one step in 16) */
    bool stores_only;      /* no save, rewind, reset or release: the arena's
                              lifetime is someone else's (a scratch arena, an
                              arena of a cache) */
    bool light;            /* no arena_check() per step (see the top) */
    model_input *in;       /* choices come from these bytes, when set */
    const char *op;

    /* Limits (model_limits()) */
    bool limits;
    size_t limit;                 /* arena_limit() */
    arena_budget *group;          /* the budget the arena may charge */
    bool charged;                 /* it charges `group` now */
    uint64_t hits;                /* refusals the callback was told of */
    uint64_t backing_hits;        /* of which the backing's */
    uint64_t resets;              /* batches ended by a reset */
    size_t calls0, failed0;       /* the backing's counts when the limits began */
    size_t held;                  /* what the arena held after the last step */
    bool above;                   /* held > limit after the last step */
    size_t want, want_align;      /* the value a store asks for (0: not known) */
    arena_limit_cause last_cause; /* of the latest refusal */
    size_t last_room;             /* the room under the limits then */
    bool last_unsure;             /* it may be the chunk index's, or the room unknown */

    /* Cleanups (model_cleanups()) */
    bool cleanups;
    mcleanup cl[MODEL_MAX_CLEANUPS];
    uint64_t pushes;     /* cleanups pushed */
    bool running;        /* a reset, rewind or release is under way */
    uint64_t run_from;   /* ... which runs the cleanups pushed from this one on */
    size_t ran;          /* cleanups run */
    size_t record;       /* a cleanup record's bytes, once seen */
    bool cleanup_stored; /* a cleanup stored a value in this step */
} model;

/* What values are copied from: the largest value is three chunks of at most
 * ARENA_DEFAULT_CHUNK (see model_start()). */
static unsigned char model_scratch[3 * 65536 + 64];

/* A failure names the seed, the step and the operation, so that it can be
 * replayed with ARENA_TEST_SEED. */
#define MCHECK(m, cond)                                                                            \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      TEST_FAIL("model check failed: %s (seed %llu, step %zu, op %s) [%s]", #cond,                 \
                (unsigned long long)(m)->seed, (m)->step, (m)->op ? (m)->op : "-",                 \
                recorded_errors.message);                                                          \
  } while (0)

static uint64_t model_rand(model *m)
{
    /* xorshift64* */
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return m->rng * 0x2545F4914F6CDD1Dull;
}

static unsigned model_byte(model_input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

/* A choice in [0, n): from the input when there is one (as few bytes as
 * cover n, so that each byte a fuzzer mutates is one decision), else from
 * the generator. */
static size_t model_below(model *m, size_t n)
{
    if (m->in) {
        size_t v = 0, span;
        for (span = 1; span < n; span <<= 8) {
            v = v << 8 | model_byte(m->in);
            if (span > SIZE_MAX >> 8)
                break;
        }
        return v % n;
    }
    return (size_t)(model_rand(m) % n);
}

/* Starts a model over `a`, already initialised by the caller (uniform chunks
 * of `chunk_size`, a caller's buffer of `base` bytes).  Flags are off. */
static void model_start(model *m, arena *a, uint64_t seed, size_t chunk_size, size_t base)
{
    TEST_CHECK(chunk_size <= 65536); /* model_scratch holds the largest value */
    m->a = a;
    m->seed = seed;
    m->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    m->chunk_size = chunk_size;
    m->base = base;
    m->nvals = 0;
    m->nmarks = m->ndead = m->nstale = m->rewinds = 0;
    m->size = m->over = 0;
    {
        arena_stats s; /* an acquired arena's peaks are its earlier batches' */
        arena_get_stats(a, &s);
        m->peak = s.peak_stored;
        m->peak_batch = s.peak_stored_batch;
    }
    m->floor = arena_retained(a); /* (a caller's buffer; an acquired arena's chunks) */
    m->dropped = false;
    m->tail = -1;
    m->tail_known = true;
    m->reusable = false;
    m->tail_clean = true;
    m->next_id = 0;
    m->step = m->failures = m->stores = m->checks = m->refused = m->misuses = 0;
    memset(m->ops, 0, sizeof m->ops);
    m->big_rarity = 0;
    m->fixed = m->misuse = m->stores_only = m->light = false;
    m->in = NULL;
    m->op = NULL;
    m->limits = m->cleanups = m->charged = m->running = m->cleanup_stored = false;
    m->group = NULL;
    m->pushes = m->ran = 0;
    m->want = 0;
    memset(m->cl, 0, sizeof m->cl);
    if (!m->vals) {
        m->capvals = 1024;
        m->vals = (mval *)malloc(m->capvals * sizeof *m->vals);
        TEST_CHECK(m->vals != NULL);
    }
}

static void model_free(model *m)
{
    free(m->vals);
    m->vals = NULL;
    m->capvals = 0;
}

static unsigned char *mval_bytes(model *m, const mval *v)
{
    return v->is_ref ? (unsigned char *)arena_ref_ptr(m->a, v->ref) : v->p;
}

static void model_check_value(model *m, size_t i)
{
    const mval *v = &m->vals[i];
    unsigned char *p;
    if (v->freed || v->opaque)
        return;
    p = mval_bytes(m, v);
    MCHECK(m, p != NULL);
    if (v->is_ref)
        MCHECK(m, arena_ref_len(v->ref) == v->size);
    MCHECK(m, pattern_mismatch(p, v->size, v->id) == v->size);
    if (v->has_nul)
        MCHECK(m, p[v->size] == '\0');
    m->checks++;
}

/* Values from `from` on. */
static void model_check_values_from(model *m, size_t from)
{
    size_t i;
    for (i = from; i < m->nvals; i++)
        model_check_value(m, i);
}

static void model_check_values(model *m) { model_check_values_from(m, 0); }

static void model_check_limits(model *m, const arena_stats *s);

/* The peaks of arena_size(): exactly the largest figure after a step,
 * unless a cleanup stored values that its batch or scope then forgot,
 * which the library counts and the steps never see.  Compared signed
 * (test_note_peak()): a size wraps below zero where a value from before a
 * mark shrinks after a rewind to it restored the mark's size. */
static void model_check_peaks(model *m, const arena_stats *s)
{
    size_t now = arena_size(m->a);
    test_note_peak(&m->peak, now);
    test_note_peak(&m->peak_batch, now);
    if (m->cleanup_stored) {
        MCHECK(m, s->peak_stored >= m->peak && s->peak_stored_batch >= m->peak_batch);
        m->peak = s->peak_stored;
        m->peak_batch = s->peak_stored_batch;
    } else {
        MCHECK(m, s->peak_stored == m->peak);
        MCHECK(m, s->peak_stored_batch == m->peak_batch);
    }
}

static void model_check_counters(model *m)
{
    size_t r = arena_retained(m->a);
    arena_stats s; /* one snapshot for the peaks and the limits */
    arena_get_stats(m->a, &s);
    MCHECK(m, arena_size(m->a) == m->size);
    model_check_peaks(m, &s);
    MCHECK(m, r >= m->base + m->over);
    if (m->cleanup_stored)
        ; /* a cleanup may have taken a chunk before the reset freed any */
    else if (m->dropped)
        MCHECK(m, r <= m->floor); /* a reset or release allocates nothing */
    else
        MCHECK(m, r >= m->floor); /* chunks are kept until a reset or release */
    m->floor = r;
    m->dropped = false;
    if (m->tb)
        MCHECK(m, m->tb->live_bytes >= r - m->base);
    if (!m->light)
        MCHECK(m, arena_check(m->a));
    MCHECK(m, recorded_errors.count == recorded_errors.expected); /* no report but misuse's */
    if (m->limits)
        model_check_limits(m, &s);
}

/* Everything: every value, the counters and arena_check(). */
static inline void model_finish(model *m)
{
    m->op = "finish";
    model_check_values(m);
    model_check_counters(m);
    MCHECK(m, arena_check(m->a));
}

/* ---- One operation ----------------------------------------------------------------- */

typedef struct model_before {
    size_t size, retained, failed, calls;
    uint64_t hits; /* refusals so far (limits) */
} model_before;

static model_before model_snapshot(model *m)
{
    model_before b;
    b.size = arena_size(m->a);
    b.retained = arena_retained(m->a);
    b.failed = m->tb ? m->tb->failed : 0;
    b.calls = m->tb ? m->tb->calls : 0;
    b.hits = m->hits;
    m->want = 0;
    m->cleanup_stored = false;
    return b;
}

/* Records a value stored at p (already filled by the caller or the arena). */
static mval *model_add(model *m, unsigned char *p, arena_ref ref, bool is_ref, size_t stored,
                       size_t size, size_t align, bool has_nul, uint64_t id)
{
    mval *v;
    /* A chunk of its own (by the rule at the top) when it exceeds the
     * chunk size; but it may still fit the current chunk, which may be a kept
     * chunk of up to twice the chunk size (or a fuzzer's buffer), so the tail is
     * then unknown, and `over` counts only the suites' values beyond twice
     * the chunk size.  (A suite's value between half the chunk size and the chunk size,
     * a grown one, goes to a regular chunk as any other.) */
    size_t need = stored + over_align(align);
    bool oversized = need > m->chunk_size;
    bool counted = !m->in && need / 2 > m->chunk_size;
    if (m->nvals == m->capvals) {
        mval *grown = (mval *)realloc(m->vals, 2 * m->capvals * sizeof *m->vals);
        TEST_CHECK(grown != NULL);
        m->vals = grown;
        m->capvals *= 2;
    }
    if (!is_ref)
        MCHECK(m, is_aligned(p, align));
    else
        MCHECK(m, is_aligned(arena_ref_ptr(m->a, ref), align));
    v = &m->vals[m->nvals];
    v->id = id;
    v->p = p;
    v->ref = ref;
    v->is_ref = is_ref;
    v->stored = stored;
    v->size = size;
    v->align = align;
    v->has_nul = has_nul;
    v->growable = !is_ref && align <= ARENA_ALIGN;
    v->oversized = oversized;
    v->freed = false;
    v->opaque = false;
    m->size += stored;
    if (m->limits)
        MCHECK(m, !m->above || stored == 0); /* over its limit, every store fails */
    if (oversized && !counted) {
        m->tail_known = false;
    } else if (oversized) {
        m->over += need;
        m->tail_clean = false;
    } else {
        m->tail = (long)m->nvals;
        m->tail_known = true;
        m->tail_clean = true;
    }
    m->nvals++;
    m->stores++;
    return v;
}

/* Whether the value of `stored` bytes at `q` ends at `pos`, the arena's
 * position (white-box) or a mark's: the value the arena gives back to the
 * position, or extends in place.  With guards (instrumented builds) a value reaches its size
 * rounded up to 8 bytes, plus 8, or less where a chunk ends; a value placed
 * in a free block always reaches that far, so a position between its size
 * and that reach means the value ends there. */
static const char *model_position(const model *m) { return m->a->ptr ? m->a->ptr : m->a->pos; }

static bool model_ends_at(const unsigned char *q, size_t stored, const char *pos)
{
    size_t reach = test_packed() ? stored : ((stored + 7) & ~(size_t)7) + 8;
    return pos && pos >= (const char *)q + stored && pos <= (const char *)q + reach;
}

static bool model_at_position(const model *m, const unsigned char *q, size_t stored)
{
    return model_ends_at(q, stored, model_position(m));
}

/* A value of ARENA_ALIGN from a reusing allocation (arena_alloc_reuse(), a
 * moving arena_realloc()), which may have taken a free block: then it is
 * neither at the position nor in a chunk of its own, and the value that was
 * at the position still is.  One placed at the position may end short of
 * it by its block's padding (a block after a head is a whole size class:
 * at most an eighth, and ARENA_ALIGN twice, past its value). */
static void model_add_reused(model *m, unsigned char *q, size_t stored, uint64_t id)
{
    long tail = m->tail;
    bool known = m->tail_known, clean = m->tail_clean;
    size_t over = m->over;
    bool reusable = m->reusable;
    const char *pos = model_position(m);
    model_add(m, q, (arena_ref){0, 0, 0}, false, stored, stored, ARENA_ALIGN, false, id);
    if (!reusable || model_at_position(m, q, stored) ||
        (pos && pos >= (const char *)q + stored &&
         pos <= (const char *)q + stored + stored / 8 + 2 * ARENA_ALIGN))
        return;
    m->over = over;
    m->vals[m->nvals - 1].oversized = false;
    m->tail = tail;
    m->tail_known = known;
    m->tail_clean = clean;
}

/* Forgets the values from `from` on; their refs become stale (to resolve as
 * misuse) when `stale`. */
static void model_forget(model *m, size_t from, bool stale)
{
    size_t i;
    for (i = from; i < m->nvals && stale; i++) {
        if (m->vals[i].is_ref) {
            size_t at = m->nstale < MODEL_MAX_STALE ? m->nstale++ : (size_t)(i % MODEL_MAX_STALE);
            m->stale[at].r = m->vals[i].ref;
            m->stale[at].id = m->vals[i].id;
        }
    }
    m->nvals = from;
}

/* Keeps an expired mark to rewind to later (misuse). */
static void model_bury(model *m, arena_mark mk, bool always)
{
    size_t at = m->ndead < MODEL_MAX_DEAD ? m->ndead++ : (size_t)(m->step % MODEL_MAX_DEAD);
    m->dead[at].m = mk;
    m->dead[at].rewinds = m->rewinds;
    m->dead[at].always = always;
}

/* ---- Choosing sizes ------------------------------------------------------------- */

/* Drawn from a fuzzer's input: mostly small, some around the chunk size (on
 * either side of the uniform/oversized boundary), some oversized: up to three
 * chunks, or 4 KiB past the chunk size (large chunks cost time, not coverage). */
static size_t model_input_size(model *m, bool big)
{
    size_t b = m->chunk_size;
    switch (model_below(m, 8)) {
    case 0:
    case 1:
    case 2: return 1 + model_below(m, 64);
    case 3:
    case 4: return 1 + model_below(m, b / 4 + 1);
    case 5:
        if (big)
            return (b > 32 ? b - 32 : 0) + 1 + model_below(m, 64);
        return 1 + model_below(m, b / 4 + 1);
    default:
        if (big)
            return b + 1 + model_below(m, b < 2048 ? 2 * b : 4096);
        return 1 + model_below(m, 64);
    }
}

/* A size that is plainly small (fits a quarter of a uniform chunk with any
 * padding used here) or, one time in `big_odds`, plainly oversized.  From a
 * fuzzer's input: any size up to three chunks (oversized never when
 * big_odds is 0). */
static size_t model_size(model *m, unsigned big_odds)
{
    if (m->in)
        return model_input_size(m, big_odds != 0);
    if (big_odds && model_below(m, (size_t)big_odds * (m->big_rarity ? m->big_rarity : 1)) == 0)
        return 2 * m->chunk_size + 1 + model_below(m, m->chunk_size);
    return 1 + model_below(m, m->chunk_size / 4 - 64);
}

static size_t model_small_align(model *m)
{
    static const size_t aligns[] = {0, 1, 2, 4, 8, 16, 32, 64};
    return aligns[model_below(m, sizeof aligns / sizeof aligns[0])];
}

/* Any valid alignment, up to a page (from a fuzzer's input). */
static size_t model_any_align(model *m)
{
    static const size_t aligns[] = {0, 1, 2, 4, 8, 16, 32, 64, 256, 4096};
    return aligns[model_below(m, sizeof aligns / sizeof aligns[0])];
}

/* ---- Operations -------------------------------------------------------------------- */

/* A call returned NULL or the empty ref: legitimate only when the backing
 * refused a request during it (or `always` fails, e.g. a size near SIZE_MAX);
 * and nothing may have changed. */
static size_t model_least_chunk(const model *m);

static void model_failed(model *m, const model_before *b, bool always)
{
    if (!always && !m->fixed && m->limits)
        MCHECK(m, m->hits > b->hits); /* the callback was told */
    else if (!always && !m->fixed)
        MCHECK(m, m->tb && m->tb->failed > b->failed);
    /* A chunk is cut down to the room left: a limit refuses a value only
     * when its smallest chunk does not fit the room left then (unless the
     * request refused was the chunk index's). */
    if (m->limits && !always && !m->above && m->want && m->hits > b->hits &&
        m->last_cause != ARENA_LIMIT_BACKING && !m->last_unsure)
        MCHECK(m, model_least_chunk(m) > m->last_room);
    MCHECK(m, arena_size(m->a) == b->size);
    MCHECK(m, arena_retained(m->a) == b->retained);
    if (!m->light) {
        MCHECK(m, arena_check(m->a));
        model_check_values(m);
    }
    m->failures++;
}

static void model_op_alloc(model *m, model_before *b)
{
    size_t size = model_size(m, 8);
    size_t align = m->in ? model_any_align(m) : size > m->chunk_size ? 16 : model_small_align(m);
    uint64_t id = m->next_id++;
    unsigned char *p;
    unsigned kind = (unsigned)model_below(m, 4);

    m->op = "alloc";
    if (kind == 0 && align == 0) {
        p = (unsigned char *)arena_alloc(m->a, size);
    } else if (kind == 1 && align == 0) {
        p = (unsigned char *)arena_realloc(m->a, NULL, 0, size);
    } else if (kind == 2 && align == 8) {
        size = (size + 7) / 8 * 8;
        p = (unsigned char *)ARENA_ALLOC_ARRAY(m->a, uint64_t, size / 8);
        align = _Alignof(uint64_t); /* 4 on i386 */
    } else if (kind == 3 && align == 0) {
        p = (unsigned char *)arena_alloc_reuse(m->a, size);
    } else {
        p = (unsigned char *)arena_alloc_aligned(m->a, size, align);
    }
    m->want = size;
    m->want_align = align;
    if (!p) {
        model_failed(m, b, false);
        return;
    }
    fill_pattern(p, size, id);
    if (kind == 3 && align == 0) {
        model_add_reused(m, p, size, id);
        return;
    }
    model_add(m, p, (arena_ref){0, 0, 0}, false, size, size, align ? align : ARENA_ALIGN, false,
              id);
}

static void model_op_zeroed(model *m, model_before *b)
{
    size_t size = model_size(m, 10), align = ARENA_ALIGN;
    uint64_t id = m->next_id++;
    unsigned char *p;
    unsigned kind = (unsigned)model_below(m, 3);

    m->op = "calloc";
    if (kind == 0) {
        size_t count = 1 + model_below(m, 8);
        size = (size + count - 1) / count * count;
        p = (unsigned char *)arena_calloc(m->a, count, size / count);
    } else if (kind == 1) {
        size = (size + 3) / 4 * 4;
        p = (unsigned char *)ARENA_NEW_ARRAY(m->a, uint32_t, size / 4);
        align = _Alignof(uint32_t);
    } else {
        typedef struct {
            uint64_t a, b, c;
        } triple;
        size = sizeof(triple);
        p = (unsigned char *)ARENA_NEW(m->a, triple);
        align = _Alignof(triple);
    }
    if (!p) {
        model_failed(m, b, false);
        return;
    }
    MCHECK(m, all_zero(p, size));
    fill_pattern(p, size, id);
    model_add(m, p, (arena_ref){0, 0, 0}, false, size, size, align, false, id);
}

static void model_op_copy(model *m, model_before *b)
{
    size_t size = model_size(m, 10);
    size_t align = m->in                  ? model_any_align(m)
                   : size > m->chunk_size ? (size_t)1 << model_below(m, 5)
                                          : model_small_align(m);
    uint64_t id = m->next_id++;
    unsigned char *p;

    m->op = "copy";
    fill_pattern(model_scratch, size, id);
    p = (unsigned char *)arena_copy(m->a, model_scratch, size, align);
    memset(model_scratch, 0, size); /* the copy must not depend on the source */
    m->want = size;
    m->want_align = align;
    if (!p) {
        model_failed(m, b, false);
        return;
    }
    model_add(m, p, (arena_ref){0, 0, 0}, false, size, size, align ? align : ARENA_ALIGN, false,
              id);
}

static void model_op_string(model *m, model_before *b)
{
    bool dup = model_below(m, 3) == 0;
    /* strdup stops at the pattern's first NUL: keep it plainly small */
    size_t len = model_size(m, dup ? 0 : 12) - 1, size;
    uint64_t id = m->next_id++;
    unsigned char *p;

    m->op = dup ? "strdup" : "strndup";
    fill_pattern(model_scratch, len, id); /* pattern bytes include NULs */
    model_scratch[len] = '\0';
    size = dup ? strlen((const char *)model_scratch) : len;
    if (dup)
        p = (unsigned char *)arena_strdup(m->a, (const char *)model_scratch);
    else
        p = (unsigned char *)arena_strndup(m->a, (const char *)model_scratch, len);
    memset(model_scratch, 0xFF, len + 1);
    if (!p) {
        model_failed(m, b, false);
        return;
    }
    model_add(m, p, (arena_ref){0, 0, 0}, false, size + 1, size, 1, true, id);
}

static void model_op_ref(model *m, model_before *b)
{
    size_t size = model_size(m, 10);
    uint64_t id = m->next_id++;
    bool str = model_below(m, 2) == 0;
    size_t align = str                    ? 1
                   : m->in                ? model_any_align(m)
                   : size > m->chunk_size ? 16
                                          : model_small_align(m);
    arena_ref r;

    m->op = str ? "ref_strndup" : "ref_copy";
    fill_pattern(model_scratch, size, id);
    r = str ? arena_ref_strndup(m->a, (const char *)model_scratch, size)
            : arena_ref_copy(m->a, model_scratch, size, align);
    memset(model_scratch, 0, size);
    if (arena_ref_empty(r)) {
        model_failed(m, b, false);
        return;
    }
    MCHECK(m, arena_ref_len(r) == size);
    model_add(m, NULL, r, true, str ? size + 1 : size, size, align ? align : ARENA_ALIGN, str, id);
}

/* ---- Limits ------------------------------------------------------------------------ */

static size_t model_room(const model *m, size_t held);
static bool model_index_full(const model *m);

/* The name the limits give the arena (its events carry it). */
static const char model_name[] = "model";

/* The limit callback: each refusal crosses the limit that refused it (or
 * the backing failed), with the figures as they are.  (It calls nothing on
 * the arena, as the contract asks.) */
static void model_on_limit(const arena_limit_event *e, void *ctx)
{
    model *m = (model *)ctx;
    MCHECK(m, e->arena == m->a && e->name == model_name);
    switch (e->cause) {
    case ARENA_LIMIT_ARENA:
        MCHECK(m, e->limit == m->limit && e->limit_name == e->name);
        if (m->tb)
            MCHECK(m, e->held == m->tb->live_bytes);
        break;
    case ARENA_LIMIT_BUDGET:
        MCHECK(m, m->charged && e->limit == arena_budget_limit(m->group));
        MCHECK(m, e->held == arena_budget_used(m->group));
        MCHECK(m, e->limit_name == arena_budget_name(m->group));
        break;
    default:
        MCHECK(m, e->cause == ARENA_LIMIT_BACKING && e->limit == SIZE_MAX);
        m->backing_hits++;
        break;
    }
    if (e->cause != ARENA_LIMIT_BACKING)
        MCHECK(m, e->held > e->limit || e->asked > e->limit - e->held);
    m->last_cause = e->cause;
    m->last_room = model_room(m, m->tb ? m->tb->live_bytes : e->held);
    m->last_unsure = model_index_full(m) || (!m->tb && e->cause != ARENA_LIMIT_ARENA);
    m->hits++;
}

/* Turns the limits on, on an arena the model started over that has made
 * no backing call yet: a callback that counts, a name, no limit yet;
 * `group` (or NULL) is a budget it may charge. */
static inline void model_limits(model *m, arena_budget *group)
{
    arena_stats s;
    m->limits = true;
    m->limit = SIZE_MAX;
    m->group = group;
    m->charged = false;
    m->hits = m->backing_hits = m->resets = 0;
    m->calls0 = m->tb ? m->tb->calls + m->tb->frees : 0;
    m->failed0 = m->tb ? m->tb->failed : 0;
    arena_set_name(m->a, model_name);
    arena_on_limit(m->a, model_on_limit, m);
    arena_get_stats(m->a, &s);
    MCHECK(m, s.limit_hits == 0 && s.resets == 0 && s.limit == SIZE_MAX);
    m->held = s.held;
    m->above = false;
}

/* The room left under the limits now. */
static size_t model_room(const model *m, size_t held)
{
    size_t room = held < m->limit ? m->limit - held : 0;
    if (m->charged) {
        size_t used = arena_budget_used(m->group), limit = arena_budget_limit(m->group);
        size_t group = used < limit ? limit - used : 0;
        room = group < room ? group : room;
    }
    return room;
}

/* Whether the next chunk needs the chunk index to grow first (white-box):
 * a request refused then is the index's. */
static bool model_index_full(const model *m)
{
    return m->a->lazy || (arena__cold(m->a)->ncap && m->a->nchunks >= arena__cold(m->a)->ncap);
}

/* The fewest bytes a chunk for the value of `want` bytes at `align` takes
 * from the backing, or somewhat more: the value, the padding its alignment
 * may need, and where values are guarded (instrumented builds) a value's
 * header and guard and a chunk's overhead, at most 64 bytes each. */
static size_t model_least_chunk(const model *m)
{
    size_t align = m->want_align ? m->want_align : ARENA_ALIGN;
    return m->want + over_align(align) + (test_packed() ? 0 : 2 * 64);
}

/* The counters against the model and the counting backing; held never
 * crosses the limit but where the limit was set below it, and then grows
 * no more. */
static void model_check_limits(model *m, const arena_stats *st)
{
    arena_stats s = *st;
    MCHECK(m, s.limit == m->limit && arena_limit(m->a) == m->limit);
    MCHECK(m, s.limit_hits == m->hits);
    MCHECK(m, s.resets == m->resets);
    MCHECK(m, s.stored == arena_size(m->a) && s.retained == arena_retained(m->a));
    if (m->tb) {
        MCHECK(m, s.held == m->tb->live_bytes);
        MCHECK(m, s.backing_calls == m->tb->calls + m->tb->frees - m->calls0);
        MCHECK(m, m->tb->failed - m->failed0 == m->backing_hits);
    }
    if (m->above)
        MCHECK(m, s.held <= m->held);
    else
        MCHECK(m, s.held <= m->limit);
    m->held = s.held;
    m->above = s.held > m->limit;
}

/* A new limit (none, 0, below what the arena holds, a little above), the
 * budget charged or not, or a trim: nothing is freed but by the trim, and
 * a limit below what the arena holds refuses every store until the arena
 * is under it again. */
static void model_op_limit(model *m)
{
    arena_stats s;
    size_t limit, held, retained = arena_retained(m->a);
    arena_get_stats(m->a, &s);
    held = s.held;
    switch (model_below(m, 10)) {
    case 0: limit = 0; break;
    case 1: limit = held - model_below(m, held + 1); break;
    case 2:
    case 3: limit = held + model_below(m, 2 * m->chunk_size + 512); break;
    case 4:
        m->op = "trim";
        arena_trim(m->a, model_below(m, 2) ? 0 : model_below(m, 4 * m->chunk_size));
        MCHECK(m, arena_retained(m->a) <= retained);
        MCHECK(m, arena_size(m->a) == m->size);
        m->dropped = true;
        return;
    case 5:
        if (m->group) {
            bool join = !m->charged;
            m->op = "set_budget";
            /* A join may give back spares first (arena_set_budget()); one
             * refused changes nothing. */
            if (arena_set_budget(m->a, join ? m->group : NULL))
                m->charged = join;
            else
                MCHECK(m, join && arena_retained(m->a) == retained);
            arena_get_stats(m->a, &s);
            MCHECK(m, !m->charged || arena_budget_used(m->group) <= arena_budget_limit(m->group) ||
                          s.held == 0);
            m->dropped = true;
            return;
        }
        limit = SIZE_MAX;
        break;
    default: limit = SIZE_MAX; break;
    }
    m->op = "set_limit";
    arena_set_limit(m->a, limit);
    m->limit = limit;
    arena_get_stats(m->a, &s);
    MCHECK(m, s.held == held && arena_retained(m->a) == retained); /* frees nothing */
    m->above = held > limit;
}

/* ---- Cleanups ---------------------------------------------------------------------- */

/* Turns cleanups on. */
static inline void model_cleanups(model *m)
{
    m->cleanups = true;
    m->pushes = m->ran = 0;
    memset(m->cl, 0, sizeof m->cl);
}

/* The cleanup in slot i was cancelled: its record went back to the arena,
 * as a value of its size freed. */
static void model_cancelled(model *m, size_t i)
{
    mval *v = &m->vals[m->cl[i].val];
    m->cl[i].live = false;
    m->size -= v->stored;
    v->freed = true;
    v->stored = v->size = 0;
    m->reusable = true;
    if (m->tail == (long)m->cl[i].val)
        m->tail_known = false; /* given back to the position, maybe */
}

static void model_cleanup_run(void *ctx);

/* From a cleanup: a push, a reset, a rewind and a release of the arena
 * whose cleanups run are misuse; each is reported, and does nothing. */
static void model_cleanup_misuse(model *m, mcleanup *c)
{
    int count = recorded_errors.count;
    MCHECK(m, arena_cleanup_push(m->a, model_cleanup_run, c) == NULL);
    MCHECK(m, test_misuse_reported(count, ARENA_ERR_CLEANUP));
    count = recorded_errors.count;
    switch (model_below(m, 4)) {
    case 0: arena_reset(m->a); break;
    case 1: arena_reset_to(m->a, 0); break;
    case 2: arena_rewind(m->a, arena_save(m->a)); break;
    default: arena_release(m->a); break;
    }
    MCHECK(m, test_misuse_reported(count, ARENA_ERR_CLEANUP));
}

/* From a cleanup: a cancel of another cleanup, which will not run then, or
 * of one that ran in this run (itself, say), which is misuse. */
static void model_cleanup_cancels(model *m, mcleanup *c)
{
    size_t i = model_below(m, MODEL_MAX_CLEANUPS);
    mcleanup *other = &m->cl[i];
    int count = recorded_errors.count;
    if (other->live) {
        arena_cleanup_cancel(m->a, other->h);
        MCHECK(m, recorded_errors.count == count);
        model_cancelled(m, i);
        return;
    }
    if (!other->ran)
        other = c;
    arena_cleanup_cancel(m->a, other->h);
    MCHECK(m, test_misuse_reported(count, ARENA_ERR_CLEANUP));
}

/* A cleanup the model pushed: it runs once, the latest of those due first,
 * and only while a reset, rewind or release is under way. */
static void model_cleanup_run(void *ctx)
{
    mcleanup *c = (mcleanup *)ctx;
    model *m = c->m;
    size_t i;
    MCHECK(m, m->running && c->live && c->seq >= m->run_from);
    for (i = 0; i < MODEL_MAX_CLEANUPS; i++)
        MCHECK(m, !m->cl[i].live || m->cl[i].seq < m->run_from || m->cl[i].seq <= c->seq);
    c->live = false;
    c->ran = true;
    m->ran++;
    switch (c->kind) {
    case CLEANUP_MISUSE: model_cleanup_misuse(m, c); break;
    case CLEANUP_STORES: {
        /* (a value of the batch or scope that is ending) */
        unsigned char *p = (unsigned char *)arena_alloc(m->a, 24);
        if (p)
            memset(p, 0x5C, 24);
        m->cleanup_stored = true;
        break;
    }
    case CLEANUP_CANCELS: model_cleanup_cancels(m, c); break;
    default: break;
    }
}

/* A reset, rewind or release that runs the cleanups pushed from `from` on
 * is about to begin. */
static void model_run_begin(model *m, uint64_t from)
{
    m->running = true;
    m->run_from = from;
}

/* ... and has ended: every one of them ran or was cancelled, the others
 * are still to run. */
static void model_run_end(model *m)
{
    size_t i;
    m->running = false;
    for (i = 0; i < MODEL_MAX_CLEANUPS; i++) {
        MCHECK(m, !m->cl[i].live || m->cl[i].seq < m->run_from);
        m->cl[i].ran = false;
    }
}

/* A push (of a cleanup that may misbehave when it runs), a cancel, or the
 * push of no function (misuse). */
static void model_op_cleanup(model *m, model_before *b)
{
    size_t i, rec;
    mcleanup *c;
    arena_cleanup *h;
    mval *v;

    if (m->misuse && model_below(m, 8) == 0) {
        int count = recorded_errors.count;
        m->op = "misuse: cleanup_push NULL";
        MCHECK(m, arena_cleanup_push(m->a, NULL, NULL) == NULL);
        MCHECK(m, test_misuse_reported(count, ARENA_ERR_CLEANUP));
        return;
    }
    i = model_below(m, MODEL_MAX_CLEANUPS);
    c = &m->cl[i];
    if (c->live) {
        m->op = "cleanup_cancel";
        arena_cleanup_cancel(m->a, c->h);
        model_cancelled(m, i);
        MCHECK(m, arena_size(m->a) == m->size);
        return;
    }
    m->op = "cleanup_push";
    c->m = m;
    c->kind = (unsigned)model_below(m, CLEANUP_KINDS);
    c->seq = m->pushes;
    c->ran = false;
    h = arena_cleanup_push(m->a, model_cleanup_run, c);
    if (!h) {
        model_failed(m, b, false);
        return;
    }
    m->pushes++;
    rec = arena_size(m->a) - b->size;
    if (!m->record)
        m->record = rec;
    MCHECK(m, rec == m->record && (sizeof(void *) != 8 || rec == 48));
    c->h = h;
    c->live = true;
    c->val = m->nvals;
    model_add_reused(m, (unsigned char *)h, rec, m->next_id++);
    v = &m->vals[c->val];
    v->opaque = true;
    v->growable = false;
}

/* Size 0 and sizes near SIZE_MAX: nothing stored, nothing changed. */
static void model_op_degenerate(model *m, model_before *b)
{
    unsigned kind = (unsigned)model_below(m, 12);
    size_t huge = SIZE_MAX - model_below(m, 64);
    void *p = NULL;
    arena_ref r = {0, 0, 0};

    m->op = "degenerate";
    switch (kind) {
    case 0: MCHECK(m, arena_alloc(m->a, 0) != NULL); break;
    case 1: MCHECK(m, arena_calloc(m->a, 0, 9) != NULL); break;
    case 2: MCHECK(m, arena_copy(m->a, NULL, 0, 4) != NULL); break;
    case 3: MCHECK(m, arena_ref_empty(arena_ref_copy(m->a, model_scratch, 0, 0))); break;
    case 4: p = arena_alloc(m->a, huge); break;
    case 5: p = arena_alloc_aligned(m->a, huge, 64); break;
    case 6: p = arena_calloc(m->a, huge, 2); break;
    case 7: p = arena_strndup(m->a, (const char *)model_scratch, opaque_size(huge)); break;
    case 8: p = ARENA_NEW_ARRAY(m->a, uint64_t, huge / 4); break;
    case 9: p = arena_copy(m->a, model_scratch, opaque_size(huge), 8); break;
    case 10: p = arena_alloc_aligned(m->a, 8, 3); break; /* not a power of two */
    default: r = arena_ref_copy(m->a, model_scratch, 8, 24); break;
    }
    MCHECK(m, p == NULL);
    MCHECK(m, arena_ref_empty(r));
    MCHECK(m, arena_size(m->a) == b->size);
    MCHECK(m, arena_retained(m->a) == b->retained);
    if (m->tb && m->tb->failed > b->failed)
        m->refused++;
}

static long model_pick_growable(model *m)
{
    size_t tries;
    if (m->nvals == 0)
        return -1;
    if (m->tail >= 0 && model_below(m, 2) == 0 && m->vals[m->tail].growable &&
        !m->vals[m->tail].freed)
        return m->tail;
    for (tries = 0; tries < 8; tries++) {
        size_t i = model_below(m, m->nvals);
        if (m->vals[i].growable && !m->vals[i].freed)
            return (long)i;
    }
    return -1;
}

/* The new size of a value of `old` bytes: growth stays plainly small or
 * plainly oversized; from a fuzzer's input, anything up to three chunks. */
static size_t model_grow_size(model *m, size_t old)
{
    size_t r, want;
    if (m->in) {
        switch (model_below(m, 4)) {
        case 0: return model_below(m, old + 1);
        case 1: want = old + 1 + model_below(m, 64); break;
        case 2: want = old + 1 + model_below(m, m->chunk_size); break;
        default: want = model_input_size(m, true); break;
        }
        return want <= 3 * m->chunk_size ? want : old;
    }
    r = model_below(m, 100);
    if (r < 52 && old > m->chunk_size / 2)
        want = old + 1 + model_below(m, m->chunk_size / 4);
    else if (r < 45 && old < m->chunk_size / 4)
        want = old + 1 + model_below(m, m->chunk_size / 4 - 64);
    else if (r < 52)
        want = 2 * m->chunk_size + model_below(m, m->chunk_size);
    else if (r < 92)
        want = model_below(m, old + 1);
    else
        want = old;
    return want <= PATTERN_SPAN ? want : old; /* repeated growth stays in a pattern */
}

/* Value i is about to be resized in place (grown, so that it ends at the
 * arena's position, or shrunk).  A mark taken while the model did not know
 * which value ended there learns it now, with the value as it was, when the
 * value ended exactly at the mark's position (white-box), so that a rewind
 * to the mark forgets the growth, as the arena does. */
static void model_learn_tail(model *m, size_t i)
{
    size_t j;
    for (j = 0; j < m->nmarks; j++) {
        mmark *k = &m->marks[j];
        if (i >= k->nvals || k->tail_known || k->tail == (long)i ||
            !model_ends_at(m->vals[i].p, m->vals[i].stored, k->m.pos))
            continue;
        k->tail = (long)i;
        k->tail_stored = m->vals[i].stored;
        k->tail_size = m->vals[i].size;
        k->tail_has_nul = m->vals[i].has_nul;
    }
}

static void model_op_grow(model *m, model_before *b)
{
    long i = model_pick_growable(m);
    mval *v;
    size_t old, want;
    bool is_tail, certain;
    unsigned char *p, *q;

    m->op = "grow";
    if (i < 0)
        return;
    v = &m->vals[i];
    p = v->p;
    old = v->stored;
    is_tail = m->tail_known && i == m->tail;
    certain = m->tail_known && (i != m->tail || m->tail_clean);
    want = model_grow_size(m, old);
    if (old == 0 && want == 0)
        return;

    q = (unsigned char *)arena_realloc(m->a, p, old, want);
    if (want <= old) {
        /* In place; the bytes past `want` go back: to the position when the
         * value is the most recent, else as a free block. */
        MCHECK(m, q == p);
        MCHECK(m, arena_size(m->a) == m->size - (old - want));
        m->size -= old - want;
        if (want < old) {
            /* A mark at its end learns its size there: the arena notes it
             * at the first resize after a mark, shrinks too, and a rewind
             * to the mark gives it back that size if it grew since. */
            model_learn_tail(m, (size_t)i);
            v->stored = want;
            if (!is_tail || !certain)
                m->reusable = true;
            if (want == 0 && (is_tail || !certain))
                m->tail_known = false; /* an earlier value may end there */
        }
        if (v->size > want)
            v->size = want;
        v->has_nul = v->has_nul && v->size < want;
        return;
    }
    if (!q) {
        model_failed(m, b, false);
        return;
    }
    MCHECK(m, pattern_mismatch(q, v->size, v->id) == v->size);
    /* A value of no bytes was given back: grown, it may be placed anew
     * where it is (in a free block that starts there, or at the position,
     * when a rewind brought the position back to it), after the marks,
     * which a rewind to one of them expires: it is then a new value here
     * too.  A value placed anew is aligned: at a lesser alignment it grew
     * in place.  Where it grew in place, taking it for a new one checks
     * less (a rewind cuts it back to what it held at the mark, which the
     * model then no longer reads), never wrongly. */
    if (q == p && (is_tail || old != 0 || !is_aligned(p, ARENA_ALIGN))) {
        /* In place: only the most recent value may grow there. */
        MCHECK(m, !certain || is_tail);
        model_learn_tail(m, (size_t)i);
        MCHECK(m, arena_size(m->a) == m->size + (want - old));
        MCHECK(m, arena_retained(m->a) == b->retained);
        m->size += want - old;
        v->stored = want;
        v->size = want;
        v->has_nul = false;
        fill_pattern(q, want, v->id);
        return;
    }
    MCHECK(m, is_aligned(q, ARENA_ALIGN));
    if (q == p) /* the most recent value, maybe, grown in place */
        m->tail_known = false;
    {
        /* Moved: the old place is given back, as by arena_free(). */
        uint64_t id = m->next_id++;
        fill_pattern(q, want, id);
        model_add_reused(m, q, want, id);
        /* As a shrink to nothing: its bytes went back (to the position
         * when it was the most recent), which a mark's tail must know. */
        m->vals[i].freed = true;
        m->vals[i].stored = 0;
        m->vals[i].size = 0;
        m->size -= old;
        m->reusable = true;
        if (m->tail == i)
            m->tail_known = false; /* given back to the position, maybe */
        MCHECK(m, arena_size(m->a) == m->size);
    }
}

/* Records `mk`, a mark just taken of the arena (by arena_save(), a scope or a
 * scratch); returns its index, or -1 when the model holds as many as it can
 * (it then never rewinds to it). */
static long model_push_mark(model *m, arena_mark mk)
{
    mmark *k;
    if (m->nmarks == MODEL_MAX_MARKS)
        return -1;
    k = &m->marks[m->nmarks++];
    k->m = mk;
    k->nvals = m->nvals;
    k->size = m->size;
    k->over = m->over;
    k->tail = m->tail;
    k->tail_known = m->tail_known;
    k->tail_clean = m->tail_clean;
    k->tail_shrank = false;
    k->pushes = m->pushes;
    if (m->tail >= 0) {
        k->tail_stored = m->vals[m->tail].stored;
        k->tail_size = m->vals[m->tail].size;
        k->tail_has_nul = m->vals[m->tail].has_nul;
    }
    return (long)m->nmarks - 1;
}

/* The arena is about to be rewound to mark j: what it forgets is checked
 * now, while it is still there to check. */
static void model_rewinding(model *m, size_t j) { model_check_values_from(m, m->marks[j].nvals); }

/* The end of the chunk that holds `p` (white-box: overhead included), or
 * NULL. */
static const char *model_chunk_end(const model *m, const char *p)
{
    uint32_t i;
    for (i = 0; i < m->a->nchunks; i++) {
        const char *b = m->a->chunks[i].base;
        if (b <= p && p < b + m->a->chunks[i].cap)
            return b + m->a->chunks[i].cap;
    }
    return NULL;
}

/* A rewind cuts a value stored before the mark that reaches past the mark's
 * position (it grew in place since, as the most recent value, after what
 * followed it at the mark was given back) to end there.  Where values are
 * guarded the granule before the position was a guard at the mark (the
 * value's own, when it was the last): a value that reaches into it is cut
 * to end one granule before the position, unless the position is the
 * chunk's end (a value there had its guard cut short, and cannot grow). */
static void model_cut_at(model *m, const mmark *k)
{
    const char *pos = k->m.pos, *end;
    size_t guard = test_packed() ? 0 : 8;
    size_t i;
    for (i = 0; pos && i < k->nvals && i < m->nvals; i++) {
        mval *v = &m->vals[i];
        const char *p = (const char *)v->p;
        size_t keep;
        if (v->freed || v->is_ref || !(p < pos) || !(end = model_chunk_end(m, p)) || pos >= end ||
            (size_t)(pos - p) < guard)
            continue;
        keep = (size_t)(pos - p) - guard;
        if (v->stored <= keep)
            continue;
        v->stored = keep;
        v->has_nul = v->has_nul && v->size < keep;
        if (v->size > keep)
            v->size = keep;
    }
}

/* The arena was just rewound to mark j (by arena_rewind(), a scope's or a
 * scratch's end): later marks expire, and so does everything stored since. */
static void model_rewound(model *m, size_t j)
{
    mmark *k = &m->marks[j];
    size_t i;

    /* When the tail shrank since the save, the position went below the
     * mark's: values stored since may lie in the bytes it gave back, which
     * the rewind leaves behind the position, not expired (a checked build
     * still resolves their refs). */
    bool behind = k->tail >= 0 && (m->vals[k->tail].stored < k->tail_stored || k->tail_shrank);

    m->rewinds++;
    for (i = j + 1; i < m->nmarks && MODEL_UNORDERED_ENDS; i++)
        model_bury(m, m->marks[i].m, false);
    m->nmarks = j + 1;
    model_forget(m, k->nvals, !behind);
    m->reusable = false;
    m->size = k->size;
    m->over = k->over;
    m->tail = k->tail;
    m->tail_known = k->tail_known && !k->tail_shrank;
    m->tail_clean = k->tail_clean;
    if (m->tail >= 0) {
        /* Bytes the tail grew by in place since the save are forgotten.
         * Bytes it gave back by shrinking stay given back (they may hold
         * values stored since), so the position is no longer at its end.
         * The shrink is for good: a later rewind to this mark cuts the
         * value back to the shrunk size, which the tools saw last. */
        mval *v = &m->vals[m->tail];
        if (v->stored < k->tail_stored) {
            m->tail_known = false;
            k->tail_shrank = true;
            k->tail_stored = v->stored;
            if (k->tail_size > v->size)
                k->tail_size = v->size;
        } else {
            v->stored = k->tail_stored;
        }
        v->has_nul = k->tail_has_nul && v->has_nul && v->size >= k->tail_size;
        if (v->size > k->tail_size)
            v->size = k->tail_size;
    }
    model_cut_at(m, k);
    model_check_values(m);
}

/* A mark, taken plainly or as the start of a scope. */
static void model_op_save(model *m)
{
    m->op = "save";
    if (model_below(m, 2) == 0) {
        arena_scope s = arena_scope_begin(m->a);
        m->op = "scope_begin";
        MCHECK(m, s.arena == m->a);
        model_push_mark(m, s.mark);
    } else {
        model_push_mark(m, arena_save(m->a));
    }
}

/* Rewinds to one of the marks, plainly or as the end of a scope. */
static void model_op_rewind(model *m)
{
    size_t j;
    m->op = "rewind";
    if (m->nmarks == 0)
        return;
    j = model_below(m, m->nmarks);
    model_rewinding(m, j);
    /* A guarded batch's rewind retires the chunks past the mark (guard.h). */
    if (arena_guarded(m->a))
        m->dropped = true;
    model_run_begin(m, m->marks[j].pushes);
    if (model_below(m, 2) == 0) {
        arena_scope s;
        m->op = "scope_end";
        s.arena = m->a;
        s.mark = m->marks[j].m;
        arena_scope_end(&s);
    } else {
        arena_rewind(m->a, m->marks[j].m);
    }
    model_run_end(m);
    model_rewound(m, j);
}

/* Every mark expires at a reset or release. */
static void model_expire_all(model *m)
{
    size_t i;
    for (i = 0; i < m->ndead; i++)
        m->dead[i].always = true;
    for (i = 0; i < m->nmarks; i++)
        model_bury(m, m->marks[i].m, true);
    model_forget(m, 0, true);
    m->nmarks = 0;
    m->size = m->over = m->peak_batch = 0;
    m->tail = -1;
    m->tail_known = m->tail_clean = true;
    m->reusable = false;
}

/* A reset; with the limits on, one in four keeps at most a number of bytes
 * (arena_reset_to(): the caller's buffer and what fits beside it; 0 frees
 * everything else, bookkeeping included). */
static void model_op_reset(model *m)
{
    size_t keep = SIZE_MAX;
    m->op = "reset";
    model_check_values(m);
    if (m->limits && model_below(m, 4) == 0) {
        m->op = "reset_to";
        keep = model_below(m, 2) ? 0 : model_below(m, 4 * m->chunk_size);
    }
    model_run_begin(m, 0);
    if (keep == SIZE_MAX)
        arena_reset(m->a);
    else
        arena_reset_to(m->a, keep);
    model_run_end(m);
    m->resets++;
    m->dropped = true;
    model_expire_all(m);
    if (keep == SIZE_MAX)
        return;
    MCHECK(m, arena_retained(m->a) <= keep || arena_retained(m->a) == m->base);
    if (keep == 0 && m->tb)
        MCHECK(m, m->tb->live == 0);
}

static void model_op_release(model *m)
{
    m->op = "release";
    model_check_values(m);
    model_run_begin(m, 0);
    arena_release(m->a);
    model_run_end(m);
    m->dropped = true;
    model_expire_all(m);
    MCHECK(m, arena_retained(m->a) == m->base);
    if (m->tb) {
        MCHECK(m, m->tb->live == 0);
        MCHECK(m, m->tb->live_bytes == 0);
    }
}

/* ---- Misuse ------------------------------------------------------------------------ */

/* Two marks of the same position (their serials differ: each save counts). */
static bool model_same_mark(arena_mark x, arena_mark y)
{
    return x.pos == y.pos && x.size == y.size && x.cur == y.cur && x.nused == y.nused;
}

/* Whether the library reports a rewind to dead mark k (see
 * MODEL_REWINDS_REMEMBERED). */
static bool model_reported_dead(const model *m, size_t k)
{
    return m->dead[k].always || m->rewinds - m->dead[k].rewinds < MODEL_REWINDS_REMEMBERED;
}

/* A rewind, plain or through a scope, to a mark that a reset, release or
 * rewind to an earlier mark expired (or to a zeroed one, which no arena
 * makes). */
static bool model_misuse_mark(model *m)
{
    arena_mark before, dead;
    int count = recorded_errors.count;
    size_t k;
    if (m->ndead == 0 || model_below(m, 8) == 0) {
        memset(&dead, 0, sizeof dead);
    } else {
        k = model_below(m, m->ndead);
        if (!model_reported_dead(m, k))
            return false;
        dead = m->dead[k].m;
    }
    before = arena_save(m->a); /* (a save of its own: it expires nothing) */
    if (model_below(m, 2) == 0) {
        arena_scope s;
        m->op = "misuse: scope_end expired";
        s.arena = m->a;
        s.mark = dead;
        arena_scope_end(&s);
    } else {
        m->op = "misuse: rewind expired";
        arena_rewind(m->a, dead);
    }
    MCHECK(m, test_misuse_reported(count, ARENA_ERR_BAD_MARK));
    MCHECK(m, model_same_mark(arena_save(m->a), before));
    return true;
}

/* Checked build: resolving the ref of a value that expired. */
static bool model_misuse_stale(model *m)
{
    size_t k;
    int count = recorded_errors.count;
    if (!ARENA_CHECKED || m->nstale == 0)
        return false;
    k = model_below(m, m->nstale);
    if (m->next_id - m->stale[k].id >= MODEL_TAG_SPAN)
        return false;
    m->op = "misuse: stale ref";
    MCHECK(m, arena_ref_ptr(m->a, m->stale[k].r) == NULL);
    MCHECK(m, test_misuse_reported(count, ARENA_ERR_STALE_REF));
    return true;
}

/* A ref of a value larger than a ref can describe: refused before the
 * source is read. */
static void model_misuse_large(model *m)
{
    int count = recorded_errors.count;
    arena_ref r;
    if (model_below(m, 2) == 0) {
        m->op = "misuse: ref_copy too large";
        r = arena_ref_copy(m->a, model_scratch, opaque_size(ARENA_REF_MAX + 1 + model_below(m, 4)),
                           0);
    } else {
        m->op = "misuse: ref_strndup too large";
        r = arena_ref_strndup(m->a, (const char *)model_scratch,
                              opaque_size(ARENA_REF_MAX + model_below(m, 4)));
    }
    MCHECK(m, arena_ref_empty(r));
    MCHECK(m, test_misuse_reported(count, ARENA_ERR_REF_TOO_LARGE));
}

static void model_op_misuse(model *m, const model_before *b)
{
    unsigned kind = (unsigned)model_below(m, 3);
    m->misuses++;
    if (!(kind == 0 && model_misuse_mark(m)) && !(kind == 1 && model_misuse_stale(m)))
        model_misuse_large(m);
    MCHECK(m, arena_size(m->a) == b->size);
    MCHECK(m, arena_retained(m->a) == b->retained);
}

/* One random operation, then the counters (and some values) checked. */
static void model_step(model *m)
{
    model_before b = model_snapshot(m);

    /* cumulative odds, per mille, in the order of the enum */
    static const unsigned upto[MODEL_OPS] = {200, 300, 400, 550, 700, 760,
                                             900, 945, 990, 996, 1000};
    unsigned kind = 0;

    m->step++;
    if (m->misuse && model_below(m, 16) == 0) {
        model_op_misuse(m, &b);
    } else if (m->cleanups && model_below(m, 16) == 0) {
        model_op_cleanup(m, &b);
    } else if (m->limits && model_below(m, 32) == 0) {
        model_op_limit(m);
    } else {
        unsigned r = (unsigned)model_below(m, 1000);
        while (r >= upto[kind])
            kind++;
        if (m->stores_only && kind >= MODEL_SAVE)
            kind = MODEL_ALLOC;
        m->ops[kind]++;
        switch (kind) {
        case MODEL_ALLOC: model_op_alloc(m, &b); break;
        case MODEL_ZEROED: model_op_zeroed(m, &b); break;
        case MODEL_COPY: model_op_copy(m, &b); break;
        case MODEL_STRING: model_op_string(m, &b); break;
        case MODEL_REF: model_op_ref(m, &b); break;
        case MODEL_DEGENERATE: model_op_degenerate(m, &b); break;
        case MODEL_GROW: model_op_grow(m, &b); break;
        case MODEL_SAVE: model_op_save(m); break;
        case MODEL_REWIND: model_op_rewind(m); break;
        case MODEL_RESET: model_op_reset(m); break;
        default: model_op_release(m); break;
        }
    }
    model_check_counters(m);
    if (m->nvals) { /* a few values every step, all of them now and then */
        model_check_value(m, m->nvals - 1);
        /* (not drawn from a fuzzer's input: which value is checked is no
         * decision of the input's) */
        model_check_value(m, m->in ? (size_t)(model_rand(m) % m->nvals) : model_below(m, m->nvals));
    }
    if (m->step % 128 == 0)
        model_check_values(m);
}

/* The model a suite runs (one per test program), and the cmocka wrapper that
 * records errors around each test and frees the model after it. */
static model md;

static inline int teardown_model(void **state)
{
    (void)state;
    model_free(&md);
    restore_errors();
    return 0;
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_model)

#endif /* ARENA_TEST_MODEL_H */
