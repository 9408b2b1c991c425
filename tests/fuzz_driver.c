/* SPDX-License-Identifier: MIT */
/*
 * A fuzz target's LLVMFuzzerTestOneInput() run without libFuzzer, so that its
 * model checks the library in every preset and with every compiler: first the
 * committed corpus (each file named on the command line), then pseudo-random
 * inputs of up to 1 KiB from a fixed seed (each run tries the same inputs).
 *
 *     driver [-n INPUTS] [-s SEED] [-only I] [FILE...]
 *
 * A failed check prints and aborts (TEST_NO_CMOCKA).  FUZZ_DRIVER_VERBOSE=1
 * in the environment names each input as it runs; -only I runs input I
 * alone and writes it to fuzz-driver-input.bin first, for the fuzz target
 * built with -DFUZZ_TRACE or a debugger.  -s SEED picks another sequence.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int replay(const char *path)
{
    static uint8_t buf[1 << 16];
    size_t n;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz driver: cannot open %s\n", path);
        return 1;
    }
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    static uint8_t buf[1024];
    unsigned long inputs = 20000, only = (unsigned long)-1, i;
    uint64_t seed = 0x9E3779B97F4A7C15u;
    int k, files = 0;

    for (k = 1; k < argc; k++) {
        if (strcmp(argv[k], "-n") == 0 && k + 1 < argc) {
            inputs = strtoul(argv[++k], NULL, 10);
        } else if (strcmp(argv[k], "-only") == 0 && k + 1 < argc) {
            only = strtoul(argv[++k], NULL, 10);
        } else if (strcmp(argv[k], "-s") == 0 && k + 1 < argc) {
            seed = strtoull(argv[++k], NULL, 0) | 1;
        } else {
            if (replay(argv[k]) != 0)
                return 1;
            files++;
        }
    }
    for (i = 0; i < inputs; i++) {
        size_t n = (size_t)(next(&seed) % sizeof buf), j;
        for (j = 0; j < n; j++)
            buf[j] = (uint8_t)next(&seed);
        if (only != (unsigned long)-1) {
            FILE *f;
            if (i != only)
                continue;
            f = fopen("fuzz-driver-input.bin", "wb");
            if (f) {
                fwrite(buf, 1, n, f);
                fclose(f);
            }
        }
        if (getenv("FUZZ_DRIVER_VERBOSE"))
            fprintf(stderr, "input %lu (%zu bytes)\n", i, n);
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz driver: %d corpus files, %lu random inputs: no finding\n", files, inputs);
    return 0;
}
