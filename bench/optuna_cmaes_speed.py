#!/usr/bin/python3
"""optuna_cmaes_speed: Optuna's CmaEsSampler per proposal beside Rung's cmaes
(bench/README.md, section 2, "bench/optuna_cmaes_speed.py").

It runs Optuna 3.1's CmaEsSampler(seed=0, restart_strategy="ipop") on an
in-memory study for n trials (default 1,000) of d = 6 uniform parameters on
[0, 1] with the synthetic loss of bench/sampler_speed.c, then times the next
--reps proposals (ask() plus the suggest_float calls, where Optuna samples;
each told before the next), and prints their median. With --rung PATH (the
sampler_speed binary) it also runs `PATH --cmaes-only --json`, reads its
n = 1,000, d = 6 memo cell (cmaes_propose_cached after 1,000 results, the
memo left by the proposal before, as rungd's proposer runs it) and prints
the ratio with the target line of bench/README.md section 5 (>= 20x).

Run with Debian's /usr/bin/python3 (python3-optuna).
"""

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
import warnings


def synthetic_loss(u):
    """bench/sampler_speed.c's: one off-centre basin and a ripple."""
    total = 0.0
    for j, x in enumerate(u):
        w = 1.0 / (1.0 + 0.25 * j)
        c = 0.2 + 0.6 * ((j * 7) % 10) / 10.0
        total += w * (x - c) ** 2
    return total + 0.05 * math.sin(6.0 * u[0]) * math.cos(4.0 * u[1 if len(u) > 1 else 0])


def optuna_ms(n, d, reps):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")  # restart_strategy is experimental in 3.1
    sampler = optuna.samplers.CmaEsSampler(seed=0, restart_strategy="ipop")
    study = optuna.create_study(direction="minimize", sampler=sampler)
    times = []
    for k in range(n + reps):
        t0 = time.perf_counter()
        trial = study.ask()
        u = [trial.suggest_float(f"x{j}", 0.0, 1.0) for j in range(d)]
        if k >= n:
            times.append((time.perf_counter() - t0) * 1e3)
        study.tell(trial, synthetic_loss(u))
    return statistics.median(times), optuna.__version__


def rung_ms(path, n, d):
    out = subprocess.run([path, "--cmaes-only", "--json"], check=True, capture_output=True,
                         text=True).stdout
    for text in out.splitlines():
        if text.startswith("{"):
            line = json.loads(text)
            if (line.get("searcher") == "cmaes" and line.get("kind") == "memo" and line["n"] == n
                    and line["d"] == d):
                return line["median_ms"]
    raise SystemExit(f"optuna_cmaes_speed: no cmaes cell n={n} d={d} in {path}'s output")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="trials before the timed ones")
    ap.add_argument("--d", type=int, default=6)
    ap.add_argument("--reps", type=int, default=20, help="proposals timed")
    ap.add_argument("--rung", help="the sampler_speed binary, for the ratio")
    args = ap.parse_args()
    if not (2 <= args.d <= 20 and 1 <= args.n <= 20000 and 1 <= args.reps <= 1000):
        ap.error("--d in 2..20, --n in 1..20000, --reps in 1..1000")
    t0 = time.perf_counter()
    ms, version = optuna_ms(args.n, args.d, args.reps)
    print(f"# optuna {version} CmaEsSampler(restart_strategy='ipop'): {args.reps} proposals after"
          f" n = {args.n}, d = {args.d} ({time.perf_counter() - t0:.1f} s in all)")
    print(f"optuna-cmaes  n {args.n}  d {args.d}  median {ms:.3f} ms per proposal")
    if args.rung:
        rung = rung_ms(args.rung, args.n, args.d)
        print(f"rung-cmaes    n {args.n}  d {args.d}  median {rung:.3f} ms per proposal")
        ratio = ms / rung
        print(f"target cmaes_speedup_vs_optuna_n{args.n}_d{args.d}: {ratio:.3g} (goal >= 20) "
              f"{'ok' if ratio >= 20 else 'short'}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
