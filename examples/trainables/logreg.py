#!/usr/bin/env python3
"""A small, real training run for Rung, in the Python standard library only.

It trains a classifier on "two moons" (two interleaved half circles with
noise, generated from a fixed data seed, so every trial sees the same data)
by mini-batch SGD with momentum and L2 weight decay:

- `--hidden 0`: logistic regression on the two coordinates (a straight line;
  about 85% accuracy on moons);
- `--hidden H`: one hidden layer of H ReLU units, which can bend the boundary
  around the moons (above 95% with a good learning rate).

After every epoch it evaluates on a held-out split and prints one report line
for Rung (docs/api.md, "the report line protocol"):

    @rung {"step": 3, "val_loss": 0.31, "val_acc": 0.88, "train_loss": 0.35}

With a learning rate far too large the weights blow up and the loss becomes
NaN, as it does in any framework: the script then reports that NaN (Python's
json prints it as `NaN`, which Rung reads as a diverged run), says so on
stderr and exits 1.

After every epoch it also saves a checkpoint (weights, momentum, RNG state)
in RUNG_TRIAL_DIR; when rungd resumes a promoted trial (scheduler asha with
"promote": true) it sets RUNG_RESUME_STEP and the run goes on from there.

Hyperparameters come from the command line; those not given there are taken
from RUNG_CONFIG (the trial's config as JSON, which rung-worker sets), then
from the defaults below. So both of these work:

    python3 examples/trainables/logreg.py --lr 0.05 --hidden 16
    RUNG_CONFIG='{"lr": 0.05, "hidden": 16}' python3 examples/trainables/logreg.py

At the defaults a run takes well under a second.
"""
import argparse
import json
import math
import os
import random
import sys
import time

# name: (type, default, help). One table for argv, RUNG_CONFIG and --help.
PARAMS = {
    "lr": (float, 0.1, "learning rate of SGD"),
    "momentum": (float, 0.9, "SGD momentum (0 = plain SGD)"),
    "hidden": (int, 16, "hidden ReLU units; 0 = logistic regression"),
    "epochs": (int, 15, "passes over the training set (one report each)"),
    "batch_size": (int, 16, "examples per SGD step"),
    "weight_decay": (float, 0.0, "L2 penalty added to the gradient"),
    "seed": (int, 0, "seed of the initial weights and of the shuffling"),
    "noise": (float, 0.2, "standard deviation of the noise on the moons"),
    "n_train": (int, 300, "training examples"),
    "n_val": (int, 200, "validation examples"),
    "data_seed": (int, 7, "seed of the dataset (the same for every trial)"),
    "sleep_s": (float, 0.0, "seconds to sleep per epoch, to watch a run in the dashboard"),
}


def integer(text):
    """An int from "16", 16, or "16.0" / 16.0 (how a searcher may print an
    integer-valued float); anything else is an error."""
    value = float(text)
    if not value.is_integer():
        raise ValueError("not an integer: %r" % (text,))
    return int(value)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, (typ, default, help_text) in PARAMS.items():
        typ = integer if typ is int else typ
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=typ, default=None,
                       help="%s (default %s)" % (help_text, default))
    args = vars(p.parse_args(argv))
    config = {}
    raw = os.environ.get("RUNG_CONFIG")
    if raw:
        try:
            config = json.loads(raw)
        except ValueError as e:
            p.error("RUNG_CONFIG is not valid JSON: %s" % e)
    out = {}
    for name, (typ, default, _) in PARAMS.items():
        typ = integer if typ is int else typ
        value = args[name]
        if value is None:
            # Accept "batch_size" and "batch-size" alike in the config.
            value = config.get(name, config.get(name.replace("_", "-"), default))
        try:
            out[name] = typ(value)
        except (TypeError, ValueError):
            p.error("%s: %r is not a valid %s" % (name, value, PARAMS[name][0].__name__))
    if out["epochs"] < 1 or out["batch_size"] < 1 or out["hidden"] < 0:
        p.error("epochs and batch_size must be >= 1, hidden >= 0")
    if out["n_train"] < 1 or out["n_val"] < 1:
        p.error("n_train and n_val must be >= 1")
    return out


def make_moons(n, noise, rng):
    """n points of two interleaved half circles, labels 0 and 1, with
    Gaussian noise; coordinates roughly centered and scaled to unit size."""
    data = []
    for i in range(n):
        label = i % 2
        t = math.pi * rng.random()
        if label == 0:
            x, y = math.cos(t), math.sin(t)
        else:
            x, y = 1.0 - math.cos(t), 0.5 - math.sin(t)
        x += rng.gauss(0.0, noise)
        y += rng.gauss(0.0, noise)
        data.append(((x - 0.5) / 0.9, (y - 0.25) / 0.5, label))
    rng.shuffle(data)
    return data


def log_loss(z, y):
    """Binary cross-entropy of the logit z against label y, computed without
    overflow for finite z (and NaN once z is not finite, as it should be)."""
    return max(z, 0.0) - z * y + math.log1p(math.exp(-abs(z)))


def sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)  # z < 0 (or NaN): no overflow
    return e / (1.0 + e)


class Model:
    """logit = w2 . relu(W1 x + b1) + b2, or w . x + b when hidden is 0.
    Parameters live in one flat list so that SGD is one loop."""

    def __init__(self, hidden, rng):
        self.hidden = hidden
        if hidden == 0:
            self.params = [0.0, 0.0, 0.0]  # w0, w1, b
        else:
            # He initialization for the ReLU layer, small output weights.
            p = []
            for _ in range(hidden):
                p += [rng.gauss(0.0, math.sqrt(2.0 / 2)), rng.gauss(0.0, math.sqrt(2.0 / 2)),
                      0.0]  # W1[j][0], W1[j][1], b1[j]
            for _ in range(hidden):
                p.append(rng.gauss(0.0, math.sqrt(1.0 / hidden)))  # w2[j]
            p.append(0.0)  # b2
            self.params = p

    def forward(self, x0, x1):
        """(logit, hidden activations) of one example."""
        p = self.params
        if self.hidden == 0:
            return p[0] * x0 + p[1] * x1 + p[2], None
        h = []
        z = p[-1]
        base = 3 * self.hidden
        for j in range(self.hidden):
            a = p[3 * j] * x0 + p[3 * j + 1] * x1 + p[3 * j + 2]
            a = a if a > 0.0 else 0.0
            h.append(a)
            z += p[base + j] * a
        return z, h

    def add_gradient(self, grad, x0, x1, y):
        """Adds d(loss)/d(params) of one example to grad; returns its loss."""
        z, h = self.forward(x0, x1)
        dz = sigmoid(z) - y
        if self.hidden == 0:
            grad[0] += dz * x0
            grad[1] += dz * x1
            grad[2] += dz
            return log_loss(z, y)
        p = self.params
        base = 3 * self.hidden
        for j in range(self.hidden):
            grad[base + j] += dz * h[j]
            if h[j] > 0.0:
                da = dz * p[base + j]
                grad[3 * j] += da * x0
                grad[3 * j + 1] += da * x1
                grad[3 * j + 2] += da
        grad[-1] += dz
        return log_loss(z, y)


def evaluate(model, data):
    """(mean loss, accuracy) on data."""
    total, correct = 0.0, 0
    for x0, x1, y in data:
        z, _ = model.forward(x0, x1)
        total += log_loss(z, y)
        correct += int((z > 0.0) == (y == 1))
    return total / len(data), correct / len(data)


def report(**metrics):
    # One line per result, flushed at once: rung-worker reads it as it comes.
    print("@rung " + json.dumps(metrics), flush=True)


def checkpoint_path(folder, epoch):
    return os.path.join(folder, "checkpoint-%d.json" % epoch)


def save_checkpoint(epoch, model, velocity, rng):
    """Everything the next epoch needs, in RUNG_TRIAL_DIR: ASHA's promote
    variant pauses a trial at a rung and resumes it later from there. One
    file per epoch, saved before the epoch is reported: the program may run
    an epoch or two past the rung before its SIGTERM comes, and rungd resumes
    it from the step it paused at. Written to a temporary file and renamed,
    so a kill mid-write leaves no half file."""
    folder = os.environ.get("RUNG_TRIAL_DIR")
    if not folder:
        return
    path = checkpoint_path(folder, epoch)
    with open(path + ".tmp", "w") as f:
        json.dump({"epoch": epoch, "params": model.params, "velocity": velocity,
                   "rng": rng.getstate()}, f)
    os.replace(path + ".tmp", path)


def load_checkpoint(model, velocity, rng):
    """The epoch to go on after when rungd resumes a promoted trial
    (RUNG_RESUME_STEP), with the weights, momentum and RNG restored; 0 to
    start afresh (no resume, or no checkpoint at that epoch)."""
    resume = int(os.environ.get("RUNG_RESUME_STEP", "0") or 0)
    folder = os.environ.get("RUNG_TRIAL_DIR")
    if resume <= 0 or not folder:
        return 0
    try:
        with open(checkpoint_path(folder, resume)) as f:
            ck = json.load(f)
    except (OSError, ValueError) as e:
        print("no checkpoint to resume from (%s): starting over" % e, flush=True)
        return 0
    if ck.get("epoch") != resume:
        print("checkpoint is at epoch %s, not %d: starting over" % (ck.get("epoch"), resume),
              flush=True)
        return 0
    model.params[:] = ck["params"]
    velocity[:] = ck["velocity"]
    state = ck["rng"]
    rng.setstate((state[0], tuple(state[1]), state[2]))
    print("resumed from the checkpoint of epoch %d" % resume, flush=True)
    return resume


def main(argv=None):
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    data_rng = random.Random(cfg["data_seed"])
    train = make_moons(cfg["n_train"], cfg["noise"], data_rng)
    val = make_moons(cfg["n_val"], cfg["noise"], data_rng)
    rng = random.Random(cfg["seed"])
    model = Model(cfg["hidden"], rng)
    velocity = [0.0] * len(model.params)
    lr, mom, wd, bs = cfg["lr"], cfg["momentum"], cfg["weight_decay"], cfg["batch_size"]
    print("training: %d examples, %d parameters, %s" % (
        len(train), len(model.params), json.dumps(cfg, sort_keys=True)), flush=True)

    start_epoch = load_checkpoint(model, velocity, rng)
    for epoch in range(start_epoch + 1, cfg["epochs"] + 1):
        order = list(range(len(train)))
        rng.shuffle(order)
        train_loss = 0.0
        try:
            for start in range(0, len(order), bs):
                batch = order[start:start + bs]
                grad = [0.0] * len(model.params)
                for i in batch:
                    x0, x1, y = train[i]
                    train_loss += model.add_gradient(grad, x0, x1, y)
                params = model.params
                for k in range(len(params)):
                    g = grad[k] / len(batch) + wd * params[k]
                    velocity[k] = mom * velocity[k] + g
                    params[k] -= lr * velocity[k]
            val_loss, val_acc = evaluate(model, val)
        except OverflowError:
            # math.exp of an overflowed value: the run has diverged.
            train_loss = val_loss = val_acc = float("nan")
        train_loss /= len(train)
        if math.isfinite(val_loss):
            save_checkpoint(epoch, model, velocity, rng)
        report(step=epoch, val_loss=val_loss, val_acc=val_acc, train_loss=train_loss)
        if not math.isfinite(val_loss):
            sys.stderr.write("diverged: val_loss is %r at epoch %d (lr %g too large?)\n"
                             % (val_loss, epoch, lr))
            return 1
        if cfg["sleep_s"] > 0:
            time.sleep(cfg["sleep_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
