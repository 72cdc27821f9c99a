#!/usr/bin/env bash
# Forecasts against reality (docs/app-probe.md, "Figures"): one timer run
# and four application-probe runs (three buffering schemes of 1 ms
# buffers and the control-1khz preset's) on one CPU, each under two loads,
# then `latscope forecast TIMER --against APP` for every one. Each measurement holds
# /tmp/latscope-measure.lock, so nothing else measures at the same time.
#
# Needs root (SCHED_FIFO) and a release build. CPU (default 0), CELL_SECONDS
# per cell (default 60) and LOADS (default idle,cpu) may be set. Output:
# stdout and bench/results/app-forecast-<UTC>.txt; the store is kept in
# a temporary directory named on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
LATSCOPE=${LATSCOPE:-target/release/latscope}
CPU=${CPU:-0}
SECONDS_PER_CELL=${CELL_SECONDS:-60}
LOADS=${LOADS:-idle,cpu}
[ -x "$LATSCOPE" ] || { echo "app-forecast.sh: build first (cargo build --release)" >&2; exit 1; }
DIR=$(mktemp -d /tmp/app-forecast.XXXXXX)
STORE=$DIR/store.db
OUT=bench/results/app-forecast-$(date -u +%Y%m%dT%H%M%SZ).txt
mkdir -p bench/results
measure() {
  flock /tmp/latscope-measure.lock "$LATSCOPE" run --cpus "$CPU" --duration "${SECONDS_PER_CELL}s" \
    --workload "$LOADS" --quiet --store "$STORE" "$@"
}
{
  echo "# $(date -u +%FT%TZ) $(uname -r) cpu $CPU, ${SECONDS_PER_CELL}s per cell, loads $LOADS"
  measure --probe timer --period 1ms
  # Scheme (buffers, compute): slack (n-1)*t - c = 0.8 ms, 0.4 ms, 1.4 ms.
  for scheme in "2 200us" "2 600us" "3 600us"; do
    set -- $scheme
    measure --probe app --period 1ms --buffers "$1" --compute "$2"
  done
  # A preset's pipeline: its verdict confirmed or contradicted.
  measure --probe app --app control-1khz
  "$LATSCOPE" list --store "$STORE"
  for app in 2 3 4 5; do
    echo "\$ latscope forecast 1 --against $app"
    "$LATSCOPE" forecast 1 --against "$app" --store "$STORE" || true
  done
  echo "store: $STORE"
} | tee "$OUT"
