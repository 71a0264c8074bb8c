/* Unit tests of worker/reportline.c, the "@rung {json}" line parser: tables
 * of lines that are reports (with their metrics and info), log lines and
 * invalid reports (each with the words its warning must hold), then the
 * limits at and just past each edge.
 * Run under ASan too, so a leaked or double-freed metrics object fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nonfinite.h"
#include "reportline.h"

/* A line with its length, so lines may hold NUL bytes. */
#define LINE(s) s, sizeof(s) - 1

#define WHY_SIZE 256
#define NEXT_STEP 7

typedef struct {
    const char *line;
    size_t len;
    int64_t step;        /* expected step (NEXT_STEP when the line has none) */
    const char *metrics; /* expected metrics, compact JSON, in the line's order */
    const char *info;    /* expected info, the same way; NULL for {} */
} OkCase;

typedef struct {
    const char *line;
    size_t len;
} NoneCase;

typedef struct {
    const char *line;
    size_t len;
    const char *why; /* a part of the message: what it must name */
} InvalidCase;

static const OkCase OK_CASES[] = {
    {LINE("@rung {\"step\": 3, \"val_loss\": 0.41, \"val_acc\": 0.86}"), 3,
     "{\"val_loss\":0.41,\"val_acc\":0.86}", NULL},
    {LINE("@rung {\"val_loss\": 0.5}"), NEXT_STEP, "{\"val_loss\":0.5}", NULL},
    /* What Python's json.dumps prints for a diverged run. */
    {LINE("@rung {\"step\": 2, \"loss\": NaN, \"acc\": 0.5}"), 2, "{\"loss\":\"NaN\",\"acc\":0.5}",
     NULL},
    {LINE("@rung {\"a\": Infinity, \"b\": -Infinity, \"c\": NaN}"), NEXT_STEP,
     "{\"a\":\"Infinity\",\"b\":\"-Infinity\",\"c\":\"NaN\"}", NULL},
    {LINE("@rung {\"loss\":NaN,\"b\":-Infinity}"), NEXT_STEP,
     "{\"loss\":\"NaN\",\"b\":\"-Infinity\"}", NULL},
    {LINE("@rung { \"loss\" :\tNaN , \"b\":\n-Infinity\t,\"c\" : Infinity\r\n}"), NEXT_STEP,
     "{\"loss\":\"NaN\",\"b\":\"-Infinity\",\"c\":\"Infinity\"}", NULL},
    /* Integers stay integers, reals stay reals. */
    {LINE("@rung {\"step\": 0, \"n\": 42, \"r\": -1.5e-3, \"big\": 9223372036854775807}"), 0,
     "{\"n\":42,\"r\":-0.0015,\"big\":9223372036854775807}", NULL},
    {LINE("@rung {\"step\": 3.0, \"x\": 1}"), 3, "{\"x\":1}", NULL},
    {LINE("@rung {\"step\": -0.0, \"x\": 1}"), 0, "{\"x\":1}", NULL},
    {LINE("@rung {\"step\": 9007199254740992, \"x\": 1}"), 9007199254740992LL, "{\"x\":1}", NULL},
    {LINE("@rung {\"x\": 1e-400}"), NEXT_STEP, "{\"x\":0.0}", NULL},
    /* "step" may come anywhere. */
    {LINE("@rung {\"x\": 1, \"step\": 5}"), 5, "{\"x\":1}", NULL},
    /* CRLF line ends (a program on Windows, or a pty). */
    {LINE("@rung {\"x\": 1}\r"), NEXT_STEP, "{\"x\":1}", NULL},
    {LINE("@rung\t{\"x\": 1}"), NEXT_STEP, "{\"x\":1}", NULL},
    {LINE("@rung    {\"x\": 1}   "), NEXT_STEP, "{\"x\":1}", NULL},
    /* The special words as names, and inside strings, are left alone. */
    {LINE("@rung {\"NaN\": 1, \"Infinity\": Infinity}"), NEXT_STEP,
     "{\"NaN\":1,\"Infinity\":\"Infinity\"}", NULL},
    {LINE("@rung {\"a NaN, b\": NaN}"), NEXT_STEP, "{\"a NaN, b\":\"NaN\"}", NULL},
    {LINE("@rung {\"q\\\"NaN\": -Infinity}"), NEXT_STEP, "{\"q\\\"NaN\":\"-Infinity\"}", NULL},
    {LINE("@rung {\"\\\\\": NaN}"), NEXT_STEP, "{\"\\\\\":\"NaN\"}", NULL},
    {LINE("@rung {\"\xce\xb4_loss\": 1}"), NEXT_STEP, "{\"\xce\xb4_loss\":1}", NULL},
    /* Values that are not numbers are the report's info (issue 38): the
     * line's numbers stay metrics. */
    {LINE("@rung {\"loss\": 0.3, \"phase\": \"warmup\"}"), NEXT_STEP, "{\"loss\":0.3}",
     "{\"phase\":\"warmup\"}"},
    {LINE("@rung {\"step\": 2, \"loss\": 0.4, \"phase\": \"train\", \"done\": true}"), 2,
     "{\"loss\":0.4}", "{\"phase\":\"train\",\"done\":true}"},
    {LINE("@rung {\"done\": false}"), NEXT_STEP, "{}", "{\"done\":false}"},
    {LINE("@rung {\"note\": \"NaN\"}"), NEXT_STEP, "{}", "{\"note\":\"NaN\"}"},
    {LINE("@rung {\"x\": \"Infinity\"}"), NEXT_STEP, "{}", "{\"x\":\"Infinity\"}"},
    {LINE("@rung {\"a\": 1, \"b\": true}"), NEXT_STEP, "{\"a\":1}", "{\"b\":true}"},
    {LINE("@rung {\"a\": null}"), NEXT_STEP, "{}", "{\"a\":null}"},
    {LINE("@rung {\"a\": [1]}"), NEXT_STEP, "{}", "{\"a\":[1]}"},
    {LINE("@rung {\"a\": [NaN, -Infinity, 2]}"), NEXT_STEP, "{}",
     "{\"a\":[\"NaN\",\"-Infinity\",2]}"},
    {LINE("@rung {\"a\": {\"b\": 1, \"c\": {\"d\": Infinity}}}"), NEXT_STEP, "{}",
     "{\"a\":{\"b\":1,\"c\":{\"d\":\"Infinity\"}}}"},
    {LINE("@rung {\"a\": \"1.5\"}"), NEXT_STEP, "{}", "{\"a\":\"1.5\"}"},
    /* A string that looks like the parser's mark is a string. */
    {LINE("@rung {\"x\": 1, \"s\": \"\\u0000NaN\"}"), NEXT_STEP, "{\"x\":1}", "{}"},
};

static const NoneCase NONE_CASES[] = {
    {LINE("")},
    {LINE("\r")},
    {LINE("epoch 3: loss 0.41")},
    {LINE("@rungs {\"x\": 1}")},
    {LINE("@rungx {\"x\": 1}")},
    {LINE("@rung: starting")},
    {LINE("@run {\"x\": 1}")},
    {LINE("@RUNG {\"x\": 1}")},
    {LINE(" @rung {\"x\": 1}")},
    {LINE("\t@rung {\"x\": 1}")},
    {LINE("log: @rung {\"x\": 1}")},
    {LINE("\0@rung {\"x\": 1}")},
    {LINE("@rung\0 {\"x\": 1}")},
    {LINE("\xff\xfe garbage \x01")},
};

static const InvalidCase INVALID_CASES[] = {
    {LINE("@rung"), "not followed by a JSON object"},
    {LINE("@rung   \t"), "not followed by a JSON object"},
    {LINE("@rung\r"), "not followed by a JSON object"},
    {LINE("@rung{\"x\": 1}"), "followed by a space"},
    {LINE("@rung hello"), "invalid JSON: '[' or '{' expected near 'hello'"},
    {LINE("@rung [1, 2]"), "must be a JSON object"},
    {LINE("@rung {}"), "nothing reported"},
    {LINE("@rung {\"step\": 3}"), "nothing reported"},
    {LINE("@rung {\"step\": -1, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": 1.5, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": \"3\", \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": 9007199254740993, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": 1e300, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": -1e-300, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": NaN, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": Infinity, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": true, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"step\": null, \"x\": 1}"), "step must be an integer in [0, 2^53]"},
    {LINE("@rung {\"a\": 1, \"a\": 2}"), "duplicate object key near '\"a\"'"},
    {LINE("@rung {\"\": 1}"), "name is empty"},
    {LINE("@rung {\"\\u0000\": 1}"), "NUL byte in object key"},
    {LINE("@rung {\"x\": 1} trailing"), "end of file expected"},
    {LINE("@rung {\"x\": 1}{\"y\": 2}"), "end of file expected"},
    {LINE("@rung {\"x\": NaNx}"), "invalid token near 'NaNx'"},
    {LINE("@rung {\"x\": nan}"), "invalid token near 'nan'"},
    {LINE("@rung {\"x\": -NaN}"), "invalid token near '-'"},
    {LINE("@rung {\"x\": +1}"), "invalid token near '+'"},
    {LINE("@rung {\"x\": 0x10}"), "expected near 'x'"},
    /* A bare token as a key stays invalid, and the message shows it as written. */
    {LINE("@rung {NaN: 1}"), "near 'NaN'"},
    {LINE("@rung {\"x\": [NaN NaN]}"), "expected near 'NaN'"},
    {LINE("@rung {\"x\": 1e400}"), "real number overflow"},
    {LINE("@rung {\"x\": 99999999999999999999}"), "too big integer"},
    {LINE("@rung {\"x\": \"abc"), "premature end of input"},
    {LINE("@rung {\"x\": Infinity"), "expected near end of file"},
    {LINE("@rung {'x': 1}"), "expected near '''"},
    {LINE("@rung {\"\xff\": 1}"), "unable to decode byte 0xff"},
    {LINE("@rung {\"x\": 1\0}"), "NUL byte at byte 14"},
    {LINE("@rung {\"x\": \"a\0b\"}"), "NUL byte at byte 15"},
};

#define N_CASES(t) (sizeof(t) / sizeof((t)[0]))

/* Parses with the defaults the tests share, into *metrics and *step as the
 * tests before info read them; *r keeps the rest (clear it). The objects
 * start as a dangling value so that a parser that forgets to set them is
 * caught. */
static ReportLineKind parse_all(const char *line, size_t len, ReportLine *r, char *why)
{
    static json_t poison;
    r->metrics = r->info = r->notes = &poison;
    r->done = true;
    return reportline_parse(line, len, NEXT_STEP, r, why, WHY_SIZE);
}

/* The metrics alone: *metrics is the caller's to free; info and notes are
 * freed here. */
static ReportLineKind parse(const char *line, size_t len, json_t **metrics, int64_t *step,
                            char *why)
{
    ReportLine r;
    r.step = *step;
    ReportLineKind kind = parse_all(line, len, &r, why);
    *metrics = r.metrics;
    *step = r.step;
    json_decref(r.info);
    json_decref(r.notes);
    return kind;
}

static char *dump(const json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    assert_non_null(text);
    return text;
}

static void test_ok_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_CASES(OK_CASES); i++) {
        const OkCase *c = &OK_CASES[i];
        ReportLine r;
        char why[WHY_SIZE];
        ReportLineKind kind = parse_all(c->line, c->len, &r, why);
        if (kind != REPORTLINE_OK)
            fail_msg("case %zu (%s): kind %d, why: %s", i, c->line, (int)kind, why);
        assert_string_equal(why, "");
        assert_int_equal(r.step, c->step);
        /* Compared as text: order, integer versus real and the strings count. */
        const char *expect[2] = {c->metrics, c->info ? c->info : "{}"};
        json_t *got[2] = {r.metrics, r.info};
        for (int k = 0; k < 2; k++) {
            json_error_t jerr;
            json_t *want = json_loads(expect[k], 0, &jerr);
            assert_non_null(want);
            char *got_text = dump(got[k]);
            char *want_text = dump(want);
            if (strcmp(got_text, want_text) != 0)
                fail_msg("case %zu (%s): got %s, want %s", i, c->line, got_text, want_text);
            free(got_text);
            free(want_text);
            json_decref(want);
            assert_int_equal(got[k]->refcount, 1); /* ours alone to free */
        }
        assert_int_equal(r.done, json_is_true(json_object_get(r.info, "done")));
        reportline_clear(&r);
    }
}

static void test_none_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_CASES(NONE_CASES); i++) {
        const NoneCase *c = &NONE_CASES[i];
        ReportLine r;
        r.step = -99;
        char why[WHY_SIZE];
        ReportLineKind kind = parse_all(c->line, c->len, &r, why);
        if (kind != REPORTLINE_NONE)
            fail_msg("case %zu (%s): kind %d, why: %s", i, c->line, (int)kind, why);
        assert_null(r.metrics);
        assert_null(r.info);
        assert_null(r.notes);
        int64_t step = r.step;
        assert_int_equal(step, -99);
        assert_string_equal(why, "");
    }
}

static void test_invalid_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_CASES(INVALID_CASES); i++) {
        const InvalidCase *c = &INVALID_CASES[i];
        ReportLine r;
        r.step = -99;
        char why[WHY_SIZE];
        ReportLineKind kind = parse_all(c->line, c->len, &r, why);
        if (kind != REPORTLINE_INVALID)
            fail_msg("case %zu (%s): kind %d", i, c->line, (int)kind);
        assert_null(r.metrics);
        assert_null(r.info);
        assert_null(r.notes);
        int64_t step = r.step;
        assert_int_equal(step, -99);
        if (strstr(why, c->why) == NULL)
            fail_msg("case %zu (%s): why '%s' lacks '%s'", i, c->line, why, c->why);
        /* The parser's internal mark never shows in a message. */
        if (strstr(why, "\\u0000NaN") != NULL)
            fail_msg("case %zu (%s): why '%s' shows the mark", i, c->line, why);
    }
}

/* Builds "@rung {" + n metrics "m0":0, ... + "}" with names of name_len bytes
 * (padded with 'x'). Free with free(). */
static char *metrics_line(int n, size_t name_len)
{
    size_t cap = 16 + (size_t)n * (name_len + 16);
    char *line = malloc(cap);
    assert_non_null(line);
    size_t used = (size_t)snprintf(line, cap, "@rung {");
    for (int i = 0; i < n; i++) {
        char name[128];
        int k = snprintf(name, sizeof name, "m%d", i);
        assert_true((size_t)k <= name_len && name_len < sizeof name);
        memset(name + k, 'x', name_len - (size_t)k);
        name[name_len] = '\0';
        used += (size_t)snprintf(line + used, cap - used, "%s\"%s\": %d", i ? ", " : "", name, i);
    }
    snprintf(line + used, cap - used, "}");
    return line;
}

static void test_metric_limits(void **state)
{
    (void)state;
    json_t *metrics;
    int64_t step;
    char why[WHY_SIZE];

    char *line = metrics_line(64, 64);
    assert_int_equal(parse(line, strlen(line), &metrics, &step, why), REPORTLINE_OK);
    assert_int_equal(json_object_size(metrics), 64);
    json_decref(metrics);
    free(line);

    line = metrics_line(65, 8);
    assert_int_equal(parse(line, strlen(line), &metrics, &step, why), REPORTLINE_INVALID);
    assert_string_equal(why, "65 metrics and info values, more than 64");
    assert_null(metrics);
    free(line);

    /* "step" is not a metric: 64 metrics and a step are fine. */
    line = metrics_line(64, 4);
    char *with_step = malloc(strlen(line) + 32);
    assert_non_null(with_step);
    sprintf(with_step, "@rung {\"step\": 1, %s", line + 7);
    assert_int_equal(parse(with_step, strlen(with_step), &metrics, &step, why), REPORTLINE_OK);
    assert_int_equal(json_object_size(metrics), 64);
    assert_int_equal(step, 1);
    json_decref(metrics);
    free(with_step);
    free(line);

    line = metrics_line(2, 65);
    assert_int_equal(parse(line, strlen(line), &metrics, &step, why), REPORTLINE_INVALID);
    assert_non_null(strstr(why, "metric name 'm0xxx"));
    assert_non_null(strstr(why, "...' is longer than 64 bytes"));
    free(line);
}

/* A long metric name is quoted in the why message cut to 40 bytes on a
 * character boundary (common/utf8.h): a 4-byte character that straddles the
 * cut is left out whole, and the message stays valid UTF-8, as a JSON
 * string needs it to be. */
static void test_long_name_cut_on_character(void **state)
{
    (void)state;
    json_t *metrics;
    int64_t step;
    char why[WHY_SIZE];
    /* 38 bytes of 'a', U+1F600 (F0 9F 98 80) at bytes 38..41, then 'b'
     * up to 70 bytes: the cut at 40 falls inside the emoji. */
    char name[71];
    memset(name, 'a', 38);
    memcpy(name + 38, "\xf0\x9f\x98\x80", 4);
    memset(name + 42, 'b', 28);
    name[70] = '\0';
    char line[128];
    snprintf(line, sizeof line, "@rung {\"%s\": 1}", name);
    assert_int_equal(parse(line, strlen(line), &metrics, &step, why), REPORTLINE_INVALID);
    char expect[96];
    snprintf(expect, sizeof expect, "metric name '%.38s...' is longer than 64 bytes", name);
    assert_string_equal(why, expect);
    json_t *j = json_string(why);
    assert_non_null(j);
    json_decref(j);

    /* 36 bytes before it: the emoji ends at byte 40 and is kept. */
    memset(name, 'a', 36);
    memcpy(name + 36, "\xf0\x9f\x98\x80", 4);
    memset(name + 40, 'b', 30);
    snprintf(line, sizeof line, "@rung {\"%s\": 1}", name);
    assert_int_equal(parse(line, strlen(line), &metrics, &step, why), REPORTLINE_INVALID);
    snprintf(expect, sizeof expect, "metric name '%.40s...' is longer than 64 bytes", name);
    assert_string_equal(why, expect);
}

/* Non-finite metrics come out as the shared spellings (common/nonfinite.h),
 * which read back as the values written. */
static void test_nonfinite_round_trip(void **state)
{
    (void)state;
    json_t *metrics;
    int64_t step;
    char why[WHY_SIZE];
    const char *line = "@rung {\"a\": NaN, \"b\": Infinity, \"c\": -Infinity, \"d\": 2}";
    assert_int_equal(parse(line, strlen(line), &metrics, &step, why), REPORTLINE_OK);
    double v;
    assert_true(rung_nonfinite_from_json(json_object_get(metrics, "a"), &v) && isnan(v));
    assert_true(rung_nonfinite_from_json(json_object_get(metrics, "b"), &v) && v == INFINITY);
    assert_true(rung_nonfinite_from_json(json_object_get(metrics, "c"), &v) && v == -INFINITY);
    assert_true(rung_nonfinite_from_json(json_object_get(metrics, "d"), &v) && v == 2);
    json_decref(metrics);
}

/* A line of exactly len bytes: a report padded with spaces inside the JSON. */
static char *padded_line(size_t len, const char *start)
{
    char *line = malloc(len);
    assert_non_null(line);
    size_t n = strlen(start);
    memcpy(line, start, n);
    memset(line + n, ' ', len - n - 1);
    line[len - 1] = '}';
    return line;
}

static void test_line_length(void **state)
{
    (void)state;
    json_t *metrics;
    int64_t step;
    char why[WHY_SIZE];

    char *line = padded_line(REPORTLINE_MAX, "@rung {\"x\": 1");
    assert_int_equal(parse(line, REPORTLINE_MAX, &metrics, &step, why), REPORTLINE_OK);
    json_decref(metrics);
    free(line);

    /* The '\r' does not count. */
    line = padded_line(REPORTLINE_MAX + 1, "@rung {\"x\": 1");
    line[REPORTLINE_MAX] = '\r';
    line[REPORTLINE_MAX - 1] = '}';
    assert_int_equal(parse(line, REPORTLINE_MAX + 1, &metrics, &step, why), REPORTLINE_OK);
    json_decref(metrics);
    free(line);

    line = padded_line(REPORTLINE_MAX + 1, "@rung {\"x\": 1");
    assert_int_equal(parse(line, REPORTLINE_MAX + 1, &metrics, &step, why), REPORTLINE_INVALID);
    assert_string_equal(why, "line is longer than 65536 bytes");
    assert_null(metrics);
    free(line);

    /* A long log line is still a log line, not a warning. */
    line = padded_line(10 * REPORTLINE_MAX, "progress: ");
    assert_int_equal(parse(line, 10 * REPORTLINE_MAX, &metrics, &step, why), REPORTLINE_NONE);
    free(line);
}

/* jansson bounds nesting, so a hostile line cannot exhaust the stack. */
static void test_deep_nesting(void **state)
{
    (void)state;
    json_t *metrics;
    int64_t step;
    char why[WHY_SIZE];
    size_t depth = 60000;
    char *line = malloc(16 + depth);
    assert_non_null(line);
    strcpy(line, "@rung {\"x\": ");
    size_t n = strlen(line);
    memset(line + n, '[', depth);
    assert_int_equal(parse(line, n + depth, &metrics, &step, why), REPORTLINE_INVALID);
    assert_non_null(strstr(why, "depth"));
    assert_null(metrics);
    free(line);
}

static void test_why_buffer(void **state)
{
    (void)state;
    ReportLine r;
    const char *bad = "@rung {\"step\": -1, \"x\": 1}";

    /* A short buffer is cut and still terminated. */
    char small[9];
    memset(small, 'Z', sizeof small);
    assert_int_equal(reportline_parse(bad, strlen(bad), 1, &r, small, 8), REPORTLINE_INVALID);
    assert_string_equal(small, "step mu");
    assert_int_equal(small[8], 'Z');

    /* No buffer at all. */
    assert_int_equal(reportline_parse(bad, strlen(bad), 1, &r, NULL, 0), REPORTLINE_INVALID);
    assert_null(r.metrics);
    const char *good = "@rung {\"x\": NaN}";
    assert_int_equal(reportline_parse(good, strlen(good), 1, &r, NULL, 0), REPORTLINE_OK);
    assert_int_equal(r.step, 1);
    reportline_clear(&r);

    /* The line need not be NUL-terminated: only len bytes are read. */
    char unterminated[] = {'@', 'r', 'u', 'n', 'g', ' ', '{', '"', 'x', '"', ':', '1', '}'};
    char *heap = malloc(sizeof unterminated);
    assert_non_null(heap);
    memcpy(heap, unterminated, sizeof unterminated);
    assert_int_equal(reportline_parse(heap, sizeof unterminated, 4, &r, NULL, 0), REPORTLINE_OK);
    assert_int_equal(r.step, 4);
    reportline_clear(&r);
    free(heap);

    assert_int_equal(reportline_parse(NULL, 0, 1, &r, NULL, 0), REPORTLINE_NONE);
    assert_null(r.metrics);
}

/* The metrics object shares nothing with the parser: it outlives further
 * calls and can be changed by the caller. */
static void test_ownership(void **state)
{
    (void)state;
    json_t *a;
    json_t *b;
    int64_t step;
    char why[WHY_SIZE];
    const char *line = "@rung {\"loss\": NaN, \"acc\": 0.5}";
    assert_int_equal(parse(line, strlen(line), &a, &step, why), REPORTLINE_OK);
    assert_int_equal(parse(line, strlen(line), &b, &step, why), REPORTLINE_OK);
    assert_true(a != b);
    assert_true(json_equal(a, b));
    assert_int_equal(json_object_set_new(a, "extra", json_integer(1)), 0);
    assert_false(json_equal(a, b));
    assert_string_equal(json_string_value(json_object_get(b, "loss")), "NaN");
    json_decref(a);
    json_decref(b);
}

/* The note a value got, or NULL. */
static const char *note_of(const ReportLine *r, const char *key)
{
    return json_string_value(json_object_get(r->notes, key));
}

/* Each value that is not a number gets one note for the trial's warnings,
 * but a boolean done, Ray Tune's word. */
static void test_info_notes(void **state)
{
    (void)state;
    ReportLine r;
    char why[WHY_SIZE];
    const char *line = "@rung {\"loss\": 0.3, \"phase\": \"warmup\", \"done\": true, "
                       "\"a\\u0001b\": null}";
    assert_int_equal(parse_all(line, strlen(line), &r, why), REPORTLINE_OK);
    assert_true(r.done);
    assert_int_equal(json_object_size(r.notes), 2);
    assert_string_equal(note_of(&r, "phase"), "metric 'phase' is not a number: kept as info");
    /* Control bytes in a name are shown as '?'. */
    assert_string_equal(note_of(&r, "a\001b"), "metric 'a?b' is not a number: kept as info");
    assert_null(note_of(&r, "done"));
    assert_null(note_of(&r, "loss"));
    reportline_clear(&r);
    assert_null(r.metrics);
    assert_false(r.done);

    /* done that is not a boolean is ordinary info, with a note. */
    line = "@rung {\"done\": \"yes\"}";
    assert_int_equal(parse_all(line, strlen(line), &r, why), REPORTLINE_OK);
    assert_false(r.done);
    assert_non_null(note_of(&r, "done"));
    reportline_clear(&r);
}

/* "@rung {"x": 1, "name": <value>}" with a string value of n bytes. */
static char *string_line(const char *name, size_t n)
{
    char *line = malloc(n + 64);
    assert_non_null(line);
    int k = sprintf(line, "@rung {\"x\": 1, \"%s\": \"", name);
    memset(line + k, 's', n);
    strcpy(line + k + n, "\"}");
    return line;
}

/* An info value of up to 1024 bytes of JSON is kept; a longer one is left
 * out, whole, with a note naming it, and the line's numbers stay. */
static void test_info_value_limit(void **state)
{
    (void)state;
    ReportLine r;
    char why[WHY_SIZE];
    char *line = string_line("s", REPORTLINE_INFO_VALUE_MAX - 2); /* with its quotes: 1024 */
    assert_int_equal(parse_all(line, strlen(line), &r, why), REPORTLINE_OK);
    assert_int_equal(json_string_length(json_object_get(r.info, "s")),
                     REPORTLINE_INFO_VALUE_MAX - 2);
    reportline_clear(&r);
    free(line);

    line = string_line("s", REPORTLINE_INFO_VALUE_MAX - 1);
    assert_int_equal(parse_all(line, strlen(line), &r, why), REPORTLINE_OK);
    assert_int_equal(json_object_size(r.metrics), 1);
    assert_int_equal(json_object_size(r.info), 0);
    assert_string_equal(note_of(&r, "s"), "metric 's' is not a number and its 1025 bytes of JSON "
                                          "are more than 1024: left out of info");
    reportline_clear(&r);
    free(line);
}

/* The line's info together stays within 4096 bytes: values are taken in
 * the line's order, and the one that would pass the bound is left out
 * (a smaller one after it may still fit). */
static void test_info_line_limit(void **state)
{
    (void)state;
    ReportLine r;
    char why[WHY_SIZE];
    size_t v = 1000; /* bytes of each string; 1002 with its quotes */
    char *line = malloc(8 * v);
    assert_non_null(line);
    int n = sprintf(line, "@rung {\"x\": 1");
    for (int i = 0; i < 5; i++) {
        n += sprintf(line + n, ", \"i%d\": \"", i);
        memset(line + n, 'a', v);
        n += (int)v;
        line[n++] = '"';
    }
    n += sprintf(line + n, ", \"tiny\": true}");
    assert_int_equal(parse_all(line, (size_t)n, &r, why), REPORTLINE_OK);
    /* 4 x 1002 = 4008 bytes; a fifth would pass 4096; "true" still fits. */
    assert_int_equal(json_object_size(r.info), 5);
    assert_null(json_object_get(r.info, "i4"));
    assert_non_null(json_object_get(r.info, "tiny"));
    assert_string_equal(note_of(&r, "i4"), "metric 'i4' is not a number and the line's info "
                                           "would pass 4096 bytes: left out of info");
    assert_string_equal(note_of(&r, "i3"), "metric 'i3' is not a number: kept as info");
    reportline_clear(&r);
    free(line);
}

/* Values rungd's report body could not carry are left out of info: a
 * string with a NUL, nesting deeper than 16. A line whose every value is
 * left out is still a report, with nothing but notes. */
static void test_info_left_out(void **state)
{
    (void)state;
    ReportLine r;
    char why[WHY_SIZE];
    const char *line = "@rung {\"s\": \"a\\u0000b\"}";
    assert_int_equal(parse_all(line, strlen(line), &r, why), REPORTLINE_OK);
    assert_int_equal(json_object_size(r.metrics) + json_object_size(r.info), 0);
    assert_string_equal(note_of(&r, "s"), "metric 's' is not a number and it holds a NUL "
                                          "character: left out of info");
    reportline_clear(&r);

    char deep[128];
    for (int depth = 16; depth <= 17; depth++) {
        int n = sprintf(deep, "@rung {\"x\": 1, \"d\": ");
        for (int i = 0; i < depth; i++)
            deep[n++] = '[';
        for (int i = 0; i < depth; i++)
            deep[n++] = ']';
        strcpy(deep + n, "}");
        assert_int_equal(parse_all(deep, strlen(deep), &r, why), REPORTLINE_OK);
        if (depth == REPORTLINE_INFO_DEPTH) {
            assert_non_null(json_object_get(r.info, "d"));
        } else {
            assert_null(json_object_get(r.info, "d"));
            assert_string_equal(note_of(&r, "d"), "metric 'd' is not a number and it nests "
                                                  "deeper than 16: left out of info");
        }
        reportline_clear(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_lines),
        cmocka_unit_test(test_none_lines),
        cmocka_unit_test(test_invalid_lines),
        cmocka_unit_test(test_metric_limits),
        cmocka_unit_test(test_line_length),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_why_buffer),
        cmocka_unit_test(test_ownership),
        cmocka_unit_test(test_long_name_cut_on_character),
        cmocka_unit_test(test_nonfinite_round_trip),
        cmocka_unit_test(test_info_notes),
        cmocka_unit_test(test_info_value_limit),
        cmocka_unit_test(test_info_line_limit),
        cmocka_unit_test(test_info_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
