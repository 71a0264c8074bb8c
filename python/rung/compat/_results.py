"""Ray Tune's results (ResultGrid, Result, ExperimentAnalysis) read from a
Rung experiment (rung.Experiment's trials, curves and artifacts)."""

from __future__ import annotations

import math
import os
import time
from typing import Any, Iterator, Optional

from ..client import RungError
from ..experiment import Experiment
from ._session import CHECKPOINT_PREFIX, Checkpoint
from ._space import nest, tree_of

_SCOPES = ("last", "all", "avg", "last-5-avg", "last-10-avg")


class TuneError(RungError):
    """A trial's failure, as Ray's ResultGrid.errors hold them."""


def _finite(value: Any) -> Optional[float]:
    if isinstance(value, str):
        value = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


class Result:
    """One trial, as Ray's Result: `config` (nested, as the trainable got
    it), `metrics` (its last report, with training_iteration, trial_id and
    config), `checkpoint` (its latest, when rungd kept its folder), `path`,
    `error`."""

    def __init__(self, grid: "ResultGrid", trial: dict):
        self._grid = grid
        self._trial = trial
        self.config = nest(trial["config"], grid._tree)
        self.path = os.path.join(grid._path, f"trial_{trial['id']}") if grid._path else None
        metrics = {k: _metric(v) for k, v in (trial.get("last") or {}).items()}
        metrics["training_iteration"] = trial.get("step") or 0
        metrics["trial_id"] = str(trial["id"])
        metrics["config"] = self.config
        metrics["done"] = trial["state"] in ("completed", "stopped")
        self.metrics = metrics
        self.error = (TuneError(f"trial {trial['id']} failed: {trial.get('error')}")
                      if trial["state"] == "failed" else None)
        self._checkpoint: Any = ()  # () until looked up

    @property
    def trial_id(self) -> str:
        return str(self._trial["id"])

    @property
    def checkpoint(self) -> Optional[Checkpoint]:
        """The trial's latest checkpoint, downloaded on first use: rungd
        brings a completed trial's folder back when keep_artifacts names it
        (by default the best trial's; docs/api.md, "Artifacts")."""
        if self._checkpoint == ():
            self._checkpoint = self._fetch_checkpoint()
        return self._checkpoint

    def _fetch_checkpoint(self) -> Optional[Checkpoint]:
        if self._trial["state"] != "completed":
            return None
        client = self._grid._exp.client
        deadline = time.monotonic() + 10.0  # the worker uploads right after its finish
        while not client.get_trial(self._trial["id"]).get("artifacts"):
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)
        from .._pack import download_artifacts

        dest = self.path or os.path.abspath(f"rung-trial-{self._trial['id']}")
        download_artifacts(client, self._trial["id"], dest)
        root = os.path.join(dest, "checkpoints")
        steps = [int(n[len(CHECKPOINT_PREFIX):]) for n in
                 (os.listdir(root) if os.path.isdir(root) else ())
                 if n.startswith(CHECKPOINT_PREFIX) and n[len(CHECKPOINT_PREFIX):].isdigit()]
        if not steps:
            return None
        return Checkpoint(os.path.join(root, f"{CHECKPOINT_PREFIX}{max(steps)}"))

    @property
    def best_checkpoints(self) -> list:
        ckpt = self.checkpoint
        return [(ckpt, self.metrics)] if ckpt else []

    @property
    def metrics_dataframe(self):
        import pandas

        rows = []
        for m in self._grid._exp.client.trial_metrics(self._trial["id"]):
            row = {k: _metric(v) for k, v in m["metrics"].items()}
            row["training_iteration"] = m["step"]
            rows.append(row)
        return pandas.DataFrame(rows)

    def _values(self, metric: str) -> list[float]:
        """The metric's values in the trial's current attempt, in order."""
        series = self._grid._curves(metric).get(self._trial["id"], [])
        attempt = self._trial.get("attempt")
        return [v for a, _, v in series if a == attempt and v is not None]

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.metrics.items() if k != "config"}
        return (f"Result(metrics={shown!r}, path={self.path!r}, "
                f"error={'yes' if self.error else None})")


def _metric(value: Any) -> Any:
    f = _finite(value) if isinstance(value, str) else None
    return f if f is not None else value


class ResultGrid:
    """Every trial of the experiment, in trial order, as Ray's ResultGrid."""

    def __init__(self, exp: Experiment, path: Optional[str], metric: Optional[str] = None,
                 mode: Optional[str] = None):
        self._exp = exp
        self._path = path
        data = exp.refresh()
        self.experiment = data
        self._tree = tree_of(data.get("search_space") or {})
        self._metric = metric or data.get("metric")
        self._mode = mode or data.get("mode")
        self._curve_cache: dict[str, dict] = {}
        self._results = [Result(self, t) for t in exp.trials()]

    @property
    def experiment_path(self) -> Optional[str]:
        return self._path

    def _curves(self, metric: str) -> dict:
        if metric not in self._curve_cache:
            self._curve_cache[metric] = self._exp.curves(metric=metric)
        return self._curve_cache[metric]

    def __len__(self) -> int:
        return len(self._results)

    def __getitem__(self, i: int) -> Result:
        return self._results[i]

    def __iter__(self) -> Iterator[Result]:
        return iter(self._results)

    @property
    def errors(self) -> list:
        return [r.error for r in self._results if r.error is not None]

    @property
    def num_errors(self) -> int:
        return len(self.errors)

    @property
    def num_terminated(self) -> int:
        return sum(1 for r in self._results if r._trial["state"] in ("completed", "stopped"))

    def _score(self, result: Result, metric: str, scope: str, mode: str) -> Optional[float]:
        if scope == "last":
            return _finite(result._trial.get("last", {}).get(metric)
                           if result._trial.get("last") else None)
        values = result._values(metric)
        if scope == "all":
            values = [v for v in values if math.isfinite(v)]
            if not values:
                return None
            return min(values) if mode == "min" else max(values)
        if scope.startswith("last-"):
            values = values[-int(scope.split("-")[1]):]
        return sum(values) / len(values) if values else None

    def get_best_result(self, metric: Optional[str] = None, mode: Optional[str] = None,
                        scope: str = "last", filter_nan_and_inf: bool = True) -> Result:
        metric = metric or self._metric
        mode = mode or self._mode
        if not metric or mode not in ("min", "max"):
            raise ValueError("get_best_result: give metric and mode ('min' or 'max'), here "
                             "or in TuneConfig")
        if scope not in _SCOPES:
            raise ValueError(f"scope must be one of {', '.join(_SCOPES)}, not {scope!r}")
        best, best_value = None, None
        for r in self._results:
            value = self._score(r, metric, scope, mode)
            if value is None or (filter_nan_and_inf and not math.isfinite(value)):
                continue
            if best is None or (value < best_value if mode == "min" else value > best_value):
                best, best_value = r, value
        if best is None:
            raise RuntimeError(f"no trial reported a finite {metric!r}")
        return best

    def get_dataframe(self, filter_metric: Optional[str] = None,
                      filter_mode: Optional[str] = None):
        """One row per trial: its last result (or, with filter_metric, the
        report where that metric was best), `config/...` columns as Ray
        writes them, training_iteration, trial_id and logdir."""
        try:
            import pandas
        except ImportError:
            raise ImportError("get_dataframe() needs pandas (pip install pandas)") from None
        return pandas.DataFrame(self._rows(filter_metric, filter_mode))

    def _rows(self, filter_metric: Optional[str], filter_mode: Optional[str]) -> list[dict]:
        rows = []
        for r in self._results:
            row = {k: v for k, v in r.metrics.items() if k != "config"}
            if filter_metric:
                best = None
                for m in self._exp.client.trial_metrics(r._trial["id"]):
                    v = _finite(m["metrics"].get(filter_metric))
                    if v is None:
                        continue
                    if best is None or (v < best[0] if filter_mode == "min" else v > best[0]):
                        best = (v, m)
                if best is not None:
                    row.update({k: _metric(v) for k, v in best[1]["metrics"].items()})
                    row["training_iteration"] = best[1]["step"]
            for k, v in _flatten_config(r.config).items():
                row["config/" + k] = v
            row["logdir"] = r.path
            rows.append(row)
        return rows

    def __repr__(self) -> str:
        return f"ResultGrid<{len(self)} trials, experiment {self._exp.id}>"


def _flatten_config(config: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in config.items():
        if isinstance(v, dict):
            out.update(_flatten_config(v, f"{prefix}{k}/"))
        else:
            out[prefix + k] = v
    return out


class Trial:
    """A trial as tune.run's ExperimentAnalysis lists them."""

    def __init__(self, result: Result):
        self._result = result
        self.trial_id = result.trial_id
        self.config = result.config
        self.last_result = result.metrics
        self.error = result.error
        state = result._trial["state"]
        self.status = {"completed": "TERMINATED", "stopped": "TERMINATED",
                       "failed": "ERROR", "running": "RUNNING"}.get(state, state.upper())
        self.path = result.path

    @property
    def checkpoint(self) -> Optional[Checkpoint]:
        return self._result.checkpoint

    def __repr__(self) -> str:
        return f"Trial({self.trial_id}, {self.status})"


class ExperimentAnalysis:
    """What tune.run returns: best_config, best_result, best_trial,
    results_df, dataframe(), get_best_trial(), get_best_config()."""

    def __init__(self, grid: ResultGrid, metric: Optional[str], mode: Optional[str]):
        self._grid = grid
        self.default_metric = metric
        self.default_mode = mode
        self.trials = [Trial(r) for r in grid]
        self.experiment_path = grid.experiment_path

    def get_best_trial(self, metric: Optional[str] = None, mode: Optional[str] = None,
                       scope: str = "last", filter_nan_and_inf: bool = True) -> Optional[Trial]:
        try:
            best = self._grid.get_best_result(metric or self.default_metric,
                                              mode or self.default_mode, scope,
                                              filter_nan_and_inf)
        except RuntimeError:
            return None
        return next(t for t in self.trials if t.trial_id == best.trial_id)

    def get_best_config(self, metric: Optional[str] = None, mode: Optional[str] = None,
                        scope: str = "last") -> Optional[dict]:
        trial = self.get_best_trial(metric, mode, scope)
        return trial.config if trial else None

    def get_best_checkpoint(self, trial: Trial, metric: Optional[str] = None,
                            mode: Optional[str] = None) -> Optional[Checkpoint]:
        return trial.checkpoint

    @property
    def best_trial(self) -> Optional[Trial]:
        return self.get_best_trial()

    @property
    def best_config(self) -> Optional[dict]:
        trial = self.best_trial
        return trial.config if trial else None

    @property
    def best_result(self) -> Optional[dict]:
        trial = self.best_trial
        return trial.last_result if trial else None

    @property
    def best_checkpoint(self) -> Optional[Checkpoint]:
        trial = self.best_trial
        return trial.checkpoint if trial else None

    @property
    def best_logdir(self) -> Optional[str]:
        trial = self.best_trial
        return trial.path if trial else None

    @property
    def results(self) -> dict:
        return {t.trial_id: t.last_result for t in self.trials}

    @property
    def results_df(self):
        import pandas

        return pandas.DataFrame(self._grid._rows(None, None)).set_index("trial_id")

    def dataframe(self, metric: Optional[str] = None, mode: Optional[str] = None):
        import pandas

        return pandas.DataFrame(self._grid._rows(metric, mode))
