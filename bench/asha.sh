#!/usr/bin/env bash
# Early stopping on the lc4 learning curves, Rung against Optuna in the same
# run (bench/README.md, section 3). Three steps, each under its own time limit:
#  1. build/bin/asha_bench --dump-only writes every curve to a temp file;
#  2. bench/optuna_asha.py, with Debian's /usr/bin/python3, replays those
#     curves with Optuna's SuccessiveHalvingPruner and HyperbandPruner, and
#     writes optuna-sh's budget per (W, seed) to a second temp file;
#  3. asha_bench runs Rung's fifo, asha, asha-promote, hyperband and median
#     schedulers (server/asha.c, in a simulation of W workers) on the same
#     curves, then the two equal-budget arms, given optuna-sh's budgets.
# It prints each tool's lines, the JSON objects, a table per W beside
# bench/README.md's reference figures, and last the target lines of
# bench/README.md section 5, each equal-budget one followed by a seed-by-seed
# comparison of the two arms (better / the same / worse). Exit status 1 when
# Rung's run failed. When asha_bench is missing it builds it in the build
# directory.
#
# Why equal-budget arms. Every arm of the table runs the same 100 trials per
# seed, but that does not give them the same budget: Ray's asha rule (Rung's
# asha) stops a trial only below the (1 - 1/rf) quantile of the rung, so more
# trials pass the early rungs than under Optuna's keep-the-top-floor(n/rf)
# rule, and it spends more steps (about 700 against 520); asha-promote
# spends fewer (about 490). The paper's ASHA is meant to run for a budget,
# sampling new configs as long as it lasts, not for a count of trials. So,
# per seed and W, from the same curves extended to ASHA_MAX_TRIALS trials
# (the first 100 unchanged):
#   rung-asha@sh-budget            rung-asha on the most trials N whose budget
#                                  is at most optuna-sh's measured one;
#   rung-asha-promote@asha-budget  asha-promote on the most trials N whose
#                                  budget is at most rung-asha's on 100.
# The targets compare both ways: at 100 trials each, and at equal budget.
#
# Usage: bash bench/asha.sh
# Knobs (environment): ASHA_SEEDS (10), ASHA_TRIALS (100), ASHA_MAX_TRIALS
# (400: the equal-budget arms' pool of trials per seed), ASHA_WORKERS (1,8),
# ASHA_JITTER (4: a trial's steps take 1..4 time units; 1: all take one),
# RUNG_TIMEOUT_S (300), OPTUNA_TIMEOUT_S (600), RUNG_BUILD (build directory,
# default build/).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
BENCH=$BUILD/bin/asha_bench
PEER_PY=/usr/bin/python3
PEER=$ROOT/bench/optuna_asha.py
SEEDS=${ASHA_SEEDS:-10}
TRIALS=${ASHA_TRIALS:-100}
MAX_TRIALS=${ASHA_MAX_TRIALS:-400}
WORKERS=${ASHA_WORKERS:-1,8}
JITTER=${ASHA_JITTER:-4}
RUNG_TIMEOUT_S=${RUNG_TIMEOUT_S:-300}
OPTUNA_TIMEOUT_S=${OPTUNA_TIMEOUT_S:-600}

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_start asha_bench

for v in SEEDS TRIALS MAX_TRIALS JITTER RUNG_TIMEOUT_S OPTUNA_TIMEOUT_S; do
    if [[ ! ${!v} =~ ^[0-9]+$ ]]; then
        echo "asha.sh: $v must be a whole number, not '${!v}'" >&2
        exit 2
    fi
done
if ((MAX_TRIALS < TRIALS)); then
    echo "asha.sh: ASHA_MAX_TRIALS ($MAX_TRIALS) must be at least ASHA_TRIALS ($TRIALS)" >&2
    exit 2
fi
if [[ ! $WORKERS =~ ^[0-9]+(,[0-9]+)*$ ]]; then
    echo "asha.sh: ASHA_WORKERS must be a comma-separated list of numbers, not '$WORKERS'" >&2
    exit 2
fi

echo "== asha: early stopping on lc4 (bench/README.md section 3) =="
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || true)
echo "host: $(nproc) cores, $cpu; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "seeds 0..$((SEEDS - 1)), $TRIALS trials each (equal-budget arms: up to $MAX_TRIALS)," \
    "W = $WORKERS, steps of 1..$JITTER time units"

if [[ ! -x $BENCH ]]; then
    echo "# building asha_bench in $BUILD"
    run_bounded "$TMP/build.out" 900 cmake -S "$ROOT" -B "$BUILD" || true
    run_bounded "$TMP/build.out" 900 cmake --build "$BUILD" -j2 --target asha_bench ||
        tail -20 "$TMP/build.out"
fi

RUNG_OK=1
CURVES=$TMP/curves.txt
SH_BUDGETS=$TMP/sh_budgets.txt
: >"$TMP/rung.out"
: >"$TMP/optuna.out"
if [[ ! -x $BENCH ]]; then
    note "no $BENCH; build it with: cmake -S . -B build && cmake --build build --target asha_bench"
    RUNG_OK=0
else
    echo
    echo "# curves: $BENCH --dump-only (time limit $RUNG_TIMEOUT_S s)"
    rc=0
    run_bounded "$TMP/dump.out" "$RUNG_TIMEOUT_S" "$BENCH" --seeds "$SEEDS" --trials "$TRIALS" \
        --jitter "$JITTER" --dump-curves "$CURVES" --dump-only || rc=$?
    if ((rc != 0)); then
        note "asha_bench --dump-only failed (exit $rc): $(tail -c 400 "$TMP/dump.out")"
        RUNG_OK=0
    fi
fi

if ((RUNG_OK == 0)) || [[ ! -s $CURVES ]]; then
    note "no curves from asha_bench: the Optuna peer has nothing to replay"
elif [[ ! -x $PEER_PY ]] || ! "$PEER_PY" -c 'import optuna' 2>/dev/null; then
    note "peer not found: Optuna is not importable by $PEER_PY (Debian python3-optuna);" \
        "Rung measured alone"
else
    echo
    echo "# optuna: SuccessiveHalvingPruner, HyperbandPruner (time limit $OPTUNA_TIMEOUT_S s)"
    rc=0
    run_bounded "$TMP/optuna.out" "$OPTUNA_TIMEOUT_S" "$PEER_PY" "$PEER" --curves "$CURVES" \
        --workers "$WORKERS" --sh-budgets "$SH_BUDGETS" --json || rc=$?
    if ((rc == 124 || rc == 137)); then
        note "optuna_asha ran past $OPTUNA_TIMEOUT_S s and was stopped; rows it finished are kept"
    elif ((rc != 0)); then
        note "optuna_asha failed (exit $rc): $(tail -c 400 "$TMP/optuna.out")"
    fi
fi

if ((RUNG_OK == 1)); then
    BUDGET_ARGS=()
    if [[ -s $SH_BUDGETS ]]; then
        BUDGET_ARGS=(--budget-file "$SH_BUDGETS")
    else
        note "no optuna-sh budgets: the arm rung-asha@sh-budget is not run"
    fi
    echo
    echo "# rung: $BENCH (time limit $RUNG_TIMEOUT_S s)"
    rc=0
    run_bounded "$TMP/rung.out" "$RUNG_TIMEOUT_S" "$BENCH" --seeds "$SEEDS" --trials "$TRIALS" \
        --max-trials "$MAX_TRIALS" --workers "$WORKERS" --jitter "$JITTER" \
        ${BUDGET_ARGS[@]+"${BUDGET_ARGS[@]}"} --json || rc=$?
    if ((rc == 124 || rc == 137)); then
        note "asha_bench ran past $RUNG_TIMEOUT_S s and was stopped; rows it finished are kept"
        RUNG_OK=0
    elif ((rc != 0)); then
        why=$(grep -m1 -E 'FAILED|breach|bad argument|wrong|cannot|budget"|memory' \
            "$TMP/rung.out" | cut -c1-400 || true)
        note "asha_bench failed (exit $rc): $why"
        RUNG_OK=0
    fi
fi

echo
echo "== JSON =="
cat "$TMP/rung.out" "$TMP/optuna.out" | grep '^{' || true

print_notes

# The tables and the targets, from the JSON lines of both runs.
SUMMARY_PY=$PEER_PY
[[ -x $SUMMARY_PY ]] || SUMMARY_PY=$(command -v python3 || true)
if [[ -z $SUMMARY_PY ]]; then
    echo "no python3 to summarize with; the JSON lines above are the results"
    exit $((RUNG_OK == 1 ? 0 : 1))
fi
"$SUMMARY_PY" - "$WORKERS" "$TMP/rung.out" "$TMP/optuna.out" <<'PY'
import json
import sys

workers = [int(w) for w in sys.argv[1].split(",")]
rows = {}
for path in sys.argv[2:]:
    with open(path) as fh:
        for text in fh:
            if text.startswith("{"):
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if line.get("bench") == "asha":
                    rows[(line["label"], line["workers"])] = line

LABELS = ["rung-fifo", "rung-asha", "rung-asha-promote", "rung-hyperband", "rung-median",
          "optuna-sh", "optuna-hb"]
# bench/README.md section 3: Optuna 3.1, 100 trials, 10 seeds, one worker.
REFERENCE = [("no stopping", 8100, 0.0120), ("optuna-sh", 563, 0.0488),
             ("optuna-hb", 1523, 0.0246)]


def f4(v):
    return "n/a" if v is None else f"{v:.4f}"


def get(label, w, key):
    r = rows.get((label, w))
    return None if r is None else r.get(key)


# The equal-budget arms, each with the arm whose per-seed budgets are its
# caps: optuna-sh's as Optuna measured them, rung-asha's on the fixed count.
EQ = [("rung-asha@sh-budget", "optuna-sh"), ("rung-asha-promote@asha-budget", "rung-asha")]
cap_notes = []

gstar = next((r["gstar"] for r in rows.values()), None)
print()
print("== tables: budget = steps reported (mean over seeds); regret = true regret of the trial")
print("   picked by its reported loss at t = 81, median [q1, q3] over seeds; nostop@budget =")
print("   no stopping's regret at the same budget (median); stopped / completed = mean trials"
      " per seed" + ("" if gstar is None else f"; g* = {gstar:.6f}") + " ==")
for w in workers:
    print()
    print(f"W = {w}")
    print(f"  {'arm':<19} {'budget':>8}  {'regret median [q1, q3]':<25} {'nostop@budget':>13} "
          f"{'stopped':>8} {'completed':>9}")
    for label in LABELS:
        r = rows.get((label, w))
        if r is None:
            continue
        cell = f"{f4(r['regret_median'])} [{f4(r['regret_q1'])}, {f4(r['regret_q3'])}]"
        print(f"  {label:<19} {r['budget_mean']:8.1f}  {cell:<25} "
              f"{f4(r['nostop_regret_median']):>13} {r['stopped_mean']:8.1f} "
              f"{r['completed_mean']:9.1f}")
    eq_rows = [(label, rows[(label, w)], src) for label, src in EQ if (label, w) in rows]
    if not eq_rows:
        continue
    print(f"  equal budget: each seed runs the arm on its first N trials, N the largest <= "
          f"{eq_rows[0][1]['max_trials']}")
    print("  whose budget is at most the seed's cap (N and cap: mean over seeds)")
    print(f"  {'arm':<29} {'N':>5} {'cap':>7} {'budget':>8}  {'regret median [q1, q3]':<25} "
          f"{'nostop@budget':>13} {'stopped':>8} {'completed':>9}")
    for label, r, src in eq_rows:
        cell = f"{f4(r['regret_median'])} [{f4(r['regret_q1'])}, {f4(r['regret_q3'])}]"
        print(f"  {label:<29} {r['n_trials_mean']:5.1f} {r['cap_mean']:7.1f} "
              f"{r['budget_mean']:8.1f}  {cell:<25} {f4(r['nostop_regret_median']):>13} "
              f"{r['stopped_mean']:8.1f} {r['completed_mean']:9.1f}")
        # The caps must be the budgets they claim to be, seed by seed.
        measured = get(src, w, "budget")
        if measured is None:
            cap_notes.append(f"{label}, W = {w}: no {src} row to check its caps against")
        elif measured != r["cap"]:
            cap_notes.append(f"{label}, W = {w}: caps {r['cap']} are not {src}'s budgets "
                             f"{measured}")
        else:
            print(f"  {'':<29} caps = {src}'s budgets, seed by seed")
print()
print("reference (bench/README.md, Optuna 3.1, W = 1, its own draws of lc4):")
for name, budget, regret in REFERENCE:
    print(f"  {name:<19} {budget:8,d}  {regret:.4f}")
print()
for n in cap_notes:
    print(f"NOTE: {n}")
if cap_notes:
    print()


def target(name, value, goal, ok, why=""):
    print(f"target {name}: {value} (goal {goal}) {'ok' if ok else 'short'}{why}")


for w in workers:
    ar, ab = get("rung-asha", w, "regret_median"), get("rung-asha", w, "budget_mean")
    sr, sb = get("optuna-sh", w, "regret_median"), get("optuna-sh", w, "budget_mean")
    name = f"asha_vs_optuna_sh_w{w} (100 trials each)"
    goal = "regret <= optuna-sh's at budget <= optuna-sh's"
    if None in (ar, ab, sr, sb):
        target(name, "n/a", goal, False)
    else:
        bad = [s for s, b in (("regret higher", ar > sr), ("budget higher", ab > sb)) if b]
        target(name, f"regret {ar:.4f} vs {sr:.4f}, budget {ab:.0f} vs {sb:.0f}", goal, not bad,
               f" ({', '.join(bad)})" if bad else "")
for w in workers:
    pr, pb = get("rung-asha-promote", w, "regret_median"), get("rung-asha-promote", w,
                                                               "budget_mean")
    ar, ab = get("rung-asha", w, "regret_median"), get("rung-asha", w, "budget_mean")
    name = f"promote_vs_asha_w{w} (100 trials each)"
    goal = "regret <= asha's at budget <= 1.1 x asha's"
    if None in (pr, pb, ar, ab):
        target(name, "n/a", goal, False)
    else:
        bad = [s for s, b in (("regret higher", pr > ar), ("budget over 1.1 x", pb > 1.1 * ab))
               if b]
        target(name, f"regret {pr:.4f} vs {ar:.4f}, budget {pb:.0f} vs {ab:.0f} "
               f"({pb / ab:.2f} x)", goal, not bad, f" ({', '.join(bad)})" if bad else "")


def quantile(v, p):
    """v sorted; linear between order statistics, as numpy's default."""
    x = (len(v) - 1) * p
    i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])


def equal_target(name, label, ref, ref_name, w, goal):
    """label's row at equal budget against ref's: median regret no higher,
    and every seed's budget within that seed's budget of ref."""
    er, eb = get(label, w, "regret_median"), get(label, w, "budget_mean")
    rr, rb = get(ref, w, "regret_median"), get(ref, w, "budget")
    if None in (er, eb, rr, rb):
        target(name, "n/a", goal, False)
        return
    seeds_over = sum(b > c for b, c in zip(get(label, w, "budget"), rb))
    bad = [s for s, b in (("regret higher", er > rr),
                          (f"budget higher on {seeds_over} seeds", seeds_over > 0)) if b]
    target(name, f"regret {er:.4f} vs {rr:.4f}, budget {eb:.0f} vs {sum(rb) / len(rb):.0f} "
           f"(no seed over: {'yes' if seeds_over == 0 else 'no'}), trials "
           f"{get(label, w, 'n_trials_mean'):.1f} vs {ref_name}", goal, not bad,
           f" ({', '.join(bad)})" if bad else "")
    # The same seeds run both arms, so a paired view says more than two
    # medians do when the spread between seeds is wide: on how many seeds
    # the arm picked a better, the same or a worse trial, and its regret
    # minus the other's, seed by seed.
    pairs = list(zip(get(label, w, "regret") or [], get(ref, w, "regret") or []))
    if pairs:
        # asha_bench writes 10 significant digits, Python all 17: the same
        # trial picked by both can differ in the last digits
        diff = sorted(0.0 if abs(e - r) < 1e-9 else e - r for e, r in pairs)
        print(f"  seed by seed against {ref}: better on {sum(d < 0 for d in diff)}, the same on "
              f"{sum(d == 0 for d in diff)}, worse on {sum(d > 0 for d in diff)} of "
              f"{len(diff)} seeds; regret difference mean {sum(diff) / len(diff):+.4f}, "
              f"q1 {quantile(diff, 0.25) + 0.0:+.4f}, q3 {quantile(diff, 0.75) + 0.0:+.4f}")


for w in workers:
    equal_target(f"asha_vs_optuna_sh_w{w}_equal_budget", "rung-asha@sh-budget", "optuna-sh",
                 f"{get('optuna-sh', w, 'trials')}", w,
                 "rung-asha@sh-budget's regret <= optuna-sh's, each seed's budget <= "
                 "optuna-sh's")
for w in workers:
    equal_target(f"promote_vs_asha_w{w}_equal_budget", "rung-asha-promote@asha-budget",
                 "rung-asha", f"{get('rung-asha', w, 'trials')}", w,
                 "rung-asha-promote@asha-budget's regret <= rung-asha's on 100 trials, each "
                 "seed's budget <= rung-asha's")
PY

((RUNG_OK == 1)) || exit 1
