#!/usr/bin/python3
"""optuna_tpe_speed: the peer of sampler_speed's tpe cells (bench/README.md,
section 2, "bench/sampler_speed"): the wall time of one Optuna 3.1 TPE
proposal after n finished trials of d uniform parameters on [0, 1], with
the sampler's settings rung's tpe mirrors (multivariate, group, constant
liar). The n trials (random configs, a smooth synthetic loss like
sampler_speed's) are added to an in-memory study with add_trials; one
proposal is study.ask() plus the d suggest_float calls (where Optuna
samples). Each repetition takes another sampler seed.

Usage: /usr/bin/python3 bench/optuna_tpe_speed.py [--n 1000] [--d 6] [--reps 5] [--json]
"""

import argparse
import json
import math
import random
import statistics
import time
import warnings


def synthetic_loss(u):
    s = 0.0
    for j, x in enumerate(u):
        w = 1.0 / (1.0 + 0.25 * j)
        c = 0.2 + 0.6 * ((j * 7) % 10) / 10.0
        s += w * (x - c) ** 2
    return s + 0.05 * math.sin(6.0 * u[0]) * math.cos(4.0 * u[1 if len(u) > 1 else 0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--d", type=int, default=6)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    import optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    rng = random.Random(a.n * 1000003 + a.d)
    dist = optuna.distributions.FloatDistribution(0.0, 1.0)
    names = ["x%d" % j for j in range(a.d)]
    trials = []
    for _ in range(a.n):
        u = [rng.random() for _ in range(a.d)]
        trials.append(optuna.trial.create_trial(
            params=dict(zip(names, u)), distributions={k: dist for k in names},
            value=synthetic_loss(u)))
    times = []
    for k in range(a.reps):
        sampler = optuna.samplers.TPESampler(seed=k, multivariate=True, group=True,
                                             constant_liar=True)
        study = optuna.create_study(sampler=sampler)
        study.add_trials(trials)
        t0 = time.perf_counter()
        t = study.ask()
        for name in names:
            t.suggest_float(name, 0.0, 1.0)
        times.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(times)
    print("optuna %s TPESampler(multivariate, group, constant_liar): n %d d %d, one proposal "
          "median %.1f ms (min %.1f, max %.1f, %d reps)"
          % (optuna.__version__, a.n, a.d, med, min(times), max(times), a.reps))
    if a.json:
        print(json.dumps({"bench": "sampler_speed", "searcher": "optuna-tpe", "n": a.n, "d": a.d,
                          "reps": a.reps, "median_ms": med, "min_ms": min(times),
                          "max_ms": max(times)}))


if __name__ == "__main__":
    main()
