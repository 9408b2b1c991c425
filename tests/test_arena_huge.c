/* SPDX-License-Identifier: MIT */
/*
 * Huge pages for big batches (backing.c, regular_cap() in arena.c): where
 * Linux offers transparent huge pages, an arena on the C heap whose batch
 * holds 2 MiB in chunks takes its next regular chunks of 2 MiB, each a
 * mapping of its own, aligned to 2 MiB and advised; a smaller batch, an
 * arena with a backing allocator of its own and a process that says
 * ARENA_HUGE_PAGES=0 are as before.  CTest runs this suite twice: as the
 * environment leaves it, and with ARENA_HUGE_PAGES=0.
 */
#define _DEFAULT_SOURCE
#include "support.h"
#include "internal.h" /* arena__huge_pages(), ARENA__HUGE */

#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#  include <sys/mman.h>
#endif

/* The library built with ASan (the test is built as the library is). */
#if defined(__SANITIZE_ADDRESS__)
#  define ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define ASAN 1
#  endif
#endif
#ifndef ASAN
#  define ASAN 0
#endif

#define KIB ((size_t)1024)
#define MIB ((size_t)1024 * 1024)

/* True when the kernel offers transparent huge pages to a mapping that
 * asks (its setting "always" or "madvise"). */
static bool thp_offered(void)
{
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

    if (!f)
        return false;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    fclose(f);
    return strstr(line, "[always]") || strstr(line, "[madvise]");
}

/* The mapping that holds `p` in /proc/self/smaps: its bounds and whether
 * it is advised for huge pages ("hg" among its VmFlags).  False when no
 * mapping holds it (or the file cannot be read). */
static bool mapping_of(const void *p, uintptr_t *start, uintptr_t *end, bool *advised)
{
    char line[512];
    bool found = false, done = false;
    FILE *f = fopen("/proc/self/smaps", "r");

    if (!f)
        return false;
    while (!done && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            if (found)
                done = true; /* the next mapping: no VmFlags line for ours */
            else if ((uintptr_t)p >= lo && (uintptr_t)p < hi) {
                found = true;
                *start = lo;
                *end = hi;
                *advised = false;
            }
        } else if (found && strncmp(line, "VmFlags:", 8) == 0) {
            *advised = strstr(line, " hg") != NULL;
            done = true;
        }
    }
    fclose(f);
    return found;
}

/* Whether /proc/self/smaps shows a mapping's advice: a mapping of 4 MiB
 * advised MADV_HUGEPAGE here shows "hg".  Not under qemu-user (CI's
 * aarch64, s390x and armhf targets), whose madvise() does nothing. */
static bool advice_shows(void)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t start, end;
    bool advised = false;
    size_t n = 4 * MIB;
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (m == MAP_FAILED)
        return false;
    if (madvise(m, n, MADV_HUGEPAGE) != 0 || !mapping_of(m, &start, &end, &advised))
        advised = false;
    munmap(m, n);
    return advised;
#else
    return false;
#endif
}

/* Fills `a` with values of 64 bytes to 4 KiB (a fixed sequence) until it
 * stores `bytes`; returns the last value. */
static char *fill(arena *a, size_t bytes)
{
    unsigned x = 1;
    size_t stored = 0;
    char *p = NULL;

    while (stored < bytes) {
        size_t n;
        x = x * 1103515245u + 12345u;
        n = 64 + (x >> 8) % 4033;
        p = (char *)arena_alloc(a, n);
        assert_non_null(p);
        memset(p, 0x5a, n);
        stored += n;
    }
    return p;
}

/* Whether huge pages are in use follows the kernel's offer and the
 * environment, and never where LeakSanitizer would miss what the chunks
 * point to. */
static void test_the_process_setting(void **state)
{
    const char *env = getenv("ARENA_HUGE_PAGES");
    bool want = thp_offered() && !(env && strcmp(env, "0") == 0) && !ASAN;
    (void)state;
#if !defined(__linux__)
    want = false;
#endif
    assert_int_equal(arena__huge_pages(), want);
    assert_int_equal(arena__huge_pages(), want); /* read once, the same after */
}

/* A batch of 24 MiB: chunks of the chunk size until it holds 2 MiB, then of
 * 2 MiB, each aligned and advised; the next batch of the same shape makes
 * no backing call and holds the same. */
static void test_a_big_batch_takes_huge_chunks(void **state)
{
    arena a;
    arena_stats st, warm;
    uintptr_t start = 0, end = 0;
    bool advised = false;
    char *last;
    (void)state;

    arena_init(&a, 0);
    last = fill(&a, 24 * MIB);
    arena_get_stats(&a, &st);
    if (arena_guarded(&a)) {
        /* A guarded batch's chunks are the page layer's, of the same sizes. */
        arena_release(&a);
        return;
    }
    if (arena__huge_pages()) {
        /* The current chunk, which holds the last value: 2 MiB-aligned. */
        assert_true(last >= a.chunks[a.cur].base);
        assert_int_equal((uintptr_t)a.chunks[a.cur].base % ARENA__HUGE, 0);
        assert_true(mapping_of(last, &start, &end, &advised));
        /* Advised, a mapping of its own (the kernel merges it only with
         * other advised ones, of whole huge pages) where smaps shows
         * advice; under qemu-user, which ignores it, the kernel sees a
         * plain mapping that may merge with its neighbours. */
        if (advice_shows()) {
            assert_true(advised);
            assert_int_equal(start % ARENA__HUGE, 0);
            assert_int_equal((end - start) % ARENA__HUGE, 0);
        }
        /* 32 chunks of 64 KiB, then about 11 of 2 MiB, not 370 more. */
        assert_true(st.backing_calls < 32 + 24 + 4);
        assert_true(st.held < 24 * MIB + 2 * ARENA__HUGE);
    } else {
        assert_true(st.backing_calls >= 24 * MIB / ARENA_DEFAULT_CHUNK);
        if (mapping_of(last, &start, &end, &advised))
            assert_false(advised);
    }
    arena_reset(&a);
    fill(&a, 24 * MIB);
    arena_get_stats(&a, &warm);
    /* (Unless this batch is the one in N that ARENA_GUARD=N guards.) */
    if (!arena_guarded(&a)) {
        assert_int_equal(warm.backing_calls, st.backing_calls);
        assert_int_equal(warm.held, st.held);
    }
    arena_release(&a);
}

/* A batch that holds less than 2 MiB in chunks is as it was: chunks of the
 * chunk size, from the heap. */
static void test_a_small_batch_is_as_it_was(void **state)
{
    arena a;
    arena_stats st;
    (void)state;

    arena_init(&a, 0);
    fill(&a, 1500 * KIB);
    arena_get_stats(&a, &st);
    assert_true(st.held <= 2 * MIB);
    /* A guarded batch's chunks are the page layer's (ARENA_GUARD=1), not
     * the backing's. */
    if (!arena_guarded(&a))
        assert_true(st.backing_calls >= 1500 * KIB / ARENA_DEFAULT_CHUNK);
    arena_release(&a);
}

/* An arena with a backing allocator of its own never takes a chunk larger
 * than its chunk size for a small value: that memory is its provider's. */
static void test_an_arena_with_its_own_backing(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    (void)state;

    tb_reset(&tb);
    arena_init_with(&a, 0, &al);
    fill(&a, 6 * MIB);
    assert_true(tb.max_request <= ARENA_DEFAULT_CHUNK + 4 * KIB);
    arena_release(&a);
    assert_int_equal(tb.live_bytes, 0);
}

/* Under a limit the growth takes what the limit leaves (a chunk cut down to
 * it): the batch stores up to the limit, less the chunks' unused ends and
 * a chunk, and holds nothing past it. */
static void test_growth_under_a_limit(void **state)
{
    arena a;
    arena_stats st;
    size_t stored = 0;
    unsigned x = 1;
    const size_t limit = 5 * MIB + 300 * KIB;
    (void)state;

    arena_init(&a, 0);
    arena_set_limit(&a, limit);
    record_errors();
    for (;;) {
        size_t n;
        x = x * 1103515245u + 12345u;
        n = 64 + (x >> 8) % 4033;
        if (!arena_alloc(&a, n))
            break;
        stored += n;
    }
    restore_errors();
    arena_get_stats(&a, &st);
    assert_true(st.held <= limit);
    /* Each chunk's end may leave less than a value (4 KiB) unused, and the
     * last may be refused for less than the chunk size.  (Chunks, not
     * backing calls: a guarded batch's come from the page layer.) */
    assert_true(stored + st.chunks * 4 * KIB + ARENA_DEFAULT_CHUNK >= limit);
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_process_setting),
        cmocka_unit_test(test_a_big_batch_takes_huge_chunks),
        cmocka_unit_test(test_a_small_batch_is_as_it_was),
        cmocka_unit_test(test_an_arena_with_its_own_backing),
        cmocka_unit_test(test_growth_under_a_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
