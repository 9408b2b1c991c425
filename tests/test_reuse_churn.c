/* SPDX-License-Identifier: MIT */
/*
 * Memory under churn: long random sequences of allocations, frees and
 * growths inside one batch, driven through one reusing family of calls at a
 * time, must keep what the arena holds in proportion to what is live, as a
 * malloc does.
 *
 * Sequences.  Sizes: uniform 1..4096; log-uniform (an octave 2^k..2^(k+1)-1
 * drawn uniformly, k in 0..11); bimodal (80% 16..64, 20% 2048..4096);
 * heavy-tailed (32/u, u uniform in (0, 1]: Pareto with shape 1, capped at
 * 4096); phases (1..256, then 1024..4096, then back, five phases).
 * Lifetimes: random (a random live value dies), FIFO (the oldest), LIFO (the
 * newest).  About LIVE_TARGET bytes live: a step frees with probability 3/4
 * above it and 1/4 below, so the live set and a LIFO stack breathe.  The
 * churn sequences allocate and free; the growth sequences keep BUILDERS
 * values growing by appends of 16..255 bytes, interleaved, each towards a
 * final size drawn from the distribution, after which it lives and dies as
 * above.  Deterministic: each sequence has its own seed.
 *
 * Families: arena_alloc_reuse + arena_free; arena_realloc (growth, values
 * born with arena_alloc_reuse and freed with arena_free, the reusing way the
 * contract names); arena_hook_lua; arena_hook_alloc/_realloc/_free as yyjson
 * calls them; arena_cur_malloc/_realloc/_free with the arena current.
 *
 * Bounds, on arena_get_stats()'s peak_held over the sequence:
 *   - at most 3x the peak of the live bytes (the sum of the sizes asked) plus
 *     two chunk sizes;
 *   - where glibc's malloc serves the process, at most 1.25x what glibc
 *     holds on the same sequence plus 1 MiB (see glibc_replay()).
 * Instrumented builds (ASan, Valgrind, the checked build) keep a guard after
 * each value and exact sizes, and a guarded batch (ARENA_GUARD) maps a page
 * more per chunk: there the bounds are twice the plain ones, 6x the peak
 * live plus four chunk sizes, and 2.5x glibc plus 2 MiB.
 *
 * arena_hook_free() does nothing by contract (the block dies with the
 * batch), so the yyjson family's live bytes count what it gave there, and
 * glibc's replay of that family does not free either.
 *
 * Every live value carries a pattern of its own, checked before it is freed,
 * after each growth and at checkpoints: an overlap fails at once.  Each
 * family's test prints its table (print_message) and then fails if a case is
 * over a bound.  ARENA_CHURN_STEPS=<n> sets the steps per sequence (default
 * 60000; instrumented builds 30000; under Valgrind 3000).
 */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <arena/hooks.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#  include <malloc.h>
#  include <sys/types.h>
#  include <sys/wait.h>
#  include <unistd.h>
#  define TEST_GLIBC 1
#else
#  define TEST_GLIBC 0
#endif

#define LIVE_TARGET ((size_t)200 << 10)
#define MAX_SIZE    ((size_t)4096)
#define CHUNK       ((size_t)ARENA_DEFAULT_CHUNK)
#define BUILDERS    8
#define RING        ((size_t)1 << 16) /* live values at most: a power of two */
#define CHECK_EVERY 1024              /* steps between checks of every live value */
#define MIB         ((size_t)1 << 20)

typedef enum dist { D_UNIFORM, D_LOG, D_BIMODAL, D_PARETO, D_PHASES, DISTS } dist;
typedef enum life { L_RANDOM, L_FIFO, L_LIFO, LIVES } life;
typedef enum shape { S_CHURN, S_GROWTH, SHAPES } shape;

static const char *const dist_names[DISTS] = {"uniform", "log-uniform", "bimodal", "pareto",
                                              "phases"};
static const char *const life_names[LIVES] = {"random", "FIFO", "LIFO"};
static const char *const shape_names[SHAPES] = {"churn", "growth"};

/* ---- The families ---------------------------------------------------------------- */

typedef struct family {
    const char *name;
    void *(*alloc)(arena *a, size_t n);
    void (*release)(arena *a, void *p, size_t n);
    void *(*grow)(arena *a, void *p, size_t old_size, size_t n);
    bool keeps;   /* its free gives nothing back before the batch ends */
    bool current; /* the arena is made current around the sequence */
} family;

static void *reuse_alloc(arena *a, size_t n) { return arena_alloc_reuse(a, n); }
static void reuse_free(arena *a, void *p, size_t n) { arena_free(a, p, n); }
static void *realloc_grow(arena *a, void *p, size_t old_size, size_t n)
{
    return arena_realloc(a, p, old_size, n);
}

static void *lua_alloc(arena *a, size_t n) { return arena_hook_lua(a, NULL, 5, n); }
static void lua_free(arena *a, void *p, size_t n) { TEST_CHECK(!arena_hook_lua(a, p, n, 0)); }
static void *lua_grow(arena *a, void *p, size_t old_size, size_t n)
{
    return arena_hook_lua(a, p, old_size, n);
}

static void *yy_alloc(arena *a, size_t n) { return arena_hook_alloc(a, n); }
static void yy_free(arena *a, void *p, size_t n)
{
    (void)n;
    arena_hook_free(a, p);
}
static void *yy_grow(arena *a, void *p, size_t old_size, size_t n)
{
    return arena_hook_realloc(a, p, old_size, n);
}

static void *cur_alloc(arena *a, size_t n)
{
    (void)a;
    return arena_cur_malloc(n);
}
static void cur_free(arena *a, void *p, size_t n)
{
    (void)a;
    (void)n;
    arena_cur_free(p);
}
static void *cur_grow(arena *a, void *p, size_t old_size, size_t n)
{
    (void)a;
    (void)old_size;
    return arena_cur_realloc(p, n);
}

static const family fam_reuse = {"alloc_reuse+free", reuse_alloc, reuse_free, NULL, false, false};
static const family fam_realloc = {"arena_realloc", reuse_alloc, reuse_free,
                                   realloc_grow,    false,       false};
static const family fam_lua = {"hook_lua", lua_alloc, lua_free, lua_grow, false, false};
static const family fam_yyjson = {
    "hook_alloc/realloc/free", yy_alloc, yy_free, yy_grow, true, false};
static const family fam_cur = {"arena_cur_*", cur_alloc, cur_free, cur_grow, false, true};

/* ---- Sequences ------------------------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s * 0x2545F4914F6CDD1Dull;
}

static size_t below(rng *r, size_t n) { return (size_t)(rng_next(r) % n); }

static size_t draw_size(rng *r, dist d, size_t step, size_t steps)
{
    size_t k, u;
    switch (d) {
    case D_UNIFORM: return 1 + below(r, MAX_SIZE);
    case D_LOG: k = below(r, 12); return ((size_t)1 << k) + below(r, (size_t)1 << k);
    case D_BIMODAL: return below(r, 5) ? 16 + below(r, 49) : 2048 + below(r, 2049);
    case D_PARETO:
        u = 1 + below(r, (size_t)1 << 24); /* u / 2^24 in (0, 1] */
        return u <= ((size_t)32 << 24) / MAX_SIZE ? MAX_SIZE : ((size_t)32 << 24) / u;
    default: /* D_PHASES */ return step * 5 / steps % 2 ? 1024 + below(r, 3073) : 1 + below(r, 256);
    }
}

typedef struct value {
    unsigned char *p;
    size_t n;     /* its size now */
    size_t final; /* the size its growth stops at */
    uint64_t id;  /* its pattern */
} value;

/* The state of one sequence run through one family.  `a` is NULL for
 * glibc's replay, which neither fills nor checks the values. */
typedef struct run {
    const family *f;
    arena *a;
    dist d;
    life l;
    shape s;
    size_t steps, step;
    rng r;
    uint64_t ids;
    size_t head, count; /* the live values that do not grow, oldest first */
    value builders[BUILDERS];
    size_t live, kept, peak_live; /* bytes; kept: given to a free that keeps */
    size_t glibc_peak;            /* glibc's replay: the most its heap held */
} run;

static value ring[RING];

/* Where a case goes when the library reported a misuse: the handler
 * records it and the faulty call does nothing, so the sequence cannot go
 * on; the case fails, and the table is still written whole. */
static jmp_buf misuse_exit;

static value *ring_at(run *r, size_t i) { return &ring[(r->head + i) & (RING - 1)]; }

static void note_live(run *r)
{
    if (r->live + r->kept > r->peak_live)
        r->peak_live = r->live + r->kept;
}

static void check_value(const run *r, const value *v)
{
    size_t bad;
    if (!r->a)
        return;
    bad = pattern_mismatch(v->p, v->n, v->id);
    if (bad != v->n)
        TEST_FAIL("%s, %s %s %s, step %zu: value %llu (%zu bytes at %p) overwritten at byte %zu",
                  r->f->name, shape_names[r->s], dist_names[r->d], life_names[r->l], r->step,
                  (unsigned long long)v->id, v->n, (void *)v->p, bad);
}

static void check_all(const run *r)
{
    size_t i;
    for (i = 0; i < r->count; i++)
        check_value(r, &ring[(r->head + i) & (RING - 1)]);
    for (i = 0; i < BUILDERS; i++)
        if (r->builders[i].p)
            check_value(r, &r->builders[i]);
}

#if TEST_GLIBC
/* What glibc's heap holds now: its arenas' memory from the system and its
 * mapped blocks. */
static size_t glibc_held(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.arena + m.hblkhd;
}
#endif

/* A new value of n bytes, or a growth of v to n, through the family (or
 * glibc's malloc when r->a is NULL). */
static unsigned char *place(run *r, value *v, size_t n)
{
    unsigned char *p;
    size_t old = v ? v->n : 0;
    if (!r->a)
        p = (unsigned char *)(v ? realloc(v->p, n) : malloc(n));
    else
        p = (unsigned char *)(v ? r->f->grow(r->a, v->p, old, n) : r->f->alloc(r->a, n));
    if (!p && r->a && recorded_errors.count)
        longjmp(misuse_exit, 1);
    if (!p)
        TEST_FAIL("%s: out of memory at step %zu (%zu bytes)", r->f->name, r->step, n);
#if TEST_GLIBC
    if (!r->a) { /* a free never grows the heap: its peak follows a malloc or a realloc */
        size_t held = glibc_held();
        if (held > r->glibc_peak)
            r->glibc_peak = held;
    }
#endif
    if (r->a) {
        TEST_CHECK(is_aligned(p, 8));
        if (v) {
            size_t bad = pattern_mismatch(p, old, v->id);
            if (bad != old)
                TEST_FAIL("%s, step %zu: growth from %zu to %zu bytes lost byte %zu", r->f->name,
                          r->step, old, n, bad);
            memcpy(p + old, pattern_of(v->id, n) + old, n - old);
        }
    }
    return p;
}

static void born(run *r, value *v, size_t n, size_t final)
{
    v->p = place(r, NULL, n);
    v->n = n;
    v->final = final;
    v->id = r->ids++;
    if (r->a)
        fill_pattern(v->p, n, v->id);
    r->live += n;
    note_live(r);
}

static void die(run *r, value *v)
{
    check_value(r, v);
    if (!r->a) {
        if (!r->f->keeps)
            free(v->p);
    } else {
        r->f->release(r->a, v->p, v->n);
    }
    if (r->f->keeps)
        r->kept += v->n;
    r->live -= v->n;
    v->p = NULL;
}

/* Takes the value that dies next out of the live ones, as the lifetime says. */
static value take(run *r)
{
    value v, *at;
    TEST_CHECK(r->count > 0);
    if (r->l == L_FIFO) {
        v = *ring_at(r, 0);
        r->head = (r->head + 1) & (RING - 1);
    } else {
        at = ring_at(r, r->l == L_LIFO ? r->count - 1 : below(&r->r, r->count));
        v = *at;
        *at = *ring_at(r, r->count - 1);
    }
    r->count--;
    return v;
}

static void push(run *r, const value *v)
{
    TEST_CHECK(r->count < RING);
    *ring_at(r, r->count++) = *v;
}

static void grow_step(run *r)
{
    value *b = &r->builders[below(&r->r, BUILDERS)];
    size_t n;
    if (!b->p) {
        size_t final = draw_size(&r->r, r->d, r->step, r->steps);
        born(r, b, final < 64 ? final : 1 + below(&r->r, 64), final);
    } else {
        n = b->n + 16 + below(&r->r, 240);
        n = n < b->final ? n : b->final;
        b->p = place(r, b, n);
        r->live += n - b->n;
        b->n = n;
        note_live(r);
    }
    if (b->n == b->final) {
        push(r, b);
        b->p = NULL;
    }
}

/* A step frees a value or places one.  Deaths balance births about
 * LIVE_TARGET: in a churn a death and a birth move as many bytes (a death
 * with odds 3/4 above the target, 1/4 below); in a growth a step appends
 * 16..255 bytes where a death drops a whole value (1/2 above, 1/32 below). */
static void step(run *r)
{
    bool over = r->live > LIVE_TARGET;
    size_t odds = r->s == S_GROWTH ? (over ? 16 : 1) : (over ? 24 : 8);
    if (r->count > 0 && below(&r->r, 32) < odds) {
        value v = take(r);
        die(r, &v);
    } else if (r->s == S_GROWTH) {
        grow_step(r);
    } else {
        value v;
        size_t n = draw_size(&r->r, r->d, r->step, r->steps);
        born(r, &v, n, n);
        push(r, &v);
    }
}

/* Runs the sequence (d, l, s) of `steps` steps through `f` on `a` (NULL:
 * glibc's malloc), every value freed at the end. */
static void run_sequence(run *r, const family *f, arena *a, dist d, life l, shape s, size_t steps)
{
    size_t i;
    memset(r, 0, sizeof *r);
    r->f = f;
    r->a = a;
    r->d = d;
    r->l = l;
    r->s = s;
    r->steps = steps;
    r->r.s = 0x9E3779B97F4A7C15ull ^ ((uint64_t)(s * DISTS + d) * LIVES + l + 1) * 1000003u;
    r->ids = 1;
    for (r->step = 0; r->step < steps; r->step++) {
        step(r);
        if (a && recorded_errors.count) /* a free reported, which did nothing */
            longjmp(misuse_exit, 1);
        if (r->step % CHECK_EVERY == 0)
            check_all(r);
    }
    check_all(r);
    while (r->count > 0) {
        value v = take(r);
        die(r, &v);
    }
    for (i = 0; i < BUILDERS; i++)
        if (r->builders[i].p)
            die(r, &r->builders[i]);
    TEST_CHECK(r->live == 0);
}

/* ---- glibc's figures ------------------------------------------------------------- */

/* What glibc holds on each sequence (0: not measured), by shape,
 * distribution, lifetime and whether the family's free keeps its block. */
static size_t glibc_figure[SHAPES][DISTS][LIVES][2];
static size_t steps_per_sequence;

static size_t env_steps(void)
{
    const char *s = getenv("ARENA_CHURN_STEPS");
    if (s && *s)
        return (size_t)strtoull(s, NULL, 0);
    if (test_on_valgrind())
        return 3000;
    return TEST_ASAN || ARENA_CHECKED ? 30000 : 60000;
}

#if TEST_GLIBC
/* True when glibc's malloc serves this process (not ASan's, Valgrind's or
 * a preloaded one): an allocation above its per-thread cache's sizes shows
 * in its counters. */
static bool glibc_serves(void)
{
    struct mallinfo2 before, after;
    void *p;
    if (TEST_ASAN || test_on_valgrind())
        return false;
    before = mallinfo2();
    p = malloc(5000);
    after = mallinfo2();
    free(p);
    return p && after.uordblks >= before.uordblks + 5000;
}

/*
 * glibc's figure for a sequence: replayed with malloc, realloc and free in a
 * child process forked before any arena ran, so that every replay starts from
 * the same heap (no free space and no per-thread cache left by another
 * sequence or an arena's chunks).  The figure is the most glibc's heap held
 * (mallinfo2()'s arena + hblkhd, read after every call that can grow it)
 * less what the process had allocated when the replay began (uordblks +
 * hblkhd): the replay's own blocks and the free space it could use.  Exact:
 * the counters are glibc's own, and a free never raises them.
 */
static size_t glibc_replay(dist d, life l, shape s, bool keeps)
{
    static const family glibc = {"glibc", NULL, NULL, NULL, false, false};
    static const family glibc_keeps = {"glibc", NULL, NULL, NULL, true, false};
    int fds[2], status = 0;
    size_t figure = 0;
    pid_t pid;

    TEST_CHECK(pipe(fds) == 0);
    fflush(NULL);
    pid = fork();
    TEST_CHECK(pid >= 0);
    if (pid == 0) {
        static run r;
        struct mallinfo2 m;
        close(fds[0]);
        malloc_trim(0);
        m = mallinfo2();
        run_sequence(&r, keeps ? &glibc_keeps : &glibc, NULL, d, l, s, steps_per_sequence);
        figure = r.glibc_peak - (m.uordblks + m.hblkhd);
        _exit(write(fds[1], &figure, sizeof figure) == (ssize_t)sizeof figure ? 0 : 1);
    }
    close(fds[1]);
    TEST_CHECK(read(fds[0], &figure, sizeof figure) == (ssize_t)sizeof figure);
    close(fds[0]);
    TEST_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    TEST_CHECK(figure > 0);
    return figure;
}
#endif

/* Measures glibc on every sequence first, while the heap is as the process
 * began (see glibc_replay()). */
static int measure_glibc(void **state)
{
    (void)state;
    steps_per_sequence = env_steps();
    memset(glibc_figure, 0, sizeof glibc_figure);
#if TEST_GLIBC
    if (glibc_serves()) {
        int s, d, l, k;
        for (s = 0; s < SHAPES; s++)
            for (d = 0; d < DISTS; d++)
                for (l = 0; l < LIVES; l++)
                    for (k = 0; k < 2; k++)
                        if (s == S_GROWTH || !k)
                            glibc_figure[s][d][l][k] =
                                glibc_replay((dist)d, (life)l, (shape)s, k != 0);
        return 0;
    }
#endif
    print_message("glibc's malloc does not serve this process: the comparison with it is "
                  "left out, the bound on live bytes is checked\n");
    return 0;
}

/* ---- The test -------------------------------------------------------------------- */

static const char *kib(char *buf, size_t n, size_t bytes)
{
    snprintf(buf, n, "%.0f", bytes / 1024.0);
    return buf;
}

/* Runs the sequence through `f` on a fresh arena; false when the library
 * reported a misuse on the way (with the handler that records). */
static bool run_in_arena(run *r, const family *f, dist d, life l, shape s, arena_stats *st,
                         bool *instrumented)
{
    static arena a;
    static arena *prev;
    static volatile bool reported;

    reported = false;
    arena_init(&a, 0);
    if (f->current)
        prev = arena_set_current(&a);
    if (setjmp(misuse_exit))
        reported = true;
    else
        run_sequence(r, f, &a, d, l, s, steps_per_sequence);
    if (f->current)
        arena_set_current(prev);
    *instrumented = !test_packed() || arena_guarded(&a);
    arena_get_stats(&a, st);
    TEST_CHECK(reported || arena_check(&a));
    arena_release(&a);
    return !reported;
}

/* Whether a case of the family's test had the instrumented bounds. */
static bool loose_bounds;

/* One row of the table; false when the case is over a bound. */
static bool one_case(const family *f, shape s, dist d, life l)
{
    static run r;
    arena_stats st;
    size_t g = glibc_figure[s][d][l][f->keeps], bound;
    bool instrumented, ok, ran;
    char b1[32], b2[32], b3[32], b4[32] = "-";
    const char *verdict;

    recorded_errors.count = 0;
    ran = run_in_arena(&r, f, d, l, s, &st, &instrumented);
    loose_bounds |= instrumented;
    /* Twice the plain build's bounds where values carry guards. */
    bound = (instrumented ? 6 : 3) * r.peak_live + (instrumented ? 4 : 2) * CHUNK;
    ok = ran && st.peak_held <= bound;
    if (g) {
        ok = ok && st.peak_held <= (instrumented ? 2.5 : 1.25) * (double)g +
                                       (instrumented ? 2 : 1) * (double)MIB;
        snprintf(b4, sizeof b4, "%.2f", (double)st.peak_held / (double)g);
    }
    verdict = !ran ? "MISUSE" : ok ? "ok" : "OVER";
    print_message("%-6s %-11s %-6s %-23s %9s %9s %6.2f %9s %6s  %s\n", shape_names[s],
                  dist_names[d], life_names[l], f->name, kib(b1, sizeof b1, r.peak_live),
                  kib(b2, sizeof b2, st.peak_held), (double)st.peak_held / (double)r.peak_live,
                  g ? kib(b3, sizeof b3, g) : "-", b4, verdict);
    if (!ran)
        print_message("  step %zu: %s\n", r.step, recorded_errors.message);
    return ok;
}

/* Runs every sequence of `shapes` (a bit per shape) through `f`, prints a
 * row for each, and fails after the table if any is over a bound. */
static void churn(const family *f, unsigned shapes)
{
    size_t over = 0, cases = 0;
    int s, d, l;

    record_errors();
    loose_bounds = false;
    print_message("%-6s %-11s %-6s %-23s %9s %9s %6s %9s %6s  %s\n", "shape", "sizes", "life",
                  "family", "live KiB", "held KiB", "held/l", "glibc KiB", "held/g", "bound");
    for (s = 0; s < SHAPES; s++)
        for (d = 0; shapes & (1u << s) && d < DISTS; d++)
            for (l = 0; l < LIVES; l++, cases++)
                over += !one_case(f, (shape)s, (dist)d, (life)l);
    restore_errors();
    print_message("%s: %zu steps per sequence, %s bounds: %zu of %zu cases over or reported\n",
                  f->name, steps_per_sequence, loose_bounds ? "instrumented or guarded" : "plain",
                  over, cases);
    if (over)
        fail_msg("%s: %zu of %zu churn cases hold more than the bounds allow or were reported "
                 "(see the table)",
                 f->name, over, cases);
}

static void churn_alloc_reuse_free(void **state)
{
    (void)state;
    churn(&fam_reuse, 1u << S_CHURN);
}

static void churn_arena_realloc(void **state)
{
    (void)state;
    churn(&fam_realloc, 1u << S_GROWTH);
}

static void churn_hook_lua(void **state)
{
    (void)state;
    churn(&fam_lua, 1u << S_CHURN | 1u << S_GROWTH);
}

static void churn_hooks_yyjson(void **state)
{
    (void)state;
    churn(&fam_yyjson, 1u << S_GROWTH);
}

static void churn_cur_family(void **state)
{
    (void)state;
    churn(&fam_cur, 1u << S_CHURN | 1u << S_GROWTH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(churn_alloc_reuse_free), cmocka_unit_test(churn_arena_realloc),
        cmocka_unit_test(churn_hook_lua),         cmocka_unit_test(churn_hooks_yyjson),
        cmocka_unit_test(churn_cur_family),
    };
    return cmocka_run_group_tests(tests, measure_glibc, NULL);
}
