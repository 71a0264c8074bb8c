"""Ray Tune's configuration objects, schedulers and search algorithms, each
as the part of Rung's experiment spec it stands for (docs/api.md, "The
experiment spec"; docs/schedulers.md; docs/searchers.md).

Argument names and defaults are Ray 2.x's (https://docs.ray.io/en/latest/tune/api/).
What has no Rung counterpart is refused with a ValueError naming it; the
few knobs that only tune Ray's own machinery are ignored, as the table in
python/README.md ("Coming from Ray Tune") lists.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, Optional

from ._space import flatten, to_search_space

# Rung's scheduler time_attr for Ray's: Ray counts `training_iteration`,
# Rung the report's `step`, which rung.compat makes the same number.
_STEP_ATTRS = ("training_iteration", "step")


def _warn(text: str) -> None:
    print(f"rung.compat: {text}", file=sys.stderr, flush=True)


def time_attr(value: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}(time_attr={value!r}): must be a metric name")
    return "step" if value in _STEP_ATTRS else value


def _refuse_set(where: str, given: Mapping[str, Any], defaults: Mapping[str, Any],
                why: Mapping[str, str]) -> None:
    """A ValueError for the first argument of `why` given other than its
    Ray default."""
    for name, reason in why.items():
        if name in given and given[name] != defaults.get(name):
            raise ValueError(f"{where}({name}=...): {reason}")


class _Kw:
    """Keyword-only settings with Ray's names and defaults; an unknown
    keyword is a TypeError naming it, as a dataclass would say."""

    _defaults: dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any):
        names = list(self._defaults)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names)} "
                            "positional arguments")
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}() got two values for {name!r}")
            kwargs[name] = value
        for name in kwargs:
            if name not in self._defaults:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword "
                                f"argument {name!r} (Rung knows "
                                f"{', '.join(self._defaults)})")
        self._given = dict(kwargs)
        for name, default in self._defaults.items():
            setattr(self, name, kwargs.get(name, default))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._given.items())
        return f"{type(self).__name__}({inner})"


# ---------------------------------------------------------------------------
# Configs.


class TuneConfig(_Kw):
    _defaults = {"metric": None, "mode": None, "search_alg": None, "scheduler": None,
                 "num_samples": 1, "max_concurrent_trials": None, "time_budget_s": None,
                 "reuse_actors": None, "trial_name_creator": None,
                 "trial_dirname_creator": None, "chdir_to_trial_dir": None}

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for name in ("reuse_actors", "trial_name_creator", "trial_dirname_creator",
                     "chdir_to_trial_dir"):
            if self._given.get(name) is not None:
                _warn(f"TuneConfig({name}=...) is ignored: every Rung trial is its own "
                      "process in its own folder, named by its trial id")


class FailureConfig(_Kw):
    _defaults = {"max_failures": 0, "fail_fast": False}


class CheckpointConfig(_Kw):
    """Accepted: Rung keeps a trial's latest checkpoint (and, under PBT, the
    milestones others may copy), and brings back the folders of the trials
    keep_artifacts names; Ray's per-trial counts and scores do not apply."""
    _defaults = {"num_to_keep": None, "checkpoint_score_attribute": None,
                 "checkpoint_score_order": "max", "checkpoint_frequency": 0,
                 "checkpoint_at_end": None}


class RunConfig(_Kw):
    _defaults = {"name": None, "storage_path": None, "storage_filesystem": None,
                 "failure_config": None, "checkpoint_config": None, "sync_config": None,
                 "verbose": None, "stop": None, "callbacks": None, "progress_reporter": None,
                 "log_to_file": False, "local_dir": None}

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if self.storage_filesystem is not None:
            raise ValueError("RunConfig(storage_filesystem=...): the experiment's folder is a "
                             "local path (storage_path); rungd keeps the results themselves")
        if self.callbacks:
            names = ", ".join(type(c).__name__ for c in self.callbacks)
            raise ValueError(f"RunConfig(callbacks=[{names}]): Ray's callbacks are not "
                             "supported; rungd records every report (rung.Experiment's "
                             "curves(), the dashboard)")
        if self.storage_path is None and self.local_dir is not None:
            self.storage_path = self.local_dir


def stop_criteria(stop: Any) -> dict:
    """Ray's `stop` dict as the per-trial criteria the runner checks: a trial
    ends (completed) once a report has result[key] >= value, as in Ray.
    A function or a Stopper object is refused."""
    if stop is None:
        return {}
    if not isinstance(stop, Mapping):
        raise ValueError(f"RunConfig(stop={type(stop).__name__}): only a dict of "
                         "{metric: value} is supported (a trial stops once a result "
                         "reaches a value); functions and Stopper objects are not")
    out = {}
    for key, value in stop.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"stop[{key!r}]: must be a number, not {value!r}")
        out[str(key)] = float(value)
    return out


def resources(spec: Any, where: str) -> dict:
    """A Ray resources dict as Rung's resources_per_trial: whole CPUs and
    GPUs; anything else refused naming it."""
    if spec is None:
        return {}
    if type(spec).__name__ == "PlacementGroupFactory" or not isinstance(spec, Mapping):
        raise ValueError(f"{where}: only a dict {{'cpu': n, 'gpu': g}} maps to Rung's "
                         f"resources_per_trial, not {type(spec).__name__}")
    out = {}
    for key, value in spec.items():
        if key not in ("cpu", "gpu"):
            raise ValueError(f"{where}[{key!r}]: Rung gives trials whole CPUs and GPUs "
                             "only (resources_per_trial cpu and gpu)")
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or value < 0 or float(value) != int(value):
            raise ValueError(f"{where}[{key!r}]: must be a whole number, not {value!r} "
                             "(Rung does not share a CPU or GPU between trials)")
        out[key] = int(value)
    return out


# ---------------------------------------------------------------------------
# Schedulers.


class _Scheduler(_Kw):
    def _metric_mode(self) -> tuple[Optional[str], Optional[str]]:
        return getattr(self, "metric", None), getattr(self, "mode", None)

    def rung_scheduler(self, space: dict) -> Optional[dict]:
        raise NotImplementedError


class FIFOScheduler(_Scheduler):
    _defaults = {"stop_last_trials": True}

    def rung_scheduler(self, space: dict) -> Optional[dict]:
        return {"type": "fifo"}


class ASHAScheduler(_Scheduler):
    _defaults = {"time_attr": "training_iteration", "metric": None, "mode": None,
                 "max_t": 100, "grace_period": 1, "reduction_factor": 4, "brackets": 1,
                 "stop_last_trials": True}

    def rung_scheduler(self, space: dict) -> Optional[dict]:
        _refuse_set("ASHAScheduler", self._given, self._defaults,
                    {"stop_last_trials": "Rung's asha always lets the last trials run on "
                                         "to max_t"})
        return {"type": "asha", "time_attr": time_attr(self.time_attr, "ASHAScheduler"),
                "max_t": self.max_t, "grace_period": self.grace_period,
                "reduction_factor": self.reduction_factor, "brackets": self.brackets}


AsyncHyperBandScheduler = ASHAScheduler


class HyperBandScheduler(_Scheduler):
    """Rung's `hyperband` is asynchronous: asha with every bracket
    (docs/api.md, "scheduler"); Ray's runs its brackets in lockstep."""
    _defaults = {"time_attr": "training_iteration", "metric": None, "mode": None,
                 "max_t": 81, "reduction_factor": 3, "stop_last_trials": True}

    def rung_scheduler(self, space: dict) -> Optional[dict]:
        _refuse_set("HyperBandScheduler", self._given, self._defaults,
                    {"stop_last_trials": "Rung's hyperband always lets the last trials run "
                                         "on to max_t"})
        return {"type": "hyperband",
                "time_attr": time_attr(self.time_attr, "HyperBandScheduler"),
                "max_t": self.max_t, "grace_period": 1,
                "reduction_factor": self.reduction_factor}


class MedianStoppingRule(_Scheduler):
    _defaults = {"time_attr": "time_total_s", "metric": None, "mode": None,
                 "grace_period": 60.0, "min_samples_required": 3, "min_time_slice": 0,
                 "hard_stop": True}

    def rung_scheduler(self, space: dict) -> Optional[dict]:
        _refuse_set("MedianStoppingRule", self._given, self._defaults,
                    {"hard_stop": "Rung's median rule always stops (hard_stop=True)"})
        return {"type": "median",
                "time_attr": time_attr(self.time_attr, "MedianStoppingRule"),
                "grace_period": self.grace_period,
                "min_samples_required": self.min_samples_required}


def _pbt_common(where: str, sched: _Kw) -> dict:
    attr = time_attr(sched.time_attr, where)
    if attr != "step":
        raise ValueError(f"{where}(time_attr={sched.time_attr!r}): Rung's PBT counts "
                         "iterations: pass time_attr='training_iteration' (and "
                         "perturbation_interval in iterations)")
    if sched.custom_explore_fn is not None:
        raise ValueError(f"{where}(custom_explore_fn=...): Rung explores on rungd, so a "
                         "function cannot be sent")
    interval = sched.perturbation_interval
    if isinstance(interval, float) and interval.is_integer():
        interval = int(interval)
    burn_in = sched.burn_in_period if hasattr(sched, "burn_in_period") else 0
    if isinstance(burn_in, float) and burn_in.is_integer():
        burn_in = int(burn_in)
    out = {"time_attr": "step", "perturbation_interval": interval,
           "quantile_fraction": sched.quantile_fraction, "synch": bool(sched.synch)}
    if burn_in:
        out["burn_in_period"] = burn_in
    return out


def _mutation(value: Any, path: str) -> Any:
    if callable(value) and not isinstance(value, Mapping):
        raise ValueError(f"hyperparam_mutations.{path}: a function cannot be sent to "
                         "rungd; use a domain (tune.uniform, ...) or a list of values")
    if isinstance(value, (list, tuple)):
        return list(value)
    return to_search_space({"x": value})["x"]


class PopulationBasedTraining(_Scheduler):
    _defaults = {"time_attr": "time_total_s", "metric": None, "mode": None,
                 "perturbation_interval": 60.0, "burn_in_period": 0.0,
                 "hyperparam_mutations": None, "quantile_fraction": 0.25,
                 "resample_probability": 0.25, "perturbation_factors": (1.2, 0.8),
                 "custom_explore_fn": None, "log_config": True, "require_attrs": True,
                 "synch": False}

    def rung_scheduler(self, space: dict) -> Optional[dict]:
        if tuple(self.perturbation_factors) != (1.2, 0.8):
            raise ValueError("PopulationBasedTraining(perturbation_factors=...): Rung's "
                             "explore multiplies by 1.2 or 0.8 (Ray's default) only")
        out = {"type": "pbt", **_pbt_common("PopulationBasedTraining", self)}
        mutations = flatten(self.hyperparam_mutations or {})
        if not mutations:
            raise ValueError("PopulationBasedTraining(hyperparam_mutations=...): required, "
                             "at least one parameter")
        out["hyperparam_mutations"] = {k: _mutation(v, k) for k, v in mutations.items()}
        out["resample_probability"] = self.resample_probability
        # Ray samples a mutated parameter that param_space lacks from its
        # mutation; Rung needs it in the space.
        _add_missing(space, out["hyperparam_mutations"])
        return out


class PB2(_Scheduler):
    _defaults = {"time_attr": "time_total_s", "metric": None, "mode": None,
                 "perturbation_interval": 60.0, "hyperparam_bounds": None,
                 "quantile_fraction": 0.25, "log_config": True, "require_attrs": True,
                 "synch": False, "custom_explore_fn": None}

    def rung_scheduler(self, space: dict) -> Optional[dict]:
        out = {"type": "pb2", **_pbt_common("PB2", self)}
        bounds = flatten(self.hyperparam_bounds or {})
        if not bounds:
            raise ValueError("PB2(hyperparam_bounds=...): required, at least one parameter")
        out["hyperparam_bounds"] = {
            k: list(v) if isinstance(v, (list, tuple)) else _mutation(v, k)
            for k, v in bounds.items()}
        _add_missing(space, {k: ({"type": "uniform", "low": v[0], "high": v[1]}
                                 if isinstance(v, list) else v)
                             for k, v in out["hyperparam_bounds"].items()})
        return out


def _add_missing(space: dict, domains: Mapping[str, Any]) -> None:
    for name, domain in domains.items():
        node: Any = space
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or parts[-1] not in node:
            if name in space:
                continue
            space[name] = ({"type": "choice", "values": domain}
                           if isinstance(domain, list) else domain)


# ---------------------------------------------------------------------------
# Search algorithms.


class Searcher(_Kw):
    """The base of the search algorithms below; a subclass of your own has
    no Rung counterpart (rungd proposes the configs) and is refused."""

    def rung_searcher(self) -> tuple[dict, dict]:
        """(searcher, other spec fields)."""
        raise ValueError(f"search_alg={type(self).__name__}: a Searcher of your own cannot "
                         "run on rungd; use BasicVariantGenerator, BayesOptSearch, "
                         "OptunaSearch or HyperOptSearch")

    def _common(self, searcher: dict) -> tuple[dict, dict]:
        if getattr(self, "space", None):
            raise ValueError(f"{type(self).__name__}(space=...): give the search space as "
                             "the Tuner's param_space")
        extra = {}
        if getattr(self, "points_to_evaluate", None):
            extra["points_to_evaluate"] = [flatten(p) for p in self.points_to_evaluate]
        return searcher, extra

    def _metric_mode(self) -> tuple[Optional[str], Optional[str]]:
        return getattr(self, "metric", None), getattr(self, "mode", None)


def _seed(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: the seed must be an integer, not {type(value).__name__}")
    return {"seed": value}


class BasicVariantGenerator(Searcher):
    _defaults = {"points_to_evaluate": None, "max_concurrent": 0,
                 "constant_grid_search": False, "random_state": None}

    def rung_searcher(self) -> tuple[dict, dict]:
        if self.constant_grid_search:
            raise ValueError("BasicVariantGenerator(constant_grid_search=True): Rung draws "
                             "every grid combination's other parameters anew")
        searcher, extra = self._common({"type": "random",
                                        **_seed(self.random_state, "random_state")})
        if self.max_concurrent:
            extra["max_concurrent_trials"] = self.max_concurrent
        return searcher, extra


class BayesOptSearch(Searcher):
    _defaults = {"space": None, "metric": None, "mode": None, "points_to_evaluate": None,
                 "utility_kwargs": None, "random_state": 42, "random_search_steps": 10,
                 "verbose": 0, "patience": 5, "skip_duplicate": True, "analysis": None}

    def rung_searcher(self) -> tuple[dict, dict]:
        if self.analysis is not None:
            raise ValueError("BayesOptSearch(analysis=...): start from an earlier Rung "
                             "experiment with warm_start instead")
        return self._common({"type": "bayes", **_seed(self.random_state, "random_state"),
                             "n_initial": self.random_search_steps})


def _optuna_sampler(sampler: Any, seed: dict) -> dict:
    """An Optuna sampler object as Rung's searcher, by its class: TPESampler
    as tpe (its multivariate, group, constant_liar and n_startup_trials),
    CmaEsSampler as cmaes (its popsize and restart strategy), RandomSampler
    as random; read from the object's attributes, so optuna itself is not
    imported here."""
    kind = type(sampler).__name__
    if kind == "TPESampler":
        out = {"type": "tpe", **seed}
        for attr, field in (("_multivariate", "multivariate"), ("_group", "group"),
                            ("_constant_liar", "constant_liar")):
            value = getattr(sampler, attr, None)
            if isinstance(value, bool):
                out[field] = value
        if out.get("multivariate") is False:
            out["group"] = False
        startup = getattr(sampler, "_n_startup_trials", None)
        if isinstance(startup, int) and not isinstance(startup, bool) and startup >= 1:
            out["n_initial"] = startup
        return out
    if kind == "CmaEsSampler":
        out = {"type": "cmaes", **seed}
        popsize = getattr(sampler, "_popsize", None)
        if isinstance(popsize, int) and not isinstance(popsize, bool) and popsize >= 2:
            out["popsize"] = popsize
        out["restart"] = "ipop" if getattr(sampler, "_restart_strategy", None) == "ipop" \
            else "none"
        return out
    if kind == "RandomSampler":
        return {"type": "random", **seed}
    raise ValueError(f"OptunaSearch(sampler={kind}): Rung runs TPESampler (as tpe), "
                     "CmaEsSampler (as cmaes) or RandomSampler (as random); leave sampler "
                     "out for tpe")


class OptunaSearch(Searcher):
    """Optuna's default sampler is TPE: Rung's tpe searcher takes its place
    (multivariate, by groups on conditional spaces: docs/searchers.md)."""
    _defaults = {"space": None, "metric": None, "mode": None, "points_to_evaluate": None,
                 "sampler": None, "seed": None, "evaluated_rewards": None}

    def rung_searcher(self) -> tuple[dict, dict]:
        if self.evaluated_rewards is not None:
            raise ValueError("OptunaSearch(evaluated_rewards=...): start from an earlier "
                             "Rung experiment with warm_start instead")
        seed = _seed(self.seed, "seed")
        if self.sampler is not None:
            return self._common(_optuna_sampler(self.sampler, seed))
        return self._common({"type": "tpe", **seed})


class HyperOptSearch(Searcher):
    """HyperOpt's TPE becomes Rung's tpe, one parameter at a time as
    hyperopt's is; n_initial_points its n_initial."""
    _defaults = {"space": None, "metric": None, "mode": None, "points_to_evaluate": None,
                 "n_initial_points": 20, "random_state_seed": None, "gamma": 0.25}

    def rung_searcher(self) -> tuple[dict, dict]:
        return self._common({"type": "tpe", "multivariate": False, "group": False,
                             **_seed(self.random_state_seed, "random_state_seed"),
                             "n_initial": self.n_initial_points})


class ConcurrencyLimiter(Searcher):
    _defaults = {"searcher": None, "max_concurrent": None, "batch": False}

    def rung_searcher(self) -> tuple[dict, dict]:
        if not isinstance(self.searcher, Searcher):
            raise ValueError(f"ConcurrencyLimiter(searcher={type(self.searcher).__name__}): "
                             "not one of rung.compat.tune's search algorithms")
        searcher, extra = self.searcher.rung_searcher()
        if self.max_concurrent:
            limit = extra.get("max_concurrent_trials")
            extra["max_concurrent_trials"] = min(limit, self.max_concurrent) if limit \
                else self.max_concurrent
        return searcher, extra

    def _metric_mode(self) -> tuple[Optional[str], Optional[str]]:
        return self.searcher._metric_mode() if isinstance(self.searcher, Searcher) \
            else (None, None)


def searcher_spec(alg: Any) -> tuple[Optional[dict], dict]:
    if alg is None:
        return None, {}
    if not isinstance(alg, Searcher):
        raise ValueError(f"search_alg={type(alg).__name__}: not one of rung.compat.tune's "
                         "search algorithms (BasicVariantGenerator, BayesOptSearch, "
                         "OptunaSearch, HyperOptSearch, ConcurrencyLimiter)")
    return alg.rung_searcher()


def scheduler_spec(sched: Any, space: dict) -> Optional[dict]:
    if sched is None:
        return None
    if not isinstance(sched, _Scheduler):
        raise ValueError(f"scheduler={type(sched).__name__}: not one of rung.compat.tune's "
                         "schedulers (FIFOScheduler, ASHAScheduler, HyperBandScheduler, "
                         "MedianStoppingRule, PopulationBasedTraining, PB2)")
    return sched.rung_scheduler(space)


def metric_mode(given: tuple[Optional[str], Optional[str]],
                *others: tuple[Optional[str], Optional[str]]
                ) -> tuple[Optional[str], Optional[str]]:
    """The one metric and mode of the experiment, from TuneConfig and the
    scheduler's or searcher's own; two different ones are refused, as Ray
    does."""
    metric, mode = given
    for m, md in others:
        if m is not None:
            if metric is not None and m != metric:
                raise ValueError(f"metric: {metric!r} in TuneConfig and {m!r} in the "
                                 "scheduler or search algorithm; give it once")
            metric = m
        if md is not None:
            if mode is not None and md != mode:
                raise ValueError(f"mode: {mode!r} in TuneConfig and {md!r} in the "
                                 "scheduler or search algorithm; give it once")
            mode = md
    if mode is not None and mode not in ("min", "max"):
        raise ValueError(f"mode: must be 'min' or 'max', not {mode!r}")
    if metric is not None and mode is None:
        raise ValueError(f"mode: metric {metric!r} needs a mode, 'min' or 'max'")
    return metric, mode
