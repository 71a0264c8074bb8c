"""Integration tests of points_to_evaluate and warm_start (docs/api.md,
"points_to_evaluate" and "warm_start"; server/warm.c): a real rungd, and
workers driven over HTTP by the test, one trial at a time.

- points_to_evaluate are the first trials, in order, partial points filled
  in by the searcher, for every searcher;
- warm_start: bayes on Branin warm-started from 30 random trials of an ended
  experiment (the regret after 10 new trials is measured over several seeds
  and printed), grid skips the combinations the source tried (fewer
  trials), random skips tried configs of a choice-only space, the refusals
  name warm_start.experiment, and a warm-started experiment proposes the
  same configs across a kill -9.
"""

import math
import statistics
import sys

import rungd_harness as h

BRANIN_MIN = 0.397887
BRANIN_SPACE = {"x1": {"type": "uniform", "low": -5, "high": 10},
                "x2": {"type": "uniform", "low": 0, "high": 15}}


def branin(x1, x2):
    """As examples/trainables/branin.py computes it."""
    b, c = 5.1 / (4 * math.pi ** 2), 5 / math.pi
    r, s, t = 6.0, 10.0, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def branin_of(config):
    return {"loss": branin(config["x1"], config["x2"])}


class WarmCase(h.RungdTestCase):

    def run_trials(self, d, w, eid, metrics_of, limit=None):
        """Leases, reports (one report at step 1) and finishes the
        experiment's trials one at a time until none is left (or `limit`
        ran); returns the leased trials in order."""
        leased = []
        while limit is None or len(leased) < limit:
            status, t = w.lease(wait_s=1)
            if status == 204:
                doc = d.experiment(eid)
                if doc["state"] != "running":
                    break
                continue
            self.assertEqual(t["experiment_id"], eid, "a trial of another experiment: %r" % t)
            leased.append(t)
            w.report_ok(t, 1, metrics_of(t["config"]))
            w.finish_ok(t)
        return leased

    def ended_source(self, d, w, metrics_of=branin_of, **spec):
        """An experiment run to its end; returns (id, its trials' configs)."""
        eid = d.create_experiment(h.spec(**spec))["id"]
        leased = self.run_trials(d, w, eid, metrics_of)
        d.wait_state(eid, "completed")
        return eid, [t["config"] for t in leased]


class PointsToEvaluate(WarmCase):

    SPACE = {"x": {"type": "uniform", "low": 0.0, "high": 1.0},
             "n": {"type": "randint", "low": 1, "high": 100},
             "c": {"type": "choice", "values": ["a", "b", "c"]},
             "k": 7}

    def leased_configs(self, d, w, **spec):
        eid = d.create_experiment(h.spec(search_space=self.SPACE, **spec))["id"]
        return [t["config"] for t in self.run_trials(d, w, eid, lambda c: {"loss": c["x"]})]

    def test_points_come_first_in_order_partial_ones_filled_in(self):
        d = self.daemon()
        w = h.Worker(d)
        points = [{"c": "b", "n": 5, "x": 0.5}, {"x": 1}, {}, {"n": 99, "c": "a"}]
        for searcher in ({"type": "random", "seed": 3}, {"type": "random", "seed": 3, "quasi": True},
                         {"type": "bayes", "seed": 3, "n_initial": 2}):
            with self.subTest(searcher=searcher["type"], quasi=searcher.get("quasi", False)):
                plain = self.leased_configs(d, w, searcher=searcher, num_samples=6)
                got = self.leased_configs(d, w, searcher=searcher, num_samples=6,
                                          points_to_evaluate=points)
                self.assertEqual(len(got), 6)
                for i, c in enumerate(got):
                    # Every parameter, in the space's order.
                    self.assertEqual(list(c), ["x", "n", "c", "k"], c)
                self.assertEqual(got[0], {"x": 0.5, "n": 5, "c": "b", "k": 7})
                # A point's integer for a float domain is a real, as configs are.
                self.assertIsInstance(got[1]["x"], float)
                self.assertEqual(got[1]["x"], 1.0)
                self.assertEqual(got[3]["n"], 99)
                self.assertEqual(got[3]["c"], "a")
                if searcher["type"] != "bayes":
                    # The searcher's config for the trial, with the point laid
                    # over it (bayes later depends on the results).
                    self.assertEqual({**got[1], "x": 1.0}, {**plain[1], "x": 1.0})
                    self.assertEqual(got[2], plain[2])
                    self.assertEqual({**got[3], "n": 99, "c": "a"},
                                     {**plain[3], "n": 99, "c": "a"})
                    self.assertEqual(got[4:], plain[4:])
                else:
                    # n_initial = 2: trials 0..1 quasi-random (as without
                    # points), with the points laid over them.
                    self.assertEqual({**got[1], "x": 1.0}, {**plain[1], "x": 1.0})

    def test_grid_searcher_points_laid_over_the_enumeration(self):
        d = self.daemon()
        w = h.Worker(d)
        space = {"a": {"type": "grid", "values": [1, 2]}, "b": {"type": "choice", "values": ["u", "v"]}}
        eid = d.create_experiment(h.spec(search_space=space, searcher={"type": "grid"},
                                         points_to_evaluate=[{"b": "v"}, {"a": 2, "b": "v"}]))["id"]
        got = [t["config"] for t in self.run_trials(d, w, eid, lambda c: {"loss": 1.0})]
        # Ray's order: a sorts before b, so a varies fastest.
        self.assertEqual(got, [{"a": 1, "b": "v"}, {"a": 2, "b": "v"}, {"a": 1, "b": "v"},
                               {"a": 2, "b": "v"}])


class WarmStartBayes(WarmCase):

    SEEDS = (1, 2, 3, 4, 5)
    NEW_TRIALS = 10

    def test_branin_from_30_random_trials(self):
        """bayes warm-started from an ended experiment of 30 random Branin
        trials; the regret of its best after 10 new trials, per seed."""
        d = self.daemon()
        w = h.Worker(d)
        regrets, source_regrets, cold_regrets = [], [], []
        for seed in self.SEEDS:
            src, src_configs = self.ended_source(
                d, w, search_space=BRANIN_SPACE, searcher={"type": "random", "seed": 100 + seed},
                num_samples=30)
            self.assertEqual(len(src_configs), 30)
            source_regrets.append(min(branin(c["x1"], c["x2"]) for c in src_configs) - BRANIN_MIN)
            spec = dict(search_space=BRANIN_SPACE, num_samples=self.NEW_TRIALS,
                        searcher={"type": "bayes", "seed": seed})
            eid = d.create_experiment(h.spec(warm_start={"experiment": src}, **spec))["id"]
            self.assertEqual(d.experiment(eid)["warm_start"], {"experiment": src})
            leased = self.run_trials(d, w, eid, branin_of)
            self.assertEqual(len(leased), self.NEW_TRIALS)
            exp = d.wait_state(eid, "completed")
            best = min(branin(t["config"]["x1"], t["config"]["x2"]) for t in leased)
            self.assertAlmostEqual(exp["best"]["value"], best, places=9)
            regrets.append(best - BRANIN_MIN)
            # The same searcher without warm_start, for comparison: its
            # first trials are quasi-random start points.
            cold = d.create_experiment(h.spec(**spec))["id"]
            cold_leased = self.run_trials(d, w, cold, branin_of)
            cold_regrets.append(min(branin(t["config"]["x1"], t["config"]["x2"])
                                    for t in cold_leased) - BRANIN_MIN)
            # With 30 warm observations (n_initial is 5) the model proposes
            # from the first trial: not the cold start's Sobol point.
            self.assertNotEqual(leased[0]["config"], cold_leased[0]["config"])
        sys.stderr.write("\nbayes on Branin, 10 trials, seeds %s:\n"
                         "  warm-started from 30 random trials: regrets %s (median %.5f)\n"
                         "  the 30 random trials alone:         regrets %s\n"
                         "  without warm_start:                 regrets %s (median %.5f)\n"
                         % (list(self.SEEDS), ["%.5f" % r for r in regrets],
                            statistics.median(regrets), ["%.4f" % r for r in source_regrets],
                            ["%.4f" % r for r in cold_regrets], statistics.median(cold_regrets)))
        # What holds on every seed: the warm start improves on its source
        # and on the search without it.
        for seed, r, s, c in zip(self.SEEDS, regrets, source_regrets, cold_regrets):
            self.assertLess(r, s, "seed %d: no better than the source's best" % seed)
            self.assertLess(r, c, "seed %d: no better than without warm_start" % seed)
        # The goal is a regret of 0.01 within 10 trials; measured over 120
        # seeds the median is 0.005 to 0.008, with 75 seeds of 120 below
        # 0.01 and the worst at 0.18 (docs/architecture.md, "warm_start"),
        # so the median of these five is held to 0.05, and every one to
        # 0.1 (they measured 0.044, 0.013, 0.0099, 0.0029, 0.011).
        self.assertLessEqual(statistics.median(regrets), 0.05, regrets)
        self.assertLessEqual(max(regrets), 0.1, regrets)


class WarmStartSkips(WarmCase):

    def test_grid_skips_the_combinations_tried(self):
        d = self.daemon()
        w = h.Worker(d)
        # The source: a grid over x, y (and z, which the new space lacks),
        # canceled after four trials: two completed with the metric, one
        # failed, one completed without reporting (not tried: no metric).
        space = {"x": {"type": "grid", "values": [1, 2, 3, 4]},
                 "y": {"type": "choice", "values": ["a", "b"]}}
        src = d.create_experiment(h.spec(search_space={**space, "z": 1},
                                         searcher={"type": "grid"}))["id"]
        done = []
        for metric, status in (("loss", "completed"), ("loss", "completed"), ("loss", "failed"),
                               (None, "completed")):
            t = w.lease_one()
            done.append(t)
            if metric is not None:
                w.report_ok(t, 1, {metric: 1.0})
            w.finish_ok(t, status=status)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % src)
        d.wait_state(src, "canceled")
        tried = [t["config"] for t in done[:3]]
        # Ray's order: x sorts first, so it varies fastest.
        self.assertEqual([{"x": c["x"], "y": c["y"]} for c in tried],
                         [{"x": 1, "y": "a"}, {"x": 2, "y": "a"}, {"x": 3, "y": "a"}])

        plain = d.create_experiment(h.spec(search_space=space, searcher={"type": "grid"}))
        self.assertEqual(plain["total_trials"], 8)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % plain["id"])
        doc = d.create_experiment(h.spec(search_space=space, searcher={"type": "grid"},
                                         num_samples=2, warm_start={"experiment": src}))
        eid = doc["id"]
        self.assertEqual(doc["total_trials"], 10)  # (8 - 3 tried) x 2 samples
        got = [t["config"] for t in self.run_trials(d, w, eid, lambda c: {"loss": 0.5})]
        untried = [{"x": 4, "y": "a"}, {"x": 1, "y": "b"}, {"x": 2, "y": "b"},
                   {"x": 3, "y": "b"}, {"x": 4, "y": "b"}]
        self.assertEqual(got, untried + untried)
        for c in got:
            self.assertNotIn(c, [{"x": t["x"], "y": t["y"]} for t in tried])
        self.assertEqual(d.wait_state(eid, "completed")["counts"]["completed"], 10)

        # A restart counts the same trials.
        d.kill9()
        d.restart()
        self.assertEqual(d.experiment(eid)["total_trials"], 10)

    def test_random_choice_only_space_skips_tried_configs(self):
        d = self.daemon()
        w = h.Worker(d)
        space = {"a": {"type": "choice", "values": [1, 2, 3]},
                 "b": {"type": "choice", "values": ["x", "y"]}}
        searcher = {"type": "random", "seed": 7}
        src, tried = self.ended_source(d, w, search_space=space, searcher=searcher, num_samples=3,
                                       metrics_of=lambda c: {"loss": float(c["a"])})
        # The same seed would draw the source's configs again.
        eid = d.create_experiment(h.spec(search_space=space, searcher=searcher, num_samples=12,
                                         warm_start={"experiment": src}))["id"]
        got = [t["config"] for t in self.run_trials(d, w, eid, lambda c: {"loss": 0.0})]
        self.assertEqual(len(got), 12)
        for c in got:
            self.assertNotIn(c, tried, "a config the source tried: %r (tried %r)" % (c, tried))
        # Without warm_start the same searcher repeats them.
        again = d.create_experiment(h.spec(search_space=space, searcher=searcher,
                                           num_samples=3))["id"]
        self.assertEqual([t["config"] for t in self.run_trials(d, w, again,
                                                               lambda c: {"loss": 0.0})], tried)


class WarmStartRefusals(WarmCase):

    def test_refusals_name_warm_start_experiment(self):
        d = self.daemon()
        w = h.Worker(d)
        done, _ = self.ended_source(d, w, num_samples=2, metrics_of=lambda c: {"loss": c["x"]})
        running = d.create_experiment(h.spec(num_samples=3))["id"]

        def refused(source, fragment, **spec):
            r = d.request("POST", "/api/v1/experiments",
                          h.spec(warm_start={"experiment": source}, **spec))
            err = self.assertError(r, 400, "invalid_spec", "warm_start.experiment")
            self.assertIn(fragment, err["message"])

        refused(99999, "99999")
        refused(running, "running")
        refused(done, '"w"', search_space={"x": {"type": "uniform", "low": 0, "high": 1},
                                           "w": {"type": "choice", "values": [1, 2]}})
        # Paused is not ended either.
        d.ok("POST", "/api/v1/experiments/%d/pause" % running)
        refused(running, "paused")
        # The source ended: accepted, for every searcher.
        for searcher in ({"type": "random"}, {"type": "bayes"}):
            d.create_experiment(h.spec(searcher=searcher, warm_start={"experiment": done}))


class WarmStartRestart(WarmCase):

    def test_kill_9_proposes_the_same_configs(self):
        d = self.daemon()
        w = h.Worker(d)
        src, _ = self.ended_source(d, w, search_space=BRANIN_SPACE,
                                   searcher={"type": "random", "seed": 11}, num_samples=20)
        spec = h.spec(search_space=BRANIN_SPACE, num_samples=6,
                      searcher={"type": "bayes", "seed": 5}, warm_start={"experiment": src})
        # Uninterrupted.
        first = d.create_experiment(spec)["id"]
        straight = [t["config"] for t in self.run_trials(d, w, first, branin_of)]
        self.assertEqual(len(straight), 6)
        # The same experiment again, with a kill -9 after three trials (the
        # fourth already proposed, the fifth proposed after the restart).
        second = d.create_experiment(spec)["id"]
        before = [t["config"] for t in self.run_trials(d, w, second, branin_of, limit=3)]
        d.wait_proposed(second, 4)
        d.kill9()
        d.restart()
        after = [t["config"] for t in self.run_trials(d, w, second, branin_of)]
        self.assertEqual(before + after, straight)


if __name__ == "__main__":
    h.main()
