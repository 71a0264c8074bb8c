#!/usr/bin/python3
"""optuna_asha: the Optuna peers of asha_bench (bench/README.md, section 3).

It replays the lc4 learning curves that `asha_bench --dump-curves FILE`
wrote (the same configs, noise and step durations as Rung's arms see) with
Optuna 3.1's pruners:

  optuna-sh  SuccessiveHalvingPruner(min_resource=1, reduction_factor=3,
             min_early_stopping_rate=0)
  optuna-hb  HyperbandPruner(min_resource=1, max_resource=81,
             reduction_factor=3)

on an in-memory study per (pruner, W, seed), named "lc4-<seed>" (Hyperband
draws a trial's bracket from crc32 of the study name and trial number, so
the name fixes the draws). The seed's configs are enqueued in order, so
trial n gets config n (each trial suggests x0 .. x3 and gets them back).

W workers are simulated as asha_bench does it, with the ask/tell API: at
time 0 and after each event, idle workers in worker order ask the next
trial; a step of trial n takes d_n time units (from the file); at each time,
each worker in worker order whose step ends then reports loss_t at step t
(trial.report), asks trial.should_prune() and, when told to, tells the trial
PRUNED; a trial that reaches t = 81 unpruned is told COMPLETE with loss_81.
With W = 1 this is a plain sequential study. Optuna cannot pause and
resume a trial, so there is no promote arm.

Figures as asha_bench computes them: budget = steps reported; the trial a
user picks = the lowest reported loss at t = 81 among the trials that
reported t = 81 ("completed"; one pruned at t = 81 counts, as on Rung's
side); true regret = its noise-free final loss - g*; no stopping at the same
budget = the same pick among the first floor(budget / 81) trials. Quantiles
interpolate linearly between order statistics.

Output: per (pruner, W) one line for a person and, with --json, one JSON
object in asha_bench's format; with --sh-budgets FILE, also optuna-sh's
budget per (W, seed) as "W seed budget" lines in FILE, the caps of
asha_bench's rung-asha@sh-budget arm (asha_bench --budget-file). Run with
Debian's /usr/bin/python3 (python3-optuna).
"""

import argparse
import json
import math
import sys
import time
import warnings

STEPS = 81
PRUNERS = ("sh", "hb")


def read_curves(path):
    """Returns (header dict, {seed: [trial dict, ...] in trial order})."""
    header = {}
    seeds = {}
    with open(path) as fh:
        first = fh.readline().split()
        # "# lc4 curves: seeds S trials N steps 81 jitter J gstar G"
        for key, value in zip(first[3::2], first[4::2]):
            header[key] = float(value) if key == "gstar" else int(value)
        for text in fh:
            if text.startswith("#"):
                continue
            f = text.split()
            seed, number, dur = int(f[0]), int(f[1]), int(f[2])
            trial = {
                "dur": dur,
                "x": [float(v) for v in f[3:7]],
                "final": float(f[7]),
                "loss": [math.nan] + [float(v) for v in f[8:]],
            }
            if len(trial["loss"]) != STEPS + 1:
                raise ValueError(f"seed {seed} trial {number}: {len(trial['loss']) - 1} steps")
            trials = seeds.setdefault(seed, [])
            if number != len(trials):
                raise ValueError(f"seed {seed}: trial {number} out of order")
            trials.append(trial)
    if header.get("steps") != STEPS or "gstar" not in header:
        raise ValueError(f"{path}: not an lc4 curves file (header {first})")
    return header, seeds


def clean_loss(x, t):
    """lc4 without noise, written out again to check the file against."""
    f = (0.05 + 0.5 * (x[0] - 0.7) ** 2 + 0.3 * (x[1] - 0.3) ** 2 + 0.2 * (x[2] - 0.5) ** 2
         + 0.1 * (x[3] - 0.6) ** 2)
    return f + (0.3 + 0.7 * x[3]) * math.exp(-t / (1 + 20 * x[0]))


def check_curves(seeds):
    """The file must be lc4: finals exact, noise about 0.01 N(0, 1)."""
    errs = []
    for trials in seeds.values():
        for tr in trials:
            if abs(tr["final"] - clean_loss(tr["x"], STEPS)) > 1e-12:
                raise ValueError(f"final loss {tr['final']} is not lc4's")
            errs.extend((tr["loss"][t] - clean_loss(tr["x"], t)) / 0.01
                        for t in range(1, STEPS + 1))
    mean = sum(errs) / len(errs)
    sd = math.sqrt(sum((e - mean) ** 2 for e in errs) / len(errs))
    if abs(mean) > 0.05 or abs(sd - 1) > 0.05:
        raise ValueError(f"noise mean {mean:.3f} sd {sd:.3f}, not about N(0, 1)")


def make_pruner(optuna, name):
    if name == "sh":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=3, min_early_stopping_rate=0)
    return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=STEPS, reduction_factor=3)


def pick(trials, reached):
    """The lowest loss at t = 81 among trials[i] with reached[i], then the
    lowest number; None if none."""
    best = None
    for i, tr in enumerate(trials):
        if reached[i] and (best is None or tr["loss"][STEPS] < trials[best]["loss"][STEPS]):
            best = i
    return best


def simulate(optuna, pruner_name, trials, workers, seed, gstar):
    from optuna.trial import TrialState

    study = optuna.create_study(
        study_name=f"lc4-{seed}",
        storage=optuna.storages.InMemoryStorage(),
        sampler=optuna.samplers.RandomSampler(seed=seed),
        pruner=make_pruner(optuna, pruner_name),
        direction="minimize",
    )
    for tr in trials:
        study.enqueue_trial({f"x{d}": tr["x"][d] for d in range(4)})
    n = len(trials)
    running = [None] * workers  # [optuna trial, number, last step]
    due = [0] * workers
    state = {"next": 0, "busy": 0}
    reached = [False] * n
    out = {"steps": 0, "completed": 0, "stopped": 0}

    def dispatch(now):
        for w in range(workers):
            if running[w] is not None:
                continue
            if state["next"] >= n:
                return
            ot = study.ask()
            i = state["next"]
            state["next"] += 1
            xs = [ot.suggest_float(f"x{d}", 0.0, 1.0) for d in range(4)]
            if ot.number != i or xs != trials[i]["x"]:
                raise RuntimeError(f"asked trial {ot.number} {xs}, expected {i} {trials[i]['x']}")
            running[w] = [ot, i, 0]
            due[w] = now + trials[i]["dur"]
            state["busy"] += 1

    dispatch(0)
    while state["busy"] > 0:
        now = min(due[w] for w in range(workers) if running[w] is not None)
        for w in range(workers):
            if running[w] is None or due[w] != now:
                continue
            ot, i, t = running[w]
            t += 1
            running[w][2] = t
            out["steps"] += 1
            loss = trials[i]["loss"][t]
            ot.report(loss, t)
            if t >= STEPS:
                reached[i] = True
            if ot.should_prune():
                study.tell(ot, state=TrialState.PRUNED)
            elif t >= STEPS:
                study.tell(ot, loss)
            else:
                due[w] = now + trials[i]["dur"]
                dispatch(now)
                continue
            out["completed" if t >= STEPS else "stopped"] += 1
            running[w] = None
            state["busy"] -= 1
            dispatch(now)

    best = pick(trials, reached)
    out["pick"] = -1 if best is None else best
    out["regret"] = math.nan if best is None else trials[best]["final"] - gstar
    first = min(out["steps"] // STEPS, n)
    ns = pick(trials[:first], [True] * first)
    out["nostop"] = math.nan if ns is None else trials[ns]["final"] - gstar
    return out


def quantile(values, p):
    """Linear interpolation between order statistics (numpy's default), NaN
    last, as asha_bench computes it."""
    v = sorted(values, key=lambda x: (math.isnan(x), x))
    pos = p * (len(v) - 1)
    i = int(math.floor(pos))
    if i >= len(v) - 1:
        return v[-1]
    frac = pos - i
    return v[i] if frac == 0 else v[i] + frac * (v[i + 1] - v[i])


def num(v):
    return None if v is None or not math.isfinite(v) else v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--curves", required=True, help="file from asha_bench --dump-curves")
    ap.add_argument("--workers", default="1,8", help="comma-separated W (default 1,8)")
    ap.add_argument("--pruners", default="sh,hb", help="comma-separated: sh,hb")
    ap.add_argument("--json", action="store_true", help="one JSON object per result line")
    ap.add_argument("--sh-budgets", metavar="FILE",
                    help='write optuna-sh\'s budget per (W, seed) to FILE as "W seed budget" lines')
    args = ap.parse_args()

    workers = [int(w) for w in args.workers.split(",")]
    pruners = args.pruners.split(",")
    if any(w < 1 or w > 256 for w in workers) or any(p not in PRUNERS for p in pruners):
        ap.error("bad --workers or --pruners")

    warnings.filterwarnings("ignore")  # ExperimentalWarning and the like
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)

    header, seeds = read_curves(args.curves)
    check_curves(seeds)
    gstar = header["gstar"]
    print(f"# optuna {optuna.__version__}: {len(seeds)} seeds x {header['trials']} trials from "
          f"{args.curves}, g* = {gstar:.6f}, jitter {header.get('jitter', 1)}")
    sys.stdout.flush()
    budgets = open(args.sh_budgets, "w") if args.sh_budgets else None
    if budgets is not None:
        budgets.write(f"# optuna {optuna.__version__} SuccessiveHalvingPruner: W seed budget "
                      f"(steps reported), {header['trials']} trials from {args.curves}\n")
    for w in workers:
        for name in pruners:
            t0 = time.perf_counter()
            runs = [simulate(optuna, name, seeds[s], w, s, gstar) for s in sorted(seeds)]
            wall = time.perf_counter() - t0
            k = len(runs)
            regret = [r["regret"] for r in runs]
            nostop = [r["nostop"] for r in runs]
            row = {
                "bench": "asha",
                "impl": "optuna",
                "label": f"optuna-{name}",
                "arm": name,
                "workers": w,
                "seeds": k,
                "trials": header["trials"],
                "jitter": header.get("jitter", 1),
                "gstar": gstar,
                "budget_mean": sum(r["steps"] for r in runs) / k,
                "regret_median": num(quantile(regret, 0.5)),
                "regret_q1": num(quantile(regret, 0.25)),
                "regret_q3": num(quantile(regret, 0.75)),
                "nostop_regret_median": num(quantile(nostop, 0.5)),
                "stopped_mean": sum(r["stopped"] for r in runs) / k,
                "completed_mean": sum(r["completed"] for r in runs) / k,
                "wall_s": round(wall, 3),
                "budget": [r["steps"] for r in runs],
                "regret": [num(v) for v in regret],
                "nostop_regret": [num(v) for v in nostop],
                "completed": [r["completed"] for r in runs],
                "stopped": [r["stopped"] for r in runs],
                "pick": [r["pick"] for r in runs],
            }

            def f4(v):
                return "n/a" if v is None else f"{v:.4f}"

            print(f"{w:2d}  {row['label']:<19} {row['budget_mean']:8.1f}  "
                  f"{f4(row['regret_median']):>8} [{f4(row['regret_q1'])}, "
                  f"{f4(row['regret_q3'])}]  {f4(row['nostop_regret_median']):>8}  "
                  f"{row['stopped_mean']:6.1f} {row['completed_mean']:6.1f}  {wall:.2f} s")
            if args.json:
                print(json.dumps(row, separators=(",", ":")))
            sys.stdout.flush()
            if budgets is not None and name == "sh":
                for s, r in zip(sorted(seeds), runs):
                    budgets.write(f"{w} {s} {r['steps']}\n")
                budgets.flush()
    if budgets is not None:
        budgets.close()


if __name__ == "__main__":
    main()
