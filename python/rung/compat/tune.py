"""`from rung.compat import tune`: Ray Tune's public API (Ray 2.x) on Rung.

A Ray Tune script runs by changing its import:

```python
from rung.compat import tune
from rung.compat.train import RunConfig

def train_fn(config):
    for i in range(10):
        tune.report({"loss": (config["lr"] - 0.01) ** 2 / (i + 1)})

tuner = tune.Tuner(train_fn, param_space={"lr": tune.loguniform(1e-4, 1e-1)},
                   tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=8,
                                               scheduler=tune.ASHAScheduler(max_t=10)),
                   run_config=RunConfig(name="lr", storage_path="results"))
print(tuner.fit().get_best_result().config)
```

`Tuner.fit()` submits one rung.Experiment (rungd from $RUNG_SERVER, as
rung.Client) whose trials run the function on rung-workers through
`python3 -m rung.compat.run`, then waits for it. The experiment's folder
(storage_path/name) holds `rung-experiment.json` with rungd's address and
the experiment's id: the experiment goes on in rungd if the driver dies,
and `Tuner.restore(path, trainable)` attaches to it again. How each of
Ray's names maps, and what is refused, is the table in python/README.md
("Coming from Ray Tune").
"""

from __future__ import annotations

import datetime
import inspect
import json
import os
import pickle
import sys
from typing import Any, Callable, Mapping, Optional

from .. import search as _search
from ..client import Client
from ..experiment import PICKLED_FUNCTION, Experiment, _by_value, _pickle_function, _python_env
from . import _session
from ._mapping import (PB2, ASHAScheduler, AsyncHyperBandScheduler, BasicVariantGenerator,
                       BayesOptSearch, CheckpointConfig, ConcurrencyLimiter, FailureConfig,
                       FIFOScheduler, HyperBandScheduler, HyperOptSearch, MedianStoppingRule,
                       OptunaSearch, PopulationBasedTraining, RunConfig, Searcher, TuneConfig,
                       metric_mode, resources, scheduler_spec, searcher_spec, stop_criteria)
from ._results import ExperimentAnalysis, Result, ResultGrid, TuneError
from ._session import Checkpoint, get_checkpoint, get_context
from ._space import _SampleFrom, to_search_space, tree_of

__all__ = [
    "Tuner", "TuneConfig", "RunConfig", "FailureConfig", "CheckpointConfig", "ResultGrid",
    "Result", "ExperimentAnalysis", "TuneError", "Checkpoint", "report", "get_checkpoint",
    "get_context", "with_parameters", "with_resources", "run", "Trainable",
    "uniform", "quniform", "loguniform", "qloguniform", "randint", "qrandint", "lograndint",
    "qlograndint", "randn", "qrandn", "choice", "grid_search", "sample_from",
    "FIFOScheduler", "ASHAScheduler", "AsyncHyperBandScheduler", "HyperBandScheduler",
    "MedianStoppingRule", "PopulationBasedTraining", "PB2", "BasicVariantGenerator",
    "BayesOptSearch", "OptunaSearch", "HyperOptSearch", "ConcurrencyLimiter", "Searcher",
    "STATE_FILE",
]

STATE_FILE = "rung-experiment.json"  # in storage_path/name: rungd's address, the id
PARAMS_FILE = "with_parameters.pkl"
DEFAULT_STORAGE = os.path.join("~", "rung_results")

# ---------------------------------------------------------------------------
# Search space: the API's domains (docs/api.md, "search_space").

uniform = _search.uniform
quniform = _search.quniform
loguniform = _search.loguniform
qloguniform = _search.qloguniform
randint = _search.randint
qrandint = _search.qrandint
lograndint = _search.lograndint
choice = _search.choice


def qlograndint(lower: int, upper: int, q: int) -> dict:
    """A log-uniform integer rounded to a multiple of q, within [lower, upper]."""
    return {"type": "qlograndint", "low": lower, "high": upper, "q": q}


def randn(mean: float = 0.0, sd: float = 1.0) -> dict:
    return {"type": "normal", "mean": mean, "sd": sd}


def qrandn(mean: float, sd: float, q: float) -> dict:
    return {"type": "qnormal", "mean": mean, "sd": sd, "q": q}


def grid_search(values: Any) -> dict:
    """Ray's {"grid_search": [...]}; the Tuner sends it as a `grid`."""
    return {"grid_search": list(values)}


def sample_from(func: Callable) -> _SampleFrom:
    """Refused when the Tuner sends the space: rungd draws every config."""
    return _SampleFrom(func)


# ---------------------------------------------------------------------------
# Inside a trial.

report = _session.report


class Trainable:
    """Ray's class API. Not supported: a class trainable is refused by the
    Tuner, naming it; write the loop as a function with tune.report."""

    def __init__(self, *args: Any, **kwargs: Any):
        raise TypeError(f"{type(self).__name__}: tune.Trainable classes are not supported "
                        "by rung.compat; write the training loop as a function "
                        "train(config) that calls tune.report")


# ---------------------------------------------------------------------------
# Trainable wrappers.


class _Wrapped:
    def __init__(self, inner: Any, params: Optional[dict] = None,
                 res: Optional[dict] = None):
        self.inner = inner
        self.params = params
        self.resources = res

    def __call__(self, config: dict) -> Any:  # a local call, as Ray's wrapper
        fn, params, _ = _unwrap(self)
        return fn(config, **(params or {}))


def _unwrap(trainable: Any) -> tuple[Any, Optional[dict], Optional[dict]]:
    params: Optional[dict] = None
    res: Optional[dict] = None
    while isinstance(trainable, _Wrapped):
        if trainable.params is not None:
            params = {**trainable.params, **(params or {})}
        if trainable.resources is not None and res is None:
            res = trainable.resources
        trainable = trainable.inner
    return trainable, params, res


def with_parameters(trainable: Any, **kwargs: Any) -> _Wrapped:
    """The objects reach the trials pickled into the experiment's folder
    (storage_path/name/with_parameters.pkl), which the workers read: they
    must see that folder (workers on this machine, or a shared file
    system), as Ray's multi-node runs need shared storage."""
    return _Wrapped(trainable, params=kwargs)


def with_resources(trainable: Any, resources_spec: Any) -> _Wrapped:
    """{"cpu": n, "gpu": g} becomes the experiment's resources_per_trial."""
    if callable(resources_spec) and not isinstance(resources_spec, Mapping):
        raise ValueError("with_resources(trainable, function): resources must be a dict "
                         "{'cpu': n, 'gpu': g}")
    return _Wrapped(trainable, res=resources(resources_spec, "with_resources"))


def _function_argv(fn: Any, shipped: bool = False) -> list[str]:
    """The runner's argv for fn: by file and name, or (`shipped`) the
    pickle of (fn, with_parameters) in the trial's working directory."""
    if isinstance(fn, str):
        raise ValueError(f"trainable {fn!r}: Ray's registered trainable names are not "
                         "supported; pass the function itself")
    if isinstance(fn, type):
        raise ValueError(f"trainable {fn.__name__}: class trainables (tune.Trainable) are "
                         "not supported by rung.compat; write a function train(config) "
                         "that calls tune.report")
    if not callable(fn):
        raise ValueError(f"trainable: a function, not {type(fn).__name__}")
    if shipped:
        return [sys.executable, "-m", "rung.compat.run", "--pickled", PICKLED_FUNCTION]
    # Not shipped: rung.experiment's _by_value found fn importable from its
    # file, or _pickle_function (no cloudpickle here) checked that it is.
    return [sys.executable, "-m", "rung.compat.run", os.path.abspath(inspect.getsourcefile(fn)),
            fn.__name__]


def _name_of(fn: Any) -> str:
    return getattr(fn, "__name__", "trainable")


# ---------------------------------------------------------------------------
# Tuner.


class Tuner:
    """Ray's Tuner: `fit()` runs the search on rungd and returns a
    ResultGrid. `rung_client=` (a rung.Client) and `rung_spec=` (extra
    fields of the experiment spec, e.g. {"keep_artifacts": "all"}) are
    Rung's own additions."""

    def __init__(self, trainable: Any = None, *, param_space: Optional[dict] = None,
                 tune_config: Optional[TuneConfig] = None,
                 run_config: Optional[RunConfig] = None, rung_client: Optional[Client] = None,
                 rung_spec: Optional[dict] = None, _tuner_kwargs: Any = None):
        if _tuner_kwargs:
            raise ValueError("Tuner(_tuner_kwargs=...): Ray's internal arguments are not "
                             "supported")
        self._trainable = trainable
        self._param_space = dict(param_space or {})
        self._tune_config = tune_config or TuneConfig()
        self._run_config = run_config or RunConfig()
        self._client = rung_client
        self._rung_spec = dict(rung_spec or {})
        self._exp: Optional[Experiment] = None
        self._path: Optional[str] = None
        self._metric_mode: tuple[Optional[str], Optional[str]] = (None, None)

    # -- the spec ----------------------------------------------------------

    def _experiment_path(self, fn: Any) -> tuple[str, str]:
        rc = self._run_config
        name = rc.name or f"{_name_of(fn)}_{datetime.datetime.now():%Y-%m-%d_%H-%M-%S}"
        root = os.path.expanduser(rc.storage_path or DEFAULT_STORAGE)
        return name, os.path.abspath(os.path.join(root, name))

    def _build(self) -> Experiment:
        tc, rc = self._tune_config, self._run_config
        fn, params, res = _unwrap(self._trainable)
        # A notebook's function, and tune.with_parameters' objects, travel
        # by value in the upload (rung.experiment), where cloudpickle is here.
        payload = None
        if callable(fn) and not isinstance(fn, (str, type)) and (params or _by_value(fn)):
            payload = _pickle_function(fn, (fn, params or {}))
        argv = _function_argv(fn, shipped=payload is not None)
        name, path = self._experiment_path(fn)
        space = to_search_space(self._param_space)
        scheduler = scheduler_spec(tc.scheduler, space)
        searcher, extra = searcher_spec(tc.search_alg)
        metric, mode = metric_mode((tc.metric, tc.mode),
                                   *[obj._metric_mode() for obj in (tc.scheduler, tc.search_alg)
                                     if hasattr(obj, "_metric_mode")])
        if metric is None:
            raise ValueError("metric: Rung needs the metric to optimize: "
                             "TuneConfig(metric=..., mode='min' or 'max')")
        self._metric_mode = (metric, mode)
        options: dict[str, Any] = {"tree": tree_of(space), "name": name}
        stop = stop_criteria(rc.stop)
        if stop:
            options["stop"] = stop
        os.makedirs(path, exist_ok=True)
        if params and payload is None:
            options["params"] = os.path.join(path, PARAMS_FILE)
            with open(options["params"], "wb") as f:
                pickle.dump(params, f)
        env = _python_env()
        env["RUNG_COMPAT"] = json.dumps(options, separators=(",", ":"))
        if len(env["RUNG_COMPAT"]) > 4096:
            raise ValueError("param_space: its nesting and the stop criteria take more than "
                             "the 4,096 bytes an environment value may hold (docs/api.md, "
                             "trainable); flatten some of it")
        fields: dict[str, Any] = dict(extra)
        if tc.max_concurrent_trials:
            limit = fields.get("max_concurrent_trials")
            fields["max_concurrent_trials"] = min(limit, tc.max_concurrent_trials) if limit \
                else tc.max_concurrent_trials
        if tc.time_budget_s:
            fields["stop"] = {"time_budget_s": tc.time_budget_s}
        fc = rc.failure_config or FailureConfig()
        fields["max_failures"] = 100 if fc.max_failures < 0 else fc.max_failures
        # Ray runs every trial whatever others do, unless fail_fast.
        fields["max_failed_trials"] = 1 if fc.fail_fast else 0
        if res:
            fields["resources_per_trial"] = res
        fields.update(self._rung_spec)
        exp = Experiment(name=name, trainable={"type": "command", "argv": argv, "env": env},
                         metric=metric, mode=mode, searcher=searcher, scheduler=scheduler,
                         num_samples=tc.num_samples, client=self._client or Client(),
                         search_space=space,
                         _upload_files={PICKLED_FUNCTION: payload} if payload else None,
                         **fields)
        self._path = path
        return exp

    def _write_state(self) -> None:
        assert self._exp is not None and self._path is not None
        state = {"server": self._exp.client.server, "experiment_id": self._exp.id,
                 "name": self._exp.name, "metric": self._metric_mode[0],
                 "mode": self._metric_mode[1]}
        tmp = os.path.join(self._path, STATE_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, os.path.join(self._path, STATE_FILE))

    # -- running -----------------------------------------------------------

    def fit(self) -> ResultGrid:
        """Submits the experiment (unless restored) and waits for its end."""
        _session.driver_call("Tuner.fit")
        if self._exp is None:
            self._exp = self._build().submit()
            self._write_state()
        verbose = self._run_config.verbose
        self._exp.wait(progress=None if verbose is None else bool(verbose), poll_s=0.25,
                       raise_on_failure=False)
        final = self._exp.data or {}
        if final.get("state") == "failed":
            print(f"rung.compat: experiment {self._exp.id} failed: {final.get('error')}",
                  file=sys.stderr, flush=True)
        metric, mode = self._metric_mode
        return ResultGrid(self._exp, self._path, metric, mode)

    def get_results(self) -> ResultGrid:
        if self._exp is None:
            raise RuntimeError("get_results(): fit() has not run, and nothing was restored")
        return ResultGrid(self._exp, self._path, *self._metric_mode)

    @classmethod
    def can_restore(cls, path: str) -> bool:
        try:
            _read_state(path)
            return True
        except (OSError, ValueError, KeyError):
            return False

    @classmethod
    def restore(cls, path: str, trainable: Any = None, resume_unfinished: bool = True,
                resume_errored: bool = False, restart_errored: bool = False,
                param_space: Optional[dict] = None, storage_filesystem: Any = None,
                rung_client: Optional[Client] = None, **kwargs: Any) -> "Tuner":
        """Attaches to the experiment of `path` (storage_path/name), which
        rungd kept running while no driver was there: fit() waits for it.
        `resume_errored`/`restart_errored` retry its failed trials."""
        if kwargs:
            raise TypeError(f"Tuner.restore() got an unexpected keyword argument "
                            f"{next(iter(kwargs))!r}")
        if storage_filesystem is not None:
            raise ValueError("Tuner.restore(storage_filesystem=...): the path is local")
        if not resume_unfinished:
            raise ValueError("Tuner.restore(resume_unfinished=False): rungd runs the "
                             "experiment's trials whether or not a driver waits")
        state = _read_state(path)
        client = rung_client or Client(state["server"])
        tuner = cls(trainable, param_space=param_space, rung_client=client)
        tuner._exp = Experiment.attach(int(state["experiment_id"]), client)
        tuner._path = os.path.abspath(os.path.expanduser(path))
        tuner._metric_mode = (state.get("metric"), state.get("mode"))
        if (resume_errored or restart_errored) and tuner._exp.data["counts"].get("failed"):
            tuner._exp.retry_failed()
        return tuner


def _read_state(path: str) -> dict:
    with open(os.path.join(os.path.expanduser(path), STATE_FILE)) as f:
        state = json.load(f)
    if not isinstance(state, dict) or "experiment_id" not in state or "server" not in state:
        raise ValueError(f"{path}: {STATE_FILE} names no experiment")
    return state


# ---------------------------------------------------------------------------
# tune.run, for scripts written before Tuner.

_RUN_IGNORED = ("verbose", "progress_reporter", "reuse_actors", "log_to_file", "sync_config",
                "keep_checkpoints_num", "checkpoint_score_attr", "checkpoint_freq",
                "checkpoint_at_end", "trial_name_creator", "trial_dirname_creator",
                "chdir_to_trial_dir")


def run(run_or_experiment: Any, name: Optional[str] = None, metric: Optional[str] = None,
        mode: Optional[str] = None, stop: Any = None, time_budget_s: Optional[float] = None,
        config: Optional[dict] = None, resources_per_trial: Any = None, num_samples: int = 1,
        storage_path: Optional[str] = None, local_dir: Optional[str] = None,
        search_alg: Any = None, scheduler: Any = None, max_failures: int = 0,
        fail_fast: bool = False, max_concurrent_trials: Optional[int] = None,
        raise_on_failed_trial: bool = True, resume: Any = None,
        callbacks: Optional[list] = None, **kwargs: Any) -> ExperimentAnalysis:
    """Ray's older entry point: the same search as a Tuner, returning an
    ExperimentAnalysis. `resume=True` (or "AUTO") attaches to the
    experiment of storage_path/name when its folder names one."""
    _session.driver_call("tune.run")
    for key in kwargs:
        if key not in _RUN_IGNORED:
            raise TypeError(f"tune.run() got an unexpected keyword argument {key!r}: "
                            "rung.compat does not support it")
    trainable = run_or_experiment
    if resources_per_trial is not None:
        trainable = with_resources(trainable, resources_per_trial)
    run_config = RunConfig(name=name, storage_path=storage_path or local_dir, stop=stop,
                           callbacks=callbacks,
                           failure_config=FailureConfig(max_failures=max_failures,
                                                        fail_fast=bool(fail_fast)))
    tune_config = TuneConfig(metric=metric, mode=mode, search_alg=search_alg,
                             scheduler=scheduler, num_samples=num_samples,
                             max_concurrent_trials=max_concurrent_trials,
                             time_budget_s=time_budget_s)
    tuner = None
    if resume and name:
        path = os.path.join(os.path.expanduser(storage_path or local_dir or DEFAULT_STORAGE),
                            name)
        if Tuner.can_restore(path):
            tuner = Tuner.restore(path, trainable, resume_errored=resume == "ERRORED_ONLY")
    if tuner is None:
        tuner = Tuner(trainable, param_space=config or {}, tune_config=tune_config,
                      run_config=run_config)
    grid = tuner.fit()
    if raise_on_failed_trial and grid.errors:
        raise TuneError(f"{grid.num_errors} trials failed: {grid.errors[0]}")
    return ExperimentAnalysis(grid, *tuner._metric_mode)
