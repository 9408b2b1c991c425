/* SPDX-License-Identifier: MIT */
/* A program built from a release tarball (scripts/dist-check.sh): every
 * public header, included as an installed copy is, and a call into each. */
#include <arena/arena.h>
#include <arena/guard.h>
#include <arena/hooks.h>
#include <arena/pool.h>
#include <arena/report.h>
#include <arena/thread.h>
#include <arena/version.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    arena a = {0};
    arena_set_name(&a, "dist");
    char *s = arena_sprintf(&a, "%s-%d", "value", 42);
    arena_ref r = arena_ref_strndup(&a, "ref", 3);
    int ok = s && strcmp(s, "value-42") == 0 && strcmp(arena_ref_str(&a, r), "ref") == 0;

    arena *prev = arena_set_current(&a);
    char *h = arena_cur_strdup("hook");
    ok = ok && h && arena_cur_size(h) >= 5;
    arena_cur_free(h);
    arena_set_current(prev);

    arena_pool p;
    if (arena_pool_init(&p, 16, 8, 4, NULL)) {
        void *slot = arena_pool_alloc(&p);
        ok = ok && slot && arena_pool_used(&p) == 1;
        arena_pool_free(&p, slot);
        arena_pool_destroy(&p);
    } else {
        ok = 0;
    }

    arena_scope sc = arena_scratch_begin(NULL, 0);
    ok = ok && sc.arena && arena_alloc(sc.arena, 64);
    arena_scope_end(&sc);
    arena_scratch_release_thread();

    char report[512];
    ok = ok && arena_register(&a) && arena_report(report, sizeof report, ARENA_REPORT_TEXT) > 0 &&
         strstr(report, "dist");
    arena_unregister(&a);
    ok = ok && (arena_guard_sampling() == 0 || arena_guard_available());
    arena_release(&a);

    ok = ok && strcmp(arena_version(), ARENA_VERSION_STRING) == 0;
    printf("dist consumer (C): libarena %s, checked %d: %s\n", arena_version(), ARENA_CHECKED,
           ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
