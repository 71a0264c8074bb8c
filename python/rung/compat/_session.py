"""What a Ray trainable calls inside a Rung trial: tune.report / train.report,
Checkpoint, train.get_checkpoint, get_context.

Iterations: each report is one step (Ray's `training_iteration` is the
number of reports so far), written as an explicit `step` in the `@rung`
line (docs/api.md, "The line"). Every report also carries
`time_total_s`, the seconds since the trainable started (Ray adds it to
every result; a scheduler's `time_attr="time_total_s"` reads it).

Checkpoints use Rung's mechanism (docs/workers.md, "Population Based
Training's checkpoint copies"; python/rung/trial.py): the directory given
with a report is copied to `checkpoint_dir()/step-N` *before* the report
line is printed, so that a pause, preemption or PBT exploit at step N finds
it; `get_checkpoint()` answers the one of `resume_step()` (the donor's
after an exploit), or after a retry the latest one the trial folder holds.
Older ones are removed once a newer one is saved, except those
`keep_checkpoint()` says other PBT members may still copy.

Per-trial stop criteria (Ray's `stop={"training_iteration": 10}`) are
checked after each report: a reached one ends the function, and the trial
completes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Iterator, Mapping, Optional

from .. import trial as _trial

CHECKPOINT_PREFIX = "step-"


class DriverReached(BaseException):
    """Raised by Tuner.fit(), tune.run(), wandb.sweep() and wandb.agent()
    while the runner imports the trainable's file: a script without an
    `if __name__ == "__main__":` guard (as many of Ray's examples are) stops
    there, its trainable defined above, instead of submitting again from
    every trial."""


# True while rung.compat.run imports the file that holds the trainable.
loading = False


def driver_call(what: str) -> None:
    if loading:
        raise DriverReached(what)


class StopTrial(Exception):
    """Raised by report() when a stop criterion is reached; the runner
    catches it and the trial ends as completed."""


class Checkpoint:
    """Ray's Checkpoint: a directory of files (local only)."""

    def __init__(self, path: str, filesystem: Any = None):
        if filesystem is not None:
            raise ValueError("Checkpoint(filesystem=...): Rung's checkpoints are local "
                             "directories; pyarrow file systems are not supported")
        self.path = os.fspath(path)
        self._fetch = None  # a Result's checkpoint downloads itself on first use

    @classmethod
    def from_directory(cls, path: Any) -> "Checkpoint":
        return cls(os.path.abspath(os.fspath(path)))

    def _local(self) -> str:
        if self._fetch is not None:
            fetch, self._fetch = self._fetch, None
            self.path = fetch()
        return self.path

    def to_directory(self, path: Optional[str] = None) -> str:
        src = self._local()
        dest = os.fspath(path) if path is not None else tempfile.mkdtemp(prefix="checkpoint-")
        shutil.copytree(src, dest, dirs_exist_ok=True)
        return dest

    @contextlib.contextmanager
    def as_directory(self) -> Iterator[str]:
        yield self._local()

    def get_metadata(self) -> dict:
        try:
            with open(os.path.join(self._local(), ".metadata.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def set_metadata(self, metadata: Mapping[str, Any]) -> None:
        with open(os.path.join(self._local(), ".metadata.json"), "w") as f:
            json.dump(dict(metadata), f)

    def update_metadata(self, metadata: Mapping[str, Any]) -> None:
        merged = self.get_metadata()
        merged.update(metadata)
        self.set_metadata(merged)

    def __fspath__(self) -> str:
        return self._local()

    def __repr__(self) -> str:
        return f"Checkpoint(path={self.path!r})"


class _Session:
    def __init__(self) -> None:
        self.iteration = 0
        self.started = time.monotonic()
        self.stop: dict[str, float] = {}
        self.restored: Optional[tuple[int, str]] = None  # (step, path) to resume from
        self.experiment_name = ""
        self.warned: set[str] = set()
        self._find_restore()

    def _find_restore(self) -> None:
        steps = _checkpoint_steps()
        resume = _trial.resume_step()
        if resume > 0:
            # Promoted, preempted or (pbt) exploiting: the checkpoint of that
            # step, else the latest one before it.
            usable = [s for s in steps if s <= resume]
        elif int(os.environ.get("RUNG_ATTEMPT") or 1) > 1:
            usable = steps  # a retry: the latest the folder kept
        else:
            usable = []
        if usable:
            step = max(usable)
            self.restored = (step, _checkpoint_path(step))
            self.iteration = step
        elif resume > 0:
            self.iteration = resume

    def warn_once(self, key: str, text: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            print(f"rung.compat: {text}", file=sys.stderr, flush=True)


_session: Optional[_Session] = None


def session() -> _Session:
    global _session
    if _session is None:
        _session = _Session()
    return _session


def _checkpoint_path(step: int) -> str:
    return os.path.join(_trial.checkpoint_dir(), f"{CHECKPOINT_PREFIX}{step}")


def _checkpoint_steps() -> list[int]:
    root = os.path.join(_trial.trial_dir(), "checkpoints")
    if not os.path.isdir(root):
        return []
    steps = []
    for name in os.listdir(root):
        number = name[len(CHECKPOINT_PREFIX):]
        if name.startswith(CHECKPOINT_PREFIX) and number.isdigit():
            steps.append(int(number))
    return sorted(steps)


def _save_checkpoint(checkpoint: Checkpoint, step: int) -> None:
    dest = _checkpoint_path(step)
    src = os.path.abspath(checkpoint._local())
    if src != dest:
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
    for old in _checkpoint_steps():
        if old < step and not _trial.keep_checkpoint(old):
            shutil.rmtree(_checkpoint_path(old), ignore_errors=True)


def _numeric(name: str, value: Any) -> Optional[Any]:
    try:
        return _trial._number(name, value)
    except TypeError:
        return None


def report(metrics: Optional[Mapping[str, Any]] = None, *, checkpoint: Optional[Checkpoint] = None,
           **kwargs: Any) -> None:
    """Ray's tune.report / train.report: one result of one iteration.
    `metrics` is a dict (Ray 2.x); keyword metrics (Ray 1.x's
    `tune.report(loss=...)`) are taken too. A string, boolean, None or list
    is sent as the report's info (docs/api.md, the report line protocol:
    the trial's last `info`; Ray's `done: True` ends the trial completed);
    other objects are dropped (said once on stderr); nested dicts become
    `a/b` names, as Ray flattens them in its results."""
    s = session()
    given = dict(metrics or {})
    given.update(kwargs)
    flat: dict[str, Any] = {}
    _flatten_metrics(given, "", flat)
    line: dict[str, Any] = {}
    for name, value in flat.items():
        if name in ("step", "training_iteration"):
            s.warn_once("name:" + name, f"the metric {name!r} is not sent: Rung's step is "
                        "the number of reports (Ray's training_iteration)")
            continue
        number = _numeric(name, value)
        if number is None and _json_info(value):
            line[name] = value  # the trial's info
            continue
        if number is None:
            s.warn_once("type:" + name, f"the metric {name!r} is a {type(value).__name__}, "
                        "neither a number nor JSON data: not sent to rungd")
            continue
        line[name] = number
    line["time_total_s"] = round(time.monotonic() - s.started, 6)
    step = s.iteration + 1
    if checkpoint is not None:
        _save_checkpoint(checkpoint, step)
    _trial.report(step=step, **line)
    s.iteration = step
    reached = dict(line, training_iteration=step)
    for key, bound in s.stop.items():
        value = reached.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not math.isnan(value) and value >= bound:
            raise StopTrial(f"{key} reached {value} (stop at {bound})")


def _json_info(value: Any) -> bool:
    """Whether value can be a report line's info: a string, boolean, None,
    or a list of JSON data."""
    if value is None or isinstance(value, (str, bool)):
        return True
    if isinstance(value, (list, tuple)):
        try:
            json.dumps(value, allow_nan=True)
        except (TypeError, ValueError):
            return False
        return True
    return False


def _flatten_metrics(metrics: Mapping[str, Any], prefix: str, out: dict) -> None:
    for name, value in metrics.items():
        if isinstance(value, Mapping):
            _flatten_metrics(value, f"{prefix}{name}/", out)
        else:
            out[f"{prefix}{name}"] = value


def get_checkpoint() -> Optional[Checkpoint]:
    """None for a fresh trial; the checkpoint to go on from after a retry,
    a promotion, a preemption or a PBT exploit."""
    restored = session().restored
    return Checkpoint(restored[1]) if restored else None


class TrainContext:
    """What Ray's get_context() answers inside a trial (the rest is Ray
    Train's distributed view: one process, rank 0 of 1)."""

    def get_trial_id(self) -> Optional[str]:
        value = _trial.trial_id()
        return None if value is None else str(value)

    def get_trial_name(self) -> Optional[str]:
        value = _trial.trial_id()
        return None if value is None else f"trial_{value}"

    def get_trial_dir(self) -> str:
        return _trial.trial_dir()

    def get_experiment_name(self) -> str:
        return session().experiment_name

    def get_trial_resources(self) -> dict:
        return {}

    def get_world_rank(self) -> int:
        return 0

    def get_local_rank(self) -> int:
        return 0

    def get_node_rank(self) -> int:
        return 0

    def get_world_size(self) -> int:
        return 1

    def get_local_world_size(self) -> int:
        return 1

    def get_metadata(self) -> dict:
        return {}


def get_context() -> TrainContext:
    return TrainContext()
