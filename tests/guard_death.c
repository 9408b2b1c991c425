/* SPDX-License-Identifier: MIT */
/*
 * Death tests of guarded batches (arena/guard.h): each case stores a value
 * in a guarded batch, ends the batch one way, then reads the value through
 * a stale pointer, ref or hook block.  It must die of the fault, after the
 * reporter named the arena, the ending and the batches since (the patterns
 * are in tests/CMakeLists.txt).  A case that survives its read exits 0,
 * which expect_abort.cmake fails.
 *
 * Use: guard_death ENDING VIA
 *   ENDING: reset, reset_to, rewind, trim, release, recycle, scratch, shared,
 *           overflow (a write past a chunk's end: VIA is ignored),
 *           left (a read after the range left the quarantine: VIA ptr),
 *           reused (a read long after the batch, whose range left the
 *           quarantine and was mapped again for a later guarded batch of
 *           another arena, quarantined now: VIA is ignored)
 *   VIA:    ptr, ref, hook (arena_cur_malloc() of the current arena)
 */
#include <stdio.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/guard.h>
#include <arena/hooks.h>
#include <arena/thread.h>

static const char name[] = "guard-death";

/* How the value is stored and read back. */
struct value {
    const char *via;
    char *p;
    arena_ref r;
};

static void store(arena *a, struct value *v)
{
    static const char data[64] = "a value of a guarded batch";
    if (strcmp(v->via, "ref") == 0) {
        v->r = arena_ref_copy(a, data, sizeof data, 0);
    } else if (strcmp(v->via, "hook") == 0) {
        arena *prev = arena_set_current(a);
        v->p = (char *)arena_cur_malloc(sizeof data);
        if (v->p)
            memcpy(v->p, data, sizeof data);
        arena_set_current(prev);
    } else {
        v->p = (char *)arena_copy(a, data, sizeof data, 0);
    }
}

/* Reads the value after its batch ended: the fault, or survival. */
static int use(const arena *a, const struct value *v)
{
    const volatile char *p = v->p;
    if (strcmp(v->via, "ref") == 0)
        p = (const volatile char *)arena_ref_ptr(a, v->r);
    fprintf(stderr, "guard_death: reading %p after the batch ended\n", (const void *)p);
    fflush(stderr);
    if (p && p[0] == 'a')
        fprintf(stderr, "guard_death: read the value: not guarded\n");
    return 0;
}

/* The ending on an arena of its own, guarded. */
static int own_arena(const char *ending, struct value *v)
{
    static arena a;
    arena_mark m;

    arena_init(&a, 0);
    arena_set_name(&a, name);
    if (!arena_set_guard(&a, true))
        return fprintf(stderr, "guard_death: arena_set_guard failed\n"), 2;
    if (strcmp(ending, "rewind") == 0) {
        /* The mark mid-chunk: the value lies pages past it. */
        if (!arena_alloc(&a, 16))
            return 2;
        m = arena_save(&a);
        if (!arena_alloc(&a, 8192))
            return 2;
        store(&a, v);
        arena_rewind(&a, m);
        return use(&a, v);
    }
    store(&a, v);
    if (strcmp(ending, "reset") == 0) {
        arena_reset(&a);
    } else if (strcmp(ending, "reset_to") == 0) {
        arena_reset_to(&a, 0);
    } else if (strcmp(ending, "left") == 0) {
        /* Out of the quarantine, unmapped: what the batch was is gone. */
        arena_release(&a);
        arena_guard_set_quarantine(0);
    } else if (strcmp(ending, "trim") == 0) {
        /* Nothing of a guarded batch is a spare: its reset expired it. */
        arena_reset(&a);
        arena_trim(&a, 0);
    } else {
        arena_release(&a);
    }
    return use(&a, v);
}

static int recycled(struct value *v)
{
    arena_cache *c = arena_cache_create(NULL);
    arena *a = c ? arena_cache_acquire(c) : NULL;
    if (!a)
        return 2;
    arena_set_name(a, name);
    if (!arena_set_guard(a, true))
        return 2;
    store(a, v);
    arena_cache_recycle(c, a);
    return use(a, v);
}

/* Scratch arenas are the library's: sampling guards them. */
static int scratch(struct value *v)
{
    arena_scope s;
    arena_guard_sample(1);
    s = arena_scratch_begin(NULL, 0);
    if (!s.arena)
        return 2;
    arena_set_name(s.arena, name);
    store(s.arena, v);
    arena_scope_end(&s);
    return use(s.arena, v);
}

static int shared(struct value *v)
{
    arena_shared *s;
    arena_guard_sample(1);
    s = arena_shared_create(0, 0, NULL);
    if (!s)
        return 2;
    arena_shared_set_name(s, name);
    v->p = (char *)arena_shared_alloc(s, 64);
    if (!v->p)
        return 2;
    v->p[0] = 'a';
    v->via = "ptr";
    arena_shared_reset(s, 0);
    return use(NULL, v);
}

/* Writes from the first byte past a value that fills its chunk on: the
 * first into the guard page faults (the checked build's header and guard
 * bytes, and the chunk's alignment, leave a few bytes between). */
static int overflow(void)
{
    static arena a;
    /* Read back from volatile storage: the compiler knows no bounds of it. */
    volatile char *volatile p;
    arena_init(&a, 4096);
    if (!arena_set_guard(&a, true))
        return 2;
    p = (volatile char *)arena_alloc(&a, 4096);
    if (!p)
        return 2;
    fprintf(stderr, "guard_death: writing past the chunk's end\n");
    fflush(stderr);
    for (size_t i = 4096; i < 8192; i++)
        p[i] = 1;
    return 0;
}

/* A request's value read long after its batch: meanwhile its range left the
 * quarantine (which holds that one range here), and later batches of another
 * arena mapped chunks until one took the same addresses and ended.  The
 * read faults in that later batch's range: the report may say so, but must
 * not blame that batch, or its ending, for the pointer. */
static int reused(void)
{
    static arena first, later;
    static const char data[64] = "a value of a guarded batch";
    struct value v = {"ptr", NULL, {0, 0, 0}};
    arena_guard_stats s;
    char *q = NULL;
    int i;

    arena_init(&first, 1024);
    arena_init(&later, 1024);
    arena_set_name(&first, name);
    arena_set_name(&later, "later");
    if (!arena_set_guard(&first, true) || !arena_set_guard(&later, true))
        return 2;
    v.p = (char *)arena_copy(&first, data, sizeof data, 0);
    if (!v.p)
        return 2;
    arena_release(&first);
    arena_guard_get_stats(&s);
    arena_guard_set_quarantine(s.quarantined); /* this range, and no second one */
    for (i = 0; i < 100000 && q != v.p; i++) {
        q = (char *)arena_copy(&later, data, sizeof data, 0);
        if (!q)
            return 2;
        arena_reset(&later);
    }
    if (q != v.p) {
        fprintf(stderr, "guard_death: no later batch took the range\n");
        return 2;
    }
    fprintf(stderr, "guard_death: batch %d of \"later\" took the range\n", i);
    return use(NULL, &v);
}

int main(int argc, char **argv)
{
    struct value v = {"ptr", NULL, {0, 0, 0}};
    if (argc < 2 || !arena_guard_available() || !arena_guard_report_faults())
        return 2;
    if (argc > 2)
        v.via = argv[2];
    if (strcmp(argv[1], "recycle") == 0)
        return recycled(&v);
    if (strcmp(argv[1], "scratch") == 0)
        return scratch(&v);
    if (strcmp(argv[1], "shared") == 0)
        return shared(&v);
    if (strcmp(argv[1], "overflow") == 0)
        return overflow();
    if (strcmp(argv[1], "reused") == 0)
        return reused();
    return own_arena(argv[1], &v);
}
