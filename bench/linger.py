#!/usr/bin/env python3
"""Closed half-requests against rungd's connection limits (standard library
only; run with /usr/bin/python3).

  linger.py --rungd PATH [--connections 5500] [--addresses 5]
            [--kind both|head|body] [--bursts 1] [--every-s 8] [--after-s 2]

A fresh rungd on a temporary database. Each burst opens --connections
connections round-robin from --addresses loopback addresses (127.0.0.2 on),
each sending part of a request (a partial head, or a whole head and part
of its body; --kind both alternates) and closing at once. All the while a
probe from the next address does GET /healthz on a fresh connection, one
after the other, until --after-s after the last burst. Prints the bursts'
times, the probes' p50/p99/max and refusals, how long after each burst
every burst address was served again (a held half-request keeps its
address over the 1,024 per-address limit), the target lines and one JSON
line. The integration test tests/integration/test_connections.py asserts
the refusals; this prints the latency.
"""

import argparse
import resource
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rungbench as rb  # noqa: E402

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
PARTIAL_HEAD = b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Le"
PARTIAL_BODY = (b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na")
P99_GOAL_MS = 100.0


def healthz(host, port, source, timeout=5.0):
    """(status or None, milliseconds) of one GET /healthz from source."""
    t0 = time.monotonic()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    status = None
    try:
        s.bind((source, 0))
        s.connect((host, port))
        s.sendall(HEALTHZ)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        if b"\r\n" in data:
            status = int(data.split(b" ", 2)[1])
    except (OSError, ValueError, IndexError):
        pass
    finally:
        s.close()
    return status, (time.monotonic() - t0) * 1000


def burst(host, port, sources, n, kind):
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((sources[i % len(sources)], 0))
            s.connect((host, port))
            head = kind == "head" or (kind == "both" and i % 2)
            s.send(PARTIAL_HEAD if head else PARTIAL_BODY)
        except OSError:
            pass
        finally:
            s.close()


def served_again_s(host, port, sources, limit_s=15.0):
    """Seconds until each source gets a 200 again; None past limit_s."""
    t0 = time.monotonic()
    for src in sources:
        while healthz(host, port, src)[0] != 200:
            if time.monotonic() - t0 > limit_s:
                return None
            time.sleep(0.01)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rungd", required=True)
    ap.add_argument("--connections", type=int, default=5500)
    ap.add_argument("--addresses", type=int, default=5)
    ap.add_argument("--kind", choices=("both", "head", "body"), default="both")
    ap.add_argument("--bursts", type=int, default=1)
    ap.add_argument("--every-s", type=float, default=8.0)
    ap.add_argument("--after-s", type=float, default=2.0)
    args = ap.parse_args()
    rb.on_signals_exit()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sources = ["127.0.0.%d" % (2 + i) for i in range(args.addresses)]
    probe_src = "127.0.0.%d" % (2 + args.addresses)
    tmp = tempfile.mkdtemp(prefix="rung-linger-")
    d = rb.Rungd(os.path.abspath(args.rungd), os.path.join(tmp, "rung.db"),
                 os.path.join(tmp, "rungd.log"))
    try:
        d.start(30)
        probes, stop = [], threading.Event()

        def probe():
            while not stop.is_set():
                probes.append(healthz(d.host, d.port, probe_src))

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        rows = []
        for b in range(args.bursts):
            t_start = time.monotonic()
            burst(d.host, d.port, sources, args.connections, args.kind)
            burst_s = time.monotonic() - t_start
            freed = served_again_s(d.host, d.port, sources)
            rows.append({"burst_s": round(burst_s, 3),
                         "served_again_s": None if freed is None else round(freed, 3)})
            print("burst %d: %d closed half-requests (%s) from %d addresses in %.2f s; "
                  "every burst address served again %s"
                  % (b + 1, args.connections, args.kind, len(sources), burst_s,
                     "after %.2f s" % freed if freed is not None else "NOT within 15 s"))
            if b + 1 < args.bursts:
                time.sleep(max(0.0, t_start + args.every_s - time.monotonic()))
        time.sleep(args.after_s)
        stop.set()
        prober.join(10)
    finally:
        d.stop(10)
        shutil.rmtree(tmp, ignore_errors=True)
    ms = sorted(p[1] for p in probes)
    refused = sum(1 for p in probes if p[0] != 200)
    p50, p99 = rb.percentile(ms, 50), rb.percentile(ms, 99)
    print("probe from %s: %d requests, %d refused or failed; p50 %.1f ms, p99 %.1f ms, "
          "max %.1f ms" % (probe_src, len(ms), refused, p50, p99, ms[-1] if ms else float("nan")))
    print("target probe p99: %.1f ms (goal %.0f) %s"
          % (p99, P99_GOAL_MS, "ok" if p99 <= P99_GOAL_MS else "MISSED"))
    print("target probes refused: %d (goal 0) %s" % (refused, "ok" if refused == 0 else "MISSED"))
    print(json.dumps({"connections": args.connections, "addresses": args.addresses,
                      "kind": args.kind, "bursts": rows, "probes": len(ms), "refused": refused,
                      "p50_ms": round(p50, 2), "p99_ms": round(p99, 2),
                      "max_ms": round(ms[-1], 2) if ms else None}))
    return 0 if refused == 0 and p99 <= P99_GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
