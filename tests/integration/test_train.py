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
- Two rung-train processes as the two nodes of a gang (RUNG_NNODES,
  RUNG_NODE_RANK, MASTER_ADDR, MASTER_PORT on loopback) report, through node
  0 alone, the numbers of one process with two ranks; a node that does not
  come is named within RUNG_RDZV_TIMEOUT_S; a SIGTERM to one node stops both
  with status 143; wrong variables exit with status 2, naming them.
"""

import json
import math
import os
import re
import signal
import socket
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
            # The flat configs of conditional spaces (test_train_config has
            # the parsing itself): two keys of one field, a gap in the
            # per-layer widths, a layers that counts otherwise, both forms.
            ({"opt.lr": 0.1, "lr": 0.2}, "config.opt.lr and config.lr: both set lr"),
            ({"net.hidden_1": 64, "net.hidden_3": 32}, "config.net.hidden_3: hidden_2 is"),
            ({"net.layers": 2, "net.hidden_1": 64}, "config.net.layers: 2, but 1"),
            ({"hidden": [64], "net.hidden_1": 64}, "config.hidden and config.net.hidden_1"),
            ({"opt.momentum": 1}, "config.opt.momentum: must be"),
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

    def test_a_diverged_run_reports_nan_tokens(self):
        # printf's "-nan" is not JSON: the worker would refuse the report and
        # the divergence would not show. The protocol's tokens are NaN,
        # Infinity and -Infinity (docs/api.md, "Non-finite numbers").
        r = self.run_train({"epochs": 3, "train_samples": 1000, "hidden": [16],
                            "batch_size": 100, "lr": 100, "seed": 1})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("nan", r.stdout.replace("NaN", ""))
        got = reports(r.stdout)
        self.assertEqual([g["step"] for g in got], [1, 2, 3])
        self.assertTrue(any(math.isnan(g["train_loss"]) for g in got), r.stdout)

    def test_pbt_milestone_checkpoints_are_kept(self):
        # Under pbt other members may copy any milestone's checkpoint, even
        # after this run finished or resumed past it.
        trial_dir = os.path.join(self.tmp, "trial")
        os.makedirs(trial_dir)
        config = {"epochs": 5, "train_samples": 1000, "hidden": [16], "batch_size": 100,
                  "seed": 4}
        keep = {"RUNG_TRIAL_DIR": trial_dir, "RUNG_KEEP_CHECKPOINTS_EVERY": "2"}
        r = self.run_train(config, env=keep)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(trial_dir)), ["ckpt-2.bin", "ckpt-4.bin", "ckpt-5.bin"])
        r = self.run_train(config, env=dict(keep, RUNG_RESUME_STEP="4"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([g["step"] for g in reports(r.stdout)], [5])
        self.assertEqual(sorted(os.listdir(trial_dir)), ["ckpt-2.bin", "ckpt-4.bin", "ckpt-5.bin"])
        # Without the variable only the last stays, as before.
        r = self.run_train(config, env={"RUNG_TRIAL_DIR": trial_dir, "RUNG_RESUME_STEP": "4"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(trial_dir)), ["ckpt-5.bin"])

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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MultiNode(wh.WorkerTestCase):
    CONFIG = {"epochs": 2, "train_samples": 3000, "hidden": [64], "batch_size": 100,
              "seed": 3, "dropout": 0.1}

    def start_node(self, node, nnodes, port, config, **env):
        e = dict(os.environ)
        e.pop("RUNG_CONFIG", None)
        e.update({"RUNG_NNODES": str(nnodes), "RUNG_NODE_RANK": str(node),
                  "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                  "RUNG_TRIAL_DIR": os.path.join(self.tmp, "node%d" % node)})
        os.makedirs(e["RUNG_TRIAL_DIR"], exist_ok=True)
        e.update(env)
        return subprocess.Popen([train_path(), "--config", json.dumps(config)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=e, cwd=self.tmp)

    def test_two_nodes_report_what_two_ranks_do(self):
        port = free_port()
        # Node 1 first: it keeps trying until node 0 listens.
        n1 = self.start_node(1, 2, port, self.CONFIG)
        time.sleep(0.5)
        n0 = self.start_node(0, 2, port, self.CONFIG)
        out0, err0 = n0.communicate(timeout=120)
        out1, err1 = n1.communicate(timeout=120)
        self.assertEqual(n0.returncode, 0, err0)
        self.assertEqual(n1.returncode, 0, err1)
        self.assertEqual(reports(out1), [])  # only node 0 reports
        self.assertIn("node 1 of 2: every node arrived; 2 rank(s) in all", err1)
        got = reports(out0)
        self.assertEqual([g["step"] for g in got], [1, 2])
        one = subprocess.run([train_path(), "--config", json.dumps(self.CONFIG), "--ranks", "2"],
                             capture_output=True, text=True, timeout=120, cwd=self.tmp,
                             env={k: v for k, v in os.environ.items() if k != "RUNG_CONFIG"})
        self.assertEqual(one.returncode, 0, one.stderr)
        want = reports(one.stdout)
        for key in ("train_loss", "val_loss", "val_acc"):
            self.assertEqual([g[key] for g in got], [w[key] for w in want], key)
        # Only node 0 keeps checkpoints (the last one, the run being done).
        self.assertEqual(os.listdir(os.path.join(self.tmp, "node0")), ["ckpt-2.bin"])
        self.assertEqual(os.listdir(os.path.join(self.tmp, "node1")), [])

    def test_a_missing_node_is_named(self):
        port = free_port()
        t0 = time.monotonic()
        n0 = self.start_node(0, 3, port, self.CONFIG, RUNG_RDZV_TIMEOUT_S="1")
        n1 = self.start_node(1, 3, port, self.CONFIG, RUNG_RDZV_TIMEOUT_S="1")
        out0, err0 = n0.communicate(timeout=60)
        out1, err1 = n1.communicate(timeout=60)
        msg = "rendezvous: rank 2 of 3 did not arrive within 1 s at 127.0.0.1:%d" % port
        self.assertNotEqual(n0.returncode, 0)
        self.assertIn(msg, err0)
        self.assertNotEqual(n1.returncode, 0)
        self.assertIn(msg, err1)  # node 1 hears it from node 0
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(reports(out0), [])

    def test_sigterm_to_one_node_stops_both(self):
        port = free_port()
        config = dict(self.CONFIG, epochs=200)
        n0 = self.start_node(0, 2, port, config)
        n1 = self.start_node(1, 2, port, config)
        # Once node 0 has reported an epoch, stop node 1 alone.
        first = n0.stdout.readline()
        self.assertTrue(first.startswith("@rung "), first)
        n1.send_signal(signal.SIGTERM)
        out0, err0 = n0.communicate(timeout=60)
        out1, err1 = n1.communicate(timeout=60)
        self.assertEqual(n1.returncode, 143, err1)
        self.assertEqual(n0.returncode, 143, err0)
        self.assertIn("stopped by a signal", err0)
        self.assertLess(len(reports(out0)), 199)

    def test_wrong_variables_exit_2(self):
        cases = [
            ({"RUNG_NNODES": "2", "RUNG_NODE_RANK": "0", "MASTER_ADDR": ""}, "MASTER_ADDR"),
            ({"RUNG_NNODES": "2", "RUNG_NODE_RANK": "2"}, "RUNG_NODE_RANK"),
            ({"RUNG_NNODES": "two"}, "RUNG_NNODES"),
            ({"RUNG_NNODES": "2", "RUNG_NODE_RANK": "0", "MASTER_PORT": "0"}, "MASTER_PORT"),
            ({"RUNG_NNODES": "2", "RUNG_NODE_RANK": "1", "RUNG_RDZV_TIMEOUT_S": "-1"},
             "RUNG_RDZV_TIMEOUT_S"),
        ]
        for env, name in cases:
            e = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
            e.update(env)
            full = dict(os.environ)
            full.pop("RUNG_CONFIG", None)
            full.update(e)
            r = subprocess.run([train_path(), "--config", json.dumps(self.CONFIG)],
                               capture_output=True, text=True, timeout=30, env=full,
                               cwd=self.tmp)
            self.assertEqual(r.returncode, 2, (env, r.stderr))
            self.assertIn("rung-train: " + name, r.stderr, env)
            self.assertEqual(reports(r.stdout), [])


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

    def test_bayes_and_asha_learn_from_rung_records(self):
        # docs/searchers.md, "Multi-fidelity": bayes with asha and
        # multi_fidelity models the rung records, and rungd logs the level
        # each model-based proposal came from.
        d = self.daemon()
        spec = {
            "name": "fmnist-mf", "metric": "val_loss", "mode": "min",
            "search_space": {
                "lr": {"type": "loguniform", "low": 0.005, "high": 0.3},
                "hidden": {"type": "choice", "values": [32, 64]},
                "batch_size": 128, "epochs": 9, "train_samples": 2000, "val_samples": 500},
            "searcher": {"type": "bayes", "seed": 2, "n_initial": 3, "multi_fidelity": True},
            "scheduler": {"type": "asha", "max_t": 9, "grace_period": 1,
                          "reduction_factor": 3},
            "num_samples": 14, "max_concurrent_trials": 2,
            "trainable": {"type": "builtin", "model": "mlp", "dataset": "fashion-mnist"}}
        eid = d.create_experiment(spec)["id"]
        self.assertIs(d.experiment(eid)["searcher"]["multi_fidelity"], True)
        w = self.worker(d, "trainer-mf", cpu_slots=2, once=True)
        self.assertEqual(self.wait_workers_exit([w], 300), [0], self.explain(d, w))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        c = exp["counts"]
        self.assertEqual(c["completed"] + c["stopped"], 14, c)
        self.assertEqual(c["failed"], 0, self.explain(d, w))
        # Every model-based proposal (trials 3 .. 13) is logged with the
        # level it used: a rung of this asha (1, 3 or 9), once the lowest
        # holds max(n_initial, d + 2) = 4 records, and 0 before.
        lines = re.findall(r"experiment %d: bayes proposed trial (\d+) from rung level (\S+) "
                           r"\((\d+) records there, (\d+) in all\)" % eid, d.stderr_text())
        proposed = {int(n): (float(level), int(there)) for n, level, there, _ in lines}
        self.assertEqual(sorted(proposed), list(range(3, 14)), d.stderr_text()[-3000:])
        for n, (level, there) in proposed.items():
            self.assertIn(level, (0, 1, 3, 9), (n, level))
            if level > 0:
                self.assertGreaterEqual(there, 4, (n, level, there))
        self.assertTrue(any(level >= 1 for level, _ in proposed.values()), proposed)
        levels = [proposed[n][0] for n in sorted(proposed)]
        self.assertEqual(levels, sorted(levels), "the level only climbs as records come in")

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
