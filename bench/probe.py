#!/usr/bin/env python3
"""Measurements of rungd for bench/store_scale.sh and bench/soak.sh
(standard library only; run with /usr/bin/python3).

  probe.py scale --rungd PATH --db STORE [--runs 5] [--requests 200]
      On a large store (bench/gen_store.py): one untimed start (migrations a
      newer rungd may apply, page cache), then --runs timed starts, each from
      exec to the first /healthz 200, with VmRSS/VmHWM at that moment and
      SIGTERM after; then one more start for the listing endpoints: RSS 2 s
      after start, --requests requests per endpoint over one keep-alive
      connection (p50/p99/max, and the first, cold one), RSS after. Prints
      tables, the target lines, and one JSON line.

  probe.py soak --rungd PATH --worker PATH --seconds 600 [--slots 32]
      [--workers 1] [--trials-per-exp 3000] [--in-flight 2] [--sample-s 10]
      A fresh rungd on a temporary database, rung-worker processes with
      --slots CPU slots in all, running a shell trainable of 5 reports that
      lasts about 0.3 s; experiments (random search) submitted so that
      --in-flight run at any time. Every --sample-s: rungd's RSS, trials
      finished (completed + stopped + failed) and reports from /metrics.
      A latency probe, in a process of its own (no GIL shared with the
      sampling), GETs /api/v1/experiments/{id} of the newest experiment
      every --probe-ms (50) over one keep-alive connection, as a dashboard
      polls: p50/p99/max per interval in the table, and over the whole soak
      (goal: p99 <= --probe-p99-goal-ms, 20). Prints the table, the flatness
      and latency lines, and one JSON line.

Every wait is bounded; on any exit (SIGTERM, SIGINT included) what it
started is stopped.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402

STOP_TIMEOUT_S = 60


def mb(v):
    return "%.1f" % v if v is not None else "n/a"


def verdict(value, goal):
    if value is None:
        return "n/a"
    return "ok" if value <= goal else "MISSED"


# ---------------------------------------------------------------- scale ----

def pick_ids(db_path):
    """Experiments and trials to ask about, read from the store."""
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=30)
    try:
        exps = db.execute("SELECT id, state FROM experiments ORDER BY id").fetchall()
        if not exps:
            raise rb.BenchError("the store has no experiments")
        finished = [i for i, s in exps if s != "running"]
        running = [i for i, s in exps if s == "running"]
        old = finished[0] if finished else exps[0][0]
        mid = finished[len(finished) // 2] if finished else old
        newest = finished[-1] if finished else old
        run = running[-1] if running else newest
        n_old = db.execute("SELECT count(*) FROM trials WHERE experiment_id = ?",
                           (old,)).fetchone()[0]

        def first_trial(eid, state=None):
            q = "SELECT id FROM trials WHERE experiment_id = ?"
            args = [eid]
            if state:
                q += " AND state = ?"
                args.append(state)
            row = db.execute(q + " ORDER BY number LIMIT 1", args).fetchone()
            return row[0] if row else None

        # One trial of each of 200 finished experiments spread over the store:
        # requests that rotate over them do not all hit the same rows.
        step = max(1, len(finished) // 200)
        spread_exps = finished[::step][:200] or [old]
        spread_trials = [first_trial(e) for e in spread_exps]
        spread_trials = [t for t in spread_trials if t is not None]
        ids = {
            "n_exps": len(exps), "old": old, "mid": mid, "newest": newest, "running": run,
            "n_old_trials": n_old,
            "old_trial": first_trial(old), "mid_trial": first_trial(mid),
            "running_trial": first_trial(run, "running") or first_trial(run),
            "spread_exps": spread_exps, "spread_trials": spread_trials,
        }
    finally:
        db.close()
    return ids


def endpoints(ids):
    """(label, path or list of paths to rotate over)."""
    n = ids["n_exps"]
    nt = ids["n_old_trials"]
    old, mid, newest, run = ids["old"], ids["mid"], ids["newest"], ids["running"]
    e = "/api/v1/experiments"
    out = [
        ("experiments offset=0", e + "?limit=100&offset=0"),
        ("experiments offset=%d" % (n // 2), e + "?limit=100&offset=%d" % (n // 2)),
        ("experiments offset=%d" % max(0, n - 12), e + "?limit=100&offset=%d" % max(0, n - 12)),
        ("experiment old (%d)" % old, "%s/%d" % (e, old)),
        ("experiment newest done (%d)" % newest, "%s/%d" % (e, newest)),
        ("experiment running (%d)" % run, "%s/%d" % (e, run)),
        ("experiment x200 rotating", ["%s/%d" % (e, i) for i in ids["spread_exps"]]),
        ("trials old offset=0", "%s/%d/trials?limit=100&offset=0" % (e, old)),
        ("trials old offset=%d" % (nt // 2), "%s/%d/trials?limit=100&offset=%d" % (e, old, nt // 2)),
        ("trials old offset=%d" % max(0, nt - 100),
         "%s/%d/trials?limit=100&offset=%d" % (e, old, max(0, nt - 100))),
        ("trials old sort=value", "%s/%d/trials?limit=100&sort=value" % (e, old)),
        ("trials old sort=value off=%d" % (nt // 2),
         "%s/%d/trials?limit=100&sort=value&offset=%d" % (e, old, nt // 2)),
        ("trials old state=completed", "%s/%d/trials?limit=100&state=completed" % (e, old)),
        ("trials mid offset=0", "%s/%d/trials?limit=100" % (e, mid)),
        ("trials x200 rotating", ["%s/%d/trials?limit=100" % (e, i)
                                  for i in ids["spread_exps"]]),
        ("trials running offset=0", "%s/%d/trials?limit=100" % (e, run)),
        ("trials running sort=value", "%s/%d/trials?limit=100&sort=value" % (e, run)),
        ("trials running state=pending", "%s/%d/trials?limit=100&state=pending" % (e, run)),
        ("trials.csv old", "%s/%d/trials.csv" % (e, old)),
        ("trials.csv running", "%s/%d/trials.csv" % (e, run)),
        ("curves old", "%s/%d/curves" % (e, old)),
        ("curves running", "%s/%d/curves" % (e, run)),
        ("curves x200 rotating", ["%s/%d/curves" % (e, i) for i in ids["spread_exps"]]),
        ("trial old (%s)" % ids["old_trial"], "/api/v1/trials/%s" % ids["old_trial"]),
        ("trial running (%s)" % ids["running_trial"], "/api/v1/trials/%s" % ids["running_trial"]),
        ("trial x200 rotating", ["/api/v1/trials/%d" % t for t in ids["spread_trials"]]),
        ("metrics old trial", "/api/v1/trials/%s/metrics" % ids["old_trial"]),
        ("metrics running trial", "/api/v1/trials/%s/metrics" % ids["running_trial"]),
        ("metrics x200 rotating", ["/api/v1/trials/%d/metrics" % t for t in ids["spread_trials"]]),
        ("workers", "/api/v1/workers"),
    ]
    return out


def measure_endpoint(client, paths, requests, budget_s):
    """Returns dict: n, first_ms, p50, p99, max, errors, first_error, bytes."""
    if isinstance(paths, str):
        paths = [paths]
    lat = []
    errors = 0
    first_error = None
    size = 0
    t_end = time.monotonic() + budget_s
    for i in range(requests):
        path = paths[i % len(paths)]
        t0 = time.perf_counter()
        try:
            status, body = client.request("GET", path)
        except (OSError, Exception) as e:  # a dead daemon or a reset connection
            status, body = None, str(e).encode()
        dt = (time.perf_counter() - t0) * 1000.0
        if status != 200:
            errors += 1
            if first_error is None:
                first_error = "%s -> %s %s" % (path, status,
                                               body[:200].decode("utf-8", "replace"))
        else:
            size = max(size, len(body))
        lat.append(dt)
        if time.monotonic() > t_end:
            break
    s = sorted(lat)
    return {"n": len(lat), "first_ms": lat[0] if lat else None,
            "p50_ms": rb.percentile(s, 50), "p99_ms": rb.percentile(s, 99),
            "max_ms": s[-1] if s else None, "errors": errors, "first_error": first_error,
            "bytes": size}


def store_summary(db_path):
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=30)
    try:
        q = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
        return {"experiments": q("SELECT count(*) FROM experiments"),
                "trials": q("SELECT count(*) FROM trials"),
                "finished_trials": q("SELECT count(*) FROM trials WHERE state IN "
                                     "('completed', 'stopped', 'failed', 'canceled')"),
                "reports": q("SELECT count(*) FROM reports"),
                "workers": q("SELECT count(*) FROM workers"),
                "user_version": q("PRAGMA user_version")}
    finally:
        db.close()


def cmd_scale(a):
    work = tempfile.mkdtemp(prefix="probe-scale.")
    daemons = []
    extra = ["--lease-s", "3600"]  # no lease expires (and no row changes) while we measure

    def start(tag, timeout):
        d = rb.Rungd(a.rungd, a.db, os.path.join(work, "rungd-%s.log" % tag), extra)
        daemons.append(d)
        d.start(timeout)
        return d

    def stop(d, tag):
        rc, secs, killed = d.stop(STOP_TIMEOUT_S)
        if killed:
            print("NOTE: rungd (%s) did not exit within %d s of SIGTERM; killed"
                  % (tag, STOP_TIMEOUT_S))
        elif rc != 0:
            print("NOTE: rungd (%s) exited with status %s after SIGTERM: %s"
                  % (tag, rc, d.log_tail(300)))
        return secs

    try:
        before = store_summary(a.db)
        print("store: %s (%.2f GB): %d experiments, %d trials (%d finished), %d reports, "
              "%d workers, schema version %d"
              % (a.db, os.path.getsize(a.db) / 1e9, before["experiments"], before["trials"],
                 before["finished_trials"], before["reports"], before["workers"],
                 before["user_version"]))
        # Untimed first start: a newer rungd's migrations, and the page cache.
        d = start("warmup", a.start_timeout)
        st = d.status() or {}
        print("warm-up start (not counted): ready in %.2f s, RSS %s MB, HWM %s MB"
              % (d.ready_s, mb(st.get("rss_mb")), mb(st.get("hwm_mb"))))
        stop(d, "warmup")
        after = store_summary(a.db)
        if after["user_version"] != before["user_version"]:
            print("NOTE: the warm-up start migrated the store from schema version %d to %d "
                  "in %.2f s (included in its time)" % (before["user_version"],
                                                        after["user_version"], d.ready_s))
        runs = []
        print()
        print("%-4s %10s %10s %10s %10s %8s" % ("run", "listen_s", "healthz_s", "rss_MB",
                                                 "hwm_MB", "stop_s"))
        for i in range(a.runs):
            d = start("run%d" % (i + 1), a.start_timeout)
            st = d.status() or {}
            secs = stop(d, "run%d" % (i + 1))
            runs.append({"listen_s": d.listen_s, "ready_s": d.ready_s,
                         "rss_mb": st.get("rss_mb"), "hwm_mb": st.get("hwm_mb"),
                         "stop_s": secs})
            print("%-4d %10.3f %10.3f %10s %10s %8.2f" % (i + 1, d.listen_s, d.ready_s,
                                                         mb(st.get("rss_mb")),
                                                         mb(st.get("hwm_mb")), secs))
        ready = sorted(r["ready_s"] for r in runs)
        med = statistics.median(ready)
        worst = ready[-1]
        print("start-up (exec to /healthz 200): median %.3f s, max %.3f s over %d runs"
              % (med, worst, len(ready)))

        # The listing run.
        ids = pick_ids(a.db)
        d = start("listing", a.start_timeout)
        time.sleep(2.0)
        st0 = d.status() or {}
        print()
        print("listing run: ready in %.2f s; 2 s later RSS %s MB, HWM %s MB"
              % (d.ready_s, mb(st0.get("rss_mb")), mb(st0.get("hwm_mb"))))
        client = rb.Client(d.host, d.port, timeout=a.request_timeout)
        rows = []
        print()
        print("%-34s %5s %9s %9s %9s %9s %9s %4s %6s" % (
            "endpoint (GET, keep-alive)", "n", "first_ms", "p50_ms", "p99_ms", "max_ms",
            "KB", "err", "p99<=" + str(int(a.p99_goal_ms))))
        for label, paths in endpoints(ids):
            if not d.alive():
                raise rb.BenchError("rungd died during the listing run: %s" % d.log_tail())
            m = measure_endpoint(client, paths, a.requests, a.endpoint_budget_s)
            m["label"] = label
            m["path"] = paths if isinstance(paths, str) else paths[0] + " (and others)"
            rows.append(m)
            ok = m["errors"] == 0 and m["p99_ms"] <= a.p99_goal_ms
            print("%-34s %5d %9.2f %9.2f %9.2f %9.2f %9.1f %4d %6s" % (
                label[:34], m["n"], m["first_ms"], m["p50_ms"], m["p99_ms"], m["max_ms"],
                m["bytes"] / 1024.0, m["errors"], "ok" if ok else "MISSED"))
            if m["first_error"]:
                print("  first error: %s" % m["first_error"])
        client.close()
        st1 = d.status() or {}
        print()
        print("after the listing run: RSS %s MB, HWM %s MB" % (mb(st1.get("rss_mb")),
                                                              mb(st1.get("hwm_mb"))))
        stop(d, "listing")

        worst_row = max(rows, key=lambda r: r["p99_ms"])
        missed = [r for r in rows if r["p99_ms"] > a.p99_goal_ms or r["errors"]]
        rss_start = max([st0.get("rss_mb") or 0] + [r["rss_mb"] or 0 for r in runs])
        print()
        print("== targets (store: %d finished trials, %d reports) =="
              % (before["finished_trials"], before["reports"]))
        print("target startup_median_s: %.3f (goal <= %.1f) %s"
              % (med, a.startup_goal_s, verdict(med, a.startup_goal_s)))
        print("target startup_max_s: %.3f (goal <= %.1f) %s"
              % (worst, a.startup_goal_s, verdict(worst, a.startup_goal_s)))
        print("target rss_after_start_mb: %.1f (goal <= %d; largest of the timed runs at "
              "/healthz and the listing run 2 s after) %s"
              % (rss_start, a.rss_goal_mb, verdict(rss_start, a.rss_goal_mb)))
        rss_after = st1.get("rss_mb")
        print("target rss_after_listing_mb: %s (goal <= %d; HWM %s) %s"
              % (mb(rss_after), a.rss_goal_mb, mb(st1.get("hwm_mb")),
                 verdict(rss_after, a.rss_goal_mb)))
        print("target listing_p99_ms: worst %.2f at '%s' (goal <= %d for every endpoint; "
              "%d of %d over or failing) %s"
              % (worst_row["p99_ms"], worst_row["label"], a.p99_goal_ms, len(missed), len(rows),
                 "ok" if not missed else "MISSED"))
        print(json.dumps({"bench": "store_scale", "store": before, "startup_runs": runs,
                          "startup_median_s": med, "startup_max_s": worst,
                          "rss_after_start_mb": rss_start, "hwm_after_start_mb":
                          st0.get("hwm_mb"), "rss_after_listing_mb": rss_after,
                          "hwm_after_listing_mb": st1.get("hwm_mb"), "endpoints": rows}))
        return 0
    finally:
        for d in daemons:
            if d.alive():
                d.stop(10)
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------- soak ----

# The trainable: 5 reports 0.06 s apart from a POSIX shell, no interpreter to
# start; a and b (search space integers) make the loss. argv[0] of `sh -c` is
# "trainable", then a and b.
TRAINABLE_SCRIPT = (
    'for s in 1 2 3 4 5; do '
    'echo "@rung {\\"step\\": $s, \\"loss\\": $1.$((6 - s))$2}"; sleep 0.06; done')


def soak_spec(n, trials, trial_timeout_s):
    return {
        "name": "soak-%d" % n,
        "metric": "loss", "mode": "min",
        "search_space": {"a": {"type": "randint", "low": 0, "high": 10},
                         "b": {"type": "randint", "low": 10, "high": 100},
                         "lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}},
        "searcher": {"type": "random", "seed": n},
        "num_samples": trials,
        "max_failures": 1,
        "resources_per_trial": {"cpu": 1, "gpu": 0},
        "trainable": {"type": "command",
                      "argv": ["sh", "-c", TRAINABLE_SCRIPT, "trainable", "{a}", "{b}"],
                      "timeout_s": trial_timeout_s},
    }


def prom(text, name, labels=None):
    """Value of one Prometheus sample, or None."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        if labels is None and head == name:
            return float(value)
        if labels is not None and head == "%s{%s}" % (name, labels):
            return float(value)
    return None


def finished_counts(client):
    """(trials finished, failed, reports) from /metrics; from the experiment
    list when /metrics lacks them."""
    status, body = client.request("GET", "/metrics")
    if status == 200:
        t = body.decode("utf-8", "replace")
        vals = [prom(t, "rung_trials", 'state="%s"' % s)
                for s in ("completed", "stopped", "failed")]
        if None not in vals:
            return int(sum(vals)), int(vals[2]), prom(t, "rung_reports_total")
    done = failed = 0
    offset = 0
    while True:
        page = client.json("GET", "/api/v1/experiments?limit=1000&offset=%d" % offset)
        for x in page["items"]:
            c = x.get("counts", {})
            done += c.get("completed", 0) + c.get("stopped", 0) + c.get("failed", 0)
            failed += c.get("failed", 0)
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            break
    return done, failed, None


def latency_probe(host, port, exp_id, stop, interval_s, out_path):
    """The soak's probe process: GET the newest experiment (exp_id, shared)
    every interval_s until stop is set; one line per request to out_path:
    seconds since start, milliseconds, HTTP status (0: no answer)."""
    client = rb.Client(host, port, timeout=10)
    t0 = time.monotonic()
    with open(out_path, "w") as out:
        while not stop.is_set():
            start = time.monotonic()
            try:
                status, _ = client.request("GET", "/api/v1/experiments/%d" % exp_id.value)
            except (OSError, http.client.HTTPException):
                status = 0
            ms = 1000.0 * (time.monotonic() - start)
            out.write("%.3f %.3f %d\n" % (start - t0, ms, status))
            out.flush()
            stop.wait(max(0.0, interval_s - (time.monotonic() - start)))


def probe_read(path, offset):
    """The probe's lines from byte offset on: ([(ms, status)], new offset)."""
    try:
        with open(path) as f:
            f.seek(offset)
            text = f.read()
    except FileNotFoundError:
        return [], offset
    whole = text[:text.rfind("\n") + 1]  # a line being written waits for next time
    rows = []
    for line in whole.splitlines():
        parts = line.split()
        if len(parts) == 3:
            rows.append((float(parts[1]), int(parts[2])))
    return rows, offset + len(whole.encode())


def latency_summary(rows):
    ms = sorted(m for m, _ in rows)
    return {"n": len(ms), "errors": sum(1 for _, st in rows if st != 200),
            "p50_ms": rb.percentile(ms, 50) if ms else None,
            "p99_ms": rb.percentile(ms, 99) if ms else None,
            "max_ms": ms[-1] if ms else None}


def cmd_soak(a):
    work = tempfile.mkdtemp(prefix="probe-soak.")
    workers = []
    d = None
    probe = None
    probe_stop = multiprocessing.Event()
    try:
        help_text = subprocess.run([a.worker, "--help"], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=10).stdout.decode()
        for flag in ("--server", "--cpu-slots", "--gpus", "--workdir", "--name"):
            if flag not in help_text:
                raise rb.BenchError("rung-worker --help does not list %s" % flag)
        d = rb.Rungd(a.rungd, os.path.join(work, "soak.db"), os.path.join(work, "rungd.log"))
        d.start(60)
        print("rungd %s on %s (started in %.2f s)" % (d.url, d.db, d.ready_s))
        slots = [a.slots // a.workers + (1 if i < a.slots % a.workers else 0)
                 for i in range(a.workers)]
        for i, n in enumerate(slots):
            wd = os.path.join(work, "worker-%d" % i)
            os.makedirs(wd)
            logf = open(os.path.join(work, "worker-%d.log" % i), "ab")
            p = rb.spawn([a.worker, "--server", d.url, "--name", "soak-%d" % i, "--gpus", "none",
                          "--cpu-slots", str(n), "--workdir", wd], logf, logf, cwd=wd)
            logf.close()
            workers.append((p, os.path.join(work, "worker-%d.log" % i)))
        print("%d rung-worker process(es), %s CPU slots; trainable: sh, 5 reports 0.06 s apart"
              % (a.workers, "+".join(map(str, slots))))
        client = rb.Client(d.host, d.port, timeout=30)
        submitted = 0
        newest = multiprocessing.Value("q", 0)  # the experiment the probe asks about

        def top_up():
            nonlocal submitted
            page = client.json("GET", "/api/v1/experiments?limit=50")
            running = sum(1 for x in page["items"] if x["state"] == "running")
            while running < a.in_flight:
                submitted += 1
                x = client.json("POST", "/api/v1/experiments",
                                soak_spec(submitted, a.trials_per_exp, a.trial_timeout_s))
                newest.value = x["id"]
                running += 1

        top_up()
        probe_path = os.path.join(work, "probe.txt")
        probe = multiprocessing.Process(
            target=latency_probe,
            args=(d.host, d.port, newest, probe_stop, a.probe_ms / 1000.0, probe_path))
        probe.start()
        probe_rows, probe_off = [], 0
        print("latency probe: GET /api/v1/experiments/{newest} every %.0f ms, its own "
              "process and connection" % a.probe_ms)
        t0 = time.monotonic()
        def cpus():
            return (rb.proc_cpu_s(d.proc.pid) or 0.0,
                    sum(rb.proc_cpu_s(p.pid) or 0.0 for p, _ in workers),
                    sum(rb.proc_cpu_s(p.pid, children=True) or 0.0 for p, _ in workers))

        samples = []
        prev = (0.0, 0, 0.0, cpus())
        print()
        print("CPU columns: %% of one core over the interval, for rungd, the rung-worker "
              "processes, and the trials they ran (%d cores here)" % os.cpu_count())
        print("%7s %8s %8s %9s %9s %10s %9s %10s %9s %7s %5s %7s %7s %7s" % (
            "t_s", "rss_MB", "hwm_MB", "finished", "trials/s", "reports/s", "rungd_cpu",
            "worker_cpu", "trial_cpu", "failed", "exps", "p50_ms", "p99_ms", "max_ms"))
        next_sample = t0 + a.sample_s
        while True:
            now = time.monotonic()
            if not d.alive():
                raise rb.BenchError("rungd exited during the soak (status %s): %s"
                                    % (d.proc.returncode, d.log_tail()))
            for p, logp in workers:
                if p.poll() is not None:
                    with open(logp, "rb") as f:
                        tail = f.read()[-600:].decode("utf-8", "replace")
                    raise rb.BenchError("rung-worker exited during the soak (status %s): %s"
                                        % (p.returncode, tail))
            if now >= next_sample:
                t = now - t0
                st = d.status() or {}
                done, failed, reports = finished_counts(client)
                cpu = cpus()
                dt = t - prev[0]
                rate = (done - prev[1]) / dt if dt > 0 else 0.0
                rrate = ((reports - prev[2]) / dt) if reports is not None and dt > 0 else None
                pct = [100.0 * (c - c0) / dt if dt > 0 else 0.0 for c, c0 in zip(cpu, prev[3])]
                new_rows, probe_off = probe_read(probe_path, probe_off)
                probe_rows.extend(new_rows)
                lat = latency_summary(new_rows)
                s = {"t_s": round(t, 1), "rss_mb": st.get("rss_mb"), "hwm_mb": st.get("hwm_mb"),
                     "finished": done, "failed": failed, "trials_per_s": rate,
                     "reports_per_s": rrate, "rungd_cpu_pct": pct[0],
                     "worker_cpu_pct": pct[1], "trial_cpu_pct": pct[2],
                     "experiments": submitted, "probe": lat}
                samples.append(s)
                print("%7.1f %8s %8s %9d %9.1f %10s %8.0f%% %9.0f%% %8.0f%% %7d %5d %7s %7s %7s"
                      % (t, mb(s["rss_mb"]), mb(s["hwm_mb"]), done, rate,
                         "%.0f" % rrate if rrate is not None else "n/a", pct[0], pct[1], pct[2],
                         failed, submitted, mb(lat["p50_ms"]), mb(lat["p99_ms"]),
                         mb(lat["max_ms"])), flush=True)
                prev = (t, done, reports if reports is not None else 0.0, cpu)
                next_sample += a.sample_s
                if t >= a.seconds - 1e-6:
                    break
            top_up()
            time.sleep(max(0.0, min(1.0, next_sample - time.monotonic())))

        # Windows: the first and last minute, or a third of a shorter run.
        T = samples[-1]["t_s"]
        w = min(60.0, T / 3.0)
        first = [s for s in samples if s["t_s"] <= w + 1e-6]
        last = [s for s in samples if s["t_s"] > T - w + 1e-6]
        after_first = [s for s in samples if s["t_s"] >= w - 1e-6]
        rss_ref = after_first[0]["rss_mb"] if after_first else None
        rss_end = samples[-1]["rss_mb"]
        rss_max = max(s["rss_mb"] for s in after_first) if after_first else None
        drift = 100.0 * (rss_end - rss_ref) / rss_ref if rss_ref else None

        def mean_rate(ss):
            return statistics.mean(s["trials_per_s"] for s in ss) if ss else None

        r_first, r_last = mean_rate(first), mean_rate(last)
        probe_stop.set()
        probe.join(15)
        new_rows, probe_off = probe_read(probe_path, probe_off)
        probe_rows.extend(new_rows)
        lat = latency_summary(probe_rows)
        r_change = 100.0 * (r_last - r_first) / r_first if r_first else None
        total_done = samples[-1]["finished"]
        print()
        print("== soak: %.0f s, %d experiments submitted, %d trials finished (%d failed), "
              "%.1f trials/s overall ==" % (T, submitted, total_done, samples[-1]["failed"],
                                           total_done / T if T else 0))
        if w < 60:
            print("NOTE: a run of %.0f s is short: windows of %.0f s (a third) instead of a "
                  "minute; the verdicts below mean little" % (T, w))
        t_ref = after_first[0]["t_s"] if after_first else w
        print("rss: %s MB at %.0f s, %s MB at the end (%s), largest from %.0f s on %s MB"
              % (mb(rss_ref), t_ref, mb(rss_end),
                 "%+.1f%%" % drift if drift is not None else "n/a", t_ref, mb(rss_max)))
        print("trials/s: %.1f in the first %.0f s, %.1f in the last %.0f s (%+.1f%%)"
              % (r_first or 0, w, r_last or 0, w, r_change or 0))
        if samples[-1]["failed"] > 0.01 * max(1, total_done):
            print("NOTE: more than 1%% of the trials failed: look at the worker logs")
        print("target soak_rss_flat: %s (end against %.0f s; goal within +-10%%) %s"
              % ("%+.1f%%" % drift if drift is not None else "n/a", t_ref,
                 "ok" if drift is not None and abs(drift) <= 10 else "MISSED"))
        print("probe: %d requests, %d not 200; p50 %s ms, p99 %s ms, max %s ms (rss at the end "
              "%s MB)" % (lat["n"], lat["errors"], mb(lat["p50_ms"]), mb(lat["p99_ms"]),
                          mb(lat["max_ms"]), mb(rss_end)))
        print("target soak_throughput_flat: %s (last vs first window; goal within +-10%%) %s"
              % ("%+.1f%%" % r_change if r_change is not None else "n/a",
                 "ok" if r_change is not None and abs(r_change) <= 10 else "MISSED"))
        print("target soak_probe_p99: %s ms over %d requests, %d errors (goal <= %g ms, none "
              "failed) %s" % (mb(lat["p99_ms"]), lat["n"], lat["errors"], a.probe_p99_goal_ms,
                              "ok" if lat["p99_ms"] is not None and lat["errors"] == 0
                              and lat["p99_ms"] <= a.probe_p99_goal_ms else "MISSED"))
        print(json.dumps({"bench": "soak", "seconds": T, "window_s": w, "slots": a.slots,
                          "workers": a.workers, "experiments": submitted,
                          "trials_finished": total_done, "rss_ref_mb": rss_ref,
                          "rss_end_mb": rss_end, "rss_change_pct": drift,
                          "trials_per_s_first": r_first, "trials_per_s_last": r_last,
                          "trials_per_s_change_pct": r_change, "probe": lat,
                          "samples": samples}))
        return 0
    finally:
        probe_stop.set()
        if probe is not None:
            probe.join(15)
            if probe.is_alive():
                probe.kill()
        # Workers: SIGTERM lets running trials finish, a second one ends them.
        for p, _ in workers:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for p, _ in workers:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                rb.stop_process(p, 10)
        for p, _ in workers:
            # Trainables left behind in the worker's process group, if any.
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if d is not None and d.alive():
            rc, _, killed = d.stop(STOP_TIMEOUT_S)
            if killed or rc != 0:
                print("NOTE: rungd did not stop cleanly after SIGTERM (%s)"
                      % ("killed" if killed else "status %s" % rc))
        if a.keep:
            print("kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scale")
    s.add_argument("--rungd", required=True)
    s.add_argument("--db", required=True)
    s.add_argument("--runs", type=int, default=5)
    s.add_argument("--requests", type=int, default=200)
    s.add_argument("--start-timeout", type=float, default=600)
    s.add_argument("--request-timeout", type=float, default=60)
    s.add_argument("--endpoint-budget-s", type=float, default=120)
    s.add_argument("--startup-goal-s", type=float, default=2.0)
    s.add_argument("--rss-goal-mb", type=int, default=100)
    s.add_argument("--p99-goal-ms", type=float, default=50)
    k = sub.add_parser("soak")
    k.add_argument("--rungd", required=True)
    k.add_argument("--worker", required=True)
    k.add_argument("--seconds", type=float, default=600)
    k.add_argument("--slots", type=int, default=32)
    k.add_argument("--workers", type=int, default=1)
    k.add_argument("--trials-per-exp", type=int, default=3000)
    k.add_argument("--in-flight", type=int, default=2)
    k.add_argument("--sample-s", type=float, default=10)
    k.add_argument("--trial-timeout-s", type=float, default=30)
    k.add_argument("--probe-ms", type=float, default=50)
    k.add_argument("--probe-p99-goal-ms", type=float, default=20)
    k.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = p.parse_args()
    if a.cmd == "soak" and not (1 <= a.workers <= a.slots):
        p.error("--workers must be between 1 and --slots")
    rb.on_signals_exit()
    return cmd_scale(a) if a.cmd == "scale" else cmd_soak(a)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except rb.BenchError as e:
        print("probe: error: %s" % e, file=sys.stderr)
        sys.exit(1)
