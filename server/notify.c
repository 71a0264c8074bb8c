/* Webhooks; see notify.h. The configuration and the bodies are pure
 * functions at the top; the queue and its delivery thread (libcurl) below. */
#include "notify.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "jsonv.h"
#include "log.h"
#include "sha256hex.h"

#define A RUNG_E_INVALID_ARGUMENT
#define MAX_WAIT_MS (5 * 60 * 1000) /* the longest wait between attempts */
#define ATTEMPT_TIMEOUT_MS 10000

/* ---- configuration ---- */

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 64 &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

static bool kind_ok(const char *s)
{
    size_t n = strlen(s);
    return (n >= 1 && n <= 63 && strspn(s, "abcdefghijklmnopqrstuvwxyz_.") == n && s[0] != '.' &&
            s[n - 1] != '.') ||
           strcmp(s, "*") == 0;
}

static int parse_one(const json_t *o, const char *path, Notifier *n, RungError *err)
{
    static const char *const keys[] = {"name",   "url",          "secret",        "events",
                                       "format", "max_attempts", "retry_base_ms", NULL};
    const char *name, *url, *secret, *format = "json";
    int64_t attempts = 5, base = 1000;
    char field[96];
    if (jsonv_object(o, path, A, err) || jsonv_only_keys(o, path, keys, A, err) ||
        jsonv_string(o, path, "name", JSONV_REQUIRED, 64, &name, A, err) ||
        jsonv_string(o, path, "url", JSONV_REQUIRED, 2048, &url, A, err) ||
        jsonv_string(o, path, "secret", JSONV_REQUIRED, 1024, &secret, A, err) ||
        jsonv_string(o, path, "format", JSONV_OPTIONAL, 16, &format, A, err) ||
        jsonv_int(o, path, "max_attempts", JSONV_OPTIONAL, 1, 20, &attempts, A, err) ||
        jsonv_int(o, path, "retry_base_ms", JSONV_OPTIONAL, 10, 600000, &base, A, err))
        return err->code;
    snprintf(field, sizeof field, "%s.name", path);
    if (!name_ok(name))
        return rung_error_set(err, A, field, "%s: 1 to 64 of A-Z a-z 0-9 _ . -", field);
    snprintf(field, sizeof field, "%s.url", path);
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return rung_error_set(err, A, field, "%s: must start with http:// or https://", field);
    snprintf(field, sizeof field, "%s.secret", path);
    if (strlen(secret) < 16)
        return rung_error_set(err, A, field,
                              "%s: at least 16 bytes (the receiver checks the signature "
                              "with it)",
                              field);
    snprintf(field, sizeof field, "%s.format", path);
    if (strcmp(format, "json") != 0 && strcmp(format, "slack") != 0)
        return rung_error_set(err, A, field, "%s: json or slack", field);
    json_t *events = json_object_get(o, "events");
    snprintf(field, sizeof field, "%s.events", path);
    if (!json_is_array(events) || json_array_size(events) < 1 ||
        json_array_size(events) > NOTIFY_MAX_KINDS)
        return rung_error_set(err, A, field,
                              "%s: an array of 1 to %d event kinds (\"experiment.ended\", a "
                              "family \"trial\", or \"*\")",
                              field, NOTIFY_MAX_KINDS);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->url = strdup(url);
    n->secret = strdup(secret);
    n->format = strcmp(format, "slack") == 0 ? NOTIFY_SLACK : NOTIFY_JSON;
    n->max_attempts = (int)attempts;
    n->retry_base_ms = base;
    size_t i;
    json_t *k;
    json_array_foreach(events, i, k) {
        snprintf(field, sizeof field, "%s.events[%zu]", path, i);
        if (!json_is_string(k) || !kind_ok(json_string_value(k)))
            return rung_error_set(err, A, field,
                                  "%s: an event kind of docs/api.md's Events, a family, or *",
                                  field);
        n->kinds[n->n_kinds++] = strdup(json_string_value(k));
    }
    return 0;
}

int notify_config_parse(const json_t *j, NotifyConfig *out, RungError *err)
{
    static const char *const keys[] = {"notifiers", NULL};
    memset(out, 0, sizeof *out);
    if (jsonv_object(j, "", A, err) || jsonv_only_keys(j, "", keys, A, err))
        return err->code;
    json_t *list = json_object_get(j, "notifiers");
    if (!json_is_array(list) || json_array_size(list) > NOTIFY_MAX)
        return rung_error_set(err, A, "notifiers", "notifiers: an array of at most %d notifiers",
                              NOTIFY_MAX);
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o) {
        char path[32];
        snprintf(path, sizeof path, "notifiers[%zu]", i);
        Notifier *n = &out->notifiers[out->n++];
        if (parse_one(o, path, n, err))
            goto fail;
        if (notify_find(out, n->name) != n) {
            snprintf(path + strlen(path), sizeof path - strlen(path), ".name");
            rung_error_set(err, A, path, "%s: '%s' is named twice", path, n->name);
            goto fail;
        }
    }
    return 0;
fail:
    notify_config_free(out);
    return err->code;
}

int notify_config_load(const char *path, NotifyConfig *out, RungError *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL)
        return rung_error_set(err, RUNG_E_BAD_JSON, "", "%s:%d: %s", path, je.line, je.text);
    int rc = notify_config_parse(j, out, err);
    json_decref(j);
    return rc;
}

void notify_config_free(NotifyConfig *c)
{
    for (int i = 0; i < c->n; i++) {
        Notifier *n = &c->notifiers[i];
        free(n->url);
        if (n->secret != NULL)
            memset(n->secret, 0, strlen(n->secret));
        free(n->secret);
        for (int k = 0; k < n->n_kinds; k++)
            free(n->kinds[k]);
    }
    memset(c, 0, sizeof *c);
}

const Notifier *notify_find(const NotifyConfig *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->notifiers[i].name, name) == 0)
            return &c->notifiers[i];
    return NULL;
}

bool notify_wants(const Notifier *n, const char *kind)
{
    size_t len = strlen(kind);
    for (int i = 0; i < n->n_kinds; i++) {
        const char *k = n->kinds[i];
        size_t kl = strlen(k);
        if (strcmp(k, "*") == 0 || strcmp(k, kind) == 0 ||
            (kl < len && strncmp(k, kind, kl) == 0 && kind[kl] == '.'))
            return true;
    }
    return false;
}

/* ---- bodies ---- */

char *notify_text(const json_t *event)
{
    const char *kind = json_string_value(json_object_get(event, "kind"));
    const json_t *d = json_object_get(event, "detail");
    json_int_t exp = json_integer_value(json_object_get(event, "experiment_id"));
    json_int_t trial = json_integer_value(json_object_get(event, "trial_id"));
    const char *actor = json_string_value(json_object_get(json_object_get(event, "actor"), "name"));
    const char *state = json_string_value(json_object_get(d, "state"));
    const char *reason = json_string_value(json_object_get(d, "reason"));
    const char *error = json_string_value(json_object_get(d, "error"));
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (f == NULL)
        abort();
    fprintf(f, "Rung: ");
    if (kind && strncmp(kind, "experiment.", 11) == 0)
        fprintf(f, "experiment %lld %s", (long long)exp, kind + 11);
    else if (kind && strncmp(kind, "trial.", 6) == 0)
        fprintf(f, "trial %lld of experiment %lld %s", (long long)trial, (long long)exp, kind + 6);
    else
        fprintf(f, "%s", kind ? kind : "event");
    if (state && reason)
        fprintf(f, " (%s, %s)", state, reason);
    if (actor && strcmp(actor, "rungd") != 0)
        fprintf(f, " by %s", actor);
    if (error)
        fprintf(f, ": %.200s", error);
    fclose(f);
    return out;
}

char *notify_body(const json_t *event, NotifyFormat format)
{
    char *text = notify_text(event);
    json_t *body = format == NOTIFY_SLACK ? json_pack("{s:s, s:O}", "text", text, "event", event)
                                          : json_deep_copy(event);
    if (format == NOTIFY_JSON)
        json_object_set_new(body, "text", json_string(text));
    free(text);
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (s == NULL)
        abort();
    return s;
}

void notify_signature(const char *secret, const char *body, size_t len, char out[72])
{
    unsigned char md[32];
    unsigned int n = 0;
    if (HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)body, len, md, &n) ==
            NULL ||
        n != 32)
        abort();
    memcpy(out, "sha256=", 7);
    rung_sha256_to_hex(md, out + 7);
}

/* ---- the queue and its thread ---- */

typedef struct Delivery {
    int notifier;
    char *body;
    int64_t event_id;
    char kind[64];
    int attempts;
    int64_t next_ms; /* monotonic */
    long status;
    char error[160];
} Delivery;

struct Notify {
    NotifyConfig cfg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stopping;
    /* stopping, for libcurl's progress callback, which runs without mu. */
    atomic_bool halt;
    Delivery *queue; /* waiting, unordered */
    size_t n_queue;
    NotifyOutcome *done;
    size_t n_done, cap_done;
};

static int64_t now_ms(void)
{
    return rung_mono_ns() / 1000000;
}

/* Under mu. */
static void finish(Notify *n, Delivery *d, bool delivered)
{
    if (n->n_done == n->cap_done) {
        n->cap_done = n->cap_done ? 2 * n->cap_done : 64;
        n->done = realloc(n->done, n->cap_done * sizeof *n->done);
        if (n->done == NULL)
            abort();
    }
    NotifyOutcome *o = &n->done[n->n_done++];
    memset(o, 0, sizeof *o);
    snprintf(o->notifier, sizeof o->notifier, "%s", n->cfg.notifiers[d->notifier].name);
    o->event_id = d->event_id;
    snprintf(o->kind, sizeof o->kind, "%s", d->kind);
    o->delivered = delivered;
    o->attempts = d->attempts;
    o->http_status = d->status;
    snprintf(o->error, sizeof o->error, "%s", delivered ? "" : d->error);
    free(d->body);
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

/* libcurl calls this at least about once a second, also while it waits
 * for a connection or an answer: a nonzero answer ends the attempt, so
 * notify_stop waits about a second at most, never a slow receiver's full
 * ATTEMPT_TIMEOUT_MS. */
static int halt_on_stop(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                        curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return atomic_load(&((Notify *)ctx)->halt) ? 1 : 0;
}

/* One POST of d; true when the receiver took it (2xx). Sets d's status
 * and error; *retry when another attempt may succeed. */
static bool post(Notify *n, const Notifier *nt, Delivery *d, bool *retry)
{
    char sig[72], header[128];
    size_t len = strlen(d->body);
    notify_signature(nt->secret, d->body, len, sig);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    snprintf(header, sizeof header, "X-Rung-Signature: %s", sig);
    h = curl_slist_append(h, header);
    snprintf(header, sizeof header, "X-Rung-Event: %s", d->kind);
    h = curl_slist_append(h, header);
    snprintf(header, sizeof header, "X-Rung-Delivery: %lld-%s", (long long)d->event_id, nt->name);
    h = curl_slist_append(h, header);
    CURL *c = curl_easy_init();
    if (c == NULL || h == NULL)
        abort();
    curl_easy_setopt(c, CURLOPT_URL, nt->url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, d->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)ATTEMPT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "rungd");
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, halt_on_stop);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, n);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    CURLcode rc = curl_easy_perform(c);
    d->status = 0;
    bool ok = false;
    *retry = true;
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(d->error, sizeof d->error, "rungd stopped");
    } else if (rc != CURLE_OK) {
        /* curl's words for the failure, never the URL (a Slack URL is a
         * credential) nor the secret. */
        snprintf(d->error, sizeof d->error, "%s", curl_easy_strerror(rc));
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &d->status);
        ok = d->status >= 200 && d->status < 300;
        /* 4xx but 429 says this body will never do: no retry. */
        *retry = !ok && (d->status >= 500 || d->status == 429 || d->status < 200);
        snprintf(d->error, sizeof d->error, "HTTP %ld", d->status);
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return ok;
}

static void *run(void *arg)
{
    Notify *n = arg;
    pthread_mutex_lock(&n->mu);
    while (!n->stopping) {
        /* The earliest delivery due. */
        size_t best = n->n_queue;
        for (size_t i = 0; i < n->n_queue; i++)
            if (best == n->n_queue || n->queue[i].next_ms < n->queue[best].next_ms)
                best = i;
        int64_t t = now_ms();
        if (best == n->n_queue || n->queue[best].next_ms > t) {
            int64_t wait = best == n->n_queue ? 1000 : n->queue[best].next_ms - t;
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += wait / 1000;
            until.tv_nsec += (wait % 1000) * 1000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&n->cond, &n->mu, &until);
            continue;
        }
        Delivery d = n->queue[best];
        n->queue[best] = n->queue[--n->n_queue];
        pthread_mutex_unlock(&n->mu);
        const Notifier *nt = &n->cfg.notifiers[d.notifier];
        bool retry;
        d.attempts++;
        bool ok = post(n, nt, &d, &retry);
        pthread_mutex_lock(&n->mu);
        if (ok || !retry || d.attempts >= nt->max_attempts || n->stopping) {
            finish(n, &d, ok);
            continue;
        }
        if (n->n_queue == NOTIFY_QUEUE_MAX) { /* refilled meanwhile */
            snprintf(d.error, sizeof d.error, "queue full (%d waiting)", NOTIFY_QUEUE_MAX);
            finish(n, &d, false);
            continue;
        }
        int64_t wait = nt->retry_base_ms << (d.attempts - 1 < 20 ? d.attempts - 1 : 20);
        d.next_ms = now_ms() + (wait < MAX_WAIT_MS ? wait : MAX_WAIT_MS);
        n->queue[n->n_queue++] = d;
    }
    for (size_t i = 0; i < n->n_queue; i++) {
        snprintf(n->queue[i].error, sizeof n->queue[i].error, "rungd stopped");
        finish(n, &n->queue[i], false);
    }
    n->n_queue = 0;
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

Notify *notify_start(NotifyConfig *cfg)
{
    Notify *n = calloc(1, sizeof *n);
    if (n == NULL)
        abort();
    n->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    atomic_init(&n->halt, false);
    n->queue = calloc(NOTIFY_QUEUE_MAX, sizeof *n->queue);
    if (n->queue == NULL)
        abort();
    pthread_mutex_init(&n->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&n->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&n->thread, NULL, run, n) != 0)
        abort();
    return n;
}

void notify_stop(Notify *n)
{
    if (n == NULL)
        return;
    pthread_mutex_lock(&n->mu);
    n->stopping = true;
    atomic_store(&n->halt, true);
    pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    for (size_t i = 0; i < n->n_done; i++)
        if (!n->done[i].delivered)
            LOG_WARN("notifier %s: event %lld (%s) not delivered: %s", n->done[i].notifier,
                     (long long)n->done[i].event_id, n->done[i].kind, n->done[i].error);
    free(n->done);
    free(n->queue);
    notify_config_free(&n->cfg);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cond);
    free(n);
}

const NotifyConfig *notify_config(const Notify *n)
{
    return &n->cfg;
}

/* Whether chosen (an array of names, or NULL: all) names nt. */
static bool chosen_by(const json_t *chosen, const Notifier *nt)
{
    if (chosen == NULL)
        return true;
    size_t i;
    json_t *v;
    json_array_foreach(chosen, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), nt->name) == 0)
            return true;
    }
    return false;
}

void notify_event(Notify *n, const json_t *event, const json_t *chosen)
{
    const char *kind = json_string_value(json_object_get(event, "kind"));
    if (n == NULL || kind == NULL || strncmp(kind, "notify.", 7) == 0)
        return;
    for (int i = 0; i < n->cfg.n; i++) {
        const Notifier *nt = &n->cfg.notifiers[i];
        if (!notify_wants(nt, kind) || !chosen_by(chosen, nt))
            continue;
        Delivery d = {.notifier = i,
                      .body = notify_body(event, nt->format),
                      .event_id = json_integer_value(json_object_get(event, "id")),
                      .next_ms = 0};
        snprintf(d.kind, sizeof d.kind, "%s", kind);
        pthread_mutex_lock(&n->mu);
        if (n->n_queue == NOTIFY_QUEUE_MAX) {
            /* Full: the oldest waiting one gives way, reported failed. */
            size_t old = 0;
            for (size_t k = 1; k < n->n_queue; k++)
                if (n->queue[k].event_id < n->queue[old].event_id)
                    old = k;
            Delivery gone = n->queue[old];
            n->queue[old] = n->queue[--n->n_queue];
            snprintf(gone.error, sizeof gone.error, "queue full (%d waiting)", NOTIFY_QUEUE_MAX);
            finish(n, &gone, false);
        }
        n->queue[n->n_queue++] = d;
        pthread_cond_signal(&n->cond);
        pthread_mutex_unlock(&n->mu);
    }
}

size_t notify_drain(Notify *n, NotifyOutcome *out, size_t max)
{
    if (n == NULL)
        return 0;
    pthread_mutex_lock(&n->mu);
    size_t k = n->n_done < max ? n->n_done : max;
    if (k > 0) { /* n->done is NULL until the first outcome */
        memcpy(out, n->done, k * sizeof *out);
        memmove(n->done, n->done + k, (n->n_done - k) * sizeof *n->done);
        n->n_done -= k;
    }
    pthread_mutex_unlock(&n->mu);
    return k;
}
