#!/usr/bin/python3
"""optuna_load: the Optuna peer of server_load (bench/README.md, section 1).

The same work as one Rung run, done with Optuna 3.1 on a fresh SQLite file:
RDBStorage("sqlite:///<temp file>"), RandomSampler(seed),
SuccessiveHalvingPruner; each trial suggests x once, then R times
(trial.report(loss, step); trial.should_prune()), then study.tell.

The pair report + should_prune is what one Rung report request does (store
the value, answer continue or stop), so its duration is the report latency.
The prune answer is counted but not acted on: every trial makes all R
reports, as under Rung's fifo scheduler, so both sides do the same work.

Run with Debian's /usr/bin/python3 (python3-optuna). With --workers W > 1,
W processes share the SQLite file, as Optuna's docs show for RDB storage;
SQLite serializes writers, and "database is locked" errors end the row as
failed, which the output says instead of printing figures.

Prints one line for a person and, with --json, one JSON object per result.
"""

import argparse
import json
import math
import multiprocessing
import os
import shutil
import sys
import tempfile
import time


def loss_at(x, step):
    """The same synthetic curve as server_load.c."""
    return (x - 0.3) ** 2 + 0.5 / step


def percentile(sorted_values, p):
    """Nearest-rank percentile, as in server_load.c."""
    n = len(sorted_values)
    rank = min(max(int(math.ceil(p * n)), 1), n)
    return sorted_values[rank - 1]


def run_worker(url, study_name, seed, trials, reports, seconds, out_queue):
    """Runs trials until `trials` are done or `seconds` have passed since the
    first ask; puts (first_ns, last_ns, trials, reports, prunes, latencies)
    or an error string on out_queue (None when called in-process)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        storage = optuna.storages.RDBStorage(url)
        study = optuna.load_study(
            study_name=study_name,
            storage=storage,
            sampler=optuna.samplers.RandomSampler(seed=seed),
            pruner=optuna.pruners.SuccessiveHalvingPruner(),
        )
        lat = []
        done = 0
        prunes = 0
        first = time.monotonic_ns()
        deadline = first + int(seconds * 1e9)
        last = first
        while done < trials and time.monotonic_ns() < deadline:
            trial = study.ask()
            x = trial.suggest_float("x", 0.0, 1.0)
            for step in range(1, reports + 1):
                t0 = time.monotonic_ns()
                trial.report(loss_at(x, step), step)
                pruned = trial.should_prune()
                lat.append(time.monotonic_ns() - t0)
                prunes += 1 if pruned else 0
            study.tell(trial, loss_at(x, reports))
            done += 1
            last = time.monotonic_ns()
        result = (first, last, done, done * reports, prunes, lat)
    except Exception as exc:  # any failure ends the row; say which
        result = "%s: %s" % (type(exc).__name__, exc)
    if out_queue is None:
        return result
    out_queue.put(result)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    ap.add_argument("--trials", type=int, default=100000, help="most trials in all")
    ap.add_argument("--seconds", type=float, default=10.0, help="stop starting trials after")
    ap.add_argument("--reports", type=int, default=20, help="reports per trial (default 20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="also print one JSON object")
    ap.add_argument("--url-file", help="a file whose first line is the storage's SQLAlchemy URL "
                    "(e.g. postgresql+psycopg2://USER:PASSWORD@HOST:PORT/DB: the password off "
                    "the command line) instead of a fresh SQLite file")
    args = ap.parse_args()
    if not (1 <= args.workers <= 256 and 1 <= args.trials and 1 <= args.reports <= 10000):
        ap.error("--workers in [1, 256], --trials >= 1, --reports in [1, 10000]")
    if not (0 < args.seconds <= 600):
        ap.error("--seconds in (0, 600]")

    try:
        import optuna
    except ImportError as exc:
        print("optuna_load: peer not found: %s" % exc, file=sys.stderr)
        return 3
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    tmpdir = tempfile.mkdtemp(prefix="optuna_load.")
    try:
        url = "sqlite:///" + os.path.join(tmpdir, "optuna.db")
        if args.url_file:
            with open(args.url_file) as f:
                url = f.readline().strip()
        # Creating the schema takes a while and is not part of the work.
        study = optuna.create_study(
            study_name="optuna_load",
            storage=optuna.storages.RDBStorage(url),
            direction="minimize",
        )
        per_worker = [args.trials // args.workers] * args.workers
        for i in range(args.trials % args.workers):
            per_worker[i] += 1
        if args.workers == 1:
            results = [
                run_worker(url, study.study_name, args.seed, args.trials, args.reports,
                           args.seconds, None)
            ]
        else:
            ctx = multiprocessing.get_context("fork")
            queue = ctx.Queue()
            procs = [
                ctx.Process(
                    target=run_worker,
                    args=(url, study.study_name, args.seed + i, per_worker[i], args.reports,
                          args.seconds, queue),
                )
                for i in range(args.workers)
            ]
            for p in procs:
                p.start()
            results = []
            # Each worker stops starting trials after --seconds; a minute
            # more is a hang.
            for _ in procs:
                try:
                    results.append(queue.get(timeout=args.seconds + 60))
                except Exception:
                    results.append("no result within %.0f s" % (args.seconds + 60))
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
                    p.join()
        errors = [r for r in results if isinstance(r, str)]
        mode = "sqlite, %d process%s" % (args.workers, "" if args.workers == 1 else "es")
        if errors:
            print("optuna W=%d (%s): FAILED in %d of %d processes: %s"
                  % (args.workers, mode, len(errors), len(results), errors[0]))
            if args.json:
                print(json.dumps({"bench": "server_load", "impl": "optuna",
                                  "workers": args.workers, "failed": True,
                                  "error": errors[0]}))
            return 1
        first = min(r[0] for r in results)
        last = max(r[1] for r in results)
        trials = sum(r[2] for r in results)
        reports = sum(r[3] for r in results)
        prunes = sum(r[4] for r in results)
        lat = sorted(v for r in results for v in r[5])
        # The storage must hold what the workers did.
        stored = optuna.load_study(study_name=study.study_name, storage=url)
        complete = len(stored.get_trials(deepcopy=False,
                                         states=(optuna.trial.TrialState.COMPLETE,)))
        if complete != trials or not lat or last <= first:
            print("optuna W=%d: storage holds %d complete trials, workers did %d"
                  % (args.workers, complete, trials))
            return 1
        wall = (last - first) / 1e9
        row = {
            "bench": "server_load",
            "impl": "optuna",
            "storage": url.split(":", 1)[0].split("+", 1)[0],
            "optuna": optuna.__version__,
            "workers": args.workers,
            "trials": trials,
            "reports": reports,
            "prune_answers": prunes,
            "wall_s": round(wall, 4),
            "trials_per_s": round(trials / wall, 2),
            "reports_per_s": round(reports / wall, 1),
            "report_p50_ms": round(percentile(lat, 0.50) / 1e6, 4),
            "report_p99_ms": round(percentile(lat, 0.99) / 1e6, 4),
            "report_max_ms": round(lat[-1] / 1e6, 4),
        }
        print("optuna W=%d (%s): %d trials, %d reports (%d prune answers, not acted on) "
              "in %.3f s: %.1f trials/s, %.0f reports/s, report p50 %.3f ms, p99 %.3f ms"
              % (args.workers, mode, trials, reports, prunes, wall, row["trials_per_s"],
                 row["reports_per_s"], row["report_p50_ms"], row["report_p99_ms"]))
        if args.json:
            print(json.dumps(row, separators=(",", ":")))
        return 0
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
