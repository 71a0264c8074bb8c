"""Integration tests: controlling experiments while they run.

A real rungd (loopback port, temporary database), real rung-worker processes
running small Python trainables where the worker is the point, and workers
of the test's own speaking the pull protocol over HTTP where an exact order
or timing is (docs/api.md, "The worker protocol, step by step"). What is
checked is what docs/api.md promises a user:

- the rules that fail an experiment: a misspelt metric (`metric_missing`)
  and trials that cannot start (`max_failed_trials`), with the error that
  says why;
- submissions refused (a sub-space without a domain in `search_space`, no trainable),
  and `{"type": "external"}` trials that rung-worker never leases;
- pause and resume (running trials finish, or with `running=pause` are
  paused and resume from their checkpoint), PATCH (extend, priority), a
  user's stop of one trial, retry-failed, DELETE;
- how workers are shared: priority, fair share by `share`,
  `worker_selector` against worker labels;
- the stop rules (`time_budget_s`, `metric_threshold`, `patience`);
- `rung logs` after a kill -9, and every state change above after a kill -9;
- workers that stop calling: `gone`, then out of the listing
  (`--forget-workers-s`) but still under `?all=true`.
"""

import collections
import json
import os
import subprocess
import sqlite3
import time

import rungd_harness as h
import worker_harness as wh

TERMINAL = ("completed", "stopped", "failed", "canceled")


def ended(counts):
    return sum(counts[s] for s in TERMINAL)


def rung_cli():
    path = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
    if not os.access(path, os.X_OK):
        raise AssertionError("rung binary not found or not executable: %s" % path)
    return path


# A trainable that reports `loss` (not the spec's val_loss), twice.
TYPO = """
    import json
    for step in (1, 2):
        print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
    """

# A trainable that reports `loss` = 1/step for steps 1..argv[1], sleeping
# argv[2] s after each report.
QUICK = """
    import json, sys, time
    steps, sleep_s = int(sys.argv[1]), float(sys.argv[2])
    for step in range(1, steps + 1):
        print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
        time.sleep(sleep_s)
    """

# A trainable that checkpoints every step in RUNG_TRIAL_DIR before reporting
# it and, with RUNG_RESUME_STEP=s, loads checkpoint s and goes on after it
# (docs/api.md, "The end"); a missing checkpoint is an error (exit 1). Each
# run appends {"trial", "attempt", "resume", "start"} to argv[3].
CHECKPOINTING = """
    import json, os, sys, time
    steps, sleep_s, runs = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    folder = os.environ["RUNG_TRIAL_DIR"]
    resume = int(os.environ.get("RUNG_RESUME_STEP") or 0)
    start = 1
    if resume > 0:
        with open(os.path.join(folder, "ckpt-%d.json" % resume)) as f:
            start = json.load(f)["step"] + 1
    line = json.dumps({"trial": int(os.environ["RUNG_TRIAL_ID"]),
                       "attempt": int(os.environ["RUNG_ATTEMPT"]),
                       "resume": resume, "start": start}) + "\\n"
    fd = os.open(runs, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, line.encode())
    os.close(fd)
    for step in range(start, steps + 1):
        path = os.path.join(folder, "ckpt-%d.json" % step)
        with open(path + ".tmp", "w") as f:
            json.dump({"step": step}, f)
        os.replace(path + ".tmp", path)
        print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
        time.sleep(sleep_s)
    """


class FailingExperiments(wh.WorkerTestCase):
    """1 and 2: experiments that cannot succeed fail early, saying why."""

    def test_misspelt_metric_fails_within_five_trials(self):
        d = self.daemon()
        prog = self.script("typo.py", TYPO)
        eid = d.create_experiment(wh.command_spec(
            ["/usr/bin/python3", prog], metric="val_loss", num_samples=8))["id"]
        w = self.worker(d, "typo", cpu_slots=1)
        exp = d.wait_experiment(eid, lambda e: e["state"] != "running", 30,
                                "the experiment with a misspelt metric to end")
        self.assertEqual(exp["state"], "failed", self.explain(d, w))
        self.assertEqual(exp["ended_reason"], "metric_missing", exp)
        self.assertEqual(exp["error"], "no trial reported metric 'val_loss'; trials reported: loss")
        self.assertIsNotNone(exp["ended_at"])
        # The fifth trial that ended without the metric failed it. One slot,
        # but rung-worker may lease the next trial before the finish of the
        # last one is in: such a trial is stopped by the experiment.
        exp = d.wait_experiment(eid, lambda e: e["counts"]["running"] == 0, 10,
                                "the trials still running to stop")
        c = exp["counts"]
        self.assertEqual(c["completed"], 5, c)
        self.assertEqual(c["pending"] + c["failed"] + c["paused"], 0, c)
        self.assertEqual(c["canceled"] + c["stopped"], 3, c)
        for t in d.all_trials(eid):
            if t["state"] == "stopped":
                self.assertEqual(t["stopped_by"], "experiment", t)

    def test_misspelt_metric_fewer_trials_than_five(self):
        # min(5, total_trials): with 3 trials, 3 ended trials decide; the
        # error lists every key reported, in the order first seen.
        d = self.daemon()
        eid = d.create_experiment(h.spec(metric="val_loss", num_samples=3))["id"]
        w = h.Worker(d)
        for i in range(3):
            self.assertEqual(d.experiment(eid)["state"], "running", "after %d trials" % i)
            t = w.lease_one()
            w.report_ok(t, 1, {"loss": 0.5, "acc": 0.75})
            w.finish_ok(t)
        exp = d.experiment(eid)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("failed", "metric_missing"))
        self.assertEqual(exp["error"],
                         "no trial reported metric 'val_loss'; trials reported: loss, acc")

    def test_metric_reported_once_turns_the_rule_off(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(metric="val_loss", num_samples=6))["id"]
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"val_loss": 0.5})
        w.finish_ok(t)
        for _ in range(5):
            t = w.lease_one()
            w.report_ok(t, 1, {"loss": 0.5})
            w.finish_ok(t)
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["ended_reason"], "all_trials_ended")
        self.assertIsNone(exp["error"])

    def test_trainable_that_cannot_start_fails_the_experiment(self):
        d = self.daemon()
        default = d.create_experiment(h.spec())
        self.assertEqual(default["max_failed_trials"], 5, default)
        self.assertEqual(d.experiment(default["id"])["max_failed_trials"], 5)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % default["id"])

        eid = d.create_experiment(wh.command_spec(
            ["/usr/bin/python3", "-c", "import no_such_module_xyz"], num_samples=10,
            max_failures=1, max_failed_trials=3))["id"]
        self.assertEqual(d.experiment(eid)["max_failed_trials"], 3)
        w = self.worker(d, "broken", cpu_slots=1)
        exp = d.wait_experiment(eid, lambda e: e["state"] != "running", 40,
                                "the experiment whose trials cannot start to end")
        self.assertEqual(exp["state"], "failed", self.explain(d, w))
        self.assertEqual(exp["ended_reason"], "max_failed_trials", exp)
        self.assertIn("No module named", exp["error"])
        self.assertEqual(
            exp["error"],
            "3 trials failed (max_failed_trials is 3); the most frequent error, in 3 of them: "
            "exit status 1: ModuleNotFoundError: No module named 'no_such_module_xyz'")
        exp = d.wait_experiment(eid, lambda e: e["counts"]["running"] == 0, 10,
                                "the trials still running to stop")
        c = exp["counts"]
        self.assertEqual(c["failed"], 3, c)
        self.assertEqual(c["pending"] + c["completed"] + c["paused"], 0, c)
        for t in d.all_trials(eid, page=20):
            if t["state"] == "failed":
                self.assertEqual(t["attempt"], 2, t)  # max_failures 1: tried twice
                self.assertTrue(t["error"].startswith("exit status 1\n"), t["error"])
                self.assertIn("No module named 'no_such_module_xyz'", t["error"])
                self.assertEqual(t["error_summary"], "exit status 1: ModuleNotFoundError: "
                                 "No module named 'no_such_module_xyz'")
            elif t["state"] == "stopped":  # was running when the experiment failed
                self.assertEqual(t["stopped_by"], "experiment", t)
            else:
                self.assertEqual(t["state"], "canceled", t)


class Submission(wh.WorkerTestCase):
    """3: what is refused at submission, and external trainables."""

    def test_refused_specs_name_the_field(self):
        d = self.daemon()
        nested = h.spec(search_space={"x": {"type": "uniform", "low": 0.0, "high": 1.0},
                                      "opt": {"lr": 0.1, "momentum": 0.9}})
        err = self.assertError(d.call("POST", "/api/v1/experiments", nested), 400,
                               "invalid_spec", "search_space.opt")
        self.assertIn("sub-space without any domain", err["message"])
        s = h.spec()
        del s["trainable"]
        self.assertError(d.call("POST", "/api/v1/experiments", s), 400, "invalid_spec",
                         "trainable")
        self.assertError(d.call("POST", "/api/v1/experiments", h.spec(trainable=None)), 400,
                         "invalid_spec", "trainable")
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 0)

    def test_rung_worker_never_leases_external_trials(self):
        d = self.daemon()
        ext = d.create_experiment(h.spec(name="external", num_samples=1))
        self.assertEqual(ext["trainable"], {"type": "external"})
        prog = self.script("quick.py", QUICK)
        cmd = d.create_experiment(wh.command_spec([wh.PYTHON, prog, "2", "0"], num_samples=2))
        w = self.worker(d, "runner", cpu_slots=1, once=True)
        self.assertEqual(self.wait_workers_exit([w], 30), [0], self.explain(d, w))
        self.assertEqual(d.experiment(cmd["id"])["state"], "completed", self.explain(d, w))
        [t] = d.all_trials(ext["id"])
        self.assertEqual((t["state"], t["attempt"], t["worker_id"]), ("pending", 1, None), t)
        e = d.experiment(ext["id"])
        self.assertEqual((e["state"], e["counts"]["pending"]), ("running", 1))
        # A worker that says it runs only command and builtin trainables
        # (what rung-worker sends) is not given it; one of the user's own,
        # offering every type (no `trainables`), is.
        picky = h.Worker(d, name="picky")
        self.assertEqual(picky.lease(wait_s=0, trainables=["command", "builtin"]), (204, None))
        mine = h.Worker(d, name="mine")
        got = mine.lease_one(wait_s=1)
        self.assertEqual(got["id"], t["id"])
        self.assertEqual(got["trainable"], {"type": "external"})
        mine.report_ok(got, 1, {"loss": 0.5})
        mine.finish_ok(got)
        d.wait_state(ext["id"], "completed")


class PauseResume(wh.WorkerTestCase):
    """4: pause (running trials finish, or are paused) and resume."""

    def test_pause_lets_running_trials_finish_and_leases_nothing(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=4))["id"]
        d.wait_proposed(eid, 4)
        w = h.Worker(d)
        a, b = w.lease_one(), w.lease_one()
        exp = self.assertOk(d.pause(eid))
        self.assertEqual(exp["state"], "paused")
        self.assertIsNone(exp["ended_reason"])
        self.assertEqual(self.assertOk(d.pause(eid))["state"], "paused")  # again: 200
        # While paused: the running trials go on and finish; for two
        # seconds no lease is granted and nothing else changes.
        self.assertEqual(w.report_ok(a, 1, {"loss": 0.5}), "continue")
        self.assertEqual(w.heartbeat([a["id"], b["id"]]), (200, {"stop": []}))
        w.finish_ok(a)
        started = time.monotonic()
        self.assertEqual(w.lease(wait_s=2), (204, None))
        self.assertGreaterEqual(time.monotonic() - started, 1.9)
        self.assertEqual(w.report_ok(b, 1, {"loss": 0.25}), "continue")
        w.finish_ok(b)
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "paused")  # does not complete while paused
        self.assertEqual((exp["counts"]["completed"], exp["counts"]["pending"]), (2, 2),
                         exp["counts"])
        self.assertEqual(w.lease(wait_s=0), (204, None))
        self.assertError(d.pause(eid, running="bogus"), 400, "invalid_argument", "running")

        self.assertEqual(self.assertOk(d.resume(eid))["state"], "running")
        rest = [w.lease_one(wait_s=2), w.lease_one(wait_s=2)]
        self.assertEqual(len({t["id"] for t in rest} | {a["id"], b["id"]}), 4)
        for t in rest:
            w.report_ok(t, 1, {"loss": 1.0})
            w.finish_ok(t)
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["completed"], 4, exp["counts"])
        self.assertEqual(exp["ended_reason"], "all_trials_ended")
        # An ended experiment can be neither paused nor resumed.
        self.assertError(d.pause(eid), 409, "conflict")
        self.assertError(d.resume(eid), 409, "conflict")
        self.assertError(d.pause(eid, running="pause"), 409, "conflict")
        self.assertError(d.pause(10**6), 404, "not_found")

    def test_pause_running_trials_resume_from_their_checkpoint(self):
        d = self.daemon()
        runs = os.path.join(self.tmp, "runs.jsonl")
        prog = self.script("ckpt.py", CHECKPOINTING)
        steps = 12
        eid = d.create_experiment(wh.command_spec(
            [wh.PYTHON, prog, str(steps), "0.15", runs], num_samples=2))["id"]
        w = self.worker(d, "ckpt", cpu_slots=2)
        h.wait_until(lambda: [t for t in d.all_trials(eid)
                              if t["state"] == "running" and (t["step"] or 0) >= 3][1:], 20,
                     "both trials to run past step 3")
        exp = self.assertOk(d.pause(eid, running="pause"))
        self.assertEqual(exp["state"], "paused")
        paused = h.wait_until(
            lambda: (lambda ts: ts if all(t["state"] == "paused" for t in ts) else None)(
                d.all_trials(eid)), 10, "both running trials to be paused")
        at = {}
        for t in paused:
            self.assertEqual(t["paused_by"], "user", t)
            self.assertIsNone(t["stopped_by"], t)
            self.assertLess(t["step"], steps, t)
            at[t["id"]] = t["step"]
        exp = d.experiment(eid)
        self.assertEqual((exp["state"], exp["counts"]["paused"]), ("paused", 2), exp)
        time.sleep(1.0)  # the worker, idle and polling, is given nothing
        for t in d.all_trials(eid):
            self.assertEqual((t["state"], t["step"]), ("paused", at[t["id"]]), t)

        self.assertEqual(self.assertOk(d.resume(eid))["state"], "running")
        exp = d.wait_state(eid, "completed", timeout=30)
        self.assertEqual(exp["counts"]["completed"], 2, self.explain(d, w))
        with open(runs) as f:
            by_trial = collections.defaultdict(list)
            for line in f:
                run = json.loads(line)
                by_trial[run["trial"]].append(run)
        for tid, step in at.items():
            t = d.trial(tid)
            self.assertEqual((t["state"], t["paused_by"]), ("completed", None), t)
            self.assertEqual(t["step"], steps, t)
            # Two runs: the first from the start, the second from the
            # checkpoint of the step it was paused at (resume_step > 0).
            self.assertEqual([(r["resume"], r["start"]) for r in by_trial[tid]],
                             [(0, 1), (step, step + 1)], "runs of trial %d" % tid)
            self.assertEqual(len({r["attempt"] for r in by_trial[tid]}), 1, by_trial[tid])
            # Its reports: every step once, strictly increasing.
            self.assertEqual([i["step"] for i in d.metrics_of(tid)], list(range(1, steps + 1)))

    def test_pause_running_by_heartbeat_waits_for_its_worker(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=1))["id"]
        d.wait_proposed(eid, 1)
        w, other = h.Worker(d, name="holder"), h.Worker(d, name="other")
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 0.9})
        w.report_ok(t, 2, {"loss": 0.8})
        self.assertEqual(self.assertOk(d.pause(eid, running="pause"))["state"], "paused")
        self.assertEqual(w.heartbeat([t["id"]]), (200, {"stop": [t["id"]]}))
        cur = d.trial(t["id"])
        self.assertEqual((cur["state"], cur["paused_by"], cur["step"]), ("paused", "user", 2))
        self.assertEqual(d.experiment(eid)["counts"]["paused"], 1)
        self.assertOk(d.resume(eid))
        self.assertEqual(d.trial(t["id"])["state"], "pending")
        # Its checkpoint is on the worker that paused it: nobody else gets it
        # while that worker is alive.
        self.assertEqual(other.lease(wait_s=0), (204, None))
        again = w.lease_one(wait_s=1)
        self.assertEqual((again["id"], again["resume_step"], again["attempt"]),
                         (t["id"], 2, t["attempt"]))
        self.assertEqual(w.report_ok(again, 3, {"loss": 0.7}), "continue")
        w.finish_ok(again)
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["best"]["value"], 0.7)
        self.assertEqual([i["step"] for i in d.metrics_of(t["id"])], [1, 2, 3])

    def test_paused_experiment_still_fails_and_its_stop_rules_wait(self):
        d = self.daemon()
        # The failure rules apply to trials that end while it is paused.
        f = d.create_experiment(h.spec(num_samples=3, max_failed_trials=1))["id"]
        d.wait_proposed(f, 3)
        w = h.Worker(d)
        t = w.lease_one()
        self.assertOk(d.pause(f))
        w.finish_ok(t, "failed", "exit status 1\nMemoryError")
        exp = d.experiment(f)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("failed", "max_failed_trials"))
        self.assertEqual(exp["counts"]["canceled"], 2, exp["counts"])
        self.assertError(d.resume(f), 409, "conflict")
        # The time budget waits while paused, and ends it once resumed.
        b = d.create_experiment(h.spec(num_samples=3, stop={"time_budget_s": 0.5}))["id"]
        self.assertOk(d.pause(b))
        time.sleep(1.0)
        self.assertEqual(d.experiment(b)["state"], "paused")
        self.assertOk(d.resume(b))
        exp = d.wait_experiment(b, lambda e: e["state"] != "running", 3,
                                "the resumed experiment to end by its time budget")
        self.assertEqual((exp["state"], exp["ended_reason"]), ("completed", "time_budget"))

    def assertOk(self, reply):
        status, doc = reply
        self.assertEqual(status, 200, doc)
        return doc


def ok(test, reply, status=200):
    code, doc = reply
    test.assertEqual(code, status, doc)
    return doc


def finish_all(test, d, w, eid, value=1.0):
    """Leases, reports and finishes every trial of eid the worker is given."""
    n = 0
    while True:
        status, t = w.lease(wait_s=0)
        if status == 204:
            return n
        test.assertEqual(t["experiment_id"], eid, t)
        w.report_ok(t, 1, {"loss": value})
        w.finish_ok(t)
        n += 1


class Patch(h.RungdTestCase):
    """5: PATCH extends a completed search; num_samples only grows."""

    def test_raising_num_samples_runs_a_completed_experiment_again(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=2))["id"]
        w = h.Worker(d)
        # Trials are created by the proposer thread, not at submission: a
        # lease with wait_s=0 before they exist would find none.
        d.wait_proposed(eid, 2)
        self.assertEqual(finish_all(self, d, w, eid), 2)
        exp = d.wait_state(eid, "completed")
        self.assertEqual((exp["total_trials"], exp["ended_reason"]), (2, "all_trials_ended"))

        exp = ok(self, d.patch(eid, {"num_samples": 5}))
        self.assertEqual((exp["state"], exp["num_samples"], exp["total_trials"]),
                         ("running", 5, 5), exp)
        self.assertIsNone(exp["ended_reason"])
        self.assertIsNone(exp["ended_at"])
        d.wait_proposed(eid, 5)
        numbers = []
        for _ in range(3):
            t = w.lease_one(wait_s=2)
            numbers.append(t["number"])
            w.report_ok(t, 1, {"loss": 0.5})
            w.finish_ok(t)
        self.assertEqual(numbers, [2, 3, 4])
        exp = d.wait_state(eid, "completed")
        self.assertEqual((exp["total_trials"], exp["counts"]["completed"]), (5, 5))
        self.assertEqual(exp["best"]["value"], 0.5)
        self.assertEqual(exp["ended_reason"], "all_trials_ended")

        # Lowering num_samples, or an unknown key, is refused; nothing changes.
        self.assertError(d.patch(eid, {"num_samples": 4}), 400, "invalid_argument",
                         "num_samples")
        self.assertError(d.patch(eid, {"num_samples": 0}), 400, "invalid_argument",
                         "num_samples")
        self.assertError(d.patch(eid, {"metric": "acc"}), 400, "invalid_argument", "metric")
        self.assertError(d.patch(eid, {"share": 0}), 400, "invalid_argument", "share")
        self.assertError(d.patch(eid, [1]), 400, "bad_json")
        self.assertEqual(d.experiment(eid)["num_samples"], 5)
        self.assertError(d.patch(10**6, {"priority": 1}), 404, "not_found")

        # max_concurrent_trials: raising it lets more run at once.
        mc = d.create_experiment(h.spec(num_samples=3, max_concurrent_trials=1))["id"]
        d.wait_proposed(mc, 3)
        first = w.lease_one()
        self.assertEqual(first["experiment_id"], mc)
        self.assertEqual(w.lease(wait_s=0), (204, None))
        self.assertEqual(ok(self, d.patch(mc, {"max_concurrent_trials": 2}))
                         ["max_concurrent_trials"], 2)
        second = w.lease_one(wait_s=1)
        self.assertEqual(second["experiment_id"], mc)
        self.assertEqual(w.lease(wait_s=0), (204, None))
        for t in (first, second):
            w.finish_ok(t)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % mc)

        # Canceled (and failed) experiments are not changed.
        gone = d.create_experiment(h.spec(num_samples=2))["id"]
        d.ok("POST", "/api/v1/experiments/%d/cancel" % gone)
        self.assertError(d.patch(gone, {"num_samples": 3}), 409, "conflict")
        self.assertError(d.patch(gone, {"priority": 3}), 409, "conflict")
        self.assertEqual(d.experiment(gone)["num_samples"], 2)


def lease_order(test, d, w, n, hold):
    """Leases n trials with a worker that holds at most `hold` at once (when
    full, it finishes the oldest it holds first). Checks every lease
    against docs/api.md, "Sharing workers": the highest priority, then the
    fewest running trials for its share, then the fewest leases for its
    share, then the lower id, among the
    experiments with a pending trial. Returns the experiment ids in lease
    order."""
    held, order = [], []
    leased = collections.Counter()
    for i in range(n):
        if len(held) == hold:
            w.finish_ok(held.pop(0))
        running = collections.Counter(t["experiment_id"] for t in held)
        exps = [e for e in d.ok("GET", "/api/v1/experiments")["items"]
                if e["state"] == "running" and e["counts"]["pending"] > 0]
        # Every experiment here runs from before the first lease, so its
        # pass (docs/api.md, "Sharing workers") is its leases / share.
        want = min(exps, key=lambda e: (-e["priority"], running[e["id"]] / e["share"],
                                        leased[e["id"]] / e["share"], e["id"]))["id"]
        t = w.lease_one(wait_s=2)
        test.assertEqual(t["experiment_id"], want,
                         "lease %d went to experiment %d, not %d (running %r; so far %r)"
                         % (i + 1, t["experiment_id"], want, dict(running), order))
        order.append(t["experiment_id"])
        leased[t["experiment_id"]] += 1
        held.append(t)
    for t in held:
        w.finish_ok(t)
    return order


class Sharing(h.RungdTestCase):
    """6 and 7: priority, fair share and worker labels, with workers of the
    test's own, so that the order of leases is exact."""

    def test_fair_share_gives_a_late_small_experiment_the_second_lease(self):
        d = self.daemon()
        a = d.create_experiment(h.spec(name="big", num_samples=1000))["id"]
        b = d.create_experiment(h.spec(name="small", num_samples=3))["id"]
        d.wait_proposed(a, 20)
        d.wait_proposed(b, 3)
        w = h.Worker(d)
        # Two slots: equal running counts go to the older experiment, then
        # the one with fewer running trials: A and B alternate until B has
        # nothing pending.
        order = lease_order(self, d, w, 8, hold=2)
        self.assertEqual(order, [a, b, a, b, a, b, a, a])
        self.assertEqual(d.experiment(b)["state"], "completed")

    def test_one_slot_freed_at_a_time_is_shared_by_turns(self):
        d = self.daemon()
        a = d.create_experiment(h.spec(name="big", num_samples=1000))["id"]
        b = d.create_experiment(h.spec(name="small", num_samples=3))["id"]
        d.wait_proposed(a, 20)
        d.wait_proposed(b, 3)
        w = h.Worker(d)
        # One slot: running counts always tie (0); the leases each has had
        # decide, so the small one does not wait for the big one's 1,000.
        order = lease_order(self, d, w, 8, hold=1)
        self.assertEqual(order, [a, b, a, b, a, b, a, a])
        self.assertEqual(d.experiment(b)["state"], "completed")

    def test_priority_goes_first_and_patch_changes_it(self):
        d = self.daemon()
        a = d.create_experiment(h.spec(name="low", num_samples=1000))["id"]
        c = d.create_experiment(h.spec(name="urgent", num_samples=5, priority=5))["id"]
        self.assertEqual(d.experiment(a)["priority"], 0)
        self.assertEqual(d.experiment(c)["priority"], 5)
        d.wait_proposed(a, 20)
        d.wait_proposed(c, 5)
        w = h.Worker(d)
        # C gets every lease though it runs more trials than A.
        self.assertEqual(lease_order(self, d, w, 3, hold=10), [c, c, c])
        self.assertEqual(ok(self, d.patch(a, {"priority": 10}))["priority"], 10)
        self.assertEqual(lease_order(self, d, w, 2, hold=10), [a, a])
        self.assertEqual(ok(self, d.patch(a, {"priority": -1}))["priority"], -1)
        self.assertEqual(lease_order(self, d, w, 3, hold=10), [c, c, a])

    def test_shares_split_the_slots(self):
        d = self.daemon()
        one = d.create_experiment(h.spec(name="share-1", num_samples=1000))["id"]
        two = d.create_experiment(h.spec(name="share-2", num_samples=1000, share=2))["id"]
        self.assertEqual(d.experiment(one)["share"], 1)
        self.assertEqual(d.experiment(two)["share"], 2)
        d.wait_proposed(one, 20)
        d.wait_proposed(two, 20)
        w = h.Worker(d)
        # Three slots: share 2 holds two of them, share 1 one.
        order = lease_order(self, d, w, 9, hold=3)
        self.assertEqual(order, [one, two, two, one, two, two, one, two, two])
        # PATCH share: now 1 against 0.5, the first gets two thirds.
        ok(self, d.patch(two, {"share": 0.5}))
        order = lease_order(self, d, w, 6, hold=3)
        self.assertEqual(collections.Counter(order), {one: 4, two: 2}, order)

    def test_worker_selector_picks_workers_by_label(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=2,
                                         worker_selector={"gpu": "a100"}))["id"]
        self.assertEqual(d.experiment(eid)["worker_selector"], {"gpu": "a100"})
        d.wait_proposed(eid, 2)
        plain = h.Worker(d, name="plain")
        other = h.Worker(d, name="v100", labels={"gpu": "v100"})
        for w in (plain, other):
            for _ in range(3):
                self.assertEqual(w.lease(wait_s=0), (204, None), w.registration)
        self.assertEqual(plain.lease(wait_s=1), (204, None))
        a100 = h.Worker(d, name="a100", labels={"gpu": "a100", "team": "vision"})
        t = a100.lease_one(wait_s=0)
        self.assertEqual(t["experiment_id"], eid)
        self.assertEqual(t["worker_id"], a100.id)
        workers = {x["name"]: x for x in d.ok("GET", "/api/v1/workers")["items"]}
        self.assertEqual(workers["a100"]["labels"], {"gpu": "a100", "team": "vision"})
        self.assertEqual(workers["v100"]["labels"], {"gpu": "v100"})
        self.assertEqual(workers["plain"]["labels"], {})
        # Bad labels are refused at registration, naming the label.
        self.assertError(d.call("POST", "/api/v1/workers", {"name": "x", "labels": {"gpu": 1}}),
                         400, "invalid_argument", "labels.gpu")


class RealWorkerLabels(wh.WorkerTestCase):
    """7 with rung-worker --label."""

    def test_only_the_labelled_rung_worker_runs_the_selected_trials(self):
        d = self.daemon()
        prog = self.script("quick.py", QUICK)
        eid = d.create_experiment(wh.command_spec(
            [wh.PYTHON, prog, "2", "0"], num_samples=2, worker_selector={"gpu": "a100"}))["id"]
        plain = self.worker(d, "plain", cpu_slots=2, extra=["--lease-wait-s", "1"])
        h.wait_until(lambda: "plain" in self.worker_ids(d), 10, "the plain worker to register")
        time.sleep(1.0)
        self.assertEqual(d.experiment(eid)["counts"]["pending"], 2, self.explain(d, plain))
        labelled = self.worker(d, "labelled", cpu_slots=2,
                               extra=["--label", "gpu=a100", "--lease-wait-s", "1"])
        exp = h.wait_until(lambda: (lambda e: e if e["state"] != "running" or not labelled.alive()
                                    else None)(d.experiment(eid)), 30,
                           "the labelled worker to run the experiment")
        self.assertTrue(labelled.alive(), self.explain(d, labelled))
        self.assertEqual(exp["state"], "completed", self.explain(d, plain, labelled))
        self.assertEqual(exp["counts"]["completed"], 2)
        ids = self.worker_ids(d)
        self.assertEqual({t["worker_id"] for t in d.all_trials(eid)}, {ids["labelled"]})
        workers = {x["name"]: x for x in d.ok("GET", "/api/v1/workers")["items"]}
        self.assertEqual(workers["labelled"]["labels"], {"gpu": "a100"})
        self.assertEqual(workers["plain"]["labels"], {})
        self.assertEqual(workers["plain"]["running_trials"], [])


class UserStop(h.RungdTestCase):
    """8: POST /api/v1/trials/{id}/stop."""

    def test_user_stops_running_and_pending_trials(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=3))["id"]
        d.wait_proposed(eid, 3)
        w = h.Worker(d)
        run, beat = w.lease_one(), w.lease_one()
        w.report_ok(run, 1, {"loss": 0.5})
        # Running: told at its next report; until then the reply shows it running.
        t = ok(self, d.stop_trial(run["id"]))
        self.assertEqual((t["id"], t["state"]), (run["id"], "running"), t)
        self.assertEqual(w.report_ok(run, 2, {"loss": 0.25}), "stop")
        t = d.trial(run["id"])
        self.assertEqual((t["state"], t["stopped_by"]), ("stopped", "user"), t)
        self.assertEqual(t["best"]["value"], 0.25)
        # Running, told at its next heartbeat.
        ok(self, d.stop_trial(beat["id"]))
        self.assertEqual(w.heartbeat([beat["id"]]), (200, {"stop": [beat["id"]]}))
        t = d.trial(beat["id"])
        self.assertEqual((t["state"], t["stopped_by"]), ("stopped", "user"), t)
        # Pending: stopped at once.
        [pending] = d.all_trials(eid)[2:]
        self.assertEqual(pending["state"], "pending")
        t = ok(self, d.stop_trial(pending["id"]))
        self.assertEqual((t["state"], t["stopped_by"]), ("stopped", "user"), t)
        self.assertIsNotNone(t["ended_at"])
        # Ended: 409; unknown: 404.
        for tid in (run["id"], beat["id"], pending["id"]):
            self.assertError(d.stop_trial(tid), 409, "conflict")
        self.assertError(d.stop_trial(10**6), 404, "not_found")
        # Stopped trials count as finished: the experiment completes, its
        # best from the stopped trial.
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["stopped"], 3, exp["counts"])
        self.assertEqual(exp["best"]["value"], 0.25)
        self.assertEqual(w.lease(wait_s=0), (204, None))


class RetryFailed(h.RungdTestCase):
    """9: POST /api/v1/experiments/{id}/retry-failed."""

    def test_failed_experiment_runs_again(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=2, max_failed_trials=2))["id"]
        d.wait_proposed(eid, 2)
        w = h.Worker(d)
        first = []
        for _ in range(2):
            t = w.lease_one()
            w.report_ok(t, 1, {"loss": 3.0})
            w.finish_ok(t, "failed", "exit status 1\nRuntimeError: CUDA out of memory")
            first.append(t)
        exp = d.experiment(eid)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("failed", "max_failed_trials"))
        self.assertEqual(exp["error"],
                         "2 trials failed (max_failed_trials is 2); the most frequent error, "
                         "in 2 of them: exit status 1: RuntimeError: CUDA out of memory")
        self.assertError(d.patch(eid, {"num_samples": 3}), 409, "conflict")

        doc = ok(self, d.retry_failed(eid))
        self.assertEqual(doc["retried"], 2, doc)
        exp = doc["experiment"]
        self.assertEqual(exp["state"], "running", exp)
        self.assertIsNone(exp["ended_reason"])
        self.assertIsNone(exp["error"])
        self.assertEqual(exp["counts"]["pending"], 2, exp["counts"])
        for t in first:
            cur = d.trial(t["id"])
            self.assertEqual((cur["state"], cur["attempt"]), ("pending", 2), cur)
        again = [w.lease_one(), w.lease_one()]
        self.assertEqual(sorted(t["id"] for t in again), sorted(t["id"] for t in first))
        for t in again:
            self.assertEqual(t["attempt"], 2)
            self.assertEqual(w.report_ok(t, 1, {"loss": 0.5}), "continue")
            w.finish_ok(t)
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["completed"], 2, exp["counts"])
        self.assertEqual(exp["ended_reason"], "all_trials_ended")
        self.assertEqual(exp["best"]["value"], 0.5)
        for t in first:
            self.assertEqual([i["step"] for i in d.metrics_of(t["id"])], [1])
            self.assertEqual(d.metrics_of(t["id"])[0]["metrics"]["loss"], 0.5)
        # Nothing failed now: retried 0. A canceled experiment: 409.
        self.assertEqual(ok(self, d.retry_failed(eid))["retried"], 0)
        gone = d.create_experiment(h.spec(num_samples=1))["id"]
        d.ok("POST", "/api/v1/experiments/%d/cancel" % gone)
        self.assertError(d.retry_failed(gone), 409, "conflict")
        self.assertError(d.retry_failed(10**6), 404, "not_found")


class Delete(h.RungdTestCase):
    """10: DELETE /api/v1/experiments/{id}."""

    def test_delete_only_what_has_ended(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(name="doomed", num_samples=2))["id"]
        # Below doomed's priority, so that doomed's two trials come first
        # (equal priorities would share the slot by turns).
        keep = d.create_experiment(h.spec(name="kept", num_samples=1, priority=-1))["id"]
        d.wait_proposed(eid, 2)
        w = h.Worker(d)
        t1 = w.lease_one()
        self.assertEqual(t1["experiment_id"], eid)
        self.assertError(d.delete(eid), 409, "conflict")  # running
        ok(self, d.pause(eid))
        self.assertError(d.delete(eid), 409, "conflict")  # paused
        ok(self, d.resume(eid))
        w.report_ok(t1, 1, {"loss": 0.5})
        w.finish_ok(t1)
        t2 = w.lease_one()
        self.assertEqual(t2["experiment_id"], eid)
        w.report_ok(t2, 1, {"loss": 0.4})
        w.finish_ok(t2)
        d.wait_state(eid, "completed")

        self.assertEqual(ok(self, d.delete(eid)), {"deleted": eid, "trials": 2})
        self.assertError(d.call("GET", "/api/v1/experiments/%d" % eid), 404, "not_found")
        self.assertError(d.call("GET", "/api/v1/experiments/%d/trials" % eid), 404, "not_found")
        for t in (t1, t2):
            self.assertError(d.call("GET", "/api/v1/trials/%d" % t["id"]), 404, "not_found")
            self.assertError(d.call("GET", "/api/v1/trials/%d/metrics" % t["id"]), 404,
                             "not_found")
        listing = d.ok("GET", "/api/v1/experiments")
        self.assertEqual([e["id"] for e in listing["items"]], [keep])
        self.assertEqual(listing["total"], 1)
        self.assertError(d.delete(eid), 404, "not_found")

        # Canceled with a trial still running (it stops at its next
        # report): 409 until it has stopped.
        t3 = w.lease_one()
        self.assertEqual(t3["experiment_id"], keep)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % keep)
        self.assertError(d.delete(keep), 409, "conflict")
        self.assertEqual(w.report_ok(t3, 1, {"loss": 1.0}), "stop")
        self.assertEqual(ok(self, d.delete(keep)), {"deleted": keep, "trials": 1})
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 0)

        # Ids are never given twice (docs/api.md), a restart included: the
        # deleted experiments' ids and their trials' ids stay used.
        d.stop()
        d.restart()
        again = d.create_experiment(h.spec(name="after", num_samples=1))["id"]
        self.assertGreater(again, keep)
        d.wait_proposed(again, 1)
        t4 = w.lease_one()
        self.assertGreater(t4["id"], t3["id"])

    @h.skip_on_postgres("a trigger made with Python's sqlite3 makes the delete fail part way")
    def test_a_delete_that_fails_part_way_deletes_nothing(self):
        # The handler deletes in several statements inside the batch's
        # transaction (store_delete_experiment); one that fails after others
        # ran must leave every row, not commit the reports' deletion alone.
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=1))["id"]
        d.wait_proposed(eid, 1)
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 0.5})
        w.finish_ok(t)
        d.wait_state(eid, "completed")
        con = sqlite3.connect(d.db, timeout=10)
        try:
            # The trials' rows go after the reports' (store.c): refuse them.
            con.execute("CREATE TRIGGER keep_trials BEFORE DELETE ON trials "
                        "BEGIN SELECT RAISE(ABORT, 'kept by the test'); END")
            con.commit()
            self.assertError(d.delete(eid), 500, "internal")
            con.execute("DROP TRIGGER keep_trials")
            con.commit()
        finally:
            con.close()
        self.assertEqual([m["step"] for m in d.metrics_of(t["id"])], [1])
        self.assertEqual(d.experiment(eid)["state"], "completed")
        self.assertEqual(ok(self, d.delete(eid)), {"deleted": eid, "trials": 1})


class StopRules(h.RungdTestCase):
    """12: stop.time_budget_s, stop.metric_threshold, stop.patience."""

    def test_time_budget(self):
        d = self.daemon()
        started = time.monotonic()
        exp = d.create_experiment(h.spec(num_samples=5, stop={"time_budget_s": 1.5}))
        eid = exp["id"]
        self.assertEqual(exp["stop"], {"time_budget_s": 1.5})
        d.wait_proposed(eid, 5)
        w = h.Worker(d)
        a, b = w.lease_one(), w.lease_one()
        self.assertEqual(w.report_ok(a, 1, {"loss": 0.5}), "continue")
        exp = d.wait_experiment(eid, lambda e: e["state"] != "running", 5,
                                "the time budget to end the experiment")
        elapsed = time.monotonic() - started
        self.assertGreaterEqual(elapsed, 1.4)
        self.assertLess(elapsed, 4.0)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("completed", "time_budget"))
        self.assertEqual(exp["counts"]["canceled"], 3, exp["counts"])
        # The running trials stop at their next report or heartbeat.
        self.assertEqual(w.report_ok(a, 2, {"loss": 0.4}), "stop")
        self.assertEqual(w.heartbeat([b["id"]]), (200, {"stop": [b["id"]]}))
        for t in (a, b):
            cur = d.trial(t["id"])
            self.assertEqual((cur["state"], cur["stopped_by"]), ("stopped", "experiment"), cur)
        self.assertEqual(w.lease(wait_s=0), (204, None))

    def test_metric_threshold(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=5, mode="max", metric="acc",
                                         stop={"metric_threshold": 0.9}))["id"]
        d.wait_proposed(eid, 5)
        w = h.Worker(d)
        a, b = w.lease_one(), w.lease_one()
        self.assertEqual(w.report_ok(a, 1, {"acc": 0.5}), "continue")
        self.assertEqual(w.report_ok(b, 1, {"acc": 0.89}), "continue")
        self.assertEqual(d.experiment(eid)["state"], "running")
        self.assertEqual(w.report_ok(a, 2, {"acc": 0.9}), "stop")
        exp = d.experiment(eid)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("completed", "metric_threshold"))
        self.assertEqual(exp["best"]["value"], 0.9)
        self.assertEqual(exp["best"]["trial_id"], a["id"])
        self.assertEqual(w.report_ok(b, 2, {"acc": 0.95}), "stop")
        cur = d.trial(b["id"])
        self.assertEqual((cur["state"], cur["stopped_by"]), ("stopped", "experiment"), cur)
        self.assertIn(d.trial(a["id"])["state"], ("stopped", "completed"))
        self.assertEqual(d.experiment(eid)["counts"]["canceled"], 3)

    def test_patience(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=10, stop={"patience": 3}))["id"]
        d.wait_proposed(eid, 10)
        w = h.Worker(d)
        for i, v in enumerate([1.0, 0.5, 0.7, 0.5, 0.9]):
            self.assertEqual(d.experiment(eid)["state"], "running", "after %d trials" % i)
            t = w.lease_one()
            w.report_ok(t, 1, {"loss": v})
            w.finish_ok(t)
        # 0.5 at the second trial; three more without a better one.
        exp = d.experiment(eid)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("completed", "patience"))
        self.assertEqual(exp["counts"]["completed"], 5, exp["counts"])
        self.assertEqual(exp["counts"]["canceled"], 5, exp["counts"])
        self.assertEqual(exp["best"]["value"], 0.5)


class Logs(h.RungdTestCase):
    """13: `rung logs TRIAL` after a kill -9 of rungd."""

    def rung(self, d, *args):
        env = dict(os.environ)
        env.pop("RUNG_SERVER", None)
        env.pop("RUNG_TOKEN", None)
        return subprocess.run([rung_cli(), "--server", d.url] + list(args), capture_output=True,
                              text=True, env=env, timeout=20, cwd=self.tmp)

    def test_rung_logs_prints_the_tail_after_kill_9(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=2))["id"]
        d.wait_proposed(eid, 2)
        w = h.Worker(d)
        a, b = w.lease_one(), w.lease_one()
        # a: its log comes with the finish; b: with a heartbeat, then its
        # failure writes the trial (docs/api.md, the trial object's log_tail).
        self.assertEqual(w.heartbeat([a["id"], b["id"]], logs={
            str(a["id"]): "epoch 1: loss 0.5\n", str(b["id"]): "loading data\nCUDA error: boom\n"}),
            (200, {"stop": []}))
        w.report_ok(a, 1, {"loss": 0.5})
        w.finish_ok(a, log="epoch 1: loss 0.5\nepoch 2: loss 0.25\ndone\n")
        w.finish_ok(b, "failed", "exit status 1\nCUDA error: boom")
        d.kill9()
        d.restart()
        self.assertEqual(d.trial(a["id"])["log_tail"], "epoch 1: loss 0.5\nepoch 2: loss 0.25\ndone\n")
        self.assertEqual(d.trial(b["id"])["log_tail"], "loading data\nCUDA error: boom\n")
        p = self.rung(d, "logs", str(a["id"]))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("epoch 2: loss 0.25\ndone", p.stdout)
        p = self.rung(d, "logs", str(b["id"]))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("loading data\nCUDA error: boom", p.stdout)
        p = self.rung(d, "logs", "999999")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("not found", p.stderr)


class Restarts(h.RungdTestCase):
    """14: every state change of this issue survives kill -9 of rungd."""

    def test_control_state_survives_kill_9(self):
        d = self.daemon()
        w = h.Worker(d, name="labelled", labels={"gpu": "a100", "team": "vision"})
        # P: paused with running=pause; its running trial paused by the user.
        p = d.create_experiment(h.spec(name="paused", num_samples=2))["id"]
        d.wait_proposed(p, 2)
        held = w.lease_one()
        self.assertEqual(held["experiment_id"], p)
        w.report_ok(held, 1, {"loss": 0.8})
        ok(self, d.pause(p, running="pause"))
        self.assertEqual(w.report_ok(held, 2, {"loss": 0.7}), "stop")
        w.finish_ok(held, "failed", "killed by signal 15 (Terminated)")
        # F: failed, with its error.
        f = d.create_experiment(h.spec(name="failed", num_samples=2, max_failed_trials=1))["id"]
        d.wait_proposed(f, 2)
        t = w.lease_one()
        self.assertEqual(t["experiment_id"], f)
        w.finish_ok(t, "failed", "exit status 2\nValueError: bad lr")
        # S: one trial stopped by its user.
        s = d.create_experiment(h.spec(name="stopped", num_samples=2))["id"]
        d.wait_proposed(s, 2)
        st = w.lease_one()
        self.assertEqual(st["experiment_id"], s)
        ok(self, d.stop_trial(st["id"]))
        self.assertEqual(w.report_ok(st, 1, {"loss": 0.3}), "stop")
        # D: completed, then deleted.
        gone = d.create_experiment(h.spec(name="deleted", num_samples=1))["id"]
        d.wait_proposed(gone, 1)
        dt = w.lease_one()
        while dt["experiment_id"] != gone:  # S's other trial comes first (older)
            w.finish_ok(dt)
            dt = w.lease_one()
        w.finish_ok(dt)
        d.wait_state(gone, "completed")
        ok(self, d.delete(gone))
        # X: PATCHed.
        x = d.create_experiment(h.spec(name="patched", num_samples=1))["id"]
        ok(self, d.patch(x, {"num_samples": 3, "priority": 7, "share": 2.5,
                             "max_concurrent_trials": 2}))

        before = {e: d.experiment(e) for e in (p, f, s, x)}
        d.kill9()
        d.restart()

        exp = d.experiment(p)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("paused", None))
        cur = d.trial(held["id"])
        self.assertEqual((cur["state"], cur["paused_by"], cur["step"]), ("paused", "user", 2),
                         cur)
        exp = d.experiment(f)
        self.assertEqual((exp["state"], exp["ended_reason"]), ("failed", "max_failed_trials"))
        self.assertEqual(exp["error"], before[f]["error"])
        self.assertEqual(exp["error"],
                         "1 trials failed (max_failed_trials is 1); the most frequent error, "
                         "in 1 of them: exit status 2: ValueError: bad lr")
        cur = d.trial(st["id"])
        self.assertEqual((cur["state"], cur["stopped_by"]), ("stopped", "user"), cur)
        self.assertError(d.call("GET", "/api/v1/experiments/%d" % gone), 404, "not_found")
        self.assertError(d.call("GET", "/api/v1/trials/%d" % dt["id"]), 404, "not_found")
        self.assertNotIn(gone, [e["id"] for e in d.ok("GET", "/api/v1/experiments")["items"]])
        exp = d.experiment(x)
        self.assertEqual((exp["num_samples"], exp["total_trials"], exp["priority"], exp["share"],
                          exp["max_concurrent_trials"]), (3, 3, 7, 2.5, 2), exp)
        for e in (p, f, s, x):
            after = d.experiment(e)
            for key in ("state", "ended_reason", "error", "num_samples", "priority", "share",
                        "max_failed_trials", "total_trials"):
                self.assertEqual(after[key], before[e][key], "experiment %d %s" % (e, key))
        workers = {v["name"]: v for v in d.ok("GET", "/api/v1/workers")["items"]}
        self.assertEqual(workers["labelled"]["labels"], {"gpu": "a100", "team": "vision"})

        # X, priority 7, is leased first; canceled, the paused P is resumed:
        # its user-paused trial goes first, to the worker that paused it,
        # from step 2.
        x1 = w.lease_one()
        self.assertEqual(x1["experiment_id"], x)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % x)
        self.assertEqual(ok(self, d.resume(p))["state"], "running")
        again = w.lease_one()
        self.assertEqual((again["id"], again["resume_step"], again["attempt"]),
                         (held["id"], 2, held["attempt"]), again)
        self.assertEqual(w.report_ok(again, 3, {"loss": 0.6}), "continue")
        w.finish_ok(again)
        self.assertEqual([i["step"] for i in d.metrics_of(held["id"])], [1, 2, 3])


class GoneWorkers(h.RungdTestCase):
    """15: a worker that stops calling is gone, then leaves the listing."""

    def test_gone_workers_leave_the_listing_but_not_the_history(self):
        d = self.daemon("--lease-s", "1", "--forget-workers-s", "2")
        h.Worker(d, name="quiet")  # registers, then never calls again
        busy = h.Worker(d, name="busy")

        def listing(query=""):
            return {v["name"]: v for v in d.ok("GET", "/api/v1/workers" + query)["items"]}

        first = listing()
        self.assertEqual(first["quiet"]["state"], "alive")
        self.assertTrue(first["quiet"]["alive"])
        went = time.monotonic()

        def gone():
            busy.heartbeat([])
            v = listing().get("quiet")
            return v if v and v["state"] == "gone" else None

        v = h.wait_until(gone, 5, "the quiet worker to be gone")
        self.assertFalse(v["alive"])
        self.assertGreaterEqual(time.monotonic() - went, 0.9)

        def forgotten():
            busy.heartbeat([])
            return "quiet" not in listing()

        h.wait_until(forgotten, 8, "the gone worker to leave the listing")
        self.assertGreaterEqual(time.monotonic() - went, 1.9)
        now = listing()
        self.assertEqual(now["busy"]["state"], "alive")
        self.assertEqual(d.ok("GET", "/api/v1/workers")["total"], 1)
        every = listing("?all=true")
        self.assertEqual(set(every), {"quiet", "busy"})
        self.assertEqual(every["quiet"]["state"], "gone")
        self.assertEqual(d.ok("GET", "/api/v1/workers?all=true")["total"], 2)
        self.assertError(d.call("GET", "/api/v1/workers?all=maybe"), 400, "invalid_argument",
                         "all")


if __name__ == "__main__":
    wh.main()
