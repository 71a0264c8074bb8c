"""A W&B training script, unchanged (`import wandb`): run under the
stand-in by rung.compat.wandb.trainable()."""

import wandb

run = wandb.init(config={"lr": 0.1, "layers": 1, "epochs": 4})
for epoch in range(wandb.config.epochs):
    loss = (wandb.config.lr - 0.4) ** 2 + 0.1 * wandb.config.layers + 1.0 / (epoch + 1)
    wandb.log({"loss": loss})
wandb.log({"extra": 1.0}, commit=False)
wandb.log({"extra2": 2.0})
run.summary["best_loss"] = 0.0
wandb.finish()
