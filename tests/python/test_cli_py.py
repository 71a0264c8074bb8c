"""`python3 -m rung`, the Python command line client (rung.cli), run as a
program: its verbs mirror the C client's, its exit statuses are 0 done, 1
the request failed, 2 bad arguments.

The tests that talk to a daemon start a real rungd through
tests/integration/rungd_harness.py; its path comes from the environment
variable RUNGD, which ctest sets. Without it they are skipped.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON_DIR = os.path.join(ROOT, "python")
FIXTURES = os.path.join(HERE, "fixtures")
TIMEOUT_S = 60


def run_cli(*args: str, server: Optional[str] = None, stdin: Optional[str] = None,
            cwd: Optional[str] = None,
            extra_env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Runs `python3 -m rung ARGS` with this checkout's package."""
    env = dict(os.environ)
    env.update(extra_env or {})
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("RUNG_TOKEN", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the source tree
    if server is not None:
        env["RUNG_SERVER"] = server
    return subprocess.run([sys.executable, "-m", "rung", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=cwd or ROOT,
                          timeout=TIMEOUT_S)


def c_verbs() -> list[str]:
    """The verbs of the C client's command table (cli/main.c)."""
    with open(os.path.join(ROOT, "cli", "main.c"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("commands[] = {"):]
    table = table[:table.index("};")]
    return re.findall(r'^\s*\{"([a-z-]+)",', table, re.M)


class WithoutDaemonTest(unittest.TestCase):
    """Help, usage errors and an unreachable daemon."""

    def test_help_names_every_verb_of_the_c_client(self) -> None:
        verbs = c_verbs()
        self.assertIn("submit", verbs)
        out = run_cli("--help")
        self.assertEqual(out.returncode, 0, out.stderr)
        for verb in verbs + ["best", "run-function"]:
            with self.subTest(verb=verb):
                self.assertRegex(out.stdout, rf"(?m)^\s+{re.escape(verb)}\b")
        self.assertEqual(run_cli("help").stdout, out.stdout)

    def test_modules_mirror_the_c_client_file_for_file(self) -> None:
        # rung/_cli/__init__.py promises a verb sits in the module named as
        # the C file that holds it (cli_cmd_ls in cli/experiments.c, cmd_ls
        # in _cli/experiments.py), and that no command module imports
        # another: a moved verb or a new cycle fails here.
        def defined(folder: str, suffix: str, pattern: str) -> dict[str, str]:
            where = {}
            for name in sorted(os.listdir(folder)):
                if name.endswith(suffix):
                    with open(os.path.join(folder, name), encoding="utf-8") as f:
                        for verb in re.findall(pattern, f.read(), re.M):
                            where[verb] = name[:-len(suffix)]
            return where

        c_dir = os.path.join(ROOT, "cli")
        py_dir = os.path.join(PYTHON_DIR, "rung", "_cli")
        c_where = defined(c_dir, ".c", r"^int cli_cmd_(\w+)\(\w+ \*h, int argc")
        py_where = defined(py_dir, ".py", r"^def cmd_(\w+)\(")
        self.assertGreaterEqual(len(c_where), 15, c_where)
        for verb, stem in c_where.items():
            with self.subTest(verb=verb):
                self.assertEqual(py_where.get(verb), stem)
        c_files = {n[:-2] for n in os.listdir(c_dir) if n.endswith(".c")} - {"yaml"}
        py_files = {n[:-3] for n in os.listdir(py_dir) if n.endswith(".py")}
        # Every module has its C namesake (C may have more: helpers Python
        # does not need, or that rung.client and rung._yaml hold).
        self.assertLessEqual(py_files - {"__init__", "commands"}, c_files)
        commands = set(c_where.values()) | {"main"}
        for stem in py_files:
            with open(os.path.join(py_dir, stem + ".py"), encoding="utf-8") as f:
                imported = set(re.findall(r"^from \.(\w+) import", f.read(), re.M))
            with self.subTest(module=stem):
                allowed = py_files if stem == "main" else py_files - commands
                self.assertLessEqual(imported, allowed)

    def test_usage_errors_exit_2(self) -> None:
        for argv, words in [((), "usage"), (("frobnicate",), "invalid choice"),
                            (("show",), "required: ID"), (("show", "abc"), "positive integer"),
                            (("extend", "1", "0"), "positive integer"),
                            (("best", "1", "--scope", "first"), "invalid choice"),
                            (("ls", "--bogus"), "unrecognized")]:
            with self.subTest(argv=argv):
                out = run_cli(*argv)
                self.assertEqual(out.returncode, 2, out.stderr)
                self.assertIn(words, out.stderr)
                self.assertEqual(out.stdout, "")

    def test_unreachable_daemon_exits_1(self) -> None:
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        out = run_cli("--server", f"http://127.0.0.1:{port}", "ls")
        self.assertEqual(out.returncode, 1)
        self.assertIn(f"rung: cannot reach rungd at http://127.0.0.1:{port}", out.stderr)
        self.assertNotIn("Traceback", out.stderr)

    def test_run_function(self) -> None:
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, "trainable.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write("import rung\n\ndef train(config):\n    rung.report(loss=config['x'])\n")
        out = run_cli("run-function", path, "train", extra_env={"RUNG_CONFIG": '{"x": 0.25}'})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("@rung "), out.stdout)
        self.assertEqual(json.loads(out.stdout[6:]), {"step": 1, "loss": 0.25})

    def test_local_errors_exit_1(self) -> None:
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        bad = os.path.join(folder, "bad.yaml")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("name: x\nname: y\n")
        for argv, words in [(("submit", os.path.join(folder, "missing.json")), "missing.json"),
                            (("submit", bad), "bad.yaml: line 2: duplicate key 'name'"),
                            (("submit", "--wandb", os.path.join(FIXTURES, "wandb_nested.yaml")),
                             "parameters.nested_category_1.parameters: nested parameters"),
                            (("submit", "--wandb", os.path.join(FIXTURES,
                                                                "wandb_sweepdemo.yaml")),
                             "run_cap: ")]:
            with self.subTest(argv=argv):
                out = run_cli(*argv, server="http://127.0.0.1:1")
                self.assertEqual(out.returncode, 1, out.stderr)
                self.assertIn(words, out.stderr)
                self.assertNotIn("Traceback", out.stderr)
        out = run_cli("submit", "-", stdin="[1, 2]", server="http://127.0.0.1:1")
        self.assertEqual(out.returncode, 1)
        self.assertIn("an experiment spec is a JSON object", out.stderr)

    def test_deep_and_oversize_files_are_refused_as_the_c_client_does(self) -> None:
        # 1,000 levels raised an uncaught RecursionError; more than 64 MiB
        # was read whole. The C client's messages (cli/yaml.c, cli/experiments.c).
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        files = {"deep.yaml": "".join("  " * i + "a:\n" for i in range(1000)) + "  " * 1000
                 + "x: 1\n",
                 "deep.json": '{"a":\n' + "[" * 1000 + "]" * 1000 + "}\n",
                 "flow.yml": "a: " + "[" * 1000 + "]" * 1000 + "\n"}
        for name, text in files.items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(text)
        huge = os.path.join(folder, "huge.yaml")
        with open(huge, "wb") as f:
            f.truncate((64 << 20) + 1)  # sparse
        for name, words in [("deep.yaml", "deep.yaml: line 33: nested deeper than 32 levels"),
                            ("deep.json", "deep.json: line 2: nested deeper than 32 levels"),
                            ("flow.yml", "flow.yml: line 1: nested deeper than 32 levels"),
                            ("huge.yaml", "huge.yaml: larger than 64 MiB; is it a spec?")]:
            with self.subTest(name=name):
                out = run_cli("submit", os.path.join(folder, name), server="http://127.0.0.1:1")
                self.assertEqual(out.returncode, 1, out.stderr)
                self.assertEqual(out.stderr, f"rung: {os.path.join(folder, words)}\n")
        out = run_cli("submit", "--wandb", os.path.join(folder, "deep.yaml"),
                      server="http://127.0.0.1:1")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("line 33: nested deeper than 32 levels", out.stderr)
        self.assertNotIn("Traceback", out.stderr)


YAML_SPEC = """\
# A Rung spec written in YAML: the fields of docs/api.md.
name: yaml-spec
metric: loss
mode: min
priority: 5          # leased before the other experiments
search_space:
  lr: {type: loguniform, low: 1e-4, high: 1e-1}
  layers: {type: choice, values: [1, 2]}
num_samples: 2
trainable:
  type: external
"""


@unittest.skipUnless(os.environ.get("RUNGD"), "RUNGD is not set (ctest sets it to the built "
                     "rungd): no daemon to talk to")
class WithDaemonTest(unittest.TestCase):
    """The verbs against a real rungd, in one sequence (each step builds on
    the last)."""

    @classmethod
    def setUpClass(cls) -> None:
        sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
        import rungd_harness

        cls.harness = rungd_harness
        cls.folder = tempfile.mkdtemp(prefix="rung-cli-py-")
        cls.daemon = rungd_harness.Daemon(cls.folder).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.daemon.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def cli(self, *args: str, rc: int = 0, stdin: Optional[str] = None) -> \
            subprocess.CompletedProcess:
        out = run_cli(*args, server=self.daemon.url, stdin=stdin)
        self.assertEqual(out.returncode, rc, f"{args}: {out.stdout}\n{out.stderr}")
        self.assertNotIn("Traceback", out.stderr)
        return out

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli(*args).stdout)

    def test_verbs(self) -> None:
        # submit: JSON, YAML, a W&B sweep, and - (stdin).
        out = self.cli("submit", os.path.join(ROOT, "examples", "logreg-random.json"))
        m = re.fullmatch(r"experiment (\d+) submitted: moons-mlp-random, 24 trials\n",
                         out.stdout)
        self.assertIsNotNone(m, out.stdout)
        json_id = int(m.group(1))
        spec_path = os.path.join(self.folder, "spec.yaml")
        with open(spec_path, "w", encoding="utf-8") as f:
            f.write(YAML_SPEC)
        yaml_id = int(self.cli("submit", "-q", spec_path).stdout)
        yaml_exp = self.daemon.experiment(yaml_id)
        self.assertEqual(yaml_exp["search_space"]["lr"],
                         {"type": "loguniform", "low": 1e-4, "high": 0.1})
        self.assertEqual(yaml_exp["priority"], 5)
        wandb_id = int(self.cli("submit", "-q", "--wandb",
                                os.path.join(FIXTURES, "wandb_bayes_hyperband.yaml"),
                                "--num-samples", "3").stdout)
        wandb_exp = self.daemon.experiment(wandb_id)
        self.assertEqual(wandb_exp["scheduler"]["grace_period"], 3)
        self.assertEqual(wandb_exp["trainable"]["cwd"], FIXTURES)
        # Without --wandb too: a sweep file is recognized, as by the C client.
        auto_id = int(self.cli("submit", "-q", os.path.join(
            FIXTURES, "wandb_bayes_hyperband.yaml"), "--num-samples", "3").stdout)
        auto_exp = self.daemon.experiment(auto_id)
        for key in ("search_space", "scheduler", "trainable", "metric", "mode"):
            self.assertEqual(auto_exp[key], wandb_exp[key], key)
        self.cli("cancel", str(auto_id))
        self.cli("delete", str(auto_id))
        stdin_id = int(self.cli("submit", "-q", "-", stdin=json.dumps(
            self.harness.spec(name="from-stdin"))).stdout)
        out = self.cli("submit", "--yaml", "-", stdin=YAML_SPEC.replace("yaml-spec", "again"))
        self.assertRegex(out.stdout, r"^experiment \d+ submitted: again, 2 trials\n$")
        again_id = out.stdout.split()[1]
        self.cli("cancel", again_id)
        self.assertIn("deleted with 2 trials", self.cli("delete", again_id).stdout)

        # ls: the table and --json, the API's list object.
        listing = self.cli_json("ls", "--json")
        api = self.daemon.ok("GET", "/api/v1/experiments")
        self.assertEqual(listing, api)  # the other test may have added experiments
        self.assertEqual([e["id"] for e in listing["items"]][:4],
                         [stdin_id, wandb_id, yaml_id, json_id])
        table = self.cli("ls").stdout.splitlines()
        self.assertEqual(table[0].split()[:3], ["ID", "NAME", "STATE"])
        self.assertEqual(len(table), listing["total"] + 1)
        self.assertIn("yaml-spec", table[3])
        self.assertIn("0/2", table[3])

        # show: the settings and trials; --json the experiment object.
        shown = self.cli("show", str(yaml_id)).stdout
        self.assertIn(f"experiment {yaml_id}: yaml-spec", shown)
        self.assertRegex(shown, r"state:\s+running")
        self.assertRegex(shown, r"lr\s+loguniform \(low 0.0001, high 0.1\)")
        self.assertEqual(self.cli_json("show", str(yaml_id), "--json"),
                         self.daemon.experiment(yaml_id))

        # best: nothing reported yet, then a worker's reports.
        out = self.cli("best", str(yaml_id))
        self.assertIn("no trial has reported loss yet", out.stderr)
        self.assertIsNone(self.cli_json("best", str(yaml_id), "--json"))
        worker = self.harness.Worker(self.daemon)
        first = worker.lease_one()
        self.assertEqual(first["experiment_id"], yaml_id)
        worker.report_ok(first, 1, {"loss": 0.5})
        worker.report_ok(first, 2, {"loss": 0.9})
        worker.finish(first, log="epoch 1\nepoch 2\x1b[31m red\n")
        second = worker.lease_one()
        worker.report_ok(second, 1, {"loss": 0.7})
        best = self.cli_json("best", str(yaml_id), "--json")
        self.assertEqual((best["trial_id"], best["value"], best["step"]), (first["id"], 0.5, 1))
        self.assertEqual(best["config"], first["config"])
        last = self.cli_json("best", str(yaml_id), "--scope", "last", "--json")
        self.assertEqual((last["trial_id"], last["value"]), (second["id"], 0.7))
        text = self.cli("best", str(yaml_id)).stdout
        self.assertIn(f"trial {first['id']}: loss 0.5 at step 1", text)
        self.assertIn("  layers: ", text)

        # logs: the trial's log_tail, control characters left out.
        self.assertEqual(self.cli("logs", str(first["id"])).stdout, "epoch 1\nepoch 2[31m red\n")

        # export, cancel, delete.
        csv_path = os.path.join(self.folder, "trials.csv")
        out = self.cli("export", str(yaml_id), "-o", csv_path)
        with open(csv_path, encoding="utf-8") as f:
            header = f.readline().strip()
        self.assertEqual(header, "id,number,state,lr,layers,best_value,last_value,steps,"
                                 "metric:loss")
        self.assertIn("exported 2 trials", out.stderr)
        self.assertIn(f"experiment {json_id}: canceled", self.cli("cancel", str(json_id)).stdout)
        self.assertIn("deleted with 24 trials", self.cli("delete", str(json_id)).stdout)

        # workers: the harness's worker, alive.
        workers = self.cli_json("workers", "--json")
        self.assertEqual([w["id"] for w in workers["items"]], [worker.id])
        self.assertIn("alive", self.cli("workers").stdout)

    def test_gpu_states_next_lease_and_a_gang(self) -> None:
        # A daemon of its own: test_verbs counts the workers of the shared one.
        h = self.harness
        folder = tempfile.mkdtemp(prefix="rung-cli-py-gang-")
        self.addCleanup(shutil.rmtree, folder, True)
        d = h.Daemon(folder).start()
        self.addCleanup(d.stop)

        def cli(*args: str) -> str:
            out = run_cli(*args, server=d.url)
            self.assertEqual(out.returncode, 0, f"{args}: {out.stdout}\n{out.stderr}")
            return out.stdout

        # workers: each GPU's state as the last heartbeat gave it, and the
        # next lease of a worker outside its --hours, in local time.
        box = h.Worker(d, name="desk", cpus=4, gpus=(0, 1, 2, 3))
        nxt = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0) \
            + datetime.timedelta(hours=3)
        d.ok("POST", f"/api/v1/workers/{box.id}/heartbeat", {
            "trials": [], "hours": "Mon-Fri 19:00-07:00,Sat-Sun",
            "next_lease_at": nxt.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "gpus": [{"index": 0, "util": 0.97, "memory_used_mb": 400, "state": "trial",
                      "trial_id": 17, "foreign_mb": 0, "foreign_util": 0},
                     {"index": 1, "util": 0, "memory_used_mb": 0, "state": "spare"},
                     {"index": 2, "util": 0.4, "memory_used_mb": 2048, "state": "busy",
                      "foreign_mb": 2048, "foreign_util": 0.4},
                     {"index": 3, "util": 0, "memory_used_mb": 0, "state": "waiting"}]})
        gpus = ["0 fake 97% 400/1024 MiB, trial 17", "1 fake 0% 0/1024 MiB, spare",
                "2 fake 40% 2048/1024 MiB, busy: others hold 2048 MiB, use 40%",
                "3 fake 0% 0/1024 MiB, waiting"]
        when = "next lease " + nxt.astimezone().strftime("%a %H:%M")
        lines = cli("workers").splitlines()
        self.assertEqual(lines[0].split(), ["ID", "NAME", "STATE", "CPUS", "GPUS", "RUNNING",
                                            "LABELS"])
        self.assertEqual(len(lines), 5, lines)  # one line per GPU
        self.assertEqual(lines[1].split()[:4], [str(box.id), "desk", "alive", "4"])
        self.assertIn(when, lines[2])
        for line, gpu in zip(lines[1:], gpus):
            self.assertIn(gpu, line)
        # What the C client shows, where it is built beside rungd.
        c_rung = os.path.join(os.path.dirname(os.environ["RUNGD"]), "rung")
        if os.access(c_rung, os.X_OK):
            c_out = subprocess.run([c_rung, "--server", d.url, "workers"], capture_output=True,
                                   text=True, timeout=TIMEOUT_S).stdout
            for want in gpus + [when]:
                self.assertIn(want, c_out)

        # show: a gang experiment's nodes, and its running trial's members by rank.
        eid = d.create_experiment(h.spec(name="gang", num_samples=2, resources_per_trial={
            "cpu": 1, "nodes": 2, "gang_wait_s": 30}))["id"]
        d.wait_proposed(eid, 2)
        a, b = h.Worker(d, name="a"), h.Worker(d, name="b")
        ta, tb = h.form_gang([(a, "127.0.0.1", 29501), (b, "127.0.0.2", 29502)])
        a.report_ok(ta, 1, {"loss": 0.5})
        out = cli("show", str(eid))
        self.assertRegex(out, r"resources:\s+2 nodes, each cpu 1, gpu 0 \(gang_wait_s 30\)")
        table = out[out.index("\ntrials ("):].splitlines()[2:]
        self.assertEqual(table[0].split()[:6], ["TRIAL", "#", "STATE", "NODES", "MEMBERS",
                                                "BEST"])
        rows = {int(line.split()[0]): line.split() for line in table[1:]}
        self.assertEqual(rows[ta["id"]][2:5], ["running", "2", f"{a.id},{b.id}"])
        pending = [t for t in d.all_trials(eid) if t["id"] != ta["id"]][0]
        self.assertEqual(rows[pending["id"]][2:5], ["pending", "2", "-"])  # no members: BEST
        a.finish_ok(ta)
        b.finish_ok(tb)
        rows = {int(line.split()[0]): line.split()
                for line in cli("show", str(eid)).split("\ntrials (")[1].splitlines()[2:]}
        self.assertEqual(rows[ta["id"]][2:5], ["completed", "2", "0.5"])  # ended: no members
        # A 1-node experiment has neither column.
        one = d.create_experiment(h.spec(name="one"))["id"]
        d.wait_proposed(one, 1)
        out = cli("show", str(one))
        self.assertRegex(out, r"resources:\s+cpu 1, gpu 0\n")
        self.assertEqual(out[out.index("\ntrials ("):].splitlines()[2].split()[:4],
                         ["TRIAL", "#", "STATE", "BEST"])

    def test_show_a_conditional_space_by_its_config_keys(self) -> None:
        # Nested and conditional spaces (docs/api.md): one column per
        # flattened config key, in spec order, empty where a trial took the
        # other branch; none for the nested object or a constant outside a
        # branch. A daemon of its own, so that its worker leases only these
        # trials (and test_verbs counts the workers of the shared one).
        h = self.harness
        folder = tempfile.mkdtemp(prefix="rung-cli-py-cond-")
        self.addCleanup(shutil.rmtree, folder, True)
        d = h.Daemon(folder).start()
        self.addCleanup(d.stop)
        space = {
            "model": {"lr": {"type": "loguniform", "low": 1e-4, "high": 0.1}, "layers": 2},
            "opt": {"type": "choice", "values": [
                {"name": "sgd", "momentum": {"type": "uniform", "low": 0.0, "high": 0.99}},
                {"name": "adamw", "beta2": {"type": "uniform", "low": 0.9, "high": 0.999}}]},
        }
        eid = d.create_experiment(h.spec(
            name="conditional", num_samples=6, search_space=space,
            points_to_evaluate=[{"opt.name": "sgd"}, {"opt.name": "adamw"}]))["id"]
        d.wait_proposed(eid, 6)
        worker = h.Worker(d, name="cond")
        while True:
            status, trial = worker.lease(wait_s=1)
            if status == 204:
                break
            worker.report_ok(trial, 1, {"loss": trial["config"]["model.lr"]})
            worker.finish_ok(trial)
        d.wait_state(eid, "completed", timeout=20)
        trials = {t["id"]: t for t in d.all_trials(eid)}
        self.assertEqual({t["config"]["opt.name"] for t in trials.values()}, {"sgd", "adamw"})
        out = run_cli("show", str(eid), server=d.url)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.split("\ntrials (")[1].splitlines()[1:]
        header = lines[0]
        self.assertEqual(header.split()[3:9], ["BEST", "STEP", "model.lr", "opt.name",
                                               "opt.momentum", "opt.beta2"])
        self.assertNotIn(" model ", header + " ")
        self.assertNotIn("model.layers", header)
        # Cells by the header's columns (each left-aligned at its name).
        start = {name: header.index(name) for name in ("opt.momentum", "opt.beta2", "WARN")}
        for line in lines[1:]:
            t = trials[int(line.split()[0])]
            sgd = t["config"]["opt.name"] == "sgd"
            momentum = line[start["opt.momentum"]:start["opt.beta2"]].strip()
            beta2 = line[start["opt.beta2"]:start["WARN"]].strip()
            value = "%.6g" % t["config"]["opt.momentum" if sgd else "opt.beta2"]
            self.assertEqual((momentum, beta2), (value, "") if sgd else ("", value), line)

    def test_api_errors_exit_1_with_the_field(self) -> None:
        bad = self.harness.spec(search_space={"lr": {"type": "loguniform", "low": 0,
                                                     "high": 1}})
        out = self.cli("submit", "-", stdin=json.dumps(bad), rc=1)
        self.assertEqual(out.stderr, "rung: invalid_spec: search_space.lr: low must be > 0 "
                         "for loguniform (field search_space.lr.low)\n")
        self.assertEqual(out.stdout, "")
        out = self.cli("show", "999999", rc=1)
        self.assertEqual(out.stderr, "rung: not_found: experiment 999999 not found\n")
        exp = self.daemon.create_experiment(self.harness.spec())
        out = self.cli("extend", str(exp["id"]), "1", rc=0)  # the same num_samples is fine
        self.assertIn("num_samples 1", out.stdout)
        out = self.cli("delete", str(exp["id"]), rc=1)  # still running
        self.assertIn("rung: ", out.stderr)

    def test_a_body_over_the_limit_is_the_daemons_413(self) -> None:
        # rungd refuses a 12 MB spec from its head and closes without
        # reading the body: the client reports that 413, as the C client
        # does, not the broken pipe of its send (the body is larger than
        # loopback's socket buffers, so the send does break).
        big = self.harness.spec(name="big")
        big["search_space"] = {"x": {"type": "choice", "values": ["v" * 1000] * 12000}}
        text = json.dumps(big)
        self.assertGreater(len(text), 12_000_000)
        out = self.cli("submit", "-", stdin=text, rc=1)
        self.assertEqual(out.stderr, "rung: payload_too_large: body larger than 1048576 bytes\n")
        sys.path.insert(0, PYTHON_DIR)
        from rung.client import ApiError, Client

        with self.assertRaises(ApiError) as ctx:
            Client(self.daemon.url).create_experiment(big)
        self.assertEqual((ctx.exception.status, ctx.exception.code), (413, "payload_too_large"))


if __name__ == "__main__":
    unittest.main()
