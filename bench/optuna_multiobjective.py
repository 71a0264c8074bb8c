"""Optuna's NSGAIISampler and TPESampler (MOTPE with several objectives) on
the problems of bench/multiobjective.c, with constraints_func for the
constrained ones; one JSON line per sampler and problem, as
multiobjective_bench prints (bench/multiobjective.sh)."""
import json
import math
import sys

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)
D = 6
BRANIN_MIN = 0.397887357729739
PROBLEMS = {  # name: (d, m, constrained, reference point)
    "branincurrin": (2, 2, False, [18.0, 6.0]),
    "zdt1": (D, 2, False, [11.0, 11.0]),
    "zdt2": (D, 2, False, [11.0, 11.0]),
    "zdt3": (D, 2, False, [11.0, 11.0]),
    "dtlz2": (D, 3, False, [1.1, 1.1, 1.1]),
    "cbranin": (2, 1, True, None),
    "c2dtlz2": (D, 2, True, [1.1, 1.1]),
}


def branin(a, b):
    x1, x2 = 15 * a - 5, 15 * b
    t = x2 - 5.1 / (4 * math.pi ** 2) * x1 * x1 + 5 / math.pi * x1 - 6
    return t * t + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x1) + 10


def dtlz2(x, m):
    g = sum((v - 0.5) ** 2 for v in x[m - 1:])
    f = []
    for k in range(m):
        v = 1 + g
        for i in range(m - 1 - k):
            v *= math.cos(x[i] * math.pi / 2)
        if k > 0:
            v *= math.sin(x[m - 1 - k] * math.pi / 2)
        f.append(v)
    return f


def evaluate(name, x):
    """(objectives, constraint g: feasible when <= 0)."""
    if name == "branincurrin":
        a, b = x[0], max(x[1], 1e-12)
        c = (1 - math.exp(-1 / (2 * b))) * (2300 * a ** 3 + 1900 * a * a + 2092 * a + 60) / (
            100 * a ** 3 + 500 * a * a + 4 * a + 20)
        return [branin(x[0], x[1]), c], -1.0
    if name.startswith("zdt"):
        g = 1 + 9 * sum(x[1:]) / (len(x) - 1)
        r = x[0] / g
        if name == "zdt1":
            f2 = g * (1 - math.sqrt(r))
        elif name == "zdt2":
            f2 = g * (1 - r * r)
        else:
            f2 = g * (1 - math.sqrt(r) - r * math.sin(10 * math.pi * x[0]))
        return [x[0], f2], -1.0
    if name == "dtlz2":
        return dtlz2(x, 3), -1.0
    if name == "cbranin":
        x1, x2 = 15 * x[0] - 5, 15 * x[1]
        return [branin(x[0], x[1])], (x1 - 2.5) ** 2 + (x2 - 7.5) ** 2 - 50
    f = dtlz2(x, 2)
    r = 0.2
    a = min((f[i] - 1) ** 2 + f[1 - i] ** 2 - r * r for i in range(2))
    b = sum((v - 1 / math.sqrt(2)) ** 2 for v in f) - r * r
    return f, min(a, b)


def hypervolume(points, ref):
    """Exact, 2 or 3 objectives: slicing the last objective."""
    pts = [p for p in points if all(p[j] < ref[j] for j in range(len(ref)))]
    if not pts:
        return 0.0
    if len(ref) == 1:
        return ref[0] - min(p[0] for p in pts)
    pts.sort(key=lambda p: p[-1])
    vol = 0.0
    for i, p in enumerate(pts):
        top = pts[i + 1][-1] if i + 1 < len(pts) else ref[-1]
        if top > p[-1]:
            vol += (top - p[-1]) * hypervolume([q[:-1] for q in pts[:i + 1]], ref[:-1])
    return vol


def run(name, sampler_name, seed, evals):
    d, m, constrained, ref = PROBLEMS[name]
    cons = {}
    kw = {"seed": seed}
    if constrained:
        kw["constraints_func"] = lambda t: [cons[t.number]]
    if sampler_name == "nsga2":
        sampler = optuna.samplers.NSGAIISampler(**kw)
    else:
        sampler = optuna.samplers.TPESampler(multivariate=True, **kw)
    study = optuna.create_study(directions=["minimize"] * m, sampler=sampler)
    feasible, out, best = [], {}, math.inf

    def objective(trial):
        x = [trial.suggest_float("x%d" % i, 0.0, 1.0) for i in range(d)]
        f, g = evaluate(name, x)
        cons[trial.number] = g
        return f if m > 1 else f[0]

    for n in range(evals):
        study.optimize(objective, n_trials=1)
        t = study.trials[-1]
        f = t.values
        if cons[t.number] <= 0:
            feasible.append(list(f))
            best = min(best, f[0])
        if n + 1 in (50, 86, 100):
            out[str(n + 1)] = best - BRANIN_MIN if m == 1 else hypervolume(feasible, ref)
    return out


def main():
    seeds, evals = int(sys.argv[1]), int(sys.argv[2])
    names = sys.argv[3:] or list(PROBLEMS)
    for name in names:
        for s in ("nsga2", "tpe"):
            res = [run(name, s, seed, evals) for seed in range(seeds)]
            at = {k: [r[k] for r in res] for k in res[0]}
            print(json.dumps({"searcher": "optuna-" + s, "problem": name, "at": at}), flush=True)


if __name__ == "__main__":
    main()
