"""One client's request never hurts another's (docs/architecture.md, "The
engine"): a write the store refuses is undone alone, leases are never renewed
by a failure, and small defects of the request layer stay fixed.

The store's refusal is real: the test adds a SQLite trigger to the database
that aborts the insert of a worker named "poison", the way a CHECK
constraint refuses JSON nested too deep or a full disk refuses a page. Every
request passes rungd's own validation; only SQLite says no, at write time.
"""

import os
import sqlite3
import threading
import time

from rungd_harness import RungdTestCase, Worker, main, spec, wait_until

POISON_TRIGGER = """
CREATE TRIGGER poison BEFORE INSERT ON workers WHEN NEW.name = 'poison'
BEGIN SELECT RAISE(ABORT, 'poisoned row'); END;
"""


class PoisonedWrite(RungdTestCase):
    def poisoned_daemon(self, *args):
        d = self.daemon(*args)
        d.stop()  # the database now has every migration
        con = sqlite3.connect(d.db)
        con.executescript(POISON_TRIGGER)
        con.close()
        d.start()
        return d

    def test_offender_alone_is_refused(self):
        d = self.poisoned_daemon("--lease-s", "2")
        eid = d.create_experiment(spec(num_samples=200))["id"]
        d.wait_proposed(eid, 10)

        # A worker that leases a trial and dies: its lease must run out on
        # time, whatever the offender sends meanwhile.
        dead = Worker(d, name="dead")
        lost = dead.lease_one()
        lost_at = time.monotonic()

        honest = [Worker(d, name="honest-%d" % i) for i in range(4)]
        trials = [w.lease_one() for w in honest]
        # A log tail sent with a heartbeat lives in memory until the trial's
        # row is next written: a reload of the state would lose it.
        code, _ = d.call("POST", "/api/v1/workers/%d/heartbeat" % honest[0].id,
                         {"trials": [trials[0]["id"]], "logs": {str(trials[0]["id"]): "tail 1"}})
        self.assertEqual(code, 200)

        stop = threading.Event()
        failures = []
        counts = {"honest": 0, "poison": 0}
        lock = threading.Lock()

        def honest_loop(w, trial):
            step = 0
            while not stop.is_set():
                step += 1
                status, doc = w.report(trial, step, {"loss": 1.0 / step})
                code, _ = d.call("POST", "/api/v1/workers/%d/heartbeat" % w.id,
                                 {"trials": [trial["id"]]})
                with lock:
                    counts["honest"] += 2
                    if status != 200 or doc.get("action") != "continue" or code != 200:
                        failures.append((w.id, step, status, doc, code))

        def poison_loop():
            while not stop.is_set():
                r = d.request("POST", "/api/v1/workers", {"name": "poison", "cpus": 1})
                with lock:
                    counts["poison"] += 1
                    if r.status != 500:
                        failures.append(("poison", r.status, r.text[:200]))
                    else:
                        err = (r.json or {}).get("error", {})
                        if err.get("code") != "internal" or "poisoned row" not in err.get(
                                "message", ""):
                            failures.append(("poison", r.text[:300]))

        threads = [threading.Thread(target=honest_loop, args=(w, t))
                   for w, t in zip(honest, trials)]
        threads += [threading.Thread(target=poison_loop) for _ in range(2)]
        for t in threads:
            t.start()
        # The dead worker's trial is retried once its 2 s lease runs out.
        try:
            wait_until(lambda: "worker lost" in (d.trial(lost["id"])["error"] or ""), 6.0,
                       "the dead worker's lease expired")
            expired_after = time.monotonic() - lost_at
            time.sleep(0.5)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        self.assertEqual(failures, [])
        self.assertGreater(counts["poison"], 10)
        self.assertGreater(counts["honest"], 40)
        self.assertLess(expired_after, 2.0 + 1.5, "a refused request renewed a lease")
        lost_now = d.trial(lost["id"])
        self.assertIn("worker lost", lost_now["error"] or "")

        # Nothing of the offender was kept; the honest workers' reports were.
        names = [w["name"] for w in d.ok("GET", "/api/v1/workers?limit=1000")["items"]]
        self.assertNotIn("poison", names)
        self.assertEqual(len(names), 5)
        for trial in trials:
            self.assertGreaterEqual(len(d.metrics_of(trial["id"])), 5)
        # No wholesale reload: the log tail held only in memory is still there.
        self.assertEqual(d.trial(trials[0]["id"])["log_tail"], "tail 1")
        self.assertNotIn("reload", d.stderr_text())
        # A honest registration after all that works.
        Worker(d, name="late")


class DeepJson(RungdTestCase):
    def nested(self, depth):
        return "[" * depth + "]" * depth

    def test_deep_bodies_are_refused_naming_the_field(self):
        d = self.daemon()
        raw = ('{"name": "w", "cpus": 1, "gpus": [{"index": 0, "x": %s}]}'
               % self.nested(2000)).encode()
        r = d.request("POST", "/api/v1/workers", raw=raw)
        err = self.assertError(r, 400, "invalid_argument")
        self.assertTrue(err.get("field", "").startswith("gpus[0].x"), err)
        self.assertEqual(d.ok("GET", "/api/v1/workers")["total"], 0)
        # The same depth in an experiment's search space.
        raw = ('{"name": "e", "metric": "loss", "num_samples": 1, "search_space": '
               '{"x": {"type": "choice", "values": [%s]}}}' % self.nested(2000)).encode()
        r = d.request("POST", "/api/v1/experiments", raw=raw)
        self.assertEqual(r.status, 400, r.text[:300])
        self.assertIn("search_space", r.json["error"].get("field", ""))
        # Depth 32 is fine.
        raw = ('{"name": "w", "cpus": 1, "gpus": [{"index": 0, "x": %s}]}'
               % self.nested(29)).encode()
        self.assertEqual(d.request("POST", "/api/v1/workers", raw=raw).status, 201)


class LinkedDatabase(RungdTestCase):
    def test_second_daemon_on_a_link_is_refused(self):
        d = self.daemon()
        sym = os.path.join(self.tmp, "sym.db")
        hard = os.path.join(self.tmp, "hard.db")
        os.symlink(d.db, sym)
        os.link(d.db, hard)
        for path in (d.db, sym, hard):
            other = self.daemon(db=path, start=False)
            rc = other.run_to_exit(timeout=10)
            self.assertNotIn(rc, (0, None), "a second rungd started on %s" % path)
            self.assertIn("in use", other.stderr_text())
        # The first one still serves.
        self.assertEqual(d.call("GET", "/api/v1/experiments")[0], 200)


class SmallDefects(RungdTestCase):
    def test_error_text_cut_on_a_character(self):
        d = self.daemon()
        eid = d.create_experiment(spec(max_failures=0))["id"]
        d.wait_proposed(eid, 1)
        w = Worker(d)
        t = w.lease_one()
        text = "x" * 8191 + "\u00e9" + "tail"  # the cut at 8192 bytes splits "é"
        w.finish_ok(t, status="failed", error=text)
        got = d.trial(t["id"])["error"]
        self.assertEqual(got, "x" * 8191)

    def test_workers_list_pages(self):
        d = self.daemon()
        ids = [Worker(d, name="w%d" % i).id for i in range(5)]
        doc = d.ok("GET", "/api/v1/workers?limit=2&offset=1")
        self.assertEqual(doc["total"], 5)
        self.assertEqual([w["id"] for w in doc["items"]], ids[1:3])
        self.assertError(d.call("GET", "/api/v1/workers?limit=0"), 400, "invalid_argument",
                         "limit")

    def test_csv_cells_are_not_formulas(self):
        d = self.daemon()
        space = {"opt": {"type": "choice", "values": ["=HYPERLINK(\"http://x\")", "+1", "@a",
                                                      "-2", "plain"]}}
        eid = d.create_experiment(spec(search_space=space, num_samples=1,
                                       searcher={"type": "grid"}))["id"]
        d.wait_proposed(eid, 5)
        text = d.request("GET", "/api/v1/experiments/%d/trials.csv" % eid).text
        cells = [line.split(",", 3)[3] if line.count(",") >= 3 else line
                 for line in text.splitlines()[1:]]
        for cell in cells:
            value = cell.split(",")[0].strip('"')
            self.assertFalse(value[:1] in ("=", "+", "-", "@"), "formula cell: %r" % cell)
        self.assertTrue(any("'=HYPERLINK" in c for c in cells), cells)

    def test_lease_offer_must_name_registered_gpus(self):
        d = self.daemon()
        d.create_experiment(spec(num_samples=2))
        w = Worker(d, gpus=(0, 1))
        for gpus, field in (([0, 0], "gpus[1]"), ([5], "gpus[0]")):
            r = d.call("POST", "/api/v1/workers/%d/lease" % w.id,
                       {"cpus": 1, "gpus": gpus, "wait_s": 0})
            self.assertError(r, 400, "invalid_argument", field)
        self.assertEqual(w.lease(gpus=[1], wait_s=5)[0], 200)

    def test_null_name_is_refused(self):
        d = self.daemon()
        for path, body in (("/api/v1/workers", {"name": None, "cpus": 1}),
                           ("/api/v1/experiments", dict(spec(), name=None))):
            err = self.assertError(d.call("POST", path, body), 400,
                                   "invalid_argument" if "workers" in path else "invalid_spec")
            self.assertEqual(err.get("field"), "name")


if __name__ == "__main__":
    main()
