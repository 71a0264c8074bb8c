#!/usr/bin/env bash
# Sampler quality, Rung against Optuna and a scikit-learn GP-EI in the same
# run (bench/README.md, section 2). It runs build/bin/sampler_quality (Rung's
# random, quasi, bayes, cmaes and tpe searchers), then bench/optuna_quality.py
# with Debian's /usr/bin/python3 (Optuna random, TPE, multivariate TPE, CMA-ES
# with IPOP restarts), then the
# scikit-learn GP-EI reference on fewer seeds (it fits a GP per point), each
# under its own time limit; a run cut short keeps the rows it finished. It
# prints each tool's lines, the JSON objects, a table per function, and last
# the target lines of bench/README.md section 5. Exit status 1 when Rung's run
# failed. It builds nothing: build sampler_quality first
# (cmake --build build --target sampler_quality).
#
# Usage: bash bench/sampler_quality.sh
# Knobs (environment): SAMPLER_QUALITY_SEEDS (20), SAMPLER_QUALITY_EVALS
# (100), SAMPLER_QUALITY_FUNCTIONS (branin,hartmann6,rosenbrock4,ackley5,levy4),
# SKLEARN_SEEDS (5; 0 skips the GP-EI reference), SKLEARN_RESTARTS (2),
# RUNG_TIMEOUT_S (1800), OPTUNA_TIMEOUT_S (1800), SKLEARN_TIMEOUT_S (1200),
# RUNG_BUILD (build directory, default build/).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
QUALITY=$BUILD/bin/sampler_quality
PEER_PY=/usr/bin/python3
PEER=$ROOT/bench/optuna_quality.py
SEEDS=${SAMPLER_QUALITY_SEEDS:-20}
EVALS=${SAMPLER_QUALITY_EVALS:-100}
FUNCTIONS=${SAMPLER_QUALITY_FUNCTIONS:-branin,hartmann6,rosenbrock4,ackley5,levy4}
SKLEARN_SEEDS=${SKLEARN_SEEDS:-5}
SKLEARN_RESTARTS=${SKLEARN_RESTARTS:-2}
RUNG_TIMEOUT_S=${RUNG_TIMEOUT_S:-1800}
OPTUNA_TIMEOUT_S=${OPTUNA_TIMEOUT_S:-1800}
SKLEARN_TIMEOUT_S=${SKLEARN_TIMEOUT_S:-1200}

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_start sampler_quality

for v in SEEDS EVALS SKLEARN_SEEDS SKLEARN_RESTARTS RUNG_TIMEOUT_S OPTUNA_TIMEOUT_S \
    SKLEARN_TIMEOUT_S; do
    if [[ ! ${!v} =~ ^[0-9]+$ ]]; then
        echo "sampler_quality.sh: $v must be a whole number, not '${!v}'" >&2
        exit 2
    fi
done

echo "== sampler_quality: searcher quality (bench/README.md section 2) =="
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
echo "host: $(nproc) cores, $cpu; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "seeds 0..$((SEEDS - 1)), $EVALS evaluations each, functions $FUNCTIONS;" \
    "sklearn-gp on seeds 0..$((SKLEARN_SEEDS - 1));" \
    "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-unset} OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"

RUNG_OK=1
: >"$TMP/rung.out"
if [[ ! -x $QUALITY ]]; then
    note "no $QUALITY; build it with: cmake -S . -B build && cmake --build build" \
        "--target sampler_quality"
    RUNG_OK=0
else
    echo
    echo "# rung: $QUALITY (time limit $RUNG_TIMEOUT_S s)"
    rc=0
    run_bounded "$TMP/rung.out" "$RUNG_TIMEOUT_S" "$QUALITY" --seeds "$SEEDS" --evals "$EVALS" \
        --functions "$FUNCTIONS" --json || rc=$?
    if ((rc == 124 || rc == 137)); then
        note "sampler_quality ran past $RUNG_TIMEOUT_S s and was stopped; rows it finished are kept"
        RUNG_OK=0
    elif ((rc != 0)); then
        note "sampler_quality failed (exit $rc): $(grep -m1 -E 'FAILED|bad argument' \
            "$TMP/rung.out" | cut -c1-400 || true)"
        RUNG_OK=0
    fi
fi

: >"$TMP/optuna.out"
: >"$TMP/sklearn.out"
if [[ ! -x $PEER_PY ]] || ! "$PEER_PY" -c 'import optuna' 2>/dev/null; then
    note "peer not found: Optuna is not importable by $PEER_PY (Debian python3-optuna);" \
        "Rung measured alone"
else
    echo
    echo "# optuna: random, tpe, tpe-mv, cmaes (time limit $OPTUNA_TIMEOUT_S s)"
    rc=0
    run_bounded "$TMP/optuna.out" "$OPTUNA_TIMEOUT_S" "$PEER_PY" "$PEER" --seeds "$SEEDS" \
        --evals "$EVALS" --functions "$FUNCTIONS" --samplers random,tpe,tpe-mv,cmaes --json || rc=$?
    if ((rc == 124 || rc == 137)); then
        note "optuna_quality ran past $OPTUNA_TIMEOUT_S s and was stopped; rows it finished" \
            "are kept"
    elif ((rc != 0)); then
        note "optuna_quality failed (exit $rc): $(tail -c 400 "$TMP/optuna.out")"
    fi
    if ((SKLEARN_SEEDS == 0)); then
        note "scikit-learn GP-EI reference skipped (SKLEARN_SEEDS=0)"
    elif ! "$PEER_PY" -c 'import sklearn, scipy.optimize' 2>/dev/null; then
        note "scikit-learn GP-EI reference not run: sklearn or scipy is not importable by $PEER_PY"
    else
        echo
        echo "# sklearn-gp: GP-EI on $SKLEARN_SEEDS seeds (time limit $SKLEARN_TIMEOUT_S s)"
        rc=0
        run_bounded "$TMP/sklearn.out" "$SKLEARN_TIMEOUT_S" "$PEER_PY" "$PEER" \
            --seeds "$SEEDS" --sklearn-seeds "$SKLEARN_SEEDS" --evals "$EVALS" \
            --functions "$FUNCTIONS" --samplers sklearn-gp \
            --sklearn-restarts "$SKLEARN_RESTARTS" --json || rc=$?
        if ((rc == 124 || rc == 137)); then
            note "sklearn-gp ran past $SKLEARN_TIMEOUT_S s and was stopped; rows it finished" \
                "are kept"
        elif ((rc != 0)); then
            note "sklearn-gp failed (exit $rc): $(tail -c 400 "$TMP/sklearn.out")"
        fi
    fi
fi

echo
echo "== JSON =="
cat "$TMP/rung.out" "$TMP/optuna.out" "$TMP/sklearn.out" | grep '^{' || true

print_notes

# The table and the targets, from the JSON lines of all three runs.
SUMMARY_PY=$PEER_PY
[[ -x $SUMMARY_PY ]] || SUMMARY_PY=$(command -v python3 || true)
if [[ -z $SUMMARY_PY ]]; then
    echo "no python3 to summarize with; the JSON lines above are the results"
    exit $((RUNG_OK == 1 ? 0 : 1))
fi
"$SUMMARY_PY" - "$FUNCTIONS" "$TMP/rung.out" "$TMP/optuna.out" "$TMP/sklearn.out" <<'PY'
import json
import sys

functions = sys.argv[1].split(",")
rows = {}
for path in sys.argv[2:]:
    with open(path) as fh:
        for text in fh:
            if text.startswith("{"):
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if line.get("bench") == "sampler_quality":
                    rows[(line["function"], line["label"])] = line

LABELS = ["rung-random", "rung-quasi", "rung-bayes", "rung-cmaes", "rung-tpe", "rung-auto", "optuna-random",
          "optuna-tpe", "optuna-tpe-mv", "optuna-cmaes", "sklearn-gp"]
CHECK = (25, 50, 100)


def usable(row):
    return row is not None and row.get("available", True) and not row.get("failed")


def cell(row, at):
    if not usable(row) or f"median_{at}" not in row:
        return "-"
    return f"{row[f'median_{at}']:.3g} [{row[f'q1_{at}']:.3g}, {row[f'q3_{at}']:.3g}]"


def median_at(fn, label, at):
    row = rows.get((fn, label))
    if not usable(row):
        return None
    return row.get(f"median_{at}")


print()
print("== table: simple regret (best so far - f*), median [q1, q3] over seeds; "
      "prop = median ms per proposal (at 50-99 observations) ==")
for fn in functions:
    print()
    print(f"{fn}")
    print(f"  {'searcher':<14} {'seeds':>5}  {'@25':<31} {'@50':<31} {'@100':<31} "
          f"{'prop_ms':>9} {'(50-99)':>9}")
    for label in LABELS:
        row = rows.get((fn, label))
        if row is None:
            continue
        if not row.get("available", True):
            print(f"  {label:<14} not available in this build")
            continue
        if row.get("failed"):
            print(f"  {label:<14} FAILED: {row.get('error', '')[:200]}")
            continue
        pm = row.get("prop_ms_median")
        pl = row.get("prop_ms_median_n50_99")
        print(f"  {label:<14} {row['seeds']:>5}  {cell(row, 25):<31} {cell(row, 50):<31} "
              f"{cell(row, 100):<31} {'-' if pm is None else f'{pm:.3g}':>9} "
              f"{'-' if pl is None else f'{pl:.3g}':>9}")
    ratios = []
    for at in (50, 100):
        b, t = median_at(fn, "rung-bayes", at), median_at(fn, "optuna-tpe", at)
        ratios.append("n/a" if b is None or t is None or t <= 0 else f"{b / t:.3g}")
    print(f"  ratio rung-bayes / optuna-tpe (medians): @50 {ratios[0]}  @100 {ratios[1]}")
    ratios = []
    for at in CHECK:
        c, o = median_at(fn, "rung-cmaes", at), median_at(fn, "optuna-cmaes", at)
        ratios.append("n/a" if c is None or o is None or o <= 0 else f"{c / o:.3g}")
    print(f"  ratio rung-cmaes / optuna-cmaes (medians): @25 {ratios[0]}  @50 {ratios[1]}"
          f"  @100 {ratios[2]}")
    ratios = []
    for at in CHECK:
        r, t = median_at(fn, "rung-tpe", at), median_at(fn, "optuna-tpe-mv", at)
        ratios.append("n/a" if r is None or t is None or t <= 0 else f"{r / t:.3g}")
    print(f"  ratio rung-tpe / optuna-tpe-mv (medians): @25 {ratios[0]}  @50 {ratios[1]}  "
          f"@100 {ratios[2]}")

# "No worse" than the GP-EI reference: rung-bayes' median regret at 100 is at
# most sklearn-gp's, or both are below 1e-5 (both found f*, which bench/README.md
# itself gives to 6 digits, so smaller differences are not a difference).
TIE = 1e-5
compared, no_worse, with_sklearn = [], 0, 0
for fn in functions:
    b, s = median_at(fn, "rung-bayes", 100), median_at(fn, "sklearn-gp", 100)
    if s is not None:
        with_sklearn += 1
    if b is None or s is None:
        continue
    ok = b <= s or (b <= TIE and s <= TIE)
    no_worse += ok
    compared.append(f"{fn:<12} {b:.3g} vs {s:.3g}: {'no worse' if ok else 'worse'}")
if compared:
    print()
    print("rung-bayes vs sklearn-gp, median regret at 100 (each over its own seeds; no worse ="
          f" rung <= sklearn, or both <= {TIE:g}):")
    for text in compared:
        print("  " + text)

print()


def target(name, value, goal_text, ok):
    print(f"target {name}: {value} (goal {goal_text}) {'ok' if ok else 'short'}")


for fn in functions:
    for at in (50, 100):
        b, t = median_at(fn, "rung-bayes", at), median_at(fn, "optuna-tpe", at)
        if b is None or t is None or t <= 0:
            target(f"bayes_vs_tpe_{fn}_{at}", "n/a", "< 1", False)
        else:
            target(f"bayes_vs_tpe_{fn}_{at}", f"{b / t:.3g}", "< 1", b / t < 1)
# Issue 40: rung's tpe beside the Optuna sampler it follows (multivariate TPE).
for fn in functions:
    for at in CHECK:
        r, t = median_at(fn, "rung-tpe", at), median_at(fn, "optuna-tpe-mv", at)
        if r is None or t is None or t <= 0:
            target(f"tpe_vs_optuna_tpe_mv_{fn}_{at}", "n/a", "<= 1", False)
        else:
            target(f"tpe_vs_optuna_tpe_mv_{fn}_{at}", f"{r / t:.3g}", "<= 1", r / t <= 1)
v = median_at("branin", "rung-bayes", 50)
target("branin_regret_50", "n/a" if v is None else f"{v:.3g}", "<= 1e-4",
       v is not None and v <= 1e-4)
v = median_at("hartmann6", "rung-bayes", 100)
target("hartmann6_regret_100", "n/a" if v is None else f"{v:.3g}", "<= 0.02",
       v is not None and v <= 0.02)
# A quarter of the seeds stuck in Hartmann-6's second peak (regret 0.119)
# shows in the third quartile, not in the median.
row = rows.get(("hartmann6", "rung-bayes"))
v = row.get("q3_100") if usable(row) else None
target("hartmann6_q3_regret_100", "n/a" if v is None else f"{v:.3g}", "<= 0.01",
       v is not None and v <= 0.01)
# CMA-ES (issue 40): Rung's median regret at least as good as Optuna's
# CmaEsSampler (IPOP) at 25, 50 and 100 evaluations, or both below TIE.
for fn in functions:
    for at in CHECK:
        c, o = median_at(fn, "rung-cmaes", at), median_at(fn, "optuna-cmaes", at)
        if c is None or o is None:
            target(f"cmaes_vs_optuna_cmaes_{fn}_{at}", "n/a", "<= optuna", False)
        else:
            target(f"cmaes_vs_optuna_cmaes_{fn}_{at}", f"{c:.3g} vs {o:.3g}", "<= optuna",
                   c <= o or (c <= TIE and o <= TIE))
if with_sklearn > 0:
    print(f"target bayes_vs_sklearn: {no_worse}/{with_sklearn} functions "
          f"no worse at 100 (goal {len(functions)}, every function) "
          f"{'ok' if no_worse >= len(functions) else 'short'}")
PY

((RUNG_OK == 1)) || exit 1
