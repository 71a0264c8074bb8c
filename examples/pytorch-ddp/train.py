#!/usr/bin/python3
"""Data-parallel PyTorch training over several machines, as a Rung gang.

An experiment whose resources_per_trial has "nodes": N runs each trial as a
gang: one process of this script on each of N workers, started together.
rung-worker gives each process torch.distributed's environment (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK; docs/api.md, "Gangs"),
so `init_method="env://"` joins them: gloo on CPUs, NCCL on GPUs.

Every process takes its shard of every global batch (the batch_size
samples of one step, rank r the samples r, r + N, r + 2N, ...), and the
gradients are averaged so that each step is the step one process would
take on the whole global batch. The model is float64 and every random draw
depends only on the seed and the epoch, so 1 node and N nodes compute the
same numbers up to rounding: their reported losses agree far within 1e-5
(tests/integration/test_gang.py checks it).

Only node 0 reports (rung.report), saves checkpoints (rung.checkpoint_dir)
and resumes from them (rung.resume_step: it loads the checkpoint, and the
other nodes receive the state from it). Without a gang (WORLD_SIZE unset
or 1) it is one plain process: run it by hand as it is,

    /usr/bin/python3 examples/pytorch-ddp/train.py

or as two processes on this machine, as rung-worker would start them:

    export MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2
    RANK=0 /usr/bin/python3 examples/pytorch-ddp/train.py &
    RANK=1 /usr/bin/python3 examples/pytorch-ddp/train.py

(torchrun --nnodes=2 --nproc_per_node=1 ... sets the same variables).

Data: the first `train_samples` images of Debian's dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist; `data_dir` or $FASHION_MNIST_DIR point
elsewhere), validated on the first `val_samples` of its test set. Model:
784 -> hidden -> 10 with ReLU, SGD with momentum. `epoch_sleep_s` makes
each epoch that much longer, to watch (or test) a gang while it runs.
"""

import datetime
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
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

DEFAULTS = {
    "lr": 0.05,
    "momentum": 0.9,
    "hidden": 64,
    "batch_size": 64,       # the global batch: all nodes together, per step
    "epochs": 5,
    "train_samples": 2048,
    "val_samples": 1000,
    "seed": 0,
    "threads": 1,           # CPU threads per process (a trial gets one CPU slot per node)
    "epoch_sleep_s": 0.0,
    "dist_timeout_s": 300,  # how long a node waits for the others (to meet, or in a step)
    "data_dir": "",
}
DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(folder, base, limit):
    """The first `limit` items of an IDX file of unsigned bytes (gzip or
    plain) as a numpy array of shape (n, ...)."""
    for path, opener in ((os.path.join(folder, base + ".gz"), gzip.open),
                         (os.path.join(folder, base), open)):
        if os.path.isfile(path):
            break
    else:
        sys.exit("train.py: %s/%s(.gz) not found: install Debian's dataset-fashion-mnist, "
                 "or set data_dir (or FASHION_MNIST_DIR) to a folder of the MNIST IDX files"
                 % (folder, base))
    with opener(path, "rb") as f:
        magic = f.read(4)
        if len(magic) != 4 or magic[:3] != b"\x00\x00\x08":
            sys.exit("train.py: %s is not an IDX file of unsigned bytes" % path)
        dims = struct.unpack(">%dI" % magic[3], f.read(4 * magic[3]))
        n = min(dims[0], limit)
        item = int(np.prod(dims[1:], dtype=np.int64))
        raw = f.read(n * item)
        if len(raw) != n * item:
            sys.exit("train.py: %s is shorter than its header says" % path)
    return np.frombuffer(raw, dtype=np.uint8).reshape((n,) + tuple(dims[1:]))


def load(folder, split, limit, device):
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(folder, prefix + "-images-idx3-ubyte", limit)
    y = read_idx(folder, prefix + "-labels-idx1-ubyte", limit)
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float64) / 255.0)
    return x.to(device), torch.from_numpy(y.astype(np.int64)).to(device)


def checkpoint_path(epoch):
    return os.path.join(rung.checkpoint_dir(), "epoch-%d.pt" % epoch)


def save_checkpoint(epoch, model, optimizer):
    """Node 0 only: the state after `epoch`, written under a temporary name
    and renamed (a kill leaves the previous one whole), then the previous
    epoch's removed."""
    path = checkpoint_path(epoch)
    torch.save({"epoch": epoch, "model": model.state_dict(),
                "optimizer": optimizer.state_dict()}, path + ".tmp")
    os.replace(path + ".tmp", path)
    if os.path.exists(checkpoint_path(epoch - 1)):
        os.unlink(checkpoint_path(epoch - 1))


def resume(model, optimizer, rank, world, device):
    """The epoch to go on from: node 0 loads the checkpoint of
    rung.resume_step() when it has it (else starts over, as a trial resumed
    elsewhere must) and the other nodes receive its choice and its state."""
    start = 0
    if rank == 0 and rung.resume_step() > 0:
        path = checkpoint_path(rung.resume_step())
        if os.path.exists(path):
            state = torch.load(path, map_location=device)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            start = int(state["epoch"])
            print("resuming after epoch %d from %s" % (start, path), flush=True)
        else:
            print("no checkpoint of epoch %d here: starting over" % rung.resume_step(),
                  file=sys.stderr, flush=True)
    if world == 1:
        return start
    flag = torch.tensor([start], dtype=torch.int64, device=device)
    dist.broadcast(flag, 0)
    start = int(flag.item())
    if start > 0:
        # The weights reach the other nodes when DDP wraps the model (it
        # broadcasts node 0's); the momentum is sent here.
        for p in model.parameters():
            state = optimizer.state[p]
            if "momentum_buffer" not in state or state["momentum_buffer"] is None:
                state["momentum_buffer"] = torch.zeros_like(p)
            dist.broadcast(state["momentum_buffer"], 0)
    return start


def evaluate(model, x, y, batch=1000):
    loss, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out = model(x[i:i + batch])
            loss += nn.functional.cross_entropy(out, y[i:i + batch], reduction="sum").item()
            correct += (out.argmax(1) == y[i:i + batch]).sum().item()
    return loss / len(x), correct / len(x)


def main():
    cfg = rung.config(DEFAULTS)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if int(cfg["threads"]) > 0:
        torch.set_num_threads(int(cfg["threads"]))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    batch = int(cfg["batch_size"])
    if batch < world:
        sys.exit("train.py: batch_size %d is smaller than the %d nodes: every node needs a "
                 "sample of each step" % (batch, world))
    if world > 1:
        t0 = time.monotonic()
        dist.init_process_group("nccl" if cuda else "gloo", init_method="env://",
                                rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=float(cfg["dist_timeout_s"])))
        print("node %d of %d: joined %s:%s (%s) in %.2f s"
              % (rank, world, os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT"),
                 dist.get_backend(), time.monotonic() - t0), flush=True)

    folder = cfg["data_dir"] or os.environ.get("FASHION_MNIST_DIR") or DEFAULT_DATA_DIR
    x_train, y_train = load(folder, "train", int(cfg["train_samples"]), device)
    if rank == 0:
        x_val, y_val = load(folder, "test", int(cfg["val_samples"]), device)

    # The same initial weights on every node (DDP would broadcast node 0's
    # anyway), in float64 so that the order of the sums barely matters.
    torch.manual_seed(int(cfg["seed"]))
    model = nn.Sequential(nn.Linear(784, int(cfg["hidden"])), nn.ReLU(),
                          nn.Linear(int(cfg["hidden"]), 10)).double().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    start = resume(model, optimizer, rank, world, device)
    net = model
    if world > 1:
        net = DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)

    steps = len(x_train) // batch  # whole global batches only: every step is the same size
    if steps == 0:
        sys.exit("train.py: train_samples %d < batch_size %d" % (len(x_train), batch))
    for epoch in range(start + 1, int(cfg["epochs"]) + 1):
        t_epoch = time.monotonic()
        # The epoch's order is a function of (seed, epoch): the same on
        # every node, and after a resume.
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(
            int(cfg["seed"]) * 1000003 + epoch)).to(device)
        total = torch.zeros(1, dtype=torch.float64, device=device)
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch][rank::world]  # this node's shard
            optimizer.zero_grad()
            loss_sum = nn.functional.cross_entropy(net(x_train[idx]), y_train[idx],
                                                   reduction="sum")
            # DDP averages the nodes' gradients; scaled by world / batch,
            # their average is the gradient of the global batch's mean loss.
            (loss_sum * (world / batch)).backward()
            optimizer.step()
            total += loss_sum.detach()
        if world > 1:
            dist.all_reduce(total)
        train_loss = total.item() / (steps * batch)
        if cfg["epoch_sleep_s"] > 0:
            time.sleep(float(cfg["epoch_sleep_s"]))
        if rank == 0:
            val_loss, val_acc = evaluate(model, x_val, y_val)
            # The checkpoint first, then the report: once the report is in,
            # a scheduler may pause the trial at this epoch.
            save_checkpoint(epoch, model, optimizer)
            rung.report(step=epoch, val_loss=val_loss, val_acc=val_acc, train_loss=train_loss,
                        epoch_s=time.monotonic() - t_epoch)
        if not math.isfinite(train_loss):
            sys.exit(1)  # diverged, on every node: rungd fails the trial on node 0's NaN
    if world > 1:
        dist.barrier()  # nobody leaves while another still needs it
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
