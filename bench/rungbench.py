"""Shared by bench/gen_store.py and bench/probe.py (standard library only).

- `Rungd`: one rungd process on a loopback port picked by the kernel
  (`--port 0`). It times the start from exec to the first `/healthz` that
  answers 200, keeps draining stdout, sends stderr to a log file, and stops
  with SIGTERM (SIGKILL after a bound). The child is in its own session (a
  Ctrl-C reaches only the driver, whose cleanup stops it) and gets SIGKILL
  if the driver dies (PR_SET_PDEATHSIG).
- `Client`: HTTP/1.1 keep-alive requests to one daemon.
- `proc_status(pid)`: VmRSS and VmHWM in MB from /proc/PID/status.
- `on_signals_exit()`: SIGTERM and SIGINT raise SystemExit, so that every
  `finally` runs and the children are stopped.

Every wait is bounded; a failure raises `BenchError` with a clear message.
"""

import ctypes
import http.client
import json
import os
import re
import select
import signal
import subprocess
import threading
import time

LISTEN_RE = re.compile(rb"listening on http://(\[[^\]]+\]|[^:/\s]+):(\d+)")


class BenchError(Exception):
    """A failure the driver reports in one line and exits non-zero for."""


def on_signals_exit():
    def handler(signo, _frame):
        raise SystemExit(128 + signo)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def spawn(argv, stdout, stderr, cwd=None, env=None):
    """Popen in a new session that dies with us."""
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            cwd=cwd, env=env, start_new_session=True,
                            preexec_fn=_die_with_parent)


def stop_process(proc, timeout_s, sig=signal.SIGTERM):
    """Sends sig, waits up to timeout_s, then SIGKILL. Returns (exit status,
    seconds it took, killed?)."""
    if proc.poll() is not None:
        return proc.returncode, 0.0, False
    t0 = time.monotonic()
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=timeout_s)
        return proc.returncode, time.monotonic() - t0, False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        return proc.returncode, time.monotonic() - t0, True


def proc_status(pid):
    """{'rss_mb': VmRSS, 'hwm_mb': VmHWM} of a live process, or None."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    out["rss_mb"] = int(line.split()[1]) / 1024.0
                elif line.startswith("VmHWM:"):
                    out["hwm_mb"] = int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return out if "rss_mb" in out else None


def proc_cpu_s(pid, children=False):
    """User + system CPU seconds of a process (all its threads), or with
    children=True of its children that ended and were waited for; None when
    it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        i = 13 if children else 11
        return (int(fields[i]) + int(fields[i + 1])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _get_status(host, port, path, timeout):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


class Rungd:
    """One rungd on 127.0.0.1, port 0. `start()` returns the seconds from
    exec to the first /healthz 200 and sets `listen_s` (exec to the
    'listening on' line)."""

    def __init__(self, binary, db, log_path, extra_args=()):
        self.binary = binary
        self.db = db
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.proc = None
        self.host = self.port = None
        self.listen_s = self.ready_s = None
        self._log = None

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def start(self, timeout_s):
        if not os.access(self.binary, os.X_OK):
            raise BenchError("rungd not found or not executable: %s" % self.binary)
        self._log = open(self.log_path, "ab")
        argv = [self.binary, "--bind", "127.0.0.1", "--port", "0", "--db", self.db]
        argv += self.extra_args
        t0 = time.monotonic()
        self.proc = spawn(argv, subprocess.PIPE, self._log)
        deadline = t0 + timeout_s
        buf = b""
        fd = self.proc.stdout.fileno()
        while True:
            m = LISTEN_RE.search(buf)
            if m:
                self.host = m.group(1).decode().strip("[]")
                self.port = int(m.group(2))
                self.listen_s = time.monotonic() - t0
                break
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop(5)
                raise BenchError("rungd printed no 'listening on' line within %.0f s (db %s; "
                                 "log %s)" % (timeout_s, self.db, self.log_path))
            r, _, _ = select.select([fd], [], [], min(left, 0.005))
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    rc = self.proc.wait(timeout=10)
                    raise BenchError("rungd exited (status %s) before listening: %s"
                                     % (rc, self.log_tail()))
                buf += chunk
        threading.Thread(target=self._drain, args=(fd,), daemon=True).start()
        while True:
            try:
                if _get_status(self.host, self.port, "/healthz", 5) == 200:
                    self.ready_s = time.monotonic() - t0
                    return self.ready_s
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise BenchError("rungd exited (status %s) before /healthz answered: %s"
                                 % (self.proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                self.stop(5)
                raise BenchError("/healthz did not answer 200 within %.0f s" % timeout_s)
            time.sleep(0.002)

    def _drain(self, fd):
        try:
            while os.read(fd, 65536):
                pass
        except OSError:
            pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def status(self):
        return proc_status(self.proc.pid) if self.alive() else None

    def stop(self, timeout_s=30):
        """SIGTERM; returns (exit status, seconds, killed?)."""
        if self.proc is None:
            return None, 0.0, False
        res = stop_process(self.proc, timeout_s)
        if self._log:
            self._log.close()
            self._log = None
        return res

    def log_tail(self, n=600):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - n))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""


class Client:
    """Keep-alive HTTP/1.1 to one daemon; reconnects once on a dropped
    connection."""

    def __init__(self, host, port, timeout=60.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = None

    def _connect(self):
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def request(self, method, path, body=None):
        """Returns (status, body bytes)."""
        data = None
        headers = {}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for tries in (0, 1):
            if self.conn is None:
                self._connect()
            try:
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                payload = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, payload
            except (http.client.HTTPException, ConnectionError, BrokenPipeError):
                self.close()
                if tries:
                    raise
        raise AssertionError("unreachable")

    def json(self, method, path, body=None, want=(200, 201)):
        status, payload = self.request(method, path, body)
        if status not in want:
            raise BenchError("%s %s -> HTTP %d: %s" % (method, path, status,
                                                       payload[:300].decode("utf-8", "replace")))
        return json.loads(payload)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def percentile(sorted_values, q):
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(-(-q * len(sorted_values) // 100)) - 1))
    return sorted_values[k]


def all_trials(client, eid, page=1000):
    """Every trial of experiment eid, page by page."""
    items, offset = [], 0
    while True:
        doc = client.json("GET", "/api/v1/experiments/%d/trials?limit=%d&offset=%d"
                          % (eid, page, offset))
        items.extend(doc["items"])
        offset += len(doc["items"])
        if not doc["items"] or offset >= doc.get("total", offset):
            return items


def wait_ended(client, eid, worker, timeout_s, what, poll_s):
    """Polls experiment eid until it has ended and returns it. Raises
    BenchError when `worker` (its rung-worker's Popen) exits first, or when
    it runs longer than timeout_s (it is canceled then)."""
    t0 = time.monotonic()
    while True:
        exp = client.json("GET", "/api/v1/experiments/%d" % eid)
        if exp["state"] in ("completed", "failed", "canceled"):
            return exp
        if worker.poll() is not None:
            raise BenchError("rung-worker for %s exited (status %s)" % (what, worker.returncode))
        if time.monotonic() - t0 > timeout_s:
            client.json("POST", "/api/v1/experiments/%d/cancel" % eid)
            raise BenchError("%s did not end within %d s" % (what, timeout_s))
        time.sleep(poll_s)
