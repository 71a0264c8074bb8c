"""Population Based Training in Ray Tune's documented shape: the state in
a checkpoint every iteration, restored from train.get_checkpoint() after an
exploit (the donor's) or a synchronous pause (its own)."""

import json
import os
import tempfile

from rung.compat import train


def pbt_fn(config):
    state = {"w": 0.0, "i": 0}
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            with open(os.path.join(d, "state.json")) as f:
                state = json.load(f)
    while state["i"] < 8:
        state["w"] += config["lr"]
        state["i"] += 1
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump(state, f)
        train.report({"score": -abs(state["w"] - 2.0)},
                     checkpoint=train.Checkpoint.from_directory(d))
