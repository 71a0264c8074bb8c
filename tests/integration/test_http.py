"""Integration tests: the HTTP surface and the command line.

Body limits, malformed JSON, spec validation with the offending field's path,
404/405, authentication with a token, refusing to listen beyond loopback
without one, /healthz and /metrics, static files, and the daemon's options.
"""

import http.client
import json
import os
import re
import socket
import time

import rungd_harness as h


class Errors(h.RungdTestCase):
    """Issue test 7."""

    def test_body_over_the_limit(self):
        d = self.daemon("--max-body", "1024")
        big = h.spec(name="x" * 4096)
        raw = json.dumps(big).encode()
        self.assertGreater(len(raw), 4096)
        self.assertError(d.request("POST", "/api/v1/experiments", raw=raw), 413,
                         "payload_too_large")
        # Just under the limit is fine, and nothing was created by the refusal.
        small = json.dumps(h.spec(name="just-under")).encode()
        small += b" " * (1000 - len(small))  # JSON allows trailing whitespace
        r = d.request("POST", "/api/v1/experiments", raw=small)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 1)

    def test_huge_body_is_refused_without_reading_it(self):
        # Announce 100 MiB, send 64 KiB: the 413 must come without the rest.
        d = self.daemon("--max-body", "1024")
        s = socket.create_connection((d.host, d.port), timeout=10)
        try:
            s.sendall(b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n")
            try:
                s.sendall(b"{" + b" " * 65535)
            except OSError:
                pass  # the server may close early, which is fine
            data = b""
            t0 = time.monotonic()
            while b"\r\n\r\n" not in data and time.monotonic() - t0 < 10:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        self.assertTrue(data.startswith(b"HTTP/1.1 413") or data.startswith(b"HTTP/1.0 413"),
                        "expected 413 before the body was sent, got %r" % data[:200])

    def test_chunked_body_over_the_limit(self):
        # No Content-Length to check up front: the limit still holds.
        d = self.daemon("--max-body", "1024")
        conn = http.client.HTTPConnection(d.host, d.port, timeout=10)
        try:
            chunks = [b" " * 1000 for _ in range(10)] + [json.dumps(h.spec()).encode()]
            conn.request("POST", "/api/v1/experiments", body=iter(chunks),
                         headers={"Content-Type": "application/json"}, encode_chunked=True)
            r = conn.getresponse()
            body = json.loads(r.read())
            self.assertEqual(r.status, 413, body)
            self.assertEqual(body["error"]["code"], "payload_too_large")
        finally:
            conn.close()
        conn = http.client.HTTPConnection(d.host, d.port, timeout=10)
        try:
            conn.request("POST", "/api/v1/experiments", body=iter([json.dumps(h.spec()).encode()]),
                         headers={"Content-Type": "application/json"}, encode_chunked=True)
            r = conn.getresponse()
            r.read()
            self.assertEqual(r.status, 201)
        finally:
            conn.close()
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 1)

    def test_keep_alive(self):
        # Workers (libcurl) reuse connections: many requests, errors among
        # them, on one connection.
        d = self.daemon()
        conn = http.client.HTTPConnection(d.host, d.port, timeout=10)
        try:
            statuses = []
            for i in range(20):
                conn.request("POST", "/api/v1/experiments", body=b"{",
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                statuses.append(r.status)
                conn.request("POST", "/api/v1/experiments",
                             body=json.dumps(h.spec(name="k%d" % i)).encode(),
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                statuses.append(r.status)
        finally:
            conn.close()
        self.assertEqual(statuses, [400, 201] * 20)
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 20)

    def test_content_type_with_charset(self):
        # docs/api.md's own content type.
        d = self.daemon()
        r = d.request("POST", "/api/v1/experiments", raw=json.dumps(h.spec()).encode(),
                      headers={"Content-Type": "application/json; charset=utf-8"})
        self.assertEqual(r.status, 201, r)

    def test_malformed_json(self):
        d = self.daemon()
        for raw in (b"{", b"{\"name\": }", b"not json", b"[1, 2", b"\xff\xfe{}"):
            self.assertError(d.request("POST", "/api/v1/experiments", raw=raw), 400, "bad_json")
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 0)

    def test_invalid_specs_name_the_field(self):
        d = self.daemon()
        cases = [
            ("search_space.lr.low",
             h.spec(search_space={"lr": {"type": "loguniform", "low": 0, "high": 0.1}})),
            ("mode", h.spec(mode="median")),
            ("nmu_samples", dict(h.spec(), nmu_samples=3)),
            ("metric", {k: v for k, v in h.spec().items() if k != "metric"}),
            ("mode", {k: v for k, v in h.spec().items() if k != "mode"}),
            ("num_samples", h.spec(num_samples=0)),
            ("max_concurrent_trials", h.spec(max_concurrent_trials=-1)),
            ("max_failures", h.spec(max_failures=-2)),
            ("search_space.x.type", h.spec(search_space={"x": {"type": "gaussian"}})),
            ("searcher.type", h.spec(searcher={"type": "annealing"})),
            ("scheduler.type", h.spec(scheduler={"type": "bohb"})),
        ]
        for field, body in cases:
            with self.subTest(field=field, body=body):
                self.assertError(d.request("POST", "/api/v1/experiments", body), 400,
                                 "invalid_spec", field)
        # Where the exact field is a matter of taste, it is still under the parameter.
        for body in (h.spec(search_space={"k": {"type": "randint", "low": 5, "high": 5}}),
                     h.spec(search_space={"c": {"type": "choice", "values": []}}),
                     h.spec(search_space={"1bad": {"type": "uniform", "low": 0, "high": 1}})):
            with self.subTest(body=body):
                err = self.assertError(d.request("POST", "/api/v1/experiments", body), 400,
                                       "invalid_spec")
                name = next(iter(body["search_space"]))
                self.assertTrue((err.get("field") or "").startswith("search_space." + name),
                                err)
        # The message names the field too, for a person reading it.
        err = self.assertError(d.request("POST", "/api/v1/experiments",
                                         h.spec(mode="median")), 400, "invalid_spec", "mode")
        self.assertIn("mode", err["message"])
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 0)

    def test_not_found_and_method_not_allowed(self):
        d = self.daemon()
        self.assertError(d.request("GET", "/api/v1/experiments/12345"), 404, "not_found")
        self.assertError(d.request("GET", "/api/v1/experiments/12345/trials"), 404, "not_found")
        self.assertError(d.request("GET", "/api/v1/experiments/abc"), 404, "not_found")
        self.assertError(d.request("GET", "/api/v1/experiments/0"), 404, "not_found")
        self.assertError(d.request("GET", "/api/v1/experiments/-1"), 404, "not_found")
        self.assertError(d.request("GET", "/api/v1/experiments/99999999999999999999999"), 404,
                         "not_found")
        self.assertError(d.request("GET", "/api/v1/trials/0/metrics"), 404, "not_found")
        self.assertError(d.request("GET", "/api/v1/no-such-thing"), 404, "not_found")
        r = d.request("DELETE", "/api/v1/experiments")
        self.assertEqual(r.status, 405, r)

    def test_error_replies_are_json(self):
        d = self.daemon()
        r = d.request("GET", "/api/v1/experiments/777")
        self.assertEqual(r.status, 404)
        self.assertTrue(r.headers.get("content-type", "").startswith("application/json"), r.headers)

    def test_every_layer_writes_the_same_error_bytes(self):
        # One builder (common/errjson.h) for the front's refusals before MHD
        # reads a request (http_screen.c), the front's own replies (http.c),
        # the handlers' and the engine's: the same keys in the same order,
        # dumped the same compact way, whichever layer refused.
        d = self.daemon()
        s = h.connect_from(d, "127.0.0.1")
        try:
            s.sendall(b"GET /api/v1/experiments HTTP/2.0\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 505 "), data[:200])
        replies = {
            "screen": body,
            "front 404": d.request("GET", "/api/v1/no-such-thing").body,
            "front 405": d.request("DELETE", "/api/v1/experiments").body,
            "handler 404": d.request("GET", "/api/v1/experiments/777").body,
            "handler field": d.request("POST", "/api/v1/experiments",
                                       h.spec(searcher="no-such-searcher")).body,
        }
        for layer, raw in replies.items():
            with self.subTest(layer=layer):
                doc = json.loads(raw, object_pairs_hook=lambda pairs: pairs)
                self.assertEqual([k for k, _ in doc], ["error"], raw)
                keys = [k for k, _ in doc[0][1]]
                self.assertEqual(keys[:2], ["code", "message"], raw)
                self.assertIn(keys[2:], ([], ["field"]), raw)
                canonical = json.dumps(json.loads(raw), separators=(",", ":"),
                                       ensure_ascii=False).encode()
                self.assertEqual(raw, canonical)
        self.assertIn(b'"field":"searcher', replies["handler field"])

    def test_wrong_content_type(self):
        d = self.daemon()
        r = d.request("POST", "/api/v1/experiments", raw=json.dumps(h.spec()).encode(),
                      headers={"Content-Type": "text/plain"})
        self.assertError(r, 415, "unsupported_media_type")


class Auth(h.RungdTestCase):
    """Issue test 8."""

    def test_token_required_on_api_only(self):
        d = self.daemon("--token", "secret", token="secret")
        for tok in (None, "wrong", "secre", "secret2"):
            with self.subTest(token=tok):
                self.assertError(d.request("GET", "/api/v1/experiments", token=tok), 401,
                                 "unauthorized")
        self.assertError(d.request("GET", "/api/v1/experiments", token=None,
                                   headers={"Authorization": "Basic c2VjcmV0"}), 401,
                         "unauthorized")
        self.assertError(d.request("POST", "/api/v1/experiments", h.spec(), token=None), 401,
                         "unauthorized")
        self.assertError(d.request("POST", "/api/v1/workers", {"name": "w", "cpus": 1,
                                                               "gpus": []}, token="nope"),
                         401, "unauthorized")
        # Nothing was created by the refused requests.
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 0)
        d.create_experiment(h.spec())
        self.assertEqual(d.ok("GET", "/api/v1/experiments")["total"], 1)
        # Open endpoints.
        self.assertEqual(d.call("GET", "/healthz", token=None), (200, {"ok": True}))
        self.assertEqual(d.request("GET", "/metrics", token=None).status, 200)

    def test_token_from_environment(self):
        d = self.daemon(env={"RUNG_TOKEN": "envsecret"}, token="envsecret")
        self.assertError(d.request("GET", "/api/v1/experiments", token=None), 401,
                         "unauthorized")
        self.assertEqual(d.request("GET", "/api/v1/experiments").status, 200)

    def test_no_token_refuses_non_loopback(self):
        d = self.daemon("--bind", "0.0.0.0", start=False)
        rc = d.run_to_exit()
        self.assertIsNotNone(rc, "rungd kept running on 0.0.0.0 without a token")
        self.assertNotEqual(rc, 0)
        self.assertIsNone(d.port, "it printed a listening line: %r" % d.stdout_lines)
        self.assertTrue(d.stderr_text().strip(), "no message on stderr")

    def test_token_allows_non_loopback(self):
        d = self.daemon("--bind", "0.0.0.0", "--token", "secret", token="secret")
        self.assertEqual(d.call("GET", "/healthz"), (200, {"ok": True}))
        self.assertEqual(d.request("GET", "/api/v1/experiments").status, 200)
        self.assertEqual(d.request("GET", "/api/v1/experiments", token=None).status, 401)


class CommandLine(h.RungdTestCase):

    def test_listening_line_names_a_working_port(self):
        d = self.daemon()
        self.assertEqual(d.host, "127.0.0.1")
        self.assertGreater(d.port, 0)
        self.assertTrue(any(re.search(r"listening on http://127\.0\.0\.1:%d\b" % d.port, line)
                            for line in d.stdout_lines))
        self.assertEqual(d.call("GET", "/healthz"), (200, {"ok": True}))
        self.assertTrue(os.path.exists(d.db), "no database file at --db")

    def test_bad_options_exit_non_zero(self):
        for args in (["--no-such-option"], ["--port", "notaport"], ["--port", "70000"],
                     ["--lease-s", "-5"], ["--max-body", "lots"]):
            with self.subTest(args=args):
                d = self.daemon(*args, start=False)
                rc = d.run_to_exit()
                self.assertIsNotNone(rc, "rungd ran with %r" % args)
                self.assertNotEqual(rc, 0)
                self.assertIsNone(d.port)
                self.assertTrue(d.stderr_text().strip(), "no message on stderr for %r" % args)

    def test_port_in_use_exits_non_zero(self):
        first = self.daemon()
        d = self.daemon(db=os.path.join(self.tmp, "other.db"), start=False)
        cmd = [h.rungd_path(), "--port", str(first.port), "--db", d.db]
        rc = d.run_to_exit(command=cmd)
        self.assertIsNotNone(rc, "a second rungd ran on a port in use")
        self.assertNotEqual(rc, 0)
        self.assertIsNone(d.port)
        self.assertTrue(d.stderr_text().strip())
        self.assertEqual(first.call("GET", "/healthz"), (200, {"ok": True}))

    def test_second_daemon_on_the_same_database_is_refused(self):
        # Two daemons on one file would both hand out the same trials.
        first = self.daemon()
        d = self.daemon(db=first.db, start=False)
        rc = d.run_to_exit()
        self.assertIsNotNone(rc, "a second rungd ran on a database in use")
        self.assertNotEqual(rc, 0)
        self.assertIsNone(d.port)
        self.assertIn("in use by another rungd", d.stderr_text())
        self.assertEqual(first.call("GET", "/healthz"), (200, {"ok": True}))
        # Once the first one stops, the database is free again.
        self.assertEqual(first.stop(), 0)
        again = self.daemon(db=first.db)
        self.assertEqual(again.call("GET", "/healthz"), (200, {"ok": True}))


class Operations(h.RungdTestCase):
    """Issue test 10."""

    def test_healthz(self):
        d = self.daemon()
        r = d.request("GET", "/healthz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json, {"ok": True})
        # A prober's keep-alive connection stays open: ten probes, one socket.
        conn = http.client.HTTPConnection(d.host, d.port, timeout=10)
        try:
            conn.connect()
            sock = conn.sock
            for _ in range(10):
                conn.request("GET", "/healthz")
                r = conn.getresponse()
                self.assertEqual((r.status, json.loads(r.read())), (200, {"ok": True}))
                self.assertNotEqual(r.getheader("Connection", "").lower(), "close")
                self.assertIs(conn.sock, sock, "the probe's connection was closed")
        finally:
            conn.close()

    def test_prometheus_metrics(self):
        d = self.daemon()
        exp = d.create_experiment(h.spec(num_samples=3))
        w = h.Worker(d)
        w.lease_one()
        # Trials are proposed in the background: compare with the counts
        # read just before and after, once they hold still.
        for _ in range(50):
            before = d.experiment(exp["id"])["counts"]
            r = d.request("GET", "/metrics")
            after = d.experiment(exp["id"])["counts"]
            if before == after:
                break
            time.sleep(0.05)
        self.assertEqual(before, after, "the counts never held still")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers.get("content-type", "").startswith("text/plain"), r.headers)
        sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+\d+)?$')
        families = {}
        for line in r.text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            m = sample.match(line)
            self.assertIsNotNone(m, "not a Prometheus sample line: %r" % line)
            float(m.group(3))  # the value is a number (NaN and +Inf parse too)
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            families.setdefault(m.group(1), []).append((labels, float(m.group(3))))
        # The trials-by-state family: labelled state="pending" among others.
        by_state = None
        for name, samples in families.items():
            states = {lb.get("state"): v for lb, v in samples if "state" in lb}
            if "pending" in states and "running" in states:
                by_state = (name, states)
                break
        self.assertIsNotNone(by_state, "no trials-by-state metric in:\n%s" % r.text[:2000])
        name, states = by_state
        self.assertEqual(states["running"], 1, by_state)
        self.assertEqual(states["running"], after["running"], by_state)
        self.assertEqual(states["pending"], after["pending"], by_state)
        self.assertIn("# TYPE %s" % name, r.text)


class StaticFiles(h.RungdTestCase):

    def test_web_dir_served_without_escapes(self):
        web = os.path.join(self.tmp, "web")
        os.mkdir(web)
        with open(os.path.join(web, "index.html"), "w") as f:
            f.write("<!doctype html><title>rung dashboard</title>")
        with open(os.path.join(self.tmp, "secret.txt"), "w") as f:
            f.write("TOP-SECRET-CONTENT")
        d = self.daemon("--web-dir", web)
        r = d.request("GET", "/")
        self.assertEqual(r.status, 200, r)
        self.assertIn("rung dashboard", r.text)
        self.assertTrue(r.headers.get("content-type", "").startswith("text/html"), r.headers)
        for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt",
                     "/%2E%2E%2Fsecret.txt"):
            with self.subTest(path=path):
                r = d.request("GET", path)
                self.assertNotIn("TOP-SECRET-CONTENT", r.text)
                self.assertNotEqual(r.status, 200)
        self.assertEqual(d.request("GET", "/no-such-file.js").status, 404)


if __name__ == "__main__":
    h.main()
