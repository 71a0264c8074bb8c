"""`python3 -m rung launch slurm|k8s` (cli/launch.c, cli/launch_k8s.c,
cli/slurm.c, cli/k8s.c): start workers as Slurm jobs or Kubernetes Jobs
while trials wait (docs/workers.md, "On Slurm", "On Kubernetes"). The same
passes, plan, job scripts and objects as the C client's, byte for byte
(tests/python/test_launch.py checks them against tests/data/slurm/ and
tests/data/k8s/).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Optional

from ..client import Client
from .commands import EXIT_ERROR, EXIT_OK, EXIT_USAGE, UsageError

Shape = tuple  # (gpus, cpus, nodes) per node


def waiting(experiments: list) -> dict:
    """{shape: trials that wait} (cli/slurm.c, slurm_waiting)."""
    out: dict = {}
    for x in experiments:
        kind = (x.get("trainable") or {}).get("type")
        if x.get("state") != "running" or kind not in ("command", "builtin"):
            continue
        counts = x.get("counts") or {}
        n = counts.get("pending", 0) + counts.get("preempted", 0)
        cap = x.get("max_concurrent_trials") or 0
        if cap > 0:
            n = min(n, max(cap - counts.get("running", 0), 0))
        if n <= 0:
            continue
        r = x.get("resources_per_trial") or {}
        shape = (r.get("gpu", 0), max(r.get("cpu", 1), 1), r.get("nodes", 1))
        out[shape] = out.get(shape, 0) + n
    return out


def job_name(prefix: str, s: Shape) -> str:
    return "%s-g%d-c%d-n%d" % (prefix, s[0], s[1], s[2])


def parse_job_name(prefix: str, name: str) -> Optional[Shape]:
    m = re.fullmatch(re.escape(prefix) + r"-g(0|[1-9]\d*)-c([1-9]\d*)-n([1-9]\d*)", name)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def plan(wait: dict, jobs: dict, max_jobs: int) -> tuple:
    """({shape: jobs to submit}, {shape: queued jobs to cancel}); jobs:
    {shape: (jobs, running)}, in the order they were listed (slurm_plan)."""
    cancel = {}
    in_flight = 0
    for shape, (n, running) in jobs.items():
        in_flight += n
        cancel[shape] = max(n - running - wait.get(shape, 0), 0)
        in_flight -= cancel[shape]
    submit = {}
    for shape, n in wait.items():
        queued = jobs[shape][0] - jobs[shape][1] - cancel[shape] if shape in jobs else 0
        more, room = n - queued, max_jobs - in_flight
        submit[shape] = 0 if more <= 0 or room <= 0 else min(more, room)
        in_flight += submit[shape]
    return submit, cancel


def _quoted(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def slurm_script(shape: Shape, name: str, server: str, worker: str, output_dir: str,
                 exit_idle_s: int, time_limit: Optional[str] = None,
                 partition: Optional[str] = None, account: Optional[str] = None,
                 token_file: Optional[str] = None, extra: tuple = ()) -> str:
    """The sbatch script of a job of shape (slurm_script)."""
    g, c, k = shape
    lines = ["#!/bin/bash",
             "# rung launch slurm: rung-worker for trials of %d GPU(s) and %d CPU(s) per node "
             "on %d node(s) (docs/workers.md, \"On Slurm\")" % (g, c, k),
             "#SBATCH --job-name=" + name, "#SBATCH --nodes=%d" % k,
             "#SBATCH --ntasks-per-node=1", "#SBATCH --cpus-per-task=%d" % c]
    if g > 0:
        lines.append("#SBATCH --gres=gpu:%d" % g)
    for flag, value in (("time", time_limit), ("partition", partition), ("account", account)):
        if value is not None:
            lines.append("#SBATCH --%s=%s" % (flag, value))
    lines += ["#SBATCH --chdir=" + output_dir, "#SBATCH --output=%x-%j.out"]
    lines += ["#SBATCH " + e for e in extra]
    lines += ["set -eu", "export RUNG_SERVER=" + _quoted(server)]
    run = ("exec srun --kill-on-bad-exit=0 " if k > 1 else "exec ") + _quoted(worker)
    run += ' --exit-idle-s %d --label slurm_job="$SLURM_JOB_ID"' % exit_idle_s
    if token_file is not None:
        run += " --token-file " + _quoted(token_file)
    return "\n".join(lines + [run]) + "\n"


def k8s_objects(shape: Shape, name: str, namespace: str, image: str, server: str, prefix: str,
                exit_idle_s: int, grace_s: int, token_secret: Optional[str] = None) -> dict:
    """The v1 List of a Job (and a gang's headless Service) (k8s_objects)."""
    g, c, k = shape
    labels = {"app.kubernetes.io/name": "rung-worker",
              "app.kubernetes.io/managed-by": "rung-launch", "rung.dev/launcher": prefix,
              "rung.dev/shape": "g%d-c%d-n%d" % shape}
    args = ["--exit-idle-s", str(exit_idle_s), "--on-sigterm", "give-back", "--cpu-slots",
            str(c), "--gpus", "auto" if g > 0 else "none", "--label", "k8s_job=$(RUNG_K8S_JOB)"]
    env: list = [{"name": "RUNG_SERVER", "value": server},
                 {"name": "RUNG_K8S_JOB", "value": name}]
    if token_secret is not None:
        env.append({"name": "RUNG_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": token_secret, "key": "token"}}})
    if k > 1:
        env.append({"name": "RUNG_NODE_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
        args += ["--advertise-addr", "%s-$(RUNG_NODE_INDEX).%s" % (name, name),
                 "--gang-ports", "29500"]
    res = {"cpu": str(c)}
    if g > 0:
        res["nvidia.com/gpu"] = str(g)
    container = {"name": "rung-worker", "image": image, "command": ["rung-worker"],
                 "args": args, "env": env, "resources": {"limits": res, "requests": dict(res)},
                 "workingDir": "/tmp"}
    pod = {"restartPolicy": "Never", "terminationGracePeriodSeconds": grace_s,
           "containers": [container]}
    spec = {"backoffLimit": 0, "ttlSecondsAfterFinished": 600,
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod}}
    items = []
    if k > 1:
        spec.update(completionMode="Indexed", completions=k, parallelism=k)
        pod["subdomain"] = name
        items.append({"apiVersion": "v1", "kind": "Service",
                      "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                      "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                               "selector": {"job-name": name},
                               "ports": [{"name": "gang", "port": 29500}]}})
    items.append({"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                  "spec": spec})
    return {"apiVersion": "v1", "kind": "List", "items": items}


def k8s_text(objects: dict) -> str:
    return json.dumps(objects, indent=2, sort_keys=True, ensure_ascii=False)


def _run(argv: list, data: Optional[str] = None) -> tuple:
    try:
        r = subprocess.run(argv, input=data, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, "", str(e)
    return r.returncode, r.stdout, r.stderr


class _Launcher:
    def __init__(self, args: argparse.Namespace, server: str) -> None:
        self.a, self.server, self.count = args, server, 0

    def list_jobs(self) -> Optional[tuple]:
        """({shape: (jobs, running)}, {shape: [queued ids, oldest first]})."""
        jobs: dict = {}
        queued: dict = {}
        if self.a.launcher == "k8s":
            rc, out, _ = _run(["kubectl", "get", "jobs", "-n", self.a.namespace, "-l",
                               "rung.dev/launcher=" + self.a.name, "-o", "json"])
            try:
                items = json.loads(out)["items"] if rc == 0 else None
            except (ValueError, KeyError):
                items = None
            if items is None:
                print("rung launch: kubectl get jobs failed (exit status %d)" % rc,
                      file=sys.stderr)
                return None
            for j in items:
                meta, status = j.get("metadata") or {}, j.get("status") or {}
                shape = parse_job_name(self.a.name, "%s-%s" % (
                    self.a.name, (meta.get("labels") or {}).get("rung.dev/shape", "")))
                if not status.get("active") or not meta.get("name") or shape is None:
                    continue
                n, running = jobs.get(shape, (0, 0))
                ready = status.get("ready")
                if not isinstance(ready, int) or ready > 0:
                    jobs[shape] = (n + 1, running + 1)
                else:
                    jobs[shape] = (n + 1, running)
                    queued.setdefault(shape, []).append(meta["name"])
            return jobs, queued
        rc, out, _ = _run(["squeue", "--me", "-h", "-o", "%i|%j|%T"])
        if rc != 0:
            print("rung launch: squeue failed (exit status %d)" % rc, file=sys.stderr)
            return None
        for line in out.splitlines():
            parts = line.split("|")
            shape = parse_job_name(self.a.name, parts[1]) if len(parts) == 3 else None
            if shape is None:
                continue
            n, running = jobs.get(shape, (0, 0))
            if parts[2] == "PENDING":
                jobs[shape] = (n + 1, running)
                queued.setdefault(shape, []).append(parts[0])
            else:
                jobs[shape] = (n + 1, running + 1)
        return jobs, queued

    def submit(self, shape: Shape, n: int) -> bool:
        a = self.a
        if a.launcher == "k8s":
            self.count += 1
            name = "%s-%d-%d" % (job_name(a.name, shape), int(time.time()), self.count)
            text = k8s_text(k8s_objects(shape, name, a.namespace, a.image, self.server,
                                        a.name, a.exit_idle_s, a.grace_s, a.token_secret))
            if a.dry_run:
                print(text)
                return True
            rc, out, err = _run(["kubectl", "create", "-f", "-"], text)
            if rc != 0:
                print("rung launch: kubectl create failed (exit status %d): %s" % (rc, out + err),
                      file=sys.stderr)
                return False
            print("created Job %s for %d waiting trial(s)" % (name, n), flush=True)
            return True
        name = job_name(a.name, shape)
        script = slurm_script(shape, name, self.server, a.worker, a.dir, a.exit_idle_s, a.time,
                              a.partition, a.account, a.worker_token_file,
                              tuple(a.sbatch_arg or ()))
        if a.dry_run:
            print(script, end="")
            return True
        rc, out, err = _run(["sbatch", "--parsable"], script)
        if rc != 0 or not out.strip().split(";")[0].isdigit():
            print("rung launch: sbatch failed (exit status %d): %s" % (rc, out + err),
                  file=sys.stderr)
            return False
        print("submitted job %s (%s) for %d waiting trial(s)" % (out.strip().split(";")[0],
                                                                 name, n), flush=True)
        return True

    def cancel(self, job: str) -> bool:
        if self.a.launcher == "k8s":
            argv = ["kubectl", "delete", "job", "-n", self.a.namespace, job, "--wait=false"]
        else:
            argv = ["scancel", job]
        return _run(argv)[0] == 0

    def one_pass(self, client: Client, prev: dict) -> Optional[dict]:
        doc = client.request("GET", "/api/v1/experiments?limit=1000")
        now = waiting(doc.get("items") or [])
        wait = {s: min(n, n if self.a.once else prev.get(s, 0)) for s, n in now.items()}
        listed = ({}, {}) if self.a.dry_run else self.list_jobs()
        if listed is None:
            return None
        jobs, queued = listed
        submit, cancel = plan(wait, jobs, self.a.max_jobs)
        for shape, k in cancel.items():
            for job in list(reversed(queued.get(shape, [])))[:k]:
                if self.cancel(job):
                    print("cancelled queued job %s: no trial waits for it" % job)
        for shape, k in submit.items():
            for _ in range(k):
                if not self.submit(shape, wait[shape]):
                    return None
        sys.stdout.flush()
        return now


def cmd_launch(client: Client, args: argparse.Namespace) -> int:
    a = args
    if not re.fullmatch(r"[a-z][a-z0-9-]{0,31}", a.name):
        raise UsageError("--name is %r: up to 32 lower-case letters, digits and '-', from a "
                         "letter" % a.name)
    if a.launcher == "k8s":
        if a.image is None:
            raise UsageError("launch k8s: give --image, one with rung-worker on its PATH")
    else:
        for flag in ("partition", "account", "time", "dir"):
            v = getattr(a, flag)
            if v is not None and (v == "" or re.search(r"\s", v)):
                raise UsageError("--%s is %r: one word" % (flag, v))
        if a.dir is None:
            a.dir = os.path.join(os.path.expanduser("~"), "rung-slurm")
        if not a.dir.startswith("/"):
            raise UsageError("--dir is %r: an absolute path (the nodes see it)" % a.dir)
        if a.time is None:
            a.time = "01:00:00"
        if a.worker is None:
            a.worker = shutil.which("rung-worker") or "rung-worker"
        if not a.dry_run:
            os.makedirs(a.dir, exist_ok=True)
    launcher = _Launcher(a, ",".join(client.servers))
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    prev: dict = {}
    while True:
        now = launcher.one_pass(client, prev)
        if a.once or a.dry_run:
            return EXIT_OK if now is not None else EXIT_ERROR
        prev = now if now is not None else prev
        t_end = time.monotonic() + a.interval_s
        while not stop and time.monotonic() < t_end:
            time.sleep(0.1)
        if stop:
            print("stopping: the jobs submitted run on, and end once idle")
            return EXIT_OK
