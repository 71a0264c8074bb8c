"""Ray Tune and W&B scripts on Rung by changing only their imports
(python/README.md, "Coming from Ray Tune" and "Coming from W&B").

- `from rung.compat import tune` (and `train`): Ray Tune's public API
  (Ray 2.x) mapped onto rung.Experiment: Tuner, TuneConfig, RunConfig,
  the search-space functions, the schedulers and searchers, tune.report,
  Checkpoint, tune.run.
- `from rung.compat import wandb`: wandb.sweep / wandb.agent for a driver
  script, and the stand-in `wandb` module (init, config, log, summary,
  finish) that a trial's `import wandb` finds (wandb_shim/).

Everything a name of Ray or W&B asks for that Rung cannot do is refused
with an error naming it, never silently changed. Standard library only.
"""

import importlib

__all__ = ["tune", "train", "wandb"]


def __getattr__(name: str):
    # Loaded on first use: `import rung` in every trial stays quick.
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
