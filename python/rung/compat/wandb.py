"""`from rung.compat import wandb`: W&B's sweep and agent for a driver
script, on Rung (python/README.md, "W&B scripts as trials").

```python
from rung.compat import wandb

def train():
    run = wandb.init(config={"lr": 0.01, "epochs": 5})
    for epoch in range(wandb.config.epochs):
        wandb.log({"loss": ...})
    wandb.finish()

sweep_id = wandb.sweep({"method": "random", "metric": {"name": "loss", "goal": "minimize"},
                        "parameters": {"lr": {"min": 0.0001, "max": 0.1}}}, project="p")
wandb.agent(sweep_id, function=train, count=20)
```

- `sweep(config)` checks the sweep with rung.convert.wandb_to_spec (what
  Rung cannot express is refused there, naming the field) and returns an
  id for `agent` in this process.
- `agent(sweep_id, function=f, count=n)` submits one rung.Experiment of
  `count` trials (num_samples) that run `f()` on the workers, through
  `python3 -m rung.compat.wandb_run --function FILE NAME`, where the
  `wandb` stand-in (wandb_shim/) answers `wandb.init()` with the trial's
  config; it waits for the experiment and returns it (W&B's returns None).
  Without `function`, the sweep's `program`/`command` runs, its
  `python3 PROGRAM` under the stand-in. The experiment ranks trials by
  their last values (best_scope "last"): the stand-in sends the summary
  last, and W&B ranks a sweep's runs by their summary.
- `trainable(program, *args)`: the trainable (for rung.Experiment) that
  runs a W&B script under the stand-in.
- `init`, `log`, `config`, `run`, `summary`, `finish`, ...: the
  stand-in's, so that a function defined beside the driver, which uses
  this module as its `wandb`, works on the workers too.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import uuid
from typing import Any, Callable, Optional

from ..client import Client
from ..convert import from_wandb, wandb_to_spec
from ..experiment import Experiment, _inside, _python_env
from ._session import driver_call
from .wandb_run import SHIM_DIR

_SWEEPS: dict[str, dict] = {}
last_experiment: Optional[Experiment] = None


def _runner(*tail: str, working_dir: Optional[str] = None) -> dict:
    if working_dir is not None:
        return {"type": "command", "argv": ["python3", "-m", "rung.compat.wandb_run", *tail]}
    return {"type": "command", "argv": [sys.executable, "-m", "rung.compat.wandb_run", *tail],
            "env": _python_env()}


def trainable(program: str, *args: str, working_dir: Optional[str] = None) -> dict:
    """The API's trainable that runs the W&B script `program` (with `args`)
    under the stand-in. With `working_dir` (as rung.Experiment takes it),
    the program must lie inside it and runs as the worker's `python3`."""
    path = _inside(program, working_dir) if working_dir is not None \
        else os.path.abspath(program)
    return _runner(path, *map(str, args), working_dir=working_dir)


def function_trainable(fn: Callable, working_dir: Optional[str] = None) -> dict:
    """The API's trainable that calls the function `fn()` under the stand-in."""
    path = inspect.getsourcefile(fn)
    if path is None or not os.path.isfile(path) or fn.__qualname__ != fn.__name__:
        raise ValueError(f"function {getattr(fn, '__qualname__', fn)!r}: a worker imports it "
                         "from its .py file, so it must be a top-level function of a file")
    path = _inside(path, working_dir) if working_dir is not None else os.path.abspath(path)
    return _runner("--function", path, fn.__name__, working_dir=working_dir)


def sweep(sweep: dict, entity: Optional[str] = None, project: Optional[str] = None,
          prior_runs: Any = None) -> str:
    """Checks the sweep config and returns its id (valid in this process)."""
    driver_call("wandb.sweep")
    if prior_runs:
        raise ValueError("sweep(prior_runs=...): start from an earlier Rung experiment with "
                         "warm_start instead")
    wandb_to_spec(sweep)  # refuses, naming the field, what Rung cannot express
    sweep_id = uuid.uuid4().hex[:8]
    _SWEEPS[sweep_id] = dict(sweep)
    return sweep_id


def agent(sweep_id: str, function: Optional[Callable] = None, entity: Optional[str] = None,
          project: Optional[str] = None, count: Optional[int] = None,
          rung_client: Optional[Client] = None, **fields: Any) -> Experiment:
    """Runs the sweep on Rung's workers and waits for it (module docstring).
    Other keyword arguments are rung.Experiment's (max_concurrent_trials=,
    working_dir=, ...)."""
    global last_experiment
    driver_call("wandb.agent")
    if sweep_id not in _SWEEPS:
        raise ValueError(f"sweep id {sweep_id!r}: not made by wandb.sweep() in this process "
                         "(rungd does not keep W&B's sweep ids)")
    config = _SWEEPS[sweep_id]
    working_dir = fields.get("working_dir")
    if function is not None:
        runnable = function_trainable(function, working_dir)
    else:
        argv = (wandb_to_spec(config).get("trainable") or {}).get("argv")
        if not argv:
            raise ValueError("agent(): give function=, or a program in the sweep config")
        if argv[0] != "python3":
            raise ValueError(f"command {argv!r}: the W&B stand-in needs the program run by "
                             "python3 (the sweep's ${interpreter})")
        runnable = _runner(*argv[1:], working_dir=working_dir)
    kwargs: dict[str, Any] = {"trainable": runnable, "best_scope": "last"}
    if count is not None:
        if config.get("method") == "grid":
            spec = wandb_to_spec(config)
            total = 1
            for domain in spec["search_space"].values():
                if isinstance(domain, dict) and domain.get("type") == "grid":
                    total *= len(domain["values"])
            if count < total:
                raise ValueError(f"count={count}: below the grid's {total} combinations, and "
                                 "Rung runs the whole grid; leave count out or cut the grid")
        else:
            kwargs["num_samples"] = count
    if rung_client is not None:
        kwargs["client"] = rung_client
    kwargs.update(fields)
    exp = from_wandb(config, **kwargs).submit()
    last_experiment = exp
    exp.wait(poll_s=0.25)
    return exp


def _shim():
    """The stand-in module: the `wandb` a trial imported when it is the
    stand-in, else a private copy loaded from its file."""
    mod = sys.modules.get("wandb")
    if mod is not None and getattr(mod, "_RUNG_SHIM", False):
        return mod
    if mod is None and sys.path[:1] == [SHIM_DIR]:
        import wandb as mod  # the runner put the stand-in first

        return mod
    name = "rung.compat._wandb_shim"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(SHIM_DIR, "wandb", "__init__.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_shim(), name)
