/* server/notify.c's delivery thread against a real HTTP receiver on
 * 127.0.0.1, a small socket server on a thread of this test: the body
 * arrives as sent with its headers, the signature checks out under the
 * secret (OpenSSL's HMAC, not notify_signature), failures are retried with
 * doubling waits and a 4xx other than 429 is not, only the notifiers that
 * want a kind and were chosen hear of it, and notify_event never waits on
 * the network, even for a receiver that takes seconds, nor when the queue
 * overflows. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "notify.h"

#define SECRET "a-secret-of-at-least-16-bytes"
#define KEPT 16 /* requests the receiver keeps whole */

/* Time bounds are for a plain build; ASan and TSan make every malloc and
 * JSON copy several times slower. A notify_event that waited on the
 * network would take the receiver's 3 s, far beyond either bound. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SLOWER 10
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SLOWER 10
#endif
#endif
#ifndef SLOWER
#define SLOWER 1
#endif

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the receiver ---- */

typedef struct Request {
    char head[4096]; /* request line and headers */
    char *body;
    int64_t at_us; /* when the whole request had arrived */
} Request;

typedef struct Receiver {
    int fd;
    char url[64];
    pthread_t thread;
    atomic_bool stop;
    pthread_mutex_t mu;
    int statuses[8]; /* answer i gets statuses[min(i, n_statuses - 1)] */
    int n_statuses;
    int delay_ms; /* before each answer */
    Request req[KEPT];
    int n_req; /* all requests, also those not kept */
} Receiver;

/* Reads one request from c into r: the head up to the blank line, then
 * Content-Length bytes of body. */
static bool read_request(int c, Request *r)
{
    char buf[8192];
    size_t have = 0;
    char *end = NULL;
    while (end == NULL) {
        if (have == sizeof buf - 1)
            return false;
        ssize_t k = recv(c, buf + have, sizeof buf - 1 - have, 0);
        if (k <= 0)
            return false;
        have += (size_t)k;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    size_t head = (size_t)(end - buf) + 4;
    snprintf(r->head, sizeof r->head, "%.*s", (int)head, buf);
    const char *cl = strcasestr(r->head, "\r\nContent-Length:");
    size_t len = cl ? strtoul(cl + 17, NULL, 10) : 0;
    if (strcasestr(r->head, "\r\nExpect: 100-continue") != NULL)
        send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL);
    r->body = calloc(1, len + 1);
    assert_non_null(r->body);
    size_t got = have - head < len ? have - head : len;
    memcpy(r->body, buf + head, got);
    while (got < len) {
        ssize_t k = recv(c, r->body + got, len - got, 0);
        if (k <= 0)
            return false;
        got += (size_t)k;
    }
    r->at_us = now_us();
    return true;
}

static void serve_one(Receiver *rx, int c)
{
    Request r = {0};
    struct timeval tv = {.tv_sec = 5};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (!read_request(c, &r)) {
        free(r.body);
        return;
    }
    pthread_mutex_lock(&rx->mu);
    int i = rx->n_req++;
    int status = rx->statuses[i < rx->n_statuses ? i : rx->n_statuses - 1];
    int delay = rx->delay_ms;
    if (i < KEPT)
        rx->req[i] = r;
    else
        free(r.body);
    pthread_mutex_unlock(&rx->mu);
    /* In slices, so that receiver_stop need not wait out a slow answer. */
    for (int waited = 0; waited < delay && !atomic_load(&rx->stop); waited += 10)
        usleep(10000);
    char answer[128];
    int n = snprintf(answer, sizeof answer,
                     "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
    send(c, answer, (size_t)n, MSG_NOSIGNAL); /* the client may have gone: no SIGPIPE */
}

static void *serve(void *arg)
{
    Receiver *rx = arg;
    while (!atomic_load(&rx->stop)) {
        struct pollfd p = {.fd = rx->fd, .events = POLLIN};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int c = accept(rx->fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(rx, c);
        close(c);
    }
    return NULL;
}

/* A receiver on a free port of 127.0.0.1 answering statuses in turn. */
static Receiver *receiver_start(const int *statuses, int n, int delay_ms)
{
    Receiver *rx = calloc(1, sizeof *rx);
    assert_non_null(rx);
    memcpy(rx->statuses, statuses, (size_t)n * sizeof *statuses);
    rx->n_statuses = n;
    rx->delay_ms = delay_ms;
    pthread_mutex_init(&rx->mu, NULL);
    rx->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(rx->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(rx->fd, 16), 0);
    assert_int_equal(getsockname(rx->fd, (struct sockaddr *)&a, &alen), 0);
    snprintf(rx->url, sizeof rx->url, "http://127.0.0.1:%d/hook", ntohs(a.sin_port));
    assert_int_equal(pthread_create(&rx->thread, NULL, serve, rx), 0);
    return rx;
}

static int receiver_count(Receiver *rx)
{
    pthread_mutex_lock(&rx->mu);
    int n = rx->n_req;
    pthread_mutex_unlock(&rx->mu);
    return n;
}

static void receiver_stop(Receiver *rx)
{
    atomic_store(&rx->stop, true);
    pthread_join(rx->thread, NULL);
    close(rx->fd);
    for (int i = 0; i < rx->n_req && i < KEPT; i++)
        free(rx->req[i].body);
    pthread_mutex_destroy(&rx->mu);
    free(rx);
}

/* The value of header name in a request's head ("" when absent), in buf. */
static const char *header(const Request *r, const char *name, char *buf, size_t size)
{
    char key[80];
    snprintf(key, sizeof key, "\r\n%s:", name);
    const char *at = strcasestr(r->head, key);
    buf[0] = '\0';
    if (at != NULL) {
        at += strlen(key);
        at += strspn(at, " ");
        snprintf(buf, size, "%.*s", (int)strcspn(at, "\r"), at);
    }
    return buf;
}

/* ---- helpers ---- */

/* A Notify over notifiers given as JSON, each a printf format whose one
 * %s is the receiver's URL. */
static Notify *start(const char *notifiers, const char *url)
{
    char text[2048];
    snprintf(text, sizeof text, notifiers, url, url, url);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    NotifyConfig cfg;
    RungError err;
    rung_error_clear(&err);
    int rc = notify_config_parse(j, &cfg, &err);
    json_decref(j);
    if (rc != 0)
        fail_msg("%s", err.message);
    return notify_start(&cfg);
}

static json_t *event(int64_t id, const char *kind)
{
    json_t *ev = json_pack("{s:I, s:s, s:s, s:{s:s, s:s}, s:i, s:n, s:n, s:{s:s, s:s}}", "id",
                           (json_int_t)id, "at", "2026-11-28T20:00:00.000Z", "kind", kind, "actor",
                           "kind", "rungd", "name", "rungd", "experiment_id", 3, "trial_id",
                           "worker_id", "detail", "state", "completed", "reason",
                           "all_trials_ended");
    assert_non_null(ev);
    return ev;
}

/* Drains outcomes into out until want have come, or 5 s pass. */
static size_t await_outcomes(Notify *n, NotifyOutcome *out, size_t want)
{
    size_t got = 0;
    int64_t until = now_us() + 5000000;
    while (got < want && now_us() < until) {
        got += notify_drain(n, out + got, want - got);
        if (got < want)
            usleep(2000);
    }
    return got;
}

static void expect_hmac(const Request *r, const char *secret)
{
    unsigned char md[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)r->body, strlen(r->body),
         md, &len);
    assert_int_equal(len, 32);
    char want[72] = "sha256=", got[128];
    for (int i = 0; i < 32; i++)
        snprintf(want + 7 + 2 * i, 3, "%02x", md[i]);
    assert_string_equal(header(r, "X-Rung-Signature", got, sizeof got), want);
}

/* ---- the tests ---- */

#define TEAM                                                                                       \
    "{\"notifiers\": [{\"name\": \"team\", \"url\": \"%s\", \"secret\": \"" SECRET "\", "          \
    "\"events\": [\"experiment.ended\"], \"retry_base_ms\": 50}]}"

/* 500, 500, then 200: three attempts, 50 ms then 100 ms apart at least,
 * each the same signed body. */
static void test_retried_until_taken(void **state)
{
    (void)state;
    static const int answers[] = {500, 500, 200};
    Receiver *rx = receiver_start(answers, 3, 0);
    Notify *n = start(TEAM, rx->url);
    json_t *ev = event(42, "experiment.ended");
    notify_event(n, ev, NULL);
    NotifyOutcome o;
    assert_int_equal(await_outcomes(n, &o, 1), 1);
    assert_string_equal(o.notifier, "team");
    assert_int_equal(o.event_id, 42);
    assert_string_equal(o.kind, "experiment.ended");
    assert_true(o.delivered);
    assert_int_equal(o.attempts, 3);
    assert_int_equal(o.http_status, 200);
    assert_string_equal(o.error, "");
    notify_stop(n);

    assert_int_equal(receiver_count(rx), 3);
    char *sent = notify_body(ev, NOTIFY_JSON);
    char buf[128];
    for (int i = 0; i < 3; i++) {
        const Request *r = &rx->req[i];
        assert_string_equal(r->body, sent);
        expect_hmac(r, SECRET);
        assert_string_equal(header(r, "Content-Type", buf, sizeof buf), "application/json");
        assert_string_equal(header(r, "X-Rung-Event", buf, sizeof buf), "experiment.ended");
        assert_string_equal(header(r, "X-Rung-Delivery", buf, sizeof buf), "42-team");
        assert_null(strstr(r->head, SECRET));
    }
    json_t *b = json_loads(rx->req[0].body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(b, "text")),
                        "Rung: experiment 3 ended (completed, all_trials_ended)");
    json_decref(b);
    int64_t gap1 = rx->req[1].at_us - rx->req[0].at_us, gap2 = rx->req[2].at_us - rx->req[1].at_us;
    print_message("back-off: %.1f ms, then %.1f ms (retry_base_ms 50)\n", gap1 / 1e3, gap2 / 1e3);
    assert_true(gap1 >= 50000);
    assert_true(gap2 >= 100000);
    assert_true(gap1 + gap2 < 2000000); /* doubling, not a fixed long wait */
    free(sent);
    json_decref(ev);
    receiver_stop(rx);
}

/* A 404 is final after one attempt; a 429 is retried. */
static void test_refusals(void **state)
{
    (void)state;
    static const int gone[] = {404, 200};
    Receiver *rx = receiver_start(gone, 2, 0);
    Notify *n = start(TEAM, rx->url);
    json_t *ev = event(7, "experiment.ended");
    notify_event(n, ev, NULL);
    NotifyOutcome o;
    assert_int_equal(await_outcomes(n, &o, 1), 1);
    assert_false(o.delivered);
    assert_int_equal(o.attempts, 1);
    assert_int_equal(o.http_status, 404);
    assert_string_equal(o.error, "HTTP 404");
    notify_stop(n);
    assert_int_equal(receiver_count(rx), 1);
    receiver_stop(rx);

    static const int busy[] = {429, 200};
    rx = receiver_start(busy, 2, 0);
    n = start(TEAM, rx->url);
    notify_event(n, ev, NULL);
    assert_int_equal(await_outcomes(n, &o, 1), 1);
    assert_true(o.delivered);
    assert_int_equal(o.attempts, 2);
    assert_int_equal(o.http_status, 200);
    notify_stop(n);
    receiver_stop(rx);
    json_decref(ev);
}

/* Nobody listens: max_attempts connection errors, then failed, with curl's
 * reason and neither the secret nor the URL. */
static void test_unreachable(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    close(fd); /* a port nobody listens on */
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", ntohs(a.sin_port));
    Notify *n = start("{\"notifiers\": [{\"name\": \"team\", \"url\": \"%s\", \"secret\": "
                      "\"" SECRET "\", \"events\": [\"*\"], \"retry_base_ms\": 10, "
                      "\"max_attempts\": 3}]}",
                      url);
    json_t *ev = event(8, "trial.failed");
    notify_event(n, ev, NULL);
    NotifyOutcome o;
    assert_int_equal(await_outcomes(n, &o, 1), 1);
    assert_false(o.delivered);
    assert_int_equal(o.attempts, 3);
    assert_int_equal(o.http_status, 0);
    assert_true(o.error[0] != '\0');
    assert_null(strstr(o.error, SECRET));
    assert_null(strstr(o.error, "127.0.0.1"));
    print_message("unreachable: %s\n", o.error);
    notify_stop(n);
    json_decref(ev);
}

/* Only notifiers that want the kind and, when the experiment chose, were
 * chosen; notify.* events go nowhere. */
static void test_who_hears(void **state)
{
    (void)state;
    static const int ok[] = {200};
    Receiver *rx = receiver_start(ok, 1, 0);
    Notify *n = start("{\"notifiers\": ["
                      "{\"name\": \"a\", \"url\": \"%s\", \"secret\": \"" SECRET "\", "
                      "\"events\": [\"trial.failed\"]},"
                      "{\"name\": \"b\", \"url\": \"%s\", \"secret\": \"" SECRET "\", "
                      "\"events\": [\"*\"], \"format\": \"slack\"},"
                      "{\"name\": \"c\", \"url\": \"%s\", \"secret\": \"" SECRET "\", "
                      "\"events\": [\"experiment\"]}]}",
                      rx->url);
    json_t *chosen = json_pack("[s, s]", "a", "c");
    json_t *ended = event(1, "experiment.ended"), *failed = event(2, "trial.failed");
    json_t *noted = event(3, "notify.failed");
    notify_event(n, ended, chosen); /* c only: a does not want it, b was not chosen */
    notify_event(n, noted, NULL);   /* nobody */
    notify_event(n, failed, NULL);  /* a and b */
    NotifyOutcome o[4];
    assert_int_equal(await_outcomes(n, o, 3), 3);
    usleep(100000); /* time enough for a fourth, which must not come */
    assert_int_equal(notify_drain(n, o + 3, 1), 0);
    char seen[3][96];
    for (int i = 0; i < 3; i++) {
        assert_true(o[i].delivered);
        snprintf(seen[i], sizeof seen[i], "%.64s-%lld", o[i].notifier, (long long)o[i].event_id);
    }
    int c1 = 0, a2 = 0, b2 = 0;
    for (int i = 0; i < 3; i++) {
        c1 += strcmp(seen[i], "c-1") == 0;
        a2 += strcmp(seen[i], "a-2") == 0;
        b2 += strcmp(seen[i], "b-2") == 0;
    }
    assert_int_equal(c1 + a2 + b2, 3);
    notify_stop(n);
    assert_int_equal(receiver_count(rx), 3);
    /* b is slack: {"text", "event"} only. */
    char buf[128];
    for (int i = 0; i < 3; i++)
        if (strcmp(header(&rx->req[i], "X-Rung-Delivery", buf, sizeof buf), "2-b") == 0) {
            json_t *b = json_loads(rx->req[i].body, 0, NULL);
            assert_int_equal(json_object_size(b), 2);
            assert_true(json_equal(json_object_get(b, "event"), failed));
            json_decref(b);
        }
    json_decref(chosen);
    json_decref(ended);
    json_decref(failed);
    json_decref(noted);
    receiver_stop(rx);
}

/* A receiver that takes 3 s per answer: notify_event stays quick, a full
 * queue drops the oldest deliveries (reported failed at once), and
 * notify_stop ends the attempt in flight instead of waiting it out. */
static void test_never_waits(void **state)
{
    (void)state;
    static const int ok[] = {200};
    Receiver *rx = receiver_start(ok, 1, 3000);
    Notify *n = start("{\"notifiers\": [{\"name\": \"slow\", \"url\": \"%s\", \"secret\": "
                      "\"" SECRET "\", \"events\": [\"*\"], \"max_attempts\": 1}]}",
                      rx->url);
    json_t *ev = event(1, "experiment.ended");
    int64_t total = 0, worst = 0;
    for (int i = 1; i <= 100; i++) {
        json_object_set_new(ev, "id", json_integer(i));
        int64_t t0 = now_us();
        notify_event(n, ev, NULL);
        int64_t dt = now_us() - t0;
        total += dt;
        worst = dt > worst ? dt : worst;
        if (i == 1) /* let the thread take the first one to the receiver */
            while (receiver_count(rx) == 0)
                usleep(1000);
    }
    print_message("100 notify_event calls with a 3 s receiver: %.3f ms in all, %.3f ms the "
                  "slowest\n",
                  total / 1e3, worst / 1e3);
    assert_true(total < 50000 * SLOWER);

    /* Fill the queue past its bound: the thread holds event 1, 99 wait;
     * NOTIFY_QUEUE_MAX more push out the 99 oldest, 2..100. */
    int64_t t0 = now_us();
    for (int i = 101; i < 101 + NOTIFY_QUEUE_MAX; i++) {
        json_object_set_new(ev, "id", json_integer(i));
        notify_event(n, ev, NULL);
    }
    int64_t fill = now_us() - t0;
    print_message("%d more with the queue full: %.3f ms\n", NOTIFY_QUEUE_MAX, fill / 1e3);
    assert_true(fill < 200000 * SLOWER);
    NotifyOutcome *o = calloc(NOTIFY_QUEUE_MAX, sizeof *o);
    size_t k = notify_drain(n, o, NOTIFY_QUEUE_MAX);
    assert_int_equal(k, 99);
    for (size_t i = 0; i < k; i++) {
        assert_false(o[i].delivered);
        assert_int_equal(o[i].attempts, 0);
        assert_int_equal(o[i].event_id, (int64_t)i + 2);
        assert_non_null(strstr(o[i].error, "queue full"));
    }
    free(o);

    t0 = now_us();
    notify_stop(n);
    int64_t stop = now_us() - t0;
    print_message("notify_stop with an answer 3 s away and %d waiting: %.0f ms\n", NOTIFY_QUEUE_MAX,
                  stop / 1e3);
    assert_true(stop < 2500000); /* the answer would have come after 3 s */
    assert_int_equal(receiver_count(rx), 1);
    json_decref(ev);
    receiver_stop(rx);
}

int main(void)
{
    /* notify_stop logs what it could not deliver: a thousand lines here. */
    setenv("RUNG_LOG", "error", 1);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retried_until_taken), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_unreachable),         cmocka_unit_test(test_who_hears),
        cmocka_unit_test(test_never_waits),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
