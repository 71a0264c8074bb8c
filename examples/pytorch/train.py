#!/usr/bin/python3
"""Trains a PyTorch MLP on Fashion-MNIST and reports to Rung once an epoch.

The trainable of examples/pytorch/submit.py, and an ordinary script: run by
hand it trains with the defaults below (and saves its checkpoints in
./rung-local/checkpoints):

    /usr/bin/python3 examples/pytorch/train.py

Under rung-worker, `rung.config()` gives the trial's hyperparameters (the
defaults below with the trial's config laid over them), `rung.report()`
prints the `@rung` line the worker forwards, `rung.checkpoint_dir()` is a
folder inside the trial's own folder, and `rung.resume_step()` is the epoch
to go on from when ASHA's promotion variant resumes a paused trial.

Data: the IDX files of Debian's `dataset-fashion-mnist` package in
/usr/share/datasets/fashion-mnist (gzip or not, as rung-train reads them);
`data_dir` in the config, or $FASHION_MNIST_DIR, points elsewhere (a folder
with the four files of the MNIST layout). It trains on the first
`train_samples` images of the training set and validates on the first
`val_samples` of the test set: small subsets keep a trial to seconds on
one CPU core.

Model: 784 -> hidden (x layers) -> 10 with ReLU and dropout, trained by SGD
with momentum (Nesterov) and weight decay, on the GPU when PyTorch sees one
(rung-worker sets CUDA_VISIBLE_DEVICES from the trial's resources), else on
`threads` CPU threads (1: a trial gets one CPU slot).
"""

import gzip
import math
import os
import struct
import sys
import time

try:
    import rung
except ImportError:
    # Not installed (pip install ./python): the copy in this repository.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "python"))
    import rung

import numpy as np
import torch
from torch import nn

DEFAULTS = {
    "lr": 0.05,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "hidden": 128,
    "layers": 1,
    "dropout": 0.1,
    "batch_size": 64,
    "epochs": 9,
    "train_samples": 6000,
    "val_samples": 2000,
    "seed": 0,
    "threads": 1,
    "data_dir": "",
}
DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"


def open_idx(folder, base):
    """The IDX file `base` of `folder`, gzip (`base.gz`) or plain."""
    for path, opener in ((os.path.join(folder, base + ".gz"), gzip.open),
                         (os.path.join(folder, base), open)):
        if os.path.isfile(path):
            return path, opener(path, "rb")
    sys.exit("train.py: %s/%s(.gz) not found: install Debian's dataset-fashion-mnist, "
             "or set data_dir (or FASHION_MNIST_DIR) to a folder of the MNIST IDX files"
             % (folder, base))


def read_idx(folder, base, limit):
    """The first `limit` items of an IDX file of unsigned bytes, as a numpy
    array of shape (n, ...). Reads only what it needs from a gzip stream."""
    path, f = open_idx(folder, base)
    with f:
        magic = f.read(4)
        if len(magic) != 4 or magic[:3] != b"\x00\x00\x08":
            sys.exit("train.py: %s is not an IDX file of unsigned bytes" % path)
        ndims = magic[3]
        dims = struct.unpack(">%dI" % ndims, f.read(4 * ndims))
        n = min(dims[0], limit)
        item = 1
        for d in dims[1:]:
            item *= d
        raw = f.read(n * item)
        if len(raw) != n * item:
            sys.exit("train.py: %s is shorter than its header says" % path)
    return np.frombuffer(raw, dtype=np.uint8).reshape((n,) + tuple(dims[1:]))


def load(folder, split, limit):
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(folder, prefix + "-images-idx3-ubyte", limit)
    y = read_idx(folder, prefix + "-labels-idx1-ubyte", limit)
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(y.astype(np.int64))


def make_model(cfg):
    layers, width = [], 784
    for _ in range(int(cfg["layers"])):
        layers += [nn.Linear(width, int(cfg["hidden"])), nn.ReLU(), nn.Dropout(cfg["dropout"])]
        width = int(cfg["hidden"])
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def evaluate(model, x, y, batch=1000):
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            xb, yb = x[i:i + batch], y[i:i + batch]
            out = model(xb)
            loss += nn.functional.cross_entropy(out, yb, reduction="sum").item()
            correct += (out.argmax(1) == yb).sum().item()
    return loss / len(x), correct / len(x)


def checkpoint_path(epoch):
    return os.path.join(rung.checkpoint_dir(), "epoch-%d.pt" % epoch)


def save_checkpoint(epoch, model, optimizer, generator):
    """Saves epoch's state (with the random generators', so that a resumed
    run goes on exactly as an uninterrupted one), then removes the previous epoch's: the newest
    is all a resume needs. Written under a temporary name and renamed, so
    a kill in the middle leaves the previous checkpoint whole."""
    path = checkpoint_path(epoch)
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "generator": generator.get_state(), "rng": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda_rng"] = torch.cuda.get_rng_state_all()
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)
    previous = checkpoint_path(epoch - 1)
    if os.path.exists(previous):
        os.unlink(previous)


def main():
    cfg = rung.config(DEFAULTS)
    torch.manual_seed(int(cfg["seed"]))
    if int(cfg["threads"]) > 0:
        torch.set_num_threads(int(cfg["threads"]))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    folder = cfg["data_dir"] or os.environ.get("FASHION_MNIST_DIR") or DEFAULT_DATA_DIR

    t0 = time.monotonic()
    x_train, y_train = load(folder, "train", int(cfg["train_samples"]))
    x_val, y_val = load(folder, "test", int(cfg["val_samples"]))
    # Small enough to live on the device whole: no copy per batch.
    x_train, y_train = x_train.to(device), y_train.to(device)
    x_val, y_val = x_val.to(device), y_val.to(device)
    print("data: %d training and %d validation images from %s in %.2f s; device %s"
          % (len(x_train), len(x_val), folder, time.monotonic() - t0, device), flush=True)

    model = make_model(cfg).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"],
                                nesterov=cfg["momentum"] > 0,
                                weight_decay=cfg["weight_decay"])
    generator = torch.Generator().manual_seed(int(cfg["seed"]))

    # A promoted trial goes on from the checkpoint of the epoch it was paused
    # at. Where that checkpoint is not (a trial resumed on another machine),
    # it starts over, as rung-train does.
    start = rung.resume_step()
    if start > 0:
        path = checkpoint_path(start)
        if os.path.exists(path):
            state = torch.load(path, map_location="cpu")
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            generator.set_state(state["generator"])
            torch.set_rng_state(state["rng"])  # dropout's
            if "cuda_rng" in state and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state["cuda_rng"])
            print("resuming after epoch %d from %s" % (start, path), flush=True)
        else:
            print("no checkpoint of epoch %d here: starting over" % start, file=sys.stderr,
                  flush=True)
            start = 0

    batch = int(cfg["batch_size"])
    for epoch in range(start + 1, int(cfg["epochs"]) + 1):
        t_epoch = time.monotonic()
        model.train()
        order = torch.randperm(len(x_train), generator=generator)
        total, seen = 0.0, 0
        for i in range(0, len(order), batch):
            idx = order[i:i + batch].to(device)
            xb, yb = x_train[idx], y_train[idx]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
            seen += len(idx)
        val_loss, val_acc = evaluate(model, x_val, y_val)
        train_loss = total / seen
        # The checkpoint first, then the report: once the report is in, the
        # scheduler may pause the trial at this epoch and resume it later.
        save_checkpoint(epoch, model, optimizer, generator)
        rung.report(step=epoch, val_loss=val_loss, val_acc=val_acc, train_loss=train_loss,
                    epoch_s=time.monotonic() - t_epoch)
        if not math.isfinite(val_loss):
            # Diverged: the NaN is reported (rungd fails the trial at once),
            # and the rest of the epochs would learn nothing.
            sys.exit(1)


if __name__ == "__main__":
    main()
