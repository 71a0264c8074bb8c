#!/usr/bin/env bash
# Population Based Training on a real trainer (bench/README.md,
# "Population Based Training on rung-train"): a real rungd on loopback and
# real rung-worker processes running rung-train on Fashion-MNIST (the
# default MLP, SGD with a cosine schedule over PBT_EPOCHS epochs, one report
# per epoch), tuning lr and momentum. Per seed, in turn:
#   pbt-synch   scheduler pbt, "synch": true, population PBT_POPULATION,
#               perturbation_interval PBT_INTERVAL, lr and momentum in
#               hyperparam_mutations, random initial configs;
#   pbt-async   the same with "synch": false;
#   pb2         scheduler pb2 (asynchronous, lr and momentum in
#               hyperparam_bounds), the same population and interval
#               (PBT_MODES says which of the three run);
#   asha-bayes  searcher bayes, scheduler asha (max_t PBT_EPOCHS,
#               grace_period 1, reduction_factor 3), constant lr and
#               momentum per trial, num_samples PBT_ASHA_SAMPLES (chosen so
#               that its epochs match PBT's; both totals are printed).
# The figure: the test accuracy of each experiment's best member (the
# trial that reached PBT_EPOCHS with the highest final val_acc, measured
# on 5,000 held-out training samples), read by resuming its last
# checkpoint for one epoch at lr 0 with val_samples 0. Per-seed values,
# medians, PBT/ASHA ratios, the epochs each arm ran, and under pbt where
# each exploit's weights came from (bench/pbt_bench.py has the details).
# It prints, never judges: the exit status is non-zero only on an error.
# It builds nothing: build rungd, rung-worker and rung-train first.
#
# Usage: nice bash bench/pbt.sh
# Knobs (environment): PBT_SEEDS (5), PBT_MODES (synch,async,pb2), PBT_EPOCHS
# (12), PBT_INTERVAL (3), PBT_POPULATION (8), PBT_ASHA_SAMPLES (18),
# PBT_SLOTS (2: CPU slots of the worker, one trial each), PBT_LR_MAX (0.3:
# the top of lr's loguniform domain, from 0.001), RUNG_BUILD
# (build directory, default build/). Cost on the shared 2-core host: 6 to
# 7.5 minutes a seed at the defaults with both modes, 31 to 38 minutes for
# the 5 seeds (bench/README.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${RUNG_BUILD:-$ROOT/build}
RUNGD=$BUILD/bin/rungd
WORKER=$BUILD/bin/rung-worker
TRAIN=$BUILD/bin/rung-train
PY=/usr/bin/python3
SEEDS=${PBT_SEEDS:-5}
MODES=${PBT_MODES:-synch,async,pb2}
EPOCHS=${PBT_EPOCHS:-12}
INTERVAL=${PBT_INTERVAL:-3}
POPULATION=${PBT_POPULATION:-8}
ASHA_SAMPLES=${PBT_ASHA_SAMPLES:-18}
SLOTS=${PBT_SLOTS:-2}
LR_MAX=${PBT_LR_MAX:-0.3}

for v in SEEDS EPOCHS INTERVAL POPULATION ASHA_SAMPLES SLOTS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "pbt: PBT_$v must be a positive whole number, not '${!v}'" >&2
        exit 2
    }
done
[[ $LR_MAX =~ ^[0-9]*\.?[0-9]+$ ]] || {
    echo "pbt: PBT_LR_MAX must be a positive number, not '$LR_MAX'" >&2
    exit 2
}
[[ $MODES =~ ^(synch|async|pb2)(,(synch|async|pb2))*$ ]] || {
    echo "pbt: PBT_MODES must be a comma-separated list of synch, async and pb2, not '$MODES'" >&2
    exit 2
}
[[ -x $PY ]] || { echo "pbt: $PY is missing (Debian python3)" >&2; exit 2; }
for b in "$RUNGD" "$WORKER" "$TRAIN"; do
    if [[ ! -x $b ]]; then
        echo "pbt: $b is missing: build it first (cmake -S . -B build &&" \
            "cmake --build build -j2 --target rungd rung-worker rung-train)" >&2
        exit 2
    fi
done

bench_start pbt

echo "== pbt: Population Based Training against asha+bayes on rung-train (Fashion-MNIST)," \
    "$SEEDS seed(s) =="
print_host
print_build "$BUILD" "$RUNGD"
"$TRAIN" --config '{"epochs": 1, "train_samples": 1000, "hidden": [32], "threads": 1}' \
    >/dev/null 2>"$TMP/probe.err" || true
core=$(sed -n 's/^rung-train: OpenBLAS core //p' "$TMP/probe.err" | head -1)
echo "rung-train: OpenBLAS core ${core:-unknown}; nice $(nice)"
echo

export TMPDIR=$TMP # the database, the workers' folders and the evaluation copies
start=$(date +%s)
if ! run_bounded "$TMP/out" $((SEEDS * 3600 + 600)) "$PY" "$ROOT/bench/pbt_bench.py" \
    --rungd "$RUNGD" --worker "$WORKER" --train "$TRAIN" --seeds "$SEEDS" \
    --modes "$MODES" --epochs "$EPOCHS" --interval "$INTERVAL" --population "$POPULATION" \
    --asha-samples "$ASHA_SAMPLES" --slots "$SLOTS" --lr-high "$LR_MAX"; then
    echo "pbt: the run failed (see above)" >&2
    exit 1
fi
echo
echo "== JSON =="
grep '^{' "$TMP/out" || true
echo
echo "wall: $(($(date +%s) - start)) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
print_notes
