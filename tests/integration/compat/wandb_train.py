"""A W&B training function and the sweep driving it, in W&B's documented
shapes (wandb.init with defaults, wandb.config, wandb.log, run.summary,
wandb.finish; wandb.sweep and wandb.agent), with `from rung.compat import
wandb` as the only change. wandb_script.py is the same as a script."""

from rung.compat import wandb

SWEEP = {
    "method": "random",
    "metric": {"name": "loss", "goal": "minimize"},
    "parameters": {"lr": {"min": 0.0, "max": 1.0},
                   "layers": {"values": [1, 2, 3]}},
}


def train():
    run = wandb.init(project="compat", config={"lr": 0.1, "layers": 1, "epochs": 4})
    cfg = wandb.config
    best = None
    for epoch in range(cfg.epochs):
        loss = (cfg.lr - 0.4) ** 2 + 0.1 * cfg["layers"] + 1.0 / (epoch + 1)
        wandb.log({"loss": loss, "epoch": epoch, "note": "not a number"})
        best = loss if best is None else min(best, loss)
    run.summary["best_loss"] = best
    wandb.finish()
