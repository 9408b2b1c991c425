/*
 * The registry of named arenas and the report (arena/report.h).
 *
 * One list of records under one lock.  A registered arena's record holds a
 * copy of its counters in relaxed atomics, which the arena's own thread
 * writes at the library's calls (arena__publish()) and the report reads
 * from any thread: a figure may be a moment old, none tears, and the arena
 * itself is never read from another thread.  A cache or a shared arena is
 * read through its own thread-safe queries, under the registry's lock,
 * which its destroy takes first to leave the list: a record in the list is
 * always of a live object.  Lock order: the registry, then a cache's or
 * shared arena's own lock (never the other way).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena/report.h"
#include "thread_state.h"

enum kind { KIND_ARENA, KIND_CACHE, KIND_SHARED };

struct arena__node {
    struct arena__node *prev, *next; /* the registry, under its lock */
    struct arena__node *parent;      /* the cache's record, for one of its arenas */
    enum kind kind;
    void *obj;
    _Atomic(const char *) name;
    _Atomic size_t stored, retained, held, limit, peak_held;
    _Atomic uint64_t chunks, resets, limit_hits;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena__node registry = {.prev = &registry, .next = &registry};

static struct arena__node *new_node(enum kind kind, void *obj, struct arena__node *parent)
{
    struct arena__node *n = (struct arena__node *)calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->kind = kind;
    n->obj = obj;
    n->parent = parent;
    atomic_init(&n->name, NULL);
    atomic_init(&n->limit, SIZE_MAX);
    return n;
}

static void link_node(struct arena__node *n)
{
    pthread_mutex_lock(&registry_lock);
    n->next = &registry;
    n->prev = registry.prev;
    registry.prev->next = n;
    registry.prev = n;
    pthread_mutex_unlock(&registry_lock);
}

static void unlink_node(struct arena__node *n)
{
    pthread_mutex_lock(&registry_lock);
    n->prev->next = n->next;
    n->next->prev = n->prev;
    pthread_mutex_unlock(&registry_lock);
    free(n);
}

/* ---- Arenas ------------------------------------------------------------------------------ */

void arena__publish(arena *a)
{
    struct arena__node *n = arena__cold(a)->set.node;
    arena_stats s;
    arena_get_stats(a, &s);
    atomic_store_explicit(&n->name, arena__cold(a)->set.name, memory_order_relaxed);
    atomic_store_explicit(&n->stored, s.stored, memory_order_relaxed);
    atomic_store_explicit(&n->retained, s.retained, memory_order_relaxed);
    atomic_store_explicit(&n->held, s.held, memory_order_relaxed);
    atomic_store_explicit(&n->limit, s.limit, memory_order_relaxed);
    atomic_store_explicit(&n->peak_held, s.peak_held, memory_order_relaxed);
    atomic_store_explicit(&n->chunks, s.chunks, memory_order_relaxed);
    atomic_store_explicit(&n->resets, s.resets, memory_order_relaxed);
    atomic_store_explicit(&n->limit_hits, s.limit_hits, memory_order_relaxed);
}

bool arena__register_under(arena *a, struct arena__node *parent)
{
    struct arena__node *n;
    arena__wake(a);
    if (arena__cold(a)->set.node)
        return true;
    n = new_node(KIND_ARENA, a, parent);
    if (!n)
        return false;
    arena__cold(a)->set.node = n;
    arena__note_holds(a);
    arena__publish(a);
    link_node(n);
    return true;
}

bool arena_register(arena *a) { return arena__register_under(a, NULL); }

void arena_unregister(arena *a)
{
    struct arena__node *n;
    if (a->lazy || !(n = arena__cold(a)->set.node))
        return;
    arena__cold(a)->set.node = NULL;
    arena__note_holds(a);
    unlink_node(n);
}

/* ---- Caches and shared arenas ------------------------------------------------------------ */

struct arena__node *arena__register_object(int cache, void *obj)
{
    struct arena__node *n = new_node(cache ? KIND_CACHE : KIND_SHARED, obj, NULL);
    if (n)
        link_node(n);
    return n;
}

void arena__unregister_object(struct arena__node *n)
{
    if (n)
        unlink_node(n);
}

bool arena__register_once(pthread_mutex_t *lock, struct arena__node **slot, int cache, void *obj)
{
    struct arena__node *n;
    pthread_mutex_lock(lock);
    n = *slot;
    pthread_mutex_unlock(lock);
    if (n)
        return true;
    n = arena__register_object(cache, obj);
    if (!n)
        return false;
    pthread_mutex_lock(lock);
    if (*slot) { /* another thread registered it meanwhile */
        pthread_mutex_unlock(lock);
        arena__unregister_object(n);
        return true;
    }
    *slot = n;
    pthread_mutex_unlock(lock);
    return true;
}

/* ---- The report ------------------------------------------------------------------------- */

struct out {
    char *buf;
    size_t len, n; /* n: the whole report's length so far */
};

static void put(struct out *o, const char *fmt, ...) ARENA__PRINTF(2, 3);

static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int k;
    char *at = o->n < o->len ? o->buf + o->n : NULL;
    size_t room = o->n < o->len ? o->len - o->n : 0;
    va_start(ap, fmt);
    k = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (k > 0)
        o->n += (size_t)k;
}

/* A name as a JSON string (quotes, backslashes and control bytes escaped). */
static void put_json_name(struct out *o, const char *s)
{
    if (!s) {
        put(o, "null");
        return;
    }
    put(o, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            put(o, "\\%c", c);
        else if (c < 0x20)
            put(o, "\\u%04x", c);
        else
            put(o, "%c", c);
    }
    put(o, "\"");
}

/* One entry of the report: an arena's or shared arena's counters as
 * arena_get_stats() gives them (a cache fills `held` and `limit`). */
struct figures {
    const char *kind, *name;
    arena_stats s;
    size_t arenas, out; /* a cache's */
};

static void read_node(const struct arena__node *n, struct figures *f)
{
    memset(f, 0, sizeof *f);
    if (n->kind == KIND_CACHE) {
        arena_cache_stats cs;
        arena_cache_get_stats((arena_cache *)n->obj, &cs);
        f->kind = "cache";
        f->name = arena__cache_name((arena_cache *)n->obj);
        f->s.held = cs.held;
        f->s.limit = cs.limit;
        f->arenas = cs.arenas;
        f->out = cs.out;
        return;
    }
    if (n->kind == KIND_SHARED) {
        f->kind = "shared";
        f->name = arena__shared_name((arena_shared *)n->obj);
        arena_shared_get_stats((arena_shared *)n->obj, &f->s);
        return;
    }
    f->kind = "arena";
    f->name = atomic_load_explicit(&n->name, memory_order_relaxed);
    f->s.stored = atomic_load_explicit(&n->stored, memory_order_relaxed);
    f->s.retained = atomic_load_explicit(&n->retained, memory_order_relaxed);
    f->s.held = atomic_load_explicit(&n->held, memory_order_relaxed);
    f->s.limit = atomic_load_explicit(&n->limit, memory_order_relaxed);
    f->s.peak_held = atomic_load_explicit(&n->peak_held, memory_order_relaxed);
    f->s.chunks = atomic_load_explicit(&n->chunks, memory_order_relaxed);
    f->s.resets = atomic_load_explicit(&n->resets, memory_order_relaxed);
    f->s.limit_hits = atomic_load_explicit(&n->limit_hits, memory_order_relaxed);
}

static void put_text(struct out *o, const struct figures *f, int depth)
{
    char limit[24];
    if (f->s.limit == SIZE_MAX)
        snprintf(limit, sizeof limit, "-");
    else
        snprintf(limit, sizeof limit, "%zu", f->s.limit);
    put(o, "%*s%-*.*s %-6s %12zu %12zu %12zu %12s %12zu %8llu %8llu", 2 * depth, "", 28 - 2 * depth,
        28 - 2 * depth, f->name ? f->name : "(unnamed)", f->kind, f->s.stored, f->s.retained,
        f->s.held, limit, f->s.peak_held, (unsigned long long)f->s.resets,
        (unsigned long long)f->s.limit_hits);
    if (f->arenas)
        put(o, "  (%zu arenas, %zu out)", f->arenas, f->out);
    put(o, "\n");
}

static void put_json(struct out *o, const struct figures *f)
{
    put(o, "{\"kind\": \"%s\", \"name\": ", f->kind);
    put_json_name(o, f->name);
    put(o, ", \"stored\": %zu, \"retained\": %zu, \"held\": %zu, \"limit\": ", f->s.stored,
        f->s.retained, f->s.held);
    if (f->s.limit == SIZE_MAX)
        put(o, "null");
    else
        put(o, "%zu", f->s.limit);
    put(o, ", \"peak_held\": %zu, \"chunks\": %llu, \"resets\": %llu, \"limit_hits\": %llu",
        f->s.peak_held, (unsigned long long)f->s.chunks, (unsigned long long)f->s.resets,
        (unsigned long long)f->s.limit_hits);
    if (strcmp(f->kind, "cache") == 0)
        put(o, ", \"arenas\": %zu, \"out\": %zu", f->arenas, f->out);
}

size_t arena_report(char *buf, size_t len, int format)
{
    struct out o = {buf, len, 0};
    const struct arena__node *n, *m;
    struct figures f;
    bool json = format == ARENA_REPORT_JSON, first = true;

    if (buf && len)
        buf[0] = '\0';
    pthread_mutex_lock(&registry_lock);
    if (json)
        put(&o, "{\"entries\": [");
    else
        put(&o, "%-28s %-6s %12s %12s %12s %12s %12s %8s %8s\n", "name", "kind", "stored",
            "retained", "held", "limit", "peak held", "resets", "refused");
    for (n = registry.next; n != &registry; n = n->next) {
        if (n->parent)
            continue;
        read_node(n, &f);
        if (!json) {
            put_text(&o, &f, 0);
        } else {
            put(&o, first ? "\n  " : ",\n  ");
            put_json(&o, &f);
        }
        first = false;
        if (n->kind == KIND_CACHE) {
            bool firstchild = true;
            if (json)
                put(&o, ", \"arenas_registered\": [");
            for (m = registry.next; m != &registry; m = m->next) {
                if (m->parent != n)
                    continue;
                read_node(m, &f);
                if (!json) {
                    put_text(&o, &f, 1);
                } else {
                    put(&o, firstchild ? "\n    " : ",\n    ");
                    put_json(&o, &f);
                    put(&o, "}");
                }
                firstchild = false;
            }
            if (json)
                put(&o, "]");
        }
        if (json)
            put(&o, "}");
    }
    if (json)
        put(&o, "\n]}\n");
    pthread_mutex_unlock(&registry_lock);
    if (buf && len && o.n >= len)
        buf[len - 1] = '\0';
    return o.n;
}

int arena_report_file(void *stream, int format)
{
    size_t need = 4096, got;
    char *text = NULL;
    int rc;
    for (;;) {
        char *t = (char *)realloc(text, need + 1);
        if (!t) {
            free(text);
            return -1;
        }
        text = t;
        got = arena_report(text, need + 1, format);
        if (got <= need)
            break;
        need = got + got / 4; /* grown since: room for more */
    }
    rc = fwrite(text, 1, got, (FILE *)stream) == got ? 0 : -1;
    free(text);
    return rc;
}
