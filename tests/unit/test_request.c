/* Unit tests of server/request.c (the request body parsers), of the JSON
 * depth bound and UTF-8 cuts of common/jsonv.c, and of what server/spec.c
 * refuses and reloads: each parser accepts valid bodies and refuses each
 * kind of invalid one naming the right field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"
#include "request.h"
#include "spec.h"

/* rung-worker checks and cuts what it sends with bounds of its own: the
 * same as the server's. */
#include "../../worker/labels.h"
#include "../../worker/reportline.h"
#include "../../worker/warnings.h"
_Static_assert(LABELS_MAX == REQUEST_MAX_LABELS, "worker/labels.h");
_Static_assert(LABELS_KEY_MAX == SPEC_MAX_LABEL_KEY, "worker/labels.h");
_Static_assert(LABELS_VALUE_MAX == SPEC_MAX_LABEL_VALUE, "worker/labels.h");
_Static_assert(WARNINGS_LAST == REQUEST_MAX_WARN_LAST, "worker/warnings.h");
_Static_assert(WARNINGS_LINE_MAX == REQUEST_MAX_WARN_LINE, "worker/warnings.h");
_Static_assert(WARNINGS_WHY_MAX == REQUEST_MAX_WARN_WHY, "worker/warnings.h");
_Static_assert(WARNINGS_COUNT_MAX == REQUEST_MAX_STEP, "worker/warnings.h");
/* What a report line's info may hold is what a report body takes. */
_Static_assert(REPORTLINE_INFO_VALUE_MAX == REQUEST_MAX_INFO_VALUE, "worker/reportline.h");
_Static_assert(REPORTLINE_INFO_MAX == REQUEST_MAX_INFO, "worker/reportline.h");
_Static_assert(WARNINGS_NAME_MAX == REQUEST_MAX_INFO_NAME, "worker/warnings.h");

#define A RUNG_E_INVALID_ARGUMENT
#define TOKEN "0123456789abcdef0123456789abcdef"

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (j == NULL)
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    return j;
}

/* n nested arrays around 1: depth n. Caller frees. */
static char *nested_arrays(int n)
{
    char *s = malloc((size_t)(2 * n + 2));
    assert_non_null(s);
    memset(s, '[', (size_t)n);
    s[n] = '1';
    memset(s + n + 1, ']', (size_t)n);
    s[2 * n + 1] = '\0';
    return s;
}

/* printf into a new string. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    assert_true(vasprintf(&s, f, ap) >= 0);
    va_end(ap);
    return s;
}

/* The field and message of a refusal, and that the message names it first. */
static void assert_refused(int rc, const RungError *err, int code, const char *field)
{
    assert_int_equal(rc, code);
    assert_int_equal(err->code, code);
    assert_string_equal(err->field, field);
    size_t head = strcspn(field, ".[");
    if (field[0] == '\0')
        assert_memory_equal(err->message, "body", 4);
    else
        assert_memory_equal(err->message, field, head);
}

/* ---- jsonv: depth and UTF-8 cuts ---- */

static void test_depth_bound(void **state)
{
    (void)state;
    RungError err;
    for (int n = 0; n <= 34; n++) {
        char *text = nested_arrays(n);
        json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        rung_error_clear(&err);
        int rc = jsonv_check_depth(v, JSONV_MAX_DEPTH, "x", A, &err);
        if (n <= JSONV_MAX_DEPTH) {
            assert_int_equal(rc, 0);
        } else {
            assert_int_equal(rc, A);
            /* The first value too deep: the array at depth 33. */
            char want[RUNG_FIELD_MAX] = "x";
            for (int k = 0; k < JSONV_MAX_DEPTH; k++)
                strcat(want, "[0]");
            assert_string_equal(err.field, want);
            assert_non_null(strstr(err.message, ": nested deeper than 32 levels"));
        }
        json_decref(v);
        free(text);
    }
    /* Objects count too, and the path names keys; the first too deep in
     * document order is named. */
    json_t *v = parse("{\"a\": 1, \"b\": {\"c\": [{\"d\": []}, {\"e\": {}}]}}");
    assert_int_equal(jsonv_check_depth(v, 5, "", A, &err), 0);
    assert_int_equal(jsonv_check_depth(v, 4, "", A, &err), A);
    assert_string_equal(err.field, "b.c[0].d");
    assert_int_equal(jsonv_check_depth(v, 3, "", A, &err), A);
    assert_string_equal(err.field, "b.c[0]");
    assert_int_equal(jsonv_check_depth(v, 3, "body", A, &err), A);
    assert_string_equal(err.field, "body.b.c[0]");
    assert_int_equal(jsonv_check_depth(v, 0, "", A, &err), A);
    assert_string_equal(err.field, "");
    assert_string_equal(err.message, "body: nested deeper than 0 levels");
    json_decref(v);
    /* Scalars have no depth. */
    v = json_integer(3);
    assert_int_equal(jsonv_check_depth(v, 0, "", A, &err), 0);
    json_decref(v);
}

static void test_utf8_cuts(void **state)
{
    (void)state;
    const char *s = "a\xce\xb4\xe2\x82\xac\xf0\x9f\x98\x80"; /* a δ € 😀: 1+2+3+4 bytes */
    size_t len = strlen(s);
    size_t want[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10};
    for (size_t max = 0; max <= len; max++)
        assert_int_equal(jsonv_utf8_cut(s, len, max), want[max]);
    assert_int_equal(jsonv_utf8_cut(s, len, 100), len);

    /* A path that does not fit is cut on a character, and nothing follows. */
    char buf[8];
    jsonv_path(buf, sizeof buf, "ab", "\xe2\x82\xac\xe2\x82\xac");
    assert_string_equal(buf, "ab.\xe2\x82\xac"); /* 6 bytes: a second € would need 9 */
    char field[RUNG_FIELD_MAX];
    char *key = malloc(301);
    assert_non_null(key);
    for (int i = 0; i < 150; i++)
        memcpy(key + 2 * i, "\xce\xb4", 2);
    key[300] = '\0';
    jsonv_path(field, sizeof field, "metrics", key);
    assert_int_equal(strlen(field), strlen("metrics.") + 182); /* 191 bytes, minus half a δ */
    free(key);
}

/* ---- report ---- */

static void test_report(void **state)
{
    (void)state;
    json_t *b = parse("{\"lease_token\": \"" TOKEN "\", \"step\": 3,"
                      " \"metrics\": {\"loss\": 0.25, \"acc\": \"NaN\", \"x\": \"-Infinity\"}}");
    ReportRequest r;
    RungError err;
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    assert_string_equal(r.lease_token, TOKEN);
    assert_int_equal(r.step, 3);
    assert_ptr_equal(r.metrics, json_object_get(b, "metrics"));
    json_decref(b);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"step\": 1, \"metrics\": {}}", "lease_token"},
        {"{\"lease_token\": null, \"step\": 1, \"metrics\": {}}", "lease_token"},
        {"{\"lease_token\": \"\", \"step\": 1, \"metrics\": {}}", "lease_token"},
        {"{\"lease_token\": 7, \"step\": 1, \"metrics\": {}}", "lease_token"},
        {"{\"lease_token\": \"t\", \"metrics\": {}}", "step"},
        {"{\"lease_token\": \"t\", \"step\": -1, \"metrics\": {}}", "step"},
        {"{\"lease_token\": \"t\", \"step\": 1.5, \"metrics\": {}}", "step"},
        {"{\"lease_token\": \"t\", \"step\": 9007199254740993, \"metrics\": {}}", "step"},
        {"{\"lease_token\": \"t\", \"step\": 1}", "metrics"},
        {"{\"lease_token\": \"t\", \"step\": 1, \"metrics\": [1]}", "metrics"},
        {"{\"lease_token\": \"t\", \"step\": 1, \"metrics\": {\"loss\": \"nan\"}}", "metrics.loss"},
        {"{\"lease_token\": \"t\", \"step\": 1, \"metrics\": {\"loss\": true}}", "metrics.loss"},
        {"{\"lease_token\": \"t\", \"step\": 1, \"metrics\": {}, \"extra\": 1}", "extra"},
        {"{\"lease_token\": \"t\", \"step\": 1, \"metrics\": {}, \"\": 1}", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_report_parse(b, &r, &err), &err, A, bad[i].field);
        assert_null(r.lease_token);
        json_decref(b);
    }

    /* A token of 64 bytes passes, 65 do not; 64 metrics pass, 65 do not. */
    char token[66];
    memset(token, 'a', 65);
    token[65] = '\0';
    b = json_pack("{s:s, s:i, s:{}}", "lease_token", token, "step", 1, "metrics");
    assert_refused(request_report_parse(b, &r, &err), &err, A, "lease_token");
    json_object_set_new(b, "lease_token", json_stringn(token, 64));
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    json_t *m = json_object_get(b, "metrics");
    for (int i = 0; i < CORE_MAX_METRICS; i++) {
        char key[16];
        snprintf(key, sizeof key, "m%d", i);
        json_object_set_new(m, key, json_real(i));
    }
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    json_object_set_new(m, "one_more", json_real(1));
    assert_refused(request_report_parse(b, &r, &err), &err, A, "metrics");
    json_decref(b);

    /* No body, or no object: bad_json, no field. */
    assert_refused(request_report_parse(NULL, &r, &err), &err, RUNG_E_BAD_JSON, "");
    b = parse("[1]");
    assert_refused(request_report_parse(b, &r, &err), &err, RUNG_E_BAD_JSON, "");
    json_decref(b);
}


/* A report's info (request.h): values that are not numbers, bounded like a
 * report line's (worker/reportline.h); errors name the key. */
static void test_report_info(void **state)
{
    (void)state;
    ReportRequest r;
    RungError err;
    json_t *b = parse("{\"lease_token\": \"" TOKEN "\", \"step\": 3, \"metrics\": {\"loss\": 0.25},"
                      " \"info\": {\"phase\": \"warmup\", \"done\": true, \"n\": null,"
                      " \"a\": [1, \"NaN\"], \"o\": {\"k\": 1}}}");
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    assert_ptr_equal(r.info, json_object_get(b, "info"));
    json_decref(b);
    /* null and {} are no info; metrics may be empty beside info. */
    b = parse("{\"lease_token\": \"t\", \"step\": 1, \"metrics\": {}, \"info\": null}");
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    assert_null(r.info);
    json_object_set_new(b, "info", json_object());
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    assert_null(r.info);
    json_object_set_new(b, "info", json_pack("{s:s}", "phase", "x"));
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    assert_non_null(r.info);
    json_decref(b);

    static const struct {
        const char *info, *field;
    } bad[] = {
        {"[1]", "info"},
        {"\"phase\"", "info"},
        {"{\"x\": 1}", "info.x"},
        {"{\"x\": 1.5}", "info.x"},
        {"{\"loss\": \"a\"}", "info.loss"}, /* also a metric */
        {"{\"\": \"a\"}", "info."},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"lease_token\": \"t\", \"step\": 1, \"metrics\": {\"loss\": 1}, \"info\": %s}",
                 bad[i].info);
        b = parse(text);
        rung_error_clear(&err);
        assert_refused(request_report_parse(b, &r, &err), &err, A, bad[i].field);
        assert_null(r.info);
        json_decref(b);
    }

    /* A name of 64 bytes passes, 65 do not; a value of 1024 bytes of JSON
     * passes, 1025 do not; 4096 in all pass, 4097 do not. */
    b = parse("{\"lease_token\": \"t\", \"step\": 1, \"metrics\": {}, \"info\": {}}");
    json_t *info = json_object_get(b, "info");
    char name[REQUEST_MAX_INFO_NAME + 2];
    memset(name, 'n', sizeof name - 1);
    name[REQUEST_MAX_INFO_NAME] = '\0';
    json_object_set_new(info, name, json_true());
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    json_object_clear(info);
    name[REQUEST_MAX_INFO_NAME] = 'n';
    name[REQUEST_MAX_INFO_NAME + 1] = '\0';
    json_object_set_new(info, name, json_true());
    char field[REQUEST_MAX_INFO_NAME + 8];
    snprintf(field, sizeof field, "info.%s", name);
    assert_refused(request_report_parse(b, &r, &err), &err, A, field);
    json_object_clear(info);
    char value[REQUEST_MAX_INFO_VALUE];
    memset(value, 'v', sizeof value);
    json_object_set_new(info, "s", json_stringn(value, REQUEST_MAX_INFO_VALUE - 2));
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    json_object_set_new(info, "s", json_stringn(value, REQUEST_MAX_INFO_VALUE - 1));
    assert_refused(request_report_parse(b, &r, &err), &err, A, "info.s");
    json_object_clear(info);
    for (int i = 0; i < 4; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        json_object_set_new(info, key, json_stringn(value, REQUEST_MAX_INFO_VALUE - 2));
    }
    assert_int_equal(request_report_parse(b, &r, &err), 0);
    json_object_set_new(info, "last", json_true());
    assert_refused(request_report_parse(b, &r, &err), &err, A, "info.last");
    json_decref(b);
}

/* ---- finish ---- */

static void test_finish(void **state)
{
    (void)state;
    FinishRequest f;
    RungError err;
    json_t *b = parse("{\"lease_token\": \"t\", \"status\": \"completed\"}");
    assert_int_equal(request_finish_parse(b, &f, &err), 0);
    assert_true(f.completed);
    assert_null(f.error);
    assert_null(f.log);
    json_decref(b);
    b = parse("{\"lease_token\": \"t\", \"status\": \"failed\", \"error\": \"exit 1\","
              " \"log\": \"a\\nb\\n\"}");
    assert_int_equal(request_finish_parse(b, &f, &err), 0);
    assert_false(f.completed);
    assert_string_equal(f.error, "exit 1");
    assert_string_equal(f.log, "a\nb\n");
    json_decref(b);
    b = parse("{\"lease_token\": \"t\", \"status\": \"failed\", \"error\": null, \"log\": null}");
    assert_int_equal(request_finish_parse(b, &f, &err), 0);
    assert_null(f.error);
    assert_null(f.log);
    json_decref(b);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"status\": \"completed\"}", "lease_token"},
        {"{\"lease_token\": \"t\"}", "status"},
        {"{\"lease_token\": \"t\", \"status\": \"done\"}", "status"},
        {"{\"lease_token\": \"t\", \"status\": \"completed-and-then-some\"}", "status"},
        {"{\"lease_token\": \"t\", \"status\": null}", "status"},
        {"{\"lease_token\": \"t\", \"status\": \"failed\", \"error\": 1}", "error"},
        {"{\"lease_token\": \"t\", \"status\": \"failed\", \"log\": [\"x\"]}", "log"},
        {"{\"lease_token\": \"t\", \"status\": \"failed\", \"exit_code\": 1}", "exit_code"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_finish_parse(b, &f, &err), &err, A, bad[i].field);
        json_decref(b);
    }
}

/* An error longer than CORE_MAX_ERROR keeps its head of whole characters. */
static void test_finish_error_cut(void **state)
{
    (void)state;
    for (size_t pad = 0; pad < 4; pad++) {
        /* pad ASCII bytes, then 4-byte characters across the limit. */
        size_t len = CORE_MAX_ERROR + 8;
        char *text = malloc(len + 1);
        assert_non_null(text);
        memset(text, 'x', pad);
        for (size_t i = pad; i + 4 <= len; i += 4)
            memcpy(text + i, "\xf0\x9f\x98\x80", 4);
        size_t used = pad + (len - pad) / 4 * 4;
        text[used] = '\0';
        json_t *b = json_pack("{s:s, s:s, s:s}", "lease_token", "t", "status", "failed", "error",
                              text);
        assert_non_null(b);
        FinishRequest f;
        RungError err;
        assert_int_equal(request_finish_parse(b, &f, &err), 0);
        size_t want = pad + (CORE_MAX_ERROR - pad) / 4 * 4;
        assert_int_equal(strlen(f.error), want);
        assert_memory_equal(f.error, text, want);
        assert_ptr_equal(f.error, json_string_value(json_object_get(b, "error")));
        json_decref(b);
        free(text);
    }
    /* Exactly CORE_MAX_ERROR bytes: kept whole. */
    char *text = malloc(CORE_MAX_ERROR + 1);
    assert_non_null(text);
    memset(text, 'e', CORE_MAX_ERROR);
    text[CORE_MAX_ERROR] = '\0';
    json_t *b = json_pack("{s:s, s:s, s:s}", "lease_token", "t", "status", "failed", "error", text);
    FinishRequest f;
    RungError err;
    assert_int_equal(request_finish_parse(b, &f, &err), 0);
    assert_int_equal(strlen(f.error), CORE_MAX_ERROR);
    json_decref(b);
    free(text);
}

/* ---- register ---- */

static void test_register(void **state)
{
    (void)state;
    RegisterRequest r;
    RungError err;
    json_t *b = parse("{\"name\": \"gpu-box-1\", \"hostname\": \"box.lan\", \"cpus\": 16,"
                      " \"gpus\": [{\"index\": 0, \"name\": \"H100\"}, {\"index\": 1}]}");
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    assert_string_equal(r.name, "gpu-box-1");
    assert_string_equal(r.hostname, "box.lan");
    assert_string_equal(r.label, "gpu-box-1");
    assert_int_equal(r.cpus, 16);
    assert_ptr_equal(r.gpus, json_object_get(b, "gpus"));
    json_decref(b);

    b = parse("{\"hostname\": \"box.lan\"}");
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    assert_null(r.name);
    assert_string_equal(r.label, "box.lan");
    assert_null(r.gpus);
    assert_int_equal(r.cpus, 0);
    json_decref(b);
    b = parse("{\"gpus\": null, \"cpus\": null}");
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    assert_string_equal(r.hostname, "");
    assert_string_equal(r.label, "worker");
    assert_null(r.gpus);
    json_decref(b);

    static const struct {
        const char *text, *field, *message;
    } bad[] = {
        {"{\"name\": null}", "name", "name: must be a string"},
        {"{\"name\": \"w\", \"hostname\": null}", "hostname", "hostname: must be a string"},
        {"{\"name\": \"\"}", "name", NULL},
        {"{\"name\": 3}", "name", NULL},
        {"{\"cpus\": 4097}", "cpus", NULL},
        {"{\"cpus\": -1}", "cpus", NULL},
        {"{\"gpus\": {\"index\": 0}}", "gpus", NULL},
        {"{\"gpus\": [{\"index\": 0}, 1]}", "gpus[1]", "gpus: each GPU must be an object"},
        {"{\"slots\": 2}", "slots", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_register_parse(b, &r, &err), &err, A, bad[i].field);
        if (bad[i].message)
            assert_string_equal(err.message, bad[i].message);
        assert_null(r.name);
        json_decref(b);
    }

    /* 256 bytes of name pass, 257 do not; 64 GPUs pass, 65 do not. */
    char name[258];
    memset(name, 'n', 257);
    name[257] = '\0';
    b = json_pack("{s:s, s:[]}", "name", name, "gpus");
    assert_refused(request_register_parse(b, &r, &err), &err, A, "name");
    json_object_set_new(b, "name", json_stringn(name, 256));
    json_t *gpus = json_object_get(b, "gpus");
    for (int i = 0; i < REQUEST_MAX_GPUS_JSON; i++)
        json_array_append_new(gpus, json_pack("{s:i}", "index", i));
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    json_array_append_new(gpus, json_pack("{s:i}", "index", 64));
    assert_refused(request_register_parse(b, &r, &err), &err, A, "gpus");
    assert_string_equal(err.message, "gpus: must be an array of at most 64 GPU objects");
    json_decref(b);
}

/* ---- lease ---- */

static void test_lease(void **state)
{
    (void)state;
    LeaseRequest l;
    RungError err;
    json_t *b = parse("{\"gpus\": [1, 0], \"cpus\": 4, \"wait_s\": 10}");
    assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
    assert_int_equal(l.offer.n_gpus, 2);
    assert_int_equal(l.offer.gpus[0], 1);
    assert_int_equal(l.offer.gpus[1], 0);
    assert_int_equal(l.offer.cpus, 4);
    assert_true(l.wait_s == 10);
    json_decref(b);
    b = parse("{\"wait_s\": 3600}");
    assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
    assert_int_equal(l.offer.cpus, 8); /* the registered cpus */
    assert_int_equal(l.offer.n_gpus, 0);
    assert_true(l.wait_s == REQUEST_LONG_POLL_MAX_S);
    json_decref(b);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"wait_s\": -1}", "wait_s"},     {"{\"wait_s\": \"5\"}", "wait_s"},
        {"{\"cpus\": 4097}", "cpus"},       {"{\"gpus\": 0}", "gpus"},
        {"{\"gpus\": [0, -1]}", "gpus[1]"}, {"{\"gpus\": [0, 1.0]}", "gpus[1]"},
        {"{\"gpus\": [\"0\"]}", "gpus[0]"}, {"{\"gpu\": [0]}", "gpu"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_lease_parse(b, 8, &l, &err), &err, A, bad[i].field);
        json_decref(b);
    }
    b = json_pack("{s:[]}", "gpus");
    for (int i = 0; i < CORE_MAX_LEASE_GPUS; i++)
        json_array_append_new(json_object_get(b, "gpus"), json_integer(i));
    assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
    json_array_append_new(json_object_get(b, "gpus"), json_integer(64));
    assert_refused(request_lease_parse(b, 8, &l, &err), &err, A, "gpus");
    json_decref(b);
}

/* advertise_addr and port (docs/api.md, "Gangs"): both or neither; the
 * address only of the characters a host name or IP address has. */
static void test_lease_gang_fields(void **state)
{
    (void)state;
    LeaseRequest l;
    RungError err;
    json_t *b = parse("{\"advertise_addr\": \"10.0.0.3\", \"port\": 29500}");
    assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
    assert_string_equal(l.offer.advertise_addr, "10.0.0.3");
    assert_int_equal(l.offer.port, 29500);
    json_decref(b);
    b = parse("{}");
    assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
    assert_null(l.offer.advertise_addr); /* an older worker: never in a gang */
    assert_int_equal(l.offer.port, 0);
    json_decref(b);
    static const char *const good[] = {"gpu-box-1.lan", "fe80::1%eth0", "::1", "a_b", "1", "x-"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        b = json_pack("{s:s, s:i}", "advertise_addr", good[i], "port", 1);
        assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
        json_decref(b);
    }
    b = json_pack("{s:s, s:i}", "advertise_addr", "h", "port", 65535);
    assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
    json_decref(b);
    char longest[CORE_MAX_ADDR + 2];
    memset(longest, 'a', sizeof longest - 1);
    longest[CORE_MAX_ADDR] = '\0';
    b = json_pack("{s:s, s:i}", "advertise_addr", longest, "port", 80);
    assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
    json_decref(b);
    longest[CORE_MAX_ADDR] = 'a';
    longest[CORE_MAX_ADDR + 1] = '\0';
    b = json_pack("{s:s, s:i}", "advertise_addr", longest, "port", 80);
    assert_refused(request_lease_parse(b, 8, &l, &err), &err, A, "advertise_addr");
    json_decref(b);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"advertise_addr\": \"h\"}", "port"},
        {"{\"port\": 29500}", "advertise_addr"},
        {"{\"advertise_addr\": \"\", \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": null, \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": 7, \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": \"a b\", \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": \"-x\", \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": \"h;rm\", \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": \"[::1]\", \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": \"h\\n\", \"port\": 1}", "advertise_addr"},
        {"{\"advertise_addr\": \"h\", \"port\": 0}", "port"},
        {"{\"advertise_addr\": \"h\", \"port\": 65536}", "port"},
        {"{\"advertise_addr\": \"h\", \"port\": \"80\"}", "port"},
        {"{\"advertise_addr\": \"h\", \"port\": 1.5}", "port"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_lease_parse(b, 8, &l, &err), &err, A, bad[i].field);
        assert_null(l.offer.advertise_addr); /* nothing half-parsed is left */
        json_decref(b);
    }
}

static void test_lease_gpus_registered(void **state)
{
    (void)state;
    /* The worker registered GPUs 0, 1 and 3 (and an object without index). */
    json_t *registered = parse(
        "[{\"index\": 0}, {\"index\": 1, \"name\": \"H100\"}, {\"name\": \"?\"},"
        " {\"index\": 3}, {\"index\": \"2\"}]");
    static const struct {
        const char *offer, *field, *message;
    } cases[] = {
        {"[]", NULL, NULL},
        {"[0, 1, 3]", NULL, NULL},
        {"[3, 0]", NULL, NULL},
        {"[0, 0]", "gpus[1]", "gpus[1]: GPU 0 is offered twice"},
        {"[1, 3, 1]", "gpus[2]", "gpus[2]: GPU 1 is offered twice"},
        {"[2]", "gpus[0]", "gpus[0]: GPU 2 is not one this worker registered"},
        {"[0, 7]", "gpus[1]", "gpus[1]: GPU 7 is not one this worker registered"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = fmt("{\"gpus\": %s}", cases[i].offer);
        json_t *b = parse(text);
        LeaseRequest l;
        RungError err;
        rung_error_clear(&err);
        assert_int_equal(request_lease_parse(b, 1, &l, &err), 0);
        int rc = request_lease_check_gpus(&l.offer, registered, &err);
        if (cases[i].field == NULL) {
            assert_int_equal(rc, 0);
        } else {
            assert_refused(rc, &err, A, cases[i].field);
            assert_string_equal(err.message, cases[i].message);
        }
        json_decref(b);
        free(text);
    }
    /* A worker that registered no GPU can offer none. */
    LeaseOffer o = {.gpus = {0}, .n_gpus = 1, .cpus = 1};
    RungError err;
    assert_refused(request_lease_check_gpus(&o, NULL, &err), &err, A, "gpus[0]");
    json_t *none = json_array();
    assert_refused(request_lease_check_gpus(&o, none, &err), &err, A, "gpus[0]");
    o.n_gpus = 0;
    assert_int_equal(request_lease_check_gpus(&o, none, &err), 0);
    json_decref(none);
    json_decref(registered);
}

/* ---- heartbeat ---- */

static void test_heartbeat(void **state)
{
    (void)state;
    static HeartbeatRequest h;
    RungError err;
    json_t *b = parse("{\"trials\": [17, 18], \"gpus\": [{\"index\": 0, \"util\": 0.5}],"
                      " \"logs\": {\"17\": \"epoch 1\\n\", \"0018\": \"\"}}");
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    assert_int_equal(h.n_trials, 2);
    assert_int_equal(h.trials[0], 17);
    assert_int_equal(h.trials[1], 18);
    assert_ptr_equal(h.gpus, json_object_get(b, "gpus"));
    void *iter = NULL;
    int64_t id;
    const char *text;
    assert_true(request_heartbeat_log(&h, &iter, &id, &text));
    assert_int_equal(id, 17);
    assert_string_equal(text, "epoch 1\n");
    assert_true(request_heartbeat_log(&h, &iter, &id, &text));
    assert_int_equal(id, 18);
    assert_string_equal(text, "");
    assert_false(request_heartbeat_log(&h, &iter, &id, &text));
    json_decref(b);

    b = parse("{\"trials\": null, \"gpus\": null, \"logs\": null}");
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    assert_int_equal(h.n_trials, 0);
    assert_null(h.gpus);
    iter = NULL;
    assert_false(request_heartbeat_log(&h, &iter, &id, &text));
    json_decref(b);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"trials\": 17}", "trials"},
        {"{\"trials\": [17, \"18\"]}", "trials[1]"},
        {"{\"trials\": [17, 1.0]}", "trials[1]"},
        {"{\"gpus\": {}}", "gpus"},
        {"{\"logs\": [\"x\"]}", "logs"},
        {"{\"logs\": {\"17\": 1}}", "logs.17"},
        {"{\"logs\": {\"17a\": \"x\"}}", "logs.17a"},
        {"{\"logs\": {\"-1\": \"x\"}}", "logs.-1"},
        {"{\"logs\": {\"+1\": \"x\"}}", "logs.+1"},
        {"{\"logs\": {\" 1\": \"x\"}}", "logs. 1"},
        {"{\"logs\": {\"\": \"x\"}}", "logs."},
        {"{\"logs\": {\"9223372036854775808\": \"x\"}}", "logs.9223372036854775808"},
        {"{\"status\": \"ok\"}", "status"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_heartbeat_parse(b, &h, &err), &err, A, bad[i].field);
        assert_int_equal(h.n_trials, 0);
        json_decref(b);
    }

    /* A long key is named by its head of at most 40 bytes, whole characters. */
    b = parse("{\"logs\": {\"1\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4"
              "\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4"
              "\xce\xb4\xce\xb4\xce\xb4\xce\xb4\": \"x\"}}");
    assert_refused(request_heartbeat_parse(b, &h, &err), &err, A,
                   "logs.1\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4"
                   "\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4\xce\xb4"
                   "\xce\xb4");
    json_decref(b);

    /* 1024 ids pass, 1025 do not. */
    b = json_pack("{s:[]}", "trials");
    for (int i = 0; i < REQUEST_MAX_TRIAL_IDS; i++)
        json_array_append_new(json_object_get(b, "trials"), json_integer(i));
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    assert_int_equal(h.n_trials, REQUEST_MAX_TRIAL_IDS);
    json_array_append_new(json_object_get(b, "trials"), json_integer(1));
    assert_refused(request_heartbeat_parse(b, &h, &err), &err, A, "trials");
    json_decref(b);
}

/* ---- spare GPUs: finish "preempted", the heartbeat's GPU states and hours ---- */

static void test_finish_preempted(void **state)
{
    (void)state;
    FinishRequest f;
    RungError err;
    json_t *b = parse("{\"lease_token\": \"t\", \"status\": \"preempted\"}");
    assert_int_equal(request_finish_parse(b, &f, &err), 0);
    assert_true(f.preempted);
    assert_false(f.completed);
    json_decref(b);
    b = parse("{\"lease_token\": \"t\", \"status\": \"failed\"}");
    assert_int_equal(request_finish_parse(b, &f, &err), 0);
    assert_false(f.preempted);
    json_decref(b);
    b = parse("{\"lease_token\": \"t\", \"status\": \"preempt\"}");
    rung_error_clear(&err);
    assert_refused(request_finish_parse(b, &f, &err), &err, A, "status");
    assert_non_null(strstr(err.message, "completed, failed or preempted"));
    json_decref(b);
}

static void test_heartbeat_spare(void **state)
{
    (void)state;
    static HeartbeatRequest h;
    RungError err;
    json_t *b = parse(
        "{\"trials\": [17], \"gpus\": [{\"index\": 0, \"util\": 0.97, \"memory_used_mb\": 40211,"
        " \"memory_total_mb\": 81559, \"state\": \"trial\", \"trial_id\": 17,"
        " \"foreign_mb\": 0, \"foreign_util\": 0}, {\"index\": 1, \"state\": \"busy\","
        " \"foreign_mb\": 2048, \"foreign_util\": 0.4, \"trial_id\": null},"
        " {\"index\": 2, \"state\": \"waiting\"}, {\"index\": 3, \"state\": \"spare\"}],"
        " \"hours\": \"Mon-Fri 19:00-07:00,Sat-Sun\","
        " \"next_lease_at\": \"2026-11-23T18:00:00.000Z\"}");
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    json_decref(b);
    b = parse("{\"hours\": null, \"next_lease_at\": null, \"gpus\": [{\"index\": 1023}]}");
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    json_decref(b);
    /* A null fraction is no fraction, every time (it was compared with
     * whatever the stack held: the fuzzer saw two answers to one body). */
    for (int i = 0; i < 3; i++) {
        b = parse("{\"gpus\": [{\"index\": 0, \"util\": null, \"foreign_util\": null}]}");
        assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
        json_decref(b);
    }
    static const char *const times[] = {"2026-11-23T18:00:00Z", "2026-11-23T19:00:00+01:00",
                                        "2026-11-23T18:00:00.123456789-05:30"};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        b = json_pack("{s:s}", "next_lease_at", times[i]);
        assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
        json_decref(b);
    }

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"gpus\": [1]}", "gpus[0]"},
        {"{\"gpus\": [{}]}", "gpus[0].index"},
        {"{\"gpus\": [{\"index\": -1}]}", "gpus[0].index"},
        {"{\"gpus\": [{\"index\": 1024}]}", "gpus[0].index"},
        {"{\"gpus\": [{\"index\": 0}, {\"index\": 1, \"temp\": 50}]}", "gpus[1].temp"},
        {"{\"gpus\": [{\"index\": 0, \"util\": 97}]}", "gpus[0].util"},
        {"{\"gpus\": [{\"index\": 0, \"util\": \"x\"}]}", "gpus[0].util"},
        {"{\"gpus\": [{\"index\": 0, \"memory_used_mb\": -1}]}", "gpus[0].memory_used_mb"},
        {"{\"gpus\": [{\"index\": 0, \"state\": \"idle\"}]}", "gpus[0].state"},
        {"{\"gpus\": [{\"index\": 0, \"state\": null}]}", "gpus[0].state"},
        {"{\"gpus\": [{\"index\": 0, \"state\": \"busy\", \"trial_id\": 3}]}", "gpus[0].trial_id"},
        {"{\"gpus\": [{\"index\": 0, \"trial_id\": 3}]}", "gpus[0].trial_id"},
        {"{\"gpus\": [{\"index\": 0, \"state\": \"trial\", \"trial_id\": 0}]}", "gpus[0].trial_id"},
        {"{\"gpus\": [{\"index\": 0, \"foreign_mb\": 1.5}]}", "gpus[0].foreign_mb"},
        {"{\"gpus\": [{\"index\": 0, \"foreign_util\": 1.01}]}", "gpus[0].foreign_util"},
        {"{\"gpus\": [{\"index\": 0, \"foreign_util\": -0.1}]}", "gpus[0].foreign_util"},
        {"{\"hours\": \"\"}", "hours"},
        {"{\"hours\": 7}", "hours"},
        {"{\"next_lease_at\": \"tomorrow\"}", "next_lease_at"},
        {"{\"next_lease_at\": \"2026-11-23 18:00:00Z\"}", "next_lease_at"},
        {"{\"next_lease_at\": \"2026-11-23T18:00:00\"}", "next_lease_at"},
        {"{\"next_lease_at\": \"2026-11-23T18:00:00.Z\"}", "next_lease_at"},
        {"{\"next_lease_at\": \"2026-11-23T18:00:00+0100\"}", "next_lease_at"},
        {"{\"next_lease_at\": \"2026-11-23T18:00:00Zz\"}", "next_lease_at"},
        {"{\"next_lease_at\": 1700000000}", "next_lease_at"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_heartbeat_parse(b, &h, &err), &err, A, bad[i].field);
        json_decref(b);
    }
    /* --hours is at most 512 bytes; 64 GPUs at most. */
    char hours[REQUEST_MAX_HOURS + 2];
    memset(hours, 'M', sizeof hours - 1);
    hours[sizeof hours - 1] = '\0';
    b = json_pack("{s:s#}", "hours", hours, (int)REQUEST_MAX_HOURS);
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    json_decref(b);
    b = json_pack("{s:s}", "hours", hours);
    assert_refused(request_heartbeat_parse(b, &h, &err), &err, A, "hours");
    json_decref(b);
    b = json_pack("{s:[]}", "gpus");
    for (int i = 0; i <= REQUEST_MAX_GPUS_JSON; i++)
        json_array_append_new(json_object_get(b, "gpus"), json_pack("{s:i}", "index", i));
    assert_refused(request_heartbeat_parse(b, &h, &err), &err, A, "gpus");
    json_decref(b);
}

/* ---- worker labels, lease trainables, warnings ---- */

static void test_register_labels(void **state)
{
    (void)state;
    RegisterRequest r;
    RungError err;
    json_t *b = parse("{\"labels\": {\"gpu\": \"a100\", \"team/vision.v-2_x\": \"\"}}");
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    assert_ptr_equal(r.labels, json_object_get(b, "labels"));
    json_decref(b);
    b = parse("{\"labels\": null}");
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    assert_null(r.labels);
    json_decref(b);
    b = parse("{\"labels\": {}}");
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    assert_int_equal(json_object_size(r.labels), 0);
    json_decref(b);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"labels\": [\"gpu\"]}", "labels"},
        {"{\"labels\": \"gpu=a100\"}", "labels"},
        {"{\"labels\": {\"gpu\": 1}}", "labels.gpu"},
        {"{\"labels\": {\"gpu\": null}}", "labels.gpu"},
        {"{\"labels\": {\"gpu\": [\"a100\"]}}", "labels.gpu"},
        {"{\"labels\": {\"\": \"x\"}}", "labels."},
        {"{\"labels\": {\"a b\": \"x\"}}", "labels.a b"},
        {"{\"labels\": {\"a=b\": \"x\"}}", "labels.a=b"},
        {"{\"labels\": {\"gpu:0\": \"x\"}}", "labels.gpu:0"},
        {"{\"labels\": {\"\xce\xb4\": \"x\"}}", "labels.\xce\xb4"},
        {"{\"labels\": {\"ok\": \"x\", \"bad!\": \"x\"}}", "labels.bad!"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_register_parse(b, &r, &err), &err, A, bad[i].field);
        assert_null(r.labels);
        json_decref(b);
    }

    /* Keys of SPEC_MAX_LABEL_KEY bytes pass, one more does not; values of
     * SPEC_MAX_LABEL_VALUE bytes pass, one more does not. */
    char key[SPEC_MAX_LABEL_KEY + 2], value[SPEC_MAX_LABEL_VALUE + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    b = json_pack("{s:{s:s%}}", "labels", key, value, (size_t)SPEC_MAX_LABEL_VALUE);
    rung_error_clear(&err);
    assert_int_equal(request_register_parse(b, &r, &err), A);
    char *field = fmt("labels.%s", key);
    assert_string_equal(err.field, field);
    free(field);
    json_decref(b);
    key[SPEC_MAX_LABEL_KEY] = '\0';
    b = json_pack("{s:{s:s%}}", "labels", key, value, (size_t)SPEC_MAX_LABEL_VALUE);
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    json_object_set_new(json_object_get(b, "labels"), key, json_string(value));
    rung_error_clear(&err);
    assert_int_equal(request_register_parse(b, &r, &err), A);
    field = fmt("labels.%s", key);
    assert_string_equal(err.field, field);
    assert_string_equal(err.message + strlen(field), ": must be a string of at most 256 bytes");
    free(field);
    json_decref(b);

    /* REQUEST_MAX_LABELS labels pass, one more does not. */
    b = json_pack("{s:{}}", "labels");
    for (int i = 0; i < REQUEST_MAX_LABELS; i++) {
        char k[16];
        snprintf(k, sizeof k, "l%d", i);
        json_object_set_new(json_object_get(b, "labels"), k, json_string("x"));
    }
    assert_int_equal(request_register_parse(b, &r, &err), 0);
    json_object_set_new(json_object_get(b, "labels"), "one-more", json_string("x"));
    assert_refused(request_register_parse(b, &r, &err), &err, A, "labels");
    assert_string_equal(err.message, "labels: must be an object of at most 64 labels");
    json_decref(b);
}

#define ALL_TRAINABLES                                                                             \
    (SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL) | SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_COMMAND) |    \
     SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_BUILTIN))

static void test_lease_trainables(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        unsigned mask;
    } ok[] = {
        {"{}", ALL_TRAINABLES},
        {"{\"trainables\": null}", ALL_TRAINABLES},
        {"{\"trainables\": [\"command\", \"builtin\"]}",
         SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_COMMAND) | SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_BUILTIN)},
        {"{\"trainables\": [\"external\"]}", SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL)},
        {"{\"trainables\": [\"builtin\"]}", SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_BUILTIN)},
        {"{\"trainables\": [\"builtin\", \"external\", \"command\"], \"cpus\": 2}", ALL_TRAINABLES},
    };
    LeaseRequest l;
    RungError err;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        json_t *b = parse(ok[i].text);
        assert_int_equal(request_lease_parse(b, 8, &l, &err), 0);
        assert_int_equal(l.offer.trainables, ok[i].mask);
        json_decref(b);
    }
    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"trainables\": []}", "trainables"},
        {"{\"trainables\": \"command\"}", "trainables"},
        {"{\"trainables\": {\"command\": true}}", "trainables"},
        {"{\"trainables\": [\"gpu\"]}", "trainables[0]"},
        {"{\"trainables\": [\"command\", \"Builtin\"]}", "trainables[1]"},
        {"{\"trainables\": [\"command\", \"command\"]}", "trainables[1]"},
        {"{\"trainables\": [\"command\", null]}", "trainables[1]"},
        {"{\"trainables\": [1]}", "trainables[0]"},
        {"{\"trainables\": [\"\"]}", "trainables[0]"},
        {"{\"trainables\": [\"command\", \"builtin\", \"external\", \"builtin\"]}",
         "trainables[3]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_lease_parse(b, 8, &l, &err), &err, A, bad[i].field);
        assert_int_equal(l.offer.trainables, 0);
        json_decref(b);
    }
    json_t *b = parse("{\"trainables\": [\"command\", \"gpu\"]}");
    assert_refused(request_lease_parse(b, 8, &l, &err), &err, A, "trainables[1]");
    assert_string_equal(err.message,
                        "trainables[1]: must be command, builtin or external, each once");
    json_decref(b);
}

/* Warnings objects that parse, and those refused with the field under
 * "warnings" they name; shared by the finish and heartbeat tests. */
static const char *const good_warnings[] = {
    "{\"count\": 0, \"last\": []}",
    "{\"count\": 3, \"last\": [{\"line\": \"@rung {oops\", \"why\": \"not JSON\"},"
    " {\"why\": \"no metric\", \"line\": \"@rung {}\"}]}",
    "{\"count\": 9007199254740992, \"last\": [{\"line\": \"@\", \"why\": \"?\"}]}",
    "{\"count\": 2.0, \"last\": [{\"line\": \"\\u00e9\", \"why\": \"x\"}]}",
};

static const struct {
    const char *text, *field; /* field after "warnings" (or "warnings.17") */
} bad_warnings[] = {
    {"[]", ""},
    {"\"3 bad lines\"", ""},
    {"3", ""},
    {"{\"last\": []}", ".count"},
    {"{\"count\": -1, \"last\": []}", ".count"},
    {"{\"count\": 9007199254740993, \"last\": []}", ".count"},
    {"{\"count\": 1.5, \"last\": []}", ".count"},
    {"{\"count\": \"1\", \"last\": []}", ".count"},
    {"{\"count\": 1}", ".last"},
    {"{\"count\": 1, \"last\": null}", ".last"},
    {"{\"count\": 1, \"last\": {}}", ".last"},
    {"{\"count\": 1, \"last\": [], \"first\": []}", ".first"},
    {"{\"count\": 1, \"last\": [\"@rung {\"]}", ".last[0]"},
    {"{\"count\": 1, \"last\": [{\"line\": \"x\"}]}", ".last[0].why"},
    {"{\"count\": 1, \"last\": [{\"why\": \"x\"}]}", ".last[0].line"},
    {"{\"count\": 2, \"last\": [{\"line\": \"x\", \"why\": \"y\"},"
     " {\"line\": 1, \"why\": \"y\"}]}",
     ".last[1].line"},
    {"{\"count\": 1, \"last\": [{\"line\": \"x\", \"why\": null}]}", ".last[0].why"},
    {"{\"count\": 1, \"last\": [{\"line\": \"\", \"why\": \"y\"}]}", ".last[0].line"},
    {"{\"count\": 1, \"last\": [{\"line\": \"x\", \"why\": \"\"}]}", ".last[0].why"},
    {"{\"count\": 1, \"last\": [{\"line\": \"x\", \"why\": \"y\", \"step\": 3}]}", ".last[0].step"},
};

/* A warnings object with n quoted lines of line_len and why_len bytes. */
static json_t *warnings_of(size_t n, size_t line_len, size_t why_len)
{
    char *line = malloc(line_len + 1), *why = malloc(why_len + 1);
    assert_non_null(line);
    assert_non_null(why);
    memset(line, 'l', line_len);
    line[line_len] = '\0';
    memset(why, 'w', why_len);
    why[why_len] = '\0';
    json_t *w = json_pack("{s:I, s:[]}", "count", (json_int_t)n, "last");
    for (size_t i = 0; i < n; i++)
        json_array_append_new(json_object_get(w, "last"),
                              json_pack("{s:s, s:s}", "line", line, "why", why));
    free(line);
    free(why);
    return w;
}

static void test_finish_warnings(void **state)
{
    (void)state;
    FinishRequest f;
    RungError err;
    for (size_t i = 0; i < sizeof good_warnings / sizeof good_warnings[0]; i++) {
        char *text = fmt("{\"lease_token\": \"t\", \"status\": \"completed\", \"warnings\": %s}",
                         good_warnings[i]);
        json_t *b = parse(text);
        assert_int_equal(request_finish_parse(b, &f, &err), 0);
        assert_ptr_equal(f.warnings, json_object_get(b, "warnings"));
        json_decref(b);
        free(text);
    }
    json_t *b = parse("{\"lease_token\": \"t\", \"status\": \"failed\", \"warnings\": null}");
    assert_int_equal(request_finish_parse(b, &f, &err), 0);
    assert_null(f.warnings);
    json_decref(b);
    for (size_t i = 0; i < sizeof bad_warnings / sizeof bad_warnings[0]; i++) {
        char *text = fmt("{\"lease_token\": \"t\", \"status\": \"completed\", \"warnings\": %s}",
                         bad_warnings[i].text);
        char *field = fmt("warnings%s", bad_warnings[i].field);
        b = parse(text);
        rung_error_clear(&err);
        assert_refused(request_finish_parse(b, &f, &err), &err, A, field);
        assert_null(f.warnings);
        assert_null(f.lease_token);
        json_decref(b);
        free(text);
        free(field);
    }

    /* The bounds: REQUEST_MAX_WARN_LAST lines of REQUEST_MAX_WARN_LINE bytes
     * with reasons of REQUEST_MAX_WARN_WHY bytes pass; one more of each does not. */
    static const struct {
        size_t n, line, why;
        const char *field;
    } edges[] = {
        {REQUEST_MAX_WARN_LAST, REQUEST_MAX_WARN_LINE, REQUEST_MAX_WARN_WHY, NULL},
        {REQUEST_MAX_WARN_LAST + 1, 1, 1, "warnings.last"},
        {1, REQUEST_MAX_WARN_LINE + 1, 1, "warnings.last[0].line"},
        {2, 1, REQUEST_MAX_WARN_WHY + 1, "warnings.last[0].why"},
    };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        b = json_pack("{s:s, s:s, s:o}", "lease_token", "t", "status", "completed", "warnings",
                      warnings_of(edges[i].n, edges[i].line, edges[i].why));
        rung_error_clear(&err);
        if (edges[i].field == NULL) {
            assert_int_equal(request_finish_parse(b, &f, &err), 0);
        } else {
            assert_refused(request_finish_parse(b, &f, &err), &err, A, edges[i].field);
        }
        json_decref(b);
    }
}

static void test_heartbeat_warnings(void **state)
{
    (void)state;
    static HeartbeatRequest h;
    RungError err;
    char *text = fmt("{\"trials\": [17, 18], \"warnings\": {\"17\": %s, \"0018\": %s}}",
                     good_warnings[1], good_warnings[0]);
    json_t *b = parse(text);
    free(text);
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    assert_ptr_equal(h.warnings, json_object_get(b, "warnings"));
    void *iter = NULL;
    int64_t id;
    json_t *w;
    assert_true(request_heartbeat_warnings(&h, &iter, &id, &w));
    assert_int_equal(id, 17);
    assert_ptr_equal(w, json_object_get(json_object_get(b, "warnings"), "17"));
    assert_true(request_heartbeat_warnings(&h, &iter, &id, &w));
    assert_int_equal(id, 18);
    assert_int_equal(json_integer_value(json_object_get(w, "count")), 0);
    assert_false(request_heartbeat_warnings(&h, &iter, &id, &w));
    /* The logs iterator is not confused by warnings, nor the other way round. */
    iter = NULL;
    const char *log;
    assert_false(request_heartbeat_log(&h, &iter, &id, &log));
    json_decref(b);

    b = parse("{\"trials\": [1], \"warnings\": null}");
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    assert_null(h.warnings);
    iter = NULL;
    assert_false(request_heartbeat_warnings(&h, &iter, &id, &w));
    json_decref(b);
    b = parse("{\"warnings\": {}}");
    assert_int_equal(request_heartbeat_parse(b, &h, &err), 0);
    iter = NULL;
    assert_false(request_heartbeat_warnings(&h, &iter, &id, &w));
    json_decref(b);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"warnings\": []}", "warnings"},
        {"{\"warnings\": {\"x\": {\"count\": 0, \"last\": []}}}", "warnings.x"},
        {"{\"warnings\": {\"-1\": {\"count\": 0, \"last\": []}}}", "warnings.-1"},
        {"{\"warnings\": {\"\": {\"count\": 0, \"last\": []}}}", "warnings."},
        {"{\"warnings\": {\"99999999999999999999\": {\"count\": 0, \"last\": []}}}",
         "warnings.99999999999999999999"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = parse(bad[i].text);
        rung_error_clear(&err);
        assert_refused(request_heartbeat_parse(b, &h, &err), &err, A, bad[i].field);
        assert_null(h.warnings);
        assert_int_equal(h.n_trials, 0);
        json_decref(b);
    }
    for (size_t i = 0; i < sizeof bad_warnings / sizeof bad_warnings[0]; i++) {
        text = fmt("{\"trials\": [17], \"warnings\": {\"17\": {\"count\": 0, \"last\": []},"
                   " \"23\": %s}}",
                   bad_warnings[i].text);
        char *field = fmt("warnings.23%s", bad_warnings[i].field);
        b = parse(text);
        rung_error_clear(&err);
        assert_refused(request_heartbeat_parse(b, &h, &err), &err, A, field);
        assert_null(h.warnings);
        json_decref(b);
        free(text);
        free(field);
    }
}

/* Every parser refuses a body nested 33 deep and accepts 32, before any
 * other check, naming the value too deep. */
static void test_request_depth(void **state)
{
    (void)state;
    RungError err;
    static HeartbeatRequest h;
    /* A worker's registered GPUs take any objects: body 1 + gpus 1 + the
     * object 1 + 29 = 32. */
    RegisterRequest reg;
    char *inner = nested_arrays(29);
    char *text = fmt("{\"gpus\": [{\"x\": %s}]}", inner);
    json_t *b = parse(text);
    assert_int_equal(request_register_parse(b, &reg, &err), 0);
    json_decref(b);
    free(text);
    free(inner);
    inner = nested_arrays(31);
    text = fmt("{\"trials\": [1], \"gpus\": [%s]}", inner);
    b = parse(text);
    assert_refused(request_heartbeat_parse(b, &h, &err), &err, A,
                   "gpus[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                   "[0][0][0][0][0][0][0][0]");
    assert_string_equal(err.message + strlen(err.field), ": nested deeper than 32 levels");
    json_decref(b);
    free(text);

    /* The others: depth checked before the fields (a 33-deep unknown field
     * is refused for its depth). */
    text = fmt("{\"zz\": {\"a\": %s}}", inner); /* 1 + 1 + 31 */
    b = parse(text);
    ReportRequest r;
    FinishRequest f;
    RegisterRequest g;
    LeaseRequest l;
    const char *deep_field = "zz.a[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                             "[0][0][0][0][0][0][0][0][0][0]";
    assert_refused(request_report_parse(b, &r, &err), &err, A, deep_field);
    assert_refused(request_finish_parse(b, &f, &err), &err, A, deep_field);
    assert_refused(request_register_parse(b, &g, &err), &err, A, deep_field);
    assert_refused(request_lease_parse(b, 1, &l, &err), &err, A, deep_field);
    json_decref(b);
    free(text);
    free(inner);
}

/* ---- spec ---- */

#define SPEC_HEAD "\"metric\": \"loss\", \"mode\": \"min\""
#define SPACE "\"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}"
#define EXTERNAL "\"trainable\": {\"type\": \"external\"}"

static void test_spec_null_strings(void **state)
{
    (void)state;
    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"name\": null, " SPEC_HEAD ", " SPACE "}", "name"},
        {"{" SPEC_HEAD ", " SPACE ", \"searcher\": {\"type\": null}}", "searcher.type"},
        {"{" SPEC_HEAD ", " SPACE ", \"scheduler\": {\"type\": null}}", "scheduler.type"},
        {"{" SPEC_HEAD ", " SPACE ", \"scheduler\": {\"type\": \"asha\", \"time_attr\": null}}",
         "scheduler.time_attr"},
        {"{" SPEC_HEAD ", " SPACE
         ", \"trainable\": {\"type\": \"command\", \"argv\": [\"a\"], \"cwd\": null}}",
         "trainable.cwd"},
        {"{" SPEC_HEAD ", " SPACE ", \"trainable\": {\"type\": \"builtin\", \"model\": null}}",
         "trainable.model"},
        {"{" SPEC_HEAD ", " SPACE ", \"trainable\": {\"type\": \"builtin\", \"dataset\": null}}",
         "trainable.dataset"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = parse(bad[i].text);
        Spec spec;
        RungError err;
        rung_error_clear(&err);
        assert_refused(spec_parse(j, 1, &spec, &err), &err, RUNG_E_INVALID_SPEC, bad[i].field);
        assert_non_null(strstr(err.message, ": must be a string"));
        json_decref(j);
    }
    /* A spec an earlier rungd stored with nulls still loads, with defaults. */
    json_t *j = parse("{\"name\": null, " SPEC_HEAD ", " SPACE
                      ", \"searcher\": {\"type\": null, \"seed\": 5},"
                      " \"trainable\": {\"type\": \"builtin\", \"model\": null}}");
    Spec spec;
    RungError err;
    assert_int_equal(spec_load(j, 5, &spec, &err), 0);
    assert_string_equal(spec.name, "experiment");
    assert_string_equal(json_string_value(json_object_get(spec.json, "name")), "experiment");
    assert_string_equal(json_string_value(
                            json_object_get(json_object_get(spec.json, "searcher"), "type")),
                        "random");
    assert_null(json_object_get(json_object_get(spec.json, "trainable"), "model"));
    spec_close(&spec);
    json_decref(j);
}

static void test_spec_depth(void **state)
{
    (void)state;
    /* spec 1, search_space 2, x 3, values 4, then n arrays. */
    for (int n = 27; n <= 29; n++) {
        char *inner = nested_arrays(n);
        char *text = fmt("{" SPEC_HEAD ", " EXTERNAL ", \"search_space\": {\"x\": {\"type\":"
                         " \"grid\", \"values\": [%s]}}}",
                         inner);
        json_t *j = parse(text);
        Spec spec;
        RungError err;
        rung_error_clear(&err);
        int rc = spec_parse(j, 1, &spec, &err);
        if (4 + n <= JSONV_MAX_DEPTH) {
            if (rc != 0)
                fail_msg("depth %d refused: %s", 4 + n, err.message);
            assert_int_equal(spec.total_trials, 1);
            spec_close(&spec);
        } else {
            char want[RUNG_FIELD_MAX] = "search_space.x.values";
            for (int k = 4; k < JSONV_MAX_DEPTH + 1; k++)
                strcat(want, "[0]");
            assert_refused(rc, &err, RUNG_E_INVALID_SPEC, want);
            assert_non_null(strstr(err.message, "nested deeper than 32 levels"));
        }
        json_decref(j);
        free(text);
        free(inner);
    }
    /* The trainable too. */
    char *inner = nested_arrays(31);
    char *text = fmt("{" SPEC_HEAD ", " SPACE ", \"trainable\": {\"type\": \"builtin\","
                     " \"model\": %s}}",
                     inner);
    json_t *j = parse(text);
    Spec spec;
    RungError err;
    assert_int_equal(spec_parse(j, 1, &spec, &err), RUNG_E_INVALID_SPEC);
    assert_memory_equal(err.field, "trainable.model[0]", 18);
    json_decref(j);
    free(text);
    free(inner);
}

/* A spec as stored is accepted again, as it is at every start. */
static void test_spec_reload(void **state)
{
    (void)state;
    static const char *const specs[] = {
        "{" SPEC_HEAD ", " SPACE ", " EXTERNAL "}",
        "{" SPEC_HEAD ", " SPACE ", " EXTERNAL ", \"scheduler\": {\"type\": \"hyperband\","
        " \"max_t\": 27, \"reduction_factor\": 3}}",
        "{" SPEC_HEAD ", " SPACE ", " EXTERNAL ", \"scheduler\": {\"type\": \"asha\","
        " \"brackets\": 2}}",
        "{" SPEC_HEAD ", " SPACE ", " EXTERNAL ", \"scheduler\": {\"type\": \"median\"}}",
        "{\"name\": \"n\", " SPEC_HEAD ", " SPACE ", \"searcher\": {\"type\": \"bayes\"},"
        " \"trainable\": {\"type\": \"command\", \"argv\": [\"run\", \"{x}\"],"
        " \"env\": {\"A\": \"1\"}}}",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        json_t *j = parse(specs[i]);
        Spec spec, again, loaded;
        RungError err;
        if (spec_parse(j, 9, &spec, &err) != 0)
            fail_msg("%s: %s", specs[i], err.message);
        if (spec_load(spec.json, 9, &loaded, &err) != 0)
            fail_msg("stored %s: %s", specs[i], err.message);
        assert_true(json_equal(loaded.json, spec.json));
        if (spec_parse(spec.json, 9, &again, &err) != 0)
            fail_msg("again %s: %s", specs[i], err.message);
        assert_true(json_equal(again.json, spec.json));
        spec_close(&again);
        spec_close(&loaded);
        spec_close(&spec);
        json_decref(j);
    }
    /* hyperband's brackets: what it uses (4 here) passes, another does not. */
    json_t *j = parse("{" SPEC_HEAD ", " SPACE ", \"scheduler\": {\"type\": \"hyperband\","
                      " \"max_t\": 27, \"reduction_factor\": 3, \"brackets\": 3}}");
    Spec spec;
    RungError err;
    assert_refused(spec_parse(j, 1, &spec, &err), &err, RUNG_E_INVALID_SPEC, "scheduler.brackets");
    json_decref(j);
}

static void test_spec_env_name(void **state)
{
    (void)state;
    char name[SPEC_MAX_ENV_NAME + 2];
    memset(name, 'V', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    json_t *j = parse("{" SPEC_HEAD ", " SPACE ", \"trainable\": {\"type\": \"command\","
                      " \"argv\": [\"run\"], \"env\": {}}}");
    json_t *env = json_object_get(json_object_get(j, "trainable"), "env");
    json_object_set_new(env, name, json_string("1"));
    Spec spec;
    RungError err;
    assert_int_equal(spec_parse(j, 1, &spec, &err), RUNG_E_INVALID_SPEC);
    assert_memory_equal(err.field, "trainable.env.VVV", 17);
    assert_int_equal(spec_load(j, 1, &spec, &err), 0); /* stored before the limit */
    spec_close(&spec);
    json_object_clear(env);
    name[SPEC_MAX_ENV_NAME] = '\0';
    json_object_set_new(env, name, json_string("1"));
    assert_int_equal(spec_parse(j, 1, &spec, &err), 0);
    spec_close(&spec);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depth_bound),
        cmocka_unit_test(test_utf8_cuts),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_report_info),
        cmocka_unit_test(test_finish),
        cmocka_unit_test(test_finish_error_cut),
        cmocka_unit_test(test_register),
        cmocka_unit_test(test_lease),
        cmocka_unit_test(test_lease_gpus_registered),
        cmocka_unit_test(test_lease_gang_fields),
        cmocka_unit_test(test_heartbeat),
        cmocka_unit_test(test_finish_preempted),
        cmocka_unit_test(test_heartbeat_spare),
        cmocka_unit_test(test_register_labels),
        cmocka_unit_test(test_lease_trainables),
        cmocka_unit_test(test_finish_warnings),
        cmocka_unit_test(test_heartbeat_warnings),
        cmocka_unit_test(test_request_depth),
        cmocka_unit_test(test_spec_null_strings),
        cmocka_unit_test(test_spec_depth),
        cmocka_unit_test(test_spec_reload),
        cmocka_unit_test(test_spec_env_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
