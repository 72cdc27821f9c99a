#!/usr/bin/env bash
# latscope's UDP probe vs sockperf ping-pong and/or a plain C ping-pong
# (bench/udp-pingpong.c) over loopback, the tools taking turns: latscope's
# udp.path median against half each peer's RTT median.
# Usage: sudo bench/vs-sockperf.sh [--peer sockperf|c|both] [--rounds N]
#                                  [--seconds S] [--cpus A,B] [--quick]
#                                  [--out [FILE]] [--keep-tmp]
# See bench/README.md. The work is done by bench/vs_sockperf.py (Python 3,
# standard library only); this wrapper checks the prerequisites (sockperf for
# --peer sockperf|both, a C compiler, cc or $CC, for --peer c|both), builds
# latscope (cargo build --release) unless LATSCOPE=/path/to/latscope is set,
# and stops any sockperf server or C ping-pong left behind when it exits. The
# driver builds the C ping-pong itself, into its temporary directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
sockperf="${SOCKPERF:-$(command -v sockperf || true)}"
cc="${CC:-cc}"

fail() { echo "vs-sockperf: error: $*" >&2; exit 1; }

# Which peers (the driver checks the value itself; this only picks the checks).
peer=both
prev=""
for arg in "$@"; do
    case "$arg" in -h|--help) exec python3 "$here/vs_sockperf.py" --help ;; esac
    case "$prev" in --peer) peer="$arg" ;; esac
    case "$arg" in --peer=*) peer="${arg#--peer=}" ;; esac
    prev="$arg"
done
case "$peer" in
sockperf|c|both) ;;
*) fail "--peer takes sockperf, c or both, not '$peer'" ;;
esac
command -v python3 >/dev/null 2>&1 || fail "python3 not found: install it with 'apt-get install python3'"
[ "$(id -u)" -eq 0 ] || fail "must run as root (SCHED_FIFO, /dev/cpu_dma_latency): sudo $0 $*"
if [ "$peer" != c ]; then
    [ -n "$sockperf" ] && [ -x "$sockperf" ] \
        || fail "sockperf not found: install it with 'apt-get install sockperf' (or --peer c: the C ping-pong alone)"
fi
if [ "$peer" != sockperf ]; then
    command -v "$cc" >/dev/null 2>&1 \
        || fail "C compiler '$cc' not found, so bench/udp-pingpong.c cannot be built: install gcc, set CC, or use --peer sockperf"
    [ -f "$here/udp-pingpong.c" ] || fail "$here/udp-pingpong.c not found"
fi
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
# latscope, the C ping-pong) in this file; if it dies without cleaning up
# (SIGKILL, a crash), the trap stops them. Each pid is checked to still be a
# sockperf, latscope or udp-pingpong process before it is signalled.
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
            sockperf|latscope|udp-pingpong)
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

export LATSCOPE="$latscope" SOCKPERF="$sockperf" CC="$cc" VS_SOCKPERF_PIDFILE="$pidfile"
python3 "$here/vs_sockperf.py" "$@" &
driver=$!
set +e
wait "$driver"
rc=$?
set -e
driver=""
exit "$rc"
