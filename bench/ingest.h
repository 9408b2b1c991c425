/* SPDX-License-Identifier: MIT */
/*
 * The ingest pipeline (workload 7), shared by the arena and malloc variants:
 * stream the generated log file through a 1 MiB read buffer, split each line
 * into fields, intern the low-cardinality labels (level, service, host,
 * region, verb), copy the rest (timestamp, user, path, message), build a row
 * per line, and drop each batch of 4096 rows once it has been consumed.
 *
 * `Store` is the only difference between the variants:
 *   char *copy(const char *s, size_t n);   NUL-terminated copy of a field
 *   char *label(const char *s, size_t n);  same, for an interned label
 *   LogRow *row();                         one uninitialised row
 *   void drop(LogRow **rows, size_t n);    the batch (and its labels) dies
 */
#ifndef BENCH_INGEST_H
#define BENCH_INGEST_H

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "harness.h"

namespace bench {

struct LogRow {
    const char *ts, *level, *svc, *host, *region, *user, *path, *verb, *msg;
    uint32_t path_len, msg_len;
    int64_t latency_us, bytes;
};

struct Span {
    const char *p;
    size_t n;
};

struct Fields {
    Span ts, level, svc, host, region, user, path, verb, msg;
    int64_t latency_us, bytes;
};

inline int64_t parse_int(Span s)
{
    int64_t v = 0;
    for (size_t i = 0; i < s.n; i++)
        v = v * 10 + (s.p[i] - '0');
    return v;
}

// "TS LEVEL key=value ... msg="text"": false for a line that is not one.
inline bool parse_line(const char *p, const char *end, Fields &f)
{
    // Field by field: `Fields f{}` compiled to a `rep stos` per line.
    const Span none{"", 0};
    f.svc = f.host = f.region = f.user = f.path = f.verb = f.msg = none;
    f.latency_us = f.bytes = 0;
    const char *sp = static_cast<const char *>(std::memchr(p, ' ', end - p));
    if (!sp)
        return false;
    f.ts = {p, size_t(sp - p)};
    p = sp + 1;
    sp = static_cast<const char *>(std::memchr(p, ' ', end - p));
    if (!sp)
        return false;
    f.level = {p, size_t(sp - p)};
    p = sp + 1;
    while (p < end) {
        const char *eq = static_cast<const char *>(std::memchr(p, '=', end - p));
        if (!eq)
            return false;
        Span key{p, size_t(eq - p)};
        const char *v = eq + 1;
        if (key.n == 3 && std::memcmp(key.p, "msg", 3) == 0) {
            if (v >= end || *v != '"' || end[-1] != '"' || end - v < 2)
                return false;
            f.msg = {v + 1, size_t(end - v - 2)};
            return true;
        }
        sp = static_cast<const char *>(std::memchr(v, ' ', end - v));
        if (!sp)
            sp = end;
        Span val{v, size_t(sp - v)};
        switch (key.n) {
        case 3:
            if (key.p[0] == 's')
                f.svc = val;
            break;
        case 4:
            if (key.p[0] == 'h')
                f.host = val;
            else if (key.p[0] == 'u')
                f.user = val;
            else if (key.p[0] == 'p')
                f.path = val;
            else if (key.p[0] == 'v')
                f.verb = val;
            break;
        case 5:
            f.bytes = parse_int(val);
            break;
        case 6:
            f.region = val;
            break;
        case 10:
            f.latency_us = parse_int(val);
            break;
        default:
            break;
        }
        p = sp + 1;
    }
    return false;
}

// Label interning for one batch: open addressing, cleared by bumping a
// generation instead of wiping the table.
class Interner {
public:
    template <class Store> const char *intern(Store &st, Span s)
    {
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < s.n; i++)
            h = (h ^ static_cast<unsigned char>(s.p[i])) * 1099511628211ull;
        for (size_t i = h & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
            Slot &e = slots_[i];
            if (e.gen != gen_) {
                e.s = st.label(s.p, s.n);
                if (!e.s)
                    return nullptr;
                e.gen = gen_;
                e.hash = h;
                e.len = static_cast<uint32_t>(s.n);
                return e.s;
            }
            if (e.hash == h && e.len == s.n && std::memcmp(e.s, s.p, s.n) == 0)
                return e.s;
        }
    }
    void clear()
    {
        if (++gen_ == 0) {
            std::memset(slots_, 0, sizeof slots_);
            gen_ = 1;
        }
    }

private:
    static constexpr size_t kSlots = 1024; // > the labels of one batch (~100)
    struct Slot {
        uint64_t hash;
        const char *s;
        uint32_t gen, len;
    };
    Slot slots_[kSlots] = {};
    uint32_t gen_ = 1;
};

// Reads every value of the batch, as a consumer would.
inline uint64_t consume(LogRow *const *rows, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        const LogRow *r = rows[i];
        sum += static_cast<uint64_t>(r->latency_us + r->bytes) + r->path_len + r->msg_len +
               static_cast<unsigned char>(r->level[0]) + static_cast<unsigned char>(r->svc[1]) +
               static_cast<unsigned char>(r->host[4]) + static_cast<unsigned char>(r->user[1]) +
               static_cast<unsigned char>(r->ts[18]);
    }
    return sum;
}

// Runs the pipeline over `path`; returns a checksum, sets *bytes (0 on error).
template <class Store> uint64_t ingest(const char *path, Store &st, size_t *bytes, size_t *lines)
{
    int fd = open(path, O_RDONLY);
    *bytes = *lines = 0;
    if (fd < 0)
        return 0;
    std::vector<char> buf(size_t(1) << 20);
    std::vector<LogRow *> rows(kBatch);
    Interner in;
    size_t have = 0, nrows = 0;
    uint64_t check = 0;
    bool ok = true;
    auto line = [&](const char *b, const char *e) {
        Fields f;
        if (!parse_line(b, e, f))
            return;
        LogRow *r = st.row();
        if (!r) {
            ok = false;
            return;
        }
        r->ts = st.copy(f.ts.p, f.ts.n);
        r->level = in.intern(st, f.level);
        r->svc = in.intern(st, f.svc);
        r->host = in.intern(st, f.host);
        r->region = in.intern(st, f.region);
        r->verb = in.intern(st, f.verb);
        r->user = st.copy(f.user.p, f.user.n);
        r->path = st.copy(f.path.p, f.path.n);
        r->msg = st.copy(f.msg.p, f.msg.n);
        r->path_len = static_cast<uint32_t>(f.path.n);
        r->msg_len = static_cast<uint32_t>(f.msg.n);
        r->latency_us = f.latency_us;
        r->bytes = f.bytes;
        rows[nrows++] = r;
        if (!r->ts || !r->level || !r->svc || !r->host || !r->region || !r->verb || !r->user ||
            !r->path || !r->msg)
            ok = false;
        ++*lines;
        if (nrows == kBatch) {
            check += consume(rows.data(), nrows);
            st.drop(rows.data(), nrows);
            in.clear();
            nrows = 0;
        }
    };
    for (;;) {
        ssize_t got = read(fd, buf.data() + have, buf.size() - have);
        if (got < 0) {
            ok = false;
            break;
        }
        have += static_cast<size_t>(got);
        *bytes += static_cast<size_t>(got);
        char *p = buf.data(), *e = p + have;
        while (char *nl = static_cast<char *>(std::memchr(p, '\n', e - p))) {
            line(p, nl);
            p = nl + 1;
        }
        if (got == 0 || !ok) {
            if (p < e)
                line(p, e);
            break;
        }
        have = static_cast<size_t>(e - p);
        std::memmove(buf.data(), p, have);
        if (have == buf.size()) { // a line longer than the buffer: not our file
            ok = false;
            break;
        }
    }
    close(fd);
    if (ok)
        check += consume(rows.data(), nrows);
    st.drop(rows.data(), nrows);
    if (!ok)
        *bytes = 0;
    return check;
}

// The ingest row's body, the same for every Store: runs the pipeline over the
// generated log once per iteration and reports bytes and lines (as rates)
// and the peak RSS.
template <class Store> void run_ingest(benchmark::State &st)
{
    const char *path = ingest_file();
    if (!path)
        return st.SkipWithError("BENCH_INGEST_FILE is not set");
    size_t bytes = 0, lines = 0;
    for (auto _ : st) {
        Store store;
        benchmark::DoNotOptimize(ingest(path, store, &bytes, &lines));
        if (!bytes)
            return st.SkipWithError("ingest failed");
    }
    st.SetBytesProcessed(static_cast<int64_t>(bytes) * st.iterations());
    st.SetItemsProcessed(static_cast<int64_t>(lines) * st.iterations());
    st.counters["peak_RSS"] = bytes_counter(1024.0 * static_cast<double>(peak_rss_kib()));
}

} // namespace bench

#endif
