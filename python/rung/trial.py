"""What a trainable uses inside a trial: its config, its folders, and report().

rung-worker starts a trainable with the environment docs/api.md lists under
"Command trainables": RUNG_CONFIG (the config as JSON), RUNG_TRIAL_DIR (the
trial's own folder, also for checkpoints), RUNG_RESUME_STEP (set when a
paused trial resumes from its checkpoint), RUNG_KEEP_CHECKPOINTS_EVERY
(pbt: the milestones whose checkpoints stay), RUNG_TRIAL_ID, and reads the
`@rung {json}` lines the program prints. Outside a worker every function
here answers for a local run, so the same script runs by hand.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from typing import Any, Mapping, Optional

__all__ = [
    "report",
    "config",
    "trial_dir",
    "checkpoint_dir",
    "resume_step",
    "keep_checkpoint",
    "trial_id",
    "in_worker",
]

# The limits of a report line (docs/api.md, "The line").
MAX_METRICS = 64
MAX_NAME_BYTES = 64
MAX_STEP = 2**53
# What a value that is not a number may take (worker/reportline.h): bytes of
# one as compact JSON, and of a line's together.
MAX_INFO_VALUE_BYTES = 1024
MAX_INFO_BYTES = 4096
# The values that are the report's info rather than a metric.
_INFO_TYPES = (str, bool, type(None), list, tuple, dict)
LOCAL_DIR = "rung-local"

_lock = threading.Lock()
_last_step: Optional[int] = None


def in_worker() -> bool:
    """True when this process runs as a trial of rung-worker."""
    return "RUNG_TRIAL_ID" in os.environ


def trial_id() -> Optional[int]:
    """The trial's id, or None outside a worker."""
    value = os.environ.get("RUNG_TRIAL_ID")
    return int(value) if value else None


def config(defaults: Optional[Mapping[str, Any]] = None) -> dict:
    """The trial's config: RUNG_CONFIG laid over `defaults`.

    Outside a worker (RUNG_CONFIG unset) this is `defaults`, so a script
    written as `cfg = rung.config({"lr": 0.01, "hidden": 128})` runs by hand
    with those values and under Rung with the searched ones.
    """
    merged = dict(defaults or {})
    raw = os.environ.get("RUNG_CONFIG")
    if raw:
        given = json.loads(raw)
        if not isinstance(given, dict):
            raise ValueError("RUNG_CONFIG must hold a JSON object")
        merged.update(given)
    return merged


def trial_dir() -> str:
    """The trial's own folder (RUNG_TRIAL_DIR); ./rung-local outside a worker."""
    path = os.environ.get("RUNG_TRIAL_DIR") or os.path.abspath(LOCAL_DIR)
    os.makedirs(path, exist_ok=True)
    return path


def checkpoint_dir() -> str:
    """Where to save checkpoints: the `checkpoints` folder of trial_dir().

    rung-worker keeps a paused trial's folder and resumes the trial on the
    same worker, so what is saved here before a report of step s is there
    again when the trial resumes with resume_step() == s.
    """
    path = os.path.join(trial_dir(), "checkpoints")
    os.makedirs(path, exist_ok=True)
    return path


def resume_step() -> int:
    """The step to resume from (RUNG_RESUME_STEP), or 0 for a fresh start."""
    value = os.environ.get("RUNG_RESUME_STEP")
    return int(value) if value else 0


def keep_checkpoint(step: int) -> bool:
    """Whether the checkpoint of `step` must stay after later ones are saved.

    Under the `pbt` and `pb2` schedulers other members may copy this trial's
    checkpoint of any milestone (a multiple of the perturbation_interval,
    RUNG_KEEP_CHECKPOINTS_EVERY), even after it went on or finished; other
    checkpoints may be deleted once a later one is saved. Without that
    variable only the latest is needed: False.
    """
    every = int(os.environ.get("RUNG_KEEP_CHECKPOINTS_EVERY") or 0)
    return every > 0 and step > 0 and step % every == 0


def _number(name: str, value: Any) -> Any:
    """A metric as a JSON number: numpy and torch scalars and 0-d arrays or
    tensors become Python numbers; anything else that is not a number is a
    TypeError naming the metric."""
    if isinstance(value, bool):
        raise TypeError(f"metric {name!r} is a bool, not a number")
    if isinstance(value, (int, float)):
        return value
    item = getattr(value, "item", None)
    if callable(item):
        shape = getattr(value, "shape", None)
        size = getattr(value, "size", None)
        size = size() if callable(size) else size
        if shape is not None and tuple(shape) != () and size != 1:
            raise TypeError(f"metric {name!r} is an array of shape {tuple(shape)}, "
                            "not a number")
        try:
            return _number(name, item())
        except (TypeError, ValueError) as exc:
            raise TypeError(f"metric {name!r} is not a number: {exc}") from None
    raise TypeError(f"metric {name!r} is a {type(value).__name__}, not a number")


def _info(name: str, value: Any) -> Any:
    """A value that is not a number, as the line's info carries it: checked
    to be one JSON can write (ValueError or TypeError naming the metric
    otherwise) and within the worker's bounds, so that nothing printed is
    left out."""
    try:
        text = json.dumps(value, allow_nan=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"metric {name!r} is not a number and JSON cannot carry it: "
                        f"{exc}") from None
    size = len(text.encode())
    if size > MAX_INFO_VALUE_BYTES:
        raise ValueError(f"metric {name!r} is not a number and its {size} bytes of JSON are "
                         f"more than {MAX_INFO_VALUE_BYTES}: info is for labels and flags")
    return size


def format_report(step: Optional[int], metrics: Mapping[str, Any]) -> str:
    """The `@rung` line for one report, without its newline.

    Numbers are metrics; a str, bool, None, list, tuple or dict is the
    report's info (docs/api.md, "The line"), e.g. phase="warmup" or Ray
    Tune's done=True, which ends the trial completed. Raises TypeError or
    ValueError, naming the metric, for what the worker would refuse or
    leave out. NaN and infinities are written as the bare tokens the
    protocol takes (NaN, Infinity, -Infinity).
    """
    if not metrics:
        raise ValueError("report() needs at least one metric or info value")
    if len(metrics) > MAX_METRICS:
        raise ValueError(f"report() takes at most {MAX_METRICS} metrics, got {len(metrics)}")
    body: dict[str, Any] = {}
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, int):
            step = _number("step", step)
            if isinstance(step, float):
                if not step.is_integer():
                    raise ValueError(f"step must be a whole number, got {step}")
                step = int(step)
        if not 0 <= step <= MAX_STEP:
            raise ValueError(f"step must be in [0, 2^53], got {step}")
        body["step"] = step
    info_bytes = 0
    for name, value in metrics.items():
        if not isinstance(name, str) or not 1 <= len(name.encode()) <= MAX_NAME_BYTES:
            raise ValueError(f"metric name {name!r} must be 1 to {MAX_NAME_BYTES} bytes")
        if name == "step":
            raise ValueError("'step' is the report's step, not a metric")
        if isinstance(value, _INFO_TYPES):
            info_bytes += _info(name, value)
            if info_bytes > MAX_INFO_BYTES:
                raise ValueError(f"metric {name!r}: the report's info passes "
                                 f"{MAX_INFO_BYTES} bytes of JSON")
            body[name] = value
            continue
        number = _number(name, value)
        if isinstance(number, int) and not -(2**63) <= number < 2**63:
            raise ValueError(f"metric {name!r} is outside 64-bit integers: {number}")
        body[name] = number
    # allow_nan: json writes NaN, Infinity and -Infinity as bare tokens,
    # exactly the spellings docs/api.md accepts in a report line.
    return "@rung " + json.dumps(body, allow_nan=True, separators=(",", ":"))


def report(step: Optional[int] = None, **metrics: Any) -> int:
    """Reports metrics of one step, and info (values that are not numbers:
    phase="train", done=True); returns the step.

    `step` left out is one more than the last report's (the first is
    resume_step() + 1), as the worker would count it: a report of info
    alone does not count one. The line is written to stdout and flushed at
    once, so the scheduler sees it while the program runs (an ASHA stop
    comes on time even when stdout is a pipe). Everything is checked before
    anything is printed.
    """
    global _last_step
    with _lock:
        if step is None:
            step = (_last_step if _last_step is not None else resume_step()) + 1
        line = format_report(step, metrics)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if any(not isinstance(v, _INFO_TYPES) for v in metrics.values()):
            _last_step = int(step)
        return int(step)


# The file run_function is importing, while it does: rung.Experiment.submit
# refuses to run then (a script without `if __name__ == "__main__":` would
# submit again from every trial).
importing_trainable: Optional[str] = None


def run_pickled(path: str) -> None:
    """Runs `fn(config())` for the function pickled by value in `path`: the
    trainable of an Experiment given a function that no worker could
    import (one of a notebook or of a script's __main__; rung.experiment)."""
    load_pickled(path)(config())


def load_function(path: str, name: str, stop: tuple = ()) -> Any:
    """The function `name` of the Python file `path`, imported under the
    file's own module name, not as __main__, so that a script that submits
    its experiment under `if __name__ == "__main__":` does not submit again.
    While the file is imported, `importing_trainable` is set (a submission
    then fails, saying why); an exception of `stop` ends the import early
    (rung.compat's runner: an unguarded driver stops at its Tuner.fit)."""
    import importlib.util

    module_name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    global importing_trainable
    importing_trainable = path
    try:
        spec.loader.exec_module(module)
    except stop:
        pass  # what the file defines above that point is there
    finally:
        importing_trainable = None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise AttributeError(f"{path} has no function {name!r}")
    return fn


def load_pickled(path: str) -> Any:
    """What `path` holds, pickled by value with cloudpickle (a function, or
    rung.compat's function and its parameters). Unpickling needs
    cloudpickle, which wrote it, in this interpreter."""
    import pickle

    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] == "cloudpickle":
            raise SystemExit("rung: this trainable is a function shipped by value with "
                             "cloudpickle, which this interpreter lacks: install it in the "
                             "worker's environment (Debian: python3-cloudpickle; pip install "
                             "cloudpickle)") from None
        raise SystemExit(f"rung: the trainable function needs the module {err.name!r}, "
                         "which this interpreter lacks: install it in the worker's "
                         "environment, or add it to the experiment's working_dir") from None


def run_function(path: str, name: str) -> None:
    """Runs `name(config())` from the Python file `path` (load_function):
    the trainable of an Experiment given a function of a file."""
    load_function(path, name)(config())
