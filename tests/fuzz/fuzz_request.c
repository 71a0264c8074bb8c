/* Fuzz targets of server/request.c, the parsers of the request bodies rungd
 * accepts from workers. One source, five targets: CMakeLists.txt builds it
 * once per body with FUZZ_BODY set to one of the FUZZ_* numbers below, so
 * each parser gets a target, a seed corpus (corpus/<target>/) and a run of
 * its own; they share request.dict.
 *
 * Each input is a request body's bytes (the empty input is a request without
 * a body). Besides the sanitizers' checks and those of fuzz_json.h, each
 * target checks what request.h promises of an accepted body against the
 * JSON itself, and that the body written out and read back gets the same
 * answer. The lease target also checks request_lease_check_gpus against
 * three registrations; the finish target also checks the cut of an error
 * longer than CORE_MAX_ERROR (inputs are at most 4 KiB under libFuzzer, so
 * the error of the input is repeated past the limit).
 *
 * Built with libFuzzer under clang, or with fuzz_driver.c under gcc (see
 * CMakeLists.txt). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_json.h"
#include "request.h"

#define FUZZ_REPORT 1
#define FUZZ_FINISH 2
#define FUZZ_REGISTER 3
#define FUZZ_LEASE 4
#define FUZZ_HEARTBEAT 5

#ifndef FUZZ_BODY
#error "FUZZ_BODY must name the body (see CMakeLists.txt)"
#endif

#define A RUNG_E_INVALID_ARGUMENT

/* Helpers; not every body uses each (hence "unused"). */

/* Every key of an accepted body is one of allowed. */
__attribute__((unused)) static void check_keys(const json_t *body, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) {
        bool found = false;
        for (const char *const *a = allowed; *a; a++)
            found = found || strcmp(*a, key) == 0;
        CHECK(found);
    }
}

/* The member, with null as absent. */
__attribute__((unused)) static json_t *member(const json_t *body, const char *key)
{
    json_t *v = json_object_get(body, key);
    return json_is_null(v) ? NULL : v;
}

/* A string member of 1..max bytes, and out is that very string. */
__attribute__((unused)) static void check_string(const json_t *body, const char *key,
                                                 const char *out, size_t max)
{
    json_t *v = json_object_get(body, key);
    CHECK(json_is_string(v));
    CHECK(out == json_string_value(v));
    CHECK(json_string_length(v) >= 1 && json_string_length(v) <= max);
}

static void same_answer(int rc, const RungError *err, int rc2, const RungError *err2)
{
    CHECK(rc == rc2);
    if (rc != 0) {
        CHECK(strcmp(err->field, err2->field) == 0);
        CHECK(strcmp(err->message, err2->message) == 0);
    }
}

/* A warnings object as request.h (REQUEST_WARNINGS) describes it. */
__attribute__((unused)) static void check_warnings(const json_t *w)
{
    CHECK(json_is_object(w));
    CHECK(json_object_size(w) == 2);
    json_t *count = json_object_get(w, "count");
    CHECK(json_is_number(count));
    CHECK(json_number_value(count) >= 0 && json_number_value(count) <= (double)REQUEST_MAX_STEP);
    json_t *last = json_object_get(w, "last");
    CHECK(json_is_array(last) && json_array_size(last) <= REQUEST_MAX_WARN_LAST);
    size_t i;
    json_t *item;
    json_array_foreach(last, i, item) {
        CHECK(json_is_object(item) && json_object_size(item) == 2);
        json_t *line = json_object_get(item, "line"), *why = json_object_get(item, "why");
        CHECK(json_is_string(line) && json_string_length(line) >= 1 &&
              json_string_length(line) <= REQUEST_MAX_WARN_LINE);
        CHECK(json_is_string(why) && json_string_length(why) >= 1 &&
              json_string_length(why) <= REQUEST_MAX_WARN_WHY);
    }
}

#if FUZZ_BODY == FUZZ_REPORT

static void check_report(const json_t *body, const ReportRequest *r)
{
    static const char *const allowed[] = {"lease_token", "step", "metrics", "info", NULL};
    check_keys(body, allowed);
    check_string(body, "lease_token", r->lease_token, REQUEST_MAX_TOKEN);
    CHECK(r->step >= 0 && r->step <= REQUEST_MAX_STEP);
    CHECK(r->metrics == json_object_get(body, "metrics"));
    CHECK(json_is_object(r->metrics));
    CHECK(json_object_size(r->metrics) <= CORE_MAX_METRICS);
    const char *key;
    json_t *v;
    json_object_foreach(r->metrics, key, v) {
        const char *s = json_string_value(v);
        CHECK(json_is_number(v) ||
              (s != NULL && (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 ||
                             strcmp(s, "-Infinity") == 0)));
    }
    /* info: NULL for none, else the body's non-empty object of values that
     * are not numbers, none a metric's name, within the byte bounds. */
    CHECK(r->info == NULL || r->info == json_object_get(body, "info"));
    CHECK(r->info == NULL || json_object_size(r->info) >= 1);
    size_t total = 0;
    json_object_foreach(r->info, key, v) {
        size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK(!json_is_number(v) && json_object_get(r->metrics, key) == NULL);
        CHECK(strlen(key) >= 1 && strlen(key) <= REQUEST_MAX_INFO_NAME);
        CHECK(n <= REQUEST_MAX_INFO_VALUE);
        total += n;
    }
    CHECK(total <= REQUEST_MAX_INFO);
}

static int run(json_t *body, RungError *err)
{
    ReportRequest r;
    int rc = request_report_parse(body, &r, err);
    if (rc == 0)
        check_report(body, &r);
    else
        CHECK(r.lease_token == NULL && r.metrics == NULL && r.info == NULL && r.step == 0);
    return rc;
}

#elif FUZZ_BODY == FUZZ_FINISH

static void check_finish(const json_t *body, const FinishRequest *f, const char *error_before,
                         size_t error_len_before)
{
    static const char *const allowed[] = {"lease_token", "status",   "error",
                                          "log",         "warnings", NULL};
    check_keys(body, allowed);
    CHECK(f->warnings == member(body, "warnings"));
    if (f->warnings != NULL)
        check_warnings(f->warnings);
    check_string(body, "lease_token", f->lease_token, REQUEST_MAX_TOKEN);
    const char *status = json_string_value(json_object_get(body, "status"));
    CHECK(status != NULL);
    CHECK(!(f->completed && f->preempted));
    CHECK(f->completed   ? strcmp(status, "completed") == 0
          : f->preempted ? strcmp(status, "preempted") == 0
                         : strcmp(status, "failed") == 0);
    json_t *log = member(body, "log");
    CHECK(log == NULL ? f->log == NULL : f->log == json_string_value(log));
    json_t *error = member(body, "error");
    if (error == NULL) {
        CHECK(f->error == NULL && error_before == NULL);
        return;
    }
    CHECK(f->error == json_string_value(error));
    size_t len = json_string_length(error);
    CHECK(strlen(f->error) == len);
    CHECK(error_before != NULL);
    CHECK(fuzz_utf8_valid(f->error, len));
    if (error_len_before <= CORE_MAX_ERROR) {
        CHECK(len == error_len_before && memcmp(f->error, error_before, len) == 0);
    } else {
        /* The longest head of whole characters: a character is 4 bytes at most. */
        CHECK(len <= CORE_MAX_ERROR && len + 3 >= CORE_MAX_ERROR);
        CHECK(memcmp(f->error, error_before, len) == 0);
        CHECK(((unsigned char)error_before[len] & 0xC0) != 0x80);
    }
}

static int parse_finish(json_t *body, RungError *err)
{
    /* The error as sent, before the parser may cut it in place. */
    json_t *e = json_object_get(body, "error");
    char *before = NULL;
    size_t before_len = 0;
    if (json_is_string(e)) {
        before_len = json_string_length(e);
        before = malloc(before_len + 1);
        CHECK(before != NULL);
        memcpy(before, json_string_value(e), before_len + 1);
    }
    FinishRequest f;
    int rc = request_finish_parse(body, &f, err);
    if (rc == 0)
        check_finish(body, &f, before, before_len);
    else
        CHECK(f.lease_token == NULL && f.error == NULL && f.log == NULL && !f.completed &&
              f.warnings == NULL);
    if (rc != 0 && before != NULL) /* refused: the body is as it was */
        CHECK(json_string_length(e) == before_len &&
              memcmp(json_string_value(e), before, before_len) == 0);
    free(before);
    return rc;
}

static int run(json_t *body, RungError *err)
{
    int rc = parse_finish(body, err);
    json_t *e = json_object_get(body, "error");
    if (rc != 0 || !json_is_string(e) || json_string_length(e) == 0)
        return rc;
    /* The same body with its error repeated past CORE_MAX_ERROR, so that the
     * characters the input chose fall on the cut. */
    size_t unit = json_string_length(e);
    size_t reps = CORE_MAX_ERROR / unit + 2;
    char *text = malloc(unit * reps);
    CHECK(text != NULL);
    for (size_t k = 0; k < reps; k++)
        memcpy(text + k * unit, json_string_value(e), unit);
    json_t *longer = json_deep_copy(body);
    CHECK(longer != NULL);
    CHECK(json_object_set_new(longer, "error", json_stringn(text, unit * reps)) == 0);
    RungError err2;
    rung_error_clear(&err2);
    CHECK(parse_finish(longer, &err2) == 0);
    json_decref(longer);
    free(text);
    return rc;
}

#elif FUZZ_BODY == FUZZ_REGISTER

/* A register's environments or containers: the body's own array (or NULL
 * when absent or null), at most REQUEST_MAX_ENVIRONMENTS strings, none
 * twice, each an environment name or (runtime) podman, docker, apptainer. */
static void check_names(const json_t *body, const char *key, const json_t *got, bool runtime)
{
    CHECK(got == member(body, key));
    if (got == NULL)
        return;
    CHECK(json_is_array(got) && json_array_size(got) <= REQUEST_MAX_ENVIRONMENTS);
    size_t i, k;
    json_t *v;
    json_array_foreach(got, i, v) {
        CHECK(json_is_string(v));
        const char *s = json_string_value(v);
        if (runtime)
            CHECK(strcmp(s, "podman") == 0 || strcmp(s, "docker") == 0 ||
                  strcmp(s, "apptainer") == 0);
        else
            CHECK(spec_environment_ok(s));
        for (k = 0; k < i; k++)
            CHECK(strcmp(json_string_value(json_array_get(got, k)), s) != 0);
    }
}

static void check_register(const json_t *body, const RegisterRequest *r)
{
    static const char *const allowed[] = {"name",   "hostname",     "gpus",       "cpus",
                                          "labels", "environments", "containers", NULL};
    check_keys(body, allowed);
    check_names(body, "environments", r->environments, false);
    check_names(body, "containers", r->containers, true);
    CHECK(r->labels == member(body, "labels"));
    if (r->labels != NULL) {
        CHECK(json_is_object(r->labels) && json_object_size(r->labels) <= REQUEST_MAX_LABELS);
        const char *key;
        json_t *v;
        json_object_foreach(r->labels, key, v) {
            size_t n = strlen(key);
            CHECK(n >= 1 && n <= SPEC_MAX_LABEL_KEY);
            CHECK(
                strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/") ==
                n);
            CHECK(json_is_string(v) && json_string_length(v) <= SPEC_MAX_LABEL_VALUE);
        }
    }
    /* Absent, never null: "name": null is refused. */
    if (json_object_get(body, "name") == NULL)
        CHECK(r->name == NULL);
    else
        check_string(body, "name", r->name, REQUEST_MAX_NAME);
    if (json_object_get(body, "hostname") == NULL)
        CHECK(r->hostname != NULL && r->hostname[0] == '\0');
    else
        check_string(body, "hostname", r->hostname, REQUEST_MAX_NAME);
    CHECK(r->label == (r->name ? r->name : r->hostname[0] ? r->hostname : r->label));
    CHECK(r->name || r->hostname[0] || strcmp(r->label, "worker") == 0);
    CHECK(r->cpus >= 0 && r->cpus <= SPEC_MAX_CPUS);
    CHECK(r->gpus == member(body, "gpus"));
    if (r->gpus != NULL) {
        CHECK(json_is_array(r->gpus) && json_array_size(r->gpus) <= REQUEST_MAX_GPUS_JSON);
        size_t i;
        json_t *g;
        json_array_foreach(r->gpus, i, g)
            CHECK(json_is_object(g));
    }
}

static int run(json_t *body, RungError *err)
{
    RegisterRequest r;
    int rc = request_register_parse(body, &r, err);
    if (rc == 0)
        check_register(body, &r);
    else
        CHECK(r.name == NULL && r.hostname == NULL && r.gpus == NULL && r.label == NULL &&
              r.labels == NULL && r.environments == NULL && r.containers == NULL);
    if (rc == 0 && json_object_get(body, "name") != NULL) {
        /* The same with "name": null is refused, naming name. */
        json_t *nulled = json_deep_copy(body);
        CHECK(nulled != NULL);
        json_object_set_new(nulled, "name", json_null());
        RungError err2;
        rung_error_clear(&err2);
        CHECK(request_register_parse(nulled, &r, &err2) == A);
        CHECK(strcmp(err2.field, "name") == 0);
        CHECK(strcmp(err2.message, "name: must be a string") == 0);
        json_decref(nulled);
    }
    return rc;
}

#elif FUZZ_BODY == FUZZ_LEASE

#define DEFAULT_CPUS 7

/* The first entry of the offer the check must refuse, by its rules
 * computed here again, or -1; registered holds the indexes n_registered. */
static int64_t first_bad(const LeaseOffer *o, const int64_t *registered, size_t n_registered)
{
    for (int64_t i = 0; i < o->n_gpus; i++) {
        for (int64_t j = 0; j < i; j++)
            if (o->gpus[j] == o->gpus[i])
                return i;
        bool known = false;
        for (size_t k = 0; k < n_registered; k++)
            known = known || registered[k] == o->gpus[i];
        if (!known)
            return i;
    }
    return -1;
}

static void check_gpus_against(const LeaseOffer *o, const json_t *registered,
                               const int64_t *indexes, size_t n_indexes)
{
    RungError err;
    rung_error_clear(&err);
    int rc = request_lease_check_gpus(o, registered, &err);
    int64_t bad = first_bad(o, indexes, n_indexes);
    if (bad < 0) {
        CHECK(rc == 0);
        return;
    }
    CHECK(rc == A && err.code == A);
    char field[32];
    snprintf(field, sizeof field, "gpus[%lld]", (long long)bad);
    CHECK(strcmp(err.field, field) == 0);
    CHECK(strncmp(err.message, field, strlen(field)) == 0);
}

/* advertise_addr and port: both or neither; the address of host-name
 * characters only, not starting with '-' (request.h). */
static void check_gang_fields(const json_t *body, const LeaseOffer *o)
{
    if (json_object_get(body, "advertise_addr") == NULL) {
        CHECK(o->advertise_addr == NULL && o->port == 0);
        CHECK(member(body, "port") == NULL);
        return;
    }
    check_string(body, "advertise_addr", o->advertise_addr, CORE_MAX_ADDR);
    CHECK(o->advertise_addr[0] != '-');
    CHECK(strspn(o->advertise_addr, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789.-_:%") == strlen(o->advertise_addr));
    CHECK(o->port >= 1 && o->port <= 65535);
    CHECK(o->port == (int64_t)json_number_value(json_object_get(body, "port")));
}

static void check_lease(const json_t *body, const LeaseRequest *l)
{
    static const char *const allowed[] = {"gpus",           "cpus", "wait_s",    "trainables",
                                          "advertise_addr", "port", "downloads", NULL};
    check_keys(body, allowed);
    /* downloads: absent or null or true lets the worker fetch; false does not. */
    json_t *downloads = member(body, "downloads");
    CHECK(downloads == NULL || json_is_boolean(downloads));
    CHECK(l->offer.no_downloads == json_is_false(downloads));
    check_gang_fields(body, &l->offer);
    /* trainables: absent or null is every type; else each named once. */
    json_t *trainables = member(body, "trainables");
    if (trainables == NULL) {
        CHECK(l->offer.trainables == (SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL) |
                                      SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_COMMAND) |
                                      SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_BUILTIN)));
    } else {
        static const char *const names[] = {[SPEC_TRAINABLE_EXTERNAL] = "external",
                                            [SPEC_TRAINABLE_COMMAND] = "command",
                                            [SPEC_TRAINABLE_BUILTIN] = "builtin"};
        CHECK(json_is_array(trainables));
        size_t n = json_array_size(trainables);
        CHECK(n >= 1 && n <= 3);
        unsigned mask = 0;
        size_t i;
        json_t *t;
        json_array_foreach(trainables, i, t) {
            const char *name = json_string_value(t);
            CHECK(name != NULL);
            for (int k = 0; k < 3; k++)
                if (strcmp(name, names[k]) == 0)
                    mask |= SPEC_TRAINABLE_BIT(k);
        }
        CHECK(l->offer.trainables == mask);
        CHECK((size_t)__builtin_popcount(mask) == n);
    }
    json_t *cpus = member(body, "cpus");
    CHECK(l->offer.cpus == (cpus ? (int64_t)json_number_value(cpus) : DEFAULT_CPUS));
    CHECK(l->offer.cpus >= 0 && l->offer.cpus <= SPEC_MAX_CPUS);
    CHECK(l->wait_s >= 0 && l->wait_s <= REQUEST_LONG_POLL_MAX_S);
    json_t *wait = member(body, "wait_s");
    CHECK(wait ? (json_number_value(wait) > REQUEST_LONG_POLL_MAX_S
                      ? l->wait_s == REQUEST_LONG_POLL_MAX_S
                      : l->wait_s == json_number_value(wait))
               : l->wait_s == 0);
    json_t *gpus = member(body, "gpus");
    CHECK(l->offer.n_gpus == (int64_t)json_array_size(gpus));
    CHECK(l->offer.n_gpus <= CORE_MAX_LEASE_GPUS);
    for (int64_t i = 0; i < l->offer.n_gpus; i++) {
        CHECK(l->offer.gpus[i] >= 0);
        CHECK(l->offer.gpus[i] == json_integer_value(json_array_get(gpus, (size_t)i)));
    }

    /* A worker that registered GPUs 0, 1 and 3, and objects whose "index"
     * registers nothing: none, a string, a real, and -1 (never offered). */
    static const int64_t fixed[] = {0, 1, 3, -1};
    json_t *registered =
        json_loads("[{\"index\": 0}, {\"index\": 1, \"name\": \"x\"}, {\"index\": 3},"
                   " {\"name\": \"none\"}, {\"index\": \"2\"}, {\"index\": 5.0}, {\"index\": -1}]",
                   0, NULL);
    CHECK(registered != NULL);
    check_gpus_against(&l->offer, registered, fixed, 4);
    json_decref(registered);
    /* A worker without GPUs, as NULL and as []. */
    check_gpus_against(&l->offer, NULL, NULL, 0);
    json_t *none = json_array();
    check_gpus_against(&l->offer, none, NULL, 0);
    json_decref(none);
    /* A worker that registered every GPU offered: only a repeat is refused. */
    json_t *all = json_array();
    for (int64_t i = 0; i < l->offer.n_gpus; i++)
        json_array_append_new(all, json_pack("{s:I}", "index", (json_int_t)l->offer.gpus[i]));
    check_gpus_against(&l->offer, all, l->offer.gpus, (size_t)l->offer.n_gpus);
    json_decref(all);
}

static int run(json_t *body, RungError *err)
{
    LeaseRequest l;
    int rc = request_lease_parse(body, DEFAULT_CPUS, &l, err);
    if (rc == 0)
        check_lease(body, &l);
    else
        CHECK(l.offer.n_gpus == 0 && l.offer.cpus == 0 && l.wait_s == 0 &&
              l.offer.trainables == 0 && l.offer.advertise_addr == NULL && l.offer.port == 0);
    return rc;
}

#elif FUZZ_BODY == FUZZ_HEARTBEAT

/* Whether key is a trial id as request.h says: decimal digits that fit. */
static bool id_key(const char *key, int64_t *id)
{
    size_t n = strlen(key);
    if (n == 0 || strspn(key, "0123456789") != n)
        return false;
    const char *digits = key + strspn(key, "0"); /* leading zeros */
    size_t nd = strlen(digits);
    if (nd > 19 || (nd == 19 && strcmp(digits, "9223372036854775807") > 0))
        return false;
    *id = strtoll(key, NULL, 10);
    return true;
}

static void check_heartbeat(const json_t *body, const HeartbeatRequest *h)
{
    static const char *const allowed[] = {"trials", "gpus",          "logs",  "warnings",
                                          "hours",  "next_lease_at", "cache", NULL};
    static const char *const cache_keys[] = {"free_bytes", "full", NULL};
    static const char *const gpu_keys[] = {"index",           "util",         "memory_used_mb",
                                           "memory_total_mb", "state",        "trial_id",
                                           "foreign_mb",      "foreign_util", NULL};
    check_keys(body, allowed);
    /* cache: an object of a whole free_bytes >= 0 and a boolean full. A
     * whole number may be written as a real (1e6), as every integer field
     * of the API may (common/jsonv.c, jsonv_int). */
    json_t *cache = member(body, "cache");
    if (cache != NULL) {
        CHECK(json_is_object(cache));
        check_keys(cache, cache_keys);
        json_t *free_bytes = member(cache, "free_bytes"), *full = member(cache, "full");
        CHECK(free_bytes == NULL ||
              (json_is_number(free_bytes) && json_number_value(free_bytes) >= 0 &&
               floor(json_number_value(free_bytes)) == json_number_value(free_bytes)));
        CHECK(full == NULL || json_is_boolean(full));
    }
    /* GPUs: objects of known keys, an index in range; hours and next_lease_at strings. */
    size_t gi;
    json_t *g;
    json_array_foreach(member(body, "gpus"), gi, g) {
        CHECK(json_is_object(g));
        check_keys(g, gpu_keys);
        json_t *index = json_object_get(g, "index");
        CHECK(json_is_number(index) && json_number_value(index) >= 0 &&
              json_number_value(index) <= REQUEST_MAX_GPU_INDEX);
        json_t *state = json_object_get(g, "state");
        CHECK(state == NULL || json_is_string(state));
        CHECK(member(g, "trial_id") == NULL ||
              (state != NULL && strcmp(json_string_value(state), "trial") == 0));
    }
    CHECK(json_array_size(member(body, "gpus")) <= REQUEST_MAX_GPUS_JSON);
    json_t *hours = member(body, "hours"), *next = member(body, "next_lease_at");
    CHECK(hours == NULL || (json_is_string(hours) && json_string_length(hours) >= 1 &&
                            json_string_length(hours) <= REQUEST_MAX_HOURS));
    CHECK(next == NULL || json_is_string(next));
    json_t *trials = member(body, "trials");
    CHECK(h->n_trials == (int64_t)json_array_size(trials));
    CHECK(h->n_trials <= REQUEST_MAX_TRIAL_IDS);
    for (int64_t i = 0; i < h->n_trials; i++)
        CHECK(h->trials[i] == json_integer_value(json_array_get(trials, (size_t)i)));
    CHECK(h->gpus == member(body, "gpus"));
    CHECK(h->gpus == NULL || json_is_array(h->gpus));
    CHECK(h->logs == member(body, "logs"));
    CHECK(h->logs == NULL || json_is_object(h->logs));
    /* The iterator gives every entry once, in order, with the id of its key. */
    void *iter = NULL;
    int64_t id;
    const char *text;
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach(h->logs, key, v) {
        int64_t want;
        CHECK(id_key(key, &want));
        CHECK(json_is_string(v));
        CHECK(request_heartbeat_log(h, &iter, &id, &text));
        CHECK(id == want && text == json_string_value(v));
        n++;
    }
    CHECK(!request_heartbeat_log(h, &iter, &id, &text));
    CHECK(n == json_object_size(h->logs));
    /* The same of the warnings, each a warnings object. */
    CHECK(h->warnings == member(body, "warnings"));
    CHECK(h->warnings == NULL || json_is_object(h->warnings));
    iter = NULL;
    n = 0;
    json_t *w;
    json_object_foreach(h->warnings, key, v) {
        int64_t want;
        CHECK(id_key(key, &want));
        check_warnings(v);
        CHECK(request_heartbeat_warnings(h, &iter, &id, &w));
        CHECK(id == want && w == v);
        n++;
    }
    CHECK(!request_heartbeat_warnings(h, &iter, &id, &w));
    CHECK(n == json_object_size(h->warnings));
}

static int run(json_t *body, RungError *err)
{
    static HeartbeatRequest h; /* 8 KiB: off the stack */
    int rc = request_heartbeat_parse(body, &h, err);
    if (rc == 0) {
        check_heartbeat(body, &h);
    } else {
        CHECK(h.n_trials == 0 && h.gpus == NULL && h.logs == NULL && h.warnings == NULL);
        /* A refused log key is named by its head, cut on a character. */
        if (strcmp(err->message, "logs: keys are trial ids, values text") == 0)
            CHECK(strncmp(err->field, "logs.", 5) == 0 && strlen(err->field) <= 5 + 40);
        if (strcmp(err->message, "warnings: keys are trial ids") == 0)
            CHECK(strncmp(err->field, "warnings.", 9) == 0 && strlen(err->field) <= 9 + 40);
    }
    return rc;
}

#else
#error "unknown FUZZ_BODY"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool skip;
    json_t *body = fuzz_body(data, size, &skip);
    if (skip)
        return 0; /* no JSON: http.c answers bad_json before any parser */
    RungError err;
    rung_error_clear(&err);
    int rc = run(body, &err);
    fuzz_check_answer(rc, &err, body, A);
    if (body != NULL) {
        /* Written out and read back (after any cut the parser made). */
        json_t *again = fuzz_reload(body);
        RungError err2;
        rung_error_clear(&err2);
        same_answer(rc, &err, run(again, &err2), &err2);
        json_decref(again);
    }
    json_decref(body);
    return 0;
}
