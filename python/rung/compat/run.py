"""`python3 -m rung.compat.run FILE NAME`: runs a Ray Tune function trainable
as a Rung trial.

It imports NAME from FILE (under the file's own module name, as
`rung run-function` does, so a driver under `if __name__ == "__main__":`
does not run again; an unguarded one stops at its Tuner.fit(), tune.run(),
wandb.sweep() or wandb.agent(), see _session.DriverReached), and hands it to `run_trainable`, which does what Ray
would around the call: the trial's flat config (RUNG_CONFIG) nested as the
param_space was, the objects of tune.with_parameters as keyword
arguments, the per-trial stop criteria, and a returned dict reported as the
last result. The settings come in $RUNG_COMPAT (JSON, written by
rung.compat.tune): {"tree": ..., "stop": {...}, "params": "file.pkl",
"name": "experiment name"}. `run_trainable` takes the function itself, so
a function shipped by value can use it as well.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import sys
from typing import Any, Callable, Optional

from .. import trial as _trial
from . import _session
from ._space import nest

ENV = "RUNG_COMPAT"


def settings() -> dict:
    raw = os.environ.get(ENV)
    return json.loads(raw) if raw else {}


def load_function(path: str, name: str) -> Callable:
    module_name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    _session.loading = True
    try:
        spec.loader.exec_module(module)
    except _session.DriverReached:
        pass  # the driver's own code, unguarded: what is defined above it is there
    finally:
        _session.loading = False
    fn = getattr(module, name, None)
    if fn is None:
        raise AttributeError(f"{path} has no trainable {name!r}")
    return fn


def run_trainable(fn: Callable, options: Optional[dict] = None) -> None:
    """Calls fn(config, **with_parameters) as Ray would, inside the trial."""
    options = settings() if options is None else options
    s = _session.session()
    s.stop = {k: float(v) for k, v in (options.get("stop") or {}).items()}
    s.experiment_name = options.get("name") or ""
    config = nest(_trial.config(), options.get("tree") or {})
    kwargs: dict[str, Any] = {}
    if options.get("params"):
        with open(options["params"], "rb") as f:
            kwargs = pickle.load(f)
    try:
        result = fn(config, **kwargs)
        if isinstance(result, dict) and result:
            _session.report(result)
    except _session.StopTrial as reached:
        print(f"rung.compat: stop criterion met: {reached}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m rung.compat.run FILE NAME", file=sys.stderr)
        return 2
    run_trainable(load_function(argv[0], argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
