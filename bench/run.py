#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the benchmark suite and writes the report.

    bench/run.py [--build build-bench] [--quick] [--rounds N] [--repetitions N]
                 [--filter REGEX] [--docs]

Google Benchmark measures: every harness repeats each row (its repetitions,
randomly interleaved within the process), reports their median, each row's
work as a rate over CPU time (items_per_second; bytes_per_second for the
ingest and client rows), its display name as the label, and its counters
(faults per operation, peak RSS), in JSON.

This script does what one process cannot.  It runs every harness built in
BUILD/bench (bench_arena, and bench_malloc_<x>, one process per malloc, so
that no replacement malloc contaminates another row), ROUNDS times over,
interleaved, and takes the median of the rounds for every row: the machine
may be noisy, and ratios between rows of the same rounds are what the report
is about.  Each ingest, real-client, churn and huge-batch row runs in a
process of its own, so that its peak RSS (and page faults) are its own.  The
huge-batch rows run once more with ARENA_HUGE_PAGES=0 (libarena reads it once
per process), which names libarena's rows arena_nohuge.

Prints the tables (machine at the top) and writes them to
bench/results/latest.md, the rows' medians to bench/results/latest.json (what
bench/targets.py checks) and the chart to bench/results/speedups.svg
(gnuplot).  --docs also writes docs/benchmarks.md and its chart.  Exits
non-zero if a harness crashed or a row failed (a row that is "not installed"
is not a failure).  BENCH_QUICK=1 is --quick: one round, one repetition,
short rows, a small log file, short churn batches and sequences (the harnesses
see BENCH_QUICK too).

Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BINARIES = ["bench_arena", "bench_amalgamation", "bench_malloc_glibc", "bench_malloc_jemalloc",
            "bench_malloc_mimalloc", "bench_malloc_tcmalloc"]
NOT_INSTALLED = "not installed"
# bench/targets.py writes its table after this line of latest.md and of
# docs/benchmarks.md.
TARGETS_MARKER = "<!-- targets: written by bench/targets.py -->"
NOTES_MARKER = "<!-- notes: everything below is written by hand and kept by --docs -->"

# ---- What the rows are -------------------------------------------------------------------

MALLOCS = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]


def is_libarena(impl):
    return impl.startswith("arena")


def is_reference(impl):
    """Rows that are yardsticks, not implementations: never a peer."""
    return impl in ("proxy", "bump_in_memory")


def is_malloc(impl):
    return any(impl == m or impl.startswith(m + "_") for m in MALLOCS)


# Sections of the report, in order: (key, title, unit).  A row belongs to the
# first section whose key its name starts with.
SECTIONS = [
    ("copy/*/warm", "1. Copy-in, warm: a batch of 4096 values kept live, then dropped "
                    "(the instance and its chunks reused)", "ns/value"),
    ("copy/*/cold", "1. Copy-in, cold: the first batch of a fresh instance (its memory "
                    "given back to the OS before; page faults included)", "ns/value"),
    ("alloc", "2. Uninitialised allocation, batch of 4096 kept live", "ns/alloc"),
    ("pool/batch", "3. Pool, batch: take every slot, give all back (LIFO)", "ns/op"),
    ("pool/rolling", "3. Pool, rolling: cap/2 live, free the oldest, take one", "ns/op"),
    ("scoped/*/zeroed", "4. Scoped zeroed block, filled with 3, dropped per scope", "ns/scope"),
    ("scoped/*/uninit", "4. Scoped uninitialised block, filled with 3, dropped per scope",
     "ns/scope"),
    ("tree", "5. Binary tree, 8191 nodes, built, walked and dropped", "us/tree"),
    ("refs", "6. Refs at scale: walk 2^20 descriptors of 32-byte values, read every value",
     "ns/value"),
    ("ingest", "7. Ingest pipeline: parse a log, intern labels, a row per line, "
               "drop every 4096 rows", "MB/s"),
    ("request/512", "8. Request-scoped: take memory, one zeroed 512 B block filled with 3, "
                    "end the request", "ns/request"),
    ("request/100", "8. Request-scoped: 100 values of 16..128 B, each written, then the "
                    "request ends", "ns/request"),
    ("threads", "9. Threads: each thread stores 16 batches of 32768 32-byte copies, each "
                "batch dropped at once; CPU time of the whole process per value (the same "
                "figure at 2 threads as at 1 is perfect scaling)", "ns/value"),
    ("client", "10. Real clients: third-party C libraries through their allocator hooks, "
               "each row in a process of its own; one operation parses and drops a document, "
               "serves a Lua request, unpacks and drops a batch, or runs a churn batch (the "
               "library frees as it goes; a bulk-drop allocator is reset after it, a malloc "
               "frees the rest); faults per operation counted after the warm-up", "us/op"),
    ("cxx", "11. C++ (arena/arena.hpp): a std::pmr container of 4096 elements built one "
            "insertion at a time and dropped, over each memory resource (the arena reset, "
            "the monotonic resource released after each); peak held, where counted: what "
            "the resource took from upstream", "ns/element"),
    ("amalgamation", "12. The amalgamation (scripts/amalgamate.py, one translation unit) against "
                     "the library compiled from src/, same flags: a batch of 4096 values",
     "ns/value"),
    ("child", "13. Child arenas: a child made under a long-lived parent, 64 values of 48 B "
              "written, the child ended; the parent's backing calls per cycle once warm, and "
              "what it holds", "ns/cycle"),
    ("churn", "14. Churn inside one batch: slots holding about 200 KiB, each step frees a "
              "random slot's value and allocates one of a random size (1..4096 B) into it, "
              "the same sequence for every allocator (bench/churn.h), each row in a process "
              "of its own; peak held: what the allocator took (libarena: arena_get_stats(); "
              "glibc: mallinfo2()), peak RSS net of the RSS at the row's start", "ns/pair"),
    ("cxx_churn", "15. C++ churn: 500 entries live in a std::pmr container, each step erases "
                  "one and inserts another (strings of 16..127 B), over each memory resource "
                  "(the arena reset, the monotonic resource released after each batch); peak "
                  "held: what the resource took from upstream", "ns/step"),
    ("huge", "16. Huge batches: 256 MiB of values of 64 B..4 KiB (one fixed pseudo-random "
             "sequence), each written with memset, then the batch ends (a malloc frees every "
             "value; a bulk-drop malloc and libarena drop the batch); warm: the instance and "
             "what the allocator kept reused; cold: its memory given back to the OS before each "
             "batch; libarena with ARENA_HUGE_PAGES=0 from a process of its own", "ns/value"),
]
# The real-client cases (bench/clients.h), as the report names them; {name}
# is the row's counter of that name (a batch's size, which quick mode makes
# smaller).
CLIENT_CASES = {
    "cjson/numbers": "cJSON, numbers-heavy 2 MiB",
    "cjson/objects": "cJSON, object-heavy 2 MiB",
    "cjson/strings": "cJSON, string-heavy 2 MiB",
    "cjson/roundtrip": "cJSON churn: {objects} objects printed and re-parsed {rounds} times",
    "cjson/mixed": "cJSON mixed sizes: 4 KiB, 128 KiB, and 2 MiB every 12th op",
    "lua/request": "Lua 5.4 request, 20k records sorted",
    "lua/strings": "Lua churn: {appends} string appends, a 2000-byte window",
    "lua/tables": "Lua churn: {records} records + arrays, 1000 kept",
    "protobuf/batch": "protobuf-c, 2000 orders unpacked",
    "expat/catalog": "expat, 2 MiB XML catalog",
    "expat/stream": "expat, {MiB} MiB XML log streamed",
}
# Cases whose operation is a churn batch (bench/targets.py holds them to
# their own targets).
CLIENT_CHURN = ("lua/strings", "lua/tables", "cjson/roundtrip", "expat/stream")


def section_of(name):
    parts = name.split("/")
    for i, (key, _, _) in enumerate(SECTIONS):
        kp = key.split("/")
        if len(parts) > len(kp) and all(k == "*" or k == p for k, p in zip(kp, parts)):
            return i
    return None


def fmt_size(n):
    """A batch's size: 200000 -> '200k'."""
    n = int(n)
    return "%dk" % (n // 1000) if n >= 10000 and n % 1000 == 0 else str(n)


def case_label(group, figure=lambda k: None):
    """copy/16/warm -> '16 B'; pool/batch/16/1024 -> '16 B, cap 1024'.  `figure(k)`:
    counter k of the group's rows (the sizes of a client's batch)."""
    p = group.split("/")
    w = p[0]
    if w in ("copy", "alloc", "scoped"):
        return fmt_bytes(int(p[1]))
    if w == "pool":
        return "%s, cap %s" % (fmt_bytes(int(p[2])), fmt_count(int(p[3])))
    if w == "tree":
        return "depth 13"
    if w == "refs":
        return "2^20 x 32 B"
    if w == "ingest":
        return "log file"
    if w == "request":
        return "512 B zeroed" if p[1] == "512" else "100 x 16..128 B"
    if w == "threads":
        return "%s thread%s" % (p[1], "" if p[1] == "1" else "s")
    if w == "churn":
        sizes = {"uniform": "uniform 1..4096 B", "loguniform": "log-uniform 1..4096 B",
                 "bimodal": "bimodal: 80% 16..64 B, 20% 2..4 KiB",
                 "pareto": "Pareto (32/u, capped at 4 KiB)"}.get(p[1], p[1])
        slots, steps = figure("slots"), figure("steps")
        return sizes + (", %d slots, %s steps" % (slots, fmt_size(steps))
                        if slots and steps else "")
    if w == "cxx_churn":
        return {"map": "pmr::map<pmr::string, int>",
                "unordered_map": "pmr::unordered_map<pmr::string, int>",
                "unordered_map_reinsert": "pmr::unordered_map<pmr::string, int>, "
                                          "the same key erased and inserted again",
                "list": "pmr::list<pmr::string>, a queue",
                "deque": "pmr::deque<pmr::string>, a queue"}.get(p[1], p[1])
    if w == "cxx":
        return {"vector_string": "pmr::vector<pmr::string>, 16..47 B each",
                "map": "pmr::map<uint64_t, uint64_t>",
                "json_tree": "a JSON-like tree: pmr::vectors of variants, 512 records",
                "vector_growth": "64 vectors of 64 uint64_t, grown by push_back"}.get(p[1], p[1])
    if w == "amalgamation":
        return {"alloc16": "arena_alloc 16 B (inline)",
                "reuse": "arena_alloc_reuse 16..128 B, half freed",
                "cur_hooks": "arena_cur_malloc 16..128 B, half freed"}.get(p[1], p[1])
    if w == "huge":
        return "256 MiB, %s" % p[2]
    if w == "client":
        case = "/".join(p[1:])
        return re.sub(r"\{(\w+)\}",
                      lambda m: fmt_size(figure(m.group(1))) if figure(m.group(1)) else "?",
                      CLIENT_CASES.get(case, case))
    return "/".join(p[1:])


def fmt_bytes(n):
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n // 1024)
    return "%d B" % n


def fmt_count(n):
    return "%dK" % (n // 1024) if n >= 1024 and n % 1024 == 0 else str(n)


# ---- Running ----------------------------------------------------------------------------

class Progress:
    """One status line, rewritten in place on a terminal, else a line per step."""

    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.time()
        self.tty = sys.stderr.isatty()
        self.last = ""

    def show(self, where, what):
        el = int(time.time() - self.start)
        line = "[%3d/%d %2d:%02d] %s %s" % (self.done, self.total, el // 60, el % 60, where, what)
        if self.tty:
            sys.stderr.write("\r" + line[:118].ljust(118))
            sys.stderr.flush()
        elif where != self.last:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            self.last = where

    def end(self):
        if self.tty:
            sys.stderr.write("\n")
        el = int(time.time() - self.start)
        sys.stderr.write("bench: %d runs in %d:%02d\n" % (self.done, el // 60, el % 60))


# Google Benchmark appends how a row is timed to its name (the scaling rows
# measure the CPU time of the whole process), and a fixed iteration count
# (the mixed-size client rows); the report names rows without them.
TIMING_SUFFIX = re.compile(r"(/iterations:\d+|/(process_time|real_time|manual_time))+$")


def row_name(name):
    return TIMING_SUFFIX.sub("", name)


def list_tests(exe, env):
    out = subprocess.run([exe, "--benchmark_list_tests"], check=True, capture_output=True,
                         text=True, env=env).stdout
    return [l.strip() for l in out.splitlines() if l.strip()]


def run_binary(exe, names, args, progress, where, env):
    """Runs one harness on `names`; returns (returncode, [benchmark json], stderr tail)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    cmd = [exe, "--benchmark_filter=^(" + "|".join(names) + ")$", "--benchmark_out=" + out,
           "--benchmark_out_format=json", "--benchmark_color=false",
           "--benchmark_display_aggregates_only=true"] + args
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    for line in proc.stdout:
        # One console line per row: its median, or its only run.
        tok = line.split(" ", 1)[0]
        if "/" in tok and not tok.endswith(("_mean", "_stddev", "_cv")):
            progress.done += 1
            progress.show(where, row_name(tok[:-len("_median")] if tok.endswith("_median")
                                          else tok))
    err = proc.stderr.read()
    rc = proc.wait()
    rows = []
    try:
        with open(out) as f:
            rows = json.load(f).get("benchmarks", [])
    except (OSError, ValueError):
        pass
    os.unlink(out)
    return rc, rows, err[-2000:]


class Results:
    """Every row's figures per round, and their medians over the rounds."""

    # Google Benchmark's bookkeeping, not a figure of the row.
    NOT_FIGURES = ("family_index", "per_family_instance_index", "repetitions",
                   "repetition_index", "threads", "iterations")
    TIME_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

    def __init__(self):
        self.samples = {}  # name -> {figure: [one value per round]}
        self.labels = {}   # name -> display name
        self.errors = {}   # name -> message
        self.order = []

    def declare(self, name):
        """Rows keep the order of their registration, not of their (interleaved) runs."""
        if name not in self.samples:
            self.samples[name] = {}
            self.order.append(name)

    def add(self, b):
        """Takes a row's median over its repetitions, or its only run."""
        name = row_name(b.get("run_name", b["name"]))
        self.declare(name)
        self.labels[name] = b.get("label") or self.labels.get(name, name)
        if b.get("error_occurred"):
            self.errors[name] = b.get("error_message") or "error"
            return
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            return
        if b.get("run_type") == "iteration" and b.get("repetitions", 1) > 1:
            return
        unit = self.TIME_UNIT[b.get("time_unit", "ns")]
        figures = {k: v for k, v in b.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and k not in self.NOT_FIGURES}
        figures["real_time"] = b["real_time"] * unit
        figures["cpu_time"] = b["cpu_time"] * unit
        if b.get("items_per_second"):
            figures["ns"] = 1e9 / b["items_per_second"]
        for k, v in figures.items():
            self.samples[name].setdefault(k, []).append(v)

    def value(self, name, k):
        xs = self.samples.get(name, {}).get(k)
        return statistics.median(xs) if xs else None

    def ns(self, name):
        """CPU time per unit of work (value, op, scope...), median of the rounds."""
        return self.value(name, "ns")

    def label(self, name):
        return self.labels.get(name, name)


# ---- The report -------------------------------------------------------------------------

def machine_info(build):
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info.setdefault("cpu", platform.processor() or platform.machine())
    info["cores"] = str(os.cpu_count())
    info["kernel"] = platform.system() + " " + platform.release()
    try:
        info["libc"] = " ".join(os.confstr("CS_GNU_LIBC_VERSION").split())
    except (ValueError, OSError):
        info["libc"] = "?"
    info["load"] = " ".join("%.2f" % x for x in os.getloadavg())
    for k in ("enabled", "defrag"):
        try:
            with open("/sys/kernel/mm/transparent_hugepage/" + k) as f:
                info["thp_" + k] = f.read().strip()
        except OSError:
            info["thp_" + k] = "not offered"
    for fname, key in (("buildinfo.txt", "build"), ("peers.txt", "peers")):
        d = {}
        try:
            with open(os.path.join(build, "bench", fname)) as f:
                for line in f:
                    if "\t" in line:
                        k, v = line.rstrip("\n").split("\t", 1)
                        d[k] = v.strip()
        except OSError:
            pass
        info[key] = d
    return info


def groups(results):
    """{section index: {group: [(impl, name)]}} in registration order."""
    out = {}
    for name in results.order:
        s = section_of(name)
        if s is None:
            continue
        g, impl = name.rsplit("/", 1)
        out.setdefault(s, {}).setdefault(g, []).append((impl, name))
    return out


def baseline(rows):
    """The glibc row of a group: plain malloc, or calloc for zeroed blocks."""
    for impl, name in rows:
        if impl in ("glibc", "glibc_calloc"):
            return name
    return None


def fmt_ns(x, unit):
    if x is None:
        return "-"
    if unit in ("us/tree", "us/op"):
        x /= 1000.0
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2f" % x


def fmt_kib(b):
    return "%.0f" % (b / 1024.0) if b else "-"


def fmt_mib(b):
    return "%.1f" % (b / 1048576.0) if b else "-"


def md_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    right = [i > 1 for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(str(c).rjust(w) if right[i] else str(c).ljust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"
    sep = "|" + "|".join(("-" * (w + 1) + ":") if right[i] else ("-" * (w + 2))
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def extra_columns(workload):
    return {"refs": ["descriptor B", "bytes/value"], "ingest": ["peak RSS MiB"],
            "threads": ["M values/s (CPU)", "M values/s (wall)"],
            "client": ["peak RSS MiB", "RSS at start MiB", "minor faults/op"],
            "churn": ["peak live KiB", "peak held KiB", "held / live", "peak RSS above start MiB"],
            "cxx": ["peak held KiB"], "cxx_churn": ["peak held KiB"],
            "huge": ["ms/batch (CPU)", "ms/batch (wall)", "minor faults/batch"]}.get(workload, [])


def extra_figures(results, workload, name, x):
    v = lambda k: results.value(name, k)
    if workload == "refs":
        return ["%.0f" % (v("descriptor") or 0), "%.1f" % (v("bytes/value") or 0)]
    if workload == "ingest":
        return [fmt_mib(v("peak_RSS"))]
    if workload == "client":
        flt = v("faults/op")
        return [fmt_mib(v("peak_RSS")), fmt_mib(v("start_RSS")),
                "-" if flt is None else ("0" if flt == 0 else "%.2f" % flt)]
    if workload == "churn":
        live, held = v("peak_live"), v("peak_held")
        peak, start = v("peak_RSS"), v("start_RSS")
        return [fmt_kib(live), fmt_kib(held), "%.2f" % (held / live) if held and live else "-",
                fmt_mib(peak - start) if peak and start else "-"]
    if workload in ("cxx", "cxx_churn"):
        return [fmt_kib(v("peak_held")) if v("peak_held") else "-"]
    if workload == "huge":
        flt, cpu, wall = v("faults/batch"), v("cpu_time"), v("real_time")
        return ["%.1f" % (cpu / 1e6) if cpu else "-", "%.1f" % (wall / 1e6) if wall else "-",
                "-" if flt is None else "%.0f" % flt]
    if workload == "threads":
        # Values per second of CPU time of all the threads, and of wall time.
        workers, ips = v("workers"), v("items_per_second")
        wall = ips * v("cpu_time") / v("real_time") if ips and v("real_time") else None
        return ["%.0f" % (workers * 1000.0 / x) if workers and x else "-",
                "%.0f" % (wall / 1e6) if wall else "-"]
    return []


def section_tables(results):
    out = []
    for s, gs in sorted(groups(results).items()):
        _, title, unit = SECTIONS[s]
        workload = next(iter(gs)).split("/")[0]
        extra = extra_columns(workload)
        if workload == "client":
            warm = [results.value(n, "warmup") for ms in gs.values() for _, n in ms]
            warm = sorted(set(int(w) for w in warm if w))
            if warm:
                title += " (%d untimed operations per process%s)" % (
                    warm[0], "; %d for the mixed-size rows, whole cycles" % warm[-1]
                    if len(warm) > 1 else "")
        header = ["case", "implementation", unit, "speedup vs glibc", "x limit proxy"] + extra
        rows = []
        for g, members in gs.items():
            figure = lambda k, ms=members: next(
                (v for v in (results.value(n, k) for _, n in ms) if v is not None), None)
            base = results.ns(baseline(members)) if baseline(members) else None
            proxy = next((results.ns(n) for i, n in members if i == "proxy"), None)
            ordered = sorted(members, key=lambda m: (m[1] in results.errors,
                                                     results.ns(m[1]) or float("inf")))
            for k, (impl, name) in enumerate(ordered):
                label = case_label(g, figure) if k == 0 else ""
                disp = results.label(name)
                if is_libarena(impl):
                    disp = "**" + disp + "**"
                if name in results.errors:
                    rows.append([label, disp, results.errors[name], "", ""] + [""] * len(extra))
                    continue
                x = results.ns(name)
                sp = "%.2fx" % (base / x) if base and x else "-"
                px = "%.2f" % (x / proxy) if proxy and x else "-"
                fig = fmt_ns(x, unit)
                if workload == "ingest":
                    bps = results.value(name, "bytes_per_second")
                    fig, px = ("%.0f" % (bps / 1e6) if bps else "-"), ""
                rows.append([label, disp, fig, sp, px] + extra_figures(results, workload, name, x))
        out.append("### %s\n\n%s\n" % (title, md_table(header, rows)))
    return out


# ---- Chart ------------------------------------------------------------------------------

CHART_CASES = [
    ("copy/16/warm", "copy 16 B"), ("copy/256/warm", "copy 256 B"),
    ("copy/4096/warm", "copy 4 KiB"), ("copy/65536/warm", "copy 64 KiB"),
    ("copy/4096/cold", "copy 4 KiB cold"), ("alloc/16", "alloc 16 B"),
    ("pool/batch/16/8192", "pool 16 B"), ("pool/batch/256/8192", "pool 256 B"),
    ("pool/rolling/16/8192", "pool rolling"),
    ("scoped/512/zeroed", "zeroed 512 B"), ("scoped/1024/zeroed", "zeroed 1 KiB"),
    ("scoped/4096/zeroed", "zeroed 4 KiB"), ("tree/depth13", "tree"),
    ("refs/1048576x32B", "refs walk"), ("ingest/log", "ingest"),
    ("request/512/zeroed", "request 512 B"), ("request/100/small", "request 100 values"),
    ("threads/2", "2 threads"),
    ("client/cjson/numbers", "cJSON numbers"), ("client/cjson/objects", "cJSON objects"),
    ("client/cjson/strings", "cJSON strings"), ("client/lua/request", "Lua request"),
    ("client/protobuf/batch", "protobuf-c batch"), ("client/expat/catalog", "expat"),
    ("client/lua/strings", "Lua string churn"), ("client/lua/tables", "Lua table churn"),
    ("client/cjson/roundtrip", "cJSON round trips"), ("client/cjson/mixed", "cJSON mixed sizes"),
]
SERIES = ["libarena (best API)", "limit proxy", "mimalloc", "jemalloc", "tcmalloc",
          "best other peer"]


def chart(results, svg_path):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        sys.stderr.write("bench: gnuplot not found (apt-get install gnuplot-nox): no chart\n")
        return False
    lines = []
    for group, label in CHART_CASES:
        members = [n for n in results.order if n.rsplit("/", 1)[0] == group
                   and n not in results.errors and results.ns(n)]
        if not members:
            continue
        base = results.ns(baseline([(n.rsplit("/", 1)[1], n) for n in members]) or "")
        if not base:
            continue

        def best(pred):
            xs = [results.ns(n) for n in members if pred(n.rsplit("/", 1)[1])]
            return "%.4f" % (base / min(xs)) if xs else "NaN"
        vals = [best(is_libarena), best(lambda i: i == "proxy")]
        for m in ("mimalloc", "jemalloc", "tcmalloc"):
            vals.append(best(lambda i, m=m: i == m or i == m + "_calloc"))
        vals.append(best(lambda i: not is_libarena(i) and not is_malloc(i) and not is_reference(i)))
        lines.append('"%s" %s' % (label, " ".join(vals)))
    if not lines:
        return False
    data = svg_path + ".dat"
    with open(data, "w") as f:
        f.write("# case " + " | ".join(SERIES) + "\n" + "\n".join(lines) + "\n")
    if svg_path.endswith(".png"):
        terminal = "set terminal pngcairo size 1200,520 font 'Helvetica,10'"
    else:
        terminal = "set terminal svg size 1200,520 dynamic font 'Helvetica,11' background '#ffffff'"
    plot = ", ".join("'%s' using %d:xtic(1) title '%s'" % (data, i + 2, s)
                     for i, s in enumerate(SERIES))
    script = """
%s
set output '%s'
set title 'Speedup over glibc malloc (higher is better; same run, medians)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.25:*]
set grid ytics
set ylabel 'x faster than glibc malloc'
set xtics rotate by -30 scale 0
set key outside top center horizontal
set datafile missing 'NaN'
plot %s
""" % (terminal, svg_path, plot)
    r = subprocess.run([gnuplot], input=script, text=True, capture_output=True)
    os.unlink(data)
    if r.returncode != 0:
        sys.stderr.write("bench: gnuplot failed: %s\n" % r.stderr[-500:])
        return False
    return True


# ---- Main -------------------------------------------------------------------------------

def plan_runs(exes, pat, env):
    """[(exe, names, env)]: the ingest, real-client, churn and huge-batch rows one per
    process, for their own peak RSS and page faults; the other rows of a harness
    together.  The huge-batch rows that a harness names otherwise under
    ARENA_HUGE_PAGES=0 (libarena's) run again so, unless that is already the setting."""
    plan, alone = [], ("ingest/", "client/", "churn/", "huge/")
    pick = lambda names: [n for n in names if not pat or pat.search(row_name(n))]
    off = None if env.get("ARENA_HUGE_PAGES") == "0" else dict(env, ARENA_HUGE_PAGES="0")
    for exe in exes:
        names = pick(list_tests(exe, env))
        rest = [n for n in names if not n.startswith(alone)]
        if rest:
            plan.append((exe, rest, env))
        plan += [(exe, [n], env) for n in names if n.startswith(alone)]
        if off:
            plan += [(exe, [n], off) for n in pick(list_tests(exe, off))
                     if n.startswith("huge/") and n not in names]
    return plan


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1")
    ap.add_argument("--rounds", type=int, help="interleaved runs of every harness")
    ap.add_argument("--repetitions", type=int, help="of every row, in each round")
    ap.add_argument("--min-time", type=float, help="seconds per row per repetition")
    ap.add_argument("--filter", default="", help="regex: only rows whose name matches")
    ap.add_argument("--ingest-mib", type=int)
    ap.add_argument("--docs", action="store_true", help="also write docs/benchmarks.md")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()

    rounds = a.rounds or (1 if a.quick else 3)
    reps = a.repetitions or (1 if a.quick else 3)
    min_time = a.min_time or (0.01 if a.quick else 0.03)
    mib = a.ingest_mib or (8 if a.quick else 256)
    bdir = os.path.join(a.build, "bench")
    exes = [os.path.join(bdir, b) for b in BINARIES]
    missing = [e for e in exes if not os.access(e, os.X_OK)]
    if missing:
        sys.exit("bench: not built: %s (run `make bench`)" % ", ".join(missing))

    info = machine_info(a.build)
    ingest = os.path.join(bdir, "ingest-%dMiB.log" % mib)
    if not os.path.exists(ingest):
        sys.stderr.write("bench: generating %s (%d MiB)\n" % (ingest, mib))
        subprocess.run([exes[0], "--generate-ingest", ingest, str(mib)], check=True)
    # BENCH_QUICK tells the harnesses too (the churn clients' batch sizes).
    env = dict(os.environ, BENCH_INGEST_FILE=ingest, BENCH_QUICK="1" if a.quick else "0")
    if a.quick:
        # Fewer untimed operations before each real-client row (8 otherwise).
        env.setdefault("BENCH_CLIENT_WARMUP", "3")

    pat = re.compile(a.filter) if a.filter else None
    plan = plan_runs(exes, pat, env)
    gb_args = ["--benchmark_min_time=%g" % min_time, "--benchmark_repetitions=%d" % reps]
    if reps > 1:
        gb_args.append("--benchmark_enable_random_interleaving=true")

    results, failures = Results(), []
    for _, names, _ in plan:
        for n in names:
            results.declare(row_name(n))
    progress = Progress(sum(len(p[1]) for p in plan) * rounds)
    for r in range(rounds):
        for exe, names, run_env in plan:
            where = "round %d/%d %s" % (r + 1, rounds, os.path.basename(exe))
            rc, rows, err = run_binary(exe, names, gb_args, progress, where, run_env)
            for b in rows:
                results.add(b)
            if rc != 0:
                failures.append("%s exited with %d: %s" % (
                    os.path.basename(exe), rc, err.strip()[-400:]))
    progress.end()
    for name, msg in results.errors.items():
        if msg != NOT_INSTALLED:
            failures.append("%s: %s" % (name, msg))

    # ---- Report
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    b, peers = info["build"], info["peers"]
    head = [
        "# libarena benchmarks",
        "",
        "- machine: %s, %s cores, %s, %s (load average at start: %s)" % (
            info["cpu"], info["cores"], info["kernel"], info["libc"], info["load"]),
        "- compiler: %s; build type %s; C flags `%s`; C++ flags `%s`; Google Benchmark %s" % (
            b.get("compiler", "?"), b.get("build_type", "?"), b.get("c_flags", "").strip(),
            b.get("cxx_flags", "").strip(), b.get("benchmark", "?")),
        "- peers: " + ", ".join("%s %s" % (k, v) for k, v in peers.items()),
        "- transparent huge pages: enabled `%s`, defrag `%s`" % (info["thp_enabled"],
                                                                 info["thp_defrag"]),
        "- run: %s; %s; %d round%s of every harness, interleaved; %s; CPU time; min time "
        "%gs per row per repetition; ingest log %d MiB" % (
            stamp, "QUICK mode" if a.quick else "full mode", rounds, "" if rounds == 1 else "s",
            "%d repetitions of every row per round, randomly interleaved, median of the "
            "repetitions, then of the rounds" % reps if reps > 1 else
            "one repetition of every row per round, median of the rounds", min_time, mib),
        "- speedup vs glibc = glibc malloc's time / this row's (calloc for zeroed blocks); "
        "x limit proxy = this row's time / the proxy's (a bare bump pointer or free list "
        "doing the same copies: 1.00 is the floor)",
    ]
    text = "\n".join(head) + "\n\n" + "\n".join(section_tables(results))
    if failures:
        text += "\n### FAILURES\n\n" + "\n".join("- " + f for f in failures) + "\n"
    print(text)

    os.makedirs(a.out, exist_ok=True)
    svg = os.path.join(a.out, "speedups.svg")
    have_chart = chart(results, svg)
    if have_chart:
        chart(results, os.path.join(a.out, "speedups.png"))
    latest = os.path.join(a.out, "latest.md")
    with open(latest, "w") as f:
        f.write(text + ("\n![speedups](speedups.svg)\n" if have_chart else "") +
                "\n" + TARGETS_MARKER + "\n")
    docs = write_docs(text, svg if have_chart else None, rounds, reps) if a.docs else None
    with open(os.path.join(a.out, "latest.json"), "w") as f:
        json.dump({"run": stamp, "quick": a.quick, "filter": a.filter, "rounds": rounds,
                   "repetitions": reps, "markdown": [p for p in (latest, docs) if p],
                   "failures": failures,
                   "rows": [{"name": n, "label": results.label(n),
                             "error": results.errors.get(n),
                             "figures": {k: results.value(n, k) for k in results.samples[n]}}
                            for n in results.order]}, f, indent=1)
    sys.stderr.write("bench: wrote %s, latest.json%s\n" % (latest, " and " + svg if have_chart
                                                           else ""))
    if failures:
        sys.stderr.write("bench: FAILED:\n  " + "\n  ".join(failures) + "\n")
        return 1
    return 0


def write_docs(text, svg, rounds, reps):
    docs = os.path.join(ROOT, "docs")
    intro = """# Benchmarks

One representative full run of `make bench`; regenerate this page with

```sh
make bench BENCH_ARGS=--docs      # runs bench/run.py --docs after the build
```

The build machine is a small shared VM (2 vCPUs) on which other jobs compile
and test while the suite runs: absolute times drift by tens of percent from
run to run, so read the ratios, which compare rows of the same rounds (every
harness runs %d times over, interleaved; Google Benchmark repeats every row %d
times per round, randomly interleaved, and reports the median; each row is
the median of its rounds, in CPU time). jemalloc, mimalloc and tcmalloc each
run in a process of their own (`bench_malloc_<name>`), never linked beside
glibc's malloc. The limit proxies (`bench/harness.h`, `bench/bench_arena.cc`)
do the same copies with the least machinery: a bare bump pointer with one
bounds check held in a register, and a bare intrusive LIFO free list. The
workloads are described in `bench/workloads.h` and `bench/bench_arena.cc`;
the churn inside one batch (sections 14 and 15: values freed one by one,
the memory each allocator holds against the bytes live) in `bench/churn.h`
and `bench/bench_cxx.cc`, and `tests/test_reuse_churn.c` holds libarena's
reusing calls to the same bounds on many more sequences.
The targets are checked by `bench/targets.py` (`make bench` runs it after
the suite).

""" % (rounds, reps)
    body = text.replace("# libarena benchmarks\n", "", 1)
    if svg:
        # The PNG is half the size of the SVG: that one goes in the docs.
        png = svg[:-4] + ".png"
        name = "benchmarks.png" if os.path.exists(png) else "benchmarks.svg"
        shutil.copyfile(png if name.endswith(".png") else svg, os.path.join(docs, name))
        body = "![Speedup over glibc malloc per workload](%s)\n\n" % name + body
    # What follows the notes marker is written by hand, and kept.
    path, notes = os.path.join(docs, "benchmarks.md"), ""
    try:
        with open(path) as f:
            old = f.read()
        if NOTES_MARKER in old:
            notes = old[old.index(NOTES_MARKER):]
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(intro + body + "\n" + TARGETS_MARKER + "\n\n" + (notes or NOTES_MARKER + "\n"))
    sys.stderr.write("bench: wrote docs/benchmarks.md\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
