#!/usr/bin/env bash
# Where does cyclictest's lower minimum come from? Runs, in rotation, a
# minimal C loop (bench/minimal-loop.c: the same system calls and nothing
# else), cyclictest with its main thread free to run anywhere (its default),
# cyclictest with its main thread kept off the measured CPU (--mainaffinity,
# as latscope keeps its housekeeping thread), and latscope, on one CPU at
# 1 ms. The order flips every round (forward in odd rounds, backward in even
# ones: A B C D, D C B A), so that no tool always runs first or last.
# Prints each one's minimum, mean and the number of samples below 14 us.
# LATSCOPE=/path/to/latscope runs another binary than target/release/latscope.
# Usage: bench/min-gap.sh [ROUNDS (default 5)] [CPU (default: last online)] [SECONDS (default 5)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cpu=${2:-$(awk -F'[-,]' '{print $NF}' /sys/devices/system/cpu/online)}
secs=${3:-5}
[ "$(id -u)" = 0 ] || { echo "min-gap.sh: must run as root (SCHED_FIFO, mlockall)" >&2; exit 1; }
command -v cyclictest >/dev/null || { echo "min-gap.sh: cyclictest missing: apt-get install rt-tests" >&2; exit 1; }
latscope=${LATSCOPE:-target/release/latscope}
[ -x "$latscope" ] || { echo "min-gap.sh: build latscope first: cargo build --release" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/minimal-loop" bench/minimal-loop.c
samples=$((secs * 1000))
others=$(python3 -c "import sys; c=int(sys.argv[1]); print(','.join(str(x) for x in range(int(sys.argv[2])) if x != c))" "$cpu" "$(nproc)")
printf '%-6s %-18s %10s %10s %10s\n' round tool "min (us)" "mean (us)" "<14 us"
run_minimal() {  # round
  out=$("$tmp/minimal-loop" "$samples" "$cpu")
  printf '%-6s %-18s %10s %10s %10s\n' "$1" minimal-loop \
    "$(sed -E 's/.*min ([0-9.]+) us.*/\1/' <<<"$out")" "$(sed -E 's/.*mean ([0-9.]+) us.*/\1/' <<<"$out")" \
    "$(sed -E 's/.*below14 ([0-9]+).*/\1/' <<<"$out")"
}
run_cyclictest() {  # round variant
  extra=()
  [ "$2" = main-elsewhere ] && [ -n "$others" ] && extra=("--mainaffinity=$others")
  cyclictest -m -p95 --policy=fifo -i1000 -a"$cpu" -t1 -D"${secs}s" -q -h 1000 \
    --histfile="$tmp/c.hist" --json="$tmp/c.json" "${extra[@]}" >/dev/null 2>&1
  python3 - "$tmp/c.json" "$tmp/c.hist" "$1" "cyc/$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["thread"]["0"]
below = 0
for line in open(sys.argv[2]):
    if line.startswith("#"):
        continue
    f = line.split()
    if len(f) >= 2 and int(f[0]) < 14:
        below += int(f[1])
# cyclictest records whole microseconds (floor): +0.5 us is the bin centre.
print(f"{sys.argv[3]:<6} {sys.argv[4]:<18} {t['min'] + 0.5:>10.2f} {t['avg'] + 0.5:>10.2f} {below:>10}")
PY
}
run_latscope() {  # round
  rm -f "$tmp/l.db"*
  "$latscope" run --cpus "$cpu" --period 1ms --priority 95 --duration "${secs}s" \
    --store "$tmp/l.db" --json "$tmp/l.json" --quiet
  python3 - "$tmp/l.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = [m for m in d["cells"][0]["metrics"] if m["name"] == "timer.latency"][0]
below = sum(c for lo, hi, c in m["histogram"] if hi <= 14000)
print(f"{sys.argv[2]:<6} {'latscope':<18} {m['min_ns'] / 1e3:>10.2f} {m['mean_ns'] / 1e3:>10.2f} {below:>10}")
PY
}
tools=(minimal-loop cyc/main-anywhere cyc/main-elsewhere latscope)
for r in $(seq 1 "$rounds"); do
  order=("${tools[@]}")
  if [ $((r % 2)) -eq 0 ]; then
    order=()
    for ((k = ${#tools[@]} - 1; k >= 0; k--)); do order+=("${tools[k]}"); done
  fi
  for tool in "${order[@]}"; do
    case "$tool" in
      minimal-loop) run_minimal "$r" ;;
      cyc/*) run_cyclictest "$r" "${tool#cyc/}" ;;
      latscope) run_latscope "$r" ;;
    esac
  done
done
