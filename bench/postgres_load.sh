#!/usr/bin/env bash
# Durable reports on PostgreSQL (bench/README.md, section "PostgreSQL"): in
# one run, on this machine, bench/server_load with W worker threads against
#   1. rungd on a fresh SQLite file (the default store),
#   1b. the same with --durability full (an fsync per commit, as
#      PostgreSQL's commits),
#   2. rungd on a fresh PostgreSQL database (--database-file),
# and the Optuna peer (bench/optuna_load.py, W processes) on
#   3. Optuna 3.1's RDBStorage on a fresh database of the same PostgreSQL
#      (psycopg2).
# The PostgreSQL is tests/postgres/cluster.sh's: Debian's postgresql-15 in a
# temporary folder on a loopback port (fsync on: a commit is durable), made
# and removed here. It prints each tool's lines, one JSON object per result,
# a table, and the target lines:
#   target postgres_reports_per_s: X (goal 5000) ok|short
#   target postgres_report_p99_ms: X (goal 20) ok|short
#   target postgres_vs_optuna_pg: X (goal 50) ok|short
#
# Usage: bash bench/postgres_load.sh
# Knobs (environment): PG_LOAD_WORKERS (8), PG_LOAD_TRIALS (2000 trials of
# 20 reports per Rung run), OPTUNA_SECONDS (10), RUNG_BUILD (default build/).
# Needs scripts/deps.sh --tests (postgresql-15) and python3-psycopg2
# (scripts/deps.sh --bench). Talks to 127.0.0.1 only, bounds its commands in
# time, and stops what it started.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
RUNGD=$BUILD/bin/rungd
LOAD=$BUILD/bin/server_load
W=${PG_LOAD_WORKERS:-8}
TRIALS=${PG_LOAD_TRIALS:-2000}
OPTUNA_SECONDS=${OPTUNA_SECONDS:-10}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/postgres_load.XXXXXX")
chmod 755 "$TMP" # the cluster's user reaches its folder inside
PG=$TMP/pg
RUNGD_PID=""

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $RUNGD_PID ]]; then
        kill -TERM "$RUNGD_PID" 2>/dev/null || true
        wait "$RUNGD_PID" 2>/dev/null || true
    fi
    bash "$ROOT/tests/postgres/cluster.sh" stop "$PG" >/dev/null 2>&1 || true
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for f in "$RUNGD" "$LOAD"; do
    [[ -x $f ]] || {
        echo "missing $f: cmake --build ${BUILD#"$ROOT"/} first" >&2
        exit 1
    }
done
echo "== postgres_load: durable reports on PostgreSQL, SQLite and Optuna's RDB storage =="
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(date -u +%Y-%m-%dT%H:%M:%SZ)"
bash "$ROOT/tests/postgres/cluster.sh" start "$PG"
conninfo=$(cat "$PG/conninfo")
declare -A kv
for item in $conninfo; do kv[${item%%=*}]=${item#*=}; done
psql_do() {
    PGPASSWORD=${kv[password]} psql -X -q -h "${kv[host]}" -p "${kv[port]}" -U "${kv[user]}" \
        -d postgres -c "$1" >/dev/null
}
psql_do "CREATE DATABASE rung_load"
psql_do "CREATE DATABASE optuna_load"
echo "${conninfo/dbname=rung/dbname=rung_load}" >"$TMP/rung.conn"
echo "postgresql+psycopg2://${kv[user]}:${kv[password]}@${kv[host]}:${kv[port]}/optuna_load" \
    >"$TMP/optuna.url"
chmod 600 "$TMP/rung.conn" "$TMP/optuna.url"

ROWS=()
# rungd on $1 (sqlite|postgresql), server_load against it; the JSON line.
rung_run() {
    local kind=$1 url="" i
    if [[ $kind == sqlite* ]]; then
        rm -f "$TMP/rung.db" "$TMP/rung.db-wal" "$TMP/rung.db-shm" "$TMP/rung.db.created"
        "$RUNGD" --port 0 --db "$TMP/rung.db" --durability "$([[ $kind == sqlite-full ]] && echo full || echo normal)" \
            >"$TMP/rungd-$kind.out" 2>"$TMP/rungd-$kind.err" &
    else
        "$RUNGD" --port 0 --database-file "$TMP/rung.conn" --data-dir "$TMP" \
            >"$TMP/rungd-$kind.out" 2>"$TMP/rungd-$kind.err" &
    fi
    RUNGD_PID=$!
    for ((i = 0; i < 100; i++)); do
        url=$(grep -oE -m1 'listening on http://127\.0\.0\.1:[0-9]+$' "$TMP/rungd-$kind.out" |
            sed 's/^listening on //' || true)
        [[ -n $url ]] && break
        sleep 0.1
    done
    [[ -n $url ]] || {
        echo "rungd ($kind) did not start: $(tail -c 400 "$TMP/rungd-$kind.err")" >&2
        exit 1
    }
    echo "# rung on $kind, W=$W, $TRIALS trials of 20 reports, against $url" >&2
    timeout --kill-after=10 300 "$LOAD" --server "$url" --workers "$W" --trials "$TRIALS" \
        --reports 20 --scheduler fifo --json >"$TMP/load-$kind.out" 2>&1
    kill -TERM "$RUNGD_PID"
    wait "$RUNGD_PID" || true
    RUNGD_PID=""
    grep -m1 '^{' "$TMP/load-$kind.out" | sed "s/^{/{\"store\":\"$kind\",/"
}

jget() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$1"; }

sqlite=$(rung_run sqlite)
echo "$sqlite"
sqlite_full=$(rung_run sqlite-full)
echo "$sqlite_full"
pg=$(rung_run postgresql)
echo "$pg"
echo "# optuna $(/usr/bin/python3 -c 'import optuna; print(optuna.__version__)') RDBStorage on the same PostgreSQL, W=$W processes, about $OPTUNA_SECONDS s" >&2
optuna=$(timeout --kill-after=10 $((OPTUNA_SECONDS + 180)) /usr/bin/python3 "$ROOT/bench/optuna_load.py" \
    --workers "$W" --seconds "$OPTUNA_SECONDS" --url-file "$TMP/optuna.url" --json |
    grep -m1 '^{')
echo "$optuna"

printf '%-22s %9s %9s %9s\n' "store" "reports/s" "p50 ms" "p99 ms"
for row in "$sqlite" "$sqlite_full" "$pg" "$optuna"; do
    name=$(jget "$row" impl)/$(jget "$row" store)$(jget "$row" storage)
    printf '%-22s %9s %9s %9s\n' "$name" "$(jget "$row" reports_per_s)" \
        "$(jget "$row" report_p50_ms)" "$(jget "$row" report_p99_ms)"
done
rps=$(jget "$pg" reports_per_s)
p99=$(jget "$pg" report_p99_ms)
orps=$(jget "$optuna" reports_per_s)
verdict() { awk -v x="$1" -v g="$2" -v up="$3" 'BEGIN { print ((up ? x >= g : x <= g) ? "ok" : "short") }'; }
ratio=$(awk -v a="$rps" -v b="$orps" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
echo "target postgres_reports_per_s: $rps (goal 5000) $(verdict "$rps" 5000 1)"
echo "target postgres_report_p99_ms: $p99 (goal 20) $(verdict "$p99" 20 0)"
echo "target postgres_vs_optuna_pg: $ratio (goal 50) $(verdict "$ratio" 50 1)"
