/* Unit tests of common/: the error table, the strict JSON readers, clocks,
 * and the protocol's shared pieces: splitmix64, the spelling of non-finite
 * numbers, constant-time comparison, error bodies, UTF-8 cuts, and token
 * files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "ct.h"
#include "errjson.h"
#include "error.h"
#include "fmtnum.h"
#include "jsonv.h"
#include "nonfinite.h"
#include "secret.h"
#include "splitmix.h"
#include "utf8.h"

static void test_error_table(void **state)
{
    (void)state;
    assert_string_equal(rung_error_string(RUNG_E_INVALID_SPEC), "invalid_spec");
    assert_int_equal(rung_error_status(RUNG_E_INVALID_SPEC), 400);
    assert_string_equal(rung_error_string(RUNG_E_LEASE_LOST), "lease_lost");
    assert_int_equal(rung_error_status(RUNG_E_LEASE_LOST), 409);
    assert_int_equal(rung_error_status(RUNG_E_PAYLOAD_TOO_LARGE), 413);
    assert_int_equal(rung_error_status(RUNG_E_UNAUTHORIZED), 401);
    assert_int_equal(rung_error_status(12345), 500);
}

static void test_jsonv_reports_path(void **state)
{
    (void)state;
    json_t *obj = json_pack("{s:s, s:i, s:f, s:b}", "name", "x", "n", 3, "r", 2.5, "b", 1);
    RungError err;
    rung_error_clear(&err);
    int64_t n = 0;
    assert_int_equal(jsonv_int(obj, "scheduler", "n", JSONV_REQUIRED, 0, 10, &n,
                               RUNG_E_INVALID_SPEC, &err),
                     0);
    assert_int_equal(n, 3);
    assert_int_equal(jsonv_int(obj, "scheduler", "r", JSONV_REQUIRED, 0, 10, &n,
                               RUNG_E_INVALID_SPEC, &err),
                     RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "scheduler.r");
    assert_non_null(strstr(err.message, "scheduler.r"));
    assert_int_equal(jsonv_int(obj, "", "missing", JSONV_REQUIRED, 0, 10, &n, RUNG_E_INVALID_SPEC,
                               &err),
                     RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "missing");
    const char *allowed[] = {"name", "n", "r", NULL};
    assert_int_equal(jsonv_only_keys(obj, "x", allowed, RUNG_E_INVALID_SPEC, &err),
                     RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "x.b");
    double d = 0;
    assert_int_equal(jsonv_number(obj, "", "name", JSONV_REQUIRED, &d, RUNG_E_INVALID_SPEC, &err),
                     RUNG_E_INVALID_SPEC);
    assert_string_equal(err.message, "name: must be a number");
    json_decref(obj);
}

static void test_time_format(void **state)
{
    (void)state;
    char buf[RUNG_TIME_LEN];
    rung_time_format(1795304402125LL, buf, sizeof buf);
    assert_string_equal(buf, "2026-11-21T23:40:02.125Z");
}

/* ---- splitmix.h ---- */

static void test_splitmix_reference(void **state)
{
    (void)state;
    /* The first outputs of the stream seeded with 0 as splitmix64's
     * reference implementation prints them: a change of constant or shift
     * anywhere would change every dropout mask and data order. */
    uint64_t s = 0;
    assert_true(rung_splitmix_next(&s) == 0xe220a8397b1dcdafULL);
    assert_true(rung_splitmix_next(&s) == 0x6e789e6aa1b965f4ULL);
    assert_true(rung_splitmix_next(&s) == 0x06c45d188009454fULL);
    assert_true(s == 3 * RUNG_SPLITMIX_GAMMA);
    assert_true(rung_splitmix_mix(0) == 0);
}

static void test_splitmix_forms_agree(void **state)
{
    (void)state;
    /* at(key, k) is the k-th next() from key; splitmix64(x) is at(x, 1). */
    const uint64_t keys[] = {0, 1, 42, 0x696e6974ULL, ~0ULL};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        uint64_t s = keys[i];
        for (uint64_t k = 1; k <= 100; k++)
            assert_true(rung_splitmix_next(&s) == rung_splitmix_at(keys[i], k));
        assert_true(rung_splitmix64(keys[i]) == rung_splitmix_at(keys[i], 1));
        assert_true(rung_splitmix64(keys[i]) == rung_splitmix_mix(keys[i] + 0x9e3779b97f4a7c15ULL));
    }
}

/* ---- nonfinite.h ---- */

static void test_nonfinite_format(void **state)
{
    (void)state;
    assert_string_equal(rung_nonfinite_format(NAN), "NaN");
    assert_string_equal(rung_nonfinite_format(-NAN), "NaN");
    assert_string_equal(rung_nonfinite_format(INFINITY), "Infinity");
    assert_string_equal(rung_nonfinite_format(-INFINITY), "-Infinity");
    assert_null(rung_nonfinite_format(0.0));
    assert_null(rung_nonfinite_format(-1e308));
    assert_null(rung_nonfinite_format(4.9e-324));
}

static void test_nonfinite_parse(void **state)
{
    (void)state;
    double d = 7;
    assert_true(rung_nonfinite_parse("NaN", 3, &d));
    assert_true(isnan(d));
    assert_true(rung_nonfinite_parse("Infinity", 8, &d));
    assert_true(isinf(d) && d > 0);
    assert_true(rung_nonfinite_parse("-Infinity", 9, &d));
    assert_true(isinf(d) && d < 0);
    /* Exact spellings only: other cases, prefixes, longer text, what C's
     * strtod would take, and a length that cuts or goes past the word. */
    const char *no[] = {"nan",  "NAN",  "inf",     "Inf", "-inf",  "+Infinity", "infinity",
                        "NaN ", " NaN", "Infinit", "",    "1e999", "0"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        d = 7;
        assert_false(rung_nonfinite_parse(no[i], strlen(no[i]), &d));
        assert_true(d == 7);
    }
    assert_false(rung_nonfinite_parse("NaN", 2, &d));
    assert_false(rung_nonfinite_parse("NaNx", 4, &d));
    assert_true(rung_nonfinite_parse("NaNx", 3, &d)); /* len bytes, no NUL needed */
    assert_false(rung_nonfinite_parse(NULL, 3, &d));
    /* Every spelling reads back as the value that gave it. */
    const double values[] = {NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < 3; i++) {
        const char *name = rung_nonfinite_format(values[i]);
        assert_true(rung_nonfinite_parse(name, strlen(name), &d));
        assert_true(isnan(values[i]) ? isnan(d) : d == values[i]);
    }
}

static void test_nonfinite_json(void **state)
{
    (void)state;
    json_t *v = rung_nonfinite_to_json(NAN);
    assert_string_equal(json_string_value(v), "NaN");
    json_decref(v);
    v = rung_nonfinite_to_json(-INFINITY);
    assert_string_equal(json_string_value(v), "-Infinity");
    json_decref(v);
    v = rung_nonfinite_to_json(0.25);
    assert_true(json_is_real(v) && json_real_value(v) == 0.25);
    json_decref(v);

    double d = 7;
    json_t *in = json_loads("[1, 2.5, \"NaN\", \"Infinity\", \"-Infinity\", \"nan\", null, true, "
                            "\"NaN\\u0000\", {}]",
                            JSON_ALLOW_NUL, NULL);
    assert_non_null(in);
    assert_true(rung_nonfinite_from_json(json_array_get(in, 0), &d) && d == 1);
    assert_true(rung_nonfinite_from_json(json_array_get(in, 1), &d) && d == 2.5);
    assert_true(rung_nonfinite_from_json(json_array_get(in, 2), &d) && isnan(d));
    assert_true(rung_nonfinite_from_json(json_array_get(in, 3), &d) && d == INFINITY);
    assert_true(rung_nonfinite_from_json(json_array_get(in, 4), &d) && d == -INFINITY);
    for (size_t i = 5; i < json_array_size(in); i++) {
        d = 7;
        assert_false(rung_nonfinite_from_json(json_array_get(in, i), &d));
        assert_true(d == 7);
    }
    assert_false(rung_nonfinite_from_json(NULL, &d));
    json_decref(in);
}

/* ---- ct.h ---- */

static void test_ct_equal(void **state)
{
    (void)state;
    const char *token = "1916847e00aace1ab47c1ab306c7eea2";
    assert_true(rung_ct_equal("1916847e00aace1ab47c1ab306c7eea2", token, 32));
    assert_false(rung_ct_equal("1916847e00aace1ab47c1ab306c7eea3", token, 32));  /* last byte */
    assert_false(rung_ct_equal("0916847e00aace1ab47c1ab306c7eea2", token, 32));  /* first byte */
    assert_false(rung_ct_equal("1916847e00aace1ab47c1ab306c7eea", token, 32));   /* a prefix */
    assert_false(rung_ct_equal("1916847e00aace1ab47c1ab306c7eea22", token, 32)); /* longer */
    assert_false(rung_ct_equal("", token, 32));
    /* An empty expected never matches, not even an empty given. */
    assert_false(rung_ct_equal("", "", 32));
    assert_false(rung_ct_equal("x", "", 32));
    /* Longer than max_len: false, even when equal. */
    assert_true(rung_ct_equal("secret", "secret", 6));
    assert_false(rung_ct_equal("secret", "secret", 5));
    assert_false(rung_ct_equal(NULL, token, 32));
    assert_false(rung_ct_equal(token, NULL, 32));
    assert_true(rung_ct_equal("s", "s", SIZE_MAX));
    /* Bytes above 0x7f compare as bytes. */
    assert_true(rung_ct_equal("t\xc3\xa9", "t\xc3\xa9", 8));
    assert_false(rung_ct_equal("t\xc3\xa8", "t\xc3\xa9", 8));
}

/* ---- errjson.h ---- */

static void test_error_json(void **state)
{
    (void)state;
    json_t *j = rung_error_json(RUNG_E_INVALID_SPEC, "search_space.lr.low",
                                "search_space.lr: low must be > 0 for loguniform");
    char *text = json_dumps(j, JSON_COMPACT);
    assert_string_equal(text,
                        "{\"error\":{\"code\":\"invalid_spec\",\"message\":\"search_space.lr: "
                        "low must be > 0 for loguniform\",\"field\":\"search_space.lr.low\"}}");
    free(text);
    json_decref(j);

    /* No field: the key is left out, for NULL and "" alike. */
    j = rung_error_json(RUNG_E_NOT_FOUND, "", "no such endpoint");
    text = json_dumps(j, JSON_COMPACT);
    assert_string_equal(text,
                        "{\"error\":{\"code\":\"not_found\",\"message\":\"no such endpoint\"}}");
    free(text);
    json_decref(j);
    j = rung_error_json(RUNG_E_INTERNAL, NULL, NULL);
    text = json_dumps(j, JSON_COMPACT);
    assert_string_equal(text, "{\"error\":{\"code\":\"internal\",\"message\":\"\"}}");
    free(text);
    json_decref(j);

    /* A message cut inside a character (what vsnprintf into a RungError
     * does) still gives a body; the broken bytes become '?'. */
    j = rung_error_json(RUNG_E_BAD_JSON, "na\xffme", "caf\xc3\xa9 \xf0\x9f\x98");
    assert_non_null(j);
    json_t *e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "caf\xc3\xa9 ???");
    assert_string_equal(json_string_value(json_object_get(e, "field")), "na?me");
    json_decref(j);

    RungError err;
    rung_error_set(&err, RUNG_E_LEASE_LOST, "lease_token", "trial %d: lease lost", 3);
    j = rung_error_json_from(&err);
    e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "lease_lost");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "trial 3: lease lost");
    assert_string_equal(json_string_value(json_object_get(e, "field")), "lease_token");
    assert_int_equal(rung_error_status(err.code), 409);
    json_decref(j);

    /* An unknown code is "internal", as in the error table. */
    j = rung_error_json(12345, NULL, "x");
    e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "internal");
    json_decref(j);
}

/* ---- utf8.h ---- */

static void test_utf8_truncate(void **state)
{
    (void)state;
    assert_int_equal(rung_utf8_truncate_len("hello", 10), 5);
    assert_int_equal(rung_utf8_truncate_len("hello", 5), 5);
    assert_int_equal(rung_utf8_truncate_len("hello", 4), 4);
    assert_int_equal(rung_utf8_truncate_len("hello", 0), 0);
    assert_int_equal(rung_utf8_truncate_len("", 3), 0);
    /* "ab" + U+1F600 (4 bytes: F0 9F 98 80) + "c": every limit inside the
     * emoji keeps "ab"; the limit at its last byte keeps it whole. */
    const char *s = "ab\xf0\x9f\x98\x80"
                    "c";
    assert_int_equal(rung_utf8_truncate_len(s, 2), 2);
    assert_int_equal(rung_utf8_truncate_len(s, 3), 2);
    assert_int_equal(rung_utf8_truncate_len(s, 4), 2);
    assert_int_equal(rung_utf8_truncate_len(s, 5), 2);
    assert_int_equal(rung_utf8_truncate_len(s, 6), 6);
    assert_int_equal(rung_utf8_truncate_len(s, 7), 7);
    assert_int_equal(rung_utf8_truncate_len(s, 100), 7);
    /* A string that is the 4-byte character alone. */
    assert_int_equal(rung_utf8_truncate_len("\xf0\x9f\x98\x80", 3), 0);
    assert_int_equal(rung_utf8_truncate_len("\xf0\x9f\x98\x80", 4), 4);
    /* 2- and 3-byte characters: "é" (C3 A9), "€" (E2 82 AC). */
    assert_int_equal(rung_utf8_truncate_len("\xc3\xa9\xe2\x82\xac", 1), 0);
    assert_int_equal(rung_utf8_truncate_len("\xc3\xa9\xe2\x82\xac", 2), 2);
    assert_int_equal(rung_utf8_truncate_len("\xc3\xa9\xe2\x82\xac", 4), 2);
    assert_int_equal(rung_utf8_truncate_len("\xc3\xa9\xe2\x82\xac", 5), 5);
    /* The head it keeps is valid UTF-8 for every limit: jansson takes it. */
    for (size_t max = 0; max <= 8; max++) {
        json_t *j = json_stringn(s, rung_utf8_truncate_len(s, max));
        assert_non_null(j);
        json_decref(j);
    }
    /* It reads no further than max + 1 bytes: an unterminated buffer. */
    char buf[4] = {'a', 'b', (char)0xc3, (char)0xa9};
    assert_int_equal(rung_utf8_truncate_len(buf, 3), 2);
}

static void test_utf8_char_len(void **state)
{
    (void)state;
    assert_int_equal(rung_utf8_char_len("a", 1), 1);
    assert_int_equal(rung_utf8_char_len("", 1), 1); /* the NUL byte */
    assert_int_equal(rung_utf8_char_len("a", 0), 0);
    assert_int_equal(rung_utf8_char_len("\xc3\xa9", 2), 2);
    assert_int_equal(rung_utf8_char_len("\xe2\x82\xac", 3), 3);
    assert_int_equal(rung_utf8_char_len("\xf0\x9f\x98\x80", 4), 4);
    assert_int_equal(rung_utf8_char_len("\xf4\x8f\xbf\xbf", 4), 4); /* U+10FFFF */
    assert_int_equal(rung_utf8_char_len("\xf0\x9f\x98\x80", 3), 0); /* cut short */
    assert_int_equal(rung_utf8_char_len("\x80", 1), 0);             /* continuation */
    assert_int_equal(rung_utf8_char_len("\xc0\x80", 2), 0);         /* overlong NUL */
    assert_int_equal(rung_utf8_char_len("\xe0\x80\xaf", 3), 0);     /* overlong '/' */
    assert_int_equal(rung_utf8_char_len("\xf0\x8f\xbf\xbf", 4), 0); /* overlong */
    assert_int_equal(rung_utf8_char_len("\xed\xa0\x80", 3), 0);     /* surrogate */
    assert_int_equal(rung_utf8_char_len("\xf4\x90\x80\x80", 4), 0); /* above U+10FFFF */
    assert_int_equal(rung_utf8_char_len("\xff", 1), 0);
    assert_int_equal(rung_utf8_char_len("\xc3"
                                        "a",
                                        2),
                     0); /* lead without continuation */
}

/* Writes text (len bytes, NULs allowed) to a fresh file with mode; its
 * path into path (a template filled by mkstemp). */
static void token_file(char *path, const char *text, size_t len, mode_t mode)
{
    strcpy(path, "/tmp/rung-test-token-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

/* Reads text as a token file allowing max tokens: the return value, the
 * tokens in out and the message in why. */
static int read_tokens(const char *text, size_t len, int max, SecretToken *out, int *n, bool *loose,
                       char *why)
{
    char path[64];
    token_file(path, text, len, 0600);
    int rc = secret_read_tokens(path, out, max, n, loose, why, 512);
    unlink(path);
    return rc;
}

static void test_secret_tokens(void **state)
{
    (void)state;
    SecretToken t[SECRET_TOKENS_MAX];
    int n;
    bool loose;
    char why[512];
    /* One token, its line end and trailing blanks (CRLF too) dropped. */
    assert_int_equal(read_tokens("abc\r\n", 5, 1, t, &n, &loose, why), 0);
    assert_int_equal(n, 1);
    assert_string_equal(t[0], "abc");
    assert_false(loose);
    assert_int_equal(read_tokens("abc \t", 5, 1, t, &n, &loose, why), 0);
    assert_string_equal(t[0], "abc");
    /* Two, blank lines between them ignored; the first is the token. */
    assert_int_equal(read_tokens("\nnew\n\nold\n", 10, 2, t, &n, &loose, why), 0);
    assert_int_equal(n, 2);
    assert_string_equal(t[0], "new");
    assert_string_equal(t[1], "old");
    /* Refusals name the path and say what is wrong. */
    assert_int_equal(read_tokens("a\nb\n", 4, 1, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "more than 1 token (line 2)"));
    assert_non_null(strstr(why, "--token-file /tmp/rung-test-token-"));
    assert_int_equal(read_tokens("a\nb\nc", 5, 2, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "more than 2 tokens (line 3)"));
    assert_int_equal(read_tokens("\n \n", 3, 1, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "holds no token"));
    assert_int_equal(read_tokens("", 0, 1, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "holds no token"));
    assert_int_equal(read_tokens("ab cd", 5, 1, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "line 1 has a blank or control character at byte 3"));
    assert_int_equal(read_tokens("ab\0cd", 5, 1, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "at byte 3"));
    /* SECRET_TOKEN_MAX bytes pass, one more does not; a huge file is
     * refused without being read into memory. */
    static char big[SECRET_TOKEN_MAX * 4];
    memset(big, 'x', sizeof big);
    assert_int_equal(read_tokens(big, SECRET_TOKEN_MAX, 1, t, &n, &loose, why), 0);
    assert_int_equal(strlen(t[0]), SECRET_TOKEN_MAX);
    assert_int_equal(read_tokens(big, SECRET_TOKEN_MAX + 1, 1, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "longer than 1024 bytes"));
    assert_int_equal(read_tokens(big, sizeof big, 2, t, &n, &loose, why), -1);
    assert_non_null(strstr(why, "too long"));
    /* A missing file; a file others can read is read, and flagged. */
    assert_int_equal(secret_read_tokens("/nonexistent/token", t, 1, &n, &loose, why, sizeof why),
                     -1);
    assert_non_null(strstr(why, "No such file"));
    char path[64];
    token_file(path, "s3cret\n", 7, 0644);
    assert_int_equal(secret_read_tokens(path, t, 1, &n, &loose, why, sizeof why), 0);
    unlink(path);
    assert_true(loose);
    assert_string_equal(t[0], "s3cret");
}

/* fmtnum.h writes what printf does: random bit patterns (every exponent,
 * subnormals, inf, nan), decimals of few digits read back, dyadic
 * fractions (exact ties at 17 digits), and the edges of the fast range. */
static void test_fmtnum_matches_printf(void **state)
{
    (void)state;
    const uint64_t seed = 12345;
    char got[RUNG_FMTNUM_MAX];
    char want[64];
    for (int i = 0; i < 2000000; i++) {
        uint64_t r = rung_splitmix_at(seed, (uint64_t)i + 1);
        double v;
        switch (i % 4) {
        case 0:
            memcpy(&v, &r, sizeof v);
            break;
        case 1:
            v = (double)(r >> 11) / 9007199254740992.0 * pow(10, (int)(r % 60) - 40);
            break;
        case 2: {
            char t[40];
            snprintf(t, sizeof t, "%.*g", (int)(r % 10) + 1,
                     (double)(r >> 11) / 9007199254740992.0 * pow(10, (int)(r % 23) - 11));
            v = strtod(t, NULL);
            break;
        }
        default:
            v = ((double)(int64_t)(r % 2000001) - 1000000) / (double)(1u << (r >> 59));
            break;
        }
        rung_fmt_g17(got, v);
        snprintf(want, sizeof want, "%.17g", v);
        assert_string_equal(got, want);
    }
    const double edges[] = {0.0,
                            -0.0,
                            1.0,
                            0.1,
                            1e-5,
                            1e-4,
                            9.9999999999999995e-5,
                            1e16,
                            1e17,
                            1e-42,
                            1e-43,
                            5e-324,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            4503599627370496.0,
                            9007199254740993.0,
                            123456789012345678.0,
                            0.5,
                            2.5e-5,
                            DBL_MAX};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        rung_fmt_g17(got, edges[i]);
        snprintf(want, sizeof want, "%.17g", edges[i]);
        assert_string_equal(got, want);
    }
    const int64_t ints[] = {0, -1, 1, INT64_MIN, INT64_MAX, 1234567};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        rung_fmt_i64(got, ints[i]);
        snprintf(want, sizeof want, "%lld", (long long)ints[i]);
        assert_string_equal(got, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_table),
        cmocka_unit_test(test_jsonv_reports_path),
        cmocka_unit_test(test_time_format),
        cmocka_unit_test(test_splitmix_reference),
        cmocka_unit_test(test_splitmix_forms_agree),
        cmocka_unit_test(test_nonfinite_format),
        cmocka_unit_test(test_nonfinite_parse),
        cmocka_unit_test(test_nonfinite_json),
        cmocka_unit_test(test_ct_equal),
        cmocka_unit_test(test_error_json),
        cmocka_unit_test(test_utf8_truncate),
        cmocka_unit_test(test_utf8_char_len),
        cmocka_unit_test(test_secret_tokens),
        cmocka_unit_test(test_fmtnum_matches_printf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
