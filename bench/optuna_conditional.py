#!/usr/bin/env python3
"""Optuna's peers on the tree-structured function of Jenatton et al. (2017),
for bench/conditional.sh: TPE (multivariate=True, group=True, the setting
Optuna recommends for conditional spaces) and random, define-by-run on the
same tree as bench/conditional.c, on its two problems: jenatton (the
function as published) and jenatton-shifted (every optimum off the centre
and the bounds; bench/conditional.c has both). Prints one JSON object per
sampler, {"searcher", "problem", "evals", "regret": [[best so far - f*] per
seed]}.

    /usr/bin/python3 bench/optuna_conditional.py SEEDS EVALS [PROBLEM]
"""
import json
import sys
import warnings

import optuna

F_MIN = 0.1
# jenatton-shifted's minima: x4 .. x7, then r8 and r9 (bench/conditional.c).
LEAF_AT = (0.37, -0.55, 0.71, -0.23)
SHIFT_AT = (0.3, 0.65)


def objective(trial):
    """The tree, one suggest per active parameter."""
    if trial.suggest_categorical("x1", [0, 1]) == 0:
        r8 = trial.suggest_float("r8", 0.0, 1.0)
        if trial.suggest_categorical("x2", [0, 1]) == 0:
            return trial.suggest_float("x4", -1.0, 1.0) ** 2 + 0.1 + r8
        return trial.suggest_float("x5", -1.0, 1.0) ** 2 + 0.2 + r8
    r9 = trial.suggest_float("r9", 0.0, 1.0)
    if trial.suggest_categorical("x3", [0, 1]) == 0:
        return trial.suggest_float("x6", -1.0, 1.0) ** 2 + 0.3 + r9
    return trial.suggest_float("x7", -1.0, 1.0) ** 2 + 0.4 + r9


def objective_shifted(trial):
    """The same tree with every optimum moved: f* = 0.1 at x1 = 0, x2 = 0,
    x4 = 0.37, r8 = 0.3."""
    if trial.suggest_categorical("x1", [0, 1]) == 0:
        r = (trial.suggest_float("r8", 0.0, 1.0) - SHIFT_AT[0]) ** 2
        if trial.suggest_categorical("x2", [0, 1]) == 0:
            return (trial.suggest_float("x4", -1.0, 1.0) - LEAF_AT[0]) ** 2 + 0.1 + r
        return (trial.suggest_float("x5", -1.0, 1.0) - LEAF_AT[1]) ** 2 + 0.2 + r
    r = (trial.suggest_float("r9", 0.0, 1.0) - SHIFT_AT[1]) ** 2
    if trial.suggest_categorical("x3", [0, 1]) == 0:
        return (trial.suggest_float("x6", -1.0, 1.0) - LEAF_AT[2]) ** 2 + 0.3 + r
    return (trial.suggest_float("x7", -1.0, 1.0) - LEAF_AT[3]) ** 2 + 0.4 + r


PROBLEMS = {"jenatton": objective, "jenatton-shifted": objective_shifted}


def run(make, seeds, evals, objective):
    rows = []
    for seed in range(seeds):
        study = optuna.create_study(sampler=make(seed))
        study.optimize(objective, n_trials=evals)
        best, row = float("inf"), []
        for t in study.trials:
            best = min(best, t.value)
            row.append(best - F_MIN)
        rows.append(row)
    return rows


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    evals = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    problem = sys.argv[3] if len(sys.argv) > 3 else "jenatton"
    if problem not in PROBLEMS:
        raise SystemExit("optuna_conditional.py: PROBLEM is one of %s" % ", ".join(PROBLEMS))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")  # multivariate/group are "experimental"
    samplers = {
        "optuna-tpe": lambda s: optuna.samplers.TPESampler(seed=s, multivariate=True,
                                                           group=True),
        "optuna-random": lambda s: optuna.samplers.RandomSampler(seed=s),
    }
    for name, make in samplers.items():
        print(json.dumps({"searcher": name, "problem": problem, "evals": evals,
                          "regret": run(make, seeds, evals, PROBLEMS[problem])}), flush=True)


if __name__ == "__main__":
    main()
