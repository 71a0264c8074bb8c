#!/usr/bin/env bash
# Conditional spaces on a real trainer: examples/fmnist-conditional.json's
# space (an optimizer choice of sgd {lr, momentum, nesterov} or adamw {lr,
# beta2, weight_decay}, a network choice of 1, 2 or 3 hidden layers with
# per-layer widths, dropout), every config trained by rung-train on
# Fashion-MNIST. Rung's bayes and random searchers (BUILD/bin/
# conditional_fmnist, in-process through the sampler API) and Optuna's TPE
# (multivariate, group) and random (bench/optuna_conditional_fmnist.py,
# define-by-run over the same space) run at once, each evaluation the same
# command: rung-train --config '{config, "seed": 0, "threads": 1}', its last
# @rung line's val_loss. It prints the median over seeds of the best
# val_loss after 25 and 50 evaluations. It prints, never judges: the exit
# status is 1 only when a driver failed. It builds nothing: build rung-train
# and conditional_fmnist first.
#
# Usage: bash bench/conditional_fmnist.sh
# Knobs (environment): CF_SEEDS (5), CF_EVALS (50), CF_TRAIN_SAMPLES
# (10000; a tenth of them held out for val_loss), CF_EPOCHS (3),
# RUNG_BUILD (build directory, default build/). At the defaults, 1,000
# rung-train runs of about a second each: 21 minutes of wall time in one run
# on a busy 2-core host (bench/README.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
SEEDS=${CF_SEEDS:-5}
EVALS=${CF_EVALS:-50}
SAMPLES=${CF_TRAIN_SAMPLES:-10000}
EPOCHS=${CF_EPOCHS:-3}
SPEC=$ROOT/examples/fmnist-conditional.json
TRAIN=$BUILD/bin/rung-train
for v in SEEDS EVALS SAMPLES EPOCHS; do
    if [[ ! ${!v} =~ ^[1-9][0-9]*$ ]]; then
        echo "conditional_fmnist.sh: $v must be a positive whole number, not '${!v}'" >&2
        exit 2
    fi
done
for p in "$TRAIN" "$BUILD/bin/conditional_fmnist"; do
    if [[ ! -x $p ]]; then
        echo "conditional_fmnist.sh: $p is missing: build it first" >&2
        exit 2
    fi
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "== conditional_fmnist: examples/fmnist-conditional.json's space on rung-train," \
    "$SEEDS seeds, $EVALS evaluations =="
echo "host: $(nproc) cores; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# What every evaluation runs on: one probe run's kernel line.
"$TRAIN" --config '{"epochs": 1, "train_samples": 1000, "hidden": [32], "threads": 1}' \
    >/dev/null 2>"$TMP/probe.err" || true
core=$(sed -n 's/^rung-train: OpenBLAS core //p' "$TMP/probe.err" | head -1)
echo "rung-train: $SAMPLES training samples (a tenth held out), $EPOCHS epochs, seed 0," \
    "1 rank, 1 OpenBLAS thread, OpenBLAS core ${core:-unknown}; the two drivers run at once"

start=$(date +%s)
"$BUILD/bin/conditional_fmnist" "$TRAIN" "$SPEC" "$SEEDS" "$EVALS" "$SAMPLES" "$EPOCHS" \
    >"$TMP/rung.json" 2>"$TMP/rung.err" &
rung_pid=$!
/usr/bin/python3 "$ROOT/bench/optuna_conditional_fmnist.py" "$TRAIN" "$SPEC" "$SEEDS" "$EVALS" \
    "$SAMPLES" "$EPOCHS" >"$TMP/optuna.json" 2>"$TMP/optuna.err" &
optuna_pid=$!
status=0
wait "$rung_pid" || { echo "conditional_fmnist.sh: the Rung driver failed:" >&2; status=1; }
wait "$optuna_pid" || { echo "conditional_fmnist.sh: the Optuna driver failed:" >&2; status=1; }
if [[ $status != 0 ]]; then
    tail -5 "$TMP/rung.err" "$TMP/optuna.err" >&2
    exit 1
fi
echo "wall: $(($(date +%s) - start)) s"

/usr/bin/python3 - "$TMP/rung.json" "$TMP/optuna.json" "$EVALS" <<'PY'
import json
import math
import statistics
import sys

runs = {}
for path in sys.argv[1:3]:
    for line in open(path):
        o = json.loads(line)
        runs[o["searcher"]] = o
evals = int(sys.argv[3])
points = sorted({e for e in (25, 50, evals) if e <= evals})


def median_at(name, e):
    return statistics.median(math.inf if row[e - 1] is None else row[e - 1]
                             for row in runs[name]["best"])


print("median best val_loss over %d seeds" % len(runs["rung-bayes"]["best"]))
print("%-14s" % "searcher" + "".join("%12s" % ("@%d" % e) for e in points)
      + "%10s%10s" % ("failed", "seconds"))
for name in ("rung-bayes", "optuna-tpe", "rung-random", "optuna-random"):
    o = runs[name]
    print("%-14s" % name + "".join("%12.5f" % median_at(name, e) for e in points)
          + "%10d%10.0f" % (o["failed"], o["seconds"]))
for e in points:
    b, t = median_at("rung-bayes", e), median_at("optuna-tpe", e)
    print("rung-bayes - optuna-tpe at %d evaluations: %+.5f" % (e, b - t))
for name in ("rung-bayes", "optuna-tpe", "rung-random", "optuna-random"):
    print(json.dumps({"searcher": name, "evals": evals,
                      "median": {str(e): median_at(name, e) for e in points},
                      "failed": runs[name]["failed"], "seconds": runs[name]["seconds"]}))
PY
