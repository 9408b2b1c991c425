/* SPDX-License-Identifier: MIT */
/*
 * Growth and retention with default settings: repeated batches of one shape
 * reach a steady state with no backing call and no page fault, values larger
 * than the chunk size included; a batch shape that recurs within
 * ARENA_RECUR_BATCHES batches keeps its chunks; what a reset keeps stays
 * within twice the largest demand of the last ARENA_RETAIN_BATCHES batches;
 * a one-off spike is given back within ARENA_RETAIN_BATCHES smaller batches.
 * For arena_reset, arena_reset_to, rewinds, arena_trim and a caller's
 * buffer; the arena cache's and the shared arena's are tested in
 * test_thread_cache.c and test_thread_shared.c.
 */
#define _XOPEN_SOURCE 700
#include "support.h"
/* White-box: a batch's demand is read from the library's bookkeeping. */
#include "cold.h"

/* Page faults are counted with getrusage(), which Windows lacks; its own
 * count (GetProcessMemoryInfo) is always 0 under wine, where the Windows
 * build is tested, so the page-fault test is POSIX-only (docs/reference.md). */
#if !defined(_WIN32)
#  include <sys/resource.h>
#  define TEST_PAGE_FAULTS 1
#endif

static test_backing tb;

#define KIB           ((size_t)1024)
#define MIB           ((size_t)1024 * 1024)
#define CHUNK         ((size_t)ARENA_DEFAULT_CHUNK)
#define WARMUP        2  /* batches before the steady state */
#define MEASURED      10 /* batches of the steady state */
#define FAULT_BATCHES 20 /* batches whose page faults are counted */
#define MAX_VALUES    16384

/* The values of the batch under way, checked before it ends. */
static struct value {
    unsigned char *p;
    arena_ref ref;
    size_t n; /* bytes holding the pattern */
    uint64_t id;
} vals[MAX_VALUES];
static size_t nvals;
static uint64_t next_id;

/* Records the value at `p`, or of `ref` when p is NULL, and fills it. */
static void keep(arena *a, unsigned char *p, arena_ref ref, size_t n)
{
    assert_true(nvals < MAX_VALUES);
    if (n > PATTERN_SPAN)
        n = PATTERN_SPAN;
    vals[nvals].p = p;
    vals[nvals].ref = ref;
    vals[nvals].n = n;
    vals[nvals].id = next_id++;
    fill_pattern(p ? p : (unsigned char *)arena_ref_ptr(a, ref), n, vals[nvals].id);
    nvals++;
}

static void check_values(arena *a)
{
    size_t i;
    for (i = 0; i < nvals; i++) {
        const unsigned char *p =
            vals[i].p ? vals[i].p : (const unsigned char *)arena_ref_ptr(a, vals[i].ref);
        assert_non_null(p);
        assert_true(has_pattern(p, vals[i].n, vals[i].id));
    }
    assert_true(arena_check(a));
}

/* Checks the batch's values, which are then no longer followed. */
static void check_batch(arena *a)
{
    check_values(a);
    nvals = 0;
}

/* A value of `n` bytes stored by one of the entry points, chosen by `k`. */
static void store(arena *a, size_t n, unsigned k)
{
    static unsigned char src[PATTERN_SPAN];
    unsigned char *p = NULL;
    arena_ref r = {0, 0, 0};

    switch (k % 6) {
    case 0: p = (unsigned char *)arena_alloc(a, n); break;
    case 1: p = (unsigned char *)arena_calloc(a, 1, n); break;
    case 2: p = (unsigned char *)arena_strndup(a, (const char *)src, n - 1); break;
    case 3: p = (unsigned char *)arena_copy(a, src, n < sizeof src ? n : sizeof src, 8); break;
    case 4: r = arena_ref_copy(a, src, n < sizeof src ? n : sizeof src, 0); break;
    default: p = (unsigned char *)arena_alloc_aligned(a, n, 64); break;
    }
    if (k % 6 == 3 || k % 6 == 4)
        n = n < sizeof src ? n : sizeof src;
    if (k % 6 == 4) {
        assert_false(arena_ref_empty(r));
        keep(a, NULL, r, n);
        return;
    }
    assert_non_null(p);
    keep(a, p, r, k % 6 == 2 ? n - 1 : n);
}

/* ---- The shapes of a batch ----------------------------------------------------------- */

typedef void shape_fn(arena *a);

/* 6000 values of 16 to 400 bytes through every entry point: about 1.2 MB. */
static void shape_small(arena *a)
{
    unsigned i;
    for (i = 0; i < 6000; i++)
        store(a, 16 + (i * 37u) % 385, i);
}

/* Small values around values larger than the chunk size: 3 and 10 chunks'
 * worth, a string of 70 KiB, and one of 4 MiB (every page written). */
static void shape_big(arena *a)
{
    unsigned char *huge;
    unsigned i;
    for (i = 0; i < 400; i++)
        store(a, 16 + (i * 53u) % 300, i);
    store(a, 3 * CHUNK + 5, 0);
    for (i = 0; i < 400; i++)
        store(a, 16 + (i * 29u) % 300, i + 1);
    store(a, 10 * CHUNK, 4);
    store(a, 70 * KIB, 2);
    huge = (unsigned char *)arena_alloc(a, 4 * MIB);
    assert_non_null(huge);
    memset(huge, 0x5A, 4 * MIB);
    keep(a, huge, (arena_ref){0, 0, 0}, 4 * MIB);
    for (i = 0; i < 400; i++)
        store(a, 16 + (i * 31u) % 300, i + 2);
}

/* A mix: over-aligned oversized values, a buffer grown by doubling while
 * other values are stored after it (so it moves, leaving each old copy
 * behind), refs to oversized values, and a scope rewound inside the batch. */
static void shape_mixed(arena *a)
{
    unsigned char *buf, *p;
    size_t n, before;
    unsigned i;
    arena_mark m;

    for (i = 0; i < 300; i++)
        store(a, 16 + (i * 41u) % 700, i);
    p = (unsigned char *)arena_alloc_aligned(a, 2 * CHUNK, 4096);
    assert_non_null(p);
    assert_true(is_aligned(p, 4096));
    keep(a, p, (arena_ref){0, 0, 0}, 2 * CHUNK);

    buf = (unsigned char *)arena_alloc(a, 1000);
    assert_non_null(buf);
    for (n = 1000; n < 600 * KIB; n *= 2) {
        buf = (unsigned char *)arena_realloc(a, buf, n, 2 * n);
        assert_non_null(buf);
        store(a, 100, (unsigned)n);
    }
    keep(a, buf, (arena_ref){0, 0, 0}, n);

    m = arena_save(a);
    before = nvals;
    for (i = 0; i < 100; i++)
        store(a, 500, i);
    store(a, 300 * KIB, 4);
    store(a, 5 * CHUNK, 0);
    check_values(a);
    arena_rewind(a, m);
    nvals = before;

    for (i = 0; i < 200; i++)
        store(a, 16 + (i * 43u) % 900, i + 3);
    store(a, 100 * KIB, 4);
    store(a, CHUNK + 1, 2);
}

/* ---- How a batch ends ------------------------------------------------------------------ */

typedef void end_fn(arena *a);

static void end_reset(arena *a) { arena_reset(a); }
static void end_reset_to_max(arena *a) { arena_reset_to(a, SIZE_MAX); }
static void end_reset_to_64m(arena *a) { arena_reset_to(a, 64 * MIB); }

/* Runs `shape` `batches` times, each checked, then ended by `end`. */
static void run(arena *a, shape_fn *shape, end_fn *end, int batches)
{
    int i;
    for (i = 0; i < batches; i++) {
        shape(a);
        check_batch(a);
        end(a);
        assert_int_equal(arena_size(a), 0);
        assert_true(arena_check(a));
    }
}

static void init_tb(arena *a)
{
    arena_allocator al = tb_allocator(&tb);
    arena_init_with(a, 0, &al);
}

static void release_tb(arena *a)
{
    arena_release(a);
    assert_int_equal(arena_retained(a), 0);
    assert_int_equal(tb.live, 0);
}

/* After WARMUP batches, MEASURED more make no backing call, free nothing,
 * and retain exactly the same. */
static void steady(shape_fn *shape, end_fn *end)
{
    arena a;
    size_t calls, frees, retained;

    init_tb(&a);
    run(&a, shape, end, WARMUP);
    calls = tb.calls;
    frees = tb.frees;
    retained = arena_retained(&a);
    run(&a, shape, end, MEASURED);
    assert_int_equal(tb.calls, calls);
    assert_int_equal(tb.frees, frees);
    assert_int_equal(arena_retained(&a), retained);
    release_tb(&a);
}

static void test_steady_small_values(void **state)
{
    (void)state;
    steady(shape_small, end_reset);
    steady(shape_small, end_reset_to_max);
    steady(shape_small, end_reset_to_64m);
}

static void test_steady_values_above_the_chunk_size(void **state)
{
    (void)state;
    steady(shape_big, end_reset);
    steady(shape_big, end_reset_to_max);
    steady(shape_big, end_reset_to_64m);
}

static void test_steady_mixed(void **state)
{
    (void)state;
    steady(shape_mixed, end_reset);
    steady(shape_mixed, end_reset_to_max);
    steady(shape_mixed, end_reset_to_64m);
}

/* Batches delimited by a mark and a rewind (a scope) instead of a reset. */
static void test_steady_scopes(void **state)
{
    static shape_fn *const shapes[] = {shape_small, shape_big, shape_mixed};
    size_t s;
    (void)state;

    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        arena a;
        size_t calls = 0, frees = 0, retained = 0;
        unsigned char *outer;
        int i;

        init_tb(&a);
        outer = (unsigned char *)arena_alloc(&a, 100); /* lives across the scopes */
        assert_non_null(outer);
        fill_pattern(outer, 100, 999);
        for (i = 0; i < WARMUP + MEASURED; i++) {
            arena_mark m = arena_save(&a);
            if (i == WARMUP) {
                calls = tb.calls;
                frees = tb.frees;
                retained = arena_retained(&a);
            }
            shapes[s](&a);
            check_batch(&a);
            arena_rewind(&a, m);
            assert_int_equal(arena_size(&a), 100);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(tb.frees, frees);
        assert_int_equal(arena_retained(&a), retained);
        assert_true(has_pattern(outer, 100, 999));
        release_tb(&a);
    }
}

/* Batches that store a value, then one in a scope, then a larger value:
 * the first batch's chunks (the scope's included) are the ones every batch
 * uses, so no later batch makes a backing call, however long the run (past
 * the point where the retention policy gives back what recent batches did
 * not use). */
static void test_steady_scope_then_a_larger_value(void **state)
{
    static const size_t shapes[][3] = {
        /* before the scope, in the scope, after it */
        {100, 70 * KIB, 100 * KIB},       {100, 100 * KIB, 150 * KIB},
        {50 * KIB, 40 * KIB, 70 * KIB},   {50 * KIB, 60 * KIB, 100 * KIB},
        {50 * KIB, 100 * KIB, 200 * KIB}, {100, 300 * KIB, 1 * MIB},
    };
    size_t s;
    (void)state;

    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        arena a;
        size_t calls = 0, frees = 0, retained = 0;
        int i;

        init_tb(&a);
        for (i = 0; i < ARENA_RETAIN_BATCHES + WARMUP + MEASURED; i++) {
            arena_mark m;
            if (i == WARMUP) {
                calls = tb.calls;
                frees = tb.frees;
                retained = arena_retained(&a);
            }
            store(&a, shapes[s][0], 0);
            m = arena_save(&a);
            store(&a, shapes[s][1], 0);
            arena_rewind(&a, m);
            nvals--;
            store(&a, shapes[s][2], 0);
            check_batch(&a);
            arena_reset(&a);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(tb.frees, frees);
        assert_int_equal(arena_retained(&a), retained);
        release_tb(&a);
    }
}

/* A caller's buffer as first chunk: it stays chunk 0, and the chunks from
 * the backing reach the same steady state. */
static void test_steady_with_a_callers_buffer(void **state)
{
    static _Alignas(64) unsigned char buf[8192];
    arena_allocator al = tb_allocator(&tb);
    arena a;
    size_t calls = 0, frees = 0;
    int i;
    (void)state;

    arena_init_buffer(&a, buf, sizeof buf, &al);
    for (i = 0; i < WARMUP + MEASURED; i++) {
        unsigned char *first;
        if (i == WARMUP) {
            calls = tb.calls;
            frees = tb.frees;
        }
        first = (unsigned char *)arena_alloc(&a, 16);
        assert_ptr_equal(first, buf + TEST_LEAD);
        shape_big(&a);
        check_batch(&a);
        arena_reset(&a);
    }
    assert_int_equal(tb.calls, calls);
    assert_int_equal(tb.frees, frees);
    arena_reset_to(&a, 0);
    assert_int_equal(arena_retained(&a), sizeof buf);
    assert_int_equal(tb.live, 0);
    arena_release(&a);
}

/* ---- Page faults ----------------------------------------------------------------------- */

#ifdef TEST_PAGE_FAULTS
static long minor_faults(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_minflt;
}

/* With the C library's heap behind the arena (the default), a batch that
 * holds a 4 MiB value takes no page fault once warm: the value's chunk is
 * kept, not given back to the system and faulted in again (with glibc's
 * malloc, about a hundred faults a batch).  Counted over FAULT_BATCHES
 * batches, so that a stray fault elsewhere cannot make the test fail, while
 * a refault of the value's pages would.  Under ASan and Valgrind the tools'
 * own shadow memory faults too (memcheck: about 280 a batch): there the
 * bound is half the value's pages a batch. */
static void test_no_page_faults_when_warm(void **state)
{
    arena a;
    long before, faults;
    bool tools = TEST_ASAN || test_on_valgrind();
    arena_guard_stats g0, g;
    (void)state;

    arena_init(&a, 0);
    run(&a, shape_big, end_reset, WARMUP + 1);
    arena_guard_get_stats(&g0);
    before = minor_faults();
    run(&a, shape_big, end_reset, FAULT_BATCHES);
    faults = minor_faults() - before;
    arena_guard_get_stats(&g);
    print_message("minor faults over %d warm batches: %ld\n", FAULT_BATCHES, faults);
    if (g.batches != g0.batches) /* guarded batches (ARENA_GUARD) map fresh pages */
        assert_true(faults >= (long)(g.batches - g0.batches));
    else if (tools)
        assert_true(faults < FAULT_BATCHES * (long)(4 * MIB / TB_PAGE) / 2);
    else
        assert_true(faults < FAULT_BATCHES);
    arena_release(&a);
}
#endif

/* ---- Retention ------------------------------------------------------------------------- */

/* White-box: a chunk's capacity as arena_retained() counts it (without the
 * overhead of an allocated chunk where values are instrumented: a header in
 * the checked build, and two granules of guard after an oversized one). */
static size_t capacity(const arena *a, const struct arena__chunk *c)
{
    size_t chunk_size = arena__cold(a)->chunk_size ? arena__cold(a)->chunk_size : CHUNK, cap;
    if (c->base == a->buf || !(TEST_ASAN || ARENA_CHECKED || test_on_valgrind()))
        return c->cap;
    cap = c->cap - TEST_LEAD;
    return cap > chunk_size ? cap - 16 : cap;
}

/* White-box: the demand of the batch in progress as arena_reset() counts
 * it: the capacity of the chunks it used, those of rewound scopes included.
 * Each chunk's slot (src/cold.h) holds the last batch that used it. */
static size_t demand_now(const arena *a)
{
    const struct arena__cold *c = arena__cold(a);
    const struct arena__slot *s =
        a->chunks == &a->first ? &c->first_slot
                               : (const struct arena__slot *)(const void *)(a->chunks + c->ncap);
    size_t d = 0;
    uint32_t i;
    for (i = 0; i < a->nchunks; i++)
        if (s[i].last == c->batch)
            d += capacity(a, &a->chunks[i]);
    return d;
}

/* The demands of the batches an arena ended, the latest
 * ARENA_RETAIN_BATCHES of them. */
typedef struct demand_log {
    size_t demand[ARENA_RETAIN_BATCHES];
    size_t batches;
} demand_log;

/* The largest demand of the last ARENA_RETAIN_BATCHES batches. */
static size_t recent_peak(const demand_log *log)
{
    size_t i, most = 0;
    for (i = 0; i < ARENA_RETAIN_BATCHES && i < log->batches; i++)
        most = log->demand[i] > most ? log->demand[i] : most;
    return most;
}

/* Ends the batch: notes its demand, resets (arena_reset_to(a, limit), or
 * arena_reset() for SIZE_MAX), and checks the bound: what the reset kept is
 * at most twice the largest demand of the last ARENA_RETAIN_BATCHES batches,
 * and at most `limit`; the backing holds it. */
static void end_checked(arena *a, demand_log *log, size_t limit)
{
    log->demand[log->batches++ % ARENA_RETAIN_BATCHES] = demand_now(a);
    if (limit == SIZE_MAX)
        arena_reset(a);
    else
        arena_reset_to(a, limit);
    assert_int_equal(arena_size(a), 0);
    assert_true(arena_retained(a) <= 2 * recent_peak(log));
    assert_true(arena_retained(a) <= limit);
    assert_true(tb.live_bytes >= arena_retained(a));
    assert_true(arena_check(a));
}

/* One spike, then smaller batches: the spike's chunks are kept while it
 * might recur within the promise (ARENA_RECUR_BATCHES - 1 smaller batches)
 * and given back by the reset ending the ARENA_RETAIN_BATCHES-th; then the
 * steady state resumes.  Past ARENA_RECUR_BATCHES, one smaller batch in 16
 * is of the normal shape, the others are empty. */
static void spike_then_smaller(shape_fn *normal, shape_fn *spike, end_fn *end)
{
    arena a;
    size_t normal_retained, spiked, calls, frees;
    int k;

    init_tb(&a);
    run(&a, normal, end, WARMUP + 1);
    normal_retained = arena_retained(&a);
    run(&a, spike, end, 1);
    spiked = arena_retained(&a);
    assert_true(spiked >= normal_retained + 16 * MIB);
    for (k = 1; k <= ARENA_RETAIN_BATCHES; k++) {
        if (k < ARENA_RECUR_BATCHES || k % 16 == 0) {
            run(&a, normal, end, 1);
        } else { /* an empty batch (Valgrind runs this suite too) */
            end(&a);
            assert_true(arena_check(&a));
        }
        if (k < ARENA_RECUR_BATCHES)
            assert_true(arena_retained(&a) >= spiked - 2 * CHUNK);
    }
    assert_true(arena_retained(&a) <= normal_retained);
    assert_true(tb.live_bytes >= arena_retained(&a));
    assert_true(tb.live_bytes <= arena_retained(&a) + 64 * KIB); /* chunks went back */
    calls = tb.calls;
    frees = tb.frees;
    run(&a, normal, end, MEASURED / 2);
    assert_int_equal(tb.calls, calls);
    assert_int_equal(tb.frees, frees);
    release_tb(&a);
}

/* 17 MB in small values (checked as they go: the values outnumber vals[]). */
static void shape_spike_small(arena *a)
{
    int i;
    for (i = 0; i < 14; i++) {
        shape_small(a);
        check_batch(a);
    }
}

/* One 17 MB value. */
static void shape_spike_value(arena *a)
{
    unsigned char *p = (unsigned char *)arena_alloc(a, 17 * MIB);
    assert_non_null(p);
    memset(p, 1, 17 * MIB);
    keep(a, p, (arena_ref){0, 0, 0}, 17 * MIB);
    shape_small(a);
}

static void test_spike_given_back(void **state)
{
    (void)state;
    spike_then_smaller(shape_small, shape_spike_small, end_reset);
    spike_then_smaller(shape_small, shape_spike_value, end_reset);
    spike_then_smaller(shape_big, shape_spike_small, end_reset);
    spike_then_smaller(shape_big, shape_spike_value, end_reset);
    spike_then_smaller(shape_mixed, shape_spike_value, end_reset_to_max);
    spike_then_smaller(shape_big, shape_spike_small, end_reset_to_64m);
}

/* A spike that comes back within ARENA_RECUR_BATCHES batches is part of
 * the workload: its chunks stay, and nothing is allocated once warm. */
static void test_recurring_spike_is_kept(void **state)
{
    arena a;
    size_t calls = 0, frees = 0;
    int round, k;
    (void)state;

    init_tb(&a);
    for (round = 0; round < 6; round++) {
        if (round == 2) {
            calls = tb.calls;
            frees = tb.frees;
        }
        run(&a, shape_spike_value, end_reset, 1);
        for (k = 1; k < ARENA_RECUR_BATCHES; k++)
            run(&a, shape_big, end_reset, 1);
    }
    assert_int_equal(tb.calls, calls);
    assert_int_equal(tb.frees, frees);
    release_tb(&a);
}

/* A batch of `bytes` in values of 200 to 1000 bytes, with one oversized
 * value of `big` bytes (none when 0) in the middle. */
static void shape_sized(arena *a, size_t bytes, size_t big)
{
    size_t done = 0;
    unsigned i;
    for (i = 0; done < bytes; i++) {
        size_t n = 200 + (i * 7919u) % 801;
        unsigned char *p = (unsigned char *)arena_alloc(a, n);
        assert_non_null(p);
        done += n;
        if (big && done >= bytes / 2) {
            assert_non_null(arena_alloc(a, big));
            big = 0;
        }
    }
}

/* Batches of changing sizes: after every reset the arena retains at most
 * twice the largest demand of the last ARENA_RETAIN_BATCHES (end_checked():
 * a batch's demand is what its chunks hold, its size and their tails), and
 * never more than it holds. */
static void test_retention_within_twice_the_recent_peak(void **state)
{
    enum { BATCHES = 3 * ARENA_RETAIN_BATCHES };
    static demand_log log;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    arena a;
    size_t most = 0;
    int i;
    (void)state;

    init_tb(&a);
    for (i = 0; i < BATCHES; i++) {
        size_t bytes, big = 0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* mostly steady phases of one size, with spikes and lulls */
        bytes = (size_t)(50 * KIB + (x >> 20) % (i % 40 < 20 ? 600 * KIB : 3 * MIB));
        if ((x & 7) == 0)
            big = (size_t)(100 * KIB + (x >> 40) % (3 * MIB));
        shape_sized(&a, bytes, big);
        assert_true(demand_now(&a) >= arena_size(&a));
        end_checked(&a, &log, SIZE_MAX);
        if (arena_retained(&a) > most)
            most = arena_retained(&a);
    }
    print_message("largest retained %zu KiB over %d batches\n", most / KIB, BATCHES);
    release_tb(&a);
}

/* Scopes of growing oversized values, with no reset: each new chunk
 * replaces the outgrown spare, so what is retained follows the latest
 * value instead of adding up all of them. */
static void test_rewinds_do_not_hoard_outgrown_chunks(void **state)
{
    arena a;
    size_t n;
    (void)state;

    init_tb(&a);
    assert_non_null(arena_alloc(&a, 10));
    for (n = 100 * KIB; n <= 4 * MIB; n += 100 * KIB) {
        arena_mark m = arena_save(&a);
        assert_non_null(arena_alloc(&a, n));
        assert_non_null(arena_alloc(&a, 10));
        arena_rewind(&a, m);
        assert_true(arena_retained(&a) <= 2 * n + 2 * CHUNK);
        assert_true(arena_check(&a));
    }
    release_tb(&a);
}

/* arena_reset_to's limit bounds what a reset keeps, whatever the policy
 * would keep; arena_trim gives spares back at once, oversized ones too. */
static void test_limits_still_bound(void **state)
{
    arena a;
    arena_mark m;
    size_t limit;
    (void)state;

    init_tb(&a);
    for (limit = 0; limit <= 8 * MIB; limit += 2 * MIB + 12345) {
        run(&a, shape_big, end_reset, 1);
        shape_big(&a);
        check_batch(&a);
        arena_reset_to(&a, limit);
        assert_true(arena_retained(&a) <= limit);
        assert_true(arena_check(&a));
    }
    release_tb(&a);

    init_tb(&a);
    assert_non_null(arena_alloc(&a, 100));
    m = arena_save(&a);
    shape_big(&a);
    nvals = 0;
    arena_rewind(&a, m);
    assert_true(arena_retained(&a) > 4 * MIB);
    arena_trim(&a, 2 * MIB);
    assert_true(arena_retained(&a) <= 2 * MIB);
    arena_trim(&a, 0);
    assert_int_equal(arena_retained(&a), CHUNK); /* the chunk in use stays */
    assert_int_equal(arena_size(&a), 100);
    assert_int_equal(tb.live, 1);
    release_tb(&a);
}

/* A checked build tells a ref of an expired oversized value from the value
 * that reuses its chunk, at the same offset, in the next batch. */
static void test_stale_ref_into_a_reused_chunk(void **state)
{
    static unsigned char src[3 * ARENA_DEFAULT_CHUNK];
    arena a;
    arena_ref r1, r2;
    (void)state;

    record_errors();
    init_tb(&a);
    assert_non_null(arena_alloc(&a, 10));
    r1 = arena_ref_copy(&a, src, sizeof src, 0);
    assert_false(arena_ref_empty(r1));
    arena_reset(&a);
    assert_non_null(arena_alloc(&a, 10));
    r2 = arena_ref_copy(&a, src, sizeof src, 0);
    assert_false(arena_ref_empty(r2));
    assert_int_equal(test_ref_chunk(r1), test_ref_chunk(r2));
    assert_int_equal(r1.off, r2.off);
    assert_non_null(arena_ref_ptr(&a, r2));
    assert_int_equal(recorded_errors.count, 0);
    if (ARENA_CHECKED) {
        assert_null(arena_ref_ptr(&a, r1));
        assert_int_equal(recorded_errors.count, 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_STALE_REF);
    }
    release_tb(&a);
    restore_errors();
}

/* ---- The policy's promises, as properties ----------------------------------------------- */

#define SMALL_CHUNK ((size_t)4096)

/* The steady part of a workload (4 KiB chunks): values of 40 to 900 bytes,
 * and a scope with one of 5000. */
static void small_batch(arena *a)
{
    arena_mark m;
    unsigned i;
    for (i = 0; i < 12; i++)
        store(a, 40 + (i * 331u) % 861, i);
    m = arena_save(a);
    store(a, 700, 1);
    store(a, 5000, 2);
    check_values(a);
    arena_rewind(a, m);
    nvals -= 2;
    for (i = 0; i < 6; i++)
        store(a, 100 + i * 50, i + 3);
    check_batch(a);
}

/* A large batch among the small ones (a big document among requests), in
 * one of two shapes: about 200 KB, values past the chunk size in a scope too. */
static void large_batch(arena *a, unsigned shape)
{
    arena_mark m;
    unsigned i;
    for (i = 0; i < 30; i++)
        store(a, 200 + (i * 97u) % 700, i);
    store(a, shape ? 48 * KIB : 20 * KIB, 4);
    m = arena_save(a);
    store(a, shape ? 30 * KIB : 70 * KIB, 5);
    store(a, 9000, 0);
    check_values(a);
    arena_rewind(a, m);
    nvals -= 2;
    store(a, shape ? 100 * KIB : 90 * KIB, 1);
    for (i = 0; i < 30; i++)
        store(a, 300 + i * 20, i + 2);
    check_batch(a);
}

static void init_small(arena *a)
{
    arena_allocator al = tb_allocator(&tb);
    arena_init_with(a, SMALL_CHUNK, &al);
}

/* A large batch every `period` batches, the others small, from the first
 * batch: `batches` of them, each ended by end_checked(). */
static void recurring(arena *a, demand_log *log, unsigned period, unsigned from, unsigned batches,
                      size_t limit)
{
    unsigned i;
    for (i = from; i < from + batches; i++) {
        if (i % period == 0)
            large_batch(a, 0);
        else
            small_batch(a);
        end_checked(a, log, limit);
    }
}

/* A large batch that recurs at least once every ARENA_RECUR_BATCHES batches
 * keeps its chunks: once warm (two periods), no backing call, whatever the
 * period, through more than ARENA_RETAIN_BATCHES batches (past the point
 * where the policy would give back a chunk that none of them used). */
static void test_a_shape_recurring_within_the_promise_stays(void **state)
{
    static demand_log log;
    unsigned period;
    (void)state;

    for (period = 1; period <= ARENA_RECUR_BATCHES; period++) {
        arena a;
        size_t calls, frees;

        memset(&log, 0, sizeof log);
        init_small(&a);
        recurring(&a, &log, period, 0, 2 * period + 2, SIZE_MAX);
        calls = tb.calls;
        frees = tb.frees;
        recurring(&a, &log, period, 2 * period + 2, ARENA_RETAIN_BATCHES + 2 * period, SIZE_MAX);
        if (tb.calls != calls || tb.frees != frees)
            fail_msg("period %u: %zu backing calls and %zu frees once warm", period,
                     tb.calls - calls, tb.frees - frees);
        release_tb(&a);
    }
}

/* A large batch that stops recurring: its chunks stay while it might still
 * recur within the promise (ARENA_RECUR_BATCHES - 1 small batches), and go
 * back within ARENA_RETAIN_BATCHES small batches (end_checked()'s bound
 * makes them: the last ARENA_RETAIN_BATCHES batches then are all small, and
 * the large batch demands more than twice a small one); then the small
 * batches run without a backing call. */
static void test_a_shape_that_stops_recurring_goes_back(void **state)
{
    static const unsigned periods[] = {1, 2, 7, 20, ARENA_RECUR_BATCHES};
    static demand_log log;
    size_t p;
    (void)state;

    for (p = 0; p < sizeof periods / sizeof periods[0]; p++) {
        arena a;
        size_t with_large, calls, frees;
        unsigned k;

        memset(&log, 0, sizeof log);
        init_small(&a);
        recurring(&a, &log, periods[p], 0, 3 * periods[p] + 1, SIZE_MAX);
        with_large = arena_retained(&a);
        for (k = 1; k <= ARENA_RETAIN_BATCHES; k++) {
            small_batch(&a);
            end_checked(&a, &log, SIZE_MAX);
            if (k < ARENA_RECUR_BATCHES)
                assert_true(arena_retained(&a) >= with_large);
        }
        assert_true(2 * arena_retained(&a) < with_large);
        assert_true(tb.live_bytes <= arena_retained(&a) + 4 * KIB); /* chunks went back */
        calls = tb.calls;
        frees = tb.frees;
        for (k = 0; k < MEASURED; k++) {
            small_batch(&a);
            end_checked(&a, &log, SIZE_MAX);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(tb.frees, frees);
        release_tb(&a);
    }
}

/* Shapes that alternate, in cycles of up to five batches: each keeps what it
 * needs, and once warm no batch makes a backing call (through more than
 * ARENA_RETAIN_BATCHES batches). */
static void test_alternating_shapes_keep_what_each_needs(void **state)
{
    static const char *const cycles[] = {"sl", "ll", "lm", "slm", "ssllm", "mssss", "lsmsm"};
    static demand_log log;
    size_t c;
    (void)state;

    for (c = 0; c < sizeof cycles / sizeof cycles[0]; c++) {
        size_t len = strlen(cycles[c]), calls = 0, frees = 0, i;
        arena a;

        memset(&log, 0, sizeof log);
        init_small(&a);
        for (i = 0; i < 2 * len + 2 + ARENA_RETAIN_BATCHES + 2 * len; i++) {
            char shape = cycles[c][i % len];
            if (i == 2 * len + 2) {
                calls = tb.calls;
                frees = tb.frees;
            }
            if (shape == 's')
                small_batch(&a);
            else
                large_batch(&a, shape == 'm');
            end_checked(&a, &log, SIZE_MAX);
        }
        if (tb.calls != calls || tb.frees != frees)
            fail_msg("cycle %s: %zu backing calls and %zu frees once warm", cycles[c],
                     tb.calls - calls, tb.frees - frees);
        release_tb(&a);
    }
}

/* arena_reset_to: the limit bounds every reset, beside the policy's bound;
 * one above what the workload keeps changes nothing (no backing call once
 * warm); below it, the chunks that fit stay. */
static void test_retain_limits_with_the_policy(void **state)
{
    static const size_t limits[] = {0,         4 * KIB,   10 * KIB,    50 * KIB,
                                    150 * KIB, 400 * KIB, SIZE_MAX / 2};
    static demand_log log;
    size_t l;
    (void)state;

    for (l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        arena a;
        size_t calls, frees;

        memset(&log, 0, sizeof log);
        init_small(&a);
        recurring(&a, &log, 10, 0, 30, limits[l]);
        calls = tb.calls;
        frees = tb.frees;
        recurring(&a, &log, 10, 30, ARENA_RETAIN_BATCHES + 30, limits[l]);
        if (limits[l] >= 400 * KIB) {
            assert_int_equal(tb.calls, calls);
            assert_int_equal(tb.frees, frees);
        }
        if (limits[l] == 0)
            assert_int_equal(tb.live, 0);
        release_tb(&a);
    }
}

/* ---- Failure atomicity on the new paths ------------------------------------------------- */

/* A script over several batches that takes spares, replaces outgrown ones,
 * trims and rewinds (4 KiB chunks, to keep it quick).  Every store that
 * fails must leave the arena as it was.  Returns the backing calls made. */
static size_t script(size_t fail_at, size_t fail_from, size_t *failures)
{
    static const size_t sizes[] = {100,     300,      12 * KIB, 40,          5 * KIB, 9 * KIB,
                                   4 * KIB, 25 * KIB, 40,       4 * KIB + 1, 12 * KIB};
    arena_allocator al = tb_allocator(&tb);
    arena a;
    size_t calls;
    unsigned batch, i;

    tb.fail_at = fail_at;
    tb.fail_from = fail_from;
    arena_init_with(&a, 4 * KIB, &al);
    for (batch = 0; batch < 6; batch++) {
        arena_mark m = arena_save(&a);
        for (i = 0; i < 40; i++) {
            size_t n = sizes[(i + batch * 3) % (sizeof sizes / sizeof sizes[0])] + batch * 256;
            size_t size = arena_size(&a), retained = arena_retained(&a), failed = tb.failed;
            unsigned char *p = (unsigned char *)arena_alloc(&a, n);
            if (!p) {
                assert_true(tb.failed > failed);
                assert_int_equal(arena_size(&a), size);
                assert_int_equal(arena_retained(&a), retained);
                assert_true(arena_check(&a));
                (*failures)++;
                continue;
            }
            keep(&a, p, (arena_ref){0, 0, 0}, n);
            if (i == 20 && batch % 2) {
                arena_rewind(&a, m);
                nvals = 0;
            }
        }
        check_batch(&a);
        if (batch == 3)
            arena_reset_to(&a, 20 * KIB);
        else
            arena_reset(&a);
        if (batch == 4)
            arena_trim(&a, 0);
        assert_true(arena_check(&a));
    }
    calls = tb.calls;
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    return calls;
}

static void test_failure_atomicity(void **state)
{
    size_t total, n, failures = 0;
    (void)state;

    total = script(0, 0, &failures);
    assert_int_equal(failures, 0);
    assert_true(total > 10);
    for (n = 1; n <= 2 * total; n++) {
        script(n, 0, &failures);
        script(0, n, &failures);
    }
    assert_true(failures >= total);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_small_values),
        cmocka_unit_test(test_steady_values_above_the_chunk_size),
        cmocka_unit_test(test_steady_mixed),
        cmocka_unit_test(test_steady_scopes),
        cmocka_unit_test(test_steady_scope_then_a_larger_value),
        cmocka_unit_test(test_steady_with_a_callers_buffer),
#ifdef TEST_PAGE_FAULTS
        cmocka_unit_test(test_no_page_faults_when_warm),
#endif
        cmocka_unit_test(test_spike_given_back),
        cmocka_unit_test(test_recurring_spike_is_kept),
        cmocka_unit_test(test_retention_within_twice_the_recent_peak),
        cmocka_unit_test(test_rewinds_do_not_hoard_outgrown_chunks),
        cmocka_unit_test(test_limits_still_bound),
        cmocka_unit_test(test_stale_ref_into_a_reused_chunk),
        cmocka_unit_test(test_a_shape_recurring_within_the_promise_stays),
        cmocka_unit_test(test_a_shape_that_stops_recurring_goes_back),
        cmocka_unit_test(test_alternating_shapes_keep_what_each_needs),
        cmocka_unit_test(test_retain_limits_with_the_policy),
        cmocka_unit_test(test_failure_atomicity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
