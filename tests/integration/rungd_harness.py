"""Harness for Rung's integration tests.

The tests start a real `rungd --port 0` on a database file in a temporary
folder and talk to it over real HTTP on loopback, the way a worker or a client
does. This module holds what every test file shares:

- `Daemon`: one rungd process. It starts the program, reads the line
  `listening on http://HOST:PORT` from its stdout, keeps draining stdout (so a
  chatty daemon never blocks on a full pipe), sends its stderr to a log file,
  and can be stopped with SIGTERM, killed with SIGKILL and restarted on the
  same database.
- `Daemon.call` / `Daemon.request`: one HTTP request on a fresh connection,
  answered as (status, parsed JSON) or as a `Response`.
- `Worker`: the pull protocol of docs/api.md (register, lease, heartbeat, report,
  finish) as a worker speaks it; `form_gang` has several of them form a gang.
- `RungdTestCase`: a unittest.TestCase whose daemons and temporary folders are
  always cleaned up, and which fails a test whose daemon died on its own.
- `main()`: runs a test file. The path of rungd comes from `--rungd PATH`
  (what CMake passes) or the environment variable RUNGD.

With RUNG_TEST_DATABASE set (the path of a file holding a libpq connection
string: tests/postgres/cluster.sh's conninfo), a daemon whose test names no
database file of its own runs on PostgreSQL instead: a database of its own,
made on the cluster when the Daemon is made and kept across its restarts
(`--database-file`, `--data-dir` its folder). Tests that read the SQLite file
itself say so (`skip_on_postgres`).

Every wait is bounded: process start, HTTP requests, polling loops and the
whole test file (a watchdog kills every daemon and exits non-zero), so a hang
fails a test instead of blocking ctest. Only the Python standard library is
used.
"""

import atexit
import ctypes
import http.client
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

# How long rungd may take to print its address (it opens and migrates the
# database first).
START_TIMEOUT_S = 15.0
# Socket timeout of one HTTP request, on top of a long poll's wait_s.
HTTP_TIMEOUT_S = 15.0
# How long a SIGTERM may take before we call the shutdown hung and SIGKILL.
STOP_TIMEOUT_S = 10.0
# A whole test file must finish within this; below ctest's TIMEOUT (300 s) so
# that the watchdog, which also kills the daemons, fires first.
WATCHDOG_S = float(os.environ.get("RUNG_TEST_WATCHDOG_S", "240"))

LISTEN_RE = re.compile(r"listening on http://(\[[^\]]+\]|[^:/\s]+):(\d+)")

_live_lock = threading.Lock()
_live = set()  # Popen objects of daemons that may still run
_tmpdirs = set()  # temporary folders not yet removed


def rungd_path():
    """Path of the rungd binary under test; a clear failure when missing."""
    path = os.environ.get("RUNGD", "")
    if not path:
        raise AssertionError("RUNGD is not set: run through ctest, or pass --rungd PATH")
    if not os.access(path, os.X_OK):
        raise AssertionError("rungd binary not found or not executable: %s" % path)
    return path


def _die_with_parent():
    """In the child before exec: SIGKILL it when the test process dies, so a
    test runner killed by a timeout leaves no daemon behind (Linux only)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # not Linux: the atexit hook and the watchdog remain
        pass


def _kill_all_live():
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        if proc.poll() is None:
            try:
                proc.kill()
                proc.wait(timeout=5)
            except Exception:
                pass


def _clean_up():
    _kill_all_live()
    for path in list(_tmpdirs):
        shutil.rmtree(path, ignore_errors=True)
        _tmpdirs.discard(path)


atexit.register(_clean_up)


def wait_until(predicate, timeout, what, interval=0.05):
    """Calls predicate until it returns something truthy and returns that;
    raises AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s (last: %r)"
                                 % (timeout, what, last))
        time.sleep(interval)


class Response:
    """One HTTP answer: status, lower-cased headers, body bytes, and the body
    parsed as JSON when it is JSON (else None)."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self.text = body.decode("utf-8", errors="replace")
        self.json = None
        if body:
            try:
                self.json = json.loads(self.text)
            except ValueError:
                self.json = None

    def __repr__(self):
        return "<HTTP %d %s>" % (self.status, self.text[:500])


def postgres_conninfo():
    """The cluster's connection string when the tests run on PostgreSQL
    (RUNG_TEST_DATABASE), else None."""
    path = os.environ.get("RUNG_TEST_DATABASE")
    if not path:
        return None
    with open(path) as f:
        return f.readline().strip()


_pg_count = 0


def postgres_database(conninfo):
    """A new empty database on the cluster of `conninfo`; returns the
    connection string of it. psql gets the password in its environment."""
    global _pg_count
    _pg_count += 1
    kv = dict(item.split("=", 1) for item in conninfo.split())
    name = "rung_t%d_%d" % (os.getpid(), _pg_count)
    env = dict(os.environ, PGPASSWORD=kv.get("password", ""))
    subprocess.run(["psql", "-X", "-q", "-h", kv["host"], "-p", kv["port"], "-U", kv["user"],
                    "-d", "postgres", "-c", "CREATE DATABASE %s" % name],
                   env=env, check=True, stdout=subprocess.DEVNULL, timeout=30)
    kv["dbname"] = name
    return " ".join("%s=%s" % (k, v) for k, v in kv.items())


def skip_on_postgres(why):
    """Decorator: the test reads or writes the SQLite file itself."""
    return unittest.skipIf(postgres_conninfo() is not None, "on SQLite only: " + why)


class Daemon:
    """One rungd process on an ephemeral loopback port.

    `workdir` is a folder owned by the test; the database defaults to
    workdir/rung.db and the stderr log to workdir/rungd-N.log."""

    _count = 0

    def __init__(self, workdir, args=(), db=None, env=None, token=None):
        self.workdir = workdir
        self.db = db or os.path.join(workdir, "rung.db")
        # On PostgreSQL (RUNG_TEST_DATABASE): a database of its own, named in
        # a file of its folder (the password off the command line).
        self.database_file = None
        # start() returns once it leads (a rungd restarted after a kill -9
        # stands by until PostgreSQL has ended the dead one's connection);
        # False: once it listens, as a standby too.
        self.wait_leader = True
        self.leading = threading.Event()
        cluster = postgres_conninfo() if db is None else None
        if cluster:
            Daemon._count += 1
            self.database_file = os.path.join(workdir, "database-%d" % Daemon._count)
            with open(self.database_file, "w") as f:
                f.write(postgres_database(cluster) + "\n")
        self.args = list(args)
        self.extra_env = dict(env or {})
        self.token = token  # sent as Bearer on /api/v1 requests when set
        self.proc = None
        self.host = None
        self.port = None
        self.stdout_lines = []
        self.log_path = None
        self._stopping = False
        self._reader = None
        self._listen_event = threading.Event()

    # ---- process lifecycle -------------------------------------------------

    def command(self):
        if self.database_file:
            return [rungd_path(), "--port", "0", "--database-file", self.database_file,
                    "--data-dir", self.workdir] + self.args
        return [rungd_path(), "--port", "0", "--db", self.db] + self.args

    def _environment(self):
        env = dict(os.environ)
        env.pop("RUNG_TOKEN", None)  # a token from the caller's shell must not leak in
        env.update(self.extra_env)
        return env

    def spawn(self, command=None):
        """Starts the process without waiting for its address."""
        Daemon._count += 1
        self.log_path = os.path.join(self.workdir, "rungd-%d.log" % Daemon._count)
        self.stdout_lines = []
        self.host = self.port = None
        self._stopping = False
        self._listen_event = threading.Event()
        self.leading = threading.Event()
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                command or self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=log, env=self._environment(), cwd=self.workdir,
                preexec_fn=_die_with_parent)
        finally:
            log.close()
        with _live_lock:
            _live.add(self.proc)
        self._reader = threading.Thread(target=self._read_stdout, args=(self.proc,),
                                        daemon=True)
        self._reader.start()
        return self

    def _read_stdout(self, proc):
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self.stdout_lines.append(line)
            m = LISTEN_RE.search(line)
            if m and "(standby)" not in line:
                self.leading.set()
            if m and self.port is None:
                host = m.group(1).strip("[]")
                # A daemon bound to every address is reached through loopback.
                self.host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
                self.port = int(m.group(2))
                self._listen_event.set()
        proc.stdout.close()
        self._listen_event.set()  # exited: wake whoever waits for the address
        self.leading.set()

    def start(self):
        """Starts rungd and waits until it prints its address."""
        self.spawn()
        self._listen_event.wait(START_TIMEOUT_S)
        if self.port is None:
            rc = self.proc.poll()
            if rc is None:
                self.proc.kill()
                self.proc.wait(timeout=5)
                raise AssertionError("rungd printed no 'listening on' line within %.0f s\n%s"
                                     % (START_TIMEOUT_S, self.diagnostics()))
            raise AssertionError("rungd exited with %d before listening\n%s"
                                 % (rc, self.diagnostics()))
        if self.wait_leader and not self.leading.wait(START_TIMEOUT_S):
            raise AssertionError("rungd stood by for %.0f s without taking the lead\n%s"
                                 % (START_TIMEOUT_S, self.diagnostics()))
        return self

    def run_to_exit(self, command=None, timeout=10.0):
        """Runs a daemon expected to refuse to start; returns its exit status
        (None if it was still running after `timeout` and had to be killed)."""
        self.spawn(command)
        self._stopping = True  # exiting is what it is expected to do
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            rc = None
        self._reader.join(timeout=5)
        self._forget()
        return rc

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _forget(self):
        with _live_lock:
            _live.discard(self.proc)

    def signal(self, sig):
        self._stopping = True
        self.proc.send_signal(sig)

    def wait_exit(self, timeout):
        """Waits for the process to end; its exit status, None on timeout."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._reader is not None:
            self._reader.join(timeout=5)
        self._forget()
        return rc

    def kill9(self):
        """SIGKILL, as a crash or an OOM killer would; waits for the exit."""
        self._stopping = True
        if self.alive():
            self.proc.kill()
        rc = self.wait_exit(10)
        if rc is None:
            raise AssertionError("rungd survived SIGKILL for 10 s")
        return rc

    def stop(self):
        """SIGTERM, then SIGKILL if it is not gone in STOP_TIMEOUT_S. Returns
        the exit status of the SIGTERM, or None when it had to be killed."""
        if self.proc is None:
            return 0
        if not self.alive():
            rc = self.proc.returncode
            self._forget()
            return rc
        self.signal(signal.SIGTERM)
        rc = self.wait_exit(STOP_TIMEOUT_S)
        if rc is None:
            self.proc.kill()
            self.wait_exit(10)
        return rc

    def restart(self):
        """Starts a fresh rungd on the same database and arguments (after a
        stop or a kill9); the port changes."""
        if self.alive():
            raise AssertionError("restart() of a daemon that still runs")
        return self.start()

    def died_unexpectedly(self):
        """Exit status if the process ended without being told to; else None."""
        if self.proc is None or self._stopping:
            return None
        rc = self.proc.poll()
        return rc

    def stderr_text(self):
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")

    def diagnostics(self, lines=30):
        err = self.stderr_text().splitlines()[-lines:]
        out = self.stdout_lines[-10:]
        state = "running" if self.alive() else "exited %r" % (
            self.proc.returncode if self.proc else None)
        return ("rungd %s; command: %s\n--- stdout (tail) ---\n%s\n--- stderr (tail) ---\n%s"
                % (state, " ".join(self.command()), "\n".join(out), "\n".join(err)))

    # ---- HTTP --------------------------------------------------------------

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def request(self, method, path, body=None, headers=None, raw=None, timeout=None,
                token=Ellipsis):
        """One request on a fresh connection. `body` is sent as JSON; `raw`
        (bytes) is sent as is. `token` overrides the daemon's token (None
        sends no Authorization header). Returns a Response; raises
        AssertionError with the daemon's log when the connection fails."""
        if self.port is None:
            raise AssertionError("request to a daemon that is not listening")
        hdrs = {"Accept": "application/json"}
        tok = self.token if token is Ellipsis else token
        if tok is not None:
            hdrs["Authorization"] = "Bearer " + tok
        data = None
        if raw is not None:
            data = raw
            hdrs["Content-Type"] = "application/json"
        elif body is not None:
            data = json.dumps(body, allow_nan=False).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        elif method in ("POST", "PUT", "PATCH"):
            data = b""
        if headers:
            hdrs.update(headers)
        conn = http.client.HTTPConnection(self.host, self.port,
                                          timeout=timeout or HTTP_TIMEOUT_S)
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()},
                            payload)
        except (OSError, http.client.HTTPException) as e:
            raise AssertionError("%s %s failed: %r\n%s"
                                 % (method, path, e, self.diagnostics())) from None
        finally:
            conn.close()

    def call(self, method, path, body=None, **kw):
        """(status, parsed JSON or None) of one request."""
        r = self.request(method, path, body=body, **kw)
        return r.status, r.json

    def ok(self, method, path, body=None, status=200, **kw):
        """Parsed JSON of a request that must answer `status`."""
        r = self.request(method, path, body=body, **kw)
        if r.status != status:
            raise AssertionError("%s %s: expected %d, got %d: %s"
                                 % (method, path, status, r.status, r.text[:1000]))
        return r.json

    # ---- API shortcuts -----------------------------------------------------

    def create_experiment(self, spec):
        doc = self.ok("POST", "/api/v1/experiments", spec, status=201)
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), int):
            raise AssertionError("experiment without an integer id: %r" % (doc,))
        return doc

    def experiment(self, eid):
        return self.ok("GET", "/api/v1/experiments/%d" % eid)

    def trial(self, tid):
        return self.ok("GET", "/api/v1/trials/%d" % tid)

    def trials(self, eid, **query):
        qs = "&".join("%s=%s" % (k, v) for k, v in query.items())
        return self.ok("GET", "/api/v1/experiments/%d/trials%s" % (eid, "?" + qs if qs else ""))

    def all_trials(self, eid, page=100):
        """Every trial of an experiment, following the paging."""
        items, offset = [], 0
        while True:
            doc = self.trials(eid, limit=page, offset=offset)
            items.extend(doc["items"])
            offset += len(doc["items"])
            if not doc["items"] or offset >= doc["total"]:
                return items

    def metrics_of(self, tid, after_step=None):
        path = "/api/v1/trials/%d/metrics" % tid
        if after_step is not None:
            path += "?after_step=%d" % after_step
        return self.ok("GET", path)["items"]

    def wait_experiment(self, eid, pred, timeout=10.0, what="experiment condition"):
        """Polls the experiment until pred(doc) holds; returns the doc."""
        return wait_until(lambda: (lambda d: d if pred(d) else None)(self.experiment(eid)),
                          timeout, what)

    def wait_state(self, eid, state, timeout=10.0):
        return self.wait_experiment(eid, lambda d: d["state"] == state, timeout,
                                    "experiment %d to be %s" % (eid, state))

    # docs/api.md, "Experiments": pause, resume, PATCH, retry-failed,
    # DELETE and a user's stop of one trial, each as (status, parsed JSON).

    def pause(self, eid, running=None):
        q = "" if running is None else "?running=" + running
        return self.call("POST", "/api/v1/experiments/%d/pause%s" % (eid, q))

    def resume(self, eid):
        return self.call("POST", "/api/v1/experiments/%d/resume" % eid)

    def patch(self, eid, body):
        return self.call("PATCH", "/api/v1/experiments/%d" % eid, body)

    def retry_failed(self, eid):
        return self.call("POST", "/api/v1/experiments/%d/retry-failed" % eid)

    def delete(self, eid):
        return self.call("DELETE", "/api/v1/experiments/%d" % eid)

    def stop_trial(self, tid):
        return self.call("POST", "/api/v1/trials/%d/stop" % tid)

    def wait_proposed(self, eid, n, timeout=10.0):
        """Waits until the proposer has created n trials of the experiment."""
        return wait_until(lambda: self.trials(eid, limit=1)["total"] >= n or None,
                          timeout, "%d trials of experiment %d to exist" % (n, eid))


def raise_nofile():
    """A test that holds thousands of sockets raises its soft descriptor
    limit to the hard one; returns the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def connect_from(d, source, timeout=5.0):
    """A socket connected to the daemon from the loopback address `source`
    (127.0.0.2 and on are distinct clients to rungd's limits)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((d.host, d.port))
    return s


def open_many(d, sources, timeout=5.0):
    """Connects a socket from each source address, without waiting for the
    accepts one by one; returns them once every connect is through."""
    socks = []
    for addr in sources:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((addr, 0))
        try:
            s.connect((d.host, d.port))
        except BlockingIOError:
            pass
        socks.append(s)
    poller = select.poll()
    for s in socks:
        poller.register(s, select.POLLOUT)
    pending = set(s.fileno() for s in socks)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for fd, _ in poller.poll(100):
            pending.discard(fd)
            poller.unregister(fd)
    return socks


class Worker:
    """A worker speaking the pull protocol of docs/api.md over HTTP."""

    def __init__(self, daemon, name="worker", cpus=16, gpus=(), labels=None):
        self.d = daemon
        body = {"name": name, "hostname": socket.gethostname(), "cpus": cpus,
                "gpus": [{"index": i, "name": "fake", "memory_mb": 1024} for i in gpus]}
        if labels is not None:
            body["labels"] = labels
        doc = daemon.ok("POST", "/api/v1/workers", body, status=201)
        if not isinstance(doc.get("worker_id"), int):
            raise AssertionError("register answered no worker_id: %r" % (doc,))
        self.id = doc["worker_id"]
        self.registration = doc

    def lease(self, cpus=1, gpus=(), wait_s=5, trainables=None, advertise_addr=None, port=None):
        """(status, trial or None): 200 with a trial, or 204. `trainables`:
        the trainable types offered (absent: all of them); `advertise_addr`
        and `port`: where gang members reach this worker (absent: it never
        joins a gang, docs/api.md "Gangs")."""
        body = {"cpus": cpus, "gpus": list(gpus), "wait_s": wait_s}
        if trainables is not None:
            body["trainables"] = list(trainables)
        if advertise_addr is not None:
            body["advertise_addr"] = advertise_addr
        if port is not None:
            body["port"] = port
        r = self.d.request("POST", "/api/v1/workers/%d/lease" % self.id, body,
                           timeout=HTTP_TIMEOUT_S + wait_s)
        if r.status == 200:
            if not isinstance(r.json, dict) or not isinstance(r.json.get("trial"), dict):
                raise AssertionError("lease 200 without a trial: %r" % r)
            return 200, r.json["trial"]
        if r.status == 204:
            if r.body:
                raise AssertionError("lease 204 with a body: %r" % r.body[:200])
            return 204, None
        raise AssertionError("lease answered %r" % r)

    def lease_one(self, cpus=1, gpus=(), wait_s=5):
        status, trial = self.lease(cpus, gpus, wait_s)
        if status != 200:
            raise AssertionError("expected a trial within %d s, got %d" % (wait_s, status))
        return trial

    def report(self, trial, step, metrics, token=None):
        """(status, doc) of a report; `trial` is the leased trial object."""
        return self.d.call("POST", "/api/v1/trials/%d/report" % trial["id"],
                           {"lease_token": token or trial["lease_token"], "step": step,
                            "metrics": metrics})

    def report_ok(self, trial, step, metrics, token=None):
        """The action ("continue"|"stop") of a report that must answer 200."""
        status, doc = self.report(trial, step, metrics, token)
        if status != 200 or not isinstance(doc, dict) or doc.get("action") not in (
                "continue", "stop"):
            raise AssertionError("report of trial %d step %d: %d %r"
                                 % (trial["id"], step, status, doc))
        return doc["action"]

    def finish(self, trial, status="completed", error=None, token=None, log=None):
        body = {"lease_token": token or trial["lease_token"], "status": status}
        if error is not None:
            body["error"] = error
        if log is not None:
            body["log"] = log
        return self.d.call("POST", "/api/v1/trials/%d/finish" % trial["id"], body)

    def finish_ok(self, trial, status="completed", error=None, token=None, log=None):
        code, doc = self.finish(trial, status, error, token, log)
        if code != 200:
            raise AssertionError("finish of trial %d: %d %r" % (trial["id"], code, doc))
        return doc

    def heartbeat(self, trial_ids, logs=None):
        body = {"trials": list(trial_ids)}
        if logs is not None:
            body["logs"] = logs
        return self.d.call("POST", "/api/v1/workers/%d/heartbeat" % self.id, body)


def form_gang(members, wait_s=5):
    """Forms a gang of HTTP workers (docs/api.md, "Gangs"): `members` are
    (Worker, advertise_addr, port), asked in this order, so the first is
    rank 0. Each but the last is held (a 204); the last one's request forms
    the gang, and the others get their places with their next request.
    Returns the trial as each member got it, in the order of `members`."""
    for w, addr, port in members[:-1]:
        status, _ = w.lease(wait_s=0.2, advertise_addr=addr, port=port)
        if status != 204:
            raise AssertionError("worker %d was not held for the gang: %d" % (w.id, status))
    got = []
    for w, addr, port in members[::-1]:  # the last forms it
        status, trial = w.lease(wait_s=wait_s, advertise_addr=addr, port=port)
        if status != 200 or not (trial or {}).get("gang"):
            raise AssertionError("worker %d got no gang place: %d %r" % (w.id, status, trial))
        got.append(trial)
    return got[::-1]


def spec(**over):
    """A small valid experiment spec; keyword arguments replace fields."""
    s = {
        "name": "itest",
        "metric": "loss",
        "mode": "min",
        "search_space": {"x": {"type": "uniform", "low": 0.0, "high": 1.0}},
        "num_samples": 1,
        # The tests drive the workers themselves (docs/api.md, "trainable").
        "trainable": {"type": "external"},
    }
    s.update(over)
    return s


class RungdTestCase(unittest.TestCase):
    """A TestCase with a private temporary folder and daemons that are always
    stopped. A daemon that died without being told to fails the test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rung-itest-")
        _tmpdirs.add(self.tmp)
        self.addCleanup(self._remove_tmp)
        self._daemons = []
        self.addCleanup(self._stop_daemons)

    def _remove_tmp(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        _tmpdirs.discard(self.tmp)

    def _stop_daemons(self):
        problems = []
        for d in self._daemons:
            rc = d.died_unexpectedly()
            if rc is not None:
                problems.append("rungd died on its own with status %d\n%s"
                                % (rc, d.diagnostics()))
            if d.alive():
                # A clean shutdown exits 0; sanitizer reports (leaks at exit)
                # and hangs show up here.
                rc = d.stop()
                if rc != 0:
                    problems.append("rungd did not shut down cleanly on SIGTERM (status %s)\n%s"
                                    % (rc, d.diagnostics()))
        if problems:
            self.fail("\n".join(problems))

    def daemon(self, *args, db=None, env=None, token=None, start=True):
        """A rungd with the given extra arguments, started unless start=False."""
        d = Daemon(self.tmp, args=args, db=db, env=env, token=token)
        self._daemons.append(d)
        if start:
            d.start()
        return d

    def assertError(self, resp, status, code, field=None):
        """resp is a Response or a (status, doc) pair; checks the docs/api.md error
        shape, the status, the code and (when given) the field."""
        if isinstance(resp, Response):
            st, doc, text = resp.status, resp.json, resp.text
        else:
            st, doc = resp
            text = json.dumps(doc)
        self.assertEqual(st, status, "expected %d %s, got %d: %s"
                         % (status, code, st, text[:500]))
        self.assertIsInstance(doc, dict, "error body is not a JSON object: %s" % text[:500])
        err = doc.get("error")
        self.assertIsInstance(err, dict, "no error object: %s" % text[:500])
        self.assertEqual(err.get("code"), code, text[:500])
        self.assertIsInstance(err.get("message"), str, text[:500])
        self.assertTrue(err["message"], "empty error message")
        if field is not None:
            self.assertEqual(err.get("field"), field, text[:500])
        return err


def _watchdog():
    sys.stderr.write("\nrungd_harness: test file exceeded %.0f s; killing daemons\n"
                     % WATCHDOG_S)
    sys.stderr.flush()
    _clean_up()
    os._exit(3)


def main():
    """Runs the calling test file: takes `--rungd PATH` off the command line
    (or uses $RUNGD), arms the watchdog and hands over to unittest."""
    argv = [sys.argv[0]]
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--rungd" and i + 1 < len(args):
            os.environ["RUNGD"] = os.path.abspath(args[i + 1])
            i += 2
            continue
        if a.startswith("--rungd="):
            os.environ["RUNGD"] = os.path.abspath(a.split("=", 1)[1])
            i += 1
            continue
        argv.append(a)
        i += 1
    if os.environ.get("RUNGD"):
        # rungd runs in a temporary folder: a relative path must not change meaning.
        os.environ["RUNGD"] = os.path.abspath(os.environ["RUNGD"])
    rungd_path()  # fail at once, with one clear message, when the binary is missing
    dog = threading.Timer(WATCHDOG_S, _watchdog)
    dog.daemon = True
    dog.start()
    unittest.main(argv=argv, verbosity=2)
