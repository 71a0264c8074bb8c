/* Unit tests of server/flatjson.c: what it accepts, jansson reads as the
 * same object (members, kinds, values; the last of duplicate keys), and
 * what it refuses is either invalid JSON or left to jansson. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <jansson.h>
#include <string.h>

#include "flatjson.h"

/* text is read by flatjson as jansson reads it: every key jansson holds is
 * found with the same value. */
static void check_same(const char *text)
{
    FlatMember m[FLATJSON_MAX];
    int n = flatjson_read(text, m, FLATJSON_MAX);
    assert_true(n >= 0);
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    assert_true(json_is_object(j));
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        const FlatMember *f = flatjson_get(m, n, key);
        assert_non_null(f);
        switch (f->kind) {
        case FLAT_STRING:
            assert_true(json_is_string(v));
            assert_int_equal(f->len, json_string_length(v));
            assert_memory_equal(f->text, json_string_value(v), f->len);
            break;
        case FLAT_INT:
            assert_true(json_is_integer(v));
            assert_true(f->i == json_integer_value(v));
            break;
        case FLAT_REAL:
            assert_true(json_is_real(v));
            assert_memory_equal(&f->r, &(double){json_real_value(v)}, sizeof f->r);
            break;
        case FLAT_TRUE:
            assert_true(json_is_true(v));
            break;
        case FLAT_FALSE:
            assert_true(json_is_false(v));
            break;
        case FLAT_NULL:
            assert_true(json_is_null(v));
            break;
        }
    }
    json_decref(j);
}

static void test_accepts_flat_objects(void **state)
{
    (void)state;
    check_same("{}");
    check_same(" { } ");
    check_same("{\"lr\":0.0034985646263034236,\"momentum\":0.6351398395482228,\"hidden\":256}");
    check_same("{\"a\": -0, \"b\": -0.0, \"c\": 1e5, \"d\": 1E-5, \"e\": 2.5e+3, \"f\": 0}");
    check_same("{\"opt.name\":\"adam\",\"x\":true,\"y\":false,\"z\":null,\"\":\"\"}");
    check_same("{\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\", \"n\": 9223372036854775807}");
    check_same("{\"a\":1,\"a\":2.5}"); /* the last one wins, as in jansson */
    check_same("{\"loss\":\"NaN\",\"acc\":\"-Infinity\"}");
    check_same("\t{\n\"a\"\r: 1 ,\"b\":2}\n");
    FlatMember m[FLATJSON_MAX];
    int n = flatjson_read("{\"a\":1,\"a\":2.5}", m, FLATJSON_MAX);
    assert_int_equal(n, 2);
    assert_int_equal(flatjson_get(m, n, "a")->kind, FLAT_REAL);
    assert_null(flatjson_get(m, n, "b"));
}

static void test_refuses_the_rest(void **state)
{
    (void)state;
    const char *refused[] = {
        "",
        "null",
        "[1]",
        "1",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":1e}",
        "{\"a\":+1}",
        "{\"a\":tru}",
        "{\"a\":truex}",
        "{\"a\":1} x",
        "{a:1}",
        "{\"a\":[1]}",
        "{\"a\":{\"b\":1}}",
        "{\"a\":\"x\\\"y\"}",
        "{\"a\\u0041\":1}",
        "{\"a\":\"\x01\"}",
        "{\"a\":\"\xc3\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":1e999}",
        "{\"a\":99999999999999999999}",
        "{\"a\":1e-999}",
    };
    FlatMember m[FLATJSON_MAX];
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (flatjson_read(refused[i], m, FLATJSON_MAX) != -1)
            fail_msg("accepted: %s", refused[i]);
    }
    /* More members than room: refused, not cut. */
    assert_int_equal(flatjson_read("{\"a\":1,\"b\":2,\"c\":3}", m, 2), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_flat_objects),
        cmocka_unit_test(test_refuses_the_rest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
