#!/usr/bin/env python3
"""Scraping's effect on the monitor's median latency, within one run.

One `latscope monitor` on one CPU (its endpoint on the others) for N whole
UTC minutes; a client scrapes /metrics every 5 s in some minutes and not in
others, in the order S A A S S A A S ... (ABBA, so a drift of the host
weighs on both). The monitor stores a histogram of timer.latency per
minute (monitor_windows); this script decodes them (the store's LSH1
layout: HdrHistogram's with 1 ns units and 3 significant digits) and
compares each scraped minute's median with its neighbour's, and the
scraped minutes pooled against the others pooled. A run-to-run comparison
(monitor_overhead.py --only scrape) cannot resolve 2 % on this VM; minute
against minute in the same run removes what differs between runs (thread
placement, the host's state at start).

Run through bench/monitor-scrape-ab.sh (root, release build)."""

import argparse
import datetime
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def varints(b, pos):
    out = 0
    shift = 0
    while True:
        byte = b[pos]
        pos += 1
        out |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return out, pos


def lowest_of(index):
    bucket = (index >> 10) - 1
    sub = (index & 1023) + 1024
    if bucket < 0:
        sub -= 1024
        bucket = 0
    return sub << bucket


def decode(blob):
    """(total, [(index, count)]) of an LSH1 histogram."""
    if blob[:4] != b"LSH1":
        raise ValueError("not an LSH1 histogram")
    pos = 4
    total, pos = varints(blob, pos)
    for _ in range(4):  # min, max, sum high, sum low
        _, pos = varints(blob, pos)
    idx = 0
    counts = []
    while pos < len(blob):
        gap, pos = varints(blob, pos)
        c, pos = varints(blob, pos)
        idx += gap
        counts.append((idx, c))
    return total, counts


def median(counts):
    total = sum(c for _, c in counts)
    rank = (total + 1) // 2
    seen = 0
    for idx, c in sorted(counts):
        seen += c
        if seen >= rank:
            return lowest_of(idx)
    return 0


def merge(many):
    acc = {}
    for counts in many:
        for idx, c in counts:
            acc[idx] = acc.get(idx, 0) + c
    return list(acc.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=int, default=8, help="whole minutes measured (a multiple of 4)")
    ap.add_argument("--cpu", type=int, default=os.cpu_count() - 1, help="the measured CPU")
    ap.add_argument("--port", type=int, default=19464)
    ap.add_argument("--out", help="also write the lines to this file")
    a = ap.parse_args()
    if a.minutes < 4 or a.minutes % 4:
        sys.exit("monitor-scrape-ab: error: --minutes must be a multiple of 4")
    latscope = os.environ["LATSCOPE"]
    lines = []

    def say(s):
        print(s, flush=True)
        lines.append(s)

    tmp = tempfile.mkdtemp(prefix="latscope-scrape-ab-")
    store = os.path.join(tmp, "monitor.db")
    daemon = subprocess.Popen(
        [latscope, "monitor", "--cpus", str(a.cpu), "--persist", "1s",
         "--listen", f"127.0.0.1:{a.port}", "--store", store],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Start at the first minute boundary at least 30 s after the start.
    now = time.time()
    first = (int(now + 30) // 60 + 1) * 60
    pattern = "SAAS"
    plan = [(first + 60 * k, pattern[k % 4]) for k in range(a.minutes)]
    scrapes = [0]
    scraping = threading.Event()
    done = threading.Event()

    def scraper():
        while not done.is_set():
            if scraping.is_set():
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{a.port}/metrics", timeout=5) as r:
                        r.read()
                    scrapes[0] += 1
                except OSError:
                    pass
            done.wait(5)

    t = threading.Thread(target=scraper, daemon=True)
    t.start()
    try:
        for start, who in plan:
            time.sleep(max(0.0, start - time.time()))
            if who == "S":
                scraping.set()
            else:
                scraping.clear()
        time.sleep(max(0.0, plan[-1][0] + 62 - time.time()))
    finally:
        done.set()
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
    con = sqlite3.connect(store)
    rows = con.execute(
        "SELECT start_unix_ns, histogram FROM monitor_windows WHERE span = 'minute' "
        "AND name = 'timer.latency' AND cpu = ?", (a.cpu,)).fetchall()
    by_minute = {int(s // 1_000_000_000): decode(h)[1] for s, h in rows}
    say(f"monitor scraping A/B within one run: CPU {a.cpu}, 1 ms, {a.minutes} whole minutes "
        f"from {datetime.datetime.fromtimestamp(first, datetime.timezone.utc):%Y-%m-%dT%H:%MZ}, "
        f"order {pattern * (a.minutes // 4)}, {scrapes[0]} scrapes")
    medians = {}
    for start, who in plan:
        c = by_minute.get(start)
        if not c:
            sys.exit(f"monitor-scrape-ab: error: no minute window at {start}")
        medians[start] = (who, median(c), sum(n for _, n in c))
        say(f"  minute {start}: {'scraped' if who == 'S' else 'alone  '} median {medians[start][1] / 1e3:.2f} us, {medians[start][2]} samples")
    ratios = []
    for i in range(0, len(plan), 2):
        s = [medians[m] for m, w in plan[i:i + 2] if w == "S"][0]
        n = [medians[m] for m, w in plan[i:i + 2] if w == "A"][0]
        ratios.append(s[1] / n[1])
    pooled_s = median(merge(by_minute[m] for m, w in plan if w == "S"))
    pooled_a = median(merge(by_minute[m] for m, w in plan if w == "A"))
    say(f"  pairs scraped/alone: {', '.join(f'{r:.4f}' for r in ratios)}; median {statistics.median(ratios):.4f}")
    say(f"  pooled: scraped {pooled_s / 1e3:.2f} us, alone {pooled_a / 1e3:.2f} us, ratio {pooled_s / pooled_a:.4f}")
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
