#!/usr/bin/env bash
# Where does cyclictest's lower minimum come from? Runs, in rotation, a
# minimal C loop (bench/minimal-loop.c: the same system calls and nothing
# else), cyclictest with its main thread free to run anywhere (its default),
# cyclictest with its main thread kept off the measured CPU (--mainaffinity,
# as latscope keeps its housekeeping thread), and latscope, on one CPU at
# 1 ms. Prints each one's minimum, mean and the number of samples below 14 us.
# Usage: bench/min-gap.sh [ROUNDS (default 5)] [CPU (default: last online)] [SECONDS (default 5)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cpu=${2:-$(awk -F'[-,]' '{print $NF}' /sys/devices/system/cpu/online)}
secs=${3:-5}
[ "$(id -u)" = 0 ] || { echo "min-gap.sh: must run as root (SCHED_FIFO, mlockall)" >&2; exit 1; }
command -v cyclictest >/dev/null || { echo "min-gap.sh: cyclictest missing: apt-get install rt-tests" >&2; exit 1; }
[ -x target/release/latscope ] || { echo "min-gap.sh: build latscope first: cargo build --release" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/minimal-loop" bench/minimal-loop.c
samples=$((secs * 1000))
others=$(python3 -c "import sys; c=int(sys.argv[1]); print(','.join(str(x) for x in range(int(sys.argv[2])) if x != c))" "$cpu" "$(nproc)")
printf '%-6s %-18s %10s %10s %10s\n' round tool "min (us)" "mean (us)" "<14 us"
for r in $(seq 1 "$rounds"); do
  out=$("$tmp/minimal-loop" "$samples" "$cpu")
  printf '%-6s %-18s %10s %10s %10s\n' "$r" minimal-loop \
    "$(sed -E 's/.*min ([0-9.]+) us.*/\1/' <<<"$out")" "$(sed -E 's/.*mean ([0-9.]+) us.*/\1/' <<<"$out")" \
    "$(sed -E 's/.*below14 ([0-9]+).*/\1/' <<<"$out")"
  for variant in main-anywhere main-elsewhere; do
    extra=()
    [ "$variant" = main-elsewhere ] && [ -n "$others" ] && extra=("--mainaffinity=$others")
    cyclictest -m -p95 --policy=fifo -i1000 -a"$cpu" -t1 -D"${secs}s" -q -h 1000 \
      --histfile="$tmp/c.hist" --json="$tmp/c.json" "${extra[@]}" >/dev/null 2>&1
    python3 - "$tmp/c.json" "$tmp/c.hist" "$r" "cyc/$variant" <<'PY'
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
  done
  rm -f "$tmp/l.db"*
  target/release/latscope run --cpus "$cpu" --period 1ms --priority 95 --duration "${secs}s" \
    --store "$tmp/l.db" --json "$tmp/l.json" --quiet
  python3 - "$tmp/l.json" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = [m for m in d["cells"][0]["metrics"] if m["name"] == "timer.latency"][0]
below = sum(c for lo, hi, c in m["histogram"] if hi <= 14000)
print(f"{sys.argv[2]:<6} {'latscope':<18} {m['min_ns'] / 1e3:>10.2f} {m['mean_ns'] / 1e3:>10.2f} {below:>10}")
PY
done
