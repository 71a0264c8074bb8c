#!/usr/bin/env bash
# Scheduler throughput, Rung against Optuna in the same run (bench/README.md,
# section 1). For each W it starts a fresh rungd on a fresh SQLite file on a
# free loopback port, runs bench/server_load with W worker threads against
# it, stops it with SIGTERM and deletes the file; then one asha run at the
# best W (for information: a daemon without asha only gets a note); then the
# Optuna peer (bench/optuna_load.py) for about ten seconds per row. It prints
# each tool's lines, one JSON object per result, a table, and last the target
# lines of bench/README.md section 5. Exit status 1 when a fifo run failed.
#
# Usage: bash bench/server_load.sh
# Knobs (environment): SERVER_LOAD_WORKERS ("1 8 64"); trials per run are
# SERVER_LOAD_TRIALS_PER_WORKER (200) x W, kept within SERVER_LOAD_TRIALS_MIN
# (1000) and SERVER_LOAD_TRIALS_CAP (4000), a few seconds each; OPTUNA_SECONDS
# (10); OPTUNA_WORKERS ("1 8"); RUNG_BUILD (build directory, default build/).
#
# It only talks to 127.0.0.1, bounds every loop and command in count and
# time, and on any exit stops what it started and removes its temp files.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
RUNGD=$BUILD/bin/rungd
LOAD=$BUILD/bin/server_load
PEER_PY=/usr/bin/python3
PEER=$ROOT/bench/optuna_load.py
read -r -a WORKERS <<<"${SERVER_LOAD_WORKERS:-1 8 64}"
read -r -a OPTUNA_WORKERS <<<"${OPTUNA_WORKERS:-1 8}"
TRIALS_PER_WORKER=${SERVER_LOAD_TRIALS_PER_WORKER:-200}
TRIALS_MIN=${SERVER_LOAD_TRIALS_MIN:-1000}
TRIALS_CAP=${SERVER_LOAD_TRIALS_CAP:-4000}
OPTUNA_SECONDS=${OPTUNA_SECONDS:-10}
REPORTS=20
# Generous bounds: a healthy run takes seconds; beyond these something hangs.
LOAD_TIMEOUT_S=300
START_TIMEOUT_TENTHS=100 # rungd must print its address within 10 s
STOP_TIMEOUT_TENTHS=100  # and exit within 10 s of SIGTERM

TMP=$(mktemp -d "${TMPDIR:-/tmp}/server_load.XXXXXX")
RUNGD_PID=""
CHILD_PID=""
NOTES=()     # daemon and peer problems, printed before the targets
JSON_ROWS=() # one JSON object per result
TABLE=()     # rows of the table for a person

# Stops a process we started: SIGTERM, then SIGKILL after the bound.
stop_pid() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < STOP_TIMEOUT_TENTHS; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    return 1
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $CHILD_PID ]]; then
        stop_pid "$CHILD_PID" || true
    fi
    if [[ -n $RUNGD_PID ]]; then
        stop_pid "$RUNGD_PID" || true
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs a command in the background under `timeout` and waits for it, so
# that a signal to this script runs the trap at once. Output goes to $1.
run_bounded() {
    local out=$1 secs=$2 rc=0
    shift 2
    timeout --kill-after=10 "$secs" "$@" >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || rc=$?
    CHILD_PID=""
    return "$rc"
}

# Value of a top-level key in a one-line JSON object (numbers and strings).
jget() {
    sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$1"
}

# Trials for a run with W workers: a few seconds of work at any W.
trials_for() {
    local t=$((TRIALS_PER_WORKER * $1))
    ((t < TRIALS_MIN)) && t=$TRIALS_MIN
    ((t > TRIALS_CAP)) && t=$TRIALS_CAP
    echo "$t"
}

note() {
    NOTES+=("$*")
    echo "NOTE: $*"
}

add_row() { # impl sched W json
    local j=$4
    TABLE+=("$(printf '%-7s %-6s %4s %7s %8s %9s %10s %10s %10s' "$1" "$2" "$3" \
        "$(jget "$j" trials)" "$(jget "$j" wall_s)" "$(jget "$j" trials_per_s)" \
        "$(jget "$j" reports_per_s)" "$(jget "$j" report_p50_ms)" "$(jget "$j" report_p99_ms)")")
    JSON_ROWS+=("$j")
}

# Starts rungd on a fresh database; sets RUNGD_PID and URL, or returns 1.
start_rungd() {
    local tag=$1 i
    DB=$TMP/rung-$tag.db
    "$RUNGD" --bind 127.0.0.1 --port 0 --db "$DB" >"$TMP/rungd-$tag.out" 2>"$TMP/rungd-$tag.err" &
    RUNGD_PID=$!
    URL=""
    for ((i = 0; i < START_TIMEOUT_TENTHS; i++)); do
        URL=$(grep -oE -m1 'listening on http://127\.0\.0\.1:[0-9]+' "$TMP/rungd-$tag.out" |
            sed 's/^listening on //' || true)
        [[ -n $URL ]] && return 0
        if ! kill -0 "$RUNGD_PID" 2>/dev/null; then
            wait "$RUNGD_PID" || true
            note "rungd ($tag) exited before printing its address;" \
                "stderr: $(tail -c 600 "$TMP/rungd-$tag.err")"
            RUNGD_PID=""
            return 1
        fi
        sleep 0.1
    done
    note "rungd ($tag) printed no 'listening on http://127.0.0.1:PORT' within" \
        "$((START_TIMEOUT_TENTHS / 10)) s; stdout: $(head -c 300 "$TMP/rungd-$tag.out")"
    stop_pid "$RUNGD_PID" || true
    wait "$RUNGD_PID" 2>/dev/null || true
    RUNGD_PID=""
    return 1
}

# Stops rungd with SIGTERM and deletes its database; notes an unclean exit.
stop_rungd() {
    local tag=$1 rc=0
    if ! stop_pid "$RUNGD_PID"; then
        note "rungd ($tag) did not exit within $((STOP_TIMEOUT_TENTHS / 10)) s of SIGTERM; killed"
    fi
    wait "$RUNGD_PID" || rc=$?
    RUNGD_PID=""
    if ((rc != 0)); then
        note "rungd ($tag) exited with status $rc after SIGTERM;" \
            "stderr: $(tail -c 400 "$TMP/rungd-$tag.err")"
    fi
    rm -f "$DB" "$DB-wal" "$DB-shm" "$DB-journal"
}

# One Rung run: fresh rungd, server_load, stop. Prints the JSON line on
# success (in $RESULT) or returns 1.
rung_run() {
    local sched=$1 w=$2 trials=$3 tag="$1-w$2" rc=0
    RESULT=""
    start_rungd "$tag" || return 1
    echo "# rung $sched W=$w T=$trials against $URL"
    run_bounded "$TMP/load-$tag.out" "$LOAD_TIMEOUT_S" "$LOAD" --server "$URL" --workers "$w" \
        --trials "$trials" --reports "$REPORTS" --scheduler "$sched" --json || rc=$?
    grep -v '^{' "$TMP/load-$tag.out" || true
    stop_rungd "$tag"
    if ((rc != 0)); then
        # The first failure, without the request body: "POST /path -> reply".
        note "server_load $sched W=$w failed (exit $rc):" \
            "$(grep -m1 'FAIL: ' "$TMP/load-$tag.out" |
                sed 's/.*FAIL: \([A-Z]* [^ ]*\) .* -> /\1 -> /' | cut -c1-400)"
        return 1
    fi
    RESULT=$(grep -m1 '^{' "$TMP/load-$tag.out" || true)
    [[ -n $RESULT ]]
}

# The HTTP ceiling: the same W threads send GET /healthz, which rungd
# answers without its engine or database, on a fresh rungd. Prints the
# JSON line in $RESULT or returns 1.
floor_run() {
    local w=$1 n=$2 tag="floor-w$1" rc=0
    RESULT=""
    start_rungd "$tag" || return 1
    echo "# floor W=$w: $n GET /healthz against $URL"
    run_bounded "$TMP/load-$tag.out" "$LOAD_TIMEOUT_S" "$LOAD" --server "$URL" --workers "$w" \
        --floor "$n" --json || rc=$?
    grep -v '^{' "$TMP/load-$tag.out" || true
    stop_rungd "$tag"
    ((rc == 0)) || {
        note "server_load --floor W=$w failed (exit $rc)"
        return 1
    }
    RESULT=$(grep -m1 '^{' "$TMP/load-$tag.out" || true)
    [[ -n $RESULT ]]
}

echo "== server_load: scheduler throughput (bench/README.md section 1) =="
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
echo "host: $(nproc) cores, $cpu; $(date -u +%Y-%m-%dT%H:%M:%SZ)"

if [[ ! -x $LOAD || ! -x $RUNGD ]]; then
    echo "# building server_load and rungd in $BUILD"
    run_bounded "$TMP/build.out" 900 cmake -S "$ROOT" -B "$BUILD" || true
    run_bounded "$TMP/build.out" 900 cmake --build "$BUILD" -j2 --target server_load rungd ||
        tail -20 "$TMP/build.out"
fi

RUNG_OK=0
BEST_RUNG=""
FLOORS=() # per W: fifo reports against the HTTP floor
if [[ ! -x $LOAD ]]; then
    note "no $LOAD; build it with: cmake -S . -B build && cmake --build build -j2"
elif [[ ! -x $RUNGD ]]; then
    note "no $RUNGD yet; Rung cannot be measured"
else
    RUNG_OK=1
    best_rate=0
    best_w=""
    for w in "${WORKERS[@]}"; do
        trials=$(trials_for "$w")
        if rung_run fifo "$w" "$trials"; then
            add_row rung fifo "$w" "$RESULT"
            fifo_row=$RESULT
            if floor_run "$w" $((trials * REPORTS)); then
                JSON_ROWS+=("$RESULT")
                r_rate=$(jget "$fifo_row" reports_per_s)
                f_rate=$(jget "$RESULT" requests_per_s)
                f_ratio=$(awk -v a="$r_rate" -v b="$f_rate" 'BEGIN { printf "%.2f", a / b }')
                f_row="W=$w: reports $r_rate/s (p99 $(jget "$fifo_row" report_p99_ms) ms),"
                FLOORS+=("$f_row floor $f_rate/s (p99 $(jget "$RESULT" p99_ms) ms), ratio $f_ratio")
            fi
            RESULT=$fifo_row
            rate=$(jget "$RESULT" reports_per_s)
            if awk -v a="$rate" -v b="$best_rate" 'BEGIN { exit !(a > b) }'; then
                best_rate=$rate
                best_w=$w
                BEST_RUNG=$RESULT
            fi
        else
            RUNG_OK=0
        fi
    done
    if [[ -n $best_w ]]; then
        trials=$(trials_for "$best_w")
        # The asha row is for information: the targets use fifo, so a daemon
        # without asha is noted but does not fail the run.
        if rung_run asha "$best_w" "$trials"; then
            add_row rung asha "$best_w" "$RESULT"
        fi
    fi
fi

BEST_PEER=""
if [[ ! -x $PEER_PY ]] || ! "$PEER_PY" -c 'import optuna' 2>/dev/null; then
    note "peer not found: Optuna is not importable by $PEER_PY (Debian python3-optuna);" \
        "Rung measured alone"
else
    peer_best=0
    for w in "${OPTUNA_WORKERS[@]}"; do
        echo "# optuna W=$w for about $OPTUNA_SECONDS s"
        rc=0
        run_bounded "$TMP/optuna-w$w.out" $((OPTUNA_SECONDS + 120)) "$PEER_PY" "$PEER" \
            --workers "$w" --seconds "$OPTUNA_SECONDS" --reports "$REPORTS" --json || rc=$?
        grep -v '^{' "$TMP/optuna-w$w.out" || true
        line=$(grep -m1 '^{' "$TMP/optuna-w$w.out" || true)
        if ((rc != 0)) || [[ -z $line || $(jget "$line" failed) == true ]]; then
            note "optuna W=$w (processes sharing one SQLite file) failed (exit $rc); row left out"
            [[ -n $line ]] && JSON_ROWS+=("$line")
            continue
        fi
        add_row optuna sqlite "$w" "$line"
        rate=$(jget "$line" reports_per_s)
        if awk -v a="$rate" -v b="$peer_best" 'BEGIN { exit !(a > b) }'; then
            peer_best=$rate
            BEST_PEER=$line
        fi
    done
fi

echo
echo "== JSON =="
for j in "${JSON_ROWS[@]}"; do
    echo "$j"
done

echo
echo "== table (wall = first lease to last finish; latency of one report: Rung = one"
echo "   HTTP request, Optuna = trial.report + trial.should_prune) =="
printf '%-7s %-6s %4s %7s %8s %9s %10s %10s %10s\n' impl sched W trials wall_s trials/s \
    reports/s p50_ms p99_ms
for r in "${TABLE[@]}"; do
    echo "$r"
done

if ((${#NOTES[@]} > 0)); then
    echo
    echo "== notes (also shown where they happened) =="
    for n in "${NOTES[@]}"; do
        echo "NOTE: $n"
    done
fi
echo

# Target lines, last (bench/README.md section 5).
target() { # name value goal unit
    local verdict=short
    if [[ $2 != n/a ]] && awk -v a="$2" -v b="$3" 'BEGIN { exit !(a >= b) }'; then
        verdict=ok
    fi
    echo "target $1: $2$4 (goal $3$4) $verdict"
}
rps=n/a
tps=n/a
ratio=n/a
if [[ -n $BEST_RUNG ]]; then
    rps=$(jget "$BEST_RUNG" reports_per_s)
    tps=$(jget "$BEST_RUNG" trials_per_s)
    echo "best Rung row: fifo W=$(jget "$BEST_RUNG" workers)"
fi
if [[ -n $BEST_RUNG && -n $BEST_PEER ]]; then
    peer_rps=$(jget "$BEST_PEER" reports_per_s)
    ratio=$(awk -v a="$rps" -v b="$peer_rps" 'BEGIN { printf "%.1f", a / b }')
    echo "ratio against the best Optuna row: W=$(jget "$BEST_PEER" workers)"
fi
# How much of what HTTP alone allows on this host (GET /healthz on the same
# threads and connections, no engine, no database) the reports reach.
for f in "${FLOORS[@]}"; do
    echo "against the HTTP floor, $f"
done
target reports_per_s "$rps" 10000 ""
target trials_per_s "$tps" 1000 ""
target ratio_vs_optuna_reports "$ratio" 30 x

((RUNG_OK == 1)) || exit 1
