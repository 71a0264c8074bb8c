"""Integration tests: connections that close early or crowd the front.

A client that sends part of a request head or body and then closes frees
its slot at once, not at the request deadline (10 s), so that bursts of
such connections cannot hold the connection limit; and once the
connections at once pass three quarters of the limit, an address holding
more than its share of the limit is refused first, so that a few busy
addresses cannot lock every other client out (docs/api.md, "The HTTP
front's limits").

The numbers mirror server/http_internal.h: CONNECTION_LIMIT (4,096),
PER_ADDRESS_LIMIT (1,024), FAIR_ABOVE (3,072) and REQUEST_TIMEOUT_MS
(10 s). The latency figures of the burst are bench/linger.py's to print;
these tests assert what a client sees: no probe refused, and the slots
free again right after the burst.
"""

import select
import socket
import threading
import time

import rungd_harness as h

CONNECTION_LIMIT = 4096
PER_ADDRESS_LIMIT = 1024
FAIR_ABOVE = CONNECTION_LIMIT * 3 // 4
REQUEST_TIMEOUT_S = 10.0
# Five addresses send the burst; the probe comes from a sixth.
BURST = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"]
PROBE = "127.0.0.7"
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
PARTIAL_HEAD = b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Le"
PARTIAL_BODY = (b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na")
# Well below REQUEST_TIMEOUT_S: a slot held until the deadline shows.
FREED_WITHIN_S = 4.0


def status_of(d, source, timeout=5.0):
    """The status of GET /healthz on a fresh connection from source; None
    when the connection closed or failed without a reply."""
    try:
        s = h.connect_from(d, source, timeout)
    except OSError:
        return None
    try:
        s.sendall(HEALTHZ)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                return None
            data += chunk
        return int(data.split(b" ", 2)[1])
    except OSError:
        return None
    finally:
        s.close()


def wait_all_served(d, sources, what):
    """Every source address is served again (not 503: its slots are free)
    within FREED_WITHIN_S."""
    t0 = time.monotonic()
    for addr in sources:
        h.wait_until(lambda: status_of(d, addr) == 200,
                     max(0.1, FREED_WITHIN_S - (time.monotonic() - t0)),
                     "%s: %s served again" % (what, addr))
    return time.monotonic() - t0


class ClosedHalfRequests(h.RungdTestCase):

    def test_closed_half_requests_free_their_slots_at_once(self):
        """5,500 half-requests or more (a partial head, or a whole head and part of a
        body, then close) from five addresses while a sixth probes /healthz:
        no probe is refused, and every burst address is served right after."""
        h.raise_nofile()
        d = self.daemon()
        probes, stop = [], threading.Event()

        def probe():
            while not stop.is_set():
                t0 = time.monotonic()
                probes.append((status_of(d, PROBE), (time.monotonic() - t0) * 1000))

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        self.addCleanup(prober.join, 10)
        self.addCleanup(stop.set)
        t0 = time.monotonic()
        i = 0
        # At least 5,500, and on until the prober made 20 probes during the
        # burst (a fast host sends 5,500 in a quarter of a second), 30 s at most.
        while i < 5500 or (len(probes) < 20 and time.monotonic() - t0 < 30):
            i += 1
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((BURST[i % len(BURST)], 0))
                s.connect((d.host, d.port))
                s.send(PARTIAL_HEAD if i % 2 else PARTIAL_BODY)
            except OSError:
                pass  # refused and closed by the server: the probe tells
            finally:
                s.close()
        burst_s = time.monotonic() - t0
        during = len(probes)
        # Each burst address sent more than PER_ADDRESS_LIMIT: it is refused
        # until its closed half-requests are let go.
        freed_s = wait_all_served(d, BURST, "after the burst")
        stop.set()
        prober.join(10)
        refused = [p for p in probes if p[0] != 200]
        ms = sorted(p[1] for p in probes)
        print("\n%d closed half-requests in %.2f s: %d probes from a sixth address (%d during "
              "the burst), %d refused, p50 %.1f ms, max %.1f ms; burst addresses served %.2f s "
              "later" % (i, burst_s, len(probes), during, len(refused), ms[len(ms) // 2], ms[-1],
                         freed_s))
        self.assertGreater(during, 10, "too few probes during the burst")
        self.assertEqual(refused[:5], [], "probes refused during the burst")

    def test_a_close_after_the_head_is_read_frees_the_slot(self):
        """Three full addresses' half-requests, read by rungd before their
        clients close: a partial head (screened), a whole head and part of
        its body (handed to libmicrohttpd), and a partial second head on a
        kept-alive connection (taken back from libmicrohttpd). Each address
        is served again at once, not after the 10 s request deadline."""
        h.raise_nofile()
        d = self.daemon()
        second_head = b"GET /healthz HTTP/1.1\r\nHo"
        kinds = {BURST[0]: PARTIAL_HEAD, BURST[1]: PARTIAL_BODY, BURST[2]: second_head}
        socks = {}
        for src, data in kinds.items():
            socks[src] = h.open_many(d, [src] * PER_ADDRESS_LIMIT)
            self.addCleanup(lambda ss=socks[src]: [s.close() for s in ss])
        for s in socks[BURST[2]]:  # a whole first request, answered
            s.setblocking(True)
            s.settimeout(5)
            s.sendall(HEALTHZ)
        for s in socks[BURST[2]]:
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(4096)
                self.assertTrue(chunk, "no reply to the first request")
                reply += chunk
            self.assertIn(b" 200 ", reply.split(b"\r\n", 1)[0])
        for src, data in kinds.items():
            for s in socks[src]:
                try:
                    s.send(data)
                except OSError:
                    pass
        for src in kinds:  # each address is full: the next connection is refused
            h.wait_until(lambda: status_of(d, src) == 503, 5, "%s to be full" % src)
        time.sleep(0.3)  # rungd has read what they sent
        for src in kinds:
            for s in socks[src]:
                s.close()
        freed_s = wait_all_served(d, list(kinds), "after the close")
        print("\n%d partial heads, bodies and second heads closed: every address served "
              "%.2f s later" % (PER_ADDRESS_LIMIT, freed_s))


class FairShare(h.RungdTestCase):

    def test_busy_addresses_cannot_lock_others_out(self):
        """Five addresses hold every connection they can (half-requests left
        open): past FAIR_ABOVE each keeps about its share and the rest is
        refused with the JSON 503, so a sixth and a seventh address are still
        served; one address alone may hold up to PER_ADDRESS_LIMIT."""
        hard = h.raise_nofile()
        want = len(BURST) * PER_ADDRESS_LIMIT
        if hard < want + 200:
            self.skipTest("descriptor limit %d is below the %d connections" % (hard, want))
        d = self.daemon()
        socks = h.open_many(d, [BURST[i % len(BURST)] for i in range(want)])
        self.addCleanup(lambda: [s.close() for s in socks])
        for s in socks:
            try:
                s.send(PARTIAL_HEAD)
            except OSError:
                pass
        # Two more addresses are served. Their connections queue behind the
        # burst's, so rungd has taken (and refused or held) every one of
        # those before it answers them: refused ones got their 503 at once,
        # held ones nothing.
        for addr in (PROBE, "127.0.0.8"):
            self.assertEqual(status_of(d, addr), 200, "%s locked out" % addr)
        time.sleep(0.1)
        held, refusals = {a: 0 for a in BURST}, []
        poller = select.poll()
        for s in socks:
            poller.register(s, select.POLLIN)
        readable = set(fd for fd, _ in poller.poll(0))
        for i, s in enumerate(socks):
            if s.fileno() in readable:
                try:
                    refusals.append(s.recv(4096))
                except OSError:
                    refusals.append(b"")
            else:
                held[BURST[i % len(BURST)]] += 1
        total = sum(held.values())
        print("\nheld per address: %s (%d in all), refused %d" % (held, total, len(refusals)))
        self.assertGreaterEqual(total, FAIR_ABOVE)
        self.assertLess(total, CONNECTION_LIMIT - 256, "no room was kept for other addresses")
        for addr, n in held.items():
            # Each got about an equal share: the rule refuses the heavy first.
            self.assertGreater(n, FAIR_ABOVE // len(BURST) - 64, "%s held only %d" % (addr, n))
        for data in refusals[:20]:
            self.assertIn(b" 503 ", data.split(b"\r\n", 1)[0], data[:200])
            self.assertIn(b'"unavailable"', data, data[:300])


if __name__ == "__main__":
    h.main()
