#!/usr/bin/env python3
"""Optuna's peers on the tree-structured function of Jenatton et al. (2017),
for bench/conditional.sh: TPE (multivariate=True, group=True, the setting
Optuna recommends for conditional spaces) and random, define-by-run on the
same tree as bench/conditional.c. Prints one JSON object per sampler,
{"searcher", "evals", "regret": [[best so far - f*] per seed]}.

    /usr/bin/python3 bench/optuna_conditional.py SEEDS EVALS
"""
import json
import sys
import warnings

import optuna

F_MIN = 0.1


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


def run(make, seeds, evals):
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
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")  # multivariate/group are "experimental"
    samplers = {
        "optuna-tpe": lambda s: optuna.samplers.TPESampler(seed=s, multivariate=True,
                                                           group=True),
        "optuna-random": lambda s: optuna.samplers.RandomSampler(seed=s),
    }
    for name, make in samplers.items():
        print(json.dumps({"searcher": name, "evals": evals, "regret": run(make, seeds, evals)}),
              flush=True)


if __name__ == "__main__":
    main()
