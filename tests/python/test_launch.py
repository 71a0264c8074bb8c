"""rung._cli.launch, `python3 -m rung launch`'s decisions, against the C
client's: the plan on the cases of tests/unit/test_slurm.c, and the job
scripts and Kubernetes objects of the three shapes byte for byte equal to
the golden files that test_slurm keeps equal to cli/slurm.c's and
cli/k8s.c's."""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.join(ROOT, "python"))

from rung._cli import launch  # noqa: E402


def golden(*path):
    with open(os.path.join(DATA, *path), encoding="utf-8") as f:
        return f.read()


class LaunchTest(unittest.TestCase):
    def test_waiting_by_shape(self):
        def x(state, kind, pending, preempted, running, cap, g, c, k):
            return {"state": state, "trainable": {"type": kind},
                    "counts": {"pending": pending, "preempted": preempted, "running": running},
                    "max_concurrent_trials": cap,
                    "resources_per_trial": {"gpu": g, "cpu": c, "nodes": k}}
        w = launch.waiting([x("running", "command", 3, 1, 0, 0, 1, 4, 1),
                            x("running", "builtin", 2, 0, 0, 0, 1, 4, 1),
                            x("running", "command", 50, 0, 2, 3, 0, 1, 1),
                            x("running", "command", 1, 0, 0, 0, 2, 8, 2),
                            x("running", "external", 9, 0, 0, 0, 0, 1, 1),
                            x("paused", "command", 9, 0, 0, 0, 0, 1, 1),
                            x("running", "command", 7, 0, 3, 3, 0, 2, 1)])
        self.assertEqual(w, {(1, 4, 1): 6, (0, 1, 1): 1, (2, 8, 2): 1})

    def test_names(self):
        self.assertEqual(launch.job_name("rung", (2, 16, 4)), "rung-g2-c16-n4")
        self.assertEqual(launch.parse_job_name("rung", "rung-g2-c16-n4"), (2, 16, 4))
        for other in ("rungx-g2-c16-n4", "rung-g2-c16-n4x", "rung-g02-c1-n1", "rung-g0-c0-n1"):
            self.assertIsNone(launch.parse_job_name("rung", other), other)

    def test_plan(self):
        a, b, c = (0, 1, 1), (1, 4, 1), (0, 2, 2)
        submit, cancel = launch.plan({a: 5, b: 2}, {a: (2, 0), c: (1, 1)}, 6)
        self.assertEqual((submit, cancel), ({a: 3, b: 0}, {a: 0, c: 0}))
        submit, _ = launch.plan({a: 5, b: 2}, {a: (2, 0), c: (1, 1)}, 100)
        self.assertEqual(submit, {a: 3, b: 2})
        _, cancel = launch.plan({}, {a: (4, 1), c: (2, 1)}, 100)
        self.assertEqual(cancel, {a: 3, c: 1})

    def test_slurm_scripts_equal_the_c_clients(self):
        self.assertEqual(launch.slurm_script((0, 1, 1), "rung-g0-c1-n1", "https://head.lan:8443",
                                             "/usr/bin/rung-worker", "/home/ana/rung-slurm", 120,
                                             "01:00:00"),
                         golden("slurm", "one_node.sbatch"))
        self.assertEqual(launch.slurm_script(
            (4, 32, 1), "rung-g4-c32-n1", "https://head.lan:8443,https://standby.lan:8443",
            "/opt/rung/bin/rung-worker", "/scratch/ana/rung", 300, "04:00:00", "gpu", "ml-team",
            "/home/ana/.rung/worker token's file", ("--qos=short", "--constraint=a100")),
            golden("slurm", "multi_gpu.sbatch"))
        self.assertEqual(launch.slurm_script(
            (2, 16, 4), "rung-g2-c16-n4", "https://head.lan:8443", "/usr/bin/rung-worker",
            "/scratch/ana/rung", 120, "12:00:00", "gpu", None, "/home/ana/.rung/worker-token"),
            golden("slurm", "gang.sbatch"))

    def test_k8s_objects_equal_the_c_clients(self):
        common = dict(namespace="ml", image="registry.lan/rung-worker:1.0",
                      server="http://rungd.ml.svc:8080", prefix="rung", exit_idle_s=120,
                      grace_s=60)
        cases = [((0, 1, 1), "rung-g0-c1-n1-1796000000-1", None, "one_node.json"),
                 ((4, 32, 1), "rung-g4-c32-n1-1796000000-2", "rung-worker-token",
                  "multi_gpu.json"),
                 ((2, 16, 4), "rung-g2-c16-n4-1796000000-3", "rung-worker-token", "gang.json")]
        for shape, name, secret, path in cases:
            with self.subTest(path=path):
                text = launch.k8s_text(launch.k8s_objects(shape, name, token_secret=secret,
                                                          **common))
                self.assertEqual(text + "\n", golden("k8s", path))


if __name__ == "__main__":
    unittest.main()
