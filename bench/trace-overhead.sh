#!/usr/bin/env bash
# The timer probe with and without --trace, A/B alternating, the order
# flipping every pair (A B, B A: A B B A; see
# bench/README.md, "trace-overhead"). Needs root, stress-ng and a release
# build: cargo build --release
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "trace-overhead.sh: needs python3" >&2; exit 1; }
exec python3 bench/trace_overhead.py "$@"
