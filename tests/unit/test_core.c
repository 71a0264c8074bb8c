/* Unit tests of server/spec.c and the Core (server/core*.c, sched_*.c):
 * the spec's validation and the trial state machine, driven with explicit
 * times and tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core.h"
#include "core_load.h"
#include "spec.h"

#define LEASE_MS 1000

static Experiment *add_experiment(Core *core, const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    assert_non_null(j);
    Spec spec;
    RungError err;
    rung_error_clear(&err);
    /* The tests drive the workers themselves (docs/api.md, "trainable"). */
    if (json_object_get(j, "trainable") == NULL)
        json_object_set_new(j, "trainable", json_pack("{s:s}", "type", "external"));
    int rc = spec_parse(j, 42, &spec, &err);
    if (rc != 0)
        fail_msg("spec rejected: %s", err.message);
    json_decref(j);
    Experiment *e = core_experiment_add(core, &spec, 1000);
    /* The proposer's part, done inline: every trial's config. */
    for (int64_t n = 0; n < e->spec.total_trials; n++)
        core_trial_add(core, e, sampler_config(e->spec.space, &e->spec.searcher, n), 1000);
    core_changes_clear(core);
    return e;
}

static const char *const SIMPLE =
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 3, \"max_failures\": 1,"
    " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
    " \"trainable\": {\"type\": \"external\"}}";

static Worker *add_worker(Core *core)
{
    return core_worker_add(core, "w", "host", json_array(), 8, 1000);
}

static LeaseOffer cpus(int64_t n)
{
    LeaseOffer o;
    memset(&o, 0, sizeof o);
    o.cpus = n;
    o.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL) |
                   SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_COMMAND) |
                   SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_BUILTIN);
    return o;
}

static json_t *metrics(double loss)
{
    return json_pack("{s:f}", "loss", loss);
}

/* Leases and reports trial t of the lease, returning it. */
static Trial *lease_one(Core *core, Worker *w, int64_t now)
{
    LeaseOffer offer = cpus(1);
    return core_lease(core, w, &offer, "00000000000000000000000000000001", now);
}

static void test_fair_share_and_priority_order(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *a = add_experiment(core, SIMPLE);
    Experiment *b = add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    /* Equal running counts: the older first; then the one with fewer. */
    Trial *t1 = lease_one(core, w, 2000);
    Trial *t2 = lease_one(core, w, 2000);
    assert_ptr_equal(t1->exp, a);
    assert_ptr_equal(t2->exp, b);
    /* A higher priority goes first whatever runs. */
    Experiment *c = add_experiment(core,
                                   "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
                                   " \"priority\": 5, \"search_space\": {\"x\": 1}}");
    assert_ptr_equal(lease_one(core, w, 2000)->exp, c);
    assert_ptr_equal(lease_one(core, w, 2000)->exp, c);
    /* c has nothing pending now: a and b share by running count / share. */
    RungError err;
    json_t *patch = json_pack("{s:f}", "share", 3.0);
    assert_int_equal(core_patch(core, b, patch, 2000, &err), 0);
    json_decref(patch);
    assert_ptr_equal(lease_one(core, w, 2000)->exp, b); /* 1/3 < 1/1 */
    core_free(core);
}

/* One slot freed at a time: running counts always tie (0), and the leases
 * given so far, weighted by share, decide; a late small experiment does not
 * wait for a large one. */
static void test_fair_share_over_time_with_one_slot(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *big = add_experiment(core, "{\"metric\": \"loss\", \"mode\": \"min\","
                                           " \"num_samples\": 200, \"search_space\": {\"x\": 1}}");
    Worker *w = add_worker(core);
    RungError err;
    for (int i = 0; i < 5; i++) { /* big runs alone for a while */
        Trial *t = lease_one(core, w, 2000);
        assert_ptr_equal(t->exp, big);
        assert_int_equal(core_finish(core, t, t->lease_token, true, NULL, 2000, &err), 0);
    }
    Experiment *small = add_experiment(core,
                                       "{\"metric\": \"loss\", \"mode\": \"min\", \"share\": 2,"
                                       " \"num_samples\": 6, \"search_space\": {\"x\": 1}}");
    char order[10] = {0};
    for (int i = 0; i < 9; i++) {
        Trial *t = lease_one(core, w, 3000);
        order[i] = t->exp == small ? 's' : 'b';
        assert_int_equal(core_finish(core, t, t->lease_token, true, NULL, 3000, &err), 0);
    }
    /* It joins at big's pass and, with twice the share, gets two of three. */
    assert_string_equal(order, "bssbssbss");
    core_free(core);
}

static void test_worker_selector_and_trainables(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, "{\"metric\": \"loss\", \"mode\": \"min\", \"search_space\": {\"x\": 1},"
                         " \"worker_selector\": {\"gpu\": \"a100\"}}");
    Worker *plain = add_worker(core);
    Worker *labeled = add_worker(core);
    core_worker_set_labels(core, labeled, json_pack("{s:s}", "gpu", "a100"));
    assert_null(lease_one(core, plain, 2000));
    LeaseOffer offer = cpus(1);
    offer.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_COMMAND); /* as rung-worker */
    assert_null(core_lease(core, labeled, &offer, "00000000000000000000000000000001", 2000));
    assert_non_null(lease_one(core, labeled, 2000));
    core_free(core);
}

static void test_metric_missing_and_max_failed_fail_the_experiment(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    RungError err;
    ReportAction a;
    for (int i = 0; i < 3; i++) {
        Trial *t = lease_one(core, w, 2000);
        json_t *m = json_pack("{s:f}", "val_loss", 0.5);
        assert_int_equal(core_report(core, t, t->lease_token, 1, m, 2001, &a, &err), 0);
        json_decref(m);
        assert_int_equal(core_finish(core, t, t->lease_token, true, NULL, 2002, &err), 0);
    }
    assert_int_equal(e->state, EXP_FAILED);
    assert_int_equal(e->ended_reason, END_METRIC_MISSING);
    assert_string_equal(e->error, "no trial reported metric 'loss'; trials reported: val_loss");

    Experiment *f = add_experiment(core,
                                   "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 9,"
                                   " \"max_failed_trials\": 2, \"search_space\": {\"x\": 1}}");
    for (int i = 0; i < 2; i++) {
        Trial *t = lease_one(core, w, 3000);
        assert_ptr_equal(t->exp, f);
        assert_int_equal(core_finish(core, t, t->lease_token, false,
                                     "exit status 1\nTraceback:\nModuleNotFoundError: no torch",
                                     3001, &err),
                         0);
    }
    assert_int_equal(f->state, EXP_FAILED);
    assert_int_equal(f->ended_reason, END_MAX_FAILED);
    assert_non_null(strstr(f->error, "in 2 of them: exit status 1: ModuleNotFoundError: no torch"));
    assert_int_equal(f->counts[TRIAL_CANCELED], 7); /* the pending ones */
    /* Retrying puts them back in line and the experiment runs again. */
    int64_t n;
    assert_int_equal(core_retry_failed(core, f, 4000, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(f->state, EXP_RUNNING);
    assert_int_equal(f->pending.head->attempt, 2);
    core_free(core);
}

static void test_pause_running_trials_and_resume(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    RungError err;
    ReportAction a;
    Trial *t = lease_one(core, w, 2000);
    json_t *m = metrics(0.5);
    assert_int_equal(core_report(core, t, t->lease_token, 1, m, 2001, &a, &err), 0);
    assert_int_equal(core_pause(core, e, true, 2002, &err), 0);
    assert_int_equal(e->state, EXP_PAUSED);
    assert_null(lease_one(core, w, 2003)); /* nothing is leased while paused */
    assert_int_equal(core_report(core, t, t->lease_token, 2, m, 2004, &a, &err), 0);
    assert_int_equal(a, ACTION_STOP);
    assert_int_equal(t->state, TRIAL_PAUSED);
    assert_true(t->user_paused);
    assert_int_equal(core_resume(core, e, 2005, &err), 0);
    Trial *again = lease_one(core, w, 2006);
    assert_ptr_equal(again, t); /* first in line, from its checkpoint */
    assert_int_equal(core_resume_step(t), 2);
    json_decref(m);
    core_free(core);
}

static void test_stop_rules_and_user_stop(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core,
                                   "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 5,"
                                   " \"stop\": {\"metric_threshold\": 0.1}, \"search_space\":"
                                   " {\"x\": 1}}");
    Worker *w = add_worker(core);
    RungError err;
    ReportAction a;
    Trial *t = lease_one(core, w, 2000);
    Trial *u = lease_one(core, w, 2000);
    assert_int_equal(core_stop_trial(core, u, 2001, &err), 0);
    json_t *m = metrics(0.5);
    assert_int_equal(core_report(core, u, u->lease_token, 1, m, 2002, &a, &err), 0);
    assert_int_equal(a, ACTION_STOP);
    assert_int_equal(u->state, TRIAL_STOPPED);
    assert_int_equal(u->stopped_by, BY_USER);
    json_decref(m);
    m = metrics(0.05);
    assert_int_equal(core_report(core, t, t->lease_token, 1, m, 2003, &a, &err), 0);
    assert_int_equal(a, ACTION_STOP);
    assert_int_equal(e->state, EXP_COMPLETED);
    assert_int_equal(e->ended_reason, END_THRESHOLD);
    assert_int_equal(t->stopped_by, BY_EXPERIMENT);
    json_decref(m);

    Experiment *b =
        add_experiment(core, "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 5,"
                             " \"stop\": {\"time_budget_s\": 2}, \"search_space\": {\"x\": 1}}");
    assert_int_equal(core_tick(core, 2999), 0);
    assert_int_equal(core_tick(core, 3000), 1);
    assert_int_equal(b->ended_reason, END_TIME_BUDGET);
    core_free(core);
}

static void test_spec_defaults_and_errors(void **state)
{
    (void)state;
    json_t *j = json_loads(SIMPLE, 0, NULL);
    Spec spec;
    RungError err;
    assert_int_equal(spec_parse(j, 7, &spec, &err), 0);
    assert_int_equal(spec.total_trials, 3);
    assert_int_equal(spec.searcher.seed, 7);
    assert_int_equal(spec.cpus, 1);
    assert_string_equal(json_string_value(
                            json_object_get(json_object_get(spec.json, "scheduler"), "type")),
                        "fifo");
    spec_close(&spec);
    json_decref(j);

    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"mode\": \"min\", \"search_space\": {}}", "metric"},
        {"{\"metric\": \"l\", \"mode\": \"median\", \"search_space\": {}}", "mode"},
        {"{\"metric\": \"l\", \"mode\": \"min\"}", "search_space"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {}, \"typo\": 1}", "typo"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {}, \"num_samples\": 0}",
         "num_samples"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {}, \"max_failures\": -1}",
         "max_failures"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {},"
         " \"scheduler\": {\"type\": \"nope\"}}",
         "scheduler.type"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {},"
         " \"resources_per_trial\": {\"gpu\": -1}}",
         "resources_per_trial.gpu"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {},"
         " \"trainable\": {\"type\": \"command\"}}",
         "trainable.argv"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {\"lr\": 1},"
         " \"trainable\": {\"type\": \"command\", \"argv\": [\"x\", \"--lr={lrr}\"]}}",
         "trainable.argv[1]"},
        {"{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {},"
         " \"trainable\": {\"type\": \"command\", \"argv\": [\"x\"], \"env\": {\"A\": 1}}}",
         "trainable.env.A"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = json_loads(bad[i].text, 0, NULL);
        assert_non_null(j);
        rung_error_clear(&err);
        assert_int_equal(spec_parse(j, 1, &spec, &err), RUNG_E_INVALID_SPEC);
        assert_string_equal(err.field, bad[i].field);
        assert_non_null(strstr(err.message, bad[i].field));
        json_decref(j);
    }
}

static void test_lease_report_finish_completes(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    assert_int_equal(e->counts[TRIAL_PENDING], 3);
    LeaseOffer offer = cpus(1);
    double values[3] = {0.5, 0.2, 0.9};
    for (int i = 0; i < 3; i++) {
        char token[CORE_TOKEN_LEN + 1];
        snprintf(token, sizeof token, "%032d", i);
        Trial *t = core_lease(core, w, &offer, token, 2000);
        assert_non_null(t);
        assert_int_equal(t->number, i);
        assert_int_equal(t->state, TRIAL_RUNNING);
        ReportAction a;
        RungError err;
        json_t *m = metrics(values[i]);
        assert_int_equal(core_report(core, t, token, 1, m, 2100, &a, &err), 0);
        json_decref(m);
        assert_int_equal(a, ACTION_CONTINUE);
        assert_int_equal(core_finish(core, t, token, true, NULL, 2200, &err), 0);
        assert_int_equal(t->state, TRIAL_COMPLETED);
    }
    assert_null(core_lease(core, w, &offer, "tok", 2300));
    assert_int_equal(e->state, EXP_COMPLETED);
    assert_int_equal(e->counts[TRIAL_COMPLETED], 3);
    BestRef best;
    core_experiment_best(e, &best);
    assert_true(best.has);
    assert_true(best.value == 0.2);
    CoreChanges c;
    core_changes(core, &c);
    assert_int_equal(c.n_reports, 3);
    /* Once written, what ended leaves memory: the trials and the
     * experiment are read from the store from now on, the totals stay. */
    int64_t first_id = best.trial_id;
    core_changes_clear(core);
    core_release(core);
    assert_null(core_trial(core, first_id));
    assert_null(core_experiment(core, 1));
    assert_int_equal(core_n_experiments(core), 0);
    int64_t counts[TRIAL__COUNT];
    core_trial_counts(core, counts);
    assert_int_equal(counts[TRIAL_COMPLETED], 3);
    assert_int_equal(core_exp_counts(core)[EXP_COMPLETED], 1);
    core_free(core);
}

static void test_repeated_report_same_answer_stored_once(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(1);
    const char *tok = "0123456789abcdef0123456789abcdef";
    Trial *t = core_lease(core, w, &offer, tok, 2000);
    ReportAction a1, a2;
    RungError err;
    json_t *m = metrics(0.3);
    assert_int_equal(core_report(core, t, tok, 5, m, 2100, &a1, &err), 0);
    assert_int_equal(core_report(core, t, tok, 5, m, 2200, &a2, &err), 0);
    assert_int_equal(a1, a2);
    CoreChanges c;
    core_changes(core, &c);
    assert_int_equal(c.n_reports, 1);
    /* A stale token is refused, naming the field. */
    assert_int_equal(core_report(core, t, "ffffffffffffffffffffffffffffffff", 6, m, 2300, &a1,
                                 &err),
                     RUNG_E_LEASE_LOST);
    assert_string_equal(err.field, "lease_token");
    json_decref(m);
    core_free(core);
}

/* A report's info (core_report_info): merged into the trial's, last value
 * per key, at most 64 keys; a report of info alone renews
 * the lease and stores no report; a wrong token is refused as a report's;
 * an ended trial's info no longer changes. */
#define INFO_KEYS 64 /* core_report.c's CORE_MAX_INFO_KEYS (docs/api.md, the trial's info) */
static void test_report_info_merged(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(1);
    const char *tok = "0123456789abcdef0123456789abcdef";
    Trial *t = core_lease(core, w, &offer, tok, 2000);
    ReportAction a;
    RungError err;
    json_t *info = json_pack("{s:s}", "phase", "warmup");
    assert_int_equal(core_report_info(core, t, tok, info, 2100, &a, &err), 0);
    assert_int_equal(a, ACTION_CONTINUE);
    assert_int_equal(t->lease_expires_ms, 2100 + LEASE_MS);
    json_decref(info);
    info = json_pack("{s:s, s:b}", "phase", "train", "done", 1);
    assert_int_equal(core_report_info(core, t, tok, info, 2200, &a, &err), 0);
    json_decref(info);
    json_t *want = json_pack("{s:s, s:b}", "phase", "train", "done", 1);
    assert_true(json_equal(t->info, want));
    json_decref(want);
    CoreChanges c;
    core_changes(core, &c);
    assert_int_equal(c.n_reports, 0); /* info alone is no report */

    info = json_object();
    for (int i = 0; i < INFO_KEYS; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        json_object_set_new(info, key, json_null());
    }
    assert_int_equal(core_report_info(core, t, tok, info, 2300, &a, &err), 0);
    json_decref(info);
    assert_int_equal(json_object_size(t->info), INFO_KEYS); /* the first 64 names */
    assert_string_equal(json_string_value(json_object_get(t->info, "phase")), "train");
    assert_null(json_object_get(t->info, "k62"));

    info = json_pack("{s:s}", "phase", "late");
    assert_int_equal(core_report_info(core, t, "ffffffffffffffffffffffffffffffff", info, 2400, &a,
                                      &err),
                     RUNG_E_LEASE_LOST);
    assert_int_equal(core_finish(core, t, tok, true, NULL, 2500, &err), 0);
    assert_int_equal(core_report_info(core, t, tok, info, 2600, &a, &err), 0);
    assert_int_equal(a, ACTION_STOP);
    assert_string_equal(json_string_value(json_object_get(t->info, "phase")), "train");
    json_decref(info);
    core_free(core);
}

/* A lost worker (its lease ran out) is retried as a new attempt apart
 * from max_failures, CORE_MAX_WORKER_LOSSES times; later losses count as
 * failures (docs/api.md, "The trial object"). */
static void test_expiry_retries_then_fails(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, SIMPLE); /* max_failures 1 */
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(1);
    Trial *t = core_lease(core, w, &offer, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 2000);
    int64_t id = t->id;
    assert_int_equal(core_expire_leases(core, 2000 + LEASE_MS - 1), 0);
    assert_int_equal(core_expire_leases(core, 2000 + LEASE_MS), 1);
    assert_int_equal(t->state, TRIAL_PENDING);
    assert_int_equal(t->attempt, 2);
    assert_int_equal(t->worker_losses, 1);
    assert_non_null(strstr(t->error, "worker lost"));
    /* The retry goes first, as the same trial. */
    Trial *again = core_lease(core, w, &offer, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 4000);
    assert_int_equal(again->id, id);
    ReportAction a;
    RungError err;
    json_t *m = metrics(1.0);
    assert_int_equal(core_report(core, t, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1, m, 4100, &a, &err),
                     RUNG_E_LEASE_LOST);
    json_decref(m);
    /* A heartbeat renews the lease; then silence loses it again. */
    json_t *stop = core_heartbeat(core, w, &id, 1, NULL, 4900);
    assert_int_equal(json_array_size(stop), 0);
    json_decref(stop);
    assert_int_equal(core_expire_leases(core, 5000), 0);
    assert_int_equal(core_expire_leases(core, 5900), 1);
    assert_int_equal(t->state, TRIAL_PENDING);
    assert_int_equal(t->worker_losses, 2);
    /* The third loss is still free; the fourth uses max_failures' one
     * retry; the fifth fails the trial. */
    int64_t now = 10000;
    for (int i = 3; i <= 5; i++) {
        assert_ptr_equal(core_lease(core, w, &offer, "cccccccccccccccccccccccccccccccc", now), t);
        assert_int_equal(core_expire_leases(core, now + LEASE_MS), 1);
        now += 10000;
    }
    assert_int_equal(t->worker_losses, CORE_MAX_WORKER_LOSSES);
    assert_int_equal(t->attempt, 5);
    assert_int_equal(t->state, TRIAL_FAILED);
    assert_int_equal(e->counts[TRIAL_FAILED], 1);
    assert_int_equal(core_counters(core)->retries[RETRY_WORKER_LOST], 4);
    core_free(core);
}

/* Every trial failed, fewer than max_failed_trials of them: the experiment
 * fails with the most frequent error instead of completing. */
static void test_all_trials_failed_fails_the_experiment(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, SIMPLE); /* 3 trials, max_failed_trials 5 */
    Worker *w = add_worker(core);
    RungError err;
    int64_t now = 2000;
    for (int i = 0; i < 6; i++, now += 10) { /* 3 trials, each retried once */
        Trial *t = lease_one(core, w, now);
        assert_non_null(t);
        const char *why = i < 5 ? "exit status 1\nTraceback:\nValueError: bad lr" : "killed";
        assert_int_equal(core_finish(core, t, t->lease_token, false, why, now + 1, &err), 0);
    }
    assert_int_equal(e->counts[TRIAL_FAILED], 3);
    assert_int_equal(e->state, EXP_FAILED);
    assert_int_equal(e->ended_reason, END_MAX_FAILED);
    assert_non_null(strstr(e->error, "all 3 trials failed"));
    assert_non_null(strstr(e->error, "in 2 of them: exit status 1: ValueError: bad lr"));
    /* One trial that completes is enough to complete. */
    Experiment *f = add_experiment(core, SIMPLE);
    for (int i = 0; i < 5; i++, now += 10) {
        Trial *t = lease_one(core, w, now);
        assert_ptr_equal(t->exp, f);
        if (i == 0) {
            json_t *m = metrics(0.5);
            ReportAction a;
            assert_int_equal(core_report(core, t, t->lease_token, 1, m, now, &a, &err), 0);
            json_decref(m);
        }
        assert_int_equal(core_finish(core, t, t->lease_token, i == 0, "exit status 1", now + 1,
                                     &err),
                         0);
    }
    assert_int_equal(f->state, EXP_COMPLETED);
    core_free(core);
}

static void test_nan_fails_without_retry(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(1);
    const char *tok = "cccccccccccccccccccccccccccccccc";
    Trial *t = core_lease(core, w, &offer, tok, 2000);
    json_t *m = json_pack("{s:s}", "loss", "NaN");
    ReportAction a;
    RungError err;
    assert_int_equal(core_report(core, t, tok, 3, m, 2100, &a, &err), 0);
    json_decref(m);
    assert_int_equal(a, ACTION_STOP);
    assert_int_equal(t->state, TRIAL_FAILED);
    assert_string_equal(t->error, "loss is NaN at step 3");
    /* The worker's finish after the stop changes nothing. */
    assert_int_equal(core_finish(core, t, tok, false, "killed", 2200, &err), 0);
    assert_int_equal(t->state, TRIAL_FAILED);
    assert_int_equal(t->attempt, 1);
    core_free(core);
}

static void test_finish_failed_retries_then_fails(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(1);
    RungError err;
    Trial *t = core_lease(core, w, &offer, "dddddddddddddddddddddddddddddddd", 2000);
    assert_int_equal(core_finish(core, t, "dddddddddddddddddddddddddddddddd", false, "exit 1", 2100,
                                 &err),
                     0);
    assert_int_equal(t->state, TRIAL_PENDING);
    assert_int_equal(t->attempt, 2);
    assert_ptr_equal(core_lease(core, w, &offer, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", 2200), t);
    assert_int_equal(core_finish(core, t, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", false, "exit 1", 2300,
                                 &err),
                     0);
    assert_int_equal(t->state, TRIAL_FAILED);
    assert_string_equal(t->error, "exit 1");
    /* Finishing again is idempotent. */
    assert_int_equal(core_finish(core, t, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", true, NULL, 2400,
                                 &err),
                     0);
    assert_int_equal(t->state, TRIAL_FAILED);
    core_free(core);
}

static void test_cancel_and_concurrency(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core,
                                   "{\"metric\": \"loss\", \"mode\": \"max\", \"num_samples\": 5,"
                                   " \"max_concurrent_trials\": 2, \"search_space\": {}}");
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(4);
    Trial *a = core_lease(core, w, &offer, "11111111111111111111111111111111", 2000);
    Trial *b = core_lease(core, w, &offer, "22222222222222222222222222222222", 2000);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(core_lease(core, w, &offer, "33333333333333333333333333333333", 2000));
    RungError err;
    assert_int_equal(core_cancel(core, e, 2100, &err), 0);
    assert_int_equal(e->state, EXP_CANCELED);
    assert_int_equal(e->counts[TRIAL_CANCELED], 3);
    ReportAction act;
    json_t *m = metrics(1.0);
    assert_int_equal(core_report(core, a, "11111111111111111111111111111111", 1, m, 2200, &act,
                                 &err),
                     0);
    json_decref(m);
    assert_int_equal(act, ACTION_STOP);
    assert_int_equal(a->state, TRIAL_CANCELED);
    int64_t id = b->id;
    json_t *stop = core_heartbeat(core, w, &id, 1, NULL, 2300);
    assert_int_equal(json_array_size(stop), 1);
    json_decref(stop);
    assert_int_equal(b->state, TRIAL_CANCELED);
    core_free(core);
}

static void test_resources_must_fit(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, "{\"metric\": \"loss\", \"mode\": \"min\", \"search_space\": {},"
                         " \"resources_per_trial\": {\"gpu\": 2, \"cpu\": 2}}");
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(4);
    offer.n_gpus = 1;
    offer.gpus[0] = 3;
    assert_null(core_lease(core, w, &offer, "44444444444444444444444444444444", 2000));
    offer.n_gpus = 3;
    offer.gpus[1] = 5;
    offer.gpus[2] = 6;
    Trial *t = core_lease(core, w, &offer, "44444444444444444444444444444444", 2000);
    assert_non_null(t);
    json_t *gpus = json_object_get(t->resources, "gpus");
    assert_int_equal(json_array_size(gpus), 2);
    assert_int_equal(json_integer_value(json_array_get(gpus, 0)), 3);
    assert_int_equal(json_integer_value(json_array_get(gpus, 1)), 5);
    core_free(core);
}

/* The scheduler's fields: defaults filled in, and errors naming the field. */
static void test_spec_scheduler(void **state)
{
    (void)state;
    static const struct {
        const char *sched;
        AshaType type;
        double max_t, grace, rf;
        int brackets;
    } good[] = {
        {"{\"type\": \"asha\"}", ASHA_ASHA, 100, 1, 4, 1},
        {"{\"type\": \"asha\", \"max_t\": 81, \"reduction_factor\": 3, \"brackets\": 5}", ASHA_ASHA,
         81, 1, 3, 5},
        {"{\"type\": \"hyperband\", \"max_t\": 81, \"reduction_factor\": 3}", ASHA_HYPERBAND, 81, 1,
         3, 5},
        {"{\"type\": \"asha\", \"max_t\": 1000, \"grace_period\": 1, \"reduction_factor\": 10,"
         " \"brackets\": 3}",
         ASHA_ASHA, 1000, 1, 10, 3},
        {"{\"type\": \"median\", \"time_attr\": \"epoch\"}", ASHA_MEDIAN, 100, 1, 4, 1},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"metric\": \"l\", \"mode\": \"max\", \"search_space\": {}, \"scheduler\": %s,"
                 " \"trainable\": {\"type\": \"external\"}}",
                 good[i].sched);
        json_t *j = json_loads(text, 0, NULL);
        Spec spec;
        RungError err;
        rung_error_clear(&err);
        if (spec_parse(j, 3, &spec, &err) != 0)
            fail_msg("%s: %s", good[i].sched, err.message);
        assert_int_equal(spec.sched.type, good[i].type);
        assert_true(spec.sched.maximize);
        assert_int_equal(spec.sched.seed, 3);
        json_t *echo = json_object_get(spec.json, "scheduler");
        if (good[i].type == ASHA_MEDIAN) {
            assert_int_equal(spec.sched.min_samples, 3);
            assert_string_equal(spec.time_attr, "epoch");
            assert_int_equal(json_integer_value(json_object_get(echo, "min_samples_required")), 3);
        } else {
            assert_true(spec.sched.max_t == good[i].max_t);
            assert_true(spec.sched.grace_period == good[i].grace);
            assert_true(spec.sched.rf == good[i].rf);
            assert_int_equal(spec.sched.brackets, good[i].brackets);
            assert_int_equal(json_integer_value(json_object_get(echo, "brackets")),
                             good[i].brackets);
            assert_int_equal(json_integer_value(json_object_get(echo, "max_t")),
                             (json_int_t)good[i].max_t);
            assert_string_equal(spec.time_attr, "step");
        }
        spec_close(&spec);
        json_decref(j);
    }

    static const struct {
        const char *sched, *field;
    } bad[] = {
        {"{\"type\": \"bohb\"}", "scheduler.type"},
        {"{\"type\": 3}", "scheduler.type"},
        {"{\"type\": \"asha\", \"reduction_factor\": 1}", "scheduler.reduction_factor"},
        {"{\"type\": \"asha\", \"reduction_factor\": 1.001}", "scheduler.reduction_factor"},
        {"{\"type\": \"asha\", \"grace_period\": 0}", "scheduler.grace_period"},
        {"{\"type\": \"asha\", \"max_t\": 3, \"grace_period\": 4}", "scheduler.max_t"},
        {"{\"type\": \"asha\", \"max_t\": 81, \"reduction_factor\": 3, \"brackets\": 6}",
         "scheduler.brackets"},
        {"{\"type\": \"asha\", \"brackets\": 0}", "scheduler.brackets"},
        {"{\"type\": \"asha\", \"promote\": \"yes\"}", "scheduler.promote"},
        {"{\"type\": \"asha\", \"max_t\": \"100\"}", "scheduler.max_t"},
        {"{\"type\": \"hyperband\", \"brackets\": 2}", "scheduler.brackets"},
        {"{\"type\": \"hyperband\", \"promote\": true}", "scheduler.promote"},
        {"{\"type\": \"median\", \"min_samples_required\": 0}", "scheduler.min_samples_required"},
        {"{\"type\": \"median\", \"max_t\": 10}", "scheduler.max_t"},
        {"{\"type\": \"fifo\", \"max_t\": 10}", "scheduler.max_t"},
        {"{\"type\": \"asha\", \"time_attr\": \"\"}", "scheduler.time_attr"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"metric\": \"l\", \"mode\": \"min\", \"search_space\": {}, \"scheduler\": %s}",
                 bad[i].sched);
        json_t *j = json_loads(text, 0, NULL);
        assert_non_null(j);
        Spec spec;
        RungError err;
        rung_error_clear(&err);
        if (spec_parse(j, 1, &spec, &err) != RUNG_E_INVALID_SPEC)
            fail_msg("accepted: %s", bad[i].sched);
        if (strcmp(err.field, bad[i].field) != 0)
            fail_msg("%s: field %s, want %s (%s)", bad[i].sched, err.field, bad[i].field,
                     err.message);
        assert_non_null(strstr(err.message, bad[i].field));
        json_decref(j);
    }
}

static Trial *lease_as(Core *core, Worker *w, int i, int64_t now)
{
    char token[CORE_TOKEN_LEN + 1];
    snprintf(token, sizeof token, "%032d", i);
    LeaseOffer offer = cpus(1);
    return core_lease(core, w, &offer, token, now);
}

static ReportAction report_as(Core *core, Trial *t, int i, int64_t step, double loss, int64_t now)
{
    char token[CORE_TOKEN_LEN + 1];
    snprintf(token, sizeof token, "%032d", i);
    ReportAction a;
    RungError err;
    json_t *m = metrics(loss);
    assert_int_equal(core_report(core, t, token, step, m, now, &a, &err), 0);
    json_decref(m);
    return a;
}

/* asha: a worse trial is stopped at rung 1 (state stopped, its rung kept);
 * a report at max_t completes a trial without a finish. */
static void test_asha_stops_and_completes(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(
        core, "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
              " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
              " \"scheduler\": {\"type\": \"asha\", \"max_t\": 4, \"reduction_factor\": 2}}");
    Worker *w = add_worker(core);
    Trial *a = lease_as(core, w, 1, 2000);
    assert_int_equal(report_as(core, a, 1, 1, 0.5, 2001), ACTION_CONTINUE); /* first at rung 1 */
    assert_int_equal(report_as(core, a, 1, 2, 0.4, 2002), ACTION_CONTINUE); /* first at rung 2 */
    assert_int_equal(report_as(core, a, 1, 4, 0.3, 2003), ACTION_STOP);     /* max_t */
    assert_int_equal(a->state, TRIAL_COMPLETED);
    Trial *b = lease_as(core, w, 2, 3000);
    assert_int_equal(report_as(core, b, 2, 1, 0.9, 3001), ACTION_STOP); /* worse than 0.5 */
    assert_int_equal(b->state, TRIAL_STOPPED);
    assert_true(b->rung == 1);
    assert_int_equal(report_as(core, b, 2, 1, 0.9, 3002), ACTION_STOP); /* a retry: same */
    assert_int_equal(e->state, EXP_COMPLETED);
    assert_int_equal(e->counts[TRIAL_STOPPED], 1);
    assert_int_equal(e->counts[TRIAL_COMPLETED], 1);
    core_free(core);
}

/* promote: trials pause at rung 1 until three have reported there; the best
 * is then promoted to the front of the line, kept for the worker that
 * paused it (its checkpoint is there) and leased with resume_step 1. */
static void test_promote_pauses_and_resumes(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(
        core, "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
              " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
              " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"reduction_factor\": 3,"
              " \"promote\": true}}");
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    double loss[3] = {0.5, 0.2, 0.7};
    Trial *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = lease_as(core, w1, i, 2000 + i);
        assert_int_equal(t[i]->number, i);
        assert_int_equal(core_resume_step(t[i]), 0);
        assert_int_equal(report_as(core, t[i], i, 1, loss[i], 2000 + i), ACTION_STOP);
    }
    /* After the third, floor(3/3) = 1: trial 1 (0.2) is promoted. */
    assert_int_equal(t[0]->state, TRIAL_PAUSED);
    assert_int_equal(t[2]->state, TRIAL_PAUSED);
    assert_int_equal(t[1]->state, TRIAL_PENDING);
    assert_ptr_equal(e->pending.head, t[1]);
    assert_int_equal(e->counts[TRIAL_PAUSED], 2);
    /* w2 may not take it while w1 is alive: it gets the new trial 3. */
    core_worker_seen(core, w1, 2500);
    Trial *n = lease_as(core, w2, 7, 2600);
    assert_int_equal(n->number, 3);
    Trial *r = lease_as(core, w1, 8, 2700);
    assert_ptr_equal(r, t[1]);
    assert_int_equal(core_resume_step(r), 1);
    assert_int_equal(report_as(core, r, 8, 1, 0.2, 2701), ACTION_CONTINUE); /* a repeat */
    assert_int_equal(report_as(core, r, 8, 2, 0.15, 2702), ACTION_CONTINUE);
    assert_int_equal(report_as(core, r, 8, 3, 0.1, 2703), ACTION_STOP); /* paused at 3 */
    assert_int_equal(r->state, TRIAL_PAUSED);
    assert_true(r->rung == 3);
    /* Trial 3 pauses at rung 1 (0.3 ranks 2nd of 4: floor(4/3) = 1). Now
     * nothing runs or waits: the end game promotes the one at rung 3. */
    assert_int_equal(report_as(core, n, 7, 1, 0.3, 2800), ACTION_STOP);
    assert_int_equal(r->state, TRIAL_PENDING);
    assert_int_equal(e->state, EXP_RUNNING);
    Trial *again = lease_as(core, w1, 9, 2900);
    assert_ptr_equal(again, r);
    assert_int_equal(core_resume_step(again), 3);
    assert_int_equal(report_as(core, again, 9, 9, 0.05, 2901), ACTION_STOP); /* max_t */
    assert_int_equal(again->state, TRIAL_COMPLETED);
    /* The end game again: trial 3 (0.3) ranks 2nd of 4 at rung 1, within
     * ceil(4/3) = 2, so it is promoted, for w2 that ran it; and so on until
     * no paused trial qualifies and the rest are stopped. */
    assert_int_equal(n->state, TRIAL_PENDING);
    assert_null(lease_as(core, w1, 10, 2950));
    int64_t rounds = 0;
    while (e->state == EXP_RUNNING && rounds++ < 10) {
        Trial *x = lease_as(core, w2, 10 + (int)rounds, 3000 + rounds * 10);
        if (x == NULL)
            x = lease_as(core, w1, 10 + (int)rounds, 3000 + rounds * 10);
        assert_non_null(x);
        report_as(core, x, 10 + (int)rounds, core_resume_step(x) + 2, x == t[2] ? 0.9 : 0.25,
                  3001 + rounds * 10);
    }
    assert_int_equal(e->state, EXP_COMPLETED);
    assert_int_equal(e->counts[TRIAL_PAUSED], 0);
    assert_int_equal(e->counts[TRIAL_COMPLETED] + e->counts[TRIAL_STOPPED], 4);
    core_free(core);
}


/* ---- gangs (docs/api.md, "Gangs") ---- */

/* Two nodes a trial, holds that wait 1 s, one retry. */
static const char *const GANG2 =
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2, \"max_failures\": 1,"
    " \"search_space\": {\"x\": 1},"
    " \"resources_per_trial\": {\"cpu\": 1, \"nodes\": 2, \"gang_wait_s\": 1}}";

/* A gang-capable offer of one CPU from worker w: it says where it is
 * reached (10.0.0.<id>, port 29500 + id). */
static LeaseOffer gang_offer(const Worker *w, char *addr, size_t size)
{
    LeaseOffer o = cpus(1);
    snprintf(addr, size, "10.0.0.%lld", (long long)w->id);
    o.advertise_addr = addr;
    o.port = 29500 + w->id;
    return o;
}

/* A lease of w with a gang-capable offer and token number n; the token is
 * written to token (CORE_TOKEN_LEN + 1 bytes). */
static Trial *gang_lease(Core *core, Worker *w, int n, char *token, int64_t now)
{
    char addr[32];
    LeaseOffer o = gang_offer(w, addr, sizeof addr);
    snprintf(token, CORE_TOKEN_LEN + 1, "%032d", n);
    return core_lease(core, w, &o, token, now);
}

static int64_t rank_of(const Trial *t, const Worker *w)
{
    int64_t rank = -1;
    assert_non_null(core_gang_member(t, w->id, &rank));
    return rank;
}

/* Forms a 2-node gang of e on a (rank 0) and b (rank 1) at now, each given
 * its lease; tokens into tok0 and tok1. */
static Trial *form_two(Core *core, Worker *a, Worker *b, int n, char *tok0, char *tok1, int64_t now)
{
    assert_null(gang_lease(core, a, n, tok0, now)); /* held */
    Trial *t = gang_lease(core, b, n + 1, tok1, now);
    assert_non_null(t);
    assert_ptr_equal(gang_lease(core, a, n + 2, tok0, now), t); /* its parked request again */
    assert_int_equal(rank_of(t, a), 0);
    assert_int_equal(rank_of(t, b), 1);
    return t;
}

static void test_gang_forms_with_two_and_three_nodes(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core), *old = add_worker(core);
    char tok1[CORE_TOKEN_LEN + 1], tok2[CORE_TOKEN_LEN + 1];
    /* An older worker (no advertise_addr) is never held nor given a gang. */
    assert_null(lease_one(core, old, 2000));
    assert_int_equal(old->held_for, 0);
    /* The first asks: held, nothing runs yet. */
    assert_null(gang_lease(core, w1, 1, tok1, 2000));
    assert_int_equal(w1->held_for, e->id);
    assert_int_equal(e->counts[TRIAL_RUNNING], 0);
    assert_false(core_take_gang_formed(core));
    /* The second forms it: the trial runs on both at once, and this worker
     * gets it as rank 1; rank 0 (the first held) gets it on its next ask. */
    Trial *t = gang_lease(core, w2, 2, tok2, 2100);
    assert_non_null(t);
    assert_int_equal(t->state, TRIAL_RUNNING);
    assert_true(core_take_gang_formed(core));
    assert_int_equal(rank_of(t, w2), 1);
    assert_int_equal(t->gang->nnodes, 2);
    assert_string_equal(t->gang->master_addr, "10.0.0.1");
    assert_int_equal(t->gang->master_port, 29501);
    assert_string_equal(t->lease_token, ""); /* rank 0's lease is not given yet */
    assert_int_equal(w1->held_for, 0);
    char again[CORE_TOKEN_LEN + 1];
    assert_ptr_equal(gang_lease(core, w1, 3, again, 2200), t);
    assert_int_equal(rank_of(t, w1), 0);
    assert_string_equal(t->lease_token, again); /* rank 0's token is the trial's */
    assert_int_equal(t->worker_id, w1->id);
    /* One running trial of its experiment; a slot on each worker. */
    assert_int_equal(e->counts[TRIAL_RUNNING], 1);
    assert_int_equal(w1->n_running, 1);
    assert_int_equal(w2->n_running, 1);
    int64_t ids[4];
    assert_int_equal(core_worker_trials(core, w2->id, ids, 4), 1);
    assert_int_equal(ids[0], t->id);
    /* Each member's grant is its own. */
    assert_non_null(t->gang->members[1].resources);
    assert_int_equal(json_integer_value(json_object_get(t->gang->members[1].resources, "cpus")), 1);
    /* The stored form has both members and their tokens. */
    const json_t *members = json_object_get(t->gang_json, "members");
    assert_int_equal(json_array_size(members), 2);
    assert_string_equal(json_string_value(
                            json_object_get(json_array_get(members, 1), "lease_token")),
                        tok2);
    core_free(core);

    /* Three nodes: ranks in the order the holds came. */
    core = core_new(LEASE_MS);
    e = add_experiment(core,
                       "{\"metric\": \"loss\", \"mode\": \"min\", \"search_space\": {\"x\": 1},"
                       " \"resources_per_trial\": {\"nodes\": 3}}");
    Worker *w[3] = {add_worker(core), add_worker(core), add_worker(core)};
    char tok[3][CORE_TOKEN_LEN + 1];
    assert_null(gang_lease(core, w[2], 1, tok[2], 2000));
    assert_null(gang_lease(core, w[0], 2, tok[0], 2001));
    assert_null(gang_lease(core, w[0], 3, tok[0], 2002)); /* asks again: still one hold */
    assert_int_equal(e->gang.n_holds, 2);
    t = gang_lease(core, w[1], 4, tok[1], 2003);
    assert_non_null(t);
    assert_int_equal(rank_of(t, w[2]), 0);
    assert_int_equal(rank_of(t, w[0]), 1);
    assert_int_equal(rank_of(t, w[1]), 2);
    assert_string_equal(t->gang->master_addr, "10.0.0.3");
    core_free(core);
}

/* One hold per worker, never twice in one gang, whatever it asks. */
static void test_gang_one_hold_per_worker(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *a = add_experiment(core, GANG2);
    Experiment *b = add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char tok[CORE_TOKEN_LEN + 1];
    for (int i = 0; i < 5; i++)
        assert_null(gang_lease(core, w1, i, tok, 2000 + i));
    assert_int_equal(w1->held_for, a->id);
    assert_int_equal(a->gang.n_holds, 1);
    assert_int_equal(b->gang.n_holds, 0);
    assert_int_equal(a->counts[TRIAL_RUNNING] + b->counts[TRIAL_RUNNING], 0);
    /* The second worker completes a's gang, not b's. */
    Trial *t = gang_lease(core, w2, 9, tok, 2100);
    assert_ptr_equal(t->exp, a);
    assert_int_not_equal(t->gang->members[0].worker_id, t->gang->members[1].worker_id);
    core_free(core);
}

/* Holds last gang_wait_s; then they are released, and the gang is passed
 * over for gang_wait_s, so a 1-node trial gets the worker. */
static void test_gang_expiry_and_back_off(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *g = add_experiment(core, GANG2);
    Experiment *one = add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    char tok[CORE_TOKEN_LEN + 1];
    assert_null(gang_lease(core, w, 1, tok, 2000)); /* the older experiment: the gang */
    core_tick(core, 2999);
    assert_int_equal(w->held_for, g->id);
    assert_null(gang_lease(core, w, 2, tok, 2999)); /* held: takes nothing else */
    core_availability_seen(core);
    core_tick(core, 3000); /* gang_wait_s from the first hold */
    assert_int_equal(w->held_for, 0);
    assert_int_equal(g->gang.releases, 1);
    assert_true(core_availability_changed(core)); /* its parked request looks again */
    Trial *t = gang_lease(core, w, 3, tok, 3000);
    assert_non_null(t);
    assert_ptr_equal(t->exp, one);
    /* Passed over until 4000; then the gang may hold it again. */
    assert_ptr_equal(gang_lease(core, w, 4, tok, 3999)->exp, one);
    assert_null(gang_lease(core, w, 5, tok, 4000));
    assert_int_equal(w->held_for, g->id);
    core_free(core);
}

/* Rule 4: workers that free up more than gang_wait_s apart would each be
 * held, released, and then take a 1-node trial, forever. Released twice,
 * the gang reserves: its hold no longer runs out, and the next worker that
 * frees up completes it while 1-node trials go on. */
static void test_gang_reserving_forms_while_small_trials_arrive(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *small = add_experiment(core,
                                       "{\"metric\": \"loss\", \"mode\": \"min\","
                                       " \"num_samples\": 1000, \"search_space\": {\"x\": 1}}");
    Experiment *g = add_experiment(core, GANG2);
    enum { N = 3, RUN_MS = 10000 };
    Worker *w[N];
    Trial *running[N] = {NULL};
    int64_t until[N] = {0}, arrive[N] = {2000, 5300, 8600}; /* 3.3 s apart */
    for (int i = 0; i < N; i++)
        w[i] = add_worker(core);
    Trial *gang = NULL;
    int64_t formed_at = 0, small_leases = 0;
    bool reserved_first = false;
    for (int64_t now = 2000; now <= 60000 && gang == NULL; now += 100) {
        core_tick(core, now);
        core_expire_leases(core, now);
        reserved_first = reserved_first || g->gang.reserving;
        for (int i = 0; i < N && gang == NULL; i++) {
            if (now < arrive[i])
                continue;
            RungError err;
            if (running[i] != NULL && now >= until[i]) {
                assert_int_equal(core_finish(core, running[i], running[i]->lease_token, true, NULL,
                                             now, &err),
                                 0);
                running[i] = NULL;
            }
            if (running[i] != NULL) { /* busy: its heartbeat keeps it alive */
                json_decref(core_heartbeat(core, w[i], &running[i]->id, 1, NULL, now));
                continue;
            }
            char tok[CORE_TOKEN_LEN + 1];
            Trial *t = gang_lease(core, w[i], (int)(now / 100) * N + i, tok, now);
            if (t == NULL)
                continue; /* held */
            if (t->exp == g) {
                gang = t;
                formed_at = now;
            } else {
                running[i] = t;
                until[i] = now + RUN_MS;
                small_leases++;
            }
        }
    }
    assert_non_null(gang);
    assert_true(reserved_first); /* it formed because it reserved */
    assert_true(formed_at < 20000);
    assert_true(small_leases >= 2);                    /* small trials ran meanwhile */
    assert_int_equal(small->counts[TRIAL_RUNNING], 1); /* and one still does */
    assert_false(g->gang.reserving);                   /* formed: the next gang starts over */
    assert_int_equal(g->gang.releases, 0);
    core_free(core);
}

/* The reserving gang is released when fewer than `nodes` alive workers
 * could ever take it; its held worker takes other trials again. */
static void test_gang_reserving_released_when_too_few_capable(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *one = add_experiment(core, "{\"metric\": \"loss\", \"mode\": \"min\","
                                           " \"num_samples\": 10, \"search_space\": {\"x\": 1}}");
    Experiment *g = add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char tok[CORE_TOKEN_LEN + 1];
    Trial *busy = gang_lease(core, w2, 1, tok, 2000); /* the older experiment's */
    assert_ptr_equal(busy->exp, one);
    int64_t now = 2000;
    for (int cycle = 0; cycle < 2; cycle++) {
        assert_null(gang_lease(core, w1, 10 + cycle, tok, now));
        now += 1000;
        json_decref(core_heartbeat(core, w2, &busy->id, 1, NULL, now));
        core_tick(core, now);
        now += 1000; /* the back-off */
        json_decref(core_heartbeat(core, w2, &busy->id, 1, NULL, now));
        core_tick(core, now);
    }
    assert_int_equal(g->gang.releases, 2);
    assert_true(g->gang.reserving); /* w1 and w2 could take it */
    /* w2 goes silent now. A reserving hold does not run out: w1 stays held,
     * asking again as its long polls end, while w2 may be in a long poll
     * itself (a lease and 30 s). */
    int64_t silent_from = now;
    for (; now <= silent_from + LEASE_MS + 30000; now += 5000) {
        assert_null(gang_lease(core, w1, (int)now, tok, now));
        core_tick(core, now);
        assert_true(g->gang.reserving);
        assert_int_equal(w1->held_for, g->id);
    }
    /* Then only w1 could take it, fewer than 2: released, passed over. */
    core_tick(core, now);
    assert_false(g->gang.reserving);
    assert_int_equal(w1->held_for, 0);
    Trial *t = gang_lease(core, w1, 21, tok, now);
    assert_non_null(t);
    assert_ptr_equal(t->exp, one);
    core_free(core);
}

/* A member's failure ends the attempt for all: the others are told to
 * stop, and the trial is retried as one (attempt + 1), then fails. */
static void test_gang_member_failure_stops_all_and_retries(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char t0[CORE_TOKEN_LEN + 1], t1[CORE_TOKEN_LEN + 1];
    Trial *t = form_two(core, w1, w2, 1, t0, t1, 2000);
    RungError err;
    assert_int_equal(core_finish(core, t, t1, false, "exit status 1\nboom", 2100, &err), 0);
    assert_int_equal(t->state, TRIAL_PENDING);
    assert_int_equal(t->attempt, 2);
    assert_string_equal(t->error, "node 1 (worker 2) failed: exit status 1\nboom");
    assert_int_equal(e->counts[TRIAL_RUNNING], 0);
    assert_int_equal(w1->n_running, 0);
    assert_int_equal(w2->n_running, 0);
    /* Rank 0 hears it at its next heartbeat or report; its finish changes nothing. */
    json_t *stop = core_heartbeat(core, w1, &t->id, 1, NULL, 2200);
    assert_int_equal(json_array_size(stop), 1);
    json_decref(stop);
    ReportAction a;
    json_t *m = metrics(0.5);
    assert_int_equal(core_report(core, t, t0, 1, m, 2200, &a, &err), 0);
    assert_int_equal(a, ACTION_STOP);
    assert_int_equal(core_finish(core, t, t0, true, NULL, 2200, &err), 0);
    assert_int_equal(t->state, TRIAL_PENDING);
    /* The retry forms again (the same trial first in line), and fails for good. */
    Trial *again = form_two(core, w2, w1, 10, t0, t1, 2300);
    assert_ptr_equal(again, t);
    assert_int_equal(t->gang->attempt, 2);
    assert_int_equal(core_finish(core, t, t0, false, "oom", 2400, &err), 0); /* rank 0 */
    assert_int_equal(t->state, TRIAL_FAILED);
    /* The old attempt's tokens are gone with it; rank 1 of this one is told to stop. */
    assert_int_equal(core_report(core, t, "00000000000000000000000000000001", 1, m, 2500, &a, &err),
                     RUNG_E_LEASE_LOST);
    stop = core_heartbeat(core, w1, &t->id, 1, NULL, 2500);
    assert_int_equal(json_array_size(stop), 1);
    json_decref(stop);
    json_decref(m);
    core_free(core);
}

/* Any member's lease running out ends the attempt for all. */
static void test_gang_member_lease_expiry(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char t0[CORE_TOKEN_LEN + 1], t1[CORE_TOKEN_LEN + 1];
    Trial *t = form_two(core, w1, w2, 1, t0, t1, 2000);
    /* Rank 0 heartbeats and reports; rank 1 is silent. */
    json_decref(core_heartbeat(core, w1, &t->id, 1, NULL, 2900));
    assert_int_equal(core_expire_leases(core, 2999), 0);
    assert_int_equal(core_expire_leases(core, 3000), 1);
    assert_int_equal(t->state, TRIAL_PENDING);
    assert_int_equal(t->attempt, 2);
    assert_non_null(strstr(t->error, "worker 2 (node 1 of the gang)"));
    json_t *stop = core_heartbeat(core, w1, &t->id, 1, NULL, 3100);
    assert_int_equal(json_array_size(stop), 1);
    json_decref(stop);
    /* A member that never takes its place is lost the same way. */
    assert_null(gang_lease(core, w1, 20, t0, 4000));
    assert_non_null(gang_lease(core, w2, 21, t1, 4000)); /* w1 never asks again */
    json_decref(core_heartbeat(core, w2, &t->id, 1, NULL, 4900));
    assert_int_equal(core_expire_leases(core, 5000), 1);
    /* Lost workers are retried apart from max_failures (1, unused). */
    assert_int_equal(t->state, TRIAL_PENDING);
    assert_int_equal(t->attempt, 3);
    assert_int_equal(t->worker_losses, 2);
    assert_non_null(strstr(t->error, "worker 1 did not take its place in the gang (node 0)"));
    core_free(core);
}

/* Only rank 0 reports; another member's `completed` only marks it done;
 * rank 0's finish decides. */
static void test_gang_report_from_rank_1_refused(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char t0[CORE_TOKEN_LEN + 1], t1[CORE_TOKEN_LEN + 1];
    Trial *t = form_two(core, w1, w2, 1, t0, t1, 2000);
    ReportAction a;
    RungError err;
    json_t *m = metrics(0.5);
    assert_int_equal(core_report(core, t, t1, 1, m, 2100, &a, &err), RUNG_E_CONFLICT);
    assert_non_null(strstr(err.message, "only node 0 reports"));
    assert_int_equal(core_report(core, t, t0, 1, m, 2100, &a, &err), 0);
    assert_int_equal(a, ACTION_CONTINUE);
    /* Rank 1's @rung lines are its warnings; the trial's are every member's. */
    json_t *w1_warn = json_pack("{s:i, s:[{s:s, s:s}]}", "count", 1, "last", "line", "@rung {",
                                "why", "not JSON");
    json_t *w2_warn = json_pack("{s:i, s:[{s:s, s:s}]}", "count", 7, "last", "line",
                                "@rung {\"loss\": 1}", "why",
                                "only node 0 reports (this is node 1)");
    core_worker_warnings(core, t, w1->id, w1_warn);
    core_worker_warnings(core, t, w2->id, w2_warn);
    assert_int_equal(json_integer_value(json_object_get(t->warnings, "count")), 8);
    assert_int_equal(json_array_size(json_object_get(t->warnings, "last")), 2);
    assert_int_equal(core_token_worker(t, t1), w2->id);
    core_worker_log(core, t, w2->id, "rank 1's log");
    assert_null(t->log_tail); /* the trial's log is rank 0's */
    json_decref(w1_warn);
    json_decref(w2_warn);
    /* Rank 1 done: rank 0 runs on, and rank 1's lease no longer counts. */
    assert_int_equal(core_finish(core, t, t1, true, NULL, 2200, &err), 0);
    assert_int_equal(t->state, TRIAL_RUNNING);
    assert_true(t->gang->members[1].done);
    json_decref(core_heartbeat(core, w1, &t->id, 1, NULL, 3000));
    assert_int_equal(core_expire_leases(core, 3500), 0);
    int64_t ids[2];
    assert_int_equal(core_worker_trials(core, w2->id, ids, 2), 0);
    assert_int_equal(core_finish(core, t, t0, true, NULL, 3600, &err), 0);
    assert_int_equal(t->state, TRIAL_COMPLETED);
    assert_true(t->has_best);
    assert_int_equal(e->counts[TRIAL_COMPLETED], 1);
    json_decref(m);
    core_free(core);
}

/* A member whose lease reply was never delivered gets its place again
 * with its next lease request; the gang runs on. */
static void test_gang_undelivered_member(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char t0[CORE_TOKEN_LEN + 1], t1[CORE_TOKEN_LEN + 1];
    Trial *t = form_two(core, w1, w2, 1, t0, t1, 2000);
    assert_true(core_unlease(core, t, t1, 2100));
    assert_int_equal(t->state, TRIAL_RUNNING);
    assert_string_equal(t->gang->members[1].lease_token, "");
    char again[CORE_TOKEN_LEN + 1];
    assert_ptr_equal(gang_lease(core, w2, 7, again, 2200), t);
    assert_string_equal(t->gang->members[1].lease_token, again);
    /* The old token is nobody's. */
    RungError err;
    assert_int_equal(core_finish(core, t, t1, true, NULL, 2300, &err), RUNG_E_LEASE_LOST);
    core_free(core);
}

/* A restart keeps a running gang: the members and their tokens come back
 * from the stored form, every lease gets a fresh window. */
static void test_gang_restart_rebuild(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char t0[CORE_TOKEN_LEN + 1], t1[CORE_TOKEN_LEN + 1];
    Trial *t = form_two(core, w1, w2, 1, t0, t1, 2000);
    json_t *stored = json_deep_copy(t->gang_json);
    json_t *spec_json = json_incref(e->spec.json);
    int64_t id = t->id, number = t->number;
    core_free(core);

    core = core_new(LEASE_MS);
    Spec spec;
    RungError err;
    assert_int_equal(spec_load(spec_json, 42, &spec, &err), 0);
    e = core_load_experiment(core, 1, &spec, EXP_RUNNING, 1000, 0);
    w1 = core_load_worker(core, 1, "w", "host", json_array(), 8, 1000, 2000, NULL);
    w2 = core_load_worker(core, 2, "w", "host", json_array(), 8, 1000, 2000, NULL);
    t = core_load_trial(core, e,
                        &(CoreTrialRow){.id = id,
                                        .number = number,
                                        .state = TRIAL_RUNNING,
                                        .config = json_object(),
                                        .attempt = 1,
                                        .worker_id = w1->id,
                                        .token = t0,
                                        .created_at = 1000,
                                        .started_at = 2000});
    core_load_gang(core, t, stored);
    core_load_done(core, 9000);
    assert_int_equal(w1->n_running, 1);
    assert_int_equal(w2->n_running, 1);
    assert_int_equal(rank_of(t, w2), 1);
    /* Nobody could heartbeat while rungd was down: fresh leases from now. */
    assert_int_equal(core_expire_leases(core, 9999), 0);
    json_decref(core_heartbeat(core, w2, &t->id, 1, NULL, 9500));
    json_t *m = metrics(0.4);
    ReportAction a;
    assert_int_equal(core_report(core, t, t0, 1, m, 9600, &a, &err), 0);
    assert_int_equal(core_report(core, t, t1, 1, m, 9600, &a, &err), RUNG_E_CONFLICT);
    assert_int_equal(core_finish(core, t, t1, true, NULL, 9700, &err), 0);
    assert_int_equal(core_finish(core, t, t0, true, NULL, 9800, &err), 0);
    assert_int_equal(t->state, TRIAL_COMPLETED);
    /* A malformed stored gang is none. */
    Trial *u = core_load_trial(core, e,
                               &(CoreTrialRow){.id = id + 1,
                                               .number = number + 1,
                                               .state = TRIAL_PENDING,
                                               .config = json_object(),
                                               .attempt = 1,
                                               .created_at = 1000});
    json_t *bad = json_pack("{s:i, s:s, s:i, s:[]}", "attempt", 1, "master_addr", "h",
                            "master_port", 1, "members");
    core_load_gang(core, u, bad);
    assert_null(u->gang);
    json_decref(bad);
    json_decref(m);
    json_decref(stored);
    json_decref(spec_json);
    core_free(core);
}

/* A finish "preempted" (its worker gave the trial back): same attempt,
 * preemptions + 1, first in line in state preempted, kept for its worker
 * while that one is alive and resumed after its last step; never counted
 * against max_failures; stopped, canceled and unleased like a waiting
 * trial that reported. */
static void test_preempted_waits_for_its_worker_and_resumes(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, SIMPLE); /* 3 trials, max_failures 1 */
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    RungError err;
    Trial *t = lease_as(core, w1, 1, 2000);
    assert_int_equal(t->number, 0);
    for (int step = 1; step <= 3; step++)
        assert_int_equal(report_as(core, t, 1, step, 0.5, 2000 + step), ACTION_CONTINUE);
    char token[CORE_TOKEN_LEN + 1];
    snprintf(token, sizeof token, "%032d", 1);
    assert_int_equal(core_preempt(core, t, token, 2010, &err), 0);
    assert_int_equal(t->state, TRIAL_PREEMPTED);
    assert_int_equal(t->attempt, 1);
    assert_int_equal(t->preemptions, 1);
    assert_null(t->error);
    assert_int_equal(e->counts[TRIAL_PREEMPTED], 1);
    assert_int_equal(e->counts[TRIAL_RUNNING], 0);
    assert_ptr_equal(e->pending.head, t);
    assert_string_equal(trial_state_name(t->state), "preempted");
    TrialState parsed;
    assert_int_equal(trial_state_parse("preempted", &parsed), 0);
    assert_int_equal(parsed, TRIAL_PREEMPTED);
    assert_false(trial_state_terminal(TRIAL_PREEMPTED));
    /* The old token is spent: a late finish or a second preempt is lost. */
    assert_int_equal(core_preempt(core, t, token, 2011, &err), RUNG_E_LEASE_LOST);
    assert_int_equal(core_finish(core, t, token, false, "x", 2011, &err), RUNG_E_LEASE_LOST);

    /* w1 is alive: w2 passes over it and takes trial 1. */
    core_worker_seen(core, w1, 2100);
    Trial *other = lease_as(core, w2, 2, 2200);
    assert_int_equal(other->number, 1);
    assert_int_equal(report_as(core, other, 2, 1, 0.6, 2201), ACTION_CONTINUE);
    /* w1 takes it again, from its last step. */
    Trial *r = lease_as(core, w1, 3, 2300);
    assert_ptr_equal(r, t);
    assert_int_equal(t->state, TRIAL_RUNNING);
    assert_int_equal(t->attempt, 1);
    assert_int_equal(core_resume_step(t), 3);
    assert_int_equal(report_as(core, t, 3, 3, 0.1, 2301), ACTION_CONTINUE); /* a repeat: dropped */
    assert_int_equal(report_as(core, t, 3, 4, 0.4, 2302), ACTION_CONTINUE);
    /* Given back again and again: no attempt is used up (max_failures 1). */
    for (int i = 0; i < 3; i++) {
        snprintf(token, sizeof token, "%032d", 3 + i);
        assert_int_equal(core_preempt(core, t, token, 2400 + i, &err), 0);
        assert_ptr_equal(lease_as(core, w1, 4 + i, 2400 + i), t);
    }
    assert_int_equal(t->attempt, 1);
    assert_int_equal(t->preemptions, 4);
    assert_int_equal(core_resume_step(t), 4);
    assert_int_equal(core_finish(core, t, t->lease_token, true, NULL, 2500, &err), 0);
    assert_int_equal(t->state, TRIAL_COMPLETED);
    assert_int_equal(t->preemptions, 4);

    /* Its worker gone, any worker takes it (the program starts over there
     * without the checkpoint; its reports so far stand). */
    assert_int_equal(core_preempt(core, other, other->lease_token, 2600, &err), 0);
    Trial *third = lease_as(core, w1, 10, 2601);
    assert_int_equal(third->number, 2);                    /* w2 is alive: other waits for it */
    assert_ptr_equal(lease_as(core, w1, 11, 3700), other); /* w2 not seen since 2601 */
    /* A lease reply that never arrived leaves it preempted. */
    char t11[CORE_TOKEN_LEN + 1];
    snprintf(t11, sizeof t11, "%032d", 11);
    assert_true(core_unlease(core, other, t11, 3701));
    assert_int_equal(other->state, TRIAL_PREEMPTED);
    /* A user's stop ends a preempted trial at once, as a paused one. */
    assert_int_equal(core_stop_trial(core, other, 3702, &err), 0);
    assert_int_equal(other->state, TRIAL_STOPPED);
    assert_int_equal(other->stopped_by, BY_USER);
    core_free(core);
}

/* A preempted trial when its experiment ends: canceled with it, or stopped
 * by a stop rule (it ran); one asked to stop while it ran becomes what it
 * was asked, whatever its finish says. */
static void test_preempted_and_the_experiments_end(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, SIMPLE);
    Worker *w = add_worker(core);
    RungError err;
    Trial *a = lease_as(core, w, 1, 2000);
    Trial *b = lease_as(core, w, 2, 2000);
    assert_int_equal(report_as(core, a, 1, 1, 0.5, 2001), ACTION_CONTINUE);
    assert_int_equal(core_preempt(core, a, a->lease_token, 2002, &err), 0);
    assert_int_equal(core_stop_trial(core, b, 2003, &err), 0); /* at its next word */
    assert_int_equal(core_preempt(core, b, b->lease_token, 2004, &err), 0);
    assert_int_equal(b->state, TRIAL_STOPPED);
    assert_int_equal(b->preemptions, 0);
    assert_int_equal(core_cancel(core, e, 2005, &err), 0);
    assert_int_equal(a->state, TRIAL_CANCELED);
    assert_int_equal(e->counts[TRIAL_PREEMPTED], 0);

    Experiment *f =
        add_experiment(core, "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 3,"
                             " \"search_space\": {\"x\": 1}, \"stop\": {\"time_budget_s\": 5}}");
    Trial *c = lease_as(core, w, 3, 3000);
    assert_ptr_equal(c->exp, f);
    assert_int_equal(report_as(core, c, 3, 1, 0.5, 3001), ACTION_CONTINUE);
    assert_int_equal(core_preempt(core, c, c->lease_token, 3002, &err), 0);
    assert_int_equal(core_tick(core, 7000), 1); /* the budget ran out */
    assert_int_equal(f->state, EXP_COMPLETED);
    assert_int_equal(c->state, TRIAL_STOPPED);
    assert_int_equal(c->stopped_by, BY_EXPERIMENT);
    core_free(core);
}

/* A gang member's worker gives the trial back: the whole gang stops (each
 * member hears it at its next heartbeat or report), the trial waits as
 * preempted with the same attempt, and forms again as a gang. */
static void test_gang_member_preempted_stops_all(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, GANG2);
    Worker *w1 = add_worker(core), *w2 = add_worker(core);
    char t0[CORE_TOKEN_LEN + 1], t1[CORE_TOKEN_LEN + 1];
    Trial *t = form_two(core, w1, w2, 1, t0, t1, 2000);
    RungError err;
    ReportAction a;
    json_t *m = metrics(0.5);
    assert_int_equal(core_report(core, t, t0, 1, m, 2050, &a, &err), 0);
    assert_int_equal(core_preempt(core, t, t1, 2100, &err), 0); /* rank 1's worker */
    assert_int_equal(t->state, TRIAL_PREEMPTED);
    assert_int_equal(t->attempt, 1);
    assert_int_equal(t->preemptions, 1);
    assert_int_equal(e->counts[TRIAL_RUNNING], 0);
    assert_int_equal(w1->n_running, 0);
    assert_int_equal(w2->n_running, 0);
    json_t *stop = core_heartbeat(core, w1, &t->id, 1, NULL, 2200);
    assert_int_equal(json_array_size(stop), 1);
    json_decref(stop);
    assert_int_equal(core_preempt(core, t, t0, 2200, &err), 0); /* rank 0's: nothing more */
    assert_int_equal(t->preemptions, 1);
    assert_int_equal(core_preempt(core, t, "00000000000000000000000000000099", 2200, &err),
                     RUNG_E_LEASE_LOST);
    Trial *again = form_two(core, w1, w2, 10, t0, t1, 2300);
    assert_ptr_equal(again, t);
    assert_int_equal(t->attempt, 1);
    assert_int_equal(core_resume_step(t), 1);
    json_decref(m);
    core_free(core);
}

/* Several objectives and a constraint (docs/api.md, "Several objectives
 * and constraints"): the front holds the feasible non-dominated trials by
 * their last report, the same before and after finished trials leave
 * memory; there is no best; the metric_missing message names every
 * objective. */
static void test_pareto_and_feasibility(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(
        core, "{\"metrics\": [{\"name\": \"loss\", \"mode\": \"min\"}, {\"name\": \"acc\", "
              "\"mode\": \"max\"}], \"constraints\": [{\"metric\": \"mem\", \"max\": 16}],"
              " \"num_samples\": 7,"
              " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}}");
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(1);
    /* loss, acc, mem: trial 3 is infeasible (it would dominate all), trial
     * 2 is dominated by trial 1, trial 4 never reports mem, trial 5's last
     * report lacks acc. */
    const double rows[6][3] = {{0.5, 0.6, 4},  {0.3, 0.5, 8},    {0.4, 0.4, 2},
                               {0.1, 0.9, 32}, {0.05, 0.95, -1}, {0.2, 0.99, 1}};
    int64_t ids[6];
    for (int i = 0; i < 6; i++) {
        char token[CORE_TOKEN_LEN + 1];
        snprintf(token, sizeof token, "%032d", i);
        Trial *t = core_lease(core, w, &offer, token, 2000);
        assert_non_null(t);
        ids[i] = t->id;
        json_t *m = json_pack("{s:f, s:f}", "loss", rows[i][0], "acc", rows[i][1]);
        if (rows[i][2] >= 0)
            json_object_set_new(m, "mem", json_real(rows[i][2]));
        ReportAction a;
        RungError err;
        assert_int_equal(core_report(core, t, token, 1, m, 2100, &a, &err), 0);
        json_decref(m);
        if (i == 5) {
            m = json_pack("{s:f, s:f}", "loss", 0.2, "mem", 1.0);
            assert_int_equal(core_report(core, t, token, 2, m, 2150, &a, &err), 0);
            json_decref(m);
        }
        assert_int_equal(core_finish(core, t, token, true, NULL, 2200, &err), 0);
    }
    BestRef best;
    core_experiment_best(e, &best);
    assert_false(best.has);
    json_t *front = core_experiment_pareto(e);
    assert_int_equal(json_array_size(front), 2);
    /* By loss, best first: trial 1 (0.3, 0.5), then trial 0 (0.5, 0.6). */
    json_t *p0 = json_array_get(front, 0), *p1 = json_array_get(front, 1);
    assert_int_equal(json_integer_value(json_object_get(p0, "trial_id")), ids[1]);
    assert_int_equal(json_integer_value(json_object_get(p1, "trial_id")), ids[0]);
    assert_true(json_real_value(json_object_get(json_object_get(p1, "values"), "acc")) == 0.6);
    assert_non_null(json_object_get(p0, "config"));
    core_changes_clear(core);
    core_release(core);
    assert_null(core_trial(core, ids[0]));
    json_t *again = core_experiment_pareto(e);
    assert_true(json_equal(front, again));
    json_decref(again);
    json_decref(front);
    /* A later trial that dominates both leaves it alone on the front. */
    char token[CORE_TOKEN_LEN + 1];
    snprintf(token, sizeof token, "%032d", 9);
    Trial *t = core_lease(core, w, &offer, token, 3000);
    json_t *m = json_pack("{s:f, s:f, s:f}", "loss", 0.25, "acc", 0.7, "mem", 16.0);
    ReportAction a;
    RungError err;
    assert_int_equal(core_report(core, t, token, 1, m, 3100, &a, &err), 0);
    json_decref(m);
    int64_t last_id = t->id;
    front = core_experiment_pareto(e);
    assert_int_equal(json_array_size(front), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(front, 0), "trial_id")),
                     last_id);
    json_decref(front);
    core_free(core);

    /* No report carries both objectives: metric_missing names both. */
    core = core_new(LEASE_MS);
    e = add_experiment(core, "{\"metrics\": [{\"name\": \"loss\", \"mode\": \"min\"}, "
                             "{\"name\": \"acc\", \"mode\": \"max\"}], \"num_samples\": 5,"
                             " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, "
                             "\"high\": 1}}}");
    w = add_worker(core);
    for (int i = 0; i < 5; i++) {
        snprintf(token, sizeof token, "%032d", i);
        t = core_lease(core, w, &offer, token, 2000);
        assert_non_null(t);
        m = metrics(0.5);
        assert_int_equal(core_report(core, t, token, 1, m, 2100, &a, &err), 0);
        json_decref(m);
        assert_int_equal(core_finish(core, t, token, true, NULL, 2200, &err), 0);
    }
    assert_int_equal(e->state, EXP_FAILED);
    assert_int_equal(e->ended_reason, END_METRIC_MISSING);
    assert_string_equal(e->error, "no trial reported metrics 'loss', 'acc' in one report; trials "
                                  "reported: loss");
    core_free(core);
}

/* A single objective with a constraint: an infeasible trial is never best. */
static void test_constraint_best(void **state)
{
    (void)state;
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(
        core, "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
              " \"constraints\": [{\"metric\": \"mem\", \"min\": 1, \"max\": 16}],"
              " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}}");
    Worker *w = add_worker(core);
    LeaseOffer offer = cpus(1);
    const double rows[2][2] = {{0.1, 17}, {0.4, 3}};
    int64_t ids[2];
    for (int i = 0; i < 2; i++) {
        char token[CORE_TOKEN_LEN + 1];
        snprintf(token, sizeof token, "%032d", i);
        Trial *t = core_lease(core, w, &offer, token, 2000);
        ids[i] = t->id;
        json_t *m = json_pack("{s:f, s:f}", "loss", rows[i][0], "mem", rows[i][1]);
        ReportAction a;
        RungError err;
        assert_int_equal(core_report(core, t, token, 1, m, 2100, &a, &err), 0);
        json_decref(m);
        assert_int_equal(core_finish(core, t, token, true, NULL, 2200, &err), 0);
    }
    BestRef best;
    core_experiment_best(e, &best);
    assert_true(best.has);
    assert_int_equal(best.trial_id, ids[1]);
    assert_null(core_experiment_pareto(e));
    core_changes_clear(core);
    core_release(core);
    core_free(core);
}

/* A restart loads a running experiment's trials in flight as objects and
 * its ended trials only for what they leave (core_load_ended_*, as
 * store_load.c's lean load does): the rung records, the best value and every
 * later decision must be those of the core that never restarted. */
#define LEAN_TRIALS 60
#define LEAN_ENDED 40
#define LEAN_SPEC                                                                                  \
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 60,"                               \
    " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"                \
    " \"scheduler\": {\"type\": \"hyperband\", \"max_t\": 9, \"grace_period\": 1,"                 \
    " \"reduction_factor\": 3}}"

static double lean_loss(int64_t number, int64_t step)
{
    return (double)((number * 37) % 17) / 17.0 + 1.0 / (double)step;
}

/* Runs trial number n to its end (stopped at a rung or completed at 9),
 * returning its last step and the answers. */
static int64_t lean_run(Core *core, Worker *w, int64_t number, int64_t now, ReportAction *acts)
{
    Trial *t = lease_as(core, w, (int)number + 1, now);
    assert_non_null(t);
    assert_int_equal(t->number, number);
    int64_t step = 0;
    while (t->state == TRIAL_RUNNING) {
        step++;
        acts[step - 1] = report_as(core, t, (int)number + 1, step, lean_loss(number, step), now);
        assert_true(step <= 9);
    }
    return step;
}

static int cmp_record(const void *x, const void *y)
{
    const AshaRecord *a = x, *b = y;
    if (a->trial != b->trial)
        return a->trial < b->trial ? -1 : 1;
    return (a->milestone > b->milestone) - (a->milestone < b->milestone);
}

static int64_t sorted_records(const Experiment *e, AshaRecord *out, int64_t cap)
{
    int64_t n = asha_records(e->asha, out, cap);
    assert_true(n <= cap);
    qsort(out, (size_t)n, sizeof *out, cmp_record);
    return n;
}

static void test_lean_load_keeps_rung_records_and_decisions(void **state)
{
    (void)state;
    Core *a = core_new(LEASE_MS);
    Experiment *ea = add_experiment(a, LEAN_SPEC);
    Worker *wa = add_worker(a);
    int64_t last_step[LEAN_ENDED];
    ReportAction acts[9];
    for (int64_t n = 0; n < LEAN_ENDED; n++) {
        last_step[n] = lean_run(a, wa, n, 2000 + n, acts);
        core_changes_clear(a); /* committed */
        core_release(a);
    }
    for (int64_t n = 0; n < LEAN_ENDED; n++)
        assert_null(core_exp_trial(ea, n)); /* released: no longer in memory */
    assert_non_null(core_exp_trial(ea, LEAN_ENDED));

    /* The restart: the experiment, its pending trials, then the ended ones. */
    Core *b = core_new(LEASE_MS);
    json_t *j = json_loads(LEAN_SPEC, 0, NULL);
    json_object_set_new(j, "trainable", json_pack("{s:s}", "type", "external"));
    Spec spec;
    RungError err;
    assert_int_equal(spec_parse(j, 42, &spec, &err), 0);
    json_decref(j);
    Experiment *eb = core_load_experiment(b, ea->id, &spec, EXP_RUNNING, 1000, 0);
    assert_false(core_load_all_trials(eb));
    assert_true(core_load_wants_ended_reports(eb));
    for (int64_t n = LEAN_ENDED; n < LEAN_TRIALS; n++) {
        Trial *t = core_exp_trial(ea, n);
        core_load_trial(b, eb,
                        &(CoreTrialRow){.id = t->id,
                                        .number = n,
                                        .state = TRIAL_PENDING,
                                        .config = json_deep_copy(t->config),
                                        .attempt = 1,
                                        .created_at = 1000});
    }
    int64_t counts[TRIAL__COUNT];
    memcpy(counts, ea->counts, sizeof counts);
    core_load_ended_counts(b, eb, counts, ea->n_trials);
    for (int64_t n = 0; n < LEAN_ENDED; n++) {
        Trial *t = core_load_ended_begin(eb, 100 + n, n,
                                         last_step[n] == 9 ? TRIAL_COMPLETED : TRIAL_STOPPED, NULL);
        for (int64_t step = 1; step <= last_step[n]; step++) {
            json_t *m = metrics(lean_loss(n, step));
            core_load_report(b, t, step, m, ACTION_CONTINUE); /* borrows m */
            json_decref(m);
        }
        core_load_ended_end(b, t, true, false);
    }
    core_load_done(b, 5000);
    core_changes_clear(b);
    core_release(b);
    assert_int_equal(core_experiment(b, ea->id), eb);
    assert_int_equal(eb->n_trials, LEAN_TRIALS);
    assert_int_equal(eb->counts[TRIAL_STOPPED], ea->counts[TRIAL_STOPPED]);
    assert_int_equal(eb->counts[TRIAL_COMPLETED], ea->counts[TRIAL_COMPLETED]);
    assert_true(ea->counts[TRIAL_STOPPED] > 0 && ea->counts[TRIAL_COMPLETED] > 0);

    AshaRecord ra[256], rb[256];
    int64_t na = sorted_records(ea, ra, 256), nb = sorted_records(eb, rb, 256);
    assert_true(na > LEAN_ENDED);
    assert_int_equal(na, nb);
    assert_memory_equal(ra, rb, (size_t)na * sizeof *ra);

    /* The trials left: every answer the same with and without the restart. */
    Worker *wb = add_worker(b);
    for (int64_t n = LEAN_ENDED; n < LEAN_TRIALS; n++) {
        ReportAction xa[9] = {0}, xb[9] = {0};
        int64_t sa = lean_run(a, wa, n, 6000 + n, xa);
        int64_t sb = lean_run(b, wb, n, 6000 + n, xb);
        assert_int_equal(sa, sb);
        assert_memory_equal(xa, xb, sizeof xa);
    }
    assert_int_equal(ea->state, EXP_COMPLETED);
    assert_int_equal(eb->state, EXP_COMPLETED);
    core_free(a);
    core_free(b);
}

/* The scheduler forgets a trial that core_release lets go
 * (asha_trial_forget): a core that releases every ended trial at once makes
 * every decision of one that never releases any, under hyperband and
 * median, with four trials in flight side by side, while its scheduler
 * holds an entry for the trials in flight only. */
#define FORGET_TRIALS 120
#define FORGET_SLOTS 4

typedef struct ForgetRun {
    ReportAction acts[FORGET_TRIALS][10]; /* by number and step; 0 = continue */
    TrialState ends[FORGET_TRIALS];
    int64_t held_max; /* the scheduler's entries, most at once */
} ForgetRun;

static void forget_run(const char *spec, bool release, ForgetRun *out)
{
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(core, spec);
    int64_t eid = e->id;
    Worker *w = add_worker(core);
    Trial *run[FORGET_SLOTS] = {0};
    int64_t step[FORGET_SLOTS] = {0}, now = 2000;
    int leases = 0;
    memset(out, 0, sizeof *out);
    for (;; now += 10) {
        bool any = false;
        for (int k = 0; k < FORGET_SLOTS; k++) {
            if (run[k] == NULL && (run[k] = lease_as(core, w, k, now)) != NULL) {
                step[k] = 0;
                leases++;
            }
            Trial *t = run[k];
            if (t == NULL)
                continue;
            any = true;
            assert_true(t->number < FORGET_TRIALS);
            step[k]++;
            out->acts[t->number][step[k]] = report_as(core, t, k, step[k],
                                                      lean_loss(t->number, step[k]), now);
            if (t->state == TRIAL_RUNNING && step[k] == 9) { /* median has no max_t */
                char token[CORE_TOKEN_LEN + 1];
                RungError err;
                snprintf(token, sizeof token, "%032d", k);
                assert_int_equal(core_finish(core, t, token, true, NULL, now, &err), 0);
            }
            if (t->state != TRIAL_RUNNING) {
                out->ends[t->number] = t->state;
                run[k] = NULL;
            }
        }
        if (core_experiment(core, eid) == e && asha_trials_held(e->asha) > out->held_max)
            out->held_max = asha_trials_held(e->asha);
        core_changes_clear(core); /* committed */
        if (release)
            core_release(core);
        if (!any)
            break;
    }
    assert_int_equal(leases, FORGET_TRIALS);
    core_free(core);
}

static void test_released_trials_forgotten_same_decisions(void **state)
{
    (void)state;
    static const char *const specs[] = {
        "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 120,"
        " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
        " \"scheduler\": {\"type\": \"hyperband\", \"max_t\": 9, \"grace_period\": 1,"
        " \"reduction_factor\": 3}}",
        "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 120,"
        " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
        " \"scheduler\": {\"type\": \"median\", \"grace_period\": 2,"
        " \"min_samples_required\": 3}}",
    };
    ForgetRun *kept = malloc(sizeof *kept), *forgot = malloc(sizeof *forgot);
    assert_non_null(kept);
    assert_non_null(forgot);
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        forget_run(specs[i], false, kept);
        forget_run(specs[i], true, forgot);
        int64_t stopped = 0;
        for (int n = 0; n < FORGET_TRIALS; n++) {
            stopped += kept->ends[n] == TRIAL_STOPPED;
            assert_int_equal(kept->ends[n], forgot->ends[n]);
            assert_memory_equal(kept->acts[n], forgot->acts[n], sizeof kept->acts[n]);
        }
        assert_true(stopped >= 10 && stopped < FORGET_TRIALS); /* decisions to compare */
        assert_true(kept->held_max > FORGET_TRIALS / 2);
        assert_true(forgot->held_max <= FORGET_SLOTS);
    }
    free(kept);
    free(forgot);
}

/* bayes: the history of released trials stays capped (CORE_HIST_HALF),
 * and keeps what bayes's selection takes: the best 1,000 and the 1,000
 * most recent others (sampler/bayes.h). */
static bool hist_has(const Experiment *e, int64_t number)
{
    for (int64_t i = 0; i < e->n_hist; i++)
        if (e->hist[i].number == number)
            return true;
    return false;
}

static void test_bayes_history_capped(void **state)
{
    (void)state;
    enum { N = 4500, RUN = N - 1 }; /* the last trial stays pending: the experiment runs */
    Core *core = core_new(LEASE_MS);
    Experiment *e = add_experiment(
        core, "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4500,"
              " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
              " \"searcher\": {\"type\": \"bayes\"}}");
    Worker *w = add_worker(core);
    for (int64_t n = 0; n < RUN; n++) {
        Trial *t = lease_as(core, w, (int)n + 1, 2000 + n);
        assert_int_equal(t->number, n);
        /* Distinct losses (7919 is prime to N), in no order of number. */
        report_as(core, t, (int)n + 1, 1, (double)((n * 7919) % N), 2000 + n);
        char token[CORE_TOKEN_LEN + 1];
        snprintf(token, sizeof token, "%032d", (int)n + 1);
        RungError err;
        assert_int_equal(core_finish(core, t, token, true, NULL, 2000 + n, &err), 0);
        core_changes_clear(core);
        core_release(core);
        assert_true(e->n_hist <= 4 * CORE_HIST_HALF);
    }
    assert_true(e->n_hist < RUN); /* pruned */
    assert_int_equal(e->state, EXP_RUNNING);
    /* What bayes would select from all RUN results is all still there. */
    int64_t best = 0, recent = 0;
    for (int64_t n = RUN - 1; n >= 0; n--) {
        int64_t rank = 0; /* losses below this one's among the RUN results */
        double v = (double)((n * 7919) % N);
        for (int64_t k = 0; k < RUN; k++)
            rank += (double)((k * 7919) % N) < v;
        if (rank < 1000) {
            assert_true(hist_has(e, n));
            best++;
        } else if (recent < 1000) {
            assert_true(hist_has(e, n));
            recent++;
        }
    }
    assert_int_equal(best, 1000);
    assert_int_equal(recent, 1000);
    core_free(core);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pareto_and_feasibility),
        cmocka_unit_test(test_constraint_best),
        cmocka_unit_test(test_spec_defaults_and_errors),
        cmocka_unit_test(test_lease_report_finish_completes),
        cmocka_unit_test(test_repeated_report_same_answer_stored_once),
        cmocka_unit_test(test_report_info_merged),
        cmocka_unit_test(test_expiry_retries_then_fails),
        cmocka_unit_test(test_all_trials_failed_fails_the_experiment),
        cmocka_unit_test(test_nan_fails_without_retry),
        cmocka_unit_test(test_finish_failed_retries_then_fails),
        cmocka_unit_test(test_cancel_and_concurrency),
        cmocka_unit_test(test_resources_must_fit),
        cmocka_unit_test(test_spec_scheduler),
        cmocka_unit_test(test_asha_stops_and_completes),
        cmocka_unit_test(test_lean_load_keeps_rung_records_and_decisions),
        cmocka_unit_test(test_released_trials_forgotten_same_decisions),
        cmocka_unit_test(test_bayes_history_capped),
        cmocka_unit_test(test_promote_pauses_and_resumes),
        cmocka_unit_test(test_preempted_waits_for_its_worker_and_resumes),
        cmocka_unit_test(test_preempted_and_the_experiments_end),
        cmocka_unit_test(test_gang_member_preempted_stops_all),
        cmocka_unit_test(test_fair_share_and_priority_order),
        cmocka_unit_test(test_fair_share_over_time_with_one_slot),
        cmocka_unit_test(test_worker_selector_and_trainables),
        cmocka_unit_test(test_metric_missing_and_max_failed_fail_the_experiment),
        cmocka_unit_test(test_pause_running_trials_and_resume),
        cmocka_unit_test(test_stop_rules_and_user_stop),
        cmocka_unit_test(test_gang_forms_with_two_and_three_nodes),
        cmocka_unit_test(test_gang_one_hold_per_worker),
        cmocka_unit_test(test_gang_expiry_and_back_off),
        cmocka_unit_test(test_gang_reserving_forms_while_small_trials_arrive),
        cmocka_unit_test(test_gang_reserving_released_when_too_few_capable),
        cmocka_unit_test(test_gang_member_failure_stops_all_and_retries),
        cmocka_unit_test(test_gang_member_lease_expiry),
        cmocka_unit_test(test_gang_report_from_rank_1_refused),
        cmocka_unit_test(test_gang_undelivered_member),
        cmocka_unit_test(test_gang_restart_rebuild),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
