"""Unit tests of rung.compat (python/rung/compat; python/README.md, "Coming
from Ray Tune"): the spec a Tuner builds from Ray's objects, what is
refused and naming what, the nesting of flat configs, and the W&B
stand-in's report lines (run in a child process, as a trial). No daemon:
tests/integration/test_compat.py runs the same against rungd."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)

from rung.compat import tune  # noqa: E402
from rung.compat._space import nest, to_search_space, tree_of  # noqa: E402
from rung.compat.train import FailureConfig, RunConfig  # noqa: E402


def trainable(config):
    tune.report({"loss": config["x"]})


class TunerSpec(unittest.TestCase):

    def build(self, param_space=None, **tc):
        run_kw = tc.pop("run", {})
        with tempfile.TemporaryDirectory() as tmp:
            tuner = tune.Tuner(tc.pop("trainable", trainable),
                               param_space=param_space or {"x": tune.uniform(0, 1)},
                               tune_config=tune.TuneConfig(**tc),
                               run_config=RunConfig(name="t", storage_path=tmp, **run_kw))
            return tuner._build().spec()

    def test_asha_bayes_and_limits(self):
        spec = self.build(metric="loss", mode="min", num_samples=8, max_concurrent_trials=3,
                          time_budget_s=60,
                          scheduler=tune.ASHAScheduler(max_t=27, grace_period=3,
                                                       reduction_factor=3),
                          search_alg=tune.ConcurrencyLimiter(tune.BayesOptSearch(),
                                                             max_concurrent=2),
                          run={"failure_config": FailureConfig(max_failures=2)})
        self.assertEqual(spec["scheduler"], {"type": "asha", "time_attr": "step", "max_t": 27,
                                             "grace_period": 3, "reduction_factor": 3,
                                             "brackets": 1})
        self.assertEqual(spec["searcher"], {"type": "bayes", "seed": 42, "n_initial": 10})
        self.assertEqual(spec["max_concurrent_trials"], 2)
        self.assertEqual(spec["stop"], {"time_budget_s": 60})
        self.assertEqual((spec["max_failures"], spec["max_failed_trials"]), (2, 0))
        self.assertEqual(spec["trainable"]["argv"][1:4], ["-m", "rung.compat.run",
                                                          os.path.abspath(__file__)])

    def test_optuna_and_hyperopt_as_tpe(self):
        spec = self.build(metric="loss", mode="min", search_alg=tune.OptunaSearch(seed=7))
        self.assertEqual(spec["searcher"], {"type": "tpe", "seed": 7})
        spec = self.build(metric="loss", mode="min",
                          search_alg=tune.HyperOptSearch(n_initial_points=5))
        self.assertEqual(spec["searcher"], {"type": "tpe", "multivariate": False,
                                            "group": False, "n_initial": 5})

        # Optuna's samplers by their class and attributes (optuna's own
        # objects carry these; stand-ins keep the test free of optuna).
        class TPESampler:
            _multivariate, _group, _constant_liar, _n_startup_trials = False, False, True, 4

        class CmaEsSampler:
            _popsize, _restart_strategy = 12, "ipop"

        spec = self.build(metric="loss", mode="min",
                          search_alg=tune.OptunaSearch(sampler=TPESampler(), seed=1))
        self.assertEqual(spec["searcher"], {"type": "tpe", "seed": 1, "multivariate": False,
                                            "group": False, "constant_liar": True,
                                            "n_initial": 4})
        spec = self.build(metric="loss", mode="min",
                          search_alg=tune.OptunaSearch(sampler=CmaEsSampler()))
        self.assertEqual(spec["searcher"], {"type": "cmaes", "popsize": 12, "restart": "ipop"})

    def test_metric_from_the_scheduler_and_pbt_adds_missing_parameters(self):
        pbt = tune.PopulationBasedTraining(
            time_attr="training_iteration", metric="acc", mode="max", perturbation_interval=4,
            hyperparam_mutations={"lr": tune.loguniform(1e-4, 1e-1), "opt": {"m": [0.9, 0.99]}})
        spec = self.build({"x": 1, "opt": {"m": 0.9, "w": tune.uniform(0, 1)}}, scheduler=pbt)
        self.assertEqual((spec["metric"], spec["mode"]), ("acc", "max"))
        self.assertEqual(spec["scheduler"]["hyperparam_mutations"],
                         {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
                          "opt.m": [0.9, 0.99]})
        self.assertIn("lr", spec["search_space"])
        self.assertEqual(spec["search_space"]["opt"]["m"], 0.9)

    def test_stop_and_with_parameters_travel_in_the_environment(self):
        fn = tune.with_resources(tune.with_parameters(trainable, data=[1, 2]), {"cpu": 2, "gpu": 1})
        spec = self.build({"m": {"x": tune.uniform(0, 1)}}, trainable=fn, metric="loss",
                          mode="min", run={"stop": {"training_iteration": 5}})
        options = json.loads(spec["trainable"]["env"]["RUNG_COMPAT"])
        self.assertEqual(options["stop"], {"training_iteration": 5.0})
        self.assertEqual(options["tree"], {"m": {}})
        self.assertEqual(spec["resources_per_trial"], {"cpu": 2, "gpu": 1})
        # The function and its parameters travel by value in the upload
        # (cloudpickle), not through a file only this machine has.
        self.assertNotIn("params", options)
        self.assertEqual(spec["trainable"]["argv"][-3:],
                         ["rung.compat.run", "--pickled", "rung_trainable.pkl"])

    def refused(self, text, fn):
        with self.assertRaises((ValueError, TypeError)) as caught:
            fn()
        self.assertIn(text, str(caught.exception))

    def test_refusals_name_what_cannot_map(self):
        self.refused("hard_stop", lambda: self.build(
            metric="loss", mode="min", scheduler=tune.MedianStoppingRule(hard_stop=False)))
        self.refused("time_attr", lambda: self.build(
            metric="loss", mode="min",
            scheduler=tune.PopulationBasedTraining(hyperparam_mutations={"x": [1, 2]})))
        self.refused("perturbation_factors", lambda: self.build(
            metric="loss", mode="min", scheduler=tune.PopulationBasedTraining(
                time_attr="training_iteration", perturbation_factors=(2, 0.5),
                hyperparam_mutations={"x": [1]})))
        self.refused("sampler", lambda: self.build(
            metric="loss", mode="min", search_alg=tune.OptunaSearch(sampler=object())))
        self.refused("b.c: tune.sample_from", lambda: self.build(
            {"a": 1, "b": {"c": tune.sample_from(lambda spec: 1)}}, metric="loss", mode="min"))
        self.refused("['memory']", lambda: tune.with_resources(trainable, {"memory": 10}))
        self.refused("whole number", lambda: tune.with_resources(trainable, {"gpu": 0.5}))
        self.refused("Stopper", lambda: self.build(metric="loss", mode="min",
                                                   run={"stop": lambda i, r: False}))
        self.refused("class trainables", lambda: self.build(trainable=tune.Trainable,
                                                            metric="loss", mode="min"))
        self.refused("callbacks", lambda: RunConfig(callbacks=[object()]))
        self.refused("needs a mode", lambda: self.build(metric="loss"))
        self.refused("metric", lambda: self.build())
        self.refused("'bogus'", lambda: tune.TuneConfig(bogus=1))

    def test_ignored_knobs_say_so(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            tune.TuneConfig(reuse_actors=True)
        self.assertIn("reuse_actors", err.getvalue())


class Nesting(unittest.TestCase):

    def test_flat_configs_nest_by_the_space(self):
        space = to_search_space({
            "a.b": 1,  # a name with a dot, not a nesting
            "model": {"lr": tune.loguniform(1e-4, 1e-1), "layers": 2},
            "opt": tune.choice([{"name": "sgd", "m": tune.uniform(0, 1)},
                                {"name": "adam", "inner": {"b": tune.uniform(0.9, 0.99)}}]),
            "const": {"k": 1},
            "g": tune.grid_search([1, 2]),
        })
        self.assertEqual(space["g"], {"type": "grid", "values": [1, 2]})
        self.assertEqual(space["const"], {"type": "grid", "values": [{"k": 1}]})
        tree = tree_of(space)
        self.assertEqual(tree, {"model": {}, "opt": {"inner": {}}})
        flat = {"a.b": 1, "model.lr": 0.01, "model.layers": 2, "opt.name": "adam",
                "opt.inner.b": 0.95, "const": {"k": 1}, "g": 2}
        self.assertEqual(nest(flat, tree), {
            "a.b": 1, "model": {"lr": 0.01, "layers": 2},
            "opt": {"name": "adam", "inner": {"b": 0.95}}, "const": {"k": 1}, "g": 2})


UNGUARDED = """
from rung.compat import tune, wandb

def train_fn(config):
    tune.report({"loss": 1.0})

def wandb_fn():
    wandb.init()

tune.Tuner(train_fn, tune_config=tune.TuneConfig(metric="loss", mode="min")).fit()
wandb.agent(wandb.sweep({"method": "grid", "parameters": {"x": {"values": [1]}}}),
            function=wandb_fn)
raise SystemExit("not reached")
"""


class UnguardedDriver(unittest.TestCase):

    def test_the_runner_stops_at_the_drivers_call(self):
        # Ray's examples often call Tuner.fit() at the top level: the
        # worker's import of the file must stop there, not submit again.
        from rung.compat.run import load_function

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "unguarded_driver.py")
            with open(path, "w") as f:
                f.write(UNGUARDED)
            self.assertEqual(load_function(path, "train_fn").__name__, "train_fn")
            self.assertEqual(load_function(path, "wandb_fn").__name__, "wandb_fn")


SHIM_SCRIPT = """
import wandb
run = wandb.init(config={"lr": 0.1, "epochs": 2})
wandb.config.update({"lr": 9.0, "new": 1})
assert wandb.config.lr == 0.5 and wandb.config["new"] == 1 and wandb.run is run
wandb.log({"a": 1})                       # step 0
wandb.log({"b": 2}, commit=False)          # gathered into step 1
wandb.log({"c": 3, "img": wandb.Image(None), "nested": {"x": 4}})
wandb.log({"d": 4}, step=5)               # step 5: not committed yet
wandb.log({"e": 5}, step=3)               # below the current step: ignored
wandb.log({"f": 6}, step=6)               # commits step 5
run.summary["best"] = 0.5
"""


class WandbShim(unittest.TestCase):

    def test_steps_commits_summary_and_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "script.py")
            with open(path, "w") as f:
                f.write(SHIM_SCRIPT)
            env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR),
                       RUNG_CONFIG=json.dumps({"lr": 0.5}))
            out = subprocess.run([sys.executable, "-m", "rung.compat.wandb_run", path],
                                 env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [json.loads(x[len("@rung "):]) for x in out.stdout.splitlines()
                 if x.startswith("@rung ")]
        self.assertEqual(lines, [
            {"step": 1, "a": 1},
            {"step": 2, "b": 2, "c": 3, "nested.x": 4},
            {"step": 6, "d": 4},
            # finish() at exit: step 6's pending data, then the summary.
            {"step": 7, "f": 6},
            {"step": 8, "a": 1, "b": 2, "c": 3, "nested.x": 4, "d": 4, "f": 6, "best": 0.5},
        ])
        self.assertIn("'lr' is set by the trial's config", out.stderr)
        self.assertIn("'img' is a Image", out.stderr)


if __name__ == "__main__":
    unittest.main()
