/* SPDX-License-Identifier: MIT */
/* The library's exported copies of inline API functions (exported_calls.c). */
#ifndef ARENA_TEST_EXPORTED_CALLS_H
#define ARENA_TEST_EXPORTED_CALLS_H

#include <arena/arena.h>

void exported_rewind(arena *a, arena_mark m);
void exported_scope_end(arena_scope *s);

#endif
