#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the suite's targets against the last run of bench/run.py.

    bench/targets.py [--results bench/results/latest.json]

Reads the rows' medians that bench/run.py wrote, prints one line per target
and row (MET, MISSED, or n/a where a row has no figure), and writes the same
table into the markdown reports of that run (bench/results/latest.md, and
docs/benchmarks.md after --docs).  A missed target is news, not a failure:
the exit status is 0 unless the results cannot be read.  A run filtered with
--filter checks only the targets whose rows it ran.

Python 3 standard library only.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from run import (CLIENT_CHURN, TARGETS_MARKER, is_libarena, is_malloc,  # noqa: E402
                 is_reference, md_table)

MIB = 1048576.0


class Rows:
    def __init__(self, doc):
        self.order = [r["name"] for r in doc["rows"]]
        self.by_name = {r["name"]: r for r in doc["rows"]}

    def figure(self, name, k):
        r = self.by_name.get(name)
        return None if r is None or r["error"] else r["figures"].get(k)

    def ns(self, name):
        return self.figure(name, "ns")

    def label(self, name):
        r = self.by_name.get(name)
        return r["label"] if r else name.rsplit("/", 1)[1]

    def error(self, name):
        r = self.by_name.get(name)
        return (r and r["error"]) or ""

    def net_peak(self, name):
        """Peak RSS above the RSS at the row's start; None without figures."""
        p, s = self.figure(name, "peak_RSS"), self.figure(name, "start_RSS")
        return p - s if p and s and s > 0 else None

    def group(self, g):
        """[(impl, name)] of the rows of group g."""
        return [(n.rsplit("/", 1)[1], n) for n in self.order if n.rsplit("/", 1)[0] == g]

    def peers(self, g):
        """[(impl, ns)] of the rows of g that are neither libarena nor a yardstick."""
        return [(i, self.ns(n)) for i, n in self.group(g)
                if not is_libarena(i) and not is_reference(i) and self.ns(n)]


def targets(rows):
    """[(target, group, impl, ok or None, figures)]"""
    t = []
    ns = rows.ns

    def proxy(target, g, impl, limit, peer=None, peer_filter=None, peer_slack=1.0):
        """Within `limit` x the limit proxy; with `peer`, also not slower than the best of
        the peers that pass peer_filter (times peer_slack)."""
        x, p = ns(g + "/" + impl), ns(g + "/proxy")
        if x is None or p is None:
            t.append((target, g, impl, None, rows.error(g + "/" + impl)))
            return
        ok, notes = x / p <= limit, ["%.2fx proxy (<= %.2f)" % (x / p, limit)]
        ps = [iv for iv in rows.peers(g) if peer_filter is None or peer_filter(iv[0])]
        if peer and ps:
            best = min(ps, key=lambda iv: iv[1])
            ok = ok and x <= best[1] * peer_slack
            notes.append("best %s: %s %.2fx of ours" % (peer, rows.label(g + "/" + best[0]),
                                                        best[1] / x))
        t.append((target, g, impl, ok, "; ".join(notes)))

    def faster(target, g, impl, peer, factor):
        x, p = ns(g + "/" + impl), ns(g + "/" + peer)
        if x is None or p is None:
            t.append((target, g, impl, None, "%s or %s missing" % (impl, peer)))
            return
        t.append((target, g, impl, p / x >= factor, "%.2fx faster than %s (>= %.2f)" % (
            p / x, rows.label(g + "/" + peer), factor)))

    for size in (16, 256, 4096):
        for impl in ("arena_copy", "arena_strndup", "arena_ref_copy"):
            proxy("copy-in within 1.25x of proxy, faster than every peer",
                  "copy/%d/warm" % size, impl, 1.25, peer="peer")
    proxy("16 B alloc within 1.25x of proxy", "alloc/16", "arena_alloc", 1.25)
    x, base = ns("alloc/16/arena_alloc_limited"), ns("alloc/16/arena_alloc")
    if x is None or base is None:
        t.append(("16 B alloc with a limit set: as fast (within 5%)", "alloc/16",
                  "arena_alloc_limited", None, rows.error("alloc/16/arena_alloc_limited")))
    else:
        t.append(("16 B alloc with a limit set: as fast (within 5%)", "alloc/16",
                  "arena_alloc_limited", x / base <= 1.05,
                  "%.3fx arena_alloc (<= 1.05)" % (x / base)))
    for name in rows.order:
        if name.startswith("pool/") and name.endswith("/arena_pool"):
            proxy("pool within 1.3x of free list, at least 2x faster than mimalloc",
                  name.rsplit("/", 1)[0], "arena_pool", 1.3, peer="mimalloc",
                  peer_filter=lambda i: i == "mimalloc", peer_slack=0.5)
    for size in (512, 1024, 4096):
        for impl in ("arena_stack", "arena_heap", "arena_rewind"):
            proxy("scoped zeroed within 1.2x of proxy, faster than every calloc%s"
                  % (" (not slower at 4 KiB)" if size == 4096 else ""),
                  "scoped/%d/zeroed" % size, impl, 1.2, peer="calloc",
                  peer_filter=lambda i: i.endswith("_calloc"))
    for impl in ("arena_cleanup_push", "arena_cleanup_run"):
        x, base = ns("alloc/48/" + impl), ns("alloc/48/arena_alloc")
        target = "cleanup register, run: each within 2 ns of a 48 B arena_alloc"
        if x is None or base is None:
            t.append((target, "alloc/48", impl, None, rows.error("alloc/48/" + impl)))
        else:
            t.append((target, "alloc/48", impl, x - base <= 2.0,
                      "%.2f ns against %.2f: +%.2f ns (<= 2)" % (x, base, x - base)))
    proxy("tree within 1.2x of proxy", "tree/depth13", "arena", 1.2)
    calls = rows.figure("child/64x48/arena_child", "parent_calls/cycle")
    growth = rows.figure("child/64x48/arena_child", "parent_growth")
    t.append(("child arenas: the parent flat, no backing call once warm", "child/64x48",
              "arena_child", None if calls is None or growth is None else
              calls == 0 and growth == 0,
              "" if calls is None or growth is None else
              "%.4f parent backing calls per cycle, parent grew %d bytes" % (calls, growth)))
    for peer in ("apr", "talloc", "arena_fresh"):
        faster("child arenas: a cycle faster than the peer's", "child/64x48", "arena_child", peer,
               1.0)
    faster("tree >= 3x faster than malloc/free", "tree/depth13", "arena", "glibc", 3.0)
    for name in rows.order:
        if name.startswith("refs/") and name.endswith("/arena_ref"):
            proxy("ref resolution within 2x of a plain pointer", name.rsplit("/", 1)[0],
                  "arena_ref", 2.0)

    for m in ("glibc", "mimalloc"):
        faster("request (512 B zeroed) below calloc+free", "request/512/zeroed",
               "arena_cache", m + "_calloc", 1.0)
    faster("request (100 small) >= 5x below malloc/free", "request/100/small", "arena_cache",
           "glibc", 5.0)
    for g in ("request/512/zeroed", "request/100/small"):
        x, base = ns(g + "/arena_cache_guard_interval"), ns(g + "/arena_cache")
        target = "request: guard sampled by time (1 s) within 1% of none"
        if x is None or base is None:
            t.append((target, g, "arena_cache_guard_interval", None,
                      rows.error(g + "/arena_cache_guard_interval")))
        else:
            t.append((target, g, "arena_cache_guard_interval", x / base <= 1.01,
                      "%.3fx arena_cache (<= 1.01)" % (x / base)))
    for th in ("1", "2"):
        for impl in ("arena_cache", "arena_shared"):
            for m in ("glibc", "mimalloc", "jemalloc"):
                faster("threads: faster than every malloc", "threads/" + th, impl, m, 1.0)
    def growth(impl, what):
        one, two = ns("threads/1/" + impl), ns("threads/2/" + impl)
        return "; %s %.2fx" % (what, two / one) if one and two else ""

    for impl in ("arena_cache", "arena_shared"):
        one, two = ns("threads/1/" + impl), ns("threads/2/" + impl)
        if one and two:
            t.append(("threads: scales (CPU per value at 2 threads <= 1.25x of 1)", "threads/2",
                      impl, two / one <= 1.25,
                      "%.2fx: %.2f ns/value at 1 thread, %.2f at 2" % (two / one, one, two) +
                      growth("proxy", "limit proxy (ending the batches together)") +
                      (growth("arena_shared_own", "one shared arena per thread")
                       if impl == "arena_shared" else "")))
        else:
            t.append(("threads: scales (CPU per value at 2 threads <= 1.25x of 1)", "threads/2",
                      impl, None, ""))
    for g in ("cxx/vector_string", "cxx/map"):
        for impl in ("arena_resource", "arena_monotonic"):
            faster("C++: libarena's resources ahead of std::pmr::monotonic_buffer_resource", g,
                   impl, "pmr_monotonic", 1.0)
    cxx_groups = []
    for name in rows.order:
        g = name.rsplit("/", 1)[0]
        if name.startswith("cxx/") and g not in cxx_groups:
            cxx_groups.append(g)
    for g in cxx_groups:
        faster("C++: libarena::resource ahead of the pool resource", g, "arena_resource",
               "pmr_pool", 1.0)
        faster("C++: libarena::resource within 1.5x of the monotonic resource", g,
               "arena_resource", "pmr_monotonic", 1 / 1.5)
        held_target(rows, t, g)
    for name in rows.order:
        if name.startswith("pool/") and name.endswith("/arena_pool_cxx"):
            g = name.rsplit("/", 1)[0]
            x, c = ns(name), ns(g + "/arena_pool")
            if x is None or c is None:
                t.append(("C++: libarena::pool<T> within 2% of the C pool", g, "arena_pool_cxx",
                          None, rows.error(name)))
            else:
                t.append(("C++: libarena::pool<T> within 2% of the C pool", g, "arena_pool_cxx",
                          x / c <= 1.02, "%.3fx the C pool (<= 1.02)" % (x / c)))
    client_targets(rows, t)
    churn_targets(rows, t)
    huge_targets(rows, t)
    return t


def huge_targets(rows, t):
    """The huge batch (section 16), where the OS offers transparent huge pages: a cold
    batch of libarena takes at least 100x fewer page faults than the same batch with
    ARENA_HUGE_PAGES=0.  Where huge pages are not offered the two rows are the same
    code, and the target is missed: the report's header says the machine's setting."""
    g = "huge/256M/cold"
    on, off = rows.figure(g + "/arena", "faults/batch"), rows.figure(g + "/arena_nohuge",
                                                                    "faults/batch")
    t.append(("huge batch: cold page faults >= 100x fewer than with ARENA_HUGE_PAGES=0", g,
              "arena", None if on is None or off is None else off >= 100 * max(on, 1),
              rows.error(g + "/arena") or rows.error(g + "/arena_nohuge") or
              ("" if on is None or off is None else
               "%.0f faults per batch against %.0f (%.0fx fewer)" % (on, off, off / max(on, 1)))))


def churn_targets(rows, t):
    """Values freed one by one inside a batch.  Section 14, each distribution:
    libarena's time per alloc/free pair at most glibc's; its peak RSS (above the row's
    start) within 1.25x of glibc's plus 1 MiB; what the arena held at most within 3x
    the peak of the live bytes plus two chunk budgets.  Section 15, each container:
    libarena::resource ahead of std::pmr::unsynchronized_pool_resource, within 1.5x of
    std::pmr::monotonic_buffer_resource's time, and holding at most what the pool resource
    took from upstream."""
    groups = []
    for name in rows.order:
        g = name.rsplit("/", 1)[0]
        if name.startswith("churn/") and g not in groups:
            groups.append(g)
    for g in groups:
        glibc_ns, glibc_rss = rows.ns(g + "/glibc"), rows.net_peak(g + "/glibc")
        for impl in ("arena_reuse", "arena_lua"):
            name = g + "/" + impl
            if name not in rows.by_name:
                continue
            x, rss = rows.ns(name), rows.net_peak(name)
            held, live = rows.figure(name, "peak_held"), rows.figure(name, "peak_live")
            budget = rows.figure(name, "budget")
            t.append(("churn: time per pair at most glibc's", g, impl,
                      None if x is None or glibc_ns is None else x <= glibc_ns,
                      rows.error(name) or ("glibc missing" if glibc_ns is None else
                                           "%.2fx of glibc's time" % (x / glibc_ns))))
            t.append(("churn: peak RSS (above start) within 1.25x of glibc's + 1 MiB", g, impl,
                      None if rss is None or glibc_rss is None else
                      rss <= 1.25 * glibc_rss + MIB,
                      "" if rss is None or glibc_rss is None else
                      "%.1f MiB above start, glibc %.1f MiB (%.2fx)" % (
                          rss / MIB, glibc_rss / MIB, rss / glibc_rss)))
            t.append(("churn: peak held within 3x peak live + two chunk budgets", g, impl,
                      None if not held or not live or not budget else
                      held <= 3 * live + 2 * budget,
                      "" if not held or not live or not budget else
                      "%.0f KiB held, %.0f KiB live at most (%.2fx), budget %.0f KiB" % (
                          held / 1024, live / 1024, held / live, budget / 1024)))
    for c in ("map", "unordered_map", "unordered_map_reinsert", "list", "deque"):
        g = "cxx_churn/" + c
        mine, pool = rows.ns(g + "/arena_resource"), rows.ns(g + "/pmr_pool")
        if mine is None and pool is None:
            continue
        t.append(("C++: libarena::resource ahead of the pool resource", g,
                  "arena_resource", None if mine is None or pool is None else mine <= pool,
                  "" if mine is None or pool is None else
                  "%.2fx faster than %s" % (pool / mine, rows.label(g + "/pmr_pool"))))
        mono = rows.ns(g + "/pmr_monotonic")
        t.append(("C++: libarena::resource within 1.5x of the monotonic resource", g,
                  "arena_resource", None if mine is None or mono is None else mine <= 1.5 * mono,
                  "" if mine is None or mono is None else
                  "%.2fx the time of %s (<= 1.5)"
                  % (mine / mono, rows.label(g + "/pmr_monotonic"))))
        held_target(rows, t, g)


def held_target(rows, t, g):
    """The C++ rows that count what a resource took: libarena::resource's peak at most the
    pool resource's."""
    held = rows.figure(g + "/arena_resource", "peak_held")
    pool_held = rows.figure(g + "/pmr_pool", "peak_held")
    if not held and not pool_held:
        return
    t.append(("C++: peak held at most the pool resource's", g, "arena_resource",
              None if not held or not pool_held else held <= pool_held,
              "" if not held or not pool_held else "%.0f KiB, the pool %.0f KiB (%.2fx)" % (
                  held / 1024, pool_held / 1024, held / pool_held)))


def client_targets(rows, t):
    """The real clients, with default settings.  Every case: libarena's time never
    behind the best peer beyond 3% and within 1.05x of the case's limit proxy (a
    bare bump pointer that never frees); its peak RSS within 1.10x of the best malloc's (a bulk-drop
    malloc included); no page faults in steady state.  The churn cases, whose batches
    free as they go: time within 1.10x of glibc's, peak RSS within 1.25x of glibc's
    plus 1 MiB.  Peak RSS is taken net of the process's RSS when the row started:
    the harness binaries hold different amounts before any row runs (bench_arena
    links talloc, APR and GLib; tcmalloc's starts 4 MiB above glibc's)."""
    groups = []
    for name in rows.order:
        g = name.rsplit("/", 1)[0]
        if name.startswith("client/") and g not in groups:
            groups.append(g)
    for g in groups:
        churn = g.split("/", 1)[1] in CLIENT_CHURN
        ps = rows.peers(g)
        best = min(ps, key=lambda iv: iv[1]) if ps else None
        glibc_ns = rows.ns(g + "/glibc")
        bump = rows.ns(g + "/proxy")

        peak = rows.net_peak
        glibc_rss = peak(g + "/glibc")
        rss = [(i, peak(n)) for i, n in rows.group(g) if is_malloc(i)]
        rss = [iv for iv in rss if iv[1]]
        best_rss = min(rss, key=lambda iv: iv[1]) if rss else None
        for impl in ("arena", "arena_cache"):
            x = rows.ns(g + "/" + impl)
            if x is None:
                continue
            if best is None:
                t.append(("real client: not behind the best peer beyond 3%", g, impl, None,
                          "no peer row"))
            else:
                r = best[1] / x
                t.append(("real client: not behind the best peer beyond 3%", g, impl,
                          r >= 1 / 1.03, "best peer %s: %.2fx of ours" % (
                              rows.label(g + "/" + best[0]), r)))
            t.append(("real client: within 1.05x of the limit proxy", g, impl,
                      None if bump is None else x / bump <= 1.05,
                      "proxy missing" if bump is None else "%.2fx of the proxy" % (x / bump)))
            if churn:
                t.append(("churn client: time within 1.10x of glibc's", g, impl,
                          None if glibc_ns is None else x / glibc_ns <= 1.10,
                          "glibc missing" if glibc_ns is None else
                          "%.2fx of glibc's time" % (x / glibc_ns)))
        rss_target = "real client: peak RSS (above start) within 1.10x of the best malloc's"
        churn_rss_target = "churn client: peak RSS (above start) within 1.25x of glibc's + 1 MiB"
        for impl in ("arena", "arena_walk", "arena_cache"):
            mine = peak(g + "/" + impl)
            if mine is None:
                continue
            if best_rss is None:
                t.append((rss_target, g, impl, None, "no malloc row"))
            else:
                t.append((rss_target, g, impl, mine <= 1.10 * best_rss[1],
                          "%.1f MiB above start, best malloc %s %.1f MiB (%.2fx)" % (
                              mine / MIB, rows.label(g + "/" + best_rss[0]),
                              best_rss[1] / MIB, mine / best_rss[1])))
            if churn:
                t.append((churn_rss_target, g, impl,
                          None if glibc_rss is None else mine <= 1.25 * glibc_rss + MIB,
                          "glibc missing" if glibc_rss is None else
                          "%.1f MiB above start, glibc %.1f MiB (%.2fx)" % (
                              mine / MIB, glibc_rss / MIB, mine / glibc_rss)))
        for impl in ("arena", "arena_walk", "arena_cache"):
            f = rows.figure(g + "/" + impl, "faults/op")
            if f is None:
                continue
            t.append(("real client: zero minor faults per operation in steady state", g, impl,
                      f == 0, "%.2f faults/op after %d warm-up operations" % (
                          f, rows.figure(g + "/" + impl, "warmup") or 0)))


def verdict(ok):
    return "n/a" if ok is None else ("MET" if ok else "MISSED")


def write_section(path, section):
    """Puts `section` after the targets marker of `path`, in place of what was there,
    keeping the hand-written notes that may follow it."""
    with open(path) as f:
        text = f.read()
    if TARGETS_MARKER not in text:
        return False
    head, tail = text.split(TARGETS_MARKER, 1)
    notes = tail.find("<!-- notes:")
    rest = tail[notes:] if notes >= 0 else ""
    with open(path, "w") as f:
        f.write(head + TARGETS_MARKER + "\n\n" + section + ("\n" + rest if rest else ""))
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results", "latest.json"))
    a = ap.parse_args()
    try:
        with open(a.results) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("targets: cannot read %s: %s (run bench/run.py first)\n" % (a.results, e))
        return 2
    ts = targets(Rows(doc))
    if doc.get("filter"):
        # Targets of rows the filter left out are not news.
        ts = [x for x in ts if x[3] is not None]
    table = md_table(["target", "row", "result", "figures"],
                     [[target, g + " " + impl, verdict(ok), note]
                      for target, g, impl, ok, note in ts])
    count = lambda v: sum(1 for x in ts if x[3] is v)
    summary = "%d met, %d missed, %d without figures (%s run of %s)" % (
        count(True), count(False), count(None), "quick" if doc.get("quick") else "full",
        doc.get("run", "?"))
    section = "### Targets\n\n%s\n\n%s\n" % (table, summary)
    print(section)
    for path in doc.get("markdown", []):
        if os.path.exists(path) and write_section(path, section):
            sys.stderr.write("targets: wrote the table into %s\n" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
