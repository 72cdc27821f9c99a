#!/usr/bin/env bash
# What each of latscope's BPF programs costs per run and per second while
# `latscope run --trace --trace-backend bpf` measures (see bench/README.md,
# "bpf-prog-cost.sh"). A diagnostic beside trace-overhead.sh: that one
# compares the tools, this one says where the BPF backend's kernel time goes.
#
# Needs root, bpftool and a release build (cargo build --release). Turns
# /proc/sys/kernel/bpf_stats_enabled on while it runs and puts it back.
# Extra arguments go to `latscope run` (e.g. --period 100us, --cpus 1).
# SECONDS_MEASURED (default 20) sets how long it counts. LATSCOPE_BPF_DIAG
# (recorder: only the flight recorder; attached: programs that stop at
# their first check; empty: programs that return at once, the kernel's
# price for calling them; hist-off: no interrupt and work histograms; softirq-at-once: softirq
# times added to the histograms in their own programs, not deferred;
# warm-on: sched_switch warms the next wake-up's lines; recorder-off: no
# recorder records; elide-own: no records of the measured thread's own
# timer expiry, callback exit and wake-up; no-waking-exit: sched_waking and
# hrtimer_expire_exit not attached; deferred-off: no deferred work by
# function and device, its five programs unattached) measures what parts of the work
# cost; unset, everything runs as usual. The
# table goes to stdout and bench/results/bpf-prog-cost-<UTC>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
LATSCOPE=${LATSCOPE:-target/release/latscope}
SECONDS_MEASURED=${SECONDS_MEASURED:-20}
STATS=/proc/sys/kernel/bpf_stats_enabled
die() { echo "bpf-prog-cost.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (BPF, SCHED_FIFO, $STATS)"
command -v bpftool >/dev/null || die "needs bpftool (Debian: apt-get install bpftool)"
command -v python3 >/dev/null || die "needs python3"
[ -x "$LATSCOPE" ] || die "no latscope binary at $LATSCOPE: run 'cargo build --release'"
[ -e "$STATS" ] || die "$STATS does not exist: this kernel cannot count BPF run time"
case "${LATSCOPE_BPF_DIAG:-}" in
    ''|recorder|attached|empty|hist-off|softirq-at-once|warm-on|recorder-off|elide-own|no-waking-exit|deferred-off|steal-off|stacks-off|new-off) ;;
    *) die "LATSCOPE_BPF_DIAG must be recorder, attached, empty, hist-off, softirq-at-once, warm-on, recorder-off, elide-own, no-waking-exit, deferred-off, steal-off, stacks-off or new-off (or unset), not '$LATSCOPE_BPF_DIAG'" ;;
esac
export LATSCOPE_BPF_DIAG=${LATSCOPE_BPF_DIAG:-}

tmp=$(mktemp -d)
previous=$(cat "$STATS")
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    echo "$previous" > "$STATS"
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

echo 1 > "$STATS"
# Two seconds of start-up (loading the programs) before the first reading,
# two after the last.
"$LATSCOPE" run --duration $((SECONDS_MEASURED + 4))s --trace --trace-backend bpf \
    --store "$tmp/b.db" "$@" > "$tmp/run.out" 2>&1 &
pid=$!
sleep 2
bpftool prog show > "$tmp/before.txt"
sleep "$SECONDS_MEASURED"
bpftool prog show > "$tmp/after.txt"
wait "$pid" || die "latscope run failed: $(tail -1 "$tmp/run.out")"
pid=

started=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
result="bench/results/bpf-prog-cost-$started.txt"
{
echo "latscope BPF programs, per run and per second, over $SECONDS_MEASURED s of"
echo "latscope run --trace --trace-backend bpf $* (bpf_stats_enabled = 1)"
echo "programs doing: ${LATSCOPE_BPF_DIAG:-everything} (LATSCOPE_BPF_DIAG)"
echo "finished $started; kernel $(uname -r); $(nproc) CPUs; binary $LATSCOPE"
echo
python3 - "$tmp/before.txt" "$tmp/after.txt" "$SECONDS_MEASURED" <<'PY'
import re, sys
def parse(path):
    out = {}
    for line in open(path):
        m = re.match(r"\d+: \S+\s+name (on_\S+).*?run_time_ns (\d+) run_cnt (\d+)", line)
        if m:
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return out
a, b, secs = parse(sys.argv[1]), parse(sys.argv[2]), float(sys.argv[3])
rows = []
for name, (t1, c1) in b.items():
    t0, c0 = a.get(name, (0, 0))
    if c1 > c0:
        rows.append((name[3:], (c1 - c0) / secs, (t1 - t0) / (c1 - c0), (t1 - t0) / secs / 1e7))
if not rows:
    sys.exit("bpf-prog-cost.sh: no latscope program ran (was the BPF backend used?)")
rows.sort(key=lambda r: -r[3])
print(f"{'program':<28} {'runs/s':>9} {'ns/run':>8} {'% of a core':>12}")
for name, rate, ns, pct in rows:
    print(f"{name:<28} {rate:9.0f} {ns:8.0f} {pct:11.3f}%")
print(f"{'all':<28} {sum(r[1] for r in rows):9.0f} {'':8} {sum(r[3] for r in rows):11.3f}%")
PY
grep -E "^tracer:" "$tmp/run.out" || true
} | tee "$result"
echo "results file: $result"
