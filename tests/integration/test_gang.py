"""Integration tests of gangs: one trial on several real rung-workers at once.

A real rungd and real `rung-worker --gpus none --cpu-slots 1` processes on
this machine (every worker advertises 127.0.0.1: the route to a loopback
server) run trials of experiments with "resources_per_trial": {"nodes": 2}
(docs/api.md, "Gangs"; docs/workers.md):

- a 2-node trial's programs get their places (RANK, WORLD_SIZE,
  MASTER_ADDR, MASTER_PORT, ... and the argv placeholders {node_rank},
  {nnodes}, {master_addr}, {master_port}), rank 0's port is free for it to
  listen on, and node 1's `@rung` lines are not reports but warnings
  ("only node 0 reports (this is node 1)"); no PyTorch needed;
- examples/pytorch-ddp/train.py on two workers over gloo reports the losses
  of the same trial on one worker within 1e-5;
- kill -9 of one member's worker: the other member's program is ended too,
  the trial is retried as a whole (attempt 2) on two live workers and
  completes;
- a gang experiment and a 1-node experiment sharing three workers both
  complete: the gang forms, the 1-node trials fill the gaps, nothing
  deadlocks.

The PyTorch tests are skipped, with the reason, when the Python running them
cannot import torch (Debian's python3-torch; scripts/deps.sh --tests installs it).
"""

import json
import math
import os
import re
import subprocess
import time

import rungd_harness as h
import worker_harness as wh

DDP = os.path.join(wh.EXAMPLES, "pytorch-ddp")
TRAIN = os.path.join(DDP, "train.py")
# What the 1-node and 2-node runs must agree to (examples/pytorch-ddp/README.md).
TOLERANCE = 1e-5
# Small enough for a few seconds per trial on one core, most of it torch's import.
SMALL = {"train_samples": 1024, "val_samples": 500, "epochs": 3, "hidden": 32}


def torch_missing():
    """Why torch cannot be used by this interpreter, or None when it can."""
    try:
        r = subprocess.run([wh.PYTHON, "-c", "import torch.distributed as d; "
                            "assert d.is_available() and d.is_gloo_available()"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "%s -c 'import torch': %s" % (wh.PYTHON, e)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        return ("%s cannot import torch with gloo (%s): install Debian's python3-torch "
                "(scripts/deps.sh --tests does)" % (wh.PYTHON, last))
    return None


_SKIP = None


def setUpModule():
    global _SKIP
    _SKIP = torch_missing()


def ddp_spec(nodes, config, **over):
    """examples/pytorch-ddp/gang.json with a fixed config (constants only)
    on `nodes` nodes, run by the tests' interpreter."""
    with open(os.path.join(DDP, "gang.json")) as f:
        s = json.load(f)
    s["search_space"] = dict(config)
    s["num_samples"] = 1
    s["resources_per_trial"] = {"cpu": 1, "nodes": nodes}
    t = s["trainable"]
    t["argv"][0] = wh.PYTHON
    t["cwd"] = wh.REPO_ROOT
    s.update(over)
    return s


def trial_programs(tag):
    """{(trial id, node rank): pid} of the trainables the test's workers run
    (found by the tag in their environment, as worker_harness does)."""
    out = {}
    for pid in wh.tagged_pids(tag):
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except OSError:
            continue
        if b"RUNG_TRIAL_ID" in env and wh.pid_alive(pid):
            rank = int(env.get(b"RUNG_NODE_RANK", b"0"))
            out[(int(env[b"RUNG_TRIAL_ID"]), rank)] = pid
    return out


class GangTestCase(wh.WorkerTestCase):

    def only_trial(self, d, eid):
        trials = d.all_trials(eid)
        self.assertEqual(len(trials), 1, trials)
        return trials[0]

    def wait_reporting(self, d, eid, timeout):
        """The experiment's one trial once it runs and node 0 has reported."""
        def check():
            trials = d.all_trials(eid)
            t = trials[0] if trials else None
            return t if t and t["state"] == "running" and (t["step"] or 0) >= 1 else None
        return h.wait_until(check, timeout, "the gang trial to report")

    def wait_member_finished(self, worker, tid, attempt=1, timeout=30):
        """Waits until a member's worker has sent its finish of the trial
        (its log says so): node 0's finish ends the trial, and another
        member's program, folder and warnings may still be on their way.
        A member still running when node 0's finish ended the trial is
        ended by its worker, which then logs "ended here" (trial_send.c):
        a slow machine makes that the usual case."""
        done = re.compile(r"trial %d \(attempt %d\) (finished|ended here): " % (tid, attempt))
        h.wait_until(lambda: done.search(worker.stderr_text()), timeout,
                     "worker %s to finish trial %d" % (worker.name, tid))

    def members(self, trial):
        """{rank: worker id} of a trial's gang."""
        gang = trial.get("gang")
        self.assertIsInstance(gang, dict, trial)
        return {m["rank"]: m["worker_id"] for m in gang["members"]}


class GangWithoutTorch(GangTestCase):
    """What each member's program gets, with a plain Python program."""

    def test_places_placeholders_and_node_1_reports_as_warnings(self):
        d = self.daemon()
        a = self.worker(d, "a")
        b = self.worker(d, "b")
        prog = self.script("member.py", """
            import json, os, socket, sys, time
            keys = ["RUNG_NODE_RANK", "RUNG_NNODES", "MASTER_ADDR", "MASTER_PORT", "NNODES",
                    "NODE_RANK", "WORLD_SIZE", "RANK", "LOCAL_RANK"]
            seen = {"env": {k: os.environ.get(k) for k in keys}, "argv": sys.argv[1:]}
            rank = int(os.environ["RANK"])
            port = int(os.environ["MASTER_PORT"])
            if rank == 0:
                # The port rung-worker offered is free: node 0 listens on it.
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.bind(("0.0.0.0", port))
                s.listen(1)
                seen["listened"] = True
            with open(os.path.join(os.environ["RUNG_TRIAL_DIR"], "seen.json"), "w") as f:
                json.dump(seen, f)
            for step in (1, 2, 3):
                # Every node prints reports; only node 0's count.
                print("@rung " + json.dumps({"step": step, "loss": 100 * rank + step}),
                      flush=True)
            # Node 0's end is the trial's, and rungd then stops node 1: as in
            # any distributed program, node 0 ends only once node 1 has done
            # its part (it connects when it has), both bounded.
            if rank == 0:
                s.settimeout(30)
                s.accept()[0].close()
                s.close()
            else:
                deadline = time.monotonic() + 30
                while True:
                    try:
                        socket.create_connection((os.environ["MASTER_ADDR"], port), 5).close()
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.05)
            """)
        spec = wh.command_spec([wh.PYTHON, prog, "--rank={node_rank}", "--n={nnodes}",
                                "--at={master_addr}:{master_port}", "--x={x}"],
                               search_space={"x": {"type": "choice", "values": [0.25]}},
                               resources_per_trial={"cpu": 1, "nodes": 2})
        eid = d.create_experiment(spec)["id"]
        exp = d.wait_experiment(eid, lambda e: e["state"] in ("completed", "failed"), 60,
                                "the gang experiment to end")
        why = self.explain(d, a, b)
        self.assertEqual(exp["state"], "completed", why)
        t = self.only_trial(d, eid)
        self.assertEqual(t["state"], "completed", why)
        self.assertEqual(t["attempt"], 1, t)
        ids = self.worker_ids(d)
        members = self.members(t)
        self.assertEqual(sorted(members.values()), sorted([ids["a"], ids["b"]]), t)
        self.assertEqual(t["gang"]["master_addr"], "127.0.0.1", t)
        port = t["gang"]["master_port"]
        # Only node 0's reports: steps 1..3 with its values.
        self.assertEqual([(m["step"], m["metrics"]["loss"]) for m in d.metrics_of(t["id"])],
                         [(1, 1), (2, 2), (3, 3)])
        name_of = {ids["a"]: a, ids["b"]: b}
        # Node 1's folder and warnings are complete once its worker finished.
        self.wait_member_finished(name_of[members[1]], t["id"])
        for rank, wid in members.items():
            folder = os.path.join(name_of[wid].workdir, "trials", str(t["id"]))
            with open(os.path.join(folder, "seen.json")) as f:
                seen = json.load(f)
            self.assertEqual(seen["env"], {
                "RUNG_NODE_RANK": str(rank), "RUNG_NNODES": "2", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port), "NNODES": "2", "NODE_RANK": str(rank),
                "WORLD_SIZE": "2", "RANK": str(rank), "LOCAL_RANK": "0"}, why)
            self.assertEqual(seen["argv"], ["--rank=%d" % rank, "--n=2",
                                            "--at=127.0.0.1:%d" % port,
                                            "--x=0.25"])
            self.assertEqual(seen.get("listened"), True if rank == 0 else None)
            with open(os.path.join(folder, "stdout.log")) as f:
                self.assertIn("node %d of 2 (master 127.0.0.1:%d)" % (rank, port),
                              f.readline())
        # Node 1's three report lines: counted as the trial's warnings (its
        # worker sends them with its finish, which may come after node 0's
        # ended the trial; rungd adds them all the same).
        t = d.trial(t["id"])
        warn = t["warnings"]
        self.assertEqual(warn["count"], 3, t)
        self.assertEqual([w["why"] for w in warn["last"]],
                         ["only node 0 reports (this is node 1)"] * 3)
        self.assertEqual(json.loads(warn["last"][2]["line"][len("@rung "):]),
                         {"step": 3, "loss": 103})

    def test_one_node_trial_gets_placeholders_but_no_gang_environment(self):
        d = self.daemon()
        w = self.worker(d, "solo")
        prog = self.script("solo.py", """
            import json, os, socket, sys
            port = int(sys.argv[4])
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("0.0.0.0", port))  # free for the program
            s.close()
            gang = [k for k in ("RUNG_NODE_RANK", "RUNG_NNODES", "WORLD_SIZE", "RANK")
                    if k in os.environ]
            argv_ok = sys.argv[1:4] == ["0", "1", "127.0.0.1"]
            print("@rung " + json.dumps({"loss": 1, "argv_ok": int(argv_ok),
                                         "gang_vars": len(gang)}), flush=True)
            """)
        spec = wh.command_spec([wh.PYTHON, prog, "{node_rank}", "{nnodes}", "{master_addr}",
                                "{master_port}"])
        eid = d.create_experiment(spec)["id"]
        exp = d.wait_experiment(eid, lambda e: e["state"] in ("completed", "failed"), 30,
                                "the 1-node experiment to end")
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        t = self.only_trial(d, eid)
        self.assertIsNone(t.get("gang"), t)
        m = d.metrics_of(t["id"])[0]["metrics"]
        self.assertEqual((m["argv_ok"], m["gang_vars"]), (1, 0), m)

    def test_lost_member_stops_the_other_and_the_trial_is_retried(self):
        # Programs that never talk to each other: only rungd can end the
        # survivor, through its worker's heartbeat.
        d = self.daemon("--lease-s", "3")
        a = self.worker(d, "a")
        b = self.worker(d, "b")
        prog = self.script("sleeper.py", """
            import json, os, time
            if os.environ["RANK"] == "0":
                print("@rung " + json.dumps({"loss": 1}), flush=True)
            if os.environ["RUNG_ATTEMPT"] == "1":
                time.sleep(120)
            """)
        spec = wh.command_spec([wh.PYTHON, prog], max_failures=2,
                               resources_per_trial={"cpu": 1, "nodes": 2})
        eid = d.create_experiment(spec)["id"]
        t = self.wait_reporting(d, eid, 30)
        tid = t["id"]
        programs = h.wait_until(lambda: (lambda p: p if (tid, 0) in p and (tid, 1) in p else None)(
            trial_programs(self.tag)), 30, "both members' programs")
        ids = self.worker_ids(d)
        by_id = {ids["a"]: a, ids["b"]: b}
        members = self.members(t)
        victim, survivor = by_id[members[1]], by_id[members[0]]
        t_kill = time.monotonic()
        victim.kill9()
        h.wait_until(lambda: not wh.pid_alive(programs[(tid, 1)]), 10,
                     "the lost worker's program to die with it")
        h.wait_until(lambda: not wh.pid_alive(programs[(tid, 0)]), 20,
                     "node 0's program to be stopped")
        stopped_s = time.monotonic() - t_kill
        self.assertIn("trial %d: the server asks to stop it" % tid, survivor.stderr_text())
        c = self.worker(d, "c")
        t = h.wait_until(lambda: (lambda t: t if t["state"] in ("completed", "failed")
                                  else None)(d.trial(tid)), 60, "the retried trial to end")
        self.assertEqual(t["state"], "completed", self.explain(d, a, b, c))
        self.assertEqual(t["attempt"], 2, t)
        ids = self.worker_ids(d)
        self.assertEqual(sorted(self.members(t).values()), sorted([ids[survivor.name], ids["c"]]))
        print("\nkill -9 of node 1's worker (lease 3 s): node 0's program stopped by rungd "
              "after %.1f s; attempt 2 completed" % stopped_s)

    def test_parameter_named_like_a_placeholder_is_refused(self):
        d = self.daemon()
        spec = wh.command_spec([wh.PYTHON, "-c", "print('never')", "{nnodes}"],
                               search_space={"nnodes": {"type": "choice", "values": [2]}})
        status, doc = d.call("POST", "/api/v1/experiments", spec)
        self.assertEqual(status, 400, doc)
        self.assertEqual(doc["error"]["field"], "trainable.argv[3]", doc)
        self.assertIn("rename the parameter", doc["error"]["message"])


class GangDdp(GangTestCase):
    """examples/pytorch-ddp/train.py as a gang, over gloo."""

    def setUp(self):
        if _SKIP:
            self.skipTest(_SKIP)
        super().setUp()

    def run_alone(self, d, nodes, config, timeout=180):
        eid = d.create_experiment(ddp_spec(nodes, config))["id"]
        t0 = time.monotonic()
        exp = d.wait_experiment(eid, lambda e: e["state"] in ("completed", "failed"), timeout,
                                "the %d-node experiment to end" % nodes)
        wall = time.monotonic() - t0
        self.assertEqual(exp["state"], "completed", self.explain(d, *self._workers))
        t = self.only_trial(d, eid)
        return t, d.metrics_of(t["id"]), wall

    def test_two_nodes_report_the_one_node_losses(self):
        d = self.daemon()
        a = self.worker(d, "a")
        b = self.worker(d, "b")
        config = dict(SMALL, seed=7, lr=0.05, momentum=0.9)
        one, one_m, one_s = self.run_alone(d, 1, config)
        two, two_m, two_s = self.run_alone(d, 2, config)
        why = self.explain(d, a, b)
        self.assertIsNone(one.get("gang"), one)
        members = self.members(two)
        self.assertEqual(len(set(members.values())), 2, two)
        self.assertEqual([m["step"] for m in one_m], [1, 2, 3])
        self.assertEqual([m["step"] for m in two_m], [1, 2, 3], why)
        worst = 0.0
        for p, q in zip(one_m, two_m):
            for key in ("val_loss", "train_loss", "val_acc"):
                x, y = p["metrics"][key], q["metrics"][key]
                self.assertTrue(math.isfinite(x) and math.isfinite(y), (p, q))
                self.assertLessEqual(abs(x - y), TOLERANCE, (key, p, q))
                worst = max(worst, abs(x - y))
        # Node 1 met node 0 through the worker's environment, over gloo; its
        # log and warnings are complete once its worker finished.
        ids = self.worker_ids(d)
        node1 = {ids["a"]: a, ids["b"]: b}[members[1]]
        self.wait_member_finished(node1, two["id"])
        self.assertEqual(d.trial(two["id"])["warnings"]["count"], 0, two)
        with open(os.path.join(node1.workdir, "trials", str(two["id"]), "stdout.log")) as f:
            self.assertIn("node 1 of 2: joined 127.0.0.1:%d (gloo)" % two["gang"]["master_port"],
                          f.read())
        print("\n1 node: val_loss %.10f in %.1f s; 2 nodes: val_loss %.10f in %.1f s; "
              "largest difference of any metric at any step %.3g"
              % (one_m[-1]["metrics"]["val_loss"], one_s, two_m[-1]["metrics"]["val_loss"],
                 two_s, worst))

    def test_kill9_of_a_member_stops_both_and_the_trial_is_retried(self):
        d = self.daemon("--lease-s", "3")
        a = self.worker(d, "a")
        b = self.worker(d, "b")
        config = dict(SMALL, epochs=6, epoch_sleep_s=1.0, seed=3)
        eid = d.create_experiment(ddp_spec(2, config, max_failures=2))["id"]
        why = lambda: self.explain(d, *self._workers)
        # Running on both, node 0 past its first report.
        t = self.wait_reporting(d, eid, 120)
        tid = t["id"]
        members = self.members(t)
        programs = h.wait_until(lambda: (lambda p: p if (tid, 0) in p and (tid, 1) in p else None)(
            trial_programs(self.tag)), 30, "both members' programs")
        ids = self.worker_ids(d)
        by_id = {ids["a"]: a, ids["b"]: b}
        victim, survivor = by_id[members[1]], by_id[members[0]]
        t_kill = time.monotonic()
        victim.kill9()
        # The victim's program dies with its worker; the survivor's is ended
        # (its collective fails, or rungd lists the trial under "stop").
        for rank in (1, 0):
            h.wait_until(lambda: not wh.pid_alive(programs[(tid, rank)]), 30,
                         "node %d's program to end" % rank)
        stopped_s = time.monotonic() - t_kill
        # A third worker: the retry needs two live ones.
        self.worker(d, "c")
        t = h.wait_until(lambda: (lambda t: t if t["state"] in ("completed", "failed")
                                  else None)(d.trial(tid)), 180, "the retried trial to end")
        self.assertEqual(t["state"], "completed", why())
        self.assertEqual(t["attempt"], 2, t)
        ids = self.worker_ids(d)
        again = self.members(t)
        self.assertEqual(sorted(again.values()), sorted([ids[survivor.name], ids["c"]]), t)
        steps = [m["step"] for m in d.metrics_of(tid)]
        self.assertEqual(steps, list(range(1, 7)), why())
        self.assertEqual(d.experiment(eid)["state"], "completed")
        print("\nkill -9 of node 1's worker: both programs ended within %.1f s; attempt 2 "
              "on workers %s completed" % (stopped_s, sorted(again.values())))
        self.assertTrue(survivor.alive())

    def test_gang_and_one_node_trials_share_three_workers(self):
        d = self.daemon()
        ws = [self.worker(d, name) for name in ("a", "b", "c")]
        gang = ddp_spec(2, dict(SMALL, seed={"type": "grid", "values": [1, 2, 3]}),
                        name="gang", max_failures=1)
        solo = ddp_spec(1, dict(SMALL, seed={"type": "grid", "values": [4, 5, 6, 7, 8]}),
                        name="solo", max_failures=1)
        t0 = time.monotonic()
        g = d.create_experiment(gang)["id"]
        s = d.create_experiment(solo)["id"]
        for eid in (g, s):
            exp = d.wait_experiment(eid, lambda e: e["state"] in ("completed", "failed"), 200,
                                    "experiment %d to end" % eid)
            self.assertEqual(exp["state"], "completed", self.explain(d, *ws))
        wall = time.monotonic() - t0
        gt, st = d.all_trials(g), d.all_trials(s)
        self.assertEqual([t["state"] for t in gt], ["completed"] * 3)
        self.assertEqual([t["state"] for t in st], ["completed"] * 5)
        for t in gt:
            self.assertEqual(len(set(self.members(t).values())), 2, t)
        print("\n3 gang trials (2 nodes) and 5 1-node trials on 3 workers: all completed "
              "in %.1f s" % wall)


if __name__ == "__main__":
    wh.main()
