"""scripts/deps.sh, demo.sh and test.sh: the demo installs what building and
running Rung need, and nothing that only the tests use (PyTorch, Chromium,
Optuna, pandas, clang); the test command installs the rest. Both stay
idempotent: deps.sh asks apt only for what is missing (`--list` shows the
set without installing)."""

from __future__ import annotations

import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")

ONLY_TESTS = {"python3-torch", "python3-pandas", "python3-optuna", "chromium", "clang",
              "libclang-rt-14-dev", "python3-prometheus-client"}
DEMO = {"build-essential", "cmake", "libmicrohttpd-dev", "libsqlite3-dev", "libopenblas-dev",
        "libyaml-dev", "libarchive-dev", "dataset-fashion-mnist", "nodejs"}


def deps(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", os.path.join(SCRIPTS, "deps.sh"), *args],
                          capture_output=True, text=True, timeout=30)


def read(name: str) -> str:
    with open(os.path.join(SCRIPTS, name), encoding="utf-8") as f:
        return f.read()


class DepsTest(unittest.TestCase):

    def test_the_demo_installs_no_test_packages(self) -> None:
        out = deps("--list")
        self.assertEqual(out.returncode, 0, out.stderr)
        demo = set(out.stdout.split())
        self.assertEqual(demo & ONLY_TESTS, set())
        self.assertLessEqual(DEMO, demo)
        tests = deps("--tests", "--list")
        self.assertEqual(tests.returncode, 0, tests.stderr)
        everything = set(tests.stdout.split())
        self.assertLessEqual(demo | ONLY_TESTS, everything)

    def test_who_calls_which(self) -> None:
        calls = {name: re.findall(r"^\s*bash scripts/deps\.sh(.*)$", read(name), re.M)
                 for name in ("demo.sh", "test.sh")}
        self.assertEqual(calls, {"demo.sh": [""], "test.sh": [" --tests"]})
        # The demo's npm packages: uPlot only, not the browser tests' playwright.
        self.assertRegex(read("demo.sh"), r"npm ci --omit=dev")

    def test_bad_argument_exits_2(self) -> None:
        out = deps("--test")
        self.assertEqual(out.returncode, 2)
        self.assertIn("usage", out.stderr)


if __name__ == "__main__":
    unittest.main()
