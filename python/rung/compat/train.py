"""`from rung.compat import train`: the names of `ray.train` that Ray Tune
scripts use (Ray 2.x): report, get_checkpoint, get_context, Checkpoint,
RunConfig, FailureConfig, CheckpointConfig. The same objects as
rung.compat.tune's (python/README.md, "Coming from Ray Tune")."""

from ._mapping import CheckpointConfig, FailureConfig, RunConfig
from ._session import Checkpoint, get_checkpoint, get_context, report

__all__ = ["report", "get_checkpoint", "get_context", "Checkpoint", "RunConfig",
           "FailureConfig", "CheckpointConfig"]
