"""Integration tests of rung-train, the built-in trainer, as a program and as
the `builtin` trainable of a real experiment.

- Bad configs exit with status 2 and an error naming the field.
- A short run prints one `@rung` line per epoch with the promised metrics,
  and says which OpenBLAS kernel it runs.
- SIGTERM ends a run after the step in progress, with status 143.
- The issue's accuracy check: an MLP 784-512-256-10 trained 10 epochs on
  Fashion-MNIST (SGD momentum 0.9, lr 0.05, batch 256) reaches test accuracy
  >= 0.875 (with val_samples 0 the reported val_* metrics are the test set's).
- rungd + rung-worker run an experiment of the builtin trainable with random
  search and ASHA to completion, some trials stopped at a rung.
"""

import json
import os
import re
import signal
import subprocess
import time

import worker_harness as wh


def train_path():
    return os.path.join(os.path.dirname(wh.worker_path()), "rung-train")


def reports(stdout):
    out = []
    for line in stdout.splitlines():
        if line.startswith("@rung "):
            out.append(json.loads(line[len("@rung "):]))
    return out


class Program(wh.WorkerTestCase):

    def run_train(self, config, timeout=120, env=None, cwd=None):
        e = dict(os.environ)
        e.pop("RUNG_CONFIG", None)
        e.pop("RUNG_TRIAL_DIR", None)
        e.update(env or {})
        return subprocess.run([train_path(), "--config", json.dumps(config)],
                              capture_output=True, text=True, timeout=timeout, env=e,
                              cwd=cwd or self.tmp)

    def test_bad_configs_name_the_field(self):
        cases = [
            ({"lr": -1}, "config.lr"),
            ({"learning_rate": 0.1}, "config.learning_rate"),
            ({"optimizer": "adam"}, "config.optimizer"),
            ({"hidden": [512, 0]}, "config.hidden[1]"),
            ({"hidden": 64, "layers": 99}, "config.layers"),
            ({"batch_size": 2.5}, "config.batch_size"),
            ({"dropout": 1.0}, "config.dropout"),
            ({"epochs": 0}, "config.epochs"),
            ({"precision": "fp8"}, "config.precision"),
            ({"ranks": 4, "batch_size": 2}, "config.batch_size"),
        ]
        for config, field in cases:
            r = self.run_train(config, timeout=30)
            self.assertEqual(r.returncode, 2, (config, r.stderr))
            self.assertIn(field, r.stderr, config)
            self.assertEqual(reports(r.stdout), [])
        r = subprocess.run([train_path(), "--config", "{not json"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not JSON", r.stderr)

    def test_short_run_reports_every_epoch(self):
        r = self.run_train({"epochs": 2, "train_samples": 3000, "hidden": [64],
                            "batch_size": 100, "seed": 3})
        self.assertEqual(r.returncode, 0, r.stderr)
        got = reports(r.stdout)
        self.assertEqual([g["step"] for g in got], [1, 2])
        for g in got:
            for key in ("train_loss", "val_loss", "val_acc", "epoch_s", "samples_per_s"):
                self.assertIn(key, g)
            self.assertGreater(g["val_acc"], 0.5)
            self.assertGreater(g["samples_per_s"], 0)
        self.assertLess(got[1]["train_loss"], got[0]["train_loss"])
        # The kernel is named, and picked from the CPU unless the user chose.
        self.assertRegex(r.stderr, r"OpenBLAS core \S+ \((picked from cpuid|OpenBLAS's own "
                                   r"choice|OPENBLAS_CORETYPE)\)")
        # The same seed gives the same run.
        again = reports(self.run_train({"epochs": 2, "train_samples": 3000, "hidden": [64],
                                        "batch_size": 100, "seed": 3}).stdout)
        self.assertEqual([g["val_loss"] for g in again], [g["val_loss"] for g in got])

    def test_resume_without_its_checkpoint_starts_over(self):
        # A promoted trial that lands where its checkpoint is not (another
        # worker) starts over instead of failing; the one that is there is
        # resumed from.
        trial_dir = os.path.join(self.tmp, "trial")
        os.makedirs(trial_dir)
        config = {"epochs": 3, "train_samples": 1000, "hidden": [16], "batch_size": 100,
                  "seed": 4}
        r = self.run_train(config, env={"RUNG_TRIAL_DIR": trial_dir, "RUNG_RESUME_STEP": "2"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no checkpoint of epoch 2 here: starting over", r.stderr)
        self.assertEqual([g["step"] for g in reports(r.stdout)], [1, 2, 3])
        os.unlink(os.path.join(trial_dir, "ckpt-3.bin"))
        with open(os.path.join(trial_dir, "ckpt-3.bin"), "wb") as f:
            f.write(b"not a checkpoint")
        r = self.run_train(config, env={"RUNG_TRIAL_DIR": trial_dir, "RUNG_RESUME_STEP": "3"})
        self.assertEqual(r.returncode, 2, r.stderr)  # there but corrupt: an error, named
        self.assertIn("ckpt-3.bin", r.stderr)

    def test_sigterm_finishes_the_step_and_exits_143(self):
        e = dict(os.environ)
        e.pop("RUNG_CONFIG", None)
        p = subprocess.Popen([train_path(), "--config",
                              json.dumps({"epochs": 50, "batch_size": 64})],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                             cwd=self.tmp)
        time.sleep(3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 143, err)
        self.assertLess(time.monotonic() - t0, 5.0)
        self.assertIn("stopped by a signal", err)

    def test_fashion_mnist_784_512_256_10_reaches_0_875(self):
        r = self.run_train({"hidden": [512, 256], "optimizer": "sgd", "momentum": 0.9,
                            "lr": 0.05, "batch_size": 256, "epochs": 10, "val_samples": 0,
                            "seed": 0}, timeout=900)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = reports(r.stdout)
        self.assertEqual(len(got), 10)
        print("test accuracy by epoch: %s; %.0f samples/s"
              % ([round(g["val_acc"], 4) for g in got], got[-1]["samples_per_s"]))
        self.assertGreaterEqual(got[-1]["val_acc"], 0.875)


class Builtin(wh.WorkerTestCase):

    def test_random_and_asha_experiment_of_the_builtin_trainable(self):
        d = self.daemon()
        spec = {
            "name": "fmnist-builtin", "metric": "val_loss", "mode": "min",
            "search_space": {
                "lr": {"type": "loguniform", "low": 0.005, "high": 0.3},
                "hidden": {"type": "choice", "values": [32, 64]},
                "batch_size": 128, "epochs": 9, "train_samples": 2000, "val_samples": 500},
            "searcher": {"type": "random", "seed": 4},
            "scheduler": {"type": "asha", "max_t": 9, "grace_period": 1,
                          "reduction_factor": 3},
            "num_samples": 8, "max_concurrent_trials": 2,
            "trainable": {"type": "builtin", "model": "mlp", "dataset": "fashion-mnist"}}
        eid = d.create_experiment(spec)["id"]
        w = self.worker(d, "trainer", cpu_slots=2, once=True)
        codes = self.wait_workers_exit([w], 200)
        self.assertEqual(codes, [0], self.explain(d, w))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        c = exp["counts"]
        self.assertEqual(c["completed"] + c["stopped"], 8, c)
        self.assertGreater(c["stopped"], 0, c)
        self.assertEqual(c["failed"], 0, self.explain(d, w))
        for t in d.all_trials(eid):
            steps = [m["step"] for m in d.metrics_of(t["id"])]
            self.assertEqual(steps, list(range(1, len(steps) + 1)), t)
            if t["state"] == "completed":
                self.assertEqual(steps[-1], 9, t)
                self.assertGreater(t["last"]["val_acc"], 0.6, t)
            else:
                self.assertIn(t["rung"], (1, 3), t)
        self.assertLess(exp["best"]["value"], 0.8)

    def test_promoted_trials_resume_from_their_checkpoint(self):
        # ASHA's promote variant pauses trials at a rung; rung-train resumes
        # a promoted one from its checkpoint (RUNG_RESUME_STEP): its epochs
        # go on where they stopped, none is reported twice, and none fails.
        d = self.daemon()
        spec = {
            "name": "fmnist-promote", "metric": "val_loss", "mode": "min",
            "search_space": {
                "lr": {"type": "loguniform", "low": 0.005, "high": 0.3},
                "hidden": 32, "batch_size": 100, "epochs": 9, "train_samples": 1000,
                "val_samples": 300},
            "searcher": {"type": "random", "seed": 9},
            "scheduler": {"type": "asha", "max_t": 9, "grace_period": 1,
                          "reduction_factor": 3, "promote": True},
            "num_samples": 7, "max_concurrent_trials": 1,
            "trainable": {"type": "builtin", "model": "mlp", "dataset": "fashion-mnist"}}
        eid = d.create_experiment(spec)["id"]
        w = self.worker(d, "promoter", cpu_slots=1, once=True)
        codes = self.wait_workers_exit([w], 200)
        self.assertEqual(codes, [0], self.explain(d, w))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        self.assertEqual(exp["counts"]["failed"], 0, self.explain(d, w))
        self.assertGreater(exp["counts"]["completed"], 0, exp["counts"])
        resumed = 0
        for t in d.all_trials(eid):
            steps = [m["step"] for m in d.metrics_of(t["id"])]
            self.assertEqual(steps, list(range(1, len(steps) + 1)), t)
            err = os.path.join(w.workdir, "trials", str(t["id"]), "stderr.log")
            with open(err) as f:
                resumed += len(re.findall(r"resuming after epoch \d+", f.read()))
        self.assertGreater(resumed, 0, "no trial was resumed from a checkpoint")


if __name__ == "__main__":
    wh.main()
