"""A quick command trainable for tests/browser/interact.test.mjs: it reports
two metrics at each step 1 .. max_t of its config, `loss` (the objective,
always > 0) and `reward` (below zero for most configs, so that a chart of
it cannot have a log axis), from x in [0, 1] and y > 0:

    loss_t   = 0.1 + (x - 0.6)^2 + 0.5 y exp(-t / 2)
    reward_t = 0.3 - 2 loss_t - 0.05 t

Python standard library only."""

import json
import math
import os


def main():
    config = json.loads(os.environ.get("RUNG_CONFIG") or "{}")
    x = float(config["x"])
    y = float(config["y"])
    max_t = int(config.get("max_t", 6))
    for t in range(1, max_t + 1):
        loss = 0.1 + (x - 0.6) ** 2 + 0.5 * y * math.exp(-t / 2.0)
        reward = 0.3 - 2.0 * loss - 0.05 * t
        print("@rung " + json.dumps({"step": t, "loss": loss, "reward": reward}), flush=True)


if __name__ == "__main__":
    main()
