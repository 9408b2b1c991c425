/* SPDX-License-Identifier: MIT */
/*
 * Request-scoped memory and threads: the shapes of the request and
 * scaling workloads, shared by bench_arena.cc (libarena's cache and shared
 * arena) and malloc_family.cc (one binary per malloc).
 *
 *   request/512/zeroed   a request takes memory, gets one zeroed 512 B block,
 *                        fills it, and ends (kScopes per iteration);
 *   request/100/small    a request stores 100 values of 16..128 B, writes
 *                        each, and ends (all freed);
 *   threads/<T>          T threads each store kThreadBatches batches of
 *                        kThreadBatch 32-byte copies, each batch dropped at
 *                        once.
 *
 * The scaling rows run their own worker threads (Google Benchmark's
 * ->Threads() would rename the rows) and measure the CPU time of the whole
 * process (MeasureProcessCPUTime), so that their rate of values is per
 * second of CPU time of all the threads; the wall time stays in real_time.
 * On a shared machine the wall time counts what other processes take, CPU
 * time does not, while contention between the threads (lines moving between
 * cores, a lock) still burns CPU.  Perfect scaling keeps the CPU time per
 * value flat from 1 to T threads.
 */
#ifndef BENCH_THREADS_H
#define BENCH_THREADS_H

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "harness.h"
#include "workloads.h"

namespace bench {

// Values per request of request/100/small.
constexpr size_t kSmallValues = 100;
// Batches per thread per iteration of the scaling rows, values per batch,
// and the value size.  A batch is 1 MiB a thread, so that ending it together
// (a futex sleep and wake on this project's VM: 10-25 us) is not most of what
// the rows measure: with batches of 4096 values (7 us of work for a bump
// pointer) even the limit proxy, a bump pointer per thread, took 2.2-3.1x the
// CPU per value at 2 threads that it takes at 1.
constexpr size_t kThreadBatches = 16;
constexpr size_t kThreadBatch = 32768;
constexpr size_t kThreadValue = 32;
// Thread counts of the scaling rows (a 2-core machine: 1 and 2).
constexpr int kThreadCounts[] = {1, 2};

// The size of value k of request i: 16..128 bytes.
inline size_t small_size(size_t i) { return 16 + (i * 37) % 113; }

// request/512/zeroed: `take(n)` returns the zeroed block of one request and
// `end()` ends the request.
template <class Take, class End> bool zeroed_request(size_t n, Take take, End end)
{
    bool ok = use_zeroed(take(n), n);
    end();
    return ok;
}

// request/100/small: `alloc(n)` stores one value (written and made visible);
// `end(values)` ends the request.
template <class Alloc, class End> bool small_request(size_t base, Alloc alloc, End end)
{
    void *v[kSmallValues];
    bool ok = true;
    for (size_t k = 0; k < kSmallValues; k++) {
        size_t n = opaque(small_size(base + k));
        v[k] = alloc(n);
        if (!v[k]) {
            ok = false;
            continue;
        }
        std::memcpy(v[k], &k, sizeof k);
        touch(v[k]);
    }
    end(v);
    return ok;
}

// Worker threads that run `work(thread index)` once per iteration of the
// benchmark loop, all together (a barrier before and after).
class Crew {
public:
    using Work = std::function<bool(int)>;
    Crew(int threads, Work work) : n_(threads), work_(std::move(work))
    {
        pthread_barrier_init(&go_, nullptr, unsigned(n_ + 1));
        pthread_barrier_init(&done_, nullptr, unsigned(n_ + 1));
        for (int i = 0; i < n_; i++)
            pthread_create(&t_[i], nullptr, run, new Arg{this, i});
    }
    ~Crew()
    {
        stop_ = true;
        pthread_barrier_wait(&go_);
        for (int i = 0; i < n_; i++)
            pthread_join(t_[i], nullptr);
        pthread_barrier_destroy(&go_);
        pthread_barrier_destroy(&done_);
    }
    Crew(const Crew &) = delete;
    Crew &operator=(const Crew &) = delete;
    // One iteration: every thread runs the work once.
    void round()
    {
        pthread_barrier_wait(&go_);
        pthread_barrier_wait(&done_);
    }
    size_t failures() const { return fails_; }

private:
    struct Arg {
        Crew *crew;
        int index;
    };
    static void *run(void *p)
    {
        Arg a = *static_cast<Arg *>(p);
        delete static_cast<Arg *>(p);
        for (;;) {
            pthread_barrier_wait(&a.crew->go_);
            if (a.crew->stop_)
                return nullptr;
            if (!a.crew->work_(a.index))
                __atomic_add_fetch(&a.crew->fails_, 1, __ATOMIC_RELAXED);
            pthread_barrier_wait(&a.crew->done_);
        }
    }
    int n_;
    Work work_;
    pthread_t t_[16];
    pthread_barrier_t go_, done_;
    bool stop_ = false; // written before the go barrier it is read after
    size_t fails_ = 0;
};

// The end of a batch for threads that share one instance: every thread
// waits, and the last to arrive runs `last()` (the reset of what they share)
// before any is released, so that no thread stores into the next batch
// before the reset.  One wait per batch: a thread that must wait sleeps once
// on a futex and is woken once, and a thread that need not wait (the last,
// or the only one) makes no system call.  A pthread barrier, a reset by one
// thread and a second barrier cost two sleeps and wakes, and glibc's barrier
// wakes unconditionally: even at 1 thread that was two system calls per
// batch, 0.6-0.8 ns of CPU per value on this project's VM.  No spinning: on
// a machine shared with other work a waiting thread often waits for one that
// was preempted, and the spin burns CPU that the row counts.
class BatchEnd {
public:
    explicit BatchEnd(int threads) : n_(threads), left_(threads) {}
    BatchEnd(const BatchEnd &) = delete;
    BatchEnd &operator=(const BatchEnd &) = delete;
    template <class Last> void wait(Last last)
    {
        // Read before this thread counts itself: the generation cannot move
        // on before that.
        unsigned gen = gen_.load(std::memory_order_acquire);
        if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            last();
            left_.store(n_, std::memory_order_relaxed);
            gen_.store(gen + 1, std::memory_order_seq_cst);
            if (sleepers_.load(std::memory_order_seq_cst) != 0)
                futex(FUTEX_WAKE_PRIVATE, unsigned(n_));
            return;
        }
        // Counted as a sleeper before the last look at the generation: the
        // last thread's store and its look at the count are ordered the other
        // way round, so one of the two sees the other (and FUTEX_WAIT returns
        // at once when the generation has moved on).
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        while (gen_.load(std::memory_order_seq_cst) == gen)
            futex(FUTEX_WAIT_PRIVATE, gen);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }

private:
    void futex(int op, unsigned val)
    {
        static_assert(sizeof(std::atomic<unsigned>) == sizeof(unsigned), "a futex is a plain word");
        syscall(SYS_futex, reinterpret_cast<unsigned *>(&gen_), op, val, nullptr, nullptr, 0);
    }
    const int n_;
    std::atomic<int> left_;
    std::atomic<unsigned> gen_{0};
    std::atomic<int> sleepers_{0};
};

// Registers a scaling row: `threads` workers each run `work(index)` (one
// thread's kThreadBatches batches) per iteration; its items are every value
// stored by all threads, "workers" is the thread count.
template <class Add>
void scaling_row(Add add_row, const std::string &name, const std::string &label, int threads,
                 Crew::Work work)
{
    double values = double(kThreadBatches * kThreadBatch) * threads;
    add_row(name, label, values, [threads, work](benchmark::State &st) {
        Crew crew(threads, work);
        crew.round(); // warm: chunks, runs, the allocator's caches
        for (auto _ : st)
            crew.round();
        st.counters["workers"] = threads;
        if (crew.failures())
            st.SkipWithError("allocation failed");
    })->MeasureProcessCPUTime();
}

// The bytes every scaling row copies.
inline const char *thread_source()
{
    static const char src[kThreadValue + 1] = "0123456789abcdef0123456789abcde";
    return src;
}

// One thread's batches through malloc: kThreadBatch copies, then all freed.
inline bool malloc_batches()
{
    std::vector<void *> live(kThreadBatch);
    bool ok = true;
    for (size_t b = 0; b < kThreadBatches; b++) {
        for (size_t i = 0; i < kThreadBatch; i++) {
            void *p = std::malloc(kThreadValue);
            ok = ok && p;
            live[i] = p ? std::memcpy(p, thread_source(), kThreadValue) : p;
        }
        touch(live.data());
        for (size_t i = 0; i < kThreadBatch; i++)
            std::free(live[i]);
    }
    return ok;
}

// The malloc rows, for one allocator (malloc_family.cc: `name` is
// BENCH_MALLOC_NAME, `label` its display name, `row` registers or reports
// "not installed").
template <class AddRow>
void register_threads_malloc(const std::string &name, const std::string &label, AddRow row)
{
    row("request/512/zeroed/" + name + "_calloc", name + " calloc+free", kScopes,
        [](benchmark::State &st) {
            size_t n = opaque(512);
            scoped(st, n, [](size_t m) {
                void *p = nullptr;
                return zeroed_request(
                    m, [&](size_t k) { return p = std::calloc(1, k); }, [&] { std::free(p); });
            });
        });
    row("request/100/small/" + name, label, 1, [](benchmark::State &st) {
        size_t base = 0, fails = 0;
        for (auto _ : st)
            fails += !small_request(
                base++, [](size_t n) { return std::malloc(n); },
                [](void **v) {
                    for (size_t k = 0; k < kSmallValues; k++)
                        std::free(v[k]);
                });
        if (fails)
            st.SkipWithError("allocation failed");
    });
    for (int t : kThreadCounts)
        scaling_row(row, "threads/" + std::to_string(t) + "/" + name, label, t,
                    [](int) { return malloc_batches(); });
}

// libarena's rows (bench_threads.cc).
void register_threads_arena();

} // namespace bench

#endif
