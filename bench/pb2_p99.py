#!/usr/bin/env python3
"""A report's latency while PB2 explores (issue 35; docs/schedulers.md, "pb2").

PB2 chooses an exploiting member's new config with a GP fitted on up to
256 score changes (PB2_MAX_OBS, sampler/pb2.h). Where that fit runs on the
engine thread, inside a batch, every request of the batch waits for it.
This measures what a worker sees: the latency of report POSTs.

1. A real rungd on a fresh temporary database takes one `pb2` experiment
   (asynchronous: --population members, `perturbation_interval`
   --interval, `max_t` --max-t, quantile_fraction 0.25, two bounded
   parameters) over the API.
2. One simulated worker (registered with --population CPU slots) drives
   it over HTTP, a thread per slot, each on its own keep-alive connection:
   lease (`wait_s` 1), then a report at every step until the answer is
   `stop`, then finish; a heartbeat thread lists the trials held every
   `heartbeat_s`. The "program" is a score that adds, at each step, a gain
   that peaks at a drifting x and a fixed y; its checkpoints are kept in
   memory, so a member that exploits (its lease's `checkpoint_from`) goes
   on from the donor's score at the milestone. All members run on this one
   worker, so the donor's worker is always the receiver's and no
   checkpoint is uploaded.
3. Each report POST is timed (send to reply). The driver counts exploits
   (a `stop` answer at a milestone before `max_t`, each one a PB2 explore)
   and the observations PB2 has (a member's two consecutive milestones
   with no exploit at the first: server/pbt.c pbt_changes), and prints
   p50/p99/max of the report latency over: every report; the reports sent
   once PB2 had its 256 observations (every explore then fits on 256);
   the reports in flight while an exploiting report was (the batch that
   fits waits, and so do the requests behind it); and the exploiting
   reports themselves.

With --scheduler pbt, the same run under `pbt` (hyperparam_mutations over
the same domains): the same exploits, explored by a random perturbation
without a fit; the control that shows what the fit costs.

Usage: pb2_p99.py --rungd PATH [--population 32] [--interval 4]
       [--max-t 100] [--seed 1] [--scheduler pb2|pbt] [--keep]
It prints a table and one JSON line; its exit status is non-zero only on an
error. Only 127.0.0.1 is used. The machine's other load shows in the
figures: run it on a quiet host.
"""

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402

PB2_MAX_OBS = 256


def spec(population, interval, max_t, seed, scheduler):
    sched = {"type": scheduler, "perturbation_interval": interval, "max_t": max_t,
             "quantile_fraction": 0.25, "synch": False}
    if scheduler == "pb2":
        sched["hyperparam_bounds"] = {"x": [0.0, 1.0], "y": [0.0, 1.0]}
    else:  # the control: the same exploits, explored without a fit
        sched["hyperparam_mutations"] = {"x": {"type": "uniform", "low": 0.0, "high": 1.0},
                                         "y": {"type": "uniform", "low": 0.0, "high": 1.0}}
    return {
        "name": "pb2-p99",
        "metric": "score", "mode": "max",
        "search_space": {"x": {"type": "uniform", "low": 0.0, "high": 1.0},
                         "y": {"type": "uniform", "low": 0.0, "high": 1.0}},
        "searcher": {"type": "random", "seed": seed},
        "num_samples": population,
        "max_concurrent_trials": population,
        "max_failures": 0,
        "resources_per_trial": {"cpu": 1, "gpu": 0},
        "trainable": {"type": "command", "argv": ["true"]},
        "scheduler": sched,
    }


def gain(config, step, max_t):
    """The score a step adds: best at x = the drifting optimum, y = 0.3,
    with a small deterministic wobble so that ties are rare."""
    opt = 0.2 + 0.6 * step / max_t
    x, y = float(config["x"]), float(config["y"])
    return 1.0 - 4.0 * ((x - opt) ** 2 + (y - 0.3) ** 2) + 0.01 * math.sin(7.0 * x + step)


class Sim:
    """What the simulated worker shares among its threads."""

    def __init__(self, a):
        self.a = a
        self.lock = threading.Lock()
        self.ckpt = {}  # (trial id, step) -> score after that step
        self.held = set()  # trial ids running now
        self.recorded = {}  # trial id -> milestones (k) it reported
        self.exploited = {}  # trial id -> milestones where it exploited
        self.obs = 0
        self.reports = []  # (t0, t1, step, action, obs before)
        self.exploits = []  # (t0, t1) of the exploiting reports
        self.leases = self.from_donor = self.uploads_asked = 0
        self.done = threading.Event()
        self.error = None

    def milestone(self, tid, step, stop):
        """Bookkeeping of a report at a milestone (server/pbt.c): the
        observation it makes, and whether it was an exploit."""
        k = step // self.a.interval
        rec = self.recorded.setdefault(tid, set())
        exp = self.exploited.setdefault(tid, set())
        if (k - 1) in rec and (k - 1) not in exp:
            self.obs += 1
        rec.add(k)
        if stop and step < self.a.max_t:
            exp.add(k)
            return True
        return False


def run_slot(sim, d, wid):
    a = sim.a
    c = rb.Client(d.host, d.port, timeout=120)
    try:
        while not sim.done.is_set():
            st, body = c.request("POST", "/api/v1/workers/%d/lease" % wid,
                                 {"cpus": 1, "wait_s": 1})
            if st == 204:
                continue
            if st != 200:
                raise rb.BenchError("lease -> HTTP %d: %s" % (st, body[:300]))
            t = json.loads(body)["trial"]
            tid, token = t["id"], t["lease_token"]
            start = int(t.get("resume_step") or 0)
            src = t.get("checkpoint_from")
            with sim.lock:
                sim.leases += 1
                sim.held.add(tid)
                if src:
                    sim.from_donor += 1
                    score = sim.ckpt[(src["trial"], src["step"])]
                    start = src["step"]
                else:
                    score = sim.ckpt.get((tid, start), 0.0) if start else 0.0
            for step in range(start + 1, a.max_t + 1):
                score += 0.01 * gain(t["config"], step, a.max_t)
                with sim.lock:
                    sim.ckpt[(tid, step)] = score
                    obs = sim.obs
                t0 = time.monotonic()
                st, body = c.request("POST", "/api/v1/trials/%d/report" % tid,
                                     {"lease_token": token, "step": step,
                                      "metrics": {"score": score}})
                t1 = time.monotonic()
                if st == 409:
                    break
                if st != 200:
                    raise rb.BenchError("report -> HTTP %d: %s" % (st, body[:300]))
                action = json.loads(body)["action"]
                with sim.lock:
                    sim.reports.append((t0, t1, step, action, obs))
                    if step % a.interval == 0 and sim.milestone(tid, step, action == "stop"):
                        sim.exploits.append((t0, t1))
                if action == "stop":
                    break
            st, body = c.request("POST", "/api/v1/trials/%d/finish" % tid,
                                 {"lease_token": token, "status": "completed"})
            if st not in (200, 409):
                raise rb.BenchError("finish -> HTTP %d: %s" % (st, body[:300]))
            with sim.lock:
                sim.held.discard(tid)
    except Exception as e:  # noqa: BLE001 (told to the main thread)
        sim.error = sim.error or e
        sim.done.set()
    finally:
        c.close()


def run_heartbeats(sim, d, wid, every_s):
    c = rb.Client(d.host, d.port, timeout=120)
    try:
        while not sim.done.wait(every_s):
            with sim.lock:
                held = sorted(sim.held)
            r = c.json("POST", "/api/v1/workers/%d/heartbeat" % wid, {"trials": held})
            if r.get("upload"):
                with sim.lock:
                    sim.uploads_asked += len(r["upload"])
    except Exception as e:  # noqa: BLE001
        sim.error = sim.error or e
        sim.done.set()
    finally:
        c.close()


def fmtv(v):
    return "%9.2f" % v if v is not None else "%9s" % "n/a"


def stats(lat_ms):
    s = sorted(lat_ms)
    if not s:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    return {"n": len(s), "p50_ms": round(rb.percentile(s, 50), 2),
            "p99_ms": round(rb.percentile(s, 99), 2), "max_ms": round(s[-1], 2)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rungd", required=True)
    p.add_argument("--population", type=int, default=32)
    p.add_argument("--interval", type=int, default=4)
    p.add_argument("--max-t", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scheduler", choices=("pb2", "pbt"), default="pb2")
    p.add_argument("--timeout-s", type=int, default=900)
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    rb.on_signals_exit()
    work = tempfile.mkdtemp(prefix="pb2-p99.")
    d = rb.Rungd(a.rungd, os.path.join(work, "pb2.db"), os.path.join(work, "rungd.log"))
    sim = Sim(a)
    threads = []
    try:
        d.start(60)
        c = rb.Client(d.host, d.port, timeout=60)
        eid = c.json("POST", "/api/v1/experiments",
                     spec(a.population, a.interval, a.max_t, a.seed, a.scheduler))["id"]
        reg = c.json("POST", "/api/v1/workers", {"name": "pb2-p99", "cpus": a.population})
        wid = reg["worker_id"]
        t_start = time.monotonic()
        threads.append(threading.Thread(target=run_heartbeats,
                                        args=(sim, d, wid, float(reg["heartbeat_s"])),
                                        daemon=True))
        threads += [threading.Thread(target=run_slot, args=(sim, d, wid), daemon=True)
                    for _ in range(a.population)]
        for th in threads:
            th.start()
        while not sim.done.is_set():
            exp = c.json("GET", "/api/v1/experiments/%d" % eid)
            if exp["state"] != "running":
                break
            if time.monotonic() - t_start > a.timeout_s:
                raise rb.BenchError("the experiment did not end within %d s" % a.timeout_s)
            time.sleep(0.5)
        sim.done.set()
        for th in threads:
            th.join(30)
        if sim.error is not None:
            raise rb.BenchError("a simulated worker thread failed: %s" % sim.error)
        wall = time.monotonic() - t_start
        exp = c.json("GET", "/api/v1/experiments/%d" % eid)
        trials = rb.all_trials(c, eid)
        lineage = sum(len(t.get("lineage") or []) for t in trials)

        rows = sim.reports
        win = sorted(sim.exploits)
        exploiting = set(win)

        def overlaps(t0, t1):
            # win is short (hundreds): a scan is fast enough
            return any(e0 < t1 and t0 < e1 for e0, e1 in win)

        groups = [
            ("every report", rows),
            ("once %d observations were made" % PB2_MAX_OBS,
             [r for r in rows if r[4] >= PB2_MAX_OBS]),
            ("in flight with an exploiting report", [r for r in rows if overlaps(r[0], r[1])]),
            ("the exploiting reports", [r for r in rows if (r[0], r[1]) in exploiting]),
        ]
        out = {}
        print("%s: population %d, interval %d, max_t %d: experiment %s in %.1f s; "
              "%d reports, %d leases (%d from a donor's checkpoint), %d exploits "
              "(explores; lineage entries %d), %d observations in the end, "
              "%d uploads asked" % (a.scheduler, a.population, a.interval, a.max_t,
                                    exp["state"], wall, len(rows), sim.leases, sim.from_donor,
                                    len(win), lineage, sim.obs, sim.uploads_asked))
        print("%-40s %6s %9s %9s %9s" % ("report latency", "n", "p50 ms", "p99 ms", "max ms"))
        for name, rs in groups:
            s = stats([(r[1] - r[0]) * 1000.0 for r in rs])
            out[name] = s
            print("%-40s %6d %s %s %s" % (name, s["n"], fmtv(s["p50_ms"]), fmtv(s["p99_ms"]),
                                          fmtv(s["max_ms"])))
        print(json.dumps({"bench": "pb2_p99", "scheduler": a.scheduler,
                          "population": a.population,
                          "interval": a.interval, "max_t": a.max_t, "seed": a.seed,
                          "state": exp["state"], "wall_s": round(wall, 1),
                          "reports": len(rows), "exploits": len(win),
                          "lineage": lineage, "observations": sim.obs,
                          "uploads_asked": sim.uploads_asked, "latency": out}))
        return 0
    finally:
        sim.done.set()
        d.stop(30)
        if a.keep:
            print("kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except rb.BenchError as e:
        print("pb2_p99: error: %s" % e, file=sys.stderr)
        sys.exit(1)
