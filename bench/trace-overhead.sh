#!/usr/bin/env bash
# The timer probe untraced (U), with --trace --trace-backend perf (P) and with
# --trace --trace-backend bpf (B), alternating in one run, the order rotating
# through the six orders of the three tools (U P B, B P U, P B U, U B P, B U P,
# P U B), idle and under stress-ng --cpu, at 1 ms and 100 us (see
# bench/README.md, "trace-overhead.sh"). Sets
# /proc/sys/kernel/bpf_stats_enabled to 1 while it runs and puts it back.
# Needs root, stress-ng and a release build: cargo build --release.
# --dry-run prints the schedule and the command lines without running them.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "trace-overhead.sh: needs python3" >&2; exit 1; }
exec python3 bench/trace_overhead.py "$@"
