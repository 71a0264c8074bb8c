#!/usr/bin/env python3
"""Optuna's TPE with its pruners in bench/multifidelity.c's simulation.

The same discrete-event simulation of W workers over simulated wall-clock
time, on the same curves, driven through Optuna's ask-and-tell interface:
  optuna-tpe+hyperband  TPESampler(multivariate=True, constant_liar=True,
                        seed) with HyperbandPruner(min_resource=1,
                        max_resource=max_t, reduction_factor=3)
  optuna-tpe+sh         the same with SuccessiveHalvingPruner(min_resource=1,
                        reduction_factor=3, min_early_stopping_rate=0)
constant_liar: the running trials are TPE's pending points, as they are
Rung's bayes's. Idle workers, in worker order, ask for a new trial at once;
every step is trial.report(loss, step), then should_prune(); a trial that
reports max_t is told complete with that loss, a pruned one is told pruned.

lc4: Python reimplements asha.c's curves (splitmix64 streams, Box-Muller
noise, the step duration, g*) and checks them against multifidelity_bench's
--check-lc4 dump (--check). The config is TPE's proposal.

fmnist table: TPE proposes in the space of space.json (suggest_float, log
for loguniform; suggest_int, log for lograndint; suggest_categorical for
choice); the proposal is snapped to the nearest table config not run yet
in that simulation (as the C side's nearest_row) in the same
unit-cube coordinates as the C side (checked against its --dump-table), and
TPE is told the snapped config: the asked trial is told FAIL (TPE ignores
failed trials) and the snapped config enqueued and asked for, and that
trial runs. Losses that are null or >= 10 are 10; each run of a trial costs
--startup seconds before its first epoch.

lcbench: one OpenML task of LCBench through YAHPO Gym's surrogate, evaluated
by bench/lcbench_export.py's numpy evaluator on the graph it exported
(--lcbench GRAPH_DIR --task ID); TPE proposes in the C side's LCB_SPACE,
the loss at epoch t is 1 - val_accuracy / 100 and the epoch's duration
time(t) - the latest time before it (at least 0.01 s), as multifidelity.c
does. The best possible is read from the C side's --dump-table file, and
the numpy curve of its check config is checked against the C side's there.

Prints one JSON line per (arm, W, seed) in multifidelity_bench's format.

    /usr/bin/python3 bench/optuna_multifidelity.py lc4 --check FILE
    /usr/bin/python3 bench/optuna_multifidelity.py fmnist --space space.json \
        --curves curves.jsonl.gz --check table.json
    /usr/bin/python3 bench/optuna_multifidelity.py lcbench --lcbench GRAPH_DIR \
        --task 3945 --check lcbench-dump.json
"""
import argparse
import gzip
import json
import math
import sys
import time

M64 = (1 << 64) - 1
LC4_SALT = 0x6C63342D6265
LC4_STEPS = 81
LOSS_CAP = 10.0
LCB_EPOCHS = 52
LCB_MIN_EPOCH_S = 0.01
# multifidelity.c's LCB_SPACE and its check config (config_space.json's defaults)
LCB_DIMS = [
    ("batch_size", {"type": "lograndint", "low": 16, "high": 513}),
    ("learning_rate", {"type": "loguniform", "low": 0.0001, "high": 0.1}),
    ("momentum", {"type": "uniform", "low": 0.1, "high": 0.99}),
    ("weight_decay", {"type": "uniform", "low": 0.00001, "high": 0.1}),
    ("num_layers", {"type": "randint", "low": 1, "high": 6}),
    ("max_units", {"type": "lograndint", "low": 64, "high": 1025}),
    ("max_dropout", {"type": "uniform", "low": 0.0, "high": 1.0}),
]
LCB_CHECK_CONFIG = {"batch_size": 91, "learning_rate": 0.0031622777, "momentum": 0.545,
                    "weight_decay": 0.050005, "num_layers": 3, "max_units": 256,
                    "max_dropout": 0.5}


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


class Stream:
    def __init__(self, state):
        self.state = state & M64

    def uniform(self):
        z = self.state
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        return (mix64(z) >> 11) * 2.0 ** -53


def lc4_noise(seed, trial, jitter):
    st = Stream(mix64((mix64((seed + LC4_SALT) & M64) + trial) & M64))
    for _ in range(4):
        st.uniform()
    eps = [0.0] * (LC4_STEPS + 1)
    for t in range(1, LC4_STEPS + 1, 2):
        u1, u2 = st.uniform(), st.uniform()
        r = math.sqrt(-2.0 * math.log(1.0 - u1))
        e = (r * math.cos(2.0 * math.pi * u2), r * math.sin(2.0 * math.pi * u2))
        for k in range(2):
            if t + k <= LC4_STEPS:
                eps[t + k] = e[k]
    dur = 1 + int(st.uniform() * jitter)
    return eps, dur


def lc4_clean(x, t):
    d0, d1, d2, d3 = x[0] - 0.7, x[1] - 0.3, x[2] - 0.5, x[3] - 0.6
    f = 0.05 + 0.5 * d0 * d0 + 0.3 * d1 * d1 + 0.2 * d2 * d2 + 0.1 * d3 * d3
    a, b = 0.3 + 0.7 * x[3], 1.0 + 20.0 * x[0]
    return f + a * math.exp(-t / b)


def lc4_gstar():
    x = [0.0, 0.3, 0.5, 0.0]
    best, b0, b3 = math.inf, 0.0, 0.0
    for i in range(201):
        for j in range(201):
            x[0], x[3] = i / 200.0, j / 200.0
            v = lc4_clean(x, LC4_STEPS)
            if v < best:
                best, b0, b3 = v, x[0], x[3]
    cell = 1.0 / 200.0
    for _ in range(12):
        c0, c3, step = b0, b3, cell / 10.0
        for i in range(-20, 21):
            for j in range(-20, 21):
                x[0] = min(1.0, max(0.0, c0 + i * step))
                x[3] = min(1.0, max(0.0, c3 + j * step))
                v = lc4_clean(x, LC4_STEPS)
                if v < best:
                    best, b0, b3 = v, x[0], x[3]
        cell = step
    return best


def encode_dim(d, v):
    t = d["type"]
    if t == "choice":
        return (d["values"].index(v) + 0.5) / len(d["values"])
    if t == "uniform":
        u = (v - d["low"]) / (d["high"] - d["low"])
    elif t == "loguniform":
        u = (math.log(v) - math.log(d["low"])) / (math.log(d["high"]) - math.log(d["low"]))
    elif t == "randint":
        u = (round(v) - d["low"] + 0.5) / (d["high"] - d["low"])
    else:  # lograndint
        k = float(round(v))
        u = (((math.log(k) + math.log(k + 1.0)) / 2.0 - math.log(d["low"])) /
             (math.log(d["high"]) - math.log(d["low"])))
    return min(1.0, max(0.0, u))


class Bench:
    def __init__(self, a):
        self.lc4 = a.bench == "lc4"
        self.lcb = None
        self.jitter = a.jitter
        if a.bench == "lcbench":
            self.init_lcbench(a)
            return
        if self.lc4:
            self.max_t = LC4_STEPS
            self.best = lc4_gstar()
            self.startup = 0.0
            self.dims = [(f"x{d}", {"type": "uniform", "low": 0.0, "high": 1.0}) for d in range(4)]
            if a.check:
                self.check_lc4(a.check)
            return
        self.startup = a.startup
        with open(a.space) as f:
            space = json.load(f)
        self.dims = [(k, v) for k, v in space.items() if isinstance(v, dict) and "type" in v]
        self.max_t = space["epochs"]
        self.rows = []
        with gzip.open(a.curves, "rt") as f:
            for line in f:
                if line.strip():
                    self.rows.append(json.loads(line))
        for r in self.rows:
            r["loss"] = [0.0] + [LOSS_CAP if v is None or not v < LOSS_CAP else v
                                 for v in r["val_loss"]]
            r["dur"] = [0.0] + r["epoch_s"]
            r["u"] = [encode_dim(d, r["config"][k]) for k, d in self.dims]
        self.best = min(r["loss"][self.max_t] for r in self.rows)
        if a.check:
            with open(a.check) as f:
                c = json.load(f)
            if c["names"] != [k for k, _ in self.dims] or len(c["u"]) != len(self.rows):
                raise SystemExit("optuna_multifidelity: the table differs from the C side's")
            worst = max(abs(x - y) for r, cu in zip(self.rows, c["u"]) for x, y in zip(r["u"], cu))
            if worst > 1e-12 or c["best"] != self.best:
                raise SystemExit(f"optuna_multifidelity: cube coordinates differ by {worst}")

    def init_lcbench(self, a):
        import os
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import lcbench_export
        if not a.lcbench or not a.task or not a.check:
            raise SystemExit("optuna_multifidelity: lcbench needs --lcbench GRAPH_DIR, --task ID "
                             "and --check (multifidelity_bench lcbench --dump-table)")
        self.np = lcbench_export.np
        self.export = lcbench_export
        self.lcb = lcbench_export.Graph(a.lcbench)
        if a.task not in self.lcb.g.get("tasks", {}):
            raise SystemExit(f"optuna_multifidelity: --task: {a.task} is not one of LCBench's")
        self.x_cat = self.lcb.g["tasks"][a.task]
        self.max_t = LCB_EPOCHS
        self.startup = 0.0
        self.dims = LCB_DIMS
        with open(a.check) as f:
            c = json.load(f)
        if c["task"] != a.task or c["x_cat"] != self.x_cat:
            raise SystemExit("optuna_multifidelity: --check is another task's")
        self.best = c["best"]
        loss, dur, _ = self.lcb_curve(LCB_CHECK_CONFIG)
        dl = max(abs(x - y) for x, y in zip(loss[1:], c["loss"]))
        dd = max(abs(x - y) for x, y in zip(dur[1:], c["dur"]))
        if dl > 1e-5 or dd > 0.05:
            raise SystemExit(f"optuna_multifidelity: numpy's curve differs from C's by {dl:.3g} "
                             f"(loss), {dd:.3g} s (duration)")

    def lcb_curve(self, config):
        """multifidelity.c's lcb_curve: loss and durations at epochs 1 .. 52."""
        np = self.np
        x = self.export.rows(config, range(1, LCB_EPOCHS + 1))
        y = self.lcb.run(np.full((LCB_EPOCHS, 1), self.x_cat), x).astype(np.float64)
        loss, dur, done = [0.0], [0.0], 0.0
        for t in range(LCB_EPOCHS):
            cum = float(y[t, 0])
            loss.append(1.0 - float(y[t, 1]) / 100.0)
            dur.append(cum - done if cum - done > LCB_MIN_EPOCH_S else LCB_MIN_EPOCH_S)
            done = max(done, cum)
        return loss, dur, loss[LCB_EPOCHS]

    def check_lc4(self, path):
        with open(path) as f:
            for line in f:
                o = json.loads(line)
                if "gstar" in o:
                    if o["gstar"] != self.best:
                        raise SystemExit(f"optuna_multifidelity: g* {self.best!r} != C's "
                                         f"{o['gstar']!r}")
                    continue
                eps, dur = lc4_noise(o["seed"], o["trial"], self.jitter)
                if dur != o["dur"] or eps[1:] != o["eps"]:
                    raise SystemExit(f"optuna_multifidelity: lc4 seed {o['seed']} trial "
                                     f"{o['trial']} differs from the C side's")

    def suggest(self, trial):
        c = {}
        for k, d in self.dims:
            t = d["type"]
            if t == "uniform":
                c[k] = trial.suggest_float(k, d["low"], d["high"])
            elif t == "loguniform":
                c[k] = trial.suggest_float(k, d["low"], d["high"], log=True)
            elif t == "randint":
                c[k] = trial.suggest_int(k, d["low"], d["high"] - 1)
            elif t == "lograndint":
                c[k] = trial.suggest_int(k, d["low"], d["high"] - 1, log=True)
            else:
                c[k] = trial.suggest_categorical(k, d["values"])
        return c

    def nearest(self, config, used=()):
        """The nearest row not in used, or the nearest of all once every
        row is (multifidelity.c's nearest_row)."""
        u = [encode_dim(d, config[k]) for k, d in self.dims]
        for skip in (used, ()):
            best, bd = None, math.inf
            for i, r in enumerate(self.rows):
                if i in skip:
                    continue
                dd = sum((a - b) ** 2 for a, b in zip(u, r["u"]))
                if dd < bd:
                    best, bd = i, dd
            if best is not None:
                return best
        return 0


def simulate(optuna, bench, pruner_name, workers, seed, budget):
    from optuna.trial import TrialState
    if pruner_name == "sh":
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3,
                                                        min_early_stopping_rate=0)
    else:
        pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=bench.max_t,
                                                reduction_factor=3)
    sampler = optuna.samplers.TPESampler(multivariate=True, constant_liar=True, seed=seed)
    study = optuna.create_study(study_name=f"mf-{seed}", storage=optuna.storages.InMemoryStorage(),
                                sampler=sampler, pruner=pruner, direction="minimize")
    running = [None] * workers  # [optuna trial, loss, dur, final, t]
    due = [0.0] * workers
    n_trials = steps = 0
    used = set()  # the table's rows run so far
    inc_loss, inc_regret, trace = math.inf, None, []
    t0 = time.process_time()

    def new_trial():
        nonlocal n_trials
        tr = study.ask()
        config = bench.suggest(tr)
        if bench.lc4:
            x = [config[f"x{d}"] for d in range(4)]
            eps, dur = lc4_noise(seed, n_trials, bench.jitter)
            loss = [0.0] + [lc4_clean(x, t) + 0.01 * eps[t] for t in range(1, LC4_STEPS + 1)]
            durs = [float(dur)] * (LC4_STEPS + 1)
            final = lc4_clean(x, LC4_STEPS)
        elif bench.lcb is not None:
            loss, durs, final = bench.lcb_curve(config)
        else:
            index = bench.nearest(config, used)
            used.add(index)
            row = bench.rows[index]
            snapped = {k: row["config"][k] for k, _ in bench.dims}
            if snapped != config:
                study.tell(tr, state=TrialState.FAIL)
                study.enqueue_trial(snapped)
                tr = study.ask()
                bench.suggest(tr)
            loss, durs, final = row["loss"], row["dur"], row["loss"][bench.max_t]
        n_trials += 1
        return [tr, loss, durs, final, 0]

    def dispatch(now):
        for w in range(workers):
            if running[w] is None:
                running[w] = new_trial()
                due[w] = now + bench.startup + running[w][2][1]

    dispatch(0.0)
    while True:
        w = None
        for i in range(workers):
            if running[i] is not None and (w is None or due[i] < due[w]):
                w = i
        if w is None or due[w] > budget:
            break
        now = due[w]
        r = running[w]
        tr, loss, durs, final = r[0], r[1], r[2], r[3]
        r[4] += 1
        t = r[4]
        steps += 1
        tr.report(loss[t], t)
        if t >= bench.max_t:
            study.tell(tr, loss[t])
            running[w] = None
            if loss[t] < inc_loss:
                inc_loss = loss[t]
                regret = final - bench.best
                if regret != inc_regret:
                    inc_regret = regret
                    trace.append([now, regret])
        elif tr.should_prune():
            study.tell(tr, state=TrialState.PRUNED)
            running[w] = None
        else:
            due[w] = now + durs[t + 1]
        dispatch(now)
    return {"trials": n_trials, "steps": steps, "run_s": round(time.process_time() - t0, 3),
            "trace": trace}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench", choices=["lc4", "fmnist", "lcbench"])
    ap.add_argument("--lcbench", help="the graph folder bench/lcbench_export.py exported")
    ap.add_argument("--task", help="lcbench: an OpenML task id")
    ap.add_argument("--space")
    ap.add_argument("--curves", help="curves.jsonl.gz")
    ap.add_argument("--workers", default="4,16")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--worker-time", type=float, default=4000.0,
                    help="budget T = this / W (simulated time units or seconds)")
    ap.add_argument("--arms", default="optuna-tpe+hyperband,optuna-tpe+sh")
    ap.add_argument("--jitter", type=int, default=4)
    ap.add_argument("--startup", type=float, default=1.0)
    ap.add_argument("--check", help="multifidelity_bench's --check-lc4 or --dump-table file")
    a = ap.parse_args()
    import optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    import warnings
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    bench = Bench(a)
    name = f"lcbench-{a.task}" if a.bench == "lcbench" else a.bench
    print(f"optuna_multifidelity: optuna {optuna.__version__}, {name}, max_t {bench.max_t}, "
          f"best {bench.best:.6f}", file=sys.stderr)
    arms = a.arms.split(",")
    for w in [int(x) for x in a.workers.split(",")]:
        for arm in arms:
            pruner = {"optuna-tpe+hyperband": "hb", "optuna-tpe+sh": "sh"}[arm]
            for seed in range(a.seed0, a.seed0 + a.seeds):
                r = simulate(optuna, bench, pruner, w, seed, a.worker_time / w)
                out = {"bench": name, "arm": arm, "W": w, "seed": seed,
                       "budget": a.worker_time / w}
                out.update(r)
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
