"""Integration tests: the database file under a running rungd.

docs/operations.md, "The database file": rungd checks at every commit that
its --db path still names the file it opened and that no other program
wrote to it. When the file is unlinked, replaced or overwritten under it, it
stops acknowledging at once (every request 503 "unavailable", /healthz
failing, one error line in the log), writes PATH.fault and copies what its
connection still reads to PATH.rescued-TIME. A later start never creates a
new database where one was (PATH.created) and refuses while PATH.fault is
there, unless --init. `rungd --check` says whether a file is sound, and the
recovery steps of docs/operations.md ("Recover the database") give a
database that --check accepts and rungd starts on.

Each test drives a real rungd with a fake worker over HTTP (register, lease,
report), tampers with the files as an operator's mistake or a full disk's
cleanup would, and checks what a user would: which reports were answered
200, and which of those a later start still has.
"""

import glob
import os
import shutil
import sqlite3
import subprocess

import rungd_harness as h

# docs/operations.md: the exit status of a start refused for the database.
EXIT_DATABASE = 3


class StoreFile(h.RungdTestCase):

    def start_reporting(self, d):
        """An experiment with one leased trial: (worker, trial)."""
        d.create_experiment(h.spec(name="guarded", num_samples=2))
        w = h.Worker(d, name="guard-worker")
        return w, w.lease_one()

    def report_many(self, w, trial, steps):
        """Posts a report per step; the steps answered 200, and the others'
        (status, error code)."""
        acked, refused = [], []
        for step in steps:
            status, doc = w.report(trial, step, {"loss": 1.0 / (step + 1)})
            if status == 200:
                acked.append(step)
            else:
                refused.append((status, ((doc or {}).get("error") or {}).get("code")))
        return acked, refused

    def assert_stopped(self, d, w, trial, first_step, why):
        """Nothing is acknowledged once the file changed; /healthz and the
        log say why."""
        acked, refused = self.report_many(w, trial, range(first_step, first_step + 10))
        self.assertEqual(acked, [], "reports acknowledged after the database file %s" % why)
        self.assertEqual(set(refused), {(503, "unavailable")}, refused)
        r = d.request("GET", "/healthz", token=None)
        err = self.assertError(r, 503, "unavailable")
        self.assertIn(d.db, err["message"])
        # A lease (a write) is refused too, and a read says the same.
        self.assertError(d.request("POST", "/api/v1/workers/%d/lease" % w.id,
                                   {"cpus": 1, "gpus": [], "wait_s": 0}), 503, "unavailable")
        errors = [line for line in d.stderr_text().splitlines()
                  if " error " in line and "takes no more writes" in line]
        self.assertEqual(len(errors), 1, "one error line, not %d:\n%s"
                         % (len(errors), d.stderr_text()[-2000:]))
        self.assertIn(why, errors[0])
        with open(d.db + ".fault") as f:
            self.assertIn(why, f.read())

    def steps_in(self, db, trial_id):
        con = sqlite3.connect(db)
        try:
            return sorted(r[0] for r in con.execute(
                "SELECT step FROM reports WHERE trial_id = ?", (trial_id,)))
        finally:
            con.close()

    def check(self, db):
        """(exit status, output) of `rungd --check --db db`."""
        r = subprocess.run([h.rungd_path(), "--check", "--db", db], capture_output=True,
                           text=True, timeout=60)
        return r.returncode, r.stdout + r.stderr

    def refused_start(self, d, *args):
        """A start that must refuse: its exit status and its stderr."""
        again = h.Daemon(self.tmp, args=args, db=d.db)
        rc = again.run_to_exit(timeout=15)
        return rc, again.stderr_text()

    def rescued(self, d):
        found = glob.glob(glob.escape(d.db) + ".rescued-*")
        self.assertEqual(len(found), 1, "no copy of what rungd still read: %r" % found)
        return found[0]

    def test_unlinked_database_stops_acknowledging_and_is_not_recreated(self):
        d = self.daemon()
        w, trial = self.start_reporting(d)
        acked, refused = self.report_many(w, trial, range(20))
        self.assertEqual((len(acked), refused), (20, []))
        for suffix in ("", "-wal", "-shm"):
            os.unlink(d.db + suffix)
        self.assert_stopped(d, w, trial, 20, "was deleted or moved")
        self.assertEqual(d.stop(), 0)
        # Every report acknowledged before the unlink is in the copy.
        rescue = self.rescued(d)
        self.assertEqual(self.steps_in(rescue, trial["id"]), list(range(20)))

        rc, err = self.refused_start(d)
        self.assertEqual(rc, EXIT_DATABASE, err)
        self.assertIn("Recover the database", err)
        self.assertFalse(os.path.exists(d.db), "a refused start created a database")
        # The copy put in place and a start with --init: everything is back.
        os.rename(rescue, d.db)
        again = self.daemon("--init", db=d.db)
        self.assertEqual(len(again.metrics_of(trial["id"])), 20)
        self.assertFalse(os.path.exists(d.db + ".fault"))

    def test_missing_database_with_signs_of_one_needs_init(self):
        d = self.daemon()
        self.assertTrue(os.path.exists(d.db + ".created"), "a first start marks the folder")
        self.start_reporting(d)
        self.assertEqual(d.stop(), 0)
        os.unlink(d.db)  # while rungd is stopped: only rung.db.created is left
        rc, err = self.refused_start(d)
        self.assertEqual(rc, EXIT_DATABASE, err)
        self.assertIn(d.db + ".created", err)
        self.assertFalse(os.path.exists(d.db))
        fresh = self.daemon("--init", db=d.db)
        self.assertEqual(fresh.ok("GET", "/api/v1/experiments")["items"], [])

    def test_replaced_database_stops_acknowledging(self):
        d = self.daemon()
        w, trial = self.start_reporting(d)
        acked, _ = self.report_many(w, trial, range(10))
        self.assertEqual(len(acked), 10)
        copy = os.path.join(self.tmp, "copy.db")
        subprocess.run(["sqlite3", d.db, "VACUUM INTO '%s'" % copy], check=True, timeout=60)
        acked, _ = self.report_many(w, trial, range(10, 20))
        self.assertEqual(len(acked), 10)
        os.rename(copy, d.db)  # the copy lacks steps 10 to 19
        self.assert_stopped(d, w, trial, 20, "names another file")
        self.assertEqual(d.stop(), 0)
        self.assertEqual(self.steps_in(self.rescued(d), trial["id"]), list(range(20)))
        rc, err = self.refused_start(d)
        self.assertEqual(rc, EXIT_DATABASE, err)
        self.assertIn(".fault", err)

    def test_overwritten_database_check_and_recovery(self):
        d = self.daemon()
        w, trial = self.start_reporting(d)
        # Rows enough for pages in the middle of the file, and a restart so
        # that they sit in the database file rather than its -wal.
        for base in range(0, 600, 50):
            acked, _ = self.report_many(w, trial, range(base, base + 50))
            self.assertEqual(len(acked), 50)
        self.assertEqual(d.stop(), 0)
        d.restart()
        self.assertEqual(len(self.report_many(w, trial, range(600, 610))[0]), 10)
        code, out = self.check(d.db)  # while rungd runs: read-only
        self.assertEqual(code, 0, out)
        self.assertIn("sound", out)

        # An operator's stray dd, in place, over three pages of reports
        # (damage to the schema's own pages leaves nothing that Debian's
        # sqlite3 can read: then only a backup or rungd's rescued copy helps).
        pages = subprocess.run(
            ["sqlite3", d.db, "SELECT pageno FROM dbstat WHERE name = 'reports' AND "
             "pagetype = 'leaf' ORDER BY pageno"],
            capture_output=True, text=True, check=True, timeout=60).stdout.split()
        self.assertGreater(len(pages), 5)
        with open(d.db, "r+b") as f:
            for page in pages[1:4]:
                f.seek((int(page) - 1) * 4096)
                f.write(b"\xa5" * 4096)
        self.assert_stopped(d, w, trial, 610, "another program wrote")
        self.assertEqual(d.stop(), 0)
        # The copy rungd made reads through its connection's cache: sound and
        # complete when the damaged pages were cached (they are here, read at
        # the start), and never written when a page could not be read.
        for rescue in glob.glob(glob.escape(d.db) + ".rescued-*"):
            self.assertEqual(self.check(rescue)[0], 0, self.check(rescue)[1])
            self.assertEqual(self.steps_in(rescue, trial["id"]), list(range(610)))
            print("\nrescued copy: all 610 acknowledged reports, sound")
        rc, err = self.refused_start(d)
        self.assertEqual(rc, EXIT_DATABASE, err)

        code, out = self.check(d.db)
        self.assertEqual(code, 1, out)
        self.assertIn("damaged", out)
        # docs/operations.md, "Recover the database": what SQLite can read,
        # with Debian's sqlite3 (whose .recover lacks sqlite_dbpage).
        recovered = os.path.join(self.tmp, "recovered.db")
        script = ("sqlite3 \"$DB\" .dump | sed 's/^ROLLBACK; -- due to errors$/COMMIT;/' "
                  "| sqlite3 \"$NEW\" && sqlite3 \"$NEW\" \"PRAGMA user_version = "
                  "$(sqlite3 \"$DB\" 'PRAGMA user_version')\"")
        r = subprocess.run(["sh", "-c", script], env=dict(os.environ, DB=d.db, NEW=recovered),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        code, out = self.check(recovered)
        self.assertEqual(code, 0, out)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(d.db + suffix):
                os.rename(d.db + suffix, os.path.join(self.tmp, "damaged.db" + suffix))
        shutil.move(recovered, d.db)
        again = self.daemon("--init", db=d.db)
        exps = again.ok("GET", "/api/v1/experiments")["items"]
        self.assertEqual([e["name"] for e in exps], ["guarded"])
        steps = [m["step"] for m in again.metrics_of(trial["id"])]
        print("\n%d of 610 acknowledged reports recovered after 3 pages were overwritten"
              % len(steps))
        self.assertGreater(len(steps), 0)

    def test_check_of_a_missing_and_a_sound_database(self):
        code, out = self.check(os.path.join(self.tmp, "none.db"))
        self.assertEqual(code, 1, out)
        self.assertIn("no database", out)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "none.db")))
        d = self.daemon()
        self.start_reporting(d)
        self.assertEqual(d.stop(), 0)
        code, out = self.check(d.db)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"sound: 1 experiments, 2 trials, 0 reports")


if __name__ == "__main__":
    h.main()
