/* Unit tests of common/: the error table and the strict JSON readers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "clock.h"
#include "error.h"
#include "jsonv.h"

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
                               RUNG_E_INVALID_SPEC, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(jsonv_int(obj, "scheduler", "r", JSONV_REQUIRED, 0, 10, &n,
                               RUNG_E_INVALID_SPEC, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "scheduler.r");
    assert_non_null(strstr(err.message, "scheduler.r"));
    assert_int_equal(jsonv_int(obj, "", "missing", JSONV_REQUIRED, 0, 10, &n,
                               RUNG_E_INVALID_SPEC, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "missing");
    const char *allowed[] = {"name", "n", "r", NULL};
    assert_int_equal(jsonv_only_keys(obj, "x", allowed, RUNG_E_INVALID_SPEC, &err),
                     RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "x.b");
    double d = 0;
    assert_int_equal(jsonv_number(obj, "", "name", JSONV_REQUIRED, &d, RUNG_E_INVALID_SPEC,
                                  &err), RUNG_E_INVALID_SPEC);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_table),
        cmocka_unit_test(test_jsonv_reports_path),
        cmocka_unit_test(test_time_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
