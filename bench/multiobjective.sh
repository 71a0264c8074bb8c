#!/usr/bin/env bash
# Several objectives and constraints (docs/searchers.md): Rung's bayes
# searcher (BUILD/bin/multiobjective_bench, bench/multiobjective.c) against
# Optuna's NSGAIISampler and TPESampler (multivariate; MOTPE with several
# objectives; constraints_func for the constrained problems) in the same
# run (bench/optuna_multiobjective.py with Debian's /usr/bin/python3; both
# drivers run at once, one core each). Problems and reference points are in
# bench/README.md. It prints the median hypervolume of the feasible points
# after 50 and 100 evaluations (constrained Branin: the median regret of the
# best feasible point), the ratios of rung-bayes to each peer, and the
# BraninCurrin target (>= 97% of the maximum hypervolume, 59.36011874867746,
# after 86 evaluations). It prints, never judges: the exit status is 1 only
# when a driver failed. Build multiobjective_bench first.
#
# Usage: bash bench/multiobjective.sh [PROBLEM...]
# Knobs (environment): MULTIOBJECTIVE_SEEDS (20), RUNG_BUILD (default build/).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
SEEDS=${MULTIOBJECTIVE_SEEDS:-20}
if [[ ! $SEEDS =~ ^[1-9][0-9]*$ ]]; then
    echo "multiobjective.sh: MULTIOBJECTIVE_SEEDS must be a positive whole number" >&2
    exit 2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "== multiobjective: $SEEDS seeds, 100 evaluations =="
echo "host: $(nproc) cores; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
"$BUILD/bin/multiobjective_bench" "$SEEDS" 100 "$@" >"$TMP/rung.json" &
RUNG=$!
/usr/bin/python3 -W ignore "$ROOT/bench/optuna_multiobjective.py" "$SEEDS" 100 "$@" \
    >"$TMP/optuna.json"
wait "$RUNG"

/usr/bin/python3 - "$TMP/rung.json" "$TMP/optuna.json" <<'PY'
import json
import statistics
import sys

runs = {}
order = []
for path in sys.argv[1:3]:
    for line in open(path):
        o = json.loads(line)
        runs[(o["searcher"], o["problem"])] = o["at"]
        if o["problem"] not in order:
            order.append(o["problem"])
peers = ("rung-bayes", "optuna-nsga2", "optuna-tpe")
med = lambda s, p, e: statistics.median(runs[(s, p)][e])
for p in order:
    what = "median regret of the best feasible point" if p == "cbranin" else \
        "median hypervolume of the feasible points"
    print("\n%s: %s" % (p, what))
    print("%-14s%14s%14s" % ("searcher", "@50", "@100"))
    for s in peers:
        print("%-14s%14.5f%14.5f" % (s, med(s, p, "50"), med(s, p, "100")))
    for e in ("50", "100"):
        b = med("rung-bayes", p, e)
        ratios = []
        for s in peers[1:]:
            o = med(s, p, e)
            ratios.append("%s %s" % (s, "%.3f" % (b / o) if o > 0 else "n/a"))
        better = "lower" if p == "cbranin" else "higher"
        print("target: rung-bayes %s than both at %s evaluations; rung-bayes / peer: %s"
              % (better, e, ", ".join(ratios)))
if ("rung-bayes", "branincurrin") in runs:
    b = med("rung-bayes", "branincurrin", "86")
    print("\ntarget: branincurrin >= 97%% of the maximum hypervolume 59.3601 after 86 "
          "evaluations: rung-bayes median %.4f = %.2f%%" % (b, 100 * b / 59.36011874867746))
PY
