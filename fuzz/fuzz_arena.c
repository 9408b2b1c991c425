/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the arena model of tests/model.h, with its choices drawn
 * from the input's bytes, over one arena (every entry point, marks and
 * scopes, refs, grow, misuse, a backing that fails on demand), and beside it,
 * in this one thread, what else hands out arenas:
 *   - scratch arenas, begun with conflicts of every kind and ended in order
 *     and out of order (an end after an enclosing one's is reported);
 *   - arena caches (small max_arenas and max_retained), whose acquires,
 *     recycles, double, NULL and foreign recycles, counts and destroys are
 *     predicted: which arena an acquire returns, a bound on its capacity,
 *     what is reported;
 *   - a side arena that charges one budget with the main arena (whose
 *     model sets its limits: see model_limits()): the budget's used bytes
 *     are what the two hold;
 *   - child arenas of a parent arena, made, used (by the model), reset and
 *     released, and the parent's values stored, rewound, reset and released
 *     among them: a parent's reset or release ends every child that holds
 *     its memory, a rewind to a mark each one that took memory since the
 *     mark (and no other: their values stay); while no child holds memory
 *     of the parent, the parent's size is its own values' (until a rewind
 *     to a mark taken while a child held memory, which counts the bytes
 *     freed since the mark again).
 * The model drives every scratch arena, every acquired arena and every
 * child too; the main arena's model has its limits and cleanups on.
 *
 * A step checks the counters and the values it touched; every value, and
 * arena_check() of every arena, is checked at the end of the input.
 *
 * Two kinds of misuse are switched at compile time (1 by default, 0 leaves
 * them out): MODEL_UNORDERED_ENDS (tests/model.h), rewinds and scope and
 * scratch ends after an enclosing one's; FUZZ_RECYCLE_FREED, a second
 * recycle of an arena that its cache has already released.
 *
 * Build: cmake -DARENA_FUZZ=ON -DCMAKE_C_COMPILER=clang (see fuzz/CMakeLists.txt).
 */
#define TEST_NO_CMOCKA 1
#include "model.h"

#ifndef FUZZ_RECYCLE_FREED
#  define FUZZ_RECYCLE_FREED 1
#endif

static model_input input;
static model chooser; /* draws the fuzzer's own choices from the input */

static size_t below(size_t n) { return model_below(&chooser, n); }

/* A side model (a scratch arena, an acquired arena): the model drives the
 * arena's stores and misuse, someone else its lifetime. */
static void start_side(model *m, arena *a, size_t budget, test_backing *tb)
{
    model_start(m, a, 0, budget, 0);
    m->tb = tb;
    m->stores_only = true;
    m->light = true;
    m->misuse = true;
    m->in = &input;
}

/* ---- The main arena ------------------------------------------------------------ */

static test_backing tb_main;
static _Alignas(64) unsigned char buf[4096 + 16];
static arena_budget *group; /* charged by the side arena, and the main arena at times */

static void start_main(void)
{
    /* (ARENA_DEFAULT_CHUNK comes with the buffer and zero-value arenas: big
     * chunks cost time in a checked build, which clobbers and walks them) */
    static const size_t budgets[] = {32, 64, 256, 512, 1000, 4096, 4096, 16384};
    arena_allocator al = tb_allocator(&tb_main);
    unsigned kind = (unsigned)below(8);
    size_t budget = ARENA_DEFAULT_CHUNK, base = 0;

    kind = kind < 5 ? 0 : kind - 4; /* mostly chunks of the budget drawn */
    if (kind == 0) {
        budget = budgets[below(8)];
        arena_init_with(&md.own, budget, &al);
    } else if (kind == 3) {
        memset(&md.own, 0, sizeof md.own); /* the zero-value arena on malloc */
    } else {
        size_t off = below(16), len = below(4097);
        size_t pad = (size_t)(-(uintptr_t)(buf + off) & (ARENA_ALIGN - 1));
        base = len > pad ? len - pad : 0;
        arena_init_buffer(&md.own, buf + off, len, kind == 1 ? &al : NULL);
    }
    model_start(&md, &md.own, 0, budget, base);
    md.tb = kind <= 1 ? &tb_main : NULL;
    md.fixed = kind == 2;
    md.light = true;
    md.misuse = true;
    md.in = &input;
    model_limits(&md, group);
    model_cleanups(&md);
}

static void end_main(void)
{
    model_finish(&md);
    model_run_begin(&md, 0);
    arena_release(md.a);
    model_run_end(&md);
    TEST_CHECK(arena_retained(md.a) == md.base);
    TEST_CHECK(tb_main.live == 0);
    arena_set_budget(md.a, NULL);
}

/* ---- A side arena on the same budget -------------------------------------------------- */

static test_backing tb_side;
static arena side;

static void start_side_arena(void)
{
    arena_allocator al = tb_allocator(&tb_side);
    if (!group) {
        group = arena_budget_create(SIZE_MAX, "group");
        TEST_CHECK(group != NULL);
    }
    arena_budget_set_limit(group, below(2) ? SIZE_MAX : below(64 * 1024));
    arena_init_with(&side, 256 << below(6), &al);
    arena_set_budget(&side, group);
}

/* The budget's used bytes are what its arenas hold, and a charge never
 * takes it past its limit (it may be past it where the limit came down;
 * an arena joins it only when what it holds fits). */
static size_t group_used; /* after the last step */

static void check_group(void)
{
    arena_stats s, t;
    size_t used = arena_budget_used(group), limit = arena_budget_limit(group);
    arena_get_stats(&side, &s);
    arena_get_stats(md.a, &t);
    TEST_CHECK(used == s.held + (md.charged ? t.held : 0));
    TEST_CHECK(used <= limit || used <= group_used);
    group_used = used;
}

static void side_op(void)
{
    size_t before = tb_side.failed;
    switch (below(8)) {
    case 0: arena_reset(&side); break;
    case 1:
        arena_budget_set_limit(group, arena_budget_used(group) + below(8192) - 1024);
        group_used = arena_budget_used(group);
        break;
    case 2: tb_side.fail_at = tb_side.calls + 1 + below(3); break;
    default:
        if (!arena_alloc(&side, 1 + below(8192))) { /* the budget, or the backing */
            arena_stats s;
            arena_get_stats(&side, &s);
            TEST_CHECK(s.limit_hits > 0 || tb_side.failed > before);
        }
        break;
    }
    check_group();
}

static void end_side_arena(void)
{
    arena_release(&side);
    TEST_CHECK(tb_side.live == 0);
    arena_set_budget(&side, NULL);
    TEST_CHECK(arena_budget_used(group) == 0);
}

/* ---- Child arenas ---------------------------------------------------------------------- */

#define KIDS 2

static test_backing tb_parent;
static arena parent;
static size_t pbudget; /* the parent's chunk budget */
static arena kid[KIDS];
static model km[KIDS];
static bool kid_made[KIDS];
static arena_cleanup *kid_tie[KIDS]; /* its tie to the parent (white-box) when last seen */
static bool kid_fresh[KIDS];         /* it took a tie since the parent's mark */
static size_t own;     /* the parent's own values: its size while no child holds memory */
static bool own_known; /* ... until a rewind counts freed bytes again */
static struct {
    arena_mark m;
    size_t own, size;
    bool tied; /* a child held memory of the parent then */
} pmark;
static bool pmarked;

static bool tied(size_t k) { return kid_made[k] && arena__cold(&kid[k])->tie != NULL; }

/* After each use of a child: a new tie means it took memory of the parent
 * after the parent's mark (ties are pushed again after a mark, see
 * src/child.c), and a rewind to the mark ends it. */
static void kid_observe(size_t k)
{
    arena_cleanup *t = kid_made[k] ? arena__cold(&kid[k])->tie : NULL;
    if (t && t != kid_tie[k])
        kid_fresh[k] = true;
    kid_tie[k] = t;
}

static bool any_tied(void)
{
    size_t k;
    for (k = 0; k < KIDS; k++)
        if (tied(k))
            return true;
    return false;
}

/* The parent's batch ended: so did every child that held its memory
 * (released: empty, and usable again). */
static void kids_ended(bool was[KIDS])
{
    size_t k;
    for (k = 0; k < KIDS; k++) {
        kid_observe(k);
        kid_fresh[k] = false;
        if (!kid_made[k])
            continue;
        TEST_CHECK(!tied(k));
        if (!was[k])
            continue;
        TEST_CHECK(arena_size(&kid[k]) == 0 && arena_retained(&kid[k]) == 0);
        model_expire_all(&km[k]);
        km[k].dropped = true;
        model_check_counters(&km[k]);
    }
}

static void check_parent(void)
{
    size_t k, held = 0;
    for (k = 0; k < KIDS; k++)
        if (kid_made[k])
            held += arena_retained(&kid[k]);
    if (!own_known)
        return;
    if (!any_tied())
        TEST_CHECK(arena_size(&parent) == own);
    else
        TEST_CHECK(arena_size(&parent) >= own + held); /* the children's chunks are its values */
}

static void start_children(void)
{
    arena_allocator al = tb_allocator(&tb_parent);
    pbudget = below(2) ? 4096 : 16384;
    arena_init_with(&parent, pbudget, &al);
    memset(kid_made, 0, sizeof kid_made);
    memset(kid_tie, 0, sizeof kid_tie);
    memset(kid_fresh, 0, sizeof kid_fresh);
    own = 0;
    own_known = true;
    pmarked = false;
}

static void kid_init(size_t k)
{
    static const size_t chunk_bytes[] = {0, 256, 1024, 4096};
    size_t chunk = chunk_bytes[below(4)];
    if (tied(k))
        return;
    if (kid_made[k])
        arena_release(&kid[k]); /* (holds nothing of the parent: a no-op but for its spares) */
    arena_init_child(&kid[k], &parent, chunk);
    model_start(&km[k], &kid[k], 0, chunk ? chunk : pbudget / 4, 0);
    km[k].light = true;
    km[k].misuse = true;
    km[k].in = &input;
    kid_made[k] = true;
    kid_observe(k);
}

/* The rewind of the parent to its mark: it ends each child that took
 * memory since (its cleanups and release come first), and no other, whose
 * values stay; the parent's size is what it was at the mark. */
static void parent_rewind(const bool was[KIDS])
{
    bool dies[KIDS];
    size_t k;
    for (k = 0; k < KIDS; k++)
        dies[k] = was[k] && kid_fresh[k];
    arena_rewind(&parent, pmark.m);
    TEST_CHECK(arena_size(&parent) == pmark.size);
    own = pmark.own;
    if (pmark.tied)
        own_known = false;
    for (k = 0; k < KIDS; k++) {
        if (!kid_made[k])
            continue;
        TEST_CHECK(tied(k) == (was[k] && !dies[k]));
        if (dies[k]) {
            TEST_CHECK(arena_size(&kid[k]) == 0 && arena_retained(&kid[k]) == 0);
            model_expire_all(&km[k]);
            km[k].dropped = true;
            model_check_counters(&km[k]);
        } else if (was[k]) {
            model_check_values(&km[k]);
        }
        kid_observe(k);
        kid_fresh[k] = false;
    }
}

static void parent_op(void)
{
    bool was[KIDS];
    size_t k;
    unsigned char *p;
    for (k = 0; k < KIDS; k++)
        was[k] = tied(k);
    switch (below(10)) {
    case 0:
    case 1: kid_init(below(KIDS)); break;
    case 2:
    case 3:
    case 4:
        k = below(KIDS);
        if (kid_made[k]) {
            model_step(&km[k]);
            kid_observe(k);
        }
        break;
    case 5: {
        size_t n = 1 + below(200);
        p = (unsigned char *)arena_alloc(&parent, n);
        TEST_CHECK(p != NULL);
        memset(p, 0x3C, n);
        own += n;
        break;
    }
    case 6:
        if (!pmarked) {
            pmark.m = arena_save(&parent);
            pmark.own = own;
            pmark.size = arena_size(&parent);
            pmark.tied = any_tied();
            pmarked = true;
            memset(kid_fresh, 0, sizeof kid_fresh);
        } else {
            parent_rewind(was);
        }
        break;
    case 7:
        arena_reset(&parent);
        own = 0;
        own_known = true;
        pmarked = false;
        kids_ended(was);
        break;
    case 8:
        arena_release(&parent);
        own = 0;
        own_known = true;
        pmarked = false;
        kids_ended(was);
        TEST_CHECK(tb_parent.live == 0);
        break;
    default:
        k = below(KIDS);
        if (kid_made[k]) {
            km[k].op = "release (of the child)";
            model_check_values(&km[k]);
            arena_release(&kid[k]);
            model_expire_all(&km[k]);
            km[k].dropped = true;
            model_check_counters(&km[k]);
            TEST_CHECK(!tied(k));
            kid_observe(k);
        }
        break;
    }
    check_parent();
}

static void end_children(void)
{
    size_t k;
    bool was[KIDS];
    for (k = 0; k < KIDS; k++) {
        was[k] = tied(k);
        if (kid_made[k])
            model_finish(&km[k]);
    }
    if (below(2)) {
        for (k = 0; k < KIDS; k++)
            if (kid_made[k])
                arena_release(&kid[k]);
        TEST_CHECK(!own_known || arena_size(&parent) == own);
    } else {
        arena_release(&parent);
        kids_ended(was);
    }
    arena_release(&parent);
    for (k = 0; k < KIDS; k++)
        if (kid_made[k])
            arena_release(&kid[k]);
    TEST_CHECK(tb_parent.live == 0);
}

/* ---- Scratch arenas -------------------------------------------------------------- */

#define MAX_OPEN 8

typedef struct open_scratch {
    arena_scope s;
    int which;   /* the scratch arena, -1: none was given */
    long mark;   /* its mark in that arena's model */
    bool dead;   /* one that encloses it (begun before, same arena) has ended */
    size_t died; /* the arena's model's rewinds then */
} open_scratch;

static arena *scratch_arena[ARENA_SCRATCH_COUNT]; /* this thread's, in the order handed out */
static model sm[ARENA_SCRATCH_COUNT];
static open_scratch opened[MAX_OPEN];
static size_t nopen;

/* Which scratch arenas this thread has: each is the first that is not a
 * conflict.  Learnt once, then released as at the end of every input. */
static void learn_scratch_arenas(void)
{
    arena_scope s[ARENA_SCRATCH_COUNT];
    int i;
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++) {
        s[i] = arena_scratch_begin(scratch_arena, (size_t)i);
        TEST_CHECK(s[i].arena != NULL);
        scratch_arena[i] = s[i].arena;
    }
    while (i--)
        arena_scope_end(&s[i]);
    arena_scratch_release_thread();
}

static void start_scratch(void)
{
    int i;
    if (!scratch_arena[0])
        learn_scratch_arenas();
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++)
        start_side(&sm[i], scratch_arena[i], ARENA_DEFAULT_CHUNK, NULL);
    nopen = 0;
}

static arena *held_arena(size_t k);

static void scratch_begin(void)
{
    arena *conflicts[3];
    size_t n = below(4), k;
    bool no_list = below(8) == 0; /* NULL with n > 0 is fine: nothing conflicts */
    int which = -1, i;
    arena_scope s;

    if (nopen == MAX_OPEN)
        return;
    for (k = 0; k < n; k++) {
        size_t pick = below(ARENA_SCRATCH_COUNT + 3);
        conflicts[k] = pick < ARENA_SCRATCH_COUNT        ? scratch_arena[pick]
                       : pick == ARENA_SCRATCH_COUNT     ? md.a
                       : pick == ARENA_SCRATCH_COUNT + 1 ? held_arena(below(4))
                                                         : NULL;
    }
    for (i = 0; i < ARENA_SCRATCH_COUNT && which < 0; i++) {
        which = i;
        for (k = 0; k < n && !no_list; k++)
            if (conflicts[k] == scratch_arena[i])
                which = -1;
    }
    if (which >= 0 && sm[which].nmarks == MODEL_MAX_MARKS)
        return;
    s = arena_scratch_begin(no_list ? NULL : conflicts, n);
    TEST_CHECK(s.arena == (which >= 0 ? scratch_arena[which] : NULL));
    opened[nopen].s = s;
    opened[nopen].which = which;
    opened[nopen].mark = which >= 0 ? model_push_mark(&sm[which], s.mark) : -1;
    opened[nopen].dead = false;
    nopen++;
}

static void scratch_end(size_t k)
{
    open_scratch o = opened[k];
    model *m = o.which >= 0 ? &sm[o.which] : NULL;
    size_t i;

    memmove(&opened[k], &opened[k + 1], (nopen - k - 1) * sizeof *opened);
    nopen--;
    if (!m) {
        arena_scope_end(&o.s); /* nothing to do */
        return;
    }
    if (o.dead) {
        arena_mark before;
        int count = recorded_errors.count;
        /* (reported while the arena remembers the rewind that expired it) */
        if (!MODEL_UNORDERED_ENDS || m->rewinds - o.died >= MODEL_REWINDS_REMEMBERED)
            return;
        before = arena_save(m->a);
        m->op = "scratch_end after an enclosing one";
        arena_scope_end(&o.s);
        MCHECK(m, test_misuse_reported(count, ARENA_ERR_BAD_MARK));
        MCHECK(m, model_same_mark(arena_save(m->a), before));
        return;
    }
    m->op = "scratch_end";
    model_rewinding(m, (size_t)o.mark);
    arena_scope_end(&o.s);
    model_rewound(m, (size_t)o.mark);
    m->nmarks = (size_t)o.mark; /* ended: the model forgets the mark */
    m->dropped = true;          /* spares beyond 1 MiB are freed */
    for (i = 0; i < nopen; i++) {
        if (opened[i].which == o.which && opened[i].mark > o.mark && !opened[i].dead) {
            opened[i].dead = true;
            opened[i].died = m->rewinds;
        }
    }
    model_check_counters(m);
}

static void scratch_op(void)
{
    switch (below(4)) {
    case 0: scratch_begin(); break;
    case 1:
        if (nopen)
            scratch_end(nopen - 1);
        break;
    case 2:
        if (nopen)
            scratch_end(below(nopen));
        break;
    default:
        if (nopen) {
            const open_scratch *o = &opened[below(nopen)];
            if (o->which >= 0 && !o->dead)
                model_step(&sm[o->which]);
        }
        break;
    }
}

static void end_scratch(void)
{
    int i;
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++)
        model_finish(&sm[i]);
    while (nopen)
        scratch_end(nopen - 1);
    arena_scratch_release_thread();
}

/* ---- Arena caches ---------------------------------------------------------------- */

#define CACHES    2
#define HELD      4    /* arenas acquired at once */
#define KNOWN     32   /* arenas the model follows */
#define MAX_STORE HELD /* a cache makes an arena only when it has none to give */

enum { UNUSED, ACQUIRED, PARKED, STACKED, RELEASED };

/* An arena a cache made, as the model knows it. */
typedef struct known {
    arena *a;
    int cache;
    int state;
    size_t retained; /* at most this at the next acquire */
} known;

typedef struct cache_model {
    arena_cache *c;
    size_t budget, max_arenas;
    size_t limit;            /* max_retained when it bounds what a recycle keeps */
    bool tb;                 /* its backing is tb_cache (else malloc) */
    known *store[MAX_STORE]; /* the shared store, oldest first */
    size_t nstore;
    known *spare[KNOWN]; /* released arenas' structs, oldest first */
    size_t nspare;
} cache_model;

static test_backing tb_cache;
static cache_model caches[CACHES];
static known arenas[KNOWN];
static model hm[HELD]; /* the model of each acquired arena */
static known *held[HELD];
static known *slot; /* the arena waiting in this thread's slot */

static arena *held_arena(size_t k) { return held[k] ? held[k]->a : NULL; }

/* Into the cache's store, or released (its struct kept for a later acquire)
 * when the store is full. */
static void store_push(cache_model *cm, known *k)
{
    if (cm->nstore < cm->max_arenas) {
        TEST_CHECK(cm->nstore < MAX_STORE);
        k->state = STACKED;
        cm->store[cm->nstore++] = k;
    } else {
        k->state = RELEASED;
        k->retained = 0;
        cm->spare[cm->nspare++] = k;
    }
}

static void cache_create(int i)
{
    static const size_t chunk_bytes[] = {0, 256, 1000, 4096};
    /* Stores that fill up (recycled arenas are then released), and the
     * default (64), which never does here. */
    static const size_t max_arenas[] = {0, 1, 1, 2};
    cache_model *cm = &caches[i];
    arena_allocator al;
    arena_cache_config cfg;
    size_t failed = tb_cache.failed;

    memset(&cfg, 0, sizeof cfg);
    cfg.chunk_bytes = chunk_bytes[below(4)];
    cfg.max_arenas = max_arenas[below(4)];
    cm->budget = cfg.chunk_bytes ? cfg.chunk_bytes : ARENA_DEFAULT_CHUNK;
    switch (below(5)) {
    case 0: cfg.max_retained = 0; break; /* no bound: the reset policy's */
    case 1: cfg.max_retained = 1; break; /* no chunk */
    case 2: cfg.max_retained = cm->budget; break;
    case 3: cfg.max_retained = 2 * cm->budget + 1; break;
    default: cfg.max_retained = SIZE_MAX; break; /* no bound */
    }
    cm->limit = cfg.max_retained ? cfg.max_retained : SIZE_MAX;
    cm->max_arenas = cfg.max_arenas ? cfg.max_arenas : 64;
    cm->tb = below(4) != 0;
    if (cm->tb) {
        al = tb_use(&tb_cache);
        cfg.backing = &al;
    }
    cm->nstore = cm->nspare = 0;
    cm->c = arena_cache_create(&cfg);
    if (!cm->c)
        TEST_CHECK(cm->tb && tb_cache.failed > failed);
}

static void cache_destroy(int i)
{
    size_t k;
    for (k = 0; k < HELD; k++) {
        if (held[k] && held[k]->cache == i) {
            model_finish(&hm[k]);
            held[k] = NULL;
        }
    }
    arena_cache_destroy(caches[i].c);
    caches[i].c = NULL;
    caches[i].nstore = caches[i].nspare = 0;
    if (slot && slot->cache == i)
        slot = NULL;
    for (k = 0; k < KNOWN; k++)
        if (arenas[k].cache == i)
            arenas[k].state = UNUSED;
}

static known *unused_record(void)
{
    size_t n;
    for (n = 0; n < KNOWN; n++)
        if (arenas[n].state == UNUSED)
            return &arenas[n];
    return NULL;
}

/* An arena for a request: the one in this thread's slot, else the store's
 * newest, else the newest released struct, else a fresh one. */
static void cache_acquire(int i)
{
    cache_model *cm = &caches[i];
    known *want = NULL, *k;
    size_t h, n, failed = tb_cache.failed;
    arena *a;

    for (h = 0; h < HELD && held[h]; h++)
        ;
    if (h == HELD || !unused_record())
        return;
    if (slot && slot->cache == i) {
        want = slot;
        slot = NULL;
    } else if (cm->nstore) {
        want = cm->store[--cm->nstore];
    } else if (cm->nspare) {
        want = cm->spare[--cm->nspare];
    }
    a = arena_cache_acquire(cm->c);
    if (want) {
        TEST_CHECK(a == want->a);
        k = want;
    } else if (!a) {
        TEST_CHECK(cm->tb && tb_cache.failed > failed);
        return;
    } else {
        for (n = 0; n < KNOWN; n++) /* not one the model knows */
            TEST_CHECK(arenas[n].state == UNUSED || arenas[n].a != a);
        k = unused_record();
        k->a = a;
        k->cache = i;
        k->retained = 0;
    }
    k->state = ACQUIRED;
    held[h] = k;
    TEST_CHECK(arena_size(a) == 0);
    TEST_CHECK(arena_retained(a) <= k->retained);
    start_side(&hm[h], a, cm->budget, cm->tb ? &tb_cache : NULL);
}

/* The arena held as hm[h] goes back to its cache: reset under the limit,
 * then into this thread's slot, else the store, else released. */
static void cache_recycle(size_t h)
{
    known *k = held[h];
    cache_model *cm = &caches[k->cache];
    model *m = &hm[h];
    size_t before;

    model_finish(m);
    before = arena_retained(m->a);
    m->op = "recycle";
    arena_cache_recycle(cm->c, k->a);
    k->retained = before < cm->limit ? before : cm->limit; /* a reset keeps, never adds */
    held[h] = NULL;
    /* A slot that holds another cache's arena gives it back to its store. */
    if (slot && slot->cache != k->cache) {
        store_push(&caches[slot->cache], slot);
        slot = NULL;
    }
    if (!slot) {
        k->state = PARKED;
        slot = k;
    } else {
        store_push(cm, k);
    }
    MCHECK(m, recorded_errors.count == recorded_errors.expected);
}

/* One of the arenas the model follows, or NULL. */
static known *pick_known(void)
{
    size_t n, used = 0, k;
    for (n = 0; n < KNOWN; n++)
        used += arenas[n].state != UNUSED;
    if (used == 0)
        return NULL;
    k = below(used);
    for (n = 0; arenas[n].state == UNUSED || k--; n++)
        ;
    return &arenas[n];
}

/* Misuse: NULL, an arena already recycled (wherever the cache has put it,
 * released included), an arena of another cache or of none.  Reported, and
 * nothing happens. */
static void cache_misuse(int i)
{
    cache_model *cm = &caches[i];
    int count = recorded_errors.count;
    unsigned kind = (unsigned)below(4);
    known *k;

    if (kind == 0) {
        arena_cache_recycle(cm->c, NULL);
        TEST_CHECK(test_misuse_reported(count, ARENA_ERR_NULL_FREE));
        return;
    }
    k = pick_known();
    if (!k || (k->state == RELEASED && !FUZZ_RECYCLE_FREED))
        return;
    if (kind == 1 || k->cache != i) {
        arena_cache_recycle(kind == 1 ? NULL : cm->c, k->a);
        TEST_CHECK(test_misuse_reported(count, ARENA_ERR_FOREIGN_POINTER));
    } else if (k->state != ACQUIRED) {
        arena_cache_recycle(cm->c, k->a);
        TEST_CHECK(test_misuse_reported(count, ARENA_ERR_DOUBLE_FREE));
    }
}

/* One of the acquired arenas, or -1. */
static long pick_held(void)
{
    size_t n, used = 0, k;
    for (n = 0; n < HELD; n++)
        used += held[n] != NULL;
    if (used == 0)
        return -1;
    k = below(used);
    for (n = 0; !held[n] || k--; n++)
        ;
    return (long)n;
}

static void cache_op(void)
{
    int i = (int)below(CACHES);
    cache_model *cm = &caches[i];
    long h;

    if (!cm->c) {
        cache_create(i);
        return;
    }
    switch (below(16)) {
    case 0: cache_destroy(i); break;
    case 1:
    case 2:
    case 3:
    case 4:
    case 5: cache_acquire(i); break;
    case 6:
    case 7:
    case 8:
    case 9:
    case 10:
        if ((h = pick_held()) >= 0)
            cache_recycle((size_t)h);
        break;
    case 11:
    case 12: cache_misuse(i); break;
    case 13:
    case 14:
        TEST_CHECK(arena_cache_count(cm->c) == cm->nstore);
        if ((h = pick_held()) >= 0)
            model_step(&hm[h]);
        break;
    default: tb_cache.fail_at = tb_cache.calls + 1 + below(3); break;
    }
}

static void start_caches(void)
{
    tb_reset(&tb_cache);
    memset(arenas, 0, sizeof arenas);
    memset(held, 0, sizeof held);
    slot = NULL;
}

static void end_caches(void)
{
    size_t h;
    int i;
    for (h = 0; h < HELD; h++)
        if (held[h] && below(2))
            cache_recycle(h);
    for (i = 0; i < CACHES; i++)
        if (caches[i].c)
            cache_destroy(i);
    TEST_CHECK(tb_cache.live == 0);
}

/* ---- The input ------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input.p = data;
    input.n = size;
    chooser.in = &input;
    record_errors();
    start_side_arena();
    start_main();
    start_scratch();
    start_caches();
    start_children();
    group_used = arena_budget_used(group);

    while (input.n) {
        switch (below(20)) {
        default: model_step(&md); break;
        case 9: tb_main.fail_at = tb_main.calls + 1 + below(4); break;
        case 10:
        case 11: scratch_op(); break;
        case 12:
        case 13:
        case 14: cache_op(); break;
        case 15:
        case 16: parent_op(); break;
        case 17: side_op(); break;
        }
        check_group();
    }
    end_scratch();
    end_caches();
    end_children();
    end_main();
    end_side_arena();
    TEST_CHECK(recorded_errors.count == recorded_errors.expected);
    restore_errors();
    return 0;
}
