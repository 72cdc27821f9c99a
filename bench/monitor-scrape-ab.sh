#!/usr/bin/env bash
# Scraping's effect on the monitor's median latency within one run: minutes
# scraped every 5 s against minutes not, ABBA, from the stored minute
# windows. Usage: sudo bench/monitor-scrape-ab.sh [--minutes N] [--cpu C] [--out FILE]
# See bench/README.md. The work is done by bench/monitor_scrape_ab.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
fail() { echo "monitor-scrape-ab: error: $*" >&2; exit 1; }
for arg in "$@"; do
    case "$arg" in -h|--help) exec python3 "$here/monitor_scrape_ab.py" --help ;; esac
done
command -v python3 >/dev/null 2>&1 || fail "python3 not found: install it with 'apt-get install python3'"
[ "$(id -u)" -eq 0 ] || fail "must run as root (SCHED_FIFO, mlockall): sudo $0 $*"
if [ -z "${LATSCOPE:-}" ]; then
    (cd "$repo" && cargo build --release -q -p latscope) || fail "cargo build --release failed"
    LATSCOPE="$repo/target/release/latscope"
fi
export LATSCOPE
exec python3 "$here/monitor_scrape_ab.py" "$@"
