#!/usr/bin/env python3
"""A command trainable with two objectives and a constraint metric, for
test_objectives.py: for x in [0, 1], val_loss = x^2 and latency_ms =
(1 - x)^2 * 100 conflict (every x is Pareto-optimal), and peak_mem_gb =
32 x exceeds a bound of 16 for x > 0.5. Two reports, as a training run
sends them; every value comes with each report.

With a parameter y as well (the asha test), four reports of the same
values val_loss = x and latency_ms = 100 y: points spread over a square,
many dominated, each judged by the same point at every rung."""
import json
import os
import sys


def main():
    config = json.loads(os.environ["RUNG_CONFIG"])
    x = float(config["x"])
    if "y" in config:
        for step in (1, 2, 3, 4):
            print("@rung " + json.dumps({"step": step, "val_loss": x,
                                         "latency_ms": 100 * float(config["y"]),
                                         "peak_mem_gb": 32 * x}), flush=True)
        return 0
    for step in (1, 2):
        slack = 0.1 * (2 - step)  # the last report is the result
        print("@rung " + json.dumps({"step": step, "val_loss": x * x + slack,
                                     "latency_ms": (1 - x) ** 2 * 100 + slack,
                                     "peak_mem_gb": 32 * x}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
