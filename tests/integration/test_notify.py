"""Notices (docs/operations.md, "Notifications"): webhooks an admin
configures with --notify-file get the events they asked for as JSON, signed
with HMAC-SHA256 of the body under their secret, retried with doubling
waits after a failure; each delivery's outcome is an event; a slow receiver
never delays the engine; an experiment picks among the admin's notifiers by
name and cannot name a URL.

The receivers are real HTTP servers on loopback in this process.
"""

import hashlib
import hmac
import http.server
import json
import os
import threading
import time

from rungd_harness import RungdTestCase, Worker, main, spec, wait_until

SECRET = "a-secret-of-at-least-16-bytes"


class Receiver:
    """A webhook receiver: records every request; answers 500 to the first
    `fail` ones (or all when fail < 0) and waits `delay` seconds first."""

    def __init__(self, fail=0, delay=0.0):
        self.fail, self.delay = fail, delay
        self.requests = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with outer.lock:
                    outer.requests.append((dict(self.headers), body, time.monotonic()))
                    n = len(outer.requests)
                time.sleep(outer.delay)
                ok = outer.fail >= 0 and n > outer.fail
                self.send_response(200 if ok else 500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/hook" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def bodies(self):
        with self.lock:
            return [(h, json.loads(b)) for h, b, _ in self.requests]


class Notices(RungdTestCase):
    def start(self, notifiers, *args):
        path = os.path.join(self.tmp, "notify.json")
        with open(path, "w") as f:
            json.dump({"notifiers": notifiers}, f)
        return self.daemon("--notify-file", path, *args)

    def receiver(self, **kw):
        r = Receiver(**kw)
        self.addCleanup(r.close)
        return r

    def test_signed_retried_recorded(self):
        rx = self.receiver(fail=2)
        d = self.start([{"name": "team", "url": rx.url, "secret": SECRET,
                         "events": ["experiment.paused", "trial.failed"],
                         "retry_base_ms": 100}])
        eid = d.create_experiment(spec())["id"]
        d.pause(eid)
        wait_until(lambda: len(rx.requests) >= 3, 15, "three attempts")
        time.sleep(0.3)
        self.assertEqual(len(rx.requests), 3)  # delivered on the third: no more
        for headers, raw, _ in rx.requests:
            want = "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
            self.assertEqual(headers["X-Rung-Signature"], want)
            self.assertEqual(headers["X-Rung-Event"], "experiment.paused")
            self.assertEqual(headers["Content-Type"], "application/json")
        body = json.loads(rx.requests[0][1])
        self.assertEqual((body["kind"], body["experiment_id"]), ("experiment.paused", eid))
        self.assertEqual(body["text"], "Rung: experiment %d paused by local" % eid)
        ids = {h["X-Rung-Delivery"] for h, _, _ in rx.requests}
        self.assertEqual(ids, {"%d-team" % body["id"]})
        # Doubling waits: 100 ms, then 200 ms.
        t = [at for _, _, at in rx.requests]
        self.assertGreaterEqual(t[1] - t[0], 0.09)
        self.assertGreaterEqual(t[2] - t[1], 0.19)
        # The outcome is an event; the submit was not asked for.
        def delivered():
            return [e for e in d.ok("GET", "/api/v1/events?kind=notify")["items"]
                    if e["kind"] == "notify.delivered"]
        wait_until(lambda: delivered(), 10, "notify.delivered event")
        ev = delivered()[0]
        self.assertEqual((ev["detail"]["notifier"], ev["detail"]["attempts"],
                          ev["detail"]["http_status"], ev["detail"]["event_id"]),
                         ("team", 3, 200, body["id"]))
        self.assertNotIn(SECRET, open(d.log_path, errors="replace").read())

    def test_failures_and_slack_format(self):
        dead = self.receiver(fail=-1)
        rx = self.receiver()
        d = self.start([{"name": "dead", "url": dead.url, "secret": SECRET,
                         "events": ["experiment"], "max_attempts": 2, "retry_base_ms": 50},
                        {"name": "chat", "url": rx.url, "secret": SECRET, "format": "slack",
                         "events": ["experiment.failed"]}])
        eid = d.create_experiment(spec(max_failures=0))["id"]
        w = Worker(d)
        t = w.lease_one()
        w.finish_ok(t, status="failed", error="CUDA out of memory")
        wait_until(lambda: len(rx.requests) >= 1, 10, "the chat notice")
        body = rx.bodies()[0][1]
        self.assertEqual(set(body), {"text", "event"})
        self.assertEqual(body["event"]["kind"], "experiment.failed")
        self.assertIn("Rung: experiment %d failed (failed, max_failed_trials)" % eid,
                      body["text"])
        self.assertIn("CUDA out of memory", body["text"])

        def failed():
            return [e for e in d.ok("GET", "/api/v1/events?kind=notify")["items"]
                    if e["kind"] == "notify.failed"]
        wait_until(lambda: len(failed()) >= 2, 10, "notify.failed events")
        f = failed()[0]["detail"]
        self.assertEqual((f["notifier"], f["attempts"], f["error"]), ("dead", 2, "HTTP 500"))

    def test_a_slow_receiver_does_not_delay_reports(self):
        slow = self.receiver(delay=2.0)
        d = self.start([{"name": "slow", "url": slow.url, "secret": SECRET, "events": ["*"]}])
        eid = d.create_experiment(spec(num_samples=1))["id"]
        w = Worker(d)
        t = w.lease_one()
        worst = 0.0
        for step in range(1, 201):
            if step % 10 == 0:  # events keep coming: pause, resume
                d.pause(eid)
                d.resume(eid)
            t0 = time.monotonic()
            w.report_ok(t, step, {"loss": 1.0 / step})
            worst = max(worst, time.monotonic() - t0)
        w.finish_ok(t)
        self.assertLess(worst, 0.5, "a report waited on the slow receiver")
        print("slow receiver (2 s a request): 200 reports, slowest %.1f ms" % (worst * 1000))

    def test_experiments_pick_names_never_urls(self):
        a, b = self.receiver(), self.receiver()
        d = self.start([{"name": "a", "url": a.url, "secret": SECRET, "events": ["experiment"]},
                        {"name": "b", "url": b.url, "secret": SECRET, "events": ["experiment"]}])
        eid = d.create_experiment(spec(notify=["b"]))["id"]
        d.pause(eid)
        wait_until(lambda: len(b.requests) >= 2, 10, "b's notices")
        time.sleep(0.3)
        self.assertEqual(a.requests, [])
        self.assertEqual([x["kind"] for _, x in b.bodies()],
                         ["experiment.submitted", "experiment.paused"])
        r = d.request("POST", "/api/v1/experiments", spec(notify=["c"]))
        self.assertEqual((r.status, r.json["error"]["field"]), (400, "notify[0]"))
        r = d.request("POST", "/api/v1/experiments", spec(notify=["http://evil.example/"]))
        self.assertEqual((r.status, r.json["error"]["field"]), (400, "notify[0]"))

    def test_bad_file_is_refused_at_start(self):
        path = os.path.join(self.tmp, "bad.json")
        with open(path, "w") as f:
            json.dump({"notifiers": [{"name": "x", "url": "ftp://h", "secret": SECRET,
                                      "events": ["*"]}]}, f)
        d = self.daemon("--notify-file", path, start=False)
        self.assertEqual(d.run_to_exit(), 2)
        self.assertIn("notifiers[0].url: must start with http:// or https://", d.stderr_text())


if __name__ == "__main__":
    main()
