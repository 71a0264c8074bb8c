/* server_load: the scheduler throughput benchmark (bench/README.md, section 1).
 *
 * It plays W workers of the pull protocol of docs/api.md against a running rungd:
 * one thread per worker, each with its own curl easy handle, so every worker
 * keeps one keep-alive connection and no handle is shared by two threads.
 * The main thread creates one experiment (random searcher, fifo or asha
 * scheduler, num_samples = T), the workers register, wait at a gate, and
 * then loop lease -> R reports -> finish until a lease answers 204.
 *
 * What it measures: wall time from the first lease request to the last
 * finish answer (registration and the final 204 long polls are left out),
 * hence trials/s and reports/s, and the latency of every report request on
 * the monotonic clock, summarized as p50 and p99 (nearest rank).
 *
 * It is also a check: every HTTP status is compared with the one the
 * contract promises, and at the end the experiment must be `completed` with
 * every trial accounted for. Any surprise prints the request and the answer
 * and makes the exit status 1, so a fast but wrong daemon never scores. */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* More threads than this would measure the client's scheduler, not rungd. */
#define LOAD_MAX_WORKERS 1024
/* One experiment's trials; enough for minutes of work at any sane rate. */
#define LOAD_MAX_TRIALS 1000000
/* Reports per trial; the benchmark uses 20. */
#define LOAD_MAX_REPORTS 10000
/* Longest server URL we accept, scheme and port included. */
#define LOAD_URL_MAX 512
/* Longest request path plus query. */
#define LOAD_PATH_MAX 256
/* Largest answer we keep: the experiment object is the biggest we read. */
#define LOAD_RESPONSE_MAX (1024 * 1024)
/* Longest lease token we accept; the contract leaves it opaque. */
#define LOAD_TOKEN_MAX 512
/* Longest request body we build (a report is ~100 bytes). */
#define LOAD_BODY_MAX 2048
/* How many failures are printed in full; later ones only count. */
#define LOAD_FAILURES_SHOWN 5
/* How long the final check waits for the experiment to read `completed`. */
#define LOAD_SETTLE_MS 10000

typedef enum { LOAD_FIFO, LOAD_ASHA } Scheduler;

typedef struct Options {
    char server[LOAD_URL_MAX]; /* base URL, no trailing slash */
    const char *token;         /* bearer token or NULL; borrowed from argv/env */
    int workers;               /* threads, 1..LOAD_MAX_WORKERS */
    int trials;                /* num_samples, 1..LOAD_MAX_TRIALS */
    int reports;               /* reports per trial, 1..LOAD_MAX_REPORTS */
    int seed;                  /* searcher seed, >= 0 */
    int wait_s;                /* lease long poll, seconds, 0..30 */
    Scheduler scheduler;       /* fifo: nothing is stopped; asha: rf 3 */
    bool json;                 /* also print one JSON object per result line */
    int floor;                 /* > 0: time this many GET /healthz instead */
} Options;

/* One keep-alive HTTP client. Owned by exactly one thread. */
typedef struct Http {
    CURL *curl;                   /* easy handle; keeps the connection */
    struct curl_slist *headers;   /* Content-Type, Authorization, no Expect */
    const Options *opt;           /* borrowed */
    char *resp;                   /* answer body, NUL-terminated */
    size_t resp_len;              /* bytes in resp, < LOAD_RESPONSE_MAX */
    bool resp_truncated;          /* the answer was larger than the cap */
    long connects;                /* new connections opened so far */
    char errbuf[CURL_ERROR_SIZE]; /* curl's message for a transport error */
} Http;

/* Report latencies of one worker, nanoseconds; grows by doubling and holds at
 * most trials x reports in all, since a worker never leases more. */
typedef struct Samples {
    int64_t *ns; /* latencies */
    size_t len;  /* used */
    size_t cap;  /* allocated */
} Samples;

/* Holds the workers until all have registered, so that registration is not
 * timed and the first lease does not race the last registration. */
typedef struct Gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int arrived; /* workers done registering, failed or not */
    bool open;   /* set once by main */
} Gate;

typedef struct Worker {
    int index; /* 0-based */
    pthread_t thread;
    const Options *opt;    /* borrowed */
    Gate *gate;            /* borrowed */
    int64_t experiment_id; /* every leased trial must belong to it */
    Http http;
    int64_t worker_id;      /* from registration */
    Samples lat;            /* report latencies */
    int64_t first_lease_ns; /* monotonic, before the first lease; 0 = none */
    int64_t last_finish_ns; /* monotonic, after the last finish; 0 = none */
    long trials;            /* trials leased */
    long reports;           /* reports answered 200 */
    long stops;             /* reports answered "stop" */
} Worker;

static atomic_int g_failures;
static pthread_mutex_t g_print_lock = PTHREAD_MUTEX_INITIALIZER;

/* Records one failure and prints it in full while few have been seen. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    int seen = atomic_fetch_add(&g_failures, 1);
    if (seen >= LOAD_FAILURES_SHOWN)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&g_print_lock);
    fputs("server_load: FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&g_print_lock);
    va_end(ap);
}

static bool failed(void)
{
    return atomic_load(&g_failures) > 0;
}

static size_t http_on_data(char *data, size_t size, size_t nmemb, void *user)
{
    Http *h = user;
    size_t n = size * nmemb;
    size_t room = LOAD_RESPONSE_MAX - 1 - h->resp_len;
    if (n > room) {
        h->resp_truncated = true;
        n = room;
    }
    memcpy(h->resp + h->resp_len, data, n);
    h->resp_len += n;
    h->resp[h->resp_len] = '\0';
    return size * nmemb;
}

/* Makes a client for opt->server. Returns 0, or -1 (nothing to free but
 * http_close, which takes a half-built client). */
static int http_init(Http *h, const Options *opt)
{
    memset(h, 0, sizeof(*h));
    h->opt = opt;
    h->resp = malloc(LOAD_RESPONSE_MAX);
    h->curl = curl_easy_init();
    if (!h->resp || !h->curl)
        return -1;
    h->resp[0] = '\0';
    /* curl sends "Expect: 100-continue" for bodies over 1 KiB, which would
     * cost a round trip on a benchmark that is all round trips. */
    const char *fixed[] = {"Content-Type: application/json", "Expect:"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        struct curl_slist *list = curl_slist_append(h->headers, fixed[i]);
        if (!list)
            return -1;
        h->headers = list;
    }
    if (opt->token) {
        char auth[LOAD_TOKEN_MAX + 32];
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", opt->token);
        struct curl_slist *list = curl_slist_append(h->headers, auth);
        if (!list)
            return -1;
        h->headers = list;
    }
    CURL *c = h->curl;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
    /* Threads: no SIGALRM-based DNS timeouts. */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    /* Talk to the server itself, never to a proxy named in the environment. */
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    /* A lease may long-poll wait_s; anything 30 s beyond that is a hang. */
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(opt->wait_s + 30) * 1000L);
    return 0;
}

/* Accepts NULL members, so a half-built client can be closed. */
static void http_close(Http *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->headers);
    free(h->resp);
    memset(h, 0, sizeof(*h));
}

/* Sends one request (body NULL = GET) and stores the answer in h->resp.
 * Returns the HTTP status, or -1 after reporting a transport failure. */
static long http_request(Http *h, const char *path, const char *body)
{
    char url[LOAD_URL_MAX + LOAD_PATH_MAX];
    snprintf(url, sizeof(url), "%s%s", h->opt->server, path);
    h->resp_len = 0;
    h->resp[0] = '\0';
    h->resp_truncated = false;
    h->errbuf[0] = '\0';
    curl_easy_setopt(h->curl, CURLOPT_URL, url);
    if (body) {
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
    }
    CURLcode rc = curl_easy_perform(h->curl);
    if (rc != CURLE_OK) {
        fail("%s %s: %s", body ? "POST" : "GET", path,
             h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
        return -1;
    }
    long status = 0, connects = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(h->curl, CURLINFO_NUM_CONNECTS, &connects);
    h->connects += connects;
    return status;
}

/* Reports an unexpected answer with the request that drew it. */
static void fail_answer(const Http *h, const char *path, const char *body, long status,
                        const char *why)
{
    fail("%s %s %s -> %ld %s%s: %s", body ? "POST" : "GET", path, body ? body : "", status, h->resp,
         h->resp_truncated ? "..." : "", why);
}

/* One request that must answer `want`. When out is not NULL the answer must
 * be a JSON object, returned as a new reference (free with json_decref).
 * Returns 0, or -1 after reporting the failure. */
static int http_expect(Http *h, const char *path, const char *body, long want, json_t **out)
{
    long status = http_request(h, path, body);
    if (status < 0)
        return -1;
    if (status != want) {
        char why[64];
        snprintf(why, sizeof(why), "expected HTTP %ld", want);
        fail_answer(h, path, body, status, why);
        return -1;
    }
    if (!out)
        return 0;
    json_error_t jerr;
    json_t *doc = json_loadb(h->resp, h->resp_len, 0, &jerr);
    if (!doc || !json_is_object(doc)) {
        fail_answer(h, path, body, status, "answer is not a JSON object");
        json_decref(doc);
        return -1;
    }
    *out = doc;
    return 0;
}

/* A JSON integer member >= 1, or -1 when absent or of another kind. */
static int64_t json_id(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1)
        return -1;
    return (int64_t)json_integer_value(v);
}

static int samples_push(Samples *s, int64_t ns)
{
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        int64_t *grown = realloc(s->ns, cap * sizeof(*grown));
        if (!grown)
            return -1;
        s->ns = grown;
        s->cap = cap;
    }
    s->ns[s->len++] = ns;
    return 0;
}

/* The synthetic learning curve: converges to (x - 0.3)^2 as step grows. */
static double loss_at(double x, int step)
{
    return (x - 0.3) * (x - 0.3) + 0.5 / (double)step;
}

static int register_worker(Worker *w)
{
    char host[256] = "localhost";
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    char name[32];
    snprintf(name, sizeof(name), "load-%d", w->index);
    json_t *req = json_pack("{s:s, s:s, s:[], s:i}", "name", name, "hostname", host, "gpus", "cpus",
                            1);
    if (!req) {
        fail("out of memory");
        return -1;
    }
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!body) {
        fail("out of memory");
        return -1;
    }
    json_t *ans = NULL;
    int rc = http_expect(&w->http, "/api/v1/workers", body, 201, &ans);
    if (rc == 0) {
        w->worker_id = json_id(ans, "worker_id");
        if (w->worker_id < 0) {
            fail_answer(&w->http, "/api/v1/workers", body, 201, "no positive worker_id");
            rc = -1;
        }
    }
    json_decref(ans);
    free(body);
    return rc;
}

/* A leased trial: what the reports and the finish need. */
typedef struct Lease {
    int64_t trial_id;
    double x;
    char token_json[LOAD_TOKEN_MAX + 3]; /* the lease token as a JSON string */
} Lease;

/* Leases one trial. Returns 1 with *lease filled, 0 on 204, -1 on failure. */
static int lease_trial(Worker *w, Lease *lease)
{
    char path[LOAD_PATH_MAX];
    char body[LOAD_BODY_MAX];
    snprintf(path, sizeof(path), "/api/v1/workers/%lld/lease", (long long)w->worker_id);
    snprintf(body, sizeof(body), "{\"cpus\":1,\"gpus\":[],\"wait_s\":%d}", w->opt->wait_s);
    long status = http_request(&w->http, path, body);
    if (status < 0)
        return -1;
    if (status == 204)
        return 0;
    if (status != 200) {
        fail_answer(&w->http, path, body, status, "expected HTTP 200 or 204");
        return -1;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(w->http.resp, w->http.resp_len, 0, &jerr);
    json_t *trial = json_object_get(doc, "trial");
    json_t *token = json_object_get(trial, "lease_token");
    json_t *x = json_object_get(json_object_get(trial, "config"), "x");
    int rc = -1;
    lease->trial_id = json_id(trial, "id");
    if (lease->trial_id < 0 || !json_is_string(token) || !json_is_number(x)) {
        fail_answer(&w->http, path, body, status, "want trial.id, trial.lease_token, config.x");
    } else if (json_id(trial, "experiment_id") != w->experiment_id) {
        fail_answer(&w->http, path, body, status, "trial.experiment_id is not ours");
    } else if (json_string_length(token) < 1 || json_string_length(token) > LOAD_TOKEN_MAX) {
        fail_answer(&w->http, path, body, status, "lease_token length out of range");
    } else if (!(json_number_value(x) >= 0.0 && json_number_value(x) < 1.0)) {
        fail_answer(&w->http, path, body, status, "config.x outside [0, 1)");
    } else {
        lease->x = json_number_value(x);
        char *enc = json_dumps(token, JSON_ENCODE_ANY);
        if (enc && strlen(enc) < sizeof(lease->token_json)) {
            memcpy(lease->token_json, enc, strlen(enc) + 1);
            rc = 1;
        } else {
            fail("cannot encode lease token");
        }
        free(enc);
    }
    json_decref(doc);
    return rc;
}

/* Sends the reports of one trial, timing each. Returns 0 (stopped or not),
 * -1 on failure; *stopped tells whether the scheduler said stop. */
static int report_trial(Worker *w, const Lease *lease, bool *stopped)
{
    char path[LOAD_PATH_MAX];
    char body[LOAD_BODY_MAX];
    snprintf(path, sizeof(path), "/api/v1/trials/%lld/report", (long long)lease->trial_id);
    *stopped = false;
    for (int step = 1; step <= w->opt->reports; step++) {
        snprintf(body, sizeof(body),
                 "{\"lease_token\":%s,\"step\":%d,\"metrics\":{\"loss\":%.17g}}", lease->token_json,
                 step, loss_at(lease->x, step));
        int64_t t0 = rung_mono_ns();
        json_t *ans = NULL;
        if (http_expect(&w->http, path, body, 200, &ans) != 0)
            return -1;
        int64_t t1 = rung_mono_ns();
        if (samples_push(&w->lat, t1 - t0) != 0) {
            json_decref(ans);
            fail("out of memory");
            return -1;
        }
        w->reports++;
        const char *action = json_string_value(json_object_get(ans, "action"));
        bool stop = action && strcmp(action, "stop") == 0;
        if (!action || (!stop && strcmp(action, "continue") != 0)) {
            fail_answer(&w->http, path, body, 200, "action must be continue or stop");
            json_decref(ans);
            return -1;
        }
        json_decref(ans);
        if (stop && w->opt->scheduler == LOAD_FIFO) {
            fail_answer(&w->http, path, body, 200, "fifo must never stop a trial");
            return -1;
        }
        if (stop) {
            w->stops++;
            *stopped = true;
            return 0;
        }
    }
    return 0;
}

static int finish_trial(Worker *w, const Lease *lease, bool stopped)
{
    char path[LOAD_PATH_MAX];
    char body[LOAD_BODY_MAX];
    snprintf(path, sizeof(path), "/api/v1/trials/%lld/finish", (long long)lease->trial_id);
    snprintf(body, sizeof(body), "{\"lease_token\":%s,\"status\":\"completed\"}",
             lease->token_json);
    long status = http_request(&w->http, path, body);
    if (status < 0)
        return -1;
    /* A trial the scheduler stopped has ended already; the contract leaves
     * open whether its lease still holds, so 409 lease_lost is fine there. */
    if (status == 200 || (stopped && status == 409))
        return 0;
    fail_answer(&w->http, path, body, status, "expected HTTP 200");
    return -1;
}

/* Says w has arrived and waits until main opens the gate. Everyone
 * arrives, failed or not, so that main never waits forever. */
static void gate_pass(Worker *w)
{
    pthread_mutex_lock(&w->gate->lock);
    w->gate->arrived++;
    pthread_cond_broadcast(&w->gate->cond);
    while (!w->gate->open)
        pthread_cond_wait(&w->gate->cond, &w->gate->lock);
    pthread_mutex_unlock(&w->gate->lock);
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    int rc = register_worker(w);
    gate_pass(w);
    if (rc != 0)
        return NULL;
    /* A worker can never get more than T trials; one more lease sees 204. */
    for (long round = 0; round <= (long)w->opt->trials && !failed(); round++) {
        Lease lease;
        int64_t t0 = rung_mono_ns();
        int got = lease_trial(w, &lease);
        if (got <= 0)
            return NULL;
        if (w->first_lease_ns == 0)
            w->first_lease_ns = t0;
        w->trials++;
        bool stopped = false;
        if (report_trial(w, &lease, &stopped) != 0 || finish_trial(w, &lease, stopped) != 0)
            return NULL;
        w->last_finish_ns = rung_mono_ns();
    }
    if (!failed())
        fail("worker %d leased more than --trials %d trials", w->index, w->opt->trials);
    return NULL;
}

/* --floor: the same threads and keep-alive handles send GET /healthz, which
 * rungd answers in its HTTP layer without the engine or SQLite. Its rate is
 * what this client, this HTTP stack and this machine allow at all: the
 * ceiling the report rate is measured against. */
static void *floor_main(void *arg)
{
    Worker *w = arg;
    gate_pass(w);
    long share = w->opt->floor / w->opt->workers + (w->index < w->opt->floor % w->opt->workers);
    w->first_lease_ns = rung_mono_ns();
    for (long i = 0; i < share && !failed(); i++) {
        int64_t t0 = rung_mono_ns();
        if (http_expect(&w->http, "/healthz", NULL, 200, NULL) != 0)
            return NULL;
        if (samples_push(&w->lat, rung_mono_ns() - t0) != 0) {
            fail("out of memory");
            return NULL;
        }
        w->reports++;
    }
    w->last_finish_ns = rung_mono_ns();
    return NULL;
}

static int create_experiment(Http *h, const Options *opt, int64_t *id)
{
    json_t *sched = opt->scheduler == LOAD_FIFO
                        ? json_pack("{s:s}", "type", "fifo")
                        : json_pack("{s:s, s:s, s:i, s:i, s:i}", "type", "asha", "time_attr",
                                    "step", "max_t", opt->reports, "grace_period", 1,
                                    "reduction_factor", 3);
    char name[64];
    snprintf(name, sizeof(name), "server_load-w%d-t%d", opt->workers, opt->trials);
    /* The bench's own threads are the workers: an external trainable. */
    json_t *spec =
        json_pack("{s:s, s:s, s:s, s:{s:{s:s, s:f, s:f}}, s:{s:s, s:i}, s:o, s:i, s:i, s:{s:s}}",
                  "name", name, "metric", "loss", "mode", "min", "search_space", "x", "type",
                  "uniform", "low", 0.0, "high", 1.0, "searcher", "type", "random", "seed",
                  opt->seed, "scheduler", sched, "num_samples", opt->trials,
                  "max_concurrent_trials", 0, "trainable", "type", "external");
    char *body = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
    json_decref(spec);
    if (!body) {
        fail("out of memory");
        return -1;
    }
    json_t *ans = NULL;
    int rc = http_expect(h, "/api/v1/experiments", body, 201, &ans);
    if (rc == 0) {
        *id = json_id(ans, "id");
        if (*id < 0) {
            fail_answer(h, "/api/v1/experiments", body, 201, "no positive id");
            rc = -1;
        }
    }
    json_decref(ans);
    free(body);
    return rc;
}

static int64_t json_count(const json_t *counts, const char *key)
{
    const json_t *v = json_object_get(counts, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The experiment must end `completed` with every trial accounted for: all
 * completed under fifo; completed or stopped under asha; none failed. */
static int verify_experiment(Http *h, const Options *opt, int64_t id)
{
    char path[LOAD_PATH_MAX];
    snprintf(path, sizeof(path), "/api/v1/experiments/%lld", (long long)id);
    int64_t deadline = rung_mono_ns() + (int64_t)LOAD_SETTLE_MS * 1000000;
    for (int tries = 0; tries < LOAD_SETTLE_MS / 50 + 1; tries++) {
        json_t *exp = NULL;
        if (http_expect(h, path, NULL, 200, &exp) != 0)
            return -1;
        const char *state = json_string_value(json_object_get(exp, "state"));
        const json_t *counts = json_object_get(exp, "counts");
        bool done = state && strcmp(state, "completed") == 0;
        if (done || rung_mono_ns() > deadline) {
            int64_t completed = json_count(counts, "completed");
            int64_t stopped = json_count(counts, "stopped");
            bool ok = done && json_count(counts, "failed") == 0 &&
                      json_count(counts, "pending") == 0 && json_count(counts, "running") == 0 &&
                      (opt->scheduler == LOAD_FIFO
                           ? completed == opt->trials
                           : completed >= 1 && stopped >= 0 && completed + stopped == opt->trials);
            if (!ok)
                fail_answer(h, path, NULL, 200,
                            opt->scheduler == LOAD_FIFO
                                ? "want state completed, counts.completed == --trials"
                                : "want state completed, completed + stopped == --trials");
            json_decref(exp);
            return ok ? 0 : -1;
        }
        json_decref(exp);
        struct timespec nap = {0, 50 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    fail_answer(h, path, NULL, 200, "experiment never settled");
    return -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v (n >= 1), p in (0, 1]. */
static int64_t percentile(const int64_t *v, size_t n, double p)
{
    size_t rank = (size_t)ceil(p * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

static void usage(FILE *f)
{
    fprintf(f, "usage: server_load [--server URL] [--workers W] [--trials T] [--reports R]\n"
               "                   [--seed S] [--scheduler fifo|asha] [--wait-s S] [--token T]\n"
               "                   [--floor N] [--json]\n"
               "Plays W workers of the pull protocol against a running rungd and prints\n"
               "trials/s, reports/s and report latency (bench/README.md, section 1).\n"
               "Defaults: --server http://127.0.0.1:8080 --workers 8 --trials 1000\n"
               "          --reports 20 --seed 1 --scheduler fifo --wait-s 5; token from\n"
               "          RUNG_TOKEN when --token is not given.\n"
               "--floor N: the W threads send N GET /healthz in all instead (answered\n"
               "          without the engine or the database): the HTTP ceiling.\n");
}

/* Parses a decimal int in [lo, hi]; returns 0 or -1. */
static int parse_int(const char *flag, const char *s, int lo, int hi, int *out)
{
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "server_load: %s wants an integer in [%d, %d]\n", flag, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_options(int argc, char **argv, Options *opt)
{
    const char *server = "http://127.0.0.1:8080";
    opt->workers = 8;
    opt->trials = 1000;
    opt->reports = 20;
    opt->seed = 1;
    opt->wait_s = 5;
    opt->scheduler = LOAD_FIFO;
    opt->json = false;
    opt->floor = 0;
    opt->token = getenv("RUNG_TOKEN");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--json") == 0) {
            opt->json = true;
            continue;
        } else if (!v) {
            fprintf(stderr, "server_load: %s needs a value (or is unknown)\n", a);
            return -1;
        } else if (strcmp(a, "--server") == 0) {
            server = v;
        } else if (strcmp(a, "--token") == 0) {
            opt->token = v;
        } else if (strcmp(a, "--workers") == 0) {
            rc = parse_int(a, v, 1, LOAD_MAX_WORKERS, &opt->workers);
        } else if (strcmp(a, "--trials") == 0) {
            rc = parse_int(a, v, 1, LOAD_MAX_TRIALS, &opt->trials);
        } else if (strcmp(a, "--reports") == 0) {
            rc = parse_int(a, v, 1, LOAD_MAX_REPORTS, &opt->reports);
        } else if (strcmp(a, "--floor") == 0) {
            rc = parse_int(a, v, 1, LOAD_MAX_TRIALS, &opt->floor);
        } else if (strcmp(a, "--seed") == 0) {
            rc = parse_int(a, v, 0, INT32_MAX, &opt->seed);
        } else if (strcmp(a, "--wait-s") == 0) {
            rc = parse_int(a, v, 0, 30, &opt->wait_s);
        } else if (strcmp(a, "--scheduler") == 0) {
            if (strcmp(v, "fifo") == 0) {
                opt->scheduler = LOAD_FIFO;
            } else if (strcmp(v, "asha") == 0) {
                opt->scheduler = LOAD_ASHA;
            } else {
                fprintf(stderr, "server_load: --scheduler wants fifo or asha\n");
                rc = -1;
            }
        } else {
            fprintf(stderr, "server_load: unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
        if (rc != 0)
            return -1;
        i++;
    }
    size_t len = strlen(server);
    while (len > 0 && server[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof(opt->server) || strncmp(server, "http", 4) != 0) {
        fprintf(stderr, "server_load: --server wants an http URL shorter than %d bytes\n",
                LOAD_URL_MAX);
        return -1;
    }
    memcpy(opt->server, server, len);
    opt->server[len] = '\0';
    if (opt->token && strlen(opt->token) > LOAD_TOKEN_MAX) {
        fprintf(stderr, "server_load: token longer than %d bytes\n", LOAD_TOKEN_MAX);
        return -1;
    }
    return 0;
}

/* Merges the workers' results and prints them, or records a failure. */
static void print_results(const Options *opt, Worker *workers, long connects)
{
    size_t n = 0;
    long trials = 0, reports = 0, stops = 0;
    int64_t first = INT64_MAX, last = 0;
    for (int i = 0; i < opt->workers; i++) {
        Worker *w = &workers[i];
        n += w->lat.len;
        trials += w->trials;
        reports += w->reports;
        stops += w->stops;
        if (w->first_lease_ns && w->first_lease_ns < first)
            first = w->first_lease_ns;
        if (w->last_finish_ns > last)
            last = w->last_finish_ns;
        connects += w->http.connects;
    }
    if (opt->floor && reports != opt->floor) {
        fail("threads sent %ld requests, want --floor %d", reports, opt->floor);
        return;
    }
    if (!opt->floor && trials != opt->trials) {
        fail("workers leased %ld trials, want --trials %d", trials, opt->trials);
        return;
    }
    if (!opt->floor && opt->scheduler == LOAD_FIFO && reports != (long)opt->trials * opt->reports) {
        fail("workers sent %ld reports, want %ld", reports, (long)opt->trials * opt->reports);
        return;
    }
    if (n == 0 || last <= first) {
        fail("no report was timed");
        return;
    }
    int64_t *all = malloc(n * sizeof(*all));
    if (!all) {
        fail("out of memory");
        return;
    }
    size_t k = 0;
    for (int i = 0; i < opt->workers; i++) {
        memcpy(all + k, workers[i].lat.ns, workers[i].lat.len * sizeof(*all));
        k += workers[i].lat.len;
    }
    qsort(all, n, sizeof(*all), cmp_i64);
    double wall_s = (double)(last - first) / 1e9;
    double p50_ms = (double)percentile(all, n, 0.50) / 1e6;
    double p99_ms = (double)percentile(all, n, 0.99) / 1e6;
    double max_ms = (double)all[n - 1] / 1e6;
    free(all);
    if (opt->floor) {
        double rate = (double)reports / wall_s;
        printf("floor W=%d: %ld GET /healthz in %.3f s: %.0f requests/s, p50 %.3f ms, "
               "p99 %.3f ms, max %.3f ms, %ld connections\n",
               opt->workers, reports, wall_s, rate, p50_ms, p99_ms, max_ms, connects);
        if (opt->json)
            printf("{\"bench\":\"server_load\",\"impl\":\"floor\",\"workers\":%d,"
                   "\"requests\":%ld,\"wall_s\":%.4f,\"requests_per_s\":%.1f,"
                   "\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f,\"connections\":%ld}\n",
                   opt->workers, reports, wall_s, rate, p50_ms, p99_ms, max_ms, connects);
        fflush(stdout);
        return;
    }
    const char *sched = opt->scheduler == LOAD_FIFO ? "fifo" : "asha";
    double trials_per_s = (double)trials / wall_s;
    double reports_per_s = (double)reports / wall_s;
    printf("rung %s W=%d: %ld trials, %ld reports (%ld stops) in %.3f s: %.1f trials/s, "
           "%.0f reports/s, report p50 %.3f ms, p99 %.3f ms, max %.3f ms, %ld connections\n",
           sched, opt->workers, trials, reports, stops, wall_s, trials_per_s, reports_per_s, p50_ms,
           p99_ms, max_ms, connects);
    if (opt->json)
        printf("{\"bench\":\"server_load\",\"impl\":\"rung\",\"scheduler\":\"%s\",\"workers\":%d,"
               "\"trials\":%ld,\"reports\":%ld,\"stops\":%ld,\"wall_s\":%.4f,"
               "\"trials_per_s\":%.2f,\"reports_per_s\":%.1f,\"report_p50_ms\":%.4f,"
               "\"report_p99_ms\":%.4f,\"report_max_ms\":%.4f,\"connections\":%ld}\n",
               sched, opt->workers, trials, reports, stops, wall_s, trials_per_s, reports_per_s,
               p50_ms, p99_ms, max_ms, connects);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    Options opt;
    if (parse_options(argc, argv, &opt) != 0)
        return 2;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "server_load: curl_global_init failed\n");
        return 1;
    }
    Gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false};
    Http main_http;
    Worker *workers = calloc((size_t)opt.workers, sizeof(*workers));
    int started = 0;
    int64_t experiment_id = 0;
    if (http_init(&main_http, &opt) != 0 || !workers) {
        fail("out of memory");
        goto out;
    }
    if (!opt.floor && create_experiment(&main_http, &opt, &experiment_id) != 0)
        goto out;
    for (int i = 0; i < opt.workers; i++) {
        Worker *w = &workers[i];
        w->index = i;
        w->opt = &opt;
        w->gate = &gate;
        w->experiment_id = experiment_id;
        if (http_init(&w->http, &opt) != 0) {
            fail("out of memory");
            goto out;
        }
    }
    for (int i = 0; i < opt.workers; i++) {
        if (pthread_create(&workers[i].thread, NULL, opt.floor ? floor_main : worker_main,
                           &workers[i]) != 0) {
            fail("pthread_create failed for worker %d of %d", i, opt.workers);
            break;
        }
        started++;
    }
    /* Open the gate once every started thread has registered; after a
     * failure the workers see it and leave without leasing. */
    pthread_mutex_lock(&gate.lock);
    while (gate.arrived < started)
        pthread_cond_wait(&gate.cond, &gate.lock);
    gate.open = true;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    for (int i = 0; i < started; i++)
        pthread_join(workers[i].thread, NULL);
    if (opt.floor) {
        if (!failed())
            print_results(&opt, workers, main_http.connects);
        goto out;
    }
    if (failed() || verify_experiment(&main_http, &opt, experiment_id) != 0)
        goto out;
    print_results(&opt, workers, main_http.connects);
out:
    if (failed())
        fprintf(stderr, "server_load: %d failure(s); no figures are valid\n",
                atomic_load(&g_failures));
    for (int i = 0; workers && i < opt.workers; i++) {
        http_close(&workers[i].http);
        free(workers[i].lat.ns);
    }
    free(workers);
    http_close(&main_http);
    curl_global_cleanup();
    return failed() ? 1 : 0;
}
