#!/usr/bin/env bash
# latscope's memory over a long traced run, on both tracing backends: two
# `latscope run --trace` (one --trace-backend perf, one --trace-backend bpf)
# for SECONDS each (default 1800), run at the same time on different
# measured CPUs (every CPU is traced by both), their RSS read from
# /proc/PID/status every 10 s. Reports RSS at 60 s and at the end, the
# lowest and highest after 60 s, and the end against 60 s; the target
# (issue 17) is the end within ±10 % of the reading at 60 s.
# Usage: sudo bench/trace-memory.sh [SECONDS]
# See bench/README.md ("trace-memory.sh").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
seconds="${1:-1800}"
[ "$(id -u)" = 0 ] || { echo "trace-memory.sh: must run as root (tracepoints, BPF)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "trace-memory.sh: needs two CPUs" >&2; exit 1; }
if [ -z "${LATSCOPE:-}" ]; then
    (cd "$repo" && cargo build --release -q -p latscope)
    LATSCOPE="$repo/target/release/latscope"
fi
dir="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
started="$(date -u +%Y%m%dT%H%M%SZ)"
cpu=0
for backend in perf bpf; do
    "$LATSCOPE" run --trace --trace-backend "$backend" --cpus "$cpu" \
        --duration "${seconds}s" --store "$dir/$backend.db" \
        >"$dir/$backend.log" 2>&1 &
    pids+=($!)
    cpu=$((cpu + 1))
done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
out="$dir/samples"
echo "seconds perf_kib bpf_kib" >"$out"
t=0
while [ "$t" -le "$seconds" ]; do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 1 ] || break
    echo "$t $(rss "${pids[0]}") $(rss "${pids[1]}")" >>"$out"
    sleep 10
    t=$((t + 10))
done
for p in "${pids[@]}"; do wait "$p" || { echo "trace-memory.sh: a run failed:" >&2; cat "$dir"/*.log >&2; exit 1; }; done
report="$(python3 - "$out" "$seconds" "$started" "$(uname -r)" "$dir" <<'EOF'
import sys
path, seconds, started, kernel, d = sys.argv[1:]
rows = [l.split() for l in open(path).read().splitlines()[1:]]
rows = [(int(a), int(b), int(c)) for a, b, c in rows if int(b) > 0 and int(c) > 0]
print(f"latscope run --trace, RSS over {seconds} s on both backends (run together, perf measuring CPU 0, bpf CPU 1; both trace every CPU)")
print(f"started {started}; kernel {kernel}")
for i, name in ((1, "perf"), (2, "bpf")):
    after = [r[i] for r in rows if r[0] >= 60]
    first = after[0]
    last = after[-1]
    change = 100.0 * (last - first) / first
    verdict = "PASS" if abs(change) <= 10.0 else "FAIL"
    print(f"{name:>4}: RSS at 60 s {first / 1024:.1f} MiB, at {rows[-1][0]} s {last / 1024:.1f} MiB "
          f"({change:+.1f} %); after 60 s lowest {min(after) / 1024:.1f} MiB, highest {max(after) / 1024:.1f} MiB; "
          f"target end within +-10 % of 60 s: {verdict}")
for name in ("perf", "bpf"):
    for line in open(f"{d}/{name}.log"):
        if line.startswith("tracer:"):
            print(f"{name}: {line.strip()[:300]}")
print("samples (s, perf KiB, bpf KiB), every 60 s:")
for r in rows:
    if r[0] % 60 == 0:
        print(f"  {r[0]:>5} {r[1]:>8} {r[2]:>8}")
EOF
)"
mkdir -p "$here/results"
echo "$report" | tee "$here/results/trace-memory-$started.txt"
