/* Connections before and between the requests MHD reads (http.c's opening
 * comment tells why rungd holds them first): accepting within the limits
 * (in all, per client address, fair shares under load), peeking at each
 * request head until it is whole, refusing a bad one with a JSON error,
 * handing a good one to MHD, and cutting connections whose client closed
 * its end of a half-sent request; see http_internal.h. */
#include "http_internal.h"

#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define ACCEPTS_PER_RUN 64

/* The key the per-address limit counts by: IPv4 addresses (plain or
 * mapped) whole, IPv6 ones by their /64, which one host or site holds. */
static void address_key(const struct sockaddr_storage *ss, unsigned char key[16])
{
    memset(key, 0, 16);
    if (ss->ss_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        memcpy(key, a, IN6_IS_ADDR_V4MAPPED(a) ? 16 : 8);
    }
}

static unsigned address_bucket(const unsigned char key[16])
{
    uint32_t x = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        x = (x ^ key[i]) * 16777619u;
    return x % ADDRESS_BUCKETS;
}

static int address_count(const Http *h, const unsigned char key[16], unsigned bucket)
{
    int n = 0;
    for (const Conn *c = h->by_address[bucket]; c != NULL; c = c->addr_next)
        n += memcmp(c->key, key, 16) == 0;
    return n;
}

static bool address_held(const Http *h, const unsigned char key[16], unsigned bucket)
{
    for (const Conn *c = h->by_address[bucket]; c != NULL; c = c->addr_next)
        if (memcmp(c->key, key, 16) == 0)
            return true;
    return false;
}

/* Connections an address may hold once FAIR_ABOVE are open. */
static int address_share(const Http *h)
{
    int share = CONNECTION_LIMIT / (h->n_addresses + 1);
    return share > FAIR_FLOOR ? share : FAIR_FLOOR;
}

static void watch(Http *h, Conn *c)
{
    /* Edge-triggered: a head that is still incomplete stays in the socket
     * (it is only peeked at), and must not wake the loop again until more
     * of it arrives. */
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    c->watched = epoll_ctl(h->epfd, EPOLL_CTL_ADD, c->fd, &ev) == 0;
}

static void unwatch(Http *h, Conn *c)
{
    if (c->watched)
        epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    c->watched = false;
}

/* Forgets a connection whose socket is closed or about to be (by MHD). */
void http_conn_free(Http *h, Conn *c)
{
    unwatch(h, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->addr_prev)
        c->addr_prev->addr_next = c->addr_next;
    else
        h->by_address[c->bucket] = c->addr_next;
    if (c->addr_next)
        c->addr_next->addr_prev = c->addr_prev;
    if (!address_held(h, c->key, c->bucket))
        h->n_addresses--;
    for (Conn **p = &h->done; c->done_listed && *p != NULL; p = &(*p)->done_next)
        if (*p == c) {
            *p = c->done_next;
            break;
        }
    h->n_conns--;
    free(c);
}

/* Ends a connection that MHD is not serving: closes it, or, when MHD has
 * it suspended, shuts it down and resumes it so that MHD reads the end and
 * closes it (MHD_OPTION_NOTIFY_CONNECTION then frees the Conn). */
void http_conn_end(Http *h, Conn *c)
{
    unwatch(h, c);
    if (c->in_mhd) {
        shutdown(c->fd, SHUT_RDWR);
        c->state = C_MHD;
        c->deadline_ms = 0;
        MHD_resume_connection(c->mhd);
        h->resumed = true;
    } else {
        close(c->fd);
        http_conn_free(h, c);
    }
}

/* Reads and drops what the client has sent; false once it has closed. */
bool http_drain(int fd)
{
    char buf[4096];
    for (int i = 0; i < 64; i++) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0)
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
    return true;
}

/* Answers a connection we hold with an error and ends it. */
static void refuse(Http *h, Conn *c, int status, int code, const char *message)
{
    bool open = http_drain(c->fd);
    http_write_error(c->fd, status, code, message);
    if (!open) {
        http_conn_end(h, c);
        return;
    }
    shutdown(c->fd, SHUT_WR);
    c->state = C_LINGER;
    c->deadline_ms = mono_ms() + LINGER_MS;
}

/* A request head as MHD will read it; see read_head. */
typedef struct Head {
    size_t len;    /* bytes, from the connection's position to the blank line's end */
    uint64_t body; /* Content-Length, 0 without one */
    bool chunked;
    int code; /* a refusal's RUNG_E_* and message */
    char message[160];
} Head;

static int refusal(Head *hd, int status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refusal(Head *hd, int status, int code, const char *fmt, ...)
{
    hd->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hd->message, sizeof hd->message, fmt, ap);
    va_end(ap);
    return status;
}

/* The line of buf at *pos, without its CR LF (or bare LF, which MHD takes
 * as a line end too); false when no LF ends it yet. */
static bool next_line(const char *buf, size_t n, size_t *pos, const char **line, size_t *len)
{
    const char *lf = memchr(buf + *pos, '\n', n - *pos);
    if (lf == NULL)
        return false;
    *line = buf + *pos;
    *len = (size_t)(lf - *line);
    if (*len > 0 && (*line)[*len - 1] == '\r')
        (*len)--;
    *pos = (size_t)(lf - buf) + 1;
    return true;
}

/* A character of a token: methods and header names. */
static bool is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static size_t count_char(const char *s, size_t n, char ch)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == ch;
    return k;
}

/* Reads the request head at the start of buf[0..n), which holds at most
 * HEAD_MAX bytes. It refuses everything MHD would answer with an HTML
 * body of its own or could not hold (see MAX_FIELDS), and more (folded
 * headers, control characters, a duplicate Content-Length, both
 * Content-Length and Transfer-Encoding). Returns 0 when the head is
 * complete and acceptable, 1 when more bytes are needed, or the HTTP
 * status of a refusal (hd->code and hd->message say why). */
static int read_head(const char *buf, size_t n, size_t max_body, size_t max_raw, Head *hd)
{
    memset(hd, 0, sizeof *hd);
    const char *line, *req;
    size_t len, req_len, pos = 0;
    bool full = n >= HEAD_MAX; /* nothing more will fit */
    do {                       /* empty lines before the request line are skipped, as MHD does */
        if (!next_line(buf, n, &pos, &line, &len))
            return !full ? 1
                         : refusal(hd, 414, RUNG_E_PAYLOAD_TOO_LARGE,
                                   "request line longer than %d bytes", HEAD_MAX);
    } while (len == 0);
    req = line;
    req_len = len;
    size_t fields_at = pos;
    do {
        if (!next_line(buf, n, &pos, &line, &len))
            return !full ? 1
                         : refusal(hd, 431, RUNG_E_PAYLOAD_TOO_LARGE,
                                   "request headers larger than %d bytes", HEAD_MAX);
    } while (len > 0);
    hd->len = pos;

    /* The request line: METHOD SP target SP HTTP/1.x, nothing else. */
    const char *end = req + req_len;
    const char *sp1 = memchr(req, ' ', req_len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1)) : NULL;
    if (sp2 == NULL || memchr(sp2 + 1, ' ', (size_t)(end - sp2 - 1)) != NULL || sp1 == req ||
        sp1 - req > 32)
        return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT,
                       "malformed request line: send METHOD /path HTTP/1.1");
    for (const char *p = req; p < sp1; p++)
        if (!is_tchar((unsigned char)*p))
            return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT, "malformed method");
    const char *target = sp1 + 1;
    size_t target_len = (size_t)(sp2 - target);
    /* PUT is only the raw uploads' (a checkpoint, a blob), whose bodies may
     * be larger: the route's own limit is checked once it is known. */
    if (sp1 - req == 3 && strncmp(req, "PUT", 3) == 0)
        max_body = max_raw;
    if (target_len > TARGET_MAX)
        return refusal(hd, 414, RUNG_E_PAYLOAD_TOO_LARGE, "request target longer than %d bytes",
                       TARGET_MAX);
    if (target_len == 0 || target[0] != '/')
        return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT, "the request target must start with /");
    for (size_t i = 0; i < target_len; i++)
        if ((unsigned char)target[i] <= ' ' || target[i] == 0x7f)
            return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT,
                           "control character in the request target");
    const char *query = memchr(target, '?', target_len);
    size_t fields = query ? 1 + count_char(query, (size_t)(sp2 - query), '&') : 0;
    const char *v = sp2 + 1;
    size_t v_len = (size_t)(end - v);
    if (v_len != 8 || strncmp(v, "HTTP/", 5) != 0 || v[6] != '.' || v[5] < '0' || v[5] > '9' ||
        v[7] < '0' || v[7] > '9')
        return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT, "malformed HTTP version");
    if (v[5] != '1') /* MHD answers 1.x as 1.1; 0.9 and 2.0 it refuses */
        return refusal(hd, 505, RUNG_E_INVALID_ARGUMENT,
                       "HTTP version %.8s is not supported: use HTTP/1.1", v);

    /* Header lines: name: value. */
    bool has_length = false, has_encoding = false;
    pos = fields_at;
    while (next_line(buf, hd->len, &pos, &line, &len) && len > 0) {
        fields++;
        const char *colon = memchr(line, ':', len), *lend = line + len;
        if (colon == NULL || colon == line)
            return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT, "malformed header line");
        for (const char *p = line; p < colon; p++)
            if (!is_tchar((unsigned char)*p)) /* folded lines and spaces before ':' too */
                return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT, "malformed header name");
        size_t name_len = (size_t)(colon - line);
        const char *val = colon + 1;
        while (val < lend && (*val == ' ' || *val == '\t'))
            val++;
        while (lend > val && (lend[-1] == ' ' || lend[-1] == '\t'))
            lend--;
        size_t val_len = (size_t)(lend - val);
        for (const char *p = val; p < lend; p++)
            if (((unsigned char)*p < ' ' && *p != '\t') || *p == 0x7f)
                return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT, "control character in header %.*s",
                               (int)name_len, line);
        if (name_len == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
            if (has_length)
                return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT, "more than one Content-Length");
            has_length = true;
            if (val_len == 0 || strspn(val, "0123456789") < val_len)
                return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT,
                               "Content-Length must be a decimal number of bytes");
            for (size_t i = 0; i < val_len && hd->body <= max_body; i++)
                hd->body = hd->body * 10 + (uint64_t)(val[i] - '0');
            if (hd->body > max_body)
                return refusal(hd, 413, RUNG_E_PAYLOAD_TOO_LARGE, "body larger than %zu bytes",
                               max_body);
        } else if (name_len == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
            if (has_encoding || val_len != 7 || strncasecmp(val, "chunked", 7) != 0)
                return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT,
                               "Transfer-Encoding other than chunked");
            has_encoding = hd->chunked = true;
        } else if (name_len == 6 && strncasecmp(line, "Cookie", 6) == 0) {
            fields += count_char(val, val_len, ';');
        }
    }
    if (has_length && has_encoding)
        return refusal(hd, 400, RUNG_E_INVALID_ARGUMENT,
                       "both Content-Length and Transfer-Encoding");
    if (fields > MAX_FIELDS)
        return refusal(hd, 431, RUNG_E_PAYLOAD_TOO_LARGE,
                       "more than %d header lines, query arguments and cookies", MAX_FIELDS);
    return 0;
}

/* Whether at least want bytes wait in fd's receive queue. */
static bool queued_at_least(int fd, uint64_t want)
{
    int queued;
    return ioctl(fd, SIOCINQ, &queued) == 0 && queued >= 0 && (uint64_t)queued >= want;
}

/* Looks at the head waiting on a connection we watch: refuses it, waits
 * for more, or hands the connection to MHD to read the request. events
 * are epoll's for it: once the client has closed its end (or reset), what
 * is queued is all that will come, and a request that is not whole there
 * never will be: its slot is freed now, not at the deadline. */
void http_screen(Http *h, Conn *c, uint32_t events)
{
    bool ended = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    char buf[HEAD_MAX];
    ssize_t n = recv(c->fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (ended)
            http_conn_end(h, c);
        return;
    }
    if (n <= 0) { /* the client closed (or failed) between requests */
        http_conn_end(h, c);
        return;
    }
    if (c->idle) { /* the next request has begun: it gets the short deadline */
        c->idle = false;
        c->deadline_ms = mono_ms() + REQUEST_TIMEOUT_MS;
    }
    Head hd;
    int status = read_head(buf, (size_t)n, h->max_body, http_max_raw(h), &hd);
    if (status == 1) {
        if (ended)
            http_conn_end(h, c);
        return;
    }
    if (status != 0) {
        refuse(h, c, status, hd.code, hd.message);
        return;
    }
    if (ended && !hd.chunked && !queued_at_least(c->fd, hd.len + hd.body)) {
        http_conn_end(h, c);
        return;
    }
    c->expected += hd.len + hd.body;
    if (hd.chunked)
        c->unscreened = true;
    unwatch(h, c);
    c->state = C_MHD;
    if (c->in_mhd) {
        MHD_resume_connection(c->mhd);
        h->resumed = true;
        return;
    }
    h->adding = c;
    if (MHD_add_connection(h->daemon, c->fd, (const struct sockaddr *)&c->addr, c->addr_len) !=
            MHD_YES &&
        h->adding != NULL)
        http_conn_free(h, c); /* MHD closed the socket before it knew it */
    h->adding = NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: MHD took or closed a socket. */
void http_on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
    Http *h = cls;
    Conn *c = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        c = h->adding;
        *socket_context = c;
        if (c) {
            c->mhd = mc;
            c->in_mhd = true;
        }
    } else if (c != NULL) {
        if (c == h->adding)
            h->adding = NULL;
        http_conn_free(h, c);
        *socket_context = NULL;
    }
}

/* Whether MHD has read exactly the requests we screened and handed it, and
 * no byte of a next one: the kernel's count of bytes received on the
 * socket, less those still queued, against their heads and bodies. */
static bool mhd_read_all(const Conn *c)
{
    int queued;
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    /* Queued first: a byte that arrives in between makes this false, never true. */
    if (ioctl(c->fd, SIOCINQ, &queued) != 0 ||
        getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
        return false;
    return ti.tcpi_bytes_received - (uint64_t)queued == c->expected;
}

/* MHD completed a request on c and keeps the connection: suspend it and
 * screen the next request's head ourselves, or leave it to MHD. */
void http_watch_next(Http *h, Conn *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c->mhd, MHD_CONNECTION_INFO_CONNECTION_SUSPENDED);
    if (!c->unscreened && (info == NULL || info->suspended == MHD_YES || !mhd_read_all(c)))
        c->unscreened = true;
    if (c->unscreened) {
        MHD_set_connection_option(c->mhd, MHD_CONNECTION_OPTION_TIMEOUT,
                                  (unsigned)(REQUEST_TIMEOUT_MS / 1000));
        return;
    }
    MHD_suspend_connection(c->mhd);
    c->state = C_SCREEN;
    c->idle = true;
    c->deadline_ms = mono_ms() + IDLE_TIMEOUT_S * 1000LL;
    watch(h, c);
    if (!c->watched)
        http_conn_end(h, c);
}

/* Refuses a connection we will not keep, at once. */
static void turn_away(int fd, const char *message)
{
    http_drain(fd);
    http_write_error(fd, 503, RUNG_E_UNAVAILABLE, message);
    close(fd);
}
void http_accept(Http *h)
{
    for (int i = 0; i < ACCEPTS_PER_RUN; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(h->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* The listen socket stays readable: stop watching it until
                 * the next tick rather than spin. */
                epoll_ctl(h->epfd, EPOLL_CTL_DEL, h->listen_fd, NULL);
                h->accept_paused = true;
            }
            return;
        }
        unsigned char key[16];
        address_key(&ss, key);
        unsigned bucket = address_bucket(key);
        if (h->n_conns >= CONNECTION_LIMIT) {
            turn_away(fd, "too many connections: try again later");
            continue;
        }
        int held = address_count(h, key, bucket);
        if (held >= PER_ADDRESS_LIMIT ||
            (h->n_conns >= FAIR_ABOVE && held > 0 && held >= address_share(h))) {
            turn_away(fd, "too many connections from this address: try again later");
            continue;
        }
        Conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->state = C_SCREEN;
        c->deadline_ms = mono_ms() + REQUEST_TIMEOUT_MS;
        memcpy(&c->addr, &ss, len);
        c->addr_len = len;
        memcpy(c->key, key, 16);
        c->bucket = bucket;
        c->next = h->conns;
        if (h->conns)
            h->conns->prev = c;
        h->conns = c;
        c->addr_next = h->by_address[bucket];
        if (c->addr_next)
            c->addr_next->addr_prev = c;
        h->by_address[bucket] = c;
        h->n_conns++;
        h->n_addresses += held == 0;
        if (h->tls) {
            /* Encrypted bytes cannot be screened: MHD reads every request
             * of the connection, under its own timeouts (http.c). */
            c->unscreened = true;
            c->state = C_MHD;
            h->adding = c;
            if (MHD_add_connection(h->daemon, fd, (const struct sockaddr *)&c->addr, len) !=
                    MHD_YES &&
                h->adding != NULL)
                http_conn_free(h, c);
            h->adding = NULL;
            continue;
        }
        watch(h, c); /* a head already there is reported at once */
        if (!c->watched)
            http_conn_end(h, c);
    }
}
