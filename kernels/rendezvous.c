/* The TCP rendezvous and its collectives; see rendezvous.h.
 *
 * Every socket is non-blocking and every wait is a poll() bounded by a
 * deadline on the monotonic clock, so nothing here can hang: a wait ends
 * with the data, with the peer's failure or closed connection, or with the
 * deadline, each a message naming the peer.
 *
 * After the hello, every message is a frame: a 24-byte header (magic,
 * version, kind, tag, length; big-endian) and `length` bytes. A
 * collective's frames carry the tag (operation << 32 | sequence number), so
 * that ranks which disagree on the order of collectives fail, naming both
 * operations, instead of reading each other's data as their own. */
#include "rendezvous.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x52445a56u /* "RDZV" */
#define VERSION 1
#define ORDER_MARK 0x01020304u /* in the machine's byte order: the byte order check */
#define HEADER_BYTES 24
#define HELLO_BYTES 16 /* rank, nranks, byte order mark, zero: 4 bytes each */
/* Connections accepted but not yet past their hello: every rank may be one
 * at once; more are strays (closed, oldest first). */
#define MAX_PENDING 64
/* How long a rank that reached rank 0 waits for its verdict beyond the join
 * deadline: rank 0 started listening before the connection, so its own
 * deadline comes at most join_s after it; this covers scheduling. */
#define VERDICT_GRACE_S 5.0
/* Rank 0 reads a large contribution in pieces of this size and folds each
 * piece in: a bounded buffer whatever the vector's size. */
#define CHUNK_BYTES ((size_t)1 << 16)
/* A connect attempt waits at most this long before trying again, and
 * retries back off from RETRY_MIN_S to RETRY_MAX_S. */
#define CONNECT_TRY_S 1.0
#define RETRY_MIN_S 0.02
#define RETRY_MAX_S 0.5
/* How long rdzv_abort waits to deliver its message to each peer, and to
 * read what the peers still send (so that closing does not reset the
 * connection before they read the message). */
#define ABORT_S 1.0
/* An address as messages print it: "[v6 address]:port" at most. */
#define NAME_BYTES 64
/* rank 0 names at most this many missing ranks, then "and N more". */
#define MAX_NAMED 16

enum { K_HELLO = 1, K_PAYLOAD, K_ACK, K_GO, K_DATA, K_ERROR };

/* Operations of the tag, for messages. */
enum { C_BCAST = 1, C_ALLGATHER, C_BARRIER, C_REDUCE }; /* C_REDUCE + RdzvOp */
static const char *const OP_NAMES[] = {"?",        "bcast",    "allgather", "barrier",
                                       "sum(f32)", "sum(f64)", "max(i64)",  "min(i64)"};

/* ERROR frame flag: the text is the whole message (a failed join), not a
 * rank's own failure to be prefixed with "rank N failed". */
#define ERR_WHOLE 1u

struct Rdzv {
    int rank, nranks;
    double op_s;
    double limit_s; /* what the step under way may take (join_s or op_s): a timeout names it */
    char where[NAME_BYTES + 256]; /* rank 0's "addr:port" */
    int *fd;                      /* rank 0: fd[q] leads to rank q; others: fd[0] to rank 0 */
    char (*peer)[NAME_BYTES];     /* rank 0: where each rank connected from */
    uint64_t seq;                 /* collectives done */
    pthread_mutex_t mu;           /* held by a collective; rdzv_check only tries it */
    int heard_rank;               /* a failure heard from a peer: its rank, else -1 */
    char heard[RDZV_MAX_TEXT];
};

/* ---- Time ---------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds until deadline for poll(): at least 1 while any time is
 * left, 0 once it has passed. */
static int ms_left(double deadline)
{
    double ms = ceil((deadline - now_s()) * 1000.0);
    if (ms <= 0)
        return 0;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- Bytes on the wire ----------------------------------------------------- */

static void put32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static void put64(unsigned char *b, uint64_t v)
{
    put32(b, (uint32_t)(v >> 32));
    put32(b + 4, (uint32_t)v);
}

static uint64_t get64(const unsigned char *b)
{
    return (uint64_t)get32(b) << 32 | get32(b + 4);
}

typedef struct Header {
    uint32_t magic;
    uint32_t version; /* 16 bits on the wire */
    uint32_t kind;    /* 16 bits on the wire */
    uint64_t tag;
    uint64_t len;
} Header;

static void put_header(unsigned char *b, int kind, uint64_t tag, uint64_t len)
{
    put32(b, MAGIC);
    b[4] = 0;
    b[5] = VERSION;
    b[6] = 0;
    b[7] = (unsigned char)kind;
    put64(b + 8, tag);
    put64(b + 16, len);
}

static Header get_header(const unsigned char *b)
{
    Header h = {.magic = get32(b),
                .version = (uint32_t)b[4] << 8 | b[5],
                .kind = (uint32_t)b[6] << 8 | b[7],
                .tag = get64(b + 8),
                .len = get64(b + 16)};
    return h;
}

/* Sends (out) or receives exactly len bytes by the deadline: 0, or -1 with
 * errno (ETIMEDOUT when the deadline passed; ECONNRESET when the peer
 * closed before all arrived). The socket may be non-blocking: a short
 * transfer waits in poll for the rest. */
static int transfer_all(int fd, char *p, size_t len, double deadline, bool out)
{
    while (len > 0) {
        ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0 && !out) {
            errno = ECONNRESET;
            return -1;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        int ms = ms_left(deadline);
        if (ms == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd pfd = {.fd = fd, .events = out ? POLLOUT : POLLIN};
        if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
            return -1;
    }
    return 0;
}

static int send_all(int fd, const void *buf, size_t len, double deadline)
{
    return transfer_all(fd, (char *)buf, len, deadline, true); /* send only reads it */
}

static int recv_all(int fd, void *buf, size_t len, double deadline)
{
    return transfer_all(fd, buf, len, deadline, false);
}

static void set_options(int fd)
{
    int one = 1;
    /* Frames are small and answered at once: no Nagle delay. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* "ip:port" of a socket address. */
static void name_of(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
{
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(buf, size, "?");
        return;
    }
    snprintf(buf, size, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

/* ---- Messages -------------------------------------------------------------- */

/* "rank 2 (10.0.0.7:41234)" on rank 0; "rank 0 at 10.0.0.5:29500" elsewhere. */
static void peer_name(const Rdzv *r, int q, char *buf, size_t size)
{
    if (r->rank == 0)
        snprintf(buf, size, "rank %d (%s)", q, r->peer[q]);
    else
        snprintf(buf, size, "rank 0 at %s", r->where);
}

/* The error of a failed wait on q: closed, silent past the deadline of a
 * step that could take limit_s (the join's or a collective's time, not what
 * was left of it when this wait began), or the system's word. */
static int io_error(const Rdzv *r, int q, int err, double limit_s, char *why, size_t size)
{
    char who[NAME_BYTES + 300];
    peer_name(r, q, who, sizeof who);
    if (err == ECONNRESET || err == EPIPE)
        snprintf(why, size,
                 "rendezvous: %s closed its connection (it exited, or its machine is "
                 "unreachable)",
                 who);
    else if (err == ETIMEDOUT)
        snprintf(why, size, "rendezvous: no answer from %s within %g s", who, limit_s);
    else
        snprintf(why, size, "rendezvous: talking to %s: %s", who, strerror(err));
    return -1;
}

static void say_heard(const Rdzv *r, bool whole, char *why, size_t size)
{
    if (whole)
        snprintf(why, size, "%s", r->heard);
    else
        snprintf(why, size, "rendezvous: rank %d failed: %s", r->heard_rank, r->heard);
}

static const char *op_name(uint64_t tag)
{
    uint32_t op = (uint32_t)(tag >> 32);
    return op < sizeof OP_NAMES / sizeof OP_NAMES[0] ? OP_NAMES[op] : "?";
}

/* Starts a step that may take limit_s (a join's or a collective's time):
 * its deadline, and what a timeout within it names (io_error). */
static double step_deadline(Rdzv *r, double limit_s)
{
    r->limit_s = limit_s;
    return now_s() + limit_s;
}

/* ---- Frames ---------------------------------------------------------------- */

static int send_frame(Rdzv *r, int q, int kind, uint64_t tag, const void *body, size_t len,
                      double deadline, char *why, size_t size)
{
    unsigned char h[HEADER_BYTES];
    put_header(h, kind, tag, len);
    if (send_all(r->fd[q], h, sizeof h, deadline) != 0 ||
        (len > 0 && send_all(r->fd[q], body, len, deadline) != 0))
        return io_error(r, q, errno, r->limit_s, why, size);
    return 0;
}

/* Reads the body of an ERROR frame of len bytes from q into r->heard;
 * sets *whole from its flags. -1 when it cannot be read. */
static int read_error(Rdzv *r, int q, uint64_t len, double deadline, bool *whole)
{
    unsigned char b[8 + RDZV_MAX_TEXT];
    if (len < 8 || len > sizeof b - 1 || recv_all(r->fd[q], b, (size_t)len, deadline) != 0)
        return -1;
    b[len] = '\0';
    uint32_t origin = get32(b);
    r->heard_rank = origin < (uint32_t)r->nranks ? (int)origin : q;
    *whole = (get32(b + 4) & ERR_WHOLE) != 0;
    snprintf(r->heard, sizeof r->heard, "%s", (const char *)b + 8);
    return 0;
}

/* Reads a frame header from q and checks that it is `kind` with `tag` and
 * `len` bytes to follow (which the caller then reads). A failure the peer
 * sent becomes the error. */
static int recv_expect(Rdzv *r, int q, int kind, uint64_t tag, uint64_t len, double deadline,
                       char *why, size_t size)
{
    unsigned char b[HEADER_BYTES];
    char who[NAME_BYTES + 300];
    if (recv_all(r->fd[q], b, sizeof b, deadline) != 0)
        return io_error(r, q, errno, r->limit_s, why, size);
    Header h = get_header(b);
    peer_name(r, q, who, sizeof who);
    if (h.magic != MAGIC || h.version != VERSION) {
        snprintf(why, size, "rendezvous: %s sent something that is not a rendezvous frame", who);
        return -1;
    }
    if (h.kind == K_ERROR) {
        bool whole = false;
        if (read_error(r, q, h.len, deadline, &whole) != 0) {
            snprintf(why, size, "rendezvous: %s failed (its message could not be read)", who);
            return -1;
        }
        say_heard(r, whole, why, size);
        return -1;
    }
    if ((int)h.kind != kind || h.tag != tag || h.len != len) {
        if (h.kind == K_DATA && kind == K_DATA)
            snprintf(why, size,
                     "rendezvous: %s is out of step: it sent %s #%llu of %llu bytes where rank "
                     "%d expected %s #%llu of %llu bytes",
                     who, op_name(h.tag), (unsigned long long)(h.tag & 0xffffffffu),
                     (unsigned long long)h.len, r->rank, op_name(tag),
                     (unsigned long long)(tag & 0xffffffffu), (unsigned long long)len);
        else
            snprintf(why, size,
                     "rendezvous: %s sent a frame of kind %u (%llu bytes) where kind %d "
                     "(%llu bytes) was expected",
                     who, h.kind, (unsigned long long)h.len, kind, (unsigned long long)len);
        return -1;
    }
    return 0;
}

static int recv_body(Rdzv *r, int q, void *buf, size_t len, double deadline, char *why, size_t size)
{
    if (recv_all(r->fd[q], buf, len, deadline) != 0)
        return io_error(r, q, errno, r->limit_s, why, size);
    return 0;
}

/* An ERROR frame: origin, flags, text. */
static size_t error_body(unsigned char *b, size_t cap, int origin, uint32_t flags, const char *text)
{
    size_t n = strlen(text);
    if (n > cap - 8)
        n = cap - 8;
    put32(b, (uint32_t)origin);
    put32(b + 4, flags);
    memcpy(b + 8, text, n);
    return 8 + n;
}

/* Sends an ERROR frame to each of the n descriptors (skipping -1), then
 * shuts their sending side and reads what they still send until they close
 * or ABORT_S passes: a close with unread data would reset the connection,
 * and a reset may throw away the message before the peer reads it. */
static void tell_and_drain(const int *fds, int n, int origin, uint32_t flags, const char *text)
{
    unsigned char body[8 + RDZV_MAX_TEXT - 1], h[HEADER_BYTES];
    size_t len = error_body(body, sizeof body, origin, flags, text);
    put_header(h, K_ERROR, 0, len);
    double deadline = now_s() + ABORT_S;
    for (int i = 0; i < n; i++) {
        if (fds[i] < 0)
            continue;
        if (send_all(fds[i], h, sizeof h, deadline) == 0)
            (void)send_all(fds[i], body, len, deadline);
        (void)shutdown(fds[i], SHUT_WR);
    }
    for (int i = 0; i < n; i++) {
        char sink[4096];
        while (fds[i] >= 0) {
            ssize_t got = recv(fds[i], sink, sizeof sink, 0);
            if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
                break;
            struct pollfd pfd = {.fd = fds[i], .events = POLLIN};
            int ms = ms_left(deadline);
            if (got < 0 && (ms == 0 || poll(&pfd, 1, ms) == 0))
                break;
        }
    }
}

/* ---- Setup and teardown -------------------------------------------------------- */

static Rdzv *rdzv_new(const RdzvConfig *c)
{
    Rdzv *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->rank = c->rank;
    r->nranks = c->nranks;
    r->op_s = c->op_s > 0 ? c->op_s : RDZV_OP_S;
    r->heard_rank = -1;
    /* An IPv6 literal in brackets, so that its port stands apart. */
    snprintf(r->where, sizeof r->where, strchr(c->addr, ':') ? "[%s]:%d" : "%s:%d", c->addr,
             c->port);
    r->fd = malloc((size_t)c->nranks * sizeof *r->fd);
    r->peer = calloc((size_t)c->nranks, sizeof *r->peer);
    if (r->fd == NULL || r->peer == NULL) {
        free(r->fd);
        free(r->peer);
        free(r);
        return NULL;
    }
    for (int q = 0; q < c->nranks; q++)
        r->fd[q] = -1;
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void rdzv_close(Rdzv *r)
{
    if (r == NULL)
        return;
    for (int q = 0; q < r->nranks; q++)
        if (r->fd[q] >= 0)
            close(r->fd[q]);
    pthread_mutex_destroy(&r->mu);
    free(r->fd);
    free(r->peer);
    free(r);
}

int rdzv_rank(const Rdzv *r)
{
    return r->rank;
}

int rdzv_nranks(const Rdzv *r)
{
    return r->nranks;
}

/* ---- Rank 0's join ------------------------------------------------------------ */

typedef struct Pending {
    int fd;
    size_t got;
    unsigned char buf[HEADER_BYTES + HELLO_BYTES];
    char from[NAME_BYTES];
} Pending;

static int listen_on(const RdzvConfig *c, const char *where, char *why, size_t size)
{
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int gai = getaddrinfo(c->addr, port, &hints, &res);
    if (gai != 0) {
        snprintf(why, size, "rendezvous: cannot resolve %s: %s", c->addr, gai_strerror(gai));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        /* A port whose previous user's connections linger in TIME_WAIT (a
         * retried gang on the same port) can be listened on again. */
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        int backlog = c->nranks < SOMAXCONN ? c->nranks : SOMAXCONN;
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(why, size, "rendezvous: cannot listen on %s: %s", where, strerror(err));
    return fd;
}

/* Fails the join on rank 0: every rank that arrived, and the process that
 * made it fail (extra, or -1), gets the message; all are closed. */
static int root_fail(Rdzv *r, int extra, char *why)
{
    int *fds = malloc((size_t)(r->nranks + 1) * sizeof *fds);
    if (fds != NULL) {
        int n = 0;
        for (int q = 1; q < r->nranks; q++)
            fds[n++] = r->fd[q];
        fds[n++] = extra;
        tell_and_drain(fds, n, 0, ERR_WHOLE, why);
        free(fds);
    }
    if (extra >= 0)
        close(extra);
    return -1;
}

/* The ranks that have not arrived, as "ranks 2, 3 of 4" or "rank 3 of 4". */
static void missing_ranks(const Rdzv *r, char *buf, size_t size)
{
    int missing = 0, named = 0;
    size_t n = 0;
    for (int q = 1; q < r->nranks; q++)
        missing += r->fd[q] < 0;
    n += (size_t)snprintf(buf, size, "%s ", missing == 1 ? "rank" : "ranks");
    for (int q = 1; q < r->nranks && n < size; q++) {
        if (r->fd[q] >= 0)
            continue;
        if (named == MAX_NAMED) {
            n += (size_t)snprintf(buf + n, size - n, " and %d more", missing - named);
            break;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s%d", named ? ", " : "", q);
        named++;
    }
    if (n < size)
        snprintf(buf + n, size - n, " of %d", r->nranks);
}

/* A complete hello from pending p: -1 (with the join failed) when it breaks
 * the rendezvous, 1 when p was not a rendezvous (dropped), 0 when its rank
 * has arrived. */
static int take_hello(Rdzv *r, Pending *p, char *why, size_t size)
{
    Header h = get_header(p->buf);
    const unsigned char *b = p->buf + HEADER_BYTES;
    uint32_t rank = get32(b), nranks = get32(b + 4), order;
    memcpy(&order, b + 8, sizeof order);
    if (h.kind != K_HELLO || h.len != HELLO_BYTES)
        return 1;
    if (h.version != VERSION)
        snprintf(why, size,
                 "rendezvous: the process at %s (rank %u) speaks rendezvous version %u, rank 0 "
                 "version %d: every node must run the same rung-train",
                 p->from, rank, h.version, VERSION);
    else if (nranks != (uint32_t)r->nranks)
        snprintf(why, size,
                 "rendezvous: rank %u (%s) was told there are %u ranks, rank 0 that there are "
                 "%d",
                 rank, p->from, nranks, r->nranks);
    else if (rank == 0 || rank >= (uint32_t)r->nranks)
        snprintf(why, size,
                 "rendezvous: the process at %s says it is rank %u of %d; ranks 1 to %d join "
                 "rank 0",
                 p->from, rank, r->nranks, r->nranks - 1);
    else if (order != ORDER_MARK)
        snprintf(why, size,
                 "rendezvous: rank %u (%s) runs on a machine of another byte order than rank "
                 "0's",
                 rank, p->from);
    else if (r->fd[rank] >= 0)
        snprintf(why, size, "rendezvous: rank %u arrived twice (from %s and from %s)", rank,
                 r->peer[rank], p->from);
    else {
        r->fd[rank] = p->fd;
        snprintf(r->peer[rank], sizeof r->peer[rank], "%s", p->from);
        p->fd = -1;
        return 0;
    }
    root_fail(r, p->fd, why);
    p->fd = -1;
    return -1;
}

static void drop_pending(Pending *pend, int *n, int i)
{
    if (pend[i].fd >= 0)
        close(pend[i].fd);
    pend[i] = pend[--*n];
}

/* Accepts the other ranks until all have said hello or the deadline. */
static int root_gather(Rdzv *r, const RdzvConfig *c, int lfd, char *why, size_t size)
{
    double join_s = c->join_s > 0 ? c->join_s : RDZV_JOIN_S;
    double deadline = step_deadline(r, join_s);
    Pending pend[MAX_PENDING];
    int n_pend = 0, arrived = 0, strays = 0;
    char stray_from[NAME_BYTES] = "";
    int rc = 0;
    while (arrived < r->nranks - 1) {
        int ms = ms_left(deadline);
        if (ms == 0) {
            char missing[256];
            missing_ranks(r, missing, sizeof missing);
            char extra[NAME_BYTES + 96] = "";
            if (strays > 0)
                snprintf(extra, sizeof extra,
                         "; %d other connection%s (from %s) did not speak the rendezvous", strays,
                         strays == 1 ? "" : "s", stray_from);
            snprintf(why, size, "rendezvous: %s did not arrive within %g s at %s%s", missing,
                     join_s, r->where, extra);
            rc = root_fail(r, -1, why);
            break;
        }
        struct pollfd pfd[MAX_PENDING + 1];
        pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int i = 0; i < n_pend; i++)
            pfd[i + 1] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
        if (poll(pfd, (nfds_t)n_pend + 1, ms) < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, size, "rendezvous: poll: %s", strerror(errno));
            rc = root_fail(r, -1, why);
            break;
        }
        /* The pending connections first: pfd[i + 1] matches pend[i] only
         * until the accepts below add to pend. Backwards, since a dropped
         * entry takes the last one's place. */
        for (int i = n_pend - 1; i >= 0 && rc == 0; i--) {
            if (!(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            Pending *p = &pend[i];
            ssize_t got = recv(p->fd, p->buf + p->got, sizeof p->buf - p->got, 0);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) { /* gone before its hello */
                drop_pending(pend, &n_pend, i);
                continue;
            }
            p->got += (size_t)got;
            if (p->got >= 4 && get32(p->buf) != MAGIC) {
                strays++;
                snprintf(stray_from, sizeof stray_from, "%s", p->from);
                drop_pending(pend, &n_pend, i);
                continue;
            }
            if (p->got < sizeof p->buf)
                continue;
            int t = take_hello(r, p, why, size);
            if (t < 0) {
                rc = -1;
                break;
            }
            if (t > 0) {
                strays++;
                snprintf(stray_from, sizeof stray_from, "%s", p->from);
            } else {
                arrived++;
            }
            drop_pending(pend, &n_pend, i);
        }
        if (rc != 0)
            break;
        if (!(pfd[0].revents & POLLIN))
            continue;
        for (;;) {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0)
                break; /* EAGAIN: none left; others (a connection reset while queued) too */
            if (n_pend == MAX_PENDING) { /* more connections than ranks: the oldest is a stray */
                strays++;
                snprintf(stray_from, sizeof stray_from, "%s", pend[0].from);
                drop_pending(pend, &n_pend, 0);
            }
            Pending *p = &pend[n_pend++];
            memset(p, 0, sizeof *p);
            p->fd = fd;
            set_options(fd);
            name_of((struct sockaddr *)&ss, sl, p->from, sizeof p->from);
        }
    }
    for (int i = 0; i < n_pend; i++)
        if (pend[i].fd >= 0)
            close(pend[i].fd);
    return rc;
}

static int join_root(Rdzv *r, const RdzvConfig *c, const void *payload, size_t len, char *why,
                     size_t size)
{
    int lfd = listen_on(c, r->where, why, size);
    if (lfd < 0)
        return -1;
    int rc = root_gather(r, c, lfd, why, size);
    close(lfd);
    if (rc != 0)
        return -1;
    /* Everyone is here: the payload, every acknowledgement, then "go". */
    double deadline = step_deadline(r, r->op_s);
    for (int q = 1; q < r->nranks; q++)
        if (send_frame(r, q, K_PAYLOAD, 0, payload, len, deadline, why, size) != 0)
            return -1;
    for (int q = 1; q < r->nranks; q++)
        if (recv_expect(r, q, K_ACK, 0, 0, deadline, why, size) != 0)
            return -1;
    for (int q = 1; q < r->nranks; q++)
        if (send_frame(r, q, K_GO, 0, NULL, 0, deadline, why, size) != 0)
            return -1;
    return 0;
}

/* ---- The other ranks' join ---------------------------------------------------- */

/* One attempt at every address of c->addr: a connected socket, or -1 with
 * *err set (0 when the name did not resolve: *gai then holds why). */
static int connect_once(const RdzvConfig *c, double deadline, int *err, int *gai)
{
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    *gai = getaddrinfo(c->addr, port, &hints, &res);
    if (*gai != 0) {
        *err = 0;
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            *err = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            int e = errno;
            if (e == EINPROGRESS) {
                /* An unreachable host would leave connect() waiting for
                 * minutes: each try is bounded, and retried. */
                double until = now_s() + CONNECT_TRY_S;
                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                int ready = poll(&pfd, 1, ms_left(until < deadline ? until : deadline));
                socklen_t sl = sizeof e;
                if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0)
                    e = errno;
                else if (ready == 0)
                    e = ETIMEDOUT;
                else if (ready < 0)
                    e = errno;
            }
            if (e != 0) {
                *err = e;
                close(fd);
                fd = -1;
            }
        }
    }
    freeaddrinfo(res);
    return fd;
}

static int join_leaf(Rdzv *r, const RdzvConfig *c, void *payload, size_t len, char *why,
                     size_t size)
{
    double join_s = c->join_s > 0 ? c->join_s : RDZV_JOIN_S;
    double deadline = step_deadline(r, join_s), wait = RETRY_MIN_S;
    int fd = -1, err = 0, gai = 0;
    for (;;) {
        fd = connect_once(c, deadline, &err, &gai);
        if (fd >= 0 || ms_left(deadline) == 0)
            break;
        double left = deadline - now_s();
        sleep_s(wait < left ? wait : left);
        wait = wait * 2 < RETRY_MAX_S ? wait * 2 : RETRY_MAX_S;
    }
    if (fd < 0) {
        snprintf(why, size,
                 "rendezvous: rank 0 at %s did not answer within %g s (rank %d of %d "
                 "kept trying: %s)",
                 r->where, join_s, r->rank, r->nranks, err ? strerror(err) : gai_strerror(gai));
        return -1;
    }
    set_options(fd);
    r->fd[0] = fd;

    unsigned char hello[HEADER_BYTES + HELLO_BYTES];
    put_header(hello, K_HELLO, 0, HELLO_BYTES);
    uint32_t order = ORDER_MARK;
    put32(hello + HEADER_BYTES, (uint32_t)r->rank);
    put32(hello + HEADER_BYTES + 4, (uint32_t)r->nranks);
    memcpy(hello + HEADER_BYTES + 8, &order, sizeof order);
    put32(hello + HEADER_BYTES + 12, 0);
    double verdict = now_s() + join_s + VERDICT_GRACE_S;
    if (send_all(fd, hello, sizeof hello, verdict) != 0)
        return io_error(r, 0, errno, join_s, why, size);
    /* Rank 0 answers when everyone has arrived, or fails the join and says
     * why; anything else on this port is not a rendezvous. */
    unsigned char b[HEADER_BYTES];
    if (recv_all(fd, b, sizeof b, verdict) != 0) {
        if (errno == ETIMEDOUT)
            snprintf(why, size,
                     "rendezvous: rank 0 at %s accepted rank %d but gave no verdict within %g s",
                     r->where, r->rank, join_s + VERDICT_GRACE_S);
        else
            snprintf(why, size,
                     "rendezvous: rank 0 at %s closed the connection before the rendezvous "
                     "completed (%s)",
                     r->where, strerror(errno));
        return -1;
    }
    Header h = get_header(b);
    if (h.magic != MAGIC) {
        snprintf(why, size,
                 "rendezvous: %s is not a rendezvous (it answered something else: is "
                 "MASTER_PORT another program's port?)",
                 r->where);
        return -1;
    }
    if (h.kind == K_ERROR) {
        bool whole = false;
        if (read_error(r, 0, h.len, verdict, &whole) != 0) {
            snprintf(why, size, "rendezvous: rank 0 at %s failed the join", r->where);
            return -1;
        }
        say_heard(r, whole, why, size);
        return -1;
    }
    if (h.version != VERSION || h.kind != K_PAYLOAD || h.len != len) {
        snprintf(why, size,
                 "rendezvous: rank 0 at %s answered version %u, kind %u, %llu bytes; rank %d "
                 "expected version %d, a payload of %zu bytes",
                 r->where, h.version, h.kind, (unsigned long long)h.len, r->rank, VERSION, len);
        return -1;
    }
    double deadline_op = step_deadline(r, r->op_s);
    if (recv_body(r, 0, payload, len, deadline_op, why, size) != 0 ||
        send_frame(r, 0, K_ACK, 0, NULL, 0, deadline_op, why, size) != 0 ||
        recv_expect(r, 0, K_GO, 0, 0, deadline_op, why, size) != 0)
        return -1;
    return 0;
}

int rdzv_join(const RdzvConfig *c, void *payload, size_t len, Rdzv **out, char *why, size_t size)
{
    *out = NULL;
    if (c->nranks < 1 || c->nranks > RDZV_MAX_RANKS || c->rank < 0 || c->rank >= c->nranks ||
        c->port < 1 || c->port > 65535 || c->addr == NULL || c->addr[0] == '\0' ||
        len > RDZV_MAX_PAYLOAD || (len > 0 && payload == NULL)) {
        snprintf(why, size,
                 "rendezvous: bad arguments (rank %d of %d, address %s, port %d, payload %zu "
                 "bytes)",
                 c->rank, c->nranks, c->addr ? c->addr : "(none)", c->port, len);
        return -1;
    }
    Rdzv *r = rdzv_new(c);
    if (r == NULL) {
        snprintf(why, size, "rendezvous: out of memory");
        return -1;
    }
    int rc = 0;
    if (c->nranks > 1)
        rc = c->rank == 0 ? join_root(r, c, payload, len, why, size)
                          : join_leaf(r, c, payload, len, why, size);
    if (rc != 0) {
        rdzv_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

/* ---- Collectives ------------------------------------------------------------------ */

static size_t elem_size(RdzvOp op)
{
    return op == RDZV_SUM_F32 ? sizeof(float) : 8;
}

/* dst op= src, n elements; memcpy keeps the byte buffers' alignment
 * irrelevant. */
static void fold(RdzvOp op, unsigned char *dst, const unsigned char *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (op == RDZV_SUM_F32) {
            float a, b;
            memcpy(&a, dst + i * 4, 4);
            memcpy(&b, src + i * 4, 4);
            a += b;
            memcpy(dst + i * 4, &a, 4);
        } else if (op == RDZV_SUM_F64) {
            double a, b;
            memcpy(&a, dst + i * 8, 8);
            memcpy(&b, src + i * 8, 8);
            a += b;
            memcpy(dst + i * 8, &a, 8);
        } else {
            int64_t a, b;
            memcpy(&a, dst + i * 8, 8);
            memcpy(&b, src + i * 8, 8);
            if (op == RDZV_MAX_I64 ? b > a : b < a)
                memcpy(dst + i * 8, &b, 8);
        }
    }
}

/* The collectives' common shape on the star: every rank but 0 sends
 * `up` bytes of `mine` to rank 0, which takes them in rank order (into
 * gather + q * up, or folded into `buf` with op); then rank 0 sends `down`
 * bytes of buf to all. */
typedef struct Collective {
    int kind;              /* C_* */
    RdzvOp op;             /* C_REDUCE */
    const void *mine;      /* what a rank sends up (up bytes) */
    size_t up;             /* bytes each rank sends */
    unsigned char *gather; /* C_ALLGATHER on rank 0: the contributions */
    void *buf;             /* the result, down bytes, sent down by rank 0 */
    size_t down;
} Collective;

static int collective(Rdzv *r, const Collective *col, char *why, size_t size)
{
    if (r->nranks == 1)
        return 0;
    pthread_mutex_lock(&r->mu);
    uint32_t opcode = (uint32_t)col->kind + (col->kind == C_REDUCE ? (uint32_t)col->op : 0);
    uint64_t tag = (uint64_t)opcode << 32 | (r->seq++ & 0xffffffffu);
    double deadline = step_deadline(r, r->op_s);
    int rc = 0;
    if (r->rank != 0) {
        rc = send_frame(r, 0, K_DATA, tag, col->mine, col->up, deadline, why, size);
        if (rc == 0)
            rc = recv_expect(r, 0, K_DATA, tag, col->down, deadline, why, size);
        if (rc == 0)
            rc = recv_body(r, 0, col->buf, col->down, deadline, why, size);
        pthread_mutex_unlock(&r->mu);
        return rc;
    }
    unsigned char *chunk = NULL;
    if (col->kind == C_REDUCE && col->up > 0 && (chunk = malloc(CHUNK_BYTES)) == NULL) {
        snprintf(why, size, "rendezvous: out of memory");
        rc = -1;
    }
    for (int q = 1; q < r->nranks && rc == 0; q++) {
        rc = recv_expect(r, q, K_DATA, tag, col->up, deadline, why, size);
        if (rc != 0)
            break;
        if (col->kind == C_ALLGATHER) {
            rc = recv_body(r, q, col->gather + (size_t)q * col->up, col->up, deadline, why, size);
        } else if (col->kind == C_REDUCE) {
            size_t es = elem_size(col->op);
            for (size_t at = 0; at < col->up && rc == 0; at += CHUNK_BYTES) {
                size_t n = col->up - at < CHUNK_BYTES ? col->up - at : CHUNK_BYTES;
                rc = recv_body(r, q, chunk, n, deadline, why, size);
                if (rc == 0)
                    fold(col->op, (unsigned char *)col->buf + at, chunk, n / es);
            }
        }
    }
    free(chunk);
    for (int q = 1; q < r->nranks && rc == 0; q++)
        rc = send_frame(r, q, K_DATA, tag, col->buf, col->down, deadline, why, size);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int rdzv_bcast(Rdzv *r, void *buf, size_t len, char *why, size_t size)
{
    Collective c = {.kind = C_BCAST, .mine = NULL, .up = 0, .buf = buf, .down = len};
    return collective(r, &c, why, size);
}

int rdzv_allgather(Rdzv *r, const void *mine, size_t len, void *all, char *why, size_t size)
{
    memmove((unsigned char *)all + (size_t)r->rank * len, mine, len);
    Collective c = {.kind = C_ALLGATHER,
                    .mine = mine,
                    .up = len,
                    .gather = all,
                    .buf = all,
                    .down = len * (size_t)r->nranks};
    return collective(r, &c, why, size);
}

int rdzv_allreduce(Rdzv *r, void *buf, size_t n, RdzvOp op, char *why, size_t size)
{
    size_t bytes = n * elem_size(op);
    Collective c = {
        .kind = C_REDUCE, .op = op, .mine = buf, .up = bytes, .buf = buf, .down = bytes};
    return collective(r, &c, why, size);
}

int rdzv_barrier(Rdzv *r, char *why, size_t size)
{
    Collective c = {.kind = C_BARRIER};
    return collective(r, &c, why, size);
}

/* ---- Failures ---------------------------------------------------------------------- */

int rdzv_check(Rdzv *r, char *why, size_t size)
{
    if (r == NULL || r->nranks == 1 || pthread_mutex_trylock(&r->mu) != 0)
        return 0;
    int rc = 0;
    for (int q = 0; q < r->nranks && rc == 0; q++) {
        if (r->fd[q] < 0)
            continue;
        struct pollfd pfd = {.fd = r->fd[q], .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0)
            continue;
        /* Looked at, not taken: a peer may already have sent the next
         * collective's frame, which that collective will read. */
        unsigned char b[HEADER_BYTES + 8 + RDZV_MAX_TEXT];
        ssize_t n = recv(r->fd[q], b, sizeof b - 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n <= 0) {
            rc = io_error(r, q, n == 0 ? ECONNRESET : errno, 0, why, size);
            break;
        }
        if ((size_t)n < HEADER_BYTES)
            continue;
        Header h = get_header(b);
        char who[NAME_BYTES + 300];
        peer_name(r, q, who, sizeof who);
        if (h.magic != MAGIC) {
            snprintf(why, size, "rendezvous: %s sent something that is not a rendezvous frame",
                     who);
            rc = -1;
        } else if (h.kind == K_ERROR && h.len >= 8 && (size_t)n >= HEADER_BYTES + h.len) {
            b[HEADER_BYTES + h.len] = '\0';
            uint32_t origin = get32(b + HEADER_BYTES);
            r->heard_rank = origin < (uint32_t)r->nranks ? (int)origin : q;
            snprintf(r->heard, sizeof r->heard, "%s", (const char *)b + HEADER_BYTES + 8);
            say_heard(r, (get32(b + HEADER_BYTES + 4) & ERR_WHOLE) != 0, why, size);
            rc = -1;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void rdzv_abort(Rdzv *r, const char *why)
{
    if (r == NULL || r->nranks == 1)
        return;
    pthread_mutex_lock(&r->mu);
    int origin = r->heard_rank >= 0 ? r->heard_rank : r->rank;
    const char *text = r->heard_rank >= 0 ? r->heard : why;
    /* The peers print "rendezvous: rank N failed: " before it. */
    if (strncmp(text, "rendezvous: ", 12) == 0)
        text += 12;
    tell_and_drain(r->fd, r->nranks, origin, 0, text);
    pthread_mutex_unlock(&r->mu);
}
