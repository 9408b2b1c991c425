/* SPDX-License-Identifier: MIT */
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena/report.h"
#include "instrument.h"
#include "thread_state.h"

enum kind {
    KIND_ARENA = ARENA__NODE_ARENA,
    KIND_CACHE = ARENA__NODE_CACHE,
    KIND_SHARED = ARENA__NODE_SHARED,
    KIND_POOL = ARENA__NODE_POOL
};

struct arena__node {
    struct arena__node *prev, *next; /* the registry, under its lock */
    struct arena__node *parent;      /* the cache's record, for one of its arenas */
    enum kind kind;
    void *obj;
    _Atomic(const char *) name;
    _Atomic size_t stored, retained, held, limit, peak_held;
    _Atomic uint64_t chunks, resets, limit_hits;
    _Atomic size_t capacity; /* a pool's */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena__node registry = {.prev = &registry, .next = &registry};

static struct arena__node *new_node(enum kind kind, void *obj, struct arena__node *parent)
{
    struct arena__node *n;
    arena__fork_ready();
    n = (struct arena__node *)calloc(1, sizeof *n);
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

void arena__report_fork(bool hold)
{
    if (hold)
        pthread_mutex_lock(&registry_lock);
    else
        pthread_mutex_unlock(&registry_lock);
}

/* ---- Arenas ------------------------------------------------------------------------------ */

void arena__publish(struct arena__node *n, const char *name, const arena_stats *s)
{
    atomic_store_explicit(&n->name, name, memory_order_relaxed);
    atomic_store_explicit(&n->stored, s->stored, memory_order_relaxed);
    atomic_store_explicit(&n->retained, s->retained, memory_order_relaxed);
    atomic_store_explicit(&n->held, s->held, memory_order_relaxed);
    atomic_store_explicit(&n->limit, s->limit, memory_order_relaxed);
    atomic_store_explicit(&n->peak_held, s->peak_held, memory_order_relaxed);
    atomic_store_explicit(&n->chunks, s->chunks, memory_order_relaxed);
    atomic_store_explicit(&n->resets, s->resets, memory_order_relaxed);
    atomic_store_explicit(&n->limit_hits, s->limit_hits, memory_order_relaxed);
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
    arena__cold(a)->set.changed = 1;
    arena__note_holds(a);
    arena__publish_arena(a);
    link_node(n);
    return true;
}

bool arena_register(arena *a) { return arena__register_under(a, NULL); }

void arena__register_as(arena *a, struct arena__node *parent)
{
    struct arena__node *n = arena__cold(a)->set.node;
    if (n && parent && n->parent == parent)
        return;
    if (n)
        arena_unregister(a);
    if (parent)
        (void)arena__register_under(a, parent);
}

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

struct arena__node *arena__register_object(int kind, void *obj)
{
    struct arena__node *n = new_node((enum kind)kind, obj, NULL);
    if (n)
        link_node(n);
    return n;
}

void arena__publish_pool(struct arena__node *n, const char *name, size_t held, size_t capacity)
{
    atomic_store_explicit(&n->name, name, memory_order_relaxed);
    atomic_store_explicit(&n->held, held, memory_order_relaxed);
    atomic_store_explicit(&n->capacity, capacity, memory_order_relaxed);
}

void arena__unregister_object(struct arena__node *n)
{
    if (n)
        unlink_node(n);
}

bool arena__register_once(pthread_mutex_t *lock, struct arena__node **slot, int kind, void *obj)
{
    struct arena__node *n;
    pthread_mutex_lock(lock);
    n = *slot;
    pthread_mutex_unlock(lock);
    if (n)
        return true;
    n = arena__register_object(kind, obj);
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

/* The report's writer.  Each piece is copied into what is left of the
 * buffer; the rest is counted, not written.  Numbers are formatted here,
 * not by printf: a report has a line an arena, and a vsnprintf() call a
 * line would cost more than the rest of the writer.
 *
 * The formatting writes only the caller's buffer and its own locals, from
 * figures read already (with atomics where another thread writes them).  A
 * thread sanitizer can find no race there, and its check of every byte
 * would be most of a large report's time.  So the writer stages its bytes
 * in a block of its own, uninstrumented (ARENA__NO_TSAN), and copies them
 * to the buffer a block at a time. */
struct out {
    char *buf;
    size_t len, n; /* n: the whole report's length so far */
    size_t k;      /* bytes staged in stage[] */
    char stage[4096];
};

/* Copies the staged bytes into what is left of the buffer (the rest
 * counted, not written). */
static void flush(struct out *o)
{
    if (o->n < o->len) {
        size_t room = o->len - o->n;
        memcpy(o->buf + o->n, o->stage, o->k < room ? o->k : room);
    }
    o->n += o->k;
    o->k = 0;
}

static ARENA__NO_TSAN void put_bytes(struct out *o, const char *s, size_t k)
{
    size_t i;
    for (i = 0; i < k; i++) {
        if (o->k == sizeof o->stage)
            flush(o);
        o->stage[o->k++] = s[i];
    }
}

static ARENA__NO_TSAN void put(struct out *o, const char *s)
{
    for (; *s; s++) {
        if (o->k == sizeof o->stage)
            flush(o);
        o->stage[o->k++] = *s;
    }
}

/* `k` spaces. */
static ARENA__NO_TSAN void put_spaces(struct out *o, size_t k)
{
    static const char spaces[] = "                                ";
    while (k) {
        size_t m = k < sizeof spaces - 1 ? k : sizeof spaces - 1;
        put_bytes(o, spaces, m);
        k -= m;
    }
}

/* The length of `s`, at most `max`: strnlen() written out, because the
 * thread sanitizer's interceptor of it checked every byte of every cell
 * (a third of the report of ten thousand arenas there). */
static ARENA__NO_TSAN size_t span(const char *s, size_t max)
{
    size_t k = 0;
    while (k < max && s[k])
        k++;
    return k;
}

/* The `k` bytes at `s` in a column of `width` bytes (k <= width), padded on
 * the right (`left`) or on the left. */
static ARENA__NO_TSAN void put_padded(struct out *o, const char *s, size_t k, size_t width,
                                      bool left)
{
    if (!left)
        put_spaces(o, width - k);
    put_bytes(o, s, k);
    if (left)
        put_spaces(o, width - k);
}

/* `s` in a column of `width` bytes: cut to it, and padded. */
static ARENA__NO_TSAN void put_column(struct out *o, const char *s, size_t width, bool left)
{
    put_padded(o, s, span(s, width), width, left);
}

/* `v` in decimal, right-aligned in `width` bytes (0: as long as it is). */
static ARENA__NO_TSAN void put_number(struct out *o, uint64_t v, size_t width)
{
    char digits[20];
    size_t i = sizeof digits, k;
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    k = sizeof digits - i;
    put_padded(o, digits + i, k, width > k ? width : k, false);
}

/* ---- Names -------------------------------------------------------------------------------
 *
 * A name is the caller's string, any bytes: the JSON report must stay JSON
 * (RFC 8259: UTF-8, control characters escaped) and the text report one
 * line per entry, in columns.  Each writes a well-formed UTF-8 character as
 * it is, and a byte of no well-formed sequence as a replacement: U+FFFD in
 * the JSON, \xNN in the text, as arena__name_char() says (which shows
 * control characters so too). */

static const char hex[] = "0123456789abcdef";

/* A name as a JSON string: quotes, backslashes and control characters
 * escaped, a byte of no well-formed UTF-8 sequence as U+FFFD. */
static void put_json_name(struct out *o, const char *name)
{
    const unsigned char *s = (const unsigned char *)name, *run;
    if (!s) {
        put(o, "null");
        return;
    }
    put(o, "\"");
    for (run = s; *s;) {
        size_t k = arena__utf8_len(s);
        if (k && *s != '"' && *s != '\\' && *s >= 0x20 && *s != 0x7F) {
            s += k;
            continue;
        }
        put_bytes(o, (const char *)run, (size_t)(s - run));
        if (!k) {
            put(o, "\\ufffd");
        } else if (*s == '"' || *s == '\\') {
            char esc[2] = {'\\', (char)*s};
            put_bytes(o, esc, 2);
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[*s >> 4], hex[*s & 15]};
            put_bytes(o, esc, 6);
        }
        run = ++s;
    }
    put_bytes(o, (const char *)run, (size_t)(s - run));
    put(o, "\"");
}

/* A name in the text report's column of `width` characters, padded: a
 * character that prints as itself, each byte of a control character (C0,
 * DEL, C1) or of no well-formed sequence as \xNN (four characters), so that
 * no name breaks its line; cut before the first character that would cross
 * the column. */
static ARENA__NO_TSAN void put_text_name(struct out *o, const char *name, size_t width)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t used = 0;
    while (*s) {
        bool control;
        size_t bytes = arena__name_char(s, &control), i;
        if (used + (control ? 4 * bytes : 1) > width)
            break;
        for (i = 0; i < bytes; i++) {
            if (control) {
                char esc[4] = {'\\', 'x', hex[s[i] >> 4], hex[s[i] & 15]};
                put_bytes(o, esc, 4);
            } else {
                put_bytes(o, (const char *)s + i, 1);
            }
        }
        used += control ? 4 * bytes : 1;
        s += bytes;
    }
    put_spaces(o, width - used);
}

/* One entry of the report: an arena's or shared arena's counters as
 * arena_get_stats() gives them (a cache fills `held` and `limit`). */
struct figures {
    const char *kind, *name;
    arena_stats s;
    size_t arenas, out; /* a cache's */
    size_t capacity;    /* a pool's */
    bool pool;          /* a pool: its stored and refusals are not known here */
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
    if (n->kind == KIND_POOL) {
        f->kind = "pool";
        f->name = atomic_load_explicit(&n->name, memory_order_relaxed);
        f->s.held = f->s.retained = f->s.peak_held =
            atomic_load_explicit(&n->held, memory_order_relaxed);
        f->s.limit = SIZE_MAX;
        f->capacity = atomic_load_explicit(&n->capacity, memory_order_relaxed);
        f->pool = true;
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

/* The text report's columns: name (indented by depth; in characters, the
 * others in bytes, which their ASCII makes the same), kind, then the
 * figures. */
#define NAME_COLUMN 28

/* A column of figures: a space, then `v` right-aligned in `width` bytes, or
 * "-" where the figure is not known (a pool's counts) or none (no limit). */
static ARENA__NO_TSAN void put_cell(struct out *o, bool known, uint64_t v, size_t width)
{
    put(o, " ");
    if (known)
        put_number(o, v, width);
    else
        put_column(o, "-", width, false);
}

static void put_text(struct out *o, const struct figures *f, int depth)
{
    size_t indent = 2 * (size_t)depth;
    put_spaces(o, indent);
    put_text_name(o, f->name ? f->name : "(unnamed)", NAME_COLUMN - indent);
    put(o, " ");
    put_column(o, f->kind, 6, true);
    put_cell(o, !f->pool, f->s.stored, 12);
    put_cell(o, true, f->s.retained, 12);
    put_cell(o, true, f->s.held, 12);
    put_cell(o, f->s.limit != SIZE_MAX, f->s.limit, 12);
    put_cell(o, true, f->s.peak_held, 12);
    put_cell(o, true, f->s.resets, 8);
    put_cell(o, !f->pool, f->s.limit_hits, 8);
    if (f->pool) {
        put(o, "  (");
        put_number(o, f->capacity, 0);
        put(o, " slots)");
    }
    if (f->arenas) {
        put(o, "  (");
        put_number(o, f->arenas, 0);
        put(o, " arenas, ");
        put_number(o, f->out, 0);
        put(o, " out)");
    }
    put(o, "\n");
}

/* `, "key": v` */
static void put_json_number(struct out *o, const char *key, uint64_t v)
{
    put(o, ", \"");
    put(o, key);
    put(o, "\": ");
    put_number(o, v, 0);
}

static void put_json(struct out *o, const struct figures *f)
{
    put(o, "{\"kind\": \"");
    put(o, f->kind);
    put(o, "\", \"name\": ");
    put_json_name(o, f->name);
    if (f->pool)
        put(o, ", \"stored\": null");
    else
        put_json_number(o, "stored", f->s.stored);
    put_json_number(o, "retained", f->s.retained);
    put_json_number(o, "held", f->s.held);
    if (f->s.limit == SIZE_MAX)
        put(o, ", \"limit\": null");
    else
        put_json_number(o, "limit", f->s.limit);
    put_json_number(o, "peak_held", f->s.peak_held);
    put_json_number(o, "chunks", f->s.chunks);
    put_json_number(o, "resets", f->s.resets);
    if (f->pool) {
        put(o, ", \"limit_hits\": null");
        put_json_number(o, "capacity", f->capacity);
    } else {
        put_json_number(o, "limit_hits", f->s.limit_hits);
    }
    if (strcmp(f->kind, "cache") == 0) {
        put_json_number(o, "arenas", f->arenas);
        put_json_number(o, "out", f->out);
    }
}

/* The text report's heading. */
static void put_heading(struct out *o)
{
    static const char *const figures[] = {"stored", "retained", "held", "limit", "peak held"};
    size_t i;
    put_column(o, "name", NAME_COLUMN, true);
    put(o, " ");
    put_column(o, "kind", 6, true);
    for (i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        put(o, " ");
        put_column(o, figures[i], 12, false);
    }
    put(o, " ");
    put_column(o, "resets", 8, false);
    put(o, " ");
    put_column(o, "refused", 8, false);
    put(o, "\n");
}

size_t arena_report(char *buf, size_t len, int format)
{
    struct out o = {buf, len, 0, 0, {0}};
    const struct arena__node *n, *m;
    struct figures f;
    bool json = format == ARENA_REPORT_JSON, first = true;

    if (buf && len)
        buf[0] = '\0';
    arena__fork_ready();
    pthread_mutex_lock(&registry_lock);
    if (json)
        put(&o, "{\"entries\": [");
    else
        put_heading(&o);
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
    flush(&o);
    pthread_mutex_unlock(&registry_lock);
    if (buf && len)
        buf[o.n < len ? o.n : len - 1] = '\0';
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
