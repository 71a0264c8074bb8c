/* Unit tests of Population Based Training inside the Core (issue 35):
 * what an exploit, the synch barrier, the lineage, the checkpoints owed
 * and dropped, and a lost worker do to the trials, as docs/schedulers.md
 * ("pbt") promises and the API shows them (state, config, lineage,
 * resume_from, resume_step, the uploads asked in heartbeat replies). The
 * rule that picks who exploits is server/pbt.c's (tests/unit/test_pbt.c);
 * here it is fixed by the values: 4 members, quantile_fraction 0.25, so
 * the bottom 1 takes the top 1's config at each milestone (every 2
 * steps). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core.h"
#include "sched_explore.h"
#include "spec.h"
#include "store.h"

#define LEASE_MS 1000
#define MEMBERS 4

/* x is explored (hyperparam_mutations); k is not: a receiver takes the
 * donor's k as it is. */
#define PBT_SPEC(synch)                                                                            \
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4, \"max_failures\": 0,"           \
    " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"                 \
    " \"k\": {\"type\": \"choice\", \"values\": [1, 2, 3, 4]}},"                                   \
    " \"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 2, \"max_t\": 8,"              \
    " \"quantile_fraction\": 0.25, \"resample_probability\": 0,"                                   \
    " \"hyperparam_mutations\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"        \
    " \"synch\": " synch "},"                                                                      \
    " \"trainable\": {\"type\": \"external\"}}"

/* pb2: the same population, x explored within Ray's hyperparam_bounds by
 * PB2's GP, whose fit runs off the engine thread (sched_explore.h). */
#define PB2_SPEC                                                                                   \
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4, \"max_failures\": 0,"           \
    " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"                 \
    " \"k\": {\"type\": \"choice\", \"values\": [1, 2, 3, 4]}},"                                   \
    " \"scheduler\": {\"type\": \"pb2\", \"perturbation_interval\": 2, \"max_t\": 8,"              \
    " \"quantile_fraction\": 0.25, \"hyperparam_bounds\": {\"x\": [0, 1]}},"                       \
    " \"trainable\": {\"type\": \"external\"}}"

typedef struct Pop {
    Core *core;
    Experiment *e;
    Worker *w[MEMBERS + 1]; /* w[i] runs member i; w[MEMBERS] runs nothing */
    Trial *t[MEMBERS];
    char tok[MEMBERS][CORE_TOKEN_LEN + 1];
} Pop;

static int64_t lease_seq;

static Trial *lease(Pop *p, int wi, char *token)
{
    LeaseOffer o;
    memset(&o, 0, sizeof o);
    o.cpus = 1;
    o.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL);
    snprintf(token, CORE_TOKEN_LEN + 1, "%032lld", (long long)++lease_seq);
    return core_lease(p->core, p->w[wi], &o, token, 2000);
}

/* Member i's config: x = 0.1 (i + 1), k = i + 1. clear: forget the changes
 * so far (keep them to write them in a store). */
static void pop_start_keep(Pop *p, const char *spec_text, bool clear)
{
    memset(p, 0, sizeof *p);
    p->core = core_new(LEASE_MS);
    json_t *j = json_loads(spec_text, 0, NULL);
    assert_non_null(j);
    Spec spec;
    RungError err;
    rung_error_clear(&err);
    if (spec_parse(j, 42, &spec, &err) != 0)
        fail_msg("spec rejected: %s", err.message);
    json_decref(j);
    p->e = core_experiment_add(p->core, &spec, 1000);
    for (int i = 0; i < MEMBERS; i++)
        core_trial_add(p->core, p->e,
                       json_pack("{s:f, s:i}", "x", 0.1 * (i + 1), "k", (json_int_t)(i + 1)), 1000);
    for (int i = 0; i <= MEMBERS; i++)
        p->w[i] = core_worker_add(p->core, "w", "host", json_array(), 8, 1000);
    for (int i = 0; i < MEMBERS; i++) {
        p->t[i] = lease(p, i, p->tok[i]);
        assert_non_null(p->t[i]);
        assert_int_equal(p->t[i]->number, i);
    }
    if (clear)
        core_changes_clear(p->core);
}

static void pop_start(Pop *p, const char *spec_text)
{
    pop_start_keep(p, spec_text, true);
}

static ReportAction report(Pop *p, int i, int64_t step, double loss, int64_t now)
{
    json_t *m = json_pack("{s:f}", "loss", loss);
    ReportAction a = ACTION_CONTINUE;
    RungError err;
    rung_error_clear(&err);
    assert_int_equal(core_report(p->core, p->t[i], p->tok[i], step, m, now, &a, &err), 0);
    json_decref(m);
    return a;
}

static double cfg_x(const Trial *t)
{
    return json_real_value(json_object_get(t->config, "x"));
}

static json_int_t cfg_k(const Trial *t)
{
    return json_integer_value(json_object_get(t->config, "k"));
}

static bool queued_for_write(Core *core, const Trial *t)
{
    CoreChanges c;
    core_changes(core, &c);
    for (int64_t i = 0; i < c.n_trials; i++)
        if (c.trials[i] == t)
            return true;
    return false;
}

/* Steps 1 and 2 of every member, the worst last: asynchronously each is
 * judged on arrival at milestone 2 against those there before it. */
static ReportAction reach_milestone(Pop *p, const double loss[MEMBERS], int64_t now)
{
    for (int i = 0; i < MEMBERS; i++)
        assert_int_equal(report(p, i, 1, 1.0, now), ACTION_CONTINUE);
    ReportAction last = ACTION_CONTINUE;
    for (int i = 0; i < MEMBERS; i++) {
        last = report(p, i, 2, loss[i], now);
        if (i < MEMBERS - 1)
            assert_int_equal(last, ACTION_CONTINUE);
    }
    return last;
}

/* Asynchronous: the last and worst member at milestone 2 takes the best
 * one's config (k as it is, x explored) and checkpoint; the answer to its
 * report is stop, and it waits first in line, resuming at the milestone
 * from the donor's checkpoint, its attempt unchanged. */
static void test_exploit_takes_the_donors_config_and_checkpoint(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("false"));
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    Trial *r = p.t[3], *donor = p.t[2];
    assert_int_equal(r->state, TRIAL_PENDING);
    assert_ptr_equal(p.e->pending.head, r);
    assert_int_equal(r->attempt, 1);
    assert_int_equal(r->from_trial, donor->id);
    assert_int_equal(r->from_step, 2);
    assert_int_equal(r->from_worker, p.w[2]->id);
    assert_int_equal(core_resume_step(r), 2);
    /* Its config: the donor's, explored (x scaled by 0.8 or 1.2). */
    assert_int_equal(cfg_k(r), cfg_k(donor));
    double x = cfg_x(r);
    assert_true(fabs(x - 0.3 * 0.8) < 1e-9 || fabs(x - 0.3 * 1.2) < 1e-9);
    assert_true(r->config_changed);
    assert_true(queued_for_write(p.core, r));
    /* Nobody else exploited; the others run on. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(p.t[i]->state, TRIAL_RUNNING);
        assert_null(p.t[i]->lineage);
        assert_int_equal(p.t[i]->from_trial, 0);
    }
    /* A repeated report of that step gets the same answer. */
    assert_int_equal(report(&p, 3, 2, 0.9, 3100), ACTION_STOP);
    core_free(p.core);
}

/* The lineage: each exploit, oldest first, with the step, the donor and
 * its step, the config before and after, and the time. */
static void test_lineage_records_each_exploit(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("false"));
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    Trial *r = p.t[3];
    assert_non_null(r->lineage);
    assert_int_equal(json_array_size(r->lineage), 1);
    json_t *x = json_array_get(r->lineage, 0);
    assert_int_equal(json_integer_value(json_object_get(x, "step")), 2);
    assert_int_equal(json_integer_value(json_object_get(x, "donor")), p.t[2]->id);
    assert_int_equal(json_integer_value(json_object_get(x, "donor_step")), 2);
    json_t *was = json_pack("{s:f, s:i}", "x", 0.4, "k", 4);
    assert_true(json_equal(json_object_get(x, "from"), was));
    json_decref(was);
    assert_true(json_equal(json_object_get(x, "config"), r->config));
    assert_non_null(json_string_value(json_object_get(x, "time")));

    /* It goes on (on the donor's worker, which holds the checkpoint) and
     * is the worst again at milestone 4: a second exploit joins. */
    assert_ptr_equal(lease(&p, 2, p.tok[3]), r);
    json_t *config1 = json_deep_copy(r->config);
    assert_int_equal(report(&p, 3, 3, 0.8, 4000), ACTION_CONTINUE);
    /* Each better than those before it: nobody else is in the bottom. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(report(&p, i, 3, 0.5, 4000), ACTION_CONTINUE);
        assert_int_equal(report(&p, i, 4, 0.3 - 0.1 * i, 4000), ACTION_CONTINUE);
    }
    assert_int_equal(report(&p, 3, 4, 0.95, 4100), ACTION_STOP);
    assert_int_equal(json_array_size(r->lineage), 2);
    x = json_array_get(r->lineage, 1);
    assert_int_equal(json_integer_value(json_object_get(x, "step")), 4);
    assert_int_equal(json_integer_value(json_object_get(x, "donor")), p.t[2]->id);
    assert_int_equal(json_integer_value(json_object_get(x, "donor_step")), 4);
    assert_true(json_equal(json_object_get(x, "from"), config1));
    assert_true(json_equal(json_object_get(x, "config"), r->config));
    assert_int_equal(r->from_step, 4);
    json_decref(config1);
    core_free(p.core);
}

static uint64_t upload_seq;

static void upload_token(char out[CORE_TOKEN_LEN + 1])
{
    snprintf(out, CORE_TOKEN_LEN + 1, "u%031llu", (unsigned long long)++upload_seq);
}

/* The receiver waits for the donor's worker; once another worker would
 * take it, the donor's worker is asked (heartbeat reply) to upload the
 * checkpoint, which only it may, with its token; once stored, any worker
 * takes the receiver and may download it; once the receiver reports past
 * the milestone the copy is dropped. */
static void test_checkpoint_owed_stored_and_dropped(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("false"));
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    Trial *r = p.t[3], *donor = p.t[2];
    Worker *idle = p.w[MEMBERS], *dw = p.w[2];

    /* The receiver waits for it; but nothing is asked of the donor's
     * worker while no other worker would take the receiver. */
    assert_true(core_checkpoint_owed(p.core, donor->id, 2));
    assert_false(core_checkpoint_owed(p.core, donor->id, 4));
    json_t *up = core_uploads_for(p.core, dw, upload_token);
    assert_int_equal(json_array_size(up), 0);
    json_decref(up);
    assert_false(r->ckpt_wanted);

    /* Another worker would: it gets nothing, the donor's worker is asked. */
    char tok[CORE_TOKEN_LEN + 1];
    assert_null(lease(&p, MEMBERS, tok));
    assert_true(r->ckpt_wanted);
    up = core_uploads_for(p.core, idle, upload_token);
    assert_int_equal(json_array_size(up), 0); /* not the donor's worker */
    json_decref(up);
    up = core_uploads_for(p.core, dw, upload_token);
    assert_int_equal(json_array_size(up), 1);
    json_t *u = json_array_get(up, 0);
    assert_int_equal(json_integer_value(json_object_get(u, "trial")), donor->id);
    assert_int_equal(json_integer_value(json_object_get(u, "step")), 2);
    char utok[CORE_TOKEN_LEN + 1];
    snprintf(utok, sizeof utok, "%s", json_string_value(json_object_get(u, "token")));
    json_decref(up);
    /* The same token while it is owed. */
    up = core_uploads_for(p.core, dw, upload_token);
    assert_string_equal(json_string_value(json_object_get(json_array_get(up, 0), "token")), utok);
    json_decref(up);

    RungError err;
    rung_error_clear(&err);
    assert_int_equal(core_upload_check(p.core, donor->id, 2, idle->id, utok, &err),
                     RUNG_E_FORBIDDEN);
    assert_string_equal(err.field, "worker");
    assert_int_equal(core_upload_check(p.core, donor->id, 2, dw->id, "nope", &err),
                     RUNG_E_FORBIDDEN);
    assert_string_equal(err.field, "upload_token");
    assert_int_equal(core_upload_check(p.core, donor->id, 4, dw->id, utok, &err),
                     RUNG_E_CONFLICT); /* a checkpoint nobody waits for */
    assert_int_equal(core_upload_check(p.core, donor->id, 2, dw->id, utok, &err), 0);

    core_changes_clear(p.core);
    CoreCheckpoint c = {.trial_id = donor->id, .step = 2, .size = 10, .stored_at = 3500};
    snprintf(c.sha256, sizeof c.sha256, "%064d", 7);
    core_checkpoint_stored(p.core, &c);
    CoreChanges ch;
    core_changes(p.core, &ch);
    assert_int_equal(ch.n_ckpts, 1); /* its row goes with the next commit */
    assert_int_equal(ch.ckpts[0].trial_id, donor->id);
    assert_non_null(core_checkpoint(p.core, donor->id, 2));
    core_changes_clear(p.core);

    /* Stored: the idle worker takes the receiver and may download it; a
     * worker that does not run it may not. */
    char rtok[CORE_TOKEN_LEN + 1];
    assert_ptr_equal(lease(&p, MEMBERS, rtok), r);
    assert_int_equal(core_resume_step(r), 2);
    assert_int_equal(core_download_check(p.core, donor->id, 2, idle->id, rtok, &err), 0);
    assert_int_equal(core_download_check(p.core, donor->id, 2, dw->id, rtok, &err),
                     RUNG_E_FORBIDDEN);
    up = core_uploads_for(p.core, dw, upload_token);
    assert_int_equal(json_array_size(up), 0); /* stored: no longer asked */
    json_decref(up);
    assert_false(core_checkpoint_owed(p.core, donor->id, 2)); /* nobody waits: it runs */

    /* The receiver goes on past the milestone: the copy is dropped (its
     * row deleted with the commit, the file after it). */
    snprintf(p.tok[3], sizeof p.tok[3], "%s", rtok);
    assert_int_equal(report(&p, 3, 3, 0.4, 3600), ACTION_CONTINUE);
    assert_int_equal(r->from_trial, 0);
    core_changes(p.core, &ch);
    assert_int_equal(ch.n_dropped_ckpts, 1);
    assert_int_equal(ch.dropped_ckpts[0].trial_id, donor->id);
    assert_int_equal(ch.dropped_ckpts[0].step, 2);
    assert_null(core_checkpoint(p.core, donor->id, 2));
    assert_false(core_checkpoint_owed(p.core, donor->id, 2));
    core_free(p.core);
}

/* A donor that finished and left memory (core_release) before its
 * receiver went on: the stored copy is still dropped once nobody wants it,
 * not kept (row and file) for the life of the database. */
static void test_released_donors_checkpoint_dropped(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("false"));
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    Trial *r = p.t[3], *donor = p.t[2];
    int64_t donor_id = donor->id;
    char tok[CORE_TOKEN_LEN + 1];
    assert_null(lease(&p, MEMBERS, tok)); /* the donor's worker is asked */
    CoreCheckpoint c = {.trial_id = donor_id, .step = 2, .size = 10, .stored_at = 3500};
    snprintf(c.sha256, sizeof c.sha256, "%064d", 7);
    core_checkpoint_stored(p.core, &c);
    char rtok[CORE_TOKEN_LEN + 1];
    assert_ptr_equal(lease(&p, MEMBERS, rtok), r);

    /* The donor ends and, once committed, leaves memory. */
    RungError err;
    rung_error_clear(&err);
    assert_int_equal(core_finish(p.core, donor, p.tok[2], true, NULL, 3550, &err), 0);
    core_changes_clear(p.core);
    core_release(p.core);
    assert_null(core_trial(p.core, donor_id));
    assert_non_null(core_checkpoint(p.core, donor_id, 2));

    /* The receiver goes on past the milestone: nobody wants the copy. */
    snprintf(p.tok[3], sizeof p.tok[3], "%s", rtok);
    assert_int_equal(report(&p, 3, 3, 0.4, 3600), ACTION_CONTINUE);
    CoreChanges ch;
    core_changes(p.core, &ch);
    assert_int_equal(ch.n_dropped_ckpts, 1);
    assert_int_equal(ch.dropped_ckpts[0].trial_id, donor_id);
    assert_null(core_checkpoint(p.core, donor_id, 2));
    core_free(p.core);
}

/* synch: nobody exploits until every member not ended has recorded at the
 * milestone; those there wait paused at it (answer stop). The last one's
 * report ranks them all: the bottom one exploits, the others go on from
 * their own checkpoints of the milestone. */
static void test_synch_barrier(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("true"));
    for (int i = 0; i < MEMBERS; i++)
        assert_int_equal(report(&p, i, 1, 1.0, 3000), ACTION_CONTINUE);
    const double loss[MEMBERS] = {0.3, 0.9, 0.1, 0.2};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(report(&p, i, 2, loss[i], 3000), ACTION_STOP);
        assert_int_equal(p.t[i]->state, TRIAL_PAUSED);
        assert_true(p.t[i]->rung == 2.0);
        for (int k = 0; k <= i; k++) {
            assert_null(p.t[k]->lineage); /* nobody exploited yet */
            assert_int_equal(p.t[k]->from_trial, 0);
        }
    }
    assert_int_equal(p.t[3]->state, TRIAL_RUNNING);
    /* The last arrives (not the worst) and runs on: the worst, member 1,
     * exploits from the best, member 2; the ones that waited go on from
     * the milestone. */
    assert_int_equal(report(&p, 3, 2, loss[3], 3100), ACTION_CONTINUE);
    assert_int_equal(p.t[3]->state, TRIAL_RUNNING);
    for (int i = 0; i < MEMBERS; i++) {
        if (i != 3)
            assert_int_equal(p.t[i]->state, TRIAL_PENDING);
        if (i == 1) {
            assert_int_equal(p.t[i]->from_trial, p.t[2]->id);
            assert_int_equal(json_array_size(p.t[i]->lineage), 1);
            assert_int_equal(cfg_k(p.t[i]), cfg_k(p.t[2]));
        } else {
            assert_int_equal(p.t[i]->from_trial, 0);
            assert_null(p.t[i]->lineage);
        }
    }
    /* Leased again, each resumes at the milestone (its lease's
     * resume_step) where its checkpoint is: member 0 on its worker,
     * members 1 (from member 2's checkpoint) and 2 on member 2's; member
     * 1's own worker takes nothing. */
    char tok[CORE_TOKEN_LEN + 1];
    assert_null(lease(&p, 1, tok));
    static const int by[3] = {0, 2, 2};
    int got_mask = 0;
    for (int i = 0; i < 3; i++) {
        Trial *got = lease(&p, by[i], tok);
        assert_non_null(got);
        assert_int_equal(core_resume_step(got), 2);
        got_mask |= 1 << got->number;
    }
    assert_int_equal(got_mask, 7);
    core_free(p.core);
}

/* synch: a member that ends (fails) while the others wait releases them:
 * the three recorded are ranked without it. */
static void test_synch_member_ending_releases_the_barrier(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("true"));
    const double loss[3] = {0.3, 0.1, 0.2};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(report(&p, i, 1, 1.0, 3000), ACTION_CONTINUE);
        assert_int_equal(report(&p, i, 2, loss[i], 3000), ACTION_STOP);
        assert_int_equal(p.t[i]->state, TRIAL_PAUSED);
    }
    RungError err;
    rung_error_clear(&err);
    assert_int_equal(core_finish(p.core, p.t[3], p.tok[3], false, "exit status 1", 3100, &err), 0);
    assert_int_equal(p.t[3]->state, TRIAL_FAILED);    /* max_failures 0 */
    assert_int_equal(p.t[0]->from_trial, p.t[1]->id); /* the worst of three, from the best */
    assert_int_equal(p.t[0]->state, TRIAL_PENDING);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(p.t[i]->state, TRIAL_PENDING);
        assert_int_equal(p.t[i]->from_trial, 0);
        assert_null(p.t[i]->lineage);
    }
    core_free(p.core);
}

/* A member whose worker is lost (its lease ran out) is not failed: it goes
 * back to the front of the line with its steps and attempt, and resumes
 * from its last reported step; after CORE_PBT_LOST_RESUMES such losses the
 * next one is a lost worker as for any trial: a new attempt from the
 * start (CORE_MAX_WORKER_LOSSES of those before max_failures counts). */
static void test_lost_worker_resumes_then_fails(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("false"));
    Trial *t = p.t[0];
    int64_t now = 3000;
    assert_int_equal(report(&p, 0, 1, 0.5, now), ACTION_CONTINUE);
    for (int loss = 1; loss <= CORE_PBT_LOST_RESUMES; loss++) {
        now += 10 * LEASE_MS;
        for (int i = 1; i < MEMBERS; i++) /* the others' workers are alive */
            json_decref(core_heartbeat(p.core, p.w[i], &p.t[i]->id, 1, NULL, now));
        assert_int_equal(core_expire_leases(p.core, now), 1);
        assert_int_equal(t->state, TRIAL_PENDING);
        assert_ptr_equal(p.e->pending.head, t);
        assert_int_equal(t->attempt, 1);
        assert_int_equal(t->step, loss);
        assert_int_equal(t->lost_resumes, loss);
        /* Its worker is gone too: any worker takes it, from its last step. */
        LeaseOffer o;
        memset(&o, 0, sizeof o);
        o.cpus = 1;
        o.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL);
        Worker *w = core_worker_add(p.core, "late", "host", json_array(), 8, now);
        snprintf(p.tok[0], sizeof p.tok[0], "%032d", 900 + loss);
        assert_ptr_equal(core_lease(p.core, w, &o, p.tok[0], now), t);
        assert_int_equal(core_resume_step(t), loss);
        assert_int_equal(report(&p, 0, loss + 1, 0.5, now), ACTION_CONTINUE);
    }
    now += 10 * LEASE_MS;
    for (int i = 1; i < MEMBERS; i++)
        json_decref(core_heartbeat(p.core, p.w[i], &p.t[i]->id, 1, NULL, now));
    assert_int_equal(core_expire_leases(p.core, now), 1);
    assert_int_equal(t->state, TRIAL_PENDING);
    assert_int_equal(t->attempt, 2);
    assert_int_equal(t->worker_losses, 1);
    assert_int_equal(t->lost_resumes, CORE_PBT_LOST_RESUMES);
    core_free(p.core);
}

/* The receiver's donor worker is lost before it uploaded: any worker may
 * take the receiver, which starts over from its new config without the
 * checkpoint (docs/schedulers.md, "pbt"); its first report past the
 * milestone clears what was owed. */
static void test_donor_checkpoint_never_comes(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PBT_SPEC("false"));
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    Trial *r = p.t[3];
    json_t *config = json_deep_copy(r->config);
    char tok[CORE_TOKEN_LEN + 1];
    assert_null(lease(&p, MEMBERS, tok)); /* the donor's worker is alive */
    /* Later: only the idle worker still calls (the donor's went silent). */
    int64_t later = 3000 + 5 * LEASE_MS;
    core_worker_seen(p.core, p.w[MEMBERS], later);
    LeaseOffer o;
    memset(&o, 0, sizeof o);
    o.cpus = 1;
    o.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL);
    snprintf(tok, sizeof tok, "%032d", 777);
    assert_ptr_equal(core_lease(p.core, p.w[MEMBERS], &o, tok, later), r);
    assert_true(json_equal(r->config, config)); /* its new config, all the same */
    assert_int_equal(r->from_trial, p.t[2]->id);
    snprintf(p.tok[3], sizeof p.tok[3], "%s", tok);
    assert_int_equal(report(&p, 3, 1, 0.5, later), ACTION_CONTINUE); /* started over */
    assert_int_equal(report(&p, 3, 3, 0.5, later), ACTION_CONTINUE);
    assert_int_equal(r->from_trial, 0);
    assert_false(core_checkpoint_owed(p.core, p.t[2]->id, 2));
    json_decref(config);
    core_free(p.core);
}

/* pb2: the worst member's report at the milestone is answered stop, and
 * it waits paused for its explore: not leasable, no lineage yet, the
 * donor's checkpoint owed. The Core hands the explore out once; applied,
 * the member goes first in line with the donor's k and an x in the
 * bounds, the exploit in its lineage. A second answer finds it waiting no
 * more and is dropped. */
static void test_pb2_member_waits_for_its_explore(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PB2_SPEC);
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    Trial *r = p.t[3];
    assert_int_equal(r->state, TRIAL_PAUSED);
    assert_int_equal(r->explore_at, 2);
    assert_null(r->lineage);
    assert_int_equal(r->from_trial, p.t[2]->id);
    assert_int_equal(cfg_k(r), 4); /* its own config until the explore comes */
    /* Its donor's checkpoint stays wanted, but no upload is owed yet: it
     * is not in line. */
    assert_false(core_checkpoint_owed(p.core, p.t[2]->id, 2));
    char tok[CORE_TOKEN_LEN + 1];
    assert_null(lease(&p, MEMBERS, tok)); /* waiting: nobody may take it */
    PbtExplore *x = core_take_explores(p.core);
    assert_non_null(x);
    assert_null(x->next);
    assert_null(core_take_explores(p.core)); /* handed out once */
    assert_int_equal(x->trial_id, r->id);
    assert_int_equal(x->milestone, 2);
    assert_int_equal(json_integer_value(json_object_get(x->base, "k")), 3); /* the donor's */
    json_t *config = pbt_explore_compute(x);
    assert_non_null(config);
    json_t *again = pbt_explore_compute(x); /* drawn from (seed, number, milestone) */
    assert_true(json_equal(config, again));
    assert_true(core_pbt_explored(p.core, r->id, 2, config, 3500));
    assert_int_equal(r->state, TRIAL_PENDING);
    assert_int_equal(r->explore_at, 0);
    assert_int_equal(cfg_k(r), 3);
    assert_true(cfg_x(r) >= 0 && cfg_x(r) <= 1);
    assert_true(queued_for_write(p.core, r));
    assert_int_equal(json_array_size(r->lineage), 1);
    json_t *entry = json_array_get(r->lineage, 0);
    assert_int_equal(json_integer_value(json_object_get(entry, "step")), 2);
    assert_int_equal(json_integer_value(json_object_get(entry, "donor")), p.t[2]->id);
    assert_true(json_equal(json_object_get(entry, "config"), r->config));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(entry, "from"), "k")), 4);
    /* Late or twice: dropped, nothing changes. */
    assert_false(core_pbt_explored(p.core, r->id, 2, again, 3600));
    assert_int_equal(json_array_size(r->lineage), 1);
    assert_true(core_checkpoint_owed(p.core, p.t[2]->id, 2)); /* in line now */
    pbt_explore_free(x);
    core_free(p.core);
}

/* The experiment is canceled while a member waits: the member is canceled,
 * and its explore's late answer is dropped. */
static void test_pb2_canceled_members_late_answer_dropped(void **state)
{
    (void)state;
    Pop p;
    pop_start(&p, PB2_SPEC);
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    Trial *r = p.t[3];
    json_t *before = json_deep_copy(r->config);
    PbtExplore *x = core_take_explores(p.core);
    assert_non_null(x);
    RungError err;
    rung_error_clear(&err);
    assert_int_equal(core_cancel(p.core, p.e, 3200, &err), 0);
    assert_int_equal(r->state, TRIAL_CANCELED);
    assert_false(core_pbt_explored(p.core, r->id, 2, pbt_explore_compute(x), 3500));
    assert_int_equal(r->state, TRIAL_CANCELED);
    assert_null(r->lineage);
    assert_true(json_equal(r->config, before));
    json_decref(before);
    pbt_explore_free(x);
    core_free(p.core);
}

/* Writes the Core's changes in a transaction of their own. */
static void store_changes(Store *store, Core *core)
{
    CoreChanges c;
    RungError err;
    rung_error_clear(&err);
    core_changes(core, &c);
    assert_int_equal(store_begin(store, &err), 0);
    assert_int_equal(store_write_changes(store, &c, &err), 0);
    assert_int_equal(store_commit(store, &err), 0);
    core_changes_clear(core);
}

/* rungd stops while a member waits for its explore (its first ask may be
 * lost with the proposer): loaded again, the member still waits, and the
 * load asks for the explore again, with the donor's config as its base. */
static void test_pb2_reload_asks_again(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_core_pbt_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/rung.db", dir);
    StoreOptions opt = {.durable_full = false, .init = true, .data_dir = NULL};
    Store *store = NULL;
    RungError err;
    rung_error_clear(&err);
    assert_int_equal(store_open(path, &opt, &store, &err), 0);
    Pop p;
    pop_start_keep(&p, PB2_SPEC, false);
    const double loss[MEMBERS] = {0.3, 0.2, 0.1, 0.9};
    assert_int_equal(reach_milestone(&p, loss, 3000), ACTION_STOP);
    int64_t rid = p.t[3]->id, did = p.t[2]->id;
    store_changes(store, p.core);
    PbtExplore *lost = core_take_explores(p.core);
    assert_non_null(lost);
    core_free(p.core);

    Core *core = core_new(LEASE_MS);
    assert_int_equal(store_load(store, core, 4000, &err), 0);
    Trial *r = core_trial(core, rid);
    assert_non_null(r);
    assert_int_equal(r->state, TRIAL_PAUSED);
    assert_int_equal(r->explore_at, 2);
    assert_int_equal(r->from_trial, did);
    PbtExplore *x = core_take_explores(core);
    assert_non_null(x);
    assert_null(x->next);
    assert_int_equal(x->trial_id, rid);
    assert_int_equal(x->milestone, 2);
    assert_true(json_equal(x->base, lost->base));
    json_t *config = pbt_explore_compute(x);
    json_t *first = pbt_explore_compute(lost); /* the same data: the same config */
    assert_true(json_equal(config, first));
    json_decref(first);
    assert_true(core_pbt_explored(core, rid, 2, config, 4100));
    assert_int_equal(r->state, TRIAL_PENDING);
    assert_int_equal(json_array_size(r->lineage), 1);
    /* Stored so, and loaded again: it waits no more. */
    store_changes(store, core);
    core_free(core);
    core = core_new(LEASE_MS);
    assert_int_equal(store_load(store, core, 5000, &err), 0);
    r = core_trial(core, rid);
    assert_non_null(r);
    assert_int_equal(r->state, TRIAL_PENDING);
    assert_int_equal(r->explore_at, 0);
    assert_null(core_take_explores(core));
    pbt_explore_free(x);
    pbt_explore_free(lost);
    core_free(core);
    store_close(store);
    char f[96];
    const char *suffix[] = {"", "-wal", "-shm", ".created"};
    for (int i = 0; i < 4; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exploit_takes_the_donors_config_and_checkpoint),
        cmocka_unit_test(test_lineage_records_each_exploit),
        cmocka_unit_test(test_checkpoint_owed_stored_and_dropped),
        cmocka_unit_test(test_released_donors_checkpoint_dropped),
        cmocka_unit_test(test_synch_barrier),
        cmocka_unit_test(test_synch_member_ending_releases_the_barrier),
        cmocka_unit_test(test_lost_worker_resumes_then_fails),
        cmocka_unit_test(test_donor_checkpoint_never_comes),
        cmocka_unit_test(test_pb2_member_waits_for_its_explore),
        cmocka_unit_test(test_pb2_canceled_members_late_answer_dropped),
        cmocka_unit_test(test_pb2_reload_asks_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
