/* The worker's HTTP client: JSON requests to rungd over libcurl.
 *
 * One Client per thread (docs/architecture.md: no curl handle is shared by two threads);
 * each keeps its connection alive between requests. Requests carry
 * `Authorization: Bearer <token>` when a token is set.
 *
 * Failure policy (client_call with retry): a transport error (refused
 * connection, reset, timeout), a 5xx (503 while the daemon drains) and a 429
 * are retried with backoff (backoff.h) until a reply comes or the caller's
 * cancel function says stop; any other status is final and handed back, so a
 * 4xx is never retried. The server is idempotent where we retry (reports by
 * step, finish, heartbeat), so a retry after an unanswered request is safe. */
#ifndef RUNG_WORKER_CLIENT_H
#define RUNG_WORKER_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define CLIENT_MAX_REPLY (8 << 20) /* bytes of a reply body; a trial object is far smaller */
#define CLIENT_TIMEOUT_MS 15000    /* one request without a long poll */
#define CLIENT_CONNECT_MS 3000     /* loopback or LAN: a longer connect means no daemon */

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
    long timeout_ms;     /* whole request; 0 = CLIENT_TIMEOUT_MS */
    bool retry;          /* retry transport errors, 5xx and 429 as above */
    ClientCancel cancel; /* may be NULL */
    void *cancel_arg;
    const char *what; /* for log lines: "report of trial 5 step 3" */
} ClientCall;

/* base_url like "http://127.0.0.1:8080" (a trailing '/' is fine); token may
 * be NULL or "". NULL when out of memory. */
Client *client_new(const char *base_url, const char *token);
void client_free(Client *c);

/* POSTs body (borrowed; NULL sends "{}") to base_url + path. Returns 0 when
 * a reply is in *out (any status: 2xx, a final 4xx, or a 5xx when not
 * retrying), -1 when canceled or, without retry, on a transport error (out
 * still says why). Clear *out with client_reply_clear in every case. */
int client_post(Client *c, const char *path, const json_t *body, const ClientCall *call,
                ClientReply *out);

void client_reply_clear(ClientReply *r);

/* Whether a status is worth retrying: 0 (no reply), 5xx, 429. */
bool client_retryable(long status);

#endif
