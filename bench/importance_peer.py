"""Optuna's fANOVA on the trials bench/importance.c wrote (bench/importance.sh).

Each CSV file (columns x<j> numeric in [0, 1], c<j>_<k> categorical with k
values, then y) becomes an Optuna study of completed trials, built with
optuna.trial.create_trial and Study.add_trials (numeric parameters as
FloatDistribution(0, 1), categoricals as CategoricalDistribution over
0 .. k-1), and is evaluated by optuna.importance.FanovaImportanceEvaluator
with the given seed. One JSON line per file: the importances in the file's
column order (normalized to sum to 1, as optuna.importance.
get_param_importances does), and the seconds the evaluation took (wall and
CPU of this process; scikit-learn's forest runs in one thread, its n_jobs
left at Optuna's default).

Usage: importance_peer.py SEED:FILE [SEED:FILE ...]
"""

import csv
import json
import sys
import time

import optuna


def load(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    names, dists = [], {}
    for col in header[:-1]:
        if col.startswith("c"):
            name, k = col.split("_")
            dists[name] = optuna.distributions.CategoricalDistribution(list(range(int(k))))
        else:
            name = col
            dists[name] = optuna.distributions.FloatDistribution(0.0, 1.0)
        names.append(name)
    trials = []
    for r in body:
        params = {}
        for name, text in zip(names, r[:-1]):
            v = float(text)
            params[name] = int(v) if isinstance(
                dists[name], optuna.distributions.CategoricalDistribution) else v
        trials.append(optuna.trial.create_trial(params=params, distributions=dists,
                                                value=float(r[-1])))
    return names, trials


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for arg in sys.argv[1:]:
        seed_text, path = arg.split(":", 1)
        seed = int(seed_text)
        names, trials = load(path)
        study = optuna.create_study()
        study.add_trials(trials)
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=seed)
        w0, c0 = time.perf_counter(), time.process_time()
        raw = evaluator.evaluate(study)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        total = sum(raw.values())
        imp = [raw[n] / total if total > 0 else 0.0 for n in names]
        print(json.dumps({"bench": "importance", "tool": "optuna", "version": optuna.__version__,
                          "seed": seed, "n": len(trials), "d": len(names),
                          "wall_s": round(wall, 4), "cpu_s": round(cpu, 4),
                          "importance": imp}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
