/* Fuzz target of worker/reportline.c, the "@rung {json}" line parser: any
 * bytes a trial prints go through it, so it must never crash, leak or hand
 * back something the worker would send on as a report.
 *
 * Each input is one line. Besides the sanitizers' checks, the target asserts
 * what reportline.h promises for each kind of result (info within its
 * bounds, without NUL characters or the parser's marks, a note for each
 * value that is not a number), that the answer does not depend on the size
 * of the why buffer, and that an accepted report, printed again as a line,
 * parses to the same step, metrics and info.
 *
 * Built with libFuzzer under clang, or with fuzz_driver.c under gcc (see
 * CMakeLists.txt). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reportline.h"

#define NEXT_STEP 7
#define STEP_MAX ((int64_t)1 << 53)

/* abort() is what both libFuzzer and the plain driver catch as a crash. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_reportline: %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const SPECIAL_TOKENS[] = {"NaN", "Infinity", "-Infinity"};

static const char *special_token(const json_t *v)
{
    if (!json_is_string(v))
        return NULL;
    for (size_t k = 0; k < 3; k++) {
        if (strcmp(json_string_value(v), SPECIAL_TOKENS[k]) == 0 &&
            json_string_length(v) == strlen(SPECIAL_TOKENS[k]))
            return SPECIAL_TOKENS[k];
    }
    return NULL;
}

/* A growable text buffer for the round trip; abort() on out of memory. */
typedef struct {
    char *data;
    size_t len;
    size_t cap;
} Text;

static void text_add(Text *t, const char *s, size_t n)
{
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n)
            cap *= 2;
        char *data = realloc(t->data, cap);
        CHECK(data != NULL);
        t->data = data;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
}

/* Appends jansson's JSON text for v (a string key or a number). */
static void text_add_json(Text *t, const json_t *v)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    CHECK(s != NULL);
    text_add(t, s, strlen(s));
    free(s);
}

/* Prints the report the way a trial would, with bare special tokens, and
 * checks that it parses to the same step, metrics and info. */
static void check_round_trip(const ReportLine *r)
{
    const json_t *metrics = r->metrics;
    int64_t step = r->step;
    if (json_object_size(r->metrics) + json_object_size(r->info) == 0)
        return; /* every value was left out: nothing to print */
    Text t = {0};
    char head[64];
    int n = snprintf(head, sizeof head, "@rung {\"step\": %lld", (long long)step);
    text_add(&t, head, (size_t)n);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)metrics, key, value) {
        text_add(&t, ", ", 2);
        json_t *k = json_string(key);
        CHECK(k != NULL);
        text_add_json(&t, k);
        json_decref(k);
        text_add(&t, ": ", 2);
        const char *special = special_token(value);
        if (special != NULL)
            text_add(&t, special, strlen(special));
        else
            text_add_json(&t, value);
    }
    json_object_foreach((json_t *)r->info, key, value) {
        text_add(&t, ", ", 2);
        json_t *k = json_string(key);
        CHECK(k != NULL);
        text_add_json(&t, k);
        json_decref(k);
        text_add(&t, ": ", 2);
        text_add_json(&t, value);
    }
    text_add(&t, "}", 1);

    ReportLine again;
    char why[256];
    ReportLineKind kind = reportline_parse(t.data, t.len, NEXT_STEP, &again, why, sizeof why);
    if (kind != REPORTLINE_OK)
        fprintf(stderr, "fuzz_reportline: round trip of '%.*s': %s\n", (int)t.len, t.data, why);
    CHECK(kind == REPORTLINE_OK);
    CHECK(again.step == step);
    CHECK(json_equal(again.metrics, metrics));
    CHECK(json_equal(again.info, r->info));
    CHECK(again.done == r->done);
    reportline_clear(&again);
    free(t.data);
}

/* An info value: no NUL in any string, no number's mark, within the depth. */
static void check_info_value(const json_t *v, int depth)
{
    CHECK(depth <= REPORTLINE_INFO_DEPTH);
    if (json_is_string(v)) {
        CHECK(memchr(json_string_value(v), '\0', json_string_length(v)) == NULL);
        return;
    }
    size_t i;
    const char *key;
    json_t *item;
    if (json_is_array(v))
        json_array_foreach(v, i, item)
            check_info_value(item, depth + 1);
    if (json_is_object(v))
        json_object_foreach((json_t *)v, key, item)
            check_info_value(item, depth + 1);
}

/* The info and notes of an accepted report (reportline.h). */
static void check_info(const ReportLine *r)
{
    CHECK(json_is_object(r->info) && json_is_object(r->notes));
    CHECK(r->info->refcount == 1 && r->notes->refcount == 1);
    CHECK(json_object_size(r->metrics) + json_object_size(r->info) + json_object_size(r->notes) >=
          1);
    size_t total = 0;
    const char *key;
    json_t *value;
    json_object_foreach(r->info, key, value) {
        CHECK(!json_is_number(value)); /* a quoted "NaN" is info, a bare one a metric */
        CHECK(json_object_get(r->metrics, key) == NULL);
        check_info_value(value, 0);
        size_t n = json_dumpb(value, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK(n >= 1 && n <= REPORTLINE_INFO_VALUE_MAX);
        total += n;
        bool done = strcmp(key, "done") == 0 && json_is_boolean(value);
        CHECK((json_object_get(r->notes, key) == NULL) == done);
    }
    CHECK(total <= REPORTLINE_INFO_MAX);
    CHECK(r->done == json_is_true(json_object_get(r->info, "done")));
    json_object_foreach(r->notes, key, value) {
        CHECK(json_is_string(value) && json_string_length(value) < 256);
        CHECK(json_object_get(r->metrics, key) == NULL);
    }
}

static void check_metrics(const json_t *metrics, int64_t step)
{
    CHECK(json_is_object(metrics));
    CHECK(json_object_size(metrics) <= 64);
    CHECK(metrics->refcount == 1);
    CHECK(step >= 0 && step <= STEP_MAX);
    CHECK(json_object_get(metrics, "step") == NULL);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)metrics, key, value) {
        CHECK(strlen(key) >= 1 && strlen(key) <= 64);
        CHECK(json_is_number(value) || special_token(value) != NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    char why[256];
    ReportLine r = {.step = -1};
    ReportLineKind kind = reportline_parse(line, size, NEXT_STEP, &r, why, sizeof why);
    json_t *metrics = r.metrics;
    int64_t step = r.step;
    CHECK(memchr(why, '\0', sizeof why) != NULL);

    /* Only a line that starts with the marker can be anything but a log line. */
    bool marked = size >= 5 && memcmp(line, "@rung", 5) == 0;
    switch (kind) {
    case REPORTLINE_OK:
        CHECK(marked);
        CHECK(why[0] == '\0');
        check_metrics(metrics, step);
        check_info(&r);
        check_round_trip(&r);
        break;
    case REPORTLINE_NONE:
        CHECK(metrics == NULL && r.info == NULL && r.notes == NULL);
        CHECK(step == -1);
        CHECK(why[0] == '\0');
        break;
    case REPORTLINE_INVALID:
        CHECK(marked);
        CHECK(metrics == NULL && r.info == NULL && r.notes == NULL);
        CHECK(step == -1);
        CHECK(why[0] != '\0');
        break;
    default:
        CHECK(!"unknown kind");
    }

    /* The why buffer's size changes the message only, never the answer. */
    char tiny[4];
    ReportLine other = {.step = -1};
    CHECK(reportline_parse(line, size, NEXT_STEP, &other, tiny, sizeof tiny) == kind);
    CHECK(strlen(tiny) < sizeof tiny);
    CHECK(strncmp(tiny, why, strlen(tiny)) == 0);
    CHECK(other.step == step);
    CHECK(json_equal(other.metrics, metrics) || (other.metrics == NULL && metrics == NULL));
    CHECK(json_equal(other.info, r.info) || (other.info == NULL && r.info == NULL));
    CHECK(json_equal(other.notes, r.notes) || (other.notes == NULL && r.notes == NULL));
    reportline_clear(&other);
    CHECK(reportline_parse(line, size, NEXT_STEP, &other, NULL, 0) == kind);
    reportline_clear(&other);

    reportline_clear(&r);
    return 0;
}
