#!/usr/bin/python3
"""torch_trainer: the PyTorch peer of rung-train (bench/README.md, section 4).

The same model and data as rung-train's CPU backend: Fashion-MNIST from
/usr/share/datasets/fashion-mnist (IDX files), pixels / 255 normalized with
the training set's one mean and standard deviation (as rung-train does),
nn.Sequential(Linear(784, 512), ReLU, Linear(512, 256), ReLU, Linear(256,
10)) in float32 with PyTorch's default init, CrossEntropyLoss,
optim.SGD(lr, momentum=0.9), constant learning rate. Run it with Debian's
/usr/bin/python3 (python3-torch).

Threads: torch.set_num_threads(T) sets ATen's OpenMP pool only; OpenBLAS,
which runs Linear's GEMMs, has its own pool sized from OPENBLAS_NUM_THREADS
when it loads. trainer.sh sets OPENBLAS_NUM_THREADS, OMP_NUM_THREADS,
OMP_WAIT_POLICY and OPENBLAS_CORETYPE for each process; this program reports
what OpenBLAS runs (core, threads) from inside the process.

Modes (each prints one JSON object per result, lines starting with "{"):

  info      torch version, build's BLAS settings, the BLAS libraries mapped
            into the process, OpenBLAS's core and threads, and whether
            Linear's GEMM runs at the speed of OpenBLAS's own sgemm on the
            same shape (it does when Linear goes through OpenBLAS).
  speed     per batch size: one warm-up epoch and --epochs timed epochs over
            the whole training set (60,000 samples); samples/s per epoch.
            The data are pre-loaded tensors; each epoch shuffles them into a
            new tensor before its clock starts, and each step takes the next
            rows of it (a view): no DataLoader, no copy in the timed loop.
  accuracy  --epochs epochs at one batch size, test accuracy and loss after
            each epoch (the 10,000 test samples).
  ddp       one rank of DistributedDataParallel on gloo: rank r of the
            world takes rows r, r + W, ... of each global batch (as
            DistributedSampler and rung-train do), so the global batch and
            the samples per epoch are those of a single process; rank 0
            prints samples/s per epoch, timed between barriers.
"""

import argparse
import ctypes
import datetime
import gzip
import json
import os
import re
import sys
import time

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def emit(obj):
    obj = {"bench": "trainer", "tool": "torch", **obj}
    print(json.dumps(obj), flush=True)


def read_idx(path):
    import numpy as np

    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    arr = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    return arr.reshape(dims)


def load_data(data_dir, train_samples):
    """(x_train, y_train, x_test, y_test) as float32 / int64 tensors,
    normalized with the training set's mean and standard deviation (one
    number each, over all pixels, as rung-train computes them)."""
    import numpy as np
    import torch

    xtr = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"))
    ytr = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))
    xte = read_idx(os.path.join(data_dir, "t10k-images-idx3-ubyte.gz"))
    yte = read_idx(os.path.join(data_dir, "t10k-labels-idx1-ubyte.gz"))
    if 0 < train_samples < len(xtr):
        xtr, ytr = xtr[:train_samples], ytr[:train_samples]
    xtr = xtr.reshape(len(xtr), -1).astype(np.float32) / np.float32(255)
    xte = xte.reshape(len(xte), -1).astype(np.float32) / np.float32(255)
    mean = float(xtr.mean(dtype=np.float64))
    sd = float(xtr.std(dtype=np.float64))
    xtr = (xtr - np.float32(mean)) / np.float32(sd)
    xte = (xte - np.float32(mean)) / np.float32(sd)
    return (torch.from_numpy(np.ascontiguousarray(xtr)),
            torch.from_numpy(ytr.astype(np.int64)),
            torch.from_numpy(np.ascontiguousarray(xte)),
            torch.from_numpy(yte.astype(np.int64)), mean, sd)


def make_model(seed, hidden=(512, 256), dim=784, classes=10):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers = []
    d = dim
    for h in hidden:
        layers += [nn.Linear(d, h), nn.ReLU()]
        d = h
    layers.append(nn.Linear(d, classes))
    return nn.Sequential(*layers)


def openblas_handle():
    """(path, ctypes handle) of the OpenBLAS mapped into this process, or
    (None, None)."""
    paths = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 6 and "openblas" in parts[-1] and parts[-1] not in paths:
                paths.append(parts[-1])
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_num_threads.restype = ctypes.c_int
            return p, lib
        except (OSError, AttributeError):
            continue
    return None, None


def blas_state():
    path, lib = openblas_handle()
    if lib is None:
        return {"openblas": None, "core": "n/a", "openblas_threads": None}
    return {"openblas": path, "core": lib.openblas_get_corename().decode(),
            "openblas_threads": lib.openblas_get_num_threads()}


def setup_threads(threads):
    import torch

    torch.set_num_threads(threads)
    # OpenBLAS sized its pool from OPENBLAS_NUM_THREADS when it loaded; say
    # it again in case the variable was not set.
    _, lib = openblas_handle()
    if lib is not None and hasattr(lib, "openblas_set_num_threads"):
        lib.openblas_set_num_threads(ctypes.c_int(threads))


def time_best(fn, reps, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def mode_info(args):
    """What this torch runs Linear with."""
    import torch

    setup_threads(args.threads)
    x = torch.randn(256, 784)
    w = torch.randn(512, 784)
    torch.nn.functional.linear(x, w)  # loads the BLAS if it is loaded lazily
    config = torch.__config__.show()
    settings = {}
    for key in ("BLAS_INFO", "LAPACK_INFO", "USE_MKLDNN", "USE_OPENMP"):
        m = re.search(r"\b%s=([^,\s]+)" % key, config)
        if m:
            settings[key] = m.group(1)
    libs = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            p = line.split()[-1]
            base = os.path.basename(p)
            if any(s in base for s in ("blas", "lapack", "dnnl", "mkl", "gomp")) and p not in libs:
                libs.append(p)
    state = blas_state()
    # Linear's GEMM against OpenBLAS's own sgemm on the same shape, in this
    # process: x[256,784] w^T -> [256,512].
    flops = 2.0 * 256 * 784 * 512
    t_torch = time_best(lambda: torch.nn.functional.linear(x, w), 50)
    t_blas = None
    _, lib = openblas_handle()
    if lib is not None:
        y = torch.empty(256, 512)
        ptr = ctypes.c_void_p
        xp, wp, yp = (ptr(t.data_ptr()) for t in (x, w, y))
        # row-major C[256,512] = X[256,784] W^T, W stored [512,784]
        f = lib.cblas_sgemm
        f.restype = None
        args_c = (101, 111, 112, 256, 512, 784, ctypes.c_float(1.0), xp, 784, wp, 784,
                  ctypes.c_float(0.0), yp, 512)
        t_blas = time_best(lambda: f(*args_c), 50)
    same = t_blas is not None and 0.7 < t_blas / t_torch < 1.4
    emit({"kind": "info", "torch": torch.__version__, "threads": args.threads,
          "torch_threads": torch.get_num_threads(), "settings": settings,
          "mkldnn_available": bool(torch.backends.mkldnn.is_available()),
          "libs": libs, **state,
          "linear_gflops": flops / t_torch / 1e9,
          "openblas_sgemm_gflops": None if t_blas is None else flops / t_blas / 1e9,
          "linear_via_openblas": same})


def train_epoch(model, opt, crit, xs, ys, batch):
    n = xs.shape[0]
    loss_sum = 0.0
    for s in range(0, n, batch):
        xb = xs[s:s + batch]
        yb = ys[s:s + batch]
        opt.zero_grad(set_to_none=True)
        loss = crit(model(xb), yb)
        loss.backward()
        opt.step()
        loss_sum += loss.item() * xb.shape[0]
    return loss_sum / n


def evaluate(model, x, y, batch=1024):
    import torch

    model.eval()
    correct = 0
    loss_sum = 0.0
    crit = torch.nn.CrossEntropyLoss(reduction="sum")
    with torch.no_grad():
        for s in range(0, x.shape[0], batch):
            out = model(x[s:s + batch])
            loss_sum += crit(out, y[s:s + batch]).item()
            correct += (out.argmax(1) == y[s:s + batch]).sum().item()
    model.train()
    return correct / x.shape[0], loss_sum / x.shape[0]


def mode_speed(args):
    import torch

    setup_threads(args.threads)
    xtr, ytr, _, _, _, _ = load_data(args.data, args.train_samples)
    n = xtr.shape[0]
    state = blas_state()
    for batch in args.batches:
        model = make_model(args.seed)
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        crit = torch.nn.CrossEntropyLoss()
        gen = torch.Generator().manual_seed(args.seed)
        sps = []
        for epoch in range(args.epochs + 1):  # epoch 0 is the warm-up
            perm = torch.randperm(n, generator=gen)
            xs, ys = xtr[perm], ytr[perm]
            t0 = time.perf_counter()
            loss = train_epoch(model, opt, crit, xs, ys, batch)
            dt = time.perf_counter() - t0
            if epoch > 0:
                sps.append(n / dt)
        emit({"kind": "speed", "batch": batch, "threads": args.threads, "samples": n,
              "core": state["core"], "openblas_threads": state["openblas_threads"],
              "torch_threads": torch.get_num_threads(), "epochs_sps": sps,
              "best_sps": max(sps), "median_sps": sorted(sps)[len(sps) // 2],
              "train_loss": loss})


def mode_accuracy(args):
    import torch

    setup_threads(args.threads)
    xtr, ytr, xte, yte, _, _ = load_data(args.data, args.train_samples)
    n = xtr.shape[0]
    batch = args.batches[0]
    model = make_model(args.seed)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(args.seed)
    state = blas_state()
    for epoch in range(1, args.epochs + 1):
        perm = torch.randperm(n, generator=gen)
        loss = train_epoch(model, opt, crit, xtr[perm], ytr[perm], batch)
        acc, test_loss = evaluate(model, xte, yte)
        emit({"kind": "accuracy", "batch": batch, "lr": args.lr, "epoch": epoch,
              "train_loss": loss, "test_acc": acc, "test_loss": test_loss,
              "core": state["core"], "threads": args.threads})


def mode_ddp(args):
    import torch
    import torch.distributed as dist

    setup_threads(args.threads)
    try:
        dist.init_process_group("gloo", init_method=args.init, rank=args.rank,
                                world_size=args.world, timeout=datetime.timedelta(seconds=60))
    except Exception as e:  # noqa: BLE001 - any failure to start is reported
        emit({"kind": "ddp", "rank": args.rank, "error": f"{type(e).__name__}: {e}"})
        return 1
    xtr, ytr, _, _, _, _ = load_data(args.data, args.train_samples)
    n = xtr.shape[0]
    batch = args.batches[0]
    model = torch.nn.parallel.DistributedDataParallel(make_model(args.seed))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(args.seed)  # the same order on every rank
    state = blas_state()
    sps = []
    for epoch in range(args.epochs + 1):
        perm = torch.randperm(n, generator=gen)
        xs, ys = xtr[perm], ytr[perm]
        dist.barrier()
        t0 = time.perf_counter()
        for s in range(0, n, batch):
            # rows rank, rank + W, ... of the global batch (a strided view)
            xb = xs[s + args.rank:s + batch:args.world]
            yb = ys[s + args.rank:s + batch:args.world]
            opt.zero_grad(set_to_none=True)
            loss = crit(model(xb), yb)
            loss.backward()
            opt.step()
        dist.barrier()
        dt = time.perf_counter() - t0
        if epoch > 0:
            sps.append(n / dt)
    if args.rank == 0:
        emit({"kind": "ddp", "rank": 0, "world": args.world, "batch": batch,
              "threads": args.threads, "core": state["core"],
              "openblas_threads": state["openblas_threads"], "epochs_sps": sps,
              "best_sps": max(sps), "median_sps": sorted(sps)[len(sps) // 2],
              "train_loss": loss.item()})
    dist.destroy_process_group()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("info", "speed", "accuracy", "ddp"))
    ap.add_argument("--batches", default="64,256,1024",
                    help="batch sizes (speed), or the one batch size (accuracy, ddp)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=2,
                    help="timed epochs after one warm-up (speed, ddp); epochs (accuracy)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-samples", type=int, default=0, help="0: all 60,000")
    ap.add_argument("--data", default=DATA_DIR)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--init", default="", help="ddp: init_method (file:// or tcp://)")
    args = ap.parse_args()
    args.batches = [int(b) for b in args.batches.split(",")]
    if args.threads < 1 or args.epochs < 1 or min(args.batches) < 1:
        ap.error("threads, epochs and batch sizes must be at least 1")
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"torch_trainer: cannot import torch: {e}", file=sys.stderr)
        return 3
    if args.mode == "info":
        mode_info(args)
    elif args.mode == "speed":
        mode_speed(args)
    elif args.mode == "accuracy":
        mode_accuracy(args)
    else:
        return mode_ddp(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
