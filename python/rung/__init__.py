"""Rung's Python client (python/README.md).

Inside a trainable: `rung.config()`, `rung.report(...)`, `rung.trial_dir()`,
`rung.checkpoint_dir()`, `rung.resume_step()`, `rung.keep_checkpoint()`. From a script or notebook:
`rung.Experiment(...)`, `rung.search.*`, `rung.Client` for every REST
endpoint (docs/api.md), and `rung.from_wandb(...)` for W&B sweep files.
Standard library only; pandas is used by Experiment.dataframe() when present.
"""

from . import search
from ._version import __version__
from .client import ApiError, Client, RungError, UnreachableError
from .experiment import Experiment, ExperimentFailed, Result
from .trial import (checkpoint_dir, config, in_worker, keep_checkpoint, report, resume_step,
                    trial_dir, trial_id)

__all__ = [
    "__version__",
    "search",
    "report",
    "config",
    "trial_dir",
    "checkpoint_dir",
    "resume_step",
    "keep_checkpoint",
    "trial_id",
    "in_worker",
    "Client",
    "RungError",
    "ApiError",
    "UnreachableError",
    "Experiment",
    "ExperimentFailed",
    "Result",
    "from_wandb",
    "from_ray_param_space",
]


def __getattr__(name: str):
    # The converters load on first use: `import rung` in every trial stays quick.
    if name in ("from_wandb", "from_ray_param_space", "wandb_to_spec"):
        from . import convert

        return getattr(convert, name)
    raise AttributeError(f"module 'rung' has no attribute {name!r}")
