"""A function trainable with checkpoints, in Ray Tune's documented shape
(train.get_checkpoint to resume, tune.report with a Checkpoint), run by
tests/integration/test_compat.py with only the imports changed. Its first
attempt crashes once before iteration 4 when config["crash"] is set; the
retry (FailureConfig(max_failures=1)) goes on from the checkpoint of
iteration 3, so the reported values equal an uninterrupted run's."""

import json
import os
import tempfile

from rung.compat import train, tune

STEPS = 6


def value(config, i):
    return (config["x"] - 0.25) ** 2 + 1.0 / (i + 1)


def train_fn(config):
    start, total = 0, 0.0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            with open(os.path.join(d, "state.json")) as f:
                state = json.load(f)
        start, total = state["i"], state["total"]
    for i in range(start, STEPS):
        if config["crash"] and i == 3 and checkpoint is None:
            raise RuntimeError("crash once, before iteration 4")
        total += value(config, i)
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump({"i": i + 1, "total": total}, f)
        tune.report({"loss": value(config, i), "total": total},
                    checkpoint=tune.Checkpoint.from_directory(d))
