#!/usr/bin/env python3
"""latscope's UDP probe vs sockperf ping-pong and a plain C ping-pong:
one-way path against half RTT.

Normally started through bench/vs-sockperf.sh, which checks root, sockperf,
a C compiler and latscope (building it if LATSCOPE is not set) first.
Standard library only; no network beyond 127.0.0.1.

N rounds. With --peer sockperf every round runs latscope (`run --probe udp
--path loopback`) and sockperf (`ping-pong` against a `sockperf server`), one
after the other, with the order flipped from one round to the next (A B,
B A, A B ...). With --peer c the second tool is bench/udp-pingpong.c
instead (built here with cc into the temporary directory): two threads, a
client on a sleeping periodic grid and a bare echo server (recv, send the
same bytes back, nothing else). With --peer both (the default) every round
runs all three, the order rotating through the six orders (L S C, C S L,
S C L, L C S, C L S, S L C, then again). All tools use the same two CPUs
(latscope's sender and the clients on the first, latscope's receiver and
the echo servers on the second), the same SCHED_FIFO priority, payload, rate
(one datagram per period) and duration.

latscope's figure is the median of `udp.path` (sender's CLOCK_MONOTONIC just
before sendto -> the receiver's user code has the datagram). Each peer's is
its median round-trip time, halved: sockperf's from its --full-log file
(client's clock just before sendto -> client's user code has the echo), the
C ping-pong's from its own per-sample output (CLOCK_MONOTONIC just before
send -> just after the echo's recv). The target (from the issue): latscope's
median within 10 % of half the peer's, comparing the median of the per-run
medians of each tool; with both peers there is one verdict per peer.

See bench/README.md for the method and how to read the output.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "bench", "results")

# Target from the issue: |latscope median / (sockperf RTT median / 2) - 1|.
TOLERANCE = 0.10

# sockperf's own header is 14 bytes: it refuses smaller messages.
SOCKPERF_MIN_MSG = 14
# The C ping-pong writes an 8-byte sequence number into each datagram.
PINGPONG_MIN_MSG = 8

# Peers (--peer) and the letters the run order is shown with.
PEERS = ("sockperf", "c")
LETTER = {"latscope": "L", "sockperf": "S", "c": "C"}
# --peer both: the six orders of the three tools, each followed by its mirror
# image, so that over six rounds every tool runs twice in every position.
ORDERS3 = (("latscope", "sockperf", "c"), ("c", "sockperf", "latscope"),
           ("sockperf", "c", "latscope"), ("latscope", "c", "sockperf"),
           ("c", "latscope", "sockperf"), ("sockperf", "latscope", "c"))
PINGPONG_SRC = os.path.join(REPO, "bench", "udp-pingpong.c")

EXIT_TARGET_MISSED = 3
PROG = "vs-sockperf"


def die(msg):
    print(f"{PROG}: error: {msg}", file=sys.stderr)
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
    return cpus


def online_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        return parse_cpu_list(f.read().strip())


def read_first_line(path, default="?"):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return default


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def other_tools(own_pids):
    """Other running latscope / sockperf / udp-pingpong / cyclictest / oslat
    processes."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in own_pids or pid == os.getpid():
            continue
        comm = read_first_line(f"/proc/{pid}/comm", "")
        if comm in ("latscope", "sockperf", "udp-pingpong", "cyclictest", "oslat", "stress-ng"):
            found.append(f"pid {pid}: {cmdline(pid)[:120]}")
    return found


def steal_ticks(cpus):
    """Summed steal time of the given CPUs, in USER_HZ ticks (/proc/stat)."""
    total = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                parts = line.split()
                if parts and parts[0].startswith("cpu") and parts[0][3:].isdigit() \
                        and int(parts[0][3:]) in cpus and len(parts) > 8:
                    total += int(parts[8])
    except (OSError, ValueError):
        return None
    return total


def udp_port_bound(port):
    """True if some UDP socket is bound to 127.0.0.1:port or *:port."""
    want = f":{port:04X}"
    try:
        with open("/proc/net/udp") as f:
            next(f)
            for line in f:
                local = line.split()[1]
                addr, p = local.split(":")
                if ":" + p == want and addr in ("0100007F", "00000000"):
                    return True
    except (OSError, StopIteration, IndexError, ValueError):
        pass
    return False


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def tail(path, lines=3):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-lines:])
    except OSError:
        return ""


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip_ansi(text):
    return ANSI.sub("", text)


class DmaLatency:
    """Holds /dev/cpu_dma_latency at 0 while sockperf runs (latscope does so
    itself unless --no-dma-latency). With the haltpoll cpuidle driver of
    this VM a request of 0 turns every idle CPU's halt into polling, which
    changes the cost of a cross-CPU wake-up several times over."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.fd = None
        self.error = None

    def __enter__(self):
        if not self.enabled:
            return self
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


# --------------------------------------------------------------------------
# child processes


class Procs:
    """Every process the benchmark starts, so that an exit or a signal can
    stop them. They are also written to a pid file the shell wrapper's trap
    reads, in case this process is killed without a chance to clean up."""

    def __init__(self, pidfile):
        self.live = {}
        self.pidfile = pidfile
        self.lock = threading.Lock()

    def _write(self):
        if not self.pidfile:
            return
        try:
            with open(self.pidfile + ".tmp", "w") as f:
                for pid in self.live:
                    f.write(f"{pid}\n")
            os.replace(self.pidfile + ".tmp", self.pidfile)
        except OSError:
            pass

    def add(self, proc, long_lived=False):
        with self.lock:
            self.live[proc.pid] = (proc, long_lived)
            self._write()

    def remove(self, proc):
        with self.lock:
            self.live.pop(proc.pid, None)
            self._write()

    def own_pids(self):
        return set(self.live)

    def stop(self, proc, grace=2.0):
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            except OSError:
                pass
        self.remove(proc)

    def stop_all(self):
        for proc, _ in list(self.live.values()):
            self.stop(proc, grace=1.0)


class Run:
    """One command run to the end, with a time limit."""

    def __init__(self, procs, argv, cwd, out_path, err_path, timeout_s):
        self.procs = procs
        self.argv = argv
        self.cwd = cwd
        self.out_path = out_path
        self.err_path = err_path
        self.timeout_s = timeout_s
        self.timed_out = False

    def run(self):
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)
            self.procs.add(proc)
            try:
                proc.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                self.timed_out = True
                self.procs.stop(proc, grace=5.0)
            self.procs.remove(proc)
            self.wall = time.monotonic() - t0
            self.rc = proc.returncode
        return self

    def check(self, what):
        if self.timed_out:
            die(f"{what} did not finish within {self.timeout_s:.0f} s; stopped it "
                f"(command: {' '.join(self.argv)})")
        if self.rc != 0:
            msg = tail(self.err_path) or tail(self.out_path) or "(no output)"
            die(f"{what} exited with status {self.rc}: {msg} (command: {' '.join(self.argv)})")


# --------------------------------------------------------------------------
# the two tools' results


def hist_quantile(buckets, total, q):
    """buckets: ascending (low, high, count). The bucket holding the sample
    of rank ceil(q*total), latscope's and HdrHistogram's rule."""
    if total == 0:
        return None
    rank = min(max(math.ceil(q * total), 1), total)
    seen = 0
    for low, high, count in buckets:
        seen += count
        if seen >= rank:
            return (low, high)
    return None


class LatscopeUdp:
    """udp.path of one `latscope run --probe udp` (from its --json)."""

    METRIC = "udp.path"

    def __init__(self, path, receiver_cpu, sender_cpu):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            die(f"cannot read latscope's JSON {path}: {e}")
        self.status = doc.get("status")
        self.notes = doc.get("notes") or []
        self.version = doc.get("tool_version", "?")
        # Whether latscope held /dev/cpu_dma_latency at 0 (None: not said).
        self.dma_latency = (doc.get("capabilities") or {}).get("dma_latency")
        cells = doc.get("cells") or []
        if not cells:
            die(f"no cells in latscope's JSON {path}")
        cell = cells[0]
        self.probe = cell.get("probe")
        self.settings = cell.get("settings") or {}
        self.udp = cell.get("udp") or {}
        metrics = [m for m in cell.get("metrics") or [] if m.get("name") == self.METRIC]
        if not metrics:
            names = sorted({m.get("name") for m in cell.get("metrics") or []})
            die(f"no {self.METRIC} metric in cells[0] of {path} (metrics: {', '.join(map(str, names)) or 'none'})")
        if len(metrics) > 1:
            # One path, one metric is expected; prefer the receiver's CPU.
            mine = [m for m in metrics if m.get("cpu") == receiver_cpu] or \
                   [m for m in metrics if m.get("cpu") == sender_cpu]
            if len(mine) != 1:
                die(f"{len(metrics)} {self.METRIC} entries in {path} and none singled out "
                    f"by CPU {receiver_cpu} or {sender_cpu}")
            metrics = mine
        m = metrics[0]
        self.metric = m
        self.cpu = m.get("cpu")
        self.count = m["count"]
        if not self.count:
            die(f"latscope's {self.METRIC} has no samples ({path})")
        self.min_ns = m["min_ns"]
        self.p50_ns = m["p50_ns"]
        self.p99_ns = m.get("p99_ns")
        self.max_ns = m["max_ns"]
        self.mean_ns = m.get("mean_ns")
        self.histogram = [tuple(b) for b in m.get("histogram") or []]

    def us(self, key):
        v = getattr(self, key)
        return None if v is None else v / 1000.0

    @staticmethod
    def pooled_median_ns(runs):
        merged = {}
        for r in runs:
            for low, high, count in r.histogram:
                merged[(low, high)] = merged.get((low, high), 0) + count
        if not merged:
            return None
        buckets = sorted((lo, hi, c) for (lo, hi), c in merged.items())
        total = sum(c for _, _, c in buckets)
        b = hist_quantile(buckets, total, 0.5)
        if b is None:
            return None
        # latscope reports a bucket's highest value, clamped to [min, max].
        return min(max(b[1], min(r.min_ns for r in runs)), max(r.max_ns for r in runs))


class SockperfRun:
    """One `sockperf ping-pong --full-rtt --full-log FILE` run.

    The full log holds, for every valid observation (after sockperf's own
    warm-up and before its cool-down), `packet, txTime(sec), rxTime(sec),
    rtt(usec)`: the client's clock just before sendto, its clock when the
    echo was received, and rx - tx in us (halved when --full-rtt is not
    given, and the header then says `latency(usec)`). The benchmark takes the
    RTT as rx - tx itself (ns resolution), so it does not depend on which
    form the fourth column has, and checks it against that column."""

    ROW = re.compile(r"^\s*(\d+),\s*([0-9.]+),\s*([0-9.]+),\s*([0-9.]+)\s*$")

    def __init__(self, log_path, stdout_path, period_us):
        try:
            with open(log_path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            die(f"sockperf wrote no full log ({log_path}): {e}")
        header = None
        rows = []
        for line in lines:
            s = line.strip()
            if s.startswith("packet,") and "txTime" in s:
                header = s
                continue
            mt = self.ROW.match(s)
            if mt and header is not None:
                rows.append((float(mt.group(2)), float(mt.group(3)), float(mt.group(4))))
        if header is None or not rows:
            die(f"no per-packet rows in sockperf's full log {log_path}")
        self.header = header
        per_rtt = 1.0 if "rtt(usec)" in header else 2.0 if "latency(usec)" in header else None
        if per_rtt is None:
            die(f"unknown column in sockperf's full log header: {header!r} ({log_path})")
        self.rtt_us = []
        worst = 0.0
        for tx, rx, col in rows:
            rtt = (rx - tx) * 1e6
            self.rtt_us.append(rtt)
            worst = max(worst, abs(col * per_rtt - rtt))
        # tx/rx are printed with 9 decimals (ns), the column with 3 (us/1000).
        if worst > 0.01:
            die(f"sockperf's full log is inconsistent: rtt column differs from rx - tx by "
                f"{worst:.3f} us ({log_path})")
        self.count = len(self.rtt_us)
        srt = sorted(self.rtt_us)
        self.sorted = srt
        self.min_us = srt[0]
        self.max_us = srt[-1]
        self.median_us = statistics.median(srt)
        self.p99_us = srt[min(max(math.ceil(0.99 * self.count), 1), self.count) - 1]
        self.mean_us = sum(srt) / self.count
        # Sends that came less than half a period after the previous one:
        # sockperf paces with a busy-wait towards a fixed schedule, so after a
        # stall (RT throttling, a long RTT) it sends the missed cycles back to
        # back, each still a ping-pong.
        txs = [r[0] for r in rows]
        paced = [self.rtt_us[0]] + [rtt for a, b, rtt in zip(txs, txs[1:], self.rtt_us[1:])
                                    if (b - a) * 1e6 >= period_us / 2]
        self.catch_up = self.count - len(paced)
        self.median_paced_us = statistics.median(paced)

        # Its own summary, for cross-checking and the details.
        self.own = {}
        try:
            with open(stdout_path, errors="replace") as f:
                text = strip_ansi(f.read())
        except OSError:
            text = ""
        self.summary_text = text
        for key, pat in (("p50", r"percentile 50\.000 =\s*([0-9.]+)"),
                         ("avg", r"avg-(?:rtt|latency)=([0-9.]+)"),
                         ("dropped", r"# dropped messages = (\d+)"),
                         ("duplicated", r"# duplicated messages = (\d+)"),
                         ("out_of_order", r"# out-of-order messages = (\d+)"),
                         ("observations", r"Total (\d+) observations"),
                         ("valid", r"\[Valid Duration\] (RunTime=[^\n]*)")):
            mt = re.search(pat, text)
            if mt:
                self.own[key] = mt.group(1)
        # sockperf's percentile is the sample of rank round(p * n) (its
        # printPercentiles): for the median the lower middle one.
        self.own_rank_median_us = srt[max(int(0.5 + 0.5 * self.count) - 1, 0)]

    @staticmethod
    def pooled_median_us(runs):
        return statistics.median(v for r in runs for v in r.rtt_us)


class PingpongRun:
    """One run of bench/udp-pingpong.c: '#' lines (settings, counts, its own
    summary), then one round-trip time per line in ns (client's
    CLOCK_MONOTONIC just before send -> just after the echo's recv)."""

    KV = re.compile(r"([a-z_]+):\s*([0-9.]+)")

    def __init__(self, stdout_path):
        try:
            with open(stdout_path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            die(f"cannot read the C ping-pong's output {stdout_path}: {e}")
        self.own = {}
        rtt_ns = []
        for line in lines:
            s = line.strip()
            if not s:
                continue
            if s.startswith("#"):
                if s.startswith("# rtt_ns:"):
                    self.own.update({"own_" + k: v for k, v in
                                     re.findall(r"(n|min|median|mean|max) ([0-9.]+)", s)})
                else:
                    self.own.update(self.KV.findall(s))
                continue
            try:
                rtt_ns.append(int(s))
            except ValueError:
                die(f"unexpected line in the C ping-pong's output {stdout_path}: {s[:80]!r}")
        if not rtt_ns:
            die(f"no round-trip times in the C ping-pong's output {stdout_path}")
        if "sent" in self.own and int(self.own["sent"]) != len(rtt_ns):
            die(f"the C ping-pong says it sent {self.own['sent']} datagrams but listed "
                f"{len(rtt_ns)} round trips ({stdout_path})")
        self.dma_latency = None
        if "dma_latency_held" in self.own:
            self.dma_latency = self.own["dma_latency_held"] == "1"
        self.sent = int(self.own.get("sent", len(rtt_ns)))
        self.skipped = int(self.own.get("skipped", 0))
        self.overruns = int(self.own.get("overruns", 0))
        self.rtt_us = [v / 1000.0 for v in rtt_ns]
        self.count = len(self.rtt_us)
        srt = sorted(self.rtt_us)
        self.min_us = srt[0]
        self.max_us = srt[-1]
        self.median_us = statistics.median(srt)
        self.p99_us = srt[min(max(math.ceil(0.99 * self.count), 1), self.count) - 1]
        self.mean_us = sum(srt) / self.count

    @staticmethod
    def pooled_median_us(runs):
        return statistics.median(v for r in runs for v in r.rtt_us)


def compiler_version(cc):
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (out.splitlines() or ["?"])[0].strip()


def sockperf_version(sockperf):
    try:
        out = subprocess.run([sockperf, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    mt = re.search(r"version\s+(\S+)", strip_ansi(out))
    return mt.group(1) if mt else "?"


def latscope_run_help(latscope):
    try:
        p = subprocess.run([latscope, "run", "--help"], capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        die(f"cannot run {latscope}: {e}")
    return p.stdout + p.stderr


# --------------------------------------------------------------------------
# the benchmark


class Bench:
    def __init__(self, args, procs):
        self.args = args
        self.procs = procs
        self.tmp = tempfile.mkdtemp(prefix="latscope-vs-sockperf-")
        self.seq = 0
        self.others = {}
        self.dma_errors = []
        self.build_warnings = ""
        self.cleaned = False

    def cleanup(self):
        self.procs.stop_all()
        if self.cleaned:
            return
        self.cleaned = True
        if self.args.keep_tmp:
            print(f"(kept the raw outputs in {self.tmp})", file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def progress(self, msg):
        print(msg, file=sys.stderr, flush=True)

    def _dir(self, tag):
        for entry in other_tools(self.procs.own_pids()):
            self.others.setdefault(entry.split(":", 1)[0], entry)
        self.seq += 1
        d = os.path.join(self.tmp, f"{self.seq:02d}-{tag}")
        os.makedirs(d)
        return d

    # ---- latscope

    def latscope_argv(self, d):
        a = self.args
        argv = [a.latscope, "run", "--probe", "udp", "--path", "loopback",
                "--cpus", f"{a.sender_cpu},{a.receiver_cpu}",
                "--period", f"{a.period_us}us", "--payload", str(a.payload),
                "--priority", str(a.priority), "--duration", f"{a.seconds}s",
                "--json", os.path.join(d, "out.json"), "--store", os.path.join(d, "bench.db"),
                a.quiet_flag]
        if a.no_dma_latency:
            argv.append("--no-dma-latency")
        return argv

    def run_latscope(self, tag):
        a = self.args
        d = self._dir(tag)
        argv = self.latscope_argv(d)
        s0 = steal_ticks({a.sender_cpu, a.receiver_cpu})
        r = Run(self.procs, argv, d, os.path.join(d, "stdout"), os.path.join(d, "stderr"),
                a.seconds + 60).run()
        s1 = steal_ticks({a.sender_cpu, a.receiver_cpu})
        r.check("latscope")
        res = LatscopeUdp(os.path.join(d, "out.json"), a.receiver_cpu, a.sender_cpu)
        res.wall = r.wall
        res.steal_ms = None if s0 is None or s1 is None else (s1 - s0) * 1000.0 / a.hz
        return res

    # ---- sockperf

    def start_server(self, d, port):
        a = self.args
        if udp_port_bound(port):
            die(f"UDP port {port} on 127.0.0.1 is already in use: pick another with --port")
        argv = ["taskset", "-c", str(a.receiver_cpu), "chrt", "-f", str(a.priority),
                a.sockperf, "server", "-i", "127.0.0.1", "-p", str(port)]
        out = open(os.path.join(d, "server.stdout"), "wb")
        err = open(os.path.join(d, "server.stderr"), "wb")
        proc = subprocess.Popen(argv, cwd=d, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        out.close()
        err.close()
        self.procs.add(proc, long_lived=True)
        deadline = time.monotonic() + 10
        while not udp_port_bound(port):
            if proc.poll() is not None:
                self.procs.remove(proc)
                die(f"sockperf server exited with status {proc.returncode}: "
                    f"{tail(os.path.join(d, 'server.stdout')) or tail(os.path.join(d, 'server.stderr'))} "
                    f"(command: {' '.join(argv)})")
            if time.monotonic() > deadline:
                self.procs.stop(proc)
                die(f"sockperf server did not bind 127.0.0.1:{port} within 10 s")
            time.sleep(0.05)
        # What the server really runs with (taskset and chrt exec it: same pid).
        try:
            pol = os.sched_getscheduler(proc.pid)
            prio = os.sched_getparam(proc.pid).sched_priority
            aff = sorted(os.sched_getaffinity(proc.pid))
            place = (f"policy {'SCHED_FIFO' if pol == os.SCHED_FIFO else pol} priority {prio}, "
                     f"CPUs {','.join(map(str, aff))}")
        except OSError as e:
            place = f"? ({e})"
        return proc, argv, place

    def client_argv(self, d, port):
        a = self.args
        return ["taskset", "-c", str(a.sender_cpu), "chrt", "-f", str(a.priority),
                a.sockperf, "ping-pong", "-i", "127.0.0.1", "-p", str(port),
                "-m", str(a.payload), "--mps", str(a.mps), "-t", str(a.seconds),
                "--full-rtt", "--full-log", os.path.join(d, "full.log")]

    def run_sockperf(self, tag):
        a = self.args
        d = self._dir(tag)
        port = a.port or free_udp_port()
        with DmaLatency(not a.no_dma_latency) as dma:
            if dma.error:
                self.dma_errors.append(dma.error)
            server, server_argv, place = self.start_server(d, port)
            argv = self.client_argv(d, port)
            s0 = steal_ticks({a.sender_cpu, a.receiver_cpu})
            # sockperf: ~0.4 s warm-up, 2 s pause, then the test, then 0.1 s.
            r = Run(self.procs, argv, d, os.path.join(d, "stdout"), os.path.join(d, "stderr"),
                    a.seconds + 30).run()
            s1 = steal_ticks({a.sender_cpu, a.receiver_cpu})
            server_alive = server.poll() is None
            self.procs.stop(server)
        if not server_alive:
            die(f"sockperf server died during the run (status {server.returncode}): "
                f"{tail(os.path.join(d, 'server.stdout'))}")
        r.check("sockperf ping-pong")
        res = SockperfRun(os.path.join(d, "full.log"), os.path.join(d, "stdout"), a.period_us)
        res.wall = r.wall
        res.port = port
        res.server_place = place
        res.server_argv = server_argv
        res.client_argv = argv
        res.steal_ms = None if s0 is None or s1 is None else (s1 - s0) * 1000.0 / a.hz
        return res

    # ---- the C ping-pong

    def build_pingpong(self):
        a = self.args
        d = os.path.join(self.tmp, "build")
        os.makedirs(d)
        exe = os.path.join(d, "udp-pingpong")
        argv = [a.cc, "-O2", "-Wall", "-Wextra", "-pthread", "-o", exe, PINGPONG_SRC]
        self.progress(f"{PROG}: building the C ping-pong ({' '.join(argv)})")
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            die(f"cannot run the C compiler {a.cc}: {e}")
        if p.returncode != 0 or not os.access(exe, os.X_OK):
            msg = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:]) or "(no output)"
            die(f"building {PINGPONG_SRC} failed (status {p.returncode}): {msg}")
        self.build_warnings = (p.stderr or "").strip()
        a.pingpong = exe
        a.pingpong_build = " ".join(argv[:-3] + ["-o", "<tmp>/udp-pingpong", "bench/udp-pingpong.c"])

    def pingpong_argv(self):
        a = self.args
        argv = [a.pingpong, "-a", str(a.sender_cpu), "-b", str(a.receiver_cpu),
                "-p", str(a.priority), "-i", str(a.period_us), "-m", str(a.payload),
                "-t", str(a.seconds)]
        if a.no_dma_latency:
            argv.append("-n")
        return argv

    def run_pingpong(self, tag):
        a = self.args
        d = self._dir(tag)
        argv = self.pingpong_argv()
        s0 = steal_ticks({a.sender_cpu, a.receiver_cpu})
        r = Run(self.procs, argv, d, os.path.join(d, "stdout"), os.path.join(d, "stderr"),
                a.seconds + 30).run()
        s1 = steal_ticks({a.sender_cpu, a.receiver_cpu})
        r.check("the C ping-pong (bench/udp-pingpong.c)")
        res = PingpongRun(os.path.join(d, "stdout"))
        res.wall = r.wall
        res.steal_ms = None if s0 is None or s1 is None else (s1 - s0) * 1000.0 / a.hz
        return res

    # ---- the rounds

    def order(self, i):
        """The tools of round i (from 1) in the order they run."""
        peers = self.args.peers
        if len(peers) == 2:
            return ORDERS3[(i - 1) % len(ORDERS3)]
        return ("latscope", peers[0]) if i % 2 == 1 else (peers[0], "latscope")

    def rounds(self):
        a = self.args
        out = []
        run = {"latscope": self.run_latscope, "sockperf": self.run_sockperf,
               "c": self.run_pingpong}
        name = {"latscope": "latscope", "sockperf": "sockperf", "c": "C ping-pong"}
        for i in range(1, a.rounds + 1):
            order = self.order(i)
            got = {}
            for tool in order:
                self.progress(f"{PROG}: round {i}/{a.rounds}: {name[tool]} ({a.seconds} s)")
                got[tool] = run[tool](f"r{i}-{'pingpong' if tool == 'c' else tool}")
            out.append((i, order, got))
        return out


# --------------------------------------------------------------------------
# the report


def f2(x, width=8):
    return f"{'n/a':>{width}}" if x is None else f"{x:{width}.2f}"


def verdict(ok):
    return "PASS" if ok else "FAIL"


PEER_NAME = {"latscope": "latscope", "sockperf": "sockperf", "c": "C ping-pong"}
PEER_COL = {"sockperf": "sockperf", "c": "pingpong"}


def order_tag(args, order):
    if len(args.peers) == 1:
        return "A B" if order[0] == "latscope" else "B A"
    return " ".join(LETTER[t] for t in order)


def peer_block(args, rounds, peer, w):
    """latscope against one peer: the per-run table and the summary lines.
    Returns (ratio of the medians of the per-run medians, ls median, half)."""
    col = PEER_COL[peer]
    ls_runs = [got["latscope"] for _, _, got in rounds]
    pr_runs = [got[peer] for _, _, got in rounds]
    hdr = (f"{'round':>5} {'order':>5} | {'latscope n':>10} {'min':>7} {'median':>7} {'p99':>8} "
           f"{'max':>9} | {col + ' n':>10} {'min':>7} {'median':>7} {'half':>7} {'p99':>8} "
           f"{'max':>9} | {'ratio':>6}")
    w(hdr)
    w("-" * len(hdr))
    ratios = []
    for i, order, got in rounds:
        ls, pr = got["latscope"], got[peer]
        half = pr.median_us / 2.0
        r = ls.us("p50_ns") / half
        ratios.append(r)
        w(f"{i:>5} {order_tag(args, order):>5} | {ls.count:>10} {f2(ls.us('min_ns'), 7)} "
          f"{f2(ls.us('p50_ns'), 7)} {f2(ls.us('p99_ns'))} {f2(ls.us('max_ns'), 9)} | "
          f"{pr.count:>10} {f2(pr.min_us, 7)} {f2(pr.median_us, 7)} {f2(half, 7)} "
          f"{f2(pr.p99_us)} {f2(pr.max_us, 9)} | {r:6.3f}")
    w("-" * len(hdr))
    ls_med = statistics.median(ls.us("p50_ns") for ls in ls_runs)
    pr_med = statistics.median(pr.median_us for pr in pr_runs)
    pr_half = pr_med / 2.0
    ratio = ls_med / pr_half
    w(f"{'median of the per-run medians':>22}: latscope udp.path {ls_med:.2f} us; {col} RTT "
      f"{pr_med:.2f} us, half {pr_half:.2f} us")
    pl = LatscopeUdp.pooled_median_ns(ls_runs)
    ps = type(pr_runs[0]).pooled_median_us(pr_runs)
    w(f"{'pooled (all runs as one)':>22}: latscope udp.path {f2(None if pl is None else pl / 1000.0, 0)} us; "
      f"{col} RTT {ps:.2f} us, half {ps / 2:.2f} us"
      + (f"; ratio {pl / 1000.0 / (ps / 2):.3f}" if pl else ""))
    w(f"{'per-round ratios':>22}: {', '.join(f'{x:.3f}' for x in ratios)} (median "
      f"{statistics.median(ratios):.3f}; {sum(abs(x - 1) <= TOLERANCE for x in ratios)}/"
      f"{len(ratios)} within +-{TOLERANCE:.0%})")
    lost = sum(int(ls.udp.get("lost") or 0) for ls in ls_runs)
    sent = sum(int(ls.udp.get("sent") or 0) for ls in ls_runs)
    if peer == "sockperf":
        dropped = sum(int(sp.own.get("dropped") or 0) for sp in pr_runs)
        w(f"{'losses':>22}: latscope lost {lost} (of {sent} sent); sockperf dropped {dropped}; "
          f"sockperf catch-up sends {sum(sp.catch_up for sp in pr_runs)}")
    else:
        skipped = sum(int(ls.udp.get("skipped_sends") or 0) for ls in ls_runs)
        w(f"{'losses':>22}: latscope lost {lost} (of {sent} sent), skipped sends {skipped}; "
          f"pingpong skipped sends {sum(pp.skipped for pp in pr_runs)} (of "
          f"{sum(pp.sent + pp.skipped for pp in pr_runs)} grid points; it has no losses: "
          f"a lost echo stops it)")
    return ratio, ls_med, pr_half


def target_line(label, peer, ls_med, half, ratio):
    ok = abs(ratio - 1.0) <= TOLERANCE
    what = "sockperf RTT median" if peer == "sockperf" else "C ping-pong RTT median"
    return ok, (f"{label} latscope udp.path median / ({what} / 2) = {ls_med:.2f} / {half:.2f} "
                f"= {ratio:.3f}, within 1 +- {TOLERANCE:.2f}: {verdict(ok)}")


def report(args, bench, rounds, started, ended, warnings):
    out = []
    det = []
    w = out.append
    peers = args.peers
    ls_runs = [got["latscope"] for _, _, got in rounds]
    one = peers[0] if len(peers) == 1 else None

    if one == "sockperf":
        w(f"latscope udp.path vs sockperf ping-pong (half RTT) over loopback, A/B alternating")
    elif one == "c":
        w(f"latscope udp.path vs a plain C ping-pong (bench/udp-pingpong.c, half RTT) over "
          f"loopback, A/B alternating")
    else:
        w(f"latscope udp.path vs sockperf ping-pong and a plain C ping-pong (bench/udp-pingpong.c) "
          f"(half RTT) over loopback, order rotating")
    w(f"started {started:%Y-%m-%d %H:%M:%S} UTC, ended {ended:%H:%M:%S} UTC; "
      f"host {platform.node()}, kernel {platform.release()}, {os.cpu_count()} CPUs; "
      f"load average at end {read_first_line('/proc/loadavg')}")
    tools = [f"latscope {ls_runs[0].version} ({args.latscope})"]
    if "sockperf" in peers:
        tools.append(f"sockperf {args.sockperf_version} ({args.sockperf})")
    if "c" in peers:
        tools.append(f"C ping-pong bench/udp-pingpong.c built with {args.cc} "
                     f"({args.cc_version}) -O2")
    w("; ".join(tools))
    if one == "sockperf":
        who = (f"sender / sockperf client on CPU {args.sender_cpu}, receiver / sockperf server "
               f"on CPU {args.receiver_cpu}")
        how = "order flipped every round"
    elif one == "c":
        who = (f"sender / C client on CPU {args.sender_cpu}, receiver / C echo server on CPU "
               f"{args.receiver_cpu}")
        how = "order flipped every round"
    else:
        who = (f"sender / sockperf client / C client on CPU {args.sender_cpu}, receiver / "
               f"sockperf server / C echo server on CPU {args.receiver_cpu}")
        how = ("order rotating through " + ", ".join(
            " ".join(LETTER[t] for t in o) for o in ORDERS3))
    w(f"{who}; SCHED_FIFO {args.priority}; payload {args.payload} B; one datagram "
      f"every {args.period_us} us ({args.mps_text} msg/s); {args.rounds} rounds x {args.seconds} s; "
      f"{how}")
    if args.no_dma_latency:
        held = "not held by any tool (--no-dma-latency)" if len(peers) == 2 else \
               "not held by either tool (--no-dma-latency)"
    elif one == "sockperf":
        held = "held at 0 in both (latscope itself, the benchmark around sockperf)"
    elif one == "c":
        held = "held at 0 in both (each tool itself)"
    else:
        held = ("held at 0 in all three (latscope and the C ping-pong themselves, the benchmark "
                "around sockperf)")
    w("/dev/cpu_dma_latency: " + held
      + f"; cpuidle driver {read_first_line('/sys/devices/system/cpu/cpuidle/current_driver')}"
      + f"; sched_rt_runtime_us {read_first_line('/proc/sys/kernel/sched_rt_runtime_us')}")
    w("")
    for msg in warnings:
        w(f"WARNING: {msg}")
    if warnings:
        w("")

    w("Per run, in us. latscope: udp.path (its p50 is the top of an HDR bucket, <= 0.1 % high).")
    if one == "sockperf":
        w("sockperf: round-trip time rx - tx from --full-log; 'half' = median RTT / 2.")
        w("ratio = latscope median / sockperf half.")
    else:
        if "sockperf" in peers:
            w("sockperf: round-trip time rx - tx from --full-log.")
        w("pingpong: the C ping-pong's round-trip time (CLOCK_MONOTONIC before send -> after the "
          "echo's recv).")
        w("'half' = median RTT / 2; ratio = latscope median / the peer's half.")
        if len(peers) == 2:
            w("order: L latscope, S sockperf, C the C ping-pong, in the order they ran.")
    w("")

    results = {}
    for n, peer in enumerate(peers):
        if len(peers) > 1:
            if n:
                w("")
            w(f"latscope vs {PEER_NAME[peer]}")
        results[peer] = peer_block(args, rounds, peer, w)
    w("")
    if len(peers) == 2:
        sp_half = results["sockperf"][2]
        pp_half = results["c"][2]
        per = [got["c"].median_us / got["sockperf"].median_us for _, _, got in rounds]
        w(f"between the peers: C ping-pong half / sockperf half = {pp_half:.2f} / {sp_half:.2f} = "
          f"{pp_half / sp_half:.3f} (medians of the per-run medians); per round "
          f"{', '.join(f'{x:.3f}' for x in per)}")
    ok_all = True
    for peer in peers:
        ratio, ls_med, half = results[peer]
        label = "target:" if one else f"target vs {PEER_NAME[peer]}:"
        ok, line = target_line(label, peer, ls_med, half, ratio)
        ok_all = ok_all and ok
        w(line)

    # ---- details
    det.append("Per run, raw")
    for i, order, got in rounds:
        ls = got["latscope"]
        if len(peers) == 2:
            det.append(f"  round {i} order {order_tag(args, order)}")
        det.append(f"  round {i} latscope: n={ls.count} min={ls.min_ns} p50={ls.p50_ns} "
                   f"p99={ls.p99_ns} max={ls.max_ns} mean={ls.mean_ns} ns (cpu {ls.cpu}); "
                   f"status={ls.status}; dma_latency held={ls.dma_latency}; wall {ls.wall:.1f} s; "
                   f"steal on the two CPUs {f2(ls.steal_ms, 0)} ms")
        if ls.settings:
            det.append("      settings: " + ", ".join(f"{k}={v}" for k, v in ls.settings.items()))
        if ls.udp:
            keys = ("path", "sender_cpu", "receiver_cpu", "payload_bytes", "period_ns", "sent",
                    "send_errors", "received", "lost", "reordered", "duplicates", "overruns",
                    "skipped_sends", "missing_rx_software", "checked", "inconsistent")
            det.append("      udp: " + ", ".join(f"{k}={ls.udp[k]}" for k in keys if k in ls.udp))
        for note in ls.notes:
            det.append(f"      latscope note: {note}")
        if "sockperf" in got:
            sp = got["sockperf"]
            det.append(f"  round {i} sockperf: n={sp.count} (sockperf: {sp.own.get('observations', '?')} "
                       f"observations) min={sp.min_us:.3f} median={sp.median_us:.3f} "
                       f"(sockperf's own p50 {sp.own.get('p50', '?')}, rank round(n/2) "
                       f"{sp.own_rank_median_us:.3f}) p99={sp.p99_us:.3f} max={sp.max_us:.3f} "
                       f"mean={sp.mean_us:.3f} us (own avg-rtt {sp.own.get('avg', '?')}); "
                       f"dropped={sp.own.get('dropped', '?')} dup={sp.own.get('duplicated', '?')} "
                       f"ooo={sp.own.get('out_of_order', '?')}; catch-up sends {sp.catch_up} (median "
                       f"without them {sp.median_paced_us:.3f}); "
                       f"wall {sp.wall:.1f} s; steal {f2(sp.steal_ms, 0)} ms; port {sp.port}")
            det.append(f"      sockperf {sp.own.get('valid', '')}; server ran with {sp.server_place}")
        if "c" in got:
            pp = got["c"]
            det.append(f"  round {i} pingpong: n={pp.count} min={pp.min_us:.3f} "
                       f"median={pp.median_us:.3f} (its own {float(pp.own.get('own_median', 'nan')) / 1000:.3f}) "
                       f"p99={pp.p99_us:.3f} max={pp.max_us:.3f} mean={pp.mean_us:.3f} us; "
                       f"grid points {pp.own.get('grid_points', '?')}, sent {pp.sent}, "
                       f"skipped {pp.skipped} ({pp.overruns} overruns); "
                       f"dma_latency held={pp.dma_latency}; wall {pp.wall:.1f} s; "
                       f"steal {f2(pp.steal_ms, 0)} ms")
    det.append("")
    if bench.dma_errors:
        det.append(f"/dev/cpu_dma_latency could not be held for sockperf: {bench.dma_errors[0]}")
        det.append("")
    if bench.build_warnings:
        det.append("Compiler messages building bench/udp-pingpong.c:")
        det.extend(f"  {l}" for l in bench.build_warnings.splitlines())
        det.append("")
    if bench.others:
        det.append("Other measuring tools seen between runs:")
        det.extend(f"  {e}" for e in bench.others.values())
        det.append("")
    if "sockperf" in peers:
        det.append("Commands (paths under a temporary directory; PORT = a free UDP port per run):")
    else:
        det.append("Commands (paths under a temporary directory):")
    det.append("  " + " ".join(bench.latscope_argv("<tmp>")))
    if "sockperf" in peers:
        det.append(f"  taskset -c {args.receiver_cpu} chrt -f {args.priority} {args.sockperf} server "
                   f"-i 127.0.0.1 -p PORT")
        det.append("  " + " ".join(bench.client_argv("<tmp>", "PORT")))
    if "c" in peers:
        det.append(f"  {args.pingpong_build}")
        det.append("  " + " ".join(["<tmp>/udp-pingpong"] + bench.pingpong_argv()[1:]))
    det.append(f"  script: bench/vs-sockperf.sh {' '.join(args.argv)}".rstrip())
    return out, det, ok_all


# --------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(
        prog="bench/vs-sockperf.sh",
        description="latscope's UDP probe (udp.path median) vs half the RTT median of "
                    "sockperf ping-pong and/or a plain C ping-pong (bench/udp-pingpong.c) over "
                    "loopback, the tools taking turns.")
    p.add_argument("--peer", choices=("sockperf", "c", "both"), default="both",
                   help="what latscope is compared with: sockperf ping-pong, the C ping-pong "
                        "bench/udp-pingpong.c, or both, with one verdict each (default both)")
    p.add_argument("--rounds", type=int, default=5, help="rounds, one run of each tool (default 5)")
    p.add_argument("--seconds", type=int, default=20, help="seconds per run (default 20)")
    p.add_argument("--cpus", default="0,1",
                   help="two CPUs: sender/clients on the first, receiver/servers on the second "
                        "(default 0,1)")
    p.add_argument("--period-us", type=int, default=10000,
                   help="one datagram per period; with sockperf it must divide 1 s "
                        "(default 10000 = 100 msg/s)")
    p.add_argument("--payload", type=int, default=64,
                   help="UDP payload bytes (default 64; at least 14 with sockperf)")
    p.add_argument("--priority", type=int, default=95, help="SCHED_FIFO priority (default 95)")
    p.add_argument("--port", type=int, default=0,
                   help="UDP port of sockperf's server (default: a free one per run)")
    p.add_argument("--no-dma-latency", action="store_true",
                   help="hold /dev/cpu_dma_latency in no tool (default: 0 in all)")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 rounds of 5 s")
    p.add_argument("--keep-tmp", action="store_true", help="keep the raw tool outputs")
    p.add_argument("--out", nargs="?", const="", default=None, metavar="FILE",
                   help="also write the report with details to FILE (default with no FILE: "
                        "bench/results/vs-sockperf-<UTC start>.txt)")
    p.add_argument("--latscope", default=os.environ.get(
        "LATSCOPE", os.path.join(REPO, "target", "release", "latscope")), help=argparse.SUPPRESS)
    p.add_argument("--sockperf", default=os.environ.get("SOCKPERF") or
                   shutil.which("sockperf") or "sockperf", help=argparse.SUPPRESS)
    p.add_argument("--cc", default=os.environ.get("CC") or shutil.which("cc") or
                   shutil.which("gcc") or "cc", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.argv = sys.argv[1:]
    args.peers = PEERS if args.peer == "both" else (args.peer,)
    use_sockperf = "sockperf" in args.peers

    if args.quick:
        args.rounds, args.seconds = 2, 5
    if os.geteuid() != 0:
        die("must run as root (SCHED_FIFO, /dev/cpu_dma_latency): sudo bench/vs-sockperf.sh")
    if use_sockperf and not (os.path.isfile(args.sockperf) and os.access(args.sockperf, os.X_OK)):
        die("sockperf not found: install it with 'apt-get install sockperf' "
            "(or compare with the C ping-pong alone: --peer c)")
    if "c" in args.peers:
        cc = shutil.which(args.cc)
        if not cc:
            die(f"C compiler {args.cc!r} not found, so bench/udp-pingpong.c cannot be built: "
                f"install one ('apt-get install gcc') or set CC (or use --peer sockperf)")
        args.cc = cc
        if not os.path.isfile(PINGPONG_SRC):
            die(f"{PINGPONG_SRC} not found")
    if not (os.path.isfile(args.latscope) and os.access(args.latscope, os.X_OK)):
        die(f"latscope binary not found at {args.latscope}: build it with 'cargo build --release' "
            f"or set LATSCOPE=/path/to/latscope")
    for tool in ("taskset", "chrt"):
        if not shutil.which(tool):
            die(f"{tool} not found: install util-linux")
    if args.rounds < 1 or args.seconds < 1:
        die("--rounds and --seconds must be at least 1")
    if args.period_us < 1:
        die("--period-us must be at least 1")
    if use_sockperf and 1_000_000 % args.period_us:
        die("--period-us must divide 1000000 (sockperf's rate is whole messages per second)")
    args.mps = 1_000_000 // args.period_us
    args.mps_text = f"{1_000_000 / args.period_us:g}"
    if use_sockperf and args.payload < SOCKPERF_MIN_MSG:
        die(f"--payload must be at least {SOCKPERF_MIN_MSG} (sockperf's header)")
    if args.payload < PINGPONG_MIN_MSG:
        die(f"--payload must be at least {PINGPONG_MIN_MSG} (the C ping-pong's sequence number)")
    if not 1 <= args.priority <= 99:
        die("--priority must be 1-99")
    try:
        cpus = parse_cpu_list(args.cpus)
    except ValueError as e:
        die(f"bad --cpus: {e}")
    if len(cpus) != 2 or cpus[0] == cpus[1]:
        die("--cpus takes two different CPUs, e.g. 0,1 (sender/client first)")
    online = online_cpus()
    bad = [c for c in cpus if c not in online]
    if bad:
        die(f"CPU(s) {','.join(map(str, bad))} not online (online: {','.join(map(str, online))})")
    args.sender_cpu, args.receiver_cpu = cpus
    args.hz = os.sysconf("SC_CLK_TCK")

    helptext = latscope_run_help(args.latscope)
    if not re.search(r"\budp\b", helptext) or "--payload" not in helptext:
        die(f"{args.latscope} has no UDP probe ('latscope run --probe udp'): build a newer latscope")
    # Either flag silences the progress bar; the results come from --json.
    args.quiet_flag = "--no-progress" if "--no-progress" in helptext else "--quiet"
    args.sockperf_version = sockperf_version(args.sockperf) if use_sockperf else None
    args.cc_version = compiler_version(args.cc) if "c" in args.peers else None

    procs = Procs(os.environ.get("VS_SOCKPERF_PIDFILE"))
    bench = Bench(args, procs)
    warnings = []

    def on_signal(signum, frame):
        bench.cleanup()
        print(f"{PROG}: interrupted", file=sys.stderr)
        sys.exit(130)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    started = datetime.datetime.now(datetime.timezone.utc)
    runs = 1 + len(args.peers)
    per_round = runs * args.seconds + 1 + (3 if use_sockperf else 0) + (1 if "c" in args.peers else 0)
    bench.progress(f"{PROG}: {args.rounds} rounds x {runs} runs x {args.seconds} s "
                   f"(about {args.rounds * per_round} s) on CPUs "
                   f"{args.sender_cpu},{args.receiver_cpu}; latscope vs "
                   f"{' and '.join(PEER_NAME[p] for p in args.peers)}")
    try:
        if "c" in args.peers:
            bench.build_pingpong()
        rounds = bench.rounds()
        for entry in other_tools(procs.own_pids()):
            bench.others.setdefault(entry.split(":", 1)[0], entry)
        if bench.others:
            shown = list(bench.others.values())
            warnings.append(f"{len(shown)} other measuring tool(s) ran during the benchmark and may "
                            f"have competed for the CPUs; first seen: {shown[0]}")
        want = not args.no_dma_latency
        for tool, name in (("latscope", "latscope"), ("c", "the C ping-pong")):
            odd = [i for i, _, got in rounds if tool in got
                   and got[tool].dma_latency is not None and got[tool].dma_latency != want]
            if odd:
                rest = [PEER_NAME[t] for t in ("latscope",) + args.peers if t != tool]
                warnings.append(f"{name} {'did not hold' if want else 'held'} /dev/cpu_dma_latency "
                                f"at 0 in round(s) {', '.join(map(str, odd))}, unlike "
                                f"{' and '.join(r + chr(39) + 's' for r in rest)} runs: the "
                                f"{'two' if len(rest) == 1 else 'three'} tools ran under "
                                f"different idle states")
        if bench.dma_errors:
            warnings.append(f"could not hold /dev/cpu_dma_latency for sockperf: {bench.dma_errors[0]}")
        ended = datetime.datetime.now(datetime.timezone.utc)
        out, det, ok = report(args, bench, rounds, started, ended, warnings)
        text = "\n".join(out)
        if args.out is not None:
            path = args.out or os.path.join(RESULTS_DIR, f"vs-sockperf-{started:%Y%m%dT%H%M%SZ}.txt")
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path + ".tmp", "w") as f:
                f.write(text + "\n\nDetails\n-------\n" + "\n".join(det) + "\n")
            os.replace(path + ".tmp", path)
            text += f"\nresults file (with raw figures and commands): {os.path.relpath(path)}"
        print(text, flush=True)
    finally:
        bench.cleanup()
    sys.exit(0 if ok else EXIT_TARGET_MISSED)


if __name__ == "__main__":
    main()
