#!/usr/bin/env bash
# Whether abusive clients of the monitor's /metrics endpoint (500 held
# connections, garbage, a 1 MB header, slowloris) delay its measuring
# thread: 16 phases of 5 s, abuse of the endpoint against the same clients
# on a plain control server, C A A C repeated (ABBA), judged by a sign test
# over the 8 pairs. It is the ignored test `endpoint_abuse_ab` of
# crates/cli/tests/e2e/monitor_e2e.rs (CI runs the 16 s survival test beside
# it), built optimised. Usage: sudo bench/endpoint-abuse.sh [--out FILE]
# See bench/README.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
fail() { echo "endpoint-abuse: error: $*" >&2; exit 1; }
out="$here/results/endpoint-abuse-$(date -u +%Y%m%dT%H%M%SZ).txt"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) [ $# -ge 2 ] || fail "--out needs a file"; out="$2"; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) fail "unknown argument '$1' (usage: sudo $0 [--out FILE])" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || fail "must run as root (SCHED_FIFO, mlockall): sudo $0"
command -v cargo >/dev/null 2>&1 || fail "cargo not found"
mkdir -p "$(dirname "$out")"
{
    echo "# bench/endpoint-abuse.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(nproc) CPUs"
    cd "$repo"
    cargo test --release -q -p latscope --test e2e monitor_e2e::endpoint_abuse_ab \
        -- --ignored --exact --nocapture 2>&1
} | tee "$out"
echo "endpoint-abuse: written to $out" >&2
