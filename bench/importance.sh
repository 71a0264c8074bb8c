#!/usr/bin/env bash
# Parameter importance, Rung's fANOVA (sampler/fanova.c) against Optuna's
# FanovaImportanceEvaluator on the same trials (bench/README.md, "Parameter
# importance"). For each seed, build/bin/importance_bench draws 200 trials of
# the known-truth function of bench/importance.c (6 parameters, one of them
# categorical; importance order x0, x1, x2, c5, x3, x4), computes Rung's
# importances and writes the trials to a CSV file that bench/importance_peer.py
# (Debian's /usr/bin/python3) hands to Optuna with the same seed. Per seed it
# prints the Spearman rank correlation between the two, and whether each side
# has x0 and x1 as its top two; then the time of 10,000 trials x 10
# parameters: Rung's (median of 3), and Optuna's on 1,000 x 10 and, within a
# time limit, on the same 10,000 x 10 data. Pure C and Python: no BLAS kernel
# is involved. It installs python3-sklearn (apt-get, as root) when sklearn is
# not importable. It builds nothing: build importance_bench first
# (cmake --build build --target importance_bench).
#
# Usage: bash bench/importance.sh
# Knobs (environment): IMPORTANCE_SEEDS (20), IMPORTANCE_N (200),
# OPTUNA_SMALL_N (1000; 0 skips), OPTUNA_10K_TIMEOUT_S (300; 0 skips Optuna on
# 10,000 trials), OPTUNA_TIMEOUT_S (1800, the seeds' run), RUNG_BUILD
# (build directory, default build/).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${RUNG_BUILD:-$ROOT/build}
BENCH=$BUILD/bin/importance_bench
PEER_PY=/usr/bin/python3
PEER=$ROOT/bench/importance_peer.py
SEEDS=${IMPORTANCE_SEEDS:-20}
N=${IMPORTANCE_N:-200}
OPTUNA_SMALL_N=${OPTUNA_SMALL_N:-1000}
OPTUNA_10K_TIMEOUT_S=${OPTUNA_10K_TIMEOUT_S:-300}
OPTUNA_TIMEOUT_S=${OPTUNA_TIMEOUT_S:-1800}

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_start importance

for v in SEEDS N OPTUNA_SMALL_N OPTUNA_10K_TIMEOUT_S OPTUNA_TIMEOUT_S; do
    if [[ ! ${!v} =~ ^[0-9]+$ ]]; then
        echo "importance.sh: $v must be a whole number, not '${!v}'" >&2
        exit 2
    fi
done

echo "== importance: fANOVA parameter importance (bench/README.md, Parameter importance) =="
print_host
echo "seeds 0..$((SEEDS - 1)), $N trials each; no BLAS (pure C and Python)"
if [[ ! -x $BENCH ]]; then
    echo "no $BENCH; build it with: cmake -S . -B build && cmake --build build" \
        "--target importance_bench" >&2
    exit 1
fi

PEER_OK=1
if ! "$PEER_PY" -c 'import optuna' 2>/dev/null; then
    note "Optuna is not importable by $PEER_PY (Debian python3-optuna); Rung measured alone"
    PEER_OK=0
elif ! "$PEER_PY" -c 'import sklearn' 2>/dev/null; then
    echo "sklearn missing: apt-get install -y python3-sklearn"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y python3-sklearn >"$TMP/apt.log" 2>&1 ||
        ! "$PEER_PY" -c 'import sklearn' 2>/dev/null; then
        note "python3-sklearn could not be installed ($(tail -n 1 "$TMP/apt.log"));" \
            "Rung measured alone"
        PEER_OK=0
    fi
fi

echo
echo "# rung: $SEEDS seeds"
: >"$TMP/rung.out"
ARGS=()
for ((s = 0; s < SEEDS; s++)); do
    "$BENCH" --seed "$s" --n "$N" --csv "$TMP/seed$s.csv" >>"$TMP/rung.out"
    ARGS+=("$s:$TMP/seed$s.csv")
done
echo "# rung: 10,000 x 10 (median of 3)"
"$BENCH" --seed 1 --n 10000 --d 10 --repeat 3 --csv "$TMP/big.csv" | tee "$TMP/rung_big.out" |
    cut -c1-160
if ((OPTUNA_SMALL_N > 0)); then
    "$BENCH" --seed 1 --n "$OPTUNA_SMALL_N" --d 10 --repeat 3 --csv "$TMP/small.csv" |
        tee "$TMP/rung_small.out" | cut -c1-160
else
    : >"$TMP/rung_small.out"
fi

: >"$TMP/optuna.out"
: >"$TMP/optuna_small.out"
: >"$TMP/optuna_big.out"
if ((PEER_OK == 1)); then
    echo
    echo "# optuna: $SEEDS seeds (time limit $OPTUNA_TIMEOUT_S s)"
    rc=0
    run_bounded "$TMP/optuna.out" "$OPTUNA_TIMEOUT_S" "$PEER_PY" "$PEER" "${ARGS[@]}" || rc=$?
    ((rc == 0)) || note "importance_peer.py on the seeds ended with exit $rc; rows it finished" \
        "are kept: $(grep -v '^{' "$TMP/optuna.out" | tail -c 300)"
    if ((OPTUNA_SMALL_N > 0)); then
        echo "# optuna: $OPTUNA_SMALL_N x 10"
        rc=0
        run_bounded "$TMP/optuna_small.out" "$OPTUNA_TIMEOUT_S" "$PEER_PY" "$PEER" \
            "1:$TMP/small.csv" || rc=$?
        ((rc == 0)) || note "Optuna on $OPTUNA_SMALL_N x 10 ended with exit $rc"
    fi
    if ((OPTUNA_10K_TIMEOUT_S > 0)); then
        echo "# optuna: 10,000 x 10 (time limit $OPTUNA_10K_TIMEOUT_S s)"
        rc=0
        run_bounded "$TMP/optuna_big.out" "$OPTUNA_10K_TIMEOUT_S" "$PEER_PY" "$PEER" \
            "1:$TMP/big.csv" || rc=$?
        if ((rc == 124 || rc == 137)); then
            note "Optuna on 10,000 x 10 did not finish within $OPTUNA_10K_TIMEOUT_S s"
        elif ((rc != 0)); then
            note "Optuna on 10,000 x 10 ended with exit $rc"
        fi
    fi
fi

echo
echo "== JSON =="
cat "$TMP/rung.out" "$TMP/rung_small.out" "$TMP/rung_big.out" "$TMP/optuna.out" \
    "$TMP/optuna_small.out" "$TMP/optuna_big.out" | grep '^{' || true
print_notes

"$PEER_PY" - "$TMP" "$SEEDS" "$OPTUNA_10K_TIMEOUT_S" <<'PY'
import json
import os
import statistics
import sys

tmp, seeds, big_limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def lines(name):
    out = []
    with open(os.path.join(tmp, name)) as fh:
        for text in fh:
            if text.startswith("{"):
                out.append(json.loads(text))
    return out


def ranks(v):
    """Ranks 1..n (1 = most important), ties given their mean rank."""
    order = sorted(range(len(v)), key=lambda j: -v[j])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        k = i
        while k + 1 < len(order) and v[order[k + 1]] == v[order[i]]:
            k += 1
        for m in range(i, k + 1):
            r[order[m]] = (i + k) / 2 + 1
        i = k + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den > 0 else float("nan")


def top2(v):
    """Are x0 and x1 (the first two columns) above every other parameter?"""
    return min(v[0], v[1]) > max(v[2:])


# The truth's first-order variances (bench/importance.c).
TRUTH = [9.4715, 5.3333, 1.4222, 0.3333, 0.0833, 0.6667]
rung = {x["seed"]: x for x in lines("rung.out")}
optuna = {x["seed"]: x for x in lines("optuna.out")}
print()
print("== per seed: importances (x0 x1 x2 x3 x4 c5), Spearman rung vs optuna, "
      "top-2 = {x0, x1} ==")
rhos, both, rung_top, optuna_top, rung_truth, optuna_truth = [], 0, 0, 0, [], []
for s in range(seeds):
    r = rung.get(s)
    o = optuna.get(s)
    if r is None:
        continue
    ri = r["importance"]
    rt = top2(ri)
    rung_top += rt
    rung_truth.append(spearman(ri, TRUTH))
    text = f"seed {s:2d}  rung [{' '.join(f'{v:.3f}' for v in ri)}] top2 {'yes' if rt else 'NO'}"
    if o is not None:
        oi = o["importance"]
        ot = top2(oi)
        optuna_top += ot
        both += rt and ot
        rho = spearman(ri, oi)
        rhos.append(rho)
        optuna_truth.append(spearman(oi, TRUTH))
        text += (f"  optuna [{' '.join(f'{v:.3f}' for v in oi)}] top2 {'yes' if ot else 'NO'}"
                 f"  spearman {rho:.3f}")
    print(text)
n_r = len(rung)
print()
print(f"rung's top two are x0, x1 in {rung_top}/{n_r} seeds; optuna's in {optuna_top}/"
      f"{len(optuna)}; Spearman against the truth's order, median: rung "
      f"{statistics.median(rung_truth):.3f}"
      + (f", optuna {statistics.median(optuna_truth):.3f}" if optuna_truth else ""))
rung_ms = [x["wall_s"] * 1000 for x in rung.values()]
opt_ms = [x["wall_s"] * 1000 for x in optuna.values()]
print(f"time per seed ({lines('rung.out')[0]['n']} x 6), median: rung {statistics.median(rung_ms):.1f}"
      f" ms" + (f", optuna {statistics.median(opt_ms):.0f} ms" if opt_ms else ""))

small_r, small_o = lines("rung_small.out"), lines("optuna_small.out")
if small_r and small_o:
    a, b = small_r[0], small_o[0]
    print(f"{a['n']} x {a['d']}: rung wall {a['wall_s']:.3f} s (cpu {a['cpu_s']:.3f} s), optuna wall "
          f"{b['wall_s']:.1f} s (cpu {b['cpu_s']:.1f} s): optuna / rung {b['wall_s'] / a['wall_s']:.0f}x "
          f"wall, {b['cpu_s'] / a['cpu_s']:.0f}x cpu; Spearman {spearman(a['importance'], b['importance']):.3f}")

big_r, big_o = lines("rung_big.out"), lines("optuna_big.out")
print()
median = statistics.median(rhos) if rhos else float("nan")
print(f"target importance_spearman_median: {median:.3f} (goal 0.8) "
      f"{'ok' if rhos and median >= 0.8 else 'short'}")
k = both if rhos else rung_top
print(f"target importance_truth_top2: {k}/{seeds} (goal {seeds}/{seeds}) "
      f"{'ok' if k == seeds else 'short'}"
      + ("" if rhos else " (rung alone: no Optuna run)"))
if big_r:
    t = big_r[0]["wall_s"]
    print(f"target importance_10k_x_10_s: {t:.3f} (goal 2) {'ok' if t <= 2 else 'short'}"
          f" (cpu {big_r[0]['cpu_s']:.3f} s, two threads)")
    if big_o:
        o = big_o[0]
        print(f"optuna 10,000 x 10: wall {o['wall_s']:.1f} s, cpu {o['cpu_s']:.1f} s: "
              f"ratio optuna / rung {o['wall_s'] / t:.0f}x wall")
    elif big_limit > 0:
        print(f"optuna 10,000 x 10: did not finish within {big_limit} s: ratio optuna / rung "
              f"> {big_limit / t:.0f}x wall")
PY
