#!/usr/bin/python3
"""optuna_quality: the peers of sampler_quality (bench/README.md, section 2).

The same five functions, boxes, seeds and evaluation counts as
bench/sampler_quality.c, minimized by:

  optuna-random   optuna.samplers.RandomSampler(seed=seed)
  optuna-tpe      optuna.samplers.TPESampler(seed=seed)            (defaults)
  optuna-tpe-mv   optuna.samplers.TPESampler(seed=seed, multivariate=True)
  optuna-cmaes    optuna.samplers.CmaEsSampler(seed=seed, restart_strategy="ipop")
                  (otherwise defaults: sigma0 a sixth of the narrowest
                  width, popsize 4 + floor(3 ln d), one random start trial)
  sklearn-gp      a GP-EI loop on scikit-learn, when sklearn is importable:
                  Matern-5/2 ARD kernel (times a constant), normalize_y,
                  10 scrambled Sobol start points (scipy.stats.qmc, else
                  uniform random), then each point maximizes EI over 2,000
                  uniform random candidates, refined by L-BFGS-B from the
                  best 5. It is slow (a GP fit per point), hence
                  --sklearn-seeds to run it on the first few seeds only.

Optuna runs sequentially through ask/tell on an in-memory study: one
suggest_float per dimension over the box, then tell(loss). The time of one
proposal is ask() plus the suggest_float calls (where Optuna samples); for
the GP loop it is the fit plus the acquisition search.

Output: per (function, sampler) one line for a person, and with --json one
JSON object per result line in the format of sampler_quality (median_25,
q1_25, q3_25, regret_25 = per-seed regrets, ... prop_ms_median). Quantiles
interpolate linearly between order statistics, as sampler_quality does.

Run with Debian's /usr/bin/python3 (python3-optuna; python3-sklearn and
python3-scipy for the GP reference).
"""

import argparse
import contextlib
import json
import math
import os
import random
import sys
import time
import warnings

CHECKPOINTS = (25, 50, 100)

# libgfortran buffers unit 6 when it is not a terminal, so what fortran_quiet()
# hides would come out at exit; unbuffered, it goes where fd 1 points at the
# time. Read once when libgfortran loads (with scipy.optimize), hence here.
os.environ.setdefault("GFORTRAN_UNBUFFERED_PRECONNECTED", "y")

# ---------------------------------------------------------------------------
# The test functions, written out again rather than shared with the C side:
# the self-check of each side catches a slip in the other's formulas only if
# they are independent. f* at full precision (Hartmann6: the literature
# value, which bench/README.md rounds to -3.32237).

HARTMANN_ALPHA = (1.0, 1.2, 3.0, 3.2)
HARTMANN_A = (
    (10.0, 3.0, 17.0, 3.5, 1.7, 8.0),
    (0.05, 10.0, 17.0, 0.1, 8.0, 14.0),
    (3.0, 3.5, 1.7, 10.0, 17.0, 8.0),
    (17.0, 8.0, 0.05, 10.0, 0.1, 14.0),
)
HARTMANN_P = (
    (0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
    (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
    (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
    (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381),
)


def branin(x):
    b = 5.1 / (4 * math.pi**2)
    c = 5 / math.pi
    t = 1 / (8 * math.pi)
    return (x[1] - b * x[0] ** 2 + c * x[0] - 6) ** 2 + 10 * (1 - t) * math.cos(x[0]) + 10


def hartmann6(x):
    total = 0.0
    for alpha, a, p in zip(HARTMANN_ALPHA, HARTMANN_A, HARTMANN_P):
        total += alpha * math.exp(-sum(aj * (xj - pj) ** 2 for aj, xj, pj in zip(a, x, p)))
    return -total


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (x[i] - 1) ** 2 for i in range(len(x) - 1))


def ackley(x):
    d = len(x)
    a, b, c = 20.0, 0.2, 2 * math.pi
    s1 = sum(v * v for v in x) / d
    s2 = sum(math.cos(c * v) for v in x) / d
    return -a * math.exp(-b * math.sqrt(s1)) - math.exp(s2) + a + math.e


def levy(x):
    w = [1 + (v - 1) / 4 for v in x]
    head = math.sin(math.pi * w[0]) ** 2
    mid = sum((wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2) for wi in w[:-1])
    tail = (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
    return head + mid + tail


# name -> (f, box as [(low, high)], f*, a minimizer)
FUNCTIONS = {
    "branin": (branin, [(-5.0, 10.0), (0.0, 15.0)], 10 / (8 * math.pi), [math.pi, 2.275]),
    "hartmann6": (
        hartmann6,
        [(0.0, 1.0)] * 6,
        -3.32236801141551,
        [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573],
    ),
    "rosenbrock4": (rosenbrock, [(-5.0, 10.0)] * 4, 0.0, [1.0] * 4),
    "ackley5": (ackley, [(-32.768, 32.768)] * 5, 0.0, [0.0] * 5),
    "levy4": (levy, [(-10.0, 10.0)] * 4, 0.0, [1.0] * 4),
}


def self_check():
    """The same checks as sampler_quality's; raises on a wrong function."""
    problems = []

    def close(what, got, want, tol):
        if not abs(got - want) <= tol:
            problems.append(f"{what} = {got!r}, want {want!r} (tol {tol})")

    for name, (f, box, fstar, xstar) in FUNCTIONS.items():
        close(f"{name}(x*)", f(xstar), fstar, 1e-5 if name == "hartmann6" else 1e-12)
        rng = random.Random(12345)
        lowest = min(f([rng.uniform(lo, hi) for lo, hi in box]) for _ in range(20000))
        if lowest < fstar - 1e-9:
            problems.append(f"{name}: {lowest!r} < f* at a random point")
    close("branin(pi, 2.275) vs 0.397887", branin([math.pi, 2.275]), 0.397887, 5e-7)
    close("branin(-pi, 12.275)", branin([-math.pi, 12.275]), 10 / (8 * math.pi), 1e-12)
    close("rosenbrock4(-1,1,-1,1)", rosenbrock([-1.0, 1.0, -1.0, 1.0]), 408.0, 1e-9)
    close("ackley5(1,..,1)", ackley([1.0] * 5), 20 - 20 * math.exp(-0.2), 1e-12)
    close("hartmann6(0.5,..,0.5)", hartmann6([0.5] * 6), -0.5053149917022333, 1e-12)
    if problems:
        raise SystemExit("optuna_quality: self-check FAILED: " + "; ".join(problems))


# ---------------------------------------------------------------------------
# Runs


def run_optuna(sampler_name, f, box, seed, evals):
    """One sequential run; returns (values, proposal seconds)."""
    import optuna

    if sampler_name == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    elif sampler_name == "tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    elif sampler_name == "cmaes":
        sampler = optuna.samplers.CmaEsSampler(seed=seed, restart_strategy="ipop")
    else:
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    values, times = [], []
    for _ in range(evals):
        t0 = time.perf_counter()
        trial = study.ask()
        x = [trial.suggest_float(f"x{j}", lo, hi) for j, (lo, hi) in enumerate(box)]
        times.append(time.perf_counter() - t0)
        y = f(x)
        study.tell(trial, y)
        values.append(y)
    return values, times


class GpEi:
    """The scikit-learn GP-EI reference of bench/README.md, on the unit cube."""

    N_START = 10
    N_CANDIDATES = 2000
    N_REFINE = 5

    def __init__(self, dims, seed, restarts):
        import numpy as np

        self.np = np
        self.dims = dims
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.restarts = restarts
        self.start = self._start_points()

    def _start_points(self):
        try:
            from scipy.stats import qmc

            with warnings.catch_warnings():
                # 10 is not a power of two; balance does not matter here.
                warnings.simplefilter("ignore")
                return qmc.Sobol(self.dims, scramble=True, seed=self.seed).random(self.N_START)
        except ImportError:
            return self.rng.random((self.N_START, self.dims))

    def propose(self, xs, ys):
        """Next point in [0, 1]^d after observations xs (n x d), ys (n)."""
        np = self.np
        n = len(ys)
        if n < self.N_START:
            return self.start[n]
        from scipy.optimize import minimize
        from scipy.stats import norm
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern

        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
            length_scale=np.ones(self.dims), length_scale_bounds=(1e-3, 1e3), nu=2.5
        )
        gp = GaussianProcessRegressor(
            kernel=kernel,
            alpha=1e-6,
            normalize_y=True,
            n_restarts_optimizer=self.restarts,
            random_state=int(self.rng.integers(2**31)),
        )
        x_arr = np.asarray(xs)
        y_arr = np.asarray(ys)
        gp.fit(x_arr, y_arr)
        best = y_arr.min()
        scale = y_arr.std() or 1.0

        def log_ei(points):
            mu, sigma = gp.predict(points, return_std=True)
            sigma = np.maximum(sigma, 1e-12)
            imp = (best - mu) / scale
            s = sigma / scale
            z = imp / s
            ei = imp * norm.cdf(z) + s * norm.pdf(z)
            # log EI has the same maximizer and gives L-BFGS-B a usable slope
            # where EI itself is tiny.
            return np.log(np.maximum(ei, 1e-300))

        cand = self.rng.random((self.N_CANDIDATES, self.dims))
        scores = log_ei(cand)
        order = np.argsort(-scores)[: self.N_REFINE]
        best_x, best_score = cand[order[0]], scores[order[0]]
        bounds = [(0.0, 1.0)] * self.dims
        for i in order:
            res = minimize(
                lambda u: -log_ei(u.reshape(1, -1))[0], cand[i], method="L-BFGS-B", bounds=bounds
            )
            if res.success or np.isfinite(res.fun):
                score = -float(res.fun)
                if score > best_score:
                    best_x, best_score = np.clip(res.x, 0.0, 1.0), score
        return best_x


@contextlib.contextmanager
def fortran_quiet():
    """Sends file descriptor 1 to /dev/null: scipy's Fortran L-BFGS-B writes
    "ascent direction in projection gd = ..." straight to it, whatever its
    print options say."""
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


def run_gp(f, box, seed, evals, restarts):
    gp = GpEi(len(box), seed, restarts)
    us, values, times = [], [], []
    for _ in range(evals):
        t0 = time.perf_counter()
        u = gp.propose(us, values)
        times.append(time.perf_counter() - t0)
        x = [lo + (hi - lo) * float(ui) for ui, (lo, hi) in zip(u, box)]
        us.append([float(ui) for ui in u])
        values.append(f(x))
    return values, times


# ---------------------------------------------------------------------------
# Summaries, as sampler_quality computes them


def quantile(sorted_values, p):
    pos = p * (len(sorted_values) - 1)
    i = int(math.floor(pos))
    if i >= len(sorted_values) - 1:
        return sorted_values[-1]
    return sorted_values[i] + (pos - i) * (sorted_values[i + 1] - sorted_values[i])


def median(values):
    return quantile(sorted(values), 0.5) if values else None


def summarize(label, impl, searcher, fname, fstar, dims, seeds, evals, runs, wall_s):
    """runs: per seed (values, times). Returns the JSON object."""
    line = {
        "bench": "sampler_quality",
        "label": label,
        "impl": impl,
        "searcher": searcher,
        "function": fname,
        "dims": dims,
        "fstar": fstar,
        "seeds": seeds,
        "evals": evals,
    }
    human = f"{fname:<12} {label:<14}"
    for at in CHECKPOINTS:
        if at > evals:
            continue
        regrets = [min(values[:at]) - fstar for values, _ in runs]
        s = sorted(regrets)
        md, q1, q3 = quantile(s, 0.5), quantile(s, 0.25), quantile(s, 0.75)
        line[f"median_{at}"] = md
        line[f"q1_{at}"] = q1
        line[f"q3_{at}"] = q3
        line[f"regret_{at}"] = regrets
        human += f"  @{at} {md:9.3g} [{q1:.3g}, {q3:.3g}]"
    all_ms = [t * 1e3 for _, times in runs for t in times]
    late_ms = [t * 1e3 for _, times in runs for t in times[50:100]]
    line["prop_ms_median"] = median(all_ms)
    line["prop_ms_median_n50_99"] = median(late_ms)
    line["wall_s"] = wall_s
    late = line["prop_ms_median_n50_99"]
    human += f"  prop {line['prop_ms_median']:.3g} ms (n 50-99: "
    human += f"{late:.3g} ms)" if late is not None else "n/a)"
    human += f"  {wall_s:.1f} s"
    return human, line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--functions", default=",".join(FUNCTIONS))
    ap.add_argument("--samplers", default="random,tpe,tpe-mv,sklearn-gp",
                    help="comma-separated: random, tpe, tpe-mv, cmaes, sklearn-gp")
    ap.add_argument("--seeds", type=int, default=20, help="seeds 0..N-1")
    ap.add_argument("--sklearn-seeds", type=int, default=None,
                    help="seeds for sklearn-gp (default: --seeds)")
    ap.add_argument("--sklearn-restarts", type=int, default=2,
                    help="n_restarts_optimizer of the GP fit")
    ap.add_argument("--evals", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    functions = args.functions.split(",")
    samplers = args.samplers.split(",")
    for name in functions:
        if name not in FUNCTIONS:
            ap.error(f"unknown function {name!r}")
    for name in samplers:
        if name not in ("random", "tpe", "tpe-mv", "cmaes", "sklearn-gp"):
            ap.error(f"unknown sampler {name!r}")
    if not (1 <= args.seeds <= 1000 and 1 <= args.evals <= 5000):
        ap.error("--seeds in 1..1000, --evals in 1..5000")

    self_check()
    print("# self-check of the test functions: ok")

    optuna_ok = True
    try:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        print(f"# optuna {optuna.__version__}")
    except ImportError:
        optuna_ok = False
        print("# optuna is not importable: optuna rows left out")
    sklearn_ok = True
    try:
        import numpy  # noqa: F401
        import scipy.optimize  # noqa: F401
        import sklearn

        print(f"# scikit-learn {sklearn.__version__}")
    except ImportError as e:
        sklearn_ok = False
        print(f"# scikit-learn GP-EI reference not run: {e}")
    # Optuna's ExperimentalWarning (multivariate) and sklearn's convergence
    # warnings would bury the results.
    warnings.simplefilter("ignore")
    sys.stdout.flush()

    for fname in functions:
        f, box, fstar, _ = FUNCTIONS[fname]
        for sname in samplers:
            if sname == "sklearn-gp":
                if not sklearn_ok:
                    continue
                seeds = min(args.sklearn_seeds or args.seeds, args.seeds)
                label, impl, searcher = "sklearn-gp", "sklearn", "gp-ei"
            else:
                if not optuna_ok:
                    continue
                seeds = args.seeds
                label, impl, searcher = f"optuna-{sname}", "optuna", sname
            t0 = time.perf_counter()
            runs = []
            for seed in range(seeds):
                if sname == "sklearn-gp":
                    with fortran_quiet():
                        runs.append(run_gp(f, box, seed, args.evals, args.sklearn_restarts))
                else:
                    runs.append(run_optuna(sname, f, box, seed, args.evals))
            human, line = summarize(label, impl, searcher, fname, fstar, len(box), seeds,
                                    args.evals, runs, time.perf_counter() - t0)
            print(human)
            if args.json:
                print(json.dumps(line, separators=(",", ":")))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
