/* SPDX-License-Identifier: MIT */
/* The arena cache: acquire, recycle, bounds, misuse, out-of-memory, threads. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "support.h"
/* White-box: the arena's bookkeeping. */
#include "cold.h"

#include <arena/report.h>
#include <arena/thread.h>

static void test_acquire_recycle_reuses_the_arena_and_its_chunks(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 4, 5000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    (void)state;
    assert_non_null(c);

    arena *a = arena_cache_acquire(c);
    assert_non_null(a);
    assert_int_equal(arena_size(a), 0);
    char *p = (char *)arena_calloc(a, 1, 512);
    assert_non_null(p);
    assert_int_equal(arena_retained(a), 1000);
    arena_cache_recycle(c, a);
    assert_int_equal(arena_cache_count(c), 0); /* in this thread's slot */

    size_t calls = tb.calls;
    arena *b = arena_cache_acquire(c);
    assert_ptr_equal(b, a);
    assert_int_equal(arena_size(b), 0);
    assert_int_equal(arena_retained(b), 1000);
    assert_ptr_equal(arena_alloc(b, 512), p); /* same chunk, same place */
    assert_int_equal(tb.calls, calls);        /* nothing allocated */
    assert_true(arena_check(b));
    arena_cache_recycle(c, b);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_bounds_on_cached_arenas_and_retained_bytes(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 2, 3000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    arena *a[5];
    (void)state;
    assert_non_null(c);
    for (int i = 0; i < 5; i++) {
        a[i] = arena_cache_acquire(c);
        assert_non_null(a[i]);
        for (int j = 0; j < 10; j++) /* 10 chunks of 1000 */
            assert_non_null(arena_alloc(a[i], 600));
        assert_non_null(arena_alloc(a[i], 70000)); /* and an oversized one */
    }
    for (int i = 0; i < 5; i++)
        arena_cache_recycle(c, a[i]);
    /* One waits in the slot, two in the store, two were released. */
    assert_int_equal(arena_cache_count(c), 2);
    for (int i = 0; i < 3; i++) {
        a[i] = arena_cache_acquire(c);
        assert_int_equal(arena_retained(a[i]), 3000);
        assert_int_equal(arena_size(a[i]), 0);
    }
    assert_int_equal(arena_cache_count(c), 0);
    /* Live: the cache, 5 nodes, 3 of them with 3 chunks each (each index
     * back inline or kept): everything of the two released arenas but their
     * structs went back. */
    size_t live_nodes = tb.live;
    size_t calls = tb.calls;
    arena *fresh = arena_cache_acquire(c);
    assert_non_null(fresh);
    assert_int_equal(arena_retained(fresh), 0);
    assert_int_equal(tb.live, live_nodes); /* a released struct, no chunk */
    assert_int_equal(tb.calls, calls);
    arena_cache_recycle(c, fresh);
    for (int i = 0; i < 3; i++)
        arena_cache_recycle(c, a[i]);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_defaults_and_unbounded_retention(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    (void)state;
    assert_non_null(c);
    arena *a = arena_cache_acquire(c);
    for (int i = 0; i < 20; i++)
        assert_non_null(arena_alloc(a, ARENA_DEFAULT_CHUNK));
    bool guarded = arena_guarded(a);
    arena_cache_recycle(c, a);
    a = arena_cache_acquire(c);
    /* no fixed bound: what the request used (a guarded one's: quarantined) */
    assert_int_equal(arena_retained(a), guarded ? 0 : 20 * (size_t)ARENA_DEFAULT_CHUNK);
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);

    arena_cache_config cfg = {4096, 1, SIZE_MAX, NULL};
    c = arena_cache_create(&cfg);
    a = arena_cache_acquire(c);
    for (int i = 0; i < 50; i++)
        assert_non_null(arena_alloc(a, 4000));
    guarded = arena_guarded(a);
    arena_cache_recycle(c, a);
    a = arena_cache_acquire(c);
    assert_int_equal(arena_retained(a), guarded ? 0 : 50 * 4096);
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);
    arena_cache_destroy(NULL);
}

/* One request of the workload: small values around one of `big` bytes. */
static void request(arena *a, size_t big)
{
    for (int i = 0; i < 2000; i++) {
        char *p = (char *)arena_alloc(a, 16 + (size_t)(i * 37) % 400);
        assert_non_null(p);
        p[0] = 1;
    }
    char *p = (char *)arena_alloc(a, big);
    assert_non_null(p);
    memset(p, 2, big);
}

/* Through the cache, with the default configuration: small requests, and a
 * large one every 20th (a big document among them) or every
 * ARENA_RECUR_BATCHES-th.  Once warm, no backing call, through more than
 * ARENA_RETAIN_BATCHES recycles; once the large ones stop, their chunk goes
 * back within ARENA_RETAIN_BATCHES recycles, and the small ones go on
 * without a backing call. */
static void test_a_recurring_request_keeps_its_chunks(void **state)
{
    static const int periods[] = {20, ARENA_RECUR_BATCHES};
    const size_t mib = (size_t)1 << 20;
    (void)state;

    for (size_t p = 0; p < sizeof periods / sizeof periods[0]; p++) {
        test_backing tb;
        arena_allocator al = tb_allocator(&tb);
        arena_cache_config cfg = {0, 0, 0, &al};
        arena_cache *c = arena_cache_create(&cfg);
        int period = periods[p], warm = 2 * period + 2;
        size_t calls = 0, frees = 0;
        assert_non_null(c);

        for (int i = 0; i < warm + ARENA_RETAIN_BATCHES + 2 * period; i++) {
            if (i == warm) {
                calls = tb.calls;
                frees = tb.frees;
            }
            arena *a = arena_cache_acquire(c);
            assert_non_null(a);
            request(a, i % period == 0 ? 2 * mib : 20000);
            arena_cache_recycle(c, a);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(tb.frees, frees);

        for (int i = 1; i <= ARENA_RETAIN_BATCHES; i++) {
            arena *a = arena_cache_acquire(c);
            if (i < ARENA_RECUR_BATCHES)
                assert_true(arena_retained(a) > 2 * mib);
            request(a, 20000);
            arena_cache_recycle(c, a);
        }
        arena *after = arena_cache_acquire(c);
        assert_true(arena_retained(after) < 2 * mib);
        arena_cache_recycle(c, after);
        assert_true(tb.live_bytes < 2 * mib);
        calls = tb.calls;
        frees = tb.frees;
        for (int i = 0; i < 20; i++) {
            arena *a = arena_cache_acquire(c);
            request(a, 20000);
            arena_cache_recycle(c, a);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(tb.frees, frees);
        arena_cache_destroy(c);
        assert_int_equal(tb.live, 0);
    }
}

/* With the default configuration a cache's arenas adapt to the requests:
 * requests of one shape, a 17 MB value included, make no backing call once
 * warm (where a fixed 1 MiB bound trimmed and refetched it every time); a
 * one-off spike is given back within ARENA_RETAIN_BATCHES smaller requests;
 * an explicit max_retained still bounds every recycle. */
static void test_default_retention_adapts(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {0, 0, 0, &al};
    arena_cache *c = arena_cache_create(&cfg);
    const size_t mib = (size_t)1 << 20;
    (void)state;
    assert_non_null(c);

    size_t calls = 0, frees = 0, normal = 0;
    for (int i = 0; i < 12; i++) {
        if (i == 2) {
            calls = tb.calls;
            frees = tb.frees;
        }
        arena *a = arena_cache_acquire(c);
        assert_non_null(a);
        request(a, 17 * mib);
        arena_cache_recycle(c, a);
    }
    assert_int_equal(tb.calls, calls);
    assert_int_equal(tb.frees, frees);

    /* Smaller requests: the 17 MB chunk stays while it might recur within
     * the promise (ARENA_RECUR_BATCHES - 1 of them), and is freed by the
     * recycle ending the ARENA_RETAIN_BATCHES-th. */
    for (int i = 1; i <= ARENA_RETAIN_BATCHES; i++) {
        arena *a = arena_cache_acquire(c);
        if (i <= ARENA_RECUR_BATCHES)
            assert_true(arena_retained(a) > 17 * mib);
        request(a, 100000);
        normal = arena_size(a);
        arena_cache_recycle(c, a);
    }
    arena *after = arena_cache_acquire(c);
    assert_true(arena_retained(after) <= 2 * normal + 2 * ARENA_DEFAULT_CHUNK);
    arena_cache_recycle(c, after);
    assert_true(tb.live_bytes < 2 * mib);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);

    /* An explicit bound is a hard one. */
    arena_cache_config capped = {0, 0, mib, &al};
    c = arena_cache_create(&capped);
    assert_non_null(c);
    for (int i = 0; i < 3; i++) {
        arena *a = arena_cache_acquire(c);
        request(a, 4 * mib);
        arena_cache_recycle(c, a);
        a = arena_cache_acquire(c);
        assert_true(arena_retained(a) <= mib);
        arena_cache_recycle(c, a);
    }
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_misuse_is_reported_and_harmless(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    arena_cache *other = arena_cache_create(NULL);
    (void)state;
    record_errors();
    arena *a = arena_cache_acquire(c);
    arena *b = arena_cache_acquire(c);
    assert_non_null(arena_alloc(a, 100));

    arena_cache_recycle(c, NULL);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_NULL_FREE);

    arena_cache_recycle(other, a);
    assert_int_equal(recorded_errors.count, 2);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    arena_cache_recycle(NULL, a);
    assert_int_equal(recorded_errors.count, 3);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    assert_int_equal(arena_size(a), 100); /* untouched */
    assert_int_equal(arena_cache_count(other), 0);

    arena_cache_recycle(c, a); /* into the slot */
    arena_cache_recycle(c, a);
    assert_int_equal(recorded_errors.count, 4);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    arena_cache_recycle(c, b); /* into the store */
    arena_cache_recycle(c, b);
    assert_int_equal(recorded_errors.count, 5);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    arena_cache_recycle(other, b); /* in c's store, still c's */
    assert_int_equal(recorded_errors.count, 6);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    assert_int_equal(arena_cache_count(c), 1);
    assert_int_equal(arena_cache_count(other), 0);

    arena_set_error_handler(NULL, NULL);
    arena_cache_destroy(c);
    arena_cache_destroy(other);
}

static void test_out_of_memory(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 4, 5000, &al};
    (void)state;

    tb.fail_at = 1; /* the cache itself */
    assert_null(arena_cache_create(&cfg));
    assert_int_equal(tb.live, 0);

    tb.fail_at = 0;
    arena_cache *c = arena_cache_create(&cfg);
    assert_non_null(c);
    tb.fail_at = tb.calls + 1; /* the arena struct */
    assert_null(arena_cache_acquire(c));
    assert_int_equal(tb.live, 1);

    arena *a = arena_cache_acquire(c);
    assert_non_null(a);
    tb.fail_at = tb.calls + 1; /* its first chunk */
    assert_null(arena_alloc(a, 10));
    assert_int_equal(arena_retained(a), 0);
    assert_non_null(arena_alloc(a, 10));
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_destroy_frees_acquired_and_parked_arenas(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 4, 5000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    (void)state;
    arena *a = arena_cache_acquire(c);
    arena *b = arena_cache_acquire(c);
    arena *d = arena_cache_acquire(c);
    assert_non_null(arena_alloc(a, 100));
    assert_non_null(arena_alloc(b, 100));
    assert_non_null(arena_alloc(d, 5000));
    arena_cache_recycle(c, a); /* slot */
    arena_cache_recycle(c, b); /* store */
    arena_cache_destroy(c);    /* d is still acquired */
    assert_int_equal(tb.live, 0);

    /* A cache created after it starts with an empty slot in this thread. */
    c = arena_cache_create(&cfg);
    a = arena_cache_acquire(c);
    assert_non_null(a);
    assert_int_equal(arena_retained(a), 0);
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_two_caches_on_one_thread(void **state)
{
    arena_cache *c1 = arena_cache_create(NULL);
    arena_cache *c2 = arena_cache_create(NULL);
    (void)state;
    arena *a1 = arena_cache_acquire(c1);
    arena *a2 = arena_cache_acquire(c2);
    arena_cache_recycle(c1, a1); /* slot: c1's */
    arena_cache_recycle(c2, a2); /* slot: c2's; a1 back to c1's store */
    assert_int_equal(arena_cache_count(c1), 1);
    assert_int_equal(arena_cache_count(c2), 0);
    assert_ptr_equal(arena_cache_acquire(c2), a2);
    assert_ptr_equal(arena_cache_acquire(c1), a1);
    assert_int_equal(arena_cache_count(c1), 0);
    arena_cache_recycle(c1, a1);
    arena_cache_recycle(c2, a2);
    arena_cache_destroy(c1); /* a1 waits in this thread's slot */
    a1 = arena_cache_acquire(c2);
    assert_ptr_equal(a1, a2);
    arena_cache_recycle(c2, a1);
    arena_cache_destroy(c2);
}

/* ---- What a request sets dies with it ------------------------------------------------ *
 * Every setting a request makes on its arena (name, limit, limit callback,
 * budget, guard, registration) is the cache's again when the next request
 * gets the arena: from the slot, the store, or a released struct. */

/* A limit callback's record: refusals told, and the last one's cause. */
struct refusals {
    int count;
    arena_limit_cause cause;
};

static struct refusals refusals_seen; /* the requests' own callback */

static void count_refusal(const arena_limit_event *e, void *ctx)
{
    struct refusals *r = (struct refusals *)ctx;
    r->count++;
    r->cause = e->cause;
}

/* The cache's settings for each arena it hands out: what a test expects. */
struct arena_defaults {
    const char *name;
    size_t limit;
    struct refusals *told; /* the cache's callback's record, or NULL: none */
    bool listed;           /* registered under the cache */
};

static arena_budget *other_budget;

/* Sets everything a request can set on its arena, and stores a value. */
static void dirty(arena *a)
{
    arena_set_name(a, "upload (big)");
    arena_on_limit(a, count_refusal, &refusals_seen);
    arena_set_budget(a, other_budget);
    assert_true(arena_set_guard(a, true));
    arena_unregister(a);
    assert_true(arena_register(a)); /* on its own, not under the cache */
    assert_non_null(arena_alloc(a, 100));
    arena_set_limit(a, 4096);
    assert_null(arena_alloc(a, 8192)); /* over its 4 KiB */
}

/* `a`, just acquired from `c` (backed by `tb`), has the cache's settings. */
static void assert_defaults(arena_cache *c, arena *a, test_backing *tb,
                            const struct arena_defaults *d)
{
    static char report[1 << 14];
    char entry[64];
    arena_stats s;
    arena_cache_stats cs;
    int seen = refusals_seen.count, told = d->told ? d->told->count : 0;

    assert_int_equal(arena_size(a), 0);
    /* White-box: marked as the cache's, so that its next recycle compares
     * nothing more (src/cold.h). */
    assert_int_equal(arena__cold(a)->set.changed, 0);
    if (d->name)
        assert_string_equal(arena_name(a), d->name);
    else
        assert_null(arena_name(a));
    assert_int_equal(arena_limit(a), d->limit);
    /* The budget: the cache's, the other one is charged nothing. */
    assert_non_null(arena_alloc(a, 8192));
    assert_int_equal(arena_budget_used(other_budget), 0);
    arena_get_stats(a, &s);
    arena_cache_get_stats(c, &cs);
    assert_true(s.held > 0);
    assert_true(cs.held >= s.held);
    /* Not guarded (the process samples nothing). */
    assert_false(arena_guarded(a));
    /* The callback: the backing (or the arena's limit) refuses, and only
     * the cache's callback is told. */
    tb->fail_at = tb->calls + 1;
    assert_null(arena_alloc(a, 3 * ARENA_DEFAULT_CHUNK));
    tb->fail_at = 0;
    assert_int_equal(refusals_seen.count, seen);
    if (d->told)
        assert_int_equal(d->told->count, told + 1);
    /* In the report under the cache when it is registered, else not at all. */
    (void)arena_report(report, sizeof report, ARENA_REPORT_JSON);
    if (!d->listed) {
        assert_null(strstr(report, "\"kind\": \"arena\""));
    } else {
        if (d->name)
            snprintf(entry, sizeof entry, "\"kind\": \"arena\", \"name\": \"%s\"", d->name);
        else
            snprintf(entry, sizeof entry, "\"kind\": \"arena\", \"name\": null");
        assert_non_null(strstr(report, "\"arenas_registered\": [\n    {"));
        assert_non_null(strstr(report, entry));
        assert_null(strstr(report, "upload (big)"));
    }
}

static test_backing tb_settings;

/* The request: "upload (big)" capped at 4 KiB; the next request on
 * its arena stores 8 KiB. */
static void test_the_next_request_does_not_inherit_a_name_or_a_cap(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    arena *a, *b;
    (void)state;
    assert_non_null(c);
    a = arena_cache_acquire(c);
    assert_non_null(a);
    arena_set_name(a, "upload (big)");
    arena_set_limit(a, 4096);
    assert_non_null(arena_alloc(a, 1000));
    assert_null(arena_alloc(a, 8192));
    arena_cache_recycle(c, a);
    b = arena_cache_acquire(c);
    assert_ptr_equal(b, a); /* the same arena, from this thread's slot */
    assert_null(arena_name(b));
    assert_int_equal(arena_limit(b), SIZE_MAX);
    assert_non_null(arena_alloc(b, 8192));
    arena_cache_recycle(c, b);
    arena_cache_destroy(c);
}

/* Every setting, on arenas that come back through the slot, the store and a
 * released struct. */
static void test_recycle_forgets_every_setting(void **state)
{
    arena_allocator al = tb_allocator(&tb_settings);
    arena_cache_config cfg = {0, 1, 0, &al}; /* one in the store, the next released */
    struct arena_defaults none = {NULL, SIZE_MAX, NULL, false};
    arena_cache *c = arena_cache_create(&cfg);
    arena *a[3];
    int i;
    (void)state;

    assert_non_null(c);
    arena_guard_sample(0);
    other_budget = arena_budget_create(SIZE_MAX, "other");
    assert_non_null(other_budget);
    for (i = 0; i < 3; i++) {
        a[i] = arena_cache_acquire(c);
        assert_non_null(a[i]);
        dirty(a[i]);
    }
    for (i = 0; i < 3; i++)
        arena_cache_recycle(c, a[i]); /* slot, store, released */
    assert_int_equal(arena_budget_used(other_budget), 0);
    for (i = 0; i < 3; i++) {
        a[i] = arena_cache_acquire(c);
        assert_non_null(a[i]);
        assert_defaults(c, a[i], &tb_settings, &none);
    }
    for (i = 0; i < 3; i++)
        arena_cache_recycle(c, a[i]);
    arena_cache_destroy(c);
    arena_budget_destroy(other_budget);
    assert_int_equal(tb_settings.live, 0);
}

/* Each setting alone: the recycle notices any one of them.  Then the cache
 * is registered, and renames its arenas, after its arena was made: the
 * arena's next recycle registers it under the cache, and renames it. */
static void test_recycle_forgets_each_setting_alone(void **state)
{
    arena_allocator al = tb_allocator(&tb_settings);
    arena_cache_config cfg = {0, 1, 0, &al};
    struct arena_defaults none = {NULL, SIZE_MAX, NULL, false};
    struct arena_defaults listed = {NULL, SIZE_MAX, NULL, true};
    arena_cache *c = arena_cache_create(&cfg);
    arena *a, *b;
    int k;
    (void)state;

    assert_non_null(c);
    arena_guard_sample(0);
    other_budget = arena_budget_create(SIZE_MAX, "other");
    assert_non_null(other_budget);
    for (k = 0; k < 6; k++) {
        a = arena_cache_acquire(c);
        assert_non_null(a);
        assert_non_null(arena_alloc(a, 100));
        switch (k) {
        case 0: arena_set_name(a, "upload (big)"); break;
        case 1: arena_set_limit(a, 4096); break;
        case 2: arena_on_limit(a, count_refusal, &refusals_seen); break;
        case 3: arena_set_budget(a, other_budget); break;
        case 4: assert_true(arena_set_guard(a, true)); break;
        default: assert_true(arena_register(a)); break;
        }
        arena_cache_recycle(c, a);
        b = arena_cache_acquire(c);
        assert_ptr_equal(b, a); /* from the slot */
        assert_defaults(c, b, &tb_settings, &none);
        arena_cache_recycle(c, b);
    }
    assert_true(arena_cache_register(c));
    a = arena_cache_acquire(c);
    arena_cache_recycle(c, a);
    b = arena_cache_acquire(c);
    assert_ptr_equal(b, a);
    assert_defaults(c, b, &tb_settings, &listed);
    arena_cache_recycle(c, b);
    /* The cache's settings changed after the arena was made: it takes them
     * at its next recycle. */
    arena_cache_set_arena_name(c, "renamed");
    listed.name = "renamed";
    a = arena_cache_acquire(c);
    arena_cache_recycle(c, a);
    b = arena_cache_acquire(c);
    assert_ptr_equal(b, a);
    assert_defaults(c, b, &tb_settings, &listed);
    arena_cache_recycle(c, b);
    arena_cache_destroy(c);
    arena_budget_destroy(other_budget);
    assert_int_equal(tb_settings.live, 0);
}

static test_backing tb_defaults;

/* The cache's own settings for its arenas: every arena it makes has them,
 * and has them again after a request changed each; the cache's limit is
 * told to the cache's callback; a request that raised its arena's limit and
 * kept more than the cache's arena limit leaves an arena that stores again. */
static void test_the_caches_settings_for_its_arenas(void **state)
{
    arena_allocator al = tb_allocator(&tb_defaults);
    arena_cache_config cfg = {0, 1, 0, &al};
    static struct refusals told;
    struct arena_defaults mine = {"request", 64 << 10, &told, true};
    arena_cache *c = arena_cache_create(&cfg);
    arena *a[3];
    arena_stats s;
    int i;
    (void)state;

    assert_non_null(c);
    arena_guard_sample(0);
    other_budget = arena_budget_create(SIZE_MAX, "other");
    assert_non_null(other_budget);
    arena_cache_set_name(c, "requests");
    arena_cache_set_arena_name(c, "request");
    arena_cache_set_arena_limit(c, 64 << 10);
    arena_cache_on_limit(c, count_refusal, &told);
    assert_true(arena_cache_register(c));
    for (i = 0; i < 3; i++) { /* fresh */
        a[i] = arena_cache_acquire(c);
        assert_non_null(a[i]);
        assert_defaults(c, a[i], &tb_defaults, &mine);
    }
    for (i = 0; i < 3; i++)
        dirty(a[i]);
    for (i = 0; i < 3; i++)
        arena_cache_recycle(c, a[i]); /* slot, store, released */
    for (i = 0; i < 3; i++) {
        a[i] = arena_cache_acquire(c);
        assert_non_null(a[i]);
        assert_defaults(c, a[i], &tb_defaults, &mine);
    }

    /* A request lifts its arena's limit; the cache's limit refuses, and the
     * cache's callback is told (ARENA_LIMIT_BUDGET). */
    arena_set_limit(a[0], SIZE_MAX);
    arena_cache_set_limit(c, 0);
    told.count = 0;
    assert_null(arena_alloc(a[0], 60 << 10));
    assert_int_equal(told.count, 1);
    assert_int_equal(told.cause, ARENA_LIMIT_BUDGET);
    arena_cache_set_limit(c, SIZE_MAX);

    /* It stores 1 MiB, and ends. */
    for (i = 0; i < 16; i++)
        assert_non_null(arena_alloc(a[0], 60 << 10));
    arena_cache_recycle(c, a[0]);
    a[0] = arena_cache_acquire(c);
    arena_get_stats(a[0], &s);
    assert_true(s.held <= 64 << 10);
    assert_int_equal(arena_limit(a[0]), 64 << 10);
    assert_non_null(arena_alloc(a[0], 32 << 10));

    for (i = 0; i < 3; i++)
        arena_cache_recycle(c, a[i]);
    arena_cache_destroy(c);
    arena_budget_destroy(other_budget);
    assert_int_equal(tb_defaults.live, 0);
}

/* ---- Double recycle after the cache let the arena go ------------------------------ *
 * Beyond max_arenas a recycled arena is released.  A second recycle of it must
 * still be reported, and do nothing: however the arena left the cache. */

/* What the cache holds, as seen from outside: compared before and after a
 * misuse, which must change none of it. */
struct cache_view {
    size_t stored, calls, live, live_bytes, frees;
};

static struct cache_view view(arena_cache *c, const test_backing *tb)
{
    struct cache_view v = {arena_cache_count(c), tb->calls, tb->live, tb->live_bytes, tb->frees};
    return v;
}

static void assert_same_view(struct cache_view a, struct cache_view b)
{
    assert_int_equal(a.stored, b.stored);
    assert_int_equal(a.calls, b.calls);
    assert_int_equal(a.live, b.live);
    assert_int_equal(a.live_bytes, b.live_bytes);
    assert_int_equal(a.frees, b.frees);
}

/* Recycles `a` (already recycled, and let go by the cache) into its own cache
 * and into `other`: each is reported once, and nothing changes. */
static void assert_recycles_are_harmless(arena_cache *c, arena_cache *other, arena *a,
                                         const test_backing *tb)
{
    struct cache_view before = view(c, tb);
    int errors = recorded_errors.count;
    arena_cache_recycle(c, a);
    assert_int_equal(recorded_errors.count, errors + 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    arena_cache_recycle(c, a);
    assert_int_equal(recorded_errors.count, errors + 2);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    arena_cache_recycle(other, a);
    assert_int_equal(recorded_errors.count, errors + 3);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    assert_same_view(view(c, tb), before);
}

static test_backing tb_full;

static void test_double_recycle_after_the_store_was_full(void **state)
{
    arena_allocator al = tb_allocator(&tb_full);
    arena_cache_config cfg = {1000, 1, 5000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    arena_cache *other = arena_cache_create(NULL);
    (void)state;
    record_errors();
    arena *slotted = arena_cache_acquire(c);
    arena *stored = arena_cache_acquire(c);
    arena *a = arena_cache_acquire(c);
    assert_non_null(slotted);
    assert_non_null(stored);
    assert_non_null(a);
    size_t live = tb_full.live;
    assert_non_null(arena_alloc(a, 600));
    assert_non_null(arena_alloc(a, 3000)); /* an oversized chunk too */
    arena_cache_recycle(c, slotted);       /* this thread's slot */
    arena_cache_recycle(c, stored);        /* the store: now full */
    arena_cache_recycle(c, a);             /* released: its chunks go back */
    assert_int_equal(recorded_errors.count, 0);
    assert_int_equal(arena_cache_count(c), 1);
    assert_int_equal(tb_full.live, live);

    assert_recycles_are_harmless(c, other, a, &tb_full);

    /* The three come back (the released one without chunks), with no
     * allocation: the cache kept the released arena's struct. */
    size_t calls = tb_full.calls;
    arena *got[3];
    for (int i = 0; i < 3; i++)
        got[i] = arena_cache_acquire(c);
    assert_ptr_equal(got[0], slotted);
    assert_ptr_equal(got[1], stored);
    assert_ptr_equal(got[2], a);
    assert_int_equal(arena_retained(a), 0);
    assert_int_equal(arena_size(a), 0);
    assert_int_equal(tb_full.calls, calls);
    assert_non_null(arena_strdup(a, "in use again"));
    assert_true(arena_check(a));
    for (int i = 0; i < 3; i++)
        arena_cache_recycle(c, got[i]);
    assert_int_equal(recorded_errors.count, 3);
    arena_set_error_handler(NULL, NULL);
    arena_cache_destroy(c);
    arena_cache_destroy(other);
    assert_int_equal(tb_full.live, 0);
}

/* A thread recycles an arena into its slot and exits while the store is
 * full: the cache releases it. */
struct exit_with_full_store {
    arena_cache *c;
    arena *a;
};

static void *recycle_and_exit(void *arg)
{
    struct exit_with_full_store *x = (struct exit_with_full_store *)arg;
    arena_cache_recycle(x->c, x->a);
    return NULL;
}

static test_backing tb_exit;

static void test_double_recycle_after_a_thread_exit_with_the_store_full(void **state)
{
    arena_allocator al = tb_allocator(&tb_exit);
    arena_cache_config cfg = {1000, 1, 5000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    arena_cache *other = arena_cache_create(NULL);
    pthread_t t;
    (void)state;
    record_errors();
    arena *slotted = arena_cache_acquire(c);
    arena *stored = arena_cache_acquire(c);
    struct exit_with_full_store x = {c, arena_cache_acquire(c)};
    assert_non_null(slotted);
    assert_non_null(stored);
    assert_non_null(x.a);
    size_t live = tb_exit.live;
    assert_non_null(arena_alloc(x.a, 600));
    arena_cache_recycle(c, slotted);
    arena_cache_recycle(c, stored); /* the store is full */
    assert_int_equal(pthread_create(&t, NULL, recycle_and_exit, &x), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(tb_exit.live, live); /* released at the thread's exit */
    assert_int_equal(arena_cache_count(c), 1);
    assert_int_equal(recorded_errors.count, 0);

    assert_recycles_are_harmless(c, other, x.a, &tb_exit);

    arena_set_error_handler(NULL, NULL);
    arena_cache_destroy(c);
    arena_cache_destroy(other);
    assert_int_equal(tb_exit.live, 0);
}

static test_backing tb_evict;

/* An arena waits in this thread's slot while its store is full; a recycle
 * into another cache pushes it out, and its cache releases it. */
static void test_double_recycle_after_eviction_by_another_cache(void **state)
{
    arena_allocator al = tb_allocator(&tb_evict);
    arena_cache_config cfg = {1000, 1, 5000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    arena_cache *c2 = arena_cache_create(NULL);
    (void)state;
    record_errors();
    arena *a = arena_cache_acquire(c);
    arena *stored = arena_cache_acquire(c);
    arena *a2 = arena_cache_acquire(c2);
    assert_non_null(a);
    assert_non_null(stored);
    assert_non_null(a2);
    size_t live = tb_evict.live;
    assert_non_null(arena_alloc(a, 600));
    arena_cache_recycle(c, a);      /* the slot */
    arena_cache_recycle(c, stored); /* the store: full */
    arena_cache_recycle(c2, a2);    /* takes the slot: a is released */
    assert_int_equal(tb_evict.live, live);
    assert_int_equal(arena_cache_count(c), 1);
    assert_int_equal(recorded_errors.count, 0);

    assert_recycles_are_harmless(c, c2, a, &tb_evict);
    assert_int_equal(arena_cache_count(c2), 0); /* a2 still waits in the slot */
    assert_ptr_equal(arena_cache_acquire(c2), a2);
    arena_cache_recycle(c2, a2);

    arena_set_error_handler(NULL, NULL);
    arena_cache_destroy(c);
    arena_cache_destroy(c2);
    assert_int_equal(tb_evict.live, 0);
}

static test_backing tb_spares;

/* Released arenas keep their structs for later acquires: however many rounds
 * of 5 requests at once, the cache holds 5 structs and allocates no more. */
static void test_released_structs_are_reused_not_accumulated(void **state)
{
    arena_allocator al = tb_allocator(&tb_spares);
    arena_cache_config cfg = {1000, 1, 1000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    arena *first[5], *got[5];
    size_t live = 0, structs_calls = 0;
    (void)state;
    assert_non_null(c);
    for (int round = 0; round < 50; round++) {
        size_t calls = tb_spares.calls;
        for (int i = 0; i < 5; i++) {
            got[i] = arena_cache_acquire(c);
            assert_non_null(got[i]);
            assert_int_equal(arena_size(got[i]), 0);
        }
        if (round == 0) {
            memcpy(first, got, sizeof first);
            structs_calls = tb_spares.calls - calls;
            assert_int_equal(structs_calls, 5);
        } else {
            /* The slot's and the store's (with their chunk) first, then the
             * three spares, all without an allocation. */
            assert_int_equal(tb_spares.calls, calls);
            assert_int_equal(arena_retained(got[0]), 1000);
            assert_int_equal(arena_retained(got[1]), 1000);
            for (int i = 2; i < 5; i++)
                assert_int_equal(arena_retained(got[i]), 0);
            for (int i = 0; i < 5; i++) {
                bool known = false;
                for (int k = 0; k < 5; k++)
                    known |= got[i] == first[k];
                assert_true(known);
            }
        }
        for (int i = 0; i < 5; i++)
            assert_non_null(arena_alloc(got[i], 600));
        for (int i = 4; i >= 0; i--)
            arena_cache_recycle(c, got[i]);
        if (round == 0)
            live = tb_spares.live;
        assert_int_equal(tb_spares.live, live); /* 5 structs, 2 chunks, the cache */
    }
    /* One more at once than ever before: exactly one more struct. */
    size_t calls = tb_spares.calls;
    arena *more[6];
    for (int i = 0; i < 6; i++)
        more[i] = arena_cache_acquire(c);
    assert_int_equal(tb_spares.calls, calls + 1);
    assert_int_equal(tb_spares.live, live + 1);
    for (int i = 0; i < 6; i++)
        arena_cache_recycle(c, more[i]);
    arena_cache_destroy(c);
    assert_int_equal(tb_spares.live, 0);
}

/* ---- Threads ------------------------------------------------------------------ */

#define THREADS 4
#define ROUNDS  1000

struct worker {
    arena_cache *c;
    pthread_barrier_t *barrier;
    unsigned id;
    int errors;
};

/* Many requests: each fills its arena with the thread's pattern and checks it
 * before recycling; an arena shared by two threads at once would show.  Every
 * other request holds a second arena meanwhile, which comes from and goes
 * back to the shared store (the slot holds one). */
static void *requests(void *arg)
{
    struct worker *w = (struct worker *)arg;
    for (unsigned r = 0; r < ROUNDS; r++) {
        arena *extra = r % 2 ? arena_cache_acquire(w->c) : NULL;
        if (extra && !arena_strdup(extra, "held meanwhile"))
            w->errors++;
        arena *a = arena_cache_acquire(w->c);
        if (!a || arena_size(a) != 0) {
            w->errors++;
            continue;
        }
        unsigned n = 1 + (r * 7 + w->id) % 40;
        uint32_t *v[40];
        for (unsigned i = 0; i < n; i++) {
            v[i] = ARENA_ALLOC_ARRAY(a, uint32_t, 16 * (i + 1));
            if (!v[i]) {
                w->errors++;
                n = i;
                break;
            }
            for (unsigned k = 0; k < 16 * (i + 1); k++)
                v[i][k] = w->id << 24 | r << 8 | i;
        }
        for (unsigned i = 0; i < n; i++)
            for (unsigned k = 0; k < 16 * (i + 1); k++)
                w->errors += v[i][k] != (w->id << 24 | r << 8 | i);
        arena_cache_recycle(w->c, a);
        if (extra)
            arena_cache_recycle(w->c, extra);
    }
    return NULL;
}

/* test_backing counts with plain loads and stores, as a backing written for
 * one thread would: the cache must never call it from two threads at once
 * (TSan sees any overlap). */
static test_backing tb_threads;

static void test_many_threads_acquire_and_recycle(void **state)
{
    arena_allocator al = tb_allocator(&tb_threads);
    arena_cache_config cfg = {4096, 3, 8 * 4096, &al};
    arena_cache *c = arena_cache_create(&cfg);
    pthread_t t[THREADS];
    struct worker w[THREADS];
    (void)state;
    assert_non_null(c);
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){c, NULL, i + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, requests, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_true(arena_cache_count(c) <= 3);
    assert_true(tb_threads.frees > 0); /* chunks came and went on every thread */
    arena_cache_destroy(c);
    assert_int_equal(tb_threads.live, 0);
}

/* Each thread holds an arena while all do, then recycles it and exits: the
 * arena in its slot must reach the store. */
static void *hold_then_exit(void *arg)
{
    struct worker *w = (struct worker *)arg;
    arena *a = arena_cache_acquire(w->c);
    w->errors += a == NULL || arena_alloc(a, 100) == NULL;
    pthread_barrier_wait(w->barrier);
    arena_cache_recycle(w->c, a);
    return NULL;
}

static void test_thread_exit_returns_the_slot(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    pthread_barrier_t barrier;
    pthread_t t[THREADS];
    struct worker w[THREADS];
    (void)state;
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){c, &barrier, i + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, hold_then_exit, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(arena_cache_count(c), THREADS);
    pthread_barrier_destroy(&barrier);
    arena_cache_destroy(c);
}

/* An arena acquired on one thread may be recycled on another. */
static void *recycle_elsewhere(void *arg)
{
    struct worker *w = (struct worker *)arg;
    arena_cache_recycle(w->c, (arena *)w->barrier);
    return NULL;
}

static void test_recycle_on_another_thread(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    pthread_t t;
    (void)state;
    arena *a = arena_cache_acquire(c);
    assert_non_null(arena_strdup(a, "request"));
    struct worker w = {c, (pthread_barrier_t *)(void *)a, 0, 0};
    assert_int_equal(pthread_create(&t, NULL, recycle_elsewhere, &w), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(arena_cache_count(c), 1); /* that thread's exit gave it back */
    arena *b = arena_cache_acquire(c);
    assert_ptr_equal(b, a);
    assert_int_equal(arena_size(b), 0);
    arena_cache_recycle(c, b);
    arena_cache_destroy(c);
}

/* A thread parks an arena of a cache that is then destroyed; the thread then
 * works with another cache and exits. */
struct stale {
    arena_cache *a, *b;
    pthread_barrier_t *barrier;
};

static void *park_then_switch(void *arg)
{
    struct stale *st = (struct stale *)arg;
    arena *x = arena_cache_acquire(st->a);
    arena_cache_recycle(st->a, x);
    pthread_barrier_wait(st->barrier); /* parked */
    pthread_barrier_wait(st->barrier); /* st->a destroyed */
    x = arena_cache_acquire(st->b);
    arena_cache_recycle(st->b, x);
    return NULL;
}

static void test_destroyed_cache_in_another_threads_slot(void **state)
{
    pthread_barrier_t barrier;
    struct stale st = {arena_cache_create(NULL), arena_cache_create(NULL), &barrier};
    pthread_t t;
    (void)state;
    pthread_barrier_init(&barrier, NULL, 2);
    assert_int_equal(pthread_create(&t, NULL, park_then_switch, &st), 0);
    pthread_barrier_wait(&barrier);
    arena_cache_destroy(st.a);
    pthread_barrier_wait(&barrier);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(arena_cache_count(st.b), 1); /* returned at the thread's exit */
    pthread_barrier_destroy(&barrier);
    arena_cache_destroy(st.b);
}

/* Producers fill arenas and hand them to consumers, which check and recycle
 * them: acquire and recycle on different threads, all at once. */
#define HANDOFFS 500
#define QUEUE    8

struct payload;

struct handoff {
    arena_cache *c;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct {
        arena *a;
        struct payload *p;
    } q[QUEUE];
    unsigned head, count, producers_left;
    int errors;
};

struct payload {
    uint32_t producer, seq, n;
    uint64_t *words;
};

static void *produce(void *arg)
{
    struct worker *w = (struct worker *)arg;
    struct handoff *h = (struct handoff *)(void *)w->barrier;
    for (uint32_t i = 0; i < HANDOFFS; i++) {
        arena *a = arena_cache_acquire(h->c);
        struct payload *p = a ? ARENA_NEW(a, struct payload) : NULL;
        if (!p) {
            w->errors++;
            if (a)
                arena_cache_recycle(h->c, a);
            continue;
        }
        p->producer = w->id;
        p->seq = i;
        p->n = 1 + i % 300;
        p->words = ARENA_ALLOC_ARRAY(a, uint64_t, p->n);
        for (uint32_t k = 0; p->words && k < p->n; k++)
            p->words[k] = (uint64_t)w->id << 32 | i;
        pthread_mutex_lock(&h->lock);
        while (h->count == QUEUE)
            pthread_cond_wait(&h->changed, &h->lock);
        h->q[(h->head + h->count) % QUEUE].a = a;
        h->q[(h->head + h->count++) % QUEUE].p = p;
        pthread_cond_broadcast(&h->changed);
        pthread_mutex_unlock(&h->lock);
    }
    pthread_mutex_lock(&h->lock);
    h->producers_left--;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static void *consume(void *arg)
{
    struct handoff *h = (struct handoff *)arg;
    for (;;) {
        pthread_mutex_lock(&h->lock);
        while (h->count == 0 && h->producers_left)
            pthread_cond_wait(&h->changed, &h->lock);
        if (h->count == 0) {
            pthread_mutex_unlock(&h->lock);
            return NULL;
        }
        arena *a = h->q[h->head].a;
        struct payload *p = h->q[h->head].p;
        h->head = (h->head + 1) % QUEUE;
        h->count--;
        pthread_cond_broadcast(&h->changed);
        pthread_mutex_unlock(&h->lock);

        int bad = !p->words;
        for (uint32_t k = 0; !bad && k < p->n; k++)
            bad = p->words[k] != ((uint64_t)p->producer << 32 | p->seq);
        arena_cache_recycle(h->c, a);
        if (bad) {
            pthread_mutex_lock(&h->lock);
            h->errors++;
            pthread_mutex_unlock(&h->lock);
        }
    }
}

static test_backing tb_handoff;

static void test_handoff_between_threads(void **state)
{
    struct handoff h;
    pthread_t prod[2], cons[2];
    struct worker w[2];
    arena_allocator al = tb_allocator(&tb_handoff);
    (void)state;
    memset(&h, 0, sizeof h);
    arena_cache_config cfg = {8192, 4, 4 * 8192, &al};
    h.c = arena_cache_create(&cfg);
    assert_non_null(h.c);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.changed, NULL);
    h.producers_left = 2;
    for (unsigned i = 0; i < 2; i++) {
        w[i] = (struct worker){h.c, (pthread_barrier_t *)(void *)&h, i + 1, 0};
        assert_int_equal(pthread_create(&prod[i], NULL, produce, &w[i]), 0);
        assert_int_equal(pthread_create(&cons[i], NULL, consume, &h), 0);
    }
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(prod[i], NULL), 0);
        assert_int_equal(pthread_join(cons[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(h.errors, 0);
    assert_int_equal(h.count, 0);
    assert_true(arena_cache_count(h.c) <= 4);
    pthread_cond_destroy(&h.changed);
    pthread_mutex_destroy(&h.lock);
    arena_cache_destroy(h.c);
    assert_int_equal(tb_handoff.live, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_recycle_reuses_the_arena_and_its_chunks),
        cmocka_unit_test(test_bounds_on_cached_arenas_and_retained_bytes),
        cmocka_unit_test(test_defaults_and_unbounded_retention),
        cmocka_unit_test(test_default_retention_adapts),
        cmocka_unit_test(test_a_recurring_request_keeps_its_chunks),
        cmocka_unit_test(test_misuse_is_reported_and_harmless),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_destroy_frees_acquired_and_parked_arenas),
        cmocka_unit_test(test_two_caches_on_one_thread),
        cmocka_unit_test(test_the_next_request_does_not_inherit_a_name_or_a_cap),
        cmocka_unit_test(test_recycle_forgets_every_setting),
        cmocka_unit_test(test_recycle_forgets_each_setting_alone),
        cmocka_unit_test(test_the_caches_settings_for_its_arenas),
        cmocka_unit_test(test_double_recycle_after_the_store_was_full),
        cmocka_unit_test(test_double_recycle_after_a_thread_exit_with_the_store_full),
        cmocka_unit_test(test_double_recycle_after_eviction_by_another_cache),
        cmocka_unit_test(test_released_structs_are_reused_not_accumulated),
        cmocka_unit_test(test_many_threads_acquire_and_recycle),
        cmocka_unit_test(test_destroyed_cache_in_another_threads_slot),
        cmocka_unit_test(test_thread_exit_returns_the_slot),
        cmocka_unit_test(test_recycle_on_another_thread),
        cmocka_unit_test(test_handoff_between_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
