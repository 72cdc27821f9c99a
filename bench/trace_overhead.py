#!/usr/bin/env python3
"""latscope's tracer overhead: the timer probe with and without --trace.

Normally started through bench/trace-overhead.sh. Standard library only.

For each condition (idle; CPU load from `stress-ng --cpu N`), N pairs of runs
of A = without --trace and B = with --trace, same CPUs, period, priority and
duration; the order flips from one pair to the next (A B, B A, A B ...: every
two pairs run A B B A). Per run it takes from latscope's JSON the pooled mean
timer.latency and, for traced runs, the tracer's own CPU time, events read and
records lost; from /proc/stat the whole machine's non-idle CPU time over the
run (what tracing costs the kernel, in every context, besides the tracer
thread). See bench/README.md.
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "bench", "results")
MEAN_RATIO_TARGET = 1.10
TRACER_CPU_TARGET_PCT = 3.0


def die(msg):
    print(f"trace-overhead: {msg}", file=sys.stderr)
    sys.exit(1)


def busy_jiffies():
    """Non-idle jiffies of all CPUs (user+nice+system+irq+softirq+steal)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                v = [int(x) for x in line.split()[1:]]
                return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return 0


def run_latscope(args, tmp, tag, traced):
    d = os.path.join(tmp, tag)
    os.makedirs(d)
    out = os.path.join(d, "out.json")
    argv = [args.latscope, "run", "--period", f"{args.period_us}us", "--priority",
            str(args.priority), "--duration", f"{args.seconds}s", "--store",
            os.path.join(d, "b.db"), "--json", out, "--quiet"]
    if args.cpus:
        argv += ["--cpus", args.cpus]
    if traced:
        argv += ["--trace"]
    j0 = busy_jiffies()
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=args.seconds + 120)
    wall = time.monotonic() - t0
    j1 = busy_jiffies()
    if p.returncode != 0:
        die(f"latscope exited {p.returncode}: {p.stderr.strip()[-300:]}")
    with open(out) as f:
        doc = json.load(f)
    if traced and not doc["capabilities"].get("tracepoints"):
        die("--trace was not available: " + " | ".join(doc["capabilities"].get("missing", [])))
    lat = [m for m in doc["cells"][0]["metrics"] if m["name"] == "timer.latency"]
    count = sum(m["count"] for m in lat)
    mean = sum(m["mean_ns"] * m["count"] for m in lat) / count
    r = {"mean_ns": mean, "count": count, "max_ns": max(m["max_ns"] for m in lat),
         "p99_ns": max(m["p99_ns"] for m in lat), "busy_s": (j1 - j0) / os.sysconf("SC_CLK_TCK"),
         "wall": wall, "duration_s": doc["cells"][0]["duration_ns"] / 1e9}
    if traced:
        t = doc["cells"][0]["trace"]
        r.update(tracer_cpu_s=t["tracer_cpu_ns"] / 1e9, events=t["events"],
                 lost=t["lost_records"], decomposed=t["samples_decomposed"],
                 undecomposed=t["samples_undecomposed"], episodes=t["episodes_total"])
    return r


def condition(args, tmp, name, load_cmd):
    pairs = []
    for i in range(1, args.pairs + 1):
        load = None
        if load_cmd:
            load = subprocess.Popen(load_cmd, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            time.sleep(1)
        try:
            got = {}
            for traced in ((False, True) if i % 2 == 1 else (True, False)):
                what = "B with --trace" if traced else "A without --trace"
                print(f"[{name}] pair {i}/{args.pairs} ({order_tag(i)}): {what} ...",
                      file=sys.stderr)
                got[traced] = run_latscope(args, tmp, f"{name}-{i}-{'b' if traced else 'a'}",
                                           traced)
            a, b = got[False], got[True]
        finally:
            if load:
                os.killpg(load.pid, signal.SIGTERM)
                load.wait()
        pairs.append((a, b))
    return pairs


def order_tag(i):
    """`AB` when the untraced run (A) came first in pair i, `BA` otherwise:
    odd pairs A B, even ones B A."""
    return "AB" if i % 2 == 1 else "BA"


def report(args, results, started):
    out = []
    w = out.append
    w("latscope: timer probe with and without --trace (A/B alternation)")
    w("=" * 72)
    w(f"started {started:%Y-%m-%d %H:%M:%S} UTC; kernel {os.uname().release}; "
      f"CPUs {args.cpus or 'all'}; period {args.period_us} us; FIFO {args.priority}; "
      f"{args.pairs} pairs x {args.seconds} s per condition")
    w("order: A = without --trace, B = with --trace; A first in odd pairs, B first in even ones")
    w("       (AB, BA, AB ...: every two pairs run A B B A; the pair column shows it)")
    w("")
    verdicts = []
    for name, pairs in results:
        w(f"{name}")
        hdr = (f"{'pair':>6} | {'A mean':>8} {'B mean':>8} {'B/A':>6} | {'A p99':>7} {'B p99':>7} | "
               f"{'tracer CPU':>10} {'% core':>6} | {'events':>8} {'ns/event':>8} {'lost':>5} | "
               f"{'busy A':>6} {'busy B':>6}")
        w(hdr)
        w("-" * len(hdr))
        ratios, pcts, lost, per_event = [], [], 0, []
        for i, (a, b) in enumerate(pairs, 1):
            ratio = b["mean_ns"] / a["mean_ns"]
            pct = 100.0 * b["tracer_cpu_s"] / b["duration_s"]
            ns_ev = b["tracer_cpu_s"] * 1e9 / max(b["events"], 1)
            ratios.append(ratio)
            pcts.append(pct)
            per_event.append(ns_ev)
            lost += b["lost"]
            w(f"{i:>3} {order_tag(i)} | {a['mean_ns'] / 1e3:8.2f} {b['mean_ns'] / 1e3:8.2f} {ratio:6.3f} | "
              f"{a['p99_ns'] / 1e3:7.1f} {b['p99_ns'] / 1e3:7.1f} | {b['tracer_cpu_s'] * 1e3:8.1f}ms "
              f"{pct:6.2f} | {b['events']:8d} {ns_ev:8.0f} {b['lost']:5d} | "
              f"{a['busy_s']:6.2f} {b['busy_s']:6.2f}")
        w("-" * len(hdr))
        med_r = statistics.median(ratios)
        max_pct = max(pcts)
        w(f"median B/A mean latency {med_r:.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f}); "
          f"tracer CPU median {statistics.median(pcts):.2f}% of one core (max {max_pct:.2f}%); "
          f"{statistics.median(per_event):.0f} ns of tracer CPU per event; records lost {lost}")
        dec = sum(b["decomposed"] for _, b in pairs)
        und = sum(b["undecomposed"] for _, b in pairs)
        w(f"samples decomposed {dec}, not {und}; whole-machine busy CPU, median A "
          f"{statistics.median(a['busy_s'] for a, _ in pairs):.2f} s vs B "
          f"{statistics.median(b['busy_s'] for _, b in pairs):.2f} s per run")
        ok_r = med_r <= MEAN_RATIO_TARGET
        ok_c = max_pct <= TRACER_CPU_TARGET_PCT
        ok_l = lost == 0
        w(f"target mean latency <= {MEAN_RATIO_TARGET:.2f} x untraced: {'PASS' if ok_r else 'FAIL'}; "
          f"tracer CPU <= {TRACER_CPU_TARGET_PCT:.0f}% of a core (every run): {'PASS' if ok_c else 'FAIL'}; "
          f"zero lost records: {'PASS' if ok_l else 'FAIL'}")
        verdicts += [ok_r, ok_c, ok_l]
        w("")
    return out, all(verdicts)


def main():
    p = argparse.ArgumentParser(prog="bench/trace-overhead.sh")
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--period-us", type=int, default=1000)
    p.add_argument("--priority", type=int, default=95)
    p.add_argument("--cpus", default=None, help="CPU list (default: every online CPU)")
    p.add_argument("--no-load", action="store_true", help="skip the CPU-load condition")
    p.add_argument("--no-results-file", action="store_true")
    p.add_argument("--latscope", default=os.environ.get(
        "LATSCOPE", os.path.join(REPO, "target", "release", "latscope")))
    args = p.parse_args()
    if os.geteuid() != 0:
        die("must run as root (tracepoints, SCHED_FIFO)")
    if not os.access(args.latscope, os.X_OK):
        die(f"no latscope binary at {args.latscope}: run 'cargo build --release'")
    if args.pairs < 1 or args.seconds < 1:
        die("--pairs and --seconds must be at least 1")
    stress = shutil.which("stress-ng")
    if not args.no_load and not stress:
        die("stress-ng not found: apt-get install stress-ng (or pass --no-load)")
    started = datetime.datetime.now(datetime.timezone.utc)
    tmp = tempfile.mkdtemp(prefix="latscope-trace-overhead-")
    try:
        results = [("idle", condition(args, tmp, "idle", None))]
        if not args.no_load:
            n = str(os.cpu_count() or 1)
            results.append((f"CPU load (stress-ng --cpu {n})",
                            condition(args, tmp, "load", [stress, "--cpu", n, "--timeout",
                                                          f"{args.seconds * 3}s"])))
        out, ok = report(args, results, started)
        text = "\n".join(out)
        if not args.no_results_file:
            os.makedirs(RESULTS_DIR, exist_ok=True)
            path = os.path.join(RESULTS_DIR, f"trace-overhead-{started:%Y%m%dT%H%M%SZ}.txt")
            with open(path, "w") as f:
                f.write(text + "\n")
            text += f"\nresults file: {os.path.relpath(path, os.getcwd())}"
        print(text)
        sys.exit(0 if ok else 3)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
