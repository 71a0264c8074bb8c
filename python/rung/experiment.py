"""rung.Experiment: submit a search, wait for it, and read its results.

A thin layer over Client (rung.client) with the names Ray Tune and Optuna
users know: `param_space`, `best()` with Ray's `scope`, `dataframe()` like
Optuna's `trials_dataframe`. The spec it sends is the REST API's
(docs/api.md, "The experiment spec"); fields it has no argument for pass
through as keyword arguments with their API names.
"""

from __future__ import annotations

import math
import os
import shlex
import sys
import time
from typing import Any, Callable, Optional, Union

from .client import Client, RungError

__all__ = ["Experiment", "Result", "ExperimentFailed", "trainable_spec"]

ENDED = ("completed", "failed", "canceled")
TERMINAL_TRIALS = ("completed", "stopped", "failed", "canceled")


class ExperimentFailed(RungError):
    """The experiment ended `failed`; `experiment` is its object, and the
    message its `error` (docs/api.md, "The experiment object")."""

    def __init__(self, experiment: dict):
        self.experiment = experiment
        super().__init__(f"experiment {experiment['id']} failed: {experiment.get('error')}")


class Result:
    """The best trial by one scope: its id, config, metric value and step,
    and the whole trial object. (A plain class: dataclasses would import
    inspect, and `import rung` is on every trial's start-up path.)"""

    __slots__ = ("trial_id", "config", "value", "step", "trial", "client")

    def __init__(self, trial_id: int, config: dict, value: float, step: Optional[int],
                 trial: dict, client: Optional[Client] = None):
        self.trial_id = trial_id
        self.config = config
        self.value = value
        self.step = step
        self.trial = trial
        self.client = client

    def download(self, dest: str) -> str:
        """Unpacks the trial's kept artifacts (its folder: artifacts/ and
        checkpoints; docs/api.md, "Artifacts") into `dest`, after checking
        their hash; returns `dest`. ApiError 404 says why there are none."""
        from ._pack import download_artifacts

        return download_artifacts(self.client or Client(), self.trial_id, dest)

    def __repr__(self) -> str:
        return (f"Result(trial_id={self.trial_id}, value={self.value!r}, "
                f"step={self.step}, config={self.config!r})")

    def _repr_html_(self) -> str:
        """A notebook's view: the value, step and config as a table."""
        rows = [("trial", self.trial_id), ("value", self.value), ("step", self.step)]
        rows += [(f"config.{k}", v) for k, v in self.config.items()]
        return _html_table(["", ""], rows)


def _python_env() -> dict:
    """The environment of a Python trainable run by this interpreter: the
    folder this package was imported from goes first on PYTHONPATH, so that
    `import rung` works in the trial also from a source checkout that was
    never pip-installed."""
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pythonpath = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH"))
                                 if p)
    return {"PYTHONPATH": pythonpath}


def _inside(path: str, working_dir: str) -> str:
    """path relative to working_dir, which must hold it: what a worker finds
    in its copy of the folder."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(working_dir))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise ValueError(f"trainable {path}: not inside working_dir {working_dir}, so the "
                         "workers would not have it")
    return rel.replace(os.sep, "/")


def _run_function_argv(fn: Callable, working_dir: Optional[str] = None) -> list[str]:
    import inspect

    path = inspect.getsourcefile(fn)
    if path is None or not os.path.isfile(path) or fn.__qualname__ != fn.__name__:
        raise ValueError(
            f"trainable {fn.__qualname__!r}: a worker runs a function by importing "
            "it from its .py file, so it must be a top-level function of a file "
            "(not a notebook cell, a lambda or a nested function)")
    if working_dir is not None:
        # The worker's python3 (its environment's) in its copy of the folder.
        return ["python3", "-m", "rung", "run-function", _inside(path, working_dir), fn.__name__]
    return [sys.executable, "-m", "rung", "run-function", os.path.abspath(path), fn.__name__]


# The file a function shipped by value has in the trial's working directory.
PICKLED_FUNCTION = "rung_trainable.pkl"


def _by_value(fn: Callable) -> bool:
    """Whether fn must be shipped by value, as no worker could import it
    from a file: a function of a notebook or of a script's __main__ (whose
    import would run the script, and its submission, again), a lambda, a
    nested function, a functools.partial or any other callable object."""
    import inspect

    if not inspect.isfunction(fn):
        return True
    if fn.__module__ == "__main__" or fn.__qualname__ != fn.__name__:
        return True
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        return True
    return path is None or not os.path.isfile(path)


def _pickle_function(fn: Callable, payload: Any = None) -> Optional[bytes]:
    """fn (or `payload`, which holds it) pickled by value with cloudpickle,
    or None when cloudpickle is missing here and fn can still be imported
    from its script's file."""
    try:
        import cloudpickle
    except ImportError:
        import inspect

        try:
            path = inspect.getsourcefile(fn) if inspect.isfunction(fn) else None
        except TypeError:
            path = None
        if path is not None and os.path.isfile(path) and fn.__qualname__ == fn.__name__:
            return None  # a script's function: imported from its file, as before
        raise ValueError(f"trainable {getattr(fn, '__qualname__', fn)!r}: a function defined "
                         "in a notebook (or a lambda, a nested function, a partial) is shipped "
                         "to the workers by value with cloudpickle, which is not installed "
                         "here (Debian: python3-cloudpickle; pip install cloudpickle)") from None
    try:
        return cloudpickle.dumps(fn if payload is None else payload)
    except Exception as err:  # what cloudpickle cannot pickle, named
        raise ValueError(f"trainable {getattr(fn, '__qualname__', fn)!r}: cannot be shipped "
                         f"to the workers: {err}") from None


def trainable_spec(trainable: Any, working_dir: Optional[str] = None) -> dict:
    """The API's trainable for what a user passes:

    - a dict: as it is (`{"type": "command", ...}`, `{"type": "builtin", ...}`,
      `{"type": "external"}`);
    - a list of strings: the argv of a command;
    - a path to a .py file: run with this Python interpreter (and this
      package on its PYTHONPATH);
    - any other string: a command line, split as a shell would;
    - a function f(config): imported from its file and called by the worker.

    With a `working_dir`, a .py file or a function must lie inside it, and
    runs as `python3` in the worker's copy of that folder (the
    environment's interpreter, docs/workers.md), not as this interpreter's
    path and this machine's absolute paths.
    """
    if isinstance(trainable, dict):
        return trainable
    if isinstance(trainable, (list, tuple)):
        return {"type": "command", "argv": [str(a) for a in trainable]}
    if isinstance(trainable, str):
        if trainable.endswith(".py") and os.path.isfile(trainable):
            if working_dir is not None:
                return {"type": "command", "argv": ["python3", _inside(trainable, working_dir)]}
            return {"type": "command", "argv": [sys.executable, os.path.abspath(trainable)],
                    "env": _python_env()}
        return {"type": "command", "argv": shlex.split(trainable)}
    if callable(trainable):
        if working_dir is not None:
            return {"type": "command", "argv": _run_function_argv(trainable, working_dir)}
        return {"type": "command", "argv": _run_function_argv(trainable), "env": _python_env()}
    raise TypeError(f"trainable: a dict, an argv list, a command, a .py file or a "
                    f"function, not {type(trainable).__name__}")


def _finite(value: Any) -> Optional[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class Experiment:
    """One search: its spec before submission, its id and results after.

    ```python
    exp = rung.Experiment(name="mlp", trainable="train.py",
                          param_space={"lr": rung.search.loguniform(1e-4, 1e-1)},
                          metric="val_loss", mode="min", searcher="bayes",
                          scheduler="asha", num_samples=40).submit()
    exp.wait(progress=True)
    print(exp.best().config)
    ```

    Several objectives replace `metric` and `mode` with `metrics=[{"name":
    "val_loss", "mode": "min"}, {"name": "latency_ms", "mode": "min"}]`,
    and `constraints=[{"metric": "peak_mem_gb", "max": 16}]` bounds what a
    trial may report (docs/api.md, "Several objectives and constraints");
    such an experiment's results are `pareto()`.
    """

    def __init__(self, name: Optional[str] = None, trainable: Any = None,
                 param_space: Optional[dict] = None, metric: Optional[str] = None,
                 mode: Optional[str] = None, searcher: Union[str, dict, None] = None,
                 scheduler: Union[str, dict, None] = None, num_samples: int = 1,
                 client: Optional[Client] = None, metrics: Optional[list] = None,
                 constraints: Optional[list] = None, working_dir: Optional[str] = None,
                 environment: Optional[str] = None, tags: Optional[list] = None,
                 notes: Optional[str] = None, _upload_files: Optional[dict] = None,
                 **spec_fields: Any):
        self.client = client or Client()
        # Uploaded at submit(): the folder may change until then.
        self._working_dir = working_dir
        # A function shipped by value: its pickle goes into the working
        # directory's upload (docs/workers.md), so it reaches every worker;
        # so do _upload_files ({name: bytes}, rung.compat's pickles).
        self._pickled: Optional[bytes] = None
        self._upload_files = dict(_upload_files or {})
        self.id: Optional[int] = None
        self.data: Optional[dict] = None
        self._spec: dict[str, Any] = {}
        if name is not None:
            self._spec["name"] = name
        if metrics is not None:
            if metric is not None or mode is not None:
                raise ValueError("give either metric and mode (one objective) or metrics "
                                 "(several), not both")
            self._spec["metrics"] = [dict(m) for m in metrics]
        else:
            if metric is not None:
                self._spec["metric"] = metric
            self._spec["mode"] = mode or "min"
        if constraints is not None:
            self._spec["constraints"] = [dict(c) for c in constraints]
        # Every space rungd takes (nested, conditional) and Ray's forms
        # (its domain objects, grid_search, nested dicts) as the API's JSON;
        # what has no JSON form (functions, eval) is refused here, by name.
        from .convert import from_ray_param_space

        self._spec["search_space"] = from_ray_param_space(dict(param_space or {}))
        if searcher is not None:
            self._spec["searcher"] = {"type": searcher} if isinstance(searcher, str) else searcher
        if scheduler is not None:
            self._spec["scheduler"] = ({"type": scheduler} if isinstance(scheduler, str)
                                       else scheduler)
        self._spec["num_samples"] = num_samples
        # What people say about it (docs/api.md, "Tags and notes"): spec
        # fields, changed later with update().
        if tags is not None:
            self._spec["tags"] = list(tags)
        if notes is not None:
            self._spec["notes"] = notes
        self._spec.update({k: v for k, v in spec_fields.items() if v is not None})
        if trainable is not None and callable(trainable) and \
                not isinstance(trainable, (dict, str, list, tuple)) and _by_value(trainable):
            self._pickled = _pickle_function(trainable)
        if self._pickled is not None:
            # The environment's python3 with a working_dir (docs/workers.md),
            # else this interpreter, as for a function of a file.
            python = "python3" if working_dir is not None else sys.executable
            self._spec["trainable"] = {"type": "command", "argv": [
                python, "-m", "rung", "run-function", PICKLED_FUNCTION, "--pickled"]}
            if working_dir is None:
                self._spec["trainable"]["env"] = _python_env()
        elif trainable is not None:
            self._spec["trainable"] = trainable_spec(trainable, working_dir)
        if environment is not None:
            self._spec.setdefault("trainable", {"type": "command"})["environment"] = environment

    @classmethod
    def attach(cls, experiment_id: int, client: Optional[Client] = None) -> "Experiment":
        """The experiment `experiment_id` that already exists in rungd."""
        exp = cls.__new__(cls)
        exp.client = client or Client()
        exp.data = exp.client.get_experiment(experiment_id)
        exp.id = exp.data["id"]
        exp._spec = {}
        exp._working_dir = None
        exp._pickled = None
        exp._upload_files = {}
        return exp

    def __repr__(self) -> str:
        state = self.data["state"] if self.data else "not submitted"
        return f"<rung.Experiment {self.id} {self.name!r} {state}>"

    def _repr_html_(self) -> str:
        """A notebook's view: the experiment's state, counts and best trial,
        then its trials best first (at most 20) as rows() has them."""
        if self.data is None:
            spec = self._spec
            return (f"<p><b>rung.Experiment</b> {_esc(spec.get('name'))}: not submitted</p>"
                    + _html_table(["parameter", "domain"],
                                  [(k, v) for k, v in spec.get("search_space", {}).items()]))
        exp = self.data
        head = (f"<p><b>experiment {exp['id']}</b> {_esc(exp.get('name'))}: "
                f"{_esc(_progress_line(exp))}</p>")
        try:
            rows = self.rows()
        except RungError as err:
            return head + f"<p>trials: {_esc(err)}</p>"
        key = "best_value" if rows and "best_value" in rows[0] else None
        if key is not None:
            sign = 1.0 if exp.get("mode") != "max" else -1.0
            rows.sort(key=lambda r: (r[key] is None, sign * (r[key] or 0.0)))
        shown = rows[:20]
        columns = [c for c in (shown[0] if shown else {}) if not c.startswith("metric:")]
        more = f"<p>… {len(rows) - len(shown)} more trials</p>" if len(rows) > len(shown) else ""
        return head + _html_table(columns, [[r.get(c) for c in columns] for r in shown]) + more

    @property
    def name(self) -> Optional[str]:
        return (self.data or self._spec).get("name")

    @property
    def metric(self) -> str:
        """The objective's name; with several objectives, the first's."""
        spec = self.data or self._spec
        return spec["metrics"][0]["name"] if "metrics" in spec else spec["metric"]

    @property
    def mode(self) -> str:
        spec = self.data or self._spec
        return spec["metrics"][0]["mode"] if "metrics" in spec else spec["mode"]

    @property
    def objectives(self) -> list[dict]:
        """[{"name", "mode"}] of each objective: one, or the spec's metrics."""
        spec = self.data or self._spec
        if "metrics" in spec:
            return [dict(m) for m in spec["metrics"]]
        return [{"name": spec["metric"], "mode": spec["mode"]}]

    @property
    def tags(self) -> list[str]:
        """Its tags, as last read (refresh() reads them again)."""
        return list((self.data or self._spec).get("tags", []))

    @property
    def notes(self) -> str:
        return (self.data or self._spec).get("notes", "")

    def update(self, tags: Optional[list] = None, notes: Optional[str] = None) -> dict:
        """Replaces its tags and/or notes (in any state; ApiError naming the
        field, e.g. tags[2], for one rungd refuses); returns its object."""
        fields: dict[str, Any] = {}
        if tags is not None:
            fields["tags"] = list(tags)
        if notes is not None:
            fields["notes"] = notes
        self.data = self.client.patch_experiment(self._need_id(), **fields)
        return self.data

    def add_tags(self, *tags: str) -> dict:
        """Adds tags it lacks, keeping its own first (read, then replaced)."""
        have = self.refresh().get("tags", [])
        return self.update(tags=have + [t for t in dict.fromkeys(tags) if t not in have])

    def remove_tags(self, *tags: str) -> dict:
        return self.update(tags=[t for t in self.refresh().get("tags", []) if t not in tags])

    def submitted_spec(self) -> Optional[dict]:
        """The spec as it was POSTed (None for one stored before rungd kept it)."""
        return self.client.experiment_spec(self._need_id())["submitted"]

    def timeline(self) -> dict:
        """When and where its trials ran (Client.timeline)."""
        return self.client.timeline(self._need_id())

    def spec(self) -> dict:
        """The spec this experiment submits (or submitted), as the API's JSON."""
        return dict(self._spec) if self.data is None else dict(self.data)

    def _need_id(self) -> int:
        if self.id is None:
            raise RungError("the experiment has not been submitted yet: call submit()")
        return self.id

    # -- lifecycle ---------------------------------------------------------

    def submit(self) -> "Experiment":
        """POST the spec; rungd checks it (ApiError naming the field) and the
        search starts. Returns self."""
        if self.id is not None:
            raise RungError(f"experiment {self.id} was submitted already")
        from . import trial

        if trial.importing_trainable is not None:
            raise RungError(f"{trial.importing_trainable} submits an experiment when a worker "
                            "imports it to run its trainable function: put the submission "
                            "under `if __name__ == \"__main__\":`")
        extra = dict(self._upload_files)
        if self._pickled is not None:
            extra[PICKLED_FUNCTION] = self._pickled
        if self._working_dir is not None or extra:
            from ._pack import upload

            t = self._spec.get("trainable")
            if not isinstance(t, dict) or t.get("type") != "command":
                raise ValueError("working_dir: needs a command trainable (a .py file, a "
                                 "function, an argv or a command line)")
            t["working_dir"] = upload(self.client, self._working_dir, extra=extra)
        self.data = self.client.create_experiment(self._spec)
        self.id = self.data["id"]
        return self

    def refresh(self) -> dict:
        """The experiment object as rungd has it now."""
        self.data = self.client.get_experiment(self._need_id())
        return self.data

    @property
    def state(self) -> str:
        return self.refresh()["state"]

    def wait(self, progress: Optional[bool] = None, poll_s: float = 1.0,
             timeout: Optional[float] = None, raise_on_failure: bool = True) -> dict:
        """Waits until the experiment ends (completed, failed or canceled)
        and returns its object. A paused experiment is waited for too.

        `progress`: a bar on stderr (default: when stderr is a terminal;
        elsewhere True prints a line whenever a trial ends). A `failed`
        experiment raises ExperimentFailed with its error unless
        `raise_on_failure` is False; `timeout` (seconds) raises TimeoutError.
        """
        tty = sys.stderr.isatty()
        notebook = _notebook_display()
        if progress is None:
            progress = tty or notebook is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        last_line = None
        handle = None
        while True:
            exp = self.refresh()
            if progress:
                line = _progress_line(exp)
                if notebook is not None:
                    # One output line in the cell, updated in place.
                    html = notebook[1](f"<pre>{_esc(line)}</pre>")
                    if handle is None:
                        handle = notebook[0](html, display_id=True)
                    elif line != last_line:
                        handle.update(html)
                elif tty:
                    sys.stderr.write("\r\x1b[K" + line)
                    sys.stderr.flush()
                elif line != last_line:
                    print(line, file=sys.stderr, flush=True)
                last_line = line
            if exp["state"] in ENDED:
                if progress and tty:
                    sys.stderr.write("\n")
                if exp["state"] == "failed" and raise_on_failure:
                    raise ExperimentFailed(exp)
                return exp
            if deadline is not None and time.monotonic() >= deadline:
                if progress and tty:
                    sys.stderr.write("\n")
                raise TimeoutError(f"experiment {self.id} still {exp['state']} "
                                   f"after {timeout} s")
            time.sleep(poll_s)

    def cancel(self) -> dict:
        self.data = self.client.cancel_experiment(self._need_id())
        return self.data

    def pause(self, running: str = "finish") -> dict:
        """Leases nothing more; running="pause" pauses running trials too."""
        self.data = self.client.pause_experiment(self._need_id(), running)
        return self.data

    def resume(self) -> dict:
        self.data = self.client.resume_experiment(self._need_id())
        return self.data

    def extend(self, num_samples: int) -> dict:
        """Raises num_samples; a completed experiment runs again."""
        self.data = self.client.patch_experiment(self._need_id(), num_samples=num_samples)
        return self.data

    def retry_failed(self) -> dict:
        reply = self.client.retry_failed(self._need_id())
        self.data = reply["experiment"]
        return reply

    def delete(self) -> dict:
        return self.client.delete_experiment(self._need_id())

    # -- results -----------------------------------------------------------

    def trials(self, state: Optional[str] = None, tag: Optional[str] = None) -> list[dict]:
        """The trial objects, in number order (docs/api.md, "The trial
        object"); only those tagged `tag` when given."""
        return self.client.list_trials(self._need_id(), state=state, tag=tag)

    def best(self, scope: Optional[str] = None) -> Optional[Result]:
        """The best trial, or None before any trial reported the metric.

        `scope="all"`: by the best value a trial reported at any step;
        `"last"`: by each trial's last reported value (Ray Tune's scopes).
        The default is the experiment's `best_scope`.
        """
        exp = self.data or self.refresh()
        if "metrics" in exp:
            raise RungError(f"experiment {exp['id']} has several objectives "
                            f"({', '.join(m['name'] for m in exp['metrics'])}) and no single "
                            f"best: use pareto()")
        scope = scope or exp.get("best_scope") or "all"
        if scope not in ("all", "last"):
            raise ValueError(f"scope must be 'all' or 'last', not {scope!r}")
        sign = 1.0 if exp["mode"] == "min" else -1.0
        best: Optional[Result] = None
        for t in self.trials():
            if scope == "all":
                value = _finite((t.get("best") or {}).get("value"))
                step = (t.get("best") or {}).get("step")
            else:
                value = _finite((t.get("last") or {}).get(exp["metric"]))
                step = t.get("step")
            if value is None or t.get("feasible") is False:
                continue  # an infeasible trial is never best
            if best is None or sign * value < sign * best.value:
                best = Result(t["id"], t["config"], value, step, t, self.client)
        return best

    def best_checkpoint(self, dest: str) -> str:
        """The best trial's kept folder (keep_artifacts, by default the best
        one's) unpacked into `dest`; returns `dest`."""
        best = self.best()
        if best is None:
            raise RungError(f"experiment {self._need_id()}: no trial has reported "
                            f"{self.metric} yet")
        return best.download(dest)

    def pareto(self) -> list[dict]:
        """The experiment's Pareto front (several objectives): the
        non-dominated feasible trials as the API lists them, by the first
        objective, best first: [{"trial_id", "values": {name: value},
        "config"}]. Raises RungError for a single objective: use best()."""
        exp = self.refresh() if self.id is not None else (self.data or self.refresh())
        if "pareto" not in exp:
            raise RungError(f"experiment {exp['id']} has one objective ({exp['metric']}): "
                            f"use best()")
        return [dict(p) for p in exp["pareto"]]

    def rows(self) -> list[dict]:
        """One dict a trial: the columns of `trials.csv` (id, number, state,
        each parameter, best_value, last_value, steps), then best_step,
        attempt, stopped_by, error, started_at, ended_at, every other
        metric of the last report as `last.<name>`, and every metric of the
        last report as `metric:<name>`, as trials.csv's last columns."""
        exp = self.data or self.refresh()
        names = [m["name"] for m in exp.get("metrics") or []]
        metric = names[0] if names else exp["metric"]
        out = []
        for t in self.trials():
            row: dict[str, Any] = {"id": t["id"], "number": t["number"], "state": t["state"]}
            row.update(t["config"])
            best = t.get("best") or {}
            last = t.get("last") or {}
            if names:  # several objectives: each one's last value, as trials.csv
                for name in names:
                    row[name] = _metric_value(last.get(name))
            else:
                row["best_value"] = best.get("value")
                row["last_value"] = _metric_value(last.get(metric))
            if "constraints" in exp:
                row["feasible"] = t.get("feasible")
            row["steps"] = t.get("step")
            row["best_step"] = best.get("step")
            for key in ("attempt", "stopped_by", "error", "started_at", "ended_at"):
                row[key] = t.get(key)
            for name, value in last.items():
                if name != metric and name not in names:
                    row["last." + name] = _metric_value(value)
            for name in sorted(last):
                row["metric:" + name] = _metric_value(last[name])
            out.append(row)
        return out

    def dataframe(self):
        """rows() as a pandas DataFrame (pandas must be installed), like
        Optuna's trials_dataframe()."""
        try:
            import pandas
        except ImportError:
            raise ImportError("dataframe() needs pandas (pip install pandas); rows() gives "
                              "the same table as a list of dicts") from None
        return pandas.DataFrame(self.rows())

    def importance(self, metric: Optional[str] = None) -> list[dict]:
        """Which parameters matter: for each objective then constraint (or
        for `metric` alone), fANOVA's share of the metric's variance each
        parameter explains over the completed trials, most important first
        (docs/api.md, "GET /api/v1/experiments/{id}/importance"). A list of
        {"name", "kind", "mode", "trials", "importance": [{"param",
        "importance", "std", "trials"}, ...]} (with "reason" when too few
        trials have a value)."""
        return self.client.importance(self._need_id(), metric=metric)["metrics"]

    def curves(self, metric: Optional[str] = None
               ) -> dict[int, list[tuple[int, int, Optional[float]]]]:
        """Every reported value of the metric (or of `metric`, any metric
        the trials report), by trial id: a list of (attempt, step, value) in
        the order rungd received them (value None for a non-finite one)."""
        out: dict[int, list] = {}
        after, generation = 0, 0
        while True:
            page = self.client.curves(self._need_id(), after=after, generation=generation,
                                      metric=metric)
            for trial_id, attempt, step, value in page["items"]:
                out.setdefault(trial_id, []).append((attempt, step, value))
            if not page["items"] or page["next"] == after:
                return out
            after, generation = page["next"], page["generation"]


def _esc(value: Any) -> str:
    import html

    return html.escape("" if value is None else str(value))


def _html_table(columns: list, rows: list) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_esc(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _notebook_display():
    """(display, HTML) of IPython when this runs in a Jupyter kernel, for a
    progress line that updates in place; None elsewhere (a terminal, a
    script), and when IPython is not importable."""
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return None
    try:
        shell = ipython.get_ipython()
        from IPython.display import HTML, display
    except Exception:
        return None
    if shell is None or not hasattr(shell, "kernel"):
        return None
    return display, HTML


def _metric_value(value: Any) -> Any:
    """A metric as a number: the API's "NaN"/"Infinity"/"-Infinity" strings
    become floats."""
    if isinstance(value, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(value, value)
    return value


def _progress_line(exp: dict) -> str:
    counts = exp.get("counts") or {}
    done = sum(counts.get(s, 0) for s in TERMINAL_TRIALS)
    total = max(exp.get("total_trials") or 0, 1)
    width = 24
    filled = min(width, done * width // total)
    bar = "#" * filled + "-" * (width - filled)
    text = (f"experiment {exp['id']} {exp['state']} [{bar}] {done}/{exp.get('total_trials')}"
            f" running {counts.get('running', 0)}")
    best = exp.get("best")
    if "pareto" in exp:
        text += f"  pareto {len(exp['pareto'])} trials"
    elif best:
        text += f"  best {exp['metric']}={best['value']:.6g} (trial {best['trial_id']})"
    if exp.get("error"):
        text += f"  error: {exp['error'].splitlines()[0][:120]}"
    return text
