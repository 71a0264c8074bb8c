"""Search space helpers with Ray Tune's names.

Each returns the domain as the REST API spells it (docs/api.md,
"search_space"), so a Ray Tune param_space ports by changing one import:
`from rung import search as tune`. The daemon checks every domain when the
experiment is submitted and names the field at fault; these helpers only
build the JSON.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "randint",
    "qrandint",
    "lograndint",
    "qlograndint",
    "choice",
    "grid_search",
    "normal",
    "randn",
    "qnormal",
    "qrandn",
]

Domain = dict


def uniform(lower: float, upper: float) -> Domain:
    """A float in [lower, upper)."""
    return {"type": "uniform", "low": lower, "high": upper}


def quniform(lower: float, upper: float, q: float) -> Domain:
    """round(x / q) * q for x uniform, within [lower, upper]."""
    return {"type": "quniform", "low": lower, "high": upper, "q": q}


def loguniform(lower: float, upper: float) -> Domain:
    """A float, uniform in log space; lower > 0."""
    return {"type": "loguniform", "low": lower, "high": upper}


def qloguniform(lower: float, upper: float, q: float) -> Domain:
    """A log-uniform float rounded to a multiple of q."""
    return {"type": "qloguniform", "low": lower, "high": upper, "q": q}


def randint(lower: int, upper: int) -> Domain:
    """An integer in [lower, upper): the upper bound is excluded, as in Ray."""
    return {"type": "randint", "low": lower, "high": upper}


def qrandint(lower: int, upper: int, q: int = 1) -> Domain:
    """An integer multiple of q in [lower, upper], as Ray draws it: for
    q > 1 both bounds are included; with q == 1 Ray does not quantize and
    draws as randint, upper excluded (qrandint(40, 1000) never gives 1000)."""
    if q == 1:
        return randint(lower, upper)
    return {"type": "qrandint", "low": lower, "high": upper, "q": q}


def lograndint(lower: int, upper: int) -> Domain:
    """An integer, log-uniform, in [lower, upper)."""
    return {"type": "lograndint", "low": lower, "high": upper}


def qlograndint(lower: int, upper: int, q: int) -> Domain:
    """An integer multiple of q, log-uniform, in [lower, upper], as Ray
    draws it: for q > 1 both bounds are included; with q == 1 Ray does not
    quantize and draws as lograndint, upper excluded."""
    if q == 1:
        return lograndint(lower, upper)
    return {"type": "qlograndint", "low": lower, "high": upper, "q": q}


def choice(categories: Sequence[Any]) -> Domain:
    """One of the values (numbers, strings, booleans)."""
    return {"type": "choice", "values": list(categories)}


def grid_search(values: Sequence[Any]) -> Domain:
    """Every value, enumerated: the grid dimensions form a cartesian product
    that repeats num_samples times, as Ray's grid_search."""
    return {"type": "grid", "values": list(values)}


def normal(mean: float = 0.0, sd: float = 1.0) -> Domain:
    """A normally distributed float, N(mean, sd**2): the API's "normal"."""
    return {"type": "normal", "mean": mean, "sd": sd}


def randn(mean: float = 0.0, sd: float = 1.0) -> Domain:
    """Ray's name for normal: the API spells it "normal"."""
    return normal(mean, sd)


def qnormal(mean: float, sd: float, q: float) -> Domain:
    """round(x / q) * q for a normal x: the API's "qnormal"."""
    return {"type": "qnormal", "mean": mean, "sd": sd, "q": q}


def qrandn(mean: float, sd: float, q: float) -> Domain:
    """Ray's name for qnormal: the API spells it "qnormal"."""
    return qnormal(mean, sd, q)
