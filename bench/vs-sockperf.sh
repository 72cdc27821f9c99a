#!/usr/bin/env bash
# latscope's UDP probe vs sockperf ping-pong over loopback, run alternately
# (A B, B A, ...): latscope's udp.path median against half sockperf's RTT median.
# Usage: sudo bench/vs-sockperf.sh [--rounds N] [--seconds S] [--cpus A,B]
#                                  [--quick] [--out [FILE]] [--keep-tmp]
# See bench/README.md. The work is done by bench/vs_sockperf.py (Python 3,
# standard library only); this wrapper checks the prerequisites, builds
# latscope (cargo build --release) unless LATSCOPE=/path/to/latscope is set,
# and stops any sockperf server left behind when it exits.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
sockperf="${SOCKPERF:-$(command -v sockperf || true)}"

fail() { echo "vs-sockperf: error: $*" >&2; exit 1; }

for arg in "$@"; do
    case "$arg" in -h|--help) exec python3 "$here/vs_sockperf.py" --help ;; esac
done
command -v python3 >/dev/null 2>&1 || fail "python3 not found: install it with 'apt-get install python3'"
[ "$(id -u)" -eq 0 ] || fail "must run as root (SCHED_FIFO, /dev/cpu_dma_latency): sudo $0 $*"
[ -n "$sockperf" ] && [ -x "$sockperf" ] || fail "sockperf not found: install it with 'apt-get install sockperf'"
command -v taskset >/dev/null 2>&1 && command -v chrt >/dev/null 2>&1 \
    || fail "taskset or chrt not found: install util-linux"

if [ -n "${LATSCOPE:-}" ]; then
    latscope="$LATSCOPE"
    [ -x "$latscope" ] || fail "latscope binary not found at LATSCOPE=$latscope"
else
    command -v cargo >/dev/null 2>&1 \
        || fail "cargo not found, so latscope cannot be built: install Rust or set LATSCOPE=/path/to/latscope"
    echo "vs-sockperf: building latscope (cargo build --release) ..." >&2
    (cd "$repo" && cargo build --release --quiet) \
        || fail "'cargo build --release' failed in $repo (output above); or set LATSCOPE=/path/to/latscope"
    latscope="${CARGO_TARGET_DIR:-$repo/target}/release/latscope"
    case "$latscope" in /*) ;; *) latscope="$repo/$latscope" ;; esac
    [ -x "$latscope" ] || fail "latscope binary not found at $latscope after the build"
fi

# The driver lists the processes it has running (sockperf server and client,
# latscope) in this file; if it dies without cleaning up (SIGKILL, a crash),
# the trap stops them. Each pid is checked to still be a sockperf or latscope
# process before it is signalled.
state="$(mktemp -d "${TMPDIR:-/tmp}/vs-sockperf.XXXXXX")"
pidfile="$state/children"
driver=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [ -n "$driver" ] && kill -0 "$driver" 2>/dev/null; then
        kill -TERM "$driver" 2>/dev/null || true
        wait "$driver" 2>/dev/null || true
    fi
    if [ -s "$pidfile" ]; then
        while read -r pid; do
            [ -n "$pid" ] || continue
            case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
            sockperf|latscope)
                kill -TERM "$pid" 2>/dev/null || true
                sleep 0.2
                kill -KILL "$pid" 2>/dev/null || true ;;
            esac
        done < "$pidfile"
    fi
    rm -rf "$state"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

export LATSCOPE="$latscope" SOCKPERF="$sockperf" VS_SOCKPERF_PIDFILE="$pidfile"
python3 "$here/vs_sockperf.py" "$@" &
driver=$!
set +e
wait "$driver"
rc=$?
set -e
driver=""
exit "$rc"
