/* SPDX-License-Identifier: MIT */
/* Calls the library's exported copies of the API functions that the headers
 * make inline, as a program built against a header where they were plain
 * calls does (see ARENA__OUT_OF_LINE in arena/internal/compiler.h). */
#define ARENA__OUT_OF_LINE
#include <arena/arena.h>

#include "exported_calls.h"

void exported_rewind(arena *a, arena_mark m) { arena_rewind(a, m); }

void exported_scope_end(arena_scope *s) { arena_scope_end(s); }
