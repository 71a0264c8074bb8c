/* The pbt and pb2 schedulers inside the Core (docs/schedulers.md, "pbt",
 * "pb2"): a member's report at a milestone exploits a better member
 * (config and checkpoint) and explores its config; with synch, members
 * wait at each milestone for the others. pbt.c keeps the population's
 * records. pbt's explore (space_mutate) runs here; pb2's (pb2_propose) is
 * a request computed off the engine thread (sched_explore.c). */
#include "core_internal.h"
#include "pb2.h"
#include "sched_explore.h"

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

/* pb2 (sampler/pb2.h): what PB2's GP fits, snapshot for the proposer
 * thread (sched_explore.h): the population's score changes so far, the
 * donor's config and the draws' seed. */
static void explore_queue(Experiment *e, const Trial *t, const json_t *base, int64_t milestone)
{
    PbtChange *ch = malloc(PB2_MAX_OBS * sizeof *ch);
    if (ch == NULL)
        abort();
    int64_t n = pbt_changes(e->pbt, ch, PB2_MAX_OBS);
    PbtExplore *x = pbt_explore_new(n);
    for (int64_t i = 0; i < n; i++) {
        x->obs_config[i] = json_incref((json_t *)ch[i].config);
        x->obs_time[i] = (double)ch[i].milestone;
        x->obs_change[i] = ch[i].change;
    }
    free(ch);
    x->exp_id = e->id;
    x->trial_id = t->id;
    x->number = t->number;
    x->milestone = milestone;
    x->mutations = json_incref(e->spec.mutations_json);
    x->base = json_incref((json_t *)base);
    x->resample = e->spec.pbt_resample;
    x->seed = e->spec.pbt.seed;
    PbtExplore **tail = &e->explores;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = x;
}

/* The member takes its explored config: the exploit joins its lineage,
 * and it resumes from the donor's checkpoint (t->from_*), at once. */
static void explore_apply(Core *core, Trial *t, json_t *next, int64_t milestone, int64_t now)
{
    if (t->lineage == NULL)
        t->lineage = json_array();
    char when[32];
    rung_time_format(now, when, sizeof when);
    json_array_append_new(t->lineage,
                          json_pack("{s:I, s:I, s:I, s:O, s:O, s:s}", "step", (json_int_t)milestone,
                                    "donor", (json_int_t)t->from_trial, "donor_step",
                                    (json_int_t)t->from_step, "from", t->config, "config", next,
                                    "time", when));
    json_decref(t->config);
    t->config = next;
    t->config_changed = true;
    t->explore_at = 0;
    core_set_state(core, t, TRIAL_PAUSED, now);
    core_trial_resume(core, t, now);
}

/* pbt's exploit and explore (docs/schedulers.md, "pbt"): t takes the
 * donor's config, mutated, and resumes from the donor's checkpoint; the
 * exploit joins t's lineage. The answer to t's report is stop: the worker
 * ends the program, and the trial is leased again at once. pb2 fits a GP
 * to explore, which takes a while: t waits paused for it (explore_at) and
 * the proposer thread computes it (core_take_explores, core_pbt_explored),
 * so that no request of the batch waits for the fit. */
static void exploit(Core *core, Trial *t, const PbtMember *donor, int64_t milestone, int64_t now)
{
    Experiment *e = t->exp;
    t->from_trial = donor->id;
    t->from_step = donor->step;
    t->from_worker = donor->worker;
    if (e->spec.is_pb2) {
        t->explore_at = milestone;
        t->rung = 0; /* not a synch barrier's: sync_release does not resume it */
        core_set_state(core, t, TRIAL_PAUSED, now);
        explore_queue(e, t, donor->config, milestone);
        return;
    }
    json_t *next = space_mutate(e->spec.mutations, donor->config, e->spec.pbt_resample,
                                e->spec.pbt.seed, (uint64_t)t->number, (uint64_t)milestone);
    if (next == NULL)
        abort();
    explore_apply(core, t, next, milestone, now);
}

PbtExplore *core_take_explores(Core *core)
{
    PbtExplore *head = NULL, **tail = &head;
    for (int64_t i = 0; i < core_n_experiments(core); i++) {
        Experiment *e = core_experiment_at(core, i);
        if (e->explores == NULL)
            continue;
        *tail = e->explores;
        e->explores = NULL;
        while (*tail != NULL)
            tail = &(*tail)->next;
    }
    return head;
}

bool core_pbt_explored(Core *core, int64_t trial_id, int64_t milestone, json_t *config, int64_t now)
{
    Trial *t = core_trial(core, trial_id);
    if (t == NULL || t->state != TRIAL_PAUSED || t->explore_at == 0 || t->explore_at != milestone) {
        json_decref(config);
        return false;
    }
    Experiment *e = t->exp;
    if (config == NULL) { /* out of memory on the way: explore as pbt does */
        const Trial *d = core_trial(core, t->from_trial);
        config = space_mutate(e->spec.mutations, d != NULL ? config_at(d, t->from_step) : t->config,
                              e->spec.pbt_resample, e->spec.pbt.seed, (uint64_t)t->number,
                              (uint64_t)milestone);
        if (config == NULL)
            abort();
    }
    explore_apply(core, t, config, milestone, now);
    core_maybe_complete(core, e, now);
    return true;
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

/* Loading: a member that waited for its explore when rungd stopped (or the
 * engine reloaded after a failed commit) asks for it again. The fit is
 * drawn from (seed, number, milestone), so it gives the same config up to
 * the observations the population has now; a late answer to the first ask
 * finds the member waiting no more and is dropped. */
static void load_paused(Experiment *e, const Trial *t)
{
    if (t->explore_at == 0)
        return;
    const json_t *base = t->config; /* the donor left memory: its own */
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        const Trial *d = e->trials[i];
        if (d != NULL && d->id == t->from_trial) {
            base = config_at(d, t->from_step);
            break;
        }
    }
    explore_queue(e, t, base, t->explore_at);
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
    while (e->explores != NULL) {
        PbtExplore *x = e->explores;
        e->explores = x->next;
        pbt_explore_free(x);
    }
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
    .load_paused = load_paused,
    /* A value that is not finite ranks last at the next milestone (pbt.h). */
    .ranks_nonfinite = true,
    /* A member is a population's progress, not a config to try again
     * (core_expire_leases). */
    .resumes_lost = true,
    /* A population is small, and its records want every member. */
    .loads_all_trials = true,
};
