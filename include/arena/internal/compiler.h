/* SPDX-License-Identifier: MIT */
/*
 * libarena: compiler and platform macros for the public headers.
 *
 * Included by arena.h.  Export and attribute macros, and the switches the
 * inline code reads: all of it is the library's, none of it API.
 */
#ifndef ARENA_INTERNAL_COMPILER_H
#define ARENA_INTERNAL_COMPILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Marks each exported function.  The one single-underscore name here: the
 * export checks (scripts/check-exports.sh) and the ABI tooling key on it. */
#if defined(_WIN32) && defined(ARENA_SHARED_LIBRARY)
#  if defined(ARENA_BUILDING)
#    define ARENA_API __declspec(dllexport)
#  else
#    define ARENA_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define ARENA_API __attribute__((visibility("default")))
#else
#  define ARENA_API
#endif

/* Some API functions are inline in the headers but also exported, so that
 * programs built against a header where they were plain calls still link
 * (arena_rewind(), arena_scope_end()).  Where ARENA__OUT_OF_LINE is set the
 * headers declare them instead, as calls; src/exported.c, which defines the
 * exported copies, also sets ARENA__DEFINE_OUT_OF_LINE. */

#if defined(__GNUC__) || defined(__clang__)
#  define ARENA__LIKELY(x)           __builtin_expect(!!(x), 1)
#  define ARENA__UNLIKELY(x)         __builtin_expect(!!(x), 0)
#  define ARENA__NODISCARD           __attribute__((warn_unused_result))
#  define ARENA__MALLOC              __attribute__((malloc))
#  define ARENA__ALLOC_SIZE(i)       __attribute__((alloc_size(i)))
#  define ARENA__NOINLINE            __attribute__((noinline))
#  define ARENA__CONSTANT(x)         __builtin_constant_p(x)
#  define ARENA__COLD                __attribute__((cold))
#  define ARENA__FORMAT_PRINTF(f, v) __attribute__((format(printf, f, v)))
#else
#  define ARENA__LIKELY(x)   (x)
#  define ARENA__UNLIKELY(x) (x)
#  define ARENA__NODISCARD
#  define ARENA__MALLOC
#  define ARENA__ALLOC_SIZE(i)
#  define ARENA__NOINLINE
#  define ARENA__CONSTANT(x) 0
#  define ARENA__COLD
#  define ARENA__FORMAT_PRINTF(f, v)
#endif

#ifdef __cplusplus
#  define ARENA__ALIGNOF(T) alignof(T)
#  define ARENA__MAX_ALIGN  alignof(max_align_t)
#else
#  define ARENA__ALIGNOF(T) _Alignof(T)
#  define ARENA__MAX_ALIGN  _Alignof(max_align_t)
#endif

/* The inline protocol.  The inline functions (internal/arena.h, internal/
 * pool.h) bump pointers and pop slots without calling the library, which
 * then neither sees nor tells the tools about what they hand out.  Three
 * switches, each narrower than the last, say whether they may:
 *   1. ARENA__INLINE_WINDOW, in the program's own build: 0 where that build
 *      is instrumented (ASan, ARENA_CHECKED), which compiles the inline paths
 *      out: every allocation is a call.
 *   2. The library's build and process: arena__instrumented() inside the
 *      library (its build instrumented, or the process under Valgrind),
 *      exported to the inline code as arena__inline_ok.  Where it is set, the
 *      library opens no window, so the inline paths find none open.
 *   3. Each object: an arena's window (ptr and end; NULL when closed), a
 *      pool's `open` (0 when closed), which the library sets by level 2 and
 *      by what the object holds.
 * An inline path runs only when all three allow it, and leaves the object
 * exactly as the library's path would. */
#if defined(ARENA_CHECKED) && ARENA_CHECKED
#  define ARENA__INLINE_WINDOW 0
#elif defined(__SANITIZE_ADDRESS__)
#  define ARENA__INLINE_WINDOW 0
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define ARENA__INLINE_WINDOW 0
#  endif
#endif
#ifndef ARENA__INLINE_WINDOW
#  define ARENA__INLINE_WINDOW 1
#endif

/* Multiplication with overflow detection (count * size). */
#if defined(__GNUC__) || defined(__clang__)
#  define ARENA__MUL_OVERFLOWS(a, b, out) __builtin_mul_overflow((a), (b), (out))
#else
static inline bool arena__mul_overflows(size_t a, size_t b, size_t *out)
{
    *out = a * b;
    return b != 0 && a > SIZE_MAX / b;
}
#  define ARENA__MUL_OVERFLOWS(a, b, out) arena__mul_overflows((a), (b), (out))
#endif

/* Alignment to `align`, a power of two: the bytes that take `p` up to a
 * multiple of it, and `p` rounded up (which wraps near the top of the
 * range: callers bound `p` first). */
static inline size_t arena__pad(uintptr_t p, size_t align)
{
    return (size_t)(-p & (uintptr_t)(align - 1));
}

static inline uintptr_t arena__align_up(uintptr_t p, size_t align)
{
    return (p + (align - 1)) & ~(uintptr_t)(align - 1);
}

/* Pastes after expanding (a unique name per line: ARENA_SCOPE). */
#define ARENA__CAT2(a, b) a##b
#define ARENA__CAT(a, b)  ARENA__CAT2(a, b)

#endif /* ARENA_INTERNAL_COMPILER_H */
