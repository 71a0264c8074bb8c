"""Integration tests: rung-worker running real trainables against a real rungd.

Every test starts a real rungd (on a loopback port, with a temporary
database) and real `rung-worker --gpus none --cpu-slots N` processes, which
lease trials and run command trainables as child processes: the examples in
examples/trainables/ and small Python programs written by the tests. What is
checked is docs/api.md's pull protocol and report line protocol as seen from the
outside: the trials' states, attempts, errors and stored reports, the CSV,
and the processes themselves (kill -9 of a worker or of rungd, a stop that
must kill a whole process group).
"""

import csv
import io
import json
import os
import subprocess
import time

import rungd_harness as h
import worker_harness as wh

LOGREG = os.path.join("examples", "trainables", "logreg.py")


def loss_script(steps, sleep_s):
    """A trainable that reports `loss` = 1/step for steps 1..steps, sleeping
    sleep_s after each report; argv[1] (a float) shifts the values."""
    return """
        import json, sys, time
        shift = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
        for step in range(1, %d + 1):
            print("@rung " + json.dumps({"step": step, "loss": 1.0 / step + shift}), flush=True)
            time.sleep(%r)
        """ % (steps, sleep_s)


class RealExperiment(wh.WorkerTestCase):
    """a. Two workers with two CPU slots each run the logreg example."""

    def test_two_workers_run_24_logreg_trials(self):
        d = self.daemon()
        s = wh.example_spec("logreg-random.json", num_samples=24)
        params = sorted(s["search_space"])
        epochs = s["search_space"]["epochs"]
        eid = d.create_experiment(s)["id"]
        workers = [self.worker(d, name, cpu_slots=2, once=True) for name in ("wa", "wb")]
        codes = self.wait_workers_exit(workers, 120)
        self.assertEqual(codes, [0, 0], self.explain(d, *workers))

        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, *workers))
        self.assertEqual(exp["counts"]["completed"], 24, exp["counts"])
        trials = d.all_trials(eid)
        self.assertEqual(len(trials), 24)

        # Every epoch of every trial was reported, and the experiment's best
        # is the minimum of everything reported.
        values = []
        by_trial = {}
        for t in trials:
            self.assertEqual(t["state"], "completed", t)
            self.assertEqual(t["attempt"], 1, t)
            items = d.metrics_of(t["id"])
            self.assertEqual([i["step"] for i in items], list(range(1, epochs + 1)),
                             "reports of trial %d" % t["id"])
            for i in items:
                self.assertIn("val_acc", i["metrics"])
            vs = wh.metric_values(items, "val_loss")
            self.assertEqual(len(vs), epochs, "finite val_loss values of trial %d" % t["id"])
            self.assertEqual(t["step"], epochs)
            self.assertEqual(t["best"]["value"], min(vs), t)
            by_trial[t["id"]] = vs
            values.extend(vs)
        best = min(values)
        self.assertEqual(exp["best"]["value"], best, exp["best"])
        self.assertIn(best, by_trial[exp["best"]["trial_id"]])
        self.assertEqual(exp["best"]["config"], d.trial(exp["best"]["trial_id"])["config"])

        # The CSV has one row per trial, with every parameter as a column.
        r = d.request("GET", "/api/v1/experiments/%d/trials.csv" % eid)
        self.assertEqual(r.status, 200, r)
        rows = list(csv.reader(io.StringIO(r.text)))
        header, body = rows[0], [row for row in rows[1:] if row]
        self.assertEqual(len(body), 24, r.text[:2000])
        for column in ["id", "state"] + params:
            self.assertIn(column, header)
        self.assertEqual(sorted(int(row[header.index("id")]) for row in body),
                         sorted(t["id"] for t in trials))

        # Both workers ran trials.
        ids = self.worker_ids(d)
        ran = {t["worker_id"] for t in trials}
        self.assertEqual(ran, {ids["wa"], ids["wb"]}, "worker_id of the trials")


class KillWorker(wh.WorkerTestCase):
    """b. kill -9 of a worker during a trial: the trial is retried elsewhere."""

    def test_trial_of_a_killed_worker_is_retried_on_the_other(self):
        d = self.daemon("--lease-s", "2")
        prog = self.script("slow.py", loss_script(steps=20, sleep_s=0.15))
        eid = d.create_experiment(wh.command_spec(
            [wh.PYTHON, prog, "{x}"], num_samples=1, max_failures=1))["id"]
        a = self.worker(d, "first")
        trial = h.wait_until(lambda: [t for t in d.all_trials(eid)
                                      if t["state"] == "running" and (t["step"] or 0) >= 2],
                             20, "the trial to run on the first worker")[0]
        tid = trial["id"]
        ids = self.worker_ids(d)
        self.assertEqual(trial["worker_id"], ids["first"])
        self.assertEqual(trial["attempt"], 1)

        b = self.worker(d, "second")
        time.sleep(0.5)  # registered and polling, with nothing to lease
        a.kill9()
        t = self.wait_trial(d, tid, lambda t: t["state"] in ("completed", "failed"), 30,
                            "trial %d to end after its worker was killed" % tid)
        self.assertEqual(t["state"], "completed", "%r\n%s" % (t, self.explain(d, a, b)))
        self.assertEqual(t["attempt"], 2, t)
        self.assertEqual(t["worker_id"], self.worker_ids(d)["second"], t)
        # The metrics shown are those of the second attempt, all of them.
        self.assertEqual([i["step"] for i in d.metrics_of(tid)], list(range(1, 21)))
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["completed"], 1, exp["counts"])


class KillDaemon(wh.WorkerTestCase):
    """c. kill -9 of rungd while workers report; it comes back on the same port."""

    STEPS = 40

    def test_workers_reconnect_and_no_acknowledged_report_is_lost(self):
        d = self.daemon(fixed_port=True)
        prog = self.script("steady.py", loss_script(steps=self.STEPS, sleep_s=0.02))
        eid = d.create_experiment(wh.command_spec(
            [wh.PYTHON, prog, "{x}"], num_samples=8, max_failures=0))["id"]
        workers = [self.worker(d, name, cpu_slots=2) for name in ("wa", "wb")]
        pids = [w.pid for w in workers]

        # Kill it while reports stream in.
        h.wait_until(lambda: any((t["step"] or 0) >= 3 for t in d.all_trials(eid)), 20,
                     "reports to arrive")
        d.kill9()
        time.sleep(1.5)  # trials go on reporting into the void (and some end)
        d.restart()
        self.assertEqual(d.port, d.fixed_port)

        exp = d.wait_experiment(eid, lambda e: e["state"] == "completed", 60,
                                "experiment %d to complete after the restart" % eid)
        self.assertEqual(exp["counts"]["completed"], 8,
                         "%r\n%s" % (exp["counts"], self.explain(d, *workers)))
        for t in d.all_trials(eid):
            self.assertEqual((t["state"], t["attempt"]), ("completed", 1), t)
            items = d.metrics_of(t["id"])
            self.assertEqual([i["step"] for i in items], list(range(1, self.STEPS + 1)),
                             "reports of trial %d" % t["id"])
            shift = t["config"]["x"]
            for i in items:
                self.assertAlmostEqual(i["metrics"]["loss"], 1.0 / i["step"] + shift, places=6)
        # The same worker processes carried on: none was restarted.
        for w, pid in zip(workers, pids):
            self.assertTrue(w.alive(), w.diagnostics())
            self.assertEqual(w.pid, pid)


class FailingTrial(wh.WorkerTestCase):
    """d. A trainable that exits 1 fails with its stderr, after its retries."""

    def test_exit_1_fails_with_stderr_tail_after_retries(self):
        d = self.daemon()
        prog = self.script("boom.py", """
            import json, sys
            print("@rung " + json.dumps({"step": 1, "loss": 0.5}), flush=True)
            sys.stderr.write("loading data\\nstarting\\nboom\\n")
            sys.exit(1)
            """)
        eid = d.create_experiment(wh.command_spec(
            [wh.PYTHON, prog, "{x}"], num_samples=1, max_failures=1))["id"]
        w = self.worker(d, "w")
        exp = d.wait_state(eid, "failed", timeout=30)  # its only trial failed
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "failed", "%r\n%s" % (t, self.explain(d, w)))
        self.assertEqual(t["attempt"], 2, t)  # max_failures + 1 attempts
        self.assertEqual(t["error_summary"], "exit status 1: boom", t)
        error = t["error"] or ""
        self.assertIn("boom", error, t)
        self.assertTrue(error.rstrip().endswith("boom"), "the tail of stderr: %r" % error)
        self.assertEqual(exp["counts"]["failed"], 1, exp["counts"])

    def test_program_that_cannot_start_fails_with_a_reason(self):
        d = self.daemon()
        missing = os.path.join(self.tmp, "no-such-program")
        eid = d.create_experiment(wh.command_spec([missing, "{x}"], num_samples=1))["id"]
        w = self.worker(d, "w", once=True)
        self.assertEqual(self.wait_workers_exit([w], 30), [0], w.diagnostics())
        t = d.all_trials(eid)[0]
        self.assertEqual((t["state"], t["attempt"]), ("failed", 1), t)
        self.assertIn("no-such-program", t["error"] or "", t)
        self.assertEqual(d.experiment(eid)["state"], "failed")  # its only trial failed


class StopKillsProcessGroup(wh.WorkerTestCase):
    """e. A stop kills the trainable's whole process group: SIGTERM, then
    SIGKILL 10 s later for a child that ignores SIGTERM."""

    def test_cancel_kills_child_that_ignores_sigterm(self):
        d = self.daemon()
        piddir = os.path.join(self.tmp, "pids")
        os.makedirs(piddir)
        prog = self.script("stubborn.py", """
            import json, os, subprocess, sys, time

            CHILD = '''
            import os, signal, sys, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            with open(sys.argv[1] + "/child.tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(sys.argv[1] + "/child.tmp", sys.argv[1] + "/child.pid")
            time.sleep(120)  # bounded even if nobody kills it
            '''
            piddir = sys.argv[1]
            subprocess.Popen([sys.executable, "-c", CHILD, piddir])
            with open(piddir + "/parent.tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(piddir + "/parent.tmp", piddir + "/parent.pid")
            for step in range(1, 600):
                print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
                time.sleep(0.2)
            """)
        eid = d.create_experiment(wh.command_spec(
            [wh.PYTHON, prog, piddir, "{x}"], num_samples=1))["id"]
        w = self.worker(d, "w")

        def pids():
            try:
                with open(os.path.join(piddir, "parent.pid")) as f:
                    parent = int(f.read())
                with open(os.path.join(piddir, "child.pid")) as f:
                    child = int(f.read())
            except (OSError, ValueError):
                return None
            return parent, child

        parent, child = h.wait_until(pids, 20, "the trainable and its child to start")
        h.wait_until(lambda: [t for t in d.all_trials(eid) if (t["step"] or 0) >= 2], 20,
                     "reports of the trial")
        self.assertTrue(wh.pid_alive(parent) and wh.pid_alive(child))

        d.ok("POST", "/api/v1/experiments/%d/cancel" % eid)
        t0 = time.monotonic()
        h.wait_until(lambda: not wh.pid_alive(parent), 5,
                     "the trainable (pid %d) to die of SIGTERM" % parent)
        parent_gone = time.monotonic() - t0
        h.wait_until(lambda: not wh.pid_alive(child), 14,
                     "the child that ignores SIGTERM (pid %d) to be killed" % child,
                     interval=0.1)
        child_gone = time.monotonic() - t0
        # SIGKILL comes 10 s after SIGTERM, not at once.
        self.assertGreater(child_gone - parent_gone, 5.0,
                           "child killed %.1f s after the parent" % (child_gone - parent_gone))

        exp = d.wait_state(eid, "canceled", timeout=10)
        t = d.all_trials(eid)[0]
        self.assertIn(t["state"], ("canceled", "stopped"), t)
        self.assertEqual(exp["counts"]["running"], 0, exp["counts"])
        self.assertTrue(w.alive(), w.diagnostics())  # the worker itself goes on


class MalformedLines(wh.WorkerTestCase):
    """f. Malformed @rung lines are warned about and never fatal."""

    def test_bad_report_lines_are_skipped_with_a_warning(self):
        d = self.daemon()
        prog = self.script("sloppy.py", r"""
            print("starting: this line is the trial's log", flush=True)
            print('@rung {"loss": 0.5}', flush=True)
            print('@rung {bad', flush=True)
            print('@rung {"loss": "x"}', flush=True)
            print('@rung {"loss": 0.4}', flush=True)
            print('@rung {"step": 3, "loss": 0.3, "acc": 0.9}', flush=True)
            """)
        eid = d.create_experiment(wh.command_spec(
            [wh.PYTHON, prog, "{x}"], num_samples=1))["id"]
        w = self.worker(d, "w", once=True)
        self.assertEqual(self.wait_workers_exit([w], 30), [0], w.diagnostics())
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "completed", "%r\n%s" % (t, self.explain(d, w)))
        items = d.metrics_of(t["id"])
        # Steps left out count 1, 2, ...: the bad lines take no step.
        self.assertEqual([(i["step"], i["metrics"]["loss"]) for i in items],
                         [(1, 0.5), (2, 0.4), (3, 0.3)])
        self.assertEqual(items[2]["metrics"].get("acc"), 0.9)
        self.assertEqual(d.experiment(eid)["best"]["value"], 0.3)
        err = w.stderr_text()
        self.assertIn("{bad", err, "the warning names the bad line\n" + w.diagnostics())
        self.assertTrue(any("loss" in line and "{bad" not in line for line in err.splitlines()),
                        "a warning about the non-numeric loss\n" + w.diagnostics())


class Diverged(wh.WorkerTestCase):
    """g. The logreg example with a huge learning rate reports NaN."""

    def test_nan_fails_the_trial_without_retry(self):
        args = ["--lr=10000", "--hidden=16", "--epochs=8", "--seed=0"]
        # Where it diverges, from running it here the same way.
        out = subprocess.run([wh.PYTHON, LOGREG] + args, cwd=wh.REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=60, env=dict(os.environ, RUNG_CONFIG="")).stdout.decode()
        nan_steps = [json.loads(line[6:])["step"] for line in out.splitlines()
                     if line.startswith("@rung ") and "NaN" in line]
        self.assertTrue(nan_steps, "the example should diverge at lr 1e4:\n" + out)
        n = nan_steps[0]

        d = self.daemon()
        s = wh.command_spec([wh.PYTHON, LOGREG, "--lr={lr}"] + args[1:], num_samples=1,
                            max_failures=2, metric="val_loss",
                            search_space={"lr": 10000})
        eid = d.create_experiment(s)["id"]
        w = self.worker(d, "w")
        exp = d.wait_state(eid, "failed", timeout=30)  # its only trial failed
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "failed", "%r\n%s" % (t, self.explain(d, w)))
        self.assertEqual(t["error"], "val_loss is NaN at step %d" % n, t)
        self.assertEqual(t["attempt"], 1, "a diverged run is not retried: %r" % t)
        time.sleep(0.5)
        self.assertEqual(d.trial(t["id"])["attempt"], 1)
        self.assertEqual(exp["counts"]["failed"], 1, exp["counts"])
        steps = [i["step"] for i in d.metrics_of(t["id"])]
        self.assertEqual(steps[:n - 1], list(range(1, n)), "reports before the NaN")


class TorchExample(wh.WorkerTestCase):
    """h. The PyTorch example runs one trial (where Debian's torch exists)."""

    PY = "/usr/bin/python3"

    def test_torch_example_completes(self):
        try:
            ok = subprocess.run([self.PY, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=120).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if not ok:
            self.skipTest("%s cannot import torch (install python3-torch)" % self.PY)
        d = self.daemon()
        s = wh.example_spec("torch-mlp.json", num_samples=1)
        s["search_space"]["epochs"] = 3
        eid = d.create_experiment(s)["id"]
        w = self.worker(d, "w", once=True)
        self.assertEqual(self.wait_workers_exit([w], 150), [0], w.diagnostics())
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "completed", "%r\n%s" % (t, self.explain(d, w)))
        items = d.metrics_of(t["id"])
        self.assertEqual([i["step"] for i in items], [1, 2, 3])
        for i in items:
            self.assertTrue(0.0 <= i["metrics"]["val_acc"] <= 1.0, i)
        self.assertEqual(d.experiment(eid)["state"], "completed")


class TrialEnvironment(wh.WorkerTestCase):
    """What a command trainable is given: argv with its parameters, the spec's
    env and cwd, RUNG_* variables and an empty CUDA_VISIBLE_DEVICES."""

    def test_argv_env_and_folders(self):
        d = self.daemon()
        outdir = os.path.join(self.tmp, "seen")
        os.makedirs(outdir)
        prog = self.script("env.py", """
            import json, os, sys
            keys = ["RUNG_TRIAL_ID", "RUNG_EXPERIMENT_ID", "RUNG_CONFIG", "RUNG_TRIAL_DIR",
                    "CUDA_VISIBLE_DEVICES", "MY_SETTING", "PYTHONUNBUFFERED"]
            seen = {"argv": sys.argv[1:], "cwd": os.getcwd(),
                    "env": {k: os.environ.get(k) for k in keys},
                    "trial_dir_is_dir": os.path.isdir(os.environ.get("RUNG_TRIAL_DIR", ""))}
            with open(os.path.join(sys.argv[1], os.environ["RUNG_TRIAL_ID"] + ".json"),
                      "w") as f:
                json.dump(seen, f)
            print("@rung " + json.dumps({"loss": 1.0}), flush=True)
            """)
        s = wh.command_spec(
            [wh.PYTHON, prog, outdir, "--n={n}", "--name={name}", "--lr={lr}"],
            num_samples=2,
            search_space={"n": {"type": "randint", "low": 1, "high": 100},
                          "name": {"type": "choice", "values": ["two words"]},
                          "lr": {"type": "loguniform", "low": 1e-5, "high": 1e-3}})
        s["trainable"]["env"] = {"MY_SETTING": "from the spec"}
        eid = d.create_experiment(s)["id"]
        w = self.worker(d, "w", cpu_slots=2, once=True)
        self.assertEqual(self.wait_workers_exit([w], 30), [0], w.diagnostics())
        self.assertEqual(d.experiment(eid)["counts"]["completed"], 2, self.explain(d, w))
        trial_dirs = set()
        for t in d.all_trials(eid):
            with open(os.path.join(outdir, "%d.json" % t["id"])) as f:
                seen = json.load(f)
            cfg = t["config"]
            argv = seen["argv"]
            self.assertEqual(argv[:3], [outdir, "--n=%d" % cfg["n"], "--name=two words"], seen)
            self.assertTrue(argv[3].startswith("--lr="), seen)
            self.assertAlmostEqual(float(argv[3][5:]), cfg["lr"], delta=1e-12 * cfg["lr"])
            env = seen["env"]
            self.assertEqual(env["RUNG_TRIAL_ID"], str(t["id"]))
            self.assertEqual(env["RUNG_EXPERIMENT_ID"], str(eid))
            self.assertEqual(json.loads(env["RUNG_CONFIG"]), cfg)
            self.assertEqual(env["MY_SETTING"], "from the spec")
            self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "", "a trial given no GPU sees none")
            self.assertEqual(env["PYTHONUNBUFFERED"], "1", "Python's stdout is not buffered")
            self.assertTrue(seen["trial_dir_is_dir"], seen)
            self.assertEqual(os.path.realpath(seen["cwd"]), os.path.realpath(wh.REPO_ROOT))
            trial_dirs.add(env["RUNG_TRIAL_DIR"])
        self.assertEqual(len(trial_dirs), 2, "each trial has its own folder")


class DashboardFeeds(wh.WorkerTestCase):
    """What the dashboard reads besides docs/api.md: the last log lines of a
    running trial (carried by heartbeats) and the experiment's curves,
    fetched incrementally from a cursor."""

    def test_log_tail_and_incremental_curves(self):
        d = self.daemon("--lease-s", "4")
        prog = self.script("talk.py", """
            import json, sys, time
            for step in range(1, 7):
                print("epoch %d: caf\u00e9 <b>" % step, flush=True)
                print("warn %d" % step, file=sys.stderr, flush=True)
                print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
                time.sleep(0.4)
            """)
        eid = d.create_experiment(wh.command_spec([wh.PYTHON, prog], num_samples=2,
                                                  max_concurrent_trials=1))["id"]
        w = self.worker(d, "talker", cpu_slots=1, once=True)
        first = d.wait_experiment(eid, lambda x: x["counts"]["running"] == 1, 20,
                                  "a trial running")
        del first
        tid = d.all_trials(eid)[0]["id"]
        trial = self.wait_trial(d, tid, lambda t: t.get("log_tail"), 20, "a log tail")
        self.assertIn("epoch 1: caf\u00e9 <b>", trial["log_tail"])
        self.assertIn("warn 1", trial["log_tail"])
        self.assertNotIn("@rung", trial["log_tail"])

        # Curves: everything from 0, then only what came since the cursor.
        c1 = d.ok("GET", "/api/v1/experiments/%d/curves" % eid)
        self.assertEqual(c1["metric"], "loss")
        self.assertEqual(c1["from"], 0)
        # The cursor is the commit time the answer reaches (ms), not a count.
        self.assertGreater(c1["next"], 0)
        self.assertEqual(self.wait_workers_exit([w], 60), [0], self.explain(d, w))
        c2 = d.ok("GET", "/api/v1/experiments/%d/curves?after=%d&generation=%d"
                  % (eid, c1["next"], c1["generation"]))
        self.assertEqual(c2["from"], c1["next"])
        rows = c1["items"] + c2["items"]
        self.assertEqual(len(rows), 12)
        for trial in d.all_trials(eid):
            mine = [(r[2], r[3]) for r in rows if r[0] == trial["id"]]
            self.assertEqual([m[0] for m in mine], list(range(1, 7)))
            for step, value in mine:  # nine significant digits: float precision
                self.assertAlmostEqual(value, 1.0 / step, delta=1e-8 / step)
        # Nothing new: an empty page at the same cursor; a stale generation
        # starts over from 0.
        c3 = d.ok("GET", "/api/v1/experiments/%d/curves?after=%d&generation=%d"
                  % (eid, c2["next"], c2["generation"]))
        self.assertEqual(c3["items"], [])
        c4 = d.ok("GET", "/api/v1/experiments/%d/curves?after=%d&generation=1"
                  % (eid, c2["next"]))
        self.assertEqual(c4["from"], 0)
        self.assertEqual(len(c4["items"]), 12)
        # best=K: with more than K trials that have a value, only the K
        # best trials' whole curves (ties to the lower id); else as before.
        c5 = d.ok("GET", "/api/v1/experiments/%d/curves?best=2" % eid)
        self.assertNotIn("best", c5)
        self.assertEqual(len(c5["items"]), 12)
        c6 = d.ok("GET", "/api/v1/experiments/%d/curves?after=%d&generation=%d&best=1"
                  % (eid, c2["next"], c2["generation"]))
        self.assertEqual((c6["best"], c6["ranked"], c6["from"]), (1, 2, 0))
        first_id = min(t["id"] for t in d.all_trials(eid))
        self.assertEqual([(r[0], r[2]) for r in c6["items"]],
                         [(first_id, step) for step in range(1, 7)])
        bad = d.ok("GET", "/api/v1/experiments/%d/curves?best=10001" % eid, status=400)
        self.assertEqual(bad["error"]["field"], "best")
        self.assertEqual(d.trial(tid)["log_tail"].splitlines()[-1], "warn 6")


class UnflushedPython(wh.WorkerTestCase):
    """A Python trainable that prints its @rung lines without flush=True:
    the worker's PYTHONUNBUFFERED=1 makes them reach rungd while it runs (a
    pipe would otherwise hold them until it exits), so the scheduler can stop
    it early."""

    def test_reports_arrive_while_the_program_runs(self):
        d = self.daemon()
        go = os.path.join(self.tmp, "go")
        prog = self.script("unflushed.py", """
            import json, os, sys, time
            print("@rung " + json.dumps({"step": 1, "loss": 0.5}))
            # Waits until the test has seen step 1 in rungd (at most 30 s).
            deadline = time.monotonic() + 30
            while not os.path.exists(%r) and time.monotonic() < deadline:
                time.sleep(0.05)
            print("@rung " + json.dumps({"step": 2, "loss": 0.25}))
            time.sleep(0.3)
            print("@rung " + json.dumps({"step": 3, "loss": 0.125}))
            """ % go)
        eid = d.create_experiment(wh.command_spec([wh.PYTHON, prog], num_samples=1))["id"]
        w = self.worker(d, "w", once=True)
        tid = h.wait_until(lambda: [t["id"] for t in d.all_trials(eid)
                                    if t["state"] == "running"], 20, "the trial to run")[0]
        items = h.wait_until(lambda: d.metrics_of(tid), 15,
                             "step 1 of the unflushed program while it runs\n"
                             + self.explain(d, w))
        self.assertEqual(items[0]["step"], 1)
        self.assertEqual(d.trial(tid)["state"], "running", "the program still waits for us")
        with open(go, "w"):
            pass
        self.assertEqual(self.wait_workers_exit([w], 30), [0], self.explain(d, w))
        self.assertEqual(d.trial(tid)["state"], "completed")
        self.assertEqual([i["step"] for i in d.metrics_of(tid)], [1, 2, 3])


class ReportWarnings(wh.WorkerTestCase):
    """Invalid @rung lines are counted, with the last five and why each was
    refused: sent with the heartbeats while the trial runs and with its
    finish, shown as the trial's `warnings` (docs/api.md, the trial
    object)."""

    def test_invalid_lines_reach_the_trial(self):
        d = self.daemon("--lease-s", "3")  # a heartbeat every 0.5 s
        go = os.path.join(self.tmp, "go")
        long_line = "@rung {" + "\u00e9" * 400  # 807 bytes: quoted cut to 512
        prog = self.script("warns.py", r"""
            import json, os, sys, time
            out = sys.stdout.buffer
            out.write(b'@rung {bad\n')
            out.write(b'@rung {"loss": 0.5}\n')
            out.flush()
            deadline = time.monotonic() + 30
            while not os.path.exists(%r) and time.monotonic() < deadline:
                time.sleep(0.05)
            out.write(b'@rung {"loss": "x"}\n')
            out.write(b'@rung\n')
            out.write(b'@rung{"loss": 1}\n')
            out.write(b'@rung {"loss": 0.4, "loss": 0.3}\n')
            out.write(b'@rung {"k\xff": 1}\n')
            out.write(("@rung {" + "\u00e9" * 400).encode() + b'\n')
            out.write(b'@rung {"loss": 0.2}\n')
            out.flush()
            """ % go)
        eid = d.create_experiment(wh.command_spec([wh.PYTHON, prog], num_samples=1))["id"]
        w = self.worker(d, "w", once=True)
        tid = h.wait_until(lambda: [t["id"] for t in d.all_trials(eid)
                                    if t["state"] == "running"], 20, "the trial to run")[0]
        # While it runs: the first bad line, carried by a heartbeat.
        t = self.wait_trial(d, tid, lambda t: (t.get("warnings") or {}).get("count"), 15,
                            "the running trial's warnings (heartbeat)\n" + self.explain(d, w))
        self.assertEqual(t["state"], "running")
        self.assertEqual(t["warnings"]["count"], 1, t["warnings"])
        self.assertEqual(t["warnings"]["last"][0]["line"], "@rung {bad")
        self.assertTrue(t["warnings"]["last"][0]["why"], t["warnings"])
        with open(go, "w"):
            pass
        self.assertEqual(self.wait_workers_exit([w], 30), [0], self.explain(d, w))
        t = d.trial(tid)
        self.assertEqual(t["state"], "completed", t)
        self.assertEqual([i["metrics"]["loss"] for i in d.metrics_of(tid)], [0.5, 0.2])
        warnings = t["warnings"]
        self.assertEqual(warnings["count"], 7, warnings)
        last = warnings["last"]
        self.assertEqual(len(last), 5, warnings)  # the last five, oldest first
        self.assertEqual([x["line"] for x in last[:4]],
                         ["@rung", "@rung{\"loss\": 1}", "@rung {\"loss\": 0.4, \"loss\": 0.3}",
                          "@rung {\"k?\": 1}"])  # a byte that is not UTF-8 is replaced
        cut = last[4]["line"]
        self.assertTrue(long_line.startswith(cut), cut[:40])
        self.assertLessEqual(len(cut.encode()), 512)
        self.assertGreaterEqual(len(cut.encode()), 511)
        for item in last:
            self.assertEqual(sorted(item), ["line", "why"])
            self.assertTrue(item["why"], item)
            self.assertLessEqual(len(item["why"].encode()), 256)
        self.assertIn("duplicate", last[2]["why"], last[2])


class ReportInfo(wh.WorkerTestCase):
    """Values that are not numbers in a @rung line are the report's info
    (docs/api.md, "The line"): the numbers still count, the trial keeps the
    last info values (also across a restart of rungd), each name is warned
    about once, and Ray Tune's "done": true ends the trial completed."""

    def test_info_and_done(self):
        d = self.daemon()
        prog = self.script("info.py", r"""
            import time
            print('@rung {"step": 1, "loss": 0.5, "phase": "warmup"}', flush=True)
            print('@rung {"step": 2, "loss": 0.4, "phase": "train", "done": true}', flush=True)
            time.sleep(30)
            print('@rung {"step": 3, "loss": 0.1}', flush=True)
            """)
        eid = d.create_experiment(wh.command_spec([wh.PYTHON, prog], num_samples=1))["id"]
        started = time.monotonic()
        w = self.worker(d, "w", once=True)
        self.assertEqual(self.wait_workers_exit([w], 20), [0], self.explain(d, w))
        # done: the worker ended the program (SIGTERM) instead of waiting 30 s.
        self.assertLess(time.monotonic() - started, 15)
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "completed", "%r\n%s" % (t, self.explain(d, w)))
        self.assertEqual([(i["step"], i["metrics"]) for i in d.metrics_of(t["id"])],
                         [(1, {"loss": 0.5}), (2, {"loss": 0.4})])
        self.assertEqual(t["info"], {"phase": "train", "done": True})
        # phase is counted once, not once per line; a boolean done not at all.
        self.assertEqual(t["warnings"]["count"], 1, t["warnings"])
        self.assertEqual(t["warnings"]["last"][0]["why"],
                         "metric 'phase' is not a number: kept as info")
        self.assertIn("\"phase\": \"warmup\"", t["warnings"]["last"][0]["line"])
        self.assertEqual(d.experiment(eid)["best"]["value"], 0.4)
        # The trial list shows it too, and it survives a restart of rungd.
        d.stop()
        d.restart()
        self.assertEqual(d.trial(t["id"])["info"], {"phase": "train", "done": True})
        self.assertEqual(d.all_trials(eid)[0]["info"], {"phase": "train", "done": True})


class WorkerLabels(wh.WorkerTestCase):
    """--label key=value is sent at registration and listed with the worker;
    a bad one is refused at start."""

    def test_labels_are_registered(self):
        d = self.daemon()
        w = self.worker(d, "labeled", extra=["--label", "gpu=a100", "--label=team/x=vision"])
        doc = h.wait_until(lambda: [x for x in d.ok("GET", "/api/v1/workers")["items"]
                                    if x["name"] == "labeled"], 15,
                           "the worker to register\n" + self.explain(d, w))[0]
        self.assertEqual(doc.get("labels"), {"gpu": "a100", "team/x": "vision"}, doc)

    def test_bad_label_exits_2(self):
        for bad in (["--label", "a b=c"], ["--label", "novalue"], ["--label"],
                    ["--label", "x=1", "--label", "x=2"], ["--label", "k" * 65 + "=v"]):
            r = subprocess.run([wh.worker_path(), "--server", "http://127.0.0.1:9"] + bad,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertIn(b"--label", r.stderr, bad)


class KeepTrials(wh.WorkerTestCase):
    """--keep-trials N: the folders of the newest N ended trials stay in the
    workdir, older ones are removed; a paused trial's folder stays."""

    def trial_dirs(self, w):
        return sorted(int(n) for n in os.listdir(os.path.join(w.workdir, "trials")))

    def test_keep_two(self):
        d = self.daemon()
        prog = self.script("quick.py", """
            import json, os
            with open(os.path.join(os.environ["RUNG_TRIAL_DIR"], "ckpt"), "w") as f:
                f.write("x")
            os.makedirs(os.path.join(os.environ["RUNG_TRIAL_DIR"], "sub", "deeper"))
            print("@rung " + json.dumps({"loss": 1.0}))
            """)
        eid = d.create_experiment(wh.command_spec([wh.PYTHON, prog], num_samples=5,
                                                  max_concurrent_trials=1))["id"]
        w = self.worker(d, "w", once=True, extra=["--keep-trials", "2"])
        self.assertEqual(self.wait_workers_exit([w], 60), [0], self.explain(d, w))
        trials = sorted(d.all_trials(eid), key=lambda t: t["ended_at"])
        self.assertEqual([t["state"] for t in trials], ["completed"] * 5)
        self.assertEqual(self.trial_dirs(w), sorted(t["id"] for t in trials[-2:]),
                         w.diagnostics())

    def test_paused_trial_folder_is_kept(self):
        d = self.daemon("--lease-s", "3")
        slow = self.script("slow.py", loss_script(steps=200, sleep_s=0.1))
        quick = self.script("quick.py", """
            import json
            print("@rung " + json.dumps({"loss": 1.0}))
            """)
        a = d.create_experiment(wh.command_spec([wh.PYTHON, slow], num_samples=1))["id"]
        w = self.worker(d, "w", once=True, extra=["--keep-trials", "1"])
        paused = h.wait_until(lambda: [t for t in d.all_trials(a)
                                       if t["state"] == "running" and (t["step"] or 0) >= 1],
                              20, "the slow trial to report")[0]["id"]
        b = d.create_experiment(wh.command_spec([wh.PYTHON, quick], num_samples=3,
                                                max_concurrent_trials=1))["id"]
        r = d.request("POST", "/api/v1/experiments/%d/pause?running=pause" % a)
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(self.wait_workers_exit([w], 60), [0], self.explain(d, w))
        self.assertEqual(d.trial(paused)["state"], "paused", d.trial(paused))
        quick_trials = sorted(d.all_trials(b), key=lambda t: t["ended_at"])
        self.assertEqual([t["state"] for t in quick_trials], ["completed"] * 3)
        self.assertEqual(self.trial_dirs(w), sorted([paused, quick_trials[-1]["id"]]),
                         w.diagnostics())


class WorkerDefaults(wh.WorkerTestCase):
    """rung-worker without --server talks to the daemon rung talks to by
    default (README.md's quick start gives neither one --server)."""

    def test_no_server_means_rungs_default(self):
        env = dict(os.environ)
        env.pop("RUNG_SERVER", None)
        env.pop("RUNG_TOKEN", None)
        proc = subprocess.Popen([wh.worker_path(), "--gpus", "none", "--once",
                                 "--workdir", os.path.join(self.tmp, "w0")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                cwd=self.tmp, start_new_session=True)
        try:
            time.sleep(1.5)
            self.assertIsNone(proc.poll(), "rung-worker exited without --server")
        finally:
            proc.kill()
            err = proc.communicate(timeout=10)[1].decode()
        # Nothing listens there in a test, or something else might: either
        # way the worker tried rung's default, http://127.0.0.1:8080.
        self.assertRegex(err, r"127\.0\.0\.1(:| port )8080", err)
        self.assertNotIn("required", err)
        self.assertIn("127.0.0.1:8080",
                      subprocess.run([wh.worker_path(), "--help"], capture_output=True,
                                     text=True, timeout=10).stdout)
        # An empty --server is the service's conf left blank, not a default.
        r = subprocess.run([wh.worker_path(), "--server", ""], capture_output=True, text=True,
                           env=env, timeout=10)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--server is empty", r.stderr)

    def test_server_without_scheme_as_rung_takes_it(self):
        d = self.daemon()
        host_port = d.url.split("://", 1)[1]
        w = self.worker(d, "bare", once=True)  # --server d.url: the harness's way
        self.assertEqual(self.wait_workers_exit([w], 30), [0], self.explain(d, w))
        env = dict(os.environ, RUNG_SERVER=host_port)
        env.pop("RUNG_TOKEN", None)
        r = subprocess.run([wh.worker_path(), "--gpus", "none", "--once", "--lease-wait-s", "1",
                            "--name", "no-scheme", "--workdir", os.path.join(self.tmp, "w1")],
                           capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        names = [x["name"] for x in d.ok("GET", "/api/v1/workers?all=true")["items"]]
        self.assertIn("no-scheme", names)


class FolderLayout(wh.WorkerTestCase):
    """Trial folders are <workdir>/trials/<id> (docs/workers.md). The
    package's unit once passed --workdir /var/lib/rung-worker/trials, which
    made them .../trials/trials/<id>; a worker upgraded in place moves them
    up and resumes its paused trials from them."""

    UNIT = os.path.join(wh.REPO_ROOT, "packaging", "systemd", "rung-worker.service")
    CONF = os.path.join(wh.REPO_ROOT, "packaging", "etc", "rung-worker.conf")

    def test_the_units_trial_folders_are_where_the_conf_says(self):
        with open(self.UNIT) as f:
            start = [l for l in f if l.startswith("ExecStart=")][0]
        workdir = start.split("--workdir", 1)[1].split()[0]
        with open(self.CONF) as f:
            conf = f.read()
        self.assertIn(os.path.join(workdir, "trials") + "/<trial id>", conf)
        self.assertEqual(os.path.join(workdir, "trials"), "/var/lib/rung-worker/trials")

    def test_paused_trial_in_the_old_layout_resumes(self):
        d = self.daemon("--lease-s", "1")  # the old worker is soon gone
        prog = self.script("resumable.py", """
            import json, os, time
            ckpt = os.path.join(os.environ["RUNG_TRIAL_DIR"], "ckpt")
            start = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
            print("resumed from %d" % start, flush=True)
            for step in range(start + 1, 400):
                with open(ckpt, "w") as f:
                    f.write(str(step))
                print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
                if start:
                    break  # resumed: done
                time.sleep(0.05)
            """)
        eid = d.create_experiment(wh.command_spec([wh.PYTHON, prog], num_samples=1))["id"]
        root = os.path.join(self.tmp, "var-lib")
        old = self.worker(d, "old", once=True, workdir=os.path.join(root, "trials"))
        tid = h.wait_until(lambda: [t["id"] for t in d.all_trials(eid)
                                    if t["state"] == "running" and (t["step"] or 0) >= 2],
                           20, "the trial to report")[0]
        r = d.request("POST", "/api/v1/experiments/%d/pause?running=pause" % eid)
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(self.wait_workers_exit([old], 30), [0], self.explain(d, old))
        self.assertEqual(d.trial(tid)["state"], "paused")
        self.assertTrue(os.path.isfile(os.path.join(root, "trials", "trials", str(tid), "ckpt")))
        os.makedirs(os.path.join(root, "trials", "uploads"), exist_ok=True)
        with open(os.path.join(root, "trials", "uploads", "%d-1-2-3.tar" % tid), "w") as f:
            f.write("stale")
        self.assertEqual(d.resume(eid)[0], 200)
        # The upgraded worker registers anew; the trial waits for the old
        # one until it is gone (docs/api.md, "lease"): a lease length here,
        # seen by the next lease request (a short long poll).
        new = self.worker(d, "new", workdir=root, extra=["--lease-wait-s", "1"])
        t = self.wait_trial(d, tid, lambda t: t["state"] == "completed", 30,
                            "the trial to resume and complete")
        self.assertRegex(t["log_tail"], r"resumed from [1-9]")  # it found its checkpoint
        self.assertEqual(sorted(os.listdir(os.path.join(root, "trials"))), [str(tid)])
        self.assertIn("moved 1 trial folder", new.stderr_text())


class LeaseTrainables(wh.WorkerTestCase):
    """rung-worker leases with "trainables": ["command", "builtin"], so an
    external experiment's trial (driven by the user's own workers) is never
    given to it, even when that experiment is older."""

    def test_external_trial_is_not_leased(self):
        d = self.daemon()
        ext = d.create_experiment(h.spec(num_samples=1))["id"]
        prog = self.script("quick.py", """
            import json
            print("@rung " + json.dumps({"loss": 1.0}))
            """)
        cmd = d.create_experiment(wh.command_spec([wh.PYTHON, prog], num_samples=2))["id"]
        w = self.worker(d, "w", once=True)
        self.assertEqual(self.wait_workers_exit([w], 30), [0], self.explain(d, w))
        self.assertEqual([t["state"] for t in d.all_trials(cmd)], ["completed"] * 2)
        [t] = d.all_trials(ext)
        self.assertEqual(t["state"], "pending", t)
        self.assertIsNone(t["worker_id"], t)


if __name__ == "__main__":
    wh.main()
