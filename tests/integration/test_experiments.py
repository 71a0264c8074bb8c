"""Integration tests: experiments from submission to completion.

A real rungd, driven by simulated workers over HTTP: a 30-trial random search
runs to `completed`, and what a user then looks at (counts, best, configs
within their domains, trial lists with paging, filters and sorting, the CSV
export) is checked against what the workers actually reported. Also grid
expansion, seeded reproducibility, cancel, and ASHA's stop answer.
"""

import csv
import io
import json
import math
import re
import threading
import time

import rungd_harness as h

RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
TERMINAL = ("completed", "stopped", "failed", "canceled")


def objective(config, step):
    """A made-up validation loss: best near lr = 1e-2, with 3 layers and adam,
    and falling with the step, so each trial's best is its last report."""
    penalty = {"sgd": 0.30, "adam": 0.0, "rmsprop": 0.15}[config["opt"]]
    return ((math.log10(config["lr"]) + 2.0) ** 2 + 0.1 * abs(config["layers"] - 3)
            + penalty + 1.0 / (step + 1))


SPACE_30 = {
    "lr": {"type": "loguniform", "low": 1e-4, "high": 0.3},
    "opt": {"type": "choice", "values": ["sgd", "adam", "rmsprop"]},
    "layers": {"type": "randint", "low": 1, "high": 5},
    "epochs": 3,
}


def csv_column(header, name):
    """Index of a parameter's column: its name, or the name under a prefix
    such as config.lr / param_lr."""
    for i, col in enumerate(header):
        if col == name or re.fullmatch(r".*[._/:]" + re.escape(name), col):
            return i
    return None


class RandomSearchToCompletion(h.RungdTestCase):
    """Issue test 1: 30 random trials leased, reported and finished by three
    concurrent workers."""

    STEPS = 3

    def run_workers(self, d, eid, n_workers=3, deadline_s=60):
        reported = {}  # trial id -> list of (step, value)
        configs = {}
        errors = []
        lock = threading.Lock()
        stop_at = time.monotonic() + deadline_s

        def work(k):
            try:
                w = h.Worker(d, name="sim-%d" % k)
                while time.monotonic() < stop_at:
                    status, t = w.lease(wait_s=1)
                    if status == 204:
                        if d.experiment(eid)["state"] != "running":
                            return
                        continue
                    self.assertEqual(t["experiment_id"], eid)
                    self.assertEqual(t["state"], "running")
                    self.assertEqual(t["attempt"], 1)
                    self.assertEqual(t["worker_id"], w.id)
                    self.assertTrue(t["lease_token"])
                    with lock:
                        self.assertNotIn(t["id"], configs, "trial leased twice")
                        configs[t["id"]] = t["config"]
                    values = []
                    for step in range(1, self.STEPS + 1):
                        v = objective(t["config"], step)
                        action = w.report_ok(t, step, {"loss": v, "acc": 1.0 - v / 10})
                        self.assertEqual(action, "continue")
                        values.append((step, v))
                    with lock:
                        reported[t["id"]] = values
                    w.finish_ok(t)
                errors.append("worker %d ran past its deadline" % k)
            except BaseException as e:  # reported by the main thread
                errors.append("worker %d: %r" % (k, e))

        threads = [threading.Thread(target=work, args=(k,), daemon=True)
                   for k in range(n_workers)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(deadline_s + 30)
            self.assertFalse(th.is_alive(), "a worker thread hung")
        self.assertEqual(errors, [])
        return configs, reported

    def test_thirty_random_trials(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(name="random-30", search_space=SPACE_30,
                                         num_samples=30, searcher={"type": "random",
                                                                   "seed": 11}))
        eid = exp["id"]
        # The experiment object echoes the spec and starts empty.
        self.assertEqual(exp["state"], "running")
        self.assertEqual(exp["name"], "random-30")
        self.assertEqual(exp["metric"], "loss")
        self.assertEqual(exp["mode"], "min")
        self.assertEqual(exp["num_samples"], 30)
        self.assertEqual(exp["search_space"], SPACE_30)
        self.assertIsNone(exp["best"])
        self.assertRegex(exp["created_at"], RFC3339_UTC)
        self.assertIsNone(exp.get("ended_at"))

        configs, reported = self.run_workers(d, eid)
        self.assertEqual(len(configs), 30)
        self.assertEqual(set(reported), set(configs))

        exp = d.wait_state(eid, "completed")
        counts = exp["counts"]
        self.assertEqual(counts["completed"], 30, counts)
        for state in ("pending", "running", "stopped", "failed", "canceled"):
            self.assertEqual(counts[state], 0, counts)
        self.assertRegex(exp["ended_at"], RFC3339_UTC)

        # best is the minimum over every value any worker reported.
        all_values = [(v, tid, step) for tid, vs in reported.items() for step, v in vs]
        best_value, best_tid, best_step = min(all_values)
        self.assertIsNotNone(exp["best"])
        self.assertAlmostEqual(exp["best"]["value"], best_value, places=12)
        self.assertEqual(exp["best"]["trial_id"], best_tid)
        self.assertEqual(exp["best"]["step"], best_step)
        self.assertEqual(exp["best"]["config"], configs[best_tid])

        # Every trial: config within its domain, finished, with its own numbers.
        trials = d.all_trials(eid)
        self.assertEqual(len(trials), 30)
        self.assertEqual(sorted(t["number"] for t in trials), list(range(30)))
        for t in trials:
            c = t["config"]
            self.assertEqual(c, configs[t["id"]], "config changed after lease")
            self.assertEqual(set(c), {"lr", "opt", "layers", "epochs"})
            self.assertIsInstance(c["lr"], float)
            self.assertTrue(1e-4 <= c["lr"] < 0.3, c)
            self.assertIn(c["opt"], ["sgd", "adam", "rmsprop"])
            self.assertIsInstance(c["layers"], int)
            self.assertNotIsInstance(c["layers"], bool)
            self.assertTrue(1 <= c["layers"] < 5, c)
            self.assertEqual(c["epochs"], 3)
            self.assertEqual(t["state"], "completed")
            self.assertEqual(t["experiment_id"], eid)
            self.assertEqual(t["step"], self.STEPS)
            mine = reported[t["id"]]
            self.assertAlmostEqual(t["best"]["value"], min(v for _, v in mine), places=12)
            self.assertAlmostEqual(t["last"]["loss"], mine[-1][1], places=12)
            self.assertIsNone(t["error"])
            for key in ("created_at", "started_at", "ended_at"):
                self.assertRegex(t[key], RFC3339_UTC)
        # A random search over 30 samples does not propose one config 30 times.
        self.assertGreater(len({c["lr"] for c in configs.values()}), 25)
        self.assertEqual(len({c["opt"] for c in configs.values()}), 3)

        # Metrics endpoint: the reports of one trial, in step order.
        some = trials[7]
        items = d.metrics_of(some["id"])
        self.assertEqual([i["step"] for i in items], list(range(1, self.STEPS + 1)))
        for item, (step, v) in zip(items, reported[some["id"]]):
            self.assertAlmostEqual(item["metrics"]["loss"], v, places=12)
            self.assertRegex(item["time"], RFC3339_UTC)
        later = d.metrics_of(some["id"], after_step=1)
        self.assertEqual([i["step"] for i in later], list(range(2, self.STEPS + 1)))

        self.check_paging(d, eid)
        self.check_filters_and_sort(d, eid, reported)
        self.check_csv(d, eid, configs, reported)

    def check_paging(self, d, eid):
        seen = []
        for offset in range(0, 35, 7):
            page = d.trials(eid, limit=7, offset=offset)
            self.assertEqual(page["total"], 30)
            self.assertEqual(len(page["items"]), max(0, min(7, 30 - offset)))
            seen.extend(t["id"] for t in page["items"])
        self.assertEqual(len(seen), 30)
        self.assertEqual(len(set(seen)), 30, "pages overlap")
        self.assertEqual(d.trials(eid, limit=5, offset=100)["items"], [])
        default = d.trials(eid)
        self.assertEqual(len(default["items"]), 30)  # default limit is 100

    def check_filters_and_sort(self, d, eid, reported):
        done = d.trials(eid, state="completed", limit=1000)
        self.assertEqual(done["total"], 30)
        self.assertEqual(len(done["items"]), 30)
        running = d.trials(eid, state="running")
        self.assertEqual(running["total"], 0)
        self.assertEqual(running["items"], [])

        # sort=value puts the best (lowest, mode min) first; across pages too.
        order = []
        for offset in (0, 10, 20):
            page = d.trials(eid, sort="value", limit=10, offset=offset)
            self.assertEqual(page["total"], 30)
            order.extend(page["items"])
        values = [t["best"]["value"] for t in order]
        self.assertEqual(values, sorted(values), "sort=value is not best first")
        expected = sorted(reported, key=lambda tid: min(v for _, v in reported[tid]))
        self.assertEqual(values[0], min(v for _, v in reported[expected[0]]))
        self.assertEqual(len({t["id"] for t in order}), 30)

    def check_csv(self, d, eid, configs, reported):
        r = d.request("GET", "/api/v1/experiments/%d/trials.csv" % eid)
        self.assertEqual(r.status, 200, r)
        self.assertIn("text/csv", r.headers.get("content-type", ""))
        rows = list(csv.reader(io.StringIO(r.text)))
        rows = [row for row in rows if row]
        header, body = rows[0], rows[1:]
        self.assertEqual(len(body), 30, "expected a header and 30 rows")
        cols = {name: csv_column(header, name) for name in ("id", "state", "lr", "opt", "layers")}
        for name, idx in cols.items():
            self.assertIsNotNone(idx, "no %s column in %r" % (name, header))
        ids = set()
        for row in body:
            self.assertEqual(len(row), len(header), row)
            tid = int(row[cols["id"]])
            ids.add(tid)
            c = configs[tid]
            self.assertEqual(row[cols["state"]], "completed")
            self.assertTrue(math.isclose(float(row[cols["lr"]]), c["lr"], rel_tol=1e-6), row)
            self.assertEqual(row[cols["opt"]], c["opt"])
            self.assertEqual(int(float(row[cols["layers"]])), c["layers"])
        self.assertEqual(ids, set(configs))


class ExperimentObjects(h.RungdTestCase):

    def test_list_newest_first_and_get(self):
        d = self.daemon()
        a = d.create_experiment(h.spec(name="first"))
        b = d.create_experiment(h.spec(name="second"))
        self.assertNotEqual(a["id"], b["id"])
        doc = d.ok("GET", "/api/v1/experiments")
        self.assertEqual(doc["total"], 2)
        self.assertEqual([e["name"] for e in doc["items"]], ["second", "first"])
        one = d.experiment(a["id"])
        self.assertEqual(one["name"], "first")
        # docs/api.md's six states, "paused" of asha's promote variant and
        # "preempted" of spare GPUs.
        self.assertEqual(set(one["counts"]),
                         {"pending", "running", "completed", "stopped", "failed", "canceled",
                          "paused", "preempted"})
        paged = d.ok("GET", "/api/v1/experiments?limit=1&offset=1")
        self.assertEqual(paged["total"], 2)
        self.assertEqual([e["name"] for e in paged["items"]], ["first"])

    def test_list_default_limit(self):
        d = self.daemon()
        ids = [d.create_experiment(h.spec(name="e%d" % i))["id"] for i in range(101)]
        doc = d.ok("GET", "/api/v1/experiments")
        self.assertEqual(doc["total"], 101)
        self.assertEqual(len(doc["items"]), 100)
        self.assertEqual(doc["items"][0]["id"], ids[-1])
        rest = d.ok("GET", "/api/v1/experiments?offset=100")
        self.assertEqual([e["id"] for e in rest["items"]], [ids[0]])
        self.assertEqual(len(d.ok("GET", "/api/v1/experiments?limit=1000")["items"]), 101)

    def test_defaults_and_the_required_trainable(self):
        # searcher and scheduler are optional; a trainable is not, and
        # {"type": "external"} is one for workers of one's own.
        d = self.daemon()
        for trainable in ("absent", None):
            s = h.spec(num_samples=2)
            if trainable == "absent":
                del s["trainable"]
            else:
                s["trainable"] = trainable
            err = self.assertError(d.request("POST", "/api/v1/experiments", s), 400,
                                   "invalid_spec", "trainable")
            self.assertIn('{"type": "external"}', err["message"])
        nested = h.spec(search_space={"x": {"type": "uniform", "low": 0, "high": 1},
                                      "net": {"layers": 2}})
        err = self.assertError(d.request("POST", "/api/v1/experiments", nested), 400,
                               "invalid_spec", "search_space.net")
        self.assertIn("sub-space without any domain", err["message"])
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 0)
        exp = d.create_experiment(h.spec(num_samples=2))
        self.assertEqual(exp["trainable"], {"type": "external"})
        for key, value in (("max_failed_trials", 5), ("best_scope", "all"), ("priority", 0),
                           ("share", 1)):
            self.assertEqual(exp[key], value, key)
        for key in ("worker_selector", "points_to_evaluate", "warm_start", "stop"):
            self.assertNotIn(key, exp)
        w = h.Worker(d)
        t = w.lease_one()
        self.assertEqual(t["experiment_id"], exp["id"])
        self.assertEqual(t["resources"], {"cpus": 1, "gpus": []})
        self.assertTrue(0.0 <= t["config"]["x"] < 1.0)

    def test_state_filter_while_running(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=4))
        eid = exp["id"]
        w = h.Worker(d)
        leased = {w.lease_one()["id"], w.lease_one()["id"]}
        running = d.trials(eid, state="running")
        self.assertEqual(running["total"], 2)
        self.assertEqual({t["id"] for t in running["items"]}, leased)
        for t in running["items"]:
            self.assertEqual(t["state"], "running")
        # Trials are proposed as they are needed, so only the running ones
        # are known exactly; whatever is pending is not among them.
        pending = d.trials(eid, state="pending")
        self.assertFalse(leased & {t["id"] for t in pending["items"]})
        for t in pending["items"]:
            self.assertEqual(t["state"], "pending")
        self.assertLessEqual(pending["total"], 2)
        counts = d.experiment(eid)["counts"]
        self.assertEqual(counts["running"], 2, counts)

    def lease_all(self, d, eid):
        """Leases, reports and finishes trials until the experiment has no
        more; returns the leased trials in lease order."""
        w = h.Worker(d)
        out = []
        while True:
            status, t = w.lease(wait_s=1)
            if status == 204:
                break
            self.assertEqual(t["experiment_id"], eid)
            w.report_ok(t, 1, {"loss": 1.0})
            w.finish_ok(t)
            out.append(t)
            self.assertLess(len(out), 1000, "the experiment never runs out of trials")
        d.wait_state(eid, "completed")
        return out

    def test_grid_dimensions_repeat_num_samples_times(self):
        # Ray semantics: the grid product is repeated num_samples times.
        d = self.daemon()
        space = {"bs": {"type": "grid", "values": [16, 32]},
                 "lr": {"type": "uniform", "low": 0.1, "high": 0.2}}
        exp = d.create_experiment(h.spec(search_space=space, num_samples=3))
        trials = self.lease_all(d, exp["id"])
        self.assertEqual(len(trials), 6)
        self.assertEqual(sorted(t["config"]["bs"] for t in trials), [16, 16, 16, 32, 32, 32])
        for t in trials:
            self.assertTrue(0.1 <= t["config"]["lr"] < 0.2)
        self.assertEqual(d.trials(exp["id"])["total"], 6)

    def test_grid_searcher_enumerates_every_combination(self):
        d = self.daemon()
        space = {"opt": {"type": "choice", "values": ["a", "b", "c"]},
                 "n": {"type": "randint", "low": 0, "high": 2}}
        exp = d.create_experiment(h.spec(search_space=space, num_samples=1,
                                         searcher={"type": "grid"}))
        trials = self.lease_all(d, exp["id"])
        combos = sorted((t["config"]["opt"], t["config"]["n"]) for t in trials)
        self.assertEqual(combos, [(o, n) for o in "abc" for n in (0, 1)])

    def test_seed_reproduces_configs(self):
        d = self.daemon()
        space = {"lr": {"type": "loguniform", "low": 1e-5, "high": 1.0},
                 "k": {"type": "randint", "low": 0, "high": 1000}}
        runs = []
        for _ in range(2):
            exp = d.create_experiment(h.spec(search_space=space, num_samples=5,
                                             searcher={"type": "random", "seed": 42}))
            self.assertEqual(len(self.lease_all(d, exp["id"])), 5)
            trials = sorted(d.all_trials(exp["id"]), key=lambda t: t["number"])
            runs.append([t["config"] for t in trials])
        self.assertEqual(runs[0], runs[1])
        self.assertGreater(len({c["lr"] for c in runs[0]}), 1)

    def test_best_for_mode_max(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(metric="acc", mode="max", num_samples=2))
        w = h.Worker(d)
        values = {}
        for _ in range(2):
            t = w.lease_one()
            vs = [t["config"]["x"] * s for s in (1, 2, 3)]
            for step, v in zip((1, 2, 3), vs):
                w.report_ok(t, step, {"acc": v})
            w.finish_ok(t)
            values[t["id"]] = vs
        exp = d.wait_state(exp["id"], "completed")
        best_tid = max(values, key=lambda k: max(values[k]))
        self.assertEqual(exp["best"]["trial_id"], best_tid)
        self.assertAlmostEqual(exp["best"]["value"], max(values[best_tid]), places=12)
        order = d.trials(exp["id"], sort="value")["items"]
        self.assertEqual(order[0]["id"], best_tid, "sort=value is not best first for max")


class Contents(h.RungdTestCase):

    def test_unicode_and_csv_quoting(self):
        # Names and choice values are user input: they come back byte for
        # byte, and the CSV quotes what needs quoting.
        d = self.daemon()
        values = ["a,b", 'say "hi"', "line\nbreak", True, 2.5, "zoë ✓"]
        exp = d.create_experiment(h.spec(name="résumé ✓ \"q\"", num_samples=1,
                                         search_space={"c": {"type": "grid",
                                                             "values": values}}))
        self.assertEqual(d.experiment(exp["id"])["name"], "résumé ✓ \"q\"")
        w = h.Worker(d)
        seen = {}
        for _ in values:
            t = w.lease_one()
            w.report_ok(t, 1, {"loss": 1.0})
            w.finish_ok(t)
            seen[t["id"]] = t["config"]["c"]
        self.assertEqual(sorted(map(json.dumps, seen.values())), sorted(map(json.dumps, values)))
        r = d.request("GET", "/api/v1/experiments/%d/trials.csv" % exp["id"])
        self.assertEqual(r.status, 200)
        rows = list(csv.reader(io.StringIO(r.text, newline="")))
        header, body = rows[0], [row for row in rows[1:] if row]
        self.assertEqual(len(body), len(values), rows)
        ci, ii = csv_column(header, "c"), csv_column(header, "id")
        for row in body:
            want = seen[int(row[ii])]
            text = row[ci]
            if isinstance(want, bool):
                self.assertIn(text.lower(), ("true", "1"))
            elif isinstance(want, float):
                self.assertEqual(float(text), want)
            else:
                self.assertEqual(text, want)

    def test_api_md_example_spec(self):
        # The example of docs/api.md, verbatim. Parts that this rungd declares
        # unsupported are swapped for defaults and reported as a skip.
        d = self.daemon()
        example = {
            "name": "fmnist-mlp", "metric": "val_loss", "mode": "min",
            "search_space": {
                "lr": {"type": "loguniform", "low": 1e-4, "high": 0.3},
                "momentum": {"type": "uniform", "low": 0.5, "high": 0.99},
                "hidden": {"type": "choice", "values": [128, 256, 512]},
                "batch_size": {"type": "grid", "values": [64, 256]},
                "epochs": 27},
            "searcher": {"type": "bayes", "seed": 1, "n_initial": 10},
            "scheduler": {"type": "asha", "time_attr": "step", "max_t": 27,
                          "grace_period": 1, "reduction_factor": 3, "brackets": 1},
            "num_samples": 40, "max_concurrent_trials": 8, "max_failures": 2,
            "resources_per_trial": {"gpu": 1, "cpu": 1},
            "trainable": {"type": "command",
                          "argv": ["python3", "train.py", "--lr={lr}", "--hidden={hidden}"],
                          "env": {"OMP_NUM_THREADS": "1"}, "cwd": "/srv/project",
                          "timeout_s": 3600}}
        r = d.request("POST", "/api/v1/experiments", example)
        self.assertEqual(r.status, 201, r)
        exp = r.json
        self.assertEqual(exp["trainable"], example["trainable"])
        # GET fills in the gang fields (docs/api.md, "Gangs"): one node.
        self.assertEqual(exp["resources_per_trial"],
                         {"gpu": 1, "cpu": 1, "nodes": 1, "gang_wait_s": 60})
        w = h.Worker(d, gpus=(0, 1))
        self.assertEqual(w.lease(cpus=4, gpus=[], wait_s=1)[0], 204)  # it needs a GPU
        t = w.lease_one(cpus=4, gpus=[0, 1])
        self.assertEqual(t["trainable"], example["trainable"])
        self.assertEqual(len(t["resources"]["gpus"]), 1)
        self.assertIn(t["resources"]["gpus"][0], (0, 1))
        self.assertEqual(t["resources"]["cpus"], 1)
        self.assertIn(t["config"]["batch_size"], (64, 256))
        self.assertEqual(t["config"]["epochs"], 27)
        self.assertEqual(exp["scheduler"], example["scheduler"] | {"promote": False,
                                                                   "end_at_max_t": True,
                                                                   "allocation": "softmax"})


class Cancel(h.RungdTestCase):
    """Issue test 5."""

    def test_cancel(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=5))
        eid = exp["id"]
        w = h.Worker(d)
        t1, t2 = w.lease_one(), w.lease_one()
        self.assertEqual(w.report_ok(t1, 1, {"loss": 0.5}), "continue")
        d.wait_proposed(eid, 3)  # at least one pending trial to cancel
        pending = {t["id"] for t in d.all_trials(eid) if t["state"] == "pending"}

        st, doc = d.call("POST", "/api/v1/experiments/%d/cancel" % eid)
        self.assertEqual(st, 200, doc)
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "canceled")
        self.assertEqual(exp["counts"]["pending"], 0, exp["counts"])
        self.assertEqual(exp["counts"]["running"], 2, exp["counts"])
        self.assertTrue(pending)
        trials = d.all_trials(eid)
        self.assertEqual(exp["counts"]["canceled"], len(trials) - 2, exp["counts"])
        for t in trials:
            if t["id"] not in (t1["id"], t2["id"]):
                self.assertEqual(t["state"], "canceled", t)
        self.assertTrue(pending <= {t["id"] for t in trials})
        # No trial is proposed for a canceled experiment.
        time.sleep(0.3)
        self.assertEqual(d.trials(eid, state="pending")["total"], 0)

        # Nothing more is leased from a canceled experiment.
        self.assertEqual(w.lease(wait_s=1)[0], 204)
        # Running trials are told to stop: at the next report, or heartbeat.
        self.assertEqual(w.report_ok(t1, 2, {"loss": 0.4}), "stop")
        st, hb = w.heartbeat([t2["id"]])
        self.assertEqual(st, 200, hb)
        self.assertIn(t2["id"], hb["stop"])
        w.finish_ok(t1)
        w.finish_ok(t2)
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "canceled")
        self.assertEqual(exp["counts"]["running"], 0, exp["counts"])
        for t in d.all_trials(eid):
            self.assertIn(t["state"], TERMINAL, t)

    def test_cancel_unknown_experiment(self):
        d = self.daemon()
        self.assertError(d.request("POST", "/api/v1/experiments/999/cancel"), 404, "not_found")


class Asha(h.RungdTestCase):

    def test_worse_trial_is_stopped_at_a_rung(self):
        # grace 1, rf 2, max_t 4: rungs at 1 and 2. Trials run one after the
        # other, so the answers follow from the values alone.
        d = self.daemon()
        sched = {"type": "asha", "time_attr": "step", "max_t": 4, "grace_period": 1,
                 "reduction_factor": 2}
        r = d.request("POST", "/api/v1/experiments", h.spec(num_samples=2, scheduler=sched))
        self.assertEqual(r.status, 201, r)
        exp = r.json
        w = h.Worker(d)
        first = w.lease_one()
        for step in (1, 2, 3):
            self.assertEqual(w.report_ok(first, step, {"loss": 1.0 / step}), "continue")
        w.report_ok(first, 4, {"loss": 0.2})  # step >= max_t ends it
        self.assertEqual(d.trial(first["id"])["state"], "completed")
        w.finish_ok(first)

        second = w.lease_one()
        self.assertEqual(w.report_ok(second, 1, {"loss": 5.0}), "stop")
        self.assertEqual(d.trial(second["id"])["state"], "stopped")
        w.finish_ok(second)
        exp = d.wait_state(exp["id"], "completed")
        self.assertEqual(exp["counts"]["stopped"], 1, exp["counts"])
        self.assertEqual(exp["counts"]["completed"], 1, exp["counts"])


if __name__ == "__main__":
    h.main()
