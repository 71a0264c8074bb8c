"""Integration tests of the tpe searcher inside rungd (docs/searchers.md,
"TPE"): real workers run a command trainable on a conditional space four
trials at a time. Every config holds exactly one branch's parameters,
trials that ran at the same time have distinct configs (pending trials are
the constant liar's worst values), and after a rungd restart the searcher
goes on from the stored results: it keeps to the branch they favour, where
the quasi-random start points it would fall back to without them split
evenly between the two. Under asha it learns from every trial's rung
records (multi-fidelity)."""

import datetime
import re

import worker_harness as wh

# Branch "good" has its minimum 0 at x = 0.3; branch "bad" is 5 or more.
TRAINABLE = """
import json, os
c = json.loads(os.environ["RUNG_CONFIG"])
if c["arm.kind"] == "good":
    loss = (c["arm.x"] - 0.3) ** 2 + 0.01 * c["width"]
else:
    loss = 5.0 + c["arm.y"] + 0.01 * c["width"]
print("@rung " + json.dumps({"loss": loss}), flush=True)
"""

# A learning curve: the loss falls with the step towards (x - 0.3)^2.
CURVE = """
import json, os
x = json.loads(os.environ["RUNG_CONFIG"])["x"]
for step in range(1, 10):
    print("@rung " + json.dumps({"step": step, "loss": (x - 0.3) ** 2 + 0.5 / step}), flush=True)
"""

SPACE = {
    "width": {"type": "randint", "low": 1, "high": 5},
    "arm": {"type": "choice", "values": [
        {"kind": "good", "x": {"type": "uniform", "low": 0, "high": 1}},
        {"kind": "bad", "y": {"type": "loguniform", "low": 0.01, "high": 1},
         "n": {"type": "qrandint", "low": 2, "high": 10, "q": 2}},
    ]},
}
KEYS = {"good": {"width", "arm.kind", "arm.x"}, "bad": {"width", "arm.kind", "arm.y", "arm.n"}}


def parse_time(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class Tpe(wh.WorkerTestCase):

    def spec(self, num_samples):
        path = self.script("arms.py", TRAINABLE)
        return wh.command_spec([wh.PYTHON, path], search_space=SPACE, num_samples=num_samples,
                               max_concurrent_trials=4,
                               searcher={"type": "tpe", "seed": 3, "n_initial": 8})

    def check_configs(self, trials):
        for t in trials:
            c = t["config"]
            self.assertIn(c.get("arm.kind"), KEYS, c)
            self.assertEqual(set(c), KEYS[c["arm.kind"]], c)

    def test_parallel_conditional(self):
        d = self.daemon()
        eid = d.create_experiment(self.spec(32))["id"]
        workers = [self.worker(d, name, cpu_slots=2, once=True) for name in ("ta", "tb")]
        codes = self.wait_workers_exit(workers, 60)
        self.assertEqual(codes, [0, 0], self.explain(d, *workers))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, *workers))
        self.assertEqual(exp["counts"]["completed"], 32, exp["counts"])
        trials = d.all_trials(eid)
        self.check_configs(trials)
        overlapping = 0
        for i, a in enumerate(trials):
            for b in trials[i + 1:]:
                a0, a1 = parse_time(a["started_at"]), parse_time(a["ended_at"])
                b0, b1 = parse_time(b["started_at"]), parse_time(b["ended_at"])
                if a0 < b1 and b0 < a1:
                    overlapping += 1
                    self.assertNotEqual(a["config"], b["config"],
                                        "trials %d and %d ran at once with one config"
                                        % (a["number"], b["number"]))
        self.assertGreater(overlapping, 0, "no two trials ran at the same time")
        late = [t for t in trials if t["number"] >= 16]
        good = sum(t["config"]["arm.kind"] == "good" for t in late)
        self.assertGreaterEqual(good, 12, "tpe chose the good branch %d of %d times"
                                % (good, len(late)))
        self.assertLess(exp["best"]["value"], 0.05, exp["best"])

    def test_auto_switches_to_tpe(self):
        # auto (sampler/auto.h) is bayes until switch_after results, then
        # tpe on this conditional space; rungd logs each tpe proposal.
        d = self.daemon()
        path = self.script("arms.py", TRAINABLE)
        spec = wh.command_spec([wh.PYTHON, path], search_space=SPACE, num_samples=24,
                               max_concurrent_trials=4,
                               searcher={"type": "auto", "seed": 5, "n_initial": 6,
                                         "switch_after": 10})
        eid = d.create_experiment(spec)["id"]
        workers = [self.worker(d, name, cpu_slots=2, once=True) for name in ("aa", "ab")]
        self.assertEqual(self.wait_workers_exit(workers, 60), [0, 0], self.explain(d, *workers))
        exp = d.experiment(eid)
        self.assertEqual(exp["counts"]["completed"], 24, self.explain(d, *workers))
        self.assertEqual(exp["searcher"]["type"], "auto", exp["searcher"])
        trials = d.all_trials(eid)
        self.check_configs(trials)
        tpe = [(int(m.group(1)), int(m.group(2))) for m in re.finditer(
            r"experiment %d: tpe proposed trial (\d+) from (\d+) results" % eid,
            d.stderr_text())]
        self.assertTrue(tpe, "auto never went on with tpe: " + d.diagnostics())
        for number, results in tpe:
            self.assertGreaterEqual(results, 10, "tpe proposed trial %d from %d results, "
                                    "before switch_after" % (number, results))
        # The trials before the line came from bayes: none of them from tpe.
        self.assertGreaterEqual(min(n for n, _ in tpe), 10, tpe)

    def test_multi_fidelity_under_asha(self):
        # With asha, tpe ranks trials by the rung they reached, then their
        # loss there (sampler/tpe_mf.c): every trial that reported at rung 1
        # counts at once, so it learns before the first trial finishes. The
        # spec shows multi_fidelity on; rungd logs the rung records each
        # proposal learned from; late trials are near the optimum x = 0.3.
        d = self.daemon()
        path = self.script("curve.py", CURVE)
        spec = wh.command_spec([wh.PYTHON, path], search_space={
            "x": {"type": "uniform", "low": 0, "high": 1}}, num_samples=30,
            max_concurrent_trials=4, searcher={"type": "tpe", "seed": 4, "n_initial": 8},
            scheduler={"type": "asha", "time_attr": "step", "max_t": 9, "grace_period": 1,
                       "reduction_factor": 3})
        eid = d.create_experiment(spec)["id"]
        self.assertIs(d.experiment(eid)["searcher"]["multi_fidelity"], True)
        workers = [self.worker(d, name, cpu_slots=2, once=True) for name in ("ma", "mb")]
        self.assertEqual(self.wait_workers_exit(workers, 60), [0, 0], self.explain(d, *workers))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, *workers))
        logged = [(int(m.group(1)), int(m.group(2)), int(m.group(3))) for m in re.finditer(
            r"experiment %d: tpe proposed trial (\d+) from (\d+) results, (\d+) rung records"
            % eid, d.stderr_text())]
        self.assertTrue(logged, d.diagnostics())
        # Past the n_initial start points, every proposal had rung records.
        self.assertTrue(all(records > 0 for number, _, records in logged if number >= 8), logged)
        trials = d.all_trials(eid)
        stopped = [t for t in trials if t["state"] == "stopped"]
        self.assertTrue(stopped, "asha stopped no trial")
        late = [t["config"]["x"] for t in trials if t["number"] >= 20]
        near = sum(abs(x - 0.3) < 0.2 for x in late)
        self.assertGreaterEqual(near, 7, "late trials' x: %s" % late)

    def test_refused_with_several_objectives(self):
        d = self.daemon()
        s = wh.h.spec(metrics=[{"name": "a", "mode": "min"}, {"name": "b", "mode": "min"}],
                      searcher={"type": "tpe"})
        s.pop("metric")
        s.pop("mode")
        r = d.request("POST", "/api/v1/experiments", s)
        self.assertEqual(r.status, 400, r.body)
        self.assertEqual(r.json["error"]["field"], "searcher.type", r.json)
        r = d.request("POST", "/api/v1/experiments",
                      wh.h.spec(searcher={"type": "tpe", "multivariate": False, "group": True}))
        self.assertEqual(r.status, 400, r.body)
        self.assertEqual(r.json["error"]["field"], "searcher.group", r.json)

    def test_restart_keeps_history(self):
        d = self.daemon()
        eid = d.create_experiment(self.spec(30))["id"]
        w = self.worker(d, "ra", cpu_slots=2)
        wh.h.wait_until(lambda: d.experiment(eid)["counts"]["completed"] >= 12, 30,
                        "12 completed trials", interval=0.1)
        w.stop()
        d.stop()
        d.restart()
        done_before = {t["number"] for t in d.all_trials(eid) if t["state"] == "completed"}
        # rungd logs what each tpe proposal learned from (server/propose.c):
        # the first after the restart already has every stored result.
        w2 = self.worker(d, "rb", cpu_slots=2, once=True)
        self.assertEqual(self.wait_workers_exit([w2], 60), [0], self.explain(d, w2))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", self.explain(d, w2))
        trials = d.all_trials(eid)
        self.check_configs(trials)
        learned = [int(m.group(1)) for m in re.finditer(
            r"tpe proposed trial \d+ from (\d+) results", d.stderr_text())]
        self.assertTrue(learned, d.diagnostics())
        self.assertGreaterEqual(learned[0], len(done_before), d.diagnostics())
        after = [t for t in trials if t["number"] not in done_before and t["number"] >= 16]
        self.assertGreaterEqual(len(after), 8, [t["number"] for t in trials])
        good = sum(t["config"]["arm.kind"] == "good" for t in after)
        # Without the stored results these would be quasi-random start
        # points, half in each branch.
        self.assertGreaterEqual(good, len(after) - 3, "after the restart tpe chose the good "
                                "branch %d of %d times" % (good, len(after)))


if __name__ == "__main__":
    wh.main()
