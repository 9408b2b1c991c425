// SPDX-License-Identifier: MIT
// See harness.h.
#include "harness.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace bench {

Row add(const std::string &name, const std::string &label, double items, Fn fn)
{
    return benchmark::RegisterBenchmark(name.c_str(), [fn, label, items](benchmark::State &st) {
        st.SetLabel(label);
        fn(st);
        if (items > 0) // otherwise fn reports them (work known only after the run)
            st.SetItemsProcessed(
                static_cast<int64_t>(items * static_cast<double>(st.iterations())));
    });
}

Row absent(const std::string &name, const std::string &label, const char *why)
{
    std::string msg = why;
    return benchmark::RegisterBenchmark(name.c_str(), [msg, label](benchmark::State &st) {
        st.SetLabel(label);
        st.SkipWithError(msg.c_str());
        for (auto _ : st) {
        }
    });
}

size_t opaque(size_t v)
{
    benchmark::DoNotOptimize(v);
    return v;
}

void check_malloc_is(const char *lib)
{
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname || !std::strstr(info.dli_fname, lib)) {
        std::fprintf(stderr, "bench: malloc comes from %s, not %s: refusing to report it\n",
                     sym && info.dli_fname ? info.dli_fname : "?", lib);
        std::exit(3);
    }
    benchmark::AddCustomContext("malloc", info.dli_fname);
}

namespace {
// A "Vm...: N kB" line of /proc/self/status, KiB; -1 if absent.
long status_kib(const char *format)
{
    FILE *f = std::fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f)
        return -1;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, format, &kib) == 1)
            break;
    std::fclose(f);
    return kib;
}
} // namespace

long peak_rss_kib() { return status_kib("VmHWM: %ld kB"); }
long rss_kib() { return status_kib("VmRSS: %ld kB"); }

long minor_faults()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

bool quick_mode()
{
    const char *e = std::getenv("BENCH_QUICK");
    return e && std::strcmp(e, "1") == 0;
}

Source::Source(size_t size) : buf_(static_cast<char *>(std::malloc(size + 128)))
{
    if (!buf_)
        std::abort();
    for (size_t i = 0; i < size + 128; i++)
        buf_[i] = static_cast<char>('a' + i % 26);
}

// ---- The ingest log -------------------------------------------------------------

namespace {

struct Rng {
    uint64_t s;
    uint64_t next()
    {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    unsigned below(unsigned n) { return static_cast<unsigned>(next() % n); }
};

const char *const kLevels[] = {"DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"};
const char *const kServices[] = {"auth",   "billing", "catalog", "checkout", "gateway", "inventory",
                                 "orders", "payments", "search", "shipping", "users",  "web"};
const char *const kRegions[] = {"eu-west-1", "eu-central-1", "us-east-1",
                                "us-west-2", "ap-south-1",   "ap-northeast-1"};
const char *const kVerbs[] = {"GET", "POST", "PUT", "DELETE"};
const char *const kWords[] = {"request", "completed", "with",  "status", "cache", "miss",
                              "retrying", "upstream",  "timeout", "user", "session", "expired",
                              "payload",  "validated", "queued", "for",  "delivery", "ok"};

template <size_t N> const char *pick(Rng &r, const char *const (&a)[N]) { return a[r.below(N)]; }

} // namespace

bool generate_ingest(const char *path, size_t mib)
{
    std::string tmp = std::string(path) + ".tmp";
    FILE *f = std::fopen(tmp.c_str(), "w");
    if (!f)
        return false;
    Rng r{0x9e3779b97f4a7c15ull};
    size_t want = mib << 20, have = 0;
    char line[512];
    unsigned long long t = 1764460800000ull; // ms
    while (have < want) {
        t += r.below(50);
        int n = std::snprintf(
            line, sizeof line,
            "2026-11-30T%02llu:%02llu:%02llu.%03lluZ %s svc=%s host=web-%03u region=%s "
            "user=u%07u path=/api/v%u/%s/%u latency_us=%u bytes=%u verb=%s msg=\"",
            (t / 3600000) % 24, (t / 60000) % 60, (t / 1000) % 60, t % 1000, pick(r, kLevels),
            pick(r, kServices), r.below(64), pick(r, kRegions), r.below(5000000), 1 + r.below(3),
            pick(r, kServices), r.below(1000000), r.below(2000000), r.below(1 << 20),
            pick(r, kVerbs));
        unsigned words = 3 + r.below(10);
        for (unsigned w = 0; w < words; w++)
            n += std::snprintf(line + n, sizeof line - n, "%s%s", w ? " " : "", pick(r, kWords));
        n += std::snprintf(line + n, sizeof line - n, "\"\n");
        if (std::fwrite(line, 1, n, f) != static_cast<size_t>(n)) {
            std::fclose(f);
            return false;
        }
        have += n;
    }
    if (std::fclose(f) != 0)
        return false;
    return std::rename(tmp.c_str(), path) == 0;
}

const char *ingest_file()
{
    const char *p = std::getenv("BENCH_INGEST_FILE");
    return p && *p ? p : nullptr;
}

int run_main(int argc, char **argv)
{
    if (argc == 4 && std::strcmp(argv[1], "--generate-ingest") == 0) {
        if (!generate_ingest(argv[2], std::strtoul(argv[3], nullptr, 10))) {
            std::perror(argv[2]);
            return 1;
        }
        return 0;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

} // namespace bench
