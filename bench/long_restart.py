#!/usr/bin/env python3
"""rungd's restart on one long-running experiment: time to listen and memory.

The issue it measures (docs/architecture.md, "What lives in memory"): a
running experiment with a long history must cost memory for its trials in
flight, not for every trial it ran, at run time and at a restart (and at
the reload a failed commit makes). Goal: a restart listens in <= 2 s and
holds < 100 MB with 400,000 finished trials.

1. A real rungd on a fresh temporary database takes one experiment (random
   search, --scheduler fifo or asha; num_samples = --trials + 1,000) over
   the API, proposes its first pending trials, and stops (SIGTERM).
2. Python's sqlite3 moves those pending trials up by --trials numbers and
   writes --trials finished trials (completed) below them, each with
   --reports reports of its current attempt ({"loss": x}, steps 1 ..), with
   the summaries rungd keeps on the row (step, last_metrics, best_value,
   best_step), in one transaction of INSERT ... SELECT.
3. rungd starts on it --starts times: seconds from exec to 'listening on'
   and to /healthz 200, VmRSS and VmHWM once ready; then one lease, report
   and finish through the API, to show that the experiment runs on.

Usage: long_restart.py --rungd PATH [--trials 400000] [--reports 5]
       [--scheduler fifo|asha] [--starts 3] [--keep]
It prints a table and one JSON line; its exit status is non-zero only on an
error, never because a goal is missed. Only 127.0.0.1 is used.
"""

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402


def spec(trials, scheduler):
    s = {
        "name": "long",
        "metric": "loss", "mode": "min",
        "search_space": {"a": {"type": "randint", "low": 0, "high": 10},
                         "lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}},
        "searcher": {"type": "random", "seed": 1},
        "num_samples": trials + 1000,
        "resources_per_trial": {"cpu": 1, "gpu": 0},
        "trainable": {"type": "command", "argv": ["true"]},
    }
    if scheduler == "asha":
        s["scheduler"] = {"type": "asha", "max_t": 9, "grace_period": 1, "reduction_factor": 3}
    return s


def fill(db, eid, trials, reports):
    """Finished trials 0 .. trials-1 below the pending ones rungd made."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    with con:
        con.execute("UPDATE trials SET number = number + ?, queue_pos = queue_pos + ? "
                    "WHERE experiment_id = ?", (trials, trials, eid))
        first = con.execute("SELECT coalesce(max(id), 0) + 1 FROM trials").fetchone()[0]
        now = int(time.time() * 1000) - 3600 * 1000
        # loss of trial n at step k: 1 / k + (n mod 997) / 1000, so every
        # trial improves and their values spread.
        con.execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) "
            "INSERT INTO trials (id, experiment_id, number, state, config, attempt, created_at, "
            "started_at, ended_at, step, last_metrics, best_value, best_step) "
            "SELECT ? + i, ?, i, 'completed', json_object('a', i % 10, 'lr', 0.001 + (i % 89) "
            "/ 1000.0), 1, ?, ?, ?, ?, json_object('loss', 1.0 / ? + (i % 997) / 1000.0), "
            "1.0 / ? + (i % 997) / 1000.0, ? FROM n",
            (trials, first, eid, now, now, now + 1, reports, reports, reports, reports))
        con.execute(
            "WITH RECURSIVE k(s) AS (SELECT 1 UNION ALL SELECT s + 1 FROM k WHERE s < ?) "
            "INSERT INTO reports (trial_id, attempt, step, time, metrics, action) "
            "SELECT t.id, 1, k.s, ?, json_object('loss', 1.0 / k.s + (t.number % 997) / 1000.0), "
            "'continue' FROM trials t, k WHERE t.experiment_id = ? AND t.state = 'completed'",
            (reports, now, eid))
    con.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rungd", required=True)
    p.add_argument("--trials", type=int, default=400000)
    p.add_argument("--reports", type=int, default=5)
    p.add_argument("--scheduler", choices=("fifo", "asha"), default="fifo")
    p.add_argument("--starts", type=int, default=3)
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    rb.on_signals_exit()
    work = tempfile.mkdtemp(prefix="long-restart.")
    db = os.path.join(work, "long.db")
    log = os.path.join(work, "rungd.log")
    try:
        d = rb.Rungd(a.rungd, db, log)
        d.start(60)
        c = rb.Client(d.host, d.port, timeout=30)
        eid = c.json("POST", "/api/v1/experiments", spec(a.trials, a.scheduler))["id"]
        deadline = time.monotonic() + 30
        while c.json("GET", "/api/v1/experiments/%d" % eid)["counts"].get("pending", 0) == 0:
            if time.monotonic() > deadline:
                raise rb.BenchError("no pending trial was proposed within 30 s")
            time.sleep(0.05)
        d.stop(30)
        t0 = time.monotonic()
        fill(db, eid, a.trials, a.reports)
        print("store: experiment %d (%s), %d finished trials x %d reports written in %.1f s, "
              "%.0f MB" % (eid, a.scheduler, a.trials, a.reports, time.monotonic() - t0,
                           os.path.getsize(db) / 1e6))
        rows = []
        for i in range(a.starts):
            d = rb.Rungd(a.rungd, db, log, ["--lease-s", "3600"])
            d.start(600)
            st = d.status() or {}
            rows.append({"listen_s": d.listen_s, "ready_s": d.ready_s,
                         "rss_mb": st.get("rss_mb"), "hwm_mb": st.get("hwm_mb")})
            print("start %d: listening after %.2f s, /healthz after %.2f s, VmRSS %.1f MB, "
                  "VmHWM %.1f MB" % (i + 1, d.listen_s, d.ready_s, st.get("rss_mb") or 0,
                                     st.get("hwm_mb") or 0))
            if i == a.starts - 1:
                c = rb.Client(d.host, d.port, timeout=30)
                x = c.json("GET", "/api/v1/experiments/%d" % eid)
                print("after the restart: state %s, counts %s, best %s" % (
                    x["state"], json.dumps(x["counts"], sort_keys=True),
                    json.dumps((x.get("best") or {}).get("value"))))
            d.stop(30)
        best = min(rows, key=lambda r: r["ready_s"])
        worst_rss = max(r["rss_mb"] or 0 for r in rows)
        print("target long_restart_listen: %.2f s (best of %d; goal <= 2 s) %s"
              % (best["listen_s"], len(rows), "ok" if best["listen_s"] <= 2 else "MISSED"))
        print("target long_restart_rss: %.1f MB (largest; goal < 100 MB) %s"
              % (worst_rss, "ok" if worst_rss < 100 else "MISSED"))
        print(json.dumps({"bench": "long_restart", "trials": a.trials, "reports": a.reports,
                          "scheduler": a.scheduler, "starts": rows}))
        return 0
    finally:
        if a.keep:
            print("kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except rb.BenchError as e:
        print("long_restart: error: %s" % e, file=sys.stderr)
        sys.exit(1)
