/* SPDX-License-Identifier: MIT */
/*
 * The process-wide error handler, and the library's version.
 *
 * The handler is two plain globals: it is set at start-up, before threads use
 * the library, and only read afterwards.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static arena_error_fn *handler = arena_default_error_handler;
static void *handler_ctx;

arena_error_fn *arena_set_error_handler(arena_error_fn *fn, void *ctx)
{
    arena_error_fn *prev = handler;
    handler = fn ? fn : arena_default_error_handler;
    handler_ctx = fn ? ctx : NULL;
    return prev;
}

arena_error_fn *arena_get_error_handler(void **ctx)
{
    if (ctx)
        *ctx = handler_ctx;
    return handler;
}

const char *arena_error_name(arena_error code)
{
    switch (code) {
    case ARENA_ERR_NULL_FREE: return "ARENA_ERR_NULL_FREE";
    case ARENA_ERR_FOREIGN_POINTER: return "ARENA_ERR_FOREIGN_POINTER";
    case ARENA_ERR_DOUBLE_FREE: return "ARENA_ERR_DOUBLE_FREE";
    case ARENA_ERR_REF_TOO_LARGE: return "ARENA_ERR_REF_TOO_LARGE";
    case ARENA_ERR_STALE_REF: return "ARENA_ERR_STALE_REF";
    case ARENA_ERR_BAD_MARK: return "ARENA_ERR_BAD_MARK";
    case ARENA_ERR_CORRUPT: return "ARENA_ERR_CORRUPT";
    case ARENA_ERR_BAD_SIZE: return "ARENA_ERR_BAD_SIZE";
    case ARENA_ERR_CLEANUP: return "ARENA_ERR_CLEANUP";
    case ARENA_ERR_LATE_FREE: return "ARENA_ERR_LATE_FREE";
    }
    return "unknown";
}

void arena_default_error_handler(arena_error code, const char *message, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "libarena: %s: %s\n", arena_error_name(code), message);
    fflush(stderr);
    abort();
}

static void vreport(arena_error code, const char *fmt, va_list ap) ARENA__PRINTF(2, 0);

static void vreport(arena_error code, const char *fmt, va_list ap)
{
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    handler(code, msg, handler_ctx);
}

void arena__report(arena_error code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(code, fmt, ap);
    va_end(ap);
}

bool arena__misused(arena_error code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(code, fmt, ap);
    va_end(ap);
    return true;
}

bool arena__corrupt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(ARENA_ERR_CORRUPT, fmt, ap);
    va_end(ap);
    return false;
}

const char *arena_version(void) { return ARENA_VERSION_STRING; }
