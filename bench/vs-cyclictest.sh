#!/usr/bin/env bash
# latscope vs cyclictest: timer latency and CPU cost, run alternately, the order
# flipping every pair (A B, B A, ...: A B B A).
# Usage: sudo bench/vs-cyclictest.sh [--cpus LIST] [--pairs N] [--seconds S]
#                                    [--cpu-pairs N] [--cpu-seconds S] [--quick]
# See bench/README.md. The work is done by bench/vs_cyclictest.py (Python 3,
# standard library only); this wrapper checks the prerequisites first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
latscope="${LATSCOPE:-$repo/target/release/latscope}"
cyclictest="${CYCLICTEST:-$(command -v cyclictest || true)}"

fail() { echo "vs-cyclictest: error: $*" >&2; exit 1; }

for arg in "$@"; do
    case "$arg" in -h|--help) exec python3 "$here/vs_cyclictest.py" --help ;; esac
done
command -v python3 >/dev/null 2>&1 || fail "python3 not found: install it with 'apt-get install python3'"
[ "$(id -u)" -eq 0 ] || fail "must run as root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency): sudo $0 $*"
[ -n "$cyclictest" ] && [ -x "$cyclictest" ] || fail "cyclictest not found: install it with 'apt-get install rt-tests'"
[ -x "$latscope" ] || fail "latscope binary not found at $latscope: run 'cargo build --release -p latscope' in $repo"

export LATSCOPE="$latscope" CYCLICTEST="$cyclictest"
exec python3 "$here/vs_cyclictest.py" "$@"
