"""overhead_bench: what Rung adds to short trials (bench/README.md, "Overhead
on short trials"). Driven by bench/overhead.sh.

For each trial length D (seconds): a real rungd (loopback, a temporary
database) and one real rung-worker with SLOTS CPU slots run an experiment of
N trials whose program reports once and sleeps D: sh -c 'echo "@rung ...";
exec sleep D' (one fork, two execs). The ideal wall time is
ceil(N / SLOTS) * D (every slot always busy, nothing between trials); the
figure is the measured wall time (the POST of the experiment to its
`completed`, polled every 20 ms) over the ideal.

Where the time goes, per trial, from rungd's timestamps (the lease's
started_at, the report's time, the finish's ended_at):
- lease -> report: the reply's way back, rung-worker's fork and exec of sh,
  its echo, the line read and sent, rungd's commit;
- report -> finish beyond D: sleep's overshoot, the exit seen, the finish
  sent and committed;
- idle: what is left of SLOTS * wall when the trials' lease-to-finish
  spans are taken out, per trial: a slot waiting for its next lease (with
  the first wave's start and the last wave's tail).
Ray Tune's published figure for its own test of this shape (a 1 s trial on
16 slots) is printed beside it.

Prints a table and one JSON object per length. Never a pass/fail.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402

# The program: a `sleep D` that reports first (a trial without the metric
# would end the experiment as `metric_missing`): the shell's builtin echo,
# then exec, so one fork and two execs in all.
PROGRAM = 'echo "@rung {\\"step\\": 1, \\"loss\\": 1}"; exec sleep "$1"'


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def run_length(a, d, client, work, length):
    name = "overhead-%g" % length
    workdir = os.path.join(work, name)
    os.makedirs(workdir)
    logf = open(os.path.join(work, name + ".log"), "ab")
    worker = rb.spawn([a.worker, "--server", d.url, "--name", name, "--gpus", "none",
                       "--cpu-slots", str(a.slots), "--workdir", workdir], logf, logf,
                      cwd=workdir)
    logf.close()
    # The worker is up (registered) before the clock starts.
    t_wait = time.monotonic()
    while not any(w.get("name") == name for w in client.json("GET", "/api/v1/workers")["items"]):
        if time.monotonic() - t_wait > 30:
            raise rb.BenchError("rung-worker %s did not register within 30 s" % name)
        time.sleep(0.02)
    spec = {"name": name, "metric": "loss", "mode": "min", "num_samples": a.trials,
            "search_space": {"x": {"type": "uniform", "low": 0, "high": 1}},
            "searcher": {"type": "random", "seed": 1}, "max_failures": 0,
            "resources_per_trial": {"cpu": 1, "gpu": 0},
            "trainable": {"type": "command", "argv": ["sh", "-c", PROGRAM, "sh", "%g" % length]}}
    try:
        t0 = time.monotonic()
        eid = client.json("POST", "/api/v1/experiments", spec)["id"]
        exp = rb.wait_ended(client, eid, worker, a.timeout_s, name, 0.02)
        wall = time.monotonic() - t0
    finally:
        rb.stop_process(worker, 30)
    if exp["state"] != "completed":
        raise rb.BenchError("%s ended %s (%s)" % (name, exp["state"], exp.get("error")))
    trials = rb.all_trials(client, eid)
    spans, to_report, after = [], [], []
    for t in trials:
        if t["state"] != "completed":
            raise rb.BenchError("trial %d ended %s" % (t["id"], t["state"]))
        leased, ended = parse_time(t["started_at"]), parse_time(t["ended_at"])
        items = client.json("GET", "/api/v1/trials/%d/metrics" % t["id"])["items"]
        reported = parse_time(items[0]["time"])
        spans.append(ended - leased)
        to_report.append(reported - leased)
        after.append(ended - reported - length)
    n = len(trials)
    ideal = math.ceil(n / a.slots) * length
    idle = (a.slots * wall - sum(spans)) / n
    return {"length_s": length, "trials": n, "slots": a.slots, "wall_s": wall, "ideal_s": ideal,
            "overhead": wall / ideal - 1,
            "lease_to_report_ms": 1000 * statistics.mean(to_report),
            "report_to_finish_beyond_d_ms": 1000 * statistics.mean(after),
            "idle_per_trial_ms": 1000 * idle,
            "lease_to_report_p99_ms": 1000 * rb.percentile(sorted(to_report), 99),
            "report_to_finish_beyond_d_p99_ms": 1000 * rb.percentile(sorted(after), 99)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rungd", required=True)
    p.add_argument("--worker", required=True)
    p.add_argument("--trials", type=int, default=480)
    p.add_argument("--slots", type=int, default=16)
    p.add_argument("--lengths", default="1,0.2")
    p.add_argument("--timeout-s", type=int, default=600)
    a = p.parse_args()
    lengths = [float(x) for x in a.lengths.split(",") if x]
    rb.on_signals_exit()
    work = tempfile.mkdtemp(prefix="overhead-bench.")
    rows = []
    try:
        d = rb.Rungd(a.rungd, os.path.join(work, "rung.db"), os.path.join(work, "rungd.log"))
        d.start(60)
        client = rb.Client(d.host, d.port, timeout=60)
        print("rungd %s (--durability normal: WAL, no fsync per commit); one rung-worker, %d CPU "
              "slots; "
              "%d trials per length; the program: sh -c 'echo @rung ...; exec sleep D'"
              % (d.url, a.slots, a.trials))
        print()
        print("%8s %7s %8s %8s %9s  %s" % ("length_s", "trials", "wall_s", "ideal_s", "overhead",
                                           "per trial, ms: lease->report  report->finish "
                                           "beyond D  idle (a slot waiting for a lease)"))
        for length in lengths:
            r = run_length(a, d, client, work, length)
            rows.append(r)
            print("%8g %7d %8.2f %8.2f %8.1f%%  %6.2f (p99 %.2f)  %6.2f (p99 %.2f)  %6.2f"
                  % (length, r["trials"], r["wall_s"], r["ideal_s"], 100 * r["overhead"],
                     r["lease_to_report_ms"], r["lease_to_report_p99_ms"],
                     r["report_to_finish_beyond_d_ms"], r["report_to_finish_beyond_d_p99_ms"],
                     r["idle_per_trial_ms"]), flush=True)
        print()
        print("Ray Tune's published figure for 1 s trials on 16 slots: +14.4% (its own test of "
              "this shape; see bench/README.md)")
        for r in rows:
            target = 0.02 if r["length_s"] >= 1 else 0.05
            print("target: %g s trials within +%g%% of ideal: %s (+%.1f%%)"
                  % (r["length_s"], 100 * target, "met" if r["overhead"] <= target else "missed",
                     100 * r["overhead"]))
        print()
        for r in rows:
            print(json.dumps(r, sort_keys=True))
        d.stop(30)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except rb.BenchError as e:
        print("overhead_bench: %s" % e, file=sys.stderr)
        sys.exit(1)
