#!/usr/bin/env bash
# Fleet scale by simulation (issue 36): N simulated monitors checkpointing
# into one PostgreSQL database every 10 s (the monitor's default), spread
# evenly over the 10 s, each checkpoint as `latscope monitor` writes it (a
# timer cell on 2 CPUs and its 8 minute and hour windows). Reports the
# checkpoints per second sustained against the schedule's, the write
# latency of a checkpoint (p50, p99, max), how late checkpoints started
# (a sign the writers could not keep up), and the database's growth per
# host over the run (pg_database_size before and after, and per table,
# live after VACUUM FULL and the dead row versions it took back).
#
# A run of S seconds says little of a day: the cumulative rows are written
# once per cell, the snapshots are thinned, the retention deletes. What a
# host keeps is measured apart ("retained"): one monitor of D simulated
# days (`store_fill --monitor-days D`, the monitor's default retention:
# minute windows 7 days, timeline seconds and checkpoint intervals 1 day,
# hour windows 365 days) in its own database, its size after VACUUM FULL
# per table, and the hour windows' bytes per day, the one part that still
# grows after the first week (for a year).
#
# Usage: bench/fleet-scale.sh [--pg URL] [--hosts N[,N...]] [--seconds S]
#            [--workers W] [--retained-days D] [--keep] [--out FILE]
#            [--no-results-file]
#
# --retained-days D (default 8; 0 skips it) sets the simulated days.
#
# The simulated monitors are threads of one process (the store's filler,
# crates/store/examples/store_fill, --fleet-hosts), W connections shared
# by the hosts (host h on connection h % W): a real fleet opens one
# connection per host, which needs max_connections (or a pooler) to match.
# The whole measurement runs under `flock /tmp/latscope-measure.lock`.
#
# The PostgreSQL server is --pg URL, else $LATSCOPE_TEST_POSTGRES
# (`export $(.ci/postgres env)` sets it for the CI server); its role must be
# allowed to CREATE DATABASE. Each size of fleet gets a fresh database,
# dropped at the end (--keep leaves them). The password goes to psql and
# the filler through PGPASSWORD and is never printed.
#
# Needs cargo, psql and flock; no root.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

say() { echo "fleet-scale: $*" >&2; }
fail() {
    echo "fleet-scale: error: $*" >&2
    exit 1
}

pg_url="${LATSCOPE_TEST_POSTGRES:-}"
hosts_list="100,1000"
seconds=60
workers=32
keep=0
retained_days=8
out=""
results_file=1

while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    --pg | --hosts | --seconds | --workers | --retained-days | --out)
        [ $# -ge 2 ] || fail "$1 needs a value"
        case "$1" in
        --pg) pg_url="$2" ;;
        --hosts) [[ "$2" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || fail "--hosts: N or N,N,..." && hosts_list="$2" ;;
        --seconds) [[ "$2" =~ ^[1-9][0-9]*$ ]] || fail "--seconds: a whole number" && seconds="$2" ;;
        --workers) [[ "$2" =~ ^[1-9][0-9]*$ ]] || fail "--workers: a whole number" && workers="$2" ;;
        --retained-days) [[ "$2" =~ ^[0-9]+$ ]] || fail "--retained-days: a whole number" && retained_days="$2" ;;
        --out) out="$2" ;;
        esac
        shift 2
        ;;
    --keep) keep=1 && shift ;;
    --no-results-file) results_file=0 && shift ;;
    *) fail "unknown option '$1' (--help lists them)" ;;
    esac
done

[ -n "$pg_url" ] || fail "no PostgreSQL server: give --pg URL or set LATSCOPE_TEST_POSTGRES"
for tool in cargo psql flock; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done

# The URL split into its password (to PGPASSWORD) and the rest.
rest="${pg_url#*://}"
userinfo="${rest%@*}"
hostpart="${rest##*@}"
user="${userinfo%%:*}"
if [ "$userinfo" != "$user" ]; then export PGPASSWORD="${userinfo#*:}"; fi
server="postgres://$user@${hostpart}"
base="${server%/*}"

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
[ -n "$out" ] || out="$repo/bench/results/fleet-scale-$stamp.txt"

target_dir="${CARGO_TARGET_DIR:-$repo/target}"
fill="$target_dir/release/examples/store_fill"
say "building the store filler (release)"
(cd "$repo" && cargo build --release -q -p latscope-store --example store_fill) ||
    fail "cargo build --release -p latscope-store --example store_fill failed"

dbs=()
cleanup() {
    [ "$keep" = 1 ] && { [ ${#dbs[@]} -gt 0 ] && say "kept databases: ${dbs[*]}"; return 0; }
    for db in "${dbs[@]}"; do
        psql -X -q "$server" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

lines=()
IFS=',' read -r -a sizes <<<"$hosts_list"
for n in "${sizes[@]}"; do
    db="latscope_fleet_${n}_$$"
    psql -X -q "$server" -c "CREATE DATABASE $db" >/dev/null || fail "cannot create database $db"
    dbs+=("$db")
    say "$n hosts, $seconds s, $workers connections (database $db)"
    line="$(flock /tmp/latscope-measure.lock "$fill" --store "$base/$db" --fleet-hosts "$n" \
        --fleet-seconds "$seconds" --fleet-workers "$workers")" || fail "the filler failed for $n hosts"
    echo "$line"
    lines+=("$line")
done

if [ "$retained_days" -gt 0 ]; then
    db="latscope_fleet_retained_$$"
    psql -X -q "$server" -c "CREATE DATABASE $db" >/dev/null || fail "cannot create database $db"
    dbs+=("$db")
    say "retained: one monitor of $retained_days simulated days (database $db)"
    flock /tmp/latscope-measure.lock "$fill" --store "$base/$db" --monitor-days "$retained_days" >&2 ||
        fail "the filler failed for $retained_days monitor days"
    psql -X -q "$base/$db" -c "VACUUM FULL" >/dev/null 2>&1
    # The hour windows of one day: what a host adds for a year.
    per_day="$(psql -X -At "$base/$db" -c "SELECT COALESCE(sum(pg_column_size(w.*)), 0) * 24 / GREATEST(count(DISTINCT start_unix_ns), 1) FROM monitor_windows w WHERE span = 'hour'")"
    tables="$(psql -X -At -F: "$base/$db" -c "SELECT relname, round(pg_total_relation_size(relid) / 1e3, 1) FROM pg_stat_user_tables WHERE pg_total_relation_size(relid) > 16384 ORDER BY 2 DESC" | paste -sd, -)"
    line="retained days=$retained_days db_bytes=$(psql -X -At "$base/$db" -c 'SELECT pg_database_size(current_database())') hour_windows_bytes_per_day=$per_day per_table_kb=$tables"
    echo "$line"
    lines+=("$line")
fi

if [ "$results_file" = 1 ]; then
    {
        echo "# bench/fleet-scale.sh --hosts $hosts_list --seconds $seconds --workers $workers --retained-days $retained_days"
        echo "# $(date -u +%FT%TZ), $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet 2>/dev/null || echo '+changes'), $(nproc) CPUs, $(psql -X -At "$server" -c 'SHOW server_version' 2>/dev/null | head -1 || echo '?'), fsync=$(psql -X -At "$server" -c 'SHOW fsync' 2>/dev/null || echo '?')"
        for l in "${lines[@]}"; do echo "$l"; done
    } >"$out"
    say "results in $out"
fi
