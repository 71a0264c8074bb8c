"""HTTPS (docs/operations.md, "TLS"): rungd --tls-cert/--tls-key serves
HTTPS; rung, the Python client and rung-worker verify it against a CA
(--ca / RUNG_CA) and refuse a server their CA did not sign; SIGHUP with a
renewed certificate serves it to new connections while a connection opened
before finishes its request; a client refuses to send a token over plain
http:// to another machine.

The CAs and certificates are made here with `openssl`.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

from rungd_harness import RungdTestCase, main, spec, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "tls-bootstrap-token-0123456789abcdef"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(folder, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out",
            name + ".pem", "-days", "2", "-subj", "/CN=" + name, cwd=folder)


def make_cert(folder, ca, name):
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out",
            name + ".csr", "-subj", "/CN=localhost", cwd=folder)
    with open(os.path.join(folder, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", "ext.cnf",
            cwd=folder)


def issuer_cn(host, port, cafile):
    """The issuer CN of the certificate a fresh connection is served."""
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection((host, port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            cert = t.getpeercert()
    return dict(x[0] for x in cert["issuer"])["commonName"]


class Tls(RungdTestCase):
    def setUp(self):
        super().setUp()
        if shutil.which("openssl") is None:
            self.skipTest("openssl is not installed (scripts/deps.sh --tests installs it)")
        self.pki = os.path.join(self.tmp, "pki")
        os.mkdir(self.pki)
        make_ca(self.pki, "ca1")
        make_ca(self.pki, "ca2")
        make_cert(self.pki, "ca1", "srv1")
        make_cert(self.pki, "ca2", "srv2")
        self.cert = os.path.join(self.pki, "current.pem")
        self.key = os.path.join(self.pki, "current.key")
        shutil.copy(os.path.join(self.pki, "srv1.pem"), self.cert)
        shutil.copy(os.path.join(self.pki, "srv1.key"), self.key)
        self.ca1 = os.path.join(self.pki, "ca1.pem")
        self.ca2 = os.path.join(self.pki, "ca2.pem")

    def https_daemon(self):
        d = self.daemon("--token", TOKEN, "--tls-cert", self.cert, "--tls-key", self.key,
                        start=False)
        d.spawn()
        wait_until(lambda: any(l.startswith("listening on https://") for l in d.stdout_lines),
                   10, "rungd listening on https")
        line = [l for l in d.stdout_lines if l.startswith("listening on https://")][0]
        host, port = line.rsplit("/", 1)[1].rsplit(":", 1)
        d.host, d.port = host, int(port)
        self.url = "https://%s:%d" % (d.host, d.port)
        return d

    def request(self, d, method, path, body=None, conn=None, cafile=None):
        own = conn is None
        if own:
            conn = http.client.HTTPSConnection(
                d.host, d.port, timeout=10,
                context=ssl.create_default_context(cafile=cafile or self.ca1))
        headers = {"Authorization": "Bearer " + TOKEN}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        payload = r.read()
        if own:
            conn.close()
        return r.status, json.loads(payload) if payload else None

    def test_clients_verify_and_workers_run(self):
        d = self.https_daemon()
        status, doc = self.request(d, "POST", "/api/v1/experiments",
                                   spec(name="over-tls", num_samples=2,
                                        trainable={"type": "command",
                                                   "argv": [sys.executable, "-c",
                                                            "print('@rung {\"loss\": 0.5}')"]}))
        self.assertEqual(status, 201, doc)
        eid = doc["id"]
        env = dict(os.environ, RUNG_TOKEN=TOKEN)
        env.pop("RUNG_CA", None)
        # A real worker over HTTPS runs both trials.
        worker = os.environ.get("RUNG_WORKER")
        if worker:
            p = subprocess.run([worker, "--server", self.url, "--ca", self.ca1, "--once",
                                "--workdir", os.path.join(self.tmp, "w"), "--gpus", "none",
                                "--lease-wait-s", "1"],
                               capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            status, exp = self.request(d, "GET", "/api/v1/experiments/%d" % eid)
            self.assertEqual(exp["counts"]["completed"], 2, exp)
            # The wrong CA: the worker cannot even register (it keeps
            # retrying, as for a rungd that is down, and says why).
            p = subprocess.Popen([worker, "--server", self.url, "--ca", self.ca2, "--once",
                                  "--workdir", os.path.join(self.tmp, "w2"), "--gpus", "none"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env=env)
            time.sleep(3)
            p.kill()
            err = p.communicate(timeout=10)[1]
            self.assertIn("certificate", err.lower())
            status, workers = self.request(d, "GET", "/api/v1/workers")
            self.assertEqual(len(workers["items"]), 1)  # the first worker only
        cli = os.environ.get("RUNG_CLI")
        if cli:
            ok = subprocess.run([cli, "--server", self.url, "--ca", self.ca1, "ls"],
                                capture_output=True, text=True, timeout=30, env=env)
            self.assertEqual(ok.returncode, 0, ok.stderr)
            self.assertIn("over-tls", ok.stdout)
            bad = subprocess.run([cli, "--server", self.url, "ls"], capture_output=True,
                                 text=True, timeout=30, env=dict(env, RUNG_CA=self.ca2))
            self.assertEqual(bad.returncode, 1)
            self.assertIn("certificate", bad.stderr)
            insecure = subprocess.run([cli, "--server", self.url, "--insecure", "ls"],
                                      capture_output=True, text=True, timeout=30, env=env)
            self.assertEqual(insecure.returncode, 0, insecure.stderr)
        sys.path.insert(0, os.path.join(ROOT, "python"))
        from rung.client import Client, RungError, UnreachableError
        self.assertEqual(len(Client(self.url, token=TOKEN, ca=self.ca1).list_experiments()), 1)
        with self.assertRaises(UnreachableError) as cm:
            Client(self.url, token=TOKEN, ca=self.ca2).list_experiments()
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(cm.exception))
        # No token over plain http:// to another machine, refused before
        # connecting; a name is never taken for this machine by its text.
        for url in ("http://10.255.255.1:9", "http://127.example.com:9",
                    "http://10.0.0.1:9?@127.0.0.1"):
            with self.assertRaises(RungError):
                Client(url, token=TOKEN)
        Client("http://127.0.0.2:9", token=TOKEN)  # loopback: allowed
        if cli:
            for url in ("http://10.255.255.1:9", "http://127.example.com:9",
                        "http://10.0.0.1:9?@127.0.0.1"):
                r = subprocess.run([cli, "--server", url, "ls"],
                                   capture_output=True, text=True, timeout=30, env=env)
                self.assertEqual(r.returncode, 2, url)
                self.assertIn("refusing to send the token over plain http://", r.stderr)
        if worker:
            r = subprocess.run([worker, "--server", "http://10.255.255.1:9", "--once"],
                               capture_output=True, text=True, timeout=30, env=env)
            self.assertEqual(r.returncode, 2)
            self.assertIn("refusing to send the token over plain http://", r.stderr)

    def test_sighup_serves_a_new_certificate_to_new_connections(self):
        d = self.https_daemon()
        self.assertEqual(issuer_cn(d.host, d.port, self.ca1), "ca1")
        # A connection opened now, kept alive across the reload.
        old = http.client.HTTPSConnection(d.host, d.port, timeout=10,
                                          context=ssl.create_default_context(cafile=self.ca1))
        self.assertEqual(self.request(d, "GET", "/api/v1/experiments", conn=old)[0], 200)
        shutil.copy(os.path.join(self.pki, "srv2.pem"), self.cert)
        shutil.copy(os.path.join(self.pki, "srv2.key"), self.key)
        d.signal(signal.SIGHUP)
        wait_until(lambda: "certificate" in d.stderr_text() and "reloaded" in d.stderr_text(),
                   10, "the reload logged")
        self.assertEqual(issuer_cn(d.host, d.port, self.ca2), "ca2")
        with self.assertRaises(ssl.SSLError):
            issuer_cn(d.host, d.port, self.ca1)
        # The old connection still has its session and finishes a request.
        self.assertEqual(self.request(d, "GET", "/api/v1/experiments", conn=old)[0], 200)
        old.close()
        # A bad pair on the next SIGHUP keeps the one served.
        shutil.copy(os.path.join(self.pki, "srv1.pem"), self.cert)
        d.signal(signal.SIGHUP)
        wait_until(lambda: "still serving the certificate" in d.stderr_text(), 10,
                   "the refused reload logged")
        self.assertEqual(issuer_cn(d.host, d.port, self.ca2), "ca2")
        self.assertTrue(d.alive())

    def test_session_cookie_is_secure(self):
        d = self.https_daemon()
        conn = http.client.HTTPSConnection(d.host, d.port, timeout=10,
                                           context=ssl.create_default_context(cafile=self.ca1))
        conn.request("POST", "/api/v1/session", headers={"Authorization": "Bearer " + TOKEN})
        r = conn.getresponse()
        r.read()
        conn.close()
        self.assertEqual(r.status, 201)
        cookie = r.getheader("Set-Cookie")
        for part in ("HttpOnly", "SameSite=Strict", "Secure"):
            self.assertIn(part, cookie)

    def test_bad_files_are_refused_at_start(self):
        d = self.daemon("--tls-cert", self.cert, start=False)
        self.assertEqual(d.run_to_exit(), 2)
        self.assertIn("give --tls-cert and --tls-key together", d.stderr_text())
        d = self.daemon("--tls-cert", self.cert, "--tls-key",
                        os.path.join(self.pki, "srv2.key"), start=False)
        self.assertEqual(d.run_to_exit(), 2)
        self.assertIn("is not the key of --tls-cert", d.stderr_text())
        d = self.daemon("--tls-cert", os.path.join(self.pki, "missing.pem"), "--tls-key",
                        self.key, start=False)
        self.assertEqual(d.run_to_exit(), 2)
        self.assertIn("--tls-cert", d.stderr_text())


if __name__ == "__main__":
    main()
