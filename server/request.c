/* Parsers of the request bodies; see request.h. The limits and messages are
 * those docs/api.md and the handlers (api_*.c) have always used: a client that
 * passed before passes now, except where request.h says otherwise. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"

#define A RUNG_E_INVALID_ARGUMENT

/* The body as an object of at most JSONV_MAX_DEPTH levels with only the
 * allowed keys. The depth first: nothing of a body too deep to store is
 * looked at. */
static int body_object(const json_t *body, const char *const *allowed, RungError *err)
{
    if (!json_is_object(body))
        return rung_error_set(err, RUNG_E_BAD_JSON, "", "body: must be a JSON object");
    if (jsonv_check_depth(body, JSONV_MAX_DEPTH, "", A, err) != 0)
        return err->code;
    return jsonv_only_keys(body, "", allowed, A, err);
}

/* A member that may be absent or null, for the fields where null has always
 * meant absent. */
static json_t *member(const json_t *body, const char *key)
{
    json_t *v = json_object_get(body, key);
    return json_is_null(v) ? NULL : v;
}

/* "name[i]" for an array's item. */
static void item_field(char *buf, size_t size, const char *name, size_t i)
{
    snprintf(buf, size, "%s[%zu]", name, i);
}

/* ---- report ---- */

/* At most CORE_MAX_METRICS values, each a number or one of the strings that
 * stand for non-finite values. */
static int check_metrics(const json_t *metrics, RungError *err)
{
    if (!json_is_object(metrics))
        return rung_error_set(err, A, "metrics", "metrics: required, a JSON object");
    if (json_object_size(metrics) > CORE_MAX_METRICS)
        return rung_error_set(err, A, "metrics", "metrics: more than %d values", CORE_MAX_METRICS);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)metrics, key, v) {
        if (json_is_number(v))
            continue;
        const char *s = json_string_value(v);
        if (s &&
            (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0))
            continue;
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, "metrics", key);
        return rung_error_set(err, A, field,
                              "%s: must be a number (or \"NaN\", \"Infinity\", \"-Infinity\")",
                              field);
    }
    return 0;
}

/* A report's info (request.h): what a report line held besides numbers.
 * A number is refused: it is a metric, and one key has one meaning. */
static int check_info(const json_t *info, const json_t *metrics, RungError *err)
{
    if (!json_is_object(info))
        return rung_error_set(err, A, "info", "info: must be a JSON object or null");
    if (json_object_size(info) > CORE_MAX_METRICS)
        return rung_error_set(err, A, "info", "info: more than %d values", CORE_MAX_METRICS);
    size_t total = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)info, key, v) {
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, "info", key);
        size_t key_len = strlen(key);
        if (key_len == 0 || key_len > REQUEST_MAX_INFO_NAME)
            return rung_error_set(err, A, field, "%s: a name must be 1 to %d bytes", field,
                                  REQUEST_MAX_INFO_NAME);
        if (json_is_number(v))
            return rung_error_set(err, A, field, "%s: a number is a metric, not info", field);
        if (json_object_get(metrics, key) != NULL)
            return rung_error_set(err, A, field, "%s: is also a metric", field);
        size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
        if (n > REQUEST_MAX_INFO_VALUE)
            return rung_error_set(err, A, field, "%s: %zu bytes of JSON, more than %d", field, n,
                                  REQUEST_MAX_INFO_VALUE);
        total += n;
        if (total > REQUEST_MAX_INFO)
            return rung_error_set(err, A, field, "%s: the info passes %d bytes of JSON", field,
                                  REQUEST_MAX_INFO);
    }
    return 0;
}

int request_report_parse(json_t *body, ReportRequest *out, RungError *err)
{
    static const char *const allowed[] = {"lease_token", "step", "metrics", "info", NULL};
    memset(out, 0, sizeof *out);
    if (body_object(body, allowed, err) ||
        jsonv_string(body, "", "lease_token", JSONV_REQUIRED, REQUEST_MAX_TOKEN, &out->lease_token,
                     A, err) ||
        jsonv_int(body, "", "step", JSONV_REQUIRED, 0, REQUEST_MAX_STEP, &out->step, A, err) ||
        check_metrics(json_object_get(body, "metrics"), err)) {
        memset(out, 0, sizeof *out);
        return err->code;
    }
    out->metrics = json_object_get(body, "metrics");
    json_t *info = member(body, "info");
    if (info != NULL && check_info(info, out->metrics, err)) {
        memset(out, 0, sizeof *out);
        return err->code;
    }
    out->info = json_object_size(info) > 0 ? info : NULL;
    return 0;
}

/* ---- warnings (finish and heartbeat) ---- */

/* A trial's warnings object (request.h, REQUEST_WARNINGS); field is its
 * path for errors ("warnings", "warnings.17"). */
static int check_warnings(const json_t *w, const char *field, RungError *err)
{
    static const char *const keys[] = {"count", "last", NULL};
    static const char *const item_keys[] = {"line", "why", NULL};
    if (!json_is_object(w))
        return rung_error_set(err, A, field, "%s: must be an object {\"count\", \"last\"}", field);
    int64_t count;
    if (jsonv_only_keys(w, field, keys, A, err) ||
        jsonv_int(w, field, "count", JSONV_REQUIRED, 0, REQUEST_MAX_STEP, &count, A, err))
        return err->code;
    json_t *last = json_object_get(w, "last");
    char path[RUNG_FIELD_MAX];
    snprintf(path, sizeof path, "%s.last", field);
    if (!json_is_array(last) || json_array_size(last) > REQUEST_MAX_WARN_LAST)
        return rung_error_set(err, A, path, "%s: must be an array of at most %d lines", path,
                              REQUEST_MAX_WARN_LAST);
    size_t i;
    json_t *item;
    json_array_foreach(last, i, item) {
        char at[RUNG_FIELD_MAX + 24];
        snprintf(at, sizeof at, "%s[%zu]", path, i);
        const char *line, *why;
        if (!json_is_object(item))
            return rung_error_set(err, A, at, "%s: must be an object {\"line\", \"why\"}", at);
        if (jsonv_only_keys(item, at, item_keys, A, err) ||
            jsonv_string(item, at, "line", JSONV_REQUIRED, REQUEST_MAX_WARN_LINE, &line, A, err) ||
            jsonv_string(item, at, "why", JSONV_REQUIRED, REQUEST_MAX_WARN_WHY, &why, A, err))
            return err->code;
    }
    return 0;
}

/* ---- finish ---- */

int request_finish_parse(json_t *body, FinishRequest *out, RungError *err)
{
    static const char *const allowed[] = {"lease_token", "status",   "error",
                                          "log",         "warnings", NULL};
    memset(out, 0, sizeof *out);
    const char *status;
    if (body_object(body, allowed, err) ||
        jsonv_string(body, "", "lease_token", JSONV_REQUIRED, REQUEST_MAX_TOKEN, &out->lease_token,
                     A, err) ||
        jsonv_string(body, "", "status", JSONV_REQUIRED, REQUEST_MAX_STATUS, &status, A, err))
        goto fail;
    json_t *ev = member(body, "error");
    if (ev != NULL && !json_is_string(ev)) {
        rung_error_set(err, A, "error", "error: must be a string");
        goto fail;
    }
    json_t *lv = member(body, "log");
    if (lv != NULL && !json_is_string(lv)) {
        rung_error_set(err, A, "log", "log: must be a string (the log's last lines)");
        goto fail;
    }
    out->completed = strcmp(status, "completed") == 0;
    out->preempted = strcmp(status, "preempted") == 0;
    if (!out->completed && !out->preempted && strcmp(status, "failed") != 0) {
        rung_error_set(err, A, "status", "status: must be completed, failed or preempted");
        goto fail;
    }
    if (ev != NULL) {
        size_t len = json_string_length(ev);
        size_t keep = jsonv_utf8_cut(json_string_value(ev), len, CORE_MAX_ERROR);
        /* json_string_setn copies the head before it frees the old text. */
        if (keep < len && json_string_setn(ev, json_string_value(ev), keep) != 0) {
            rung_error_set(err, RUNG_E_INTERNAL, "", "out of memory");
            goto fail;
        }
        out->error = json_string_value(ev);
    }
    out->log = lv != NULL ? json_string_value(lv) : NULL;
    json_t *wv = member(body, "warnings");
    if (wv != NULL && check_warnings(wv, "warnings", err))
        goto fail;
    out->warnings = wv;
    return 0;
fail:
    memset(out, 0, sizeof *out);
    return err->code;
}

/* ---- workers ---- */

/* A register's environments or containers (docs/api.md, "POST
 * /api/v1/workers"): an array of at most REQUEST_MAX_ENVIRONMENTS names,
 * each valid for ok(), none twice; NULL when absent or null. */
static int name_list(json_t *body, const char *key, bool (*ok)(const char *), const char *what,
                     json_t **out, RungError *err)
{
    json_t *a = member(body, key);
    *out = NULL;
    if (a == NULL)
        return 0;
    if (!json_is_array(a) || json_array_size(a) > REQUEST_MAX_ENVIRONMENTS)
        return rung_error_set(err, A, key, "%s: must be an array of at most %d names", key,
                              REQUEST_MAX_ENVIRONMENTS);
    size_t i, k;
    json_t *v;
    json_array_foreach(a, i, v) {
        char field[48];
        item_field(field, sizeof field, key, i);
        if (!json_is_string(v) || !ok(json_string_value(v)))
            return rung_error_set(err, A, field, "%s: %s", field, what);
        for (k = 0; k < i; k++)
            if (json_equal(json_array_get(a, k), v))
                return rung_error_set(err, A, field, "%s: '%s' is listed twice", field,
                                      json_string_value(v));
    }
    *out = a;
    return 0;
}

static bool runtime_ok(const char *name)
{
    return strcmp(name, "podman") == 0 || strcmp(name, "docker") == 0 ||
           strcmp(name, "apptainer") == 0;
}

int request_register_parse(json_t *body, RegisterRequest *out, RungError *err)
{
    static const char *const allowed[] = {"name",   "hostname",     "gpus",       "cpus",
                                          "labels", "environments", "containers", NULL};
    memset(out, 0, sizeof *out);
    out->hostname = "";
    if (body_object(body, allowed, err) ||
        jsonv_string(body, "", "name", JSONV_OPTIONAL, REQUEST_MAX_NAME, &out->name, A, err) ||
        jsonv_string(body, "", "hostname", JSONV_OPTIONAL, REQUEST_MAX_NAME, &out->hostname, A,
                     err) ||
        jsonv_int(body, "", "cpus", JSONV_OPTIONAL, 0, SPEC_MAX_CPUS, &out->cpus, A, err))
        goto fail;
    json_t *gpus = member(body, "gpus");
    if (gpus != NULL) {
        if (!json_is_array(gpus) || json_array_size(gpus) > REQUEST_MAX_GPUS_JSON) {
            rung_error_set(err, A, "gpus", "gpus: must be an array of at most %d GPU objects",
                           REQUEST_MAX_GPUS_JSON);
            goto fail;
        }
        size_t i;
        json_t *g;
        json_array_foreach(gpus, i, g) {
            if (!json_is_object(g)) {
                char field[48]; /* a name and an index */
                item_field(field, sizeof field, "gpus", i);
                rung_error_set(err, A, field, "gpus: each GPU must be an object");
                goto fail;
            }
        }
    }
    json_t *labels = member(body, "labels");
    if (labels != NULL) {
        if (!json_is_object(labels) || json_object_size(labels) > REQUEST_MAX_LABELS) {
            rung_error_set(err, A, "labels", "labels: must be an object of at most %d labels",
                           REQUEST_MAX_LABELS);
            goto fail;
        }
        const char *key;
        json_t *v;
        json_object_foreach(labels, key, v) {
            char field[RUNG_FIELD_MAX];
            jsonv_path(field, sizeof field, "labels", key);
            if (!spec_label_key_ok(key)) {
                rung_error_set(err, A, field,
                               "%s: a label's key is 1 to %d characters of A-Z a-z 0-9 _ . - /",
                               field, SPEC_MAX_LABEL_KEY);
                goto fail;
            }
            if (!json_is_string(v) || json_string_length(v) > SPEC_MAX_LABEL_VALUE) {
                rung_error_set(err, A, field, "%s: must be a string of at most %d bytes", field,
                               SPEC_MAX_LABEL_VALUE);
                goto fail;
            }
        }
    }
    if (name_list(body, "environments", spec_environment_ok,
                  "an environment's name is 1 to 64 letters, digits, '_', '.' or '-', starting "
                  "with a letter or digit",
                  &out->environments, err) ||
        name_list(body, "containers", runtime_ok, "must be podman, docker or apptainer",
                  &out->containers, err))
        goto fail;
    out->labels = labels;
    out->gpus = gpus;
    out->label = out->name ? out->name : (out->hostname[0] ? out->hostname : "worker");
    return 0;
fail:
    memset(out, 0, sizeof *out);
    return err->code;
}

/* The lease's "trainables": the types the worker runs, as a mask (kept as
 * it is when absent). */
static int parse_trainables(const json_t *v, unsigned *mask, RungError *err)
{
    static const char *const names[] = {[SPEC_TRAINABLE_EXTERNAL] = "external",
                                        [SPEC_TRAINABLE_COMMAND] = "command",
                                        [SPEC_TRAINABLE_BUILTIN] = "builtin"};
    if (v == NULL)
        return 0;
    /* More than three items repeat one: the repeat is named below. */
    if (!json_is_array(v) || json_array_size(v) == 0)
        return rung_error_set(err, A, "trainables",
                              "trainables: must be a non-empty array of command, builtin, "
                              "external");
    *mask = 0;
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t) {
        char field[48]; /* a name and an index */
        item_field(field, sizeof field, "trainables", i);
        unsigned bit = 0;
        for (int k = 0; k < 3 && json_is_string(t); k++)
            if (strcmp(json_string_value(t), names[k]) == 0)
                bit = SPEC_TRAINABLE_BIT(k);
        if (bit == 0 || (*mask & bit) != 0)
            return rung_error_set(err, A, field,
                                  "%s: must be command, builtin or external, each once", field);
        *mask |= bit;
    }
    return 0;
}

/* Whether addr may be a host name or an IP address (letters, digits and
 * . - : _ %, not starting with -): it reaches other workers' programs as
 * MASTER_ADDR and as an argument ({master_addr}), so nothing else gets
 * through, and it cannot pass for an option. */
static bool addr_ok(const char *addr)
{
    if (addr[0] == '-')
        return false;
    for (const char *p = addr; *p != '\0'; p++) {
        char c = *p;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':' || c == '%'))
            return false;
    }
    return true;
}

/* The lease's advertise_addr and port: both, or neither (a worker that
 * cannot join a gang). */
static int parse_gang_fields(const json_t *body, LeaseOffer *offer, RungError *err)
{
    if (jsonv_string(body, "", "advertise_addr", JSONV_OPTIONAL, CORE_MAX_ADDR,
                     &offer->advertise_addr, A, err) ||
        jsonv_int(body, "", "port", JSONV_OPTIONAL, 1, 65535, &offer->port, A, err))
        return err->code;
    if (offer->advertise_addr != NULL && !addr_ok(offer->advertise_addr))
        return rung_error_set(err, A, "advertise_addr",
                              "advertise_addr: must be a host name or IP address (letters, "
                              "digits and . - : _ %%, not starting with -)");
    if (offer->advertise_addr != NULL && offer->port == 0)
        return rung_error_set(err, A, "port", "port: required with advertise_addr");
    if (offer->advertise_addr == NULL && offer->port != 0)
        return rung_error_set(err, A, "advertise_addr", "advertise_addr: required with port");
    return 0;
}

int request_lease_parse(json_t *body, int64_t default_cpus, LeaseRequest *out, RungError *err)
{
    static const char *const allowed[] = {"gpus",           "cpus", "wait_s",    "trainables",
                                          "advertise_addr", "port", "downloads", NULL};
    memset(out, 0, sizeof *out);
    out->offer.cpus = default_cpus;
    out->offer.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL) |
                            SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_COMMAND) |
                            SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_BUILTIN);
    if (body_object(body, allowed, err) ||
        jsonv_int(body, "", "cpus", JSONV_OPTIONAL, 0, SPEC_MAX_CPUS, &out->offer.cpus, A, err) ||
        jsonv_number(body, "", "wait_s", JSONV_OPTIONAL, &out->wait_s, A, err))
        goto fail;
    json_t *downloads = member(body, "downloads");
    if (downloads != NULL && !json_is_boolean(downloads)) {
        rung_error_set(err, A, "downloads", "downloads: must be true or false");
        goto fail;
    }
    out->offer.no_downloads = json_is_false(downloads);
    if (out->wait_s < 0) {
        rung_error_set(err, A, "wait_s", "wait_s: must be >= 0");
        goto fail;
    }
    if (out->wait_s > REQUEST_LONG_POLL_MAX_S)
        out->wait_s = REQUEST_LONG_POLL_MAX_S; /* docs/api.md, "Long polls": at most 30 s */
    if (parse_trainables(member(body, "trainables"), &out->offer.trainables, err) ||
        parse_gang_fields(body, &out->offer, err))
        goto fail;
    json_t *gpus = member(body, "gpus");
    if (gpus == NULL)
        return 0;
    if (!json_is_array(gpus) || json_array_size(gpus) > CORE_MAX_LEASE_GPUS) {
        rung_error_set(err, A, "gpus", "gpus: must be an array of at most %d indices",
                       CORE_MAX_LEASE_GPUS);
        goto fail;
    }
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        if (!json_is_integer(g) || json_integer_value(g) < 0) {
            char field[48]; /* a name and an index */
            item_field(field, sizeof field, "gpus", i);
            rung_error_set(err, A, field, "%s: must be a GPU index (integer >= 0)", field);
            goto fail;
        }
        out->offer.gpus[out->offer.n_gpus++] = json_integer_value(g);
    }
    return 0;
fail:
    memset(out, 0, sizeof *out);
    return err->code;
}

/* Whether one of the registered GPU objects has "index": index. */
static bool registered_index(const json_t *registered, int64_t index)
{
    size_t i;
    json_t *g;
    json_array_foreach(registered, i, g) {
        json_t *v = json_object_get(g, "index");
        if (json_is_integer(v) && json_integer_value(v) == index)
            return true;
    }
    return false;
}

int request_lease_check_gpus(const LeaseOffer *offer, const json_t *registered, RungError *err)
{
    /* At most CORE_MAX_LEASE_GPUS offered and REQUEST_MAX_GPUS_JSON
     * registered: the quadratic scans stay small. */
    for (int64_t i = 0; i < offer->n_gpus; i++) {
        int64_t index = offer->gpus[i];
        char field[48]; /* a name and an index */
        item_field(field, sizeof field, "gpus", (size_t)i);
        for (int64_t j = 0; j < i; j++)
            if (offer->gpus[j] == index)
                return rung_error_set(err, A, field, "%s: GPU %lld is offered twice", field,
                                      (long long)index);
        if (!json_is_array(registered) || !registered_index(registered, index))
            return rung_error_set(err, A, field, "%s: GPU %lld is not one this worker registered",
                                  field, (long long)index);
    }
    return 0;
}

/* A log's key: a trial id in decimal digits, nothing else. */
static bool trial_id_key(const char *key, int64_t *id)
{
    if (key[0] < '0' || key[0] > '9')
        return false; /* strtoll would take "", " 1", "+1" and "-1" */
    char *end;
    errno = 0;
    long long v = strtoll(key, &end, 10);
    if (*end != '\0' || errno == ERANGE)
        return false;
    *id = v;
    return true;
}

/* ---- heartbeat ---- */

/* Whether s is an RFC 3339 time: 2026-11-23T19:00:00Z, with an optional
 * fraction and a Z or +HH:MM offset, digits where digits go. */
static bool rfc3339(const char *s)
{
    static const char *const shape = "dddd-dd-ddTdd:dd:dd";
    size_t i = 0;
    for (; shape[i]; i++) {
        bool digit = s[i] >= '0' && s[i] <= '9';
        if (shape[i] == 'd' ? !digit : s[i] != shape[i])
            return false;
    }
    if (s[i] == '.') {
        size_t from = ++i;
        while (s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == from || i - from > 9)
            return false;
    }
    if (s[i] == 'Z')
        return s[i + 1] == '\0';
    if (s[i] != '+' && s[i] != '-')
        return false;
    const char *o = s + i + 1;
    for (int k = 0; k < 5; k++)
        if (k == 2 ? o[k] != ':' : !(o[k] >= '0' && o[k] <= '9'))
            return false;
    return o[5] == '\0';
}

/* One item of a heartbeat's gpus (request.h, HeartbeatRequest); field is
 * its path, "gpus[0]". */
static int check_gpu_beat(const json_t *g, const char *field, RungError *err)
{
    static const char *const keys[] = {"index",           "util",         "memory_used_mb",
                                       "memory_total_mb", "state",        "trial_id",
                                       "foreign_mb",      "foreign_util", NULL};
    static const char *const states[] = {"spare", "trial", "busy", "waiting", NULL};
    if (!json_is_object(g))
        return rung_error_set(err, A, field, "%s: each GPU must be an object", field);
    int64_t index, mb, trial;
    double util = 0.0; /* jsonv_number leaves it alone for null: absent */
    const char *state = NULL;
    if (jsonv_only_keys(g, field, keys, A, err) ||
        jsonv_int(g, field, "index", JSONV_REQUIRED, 0, REQUEST_MAX_GPU_INDEX, &index, A, err) ||
        jsonv_number(g, field, "util", JSONV_OPTIONAL, &util, A, err) ||
        jsonv_int(g, field, "memory_used_mb", JSONV_OPTIONAL, 0, REQUEST_MAX_MB, &mb, A, err) ||
        jsonv_int(g, field, "memory_total_mb", JSONV_OPTIONAL, 0, REQUEST_MAX_MB, &mb, A, err) ||
        jsonv_string(g, field, "state", JSONV_OPTIONAL, 16, &state, A, err) ||
        jsonv_int(g, field, "foreign_mb", JSONV_OPTIONAL, 0, REQUEST_MAX_MB, &mb, A, err))
        return err->code;
    char at[RUNG_FIELD_MAX];
    if (member(g, "util") != NULL && (util < 0 || util > 1)) {
        jsonv_path(at, sizeof at, field, "util");
        return rung_error_set(err, A, at, "%s: must be a fraction, 0 to 1", at);
    }
    if (member(g, "foreign_util") != NULL &&
        (jsonv_number(g, field, "foreign_util", JSONV_OPTIONAL, &util, A, err) || util < 0 ||
         util > 1)) {
        jsonv_path(at, sizeof at, field, "foreign_util");
        return rung_error_set(err, A, at, "%s: must be a fraction, 0 to 1", at);
    }
    int k = 0;
    while (state != NULL && states[k] != NULL && strcmp(state, states[k]) != 0)
        k++;
    if (state != NULL && states[k] == NULL) {
        jsonv_path(at, sizeof at, field, "state");
        return rung_error_set(err, A, at, "%s: must be spare, trial, busy or waiting", at);
    }
    json_t *tv = member(g, "trial_id");
    if (tv != NULL) {
        if (jsonv_int(g, field, "trial_id", JSONV_OPTIONAL, 1, INT64_MAX, &trial, A, err))
            return err->code;
        if (state == NULL || strcmp(state, "trial") != 0) {
            jsonv_path(at, sizeof at, field, "trial_id");
            return rung_error_set(err, A, at, "%s: only a GPU in state trial has one", at);
        }
    }
    return 0;
}

/* The heartbeat's hours and next_lease_at: a string or null each. */
static int check_hours(const json_t *body, RungError *err)
{
    json_t *hours = member(body, "hours"), *next = member(body, "next_lease_at");
    if (hours != NULL && (!json_is_string(hours) || json_string_length(hours) == 0 ||
                          json_string_length(hours) > REQUEST_MAX_HOURS))
        return rung_error_set(err, A, "hours",
                              "hours: must be the worker's --hours text (1 to %d "
                              "bytes) or null",
                              REQUEST_MAX_HOURS);
    if (next != NULL && (!json_is_string(next) || !rfc3339(json_string_value(next))))
        return rung_error_set(err, A, "next_lease_at",
                              "next_lease_at: must be an RFC 3339 time or null");
    return 0;
}

int request_heartbeat_parse(json_t *body, HeartbeatRequest *out, RungError *err)
{
    static const char *const allowed[] = {"trials", "gpus",          "logs",  "warnings",
                                          "hours",  "next_lease_at", "cache", NULL};
    out->n_trials = 0;
    out->gpus = out->logs = out->warnings = NULL;
    if (body_object(body, allowed, err) != 0)
        return err->code;
    /* The worker's cache of working directories (docs/api.md, "heartbeat"):
     * kept with the heartbeat and shown. */
    json_t *cache = member(body, "cache");
    if (cache != NULL) {
        static const char *const cache_keys[] = {"free_bytes", "full", NULL};
        int64_t free_bytes;
        if (!json_is_object(cache))
            return rung_error_set(err, A, "cache", "cache: must be an object");
        if (jsonv_only_keys(cache, "cache", cache_keys, A, err) ||
            jsonv_int(cache, "cache", "free_bytes", JSONV_OPTIONAL, 0, INT64_MAX, &free_bytes, A,
                      err))
            return err->code;
        json_t *full = json_object_get(cache, "full");
        if (full != NULL && !json_is_boolean(full))
            return rung_error_set(err, A, "cache.full", "cache.full: must be true or false");
    }
    json_t *trials = member(body, "trials");
    if (trials != NULL) {
        if (!json_is_array(trials) || json_array_size(trials) > REQUEST_MAX_TRIAL_IDS) {
            rung_error_set(err, A, "trials", "trials: must be an array of at most %d trial ids",
                           REQUEST_MAX_TRIAL_IDS);
            goto fail;
        }
        size_t i;
        json_t *v;
        json_array_foreach(trials, i, v) {
            if (!json_is_integer(v)) {
                char field[48]; /* a name and an index */
                item_field(field, sizeof field, "trials", i);
                rung_error_set(err, A, field, "trials: each must be a trial id");
                goto fail;
            }
            out->trials[out->n_trials++] = json_integer_value(v);
        }
    }
    json_t *gpus = member(body, "gpus");
    if (gpus != NULL && (!json_is_array(gpus) || json_array_size(gpus) > REQUEST_MAX_GPUS_JSON)) {
        rung_error_set(err, A, "gpus", "gpus: must be an array of at most %d GPU objects",
                       REQUEST_MAX_GPUS_JSON);
        goto fail;
    }
    size_t gi;
    json_t *gv;
    json_array_foreach(gpus, gi, gv) {
        char field[48]; /* a name and an index */
        item_field(field, sizeof field, "gpus", gi);
        if (check_gpu_beat(gv, field, err))
            goto fail;
    }
    if (check_hours(body, err))
        goto fail;
    json_t *logs = member(body, "logs");
    if (logs != NULL) {
        if (!json_is_object(logs)) {
            rung_error_set(err, A, "logs", "logs: must be an object of trial id: text");
            goto fail;
        }
        const char *key;
        json_t *v;
        json_object_foreach(logs, key, v) {
            int64_t id;
            if (!trial_id_key(key, &id) || !json_is_string(v)) {
                /* The field holds the key's head only (the key is anything
                 * the client sent), cut on a character boundary. */
                char field[64];
                int len = (int)jsonv_utf8_cut(key, strlen(key), 40);
                snprintf(field, sizeof field, "logs.%.*s", len, key);
                rung_error_set(err, A, field, "logs: keys are trial ids, values text");
                goto fail;
            }
        }
    }
    json_t *warnings = member(body, "warnings");
    if (warnings != NULL) {
        if (!json_is_object(warnings)) {
            rung_error_set(err, A, "warnings",
                           "warnings: must be an object of trial id: warnings object");
            goto fail;
        }
        const char *key;
        json_t *v;
        json_object_foreach(warnings, key, v) {
            int64_t id;
            char field[64];
            int len = (int)jsonv_utf8_cut(key, strlen(key), 40);
            snprintf(field, sizeof field, "warnings.%.*s", len, key);
            if (!trial_id_key(key, &id)) {
                rung_error_set(err, A, field, "warnings: keys are trial ids");
                goto fail;
            }
            if (check_warnings(v, field, err))
                goto fail;
        }
    }
    out->gpus = gpus;
    out->logs = logs;
    out->warnings = warnings;
    return 0;
fail:
    out->n_trials = 0; /* the ids array itself is 8 KiB: not cleared */
    return err->code;
}

bool request_heartbeat_log(const HeartbeatRequest *hb, void **iter, int64_t *trial_id,
                           const char **text)
{
    if (hb->logs == NULL)
        return false;
    *iter = *iter == NULL ? json_object_iter(hb->logs) : json_object_iter_next(hb->logs, *iter);
    if (*iter == NULL)
        return false;
    /* The parser checked every key and value. */
    if (!trial_id_key(json_object_iter_key(*iter), trial_id))
        return false;
    *text = json_string_value(json_object_iter_value(*iter));
    return *text != NULL;
}

bool request_heartbeat_warnings(const HeartbeatRequest *hb, void **iter, int64_t *trial_id,
                                json_t **warnings)
{
    if (hb->warnings == NULL)
        return false;
    *iter = *iter == NULL ? json_object_iter(hb->warnings)
                          : json_object_iter_next(hb->warnings, *iter);
    if (*iter == NULL)
        return false;
    if (!trial_id_key(json_object_iter_key(*iter), trial_id)) /* checked by the parser */
        return false;
    *warnings = json_object_iter_value(*iter);
    return true;
}
