"""overhead_bench: what Rung adds to short trials (bench/README.md, "Overhead
on short trials"). Driven by bench/overhead.sh.

For each trial length D (seconds): a real rungd (loopback, a temporary
database) and one real rung-worker with SLOTS CPU slots run an experiment of
N trials whose program is a POSIX shell one-liner: it notes the time it
started, sleeps D, notes the time again and prints one `@rung` line with
both. The ideal wall time is ceil(N / SLOTS) * D (every slot always busy,
nothing between trials); the figure is the measured wall time (the POST of
the experiment to its `completed`, polled every 20 ms) over the ideal.

Where the time goes, per trial, from the trials' timestamps (rungd's
started_at and ended_at, the program's own clock, one machine):
- lease -> start: from rungd granting the lease to the program running
  (the reply's way back, rung-worker's fork and exec of sh);
- start -> end: the program (D plus the shell's own start and sleep's
  overshoot);
- end -> finish: from the program's last line to rungd's finish (its exit
  seen, the report and the finish sent, rungd's commit);
- idle: what is left of SLOTS * wall when the trials' lease-to-finish
  spans are taken out, per trial: a slot waiting for its next lease.
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

# The program: its start, D seconds of sleep, its end, as epoch seconds.
PROGRAM = ('t0=$(date +%s.%N); sleep "$1"; t1=$(date +%s.%N); '
           'echo "@rung {\\"step\\": 1, \\"loss\\": 1, \\"t0\\": $t0, \\"t1\\": $t1}"')


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
        while True:
            exp = client.json("GET", "/api/v1/experiments/%d" % eid)
            if exp["state"] in ("completed", "failed", "canceled"):
                break
            if worker.poll() is not None:
                raise rb.BenchError("rung-worker exited (status %s)" % worker.returncode)
            if time.monotonic() - t0 > a.timeout_s:
                raise rb.BenchError("%s did not end within %d s" % (name, a.timeout_s))
            time.sleep(0.02)
        wall = time.monotonic() - t0
    finally:
        rb.stop_process(worker, 30)
    if exp["state"] != "completed":
        raise rb.BenchError("%s ended %s (%s)" % (name, exp["state"], exp.get("error")))
    trials = rb.all_trials(client, eid)
    spans, spawn, prog, fin = [], [], [], []
    for t in trials:
        if t["state"] != "completed" or not t.get("last"):
            raise rb.BenchError("trial %d ended %s" % (t["id"], t["state"]))
        leased, ended = parse_time(t["started_at"]), parse_time(t["ended_at"])
        p0, p1 = t["last"]["t0"], t["last"]["t1"]
        spans.append(ended - leased)
        spawn.append(p0 - leased)
        prog.append(p1 - p0)
        fin.append(ended - p1)
    n = len(trials)
    ideal = math.ceil(n / a.slots) * length
    idle = (a.slots * wall - sum(spans)) / n
    return {"length_s": length, "trials": n, "slots": a.slots, "wall_s": wall, "ideal_s": ideal,
            "overhead": wall / ideal - 1,
            "lease_to_start_ms": 1000 * statistics.mean(spawn),
            "program_extra_ms": 1000 * (statistics.mean(prog) - length),
            "end_to_finish_ms": 1000 * statistics.mean(fin),
            "idle_per_trial_ms": 1000 * idle,
            "lease_to_start_p99_ms": 1000 * rb.percentile(sorted(spawn), 99),
            "end_to_finish_p99_ms": 1000 * rb.percentile(sorted(fin), 99)}


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
              "%d trials per length; the program: sh -c 'date; sleep D; date; echo @rung ...'"
              % (d.url, a.slots, a.trials))
        print()
        print("%8s %7s %8s %8s %9s  %s" % ("length_s", "trials", "wall_s", "ideal_s", "overhead",
                                           "per trial, ms: lease->start  program-D  "
                                           "end->finish  idle (slot waiting for a lease)"))
        for length in lengths:
            r = run_length(a, d, client, work, length)
            rows.append(r)
            print("%8g %7d %8.2f %8.2f %8.1f%%  %6.1f (p99 %.1f)  %6.1f  %6.1f (p99 %.1f)  %6.1f"
                  % (length, r["trials"], r["wall_s"], r["ideal_s"], 100 * r["overhead"],
                     r["lease_to_start_ms"], r["lease_to_start_p99_ms"], r["program_extra_ms"],
                     r["end_to_finish_ms"], r["end_to_finish_p99_ms"], r["idle_per_trial_ms"]),
                  flush=True)
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
