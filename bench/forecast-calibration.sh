#!/usr/bin/env bash
# Forecast calibration (issue 35): how often latscope's stated 95 %
# intervals hold the next window's worst latency, measured on one long
# recording cut into many train/test windows (docs/forecast-method.md,
# "Calibration").
#
# Usage: bench/forecast-calibration.sh --store PATH [--label NAME]
#            [--plan TRAIN:TEST:STEP ...] [--out FILE] [--no-results-file]
#        bench/forecast-calibration.sh --record DURATION [--load none|stress-ng]
#            [--cpus LIST] [--period P] [--label NAME] [--dir DIR]
#            [--plan ...] [--out FILE] [--no-results-file]
#        (either form also takes --candidates)
#
# --store analyses an existing store: a `latscope monitor` store (its
# minute windows are the training parts) or a long `latscope run` store
# (its checkpoint histograms, at most 128 per cell). The store is copied
# first and only the copy is opened.
#
# --record DURATION first records one: `latscope monitor --cpus LIST
# --period P` (default CPU 1 at 1 ms) for DURATION (`timeout` syntax: 75m,
# 2h), under `flock /tmp/latscope-measure.lock` so that it never overlaps
# another measurement, with `--load stress-ng` starting
# `stress-ng --cpu 2 --io 1 --vm 1 --vm-bytes 128M` for the same time
# (the controlled load; `none`, the default, adds nothing). The monitor
# needs the privileges `latscope monitor` needs (FIFO priority).
#
# Each plan TRAIN:TEST:STEP (seconds) fits a forecast to TRAIN seconds and
# judges it on the next TEST, a new cut every STEP; by default
# 120:600:120 and 120:600:60 (2 min → the next 10 min), 300:600:60,
# 600:600:60, 600:1800:300 and 600:3600:600
# (10 min → the next hour, where the recording is long enough: 70 whole
# minute windows, so record 75m, not 70m). Every plan
# is judged under the rules before the calibration and under the current
# ones (--candidates: also each candidate rule alone and some
# combinations, as the rules were chosen). The table and the JSON of every cut go to
# bench/results/forecast-calibration-<label>-<UTC start>.{txt,json}.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

say() { echo "forecast-calibration: $*" >&2; }
fail() {
    echo "forecast-calibration: error: $*" >&2
    exit 1
}
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

given="$*"
store="" record="" load="none" cpus="1" period="1ms" label="" dir="" out=""
results_file=1
plans=()
candidates=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --store) store="$2"; shift 2 ;;
    --record) record="$2"; shift 2 ;;
    --load) load="$2"; shift 2 ;;
    --cpus) cpus="$2"; shift 2 ;;
    --period) period="$2"; shift 2 ;;
    --label) label="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --plan) plans+=(--plan "$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-results-file) results_file=0; shift ;;
    --candidates) candidates=(--candidates); shift ;;
    -h | --help) usage; exit 0 ;;
    *) fail "unknown option $1 (see --help)" ;;
    esac
done
[[ -n "$store" || -n "$record" ]] || fail "give --store PATH or --record DURATION (see --help)"
[[ -n "$store" && -n "$record" ]] && fail "--store and --record exclude each other"
case "$load" in none | stress-ng) ;; *) fail "--load must be none or stress-ng" ;; esac

start="$(date -u +%Y%m%dT%H%M%SZ)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
work="$(mktemp -d)"
cleanup() {
    [[ -n "${stress_pid:-}" ]] && kill "$stress_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

say "building (release)"
(cd "$repo" && cargo build --release --quiet --bin latscope --example forecast_calibration)
latscope="$CARGO_TARGET_DIR/release/latscope"
calibrate="$CARGO_TARGET_DIR/release/examples/forecast_calibration"

if [[ -n "$record" ]]; then
    dir="${dir:-$work}"
    mkdir -p "$dir"
    store="$dir/calibration-$start.db"
    label="${label:-$load}"
    if [[ "$load" == stress-ng ]]; then
        command -v stress-ng >/dev/null || fail "stress-ng is not installed"
        stress-ng --cpu 2 --io 1 --vm 1 --vm-bytes 128M --timeout "$record" --quiet &
        stress_pid=$!
    fi
    say "recording $record on CPU $cpus at $period (load: $load) into $store"
    flock /tmp/latscope-measure.lock \
        timeout --signal=INT --kill-after=30s "$record" \
        "$latscope" monitor --cpus "$cpus" --period "$period" --store "$store" \
        --listen 127.0.0.1:0 >"$work/monitor.log" 2>&1 || true
    [[ -n "${stress_pid:-}" ]] && wait "$stress_pid" 2>/dev/null || true
    stress_pid=""
    [[ -s "$store" ]] || fail "the monitor wrote no store (see its log: $(tail -3 "$work/monitor.log"))"
else
    [[ -e "$store" ]] || fail "no store at $store"
    label="${label:-$(basename "$store" .db)}"
    # Only a copy is opened (with its write-ahead log, if any).
    cp "$store" "$work/copy.db"
    for ext in -wal -shm; do [[ -e "$store$ext" ]] && cp "$store$ext" "$work/copy.db$ext"; done
    source_store="$store"
    store="$work/copy.db"
fi

commit="$(cd "$repo" && git rev-parse --short HEAD)"
cmd=("$calibrate" --store "$store" "${plans[@]}" "${candidates[@]}" --json-out "$work/cuts.json")
say "calibrating"
table="$("${cmd[@]}")"
json="$(cat "$work/cuts.json")"
report="$(
    echo "forecast calibration, $(date -u +'%Y-%m-%d %H:%M UTC'), commit $commit, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "store: ${source_store:-$store} (label $label)"
    echo "command: bench/forecast-calibration.sh $given → forecast_calibration ${plans[*]:-(default plans)}"
    echo "columns: cuts judged; refused (count, share); for the return level's 95 % interval and the 95 % prediction interval"
    echo "of the test window's maximum: share held, held/forecast, over (test maximum below the interval), under (above it),"
    echo "median width (high - low) / point (prediction: / median). A cut counts as refused when either figure is;"
    echo "the rules after calibration refuse only prediction intervals, so the level's own figures stay those of 'before'."
    echo
    echo "$table"
)"
echo "$report"
if [[ $results_file -eq 1 ]]; then
    out="${out:-$here/results/forecast-calibration-$label-$start.txt}"
    mkdir -p "$(dirname "$out")"
    echo "$report" >"$out"
    echo "$json" >"${out%.txt}.json"
    say "wrote $out and ${out%.txt}.json"
fi
