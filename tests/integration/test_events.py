"""The event log (docs/api.md, "Events"): every change a person makes and
every change rungd makes by itself is an event, written in the same
transaction as the change, so that after `kill -9` no acknowledged change
lacks its event; GET /api/v1/events pages, filters and long-polls; `rung
events` prints them; each is in rungd's log at info level.
"""

import os
import signal
import subprocess
import threading
import time

from rungd_harness import RungdTestCase, Worker, main, spec, wait_until

BOOT = "bootstrap-token-for-events-0123456789"


def events(d, **query):
    q = "&".join("%s=%s" % kv for kv in query.items())
    return d.ok("GET", "/api/v1/events?" + q)["items"]


def all_events(d, **query):
    """Every event the query selects, page after page."""
    out, after = [], 0
    while True:
        page = d.ok("GET", "/api/v1/events?limit=1000&after=%d&" % after
                    + "&".join("%s=%s" % kv for kv in query.items()))
        out += page["items"]
        if len(page["items"]) < 1000:
            return out
        after = page["next_after"]


def kinds(d, **query):
    return [e["kind"] for e in events(d, limit=1000, **query)]


class Kinds(RungdTestCase):
    def test_each_kind_with_its_actor(self):
        d = self.daemon("--token", BOOT, "--lease-s", "1")
        d.token = BOOT
        alice = d.ok("POST", "/api/v1/users", {"name": "alice", "role": "member"}, status=201)
        d.token = alice["token"]
        # A person's verbs.
        eid = d.create_experiment(spec(name="verbs", num_samples=3, max_failures=1))["id"]
        d.ok("POST", "/api/v1/experiments/%d/pause" % eid)
        d.ok("POST", "/api/v1/experiments/%d/resume" % eid)
        d.ok("PATCH", "/api/v1/experiments/%d" % eid, {"priority": 2})
        d.token = BOOT
        w = Worker(d, name="w1")
        # A trial that fails twice (retried once, then failed).
        t = w.lease_one()
        w.finish_ok(t, status="failed", error="exit status 1: boom\nTraceback ...")
        t2 = w.lease_one()
        self.assertEqual(t2["id"], t["id"])
        w.finish_ok(t2, status="failed", error="exit status 1: boom again")
        # A trial whose worker goes away: its lease runs out.
        t3 = w.lease_one()
        wait_until(lambda: "lease.expired" in kinds(d, experiment=eid), 10, "lease.expired")
        # A user stops a trial; a worker gives one back (preempted).
        w2 = Worker(d, name="w2")
        t4 = w2.lease_one()
        d.ok("POST", "/api/v1/trials/%d/stop" % t4["id"])
        t5 = w2.lease_one()
        code, _ = w2.finish(t5, status="preempted")
        self.assertEqual(code, 200)
        d.token = alice["token"]
        d.ok("POST", "/api/v1/experiments/%d/retry-failed" % eid)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % eid)
        wait_until(lambda: d.experiment(eid)["counts"]["running"] == 0, 10, "trials stopped")
        d.ok("DELETE", "/api/v1/experiments/%d" % eid)

        got = events(d, limit=1000)
        by_kind = {}
        for e in got:
            by_kind.setdefault(e["kind"], []).append(e)
        want = {
            "user.added": ("user", "bootstrap"), "token.created": ("user", "bootstrap"),
            "experiment.submitted": ("user", "alice"), "experiment.paused": ("user", "alice"),
            "experiment.resumed": ("user", "alice"), "experiment.patched": ("user", "alice"),
            "worker.joined": ("user", "bootstrap"), "trial.retried": ("rungd", "rungd"),
            "trial.failed": ("rungd", "rungd"), "lease.expired": ("rungd", "rungd"),
            "worker.gone": ("rungd", "rungd"), "trial.stopped": ("user", "bootstrap"),
            "trial.preempted": ("rungd", "rungd"), "experiment.canceled": ("user", "alice"),
            "experiment.ended": ("rungd", "rungd"), "experiment.retried": ("user", "alice"),
            "experiment.deleted": ("user", "alice"),
        }
        for kind, (actor_kind, actor) in want.items():
            self.assertIn(kind, by_kind, "no %s event in %s" % (kind, sorted(by_kind)))
            e = by_kind[kind][0]
            self.assertEqual((e["actor"]["kind"], e["actor"]["name"]), (actor_kind, actor), e)
        failed = by_kind["trial.failed"][0]
        self.assertEqual((failed["trial_id"], failed["experiment_id"]), (t["id"], eid))
        self.assertEqual(failed["detail"]["error"], "exit status 1: boom again")
        self.assertEqual(by_kind["trial.retried"][0]["detail"]["error"], "exit status 1: boom")
        self.assertEqual(by_kind["lease.expired"][0]["trial_id"], t3["id"])
        self.assertEqual(by_kind["worker.gone"][0]["worker_id"], w.id)
        self.assertEqual(by_kind["experiment.patched"][0]["detail"], {"priority": 2})
        ended = by_kind["experiment.ended"][0]
        self.assertEqual(ended["detail"]["state"], "canceled")
        # Ids increase; filters select.
        ids = [e["id"] for e in got]
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(set(kinds(d, kind="trial")),
                         {"trial.failed", "trial.retried", "trial.stopped", "trial.preempted"})
        self.assertEqual(set(kinds(d, actor="alice")),
                         {k for k, (_, a) in want.items() if a == "alice"})
        page = d.ok("GET", "/api/v1/events?limit=3&after=%d" % ids[1])
        self.assertEqual([e["id"] for e in page["items"]], ids[2:5])
        self.assertEqual(page["next_after"], ids[4])
        r = d.request("GET", "/api/v1/events?limit=0")
        self.assertEqual((r.status, r.json["error"]["field"]), (400, "limit"))
        # Each is in the log at info level, tokens never.
        with open(d.log_path, encoding="utf-8", errors="replace") as f:
            log = f.read()
        self.assertIn("event %d experiment.paused by user alice experiment=%d" % (
            by_kind["experiment.paused"][0]["id"], eid), log)
        self.assertNotIn(alice["token"], log)

    def test_experiment_failed_and_long_poll(self):
        d = self.daemon()
        eid = d.create_experiment(spec(num_samples=1, max_failures=0))["id"]
        last = events(d)[-1]["id"]
        got = {}

        def poll():
            t0 = time.monotonic()
            r = d.request("GET", "/api/v1/events?after=%d&wait_s=20&kind=experiment" % last,
                          timeout=30)
            got["elapsed"], got["r"] = time.monotonic() - t0, r

        th = threading.Thread(target=poll)
        th.start()
        time.sleep(0.5)
        w = Worker(d)
        t = w.lease_one()
        w.finish_ok(t, status="failed", error="bad config")
        th.join(30)
        r = got["r"]
        self.assertEqual(r.status, 200, r.text)
        self.assertLess(got["elapsed"], 10)
        self.assertEqual([e["kind"] for e in r.json["items"]], ["experiment.failed"])
        self.assertIn("bad config", r.json["items"][0]["detail"]["error"])
        # Nothing new within wait_s: 204.
        t0 = time.monotonic()
        r = d.request("GET", "/api/v1/events?after=%d&wait_s=1" % r.json["next_after"])
        self.assertEqual(r.status, 204)
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        # The local admin of a rungd without a token.
        self.assertEqual(events(d)[0]["actor"], {"kind": "user", "name": "local"})

    def test_rung_events_cli(self):
        d = self.daemon()
        eid = d.create_experiment(spec(name="cli"))["id"]
        d.pause(eid)
        cli = os.environ.get("RUNG_CLI")
        if not cli:
            self.skipTest("RUNG_CLI not set")
        out = subprocess.run([cli, "--server", d.url, "events", "--experiment", str(eid)],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(len(lines), 2, out.stdout)
        self.assertIn("local experiment.submitted experiment=%d" % eid, lines[0])
        self.assertIn('local experiment.paused experiment=%d {"running":"finish"}' % eid,
                      lines[1])
        # --follow prints a new event as it comes.
        p = subprocess.Popen([cli, "--server", d.url, "events", "--follow", "--kind",
                              "experiment.resumed"], stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(0.5)
            d.resume(eid)
            line = p.stdout.readline()
            self.assertIn("experiment.resumed experiment=%d" % eid, line)
        finally:
            p.kill()
            p.wait()


class Durable(RungdTestCase):
    def test_no_acknowledged_change_loses_its_event_after_kill9(self):
        d = self.daemon()
        acked = []
        stop = threading.Event()

        def submitter():
            while not stop.is_set():
                try:
                    r = d.request("POST", "/api/v1/experiments", body=spec(name="k9"))
                except AssertionError:  # the connection the kill cut
                    return
                if r.status == 201:
                    acked.append(r.json["id"])

        threads = [threading.Thread(target=submitter) for _ in range(3)]
        for th in threads:
            th.start()
        time.sleep(1.5)
        d.kill9()
        stop.set()
        for th in threads:
            th.join(30)
        self.assertGreater(len(acked), 10)
        d.start()
        submitted = {e["experiment_id"] for e in all_events(d, kind="experiment.submitted")}
        missing = sorted(set(acked) - submitted)
        self.assertEqual(missing, [], "acknowledged experiments without their event")
        # And no event of a change that was not kept.
        rows = set()
        for offset in range(0, len(submitted) + 1000, 1000):
            rows |= {e["id"] for e in d.ok("GET", "/api/v1/experiments?limit=1000&offset=%d"
                                           % offset)["items"]}
        self.assertLessEqual(submitted, rows)
        print("kill -9: %d acknowledged submits, every one with its event" % len(acked))


if __name__ == "__main__":
    main()
