#!/usr/bin/env python3
"""The toy problem of the Population Based Training paper (Jaderberg et al.
2017, "Population Based Training of Neural Networks", section 4), as a Rung
trainable.

The goal is to maximise Q(theta) = 1.2 - theta_0^2 - theta_1^2, but a member
only sees the surrogate Q^(theta | h) = 1.2 - h_0 theta_0^2 - h_1 theta_1^2
and climbs its gradient: theta <- theta + lr * grad Q^ = theta - 2 lr h * theta.
theta starts at (0.9, 0.9); the paper's two members have h = (1, 0) and
h = (0, 1), so each alone can shrink only one coordinate and never gets Q
above 1.2 - 0.81. Each step reports the true Q:

    @rung {"step": 12, "q": 0.43, "theta_0": 0.8, "theta_1": 0.9}

Every step saves theta in RUNG_TRIAL_DIR/ckpt-<step>.json before it reports
it (docs/schedulers.md, "pbt": a donor's checkpoint of the step it was
judged at must still be there when a receiver copies the folder); with
RUNG_RESUME_STEP set, the run goes on from that step's checkpoint, with
the config it was given now.

"explore_self": 1 in the config is the paper's "explore only" baseline
without any scheduler: every `interval` steps the member changes its own h
as pbt's explore would (each h_i resampled from [0, 1] with probability
0.25, else multiplied by 0.8 or 1.2, kept within [0, 1]), from a generator
seeded by "seed".

Config (RUNG_CONFIG, then argv --key value): h_0, h_1, lr (0.005), steps
(1200), interval (4), explore_self (0), seed (0), sleep_s (0: seconds per
step, so that members go at a pace rungd's answers keep up with).
"""
import json
import os
import random
import sys
import time

DEFAULTS = {"h_0": 1.0, "h_1": 0.0, "lr": 0.005, "steps": 1200, "interval": 4,
            "explore_self": 0, "seed": 0, "sleep_s": 0.0}


def config():
    c = dict(DEFAULTS)
    c.update(json.loads(os.environ.get("RUNG_CONFIG", "{}")))
    args = sys.argv[1:]
    for k, v in zip(args[0::2], args[1::2]):
        c[k.lstrip("-")] = float(v)
    return c


def explore(h, rng):
    out = []
    for v in h:
        if rng.random() < 0.25:
            out.append(rng.random())
        else:
            out.append(min(1.0, max(0.0, v * (1.2 if rng.random() < 0.5 else 0.8))))
    return out


def main():
    c = config()
    h = [float(c["h_0"]), float(c["h_1"])]
    lr = float(c["lr"])
    folder = os.environ.get("RUNG_TRIAL_DIR", ".")
    theta, start = [0.9, 0.9], 0
    resume = int(os.environ.get("RUNG_RESUME_STEP", "0") or 0)
    if resume > 0:
        try:
            with open(os.path.join(folder, "ckpt-%d.json" % resume)) as f:
                saved = json.load(f)
            theta, start = saved["theta"], resume
        except (OSError, ValueError, KeyError):
            print("pbt_toy: no checkpoint of step %d; starting over" % resume, file=sys.stderr)
    rng = random.Random(int(c["seed"]) * 1000003 + start)
    for step in range(start + 1, int(c["steps"]) + 1):
        if c["sleep_s"]:
            time.sleep(float(c["sleep_s"]))
        theta = [theta[i] - 2 * lr * h[i] * theta[i] for i in range(2)]
        q = 1.2 - theta[0] ** 2 - theta[1] ** 2
        tmp = os.path.join(folder, "ckpt-%d.json.tmp" % step)
        with open(tmp, "w") as f:
            json.dump({"theta": theta, "step": step}, f)
        os.replace(tmp, os.path.join(folder, "ckpt-%d.json" % step))
        print("@rung " + json.dumps({"step": step, "q": q, "theta_0": theta[0],
                                     "theta_1": theta[1], "h_0": h[0], "h_1": h[1]}),
              flush=True)
        if int(c["explore_self"]) and step % int(c["interval"]) == 0:
            h = explore(h, rng)


if __name__ == "__main__":
    main()
