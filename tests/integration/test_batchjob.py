"""rung-worker in a batch job (docs/workers.md, "On Slurm").

A real rungd and real rung-worker processes given a Slurm job's environment
(SLURM_JOB_ID, SLURM_CPUS_ON_NODE, SLURM_JOB_GPUS) and a stand-in `squeue`
on PATH that says when the job ends, as a worker started by sbatch sees
them. What is checked:

- the worker offers the job's CPUs and GPUs (GET /api/v1/workers), not the
  machine's, without --cpu-slots or --gpus;
- --max-trials N: it runs N trials and exits 0, the rest left to others;
- --exit-idle-s: with nothing to run it exits 0 after about that long;
- SIGTERM in a job (what scancel and the time limit send): the running
  trial is given back at once (state preempted, attempt unchanged), the
  worker exits 0, and another worker completes the trial with every step
  reported exactly once;
- the job's end from squeue less --deadline-margin-s: the trial is given
  back before it, and the worker exits 0.

Run alone: /usr/bin/python3 tests/integration/test_batchjob.py --rungd build/bin/rungd
"""

import os
import signal
import time

import rungd_harness as h
import worker_harness as wh

# A program that checkpoints each step before reporting it and resumes from
# RUNG_RESUME_STEP's checkpoint; SIGTERM ends it before its next report.
TRAINABLE = """
import json, os, signal, sys, time

steps, delay = int(sys.argv[1]), float(sys.argv[2])
folder = os.environ["RUNG_TRIAL_DIR"]
start = int(os.environ.get("RUNG_RESUME_STEP", "0"))
stop = False


def on_term(sig, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
state = {"sum": 0}
if start and os.path.exists(os.path.join(folder, "ckpt-%d.json" % start)):
    with open(os.path.join(folder, "ckpt-%d.json" % start)) as f:
        state = json.load(f)
for step in range(start + 1, steps + 1):
    time.sleep(delay)
    if stop:
        sys.exit(0)
    state["sum"] += step
    with open(os.path.join(folder, "ckpt-%d.json" % step), "w") as f:
        json.dump(state, f)
    print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
"""

SQUEUE = """#!/bin/sh
# squeue -h -j ID -o %e, as Slurm's: the job's end in local time.
[ "$1 $2 $4 $5" = "-h -j -o %e" ] || exit 1
cat "$(dirname "$0")/job-end" 2>/dev/null || echo Unknown
"""


class BatchJob(wh.WorkerTestCase):

    def setUp(self):
        super().setUp()
        self.train = self.script("train.py", TRAINABLE)
        self.bin = os.path.join(self.tmp, "slurm-bin")
        os.makedirs(self.bin)
        path = os.path.join(self.bin, "squeue")
        with open(path, "w") as f:
            f.write(SQUEUE)
        os.chmod(path, 0o755)

    def job_env(self, cpus="3", gpus="", end=None):
        """The environment sbatch gives a job; end: its end, seconds since
        the epoch (squeue prints it), or None: no time limit."""
        if end is not None:
            with open(os.path.join(self.bin, "job-end"), "w") as f:
                f.write(time.strftime("%Y-%m-%dT%H:%M:%S\n", time.localtime(end)))
        return {"SLURM_JOB_ID": "4242", "SLURM_CPUS_ON_NODE": cpus, "SLURM_JOB_GPUS": gpus,
                "PATH": self.bin + ":" + os.environ.get("PATH", "/usr/bin:/bin")}

    def submit(self, d, n, steps, delay):
        spec = wh.command_spec([wh.PYTHON, self.train, str(steps), str(delay)], num_samples=n,
                               resources_per_trial={"cpu": 1})
        return d.create_experiment(spec)["id"]

    def running_trial(self, d, eid):
        return h.wait_until(
            lambda: next((t for t in d.trials(eid)["items"]
                          if t["state"] == "running" and (t.get("step") or 0) >= 2), None),
            20, "a trial of experiment %d running with 2 steps" % eid)

    def test_the_job_sizes_the_worker(self):
        d = self.daemon()
        w = self.worker(d, "job", sized=False, env=self.job_env(cpus="3", gpus="2,3"),
                        extra=["--lease-wait-s", "1"])
        doc = h.wait_until(lambda: next((x for x in d.ok("GET", "/api/v1/workers")["items"]
                                         if x["name"] == "job"), None), 10, "the worker")
        self.assertEqual(doc["cpus"], 3)
        self.assertEqual(sorted(g["index"] for g in doc["gpus"]), [2, 3])
        h.wait_until(lambda: "in Slurm job 4242" in w.stderr_text(), 5, "the job's line")
        self.assertIn("gpus from SLURM_JOB_GPUS, cpus from SLURM_CPUS_ON_NODE", w.stderr_text())
        # A value Slurm would not write is refused, naming it.
        bad = self.worker(d, "bad", sized=False, env=self.job_env(cpus="three"))
        self.assertEqual(bad.wait_exit(10), 2)
        bad.expected_exit = True
        self.assertIn("SLURM_CPUS_ON_NODE", bad.stderr_text())

    def test_max_trials_then_exit(self):
        d = self.daemon()
        eid = self.submit(d, n=3, steps=2, delay=0.05)
        w = self.worker(d, "two", extra=["--max-trials", "2", "--lease-wait-s", "1"])
        self.assertEqual(w.wait_exit(30), 0, w.diagnostics())
        counts = d.experiment(eid)["counts"]
        self.assertEqual((counts["completed"], counts["pending"]), (2, 1), counts)
        self.assertIn("--max-trials", w.stderr_text())

    def test_exit_when_idle(self):
        d = self.daemon()
        t0 = time.monotonic()
        w = self.worker(d, "idle", extra=["--exit-idle-s", "2", "--lease-wait-s", "10"])
        self.assertEqual(w.wait_exit(15), 0, w.diagnostics())
        took = time.monotonic() - t0
        print("# exited %.2f s after its start (--exit-idle-s 2)" % took)
        self.assertGreaterEqual(took, 2.0)
        self.assertLess(took, 6.0)  # not the 10 s long poll
        self.assertIn("--exit-idle-s", w.stderr_text())

    def given_back_then_completed_elsewhere(self, d, eid, t, w):
        """The trial went back (preempted, first attempt) and w exited 0;
        another worker completes it, every step reported once."""
        t = self.wait_trial(d, t["id"], lambda x: x["state"] == "preempted", 10,
                            "the trial given back")
        self.assertEqual((t["attempt"], t["preemptions"]), (1, 1))
        self.assertEqual(w.wait_exit(15), 0, w.diagnostics())
        other = self.worker(d, "other", extra=["--lease-wait-s", "1"])
        t = self.wait_trial(d, t["id"], lambda x: x["state"] == "completed", 60,
                            "the trial completed on another worker")
        steps = [m["step"] for m in d.metrics_of(t["id"])]
        self.assertEqual(steps, list(range(1, 13)), self.explain(d, other))

    def test_sigterm_in_a_job_gives_the_trial_back(self):
        d = self.daemon("--lease-s", "3")
        eid = self.submit(d, n=1, steps=12, delay=0.25)
        w = self.worker(d, "job", env=self.job_env(), extra=["--lease-wait-s", "1"])
        t = self.running_trial(d, eid)
        t0 = time.monotonic()
        w.expected_exit = True
        w.proc.send_signal(signal.SIGTERM)
        self.wait_trial(d, t["id"], lambda x: x["state"] == "preempted", 10, "given back")
        print("# given back %.2f s after SIGTERM" % (time.monotonic() - t0))
        self.assertLess(time.monotonic() - t0, 3.0)
        self.assertIn("SIGTERM (--on-sigterm give-back)", w.stderr_text())
        self.given_back_then_completed_elsewhere(d, eid, t, w)

    def test_the_jobs_end_gives_the_trial_back_first(self):
        d = self.daemon("--lease-s", "3")
        eid = self.submit(d, n=1, steps=12, delay=0.25)
        end = int(time.time()) + 5
        w = self.worker(d, "job", env=self.job_env(end=end),
                        extra=["--deadline-margin-s", "3", "--lease-wait-s", "1"])
        t = self.running_trial(d, eid)
        self.wait_trial(d, t["id"], lambda x: x["state"] == "preempted", 10, "given back")
        print("# given back %.2f s before the job's end" % (end - time.time()))
        self.assertLess(time.time(), end)
        self.assertIn("(--deadline)", w.stderr_text())
        self.given_back_then_completed_elsewhere(d, eid, t, w)


if __name__ == "__main__":
    wh.main()
