"""Integration tests of artifacts coming back (docs/api.md, "Artifacts"): a
real rungd, a real rung-worker, and a trainable that writes
$RUNG_TRIAL_DIR/artifacts/model.txt (its config) and a checkpoint.

- keep_artifacts best 1 (the default): only the best trial's folder is kept
  in the end (a trial pushed out of the best is removed); `rung fetch` and
  the Python client's best_checkpoint() unpack exactly what it wrote, and the
  others answer 404 saying why;
- all: every trial's; none: nobody's, and 404 says keep_artifacts is none;
- a DELETE of the experiment removes its files; a bad keep_artifacts is
  refused naming the field.
"""

import hashlib
import io
import os
import subprocess
import sys
import tarfile

import rungd_harness as h
import worker_harness as wh

sys.path.insert(0, os.path.join(wh.REPO_ROOT, "python"))

import rung  # noqa: E402

TRAIN = """
import json, os
cfg = json.loads(os.environ["RUNG_CONFIG"])
top = os.environ["RUNG_TRIAL_DIR"]
os.makedirs(os.path.join(top, "artifacts"), exist_ok=True)
with open(os.path.join(top, "artifacts", "model.txt"), "w") as f:
    f.write("x=%r\\n" % cfg["x"])
with open(os.path.join(top, "ckpt.bin"), "wb") as f:
    f.write(b"weights-%d" % int(cfg["x"] * 100))
print('@rung {"step": 1, "loss": %r}' % cfg["x"], flush=True)
"""

POINTS = [{"x": 0.5}, {"x": 0.2}, {"x": 0.9}, {"x": 0.1}]


class ArtifactsCase(wh.WorkerTestCase):

    def run_experiment(self, d, **over):
        path = self.script("train_art.py", TRAIN)
        spec = wh.command_spec([wh.PYTHON, path], num_samples=len(POINTS),
                               points_to_evaluate=POINTS, **over)
        eid = d.create_experiment(spec)["id"]
        d.wait_state(eid, "completed", timeout=60)
        return eid, {t["config"]["x"]: t["id"] for t in d.all_trials(eid)}

    def stored(self):
        folder = os.path.join(self.tmp, "artifacts")
        return sorted(os.listdir(folder)) if os.path.isdir(folder) else []

    def wait_stored(self, n):
        h.wait_until(lambda: len(self.stored()) == n, 20, "%d artifacts stored" % n)

    def test_best_one_is_kept_and_fetched(self):
        d = self.daemon()
        self.worker(d, "a")
        eid, ids = self.run_experiment(d)
        best = ids[0.1]
        # The last trial is the best: each better one pushed the one before out.
        self.wait_stored(1)
        h.wait_until(lambda: self.stored()[0].startswith("%d-%d-" % (eid, best)), 20,
                     "the best trial's artifacts")
        r = d.request("GET", "/api/v1/trials/%d/artifacts" % best)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(d.trial(best)["artifacts"],
                         {"sha256": hashlib.sha256(r.body).hexdigest(), "size": len(r.body)})
        # Each stored folder is an event of its trial's worker (docs/api.md, "Events").
        ev = d.ok("GET", "/api/v1/events?kind=artifacts.stored&trial=%d" % best)["items"]
        self.assertEqual([(e["experiment_id"], e["actor"]["kind"], e["detail"]["sha256"])
                          for e in ev], [(eid, "user", hashlib.sha256(r.body).hexdigest())])
        names = sorted(tarfile.open(fileobj=io.BytesIO(r.body)).getnames())
        self.assertEqual(names, ["artifacts", "artifacts/model.txt", "ckpt.bin"])
        other = d.request("GET", "/api/v1/trials/%d/artifacts" % ids[0.2])
        self.assertError(other, 404, "not_found")
        self.assertIn("best 1", other.json["error"]["message"])
        self.assertIsNone(d.trial(ids[0.2])["artifacts"])
        # The command line client and the Python client unpack what it wrote.
        cli = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
        out = os.path.join(self.tmp, "fetched")
        run = subprocess.run([cli, "--server", d.url, "fetch", str(best), out],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(os.path.join(out, "artifacts", "model.txt")) as f:
            self.assertEqual(f.read(), "x=0.1\n")
        with open(os.path.join(out, "ckpt.bin"), "rb") as f:
            self.assertEqual(f.read(), b"weights-10")
        exp = rung.Experiment.attach(eid, client=rung.Client(d.url))
        dest = exp.best_checkpoint(os.path.join(self.tmp, "py"))
        with open(os.path.join(dest, "artifacts", "model.txt")) as f:
            self.assertEqual(f.read(), "x=0.1\n")
        run = subprocess.run([cli, "--server", d.url, "fetch", str(ids[0.5])],
                             capture_output=True, text=True, timeout=30, cwd=self.tmp)
        self.assertEqual(run.returncode, 1)
        self.assertIn("not_found", run.stderr)
        # Deleted with their experiment.
        d.delete(eid)
        self.assertEqual(self.stored(), [])

    def test_all_none_and_bad(self):
        d = self.daemon()
        self.worker(d, "a")
        eid, ids = self.run_experiment(d, keep_artifacts="all")
        self.wait_stored(len(POINTS))
        none_eid, none_ids = self.run_experiment(d, keep_artifacts="none")
        r = d.request("GET", "/api/v1/trials/%d/artifacts" % none_ids[0.1])
        self.assertError(r, 404, "not_found")
        self.assertIn("keep_artifacts is none", r.json["error"]["message"])
        self.assertEqual(len(self.stored()), len(POINTS))
        for bad in ("some", {"best": 0}, {"best": "2"}, 3):
            r = d.request("POST", "/api/v1/experiments",
                          wh.command_spec(["true"], keep_artifacts=bad))
            field = "keep_artifacts.best" if isinstance(bad, dict) else "keep_artifacts"
            self.assertError(r, 400, "invalid_spec", field)


if __name__ == "__main__":
    h.main()
