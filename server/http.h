/* The HTTP front: libmicrohttpd, routing, authentication, body limits and
 * JSON error replies. Each connection has its own thread (MHD's
 * thread-per-connection mode): it parses the request, hands a Job to the
 * engine and blocks until the reply is committed, which keeps long polls and
 * group commit simple. Static dashboard files are served from one folder. */
#ifndef RUNG_SERVER_HTTP_H
#define RUNG_SERVER_HTTP_H

#include <stddef.h>

#include "engine.h"
#include "error.h"
#include "stats.h"

typedef struct HttpConfig {
    const char *bind;      /* address to listen on, e.g. "127.0.0.1" or "::1" */
    int port;              /* 0: pick a free one */
    const char *token;     /* NULL or "": no authentication (loopback only) */
    const char *web_dir;   /* the dashboard's static files; may not exist */
    size_t max_body;       /* bytes; larger bodies get 413 */
} HttpConfig;

typedef struct Http Http;

/* Binds, listens and starts serving. Refuses (RUNG_E_INVALID_ARGUMENT) a
 * non-loopback address without a token. *port gets the bound port. */
int http_start(const HttpConfig *cfg, Engine *engine, Stats *stats, Http **out, int *port,
               RungError *err);
/* Stops accepting, closes idle connections and waits for busy ones. */
void http_stop(Http *http);

#endif
