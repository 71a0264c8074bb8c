#!/usr/bin/env python3
"""The Branin function as a Rung command trainable: the classic test function
of hyperparameter search (three global minima, f* = 0.397887 at
(-pi, 12.275), (pi, 2.275) and (9.42478, 2.475) on x1 in [-5, 10],
x2 in [0, 15]).

    python3 examples/trainables/branin.py --x1 3.14 --x2 2.27
    python3 examples/trainables/branin.py --x1 3.14 --x2 2.27 --steps 10

With `--steps N` it reports a learning curve of N points that falls towards
the function's value and reaches it at step N, so ASHA has something to cut;
without it, one report with the value. The metric is `loss`. Values not
given on the command line are taken from RUNG_CONFIG (set by rung-worker).
"""
import argparse
import json
import math
import os
import sys
import time


def branin(x1, x2):
    b, c = 5.1 / (4 * math.pi ** 2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--x1", type=float, help="in [-5, 10]")
    p.add_argument("--x2", type=float, help="in [0, 15]")
    p.add_argument("--steps", type=int, help="points of the curve (default 1)")
    p.add_argument("--sleep-s", type=float, default=0.0, help="seconds to sleep per step")
    args = p.parse_args()
    config = json.loads(os.environ.get("RUNG_CONFIG") or "{}")
    x1 = args.x1 if args.x1 is not None else config.get("x1")
    x2 = args.x2 if args.x2 is not None else config.get("x2")
    steps = args.steps if args.steps is not None else int(config.get("steps", 1))
    if x1 is None or x2 is None:
        p.error("x1 and x2 are required (on the command line or in RUNG_CONFIG)")
    if steps < 1:
        p.error("--steps must be >= 1")
    final = branin(float(x1), float(x2))
    for step in range(1, steps + 1):
        # Falls like exp(-step/2) and meets the function's value at the last step.
        loss = final + 50.0 * (math.exp(-step / 2.0) - math.exp(-steps / 2.0))
        print("@rung " + json.dumps({"step": step, "loss": loss}), flush=True)
        if args.sleep_s > 0 and step < steps:
            time.sleep(args.sleep_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
