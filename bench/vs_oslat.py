#!/usr/bin/env python3
"""latscope's noise probe vs oslat: loop cost, resolution and OS noise.

Normally started through bench/vs-oslat.sh, which checks root and the two
binaries first. Standard library only; no network.

N pairs of latscope (`run --probe noise --pause 0`, A) and oslat (B), the
order flipping from one pair to the next (A B, B A, A B ...: every two pairs
run A B B A), on the same CPU, with the same scheduling policy and
priority and for the same number of seconds. Both spin on the CPU and time
every turn of their loop; a turn much longer than the loop's own cost means
the loop was interrupted. From each tool's JSON the benchmark takes the cost
of one turn, the smallest interruption it can see, and the interruptions
above a common threshold (count, total time, share of the time, longest),
using latscope's `noise.gap` histogram and oslat's 1-us histogram.

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
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "bench", "results")

# Targets from the issue.
BASE_RATIO_TARGET = 1.00   # latscope's base iteration <= oslat's loop cost
NOISE_TOLERANCE = 0.20     # total noise within +-20 % of each other (idle)

# Iterations shorter than this count as uninterrupted when the loop cost is
# worked out: oslat cannot tell anything apart below its first bucket edge.
LOOP_EDGE_NS = 1000

# Thresholds of the "interruptions above" table, in us.
TABLE_THRESHOLDS_US = (1, 2, 5, 10, 20, 50, 100, 200, 500)

# oslat prints its per-thread "avg" with printf("%lf"): six decimals; and
# "duration" with "%.3f" (ms).
OSLAT_AVG_HALF_ULP = 0.5e-6
OSLAT_DURATION_HALF_ULP_NS = 0.5e6

EXIT_TARGET_MISSED = 3


def die(msg):
    print(f"vs-oslat: error: {msg}", file=sys.stderr)
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
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return sorted(set(cpus))


def online_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        return parse_cpu_list(f.read().strip())


def read_first_line(path, default="?"):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return default


def read_int(path):
    try:
        return int(read_first_line(path, ""))
    except ValueError:
        return None


def other_measurers():
    """Other running latency tools: they would compete for the CPU."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        comm = read_first_line(f"/proc/{name}/comm", "")
        if comm in ("latscope", "oslat", "cyclictest", "stress-ng"):
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmd = comm
            found.append(f"pid {name}: {cmd[:120]}")
    return found


def cpu_steal_ticks(cpu):
    """Steal time of one CPU from /proc/stat, in USER_HZ ticks (or None)."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                fields = line.split()
                if fields and fields[0] == f"cpu{cpu}":
                    return int(fields[8]) if len(fields) > 8 else None
    except (OSError, ValueError):
        pass
    return None


def cpu_interrupts(cpu):
    """Interrupts handled so far by one CPU, summed over /proc/interrupts."""
    try:
        with open("/proc/interrupts") as f:
            header = f.readline().split()
            if f"CPU{cpu}" not in header:
                return None
            col = header.index(f"CPU{cpu}") + 1  # + the "NN:" label column
            total = 0
            for line in f:
                fields = line.split()
                if len(fields) > col:
                    try:
                        total += int(fields[col])
                    except ValueError:
                        pass
            return total
    except OSError:
        return None


class DmaLatency:
    """Holds /dev/cpu_dma_latency at 0 (latscope does so itself; oslat does
    not, so the driver does it around oslat's runs)."""

    def __init__(self):
        self.fd = None
        self.error = None

    def __enter__(self):
        try:
            self.fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
            os.write(self.fd, struct.pack("<i", 0))
        except OSError as e:
            self.error = str(e)
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return False


class Child:
    """Runs one command to the end; wait4() gives its exact rusage. Records
    the measured CPU's steal time and interrupts around the run."""

    current = None  # for the signal handler

    def __init__(self, argv, cwd, out_path, err_path, timeout_s, cpu):
        self.argv = argv
        self.cwd = cwd
        self.out_path = out_path
        self.err_path = err_path
        self.timeout_s = timeout_s
        self.cpu = cpu
        self.timed_out = False

    def run(self):
        steal0, irq0 = cpu_steal_ticks(self.cpu), cpu_interrupts(self.cpu)
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)
            Child.current = proc

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
            self.wall = time.monotonic() - t0
        steal1, irq1 = cpu_steal_ticks(self.cpu), cpu_interrupts(self.cpu)
        hz = os.sysconf("SC_CLK_TCK")
        self.steal_ms = (None if steal0 is None or steal1 is None
                         else (steal1 - steal0) * 1000.0 / hz)
        self.interrupts = None if irq0 is None or irq1 is None else irq1 - irq0
        self.rc = os.waitstatus_to_exitcode(status)
        self.utime = ru.ru_utime
        self.stime = ru.ru_stime
        self.nvcsw = ru.ru_nvcsw
        self.nivcsw = ru.ru_nivcsw
        return self

    def check(self, what):
        if self.timed_out:
            die(f"{what} did not finish within {self.timeout_s:.0f} s; stopped it "
                f"(command: {' '.join(self.argv)})")
        if self.rc != 0:
            tail = ""
            for path in (self.err_path, self.out_path):
                try:
                    with open(path, errors="replace") as f:
                        tail = " | ".join(f.read().strip().splitlines()[-3:])
                except OSError:
                    pass
                if tail:
                    break
            die(f"{what} exited with status {self.rc}: {tail or '(no output)'} "
                f"(command: {' '.join(self.argv)})")


# --------------------------------------------------------------------------
# the two tools' results, in one shape
#
# Both give, for a threshold t (and optionally an upper limit u), how many
# iterations were at least t long (and shorter than u) and how much time they
# took. latscope's figures are exact or within its histogram's 0.1 %; oslat's
# time sums are known only to its 1-us buckets, so they come as
# (estimate, lowest, highest).


class Span:
    """Interruptions in one length range: count and time (ns)."""

    def __init__(self, count=0.0, est=0.0, lo=0.0, hi=0.0):
        self.count, self.est, self.lo, self.hi = count, est, lo, hi

    def add(self, other):
        return Span(self.count + other.count, self.est + other.est,
                    self.lo + other.lo, self.hi + other.hi)


class LatscopeNoise:
    """One latscope noise run, one CPU: `cells[].noise[]` and `noise.gap`."""

    def __init__(self, path, cpu):
        with open(path) as f:
            doc = json.load(f)
        self.path = path
        self.status = doc.get("status")
        self.notes = doc.get("notes") or []
        self.version = doc.get("tool_version", "?")
        self.capabilities = doc.get("capabilities") or {}
        stats = metric = settings = None
        for cell in doc.get("cells", []):
            for n in cell.get("noise") or []:
                if n.get("cpu") == cpu:
                    stats, settings = n, cell.get("settings") or {}
            for m in cell.get("metrics") or []:
                if m.get("name") == "noise.gap" and m.get("cpu") == cpu:
                    metric = m
        if stats is None:
            die(f"no cells[].noise[] entry for CPU {cpu} in {path} "
                f"(was it a noise-probe run on that CPU?)")
        if metric is None:
            die(f"no noise.gap metric for CPU {cpu} in {path}")
        self.settings = settings
        self.clock = stats.get("clock", "?")
        self.tsc_hz = stats.get("tsc_hz")
        self.active_ns = int(stats["active_ns"])
        self.iterations = int(stats["iterations"])
        if stats.get("base_iteration_ps") is not None:
            self.base_ns = stats["base_iteration_ps"] / 1000.0
        else:
            self.base_ns = float(stats["base_iteration_ns"])
        self.gap_threshold_ns = int(stats["gap_threshold_ns"])
        self.interruptions = int(stats["interruptions"])
        self.noise_ns = int(stats["noise_ns"])
        self.max_ns = int(stats["max_gap_ns"])
        self.steal_ns = stats.get("steal_ns")
        self.findings = stats.get("findings") or []
        self.classes = stats.get("classes") or {}
        self.hist = [(int(lo), int(hi), int(c)) for lo, hi, c in metric.get("histogram") or []]
        if sum(c for _, _, c in self.hist) != self.interruptions:
            # Not fatal: a checkpoint race could leave them a few apart.
            self.notes = self.notes + [
                f"(benchmark) noise.gap histogram holds {sum(c for _, _, c in self.hist)} "
                f"gaps, noise[].interruptions says {self.interruptions}"]
        if self.active_ns <= 0 or self.iterations <= 0:
            die(f"latscope measured nothing on CPU {cpu} ({path})")

    @property
    def seconds(self):
        return self.active_ns / 1e9

    def span(self, t_ns, u_ns=None):
        """Gaps of length in [t_ns, u_ns). Each histogram bucket [lo, hi]
        (hi inclusive) that straddles a limit contributes pro rata."""
        if t_ns <= self.gap_threshold_ns and u_ns is None:
            # Every recorded gap: exact figures.
            n, s = float(self.interruptions), float(self.noise_ns)
            return Span(n, s, s, s)
        t_ns = max(t_ns, self.gap_threshold_ns)
        out = Span()
        for lo, hi, c in self.hist:
            a = max(lo, t_ns)
            b = hi if u_ns is None else min(hi, u_ns - 1)
            if a > b:
                continue
            frac = (b - a + 1) / (hi - lo + 1)
            out = out.add(Span(c * frac, c * frac * (a + b) / 2.0, c * frac * a, c * frac * b))
        return out

    def mean_short_ns(self):
        """Mean iteration among those shorter than LOOP_EDGE_NS."""
        s = self.span(LOOP_EDGE_NS)
        n = self.iterations - s.count
        return (self.active_ns - s.est) / n if n > 0 else None


class OslatRun:
    """One oslat run, one CPU, from its --json file.

    Bucket semantics (read off rt-tests 2.4's insert_bucket, the version
    verified here): each iteration of `delta` counter ticks gets
    v = floor(delta / MHz) us and goes into the bucket keyed v + 1, so the
    bucket keyed k holds iterations in [k-1, k) us, and min/max are v + 1.
    Iterations with v >= bucket-size all go into the last bucket, and the sum
    of their (v - bucket-size) is kept aside and only shows in "avg".

    Later rt-tests (those with --bucket-width) round up instead:
    v = ceil(delta / MHz) and the bucket keyed k holds (k-2, k-1] us. That
    scheme is handled from its source but not verified against a binary."""

    def __init__(self, path, cpu, buckets, scheme):
        with open(path) as f:
            doc = json.load(f)
        self.path = path
        self.version = doc.get("rt_test_version:", doc.get("rt_test_version", "?"))
        self.return_code = doc.get("return_code")
        threads = list((doc.get("thread") or {}).values())
        if len(threads) != 1:
            die(f"oslat reported {len(threads)} threads, expected 1 ({path})")
        t = threads[0]
        if t.get("cpu") != cpu:
            die(f"oslat ran on CPU {t.get('cpu')}, expected {cpu} ({path})")
        self.scheme = scheme
        self.nbuckets = buckets
        self.mhz = int(t["freq"])
        self.min_us = int(t["min"])
        self.max_us = int(t["max"])
        self.avg_us = float(t["avg"])
        self.duration_s = float(t["duration"])
        self.hist = {int(k): int(c) for k, c in (t.get("histogram") or {}).items()}
        if not self.hist:
            die(f"oslat recorded no iterations ({path})")
        if max(self.hist) > buckets:
            die(f"oslat histogram key {max(self.hist)} above --bucket-size {buckets} ({path}): "
                f"unexpected bucket layout")
        self.n = sum(self.hist.values())
        # avg = (sum over buckets of key * count + overflow extra) / n
        keyed = sum(k * c for k, c in self.hist.items())
        self.overflow_extra_us = self.avg_us * self.n - keyed
        self.avg_rounding_us = OSLAT_AVG_HALF_ULP * self.n

    @property
    def seconds(self):
        return self.duration_s

    @property
    def duration_ns(self):
        return self.duration_s * 1e9

    def bucket_lo_ns(self, key):
        """Shortest iteration a bucket can hold (inclusive for the floor
        scheme, exclusive for the ceiling one, which makes no difference to
        counts at whole-us thresholds)."""
        v = key - 1
        return (v if self.scheme == "floor" else v - 1) * 1000

    @property
    def last_lo_ns(self):
        """The start of the last (overflow) bucket: above it oslat keeps no
        lengths, only a sum."""
        return self.bucket_lo_ns(self.nbuckets)

    def _bucket_span(self, key, c):
        v = key - 1
        if key < self.nbuckets:
            lo_us, hi_us = (v, v + 1) if self.scheme == "floor" else (v - 1, v)
            return Span(c, c * (lo_us + hi_us) / 2.0 * 1000, c * lo_us * 1000, c * hi_us * 1000)
        # Last bucket: the sum of v over it is (B-1)*c + (number of true
        # overflows, unknown in 0..c) + the overflow extra from "avg", which
        # is known to +-avg_rounding.
        base = (self.nbuckets - 1) * c + self.overflow_extra_us
        v_lo = max(base - self.avg_rounding_us, (self.nbuckets - 1) * c)
        v_hi = base + c + self.avg_rounding_us
        if self.scheme == "floor":
            lo_us, hi_us = v_lo, v_hi + c
        else:
            lo_us, hi_us = v_lo - c, v_hi
        return Span(c, (lo_us + hi_us) / 2.0 * 1000, lo_us * 1000, hi_us * 1000)

    def span(self, t_ns, u_ns=None):
        """Iterations in buckets starting at or above t_ns (and below u_ns)."""
        out = Span()
        for key, c in self.hist.items():
            lo = self.bucket_lo_ns(key)
            if lo < t_ns or (u_ns is not None and lo >= u_ns):
                continue
            out = out.add(self._bucket_span(key, c))
        return out

    def loop_ns(self):
        """Mean iteration among those below LOOP_EDGE_NS, as
        (estimate, lowest, highest): the time not spent in longer
        iterations over the number of shorter ones."""
        s = self.span(LOOP_EDGE_NS)
        n = self.n - s.count
        if n <= 0:
            return None, None, None
        d = self.duration_ns
        r = OSLAT_DURATION_HALF_ULP_NS
        return (d - s.est) / n, (d - r - s.hi) / n, (d + r - s.lo) / n

    def max_est_us(self):
        """oslat's max is the upper edge of its 1-us bucket."""
        return self.max_us - 0.5


def oslat_scheme(oslat):
    """'floor' for rt-tests up to 2.4 (no --bucket-width), 'ceil' after."""
    try:
        text = subprocess.run([oslat, "--help"], capture_output=True, text=True,
                              timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    return "ceil" if "--bucket-width" in text else "floor"


# --------------------------------------------------------------------------
# the benchmark


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="latscope-vs-oslat-")
        self.seq = 0
        self.others = {}
        self.dma_errors = []

    def cleanup(self):
        if self.args.keep_tmp:
            print(f"(kept the raw outputs in {self.tmp})")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def progress(self, msg):
        print(msg, file=sys.stderr, flush=True)

    def _dir(self, tag):
        for entry in other_measurers():
            self.others.setdefault(entry.split(":", 1)[0], entry)
        self.seq += 1
        d = os.path.join(self.tmp, f"{self.seq:02d}-{tag}")
        os.makedirs(d)
        return d

    def latscope_argv(self, d):
        a = self.args
        argv = [a.latscope, "run", "--probe", "noise", "--cpus", str(a.cpu),
                "--duration", f"{a.seconds}s", "--policy", a.policy]
        if a.policy == "fifo":
            argv += ["--priority", str(a.priority)]
        argv += ["--pause", "0", "--store", os.path.join(d, "bench.db"),
                 "--json", os.path.join(d, "out.json"), "--quiet"]
        return argv

    def oslat_argv(self, d):
        a = self.args
        argv = [a.oslat, "--cpu-list", str(a.cpu), "--duration", str(a.seconds),
                "--bucket-size", str(a.buckets), "--cpu-main-thread", str(a.main_cpu)]
        if a.policy == "fifo":
            argv += ["--rtprio", str(a.priority)]
        argv += ["--quiet", "--json=" + os.path.join(d, "oslat.json")]
        return argv

    def run_latscope(self, tag):
        d = self._dir(tag)
        argv = self.latscope_argv(d)
        ch = Child(argv, d, os.path.join(d, "stdout"), os.path.join(d, "stderr"),
                   self.args.seconds + 60, self.args.cpu).run()
        ch.check("latscope")
        return LatscopeNoise(os.path.join(d, "out.json"), self.args.cpu), ch

    def run_oslat(self, tag):
        d = self._dir(tag)
        argv = self.oslat_argv(d)
        with DmaLatency() as dma:
            if dma.error:
                self.dma_errors.append(dma.error)
            # + 1 s: oslat spins a second to "pre-heat" before it measures.
            ch = Child(argv, d, os.path.join(d, "stdout"), os.path.join(d, "stderr"),
                       self.args.seconds + 61, self.args.cpu).run()
        ch.check("oslat")
        return OslatRun(os.path.join(d, "oslat.json"), self.args.cpu, self.args.buckets,
                        self.args.scheme), ch

    def pairs(self):
        a = self.args
        out = []
        for i in range(1, a.pairs + 1):
            got = {}
            for tool in pair_tools(i):
                if tool == "latscope":
                    self.progress(f"pair {i}/{a.pairs} ({order_tag(i)}): A latscope "
                                  f"{a.seconds} s ...")
                    got[tool] = self.run_latscope(f"p{i}-latscope")
                else:
                    self.progress(f"pair {i}/{a.pairs} ({order_tag(i)}): B oslat {a.seconds} s "
                                  f"(+1 s pre-heat) ...")
                    got[tool] = self.run_oslat(f"p{i}-oslat")
            out.append(got["latscope"] + got["oslat"])
        return out


# --------------------------------------------------------------------------
# the order of the tools


def pair_tools(i):
    """The tools of pair i (from 1) in the order they run: latscope first in
    odd pairs, oslat first in even ones (A B, B A, A B ...)."""
    return ("latscope", "oslat") if i % 2 == 1 else ("oslat", "latscope")


def order_tag(i):
    """`AB` when latscope (A) ran first in pair i, `BA` when oslat did."""
    return "AB" if i % 2 == 1 else "BA"


def pair_label(i):
    """The pair column of the tables: number and order, 6 characters."""
    return f"{i:>3} {order_tag(i)}"


# --------------------------------------------------------------------------
# report


def fmt(x, width=8, prec=2):
    if x is None:
        return "n/a".rjust(width)
    if isinstance(x, float) and math.isinf(x):
        return "inf".rjust(width)
    return f"{x:{width}.{prec}f}"


def ratio(a, b):
    if a is None or b is None:
        return None
    if b == 0:
        return 1.0 if a == 0 else math.inf
    return a / b


def med(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def verdict(ok):
    return "PASS" if ok else "FAIL"


def within(r, tol=NOISE_TOLERANCE):
    return r is not None and abs(r - 1.0) <= tol


def noise_row(ls, os_, t_ns, u_ns):
    """Per-pair figures of one noise comparison: spans, percentages, ratios
    (with the range oslat's rounding allows)."""
    l = ls.span(t_ns, u_ns)
    o = os_.span(t_ns, u_ns)
    lp = 100.0 * l.est / ls.active_ns
    op = 100.0 * o.est / os_.duration_ns
    op_lo = 100.0 * o.lo / os_.duration_ns
    op_hi = 100.0 * o.hi / os_.duration_ns
    return {"l": l, "o": o, "lp": lp, "op": op, "r": ratio(lp, op),
            "r_lo": ratio(lp, op_hi), "r_hi": ratio(lp, op_lo)}


def noise_section(w, title, rows, pooled_ls, pooled_os, secs_ls, secs_os):
    w(title)
    sub = (f"{'pair':>6} | {'count':>8} {'ms':>9} {'%':>7} | "
           f"{'count':>8} {'ms':>9} {'(range)':>17} {'%':>7} | {'ls/os %':>8}")
    w(f"{'':>6} | {'latscope':^26} | {'oslat':^44} |")
    w(sub)
    w("-" * len(sub))
    for i, r in enumerate(rows, 1):
        rng = f"{r['o'].lo / 1e6:.3f}-{r['o'].hi / 1e6:.3f}"
        w(f"{pair_label(i)} | {r['l'].count:8.0f} {r['l'].est / 1e6:9.3f} {r['lp']:7.3f} | "
          f"{r['o'].count:8.0f} {r['o'].est / 1e6:9.3f} {rng:>17} {r['op']:7.3f} | "
          f"{fmt(r['r'], 8, 3)}")
    w("-" * len(sub))
    m = med(r["r"] for r in rows)
    w(f"{'median':>6} | {med(r['l'].count for r in rows):8.1f} "
      f"{med(r['l'].est for r in rows) / 1e6:9.3f} {med(r['lp'] for r in rows):7.3f} | "
      f"{med(r['o'].count for r in rows):8.1f} {med(r['o'].est for r in rows) / 1e6:9.3f} "
      f"{'':>17} {med(r['op'] for r in rows):7.3f} | {fmt(m, 8, 3)}")
    plp = 100.0 * pooled_ls.est / (secs_ls * 1e9)
    pop = 100.0 * pooled_os.est / (secs_os * 1e9)
    rng = f"{pooled_os.lo / 1e6:.3f}-{pooled_os.hi / 1e6:.3f}"
    w(f"{'pooled':>6} | {pooled_ls.count:8.0f} {pooled_ls.est / 1e6:9.3f} {plp:7.3f} | "
      f"{pooled_os.count:8.0f} {pooled_os.est / 1e6:9.3f} {rng:>17} {pop:7.3f} | "
      f"{fmt(ratio(plp, pop), 8, 3)}")
    return m, ratio(plp, pop)


def noise_verdict(w, label, rows, pooled_r):
    m = med(r["r"] for r in rows)
    m_lo = med(r["r_lo"] for r in rows)
    m_hi = med(r["r_hi"] for r in rows)
    ok = within(m)
    robust = within(m_lo) == ok and within(m_hi) == ok
    inside = sum(within(r["r"]) for r in rows)
    w(f"target {label}: median ratio latscope/oslat {fmt(m, 0, 3)} within "
      f"1 +- {NOISE_TOLERANCE:.2f}: {verdict(ok)}   (pooled {fmt(pooled_r, 0, 3)}; "
      f"pairs within: {inside}/{len(rows)}"
      + ("" if robust else f"; NOT decided by the data: oslat's bucket rounding allows "
                          f"{fmt(m_lo, 0, 3)}-{fmt(m_hi, 0, 3)}") + ")")
    return ok


def report(args, bench, pairs, started, ended, warnings):
    out, det = [], []
    w = out.append
    ls0, _, os0, _ = pairs[0]
    uname = platform.uname()
    rt_runtime = read_int("/proc/sys/kernel/sched_rt_runtime_us")
    rt_period = read_int("/proc/sys/kernel/sched_rt_period_us")
    t_ns = args.threshold_us * 1000
    long_ns = os0.last_lo_ns
    policy = (f"SCHED_FIFO priority {args.priority}" if args.policy == "fifo"
              else "SCHED_OTHER (nice 0)")
    ls_secs = sum(p[0].seconds for p in pairs)
    os_secs = sum(p[2].seconds for p in pairs)
    failed = []

    w("latscope noise probe vs oslat: loop cost, resolution, OS noise (A/B alternation)")
    w("=" * 80)
    w(f"started {started:%Y-%m-%d %H:%M:%S} UTC, ended {ended:%H:%M:%S} UTC; "
      f"host {uname.node}, kernel {uname.release}")
    w(f"latscope {ls0.version} ({args.latscope}); oslat {os0.version} ({args.oslat}, "
      f"{'floor' if args.scheme == 'floor' else 'ceiling'}-rounded 1-us buckets, "
      f"--bucket-size {args.buckets})")
    w(f"CPU {args.cpu}, {policy} in both, {len(pairs)} pairs x {args.seconds} s; "
      f"mlockall and /dev/cpu_dma_latency=0 in both; oslat's main thread on CPU {args.main_cpu}")
    thr = ("off" if rt_runtime is not None and rt_runtime < 0
           else f"{rt_runtime} us of every {rt_period} us")
    w(f"RT throttling (sched_rt_runtime_us): {thr}")
    w("order: A = latscope, B = oslat; A first in odd pairs, B first in even ones")
    w("       (AB, BA, AB ...: every two pairs run A B B A; the pair column shows it)")
    for msg in warnings:
        w(f"WARNING: {msg}")
    w("")

    # ---- 1. loop cost and resolution
    w("1. Loop cost and resolution (ns)")
    w("   latscope base: its shortest iteration (calibrated TSC). 'mean<1us': the mean of")
    w("   all iterations shorter than 1 us, worked out the same way for both tools: time")
    w("   not spent in iterations >= 1 us / the number of iterations < 1 us. oslat reports")
    w("   no loop time (its minimum is '1 us', its first bucket's edge), so its loop cost")
    w("   is this mean. 'gap >=': an iteration at least this long counts as an interruption.")
    w("")
    sub = (f"{'pair':>6} | {'base':>7} {'mean<1us':>9} {'gap >=':>7} {'Miter':>7} | "
           f"{'mean<1us':>9} {'gap >=':>7} {'Miter':>7} | {'base/loop':>9} {'mean/loop':>9}")
    w(f"{'':>6} | {'latscope':^33} | {'oslat':^25} |")
    w(sub)
    w("-" * len(sub))
    loop_rows = []
    for i, (ls, _, os_, _) in enumerate(pairs, 1):
        loop, loop_lo, loop_hi = os_.loop_ns()
        lm = ls.mean_short_ns()
        row = {"base": ls.base_ns, "lmean": lm, "thr": ls.gap_threshold_ns,
               "loop": loop, "loop_lo": loop_lo, "loop_hi": loop_hi,
               "r_base": ratio(ls.base_ns, loop), "r_mean": ratio(lm, loop),
               "r_base_worst": ratio(ls.base_ns, loop_lo)}
        loop_rows.append(row)
        w(f"{pair_label(i)} | {ls.base_ns:7.2f} {fmt(lm, 9)} {ls.gap_threshold_ns:7d} "
          f"{ls.iterations / 1e6:7.1f} | {fmt(loop, 9)} {1000:7d} {os_.n / 1e6:7.1f} | "
          f"{fmt(row['r_base'], 9, 3)} {fmt(row['r_mean'], 9, 3)}")
    w("-" * len(sub))
    m_base = med(r["r_base"] for r in loop_rows)
    m_mean = med(r["r_mean"] for r in loop_rows)
    pl_loop = (sum(p[2].duration_ns - p[2].span(LOOP_EDGE_NS).est for p in pairs)
               / sum(p[2].n - p[2].span(LOOP_EDGE_NS).count for p in pairs))
    pl_lmean = (sum(p[0].active_ns - p[0].span(LOOP_EDGE_NS).est for p in pairs)
                / sum(p[0].iterations - p[0].span(LOOP_EDGE_NS).count for p in pairs))
    pl_base = min(p[0].base_ns for p in pairs)
    w(f"{'median':>6} | {med(r['base'] for r in loop_rows):7.2f} "
      f"{fmt(med(r['lmean'] for r in loop_rows), 9)} {med(r['thr'] for r in loop_rows):7.0f} "
      f"{'':>7} | {fmt(med(r['loop'] for r in loop_rows), 9)} {1000:7d} {'':>7} | "
      f"{fmt(m_base, 9, 3)} {fmt(m_mean, 9, 3)}")
    w(f"{'pooled':>6} | {pl_base:7.2f} {pl_lmean:9.2f} {'':>7} {'':>7} | {pl_loop:9.2f} "
      f"{'':>7} {'':>7} | {fmt(ratio(pl_base, pl_loop), 9, 3)} "
      f"{fmt(ratio(pl_lmean, pl_loop), 9, 3)}")
    w("   (pooled base: the lowest of the runs' bases)")
    med_thr = med(r["thr"] for r in loop_rows)
    med_base = med(r["base"] for r in loop_rows)
    med_loop = med(r["loop"] for r in loop_rows)
    w(f"smallest detectable interruption: latscope an iteration >= {med_thr:.0f} ns, i.e. an "
      f"interruption of >= ~{med_thr - med_base:.0f} ns;")
    w(f"   oslat an iteration >= 1000 ns (its first bucket edge), i.e. >= ~"
      f"{1000 - (med_loop or 0):.0f} ns (medians over pairs)")
    w("")
    ok = m_base is not None and m_base <= BASE_RATIO_TARGET
    worst = med(r["r_base_worst"] for r in loop_rows)
    w(f"target base: median latscope base / oslat loop cost {fmt(m_base, 0, 3)} <= "
      f"{BASE_RATIO_TARGET:.2f}: {verdict(ok)}   (pooled {fmt(ratio(pl_base, pl_loop), 0, 3)}; "
      f"pairs within: {sum(r['r_base'] is not None and r['r_base'] <= BASE_RATIO_TARGET for r in loop_rows)}"
      f"/{len(loop_rows)}; with oslat's loop at the low end of its rounding: {fmt(worst, 0, 3)})")
    w(f"like for like (information): mean iteration < 1 us, latscope/oslat {fmt(m_mean, 0, 3)} "
      f"(median of pairs)")
    if not ok:
        failed.append("base")
    w("")

    # ---- 2. noise at the common threshold, and without the long gaps
    w(f"2. Noise: iterations >= {args.threshold_us} us (the common threshold), count per run,")
    w("   total time (ms) and share of the measured time (%). latscope: exact count, time")
    w("   from its noise.gap histogram (within 0.1 %); measured time = active spinning.")
    w("   oslat: count exact; time from its 1-us buckets at the bucket centre, with the")
    w("   range the rounding allows; gaps beyond its last bucket from its 'avg'")
    w("   (see README); measured time = its 'duration'.")
    w("")
    rows_all = [noise_row(p[0], p[2], t_ns, None) for p in pairs]
    pooled_l = Span()
    pooled_o = Span()
    for r in rows_all:
        pooled_l, pooled_o = pooled_l.add(r["l"]), pooled_o.add(r["o"])
    _, pr_all = noise_section(w, f"   a) all iterations >= {args.threshold_us} us", rows_all,
                              pooled_l, pooled_o, ls_secs, os_secs)
    w("")
    rows_short = [noise_row(p[0], p[2], t_ns, long_ns) for p in pairs]
    pooled_l = Span()
    pooled_o = Span()
    for r in rows_short:
        pooled_l, pooled_o = pooled_l.add(r["l"]), pooled_o.add(r["o"])
    _, pr_short = noise_section(
        w, f"   b) the same without gaps >= {long_ns / 1000:.0f} us (beyond oslat's histogram; "
           f"RT throttling and long stalls, section 4)",
        rows_short, pooled_l, pooled_o, ls_secs, os_secs)
    w("")
    if not noise_verdict(w, "noise (a)", rows_all, pr_all):
        failed.append("noise (a)")
    if not noise_verdict(w, "noise (b)", rows_short, pr_short):
        failed.append("noise (b)")
    w("")

    # ---- 3. interruptions above thresholds
    w("3. Interruptions above thresholds: per second of measured time, all pairs pooled")
    w("   (counts are exact in both tools at whole microseconds).")
    w("")
    sub = (f"{'>= us':>8} | {'latscope':>10} {'/s':>9} | {'oslat':>10} {'/s':>9} | "
           f"{'ls/os':>7}")
    w(sub)
    w("-" * len(sub))
    ths = sorted({th for th in TABLE_THRESHOLDS_US + (args.threshold_us,)
                  if th * 1000 < long_ns})
    for th in ths:
        lc = sum(p[0].span(th * 1000).count for p in pairs)
        oc = sum(p[2].span(th * 1000).count for p in pairs)
        w(f"{th:>8} | {lc:10.0f} {lc / ls_secs:9.2f} | {oc:10.0f} {oc / os_secs:9.2f} | "
          f"{fmt(ratio(lc / ls_secs, oc / os_secs), 7, 3)}")
    lc = sum(p[0].span(long_ns).count for p in pairs)
    oc = sum(p[2].span(long_ns).count for p in pairs)
    w(f"{long_ns / 1000:>8.0f} | {lc:10.0f} {lc / ls_secs:9.2f} | {oc:10.0f} {oc / os_secs:9.2f} | "
      f"{fmt(ratio(lc / ls_secs, oc / os_secs), 7, 3)}")
    w(f"latscope's own threshold: {sum(p[0].interruptions for p in pairs)} interruptions "
      f"(iterations >= gap threshold), {100.0 * sum(p[0].noise_ns for p in pairs) / (ls_secs * 1e9):.3f} % "
      f"of the time")
    w("")

    # ---- 4. long gaps, maxima, throttling
    w(f"4. Long gaps (>= {long_ns / 1000:.0f} us) and the longest iteration")
    w("")
    sub = (f"{'pair':>6} | {'count':>6} {'ms':>9} {'max us':>10} | {'count':>6} {'ms':>9} "
           f"{'max us':>10} | {'steal ms':>8} {'steal ms':>8}")
    w(f"{'':>6} | {'latscope':^27} | {'oslat':^27} | {'ls':>8} {'os':>8}")
    w(sub)
    w("-" * len(sub))
    for i, (ls, lch, os_, och) in enumerate(pairs, 1):
        ll, ol = ls.span(long_ns), os_.span(long_ns)
        w(f"{pair_label(i)} | {ll.count:6.0f} {ll.est / 1e6:9.3f} {ls.max_ns / 1000:10.1f} | "
          f"{ol.count:6.0f} {ol.est / 1e6:9.3f} {os_.max_est_us():10.1f} | "
          f"{fmt(lch.steal_ms, 8, 0)} {fmt(och.steal_ms, 8, 0)}")
    w("-" * len(sub))
    w(f"{'median':>6} | {'':>6} {'':>9} {med(p[0].max_ns / 1000 for p in pairs):10.1f} | "
      f"{'':>6} {'':>9} {med(p[2].max_est_us() for p in pairs):10.1f} |")
    w(f"{'pooled':>6} | {'':>6} {'':>9} {max(p[0].max_ns for p in pairs) / 1000:10.1f} | "
      f"{'':>6} {'':>9} {max(p[2].max_est_us() for p in pairs):10.1f} |")
    w("   oslat's max is the top of its 1-us bucket; shown minus 0.5 us (bucket centre).")
    w("   steal: the measured CPU's steal time (/proc/stat) over the whole process, start-up")
    w("   and oslat's 1-s pre-heat included.")
    if (args.policy == "fifo" and rt_runtime is not None and rt_period
            and 0 <= rt_runtime < rt_period):
        lost = (rt_period - rt_runtime) / 1000.0
        w(f"RT throttling is on: a SCHED_FIFO loop that never sleeps can lose the CPU for "
          f"about {lost:.0f} ms")
        w(f"   in every {rt_period / 1e6:g} s, which both tools then see as long gaps "
          f"(about {args.seconds * 1e6 / rt_period:.0f} per run).")
    for i, p_ in enumerate(pairs, 1):
        for f in p_[0].findings:
            w(f"latscope finding, pair {i}: {f}")
    w("")
    w("A PASS or FAIL rests on a few short runs on a noisy machine: look at the per-pair")
    w("ratios before trusting it, and run again with more pairs (--pairs 8) if they scatter.")
    w("")

    # ---- details (results file only)
    det.append(f"oslat bucket scheme: {args.scheme}; last bucket starts at {long_ns} ns; "
               f"oslat 'avg' rounding allowance +-{OSLAT_AVG_HALF_ULP:g} us x iterations")
    det.append("Pairs, raw figures as the tools reported them")
    for i, (ls, lch, os_, och) in enumerate(pairs, 1):
        det.append(f"  pair {i} ({order_tag(i)}) A latscope: status={ls.status} clock={ls.clock} "
                   f"tsc_hz={ls.tsc_hz} active_ns={ls.active_ns} iterations={ls.iterations} "
                   f"base_ns={ls.base_ns:.3f} gap_threshold_ns={ls.gap_threshold_ns} "
                   f"interruptions={ls.interruptions} noise_ns={ls.noise_ns} "
                   f"max_gap_ns={ls.max_ns} steal_ns={ls.steal_ns}")
        det.append(f"      settings: {json.dumps(ls.settings, sort_keys=True)}")
        if ls.classes:
            det.append(f"      classes: {json.dumps(ls.classes, sort_keys=True)}")
        for f in ls.findings:
            det.append(f"      finding: {f}")
        for note in ls.notes:
            det.append(f"      note: {note}")
        det.append(f"      process: wall {lch.wall:.2f} s, cpu user+sys "
                   f"{lch.utime:.3f}+{lch.stime:.3f} s, ctx switches vol {lch.nvcsw} "
                   f"invol {lch.nivcsw}, CPU {args.cpu} interrupts {lch.interrupts}, "
                   f"steal {fmt(lch.steal_ms, 0, 0)} ms")
        det.append(f"  pair {i} ({order_tag(i)}) B oslat: freq={os_.mhz} MHz min={os_.min_us} avg={os_.avg_us} "
                   f"max={os_.max_us} us duration={os_.duration_s} s iterations={os_.n} "
                   f"overflow extra (from avg)={os_.overflow_extra_us:.0f} us "
                   f"return_code={os_.return_code}")
        det.append("      histogram: " + " ".join(f"{k}:{c}" for k, c in sorted(os_.hist.items())))
        det.append(f"      process: wall {och.wall:.2f} s, cpu user+sys "
                   f"{och.utime:.3f}+{och.stime:.3f} s, ctx switches vol {och.nvcsw} "
                   f"invol {och.nivcsw}, CPU {args.cpu} interrupts {och.interrupts}, "
                   f"steal {fmt(och.steal_ms, 0, 0)} ms")
    det.append("")
    if bench.dma_errors:
        det.append(f"/dev/cpu_dma_latency could not be held for oslat: {bench.dma_errors[0]}")
    det.append("Commands (paths under a temporary directory):")
    det.append("  " + " ".join(bench.latscope_argv("<tmp>")))
    det.append("  " + " ".join(bench.oslat_argv("<tmp>")))
    det.append(f"  script: bench/vs-oslat.sh {' '.join(args.argv)}".rstrip())
    det.append(f"  load average at end: {read_first_line('/proc/loadavg')}")
    return out, det, failed


# --------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(
        prog="bench/vs-oslat.sh",
        description="latscope's noise probe vs oslat: loop cost, resolution and OS noise, "
                    "A/B alternation on one CPU (the order flips every pair: A B B A).")
    p.add_argument("--cpu", type=int, help="the CPU to measure (default: the last online CPU)")
    p.add_argument("--pairs", type=int, default=4, help="pairs (default 4)")
    p.add_argument("--seconds", type=int, default=10, help="seconds per run (default 10)")
    p.add_argument("--priority", type=int, default=95,
                   help="SCHED_FIFO priority of both loops (default 95)")
    p.add_argument("--policy", choices=("fifo", "other"), default="fifo",
                   help="scheduling policy of both loops (default fifo)")
    p.add_argument("--threshold-us", type=int, default=1,
                   help="common threshold for counting interruptions, whole us (default 1)")
    p.add_argument("--buckets", type=int, default=1024,
                   help="oslat --bucket-size: 1-us buckets before its overflow (default 1024)")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 pairs of 3 s")
    p.add_argument("--keep-tmp", action="store_true", help="keep the raw tool outputs")
    p.add_argument("--no-results-file", action="store_true",
                   help="do not write bench/results/vs-oslat-<UTC>.txt")
    p.add_argument("--latscope", default=os.environ.get(
        "LATSCOPE", os.path.join(REPO, "target", "release", "latscope")), help=argparse.SUPPRESS)
    p.add_argument("--oslat", default=os.environ.get("OSLAT") or shutil.which("oslat")
                   or "oslat", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.argv = sys.argv[1:]

    if args.quick:
        args.pairs, args.seconds = 2, 3
    if os.geteuid() != 0:
        die("must run as root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency): sudo bench/vs-oslat.sh")
    if not (os.path.isfile(args.oslat) and os.access(args.oslat, os.X_OK)):
        die("oslat not found: install it with 'apt-get install rt-tests'")
    if not (os.path.isfile(args.latscope) and os.access(args.latscope, os.X_OK)):
        die(f"latscope binary not found at {args.latscope}: run 'cargo build --release -p latscope'")
    if args.pairs < 1 or args.seconds < 1:
        die("--pairs and --seconds must be at least 1")
    if not 1 <= args.priority <= 99:
        die("--priority must be 1-99")
    if not 5 <= args.buckets <= 1024:
        die("--buckets must be 5-1024 (oslat's limits)")
    if args.threshold_us < 1 or args.threshold_us >= args.buckets - 2:
        die(f"--threshold-us must be at least 1 and below {args.buckets - 2} "
            f"(the end of oslat's histogram)")
    online = online_cpus()
    args.cpu = online[-1] if args.cpu is None else args.cpu
    if args.cpu not in online:
        die(f"CPU {args.cpu} is not online (online: {','.join(map(str, online))})")
    others = [c for c in online if c != args.cpu]
    args.main_cpu = others[0] if others else args.cpu
    args.scheme = oslat_scheme(args.oslat)

    warnings = []
    if args.scheme != "floor":
        warnings.append("this oslat has --bucket-width (rt-tests newer than 2.4): its buckets "
                        "are read as ceiling-rounded, which was worked out from its source "
                        "and not verified here")
    if not others:
        warnings.append("only one CPU is online: both tools' housekeeping shares the measured CPU")
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
        print("vs-oslat: interrupted", file=sys.stderr)
        sys.exit(130)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    started = datetime.datetime.now(datetime.timezone.utc)
    bench.progress(f"vs-oslat: about {args.pairs * (2 * args.seconds + 1)} s of spinning "
                   f"on CPU {args.cpu}")
    try:
        pairs = bench.pairs()
        for entry in other_measurers():
            bench.others.setdefault(entry.split(":", 1)[0], entry)
        if bench.others:
            shown = list(bench.others.values())
            warnings.append(f"{len(shown)} other latency tool or load process(es) ran during "
                            f"the benchmark and may have\n  competed for the CPU: treat these "
                            f"results as suspect. First seen: {shown[0]}")
        for i, (ls, _, _, _) in enumerate(pairs, 1):
            if ls.status != "complete":
                warnings.append(f"latscope run {i} ended with status {ls.status}")
            if ls.capabilities.get("rt_priority") is False and args.policy == "fifo":
                warnings.append(f"latscope run {i} did not get SCHED_FIFO {args.priority}")
        if bench.dma_errors:
            warnings.append(f"could not hold /dev/cpu_dma_latency for oslat: {bench.dma_errors[0]}")
        ended = datetime.datetime.now(datetime.timezone.utc)
        out, det, failed = report(args, bench, pairs, started, ended, warnings)
        text = "\n".join(out)
        if not args.no_results_file:
            os.makedirs(RESULTS_DIR, exist_ok=True)
            path = os.path.join(RESULTS_DIR, f"vs-oslat-{started:%Y%m%dT%H%M%SZ}.txt")
            with open(path + ".tmp", "w") as f:
                f.write(text + "\n\nDetails\n-------\n" + "\n".join(det) + "\n")
            os.replace(path + ".tmp", path)
            text += f"\nresults file (with raw figures and commands): " \
                    f"{os.path.relpath(path, os.getcwd())}"
        print(text, flush=True)
    finally:
        bench.cleanup()
    if failed:
        sys.exit(EXIT_TARGET_MISSED)


if __name__ == "__main__":
    main()
