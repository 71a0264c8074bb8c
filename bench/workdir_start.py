#!/usr/bin/env python3
"""Submit to first report with an uploaded working directory (issue 36;
docs/workers.md, "Running a team's code").

What a user waits for when their code travels: `rung submit --working-dir`
packs the folder and uploads it (only when rungd does not hold it yet),
each worker downloads it once into its cache, checks its hash, gives each
trial its own copy, and the program starts and reports.

1. A real rungd on a fresh temporary database, and --workers real
   rung-worker processes (1 CPU slot each, each its own work folder and
   cache), all on this machine's loopback.
2. A working directory of --mb megabytes: one file of random bytes (so
   nothing compresses it away) and train.py, which reports once and ends.
3. Cold: the C client submits an experiment of --workers trials with
   `--working-dir`; the blob is new to rungd and to every worker's cache.
   Warm: the same folder again, as a second experiment: nothing is
   uploaded, and every worker has the blob.
4. For each, the seconds from the start of `rung submit` to the first
   report of the first trial and of the last of the --workers trials
   (polled every 20 ms over the API).

There is no peer here: Ray Tune's runtime_env needs a Ray cluster, which
this machine does not have. The figures are for the closing note and for
regressions. Usage:
  workdir_start.py --rungd PATH --worker PATH --rung PATH [--workers 4] [--mb 50]
It prints a table and one JSON line; its exit status is non-zero only on an
error. Only 127.0.0.1 is used.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402

TRAIN_PY = """\
import os
size = os.path.getsize("data.bin")
print('@rung {"step": 1, "loss": %f}' % (size / 1e9), flush=True)
"""


def make_folder(path, mb):
    os.makedirs(path)
    with open(os.path.join(path, "data.bin"), "wb") as f:
        left = mb << 20
        while left > 0:
            n = min(left, 1 << 20)
            f.write(os.urandom(n))
            left -= n
    with open(os.path.join(path, "train.py"), "w") as f:
        f.write(TRAIN_PY)


def submit(a, d, folder, work, name):
    spec = {"name": name, "metric": "loss", "mode": "min", "num_samples": a.workers,
            "search_space": {"x": {"type": "uniform", "low": 0, "high": 1}},
            "trainable": {"type": "command", "argv": ["python3", "train.py"]}}
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    t0 = time.monotonic()
    out = subprocess.run([a.rung, "--server", d.url, "submit", path, "--working-dir", folder],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise rb.BenchError("rung submit failed: %s" % (out.stderr or out.stdout).strip())
    submit_s = time.monotonic() - t0
    m = re.search(r"^experiment (\d+) submitted", out.stdout, re.M)
    eid = int(m.group(1)) if m else None
    if eid is None:
        raise rb.BenchError("no experiment id in rung submit's output: %r" % out.stdout)
    return t0, submit_s, eid, out.stdout.strip()


def wait_reports(client, eid, t0, n, timeout_s):
    """Seconds from t0 to the first report of the first and of the n-th trial."""
    first = {}
    deadline = time.monotonic() + timeout_s
    while len(first) < n:
        if time.monotonic() > deadline:
            raise rb.BenchError("experiment %d: %d of %d trials reported within %.0f s"
                                % (eid, len(first), n, timeout_s))
        items = client.json("GET", "/api/v1/experiments/%d/trials?limit=1000" % eid)
        for t in items["items"]:
            if t.get("state") == "failed":
                raise rb.BenchError("trial %d failed: %s" % (t["id"], t.get("error")))
            if (t.get("step") or 0) >= 1 and t["id"] not in first:
                first[t["id"]] = time.monotonic() - t0
        time.sleep(0.02)
    times = sorted(first.values())
    return times[0], times[-1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rungd", required=True)
    p.add_argument("--worker", required=True)
    p.add_argument("--rung", required=True)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--mb", type=int, default=50)
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = p.parse_args()
    a.rungd, a.worker, a.rung = (os.path.abspath(x) for x in (a.rungd, a.worker, a.rung))
    rb.on_signals_exit()
    work = tempfile.mkdtemp(prefix="rung-workdir-bench-")
    d = rb.Rungd(a.rungd, os.path.join(work, "rung.db"), os.path.join(work, "rungd.log"))
    workers = []
    try:
        d.start(30)
        client = rb.Client(d.host, d.port)
        for i in range(a.workers):
            wd = os.path.join(work, "w%d" % i)
            os.makedirs(wd)
            logf = open(os.path.join(work, "w%d.log" % i), "ab")
            workers.append(rb.spawn([a.worker, "--server", d.url, "--name", "w%d" % i,
                                     "--gpus", "none", "--cpu-slots", "1", "--workdir", wd],
                                    logf, logf, cwd=wd))
            logf.close()
        folder = os.path.join(work, "project")
        make_folder(folder, a.mb)
        rows = []
        for name in ("cold", "warm"):
            t0, submit_s, eid, said = submit(a, d, folder, work, name)
            first, last = wait_reports(client, eid, t0, a.workers, 300)
            rows.append({"run": name, "submit_s": round(submit_s, 3),
                         "first_report_s": round(first, 3), "all_reported_s": round(last, 3),
                         "client_said": " / ".join(said.splitlines())})
        print("working directory: %d MB of random bytes + train.py; %d workers, 1 slot each"
              % (a.mb, a.workers))
        print("%-5s %10s %16s %16s" % ("run", "submit s", "first report s", "all reported s"))
        for r in rows:
            print("%-5s %10.3f %16.3f %16.3f" % (r["run"], r["submit_s"], r["first_report_s"],
                                                 r["all_reported_s"]))
        for r in rows:
            print("  %s: rung submit said: %s" % (r["run"], r["client_said"]))
        print(json.dumps({"bench": "workdir_start", "mb": a.mb, "workers": a.workers,
                          "runs": rows}))
    except rb.BenchError as e:
        print("workdir_start: %s" % e, file=sys.stderr)
        return 1
    finally:
        for w in workers:
            rb.stop_process(w, 20)
        d.stop(20)
        if a.keep:
            print("kept %s" % work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
