#!/usr/bin/env python3
"""What `latscope monitor` costs, against cyclictest doing the same job.

Two comparisons, each in alternating pairs (A B, B A, ...: ABBA), so that a
drift of the host over the minutes of the run falls on both sides alike:

cpu     The CPU time of every thread of the process (from
        /proc/PID/task/*/schedstat, exact nanoseconds), over the same window
        of each run (from 5 s after the start to 5 s before the end):
        `latscope monitor` (1 ms, FIFO 95, every online CPU), the same with
        --trace, and `cyclictest -m -p95 -i1000 -t -a` (one thread per CPU,
        memory locked). Quoted: monitor / cyclictest per pair, and the median.
scrape  The median timer latency of the monitor with a client scraping
        /metrics every 5 s against the monitor alone (the median of its
        per-CPU medians, from `latscope show --json` after each run).
        Quoted: with / without per pair, and the median; target < 2 %.

Standard library only. Run as root (SCHED_FIFO, mlockall).
"""

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def die(msg):
    print(f"monitor-overhead: error: {msg}", file=sys.stderr)
    sys.exit(1)


# The HTTP thread's run time per process, as last read.
HTTP_NS = {}


def process_runtime_ns(pid):
    """(all threads, measuring threads) summed run time of pid, in ns. The
    measuring threads are latscope's lat-timer/N and every cyclictest
    thread but its main one."""
    total = measuring = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue
        total += ns
        if comm == "latscope-http":
            HTTP_NS[pid] = ns
        if comm.startswith("lat-timer/") or (comm == "cyclictest" and int(tid) != pid):
            measuring += ns
    return (total, measuring)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_for(argv, seconds, scrape_port=None):
    """Runs argv for `seconds`; returns its CPU time (ns) over the window
    from 5 s after the start to 5 s before the end, and the number of
    scrapes made (when scrape_port is given)."""
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    scrapes = [0]
    stop = threading.Event()

    def scraper():
        while not stop.wait(5.0):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{scrape_port}/metrics", timeout=5) as r:
                    r.read()
                scrapes[0] += 1
            except OSError:
                pass

    t = None
    if scrape_port is not None:
        t = threading.Thread(target=scraper, daemon=True)
        t.start()
    time.sleep(5)
    a = process_runtime_ns(child.pid)
    time.sleep(seconds - 10)
    b = process_runtime_ns(child.pid)
    http_ns = HTTP_NS.get(child.pid, 0)
    time.sleep(5)
    stop.set()
    child.send_signal(signal.SIGTERM)
    try:
        _, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        die(f"{argv[0]} did not stop on SIGTERM")
    if t is not None:
        t.join()
    if a is None or b is None:
        die(f"{' '.join(argv)} ended early: {err.decode(errors='replace')[-500:]}")
    run_for.http_ns = http_ns
    return (b[0] - a[0], b[1] - a[1]), scrapes[0]


def monitor_argv(latscope, store, port, trace):
    argv = [latscope, "monitor", "--listen", f"127.0.0.1:{port}", "--store", store]
    if trace:
        argv.append("--trace")
    return argv


def median_latency_us(latscope, store):
    out = subprocess.run(
        [latscope, "show", "latest", "--json", "--store", store],
        check=True, capture_output=True, text=True,
    ).stdout
    doc = json.loads(out)
    meds = [
        m["p50_ns"] / 1000.0
        for c in doc["cells"]
        for m in c["metrics"]
        if m["name"] == "timer.latency" and m.get("p50_ns") is not None
    ]
    return statistics.median(meds)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--only", choices=["cpu", "scrape"], help="run one comparison only")
    a = ap.parse_args()
    if a.seconds < 15:
        die("--seconds must be at least 15 (5 s settle at each end)")
    latscope = os.environ.get("LATSCOPE")
    cyclictest = os.environ.get("CYCLICTEST")
    lines = []

    def say(line):
        print(line, flush=True)
        lines.append(line)

    say(f"monitor-overhead: {a.pairs} pairs of {a.seconds} s, kernel {os.uname().release}, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    tmp = tempfile.mkdtemp(prefix="latscope-overhead-")
    cyc = [cyclictest, "-m", "-p95", "--policy=fifo", "-i1000", "-t", "-a", "-q", f"-D{a.seconds + 5}s"]

    for variant, trace in (() if a.only == "scrape" else (("monitor", False), ("monitor --trace", True))):
        say(f"\ncpu: {variant} against cyclictest -m -p95 -i1000 -t -a (CPU time over {a.seconds - 10} s: "
            f"all threads, and the measuring threads alone)")
        ratios = []
        mratios = []
        for p in range(a.pairs):
            order = ("latscope", "cyclictest") if p % 2 == 0 else ("cyclictest", "latscope")
            got = {}
            for who in order:
                if who == "latscope":
                    store = os.path.join(tmp, f"cpu-{trace}-{p}.db")
                    ns, _ = run_for(monitor_argv(latscope, store, free_port(), trace), a.seconds)
                else:
                    ns, _ = run_for(cyc, a.seconds)
                got[who] = ns
            r = got["latscope"][0] / got["cyclictest"][0]
            m = got["latscope"][1] / got["cyclictest"][1]
            ratios.append(r)
            mratios.append(m)
            say(f"  pair {p + 1} ({order[0]} first): all threads: latscope {got['latscope'][0] / 1e6:.1f} ms, "
                f"cyclictest {got['cyclictest'][0] / 1e6:.1f} ms, ratio {r:.3f}; measuring threads: "
                f"{got['latscope'][1] / 1e6:.1f} ms, {got['cyclictest'][1] / 1e6:.1f} ms, ratio {m:.3f}")
        say(f"  median ratio latscope/cyclictest, all threads {statistics.median(ratios):.3f} "
            f"(pairs {min(ratios):.3f}-{max(ratios):.3f}); measuring threads {statistics.median(mratios):.3f} "
            f"(pairs {min(mratios):.3f}-{max(mratios):.3f})")

    if a.only == "cpu":
        if a.out:
            with open(a.out, "w") as f:
                f.write("\n".join(lines) + "\n")
        return
    say(f"\nscrape: the monitor's median timer latency with /metrics scraped every 5 s against without")
    ratios = []
    per_scrape = []
    for p in range(a.pairs):
        order = ("scraped", "alone") if p % 2 == 0 else ("alone", "scraped")
        got = {}
        for who in order:
            store = os.path.join(tmp, f"scrape-{who}-{p}.db")
            port = free_port()
            _, n = run_for(monitor_argv(latscope, store, port, False), a.seconds,
                           scrape_port=port if who == "scraped" else None)
            got[who] = median_latency_us(latscope, store)
            if who == "scraped":
                if n == 0:
                    die("no scrape succeeded")
                per_scrape.append(run_for.http_ns / n)
        r = got["scraped"] / got["alone"]
        ratios.append(r)
        say(f"  pair {p + 1} ({order[0]} first): scraped {got['scraped']:.2f} us, alone {got['alone']:.2f} us, ratio {r:.4f}")
    med = statistics.median(ratios)
    say(f"  median ratio scraped/alone {med:.4f} (pairs {min(ratios):.4f}-{max(ratios):.4f}): "
        f"{'within' if abs(med - 1) < 0.02 else 'outside'} 2%")
    say(f"  the HTTP thread's CPU time per scrape (all of it, start to end of each scraped run): "
        f"median {statistics.median(per_scrape) / 1e3:.0f} us (runs {min(per_scrape) / 1e3:.0f}-{max(per_scrape) / 1e3:.0f} us)")
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
