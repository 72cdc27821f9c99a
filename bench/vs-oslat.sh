#!/usr/bin/env bash
# latscope's noise probe vs oslat: loop cost, resolution and OS noise of a
# spinning loop, run alternately on one CPU, the order flipping every pair
# (A B, B A, ...: A B B A).
# Usage: sudo bench/vs-oslat.sh [--cpu N] [--pairs N] [--seconds S]
#                               [--priority N] [--policy fifo|other]
#                               [--threshold-us T] [--quick]
# See bench/README.md. The work is done by bench/vs_oslat.py (Python 3,
# standard library only); this wrapper checks the prerequisites first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
latscope="${LATSCOPE:-$repo/target/release/latscope}"
oslat="${OSLAT:-$(command -v oslat || true)}"

fail() { echo "vs-oslat: error: $*" >&2; exit 1; }

for arg in "$@"; do
    case "$arg" in -h|--help) exec python3 "$here/vs_oslat.py" --help ;; esac
done
command -v python3 >/dev/null 2>&1 || fail "python3 not found: install it with 'apt-get install python3'"
[ "$(id -u)" -eq 0 ] || fail "must run as root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency): sudo $0 $*"
[ -n "$oslat" ] && [ -x "$oslat" ] || fail "oslat not found: install it with 'apt-get install rt-tests'"
[ -x "$latscope" ] || fail "latscope binary not found at $latscope: run 'cargo build --release -p latscope' in $repo"
if ! "$latscope" run --help 2>/dev/null | grep -q -- '--pause'; then
    fail "$latscope has no noise probe (no 'run --pause'): rebuild it with 'cargo build --release -p latscope'"
fi

export LATSCOPE="$latscope" OSLAT="$oslat"
exec python3 "$here/vs_oslat.py" "$@"
