"""bench/sampler_pair.py: the statistics that judge a searcher's change.

The p-values are checked against values worked out by hand (the sign test
is a binomial sum) and against a case small enough to enumerate (Mann-Whitney
U); the command is run on two small files as a user would.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "bench", "sampler_pair.py")

spec = importlib.util.spec_from_file_location("sampler_pair", SCRIPT)
sampler_pair = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sampler_pair)


class SignTest(unittest.TestCase):
    def test_hand_values(self):
        # 8 against 2: 2 * (C(10,0) + C(10,1) + C(10,2)) / 2^10 = 112/1024.
        self.assertAlmostEqual(sampler_pair.sign_test(8, 2), 112 / 1024, places=12)
        self.assertAlmostEqual(sampler_pair.sign_test(2, 8), 112 / 1024, places=12)
        self.assertEqual(sampler_pair.sign_test(5, 5), 1.0)
        self.assertEqual(sampler_pair.sign_test(0, 0), 1.0)
        # 20 of 20 one way: 2 / 2^20.
        self.assertAlmostEqual(sampler_pair.sign_test(20, 0), 2 / 2**20, places=15)


class MannWhitney(unittest.TestCase):
    def test_probability_of_below(self):
        # Every b below every a: P(b < a) = 1; the reverse 0; equal sets 0.5.
        self.assertEqual(sampler_pair.mann_whitney([5, 6, 7], [1, 2, 3])[1], 1.0)
        self.assertEqual(sampler_pair.mann_whitney([1, 2, 3], [5, 6, 7])[1], 0.0)
        self.assertEqual(sampler_pair.mann_whitney([1, 2, 3], [1, 2, 3])[1], 0.5)

    def test_p_value_normal_approximation(self):
        # 20 against 20, fully separated: U = 0, mean 200, variance
        # 20 * 20 * 41 / 12, z = (200 - 0.5) / sqrt(1366.67) = 5.3965.
        a = list(range(20, 40))
        b = list(range(20))
        p, below = sampler_pair.mann_whitney(a, b)
        z = (200 - 0.5) / math.sqrt(20 * 20 * 41 / 12)
        self.assertAlmostEqual(p, math.erfc(z / math.sqrt(2)), places=12)
        self.assertEqual(below, 1.0)
        # Interleaved halves: no evidence either way.
        p, below = sampler_pair.mann_whitney(list(range(0, 40, 2)), list(range(1, 40, 2)))
        self.assertGreater(p, 0.5)
        self.assertAlmostEqual(below, 190 / 400)

    def test_ties_lower_the_variance(self):
        a = [1.0] * 10 + [2.0] * 10
        b = [1.0] * 15 + [2.0] * 5
        p_ties, _ = sampler_pair.mann_whitney(a, b)
        self.assertTrue(0.0 < p_ties < 1.0)
        # Without the tie correction the variance is larger, the p larger.
        n = 40
        u_b = sum(1 for x in a for y in b if y > x) + 0.5 * sum(1 for x in a for y in b if y == x)
        z_plain = (abs(u_b - 200) - 0.5) / math.sqrt(20 * 20 * (n + 1) / 12)
        self.assertLess(p_ties, math.erfc(z_plain / math.sqrt(2)))


class Command(unittest.TestCase):
    def run_pair(self, a_rows, b_rows, *extra):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name, rows in (("a", a_rows), ("b", b_rows)):
                p = os.path.join(d, name + ".json")
                with open(p, "w", encoding="utf-8") as f:
                    f.write("# a comment line, as sampler_quality prints\n")
                    for r in rows:
                        f.write(json.dumps(r) + "\n")
                paths.append(p)
            return subprocess.run([sys.executable, SCRIPT, *paths, *extra],
                                  capture_output=True, text=True, timeout=60)

    def row(self, function, label, regrets):
        return {"bench": "sampler_quality", "function": function, "label": label,
                "regret_100": regrets}

    def test_paired_counts_each_seed(self):
        a = [self.row("branin", "rung-bayes", [1.0, 2.0, 3.0, 4.0])]
        b = [self.row("branin", "rung-bayes", [0.5, 1.0, 6.0, 4.0])]
        r = self.run_pair(a, b, "--at", "100")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("B better on 2 of 4 seeds, worse on 1", r.stdout)
        # (0.5 * 0.5 * 2 * 1) ^ (1/4) = 0.5 ^ (1/4)
        self.assertIn(f"geometric mean B/A {0.5 ** 0.25:.3g}", r.stdout)

    def test_unpaired_pairs_by_function(self):
        a = [self.row("levy4", "rung-bayes", [1.0, 2.0, 3.0])]
        b = [self.row("levy4", "sklearn-gp", [4.0, 5.0, 6.0]),
             self.row("levy4", "optuna-tpe", [0.1, 0.2, 0.3]),
             self.row("branin", "optuna-tpe", [0.1, 0.2, 0.3])]
        r = self.run_pair(a, b, "--unpaired", "--at", "100")
        self.assertEqual(r.returncode, 0, r.stderr)
        # Each of B's tools on levy4, named; branin is in A only.
        self.assertIn("rung-bayes (3 seeds) against sklearn-gp (3); P(B < A) 0.00", r.stdout)
        self.assertIn("rung-bayes (3 seeds) against optuna-tpe (3); P(B < A) 1.00", r.stdout)
        self.assertNotIn("branin", r.stdout)

    def test_nothing_in_common_is_an_error(self):
        r = self.run_pair([self.row("branin", "x", [1.0])], [self.row("levy4", "x", [1.0])])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no function", r.stderr)

    def test_bad_checkpoints_named(self):
        r = self.run_pair([self.row("branin", "x", [1.0])], [self.row("branin", "x", [1.0])],
                          "--at", "fifty")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--at", r.stderr)


if __name__ == "__main__":
    unittest.main()
