#!/usr/bin/env python3
"""latscope micro against perf bench and iperf3, the tools taking turns.

Normally started through bench/vs-perf-bench.sh, which checks root, perf,
iperf3 and taskset and builds latscope (unless LATSCOPE is set).
Standard library only; no network beyond 127.0.0.1.

Four comparisons, each of N pairs; within a pair the two tools run one
after the other, the order A B in pairs 1 and 4 of every four and B A in
pairs 2 and 3 (A B B A), so that neither always runs first.

  syscall     latscope syscall.getppid          perf bench syscall basic
              (one getppid, ns)                  (usecs/op of a getppid loop)
  threads     latscope ctxswitch.threads_same_cpu   perf bench sched pipe -T
  processes   latscope ctxswitch.processes_same_cpu perf bench sched pipe
              (one round trip of a token through two pipes, both sides on
              one CPU: perf is pinned with taskset to that CPU)
  tcp         latscope net.tcp_throughput_256K  iperf3 -w 256K -l 256K
              (ns per 256 KiB over loopback, sender on the first CPU and
              receiver on the second; iperf3's received bits per second
              turned into the same unit)
  tcp-c       latscope net.tcp_throughput_256K  bench/tcp-stream.c
              (the same stream written plainly in C: blocking write of
              256 KiB blocks, a receiver thread; built here with cc)

The figure per pair is latscope / peer; the verdict compares the median of
the pairs' ratios with the issue's 15 %.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

TOLERANCE = 0.15
CHUNK = 256 * 1024


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"vs-perf-bench: error: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


def latscope(bench, cpus, iterations, store):
    out = run([os.environ["LATSCOPE"], "micro", "--bench", bench, "--cpus", cpus,
               "--iterations", str(iterations), "--json", "-", "--quiet", "--store", store])
    doc = json.loads(out)
    b = [x for x in doc["benchmarks"] if x["bench"] == bench][0]
    if b.get("skipped"):
        sys.exit(f"vs-perf-bench: error: latscope skipped {bench}: {b['skipped']}")
    return b["median_ns"]


def perf_usecs(args, cpu):
    out = run(["taskset", "-c", cpu, "perf", "bench"] + args)
    m = re.search(r"([0-9.]+)\s+usecs/op", out)
    if not m:
        sys.exit(f"vs-perf-bench: error: no usecs/op in perf's output: {out[-300:]}")
    return float(m.group(1)) * 1000.0


def iperf3_ns(cpu_client, cpu_server, seconds, port):
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port), "-A", cpu_server],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-A", cpu_client,
                   "-t", str(seconds), "-w", "256K", "-l", "256K", "-J"])
    finally:
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
    bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
    return CHUNK * 8 / bps * 1e9


def c_stream_ns(binary, cpu_sender, cpu_receiver, seconds):
    out = run([binary, cpu_sender, cpu_receiver, str(seconds)])
    m = re.search(r"ns_per_block ([0-9.]+)", out)
    if not m:
        sys.exit(f"vs-perf-bench: error: tcp-stream printed {out!r}")
    return float(m.group(1))


def build_c_stream(tmp):
    binary = os.path.join(tmp, "tcp-stream")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tcp-stream.c")
    run([os.environ.get("CC", "cc"), "-O2", "-o", binary, src, "-lpthread"])
    return binary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=4, help="pairs per comparison (default 4)")
    ap.add_argument("--cpus", default=None, help="A,B: the measured CPU and the partner's (default the last two)")
    ap.add_argument("--quick", action="store_true", help="2 pairs, shorter runs")
    ap.add_argument("--out", default=None, help="also write the report to FILE")
    ap.add_argument("--only", default=None, help="one comparison: syscall, threads, processes, tcp or tcp-c")
    a = ap.parse_args()
    if a.pairs < 1:
        sys.exit("vs-perf-bench: error: --pairs must be at least 1")
    online = []
    with open("/sys/devices/system/cpu/online") as f:
        for part in f.read().strip().split(","):
            lo, _, hi = part.partition("-")
            online += list(range(int(lo), int(hi or lo) + 1))
    if a.cpus:
        cpus = a.cpus.split(",")
        if len(cpus) != 2 or not all(c.isdigit() and int(c) in online for c in cpus):
            sys.exit(f"vs-perf-bench: error: --cpus wants two online CPUs, e.g. 1,0 (online: {online})")
    else:
        if len(online) < 2:
            sys.exit("vs-perf-bench: error: needs two online CPUs")
        cpus = [str(online[-1]), str(online[-2])]
    c1, c2 = cpus
    pairs = 2 if a.quick else a.pairs
    iters = 20 if a.quick else 50
    loops = 200_000 if a.quick else 1_000_000
    pipe_loops = 20_000 if a.quick else 100_000
    seconds = 2 if a.quick else 5

    store_dir = tempfile.mkdtemp(prefix="vs-perf-bench-")
    store = os.path.join(store_dir, "latscope.db")
    c_stream = build_c_stream(store_dir)
    comparisons = [
        ("syscall", "syscall.getppid", f"{c1}",
         lambda: perf_usecs(["syscall", "basic", "-l", str(loops)], c1),
         "perf bench syscall basic"),
        ("threads", "ctxswitch.threads_same_cpu", f"{c1}",
         lambda: perf_usecs(["sched", "pipe", "-T", "-l", str(pipe_loops)], c1),
         "perf bench sched pipe -T"),
        ("processes", "ctxswitch.processes_same_cpu", f"{c1}",
         lambda: perf_usecs(["sched", "pipe", "-l", str(pipe_loops)], c1),
         "perf bench sched pipe"),
        ("tcp", "net.tcp_throughput_256K", f"{c1},{c2}",
         lambda: iperf3_ns(c1, c2, seconds, 5201 + os.getpid() % 1000),
         "iperf3 -w 256K -l 256K"),
        ("tcp-c", "net.tcp_throughput_256K", f"{c1},{c2}",
         lambda: c_stream_ns(c_stream, c1, c2, seconds),
         "bench/tcp-stream.c (blocking writes, a receiver thread filling blocks)"),
    ]
    if a.only:
        comparisons = [c for c in comparisons if c[0] == a.only]
        if not comparisons:
            sys.exit(f"vs-perf-bench: error: --only takes syscall, threads, processes, tcp or tcp-c, not '{a.only}'")
    lines = [f"vs-perf-bench: {pairs} pairs per comparison, CPUs {c1},{c2}, "
             f"kernel {os.uname().release}, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"]
    verdicts = []
    for name, bench, lcpus, peer, peer_name in comparisons:
        rows = []
        for i in range(pairs):
            first_latscope = i % 4 in (0, 3)
            if first_latscope:
                l = latscope(bench, lcpus, iters, store)
                p = peer()
            else:
                p = peer()
                l = latscope(bench, lcpus, iters, store)
            rows.append((l, p, "AB" if first_latscope else "BA"))
        ratios = [l / p for l, p, _ in rows]
        med = statistics.median(ratios)
        ok = abs(med - 1.0) <= TOLERANCE
        verdicts.append(ok)
        lines.append("")
        lines.append(f"{name}: latscope {bench} against {peer_name} (ns per operation)")
        for k, (l, p, order) in enumerate(rows):
            lines.append(f"  pair {k + 1} ({'latscope first' if order == 'AB' else 'peer first'}): "
                         f"latscope {l:10.1f}  peer {p:10.1f}  ratio {l / p:.3f}")
        lines.append(f"  median ratio latscope/peer {med:.3f} "
                     f"(pairs {min(ratios):.3f}-{max(ratios):.3f}): "
                     f"{'within' if ok else 'outside'} {TOLERANCE:.0%}")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
