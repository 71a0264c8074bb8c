"""Harness for the integration tests of rung-worker (test_worker*.py).

Built on rungd_harness: a real rungd on a loopback port with a temporary
database, and real `rung-worker` processes that pull trials from it and run
real trainables (Python programs) in child processes. This module adds:

- `WorkerProc`: one rung-worker process in its own process group, with its
  stdout and stderr in log files, that can be waited for, killed with
  SIGKILL (as a crash would) or stopped.
- `FixedPortDaemon`: a rungd that is restarted on the port of its first run,
  so that running workers, which know only its URL, can reconnect to it.
- `WorkerTestCase`: a RungdTestCase whose workers, and every trainable they
  started (found by a tag in their environment), are killed at teardown, and
  which fails a test whose worker died on its own with a non-zero status.
- helpers for command trainables: `command_spec`, `script` (a Python program
  written to the test's folder), `pid_alive`, `metric_values`.
- `main()`: runs a test file. The path of rung-worker comes from
  `--rung-worker PATH` (what CMake passes), $RUNG_WORKER, or else the folder
  of rungd; rungd's from `--rungd PATH` or $RUNGD as in rungd_harness.

Every wait is bounded, and rungd_harness's watchdog bounds the whole file.
Python standard library only; Linux only (process groups, /proc).
"""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import rungd_harness as h

# The repository root: trainables in examples/ are run from there.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO_ROOT, "examples")
# The interpreter running the tests runs the trainables too (Debian's python3
# under ctest): standard library only.
PYTHON = sys.executable or "/usr/bin/python3"
# How long a worker gets to exit after SIGTERM at teardown before SIGKILL.
WORKER_STOP_S = 5.0
# Environment variable that marks every process a test's workers start, so
# that teardown finds trainables that outlived their worker (kill -9).
TAG_VAR = "RUNG_ITEST_TAG"


def worker_path():
    """Path of the rung-worker binary under test; a clear failure when missing."""
    path = os.environ.get("RUNG_WORKER", "")
    if not path:
        rungd = os.environ.get("RUNGD", "")
        path = os.path.join(os.path.dirname(rungd), "rung-worker") if rungd else ""
    if not path or not os.access(path, os.X_OK):
        raise AssertionError("rung-worker binary not found or not executable: %r "
                             "(pass --rung-worker PATH or set RUNG_WORKER)" % path)
    return path


_help_text = None


def worker_help():
    """rung-worker --help, read once: which optional flags this build has."""
    global _help_text
    if _help_text is None:
        try:
            r = subprocess.run([worker_path(), "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=10)
            _help_text = r.stdout.decode("utf-8", errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            _help_text = ""
    return _help_text


def pid_alive(pid):
    """True while process pid exists and is not a zombie (a zombie has exited;
    its parent, or an init that does not reap, merely has not collected it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
        # The state follows the command name, which is in parentheses.
        return stat[stat.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return False


def tagged_pids(tag):
    """Processes whose environment holds TAG_VAR=tag (Linux /proc)."""
    needle = ("%s=%s" % (TAG_VAR, tag)).encode()
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if needle in env:
            pids.append(int(name))
    return pids


def kill_tagged(tag):
    """SIGKILLs every process carrying the tag, with its process group unless
    that is the test's own."""
    for pid in tagged_pids(tag):
        try:
            pgid = os.getpgid(pid)
            if pgid != os.getpgrp():
                os.killpg(pgid, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class WorkerProc:
    """One rung-worker process, in a new session (so its own process group)."""

    def __init__(self, test, daemon, name, cpu_slots=1, once=False, extra=(), env=None,
                 workdir=None, sized=True):
        self.name = name
        self.daemon = daemon
        self.workdir = workdir or os.path.join(test.tmp, "work-" + name)
        os.makedirs(self.workdir, exist_ok=True)
        self.out_path = os.path.join(test.tmp, "worker-%s.out" % name)
        self.err_path = os.path.join(test.tmp, "worker-%s.err" % name)
        # sized=False: no --gpus nor --cpu-slots, the worker's defaults.
        size = ["--gpus", "none", "--cpu-slots", str(cpu_slots)] if sized else []
        self.args = (["--server", daemon.url, "--name", name] + size +
                     ["--workdir", self.workdir] + list(extra))
        if once:
            self.args.append("--once")
            # --once exits after a lease request that found no work; a short
            # long poll (where the worker lets us choose it) ends tests sooner.
            if "--lease-wait-s" in worker_help():
                self.args += ["--lease-wait-s", "1"]
        self.command = [worker_path()] + self.args
        environment = dict(os.environ)
        environment.pop("RUNG_TOKEN", None)
        environment.pop("RUNG_SERVER", None)
        environment[TAG_VAR] = test.tag
        environment.update(env or {})
        out = open(self.out_path, "wb")
        err = open(self.err_path, "wb")
        try:
            # The worker runs from the repository root, as in the demo.
            self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, env=environment, cwd=REPO_ROOT,
                                         start_new_session=True,
                                         preexec_fn=h._die_with_parent)
        finally:
            out.close()
            err.close()
        self.pid = self.proc.pid
        self.expected_exit = False  # set when the test kills or stops it

    def alive(self):
        return self.proc.poll() is None

    def wait_exit(self, timeout):
        """Exit status, or None if it still runs after timeout seconds."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill9(self):
        """SIGKILL to the worker's process group, as a crash would."""
        self.expected_exit = True
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.wait_exit(10) is None:
            raise AssertionError("rung-worker %s survived SIGKILL for 10 s" % self.name)

    def stop(self):
        """SIGTERM, then SIGKILL of its process group after WORKER_STOP_S.
        Returns the exit status of the SIGTERM, or None when killed."""
        self.expected_exit = True
        if not self.alive():
            return self.proc.returncode
        try:
            self.proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        rc = self.wait_exit(WORKER_STOP_S)
        if rc is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait_exit(10)
        return rc

    def stderr_text(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")

    def stdout_text(self):
        with open(self.out_path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")

    def diagnostics(self, lines=40):
        state = "running" if self.alive() else "exited %r" % self.proc.returncode
        return ("rung-worker %s (pid %d) %s; command: %s\n--- stdout (tail) ---\n%s\n"
                "--- stderr (tail) ---\n%s"
                % (self.name, self.pid, state, " ".join(self.command),
                   "\n".join(self.stdout_text().splitlines()[-10:]),
                   "\n".join(self.stderr_text().splitlines()[-lines:])))


class FixedPortDaemon(h.Daemon):
    """A rungd that keeps the port of its first start across restarts, as an
    operator's daemon does (workers know its URL, not its process)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.fixed_port = None

    def command(self):
        cmd = super().command()
        if self.fixed_port is not None:
            cmd[cmd.index("--port") + 1] = str(self.fixed_port)
        return cmd

    def start(self):
        super().start()
        if self.fixed_port is None:
            self.fixed_port = self.port
        return self

    def restart(self, timeout=15.0):
        """Starts rungd again on the same database and port. The port can be
        busy for a moment after a kill (a socket still closing): retries
        while rungd exits before listening, for at most timeout seconds."""
        if self.alive():
            raise AssertionError("restart() of a daemon that still runs")
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.start()
            except AssertionError:
                if self.alive() or time.monotonic() >= deadline:
                    raise
                self._forget()
                time.sleep(0.25)
                continue
            if self.port != self.fixed_port:
                raise AssertionError("rungd came back on port %s, not %s"
                                     % (self.port, self.fixed_port))
            return self


def command_spec(argv, **over):
    """An experiment spec of a command trainable run from the repository
    root; keyword arguments replace fields."""
    s = h.spec(trainable={"type": "command", "argv": list(argv), "cwd": REPO_ROOT})
    s.update(over)
    return s


def example_spec(name, **over):
    """examples/NAME.json as a user would submit it, run from the repository
    root; "python3" in its argv becomes the interpreter of the tests."""
    with open(os.path.join(EXAMPLES, name)) as f:
        s = json.load(f)
    t = s["trainable"]
    t["cwd"] = REPO_ROOT
    if t["argv"][0] == "python3":
        t["argv"][0] = PYTHON
    s.update(over)
    return s


def metric_values(items, metric):
    """The finite numeric values of metric in a metrics listing."""
    out = []
    for item in items:
        v = item["metrics"].get(metric)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append(v)
    return out


class WorkerTestCase(h.RungdTestCase):
    """A RungdTestCase with rung-worker processes that are always cleaned up,
    with the trainables they started, even those orphaned by a kill -9."""

    def setUp(self):
        super().setUp()
        self.tag = uuid.uuid4().hex
        self._workers = []
        # Cleanups run last in, first out: workers and trainables go before
        # the daemons stop and the folder is removed.
        self.addCleanup(self._stop_workers)

    def _stop_workers(self):
        problems = []
        for w in self._workers:
            rc = w.proc.poll()
            if rc is not None and rc != 0 and not w.expected_exit:
                problems.append("rung-worker %s died on its own with status %d\n%s"
                                % (w.name, rc, w.diagnostics()))
            if w.alive():
                w.stop()
        kill_tagged(self.tag)
        if problems:
            self.fail("\n".join(problems))

    def daemon(self, *args, fixed_port=False, **kw):
        if not fixed_port:
            return super().daemon(*args, **kw)
        d = FixedPortDaemon(self.tmp, args=args, db=kw.get("db"), env=kw.get("env"),
                            token=kw.get("token"))
        self._daemons.append(d)
        if kw.get("start", True):
            d.start()
        return d

    def worker(self, daemon, name, cpu_slots=1, once=False, extra=(), env=None, workdir=None,
               sized=True):
        w = WorkerProc(self, daemon, name, cpu_slots, once, extra, env, workdir, sized)
        self._workers.append(w)
        return w

    def script(self, name, source):
        """Writes a Python program into the test's folder; returns its path."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(source).lstrip())
        return path

    def worker_ids(self, daemon):
        """{worker name: worker id} from GET /api/v1/workers."""
        doc = daemon.ok("GET", "/api/v1/workers")
        return {w["name"]: w["id"] for w in doc["items"]}

    def wait_workers_exit(self, workers, timeout):
        """Waits for --once workers to exit by themselves; their statuses."""
        deadline = time.monotonic() + timeout
        codes = []
        for w in workers:
            rc = w.wait_exit(max(0.0, deadline - time.monotonic()))
            if rc is None:
                raise AssertionError("rung-worker %s still runs after %.0f s\n%s"
                                     % (w.name, timeout, w.diagnostics()))
            codes.append(rc)
        return codes

    def wait_trial(self, daemon, tid, pred, timeout, what):
        """Polls a trial until pred(trial) holds; returns the trial."""
        return h.wait_until(lambda: (lambda t: t if pred(t) else None)(daemon.trial(tid)),
                            timeout, what, interval=0.1)

    def explain(self, daemon, *workers):
        """Logs of the daemon and of the workers, for a failure message."""
        return "\n".join([daemon.diagnostics()] + [w.diagnostics() for w in workers])


def main():
    """Runs the calling test file: takes `--rung-worker PATH` off the command
    line, then hands over to rungd_harness.main()."""
    args = []
    i = 1
    while i < len(sys.argv):
        a = sys.argv[i]
        if a == "--rung-worker" and i + 1 < len(sys.argv):
            os.environ["RUNG_WORKER"] = os.path.abspath(sys.argv[i + 1])
            i += 2
            continue
        if a.startswith("--rung-worker="):
            os.environ["RUNG_WORKER"] = os.path.abspath(a.split("=", 1)[1])
            i += 1
            continue
        args.append(a)
        i += 1
    sys.argv[1:] = args
    if not os.environ.get("RUNG_WORKER"):
        # Beside rungd, where the build puts every program.
        rungd = os.environ.get("RUNGD", "")
        for j, a in enumerate(args):
            if a == "--rungd" and j + 1 < len(args):
                rungd = args[j + 1]
            elif a.startswith("--rungd="):
                rungd = a.split("=", 1)[1]
        if rungd:
            os.environ["RUNG_WORKER"] = os.path.join(os.path.dirname(os.path.abspath(rungd)),
                                                     "rung-worker")
    if os.environ.get("RUNG_WORKER"):
        os.environ["RUNG_WORKER"] = os.path.abspath(os.environ["RUNG_WORKER"])
    worker_path()  # fail at once, with one clear message, when the binary is missing
    h.main()
