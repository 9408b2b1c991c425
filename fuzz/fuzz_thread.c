/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: single-threaded models of the arena cache and of the
 * shared arena (arena/thread.h).  The input draws a sequence of operations
 * over two caches and two shared arenas, each made with a configuration the
 * input chooses (small chunks and runs, bounds on what a recycle keeps, a
 * backing that fails on demand, or malloc):
 *   - caches: create, acquire, values stored in the acquired arenas,
 *     recycle, count, destroy (with arenas still out), a recycle of NULL;
 *   - shared arenas: create, alloc, alloc_aligned, calloc (size 0 and sizes
 *     no allocation gets included), reset with a retain limit, destroy.
 * Shared arenas are created and destroyed all along, so that two live ones
 * often share the thread's entry of the run table (one per creation order
 * modulo four).
 *
 * The model checks what thread.h promises: every live value keeps its bytes
 * (values in acquired arenas until their recycle, values of a shared arena
 * until its reset or destroy), alignment, zeroed callocs, an acquired arena
 * that is empty, the arena this thread recycled last coming back from its
 * slot, a store that never holds more than max_arenas, a reset to 0 that
 * keeps no chunk, a NULL only where the backing refused (or the size is
 * beyond any allocation), and misuse reported once.
 */
#define TEST_NO_CMOCKA 1
#include "support.h"
#include "fuzz_input.h"

#include <arena/thread.h>

#define CACHES     2
#define SHARED     2
#define HELD       4
#define MAX_VALUES 64
#define MAX_OPS    128 /* per input: longer inputs add time, not paths */

enum { IN_HELD, IN_SHARED };

typedef struct value {
    unsigned char *p;
    size_t size;
    uint64_t id;
    int kind; /* IN_HELD: in held[where]; IN_SHARED: in shared[where] */
    int where;
} value;

typedef struct cache_model {
    arena_cache *c;
    size_t max_arenas;
    bool tb;
} cache_model;

typedef struct held_arena {
    arena *a;
    int cache;
} held_arena;

typedef struct shared_model {
    arena_shared *s;
    bool tb;
} shared_model;

static fuzz_input in;
static test_backing tb;
static cache_model caches[CACHES];
static held_arena held[HELD];
static shared_model shared[SHARED];
static value values[MAX_VALUES];
static size_t nvalues;
static arena *slot_arena; /* the arena this thread's slot holds, as the model knows */
static int slot_cache;
static uint64_t next_id;

static size_t below(size_t n) { return fuzz_below(&in, n); }

/* ---- Values ----------------------------------------------------------------------- */

static void check_values(void)
{
    size_t i;
    for (i = 0; i < nvalues; i++)
        TEST_CHECK(has_pattern(values[i].p, values[i].size, values[i].id));
    TEST_CHECK(recorded_errors.count == recorded_errors.expected);
}

static void keep(unsigned char *p, size_t size, size_t align, int kind, int where)
{
    value *v;
    TEST_CHECK(p != NULL);
    TEST_CHECK(is_aligned(p, align));
    if (nvalues == MAX_VALUES || size == 0)
        return;
    v = &values[nvalues++];
    v->p = p;
    v->size = size;
    v->id = next_id++;
    v->kind = kind;
    v->where = where;
    fill_pattern(p, size, v->id);
}

static void forget(int kind, int where)
{
    size_t i = 0;
    while (i < nvalues) {
        if (values[i].kind == kind && values[i].where == where)
            values[i] = values[--nvalues];
        else
            i++;
    }
}

/* Sizes: mostly small, some around a run or a chunk, some no allocation
 * gets. */
static size_t draw_size(bool *huge)
{
    *huge = false;
    switch (below(8)) {
    case 0:
    case 1:
    case 2:
    case 3: return 1 + below(64);
    case 4: return below(1024);
    case 5: return 1024 + below(8192);
    case 6: return 0;
    default:
        if (below(4) == 0) {
            *huge = true;
            return below(2) ? SIZE_MAX : SIZE_MAX / 2 + below(64);
        }
        return 1 + below(300);
    }
}

static arena_allocator backing(bool *use_tb)
{
    *use_tb = below(4) != 0;
    return tb_use(&tb);
}

/* ---- Caches ------------------------------------------------------------------------- */

static void cache_create(int i)
{
    static const size_t chunk_bytes[] = {256, 1000, 4096, 16384};
    static const size_t max_arenas[] = {0, 1, 2, 3};
    cache_model *cm = &caches[i];
    arena_cache_config cfg;
    arena_allocator al = backing(&cm->tb);
    size_t failed = tb.failed;

    memset(&cfg, 0, sizeof cfg);
    cfg.chunk_bytes = chunk_bytes[below(4)];
    cfg.max_arenas = max_arenas[below(4)];
    cfg.max_retained = below(3) * cfg.chunk_bytes;
    cfg.backing = cm->tb ? &al : NULL;
    cm->max_arenas = cfg.max_arenas ? cfg.max_arenas : 64;
    cm->c = arena_cache_create(&cfg);
    if (!cm->c)
        TEST_CHECK(cm->tb && tb.failed > failed);
}

static void cache_destroy(int i)
{
    int h;
    for (h = 0; h < HELD; h++) {
        if (held[h].a && held[h].cache == i) {
            forget(IN_HELD, h);
            held[h].a = NULL;
        }
    }
    if (slot_arena && slot_cache == i)
        slot_arena = NULL;
    arena_cache_destroy(caches[i].c);
    caches[i].c = NULL;
}

static void cache_acquire(int i)
{
    cache_model *cm = &caches[i];
    size_t failed = tb.failed;
    arena *a;
    int h;

    for (h = 0; h < HELD && held[h].a; h++)
        ;
    if (h == HELD)
        return;
    a = arena_cache_acquire(cm->c);
    if (slot_arena && slot_cache == i) {
        TEST_CHECK(a == slot_arena); /* this thread's last recycle, from its slot */
        slot_arena = NULL;
    }
    if (!a) {
        TEST_CHECK(cm->tb && tb.failed > failed);
        return;
    }
    TEST_CHECK(arena_size(a) == 0);
    TEST_CHECK(arena_check(a));
    held[h].a = a;
    held[h].cache = i;
}

static void cache_recycle(int h)
{
    int i = held[h].cache;
    forget(IN_HELD, h);
    arena_cache_recycle(caches[i].c, held[h].a);
    /* Into the slot unless it holds an arena of this cache (then the store);
     * another cache's arena goes back to its own store first. */
    if (!slot_arena || slot_cache != i) {
        slot_arena = held[h].a;
        slot_cache = i;
    }
    held[h].a = NULL;
    TEST_CHECK(arena_cache_count(caches[i].c) <= caches[i].max_arenas);
}

static void held_store(int h)
{
    arena *a = held[h].a;
    bool huge;
    size_t size = draw_size(&huge), failed = tb.failed, before = arena_size(a);
    unsigned char *p = (unsigned char *)arena_alloc(a, size);
    if (!p) {
        TEST_CHECK(huge || (caches[held[h].cache].tb && tb.failed > failed));
        TEST_CHECK(arena_size(a) == before);
        return;
    }
    TEST_CHECK(!huge);
    keep(p, size, ARENA_ALIGN, IN_HELD, h);
}

static void cache_op(void)
{
    int i = (int)below(CACHES), h = (int)below(HELD);
    if (!caches[i].c) {
        cache_create(i);
        return;
    }
    switch (below(12)) {
    case 0: cache_destroy(i); break;
    case 1:
    case 2:
    case 3: cache_acquire(i); break;
    case 4:
    case 5:
        if (held[h].a)
            cache_recycle(h);
        break;
    case 6: {
        int count = recorded_errors.count;
        arena_cache_recycle(caches[i].c, NULL);
        TEST_CHECK(test_misuse_reported(count, ARENA_ERR_NULL_FREE));
        break;
    }
    case 7: tb.fail_at = tb.calls + 1 + below(3); break;
    default:
        if (held[h].a)
            held_store(h);
        break;
    }
}

/* ---- Shared arenas -------------------------------------------------------------------- */

static void shared_create(int i)
{
    static const size_t chunk_bytes[] = {1024, 2048, 4096, 16384};
    static const size_t run_bytes[] = {0, 1, 1024, 4096};
    shared_model *sm = &shared[i];
    arena_allocator al = backing(&sm->tb);
    size_t failed = tb.failed;

    sm->s = arena_shared_create(chunk_bytes[below(4)], run_bytes[below(4)], sm->tb ? &al : NULL);
    if (!sm->s)
        TEST_CHECK(sm->tb && tb.failed > failed);
}

static void shared_alloc(int i)
{
    static const size_t aligns[] = {0, 1, 8, 16, 64, 256};
    shared_model *sm = &shared[i];
    bool huge;
    size_t size = draw_size(&huge), failed = tb.failed, align = ARENA_ALIGN;
    unsigned char *p;

    switch (below(3)) {
    case 0: p = (unsigned char *)arena_shared_alloc(sm->s, size); break;
    case 1:
        align = aligns[below(6)];
        p = (unsigned char *)arena_shared_alloc_aligned(sm->s, size, align);
        if (align == 0)
            align = ARENA_ALIGN;
        break;
    default: {
        size_t count = 1 + below(4);
        size = huge ? size : (size + count - 1) / count * count;
        p = (unsigned char *)arena_shared_calloc(sm->s, count, huge ? size : size / count);
        if (p)
            TEST_CHECK(all_zero(p, size));
        break;
    }
    }
    if (!p) {
        TEST_CHECK(huge || (sm->tb && tb.failed > failed));
        return;
    }
    TEST_CHECK(!huge);
    keep(p, size, align, IN_SHARED, i);
}

static void shared_op(void)
{
    int i = (int)below(SHARED);
    shared_model *sm = &shared[i];
    if (!sm->s) {
        shared_create(i);
        return;
    }
    switch (below(10)) {
    case 0:
        forget(IN_SHARED, i);
        arena_shared_destroy(sm->s);
        sm->s = NULL;
        break;
    case 1: {
        size_t limit = below(3) == 0 ? 0 : below(2) ? SIZE_MAX : 4096 * below(8);
        forget(IN_SHARED, i);
        arena_shared_reset(sm->s, limit);
        if (limit == 0)
            TEST_CHECK(arena_shared_retained(sm->s) == 0);
        break;
    }
    case 2: tb.fail_at = tb.calls + 1 + below(3); break;
    default: shared_alloc(i); break;
    }
}

/* ---- The input ------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t ops;
    int i;

    in.p = data;
    in.n = size;
    record_errors();
    tb_reset(&tb);
    nvalues = 0;
    slot_arena = NULL;
    for (ops = 0; in.n && ops < MAX_OPS; ops++) {
        if (below(2))
            cache_op();
        else
            shared_op();
        check_values();
    }
    for (i = 0; i < HELD; i++)
        if (held[i].a && below(2))
            cache_recycle(i);
    check_values();
    nvalues = 0;
    for (i = 0; i < CACHES; i++)
        if (caches[i].c)
            cache_destroy(i);
    for (i = 0; i < SHARED; i++) {
        arena_shared_destroy(shared[i].s);
        shared[i].s = NULL;
    }
    TEST_CHECK(tb.live == 0);
    TEST_CHECK(recorded_errors.count == recorded_errors.expected);
    restore_errors();
    return 0;
}
