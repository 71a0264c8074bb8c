"""Integration tests: GET /metrics for operators (docs/api.md, "GET /metrics").

The exposition is parsed with the Prometheus client's own parser (Debian's
python3-prometheus-client), every family is checked for its HELP and TYPE,
and the values are checked against what the API says after a scenario run
with rungd --lease-s 1: two experiments, leases, reports, a failure retried,
a lease left to expire, a user's retry-failed, long polls that wait, and the
database file on disk.
"""

import os
import re
import subprocess
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

import rungd_harness as h

EXPIRY_S = 8.0  # bound on noticing a 1 s lease that ran out

TRIAL_STATES = ("pending", "running", "completed", "stopped", "failed", "canceled", "paused",
                "preempted")

# Every family /metrics must have, with its TYPE, under its full name (the
# parser drops a counter's _total from the family's name).
FAMILIES = {
    "rung_trials": "gauge",
    "rung_experiments": "gauge",
    "rung_experiment_trials": "gauge",
    "rung_queue_trials": "gauge",
    "rung_lease_polls_waiting": "gauge",
    "rung_leases_granted_total": "counter",
    "rung_leases_undelivered_total": "counter",
    "rung_leases_expired_total": "counter",
    "rung_trial_retries_total": "counter",
    "rung_workers_alive": "gauge",
    "rung_workers_gone": "gauge",
    "rung_reports_total": "counter",
    "rung_reports_per_second": "gauge",
    "rung_requests_total": "counter",
    "rung_commits_total": "counter",
    "rung_request_duration_seconds": "histogram",
    "rung_report_duration_seconds": "histogram",
    "rung_sqlite_commit_seconds": "histogram",
    "rung_database_size_bytes": "gauge",
    "rung_store_info": "gauge",
    "rung_role": "gauge",
    "rung_leader_epoch": "gauge",
    "rung_build_info": "gauge",
}


class Scrape:
    """One GET /metrics: the raw text, each family's type and help by its
    full name, and every sample as {(name, sorted labels): value}."""

    def __init__(self, d):
        r = d.request("GET", "/metrics")
        if r.status != 200:
            raise AssertionError("GET /metrics: %r" % r)
        self.content_type = r.headers.get("content-type", "")
        self.text = r.text
        self.types, self.helps, self.samples = {}, {}, {}
        for fam in text_string_to_metric_families(r.text):
            full = fam.name + "_total" if fam.type == "counter" else fam.name
            self.types[full] = fam.type
            self.helps[full] = fam.documentation
            for s in fam.samples:
                self.samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def value(self, name, **labels):
        key = (name, tuple(sorted(labels.items())))
        if key not in self.samples:
            raise AssertionError("no sample %s%r in /metrics:\n%s" % (name, labels, self.text))
        return self.samples[key]

    def labelled(self, name):
        """[(labels dict, value)] of every sample called name."""
        return [(dict(lb), v) for (n, lb), v in self.samples.items() if n == name]

    def bucket(self, name, le):
        return self.value(name + "_bucket", le=le)

    def over(self, name, le):
        """Observations of histogram name above the bucket bound le."""
        return self.value(name + "_count") - self.bucket(name, le)

    def experiment_counts(self, eid):
        return {lb["state"]: v for lb, v in self.labelled("rung_experiment_trials")
                if lb["experiment"] == str(eid)}


def stable(d, eids):
    """A scrape taken while the experiments' counts held still (trials are
    proposed in the background), and those counts as the API gave them."""
    for _ in range(100):
        before = {e: d.experiment(e)["counts"] for e in eids}
        s = Scrape(d)
        after = {e: d.experiment(e)["counts"] for e in eids}
        if before == after:
            return s, after
        time.sleep(0.05)
    raise AssertionError("the experiments' counts never held still")


class Exposition(h.RungdTestCase):

    def test_every_family_with_help_and_type(self):
        d = self.daemon()
        name = 'quote " backslash \\ newline \n end'
        exp = d.create_experiment(h.spec(name=name, num_samples=2))
        d.wait_proposed(exp["id"], 2)
        s = Scrape(d)
        self.assertTrue(s.content_type.startswith("text/plain; version=0.0.4"), s.content_type)
        for fam, typ in FAMILIES.items():
            self.assertEqual(s.types.get(fam), typ, "family %s in:\n%s" % (fam, s.text))
            self.assertTrue(s.helps.get(fam), "no HELP for %s" % fam)
            # The parser is lenient: the lines themselves, as the format has them.
            self.assertIn("# TYPE %s %s\n" % (fam, typ), s.text)
            self.assertIn("# HELP %s " % fam, s.text)
        # No sample outside the families above (each has HELP and TYPE).
        suffixes = ("_bucket", "_sum", "_count")
        for (sample, _), _ in s.samples.items():
            base = next((sample[:-len(x)] for x in suffixes
                         if sample.endswith(x) and sample[:-len(x)] in FAMILIES), sample)
            self.assertIn(base, FAMILIES, "sample %s of no documented family" % sample)
        # The name label comes back as it was given: escaped, not cut.
        names = {lb["name"] for lb, _ in s.labelled("rung_experiment_trials")}
        self.assertEqual(names, {name})
        self.assertEqual(sorted(s.experiment_counts(exp["id"])), sorted(TRIAL_STATES))
        self.assertEqual(s.experiment_counts(exp["id"])["pending"], 2)
        self.assertEqual(s.experiment_counts(exp["id"])["completed"], 0)  # zeros listed
        self.assertEqual({lb["reason"] for lb, _ in s.labelled("rung_trial_retries_total")},
                         {"failed", "worker_lost", "user"})
        # A fresh rungd counts from 0.
        for counter in ("rung_leases_granted_total", "rung_leases_expired_total",
                        "rung_leases_undelivered_total"):
            self.assertEqual(s.value(counter), 0, counter)
        self.assertEqual(s.value("rung_report_duration_seconds_count"), 0)

    def test_build_info_is_the_version(self):
        d = self.daemon()
        out = subprocess.run([h.rungd_path(), "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=10, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        words = out.stdout.decode().split()
        self.assertEqual(words[0], "rungd", out.stdout)
        info = Scrape(d).labelled("rung_build_info")
        self.assertEqual(info, [({"version": words[1]}, 1.0)])

    def test_database_size_is_the_files(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=50))
        d.wait_proposed(exp["id"], 50)

        def on_disk():
            return sum(os.path.getsize(p) for p in (d.db, d.db + "-wal") if os.path.exists(p))

        for _ in range(50):  # nothing writes once the trials exist: sizes hold still
            before = on_disk()
            v = Scrape(d).value("rung_database_size_bytes")
            after = on_disk()
            if before == after:
                break
        self.assertGreater(v, 0)
        self.assertEqual(before, after, "the files kept changing")
        self.assertEqual(v, before)


class Scenario(h.RungdTestCase):

    def test_counters_and_states_follow_the_api(self):
        d = self.daemon("--lease-s", "1")
        a = d.create_experiment(h.spec(name="alpha", num_samples=3, max_failures=1))["id"]
        b = d.create_experiment(h.spec(name="beta", num_samples=2, max_failures=0))["id"]
        d.wait_proposed(a, 3)
        d.wait_proposed(b, 2)
        base = Scrape(d)
        w = h.Worker(d, name="lossy")
        granted = reports = 0

        # Leases go by fair share: a, b, a, b.
        lost = w.lease_one()  # its worker goes silent: it expires
        done = w.lease_one()
        failing = w.lease_one()
        broken = w.lease_one()
        granted += 4
        self.assertEqual(sorted(t["experiment_id"] for t in (lost, done, failing, broken)),
                         sorted([a, a, b, b]))
        w.report_ok(lost, 1, {"loss": 0.5})
        w.report_ok(done, 1, {"loss": 0.4})
        w.report_ok(done, 2, {"loss": 0.3})
        w.report_ok(failing, 1, {"loss": 0.7})
        reports += 4
        w.finish_ok(done)
        # A failure: retried in a (max_failures 1), final in b (max_failures 0).
        for t in (failing, broken):
            w.finish_ok(t, status="failed", error="boom")
        retried_failed = sum(1 for t in (failing, broken) if t["experiment_id"] == a)
        finally_failed = 2 - retried_failed

        # Nothing heartbeats `lost`: its lease runs out and it is retried.
        t = h.wait_until(lambda: (lambda t: t if t["attempt"] == 2 else None)(
            d.trial(lost["id"])), EXPIRY_S, "trial %d to be retried" % lost["id"])
        self.assertEqual(t["state"], "pending")
        # The worker learns it late: a refused report is still a report request.
        st, _ = w.report(lost, 2, {"loss": 0.5})
        self.assertEqual(st, 409)
        reports += 1
        # The user retries b's failed trials.
        failed_b = [t for t in (failing, broken) if t["experiment_id"] == b]
        st, doc = d.retry_failed(b)
        self.assertEqual(st, 200, doc)

        s, counts = stable(d, [a, b])
        delta = lambda name, **lb: s.value(name, **lb) - base.value(name, **lb)  # noqa: E731
        self.assertEqual(delta("rung_leases_granted_total"), granted)
        self.assertEqual(delta("rung_leases_expired_total"), 1)
        self.assertEqual(delta("rung_leases_undelivered_total"), 0)
        self.assertEqual(delta("rung_trial_retries_total", reason="worker_lost"), 1)
        self.assertEqual(delta("rung_trial_retries_total", reason="failed"), retried_failed)
        self.assertEqual(delta("rung_trial_retries_total", reason="user"), len(failed_b))
        self.assertEqual(finally_failed, len(failed_b))
        self.assertEqual(s.value("rung_report_duration_seconds_count"), reports)
        self.assertEqual(s.value("rung_report_duration_seconds_bucket", le="+Inf"), reports)
        self.assertEqual(delta("rung_reports_total"), 4)  # the refused one wrote nothing

        # Every state of both experiments, as GET /api/v1/experiments/{id} counts them.
        for eid in (a, b):
            got = s.experiment_counts(eid)
            self.assertEqual(sorted(got), sorted(TRIAL_STATES))
            self.assertEqual(got, {k: float(v) for k, v in counts[eid].items()}, eid)
        # And the totals, and the line: pending and preempted of running experiments.
        for state in TRIAL_STATES:
            self.assertEqual(s.value("rung_trials", state=state),
                             counts[a][state] + counts[b][state], state)
        self.assertEqual(s.value("rung_queue_trials"),
                         sum(counts[e]["pending"] + counts[e]["preempted"] for e in (a, b)))
        self.assertGreater(s.value("rung_queue_trials"), 0)

        # Workers: `lossy` has been silent past its lease; a new one is alive.
        w2 = h.Worker(d, name="fresh")

        def workers_agree():
            w2.heartbeat([])  # keeps it alive
            listed = d.ok("GET", "/api/v1/workers")["items"]
            s = Scrape(d)
            states = sorted(x["state"] for x in listed)
            got = (s.value("rung_workers_alive"), s.value("rung_workers_gone"))
            return got == (states.count("alive"), states.count("gone")) == (1, 1)

        h.wait_until(workers_agree, 5.0, "one worker alive and one gone, as the listing says",
                     interval=0.2)

    def test_long_polls_are_not_latency(self):
        d = self.daemon()
        w = h.Worker(d)
        base = Scrape(d)
        self.assertEqual(base.over("rung_request_duration_seconds", "1"), 0)
        got = {}

        def poll(key, wait_s):
            got[key] = w.lease(wait_s=wait_s)

        # 1: nothing to lease: parked for its whole wait_s, then 204.
        t = threading.Thread(target=poll, args=("empty", 1.5))
        t.start()
        h.wait_until(lambda: Scrape(d).value("rung_lease_polls_waiting") == 1, 5.0,
                     "the lease to park")
        t.join(15)
        self.assertEqual(got["empty"], (204, None))
        # 2: work comes while it waits: the re-run hands out a trial.
        t = threading.Thread(target=poll, args=("work", 10))
        t.start()
        h.wait_until(lambda: Scrape(d).value("rung_lease_polls_waiting") == 1, 5.0,
                     "the lease to park")
        time.sleep(1.2)
        started = time.monotonic()
        exp = d.create_experiment(h.spec(num_samples=1))
        t.join(15)
        self.assertEqual(got["work"][0], 200, got)
        self.assertEqual(got["work"][1]["experiment_id"], exp["id"])
        self.assertLess(time.monotonic() - started, 5.0)

        s = Scrape(d)
        self.assertEqual(s.value("rung_lease_polls_waiting"), 0)
        self.assertEqual(s.value("rung_leases_granted_total"), 1)
        # Both leases were observed, and neither as the second or more it waited.
        self.assertGreaterEqual(s.value("rung_request_duration_seconds_count")
                                - base.value("rung_request_duration_seconds_count"), 2)
        self.assertEqual(s.over("rung_request_duration_seconds", "1"), 0, s.text)
        self.assertLess(s.value("rung_request_duration_seconds_sum")
                        - base.value("rung_request_duration_seconds_sum"), 1.0)


if __name__ == "__main__":
    h.main()
