"""Integration tests: leases, reports and the worker protocol.

Lease expiry and retries (rungd runs with --lease-s 1 here, so a lost worker
is noticed in about a second), heartbeats and reports renewing leases, stale
lease tokens, idempotent reports, failures and retries reported by the
worker, diverged (NaN) runs, max_concurrent_trials and resource matching.
"""

import json
import os
import socket
import threading
import time

import rungd_harness as h

EXPIRY_S = 8.0  # bound on noticing a 1 s lease that ran out


class LeaseExpiry(h.RungdTestCase):
    """Issue tests 2 and 4."""

    def test_lost_worker_is_retried_then_failed(self):
        d = self.daemon("--lease-s", "1")
        exp = d.create_experiment(h.spec(num_samples=2, max_failures=1))
        eid = exp["id"]
        w = h.Worker(d, name="flaky")
        self.assertEqual(w.registration["lease_s"], 1)
        lost = w.lease_one()
        self.assertEqual(lost["attempt"], 1)
        first_token = lost["lease_token"]

        # The other trial runs normally while the first one's worker is silent.
        good = w.lease_one()
        self.assertNotEqual(good["id"], lost["id"])
        w.report_ok(good, 1, {"loss": 0.3})
        w.finish_ok(good)

        # attempt 1 is lost: the same trial goes back to pending as attempt 2.
        t = h.wait_until(lambda: (lambda t: t if t["attempt"] == 2 else None)(
            d.trial(lost["id"])), EXPIRY_S, "trial %d to be retried" % lost["id"])
        self.assertEqual(t["state"], "pending")
        self.assertEqual(t["experiment_id"], eid)
        self.assertEqual(d.experiment(eid)["state"], "running")

        # The worker that lost it learns so from its stale token, and from
        # its heartbeat.
        st, doc = w.report(lost, 1, {"loss": 0.9})
        self.assertError((st, doc), 409, "lease_lost")
        st, hb = w.heartbeat([lost["id"]])
        self.assertEqual(st, 200, hb)
        self.assertIn(lost["id"], hb["stop"])
        self.assertEqual(d.trial(lost["id"])["state"], "pending")  # not revived

        # A worker picks it up again: same id, attempt 2, a new token.
        w2 = h.Worker(d, name="second")
        again = w2.lease_one()
        self.assertEqual(again["id"], lost["id"])
        self.assertEqual(again["attempt"], 2)
        self.assertEqual(again["config"], lost["config"])
        self.assertNotEqual(again["lease_token"], first_token)
        self.assertEqual(again["worker_id"], w2.id)
        w2.report_ok(again, 1, {"loss": 0.8})
        # The metrics endpoint shows the current attempt only.
        self.assertEqual([i["step"] for i in d.metrics_of(again["id"])], [1])

        # Lost workers are no fault of the trial: attempts 2 to 4 are lost
        # too and retried without touching max_failures (1); the fourth loss
        # uses max_failures' retry, the fifth fails it (docs/api.md,
        # "max_failures").
        self.assertEqual(d.trial(lost["id"])["worker_losses"], 1)
        for attempt in (3, 4, 5):
            t = h.wait_until(lambda: (lambda t: t if t["attempt"] == attempt else None)(
                d.trial(lost["id"])), EXPIRY_S, "attempt %d of trial %d" % (attempt, lost["id"]))
            self.assertEqual(t["state"], "pending")
            self.assertEqual(d.experiment(eid)["state"], "running")
            again = w2.lease_one()
            self.assertEqual(again["id"], lost["id"])
        t = h.wait_until(lambda: (lambda t: t if t["state"] == "failed" else None)(
            d.trial(lost["id"])), EXPIRY_S, "trial %d to fail" % lost["id"])
        self.assertEqual(t["attempt"], 5)
        self.assertEqual(t["worker_losses"], 3)
        self.assertIn("worker lost", (t["error"] or "").lower())
        self.assertError(w2.report(again, 2, {"loss": 0.7}), 409, "lease_lost")

        exp = d.wait_state(eid, "completed")
        self.assertEqual(exp["counts"]["failed"], 1, exp["counts"])
        self.assertEqual(exp["counts"]["completed"], 1, exp["counts"])
        self.assertEqual(w.lease(wait_s=0)[0], 204)

    def test_without_retries_a_lost_trial_is_still_retried(self):
        # max_failures 0 (the default): a lost worker still gets its trial
        # retried, on another worker, which completes it.
        d = self.daemon("--lease-s", "1")
        exp = d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        t = h.wait_until(lambda: (lambda x: x if x["state"] != "running" else None)(
            d.trial(t["id"])), EXPIRY_S, "the lease to run out")
        self.assertEqual(t["state"], "pending")
        self.assertEqual(t["attempt"], 2)
        self.assertEqual(t["worker_losses"], 1)
        self.assertIn("worker lost", (t["error"] or "").lower())
        w2 = h.Worker(d, name="second")
        again = w2.lease_one()
        w2.report_ok(again, 1, {"loss": 0.5})
        w2.finish_ok(again)
        done = d.wait_state(exp["id"], "completed")
        self.assertEqual(done["counts"]["completed"], 1)

    def test_stale_token_after_retry(self):
        # A 2 s lease: the checks on the second lease must fit in its window.
        d = self.daemon("--lease-s", "2")
        d.create_experiment(h.spec(num_samples=1, max_failures=3))
        w = h.Worker(d)
        old = w.lease_one()
        h.wait_until(lambda: d.trial(old["id"])["attempt"] == 2, EXPIRY_S, "a retry")
        new = w.lease_one()
        self.assertEqual(new["id"], old["id"])
        # Old token: report and finish are refused, the new lease is untouched.
        self.assertError(w.report(old, 5, {"loss": 1.0}), 409, "lease_lost")
        self.assertError(w.finish(old, "completed"), 409, "lease_lost")
        t = d.trial(new["id"])
        self.assertEqual((t["state"], t["attempt"]), ("running", 2))
        self.assertEqual(d.metrics_of(new["id"]), [])
        # A token that was never issued is no better.
        self.assertError(w.report(new, 1, {"loss": 1.0}, token="not-a-token"), 409,
                         "lease_lost")
        # The current token works.
        self.assertEqual(w.report_ok(new, 1, {"loss": 0.5}), "continue")
        w.finish_ok(new)
        self.assertEqual(d.trial(new["id"])["state"], "completed")

    def test_heartbeat_renews_the_lease(self):
        d = self.daemon("--lease-s", "1")
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        end = time.monotonic() + 2.5  # well past the 1 s lease
        while time.monotonic() < end:
            st, doc = w.heartbeat([t["id"]])
            self.assertEqual(st, 200, doc)
            self.assertEqual(doc["stop"], [])
            time.sleep(0.25)
        cur = d.trial(t["id"])
        self.assertEqual((cur["state"], cur["attempt"]), ("running", 1))
        self.assertEqual(w.report_ok(t, 1, {"loss": 0.1}), "continue")

    def test_heartbeat_interval_fits_in_the_lease(self):
        # A worker heartbeats every heartbeat_s it was told at registration;
        # doing just that must keep its trials, whatever --lease-s is.
        d = self.daemon()
        reg = h.Worker(d).registration
        self.assertEqual(reg["lease_s"], 30)  # the default
        self.assertLess(reg["heartbeat_s"], reg["lease_s"])
        # A database of its own: the first daemon still holds its database.
        d = self.daemon("--lease-s", "1", db=os.path.join(self.tmp, "short-lease.db"))
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        self.assertEqual(w.registration["lease_s"], 1)
        self.assertLess(w.registration["heartbeat_s"], w.registration["lease_s"],
                        "heartbeat_s must leave room for a round trip within the lease")
        t = w.lease_one()
        end = time.monotonic() + 3
        while time.monotonic() < end:
            time.sleep(w.registration["heartbeat_s"])
            w.heartbeat([t["id"]])
        cur = d.trial(t["id"])
        self.assertEqual((cur["state"], cur["attempt"]), ("running", 1), cur)

    def test_reports_renew_the_lease(self):
        d = self.daemon("--lease-s", "1")
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        end, step = time.monotonic() + 2.5, 0
        while time.monotonic() < end:
            step += 1
            self.assertEqual(w.report_ok(t, step, {"loss": 1.0 / step}), "continue")
            time.sleep(0.25)
        cur = d.trial(t["id"])
        self.assertEqual((cur["state"], cur["attempt"], cur["step"]), ("running", 1, step))
        w.finish_ok(t)


class Reports(h.RungdTestCase):

    def test_repeated_report_is_stored_once(self):
        """Issue test 3."""
        d = self.daemon()
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        first = w.report(t, 1, {"loss": 0.7})
        again = w.report(t, 1, {"loss": 0.7})
        self.assertEqual(first[0], 200)
        self.assertEqual(again, first)
        w.report_ok(t, 2, {"loss": 0.6})
        late = w.report(t, 1, {"loss": 0.7})  # a retry that arrives late
        self.assertEqual(late, first)
        items = d.metrics_of(t["id"])
        self.assertEqual([i["step"] for i in items], [1, 2])
        self.assertEqual(items[0]["metrics"]["loss"], 0.7)
        cur = d.trial(t["id"])
        self.assertEqual(cur["step"], 2)
        self.assertEqual(cur["last"]["loss"], 0.6)

    def test_step_is_required_and_non_negative(self):
        d = self.daemon()
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        path = "/api/v1/trials/%d/report" % t["id"]
        r = d.request("POST", path, {"lease_token": t["lease_token"], "metrics": {"loss": 1}})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json["error"]["field"], "step")
        r = d.request("POST", path, {"lease_token": t["lease_token"], "step": -1,
                                     "metrics": {"loss": 1}})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json["error"]["field"], "step")
        # Metric values are numbers.
        r = d.request("POST", path, {"lease_token": t["lease_token"], "step": 1,
                                     "metrics": {"loss": "low"}})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json["error"]["field"], "metrics.loss")
        self.assertEqual(d.metrics_of(t["id"]), [])
        self.assertEqual(w.report_ok(t, 0, {"loss": 1.0}), "continue")  # step 0 is fine

    def test_nan_objective_fails_without_retry(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=1, max_failures=2))
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 2.0})
        w.report_ok(t, 2, {"loss": 1.5})
        self.assertEqual(w.report_ok(t, 3, {"loss": "NaN"}), "stop")
        cur = d.trial(t["id"])
        self.assertEqual(cur["state"], "failed")
        self.assertEqual(cur["attempt"], 1)
        self.assertEqual(cur["error"], "loss is NaN at step 3")
        w.finish(t, "failed", "diverged")
        self.assertEqual(d.trial(t["id"])["state"], "failed")  # not retried
        # Its only trial failed: the experiment fails (docs/api.md), and
        # still shows the best value reported before the NaN.
        exp = d.wait_state(exp["id"], "failed")
        self.assertIn("all 1 trials failed", exp["error"])
        self.assertEqual(exp["best"]["value"], 1.5)

    def test_infinite_objective_fails(self):
        d = self.daemon()
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        self.assertEqual(w.report_ok(t, 1, {"loss": "-Infinity"}), "stop")
        cur = d.trial(t["id"])
        self.assertEqual(cur["state"], "failed")
        self.assertIn("step 1", cur["error"])

    def test_failed_finish_is_retried_up_to_max_failures(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=1, max_failures=1))
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 3.0})
        w.finish_ok(t, "failed", "CUDA out of memory")
        cur = d.trial(t["id"])
        self.assertEqual((cur["state"], cur["attempt"]), ("pending", 2))
        again = w.lease_one()
        self.assertEqual((again["id"], again["attempt"]), (t["id"], 2))
        w.finish_ok(again, "failed", "CUDA out of memory again")
        w.finish_ok(again, "failed", "CUDA out of memory again")  # idempotent
        cur = d.trial(t["id"])
        self.assertEqual(cur["state"], "failed")
        self.assertIn("CUDA out of memory again", cur["error"])
        exp = d.wait_state(exp["id"], "failed")  # every trial failed
        self.assertIn("CUDA out of memory again", exp["error"])

    def test_finish_is_idempotent(self):
        d = self.daemon()
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 3.0})
        w.finish_ok(t)
        w.finish_ok(t)
        self.assertEqual(d.trial(t["id"])["state"], "completed")

    def test_workers_list(self):
        d = self.daemon()
        d.create_experiment(h.spec(num_samples=1))
        w = h.Worker(d, name="gpu-box-1", cpus=12, gpus=(0, 1))
        t = w.lease_one()
        st, hb = w.heartbeat([t["id"]])
        self.assertEqual(st, 200, hb)
        doc = d.ok("GET", "/api/v1/workers")
        self.assertEqual(doc["total"], 1)
        mine = doc["items"][0]
        self.assertEqual(mine["name"], "gpu-box-1")
        self.assertEqual(mine["cpus"], 12)
        self.assertEqual([g["index"] for g in mine["gpus"]], [0, 1])
        # "running trials" (docs/api.md) under whatever key names them.
        running = [v for k, v in mine.items() if "running" in k and isinstance(v, list)]
        self.assertTrue(any(t["id"] in v or any(isinstance(x, dict) and x.get("id") == t["id"]
                                                 for x in v) for v in running), mine)

    def test_unknown_trial_and_worker(self):
        d = self.daemon()
        self.assertError(d.request("POST", "/api/v1/trials/4242/report",
                                   {"lease_token": "x", "step": 1, "metrics": {}}),
                         404, "not_found")
        self.assertError(d.request("GET", "/api/v1/trials/4242"), 404, "not_found")
        self.assertError(d.request("POST", "/api/v1/workers/4242/lease",
                                   {"cpus": 1, "gpus": [], "wait_s": 0}), 404, "not_found")


class Dispatch(h.RungdTestCase):

    def test_max_concurrent_trials(self):
        """Issue test 9."""
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=5, max_concurrent_trials=2))
        d.wait_proposed(exp["id"], 1)
        w = h.Worker(d)
        a, b = w.lease_one(), w.lease_one()
        t0 = time.monotonic()
        self.assertEqual(w.lease(wait_s=1)[0], 204)
        self.assertGreaterEqual(time.monotonic() - t0, 0.8, "long poll did not wait")
        self.assertEqual(d.experiment(exp["id"])["counts"]["running"], 2)
        # Another worker is held to the same limit.
        self.assertEqual(h.Worker(d, name="other").lease(wait_s=0)[0], 204)
        w.report_ok(a, 1, {"loss": 1.0})
        w.finish_ok(a)
        c = w.lease_one(wait_s=3)
        self.assertNotIn(c["id"], (a["id"], b["id"]))
        self.assertEqual(d.experiment(exp["id"])["counts"]["running"], 2)

    def test_long_poll_wakes_when_work_arrives(self):
        d = self.daemon()
        w = h.Worker(d)
        result = {}

        def poll():
            t0 = time.monotonic()
            result["lease"] = w.lease(wait_s=10)
            result["took"] = time.monotonic() - t0

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        time.sleep(0.5)
        exp = d.create_experiment(h.spec(num_samples=1))
        th.join(20)
        self.assertFalse(th.is_alive())
        status, trial = result["lease"]
        self.assertEqual(status, 200)
        self.assertEqual(trial["experiment_id"], exp["id"])
        self.assertLess(result["took"], 8.0, "the long poll slept through new work")

    def test_lease_of_a_worker_that_left_is_given_back(self):
        # A worker waits in a long poll, then goes away; the trial that comes
        # along meanwhile must not be lost to it (nor use up an attempt).
        d = self.daemon()
        w = h.Worker(d)
        body = json.dumps({"cpus": 1, "gpus": [], "wait_s": 10}).encode()
        s = socket.create_connection((d.host, d.port), timeout=5)
        s.sendall(b"POST /api/v1/workers/%d/lease HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                  % (w.id, len(body)) + body)
        time.sleep(0.5)
        s.close()
        time.sleep(0.2)
        exp = d.create_experiment(h.spec(num_samples=1, max_failures=0))
        end = time.monotonic() + 5
        while time.monotonic() < end and d.experiment(exp["id"])["counts"]["pending"] != 1:
            time.sleep(0.1)
        t = h.Worker(d, name="second").lease_one(wait_s=3)
        self.assertEqual((t["number"], t["attempt"]), (0, 1), t)

    def test_resources_must_fit(self):
        d = self.daemon()
        d.create_experiment(h.spec(num_samples=1,
                                   resources_per_trial={"cpu": 2, "gpu": 1}))
        w = h.Worker(d, cpus=8, gpus=(0, 1))
        self.assertEqual(w.lease(cpus=8, gpus=[], wait_s=1)[0], 204)
        self.assertEqual(w.lease(cpus=1, gpus=[0, 1], wait_s=0)[0], 204)
        t = w.lease_one(cpus=4, gpus=[1], wait_s=3)
        self.assertEqual(t["resources"]["cpus"], 2)
        self.assertEqual(t["resources"]["gpus"], [1])


if __name__ == "__main__":
    h.main()
