"""Integration test of nested and conditional search spaces: real workers
run the tree-structured function of Jenatton et al. (2017)
(examples/trainables/jenatton.py) under the bayes searcher on the
conditional space of examples/jenatton-bayes.json, to completion. Every
config holds exactly the parameters of the branches it took, flat with
dotted keys; the CSV has a column for every parameter path of every branch,
empty where a trial's branch lacks it; a point to evaluate names a branch."""

import csv
import io

import worker_harness as wh

JENATTON_MIN = 0.1

# The active keys of each of the four leaves of the tree.
LEAVES = [
    {"tree.x1", "tree.r8", "tree.left.x2", "tree.left.x4"},
    {"tree.x1", "tree.r8", "tree.left.x2", "tree.left.x5"},
    {"tree.x1", "tree.r9", "tree.right.x3", "tree.right.x6"},
    {"tree.x1", "tree.r9", "tree.right.x3", "tree.right.x7"},
]
COLUMNS = ["tree.x1", "tree.r8", "tree.left.x2", "tree.left.x4", "tree.left.x5", "tree.r9",
           "tree.right.x3", "tree.right.x6", "tree.right.x7"]


class Conditional(wh.WorkerTestCase):

    def test_jenatton_bayes_to_completion(self):
        d = self.daemon()
        s = wh.example_spec("jenatton-bayes.json", num_samples=30,
                            points_to_evaluate=[{"tree.right.x3": 1}])
        eid = d.create_experiment(s)["id"]
        workers = [self.worker(d, name, cpu_slots=2, once=True) for name in ("ca", "cb")]
        codes = self.wait_workers_exit(workers, 150)
        self.assertEqual(codes, [0, 0], self.explain(d, *workers))

        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, *workers))
        self.assertEqual(exp["counts"]["completed"], 30, exp["counts"])
        trials = d.all_trials(eid)
        leaves = set()
        for t in trials:
            keys = set(t["config"])
            self.assertIn(keys, LEAVES, t["config"])
            leaves.add(LEAVES.index(keys))
        self.assertEqual(len(leaves), 4, "every leaf of the tree was tried")
        first = next(t for t in trials if t["number"] == 0)
        self.assertEqual(first["config"]["tree.right.x3"], 1, first["config"])
        self.assertIn("tree.right.x7", first["config"])
        # The GP finds the best leaf and comes near its minimum.
        self.assertLessEqual(exp["best"]["value"] - JENATTON_MIN, 0.25, exp["best"])

        r = d.request("GET", "/api/v1/experiments/%d/trials.csv" % eid)
        self.assertEqual(r.status, 200)
        rows = list(csv.reader(io.StringIO(r.body.decode())))
        self.assertEqual(rows[0][3:3 + len(COLUMNS)], COLUMNS)
        by_number = {t["number"]: t for t in trials}
        for row in rows[1:]:
            config = by_number[int(row[1])]["config"]
            for name, cell in zip(COLUMNS, row[3:]):
                self.assertEqual(cell == "", name not in config, (name, row))


if __name__ == "__main__":
    wh.main()
