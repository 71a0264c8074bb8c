"""Integration tests: durability and restarts.

docs/api.md: "A report answered 200 is durable: it survives kill -9 of the daemon",
and on SIGTERM rungd shuts down cleanly with running trials keeping their
leases. These tests acknowledge reports, kill or stop rungd, restart it on the
same database file and check that nothing acknowledged is lost and that the
same workers can carry on with the same lease tokens.
"""

import json
import os
import signal
import sqlite3
import threading
import time

import rungd_harness as h

STOP_PROMPTLY_S = 5.0


def value(trial_number, step):
    """The loss a simulated trial reports; distinct for every (trial, step)."""
    return 10.0 / (step + 1) + 0.001 * trial_number


class KillNine(h.RungdTestCase):
    """Issue test 6."""

    TRIALS = 4
    STEPS = 50  # 4 x 50 = 200 acknowledged reports

    def test_acknowledged_reports_survive_kill_9(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(name="durable", num_samples=self.TRIALS,
                                         max_concurrent_trials=0))
        eid = exp["id"]
        w = h.Worker(d, name="durable-worker")
        leased = [w.lease_one() for _ in range(self.TRIALS)]
        self.assertEqual(len({t["id"] for t in leased}), self.TRIALS)

        # Four reporters at once, so the daemon batches commits; every report
        # counted here was answered 200.
        acked = {t["id"]: [] for t in leased}
        errors = []

        def reporter(t):
            try:
                for step in range(1, self.STEPS + 1):
                    v = value(t["number"], step)
                    self.assertEqual(w.report_ok(t, step, {"loss": v, "step_x2": 2 * step}),
                                     "continue")
                    acked[t["id"]].append((step, v))
            except BaseException as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=reporter, args=(t,), daemon=True) for t in leased]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
            self.assertFalse(th.is_alive(), "a reporter hung")
        self.assertEqual(errors, [])
        self.assertEqual(sum(len(v) for v in acked.values()), self.TRIALS * self.STEPS)

        d.kill9()  # right after the last acknowledgement
        d.restart()

        # Every acknowledged report is there, once, with its values.
        for t in leased:
            items = d.metrics_of(t["id"])
            self.assertEqual([i["step"] for i in items], [s for s, _ in acked[t["id"]]],
                             "reports of trial %d after kill -9" % t["id"])
            for item, (step, v) in zip(items, acked[t["id"]]):
                self.assertEqual(item["metrics"]["loss"], v)
                self.assertEqual(item["metrics"]["step_x2"], 2 * step)
            cur = d.trial(t["id"])
            self.assertEqual((cur["state"], cur["attempt"]), ("running", 1))
            self.assertEqual(cur["step"], self.STEPS)
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "running")
        self.assertEqual(exp["name"], "durable")
        self.assertEqual(exp["counts"]["running"], self.TRIALS, exp["counts"])
        best = min(v for vs in acked.values() for _, v in vs)
        self.assertEqual(exp["best"]["value"], best)

        # The same worker carries on with the same lease tokens.
        for t in leased:
            again = w.report(t, self.STEPS, {"loss": value(t["number"], self.STEPS),
                                             "step_x2": 2 * self.STEPS})
            self.assertEqual(again, (200, {"action": "continue"}), "a retried report")
            w.report_ok(t, self.STEPS + 1, {"loss": 0.5})
            w.finish_ok(t)
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["completed"], self.TRIALS, exp["counts"])
        self.assertEqual(exp["best"]["value"], min(best, 0.5))
        for t in leased:
            self.assertEqual(len(d.metrics_of(t["id"])), self.STEPS + 1)

    def test_kill_9_while_reports_stream_in(self):
        # kill -9 in the middle of a stream of reports: every report that got
        # its 200 is there after the restart; the only ones that may be there
        # without a 200 are those in flight at the kill (one per reporter).
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=self.TRIALS))
        w = h.Worker(d)
        leased = [w.lease_one() for _ in range(self.TRIALS)]
        acked = {t["id"]: [] for t in leased}
        stop = threading.Event()

        def reporter(t):
            step = 0
            while not stop.is_set() and step < 100000:
                step += 1
                try:
                    status, doc = w.report(t, step, {"loss": value(t["number"], step)})
                except AssertionError:
                    return  # the daemon is gone
                if status != 200:
                    return
                acked[t["id"]].append(step)

        threads = [threading.Thread(target=reporter, args=(t,), daemon=True) for t in leased]
        for th in threads:
            th.start()
        h.wait_until(lambda: all(len(v) >= 100 for v in acked.values()), 30,
                     "100 acknowledged reports per trial")
        d.kill9()
        stop.set()
        for th in threads:
            th.join(20)
            self.assertFalse(th.is_alive(), "a reporter hung after kill -9")
        d.restart()
        for t in leased:
            stored = [i["step"] for i in d.metrics_of(t["id"])]
            mine = acked[t["id"]]
            self.assertEqual(stored[:len(mine)], mine,
                             "trial %d lost acknowledged reports" % t["id"])
            self.assertLessEqual(len(stored) - len(mine), 1, "reports nobody sent")
            for item in d.metrics_of(t["id"]):
                self.assertEqual(item["metrics"]["loss"], value(t["number"], item["step"]))
        self.assertEqual(d.experiment(exp["id"])["counts"]["running"], self.TRIALS)

    def test_every_acknowledged_change_survives_kill_9(self):
        # Not only reports: creations, cancels, finishes and failures that
        # were answered are all there after kill -9.
        d = self.daemon()
        w = h.Worker(d, name="survivor")
        gone = d.create_experiment(h.spec(name="to-cancel", num_samples=3))
        told = w.lease_one()  # running when its experiment is canceled
        d.ok("POST", "/api/v1/experiments/%d/cancel" % gone["id"])
        exp = d.create_experiment(h.spec(name="kept", num_samples=3))
        done, broken, held = w.lease_one(), w.lease_one(), w.lease_one()
        w.report_ok(done, 1, {"loss": 0.25})
        w.finish_ok(done)
        w.finish_ok(broken, "failed", "segfault in trial")
        before = {t["id"]: t for t in d.all_trials(exp["id"])}
        d.kill9()
        d.restart()
        self.assertEqual(d.experiment(gone["id"])["state"], "canceled")
        self.assertEqual(d.experiment(gone["id"])["name"], "to-cancel")
        self.assertEqual(w.report_ok(told, 1, {"loss": 9.0}), "stop")
        after = {t["id"]: t for t in d.all_trials(exp["id"])}
        self.assertEqual(set(after), set(before))
        for tid, t in before.items():
            for key in ("state", "config", "attempt", "error", "worker_id", "number"):
                self.assertEqual(after[tid][key], t[key], "trial %d %s" % (tid, key))
        self.assertEqual(after[done["id"]]["state"], "completed")
        self.assertEqual(after[broken["id"]]["error"], "segfault in trial")
        self.assertEqual(after[held["id"]]["state"], "running")
        e = d.experiment(exp["id"])
        self.assertEqual(e["best"]["value"], 0.25)
        self.assertEqual(e["best"]["trial_id"], done["id"])
        workers = d.ok("GET", "/api/v1/workers")["items"]
        self.assertIn("survivor", [x["name"] for x in workers])
        w.finish_ok(held)
        d.wait_state(exp["id"], "completed")

    def test_pending_trials_and_workers_survive_kill_9(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=3))
        eid = exp["id"]
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 1.0})
        d.kill9()
        d.restart()
        self.assertEqual(d.experiment(eid)["state"], "running")
        # The worker id stays valid; the remaining trials are leased after the restart.
        rest = [w.lease_one(), w.lease_one()]
        self.assertEqual(len({t["id"]} | {r["id"] for r in rest}), 3)
        for r in rest + [t]:
            w.report_ok(r, 2, {"loss": 0.5})
            w.finish_ok(r)
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["completed"], 3)
        self.assertEqual(exp["best"]["value"], 0.5)

    def test_expired_leases_are_noticed_after_restart(self):
        # A trial whose worker died while rungd was down is not stuck forever:
        # after the fresh lease window it is retried as worker lost.
        d = self.daemon("--lease-s", "1")
        exp = d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        d.kill9()
        d.restart()
        cur = h.wait_until(lambda: (lambda x: x if x["state"] != "running" else None)(
            d.trial(t["id"])), 8.0, "the lease to run out after a restart")
        self.assertEqual(cur["state"], "pending")
        self.assertEqual((cur["attempt"], cur["worker_losses"]), (2, 1))
        self.assertIn("worker lost", cur["error"].lower())
        # The loss count survives a restart too.
        d.kill9()
        d.restart()
        self.assertEqual(d.trial(t["id"])["worker_losses"], 1)
        again = w.lease_one()
        w.report_ok(again, 1, {"loss": 0.5})
        w.finish_ok(again)
        d.wait_state(exp["id"], "completed")


class Sigterm(h.RungdTestCase):
    """Issue test 11."""

    def test_sigterm_exits_0_and_restart_resumes(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=3, searcher={"type": "random", "seed": 5}))
        eid = exp["id"]
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 2.0})
        w.report_ok(t, 2, {"loss": 1.0})
        configs_before = {x["id"]: x["config"] for x in d.all_trials(eid)}

        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        rc = d.wait_exit(STOP_PROMPTLY_S)
        self.assertIsNotNone(rc, "rungd still runs %.0f s after SIGTERM" % STOP_PROMPTLY_S)
        self.assertEqual(rc, 0, d.diagnostics())
        self.assertLess(time.monotonic() - t0, STOP_PROMPTLY_S)

        d.restart()
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "running")
        configs_after = {x["id"]: x["config"] for x in d.all_trials(eid)}
        for tid, config in configs_before.items():
            self.assertEqual(configs_after.get(tid), config, "trial %d after restart" % tid)
        cur = d.trial(t["id"])
        self.assertEqual((cur["state"], cur["attempt"], cur["step"]), ("running", 1, 2))
        self.assertEqual([i["step"] for i in d.metrics_of(t["id"])], [1, 2])
        self.assertEqual(w.report_ok(t, 3, {"loss": 0.5}), "continue")
        w.finish_ok(t)
        for _ in range(2):
            r = w.lease_one()
            w.report_ok(r, 1, {"loss": 3.0})
            w.finish_ok(r)
        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["completed"], 3)
        self.assertEqual(exp["best"]["value"], 0.5)
        self.assertEqual(exp["best"]["trial_id"], t["id"])

    def test_sigterm_during_a_long_poll(self):
        # A worker waiting in a long poll must not hold up the shutdown.
        d = self.daemon()
        w = h.Worker(d)
        th = threading.Thread(target=lambda: self._quiet_lease(w), daemon=True)
        th.start()
        time.sleep(0.5)
        d.signal(signal.SIGTERM)
        rc = d.wait_exit(STOP_PROMPTLY_S)
        self.assertIsNotNone(rc, "rungd still runs %.0f s after SIGTERM with a worker "
                             "in a long poll" % STOP_PROMPTLY_S)
        self.assertEqual(rc, 0)
        th.join(25)

    @staticmethod
    def _quiet_lease(w):
        try:
            w.lease(wait_s=20)
        except AssertionError:
            pass  # the connection may be closed by the shutdown

    def test_signal_right_after_start_exits_0(self):
        # Once it says it listens, it runs; a SIGINT or SIGTERM at that very
        # moment (a supervisor stopping it, a user's Ctrl-C) must still be a
        # clean shutdown, never a death by the signal. Repeated, because the
        # window is short.
        outcomes = []
        for i in range(20):
            d = self.daemon(db=self.tmp + "/start-stop-%d.db" % i)
            sig = signal.SIGINT if i % 2 else signal.SIGTERM
            d.signal(sig)
            rc = d.wait_exit(STOP_PROMPTLY_S)
            if rc is None:
                d.kill9()
            outcomes.append((sig.name, rc))
        bad = [o for o in outcomes if o[1] != 0]
        self.assertEqual(bad, [], "exit statuses (negative: killed by that signal) of "
                         "rungd signalled right after its listening line")


class Migration(h.RungdTestCase):
    """A database written by a rungd of schema version 1 opens in this one
    with everything in it, migrated to the current version (002: paused
    trials and rungs; 003: the pending line's order)."""

    def test_version_1_database_is_migrated_without_loss(self):
        schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                              "schema", "001_init.sql")
        db = os.path.join(self.tmp, "v1.db")
        spec = h.spec(name="old", num_samples=3)
        spec["searcher"] = {"type": "random", "seed": 5}
        con = sqlite3.connect(db)
        with open(schema) as f:
            con.executescript(f.read())
        con.execute("PRAGMA user_version = 1")
        con.execute("INSERT INTO experiments VALUES (1, 'old', ?, 5, 'running', 3, 1000, NULL)",
                    (json.dumps(spec),))
        con.execute("INSERT INTO workers VALUES (1, 'w', 'host', '[]', 4, 1000, 2000, NULL)")
        con.execute("INSERT INTO trials (id, experiment_id, number, state, config, attempt, "
                    "worker_id, created_at, started_at, ended_at) VALUES "
                    "(1, 1, 0, 'completed', '{\"x\": 0.5}', 1, 1, 1000, 1100, 1200)")
        con.execute("INSERT INTO trials (id, experiment_id, number, state, config, attempt, "
                    "worker_id, error, created_at, started_at, ended_at) VALUES "
                    "(2, 1, 1, 'failed', '{\"x\": 0.25}', 1, 1, 'boom', 1000, 1100, 1300)")
        con.execute("INSERT INTO trials (id, experiment_id, number, state, config, attempt, "
                    "created_at) VALUES (3, 1, 2, 'pending', '{\"x\": 0.75}', 1, 1000)")
        for step in (1, 2, 3):
            con.execute("INSERT INTO reports VALUES (1, 1, ?, 1150, ?, 'continue')",
                        (step, json.dumps({"loss": 1.0 / step})))
        # An ended experiment (maximizing) is not loaded at start: it is read
        # from its rows, whose summaries migration 004 fills from the reports.
        done = h.spec(name="done", num_samples=1, mode="max",
                      scheduler={"type": "fifo", "time_attr": "epoch"})
        con.execute("INSERT INTO experiments VALUES (2, 'done', ?, 6, 'completed', 1, 1000, 1500)",
                    (json.dumps(done),))
        con.execute("INSERT INTO trials (id, experiment_id, number, state, config, attempt, "
                    "worker_id, created_at, started_at, ended_at) VALUES "
                    "(4, 2, 0, 'completed', '{\"x\": 0.1}', 1, 1, 1000, 1100, 1400)")
        for step, loss in ((1, 0.2), (2, 0.7), (3, 0.4)):
            con.execute("INSERT INTO reports VALUES (4, 1, ?, 1150, ?, 'continue')",
                        (step, json.dumps({"loss": loss, "acc": 1 - loss, "epoch": 10 * step})))
        con.commit()
        con.close()

        d = self.daemon(db=db)
        exp = d.experiment(1)
        self.assertEqual(exp["name"], "old")
        self.assertEqual(exp["state"], "running")
        self.assertEqual(exp["counts"]["completed"], 1, exp["counts"])
        self.assertEqual(exp["counts"]["failed"], 1, exp["counts"])
        self.assertEqual(exp["counts"]["pending"], 1, exp["counts"])
        self.assertEqual(exp["best"]["value"], 1.0 / 3)
        self.assertEqual([t["config"]["x"] for t in d.all_trials(1)], [0.5, 0.25, 0.75])
        self.assertEqual(d.trial(2)["error"], "boom")
        self.assertEqual([m["step"] for m in d.metrics_of(1)], [1, 2, 3])
        self.assertIsNone(d.trial(1)["rung"])
        old = d.trial(4)
        self.assertEqual((old["best"], old["step"], old["last"]),
                         ({"value": 0.7, "step": 2}, 30, {"loss": 0.4, "acc": 0.6, "epoch": 30}))
        ended = d.experiment(2)
        self.assertEqual((ended["state"], ended["counts"]["completed"], ended["best"]["trial_id"],
                          ended["best"]["value"]), ("completed", 1, 4, 0.7))
        self.assertEqual(d.trials(2, sort="value")["items"][0]["id"], 4)
        # The old experiment goes on, and a trial can now be paused.
        w = h.Worker(d)
        t = w.lease_one()
        self.assertEqual(t["id"], 3)
        self.assertEqual(t["resume_step"], 0)
        w.report_ok(t, 1, {"loss": 0.1})
        w.finish_ok(t)
        self.assertEqual(d.wait_state(1, "completed")["best"]["value"], 0.1)
        # Two trials: with one, the end game would promote it right away.
        promote = h.spec(num_samples=2, scheduler={"type": "asha", "promote": True,
                                                  "max_t": 9, "reduction_factor": 3})
        eid = d.create_experiment(promote)["id"]
        t = w.lease_one()
        self.assertEqual(w.report_ok(t, 1, {"loss": 1.0}), "stop")  # paused at rung 1
        self.assertEqual(d.trial(t["id"])["state"], "paused")
        d.stop()
        con = sqlite3.connect(db)
        versions = [f for f in os.listdir(os.path.dirname(schema)) if f.endswith(".sql")]
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], len(versions))
        self.assertEqual(con.execute("PRAGMA foreign_key_check").fetchall(), [])
        # A pending trial's place in line is stored (a new one's is its number).
        self.assertEqual(con.execute("SELECT state, rung, queue_pos FROM trials "
                                     "WHERE experiment_id = ? ORDER BY number",
                                     (eid,)).fetchall(),
                         [("paused", 1.0, None), ("pending", None, 1)])
        con.close()


class StoredSpecs(h.RungdTestCase):
    """Every spec rungd accepted is accepted again at restart, unchanged:
    a hyperband experiment's stored spec once stopped rungd from starting."""

    def test_every_scheduler_survives_a_restart(self):
        d = self.daemon()
        schedulers = [None, {"type": "fifo"}, {"type": "asha", "max_t": 9},
                      {"type": "hyperband", "max_t": 9, "reduction_factor": 3},
                      {"type": "median", "grace_period": 2}]
        ids = []
        for sched in schedulers:
            sp = h.spec(num_samples=2)
            if sched is not None:
                sp["scheduler"] = sched
            ids.append(d.create_experiment(sp)["id"])
        before = [d.experiment(i) for i in ids]
        d.stop()
        d.start()
        for i, old in zip(ids, before):
            new = d.experiment(i)
            self.assertEqual(new["scheduler"], old["scheduler"])
            self.assertEqual(new["state"], "running")


if __name__ == "__main__":
    h.main()
