#!/usr/bin/env bash
# Forecasts against reality (docs/app-probe.md, "Figures"): timer blocks
# and application-probe blocks interleaved on one CPU, under each load,
# then `latscope forecast TIMER_RUNS --against APP_RUNS` per load, which
# pools the blocks of each scheme.
#
# Why interleaved: on a shared virtual machine the noise of one ten-minute
# stretch is not the next one's, so a timer run measured before the
# pipelines forecasts a different stretch than the one they ran in. Here
# every round alternates a timer block with each pipeline's block
# (T S1 T S2 T S3 T S4), and the next round mirrors it (S4 T S3 T S2 T S1
# T), so timer and pipelines sample the same minutes evenly.
#
# Pipelines: 1 ms buffers, (buffers, compute) = (2, 200us), (2, 600us),
# (3, 600us): slack (n-1)*t - c = 0.8, 0.4, 1.4 ms; and the control-1khz
# preset's pipeline, whose verdict is confirmed or contradicted.
#
# Needs root (SCHED_FIFO) and a release build. Environment: CPU (default
# 0), BLOCK_SECONDS per block (default 15), ROUNDS per load (default 3),
# LOADS (default idle,cpu). Each block holds /tmp/latscope-measure.lock, so
# nothing else measures at the same time. Output: stdout and
# bench/results/app-forecast-<UTC>.txt; the store is kept in a temporary
# directory named on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
LATSCOPE=${LATSCOPE:-target/release/latscope}
CPU=${CPU:-0}
BLOCK=${BLOCK_SECONDS:-15}
ROUNDS=${ROUNDS:-3}
LOADS=${LOADS:-idle,cpu}
[ -x "$LATSCOPE" ] || { echo "app-forecast.sh: build first (cargo build --release)" >&2; exit 1; }
DIR=$(mktemp -d /tmp/app-forecast.XXXXXX)
STORE=$DIR/store.db
OUT=bench/results/app-forecast-$(date -u +%Y%m%dT%H%M%SZ).txt
mkdir -p bench/results
SCHEMES=("--buffers 2 --compute 200us" "--buffers 2 --compute 600us"
    "--buffers 3 --compute 600us" "--app control-1khz")
runs=0
timers="" apps=""
block() { # load, then the probe's options
  local load=$1
  shift
  flock /tmp/latscope-measure.lock "$LATSCOPE" run --cpus "$CPU" --duration "${BLOCK}s" \
    --workload "$load" --quiet --store "$STORE" "$@" >/dev/null
  runs=$((runs + 1))
}
timer_block() { block "$1" --probe timer --period 1ms && timers="$timers,$runs"; }
app_block() { # load, scheme index
  # shellcheck disable=SC2086 # the scheme is a list of options
  block "$1" --probe app --period 1ms ${SCHEMES[$2]} && apps="$apps,$runs"
}
{
  echo "# $(date -u +%FT%TZ) $(uname -r) cpu $CPU, ${BLOCK}s blocks, $ROUNDS rounds per load, loads $LOADS, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for load in ${LOADS//,/ }; do
    timers="" apps=""
    for round in $(seq "$ROUNDS"); do
      if [ $((round % 2)) = 1 ]; then order="0 1 2 3"; else order="3 2 1 0"; fi
      for s in $order; do
        if [ $((round % 2)) = 1 ]; then timer_block "$load"; app_block "$load" "$s"
        else app_block "$load" "$s"; timer_block "$load"; fi
      done
    done
    echo "# $load: timer blocks ${timers#,}; app blocks ${apps#,}; ended $(date -u +%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "\$ latscope forecast ${timers#,} --against ${apps#,}"
    "$LATSCOPE" forecast "${timers#,}" --against "${apps#,}" --store "$STORE" || true
  done
  echo "store: $STORE"
} | tee "$OUT"
