/* Gangs on the worker's side (docs/api.md, "Gangs" and "Command
 * trainables"). Pure.
 *
 * A trial whose experiment asks for `nodes` > 1 runs as a gang: one
 * program per node, each on its own worker, started together. The lease
 * reply names this worker's place in it (`gang`: rank, nnodes, and rank 0's
 * address and port, where the members meet); this module reads that, and
 * makes from it what the program gets: the environment of torchrun's
 * convention plus Rung's own names, and the argv placeholders {node_rank},
 * {nnodes}, {master_addr} and {master_port}. A 1-node trial is a gang of
 * one for the placeholders (rank 0 of 1, rank 0 being this machine at
 * 127.0.0.1 with the port its lease request offered), so one argv serves
 * both; it gets none of the gang's environment.
 *
 * Also the pure halves of --advertise-addr and --gang-ports: the host of
 * the server's URL (whose route gives the default address), what an
 * address may be, and the order in which a port range is tried. */
#ifndef RUNG_WORKER_GANG_H
#define RUNG_WORKER_GANG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"

#define GANG_ADDR_MAX 255 /* bytes of an address: the lease request's advertise_addr bound */
#define GANG_MAX_NODES 64 /* as the spec's resources_per_trial.nodes */
#define GANG_PORT_MAX 65535

typedef struct GangInfo {
    bool is_gang;                        /* the lease reply had a gang (nodes > 1) */
    int64_t rank;                        /* this node, 0 .. nnodes - 1 */
    int64_t nnodes;                      /* 1 .. GANG_MAX_NODES */
    char master_addr[GANG_ADDR_MAX + 1]; /* rank 0's advertise_addr */
    int master_port;                     /* rank 0's port, 1 .. 65535; 0: unknown */
} GangInfo;

/* The gang of one for a 1-node trial: rank 0 of 1 at 127.0.0.1, port the
 * port offered with the lease request that brought it (0: none). */
void gang_single(GangInfo *g, int port);

/* Reads the gang of a lease reply (the whole 200 body, borrowed): the
 * "gang" of its trial object (or of the reply itself), {"rank", "nnodes",
 * "master_addr", "master_port"}; or the trial object's form elsewhere,
 * {"members": [{"rank", "worker_id"}], "master_addr", "master_port"},
 * where this worker is worker_id. Returns 0 when there is none (null or
 * absent: *g untouched), 1 when *g is filled, -1 with why when it is
 * malformed (a rank outside [0, nnodes), nnodes outside [1, 64], an
 * address gang_addr_valid refuses, a port outside [1, 65535], this worker
 * not among the members). */
int gang_from_reply(const json_t *reply, int64_t worker_id, GangInfo *g, char *why,
                    size_t why_size);

/* The names a gang member's program gets, in the order gang_env sets them. */
extern const char *const GANG_ENV_NAMES[];
#define GANG_ENV_COUNT 9

/* Sets the gang's variables on env: RUNG_NODE_RANK, RUNG_NNODES,
 * MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK, WORLD_SIZE (= nnodes: one
 * process per node), RANK (= the node's rank) and LOCAL_RANK=0
 * (GANG_ENV_NAMES). For a trial that is no gang (!g->is_gang) it sets nothing and removes
 * RUNG_NODE_RANK and RUNG_NNODES (a worker started inside another gang's program must not hand its
 * own on); the generic names (MASTER_ADDR, RANK, ...) of the worker's environment or the
 * trainable's env are left as they are. */
void gang_env(Env *env, const GangInfo *g);

/* The values argv's placeholders take: a new object (free with
 * json_decref) holding config's members (borrowed) and node_rank, nnodes,
 * master_addr and master_port (left out when 0). NULL with why when a
 * parameter of config has one of those four names and argv (the
 * trainable's, borrowed) uses it as {name}: the two would be ambiguous,
 * and the trial is refused rather than given one of them silently. NULL
 * with "out of memory" when an allocation failed. */
json_t *gang_argv_values(const GangInfo *g, const json_t *config, const json_t *argv, char *why,
                         size_t why_size);

/* Whether a lease request's 400 reply (its body, borrowed; NULL is fine)
 * refuses the gang fields themselves (field "advertise_addr" or "port"):
 * a rungd from before gangs, which knows neither. The worker then asks
 * without them, for 1-node trials only. */
bool gang_fields_refused(const json_t *reply_body);

/* Whether addr may be an advertise address: 1 .. GANG_ADDR_MAX bytes of
 * letters, digits, '.', '-', ':', '_' and '%' (host names, IPv4, IPv6
 * with a zone), not starting with '-' (it is put into argv, where it
 * would read as an option). */
bool gang_addr_valid(const char *addr);

/* An IPv6 literal in brackets, "[::1]", without them into out (size
 * bytes), as MASTER_ADDR and torch.distributed want it. 0, or -1 when addr
 * is not in brackets (or does not fit). */
int gang_addr_unbracket(const char *addr, char *out, size_t size);

/* The host of an http:// or https:// URL, without the brackets of an IPv6
 * literal and without user info or port, into host (size bytes). 0, or
 * -1 when url has no host or it does not fit. */
int gang_url_host(const char *url, char *host, size_t size);

/* Parses --gang-ports "LO-HI" (1 <= LO <= HI <= 65535) or a single
 * "PORT". 0, or -1 with why. */
int gang_ports_parse(const char *text, int *lo, int *hi, char *why, size_t why_size);

/* The i-th port to try of [lo, hi] (i from 0), starting at offset start
 * (any number; taken modulo the range's size) and wrapping: every port of
 * the range once in the first (hi - lo + 1) values of i. */
int gang_ports_nth(int lo, int hi, uint64_t start, int i);

#endif
