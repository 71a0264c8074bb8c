/* Fuzz target of worker/reportline.c, the "@rung {json}" line parser: any
 * bytes a trial prints go through it, so it must never crash, leak or hand
 * back something the worker would send on as a report.
 *
 * Each input is one line. Besides the sanitizers' checks, the target asserts
 * what reportline.h promises for each kind of result, that the answer does
 * not depend on the size of the why buffer, and that an accepted report,
 * printed again as a line, parses to the same step and metrics.
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
 * checks that it parses to the same step and metrics. */
static void check_round_trip(const json_t *metrics, int64_t step)
{
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
    text_add(&t, "}", 1);

    json_t *again;
    int64_t step_again = -1;
    char why[256];
    ReportLineKind kind = reportline_parse(t.data, t.len, NEXT_STEP, &again, &step_again, why,
                                           sizeof why);
    if (kind != REPORTLINE_OK)
        fprintf(stderr, "fuzz_reportline: round trip of '%.*s': %s\n", (int)t.len, t.data, why);
    CHECK(kind == REPORTLINE_OK);
    CHECK(step_again == step);
    CHECK(json_equal(again, metrics));
    json_decref(again);
    free(t.data);
}

static void check_metrics(const json_t *metrics, int64_t step)
{
    CHECK(json_is_object(metrics));
    CHECK(json_object_size(metrics) >= 1 && json_object_size(metrics) <= 64);
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
    json_t *metrics = NULL;
    int64_t step = -1;
    ReportLineKind kind = reportline_parse(line, size, NEXT_STEP, &metrics, &step, why, sizeof why);
    CHECK(memchr(why, '\0', sizeof why) != NULL);

    /* Only a line that starts with the marker can be anything but a log line. */
    bool marked = size >= 5 && memcmp(line, "@rung", 5) == 0;
    switch (kind) {
    case REPORTLINE_OK:
        CHECK(marked);
        CHECK(why[0] == '\0');
        check_metrics(metrics, step);
        check_round_trip(metrics, step);
        break;
    case REPORTLINE_NONE:
        CHECK(metrics == NULL);
        CHECK(step == -1);
        CHECK(why[0] == '\0');
        break;
    case REPORTLINE_INVALID:
        CHECK(marked);
        CHECK(metrics == NULL);
        CHECK(step == -1);
        CHECK(why[0] != '\0');
        break;
    default:
        CHECK(!"unknown kind");
    }

    /* The why buffer's size changes the message only, never the answer. */
    char tiny[4];
    json_t *other = NULL;
    int64_t other_step = -1;
    CHECK(reportline_parse(line, size, NEXT_STEP, &other, &other_step, tiny, sizeof tiny) == kind);
    CHECK(strlen(tiny) < sizeof tiny);
    CHECK(strncmp(tiny, why, strlen(tiny)) == 0);
    CHECK(other_step == step);
    CHECK(json_equal(other, metrics) || (other == NULL && metrics == NULL));
    json_decref(other);
    other = NULL;
    CHECK(reportline_parse(line, size, NEXT_STEP, &other, &other_step, NULL, 0) == kind);
    json_decref(other);

    json_decref(metrics);
    return 0;
}
