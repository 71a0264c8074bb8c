#!/usr/bin/env python3
"""torch_trainer_gpu: the PyTorch peer of rung-train's CUDA backend
(bench/trainer_gpu.sh, bench/README.md).

The same model and data as rung-train: Fashion-MNIST from the IDX files in
--data (pixels / 255, standardized with the training set's one mean and
standard deviation), nn.Sequential(Linear(784, 512), ReLU, Linear(512, 256),
ReLU, Linear(256, 10)) in float32, CrossEntropyLoss, SGD(lr 0.05, momentum
0.9). Like rung-train, the whole training set sits on the GPU and each step
gathers its rows there (index_select of a per-epoch permutation): no
DataLoader, no host copy in the timed loop.

  speed  one GPU: one warm-up epoch, then --epochs timed epochs; prints
         {"tool": "torch", "gpus": 1, "batch": B, "samples_per_s": ...} with
         the best epoch.
  ddp    DistributedDataParallel on NCCL over --gpus GPUs (processes spawned
         here, MASTER_ADDR 127.0.0.1): rank r takes rows r, r + W, ... of
         each global batch (DistributedSampler's rule, as rung-train), so a
         global batch and an epoch are those of one GPU; rank 0 prints the
         best epoch, timed between barriers.

Prints {"skipped": "..."} and exits 0 when torch sees no GPU.
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time


def load(folder):
    import torch

    def idx(name):
        with gzip.open(os.path.join(folder, name), "rb") as f:
            raw = f.read()
        dims = raw[3]
        shape = struct.unpack(">" + "I" * dims, raw[4 : 4 + 4 * dims])
        t = torch.frombuffer(bytearray(raw[4 + 4 * dims :]), dtype=torch.uint8)
        return t.reshape(shape)

    x = idx("train-images-idx3-ubyte.gz").reshape(-1, 784).float() / 255.0
    y = idx("train-labels-idx1-ubyte.gz").long()
    x = (x - x.mean()) / x.std()
    return x, y


def model(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def run_epochs(torch, net, opt, x, y, batch, epochs, rank=0, world=1, barrier=None):
    loss_fn = torch.nn.CrossEntropyLoss()
    n = x.shape[0]
    best = 0.0
    for epoch in range(epochs + 1):
        g = torch.Generator(device="cpu").manual_seed(epoch)
        perm = torch.randperm(n, generator=g).to(x.device)
        torch.cuda.synchronize()
        if barrier:
            barrier()
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            idx = perm[start + rank : start + batch : world]
            if idx.numel() == 0:
                continue
            xb = x.index_select(0, idx)
            yb = y.index_select(0, idx)
            opt.zero_grad(set_to_none=True)
            loss_fn(net(xb), yb).backward()
            opt.step()
        torch.cuda.synchronize()
        if barrier:
            barrier()
        dt = time.perf_counter() - t0
        if epoch > 0:  # epoch 0 warms up
            best = max(best, n / dt)
    return best


def ddp_worker(rank, world, args, port):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    x, y = load(args.data)
    x, y = x.cuda(), y.cuda()
    torch.manual_seed(0)
    net = torch.nn.parallel.DistributedDataParallel(model(torch).cuda(), device_ids=[rank])
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    best = run_epochs(torch, net, opt, x, y, args.batch, args.epochs, rank, world,
                      barrier=lambda: dist.barrier())
    if rank == 0:
        print(json.dumps({"tool": "torch-ddp", "gpus": world, "batch": args.batch,
                          "samples_per_s": round(best)}), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["speed", "ddp"])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--port", type=int, default=29533)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print(json.dumps({"skipped": "no torch"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch sees no GPU"}))
        return 0
    if args.mode == "speed":
        x, y = load(args.data)
        x, y = x.cuda(), y.cuda()
        torch.manual_seed(0)
        net = model(torch).cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        best = run_epochs(torch, net, opt, x, y, args.batch, args.epochs)
        print(json.dumps({"tool": "torch", "gpus": 1, "batch": args.batch,
                          "samples_per_s": round(best)}), flush=True)
        return 0
    if torch.cuda.device_count() < args.gpus:
        print(json.dumps({"skipped": "torch sees %d GPU(s), --gpus %d"
                          % (torch.cuda.device_count(), args.gpus)}))
        return 0
    import torch.multiprocessing as mp
    mp.spawn(ddp_worker, args=(args.gpus, args, args.port), nprocs=args.gpus, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
