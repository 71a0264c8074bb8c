"""rungd on PostgreSQL (docs/operations.md, "PostgreSQL"): how it is told the
database, what it refuses, and one leader per database (a second rungd
stands by: test_failover.py has the clients that follow).

Needs RUNG_TEST_DATABASE (tests/postgres/cluster.sh's conninfo file; ctest
gives it, label postgres): without it every test fails, as a test of this
file must not pass unrun.
"""

import os
import subprocess
import time

import rungd_harness as h


class Options(h.RungdTestCase):
    def setUp(self):
        super().setUp()
        self.cluster = h.postgres_conninfo()
        self.assertIsNotNone(self.cluster, "RUNG_TEST_DATABASE names no cluster")

    def refused(self, args, want_rc, *phrases):
        d = h.Daemon(self.tmp)
        rc = d.run_to_exit([h.rungd_path(), "--port", "0"] + args)
        err = d.stderr_text()
        self.assertEqual(rc, want_rc, err)
        for p in phrases:
            self.assertIn(p, err)
        return err

    def test_no_password_on_the_command_line(self):
        kv = dict(item.split("=", 1) for item in self.cluster.split())
        uri = "postgresql://%s:%s@%s:%s/rung" % (kv["user"], kv["password"], kv["host"], kv["port"])
        for database in (uri, self.cluster):
            err = self.refused(["--database", database, "--data-dir", self.tmp], 2,
                               "--database", "password")
            # The password is never echoed back.
            self.assertNotIn(kv["password"], err)

    def test_database_file_needs_data_dir_and_a_line(self):
        f = os.path.join(self.tmp, "database")
        with open(f, "w") as out:
            out.write(self.cluster + "\n")
        self.refused(["--database-file", f], 2, "--data-dir")
        self.refused(["--database-file", f, "--database", "dbname=x", "--data-dir", self.tmp], 2,
                     "not both")
        empty = os.path.join(self.tmp, "empty")
        open(empty, "w").close()
        self.refused(["--database-file", empty, "--data-dir", self.tmp], 2,
                     "--database-file", "no connection string")
        self.refused(["--database-file", f, "--data-dir", self.tmp, "--check"], 2, "--check")

    def test_unreachable_server_exits_1_and_says_why(self):
        f = os.path.join(self.tmp, "database")
        with open(f, "w") as out:
            out.write("host=127.0.0.1 port=1 dbname=rung user=rung password=hidden-pw "
                      "connect_timeout=3\n")
        err = self.refused(["--database-file", f, "--data-dir", self.tmp], 1,
                           "cannot connect to PostgreSQL")
        self.assertNotIn("hidden-pw", err)


class OneLeaderPerDatabase(h.RungdTestCase):
    def test_second_daemon_stands_by_until_the_first_is_gone(self):
        self.assertIsNotNone(h.postgres_conninfo(), "RUNG_TEST_DATABASE names no cluster")
        first = self.daemon()
        eid = first.create_experiment(h.spec(num_samples=2))["id"]
        # A second rungd on the same database listens as a standby: every
        # request is answered 503 with the leader's address.
        second = h.Daemon(self.tmp)
        second.database_file = first.database_file
        second.wait_leader = False
        self._daemons.append(second)
        second.start()
        self.assertIn("(standby)", "\n".join(second.stdout_lines))
        st, body = second.call("GET", "/api/v1/experiments/%d" % eid)
        self.assertEqual(st, 503)
        self.assertEqual((body["role"], body["leader"]), ("standby", first.url))
        # kill -9 of the first: its lease ends, and the second leads on the
        # same data.
        first.kill9()
        t0 = time.monotonic()
        h.wait_until(lambda: second.call("GET", "/api/v1/experiments/%d" % eid)[0] == 200, 10,
                     "the standby to take over")
        self.assertLess(time.monotonic() - t0, 5.0)
        self.assertEqual(second.experiment(eid)["id"], eid)
        second.wait_proposed(eid, 2)


    def test_a_leader_whose_epoch_was_taken_commits_nothing_more(self):
        """Another rungd took the lead while this one's connection lived (a
        claim after its lease ran out, say while it was stopped): its next
        commit fails in the lease renewal, the report in it is not kept and
        not answered, and the rungd exits with status 1."""
        self.assertIsNotNone(h.postgres_conninfo(), "RUNG_TEST_DATABASE names no cluster")
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=1))["id"]
        d.wait_proposed(eid, 1)
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 1.0})
        with open(d.database_file) as f:
            conninfo = f.readline().strip()
        psql(conninfo, "UPDATE rung_leader SET epoch = epoch + 1, holder = 'http://elsewhere'")
        d._stopping = True  # it is to exit on its own
        with self.assertRaisesRegex(AssertionError, "Connection|closed|refused"):
            w.report(t, 2, {"loss": 0.5})  # unanswered: the process exits
        self.assertEqual(d.wait_exit(10), 1)
        self.assertIn("another rungd leads the database now (this one led epoch 1)",
                      d.stderr_text())
        steps = psql(conninfo, "SELECT string_agg(step::text, ',' ORDER BY step) FROM reports "
                               "WHERE trial_id = %d" % t["id"])
        self.assertEqual(steps, "1")


def psql(conninfo, sql):
    """The first column of the first row of `sql` on that database, as text."""
    kv = dict(item.split("=", 1) for item in conninfo.split())
    env = dict(os.environ, PGPASSWORD=kv.get("password", ""))
    r = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-h", kv["host"], "-p", kv["port"], "-U",
                        kv["user"], "-d", kv["dbname"], "-c", sql],
                       env=env, check=True, capture_output=True, text=True, timeout=30)
    return r.stdout.strip()


class Migrate(h.RungdTestCase):
    """rungd migrate: a store copied SQLite to PostgreSQL and back answers as
    the first did."""

    def snapshot(self, d, eid):
        """What a client sees of an experiment: it, its trials and every
        trial's reports (times of the daemon's own clock left out)."""
        exp = d.experiment(eid)
        trials = d.all_trials(eid)
        metrics = {t["id"]: d.metrics_of(t["id"]) for t in trials}
        return exp["state"], exp["counts"], exp["best"], trials, metrics

    def migrate(self, frm, to):
        r = subprocess.run([h.rungd_path(), "migrate", "--from", frm, "--to", to],
                           capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout + r.stderr

    def test_sqlite_to_postgres_and_back(self):
        cluster = h.postgres_conninfo()
        self.assertIsNotNone(cluster, "RUNG_TEST_DATABASE names no cluster")
        lite = os.path.join(self.tmp, "first.db")
        d = self.daemon(db=lite)
        eid = d.create_experiment(h.spec(num_samples=3))["id"]
        d.wait_proposed(eid, 3)
        w = h.Worker(d)
        for i in range(3):
            t = w.lease_one()
            for step in range(1, 4):
                w.report_ok(t, step, {"loss": 1.0 / (step + i), "acc": 0.1 * step})
            if i < 2:
                w.finish_ok(t)  # the third stays running
        before = self.snapshot(d, eid)
        self.assertEqual(d.stop(), 0)

        pg = os.path.join(self.tmp, "pg")
        with open(pg, "w") as f:
            f.write(h.postgres_database(cluster) + "\n")
        rc, out = self.migrate("sqlite:" + lite, "pgfile:" + pg)
        self.assertEqual(rc, 0, out)
        self.assertIn("reports: 9 rows copied, counted and sampled", out)
        # Into a database that holds data: refused, nothing changed.
        rc, out = self.migrate("sqlite:" + lite, "pgfile:" + pg)
        self.assertEqual(rc, 1, out)
        self.assertIn("not empty", out)

        on_pg = h.Daemon(self.tmp)
        on_pg.database_file = pg
        self._daemons.append(on_pg)
        on_pg.start()
        self.assertEqual(self.snapshot(on_pg, eid), before)
        # While a rungd leads it, the database is not copied from.
        back = os.path.join(self.tmp, "back.db")
        rc, out = self.migrate("pgfile:" + pg, "sqlite:" + back)
        self.assertEqual(rc, 1, out)
        self.assertIn("a rungd leads", out)
        self.assertEqual(on_pg.stop(), 0)

        rc, out = self.migrate("pgfile:" + pg, "sqlite:" + back)
        self.assertEqual(rc, 0, out)
        again = self.daemon(db=back)
        self.assertEqual(self.snapshot(again, eid), before)
        # New ids go on after the copied ones, on both.
        self.assertGreater(again.create_experiment(h.spec())["id"], eid)


if __name__ == "__main__":
    h.main()
