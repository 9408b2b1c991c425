/* SPDX-License-Identifier: MIT */
/*
 * The environment variable ARENA_GUARD, as the library reads it: prints the
 * sampling it gave, by count and by time (tests/CMakeLists.txt runs this
 * once per form of the value, each in a process of its own, since the
 * library reads the variable once), whether an arena on the C heap then
 * guards its first batch (with sampling by count 0 and 1, which draw
 * nothing, and by time, whose first look finds the interval passed), and
 * the sampling after arena_guard_sample(), then
 * arena_guard_sample_interval(), replaced it.
 */
#include <stdio.h>

#include <arena/arena.h>
#include <arena/guard.h>

int main(void)
{
    static arena a;
    unsigned long every = arena_guard_sampling();
    uint64_t ns = arena_guard_sampling_interval();

    printf("sampling %lu interval %llu\n", every, (unsigned long long)ns);
    if (every <= 1 && arena_guard_available()) {
        if (!arena_alloc(&a, 100))
            return 1;
        printf("guarded %d\n", arena_guarded(&a) ? 1 : 0);
        arena_release(&a);
    }
    arena_guard_sample(3);
    printf("then %lu interval %llu\n", arena_guard_sampling(),
           (unsigned long long)arena_guard_sampling_interval());
    arena_guard_sample_interval(ARENA_GUARD_INTERVAL);
    printf("then %lu interval %llu\n", arena_guard_sampling(),
           (unsigned long long)arena_guard_sampling_interval());
    return 0;
}
