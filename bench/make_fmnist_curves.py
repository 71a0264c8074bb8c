#!/usr/bin/env python3
"""Make the Fashion-MNIST MLP learning-curve table (bench/data/fmnist-mlp-curves).

Runs the built rung-train over a fixed, seeded set of configs of a 7-parameter
space and records every epoch's val_loss, val_acc and epoch_s from its @rung
lines, so that bench/multifidelity.c can replay multi-fidelity searches on
real learning curves without training (a tabular benchmark, as in LCBench or
Syne Tune's blackbox repository).

    python3 bench/make_fmnist_curves.py build/bin/rung-train \
        [--out bench/data/fmnist-mlp-curves] [--n 500] [--jobs 2]

Writes, in --out:
  space.json       the Rung search_space the configs are drawn from
                   (its tunables and the constants every run gets)
  curves.jsonl.gz  one JSON object a line, in id order:
                   {"id", "config", "val_loss": [E], "val_acc": [E],
                    "epoch_s": [E], "wall_s"}
                   config holds the 7 tuned values only; wall_s is the whole
                   process' wall time (data loading and validation included)
A non-finite loss (rung-train prints nan / inf in its @rung line when a run
diverges) is recorded as JSON null; a finite but huge loss is kept as it is.
Readers decide how to cap them (bench/multifidelity.c: 10, above chance's
ln 10 = 2.30).

Progress is appended to curves.partial.jsonl in --out, so an interrupted run
resumes where it stopped; the .gz is written (and the partial file removed)
when every config is done.
"""
import argparse
import concurrent.futures as cf
import gzip
import json
import math
import os
import random
import re
import subprocess
import sys
import threading
import time

EPOCHS = 27

SPACE = {
    "lr": {"type": "loguniform", "low": 0.001, "high": 0.5},
    "momentum": {"type": "uniform", "low": 0.0, "high": 0.99},
    "weight_decay": {"type": "loguniform", "low": 1e-6, "high": 1e-2},
    "hidden": {"type": "lograndint", "low": 16, "high": 513},
    "layers": {"type": "randint", "low": 1, "high": 4},
    "batch_size": {"type": "choice", "values": [32, 64, 128, 256]},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.5},
}


def constants(train_samples, val_samples):
    return {
        "epochs": EPOCHS,
        "train_samples": train_samples,
        "val_samples": val_samples,
        "threads": 1,
        "seed": 0,
    }


def draw_configs(n, seed):
    """n configs drawn uniformly (log-uniformly for the log domains) from
    SPACE with Python's Mersenne Twister seeded by seed: the same list on
    every machine and Python 3 version."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = {}
        for name, d in SPACE.items():
            t = d["type"]
            if t == "uniform":
                c[name] = d["low"] + (d["high"] - d["low"]) * rng.random()
            elif t == "loguniform":
                lo, hi = math.log(d["low"]), math.log(d["high"])
                c[name] = math.exp(lo + (hi - lo) * rng.random())
            elif t == "lograndint":
                lo, hi = math.log(d["low"]), math.log(d["high"])
                v = int(math.floor(math.exp(lo + (hi - lo) * rng.random())))
                c[name] = min(max(v, d["low"]), d["high"] - 1)
            elif t == "randint":
                c[name] = d["low"] + int(rng.random() * (d["high"] - d["low"]))
            elif t == "choice":
                c[name] = d["values"][int(rng.random() * len(d["values"]))]
        out.append(c)
    return out


NONFINITE = re.compile(r'(?<=[:\[,\s])-?(nan|inf|infinity)\b', re.IGNORECASE)


def parse_rung_line(line):
    """The JSON of one @rung line, with nan / inf (which rung-train prints as
    C's printf does, not as JSON) read as None."""
    body = NONFINITE.sub("null", line[len("@rung"):].strip())
    return json.loads(body)


def finite_or_none(v):
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return v


def run_one(train_bin, cid, config, consts):
    full = dict(config)
    full.update(consts)
    t0 = time.monotonic()
    p = subprocess.run([train_bin, "--config", json.dumps(full)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError("config %d: rung-train exited %d: %s" %
                           (cid, p.returncode, p.stderr.strip()[-400:]))
    rows = {}
    for line in p.stdout.splitlines():
        if line.startswith("@rung"):
            r = parse_rung_line(line)
            rows[int(r["step"])] = r
    if sorted(rows) != list(range(1, EPOCHS + 1)):
        raise RuntimeError("config %d: steps %s, wanted 1..%d" % (cid, sorted(rows), EPOCHS))
    return {
        "id": cid,
        "config": config,
        "val_loss": [finite_or_none(rows[e].get("val_loss")) for e in range(1, EPOCHS + 1)],
        "epoch_s": [rows[e]["epoch_s"] for e in range(1, EPOCHS + 1)],
        "val_acc": [finite_or_none(rows[e].get("val_acc")) for e in range(1, EPOCHS + 1)],
        "wall_s": round(wall, 4),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rung_train", help="path of the built rung-train binary")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "data", "fmnist-mlp-curves"))
    ap.add_argument("--n", type=int, default=500, help="configs (default 500)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the config draw (default 0)")
    ap.add_argument("--jobs", type=int, default=2, help="rung-train processes at once (default 2)")
    ap.add_argument("--train-samples", type=int, default=4000,
                    help="train_samples, of which val_samples are held out (default 4000)")
    ap.add_argument("--val-samples", type=int, default=1000, help="val_samples (default 1000)")
    ap.add_argument("--limit", type=int, default=0, help="run only the first N configs (timing)")
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    consts = constants(a.train_samples, a.val_samples)
    space = dict(SPACE)
    space.update(consts)
    with open(os.path.join(a.out, "space.json"), "w") as f:
        json.dump(space, f, indent=2)
        f.write("\n")

    configs = draw_configs(a.n, a.seed)
    todo_n = a.limit if a.limit > 0 else a.n
    partial = os.path.join(a.out, "curves.partial.jsonl")
    done = {}
    if os.path.exists(partial):
        with open(partial) as f:
            for line in f:
                line = line.strip()
                if line:
                    r = json.loads(line)
                    if r["config"] == configs[r["id"]]:
                        done[r["id"]] = r
    todo = [i for i in range(todo_n) if i not in done]
    print("%d configs, %d done, %d to run, %d at once" % (todo_n, len(done), len(todo), a.jobs),
          flush=True)

    lock = threading.Lock()
    t0 = time.monotonic()
    with open(partial, "a") as pf, cf.ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(run_one, a.rung_train, i, configs[i], consts): i for i in todo}
        for k, fut in enumerate(cf.as_completed(futs), 1):
            r = fut.result()
            with lock:
                done[r["id"]] = r
                pf.write(json.dumps(r) + "\n")
                pf.flush()
            if k % 25 == 0 or k == len(todo):
                el = time.monotonic() - t0
                print("%d/%d in %.0f s (%.0f s to go)" %
                      (k, len(todo), el, el / k * (len(todo) - k)), flush=True)
    elapsed = time.monotonic() - t0

    if a.limit > 0:
        walls = [done[i]["wall_s"] for i in range(todo_n)]
        print("limit %d: mean wall %.2f s a config, %.1f s elapsed" %
              (todo_n, sum(walls) / len(walls), elapsed))
        return
    out = os.path.join(a.out, "curves.jsonl.gz")
    # mtime 0: the same table gives the same bytes.
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                               filename="") as gz:
        for i in range(a.n):
            gz.write((json.dumps(done[i], separators=(",", ":")) + "\n").encode())
    os.remove(partial)
    diverged = sum(1 for i in range(a.n) if any(v is None for v in done[i]["val_loss"]))
    print("wrote %s: %d configs, %d bytes, %d with a non-finite loss; this run %.0f s" %
          (out, a.n, os.path.getsize(out), diverged, elapsed))


if __name__ == "__main__":
    sys.exit(main())
