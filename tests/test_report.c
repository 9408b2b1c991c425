/* SPDX-License-Identifier: MIT */
/*
 * The report (arena/report.h) read back: its text and its JSON parsed
 * (strictly: RFC 8259 and well-formed UTF-8, checked here in C, since not
 * every CI job has a scripting language), their figures compared with
 * arena_get_stats() called just before (after inline calls, a refusal, inline
 * resets), each registered entry listed once (a cache's arenas under it), and
 * names that are not plain text (invalid UTF-8, control characters, quotes,
 * backslashes, long multibyte names) kept to valid JSON and to one text line.
 * Both formats truncated to a small buffer and written to a FILE; entries
 * that leave when released, unregistered or destroyed; a pool's entry and
 * name.
 */
#include <stdio.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/pool.h>
#include <arena/report.h>
#include <arena/thread.h>

#include "support.h"

/* ---- UTF-8 ----------------------------------------------------------------------------- */

/* The length of the well-formed UTF-8 sequence at s (before end), 0 if none:
 * no overlong form, no surrogate, nothing above U+10FFFF (RFC 3629). */
static size_t utf8_seq(const unsigned char *s, const unsigned char *end)
{
    size_t n, i;
    unsigned lo = 0x80, hi = 0xBF;
    if (s >= end)
        return 0;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4;
    else
        return 0;
    if (s[0] == 0xE0)
        lo = 0xA0;
    else if (s[0] == 0xED)
        hi = 0x9F;
    else if (s[0] == 0xF0)
        lo = 0x90;
    else if (s[0] == 0xF4)
        hi = 0x8F;
    if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

/* True when [s, s + n) is well-formed UTF-8. */
static bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t k = utf8_seq(p, end);
        if (!k)
            return false;
        p += k;
    }
    return true;
}

/* Appends code point `c` to out as UTF-8; returns the bytes written. */
static size_t utf8_put(char *out, unsigned long c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3F));
    out[2] = (char)(0x80 | (c >> 6 & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* ---- A strict JSON reader (RFC 8259) -------------------------------------------------- */

enum jtype { J_NULL, J_TRUE, J_FALSE, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

/* A value; an array's or object's members are a list from `first`. */
struct jv {
    enum jtype type;
    const char *key; /* as a member of an object */
    size_t key_len;
    const char *s; /* a string, decoded (UTF-8, may hold NUL) */
    size_t len;
    bool whole; /* a number that is a non-negative integer below 2^64 ... */
    uint64_t u; /* ... and its value */
    struct jv *first, *next;
};

static struct jv jv_pool[8192];
static size_t jv_used;
static char js_pool[1 << 18];
static size_t js_used;

struct jp {
    const unsigned char *p, *end;
};

static void jp_ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool jp_lit(struct jp *j, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
        return false;
    j->p += n;
    return true;
}

static int jp_hex(struct jp *j, unsigned long *v)
{
    int i;
    *v = 0;
    if (j->end - j->p < 4)
        return 0;
    for (i = 0; i < 4; i++) {
        unsigned char c = *j->p++;
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16)
            return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

/* A string (after its opening quote), decoded into js_pool. */
static bool jp_string(struct jp *j, const char **s, size_t *len)
{
    char *out = js_pool + js_used;
    size_t n = 0;
    for (;;) {
        unsigned char c;
        if (j->p >= j->end || js_used + n + 4 > sizeof js_pool)
            return false;
        c = *j->p;
        if (c == '"') {
            j->p++;
            break;
        }
        if (c < 0x20)
            return false; /* a control character unescaped */
        if (c != '\\') {
            size_t k = utf8_seq(j->p, j->end);
            if (!k)
                return false;
            memcpy(out + n, j->p, k);
            n += k;
            j->p += k;
            continue;
        }
        j->p++;
        if (j->p >= j->end)
            return false;
        c = *j->p++;
        switch (c) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned long cp, lo;
            if (!jp_hex(j, &cp))
                return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return false; /* a lone low surrogate */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (!jp_lit(j, "\\u") || !jp_hex(j, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return false;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += utf8_put(out + n, cp);
            break;
        }
        default: return false;
        }
    }
    *s = out;
    *len = n;
    js_used += n;
    return true;
}

static bool jp_number(struct jp *j, struct jv *v)
{
    const unsigned char *start = j->p;
    uint64_t u = 0;
    bool over = false;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end)
        return false;
    if (*j->p == '0') {
        j->p++;
    } else if (*j->p >= '1' && *j->p <= '9') {
        for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++) {
            unsigned d = (unsigned)(*j->p - '0');
            over = over || u > (UINT64_MAX - d) / 10;
            u = u * 10 + d;
        }
    } else {
        return false;
    }
    v->whole = *start != '-' && !over;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return false;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
        v->whole = false;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return false;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
        v->whole = false;
    }
    v->type = J_NUMBER;
    v->u = u;
    return true;
}

static struct jv *jp_value(struct jp *j, int depth);

/* The members of an array or object, after its opening bracket. */
static bool jp_members(struct jp *j, struct jv *v, int depth)
{
    struct jv **tail = &v->first;
    bool object = v->type == J_OBJECT;
    jp_ws(j);
    if (j->p < j->end && *j->p == (object ? '}' : ']')) {
        j->p++;
        return true;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0;
        struct jv *m;
        jp_ws(j);
        if (object) {
            if (!jp_lit(j, "\"") || !jp_string(j, &key, &key_len))
                return false;
            jp_ws(j);
            if (!jp_lit(j, ":"))
                return false;
        }
        m = jp_value(j, depth + 1);
        if (!m)
            return false;
        m->key = key;
        m->key_len = key_len;
        *tail = m;
        tail = &m->next;
        jp_ws(j);
        if (jp_lit(j, ","))
            continue;
        return jp_lit(j, object ? "}" : "]");
    }
}

static struct jv *jp_value(struct jp *j, int depth)
{
    struct jv *v;
    if (depth > 32 || jv_used == sizeof jv_pool / sizeof jv_pool[0])
        return NULL;
    v = &jv_pool[jv_used++];
    memset(v, 0, sizeof *v);
    jp_ws(j);
    if (j->p >= j->end)
        return NULL;
    switch (*j->p) {
    case 'n': v->type = J_NULL; return jp_lit(j, "null") ? v : NULL;
    case 't': v->type = J_TRUE; return jp_lit(j, "true") ? v : NULL;
    case 'f': v->type = J_FALSE; return jp_lit(j, "false") ? v : NULL;
    case '"':
        j->p++;
        v->type = J_STRING;
        return jp_string(j, &v->s, &v->len) ? v : NULL;
    case '[':
    case '{':
        v->type = *j->p++ == '[' ? J_ARRAY : J_OBJECT;
        return jp_members(j, v, depth) ? v : NULL;
    default: return jp_number(j, v) ? v : NULL;
    }
}

/* The whole of `text` as one JSON value, NULL when it is not JSON. */
static struct jv *json_parse(const char *text, size_t n)
{
    struct jp j;
    struct jv *v;
    jv_used = js_used = 0;
    j.p = (const unsigned char *)text;
    j.end = j.p + n;
    v = jp_value(&j, 0);
    if (!v)
        return NULL;
    jp_ws(&j);
    return j.p == j.end ? v : NULL;
}

/* The member `key` of object `o`, NULL if none. */
static const struct jv *json_get(const struct jv *o, const char *key)
{
    const struct jv *m;
    for (m = o->first; m; m = m->next)
        if (m->key_len == strlen(key) && memcmp(m->key, key, m->key_len) == 0)
            return m;
    return NULL;
}

/* The string member `name` of entry `e` equals `want` (NULL: JSON null). */
static bool json_named(const struct jv *e, const char *want)
{
    const struct jv *n = json_get(e, "name");
    if (!n)
        return false;
    if (!want)
        return n->type == J_NULL;
    return n->type == J_STRING && n->len == strlen(want) && memcmp(n->s, want, n->len) == 0;
}

/* The report's JSON, parsed: its entries (asserts that it parses). */
static const struct jv *json_entries(const char *text)
{
    const struct jv *doc = json_parse(text, strlen(text)), *entries;
    assert_non_null(doc);
    assert_int_equal(doc->type, J_OBJECT);
    entries = json_get(doc, "entries");
    assert_non_null(entries);
    assert_int_equal(entries->type, J_ARRAY);
    return entries;
}

/* The entry of kind "arena" named `name` among `entries` (and the arenas
 * registered under a cache); asserts there is exactly one. */
static const struct jv *json_find(const struct jv *entries, const char *name)
{
    const struct jv *e, *found = NULL, *c;
    int seen = 0;
    for (e = entries->first; e; e = e->next) {
        const struct jv *kids = json_get(e, "arenas_registered");
        if (json_named(e, name)) {
            found = e;
            seen++;
        }
        for (c = kids ? kids->first : NULL; c; c = c->next) {
            if (json_named(c, name)) {
                found = c;
                seen++;
            }
        }
    }
    assert_int_equal(seen, 1);
    return found;
}

/* The figure `key` of entry `e`: a whole number, or SIZE_MAX for null. */
static uint64_t json_figure(const struct jv *e, const char *key)
{
    const struct jv *v = json_get(e, key);
    assert_non_null(v);
    if (v->type == J_NULL)
        return SIZE_MAX;
    assert_int_equal(v->type, J_NUMBER);
    assert_true(v->whole);
    return v->u;
}

/* ---- The text report --------------------------------------------------------------------- */

/* The text report's name column, in characters; its kind column's. */
#define NAME_COLUMN 28
#define FIGURES     7

/* An entry of the text report, as one line reads. */
struct text_row {
    char name[256]; /* the name column as printed, trailing spaces dropped */
    int depth;      /* 0, or 1 under a cache */
    char kind[8];
    bool known[FIGURES];
    uint64_t fig[FIGURES]; /* stored, retained, held, limit, peak held, resets, refused */
    const char *tail;      /* after the figures */
};

/* Reads the line at `line` (to its newline) into `r`; asserts its shape:
 * valid UTF-8, the name column NAME_COLUMN characters wide, then the kind
 * and seven figures (digits, or "-"). */
static void text_row_read(const char *line, struct text_row *r)
{
    const unsigned char *p = (const unsigned char *)line, *nl;
    const char *q;
    size_t chars = 0, k;
    int i;
    nl = (const unsigned char *)strchr(line, '\n');
    assert_non_null(nl);
    assert_true(utf8_valid(line, (size_t)(nl - p)));
    memset(r, 0, sizeof *r);
    while (p[0] == ' ' && p[1] == ' ' && chars < 2) {
        r->depth++;
        p += 2;
        chars += 2;
    }
    q = (const char *)p;
    while (chars < NAME_COLUMN) {
        k = utf8_seq(p, nl);
        assert_true(k > 0);
        p += k;
        chars++;
    }
    k = (size_t)((const char *)p - q);
    assert_true(k < sizeof r->name);
    memcpy(r->name, q, k);
    while (k && r->name[k - 1] == ' ')
        r->name[--k] = '\0';
    assert_int_equal(*p, ' ');
    q = (const char *)p + 1;
    assert_int_equal(sscanf(q, "%7s", r->kind), 1);
    q += 6;
    for (i = 0; i < FIGURES; i++) {
        char cell[24];
        int used = 0;
        assert_int_equal(sscanf(q, " %23s%n", cell, &used), 1);
        q += used;
        r->known[i] = strcmp(cell, "-") != 0;
        if (r->known[i]) {
            assert_true(strspn(cell, "0123456789") == strlen(cell));
            r->fig[i] = strtoull(cell, NULL, 10);
        }
    }
    r->tail = q;
}

/* The text report's lines after the heading, NUL-separated in place:
 * stores up to `max` starts in `lines`, returns the count.  Asserts the
 * heading's shape and that every line ends with a newline. */
static size_t text_lines(char *text, const char **lines, size_t max)
{
    size_t n = 0;
    char *p = text, *nl;
    assert_true(strncmp(text, "name ", 5) == 0);
    assert_true(utf8_valid(text, strlen(text)));
    nl = strchr(p, '\n');
    assert_non_null(nl);
    p = nl + 1;
    while (*p) {
        nl = strchr(p, '\n');
        assert_non_null(nl);
        assert_true(n < max);
        lines[n++] = p;
        p = nl + 1;
    }
    return n;
}

/* The row named `name` in the text report; asserts there is exactly one. */
static void text_find(char *text, const char *name, struct text_row *out)
{
    const char *lines[512];
    size_t n = text_lines(text, lines, 512), i;
    int seen = 0;
    struct text_row r;
    for (i = 0; i < n; i++) {
        text_row_read(lines[i], &r);
        if (strcmp(r.name, name) == 0) {
            *out = r;
            seen++;
        }
    }
    assert_int_equal(seen, 1);
}

/* ---- The figures against arena_get_stats() ------------------------------------------ */

static char text[1 << 17], json[1 << 17];

/* Asserts that the entry named `name` in both reports shows the figures of
 * arena_get_stats() of `a`, taken before the reports when `stats_first`,
 * after them otherwise (which shows what the arena's last call published). */
static void check_figures(const arena *a, const char *name, bool stats_first)
{
    arena_stats s;
    struct text_row r;
    const struct jv *e;
    if (stats_first)
        arena_get_stats(a, &s);
    assert_true(arena_report(text, sizeof text, ARENA_REPORT_TEXT) < sizeof text);
    assert_true(arena_report(json, sizeof json, ARENA_REPORT_JSON) < sizeof json);
    if (!stats_first)
        arena_get_stats(a, &s);

    text_find(text, name, &r);
    assert_string_equal(r.kind, "arena");
    assert_true(r.known[0] && r.known[1] && r.known[2] && r.known[4] && r.known[5] && r.known[6]);
    assert_int_equal(r.fig[0], s.stored);
    assert_int_equal(r.fig[1], s.retained);
    assert_int_equal(r.fig[2], s.held);
    assert_int_equal(r.known[3], s.limit != SIZE_MAX);
    if (r.known[3])
        assert_int_equal(r.fig[3], s.limit);
    assert_int_equal(r.fig[4], s.peak_held);
    assert_int_equal(r.fig[5], s.resets);
    assert_int_equal(r.fig[6], s.limit_hits);

    e = json_find(json_entries(json), name);
    assert_true(json_get(e, "kind")->type == J_STRING);
    assert_memory_equal(json_get(e, "kind")->s, "arena", 5);
    assert_int_equal(json_figure(e, "stored"), s.stored);
    assert_int_equal(json_figure(e, "retained"), s.retained);
    assert_int_equal(json_figure(e, "held"), s.held);
    assert_int_equal(json_figure(e, "limit"), s.limit);
    assert_int_equal(json_figure(e, "peak_held"), s.peak_held);
    assert_int_equal(json_figure(e, "chunks"), s.chunks);
    assert_int_equal(json_figure(e, "resets"), s.resets);
    assert_int_equal(json_figure(e, "limit_hits"), s.limit_hits);
}

/* The report printed right after arena_get_stats() shows what it showed. */
static void check_report_agrees(const arena *a, const char *name) { check_figures(a, name, true); }

/* The report shows what the arena's last call published. */
static void check_report_current(const arena *a, const char *name)
{
    check_figures(a, name, false);
}

static int refusals;

static void count_refusal(const arena_limit_event *e, void *ctx)
{
    (void)e;
    (void)ctx;
    refusals++;
}

/* The guide's hostile request: values stored inline up to the limit, then a
 * refusal; the report printed after arena_get_stats() shows what it showed. */
static void report_agrees_after_inline_values_and_a_refusal(void **state)
{
    arena a = {0};
    arena_stats s;
    size_t n = 0;
    (void)state;
    arena_set_name(&a, "hostile");
    arena_set_limit(&a, 100 * 1000);
    arena_on_limit(&a, count_refusal, NULL);
    assert_true(arena_register(&a));
    check_report_agrees(&a, "hostile");
    refusals = 0;
    while (arena_alloc(&a, 1000))
        n++;
    assert_int_equal(refusals, 1);
    arena_get_stats(&a, &s);
    assert_int_equal(s.stored, n * 1000);
    assert_int_equal(s.limit_hits, 1);
    check_report_agrees(&a, "hostile");

    /* Values stored inline since, and scopes ended inline. */
    arena_reset(&a);
    assert_non_null(arena_alloc(&a, 10));
    {
        arena_mark m = arena_save(&a);
        assert_non_null(arena_alloc(&a, 200));
        arena_rewind(&a, m);
    }
    assert_non_null(arena_alloc(&a, 30));
    check_report_agrees(&a, "hostile");
    arena_release(&a);
}

/* The calls that publish (report.h): the report taken right after each,
 * without arena_get_stats() between, shows the arena's figures then; a
 * refusal among them, counted as it happens. */
static void publishing_calls_bring_the_report_up_to_date(void **state)
{
    arena a;
    arena_mark m;
    arena_stats s;
    struct text_row r;
    void *p;
    (void)state;
    arena_init(&a, 4096);
    arena_set_name(&a, "publishes");
    arena_set_limit(&a, 2000); /* less than one chunk: the first value is refused */
    assert_true(arena_register(&a));
    assert_null(arena_alloc(&a, 3000));
    check_report_current(&a, "publishes");
    text_find(text, "publishes", &r);
    assert_int_equal(r.fig[6], 1);
    arena_get_stats(&a, &s);
    assert_int_equal(s.limit_hits, 1);

    arena_set_limit(&a, SIZE_MAX);
    check_report_current(&a, "publishes");
    assert_non_null(arena_alloc(&a, 3000)); /* takes a chunk */
    check_report_current(&a, "publishes");
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10000)); /* a chunk of its own */
    check_report_current(&a, "publishes");
    arena_rewind(&a, m); /* across chunks: the library's */
    check_report_current(&a, "publishes");
    arena_trim(&a, 0);
    check_report_current(&a, "publishes");
    p = arena_alloc(&a, 100);
    assert_non_null(p);
    assert_non_null(arena_alloc(&a, 10)); /* so that p is not given back by a rewind */
    arena_free(&a, p, 100);
    assert_non_null(arena_alloc_reuse(&a, 100)); /* the freed block */
    check_report_current(&a, "publishes");
    assert_non_null(arena_alloc(&a, 10000));
    arena_reset(&a); /* two chunks: the library's */
    check_report_current(&a, "publishes");
    arena_reset_to(&a, 0);
    check_report_current(&a, "publishes");
    arena_set_name(&a, "renamed");
    check_report_current(&a, "renamed");
    arena_release(&a);
}

/* Inline resets are counted in the batch-countdown, not by the library:
 * arena_get_stats() adds them, and the report after it shows the same. */
static void report_agrees_after_inline_resets(void **state)
{
    arena a = {0};
    int i;
    (void)state;
    arena_set_name(&a, "resets");
    assert_true(arena_register(&a));
    for (i = 0; i < 300; i++) {
        assert_non_null(arena_alloc(&a, 64));
        arena_reset(&a);
        if (i % 97 == 0)
            check_report_agrees(&a, "resets");
    }
    assert_non_null(arena_alloc(&a, 100000)); /* a chunk of its own */
    check_report_agrees(&a, "resets");
    arena_trim(&a, 0);
    check_report_agrees(&a, "resets");
    arena_release(&a);
}

/* ---- Each entry once ----------------------------------------------------------------- */

/* Occurrences of `needle` in `hay`. */
static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    const char *p = hay;
    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

/* A cache's arenas appear once each, under the cache, however often they
 * are acquired, recycled and registered again. */
static void cache_arenas_listed_once(void **state)
{
    static const char *const names[] = {"cached zero", "cached one", "cached two"};
    arena_cache *c = arena_cache_create(NULL);
    arena *r[3];
    arena plain = {0};
    const struct jv *entries, *e, *kids, *k;
    int i, round, top = 0, under = 0;
    (void)state;
    assert_non_null(c);
    arena_cache_set_name(c, "the cache");
    assert_true(arena_cache_register(c));
    arena_set_name(&plain, "plain");
    assert_true(arena_register(&plain));
    for (round = 0; round < 3; round++) {
        for (i = 0; i < 3; i++) {
            r[i] = arena_cache_acquire(c);
            assert_non_null(r[i]);
            arena_set_name(r[i], names[i]);
            assert_true(arena_register(r[i])); /* registered already: nothing */
            assert_non_null(arena_alloc(r[i], 100 + (size_t)i));
        }
        if (round < 2)
            for (i = 0; i < 3; i++)
                arena_cache_recycle(c, r[i]);
    }

    assert_true(arena_report(text, sizeof text, ARENA_REPORT_TEXT) < sizeof text);
    for (i = 0; i < 3; i++) {
        char line[64];
        struct text_row row;
        assert_int_equal(occurrences(text, names[i]), 1);
        snprintf(line, sizeof line, "\n  %s ", names[i]); /* indented under the cache */
        assert_non_null(strstr(text, line));
        text_find(text, names[i], &row);
        assert_int_equal(row.depth, 1);
    }
    assert_int_equal(occurrences(text, "the cache"), 1);
    assert_non_null(strstr(text, "(3 arenas, 3 out)"));

    assert_true(arena_report(json, sizeof json, ARENA_REPORT_JSON) < sizeof json);
    entries = json_entries(json);
    for (e = entries->first; e; e = e->next) {
        for (i = 0; i < 3; i++)
            top += json_named(e, names[i]);
        if (json_named(e, "the cache")) {
            kids = json_get(e, "arenas_registered");
            assert_non_null(kids);
            for (k = kids->first; k; k = k->next)
                under++;
            assert_int_equal(json_figure(e, "arenas"), 3);
        }
    }
    assert_int_equal(top, 0);
    assert_int_equal(under, 3);
    for (i = 0; i < 3; i++)
        assert_true(json_named(json_find(entries, names[i]), names[i]));

    for (i = 0; i < 3; i++)
        arena_cache_recycle(c, r[i]);
    arena_cache_destroy(c);
    arena_release(&plain);
    assert_true(arena_report(text, sizeof text, ARENA_REPORT_TEXT) < sizeof text);
    assert_int_equal(occurrences(text, "cached"), 0);
    assert_int_equal(occurrences(text, "plain"), 0);
}

/* ---- Names that are not plain text ------------------------------------------------------ */

/* Names, what the JSON must decode each to (an invalid byte: U+FFFD), and
 * what the text report's name column must show (cut to NAME_COLUMN
 * characters, control characters and invalid bytes as \xNN). */
static const struct hostile {
    const char *name, *decoded, *shown;
} hostile[] = {
    {"line one\nline two", "line one\nline two", "line one\\x0aline two"},
    {"\"quoted\" back\\slash", "\"quoted\" back\\slash", "\"quoted\" back\\slash"},
    {"tab\there\r\x01\x1f\x7f", "tab\there\r\x01\x1f\x7f", "tab\\x09here\\x0d\\x01\\x1f\\x7f"},
    {"bad \xff\xfe end", "bad \xef\xbf\xbd\xef\xbf\xbd end", "bad \\xff\\xfe end"},
    {"cut \xc3", "cut \xef\xbf\xbd", "cut \\xc3"},
    {"overlong \xc0\xaf", "overlong \xef\xbf\xbd\xef\xbf\xbd", "overlong \\xc0\\xaf"},
    {"surrogate \xed\xa0\x80!", "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!",
     "surrogate \\xed\\xa0\\x80!"},
    {"c1 \xc2\x85 nel", "c1 \xc2\x85 nel", "c1 \\xc2\\x85 nel"},
    /* 30 two-byte characters: cut after the 28th */
    {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"},
    /* three-byte and four-byte characters, 25 characters in all, then an
     * escape (4 characters) that would cross the column: cut before it */
    {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 0123456789012345678\x01xyz",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 0123456789012345678\x01xyz",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 0123456789012345678"},
};

#define HOSTILE (sizeof hostile / sizeof hostile[0])

/* Each hostile name on an arena of its own, and on a cache's arena, a pool,
 * a shared arena and a cache: the JSON stays valid UTF-8 JSON that decodes
 * to the name (invalid bytes replaced), the text keeps one line per entry,
 * its columns in place. */
static void hostile_names_stay_in_their_entry(void **state)
{
    static arena arenas[HOSTILE];
    static arena_pool pools[HOSTILE];
    const char *lines[512];
    const struct jv *entries, *e;
    arena_cache *c = arena_cache_create(NULL);
    arena_shared *sh = arena_shared_create(0, 0, NULL);
    arena *in_cache;
    size_t i, n, entries_n = 0;
    (void)state;
    assert_non_null(c);
    assert_non_null(sh);
    for (i = 0; i < HOSTILE; i++) {
        arena_init(&arenas[i], 0);
        arena_set_name(&arenas[i], hostile[i].name);
        assert_true(arena_register(&arenas[i]));
        assert_true(arena_pool_init(&pools[i], 16, 8, 4, NULL));
        arena_pool_set_name(&pools[i], hostile[i].name);
        assert_true(arena_pool_register(&pools[i]));
    }
    arena_cache_set_name(c, hostile[0].name);
    assert_true(arena_cache_register(c));
    in_cache = arena_cache_acquire(c);
    assert_non_null(in_cache);
    arena_set_name(in_cache, hostile[3].name);
    arena_shared_set_name(sh, hostile[2].name);
    assert_true(arena_shared_register(sh));

    assert_true(arena_report(json, sizeof json, ARENA_REPORT_JSON) < sizeof json);
    assert_true(utf8_valid(json, strlen(json)));
    entries = json_entries(json);
    for (e = entries->first; e; e = e->next)
        entries_n++;
    assert_int_equal(entries_n, 2 * HOSTILE + 2);
    for (i = 0; i < HOSTILE; i++) {
        int named = 0;
        for (e = entries->first; e; e = e->next)
            named += json_named(e, hostile[i].decoded);
        /* an arena and a pool each; the first three name the cache, its
         * arena and the shared arena too */
        assert_int_equal(named, i == 0 || i == 2 ? 3 : 2);
    }
    for (e = entries->first; e; e = e->next) {
        const struct jv *kids = json_get(e, "arenas_registered");
        if (kids) {
            assert_non_null(kids->first);
            assert_true(json_named(kids->first, hostile[3].decoded));
        }
    }

    assert_true(arena_report(text, sizeof text, ARENA_REPORT_TEXT) < sizeof text);
    n = text_lines(text, lines, 512);
    assert_int_equal(n, 2 * HOSTILE + 3); /* the cache's arena on a line of its own */
    for (i = 0; i < n; i++) {
        struct text_row r;
        size_t k;
        int arenas_named = 0;
        text_row_read(lines[i], &r);
        for (k = 0; k < HOSTILE; k++)
            arenas_named += strcmp(r.name, hostile[k].shown) == 0;
        assert_int_equal(arenas_named, 1);
    }

    arena_cache_recycle(c, in_cache);
    arena_cache_destroy(c);
    arena_shared_destroy(sh);
    for (i = 0; i < HOSTILE; i++) {
        arena_release(&arenas[i]);
        arena_pool_destroy(&pools[i]);
    }
}

/* The strict reader itself: it refuses what is not JSON or not UTF-8, so
 * that the checks above can fail. */
static void the_reader_is_strict(void **state)
{
    static const char *const bad[] = {
        "{\"a\": \"\n\"}",           /* a raw control character */
        "{\"a\": \"\xff\"}",         /* invalid UTF-8 */
        "{\"a\": \"\xc0\xaf\"}",     /* overlong */
        "{\"a\": \"\xed\xa0\x80\"}", /* a surrogate in UTF-8 */
        "{\"a\": \"\\ud800\"}",      /* a lone surrogate escaped */
        "{\"a\": \"\\x41\"}",        /* no such escape */
        "{\"a\": 01}",
        "{\"a\": 1,}",
        "{\"a\" 1}",
        "[1] [2]",
        "{\"a\": \"open}",
    };
    const struct jv *v;
    size_t i;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_null(json_parse(bad[i], strlen(bad[i])));
    {
        static const char good[] =
            "{\"a\": [1, 2.5e3, -0, \"\\u00e9\\ud83d\\ude00\\\"\", null, true]}";
        v = json_parse(good, sizeof good - 1);
    }
    assert_non_null(v);
    v = json_get(v, "a");
    assert_non_null(v);
    assert_true(v->first->whole && v->first->u == 1);
    assert_false(v->first->next->whole);
    assert_int_equal(v->first->next->next->next->len, 7);
    assert_memory_equal(v->first->next->next->next->s, "\xc3\xa9\xf0\x9f\x98\x80\"", 7);
}

/* ---- Formats, truncation, a FILE, entries that leave ---------------------------------- */

/* Every kind of entry in both formats; a buffer too small truncates and
 * returns the whole length; a FILE gets the same bytes; what is released,
 * unregistered or destroyed leaves the report. */
static void report_formats_and_truncation(void **state)
{
    static char big[1 << 16], small[16];
    arena a = {0}, b = {0};
    arena_cache *c = arena_cache_create(NULL);
    arena_shared *sh = arena_shared_create(0, 0, NULL);
    arena *r;
    size_t n, m;
    (void)state;
    assert_non_null(c);
    assert_non_null(sh);
    arena_set_name(&a, "request \"quoted\"");
    assert_non_null(arena_alloc(&a, 1000));
    assert_true(arena_register(&a));
    assert_true(arena_register(&a)); /* again: nothing */
    assert_true(arena_register(&b));
    arena_cache_set_name(c, "requests");
    assert_true(arena_cache_register(c));
    r = arena_cache_acquire(c);
    assert_non_null(r);
    arena_set_name(r, "in the cache");
    assert_non_null(arena_alloc(r, 5000));
    arena_shared_set_name(sh, "shared");
    assert_true(arena_shared_register(sh));
    assert_non_null(arena_shared_alloc(sh, 64));

    n = arena_report(big, sizeof big, ARENA_REPORT_TEXT);
    assert_true(n < sizeof big);
    assert_int_equal(strlen(big), n);
    assert_non_null(strstr(big, "request \"quoted\""));
    assert_non_null(strstr(big, "(unnamed)"));
    assert_non_null(strstr(big, "requests"));
    assert_non_null(strstr(big, "  in the cache")); /* indented under its cache */
    assert_non_null(strstr(big, "shared"));

    n = arena_report(big, sizeof big, ARENA_REPORT_JSON);
    assert_int_equal(strlen(big), n);
    assert_non_null(strstr(big, "\"name\": \"request \\\"quoted\\\"\""));
    assert_non_null(strstr(big, "\"name\": null"));
    assert_non_null(strstr(big, "\"kind\": \"cache\""));
    assert_non_null(strstr(big, "\"arenas_registered\": ["));

    /* Too small: truncated, NUL-terminated, the whole length returned. */
    m = arena_report(small, sizeof small, ARENA_REPORT_JSON);
    assert_int_equal(m, n);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, big, sizeof small - 1);
    assert_int_equal(arena_report(NULL, 0, ARENA_REPORT_JSON), n);
    small[0] = 'x';
    (void)arena_report(small, 1, ARENA_REPORT_TEXT);
    assert_int_equal(small[0], '\0');

    /* To a FILE. */
    {
        /* A file of the working directory (tmpfile() needs the root
         * directory's permissions on Windows). */
        FILE *f = fopen("test_report_file.txt", "wb+");
        long len;
        assert_non_null(f);
        assert_int_equal(arena_report_file(f, ARENA_REPORT_TEXT), 0);
        len = ftell(f);
        assert_int_equal((size_t)len, arena_report(NULL, 0, ARENA_REPORT_TEXT));
        fclose(f);
        remove("test_report_file.txt");
    }

    /* Released, unregistered, destroyed: gone from the report. */
    arena_release(&a);
    arena_unregister(&b);
    arena_cache_recycle(c, r);
    arena_cache_destroy(c);
    arena_shared_destroy(sh);
    (void)arena_report(big, sizeof big, ARENA_REPORT_TEXT);
    assert_null(strstr(big, "quoted"));
    assert_null(strstr(big, "requests"));
    assert_null(strstr(big, "shared"));
    assert_null(strstr(big, "(unnamed)"));
}

static void pool_names_and_report(void **state)
{
    static char out[1 << 16];
    arena_pool p, q = {0};
    (void)state;
    assert_true(arena_pool_init(&p, 32, 8, 64, NULL));
    assert_null(arena_pool_name(&p));
    arena_pool_set_name(&p, "sessions");
    assert_string_equal(arena_pool_name(&p), "sessions");
    assert_true(arena_pool_register(&p));
    assert_true(arena_pool_register(&p)); /* again: nothing */
    (void)arena_report(out, sizeof out, ARENA_REPORT_TEXT);
    assert_non_null(strstr(out, "sessions"));
    assert_non_null(strstr(out, "pool"));
    assert_non_null(strstr(out, "(64 slots)"));
    arena_pool_set_name(&p, "conns"); /* renamed while registered */
    (void)arena_report(out, sizeof out, ARENA_REPORT_JSON);
    assert_null(strstr(out, "sessions"));
    assert_non_null(strstr(out, "\"kind\": \"pool\", \"name\": \"conns\", \"stored\": null"));
    assert_non_null(strstr(out, "\"capacity\": 64"));
    arena_pool_set_name(&p, NULL);
    assert_null(arena_pool_name(&p));
    arena_pool_destroy(&p);
    (void)arena_report(out, sizeof out, ARENA_REPORT_JSON);
    assert_null(strstr(out, "\"pool\""));
    /* Init clears the name; an empty pool registers and leaves at destroy. */
    arena_pool_set_name(&q, "empty");
    assert_true(arena_pool_register(&q));
    (void)arena_report(out, sizeof out, ARENA_REPORT_TEXT);
    assert_non_null(strstr(out, "empty"));
    arena_pool_destroy(&q);
    (void)arena_report(out, sizeof out, ARENA_REPORT_TEXT);
    assert_null(strstr(out, "empty"));
    assert_true(arena_pool_init(&q, 8, 8, 4, NULL));
    assert_null(arena_pool_name(&q));
    arena_pool_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(report_agrees_after_inline_values_and_a_refusal),
        cmocka_unit_test(publishing_calls_bring_the_report_up_to_date),
        cmocka_unit_test(report_agrees_after_inline_resets),
        cmocka_unit_test(cache_arenas_listed_once),
        cmocka_unit_test(hostile_names_stay_in_their_entry),
        cmocka_unit_test(the_reader_is_strict),
        cmocka_unit_test(report_formats_and_truncation),
        cmocka_unit_test(pool_names_and_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
