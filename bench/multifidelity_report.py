#!/usr/bin/env python3
"""The table and target lines of bench/multifidelity.sh, from the JSON lines
of multifidelity_bench and optuna_multifidelity.py (one per arm, W, seed).

Per benchmark and W: each arm's median regret over seeds at fractions of the
budget T and at T (a seed without a completed trial yet counts as worse than
any: the median is "-" while half the seeds have none), the median trials
started and steps reported, and the time at which the arm's median regret
first reaches random+asha's final median regret (">T" when it never does).
Then the target lines of bench/README.md section 5, for METHOD (Rung's
multi-fidelity method: bayes_mf+hyperband, the GP on the rung records
under hyperband, docs/searchers.md "Multi-fidelity"):
  (a) mf_time_<bench>_W<W>: METHOD's time to random+asha's final
      median regret / random+asha's own time to it (the first time its
      median regret is at its final value), goal <= 0.5
  (b) mf_regret_<bench>_W<W>: METHOD's final median regret /
      random+asha's, goal <= 0.5
  (c) mf_vs_tpe_hb_<bench>_W<W>: METHOD's final median regret /
      optuna-tpe+hyperband's, goal <= 1 on lc4 and the table (no worse)
A missed target says by how much: the factor by which the value exceeds
the goal, or that METHOD never reached the regret within T.
LCBench's tasks (bench "lcbench-<task id>", bench/README.md section 10) get
the same table each, and then one summary per W over the tasks: each arm's
median over tasks of its final median regret, and on how many tasks that
is below, level with or above random+asha's; then METHOD's time to
random+asha's final median regret over random+asha's own, per task, and
on how many tasks METHOD ends below optuna-tpe+hyperband, with the target
lines mf_lcb_time_W<W> (the median over tasks of that time ratio, goal
<= 0.5) and mf_lcb_wins_W<W> (the share of tasks won, goal >= 0.7).

    python3 bench/multifidelity_report.py FILE...
"""
import json
import math
import sys
from collections import defaultdict

FRACTIONS = (0.125, 0.25, 0.5, 0.75, 1.0)
ARM_ORDER = ["random+asha", "random+hyperband", "bayes+asha", "bayes_mf+asha", "bayes+hyperband",
             "bayes_mf+hyperband", "tpe+asha", "tpe_mf+asha", "tpe_mf+hyperband",
             "tpe_mfb+hyperband", "random+hyperband_b", "bayes_mf+hyperband_b",
             "tpe_mf+hyperband_b", "optuna-tpe+hyperband", "optuna-tpe+sh"]
METHOD = "bayes_mf+hyperband"


def regret_at(trace, t):
    r = math.inf
    for when, v in trace:
        if when > t:
            break
        r = v
    return r


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return math.nan
    m = xs[(n - 1) // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    return m


def time_to(runs, target):
    """The first time at which the median over runs of the regret is <= target."""
    times = sorted({when for r in runs for when, _ in r["trace"]})
    for t in times:
        if median([regret_at(r["trace"], t) for r in runs]) <= target:
            return t
    return math.inf


def fmt(v, digits=4):
    if v is None or (isinstance(v, float) and (math.isinf(v) or math.isnan(v))):
        return "-"
    return f"{v:.{digits}g}"


def main():
    runs = defaultdict(list)
    for path in sys.argv[1:]:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{") and '"trace"' in line:
                    o = json.loads(line)
                    runs[(o["bench"], o["W"], o["arm"])].append(o)
    targets = []
    lcb = sorted({k[0] for k in runs if k[0].startswith("lcbench-")})
    lcb_final = defaultdict(dict)  # (W, arm) -> {task: final median regret}
    lcb_time = defaultdict(dict)  # W -> {task: METHOD's time ratio to random+asha's regret}
    for bench in ["lc4", "fmnist"] + lcb:
        for w in sorted({k[1] for k in runs if k[0] == bench}):
            arms = [a for a in ARM_ORDER if (bench, w, a) in runs]
            if not arms:
                continue
            budget = runs[(bench, w, arms[0])][0]["budget"]
            seeds = min(len(runs[(bench, w, a)]) for a in arms)
            unit = "time units" if bench == "lc4" else "s"
            print(f"\n{bench}, W = {w}: budget T = {budget:g} {unit} of simulated wall clock, "
                  f"{seeds} seeds; median regret at t = fraction of T")
            head = "  ".join(f"{f:g}T".rjust(8) for f in FRACTIONS)
            print(f"  {'arm':22} {head}  {'trials':>6} {'steps':>6}  {'t(ref)':>8} {'t/T':>5}"
                  f"  {'cpu_s':>6}")
            final = {}
            for a in arms:
                rs = runs[(bench, w, a)]
                meds = [median([regret_at(r["trace"], f * budget) for r in rs]) for f in FRACTIONS]
                final[a] = meds[-1]
                lcb_final[(w, a)][bench] = meds[-1]
            ref = final.get("random+asha")
            tt = {}
            for a in arms:
                rs = runs[(bench, w, a)]
                meds = [median([regret_at(r["trace"], f * budget) for r in rs]) for f in FRACTIONS]
                tt[a] = time_to(rs, ref) if ref is not None and math.isfinite(ref) else math.inf
                cpu = median([r.get("run_s", 0.0) for r in rs])
                print(f"  {a:22} " + "  ".join(fmt(m).rjust(8) for m in meds) +
                      f"  {median([r['trials'] for r in rs]):6.0f}"
                      f" {median([r['steps'] for r in rs]):6.0f}"
                      f"  {fmt(tt[a]):>8} {fmt(tt[a] / budget, 2):>5}  {cpu:6.1f}")
            print(f"  t(ref): first time the arm's median regret <= random+asha's final "
                  f"{fmt(ref)}; cpu_s: median CPU seconds a run")
            # Seed by seed at T (the same seed: the same first configs and
            # lc4 noise): how often each arm ends better than, level with or
            # worse than random+asha.
            base = {r["seed"]: regret_at(r["trace"], budget) for r in runs[(bench, w, arms[0])]}
            parts = []
            for a in arms[1:]:
                b = w_ = l_ = 0
                for r in runs[(bench, w, a)]:
                    if r["seed"] not in base:
                        continue
                    v, u = regret_at(r["trace"], budget), base[r["seed"]]
                    b, w_, l_ = b + (v < u), w_ + (v == u), l_ + (v > u)
                parts.append(f"{a} {b}/{w_}/{l_}")
            print("  at T against random+asha, seeds better/level/worse: " + ", ".join(parts))
            tag = f"{bench}_W{w}"
            mf = final.get(METHOD)
            if mf is None or ref is None:
                continue
            a_val = tt[METHOD] / tt["random+asha"]
            if bench in lcb:
                lcb_time[w][bench] = a_val
                continue
            targets.append(("mf_time_" + tag, a_val, "<= 0.5", a_val <= 0.5, a_val / 0.5))
            b_val = mf / ref if ref > 0 else math.inf
            targets.append(("mf_regret_" + tag, b_val, "<= 0.5", b_val <= 0.5, b_val / 0.5))
            hb = final.get("optuna-tpe+hyperband")
            if hb is not None:
                c_val = mf / hb if hb > 0 else math.inf
                targets.append(("mf_vs_tpe_hb_" + tag, c_val, "<= 1", c_val <= 1, c_val))
    for w in sorted({k[1] for k in runs if k[0] in lcb}):
        base = lcb_final.get((w, "random+asha"), {})
        print(f"\nLCBench, W = {w}, {len(lcb)} tasks: median over tasks of the final median "
              f"regret; tasks below/level/above random+asha's")
        for a in ARM_ORDER:
            fin = {t: v for t, v in lcb_final.get((w, a), {}).items() if t in lcb}
            if not fin:
                continue
            cmp = [(v > base[t]) - (v < base[t]) for t, v in fin.items() if t in base]
            print(f"  {a:22} {fmt(median(list(fin.values()))):>8}  "
                  f"{cmp.count(-1)}/{cmp.count(0)}/{cmp.count(1)}"
                  + (f"  (over {len(fin)} of {len(lcb)} tasks)" if len(fin) < len(lcb) else ""))
        ratios = lcb_time.get(w, {})
        if ratios:
            fast = sum(r <= 0.5 for r in ratios.values())
            med = median(list(ratios.values()))
            print(f"  {METHOD}: time to random+asha's final median regret / random+asha's own, "
                  f"median over {len(ratios)} tasks {fmt(med, 3)}; <= 0.5 on {fast} tasks")
            targets.append((f"mf_lcb_time_W{w}", med, "<= 0.5", med <= 0.5, med / 0.5))
        mine = lcb_final.get((w, METHOD), {})
        peer = lcb_final.get((w, "optuna-tpe+hyperband"), {})
        both = [t for t in mine if t in peer and t in lcb]
        if both:
            won = sum(mine[t] < peer[t] for t in both)
            level = sum(mine[t] == peer[t] for t in both)
            share = won / len(both)
            print(f"  {METHOD} against optuna-tpe+hyperband, final median regret per task: "
                  f"below on {won}, level on {level}, above on {len(both) - won - level} "
                  f"of {len(both)}")
            targets.append((f"mf_lcb_wins_W{w}", share, ">= 0.7", share >= 0.7, 0.7 / share
                            if share > 0 else math.inf))
    print()
    for name, v, goal, ok, factor in targets:
        if ok:
            miss = ""
        elif math.isinf(v):
            miss = " (missed: never reached within T)"
        else:
            miss = f" (missed: {fmt(factor, 3)}x the goal)"
        print(f"target {name}: {fmt(v, 3)} (goal {goal}) {'ok' if ok else 'short'}{miss}")


if __name__ == "__main__":
    main()
