/* Where other workers reach this one: the advertise address and the
 * rendezvous port every lease request offers (docs/api.md, POST
 * /api/v1/workers/{id}/lease; docs/workers.md). The I/O half; the pure
 * half is in gang.h.
 *
 * The default address is the local address of this machine's route to the
 * server: the address the server sees the worker come from is the one most
 * likely to reach it from the other workers too (127.0.0.1 for a server on
 * loopback, where every worker is this machine). A UDP socket connected to
 * the server's host sends nothing and gives that address.
 *
 * The port is found free for each lease request by binding a socket to it
 * on every address at once (the IPv6 wildcard with IPv4 mapped, else the
 * IPv4 one): a port free there is free wherever rank 0's program will
 * listen. The socket is kept bound while the request is out, so that no
 * other program (nor this worker's next request) is given the port
 * meanwhile, and closed just before rank 0's program starts. */
#ifndef RUNG_WORKER_ADVERTISE_H
#define RUNG_WORKER_ADVERTISE_H

#include <stddef.h>
#include <stdint.h>

/* The local address of the route to url's host, as text, into addr (size
 * bytes). 0, or -1 with why (the host does not resolve, no route). */
int advertise_route_addr(const char *url, char *addr, size_t size, char *why, size_t why_size);

/* Binds a TCP socket (close-on-exec, not listening) to a free port: any
 * the kernel picks when lo is 0, else the first free one of [lo, hi] in
 * gang_ports_nth's order from start. The socket (close it when the port
 * may be used), with *port set; or -1 with why when none is free. */
int advertise_port_open(int lo, int hi, uint64_t start, int *port, char *why, size_t why_size);

#endif
