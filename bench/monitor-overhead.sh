#!/usr/bin/env bash
# What `latscope monitor` costs: its CPU time against cyclictest at the same
# period on every CPU (with and without --trace), and whether scraping
# /metrics every 5 s moves the measured median latency; alternating pairs.
# Usage: sudo bench/monitor-overhead.sh [--pairs N] [--seconds S] [--out FILE]
# See bench/README.md. The work is done by bench/monitor_overhead.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
fail() { echo "monitor-overhead: error: $*" >&2; exit 1; }
for arg in "$@"; do
    case "$arg" in -h|--help) exec python3 "$here/monitor_overhead.py" --help ;; esac
done
command -v python3 >/dev/null 2>&1 || fail "python3 not found: install it with 'apt-get install python3'"
[ "$(id -u)" -eq 0 ] || fail "must run as root (SCHED_FIFO, mlockall): sudo $0 $*"
cyclictest="${CYCLICTEST:-$(command -v cyclictest || true)}"
[ -n "$cyclictest" ] || fail "cyclictest not found: install it with 'apt-get install rt-tests'"
if [ -z "${LATSCOPE:-}" ]; then
    (cd "$repo" && cargo build --release -q -p latscope) || fail "cargo build --release failed"
    LATSCOPE="$repo/target/release/latscope"
fi
export LATSCOPE CYCLICTEST="$cyclictest"
exec python3 "$here/monitor_overhead.py" "$@"
