"""Integration tests: gangs, rungd's side (docs/api.md, "Gangs").

A real rungd driven by workers speaking HTTP (rungd_harness.Worker, with
advertise_addr and port): a 2-node gang forms only when two workers ask,
and both get the same trial with ranks 0 and 1 and rank 0's address; only
rank 0 reports; a gang and 1-node trials sharing three workers all
complete; a kill -9 of rungd while a gang runs keeps both members' leases;
a member whose lease runs out stops the other, and the trial is retried as
one and completes. The real rung-worker side of gangs is test_gang.py.
"""

import threading
import time

import rungd_harness as h

EXPIRY_S = 10.0  # bound on noticing a 2 s lease that ran out


def gang_spec(**over):
    """An external experiment of 2-node trials; keyword arguments replace fields."""
    s = h.spec(resources_per_trial={"cpu": 1, "nodes": 2, "gang_wait_s": 30})
    s.update(over)
    return s


class Member:
    """A worker that may join gangs: each lease carries where it is reached."""

    def __init__(self, d, name, addr, port):
        self.w = h.Worker(d, name=name)
        self.id = self.w.id
        self.addr = addr
        self.port = port

    def lease(self, wait_s=5, cpus=1):
        return self.w.lease(cpus=cpus, wait_s=wait_s, advertise_addr=self.addr, port=self.port)

    def lease_in_background(self, wait_s=15):
        """Starts a parked lease; join() the thread, then read .result."""
        box = threading.Thread(target=lambda: setattr(box, "result", self.lease(wait_s)),
                               daemon=True)
        box.result = None
        box.start()
        return box


def form_two(test, d, a, b):
    """a is held first (rank 0), then b asks and the gang forms; a's parked
    request gets its place. Returns (trial as a got it, as b got it)."""
    test.assertEqual(a.lease(wait_s=0.2)[0], 204)  # held: a 204, and it stays held
    parked = a.lease_in_background()
    time.sleep(0.3)  # usually parked by now; if not, its place waits for it
    st, tb = b.lease(wait_s=5)
    test.assertEqual(st, 200)
    parked.join(20)
    test.assertFalse(parked.is_alive(), "rank 0's parked lease was never answered")
    st, ta = parked.result
    test.assertEqual(st, 200)
    return ta, tb


class Forming(h.RungdTestCase):

    def test_two_node_gang_forms_only_when_two_ask(self):
        d = self.daemon("--lease-s", "5")
        eid = d.create_experiment(gang_spec())["id"]
        self.assertEqual(d.experiment(eid)["resources_per_trial"],
                         {"cpu": 1, "gpu": 0, "nodes": 2, "gang_wait_s": 30})
        d.wait_proposed(eid, 1)
        # A worker without advertise_addr never gets a gang trial.
        old = h.Worker(d, name="old")
        self.assertEqual(old.lease(wait_s=0.5)[0], 204)
        # One worker alone is held: nothing runs.
        a = Member(d, "a", "127.0.0.1", 29501)
        b = Member(d, "b", "127.0.0.2", 29502)
        tid = d.trials(eid)["items"][0]["id"]
        t = d.trial(tid)
        self.assertEqual(t["state"], "pending")
        self.assertEqual(t["nodes"], 2)
        self.assertIsNone(t["gang"])
        # The second forms it: both get the same trial, ranks 0 and 1, and
        # rank 0's address and port.
        ta, tb = form_two(self, d, a, b)
        self.assertEqual(ta["id"], tid)
        self.assertEqual(tb["id"], tid)
        self.assertEqual(ta["gang"], {"rank": 0, "nnodes": 2, "master_addr": "127.0.0.1",
                                      "master_port": 29501})
        self.assertEqual(tb["gang"], {"rank": 1, "nnodes": 2, "master_addr": "127.0.0.1",
                                      "master_port": 29501})
        self.assertNotEqual(ta["lease_token"], tb["lease_token"])
        self.assertEqual(ta["resources"], {"gpus": [], "cpus": 1})
        self.assertEqual(tb["resources"], {"gpus": [], "cpus": 1})
        t = d.trial(tid)
        self.assertEqual(t["state"], "running")
        self.assertEqual(t["worker_id"], a.id)
        self.assertEqual(t["gang"], {"members": [{"rank": 0, "worker_id": a.id},
                                                 {"rank": 1, "worker_id": b.id}],
                                     "master_addr": "127.0.0.1", "master_port": 29501})
        self.assertEqual(d.experiment(eid)["counts"]["running"], 1)  # one trial, two workers
        running = {x["id"]: x["running_trials"] for x in d.ok("GET", "/api/v1/workers")["items"]}
        self.assertEqual(running[a.id], [tid])
        self.assertEqual(running[b.id], [tid])
        self.assertEqual(running[old.id], [])

        # Only rank 0 reports; rank 1's finish only marks it done.
        self.assertError(b.w.report(tb, 1, {"loss": 0.5}), 409, "conflict", "lease_token")
        self.assertEqual(a.w.report_ok(ta, 1, {"loss": 0.5}), "continue")
        self.assertEqual(b.w.finish_ok(tb)["state"], "running")
        st, hb = a.w.heartbeat([tid])
        self.assertEqual(hb["stop"], [])
        done = a.w.finish_ok(ta)
        self.assertEqual(done["state"], "completed")
        self.assertEqual(done["best"], {"value": 0.5, "step": 1})
        st, hb = b.w.heartbeat([tid])
        self.assertEqual(hb["stop"], [tid])
        d.wait_state(eid, "completed")
        # Late calls on the ended trial, from its row: still only rank 0
        # reports, and a member's refused @rung lines join the trial's.
        warned = {"count": 2, "last": [{"line": "@rung {\"loss\": 1}",
                                        "why": "only node 0 reports (this is node 1)"}]}
        st, doc = d.call("POST", "/api/v1/trials/%d/finish" % tid,
                         {"lease_token": tb["lease_token"], "status": "completed",
                          "warnings": warned})
        self.assertEqual(st, 200, doc)
        self.assertEqual(doc["state"], "completed")
        self.assertEqual(doc["warnings"], warned)
        self.assertEqual(b.w.finish_ok(tb)["state"], "completed")
        self.assertError(b.w.report(tb, 2, {"loss": 0.1}), 409, "conflict")
        self.assertEqual(a.w.report_ok(ta, 2, {"loss": 0.1}), "stop")
        self.assertEqual(d.trial(tid)["gang"]["members"][1]["worker_id"], b.id)

    def test_lease_fields_are_checked(self):
        d = self.daemon()
        w = h.Worker(d)
        self.assertError(d.call("POST", "/api/v1/workers/%d/lease" % w.id,
                                {"advertise_addr": "10.0.0.1"}), 400, "invalid_argument", "port")
        self.assertError(d.call("POST", "/api/v1/workers/%d/lease" % w.id,
                                {"advertise_addr": "a b", "port": 1}), 400, "invalid_argument",
                         "advertise_addr")
        self.assertError(d.call("POST", "/api/v1/workers/%d/lease" % w.id,
                                {"advertise_addr": "h", "port": 65536}), 400,
                         "invalid_argument", "port")
        self.assertError(d.call("POST", "/api/v1/experiments",
                                gang_spec(resources_per_trial={"nodes": 65})),
                         400, "invalid_spec", "resources_per_trial.nodes")


class Sharing(h.RungdTestCase):

    def test_gang_and_single_trials_share_three_workers(self):
        d = self.daemon("--lease-s", "5")
        gang = d.create_experiment(gang_spec(
            name="gang", num_samples=3,
            resources_per_trial={"cpu": 1, "nodes": 2, "gang_wait_s": 1}))["id"]
        single = d.create_experiment(h.spec(name="single", num_samples=8))["id"]
        members = [Member(d, "w%d" % i, "127.0.0.%d" % (i + 1), 30000 + i) for i in range(3)]
        places = {}  # gang trial id -> {rank: worker id}
        singles = []
        lock = threading.Lock()
        errors = []
        deadline = time.monotonic() + 90

        def ended():
            return all(d.experiment(x)["state"] != "running" for x in (gang, single))

        def run(m):
            try:
                while time.monotonic() < deadline and not ended():
                    st, t = m.lease(wait_s=1)
                    if st != 200:
                        continue
                    if t["gang"] is None:
                        time.sleep(0.2)
                        m.w.report_ok(t, 1, {"loss": 0.3})
                        m.w.finish_ok(t)
                        with lock:
                            singles.append(t["id"])
                        continue
                    rank = t["gang"]["rank"]
                    with lock:
                        places.setdefault(t["id"], {})[rank] = m.id
                    if rank == 0:
                        time.sleep(0.4)
                        m.w.report_ok(t, 1, {"loss": 0.2})
                    else:
                        time.sleep(0.1)
                    m.w.finish_ok(t)
            except Exception as e:  # reported by the test, not lost in the thread
                errors.append(e)

        threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in members]
        for t in threads:
            t.start()
        for t in threads:
            t.join(100)
        self.assertEqual(errors, [])
        self.assertEqual(d.wait_state(gang, "completed")["counts"]["completed"], 3)
        self.assertEqual(d.wait_state(single, "completed")["counts"]["completed"], 8)
        self.assertEqual(len(places), 3)
        for tid, ranks in places.items():
            self.assertEqual(sorted(ranks), [0, 1], ranks)
            self.assertNotEqual(ranks[0], ranks[1])  # never twice in one gang
            t = d.trial(tid)
            self.assertEqual(t["state"], "completed")
            self.assertEqual([m["worker_id"] for m in t["gang"]["members"]],
                             [ranks[0], ranks[1]])
        self.assertEqual(sorted(singles), sorted(x["id"] for x in d.all_trials(single)))


class Durability(h.RungdTestCase):

    def test_kill9_keeps_a_running_gang(self):
        d = self.daemon("--lease-s", "5")
        eid = d.create_experiment(gang_spec())["id"]
        d.wait_proposed(eid, 1)
        a = Member(d, "a", "127.0.0.1", 29501)
        b = Member(d, "b", "127.0.0.2", 29502)
        ta, tb = form_two(self, d, a, b)
        tid = ta["id"]
        self.assertEqual(a.w.report_ok(ta, 1, {"loss": 0.9}), "continue")
        d.kill9()
        d.restart()
        # Both members' leases and tokens survived: heartbeats keep them,
        # rank 1 still may not report, rank 0 goes on.
        for m in (a, b):
            st, hb = m.w.heartbeat([tid])
            self.assertEqual((st, hb["stop"]), (200, []))
        t = d.trial(tid)
        self.assertEqual(t["state"], "running")
        self.assertEqual(t["attempt"], 1)
        self.assertEqual([x["worker_id"] for x in t["gang"]["members"]], [a.id, b.id])
        self.assertError(b.w.report(tb, 2, {"loss": 0.5}), 409, "conflict")
        self.assertEqual(a.w.report_ok(ta, 1, {"loss": 0.9}), "continue")  # stored once
        self.assertEqual(a.w.report_ok(ta, 2, {"loss": 0.4}), "continue")
        self.assertEqual(b.w.finish_ok(tb)["state"], "running")
        d.kill9()
        d.restart()
        self.assertEqual(a.w.finish_ok(ta)["state"], "completed")
        self.assertEqual([r["step"] for r in d.metrics_of(tid)], [1, 2])
        d.wait_state(eid, "completed")


class MemberLost(h.RungdTestCase):

    def test_member_lease_running_out_stops_the_other_and_retries(self):
        d = self.daemon("--lease-s", "2")
        eid = d.create_experiment(gang_spec(max_failures=1))["id"]
        d.wait_proposed(eid, 1)
        a = Member(d, "a", "127.0.0.1", 29501)
        b = Member(d, "b", "127.0.0.2", 29502)
        ta, tb = form_two(self, d, a, b)
        tid = ta["id"]
        # a heartbeats; b goes silent.
        stop = threading.Event()
        stopped = []

        def beat():
            while not stop.is_set():
                st, hb = a.w.heartbeat([tid])
                if tid in hb.get("stop", []):
                    stopped.append(time.monotonic())
                    return
                time.sleep(0.3)

        beater = threading.Thread(target=beat, daemon=True)
        beater.start()
        t = h.wait_until(lambda: (lambda t: t if t["attempt"] == 2 else None)(d.trial(tid)),
                         EXPIRY_S, "trial %d to be retried" % tid)
        self.assertEqual(t["state"], "pending")
        self.assertIn("worker %d (node 1 of the gang)" % b.id, t["error"])
        beater.join(EXPIRY_S)
        stop.set()
        self.assertTrue(stopped, "rank 0 was never told to stop")
        self.assertEqual(a.w.report_ok(ta, 1, {"loss": 0.5}), "stop")
        self.assertEqual(a.w.finish_ok(ta)["state"], "pending")  # changes nothing
        self.assertError(b.w.report(tb, 1, {"loss": 0.5}), 409, "conflict")
        # The retry forms a new gang (attempt 2) and completes.
        c = Member(d, "c", "127.0.0.3", 29503)
        tc, ta2 = form_two(self, d, c, a)
        self.assertEqual((tc["id"], tc["attempt"]), (tid, 2))
        self.assertEqual((tc["gang"]["rank"], ta2["gang"]["rank"]), (0, 1))
        self.assertEqual(tc["gang"]["master_addr"], "127.0.0.3")
        self.assertEqual(c.w.report_ok(tc, 1, {"loss": 0.25}), "continue")
        a.w.finish_ok(ta2)
        done = c.w.finish_ok(tc)
        self.assertEqual((done["state"], done["attempt"]), ("completed", 2))
        d.wait_state(eid, "completed")


if __name__ == "__main__":
    h.main()
