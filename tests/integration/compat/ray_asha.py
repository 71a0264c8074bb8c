"""ASHA over a grid_search times num_samples, with a nested param_space,
in Ray Tune's documented shape (the trainable reads the nested config)."""

from rung.compat import tune


def asha_fn(config):
    x = config["model"]["x"]
    offset = {"low": 0.0, "high": 0.5}[config["kind"]]
    for i in range(1, config["model"]["steps"] + 1):
        tune.report({"loss": (x - 0.3) ** 2 + offset + 1.0 / i})
