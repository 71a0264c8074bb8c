#!/usr/bin/env python3
"""Generates a large Rung store for bench/store_scale.sh (standard library only).

What it writes, by default (knobs below): 1,000 finished experiments of
1,000 trials each, from six templates in turn (random, quasi-random, bayes
and grid search; fifo, ASHA, hyperband and median schedulers): the trials
completed, stopped at a rung, or failed with errors as workers report them
(3%); every 50th experiment canceled (2,000 trials planned, the last 10
canceled: 4 while running, 6 pending). 10 reports per trial ({"loss": x,
"acc": y}, plus "epoch" where the scheduler's time_attr is epoch; NaN on the
last where the trial failed for it), 40 workers, and 2 running experiments
of 5,000 trials with 600 finished, 16 running (leased, with some reports)
and 300 pending trials (enough that rungd proposes none at start): about
1,000,000 finished trials and 10,000,000 reports, a file of about 0.9 GB.

How, so that the store is one the current rungd accepts:
1. `rungd --db FILE --port 0` runs until /healthz answers and is stopped with
   SIGTERM: every migration it knows is applied to the new file.
2. A second rungd on a scratch file receives the experiment templates below
   over POST /api/v1/experiments; the specs it stores (validated, defaults
   filled in) and their total_trials are what the generated experiments
   carry, with their own name and seed. A template this rungd rejects stops
   the generation with its error.
3. Rows go in with Python's sqlite3 in one transaction (WAL, synchronous=OFF,
   foreign keys ON, executemany per experiment). Every column of schema
   001-003 must exist (else it stops: update it). Schema 004's columns, what
   rungd derives and writes with the row (a trial's step, last_metrics,
   best_value, best_step and log_tail; an experiment's summary of counts and
   best trial), are filled the way rungd fills them when the store has them
   (checked: rungd answers the same with the summaries dropped and recomputed
   from the trials). Columns it does not know, added by later migrations,
   are left to their defaults, and are listed: a column derived from other
   rows must then be taught to the generator.

Cache: with --cache-dir DIR the store is DIR/store.db with a stamp
DIR/store.json (the knobs and this file's hash); when both are there and
match it prints "cached" and exits; else (or with --force) it regenerates.

Usage: gen_store.py --rungd PATH --cache-dir DIR [--experiments 1000]
       [--trials 1000] [--reports 10] [--workers 40] [--seed 1] [--force]
Prints progress, then one JSON line: {"generated": true, "seconds": ...,
"bytes": ..., "experiments": ..., "trials": ..., "finished_trials": ...,
"reports": ..., "workers": ...}.
"""

import argparse
import copy
import hashlib
import heapq
import json
import math
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402

DAY_MS = 86400 * 1000
START_TIMEOUT_S = 60

# Experiment templates: a spec without name and num_samples, and how its
# trials end. "kind": fifo (completed or failed), rungs (ASHA/hyperband on
# epochs 1, 3, 9, 27: stopped at a rung), median (stopped after 10 steps).
TRAINABLE = {"type": "command",
             "argv": ["python3", "train.py", "--lr={lr}"], "timeout_s": 3600}
TEMPLATES = [
    {"key": "resnet-random", "kind": "fifo", "spec": {
        "metric": "loss", "mode": "min",
        "search_space": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-1},
                         "momentum": {"type": "uniform", "low": 0.5, "high": 0.99},
                         "hidden": {"type": "choice", "values": [64, 128, 256, 512]},
                         "batch_size": {"type": "choice", "values": [32, 64, 128, 256]}},
        "searcher": {"type": "random"}, "max_concurrent_trials": 16, "max_failures": 1,
        "resources_per_trial": {"cpu": 4, "gpu": 1}, "trainable": TRAINABLE}},
    {"key": "vit-asha", "kind": "rungs", "spec": {
        "metric": "acc", "mode": "max",
        "search_space": {"lr": {"type": "loguniform", "low": 1e-5, "high": 1e-2},
                         "weight_decay": {"type": "loguniform", "low": 1e-6, "high": 1e-2},
                         "dropout": {"type": "uniform", "low": 0.0, "high": 0.5}},
        "searcher": {"type": "random", "quasi": True},
        "scheduler": {"type": "asha", "time_attr": "epoch", "max_t": 27, "grace_period": 1,
                      "reduction_factor": 3},
        "max_concurrent_trials": 32, "max_failures": 1,
        "resources_per_trial": {"cpu": 8, "gpu": 1}, "trainable": TRAINABLE}},
    {"key": "mlp-bayes", "kind": "fifo", "spec": {
        "metric": "loss", "mode": "min",
        "search_space": {"lr": {"type": "loguniform", "low": 1e-4, "high": 1.0},
                         "width": {"type": "randint", "low": 16, "high": 1024},
                         "dropout": {"type": "uniform", "low": 0.0, "high": 0.6}},
        "searcher": {"type": "bayes", "n_initial": 20}, "max_concurrent_trials": 8,
        "trainable": TRAINABLE}},
    {"key": "cnn-grid", "kind": "fifo", "spec": {
        "metric": "loss", "mode": "min",
        "search_space": {"lr": {"type": "grid", "values": [1e-4, 2e-4, 5e-4, 1e-3, 2e-3,
                                                           5e-3, 1e-2, 2e-2, 5e-2, 1e-1]},
                         "batch_size": {"type": "grid", "values": [8, 16, 24, 32, 48, 64, 96,
                                                                   128, 192, 256]},
                         "dropout": {"type": "uniform", "low": 0.0, "high": 0.5}},
        "searcher": {"type": "random"}, "max_concurrent_trials": 16, "max_failures": 2,
        "trainable": TRAINABLE},
     "samples_div": 100},
    {"key": "lstm-median", "kind": "median", "spec": {
        "metric": "loss", "mode": "min",
        "search_space": {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
                         "momentum": {"type": "uniform", "low": 0.8, "high": 0.99},
                         "layers": {"type": "randint", "low": 1, "high": 5},
                         "cell": {"type": "choice", "values": ["lstm", "gru"]}},
        "searcher": {"type": "random", "quasi": True},
        "scheduler": {"type": "median", "time_attr": "step", "grace_period": 3},
        "max_concurrent_trials": 16, "trainable": TRAINABLE}},
    {"key": "bert-hyperband", "kind": "rungs", "spec": {
        "metric": "acc", "mode": "max",
        "search_space": {"lr": {"type": "loguniform", "low": 1e-6, "high": 1e-3},
                         "warmup": {"type": "quniform", "low": 0, "high": 2000, "q": 100},
                         "layers": {"type": "randint", "low": 2, "high": 12},
                         "act": {"type": "choice", "values": ["relu", "gelu", "tanh"]}},
        "searcher": {"type": "random"},
        "scheduler": {"type": "hyperband", "time_attr": "epoch", "max_t": 27,
                      "grace_period": 1, "reduction_factor": 3},
        "max_concurrent_trials": 32, "max_failures": 1,
        "resources_per_trial": {"cpu": 8, "gpu": 2}, "trainable": TRAINABLE}},
]
TOPICS = ["cifar10", "imagenet-subset", "fmnist", "ptb", "glue-sst2", "criteo", "uci-adult",
          "speech-commands", "coco-det", "wikitext"]
ERRORS = [
    "exit status 1\nTraceback (most recent call last):\n  File \"train.py\", line 212, in "
    "<module>\n    main()\n  File \"train.py\", line 187, in main\n    loss.backward()\n"
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total "
    "capacity; 75.02 GiB already allocated; 1.12 GiB free)",
    "killed by signal 9 (Killed)\nEpoch 9: 100%|##########| 782/782 [00:41<00:00, 18.9it/s]\n"
    "saving checkpoint to /scratch/rung/ckpt.pt",
    "timed out after 3600 s\nEpoch 3:  12%|#2        | 94/782 [51:02<6:13:40, 32.6s/it]",
    "exit status 2\nusage: train.py [-h] --lr LR [--batch-size N]\n"
    "train.py: error: argument --batch-size: invalid int value: '64.0'",
    "exit status 1\nTraceback (most recent call last):\n  File \"data.py\", line 88, in "
    "load\n    with open(path, 'rb') as f:\nFileNotFoundError: [Errno 2] No such file or "
    "directory: '/data/shard-00017.tfrecord'",
]
CANCELED_TAIL = 10  # of a canceled experiment's trials: 4 canceled while running, 6 pending
RUNNING_FINISHED, RUNNING_RUNNING, RUNNING_PENDING = 600, 16, 300


def log(*a):
    print("gen_store:", *a, flush=True)


def compact(v):
    return json.dumps(v, separators=(",", ":"))


def source_hash():
    """Of the code, not of the module docstring above it."""
    with open(os.path.abspath(__file__), "rb") as f:
        text = f.read()
    return hashlib.sha256(text[text.index(b"\nimport "):]).hexdigest()[:16]


def remove_db(path):
    for suffix in ("", "-wal", "-shm", "-journal", ".lock"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def migrate(rungd, db, work):
    d = rb.Rungd(rungd, db, os.path.join(work, "rungd-migrate.log"))
    try:
        d.start(START_TIMEOUT_S)
    finally:
        rc, _, killed = d.stop(30)
    if rc != 0 or killed:
        raise rb.BenchError("rungd on the new store exited with %s after SIGTERM: %s"
                            % ("SIGKILL" if killed else rc, d.log_tail()))


def validate_templates(rungd, work, samples_for):
    """POSTs each template, at every num_samples wanted, to a rungd on a
    scratch file of its own, then starts that rungd again on the file (as
    after a restart). Returns ({(key, total): spec dict as stored}, notes);
    a template this rungd accepts but cannot load again is left out, with a
    note."""
    out = {}
    notes = []
    for t in TEMPLATES:
        scratch = os.path.join(work, "scratch-%s.db" % t["key"])
        remove_db(scratch)
        logf = os.path.join(work, "rungd-scratch.log")
        d = rb.Rungd(rungd, scratch, logf)
        wanted = []
        try:
            d.start(START_TIMEOUT_S)
            c = rb.Client(d.host, d.port)
            for total in samples_for:
                spec = copy.deepcopy(t["spec"])
                spec["name"] = t["key"]
                spec["num_samples"] = -(-total // t.get("samples_div", 1))
                status, body = c.request("POST", "/api/v1/experiments", spec)
                if status != 201:
                    raise rb.BenchError("this rungd rejects template %s (num_samples %d): "
                                        "HTTP %d %s" % (t["key"], spec["num_samples"], status,
                                                        body[:400].decode("utf-8", "replace")))
                wanted.append((total, json.loads(body)["id"]))
            c.close()
        finally:
            d.stop(30)
        again = rb.Rungd(rungd, scratch, logf)
        try:
            again.start(START_TIMEOUT_S)
        except rb.BenchError as e:
            notes.append("template %s left out: this rungd accepts it but cannot start again "
                         "on a store that holds it (%s)" % (t["key"], str(e).splitlines()[-1]))
            continue
        finally:
            again.stop(30)
        db = sqlite3.connect("file:%s?mode=ro" % scratch, uri=True)
        for total, eid in wanted:
            spec, got = db.execute("SELECT spec, total_trials FROM experiments WHERE id = ?",
                                   (eid,)).fetchone()
            if got != total:
                raise rb.BenchError("template %s: rungd counts %d trials, the generator %d "
                                    "(the grid template needs multiples of 100)"
                                    % (t["key"], got, total))
            out[(t["key"], total)] = json.loads(spec)
        db.close()
        remove_db(scratch)
    if not out:
        raise rb.BenchError("no template is usable: " + "; ".join(notes))
    return out, notes


# Columns the generator fills, in the order of the row tuples below. REQUIRED
# ones (schema 001-003) must exist; OPTIONAL ones (schema 004: what rungd
# derives from a trial's reports and an experiment's trials, written with
# the row) are filled when the store has them. Any other column is left to
# its default and named in a note.
REQUIRED = {
    "experiments": ["id", "name", "spec", "seed", "state", "total_trials", "created_at",
                    "ended_at"],
    "workers": ["id", "name", "hostname", "gpus", "cpus", "registered_at", "last_seen_at",
                "heartbeat"],
    "trials": ["id", "experiment_id", "number", "state", "config", "attempt", "worker_id",
               "lease_token", "resources", "stop_requested", "error", "created_at",
               "started_at", "ended_at", "rung", "queue_pos"],
    "reports": ["trial_id", "attempt", "step", "time", "metrics", "action"],
}
OPTIONAL = {
    "experiments": ["summary"],
    "workers": [],
    "trials": ["step", "last_metrics", "best_value", "best_step", "log_tail"],
    "reports": [],
}
NO_SUMMARY = (None, None, None, None, None)  # a trial without reports
STATES = ["pending", "running", "completed", "stopped", "failed", "canceled", "paused"]


def check_columns(db):
    """Fails on a required column that is gone. Returns ({table: [columns to
    insert, in tuple order]}, {table: [their indexes in the full tuple]},
    notes on the columns and tables the generator does not know)."""
    notes = []
    cols, idx = {}, {}
    for table, required in REQUIRED.items():
        info = db.execute("PRAGMA table_info(%s)" % table).fetchall()
        if not info:
            raise rb.BenchError("the store has no table %s: update bench/gen_store.py" % table)
        names = [r[1] for r in info]
        for c in required:
            if c not in names:
                raise rb.BenchError("table %s has no column %s any more: update "
                                    "bench/gen_store.py" % (table, c))
        full = required + OPTIONAL[table]
        cols[table] = [c for c in full if c in names]
        idx[table] = [full.index(c) for c in cols[table]]
        for cid, name, ctype, notnull, dflt, pk in info:
            if name in full:
                continue
            if notnull and dflt is None and not pk:
                raise rb.BenchError("table %s has a new column %s NOT NULL without a default:"
                                    " update bench/gen_store.py" % (table, name))
            notes.append("%s.%s (%s) left to its default %s" % (table, name, ctype or "any",
                                                                  dflt if dflt else "NULL"))
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for t in tables:
        if t not in REQUIRED:
            notes.append("table %s left empty (not known to the generator)" % t)
    return cols, idx, notes


def insert_sql(table, cols):
    return "INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(cols),
                                                 ", ".join("?" * len(cols)))


class Sampler:
    """Configs drawn from a template's search space (not the searcher's own
    sequence: finished trials only need plausible values)."""

    def __init__(self, space, rng):
        self.space = space
        self.rng = rng
        self.grid = [(k, d["values"]) for k, d in space.items()
                     if isinstance(d, dict) and d.get("type") == "grid"]

    def config(self, number):
        r = self.rng
        cfg = {}
        combo = number
        for k, vals in self.grid:
            cfg[k] = vals[combo % len(vals)]
            combo //= len(vals)
        for k, d in self.space.items():
            if not isinstance(d, dict):
                cfg[k] = d
                continue
            t = d["type"]
            if t == "grid":
                continue
            if t == "uniform":
                cfg[k] = r.uniform(d["low"], d["high"])
            elif t == "loguniform":
                cfg[k] = math.exp(r.uniform(math.log(d["low"]), math.log(d["high"])))
            elif t == "quniform":
                cfg[k] = float(round(r.uniform(d["low"], d["high"]) / d["q"]) * d["q"])
            elif t == "randint":
                cfg[k] = r.randrange(int(d["low"]), int(d["high"]))
            elif t == "choice":
                cfg[k] = r.choice(d["values"])
            else:
                cfg[k] = r.random()
        return cfg


class Gen:
    def __init__(self, args, specs, now_ms, cols, idx):
        self.a = args
        self.specs = specs
        self.want_log = "log_tail" in cols["trials"]
        # Projections of the full row tuples onto the store's columns.
        self.pick = {}
        for table in ("experiments", "trials"):
            n = len(REQUIRED[table]) + len(OPTIONAL[table])
            self.pick[table] = None if idx[table] == list(range(n)) else \
                (lambda ix: (lambda row: tuple(row[i] for i in ix)))(idx[table])
        if self.pick["experiments"] is None:
            self.pick["experiments"] = lambda row: row
        usable = {k for k, _ in specs}
        self.templates = [t for t in TEMPLATES if t["key"] in usable]
        self.rng = random.Random(args.seed)
        self.now = now_ms
        self.trial_id = 0
        self.n_trials = self.n_finished = self.n_reports = 0

    # -- one trial's rows --

    def metrics_rows(self, tid, attempt, ctx, nsteps, t0, t1, final, horizon,
                     last_action="continue", nan_last=False, log_extra=None):
        """nsteps reports from t0 to t1; horizon is the time_attr value of the
        last one (epochs for rungs). Returns (report rows, the trial's
        summary columns: step, last_metrics, best_value, best_step, log_tail)
        as rungd derives them from the reports (core_report.c, core_record_report())."""
        kind, metric, maximize = ctx
        r = self.rng.random
        start = final + 1.5 + r()
        rows = []
        lines = [] if self.want_log else None
        span = max(1, t1 - t0)
        best = best_step = None
        step_col = None
        text = None
        for s in range(1, nsteps + 1):
            frac = s / nsteps
            loss = final + (start - final) * math.exp(-4.0 * frac * horizon / 27.0
                                                      if kind == "rungs" else -4.0 * frac)
            loss *= 1.0 + 0.03 * (r() - 0.5)
            acc = max(0.0, min(0.999, 1.0 - loss / 3.0))
            ls, accs = "%.6g" % loss, "%.6g" % acc
            nan = nan_last and s == nsteps
            if nan:
                ls = accs = '"NaN"'
            if kind == "rungs":
                ep = "%.4g" % (horizon * frac)
                text = '{"epoch":%s,"loss":%s,"acc":%s}' % (ep, ls, accs)
                # rungd: the time_attr's value when it is an integer, else the step.
                step_col = int(ep) if ep.isdigit() else s
            else:
                text = '{"loss":%s,"acc":%s}' % (ls, accs)
                step_col = s
            if not nan:
                v = float(accs if metric == "acc" else ls)
                if best is None or (v > best if maximize else v < best):
                    best, best_step = v, s
            if lines is not None:
                lines.append("step %d: loss=%s acc=%s lr=%.3g %.1fs/it"
                             % (s, ls, accs, 0.001 * (1 - frac) + 1e-5, 0.5 + r()))
            rows.append((tid, attempt, s, t0 + span * s // nsteps, text,
                         last_action if s == nsteps else "continue"))
        log = None
        if lines is not None and (lines or log_extra):
            if log_extra:
                lines.append(log_extra)
            log = "\n".join(lines) + "\n"
            if len(log) > 8192:
                log = log[-8192:]
        return rows, (step_col, text, best, best_step, log)

    def finished_trial(self, eid, number, tmpl, spec, sampler, created, workers):
        """A terminal trial of a finished (or running) experiment: its row and
        its reports."""
        a = self.a
        r = self.rng
        self.trial_id += 1
        tid = self.trial_id
        kind = tmpl["kind"]
        metric = spec["metric"]
        started = created + r.randrange(200, 5000)
        steps = a.reports
        rung = None
        error = None
        attempt = 1
        x = r.random()
        final = 0.05 + 0.6 * r.random() ** 2
        last_action = "continue"
        nan_last = False
        horizon = 27.0
        if x < 0.03:
            state = "failed"
            e = r.randrange(len(ERRORS) + 2)
            if e >= len(ERRORS):
                error = "%s is NaN at step %d" % (metric, steps)
                nan_last = True
                last_action = "stop"
            else:
                error = ERRORS[e]
                if e == 1 and spec.get("max_failures", 0) > 0:
                    attempt = 2
        elif kind == "rungs":
            y = r.random()
            if y < 2 / 3:
                horizon = 1.0
            elif y < 2 / 3 + 2 / 9:
                horizon = 3.0
            elif y < 2 / 3 + 2 / 9 + 2 / 27:
                horizon = 9.0
            if horizon < 27:
                state, rung, last_action = "stopped", horizon, "stop"
            else:
                state = "completed"
        elif kind == "median" and x < 0.5:
            state, rung, last_action = "stopped", float(steps), "stop"
        else:
            state = "completed"
        dur = int((60 + 540 * r.random()) * 1000 * (horizon / 27.0 if kind == "rungs" else 1))
        ended = started + dur
        ctx = (kind, metric, spec.get("mode") == "max")
        rows, derived = self.metrics_rows(tid, attempt, ctx, steps, started, ended - 100,
                                          final, horizon, last_action, nan_last,
                                          error.split("\n", 1)[-1] if error and "\n" in error
                                          else None)
        row = (tid, eid, number, state, compact(sampler.config(number)), attempt,
               r.choice(workers), None, '{"gpus":[%d],"cpus":1}' % r.randrange(8), 0, error,
               created, started, ended, rung, None) + derived
        return row, rows, ended

    # -- experiments --

    def experiment_row(self, eid, tmpl, total, state, created, ended, trows):
        spec = copy.deepcopy(self.specs[(tmpl["key"], total)])
        name = "%s-%s-%d" % (tmpl["key"], self.rng.choice(TOPICS), eid)
        spec["name"] = name
        seed = self.rng.randrange(1, 2 ** 31)
        if isinstance(spec.get("searcher"), dict) and "seed" in spec["searcher"]:
            spec["searcher"]["seed"] = seed
        # The summary rungd writes with the row (store.c, write_exp): counts by
        # state, and the trial with the best value (the first in number order
        # among equals).
        counts = {k: 0 for k in STATES}
        maximize = spec.get("mode") == "max"
        best = None
        for t in trows:
            counts[t[3]] += 1
            v = t[18]
            if v is not None and (best is None or (v > best[18] if maximize else v < best[18])):
                best = t
        summary = {"counts": counts, "best": None if best is None else {
            "trial_id": best[0], "value": best[18], "step": best[19],
            "config": json.loads(best[4])}}
        return (eid, name, compact(spec), seed, state, total, created, ended, compact(summary))

    def old_experiment(self, db, eid, sql):
        a = self.a
        r = self.rng
        tmpl = self.templates[(eid - 1) % len(self.templates)]
        canceled = a.canceled_every > 0 and eid % a.canceled_every == 0
        total = a.trials * 2 if canceled else a.trials
        span = 400 * DAY_MS
        created = self.now - span + (eid - 1) * (span - 2 * DAY_MS) // max(1, a.experiments)
        created += r.randrange(0, 3600 * 1000)
        spec = self.specs[(tmpl["key"], total)]
        ctx = (tmpl["kind"], spec["metric"], spec.get("mode") == "max")
        sampler = Sampler(spec["search_space"], r)
        workers = list(range(1, a.workers + 1))
        conc = max(1, spec.get("max_concurrent_trials") or 16)
        trows, rrows = [], []
        last_end = created
        first_tid = self.trial_id + 1
        n_done = a.trials - (CANCELED_TAIL if canceled else 0)
        # conc slots: a trial is proposed when one frees, and holds it until it ends.
        slots = [created] * conc
        for k in range(n_done):
            tcreated = heapq.heappop(slots) + r.randrange(0, 1000)
            row, reps, ended = self.finished_trial(eid, k, tmpl, spec, sampler, tcreated,
                                                    workers)
            heapq.heappush(slots, ended)
            trows.append(row)
            rrows.extend(reps)
            last_end = max(last_end, ended)
        if canceled:
            free = sorted(slots)
            tail_created = [free[min(i, len(free) - 1)] + 100 for i in range(CANCELED_TAIL)]
            cancel_at = max([last_end] + tail_created) + 60 * 1000
            for k in range(n_done, a.trials):
                self.trial_id += 1
                tid = self.trial_id
                tcreated = tail_created[k - n_done]
                cfg = compact(sampler.config(k))
                if k - n_done < 4:  # running when canceled: stopped at its next report
                    started = tcreated + 500
                    nsteps = r.randrange(1, a.reports)
                    reps, derived = self.metrics_rows(tid, 1, ctx, nsteps, started,
                                                      cancel_at - 10, 0.3, 27.0, "stop")
                    rrows.extend(reps)
                    trows.append((tid, eid, k, "canceled", cfg, 1, r.choice(workers), None,
                                  '{"gpus":[0],"cpus":1}', 1, None, tcreated, started,
                                  cancel_at, None, None) + derived)
                else:  # pending when canceled
                    trows.append((tid, eid, k, "canceled", cfg, 1, None, None, None, 0, None,
                                  tcreated, None, cancel_at, None, None) + NO_SUMMARY)
            last_end = cancel_at
        exp_row = self.experiment_row(eid, tmpl, total, "canceled" if canceled else "completed",
                                      created, last_end, trows)
        self.insert(db, sql, exp_row, trows, rrows)
        assert self.trial_id == first_tid + len(trows) - 1
        self.n_finished += len(trows)

    def running_experiment(self, db, eid, tmpl, sql, alive):
        a = self.a
        r = self.rng
        total = a.running_total
        spec = self.specs[(tmpl["key"], total)]
        ctx = (tmpl["kind"], spec["metric"], spec.get("mode") == "max")
        sampler = Sampler(spec["search_space"], r)
        created = self.now - 2 * 3600 * 1000
        trows, rrows = [], []
        k = 0
        for k in range(RUNNING_FINISHED):
            tcreated = created + k * 10 * 1000
            row, reps, ended = self.finished_trial(eid, k, tmpl, spec, sampler, tcreated,
                                                    list(range(1, a.workers + 1)))
            # Keep every finished trial in the past.
            if ended > self.now - 60 * 1000:
                shift = ended - (self.now - 60 * 1000)
                row = row[:11] + (row[11] - shift, row[12] - shift, row[13] - shift) + row[14:]
                reps = [x[:3] + (x[3] - shift,) + x[4:] for x in reps]
            trows.append(row)
            rrows.extend(reps)
            self.n_finished += 1
        for i in range(RUNNING_RUNNING):
            k = RUNNING_FINISHED + i
            self.trial_id += 1
            tid = self.trial_id
            started = self.now - r.randrange(10, 300) * 1000
            nsteps = r.randrange(0, a.reports)
            derived = NO_SUMMARY
            if nsteps:
                reps, derived = self.metrics_rows(tid, 1, ctx, nsteps, started,
                                                  self.now - 2000, 0.2, 27.0)
                rrows.extend(reps)
            trows.append((tid, eid, k, "running", compact(sampler.config(k)), 1,
                          alive[i % len(alive)], "%032x" % r.getrandbits(128),
                          '{"gpus":[%d],"cpus":1}' % (i % 8), 0, None, started - 1000, started,
                          None, None, None) + derived)
        for i in range(RUNNING_PENDING):
            k = RUNNING_FINISHED + RUNNING_RUNNING + i
            self.trial_id += 1
            trows.append((self.trial_id, eid, k, "pending", compact(sampler.config(k)), 1, None,
                          None, None, 0, None, self.now - 60 * 1000, None, None, None, k)
                         + NO_SUMMARY)
        exp_row = self.experiment_row(eid, tmpl, total, "running", created, None, trows)
        self.insert(db, sql, exp_row, trows, rrows)

    def insert(self, db, sql, exp_row, trows, rrows):
        pick = self.pick
        db.execute(sql["experiments"], pick["experiments"](exp_row))
        if pick["trials"] is not None:
            trows = [pick["trials"](t) for t in trows]
        db.executemany(sql["trials"], trows)
        db.executemany(sql["reports"], rrows)
        self.n_trials += len(trows)
        self.n_reports += len(rrows)

    def workers_rows(self):
        a = self.a
        r = self.rng
        rows = []
        for w in range(1, a.workers + 1):
            gpu_node = w <= a.workers * 4 // 5
            gpus = [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "memory_mb": 81920}
                    for i in range(8)] if gpu_node else []
            registered = self.now - r.randrange(30, 500) * DAY_MS
            alive = w <= 10
            last = self.now - 2000 if alive else r.randrange(registered, self.now - DAY_MS)
            hb = None
            if gpu_node:
                hb = compact({"trials": [], "gpus": [
                    {"index": i, "util": round(r.uniform(0, 100), 1),
                     "memory_used_mb": r.randrange(0, 81920), "memory_total_mb": 81920}
                    for i in range(8)]})
            rows.append((w, "node-%02d" % w, "node-%02d.cluster.internal" % w, compact(gpus),
                         0 if gpu_node else 64, registered, last, hb))
        return rows


def stamp_of(args):
    return {"generator": source_hash(), "experiments": args.experiments, "trials": args.trials,
            "reports": args.reports, "workers": args.workers, "seed": args.seed,
            "canceled_every": args.canceled_every, "running": args.running,
            "running_total": args.running_total}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rungd", required=True)
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--experiments", type=int, default=1000)
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--reports", type=int, default=10)
    p.add_argument("--workers", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--canceled-every", type=int, default=50)
    p.add_argument("--running", type=int, default=2)
    p.add_argument("--running-total", type=int, default=5000)
    p.add_argument("--force", action="store_true")
    args = p.parse_args()
    if args.trials < 100 or args.trials % 100 or args.reports < 2 or args.workers < 10:
        p.error("--trials: a multiple of 100 (the grid template has 100 combinations); "
                "--reports >= 2, --workers >= 10")
    if args.running_total % 100:
        p.error("--running-total: a multiple of 100")
    if args.running_total < RUNNING_FINISHED + RUNNING_RUNNING + RUNNING_PENDING:
        p.error("--running-total must be >= %d"
                % (RUNNING_FINISHED + RUNNING_RUNNING + RUNNING_PENDING))
    rb.on_signals_exit()
    os.makedirs(args.cache_dir, exist_ok=True)
    db_path = os.path.join(args.cache_dir, "store.db")
    stamp_path = os.path.join(args.cache_dir, "store.json")
    work = tempfile.mkdtemp(prefix="gen_store.", dir=args.cache_dir)
    generating = False
    try:
        # Quick (a few short rungd runs), and done even for a cached store:
        # the templates this rungd can load again are part of the stamp.
        log("validating %d experiment templates with scratch rungd runs" % len(TEMPLATES))
        specs, tmpl_notes = validate_templates(args.rungd, work,
                                               sorted({args.trials, args.trials * 2,
                                                       args.running_total}))
        for n in tmpl_notes:
            log("NOTE:", n)
        stamp = stamp_of(args)
        stamp["templates"] = [t["key"] for t in TEMPLATES if (t["key"], args.trials) in specs]
        if not args.force and os.path.exists(db_path):
            try:
                with open(stamp_path) as f:
                    old = json.load(f)
            except (OSError, ValueError):
                old = None
            if old is not None and {k: old.get(k) for k in stamp} == stamp:
                print(json.dumps(dict(old, generated=False, cached=True,
                                      bytes=os.path.getsize(db_path),
                                      template_notes=tmpl_notes)))
                return 0
            log("the cached store is absent, or was made with other knobs, templates or "
                "generator: regenerating")
        try:
            os.unlink(stamp_path)
        except FileNotFoundError:
            pass
        remove_db(db_path)
        generating = True
        t0 = time.monotonic()
        log("applying rungd's migrations to", db_path)
        migrate(args.rungd, db_path, work)
        db = sqlite3.connect(db_path, isolation_level=None)
        user_version = db.execute("PRAGMA user_version").fetchone()[0]
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA cache_size=-524288")  # 512 MB
        db.execute("PRAGMA temp_store=MEMORY")
        cols, idx, notes = check_columns(db)
        for n in notes:
            log("NOTE:", n)
        missing = [t + "." + c for t in OPTIONAL for c in OPTIONAL[t] if c not in cols[t]]
        if missing:
            log("this store has no %s (schema before 004): left out" % ", ".join(missing))
        now = int(time.time() * 1000)
        g = Gen(args, specs, now, cols, idx)
        sql = {t: insert_sql(t, cols[t]) for t in REQUIRED}
        db.execute("BEGIN")
        db.executemany(sql["workers"], g.workers_rows())
        t_rows = time.monotonic()
        for eid in range(1, args.experiments + 1):
            g.old_experiment(db, eid, sql)
            if eid % 100 == 0 or eid == args.experiments:
                el = time.monotonic() - t_rows
                log("%d/%d experiments, %d reports, %.0f s (%.0f reports/s)"
                    % (eid, args.experiments, g.n_reports, el, g.n_reports / max(el, 1e-9)))
        alive = list(range(1, 11))
        for i in range(args.running):
            kinds = ("fifo", "rungs") if i % 2 == 0 else ("rungs", "fifo")
            tmpl = next((t for k in kinds for t in g.templates if t["kind"] == k),
                        g.templates[0])
            g.running_experiment(db, args.experiments + 1 + i, tmpl, sql, alive)
        log("committing")
        db.execute("COMMIT")
        bad = db.execute("PRAGMA foreign_key_check").fetchone()
        if bad:
            raise rb.BenchError("foreign key check failed: %r" % (bad,))
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        seconds = time.monotonic() - t0
        size = os.path.getsize(db_path)
        result = dict(stamp, generated=True, seconds=round(seconds, 1), bytes=size,
                      user_version=user_version,
                      experiments_total=args.experiments + args.running,
                      trials_total=g.n_trials, finished_trials=g.n_finished,
                      reports_total=g.n_reports, workers_total=args.workers,
                      unknown_columns=notes, template_notes=tmpl_notes)
        with open(stamp_path + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(stamp_path + ".tmp", stamp_path)
        log("done in %.1f s: %.2f GB, %d trials (%d finished), %d reports"
            % (seconds, size / 1e9, g.n_trials, g.n_finished, g.n_reports))
        print(json.dumps(result))
        return 0
    except BaseException:
        if generating:
            remove_db(db_path)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except rb.BenchError as e:
        print("gen_store: error: %s" % e, file=sys.stderr)
        sys.exit(1)
