/* A TCP rendezvous of N processes (ranks), and the few collectives that a
 * multi-node run of rung-train needs over the same connections
 * (docs/trainer.md, "Multi-node training").
 *
 * Rank 0 listens on addr:port; every other rank connects to it, retrying
 * until the join deadline (rank 0 may start later), and says hello (magic,
 * version, its rank, the rank count, its byte order). Rank 0 checks each
 * hello: a connection that is not a rendezvous (wrong magic) is dropped and
 * the wait goes on; a wrong rank count, a rank out of range, a rank that
 * arrives twice or another version fails the rendezvous for everyone, each
 * rank getting the same message. Once all have arrived, rank 0 sends every
 * rank the payload (rung-train's: the 128-byte ncclUniqueId), each rank
 * acknowledges it, and rank 0 answers "go" when all have: when rdzv_join
 * returns on any rank, every rank has arrived and holds the payload. At the
 * deadline rank 0 fails naming the ranks that did not arrive:
 *
 *   rendezvous: ranks 2, 3 of 4 did not arrive within 60 s at 10.0.0.5:29500
 *
 * The connections form a star around rank 0 and stay open for the
 * collectives below, which every rank must call in the same order with the
 * same sizes (each message carries its operation, sequence number and size,
 * so a mismatch is an error naming both sides, never silent garbage). Rank 0
 * combines in rank order, so a sum is the same on every rank and the same
 * as one process adding the ranks' values 0, 1, ... in turn. Every wait has
 * a deadline; a peer that exits is seen at once (its connection closes); a
 * rank that fails can tell the others why (rdzv_abort), and rank 0 passes a
 * failure it hears on to the rest.
 *
 * Collective data travels in the machine's byte order: the hello refuses a
 * rank whose byte order differs from rank 0's. Frame headers are big-endian.
 *
 * Library code: nothing is printed and nothing exits; every error is a
 * message in `why`, starting with "rendezvous: ". No function is safe to
 * call from two threads at once, except rdzv_check, which may run beside a
 * collective (it then checks nothing). */
#ifndef RUNG_KERNELS_RENDEZVOUS_H
#define RUNG_KERNELS_RENDEZVOUS_H

#include <stddef.h>

/* Ranks of one rendezvous: rank 0 keeps a connection (a file descriptor)
 * per rank; 1024 is far above the 64 nodes a trial may have (docs/api.md)
 * and far below a process's usual descriptor limit. */
#define RDZV_MAX_RANKS 1024
/* The join payload: rung-train sends 128 bytes; larger data goes through
 * rdzv_bcast. */
#define RDZV_MAX_PAYLOAD ((size_t)1 << 16)
/* A failure's message, as passed between ranks. */
#define RDZV_MAX_TEXT 512
/* Defaults of RdzvConfig's deadlines (seconds): rank 0 waits 60 s for the
 * others (every member of a gang starts at once, but one may load its data
 * slower); a collective waits 600 s for a peer, since a peer may be in the
 * middle of an epoch's validation and checkpoint (a peer that dies is seen
 * at once: its connection closes). */
#define RDZV_JOIN_S 60.0
#define RDZV_OP_S 600.0

typedef struct RdzvConfig {
    const char *addr; /* rank 0's address (host name or IP): where it listens, where all connect */
    int port;         /* 1..65535 */
    int rank;         /* this process, 0 <= rank < nranks */
    int nranks;       /* 1..RDZV_MAX_RANKS */
    double join_s;    /* the join's deadline, from the call; 0: RDZV_JOIN_S */
    double op_s;      /* each collective's deadline, from the call; 0: RDZV_OP_S */
} RdzvConfig;

typedef struct Rdzv Rdzv;

/* Operations of rdzv_allreduce: element type and how two combine. */
typedef enum { RDZV_SUM_F32, RDZV_SUM_F64, RDZV_MAX_I64, RDZV_MIN_I64 } RdzvOp;

/* Joins the rendezvous. payload: len bytes (len <= RDZV_MAX_PAYLOAD); rank
 * 0's are sent, the others' are overwritten with rank 0's (every rank must
 * pass the same len). With one rank, nothing is opened. Returns 0 with *out
 * a new rendezvous (free with rdzv_close), or -1 with why filled. */
int rdzv_join(const RdzvConfig *cfg, void *payload, size_t len, Rdzv **out, char *why, size_t size);

/* rank 0's len bytes of buf are copied into every rank's buf. */
int rdzv_bcast(Rdzv *r, void *buf, size_t len, char *why, size_t size);

/* Every rank's len bytes of mine land at all + rank * len on every rank
 * (all holds nranks * len bytes). */
int rdzv_allgather(Rdzv *r, const void *mine, size_t len, void *all, char *why, size_t size);

/* buf (n elements of op's type) becomes, on every rank, the combination of
 * all ranks' buf: rank 0's, then rank 1's folded in, and so on. */
int rdzv_allreduce(Rdzv *r, void *buf, size_t n, RdzvOp op, char *why, size_t size);

/* Returns when every rank has called it. */
int rdzv_barrier(Rdzv *r, char *why, size_t size);

/* Without waiting: -1 with why filled when a peer has closed its connection
 * or sent a failure (rank 0: any rank; the others: rank 0), else 0. Safe
 * beside a collective on another thread: it then returns 0 at once. */
int rdzv_check(Rdzv *r, char *why, size_t size);

/* Tells the peers that this rank failed and why (a failure heard from a
 * peer is passed on as that peer's), waiting at most a second for each;
 * they fail with "rendezvous: rank N failed: why". NULL-safe. */
void rdzv_abort(Rdzv *r, const char *why);

/* Closes the connections and frees r; NULL-safe. */
void rdzv_close(Rdzv *r);

int rdzv_rank(const Rdzv *r);
int rdzv_nranks(const Rdzv *r);

#endif
