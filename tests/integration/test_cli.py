"""Integration tests: the `rung` command line client against a real rungd.

Every test runs the real binary as a user would, against a daemon started by
the harness, and checks what it prints against what the API answers: submit
(and its errors; YAML specs, their errors' lines; W&B sweep files, converted,
a trial under their hyperband running past max_iter), ls, show, watch (driven to completion by a simulated worker
in a thread; without a TTY, on a pseudo-terminal, across a daemon restart),
cancel, export, workers, tokens, an unreachable server and RUNG_SERVER; the
steering verbs (pause, resume, extend, set, stop-trial, retry, delete), each
seen in the API; --json against the API's objects; logs and logs --follow
(over HTTP, and of a real rung-worker's trial); show's warn and error
columns and a failed experiment's error; show of a gang experiment (its
nodes, and a running trial's members, formed by two HTTP workers); watch ending on failed but not on
paused.

The client is `rung` in the folder of rungd (every program lands in one
folder), or $RUNG_CLI. A run whose stderr carries a sanitizer report fails,
so the same tests check an ASan/UBSan build.
"""

import csv
import io
import math
import os
import pty
import re
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import rungd_harness as h
import worker_harness as wh

# One client command must end within this (watch tests pass their own).
RUN_TIMEOUT_S = 30.0
SANITIZER_RE = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer")
ANSI_RE = re.compile(r"\x1b\[")


def rung_path():
    path = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
    if not os.access(path, os.X_OK):
        raise AssertionError("rung binary not found or not executable: %s" % path)
    return path


# A trainable that talks while it trains: rung logs --follow shows it.
CHATTY = """\
import json, sys, time
print("\\x1b[1mbold\\x1b[0m", flush=True)
for i in range(1, 11):
    print("epoch %d loss %.2f" % (i, 1.0 / i), flush=True)
    print("@rung " + json.dumps({"step": i, "loss": 1.0 / i}), flush=True)
    time.sleep(0.25)
"""


def objective(config, step):
    """A loss that falls with the step and is best near x = 0.3."""
    return (config["x"] - 0.3) ** 2 + 1.0 / (step + 1)


def free_port():
    """A loopback port nobody listens on (right now)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def drive(d, eid, steps=3, pause=0.0, stop=None, worker_name="sim"):
    """Leases, reports and finishes trials of experiment eid until it is no
    longer running; returns {trial id: [values]}. Runs in a thread."""
    w = h.Worker(d, name=worker_name)
    reported = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (stop and stop.is_set()):
        status, trial = w.lease(wait_s=1)
        if status == 204:
            if d.experiment(eid)["state"] != "running":
                break
            continue
        vals = reported.setdefault(trial["id"], [])
        for step in range(1, steps + 1):
            v = objective(trial["config"], step)
            vals.append(v)
            if w.report_ok(trial, step, {"loss": v}) == "stop":
                break
            time.sleep(pause)
        w.finish_ok(trial)
    return reported


class CliTest(h.RungdTestCase):

    def rung(self, *args, server=None, token=None, env=None, stdin=None,
             timeout=RUN_TIMEOUT_S, expect=None):
        """Runs the client; returns the CompletedProcess (text). server is a
        Daemon (its URL is passed with --server) or a URL string."""
        cmd = [rung_path()]
        if server is not None:
            cmd += ["--server", server if isinstance(server, str) else server.url]
        if token is not None:
            cmd += ["--token", token]
        cmd += list(args)
        e = dict(os.environ)
        e.pop("RUNG_SERVER", None)  # the caller's shell must not leak in
        e.pop("RUNG_TOKEN", None)
        e.update(env or {})
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=e,
                           timeout=timeout, cwd=self.tmp)
        self.assertNoSanitizer(p.stderr, cmd)
        if expect is not None:
            self.assertEqual(p.returncode, expect, "%s -> %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(args), p.returncode, p.stdout, p.stderr))
        return p

    def assertNoSanitizer(self, text, cmd):
        m = SANITIZER_RE.search(text)
        self.assertIsNone(m, "sanitizer report from %s:\n%s" % (cmd, text))

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def submit(self, d, **over):
        """Submits through the client; returns the experiment id."""
        path = self.write("spec.json", h.json.dumps(h.spec(**over)))
        p = self.rung("submit", path, server=d, expect=0)
        m = re.search(r"experiment (\d+) submitted", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        return int(m.group(1))

    def run_to_completion(self, d, eid, steps=3):
        reported = drive(d, eid, steps=steps)
        return d.wait_state(eid, "completed", timeout=20), reported

    # ---- submit --------------------------------------------------------

    def test_submit_prints_id_and_experiment_exists(self):
        d = self.daemon()
        path = self.write("spec.json", h.json.dumps(h.spec(name="cli-sub", num_samples=3)))
        p = self.rung("submit", path, server=d, expect=0)
        m = re.fullmatch(r"experiment (\d+) submitted: cli-sub, 3 trials\n", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        doc = d.experiment(int(m.group(1)))
        self.assertEqual(doc["name"], "cli-sub")
        self.assertEqual(doc["num_samples"], 3)
        # From stdin, -q: the id alone, for scripts.
        p = self.rung("submit", "-", "-q", server=d, stdin=h.json.dumps(h.spec(name="q")),
                      expect=0)
        self.assertRegex(p.stdout, r"^\d+\n$")
        self.assertEqual(d.experiment(int(p.stdout))["name"], "q")

    def test_submit_invalid_spec_prints_message_and_field(self):
        d = self.daemon()
        bad = h.spec(search_space={"lr": {"type": "loguniform", "low": 0, "high": 1}})
        p = self.rung("submit", self.write("bad.json", h.json.dumps(bad)), server=d)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("invalid_spec", p.stderr)
        self.assertIn("search_space.lr: low must be > 0 for loguniform", p.stderr)
        self.assertIn("(field search_space.lr.low)", p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(d.call("GET", "/api/v1/experiments")[1]["total"], 0)
        # An unknown field: the daemon names it, the client passes it on.
        p = self.rung("submit", "-", server=d, stdin=h.json.dumps(h.spec(nmu_samples=3)))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("nmu_samples", p.stderr)

    def test_submit_bad_file(self):
        d = self.daemon()
        path = self.write("broken.json", '{"name": "x",\n  "metric": }\n')
        p = self.rung("submit", path, server=d)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"broken\.json:2:\d+: invalid JSON")
        p = self.rung("submit", os.path.join(self.tmp, "missing.json"), server=d)
        self.assertEqual(p.returncode, 1)
        self.assertIn("missing.json", p.stderr)
        self.assertIn("No such file", p.stderr)
        p = self.rung("submit", "-", server=d, stdin="[1, 2]")
        self.assertEqual(p.returncode, 1)
        self.assertIn("<stdin>", p.stderr)
        self.assertEqual(d.call("GET", "/api/v1/experiments")[1]["total"], 0)

    # ---- YAML specs ----------------------------------------------------

    # Fields of the experiment object that are not the spec (docs/api.md,
    # "The experiment object"): they differ between two submissions.
    NOT_SPEC = ("id", "state", "ended_reason", "error", "created_at", "ended_at", "counts",
                "best")

    def spec_of(self, d, eid):
        doc = d.experiment(eid)
        return {k: v for k, v in doc.items() if k not in self.NOT_SPEC}

    def test_submit_yaml_example_equals_json(self):
        d = self.daemon()
        ids = {}
        for ext in ("json", "yaml"):
            path = os.path.join(wh.EXAMPLES, "branin-random." + ext)
            p = self.rung("submit", path, server=d, expect=0)
            m = re.fullmatch(r"experiment (\d+) submitted: branin-sobol, 40 trials\n", p.stdout)
            self.assertIsNotNone(m, p.stdout)
            ids[ext] = int(m.group(1))
        self.assertNotEqual(ids["json"], ids["yaml"])
        from_json, from_yaml = self.spec_of(d, ids["json"]), self.spec_of(d, ids["yaml"])
        self.assertEqual(from_yaml, from_json)
        with open(os.path.join(wh.EXAMPLES, "branin-random.json")) as f:
            for key, value in h.json.load(f).items():
                if key == "searcher":  # rungd writes the default grid_order in (docs/api.md)
                    value = dict(value, grid_order="ray")
                self.assertEqual(from_yaml[key], value, key)
        # .yml too, and stdin with --yaml; values keep their YAML types.
        yml = self.write("small.yml", "name: small\nmetric: loss\nmode: max\n"
                                      "search_space:\n  x: {type: uniform, low: 0, high: .5}\n"
                                      "  tag: '1e-4'\n"
                                      "searcher: {type: random, seed: 3}\n"
                                      "num_samples: 2\ntrainable: {type: external}\n")
        p = self.rung("submit", "-q", yml, server=d, expect=0)
        doc = d.experiment(int(p.stdout))
        self.assertEqual(doc["mode"], "max")
        self.assertEqual(doc["search_space"]["x"]["high"], 0.5)
        self.assertEqual(doc["search_space"]["tag"], "1e-4")
        with open(yml) as f:
            text = f.read()
        p = self.rung("submit", "-", "--yaml", "-q", server=d, stdin=text, expect=0)
        self.assertEqual(self.spec_of(d, int(p.stdout)), self.spec_of(d, doc["id"]))
        # Without --yaml, stdin is JSON.
        p = self.rung("submit", "-", server=d, stdin=text, expect=1)
        self.assertIn("<stdin>:1:4: invalid JSON", p.stderr)
        self.assertIn("YAML", self.rung("--help", expect=0).stdout)

    def test_submit_wandb_sweep(self):
        """A W&B sweep file is converted (cli/wandb.c) and submitted; under
        its hyperband (max_iter 27, s 2: bands 3 and 9) a trial runs past
        both bands and past max_iter, to its own end."""
        d = self.daemon()
        corpus = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "data", "wandb")
        sweep = os.path.join(corpus, "hyperband_max_iter_s.yaml")
        p = self.rung("submit", sweep, server=d, expect=0)
        m = re.fullmatch(r"experiment (\d+) submitted: hyperband_max_iter_s, 20 trials\n",
                         p.stdout)
        self.assertIsNotNone(m, p.stdout)
        doc = d.experiment(int(m.group(1)))
        self.assertEqual({k: doc["scheduler"][k] for k in ("type", "grace_period", "max_t",
                                                            "reduction_factor", "end_at_max_t")},
                         {"type": "asha", "grace_period": 3, "max_t": 9, "reduction_factor": 3,
                          "end_at_max_t": False})
        self.assertEqual(doc["trainable"]["cwd"], os.path.realpath(corpus))
        w = h.Worker(d, name="wandb")
        trial = w.lease_one()
        for step in range(1, 41):
            self.assertEqual(w.report_ok(trial, step, {"loss": 1.0 / step}), "continue", step)
        w.finish_ok(trial)
        self.assertEqual(d.trial(trial["id"])["state"], "completed")
        # Without run_cap: --num-samples, and --name.
        nrc = os.path.join(corpus, "no_run_cap.yaml")
        p = self.rung("submit", nrc, server=d, expect=1)
        self.assertIn("run_cap:", p.stderr)
        self.assertIn("--num-samples", p.stderr)
        p = self.rung("submit", "-q", nrc, "--num-samples", "3", "--name", "nrc", server=d,
                      expect=0)
        doc = d.experiment(int(p.stdout))
        self.assertEqual((doc["name"], doc["total_trials"]), ("nrc", 3))
        # What Rung cannot express names the sweep's field.
        p = self.rung("submit", os.path.join(corpus, "hyperband_strict_false.yaml"), server=d,
                      expect=1)
        self.assertIn(": early_terminate.strict: false", p.stderr)
        # Not a sweep (no method): rungd's unknown field, and a pointer.
        path = self.write("half.yaml", "program: train.py\nparameters: {lr: {values: [1]}}\n")
        p = self.rung("submit", path, server=d, expect=1)
        self.assertIn("program", p.stderr)
        self.assertIn("Coming from W&B", p.stderr)
        p = self.rung("submit", "--num-samples", "3", path, server=d, expect=1)
        self.assertIn("for W&B sweep files", p.stderr)

    def test_submit_yaml_errors_name_the_line(self):
        d = self.daemon()
        # A duplicate key, the typo'd override a JSON spec cannot carry
        # either: refused before anything is sent.
        dup = self.write("dup.yaml", "name: dup\nmetric: loss\nsearch_space:\n"
                                     "  x: {type: uniform, low: 0, high: 1}\n"
                                     "num_samples: 2\nmetric: acc\n")
        p = self.rung("submit", dup, server=d, expect=1)
        self.assertEqual(p.stderr, "rung: %s: line 6: duplicate key 'metric'\n" % dup)
        self.assertEqual(p.stdout, "")
        # libyaml's syntax errors carry the column; anchors, .inf, a second
        # document each name their line.
        cases = [
            ("name: x\nsearch_space:\n  x: 1\n y: 2\n", "line 4, column 2: "),
            ("name: x\nbase: &b {low: 0}\n", "line 2: anchors (&b) are not supported"),
            ("name: x\nstop: {metric_threshold: .inf}\n", "line 2: .inf: infinite and NaN"),
            ("name: x\n---\nname: y\n", "line 2: a second document"),
            ("# nothing\n", "line 1: empty document"),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                path = self.write("bad.yaml", text)
                p = self.rung("submit", path, server=d, expect=1)
                self.assertTrue(p.stderr.startswith("rung: %s: %s" % (path, want)), p.stderr)
        # A list is no spec: the JSON path's message.
        p = self.rung("submit", self.write("list.yaml", "- 1\n- 2\n"), server=d, expect=1)
        self.assertIn("list.yaml: a spec must be a JSON object ({...})", p.stderr)
        # A key holding a terminal escape is shown sanitized.
        p = self.rung("submit", self.write("esc.yaml", 'name: a\n"\\e[2J": 1\n"\\e[2J": 2\n'),
                      server=d, expect=1)
        self.assertNotRegex(p.stderr, ANSI_RE)
        self.assertIn("line 3: duplicate key", p.stderr)
        self.assertEqual(d.call("GET", "/api/v1/experiments")[1]["total"], 0)
        # What the daemon refuses it names, as for JSON.
        bad = self.write("bad.yaml", "name: x\nmetric: loss\nmode: min\nsearch_space:\n"
                                     "  lr: {type: loguniform, low: 0, high: 1}\n"
                                     "trainable: {type: external}\n")
        p = self.rung("submit", bad, server=d, expect=1)
        self.assertIn("(field search_space.lr.low)", p.stderr)
        self.assertEqual(d.call("GET", "/api/v1/experiments")[1]["total"], 0)

    # ---- ls and show ---------------------------------------------------

    def test_ls_and_show_print_the_api_numbers(self):
        d = self.daemon()
        done = self.submit(d, name="first-done", num_samples=4)
        doc, _ = self.run_to_completion(d, done)
        waiting = self.submit(d, name="second-waiting", num_samples=5)
        d.wait_proposed(waiting, 5)

        p = self.rung("ls", server=d, expect=0)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], r"^\s*ID\s+NAME\s+STATE\s+DONE\s+BEST")
        rows = {int(l.split()[0]): l for l in lines[1:]}
        self.assertEqual(list(rows), [waiting, done], "not newest first:\n" + p.stdout)
        row = rows[done].split()
        self.assertEqual(row[1:4], ["first-done", "completed", "4/4"])
        self.assertEqual(row[4], "%.6g" % doc["best"]["value"])
        row = rows[waiting].split()
        self.assertEqual(row[1:5], ["second-waiting", "running", "0/5", "-"])

        p = self.rung("show", str(done), server=d, expect=0)
        out = p.stdout
        self.assertIn("experiment %d: first-done" % done, out)
        self.assertRegex(out, r"state:\s+completed")
        self.assertIn("4/4 trials  4 completed", out)
        best = doc["best"]
        self.assertIn("best loss: %.6g (trial %d, step %d)" % (best["value"], best["trial_id"],
                                                              best["step"]), out)
        self.assertIn("config: x=%.6g" % best["config"]["x"], out)
        # The trials table: sorted by value, the best first, every trial once.
        table = out[out.index("trials ("):].splitlines()[2:]
        ids = [int(l.split()[0]) for l in table]
        api = d.trials(done, sort="value")["items"]
        self.assertEqual(ids, [t["id"] for t in api])
        self.assertEqual(table[0].split()[-1], "%.6g" % best["value"])

        self.assertIn("not_found", self.rung("show", "999", server=d, expect=1).stderr)
        self.rung("show", "abc", server=d, expect=2)

    def test_names_cannot_inject_terminal_escapes(self):
        d = self.daemon()
        evil = "evil\x1b[2J\x1b]0;pwned\x07name"
        eid = d.create_experiment(h.spec(name=evil))["id"]
        long_name = "é" * 40  # cut to the column, on a character boundary
        d.create_experiment(h.spec(name=long_name))
        for args in (["ls"], ["show", str(eid)], ["watch", str(eid), "--interval", "0.2"]):
            if args[0] == "watch":
                d.ok("POST", "/api/v1/experiments/%d/cancel" % eid)
            with self.subTest(args=args):
                out = self.rung(*args, server=d, expect=0).stdout
                self.assertNotIn("\x1b", out)
                self.assertNotIn("\x07", out)
                self.assertIn("evil?[2J?]0;pwned?name", out)
        out = self.rung("ls", server=d, expect=0).stdout
        self.assertIn("é" * 31 + "…", out)

    def test_show_lists_first_twenty_by_value(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=25)
        self.run_to_completion(d, eid, steps=1)
        out = self.rung("show", str(eid), server=d, expect=0).stdout
        self.assertIn("trials (first 20 of 25, by best loss)", out)
        table = out[out.index("trials ("):].splitlines()[2:]
        self.assertEqual(len(table), 20)
        api = d.trials(eid, sort="value", limit=20)["items"]
        self.assertEqual([int(l.split()[0]) for l in table], [t["id"] for t in api])

    def test_show_a_gang_experiment_its_nodes_and_members(self):
        d = self.daemon()
        eid = self.submit(d, name="gang", num_samples=2,
                          resources_per_trial={"cpu": 1, "nodes": 2, "gang_wait_s": 30})
        d.wait_proposed(eid, 2)
        a, b = h.Worker(d, name="a"), h.Worker(d, name="b")
        ta, tb = h.form_gang([(a, "127.0.0.1", 29501), (b, "127.0.0.2", 29502)])
        tid = ta["id"]
        self.assertEqual(tb["id"], tid)
        a.report_ok(ta, 1, {"loss": 0.5})
        pending = [t for t in d.all_trials(eid) if t["id"] != tid][0]

        def table(out):
            """{trial id: cells} of show's trials table, and its header."""
            lines = out.splitlines()
            header = [l for l in lines if re.match(r"\s*trial\s+state", l)][0]
            rows = {int(l.split()[0]): l.split()
                    for l in lines[lines.index(header) + 1:] if re.match(r"\s*\d+ ", l)}
            return header.split(), rows

        out = self.rung("show", str(eid), server=d, expect=0).stdout
        self.assertRegex(out, r"resources:\s+2 nodes, each cpu 1, gpu 0 \(gang_wait_s 30\)")
        header, rows = table(out)
        self.assertEqual(header[:5], ["trial", "state", "nodes", "members", "x"])
        # The running trial: 2 nodes, its members' worker ids by rank.
        self.assertEqual(rows[tid][:4], [str(tid), "running", "2", "%d,%d" % (a.id, b.id)])
        # The pending one: 2 nodes, no members yet.
        self.assertEqual(rows[pending["id"]][:4], [str(pending["id"]), "pending", "2",
                                                   "%.6g" % pending["config"]["x"]])
        # Once it ended the gang is history: no members shown.
        a.finish_ok(ta)
        b.finish_ok(tb)
        _, rows = table(self.rung("show", str(eid), server=d, expect=0).stdout)
        self.assertEqual(rows[tid][:3], [str(tid), "completed", "2"])
        self.assertNotIn("%d,%d" % (a.id, b.id), " ".join(rows[tid]))
        # --json is the API's experiment object, nodes included.
        doc = h.json.loads(self.rung("show", str(eid), "--json", server=d, expect=0).stdout)
        self.assertEqual(doc["resources_per_trial"]["nodes"], 2)
        # A 1-node experiment has neither column.
        one = self.submit(d, name="one")
        d.wait_proposed(one, 1)
        out = self.rung("show", str(one), server=d, expect=0).stdout
        self.assertRegex(out, r"resources:\s+cpu 1, gpu 0\n")
        self.assertEqual(table(out)[0][:3], ["trial", "state", "x"])

    def test_show_and_watch_a_conditional_space_by_its_config_keys(self):
        """A nested and conditional space (docs/api.md, "Nested and
        conditional spaces"): one column per flattened config key the
        trials hold, in spec order, empty where a trial took the other
        branch; no column for the nested object itself."""
        space = {
            "model": {"lr": {"type": "loguniform", "low": 1e-4, "high": 0.1}, "layers": 2},
            "opt": {"type": "choice", "values": [
                {"name": "sgd", "momentum": {"type": "uniform", "low": 0.0, "high": 0.99}},
                {"name": "adamw", "beta2": {"type": "uniform", "low": 0.9, "high": 0.999}}]},
        }
        d = self.daemon()
        eid = self.submit(d, num_samples=8, search_space=space,
                          points_to_evaluate=[{"opt.name": "sgd"}, {"opt.name": "adamw"}])
        d.wait_proposed(eid, 8)
        w = h.Worker(d, name="cond")
        while True:
            status, trial = w.lease(wait_s=1)
            if status == 204:
                break
            w.report_ok(trial, 1, {"loss": trial["config"]["model.lr"]})
            w.finish_ok(trial)
        d.wait_state(eid, "completed", timeout=20)
        trials = {t["id"]: t for t in d.all_trials(eid)}
        names = {t["config"]["opt.name"] for t in trials.values()}
        self.assertEqual(names, {"sgd", "adamw"})

        def check(out, boxed):
            sep = r"\s*[|│]\s*" if boxed else r"\s+"
            lines = out.splitlines()
            header = [l for l in lines if re.match(r"[\s|│]*trial\s*[|│]?\s*state", l)][0]
            cells = lambda l: [c.strip() for c in re.split(sep, l.strip(" |│"))]
            head = cells(header)
            self.assertEqual(head[2:6], ["model.lr", "opt.name", "opt.momentum", "opt.beta2"])
            self.assertNotIn("model", head)
            self.assertNotIn("opt", head)
            self.assertNotIn("model.layers", head)  # a constant outside a branch
            seen = 0
            for l in lines[lines.index(header) + 1:]:
                row = cells(l)
                if not row or not row[0].isdigit():
                    continue
                t = trials[int(row[0])]
                sgd = t["config"]["opt.name"] == "sgd"
                self.assertEqual(row[3], t["config"]["opt.name"])
                value = "%.6g" % t["config"]["opt.momentum" if sgd else "opt.beta2"]
                if boxed:
                    self.assertEqual(row[4:6], [value, ""] if sgd else ["", value], l)
                else:  # blank cells leave no token: the active one, then the step
                    self.assertEqual(row[4:6], [value, "1"], l)
                seen += 1
            self.assertEqual(seen, len(trials))

        check(self.rung("show", str(eid), server=d, expect=0).stdout, False)
        proc = self.start_watch(d, eid)
        rc, out, _ = self.finish_watch(proc)
        self.assertEqual(rc, 0)
        check(out, True)

    # ---- watch ---------------------------------------------------------

    def start_watch(self, d, eid, *extra):
        cmd = [rung_path(), "--server", d.url, "watch", str(eid), "--interval", "0.2"]
        cmd += list(extra)
        env = dict(os.environ)
        env.pop("RUNG_SERVER", None)
        env.pop("RUNG_TOKEN", None)
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=self.tmp)

    def finish_watch(self, proc, timeout=60):
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            self.fail("watch did not exit within %d s\nstdout:\n%s\nstderr:\n%s"
                      % (timeout, out[-3000:], err[-3000:]))
        self.assertNoSanitizer(err, "rung watch")
        return proc.returncode, out, err

    def test_watch_until_completed_without_tty(self):
        d = self.daemon()
        n = 6
        eid = self.submit(d, num_samples=n)
        proc = self.start_watch(d, eid)
        result = {}
        t = threading.Thread(target=lambda: result.update(drive(d, eid, steps=3, pause=0.1)))
        t.start()
        rc, out, err = self.finish_watch(proc)
        t.join(60)
        self.assertEqual(rc, 0, "stdout:\n%s\nstderr:\n%s" % (out[-3000:], err))
        self.assertIsNone(ANSI_RE.search(out), "escape sequences without a TTY")
        doc = d.experiment(eid)
        self.assertEqual(doc["state"], "completed")
        # Snapshots, each printed only because something changed.
        frames = re.split(r"^\[\d{4}-\d\d-\d\dT[\d:.]+Z\]\n", out, flags=re.M)[1:]
        self.assertGreaterEqual(len(frames), 3, out)
        for a, b in zip(frames, frames[1:]):
            self.assertNotEqual(a, b, "the same snapshot printed twice")
        final = frames[-1]
        self.assertIn("(completed)", final)
        self.assertIn("[%s] %d/%d trials" % ("#" * 30, n, n), final)
        best = doc["best"]
        self.assertIn("best loss: %.6g (trial %d, step %d)"
                      % (best["value"], best["trial_id"], best["step"]), final)
        # One row per trial, with its config and last value as the API has them.
        for tr in d.all_trials(eid):
            row = re.search(r"^\|\s+%d \| completed .*$" % tr["id"], final, flags=re.M)
            self.assertIsNotNone(row, "no row for trial %d in\n%s" % (tr["id"], final))
            cells = [c.strip() for c in row.group(0).strip("|").split("|")]
            self.assertEqual(cells[2], "%.6g" % tr["config"]["x"])
            self.assertEqual(cells[3], "3")  # step
            self.assertEqual(cells[4], "%.6g" % tr["last"]["loss"])
            self.assertEqual(cells[5], "%.6g" % tr["best"]["value"])
        # Some snapshot caught trials in flight.
        self.assertRegex(out, r"\| running ")

    def test_watch_caps_rows(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=12)
        d.wait_proposed(eid, 12)
        d.ok("POST", "/api/v1/experiments/%d/cancel" % eid)
        rc, out, err = self.finish_watch(self.start_watch(d, eid, "--rows", "5"))
        self.assertEqual(rc, 0, err)
        self.assertIn("(canceled)", out)
        self.assertIn("… 7 more (7 canceled)", out)
        self.assertEqual(len(re.findall(r"^\|\s+\d+ \| canceled", out, flags=re.M)), 5)

    def test_watch_pages_through_more_than_a_thousand_trials(self):
        d = self.daemon()
        n = 1005
        eid = self.submit(d, num_samples=n)
        # The daemon proposes only a little ahead of the leases: run them all
        # (a finish without reports is enough).
        w = h.Worker(d)
        for _ in range(n):
            w.finish_ok(w.lease_one())
        d.wait_state(eid, "completed")
        rc, out, err = self.finish_watch(self.start_watch(d, eid, "--rows", "5"))
        self.assertEqual(rc, 0, err)
        self.assertIn("%d/%d trials" % (n, n), out)
        self.assertIn("… %d more (%d completed)" % (n - 5, n - 5), out)

    def test_watch_on_a_tty_redraws(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=2)
        stop = threading.Event()
        t = threading.Thread(target=drive, args=(d, eid), kwargs={"pause": 0.3, "stop": stop})
        t.start()
        self.addCleanup(t.join, 60)
        self.addCleanup(stop.set)
        master, slave = pty.openpty()
        env = dict(os.environ, COLUMNS="120", LINES="40")
        env.pop("RUNG_SERVER", None)
        proc = subprocess.Popen([rung_path(), "--server", d.url, "watch", str(eid),
                                 "--interval", "0.2"], stdout=slave, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env, cwd=self.tmp)
        os.close(slave)
        chunks = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed its end
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        os.close(master)
        rc = proc.wait(timeout=10)
        err = proc.stderr.read().decode()
        proc.stderr.close()
        self.assertNoSanitizer(err, "rung watch (tty)")
        out = b"".join(chunks).decode("utf-8", errors="replace")
        self.assertEqual(rc, 0, err + out[-2000:])
        self.assertIn("\x1b[2J", out)  # cleared once
        self.assertGreaterEqual(out.count("\x1b[H"), 2, "no redraws")
        self.assertIn("experiment %d completed" % eid, out)
        self.assertIn("2/2 trials", out)

    def test_watch_unknown_experiment_fails(self):
        d = self.daemon()
        rc, out, err = self.finish_watch(self.start_watch(d, 42), timeout=20)
        self.assertEqual(rc, 1)
        self.assertIn("experiment 42 not found", err)

    def test_watch_waits_for_a_restarted_daemon(self):
        port = free_port()
        d = self.daemon("--port", str(port))
        self.assertEqual(d.port, port, "rungd did not take the later --port")
        eid = self.submit(d, num_samples=2)
        proc = self.start_watch(d, eid)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        h.wait_until(lambda: any("== experiment" in l for l in lines), 10, "a first snapshot")
        d.kill9()
        h.wait_until(lambda: any("(reconnecting…" in l for l in lines), 10, "reconnecting")
        self.assertIsNone(proc.poll(), "watch gave up while the daemon was down")
        d.restart()
        self.assertEqual(d.port, port)
        drive(d, eid)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        reader.join(10)
        err = proc.stderr.read()
        proc.stderr.close()
        proc.stdout.close()
        self.assertNoSanitizer(err, "rung watch")
        out = "".join(lines)
        self.assertEqual(rc, 0, err + out[-2000:])
        self.assertIn("(reconnected)", out)
        self.assertIn("2/2 trials", out)

    # ---- cancel, export, workers ----------------------------------------

    def test_cancel(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=3)
        d.wait_proposed(eid, 3)
        p = self.rung("cancel", str(eid), server=d, expect=0)
        self.assertIn("experiment %d: canceled" % eid, p.stdout)
        self.assertIn("3 canceled", p.stdout)
        self.assertEqual(d.experiment(eid)["state"], "canceled")
        p = self.rung("cancel", "77", server=d, expect=1)
        self.assertIn("experiment 77 not found", p.stderr)

    def test_export_writes_csv(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=5)
        self.run_to_completion(d, eid)
        p = self.rung("export", str(eid), server=d, expect=0)
        rows = list(csv.reader(io.StringIO(p.stdout)))
        self.assertEqual(rows[0][:3], ["id", "number", "state"])
        self.assertIn("x", rows[0])
        self.assertEqual(len(rows), 1 + 5)
        self.assertEqual(sorted(int(r[0]) for r in rows[1:]),
                         sorted(t["id"] for t in d.all_trials(eid)))
        api_csv = d.request("GET", "/api/v1/experiments/%d/trials.csv" % eid).text
        self.assertEqual(p.stdout, api_csv)
        out = os.path.join(self.tmp, "out.csv")
        p = self.rung("export", str(eid), "-o", out, server=d, expect=0)
        self.assertIn("exported 5 trials of experiment %d" % eid, p.stdout)
        with open(out) as f:
            self.assertEqual(f.read(), api_csv)
        # A failed export leaves an earlier file alone.
        self.rung("export", "999", "-o", out, server=d, expect=1)
        self.assertGreater(os.path.getsize(out), 0)

    def test_workers_lists_a_registered_worker(self):
        d = self.daemon()
        w = h.Worker(d, name="gpu-box-1", cpus=8, gpus=(0, 1))
        eid = self.submit(d, num_samples=1)
        trial = w.lease_one()
        d.ok("POST", "/api/v1/workers/%d/heartbeat" % w.id,
             {"trials": [trial["id"]],
              "gpus": [{"index": 0, "util": 0.97, "memory_used_mb": 400},
                       {"index": 1, "util": 0.05, "memory_used_mb": 12}]})
        p = self.rung("workers", server=d, expect=0)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], r"^\s*ID\s+NAME\s+HOST\s+STATE")
        row = lines[1].split()
        self.assertEqual(row[:5], [str(w.id), "gpu-box-1", socket.gethostname(), "alive", "8"])
        self.assertIn("0 fake 97% 400/1024 MiB", lines[1])
        self.assertIn(str(trial["id"]), lines[1])
        self.assertIn("1 fake 5% 12/1024 MiB", lines[2])  # one line per GPU
        w.finish_ok(trial)
        d.wait_state(eid, "completed")

    # ---- steering: pause, resume, extend, set, stop-trial, retry, delete, logs

    def test_pause_resume_extend_and_set(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=3, name="steer")
        d.wait_proposed(eid, 3)
        w = h.Worker(d)
        t1 = w.lease_one()
        w.report_ok(t1, 1, {"loss": 0.9})
        # pause: nothing more is leased, the running trial runs on.
        p = self.rung("pause", str(eid), server=d, expect=0)
        self.assertIn("experiment %d: paused (1 running, 2 pending)" % eid, p.stdout)
        self.assertEqual(d.experiment(eid)["state"], "paused")
        self.assertEqual(w.lease(wait_s=0)[0], 204)
        self.assertEqual(w.report_ok(t1, 2, {"loss": 0.8}), "continue")
        self.assertRegex(self.rung("ls", server=d, expect=0).stdout, r"steer\s+paused")
        # pause --running: the running trial is paused too (by its next
        # heartbeat), for a resume from its checkpoint.
        p = self.rung("pause", "--running", str(eid), server=d, expect=0)
        self.assertIn("experiment %d: paused" % eid, p.stdout)
        self.assertEqual(w.heartbeat([t1["id"]]), (200, {"stop": [t1["id"]]}))
        cur = d.trial(t1["id"])
        self.assertEqual((cur["state"], cur["paused_by"]), ("paused", "user"), cur)
        p = self.rung("resume", str(eid), server=d, expect=0)
        self.assertIn("experiment %d: running" % eid, p.stdout)
        self.assertEqual(d.experiment(eid)["state"], "running")
        # The paused trial goes back to the worker that holds its checkpoint.
        t = w.lease_one()
        self.assertEqual(t["id"], t1["id"])
        w.report_ok(t, 3, {"loss": 0.7})
        w.finish_ok(t)
        self.run_to_completion(d, eid)
        self.rung("pause", str(eid), server=d, expect=1)  # ended: 409
        self.rung("resume", str(eid), server=d, expect=1)
        # extend: a completed experiment runs again with more trials.
        p = self.rung("extend", str(eid), "4", server=d, expect=0)
        self.assertIn("experiment %d: running" % eid, p.stdout)
        self.assertIn("num_samples 4 (4 trials in all)", p.stdout)
        self.assertEqual(d.experiment(eid)["total_trials"], 4)
        p = self.rung("set", str(eid), "--priority", "7", "--share", "2.5",
                      "--max-concurrent", "4", server=d, expect=0)
        self.assertIn("priority 7, share 2.5, max_concurrent_trials 4", p.stdout)
        x = d.experiment(eid)
        self.assertEqual((x["priority"], x["share"], x["max_concurrent_trials"]), (7, 2.5, 4))
        self.rung("set", str(eid), "--num-samples", "5", "--priority=-2", server=d, expect=0)
        x = d.experiment(eid)
        self.assertEqual((x["num_samples"], x["priority"]), (5, -2))
        # The daemon's refusal names the field; the client exits 1.
        p = self.rung("extend", str(eid), "1", server=d, expect=1)
        self.assertIn("num_samples", p.stderr)
        p = self.rung("set", str(eid), "--share", "0", server=d, expect=1)
        self.assertIn("share", p.stderr)
        self.rung("extend", "999", "9", server=d, expect=1)
        # Wrong arguments never reach the daemon.
        p = self.rung("set", str(eid), "--colour", "red", server=d, expect=2)
        self.assertIn("unknown option '--colour'", p.stderr)
        for args in (["set", str(eid), "--share", "nan"], ["set", str(eid), "--share=inf"],
                     ["set", str(eid), "--priority="], ["set", str(eid)],
                     ["set", str(eid), "--priority"], ["set", str(eid), "--priority", "high"],
                     ["extend", str(eid)], ["extend", str(eid), "many"], ["pause", "x"],
                     ["pause", str(eid), "--all"], ["resume"], ["resume", "1", "2"]):
            with self.subTest(args=args):
                p = self.rung(*args, server=d, expect=2)
                self.assertIn("usage: rung", p.stderr)
        self.assertEqual(d.experiment(eid)["num_samples"], 5)

    def test_stop_trial_retry_and_delete(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=2, max_failed_trials=0)
        d.wait_proposed(eid, 2)
        w = h.Worker(d)
        t1 = w.lease_one()
        t2 = w.lease_one()
        p = self.rung("stop-trial", str(t1["id"]), server=d, expect=0)
        self.assertIn("stops at its next report", p.stdout)
        w.report(t1, 1, {"loss": 0.5})
        self.assertEqual(d.trial(t1["id"])["stopped_by"], "user")
        self.rung("stop-trial", str(t1["id"]), server=d, expect=1)  # ended: 409
        w.finish_ok(t2, status="failed", error="boom")
        d.wait_state(eid, "completed")
        p = self.rung("retry", str(eid), server=d, expect=0)
        self.assertIn("1 failed trial back in line", p.stdout)
        t = w.lease_one()
        self.assertEqual((t["id"], t["attempt"]), (t2["id"], 2))
        w.report_ok(t, 1, {"loss": 0.1})
        w.finish_ok(t)
        d.wait_state(eid, "completed")
        p = self.rung("delete", str(eid), server=d, expect=0)
        self.assertIn("experiment %d deleted, with its 2 trials" % eid, p.stdout)
        self.rung("show", str(eid), server=d, expect=1)

    def test_json_output_is_the_apis_objects(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=1, name="json-exp")
        other = self.submit(d, num_samples=2, name="json-other")
        h.Worker(d, name="json-box")
        # show --json: the experiment object, every field as GET answers it.
        shown = h.json.loads(self.rung("show", str(eid), "--json", server=d, expect=0).stdout)
        self.assertEqual(shown, d.experiment(eid))
        # ls --json: the list object of every page, newest first.
        p = self.rung("ls", "--json", server=d, expect=0)
        self.assertTrue(p.stdout.endswith("}\n"), p.stdout[-20:])
        listed = h.json.loads(p.stdout)
        api = d.ok("GET", "/api/v1/experiments")
        self.assertEqual(listed, {"items": api["items"], "total": api["total"]})
        self.assertEqual([x["id"] for x in listed["items"]], [other, eid])
        # workers --json: the workers list object (without last_seen, which
        # moves while we look).
        workers = h.json.loads(self.rung("workers", "--json", server=d, expect=0).stdout)
        api = d.ok("GET", "/api/v1/workers")
        self.assertEqual(set(workers), {"items", "total"})
        self.assertEqual(workers["total"], api["total"])
        drop = lambda ws: [{k: v for k, v in w.items() if "seen" not in k} for w in ws]
        self.assertEqual(drop(workers["items"]), drop(api["items"]))
        self.assertEqual([x["name"] for x in workers["items"]], ["json-box"])
        self.assertEqual(workers["items"][0]["state"], "alive")
        # --json stands anywhere after the command; other flags are refused.
        again = self.rung("show", "--json", str(eid), server=d, expect=0).stdout
        self.assertEqual(h.json.loads(again)["id"], eid)
        self.rung("ls", "--jsn", server=d, expect=2)

    def test_logs_and_follow(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=1)
        d.wait_proposed(eid, 1)
        w = h.Worker(d)
        t = w.lease_one()
        d.ok("POST", "/api/v1/workers/%d/heartbeat" % w.id,
             {"trials": [t["id"]], "logs": {str(t["id"]): "epoch 1\nepoch 2\n"}})
        p = self.rung("logs", str(t["id"]), server=d, expect=0)
        self.assertEqual(p.stdout, "epoch 1\nepoch 2\n")
        # --follow prints what is new until the trial ends.
        follower = subprocess.Popen([rung_path(), "--server", d.url, "logs", str(t["id"]),
                                     "--follow", "--interval", "0.2"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        w.finish_ok(t, log="epoch 1\nepoch 2\nepoch 3 \x1b[31mred\x1b[0m\n")
        out, err = follower.communicate(timeout=10)
        self.assertNoSanitizer(err, "logs --follow")
        self.assertEqual(follower.returncode, 0, err)
        self.assertEqual(out.count("epoch 2"), 1)  # printed once, not again
        self.assertIn("epoch 3", out)
        self.assertNotIn("\x1b", out)  # a trainable's escapes never reach the terminal
        self.rung("logs", "999", server=d, expect=1)

    def test_logs_follow_exits_3_on_a_failed_trial(self):
        self.follow_failed([rung_path()], None)

    def test_python_logs_follow_exits_3_on_a_failed_trial(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(wh.REPO_ROOT, "python"))
        self.follow_failed([sys.executable, "-m", "rung"], env)

    def follow_failed(self, cli, env):
        # `rung logs 17 -f && next-step`: a trial that failed stops the
        # script (exit 3, docs/api.md "rung"), its error in one line on
        # stderr (error_summary); the log itself is printed whole all the same.
        d = self.daemon()
        eid = self.submit(d, num_samples=1)
        d.wait_proposed(eid, 1)
        w = h.Worker(d)
        t = w.lease_one()
        self.assertEqual(w.heartbeat([t["id"]], logs={str(t["id"]): "epoch 1\n"})[0], 200)
        proc = subprocess.Popen(cli + ["--server", d.url, "logs", str(t["id"]), "--follow",
                                       "--interval", "0.1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        try:
            time.sleep(0.4)
            w.finish_ok(t, status="failed", log="epoch 1\nTraceback\n",
                        error="exit status 1\nValueError: \x1b[2Jbad lr")
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertNoSanitizer(err, "logs --follow")
        self.assertEqual(proc.returncode, 3, err)
        self.assertEqual(out, "epoch 1\nTraceback\n")
        # (the escape made harmless: '?' from C, ' ' from Python)
        self.assertRegex(err, r"rung: trial %d failed: exit status 1: ValueError: .\[2Jbad lr\n"
                         % t["id"])
        self.assertNotIn("\x1b", err)
        # Without --follow it is a view: 0 whatever the trial's state.
        p = subprocess.run(cli + ["--server", d.url, "logs", str(t["id"])], env=env,
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_logs_follow_rides_out_a_restart_and_a_retry(self):
        self.follow_restart_retry([rung_path()], None)

    def test_python_logs_follow_rides_out_a_restart_and_a_retry(self):
        # The Python client's logs --follow (python/rung/_cli/control.py) keeps the
        # C client's promises, on the same script.
        env = dict(os.environ, PYTHONPATH=os.path.join(wh.REPO_ROOT, "python"))
        self.follow_restart_retry([sys.executable, "-m", "rung"], env)

    def follow_restart_retry(self, cli, env):
        port = free_port()
        d = self.daemon("--port", str(port), "--lease-s", "2")
        eid = self.submit(d, num_samples=1, max_failures=3)
        d.wait_proposed(eid, 1)
        w = h.Worker(d)
        t = w.lease_one()
        tid = t["id"]
        self.assertEqual(w.heartbeat([tid], logs={str(tid): "a1\na2\n"})[0], 200)
        proc = subprocess.Popen(cli + ["--server", d.url, "logs", str(tid), "--follow",
                                       "--interval", "0.1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        try:
            h.wait_until(lambda: "a2\n" in lines, 10, "the first lines")
            # rungd restarts (and may have lost the lines the heartbeat
            # brought, docs/api.md, log_tail): nothing is printed twice.
            d.kill9()
            time.sleep(0.3)
            d.restart()
            self.assertEqual(d.port, port)
            time.sleep(0.3)
            self.assertEqual(w.heartbeat([tid], logs={str(tid): "a1\na2\na3\n"})[0], 200)
            h.wait_until(lambda: "a3\n" in lines, 10, "the line after the restart")
            # An older tail (what a restart that lost lines shows) is not new.
            self.assertEqual(w.heartbeat([tid], logs={str(tid): "a1\na2\n"})[0], 200)
            time.sleep(0.3)
            self.assertEqual(w.heartbeat([tid], logs={str(tid): "a1\na2\na3\na4\n"})[0], 200)
            h.wait_until(lambda: "a4\n" in lines, 10, "the next line")
            # The worker is lost: the trial runs again, its log anew.
            h.wait_until(lambda: d.trial(tid)["attempt"] == 2, 15, "a second attempt")
            time.sleep(0.3)
            self.assertEqual(lines, ["a1\n", "a2\n", "a3\n", "a4\n"])  # the old tail is not new
            t2 = w.lease_one()
            self.assertEqual(t2["id"], tid)
            self.assertEqual(w.heartbeat([tid], logs={str(tid): "a1\n"})[0], 200)
            h.wait_until(lambda: len(lines) == 5, 10, "the second attempt's line")
            w.finish_ok(t2, log="a1\nb2\n")
            rc = proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(10)
        err = proc.stderr.read()
        proc.stderr.close()
        proc.stdout.close()
        self.assertNoSanitizer(err, "rung logs")
        self.assertEqual(rc, 0, err)
        self.assertEqual(lines, ["a1\n", "a2\n", "a3\n", "a4\n", "a1\n", "b2\n"])
        self.assertIn("rung: trial %d: attempt 2" % tid, err)

    def test_logs_follow_a_real_worker(self):
        d = self.daemon("--lease-s", "3")  # a heartbeat every 0.5 s
        prog = os.path.join(self.tmp, "chatty.py")
        with open(prog, "w") as f:
            f.write(CHATTY)
        spec = wh.command_spec([wh.PYTHON, prog], num_samples=1)
        eid = d.create_experiment(spec)["id"]
        tag = "cli-" + str(os.getpid()) + "-" + str(eid)
        self.tag = tag
        w = wh.WorkerProc(self, d, "chatty")
        self.addCleanup(wh.kill_tagged, tag)
        self.addCleanup(w.stop)
        tid = h.wait_until(lambda: [t["id"] for t in d.all_trials(eid)
                                    if t["state"] == "running"], 20, "a running trial")[0]
        p = self.rung("logs", str(tid), "--follow", "--interval", "0.2", server=d, expect=0,
                      timeout=30)
        self.assertEqual(d.trial(tid)["state"], "completed")
        epochs = [l for l in p.stdout.splitlines() if l.startswith("epoch")]
        self.assertEqual(epochs, ["epoch %d loss %.2f" % (i, 1.0 / i) for i in range(1, 11)])
        self.assertNotIn("@rung", p.stdout)  # report lines are not the log
        self.assertNotIn("\x1b", p.stdout)
        self.assertIn("?[1mbold?[0m", p.stdout)

    def test_show_has_the_error_column_and_a_failed_experiments_error(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=2, max_failed_trials=1, max_concurrent_trials=2,
                          name="doomed")
        d.wait_proposed(eid, 2)
        w = h.Worker(d)
        ok, bad = w.lease_one(), w.lease_one()
        # The first trial finishes with three refused @rung lines.
        warnings = {"count": 3, "last": [{"line": "@rung {loss: 1}", "why": "not JSON"}]}
        code, doc = d.call("POST", "/api/v1/trials/%d/finish" % ok["id"],
                           {"lease_token": ok["lease_token"], "status": "completed",
                            "warnings": warnings})
        self.assertEqual(code, 200, doc)
        w.finish_ok(bad, status="failed",
                    error="exit status 1\nImportError: no torch \x1b[2J" + "x" * 200)
        d.wait_state(eid, "failed")
        p = self.rung("show", str(eid), server=d, expect=0)
        self.assertRegex(p.stdout, r"state:\s+failed \(max_failed_trials\)")
        self.assertRegex(p.stdout, r"\n  error:\s+\S")
        self.assertNotIn("\x1b", p.stdout)
        lines = p.stdout.splitlines()
        header = [l for l in lines if re.match(r"\s*trial\s+state", l)][0]
        self.assertRegex(header, r"\bwarn\s+error\s*$")
        row = {int(l.split()[0]): l for l in lines[lines.index(header) + 1:]
               if re.match(r"\s*\d+ ", l)}
        # The error in one line: its first line and the exception line.
        self.assertIn("exit status 1: ImportError: no torch", row[bad["id"]])
        self.assertRegex(row[ok["id"]], r"completed .* 3\s*$")  # warn 3, no error
        self.assertLess(len(row[bad["id"]]), 200)  # cut to fit
        # No trailing blanks, even before an empty last cell.
        self.assertEqual([l for l in lines if l.endswith(" ")], [])
        # ls shows the state; watch ends on it.
        self.assertRegex(self.rung("ls", server=d, expect=0).stdout, r"doomed\s+failed")
        p = self.rung("watch", str(eid), "--interval", "0.2", server=d, expect=0, timeout=10)
        self.assertIn("failed", p.stdout)

    def test_watch_follows_a_paused_experiment(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=2)
        d.wait_proposed(eid, 2)
        self.rung("pause", str(eid), server=d, expect=0)
        watcher = subprocess.Popen([rung_path(), "--server", d.url, "watch", str(eid),
                                    "--interval", "0.2"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.0)
            self.assertIsNone(watcher.poll(), "watch ended on a paused experiment")
            self.rung("resume", str(eid), server=d, expect=0)
            self.run_to_completion(d, eid)
            out, err = watcher.communicate(timeout=10)
        finally:
            if watcher.poll() is None:
                watcher.kill()
                watcher.communicate()
        self.assertNoSanitizer(err, "watch")
        self.assertEqual(watcher.returncode, 0, err)
        self.assertIn("paused", out)
        self.assertIn("completed", out)

    def test_logs_follow_a_sliding_tail_and_unfinished_lines(self):
        d = self.daemon()
        eid = self.submit(d, num_samples=1)
        d.wait_proposed(eid, 1)
        w = h.Worker(d)
        t = w.lease_one()
        tid = t["id"]
        follower = subprocess.Popen([rung_path(), "--server", d.url, "logs", "--interval", "0.1",
                                     str(tid), "-f"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The worker sends its last lines; lines past 8 KiB slide out.
            log = ""
            sent = []
            for i in range(1, 7):
                log += "".join("line %d.%03d %s\n" % (i, j, "y" * 40) for j in range(60))
                log += "progress %d" % i  # not ended yet: the next poll goes on
                self.assertEqual(w.heartbeat([tid], logs={str(tid): log})[0], 200)
                sent.append(log)
                h.wait_until(lambda: d.trial(tid)["log_tail"] == log[-8192:], 5, "the tail")
                time.sleep(0.4)  # more than two polls
                log += " done\n"
            w.finish_ok(t, log=log + "bye\n")
            out, err = follower.communicate(timeout=10)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.communicate()
        self.assertNoSanitizer(err, "logs")
        self.assertEqual(follower.returncode, 0, err)
        # Every line once, in order, whole: what a reader of the log would see.
        expected = (log + "bye\n").splitlines()
        self.assertEqual(out.splitlines(), expected)
        self.assertGreater(len(log), 8192)
        # Without --follow: the tail as it is now (its first line may be cut).
        p = self.rung("logs", str(tid), server=d, expect=0)
        self.assertEqual(p.stdout, (log + "bye\n")[-8192:])

    # ---- scripts/demo.sh ---------------------------------------------------

    def test_demo_once_prints_only_live_addresses(self):
        # `demo.sh --once` printed the dashboard's address after the
        # experiment and then stopped rungd: a dead link. Every address it
        # prints must answer when printed, and its last words say it stopped.
        port = free_port()
        server = "http://127.0.0.1:%d" % port
        spec = self.write("quick.json", h.json.dumps(wh.command_spec(
            [wh.PYTHON, "-c", "print('@rung {\"loss\": 1.0}')"], num_samples=2)))
        env = dict(os.environ, RUNG_PORT=str(port), RUNG_DEMO_SPEC=spec, RUNG_DEMO_DIR=self.tmp,
                   RUNG_DEMO_BIN=os.path.dirname(rung_path()))
        proc = subprocess.Popen(["bash", os.path.join(wh.REPO_ROOT, "scripts", "demo.sh"),
                                 "--once"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=env, start_new_session=True)
        lines, live = [], []
        try:
            for line in proc.stdout:
                lines.append(line)
                if "dashboard: " + server in line:
                    live.append(self.answers(server))
            rc = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
            proc.stdout.close()
        text = "".join(lines)
        self.assertEqual(rc, 0, text)
        self.assertEqual(live, [True], text)  # printed once, while rungd ran
        last = max(i for i, l in enumerate(lines) if server in l)
        self.assertIn("stopped", "".join(lines[last:]), text)
        self.assertFalse(self.answers(server), "rungd still runs after demo.sh --once")
        self.assertTrue(os.path.isdir(os.path.join(self.tmp, "rung-demo-worker", "trials")))

    @staticmethod
    def answers(server):
        """Whether the dashboard's daemon answers (GET /healthz)."""
        try:
            with urllib.request.urlopen(server + "/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    # ---- connection, auth, environment, usage ---------------------------

    def test_token(self):
        d = self.daemon("--token", "s3cret", token="s3cret")
        p = self.rung("ls", server=d, token="wrong", expect=1)
        self.assertIn("unauthorized", p.stderr)
        self.assertIn("RUNG_TOKEN", p.stderr)
        self.rung("ls", server=d, expect=1)
        eid = self.submit_with_token(d, "s3cret")
        p = self.rung("show", str(eid), server=d, env={"RUNG_TOKEN": "s3cret"}, expect=0)
        self.assertIn("experiment %d" % eid, p.stdout)
        # A token a header cannot carry is refused before anything is sent.
        self.rung("ls", server=d, token="a\nb", expect=2)

    def submit_with_token(self, d, token):
        p = self.rung("submit", "-", "-q", server=d, token=token,
                      stdin=h.json.dumps(h.spec()), expect=0)
        return int(p.stdout)

    def test_unreachable_server(self):
        url = "http://127.0.0.1:%d" % free_port()
        for args in (["ls"], ["show", "1"], ["watch", "1"], ["workers"]):
            with self.subTest(args=args):
                p = self.rung(*args, server=url, timeout=20)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("rung: cannot reach rungd at %s" % url, p.stderr)

    def test_rung_server_environment(self):
        d = self.daemon()
        eid = self.submit(d, name="via-env")
        p = self.rung("ls", env={"RUNG_SERVER": d.url}, expect=0)
        self.assertIn("via-env", p.stdout)
        # Without a scheme, and with the flag after the command.
        p = self.rung("show", str(eid), "--server", "%s:%d" % (d.host, d.port), expect=0)
        self.assertIn("via-env", p.stdout)
        # The flag wins over the environment.
        p = self.rung("ls", server=d, env={"RUNG_SERVER": "http://127.0.0.1:1"}, expect=0)
        self.assertIn("via-env", p.stdout)

    def test_usage(self):
        p = self.rung("--help", expect=0)
        self.assertIn("usage: rung", p.stdout)
        for cmd in ("submit", "ls", "show", "watch", "cancel", "export", "workers", "pause",
                    "resume", "extend", "set", "stop-trial", "retry", "delete", "logs"):
            self.assertRegex(p.stdout, r"\n  %s\b" % cmd)
        self.assertIn("--json", p.stdout)
        self.assertIn("usage: rung", self.rung("help", expect=0).stdout)
        self.assertIn("usage: rung", self.rung(expect=2).stderr)
        self.assertIn("unknown command", self.rung("frobnicate", expect=2).stderr)
        self.rung("show", expect=2)
        self.rung("show", "1", "2", expect=2)
        self.rung("show", "-3", expect=2)
        self.rung("export", "1", "-o", expect=2)
        self.rung("watch", "1", "--interval", "0", expect=2)
        self.rung("ls", "--server", expect=2)
        for args in (["stop-trial"], ["stop-trial", "0"], ["retry", "1", "2"], ["delete"],
                     ["delete", "one"], ["logs"], ["logs", "1", "--interval", "0"],
                     ["logs", "1", "--interval"], ["logs", "1", "--tail"], ["ls", "1"],
                     ["workers", "--jsn"]):
            with self.subTest(args=args):
                p = self.rung(*args, server="http://127.0.0.1:1", expect=2)
                self.assertIn("usage: rung [--server URL] [--token T] %s" % args[0], p.stderr)


if __name__ == "__main__":
    h.main()
