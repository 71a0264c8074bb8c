#!/usr/bin/env python3
"""Times GET /api/v1/experiments/{id}/importance and .../surface on a large
experiment, and how responsive rungd's engine stays meanwhile (standard
library only; not a test: it prints figures).

A real rungd on a temporary database; an experiment of N trials (default
10,000) over 10 parameters (uniform, log-uniform, an integer and a choice)
whose loss depends on three of them, its trials leased, reported and
finished over HTTP by W concurrent simulated workers. Then, while a thread
sends GET /healthz and GET /api/v1/experiments/{id} every 10 ms (both
answered on the engine thread), it asks for the importance (the first
reply computes it on the analysis thread; the second comes from the
cache) and for a surface, and prints the times and the latencies seen
during the computation.

Usage: importance_speed.py --rungd PATH [--trials 10000] [--workers 8] [--bayes]
"""

import argparse
import http.client
import json
import math
import os
import random
import subprocess
import tempfile
import threading
import time

SPACE = {
    "lr": {"type": "loguniform", "low": 1e-5, "high": 1.0},
    "wd": {"type": "loguniform", "low": 1e-6, "high": 1e-1},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.5},
    "momentum": {"type": "uniform", "low": 0.5, "high": 0.99},
    "u1": {"type": "uniform", "low": 0.0, "high": 1.0},
    "u2": {"type": "uniform", "low": 0.0, "high": 1.0},
    "u3": {"type": "uniform", "low": 0.0, "high": 1.0},
    "u4": {"type": "uniform", "low": 0.0, "high": 1.0},
    "layers": {"type": "randint", "low": 1, "high": 9},
    "opt": {"type": "choice", "values": ["sgd", "adam", "rmsprop"]},
}


def loss(c):
    return ((math.log10(c["lr"]) + 3.0) ** 2 + 2.0 * (c["dropout"] - 0.2) ** 2
            + {"sgd": 0.5, "adam": 0.0, "rmsprop": 0.2}[c["opt"]] + 0.01 * random.random())


class Conn:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self.c.request(method, path, body=data, headers=headers)
        r = self.c.getresponse()
        payload = r.read()
        return r.status, (json.loads(payload) if payload else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rungd", required=True)
    ap.add_argument("--trials", type=int, default=10000)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--bayes", action="store_true",
                    help="the bayes searcher (n_initial = trials: Sobol points): the surface "
                    "is its GP's")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rung-importance-")
    proc = subprocess.Popen([os.path.abspath(args.rungd), "--db", os.path.join(tmp, "r.db"),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=tmp)
    port = None
    for line in proc.stdout:
        if "listening on" in line:
            port = int(line.strip().rsplit(":", 1)[1].rstrip("/"))
            break
    try:
        run(args, port)
    finally:
        proc.terminate()
        proc.wait(30)


def run(args, port):
    c = Conn(port)
    spec = {"name": "importance-speed", "metric": "loss", "mode": "min", "search_space": SPACE,
            "num_samples": args.trials,
            "searcher": ({"type": "bayes", "seed": 1, "n_initial": args.trials} if args.bayes
                         else {"type": "random", "seed": 1}),
            "trainable": {"type": "external"}}
    st, exp = c.call("POST", "/api/v1/experiments", spec)
    assert st == 201, (st, exp)
    eid = exp["id"]
    t0 = time.monotonic()
    left = [args.trials]
    lock = threading.Lock()

    def work(k):
        w = Conn(port)
        st, reg = w.call("POST", "/api/v1/workers", {"name": "sim-%d" % k, "cpus": 64})
        wid = reg["worker_id"]
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            while True:
                st, r = w.call("POST", "/api/v1/workers/%d/lease" % wid,
                               {"cpus": 1, "wait_s": 1})
                if st == 200:
                    break
            t = r["trial"]
            w.call("POST", "/api/v1/trials/%d/report" % t["id"],
                   {"lease_token": t["lease_token"], "step": 1, "metrics": {"loss": loss(
                       t["config"])}})
            w.call("POST", "/api/v1/trials/%d/finish" % t["id"],
                   {"lease_token": t["lease_token"], "status": "completed"})

    threads = [threading.Thread(target=work, args=(k,)) for k in range(args.workers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    fill_s = time.monotonic() - t0
    st, x = c.call("GET", "/api/v1/experiments/%d" % eid)
    print("filled: %d completed trials in %.1f s" % (x["counts"]["completed"], fill_s))

    lat = {"healthz": [], "experiment": []}
    stop = threading.Event()

    def probe():
        p = Conn(port)
        while not stop.is_set():
            for name, path in (("healthz", "/healthz"), ("experiment",
                                                        "/api/v1/experiments/%d" % eid)):
                a = time.monotonic()
                p.call("GET", path)
                lat[name].append((time.monotonic() - a) * 1000.0)
            time.sleep(0.01)

    prober = threading.Thread(target=probe)
    prober.start()
    time.sleep(0.3)
    for name in lat:
        lat[name].clear()
    a = time.monotonic()
    st, imp = c.call("GET", "/api/v1/experiments/%d/importance" % eid)
    first = time.monotonic() - a
    stop.set()
    prober.join()
    assert st == 200, (st, imp)
    a = time.monotonic()
    st, _ = c.call("GET", "/api/v1/experiments/%d/importance" % eid)
    cached = time.monotonic() - a
    a = time.monotonic()
    st2, surf = c.call("GET", "/api/v1/experiments/%d/surface?x=lr&y=dropout&n=32" % eid)
    surface_s = time.monotonic() - a
    m = imp["metrics"][0]
    print("importance: first reply %.2f s, cached %.1f ms (%d trials)"
          % (first, cached * 1000.0, m["trials"]))
    print("  ranking: " + ", ".join("%s %.3f" % (p["param"], p["importance"])
                                    for p in m["importance"]))
    print("surface (%s, 32 x 32): %d in %.2f s, %d points"
          % (surf.get("model"), st2, surface_s, len(surf.get("points", []))))
    for name, v in lat.items():
        v.sort()
        if v:
            print("%s during the computation: %d requests, median %.2f ms, p99 %.2f ms, "
                  "max %.2f ms" % (name, len(v), v[len(v) // 2], v[int(len(v) * 0.99)], v[-1]))
    print(json.dumps({"trials": m["trials"], "params": len(SPACE), "first_s": first,
                      "cached_ms": cached * 1000.0, "surface_s": surface_s,
                      "healthz_max_ms": max(lat["healthz"] or [0]),
                      "experiment_max_ms": max(lat["experiment"] or [0])}))


if __name__ == "__main__":
    main()
