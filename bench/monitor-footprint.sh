#!/usr/bin/env bash
# The monitor's memory and store growth over time: runs `latscope monitor`
# (default with --trace) for DURATION seconds, scraping /metrics every 5 s,
# and prints its RSS and the store's size (with its WAL) every 30 s.
# Usage: sudo bench/monitor-footprint.sh [SECONDS] [-- extra monitor options]
#        sudo bench/monitor-footprint.sh --test
# --test runs the asserting version instead, the test monitor_footprint_e2e
# (ten minutes of --trace --persist 1s: memory flat within 10 % from 5 to
# 10 minutes, the store within its stated bounds), which `cargo test`
# skips for its length.
# See docs/monitor.md ("Bounds").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
if [ "${1:-}" = "--test" ]; then
    cd "$repo"
    exec cargo test -p latscope --test e2e monitor_footprint_e2e:: -- --ignored --nocapture
fi
seconds="${1:-600}"
shift || true
[ "${1:-}" = "--" ] && shift
if [ -z "${LATSCOPE:-}" ]; then
    (cd "$repo" && cargo build --release -q -p latscope)
    LATSCOPE="$repo/target/release/latscope"
fi
dir="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
extra=("$@")
[ ${#extra[@]} -eq 0 ] && extra=(--trace)
"$LATSCOPE" monitor --listen "127.0.0.1:$port" --store "$dir/m.db" "${extra[@]}" 2>"$dir/log" &
pid=$!
sleep 2
size() { du -cb "$dir"/m.db* 2>/dev/null | tail -1 | cut -f1; }
echo "# latscope monitor ${extra[*]}, $(date -u +%FT%TZ), kernel $(uname -r)"
echo "# seconds rss_kib store_bytes"
start=$(date +%s)
next=0
while :; do
    now=$(( $(date +%s) - start ))
    [ "$now" -ge "$seconds" ] && break
    if [ "$now" -ge "$next" ]; then
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
        echo "$now $rss $(size)"
        next=$(( next + 30 ))
    fi
    curl -s -o /dev/null "http://127.0.0.1:$port/metrics" || true
    sleep 5
done
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
echo "$seconds $rss $(size)"
kill -TERM "$pid"; wait "$pid" || true
echo "# windows in the store: $(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select span, count(*), sum(length(histogram)) from monitor_windows group by span').fetchall())" "$dir/m.db")"
