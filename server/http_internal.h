/* The HTTP front's own header, shared by its files (http.h is the
 * front's interface): http.c, the MHD glue (start, stop, the request
 * callbacks); http_screen.c, connections and request heads before MHD
 * reads them; http_upload.c, raw bodies streamed to a file; http_static.c,
 * the dashboard's files; http_reply.c, the replies the front writes itself.
 * Calls go one way: http.c calls the others, and they all call
 * http_reply.c, which calls none of them. */
#ifndef RUNG_SERVER_HTTP_INTERNAL_H
#define RUNG_SERVER_HTTP_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "clock.h"
#include "http.h"

#define MAX_IDS 2         /* {id}s in one path */
#define MAX_QUERY_ARGS 32 /* query arguments kept per request */
/* Connections at once: each worker slot and dashboard tab holds one. */
#define CONNECTION_LIMIT 4096
/* Connections at once from one client address (an IPv6 /64): a quarter of
 * the whole, so that one host cannot take every connection, while a fleet
 * of workers behind one NAT address still fits. */
#define PER_ADDRESS_LIMIT 1024
/* Past this many connections at once, an address that holds its share of
 * CONNECTION_LIMIT (the limit divided among the addresses connected, one
 * more counted for a newcomer, at least FAIR_FLOOR) is refused first: a
 * burst from a few addresses then leaves room for every other client,
 * while below it one host's workers may hold up to PER_ADDRESS_LIMIT. */
#define FAIR_ABOVE (CONNECTION_LIMIT * 3 / 4)
#define FAIR_FLOOR 32
/* A request's head and body must arrive within this of its first byte (of
 * the accept, for a connection's first request). */
#define REQUEST_TIMEOUT_MS 10000
/* Idle keep-alive connections are closed after this; above the 30 s long poll. */
#define IDLE_TIMEOUT_S 120
/* A refused connection is read (and what it sends dropped) this long before
 * it is closed, so that closing with unread bytes does not reset the reply
 * away before the client reads it. */
#define LINGER_MS 2000
/* A request head (request line and headers) larger than this is refused
 * (431; 414 when the request line alone is), and so is a request target
 * longer than TARGET_MAX. */
#define HEAD_MAX 8192
#define TARGET_MAX 4096
/* Header lines, query arguments and cookies of one request: MHD keeps a
 * record of each in its per-connection pool (MHD_POOL_BYTES, 64 bytes a
 * record, beside a 16 KiB read buffer and a copy of the Cookie header), and
 * answers 431 in HTML once the pool is full. HEAD_MAX and MAX_FIELDS keep
 * every screened request within it. */
#define MAX_FIELDS 100
#define MHD_POOL_BYTES (32 * 1024)
#define ADDRESS_BUCKETS 1024


typedef enum {
    C_SCREEN, /* ours: waiting for a complete request head */
    C_LINGER, /* ours: refused, reading what is left before closing */
    C_MHD,    /* MHD's: reading a request, at the engine, or replying */
} ConnState;

/* One accepted connection, from accept to close. */
typedef struct Conn Conn;
struct Conn {
    int fd;
    ConnState state;
    bool in_mhd;  /* MHD has the socket (it closes it); C_SCREEN and
                   * C_LINGER then mean suspended by us */
    bool watched; /* in Http.epfd */
    bool idle;    /* C_SCREEN between requests: no byte of the next yet */
    /* MHD reads this connection's later requests itself: after a chunked
     * body (whose framing we do not follow), or when MHD has read bytes
     * past the requests we screened (a client that pipelines). They get
     * MHD's parsing and a 10 s inactivity timeout. */
    bool unscreened;
    bool done_listed;    /* on Http.done */
    int64_t deadline_ms; /* monotonic: the connection is cut then; 0: none */
    uint64_t expected;   /* bytes of the request heads and bodies handed to MHD */
    struct MHD_Connection *mhd;
    /* The raw upload MHD is reading on it: when the deadline cuts the
     * connection, its file goes at once, not when MHD next notices. */
    struct Request *raw;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    unsigned char key[16]; /* the client's address; for IPv6 its /64 */
    unsigned bucket;
    Conn *prev, *next;           /* Http.conns */
    Conn *addr_prev, *addr_next; /* Http.by_address[bucket] */
    Conn *done_next;             /* Http.done */
};

struct Http {
    struct MHD_Daemon *daemon;
    Engine *engine;
    Stats *stats;
    char *token;
    char *old_token;         /* NULL, or the token being rotated out */
    const HttpRoute *routes; /* HttpConfig's */
    bool tls;                /* HttpConfig's: connections go straight to MHD */
    HttpLookupFn lookup;     /* HttpConfig's */
    HttpCheckFn check;       /* HttpConfig's */
    HttpSessionFn session;   /* HttpConfig's */
    AuthThrottle throttle;   /* bad tokens by address (auth.h) */
    size_t n_routes;
    char *web_dir;
    size_t max_body;
    char *upload_dir;       /* where raw bodies are written as they arrive */
    size_t max_checkpoint;  /* bytes of a raw body */
    size_t max_blob;        /* bytes of a blob's raw body (HttpRoute.blob) */
    uint64_t raw_in_flight; /* bytes the raw bodies let in and not completed declared */
    int listen_fd;
    int epfd;           /* the listen socket, MHD's epoll fd, connections we watch */
    bool accept_paused; /* out of descriptors: until the next tick */
    bool resumed;       /* a connection was resumed outside MHD_run */
    int n_conns;
    int n_addresses; /* distinct Conn.key among conns */
    Conn *conns;
    Conn *by_address[ADDRESS_BUCKETS];
    Conn *done;   /* connections whose request MHD completed this run */
    Conn *adding; /* the one MHD_add_connection is taking */
};

/* Per-request state: made when MHD has the request line, freed when MHD
 * completes the request. */
typedef struct Request {
    Job job; /* first: on_done gets the Job and finds the Request */
    struct MHD_Connection *connection;
    Conn *conn;
    int64_t t0; /* monotonic ns at the first callback */
    const HttpRoute *route;
    int64_t ids[MAX_IDS];
    char *body;
    size_t len, cap;
    bool bad_target; /* the request target encodes a control byte */
    bool started;    /* the access handler has seen it */
    bool too_large;
    bool submitted; /* the job went to the engine */
    bool healthz;   /* GET /healthz, answered once the request has arrived */
    bool answered;  /* the engine is done with it */
    /* A raw body (HttpRoute.raw_admit): the file it goes to, and its SHA-256 so far. */
    int fd;
    char tmp[PATH_MAX];
    EVP_MD_CTX *sha;
    uint64_t raw_declared; /* its Content-Length, counted in Http.raw_in_flight */
    int64_t raw_t0_ms;     /* when it was let in (monotonic) */
    bool raw_cut;          /* cut by its deadline: later pieces are refused */
} Request;

/* The largest raw body any route takes. */
static inline size_t http_max_raw(const Http *h)
{
    return h->max_blob > h->max_checkpoint ? h->max_blob : h->max_checkpoint;
}

static inline int64_t mono_ms(void)
{
    return rung_mono_ns() / 1000000;
}

/* ---- http_reply.c ---- */

/* Queues a reply on c: data (malloc'd, or NULL for none) of type. */
enum MHD_Result http_send_buffer(struct MHD_Connection *c, int status, char *data, size_t len,
                                 const char *type);
/* Queues body (stolen; NULL: no body) as the JSON reply. */
enum MHD_Result http_send_json(struct MHD_Connection *c, int status, json_t *body);
/* Queues an error reply of docs/api.md's shape (errjson.h builds every
 * one, the handlers' and the engine's too); field may be "" or NULL. */
enum MHD_Result http_send_error(struct MHD_Connection *c, int code, const char *field,
                                const char *message);
/* The JSON reply with a Set-Cookie header (the dashboard's session). */
enum MHD_Result http_send_json_cookie(struct MHD_Connection *c, int status, json_t *body,
                                      const char *cookie);
/* The same with a Retry-After header when retry_s > 0 (429). */
enum MHD_Result http_send_error_retry(struct MHD_Connection *c, int code, const char *field,
                                      const char *message, int64_t retry_s);
/* Queues the file a handler opened (job->reply_fd); MHD closes it. */
enum MHD_Result http_send_file(struct MHD_Connection *c, Job *job);
/* Writes a whole JSON error reply on a socket MHD is not using. */
void http_write_error(int fd, int status, int code, const char *message);

/* ---- http_static.c ---- */

/* Serves a file of the dashboard (url: "/" or a path under h->web_dir), or
 * the fallback page when the folder has no index.html, or 404. */
enum MHD_Result http_serve_static(Http *h, struct MHD_Connection *c, const char *url);

/* ---- http_upload.c ---- */

/* The head of a raw body: 0 when it is let in (its bytes counted in
 * h->raw_in_flight, its deadline set), else a refusal is queued (*rc). */
bool http_raw_admit(Http *h, struct MHD_Connection *c, Request *req, const HttpRoute *route,
                    const char *length, enum MHD_Result *rc);
/* One more piece of a raw body, into its file: -1 when it cannot be written. */
int http_raw_chunk(Http *h, Request *req, const char *data, size_t n);
/* The whole raw body is in: the handler's job->body, or NULL when it could
 * not be made durable. */
json_t *http_raw_done(struct MHD_Connection *c, Request *req);
/* Removes what is left of a raw body (its file, unless the handler moved it). */
void http_raw_discard(Request *req);

/* ---- http_screen.c ---- */

/* Accepts what waits on the listen socket, within the connection limits. */
void http_accept(Http *h);
/* Looks at the head waiting on a connection we watch (events: epoll's):
 * refuses it, waits for more, or hands the connection to MHD. */
void http_screen(Http *h, Conn *c, uint32_t events);
/* MHD_OPTION_NOTIFY_CONNECTION: MHD took or closed a socket. */
void http_on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
/* MHD completed a request on c and keeps the connection: screen the next
 * head ourselves, or leave it to MHD. */
void http_watch_next(Http *h, Conn *c);
/* Ends a connection that MHD is not serving. */
void http_conn_end(Http *h, Conn *c);
/* Forgets a connection whose socket is closed or about to be (by MHD). */
void http_conn_free(Http *h, Conn *c);
/* Reads and drops what the client has sent; false once it has closed. */
bool http_drain(int fd);

#endif
