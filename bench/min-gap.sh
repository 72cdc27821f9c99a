#!/usr/bin/env bash
# Where does cyclictest's lower minimum come from? Runs, in rotation, a
# minimal C loop (bench/minimal-loop.c: the same system calls and nothing
# else), cyclictest and latscope on one CPU at 1 ms, and prints each one's
# minimum and mean. If the minimal loop's minimum matches latscope's, the gap
# to cyclictest is not latscope's own overhead.
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
printf '%-6s %-12s %10s %10s\n' round tool "min (us)" "mean (us)"
for r in $(seq 1 "$rounds"); do
  out=$("$tmp/minimal-loop" "$samples" "$cpu")
  printf '%-6s %-12s %10s %10s\n' "$r" minimal-loop \
    "$(sed -E 's/.*min ([0-9.]+) us.*/\1/' <<<"$out")" "$(sed -E 's/.*mean ([0-9.]+) us.*/\1/' <<<"$out")"
  out=$(cyclictest -m -p95 --policy=fifo -i1000 -a"$cpu" -t1 -D"${secs}s" -q --json="$tmp/c.json" 2>/dev/null)
  python3 - "$tmp/c.json" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["thread"]["0"]
# cyclictest records whole microseconds (floor): +0.5 us is the bin centre.
print(f"{sys.argv[2]:<6} {'cyclictest':<12} {t['min'] + 0.5:>10.2f} {t['avg'] + 0.5:>10.2f}")
PY
  rm -f "$tmp/l.db"*
  target/release/latscope run --cpus "$cpu" --period 1ms --priority 95 --duration "${secs}s" \
    --store "$tmp/l.db" --json "$tmp/l.json" --quiet
  python3 - "$tmp/l.json" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = [m for m in d["cells"][0]["metrics"] if m["name"] == "timer.latency"][0]
print(f"{sys.argv[2]:<6} {'latscope':<12} {m['min_ns'] / 1e3:>10.2f} {m['mean_ns'] / 1e3:>10.2f}")
PY
done
