/* JSON over libcurl with retries, and file transfers; see client.h. */
#include "client.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "servers.h"
#include "clock.h"
#include "log.h"

/* While the daemon stays away, repeat the warning this often, not per retry. */
#define RETRY_LOG_EVERY_NS (30LL * 1000000000LL)
/* Sleeps between retries are cut into slices this long to notice a cancel. */
#define SLEEP_SLICE_MS 50

struct Client {
    CURL *curl;
    struct curl_slist *headers; /* JSON requests' */
    char *auth;                 /* "Authorization: Bearer <token>", or NULL */
    RungServers servers;        /* rungd's addresses (servers.h) */
    int cur;                    /* the one talked to */
    const char *base;           /* servers.url[cur]: no trailing '/' */
    char *buf;                  /* reply body of the request in flight */
    size_t len, cap;
    bool too_large;
    ClientCancel cancel; /* of the request in flight */
    void *cancel_arg;
    uint64_t rng; /* backoff jitter */
    char errbuf[CURL_ERROR_SIZE];
    /* A file transfer in flight (client_put_file, client_get_file). */
    int up_fd;             /* the body's file, or -1 */
    int64_t up_size;       /* its length */
    int64_t up_off;        /* the next byte to send */
    int up_errno;          /* a read of it failed */
    int down_fd;           /* a 200's body goes here, or -1 */
    int64_t down_max;      /* at most this many bytes of it */
    int64_t down_got;      /* written so far */
    bool down_over;        /* it was longer than down_max */
    int down_errno;        /* a write failed */
    const char *down_path; /* for messages */
};

/* One request's body and headers. */
typedef struct Req {
    const char *payload;        /* JSON POST body, or NULL */
    struct curl_slist *headers; /* this request's headers */
    bool put;                   /* PUT of c->up_fd */
    bool get;                   /* GET into c->down_fd */
} Req;

/* Set once at start, before any thread: how https:// is verified. */
static RungTransport transport;

void client_set_transport(const RungTransport *t)
{
    transport = *t;
}

Client *client_new(const char *base_url, const char *token)
{
    Client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->up_fd = c->down_fd = -1;
    c->curl = curl_easy_init();
    char why[300];
    if (c->curl == NULL || rung_servers_parse(base_url, &c->servers, why, sizeof why) != 0) {
        client_free(c);
        return NULL;
    }
    c->base = c->servers.url[0];
    if (token && token[0]) {
        size_t len = strlen(token) + 32;
        c->auth = malloc(len);
        if (c->auth == NULL) {
            client_free(c);
            return NULL;
        }
        snprintf(c->auth, len, "Authorization: Bearer %s", token);
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = h ? curl_slist_append(h, "Accept: application/json") : NULL;
    /* No "Expect: 100-continue" round trip before bodies over 1 KiB. */
    h = h ? curl_slist_append(h, "Expect:") : NULL;
    if (h && c->auth) {
        struct curl_slist *h2 = curl_slist_append(h, c->auth);
        if (h2 == NULL) {
            curl_slist_free_all(h);
            h = NULL;
        }
    }
    if (h == NULL) {
        client_free(c);
        return NULL;
    }
    c->headers = h;
    c->rng = backoff_seed((uint64_t)rung_mono_ns() ^ ((uint64_t)getpid() << 32) ^
                          (uint64_t)(uintptr_t)c);
    return c;
}

void client_free(Client *c)
{
    if (c == NULL)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    free(c->auth);
    free(c->buf);
    free(c);
}

void client_reply_clear(ClientReply *r)
{
    json_decref(r->body);
    r->body = NULL;
    r->status = 0;
    r->error[0] = '\0';
}

bool client_retryable(long status)
{
    return status == 0 || status == 429 || (status >= 500 && status <= 599);
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    Client *c = arg;
    size_t n = size * nmemb;
    if (c->len + n + 1 > CLIENT_MAX_REPLY) {
        c->too_large = true;
        return 0; /* aborts the transfer */
    }
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *p = realloc(c->buf, cap);
        if (p == NULL)
            return 0;
        c->buf = p;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
    return n;
}

/* A 200's body into the download file; any other status's into the
 * buffer (its JSON error). */
static size_t on_file_data(char *data, size_t size, size_t nmemb, void *arg)
{
    Client *c = arg;
    long status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200)
        return on_data(data, size, nmemb, c);
    size_t n = size * nmemb;
    if (c->down_got + (int64_t)n > c->down_max) {
        c->down_over = true;
        return 0; /* aborts the transfer */
    }
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(c->down_fd, data + done, n - done, (off_t)(c->down_got + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            c->down_errno = w < 0 ? errno : EIO;
            return 0;
        }
        done += (size_t)w;
    }
    c->down_got += (int64_t)n;
    return n;
}

/* The upload's next bytes, from the file (pread: a retry or a rewind by
 * curl starts again from up_off). */
static size_t on_read(char *buf, size_t size, size_t nitems, void *arg)
{
    Client *c = arg;
    size_t want = size * nitems;
    int64_t left = c->up_size - c->up_off;
    if (left <= 0)
        return 0;
    if ((int64_t)want > left)
        want = (size_t)left;
    for (;;) {
        ssize_t n = pread(c->up_fd, buf, want, (off_t)c->up_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* an error, or the file shrank under us */
            c->up_errno = n < 0 ? errno : EIO;
            return CURL_READFUNC_ABORT;
        }
        c->up_off += n;
        return (size_t)n;
    }
}

static int on_seek(void *arg, curl_off_t offset, int origin)
{
    Client *c = arg;
    if (origin != SEEK_SET || offset < 0 || offset > c->up_size)
        return CURL_SEEKFUNC_CANTSEEK;
    c->up_off = offset;
    return CURL_SEEKFUNC_OK;
}

/* Called by curl about once a second or more often during a transfer. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    Client *c = arg;
    return c->cancel && c->cancel(c->cancel_arg) ? 1 : 0;
}

/* One attempt. out is cleared first. Returns false when the failure is
 * final (a download too long or unwritable, an upload unreadable): not
 * worth a retry. */
static bool attempt(Client *c, const char *url, const Req *req, long timeout_ms, ClientReply *out)
{
    client_reply_clear(out);
    c->len = 0;
    c->too_large = false;
    c->errbuf[0] = '\0';
    CURL *h = c->curl;
    /* Every option anew (the kind of request changes between calls);
     * the connection and the DNS cache stay. */
    curl_easy_reset(h);
    rung_transport_setopt(h, &transport);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, req->headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    if (req->put) {
        c->up_off = 0;
        c->up_errno = 0;
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L); /* PUT */
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, c);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, c);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->up_size);
    } else if (req->get) {
        c->down_got = 0;
        c->down_over = false;
        c->down_errno = 0;
        if (ftruncate(c->down_fd, 0) != 0) {
            snprintf(out->error, sizeof out->error, "cannot truncate %.200s: %s", c->down_path,
                     strerror(errno));
            return false;
        }
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_file_data);
    } else {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->payload);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(req->payload));
    }
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    if (timeout_ms > 0) {
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    } else {
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)CLIENT_STALL_BYTES);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)CLIENT_STALL_S);
    }
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CLIENT_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        if (c->too_large) {
            snprintf(out->error, sizeof out->error, "reply larger than %d bytes", CLIENT_MAX_REPLY);
        } else if (req->get && c->down_over) {
            snprintf(out->error, sizeof out->error,
                     "the body is longer than the %" PRId64 " bytes expected; refused",
                     c->down_max);
            return false;
        } else if (req->get && c->down_errno) {
            snprintf(out->error, sizeof out->error, "cannot write %.200s: %s", c->down_path,
                     strerror(c->down_errno));
            return false;
        } else if (req->put && c->up_errno) {
            snprintf(out->error, sizeof out->error, "cannot read the file to send: %s",
                     strerror(c->up_errno));
            return false;
        } else {
            snprintf(out->error, sizeof out->error, "%s",
                     c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
        }
        return true;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
    if (c->len > 0) {
        c->buf[c->len] = '\0';
        out->body = json_loadb(c->buf, c->len, 0, NULL);
    }
    if (out->status >= 200 && out->status <= 299)
        return true;
    json_t *e = json_object_get(out->body, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (code)
        snprintf(out->error, sizeof out->error, "%ld %s: %s", out->status, code, msg ? msg : "");
    else
        snprintf(out->error, sizeof out->error, "HTTP status %ld", out->status);
    return true;
}

static bool cancelled(const ClientCall *call)
{
    return call->cancel && call->cancel(call->cancel_arg);
}

/* Sleeps ms, in slices, unless the call is canceled meanwhile. */
static void sleep_ms(int64_t ms, const ClientCall *call)
{
    int64_t end = rung_mono_ns() + ms * 1000000;
    for (;;) {
        int64_t left = end - rung_mono_ns();
        if (left <= 0 || cancelled(call))
            return;
        if (left > SLEEP_SLICE_MS * 1000000LL)
            left = SLEEP_SLICE_MS * 1000000LL;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left};
        nanosleep(&ts, NULL);
    }
}

/* base + path, new string; NULL when out of memory. */
static char *make_url(const Client *c, const char *path)
{
    size_t url_len = strlen(c->base) + strlen(path) + 1;
    char *url = malloc(url_len);
    if (url)
        snprintf(url, url_len, "%s%s", c->base, path);
    return url;
}

/* After a failed attempt: moves to another of rungd's addresses when the
 * one talked to could not be reached or answered as a standby (its reply
 * names the leader: that one, when it is in the list; else the next).
 * Whether it moved. */
static bool move_on(Client *c, const ClientReply *out, const char *what)
{
    if (c->servers.n < 2)
        return false;
    const char *role = json_string_value(json_object_get(out->body, "role"));
    bool standby = out->status == 503 && role != NULL && strcmp(role, "standby") == 0;
    if (out->status != 0 && !standby)
        return false;
    int next = standby ? rung_servers_find(&c->servers,
                                           json_string_value(json_object_get(out->body, "leader"))
                                               ?: "")
                       : -1;
    if (next < 0 || next == c->cur)
        next = (c->cur + 1) % c->servers.n;
    LOG_INFO("%s: %s %s; trying %s", what, c->base, standby ? "is a standby" : "cannot be reached",
             c->servers.url[next]);
    c->cur = next;
    c->base = c->servers.url[next];
    return true;
}

/* The request with its retries (see client.h). */
static int perform(Client *c, const char *path, const Req *req, const ClientCall *call,
                   ClientReply *out)
{
    static const ClientCall plain = {0};
    if (call == NULL)
        call = &plain;
    const char *what = call->what ? call->what : path;
    char *url = make_url(c, path);
    if (url == NULL) {
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    int moves = 0; /* address changes since the last sleep */
    c->cancel = call->cancel;
    c->cancel_arg = call->cancel_arg;
    long timeout_ms = call->timeout_ms > 0   ? call->timeout_ms
                      : req->put || req->get ? 0
                                             : CLIENT_TIMEOUT_MS;
    int rc = 0;
    int64_t last_log = 0;
    for (int retry = 0;; retry++) {
        if (cancelled(call)) {
            rc = -1;
            break;
        }
        if (!attempt(c, url, req, timeout_ms, out)) {
            rc = -1; /* final: out->error says why */
            break;
        }
        if (out->status == 0 && cancelled(call)) {
            rc = -1;
            break;
        }
        if (!client_retryable(out->status)) {
            if (retry > 0)
                LOG_INFO("%s: delivered after %d retries", what, retry);
            break;
        }
        if (!call->retry || (call->max_retries > 0 && retry >= call->max_retries)) {
            if (call->retry)
                LOG_WARN("%s: %s; giving up after %d retries", what,
                         out->error[0] ? out->error : "no reply", retry);
            /* Not sent again now, but the next call (a heartbeat's) goes
             * to the leader or the next address. */
            move_on(c, out, what);
            rc = out->status == 0 ? -1 : 0;
            break;
        }
        int64_t now = rung_mono_ns();
        if (retry == 0 || now - last_log >= RETRY_LOG_EVERY_NS) {
            LOG_WARN("%s: %s; retrying%s", what, out->error[0] ? out->error : "no reply",
                     retry == 0 ? "" : " (still)");
            last_log = now;
        }
        /* Another address at once, each once; then the backoff's sleep. */
        if (move_on(c, out, what)) {
            char *moved = make_url(c, path);
            if (moved != NULL) {
                free(url);
                url = moved;
            }
            if (++moves < c->servers.n)
                continue;
        }
        moves = 0;
        sleep_ms(backoff_delay_ms(retry, BACKOFF_BASE_MS, BACKOFF_CAP_MS, &c->rng), call);
    }
    c->cancel = NULL;
    c->cancel_arg = NULL;
    free(url);
    return rc;
}

int client_post(Client *c, const char *path, const json_t *body, const ClientCall *call,
                ClientReply *out)
{
    memset(out, 0, sizeof *out);
    char *payload = body ? json_dumps(body, JSON_COMPACT) : strdup("{}");
    if (payload == NULL) {
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    Req req = {.payload = payload, .headers = c->headers};
    int rc = perform(c, path, &req, call, out);
    free(payload);
    return rc;
}

/* Appends line to *h; false (and *h freed) when out of memory. */
static bool add_header(struct curl_slist **h, const char *line)
{
    struct curl_slist *n = curl_slist_append(*h, line);
    if (n == NULL) {
        curl_slist_free_all(*h);
        *h = NULL;
        return false;
    }
    *h = n;
    return true;
}

static bool is_sha256_hex(const char *s)
{
    if (s == NULL || strlen(s) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

int client_put_file(Client *c, const char *path, const char *file_path, const char *sha256_hex,
                    const ClientCall *call, ClientReply *out)
{
    memset(out, 0, sizeof *out);
    if (!is_sha256_hex(sha256_hex)) {
        snprintf(out->error, sizeof out->error, "the SHA-256 to send is not 64 hex digits");
        return -1;
    }
    int fd = open(file_path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(out->error, sizeof out->error, "cannot open %.200s: %s", file_path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char hash[80] = "X-Rung-Sha256: ";
    size_t o = strlen(hash);
    for (int i = 0; i < 64; i++)
        hash[o + (size_t)i] = (char)tolower((unsigned char)sha256_hex[i]);
    hash[o + 64] = '\0';
    struct curl_slist *h = NULL;
    bool ok = add_header(&h, "Content-Type: application/octet-stream") &&
              add_header(&h, "Accept: application/json") && add_header(&h, "Expect:") &&
              add_header(&h, hash) && (c->auth == NULL || add_header(&h, c->auth));
    if (!ok) {
        close(fd);
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    c->up_fd = fd;
    c->up_size = (int64_t)st.st_size;
    Req req = {.headers = h, .put = true};
    int rc = perform(c, path, &req, call, out);
    c->up_fd = -1;
    close(fd);
    curl_slist_free_all(h);
    return rc;
}

int client_get_file(Client *c, const char *path, const char *dest_path, int64_t max_bytes,
                    const ClientCall *call, ClientReply *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(dest_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(out->error, sizeof out->error, "cannot make %.200s: %s", dest_path,
                 strerror(errno));
        return -1;
    }
    struct curl_slist *h = NULL;
    bool ok = add_header(&h, "Accept: application/x-tar, application/json") &&
              (c->auth == NULL || add_header(&h, c->auth));
    int rc = -1;
    if (!ok) {
        snprintf(out->error, sizeof out->error, "out of memory");
    } else {
        c->down_fd = fd;
        c->down_max = max_bytes < 0 ? 0 : max_bytes;
        c->down_path = dest_path;
        Req req = {.headers = h, .get = true};
        rc = perform(c, path, &req, call, out);
        c->down_fd = -1;
        c->down_path = NULL;
    }
    curl_slist_free_all(h);
    if (close(fd) != 0 && rc == 0 && out->status == 200) {
        snprintf(out->error, sizeof out->error, "cannot write %.200s: %s", dest_path,
                 strerror(errno));
        rc = -1;
    }
    if (rc != 0 || out->status != 200)
        unlink(dest_path);
    return rc;
}
