"""The same trainables through Rung's own API (rung.config, rung.report,
rung.checkpoint_dir, rung.resume_step): what test_compat.py compares the
compat layer's results with."""

import json
import os

import rung


def checkpoint_native(config):
    total = 0.0
    for i in range(6):
        v = (config["x"] - 0.25) ** 2 + 1.0 / (i + 1)
        total += v
        rung.report(loss=v, total=total)


def pbt_native(config):
    state = {"w": 0.0, "i": 0}
    resume = rung.resume_step()
    if resume:
        with open(os.path.join(rung.checkpoint_dir(), "s%d.json" % resume)) as f:
            state = json.load(f)
    while state["i"] < 8:
        state["w"] += config["lr"]
        state["i"] += 1
        with open(os.path.join(rung.checkpoint_dir(), "s%d.json" % state["i"]), "w") as f:
            json.dump(state, f)
        rung.report(step=state["i"], score=-abs(state["w"] - 2.0))


def asha_native(config):
    offset = {"low": 0.0, "high": 0.5}[config["kind"]]
    for i in range(1, config["model.steps"] + 1):
        rung.report(loss=(config["model.x"] - 0.3) ** 2 + offset + 1.0 / i)


def restore_native(config):
    for i in range(1, 5):
        rung.report(loss=(config["x"] - 0.6) ** 2 + 1.0 / i)


def wandb_native(config):
    cfg = rung.config({"lr": 0.1, "layers": 1, "epochs": 4})
    best = None
    for epoch in range(cfg["epochs"]):
        loss = (cfg["lr"] - 0.4) ** 2 + 0.1 * cfg["layers"] + 1.0 / (epoch + 1)
        rung.report(loss=loss, epoch=epoch)
        best = loss if best is None else min(best, loss)
    rung.report(loss=loss, epoch=epoch, best_loss=best)
