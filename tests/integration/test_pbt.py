"""Integration tests of Population Based Training (docs/schedulers.md, "pbt";
server/pbt.h, server/sched_pbt.c exploit(), worker/trial_donor.c copy_donor()): a real
rungd, a real rung-worker with two slots, and the PBT paper's toy problem
(examples/trainables/pbt_toy.py; Jaderberg et al. 2017, section 4).

- The paper's qualitative result: with its two members (h = (1, 0) and
  h = (0, 1), theta = (0.9, 0.9)), PBT reaches Q >= 1.19 in fewer steps
  than "explore only" (each member perturbs its own h, no copying; done by
  the trainable itself under fifo) and than "exploit only" (pbt mutating
  a parameter that does not matter, so members copy but never change h).
  A simulation of the three over 200 seeds (the same rules, random order
  of arrival at each milestone) gave medians of 294, 517 and never (within
  2,400 steps); PBT was faster than explore-only in 200 of 200.
- Every exploit is in the trial's lineage (API), at a milestone, from the
  other member at the same step, and the program really went on from the
  donor's checkpoint: the receiver's theta at step s + 1 is the donor's
  theta at step s times (1 - 2 lr h) with the receiver's new h.
- kill -9 of rungd in the middle of a PBT run: the experiment goes on and
  ends, no step is stored twice, and the lineage stays consistent.
- A member whose metric is NaN exploits instead of failing.
"""

import hashlib
import os
import subprocess
import sys
import time

import rungd_harness as h
import worker_harness as wh

TOY = os.path.join(wh.REPO_ROOT, "examples", "trainables", "pbt_toy.py")
LR = 0.005
INTERVAL = 4
TARGET = 1.19
SPACE = {"h_0": {"type": "uniform", "low": 0.0, "high": 1.0},
         "h_1": {"type": "uniform", "low": 0.0, "high": 1.0},
         "tag": {"type": "choice", "values": [0, 1, 2, 3]},
         "lr": LR, "interval": INTERVAL, "sleep_s": 0.002}
PAPER_MEMBERS = [{"h_0": 1.0, "h_1": 0.0, "tag": 0, "seed": 1},
                 {"h_0": 0.0, "h_1": 1.0, "tag": 0, "seed": 2}]


def fmt(v):
    """A number as both CLIs print one: an integer as is, else %.6g."""
    return str(v) if isinstance(v, int) else "%.6g" % v


def toy_spec(steps, scheduler, explore_self=0, stop=True, seed=7):
    space = dict(SPACE, steps=steps, explore_self=explore_self, seed={"type": "randint",
                                                                       "low": 0, "high": 100})
    s = wh.command_spec([wh.PYTHON, TOY], metric="q", mode="max", search_space=space,
                        num_samples=2, points_to_evaluate=PAPER_MEMBERS, scheduler=scheduler,
                        searcher={"type": "random", "seed": seed}, max_failures=0)
    if stop:
        s["stop"] = {"metric_threshold": TARGET}
    return s


def pbt(mutations, **over):
    s = {"type": "pbt", "perturbation_interval": INTERVAL, "quantile_fraction": 0.25,
         "resample_probability": 0.25, "hyperparam_mutations": mutations, "synch": True}
    s.update(over)
    return s


UNIT = {"type": "uniform", "low": 0.0, "high": 1.0}

# A trainable whose loss is NaN while its lr is 10 (a diverged run); w
# counts the steps its checkpoints carry.
DIVERGE = """import json, os
c = json.loads(os.environ["RUNG_CONFIG"])
folder = os.environ["RUNG_TRIAL_DIR"]
start = int(os.environ.get("RUNG_RESUME_STEP") or 0)
w = json.load(open(os.path.join(folder, "ckpt-%d.json" % start)))["w"] if start else 0
keep = int(os.environ.get("RUNG_KEEP_CHECKPOINTS_EVERY") or 0)
for step in range(start + 1, int(c["steps"]) + 1):
    w += 1
    with open(os.path.join(folder, "ckpt-%d.json" % step), "w") as f:
        json.dump({"w": w}, f)
    loss = float("nan") if c["lr"] > 1 else c["lr"] / w
    print("@rung " + json.dumps({"step": step, "loss": loss, "w": w, "keep": keep}), flush=True)
"""


class PbtCase(wh.WorkerTestCase):

    def run_experiment(self, d, spec, timeout=200):
        eid = d.create_experiment(spec)["id"]
        d.wait_experiment(eid, lambda e: e["state"] in ("completed", "failed"), timeout=timeout,
                          what="experiment %d to end" % eid)
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", exp)
        return eid, exp

    def first_reach(self, d, eid):
        """The first step at which some trial reported q >= TARGET, or None."""
        best = None
        for t in d.all_trials(eid):
            for r in d.metrics_of(t["id"]):
                if r["metrics"].get("q", -9) >= TARGET:
                    best = r["step"] if best is None else min(best, r["step"])
                    break
        return best

    def check_lineage(self, d, eid):
        """Each exploit: at a milestone, from the other member's record at
        the same step, the config the donor's with h mutated, and the
        program resumed from the donor's theta. Returns the exploits."""
        trials = {t["id"]: t for t in d.all_trials(eid)}
        reports = {tid: {r["step"]: r["metrics"] for r in d.metrics_of(tid)} for tid in trials}
        for tid, reps in reports.items():
            self.assertEqual(sorted(reps), list(range(1, len(reps) + 1)),
                             "trial %d: every step once, none missing" % tid)
        n = 0
        for tid, t in trials.items():
            lineage = t["lineage"]
            steps = [x["step"] for x in lineage]
            self.assertEqual(steps, sorted(set(steps)), "one exploit per milestone")
            for x in lineage:
                n += 1
                self.assertEqual(x["step"] % INTERVAL, 0, x)
                self.assertIn(x["donor"], trials)
                self.assertNotEqual(x["donor"], tid)
                self.assertEqual(x["donor_step"], x["step"], x)
                donor = reports[x["donor"]][x["step"]]
                self.assertGreaterEqual(donor["q"], reports[tid][x["step"]]["q"],
                                        "the donor ranked above the receiver")
                s1 = x["step"] + 1
                if s1 in reports[tid]:
                    after = reports[tid][s1]
                    self.assertAlmostEqual(after["h_0"], x["config"]["h_0"])
                    for i in (0, 1):
                        want = donor["theta_%d" % i] * (1 - 2 * LR * after["h_%d" % i])
                        self.assertAlmostEqual(after["theta_%d" % i], want, places=9,
                                               msg="trial %d resumed from trial %d's step %d"
                                               % (tid, x["donor"], x["step"]))
            if lineage:
                self.assertEqual(t["config"], lineage[-1]["config"])
                self.assertEqual(lineage[0]["from"].get("tag", 0), 0)
        return n

    def test_toy_problem_pbt_beats_explore_and_exploit_only(self):
        d = self.daemon()
        self.worker(d, "w", cpu_slots=2)
        # PBT as examples/pbt-toy.json runs it (its own budget: 600 steps).
        eid, _ = self.run_experiment(d, wh.example_spec("pbt-toy.json"))
        pbt_steps = self.first_reach(d, eid)
        exploits = self.check_lineage(d, eid)
        self.assertGreater(exploits, 3, "PBT exploited")
        eid2, _ = self.run_experiment(d, toy_spec(1000, {"type": "fifo"}, explore_self=1))
        explore_steps = self.first_reach(d, eid2)
        eid3, exp3 = self.run_experiment(d, toy_spec(600, pbt({"tag": [0, 1, 2, 3]})))
        exploit_steps = self.first_reach(d, eid3)
        self.assertGreater(self.check_lineage(d, eid3), 3, "exploit-only exploited")
        # PB2: the same exploit, the explored h chosen by its GP bandit.
        eid4, _ = self.run_experiment(d, toy_spec(1000, {
            "type": "pb2", "perturbation_interval": INTERVAL, "synch": True,
            "hyperparam_bounds": {"h_0": [0, 1], "h_1": [0, 1]}}))
        pb2_steps = self.first_reach(d, eid4)
        self.assertGreater(self.check_lineage(d, eid4), 3, "PB2 exploited")
        print("steps to Q >= %.2f: pbt %s, pb2 %s, explore only %s, exploit only %s (of 600)"
              % (TARGET, pbt_steps, pb2_steps, explore_steps, exploit_steps))
        self.assertIsNotNone(pb2_steps)
        self.assertLess(pb2_steps, explore_steps)
        self.assertIsNotNone(pbt_steps, d.diagnostics())
        self.assertIsNotNone(explore_steps)
        self.assertLess(pbt_steps, explore_steps)
        self.assertTrue(exploit_steps is None or pbt_steps < exploit_steps)
        # The best member's schedule, as both CLIs' show print it: a line
        # from step 1, then one per exploit with its donor and new h.
        best = d.experiment(eid)["best"]
        self.assertGreaterEqual(best["value"], TARGET)
        t = d.trial(best["trial_id"])
        want = ["schedule of trial %d (%d exploit%s):" % (t["id"], len(t["lineage"]),
                                                           "" if len(t["lineage"]) == 1 else "s")]
        first = t["lineage"][0]["from"] if t["lineage"] else t["config"]
        want.append("  from step 1: h_0 %s, h_1 %s" % (fmt(first["h_0"]), fmt(first["h_1"])))
        for x in t["lineage"]:
            want.append("  from step %d (trial %d's checkpoint of step %d): h_0 %s, h_1 %s"
                        % (x["step"] + 1, x["donor"], x["donor_step"], fmt(x["config"]["h_0"]),
                           fmt(x["config"]["h_1"])))
        cli = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
        for argv, env in (([cli], None),
                          ([sys.executable, "-m", "rung"],
                           {**os.environ, "PYTHONPATH": os.path.join(wh.REPO_ROOT, "python")})):
            shown = subprocess.run(argv + ["--server", d.url, "--token", d.token or "", "show",
                                           str(eid)], capture_output=True, text=True, timeout=60,
                                   env=env)
            self.assertEqual(shown.returncode, 0, shown.stderr)
            lines = shown.stdout.splitlines()
            at = lines.index(want[0])
            self.assertEqual(lines[at:at + len(want)], want, argv)

    def test_restart_during_pbt(self):
        for synch in (True, False):
            with self.subTest(synch=synch):
                self.restart_during_pbt(synch)

    def restart_during_pbt(self, synch):
        # A data folder each: the first daemon's checkpoints/ (uploads of
        # artifacts pass through it) tells a second daemon in the same
        # folder that a database was there (server/store_file.c).
        folder = os.path.join(self.tmp, "pbt-%s" % synch)
        os.makedirs(folder, exist_ok=True)
        d = self.daemon(fixed_port=True, db=os.path.join(folder, "rung.db"))
        w = self.worker(d, "w-%s" % synch, cpu_slots=2)
        spec = toy_spec(160, pbt({"h_0": UNIT, "h_1": UNIT}, synch=synch), stop=False)
        eid = d.create_experiment(spec)["id"]
        h.wait_until(lambda: any(t["lineage"] for t in d.all_trials(eid)), 60,
                     "a first exploit")
        d.kill9()
        time.sleep(0.5)
        d.restart()
        d.wait_experiment(eid, lambda e: e["state"] == "completed", timeout=120,
                          what="the experiment to end after the restart")
        for t in d.all_trials(eid):
            self.assertEqual(t["state"], "completed", t)
            self.assertEqual(t["step"], 160, t)
        self.assertGreater(self.check_lineage(d, eid), 0)
        self.assertTrue(w.alive(), w.diagnostics())
        w.stop()
        d.stop()

    def test_exploit_across_two_workers(self):
        """Two workers with one slot each: every exploit's donor ran on the
        other worker, so its folder travels through rungd (uploaded by the
        donor's worker when asked in a heartbeat, stored with its SHA-256,
        downloaded and checked by the receiver's worker)."""
        d = self.daemon("--lease-s", "3")
        w1 = self.worker(d, "w1", cpu_slots=1)
        w2 = self.worker(d, "w2", cpu_slots=1)
        # Asynchronous, and made so that the first milestone has an exploit
        # whatever the timing: member 1 is slower (it arrives second) and
        # worse (h_1 0.5 shrinks one coordinate at half the pace). The
        # donor runs on (1.8 s in all) while the receiver waits, so the
        # donor's worker's one slot stays busy and the copy must come
        # through rungd (a heartbeat every 0.5 s asks for it).
        spec = toy_spec(60, pbt({"h_0": UNIT, "h_1": UNIT}, synch=False), stop=False)
        spec["search_space"]["sleep_s"] = {"type": "choice", "values": [0.03, 0.06]}
        spec["points_to_evaluate"] = [dict(PAPER_MEMBERS[0], sleep_s=0.03),
                                      dict(PAPER_MEMBERS[1], h_1=0.5, sleep_s=0.06)]
        eid, _ = self.run_experiment(d, spec, timeout=120)
        self.assertGreater(self.check_lineage(d, eid), 0)
        logs = w1.stderr_text() + w2.stderr_text()
        self.assertIn("uploaded trial", logs, self.explain(d, w1, w2))
        self.assertIn("sha256 verified", logs, self.explain(d, w1, w2))
        self.assertNotIn("starts without", logs)
        # A receiver's program stopped for its exploit did not fail.
        self.assertNotIn("finished: failed", logs)
        self.assertRegex(logs, r"ended here: (pending|running) in rungd")
        self.assertRegex(d.stderr_text(), r"checkpoint of step \d+ stored")
        # Each stored copy goes once its receiver went on from it (at the
        # latest when the experiment ended): nothing is left behind.
        folder = os.path.join(self.tmp, "checkpoints")
        self.assertEqual([n for n in os.listdir(folder) if n.endswith(".tar")], [])
        # A checkpoint nobody waits for is refused (who may upload one, and
        # a hash that differs: test_ckpt_upload.py).
        trial = d.all_trials(eid)[0]["id"]
        url = "/api/v1/trials/%d/checkpoint?step=4" % trial
        late = d.request("PUT", url, raw=b"x", headers={
            "Content-Type": "application/octet-stream",
            "X-Rung-Sha256": hashlib.sha256(b"x").hexdigest()})
        self.assertError(late, 409, "conflict")
        # A restart sweeps what no row holds (a half upload, a copy whose
        # row never committed); the ended experiment can be deleted.
        for name in (".upload-Xy12Ab", "%d-4.tar" % trial):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(b"stale")
        d.stop()
        d.restart()
        self.assertEqual(os.listdir(folder), [])
        self.assertIn("removed 2 checkpoint file(s)", d.stderr_text())
        status, body = d.delete(eid)
        self.assertEqual((status, body.get("deleted")), (200, eid), body)

    def test_worker_killed_mid_run(self):
        """kill -9 of the worker (its trainables go on writing, then die on
        their closed pipe) and a new worker on the same --workdir: each
        member resumes from its checkpoint of its last reported step, in
        the same attempt; every step is stored once, and theta runs on
        without a break (a start over would restart it from 0.9)."""
        d = self.daemon("--lease-s", "2")
        w = self.worker(d, "w", cpu_slots=2)
        spec = toy_spec(50, pbt({"h_0": UNIT, "h_1": UNIT}, synch=False), stop=False)
        # Asynchronous PBT judges a member on arrival, against the records
        # already at that milestone: of two members, only the second to
        # arrive can exploit, and only if it ranks lower. So, as in
        # test_exploit_across_two_workers, member 1 is both worse (h_1 0.5)
        # and slower until its first exploit (which copies member 0's
        # pace). With the paper's members at one pace the order was chance:
        # they tie at steps 4 to 32, member 0 wins ties, and with member 0
        # ahead the first exploit came at step 48 or never (the wait below
        # then timed out, now and then).
        spec["search_space"]["sleep_s"] = {"type": "choice", "values": [0.05, 0.2]}
        spec["points_to_evaluate"] = [dict(PAPER_MEMBERS[0], sleep_s=0.05),
                                      dict(PAPER_MEMBERS[1], h_1=0.5, sleep_s=0.2)]
        eid = d.create_experiment(spec)["id"]
        h.wait_until(lambda: all((t["step"] or 0) >= 14 for t in d.all_trials(eid))
                     and any(t["lineage"] for t in d.all_trials(eid)), 60,
                     "an exploit and 14 steps each")
        w.kill9()
        again = self.worker(d, "w", cpu_slots=2)  # the same name: the same --workdir
        self.run_experiment_wait(d, eid)
        trials = {t["id"]: t for t in d.all_trials(eid)}
        for t in trials.values():
            self.assertEqual((t["state"], t["step"], t["attempt"]), ("completed", 50, 1), t)
        self.check_lineage(d, eid)
        for tid, t in trials.items():
            reports = {r["step"]: r["metrics"] for r in d.metrics_of(tid)}
            cut = {x["step"] for x in t["lineage"]}
            for s in range(1, 50):
                if s in cut:
                    continue  # an exploit: checked against the donor above
                a, b = reports[s], reports[s + 1]
                want = a["theta_0"] * (1 - 2 * LR * b["h_0"])
                self.assertAlmostEqual(b["theta_0"], want, places=9,
                                       msg="trial %d, step %d to %d" % (tid, s, s + 1))
        self.assertIn("leased", again.stderr_text())

    def test_a_diverged_member_exploits(self):
        """A member that reports NaN is not failed (as under other
        schedulers): it ranks last at its milestone and goes on from the
        other member's checkpoint with a finite config. Its program also
        sees RUNG_KEEP_CHECKPOINTS_EVERY = the perturbation_interval."""
        d = self.daemon()
        self.worker(d, "w", cpu_slots=2)
        script = os.path.join(self.tmp, "diverge.py")
        with open(script, "w") as f:
            f.write(DIVERGE)
        mutations = {"lr": [0.1, 0.2]}
        spec = wh.command_spec(
            [wh.PYTHON, script], metric="loss", mode="min",
            search_space={"lr": {"type": "choice", "values": [0.1, 0.2, 10.0]}, "steps": 6},
            num_samples=2, points_to_evaluate=[{"lr": 0.1}, {"lr": 10.0}], max_failures=0,
            scheduler=pbt(mutations, perturbation_interval=2))
        eid, _ = self.run_experiment(d, spec, timeout=60)
        trials = sorted(d.all_trials(eid), key=lambda t: t["number"])
        for t in trials:
            self.assertEqual((t["state"], t["step"]), ("completed", 6), t)
        good, bad = trials
        self.assertEqual(good["lineage"], [])
        x = bad["lineage"][0]
        self.assertEqual((x["step"], x["donor"], x["donor_step"]), (2, good["id"], 2), x)
        self.assertEqual(x["from"]["lr"], 10.0)
        self.assertIn(x["config"]["lr"], (0.1, 0.2))
        reports = {r["step"]: r["metrics"] for r in d.metrics_of(bad["id"])}
        self.assertEqual([reports[s]["loss"] for s in (1, 2)], ["NaN", "NaN"])
        # Steps 3 on: the donor's count of steps went on (a copy, not a
        # start over), with the finite config.
        self.assertEqual([reports[s]["w"] for s in range(3, 7)], [3, 4, 5, 6])
        for s in range(3, 7):
            self.assertIsInstance(reports[s]["loss"], float)
        self.assertEqual({r["metrics"]["keep"] for t in trials for r in d.metrics_of(t["id"])},
                         {2})

    def run_experiment_wait(self, d, eid, timeout=120):
        d.wait_experiment(eid, lambda e: e["state"] in ("completed", "failed"), timeout=timeout,
                          what="experiment %d to end" % eid)
        self.assertEqual(d.experiment(eid)["state"], "completed", d.diagnostics())

    def test_refusals_name_the_field(self):
        d = self.daemon()
        cases = [
            (pbt({"h_0": UNIT}, perturbation_interval=0), "scheduler.perturbation_interval"),
            (pbt({}), "scheduler.hyperparam_mutations"),
            (pbt({"nope": UNIT}), "scheduler.hyperparam_mutations.nope"),
            (pbt({"h_0": {"type": "uniform", "low": 1, "high": 0}}),
             "scheduler.hyperparam_mutations.h_0.high"),
            (pbt({"h_0": UNIT}, quantile_fraction=0.7), "scheduler.quantile_fraction"),
            (pbt({"h_0": UNIT}, resample_probability=2), "scheduler.resample_probability"),
            (pbt({"h_0": UNIT}, time_attr="epoch"), "scheduler.time_attr"),
            (pbt({"h_0": UNIT}, grace_period=1), "scheduler.grace_period"),
        ]
        for sched, field in cases:
            status, body = d.call("POST", "/api/v1/experiments", toy_spec(10, sched))
            self.assertEqual(status, 400, (sched, body))
            self.assertEqual(body["error"]["field"], field, body)
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["items"], [])


if __name__ == "__main__":
    wh.main()
