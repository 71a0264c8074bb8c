"""Spare GPUs, polite yielding and working hours (docs/workers.md).

A real rungd, real rung-worker processes whose NVML is tests/fake_nvml's
stand-in (RUNG_NVML_LIBRARY): each test writes the fake's state file to
make another person's process appear on the GPU and leave, and watches
what the worker does about it. The trainable is a real command program
that saves a checkpoint of each step before it reports that step, and
resumes from RUNG_RESUME_STEP's checkpoint. What is checked:

- a trial whose GPU another process starts using is given back within 2 s
  (state preempted, preemptions 1, same attempt), waits until the GPU has
  been idle for --idle-s, resumes from its checkpoint on the same worker,
  and every step is reported exactly once (GET /api/v1/trials/{id}/metrics);
  the trial's own processes on the GPU are not foreign;
- --yield never: the trial runs on; a GPU someone else uses is not offered;
- --hours outside now: nothing is leased; a trial running when --hours ends
  is given back the same way;
- GET /api/v1/workers and `rung workers` show each GPU's state (spare,
  trial N, busy, waiting) and the next allowed hour;
- a preempted trial survives a kill -9 of rungd (schema 007) and still
  waits for its worker.

Run alone: /usr/bin/python3 tests/integration/test_spare.py --rungd build/bin/rungd
"""

import datetime
import json
import os
import signal
import subprocess
import time

import rungd_harness as h
import worker_harness as wh

TRAINABLE = """
import json, os, signal, sys, time

steps, delay = int(sys.argv[1]), float(sys.argv[2])
folder = os.environ["RUNG_TRIAL_DIR"]
start = int(os.environ.get("RUNG_RESUME_STEP", "0"))
stop = False


def on_term(sig, frame):
    global stop
    stop = True  # the step in progress is not reported; its checkpoint may stay


signal.signal(signal.SIGTERM, on_term)
state = {"sum": 0}
if start:
    with open(os.path.join(folder, "ckpt-%d.json" % start)) as f:
        state = json.load(f)
with open(os.path.join(folder, "starts.txt"), "a") as f:
    f.write("%d %d\\n" % (os.getpid(), start))
for step in range(start + 1, steps + 1):
    time.sleep(delay)
    if stop:
        sys.exit(0)
    state["sum"] += step
    tmp = os.path.join(folder, "ckpt-%d.json.tmp" % step)
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, os.path.join(folder, "ckpt-%d.json" % step))
    print("@rung " + json.dumps({"step": step, "loss": 1.0 / step, "sum": state["sum"]}),
          flush=True)
"""

IDLE_S = 2        # --idle-s of the tests' workers
LATENCY_S = 2.0   # a preemption must reach rungd within this (the bound)


def fake_nvml_path():
    """build/fake_nvml/libnvidia-ml.so.1, beside build/bin/rungd."""
    path = os.environ.get("RUNG_FAKE_NVML_LIB") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(h.rungd_path()))), "fake_nvml",
        "libnvidia-ml.so.1")
    if not os.path.exists(path):
        raise AssertionError("the fake NVML is not built: %s" % path)
    return path


class FakeGpus:
    """The fake NVML's state file (tests/fake_nvml/state.h)."""

    def __init__(self, path, n=1):
        self.path = path
        self.n = n
        self.procs = {}  # pid -> (gpu, memory_mb, util)
        self.write()

    def write(self):
        lines = ["gpu %d 81559 0 Fake H100 %d" % (i, i) for i in range(self.n)]
        lines += ["proc %d %d %s %s" % (g, pid, mb, util)
                  for pid, (g, mb, util) in sorted(self.procs.items())]
        with open(self.path + ".new", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(self.path + ".new", self.path)  # readers see whole files only

    def add(self, pid, gpu=0, mb=2048, util=30):
        self.procs[pid] = (gpu, mb, util)
        self.write()

    def remove(self, pid):
        self.procs.pop(pid, None)
        self.write()


class SpareTest(wh.WorkerTestCase):

    def setUp(self):
        super().setUp()
        self.gpus = FakeGpus(os.path.join(self.tmp, "nvml-state"))
        self.train = self.script("train.py", TRAINABLE)
        self._foreign = []
        self.addCleanup(self._stop_foreign)

    def _stop_foreign(self):
        for p in self._foreign:
            if p.poll() is None:
                p.kill()
                p.wait()

    def foreign_process(self):
        """Someone else's program: a real process in a group of its own."""
        p = subprocess.Popen(["sleep", "300"], start_new_session=True,
                             preexec_fn=h._die_with_parent)
        self._foreign.append(p)
        return p

    def gpu_worker(self, d, name="desk", extra=(), tz="UTC0"):
        env = {"RUNG_NVML_LIBRARY": fake_nvml_path(),
               "RUNG_FAKE_NVML_STATE": self.gpus.path, "TZ": tz}
        return self.worker(d, name, cpu_slots=2,
                           extra=["--gpus", "auto", "--idle-s", str(IDLE_S)] + list(extra),
                           env=env)

    def submit(self, d, steps, delay, n=1):
        spec = wh.command_spec([wh.PYTHON, self.train, str(steps), str(delay)],
                               num_samples=n, resources_per_trial={"gpu": 1, "cpu": 1})
        return d.create_experiment(spec)["id"]

    def first_trial(self, d, eid, state, timeout=15):
        return h.wait_until(
            lambda: next((t for t in d.trials(eid)["items"] if t["state"] == state), None),
            timeout, "a %s trial of experiment %d" % (state, eid))

    def gpu_beat(self, d, wid, pred, timeout=10, what="GPU state"):
        """The worker's last heartbeat's GPU 0 once pred holds for it."""
        def look():
            w = next(x for x in d.ok("GET", "/api/v1/workers")["items"] if x["id"] == wid)
            beat = w.get("heartbeat") or {}
            g = next((g for g in beat.get("gpus") or [] if g["index"] == 0), None)
            return (g, beat) if g is not None and pred(g, beat) else None
        return h.wait_until(look, timeout, what)

    def trial_pid(self, w, tid, starts=1):
        """The pid of the trial's program (its starts.txt line)."""
        path = os.path.join(w.workdir, "trials", str(tid), "starts.txt")
        def read():
            if not os.path.exists(path):
                return None
            with open(path) as f:
                lines = f.read().split("\n")[:-1]
            return lines if len(lines) >= starts else None
        lines = h.wait_until(read, 10, "trial %d's start %d" % (tid, starts))
        return int(lines[starts - 1].split()[0])

    def test_preempted_within_2s_resumes_every_step_once(self):
        d = self.daemon("--lease-s", "3")  # a heartbeat every 0.5 s
        w = self.gpu_worker(d)
        wid = h.wait_until(lambda: self.worker_ids(d).get("desk"), 10, "the worker")
        self.gpu_beat(d, wid, lambda g, b: g["state"] == "spare", what="GPU 0 spare")
        eid = self.submit(d, steps=60, delay=0.1)
        t = self.first_trial(d, eid, "running")
        tid = t["id"]
        # Its own program on the GPU, big and busy, is not someone else's.
        own = self.trial_pid(w, tid)
        self.gpus.add(own, mb=30000, util=95)
        g, _ = self.gpu_beat(d, wid, lambda g, b: g["state"] == "trial",
                             what="GPU 0 held by the trial")
        self.assertEqual(g["trial_id"], tid)
        self.assertEqual(g["foreign_mb"], 0)
        time.sleep(1.0)  # two samples and more: no preemption
        t = d.trial(tid)
        self.assertEqual(t["state"], "running", self.explain(d, w))
        step_before = h.wait_until(lambda: (lambda s: s if s and s >= 5 else None)(
            d.trial(tid)["step"]), 10, "five steps")

        # Someone starts a job on the GPU.
        other = self.foreign_process()
        t0 = time.monotonic()
        self.gpus.add(other.pid, mb=2048, util=40)
        t = h.wait_until(lambda: (lambda x: x if x["state"] == "preempted" else None)(
            d.trial(tid)), LATENCY_S + 3, "the trial preempted", interval=0.02)
        latency = time.monotonic() - t0
        self.gpus.remove(own)  # its program has ended: NVML no longer lists it
        print("# preempted %.3f s after the foreign process appeared" % latency)
        self.assertLess(latency, LATENCY_S, self.explain(d, w))
        self.assertEqual(t["attempt"], 1)
        self.assertEqual(t["preemptions"], 1)
        self.assertIsNone(t["error"])
        last_step = t["step"]
        self.assertGreaterEqual(last_step, step_before)
        self.assertEqual(d.experiment(eid)["counts"]["preempted"], 1)
        self.assertEqual(d.trials(eid, state="preempted")["total"], 1)
        g, _ = self.gpu_beat(d, wid, lambda g, b: g["state"] == "busy", what="GPU 0 busy")
        self.assertEqual(g["foreign_mb"], 2048)
        self.assertAlmostEqual(g["foreign_util"], 0.4, places=3)
        self.assertNotIn("trial_id", g)
        p = self.rung_workers(d)
        self.assertIn(", busy: others hold 2048 MiB, use 40%", p, p)
        # While the GPU is busy the trial waits for it (its checkpoint is here).
        time.sleep(1.5)
        self.assertEqual(d.trial(tid)["state"], "preempted")

        # The job ends; the GPU must be idle for --idle-s before the trial resumes.
        other.kill()
        other.wait()
        t1 = time.monotonic()
        self.gpus.remove(other.pid)
        g, _ = self.gpu_beat(d, wid, lambda g, b: g["state"] in ("waiting", "spare", "trial"),
                             what="GPU 0 free again")
        t = h.wait_until(lambda: (lambda x: x if x["state"] in ("running", "completed") else None)(
            d.trial(tid)), IDLE_S + 10, "the trial running again", interval=0.05)
        waited = time.monotonic() - t1
        print("# resumed %.3f s after the foreign process left (--idle-s %d)" % (waited, IDLE_S))
        self.assertGreaterEqual(waited, IDLE_S - 0.6)  # the worker's clock, sampled per 0.5 s
        self.assertEqual(t["attempt"], 1)
        self.assertEqual(t["worker_id"], wid)
        t = self.wait_trial(d, tid, lambda x: x["state"] == "completed", 30, "completed")
        self.assertEqual(t["preemptions"], 1)
        self.assertEqual(t["attempt"], 1)
        metrics = d.metrics_of(tid)
        steps = [m["step"] for m in metrics]
        self.assertEqual(steps, list(range(1, 61)), "every step exactly once")
        # The sums prove the resumed run continued from the checkpoint.
        self.assertEqual([m["metrics"]["sum"] for m in metrics],
                         [s * (s + 1) // 2 for s in range(1, 61)])
        with open(os.path.join(w.workdir, "trials", str(tid), "starts.txt")) as f:
            starts = f.read().split()
        self.assertEqual([int(x) for x in starts[1::2]], [0, last_step],
                         "started fresh, then from RUNG_RESUME_STEP = its last reported step")
        self.assertIn("giving it back", w.stderr_text())

    def rung_workers(self, d):
        cli = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
        p = subprocess.run([cli, "--server", d.url, "workers"],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_preempted_survives_a_kill9_of_rungd(self):
        # The protocol alone, over HTTP: a preempted trial is stored as such
        # (schema 007) and, after a kill -9 and restart, still waits for its
        # worker and resumes after its last step.
        d = self.daemon()
        eid = d.create_experiment(h.spec(num_samples=2, max_failures=0))["id"]
        a, b = h.Worker(d, name="a"), h.Worker(d, name="b")
        t = a.lease_one()
        for step in (1, 2, 3):
            a.report_ok(t, step, {"loss": 1.0 / step})
        doc = a.finish_ok(t, status="preempted")
        self.assertEqual((doc["state"], doc["preemptions"], doc["attempt"]), ("preempted", 1, 1))
        code, _ = a.finish(t, status="preempted")  # its lease is spent
        self.assertEqual(code, 409)
        d.kill9()
        d.restart()
        t2 = d.trial(t["id"])
        self.assertEqual((t2["state"], t2["preemptions"], t2["attempt"], t2["step"]),
                         ("preempted", 1, 1, 3))
        a.heartbeat([])  # a is alive: b gets the other trial, not this one
        other = b.lease_one()
        self.assertNotEqual(other["id"], t["id"])
        again = a.lease_one()
        self.assertEqual((again["id"], again["resume_step"], again["attempt"]), (t["id"], 3, 1))
        a.report_ok(again, 3, {"loss": 0.1})  # a repeat: dropped
        a.report_ok(again, 4, {"loss": 0.25})
        a.finish_ok(again)
        self.assertEqual([m["step"] for m in d.metrics_of(t["id"])], [1, 2, 3, 4])
        self.assertEqual(d.experiment(eid)["counts"]["preempted"], 0)

    def test_yield_never_runs_on_and_offers_only_spare_gpus(self):
        d = self.daemon("--lease-s", "3")
        w = self.gpu_worker(d, extra=["--yield", "never"])
        wid = h.wait_until(lambda: self.worker_ids(d).get("desk"), 10, "the worker")
        eid = self.submit(d, steps=25, delay=0.1, n=2)
        first = self.first_trial(d, eid, "running")
        other = self.foreign_process()
        self.gpus.add(other.pid, mb=4096, util=50)
        g, _ = self.gpu_beat(d, wid, lambda g, b: g["state"] == "trial" and g["foreign_mb"] > 0,
                             what="GPU 0 held, with a foreign process")
        self.assertEqual(g["trial_id"], first["id"])
        self.assertIn(", trial %d (others hold 4096 MiB, use 50%%)" % first["id"],
                      self.rung_workers(d))
        t = self.wait_trial(d, first["id"], lambda x: x["state"] == "completed", 30,
                            "the first trial completed")
        self.assertEqual(t["preemptions"], 0)
        # The GPU is someone else's now: the second trial waits.
        self.gpu_beat(d, wid, lambda g, b: g["state"] == "busy", what="GPU 0 busy")
        time.sleep(1.5)
        pending = [x for x in d.trials(eid)["items"] if x["state"] == "pending"]
        self.assertEqual(len(pending), 1, self.explain(d, w))
        self.gpus.remove(other.pid)
        self.gpu_beat(d, wid, lambda g, b: g["state"] in ("waiting", "trial", "spare"),
                      what="GPU 0 no longer busy")
        d.wait_experiment(eid, lambda e: e["state"] == "completed", timeout=40)

    def test_outside_hours_nothing_is_leased(self):
        d = self.daemon("--lease-s", "3")
        today = datetime.datetime.now(datetime.timezone.utc).weekday()
        day = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][(today + 2) % 7]
        hours = "%s 01:00-02:00" % day
        w = self.gpu_worker(d, extra=["--hours", hours])
        wid = h.wait_until(lambda: self.worker_ids(d).get("desk"), 10, "the worker")
        eid = self.submit(d, steps=5, delay=0.1)
        _, beat = self.gpu_beat(d, wid, lambda g, b: b.get("next_lease_at") is not None,
                                what="next_lease_at")
        self.assertEqual(beat["hours"], hours)
        nxt = datetime.datetime.strptime(beat["next_lease_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
        self.assertEqual(nxt.weekday(), (today + 2) % 7)
        self.assertEqual((nxt.hour, nxt.minute, nxt.second), (1, 0, 0))
        self.assertIn("next lease", self.rung_workers(d))
        time.sleep(2.0)
        self.assertEqual(d.experiment(eid)["counts"]["pending"], 1, self.explain(d, w))
        self.assertIn("outside --hours", w.stderr_text())

    def test_hours_ending_give_the_running_trial_back(self):
        d = self.daemon("--lease-s", "3")
        now = datetime.datetime.now(datetime.timezone.utc)
        if now.second > 45:  # leave the trial time to start within this minute
            time.sleep(61 - now.second)
            now = datetime.datetime.now(datetime.timezone.utc)
        end = now.replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)
        day = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][now.weekday()]
        hours = "%s %02d:%02d-%s" % (day, now.hour, now.minute,
                                     "24:00" if end.day != now.day else end.strftime("%H:%M"))
        w = self.gpu_worker(d, extra=["--hours", hours])
        wid = h.wait_until(lambda: self.worker_ids(d).get("desk"), 10, "the worker")
        eid = self.submit(d, steps=1000, delay=0.1)
        t = self.first_trial(d, eid, "running")
        left = (end - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        t = self.wait_trial(d, t["id"], lambda x: x["state"] == "preempted", left + 5,
                            "the trial given back when --hours ended")
        late = (datetime.datetime.now(datetime.timezone.utc) - end).total_seconds()
        print("# given back %.3f s after --hours ended" % late)
        self.assertLess(late, LATENCY_S + 0.5)
        self.assertEqual(t["preemptions"], 1)
        self.assertEqual(t["attempt"], 1)
        _, beat = self.gpu_beat(d, wid, lambda g, b: b.get("next_lease_at") is not None,
                                what="next_lease_at")
        self.assertIn("outside --hours", w.stderr_text())
        time.sleep(1.0)
        self.assertEqual(d.trial(t["id"])["state"], "preempted", self.explain(d, w))


if __name__ == "__main__":
    wh.main()
