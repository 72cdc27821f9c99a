#!/usr/bin/env bash
# The store on SQLite against PostgreSQL (issue 16): what a checkpoint
# costs, and how long list, show, report, compare and forecast take on a
# store of many runs and on a monitor store of 30 days. Both backends take
# turns (A B B A), and each figure is quoted as the ratio PostgreSQL /
# SQLite (median of the per-pair ratios).
#
# Usage: bench/store-throughput.sh [--pg URL] [--runs N] [--days D]
#            [--checkpoints N] [--pairs N] [--cp-pairs N] [--quick]
#            [--reps N] [--targets-only] [--keep] [--out FILE]
#            [--no-results-file]
#
# It also quotes the speed targets of issue 35 on SQLite: the forecast of
# one metric of a 60 s two-CPU run under 100 ms, and on the monitor store
# `forecast` under 0.5 s and `report` under 1 s, each under 100 MB of peak
# RSS (wall time and maximum RSS from /usr/bin/time, --reps runs each,
# each under `flock /tmp/latscope-measure.lock` so that it never overlaps
# another measurement). --targets-only measures just these, without
# PostgreSQL.
#
# The PostgreSQL server is --pg URL, else $LATSCOPE_TEST_POSTGRES
# (`export $(.ci/postgres env)` sets it for the CI server); its role must be
# allowed to CREATE DATABASE. The script creates fresh databases (and a
# fresh SQLite directory) and drops them at the end (--keep leaves both and
# says where). The password goes to psql and latscope through PGPASSWORD and
# is never printed: every URL shown is the URL without it.
#
# Needs cargo, psql (apt-get install postgresql-client) and /usr/bin/time;
# no root. See bench/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

say() { echo "store-throughput: $*" >&2; }
fail() {
    echo "store-throughput: error: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
    cat <<'EOF'
Options:
  --pg URL           PostgreSQL server (postgres://USER[:PASSWORD]@HOST[:PORT]/DB;
                     DB is where CREATE DATABASE is issued) [$LATSCOPE_TEST_POSTGRES]
  --runs N           runs in the many-runs store [1000]
  --days D           simulated days of the monitor store [30]
  --checkpoints N    checkpoints timed per store [500]
  --pairs N          timed pairs of every command [6]
  --cp-pairs N       pairs of checkpoint series, each in fresh stores [6]
  --quick            --runs 20 --days 1 --checkpoints 50 --pairs 2 --cp-pairs 2
  --reps N           timed runs of each command for the issue-35 targets [5]
  --targets-only     only the issue-35 targets, on SQLite (no PostgreSQL needed)
  --keep             keep the SQLite files and PostgreSQL databases
  --out FILE         results file [bench/results/store-throughput-<UTC start>.txt]
  --no-results-file  print only
EOF
}

runs=1000
days=30
checkpoints=500
pairs=6
cp_pairs=6
pg_url="${LATSCOPE_TEST_POSTGRES:-}"
keep=0
out=""
results_file=1
reps=5
targets_only=0

number() {
    [[ "$2" =~ ^[1-9][0-9]*$ ]] || fail "$1 needs a whole number above 0, not '$2'"
}

while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help)
        usage
        exit 0
        ;;
    --pg | --runs | --days | --checkpoints | --pairs | --cp-pairs | --out | --reps)
        [ $# -ge 2 ] || fail "$1 needs a value"
        case "$1" in
        --reps) number "$1" "$2" && reps="$2" ;;
        --pg) pg_url="$2" ;;
        --runs) number "$1" "$2" && runs="$2" ;;
        --days) number "$1" "$2" && days="$2" ;;
        --checkpoints) number "$1" "$2" && checkpoints="$2" ;;
        --pairs) number "$1" "$2" && pairs="$2" ;;
        --cp-pairs) number "$1" "$2" && cp_pairs="$2" ;;
        --out) out="$2" ;;
        esac
        shift 2
        ;;
    --quick)
        runs=20 days=1 checkpoints=50 pairs=2 cp_pairs=2
        shift
        ;;
    --keep)
        keep=1
        shift
        ;;
    --targets-only)
        targets_only=1
        shift
        ;;
    --no-results-file)
        results_file=0
        shift
        ;;
    *) fail "unknown option '$1' (--help lists them)" ;;
    esac
done

# ------------------------------------------------------------ issue 35 targets

# The targets of issue 35 on SQLite, into file $1: builds, fills a monitor
# store of $days days and a store of one 60 s two-CPU run in directory $2,
# and times each command $reps times.
targets() {
    local file="$1" dir="$2" fill latscope
    local target_dir="${CARGO_TARGET_DIR:-$repo/target}"
    latscope="$target_dir/release/latscope"
    fill="$target_dir/release/examples/store_fill"
    command -v flock >/dev/null 2>&1 || fail "flock not found (util-linux): it keeps measurements from overlapping"
    say "building latscope and the store filler (release)"
    (cd "$repo" && cargo build --release -q -p latscope --bin latscope) || fail "cargo build --release -p latscope failed"
    (cd "$repo" && cargo build --release -q -p latscope-store --example store_fill) || fail "cargo build --release -p latscope-store --example store_fill failed"
    say "targets: filling a SQLite monitor of $days days and one 60 s run"
    "$fill" --store "$dir/t-monitor.db" --monitor-days "$days" >"$dir/t-fill.out" 2>"$dir/t-fill.err" ||
        fail "store_fill --monitor-days failed: $(tail -1 "$dir/t-fill.err")"
    "$fill" --store "$dir/t-run60.db" --runs 1 --run-seconds 60 >>"$dir/t-fill.out" 2>>"$dir/t-fill.err" ||
        fail "store_fill --runs failed: $(tail -1 "$dir/t-fill.err")"
    local mrun rrun
    mrun="$(sed -n 's/^monitor .* run=\([0-9]*\) .*/\1/p' "$dir/t-fill.out")"
    rrun="$(sed -n 's/^runs .* first=\([0-9]*\) .*/\1/p' "$dir/t-fill.out")"
    # label|target seconds|command line
    local cases=(
        "forecast, 60 s run on 2 CPUs (one metric)|0.1|forecast $rrun --store $dir/t-run60.db"
        "forecast, monitor of $days d|0.5|forecast $mrun --store $dir/t-monitor.db"
        "report, monitor of $days d|1.0|report $mrun --html $dir/t-report.html --store $dir/t-monitor.db"
        "show, monitor of $days d|-|show $mrun --store $dir/t-monitor.db"
    )
    local raw="$dir/t-raw.txt" label limit args i k
    : >"$raw"
    for ((k = 1; k <= reps; k++)); do
        for i in "${!cases[@]}"; do
            IFS='|' read -r label limit args <<<"${cases[$i]}"
            # shellcheck disable=SC2086
            flock /tmp/latscope-measure.lock /usr/bin/time -f '%e %M %U %S' -o "$dir/t-time" \
                "$latscope" $args >/dev/null 2>"$dir/t-err" ||
                fail "latscope $args failed: $(grep -v '^Command exited' "$dir/t-err" | tail -1)"
            echo "$i $k $(tail -1 "$dir/t-time")" >>"$raw"
        done
    done
    {
        echo "Targets of issue 35 (SQLite; $reps runs each, each under flock /tmp/latscope-measure.lock;"
        echo "wall time and peak RSS from /usr/bin/time; started $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)):"
        printf '  %-38s %10s %10s %10s %12s %12s %s\n' command median slowest target "peak RSS" "CPU median" verdict
        for i in "${!cases[@]}"; do
            IFS='|' read -r label limit args <<<"${cases[$i]}"
            local med worst rss verdict cpu
            med="$(awk -v i="$i" '$1 == i { print $3 }' "$raw" | median)"
            cpu="$(awk -v i="$i" '$1 == i { print $5 + $6 }' "$raw" | median)"
            worst="$(awk -v i="$i" '$1 == i { print $3 }' "$raw" | sort -g | tail -1)"
            rss="$(awk -v i="$i" '$1 == i { print $4 }' "$raw" | sort -g | tail -1)"
            if [ "$limit" = - ]; then
                verdict="(no target; RSS $(awk -v r="$rss" 'BEGIN { print (r < 100000 ? "met" : "MISSED") }'))"
            else
                verdict="$(awk -v m="$med" -v t="$limit" -v r="$rss" 'BEGIN { print ((m < t && r < 100000) ? "met" : "MISSED") }')"
            fi
            printf '  %-38s %8.2f s %8.2f s %8s s %9.1f MB %10.2f s %s\n' "$label" "$med" "$worst" "$limit" "$(awk -v r="$rss" 'BEGIN { print r / 1000 }')" "$cpu" "$verdict"
        done
        echo "  (peak RSS: the largest of the runs; MB = 1000 KB as /usr/bin/time counts KB; CPU: user + sys,"
        echo "  which a busy neighbour on the same CPUs changes less than the wall time; the verdict is on the wall time)"
        echo "  commands: latscope forecast|report|show RUN --store STORE; stores by store_fill --monitor-days $days and --runs 1 --run-seconds 60"
        echo "  raw (command index, rep, seconds, peak RSS KB, user s, sys s):"
        sed 's/^/    /' "$raw"
    } >"$file"
}

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

if [ "$targets_only" = 1 ]; then
    [ -x /usr/bin/time ] || fail "/usr/bin/time not found (apt-get install time): it measures each command's peak memory"
    command -v cargo >/dev/null 2>&1 || fail "cargo not found"
    start_utc="$(date -u +%Y%m%dT%H%M%SZ)"
    tdir="$(mktemp -d /tmp/store-targets.XXXXXX)"
    # shellcheck disable=SC2064
    trap "rm -rf '$tdir'" EXIT
    trap 'exit 130' INT TERM
    targets "$tdir/targets.txt" "$tdir"
    {
        echo "store-throughput --targets-only $start_utc"
        echo "host $(hostname), kernel $(uname -r), $(nproc) CPUs"
        echo "latscope $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$repo" && git diff --quiet HEAD -- crates 2>/dev/null || echo ' (crates/ modified)')"
        echo
        cat "$tdir/targets.txt"
    } >"$tdir/report.txt"
    cat "$tdir/report.txt"
    if [ "$results_file" = 1 ]; then
        [ -n "$out" ] || out="$repo/bench/results/store-throughput-targets-$start_utc.txt"
        mkdir -p "$(dirname "$out")"
        cp "$tdir/report.txt" "$out"
        say "results written to ${out#"$repo"/}"
    fi
    exit 0
fi

# ------------------------------------------------------------ the server

[ -n "$pg_url" ] || fail "no PostgreSQL server: give --pg postgres://USER:PASSWORD@HOST:PORT/DB or set LATSCOPE_TEST_POSTGRES (export \$(.ci/postgres env))"
url_re='^(postgres(ql)?://)(([^:@/]*)(:([^@/]*))?@)?([^/?#]+)(/([^?#]*))?(\?[^#]*)?$'
[[ "$pg_url" =~ $url_re ]] || fail "--pg: not a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DB)"
pg_scheme="${BASH_REMATCH[1]}"
pg_user="${BASH_REMATCH[4]}"
pg_password="${BASH_REMATCH[6]}"
pg_host="${BASH_REMATCH[7]}"
pg_admin_db="${BASH_REMATCH[9]:-postgres}"
pg_query="${BASH_REMATCH[10]}"
if [ -n "$pg_password" ]; then
    # Percent-decoded, handed over in the environment only.
    PGPASSWORD="$(printf '%b' "${pg_password//%/\\x}")"
    export PGPASSWORD
fi
unset pg_password pg_url
pg_base="${pg_scheme}${pg_user:+$pg_user@}${pg_host}"
# The URL of database $1, without the password: what is passed and shown.
pg_db_url() { echo "$pg_base/$1$pg_query"; }
pg_admin="$(pg_db_url "$pg_admin_db")"

command -v psql >/dev/null 2>&1 || fail "psql not found (apt-get install postgresql-client): it creates the benchmark's databases"
[ -x /usr/bin/time ] || fail "/usr/bin/time not found (apt-get install time): it measures each command's peak memory"
command -v cargo >/dev/null 2>&1 || fail "cargo not found"

psql_admin() { PGCONNECT_TIMEOUT=5 psql "$pg_admin" -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

if ! err="$(psql_admin -c 'SELECT 1' 2>&1 >/dev/null)"; then
    fail "cannot connect to PostgreSQL at $pg_admin: $(echo "$err" | grep -v '^$' | head -1)"
fi

# ------------------------------------------------------------ set-up

start_utc="$(date -u +%Y%m%dT%H%M%SZ)"
if [ "$results_file" = 1 ] && [ -z "$out" ]; then
    out="$repo/bench/results/store-throughput-$start_utc.txt"
fi
tmp="$(mktemp -d /tmp/store-throughput.XXXXXX)"
db_prefix="lsbench_$(date -u +%Y%m%d%H%M%S)_$$"
created_dbs=()

cleanup() {
    local rc=$?
    if [ "$keep" = 1 ]; then
        say "kept: $tmp (SQLite stores, raw timings)${created_dbs[*]:+ and databases ${created_dbs[*]} on $pg_base}"
    else
        for db in "${created_dbs[@]}"; do
            psql_admin -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 ||
                say "could not drop database $db on $pg_base"
        done
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A fresh PostgreSQL database; sets new_url to its URL (without the
# password). Not in a subshell: created_dbs must keep it for the clean-up.
new_pg() {
    local db="${db_prefix}_$1"
    psql_admin -c "CREATE DATABASE \"$db\"" >/dev/null 2>"$tmp/createdb.err" ||
        fail "cannot create database $db on $pg_base: $(head -1 "$tmp/createdb.err")"
    created_dbs+=("$db")
    new_url="$(pg_db_url "$db")"
}

pg_size() { psql_admin -c "SELECT pg_database_size('$1')"; }
sqlite_size() { cat "$1" "$1-wal" 2>/dev/null | wc -c; }

target_dir="${CARGO_TARGET_DIR:-$repo/target}"
latscope="$target_dir/release/latscope"
fill="$target_dir/release/examples/store_fill"

say "building latscope and the store filler (release)"
(cd "$repo" && cargo build --release -q -p latscope --bin latscope) || fail "cargo build --release -p latscope failed"
(cd "$repo" && cargo build --release -q -p latscope-store --example store_fill) || fail "cargo build --release -p latscope-store --example store_fill failed"

details="$tmp/details.txt"
: >"$details"
detail() { echo "$*" >>"$details"; }

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
busy_start="$(ps -eo pcpu=,comm= --sort=-pcpu | head -5 | awk '{printf "%s %s%%; ", $2, $1}')"

# key=value from a store_fill line.
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# store_fill on one store; prints its stdout line.
run_fill() {
    local label="$1" store="$2"
    shift 2
    detail "  $label: store_fill --store $store $*"
    "$fill" --store "$store" "$@" 2>>"$tmp/fill.log" >"$tmp/fill.out" ||
        fail "store_fill failed on $label: $(grep -v '^store_fill: .* of ' "$tmp/fill.log" | tail -1)"
    cat "$tmp/fill.out"
}

# ------------------------------------------------------------ fill

s_runs="$tmp/runs.db"
s_mon="$tmp/monitor.db"
new_pg runs
p_runs="$new_url"
new_pg monitor
p_mon="$new_url"

detail "Fills (store_fill; seconds = whole fill, store_seconds = inside the store's calls):"
say "filling $runs runs: SQLite"
fill_s_runs="$(run_fill "SQLite runs" "$s_runs" --runs "$runs")"
say "filling $runs runs: PostgreSQL"
fill_p_runs="$(run_fill "PostgreSQL runs" "$p_runs" --runs "$runs")"
say "filling a monitor of $days days: PostgreSQL"
fill_p_mon="$(run_fill "PostgreSQL monitor" "$p_mon" --monitor-days "$days")"
say "filling a monitor of $days days: SQLite"
fill_s_mon="$(run_fill "SQLite monitor" "$s_mon" --monitor-days "$days")"
for l in "$fill_s_runs" "$fill_p_runs" "$fill_p_mon" "$fill_s_mon"; do detail "  $l"; done

s_first="$(kv first "$fill_s_runs")" s_last="$(kv last "$fill_s_runs")"
p_first="$(kv first "$fill_p_runs")" p_last="$(kv last "$fill_p_runs")"
s_mrun="$(kv run "$fill_s_mon")" p_mrun="$(kv run "$fill_p_mon")"

# What autovacuum does to a database over 30 days, done once: the fill
# compresses them into minutes, so autovacuum would otherwise still be at
# work while the commands are timed.
say "VACUUM (ANALYZE) of the PostgreSQL stores"
for db in "${db_prefix}_runs" "${db_prefix}_monitor"; do
    PGCONNECT_TIMEOUT=5 psql "$(pg_db_url "$db")" -X -q -v ON_ERROR_STOP=1 -c 'VACUUM (ANALYZE)' >/dev/null 2>"$tmp/vacuum.err" ||
        fail "VACUUM of $db failed: $(head -1 "$tmp/vacuum.err")"
done
pg_tables="$(PGCONNECT_TIMEOUT=5 psql "$p_mon" -X -A -t -q -F ' ' -c "SELECT relname, round(pg_total_relation_size(relid) / 1e6, 1) || ' MB' FROM pg_stat_user_tables ORDER BY pg_total_relation_size(relid) DESC LIMIT 5" | paste -sd ';' | sed 's/;/; /g')"
detail "  PostgreSQL monitor store, largest tables with indexes and TOAST (after VACUUM): $pg_tables"

size_s_runs="$(sqlite_size "$s_runs")" size_p_runs="$(pg_size "${db_prefix}_runs")"
size_s_mon="$(sqlite_size "$s_mon")" size_p_mon="$(pg_size "${db_prefix}_monitor")"

# ------------------------------------------------------------ checkpoints

cp_raw="$tmp/checkpoints.txt"
: >"$cp_raw"
for ((k = 1; k <= cp_pairs; k++)); do
    if ((k % 2)); then order="S P"; else order="P S"; fi
    for b in $order; do
        if [ "$b" = S ]; then
            store="$tmp/cp-$k.db"
        else
            new_pg "cp$k"
            store="$new_url"
        fi
        say "checkpoint pair $k/$cp_pairs ($order): $([ "$b" = S ] && echo SQLite || echo PostgreSQL)"
        line="$(run_fill "checkpoints pair $k $b" "$store" --checkpoints "$checkpoints" --timings "$tmp/cp-$k-$b.us")"
        echo "$k ${order// /} $b $(kv median_us "$line") $(kv p99_us "$line") $(kv mean_us "$line") $(kv max_us "$line")" >>"$cp_raw"
        detail "  $line"
    done
done

# ------------------------------------------------------------ commands

# name|which store (runs or monitor)|arguments with S/P placeholders
commands=(
    "list|runs|list"
    "show|runs|show @LAST"
    "report|runs|report @LAST --html @TMP/report.html"
    "compare|runs|compare @FIRST @LAST"
    "show|monitor|show @MON"
    "report|monitor|report @MON --html @TMP/report.html"
    "forecast|monitor|forecast @MON"
)

# The command line of entry $1 on backend $2 (S or P).
command_line() {
    local name kind args store first last mon
    IFS='|' read -r name kind args <<<"$1"
    if [ "$2" = S ]; then
        first=$s_first last=$s_last mon=$s_mrun
        [ "$kind" = runs ] && store=$s_runs || store=$s_mon
    else
        first=$p_first last=$p_last mon=$p_mrun
        [ "$kind" = runs ] && store=$p_runs || store=$p_mon
    fi
    args="${args//@FIRST/$first}"
    args="${args//@LAST/$last}"
    args="${args//@MON/$mon}"
    args="${args//@TMP/$tmp}"
    echo "$args --store $store"
}

raw="$tmp/commands.txt"
: >"$raw"
# Runs entry $2 on backend $3 once, as pair $1; appends "pair order backend
# index seconds peak_kb" to the raw file.
time_one() {
    local pair="$1" i="$2" b="$3" order="$4" line t0 t1
    # shellcheck disable=SC2207
    line=($(command_line "${commands[$i]}" "$b"))
    t0=$(date +%s%N)
    if ! /usr/bin/time -f '%M' -o "$tmp/rss" "$latscope" "${line[@]}" >"$tmp/cmd.out" 2>"$tmp/cmd.err"; then
        fail "latscope ${line[*]} failed: $(grep -v '^Command exited' "$tmp/cmd.err" | tail -1)"
    fi
    t1=$(date +%s%N)
    echo "$pair $order $b $i $(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.4f", n / 1e9 }') $(tail -1 "$tmp/rss")" >>"$raw"
}

detail ""
detail "Command pairs:"
say "warm-up: every command once on each backend"
for i in "${!commands[@]}"; do
    time_one 0 "$i" S SP
    time_one 0 "$i" P SP
done
for ((p = 1; p <= pairs; p++)); do
    if ((p % 2)); then order="S P"; else order="P S"; fi
    say "pair $p/$pairs (${order// / then })"
    detail "  pair $p: load average $(cut -d' ' -f1-3 /proc/loadavg) at its start"
    for i in "${!commands[@]}"; do
        for b in $order; do time_one "$p" "$i" "$b" "${order// /}"; done
    done
done

say "issue-35 targets on SQLite ($reps runs each)"
targets "$tmp/targets.txt" "$tmp"

load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

# The fill rewrites the monitor's metrics rows 9,336 times in a minute or
# two, faster than VACUUM can hand their TOAST space back; a monitor
# checkpointing every 10 s for 30 days leaves no such pile. After the
# timings, so that they read the store as filled.
psql "$p_mon" -X -q -v ON_ERROR_STOP=1 -c 'VACUUM FULL metrics' >/dev/null 2>"$tmp/vacuum.err" ||
    fail "VACUUM FULL metrics failed: $(head -1 "$tmp/vacuum.err")"
size_p_mon_full="$(pg_size "${db_prefix}_monitor")"
busy_end="$(ps -eo pcpu=,comm= --sort=-pcpu | head -5 | awk '{printf "%s %s%%; ", $2, $1}')"

# ------------------------------------------------------------ report

label() {
    local name kind
    IFS='|' read -r name kind _ <<<"${commands[$1]}"
    if [ "$kind" = runs ]; then echo "$name ($runs runs)"; else echo "$name (monitor, $days d)"; fi
}

mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }'; }

report="$tmp/report.txt"
{
    echo "store-throughput $start_utc: SQLite against PostgreSQL ($pg_base)"
    echo "host $(hostname), kernel $(uname -r), $(nproc) CPUs; load average $load_start at the start, $load_end at the end"
    echo "latscope $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$repo" && git diff --quiet HEAD -- crates 2>/dev/null || echo ' (crates/ modified)'); PostgreSQL $(psql_admin -c 'SHOW server_version'), fsync $(psql_admin -c 'SHOW fsync'), synchronous_commit $(psql_admin -c 'SHOW synchronous_commit'), shared_buffers $(psql_admin -c 'SHOW shared_buffers')"
    echo
    echo "Stores (filled once each; runs SQLite first, monitor PostgreSQL first):"
    printf '  %-34s %14s %14s\n' "" SQLite PostgreSQL
    printf '  %-34s %12s s %12s s\n' "fill $runs runs, whole" "$(kv seconds "$fill_s_runs")" "$(kv seconds "$fill_p_runs")"
    printf '  %-34s %12s s %12s s\n' "  of which in the store" "$(kv store_seconds "$fill_s_runs")" "$(kv store_seconds "$fill_p_runs")"
    printf '  %-34s %12s s %12s s\n' "fill monitor of $days d, whole" "$(kv seconds "$fill_s_mon")" "$(kv seconds "$fill_p_mon")"
    printf '  %-34s %12s s %12s s\n' "  of which in the store" "$(kv store_seconds "$fill_s_mon")" "$(kv store_seconds "$fill_p_mon")"
    printf '  %-34s %11.1f MB %11.1f MB\n' "size, $runs runs" "$(mb "$size_s_runs")" "$(mb "$size_p_runs")"
    printf '  %-34s %11.1f MB %11.1f MB\n' "size, monitor" "$(mb "$size_s_mon")" "$(mb "$size_p_mon")"
    printf '  %-34s %14s %11.1f MB\n' "  after VACUUM FULL metrics" "" "$(mb "$size_p_mon_full")"
    echo "  monitor: $(kv hour_windows "$fill_s_mon") hour and $(kv minute_windows "$fill_s_mon") minute windows, $(kv timeline_seconds "$fill_s_mon") timeline seconds per series (4 series), $(kv checkpoints "$fill_s_mon") checkpoints"
    echo
    echo "Store::write_checkpoint, $checkpoints checkpoints of a traced timer cell per store, $cp_pairs pairs (fresh stores each):"
    printf '  %-6s %-5s %12s %12s %10s %12s %12s %10s\n' pair order "SQLite p50" "PG p50" "PG/SQLite" "SQLite p99" "PG p99" "PG/SQLite"
    awk '{ k = $1; o[k] = $2; med[k, $3] = $4; p99[k, $3] = $5 }
         END { for (k = 1; k in o; k++)
                 printf "  %-6s %-5s %9.2f ms %9.2f ms %10.2f %9.2f ms %9.2f ms %10.2f\n", k, o[k],
                   med[k, "S"] / 1000, med[k, "P"] / 1000, med[k, "P"] / med[k, "S"],
                   p99[k, "S"] / 1000, p99[k, "P"] / 1000, p99[k, "P"] / p99[k, "S"] }' "$cp_raw"
    cs50="$(awk '$3 == "S" { print $4 / 1000 }' "$cp_raw" | median)"
    cp50="$(awk '$3 == "P" { print $4 / 1000 }' "$cp_raw" | median)"
    cs99="$(awk '$3 == "S" { print $5 / 1000 }' "$cp_raw" | median)"
    cp99="$(awk '$3 == "P" { print $5 / 1000 }' "$cp_raw" | median)"
    r50="$(awk '{ v[$1, $3] = $4 } END { for (k = 1; (k, "S") in v; k++) print v[k, "P"] / v[k, "S"] }' "$cp_raw" | median)"
    r99="$(awk '{ v[$1, $3] = $5 } END { for (k = 1; (k, "S") in v; k++) print v[k, "P"] / v[k, "S"] }' "$cp_raw" | median)"
    printf '  %-12s %9.2f ms %9.2f ms %10.2f %9.2f ms %9.2f ms %10.2f\n' median "$cs50" "$cp50" "$r50" "$cs99" "$cp99" "$r99"
    cp_disturbed="$(awk -v m="$r50" '{ v[$1, $3] = $4 } END { for (k = 1; (k, "S") in v; k++) { r = v[k, "P"] / v[k, "S"]; if (r > 2 * m || r < m / 2) print k } }' "$cp_raw" | paste -sd,)"
    echo
    echo "Commands, wall time (fork to exit) of the release build, $pairs pairs after one warm-up each;"
    echo "medians over pairs; PG/SQLite is the median of the per-pair ratios; spread is slowest/fastest of a backend's runs:"
    printf '  %-28s %10s %10s %10s %-15s %13s %17s\n' command SQLite PostgreSQL PG/SQLite "pair ratios" "spread S / P" "peak RSS S / P"
    disturbed=""
    for i in "${!commands[@]}"; do
        s_med="$(awk -v i="$i" '$1 > 0 && $4 == i && $3 == "S" { print $5 }' "$raw" | median)"
        p_med="$(awk -v i="$i" '$1 > 0 && $4 == i && $3 == "P" { print $5 }' "$raw" | median)"
        ratios="$(awk -v i="$i" '$1 > 0 && $4 == i { t[$1, $3] = $5 } END { for (k = 1; (k, "S") in t; k++) print t[k, "P"] / t[k, "S"] }' "$raw")"
        ratio="$(echo "$ratios" | median)"
        rmin="$(echo "$ratios" | sort -g | head -1)" rmax="$(echo "$ratios" | sort -g | tail -1)"
        spread() { awk -v i="$i" -v b="$1" '$1 > 0 && $4 == i && $3 == b { if (!n++ || $5 < lo) lo = $5; if ($5 > hi) hi = $5 } END { printf "%.2f", hi / lo }' "$raw"; }
        ss="$(spread S)" sp="$(spread P)"
        rss_s="$(awk -v i="$i" '$1 > 0 && $4 == i && $3 == "S" { print $6 / 1024 }' "$raw" | median)"
        rss_p="$(awk -v i="$i" '$1 > 0 && $4 == i && $3 == "P" { print $6 / 1024 }' "$raw" | median)"
        printf '  %-28s %8.3f s %8.3f s %10.2f %6.2f–%-7.2f %6s / %-5s %7.0f / %-5.0f MB\n' \
            "$(label "$i")" "$s_med" "$p_med" "$ratio" "$rmin" "$rmax" "$ss" "$sp" "$rss_s" "$rss_p"
        # A pair whose ratio is off the median by more than 2x.
        if awk -v m="$ratio" -v lo="$rmin" -v hi="$rmax" 'BEGIN { exit !(hi > 2 * m || lo < m / 2) }'; then
            disturbed="$disturbed $(label "$i");"
        fi
        IFS='|' read -r name kind _ <<<"${commands[$i]}"
        if [ "$name" = report ] && [ "$kind" = monitor ]; then
            rep_s="$s_med" rep_p="$p_med"
        fi
    done
    echo
    verdict() { awk -v t="$1" 'BEGIN { print (t < 2 ? "met" : "MISSED") }'; }
    echo "Target (issue 16): report on the $days-day monitor store under 2 s:" \
        "SQLite $(printf '%.2f' "$rep_s") s: $(verdict "$rep_s");" \
        "PostgreSQL $(printf '%.2f' "$rep_p") s: $(verdict "$rep_p")$([ "$days" = 30 ] || echo " (the target is for 30 days)")"
    echo
    cat "$tmp/targets.txt"
    if [ -n "$cp_disturbed" ]; then
        echo "WARNING: the p50 ratio of checkpoint pair(s) $cp_disturbed is more than 2x off the median: the machine was busy; run again"
    fi
    if [ -n "$disturbed" ]; then
        echo "WARNING: a pair's ratio is more than 2x off the median for:$disturbed the machine was busy; run again"
    fi
} >"$report"

cat "$report"

if [ "$results_file" = 1 ]; then
    mkdir -p "$(dirname "$out")"
    {
        cat "$report"
        echo
        echo "Details"
        echo
        echo "busiest processes at the start: $busy_start"
        echo "busiest processes at the end:   $busy_end"
        echo
        cat "$details"
        echo
        echo "Commands (run ids: runs store first/last SQLite $s_first/$s_last, PostgreSQL $p_first/$p_last; monitor run SQLite $s_mrun, PostgreSQL $p_mrun):"
        for i in "${!commands[@]}"; do
            echo "  $(label "$i"):"
            echo "    SQLite:     latscope $(command_line "${commands[$i]}" S)"
            echo "    PostgreSQL: latscope $(command_line "${commands[$i]}" P)"
        done
        echo
        echo "Raw command times (pair 0 = warm-up; pair, order, backend, command, seconds, peak RSS KB):"
        while read -r p o b i t m; do
            printf '  %s %s %s %-28s %s %s\n' "$p" "$o" "$b" "$(label "$i")" "$t" "$m"
        done <"$raw"
        echo
        echo "Raw checkpoint series (pair, order, backend, median, p99, mean, max µs):"
        sed 's/^/  /' "$cp_raw"
        echo
        echo "Every checkpoint's time, µs, in order (one line per series):"
        for f in "$tmp"/cp-*-*.us; do
            n="$(basename "$f" .us)"
            echo "  $n: $(tr '\n' ' ' <"$f")"
        done
    } >"$out"
    say "results written to ${out#"$repo"/}"
fi
