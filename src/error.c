/* SPDX-License-Identifier: MIT */
/*
 * The process-wide error handler, and the library's version.
 *
 * The handler is two plain globals: it is set at start-up, before threads use
 * the library, and only read afterwards.  A message names the objects of
 * the faulty call by their names too, which the library holds and the
 * format strings at the calls need not know of.  And the trace of limit
 * refusals that no callback is told of (ARENA_LIMIT_TRACE), the one other
 * thing the library may print.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena/pool.h"
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

/* ---- What a report is about --------------------------------------------------------------
 *
 * The handler learns the objects of the report it is called for from
 * arena_error_about(): the thread's record of the report under way, which a
 * report made from a handler replaces for its own handler's call. */

static ARENA__TLS arena_error_info about_now;
static ARENA__TLS bool about_set;

const arena_error_info *arena_error_about(void) { return about_set ? &about_now : NULL; }

/* The characters of a name a message shows at most, and the bytes that
 * takes at most (a C1 control's two bytes, each as \xNN). */
#define NAME_CHARS 64
#define NAME_BYTES (8 * NAME_CHARS)

/* A message as the handler gets it: the formatted text, at most FORMATTED
 * bytes, and the names of up to three objects, each in at most WORDS. */
#define FORMATTED 256
#define WORDS     (NAME_BYTES + 64)

struct msg {
    char buf[FORMATTED + 3 * WORDS];
    size_t len;
};

/* Inserts the `k` (at most WORDS) bytes at `s` at offset `at`. */
static void insert(struct msg *m, size_t at, const char *s, size_t k)
{
    memmove(m->buf + at + k, m->buf + at, m->len - at + 1);
    memcpy(m->buf + at, s, k);
    m->len += k;
}

/* ` "name"` as a message shows it (see arena__name_char()), cut to
 * NAME_CHARS characters, in `out` (NAME_BYTES + 3 bytes); its length. */
static size_t quote(char *out, const char *name)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)name;
    size_t n = 0, chars;
    out[n++] = ' ';
    out[n++] = '"';
    for (chars = 0; *s && chars < NAME_CHARS; chars++) {
        bool escaped;
        size_t k = arena__name_char(s, &escaped), i;
        for (i = 0; i < k; i++) {
            if (escaped) {
                out[n++] = '\\';
                out[n++] = 'x';
                out[n++] = hex[s[i] >> 4];
                out[n++] = hex[s[i] & 15];
            } else {
                out[n++] = (char)s[i];
            }
        }
        s += k;
    }
    out[n++] = '"';
    return n;
}

static bool word_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Where the message prints `addr` (an address as %p prints it) as a whole
 * word, or SIZE_MAX. */
static size_t find_address(const char *msg, const char *addr)
{
    size_t k = strlen(addr);
    const char *p;
    for (p = strstr(msg, addr); p; p = strstr(p + 1, addr))
        if ((p == msg || !word_char(p[-1])) && !word_char(p[k]))
            return (size_t)(p - msg);
    return SIZE_MAX;
}

/* Names `obj` (a `kind`) in the message: its name after its address where
 * the message prints that, otherwise ` (kind address "name")` at its end. */
static void name_object(struct msg *m, const char *kind, const void *obj, const char *name)
{
    char addr[24], words[WORDS];
    size_t at, n;
    if (!obj)
        return;
    snprintf(addr, sizeof addr, "%p", obj);
    at = find_address(m->buf, addr);
    if (at != SIZE_MAX) {
        if (name) {
            n = quote(words, name);
            insert(m, at + strlen(addr), words, n);
        }
        return;
    }
    n = (size_t)snprintf(words, sizeof words, " (%s %s", kind, addr);
    if (name)
        n += quote(words + n, name);
    words[n++] = ')';
    insert(m, m->len, words, n);
}

static void vreport(const struct arena__about *about, arena_error code, const char *fmt, va_list ap)
    ARENA__PRINTF(3, 0);

/* Formats the message, names its objects in it, and calls the handler with
 * `about` for arena_error_about(), the outer report's put back after. */
static void vreport(const struct arena__about *about, arena_error code, const char *fmt, va_list ap)
{
    struct msg m;
    arena_error_info outer = about_now;
    bool outer_set = about_set;
    const char *aname = about->arena ? arena_name(about->arena) : NULL;
    const char *pname = about->pool ? arena_pool_name(about->pool) : NULL;
    const char *cname =
        about->cache ? arena__cache_name((struct arena_cache *)(uintptr_t)about->cache) : NULL;
    int n = vsnprintf(m.buf, FORMATTED, fmt, ap);

    m.len = n < 0 ? 0 : (size_t)n < FORMATTED ? (size_t)n : FORMATTED - 1;
    m.buf[m.len] = '\0';
    name_object(&m, "arena", about->arena, aname);
    name_object(&m, "pool", about->pool, pname);
    name_object(&m, "cache", about->cache, cname);
    memset(&about_now, 0, sizeof about_now);
    about_now.code = code;
    about_now.arena = about->arena;
    about_now.pool = about->pool;
    about_now.cache = about->cache;
    about_now.name = about->arena ? aname : about->pool ? pname : cname;
    about_set = true;
    handler(code, m.buf, handler_ctx);
    about_now = outer;
    about_set = outer_set;
}

/* ---- Refusals no callback is told of ----------------------------------------------------- */

/* What ARENA_LIMIT_TRACE asks for, read at the first refusal: TRACE_NONE,
 * TRACE_ALL, or TRACE_FIRST (the first ARENA__TRACED of the process); -1
 * until read.  Racing readers read the same environment. */
enum { TRACE_NONE, TRACE_ALL, TRACE_FIRST };
static _Atomic int trace_mode = -1;
static _Atomic unsigned long traced;

static int limit_trace_mode(void)
{
    int mode = atomic_load_explicit(&trace_mode, memory_order_relaxed);
    if (mode < 0) {
        const char *s = getenv("ARENA_LIMIT_TRACE");
        if (s && strcmp(s, "1") == 0)
            mode = TRACE_ALL;
        else if (s && strcmp(s, "0") == 0)
            mode = TRACE_NONE;
        else
            mode = ARENA_CHECKED ? TRACE_FIRST : TRACE_NONE;
        atomic_store_explicit(&trace_mode, mode, memory_order_relaxed);
    }
    return mode;
}

void arena__limit_trace(const arena_limit_event *e)
{
    char line[2 * WORDS + 128]; /* two names, each quoted in at most WORDS */
    int mode = limit_trace_mode();
    size_t n;
    if (mode == TRACE_NONE)
        return;
    if (mode == TRACE_FIRST) {
        unsigned long k = atomic_fetch_add_explicit(&traced, 1, memory_order_relaxed);
        if (k > ARENA__TRACED)
            return;
        if (k == ARENA__TRACED) {
            fprintf(stderr,
                    "libarena: limit: %d refusals traced, no more (ARENA_LIMIT_TRACE=1 traces "
                    "every one)\n",
                    ARENA__TRACED);
            return;
        }
    }
    n = (size_t)snprintf(line, sizeof line, "libarena: limit: arena %p", (const void *)e->arena);
    if (e->name)
        n += quote(line + n, e->name);
    n += (size_t)snprintf(line + n, sizeof line - n, " refused %zu bytes (", e->asked);
    if (e->cause == ARENA_LIMIT_BUDGET) {
        n += (size_t)snprintf(line + n, sizeof line - n, "budget");
        if (e->limit_name)
            n += quote(line + n, e->limit_name);
        snprintf(line + n, sizeof line - n, ": limit %zu, used %zu)\n", e->limit, e->held);
    } else {
        snprintf(line + n, sizeof line - n, "its limit %zu, held %zu)\n", e->limit, e->held);
    }
    fputs(line, stderr);
}

void arena__report(const struct arena__about *about, arena_error code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(about, code, fmt, ap);
    va_end(ap);
}

bool arena__misused(const struct arena__about *about, arena_error code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(about, code, fmt, ap);
    va_end(ap);
    return true;
}

bool arena__corrupt(const struct arena__about *about, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(about, ARENA_ERR_CORRUPT, fmt, ap);
    va_end(ap);
    return false;
}

const char *arena_version(void) { return ARENA_VERSION_STRING; }
