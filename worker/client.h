/* The worker's HTTP client: JSON requests to rungd over libcurl.
 *
 * One Client per thread (docs/architecture.md: no curl handle is shared by two threads);
 * each keeps its connection alive between requests. Requests carry
 * `Authorization: Bearer <token>` when a token is set.
 *
 * Failure policy (a ClientCall with retry set): a transport error (refused
 * connection, reset, timeout), a 5xx (503 while the daemon drains) and a 429
 * are retried with backoff (backoff.h) until a reply comes or the caller's
 * cancel function says stop; any other status is final and handed back, so a
 * 4xx is never retried; with several addresses, see client_new. The
 * server is idempotent where we retry (reports by
 * step, finish, heartbeat; a checkpoint PUT replaces the same file), so a
 * retry after an unanswered request is safe. A call may bound its retries
 * (max_retries). */
#ifndef RUNG_WORKER_CLIENT_H
#define RUNG_WORKER_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport.h"

#define CLIENT_MAX_REPLY (8 << 20) /* bytes of a reply body; a trial object is far smaller */
#define CLIENT_TIMEOUT_MS 15000    /* one request without a long poll */
#define CLIENT_CONNECT_MS 3000     /* loopback or LAN: a longer connect means no daemon */
/* A file transfer (client_put_file, client_get_file) has no time limit of
 * its own: it ends when fewer than CLIENT_STALL_BYTES a second went for
 * CLIENT_STALL_S seconds (rungd writing and fsyncing a big file after the
 * upload included). */
#define CLIENT_STALL_S 60
#define CLIENT_STALL_BYTES 1024

typedef struct Client Client;

/* A reply. status 0 means no reply arrived (error says why). */
typedef struct ClientReply {
    long status;     /* HTTP status, or 0 */
    json_t *body;    /* new reference (free with client_reply_clear), NULL when empty or not JSON */
    char error[320]; /* transport error, or the error reply's "code: message"; "" on 2xx */
} ClientReply;

/* Says whether to give up now (checked between retries and while a
 * request is in flight; a request in flight is aborted). */
typedef bool (*ClientCancel)(void *arg);

typedef struct ClientCall {
    long timeout_ms;     /* whole request; 0 = CLIENT_TIMEOUT_MS (a file transfer: no
                            limit, but CLIENT_STALL_S without progress ends it) */
    bool retry;          /* retry transport errors, 5xx and 429 as above */
    int max_retries;     /* with retry: give up after this many retries (the last reply, or
                            status 0, is handed back); 0 = until a reply or a cancel */
    ClientCancel cancel; /* may be NULL */
    void *cancel_arg;
    const char *what; /* for log lines: "report of trial 5 step 3" */
} ClientCall;

/* base_url like "http://127.0.0.1:8080" (a trailing '/' is fine), or
 * several, comma-separated (common/servers.h): a leader and its standbys.
 * A request that cannot reach one, or that a standby answers (503, role
 * "standby"), goes at once to the leader it names when that one is in the
 * list, else to the next; after each has been tried, the backoff's sleep.
 * token may be NULL or "". NULL when out of memory or base_url is not such
 * a list. */
Client *client_new(const char *base_url, const char *token);
/* How every client of the process verifies an https:// rungd (--ca,
 * --insecure; common/transport.h). Call before the first client. */
void client_set_transport(const RungTransport *t);
void client_free(Client *c);

/* POSTs body (borrowed; NULL sends "{}") to base_url + path. Returns 0 when
 * a reply is in *out (any status: 2xx, a final 4xx, or a 5xx when not
 * retrying), -1 when canceled or, without retry, on a transport error (out
 * still says why). Clear *out with client_reply_clear in every case. */
int client_post(Client *c, const char *path, const json_t *body, const ClientCall *call,
                ClientReply *out);

/* PUTs the bytes of the file at file_path to base_url + path, streamed
 * from the file (never held in memory; read again from its start on a
 * retry), with `Content-Type: application/octet-stream` and
 * `X-Rung-Sha256: <sha256_hex>` (64 hex digits, sent in lowercase; the
 * caller's hash of the file). The reply is JSON, as with client_post;
 * returns as client_post does, and -1 (out->error says why, nothing sent)
 * when the file cannot be opened or read or sha256_hex is not a hash. */
int client_put_file(Client *c, const char *path, const char *file_path, const char *sha256_hex,
                    const ClientCall *call, ClientReply *out);

/* GETs base_url + path; a 200's body is streamed into the file dest_path
 * (made or truncated, mode 0600; not through a symbolic link), and no more
 * than max_bytes of it: a longer body aborts the transfer, is not retried,
 * and returns -1 (out->error says so). Any other status's body is read as
 * JSON into out, as with client_post. Returns as client_post does; -1 too
 * when dest_path cannot be written. dest_path holds the body only when 0
 * is returned with status 200; in every other case it is removed. */
int client_get_file(Client *c, const char *path, const char *dest_path, int64_t max_bytes,
                    const ClientCall *call, ClientReply *out);

void client_reply_clear(ClientReply *r);

/* Whether a status is worth retrying: 0 (no reply), 5xx, 429. */
bool client_retryable(long status);

#endif
