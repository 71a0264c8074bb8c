/* JSON over libcurl with retries; see client.h. */
#include "client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "clock.h"
#include "log.h"

/* While the daemon stays away, repeat the warning this often, not per retry. */
#define RETRY_LOG_EVERY_NS (30LL * 1000000000LL)
/* Sleeps between retries are cut into slices this long to notice a cancel. */
#define SLEEP_SLICE_MS 50

struct Client {
    CURL *curl;
    struct curl_slist *headers;
    char *base; /* base URL without a trailing '/' */
    char *buf;  /* reply body of the request in flight */
    size_t len, cap;
    bool too_large;
    ClientCancel cancel; /* of the request in flight */
    void *cancel_arg;
    uint64_t rng; /* backoff jitter */
    char errbuf[CURL_ERROR_SIZE];
};

Client *client_new(const char *base_url, const char *token)
{
    Client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->curl = curl_easy_init();
    c->base = strdup(base_url);
    if (c->curl == NULL || c->base == NULL) {
        client_free(c);
        return NULL;
    }
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = '\0';
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = h ? curl_slist_append(h, "Accept: application/json") : NULL;
    /* No "Expect: 100-continue" round trip before bodies over 1 KiB. */
    h = h ? curl_slist_append(h, "Expect:") : NULL;
    if (h && token && token[0]) {
        size_t len = strlen(token) + 32;
        char *auth = malloc(len);
        if (auth) {
            snprintf(auth, len, "Authorization: Bearer %s", token);
            struct curl_slist *h2 = curl_slist_append(h, auth);
            free(auth);
            if (h2 == NULL) {
                curl_slist_free_all(h);
                h = NULL;
            }
        } else {
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
    free(c->base);
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

/* Called by curl about once a second or more often during a transfer. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    Client *c = arg;
    return c->cancel && c->cancel(c->cancel_arg) ? 1 : 0;
}

/* One attempt. out is cleared first. */
static void attempt(Client *c, const char *url, const char *payload, long timeout_ms,
                    ClientReply *out)
{
    client_reply_clear(out);
    c->len = 0;
    c->too_large = false;
    c->errbuf[0] = '\0';
    CURL *h = c->curl;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CLIENT_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        if (c->too_large)
            snprintf(out->error, sizeof out->error, "reply larger than %d bytes", CLIENT_MAX_REPLY);
        else
            snprintf(out->error, sizeof out->error, "%s",
                     c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
        return;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
    if (c->len > 0) {
        c->buf[c->len] = '\0';
        out->body = json_loadb(c->buf, c->len, 0, NULL);
    }
    if (out->status >= 200 && out->status <= 299)
        return;
    json_t *e = json_object_get(out->body, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (code)
        snprintf(out->error, sizeof out->error, "%ld %s: %s", out->status, code, msg ? msg : "");
    else
        snprintf(out->error, sizeof out->error, "HTTP status %ld", out->status);
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

int client_post(Client *c, const char *path, const json_t *body, const ClientCall *call,
                ClientReply *out)
{
    memset(out, 0, sizeof *out);
    static const ClientCall plain = {0};
    if (call == NULL)
        call = &plain;
    const char *what = call->what ? call->what : path;
    char *payload = body ? json_dumps(body, JSON_COMPACT) : strdup("{}");
    size_t url_len = strlen(c->base) + strlen(path) + 1;
    char *url = malloc(url_len);
    if (payload == NULL || url == NULL) {
        free(payload);
        free(url);
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    snprintf(url, url_len, "%s%s", c->base, path);
    c->cancel = call->cancel;
    c->cancel_arg = call->cancel_arg;
    long timeout_ms = call->timeout_ms > 0 ? call->timeout_ms : CLIENT_TIMEOUT_MS;
    int rc = 0;
    int64_t last_log = 0;
    for (int retry = 0;; retry++) {
        if (cancelled(call)) {
            rc = -1;
            break;
        }
        attempt(c, url, payload, timeout_ms, out);
        if (out->status == 0 && cancelled(call)) {
            rc = -1;
            break;
        }
        if (!client_retryable(out->status)) {
            if (retry > 0)
                LOG_INFO("%s: delivered after %d retries", what, retry);
            break;
        }
        if (!call->retry) {
            rc = out->status == 0 ? -1 : 0;
            break;
        }
        int64_t now = rung_mono_ns();
        if (retry == 0 || now - last_log >= RETRY_LOG_EVERY_NS) {
            LOG_WARN("%s: %s; retrying%s", what, out->error[0] ? out->error : "no reply",
                     retry == 0 ? "" : " (still)");
            last_log = now;
        }
        sleep_ms(backoff_delay_ms(retry, BACKOFF_BASE_MS, BACKOFF_CAP_MS, &c->rng), call);
    }
    c->cancel = NULL;
    c->cancel_arg = NULL;
    free(payload);
    free(url);
    return rc;
}
