"""`python3 -m rung.compat.run FILE NAME`: runs a Ray Tune function trainable
as a Rung trial; `python3 -m rung.compat.run --pickled FILE`: the same for
a function (and its tune.with_parameters objects) shipped by value in the
trial's working directory (a notebook's function, rung.compat.tune).

It imports NAME from FILE (under the file's own module name, as
`rung run-function` does, so a driver under `if __name__ == "__main__":`
does not run again; an unguarded one stops at its Tuner.fit(), tune.run(),
wandb.sweep() or wandb.agent(), see _session.DriverReached), and hands it
to `run_trainable`, which does what Ray
would around the call: the trial's flat config (RUNG_CONFIG) nested as the
param_space was, the objects of tune.with_parameters as keyword
arguments, the per-trial stop criteria, and a returned dict reported as the
last result. The settings come in $RUNG_COMPAT (JSON, written by
rung.compat.tune): {"tree": ..., "stop": {...}, "params": "file.pkl",
"name": "experiment name"}. `run_trainable` takes the function itself, so
a function shipped by value can use it as well.
"""

from __future__ import annotations

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
    """The trainable `name` of `path` (rung.trial.load_function); an
    unguarded driver's import stops at its Tuner.fit (_session)."""
    _session.loading = True
    try:
        return _trial.load_function(path, name, stop=(_session.DriverReached,))
    finally:
        _session.loading = False


def run_trainable(fn: Callable, options: Optional[dict] = None,
                  params: Optional[dict] = None) -> None:
    """Calls fn(config, **with_parameters) as Ray would, inside the trial;
    the parameters are `params`, or the file options["params"] names."""
    options = settings() if options is None else options
    s = _session.session()
    s.stop = {k: float(v) for k, v in (options.get("stop") or {}).items()}
    s.experiment_name = options.get("name") or ""
    config = nest(_trial.config(), options.get("tree") or {})
    kwargs: dict[str, Any] = dict(params or {})
    if not kwargs and options.get("params"):
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
        print("usage: python3 -m rung.compat.run FILE NAME | --pickled FILE", file=sys.stderr)
        return 2
    if argv[0] == "--pickled":
        # (function, with_parameters), shipped by value in the upload.
        fn, params = _trial.load_pickled(argv[1])
        run_trainable(fn, params=params)
    else:
        run_trainable(load_function(argv[0], argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
