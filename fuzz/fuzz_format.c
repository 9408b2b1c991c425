/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arena_sprintf() and arena_vsprintf() against vsnprintf()
 * into a buffer of the C heap, for formats the input builds from a safe
 * grammar: each conversion is valid and gets an argument of its type.
 *
 * A format is up to SLOTS conversions, one of each class in a fixed order
 * (int, unsigned, double, string, pointer, character), each with its flags,
 * a width and a precision that are literal, absent or '*', between pieces
 * of literal text (with "%%").  Every slot consumes three arguments, (int
 * width, int precision, value): a width or precision that is not '*' has
 * its argument consumed by a "%.0d" of 0, which prints nothing, and a slot
 * left out by conversions that print the value plainly.  So one call
 * signature serves every format.
 *
 * Between formats the input stores values (moving the position towards the
 * end of the chunk: a string that fits the room left, one that does not,
 * one of a chunk of its own), takes marks and rewinds to them, resets, and
 * makes the backing fail.  Each result equals vsnprintf's output, NUL
 * included (a "%c" of 0 puts a NUL inside), arena_size() grows by its
 * length + 1, and every value stored before keeps its bytes; a NULL comes
 * only from a backing that refused (or a full fixed buffer) and changes
 * nothing.
 *
 * The checked build (the fuzz preset) closes the inline window, so the
 * library measures first and formats once in place; with the window open
 * (fuzz_format_inline: a plain build without AddressSanitizer) vsnprintf
 * writes into the room left and the string is kept when it fits.
 */
#define TEST_NO_CMOCKA 1
#include "support.h"
#include "fuzz_input.h"

#include <float.h>
#include <limits.h>
#include <math.h>

#define MAX_VALUES 64
#define MAX_MARKS  8
#define MAX_OPS    128 /* per input: longer inputs add time, not paths */
#define SLOTS      6
#define FMT_MAX    1024

typedef struct value {
    unsigned char *p;
    size_t size;
    uint64_t id;
    uint64_t t; /* when stored */
} value;

static fuzz_input in;
static arena a;
static test_backing tb;
static bool fixed;
static size_t budget;
static _Alignas(64) unsigned char buf[8192];
static value values[MAX_VALUES];
static size_t nvalues;
static struct {
    arena_mark m;
    uint64_t t;
    size_t size;
} marks[MAX_MARKS];
static size_t nmarks;
static uint64_t clock_, next_id;

static size_t below(size_t n) { return fuzz_below(&in, n); }

/* ---- Values ----------------------------------------------------------------------- */

static void check_values(void)
{
    size_t i;
    for (i = 0; i < nvalues; i++)
        TEST_CHECK(has_pattern(values[i].p, values[i].size, values[i].id));
    TEST_CHECK(recorded_errors.count == 0);
}

/* A value of the arena from now on (a string's bytes are overwritten with a
 * pattern: only its place matters afterwards). */
static void keep(unsigned char *p, size_t size)
{
    value *v;
    if (nvalues == MAX_VALUES)
        return;
    v = &values[nvalues++];
    v->p = p;
    v->size = size;
    v->id = next_id++;
    v->t = ++clock_;
    fill_pattern(p, size, v->id);
}

static void forget_after(uint64_t t)
{
    size_t i = 0;
    while (i < nvalues) {
        if (values[i].t > t)
            values[i] = values[--nvalues];
        else
            i++;
    }
}

static void failed(size_t failed_before, size_t size_before)
{
    TEST_CHECK(fixed || tb.failed > failed_before);
    TEST_CHECK(arena_size(&a) == size_before);
}

/* ---- Formats ------------------------------------------------------------------------ */

typedef struct args {
    int w[SLOTS], p[SLOTS];
    int i;
    unsigned u;
    double d;
    const char *s;
    void *v;
    int c;
} args;

static char fmt[FMT_MAX];
static size_t flen;
static char strings[2][4096];

static void put(const char *s)
{
    size_t n = strlen(s);
    TEST_CHECK(flen + n < FMT_MAX);
    memcpy(fmt + flen, s, n + 1);
    flen += n;
}

/* Literal text: letters, spaces, "%%", a newline; at most 8 pieces. */
static void literal(void)
{
    static const char *const pieces[] = {"a", "xyz", " ", "%%", "\n", "-", "0", "\xc3\xa9"};
    size_t n = below(4);
    while (n--)
        put(pieces[below(8)]);
}

/* A width or precision: none, literal, or '*' (true; its argument drawn: a
 * negative '*' width means '-', a negative precision none). */
static bool bound(int *arg, bool precision, char *spec)
{
    char num[16];
    unsigned kind = (unsigned)below(4);
    if (kind == 0)
        return false;
    if (precision)
        strcat(spec, ".");
    if (kind == 1) {
        snprintf(num, sizeof num, "%u", (unsigned)below(below(8) ? 40 : 3000));
        strcat(spec, num);
        return false;
    }
    *arg = (int)below(below(8) ? 48 : 3000) - (below(4) == 0 ? 1500 : 0);
    strcat(spec, "*");
    return true;
}

/* One slot: its conversion (class `cls`), or the plain conversions that
 * consume its arguments.  Its two int arguments are consumed first by a
 * "%.0d" of 0 for each bound that is not '*', then by the '*'s. */
static void slot(int cls, args *ar)
{
    static const char *const convs[SLOTS] = {"di", "uxXo", "fFeEgGaA", "s", "p", "c"};
    static const char flags[] = "-+ #0";
    char spec[48] = "%", wspec[16] = "", pspec[16] = "";
    char conv = convs[cls][below(strlen(convs[cls]))];
    int star[2], nstar = 0, w = 0, p = 0;
    size_t k;

    if (below(3) == 0) { /* left out: its arguments printed plainly */
        static const char *const plain[SLOTS] = {"%d", "%u", "%g", "%s", "%p", "%c"};
        ar->w[cls] = ar->p[cls] = 0;
        put("%.0d%.0d");
        put(plain[cls]);
        return;
    }
    if (bound(&w, false, wspec))
        star[nstar++] = w;
    if (cls <= 3 && bound(&p, true, pspec)) /* no precision for %p and %c */
        star[nstar++] = p;
    for (k = 0; k < (size_t)(2 - nstar); k++)
        put("%.0d");
    ar->w[cls] = nstar == 2 ? star[0] : 0;
    ar->p[cls] = nstar ? star[nstar - 1] : 0;
    /* Only the flags C defines for the conversion. */
    for (k = below(4); k > 0; k--) {
        char f[2] = {flags[below(5)], 0};
        if (f[0] == '#' && (cls == 0 || conv == 'u' || cls >= 3))
            continue;
        if (f[0] == '0' && cls >= 3)
            continue;
        if ((f[0] == '+' || f[0] == ' ') && cls >= 3)
            continue;
        strcat(spec, f);
    }
    strcat(spec, wspec);
    strcat(spec, pspec);
    spec[strlen(spec) + 1] = '\0';
    spec[strlen(spec)] = conv;
    put(spec);
}

static double draw_double(void)
{
    static const double specials[] = {0.0,     -0.0,    1.0,     -1.5,   0.1,        1e300,
                                      -1e-300, DBL_MAX, DBL_MIN, 5e-324, 123456.789, 1e15};
    switch (below(4)) {
    case 0: return specials[below(sizeof specials / sizeof specials[0])];
    case 1: return below(2) ? INFINITY : (below(2) ? NAN : -INFINITY);
    default: {
        uint64_t bits = 0;
        double d;
        size_t k;
        for (k = 0; k < 8; k++)
            bits = bits << 8 | fuzz_byte(&in);
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    }
}

static void draw_args(args *ar)
{
    static const int ints[] = {0, 1, -1, 42, INT_MAX, INT_MIN, 1000000, -7};
    size_t n;
    ar->i = below(2) ? ints[below(8)] : (int)(below(65536) - 32768);
    ar->u = below(2) ? (unsigned)ints[below(8)] : (unsigned)below(UINT_MAX);
    ar->d = draw_double();
    n = below(2) ? below(32) : below(sizeof strings[0]);
    memset(strings[0], 'A' + (int)below(26), n);
    strings[0][n] = '\0';
    ar->s = strings[0];
    ar->v = below(2) ? NULL : (void *)(uintptr_t)(below(1u << 16) * 16);
    ar->c = (int)below(256); /* 0 puts a NUL inside the string */
}

static void build(args *ar)
{
    int cls;
    flen = 0;
    fmt[0] = '\0';
    draw_args(ar);
    literal();
    for (cls = 0; cls < SLOTS; cls++) {
        slot(cls, ar);
        literal();
    }
}

#define ARGS(ar)                                                                                   \
  (ar).w[0], (ar).p[0], (ar).i, (ar).w[1], (ar).p[1], (ar).u, (ar).w[2], (ar).p[2], (ar).d,        \
      (ar).w[3], (ar).p[3], (ar).s, (ar).w[4], (ar).p[4], (ar).v, (ar).w[5], (ar).p[5], (ar).c

/* arena_vsprintf through a variadic call, as a program's wrapper calls it. */
__attribute__((format(printf, 2, 3))) static char *wrapper(arena *ar, const char *f, ...)
{
    va_list ap;
    char *p;
    va_start(ap, f);
    p = arena_vsprintf(ar, f, ap);
    va_end(ap);
    return p;
}

/* The formats are built at run time from the grammar above. */
#if defined(__clang__)
#  pragma clang diagnostic ignored "-Wformat-nonliteral"
#endif

/* The expected output: one vsnprintf pass into a buffer that holds what the
 * grammar makes (six conversions of at most 4096 bytes or 3000 digits, and
 * the literal text), measured and formatted again only past it. */
static char expected[64 * 1024];

static void format_op(void)
{
    args ar;
    char *want = expected, *got;
    int n;
    size_t size = arena_size(&a), fails = tb.failed;

    build(&ar);
    n = snprintf(expected, sizeof expected, fmt, ARGS(ar));
    TEST_CHECK(n >= 0);
    if ((size_t)n >= sizeof expected) {
        want = (char *)malloc((size_t)n + 1);
        TEST_CHECK(want != NULL);
        TEST_CHECK(snprintf(want, (size_t)n + 1, fmt, ARGS(ar)) == n);
    }
    got = below(2) ? arena_sprintf(&a, fmt, ARGS(ar)) : wrapper(&a, fmt, ARGS(ar));
    if (!got) {
        failed(fails, size);
    } else {
        TEST_CHECK(memcmp(got, want, (size_t)n + 1) == 0);
        TEST_CHECK(arena_size(&a) == size + (size_t)n + 1);
        keep((unsigned char *)got, (size_t)n + 1);
    }
    if (want != expected)
        free(want);
}

/* A value that moves the position: small, the room about left, past it. */
static void store(void)
{
    size_t size, fails = tb.failed, before = arena_size(&a);
    unsigned char *p;
    switch (below(4)) {
    case 0: size = 1 + below(64); break;
    case 1: size = 1 + below(budget); break;
    case 2: size = budget > 64 ? budget - below(64) : 1; break;
    default: size = budget + below(budget); break;
    }
    p = (unsigned char *)arena_alloc_aligned(&a, size, below(2) ? 1 : 0);
    if (!p) {
        failed(fails, before);
        return;
    }
    keep(p, size);
}

static void start(void)
{
    static const size_t budgets[] = {64, 128, 256, 1024, 4096};
    arena_allocator al = tb_allocator(&tb);
    unsigned kind = (unsigned)below(8);
    fixed = false;
    if (kind < 6) {
        budget = budgets[below(5)];
        arena_init_with(&a, budget, &al);
    } else {
        size_t len = 64 + below(sizeof buf - 63);
        fixed = kind == 7;
        arena_init_buffer(&a, buf, len, fixed ? NULL : &al);
        budget = len;
    }
    nvalues = nmarks = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t ops, k;

    in.p = data;
    in.n = size;
    record_errors();
    start();
    for (ops = 0; in.n && ops < MAX_OPS; ops++) {
        switch (below(12)) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4: format_op(); break;
        case 5:
        case 6: store(); break;
        case 7:
            if (nmarks < MAX_MARKS) {
                marks[nmarks].m = arena_save(&a);
                marks[nmarks].t = clock_;
                marks[nmarks].size = arena_size(&a);
                nmarks++;
            }
            break;
        case 8:
            if (nmarks) {
                k = below(nmarks);
                arena_rewind(&a, marks[k].m);
                TEST_CHECK(arena_size(&a) == marks[k].size);
                forget_after(marks[k].t);
                nmarks = k + 1;
            }
            break;
        case 9:
            arena_reset(&a);
            forget_after(0);
            nmarks = 0;
            break;
        case 10: tb.fail_at = tb.calls + 1 + below(3); break;
        default: format_op(); break;
        }
        check_values();
    }
    TEST_CHECK(arena_check(&a));
    arena_release(&a);
    TEST_CHECK(tb.live == 0);
    TEST_CHECK(recorded_errors.count == 0);
    restore_errors();
    return 0;
}
