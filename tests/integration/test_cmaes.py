"""Integration tests of the cmaes searcher inside rungd (docs/searchers.md,
"CMA-ES"): real rung-workers run a quadratic command trainable four at a
time; the search space has a categorical parameter (drawn by the random
fallback); rungd is killed mid-run and comes back on its database, and the
strategy goes on from the stored history (its distribution is rebuilt
from the results, not started again in the middle of the cube)."""

import math
import os
import time

import rungd_harness as h
import worker_harness as wh

# The optimum sits in a corner of the cube, far from where CMA-ES starts
# (the middle, sigma0 = 1/6): a rungd that forgot the history after its
# restart would propose around (0.5, 0.5) again.
TRAINABLE = """
    import json, os
    c = json.loads(os.environ["RUNG_CONFIG"])
    loss = (c["x"] - 0.85) ** 2 + (c["y"] - 0.85) ** 2 + {"a": 0.0, "b": 0.01, "c": 0.02}[c["opt"]]
    print("@rung " + json.dumps({"step": 1, "loss": loss}), flush=True)
    """

N = 60


def dist(c):
    return math.hypot(c["x"] - 0.85, c["y"] - 0.85)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2


class Cmaes(wh.WorkerTestCase):

    def test_four_at_a_time_with_a_restart(self):
        d = self.daemon(fixed_port=True)
        prog = self.script("quadratic.py", TRAINABLE)
        spec = wh.command_spec(
            [wh.PYTHON, prog], num_samples=N, max_concurrent_trials=4, max_failures=0,
            search_space={"x": {"type": "uniform", "low": 0, "high": 1},
                          "y": {"type": "uniform", "low": 0, "high": 1},
                          "opt": {"type": "choice", "values": ["a", "b", "c"]}},
            searcher={"type": "cmaes", "seed": 7})
        eid = d.create_experiment(spec)["id"]
        workers = [self.worker(d, name, cpu_slots=2) for name in ("ca", "cb")]

        h.wait_until(lambda: d.experiment(eid)["counts"]["completed"] >= 30 or
                     d.experiment(eid)["state"] != "running", 30, "30 trials completed")
        d.kill9()
        time.sleep(0.3)
        d.restart()
        exp = d.wait_experiment(eid, lambda e: e["state"] != "running", 40,
                                "the experiment to end after the restart")
        self.assertEqual(exp["state"], "completed", self.explain(d, *workers))
        self.assertEqual(exp["counts"]["completed"], N, exp["counts"])
        for w in workers:  # idle now; SIGTERM would wait out a lease's long poll
            w.kill9()

        trials = sorted(d.all_trials(eid), key=lambda t: t["id"])
        self.assertEqual(len(trials), N)
        configs = [t["config"] for t in trials]
        for c in configs:
            self.assertTrue(0 <= c["x"] <= 1 and 0 <= c["y"] <= 1, c)
            self.assertIn(c["opt"], ("a", "b", "c"))
        # Every trial its own sample: no two configs alike, parallel or not.
        keys = {(c["x"], c["y"]) for c in configs}
        self.assertEqual(len(keys), N, "repeated configs: %s" % configs)
        # The choice comes from the random fallback: all three values occur.
        self.assertEqual({c["opt"] for c in configs}, {"a", "b", "c"})
        # The first generation (6 trials, around the middle) against the
        # last ten, proposed after the restart: the strategy moved to the
        # corner and kept there.
        first, last = median([dist(c) for c in configs[:6]]), median(
            [dist(c) for c in configs[-10:]])
        self.assertLess(last, 0.5 * first, "first %.3f, last %.3f: %s" % (first, last, configs))
        self.assertLess(exp["best"]["value"], 0.02, exp["best"])

    def test_refuses_several_objectives(self):
        d = self.daemon()
        s = h.spec(searcher={"type": "cmaes"},
                   metrics=[{"name": "a", "mode": "min"}, {"name": "b", "mode": "max"}])
        del s["metric"], s["mode"]
        err = self.assertError(d.call("POST", "/api/v1/experiments", s), 400, "invalid_spec",
                               "searcher.type")
        self.assertIn("one objective", err["message"])
        self.assertError(d.call("POST", "/api/v1/experiments",
                                h.spec(searcher={"type": "cmaes", "sigma0": 2})),
                         400, "invalid_spec", "searcher.sigma0")


if __name__ == "__main__":
    wh.main()
