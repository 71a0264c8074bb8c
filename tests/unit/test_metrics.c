/* Unit tests of what GET /metrics reads: the core's event counters (leases
 * granted, taken back and expired; retries by reason), its queue and worker
 * counts, and stats.c's histograms and label escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "sampler.h"
#include "spec.h"
#include "stats.h"

#define LEASE_MS 1000
#define TOKEN_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TOKEN_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define TOKEN_C "cccccccccccccccccccccccccccccccc"

/* An experiment of n trials (configs added as the proposer would). */
static Experiment *add_experiment(Core *core, int n, int max_failures)
{
    json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:{s:{s:s, s:f, s:f}}, s:{s:s}}", "metric", "loss",
                          "mode", "min", "num_samples", n, "max_failures", max_failures,
                          "search_space", "x", "type", "uniform", "low", 0.0, "high", 1.0,
                          "trainable", "type", "external");
    assert_non_null(j);
    Spec spec;
    RungError err;
    rung_error_clear(&err);
    if (spec_parse(j, 42, &spec, &err) != 0)
        fail_msg("spec rejected: %s", err.message);
    json_decref(j);
    Experiment *e = core_experiment_add(core, &spec, 1000);
    for (int64_t k = 0; k < e->spec.total_trials; k++)
        core_trial_add(core, e, sampler_config(e->spec.space, &e->spec.searcher, k), 1000);
    core_changes_clear(core);
    return e;
}

static Trial *lease(Core *core, Worker *w, const char *token, int64_t now)
{
    LeaseOffer o;
    memset(&o, 0, sizeof o);
    o.cpus = 1;
    o.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL);
    return core_lease(core, w, &o, token, now);
}

static void test_counters_count_each_event_once(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *a = add_experiment(core, 3, 1); /* retried once */
    Experiment *b = add_experiment(core, 1, 0); /* never retried */
    Worker *w = core_worker_add(core, "w", "host", json_array(), 8, 1000);
    const CoreCounters *c = core_counters(core);
    assert_int_equal(c->leases_granted, 0);
    assert_int_equal(core_queue_len(core), 4);

    Trial *lost = lease(core, w, TOKEN_A, 2000);
    Trial *failing = lease(core, w, TOKEN_B, 2000);
    Trial *back = lease(core, w, TOKEN_C, 2000);
    assert_int_equal(c->leases_granted, 3);
    assert_int_equal(core_queue_len(core), 1);
    assert_ptr_equal(failing->exp, b); /* fair share: a, b, a */

    /* A reply that never arrived: taken back once; a second try changes nothing. */
    assert_true(core_unlease(core, back, TOKEN_C, 2100));
    assert_false(core_unlease(core, back, TOKEN_C, 2100));
    assert_int_equal(c->leases_undelivered, 1);
    assert_int_equal(core_queue_len(core), 2);

    /* b's failure is final (max_failures 0): no retry counted. */
    RungError err;
    assert_int_equal(core_finish(core, failing, TOKEN_B, false, "boom", 2200, &err), 0);
    assert_int_equal(failing->state, TRIAL_FAILED);
    for (int r = 0; r < RETRY__COUNT; r++)
        assert_int_equal(c->retries[r], 0);

    /* lost's lease runs out: expired once, retried as worker_lost. */
    assert_int_equal(core_expire_leases(core, 2000 + LEASE_MS), 1);
    assert_int_equal(core_expire_leases(core, 2000 + LEASE_MS), 0);
    assert_int_equal(c->leases_expired, 1);
    assert_int_equal(c->retries[RETRY_WORKER_LOST], 1);
    assert_int_equal(lost->attempt, 2);

    /* A failed finish with an attempt left: retried as failed. */
    assert_ptr_equal(lease(core, w, TOKEN_A, 3500), lost); /* retries go first */
    Trial *again = lease(core, w, TOKEN_C, 3500);
    assert_ptr_equal(again, back);
    assert_int_equal(again->attempt, 1);
    assert_int_equal(core_finish(core, again, TOKEN_C, false, "oops", 3600, &err), 0);
    assert_int_equal(c->retries[RETRY_FAILED], 1);
    assert_int_equal(again->state, TRIAL_PENDING);

    /* The user's retry-failed of b. */
    int64_t n = 0;
    assert_int_equal(core_retry_failed(core, b, 3700, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(c->retries[RETRY_USER], 1);
    assert_int_equal(c->retries[RETRY_FAILED], 1);
    assert_int_equal(c->retries[RETRY_WORKER_LOST], 1);
    assert_int_equal(c->leases_granted, 5);
    assert_int_equal(c->leases_expired, 1);

    /* The line: a paused experiment's trials wait for their user, not workers. */
    assert_int_equal(core_queue_len(core), 3);
    assert_int_equal(core_pause(core, a, false, 3800, &err), 0);
    assert_int_equal(core_queue_len(core), 1);

    /* The engine puts counters back after a failed write. */
    CoreCounters saved = *c;
    saved.leases_granted = 99;
    core_set_counters(core, &saved);
    assert_int_equal(core_counters(core)->leases_granted, 99);
    assert_string_equal(retry_reason_name(RETRY_WORKER_LOST), "worker_lost");
    core_free(core);
}

static void test_worker_counts(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Worker *w1 = core_worker_add(core, "a", "host", json_array(), 8, 1000);
    core_worker_add(core, "b", "host", json_array(), 8, 1000);
    int64_t alive, gone;
    core_worker_counts(core, 1000 + LEASE_MS, &alive, &gone);
    assert_int_equal(alive, 2);
    assert_int_equal(gone, 0);
    core_worker_seen(core, w1, 2000);
    core_worker_counts(core, 2000 + LEASE_MS, &alive, &gone);
    assert_int_equal(alive, 1);
    assert_int_equal(gone, 1);
    core_free(core);
}

/* What f writes to a memory stream. */
static char *written(void (*f)(FILE *, const void *), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    f(out, arg);
    fclose(out);
    return buf;
}

static void label(FILE *out, const void *arg)
{
    stats_write_label_value(out, arg);
}

static void test_label_values_are_escaped(void **state)
{
    (void)state;
    char *s = written(label, "a\"b\\c\nd é");
    assert_string_equal(s, "a\\\"b\\\\c\\nd é");
    free(s);
    s = written(label, "");
    assert_string_equal(s, "");
    free(s);
}

static void histogram(FILE *out, const void *arg)
{
    stats_write_histogram(out, "x_seconds", "help.", arg);
}

static void test_histogram_buckets_are_cumulative(void **state)
{
    (void)state;
    static Histogram hist;                    /* zeroed atomics */
    stats_observe(&hist, 40 * 1000);          /* 40 µs: the first bucket */
    stats_observe(&hist, 1000 * 1000 * 1000); /* exactly 1 s: le="1" (upper bounds are inclusive) */
    stats_observe(&hist, 1500LL * 1000 * 1000);      /* 1.5 s */
    stats_observe(&hist, 20LL * 1000 * 1000 * 1000); /* past the last bound */
    char *s = written(histogram, &hist);
    assert_non_null(strstr(s, "# HELP x_seconds help.\n# TYPE x_seconds histogram\n"));
    assert_non_null(strstr(s, "x_seconds_bucket{le=\"5e-05\"} 1\n"));
    assert_non_null(strstr(s, "x_seconds_bucket{le=\"0.5\"} 1\n"));
    assert_non_null(strstr(s, "x_seconds_bucket{le=\"1\"} 2\n"));
    assert_non_null(strstr(s, "x_seconds_bucket{le=\"2.5\"} 3\n"));
    assert_non_null(strstr(s, "x_seconds_bucket{le=\"10\"} 3\n"));
    assert_non_null(strstr(s, "x_seconds_bucket{le=\"+Inf\"} 4\n"));
    assert_non_null(strstr(s, "x_seconds_count 4\n"));
    assert_non_null(strstr(s, "x_seconds_sum 22.500040000\n"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_count_each_event_once),
        cmocka_unit_test(test_worker_counts),
        cmocka_unit_test(test_label_values_are_escaped),
        cmocka_unit_test(test_histogram_buckets_are_cumulative),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
