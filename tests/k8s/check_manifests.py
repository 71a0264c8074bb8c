"""Checks of the Kubernetes objects Rung ships and makes, without a cluster
(packaging/k8s/README.md): packaging/k8s/*.yaml and `rung launch k8s`'s
objects for three shapes (tests/data/k8s/*.json, which test_slurm keeps
equal to what cli/k8s.c makes).

What a cluster's API server would refuse, or what would run but not work:
every selector matches its pod template's labels; Services select pods
that exist; each Secret referred to is one packaging/k8s/README.md tells
to create; a StatefulSet names a Service of the file; rungd listening
beyond loopback has a token; workers give trials back on SIGTERM; GPU
requests equal their limits; a gang is an Indexed Job with completions =
parallelism = its nodes, a subdomain that is its headless Service, and
workers that advertise <job>-<index>.<service>; object names are DNS
labels. Exit status 0 when all hold, else 1 with each failure.

Run: /usr/bin/python3 tests/k8s/check_manifests.py
"""

import glob
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRETS = {"rung-admin-token", "rung-worker-token", "rung-database"}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def secrets_of(spec):
    names = set()
    for v in spec.get("volumes", []):
        if "secret" in v:
            names.add(v["secret"]["secretName"])
    for c in spec["containers"]:
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                names.add(ref["name"])
    return names


def check_objects(where, objs, shipped):
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    pods = []  # (kind, name, labels)
    for o in objs:
        name = o["metadata"]["name"]
        check(DNS_LABEL.match(name), "%s: %s's name is not a DNS label" % (where, name))
        if o["kind"] in ("StatefulSet", "Deployment", "Job"):
            labels = o["spec"]["template"]["metadata"]["labels"]
            pods.append(labels)
            sel = o["spec"].get("selector", {}).get("matchLabels")
            if sel is not None:
                check(all(labels.get(k) == v for k, v in sel.items()),
                      "%s: %s's selector does not match its pods" % (where, name))
            spec = pod_spec(o)
            for s in secrets_of(spec):
                check(s in SECRETS, "%s: %s uses Secret %s, which README.md does not name"
                      % (where, name, s))
            for c in spec["containers"]:
                res = c.get("resources", {})
                gpu_req = res.get("requests", {}).get("nvidia.com/gpu")
                gpu_lim = res.get("limits", {}).get("nvidia.com/gpu")
                check(gpu_req == gpu_lim, "%s: %s asks %s GPUs with a limit of %s"
                      % (where, name, gpu_req, gpu_lim))
                text = " ".join(c.get("command", []) + c.get("args", []))
                if "rungd" in text and "0.0.0.0" in text:
                    check("--token-file" in text, "%s: rungd on 0.0.0.0 without a token" % where)
                if "rung-worker" in text:
                    check("--on-sigterm give-back" in text,
                          "%s: %s's workers do not give trials back on SIGTERM" % (where, name))
            if o["kind"] == "StatefulSet":
                check(o["spec"]["serviceName"] in services,
                      "%s: %s names Service %s, not in the file"
                      % (where, name, o["spec"]["serviceName"]))
    for name, svc in services.items():
        sel = svc["spec"]["selector"]
        check(any(all(p.get(k) == v for k, v in sel.items()) for p in pods) or "job-name" in sel,
              "%s: Service %s selects no pod of the file" % (where, name))
    if not shipped:
        return
    check(objs, "%s: no objects" % where)


def check_gang(where, objs, nodes):
    job = next(o for o in objs if o["kind"] == "Job")
    spec = job["spec"]
    name = job["metadata"]["name"]
    if nodes == 1:
        check("completionMode" not in spec and len(objs) == 1,
              "%s: a 1-node trial's Job is not a plain Job alone" % where)
        return
    svc = next((o for o in objs if o["kind"] == "Service"), None)
    check(svc is not None and svc["spec"]["clusterIP"] == "None",
          "%s: a gang without its headless Service" % where)
    check(spec.get("completionMode") == "Indexed" and spec.get("completions") == nodes
          and spec.get("parallelism") == nodes,
          "%s: a gang of %d is not an Indexed Job of %d pods at once" % (where, nodes, nodes))
    check(pod_spec(job).get("subdomain") == name == (svc or {}).get("metadata", {}).get("name"),
          "%s: the pods' subdomain is not the Service" % where)
    check(svc["spec"]["selector"] == {"job-name": name}, "%s: the Service selects other pods"
          % where)
    args = pod_spec(job)["containers"][0]["args"]
    addr = args[args.index("--advertise-addr") + 1]
    check(addr == "%s-$(RUNG_NODE_INDEX).%s" % (name, name),
          "%s: workers advertise %s, not <job>-<index>.<service>" % (where, addr))


def main():
    for path in sorted(glob.glob(os.path.join(ROOT, "packaging", "k8s", "*.yaml"))):
        with open(path) as f:
            objs = [o for o in yaml.safe_load_all(f) if o]
        check_objects(os.path.relpath(path, ROOT), objs, True)
    shapes = {"one_node.json": 1, "multi_gpu.json": 1, "gang.json": 4}
    for name, nodes in shapes.items():
        path = os.path.join(ROOT, "tests", "data", "k8s", name)
        with open(path) as f:
            doc = json.load(f)
        where = os.path.relpath(path, ROOT)
        check(doc["kind"] == "List", "%s: not a List" % where)
        check_objects(where, doc["items"], False)
        check_gang(where, doc["items"], nodes)
    for p in problems:
        print("FAIL " + p)
    print("%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
