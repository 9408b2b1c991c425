/* SPDX-License-Identifier: MIT */
/*
 * Shared by every benchmark binary: registration, the knobs every workload
 * agrees on, the limit proxies, and the generated log file of the ingest
 * workload.
 *
 * Naming.  A benchmark is "workload/case.../impl", e.g. "copy/16/warm/proxy";
 * its label (SetLabel) is the implementation's display name.  bench/run.py
 * groups rows by everything before the last '/', and finds in each group the
 * limit proxy ("proxy") and the glibc baseline ("glibc", or "glibc_calloc").
 * Every benchmark reports the work its iterations did as items (items_per_second,
 * a rate over CPU time); the report's ns/op is its inverse.
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

namespace bench {

// Values kept live per batch (copy-in, allocation, ingest rows).
constexpr size_t kBatch = 4096;
// The tree workload: 2^13 - 1 nodes.
constexpr int kTreeDepth = 13;
// The refs workload: 2^20 values of 32 bytes.
constexpr size_t kRefCount = size_t(1) << 20;
constexpr size_t kRefValue = 32;
// Scopes per iteration of the scoped-block workload (one scope is a few ns).
constexpr size_t kScopes = 256;

using Fn = std::function<void(benchmark::State &)>;
using Row = benchmark::internal::Benchmark *;

// Registers `name`, shown as `label`, whose iterations each do `items` units
// of work (items <= 0: `fn` reports its own items).
Row add(const std::string &name, const std::string &label, double items, Fn fn);
// Registers `name` as a row that reports `why` (e.g. "not installed").
Row absent(const std::string &name, const std::string &label, const char *why);

// The counters the rows share: bytes as bytes (shown in KiB, MiB), and a
// count per iteration (page faults per operation).
inline benchmark::Counter bytes_counter(double b)
{
    return benchmark::Counter(b, benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
}
inline benchmark::Counter per_iteration(double n)
{
    return benchmark::Counter(n, benchmark::Counter::kAvgIterations);
}

// `v`, hidden from the optimiser, so that a size is never a constant that
// would let the compiler specialise one implementation's copy.
size_t opaque(size_t v);

// Returns the free memory of this process's allocator to the OS; defined by
// each binary (glibc: malloc_trim).  The cold rows call it between batches.
void return_memory();

// Exits with a message unless malloc resolves to a library whose file name
// contains `lib` (the replacement pitfall: a "glibc" row measuring jemalloc).
void check_malloc_is(const char *lib);

// Peak resident set (VmHWM) of this process, KiB.
long peak_rss_kib();
// Resident set (VmRSS) of this process now, KiB.
long rss_kib();
// Minor page faults of this process so far (getrusage).
long minor_faults();

// Whether the suite runs in quick mode (BENCH_QUICK=1, which bench/run.py
// sets for --quick): the rows whose size it changes run shorter.
bool quick_mode();

// Parses the suite's own options, runs the benchmarks, returns the exit code.
// `--generate-ingest PATH MIB` writes the ingest log file and exits.
int run_main(int argc, char **argv);

// A source of bytes to copy: `size` bytes at a few different offsets, so that
// consecutive copies do not read the very same address.
class Source {
public:
    explicit Source(size_t size);
    ~Source() { std::free(buf_); }
    Source(const Source &) = delete;
    Source &operator=(const Source &) = delete;
    const char *at(size_t i) const { return buf_ + ((i & 7) << 4); }

private:
    char *buf_;
};

// The limit proxy: a bare bump pointer with one bounds check over a buffer
// sized for the batch.  No chunks, no counters, no alignment: the least work a
// batch can be stored with.  Kept in locals by the compiler (nothing escapes).
struct Bump {
    char *cur, *end;
    char *take(size_t n)
    {
        if (static_cast<size_t>(end - cur) < n)
            std::abort();
        char *p = cur;
        cur += n;
        return p;
    }
};

// The ingest workload's log file: `path` of `mib` MiB, deterministic.
bool generate_ingest(const char *path, size_t mib);
// The file the ingest rows read (BENCH_INGEST_FILE), or NULL.
const char *ingest_file();

// Forces `p`'s pointee to be considered read and written.
inline void touch(void *p)
{
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
}

} // namespace bench

#endif
