#!/usr/bin/python3
"""warm_start_peers: the warm_start target of Rung's bayes searcher, replayed
with well-known peers (docs/api.md "warm_start"; docs/architecture.md
"warm_start"; tests/integration/test_warm.py measures Rung itself).

The target: on Branin (x1 in [-5, 10], x2 in [0, 15], f* = 0.397887), a
search warm-started from 30 uniform random trials reaches a regret (best of
its 10 new trials - f*) of at most 0.01. This script runs the same protocol
with other optimizers, to tell whether that is what a standard GP-EI reaches
on every seed or only on some. It is a measurement, not a test: it asserts
nothing about Rung and no ctest entry runs it.

Per seed s (0 .. --seeds - 1) the 30 source points are
numpy.random.RandomState(s).uniform(low, high, size=(30, 2)), the same for
every method. Methods (--methods, comma-separated):

  source         the 30 source points alone (the regret to beat)
  random         10 new uniform random points (RandomState(10000 + s)); as
                 for every method, the regret is that of the 10 new points
  sklearn-gp     scikit-learn GP-EI on the unit square: ConstantKernel *
                 Matern(nu=2.5, one length scale per dimension), alpha 1e-6,
                 normalize_y, n_restarts_optimizer --restarts (5); fitted on
                 the 30 source points plus the new ones, it proposes one
                 point maximizing Expected Improvement (xi = 0) over
                 --candidates (10,000) uniform points, polished by L-BFGS-B
                 (on log EI) from the best 5; 10 times, sequentially.
  sklearn-gp-white  the same plus a WhiteKernel (noise level fitted within
                 [1e-10, 1e-2] of the normalized variance)
  optuna-gp      optuna.samplers.GPSampler(seed=s), when Optuna has it (>= 3.6)
  optuna-tpe     optuna.samplers.TPESampler(seed=s) (defaults)
  optuna-tpe-mv  optuna.samplers.TPESampler(seed=s, multivariate=True)

Optuna gets the 30 source points as completed trials (study.add_trials of
optuna.trial.create_trial with FloatDistributions over the box), then 10
ask/tell trials.

Rung's bayes itself runs on the same source points in bench/warm_start.c
(`--dump-sources FILE` writes them, one JSON line per seed, for
`build/bin/warm_start_bench --sources FILE`).

Output: per method a line with the median regret, the fraction of seeds at
or below 0.01, the worst and the wall time; with --json also one JSON object
per method with the per-seed regrets.

Usage (Debian's python3 with python3-optuna, python3-sklearn, python3-scipy):
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 \\
      bench/warm_start_peers.py --seeds 40 [--methods ...] [--json]
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time
import warnings

# See bench/optuna_quality.py: lets fortran_quiet() hide L-BFGS-B's output.
os.environ.setdefault("GFORTRAN_UNBUFFERED_PRECONNECTED", "y")

import numpy as np  # noqa: E402

LOW = np.array([-5.0, 0.0])
HIGH = np.array([10.0, 15.0])
F_STAR = 0.397887
N_SOURCE = 30
N_NEW = 10
GOAL = 0.01


def branin(x1, x2):
    b, c = 5.1 / (4 * math.pi ** 2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def source_points(seed):
    return np.random.RandomState(seed).uniform(LOW, HIGH, size=(N_SOURCE, 2))


@contextlib.contextmanager
def fortran_quiet():
    """scipy's Fortran L-BFGS-B may write to file descriptor 1 directly."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


# ---------------------------------------------------------------------------
# Methods: each returns the 10 new values for one seed.


def run_random(seed, src):
    pts = np.random.RandomState(10000 + seed).uniform(LOW, HIGH, size=(N_NEW, 2))
    return [branin(*p) for p in pts]


def run_sklearn(seed, src, restarts, candidates, white):
    from scipy.optimize import minimize
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    rng = np.random.default_rng(seed)
    us = list((src - LOW) / (HIGH - LOW))
    ys = [branin(*p) for p in src]
    new = []
    for _ in range(N_NEW):
        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
            length_scale=np.ones(2), length_scale_bounds=(1e-3, 1e3), nu=2.5)
        if white:
            kernel = kernel + WhiteKernel(1e-6, (1e-10, 1e-2))
        gp = GaussianProcessRegressor(kernel=kernel, alpha=1e-6, normalize_y=True,
                                      n_restarts_optimizer=restarts,
                                      random_state=int(rng.integers(2 ** 31)))
        x_arr, y_arr = np.asarray(us), np.asarray(ys)
        gp.fit(x_arr, y_arr)
        best = y_arr.min()
        scale = y_arr.std() or 1.0

        def log_ei(points):
            mu, sigma = gp.predict(points, return_std=True)
            imp = (best - mu) / scale
            s = np.maximum(sigma, 1e-12) / scale
            z = imp / s
            ei = imp * norm.cdf(z) + s * norm.pdf(z)
            return np.log(np.maximum(ei, 1e-300))

        cand = rng.random((candidates, 2))
        scores = log_ei(cand)
        order = np.argsort(-scores)[:5]
        best_u, best_score = cand[order[0]], scores[order[0]]
        for i in order:
            res = minimize(lambda u: -log_ei(u.reshape(1, -1))[0], cand[i],
                           method="L-BFGS-B", bounds=[(0.0, 1.0)] * 2)
            if np.isfinite(res.fun) and -float(res.fun) > best_score:
                best_u, best_score = np.clip(res.x, 0.0, 1.0), -float(res.fun)
        x = LOW + (HIGH - LOW) * best_u
        y = branin(*x)
        us.append(best_u)
        ys.append(y)
        new.append(y)
    return new


def run_optuna(seed, src, kind):
    import optuna
    from optuna.distributions import FloatDistribution

    if kind == "gp":
        sampler = optuna.samplers.GPSampler(seed=seed)
    elif kind == "tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True)
    dists = {"x1": FloatDistribution(LOW[0], HIGH[0]), "x2": FloatDistribution(LOW[1], HIGH[1])}
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.add_trials([
        optuna.trial.create_trial(params={"x1": float(p[0]), "x2": float(p[1])},
                                  distributions=dists, value=branin(*p))
        for p in src])
    new = []
    for _ in range(N_NEW):
        trial = study.ask()
        y = branin(trial.suggest_float("x1", LOW[0], HIGH[0]),
                   trial.suggest_float("x2", LOW[1], HIGH[1]))
        study.tell(trial, y)
        new.append(y)
    return new


# ---------------------------------------------------------------------------


def quantile(sorted_values, p):
    pos = p * (len(sorted_values) - 1)
    i = int(math.floor(pos))
    if i >= len(sorted_values) - 1:
        return sorted_values[-1]
    return sorted_values[i] + (pos - i) * (sorted_values[i + 1] - sorted_values[i])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--methods",
                    default="source,random,sklearn-gp,sklearn-gp-white,optuna-gp,optuna-tpe,"
                            "optuna-tpe-mv")
    ap.add_argument("--restarts", type=int, default=5, help="n_restarts_optimizer of the GP fit")
    ap.add_argument("--candidates", type=int, default=10000, help="random EI candidates")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dump-sources", metavar="FILE",
                    help="write each seed's source points (a JSON line each) for "
                         "warm_start_bench (bench/warm_start.c) and exit")
    args = ap.parse_args()
    if args.dump_sources:
        with open(args.dump_sources, "w") as f:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                f.write(json.dumps({"seed": seed, "points": source_points(seed).tolist()}) + "\n")
        return

    # Branin's minimum, checked at one of its three minimizers.
    assert abs(branin(math.pi, 2.275) - F_STAR) < 1e-6

    seeds = range(args.first_seed, args.first_seed + args.seeds)
    print(f"# Branin, {N_SOURCE} uniform random source points + {N_NEW} new, seeds "
          f"{seeds.start}..{seeds.stop - 1}; regret = best new value - {F_STAR}; goal <= {GOAL}")
    versions = [f"numpy {np.__version__}"]
    for mod in ("scipy", "sklearn", "optuna"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            versions.append(f"{mod} missing")
    print("# " + ", ".join(versions) + "; OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s"
          % (os.environ.get("OMP_NUM_THREADS", "unset"),
             os.environ.get("OPENBLAS_NUM_THREADS", "unset")))
    try:
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    except ImportError:
        optuna = None
    warnings.filterwarnings("ignore", module="sklearn")

    print(f"{'method':<17} {'seeds':>5} {'median':>9} {'q1':>9} {'q3':>9} {'<=0.01':>7} "
          f"{'worst':>8} {'wall_s':>8}")
    for method in args.methods.split(","):
        if method.startswith("optuna") and optuna is None:
            print(f"{method:<17} not run: optuna is not importable")
            continue
        if method == "optuna-gp" and not hasattr(optuna.samplers, "GPSampler"):
            print(f"{method:<17} not run: optuna {optuna.__version__} has no GPSampler")
            continue
        regrets = []
        t0 = time.perf_counter()
        for seed in seeds:
            src = source_points(seed)
            if method == "source":
                best = min(branin(*p) for p in src)
            else:
                with fortran_quiet(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if method == "random":
                        new = run_random(seed, src)
                    elif method in ("sklearn-gp", "sklearn-gp-white"):
                        new = run_sklearn(seed, src, args.restarts, args.candidates,
                                          method.endswith("white"))
                    elif method.startswith("optuna-"):
                        new = run_optuna(seed, src, method[len("optuna-"):])
                    else:
                        sys.exit(f"unknown method {method}")
                best = min(new)
            regrets.append(best - F_STAR)
        wall = time.perf_counter() - t0
        s = sorted(regrets)
        hit = sum(r <= GOAL for r in regrets) / len(regrets)
        print(f"{method:<17} {len(s):>5} {quantile(s, 0.5):>9.5f} {quantile(s, 0.25):>9.5f} "
              f"{quantile(s, 0.75):>9.5f} {hit:>7.1%} {s[-1]:>8.4f} {wall:>8.1f}", flush=True)
        if args.json:
            print(json.dumps({"bench": "warm_start_peers", "method": method,
                              "seeds": [seeds.start, seeds.stop - 1],
                              "median": quantile(s, 0.5), "frac_le_0.01": hit, "worst": s[-1],
                              "wall_s": round(wall, 2),
                              "regrets": [round(r, 6) for r in regrets]}), flush=True)


if __name__ == "__main__":
    main()
