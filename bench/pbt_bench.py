"""pbt_bench: Population Based Training against ASHA with bayes, on rung-train.

Driven by bench/pbt.sh (which finds the programs and sets the knobs). For
each seed, on a real rungd (loopback, a temporary database) and a fresh
real rung-worker per experiment (--cpu-slots SLOTS, its own work folder),
rung-train trains the default MLP (784-512-256-10, SGD, cosine schedule
over `epochs`) on Fashion-MNIST, 55,000 training samples and 5,000 held
out (val_acc, the metric tuned, mode max):

- pbt-synch / pbt-async: `num_samples` POPULATION members, initial lr
  (loguniform) and momentum (uniform) drawn by the random searcher,
  scheduler pbt with perturbation_interval INTERVAL, max_t EPOCHS, both
  parameters in hyperparam_mutations (the same domains), Ray's defaults
  otherwise (quantile_fraction 0.25, resample_probability 0.25).
- pb2: as pbt-async, but scheduler pb2 with both parameters in
  hyperparam_bounds (the new values chosen by PB2's GP bandit).
- asha-bayes: the same space held constant per trial, searcher bayes,
  scheduler asha (max_t EPOCHS, grace_period 1, reduction_factor 3),
  num_samples ASHA_SAMPLES, chosen so that its epochs match PBT's.

The figure is the test accuracy of each experiment's best member: the
trial that reached EPOCHS with the highest final val_acc. rung-train
reports only val_* (test metrics only with val_samples 0, which would tune
on the test set), so the member's last checkpoint is copied aside and
rung-train resumes from it for one more epoch with lr 0 (the weights do
not move) and val_samples 0, which reports the test set's accuracy as
val_acc. A second such run with the default split must give back the
member's reported final val_acc exactly (printed as `check`).

Epochs are counted from the API (the sum over trials of their last
step, plus the steps redone when a program started over without its
checkpoint at step m: m of them), with the @rung lines rung-worker refused
(`warnings`: rung-train prints a diverged run's losses as `nan`, not
JSON) shown apart, and as a cross-check from the trial folders (every
`@rung` line in stdout.log: epochs finished, restarts included).

Checkpoints under pbt: a watcher polls the worker's trial folders every
0.2 s and records the content of each ckpt-<step>.bin it sees (size,
header and the CRC-32 at its end). An exploit at step m from donor D took
D's weights when the receiver's ckpt-m at some point held what D's ckpt-m
held (a hard link, clone or byte copy alike); otherwise it resumed from
its own ckpt-m with the donor's config (rung-train loads whatever ckpt-m
the folder holds), or it started over (stderr.log: "no checkpoint of
epoch m here").

Prints per-seed lines, then medians, ratios and one JSON object per arm.
Never a pass/fail: the exit status is non-zero only on an error.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402

CKPT_RE = re.compile(r"^ckpt-(\d+)\.bin$")
HEADER_RE = re.compile(r"^==== rung-worker: trial \d+, attempt")
START_OVER_RE = re.compile(r"no checkpoint of epoch (\d+) here: starting over")
COPIED_RE = re.compile(r"pbt: copied trial (\d+)'s folder \(resuming from step (\d+)\)")
NOT_COPIED_RE = re.compile(r"pbt: could not copy trial (\d+)'s folder")


def space(a, seed):
    return {"lr": {"type": "loguniform", "low": a.lr_low, "high": a.lr_high},
            "momentum": {"type": "uniform", "low": a.mom_low, "high": a.mom_high},
            "epochs": a.epochs, "seed": seed, "threads": 1}


def base_spec(a, name, seed):
    return {"name": name, "metric": "val_acc", "mode": "max", "search_space": space(a, seed),
            "best_scope": "last", "max_failures": 0, "max_failed_trials": 0,
            "resources_per_trial": {"cpu": 1, "gpu": 0},
            "trainable": {"type": "builtin", "model": "mlp", "dataset": "fashion-mnist"}}


def pbt_spec(a, seed, arm):
    """The spec of arm pbt-synch, pbt-async or pb2 (asynchronous, as Ray's
    PB2 by default), with the same population and milestones."""
    s = base_spec(a, "%s-%d" % (arm, seed), seed)
    sp = s["search_space"]
    domains = {"lr": sp["lr"], "momentum": sp["momentum"]}
    sched = {"type": "pbt", "perturbation_interval": a.interval, "synch": arm == "pbt-synch",
             "max_t": a.epochs}
    if arm == "pb2":
        sched.update(type="pb2", hyperparam_bounds=domains)
    else:
        sched["hyperparam_mutations"] = domains
    s.update(num_samples=a.population, searcher={"type": "random", "seed": seed},
             scheduler=sched)
    return s


def asha_spec(a, seed):
    s = base_spec(a, "asha-bayes-%d" % seed, seed)
    s.update(num_samples=a.asha_samples, searcher={"type": "bayes", "seed": seed},
             scheduler={"type": "asha", "max_t": a.epochs, "grace_period": 1,
                        "reduction_factor": 3})
    return s


def content_key(path, size):
    """What tells one checkpoint's content from another's: its size, its
    header (magic, version, parameter count, epoch, global step: 40 bytes)
    and its last 4 bytes, a CRC-32 of everything before them
    (kernels/checkpoint.c). The same for a file, its hard link, clone or
    byte copy."""
    with open(path, "rb") as f:
        head = f.read(40)
        f.seek(max(0, size - 4))
        tail = f.read(4)
    return (size, head, tail)


class Watcher(threading.Thread):
    """Records the content of every ckpt-<step>.bin seen in
    <workdir>/trials/<id>/ (each file read once per inode, mtime and size)."""

    def __init__(self, trials_dir, period=0.2):
        super().__init__(daemon=True)
        self.trials_dir, self.period = trials_dir, period
        self.seen = {}  # (trial id, step) -> set of content keys
        self.keys = {}  # (ino, mtime_ns, size) -> content key
        self.halt = threading.Event()

    def scan(self):
        try:
            tids = os.listdir(self.trials_dir)
        except OSError:
            return
        for tid in tids:
            if not tid.isdigit():
                continue
            d = os.path.join(self.trials_dir, tid)
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for n in names:
                m = CKPT_RE.match(n)
                if not m:
                    continue
                path = os.path.join(d, n)
                try:
                    st = os.stat(path)
                    ident = (st.st_ino, st.st_mtime_ns, st.st_size)
                    if ident not in self.keys:
                        self.keys[ident] = content_key(path, st.st_size)
                except OSError:
                    continue
                self.seen.setdefault((int(tid), int(m.group(1))), set()).add(self.keys[ident])

    def run(self):
        while not self.halt.wait(self.period):
            self.scan()


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def start_worker(a, d, workdir, name):
    os.makedirs(workdir)
    logf = open(os.path.join(workdir, "..", name + ".log"), "ab")
    p = rb.spawn([a.worker, "--server", d.url, "--name", name, "--gpus", "none",
                  "--cpu-slots", str(a.slots), "--workdir", workdir,
                  "--keep-trials", "100000"], logf, logf, cwd=workdir)
    logf.close()
    return p


def run_experiment(a, d, client, work, spec):
    """Runs one experiment on a fresh worker; returns what was measured."""
    name = spec["name"]
    workdir = os.path.join(work, name)
    trials_dir = os.path.join(workdir, "trials")
    watcher = Watcher(trials_dir)
    watcher.start()
    worker = start_worker(a, d, workdir, name)
    t0 = time.monotonic()
    ended = False
    try:
        eid = client.json("POST", "/api/v1/experiments", spec)["id"]
        exp = rb.wait_ended(client, eid, worker, a.exp_timeout_s,
                            "%s (log: %s.log)" % (name, os.path.join(work, name)), 0.5)
        wall = time.monotonic() - t0
        ended = True
    finally:
        if not ended and worker.poll() is None:
            # A first SIGTERM lets running trials finish; a second ends them.
            worker.send_signal(signal.SIGTERM)
            time.sleep(0.5)
        rb.stop_process(worker, 60)
        watcher.halt.set()
        watcher.join(5)
    watcher.scan()
    trials = rb.all_trials(client, eid)
    if exp["state"] != "completed":
        raise rb.BenchError("%s ended %s (%s)" % (name, exp["state"], exp.get("ended_reason")))
    return measure(a, name, trials, trials_dir, watcher.seen, wall)


def measure(a, name, trials, trials_dir, seen, wall):
    api_steps = sum(t["step"] or 0 for t in trials)
    # @rung lines rung-worker refused: epochs run that the API has no step
    # for (a rung-train older than its NaN tokens printed `-nan`).
    refused = sum((t.get("warnings") or {}).get("count", 0) for t in trials)
    redone = log_epochs = starts = copied = not_copied = 0
    started_over = {}
    # Under pbt every milestone's checkpoint must outlive the run (a late
    # member may still copy it: RUNG_KEEP_CHECKPOINTS_EVERY).
    milestones = set(range(a.interval, a.epochs + 1, a.interval))
    kept = {"completed": 0, "completed_missing_milestone": 0}
    for t in trials:
        tdir = os.path.join(trials_dir, str(t["id"]))
        if t["state"] == "completed":
            try:
                have = {int(m.group(1)) for m in map(CKPT_RE.match, os.listdir(tdir)) if m}
            except OSError:
                have = set()
            kept["completed"] += 1
            kept["completed_missing_milestone"] += not milestones <= have
        log_epochs += sum(1 for line in read(os.path.join(tdir, "stdout.log")).splitlines()
                          if line.startswith("@rung "))
        err = read(os.path.join(tdir, "stderr.log"))
        starts += sum(1 for line in err.splitlines() if HEADER_RE.match(line))
        copied += len(COPIED_RE.findall(err))
        not_copied += len(NOT_COPIED_RE.findall(err))
        for m in START_OVER_RE.findall(err):
            redone += int(m)
            started_over.setdefault(t["id"], []).append(int(m))
    # Exploits and whose weights each one went on from.
    exploits = {"total": 0, "donor_weights": 0, "own_weights": 0, "started_over": 0,
                "unseen": 0}
    ended = {t["id"]: t.get("ended_at") for t in trials}
    donor_done_before = 0
    detail = []
    for t in trials:
        for x in t.get("lineage") or []:
            exploits["total"] += 1
            m, donor = x["step"], x["donor"]
            mine = seen.get((t["id"], m), set())
            theirs = seen.get((donor, x["donor_step"]), set())
            if mine & theirs:
                how = "donor_weights"
            elif m in started_over.get(t["id"], []):
                how = "started_over"
            elif mine:
                how = "own_weights"
            else:
                how = "unseen"
            exploits[how] += 1
            done = bool(ended.get(donor) and ended[donor] < x["time"])
            donor_done_before += done
            detail.append({"trial": t["id"], "step": m, "donor": donor, "weights": how,
                           "donor_completed_before": done})
    exploits["donor_completed_before"] = donor_done_before
    finals = [t for t in trials if t["state"] == "completed" and t["step"] == a.epochs
              and isinstance((t.get("last") or {}).get("val_acc"), (int, float))]
    best = max(finals, key=lambda t: (t["last"]["val_acc"], -t["id"])) if finals else None
    return {"name": name, "trials": len(trials), "completed_full": len(finals),
            "api_epochs": api_steps + redone, "redone_epochs": redone, "refused_reports": refused,
            "no_report_trials": sum(1 for t in trials if t["step"] is None),
            "log_epochs": log_epochs, "program_starts": starts, "copies": copied,
            "copy_failures": not_copied, "exploits": exploits, "exploit_log": detail,
            "checkpoints_at_end": kept,
            "wall_s": round(wall, 1),
            "best": best, "best_dir": os.path.join(trials_dir, str(best["id"])) if best else None}


def evaluate(a, trial_dir, seed, val_samples):
    """val_acc of the member's last checkpoint after an epoch at lr 0."""
    tmp = tempfile.mkdtemp(prefix="pbt-eval.")
    try:
        src = os.path.join(trial_dir, "ckpt-%d.bin" % a.epochs)
        shutil.copyfile(src, os.path.join(tmp, "ckpt-%d.bin" % a.epochs))
        cfg = {"epochs": a.epochs + 1, "lr": 0, "seed": seed, "threads": 1}
        if val_samples is not None:
            cfg["val_samples"] = val_samples
        env = dict(os.environ, RUNG_TRIAL_DIR=tmp, RUNG_RESUME_STEP=str(a.epochs))
        r = subprocess.run([a.train, "--config", json.dumps(cfg)], env=env, capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0 or "resuming after epoch %d" % a.epochs not in r.stderr:
            raise rb.BenchError("evaluation of %s failed (status %d): %s"
                                % (src, r.returncode, r.stderr.strip()[-400:]))
        last = [line for line in r.stdout.splitlines() if line.startswith("@rung ")][-1]
        return json.loads(last[len("@rung "):])["val_acc"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fmt_acc(v):
    return "-" if v is None else "%.4f" % v


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rungd", required=True)
    p.add_argument("--worker", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--modes", default="synch,async,pb2")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--interval", type=int, default=3)
    p.add_argument("--population", type=int, default=8)
    p.add_argument("--asha-samples", type=int, default=18)
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--lr-low", type=float, default=1e-3)
    p.add_argument("--lr-high", type=float, default=0.3)
    p.add_argument("--mom-low", type=float, default=0.5)
    p.add_argument("--mom-high", type=float, default=0.95)
    p.add_argument("--exp-timeout-s", type=int, default=1800)
    p.add_argument("--keep", action="store_true", help="keep the work folder (debugging)")
    a = p.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in ("synch", "async", "pb2"):
            p.error("--modes: synch, async and/or pb2, not %r" % m)
    rb.on_signals_exit()
    work = tempfile.mkdtemp(prefix="pbt-bench.")
    d = rb.Rungd(a.rungd, os.path.join(work, "rung.db"), os.path.join(work, "rungd.log"))
    arms = [m if m == "pb2" else "pbt-" + m for m in modes] + ["asha-bayes"]
    rows = {arm: [] for arm in arms}
    try:
        d.start(60)
        client = rb.Client(d.host, d.port, timeout=60)
        print("rungd %s; a fresh rung-worker per experiment, %d CPU slots, 1 OpenBLAS thread "
              "per trial" % (d.url, a.slots))
        print("space: lr loguniform [%g, %g], momentum uniform [%g, %g]; epochs %d (cosine "
              "to 0 over them); metric val_acc (5,000 held out), max"
              % (a.lr_low, a.lr_high, a.mom_low, a.mom_high, a.epochs))
        print("pbt: population %d, perturbation_interval %d, max_t %d, quantile_fraction 0.25, "
              "resample_probability 0.25, random initial configs; asha: bayes, num_samples %d, "
              "max_t %d, grace_period 1, reduction_factor 3"
              % (a.population, a.interval, a.epochs, a.asha_samples, a.epochs))
        print()
        print("epochs: from the API (sum of last steps, plus steps redone); refused: @rung lines "
              "rung-worker refused; logged: @rung lines in the trial folders; full: trials run "
              "to max_t with a final val_acc")
        print("%-11s %4s %6s %5s %7s %7s %7s %7s %8s %8s %7s  %s"
              % ("arm", "seed", "trials", "full", "epochs", "refused", "logged", "starts",
                 "val_acc", "test_acc", "wall_s",
                 "exploits: donor/own/over/unseen (donor done before)"))
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            for arm in arms:
                spec = asha_spec(a, seed) if arm == "asha-bayes" else pbt_spec(a, seed, arm)
                r = run_experiment(a, d, client, work, spec)
                r["seed"] = seed
                b = r.pop("best")
                r["best_trial"] = b["id"] if b else None
                r["best_val_acc"] = b["last"]["val_acc"] if b else None
                r["best_config"] = b["config"] if b else None
                r["best_lineage"] = len(b.get("lineage") or []) if b else None
                r["test_acc"] = r["check_val_acc"] = None
                if b:
                    r["test_acc"] = evaluate(a, r["best_dir"], seed, 0)
                    r["check_val_acc"] = evaluate(a, r["best_dir"], seed, None)
                if not a.keep:
                    shutil.rmtree(os.path.join(work, spec["name"]), ignore_errors=True)
                r.pop("best_dir")
                x = r["exploits"]
                ex = ("%d: %d/%d/%d/%d (%d)" % (x["total"], x["donor_weights"], x["own_weights"],
                                                x["started_over"], x["unseen"],
                                                x["donor_completed_before"])
                      if arm != "asha-bayes" else "")
                check = ""
                if r["check_val_acc"] is not None and r["check_val_acc"] != r["best_val_acc"]:
                    check = "  check: lr-0 epoch gave val_acc %s, not %s" % (
                        r["check_val_acc"], r["best_val_acc"])
                print("%-11s %4d %6d %5d %7d %7d %7d %7d %8s %8s %7.0f  %s%s"
                      % (arm, seed, r["trials"], r["completed_full"], r["api_epochs"],
                         r["refused_reports"], r["log_epochs"], r["program_starts"],
                         fmt_acc(r["best_val_acc"]),
                         fmt_acc(r["test_acc"]), r["wall_s"], ex, check), flush=True)
                rows[arm].append(r)
        summarize(a, arms, rows)
    finally:
        d.stop(30)
        if a.keep:
            print("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def summarize(a, arms, rows):
    print()
    print("== medians over %d seed(s) ==" % len(rows[arms[0]]))
    print("%-11s %9s %9s %10s %9s %8s" % ("arm", "test_acc", "val_acc", "epochs", "logged",
                                          "wall_s"))
    meds = {}
    for arm in arms:
        rs = rows[arm]
        meds[arm] = {k: med([r[k] for r in rs]) for k in
                     ("test_acc", "best_val_acc", "api_epochs", "log_epochs", "wall_s")}
        m = meds[arm]
        print("%-11s %9s %9s %10s %9s %8.0f" % (arm, fmt_acc(m["test_acc"]),
                                                fmt_acc(m["best_val_acc"]),
                                                "%g" % m["api_epochs"], "%g" % m["log_epochs"],
                                                m["wall_s"]))
    asha = meds["asha-bayes"]
    for arm in arms[:-1]:
        m = meds[arm]
        if m["test_acc"] and asha["test_acc"]:
            wins = sum(1 for r, s in zip(rows[arm], rows["asha-bayes"])
                       if r["test_acc"] is not None and s["test_acc"] is not None
                       and r["test_acc"] > s["test_acc"])
            ties = sum(1 for r, s in zip(rows[arm], rows["asha-bayes"])
                       if r["test_acc"] is not None and r["test_acc"] == s["test_acc"])
            print("%s / asha-bayes: median test accuracy %.4f / %.4f = %.4f; test error "
                  "%.4f / %.4f = %.3f; epochs (API) %g / %g = %.2f, logged %g / %g = %.2f; "
                  "seeds higher/level/lower %d/%d/%d"
                  % (arm, m["test_acc"], asha["test_acc"], m["test_acc"] / asha["test_acc"],
                     1 - m["test_acc"], 1 - asha["test_acc"],
                     (1 - m["test_acc"]) / (1 - asha["test_acc"]), m["api_epochs"],
                     asha["api_epochs"], m["api_epochs"] / asha["api_epochs"],
                     m["log_epochs"], asha["log_epochs"], m["log_epochs"] / asha["log_epochs"],
                     wins, ties, len(rows[arm]) - wins - ties))
        x = {k: sum(r["exploits"][k] for r in rows[arm]) for k in rows[arm][0]["exploits"]}
        print("%s exploits over all seeds: %d; went on from the donor's checkpoint %d, from the "
              "receiver's own checkpoint of that step (the donor's config without its weights) "
              "%d, started over %d, not seen %d; donor completed before the exploit %d"
              % (arm, x["total"], x["donor_weights"], x["own_weights"], x["started_over"],
                 x["unseen"], x["donor_completed_before"]))
    for arm in arms[:-1]:
        k = {key: sum(r["checkpoints_at_end"][key] for r in rows[arm])
             for key in ("completed", "completed_missing_milestone")}
        print("%s completed trials %d, of which a milestone's checkpoint was missing from the "
              "folder at the end %d" % (arm, k["completed"], k["completed_missing_milestone"]))
    print()
    for arm in arms:
        for r in rows[arm]:
            print(json.dumps(dict(r, arm=arm), sort_keys=True))


if __name__ == "__main__":
    try:
        main()
    except rb.BenchError as e:
        print("pbt_bench: %s" % e, file=sys.stderr)
        sys.exit(1)
