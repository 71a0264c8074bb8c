#!/usr/bin/env python3
"""A worker in 100 lines: the pull protocol of Rung's REST API, spoken with
Python's standard library only.

It registers, leases trials, "trains" each one by computing a curve that
converges to the Branin function of the trial's x1 and x2 (or to a bowl over
whatever numeric parameters the config has), reports one metric per step, and
finishes. Use it to try rungd without a GPU, or as a template for a worker of
your own:

    python3 examples/toy_worker.py --server http://127.0.0.1:8080 --slots 4
"""
import argparse
import json
import math
import os
import threading
import time
import urllib.error
import urllib.request


def call(server, token, method, path, body=None, timeout=40):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read()
            return r.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def objective(config):
    """Branin where the config has x1 and x2; a bowl over numbers otherwise."""
    if "x1" in config and "x2" in config:
        x1, x2 = float(config["x1"]), float(config["x2"])
        b, c = 5.1 / (4 * math.pi ** 2), 5 / math.pi
        return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x1) + 10
    nums = [v for v in config.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum((math.log10(abs(v) + 1e-12)) ** 2 for v in nums)


def run_slot(args, wid, stats):
    while True:
        status, body = call(args.server, args.token, "POST", "/api/v1/workers/%d/lease" % wid,
                            {"cpus": 1, "gpus": [], "wait_s": 5})
        if status == 204:
            if args.once:
                return
            continue
        if status != 200:
            print("lease failed:", status, body)
            return
        trial = body["trial"]
        config, token = trial["config"], trial["lease_token"]
        final = objective(config)
        steps = int(config.get("steps", 10))
        for step in range(1, steps + 1):
            # A learning curve: starts high, converges to the final value.
            loss = final + 50.0 * math.exp(-step / 2.0)
            time.sleep(args.step_s)
            status, answer = call(args.server, args.token, "POST",
                                  "/api/v1/trials/%d/report" % trial["id"],
                                  {"lease_token": token, "step": step, "metrics": {"loss": loss}})
            if status != 200 or answer["action"] == "stop":
                break
        call(args.server, args.token, "POST", "/api/v1/trials/%d/finish" % trial["id"],
             {"lease_token": token, "status": "completed"})
        with stats["lock"]:
            stats["done"] += 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", default=os.environ.get("RUNG_SERVER", "http://127.0.0.1:8080"))
    p.add_argument("--token", default=os.environ.get("RUNG_TOKEN", ""))
    p.add_argument("--slots", type=int, default=4, help="trials run at once")
    p.add_argument("--step-s", type=float, default=0.02, help="seconds per simulated step")
    p.add_argument("--once", action="store_true", help="exit when no work is left")
    args = p.parse_args()
    status, body = call(args.server, args.token, "POST", "/api/v1/workers",
                        {"name": "toy-worker", "hostname": os.uname().nodename, "gpus": [],
                         "cpus": args.slots})
    if status != 201:
        raise SystemExit("register failed: %s %s" % (status, body))
    wid = body["worker_id"]
    stats = {"lock": threading.Lock(), "done": 0}
    threads = [threading.Thread(target=run_slot, args=(args, wid, stats)) for _ in range(args.slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("toy worker %d: ran %d trials" % (wid, stats["done"]))


if __name__ == "__main__":
    main()
