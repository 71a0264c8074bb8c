/* Unit tests of worker/spare.c (what counts as foreign use, the idle
 * window, the states a heartbeat shows, when a trial yields), worker/hours.c
 * (the --hours parser, its errors, the minutes of the week, the next
 * allowed time in zones without daylight saving) and the spare GPUs of
 * worker/slots.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hours.h"
#include "slots.h"
#include "spare.h"

static const SpareParams P = {.idle_ms = 60000, .foreign_mem_mb = 256, .foreign_util = 0.10};

/* ---- spare.c ---- */

static void test_foreign_is_outside_the_trials_groups(void **state)
{
    (void)state;
    const int64_t pgids[] = {100, 200};
    SpareProc procs[] = {
        {.pid = 100, .pgid = 100, .memory_mb = 4000, .util = 0.9},  /* a trial's leader */
        {.pid = 101, .pgid = 200, .memory_mb = 3000, .util = 0.05}, /* another trial's child */
        {.pid = 300, .pgid = 300, .memory_mb = 200, .util = 0.04},  /* someone's notebook */
        {.pid = 400, .pgid = 400, .memory_mb = 20, .util = -1},     /* no utilization sample */
    };
    int64_t mb;
    double util;
    spare_foreign(&P, procs, 4, pgids, 2, true, 0.99, true, &mb, &util);
    assert_int_equal(mb, 220);
    assert_true(util > 0.0399 && util < 0.0401);
    assert_false(spare_crosses(&P, mb, util));
    /* No trial runs: every process is foreign. */
    spare_foreign(&P, procs, 4, NULL, 0, true, 0.99, false, &mb, &util);
    assert_int_equal(mb, 7220);
    assert_true(util >= 0.99 && util <= 1.0); /* capped at the whole GPU */
    assert_true(spare_crosses(&P, mb, util));
}

static void test_foreign_thresholds_are_inclusive(void **state)
{
    (void)state;
    assert_false(spare_crosses(&P, 255, 0.0999));
    assert_true(spare_crosses(&P, 256, 0));
    assert_true(spare_crosses(&P, 0, 0.10));
    SpareParams loose = {.idle_ms = 1000, .foreign_mem_mb = 1, .foreign_util = 1.0};
    assert_true(spare_crosses(&loose, 1, 0));
    assert_false(spare_crosses(&loose, 0, 0.99));
}

static void test_foreign_unknown_memory_and_groups(void **state)
{
    (void)state;
    const int64_t pgids[] = {100};
    /* Memory NVML does not tell counts as the threshold: it may be anything. */
    SpareProc hidden = {.pid = 7, .pgid = 7, .memory_mb = -1, .util = -1};
    int64_t mb;
    double util;
    spare_foreign(&P, &hidden, 1, pgids, 1, false, 0, true, &mb, &util);
    assert_int_equal(mb, 256);
    /* A process whose group cannot be read counts from its second sample on. */
    SpareProc gone = {.pid = 8, .pgid = -1, .memory_mb = 5000, .util = 0.5};
    spare_foreign(&P, &gone, 1, pgids, 1, true, 0, true, &mb, &util);
    assert_int_equal(mb, 0);
    assert_true(util == 0);
    gone.unknown_before = true;
    spare_foreign(&P, &gone, 1, pgids, 1, true, 0, true, &mb, &util);
    assert_int_equal(mb, 5000);
    assert_true(util == 0.5);
    assert_false(spare_is_trial_process(-1, pgids, 1));
    assert_false(spare_is_trial_process(0, pgids, 1));
    assert_true(spare_is_trial_process(100, pgids, 1));
}

static void test_foreign_device_util_without_per_process_figures(void **state)
{
    (void)state;
    int64_t mb;
    double util;
    /* Nobody's process listed and no per-process figures: the GPU's own use
     * is foreign when no trial holds it ... */
    spare_foreign(&P, NULL, 0, NULL, 0, false, 0.5, false, &mb, &util);
    assert_int_equal(mb, 0);
    assert_true(util == 0.5);
    /* ... and cannot be told from the trial's when one does. */
    spare_foreign(&P, NULL, 0, NULL, 0, false, 0.5, true, &mb, &util);
    assert_true(util == 0);
    /* With per-process figures, an idle GPU is idle. */
    spare_foreign(&P, NULL, 0, NULL, 0, true, 0.5, false, &mb, &util);
    assert_true(util == 0);
}

static void test_spare_window(void **state)
{
    (void)state;
    SpareGpu g;
    spare_init(&g);
    /* What came before the worker started is not known: spare at once. */
    spare_sample(&g, &P, 1000, 0, 0);
    assert_int_equal(spare_state(&g, &P, 1000, false), SPARE_SPARE);
    assert_int_equal(spare_wait_ms(&g, &P, 1000), 0);
    assert_false(spare_must_yield(&g));
    /* Someone starts a job. */
    spare_sample(&g, &P, 1500, 300, 0);
    assert_int_equal(spare_state(&g, &P, 1500, false), SPARE_BUSY);
    assert_int_equal(spare_state(&g, &P, 1500, true), SPARE_TRIAL);
    assert_true(spare_must_yield(&g));
    assert_int_equal(spare_wait_ms(&g, &P, 1500), -1);
    assert_int_equal(g.foreign_mb, 300);
    /* Its last sample over the thresholds starts the idle window. */
    spare_sample(&g, &P, 2000, 0, 0.5);
    spare_sample(&g, &P, 2500, 100, 0.01);
    assert_false(spare_must_yield(&g));
    assert_int_equal(spare_state(&g, &P, 2500, false), SPARE_WAITING);
    assert_int_equal(spare_wait_ms(&g, &P, 2500), 59500);
    spare_sample(&g, &P, 61999, 0, 0);
    assert_int_equal(spare_state(&g, &P, 61999, false), SPARE_WAITING);
    assert_int_equal(spare_wait_ms(&g, &P, 61999), 1);
    spare_sample(&g, &P, 62000, 0, 0);
    assert_int_equal(spare_state(&g, &P, 62000, false), SPARE_SPARE);
    /* A blip restarts it. */
    spare_sample(&g, &P, 70000, 0, 0.2);
    spare_sample(&g, &P, 70500, 0, 0);
    assert_int_equal(spare_state(&g, &P, 100000, false), SPARE_WAITING);
    assert_int_equal(spare_state(&g, &P, 130500, false), SPARE_SPARE);
}

static void test_spare_state_names(void **state)
{
    (void)state;
    assert_string_equal(spare_state_name(SPARE_SPARE), "spare");
    assert_string_equal(spare_state_name(SPARE_TRIAL), "trial");
    assert_string_equal(spare_state_name(SPARE_BUSY), "busy");
    assert_string_equal(spare_state_name(SPARE_WAITING), "waiting");
    assert_string_equal(spare_state_name((SpareState)9), "unknown");
}

/* ---- slots.c: only spare GPUs are offered ---- */

static void test_slots_offer_only_spare_gpus(void **state)
{
    (void)state;
    Slots s;
    const int gpus[] = {0, 1, 2};
    slots_init(&s, gpus, 3, 0);
    int free_gpus[SLOTS_MAX_GPUS];
    assert_true(slots_set_used(&s, 1, true));
    assert_false(slots_set_used(&s, 1, true)); /* no change */
    assert_false(slots_set_used(&s, 7, true)); /* not offered */
    assert_int_equal(slots_n_used(&s), 1);
    assert_int_equal(slots_free_gpus(&s, free_gpus, SLOTS_MAX_GPUS), 2);
    assert_int_equal(free_gpus[0], 0);
    assert_int_equal(free_gpus[1], 2);
    const int64_t take[] = {0, 2};
    assert_int_equal(slots_take(&s, take, 2, 0), 0);
    assert_false(slots_any_free(&s)); /* GPU 1 is free but not spare */
    assert_true(slots_set_used(&s, 1, false));
    assert_true(slots_any_free(&s));
    assert_int_equal(slots_free_gpus(&s, free_gpus, SLOTS_MAX_GPUS), 1);
    assert_int_equal(free_gpus[0], 1);
    /* A held GPU that someone else starts using stays held. */
    assert_true(slots_set_used(&s, 0, true));
    const int64_t again[] = {0};
    assert_int_equal(slots_take(&s, again, 1, 0), -1);
}

/* ---- hours.c ---- */

static int minute(int day, int hh, int mm)
{
    return day * 24 * 60 + hh * 60 + mm;
}

enum { MON, TUE, WED, THU, FRI, SAT, SUN };

static void parse_ok(const char *text, Hours *h)
{
    char why[256] = "";
    int rc = hours_parse(text, h, why, sizeof why);
    if (rc != 0)
        fail_msg("'%s': %s", text, why);
}

static void test_hours_the_issue_example(void **state)
{
    (void)state;
    Hours h;
    parse_ok("Mon-Fri 19:00-07:00,Sat-Sun", &h);
    /* Everything but weekdays 07:00 to 19:00. */
    for (int d = MON; d <= SUN; d++)
        for (int m = 0; m < 24 * 60; m++) {
            bool office = d <= FRI && m >= 7 * 60 && m < 19 * 60;
            if (hours_allowed(&h, d * 24 * 60 + m) == office)
                fail_msg("day %d minute %d", d, m);
        }
    assert_int_equal(hours_wait(&h, minute(MON, 6, 59)), 0);
    assert_int_equal(hours_wait(&h, minute(MON, 7, 0)), 12 * 60);
    assert_int_equal(hours_wait(&h, minute(WED, 18, 59)), 1);
    assert_int_equal(hours_left(&h, minute(MON, 0, 0)), 7 * 60);
    assert_int_equal(hours_left(&h, minute(MON, 12, 0)), 0);
    /* Friday 19:00 runs through the weekend into Monday 07:00. */
    assert_int_equal(hours_left(&h, minute(FRI, 19, 0)), (5 + 48 + 7) * 60);
    /* Sunday wraps into Monday. */
    assert_int_equal(hours_left(&h, minute(SUN, 23, 0)), 8 * 60);
}

static void test_hours_forms(void **state)
{
    (void)state;
    Hours h;
    parse_ok("09:00-17:00", &h); /* every day */
    for (int d = MON; d <= SUN; d++) {
        assert_false(hours_allowed(&h, minute(d, 8, 59)));
        assert_true(hours_allowed(&h, minute(d, 9, 0)));
        assert_true(hours_allowed(&h, minute(d, 16, 59)));
        assert_false(hours_allowed(&h, minute(d, 17, 0)));
    }
    parse_ok("fri-MON", &h); /* a wrapping range of whole days, any case */
    assert_true(hours_allowed(&h, minute(FRI, 0, 0)));
    assert_true(hours_allowed(&h, minute(MON, 23, 59)));
    assert_false(hours_allowed(&h, minute(TUE, 0, 0)));
    assert_false(hours_allowed(&h, minute(THU, 23, 59)));
    parse_ok("Wed 22:00-24:00, Thu 00:00-02:00", &h); /* spaces around items */
    assert_int_equal(hours_left(&h, minute(WED, 22, 0)), 4 * 60);
    assert_false(hours_allowed(&h, minute(THU, 22, 0)));
    parse_ok("Sun", &h);
    assert_int_equal(hours_wait(&h, minute(MON, 0, 0)), 6 * 24 * 60);
    assert_int_equal(hours_left(&h, minute(SUN, 0, 0)), 24 * 60);
    parse_ok("00:00-24:00", &h);
    assert_int_equal(hours_left(&h, 0), HOURS_WEEK_MINUTES);
    parse_ok("Mon-Sun", &h);
    assert_int_equal(hours_left(&h, 1234), HOURS_WEEK_MINUTES);
    /* Overlapping items add up. */
    parse_ok("Tue 10:00-12:00,Tue 11:00-13:00", &h);
    assert_int_equal(hours_left(&h, minute(TUE, 10, 0)), 3 * 60);
}

static void parse_bad(const char *text, const char *want)
{
    Hours h;
    char why[256] = "";
    assert_int_equal(hours_parse(text, &h, why, sizeof why), -1);
    if (strstr(why, want) == NULL)
        fail_msg("'%s': got '%s', want it to hold '%s'", text, why, want);
}

static void test_hours_errors_name_the_part(void **state)
{
    (void)state;
    parse_bad("Mon-Fry 19:00-07:00", "'Mon-Fry 19:00-07:00': no day 'Fry'");
    parse_bad("Mon-Fri 19:00-07:00,Sat-Sum", "'Sat-Sum': no day 'Sum'");
    parse_bad("Mon 25:00-07:00", "'25:00' is not a time of day");
    parse_bad("Mon 19:60-07:00", "'19:60' is not a time of day");
    parse_bad("Mon 24:00-07:00", "'24:00' is not a time of day");
    parse_bad("Mon 19:00-24:01", "'24:01' is not a time of day");
    parse_bad("Mon 7:00-9:00", "'7:00' is not a time HH:MM");
    parse_bad("Mon 19:00", "'Mon 19:00': '19:00' is not a range of times");
    parse_bad("Mon 19:00-19:00", "'19:00-19:00' is empty");
    parse_bad("Mon 10:00-11:00 12:00-13:00", "more than days and one range of times");
    parse_bad("Mon,,Tue", "an empty item");
    parse_bad("Mon,", "an empty item");
    parse_bad("", "an empty item");
    parse_bad("Monday", "no day 'Monday'");
    parse_bad("Mon\t19:00-07:00", "not a printable ASCII character");
    char long_text[HOURS_MAX_TEXT + 2];
    memset(long_text, 'M', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    parse_bad(long_text, "longer than 512 bytes");
}

/* A zone without daylight saving; tm of a date (2024-01-01 was a Monday). */
static time_t local(int year, int mon, int mday, int hh, int mm, int ss)
{
    struct tm tm = {.tm_year = year - 1900,
                    .tm_mon = mon - 1,
                    .tm_mday = mday,
                    .tm_hour = hh,
                    .tm_min = mm,
                    .tm_sec = ss,
                    .tm_isdst = -1};
    return mktime(&tm);
}

static void check_next(const char *zone)
{
    setenv("TZ", zone, 1);
    tzset();
    Hours h;
    parse_ok("Mon-Fri 19:00-07:00,Sat-Sun", &h);
    /* Monday 2024-01-01 12:34:56: next is 19:00 the same day. */
    time_t now = local(2024, 1, 1, 12, 34, 56);
    assert_int_equal(hours_next_allowed(&h, now), local(2024, 1, 1, 19, 0, 0));
    assert_int_equal(hours_end(&h, now), 0);
    /* Allowed now: now itself; the stretch ends at 07:00 the next day. */
    now = local(2024, 1, 2, 3, 0, 30);
    assert_int_equal(hours_next_allowed(&h, now), now);
    assert_int_equal(hours_end(&h, now), local(2024, 1, 2, 7, 0, 0));
    /* Friday night into Monday morning, across the month's end. */
    now = local(2024, 1, 26, 20, 0, 0);
    assert_int_equal(hours_end(&h, now), local(2024, 1, 29, 7, 0, 0));
    /* Sunday 2024-12-29 through the year's end: Tuesday 2024-12-31 19:00. */
    parse_ok("Tue 19:00-20:00", &h);
    now = local(2024, 12, 29, 10, 0, 0);
    assert_int_equal(hours_next_allowed(&h, now), local(2024, 12, 31, 19, 0, 0));
    assert_int_equal(hours_next_allowed(&h, now) - now, (2 * 24 + 9) * 3600);
    /* A whole week allowed never ends. */
    parse_ok("Mon-Sun", &h);
    assert_int_equal(hours_end(&h, now), 0);
    assert_int_equal(hours_next_allowed(&h, now), now);
}

static void test_hours_local_time_without_dst(void **state)
{
    (void)state;
    check_next("UTC0");
    check_next("IST-5:30"); /* half-hour offset, east */
    check_next("XYZ+9");    /* west */
    /* The minute of the week reads local time, Monday first. */
    setenv("TZ", "UTC0", 1);
    tzset();
    time_t sunday = local(2024, 1, 7, 23, 59, 0);
    struct tm tm;
    localtime_r(&sunday, &tm);
    assert_int_equal(hours_week_minute(&tm), HOURS_WEEK_MINUTES - 1);
    time_t t = 1704067200; /* 2024-01-01T00:00:00Z, a Monday */
    gmtime_r(&t, &tm);
    assert_int_equal(hours_week_minute(&tm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foreign_is_outside_the_trials_groups),
        cmocka_unit_test(test_foreign_thresholds_are_inclusive),
        cmocka_unit_test(test_foreign_unknown_memory_and_groups),
        cmocka_unit_test(test_foreign_device_util_without_per_process_figures),
        cmocka_unit_test(test_spare_window),
        cmocka_unit_test(test_spare_state_names),
        cmocka_unit_test(test_slots_offer_only_spare_gpus),
        cmocka_unit_test(test_hours_the_issue_example),
        cmocka_unit_test(test_hours_forms),
        cmocka_unit_test(test_hours_errors_name_the_part),
        cmocka_unit_test(test_hours_local_time_without_dst),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
