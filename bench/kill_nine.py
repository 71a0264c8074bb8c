"""kill -9 under load: acknowledged reports that a restart lost.

A real rungd on a fresh temporary database; KILL9_REPORTERS threads, each
holding one leased trial, post reports as fast as rungd answers them; every
KILL9_INTERVAL_S seconds rungd is killed with SIGKILL and restarted on the
same database, KILL9_ROUNDS times; the reporters go on after each restart
with the same lease (a heartbeat renews it). At the end every trial's
stored reports are read back and compared with the steps that got a 200:
a step acknowledged but not stored is a lost report. It prints the kills
survived, the reports acknowledged and the reports lost (the goal: 0), and
exits non-zero only on an error, never because a figure is missed.

Usage: /usr/bin/python3 bench/kill_nine.py [--rungd build/bin/rungd]
Knobs (environment): KILL9_ROUNDS (10), KILL9_REPORTERS (8),
KILL9_INTERVAL_S (1.0).
"""

import argparse
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import rungd_harness as h  # noqa: E402  (the integration tests' harness)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rungd", default=os.path.join(ROOT, "build", "bin", "rungd"))
    args = ap.parse_args()
    os.environ["RUNGD"] = args.rungd
    rounds = int(os.environ.get("KILL9_ROUNDS", "10"))
    n = int(os.environ.get("KILL9_REPORTERS", "8"))
    interval = float(os.environ.get("KILL9_INTERVAL_S", "1.0"))

    workdir = h.tempfile.mkdtemp(prefix="rung-kill9-")
    h._tmpdirs.add(workdir)  # removed by the harness at exit, after its logs
    d = h.Daemon(workdir)
    d.start()
    try:
        d.create_experiment(h.spec(num_samples=n))
        w = h.Worker(d)
        leased = [w.lease_one(wait_s=10) for _ in range(n)]
        acked = {t["id"]: [] for t in leased}
        errors = []
        up = threading.Event()
        up.set()
        done = threading.Event()

        def reporter(t):
            step = 0
            while not done.is_set():
                if not up.is_set():
                    up.wait(1.0)
                    continue
                try:
                    status, _ = w.report(t, step + 1, {"loss": 1.0 / (step + 1)})
                except AssertionError:
                    time.sleep(0.01)  # the daemon is gone: wait for the next one
                    continue
                if status == 200:
                    step += 1
                    acked[t["id"]].append(step)
                elif status not in (503,):
                    errors.append("trial %d step %d: %d" % (t["id"], step + 1, status))
                    return

        threads = [threading.Thread(target=reporter, args=(t,), daemon=True) for t in leased]
        for th in threads:
            th.start()
        for _ in range(rounds):
            time.sleep(interval)
            d.kill9()
            up.clear()
            d.restart()
            w.heartbeat([t["id"] for t in leased])
            up.set()
        time.sleep(interval)
        done.set()
        for th in threads:
            th.join(20)
        total = sum(len(v) for v in acked.values())
        lost = 0
        for t in leased:
            stored = {i["step"] for i in d.metrics_of(t["id"])}
            lost += sum(1 for s in acked[t["id"]] if s not in stored)
        print("kills survived: %d of %d" % (rounds, rounds))
        print("reports acknowledged: %d" % total)
        print("acknowledged reports lost: %d (goal 0)" % lost)
        for e in errors:
            print("error: " + e)
        return 1 if errors else 0
    finally:
        if d.alive():
            d.stop()


if __name__ == "__main__":
    sys.exit(main())
