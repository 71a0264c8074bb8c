"""Integration tests of blobs and of where code-carrying trials go
(docs/api.md, "Blobs", "trainable", "The worker object"): a real rungd and
workers that speak the protocol by hand over HTTP.

- A packed folder is uploaded once under its SHA-256 (HEAD says 404, then
  200; a second PUT stores nothing twice), downloads byte for byte, and a
  body that hashes otherwise is refused naming `sha256`; --max-blob-mb and
  --blob-quota-mb refuse what passes them, naming the figures.
- A spec whose working_dir names a blob rungd does not hold is refused
  naming `trainable.working_dir`; one it holds is accepted.
- A trial whose trainable names an environment goes only to a worker that
  offers it, a container trial only to one offering its runtime, and a
  worker whose cache is full (`downloads: false`) gets no trial with a
  working_dir; this holds after rungd restarts (schema 012).
- A blob that no experiment refers to any more goes after the
  experiment's DELETE once it is past its grace, and one another
  experiment uses stays.
- `rung submit --working-dir` uploads a folder once: the second submission
  of the same folder sends only its HEAD and the spec (rungd's request
  counter), and what .rungignore leaves out is not in the blob.
"""

import hashlib
import io
import json
import os
import re
import socket
import subprocess
import tarfile
import time

import rungd_harness as h

TAR = {"Content-Type": "application/x-tar"}


def pack(files):
    """An uncompressed tar of {name: bytes}, as the clients make one."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(files[name]))
    return buf.getvalue()


def command(**extra):
    t = {"type": "command", "argv": ["python3", "train.py"]}
    t.update(extra)
    return t


class BlobCase(h.RungdTestCase):

    def put(self, d, sha, body):
        return d.request("PUT", "/api/v1/blobs/%s" % sha, raw=body, headers=TAR)

    def refused_at_head(self, d, sha, length):
        """(status, error) of a PUT whose client sent the head alone: the
        limits are checked before a byte of the body is read."""
        s = socket.create_connection((d.host, d.port), timeout=5)
        try:
            s.sendall(("PUT /api/v1/blobs/%s HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n"
                       % (sha, length)).encode())
            reply = b""
            while True:
                got = s.recv(4096)
                if not got:
                    break
                reply += got
                head, _, rest = reply.partition(b"\r\n\r\n")
                n = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                     if line.lower().startswith(b"content-length:")]
                if n and len(rest) >= n[0]:
                    break
        finally:
            s.close()
        return int(reply[9:12]), json.loads(reply.partition(b"\r\n\r\n")[2])["error"]

    def upload(self, d, files):
        body = pack(files)
        sha = hashlib.sha256(body).hexdigest()
        r = self.put(d, sha, body)
        self.assertIn(r.status, (200, 201), r)
        return sha, body

    def test_upload_once_download_and_refusals(self):
        d = self.daemon()
        body = pack({"train.py": b"print('hi')\n", "data/x.txt": b"42\n"})
        sha = hashlib.sha256(body).hexdigest()
        path = "/api/v1/blobs/%s" % sha
        self.assertEqual(d.request("HEAD", path).status, 404)
        r = self.put(d, sha, body)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json, {"sha256": sha, "size": len(body)})
        self.assertEqual(d.request("HEAD", path).status, 200)
        # Already held: 200, and still one file.
        r = self.put(d, sha.upper(), body)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(os.listdir(os.path.join(self.tmp, "blobs")), [sha + ".tar"])
        got = d.request("GET", path)
        self.assertEqual((got.status, got.body), (200, body))
        self.assertEqual(got.headers.get("content-type"), "application/x-tar")
        # A body that is not the one the path names.
        other = hashlib.sha256(b"other").hexdigest()
        self.assertError(self.put(d, other, body), 400, "invalid_argument", "sha256")
        self.assertEqual(d.request("HEAD", "/api/v1/blobs/%s" % other).status, 404)
        self.assertEqual(d.request("GET", "/api/v1/blobs/notahash").status, 404)
        leftovers = [n for n in os.listdir(os.path.join(self.tmp, "checkpoints"))
                     if n.startswith(".upload-")]
        self.assertEqual(leftovers, [])

    def test_limits_name_their_figures(self):
        d = self.daemon("--max-blob-mb", "1", "--blob-quota-mb", "2")
        status, err = self.refused_at_head(d, "ab" * 32, (1 << 20) + 1)
        self.assertEqual((status, err["code"]), (413, "payload_too_large"))
        part = os.urandom(900 * 1024)
        for k in range(2):
            b = part + bytes([k])
            self.assertEqual(self.put(d, hashlib.sha256(b).hexdigest(), b).status, 201)
        status, err = self.refused_at_head(d, "cd" * 32, len(part) + 1)
        self.assertEqual((status, err["code"], err["field"]),
                         (507, "insufficient_storage", "Content-Length"))
        self.assertIn("--blob-quota-mb", err["message"])
        self.assertIn(str(2 << 20), err["message"])

    def test_submit_needs_the_blob(self):
        d = self.daemon()
        missing = hashlib.sha256(b"never uploaded").hexdigest()
        r = d.request("POST", "/api/v1/experiments",
                      h.spec(trainable=command(working_dir="sha256:" + missing)))
        self.assertError(r, 400, "invalid_spec", "trainable.working_dir")
        self.assertIn(missing, r.json["error"]["message"])
        sha, _ = self.upload(d, {"train.py": b"pass\n"})
        exp = d.create_experiment(h.spec(trainable=command(working_dir="sha256:" + sha.upper())))
        self.assertEqual(d.experiment(exp["id"])["trainable"]["working_dir"],
                         "sha256:" + sha)

    def register(self, d, name, **caps):
        body = {"name": name, "cpus": 4}
        body.update(caps)
        return d.ok("POST", "/api/v1/workers", body, status=201)["worker_id"]

    def lease(self, d, wid, **extra):
        body = {"cpus": 1, "gpus": [], "wait_s": 0}
        body.update(extra)
        r = d.request("POST", "/api/v1/workers/%d/lease" % wid, body)
        self.assertIn(r.status, (200, 204), r)
        return r.json["trial"]["experiment_id"] if r.status == 200 else None

    def test_trials_go_where_their_code_can_run(self):
        d = self.daemon()
        plain = self.register(d, "plain")
        torch = self.register(d, "torch", environments=["torch", "base"])
        boxed = self.register(d, "boxed", containers=["podman"])
        full = self.register(d, "full", environments=["torch"])
        workers = {w["name"]: w for w in d.ok("GET", "/api/v1/workers")["items"]}
        self.assertEqual((workers["torch"]["environments"], workers["torch"]["containers"]),
                         (["torch", "base"], []))
        self.assertEqual(workers["boxed"]["containers"], ["podman"])
        self.assertEqual(workers["plain"]["environments"], [])
        sha, _ = self.upload(d, {"train.py": b"pass\n"})
        env = d.create_experiment(h.spec(name="env", trainable=command(environment="torch")))["id"]
        ctr = d.create_experiment(h.spec(name="ctr", trainable=command(
            container={"image": "localhost/x", "runtime": "podman"})))["id"]
        docker = d.create_experiment(h.spec(name="docker", trainable=command(
            container={"image": "localhost/x", "runtime": "docker"})))["id"]
        wd = d.create_experiment(h.spec(name="wd", trainable=command(
            environment="torch", working_dir="sha256:" + sha)))["id"]
        # The proposer thread makes the trials soon after; the leases below
        # do not wait (wait_s 0), so their trials must be there first.
        for eid in (env, ctr, docker, wd):
            h.wait_until(lambda eid=eid: d.all_trials(eid), 30, "the trials of %d" % eid)
        # The plain worker offers none of it; the full one no downloads.
        self.assertIsNone(self.lease(d, plain))
        self.assertIsNone(self.lease(d, boxed, trainables=["external"]))
        self.assertEqual(self.lease(d, full, downloads=False), env)
        self.assertIsNone(self.lease(d, full, downloads=False))
        d.stop()
        d.restart()
        # What each offers is kept across the restart.
        self.assertIsNone(self.lease(d, plain))
        self.assertEqual(self.lease(d, torch), wd)
        self.assertEqual(self.lease(d, boxed), ctr)
        self.assertIsNone(self.lease(d, boxed))  # docker's trial: nobody offers docker
        self.assertEqual([t["state"] for t in d.all_trials(docker)], ["pending"])

    def test_bad_registrations_name_the_field(self):
        d = self.daemon()
        for body, field in (({"environments": "torch"}, "environments"),
                            ({"environments": ["-x"]}, "environments[0]"),
                            ({"environments": ["a", "a"]}, "environments[1]"),
                            ({"containers": ["lxc"]}, "containers[0]")):
            r = d.request("POST", "/api/v1/workers", dict(body, name="w"))
            self.assertError(r, 400, "invalid_argument", field)
        wid = self.register(d, "w")
        r = d.request("POST", "/api/v1/workers/%d/lease" % wid, {"downloads": "no"})
        self.assertError(r, 400, "invalid_argument", "downloads")
        r = d.request("POST", "/api/v1/workers/%d/heartbeat" % wid,
                      {"trials": [], "cache": {"free_bytes": -1}})
        self.assertError(r, 400, "invalid_argument", "cache.free_bytes")
        d.ok("POST", "/api/v1/workers/%d/heartbeat" % wid,
             {"trials": [], "cache": {"free_bytes": 12345, "full": False}})
        w = d.ok("GET", "/api/v1/workers")["items"][0]
        self.assertEqual(w["heartbeat"]["cache"], {"free_bytes": 12345, "full": False})

    def test_an_unused_blob_goes_with_its_experiment(self):
        d = self.daemon()
        shared, _ = self.upload(d, {"train.py": b"shared\n"})
        alone, _ = self.upload(d, {"train.py": b"alone\n"})
        a = d.create_experiment(h.spec(name="a", trainable=command(working_dir="sha256:" + alone)))
        b = d.create_experiment(h.spec(name="b", trainable=command(working_dir="sha256:" + shared)))
        c = d.create_experiment(h.spec(name="c", trainable=command(working_dir="sha256:" + shared)))
        blobs = os.path.join(self.tmp, "blobs")
        # Past the hour of grace an upload has before its experiment comes.
        old = time.time() - 2 * 3600
        for name in os.listdir(blobs):
            os.utime(os.path.join(blobs, name), (old, old))
        for e in (a, b):
            d.ok("POST", "/api/v1/experiments/%d/cancel" % e["id"])
            d.wait_state(e["id"], "canceled")
            d.delete(e["id"])
        self.assertEqual(sorted(os.listdir(blobs)), [shared + ".tar"])
        self.assertEqual(d.experiment(c["id"])["state"], "running")

    def test_the_c_client_uploads_a_folder_once(self):
        d = self.daemon()
        top = os.path.join(self.tmp, "project")
        os.makedirs(os.path.join(top, "pkg"))
        for name, text in (("train.py", "print(1)\n"), ("pkg/__init__.py", "X = 1\n"),
                           ("noise.log", "left out\n"), (".rungignore", "*.log\n")):
            with open(os.path.join(top, name), "w") as f:
                f.write(text)
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump(h.spec(trainable=command()), f)
        cli = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")

        def submit():
            run = subprocess.run([cli, "--server", d.url, "submit", spec, "--working-dir", top],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            return run.stdout

        def requests():
            text = d.request("GET", "/metrics").text
            return int(re.search(r"^rung_requests_total (\d+)$", text, re.M).group(1))

        first = submit()
        self.assertRegex(first, r"^working_dir: 3 files, \d+ bytes, sha256:[0-9a-f]{12}… "
                                r"uploaded\n")
        before = requests()
        second = submit()
        self.assertIn("already on rungd\n", second)
        # HEAD and POST of the experiment, and the /metrics read itself.
        self.assertEqual(requests() - before, 3)
        sha = os.listdir(os.path.join(self.tmp, "blobs"))[0][:-4]
        blob = d.request("GET", "/api/v1/blobs/" + sha).body
        self.assertEqual(sorted(tarfile.open(fileobj=io.BytesIO(blob)).getnames()),
                         [".rungignore", "pkg", "pkg/__init__.py", "train.py"])
        eid = int(re.search(r"experiment (\d+) submitted", second).group(1))
        self.assertEqual(d.experiment(eid)["trainable"]["working_dir"], "sha256:" + sha)


if __name__ == "__main__":
    h.main()
