"""Tags and notes, the submitted spec and the timeline (docs/api.md, "Tags
and notes", "GET /api/v1/experiments/{id}/spec", ".../timeline").

One real rungd with users (docs/api.md, "Users, roles and tokens"):

- an experiment submitted with tags and notes shows them, and ?tag= lists
  exactly those that carry the tag; its owner changes them with PATCH,
  another member and a viewer get 403 and change nothing;
- each bad tag or notes (too many, too long, a comma, a control
  character, not a string, twice) is 400 naming the field, at submission
  and in a PATCH, and a PATCH with a bad field changes nothing;
- a trial's PATCH (running and ended), its ?tag= filter, its refusals;
- after a restart every tag and note is read back from the store, those
  of an ended experiment changed after it ended too;
- GET .../spec gives the body as it was posted (same members, same order)
  and the spec with its defaults;
- after a real run of two rung-worker processes, the timeline has one
  item per trial with its worker, start and end as the trial objects say,
  ordered by start, and names both workers;
- `rung ls --tag`, `rung show`, `rung tag` and `rung note` (with
  --trial), and the Python client, round-trip them;
- a database of schema 14 migrates: its experiments and trials get [] and
  "", its specs submitted null, and can be tagged.
"""

import datetime
import glob
import json
import os
import sqlite3
import subprocess
import sys

import rungd_harness as h
import worker_harness as wh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOOT = "bootstrap-token-for-tags-0123456789ab"
E = "/api/v1/experiments"
T = "/api/v1/trials"

# A trainable that reports twice and takes a moment, so that two workers
# share the trials.
TRAIN = """\
import json, os, sys, time
x = json.loads(os.environ["RUNG_CONFIG"])["x"]
for step in (1, 2):
    time.sleep(0.05)
    print("@rung " + json.dumps({"step": step, "loss": (x - 0.3) ** 2 + 1.0 / step}), flush=True)
"""


def ms(rfc3339):
    """Milliseconds since the epoch of one of the API's times."""
    t = datetime.datetime.strptime(rfc3339, "%Y-%m-%dT%H:%M:%S.%fZ")
    return round(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)


def rung_cli():
    path = os.environ.get("RUNG_CLI") or os.path.join(os.path.dirname(h.rungd_path()), "rung")
    if not os.access(path, os.X_OK):
        raise AssertionError("rung binary not found: %s" % path)
    return path


class Tags(wh.WorkerTestCase):
    def setUp(self):
        super().setUp()
        self.d = self.daemon("--token", BOOT)
        self.d.token = BOOT
        self.tok = {}
        for name, role in (("alice", "member"), ("bob", "member"), ("vera", "viewer")):
            doc = self.d.ok("POST", "/api/v1/users", {"name": name, "role": role}, status=201)
            self.tok[name] = doc["token"]

    def as_(self, who, method, path, body=None, **kw):
        return self.d.request(method, path, body=body, token=self.tok[who], **kw)

    def ok_as(self, who, method, path, body=None, status=200):
        r = self.as_(who, method, path, body)
        self.assertEqual(r.status, status, "%s %s: %s" % (method, path, r.text[:500]))
        return r.json

    def submit(self, who="alice", **over):
        over.setdefault("worker_selector", {"pool": "nobody"})  # leased by no one
        return self.ok_as(who, "POST", E, h.spec(**over), status=201)

    def test_tags_notes_owners_and_bad_values(self):
        a = self.submit(name="a", tags=["baseline", "lr sweep", "é"], notes="why\nthis run")
        b = self.submit(name="b", tags=["baseline"])
        c = self.submit(name="c")
        self.assertEqual((a["tags"], a["notes"]), (["baseline", "lr sweep", "é"], "why\nthis run"))
        self.assertEqual((c["tags"], c["notes"]), ([], ""))
        got = self.ok_as("vera", "GET", E + "?tag=baseline")
        self.assertEqual(([x["id"] for x in got["items"]], got["total"]), ([b["id"], a["id"]], 2))
        got = self.ok_as("vera", "GET", E + "?tag=lr%20sweep")
        self.assertEqual([x["id"] for x in got["items"]], [a["id"]])
        self.assertEqual(self.ok_as("vera", "GET", E + "?tag=%C3%A9")["total"], 1)
        self.assertEqual(self.ok_as("vera", "GET", E + "?tag=base")["total"], 0)  # exact
        self.assertError(self.as_("vera", "GET", E + "?tag=a,b"), 400, "invalid_argument", "tag")

        # The owner changes them; another member and a viewer may not.
        ep = "%s/%d" % (E, a["id"])
        got = self.ok_as("alice", "PATCH", ep, {"tags": ["kept"], "notes": "better"})
        self.assertEqual((got["tags"], got["notes"]), (["kept"], "better"))
        for who in ("bob", "vera"):
            r = self.as_(who, "PATCH", ep, {"tags": ["theirs"]})
            self.assertError(r, 403, "forbidden")
        got = self.ok_as("vera", "GET", ep)
        self.assertEqual((got["tags"], got["notes"]), (["kept"], "better"))
        self.assertEqual(self.ok_as("bob", "GET", E + "?tag=kept")["total"], 1)
        self.assertEqual(self.ok_as("bob", "GET", E + "?tag=baseline")["total"], 1)

        # Bad values, named, at submission and in a PATCH; nothing changes.
        bad = [({"tags": ["t%d" % i for i in range(33)]}, "tags"),
               ({"tags": "solo"}, "tags"),
               ({"tags": ["ok", "x" * 65]}, "tags[1]"),
               ({"tags": ["ok", "", "z"]}, "tags[1]"),
               ({"tags": ["a", "b", "c", "d,e"]}, "tags[3]"),
               ({"tags": ["tab\there"]}, "tags[0]"),
               ({"tags": ["a", 7]}, "tags[1]"),
               ({"tags": ["a", "b", "a"]}, "tags[2]"),
               ({"notes": "n" * 65537}, "notes"),
               ({"notes": 3}, "notes"),
               ({"notes": "ok", "tags": ["x", "x"]}, "tags[1]")]
        n_before = self.ok_as("vera", "GET", E)["total"]
        for body, field in bad:
            with self.subTest(body=str(body)[:60]):
                r = self.as_("alice", "POST", E, h.spec(**body))
                self.assertError(r, 400, "invalid_spec", field)
                r = self.as_("alice", "PATCH", ep, body)
                self.assertError(r, 400, "invalid_argument", field)
        # A good field beside a bad one is not kept either.
        r = self.as_("alice", "PATCH", ep, {"notes": "lost", "tags": ["x", "x"], "priority": 4})
        self.assertError(r, 400, "invalid_argument", "tags[1]")
        r = self.as_("alice", "PATCH", ep, {"notes": "lost", "priority": 10 ** 9})
        self.assertError(r, 400, "invalid_argument", "priority")
        got = self.ok_as("vera", "GET", ep)
        self.assertEqual((got["tags"], got["notes"], got["priority"]), (["kept"], "better", 0))
        self.assertEqual(self.ok_as("vera", "GET", E)["total"], n_before)
        # The limits themselves pass: 32 tags of 64 bytes, 65,536 bytes of notes.
        most = ["%02d" % i + "x" * 62 for i in range(32)]
        got = self.ok_as("alice", "PATCH", ep, {"tags": most, "notes": "n" * 65536})
        self.assertEqual((got["tags"], len(got["notes"])), (most, 65536))
        # Each change is an event with the patch as its detail.
        ev = self.ok_as("vera", "GET", "/api/v1/events?kind=experiment.patched")["items"]
        self.assertEqual([e["detail"] for e in ev][:1], [{"tags": ["kept"], "notes": "better"}])
        self.assertEqual({e["actor"]["name"] for e in ev}, {"alice"})

    def test_trials_restart_and_spec(self):
        raw = ('{"search_space": {"x": {"high": 1.0, "type": "uniform", "low": 0.0}}, '
               '"notes": "first", "mode": "min", "metric": "loss", "num_samples": 3, '
               '"tags": ["z", "a"], "name": "keyorder", "trainable": {"type": "external"}, '
               '"priority": 2, "stop": {"time_budget_s": 3600.5}}').encode()
        r = self.d.request("POST", E, raw=raw, token=self.tok["alice"])
        self.assertEqual(r.status, 201, r.text)
        eid = r.json["id"]
        ep = "%s/%d" % (E, eid)
        specs = self.ok_as("vera", "GET", ep + "/spec")
        # The body as posted: the same members, values and order.
        self.assertEqual(json.dumps(specs["submitted"]), json.dumps(json.loads(raw)))
        eff = specs["effective"]
        exp = self.ok_as("vera", "GET", ep)
        for k, v in eff.items():
            self.assertEqual(exp[k], v, k)
        self.assertEqual(eff["searcher"]["type"], "random")
        self.assertEqual((eff["tags"], eff["notes"]), (["z", "a"], "first"))
        self.assertError(self.as_("vera", "GET", E + "/999/spec"), 404, "not_found")

        # A worker over HTTP leases one trial: tag it running, then ended.
        w = h.Worker(self.d, name="w1")
        t1 = w.lease_one()
        tp = "%s/%d" % (T, t1["id"])
        got = self.ok_as("alice", "PATCH", tp, {"tags": ["look"], "notes": "running"})
        self.assertEqual((got["tags"], got["notes"], got["state"]), (["look"], "running",
                                                                   "running"))
        w.report_ok(t1, 1, {"loss": 0.5})
        w.finish_ok(t1)
        got = self.ok_as("alice", "PATCH", tp, {"notes": "ended"})
        self.assertEqual((got["tags"], got["notes"], got["state"]), (["look"], "ended",
                                                                   "completed"))
        others = [x["id"] for x in self.d.all_trials(eid) if x["id"] != t1["id"]]
        self.assertEqual(len(others), 2)
        self.ok_as("alice", "PATCH", "%s/%d" % (T, others[0]), {"tags": ["look", "pending"]})
        for who in ("bob", "vera"):
            self.assertError(self.as_(who, "PATCH", tp, {"tags": []}), 403, "forbidden")
        self.assertError(self.as_("alice", "PATCH", tp, {"tags": ["a"], "state": "failed"}),
                         400, "invalid_argument", "state")
        self.assertError(self.as_("alice", "PATCH", tp, {"tags": ["a,b"]}),
                         400, "invalid_argument", "tags[0]")
        self.assertError(self.as_("alice", "PATCH", "%s/99999" % T, {"tags": []}),
                         404, "not_found")
        got = self.ok_as("vera", "GET", ep + "/trials?tag=look")
        self.assertEqual(sorted(x["id"] for x in got["items"]), sorted([t1["id"], others[0]]))
        self.assertEqual(got["total"], 2)
        got = self.ok_as("vera", "GET", ep + "/trials?tag=look&sort=value")
        self.assertEqual([x["id"] for x in got["items"]], [t1["id"], others[0]])
        got = self.ok_as("vera", "GET", ep + "/trials?tag=look&state=completed")
        self.assertEqual([x["id"] for x in got["items"]], [t1["id"]])
        self.assertEqual(self.ok_as("vera", "GET", ep + "/trials?tag=pending")["total"], 1)
        self.assertError(self.as_("vera", "GET", ep + "/trials?tag=a,b"), 400,
                         "invalid_argument", "tag")

        # An ended experiment (canceled: out of memory) is tagged in place.
        self.ok_as("alice", "POST", ep + "/cancel")
        got = self.ok_as("alice", "PATCH", ep, {"tags": ["done"], "notes": "canceled it"})
        self.assertEqual((got["state"], got["tags"]), ("canceled", ["done"]))
        self.assertError(self.as_("alice", "PATCH", ep, {"num_samples": 9, "tags": ["x"]}),
                         409, "conflict")
        self.assertEqual(self.ok_as("vera", "GET", ep)["tags"], ["done"])
        running = self.submit(name="live", tags=["live"], notes="at submission")
        # Changed in memory (a running experiment, its pending trial): the
        # rows are written with the change.
        self.ok_as("alice", "PATCH", "%s/%d" % (E, running["id"]), {"notes": "in memory"})
        self.d.wait_proposed(running["id"], 1)
        live_trial = self.d.all_trials(running["id"])[0]["id"]
        self.ok_as("alice", "PATCH", "%s/%d" % (T, live_trial), {"tags": ["p"], "notes": "q"})

        # A restart reads every one of them back from the store.
        before = {"exp": self.ok_as("vera", "GET", ep),
                  "live": self.ok_as("vera", "GET", "%s/%d" % (E, running["id"])),
                  "trials": {x["id"]: x for x in self.d.all_trials(eid)},
                  "specs": self.ok_as("vera", "GET", ep + "/spec")}
        self.d.stop()
        self.d.start()
        exp = self.ok_as("vera", "GET", ep)
        self.assertEqual((exp["tags"], exp["notes"]), (["done"], "canceled it"))
        self.assertEqual(exp, before["exp"])
        live = self.ok_as("vera", "GET", "%s/%d" % (E, running["id"]))
        self.assertEqual((live["tags"], live["notes"]), (["live"], "in memory"))
        got = self.ok_as("vera", "GET", "%s/%d" % (T, live_trial))
        self.assertEqual((got["state"], got["tags"], got["notes"]), ("pending", ["p"], "q"))
        trials = {x["id"]: x for x in self.d.all_trials(eid)}
        self.assertEqual({k: (v["tags"], v["notes"]) for k, v in trials.items()},
                         {k: (v["tags"], v["notes"]) for k, v in before["trials"].items()})
        self.assertEqual(trials[t1["id"]]["notes"], "ended")
        self.assertEqual(self.ok_as("vera", "GET", ep + "/spec"), before["specs"])
        self.assertEqual(self.ok_as("vera", "GET", E + "?tag=done")["total"], 1)

    def test_timeline_of_two_real_workers(self):
        # Its own, without a token: the workers need none.
        d = self.daemon(db=os.path.join(self.tmp, "workers.db"))
        script = self.script("train.py", TRAIN)
        exp = d.create_experiment(wh.command_spec([wh.PYTHON, script], num_samples=6))
        eid = exp["id"]
        self.assertEqual(d.ok("GET", "%s/%d/timeline" % (E, eid)),
                         {"items": [], "workers": {}})
        self.worker(d, "alpha", once=True)
        self.worker(d, "beta", once=True)
        d.wait_state(eid, "completed", timeout=15)
        tl = d.ok("GET", "%s/%d/timeline" % (E, eid))
        trials = {t["id"]: t for t in d.all_trials(eid)}
        names = {str(w["id"]): w["name"] for w in d.ok("GET", "/api/v1/workers")["items"]}
        self.assertEqual(len(tl["items"]), 6)
        self.assertEqual(sorted(i[0] for i in tl["items"]), sorted(trials))
        for tid, attempt, worker, started, ended, state in tl["items"]:
            t = trials[tid]
            self.assertEqual((attempt, worker, state), (t["attempt"], t["worker_id"],
                                                        t["state"]))
            self.assertEqual((started, ended), (ms(t["started_at"]), ms(t["ended_at"])))
            self.assertGreaterEqual(ended, started)
        starts = [(i[3], i[0]) for i in tl["items"]]
        self.assertEqual(starts, sorted(starts))
        used = {str(i[2]) for i in tl["items"]}
        self.assertEqual(tl["workers"], {k: names[k] for k in used})
        self.assertEqual(sorted(tl["workers"].values()), ["alpha", "beta"])
        self.assertError(d.request("GET", "%s/999/timeline" % E), 404, "not_found")

    def run_cli(self, *args, token="alice", stdin=None):
        env = dict(os.environ, RUNG_SERVER=self.d.url, RUNG_TOKEN=self.tok[token])
        p = subprocess.run([rung_cli()] + list(args), env=env, input=stdin, text=True,
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0, "rung %s: %s" % (" ".join(args), p.stderr))
        return p.stdout

    def test_cli_and_python_client(self):
        spec_path = os.path.join(self.tmp, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(h.spec(name="cli-one", tags=["from-file"], notes="line one\nline two",
                             worker_selector={"pool": "nobody"}), f)
        out = self.run_cli("submit", spec_path, "-q")
        eid = int(out.strip())
        other = self.submit(name="untagged")
        out = self.run_cli("ls", "--tag", "from-file")
        self.assertIn("cli-one", out)
        self.assertNotIn("untagged", out)
        self.assertIn("from-file", out.splitlines()[1])
        self.assertIn("TAGS", out.splitlines()[0])
        out = self.run_cli("show", str(eid))
        self.assertIn("tags:       from-file", out)
        self.assertIn("notes:      line one\n              line two\n", out)
        out = self.run_cli("tag", str(eid), "+best", "-from-file", "lr sweep")
        self.assertIn("tags best,lr sweep", out)
        self.assertEqual(self.ok_as("vera", "GET", "%s/%d" % (E, eid))["tags"],
                         ["best", "lr sweep"])
        self.run_cli("note", str(eid), "-", stdin="from stdin\n")
        self.assertEqual(self.run_cli("note", str(eid)), "from stdin\n")
        out = self.run_cli("ls")
        row = [line for line in out.splitlines() if "untagged" in line][0]
        self.assertTrue(row.rstrip().endswith(" -"), row)
        # A trial's, with --trial.
        w = h.Worker(self.d, name="w1")
        self.ok_as("alice", "PATCH", "%s/%d" % (E, other["id"]),
                   {"tags": ["x"]})  # leaves the other's trials alone
        s = self.submit(name="leased", worker_selector=None)
        t = w.lease_one()
        self.assertEqual(t["experiment_id"], s["id"])
        self.assertIn("tags good", self.run_cli("tag", "--trial", str(t["id"]), "good"))
        self.run_cli("note", "--trial", str(t["id"]), "a fine trial")
        got = self.ok_as("vera", "GET", "%s/%d" % (T, t["id"]))
        self.assertEqual((got["tags"], got["notes"]), (["good"], "a fine trial"))
        # Refused tags are named, and the exit status says so.
        env = dict(os.environ, RUNG_SERVER=self.d.url, RUNG_TOKEN=self.tok["alice"])
        p = subprocess.run([rung_cli(), "tag", str(eid), "+a,b"], env=env, text=True,
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("tags[2]", p.stderr)

        # The Python command line client has the same verbs.
        env = dict(env, PYTHONPATH=os.path.join(ROOT, "python"), PYTHONDONTWRITEBYTECODE="1")
        py = [sys.executable or "/usr/bin/python3", "-m", "rung"]
        p = subprocess.run(py + ["tag", str(eid), "-best", "+py"], env=env, text=True,
                           capture_output=True, timeout=30)
        self.assertEqual((p.returncode, p.stdout), (0, "experiment %d: tags lr sweep,py\n" % eid),
                         p.stderr)
        p = subprocess.run(py + ["ls", "--tag", "py"], env=env, text=True, capture_output=True,
                           timeout=30)
        self.assertEqual(len(p.stdout.splitlines()), 2, p.stdout + p.stderr)
        self.assertIn("lr sweep,py", p.stdout)

        # The Python client: submit with tags, read, update, filter.
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import rung

        client = rung.Client(server=self.d.url, token=self.tok["alice"])
        exp = rung.Experiment(name="py", param_space={"x": rung.search.uniform(0, 1)},
                              metric="loss", mode="min", trainable={"type": "external"},
                              worker_selector={"pool": "nobody"}, client=client,
                              tags=["py", "client"], notes="from python")
        self.assertEqual(exp.tags, ["py", "client"])
        exp.submit()
        self.assertEqual((exp.tags, exp.notes), (["py", "client"], "from python"))
        exp.update(notes="changed")
        exp.add_tags("more", "py")
        self.assertEqual(exp.remove_tags("client")["tags"], ["py", "more"])
        again = rung.Experiment.attach(exp.id, client=client)
        self.assertEqual((again.tags, again.notes), (["py", "more"], "changed"))
        self.assertEqual([x["id"] for x in client.list_experiments(tag="more")], [exp.id])
        self.assertEqual(exp.submitted_spec()["tags"], ["py", "client"])
        with self.assertRaises(rung.ApiError) as cm:
            exp.update(tags=["ok", "bad,tag"])
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "tags[1]"))
        self.assertEqual(client.patch_trial(t["id"], tags=["py"])["tags"], ["py"])
        self.assertEqual([x["id"] for x in client.list_trials(s["id"], tag="py")], [t["id"]])
        self.assertEqual(client.timeline(s["id"])["items"][0][:3], [t["id"], 1, w.id])


class Migration(h.RungdTestCase):
    def test_schema_14_database(self):
        db = os.path.join(self.tmp, "v14.db")
        con = sqlite3.connect(db)
        scripts = sorted(glob.glob(os.path.join(ROOT, "schema", "*.sql")))
        self.assertTrue(os.path.basename(scripts[13]).startswith("014_"))
        for path in scripts[:14]:
            with open(path) as f:
                con.executescript(f.read())
        con.execute("PRAGMA user_version = 14")
        s = h.spec(name="old", num_samples=2)
        s["searcher"] = {"type": "random", "seed": 5, "grid_order": "ray"}
        con.execute("INSERT INTO experiments (id, name, spec, seed, state, total_trials, "
                    "created_at) VALUES (1, 'old', ?, 5, 'running', 2, 1000)", (json.dumps(s),))
        con.execute("INSERT INTO trials (id, experiment_id, number, state, config, attempt, "
                    "created_at, queue_pos) VALUES (1, 1, 0, 'pending', '{\"x\": 0.5}', 1, "
                    "1000, 0)")
        con.commit()
        con.close()
        d = self.daemon(db=db)
        exp = d.experiment(1)
        self.assertEqual((exp["name"], exp["tags"], exp["notes"]), ("old", [], ""))
        self.assertEqual(d.trial(1)["tags"], [])
        self.assertEqual(d.trial(1)["notes"], "")
        self.assertIsNone(d.ok("GET", "%s/1/spec" % E)["submitted"])
        self.assertEqual(d.ok("PATCH", "%s/1" % E, {"tags": ["old"]})["tags"], ["old"])
        self.assertEqual(d.ok("PATCH", "%s/1" % T, {"notes": "n"})["notes"], "n")
        d.stop()
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], len(scripts))
        self.assertEqual(con.execute("SELECT tags, notes, submitted FROM experiments").fetchall(),
                         [('["old"]', "", None)])
        self.assertEqual(con.execute("SELECT tags, notes FROM trials WHERE id = 1").fetchall(),
                         [("[]", "n")])
        con.close()


if __name__ == "__main__":
    wh.main()
