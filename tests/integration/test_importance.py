"""Integration tests of the analysis endpoints (docs/api.md,
"GET /api/v1/experiments/{id}/importance" and ".../surface"): a real rungd
whose trials are leased, reported and finished over HTTP as a worker does,
with objectives whose truth is known. What a user checks: the parameters
that matter come first, a reported metric of its own has its own ranking,
a conditional parameter counts the trials that took its branch, the
surface's points are the trials and the GP passes near them, bad arguments
name their field, and the CLI and the Python client say what the API says.
"""

import datetime
import json
import math
import os
import subprocess
import sys
import time

import rungd_harness as h

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)

import rung  # noqa: E402  (from the source tree, as PYTHONPATH=python does)

# Five parameters; the loss depends on `a` and `lr` (log-scaled) only, the
# reported `aux` on `c` only.
SPACE = {
    "a": {"type": "uniform", "low": 0.0, "high": 1.0},
    "lr": {"type": "loguniform", "low": 1e-4, "high": 1.0},
    "b": {"type": "uniform", "low": 0.0, "high": 1.0},
    "c": {"type": "uniform", "low": -1.0, "high": 1.0},
    "d": {"type": "randint", "low": 0, "high": 10},
}


def loss_of(cfg):
    return 4.0 * (cfg["a"] - 0.3) ** 2 + ((math.log10(cfg["lr"]) + 2.0) / 2.0) ** 2


def aux_of(cfg):
    return 3.0 * cfg["c"]


def rung_cli():
    path = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
    if not os.access(path, os.X_OK):
        raise AssertionError("rung binary not found or not executable: %s" % path)
    return path


class Importance(h.RungdTestCase):

    def run_trials(self, d, eid, n, metrics):
        """Leases, reports (metrics(config) at step 1) and finishes n trials;
        {trial id: (config, metrics)}."""
        w = h.Worker(d)
        done = {}
        for _ in range(n):
            t = w.lease_one(wait_s=5)
            m = metrics(t["config"])
            w.report_ok(t, 1, m)
            w.finish_ok(t)
            done[t["id"]] = (t["config"], m)
        return done

    def importance(self, d, eid, query=""):
        return d.ok("GET", "/api/v1/experiments/%d/importance%s" % (eid, query))

    def test_ranking_metrics_cli_and_python(self):
        d = self.daemon()
        # 100 planned, 80 run: the experiment stays running (in memory).
        eid = d.create_experiment(h.spec(name="imp", search_space=SPACE, num_samples=100,
                                         searcher={"type": "random", "seed": 7}))["id"]
        run = lambda c: {"loss": loss_of(c), "aux": aux_of(c)}  # noqa: E731
        self.run_trials(d, eid, 60, run)
        self.assertEqual(self.importance(d, eid)["metrics"][0]["trials"], 60)
        # More trials complete: rungd recomputes in the background (at most
        # once a second), so the next answer, a while later, counts them
        # and was computed before it was asked for.
        self.run_trials(d, eid, 20, run)
        time.sleep(3.0)
        asked = datetime.datetime.now(datetime.timezone.utc)
        self.assertEqual(self.importance(d, eid)["metrics"][0]["trials"], 80)
        computed = datetime.datetime.fromisoformat(
            self.importance(d, eid)["computed_at"].replace("Z", "+00:00"))
        self.assertLess(computed, asked)
        r = self.importance(d, eid)
        self.assertEqual(r["experiment_id"], eid)
        self.assertEqual(r["method"], "fanova")
        self.assertRegex(r["computed_at"], r"^\d{4}-\d\d-\d\dT")
        self.assertEqual([m["name"] for m in r["metrics"]], ["loss"])
        m = r["metrics"][0]
        self.assertEqual((m["kind"], m["mode"], m["trials"]), ("objective", "min", 80))
        ranked = [p["param"] for p in m["importance"]]
        self.assertEqual(sorted(ranked), sorted(SPACE))
        self.assertEqual(set(ranked[:2]), {"a", "lr"}, m["importance"])
        values = [p["importance"] for p in m["importance"]]
        self.assertEqual(values, sorted(values, reverse=True))
        self.assertAlmostEqual(sum(values), 1.0, places=6)
        for p in m["importance"]:
            self.assertEqual(p["trials"], 80)
            self.assertGreaterEqual(p["std"], 0.0)

        # Another reported metric: its own ranking.
        aux = self.importance(d, eid, "?metric=aux")["metrics"]
        self.assertEqual(len(aux), 1)
        self.assertEqual((aux[0]["name"], aux[0]["kind"], aux[0]["mode"]), ("aux", "metric", None))
        self.assertEqual(aux[0]["importance"][0]["param"], "c", aux[0]["importance"])

        # A metric no trial reported, and an unknown experiment.
        self.assertError(d.request("GET", "/api/v1/experiments/%d/importance?metric=nope" % eid),
                         400, "invalid_argument", "metric")
        self.assertError(d.request("GET", "/api/v1/experiments/999/importance"), 404,
                         "not_found")

        # The CLI prints the parameters in the API's order; --json is the API's.
        env = dict(os.environ)
        env.pop("RUNG_TOKEN", None)
        out = subprocess.run([rung_cli(), "--server", d.url, "importance", str(eid)],
                             capture_output=True, text=True, env=env, timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        printed = [line.split()[0] for line in out.stdout.splitlines()[2:] if line.strip()]
        self.assertEqual(printed, ranked, out.stdout)
        out = subprocess.run([rung_cli(), "--server", d.url, "importance", str(eid), "--metric",
                              "aux", "--json"], capture_output=True, text=True, env=env,
                             timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["metrics"], aux)

        # python3 -m rung prints the same table.
        py_env = dict(env, PYTHONPATH=PYTHON_DIR)
        out = subprocess.run([sys.executable, "-m", "rung", "--server", d.url, "importance",
                              str(eid)], capture_output=True, text=True, env=py_env,
                             timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        printed = [line.split()[0] for line in out.stdout.splitlines()[2:] if line.strip()]
        self.assertEqual(printed, ranked, out.stdout)

        # The Python client returns the same.
        client = rung.Client(d.url)
        self.assertEqual(client.importance(eid)["metrics"], r["metrics"])
        self.assertEqual(rung.Experiment.attach(eid, client=client).importance(metric="aux"), aux)


    def test_conditional_space(self):
        d = self.daemon()
        space = {"x": {"type": "uniform", "low": 0.0, "high": 1.0},
                 "model": {"type": "choice", "values": [
                     {"kind": "linear", "p": {"type": "uniform", "low": 0.0, "high": 1.0}},
                     {"kind": "tree", "q": {"type": "uniform", "low": 0.0, "high": 1.0}}]}}
        eid = d.create_experiment(h.spec(name="cond", search_space=space, num_samples=40,
                                         searcher={"type": "random", "seed": 3}))["id"]

        def metrics(c):
            return {"loss": c["x"] + c.get("model.p", 0.0) + c.get("model.q", 0.0)}

        done = self.run_trials(d, eid, 40, metrics)
        took_p = sum(1 for c, _ in done.values() if "model.p" in c)
        took_q = sum(1 for c, _ in done.values() if "model.q" in c)
        self.assertGreater(took_p, 0)
        self.assertGreater(took_q, 0)
        m = self.importance(d, eid)["metrics"][0]
        by = {p["param"]: p for p in m["importance"]}
        self.assertEqual(by["x"]["trials"], 40)
        self.assertEqual(by["model.p"]["trials"], took_p)
        self.assertEqual(by["model.q"]["trials"], took_q)
        self.assertAlmostEqual(sum(p["importance"] for p in m["importance"]), 1.0, places=6)

    def test_surface(self):
        d = self.daemon()
        for searcher, model in (({"type": "bayes", "seed": 5, "n_initial": 40}, "gp"),
                                ({"type": "random", "seed": 5}, "interpolation")):
            eid = d.create_experiment(h.spec(name="surf-" + model, search_space=SPACE,
                                             num_samples=30, searcher=searcher))["id"]
            done = self.run_trials(d, eid, 30, lambda c: {"loss": loss_of(c), "aux": aux_of(c)})
            path = "/api/v1/experiments/%d/surface" % eid
            s = d.ok("GET", path + "?x=a&y=lr&n=12")
            self.assertEqual(s["model"], model)
            self.assertEqual(s["metric"], "loss")
            self.assertEqual((s["x"]["param"], s["x"]["log"]), ("a", False))
            self.assertEqual((s["y"]["param"], s["y"]["log"]), ("lr", True))
            self.assertEqual(len(s["x"]["values"]), 12)
            self.assertAlmostEqual(s["x"]["values"][0], 0.0)
            self.assertAlmostEqual(s["x"]["values"][-1], 1.0)
            ys = s["y"]["values"]
            self.assertAlmostEqual(ys[0], 1e-4)
            self.assertAlmostEqual(ys[-1], 1.0)
            self.assertAlmostEqual(ys[1] / ys[0], ys[2] / ys[1])  # log-spaced
            self.assertEqual(len(s["z"]), 12)
            self.assertTrue(all(len(row) == 12 for row in s["z"]))
            self.assertTrue(all(isinstance(v, float) for row in s["z"] for v in row), s["z"])
            # The points are the completed trials, with their values.
            got = {p[3]: p for p in s["points"]}
            self.assertEqual(set(got), set(done))
            for tid, (cfg, m) in done.items():
                self.assertAlmostEqual(got[tid][0], cfg["a"])
                self.assertAlmostEqual(got[tid][1], cfg["lr"])
                self.assertAlmostEqual(got[tid][2], m["loss"])
            if model == "gp":
                # The others are held at the best trial's values.
                best = min(done.values(), key=lambda v: v[1]["loss"])[0]
                self.assertEqual(s["fixed"], {k: v for k, v in best.items()
                                              if k not in ("a", "lr")})
            # Bad arguments name their field.
            for query, field in (("?y=lr", "x"), ("?x=a", "y"), ("?x=zz&y=lr", "x"),
                                 ("?x=a&y=nope", "y"), ("?x=a&y=lr&n=1", "n"),
                                 ("?x=a&y=lr&n=101", "n"), ("?x=a&y=lr&metric=nope", "metric")):
                self.assertError(d.request("GET", path + query), 400, "invalid_argument", field)
        self.assertError(d.request("GET", "/api/v1/experiments/999/surface?x=a&y=lr"), 404,
                         "not_found")

    def test_gp_mean_near_the_trials(self):
        """On a space of the two plotted parameters alone, nothing is held:
        the GP's mean at a trial's point (the nearest cell of a 100 x 100
        grid) is near the trial's value."""
        d = self.daemon()
        space = {"a": SPACE["a"], "lr": SPACE["lr"]}
        eid = d.create_experiment(h.spec(name="gp", search_space=space, num_samples=30,
                                         searcher={"type": "bayes", "seed": 2,
                                                   "n_initial": 30}))["id"]
        done = self.run_trials(d, eid, 30, lambda c: {"loss": loss_of(c)})
        s = d.ok("GET", "/api/v1/experiments/%d/surface?x=a&y=lr&n=100" % eid)
        self.assertEqual((s["model"], s["fixed"]), ("gp", {}))
        xs, ys = s["x"]["values"], s["y"]["values"]
        losses = [m["loss"] for _, m in done.values()]
        span = max(losses) - min(losses)
        for cfg, m in done.values():
            j = min(range(100), key=lambda k: abs(xs[k] - cfg["a"]))
            i = min(range(100), key=lambda k: abs(math.log(ys[k]) - math.log(cfg["lr"])))
            self.assertLess(abs(s["z"][i][j] - m["loss"]), 0.05 * span,
                            (cfg, m, s["z"][i][j]))


if __name__ == "__main__":
    h.main()
