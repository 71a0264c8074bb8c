"""Integration tests of examples/pytorch/: a real PyTorch search, end to end.

A real rungd and a real `rung-worker --cpu-slots 2` run what a user runs:
examples/pytorch/submit.py (the Python client's rung.Experiment, Bayesian
search and ASHA) tuning examples/pytorch/train.py (PyTorch on
Fashion-MNIST, with rung.config, rung.report, rung.checkpoint_dir and
rung.resume_step), with small settings so that the file takes about a
minute on 2 cores. What is checked is what a user would look at:

- the experiment completes, ASHA stopped some trials at a rung, none
  failed, the best trial has a finite val_loss and learnt something, and
  submit.py printed that trial;
- every trial's folder holds the checkpoint of its last reported epoch;
- with ASHA's promotion variant, paused trials are resumed from their
  checkpoints and their epochs go on where they stopped;
- train.py runs by hand (rung.config's defaults outside a worker), and a
  run resumed from a checkpoint reports exactly what the uninterrupted run
  does.

Every test is skipped, with the reason, when the Python running them
cannot import torch (Debian's python3-torch; scripts/deps.sh --tests installs
it), and the file then exits 77, which ctest reports as "skipped".
"""

import json
import math
import os
import re
import subprocess
import sys

import worker_harness as wh

EXAMPLE = os.path.join(wh.EXAMPLES, "pytorch")
SUBMIT = os.path.join(EXAMPLE, "submit.py")
TRAIN = os.path.join(EXAMPLE, "train.py")
# Small enough for seconds per trial on one core (most of it torch's import).
# The exit status of a file whose tests were all skipped.
SKIPPED = 77
SMALL = ["--train-samples", "3000", "--val-samples", "1000", "--epochs", "9"]


def torch_missing():
    """Why torch cannot be used by this interpreter, or None when it can."""
    try:
        r = subprocess.run([wh.PYTHON, "-c", "import torch"], capture_output=True, text=True,
                           timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "%s -c 'import torch': %s" % (wh.PYTHON, e)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        return ("%s cannot import torch (%s): install Debian's python3-torch "
                "(scripts/deps.sh --tests does)" % (wh.PYTHON, last))
    return None


_SKIP = None


def setUpModule():
    global _SKIP
    _SKIP = torch_missing()


def reports(stdout):
    return [json.loads(line[len("@rung "):]) for line in stdout.splitlines()
            if line.startswith("@rung ")]


def plain_env(**extra):
    """This environment without anything of a worker's trial in it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNG_")}
    env.update(extra)
    return env


class PytorchExample(wh.WorkerTestCase):

    def setUp(self):
        if _SKIP:
            self.skipTest(_SKIP)
        super().setUp()

    def submit(self, daemon, *args, timeout=420):
        """Runs submit.py against daemon to the end; (experiment id, stdout)."""
        r = subprocess.run([wh.PYTHON, SUBMIT, "--server", daemon.url] + list(args),
                           capture_output=True, text=True, timeout=timeout,
                           env=plain_env(), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, "submit.py failed\n--- stdout ---\n%s\n--- stderr "
                         "---\n%s" % (r.stdout, r.stderr[-4000:]))
        m = re.search(r"^experiment (\d+) submitted to ", r.stdout, re.M)
        self.assertIsNotNone(m, r.stdout)
        return int(m.group(1)), r.stdout

    def checkpoints(self, worker, tid):
        folder = os.path.join(worker.workdir, "trials", str(tid), "checkpoints")
        if not os.path.isdir(folder):
            return []
        return sorted(os.listdir(folder))

    def test_bayes_and_asha_search_from_submit_py(self):
        d = self.daemon()
        w = self.worker(d, "torch", cpu_slots=2)
        eid, out = self.submit(d, "--trials", "10", "--concurrent", "2", "--seed", "1",
                               *SMALL)
        exp = d.experiment(eid)
        why = self.explain(d, w)
        self.assertEqual(exp["state"], "completed", why)
        self.assertEqual(exp["searcher"]["type"], "bayes")
        self.assertEqual(exp["scheduler"]["type"], "asha")
        c = exp["counts"]
        self.assertEqual(c["failed"], 0, why)
        self.assertEqual(c["completed"] + c["stopped"], 10, c)

        trials = d.all_trials(eid)
        by_asha = [t for t in trials
                   if t["state"] == "stopped" and t["stopped_by"] == "scheduler"]
        self.assertGreater(len(by_asha), 0, "ASHA stopped no trial: %r" % c)
        for t in by_asha:
            self.assertIn(t["rung"], (1, 3), t)
        for t in trials:
            steps = [m["step"] for m in d.metrics_of(t["id"])]
            self.assertEqual(steps, list(range(1, len(steps) + 1)), t)
            self.assertEqual(t["step"], steps[-1], t)
            if t["state"] == "completed":
                self.assertEqual(steps[-1], 9, t)
            # The checkpoint of its last reported epoch, saved before the
            # report; a trial that ASHA stopped may have saved the next
            # epoch's before the SIGTERM reached it, or been killed while
            # writing it: then that one's .tmp stays beside the whole one
            # (train.py writes under a temporary name and renames).
            # Only the newest whole checkpoint is kept.
            files = self.checkpoints(w, t["id"])
            whole = [f for f in files if not f.endswith(".tmp")]
            self.assertEqual(len(whole), 1, (t["id"], files))
            epoch = int(re.fullmatch(r"epoch-(\d+)\.pt", whole[0]).group(1))
            self.assertIn(epoch, (t["step"], t["step"] + 1), (t, files))
            partial = [f for f in files if f.endswith(".tmp")]
            self.assertIn(partial, ([], ["epoch-%d.pt.tmp" % (epoch + 1)]), (t, files))

        best = exp["best"]
        self.assertTrue(math.isfinite(best["value"]), best)
        self.assertLess(best["value"], 0.9, best)  # chance is ln 10 = 2.3
        best_trial = d.trial(best["trial_id"])
        self.assertGreater(best_trial["last"]["val_acc"], 0.6, best_trial)
        # submit.py printed the best trial and its config.
        self.assertIn("best trial %d: val_loss %.4f" % (best["trial_id"], best["value"]), out)
        self.assertIn("best config: ", out)
        self.assertRegex(out, r"%d completed, %d stopped early by ASHA, 0 failed"
                         % (c["completed"], c["stopped"]))
        print("\n%d trials: %d completed, %d stopped by ASHA (rungs %s); best val_loss %.4f "
              "(trial %d)" % (len(trials), c["completed"], len(by_asha),
                              sorted(t["rung"] for t in by_asha), best["value"],
                              best["trial_id"]))

    def test_promoted_trials_resume_from_their_checkpoints(self):
        d = self.daemon()
        w = self.worker(d, "promoter", cpu_slots=1)
        eid, out = self.submit(d, "--trials", "7", "--concurrent", "1", "--seed", "3",
                               "--promote", *SMALL)
        exp = d.experiment(eid)
        why = self.explain(d, w)
        self.assertEqual(exp["state"], "completed", why)
        self.assertEqual(exp["counts"]["failed"], 0, why)
        self.assertTrue(exp["scheduler"]["promote"])
        resumed = []
        for t in d.all_trials(eid):
            steps = [m["step"] for m in d.metrics_of(t["id"])]
            # None reported twice, none skipped: resumed where it paused.
            self.assertEqual(steps, list(range(1, len(steps) + 1)), t)
            folder = os.path.join(w.workdir, "trials", str(t["id"]))
            log = ""
            for name in ("stdout.log", "stderr.log"):
                with open(os.path.join(folder, name)) as f:
                    log += f.read()
            self.assertNotIn("starting over", log)
            resumed += [(t["id"], int(e)) for e in re.findall(r"resuming after epoch (\d+)", log)]
        self.assertGreater(len(resumed), 0, "no trial was resumed from a checkpoint\n" + why)
        print("\nresumed from checkpoints (trial, epoch): %s" % resumed)

    def test_train_py_by_hand_and_resumed_exactly(self):
        # Outside a worker: rung.config's defaults, checkpoints in ./rung-local.
        r = subprocess.run([wh.PYTHON, TRAIN], capture_output=True, text=True, timeout=300,
                           env=plain_env(), cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = reports(r.stdout)
        self.assertEqual([g["step"] for g in got], list(range(1, 10)))
        for g in got:
            for key in ("val_loss", "val_acc", "train_loss", "epoch_s"):
                self.assertIn(key, g)
        self.assertGreater(got[-1]["val_acc"], 0.75, got[-1])
        self.assertEqual(os.listdir(os.path.join(self.tmp, "rung-local", "checkpoints")),
                         ["epoch-9.pt"])

        # As a worker would run it: 3 epochs straight, then 2 epochs and a
        # resume from the checkpoint of epoch 2. The resumed epoch 3 is the
        # uninterrupted one, to the last bit (the random generators are in
        # the checkpoint too).
        def run(trial_dir, epochs, resume=None):
            env = plain_env(RUNG_TRIAL_DIR=trial_dir, RUNG_TRIAL_ID="1",
                            RUNG_CONFIG=json.dumps({"epochs": epochs, "train_samples": 2000,
                                                    "val_samples": 500, "seed": 5}))
            if resume is not None:
                env["RUNG_RESUME_STEP"] = str(resume)
            r = subprocess.run([wh.PYTHON, TRAIN], capture_output=True, text=True,
                               timeout=300, env=env, cwd=self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            return reports(r.stdout), r.stdout + r.stderr

        straight, _ = run(os.path.join(self.tmp, "a"), 3)
        first, _ = run(os.path.join(self.tmp, "b"), 2)
        self.assertEqual(os.listdir(os.path.join(self.tmp, "b", "checkpoints")), ["epoch-2.pt"])
        rest, text = run(os.path.join(self.tmp, "b"), 3, resume=2)
        self.assertIn("resuming after epoch 2", text)
        self.assertEqual([g["step"] for g in first + rest], [1, 2, 3])
        for a, b in zip(straight, first + rest):
            self.assertEqual((a["val_loss"], a["val_acc"], a["train_loss"]),
                             (b["val_loss"], b["val_acc"], b["train_loss"]))
        # Resumed where its checkpoint is not (another machine): starts over.
        again, text = run(os.path.join(self.tmp, "c"), 2, resume=2)
        self.assertIn("no checkpoint of epoch 2 here: starting over", text)
        self.assertEqual([g["step"] for g in again], [1, 2])


if __name__ == "__main__":
    try:
        wh.main()
    except SystemExit as e:
        # Every test skipped: the exit status ctest counts as "skipped"
        # (SKIP_RETURN_CODE in tests/integration/CMakeLists.txt).
        if e.code in (0, None) and _SKIP:
            sys.exit(SKIPPED)
        raise
