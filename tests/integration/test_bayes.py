"""Integration tests of the bayes searcher inside rungd: real workers run a
real Branin command trainable (examples/trainables/branin.py) four at a
time, and the GP must find the minimum while giving parallel workers
distinct configs (pending trials enter as kriging-believer points)."""

import datetime
import math

import worker_harness as wh

BRANIN_MIN = 0.397887


def parse_time(s):
    """RFC 3339 with milliseconds, as rungd writes it, to seconds."""
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class Bayes(wh.WorkerTestCase):

    def test_branin_four_at_a_time(self):
        d = self.daemon()
        s = wh.example_spec("branin-bayes.json")
        eid = d.create_experiment(s)["id"]
        workers = [self.worker(d, name, cpu_slots=2, once=True) for name in ("ba", "bb")]
        codes = self.wait_workers_exit(workers, 150)
        self.assertEqual(codes, [0, 0], self.explain(d, *workers))

        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, *workers))
        self.assertEqual(exp["counts"]["completed"], 40, exp["counts"])
        regret = exp["best"]["value"] - BRANIN_MIN
        self.assertLessEqual(regret, 0.05, "bayes regret %.4f after 40 trials: %s"
                             % (regret, exp["best"]))

        trials = d.all_trials(eid)
        self.assertEqual(len(trials), 40)
        # The start points are quasi-random, the rest from the GP: every
        # config lies in the box, and no two trials that ran at the same
        # time had the same config.
        for t in trials:
            c = t["config"]
            self.assertTrue(-5 <= c["x1"] < 10 and 0 <= c["x2"] < 15, c)
        overlapping = 0
        for i, a in enumerate(trials):
            for b in trials[i + 1:]:
                a0, a1 = parse_time(a["started_at"]), parse_time(a["ended_at"])
                b0, b1 = parse_time(b["started_at"]), parse_time(b["ended_at"])
                if a0 < b1 and b0 < a1:
                    overlapping += 1
                    dist = math.hypot(a["config"]["x1"] - b["config"]["x1"],
                                      a["config"]["x2"] - b["config"]["x2"])
                    self.assertGreater(dist, 1e-6, "trials %d and %d ran at once with one config"
                                       % (a["id"], b["id"]))
        self.assertGreater(overlapping, 0, "no two trials ran at the same time")


if __name__ == "__main__":
    wh.main()
