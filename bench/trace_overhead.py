#!/usr/bin/env python3
"""latscope's tracer overhead: the timer probe untraced, traced by perf and
traced by BPF, alternating in one run.

Normally started through bench/trace-overhead.sh. Standard library only.

Four tools, same CPUs, priority and duration:

  U = `latscope run` without --trace (untraced)
  P = `latscope run --trace --trace-backend perf`
  B = `latscope run --trace --trace-backend bpf`, bpf_stats_enabled = 0
  C = the same as B with bpf_stats_enabled = 1 (B counted)

and, on request, D = the same as B with LATSCOPE_BPF_DIAG set to the value
of --d-diag for its runs only (e.g. `warm-on`): B against D weighs one part
of the programs in one build, alternating, the way U against B weighs them
all. D takes C's place in the order (`--tools UBD`; not with C).

in four conditions by default: {idle, CPU load from `stress-ng --cpu N` on
every CPU} x {period 1000 us, 100 us}. Each condition runs N rounds (default
8); every round runs U, P, B and C once each, the order rotating through the
four rotations of U P B C, each followed by its mirror image (U P B C,
C B P U, P B C U, U C B P, B C U P, P U C B, C U P B, B P U C), so that none
always runs first and over eight rounds every tool runs twice in every slot.

Why B and C: with `/proc/sys/kernel/bpf_stats_enabled` at 1 the kernel times
every BPF program run (two sched_clock() reads and a counter update per run,
on the measured CPUs' wake-up path), which is how the programs' CPU is
counted, but which also adds to the latency being compared. So latency is
compared on B (statistics off, as users run it) and CPU is counted on C; C's
latency is quoted too, to show what the counting costs. The setting is 0 for
U, P and B, 1 for C, and put back at exit.

Per run it takes from latscope's JSON the mean, median and p99 of
timer.latency pooled over the measured CPUs (the per-CPU histograms merged)
and, for traced runs, the tracer's CPU (`tracer_cpu_ns`, the tracer thread,
plus, in C, `bpf_prog_ns`, the kernel's time in latscope's BPF programs),
events, records lost; from /proc/stat the whole machine's non-idle CPU time
over the run.

Targets (from the issue), for the BPF backend: median and p99 of
timer.latency within 5 % of untraced (median over rounds of B/U <= 1.05 for
both), tracer CPU (user + BPF, from C) under 0.5 % of one core at 1 ms, zero
lost events (B and C). perf's figures are quoted beside them, without a
target. Exit 3 if a BPF target is missed. See bench/README.md,
"trace-overhead.sh".
"""

import argparse
import datetime
import json
import math
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "bench", "results")
PROG = "trace-overhead"

# Targets from the issue, for the BPF backend.
LATENCY_RATIO_TARGET = 1.05      # median over rounds of B/U, for p50 and for p99
TRACER_CPU_TARGET_PCT = 0.5      # tracer CPU (user + BPF), % of one core, at 1 ms
TRACER_CPU_TARGET_PERIOD_US = 1000
EXIT_TARGET_MISSED = 3

BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"

TOOLS = ("U", "P", "B", "C", "D", "S")
# What runs without --tools: D only on request.
DEFAULT_TOOLS = ("U", "P", "B", "C")
TOOL_NAME = {"U": "untraced", "P": "--trace --trace-backend perf",
             "B": "--trace --trace-backend bpf",
             "C": "--trace --trace-backend bpf, counted (bpf_stats_enabled = 1)",
             "D": "--trace --trace-backend bpf with LATSCOPE_BPF_DIAG (see --d-diag)",
             "S": "--trace --trace-backend perf --stacks --stack-period 1s"}
TOOL_ARGS = {"U": [], "P": ["--trace", "--trace-backend", "perf"],
             "B": ["--trace", "--trace-backend", "bpf"],
             "C": ["--trace", "--trace-backend", "bpf"],
             "D": ["--trace", "--trace-backend", "bpf"],
             "S": ["--trace", "--trace-backend", "perf", "--stacks", "--stack-period", "1s"]}
# bpf_stats_enabled while each tool runs.
TOOL_STATS = {"U": "0", "P": "0", "B": "0", "C": "1", "D": "0", "S": "0"}
# The four rotations of U P B C, each followed by its mirror image: after
# every two rounds each tool's mean slot is the middle, after eight each tool
# has run twice in every slot.
ORDERS = (("U", "P", "B", "C"), ("C", "B", "P", "U"), ("P", "B", "C", "U"),
          ("U", "C", "B", "P"), ("B", "C", "U", "P"), ("P", "U", "C", "B"),
          ("C", "U", "P", "B"), ("B", "P", "U", "C"))


class Fatal(Exception):
    """A one-line reason to stop."""


def die(msg):
    raise Fatal(msg)


def order_of(i, tools=DEFAULT_TOOLS):
    """The tools of round i (from 1) in the order they run: ORDERS with the
    tools not chosen left out, D in C's place. Any subset keeps the balance:
    for U and B alone the eight orders give UB, BU, BU, UB, BU, UB, UB, BU."""
    swap = {"C": "D" if "D" in tools else "C", "B": "S" if "S" in tools else "B"}
    order = (swap.get(t, t) for t in ORDERS[(i - 1) % len(ORDERS)])
    return tuple(t for t in order if t in tools)


def parse_tools(text):
    """--tools: U and at least one traced tool, each once, from U P B C D;
    not C and D together (D runs in C's place in the order); D with B."""
    tools = tuple(t for t in TOOLS if t in text.upper())
    if (len(tools) != len(text) or "U" not in tools or len(tools) < 2
            or any(c not in TOOLS for c in text.upper())):
        raise argparse.ArgumentTypeError(
            "letters from UPBCDS, each at most once, with U and at least one of P, B, C, D, S")
    if "D" in tools and ("C" in tools or "B" not in tools):
        raise argparse.ArgumentTypeError("D runs in C's place and is compared with B: "
                                         "give B and not C (e.g. UBD)")
    if "S" in tools and ("B" in tools or "D" in tools or "P" not in tools):
        raise argparse.ArgumentTypeError("S runs in B's place and is compared with P: "
                                         "give P and not B or D (e.g. UPS)")
    return tools


def show(argv):
    """A command line for reading (quoted only where a word needs it)."""
    return " ".join(shlex.quote(a) if any(c.isspace() or c in "'\"$;&|" for c in a) else a
                    for a in argv)


def order_tag(order):
    return "".join(order)


# --------------------------------------------------------------------------
# the machine


def busy_jiffies():
    """Non-idle jiffies of all CPUs (user+nice+system+irq+softirq+steal)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                v = [int(x) for x in line.split()[1:]]
                return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return 0


def read_first_line(path, default=""):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return default


def other_tools(own_pids):
    """Other running measurers or loads (latscope, cyclictest, oslat,
    sockperf, stress-ng), not started by this script."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == os.getpid() or pid in own_pids:
            continue
        comm = read_first_line(f"/proc/{pid}/comm")
        if comm in ("latscope", "cyclictest", "oslat", "sockperf", "stress-ng"):
            try:
                if os.getpgid(pid) in own_pids:
                    continue
            except OSError:
                continue
            found.append(f"pid {pid} ({comm})")
    return found


class BpfStats:
    """Sets /proc/sys/kernel/bpf_stats_enabled for each run and puts the
    previous value back."""

    def __init__(self):
        self.previous = None

    def save(self):
        try:
            with open(BPF_STATS) as f:
                self.previous = f.read().strip()
        except OSError as e:
            die(f"cannot read {BPF_STATS}: {e.strerror}")

    def still(self, value):
        return read_first_line(BPF_STATS) == value

    def set(self, value):
        try:
            with open(BPF_STATS, "w") as f:
                f.write(value + "\n")
        except OSError as e:
            die(f"cannot set {BPF_STATS} to {value}: {e.strerror}")

    def restore(self):
        if self.previous is None:
            return
        try:
            with open(BPF_STATS, "w") as f:
                f.write(self.previous + "\n")
        except OSError as e:
            print(f"{PROG}: could not put {BPF_STATS} back to {self.previous}: {e.strerror}",
                  file=sys.stderr)
        self.previous = None


# --------------------------------------------------------------------------
# one run


def latscope_argv(args, tool, period_us, seconds, d):
    argv = [args.latscope, "run", "--period", f"{period_us}us", "--priority",
            str(args.priority), "--duration", f"{seconds}s", "--store",
            os.path.join(d, "b.db"), "--json", os.path.join(d, "out.json"), "--quiet"]
    if args.cpus:
        argv += ["--cpus", args.cpus]
    return argv + TOOL_ARGS[tool]


def env_prefix(args, tool):
    """What a tool's command line runs with beyond this script's own
    environment, for reading."""
    return f"LATSCOPE_BPF_DIAG={args.d_diag} " if tool == "D" else ""


def error_line(stderr):
    """latscope's own error line (`latscope: ...`), else the first line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("latscope:"):
            return ln
    return lines[0] if lines else "(no message)"


def hist_quantile(buckets, total, q, lo, hi):
    """The upper edge of the merged bucket holding the sample of rank
    ceil(q*total), clamped to [lo, hi]: latscope's own rule per CPU."""
    rank = min(max(math.ceil(q * total), 1), total)
    acc = 0
    for _, high, c in buckets:
        acc += c
        if acc >= rank:
            return min(max(high, lo), hi)
    return hi


def pooled_latency(metrics):
    """Mean, p50 and p99 of timer.latency over the measured CPUs. A pooled
    metric (cpu null) is used as it is when there is one; otherwise the mean is
    weighted by count and the percentiles come from the merged per-CPU
    histograms. Returns (dict, how)."""
    lat = [m for m in metrics if m["name"] == "timer.latency"]
    pooled = [m for m in lat if m.get("cpu") is None]
    if pooled:
        m = pooled[0]
        return ({"count": m["count"], "mean_ns": m["mean_ns"], "p50_ns": m["p50_ns"],
                 "p99_ns": m["p99_ns"], "max_ns": m["max_ns"]}, "pooled")
    lat = [m for m in lat if m["count"]]
    if not lat:
        die("a run recorded no timer.latency samples")
    count = sum(m["count"] for m in lat)
    r = {"count": count, "mean_ns": sum(m["mean_ns"] * m["count"] for m in lat) / count,
         "max_ns": max(m["max_ns"] for m in lat)}
    if len(lat) == 1:
        r.update(p50_ns=lat[0]["p50_ns"], p99_ns=lat[0]["p99_ns"])
        return r, "merged"
    if all(m.get("histogram") for m in lat):
        merged = {}
        for m in lat:
            for low, high, c in m["histogram"]:
                merged[(low, high)] = merged.get((low, high), 0) + c
        buckets = sorted((lo, hi, c) for (lo, hi), c in merged.items())
        lo_ns = min(m["min_ns"] for m in lat)
        r.update(p50_ns=hist_quantile(buckets, count, 0.50, lo_ns, r["max_ns"]),
                 p99_ns=hist_quantile(buckets, count, 0.99, lo_ns, r["max_ns"]))
        return r, "merged"
    # No histograms: the highest per-CPU figure stands in.
    r.update(p50_ns=max(m["p50_ns"] for m in lat), p99_ns=max(m["p99_ns"] for m in lat))
    return r, "max"


def summarize(doc, tool):
    """The figures of one run from latscope's JSON document."""
    cell = doc["cells"][0]
    lat, how = pooled_latency(cell["metrics"])
    r = dict(lat, how=how, duration_s=cell["duration_ns"] / 1e9)
    if tool == "U":
        return r
    if not doc["capabilities"].get("tracepoints"):
        die(f"{TOOL_NAME[tool]}: tracing was not available: "
            + " | ".join(doc["capabilities"].get("missing", [])))
    t = cell.get("trace")
    if not t:
        die(f"{TOOL_NAME[tool]}: the run's JSON has no trace summary")
    backend = t.get("backend", "")
    if tool in ("B", "C", "D") and backend != "bpf":
        die(f"the bpf backend was not used: 'latscope run {' '.join(TOOL_ARGS['B'])}' "
            f"reports backend {backend!r}")
    if tool in ("P", "S") and backend not in ("perf", ""):
        die(f"the perf backend was not used: 'latscope run {' '.join(TOOL_ARGS['P'])}' "
            f"reports backend {backend!r}")
    user_ns, bpf_ns = t["tracer_cpu_ns"], t.get("bpf_prog_ns", 0)
    r.update(backend=backend or "perf", tracer_user_s=user_ns / 1e9, bpf_prog_s=bpf_ns / 1e9,
             tracer_pct=100.0 * (user_ns + bpf_ns) / cell["duration_ns"],
             bpf_pct=100.0 * bpf_ns / cell["duration_ns"],
             events=t["events"], lost=t["lost_records"], decomposed=t["samples_decomposed"],
             undecomposed=t["samples_undecomposed"], episodes=t["episodes_total"])
    return r


def run_latscope(args, tmp, tag, tool, period_us, seconds, bench):
    d = os.path.join(tmp, tag)
    os.makedirs(d)
    argv = latscope_argv(args, tool, period_us, seconds, d)
    stats = TOOL_STATS[tool]
    bench.stats.set(stats)
    env = None
    if tool == "D":
        env = dict(os.environ, LATSCOPE_BPF_DIAG=args.d_diag)
    j0 = busy_jiffies()
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120, env=env)
    except subprocess.TimeoutExpired:
        die(f"{TOOL_NAME[tool]}: latscope did not finish within {seconds + 120} s")
    wall = time.monotonic() - t0
    j1 = busy_jiffies()
    if p.returncode != 0:
        die(f"latscope run {' '.join(TOOL_ARGS[tool]) or '(untraced)'} exited "
            f"{p.returncode}: {error_line(p.stderr)}")
    with open(os.path.join(d, "out.json")) as f:
        doc = json.load(f)
    r = summarize(doc, tool)
    r.update(busy_s=(j1 - j0) / os.sysconf("SC_CLK_TCK"), wall=wall)
    if not bench.stats.still(stats):
        bench.warnings.add(f"{BPF_STATS} was no longer {stats} after a {tool} run (something "
                           f"else changed it)")
    return r


# --------------------------------------------------------------------------
# the benchmark


class Bench:
    def __init__(self, args):
        self.args = args
        self.stats = BpfStats()
        self.previous_stats = None
        self.warnings = set()
        self.others = {}
        self.load = None
        self.hows = set()

    def conditions(self):
        """(key, title, period_us, loaded) in the order they run."""
        out = []
        n = os.cpu_count() or 1
        for period in self.args.periods:
            out.append((f"idle-{period}us", f"idle, period {period} us", period, False))
            if not self.args.no_load:
                out.append((f"load-{period}us", f"CPU load (stress-ng --cpu {n}), period "
                            f"{period} us", period, True))
        return out

    def load_cmd(self):
        n = str(os.cpu_count() or 1)
        # Stopped after each round; the timeout only bounds it if this script dies.
        return [self.args.stress or "stress-ng", "--cpu", n, "--timeout",
                f"{3 * (self.args.seconds + 60)}s"]

    def start_load(self):
        self.load = subprocess.Popen(self.load_cmd(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(1)
        if self.load.poll() is not None:
            die(f"stress-ng exited {self.load.returncode} at start")

    def stop_load(self):
        if self.load is None:
            return
        try:
            os.killpg(self.load.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.load.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.load.pid, signal.SIGKILL)
            self.load.wait()
        self.load = None

    def own_pids(self):
        return {self.load.pid} if self.load else set()

    def note_others(self):
        for entry in other_tools(self.own_pids()):
            self.others.setdefault(entry.split(" ", 2)[1], entry)

    def preflight(self, tmp):
        """One second of P and of C, to stop at once (with latscope's own
        line) when a backend cannot run, rather than minutes in."""
        period = self.args.periods[0]
        for tool in [t for t in ("P", "S", "C", "D", "B") if t in self.args.tools][:2]:
            print(f"{PROG}: pre-flight: 1 s of {TOOL_NAME[tool]} ...", file=sys.stderr)
            run_latscope(self.args, tmp, f"preflight-{tool}", tool, period, 1, self)

    def condition(self, tmp, key, title, period, loaded):
        a = self.args
        rounds = []
        for i in range(1, a.rounds + 1):
            order = order_of(i, a.tools)
            self.note_others()
            if loaded:
                self.start_load()
            try:
                got = {}
                for tool in order:
                    print(f"{PROG}: [{title}] round {i}/{a.rounds} ({order_tag(order)}): "
                          f"{tool} = {TOOL_NAME[tool]} ({a.seconds} s) ...", file=sys.stderr)
                    got[tool] = run_latscope(a, tmp, f"{key}-r{i}-{tool}", tool, period,
                                             a.seconds, self)
                    self.hows.add(got[tool]["how"])
            finally:
                self.stop_load()
            rounds.append((i, order, got))
        return rounds


# --------------------------------------------------------------------------
# the report


def us(ns):
    return ns / 1e3


def ratio(a, b):
    return a / b if b else float("nan")


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def verdict(ok):
    return "PASS" if ok else "FAIL"


def header(args, started, bench, w):
    w("latscope: timer probe untraced (U), traced by perf (P) and traced by BPF (B, and C: "
      "B counted)")
    w("=" * 78)
    w(f"started {started:%Y-%m-%d %H:%M:%S} UTC; kernel {os.uname().release}; "
      f"{os.cpu_count()} CPUs; measured CPUs {args.cpus or 'all'}; FIFO {args.priority}; "
      f"{args.rounds} rounds x {len(args.tools)} runs x {args.seconds} s per condition")
    w(f"U = latscope run (untraced); P = {TOOL_NAME['P']}; B = {TOOL_NAME['B']}; "
      f"C = {TOOL_NAME['C']}")
    if "S" in args.tools:
        w(f"S = {TOOL_NAME['S']}: perf with the held-CPU call chains (cpu-clock sampling "
          f"nearly off), in B's place in the order; S/P per round says what the chains cost")
    if "D" in args.tools:
        w(f"D = B with LATSCOPE_BPF_DIAG={args.d_diag} for D's runs only, in C's place in the "
          f"order; D/B per round says what that part of the programs does")
    diag = os.environ.get("LATSCOPE_BPF_DIAG", "")
    if diag == "softirq-at-once":
        w(f"LATSCOPE_BPF_DIAG={diag}: a diagnostic run, B and C's softirq programs add their "
          f"times to the histograms at once instead of deferring them")
    elif diag == "warm-on":
        w(f"LATSCOPE_BPF_DIAG={diag}: a diagnostic run, B and C's sched_switch warms the next "
          f"wake-up's cache lines (off by default)")
    elif diag:
        w(f"LATSCOPE_BPF_DIAG={diag}: a diagnostic run, B and C's programs do "
          + ({"recorder": "only the flight recorder",
             "empty": "nothing at all (each returns at once)",
             "detached": "nothing (none is attached)"}.get(diag, "nothing (attached only)"))
          + "; samples are not decomposed, so the BPF targets below do not apply")
    w(f"tools {''.join(args.tools)}; order rotating through "
      + ", ".join(order_tag(order_of(i, args.tools)) for i in range(1, len(ORDERS) + 1))
      + " (round column)")
    w("latency verdicts: PASS when the 95 % interval of the median over rounds of B/U "
      "(distribution-free, from the order statistics) lies at or below the target, FAIL when "
      "it lies above, UNRESOLVED when it holds the target")
    w(f"{BPF_STATS} = 0 for U, P and B and 1 for C (was {bench.previous_stats}, put back at "
      f"exit): with it on the kernel times every BPF program run, which C needs to count the "
      f"programs' CPU but which also lengthens the wake-up path; so latency targets are on "
      f"B, the CPU target on C")
    hows = bench.hows
    if hows == {"pooled"}:
        how = "latscope's pooled timer.latency (cpu null)"
    elif "max" in hows:
        how = ("mean weighted by count; p50 and p99 the HIGHEST per-CPU figure (the JSON had "
               "no histograms)")
    else:
        how = ("mean weighted by count over the per-CPU timer.latency; p50 and p99 from the "
               "per-CPU histograms merged (bucket upper edge, within 0.1 %)")
    w(f"latency pooled over the measured CPUs: {how}")
    w("tracer CPU = tracer thread (tracer_cpu_ns) + latscope's BPF programs in the kernel "
      "(bpf_prog_ns, counted in C only), % of one core over the measured duration; perf's "
      "cost of writing its records in the kernel is not in it (see busy CPU, /proc/stat "
      "non-idle of the whole machine over the run)")
    w("")


def median_ci(xs, level=0.95):
    """A distribution-free interval for the median of xs: the order
    statistics x(k) and x(n+1-k) with the largest k for which
    P(Binomial(n, 1/2) <= k-1) <= (1 - level) / 2, so that the interval
    holds the median with at least `level` probability whatever the
    distribution of the per-round ratios. None when n is too small (below 6
    for 95 %)."""
    n = len(xs)
    tail = (1.0 - level) / 2.0
    k, acc = 0, 0.0
    for j in range(n):
        acc += math.comb(n, j) / 2.0 ** n
        if acc > tail:
            break
        k = j + 1
    if k == 0:
        return None
    s = sorted(xs)
    return (s[k - 1], s[n - k])


def spread(xs):
    """The 95 % interval of the median of xs and their range, in words: the
    interval says what the rounds resolve, the range how far single rounds
    strayed."""
    ci = median_ci(xs)
    within = (f"95 % interval {ci[0]:.3f}-{ci[1]:.3f}" if ci
              else "too few rounds for a 95 % interval")
    return f"{within}; range {min(xs):.3f}-{max(xs):.3f}"


def ratio_verdict(xs, target):
    """PASS when the 95 % interval of the median ratio lies at or below the
    target, FAIL when it lies above, UNRESOLVED when it holds the target
    (the rounds cannot tell), with the interval in words."""
    ci = median_ci(xs)
    m = med(xs)
    if ci is None:
        word = "PASS" if m <= target else "FAIL"
        return word == "PASS", f"{word} (median {m:.3f}; too few rounds for a 95 % interval)"
    lo, hi = ci
    if hi <= target:
        word = "PASS"
    elif lo > target:
        word = "FAIL"
    else:
        word = "UNRESOLVED"
    return word == "PASS", f"{word} (median {m:.3f}, 95 % interval {lo:.3f}-{hi:.3f})"


def condition_block(args, title, period, rounds, w):
    """The tables and summary of one condition. Returns the BPF targets'
    (name, ok) pairs (only those the chosen tools measure)."""
    traced = [t for t in args.tools if t != "U"]
    w(title)
    keys = (("mean_ns", "mean"), ("p50_ns", "p50"), ("p99_ns", "p99"))
    groups = []
    for _, label in keys:
        cols = [f"{'U ' + label:>7}"] + [f"{t + ' ' + label:>7}" for t in traced]
        cols += [f"{t + '/U':>6}" for t in traced if t != "C"]
        groups.append(" ".join(cols))
    hdr = f"{'round':>10} | " + " | ".join(groups)
    w("latency, us" + ("; C/U is in the tracer table" if "C" in traced else ""))
    w(hdr)
    w("-" * len(hdr))
    rat = {(t, k): [] for t in traced for k, _ in keys}
    for i, order, got in rounds:
        u = got["U"]
        cols = []
        for k, _ in keys:
            vals = [f"{us(u[k]):7.2f}"] + [f"{us(got[t][k]):7.2f}" for t in traced]
            for t in traced:
                rat[(t, k)].append(ratio(got[t][k], u[k]))
            vals += [f"{ratio(got[t][k], u[k]):6.3f}" for t in traced if t != "C"]
            cols.append(" ".join(vals))
        w(f"{i:>5} {order_tag(order):>4} | " + " | ".join(cols))
    w("-" * len(hdr))
    cols = []
    for k, _ in keys:
        vals = [f"{'':7}"] * (1 + len(traced))
        vals += [f"{med(rat[(t, k)]):6.3f}" for t in traced if t != "C"]
        cols.append(" ".join(vals))
    w(f"{'median':>10} | " + " | ".join(cols))
    w("")
    # The tracer table's column groups: (title, width, cell of a round).
    groups = [[(f"{t} {'user' if t in ('B', 'D') else 'tracer'}", 8,
                lambda g, t=t: f"{g[t]['tracer_pct']:7.3f}%") for t in traced]]
    if "C" in traced:
        groups[0].append(("C BPF", 7, lambda g: f"{g['C']['bpf_pct']:6.3f}%"))
    groups.append([(f"{t} events", 9, lambda g, t=t: f"{g[t]['events']:9d}") for t in traced])
    groups.append([(f"{t} lost", 6, lambda g, t=t: f"{g[t]['lost']:6d}") for t in traced])
    groups.append([(f"busy {t}", 6, lambda g, t=t: f"{g[t]['busy_s']:6.2f}")
                   for t in ["U"] + traced])
    if "C" in traced:
        groups.append([("C/U p50", 7,
                        lambda g: f"{ratio(g['C']['p50_ns'], g['U']['p50_ns']):7.3f}")])
    hdr2 = f"{'round':>10} | " + " | ".join(
        " ".join(f"{title:>{width}}" for title, width, _ in grp) for grp in groups)
    w("tracer: CPU in % of one core (B user: the tracer thread alone; C tracer: thread + BPF "
      "programs, C BPF: the programs), events, records lost; busy CPU in s"
      + ("; C/U p50: what counting adds" if "C" in traced else ""))
    w(hdr2)
    w("-" * len(hdr2))
    for i, order, got in rounds:
        w(f"{i:>5} {order_tag(order):>4} | " + " | ".join(
            " ".join(cell(got) for _, _, cell in grp) for grp in groups))
    w("-" * len(hdr2))
    figs = {}
    for t in traced:
        runs = [got[t] for _, _, got in rounds]
        figs[t] = {
            "mean": med(rat[(t, "mean_ns")]), "p50": med(rat[(t, "p50_ns")]),
            "p99": med(rat[(t, "p99_ns")]),
            "cpu_med": med([r["tracer_pct"] for r in runs]),
            "cpu_max": max(r["tracer_pct"] for r in runs),
            "bpf_med": med([r["bpf_pct"] for r in runs]),
            "bpf_zero": sum(1 for r in runs if r["bpf_prog_s"] == 0),
            "events": med([r["events"] for r in runs]),
            "lost": sum(r["lost"] for r in runs),
            "dec": sum(r["decomposed"] for r in runs),
            "und": sum(r["undecomposed"] for r in runs),
            "busy": med([r["busy_s"] for r in runs]),
        }
    busy_u = med([got["U"]["busy_s"] for _, _, got in rounds])
    lines = {}
    for t, name in (("B", "BPF"), ("C", "BPF counted (C)"), ("P", "perf (quoted, no target)"),
                    ("D", f"BPF with LATSCOPE_BPF_DIAG={args.d_diag} (D)"),
                    ("S", "perf with --stacks (S)")):
        if t not in figs:
            continue
        f = figs[t]
        lines[t] = (f"{name}: median over rounds of {t}/U: mean {f['mean']:.3f}, p50 {f['p50']:.3f} "
          f"({spread(rat[(t, 'p50_ns')])}), p99 {f['p99']:.3f} "
          f"({spread(rat[(t, 'p99_ns')])}); tracer CPU median "
          f"{f['cpu_med']:.3f}% of one core (max {f['cpu_max']:.3f}%"
          + (f", BPF programs {f['bpf_med']:.3f}%" if t == "C" else "")
          + (", thread only: statistics off" if t in ("B", "D") else "")
          + f"); events {f['events']:.0f} per run (median); records lost {f['lost']}; "
          f"samples decomposed {f['dec']}, not {f['und']}; busy CPU median {f['busy']:.2f} s "
          f"per run (U {busy_u:.2f} s)")
    for t in ("B", "C", "D"):
        if t in lines:
            w(lines[t])
    if "D" in figs and "B" in figs:
        w(against(rounds, keys, "D", "B", f"D (LATSCOPE_BPF_DIAG={args.d_diag})"))
    checks = []
    line = []
    if "B" in figs:
        for k, label in (("p50_ns", "p50"), ("p99_ns", "p99")):
            ok, words = ratio_verdict(rat[("B", k)], LATENCY_RATIO_TARGET)
            name = f"median B/U {label} <= {LATENCY_RATIO_TARGET:.2f}"
            checks.append((name, ok))
            line.append(f"{name}: {words}")
    if "C" in figs:
        c = figs["C"]
        if period == TRACER_CPU_TARGET_PERIOD_US:
            if c["bpf_zero"]:
                ok = False
                line.append(f"tracer CPU (user + BPF, C) < {TRACER_CPU_TARGET_PCT}% of a core "
                            f"(every run): FAIL, not measured: bpf_prog_ns was 0 in "
                            f"{c['bpf_zero']} of {len(rounds)} C runs")
            else:
                ok = c["cpu_max"] < TRACER_CPU_TARGET_PCT
                line.append(f"tracer CPU (user + BPF, C) < {TRACER_CPU_TARGET_PCT}% of a core "
                            f"(every run): {verdict(ok)}")
            checks.append(("tracer CPU", ok))
        else:
            line.append(f"tracer CPU: no target at {period} us")
    bc = [t for t in ("B", "C") if t in figs]
    if bc:
        lost = sum(figs[t]["lost"] for t in bc)
        checks.append(("zero lost", lost == 0))
        line.append(f"zero records lost ({' and '.join(bc)}): {verdict(lost == 0)}")
    if line:
        w("BPF targets: " + "; ".join(line))
    if "P" in lines:
        w(lines["P"])
    if "S" in lines:
        w(lines["S"])
        w(against(rounds, keys, "S", "P", "S (perf with --stacks)"))
    w("")
    return checks


def against(rounds, keys, a, b, name):
    """The line comparing tool a with tool b (D with B, S with P): per round
    a/b of the mean, p50 and p99, the median over rounds with its 95 %
    interval, and which way it points (only when the interval leaves 1 out)."""
    parts = []
    for k, label in keys:
        xs = [ratio(got[a][k], got[b][k]) for _, _, got in rounds]
        ci = median_ci(xs)
        if ci is None:
            parts.append(f"{label} {med(xs):.3f} (too few rounds for a 95 % interval)")
            continue
        lo, hi = ci
        way = (f"{a} lower" if hi < 1 else f"{a} higher" if lo > 1 else "no difference resolved")
        parts.append(f"{label} {med(xs):.3f} (95 % interval {lo:.3f}-{hi:.3f}: {way})")
    return f"{name} against {b}, median over rounds of {a}/{b}: " + "; ".join(parts)


def report(args, results, started, bench):
    out = []
    w = out.append
    header(args, started, bench, w)
    ok = True
    summary = []
    for key, title, period, _, rounds in results:
        checks = condition_block(args, title, period, rounds, w)
        ok = ok and all(c for _, c in checks)
        missed = [n for n, c in checks if not c]
        summary.append(f"  {title}: " + ("all BPF targets met" if not missed
                                         else "missed: " + ", ".join(missed)))
    w("summary")
    out.extend(summary)
    for warning in sorted(bench.warnings):
        w(f"WARNING: {warning}")
    if bench.others:
        w(f"WARNING: other measuring tools or loads ran during the benchmark and may have "
          f"competed for the CPUs: {', '.join(sorted(bench.others.values())[:5])}")
    w("")
    w("command lines (per run a fresh store and JSON under a temporary directory):")
    for tool in args.tools:
        w(f"  {tool}: " + env_prefix(args, tool)
          + show(latscope_argv(args, tool, '<P>', args.seconds, '<tmp>')))
    if not args.no_load:
        w(f"  load: {show(bench.load_cmd())} (started 1 s before each round, stopped "
          f"after it)")
    return out, ok


# --------------------------------------------------------------------------
# main


def dry_run(args, bench):
    n_cond = len(bench.conditions())
    runs = n_cond * args.rounds * len(args.tools)
    load_rounds = sum(1 for c in bench.conditions() if c[3]) * args.rounds
    print(f"{PROG}: dry run: nothing is started, {BPF_STATS} is not touched "
          f"(now {read_first_line(BPF_STATS, 'absent')}; the real run sets it to 1 for C, "
          f"0 for the others, and puts it back at exit)")
    lead = f", {load_rounds} s of load lead" if load_rounds else ""
    print(f"{n_cond} condition{'s' if n_cond != 1 else ''} x {args.rounds} rounds x "
          f"{len(args.tools)} runs x "
          f"{args.seconds} s = {runs} runs, {runs * args.seconds} s of measuring "
          f"({runs * args.seconds / 60:.1f} min), plus each run's start-up{lead} and a 2 s "
          f"pre-flight")
    tmp = "<tmp>"
    for tool in [t for t in ("P", "S", "C", "D", "B") if t in args.tools][:2]:
        print(f"pre-flight {tool}: "
              + show(latscope_argv(args, tool, args.periods[0], 1,
                                         os.path.join(tmp, f"preflight-{tool}"))))
    for key, title, period, loaded in bench.conditions():
        print(f"[{title}]")
        for i in range(1, args.rounds + 1):
            order = order_of(i, args.tools)
            print(f"  round {i} {order_tag(order)}"
                  + (f"  (load: {show(bench.load_cmd())}, 1 s before the first run)"
                     if loaded else ""))
            for tool in order:
                print(f"    {tool}: " + env_prefix(args, tool) + show(latscope_argv(
                    args, tool, period, args.seconds, os.path.join(tmp, f"{key}-r{i}-{tool}"))))


def parse_periods(text):
    try:
        periods = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        periods = []
    if not periods or any(p < 10 for p in periods):
        raise argparse.ArgumentTypeError("a comma-separated list of periods in us, each >= 10")
    return periods


# The values crates/platform/src/bpf/loaded.rs acts on; latscope runs an
# unknown one as if unset, so a misspelt --d-diag would weigh nothing.
D_DIAGS = ("recorder", "attached", "empty", "detached", "hist-off", "softirq-at-once",
           "warm-on", "recorder-off", "elide-own", "no-waking-exit", "deferred-off",
           "steal-off", "stacks-off", "new-off")


def parser():
    p = argparse.ArgumentParser(prog="bench/trace-overhead.sh",
                                description="latscope untraced / --trace-backend perf / "
                                            "--trace-backend bpf (statistics off and on), "
                                            "alternating")
    p.add_argument("--rounds", type=int, default=8, help="rounds per condition (default 8)")
    p.add_argument("--seconds", type=int, default=10, help="length of each run (default 10)")
    p.add_argument("--periods", type=parse_periods, default=[1000, 100],
                   help="timer periods in us, comma-separated (default 1000,100)")
    p.add_argument("--tools", type=parse_tools, default=DEFAULT_TOOLS,
                   help="which of U P B C D to run (default UPBC; U and at least one other; "
                        "D only with B and without C), e.g. UB for many short rounds on the "
                        "latency targets alone, UBD with --d-diag to weigh one part")
    p.add_argument("--d-diag", default="", choices=("",) + D_DIAGS, metavar="D_DIAG",
                   help="LATSCOPE_BPF_DIAG for D's runs (with --tools UBD): "
                        + ", ".join(D_DIAGS))
    p.add_argument("--priority", type=int, default=95)
    p.add_argument("--cpus", default=None, help="CPU list (default: every online CPU)")
    p.add_argument("--no-load", action="store_true", help="skip the CPU-load conditions")
    p.add_argument("--no-results-file", action="store_true")
    p.add_argument("--dry-run", action="store_true",
                   help="print the schedule of runs and their command lines, run nothing")
    p.add_argument("--latscope", default=os.environ.get(
        "LATSCOPE", os.path.join(REPO, "target", "release", "latscope")))
    return p


def main():
    args = parser().parse_args()
    if args.rounds < 1 or args.seconds < 1:
        print(f"{PROG}: --rounds and --seconds must be at least 1", file=sys.stderr)
        sys.exit(1)
    if ("D" in args.tools) != bool(args.d_diag):
        print(f"{PROG}: --d-diag goes with D in --tools (e.g. --tools UBD --d-diag warm-on)",
              file=sys.stderr)
        sys.exit(1)
    args.stress = shutil.which("stress-ng")
    bench = Bench(args)
    if args.dry_run:
        dry_run(args, bench)
        return 0

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    tmp = None
    try:
        if os.geteuid() != 0:
            die("must run as root (tracepoints, BPF, SCHED_FIFO, bpf_stats_enabled)")
        if not os.access(args.latscope, os.X_OK):
            die(f"no latscope binary at {args.latscope}: run 'cargo build --release'")
        if not args.no_load and not args.stress:
            die("stress-ng not found: apt-get install stress-ng (or pass --no-load)")
        if not os.path.exists(BPF_STATS):
            die(f"{BPF_STATS} does not exist: this kernel cannot count BPF program run time")
        started = datetime.datetime.now(datetime.timezone.utc)
        tmp = tempfile.mkdtemp(prefix="latscope-trace-overhead-")
        bench.stats.save()
        bench.previous_stats = bench.stats.previous
        n_runs = len(bench.conditions()) * args.rounds * len(args.tools)
        print(f"{PROG}: {n_runs} runs x {args.seconds} s (about {n_runs * args.seconds / 60:.0f} "
              f"min of measuring plus start-up); {BPF_STATS} 1 for C runs, 0 for the others "
              f"(was {bench.previous_stats})", file=sys.stderr)
        bench.preflight(tmp)
        results = []
        for key, title, period, loaded in bench.conditions():
            results.append((key, title, period, loaded,
                            bench.condition(tmp, key, title, period, loaded)))
        bench.note_others()
        out, ok = report(args, results, started, bench)
        text = "\n".join(out)
        if not args.no_results_file:
            os.makedirs(RESULTS_DIR, exist_ok=True)
            path = os.path.join(RESULTS_DIR, f"trace-overhead-{started:%Y%m%dT%H%M%SZ}.txt")
            with open(path, "w") as f:
                f.write(text + "\n")
            text += f"\nresults file: {os.path.relpath(path, os.getcwd())}"
        print(text)
        return 0 if ok else EXIT_TARGET_MISSED
    except Fatal as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        bench.stop_load()
        bench.stats.restore()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
