#!/usr/bin/python3
"""A PyTorch training script that reports to Rung: an MLP classifier of
handwritten digits, the shape of an MNIST run on data that needs no download.

Data (`--data`):
- `digits`: scikit-learn's bundled 8x8 digits (1,797 images, 10 classes),
  shipped inside the package, so nothing is fetched;
- `synthetic`: ten Gaussian classes in 64 dimensions, generated from
  `--data-seed` (what `auto` falls back to when scikit-learn is missing);
- `auto` (default): digits when scikit-learn can be imported, else synthetic.

Model: 64 -> hidden -> hidden -> 10 with ReLU and dropout, trained by SGD with
Nesterov momentum or by Adam, with weight decay. After every epoch it prints

    @rung {"step": 3, "val_loss": 0.21, "val_acc": 0.94, "train_loss": 0.25}

and a NaN val_loss when training diverges (then it exits 1).

It runs on the GPU in CUDA_VISIBLE_DEVICES when there is one (rung-worker sets
it from the trial's resources), else on the CPU. With Debian's python3-torch:

    /usr/bin/python3 examples/trainables/torch_mnist.py --lr 0.01 --hidden 128

Hyperparameters not on the command line come from RUNG_CONFIG (the trial's
config as JSON, set by rung-worker), then from the defaults below.
"""
import argparse
import json
import math
import os
import sys
import time

# name: (type, default, help). One table for argv, RUNG_CONFIG and --help.
PARAMS = {
    "lr": (float, 0.05, "learning rate"),
    "optimizer": (str, "sgd", "sgd (Nesterov momentum 0.9) or adam"),
    "hidden": (int, 128, "units of each of the two hidden layers"),
    "dropout": (float, 0.1, "dropout after each hidden layer"),
    "epochs": (int, 10, "passes over the training set (one report each)"),
    "batch_size": (int, 64, "examples per step"),
    "weight_decay": (float, 0.0, "weight decay"),
    "seed": (int, 0, "seed of the weights and the shuffling"),
    "data": (str, "auto", "digits, synthetic or auto"),
    "data_seed": (int, 7, "seed of the synthetic data and of the train/val split"),
    "device": (str, "auto", "auto, cpu or cuda"),
    "threads": (int, 1, "CPU threads for torch (0 = torch's default)"),
}


def integer(text):
    value = float(text)
    if not value.is_integer():
        raise ValueError("not an integer: %r" % (text,))
    return int(value)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, (typ, default, help_text) in PARAMS.items():
        p.add_argument("--" + name.replace("_", "-"), dest=name,
                       type=integer if typ is int else typ, default=None,
                       help="%s (default %s)" % (help_text, default))
    args = vars(p.parse_args(argv))
    config = json.loads(os.environ.get("RUNG_CONFIG") or "{}")
    out = {}
    for name, (typ, default, _) in PARAMS.items():
        value = args[name]
        if value is None:
            value = config.get(name, config.get(name.replace("_", "-"), default))
        try:
            out[name] = (integer if typ is int else typ)(value)
        except (TypeError, ValueError):
            p.error("%s: %r is not a valid %s" % (name, value, typ.__name__))
    if out["optimizer"] not in ("sgd", "adam"):
        p.error("optimizer must be sgd or adam")
    if out["data"] not in ("auto", "digits", "synthetic"):
        p.error("data must be auto, digits or synthetic")
    if out["epochs"] < 1 or out["batch_size"] < 1 or out["hidden"] < 1:
        p.error("epochs, batch_size and hidden must be >= 1")
    return out


def load_data(torch, kind, data_seed):
    """(x_train, y_train, x_val, y_val, name): float32 features scaled to
    [0, 1] or standardized, int64 labels, a fixed 80/20 split."""
    if kind in ("auto", "digits"):
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            if kind == "digits":
                raise SystemExit("--data digits needs scikit-learn (python3-sklearn)")
            kind = "synthetic"
    gen = torch.Generator().manual_seed(data_seed)
    if kind in ("auto", "digits"):
        d = load_digits()
        x = torch.tensor(d.data, dtype=torch.float32) / 16.0
        y = torch.tensor(d.target, dtype=torch.int64)
        name = "sklearn digits"
    else:
        # Ten classes: Gaussian clouds around random centers, overlapping enough
        # that the best accuracy is below 100%.
        n, dim, classes = 2000, 64, 10
        centers = torch.randn(classes, dim, generator=gen) * 0.3
        y = torch.randint(0, classes, (n,), generator=gen)
        x = centers[y] + torch.randn(n, dim, generator=gen)
        name = "synthetic blobs"
    perm = torch.randperm(len(y), generator=gen)
    cut = int(0.8 * len(y))
    tr, va = perm[:cut], perm[cut:]
    return x[tr], y[tr], x[va], y[va], name


def main(argv=None):
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    if cfg["threads"] > 0:
        # A trial gets resources_per_trial.cpu CPUs; torch would take them all.
        torch.set_num_threads(cfg["threads"])
    torch.manual_seed(cfg["seed"])
    if cfg["device"] == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(cfg["device"])

    x_tr, y_tr, x_va, y_va, data_name = load_data(torch, cfg["data"], cfg["data_seed"])
    x_tr, y_tr, x_va, y_va = (t.to(device) for t in (x_tr, y_tr, x_va, y_va))
    h = cfg["hidden"]
    model = nn.Sequential(
        nn.Linear(x_tr.shape[1], h), nn.ReLU(), nn.Dropout(cfg["dropout"]),
        nn.Linear(h, h), nn.ReLU(), nn.Dropout(cfg["dropout"]),
        nn.Linear(h, 10)).to(device)
    if cfg["optimizer"] == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"],
                               weight_decay=cfg["weight_decay"])
    else:
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9, nesterov=True,
                              weight_decay=cfg["weight_decay"])
    print("training on %s: %s, %d train / %d val, %d parameters, %s" % (
        device, data_name, len(y_tr), len(y_va), sum(p.numel() for p in model.parameters()),
        json.dumps(cfg, sort_keys=True)), flush=True)

    gen = torch.Generator().manual_seed(cfg["seed"])
    bs = cfg["batch_size"]
    for epoch in range(1, cfg["epochs"] + 1):
        t0 = time.monotonic()
        model.train()
        perm = torch.randperm(len(y_tr), generator=gen).to(device)
        total = 0.0
        for start in range(0, len(perm), bs):
            idx = perm[start:start + bs]
            loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        model.eval()
        with torch.no_grad():
            logits = model(x_va)
            val_loss = F.cross_entropy(logits, y_va).item()
            val_acc = (logits.argmax(1) == y_va).float().mean().item()
        print("@rung " + json.dumps({
            "step": epoch, "val_loss": val_loss, "val_acc": val_acc,
            "train_loss": total / len(y_tr), "epoch_s": time.monotonic() - t0}), flush=True)
        if not math.isfinite(val_loss):
            sys.stderr.write("diverged: val_loss is %r at epoch %d\n" % (val_loss, epoch))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
