"""Integration tests: operating Rung as a service (docs/operations.md).

Every program's --version; the token read from a file (--token-file), never
shown on a command line; systemd's readiness protocol (READY=1 on
$NOTIFY_SOCKET once rungd listens, STOPPING=1 on SIGTERM); a backup taken
with sqlite3's VACUUM INTO while reports flow, restored into a new rungd
that serves every report acknowledged before the backup began; and the
upgrade from each earlier release's database in tests/data/upgrade/.
"""

import glob
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time

import rungd_harness as h
import worker_harness as wh

HERE = os.path.dirname(os.path.abspath(__file__))
UPGRADE_DIR = os.path.join(HERE, "..", "data", "upgrade")
# "0.1.0" or "0.1.0+git285.g07b8a54" with ".dirty" after uncommitted changes
# (cmake/version.cmake).
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(\+git\d+\.g[0-9a-f]{7,}(\.dirty)?)?$")


def program(env_name):
    path = os.environ.get(env_name, "")
    if not path:
        raise AssertionError("%s is not set: run through ctest" % env_name)
    return path


class Version(h.RungdTestCase):

    def test_every_program_prints_one_version(self):
        rungd = h.rungd_path()
        programs = {"rungd": rungd, "rung-worker": program("RUNG_WORKER"),
                    "rung": program("RUNG_CLI"),
                    "rung-train": os.path.join(os.path.dirname(rungd), "rung-train")}
        versions = {}
        for name, path in programs.items():
            r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, "%s --version: %r" % (name, r))
            words = r.stdout.split()
            self.assertEqual(len(words), 2, "%s --version printed %r" % (name, r.stdout))
            self.assertEqual(words[0], name)
            self.assertRegex(words[1], VERSION_RE)
            versions[name] = words[1]
            # And --help says that it can.
            r = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30)
            self.assertIn("--version", r.stdout, name)
        self.assertEqual(len(set(versions.values())), 1, versions)
        # The commit in the version is the one the sources are at.
        head = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True,
                              text=True)
        m = re.search(r"\.g([0-9a-f]+)", versions["rungd"])
        if head.returncode == 0 and m:
            self.assertTrue(head.stdout.strip().startswith(m.group(1)),
                            "version %s, HEAD %s" % (versions["rungd"], head.stdout))


class TokenFile(wh.WorkerTestCase):

    def write_token(self, name, text, mode=0o600):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def test_daemon_and_worker_read_the_token_from_files(self):
        secret = "f00dfeed" * 8
        path = self.write_token("rungd.token", secret + "\n")
        d = self.daemon("--token-file", path, token=secret)
        # The token is not on any command line.
        with open("/proc/%d/cmdline" % d.proc.pid, "rb") as f:
            self.assertNotIn(secret.encode(), f.read())
        self.assertError(d.request("GET", "/api/v1/experiments", token=None), 401,
                         "unauthorized")
        self.assertError(d.request("GET", "/api/v1/experiments", token=secret[:-1] + "0"), 401,
                         "unauthorized")
        self.assertEqual(d.request("GET", "/api/v1/experiments").status, 200)
        # A worker with its own copy of the file runs a trial to the end.
        wpath = self.write_token("worker.token", secret + "\n")
        spec = wh.command_spec([wh.PYTHON, "-c", "print('@rung {\"loss\": 0.5}')"])
        eid = d.create_experiment(spec)["id"]
        w = self.worker(d, "tokened", once=True, extra=["--token-file", wpath])
        self.assertEqual(w.wait_exit(60), 0, w.diagnostics())
        self.assertEqual(d.wait_state(eid, "completed", timeout=30)["best"]["value"], 0.5)
        self.assertNotIn(secret, " ".join(w.command))

    def test_bad_token_files_are_refused_by_name(self):
        rungd = h.rungd_path()
        cases = {
            "missing": (os.path.join(self.tmp, "nope"), "No such file"),
            "empty": (self.write_token("empty", "\n\n"), "holds no token"),
            "two words": (self.write_token("two", "abc def\n"), "blank or control character"),
        }
        for what, (path, message) in cases.items():
            for argv in ([rungd, "--port", "0", "--db", os.path.join(self.tmp, "x.db"),
                          "--token-file", path],
                         [program("RUNG_WORKER"), "--server", "http://127.0.0.1:9",
                          "--token-file", path]):
                r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 2, "%s: %r" % (what, r))
                self.assertIn("--token-file %s" % path, r.stderr, what)
                self.assertIn(message, r.stderr, what)
        both = subprocess.run([rungd, "--token", "a", "--token-file",
                               self.write_token("ok", "b")], capture_output=True, text=True,
                              timeout=30)
        self.assertEqual(both.returncode, 2)
        self.assertIn("not both", both.stderr)

    def test_rotation_accepts_the_new_and_the_old_token(self):
        # docs/operations.md, "Rotate the token": the new token on the first
        # line, the old one on the second, until every worker has the new.
        new, old = "n3w-" + "a" * 40, "0ld-" + "b" * 40
        path = self.write_token("rungd.token", "%s\n%s\n" % (new, old))
        d = self.daemon("--token-file", path, token=new)
        for tok, want in ((new, 200), (old, 200), ("other", 401), (new + old, 401), (None, 401)):
            self.assertEqual(d.request("GET", "/api/v1/experiments", token=tok).status, want,
                             tok)
        d.stop()
        # Once the old line is gone, the old token is refused.
        self.write_token("rungd.token", new + "\n")
        d.start()
        self.assertEqual(d.request("GET", "/api/v1/experiments", token=old).status, 401)
        self.assertEqual(d.request("GET", "/api/v1/experiments", token=new).status, 200)
        # Three tokens are refused; a worker takes one.
        three = self.write_token("three.token", "a\nb\nc\n")
        r = subprocess.run([h.rungd_path(), "--token-file", three], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("more than 2 tokens (line 3)", r.stderr)
        two = self.write_token("two.token", "%s\n%s\n" % (new, old))
        r = subprocess.run([program("RUNG_WORKER"), "--server", "http://127.0.0.1:9",
                            "--token-file", two], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("more than 1 token (line 2)", r.stderr)

    def test_a_loose_token_file_is_warned_about(self):
        path = self.write_token("loose.token", "s3cret", mode=0o644)
        d = self.daemon("--token-file", path, token="s3cret")
        self.assertEqual(d.request("GET", "/api/v1/experiments").status, 200)
        h.wait_until(lambda: "can be read by its group or others" in d.stderr_text(), 5,
                     "the warning about the file's mode")


class Readiness(h.RungdTestCase):

    def test_ready_once_listening_and_stopping_on_sigterm(self):
        path = os.path.join(self.tmp, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(10)
        self.addCleanup(sock.close)
        d = self.daemon(env={"NOTIFY_SOCKET": path})
        msg = sock.recv(4096).decode()
        lines = msg.split("\n")
        self.assertEqual(lines[0], "READY=1", msg)
        self.assertIn("STATUS=listening on port %d" % d.port, lines)
        # Ready means ready: the API answers.
        self.assertEqual(d.request("GET", "/healthz").status, 200)
        self.assertEqual(d.stop(), 0)
        self.assertEqual(sock.recv(4096).decode(), "STOPPING=1")

    def test_an_abstract_socket_name_works_too(self):
        name = "@rung-test-%d" % os.getpid()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind("\0" + name[1:])
        sock.settimeout(10)
        self.addCleanup(sock.close)
        self.daemon(env={"NOTIFY_SOCKET": name})
        self.assertTrue(sock.recv(4096).decode().startswith("READY=1\n"))


class Journal(h.RungdTestCase):
    """Under systemd, stderr is the journal (JOURNAL_STREAM names it): lines
    carry their syslog priority as a "<N>" prefix and no timestamp of
    their own (journald stamps them), so `journalctl -p warning` finds
    rungd's warnings."""

    def run_rungd(self, journal_stream):
        token = os.path.join(self.tmp, "loose.token")
        with open(token, "w") as f:
            f.write("s3cret\n")
        os.chmod(token, 0o644)  # a warning to log
        log = os.path.join(self.tmp, "stderr-%d.log" % len(os.listdir(self.tmp)))
        with open(log, "wb") as err:
            st = os.fstat(err.fileno())
            env = dict(os.environ)
            env.pop("RUNG_LOG", None)
            env["JOURNAL_STREAM"] = journal_stream(st)
            p = subprocess.Popen([h.rungd_path(), "--port", "0", "--db",
                                  os.path.join(self.tmp, "j.db"), "--token-file", token],
                                 stdout=subprocess.PIPE, stderr=err, env=env)
            try:
                self.assertTrue(p.stdout.readline().startswith(b"listening on "))
            finally:
                p.send_signal(signal.SIGTERM)
                self.assertEqual(p.wait(30), 0)
                p.stdout.close()
        with open(log) as f:
            return f.read().splitlines()

    def test_priorities_for_journald(self):
        lines = self.run_rungd(lambda st: "%d:%d" % (st.st_dev, st.st_ino))
        self.assertIn("<4>rungd: --token-file %s can be read by its group or others "
                      "(chmod 600 it)" % os.path.join(self.tmp, "loose.token"), lines)
        self.assertTrue(any(line.startswith("<6>rungd: database ") for line in lines), lines)
        self.assertIn("<6>rungd: stopped", lines)

    def test_timestamps_when_stderr_is_not_the_journal(self):
        # Another stream's numbers (a shell started from a service, say).
        lines = self.run_rungd(lambda st: "%d:%d" % (st.st_dev, st.st_ino + 1))
        self.assertFalse(any(line.startswith("<") for line in lines), lines)
        self.assertTrue(any(re.match(r"^\d{4}-\d\d-\d\dT[0-9:.]+Z warn  rungd: --token-file",
                                     line) for line in lines), lines)


class Load:
    """Simulated workers reporting as fast as rungd acknowledges; every
    acknowledged report is recorded with the time its answer came."""

    def __init__(self, daemon, threads=6, steps=5):
        self.d = daemon
        self.steps = steps
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked = []  # (monotonic time of the answer, trial id, step, loss)
        self.errors = []
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(threads)]

    def run(self, i):
        try:
            w = h.Worker(self.d, name="load-%d" % i)
            while not self.stop.is_set():
                t = w.lease_one()
                for step in range(1, self.steps + 1):
                    loss = t["id"] + step / 100.0
                    w.report_ok(t, step, {"loss": loss})
                    with self.lock:
                        self.acked.append((time.monotonic(), t["id"], step, loss))
                w.finish_ok(t)
        except AssertionError as e:
            if not self.stop.is_set():
                self.errors.append(str(e)[:500])

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(60)


class Backup(h.RungdTestCase):

    def test_backup_under_load_restores_every_acknowledged_report(self):
        d = self.daemon()
        eid = d.create_experiment(h.spec(name="busy", num_samples=100000))["id"]
        backup = os.path.join(self.tmp, "backup", "rung.db")
        os.makedirs(os.path.dirname(backup))
        with Load(d) as load:
            h.wait_until(lambda: len(load.acked) >= 300, 60, "300 acknowledged reports")
            began = time.monotonic()
            # docs/operations.md, "Back up": the command an operator runs.
            r = subprocess.run(["sqlite3", d.db, "VACUUM INTO '%s'" % backup],
                               capture_output=True, text=True, timeout=120)
            ended = time.monotonic()
            time.sleep(0.3)
        self.assertEqual(load.errors, [])
        self.assertEqual(r.returncode, 0, r.stderr)
        before = [a for a in load.acked if a[0] < began]
        during = [a for a in load.acked if began <= a[0] <= ended]
        after = [a for a in load.acked if a[0] > ended]
        print("\n%d reports acknowledged before the backup, %d during it (%.0f ms), %d after"
              % (len(before), len(during), (ended - began) * 1000, len(after)))
        self.assertGreaterEqual(len(before), 300)
        self.assertGreater(len(after), 0, "the load stopped: the backup was not taken under it")
        d.stop()

        con = sqlite3.connect(backup)
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        con.close()
        restored = self.daemon(db=backup)
        by_trial = {}
        for _, tid, step, loss in before:
            by_trial.setdefault(tid, {})[step] = loss
        missing = []
        for tid, steps in by_trial.items():
            served = {m["step"]: m["metrics"]["loss"] for m in restored.metrics_of(tid)}
            for step, loss in steps.items():
                if served.get(step) != loss:
                    missing.append((tid, step, loss, served.get(step)))
        self.assertEqual(missing, [], "acknowledged before the backup, not served after "
                         "restoring it (trial, step, sent, served)")
        exp = restored.experiment(eid)
        self.assertEqual(exp["name"], "busy")
        self.assertEqual(exp["state"], "running")


class Upgrade(h.RungdTestCase):
    """Each earlier release's database (tests/data/upgrade/*.sql, written by
    that release's rungd; make_fixture.py says how) opens in this rungd,
    migrated, with what that rungd served still served."""

    def test_earlier_releases_databases_are_migrated(self):
        fixtures = sorted(glob.glob(os.path.join(UPGRADE_DIR, "*.sql")))
        self.assertGreater(len(fixtures), 0, "no fixture in %s" % UPGRADE_DIR)
        current = len(glob.glob(os.path.join(HERE, "..", "..", "schema", "*.sql")))
        for sql in fixtures:
            with self.subTest(fixture=os.path.basename(sql)):
                self.check_fixture(sql, current)

    def check_fixture(self, sql, current):
        with open(sql[:-4] + ".json") as f:
            want = json.load(f)
        self.assertLess(want["user_version"], current, "the fixture is not older than HEAD")
        db = os.path.join(self.tmp, os.path.basename(sql)[:-4] + ".db")
        con = sqlite3.connect(db)
        with open(sql) as f:
            con.executescript(f.read())
        con.close()
        d = self.daemon(db=db)
        for e in want["experiments"]:
            got = d.experiment(e["id"])
            self.assertEqual((got["name"], got["state"], got["counts"], got.get("best")),
                             (e["name"], e["state"], e["counts"], e["best"]), e["name"])
            trials = {t["id"]: t for t in d.all_trials(e["id"])}
            for t in e["trials"]:
                g = trials[t["id"]]
                self.assertEqual(
                    (g["number"], g["state"], g["config"], g.get("best"), g.get("last"),
                     g.get("error")),
                    (t["number"], t["state"], t["config"], t["best"], t["last"], t["error"]),
                    "trial %d" % t["id"])
                served = [{"step": m["step"], "metrics": m["metrics"]}
                          for m in d.metrics_of(t["id"])]
                self.assertEqual(served, t["metrics"], "trial %d's reports" % t["id"])
        workers = [{"name": w["name"], "labels": w.get("labels")}
                   for w in d.ok("GET", "/api/v1/workers")["items"]]
        self.assertEqual(workers, want["workers"])
        # The work goes on: a paused experiment resumes, a pending trial runs.
        paused = [e for e in want["experiments"] if e["state"] == "paused"]
        if paused:
            d.resume(paused[0]["id"])
        w = h.Worker(d)
        t = w.lease_one()
        w.report_ok(t, 1, {"loss": 0.01, "acc": 0.99})
        w.finish_ok(t)
        d.stop()
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], current)
        self.assertEqual(con.execute("PRAGMA foreign_key_check").fetchall(), [])
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        con.close()


if __name__ == "__main__":
    h.main()
