"""Who may do what (docs/api.md, "Users, roles and tokens"): every route of
server/api_routes.c, called by every kind of caller, answers as the table
"Roles per route" says.

The table in docs/api.md is read, and must name exactly the routes of the
route table with the same rule as each entry's last member (a new route
without a row fails here). Then one real rungd with its own token, users of
each role, two pools of worker tokens, an expired and a revoked token:

- a caller the rule refuses gets 403 whose message names the rule
  ("rule ...");
- a caller it lets in gets the handler's own answer (200, 201, 204, 400,
  404, 409, ...: never 401, and never a 403 naming a rule);
- no token, a malformed header, an expired or a revoked token get 401
  (but /metrics, which is public).

Also: unknown tokens from one address are slowed (429 with Retry-After),
revoked and removed users' tokens stop at once, a worker token bound to a
pool registers only that pool's workers, and the upgrade from a database
of the schema before users keeps its experiments (owner null, steered by
admins only).
"""

import os
import re
import sqlite3
import time

from rungd_harness import RungdTestCase, main, spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROUTES_C = os.path.join(ROOT, "server", "api_routes.c")
API_MD = os.path.join(ROOT, "docs", "api.md")
BOOT = "bootstrap-token-for-authz-0123456789"

ACCESS_NAMES = {
    "ACCESS_PUBLIC": "public", "ACCESS_READ": "read", "ACCESS_READ_WORKER": "read-or-worker",
    "ACCESS_SUBMIT": "submit", "ACCESS_STEER_EXP": "owner-or-admin",
    "ACCESS_STEER_TRIAL": "owner-or-admin", "ACCESS_WORKER": "worker",
    "ACCESS_WORKER_ID": "own-worker", "ACCESS_WORKER_TRIAL": "own-worker",
    "ACCESS_ADMIN": "admin", "ACCESS_SELF": "self",
}

# Who each rule lets in, by caller (docs/api.md, "Roles per route").
# "member" is the owner of the experiment (or of the worker's trial);
# "other" another member; "worker" the pool whose worker holds the trial
# and registered the worker; "worker_b" the other pool.
ALLOWED = {
    "public": {"admin", "member", "other", "viewer", "worker", "worker_b", "expired",
               "revoked", "none", "malformed"},
    "read": {"admin", "member", "other", "viewer"},
    "read-or-worker": {"admin", "member", "other", "viewer", "worker", "worker_b"},
    "submit": {"admin", "member", "other"},
    "owner-or-admin": {"admin", "member"},
    "worker": {"admin", "worker", "worker_b"},
    "own-worker": {"admin", "worker"},
    "admin": {"admin"},
    "self": {"admin", "member", "other", "viewer", "worker", "worker_b"},
}
UNAUTHENTICATED = {"expired", "revoked", "none", "malformed"}
# Registering a worker of pool a: the rule lets both pools' tokens in, and
# the pool binding (its own rule, "rule pool") refuses pool b's.
REFUSED_BY_BODY = {("POST", "/api/v1/workers"): {"worker_b"}}
CALLERS = ["none", "malformed", "expired", "revoked", "viewer", "other", "worker_b", "worker",
           "member", "admin"]


def route_table():
    """[(method, path, rule)] of server/api_routes.c."""
    with open(ROUTES_C, encoding="utf-8") as f:
        text = f.read()
    body = text[text.index("api_routes[] = {"):]
    body = body[:body.index("};")]
    entries = re.findall(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,[^{}]*?,\s*(ACCESS_[A-Z_]+)\s*\}',
                         body)
    return [(m, p, ACCESS_NAMES[a]) for m, p, a in entries]


def doc_table():
    """{(method, path): rule} of docs/api.md's "Roles per route" table."""
    with open(API_MD, encoding="utf-8") as f:
        text = f.read()
    part = text[text.index("### Roles per route"):]
    part = part[:part.index("\n### ", 5)]
    rows = re.findall(r"^\| `([A-Z]+) (/[^`]*)` \| ([a-z-]+) \|", part, re.M)
    return {(m, p): r for m, p, r in rows}


class RouteTableMatchesDoc(RungdTestCase):
    def test_every_route_has_a_documented_rule(self):
        table = route_table()
        self.assertGreaterEqual(len(table), 36)
        doc = doc_table()
        for method, path, rule in table:
            self.assertIn((method, path), doc,
                          "%s %s has no row in docs/api.md's Roles per route" % (method, path))
            self.assertEqual(doc[(method, path)], rule, "%s %s" % (method, path))
        self.assertEqual(set(doc), {(m, p) for m, p, _ in table},
                         "docs/api.md lists routes the table lacks")


class Matrix(RungdTestCase):
    def setUp(self):
        super().setUp()
        self.d = self.daemon("--token", BOOT, "--lease-s", "60")
        self.d.token = BOOT

    def add_user(self, name, role, **extra):
        body = {"name": name, "role": role}
        body.update(extra)
        doc = self.d.ok("POST", "/api/v1/users", body, status=201)
        self.assertTrue(doc["token"].startswith("rung_") and len(doc["token"]) == 48, doc)
        return doc

    def as_(self, token, method, path, body=None, **kw):
        headers = None
        if token == "malformed":
            headers, token = {"Authorization": "Basic dXNlcjpwYXNz"}, None
        return self.d.request(method, path, body=body, token=token, headers=headers, **kw)

    def setup_world(self):
        d = self.d
        tok = {"admin": self.add_user("root2", "admin")["token"],
               "member": self.add_user("alice", "member")["token"],
               "other": self.add_user("bob", "member")["token"],
               "viewer": self.add_user("vera", "viewer")["token"],
               "worker": self.add_user("pool-a", "worker", labels={"pool": "a"})["token"],
               "worker_b": self.add_user("pool-b", "worker", labels={"pool": "b"})["token"],
               "none": None, "malformed": "malformed"}
        # A revoked token, and one that expired (its expiry moved into the
        # past while rungd is stopped: no request can make one).
        gone = self.add_user("gone", "member")
        d.ok("DELETE", "/api/v1/tokens/%d" % gone["token_id"])
        tok["revoked"] = gone["token"]
        old = self.add_user("old", "member", expires_in_days=1)
        tok["expired"] = old["token"]
        d.stop()
        con = sqlite3.connect(d.db)
        con.execute("UPDATE tokens SET expires_at = 1000 WHERE id = ?", (old["token_id"],))
        con.commit()
        con.close()
        d.start()
        self.tok = tok
        # pool-a's worker holds a trial of alice's experiment; pool-b has a
        # worker of its own. No other worker may take alice's trials.
        wa = self.as_(tok["worker"], "POST", "/api/v1/workers",
                      {"name": "wa", "labels": {"pool": "a"}})
        self.assertEqual(wa.status, 201, wa.text)
        self.wa = wa.json["worker_id"]
        wb = self.as_(tok["worker_b"], "POST", "/api/v1/workers",
                      {"name": "wb", "labels": {"pool": "b"}})
        self.assertEqual(wb.status, 201, wb.text)
        self.wb = wb.json["worker_id"]
        r = self.as_(tok["member"], "POST", "/api/v1/experiments",
                     spec(name="held", num_samples=2, worker_selector={"pool": "a"}))
        self.assertEqual(r.status, 201, r.text)
        self.held_exp = r.json["id"]
        self.assertEqual(r.json["owner"], "alice")
        deadline = time.monotonic() + 10
        while True:
            r = self.as_(tok["worker"], "POST", "/api/v1/workers/%d/lease" % self.wa,
                         {"cpus": 1, "gpus": [], "wait_s": 2})
            if r.status == 200:
                break
            self.assertLess(time.monotonic(), deadline, "no trial leased: %s" % r.text)
        self.trial = r.json["trial"]["id"]
        # Every other experiment is alice's and leased by nobody.
        self.assertEqual(self.as_(tok["member"], "POST", "/api/v1/experiments/%d/pause"
                                  % self.held_exp).status, 200)

    def fresh_experiment(self):
        r = self.as_(self.tok["member"], "POST", "/api/v1/experiments",
                     spec(name="steer", worker_selector={"pool": "nobody"}))
        self.assertEqual(r.status, 201, r.text)
        return r.json["id"]

    def request_for(self, method, path, caller):
        """(path, body, headers) of a call of this route for this caller."""
        exp = self.held_exp
        if "/experiments/{id}" in path and method != "GET":
            exp = self.fresh_experiment()  # steering one must not disturb the others
        body, headers = None, None
        p = path.replace("{sha256}", "ab" * 32)
        if p.startswith("/api/v1/experiments/{id}"):
            p = p.replace("{id}", str(exp))
        elif p.startswith("/api/v1/trials/{id}"):
            p = p.replace("{id}", str(self.trial))
        elif p.startswith("/api/v1/workers/{id}"):
            p = p.replace("{id}", str(self.wa))
        elif p == "/api/v1/users/{id}":
            victim = self.d.ok("POST", "/api/v1/users",
                               {"name": "victim-%s" % caller, "role": "viewer"}, status=201)
            p = p.replace("{id}", str(victim["id"]))
        elif p == "/api/v1/tokens/{id}":
            victim = self.d.ok("POST", "/api/v1/users",
                               {"name": "tokvictim-%s" % caller, "role": "viewer"}, status=201)
            p = p.replace("{id}", str(victim["token_id"]))
        if (method, path) == ("POST", "/api/v1/experiments"):
            body = spec(name="by-" + caller, worker_selector={"pool": "nobody"})
        elif (method, path) == ("PATCH", "/api/v1/experiments/{id}"):
            body = {"priority": 3}
        elif path.endswith("/report"):
            body = {"lease_token": "0" * 32, "step": 1, "metrics": {"loss": 1.0}}
        elif path.endswith("/finish"):
            body = {"lease_token": "0" * 32, "status": "completed"}
        elif path.endswith("/lease"):
            body = {"cpus": 1, "gpus": [], "wait_s": 0}
        elif path.endswith("/heartbeat"):
            body = {"trials": [self.trial]}
        elif (method, path) == ("POST", "/api/v1/workers"):
            body = {"name": "again", "labels": {"pool": "a"}}
        elif (method, path) == ("POST", "/api/v1/users"):
            body = {"name": "new-" + caller, "role": "viewer"}
        elif (method, path) == ("POST", "/api/v1/tokens"):
            body = {"name": "extra"}
        elif method == "PUT":
            headers = {"Content-Type": "application/octet-stream"}
        return p, body, headers

    def test_every_route_by_every_caller(self):
        self.setup_world()
        table = route_table()
        bypasses, wrong = [], []
        checked = 0
        for method, path, rule in table:
            for caller in CALLERS:
                p, body, headers = self.request_for(method, path, caller)
                tok = self.tok[caller]
                if caller == "malformed":
                    r = self.as_("malformed", method, p, body)
                elif method == "PUT":
                    r = self.d.request(method, p, raw=b"", token=tok, headers=headers)
                else:
                    r = self.d.request(method, p, body=body, token=tok, headers=headers)
                checked += 1
                message = ((r.json or {}).get("error") or {}).get("message", "") \
                    if isinstance(r.json, dict) else ""
                refused_by_rule = r.status == 403 and message.startswith("rule ")
                where = "%s %s as %s -> %d %s" % (method, path, caller, r.status, r.text[:160])
                if caller in UNAUTHENTICATED and rule != "public":
                    if r.status != 401:
                        (bypasses if r.status < 400 else wrong).append(where)
                elif caller in ALLOWED[rule] - REFUSED_BY_BODY.get((method, path), set()):
                    if r.status == 401 or refused_by_rule:
                        wrong.append(where)
                else:
                    if not refused_by_rule:
                        (bypasses if r.status < 400 else wrong).append(where)
        self.assertEqual(bypasses, [], "calls that got through where the rule refuses them")
        self.assertEqual(wrong, [], "calls answered otherwise than docs/api.md says")
        self.assertGreaterEqual(checked, 36 * len(CALLERS))
        print("authz matrix: %d routes x %d callers = %d calls, 0 bypasses"
              % (len(table), len(CALLERS), checked))


class Tokens(RungdTestCase):
    def setUp(self):
        super().setUp()
        self.d = self.daemon("--token", BOOT)
        self.d.token = BOOT

    def test_unknown_tokens_are_slowed_and_revocation_is_immediate(self):
        d = self.d
        alice = d.ok("POST", "/api/v1/users", {"name": "alice", "role": "member"}, status=201)
        t = alice["token"]
        self.assertEqual(d.ok("GET", "/api/v1/whoami", token=t)["name"], "alice")
        # A token appears nowhere but in the reply that made it.
        listed = d.ok("GET", "/api/v1/tokens?all=true")
        self.assertNotIn(t, str(listed))
        # Revoked: refused at once.
        d.ok("DELETE", "/api/v1/tokens/%d" % alice["token_id"], token=t)
        r = d.request("GET", "/api/v1/experiments", token=t)
        self.assertEqual((r.status, r.json["error"]["message"]), (401, "this token was revoked"))
        # Five unknown tokens are answered 401; the next ones wait.
        codes = [d.request("GET", "/api/v1/experiments", token="rung_guess%d" % i).status
                 for i in range(7)]
        self.assertEqual(codes[:5], [401] * 5)
        self.assertEqual(codes[5:], [429, 429])
        r = d.request("GET", "/api/v1/experiments", token=BOOT)
        self.assertEqual(r.status, 429)
        self.assertGreaterEqual(int(r.headers["retry-after"]), 1)
        time.sleep(int(r.headers["retry-after"]) + 0.2)
        self.assertEqual(d.request("GET", "/api/v1/experiments", token=BOOT).status, 200)
        with open(d.log_path, encoding="utf-8", errors="replace") as f:
            log = f.read()
        self.assertNotIn(t, log)
        self.assertNotIn(BOOT, log)

    def test_removed_user_and_pools(self):
        d = self.d
        w = d.ok("POST", "/api/v1/users", {"name": "pool-x", "role": "worker",
                                           "labels": {"pool": "x"}}, status=201)
        r = d.request("POST", "/api/v1/workers", {"name": "w", "labels": {"pool": "y"}},
                      token=w["token"])
        self.assertEqual(r.status, 403)
        self.assertIn("bound to pool=x", r.json["error"]["message"])
        self.assertEqual(d.request("POST", "/api/v1/workers", {"name": "w"},
                                   token=w["token"]).status, 403)
        self.assertEqual(d.request("POST", "/api/v1/workers", {"name": "w",
                                   "labels": {"pool": "x", "gpu": "a100"}},
                                   token=w["token"]).status, 201)
        # A worker token reads nothing.
        self.assertEqual(d.request("GET", "/api/v1/experiments", token=w["token"]).status, 403)
        d.ok("DELETE", "/api/v1/users/%d" % w["id"])
        r = d.request("POST", "/api/v1/workers", {"name": "w"}, token=w["token"])
        self.assertEqual(r.status, 401)
        # Names are never reused; bad fields are named.
        r = d.request("POST", "/api/v1/users", {"name": "pool-x", "role": "viewer"})
        self.assertEqual((r.status, r.json["error"]["field"]), (409, "name"))
        r = d.request("POST", "/api/v1/users", {"name": "z", "role": "boss"})
        self.assertEqual((r.status, r.json["error"]["field"]), (400, "role"))
        r = d.request("POST", "/api/v1/users", {"name": "a b", "role": "viewer"})
        self.assertEqual((r.status, r.json["error"]["field"]), (400, "name"))
        r = d.request("POST", "/api/v1/users", {"name": "v", "role": "viewer",
                                                "labels": {"pool": "x"}})
        self.assertEqual((r.status, r.json["error"]["field"]), (400, "labels"))
        r = d.request("POST", "/api/v1/tokens", {"name": "x"})
        self.assertEqual(r.status, 409)  # rungd's own token belongs to no user


class Clients(RungdTestCase):
    """The C client, the Python client and its command line say the same."""

    def test_users_tokens_events_from_every_client(self):
        import subprocess
        import sys
        sys.path.insert(0, os.path.join(ROOT, "python"))
        from rung.client import ApiError, Client
        d = self.daemon("--token", BOOT)
        d.token = BOOT
        cli = os.environ.get("RUNG_CLI")
        if not cli:
            self.skipTest("RUNG_CLI not set")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
                   PYTHONDONTWRITEBYTECODE="1")
        env.pop("RUNG_TOKEN", None)

        def c_rung(*args, token=BOOT):
            return subprocess.run([cli, "--server", d.url, "--token", token, *args],
                                  capture_output=True, text=True, timeout=30, env=env)

        def py_rung(*args, token=BOOT):
            return subprocess.run([sys.executable, "-m", "rung", "--server", d.url, "--token",
                                   token, *args], capture_output=True, text=True, timeout=30,
                                  env=env)

        # A token from a file, as from --token (not shown by ps).
        tok_file = os.path.join(self.tmp, "boot.token")
        with open(tok_file, "w") as f:
            f.write(BOOT + "\n")
        os.chmod(tok_file, 0o600)
        for run in (c_rung, py_rung):
            r = run("admin", "user", "list", token="unused")
            self.assertEqual(r.returncode, 1)  # an unknown token
        for cmd in ([cli], [sys.executable, "-m", "rung"]):
            r = subprocess.run(cmd + ["--server", d.url, "--token-file", tok_file, "admin", "user",
                                      "list"], capture_output=True, text=True, timeout=30,
                               env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
        out = c_rung("admin", "user", "add", "carol", "--role", "member")
        self.assertEqual(out.returncode, 0, out.stderr)
        carol = out.stdout.splitlines()[-1]
        self.assertRegex(carol, r"^rung_[A-Za-z0-9_-]{43}$")
        out = py_rung("admin", "user", "add", "dan", "--role", "viewer", "--expires-days", "7")
        self.assertEqual(out.returncode, 0, out.stderr)
        dan = out.stdout.splitlines()[-1]
        self.assertRegex(dan, r"^rung_[A-Za-z0-9_-]{43}$")
        self.assertIn(", expires ", out.stdout)
        # The Python client as carol: her own tokens, and a viewer's refusal.
        c = Client(server=d.url, token=carol)
        self.assertEqual(c.whoami()["role"], "member")
        extra = c.create_token("ci", expires_in_days=30)
        self.assertEqual([t["name"] for t in c.list_tokens()], ["first", "ci"])
        c.revoke_token(extra["token_id"])
        with self.assertRaises(ApiError) as cm:
            Client(server=d.url, token=extra["token"]).list_experiments()
        self.assertEqual(cm.exception.status, 401)
        with self.assertRaises(ApiError) as cm:
            Client(server=d.url, token=dan).create_user("eve", "admin")
        self.assertEqual(cm.exception.status, 403)
        self.assertEqual(c_rung("admin", "user", "list", token=dan).returncode, 1)
        self.assertEqual(py_rung("admin", "user", "list", token=dan).returncode, 1)
        # Both command lines print the same users and the same events.
        self.assertEqual(c_rung("admin", "user", "list").stdout,
                         py_rung("admin", "user", "list").stdout)
        c_events, py_events = c_rung("events"), py_rung("events")
        self.assertEqual(c_events.returncode, 0, c_events.stderr)
        self.assertEqual(c_events.stdout, py_events.stdout)
        self.assertIn("carol token.revoked", c_events.stdout)
        self.assertEqual(len(list(Client(server=d.url, token=BOOT).iter_events())),
                         len(c_events.stdout.splitlines()))
        for text in (c_events.stdout, py_events.stdout):
            self.assertNotIn(carol, text)


class Sessions(RungdTestCase):
    """The dashboard's cookie sessions (docs/api.md, "Sessions")."""

    def test_cookie_csrf_revocation_logout(self):
        d = self.daemon("--token", BOOT)
        d.token = BOOT
        bob = d.ok("POST", "/api/v1/users", {"name": "bob", "role": "member"}, status=201)
        r = d.request("POST", "/api/v1/session", token=bob["token"])
        self.assertEqual(r.status, 201, r.text)
        cookie = r.headers["set-cookie"]
        for part in ("HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"):
            self.assertIn(part, cookie)
        self.assertNotIn("Secure", cookie)  # plain HTTP here; test_tls checks Secure
        sid = cookie.split(";")[0]
        csrf = r.json["csrf"]
        self.assertEqual((r.json["name"], r.json["role"]), ("bob", "member"))

        def as_session(method, path, body=None, csrf_header=None):
            headers = {"Cookie": sid}
            if csrf_header:
                headers["X-CSRF-Token"] = csrf_header
            return d.request(method, path, body=body, token=None, headers=headers)

        self.assertEqual(as_session("GET", "/api/v1/whoami").json["name"], "bob")
        self.assertEqual(as_session("GET", "/api/v1/session").json["csrf"], csrf)
        # A change without the csrf token, or with another, is refused.
        for header in (None, "rung_" + "x" * 43):
            r = as_session("POST", "/api/v1/experiments", spec(name="s"), csrf_header=header)
            self.assertEqual(r.status, 403, r.text)
            self.assertEqual(r.json["error"]["field"], "X-CSRF-Token")
        r = as_session("POST", "/api/v1/experiments", spec(name="s"), csrf_header=csrf)
        self.assertEqual(r.status, 201, r.text)
        self.assertEqual(r.json["owner"], "bob")
        # The session's rules are its user's.
        r = as_session("GET", "/api/v1/users", csrf_header=csrf)
        self.assertEqual(r.status, 403)
        # Revoking the token ends its sessions at once.
        d.ok("DELETE", "/api/v1/tokens/%d" % bob["token_id"])
        r = as_session("GET", "/api/v1/experiments")
        self.assertEqual(r.status, 401)
        # Logout: the cookie is cleared and the session is gone.
        r = d.request("POST", "/api/v1/session")
        sid = r.headers["set-cookie"].split(";")[0]
        r = as_session("DELETE", "/api/v1/session", csrf_header=r.json["csrf"])
        self.assertEqual(r.status, 200, r.text)
        self.assertIn("Max-Age=0", r.headers["set-cookie"])
        self.assertEqual(as_session("GET", "/api/v1/experiments").status, 401)
        kinds = [e["kind"] for e in d.ok("GET", "/api/v1/events?kind=session")["items"]]
        self.assertEqual(kinds, ["session.started", "session.started", "session.ended"])


UPGRADE_DIR = os.path.join(ROOT, "tests", "data", "upgrade")


class Upgrade(RungdTestCase):
    def test_database_from_before_users(self):
        """The earliest release's database (tests/data/upgrade, schema 9)
        opens with rungd's own token as before; its experiments have no
        owner, so a member may read but not steer them, and an admin may."""
        db = os.path.join(self.tmp, "old.db")
        con = sqlite3.connect(db)
        with open(os.path.join(UPGRADE_DIR, "schema-9.sql")) as f:
            con.executescript(f.read())
        con.close()
        d = self.daemon("--token", BOOT, db=db)
        d.token = BOOT
        items = d.ok("GET", "/api/v1/experiments")["items"]
        self.assertGreater(len(items), 0)
        self.assertTrue(all(e["owner"] is None for e in items), items)
        running = [e for e in items if e["state"] in ("running", "paused")]
        self.assertGreater(len(running), 0)
        eid = running[0]["id"]
        alice = d.ok("POST", "/api/v1/users", {"name": "alice", "role": "member"}, status=201)
        self.assertEqual(d.request("GET", "/api/v1/experiments/%d" % eid,
                                   token=alice["token"]).status, 200)
        r = d.request("POST", "/api/v1/experiments/%d/cancel" % eid, token=alice["token"])
        self.assertEqual(r.status, 403)
        self.assertEqual(d.request("POST", "/api/v1/experiments/%d/cancel" % eid).status, 200)
        kinds = [e["kind"] for e in d.ok("GET", "/api/v1/events")["items"]]
        self.assertIn("experiment.canceled", kinds)


if __name__ == "__main__":
    main()
