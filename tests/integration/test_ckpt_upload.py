"""Integration tests of who may move a PBT checkpoint through rungd
(docs/api.md, "PBT's checkpoints through rungd"): a real rungd, and
workers that speak the protocol by hand over HTTP, so that each step is
one request.

Two members run on worker A; at the first milestone member 2 exploits
member 1, and worker B would take it, so A's heartbeat reply asks A for
member 1's folder with an upload token. Then:

- A PUT from anyone but A with that token (B with A's token, A without a
  token or with a wrong one, no worker at all) is refused with 403 naming
  the query argument, before its body: the reply comes while the client
  has sent only the head, and nothing is written under checkpoints/.
- A PUT without Content-Length (chunked) is refused (400 naming it), one
  above --max-checkpoint-mb gets 413, and one for a checkpoint nobody
  waits for 409, all before the body.
- A slow upload by A (a few bytes a second) is cut by the minimum rate
  within a few seconds, and leaves no file.
- A's upload with its token is stored; the receiving trial's lease on B
  carries its hash, and only B with that lease's token may download it
  (A with its own lease token, or B with another, gets 403).
"""

import hashlib
import json
import os
import socket
import time

import rungd_harness as h

UNIT = {"type": "uniform", "low": 0.0, "high": 1.0}
OCTET = {"Content-Type": "application/octet-stream"}


def pbt_spec():
    return h.spec(
        metric="q", mode="max", num_samples=2, max_failures=0,
        search_space={"h": UNIT},
        points_to_evaluate=[{"h": 0.9}, {"h": 0.1}],
        searcher={"type": "random", "seed": 3},
        scheduler={"type": "pbt", "perturbation_interval": 2, "quantile_fraction": 0.25,
                   "resample_probability": 0.25, "hyperparam_mutations": {"h": UNIT},
                   "synch": False})


class CheckpointUploadCase(h.RungdTestCase):

    def uploads(self):
        """The files under <data dir>/checkpoints/ (none when it is missing)."""
        folder = os.path.join(self.tmp, "checkpoints")
        return sorted(os.listdir(folder)) if os.path.isdir(folder) else []

    def send_head(self, d, path, length):
        """A connection that has sent a PUT's head (Content-Length: length,
        or chunked when length is None) and nothing of its body."""
        s = socket.create_connection((d.host, d.port), timeout=5)
        framing = ("Content-Length: %d" % length if length is not None
                   else "Transfer-Encoding: chunked")
        s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/octet-stream\r\nX-Rung-Sha256: %s\r\n%s\r\n\r\n"
                   % (path, d.token, "0" * 64, framing)).encode())
        return s

    def head_only(self, d, path, length):
        """(status, error field, seconds until the reply) of a PUT whose
        client sent the head alone: the server answered while the body was
        still owed."""
        t0 = time.monotonic()
        s = self.send_head(d, path, length)
        try:
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
            took = time.monotonic() - t0
            self.assertTrue(reply.startswith(b"HTTP/1.1 "), reply[:200])
            err = json.loads(reply.partition(b"\r\n\r\n")[2])["error"]
            return int(reply[9:12]), err.get("field"), took
        finally:
            s.close()

    def setup_upload(self, d):
        """Runs the scenario up to A's heartbeat reply asking for member 1's
        folder; returns (A, B, donor trial, receiver id, the upload entry)."""
        eid = d.create_experiment(pbt_spec())["id"]
        d.wait_proposed(eid, 2)
        a, b = h.Worker(d, "a"), h.Worker(d, "b")
        t1, t2 = a.lease_one(), a.lease_one()
        donor, recv = (t1, t2) if t1["config"]["h"] > 0.5 else (t2, t1)
        self.assertEqual(a.report_ok(donor, 2, {"q": 1.0}), "continue")
        # The worse member exploits the better one: back in line, waiting
        # for the donor's checkpoint of step 2, which is on A's disk.
        self.assertEqual(a.report_ok(recv, 2, {"q": 0.0}), "stop")
        # B would take it, but the copy is on A: nothing for B yet.
        self.assertEqual(b.lease(wait_s=0.2)[0], 204)
        status, doc = a.heartbeat([donor["id"]])
        self.assertEqual(status, 200, doc)
        ups = doc.get("upload", [])
        self.assertEqual([(u["trial"], u["step"]) for u in ups], [(donor["id"], 2)], doc)
        self.assertRegex(ups[0]["token"], r"^[0-9a-f]{32}$")
        # The token stays while the upload is owed (an upload under way
        # keeps it), and B is asked for nothing.
        self.assertEqual(a.heartbeat([donor["id"]])[1]["upload"], ups)
        self.assertNotIn("upload", b.heartbeat([])[1])
        return a, b, donor, recv["id"], ups[0]

    def put_path(self, donor, step, worker=None, token=None):
        path = "/api/v1/trials/%d/checkpoint?step=%d" % (donor, step)
        if worker is not None:
            path += "&worker=%d" % worker
        if token is not None:
            path += "&upload_token=" + token
        return path

    def test_only_the_asked_worker_uploads_and_only_the_receiver_downloads(self):
        d = self.daemon("--max-checkpoint-mb", "1", token="team-token")
        a, b, donor, recv_id, up = self.setup_upload(d)
        tid = donor["id"]
        body = b"a tar, as far as rungd cares" * 100
        sha = hashlib.sha256(body).hexdigest()
        hdrs = dict(OCTET, **{"X-Rung-Sha256": sha})

        # Anyone else, with the body sent whole: 403 naming who is wrong.
        cases = [(self.put_path(tid, 2, b.id, up["token"]), "worker"),
                 (self.put_path(tid, 2, None, up["token"]), "worker"),
                 (self.put_path(tid, 2, a.id, None), "upload_token"),
                 (self.put_path(tid, 2, a.id, "0" * 32), "upload_token"),
                 (self.put_path(tid, 2, a.id, up["token"][:-1]), "upload_token")]
        for path, field in cases:
            self.assertError(d.request("PUT", path, raw=body, headers=hdrs), 403, "forbidden",
                             field)
        # ... and before the body: each reply comes to the head alone.
        heads = [
            # another worker with A's token
            (self.put_path(tid, 2, b.id, up["token"]), 800 * 1024, 403, "worker"),
            (self.put_path(tid, 2, a.id, "f" * 32), 800 * 1024, 403, "upload_token"),
            # no Content-Length (a chunked body)
            (self.put_path(tid, 2, a.id, up["token"]), None, 400, "Content-Length"),
            # larger than --max-checkpoint-mb
            (self.put_path(tid, 2, a.id, up["token"]), 2 << 20, 413, None),
            # a checkpoint nobody waits for, even from A
            (self.put_path(tid, 4, a.id, up["token"]), 800 * 1024, 409, None),
        ]
        for path, length, want, field in heads:
            status, got_field, took = self.head_only(d, path, length)
            self.assertEqual((status, got_field), (want, field), path)
            self.assertLess(took, 2.0, path)
        self.assertEqual(self.uploads(), [])

        # The asked worker, with a body whose hash is not the one claimed.
        bad = d.request("PUT", self.put_path(tid, 2, a.id, up["token"]), raw=body,
                        headers=dict(OCTET, **{"X-Rung-Sha256": "0" * 64}))
        self.assertError(bad, 400, "invalid_argument", "X-Rung-Sha256")
        # The asked worker with its token: stored.
        doc = d.ok("PUT", self.put_path(tid, 2, a.id, up["token"]), raw=body, headers=hdrs)
        self.assertEqual((doc["trial"], doc["step"], doc["sha256"], doc["size"]),
                         (tid, 2, sha, len(body)))
        self.assertEqual(self.uploads(), ["%d-2.tar" % tid])
        # The event log says so (docs/api.md, "Events").
        ev = [e for e in d.ok("GET", "/api/v1/events?kind=checkpoint.stored")["items"]]
        self.assertEqual([(e["trial_id"], e["detail"]["step"], e["detail"]["sha256"],
                           e["detail"]["bytes"]) for e in ev], [(tid, 2, sha, len(body))])
        # Stored: the token opens nothing more, and A is asked no more.
        self.assertError(d.request("PUT", self.put_path(tid, 2, a.id, up["token"]), raw=body,
                                   headers=hdrs), 403, "forbidden", "worker")
        self.assertNotIn("upload", a.heartbeat([tid])[1])

        # B takes the receiver now, with the copy's hash.
        trial = b.lease_one(wait_s=2)
        self.assertEqual(trial["id"], recv_id)
        self.assertEqual(trial["checkpoint_from"]["sha256"], sha)
        get = "/api/v1/trials/%d/checkpoint?step=2" % tid
        # Another token holder: 403, whatever lease token it shows.
        self.assertError(d.request("GET", get), 403, "forbidden", "worker")
        self.assertError(d.request("GET", get + "&worker=%d&lease_token=%s"
                                   % (a.id, donor["lease_token"])), 403, "forbidden",
                         "lease_token")
        self.assertError(d.request("GET", get + "&worker=%d&lease_token=%s"
                                   % (a.id, trial["lease_token"])), 403, "forbidden",
                         "lease_token")
        self.assertError(d.request("GET", get + "&worker=%d&lease_token=%s"
                                   % (b.id, donor["lease_token"])), 403, "forbidden",
                         "lease_token")
        # The receiving worker with its lease: the bytes stored.
        r = d.request("GET", get + "&worker=%d&lease_token=%s" % (b.id, trial["lease_token"]))
        self.assertEqual(r.status, 200, r.text[:300])
        self.assertEqual(r.body, body)

    def test_a_slow_upload_is_cut_by_the_minimum_rate(self):
        d = self.daemon(token="team-token")
        a, _, donor, _, up = self.setup_upload(d)
        s = self.send_head(d, self.put_path(donor["id"], 2, a.id, up["token"]), 1 << 20)
        # A few bytes a second, as a slow client holding its slot would:
        # each byte used to renew the 10 s deadline.
        t0 = time.monotonic()
        cut = None
        while time.monotonic() - t0 < 12:
            try:
                s.sendall(b"xxxx")
                s.settimeout(0.25)
                if s.recv(4096) == b"":
                    cut = time.monotonic() - t0
                    break
            except socket.timeout:
                continue
            except OSError:
                cut = time.monotonic() - t0
                break
        s.close()
        self.assertIsNotNone(cut, "a slow upload was never cut")
        self.assertLess(cut, 7.0)
        self.assertEqual(self.uploads(), [])
        # The worker asked can still upload it afterwards.
        body = b"the real one"
        d.ok("PUT", self.put_path(donor["id"], 2, a.id, up["token"]), raw=body,
             headers=dict(OCTET, **{"X-Rung-Sha256": hashlib.sha256(body).hexdigest()}))


if __name__ == "__main__":
    h.main()
