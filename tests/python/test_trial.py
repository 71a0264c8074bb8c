"""Unit tests of rung.trial (python/rung/trial.py): the `@rung` lines that
rung.report writes, and what config() and the folder helpers answer inside
and outside a worker. The line format is docs/api.md's "The line"; every
line written here must be one that rung-worker's parser accepts."""

import contextlib
import io
import json
import math
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))

import rung  # noqa: E402
from rung import trial  # noqa: E402


def captured(fn, *args, **kw):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args, **kw)
    return result, out.getvalue()


def parse(line):
    """The JSON object of an @rung line, with the protocol's bare NaN tokens."""
    assert line.startswith("@rung "), line
    return json.loads(line[len("@rung "):])


class ReportTest(unittest.TestCase):

    def setUp(self):
        trial._last_step = None
        patcher = mock.patch.dict(os.environ, {}, clear=False)
        patcher.start()
        self.addCleanup(patcher.stop)
        for var in ("RUNG_RESUME_STEP", "RUNG_CONFIG", "RUNG_TRIAL_DIR", "RUNG_TRIAL_ID",
                    "RUNG_KEEP_CHECKPOINTS_EVERY"):
            os.environ.pop(var, None)

    def test_one_line_flushed_with_counted_steps(self):
        step, out = captured(rung.report, loss=0.5, acc=0.9)
        self.assertEqual(step, 1)
        self.assertEqual(out, '@rung {"step":1,"loss":0.5,"acc":0.9}\n')
        self.assertEqual(captured(rung.report, loss=0.4)[0], 2)
        self.assertEqual(captured(rung.report, step=10, loss=0.3)[0], 10)
        self.assertEqual(captured(rung.report, loss=0.2)[1], '@rung {"step":11,"loss":0.2}\n')

    def test_steps_continue_from_the_resume_step(self):
        os.environ["RUNG_RESUME_STEP"] = "9"
        self.assertEqual(rung.resume_step(), 9)
        self.assertEqual(captured(rung.report, loss=1.0)[0], 10)

    def test_keep_checkpoint_follows_the_pbt_interval(self):
        self.assertFalse(rung.keep_checkpoint(4))
        os.environ["RUNG_KEEP_CHECKPOINTS_EVERY"] = "4"
        self.assertEqual([s for s in range(13) if rung.keep_checkpoint(s)], [4, 8, 12])

    def test_non_finite_values_use_the_protocols_tokens(self):
        _, out = captured(rung.report, a=math.nan, b=math.inf, c=-math.inf, d=3)
        self.assertEqual(out, '@rung {"step":1,"a":NaN,"b":Infinity,"c":-Infinity,"d":3}\n')

    def test_numpy_scalars_and_zero_d_arrays(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy is not installed")
        _, out = captured(rung.report, a=np.float32(0.25), b=np.int64(7), c=np.array(1.5),
                          d=np.float64("nan"), e=np.array([2.0]))
        self.assertEqual(out, '@rung {"step":1,"a":0.25,"b":7,"c":1.5,"d":NaN,"e":2.0}\n')
        with self.assertRaisesRegex(TypeError, "metric 'v' is an array of shape \\(3,\\)"):
            rung.report(v=np.zeros(3))

    def test_torch_scalars(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        _, out = captured(rung.report, loss=torch.tensor(0.5), n=torch.tensor(3))
        self.assertEqual(out, '@rung {"step":1,"loss":0.5,"n":3}\n')
        with self.assertRaisesRegex(TypeError, "metric 'w'"):
            rung.report(w=torch.ones(2, 2))

    def test_values_that_are_not_numbers_are_info(self):
        # docs/api.md, "The line": the worker sends them as the report's info.
        _, out = captured(rung.report, loss=0.5, phase="warmup", ok=True, v=None, h=[1.0, "a"],
                          o={"k": (1, 2)})
        self.assertEqual(out, '@rung {"step":1,"loss":0.5,"phase":"warmup","ok":true,"v":null,'
                              '"h":[1.0,"a"],"o":{"k":[1,2]}}\n')
        # Ray Tune's done; a line of info alone takes no step, as the worker counts.
        _, out = captured(rung.report, phase="train")
        self.assertEqual(out, '@rung {"step":2,"phase":"train"}\n')
        self.assertEqual(trial._last_step, 1)
        _, out = captured(rung.report, loss=0.4, done=True)
        self.assertEqual(out, '@rung {"step":2,"loss":0.4,"done":true}\n')
        self.assertEqual(parse(out.rstrip("\n"))["done"], True)

    def test_bad_values_raise_before_anything_is_printed(self):
        cases = [({"loss": 0.5, "acc": {1, 2}}, TypeError, "metric 'acc' is a set, not a number"),
                 ({"v": [object()]}, TypeError,
                  "metric 'v' is not a number and JSON cannot carry it"),
                 ({"v": object()}, TypeError, "metric 'v' is a object, not a number"),
                 ({"v": b"bytes"}, TypeError, "metric 'v' is a bytes"),
                 ({"s": "x" * 1023}, ValueError, "metric 's' is not a number and its 1025 bytes"),
                 ({f"s{i}": "x" * 1000 for i in range(5)}, ValueError,
                  "metric 's4': the report's info passes 4096 bytes"),
                 ({}, ValueError, "at least one metric"),
                 ({"x" * 65: 1}, ValueError, "1 to 64 bytes"),
                 ({"v": 2**64}, ValueError, "64-bit"),
                 ({f"m{i}": i for i in range(65)}, ValueError, "at most 64 metrics")]
        for metrics, error, text in cases:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), self.assertRaisesRegex(error, text):
                rung.report(**metrics)
            self.assertEqual(out.getvalue(), "", metrics)
        for step, text in [(-1, "step must be in"), (2**53 + 1, "step must be in"),
                           (1.5, "whole number"), ("3", "metric 'step' is a str")]:
            with self.assertRaisesRegex((ValueError, TypeError), text):
                rung.report(step=step, loss=1.0)
        self.assertEqual(captured(rung.report, step=3.0, loss=1.0)[1],
                         '@rung {"step":3,"loss":1.0}\n')
        self.assertEqual(trial._last_step, 3, "a refused report does not count a step")

    def test_every_line_is_one_the_worker_accepts(self):
        # The rules of docs/api.md's "The line" that a writer can break.
        _, out = captured(rung.report, **{"name.with-dots_1": 1e-300, "big": 1e300, "neg": -2})
        line = out.rstrip("\n")
        self.assertTrue(line.startswith("@rung {"))
        self.assertNotIn("\n", line)
        self.assertLessEqual(len(line.encode()), 65536)
        self.assertEqual(parse(line)["step"], 1)


class EnvironmentTest(unittest.TestCase):

    def setUp(self):
        patcher = mock.patch.dict(os.environ, {}, clear=False)
        patcher.start()
        self.addCleanup(patcher.stop)
        for var in ("RUNG_RESUME_STEP", "RUNG_CONFIG", "RUNG_TRIAL_DIR", "RUNG_TRIAL_ID",
                    "RUNG_KEEP_CHECKPOINTS_EVERY"):
            os.environ.pop(var, None)
        self.tmp = tempfile.mkdtemp()
        cwd = os.getcwd()
        os.chdir(self.tmp)
        self.addCleanup(os.chdir, cwd)

    def test_outside_a_worker_a_local_run(self):
        self.assertFalse(rung.in_worker())
        self.assertIsNone(rung.trial_id())
        self.assertEqual(rung.config(), {})
        self.assertEqual(rung.config({"lr": 0.1}), {"lr": 0.1})
        self.assertEqual(rung.resume_step(), 0)
        self.assertEqual(rung.trial_dir(), os.path.join(os.path.realpath(self.tmp), "rung-local"))
        self.assertTrue(os.path.isdir(rung.checkpoint_dir()))
        self.assertEqual(rung.checkpoint_dir(), os.path.join(rung.trial_dir(), "checkpoints"))

    def test_inside_a_worker_the_environment_it_set(self):
        folder = os.path.join(self.tmp, "trials", "17")
        os.environ.update({"RUNG_TRIAL_ID": "17", "RUNG_TRIAL_DIR": folder,
                           "RUNG_CONFIG": '{"lr": 0.01, "hidden": 64}', "RUNG_RESUME_STEP": "4"})
        self.assertTrue(rung.in_worker())
        self.assertEqual(rung.trial_id(), 17)
        self.assertEqual(rung.config({"lr": 0.1, "epochs": 3}),
                         {"lr": 0.01, "hidden": 64, "epochs": 3})
        self.assertEqual(rung.trial_dir(), folder)
        self.assertEqual(rung.checkpoint_dir(), os.path.join(folder, "checkpoints"))
        self.assertEqual(rung.resume_step(), 4)
        os.environ["RUNG_CONFIG"] = "[1, 2]"
        with self.assertRaisesRegex(ValueError, "RUNG_CONFIG"):
            rung.config()


class SearchAndSpecTest(unittest.TestCase):

    def test_helpers_build_the_apis_domains(self):
        s = rung.search
        self.assertEqual(s.uniform(0, 1), {"type": "uniform", "low": 0, "high": 1})
        self.assertEqual(s.qloguniform(1, 100, 5),
                         {"type": "qloguniform", "low": 1, "high": 100, "q": 5})
        # q == 1: Ray draws as randint (upper excluded), and so does rung.search.
        self.assertEqual(s.qrandint(0, 10), {"type": "randint", "low": 0, "high": 10})
        self.assertEqual(s.choice((1, "a")), {"type": "choice", "values": [1, "a"]})
        self.assertEqual(s.grid_search([1, 2]), {"type": "grid", "values": [1, 2]})
        self.assertEqual(s.normal(2, 0.5), {"type": "normal", "mean": 2, "sd": 0.5})

    def test_trainable_forms(self):
        from rung.experiment import trainable_spec

        self.assertEqual(trainable_spec(["python3", "t.py", "--lr={lr}"]),
                         {"type": "command", "argv": ["python3", "t.py", "--lr={lr}"]})
        self.assertEqual(trainable_spec("python3 t.py --x='a b'"),
                         {"type": "command", "argv": ["python3", "t.py", "--x=a b"]})
        self.assertEqual(trainable_spec({"type": "external"}), {"type": "external"})
        with self.assertRaisesRegex(ValueError, "top-level function"):
            trainable_spec(lambda config: None)
        with self.assertRaisesRegex(TypeError, "trainable"):
            trainable_spec(3)
        here = os.path.abspath(__file__)
        t = trainable_spec(here)
        self.assertEqual(t["argv"], [sys.executable, here])
        self.assertIn("PYTHONPATH", t["env"])

    def test_experiment_spec(self):
        exp = rung.Experiment(name="n", trainable=["x"], param_space={"lr": 0.1},
                              metric="loss", mode="max", searcher="bayes",
                              scheduler={"type": "asha", "max_t": 9}, num_samples=4,
                              max_concurrent_trials=2, stop={"patience": 3},
                              client=rung.Client("http://127.0.0.1:1"))
        self.assertEqual(exp.spec(), {
            "name": "n", "metric": "loss", "mode": "max", "search_space": {"lr": 0.1},
            "searcher": {"type": "bayes"}, "scheduler": {"type": "asha", "max_t": 9},
            "num_samples": 4, "max_concurrent_trials": 2, "stop": {"patience": 3},
            "trainable": {"type": "command", "argv": ["x"]}})
        with self.assertRaisesRegex(rung.RungError, "not been submitted"):
            exp.trials()


if __name__ == "__main__":
    unittest.main()


class NotebookTest(unittest.TestCase):
    """wait() in a Jupyter kernel: one progress line in the cell, shown once
    and updated in place as the experiment moves (IPython's display with a
    display_id); outside a kernel nothing is displayed."""

    class FakeClient:
        def __init__(self, states):
            self.states = list(states)

        def get_experiment(self, experiment_id):
            state, done = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            return {"id": experiment_id, "name": "nb", "state": state, "metric": "loss",
                    "mode": "min", "total_trials": 4, "counts": {"completed": done}}

    def test_wait_updates_one_line_in_the_cell(self) -> None:
        calls = []

        class Handle:
            def update(self, html):
                calls.append(("update", html.data))

        class HTML:
            def __init__(self, data):
                self.data = data

        def display(html, display_id=False):
            calls.append(("display", html.data, display_id))
            return Handle()

        ipython = mock.MagicMock()
        ipython.get_ipython.return_value = mock.MagicMock(kernel=object())
        ipython_display = mock.MagicMock(HTML=HTML, display=display)
        fakes = {"IPython": ipython, "IPython.display": ipython_display,
                 "ipykernel": mock.MagicMock()}
        client = self.FakeClient([("running", 1), ("running", 1), ("running", 3),
                                  ("completed", 4)])
        exp = rung.Experiment.attach(7, client=client)
        with mock.patch.dict(sys.modules, fakes):
            final = exp.wait(poll_s=0.0)
        self.assertEqual(final["state"], "completed")
        self.assertEqual([c[0] for c in calls], ["display", "update", "update"])
        self.assertIs(calls[0][2], True)
        self.assertIn("1/4", calls[0][1])
        self.assertIn("experiment 7 completed", calls[-1][1])
        self.assertTrue(calls[-1][1].startswith("<pre>"))
        # Outside a kernel: no display, and progress off on a non-terminal.
        calls.clear()
        exp = rung.Experiment.attach(7, client=self.FakeClient([("completed", 4)]))
        exp.wait(poll_s=0.0)
        self.assertEqual(calls, [])
