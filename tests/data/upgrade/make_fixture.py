"""Makes an upgrade fixture: a database written by a given rungd, as a SQL
dump, and what that rungd's API said about it (docs/operations.md,
"Upgrade"). tests/integration/test_operations.py loads the dump, starts the
current rungd on it and checks that the API still says the same.

    /usr/bin/python3 tests/data/upgrade/make_fixture.py --rungd OLD_RUNGD \
        --out tests/data/upgrade/NAME

writes NAME.sql and NAME.json. Each release adds the fixture of the one
before it, made with that release's rungd; the scenario below is the same
for all: experiments of each kind of state, trials completed, failed,
pending, paused by asha, running (leased when rungd stopped), reports,
registered workers with labels.
"""

import argparse
import json
import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
import rungd_harness as h  # noqa: E402


def scenario(d):
    w = h.Worker(d, name="gpu-box-1", labels={"zone": "a"})
    # Leases go to the oldest experiment with work: each one is driven
    # to where it stays before the next is created.
    # bayes, maximizing, completed.
    sp = h.spec(name="bayes-done", num_samples=3, metric="acc", mode="max")
    sp["searcher"] = {"type": "bayes", "seed": 3}
    bayes = d.create_experiment(sp)["id"]
    for i in range(3):
        t = w.lease_one()
        w.report_ok(t, 1, {"acc": 0.6 + i / 10})
        w.finish_ok(t)
    d.wait_state(bayes, "completed")
    # asha with promotion: a trial paused at its rung.
    asha = d.create_experiment(h.spec(name="asha-promote", num_samples=2,
                                      scheduler={"type": "asha", "promote": True,
                                                 "max_t": 9, "reduction_factor": 3}))["id"]
    d.wait_proposed(asha, 2)
    t = w.lease_one()
    w.report_ok(t, 1, {"loss": 1.0})  # "stop": paused at its rung
    d.pause(asha)  # its other trial stays pending, the experiment paused
    # fifo, random: completed, failed, running at the stop, pending.
    sp = h.spec(name="fifo-random", num_samples=5)
    sp["searcher"] = {"type": "random", "seed": 11}
    fifo = d.create_experiment(sp)["id"]
    d.wait_proposed(fifo, 5)
    t = w.lease_one()
    for step in (1, 2, 3):
        w.report_ok(t, step, {"loss": 1.0 / step, "acc": 0.5 + step / 10})
    w.finish_ok(t)
    t = w.lease_one()
    w.report_ok(t, 1, {"loss": 2.0})
    w.finish_ok(t, status="failed", error="CUDA out of memory")
    t = w.lease_one()
    w.report_ok(t, 1, {"loss": 0.9})  # still running when rungd stops
    return [bayes, asha, fifo]


def snapshot(d, ids):
    out = {"experiments": []}
    for eid in ids:
        e = d.experiment(eid)
        trials = []
        for t in d.all_trials(eid):
            trials.append({"id": t["id"], "number": t["number"], "state": t["state"],
                           "config": t["config"], "best": t.get("best"),
                           "last": t.get("last"), "error": t.get("error"),
                           "metrics": [{"step": m["step"], "metrics": m["metrics"]}
                                       for m in d.metrics_of(t["id"])]})
        out["experiments"].append({"id": eid, "name": e["name"], "state": e["state"],
                                   "counts": e["counts"], "best": e.get("best"),
                                   "trials": trials})
    out["workers"] = [{"name": w["name"], "labels": w.get("labels")}
                      for w in d.ok("GET", "/api/v1/workers")["items"]]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rungd", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.environ["RUNGD"] = os.path.abspath(args.rungd)
    tmp = tempfile.mkdtemp(prefix="rung-fixture-")
    d = h.Daemon(tmp)
    d.start()
    try:
        ids = scenario(d)
        snap = snapshot(d, ids)
    finally:
        d.stop()
    con = sqlite3.connect(d.db)
    version = con.execute("PRAGMA user_version").fetchone()[0]
    with open(args.out + ".sql", "w") as f:
        f.write("-- made by tests/data/upgrade/make_fixture.py; schema version %d\n" % version)
        f.write("PRAGMA user_version = %d;\n" % version)
        for line in con.iterdump():
            f.write(line + "\n")
    con.close()
    snap["user_version"] = version
    with open(args.out + ".json", "w") as f:
        json.dump(snap, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %s.sql and %s.json (schema version %d)" % (args.out, args.out, version))


if __name__ == "__main__":
    main()
