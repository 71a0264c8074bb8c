"""Search definitions of other tuners as Rung specs.

- `wandb_to_spec(sweep)`: a W&B sweep configuration (the `wandb sweep`
  YAML file, or the dict given to `wandb.sweep`) as the fields of a Rung
  experiment spec (docs/api.md, "The experiment spec").
- `from_wandb(path_or_dict, ...)`: the same, as a `rung.Experiment` ready
  to submit.
- `from_ray_param_space(space)`: a Ray Tune `param_space` as a Rung
  `search_space`.

Whatever Rung cannot express is refused with a ValueError whose message
starts with the path of the field at fault ("parameters.lr.distribution:
..."), never silently changed.

W&B sweeps, key by key (https://docs.wandb.ai/guides/sweeps/define-sweep-configuration):

- `method`: `grid`, `random`, `bayes` give the searcher of that type;
  `custom` is refused.
- `metric`: `name` is the metric, `goal` (`minimize`, the default, or
  `maximize`) the mode, `target` the stop rule `metric_threshold` (the
  search ends once a trial reaches it; W&B lets running runs finish, Rung
  stops them). `impute: worst` is what Rung's bayes searcher does with
  failed trials anyway; other `impute` values and `impute_while_running`
  are refused.
- `parameters`, for `random` and `bayes`: `values` is a `choice`
  (`probabilities` are refused: Rung draws choices uniformly), `value` a
  constant, and the distributions: `int_uniform` a `randint` with `max + 1`
  as its high (W&B includes max, Rung's randint excludes its high),
  `uniform` a `uniform`, `q_uniform` a `quniform` (a `qrandint` when min,
  max and q are integers, as W&B then gives integers), `log_uniform_values`
  and `inv_log_uniform_values` a `loguniform` over [min, max] (1/X is
  log-uniform when X is), `log_uniform` a `loguniform` over [exp(min),
  exp(max)] (W&B's bounds are natural-log exponents there),
  `inv_log_uniform` a `loguniform` over [exp(-max), exp(-min)],
  `q_log_uniform_values` a `qloguniform`, `q_log_uniform` a `qloguniform`
  over [exp(min), exp(max)]. W&B rounds a q_ draw to a multiple of q
  (round(x / q) * q, halves to even) and gives integers when q is written
  as an integer (`q: 1`, `q: 8`; W&B's default q is 1.0, a real): then
  `q_uniform` is a `qrandint` and `q_log_uniform_values` / `q_log_uniform`
  a `qlograndint` ({"type": "qlograndint", "low", "high", "q"}: integer
  multiples of q, log-uniform, both ends included), with low and high the
  multiples of q that min and max (exp(min) and exp(max)) round to, the
  ends W&B can draw (`{min: 32, max: 256, q: 1}` gives 32 ... 256, never
  139.0); a qlograndint whose min rounds to 0 is refused, and one whose
  ends round alike is that constant. `normal` {mu, sigma} (W&B's defaults
  0 and 1) is {"type": "normal", "mean": mu, "sd": sigma}, `q_normal` a
  {"type": "qnormal", "mean", "sd", "q"}; `log_normal`, `q_log_normal`,
  `beta` and `q_beta` are refused: Rung has no such domain yet. Without
  `distribution`, W&B's defaults: `values` is categorical, `value`
  constant, integer min and max `int_uniform`, other min and max
  `uniform`. Nested `parameters` are refused (not converted yet;
  Rung's own spec takes sub-spaces, docs/api.md).
- `parameters`, for `grid` (W&B enumerates values, value, int_uniform and
  q_uniform only, and so does this): `values` a `grid`, `value` a constant,
  `int_uniform` a `grid` of every integer from min to max, `q_uniform` a
  `grid` of min, min + q, ... below max (numpy.arange(min, max, q), as W&B).
  Every combination runs once (`num_samples` 1).
- `run_cap`: `num_samples` for `random` and `bayes`; without it the spec
  has no `num_samples` (W&B's random and bayes run until stopped; Rung's
  searches have a size, so `from_wandb` asks for one). For `grid`, a
  run_cap below the number of combinations is refused (Rung runs the whole
  grid), a larger one changes nothing.
- `early_terminate` (`type: hyperband`; wandb/sweeps'
  hyperband_stopping.py): the `asha` scheduler with `"end_at_max_t":
  false` (docs/schedulers.md), so that its rungs are W&B's brackets
  ("bands") and no run is ended at any of them but by the rule, nor at
  `max_t`: a run goes on to its program's end, as in W&B.
  `reduction_factor` = `eta` (default 3). Given `max_iter` and `s`, W&B's
  bands are int(max_iter / eta^i) for i = 1 ... s (while >= 1; `min_iter`
  is not read then): `grace_period` is the lowest, `max_t` the highest,
  int(max_iter / eta) (max_iter itself is no band). Given `min_iter` (and
  no `s`), the bands are min_iter·eta^k: `grace_period` = `min_iter`, and
  `max_t` = `max_iter` when given (W&B's engine needs `s` with it; Rung
  reads it as the top rung), else min_iter·eta^k for the smallest k that
  passes 10^9 (at most 40 rungs), as W&B's bands go on. Rung's rungs are
  grace_period·eta^k up to max_t: where W&B's int() makes its bands
  uneven (max_iter 100, s 3: 3, 11, 33) Rung's are 3, 9, 27. `strict:
  true`, W&B's default, judges a run's value at the band, as Rung's asha
  judges the value at the rung; `strict: false` (W&B's lenient rule, a
  run's best value so far against the band's threshold) is refused, as
  no Rung scheduler has it. W&B's threshold is the value ranked
  int(n/eta) among every run's value at the band, Rung's cutoff the
  (1 - 1/eta) quantile of the earlier records there (docs/schedulers.md),
  and W&B looks again at each poll where Rung judges once per rung. W&B
  counts iterations as the metric's logged values; Rung counts the
  reported `step`.
- `program` and `command`: a command trainable. Without `command`, W&B
  runs `${env} ${interpreter} ${program} ${args}`, which is
  `["python3", PROGRAM, "--NAME={NAME}", ...]`, one `--NAME={NAME}` per
  parameter in the sweep's order (rung-worker puts each trial's values in
  the braces). In a `command`: `${env}` is dropped (rung-worker looks
  argv[0] up in PATH), `${interpreter}` is `python3` (looked up in the
  trial's PATH, which rung-worker sets from the trial's environment; a
  worker's `--env` puts that environment's interpreter there), `${program}` the
  program, `${args}` the `--NAME={NAME}` arguments, `${args_no_hyphens}`
  `NAME={NAME}` ones, `${args_no_boolean_flags}` the same as `${args}` when
  no parameter can be a boolean, and `${NAME}` inside an argument a
  parameter's value. `${args_json}`, `${args_json_file}` and `${envvar:...}`
  are refused: rung-worker gives the trial its config as JSON in
  $RUNG_CONFIG (rung.config() reads it).
- A sweep file is read in the YAML readers' W&B mode (rung/_yaml.py): as
  W&B's PyYAML, `yes`/`no`/`on`/`off` are booleans there; `1e-5` is a
  number in every mode.
- `name` is the experiment's name; `description`, `entity`, `project`,
  `controller`, `apiVersion` and `kind` belong to W&B's service and are
  left out; `job`, `image_uri` (W&B Launch), `metrics` (several
  objectives) and `scheduler` (W&B's custom engines) are refused.

Ray Tune param_space values (https://docs.ray.io/en/latest/tune/api/search_space.html):
domains that are already the API's (what `rung.search` returns) and
constants pass through; `{"grid_search": [...]}` (what `tune.grid_search`
returns) is a `grid`; Ray's own domain objects, recognized by their class
names and attributes (so `ray` need not be importable here), are
translated: `tune.uniform`, `quniform`, `loguniform`, `qloguniform`,
`randint`, `qrandint`, `lograndint`, `qlograndint`, `choice` to the API
domain of the same name, `tune.randn` and `tune.qrandn` to `normal` and
`qnormal`. Quantized domains keep the values Ray draws: with q == 1 Ray
does not quantize (`tune.qrandint(40, 1000)` is `randint` 40 … 999, as in
Ray; `tune.quniform(0, 10, 1)` a `uniform`), otherwise multiples of q
within the bounds. A nested dict holding domains is a sub-space (its
parameters' config keys are dotted paths, `model.lr`); a choice of dicts
is a conditional choice, each dict a branch (docs/api.md, "Nested and
conditional spaces"); a nested dict with a key `type` (which the API would
read as a domain) becomes a choice of that one branch, the same
parameters. A dict holding only constants is the constant it is in Ray,
written as a `grid` of one value as the API asks (inside a branch, which
holds no grid, a branch of its own). Refused, naming the parameter:
functions (`tune.sample_from`, lambdas) and Ray's `{"eval": ...}`
expressions (rungd runs no code of the driver), domains inside lists, a
choice mixing dicts with other values, and grids inside a choice's dicts.
"""

from __future__ import annotations

import json
import math
import os
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from ._yaml import load_json, load_yaml, read_document

if TYPE_CHECKING:
    from .experiment import Experiment

__all__ = ["wandb_to_spec", "from_wandb", "from_ray_param_space"]

INTERPRETER = "python3"  # what ${interpreter} becomes (W&B's is `python`)

# Rung's search_space domain types (docs/api.md, "search_space").
API_DOMAIN_TYPES = frozenset({"uniform", "quniform", "loguniform", "qloguniform", "randint",
                              "qrandint", "lograndint", "qlograndint", "choice", "grid",
                              "normal", "qnormal"})

_GRID_VALUES_MAX = 10_000  # values of one grid domain (docs/api.md)

# Top-level keys of a W&B sweep config, by what becomes of them.
_WANDB_USED = ("name", "method", "metric", "parameters", "early_terminate", "run_cap",
               "program", "command")
_WANDB_IGNORED = ("description", "entity", "project", "controller", "apiVersion", "kind")
_WANDB_REFUSED = {
    "job": "W&B Launch jobs are not supported: give the program to run as `program` or "
           "`command`, or pass trainable=",
    "image_uri": "W&B Launch images are not supported: give the program to run as `program` "
                 "or `command`, or pass trainable=",
    "metrics": "Rung optimizes one metric: give it as `metric`",
    "scheduler": "W&B's custom scheduler engines are not supported: use method grid, random "
                 "or bayes",
}

# The keys each W&B distribution takes (besides `distribution`), and which
# are required.
_WANDB_DISTRIBUTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "constant": (("value",), ("value",)),
    "categorical": (("values", "probabilities"), ("values",)),
    "categorical_w_probabilities": (("values", "probabilities"), ("values", "probabilities")),
    "int_uniform": (("min", "max"), ("min", "max")),
    "uniform": (("min", "max"), ("min", "max")),
    "q_uniform": (("min", "max", "q"), ("min", "max")),
    "log_uniform": (("min", "max"), ("min", "max")),
    "log_uniform_values": (("min", "max"), ("min", "max")),
    "q_log_uniform": (("min", "max", "q"), ("min", "max")),
    "q_log_uniform_values": (("min", "max", "q"), ("min", "max")),
    "inv_log_uniform": (("min", "max"), ("min", "max")),
    "inv_log_uniform_values": (("min", "max"), ("min", "max")),
    "normal": (("mu", "sigma"), ()),  # W&B's defaults: mu 0.0, sigma 1.0
    "q_normal": (("mu", "sigma", "q"), ()),
    "log_normal": (("mu", "sigma"), ()),
    "q_log_normal": (("mu", "sigma", "q"), ()),
    "beta": (("a", "b"), ()),
    "q_beta": (("a", "b", "q"), ()),
}
_NO_RUNG_DOMAIN = {
    "log_normal": "log-normal", "q_log_normal": "quantized log-normal", "beta": "beta",
    "q_beta": "quantized beta",
}
_RUNG_DOMAINS_TEXT = ("its domains are uniform, quniform, loguniform, qloguniform, randint, "
                      "qrandint, lograndint, qlograndint, normal, qnormal, choice and grid "
                      "(docs/api.md, search_space)")
# Integers an integer domain's bounds may take: where a double is exact.
_EXACT_INT_MAX = 1 << 53

_MACRO_RE = re.compile(r"\$\{([^}]*)\}")


# ---------------------------------------------------------------------------
# Small checks shared by both converters.


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any, path: str) -> Union[int, float]:
    """`value` when it is a finite number; else ValueError naming `path`."""
    if hasattr(value, "item") and not isinstance(value, (int, float)):
        value = value.item()  # a numpy scalar
    if not _is_number(value):
        raise ValueError(f"{path}: must be a number, not {_describe(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path}: must be a finite number, not {value}")
    return value


def _integer(value: Any, path: str) -> int:
    value = _number(value, path)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{path}: must be an integer, not {value!r}")
        value = int(value)
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"{type(value).__name__} {value!r}"[:80]


def _json_constant(value: Any, path: str) -> Any:
    """`value` as plain JSON data (numpy scalars and arrays, and tuples,
    become Python's); ValueError naming `path` for what is not data."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value} is not a finite number (JSON has no spelling "
                             "for it)")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_constant(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{path}: keys must be strings, not {_describe(key)}")
            out[key] = _json_constant(v, f"{path}.{key}")
        return out
    module = type(value).__module__ or ""
    if module.startswith("numpy"):
        if hasattr(value, "tolist"):
            return _json_constant(value.tolist(), path)
    if callable(value):
        raise ValueError(f"{path}: a function is not a search space value: rungd samples "
                         "configs itself, so Ray's tune.sample_from and lambdas cannot be "
                         "sent; use a domain of rung.search, or compute the value in the "
                         "trainable from the others")
    raise ValueError(f"{path}: {type(value).__name__} is not a search space domain or a "
                     "JSON constant")


# ---------------------------------------------------------------------------
# W&B sweeps.


def _wandb_metric(metric: Any, spec: dict) -> None:
    if not isinstance(metric, Mapping):
        raise ValueError(f"metric: must be a mapping with name and goal, not {_describe(metric)}")
    for key in metric:
        if key not in ("name", "goal", "target", "impute", "impute_while_running"):
            raise ValueError(f"metric.{key}: not a key of a W&B metric (name, goal, target, "
                             "impute, impute_while_running)")
    name = metric.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"metric.name: the metric's name is required (a string), not "
                         f"{_describe(name)}")
    goal = metric.get("goal", "minimize")
    if goal not in ("minimize", "maximize"):
        raise ValueError(f"metric.goal: must be minimize or maximize, not {_describe(goal)}")
    spec["metric"] = name
    spec["mode"] = "min" if goal == "minimize" else "max"
    if "target" in metric and metric["target"] is not None:
        spec["stop"] = {"metric_threshold": _number(metric["target"], "metric.target")}
    impute = metric.get("impute", "worst")
    if impute != "worst":
        raise ValueError(f"metric.impute: Rung's bayes searcher counts a failed trial as the "
                         f"worst value seen (impute: worst); {_describe(impute)} is not "
                         "supported")
    running = metric.get("impute_while_running", "false")
    if running not in ("false", False):
        raise ValueError("metric.impute_while_running: not supported (Rung's bayes searcher "
                         "takes running trials into account by itself)")


def _infer_distribution(param: Mapping, path: str) -> str:
    """W&B's distribution for a parameter that names none."""
    if "values" in param:
        return "categorical_w_probabilities" if "probabilities" in param else "categorical"
    if "value" in param:
        return "constant"
    if "min" in param and "max" in param:
        lo, hi = param["min"], param["max"]
        if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool) and \
                not isinstance(hi, bool):
            return "int_uniform"
        return "uniform"
    raise ValueError(f"{path}: a parameter needs values, value, min and max, or a "
                     "distribution")


def _can_be_bool(param: Mapping) -> bool:
    if isinstance(param.get("value"), bool):
        return True
    values = param.get("values")
    return isinstance(values, list) and any(isinstance(v, bool) for v in values)


def _constant_domain(value: Any, path: str) -> Any:
    """A constant as the API writes it: a mapping as a grid of one value."""
    value = _json_constant(value, path)
    if isinstance(value, dict):
        return {"type": "grid", "values": [value]}
    return value


def _decimal_steps(lo: Union[int, float], hi: Union[int, float], q: Union[int, float],
                   path: str) -> list:
    """numpy.arange(lo, hi, q) without numpy's rounding noise (0.1 + 0.2 is
    0.3 here): lo + k*q below hi, in decimal arithmetic."""
    if q <= 0:
        raise ValueError(f"{path}.q: must be > 0, not {q!r}")
    if isinstance(lo, int) and isinstance(hi, int) and isinstance(q, int):
        count = max(0, -((lo - hi) // q))  # ceil((hi - lo) / q), exactly
        if count > _GRID_VALUES_MAX:
            raise ValueError(f"{path}: {count} grid values, more than Rung's "
                             f"{_GRID_VALUES_MAX} for one parameter")
        return list(range(lo, hi, q))
    d_lo, d_hi, d_q = Decimal(repr(lo)), Decimal(repr(hi)), Decimal(repr(q))
    count = max(0, math.ceil((d_hi - d_lo) / d_q))
    if count > _GRID_VALUES_MAX:
        raise ValueError(f"{path}: {count} grid values, more than Rung's {_GRID_VALUES_MAX} "
                         "for one parameter")
    return [float(d_lo + k * d_q) for k in range(count)]


def _wandb_parameter(name: str, param: Any, method: str) -> Any:
    """One W&B parameter as a Rung domain (module docstring)."""
    path = f"parameters.{name}"
    if not isinstance(param, Mapping):
        raise ValueError(f"{path}: a parameter is a mapping (values, value, distribution, "
                         f"min, max, ...), not {_describe(param)}")
    if "parameters" in param:
        raise ValueError(f"{path}.parameters: nested parameters (W&B's nested search spaces) "
                         "are not supported by Rung yet in a sweep file: give each nested "
                         "parameter its own top-level name, or write the experiment as "
                         "Rung's spec, whose search_space takes sub-spaces (docs/api.md, "
                         "\"Nested and conditional spaces\")")
    dist = param.get("distribution")
    if dist is None:
        dist = _infer_distribution(param, path)
    elif not isinstance(dist, str) or dist not in _WANDB_DISTRIBUTIONS:
        raise ValueError(f"{path}.distribution: {_describe(dist)} is not a W&B distribution "
                         f"({', '.join(_WANDB_DISTRIBUTIONS)})")
    allowed, required = _WANDB_DISTRIBUTIONS[dist]
    for key in param:
        if key != "distribution" and key not in allowed:
            raise ValueError(f"{path}.{key}: distribution {dist} takes "
                             f"{', '.join(allowed)}, not {key}")
    if dist in _NO_RUNG_DOMAIN:
        raise ValueError(f"{path}.distribution: {dist}: Rung has no {_NO_RUNG_DOMAIN[dist]} "
                         f"domain yet; {_RUNG_DOMAINS_TEXT}")
    for key in required:
        if key not in param:
            raise ValueError(f"{path}.{key}: required by distribution {dist}")
    if "probabilities" in param:
        raise ValueError(f"{path}.probabilities: Rung draws a choice's values with equal "
                         "probability; weighted values are not supported yet")

    if dist == "constant":
        return _constant_domain(param["value"], f"{path}.value")
    if dist == "categorical":
        values = param["values"]
        if not isinstance(values, list) or not values:
            raise ValueError(f"{path}.values: must be a non-empty list, not {_describe(values)}")
        values = _json_constant(values, f"{path}.values")
        if method == "grid":
            if len(values) > _GRID_VALUES_MAX:
                raise ValueError(f"{path}.values: {len(values)} values, more than Rung's "
                                 f"{_GRID_VALUES_MAX} for one parameter")
            return {"type": "grid", "values": values}
        for i, v in enumerate(values):
            if v is None or isinstance(v, (list, dict)):
                raise ValueError(f"{path}.values[{i}]: Rung's choice takes numbers, strings "
                                 f"and booleans, not {_describe(v)}")
        return {"type": "choice", "values": values}

    # W&B's q defaults to 1.0, a real: its values are then reals (40.0).
    q = _number(param.get("q", 1.0), f"{path}.q") if "q" in allowed else None
    if q is not None and q <= 0:
        raise ValueError(f"{path}.q: must be > 0, not {q!r}")
    if dist in ("normal", "q_normal"):
        return _wandb_normal(param, path, q)
    lo = _number(param["min"], f"{path}.min")
    hi = _number(param["max"], f"{path}.max")

    if dist == "int_uniform":
        lo = _integer(param["min"], f"{path}.min")
        hi = _integer(param["max"], f"{path}.max")
        if abs(lo) > _EXACT_INT_MAX or abs(hi) > _EXACT_INT_MAX:
            raise ValueError(f"{path}: min and max must be within 2^53")
        if lo > hi:
            raise ValueError(f"{path}.max: must be >= min ({lo}), not {hi}")
        if method == "grid":
            if hi - lo + 1 > _GRID_VALUES_MAX:
                raise ValueError(f"{path}: {hi - lo + 1} grid values, more than Rung's "
                                 f"{_GRID_VALUES_MAX} for one parameter")
            return {"type": "grid", "values": list(range(lo, hi + 1))}
        # W&B includes max; Rung's randint excludes its high.
        return {"type": "randint", "low": lo, "high": hi + 1}
    if dist == "q_uniform" and method == "grid":
        values = _decimal_steps(lo, hi, q, path)
        if not values:
            raise ValueError(f"{path}.max: no grid value: min ({lo}) is not below max ({hi})")
        return {"type": "grid", "values": values}
    if method == "grid":
        raise ValueError(f"{path}.distribution: method grid enumerates values, value, "
                         f"int_uniform and q_uniform parameters (as W&B's grid search), not "
                         f"{dist}")
    if lo >= hi:
        raise ValueError(f"{path}.max: must be greater than min ({lo}), not {hi}")

    if dist == "uniform":
        return {"type": "uniform", "low": lo, "high": hi}
    if dist == "q_uniform":
        if isinstance(q, int):
            return _integer_q(lo, hi, q, "qrandint", path)
        return {"type": "quniform", "low": lo, "high": hi, "q": q}
    if dist in ("log_uniform_values", "inv_log_uniform_values", "q_log_uniform_values"):
        if lo <= 0:
            raise ValueError(f"{path}.min: must be > 0 for {dist}, not {lo!r}")
        low, high = lo, hi
    elif dist in ("log_uniform", "q_log_uniform"):
        low, high = _exp(lo, f"{path}.min"), _exp(hi, f"{path}.max")
    else:  # inv_log_uniform: log(1/X) uniform in [min, max]
        low, high = _exp(-hi, f"{path}.max"), _exp(-lo, f"{path}.min")
    if dist.startswith("q_"):
        if isinstance(q, int):
            return _integer_q(low, high, q, "qlograndint", path)
        return {"type": "qloguniform", "low": low, "high": high, "q": q}
    return {"type": "loguniform", "low": low, "high": high}


def _integer_q(low: Union[int, float], high: Union[int, float], q: int, kind: str,
               path: str) -> Any:
    """A W&B q_ distribution whose q is an integer: W&B rounds each draw to
    a multiple of q (round(x / q) * q, halves to even, as numpy.round) and
    gives integers, from low's multiple to high's, both reachable. As Rung's
    integer domain `kind` over those multiples; a constant when there is
    one."""
    lo_q = round(low / q) * q
    hi_q = round(high / q) * q
    if abs(lo_q) > _EXACT_INT_MAX:
        raise ValueError(f"{path}.min: {low!r} rounds to {lo_q}, too large for an integer "
                         f"domain (at most 2^53)")
    if abs(hi_q) > _EXACT_INT_MAX:
        raise ValueError(f"{path}.max: {high!r} rounds to {hi_q}, too large for an integer "
                         f"domain (at most 2^53)")
    if kind == "qlograndint" and lo_q <= 0:
        raise ValueError(f"{path}.min: {low!r} rounds to {lo_q} with q {q}, which W&B can "
                         "draw but a log-uniform integer domain cannot hold (its values are "
                         "> 0); raise min to q or more")
    if lo_q == hi_q:
        return lo_q
    return {"type": kind, "low": lo_q, "high": hi_q, "q": q}


def _wandb_normal(param: Mapping, path: str, q: Optional[Union[int, float]]) -> dict:
    """W&B's normal and q_normal, with W&B's defaults (mu 0, sigma 1)."""
    integral = q is not None
    mean = _number(param.get("mu", 0 if integral else 0.0), f"{path}.mu")
    sd = _number(param.get("sigma", 1 if integral else 1.0), f"{path}.sigma")
    if sd <= 0:
        raise ValueError(f"{path}.sigma: must be > 0, not {sd!r}")
    if q is None:
        return {"type": "normal", "mean": mean, "sd": sd}
    return {"type": "qnormal", "mean": mean, "sd": sd, "q": q}


def _exp(x: Union[int, float], path: str) -> float:
    try:
        value = math.exp(x)
    except OverflowError:
        value = math.inf
    if value == 0.0 or not math.isfinite(value):
        raise ValueError(f"{path}: exp({x}) is out of a double's range (W&B's log_uniform "
                         "takes natural-log exponents; log_uniform_values takes the values)")
    return value


def _wandb_scheduler(et: Any) -> dict:
    """W&B's hyperband (wandb/sweeps, hyperband_stopping.py) as Rung's asha
    with "end_at_max_t": false (docs/schedulers.md): rungs where W&B's bands
    are, and no run ended at any of them but by its rule."""
    if not isinstance(et, Mapping):
        raise ValueError(f"early_terminate: must be a mapping, not {_describe(et)}")
    for key in et:
        if key not in ("type", "min_iter", "max_iter", "s", "eta", "strict"):
            raise ValueError(f"early_terminate.{key}: not a key of W&B's hyperband "
                             "(type, min_iter, max_iter, s, eta, strict)")
    if et.get("type") != "hyperband":
        raise ValueError(f"early_terminate.type: W&B's stopping algorithm is hyperband, not "
                         f"{_describe(et.get('type'))}")
    eta = _number(et.get("eta", 3), "early_terminate.eta")
    if eta <= 1:
        raise ValueError(f"early_terminate.eta: must be > 1, not {eta!r}")
    strict = et.get("strict", True)  # W&B's default
    if not isinstance(strict, bool):
        raise ValueError(f"early_terminate.strict: must be a boolean, not {_describe(strict)}")
    if not strict:
        raise ValueError("early_terminate.strict: false is W&B's lenient rule (a run's best "
                         "value so far against a band's threshold), which Rung's schedulers "
                         "do not have; Rung's asha judges the value at the rung, as W&B's "
                         "strict: true (its default): leave strict out or set it true")
    min_iter = max_iter = None
    if et.get("min_iter") is not None:
        min_iter = _integer(et["min_iter"], "early_terminate.min_iter")
        if min_iter < 1:
            raise ValueError(f"early_terminate.min_iter: must be >= 1, not {min_iter}")
    if et.get("max_iter") is not None:
        max_iter = _integer(et["max_iter"], "early_terminate.max_iter")
        if max_iter < 1:
            raise ValueError(f"early_terminate.max_iter: must be >= 1, not {max_iter}")
    if max_iter is not None and et.get("s") is not None:
        # W&B's bands: int(max_iter / eta^i) for i = 1 ... s while >= 1
        # (min_iter is not read then). The top one is the top rung.
        s = _integer(et["s"], "early_terminate.s")
        band: float = max_iter
        bands = []
        for _ in range(max(s, 0)):
            band /= eta
            if band < 1:
                break
            bands.append(int(band))
        if not bands:
            raise ValueError(f"early_terminate.s: no bracket: max_iter / eta ({max_iter} / "
                             f"{eta}) is below 1, or s < 1")
        grace, max_t = min(bands), max(bands)
    elif min_iter is None and max_iter is not None:
        raise ValueError("early_terminate.s: W&B's hyperband needs s (its number of "
                         "brackets) with max_iter and no min_iter")
    elif min_iter is None:
        raise ValueError("early_terminate.min_iter: W&B's hyperband needs min_iter, or "
                         "max_iter and s")
    elif max_iter is not None:
        # W&B's engine needs s with max_iter; without it, the bands from
        # min_iter up to max_iter.
        if max_iter < min_iter:
            raise ValueError(f"early_terminate.max_iter: must be >= min_iter ({min_iter}), "
                             f"not {max_iter}")
        grace, max_t = min_iter, max_iter
    else:
        # W&B's bands go on (min_iter·eta^k): rungs up to past 10^9, within
        # 40 of them.
        grace = min_iter
        k = max(1, min(40, math.ceil(math.log(1e9 / grace) / math.log(eta))))
        max_t = grace * eta ** k
        if max_t > _EXACT_INT_MAX:
            raise ValueError(f"early_terminate.min_iter: {min_iter}·eta^k is past 2^53")
    return {"type": "asha", "grace_period": grace, "reduction_factor": eta, "max_t": max_t,
            "end_at_max_t": False}


def _wandb_argv(sweep: Mapping, names: list[str], params: Mapping) -> Optional[list[str]]:
    program = sweep.get("program")
    if program is not None and (not isinstance(program, str) or not program):
        raise ValueError(f"program: must be a file name (a string), not {_describe(program)}")
    command = sweep.get("command")
    if command is None:
        if program is None:
            return None
        return [INTERPRETER, program] + [f"--{n}={{{n}}}" for n in names]
    if not isinstance(command, list) or not command:
        raise ValueError(f"command: must be a non-empty list, not {_describe(command)}")
    argv: list[str] = []
    for i, item in enumerate(command):
        path = f"command[{i}]"
        if _is_number(item):
            item = str(item)
        if not isinstance(item, str):
            raise ValueError(f"{path}: must be a string, not {_describe(item)}")
        whole = item.strip()
        if whole == "${env}":
            continue  # /usr/bin/env: rung-worker looks argv[0] up in PATH itself
        if whole in ("${args}", "${args_no_hyphens}", "${args_no_boolean_flags}"):
            if whole == "${args_no_boolean_flags}":
                flags = [n for n in names if _can_be_bool(params[n])]
                if flags:
                    raise ValueError(f"{path}: ${{args_no_boolean_flags}} is not supported "
                                     f"with boolean parameters ({', '.join(flags)}): Rung "
                                     "cannot leave an argument out by its value; use "
                                     "${args}")
            prefix = "" if whole == "${args_no_hyphens}" else "--"
            argv.extend(f"{prefix}{n}={{{n}}}" for n in names)
            continue

        def macro(m: re.Match, path: str = path) -> str:
            key = m.group(1)
            if key == "interpreter":
                return INTERPRETER
            if key == "program":
                if program is None:
                    raise ValueError(f"{path}: ${{program}} but the sweep has no program")
                return program
            if key in ("args_json", "args_json_file"):
                raise ValueError(f"{path}: ${{{key}}} is not supported: rung-worker gives the "
                                 "trial its config as JSON in $RUNG_CONFIG (rung.config() "
                                 "reads it)")
            if key.startswith("envvar"):
                raise ValueError(f"{path}: ${{{key}}} is not supported: Rung passes argv "
                                 "without a shell; set the variable in the trainable's env")
            if key in ("env", "args", "args_no_hyphens", "args_no_boolean_flags"):
                raise ValueError(f"{path}: ${{{key}}} must be a whole command item")
            if key in params:
                return "{" + key + "}"
            raise ValueError(f"{path}: ${{{key}}} is neither a W&B command macro nor a "
                             "parameter of the sweep")

        argv.append(_MACRO_RE.sub(macro, item))
    if not argv:
        raise ValueError("command: nothing to run once ${env} is left out")
    return argv


def wandb_to_spec(sweep: Mapping[str, Any]) -> dict:
    """A W&B sweep config (a dict, as `wandb.sweep` takes or a sweep YAML
    file holds) as Rung spec fields: name, metric, mode, search_space,
    searcher, scheduler, num_samples, stop and trainable, each only where the
    sweep gives it (the module docstring says how each key maps). Pure: reads
    no file and asks no server. ValueError naming the field for anything Rung
    cannot express."""
    if not isinstance(sweep, Mapping):
        raise ValueError(f"a W&B sweep config is a mapping, not {_describe(sweep)}")
    for key in sweep:
        if key in _WANDB_REFUSED:
            raise ValueError(f"{key}: {_WANDB_REFUSED[key]}")
        if key not in _WANDB_USED and key not in _WANDB_IGNORED:
            raise ValueError(f"{key}: not a key of a W&B sweep config (they are "
                             f"{', '.join(_WANDB_USED + _WANDB_IGNORED)})")
    method = sweep.get("method")
    if method is None:
        raise ValueError("method: required (grid, random or bayes)")
    if method not in ("grid", "random", "bayes"):
        raise ValueError(f"method: must be grid, random or bayes, not {_describe(method)}")

    spec: dict[str, Any] = {}
    name = sweep.get("name")
    if name is not None:
        if not isinstance(name, str):
            raise ValueError(f"name: must be a string, not {_describe(name)}")
        spec["name"] = name
    if sweep.get("metric") is not None:
        _wandb_metric(sweep["metric"], spec)
    elif method == "bayes":
        raise ValueError("metric: method bayes needs a metric to optimize")

    params = sweep.get("parameters")
    if not isinstance(params, Mapping) or not params:
        raise ValueError(f"parameters: required, a mapping of at least one parameter, not "
                         f"{_describe(params)}")
    space: dict[str, Any] = {}
    for pname, param in params.items():
        if not isinstance(pname, str):
            raise ValueError(f"parameters: names must be strings, not {_describe(pname)}")
        space[pname] = _wandb_parameter(pname, param, method)
    spec["search_space"] = space
    spec["searcher"] = {"type": method}

    if sweep.get("early_terminate") is not None:
        if "metric" not in spec:
            raise ValueError("metric: early_terminate needs a metric to compare runs by")
        spec["scheduler"] = _wandb_scheduler(sweep["early_terminate"])

    run_cap = sweep.get("run_cap")
    if run_cap is not None:
        run_cap = _integer(run_cap, "run_cap")
        if run_cap < 1:
            raise ValueError(f"run_cap: must be >= 1, not {run_cap}")
    if method == "grid":
        combinations = 1
        for domain in space.values():
            if isinstance(domain, dict) and domain.get("type") == "grid":
                combinations *= len(domain["values"])
        if run_cap is not None and run_cap < combinations:
            raise ValueError(f"run_cap: {run_cap} is below the grid's {combinations} "
                             "combinations, and Rung runs the whole grid; leave run_cap out "
                             "or cut the grid")
        spec["num_samples"] = 1
    elif run_cap is not None:
        spec["num_samples"] = run_cap

    if "stop" in spec:  # keep the spec's usual order: stop after the search
        spec["stop"] = spec.pop("stop")
    argv = _wandb_argv(sweep, list(space), params)
    if argv is not None:
        spec["trainable"] = {"type": "command", "argv": argv}
    return spec


def from_wandb(path_or_dict: Union[str, "os.PathLike[str]", Mapping[str, Any]], *,
               trainable: Any = None, name: Optional[str] = None,
               **kwargs: Any) -> "Experiment":
    """A `rung.Experiment` from a W&B sweep: a YAML (or .json) file's path,
    or the sweep dict. Not submitted yet: call `.submit()`.

    `trainable` replaces the sweep's `program`/`command` (any trainable
    Experiment takes: a .py file, an argv list, a function, the API's dict).
    From a file, the command of `program`/`command` runs in the file's
    folder (its `cwd`), where W&B's agent would find the program. `name`
    defaults to the sweep's name, else the file's stem. Other keyword
    arguments go to Experiment and win over the sweep's values
    (`num_samples=`, `metric=`, `max_concurrent_trials=`, `client=`, ...).

    W&B's random and bayes searches run until stopped; a Rung search has a
    size, so the sweep's `run_cap` or `num_samples=` is required for them.
    """
    stem = None
    folder = None
    if isinstance(path_or_dict, (str, os.PathLike)):
        path = os.fspath(path_or_dict)
        try:
            text = read_document(path)
            sweep = load_json(text) if path.endswith(".json") else load_yaml(text, wandb=True)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        stem = os.path.splitext(os.path.basename(path))[0]
        folder = os.path.dirname(os.path.abspath(path))
    elif isinstance(path_or_dict, Mapping):
        sweep = path_or_dict
    else:
        raise TypeError(f"from_wandb() takes a sweep file's path or a sweep dict, not "
                        f"{type(path_or_dict).__name__}")
    spec = wandb_to_spec(sweep)

    fields: dict[str, Any] = {"name": name or spec.get("name") or stem}
    if trainable is not None:
        fields["trainable"] = trainable
    elif "trainable" in spec:
        fields["trainable"] = dict(spec["trainable"])
        if folder is not None:
            fields["trainable"]["cwd"] = folder
    else:
        raise ValueError("program: the sweep has no program or command to run; add one, or "
                         "pass trainable= (a .py file, an argv list or a function)")
    fields["param_space"] = spec["search_space"]
    for key in ("metric", "mode", "searcher", "scheduler", "num_samples", "stop"):
        if key in spec:
            fields[key] = spec[key]
    fields.update(kwargs)
    if fields.get("metric") is None:
        raise ValueError("metric: the sweep has none and Rung needs one: add metric: {name: "
                         "..., goal: minimize} to the sweep, or pass metric=")
    if fields.get("num_samples") is None:
        raise ValueError("run_cap: W&B's random and bayes searches run until stopped, a Rung "
                         "search has a size: add run_cap to the sweep, or pass num_samples=")
    from .experiment import Experiment

    return Experiment(**fields)


# ---------------------------------------------------------------------------
# Ray Tune param spaces.


def _class_names(obj: Any) -> set[str]:
    return {cls.__name__ for cls in type(obj).__mro__}


def _is_ray_domain(value: Any) -> bool:
    return bool(_class_names(value) & {"Domain", "Float", "Integer", "Categorical", "Function"}) \
        and not isinstance(value, (Mapping, list, tuple, str))


def _is_api_domain(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") in API_DOMAIN_TYPES


def _is_grid_search(value: Any) -> bool:
    return isinstance(value, Mapping) and list(value) == ["grid_search"]


def _find_domain(value: Any, path: str) -> Optional[str]:
    """The path of the first domain (of any kind) inside `value`, or None."""
    if _is_ray_domain(value) or _is_api_domain(value) or _is_grid_search(value) or \
            _is_eval(value) or (
            callable(value) and not isinstance(value, type)):
        return path
    if isinstance(value, Mapping):
        for key, v in value.items():
            found = _find_domain(v, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _find_domain(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _ray_sampler_kind(sampler: Any, path: str) -> str:
    names = _class_names(sampler)
    if "Grid" in names:
        return "grid"
    if "LogUniform" in names:
        return "loguniform"
    if "Normal" in names:
        return "normal"
    if "Uniform" in names:
        return "uniform"
    raise ValueError(f"{path}: Ray sampler {type(sampler).__name__} has no Rung domain")


def _ray_categorical(obj: Any, kind: str, q: Any, path: str) -> dict:
    categories = list(getattr(obj, "categories"))
    if kind == "grid":
        inner = _find_domain(categories, path)
        if inner:
            raise ValueError(f"{inner}: a domain inside tune.grid_search is not supported: "
                             "a grid enumerates fixed values")
        return {"type": "grid", "values": _json_constant(categories, path)}
    if kind != "uniform" or q is not None:
        raise ValueError(f"{path}: a categorical domain with a {kind} sampler has no Rung "
                         "domain")
    return _choice(categories, path)


def _choice(values: list, path: str) -> dict:
    """A choice; one whose values are dicts is a conditional choice, each
    dict a branch (docs/api.md, "Nested and conditional spaces")."""
    dicts = [isinstance(v, Mapping) for v in values]
    if any(dicts) and not all(dicts):
        i = dicts.index(not dicts[0])
        raise ValueError(f"{path}[{i}]: a choice mixes dicts with other values; Rung reads a "
                         "choice of dicts as a conditional choice (each dict a branch), so "
                         "make every value a dict (e.g. {\"name\": ...})")
    if all(dicts) and values:
        return {"type": "choice",
                "values": [_ray_branch(v, f"{path}[{i}]") for i, v in enumerate(values)]}
    inner = _find_domain(values, path)
    if inner:
        raise ValueError(f"{inner}: a domain inside a choice is only supported inside a dict "
                         "(a branch of a conditional choice)")
    return {"type": "choice", "values": _json_constant(values, path)}


def _ray_branch(branch: Mapping, path: str) -> dict:
    """One value of a choice of dicts as a branch: its keys are parameters
    again (a branch holds no grid: rungd refuses one there)."""
    if not branch:
        raise ValueError(f"{path}: an empty dict cannot be a branch of a conditional choice")
    return _ray_scope(branch, path, in_branch=True)


def _ray_scope(space: Mapping, path: str, in_branch: bool = False) -> dict:
    out: dict[str, Any] = {}
    for key, value in space.items():
        if not isinstance(key, str):
            raise ValueError(f"{path}: keys must be strings, not {_describe(key)}")
        out[key] = _ray_value(value, f"{path}.{key}" if path else key, in_branch)
    return out


def _ray_domain(obj: Any, path: str) -> dict:
    """One of Ray Tune's Domain objects (ray/tune/search/sample.py) as the
    API's domain, read by class names and attributes: Float, Integer and
    Categorical with lower/upper/categories and a sampler (Uniform,
    LogUniform, Normal, Grid, possibly wrapped in Quantized with q).

    Quantized domains keep the values Ray draws: Ray rounds to multiples of
    q within [ceil(lower/q)·q, floor(upper/q)·q], and with q == 1 it does not
    quantize at all, so tune.qrandint(40, 1000) never gives 1000 (an
    integer below upper) and tune.quniform(0, 10, 1) gives any real."""
    names = _class_names(obj)
    if "Function" in names:
        raise ValueError(f"{path}: tune.sample_from is not supported: rungd samples configs "
                         "itself, so a function cannot be sent; use a domain of rung.search, "
                         "or compute the value in the trainable from the others")
    sampler = getattr(obj, "sampler", None)
    q = None
    if sampler is not None and "Quantized" in _class_names(sampler):
        q = _number(getattr(sampler, "q", None), f"{path}.q")
        sampler = getattr(sampler, "sampler", None)
        if q <= 0:
            raise ValueError(f"{path}.q: must be > 0, not {q!r}")
        if q == 1:
            q = None  # Ray's Quantized returns the plain draw for q == 1
    kind = "uniform" if sampler is None else _ray_sampler_kind(sampler, path)

    if "Categorical" in names:
        return _ray_categorical(obj, kind, q, path)
    if "Float" in names or "Integer" in names:
        integer = "Integer" in names
        if kind == "normal":
            domain = {"type": "normal" if q is None else "qnormal",
                      "mean": _number(getattr(sampler, "mean"), f"{path}.mean"),
                      "sd": _number(getattr(sampler, "sd"), f"{path}.sd")}
            if q is not None:
                domain["q"] = q
            return domain
        if kind == "grid":
            raise ValueError(f"{path}: a numeric domain with a grid sampler has no Rung domain")
        low = getattr(obj, "lower", None)
        high = getattr(obj, "upper", None)
        if integer:
            low, high = _integer(low, f"{path}.lower"), _integer(high, f"{path}.upper")
            if q is not None:
                q = _integer(q, f"{path}.q")
        else:
            low, high = _number(low, f"{path}.lower"), _number(high, f"{path}.upper")
        log = kind == "loguniform"
        if q is not None:
            # Integer: multiples of q in [low, high], both included (Rung's
            # qrandint and qlograndint); Float: round(x/q)·q within them.
            name = ("qlograndint" if log else "qrandint") if integer else \
                ("qloguniform" if log else "quniform")
            return {"type": name, "low": low, "high": high, "q": q}
        if integer:  # Ray's randint and lograndint exclude upper, as Rung's
            return {"type": "lograndint" if log else "randint", "low": low, "high": high}
        return {"type": "loguniform" if log else "uniform", "low": low, "high": high}
    raise ValueError(f"{path}: Ray domain {type(obj).__name__} has no Rung domain")


def _is_eval(value: Any) -> bool:
    return isinstance(value, Mapping) and list(value) == ["eval"]


def _ray_value(value: Any, path: str, in_branch: bool = False) -> Any:
    """One value of a param_space; in_branch: inside a conditional choice's
    branch, where rungd takes no grid (a constant dict there becomes a
    branch of its own, whose keys the config then has)."""
    if _is_eval(value):
        raise ValueError(f"{path}: Ray's {{\"eval\": ...}} (a Python expression evaluated "
                         "for each trial) is not supported: rungd samples configs itself and "
                         "runs no code of the driver; use a domain of rung.search, or compute "
                         "the value in the trainable from the others")
    if in_branch and (_is_grid_search(value) or (_is_api_domain(value)
                                                 and value.get("type") == "grid")):
        raise ValueError(f"{path}: grid_search inside a choice of dicts is not supported: "
                         "the grid searcher enumerates the grids of the whole space")
    if _is_api_domain(value):
        if value.get("type") == "choice" and isinstance(value.get("values"), (list, tuple)) \
                and set(value) == {"type", "values"}:
            return _choice(list(value["values"]), f"{path}.values")
        inner = _find_domain({k: v for k, v in value.items() if k != "type"}, path)
        if inner:
            raise ValueError(f"{inner}: a domain inside a {value.get('type')} domain is not "
                             "supported")
        return _json_constant(dict(value), path)
    if _is_grid_search(value):
        values = value["grid_search"]
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError(f"{path}.grid_search: must be a non-empty list, not "
                             f"{_describe(values)}")
        inner = _find_domain(list(values), f"{path}.grid_search")
        if inner:
            raise ValueError(f"{inner}: a domain inside grid_search is not supported")
        return {"type": "grid", "values": _json_constant(list(values), f"{path}.grid_search")}
    if _is_ray_domain(value):
        return _ray_domain(value, path)
    if isinstance(value, Mapping):
        if not _find_domain(value, path):
            # A dict of constants is the constant it is in Ray: the API
            # writes it as a grid of one value, or in a branch (which holds
            # no grid) as a branch of its own.
            if in_branch and value:
                return {"type": "choice", "values": [_ray_branch(value, path)]}
            return {"type": "grid", "values": [_json_constant(value, path)]}
        if "type" in value:
            # A sub-space may not have a key "type" (it would read as a
            # domain); a choice of one branch holds the same parameters.
            if _find_grid(value):
                raise ValueError(f"{path}.type: a nested dict with a key \"type\" and a "
                                 "grid_search inside has no Rung form (Rung reads such a dict "
                                 "as a domain); rename the key")
            return {"type": "choice", "values": [_ray_branch(value, f"{path}")]}
        return _ray_scope(value, path, in_branch)
    if isinstance(value, (list, tuple)):
        inner = _find_domain(value, path)
        if inner:
            raise ValueError(f"{inner}: a domain inside a list is not supported")
    return _json_constant(value, path)


def _find_grid(value: Any) -> bool:
    if _is_grid_search(value) or (_is_api_domain(value) and value.get("type") == "grid"):
        return True
    if _is_ray_domain(value) and "Grid" in _class_names(getattr(value, "sampler", None)):
        return True
    if isinstance(value, Mapping):
        return any(_find_grid(v) for v in value.values())
    return False


def from_ray_param_space(space: Mapping[str, Any]) -> dict:
    """A Ray Tune `param_space` as Rung's `search_space` (the module
    docstring says how each value maps). ValueError naming the parameter
    (with its path inside nested dicts) for what Rung cannot express."""
    if not isinstance(space, Mapping):
        raise ValueError(f"param_space: must be a mapping of parameter names, not "
                         f"{_describe(space)}")
    out: dict[str, Any] = {}
    for name, value in space.items():
        if not isinstance(name, str):
            raise ValueError(f"param_space: parameter names must be strings, not "
                             f"{_describe(name)}")
        out[name] = _ray_value(value, name)
    return out
