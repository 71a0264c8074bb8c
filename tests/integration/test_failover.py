"""A standby rungd that takes over (docs/operations.md, "A standby rungd"),
and the clients that follow it (docs/api.md, "Several servers"): two rungd
on one PostgreSQL database, workers, the Python client and `rung` given
both addresses.

Needs RUNG_TEST_DATABASE (tests/postgres/cluster.sh's conninfo file; ctest
gives it, label postgres): without it every test fails.
"""

import json
import os
import signal
import subprocess
import sys
import time
import types
import urllib.error
import urllib.request

import rungd_harness as h
import worker_harness as wh

sys.path.insert(0, os.path.join(wh.REPO_ROOT, "python"))
import rung  # noqa: E402  (the repository's Python client)

# The goal of docs/operations.md: a standby answers as the leader within
# this many seconds of the leader's death.
TAKEOVER_S = 5.0

STEPS = 40
REPORTER = """
    import json, sys, time
    x = float(sys.argv[1])
    for step in range(1, %d + 1):
        print("@rung " + json.dumps({"step": step, "loss": (x - 0.3) ** 2 + 1.0 / step}),
              flush=True)
        time.sleep(0.05)
    """ % STEPS


def status_of(url, path="/api/v1/experiments"):
    """(status, JSON body, headers) of a GET, any status."""
    try:
        with urllib.request.urlopen(url + path, timeout=5) as r:
            return r.status, json.loads(r.read() or b"null"), r.headers
    except urllib.error.HTTPError as e:
        body = e.read()
        return e.code, json.loads(body) if body else None, e.headers


class Failover(wh.WorkerTestCase):
    def setUp(self):
        super().setUp()
        self.assertIsNotNone(h.postgres_conninfo(), "RUNG_TEST_DATABASE names no cluster")

    def pair(self):
        """A leader and a standby on one database, on ports they keep."""
        first = self.daemon(fixed_port=True)
        second = wh.FixedPortDaemon(self.tmp)
        second.database_file = first.database_file
        second.wait_leader = False
        self._daemons.append(second)
        second.start()
        return first, second

    def leader_within(self, daemon, since, what):
        """Polls daemon until it answers as the leader; the seconds since
        `since` (time.monotonic())."""
        deadline = since + TAKEOVER_S + 10
        while time.monotonic() < deadline:
            code, _, _ = status_of(daemon.url)
            if code == 200:
                return time.monotonic() - since
            time.sleep(0.05)
        raise AssertionError("%s: no leader after %.0f s\n%s"
                             % (what, deadline - since, daemon.diagnostics()))

    def test_standby_answers_503_with_the_leader(self):
        first, second = self.pair()
        code, body, headers = status_of(second.url)
        self.assertEqual(code, 503)
        self.assertEqual(body["error"]["code"], "unavailable")
        self.assertEqual(body["role"], "standby")
        self.assertEqual(body["leader"], first.url)
        self.assertEqual(headers["X-Rung-Leader"], first.url)
        self.assertEqual(headers["Retry-After"], "1")
        self.assertEqual(status_of(first.url)[0], 200)
        # /metrics says each one's role and the epoch of the lead.
        for d, role in ((first, "leader"), (second, "standby")):
            with urllib.request.urlopen(d.url + "/metrics", timeout=5) as r:
                text = r.read().decode()
            self.assertIn('rung_role{role="%s"} 1' % role, text)
            self.assertIn("rung_leader_epoch 1\n", text)
        # A clean stop hands over at once, without waiting for the lease.
        t0 = time.monotonic()
        self.assertEqual(first.stop(), 0)
        took = self.leader_within(second, t0, "after a clean stop")
        self.assertLess(took, 1.5)

    def test_heartbeats_follow_the_leader(self):
        # A trial that is silent longer than the lease lives on its
        # worker's heartbeats: they must reach the new leader, or the trial
        # would be declared lost and run again.
        first = self.daemon("--lease-s", "3", fixed_port=True)
        second = wh.FixedPortDaemon(self.tmp, args=("--lease-s", "3"))
        second.database_file = first.database_file
        second.wait_leader = False
        self._daemons.append(second)
        second.start()
        prog = self.script("quiet.py", '''
            import json, sys, time
            print("@rung " + json.dumps({"step": 1, "loss": 1.0}), flush=True)
            time.sleep(9)
            print("@rung " + json.dumps({"step": 2, "loss": 0.5}), flush=True)
            ''')
        both = "%s,%s" % (first.url, second.url)
        client = rung.Client(both)
        eid = client.request("POST", "/api/v1/experiments", wh.command_spec(
            [wh.PYTHON, prog, "{x}"], num_samples=1, max_failures=0))["id"]
        worker = wh.WorkerProc(self, types.SimpleNamespace(url=both), "quiet")
        self._workers.append(worker)
        h.wait_until(lambda: [t for t in client._pages("/api/v1/experiments/%d/trials" % eid)
                              if (t.get("step") or 0) >= 1], 20, "the first report")
        first.kill9()
        h.wait_until(lambda: client.request("GET", "/api/v1/experiments/%d" % eid)["state"]
                     == "completed", 40, "the experiment to complete", interval=0.5)
        t = list(client._pages("/api/v1/experiments/%d/trials" % eid))[0]
        self.assertEqual((t["state"], t["attempt"]), ("completed", 1), t)

    def test_kills_and_hangs_lose_nothing(self):
        a, b = self.pair()
        both = "%s,%s" % (a.url, b.url)
        client = rung.Client(both)
        prog = self.script("reporter.py", REPORTER)
        n_trials = 16
        eid = client.request("POST", "/api/v1/experiments", wh.command_spec(
            [wh.PYTHON, prog, "{x}"], num_samples=n_trials, max_failures=0))["id"]
        workers = [wh.WorkerProc(self, types.SimpleNamespace(url=both), "w%d" % i,
                                 cpu_slots=1) for i in range(8)]
        self._workers.extend(workers)

        daemons = {a.url: a, b.url: b}
        leader, standby = a, b
        takeovers = []
        # Ten kill -9 of the leader and two SIGSTOPs, while reports stream:
        # each time the standby takes over, and the dead one comes back as
        # the standby.
        plan = ["kill"] * 5 + ["stop"] + ["kill"] * 5 + ["stop"]
        for i, how in enumerate(plan):
            time.sleep(0.5)
            t0 = time.monotonic()
            if how == "kill":
                leader.kill9()
            else:
                leader.signal(signal.SIGSTOP)
            takeovers.append(self.leader_within(standby, t0, "%s %d" % (how, i)))
            if how == "stop":
                # Woken, the old leader finds its connection ended and
                # exits: it never acts as the leader again.
                leader._stopping = True
                leader.proc.send_signal(signal.SIGCONT)
                rc = leader.wait_exit(10)
                self.assertEqual(rc, 1, leader.diagnostics())
            leader.wait_leader = False
            leader.restart()
            code, body, _ = status_of(leader.url)
            self.assertEqual((code, body["role"]), (503, "standby"), leader.diagnostics())
            leader, standby = standby, leader

        # The `rung` client through both addresses, whichever leads.
        cli = subprocess.run([os.environ.get("RUNG_CLI") or os.path.join(
            os.path.dirname(h.rungd_path()), "rung"), "--server", "%s,%s" % (b.url, a.url),
            "show", str(eid)], capture_output=True, text=True, timeout=60)
        self.assertEqual(cli.returncode, 0, cli.stderr)

        h.wait_until(lambda: client.request("GET", "/api/v1/experiments/%d" % eid)["state"]
                     == "completed", 120, "the experiment to complete",
                     interval=0.5)
        trials = list(client._pages("/api/v1/experiments/%d/trials" % eid))
        self.assertEqual(len(trials), n_trials)
        for t in trials:
            # Not one trial ran twice: every one completed on its first
            # attempt (a trial given to two workers, or lost, would not).
            self.assertEqual((t["state"], t["attempt"]), ("completed", 1), t)
            steps = [m["step"] for m in client.request(
                "GET", "/api/v1/trials/%d/metrics" % t["id"], query={"limit": 1000})["items"]]
            # Every report, once: none lost, none counted twice.
            self.assertEqual(steps, list(range(1, STEPS + 1)), t["id"])
        print("takeovers (s): %s; max %.2f" % (
            ", ".join("%.2f" % s for s in takeovers), max(takeovers)), file=sys.stderr)
        self.assertLessEqual(max(takeovers), TAKEOVER_S)
        for w in workers:
            self.assertTrue(w.alive(), w.diagnostics())
        del daemons


if __name__ == "__main__":
    wh.main()
