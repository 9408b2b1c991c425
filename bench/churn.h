/* SPDX-License-Identifier: MIT */
/*
 * The churn workload (section 14), shared by bench_arena.cc (libarena) and
 * malloc_family.cc (one binary per malloc): one batch that frees as it goes.
 *
 * A sequence is a set of slots holding about kChurnLive bytes, each filled
 * once, then kChurnSteps steps that each free the value of a random slot
 * and allocate a new one of a random size into it (random lifetimes:
 * geometric, of mean slots steps), then every slot freed.  Sizes are drawn
 * from one of four distributions of 1..4096 bytes: uniform, log-uniform (an
 * octave 2^k..2^(k+1)-1 drawn uniformly, k in 0..11), bimodal (80% 16..64,
 * 20% 2048..4096) and heavy-tailed (32/u, u uniform in (0, 1]: Pareto of
 * shape 1, capped at 4096).  The slot count is kChurnLive over the
 * distribution's mean.  The sequence is made by a seeded generator, the same
 * for every allocator, and each iteration replays it whole: every
 * allocation, then every free, is one pair of the row's rate.  A value is
 * written at its first and last byte and once per page between, so that
 * the resident set counts every page an allocator hands out.
 */
#ifndef BENCH_CHURN_H
#define BENCH_CHURN_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"

namespace bench {

constexpr size_t kChurnLive = 200 * 1024;
constexpr size_t kChurnMaxSize = 4096;
// Steps per iteration; quick mode (BENCH_QUICK=1) replays a shorter one.
inline size_t churn_steps() { return quick_mode() ? 20000 : 100000; }

constexpr const char *kChurnDists[] = {"uniform", "loguniform", "bimodal", "pareto"};

struct ChurnOp {
    uint32_t slot, size, old_size;
};

struct ChurnSeq {
    std::vector<uint32_t> initial; // the slots' first sizes
    std::vector<ChurnOp> ops;
    std::vector<uint32_t> last; // the slots' sizes after the last step
    size_t peak_live = 0;       // the most bytes live at once (the sizes asked)
    size_t pairs() const { return initial.size() + ops.size(); }
};

inline size_t churn_draw(uint64_t &s, int dist)
{
    auto below = [&s](size_t n) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return static_cast<size_t>((s * 0x2545F4914F6CDD1Dull) % n);
    };
    switch (dist) {
    case 0:
        return 1 + below(kChurnMaxSize);
    case 1: {
        size_t k = below(12);
        return (size_t(1) << k) + below(size_t(1) << k);
    }
    case 2:
        return below(5) ? 16 + below(49) : 2048 + below(2049);
    default: {
        size_t u = 1 + below(size_t(1) << 24);
        return u <= (size_t(32) << 24) / kChurnMaxSize ? kChurnMaxSize : (size_t(32) << 24) / u;
    }
    }
}

// The sequence of distribution `dist` (an index of kChurnDists), made once
// per process.
inline const ChurnSeq &churn_sequence(int dist)
{
    static std::unique_ptr<ChurnSeq> made[4];
    if (made[dist])
        return *made[dist];
    auto q = std::make_unique<ChurnSeq>();
    uint64_t s = 0x9E3779B97F4A7C15ull + 7919u * static_cast<uint64_t>(dist);
    size_t sum = 0, samples = 4096;
    for (size_t i = 0; i < samples; i++)
        sum += churn_draw(s, dist);
    size_t slots = kChurnLive * samples / sum, live = 0;
    q->initial.reserve(slots);
    for (size_t i = 0; i < slots; i++) {
        q->initial.push_back(static_cast<uint32_t>(churn_draw(s, dist)));
        live += q->initial.back();
    }
    q->last = q->initial;
    q->peak_live = live;
    size_t steps = churn_steps();
    q->ops.reserve(steps);
    uint64_t pick = s ^ 0xD1B54A32D192ED03ull;
    for (size_t i = 0; i < steps; i++) {
        pick ^= pick << 13;
        pick ^= pick >> 7;
        pick ^= pick << 17;
        auto k = static_cast<uint32_t>((pick * 0x2545F4914F6CDD1Dull) % slots);
        auto n = static_cast<uint32_t>(churn_draw(s, dist));
        q->ops.push_back({k, n, q->last[k]});
        live = live - q->last[k] + n;
        q->last[k] = n;
        if (live > q->peak_live)
            q->peak_live = live;
    }
    made[dist] = std::move(q);
    return *made[dist];
}

inline void churn_write(void *p, size_t n)
{
    auto *b = static_cast<unsigned char *>(p);
    for (size_t off = 0; off < n; off += 4096)
        b[off] = static_cast<unsigned char>(off);
    b[n - 1] = 1;
}

// Replays `q` once: alloc(n) returns a block of n bytes (nullptr: failure),
// release(p, n) frees it.  `slots` holds q.initial.size() pointers.  False
// on a failed allocation (everything allocated is freed all the same).
template <class Alloc, class Release>
bool churn_once(const ChurnSeq &q, std::vector<void *> &slots, Alloc alloc, Release release)
{
    bool ok = true;
    size_t n = q.initial.size();
    for (size_t i = 0; i < n; i++) {
        slots[i] = alloc(q.initial[i]);
        if (!slots[i])
            return false;
        churn_write(slots[i], q.initial[i]);
    }
    for (const ChurnOp &op : q.ops) {
        if (slots[op.slot])
            release(slots[op.slot], op.old_size);
        void *p = alloc(op.size);
        if (p)
            churn_write(p, op.size);
        ok &= p != nullptr;
        slots[op.slot] = p;
    }
    touch(slots.data());
    for (size_t i = 0; i < n; i++)
        if (slots[i])
            release(slots[i], q.last[i]);
    return ok;
}

// Runs the row: one replay per iteration, `end()` after each (the arena's
// reset; nothing for a malloc); reports the peak live bytes, the peak RSS and
// the RSS when the row first began, *start_kib (-1 until then: Google
// Benchmark calls the body more than once), taken after the sequence was
// made.  bench/run.py runs each churn row in a process of its own.
template <class Alloc, class Release, class End>
void churn_row(benchmark::State &st, int dist, long *start_kib, Alloc alloc, Release release,
               End end)
{
    const ChurnSeq &q = churn_sequence(dist);
    std::vector<void *> slots(q.initial.size());
    if (*start_kib < 0)
        *start_kib = rss_kib();
    bool ok = churn_once(q, slots, alloc, release);
    end();
    for (auto _ : st) {
        ok &= churn_once(q, slots, alloc, release);
        end();
    }
    if (!ok)
        return st.SkipWithError("allocation failed");
    st.SetItemsProcessed(static_cast<int64_t>(q.pairs()) * st.iterations());
    st.counters["peak_live"] = bytes_counter(static_cast<double>(q.peak_live));
    st.counters["slots"] = static_cast<double>(q.initial.size());
    st.counters["steps"] = static_cast<double>(q.ops.size());
    st.counters["peak_RSS"] = bytes_counter(1024.0 * static_cast<double>(peak_rss_kib()));
    st.counters["start_RSS"] = bytes_counter(1024.0 * static_cast<double>(*start_kib));
}

inline std::string churn_name(int dist, const std::string &impl)
{
    return std::string("churn/") + kChurnDists[dist] + "/" + impl;
}

} // namespace bench

#endif
