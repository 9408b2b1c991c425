/* SPDX-License-Identifier: MIT */
/*
 * Formatting straight into an arena (arena_sprintf).
 *
 * While the inline window is open, the room after the position is free memory
 * of the current chunk: vsnprintf writes there and, when the whole string
 * fits, the position moves past it, as the inline arena_strndup() does.  One
 * formatting pass and no copy.  When it does not fit, vsnprintf has measured
 * it anyway: a place of that size is taken and the string formatted again.
 * With the window closed (sanitizers, Valgrind, checked builds), the length is
 * measured first, so that every value is placed by the library.
 */
#include <stdio.h>

#include "internal.h"

char *arena_vsprintf(arena *a, const char *fmt, va_list ap)
{
    va_list again;
    char *p;
    int n;

    va_copy(again, ap);
    if (a->ptr) {
        size_t room = (size_t)(a->end - a->ptr);
        n = vsnprintf(a->ptr, room, fmt, ap);
        if (n >= 0 && (size_t)n < room) {
            p = a->ptr;
            a->ptr = p + (size_t)n + 1;
            va_end(again);
            return p;
        }
    } else {
        n = vsnprintf(NULL, 0, fmt, ap);
    }
    p = NULL;
    if (n >= 0) {
        p = (char *)arena_alloc_aligned(a, (size_t)n + 1, 1);
        /* The same format and arguments give the same length, unless another
         * thread changed the locale in between: then nothing is kept. */
        if (p && vsnprintf(p, (size_t)n + 1, fmt, again) != n) {
            arena__free_placed(a, p, (size_t)n + 1);
            p = NULL;
        }
    }
    va_end(again);
    return p;
}

char *arena_sprintf(arena *a, const char *fmt, ...)
{
    va_list ap;
    char *p;
    va_start(ap, fmt);
    p = arena_vsprintf(a, fmt, ap);
    va_end(ap);
    return p;
}
