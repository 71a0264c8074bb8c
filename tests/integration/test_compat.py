"""Integration tests of rung.compat (python/README.md, "Coming from Ray
Tune", "W&B scripts as trials"): Ray Tune and W&B scripts in their
documented shapes (tests/integration/compat/), with only their imports
changed, run on a real rungd and real rung-worker processes, and each
search's best config and metrics compared with the same search through
Rung's own API (compat/native.py) with the same searcher seed. The
trainables are deterministic and tiny, so the comparison is exact.

- a function trainable with checkpoints: its first attempt crashes, the
  retry resumes from train.get_checkpoint(); Result.checkpoint comes back;
- PBT (synch) with hyperparam_mutations, resuming from checkpoints;
- ASHA over grid_search x num_samples with a nested param_space;
- restore: the driver is killed (SIGKILL) mid-run, Tuner.restore(path)
  waits for the experiment rungd kept running;
- a W&B function driven by wandb.sweep / wandb.agent, and a W&B script
  run unchanged under the stand-in.
"""

import json
import os
import signal
import subprocess
import sys

import rungd_harness as h
import worker_harness as wh

PYTHON_DIR = os.path.join(wh.REPO_ROOT, "python")
COMPAT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat")
sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, COMPAT_DIR)

import rung  # noqa: E402
from rung.compat import tune  # noqa: E402
from rung.compat import wandb as cwandb  # noqa: E402
from rung.compat.train import FailureConfig, RunConfig  # noqa: E402
import native  # noqa: E402
import ray_asha  # noqa: E402
import ray_checkpoint  # noqa: E402
import ray_pbt  # noqa: E402
import ray_restore  # noqa: E402
import wandb_train  # noqa: E402

WAIT_S = 60


def _nested(flat):
    from rung.compat._space import nest

    return nest(flat, {"model": {}})


class CompatCase(wh.WorkerTestCase):

    def setUp(self):
        super().setUp()
        self.d = self.daemon()
        self.w = self.worker(self.d, "compat", cpu_slots=4)
        self.client = rung.Client(self.d.url)
        # Ray and W&B scripts pass no client: rung.Client() reads RUNG_SERVER.
        os.environ["RUNG_SERVER"] = self.d.url
        self.storage = os.path.join(self.tmp, "results")

    def native(self, fn, space, metric, mode, **kw):
        # The API's own domains as the spec's search_space (a nested one too).
        exp = rung.Experiment(trainable=fn, search_space=space, metric=metric, mode=mode,
                              client=self.client, **kw).submit()
        final = exp.wait(progress=False, poll_s=0.2, timeout=WAIT_S)
        self.assertEqual(final["state"], "completed", self.explain(self.d, self.w))
        return exp

    def by_number(self, exp):
        return {t["number"]: t for t in exp.trials()}

    def test_checkpoints_retry_and_result_checkpoint(self):
        space = {"x": tune.uniform(0, 1), "crash": tune.grid_search([False, True])}
        grid = tune.Tuner(
            ray_checkpoint.train_fn, param_space=space,
            tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=2,
                                        search_alg=tune.BasicVariantGenerator(random_state=5)),
            run_config=RunConfig(name="ckpt", storage_path=self.storage,
                                 failure_config=FailureConfig(max_failures=1)),
            rung_spec={"keep_artifacts": "all"}).fit()
        self.assertEqual(len(grid), 4)
        self.assertEqual(grid.num_errors, 0, [str(e) for e in grid.errors])
        exp = self.native(native.checkpoint_native,
                          {"x": rung.search.uniform(0, 1),
                           "crash": rung.search.grid_search([False, True])},
                          "loss", "min", num_samples=2, searcher={"type": "random", "seed": 5})
        nat = self.by_number(exp)
        for r in grid:
            t = nat[r._trial["number"]]
            self.assertEqual(r.config, t["config"])
            self.assertEqual(r.metrics["training_iteration"], 6)
            self.assertAlmostEqual(r.metrics["total"], t["last"]["total"], places=12)
            self.assertAlmostEqual(r.metrics["loss"], t["last"]["loss"], places=12)
            # The crashing trials failed once and went on from iteration 3.
            self.assertEqual(r._trial["attempt"], 2 if r.config["crash"] else 1)
        best = grid.get_best_result()
        nbest = exp.best(scope="last")
        self.assertEqual(best.config, nbest.config)
        self.assertAlmostEqual(best.metrics["loss"], nbest.value, places=12)
        # Its latest checkpoint came back from rungd.
        with best.checkpoint.as_directory() as d:
            with open(os.path.join(d, "state.json")) as f:
                state = json.load(f)
        self.assertEqual(state["i"], 6)
        self.assertAlmostEqual(state["total"], best.metrics["total"], places=12)
        with open(os.path.join(self.storage, "ckpt", tune.STATE_FILE)) as f:
            self.assertEqual(json.load(f)["experiment_id"], grid._exp.id)

    def test_pbt_with_hyperparam_mutations(self):
        pbt = tune.PopulationBasedTraining(
            time_attr="training_iteration", perturbation_interval=2,
            hyperparam_mutations={"lr": tune.uniform(0.05, 0.6)}, synch=True)
        grid = tune.Tuner(
            ray_pbt.pbt_fn, param_space={"lr": tune.uniform(0.05, 0.6)},
            tune_config=tune.TuneConfig(metric="score", mode="max", num_samples=4,
                                        scheduler=pbt,
                                        search_alg=tune.BasicVariantGenerator(random_state=3)),
            run_config=RunConfig(name="pbt", storage_path=self.storage)).fit()
        self.assertEqual(grid.num_errors, 0, [str(e) for e in grid.errors])
        spec = grid.experiment["scheduler"]
        self.assertEqual((spec["type"], spec["perturbation_interval"], spec["synch"]),
                         ("pbt", 2, True))
        exp = self.native(native.pbt_native, {"lr": rung.search.uniform(0.05, 0.6)},
                          "score", "max", num_samples=4, searcher={"type": "random", "seed": 3},
                          scheduler=spec)
        nat = self.by_number(exp)
        exploits = 0
        for r in grid:
            t = nat[r._trial["number"]]
            self.assertEqual(r.config, t["config"])
            self.assertAlmostEqual(r.metrics["score"], t["last"]["score"], places=12)
            self.assertEqual([x["donor"] - grid[0]._trial["id"] for x in r._trial["lineage"]],
                             [x["donor"] - exp.trials()[0]["id"] for x in t["lineage"]])
            exploits += len(r._trial["lineage"])
        self.assertGreater(exploits, 0, "no exploit happened: the test proves nothing")
        best = grid.get_best_result()
        self.assertEqual(best.config, exp.best(scope="last").config)
        self.assertAlmostEqual(best.metrics["score"], exp.best(scope="last").value, places=12)

    def test_asha_grid_times_samples_nested_space(self):
        space = {"kind": tune.grid_search(["low", "high"]),
                 "model": {"x": tune.uniform(0, 1), "steps": 9}}
        asha = tune.ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3)
        grid = tune.Tuner(
            ray_asha.asha_fn, param_space=space,
            tune_config=tune.TuneConfig(
                metric="loss", mode="min", num_samples=3, scheduler=asha,
                search_alg=tune.ConcurrencyLimiter(
                    tune.BasicVariantGenerator(random_state=21), max_concurrent=1)),
            run_config=RunConfig(name="asha", storage_path=self.storage)).fit()
        self.assertEqual(len(grid), 6)
        sched = grid.experiment["scheduler"]
        self.assertEqual((sched["type"], sched["time_attr"], sched["max_t"]), ("asha", "step", 9))
        exp = self.native(native.asha_native,
                          {"kind": rung.search.grid_search(["low", "high"]),
                           "model": {"x": rung.search.uniform(0, 1), "steps": 9}},
                          "loss", "min", num_samples=3, searcher={"type": "random", "seed": 21},
                          scheduler=sched, max_concurrent_trials=1)
        nat = self.by_number(exp)
        stopped = 0
        for r in grid:
            t = nat[r._trial["number"]]
            self.assertEqual(r.config, _nested(t["config"]))
            self.assertIsInstance(r.config["model"]["x"], float)
            self.assertEqual((r._trial["state"], r.metrics["training_iteration"]),
                             (t["state"], t["step"]))
            self.assertAlmostEqual(r.metrics["loss"], t["last"]["loss"], places=12)
            stopped += r._trial["state"] == "stopped"
        self.assertGreater(stopped, 0, "ASHA stopped nothing: the test proves nothing")
        for scope in ("last", "all"):
            best = grid.get_best_result(scope=scope)
            nbest = exp.best(scope=scope)
            self.assertEqual(best.config, _nested(nbest.config), scope)
        if _has_pandas():
            df = grid.get_dataframe()
            self.assertEqual(sorted(df["config/kind"]), ["high"] * 3 + ["low"] * 3)
            self.assertIn("config/model/x", df.columns)

    def test_a_notebook_function_with_parameters(self):
        # A notebook cell's function (it lives in __main__, in no file) with
        # tune.with_parameters: both travel by value in the upload.
        # Its reports carry Ray's done (True at iteration 2 ends the trial
        # completed, not at 9) and a string, which are the trial's info.
        cell = ("from rung.compat import tune\n"
                "def train_nb(config, data):\n"
                "    for i in range(1, 10):\n"
                "        tune.report({'loss': (config['m']['x'] - data['target']) ** 2 / i,\n"
                "                     'phase': 'train', 'done': i == 2})\n")
        ns = {"__name__": "__main__"}
        exec(compile(cell, "<ipython-input-7-0a1b2c>", "exec"), ns)
        grid = tune.Tuner(
            tune.with_parameters(ns["train_nb"], data={"target": 0.3}),
            param_space={"m": {"x": tune.grid_search([0.1, 0.3, 0.9])}},
            tune_config=tune.TuneConfig(metric="loss", mode="min"),
            run_config=RunConfig(name="nb", storage_path=self.storage)).fit()
        self.assertEqual(len(grid), 3)
        self.assertEqual(grid.num_errors, 0, self.explain(self.d, self.w))
        best = grid.get_best_result()
        self.assertEqual(best.config, {"m": {"x": 0.3}})
        self.assertEqual(best.metrics["loss"], 0.0)
        self.assertEqual(best.metrics["training_iteration"], 2)
        for r in grid:
            self.assertEqual(r._trial["state"], "completed")
            self.assertEqual(r._trial["step"], 2)
            self.assertEqual(r._trial["info"], {"phase": "train", "done": True})
        self.assertFalse(os.path.exists(os.path.join(self.storage, "nb", "with_parameters.pkl")))

    def test_restore_after_the_driver_is_killed(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON_DIR, COMPAT_DIR]),
                   RUNG_SERVER=self.d.url)
        env[wh.TAG_VAR] = self.tag
        with open(os.path.join(self.tmp, "driver.log"), "wb") as log:
            driver = subprocess.Popen([sys.executable,
                                       os.path.join(COMPAT_DIR, "ray_restore.py"), self.storage],
                                      env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        path = os.path.join(self.storage, "restore")
        state_file = os.path.join(path, tune.STATE_FILE)
        try:
            h.wait_until(lambda: os.path.exists(state_file), 30, "the driver's state file")
            with open(state_file) as f:
                eid = json.load(f)["experiment_id"]
            h.wait_until(lambda: (self.client.get_experiment(eid)["counts"].get("completed", 0)
                                  >= 1), 30, "a first completed trial")
        finally:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(10)
        self.assertNotEqual(self.client.get_experiment(eid)["state"], "completed",
                            "the experiment ended before the driver was killed")
        self.assertTrue(tune.Tuner.can_restore(path))
        self.assertFalse(tune.Tuner.can_restore(os.path.join(self.storage, "nothing")))
        grid = tune.Tuner.restore(path, trainable=ray_restore.slow_fn).fit()
        self.assertEqual(grid._exp.id, eid)
        self.assertEqual(len(grid), 6)
        self.assertEqual(grid.num_errors, 0)
        exp = self.native(native.restore_native, {"x": rung.search.uniform(0, 1)}, "loss", "min",
                          num_samples=6, searcher={"type": "random", "seed": 11})
        best = grid.get_best_result()
        self.assertEqual(best.config, exp.best(scope="last").config)
        self.assertAlmostEqual(best.metrics["loss"], exp.best(scope="last").value, places=12)
        self.assertEqual(best.metrics["training_iteration"], 4)

    def test_wandb_agent_and_script(self):
        sweep_id = cwandb.sweep(wandb_train.SWEEP, project="compat")
        exp = cwandb.agent(sweep_id, function=wandb_train.train, count=5)
        final = exp.refresh()
        self.assertEqual(final["state"], "completed", self.explain(self.d, self.w))
        self.assertEqual(final["best_scope"], "last")
        seed = final["searcher"]["seed"]
        nat = self.native(native.wandb_native, final["search_space"], "loss", "min",
                          num_samples=5, searcher={"type": "random", "seed": seed},
                          best_scope="last")
        best, nbest = exp.best(), nat.best()
        self.assertEqual(best.config, nbest.config)
        self.assertAlmostEqual(best.value, nbest.value, places=12)
        # Every step as W&B logged it, then the summary as the last report;
        # the string was dropped.
        got = self.client.trial_metrics(best.trial_id)
        want = self.client.trial_metrics(nbest.trial_id)
        self.assertEqual([(m["step"], m["metrics"]) for m in got],
                         [(m["step"], m["metrics"]) for m in want])
        self.assertEqual(len(got), 5)
        self.assertIn("best_loss", got[-1]["metrics"])
        # The same training as an unchanged script (`import wandb`).
        script = rung.Experiment(
            trainable=cwandb.trainable(os.path.join(COMPAT_DIR, "wandb_script.py")),
            param_space={"lr": 0.5, "layers": 2}, metric="loss", mode="min",
            client=self.client).submit()
        self.assertEqual(script.wait(progress=False, poll_s=0.2, timeout=WAIT_S)["state"],
                         "completed", self.explain(self.d, self.w))
        metrics = self.client.trial_metrics(script.trials()[0]["id"])
        self.assertEqual([m["step"] for m in metrics], [1, 2, 3, 4, 5, 6])
        self.assertAlmostEqual(metrics[0]["metrics"]["loss"], 0.01 + 0.2 + 1.0, places=12)
        self.assertEqual(metrics[4]["metrics"], {"extra": 1.0, "extra2": 2.0})
        self.assertEqual(metrics[5]["metrics"]["best_loss"], 0.0)
        # The same script through the API alone: "wandb_compat": true has
        # rung-worker put its stand-in first on PYTHONPATH (docs/api.md).
        api = self.client.create_experiment({
            "metric": "loss", "mode": "min", "search_space": {"lr": 0.5, "layers": 2},
            "trainable": {"type": "command", "wandb_compat": True,
                          "argv": [sys.executable, os.path.join(COMPAT_DIR, "wandb_script.py")]}})
        api_exp = rung.Experiment.attach(api["id"], client=self.client)
        self.assertEqual(api_exp.wait(progress=False, poll_s=0.2, timeout=WAIT_S)["state"],
                         "completed", self.explain(self.d, self.w))
        again = self.client.trial_metrics(api_exp.trials()[0]["id"])
        self.assertEqual([(m["step"], m["metrics"]) for m in again],
                         [(m["step"], m["metrics"]) for m in metrics])
        # With a container the field is refused by name.
        with self.assertRaises(rung.ApiError) as caught:
            self.client.create_experiment({
                "metric": "loss", "mode": "min", "search_space": {"lr": 0.5},
                "trainable": {"type": "command", "wandb_compat": True, "argv": ["python3"],
                              "container": {"image": "python:3"}}})
        self.assertEqual(caught.exception.field, "trainable.wandb_compat")


def _has_pandas():
    try:
        import pandas  # noqa: F401
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    wh.main()
