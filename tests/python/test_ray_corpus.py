"""The shared corpus of Ray Tune param_spaces (tests/data/ray/param_spaces.json):
each case's space, built with Ray's domain classes (the stand-ins of
test_convert.py, with Ray's class names and attributes), converts to the
expected search_space, or is refused with the expected message, which
starts with the parameter's path. With RUNGD set (ctest sets it), a real
rungd accepts every converted space and draws configs inside it.

The corpus is the Python client's alone: a Ray param_space is Python
objects, which the C client never sees (it reads the API's JSON)."""

import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

from rung.convert import from_ray_param_space  # noqa: E402
from test_convert import (Categorical, Float, Function, Integer, _LogUniform,  # noqa: E402
                          _Normal, _Uniform, ray_like)

CORPUS = os.path.join(ROOT, "tests", "data", "ray", "param_spaces.json")


def ray_call(name: str, args: list):
    """What Ray's tune.<name>(*args) returns (ray/tune/search/sample.py)."""
    if name == "uniform":
        return ray_like(Float(*args[:2]), _Uniform())
    if name == "quniform":
        return ray_like(Float(*args[:2]), _Uniform(), args[2])
    if name == "loguniform":
        return ray_like(Float(*args[:2]), _LogUniform())
    if name == "qloguniform":
        return ray_like(Float(*args[:2]), _LogUniform(), args[2])
    if name == "randn":
        return ray_like(Float(None, None), _Normal(*args))
    if name == "qrandn":
        return ray_like(Float(None, None), _Normal(*args[:2]), args[2])
    if name == "randint":
        return ray_like(Integer(*args[:2]), _Uniform())
    if name == "qrandint":
        return ray_like(Integer(*args[:2]), _Uniform(), args[2] if len(args) > 2 else 1)
    if name == "lograndint":
        return ray_like(Integer(*args[:2]), _LogUniform())
    if name == "qlograndint":
        return ray_like(Integer(*args[:2]), _LogUniform(), args[2])
    if name == "choice":
        return ray_like(Categorical([build(v) for v in args[0]]), _Uniform())
    if name == "grid_search":
        return {"grid_search": args[0]}
    if name == "sample_from":
        return ray_like(Function(lambda spec: 1))
    raise KeyError(name)


def build(value):
    if isinstance(value, dict):
        if set(value) == {"tune", "args"}:
            return ray_call(value["tune"], value["args"])
        return {k: build(v) for k, v in value.items()}
    if isinstance(value, list):
        return [build(v) for v in value]
    return value


def load_cases() -> list:
    with open(CORPUS, encoding="utf-8") as f:
        return json.load(f)["cases"]


class RayCorpusTest(unittest.TestCase):

    def test_every_case(self) -> None:
        cases = load_cases()
        self.assertGreaterEqual(len(cases), 15)
        for case in cases:
            with self.subTest(case=case["name"]):
                space = build(case["space"])
                if "error" in case:
                    with self.assertRaises(ValueError) as ctx:
                        from_ray_param_space(space)
                    self.assertTrue(str(ctx.exception).startswith(case["error"]),
                                    str(ctx.exception))
                else:
                    self.assertEqual(from_ray_param_space(space), case["expected"])

    @unittest.skipUnless(os.environ.get("RUNGD"), "RUNGD is not set (ctest sets it to the built "
                         "rungd): the converted spaces are not submitted")
    def test_rungd_takes_every_converted_space(self) -> None:
        sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
        import rungd_harness as h

        folder = tempfile.mkdtemp(prefix="rung-ray-corpus-")
        daemon = h.Daemon(folder).start()
        try:
            for case in load_cases():
                if "error" in case:
                    continue
                with self.subTest(case=case["name"]):
                    exp = daemon.create_experiment(h.spec(search_space=case["expected"],
                                                          num_samples=3))
                    # Trials are made by the proposer thread, soon after.
                    n = exp["total_trials"]
                    self.assertGreaterEqual(n, 3)
                    trials = h.wait_until(lambda: (lambda t: t if len(t) == n else None)(
                        daemon.all_trials(exp["id"])), 30, "the trials of " + case["name"])
                    for t in trials:
                        self.assertTrue(t["config"])
        finally:
            daemon.stop()
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
