"""A stand-in for the `wandb` package, so that a W&B training script runs
unchanged as a Rung trial (python/README.md, "W&B scripts as trials").

This folder's parent goes first on the trial's PYTHONPATH (rung.compat's
runner `python3 -m rung.compat.wandb_run` puts it there), so the script's
`import wandb` finds this module instead of W&B's. It is self-contained
(standard library only, no `rung` import), and does:

- `wandb.init(config=defaults, ...)` returns a Run; `wandb.config` (and
  `run.config`) is `defaults` with the trial's config ($RUNG_CONFIG,
  docs/workers.md) laid over it, read by attribute or item; the trial's
  keys are locked, as a sweep's are (an update of one is ignored, said on
  stderr).
- `wandb.log(data, step=None, commit=None)`: W&B's steps (`_step` from 0,
  one per committed log; `commit=False` gathers data for the same step;
  an explicit `step` commits nothing until a later step or the finish, and
  a step below the current one is ignored, as W&B does). Each committed
  step is one `@rung {json}` report line on stdout, flushed (docs/api.md,
  "The line"), whose `step` is W&B's `_step` + 1: the number of steps
  logged so far, which is what Rung's schedulers count. Values that are
  strings, booleans and None are the report's info (the trial's `info`);
  other non-numbers (images, tables) are dropped here; nested dicts
  become `a.b` names.
- `run.summary`: each key's last logged value (or the `summary=` of
  `define_metric`: min, max, mean, last), overridden by what the script
  sets. At `finish()` (or at exit), when the summary's numbers differ from
  the last report, they are sent as one more report, so that the trial's
  last values are the summary, by which W&B ranks a sweep's runs.
- `wandb.run`, `finish`, `login`, `watch`, `save`, `define_metric`,
  `alert`, and data types (`Image`, `Table`, ...) as placeholders.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import uuid
from typing import Any, Mapping, Optional

_RUNG_SHIM = True
__version__ = "0.0.0+rung.shim"

MAX_METRICS = 64
MAX_NAME_BYTES = 64

_lock = threading.RLock()
run: Optional["Run"] = None
_warned: set = set()


def _warn(key: str, text: str) -> None:
    if key not in _warned:
        _warned.add(key)
        print(f"wandb (rung stand-in): {text}", file=sys.stderr, flush=True)


class Error(Exception):
    """wandb.Error."""


class Config:
    """wandb.config: attribute and item access over one dict."""

    def __init__(self, values: Optional[Mapping[str, Any]] = None, locked: Any = ()):
        object.__setattr__(self, "_items", dict(values or {}))
        object.__setattr__(self, "_locked", set(locked))

    def _set(self, key: str, value: Any) -> None:
        if key in self._locked:
            if self._items.get(key) != value:
                _warn("locked:" + key, f"config item {key!r} is set by the trial's "
                      f"config (the sweep), so the update to {value!r} is ignored")
            return
        self._items[key] = value

    def __getattr__(self, key: str) -> Any:
        try:
            return self._items[key]
        except KeyError:
            raise AttributeError(f"wandb.config has no key {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self._set(key, value)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._set(key, value)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def items(self):
        return self._items.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def update(self, d: Any = None, allow_val_change: bool = False, **kwargs: Any) -> None:
        for key, value in _as_dict(d, "config.update").items():
            self._set(key, value)
        for key, value in kwargs.items():
            self._set(key, value)

    def setdefaults(self, d: Mapping[str, Any]) -> None:
        for key, value in d.items():
            self._items.setdefault(key, value)

    def as_dict(self) -> dict:
        return dict(self._items)

    def __repr__(self) -> str:
        return repr(self._items)


class Summary(dict):
    """run.summary: a dict whose explicitly set keys win over logged values."""

    def __init__(self) -> None:
        super().__init__()
        self._explicit: set = set()

    def __setitem__(self, key: str, value: Any) -> None:
        self._explicit.add(key)
        super().__setitem__(key, value)

    def update(self, d: Any = None, **kwargs: Any) -> None:  # type: ignore[override]
        for key, value in dict(d or {}, **kwargs).items():
            self[key] = value

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key.startswith("_"):
            object.__setattr__(self, key, value)
        else:
            self[key] = value

    def _logged(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)


def _as_dict(d: Any, where: str) -> dict:
    if d is None:
        return {}
    if isinstance(d, Config):
        return d.as_dict()
    if isinstance(d, Mapping):
        return dict(d)
    if hasattr(d, "__dict__") and type(d).__name__ == "Namespace":  # argparse
        return dict(vars(d))
    raise TypeError(f"wandb (rung stand-in): {where} takes a dict or an argparse "
                    f"Namespace, not {type(d).__name__}")


def _number(value: Any) -> Any:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return value
    item = getattr(value, "item", None)
    if callable(item):
        try:
            size = getattr(value, "size", 1)
            size = size() if callable(size) else size
            if size != 1:
                return None
            return _number(item())
        except (TypeError, ValueError):
            return None
    return None


def _flatten(data: Mapping[str, Any], prefix: str, out: dict) -> None:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten(value, name + ".", out)
        else:
            out[name] = value


class Run:
    """What wandb.init returns."""

    def __init__(self, config: Config, project: Optional[str], name: Optional[str],
                 group: Optional[str], tags: Any, notes: Optional[str]):
        trial = os.environ.get("RUNG_TRIAL_ID")
        self.id = trial or uuid.uuid4().hex[:8]
        self.name = name or (f"trial-{trial}" if trial else f"run-{self.id}")
        self.project = project or "uncategorized"
        self.entity = None
        self.group = group
        self.job_type = None
        self.tags = tuple(tags or ())
        self.notes = notes
        self.sweep_id = os.environ.get("RUNG_EXPERIMENT_ID")
        self.config = config
        self.summary = Summary()
        self.dir = os.environ.get("RUNG_TRIAL_DIR") or os.getcwd()
        self.url = None
        self.offline = True
        self._step = 0
        self._pending: dict = {}
        self._last_sent: Optional[dict] = None
        self._rung_step = int(os.environ.get("RUNG_RESUME_STEP") or 0)
        self._agg: dict = {}  # define_metric's summary= per name
        self._mean: dict = {}
        self._finished = False

    @property
    def step(self) -> int:
        return self._step

    def _emit(self, data: dict) -> None:
        """Commits the step: the summary, and a report line with the numbers."""
        flat: dict = {}
        _flatten(data, "", flat)
        for key, value in flat.items():
            self._summarize(key, value)
        line = self._numbers(flat)
        if line:
            self._write(line, self._step + 1)
        self._step += 1

    def _summarize(self, key: str, value: Any) -> None:
        if key in self.summary._explicit:
            self.summary._explicit.discard(key)  # a new log overrides, as in W&B
        agg = self._agg.get(key)
        number = _number(value)
        if agg in ("min", "max") and number is not None and key in self.summary \
                and _number(self.summary[key]) is not None:
            pick = min if agg == "min" else max
            value = pick(self.summary[key], number)
        elif agg == "mean" and number is not None:
            total, n = self._mean.get(key, (0.0, 0))
            self._mean[key] = (total + number, n + 1)
            value = (total + number) / (n + 1)
        self.summary._logged(key, value)

    def _numbers(self, flat: Mapping[str, Any]) -> dict:
        line: dict = {}
        for key, value in flat.items():
            if key.startswith("_") or key == "step":
                continue
            number = _number(value)
            if number is None and (value is None or isinstance(value, (str, bool))):
                number = value  # a report line's info: the trial's last value of it
            elif number is None:
                _warn("type:" + key, f"{key!r} is a {type(value).__name__}, not a number: "
                      "not sent to rungd")
                continue
            if not 1 <= len(key.encode()) <= MAX_NAME_BYTES:
                _warn("name:" + key, f"{key!r}: Rung's metric names are 1 to "
                      f"{MAX_NAME_BYTES} bytes: not sent")
                continue
            if len(line) == MAX_METRICS:
                _warn("many", f"more than {MAX_METRICS} numbers in one step: the rest are "
                      "not sent")
                break
            line[key] = number
        return line

    def _write(self, metrics: dict, step: Optional[int] = None) -> None:
        # W&B's _step + 1; never below a step already sent (rungd takes a
        # repeated step as a retry of that report).
        self._rung_step = max(self._rung_step + 1, step or 0)
        body = {"step": self._rung_step, **metrics}
        sys.stdout.write("@rung " + json.dumps(body, allow_nan=True, separators=(",", ":"))
                         + "\n")
        sys.stdout.flush()
        self._last_sent = dict(metrics)

    def log(self, data: Mapping[str, Any], step: Optional[int] = None,
            commit: Optional[bool] = None, sync: Optional[bool] = None) -> None:
        if self._finished:
            raise Error("wandb.log after finish(): call wandb.init() again first")
        if not isinstance(data, Mapping):
            raise TypeError(f"wandb.log takes a dict, not {type(data).__name__}")
        with _lock:
            if step is not None:
                step = int(step)
                if step < self._step:
                    _warn(f"old:{step}", f"step {step} is below the current step "
                          f"{self._step}: that data is ignored (as W&B does)")
                    return
                if step > self._step:
                    if self._pending:
                        self._emit(self._pending)
                        self._pending = {}
                    self._step = step
                commit = bool(commit)  # W&B: with a step, commit defaults to False
            self._pending.update(data)
            if commit is None or commit:
                self._emit(self._pending)
                self._pending = {}

    def define_metric(self, name: str, step_metric: Optional[str] = None,
                      summary: Optional[str] = None, goal: Optional[str] = None,
                      **kwargs: Any) -> None:
        if summary:
            first = summary.split(",")[0].strip()
            if first == "best":
                first = "max" if goal == "maximize" else "min"
            if first in ("min", "max", "mean", "last"):
                self._agg[name] = first

    def finish(self, exit_code: Optional[int] = None, quiet: Optional[bool] = None) -> None:
        global run
        with _lock:
            if self._finished:
                return
            if self._pending:
                self._emit(self._pending)
                self._pending = {}
            final = self._numbers(dict(self.summary))
            if final and final != self._last_sent:
                self._write(final)
            self._finished = True
            if run is self:
                run = None

    def watch(self, *args: Any, **kwargs: Any) -> None:
        return None

    def unwatch(self, *args: Any, **kwargs: Any) -> None:
        return None

    def save(self, *args: Any, **kwargs: Any) -> bool:
        return True

    def log_artifact(self, *args: Any, **kwargs: Any) -> None:
        _warn("artifact", "artifacts are not uploaded; write files to the trial's "
              "artifacts/ folder ($RUNG_TRIAL_DIR/artifacts) for rungd to keep them")

    def use_artifact(self, *args: Any, **kwargs: Any) -> None:
        raise Error("use_artifact: W&B artifacts are not available under Rung")

    def alert(self, title: str = "", text: str = "", **kwargs: Any) -> None:
        print(f"wandb alert: {title}: {text}", file=sys.stderr, flush=True)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.finish()

    def __repr__(self) -> str:
        return f"<Run {self.id} (rung stand-in)>"


def _trial_config() -> dict:
    raw = os.environ.get("RUNG_CONFIG")
    if not raw:
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise Error("RUNG_CONFIG must hold a JSON object")
    return value


class _PreInit:
    """wandb.config / wandb.summary before init(): W&B refuses their use."""

    def __init__(self, what: str):
        object.__setattr__(self, "_what", what)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise Error(f"You must call wandb.init() before wandb.{self._what}")

    __getattr__ = __getitem__ = __setattr__ = __setitem__ = _refuse


config: Any = _PreInit("config")
summary: Any = _PreInit("summary")


def init(project: Optional[str] = None, entity: Optional[str] = None,
         config: Any = None, name: Optional[str] = None, group: Optional[str] = None,
         tags: Any = None, notes: Optional[str] = None, reinit: Any = None,
         **kwargs: Any) -> Run:
    """Starts the run: `config` gives the defaults, the trial's config wins.
    W&B's other keyword arguments (mode, dir, job_type, settings, ...) are
    accepted and have no effect here."""
    global run, summary
    g = globals()
    with _lock:
        if run is not None and not run._finished:
            if not reinit:
                return run
            run.finish()
        given = _trial_config()
        merged = _as_dict(config, "init(config=...)")
        merged.update(given)
        cfg = Config(merged, locked=given)
        run = Run(cfg, project, name, group, tags, notes)
        g["config"] = cfg
        summary = run.summary
        return run


def log(data: Mapping[str, Any], step: Optional[int] = None, commit: Optional[bool] = None,
        sync: Optional[bool] = None) -> None:
    if run is None:
        raise Error("You must call wandb.init() before wandb.log()")
    run.log(data, step=step, commit=commit)


def finish(exit_code: Optional[int] = None, quiet: Optional[bool] = None) -> None:
    if run is not None:
        run.finish(exit_code)


def define_metric(name: str, *args: Any, **kwargs: Any) -> None:
    if run is None:
        raise Error("You must call wandb.init() before wandb.define_metric()")
    run.define_metric(name, *args, **kwargs)


def login(*args: Any, **kwargs: Any) -> bool:
    return True


def setup(*args: Any, **kwargs: Any) -> None:
    return None


def watch(*args: Any, **kwargs: Any) -> None:
    return None


def unwatch(*args: Any, **kwargs: Any) -> None:
    return None


def save(*args: Any, **kwargs: Any) -> bool:
    return True


def alert(title: str = "", text: str = "", **kwargs: Any) -> None:
    print(f"wandb alert: {title}: {text}", file=sys.stderr, flush=True)


def log_artifact(*args: Any, **kwargs: Any) -> None:
    if run is not None:
        run.log_artifact(*args, **kwargs)


class _Media:
    """W&B's data types: accepted, and dropped from reports (not numbers)."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.args, self.kwargs = args, kwargs


class Image(_Media):
    pass


class Table(_Media):
    pass


class Histogram(_Media):
    pass


class Video(_Media):
    pass


class Audio(_Media):
    pass


class Html(_Media):
    pass


class Object3D(_Media):
    pass


class Artifact(_Media):
    def add_file(self, *args: Any, **kwargs: Any) -> None:
        return None

    def add_dir(self, *args: Any, **kwargs: Any) -> None:
        return None


class Settings(_Media):
    pass


def _at_exit() -> None:
    if run is not None and not run._finished:
        run.finish()


atexit.register(_at_exit)

__all__ = ["init", "log", "finish", "config", "summary", "run", "Run", "Config", "login",
           "watch", "unwatch", "save", "define_metric", "alert", "log_artifact", "Error",
           "Image", "Table", "Histogram", "Video", "Audio", "Html", "Object3D", "Artifact",
           "Settings", "setup"]
