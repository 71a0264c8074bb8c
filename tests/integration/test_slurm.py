"""`rung launch slurm` on a real Slurm (docs/workers.md, "On Slurm").

tests/slurm/cluster.sh starts Debian's slurmctld, two slurmd (node names
node1 and node2, both on this machine, CPUs only) and munged in the
test's folder, on loopback; a real rungd and `rung launch slurm` run
beside it, and every worker comes from the jobs the launcher submits.
Where Slurm cannot run (not root, packages missing), every test is
skipped with the reason cluster.sh gave. What is checked:

- jobs appear while trials wait, never more than --max-jobs at once, the
  trials complete, and the jobs end once their workers are idle;
- a job cancelled mid-trial (scancel: SIGTERM to its worker) gives its
  trial back; the launcher submits another job, and the trial completes
  there with every step reported exactly once;
- a gang trial of two nodes runs in one allocation of two nodes: both of
  its members' workers carry that job's label.

Run alone (as root): /usr/bin/python3 tests/integration/test_slurm.py --rungd build/bin/rungd
"""

import json
import os
import subprocess
import time

import rungd_harness as h
import worker_harness as wh

CLUSTER = os.path.join(wh.REPO_ROOT, "tests", "slurm", "cluster.sh")

TRAINABLE = """
import json, os, signal, sys, time

steps, delay = int(sys.argv[1]), float(sys.argv[2])
stop = False


def on_term(sig, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
start = int(os.environ.get("RUNG_RESUME_STEP", "0"))
rank = int(os.environ.get("RUNG_NODE_RANK", "0"))  # a gang's node 0 reports
for step in range(start + 1, steps + 1):
    time.sleep(delay)
    if stop:
        sys.exit(0)
    if rank == 0:
        print("@rung " + json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
"""


def rung_cli():
    path = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
    if not os.access(path, os.X_OK):
        raise AssertionError("rung not found: %s" % path)
    return path


class Slurm(wh.WorkerTestCase):
    cluster_dir = None
    skip_why = None

    @classmethod
    def setUpClass(cls):
        cls.cluster_dir = "/tmp/rung-slurm-%d" % os.getpid()
        r = subprocess.run(["bash", CLUSTER, "start", cls.cluster_dir, "2"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode == 3:
            cls.skip_why = "Slurm cannot run here: " + r.stderr.strip()
        elif r.returncode != 0:
            raise AssertionError("tests/slurm/cluster.sh start failed (%d): %s"
                                 % (r.returncode, r.stderr))
        else:
            print("# " + r.stdout.strip())

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["bash", CLUSTER, "stop", cls.cluster_dir], capture_output=True,
                       timeout=120)

    def setUp(self):
        if self.skip_why:
            self.skipTest(self.skip_why)
        super().setUp()
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.cluster_dir, "slurm.conf"))
        self.train = self.script("train.py", TRAINABLE)
        self.jobs_dir = os.path.join(self.tmp, "jobs")
        self.launcher = None
        self.addCleanup(self._stop_launcher)

    def _stop_launcher(self):
        if self.launcher is not None and self.launcher.poll() is None:
            self.launcher.terminate()
            self.launcher.wait(10)
        # What the launcher submitted goes with the test.
        subprocess.run(["scancel", "--quiet", "--full", "--signal=KILL", "--user=root"],
                       env=self.env, capture_output=True, timeout=30)
        h.wait_until(lambda: not self.squeue(), 30, "the jobs gone")

    def squeue(self):
        """[(job id, name, state, nodes)] of every job."""
        r = subprocess.run(["squeue", "-h", "-o", "%i|%j|%T|%D"], env=self.env,
                           capture_output=True, text=True, timeout=30, check=True)
        return [tuple(line.split("|")) for line in r.stdout.splitlines() if line]

    def launch(self, d, *extra):
        out = open(os.path.join(self.tmp, "launch.out"), "wb")
        self.launcher = subprocess.Popen(
            [rung_cli(), "--server", d.url, "launch", "slurm", "--interval-s", "1",
             "--exit-idle-s", "3", "--time", "10", "--dir", self.jobs_dir] + list(extra),
            stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True,
            preexec_fn=h._die_with_parent)
        out.close()

    def launch_log(self):
        with open(os.path.join(self.tmp, "launch.out")) as f:
            return f.read()

    def submit(self, d, n, steps, delay, **resources):
        spec = wh.command_spec([wh.PYTHON, self.train, str(steps), str(delay)], num_samples=n,
                               resources_per_trial=dict({"cpu": 1}, **resources))
        return d.create_experiment(spec)["id"]

    def test_jobs_come_while_trials_wait_and_end_when_idle(self):
        d = self.daemon("--lease-s", "3")
        eid = self.submit(d, n=3, steps=5, delay=0.3)
        self.launch(d, "--max-jobs", "2")
        most = 0
        t_end = time.monotonic() + 60
        while d.experiment(eid)["counts"]["completed"] < 3:
            most = max(most, len(self.squeue()))
            self.assertLess(time.monotonic(), t_end, "the trials did not complete:\n" +
                            self.launch_log())
            time.sleep(0.3)
        print("# at most %d jobs at once" % most)
        self.assertGreaterEqual(most, 1)
        self.assertLessEqual(most, 2)
        self.assertIn("submitted job", self.launch_log())
        t0 = time.monotonic()
        h.wait_until(lambda: not self.squeue(), 30, "the idle jobs to end")
        print("# the jobs ended %.1f s after the last trial (--exit-idle-s 3)"
              % (time.monotonic() - t0))
        workers = d.ok("GET", "/api/v1/workers")["items"]
        self.assertTrue(workers and all((w.get("labels") or {}).get("slurm_job") for w in workers),
                        workers)

    def test_a_cancelled_job_gives_its_trial_back(self):
        d = self.daemon("--lease-s", "3")
        eid = self.submit(d, n=1, steps=25, delay=0.2)
        self.launch(d, "--max-jobs", "1")
        t = h.wait_until(lambda: next((x for x in d.trials(eid)["items"]
                                       if x["state"] == "running" and (x.get("step") or 0) >= 2),
                                      None), 60, "the trial running on a job")
        job = next(j for j in self.squeue() if j[2] == "RUNNING")
        subprocess.run(["scancel", job[0]], env=self.env, check=True, timeout=30)
        t0 = time.monotonic()
        self.wait_trial(d, t["id"], lambda x: x["state"] == "preempted", 15,
                        "the trial given back")
        print("# given back %.2f s after scancel" % (time.monotonic() - t0))
        t = self.wait_trial(d, t["id"], lambda x: x["state"] == "completed", 90,
                            "the trial completed on another job")
        steps = [m["step"] for m in d.metrics_of(t["id"])]
        self.assertEqual(steps, list(range(1, 26)))
        self.assertEqual(t["preemptions"], 1)
        self.assertGreaterEqual(self.launch_log().count("submitted job"), 2, self.launch_log())

    def test_a_gang_runs_in_one_allocation(self):
        d = self.daemon("--lease-s", "3")
        eid = self.submit(d, n=1, steps=4, delay=0.3, nodes=2)
        self.launch(d, "--max-jobs", "1")
        t = h.wait_until(lambda: next((x for x in d.trials(eid)["items"]
                                       if x["state"] == "completed"), None), 90,
                         "the gang trial completed")
        jobs = [line for line in self.launch_log().splitlines() if "submitted job" in line]
        self.assertTrue(jobs and all("-n2)" in line for line in jobs), self.launch_log())
        members = (t.get("gang") or {}).get("members") or []
        self.assertEqual(len(members), 2, t)
        workers = {w["id"]: w for w in d.ok("GET", "/api/v1/workers?all=true")["items"]}
        labels = {(workers[m["worker_id"]].get("labels") or {}).get("slurm_job") for m in members}
        self.assertEqual(len(labels), 1, labels)
        self.assertIsNotNone(labels.pop())


class DryRun(wh.WorkerTestCase):
    """`rung launch slurm|k8s --dry-run --once` against a real rungd: the
    jobs one pass would start, printed, without Slurm or Kubernetes."""

    def run_cli(self, d, *args):
        return subprocess.run([rung_cli(), "--server", d.url, "launch"] + list(args),
                              capture_output=True, text=True, timeout=30)

    def test_one_object_per_waiting_trial_by_shape(self):
        d = self.daemon()
        argv = [wh.PYTHON, "-c", "pass"]
        d.create_experiment(wh.command_spec(argv, num_samples=3, resources_per_trial={"cpu": 2}))
        d.create_experiment(wh.command_spec(argv, num_samples=1,
                                            resources_per_trial={"cpu": 1, "gpu": 1, "nodes": 2}))
        h.wait_until(lambda: sum(x["counts"]["pending"]
                                 for x in d.ok("GET", "/api/v1/experiments")["items"]) == 4,
                     10, "4 pending trials")
        r = self.run_cli(d, "k8s", "--dry-run", "--once", "--image", "registry.lan/rw:1",
                         "--namespace", "ml")
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout[r.stdout.index("{"):]
        lists, dec, at = [], json.JSONDecoder(), 0
        while at < len(text):
            doc, at = dec.raw_decode(text, at)
            lists.append(doc)
            while at < len(text) and text[at].isspace():
                at += 1
        kinds = sorted(tuple(o["kind"] for o in x["items"]) for x in lists)
        self.assertEqual(kinds, [("Job",), ("Job",), ("Job",), ("Service", "Job")])
        gang = next(x for x in lists if len(x["items"]) == 2)["items"][1]
        self.assertEqual((gang["spec"]["completions"], gang["metadata"]["namespace"]), (2, "ml"))
        for x in lists:
            c = x["items"][-1]["spec"]["template"]["spec"]["containers"][0]
            self.assertEqual(c["image"], "registry.lan/rw:1")
            self.assertEqual(dict((e["name"], e.get("value")) for e in c["env"])["RUNG_SERVER"],
                             d.url)
        r = self.run_cli(d, "slurm", "--dry-run", "--once", "--partition", "gpu", "--worker",
                         "/opt/rung-worker", "--dir", "/scratch/rung")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("#SBATCH --job-name=rung-g0-c2-n1"), 3)
        self.assertEqual(r.stdout.count("#SBATCH --job-name=rung-g1-c1-n2"), 1)
        self.assertEqual(r.stdout.count("#SBATCH --partition=gpu"), 4)
        # The Python client's launcher prints the same scripts.
        py = subprocess.run([wh.PYTHON, "-m", "rung", "--server", d.url, "launch", "slurm",
                             "--dry-run", "--once", "--partition", "gpu", "--worker",
                             "/opt/rung-worker", "--dir", "/scratch/rung"],
                            capture_output=True, text=True, timeout=30,
                            env=dict(os.environ, PYTHONPATH=os.path.join(wh.REPO_ROOT, "python")))
        self.assertEqual(py.returncode, 0, py.stderr)
        self.assertEqual(py.stdout, r.stdout[r.stdout.index("\n") + 1:])
        # What cannot be right is refused, naming it.
        for args, phrase in ((["k8s", "--once"], "--image"),
                             (["slurm", "--partition", "a b"], "--partition"),
                             (["slurm", "--name", "Rung_1"], "--name"),
                             (["nomad"], "slurm or k8s")):
            r = self.run_cli(d, *args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn(phrase, r.stderr)


KUBECTL = """#!/bin/sh
# A stand-in kubectl: `get jobs` answers the Jobs of $DIR/jobs.json, `create
# -f -` and `delete job` are written down in $DIR.
DIR=$(dirname "$0")
echo "$@" >>"$DIR/calls"
case "$1" in
get) cat "$DIR/jobs.json" ;;
create) n=$(ls "$DIR" | grep -c '^created-'); cat >"$DIR/created-$n.json"; echo created ;;
delete) echo deleted ;;
*) exit 1 ;;
esac
"""


class LaunchK8s(wh.WorkerTestCase):
    """`rung launch k8s --once` with a stand-in kubectl: the Jobs it lists
    count (a ready one runs, one not ready is queued), it creates what
    waits beyond them, and deletes the queued ones nothing waits for."""

    def test_create_and_delete_through_kubectl(self):
        bin_dir = os.path.join(self.tmp, "kbin")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "kubectl"), "w") as f:
            f.write(KUBECTL)
        os.chmod(os.path.join(bin_dir, "kubectl"), 0o755)
        def job(name, ready):
            return {"metadata": {"name": name, "labels": {"rung.dev/launcher": "rung",
                                                          "rung.dev/shape": "g0-c2-n1"}},
                    "status": {"active": 1, "ready": ready}}
        with open(os.path.join(bin_dir, "jobs.json"), "w") as f:
            json.dump({"items": [job("rung-g0-c2-n1-1-1", 1), job("rung-g0-c2-n1-1-2", 0),
                                 {"metadata": {"name": "done"}, "status": {"succeeded": 1}}]}, f)
        env = dict(os.environ, PATH=bin_dir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        d = self.daemon()
        eid = d.create_experiment(wh.command_spec([wh.PYTHON, "-c", "pass"], num_samples=4,
                                                  resources_per_trial={"cpu": 2}))["id"]
        h.wait_until(lambda: d.experiment(eid)["counts"]["pending"] == 4, 10, "4 pending")
        cmd = [rung_cli(), "--server", d.url, "launch", "k8s", "--once", "--image", "img:1",
               "--namespace", "ml"]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # 4 wait; one Job queued covers one of them: 3 more.
        created = sorted(n for n in os.listdir(bin_dir) if n.startswith("created-"))
        self.assertEqual(len(created), 3, r.stdout)
        self.assertEqual(r.stdout.count("created Job rung-g0-c2-n1-"), 3)
        with open(os.path.join(bin_dir, created[0])) as f:
            objs = json.load(f)
        self.assertEqual([o["kind"] for o in objs["items"]], ["Job"])
        with open(os.path.join(bin_dir, "calls")) as f:
            calls = f.read()
        self.assertIn("get jobs -n ml -l rung.dev/launcher=rung -o json", calls)
        # Nothing waits any more: the queued Job goes, the ready one stays.
        d.ok("POST", "/api/v1/experiments/%d/cancel" % eid)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(bin_dir, "calls")) as f:
            calls = f.read()
        self.assertIn("delete job -n ml rung-g0-c2-n1-1-2 --wait=false", calls)
        self.assertNotIn("rung-g0-c2-n1-1-1 --wait", calls)
        self.assertEqual(len([n for n in os.listdir(bin_dir) if n.startswith("created-")]), 3)


if __name__ == "__main__":
    wh.main()
