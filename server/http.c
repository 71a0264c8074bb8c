/* The HTTP front; see http.h.
 *
 * Connections are rungd's before they are libmicrohttpd's. MHD 0.9.75
 * answers a malformed request (request line, Content-Length, a URI or
 * headers too large, HTTP/2.0) with an HTML body of its own, and waits
 * 120 s for a request that arrives slowly, so rungd accepts each connection
 * itself: it counts it against the global and per-address limits, peeks
 * (MSG_PEEK) at its request head until the head is complete, answers a bad
 * one with a JSON error and closes, and hands a good one to MHD
 * (MHD_add_connection), which reads the same bytes again. When MHD has
 * completed a request on a kept-alive connection, the connection is
 * suspended and watched the same way until the next head is complete.
 * A request whose head and body are not in within REQUEST_TIMEOUT_MS is cut,
 * and one whose client closed its end before it was whole is cut at once
 * (http_screen, from epoll's EPOLLRDHUP), so that closed half-requests free
 * their slots. MHD notices an end that arrives while it reads a body, but
 * not one already there when it is handed the connection (a partial body
 * and its end then waited for the deadline); http_screen checks for it first.
 *
 * What MHD reads without this screen: the body of a chunked upload (its
 * chunk framing), and requests that follow a chunked one or that a client
 * pipelined before the previous reply (see Conn.unscreened).
 *
 * This file is the glue: listening, MHD's daemon and its callbacks, the
 * route lookup in the table it is handed (HttpConfig.routes), and the
 * calls the engine's loop drives (EngineFront). The screen is
 * http_screen.c, checkpoint uploads http_upload.c, the dashboard's files
 * http_static.c, and the replies the front writes itself http_reply.c. */
#include "http_internal.h"

#include <ctype.h>
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "ct.h"
#include "http_tls.h"

/* Matches url against pattern, collecting {id}s. */
static bool match(const char *pattern, const char *url, int64_t ids[MAX_IDS], char sha[65])
{
    int n = 0;
    const char *p = pattern, *u = url;
    while (*p && *u) {
        if (strncmp(p, "{sha256}", 8) == 0) { /* 64 hex digits, kept lowercase */
            int k = 0;
            for (; k < 64 && isxdigit((unsigned char)u[k]); k++)
                sha[k] = (char)tolower((unsigned char)u[k]);
            if (k != 64 || (u[64] != '/' && u[64] != '\0'))
                return false;
            sha[64] = '\0';
            u += 64;
            p += 8;
            continue;
        }
        if (strncmp(p, "{id}", 4) == 0) {
            int64_t v = 0;
            int digits = 0;
            while (*u >= '0' && *u <= '9' && digits < 18) {
                v = v * 10 + (*u - '0');
                u++;
                digits++;
            }
            if (digits == 0 || v <= 0 || (*u != '/' && *u != '\0') || n >= MAX_IDS)
                return false;
            ids[n++] = v;
            p += 4;
            continue;
        }
        if (*p != *u)
            return false;
        p++;
        u++;
    }
    return *p == '\0' && (*u == '\0' || (u[0] == '/' && u[1] == '\0'));
}

/* Who a request is (docs/api.md, "Authentication"). rungd's own token (or
 * the old one during a rotation) is the bootstrap admin: both are compared
 * in constant time (common/ct.h), each whatever the other gave, so the
 * time says nothing. Any other bearer token is a user's, looked up by its
 * SHA-256 (HttpConfig.lookup). With no token of rungd's own, rungd
 * listens on loopback only and any request but a user's is the local admin.
 * Unknown tokens from one address are slowed (auth.h): 429 with *retry_s. */
static int authenticate(Http *h, const Request *req, struct MHD_Connection *c, const char *header,
                        bool unsafe, Principal *who, int64_t *retry_s, RungError *err)
{
    static const unsigned char no_key[16];
    const unsigned char *key = req->conn ? req->conn->key : no_key;
    memset(who, 0, sizeof *who);
    who->role = ROLE_ADMIN;
    *retry_s = 0;
    /* The dashboard's session cookie, when no token is sent (api_sessions.c). */
    const char *sid = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "rung_session");
    if (header == NULL && sid != NULL && sid[0] != '\0' && h->session != NULL) {
        int rc = h->session(h->engine, sid,
                            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-CSRF-Token"), unsafe,
                            who, err);
        /* An open rungd (no token of its own) takes a stale cookie, say
         * from before a restart, as no cookie: the local admin below. */
        if (rc == 0 || h->token != NULL || rc != RUNG_E_UNAUTHORIZED)
            return rc;
    }
    if (h->token == NULL) {
        /* Open to loopback clients (docs/api.md, "Authentication"): a
         * user's valid token acts as that user, anything else as the
         * local admin, as every request did before users. */
        if (header != NULL && strncmp(header, "Bearer ", 7) == 0 && h->lookup != NULL &&
            h->lookup(h->engine, header + 7, who, err) == 0)
            return 0;
        rung_error_clear(err);
        memset(who, 0, sizeof *who);
        who->role = ROLE_ADMIN;
        snprintf(who->name, sizeof who->name, "local");
        return 0;
    }
    if (header == NULL || strncmp(header, "Bearer ", 7) != 0)
        return rung_error_set(err, RUNG_E_UNAUTHORIZED, "",
                              "missing or wrong token: send Authorization: Bearer <token>");
    *retry_s = auth_throttle_wait(&h->throttle, key, mono_ms());
    if (*retry_s > 0)
        return rung_error_set(err, RUNG_E_TOO_MANY_REQUESTS, "",
                              "too many wrong tokens from this address: retry in %lld s",
                              (long long)*retry_s);
    bool own = rung_ct_equal(header + 7, h->token, HEAD_MAX);
    if (h->old_token)
        own |= rung_ct_equal(header + 7, h->old_token, HEAD_MAX);
    if (own) {
        snprintf(who->name, sizeof who->name, "bootstrap");
        return 0;
    }
    int rc = h->lookup ? h->lookup(h->engine, header + 7, who, err)
                       : rung_error_set(err, RUNG_E_UNAUTHORIZED, "",
                                        "missing or wrong token: send Authorization: Bearer "
                                        "<token>");
    /* Only unknown tokens count: guessing is what the wait slows, and a
     * worker still sending its revoked or expired token guesses nothing. */
    if (rc == RUNG_E_UNAUTHORIZED && who->token_id == 0)
        auth_throttle_fail(&h->throttle, key, mono_ms());
    return rc;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    json_t *q = cls;
    if (json_object_size(q) >= MAX_QUERY_ARGS)
        return MHD_NO;
    json_object_set_new(q, key, json_string(value ? value : ""));
    return MHD_YES;
}

/* ---- the access handler ---- */

/* application/json, alone or with parameters ("; charset=utf-8"), in any case. */
static bool is_json_type(const char *type)
{
    if (type == NULL)
        return true; /* clients that send none mean JSON here */
    if (strncasecmp(type, "application/json", 16) != 0)
        return false;
    const char *rest = type + 16;
    rest += strspn(rest, " \t");
    return *rest == '\0' || *rest == ';';
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Whether a raw request target encodes a control byte (%00 to %1F, %7F):
 * MHD decodes it into the C string of the path, where %00 ends it early. */
static bool encodes_control(const char *target)
{
    for (const char *p = strchr(target, '%'); p != NULL; p = strchr(p + 1, '%')) {
        int hi = hex_value(p[1]), lo = hi < 0 ? -1 : hex_value(p[2]);
        if (lo >= 0 && (hi * 16 + lo < 0x20 || hi * 16 + lo == 0x7f))
            return true;
    }
    return false;
}

/* The request has arrived (its body too, or it is answered without one):
 * its deadline no longer applies. */
static void request_in(Request *req)
{
    if (req->conn)
        req->conn->deadline_ms = 0;
}

static enum MHD_Result first_call(Http *h, struct MHD_Connection *c, Request *req, const char *url,
                                  const char *method)
{
    if (req->bad_target)
        return http_send_error(c, RUNG_E_INVALID_ARGUMENT, "",
                               "the request target encodes a control character (%00 to %1F, %7F)");
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/healthz") == 0) {
        /* Answered at the next call: MHD closes a connection whose reply
         * is queued before the request is read, and a prober's keep-alive
         * connection should stay open. */
        req->healthz = true;
        return MHD_YES;
    }
    bool api = strncmp(url, "/api/", 5) == 0;
    bool found_path = false;
    const HttpRoute *route = NULL;
    int64_t ids[MAX_IDS] = {0, 0};
    char sha[65] = "";
    for (size_t i = 0; i < h->n_routes && route == NULL; i++) {
        const HttpRoute *r = &h->routes[i];
        if (!match(r->pattern, url, ids, sha))
            continue;
        found_path = true;
        if (strcmp(r->method, method) == 0 ||
            (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0))
            route = r;
    }
    if (api) {
        RungError err;
        rung_error_clear(&err);
        int64_t retry_s;
        const char *header = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_AUTHORIZATION);
        if (authenticate(h, req, c, header, !get, &req->job.who, &retry_s, &err) ||
            (route != NULL && h->check != NULL &&
             h->check(h->engine, route->access, ids, &req->job.who, &err)))
            return http_send_error_retry(c, err.code, err.field, err.message, retry_s);
    }
    if (route == NULL) {
        if (found_path)
            return http_send_error(c, RUNG_E_METHOD_NOT_ALLOWED, "", "method not allowed here");
        if (!api && get)
            return http_serve_static(h, c, url);
        return http_send_error(c, RUNG_E_NOT_FOUND, "", "no such endpoint");
    }
    const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
    size_t limit = !route->raw_admit ? h->max_body : route->blob ? h->max_blob : h->max_checkpoint;
    if (length && strtoull(length, NULL, 10) > limit) {
        /* Refused before reading it: MHD closes the connection after this. */
        char msg[96];
        snprintf(msg, sizeof msg, "body larger than %zu bytes", limit);
        return http_send_error(c, RUNG_E_PAYLOAD_TOO_LARGE, "", msg);
    }
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_CONTENT_TYPE);
    if (route->raw_admit &&
        (type == NULL || (strncasecmp(type, "application/octet-stream", 24) != 0 &&
                          strncasecmp(type, "application/x-tar", 17) != 0)))
        return http_send_error(c, RUNG_E_UNSUPPORTED_MEDIA_TYPE, "",
                               "send the bytes with Content-Type: application/octet-stream "
                               "(or application/x-tar)");
    if (route->raw_admit) {
        /* Its ids and query now: the route's raw_admit reads them. */
        memcpy(req->job.ids, ids, sizeof req->job.ids);
        memcpy(req->job.sha256, sha, sizeof req->job.sha256);
        req->job.query = json_object();
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, req->job.query);
        enum MHD_Result rc;
        if (!http_raw_admit(h, c, req, route, length, &rc))
            return rc;
    }
    if ((strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0) && !is_json_type(type))
        return http_send_error(c, RUNG_E_UNSUPPORTED_MEDIA_TYPE, "",
                               "send JSON with Content-Type: application/json");
    /* Only now: a request with a route set goes to the engine once its body is in. */
    req->route = route;
    memcpy(req->ids, ids, sizeof ids);
    memcpy(req->job.sha256, sha, sizeof req->job.sha256);
    return MHD_YES;
}

/* The engine committed the job's batch: wake its connection, whose next
 * callback sends the reply. */
static void on_done(Job *job)
{
    Request *req = (Request *)job; /* job is the first member */
    req->answered = true;
    MHD_resume_connection(req->connection);
}

/* Whether the client of a parked request hung up: a peek at its socket
 * reads end-of-file (or an error) once it has. MHD does not watch a
 * suspended connection, and a reply written after the client's FIN still
 * "succeeds", so a trial would go to nobody. */
static bool client_gone(Job *job)
{
    Request *req = (Request *)job; /* job is the first member */
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(req->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL)
        return false;
    char byte;
    ssize_t n = recv(info->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static enum MHD_Result reply(Http *h, struct MHD_Connection *c, Request *req)
{
    Job *job = &req->job;
    enum MHD_Result rc;
    if (job->reply_fd > 0) {
        rc = http_send_file(c, job);
    } else if (job->text != NULL) {
        rc = http_send_buffer(c, job->status, job->text, job->text_len, job->content_type);
        job->text = NULL; /* MHD owns it now */
    } else {
        /* job->reply stays until the request completes: an undelivered
         * reply may need to be read back (engine_undelivered). */
        rc = job->set_cookie
                 ? http_send_json_cookie(c, job->status, json_incref(job->reply), job->set_cookie)
                 : http_send_json(c, job->status ? job->status : 500, json_incref(job->reply));
    }
    /* A long poll's wait for work is not latency: it is what the worker
     * asked for (wait_s), and would bury every other request's time. */
    int64_t ns = rung_mono_ns() - req->t0;
    stats_observe(&h->stats->request_latency, ns - job->parked_ns);
    if (req->route != NULL && req->route->report)
        stats_observe(&h->stats->report_latency, ns); /* its commit included */
    atomic_fetch_add_explicit(&h->stats->requests, 1, memory_order_relaxed);
    return rc;
}

static Conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* MHD has a request line (MHD_OPTION_URI_LOG_CALLBACK): uri is the target
 * as sent, before MHD decodes it. The Request made here is *con_cls. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    Request *req = calloc(1, sizeof *req);
    if (req == NULL)
        return NULL;
    req->connection = c;
    req->conn = conn_of(c);
    req->fd = -1;
    req->bad_target = uri != NULL && encodes_control(uri);
    /* A request that was not screened gets its deadline here. */
    if (req->conn && req->conn->deadline_ms == 0)
        req->conn->deadline_ms = mono_ms() + REQUEST_TIMEOUT_MS;
    return req;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    Http *h = cls;
    Request *req = *con_cls;
    if (req == NULL)
        return MHD_NO; /* out of memory at the request line */
    if (!req->started) {
        req->started = true;
        req->t0 = rung_mono_ns();
        /* Either queues a reply at once (401, 404, 413, ...) and leaves
         * req->route NULL, or sets req->route and waits for the body. */
        enum MHD_Result rc = first_call(h, c, req, url, method);
        if (req->route == NULL)
            request_in(req);
        return rc;
    }
    if (*upload_size > 0 && req->route != NULL && req->route->raw_admit) {
        if (!req->too_large && http_raw_chunk(h, req, upload_data, *upload_size) != 0)
            return MHD_NO; /* the file could not be written: the connection goes */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!req->too_large) {
            if (req->len + *upload_size > h->max_body) {
                req->too_large = true; /* chunked upload past the limit: drop it */
            } else {
                if (req->len + *upload_size + 1 > req->cap) {
                    size_t cap = req->cap ? req->cap : 4096;
                    while (cap < req->len + *upload_size + 1)
                        cap *= 2;
                    char *p = realloc(req->body, cap);
                    if (p == NULL)
                        return MHD_NO;
                    req->body = p;
                    req->cap = cap;
                }
                memcpy(req->body + req->len, upload_data, *upload_size);
                req->len += *upload_size;
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (req->route == NULL) {
        if (!req->healthz)
            return MHD_YES; /* a reply was queued at the first call */
        req->healthz = false;
        /* A store that stopped taking writes (store_fault) fails the probe. */
        const char *fault = store_fault(engine_store(h->engine));
        if (fault != NULL)
            return http_send_error(c, RUNG_E_UNAVAILABLE, "", fault);
        return http_send_json(c, 200, json_pack("{s:b}", "ok", 1));
    }
    request_in(req);
    if (req->too_large) {
        char msg[96];
        snprintf(msg, sizeof msg, "body larger than %zu bytes",
                 !req->route->raw_admit ? h->max_body
                 : req->route->blob     ? h->max_blob
                                        : h->max_checkpoint);
        return http_send_error(c, RUNG_E_PAYLOAD_TOO_LARGE, "", msg);
    }
    if (req->answered)
        return reply(h, c, req);
    if (req->submitted)
        return MHD_YES; /* spurious call while the engine works: keep waiting */
    Job *job = &req->job;
    job->fn = req->route->fn;
    job->on_done = on_done;
    job->client_gone = client_gone;
    memcpy(job->ids, req->ids, sizeof job->ids);
    if (req->route->raw_admit) {
        job->body = http_raw_done(c, req);
        if (job->body == NULL)
            return http_send_error(c, RUNG_E_INTERNAL, "", "the body could not be written to disk");
    } else if (req->len > 0) {
        json_error_t jerr;
        job->body = json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, &jerr);
        if (job->body == NULL) {
            char msg[256];
            snprintf(msg, sizeof msg, "body is not valid JSON: %s (line %d, column %d)", jerr.text,
                     jerr.line, jerr.column);
            return http_send_error(c, RUNG_E_BAD_JSON, "", msg);
        }
    }
    if (job->query == NULL) { /* a raw body's was read at its head */
        job->query = json_object();
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, job->query);
    }
    req->submitted = true;
    /* The handler runs now; the reply waits for the commit (on_done). */
    MHD_suspend_connection(c);
    engine_submit(h->engine, job);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    Http *h = cls;
    Request *req = *con_cls;
    /* The client left before the reply was out (a long poll whose worker
     * quit): what the reply handed out must come back. */
    if (req && req->answered && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        engine_undelivered(h->engine, &req->job);
    Conn *conn = conn_of(c);
    if (req) {
        if (conn && conn->raw == req)
            conn->raw = NULL;
        http_raw_discard(req);
        h->raw_in_flight -= req->raw_declared;
        json_decref(req->job.body);
        json_decref(req->job.query);
        json_decref(req->job.reply);
        free(req->job.text);
        free(req->job.set_cookie);
        free(req->body);
        free(req);
    }
    *con_cls = NULL;
    if (conn) {
        conn->deadline_ms = 0;
        /* If MHD keeps the connection (it closes it otherwise, before
         * MHD_run returns), front_run watches it for the next request. */
        if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && !conn->done_listed) {
            conn->done_listed = true;
            conn->done_next = h->done;
            h->done = conn;
        }
    }
}


static char listen_tag, mhd_tag; /* Http.epfd's own members */

/* ---- listening ---- */

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return (a >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

static int listen_on(const HttpConfig *cfg, int *fd_out, int *port_out, RungError *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int rc = getaddrinfo(cfg->bind, port, &hints, &res);
    if (rc != 0)
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "bind", "--bind %s: %s", cfg->bind,
                              gai_strerror(rc));
    bool has_token = cfg->token && cfg->token[0];
    if (!has_token && !is_loopback(res->ai_addr)) {
        freeaddrinfo(res);
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "bind",
                              "refusing to listen on %s without a token: set --token or "
                              "RUNG_TOKEN, or bind a loopback address",
                              cfg->bind);
    }
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    res->ai_protocol);
    int one = 1;
    /* A deep backlog: a burst of connections waits there, not refused. */
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, CONNECTION_LIMIT) != 0) {
        rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "port", "cannot listen on %s port %d: %m",
                       cfg->bind, cfg->port);
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return RUNG_E_INVALID_ARGUMENT;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    return 0;
}

int http_listen(const HttpConfig *cfg, int *fd, int *port, RungError *err)
{
    return listen_on(cfg, fd, port, err);
}

int http_start(const HttpConfig *cfg, Engine *engine, Stats *stats, Http **out, int *port,
               RungError *err)
{
    int fd = -1;
    if (cfg->listen_fd > 0) {
        fd = cfg->listen_fd;
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        getsockname(fd, (struct sockaddr *)&ss, &len);
        *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    } else if (listen_on(cfg, &fd, port, err) != 0) {
        return err->code;
    }
    Http *h = calloc(1, sizeof *h);
    if (h == NULL)
        abort();
    h->engine = engine;
    h->stats = stats;
    h->token = (cfg->token && cfg->token[0]) ? strdup(cfg->token) : NULL;
    h->lookup = cfg->lookup;
    h->tls = cfg->tls;
    h->check = cfg->check;
    h->session = cfg->session;
    h->old_token = (h->token && cfg->old_token && cfg->old_token[0]) ? strdup(cfg->old_token)
                                                                     : NULL;
    h->web_dir = cfg->web_dir ? strdup(cfg->web_dir) : NULL;
    h->routes = cfg->routes;
    h->n_routes = cfg->n_routes;
    h->max_body = cfg->max_body;
    h->max_checkpoint = cfg->max_checkpoint;
    h->max_blob = cfg->max_blob;
    size_t dlen = strlen(cfg->data_dir ? cfg->data_dir : ".") + sizeof "/checkpoints";
    h->upload_dir = malloc(dlen);
    if (h->upload_dir != NULL)
        snprintf(h->upload_dir, dlen, "%s/checkpoints", cfg->data_dir ? cfg->data_dir : ".");
    h->listen_fd = fd;
    /* No thread of MHD's own: the engine's loop runs it (epoll, external
     * mode), so a request costs no thread switch. MHD listens on nothing:
     * http_accept and http_screen hand it the connections. */
    /* Under TLS, GnuTLS asks http_tls.c for the certificate at each
     * handshake (a SIGHUP's new one is served to the next connection). */
    struct MHD_OptionItem tls_options[] = {{cfg->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK
                                                     : MHD_OPTION_END,
                                            0, (void *)(uintptr_t)http_tls_retrieve},
                                           {MHD_OPTION_END, 0, NULL}};
    h->daemon = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                                     MHD_USE_NO_LISTEN_SOCKET | (cfg->tls ? MHD_USE_TLS : 0),
                                 0, NULL, NULL, on_request, h, MHD_OPTION_NOTIFY_COMPLETED,
                                 on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, http_on_connection,
                                 h, MHD_OPTION_URI_LOG_CALLBACK, on_request_line, h,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MHD_POOL_BYTES,
                                 MHD_OPTION_ARRAY, tls_options, MHD_OPTION_END);
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    const union MHD_DaemonInfo *info =
        h->daemon ? MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &listen_tag};
    struct epoll_event mev = {.events = EPOLLIN, .data.ptr = &mhd_tag};
    if (h->daemon == NULL || h->epfd < 0 || info == NULL ||
        epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &lev) != 0 ||
        epoll_ctl(h->epfd, EPOLL_CTL_ADD, info->epoll_fd, &mev) != 0) {
        if (h->daemon)
            MHD_stop_daemon(h->daemon);
        if (h->epfd >= 0)
            close(h->epfd);
        close(fd);
        free(h->token);
        free(h->old_token);
        free(h->web_dir);
        free(h->upload_dir);
        free(h);
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "libmicrohttpd did not start");
    }
    *out = h;
    return 0;
}

static int front_epoll_fd(void *ctx)
{
    Http *h = ctx;
    return h->epfd;
}

static void front_run(void *ctx)
{
    Http *h = ctx;
    struct epoll_event ev[64];
    int n = epoll_wait(h->epfd, ev, 64, 0);
    for (int i = 0; i < n; i++) {
        void *p = ev[i].data.ptr;
        if (p == &listen_tag) {
            http_accept(h);
        } else if (p != &mhd_tag) {
            Conn *c = p;
            if (c->state == C_SCREEN)
                http_screen(h, c, ev[i].events);
            else if (c->state == C_LINGER && !http_drain(c->fd))
                http_conn_end(h, c);
        }
    }
    h->resumed = false;
    MHD_run(h->daemon);
    while (h->done != NULL) {
        Conn *c = h->done;
        h->done = c->done_next;
        c->done_listed = false;
        http_watch_next(h, c);
    }
}

static int64_t front_timeout_ms(void *ctx)
{
    Http *h = ctx;
    if (h->resumed)
        return 0; /* MHD has no wakeup of its own for it in this mode */
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(h->daemon, &ms) != MHD_YES)
        return -1;
    return ms > INT32_MAX ? INT32_MAX : (int64_t)ms;
}

static void front_quiesce(void *ctx)
{
    Http *h = ctx;
    if (h->listen_fd >= 0) {
        epoll_ctl(h->epfd, EPOLL_CTL_DEL, h->listen_fd, NULL);
        close(h->listen_fd);
        h->listen_fd = -1;
    }
}

/* Deadlines: a request not in on time, an idle connection, a refused one
 * done lingering. */
static void front_tick(void *ctx)
{
    Http *h = ctx;
    int64_t now = mono_ms();
    if (h->accept_paused && h->listen_fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listen_tag};
        h->accept_paused = epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->listen_fd, &ev) != 0;
    }
    for (Conn *c = h->conns, *next; c != NULL; c = next) {
        next = c->next;
        if (c->deadline_ms == 0 || now < c->deadline_ms)
            continue;
        if (c->state == C_MHD) {
            /* MHD is reading the request: it reads the end and closes.
             * An upload's partial file goes now, before the client can
             * see the cut. */
            if (c->raw != NULL) {
                c->raw->raw_cut = true;
                http_raw_discard(c->raw);
            }
            shutdown(c->fd, SHUT_RDWR);
            c->deadline_ms = 0;
        } else {
            http_conn_end(h, c);
        }
    }
}

void http_front(Http *h, EngineFront *out)
{
    *out = (EngineFront){.ctx = h,
                         .epoll_fd = front_epoll_fd,
                         .run = front_run,
                         .timeout_ms = front_timeout_ms,
                         .quiesce = front_quiesce,
                         .tick = front_tick};
}

void http_stop(Http *h)
{
    if (h == NULL)
        return;
    /* Ours are closed; those suspended by us are resumed for MHD to close
     * (MHD_stop_daemon must find none suspended). */
    for (Conn *c = h->conns, *next; c != NULL; c = next) {
        next = c->next;
        if (c->state != C_MHD)
            http_conn_end(h, c);
    }
    MHD_stop_daemon(h->daemon);
    while (h->conns != NULL)
        http_conn_free(h, h->conns);
    front_quiesce(h);
    close(h->epfd);
    free(h->token);
    free(h->old_token);
    free(h->web_dir);
    free(h->upload_dir);
    free(h);
}
