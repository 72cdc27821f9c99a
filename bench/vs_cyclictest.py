#!/usr/bin/env python3
"""latscope vs cyclictest: timer latency and CPU cost, A/B alternation (ABBA).

Normally started through bench/vs-cyclictest.sh, which checks root and the
two binaries first. Standard library only; no network.

Phase 1 (latency): N pairs of latscope (A) and cyclictest (B), with the same
CPUs, period, policy, priority and duration; the order flips from one pair to
the next (A B, B A, A B ...: every two pairs run A B B A), so that neither
tool always runs first.
Phase 2 (CPU cost): the same alternation at a short period (default 100 us).
The verdict uses the CPU time of the measuring threads alone, read from
/proc/PID/task/TID/schedstat (exact nanoseconds of run time) at 20% and 80% of
each run, so start-up and exit are outside the window. Each whole process's
user+sys CPU time (wait4()'s rusage) is reported beside it.

See bench/README.md for the method and how to read the output.
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "bench", "results")
CYC_HIST_US = 20000  # cyclictest -h: 1 us bins up to 20 ms, overflow above

# Targets from the issue.
MEAN_RATIO_TARGET = 1.05
MIN_DIFF_TARGET_US = 1.0
CPU_RATIO_TARGET = 1.0

# cyclictest records floor(latency in us) per sample; adding half a bin
# turns every figure it reports into an estimate of the true value.
CYC_BIN_CENTRE_US = 0.5


def die(msg):
    print(f"vs-cyclictest: error: {msg}", file=sys.stderr)
    sys.exit(1)


# --------------------------------------------------------------------------
# helpers


def parse_cpu_list(text):
    cpus = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            lo, hi = int(lo), int(hi)
            if hi < lo:
                raise ValueError(f"bad CPU range {part!r}")
            cpus.extend(range(lo, hi + 1))
        else:
            cpus.append(int(part))
    if not cpus:
        raise ValueError("empty CPU list")
    out = []
    for c in cpus:
        if c not in out:
            out.append(c)
    return out


def online_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        return parse_cpu_list(f.read().strip())


def fmt_cpus(cpus):
    return ",".join(str(c) for c in cpus)


def read_first_line(path, default="?"):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return default


def other_measurers(own_pids):
    """Other running latscope / cyclictest processes (they would compete)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in own_pids or pid == os.getpid():
            continue
        comm = read_first_line(f"/proc/{pid}/comm", "")
        if comm in ("latscope", "cyclictest"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmd = comm
            found.append(f"pid {pid}: {cmd[:120]}")
    return found


def thread_runtimes(pid):
    """{tid: (comm, run time in ns)} of every thread of pid, from schedstat."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            with open(base + "/comm") as f:
                comm = f.read().strip()
            with open(base + "/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out[int(tid)] = (comm, ns)
    return out


class Child:
    """Runs one command; waits with wait4() so its rusage is exact.

    With window=(t0, t1, is_measuring), a sampler thread reads the run time of
    the threads is_measuring(pid, tid, comm) selects at t0 and t1 seconds after
    the start; self.window_ns is their summed growth between the two reads and
    self.window_threads how many threads it covered."""

    current = None  # for the signal handler

    def __init__(self, argv, cwd, out_path, err_path, timeout_s, window=None):
        self.argv = argv
        self.cwd = cwd
        self.out_path = out_path
        self.err_path = err_path
        self.timeout_s = timeout_s
        self.timed_out = False
        self.window = window
        self.window_ns = None
        self.window_threads = 0
        self.window_s = None

    def _sample(self, pid, t_start):
        t0, t1, is_measuring = self.window

        def pick():
            return {tid: ns for tid, (comm, ns) in thread_runtimes(pid).items()
                    if is_measuring(pid, tid, comm)}

        time.sleep(max(0.0, t_start + t0 - time.monotonic()))
        a, ta = pick(), time.monotonic()
        time.sleep(max(0.0, t_start + t1 - time.monotonic()))
        b, tb = pick(), time.monotonic()
        both = [tid for tid in b if tid in a]
        if both:
            self.window_ns = sum(b[t] - a[t] for t in both)
            self.window_threads = len(both)
            self.window_s = tb - ta

    def run(self):
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)
            Child.current = proc
            sampler = None
            if self.window is not None:
                sampler = threading.Thread(target=self._sample, args=(proc.pid, t0),
                                           daemon=True)
                sampler.start()

            def on_timeout():
                self.timed_out = True
                try:
                    proc.send_signal(signal.SIGINT)
                    time.sleep(5)
                    proc.kill()
                except OSError:
                    pass

            timer = threading.Timer(self.timeout_s, on_timeout)
            timer.start()
            try:
                while True:
                    try:
                        _, status, ru = os.wait4(proc.pid, 0)
                        break
                    except InterruptedError:
                        continue
            finally:
                timer.cancel()
                Child.current = None
            if sampler is not None:
                sampler.join(timeout=5)
            wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        self.rc = proc.returncode
        self.wall = wall
        self.utime = ru.ru_utime
        self.stime = ru.ru_stime
        self.maxrss_kb = ru.ru_maxrss
        self.nvcsw = ru.ru_nvcsw
        self.nivcsw = ru.ru_nivcsw
        return self

    def check(self, what):
        if self.timed_out:
            die(f"{what} did not finish within {self.timeout_s:.0f} s; stopped it "
                f"(command: {' '.join(self.argv)})")
        if self.rc != 0:
            tail = ""
            try:
                with open(self.err_path, errors="replace") as f:
                    tail = " | ".join(f.read().strip().splitlines()[-3:])
            except OSError:
                pass
            die(f"{what} exited with status {self.rc}: {tail or '(no stderr)'} "
                f"(command: {' '.join(self.argv)})")


# --------------------------------------------------------------------------
# statistics on histograms


def hist_quantile(buckets, total, q, overflow_label=None):
    """buckets: ascending (low, high, count). Returns the bucket holding the
    sample of rank ceil(q*total) (latscope's and HdrHistogram's rule), or
    None if that rank falls in the overflow (samples above the histogram)."""
    if total == 0:
        return None
    rank = min(max(math.ceil(q * total), 1), total)
    seen = 0
    for low, high, count in buckets:
        seen += count
        if seen >= rank:
            return (low, high)
    return None


class LatscopeRun:
    """Pooled timer.latency over every measured CPU of one latscope run."""

    def __init__(self, path, cpus):
        with open(path) as f:
            doc = json.load(f)
        self.status = doc.get("status")
        self.notes = doc.get("notes") or []
        self.version = doc.get("tool_version", "?")
        metrics = [m for cell in doc.get("cells", []) for m in cell.get("metrics", [])
                   if m.get("name") == "timer.latency"]
        if not metrics:
            die(f"no timer.latency metric in {path}")
        got = sorted(m.get("cpu") for m in metrics)
        if got != sorted(cpus):
            die(f"latscope measured CPUs {got}, expected {sorted(cpus)} ({path})")
        self.count = sum(m["count"] for m in metrics)
        self.min_ns = min(m["min_ns"] for m in metrics)
        self.max_ns = max(m["max_ns"] for m in metrics)
        self.sum_ns = sum(m["mean_ns"] * m["count"] for m in metrics)
        self.mean_ns = self.sum_ns / self.count
        self.overruns = sum(m.get("overruns") or 0 for m in metrics)
        self.missed = sum(m.get("missed_deadlines") or 0 for m in metrics)
        self.buckets = {}
        for m in metrics:
            for low, high, count in m["histogram"]:
                self.buckets[(low, high)] = self.buckets.get((low, high), 0) + count
        self.own_p99_ns = max(m["p99_ns"] for m in metrics) if len(metrics) == 1 else None

    @staticmethod
    def pooled_p99_ns(runs):
        merged = {}
        for r in runs:
            for k, c in r.buckets.items():
                merged[k] = merged.get(k, 0) + c
        buckets = sorted((lo, hi, c) for (lo, hi), c in merged.items())
        total = sum(r.count for r in runs)
        b = hist_quantile(buckets, total, 0.99)
        lo_ns = min(r.min_ns for r in runs)
        hi_ns = max(r.max_ns for r in runs)
        # latscope reports the bucket's highest value, clamped to [min, max].
        return min(max(b[1], lo_ns), hi_ns)

    def summary_us(self):
        return {
            "n": self.count,
            "min": self.min_ns / 1000.0,
            "mean": self.mean_ns / 1000.0,
            "p99": LatscopeRun.pooled_p99_ns([self]) / 1000.0,
            "max": self.max_ns / 1000.0,
        }


class CyclictestRun:
    """Pooled over every thread of one cyclictest run (from its --json)."""

    def __init__(self, path, cpus, with_hist=True):
        with open(path) as f:
            doc = json.load(f)
        self.version = doc.get("rt_test_version:", doc.get("rt_test_version", "?"))
        threads = list((doc.get("thread") or {}).values())
        if len(threads) != len(cpus):
            die(f"cyclictest reported {len(threads)} threads, expected {len(cpus)} ({path})")
        got = sorted(t.get("cpu") for t in threads)
        if got != sorted(cpus):
            die(f"cyclictest threads ran on CPUs {got}, expected {sorted(cpus)} ({path})")
        self.count = sum(t["cycles"] for t in threads)
        if self.count == 0:
            die(f"cyclictest recorded no samples ({path})")
        self.min_us = min(t["min"] for t in threads)
        self.max_us = max(t["max"] for t in threads)
        # "avg" is sum/cycles of the floored samples, printed with 2 decimals
        # (the text outputs truncate it to an integer).
        self.raw_mean_us = sum(t["avg"] * t["cycles"] for t in threads) / self.count
        self.hist = {}
        self.overflow = 0
        if with_hist:
            for t in threads:
                h = t.get("histogram") or {}
                for k, c in h.items():
                    self.hist[int(k)] = self.hist.get(int(k), 0) + c
                self.overflow += t["cycles"] - sum(h.values())

    @staticmethod
    def pooled_p99_bin(runs):
        merged = {}
        for r in runs:
            for k, c in r.hist.items():
                merged[k] = merged.get(k, 0) + c
        total = sum(r.count for r in runs)
        buckets = [(k, k, merged[k]) for k in sorted(merged)]
        b = hist_quantile(buckets, total, 0.99)
        return None if b is None else b[0]

    def summary_us(self):
        p99_bin = CyclictestRun.pooled_p99_bin([self])
        c = CYC_BIN_CENTRE_US
        return {
            "n": self.count,
            "min": self.min_us + c,
            "mean": self.raw_mean_us + c,
            "p99": None if p99_bin is None else p99_bin + c,
            "max": self.max_us + c,
        }


# --------------------------------------------------------------------------
# the benchmark


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="latscope-vs-cyclictest-")
        self.seq = 0
        self.details = []
        self.others = {}  # other latency tools seen before any of our runs

    def cleanup(self):
        if self.args.keep_tmp:
            print(f"(kept the raw outputs in {self.tmp})")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _paths(self, tag):
        for entry in other_measurers(set()):
            pid = entry.split(":", 1)[0]
            if pid not in self.others:
                self.others[pid] = entry
        self.seq += 1
        d = os.path.join(self.tmp, f"{self.seq:02d}-{tag}")
        os.makedirs(d)
        return d

    def run_latscope(self, tag, period_us, seconds, window=False):
        a = self.args
        d = self._paths(tag)
        argv = [a.latscope, "run", "--cpus", fmt_cpus(a.cpus), "--period", f"{period_us}us",
                "--priority", str(a.priority), "--policy", "fifo", "--duration", f"{seconds}s",
                "--store", os.path.join(d, "bench.db"), "--json", os.path.join(d, "out.json"),
                "--quiet"]
        win = None
        if window:
            win = (0.2 * seconds, 0.8 * seconds,
                   lambda pid, tid, comm: comm.startswith("lat-timer/"))
        ch = Child(argv, d, os.path.join(d, "stdout"), os.path.join(d, "stderr"),
                   seconds + 60, win).run()
        ch.check("latscope")
        return ch, os.path.join(d, "out.json")

    def run_cyclictest(self, tag, period_us, seconds, with_hist, window=False):
        a = self.args
        d = self._paths(tag)
        argv = [a.cyclictest, "-m", f"-p{a.priority}", "--policy=fifo", f"-i{period_us}",
                f"-a{fmt_cpus(a.cpus)}", f"-t{len(a.cpus)}", f"-D{seconds}s", "-q"]
        if a.main_cpus:
            # latscope keeps its housekeeping thread off the measured CPUs;
            # give cyclictest's main thread the same place.
            argv.append(f"--mainaffinity={fmt_cpus(a.main_cpus)}")
        if with_hist:
            argv += ["-h", str(CYC_HIST_US), "--histfile=" + os.path.join(d, "cyc.hist")]
        argv += ["--json=" + os.path.join(d, "cyc.json")]
        win = None
        if window:
            # cyclictest's measuring threads are every thread but the main one.
            win = (0.2 * seconds, 0.8 * seconds, lambda pid, tid, comm: tid != pid)
        ch = Child(argv, d, os.path.join(d, "stdout"), os.path.join(d, "stderr"),
                   seconds + 60, win).run()
        ch.check("cyclictest")
        return ch, os.path.join(d, "cyc.json")

    def progress(self, msg):
        if not self.args.quiet_progress:
            print(msg, file=sys.stderr, flush=True)

    # ---- phase 1: latency

    def latency_phase(self):
        a = self.args
        pairs = []
        for i in range(1, a.pairs + 1):
            got = {}
            for tool in pair_tools(i):
                if tool == "latscope":
                    self.progress(f"[latency] pair {i}/{a.pairs} ({order_tag(i)}): A latscope "
                                  f"{a.seconds} s ...")
                    ls_ch, ls_json = self.run_latscope(f"lat{i}-latscope", a.period_us,
                                                       a.seconds)
                    got[tool] = (LatscopeRun(ls_json, a.cpus), ls_ch)
                else:
                    self.progress(f"[latency] pair {i}/{a.pairs} ({order_tag(i)}): B cyclictest "
                                  f"{a.seconds} s ...")
                    cy_ch, cy_json = self.run_cyclictest(f"lat{i}-cyclictest", a.period_us,
                                                         a.seconds, True)
                    got[tool] = (CyclictestRun(cy_json, a.cpus), cy_ch)
            pairs.append(got["latscope"] + got["cyclictest"])
        return pairs

    # ---- phase 2: CPU time

    def cpu_phase(self):
        a = self.args
        pairs = []
        for i in range(1, a.cpu_pairs + 1):
            got = {}
            for tool in pair_tools(i):
                if tool == "latscope":
                    self.progress(f"[cpu] pair {i}/{a.cpu_pairs} ({order_tag(i)}): A latscope "
                                  f"{a.cpu_seconds} s at {a.cpu_period_us} us ...")
                    ls_ch, ls_json = self.run_latscope(f"cpu{i}-latscope", a.cpu_period_us,
                                                       a.cpu_seconds, window=True)
                    got[tool] = (LatscopeRun(ls_json, a.cpus), ls_ch)
                else:
                    self.progress(f"[cpu] pair {i}/{a.cpu_pairs} ({order_tag(i)}): B cyclictest "
                                  f"{a.cpu_seconds} s at {a.cpu_period_us} us ...")
                    cy_ch, cy_json = self.run_cyclictest(f"cpu{i}-cyclictest", a.cpu_period_us,
                                                         a.cpu_seconds, False, window=True)
                    got[tool] = (CyclictestRun(cy_json, a.cpus, with_hist=False), cy_ch)
            pairs.append(got["latscope"] + got["cyclictest"])
        return pairs


# --------------------------------------------------------------------------
# the order of the tools


def pair_tools(i):
    """The tools of pair i (from 1) in the order they run: latscope first in
    odd pairs, cyclictest first in even ones (A B, B A, A B ...)."""
    return ("latscope", "cyclictest") if i % 2 == 1 else ("cyclictest", "latscope")


def order_tag(i):
    """`AB` when latscope (A) ran first in pair i, `BA` when cyclictest did."""
    return "AB" if i % 2 == 1 else "BA"


def pair_label(i):
    """The pair column of the tables: number and order, 6 characters."""
    return f"{i:>3} {order_tag(i)}"


# --------------------------------------------------------------------------
# report


def f2(x, width=8):
    if x is None:
        return "n/a".rjust(width)
    return f"{x:{width}.2f}"


def f3(x, width=7):
    if x is None:
        return "n/a".rjust(width)
    return f"{x:{width}.3f}"


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(args, bench, lat, cpu, started, ended, warnings):
    out = []  # goes to stdout and the results file
    det = []  # results file only
    w = out.append

    cyc_version = lat[0][2].version if lat else (cpu[0][2].version if cpu else "?")
    ls_version = lat[0][0].version if lat else (cpu[0][0].version if cpu else "?")
    uname = platform.uname()
    w("latscope vs cyclictest: timer latency and CPU cost (A/B alternation, ABBA)")
    w("=" * 72)
    w(f"started {started:%Y-%m-%d %H:%M:%S} UTC, ended {ended:%H:%M:%S} UTC; "
      f"host {uname.node}, kernel {uname.release}")
    w(f"latscope {ls_version} ({args.latscope}); cyclictest {cyc_version} ({args.cyclictest})")
    w(f"CPUs {fmt_cpus(args.cpus)}, SCHED_FIFO priority {args.priority}, mlockall and "
      f"/dev/cpu_dma_latency=0 in both tools")
    w("order: A = latscope, B = cyclictest; A first in odd pairs, B first in even ones")
    w("       (AB, BA, AB ...: every two pairs run A B B A; the pair column shows it)")
    for msg in warnings:
        w(f"WARNING: {msg}")
    w("")

    # ---- latency
    if lat:
        w(f"1. Timer latency: {len(lat)} pairs x {args.seconds} s, period {args.period_us} us "
          f"(all figures in us)")
        w("   latscope: exact ns min/mean/max; p99 = upper edge of its HDR bucket (<=0.1% wide).")
        w("   cyclictest: records floor(us) per sample; +0.5 us (bin centre) added to its")
        w("   min, mean (sum/cycles from --json), p99 (1-us histogram bin) and max.")
        w("")
        hdr = (f"{'pair':>6} | {'latscope':^34} | {'cyclictest':^34} | {'mean':>6} {'min':>6}")
        sub = (f"{'':>6} | {'min':>7} {'mean':>7} {'p99':>8} {'max':>9} | "
               f"{'min':>7} {'mean':>7} {'p99':>8} {'max':>9} | {'ls/cy':>6} {'ls-cy':>6}")
        w(hdr)
        w(sub)
        w("-" * len(sub))
        rows = []
        for i, (ls, _, cy, _) in enumerate(lat, 1):
            l, c = ls.summary_us(), cy.summary_us()
            ratio = l["mean"] / c["mean"]
            dmin = l["min"] - c["min"]
            rows.append((l, c, ratio, dmin))
            w(f"{pair_label(i)} | {f2(l['min'], 7)} {f2(l['mean'], 7)} {f2(l['p99'])} {f2(l['max'], 9)} | "
              f"{f2(c['min'], 7)} {f2(c['mean'], 7)} {f2(c['p99'])} {f2(c['max'], 9)} | "
              f"{f3(ratio, 6)} {f2(dmin, 6)}")
        w("-" * len(sub))

        def med(side, key):
            vals = [r[side][key] for r in rows if r[side][key] is not None]
            return statistics.median(vals) if vals else None

        med_ratio = statistics.median(r[2] for r in rows)
        med_dmin = statistics.median(r[3] for r in rows)
        w(f"{'median':>6} | {f2(med(0, 'min'), 7)} {f2(med(0, 'mean'), 7)} {f2(med(0, 'p99'))} "
          f"{f2(med(0, 'max'), 9)} | {f2(med(1, 'min'), 7)} {f2(med(1, 'mean'), 7)} "
          f"{f2(med(1, 'p99'))} {f2(med(1, 'max'), 9)} | {f3(med_ratio, 6)} {f2(med_dmin, 6)}")
        lss = [p[0] for p in lat]
        cys = [p[2] for p in lat]
        ls_n = sum(r.count for r in lss)
        cy_n = sum(r.count for r in cys)
        pl = {"min": min(r.min_ns for r in lss) / 1000.0,
              "mean": sum(r.sum_ns for r in lss) / ls_n / 1000.0,
              "p99": LatscopeRun.pooled_p99_ns(lss) / 1000.0,
              "max": max(r.max_ns for r in lss) / 1000.0}
        cb = CyclictestRun.pooled_p99_bin(cys)
        pc = {"min": min(r.min_us for r in cys) + CYC_BIN_CENTRE_US,
              "mean": sum(r.raw_mean_us * r.count for r in cys) / cy_n + CYC_BIN_CENTRE_US,
              "p99": None if cb is None else cb + CYC_BIN_CENTRE_US,
              "max": max(r.max_us for r in cys) + CYC_BIN_CENTRE_US}
        pooled_ratio = pl["mean"] / pc["mean"]
        pooled_dmin = pl["min"] - pc["min"]
        w(f"{'pooled':>6} | {f2(pl['min'], 7)} {f2(pl['mean'], 7)} {f2(pl['p99'])} "
          f"{f2(pl['max'], 9)} | {f2(pc['min'], 7)} {f2(pc['mean'], 7)} {f2(pc['p99'])} "
          f"{f2(pc['max'], 9)} | {f3(pooled_ratio, 6)} {f2(pooled_dmin, 6)}")
        w(f"samples: latscope {ls_n}, cyclictest {cy_n}; cyclictest samples above "
          f"{CYC_HIST_US} us (histogram overflow): {sum(r.overflow for r in cys)}; "
          f"latscope overruns {sum(r.overruns for r in lss)}, "
          f"missed deadlines {sum(r.missed for r in lss)}")
        if any(p is None for p in [pc["p99"]] + [r[1]["p99"] for r in rows]):
            w("n/a p99: the 99th percentile fell above cyclictest's histogram range.")
        w("")
        w(f"target mean: median ratio latscope/cyclictest {med_ratio:.3f} <= "
          f"{MEAN_RATIO_TARGET:.2f}: {verdict(med_ratio <= MEAN_RATIO_TARGET)}"
          f"   (pooled {pooled_ratio:.3f}; pairs within target: "
          f"{sum(r[2] <= MEAN_RATIO_TARGET for r in rows)}/{len(rows)})")
        w(f"target min:  median |latscope min - cyclictest min| {abs(med_dmin):.2f} us <= "
          f"{MIN_DIFF_TARGET_US:.1f}: {verdict(abs(med_dmin) <= MIN_DIFF_TARGET_US)}"
          f"   (pooled {pooled_dmin:+.2f} us; cyclictest's min is only known to +-0.5 us)")
        w("")

        det.append("Latency pairs, raw figures as the tools reported them")
        det.append("  latscope: ns; cyclictest: whole us (floored samples), avg = sum/cycles "
                   "from --json (no +0.5)")
        for i, (ls, lch, cy, cch) in enumerate(lat, 1):
            det.append(f"  pair {i} ({order_tag(i)}) A latscope:   n={ls.count} min={ls.min_ns} "
                       f"mean={ls.mean_ns:.0f} p99={ls.own_p99_ns if ls.own_p99_ns else '-'} "
                       f"max={ls.max_ns} ns; overruns={ls.overruns} missed={ls.missed}; "
                       f"status={ls.status}; cpu user+sys={lch.utime:.3f}+{lch.stime:.3f} s; "
                       f"wall {lch.wall:.1f} s")
            for note in ls.notes:
                det.append(f"      latscope note: {note}")
            det.append(f"  pair {i} ({order_tag(i)}) B cyclictest: n={cy.count} min={cy.min_us} "
                       f"avg={cy.raw_mean_us:.2f} "
                       f"p99bin={CyclictestRun.pooled_p99_bin([cy])} max={cy.max_us} us; "
                       f"overflow={cy.overflow}; cpu user+sys={cch.utime:.3f}+{cch.stime:.3f} s; "
                       f"wall {cch.wall:.1f} s")
            det.append(f"      mean ratio vs raw cyclictest avg (no +0.5): "
                       f"{ls.mean_ns / 1000.0 / cy.raw_mean_us:.3f}")
        det.append("")

    # ---- CPU time
    if cpu:
        w(f"2. CPU time at a {args.cpu_period_us} us period: {len(cpu)} pairs x "
          f"{args.cpu_seconds} s")
        w("   a) The measuring threads (latscope's lat-timer/N, cyclictest's timer threads):")
        w("      run time from /proc/PID/task/TID/schedstat (ns), read at 20% and 80% of each")
        w("      run, so start-up and exit fall outside; shown as ms of CPU per second of")
        w("      window (one core = 1000). This is the figure the target is about.")
        w("")
        sub = (f"{'pair':>6} | {'latscope ms/s':>13} {'threads':>7} | "
               f"{'cyclictest ms/s':>15} {'threads':>7} | {'ls/cy':>6}")
        w(sub)
        w("-" * len(sub))
        t_ratios = []
        lw = cw = 0.0
        for i, (ls, lch, cy, cch) in enumerate(cpu, 1):
            if lch.window_ns is None or cch.window_ns is None:
                w(f"{pair_label(i)} | {'n/a':>13} {'':7} | {'n/a':>15} {'':7} | {'n/a':>6}")
                continue
            l_ms = lch.window_ns / 1e6 / lch.window_s
            c_ms = cch.window_ns / 1e6 / cch.window_s
            lw += l_ms
            cw += c_ms
            r = l_ms / c_ms if c_ms > 0 else float("inf")
            t_ratios.append(r)
            w(f"{pair_label(i)} | {l_ms:13.2f} {lch.window_threads:7d} | {c_ms:15.2f} "
              f"{cch.window_threads:7d} | {f3(r, 6)}")
        w("-" * len(sub))
        if t_ratios:
            med_t = statistics.median(t_ratios)
            tot_t = lw / cw if cw > 0 else float("inf")
            w(f"{'median':>6} | {'':13} {'':7} | {'':15} {'':7} | {f3(med_t, 6)}   "
              f"(total {tot_t:.3f})")
            w(f"per wake-up: latscope {lw / len(t_ratios) / 1000 * args.cpu_period_us / len(args.cpus):.2f} us "
              f"CPU, cyclictest {cw / len(t_ratios) / 1000 * args.cpu_period_us / len(args.cpus):.2f} us CPU")
        else:
            med_t = None
            w("no window figures (a run ended before 80% of its length?)")
        w("")
        w("   b) Each whole process, all threads, start-up and exit included: user+sys CPU")
        w("      seconds from the rusage wait4() returns (the total is exact; the user/sys")
        w("      split is tick-sampled). cyclictest runs without histogram (-q), latscope")
        w("      with --json, --store (checkpoints every 10 s) and --quiet.")
        w("")
        sub = (f"{'pair':>6} | {'latscope user':>13} {'sys':>7} {'total':>7} {'samples':>9} | "
               f"{'cyclictest user':>15} {'sys':>7} {'total':>7} {'samples':>9} | {'ls/cy':>6}")
        w(sub)
        w("-" * len(sub))
        ratios = []
        lt_all = ct_all = 0.0
        for i, (ls, lch, cy, cch) in enumerate(cpu, 1):
            lt = lch.utime + lch.stime
            ct = cch.utime + cch.stime
            lt_all += lt
            ct_all += ct
            r = lt / ct if ct > 0 else float("inf")
            ratios.append(r)
            w(f"{pair_label(i)} | {lch.utime:13.3f} {lch.stime:7.3f} {lt:7.3f} {ls.count:9d} | "
              f"{cch.utime:15.3f} {cch.stime:7.3f} {ct:7.3f} {cy.count:9d} | {f3(r, 6)}")
        w("-" * len(sub))
        med_r = statistics.median(ratios)
        w(f"{'median':>6} | {'':13} {'':7} "
          f"{statistics.median(p[1].utime + p[1].stime for p in cpu):7.3f} {'':9} | "
          f"{'':15} {'':7} {statistics.median(p[3].utime + p[3].stime for p in cpu):7.3f} "
          f"{'':9} | {f3(med_r, 6)}")
        tot_r = lt_all / ct_all if ct_all > 0 else float("inf")
        w(f"{'total':>6} | {'':13} {'':7} {lt_all:7.3f} {'':9} | {'':15} {'':7} {ct_all:7.3f} "
          f"{'':9} | {f3(tot_r, 6)}")
        w("")
        if med_t is not None:
            w(f"target CPU:  median ratio of measuring-thread CPU latscope/cyclictest {med_t:.3f} "
              f"<= {CPU_RATIO_TARGET:.2f}: {verdict(med_t <= CPU_RATIO_TARGET)}")
        else:
            w("target CPU:  no measuring-thread figures: FAIL")
        w(f"whole process (information): median ratio {med_r:.3f}, total {tot_r:.3f}")
        w("")
        det.append("CPU pairs, rusage details")
        for i, (ls, lch, cy, cch) in enumerate(cpu, 1):
            det.append(f"  pair {i} ({order_tag(i)}) A latscope:   wall {lch.wall:.2f} s, maxrss {lch.maxrss_kb} kB, "
                       f"ctx switches vol {lch.nvcsw} invol {lch.nivcsw}, samples {ls.count}, "
                       f"mean {ls.mean_ns / 1000:.2f} us")
            det.append(f"  pair {i} ({order_tag(i)}) B cyclictest: wall {cch.wall:.2f} s, maxrss {cch.maxrss_kb} kB, "
                       f"ctx switches vol {cch.nvcsw} invol {cch.nivcsw}, samples {cy.count}, "
                       f"mean {cy.raw_mean_us + CYC_BIN_CENTRE_US:.2f} us")
        det.append("")

    det.extend(bench.details)
    det.append("Commands (paths under a temporary directory):")
    det.append(f"  latscope run --cpus {fmt_cpus(args.cpus)} --period <P>us --priority "
               f"{args.priority} --policy fifo --duration <S>s --store <tmp>/bench.db "
               f"--json <tmp>/out.json --quiet")
    det.append(f"  cyclictest -m -p{args.priority} --policy=fifo -i<P> -a{fmt_cpus(args.cpus)} "
               f"-t{len(args.cpus)} -D<S>s -q [-h {CYC_HIST_US} --histfile=<tmp>/cyc.hist] "
               f"--json=<tmp>/cyc.json"
               + (f" --mainaffinity={fmt_cpus(args.main_cpus)}" if args.main_cpus else "")
               + "   (histogram only in the latency phase)")
    det.append(f"  script: bench/vs-cyclictest.sh {' '.join(args.argv)}".rstrip())
    det.append(f"  load average at end: {read_first_line('/proc/loadavg')}")
    return out, det


# --------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(
        prog="bench/vs-cyclictest.sh",
        description="latscope vs cyclictest: timer latency and CPU cost, A/B alternation "
                    "(the order flips every pair: A B B A).")
    p.add_argument("--cpus", help="CPU list, e.g. 1 or 2,3 (default: the last online CPU)")
    p.add_argument("--pairs", type=int, default=4, help="latency pairs (default 4)")
    p.add_argument("--seconds", type=int, default=10, help="seconds per latency run (default 10)")
    p.add_argument("--cpu-pairs", type=int, default=4, help="CPU-time pairs (default 4; 0 skips)")
    p.add_argument("--cpu-seconds", type=int, default=10,
                   help="seconds per CPU-time run (default 10)")
    p.add_argument("--period-us", type=int, default=1000,
                   help="period of the latency runs in us (default 1000)")
    p.add_argument("--cpu-period-us", type=int, default=100,
                   help="period of the CPU-time runs in us (default 100)")
    p.add_argument("--priority", type=int, default=95, help="SCHED_FIFO priority (default 95)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 2 pairs of 3 s in both phases")
    p.add_argument("--keep-tmp", action="store_true", help="keep the raw tool outputs")
    p.add_argument("--no-results-file", action="store_true",
                   help="do not write bench/results/vs-cyclictest-<UTC>.txt")
    p.add_argument("--latscope", default=os.environ.get(
        "LATSCOPE", os.path.join(REPO, "target", "release", "latscope")), help=argparse.SUPPRESS)
    p.add_argument("--cyclictest", default=os.environ.get("CYCLICTEST") or
                   shutil.which("cyclictest") or "cyclictest", help=argparse.SUPPRESS)
    p.add_argument("--quiet-progress", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.argv = sys.argv[1:]

    if args.quick:
        args.pairs, args.seconds = 2, 3
        args.cpu_pairs, args.cpu_seconds = 2, 3
    if os.geteuid() != 0:
        die("must run as root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency): sudo bench/vs-cyclictest.sh")
    if not (os.path.isfile(args.cyclictest) and os.access(args.cyclictest, os.X_OK)):
        die("cyclictest not found: install it with 'apt-get install rt-tests'")
    if not (os.path.isfile(args.latscope) and os.access(args.latscope, os.X_OK)):
        die(f"latscope binary not found at {args.latscope}: run 'cargo build --release -p latscope'")
    for name in ("pairs", "seconds", "cpu_seconds", "period_us", "cpu_period_us"):
        if getattr(args, name) < 1:
            die(f"--{name.replace('_', '-')} must be at least 1")
    if args.cpu_pairs < 0:
        die("--cpu-pairs must be 0 or more")
    if not 1 <= args.priority <= 99:
        die("--priority must be 1-99")
    online = online_cpus()
    try:
        args.cpus = parse_cpu_list(args.cpus) if args.cpus else [online[-1]]
    except ValueError as e:
        die(f"bad --cpus: {e}")
    bad = [c for c in args.cpus if c not in online]
    if bad:
        die(f"CPU(s) {fmt_cpus(bad)} not online (online: {fmt_cpus(online)})")

    args.main_cpus = [c for c in online if c not in args.cpus]

    warnings = []
    bench = Bench(args)

    def on_signal(signum, frame):
        ch = Child.current
        if ch is not None:
            try:
                ch.kill()
                ch.wait()
            except OSError:
                pass
        bench.cleanup()
        print("vs-cyclictest: interrupted", file=sys.stderr)
        sys.exit(130)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    started = datetime.datetime.now(datetime.timezone.utc)
    total = args.pairs * args.seconds * 2 + args.cpu_pairs * args.cpu_seconds * 2
    bench.progress(f"vs-cyclictest: about {total} s of measuring on CPU(s) {fmt_cpus(args.cpus)}")
    try:
        lat = bench.latency_phase()
        cpu = bench.cpu_phase() if args.cpu_pairs > 0 else []
        for entry in other_measurers(set()):
            bench.others.setdefault(entry.split(":", 1)[0], entry)
        if bench.others:
            shown = list(bench.others.values())
            warnings.append(f"{len(shown)} other latscope/cyclictest process(es) ran during the "
                            f"benchmark\n  and may have competed for the CPUs: treat these results as suspect "
                            f"(see the results file).\n  First seen: {shown[0]}")
            bench.details.extend(["Other latency tools seen between runs:"] +
                                 [f"  {e}" for e in shown] + [""])
        ended = datetime.datetime.now(datetime.timezone.utc)
        out, det = report(args, bench, lat, cpu, started, ended, warnings)
        text = "\n".join(out)
        if not args.no_results_file:
            os.makedirs(RESULTS_DIR, exist_ok=True)
            name = f"vs-cyclictest-{started:%Y%m%dT%H%M%SZ}.txt"
            path = os.path.join(RESULTS_DIR, name)
            with open(path + ".tmp", "w") as f:
                f.write(text + "\n\nDetails\n-------\n" + "\n".join(det) + "\n")
            os.replace(path + ".tmp", path)
            text += f"\nresults file (with raw figures and commands): " \
                    f"{os.path.relpath(path, os.getcwd())}"
        print(text, flush=True)
    finally:
        bench.cleanup()


if __name__ == "__main__":
    main()
