/* The HTTP front; see http.h. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "clock.h"

#define MAX_IDS 2             /* {id}s in one path */
#define MAX_QUERY_ARGS 32     /* query arguments kept per request */
/* Connections at once: each worker slot and dashboard tab holds one. */
#define CONNECTION_LIMIT 4096
/* Idle keep-alive connections are closed after this; above the 30 s long poll. */
#define IDLE_TIMEOUT_S 120

typedef struct Route {
    const char *method;
    const char *pattern; /* "{id}" matches a positive integer */
    JobFn fn;
} Route;

static const Route routes[] = {
    {"POST", "/api/v1/experiments", api_experiment_create},
    {"GET", "/api/v1/experiments", api_experiment_list},
    {"GET", "/api/v1/experiments/{id}", api_experiment_get},
    {"POST", "/api/v1/experiments/{id}/cancel", api_experiment_cancel},
    {"GET", "/api/v1/experiments/{id}/trials", api_experiment_trials},
    {"GET", "/api/v1/experiments/{id}/trials.csv", api_experiment_csv},
    {"GET", "/api/v1/experiments/{id}/curves", api_experiment_curves},
    {"GET", "/api/v1/trials/{id}", api_trial_get},
    {"GET", "/api/v1/trials/{id}/metrics", api_trial_metrics},
    {"POST", "/api/v1/trials/{id}/report", api_trial_report},
    {"POST", "/api/v1/trials/{id}/finish", api_trial_finish},
    {"POST", "/api/v1/workers", api_worker_register},
    {"GET", "/api/v1/workers", api_worker_list},
    {"POST", "/api/v1/workers/{id}/lease", api_worker_lease},
    {"POST", "/api/v1/workers/{id}/heartbeat", api_worker_heartbeat},
    {"GET", "/metrics", api_prometheus},
};

struct Http {
    struct MHD_Daemon *daemon;
    Engine *engine;
    Stats *stats;
    char *token;
    char *web_dir;
    size_t max_body;
};

/* Per-request state: made on the first callback, freed when MHD completes. */
typedef struct Request {
    Job job;               /* first: on_done gets the Job and finds the Request */
    struct MHD_Connection *connection;
    int64_t t0;            /* monotonic ns at the first callback */
    const Route *route;
    int64_t ids[MAX_IDS];
    char *body;
    size_t len, cap;
    bool too_large;
    bool submitted;        /* the job went to the engine */
    bool answered;         /* the engine is done with it */
} Request;

/* Matches url against pattern, collecting {id}s. */
static bool match(const char *pattern, const char *url, int64_t ids[MAX_IDS])
{
    int n = 0;
    const char *p = pattern, *u = url;
    while (*p && *u) {
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

/* Constant-time comparison of the Authorization header with "Bearer <token>". */
static bool authorized(const Http *h, const char *header)
{
    if (h->token == NULL)
        return true;
    if (header == NULL || strncmp(header, "Bearer ", 7) != 0)
        return false;
    const char *given = header + 7;
    size_t n = strlen(h->token), m = strlen(given);
    unsigned diff = (unsigned)(n != m);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)h->token[i] ^ (unsigned char)(i < m ? given[i] : 0);
    return diff == 0;
}

static enum MHD_Result send_buffer(struct MHD_Connection *c, int status, char *data, size_t len,
                                   const char *type)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, data, data ? MHD_RESPMEM_MUST_FREE
                                                        : MHD_RESPMEM_PERSISTENT);
    if (r == NULL)
        return MHD_NO;
    if (type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    /* The dashboard and the API are dynamic: no cache may keep them. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, json_t *body)
{
    if (body == NULL)
        return send_buffer(c, status, NULL, 0, NULL);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL)
        return MHD_NO;
    return send_buffer(c, status, text, strlen(text), "application/json; charset=utf-8");
}

/* The one builder of error replies outside the engine. */
static enum MHD_Result send_error(struct MHD_Connection *c, int code, const char *field,
                                  const char *message)
{
    json_t *e = json_pack("{s:s, s:s}", "code", rung_error_string(code), "message", message);
    if (field && field[0])
        json_object_set_new(e, "field", json_string(field));
    return send_json(c, rung_error_status(code), json_pack("{s:o}", "error", e));
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

/* ---- static files ---- */

static const char *mime_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot == NULL)
        return "application/octet-stream";
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},  {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"}, {".png", "image/png"},
        {".json", "application/json; charset=utf-8"}, {".ico", "image/x-icon"},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

static const char fallback_page[] =
    "<!doctype html><meta charset=utf-8><title>Rung</title>"
    "<h1>Rung</h1><p>rungd is running. The dashboard's files were not found in its "
    "--web-dir; the REST API is at <code>/api/v1</code> (try "
    "<a href=\"/api/v1/experiments\">/api/v1/experiments</a>).</p>";

/* Serves a file of web_dir. Paths are checked by character and segment so
 * that nothing outside the folder can be named (no "..", no hidden files). */
static enum MHD_Result serve_static(Http *h, struct MHD_Connection *c, const char *url)
{
    const char *rel = strcmp(url, "/") == 0 ? "/index.html" : url;
    bool ok = strlen(rel) < 256;
    for (const char *p = rel; ok && *p; p++) {
        char ch = *p;
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '/' || ch == '-' || ch == '_' || ch == '.';
        if (ch == '/' && p[1] == '.')
            ok = false; /* "..", "./" and dot files */
    }
    if (ok && h->web_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", h->web_dir, rel);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
            if (r == NULL) {
                close(fd);
                return MHD_NO;
            }
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, mime_of(path));
            MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
            enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
            MHD_destroy_response(r);
            return rc;
        }
        if (fd >= 0)
            close(fd);
    }
    if (strcmp(rel, "/index.html") == 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(
            sizeof fallback_page - 1, (void *)fallback_page, MHD_RESPMEM_PERSISTENT);
        if (r == NULL)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
        enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return rc;
    }
    return send_error(c, RUNG_E_NOT_FOUND, "", "no such file");
}

/* ---- the access handler ---- */

static bool is_json_type(const char *type)
{
    if (type == NULL)
        return true; /* clients that send none mean JSON here */
    return strncasecmp(type, "application/json", 16) == 0;
}

static enum MHD_Result first_call(Http *h, struct MHD_Connection *c, Request *req,
                                  const char *url, const char *method)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/healthz") == 0)
        return send_json(c, 200, json_pack("{s:b}", "ok", 1));
    bool api = strncmp(url, "/api/", 5) == 0;
    bool found_path = false;
    const Route *route = NULL;
    int64_t ids[MAX_IDS] = {0, 0};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && route == NULL; i++) {
        if (!match(routes[i].pattern, url, ids))
            continue;
        found_path = true;
        if (strcmp(routes[i].method, method) == 0 ||
            (strcmp(method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0))
            route = &routes[i];
    }
    if (api && !authorized(h, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                          MHD_HTTP_HEADER_AUTHORIZATION)))
        return send_error(c, RUNG_E_UNAUTHORIZED, "",
                          "missing or wrong token: send Authorization: Bearer <token>");
    if (route == NULL) {
        if (found_path)
            return send_error(c, RUNG_E_METHOD_NOT_ALLOWED, "", "method not allowed here");
        if (!api && get)
            return serve_static(h, c, url);
        return send_error(c, RUNG_E_NOT_FOUND, "", "no such endpoint");
    }
    const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > h->max_body) {
        /* Refused before reading it: MHD closes the connection after this. */
        char msg[96];
        snprintf(msg, sizeof msg, "body larger than %zu bytes", h->max_body);
        return send_error(c, RUNG_E_PAYLOAD_TOO_LARGE, "", msg);
    }
    if (strcmp(method, "POST") == 0 &&
        !is_json_type(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_CONTENT_TYPE)))
        return send_error(c, RUNG_E_UNSUPPORTED_MEDIA_TYPE, "",
                          "send JSON with Content-Type: application/json");
    /* Only now: a request with a route set goes to the engine once its body is in. */
    req->route = route;
    memcpy(req->ids, ids, sizeof ids);
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
    if (job->text != NULL) {
        rc = send_buffer(c, job->status, job->text, job->text_len, job->content_type);
        job->text = NULL; /* MHD owns it now */
    } else {
        /* job->reply stays until the request completes: an undelivered
         * reply may need to be read back (engine_undelivered). */
        rc = send_json(c, job->status ? job->status : 500, json_incref(job->reply));
    }
    stats_observe(&h->stats->request_latency, rung_mono_ns() - req->t0);
    atomic_fetch_add_explicit(&h->stats->requests, 1, memory_order_relaxed);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    Http *h = cls;
    Request *req = *con_cls;
    if (req == NULL) {
        req = calloc(1, sizeof *req);
        if (req == NULL)
            return MHD_NO;
        req->t0 = rung_mono_ns();
        req->connection = c;
        *con_cls = req;
        /* Either queues a reply at once (401, 404, 413, ...) and leaves
         * req->route NULL, or sets req->route and waits for the body. */
        return first_call(h, c, req, url, method);
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
    if (req->route == NULL)
        return MHD_YES; /* a reply was queued at the first call */
    if (req->too_large) {
        char msg[96];
        snprintf(msg, sizeof msg, "body larger than %zu bytes", h->max_body);
        return send_error(c, RUNG_E_PAYLOAD_TOO_LARGE, "", msg);
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
    if (req->len > 0) {
        json_error_t jerr;
        job->body = json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, &jerr);
        if (job->body == NULL) {
            char msg[256];
            snprintf(msg, sizeof msg, "body is not valid JSON: %s (line %d, column %d)",
                     jerr.text, jerr.line, jerr.column);
            return send_error(c, RUNG_E_BAD_JSON, "", msg);
        }
    }
    job->query = json_object();
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, job->query);
    req->submitted = true;
    /* The handler runs now; the reply waits for the commit (on_done). */
    MHD_suspend_connection(c);
    engine_submit(h->engine, job);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    Http *h = cls;
    Request *req = *con_cls;
    /* The client left before the reply was out (a long poll whose worker
     * quit): what the reply handed out must come back. */
    if (req && req->answered && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        engine_undelivered(h->engine, &req->job);
    if (req) {
        json_decref(req->job.body);
        json_decref(req->job.query);
        json_decref(req->job.reply);
        free(req->job.text);
        free(req->body);
        free(req);
    }
    *con_cls = NULL;
}

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
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
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
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 512) != 0) {
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

int http_start(const HttpConfig *cfg, Engine *engine, Stats *stats, Http **out, int *port,
               RungError *err)
{
    int fd = -1;
    if (listen_on(cfg, &fd, port, err) != 0)
        return err->code;
    Http *h = calloc(1, sizeof *h);
    if (h == NULL)
        abort();
    h->engine = engine;
    h->stats = stats;
    h->token = (cfg->token && cfg->token[0]) ? strdup(cfg->token) : NULL;
    h->web_dir = cfg->web_dir ? strdup(cfg->web_dir) : NULL;
    h->max_body = cfg->max_body;
    /* No thread of MHD's own: the engine's loop runs it (epoll, external
     * mode), so a request costs no thread switch. */
    h->daemon = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request,
        h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)IDLE_TIMEOUT_S, MHD_OPTION_END);
    if (h->daemon == NULL) {
        close(fd);
        free(h->token);
        free(h->web_dir);
        free(h);
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "libmicrohttpd did not start");
    }
    *out = h;
    return 0;
}

static int front_epoll_fd(void *ctx)
{
    Http *h = ctx;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

static void front_run(void *ctx)
{
    Http *h = ctx;
    MHD_run(h->daemon);
}

static int64_t front_timeout_ms(void *ctx)
{
    Http *h = ctx;
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(h->daemon, &ms) != MHD_YES)
        return -1;
    return ms > INT32_MAX ? INT32_MAX : (int64_t)ms;
}

static void front_quiesce(void *ctx)
{
    Http *h = ctx;
    MHD_socket fd = MHD_quiesce_daemon(h->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

void http_front(Http *h, EngineFront *out)
{
    *out = (EngineFront){.ctx = h,
                         .epoll_fd = front_epoll_fd,
                         .run = front_run,
                         .timeout_ms = front_timeout_ms,
                         .quiesce = front_quiesce,
                         .tick = NULL};
}

void http_stop(Http *h)
{
    if (h == NULL)
        return;
    MHD_stop_daemon(h->daemon);
    free(h->token);
    free(h->web_dir);
    free(h);
}
