/*
 * A reference model of the arena, and a generator of mixed operations checked
 * against it.  Shared by the randomized suite (test_arena_model.c) and the
 * failure sweep (test_arena_failure.c).
 *
 * The model knows only what API.md promises:
 *   - every live value keeps its bytes (each is filled with a pattern derived
 *     from its id, so any overlap or stray write shows);
 *   - arena_size() is the sum of the sizes stored (strings with their NUL),
 *     restored by a rewind, 0 after a reset;
 *   - arena_retained() is at least base + the sizes of the live oversized
 *     values (each has a chunk of its own), where base is the caller's
 *     buffer; it never decreases but at a reset or release (stores and
 *     rewinds keep every chunk), and a reset never increases it;
 *   - a failed call returns NULL (or the empty ref) only when the backing
 *     refused a request during it, and changes nothing.
 * Sizes are chosen away from the uniform/oversized boundary (small values fit
 * a quarter of a chunk, oversized ones need two), so the model never depends
 * on placement details such as guard bytes.
 */
#ifndef ARENA_TEST_MODEL_H
#define ARENA_TEST_MODEL_H

#include "support.h"

#include <stdio.h>

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
    bool oversized; /* counts exactly `stored` in retained */
} mval;

typedef struct mmark {
    arena_mark m;
    size_t nvals, size, over;
    long tail;
    bool tail_known, tail_clean;
    size_t tail_stored, tail_size;
    bool tail_has_nul;
} mmark;

#define MODEL_MAX_MARKS 8

/* Kinds of operation, in the order model_step() draws them. */
enum {
    MODEL_ALLOC, MODEL_ZEROED, MODEL_COPY, MODEL_STRING, MODEL_REF, MODEL_DEGENERATE,
    MODEL_GROW, MODEL_SAVE, MODEL_REWIND, MODEL_RESET, MODEL_RELEASE, MODEL_OPS
};

typedef struct model {
    arena a;
    test_backing *tb;
    size_t budget; /* uniform chunk capacity */
    size_t base;   /* retained capacity of the caller's buffer */
    mval *vals;
    size_t nvals, capvals;
    mmark marks[MODEL_MAX_MARKS];
    size_t nmarks;
    size_t size;    /* expected arena_size() */
    size_t over;    /* expected oversized bytes in arena_retained() */
    size_t floor;   /* arena_retained() at the last check */
    bool dropped;   /* a reset or release since: retained may have come down */
    /* The most recent value stored in a uniform chunk (the one arena_grow may
     * extend in place); unknown after it was shrunk to nothing.  Not clean
     * when an oversized value was stored after it. */
    long tail;
    bool tail_known, tail_clean;
    uint64_t rng, seed, next_id;
    size_t step, failures, stores, checks;
    size_t refused; /* calls that fail anyway (near SIZE_MAX) and met a backing refusal */
    size_t ops[MODEL_OPS]; /* steps per kind of operation */
    unsigned big_rarity;   /* oversized values are this many times rarer (0: 1) */
    bool fixed;            /* a caller's buffer without backing: full means NULL */
    const char *op;
    unsigned char scratch[3 * 65536 + 64];
} model;

/* A failure names the seed, the step and the operation, so that it can be
 * replayed with ARENA_TEST_SEED. */
#define MCHECK(m, cond)                                                                    \
    do {                                                                                   \
        if (!(cond))                                                                       \
            fail_msg("model check failed: %s (seed %llu, step %zu, op %s)", #cond,         \
                     (unsigned long long)(m)->seed, (m)->step, (m)->op ? (m)->op : "-");   \
    } while (0)

static uint64_t model_rand(model *m)
{
    /* xorshift64* */
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return m->rng * 0x2545F4914F6CDD1Dull;
}

static size_t model_below(model *m, size_t n) { return (size_t)(model_rand(m) % n); }

/* Starts a model over an arena already initialised by the caller. */
static void model_start(model *m, uint64_t seed, size_t budget, size_t base)
{
    m->seed = seed;
    m->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    m->budget = budget;
    m->base = base;
    m->nvals = 0;
    m->nmarks = 0;
    m->size = m->over = m->floor = 0;
    m->dropped = false;
    m->tail = -1;
    m->tail_known = true;
    m->tail_clean = true;
    m->next_id = 0;
    m->step = m->failures = m->stores = m->checks = m->refused = 0;
    memset(m->ops, 0, sizeof m->ops);
    m->big_rarity = 0;
    m->fixed = false;
    m->op = NULL;
    if (!m->vals) {
        m->capvals = 1024;
        m->vals = (mval *)malloc(m->capvals * sizeof *m->vals);
        assert_non_null(m->vals);
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
    return v->is_ref ? (unsigned char *)arena_ref_ptr(&m->a, v->ref) : v->p;
}

static void model_check_value(model *m, size_t i)
{
    const mval *v = &m->vals[i];
    unsigned char *p = mval_bytes(m, v);
    MCHECK(m, p != NULL);
    if (v->is_ref)
        MCHECK(m, arena_ref_len(v->ref) == v->size);
    MCHECK(m, pattern_mismatch(p, v->size, v->id) == v->size);
    if (v->has_nul)
        MCHECK(m, p[v->size] == '\0');
    m->checks++;
}

static void model_check_values(model *m)
{
    size_t i;
    for (i = 0; i < m->nvals; i++)
        model_check_value(m, i);
}

static void model_check_counters(model *m)
{
    size_t r = arena_retained(&m->a);
    MCHECK(m, arena_size(&m->a) == m->size);
    MCHECK(m, r >= m->base + m->over);
    if (m->dropped)
        MCHECK(m, r <= m->floor); /* a reset or release allocates nothing */
    else
        MCHECK(m, r >= m->floor); /* chunks are kept until a reset or release */
    m->floor = r;
    m->dropped = false;
    if (m->tb)
        MCHECK(m, m->tb->live_bytes >= r - m->base);
    MCHECK(m, arena_check(&m->a));
    MCHECK(m, recorded_errors.count == 0); /* nothing here is misuse */
}

/* Records a value stored at p (already filled by the caller or the arena). */
static mval *model_add(model *m, unsigned char *p, arena_ref ref, bool is_ref, size_t stored,
                       size_t size, size_t align, bool has_nul, uint64_t id)
{
    mval *v;
    bool oversized = stored > m->budget / 2;
    if (m->nvals == m->capvals) {
        mval *grown = (mval *)realloc(m->vals, 2 * m->capvals * sizeof *m->vals);
        assert_non_null(grown);
        m->vals = grown;
        m->capvals *= 2;
    }
    if (!is_ref)
        MCHECK(m, is_aligned(p, align));
    else
        MCHECK(m, is_aligned(arena_ref_ptr(&m->a, ref), align));
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
    m->size += stored;
    if (oversized) {
        m->over += stored + over_align(align);
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

/* ---- Choosing sizes ------------------------------------------------------------- */

/* A size that is plainly small (fits a quarter of a uniform chunk with any
 * padding used here) or, one time in `big_odds`, plainly oversized. */
static size_t model_size(model *m, unsigned big_odds)
{
    if (big_odds && model_below(m, (size_t)big_odds * (m->big_rarity ? m->big_rarity : 1)) == 0)
        return 2 * m->budget + 1 + model_below(m, m->budget);
    return 1 + model_below(m, m->budget / 4 - 64);
}

static size_t model_small_align(model *m)
{
    static const size_t aligns[] = {0, 1, 2, 4, 8, 16, 32, 64};
    return aligns[model_below(m, sizeof aligns / sizeof aligns[0])];
}

/* ---- One operation ----------------------------------------------------------------- */

typedef struct model_before {
    size_t size, retained, failed, calls;
} model_before;

static model_before model_snapshot(model *m)
{
    model_before b;
    b.size = arena_size(&m->a);
    b.retained = arena_retained(&m->a);
    b.failed = m->tb ? m->tb->failed : 0;
    b.calls = m->tb ? m->tb->calls : 0;
    return b;
}

/* A call returned NULL or the empty ref: legitimate only when the backing
 * refused a request during it (or `always` fails, e.g. a size near SIZE_MAX);
 * and nothing may have changed. */
static void model_failed(model *m, const model_before *b, bool always)
{
    if (!always && !m->fixed)
        MCHECK(m, m->tb && m->tb->failed > b->failed);
    MCHECK(m, arena_size(&m->a) == b->size);
    MCHECK(m, arena_retained(&m->a) == b->retained);
    MCHECK(m, arena_check(&m->a));
    model_check_values(m);
    m->failures++;
}

static void model_op_alloc(model *m, model_before *b)
{
    size_t size = model_size(m, 8);
    size_t align = size > m->budget ? 16 : model_small_align(m);
    uint64_t id = m->next_id++;
    unsigned char *p;
    unsigned kind = (unsigned)model_below(m, 4);

    m->op = "alloc";
    if (kind == 0 && align == 0) {
        p = (unsigned char *)arena_alloc(&m->a, size);
    } else if (kind == 1 && align == 0) {
        p = (unsigned char *)arena_grow(&m->a, NULL, 0, size);
    } else if (kind == 2 && align == 8) {
        size = (size + 7) / 8 * 8;
        p = (unsigned char *)ARENA_ALLOC_ARRAY(&m->a, uint64_t, size / 8);
        align = _Alignof(uint64_t); /* 4 on i386 */
    } else {
        p = (unsigned char *)arena_alloc_aligned(&m->a, size, align);
    }
    if (!p) {
        model_failed(m, b, false);
        return;
    }
    fill_pattern(p, size, id);
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
        p = (unsigned char *)arena_calloc(&m->a, count, size / count);
    } else if (kind == 1) {
        size = (size + 3) / 4 * 4;
        p = (unsigned char *)ARENA_NEW_ARRAY(&m->a, uint32_t, size / 4);
        align = _Alignof(uint32_t);
    } else {
        typedef struct { uint64_t a, b, c; } triple;
        size = sizeof(triple);
        p = (unsigned char *)ARENA_NEW(&m->a, triple);
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
    size_t align = size > m->budget ? (size_t)1 << model_below(m, 5) : model_small_align(m);
    uint64_t id = m->next_id++;
    unsigned char *p;

    m->op = "copy";
    fill_pattern(m->scratch, size, id);
    p = (unsigned char *)arena_copy(&m->a, m->scratch, size, align);
    memset(m->scratch, 0, size); /* the copy must not depend on the source */
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
    fill_pattern(m->scratch, len, id); /* pattern bytes include NULs */
    m->scratch[len] = '\0';
    size = dup ? strlen((const char *)m->scratch) : len;
    if (dup)
        p = (unsigned char *)arena_strdup(&m->a, (const char *)m->scratch);
    else
        p = (unsigned char *)arena_strndup(&m->a, (const char *)m->scratch, len);
    memset(m->scratch, 0xFF, len + 1);
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
    size_t align = str ? 1 : (size > m->budget ? 16 : model_small_align(m));
    arena_ref r;

    m->op = str ? "ref_strndup" : "ref_copy";
    fill_pattern(m->scratch, size, id);
    r = str ? arena_ref_strndup(&m->a, (const char *)m->scratch, size)
            : arena_ref_copy(&m->a, m->scratch, size, align);
    memset(m->scratch, 0, size);
    if (arena_ref_empty(r)) {
        model_failed(m, b, false);
        return;
    }
    MCHECK(m, arena_ref_len(r) == size);
    model_add(m, NULL, r, true, str ? size + 1 : size, size, align ? align : ARENA_ALIGN, str,
              id);
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
    case 0: MCHECK(m, arena_alloc(&m->a, 0) != NULL); break;
    case 1: MCHECK(m, arena_calloc(&m->a, 0, 9) != NULL); break;
    case 2: MCHECK(m, arena_copy(&m->a, NULL, 0, 4) != NULL); break;
    case 3: MCHECK(m, arena_ref_empty(arena_ref_copy(&m->a, m->scratch, 0, 0))); break;
    case 4: p = arena_alloc(&m->a, huge); break;
    case 5: p = arena_alloc_aligned(&m->a, huge, 64); break;
    case 6: p = arena_calloc(&m->a, huge, 2); break;
    case 7: p = arena_strndup(&m->a, (const char *)m->scratch, opaque_size(huge)); break;
    case 8: p = ARENA_NEW_ARRAY(&m->a, uint64_t, huge / 4); break;
    case 9: p = arena_copy(&m->a, m->scratch, opaque_size(huge), 8); break;
    case 10: p = arena_alloc_aligned(&m->a, 8, 3); break; /* not a power of two */
    default: r = arena_ref_copy(&m->a, m->scratch, 8, 24); break;
    }
    MCHECK(m, p == NULL);
    MCHECK(m, arena_ref_empty(r));
    MCHECK(m, arena_size(&m->a) == b->size);
    MCHECK(m, arena_retained(&m->a) == b->retained);
    if (m->tb && m->tb->failed > b->failed)
        m->refused++;
}

static long model_pick_growable(model *m)
{
    size_t tries;
    if (m->nvals == 0)
        return -1;
    if (m->tail >= 0 && model_below(m, 2) == 0 && m->vals[m->tail].growable)
        return m->tail;
    for (tries = 0; tries < 8; tries++) {
        size_t i = model_below(m, m->nvals);
        if (m->vals[i].growable)
            return (long)i;
    }
    return -1;
}

static void model_op_grow(model *m, model_before *b)
{
    long i = model_pick_growable(m);
    mval *v;
    size_t old, want, r;
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
    r = model_below(m, 100);
    /* Growth stays plainly small or plainly oversized. */
    if (r < 52 && old > m->budget / 2)
        want = old + 1 + model_below(m, m->budget / 4);
    else if (r < 45 && old < m->budget / 4)
        want = old + 1 + model_below(m, m->budget / 4 - 64);
    else if (r < 52)
        want = 2 * m->budget + model_below(m, m->budget);
    else if (r < 92)
        want = model_below(m, old + 1);
    else
        want = old;
    if (old == 0 && want == 0)
        return;

    q = (unsigned char *)arena_grow(&m->a, p, old, want);
    if (want <= old) {
        size_t now = arena_size(&m->a);
        MCHECK(m, q == p);
        if (is_tail && certain) {
            MCHECK(m, now == m->size - (old - want));
        } else if (certain) {
            MCHECK(m, now == m->size); /* not the most recent: nothing given back */
        } else {
            MCHECK(m, now == m->size || now == m->size - (old - want));
        }
        m->size = now;
        if (now != b->size) {
            /* the tail was given back: the value now ends at the position,
             * and the bytes after it may be reused */
            v->stored = want;
            if (want == 0)
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
    if (q == p) {
        /* In place: only the most recent value may grow there. */
        MCHECK(m, !certain || is_tail);
        MCHECK(m, arena_size(&m->a) == m->size + (want - old));
        m->size += want - old;
        v->stored = want;
        v->size = want;
        v->has_nul = false;
        fill_pattern(q, want, v->id);
        return;
    }
    MCHECK(m, is_aligned(q, ARENA_ALIGN));
    {
        uint64_t id = m->next_id++;
        fill_pattern(q, want, id);
        model_add(m, q, (arena_ref){0, 0, 0}, false, want, want, ARENA_ALIGN, false, id);
    }
}

static void model_op_save(model *m)
{
    mmark *k;
    m->op = "save";
    if (m->nmarks == MODEL_MAX_MARKS)
        return;
    k = &m->marks[m->nmarks++];
    k->m = arena_save(&m->a);
    k->nvals = m->nvals;
    k->size = m->size;
    k->over = m->over;
    k->tail = m->tail;
    k->tail_known = m->tail_known;
    k->tail_clean = m->tail_clean;
    if (m->tail >= 0) {
        k->tail_stored = m->vals[m->tail].stored;
        k->tail_size = m->vals[m->tail].size;
        k->tail_has_nul = m->vals[m->tail].has_nul;
    }
}

static void model_op_rewind(model *m)
{
    size_t j;
    mmark *k;
    m->op = "rewind";
    if (m->nmarks == 0)
        return;
    j = model_below(m, m->nmarks);
    k = &m->marks[j];
    arena_rewind(&m->a, k->m);
    m->nmarks = j + 1; /* later marks expire */
    m->nvals = k->nvals;
    m->size = k->size;
    m->over = k->over;
    m->tail = k->tail;
    m->tail_known = k->tail_known;
    m->tail_clean = k->tail_clean;
    if (m->tail >= 0) {
        /* Bytes the tail grew by in place since the save are forgotten.
         * Bytes it gave back by shrinking stay given back (they may hold
         * values stored since), so the position is no longer at its end. */
        mval *v = &m->vals[m->tail];
        if (v->stored < k->tail_stored)
            m->tail_known = false;
        else
            v->stored = k->tail_stored;
        v->has_nul = k->tail_has_nul && v->has_nul && v->size >= k->tail_size;
        if (v->size > k->tail_size)
            v->size = k->tail_size;
    }
    model_check_values(m);
}

static void model_op_reset(model *m)
{
    m->op = "reset";
    model_check_values(m);
    arena_reset(&m->a);
    m->dropped = true;
    m->nvals = m->nmarks = 0;
    m->size = m->over = 0;
    m->tail = -1;
    m->tail_known = m->tail_clean = true;
}

static void model_op_release(model *m)
{
    m->op = "release";
    model_check_values(m);
    arena_release(&m->a);
    m->dropped = true;
    m->nvals = m->nmarks = 0;
    m->size = m->over = 0;
    m->tail = -1;
    m->tail_known = m->tail_clean = true;
    MCHECK(m, arena_retained(&m->a) == m->base);
    if (m->tb) {
        MCHECK(m, m->tb->live == 0);
        MCHECK(m, m->tb->live_bytes == 0);
    }
}

/* One random operation, then the counters (and some values) checked. */
static void model_step(model *m)
{
    model_before b = model_snapshot(m);
    unsigned r = (unsigned)model_below(m, 1000);

    /* cumulative odds, per mille, in the order of the enum */
    static const unsigned upto[MODEL_OPS] = {200, 300, 400, 550, 700, 760,
                                             900, 945, 990, 996, 1000};
    unsigned kind = 0;

    m->step++;
    while (r >= upto[kind])
        kind++;
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
    model_check_counters(m);
    if (m->nvals) { /* a few values every step, all of them now and then */
        model_check_value(m, m->nvals - 1);
        model_check_value(m, model_below(m, m->nvals));
    }
    if (m->step % 128 == 0)
        model_check_values(m);
}

/* The model a suite runs (one per test program), and the cmocka wrapper that
 * records errors around each test and frees the model after it. */
static model md;

static int teardown_model(void **state)
{
    (void)state;
    model_free(&md);
    restore_errors();
    return 0;
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_model)

#endif /* ARENA_TEST_MODEL_H */
