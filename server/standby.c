/* A standby rungd (standby.h; docs/operations.md, "A standby rungd"). */
#include "standby.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

/* How often a standby asks whether the leader's lease ended. */
#define CLAIM_EVERY_MS 250

/* text as the inside of a JSON string: the leader's URL, which rungd wrote
 * itself, but a row may say anything. */
static void json_text(char *out, size_t n, const char *text)
{
    size_t k = 0;
    for (const char *p = text; *p && k + 7 < n; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            k += (size_t)snprintf(out + k, n - k, "\\%c", c);
        else if (c < 0x20)
            k += (size_t)snprintf(out + k, n - k, "\\u%04x", c);
        else
            out[k++] = (char)c;
    }
    out[k] = '\0';
}

/* Whether text is fit for a header line: printable ASCII only. */
static bool header_safe(const char *text)
{
    for (const char *p = text; *p; p++)
        if (*p < 0x21 || *p > 0x7e)
            return false;
    return true;
}

/* GET /metrics: this rungd's role and the leader's epoch, as the leader's
 * own /metrics spells them (server/api_metrics.c). */
static void answer_metrics(int fd, int64_t epoch)
{
    char body[512], reply[800];
    int blen = snprintf(body, sizeof body,
                        "# HELP rung_role 1 for this rungd's role: leader, or standby "
                        "(PostgreSQL, docs/operations.md).\n"
                        "# TYPE rung_role gauge\n"
                        "rung_role{role=\"standby\"} 1\n"
                        "# HELP rung_leader_epoch The epoch of the lead this standby sees.\n"
                        "# TYPE rung_leader_epoch gauge\n"
                        "rung_leader_epoch %lld\n",
                        (long long)epoch);
    int len = snprintf(reply, sizeof reply,
                       "HTTP/1.1 200 OK\r\n"
                       "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                       "Connection: close\r\n"
                       "Content-Length: %d\r\n\r\n%s",
                       blen, body);
    if (send(fd, reply, (size_t)len, MSG_NOSIGNAL) < 0) {
        /* The client left. */
    }
}

/* Reads the request's head (up to a blank line, 200 ms at most: a socket
 * closed with unread bytes would reset the connection before the client
 * read the answer), answers 503 naming the leader (GET /metrics: 200 with
 * the role), and closes. */
static void answer(int fd, const char *leader, int64_t epoch)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char head[8192];
    head[0] = '\0';
    size_t got = 0;
    while (got < sizeof head - 1) {
        ssize_t n = recv(fd, head + got, sizeof head - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        head[got] = '\0';
        if (strstr(head, "\r\n\r\n") != NULL)
            break;
    }
    if (strncmp(head, "GET /metrics ", 13) == 0 || strncmp(head, "GET /metrics?", 13) == 0) {
        answer_metrics(fd, epoch);
        shutdown(fd, SHUT_WR);
        close(fd);
        return;
    }
    char url[600], body[900], reply[1400];
    json_text(url, sizeof url, leader);
    int blen = snprintf(body, sizeof body,
                        "{\"error\":{\"code\":\"unavailable\",\"message\":\"this rungd is a "
                        "standby: %s%s\"},\"role\":\"standby\",\"leader\":\"%s\"}\n",
                        leader[0] ? "the leader is " : "no rungd leads yet, one takes over soon",
                        url, url);
    bool named = leader[0] && header_safe(leader) && strlen(leader) < 512;
    int len = snprintf(reply, sizeof reply,
                       "HTTP/1.1 503 Service Unavailable\r\n"
                       "Content-Type: application/json\r\n"
                       "Retry-After: 1\r\n"
                       "X-Rung-Role: standby\r\n"
                       "%s%s%s"
                       "Connection: close\r\n"
                       "Content-Length: %d\r\n\r\n%s",
                       named ? "X-Rung-Leader: " : "", named ? leader : "", named ? "\r\n" : "",
                       blen, body);
    if (send(fd, reply, (size_t)len, MSG_NOSIGNAL) < 0) {
        /* The client left: nothing to tell it. */
    }
    shutdown(fd, SHUT_WR);
    close(fd);
}

int standby_run(const StandbyConfig *cfg, RungError *err)
{
    StoreLeader leader;
    int said = -1; /* the epoch last logged */
    for (;;) {
        int rc = store_leader_claim(cfg->store, cfg->me, &leader, err);
        if (rc != 0)
            return rc;
        if (leader.epoch != said) {
            LOG_INFO("rungd: standby: %s leads (epoch %lld); this rungd takes over when its "
                     "lease ends",
                     leader.holder[0] ? leader.holder : "no rungd", (long long)leader.epoch);
            said = (int)leader.epoch;
        }
        int64_t until_ms = CLAIM_EVERY_MS;
        while (until_ms > 0) {
            struct pollfd p[2] = {{.fd = cfg->listen_fd, .events = POLLIN},
                                  {.fd = cfg->stop_fd, .events = POLLIN}};
            int64_t t0 = rung_mono_ns();
            int n = poll(p, 2, (int)until_ms);
            if (n < 0 && errno != EINTR)
                return rung_error_set(err, RUNG_E_INTERNAL, NULL, "standby: poll: %s",
                                      strerror(errno));
            if (n > 0 && (p[1].revents & POLLIN)) {
                unsigned char sig = 0;
                if (read(cfg->stop_fd, &sig, 1) == 1 && sig != SIGHUP)
                    return 0;
            }
            if (n > 0 && (p[0].revents & POLLIN)) {
                int fd;
                while ((fd = accept4(cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
                    answer(fd, leader.holder, leader.epoch);
            }
            until_ms -= (rung_mono_ns() - t0) / 1000000;
        }
    }
}
