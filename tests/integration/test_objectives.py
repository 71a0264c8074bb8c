"""Integration tests of several objectives and constraints (docs/api.md,
"Several objectives and constraints"): real rung-workers run a command
trainable that reports two conflicting objectives and a memory metric;
the experiment's pareto, the trials' values and feasible, trials.csv and
best follow the last report of each trial."""

import csv
import io
import os
import subprocess
import sys

import rungd_harness as h
import worker_harness as wh

sys.path.insert(0, os.path.join(wh.REPO_ROOT, "python"))
import rung  # noqa: E402  (from the source tree, as PYTHONPATH=python does)

TRAINABLE = "tests/integration/objectives_trainable.py"


def spec(**over):
    s = wh.command_spec([wh.PYTHON, TRAINABLE],
                        search_space={"x": {"type": "uniform", "low": 0, "high": 1}},
                        num_samples=12, max_concurrent_trials=4)
    s.pop("metric", None)
    s.pop("mode", None)
    s.update(over)
    return s


class Objectives(wh.WorkerTestCase):

    def run_to_end(self, d, s):
        eid = d.create_experiment(s)["id"]
        w = self.worker(d, "w-" + s["name"], cpu_slots=4, once=True)
        self.assertEqual(self.wait_workers_exit([w], 120), [0], self.explain(d, w))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        self.assertEqual(exp["counts"]["completed"], 12, exp["counts"])
        return exp, d.all_trials(eid)

    def test_pareto_with_a_constraint(self):
        d = self.daemon()
        s = spec(name="mo", metrics=[{"name": "val_loss", "mode": "min"},
                                     {"name": "latency_ms", "mode": "min"}],
                 constraints=[{"metric": "peak_mem_gb", "max": 16}],
                 searcher={"type": "bayes", "seed": 3, "n_initial": 6})
        exp, trials = self.run_to_end(d, s)
        self.assertIsNone(exp["best"])
        self.assertNotIn("metric", exp)
        for t in trials:
            x = t["config"]["x"]
            self.assertAlmostEqual(t["values"]["val_loss"], x * x, places=9)
            self.assertAlmostEqual(t["values"]["latency_ms"], (1 - x) ** 2 * 100, places=6)
            self.assertEqual(t["feasible"], 32 * x <= 16, t)
        # Every feasible trial is Pareto-optimal (the objectives conflict
        # along x), and no infeasible one is on the front.
        feasible = sorted(t["id"] for t in trials if t["feasible"])
        self.assertGreater(len(feasible), 0)
        front = exp["pareto"]
        self.assertEqual(sorted(p["trial_id"] for p in front), feasible)
        losses = [p["values"]["val_loss"] for p in front]
        self.assertEqual(losses, sorted(losses))
        by_id = {t["id"]: t for t in trials}
        for p in front:
            self.assertEqual(p["config"], by_id[p["trial_id"]]["config"])

        r = d.request("GET", "/api/v1/experiments/%d/trials.csv" % exp["id"])
        self.assertEqual(r.status, 200)
        rows = list(csv.reader(io.StringIO(r.text)))
        # Then every reported metric's last value, named so that it never
        # collides with a parameter or the columns before (docs/api.md).
        self.assertEqual(rows[0], ["id", "number", "state", "x", "val_loss", "latency_ms",
                                   "feasible", "steps", "metric:latency_ms",
                                   "metric:peak_mem_gb", "metric:val_loss"])
        for row in rows[1:]:
            t = by_id[int(row[0])]
            self.assertAlmostEqual(float(row[4]), t["values"]["val_loss"], places=12)
            self.assertEqual(row[6], "true" if t["feasible"] else "false")
            self.assertEqual(row[7], "2")
            self.assertEqual([float(v) for v in row[8:]],
                             [t["last"][k] for k in ("latency_ms", "peak_mem_gb", "val_loss")])

        # rung show: the objectives, the constraint and the front, a line
        # per trial.
        cli = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
        shown = subprocess.run([cli, "--server", d.url, "--token", d.token or "", "show",
                                str(exp["id"])], capture_output=True, text=True, timeout=30)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("metrics:    val_loss (min), latency_ms (min)", shown.stdout)
        self.assertIn("constraints: peak_mem_gb <= 16", shown.stdout)
        self.assertIn("by best val_loss):", shown.stdout)
        self.assertIn("pareto front (%d trials):" % len(front), shown.stdout)
        for p in front:
            self.assertIn("  trial %d: val_loss " % p["trial_id"], shown.stdout)

        # The Python CLI's show says the same.
        pyshow = subprocess.run([sys.executable, "-m", "rung", "--server", d.url, "--token",
                                 d.token or "", "show", str(exp["id"])], capture_output=True,
                                text=True, timeout=60,
                                env={**os.environ, "PYTHONPATH": os.path.join(wh.REPO_ROOT,
                                                                              "python")})
        self.assertEqual(pyshow.returncode, 0, pyshow.stderr)
        self.assertIn("metrics:    val_loss (min), latency_ms (min)", pyshow.stdout)
        self.assertIn("constraints: peak_mem_gb <= 16", pyshow.stdout)
        self.assertNotIn("metric: ", pyshow.stdout)
        self.assertIn("pareto front (%d trials):" % len(front), pyshow.stdout)
        self.assertIn("by best val_loss):", pyshow.stdout)
        for p in front:
            self.assertIn("  trial %d: val_loss %s, latency_ms " % (p["trial_id"], "%.6g" % p["values"]["val_loss"]),
                          pyshow.stdout)

        # The constraint's GP steers bayes: after the 6 initial trials
        # (random, half of them over the bound on average) most model-based
        # proposals are feasible (x <= 0.5).
        model_based = [t for t in trials if t["number"] >= 6]
        self.assertGreaterEqual(sum(t["feasible"] for t in model_based), 5,
                                [(t["config"]["x"], t["feasible"]) for t in model_based])

        # The Python client: pareto() as the API, best() refused naming it,
        # rows() with a column per objective.
        client = rung.Client(server=d.url, token=d.token)
        py = rung.Experiment.attach(exp["id"], client=client)
        self.assertEqual(py.pareto(), front)
        self.assertEqual([o["name"] for o in py.objectives], ["val_loss", "latency_ms"])
        with self.assertRaisesRegex(rung.RungError, "pareto"):
            py.best()
        for row in py.rows():
            self.assertEqual(row["feasible"], by_id[row["id"]]["feasible"])
            self.assertEqual(row["val_loss"], by_id[row["id"]]["last"]["val_loss"])

    def test_one_objective_with_a_constraint(self):
        d = self.daemon()
        # Maximizing val_loss alone: the best feasible x is the one nearest
        # 0.5 from below; infeasible trials have higher values and must not
        # become best.
        s = spec(name="co", metric="val_loss", mode="max",
                 constraints=[{"metric": "peak_mem_gb", "max": 16}])
        exp, trials = self.run_to_end(d, s)
        self.assertNotIn("pareto", exp)
        feasible = [t for t in trials if t["feasible"]]
        infeasible = [t for t in trials if not t["feasible"]]
        self.assertGreater(len(feasible), 0)
        self.assertGreater(len(infeasible), 0)
        want = max(feasible, key=lambda t: t["best"]["value"])
        self.assertEqual(exp["best"]["trial_id"], want["id"])
        self.assertLessEqual(exp["best"]["config"]["x"], 0.5)
        client = rung.Client(server=d.url, token=d.token)
        py = rung.Experiment.attach(exp["id"], client=client)
        self.assertEqual(py.best().trial_id, want["id"])
        with self.assertRaisesRegex(rung.RungError, "best"):
            py.pareto()

    def test_asha_stops_dominated_trials(self):
        # asha with two objectives (docs/schedulers.md, "Several
        # objectives"): one trial at a time, so each is judged against all
        # that came before it; at every rung a trial goes on when fewer than
        # ceil(n/2) of the n points there rank above it.
        d = self.daemon()
        s = spec(name="mo-asha", metrics=[{"name": "val_loss", "mode": "min"},
                                          {"name": "latency_ms", "mode": "min"}],
                 search_space={"x": {"type": "uniform", "low": 0, "high": 1},
                               "y": {"type": "uniform", "low": 0, "high": 1}},
                 searcher={"type": "random", "seed": 11}, num_samples=16,
                 max_concurrent_trials=1,
                 scheduler={"type": "asha", "grace_period": 1, "max_t": 4,
                            "reduction_factor": 2})
        eid = d.create_experiment(s)["id"]
        w = self.worker(d, "w-mo-asha", cpu_slots=1, once=True)
        self.assertEqual(self.wait_workers_exit([w], 120), [0], self.explain(d, w))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        self.assertEqual(exp["scheduler"]["type"], "asha")
        trials = sorted(d.all_trials(eid), key=lambda t: t["number"])
        stopped = [t for t in trials if t["state"] == "stopped"]
        done = [t for t in trials if t["state"] == "completed"]
        self.assertEqual(len(stopped) + len(done), 16, [t["state"] for t in trials])
        self.assertEqual(trials[0]["state"], "completed")  # first at every rung
        self.assertGreater(len(stopped), 3)
        self.assertGreater(len(done), 1)
        for t in stopped:
            self.assertIn(t["rung"], (1, 2), t)

        # Points are (x, 100 y): the rule at the first rung, replayed here.
        # A trial dominated by the trials before it at least ceil(n/2) times
        # over never goes on; a trial that dominates every earlier one
        # always does.
        def point(t):
            return (t["config"]["x"], t["config"]["y"])

        def dominates(a, b):
            return all(u <= v for u, v in zip(a, b)) and a != b

        for i, t in enumerate(trials):
            before = [point(o) for o in trials[:i]]
            n = i + 1
            beaten = sum(dominates(p, point(t)) for p in before)
            if beaten >= -(-n // 2):
                self.assertEqual(t["state"], "stopped", t)
                self.assertEqual(t["rung"], 1, t)
            if i > 0 and all(dominates(point(t), p) for p in before):
                self.assertNotEqual(t["rung"], 1, t)
        mean = lambda ts: sum(sum(point(t)) for t in ts) / len(ts)  # noqa: E731
        self.assertGreater(mean(stopped), mean(done))


if __name__ == "__main__":
    wh.main()
