#!/usr/bin/env bash
# Model-based asynchronous multi-fidelity search, Rung against Optuna in the
# same run (bench/README.md, "Multi-fidelity search"). On two benchmarks,
# lc4 (bench/asha.c's synthetic learning curves) and the Fashion-MNIST table
# (bench/data/fmnist-mlp-curves), with W = 4 and 16 simulated workers and the
# same simulated wall-clock budget for every arm:
#   build/bin/multifidelity_bench     random+asha, random+hyperband,
#                                     bayes+asha, bayes_mf+asha,
#                                     bayes_mf+hyperband, tpe+asha,
#                                     tpe_mf+asha, tpe_mf+hyperband,
#                                     tpe_mfb+hyperband, and random,
#                                     bayes_mf and tpe_mf under hyperband
#                                     with "allocation": "budget" (*_b)
#                                     (server/asha.h and the sampler
#                                     in-process)
#   bench/optuna_multifidelity.py     Optuna TPE (multivariate, constant liar)
#                                     with HyperbandPruner and with
#                                     SuccessiveHalvingPruner
# The C side runs lc4 then the table while the Python side does the same
# (two processes at once). Python first checks that it replays the C side's
# lc4 noise and durations and its table coordinates exactly. Then
# bench/multifidelity_report.py prints, per benchmark and W, each arm's
# median regret over seeds at fractions of the budget and at its end, the
# time each arm takes to reach random+asha's final median regret, and the
# target lines of bench/README.md section 5.
#
# With LCBENCH_DIR set (the LCBench data folder, bench/README.md section 10)
# LCBench's tasks through YAHPO Gym's surrogate are a third benchmark: the
# graph is exported (bench/lcbench_export.py, python3-onnx), and per task the
# C side runs `multifidelity_bench lcbench --task ID` and the Python side
# `optuna_multifidelity.py lcbench` (numpy's evaluator; checked against the
# C side's curve and given its best possible through --dump-table).
#
# Usage: bash bench/multifidelity.sh
# Knobs (environment): MF_SEEDS (20), MF_WORKERS (4,16), MF_LC4_WORKER_TIME
# (4000: the lc4 budget is T = 4000 / W time units), MF_FMNIST_WORKER_TIME
# (400: T = 400 / W simulated seconds), MF_STARTUP (1.0: seconds each run of
# a table trial costs before its first epoch), MF_JITTER (4: lc4 steps take
# 1..4 time units), MF_TIMEOUT_S (2400, per side), RUNG_BUILD (build
# directory, default build/). LCBench: LCBENCH_DIR, MF_LCB_TASKS (the 34
# task ids of config_space.json, or a comma-separated list), MF_LCB_SEEDS
# (10), MF_LCB_WORKER_TIME (20000: T = 20000 / W simulated seconds); and
# MF_BENCHES (lc4,fmnist, plus lcbench when LCBENCH_DIR is set) to run
# fewer benchmarks. MF_TIMEOUT_S bounds each LCBench task's run on a side.
# Measured (2026-11-29, 2 shared cores at load average ~4): 2 tasks x 3
# seeds took 423 s of wall time, 70 s a task and seed (36 s of CPU, both
# sides together): 34 tasks x 10 seeds would take about 6.6 hours at that
# rate (bench/README.md section 10).
#
# At the defaults the run takes about 17 minutes with the two sides at once
# on an idle 2-core machine (1,029 s measured); bench/README.md section 8
# has the measured table.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
BENCH=$BUILD/bin/multifidelity_bench
PEER_PY=/usr/bin/python3
PEER=$ROOT/bench/optuna_multifidelity.py
TABLE=$ROOT/bench/data/fmnist-mlp-curves
SEEDS=${MF_SEEDS:-20}
WORKERS=${MF_WORKERS:-4,16}
LC4_WT=${MF_LC4_WORKER_TIME:-4000}
FM_WT=${MF_FMNIST_WORKER_TIME:-400}
STARTUP=${MF_STARTUP:-1.0}
JITTER=${MF_JITTER:-4}
TIMEOUT_S=${MF_TIMEOUT_S:-2400}
LCB_DIR=${LCBENCH_DIR:-}
LCB_SEEDS=${MF_LCB_SEEDS:-10}
LCB_WT=${MF_LCB_WORKER_TIME:-20000}
LCB_TASKS=${MF_LCB_TASKS:-}
BENCHES=${MF_BENCHES:-lc4,fmnist}
if [[ -n $LCB_DIR && ,$BENCHES, != *,lcbench,* && -z ${MF_BENCHES:-} ]]; then
    BENCHES=$BENCHES,lcbench
fi
has() { [[ ,$BENCHES, == *,$1,* ]]; }

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_start multifidelity
PIDS=()
mf_cleanup() {
    local rc=$? p
    trap - EXIT INT TERM
    # Each side is a subshell running timeout, which passes TERM on to its
    # program: signal the subshell's children, then the subshell.
    for p in ${PIDS[@]+"${PIDS[@]}"}; do
        kill -TERM $(pgrep -P "$p") "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$TMP"
    exit "$rc"
}
trap mf_cleanup EXIT

for v in SEEDS JITTER TIMEOUT_S LC4_WT FM_WT LCB_SEEDS LCB_WT; do
    if [[ ! ${!v} =~ ^[0-9]+$ ]]; then
        echo "multifidelity.sh: $v must be a whole number, not '${!v}'" >&2
        exit 2
    fi
done
if [[ ! $STARTUP =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
    echo "multifidelity.sh: MF_STARTUP must be a number of seconds, not '$STARTUP'" >&2
    exit 2
fi
if [[ ! $WORKERS =~ ^[0-9]+(,[0-9]+)*$ ]]; then
    echo "multifidelity.sh: MF_WORKERS must be a comma-separated list of numbers" >&2
    exit 2
fi
if [[ ! $BENCHES =~ ^(lc4|fmnist|lcbench)(,(lc4|fmnist|lcbench))*$ ]]; then
    echo "multifidelity.sh: MF_BENCHES must be a comma-separated list of lc4, fmnist, lcbench" >&2
    exit 2
fi
if has lcbench; then
    if [[ -z $LCB_DIR || ! -f $LCB_DIR/model.onnx || ! -f $LCB_DIR/encoding.json ]]; then
        echo "multifidelity.sh: lcbench needs LCBENCH_DIR, the LCBench data folder (model.onnx," \
            "config_space.json, encoding.json); bench/README.md section 10 says where to get it" >&2
        exit 2
    fi
    if [[ -n $LCB_TASKS && ! $LCB_TASKS =~ ^[0-9]+(,[0-9]+)*$ ]]; then
        echo "multifidelity.sh: MF_LCB_TASKS must be a comma-separated list of task ids" >&2
        exit 2
    fi
fi

echo "== multifidelity: model-based asynchronous multi-fidelity search =="
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
echo "host: $(nproc) cores, $cpu; load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "seeds 0..$((SEEDS - 1)), W = $WORKERS; lc4: T = $LC4_WT / W time units, steps of" \
    "1..$JITTER; fmnist table: T = $FM_WT / W s, start-up $STARTUP s a run"

if [[ ! -x $BENCH ]]; then
    echo "# building multifidelity_bench in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" >"$TMP/build.out" 2>&1 || true
    cmake --build "$BUILD" -j2 --target multifidelity_bench >>"$TMP/build.out" 2>&1 ||
        tail -20 "$TMP/build.out"
fi
if [[ ! -x $BENCH ]]; then
    echo "multifidelity.sh: no $BENCH; build it with cmake --build build" \
        "--target multifidelity_bench" >&2
    exit 1
fi

gzip -dc "$TABLE/curves.jsonl.gz" >"$TMP/curves.jsonl"
# The files the Python side checks itself against (no runs: --seeds 0).
"$BENCH" lc4 --seeds 0 --jitter "$JITTER" --check-lc4 "$TMP/lc4check.jsonl" 2>/dev/null
"$BENCH" fmnist --space "$TABLE/space.json" --curves "$TMP/curves.jsonl" --seeds 0 \
    --dump-table "$TMP/table.json" 2>/dev/null
TASKS=()
if has lcbench; then
    "$PEER_PY" "$ROOT/bench/lcbench_export.py" export "$LCB_DIR" "$TMP/lcbench-graph"
    if [[ -z $LCB_TASKS ]]; then
        LCB_TASKS=$("$PEER_PY" -c 'import json, sys
print(",".join(str(t) for t in json.load(open(sys.argv[1]))["task_ids"]))' \
            "$TMP/lcbench-graph/lcbench_graph.json")
    fi
    IFS=, read -r -a TASKS <<<"$LCB_TASKS"
    echo "lcbench: ${#TASKS[@]} tasks, seeds 0..$((LCB_SEEDS - 1)), T = $LCB_WT / W s"
    for task in "${TASKS[@]}"; do
        "$BENCH" lcbench --lcbench "$TMP/lcbench-graph" --task "$task" --seeds 0 \
            --dump-table "$TMP/lcb-$task.json" 2>/dev/null
    done
fi

t0=$(date +%s)
: >"$TMP/rung.out"
: >"$TMP/rung.err"
(
    set -e
    # one OpenBLAS thread: the surrogate's batches are 52 rows
    export OPENBLAS_NUM_THREADS=1
    if has lc4; then
        timeout --kill-after=10 "$TIMEOUT_S" "$BENCH" lc4 --seeds "$SEEDS" --workers "$WORKERS" \
            --worker-time "$LC4_WT" --jitter "$JITTER" >>"$TMP/rung.out" 2>>"$TMP/rung.err"
    fi
    if has fmnist; then
        timeout --kill-after=10 "$TIMEOUT_S" "$BENCH" fmnist --space "$TABLE/space.json" \
            --curves "$TMP/curves.jsonl" --seeds "$SEEDS" --workers "$WORKERS" \
            --worker-time "$FM_WT" --startup "$STARTUP" >>"$TMP/rung.out" 2>>"$TMP/rung.err"
    fi
    for task in ${TASKS[@]+"${TASKS[@]}"}; do
        timeout --kill-after=10 "$TIMEOUT_S" "$BENCH" lcbench --lcbench "$TMP/lcbench-graph" \
            --task "$task" --seeds "$LCB_SEEDS" --workers "$WORKERS" --worker-time "$LCB_WT" \
            >>"$TMP/rung.out" 2>>"$TMP/rung.err"
    done
) &
PIDS+=($!)
PEER_OK=1
if [[ ! -x $PEER_PY ]] || ! "$PEER_PY" -c 'import optuna' 2>/dev/null; then
    note "peer not found: Optuna is not importable by $PEER_PY; Rung measured alone"
    PEER_OK=0
    : >"$TMP/optuna.out"
else
    : >"$TMP/optuna.out"
    : >"$TMP/optuna.err"
    (
        set -e
        export OPENBLAS_NUM_THREADS=1
        if has lc4; then
            timeout --kill-after=10 "$TIMEOUT_S" "$PEER_PY" "$PEER" lc4 --seeds "$SEEDS" \
                --workers "$WORKERS" --worker-time "$LC4_WT" --jitter "$JITTER" \
                --check "$TMP/lc4check.jsonl" >>"$TMP/optuna.out" 2>>"$TMP/optuna.err"
        fi
        if has fmnist; then
            timeout --kill-after=10 "$TIMEOUT_S" "$PEER_PY" "$PEER" fmnist \
                --space "$TABLE/space.json" --curves "$TABLE/curves.jsonl.gz" \
                --seeds "$SEEDS" --workers "$WORKERS" --worker-time "$FM_WT" \
                --startup "$STARTUP" --check "$TMP/table.json" >>"$TMP/optuna.out" \
                2>>"$TMP/optuna.err"
        fi
        for task in ${TASKS[@]+"${TASKS[@]}"}; do
            timeout --kill-after=10 "$TIMEOUT_S" "$PEER_PY" "$PEER" lcbench \
                --lcbench "$TMP/lcbench-graph" --task "$task" --seeds "$LCB_SEEDS" \
                --workers "$WORKERS" --worker-time "$LCB_WT" --check "$TMP/lcb-$task.json" \
                >>"$TMP/optuna.out" 2>>"$TMP/optuna.err"
        done
    ) &
    PIDS+=($!)
fi
RUNG_RC=0
wait "${PIDS[0]}" || RUNG_RC=$?
if ((RUNG_RC != 0)); then
    note "multifidelity_bench failed or ran past $TIMEOUT_S s (exit $RUNG_RC):" \
        "$(tail -c 400 "$TMP/rung.err")"
fi
if ((PEER_OK == 1)); then
    rc=0
    wait "${PIDS[1]}" || rc=$?
    if ((rc != 0)); then
        note "optuna_multifidelity failed or ran past $TIMEOUT_S s (exit $rc):" \
            "$(tail -c 400 "$TMP/optuna.err")"
    fi
fi
PIDS=()
echo "# both sides done in $(($(date +%s) - t0)) s of wall time"
cat "$TMP/rung.err" "$TMP/optuna.err" 2>/dev/null | grep -v '^{' || true

echo
echo "== JSON =="
cat "$TMP/rung.out" "$TMP/optuna.out" | grep '^{' || true

print_notes

SUMMARY_PY=$PEER_PY
[[ -x $SUMMARY_PY ]] || SUMMARY_PY=$(command -v python3 || true)
if [[ -z $SUMMARY_PY ]]; then
    echo "no python3 to summarize with; the JSON lines above are the results"
    exit $((RUNG_RC == 0 ? 0 : 1))
fi
"$SUMMARY_PY" "$ROOT/bench/multifidelity_report.py" "$TMP/rung.out" "$TMP/optuna.out"
exit $((RUNG_RC == 0 ? 0 : 1))
