/* SPDX-License-Identifier: MIT */
/*
 * The choices of the fuzz targets that keep models of their own (not
 * tests/model.h's): each is drawn from the input's bytes, in as few bytes as
 * cover it, so that each byte a fuzzer mutates is one decision; zeros once
 * the input is used up.
 */
#ifndef ARENA_FUZZ_INPUT_H
#define ARENA_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_input {
    const uint8_t *p;
    size_t n;
} fuzz_input;

static inline unsigned fuzz_byte(fuzz_input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

/* A choice in [0, n), n > 0. */
static inline size_t fuzz_below(fuzz_input *in, size_t n)
{
    size_t v = 0, span;
    for (span = 1; span < n; span <<= 8) {
        v = v << 8 | fuzz_byte(in);
        if (span > SIZE_MAX >> 8)
            break;
    }
    return v % n;
}

#endif /* ARENA_FUZZ_INPUT_H */
