/* The HTTP front: libmicrohttpd, routing, authentication, body limits and
 * JSON error replies. MHD runs without threads of its own, in epoll mode,
 * driven by the engine's loop (EngineFront.run): a complete request becomes a Job
 * handed to the engine, and its connection is suspended until the engine has
 * committed and calls the job's on_done, which resumes it. Connections are
 * accepted here, limited (in all and per client address, with a deadline
 * for each request) and their request heads checked before MHD reads them,
 * so that every refusal is a JSON error (see http.c and http_screen.c). The
 * dashboard's files are served from one folder. The routes and their
 * handlers are a table the front is handed at start (HttpRoute). */
#ifndef RUNG_SERVER_HTTP_H
#define RUNG_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "error.h"
#include "stats.h"

/* Checks the head of a raw body (HttpRoute.raw_admit) before a byte of it
 * is read, on the engine thread: job has its ids and query; 0 lets it in,
 * else err says why (its code gives the status). */
typedef int (*HttpAdmitFn)(Engine *e, const Job *job, RungError *err);

/* One route of the table the front is handed (HttpConfig.routes): the
 * handlers know the front only through Job, and the front knows them only
 * through this table (server/api_routes.c holds rungd's). */
typedef struct HttpRoute {
    const char *method;
    const char *pattern; /* "{id}" matches a positive integer */
    JobFn fn;
    /* NULL: a JSON body. Else the body is bytes (application/octet-stream),
     * streamed to a file, and this checks its head first. */
    HttpAdmitFn raw_admit;
    bool report;   /* its latency is also rung_report_duration_seconds' */
    bool blob;     /* a raw body bounded by HttpConfig.max_blob, not max_checkpoint */
    Access access; /* who may use it (auth.h; docs/api.md, "Roles per route") */
} HttpRoute;

/* A bearer token that is not rungd's own: who it stands for, or
 * RUNG_E_UNAUTHORIZED (api_access_lookup). */
typedef int (*HttpLookupFn)(Engine *e, const char *token, Principal *who, RungError *err);
/* The dashboard's session of a cookie: who, or 401 (unknown, expired,
 * its token revoked), or 403 for a change (unsafe) whose csrf is not the
 * session's (api_session_lookup). */
typedef int (*HttpSessionFn)(Engine *e, const char *sid, const char *csrf, bool unsafe,
                             Principal *who, RungError *err);
/* Whether who may use a route of rule a with these path ids: 0, or an
 * error (403, 404) (api_access_check). */
typedef int (*HttpCheckFn)(Engine *e, Access a, const int64_t ids[2], const Principal *who,
                           RungError *err);

typedef struct HttpConfig {
    const char *bind;        /* address to listen on, e.g. "127.0.0.1" or "::1" */
    int port;                /* 0: pick a free one */
    const char *token;       /* NULL or "": no authentication (loopback only) */
    const char *old_token;   /* NULL, or a second token accepted while token is rotated in */
    const char *web_dir;     /* the dashboard's static files; may not exist */
    size_t max_body;         /* bytes; larger bodies get 413 */
    const char *data_dir;    /* rungd's data folder: checkpoint uploads go to its checkpoints/ */
    size_t max_checkpoint;   /* bytes of an uploaded checkpoint; larger get 413 */
    size_t max_blob;         /* bytes of an uploaded blob (HttpRoute.blob); larger get 413 */
    const HttpRoute *routes; /* borrowed; /healthz is answered outside it */
    size_t n_routes;
    bool tls;              /* HTTPS with http_tls.h's certificate (loaded before) */
    HttpLookupFn lookup;   /* users' tokens; NULL: only rungd's own token */
    HttpCheckFn check;     /* routes' rules; NULL: every principal may use every route */
    HttpSessionFn session; /* the dashboard's cookies; NULL: none */
    int listen_fd;         /* > 0: a socket http_listen bound already (a standby's) */
} HttpConfig;

typedef struct Http Http;

/* Binds and listens on cfg's address (bind, port, token): *fd and *port
 * get the socket and its port. Refuses (RUNG_E_INVALID_ARGUMENT) a
 * non-loopback address without a token. */
int http_listen(const HttpConfig *cfg, int *fd, int *port, RungError *err);
/* Binds and listens (or takes cfg->listen_fd), as http_listen. *port gets
 * the bound port. Nothing is served until the engine runs it. */
int http_start(const HttpConfig *cfg, Engine *engine, Stats *stats, Http **out, int *port,
               RungError *err);
/* The calls the engine's loop drives this front with (see EngineFront). */
void http_front(Http *http, EngineFront *out);
/* After engine_stop: closes every connection and frees. */
void http_stop(Http *http);

#endif
