/* The pbt and pb2 schedulers inside the Core (docs/schedulers.md, "pbt",
 * "pb2"): a member's report at a milestone exploits a better member
 * (config and checkpoint) and explores its config; with synch, members
 * wait at each milestone for the others. pbt.c keeps the population's
 * records; this file is the only one of the Core that calls the sampler's
 * explore (pb2_propose, space_mutate). */
#include "core_internal.h"
#include "pb2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pbt: the config t trained `step` with. An exploit at step s changes the
 * config from step s + 1 on (the report at s was the old config's). */
static json_t *config_at(const Trial *t, int64_t step)
{
    json_t *c = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(t->lineage, i, x) {
        if (json_integer_value(json_object_get(x, "step")) >= step)
            return c != NULL ? c : json_object_get(x, "from");
        c = json_object_get(x, "config");
    }
    return c != NULL ? c : t->config;
}

static PbtMember pbt_member(const Trial *t, int64_t step)
{
    return (PbtMember){.number = t->number,
                       .id = t->id,
                       .worker = t->worker_id,
                       .step = step,
                       .config = config_at(t, step)};
}

/* pb2 (sampler/pb2.h): the donor's config with the mutated parameters
 * chosen by PB2's GP bandit over the population's score changes so far. */
static json_t *explore_pb2(const Experiment *e, const PbtMember *donor, int64_t number,
                           int64_t milestone)
{
    PbtChange *ch = malloc(PB2_MAX_OBS * sizeof *ch);
    Pb2Obs *obs = malloc(PB2_MAX_OBS * sizeof *obs);
    json_t *next = NULL;
    if (ch != NULL && obs != NULL) {
        int64_t n = pbt_changes(e->pbt, ch, PB2_MAX_OBS);
        for (int64_t i = 0; i < n; i++)
            obs[i] = (Pb2Obs){.config = ch[i].config,
                              .time = (double)ch[i].milestone,
                              .change = ch[i].change};
        next = pb2_propose(e->spec.mutations, donor->config, obs, (int)n, (double)milestone,
                           e->spec.pbt.seed, (uint64_t)number, (uint64_t)milestone);
    }
    free(ch);
    free(obs);
    return next;
}

/* pbt's explore: the config member `number` goes on with after it exploits
 * donor at milestone (a new object). pb2 fits its GP here; this is the one
 * step of the scheduler that is a model fit, and it reads only the
 * population's records and the spec (docs/schedulers.md, "pb2"). */
static json_t *explore(const Experiment *e, const PbtMember *donor, int64_t number,
                       int64_t milestone)
{
    json_t *next = NULL;
    if (e->spec.is_pb2)
        next = explore_pb2(e, donor, number, milestone);
    if (next == NULL) /* pbt; or pb2's GP failed numerically: explore as pbt does */
        next = space_mutate(e->spec.mutations, donor->config, e->spec.pbt_resample,
                            e->spec.pbt.seed, (uint64_t)number, (uint64_t)milestone);
    if (next == NULL)
        abort();
    return next;
}

/* pbt's exploit and explore (docs/schedulers.md, "pbt"): t takes the
 * donor's config, mutated, and resumes from the donor's checkpoint; the
 * exploit joins t's lineage. The answer to t's report is stop: the worker
 * ends the program, and the trial is leased again at once. */
static void exploit(Core *core, Trial *t, const PbtMember *donor, int64_t milestone, int64_t now)
{
    Experiment *e = t->exp;
    json_t *next = explore(e, donor, t->number, milestone);
    if (t->lineage == NULL)
        t->lineage = json_array();
    char when[32];
    rung_time_format(now, when, sizeof when);
    json_array_append_new(t->lineage,
                          json_pack("{s:I, s:I, s:I, s:O, s:O, s:s}", "step", (json_int_t)milestone,
                                    "donor", (json_int_t)donor->id, "donor_step",
                                    (json_int_t)donor->step, "from", t->config, "config", next,
                                    "time", when));
    json_decref(t->config);
    t->config = next;
    t->config_changed = true;
    t->from_trial = donor->id;
    t->from_step = donor->step;
    t->from_worker = donor->worker;
    core_set_state(core, t, TRIAL_PAUSED, now);
    core_trial_resume(core, t, now);
}

/* synch: whether every live member of e has recorded at the milestone
 * (or passed it), every trial of the experiment having been made. */
static bool sync_ready(const Experiment *e, int64_t milestone)
{
    if (e->n_trials < e->spec.total_trials)
        return false;
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        const Trial *x = e->trials[i];
        if (x != NULL && !trial_state_terminal(x->state) &&
            !pbt_reached(e->pbt, x->number, milestone))
            return false;
    }
    return true;
}

/* synch: the milestone is complete; its bottom members exploit, and every
 * member waiting there goes on (from its own checkpoint, or the donor's).
 * self, when not NULL, is the running trial whose report completed it; the
 * answer to that report. */
static ReportAction sync_release(Core *core, Experiment *e, int64_t milestone, Trial *self,
                                 int64_t now)
{
    int64_t cap = e->n_trials > 0 ? e->n_trials : 1;
    int64_t *recv = malloc((size_t)cap * sizeof *recv);
    PbtMember *donors = malloc((size_t)cap * sizeof *donors);
    if (recv == NULL || donors == NULL)
        abort();
    ReportAction a = ACTION_CONTINUE;
    int64_t n = pbt_exploits(e->pbt, milestone, recv, donors, cap);
    for (int64_t i = 0; i < n; i++) {
        Trial *x = core_exp_trial(e, recv[i]);
        bool waiting = x != NULL && x->state == TRIAL_PAUSED && x->rung == (double)milestone;
        if (x == NULL || (x != self && !waiting))
            continue;
        exploit(core, x, &donors[i], milestone, now);
        if (x == self)
            a = ACTION_STOP;
    }
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        Trial *x = e->trials[i];
        if (x != NULL && x->state == TRIAL_PAUSED && !x->user_paused &&
            x->rung == (double)milestone)
            core_trial_resume(core, x, now);
    }
    free(recv);
    free(donors);
    return a;
}

/* synch: members wait at a milestone for the others; when one ends (or
 * the state is loaded) the wait may be over. */
static void sync_check(Core *core, Experiment *e, int64_t now)
{
    if (e->pbt == NULL || !e->spec.pbt.synch || e->counts[TRIAL_PAUSED] == 0)
        return;
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        Trial *x = e->trials[i];
        if (x != NULL && x->state == TRIAL_PAUSED && !x->user_paused && x->rung > 0 &&
            sync_ready(e, (int64_t)x->rung)) {
            sync_release(core, e, (int64_t)x->rung, NULL, now);
            return;
        }
    }
}

static ReportAction report(Core *core, Trial *t, const ReportRead *r, const json_t *metrics,
                           int64_t now)
{
    Experiment *e = t->exp;
    if (!r->has_time)
        return ACTION_CONTINUE;
    t->time = r->time;
    t->has_time = true;
    json_decref(t->last);
    t->last = json_incref((json_t *)metrics);
    PbtMember self = pbt_member(t, r->step), donor;
    int64_t milestone = 0;
    ReportAction a = ACTION_CONTINUE;
    /* A value that is not finite is recorded too: it ranks last (pbt.h). */
    switch (pbt_report(e->pbt, &self, r->has_value, r->value, &donor, &milestone)) {
    case PBT_CONTINUE:
        break;
    case PBT_COMPLETE:
        core_end_for_scheduler(core, t, TRIAL_COMPLETED, now);
        a = ACTION_STOP;
        break;
    case PBT_EXPLOIT:
        exploit(core, t, &donor, milestone, now);
        a = ACTION_STOP;
        break;
    case PBT_SYNC:
        if (sync_ready(e, milestone)) {
            a = sync_release(core, e, milestone, t, now);
        } else {
            /* Wait at the milestone, as a trial asha pauses at a rung. */
            t->rung = (double)milestone;
            core_set_state(core, t, TRIAL_PAUSED, now);
            a = ACTION_STOP;
        }
        break;
    }
    core_maybe_complete(core, e, now);
    return a;
}

/* A new attempt after a failure starts over with the config it has now:
 * its records and any checkpoint it was to copy go. */
static void retry(Core *core, Trial *t)
{
    Experiment *e = t->exp;
    pbt_forget(e->pbt, t->number);
    t->from_trial = t->from_step = t->from_worker = 0;
    core_drop_unneeded_ckpts(core, e);
}

static void exp_end(Core *core, Experiment *e)
{
    core_drop_unneeded_ckpts(core, e);
}

static void load_report(Trial *t, const ReportRead *r, const json_t *metrics)
{
    (void)metrics;
    PbtMember self = pbt_member(t, r->step);
    pbt_load(t->exp->pbt, &self, r->has_value, r->value);
}

static void init(Experiment *e)
{
    sched_asha_init(e);
    if ((e->pbt = pbt_new(&e->spec.pbt)) == NULL)
        abort();
}

static void fini(Experiment *e)
{
    sched_asha_fini(e);
    pbt_free(e->pbt);
}

const SchedOps sched_pbt_ops = {
    .name = "pbt",
    .init = init,
    .fini = fini,
    .report = report,
    .settle = sync_check,
    .retry = retry,
    .exp_end = exp_end,
    .load_report = load_report,
    /* A value that is not finite ranks last at the next milestone (pbt.h). */
    .ranks_nonfinite = true,
    /* A member is a population's progress, not a config to try again
     * (core_expire_leases). */
    .resumes_lost = true,
    /* A population is small, and its records want every member. */
    .loads_all_trials = true,
};
