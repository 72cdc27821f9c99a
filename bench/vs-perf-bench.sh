#!/usr/bin/env bash
# latscope micro against `perf bench syscall basic`, `perf bench sched pipe`
# (threads and processes) and iperf3 (TCP over loopback), the tools taking
# turns (A B B A), the same CPU for both. Quotes latscope / peer per pair.
# Usage: sudo bench/vs-perf-bench.sh [--pairs N] [--cpus A,B] [--quick] [--out FILE]
# See bench/README.md. The work is done by bench/vs_perf_bench.py (Python 3,
# standard library only); this wrapper checks the prerequisites and builds
# latscope (cargo build --release) unless LATSCOPE=/path/to/latscope is set.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

fail() { echo "vs-perf-bench: error: $*" >&2; exit 1; }

for arg in "$@"; do
    case "$arg" in -h|--help) exec python3 "$here/vs_perf_bench.py" --help ;; esac
done
command -v python3 >/dev/null 2>&1 || fail "python3 not found: install it with 'apt-get install python3'"
[ "$(id -u)" -eq 0 ] || fail "must run as root (the priority-inversion and SCHED_FIFO benchmarks, perf): sudo $0 $*"
command -v perf >/dev/null 2>&1 || fail "perf not found: install it with 'apt-get install linux-perf'"
command -v iperf3 >/dev/null 2>&1 || fail "iperf3 not found: install it with 'apt-get install iperf3'"
command -v taskset >/dev/null 2>&1 || fail "taskset not found: install it with 'apt-get install util-linux'"
if [ -z "${LATSCOPE:-}" ]; then
    (cd "$repo" && cargo build --release -q -p latscope) || fail "cargo build --release failed"
    export LATSCOPE="$repo/target/release/latscope"
fi
[ -x "$LATSCOPE" ] || fail "no latscope binary at $LATSCOPE"
exec python3 "$here/vs_perf_bench.py" "$@"
