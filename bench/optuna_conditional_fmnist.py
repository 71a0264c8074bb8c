#!/usr/bin/env python3
"""Optuna's peers on examples/fmnist-conditional.json's conditional space,
for bench/conditional_fmnist.sh: TPE (multivariate=True, group=True, the
setting Optuna recommends for conditional spaces) and random, define-by-run.

The objective walks the same search_space as bench/conditional_fmnist.c
searches (read from the same spec file, its constants epochs and
train_samples replaced the same way): a conditional choice becomes a
categorical over its branches, then only the taken branch's parameters are
suggested, each under a name of its own (the branch path in front: a branch's
parameters are separate dimensions for Optuna as they are for Rung's GP).
Each config runs the same command as the C driver,

    rung-train --config '{...the config..., "seed": 0, "threads": 1}'

and returns the val_loss of its last `@rung` line; a failed run or a value
that is not finite returns NaN, which Optuna records as a failed trial.
Prints one JSON object per sampler, {"searcher", "evals", "seconds",
"best": [[best val_loss so far] per seed], "failed"}.

    /usr/bin/python3 bench/optuna_conditional_fmnist.py RUNG_TRAIN SPEC SEEDS EVALS \
        TRAIN_SAMPLES EPOCHS
"""
import json
import math
import re
import subprocess
import sys
import time
import warnings

import optuna

VAL_LOSS = re.compile(r'"val_loss": ([^,}]+)')


def suggest(trial, space, path, tag, cfg):
    """Suggests the active parameters of space (a Rung sub-space) into cfg,
    keyed by their dotted paths; tag names the branches taken so far."""
    for key, dom in space.items():
        p = path + key
        if not isinstance(dom, dict):
            cfg[p] = dom  # a constant
            continue
        t = dom.get("type")
        if t is None:  # a sub-space
            suggest(trial, dom, p + ".", tag, cfg)
        elif t == "choice" and all(isinstance(v, dict) for v in dom["values"]):
            b = trial.suggest_categorical(tag + p, list(range(len(dom["values"]))))
            suggest(trial, dom["values"][b], p + ".", "%s%s=%d/" % (tag, p, b), cfg)
        elif t == "choice":
            cfg[p] = trial.suggest_categorical(tag + p, dom["values"])
        elif t in ("uniform", "loguniform"):
            cfg[p] = trial.suggest_float(tag + p, dom["low"], dom["high"], log=t == "loguniform")
        elif t in ("randint", "lograndint"):  # Rung's upper bound is excluded
            cfg[p] = trial.suggest_int(tag + p, dom["low"], dom["high"] - 1,
                                       log=t == "lograndint")
        else:
            raise SystemExit("optuna_conditional_fmnist: no mapping for type %r (%s)" % (t, p))


def evaluate(train, cfg):
    cfg = dict(cfg, seed=0, threads=1)
    r = subprocess.run([train, "--config", json.dumps(cfg)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    loss = math.nan
    for line in r.stdout.splitlines():
        m = VAL_LOSS.search(line) if line.startswith("@rung ") else None
        if m:
            loss = float(m.group(1))
    if r.returncode != 0:
        tail = r.stdout.strip().splitlines()[-1:] or [""]
        print("optuna_conditional_fmnist: %s failed: %s" % (json.dumps(cfg), tail[0]),
              file=sys.stderr)
        return math.nan
    return loss if math.isfinite(loss) else math.nan


def main():
    if len(sys.argv) != 7:
        raise SystemExit(__doc__)
    train, spec_path = sys.argv[1], sys.argv[2]
    seeds, evals, train_samples, epochs = (int(a) for a in sys.argv[3:7])
    with open(spec_path) as f:
        space = json.load(f)["search_space"]
    space["epochs"], space["train_samples"] = epochs, train_samples
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")  # multivariate/group are "experimental"
    samplers = {
        "optuna-tpe": lambda s: optuna.samplers.TPESampler(seed=s, multivariate=True,
                                                           group=True),
        "optuna-random": lambda s: optuna.samplers.RandomSampler(seed=s),
    }

    def objective(trial):
        cfg = {}
        suggest(trial, space, "", "", cfg)
        return evaluate(train, cfg)

    for name, make in samplers.items():
        t0, rows, failed = time.monotonic(), [], 0
        for seed in range(seeds):
            study = optuna.create_study(sampler=make(seed))
            study.optimize(objective, n_trials=evals)
            best, row = math.inf, []
            for t in study.trials:
                if t.state == optuna.trial.TrialState.COMPLETE:
                    best = min(best, t.value)
                else:
                    failed += 1
                row.append(best if math.isfinite(best) else None)
            rows.append(row)
            print("optuna_conditional_fmnist: %s seed %d: best %.5f (%.0f s so far)"
                  % (name, seed, best, time.monotonic() - t0), file=sys.stderr, flush=True)
        print(json.dumps({"searcher": name, "evals": evals, "seconds": time.monotonic() - t0,
                          "best": rows, "failed": failed}), flush=True)


if __name__ == "__main__":
    main()
