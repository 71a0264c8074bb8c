"""rung-worker runs a team's code (docs/workers.md, "Running a team's code").

A real rungd, real rung-worker processes and real Python trainables. The
test packs a folder as the clients do (an uncompressed pax tar, entries
sorted, mode 0755/0644, owner 0, mtime 0: docs/api.md, "Blobs"), uploads
it with PUT /api/v1/blobs/{sha256} and submits a command trainable whose
spec names it (trainable.working_dir) and an environment:

- a working directory with a package of the user's and a data file runs on
  a worker that has never seen it, in a copy of its own that is gone
  afterwards, with `import rung` working though the environment's python3
  cannot import it; a worker offering another environment gets none of it;
- a worker running as an unprivileged user (as the package's _rung-worker
  does) runs it too (skipped, saying why, when the test is not root);
- a requirements.txt naming a wheel shipped in the folder installs offline
  into a virtualenv, which the next trial reuses (its stderr.log says so);
- a worker whose cache disk is full (a 16 MiB tmpfs) says so in its
  heartbeat and is given no trial that needs a download (skipped when not
  root);
- a tarball with an entry that escapes the tree fails the trial with an
  error naming the entry, before anything runs.
"""

import base64
import hashlib
import io
import os
import pwd
import shutil
import subprocess
import tarfile
import tempfile
import zipfile

import rungd_harness as h
import worker_harness as wh

PYTHON = "/usr/bin/python3"

TRAIN = r"""
import json, os, sys
import mypkg
try:
    import rung
    has_rung = 1
except ImportError:
    has_rung = 0
with open(os.path.join("data", "x.txt")) as f:
    x = float(f.read())
print("@rung " + json.dumps({"loss": x * mypkg.K, "has_rung": has_rung,
                             "in_tree": int(os.path.isfile("train.py"))}), flush=True)
print("cwd " + os.getcwd(), file=sys.stderr)
"""

TRAIN_REQ = r"""
import json, sys
import tinywheel
print("@rung " + json.dumps({"loss": tinywheel.VALUE}), flush=True)
print("python " + sys.executable, file=sys.stderr)
"""


def pack(files, links=None, raw_names=()):
    """The tar of a folder as the clients make it, and its SHA-256.
    files: {relative path: bytes}; links: {relative path: target};
    raw_names: (name, bytes) entries written as given (hostile ones)."""
    links = links or {}
    folders = set()
    for name in list(files) + list(links):
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folders.add("/".join(parts[:i]))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name in sorted(folders | set(files) | set(links)):
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if name in folders:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tf.addfile(info)
            elif name in links:
                info.type = tarfile.SYMTYPE
                info.linkname = links[name]
                info.mode = 0o777
                tf.addfile(info)
            else:
                info.size = len(files[name])
                info.mode = 0o644
                tf.addfile(info, io.BytesIO(files[name]))
        for name, data in raw_names:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def wheel(name, version, value):
    """A pure-Python wheel made with zipfile: a .whl is a zip with a
    dist-info (METADATA, WHEEL, RECORD)."""
    files = {
        "%s/__init__.py" % name: b"VALUE = %d\n" % value,
        "%s-%s.dist-info/METADATA" % (name, version):
            ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)).encode(),
        "%s-%s.dist-info/WHEEL" % (name, version):
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (path, digest, len(data))
    record += "%s-%s.dist-info/RECORD,,\n" % (name, version)
    files["%s-%s.dist-info/RECORD" % (name, version)] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, data in sorted(files.items()):
            z.writestr(path, data)
    return "%s-%s-py3-none-any.whl" % (name, version), buf.getvalue()


class WorkingDirectory(wh.WorkerTestCase):

    def upload(self, d, data, sha):
        r = d.request("PUT", "/api/v1/blobs/" + sha, raw=data,
                      headers={"Content-Type": "application/x-tar"})
        self.assertIn(r.status, (200, 201), r.text)
        self.assertEqual(r.json["sha256"], sha)
        return r.status

    def submit(self, d, sha, environment="base", samples=1, failures=2, concurrent=1):
        t = {"type": "command", "argv": ["python3", "train.py"], "environment": environment,
             "working_dir": "sha256:" + sha}
        spec = h.spec(trainable=t, num_samples=samples, max_concurrent_trials=concurrent,
                      max_failures=failures)
        return d.create_experiment(spec)["id"]

    def wait_done(self, d, eid, timeout, *workers):
        try:
            return d.wait_experiment(eid, lambda e: e["state"] in ("completed", "failed"),
                                     timeout=timeout)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, self.explain(d, *workers))) from None

    def test_working_dir_runs_where_its_environment_is(self):
        d = self.daemon()
        files = {"train.py": TRAIN.encode(), "mypkg/__init__.py": b"K = 2\n",
                 "data/x.txt": b"21\n"}
        data, sha = pack(files, links={"mypkg/data": "../data"})
        self.assertEqual(self.upload(d, data, sha), 201)
        # The environment's python3 cannot import rung by itself: the
        # worker's copy on PYTHONPATH is what makes the import work.
        probe = subprocess.run([PYTHON, "-I", "-c", "import rung"], stderr=subprocess.DEVNULL)
        other = self.worker(d, "other", extra=["--env", "other=" + PYTHON])
        wh.h.wait_until(lambda: "other" in self.worker_ids(d), 10, "worker other registered")
        # Two slots, two trials at once: both need the blob, one download.
        base = self.worker(d, "base", cpu_slots=2, extra=["--env", "base=" + PYTHON])
        eid = self.submit(d, sha, samples=2, concurrent=2)
        exp = self.wait_done(d, eid, 30, base, other)
        self.assertEqual(exp["state"], "completed", self.explain(d, base, other))
        trials = d.all_trials(eid)
        self.assertEqual(len(trials), 2)
        ids = self.worker_ids(d)
        for t in trials:
            items = d.metrics_of(t["id"])
            self.assertEqual(items[-1]["metrics"]["loss"], 42.0)
            self.assertEqual(items[-1]["metrics"]["in_tree"], 1)
            self.assertEqual(items[-1]["metrics"]["has_rung"], 1,
                             "import rung failed in the trial (probe rc %d)" % probe.returncode)
            log = open(os.path.join(base.workdir, "trials", str(t["id"]), "stderr.log")).read()
            self.assertIn("working directory sha256:" + sha[:12], log)
            cwd = [line[4:] for line in log.splitlines() if line.startswith("cwd ")]
            self.assertTrue(cwd and cwd[0].startswith(os.path.join(base.workdir, "code")), log)
            self.assertFalse(os.path.exists(cwd[0]), "the trial's tree was left: " + cwd[0])
        self.assertIn("downloaded", base.stderr_text())
        self.assertEqual(base.stderr_text().count("downloaded ("), 1,
                         "the blob was downloaded more than once:\n" + base.stderr_text())
        self.assertNotIn("leased", other.stderr_text(),
                         "the worker without environment base got a trial")
        self.assertNotIn(ids["other"], [t.get("worker_id") for t in trials])

    def test_unprivileged_worker(self):
        if os.geteuid() != 0:
            self.skipTest("not root: cannot start a worker as another user "
                          "(the package's _rung-worker case)")
        d = self.daemon()
        files = {"train.py": TRAIN.encode(), "mypkg/__init__.py": b"K = 3\n",
                 "data/x.txt": b"5\n"}
        data, sha = pack(files)
        self.upload(d, data, sha)
        nobody = pwd.getpwnam("nobody")
        # A folder nobody can reach, holding the worker's workdir, which it
        # owns (as /var/lib/rung-worker is _rung-worker's).
        top = tempfile.mkdtemp(prefix="rung-itest-nobody-")
        self.addCleanup(shutil.rmtree, top, True)
        os.chmod(top, 0o755)
        workdir = os.path.join(top, "work")
        os.mkdir(workdir)
        os.chown(workdir, nobody.pw_uid, nobody.pw_gid)
        wrapper = os.path.join(top, "as-nobody")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec setpriv --reuid=%d --regid=%d --clear-groups %s \"$@\"\n"
                    % (nobody.pw_uid, nobody.pw_gid, wh.worker_path()))
        os.chmod(wrapper, 0o755)
        real = os.environ["RUNG_WORKER"]
        os.environ["RUNG_WORKER"] = wrapper
        try:
            w = self.worker(d, "nobody", workdir=workdir, extra=["--env", "base=" + PYTHON],
                            env={"HOME": workdir})
        finally:
            os.environ["RUNG_WORKER"] = real
        eid = self.submit(d, sha)
        exp = self.wait_done(d, eid, 30, w)
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        t = d.all_trials(eid)[0]
        self.assertEqual(d.metrics_of(t["id"])[-1]["metrics"]["loss"], 15.0)
        tar = os.path.join(workdir, "cache", "blobs", sha + ".tar")
        self.assertEqual(os.stat(tar).st_uid, nobody.pw_uid)

    def test_requirements_install_offline_once(self):
        d = self.daemon()
        name, whl = wheel("tinywheel", "1.0", 7)
        files = {"train.py": TRAIN_REQ.encode(), "requirements.txt": b"tinywheel==1.0\n",
                 name: whl}
        data, sha = pack(files)
        self.upload(d, data, sha)
        w = self.worker(d, "w", extra=["--env", "base=" + PYTHON])
        eid = self.submit(d, sha, samples=2)
        exp = self.wait_done(d, eid, 40, w)
        self.assertEqual(exp["state"], "completed", self.explain(d, w))
        trials = sorted(d.all_trials(eid), key=lambda t: t["id"])
        logs = []
        for t in trials:
            self.assertEqual(d.metrics_of(t["id"])[-1]["metrics"]["loss"], 7)
            with open(os.path.join(w.workdir, "trials", str(t["id"]), "stderr.log")) as f:
                logs.append(f.read())
        self.assertIn("virtualenv built in", logs[0])
        self.assertIn("reusing the virtualenv", logs[1])
        self.assertNotIn("built in", logs[1])
        venvs = os.path.join(w.workdir, "cache", "venvs")
        for log in logs:
            self.assertIn("python " + venvs, log)

        # A requirement nothing offers: the trial fails with pip's words.
        files["requirements.txt"] = b"nosuchpackage==9\n"
        data, sha = pack(files)
        self.upload(d, data, sha)
        eid = self.submit(d, sha, failures=0)
        self.wait_done(d, eid, 40, w)
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "failed")
        self.assertIn("pip install -r requirements.txt failed", t["error"])
        self.assertIn("nosuchpackage", t["error"])

    def test_full_cache_disk_takes_no_download(self):
        if os.geteuid() != 0:
            self.skipTest("not root: cannot mount a small tmpfs for a full cache disk")
        d = self.daemon()
        data, sha = pack({"train.py": TRAIN.encode(), "mypkg/__init__.py": b"K = 1\n",
                          "data/x.txt": b"4\n"})
        self.upload(d, data, sha)
        # A cache on a 16 MiB file system: under the 64 MiB a worker wants
        # free (worker/blobcache.h), so it is full from the start.
        small = tempfile.mkdtemp(prefix="rung-itest-small-")
        self.addCleanup(shutil.rmtree, small, True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", small],
                           stderr=subprocess.PIPE)
        if r.returncode != 0:
            self.skipTest("cannot mount a tmpfs: %s" % r.stderr.decode().strip())
        self.addCleanup(subprocess.run, ["umount", "-l", small])
        full = self.worker(d, "full", extra=["--env", "base=" + PYTHON, "--cache-dir", small])
        wid = wh.h.wait_until(lambda: self.worker_ids(d).get("full"), 10, "worker full")
        # The worker object keeps the last heartbeat (docs/api.md).
        beat = wh.h.wait_until(
            lambda: [(w.get("heartbeat") or {}).get("cache")
                     for w in d.ok("GET", "/api/v1/workers")["items"]
                     if w["id"] == wid and ((w.get("heartbeat") or {}).get("cache") or {})
                     .get("full")],
            10, "the full worker's heartbeat to say its cache is full")[0]
        self.assertLess(beat["free_bytes"], 64 << 20)
        eid = self.submit(d, sha)
        roomy = self.worker(d, "roomy", extra=["--env", "base=" + PYTHON])
        exp = self.wait_done(d, eid, 30, full, roomy)
        self.assertEqual(exp["state"], "completed", self.explain(d, full, roomy))
        self.assertNotIn("leased", full.stderr_text())
        self.assertIn("leased", roomy.stderr_text())

    def test_escaping_tarball_is_refused(self):
        d = self.daemon()
        data, sha = pack({"train.py": b"open('/tmp/should-not-run', 'w')\n"},
                         raw_names=[("../escaped.txt", b"evil")])
        self.upload(d, data, sha)
        w = self.worker(d, "w", extra=["--env", "base=" + PYTHON])
        eid = self.submit(d, sha, failures=0)
        self.wait_done(d, eid, 30, w)
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "failed")
        self.assertIn('"../escaped.txt"', t["error"])
        self.assertIn("refused", t["error"])
        self.assertFalse(os.path.exists(os.path.join(w.workdir, "code", "escaped.txt")))


if __name__ == "__main__":
    wh.main()
