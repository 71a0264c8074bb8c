"""Integration tests of the Python client (python/rung; python/README.md):
a real rungd, real rung-worker processes, and trainables that use
rung.report, driven by rung.Experiment and rung.Client as a user would.

- submit, wait, best() by both scopes (checked against rungd's own `best`
  under best_scope all and last), a function as the trainable;
- rows() and dataframe() equal the CSV export;
- API errors raise rung.ApiError with the code and field; bad metrics raise
  TypeError before anything is printed;
- token auth: refused without the token, accepted with it or $RUNG_TOKEN;
- a trainable whose stdout is a buffered pipe (PYTHONUNBUFFERED cleared) is
  stopped by ASHA right after its first report, because rung.report flushes;
- `pip install ./python` into a fresh virtual environment, offline;
- a working directory (Experiment(working_dir=..., environment=...)): a
  function of a file in it runs on a worker that maps the environment,
  importing the user's package and reading a data file there; the same
  folder submitted again uploads nothing; the shared .rungignore corpus.
"""

import csv
import io
import math
import os
import subprocess
import sys
import time

import rungd_harness as h
import worker_harness as wh

PYTHON_DIR = os.path.join(wh.REPO_ROOT, "python")
sys.path.insert(0, PYTHON_DIR)

import rung  # noqa: E402  (from the source tree, as PYTHONPATH=python does)

# A trainable written as a user would: the config from rung.config(), a
# report per step with rung.report. "spiky" trials reach their best value at
# step 1 and end worse; "flat" ones report the same value at every step.
TRAINABLE = """
import time
import rung

def train(config):
    x = config["x"]
    steps = int(config.get("n_steps", 3))
    for step in range(1, steps + 1):
        if config.get("kind") == "spiky":
            loss = x if step == 1 else x + 10.0
        else:
            loss = x + 1.0
        rung.report(loss=loss, acc=1.0 - x)
        time.sleep(config.get("sleep_s", 0.0))

if __name__ == "__main__":
    train(rung.config({"x": 0.5}))
"""


class PythonClientCase(wh.WorkerTestCase):

    def setUp(self):
        super().setUp()
        self.script_path = self.script("train_fn.py", TRAINABLE)

    def start(self, slots=2, token=None, env=None):
        d = self.daemon(*(["--token", token] if token else []), token=token)
        self.worker(d, "py", cpu_slots=slots, extra=(["--token", token] if token else []),
                    env=env)
        return d, rung.Client(d.url, token=token)

    def test_submit_wait_best_both_scopes_and_a_function_trainable(self):
        d, client = self.start()
        sys.path.insert(0, self.tmp)
        try:
            import train_fn
        finally:
            sys.path.remove(self.tmp)
        # Spiky x=0.1: best 0.1 at step 1, last 10.1. Flat x=0.3: 1.3 at every step.
        space = {"kind": rung.search.grid_search(["spiky", "flat"]),
                 "x": rung.search.uniform(0, 1)}
        points = [{"kind": "spiky", "x": 0.1}, {"kind": "flat", "x": 0.3}]
        runs = {}
        for scope in ("all", "last"):
            exp = rung.Experiment(name="py-" + scope, trainable=train_fn.train,
                                  param_space=space, metric="loss", mode="min",
                                  num_samples=1, points_to_evaluate=points,
                                  best_scope=scope, client=client)
            self.assertIsNone(exp.id)
            exp.submit()
            self.assertIsInstance(exp.id, int)
            final = exp.wait(progress=False, poll_s=0.2, timeout=60)
            self.assertEqual(final["state"], "completed", self.explain(d))
            self.assertEqual(final["counts"]["completed"], 2, final)
            runs[scope] = exp
        for scope, exp in runs.items():
            best_all, best_last = exp.best("all"), exp.best("last")
            self.assertEqual(best_all.config["kind"], "spiky")
            self.assertAlmostEqual(best_all.value, 0.1)
            self.assertEqual(best_all.step, 1)
            self.assertEqual(best_last.config["kind"], "flat")
            self.assertAlmostEqual(best_last.value, 1.3)
            self.assertEqual(best_last.step, 3)
            # rungd's own best agrees with the client's for the spec's scope,
            # and best() without a scope follows the spec.
            server_best = exp.refresh()["best"]
            mine = exp.best()
            self.assertEqual(server_best["trial_id"], mine.trial_id, scope)
            self.assertAlmostEqual(server_best["value"], mine.value)
        # curves(): every reported value of each trial, in order.
        curves = runs["all"].curves()
        self.assertEqual(sorted(len(v) for v in curves.values()), [3, 3])
        spiky = next(t for t in runs["all"].trials() if t["config"]["kind"] == "spiky")
        self.assertEqual([(a, s) for a, s, _ in curves[spiky["id"]]], [(1, 1), (1, 2), (1, 3)])
        self.assertAlmostEqual(curves[spiky["id"]][0][2], 0.1)
        # The trial ran through the worker as a real program: its reports are
        # in the store with the counted steps.
        trial = runs["all"].trials()[0]
        steps = [m["step"] for m in client.trial_metrics(trial["id"])]
        self.assertEqual(steps, [1, 2, 3])
        self.assertEqual(trial["warnings"]["count"], 0)
        # A .py file as the trainable runs the same way (its __main__ part).
        exp = rung.Experiment(trainable=self.script_path, param_space={"x": 0.25},
                              metric="acc", mode="max", client=client).submit()
        exp.wait(progress=False, poll_s=0.2, timeout=60)
        self.assertAlmostEqual(exp.best().value, 0.75)
        self.assertEqual(exp.spec()["trainable"]["argv"], [sys.executable, self.script_path])
        self.assertEqual(exp.spec()["trainable"]["env"]["PYTHONPATH"].split(os.pathsep)[0],
                         PYTHON_DIR)

    def test_a_notebook_function_ships_by_value(self):
        # A cell of a notebook: its function lives in __main__ and in no file
        # (IPython compiles cells under names like this one), with a helper
        # and a global of the cell. Experiment pickles it by value.
        d, client = self.start()
        cell = ("import rung\nOFFSET = 0.5\n"
                "def helper(x):\n    return (x - OFFSET) ** 2\n"
                "def train(config):\n    rung.report(loss=helper(config['x']))\n")
        ns = {"__name__": "__main__"}
        exec(compile(cell, "<ipython-input-3-5f1c2a>", "exec"), ns)
        exp = rung.Experiment(trainable=ns["train"], param_space={"x": rung.search.grid_search(
            [0.25, 0.5, 2.0])}, metric="loss", mode="min", client=client).submit()
        self.assertEqual(exp.spec()["trainable"]["argv"][-3:],
                         ["run-function", "rung_trainable.pkl", "--pickled"])
        final = exp.wait(progress=False, poll_s=0.2, timeout=60)
        self.assertEqual(final["state"], "completed", self.explain(d))
        self.assertEqual(exp.best().config, {"x": 0.5})
        self.assertAlmostEqual(exp.best().value, 0.0)
        losses = sorted(t["best"]["value"] for t in exp.trials())
        self.assertEqual(losses, [0.0, 0.0625, 2.25])
        # A lambda and a nested function travel the same way.
        offset = 1.0
        exp = rung.Experiment(trainable=lambda c: rung.report(loss=c["x"] + offset),
                              param_space={"x": 2.0}, metric="loss", client=client).submit()
        exp.wait(progress=False, poll_s=0.2, timeout=60)
        self.assertAlmostEqual(exp.best().value, 3.0)
        # The notebook's views: HTML tables of the experiment and the result.
        html = exp._repr_html_()
        self.assertIn(f"<b>experiment {exp.id}</b>", html)
        self.assertIn("<td>completed</td>", html)
        self.assertIn("<td>3.0</td>", exp.best()._repr_html_())

    def test_a_script_that_submits_on_import_says_so(self):
        # A trainable's file whose submission is not under
        # `if __name__ == "__main__":`: the worker's import would submit
        # again; the trial fails saying why, not "cannot reach rungd".
        d, client = self.start()
        path = self.script("no_guard.py", "import rung\n"
                           "def train(config):\n    rung.report(loss=1.0)\n"
                           "rung.Experiment(trainable=train, param_space={'x': 1},\n"
                           "                metric='loss').submit()\n")
        exp = rung.Experiment(trainable={"type": "command", "env": {"PYTHONPATH": PYTHON_DIR},
                                         "argv": [sys.executable, "-m", "rung", "run-function",
                                                  path, "train"]},
                              param_space={"x": 1}, metric="loss", client=client).submit()
        final = exp.wait(progress=False, poll_s=0.2, timeout=60, raise_on_failure=False)
        trial = exp.trials()[0]
        self.assertEqual(trial["state"], "failed", self.explain(d))
        said = f"{trial['error']}\n{trial['log_tail']}"
        self.assertIn("no_guard.py submits an experiment when a worker imports it", said)
        self.assertIn("under `if __name__ == \"__main__\":`", said)
        self.assertNotIn("cannot reach rungd", said)
        self.assertEqual(len(client.list_experiments()), 1, final)

    def test_dataframe_equals_the_csv_export(self):
        d, client = self.start()
        trainable = {"type": "command", "argv": [sys.executable, self.script_path],
                     "env": {"PYTHONPATH": PYTHON_DIR}}
        exp = rung.Experiment(name="csv", trainable=trainable,
                              param_space={"x": rung.search.uniform(0, 1),
                                           "kind": rung.search.choice(["spiky", "flat"]),
                                           "n_steps": rung.search.randint(1, 4)},
                              metric="loss", mode="min", num_samples=6,
                              searcher={"type": "random", "seed": 3}, client=client).submit()
        exp.wait(progress=False, poll_s=0.2, timeout=90)
        text = client.trials_csv(exp.id)
        csv_rows = list(csv.DictReader(io.StringIO(text)))
        rows = exp.rows()
        self.assertEqual(len(rows), 6)
        self.assertEqual(len(csv_rows), 6)
        columns = list(csv_rows[0].keys())
        self.assertEqual(columns, ["id", "number", "state", "x", "kind", "n_steps",
                                   "best_value", "last_value", "steps", "metric:acc",
                                   "metric:loss"])
        for row, crow in zip(rows, csv_rows):
            for col in columns:
                want = crow[col]
                got = row[col]
                if want == "":
                    self.assertIsNone(got, col)
                elif isinstance(got, float):
                    self.assertTrue(math.isclose(got, float(want), rel_tol=1e-9), (col, got, want))
                else:
                    self.assertEqual(str(got), want, col)
            self.assertIn("last.acc", row)
            # Every metric in the shortest form that reads back exactly.
            for name in ("acc", "loss"):
                if crow["metric:" + name]:
                    self.assertEqual(float(crow["metric:" + name]), row["metric:" + name])
                    self.assertEqual(crow["metric:" + name], repr(row["metric:" + name]))
        # The curves of a metric that is not the objective.
        acc = exp.curves(metric="acc")
        loss = exp.curves()
        self.assertEqual(sorted(acc), sorted(loss))
        for tid, points in acc.items():
            self.assertEqual([p[:2] for p in points], [p[:2] for p in loss[tid]])
            x = next(r["x"] for r in rows if r["id"] == tid)
            self.assertTrue(all(math.isclose(p[2], 1.0 - x, rel_tol=1e-8) for p in points))
        try:
            import pandas
        except ImportError:
            self.skipTest("pandas is not installed: rows() was compared, dataframe() not")
        frame = exp.dataframe()
        exported = pandas.read_csv(io.StringIO(text))
        self.assertEqual(len(frame), len(exported))
        for col in exported.columns:
            left = frame[col].tolist()
            right = exported[col].tolist()
            for a, b in zip(left, right):
                if isinstance(b, float):
                    self.assertTrue(math.isclose(float(a), b, rel_tol=1e-9), (col, a, b))
                else:
                    self.assertEqual(a, b, col)

    def test_a_working_directory_travels_once(self):
        d = self.daemon()
        self.worker(d, "env", cpu_slots=2, extra=["--env", "team=/usr/bin/python3"])
        client = rung.Client(d.url)
        top = os.path.join(self.tmp, "project")
        os.makedirs(os.path.join(top, "mypkg"))
        with open(os.path.join(top, "mypkg", "__init__.py"), "w") as f:
            f.write("SCALE = 3.0\n")
        with open(os.path.join(top, "data.txt"), "w") as f:
            f.write("5\n")
        with open(os.path.join(top, "big.log"), "w") as f:
            f.write("left out by .rungignore\n")
        with open(os.path.join(top, ".rungignore"), "w") as f:
            f.write("*.log\n")
        with open(os.path.join(top, "train_wd.py"), "w") as f:
            f.write("import rung\nimport mypkg\n\n\ndef train(config):\n"
                    "    base = float(open('data.txt').read())\n"
                    "    rung.report(loss=base * mypkg.SCALE + config['x'])\n")
        sys.path.insert(0, top)
        try:
            import train_wd
        finally:
            sys.path.remove(top)
        lines = []

        def submit():
            exp = rung.Experiment(name="wd", trainable=train_wd.train, param_space={"x": 0.5},
                                  metric="loss", client=client, working_dir=top,
                                  environment="team")
            import rung._pack as pack
            real = pack.upload
            pack.upload = lambda c, t, extra=None: real(c, t, say=lines.append, extra=extra)
            try:
                return exp.submit()
            finally:
                pack.upload = real

        exp = submit()
        spec = exp.spec()["trainable"]
        self.assertEqual(spec["argv"], ["python3", "-m", "rung", "run-function", "train_wd.py",
                                        "train"])
        self.assertEqual(spec["environment"], "team")
        exp.wait(progress=False, timeout=60)
        self.assertEqual(exp.best().value, 15.5)
        again = submit()
        again.wait(progress=False, timeout=60)
        self.assertRegex(lines[0], r"^working_dir: 4 files, \d+ bytes, sha256:[0-9a-f]{12}… "
                                   r"uploaded$")
        self.assertTrue(lines[1].endswith("already on rungd"), lines)
        blob = client.get_blob(spec["working_dir"][7:])
        import tarfile
        names = tarfile.open(fileobj=io.BytesIO(blob)).getnames()
        self.assertEqual(names, [".rungignore", "data.txt", "mypkg", "mypkg/__init__.py",
                                 "train_wd.py"])

    def test_the_rungignore_corpus(self):
        import json
        from rung._pack import Ignore
        with open(os.path.join(wh.REPO_ROOT, "tests", "data", "rungignore", "cases.json")) as f:
            cases = json.load(f)["cases"]
        bad = []
        for case in cases:
            ig = Ignore(case["rungignore"])
            venvs = set(case.get("venvs", []))
            for path, want in case["paths"].items():
                is_dir = path.endswith("/")
                parts = path.rstrip("/").split("/")
                got = all(ig.packed("/".join(parts[:k]), True, "/".join(parts[:k]) + "/" in venvs)
                          for k in range(1, len(parts)))
                got = got and ig.packed("/".join(parts), is_dir, is_dir and path in venvs)
                if got != want:
                    bad.append((case["name"], path, got))
        self.assertEqual(bad, [])
        self.assertGreaterEqual(len(cases), 25)

    def test_errors_raise_api_error_with_the_field(self):
        d, client = self.start()
        bad = rung.Experiment(trainable=["true"], metric="loss",
                              param_space={"lr": rung.search.loguniform(0, 1)}, client=client)
        with self.assertRaises(rung.ApiError) as caught:
            bad.submit()
        self.assertEqual(caught.exception.status, 400)
        self.assertEqual(caught.exception.code, "invalid_spec")
        self.assertEqual(caught.exception.field, "search_space.lr.low")
        self.assertIsNone(bad.id, "a refused experiment has no id")
        # normal() is built, and its checks are rungd's: sd must be > 0.
        with self.assertRaises(rung.ApiError) as caught:
            rung.Experiment(trainable=["true"], metric="loss", client=client,
                            param_space={"w": rung.search.normal(0, 0)}).submit()
        self.assertEqual(caught.exception.field, "search_space.w.sd")
        with self.assertRaises(rung.ApiError) as caught:
            client.get_experiment(424242)
        self.assertEqual((caught.exception.status, caught.exception.code), (404, "not_found"))
        with self.assertRaises(rung.ApiError) as caught:
            client.patch_experiment(1, bogus=1)
        self.assertIn(caught.exception.status, (400, 404))
        self.assertEqual(client.list_experiments(), [])
        dead = rung.Client("http://127.0.0.1:9", timeout=2)
        with self.assertRaises(rung.UnreachableError):
            dead.list_experiments()
        # A value JSON cannot carry: TypeError naming it, nothing printed.
        out = subprocess.run([sys.executable, "-c",
                              "import rung; rung.report(loss=0.5, acc={1, 2})"],
                             env={**os.environ, "PYTHONPATH": PYTHON_DIR},
                             capture_output=True, text=True, timeout=30)
        self.assertNotEqual(out.returncode, 0)
        self.assertEqual(out.stdout, "")
        self.assertIn("TypeError: metric 'acc'", out.stderr)

    def test_search_helpers_pass_the_daemons_validation(self):
        d, client = self.start()
        tune = rung.search
        space = {"a": tune.uniform(-1, 1), "b": tune.quniform(0, 10, 0.5),
                 "c": tune.loguniform(1e-4, 1e-1), "d": tune.qloguniform(1, 1000, 5),
                 "e": tune.randint(0, 10), "f": tune.qrandint(0, 100, 10),
                 "g": tune.lograndint(1, 1024), "h": tune.choice(["relu", "tanh", 3, True]),
                 "i": tune.grid_search([16, 32]), "j": "constant"}
        exp = rung.Experiment(trainable={"type": "external"}, param_space=space, metric="m",
                              num_samples=3, client=client).submit()
        self.assertEqual(exp.data["search_space"], space)
        self.assertEqual(exp.data["total_trials"], 6)
        trials = h.wait_until(lambda: (lambda t: t if len(t) == 6 else None)(exp.trials()),
                              10, "six proposed trials")
        for t in trials:
            c = t["config"]
            self.assertTrue(-1 <= c["a"] < 1 and 0 < c["c"] < 0.1 and 0 <= c["e"] < 10)
            self.assertEqual(c["f"] % 10, 0)
            self.assertIn(c["h"], ["relu", "tanh", 3, True])
            self.assertEqual(c["j"], "constant")
        self.assertEqual(sorted(t["config"]["i"] for t in trials), [16, 16, 16, 32, 32, 32])
        # Bounds the daemon refuses come back naming the parameter.
        for name, domain, field in [("e", tune.randint(5, 5), "search_space.e"),
                                    ("f", tune.qrandint(0, 10, 0), "search_space.f.q"),
                                    ("h", tune.choice([]), "search_space.h.values")]:
            with self.assertRaises(rung.ApiError) as caught:
                rung.Experiment(trainable={"type": "external"}, param_space={name: domain},
                                metric="m", client=client).submit()
            self.assertTrue(caught.exception.field.startswith(field),
                            (name, caught.exception.field, field))

    def test_token_auth(self):
        d, client = self.start(token="s3cret-token")
        with self.assertRaises(rung.ApiError) as caught:
            rung.Client(d.url, token="").list_experiments()
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "unauthorized"))
        old = os.environ.get("RUNG_TOKEN")
        os.environ["RUNG_TOKEN"] = "s3cret-token"
        try:
            from_env = rung.Client(d.url)
        finally:
            if old is None:
                del os.environ["RUNG_TOKEN"]
            else:
                os.environ["RUNG_TOKEN"] = old
        trainable = {"type": "command", "argv": [sys.executable, self.script_path],
                     "env": {"PYTHONPATH": PYTHON_DIR}}
        exp = rung.Experiment(trainable=trainable, param_space={"x": 0.2}, metric="loss", client=from_env).submit()
        self.assertEqual(exp.wait(progress=False, poll_s=0.2, timeout=60)["state"], "completed")
        self.assertEqual([e["id"] for e in client.list_experiments()], [exp.id])

    def test_asha_stops_a_buffered_trainable_on_time(self):
        # PYTHONUNBUFFERED cleared: stdout is a block-buffered pipe, so only
        # rung.report's own flush can bring the report to the worker while
        # the program sleeps.
        d, client = self.start(slots=1)
        trainable = {"type": "command", "argv": [sys.executable, self.script_path],
                     "env": {"PYTHONUNBUFFERED": "", "PYTHONPATH": PYTHON_DIR}}
        exp = rung.Experiment(
            trainable=trainable, metric="loss", mode="min", num_samples=2,
            param_space={"x": rung.search.uniform(0, 1), "n_steps": rung.search.choice([2, 60]),
                         "sleep_s": rung.search.choice([0.0, 0.5]), "kind": "flat"},
            points_to_evaluate=[{"x": 0.0, "n_steps": 2, "sleep_s": 0.0},
                                {"x": 0.9, "n_steps": 60, "sleep_s": 0.5}],
            scheduler={"type": "asha", "max_t": 60, "grace_period": 1, "reduction_factor": 2},
            max_concurrent_trials=1, client=client).submit()
        exp.wait(progress=False, poll_s=0.2, timeout=90)
        first, second = exp.trials()
        self.assertEqual(first["state"], "completed")
        self.assertEqual(second["state"], "stopped", self.explain(d))
        self.assertEqual(second["stopped_by"], "scheduler")
        self.assertEqual(second["step"], 1)
        # 60 steps of 0.5 s would take 30 s: it was stopped at its first report.
        took = _seconds(second["ended_at"]) - _seconds(second["started_at"])
        self.assertLess(took, 10.0, second)

    def test_the_readmes_from_python_section_runs(self):
        d, client = self.start()
        with open(os.path.join(wh.REPO_ROOT, "README.md")) as f:
            readme = f.read()
        section = readme[readme.index("## From Python"):]
        code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
        self.assertLessEqual(section[:section.index("\n## ")].count("\n"), 16,
                             "the README's From Python section is at most 15 lines")
        path = self.script("readme_example.py", code)
        out = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": PYTHON_DIR, "RUNG_SERVER": d.url})
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr + self.explain(d))
        best = eval(out.stdout.strip().splitlines()[-1])  # the printed config, a dict
        self.assertTrue(1e-4 <= best["lr"] <= 1e-1, best)
        (exp,) = client.list_experiments()
        self.assertEqual(exp["state"], "completed")
        self.assertEqual(exp["best"]["config"], best)
        self.assertEqual(exp["counts"]["completed"] + exp["counts"]["stopped"], 20)

    def test_wait_draws_a_progress_bar_on_a_terminal(self):
        import pty
        import select

        d, client = self.start()
        exp = rung.Experiment(trainable={"type": "command", "argv": [sys.executable,
                                                                     self.script_path],
                                         "env": {"PYTHONPATH": PYTHON_DIR}},
                              param_space={"x": rung.search.uniform(0, 1)}, metric="loss",
                              num_samples=4, client=client).submit()
        master, slave = pty.openpty()
        code = ("import rung; e = rung.Experiment.attach(%d); e.wait(poll_s=0.1); "
                "print('best', e.best().value)" % exp.id)
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=slave, env={**os.environ, "PYTHONPATH": PYTHON_DIR,
                                                   "RUNG_SERVER": d.url})
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        out = proc.communicate(timeout=30)[0].decode()
        os.close(master)
        self.assertEqual(proc.returncode, 0, seen.decode(errors="replace"))
        text = seen.decode(errors="replace")
        self.assertIn("\r", text, "the bar is redrawn in place on a terminal")
        self.assertIn("[" + "#" * 24 + "] 4/4", text)
        self.assertIn("completed", text)
        self.assertTrue(out.startswith("best "), out)

    def test_pip_install_into_a_virtual_environment(self):
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
        pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index",
                              PYTHON_DIR], capture_output=True, text=True, timeout=300)
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
        out = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                              "import rung, sys; print(rung.__file__); print(rung.__version__)"],
                             capture_output=True, text=True, timeout=30, cwd=self.tmp)
        self.assertEqual(out.returncode, 0, out.stderr)
        path, version = out.stdout.split()
        self.assertTrue(path.startswith(venv), path)
        self.assertEqual(version, rung.__version__)


def _seconds(stamp):
    """RFC 3339 with milliseconds, UTC, to seconds since the epoch."""
    import datetime

    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


if __name__ == "__main__":
    wh.main()
