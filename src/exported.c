/* SPDX-License-Identifier: MIT */
/*
 * The exported copies of the API functions that the headers make inline
 * (arena/internal/compiler.h, ARENA__OUT_OF_LINE): programs built against a
 * header where they were calls still link.  The headers' own inline bodies
 * are compiled here as ordinary external definitions.
 */
#define ARENA__OUT_OF_LINE
#define ARENA__DEFINE_OUT_OF_LINE

#include "arena/arena.h"
