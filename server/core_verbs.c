/* The user's verbs on experiments and trials (docs/api.md): submit,
 * cancel, pause, resume, patch, stop a trial, retry the failed ones; and
 * the tick's time budget. */
#include "core_internal.h"
#include "warm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ended_conflict(const Experiment *e, const char *what, RungError *err)
{
    return rung_error_set(err, RUNG_E_CONFLICT, NULL, "experiment %lld is %s: it cannot be %s",
                          (long long)e->id, exp_state_name(e->state), what);
}

int core_cancel(Core *core, Experiment *e, int64_t now, RungError *err)
{
    if (e->state == EXP_CANCELED)
        return 0;
    if (!core_exp_active(e))
        return ended_conflict(e, "canceled", err);
    core_end_experiment(core, e, EXP_CANCELED, END_CANCELED, NULL, now);
    return 0;
}

int core_pause(Core *core, Experiment *e, bool running_too, int64_t now, RungError *err)
{
    if (!core_exp_active(e))
        return ended_conflict(e, "paused", err);
    if (e->state == EXP_RUNNING)
        core_set_exp_state(core, e, EXP_PAUSED, END_NONE, now);
    if (running_too) {
        for (Trial *t = core->running.head; t != NULL; t = t->next) {
            if (t->exp == e && t->stop_kind == STOP_NONE) {
                t->stop_kind = STOP_PAUSE;
                core_mark_trial(core, t);
            }
        }
    }
    return 0;
}

int core_resume(Core *core, Experiment *e, int64_t now, RungError *err)
{
    if (!core_exp_active(e))
        return ended_conflict(e, "resumed", err);
    if (e->state == EXP_PAUSED)
        core_set_exp_state(core, e, EXP_RUNNING, END_NONE, now);
    for (Trial *t = core->running.head; t != NULL; t = t->next) {
        if (t->exp == e && t->stop_kind == STOP_PAUSE) {
            t->stop_kind = STOP_NONE; /* not reached yet: it just goes on */
            core_mark_trial(core, t);
        }
    }
    /* Back in line first, in number order (pushed to the front in reverse). */
    for (int64_t i = e->cap_trials - 1; i >= e->trials_lo; i--) {
        Trial *t = e->trials[i];
        if (t != NULL && t->state == TRIAL_PAUSED && t->user_paused)
            core_trial_resume(core, t, now);
    }
    core_maybe_complete(core, e, now);
    return 0;
}

int core_patch(Core *core, Experiment *e, const json_t *patch, int64_t now, RungError *err)
{
    if (e->state == EXP_CANCELED || e->state == EXP_FAILED)
        return ended_conflict(e, "changed", err);
    /* num_samples can only grow: the trials that exist stay. */
    if (spec_patch(&e->spec, patch, e->spec.num_samples, err))
        return err->code;
    if (e->warm != NULL) /* a grid warm-started skips what its source tried */
        e->spec.total_trials = warm_total_trials(e->warm, &e->spec);
    core_mark_exp(core, e);
    core->availability_changed = true;
    if (e->state == EXP_COMPLETED && e->n_trials < e->spec.total_trials) {
        e->health.since_better = 0; /* stop.patience counts from the extension */
        core_set_exp_state(core, e, EXP_RUNNING, END_NONE, now);
    }
    return 0;
}

void core_set_exp_meta(Core *core, Experiment *e, json_t *tags, json_t *notes)
{
    spec_set_meta(&e->spec, tags, notes);
    if (core != NULL) {
        e->meta_changed = true;
        core_mark_exp(core, e);
    }
}

void core_set_trial_meta(Core *core, Trial *t, json_t *tags, json_t *notes)
{
    if (tags != NULL) {
        json_decref(t->tags);
        t->tags = tags;
    }
    if (notes != NULL) {
        json_decref(t->notes);
        t->notes = notes;
    }
    if (core != NULL) {
        t->meta_changed = true;
        core_mark_trial(core, t);
    }
}

int core_stop_trial(Core *core, Trial *t, int64_t now, RungError *err)
{
    if (trial_state_terminal(t->state))
        return rung_error_set(err, RUNG_E_CONFLICT, NULL, "trial %lld is %s already",
                              (long long)t->id, trial_state_name(t->state));
    if (t->state == TRIAL_RUNNING) {
        t->stop_kind = STOP_USER; /* at its next report or heartbeat */
        core_mark_trial(core, t);
        return 0;
    }
    t->stopped_by = BY_USER;
    if (t->state == TRIAL_PAUSED || t->state == TRIAL_PREEMPTED)
        core_end_for_scheduler(core, t, TRIAL_STOPPED,
                               now); /* it reported: the scheduler counts it */
    else
        core_set_state(core, t, TRIAL_STOPPED, now);
    return 0;
}

int core_retry_failed(Core *core, Experiment *e, int64_t now, int64_t *n, RungError *err)
{
    *n = 0;
    if (e->state == EXP_CANCELED)
        return ended_conflict(e, "retried", err);
    /* Its trials are another experiment's warm start: they must not change
     * (a restart reads them again). */
    if (core_warm_source_in_use(core, e->id))
        return rung_error_set(err, RUNG_E_CONFLICT, NULL,
                              "experiment %lld: a running experiment warm-starts from it, so its "
                              "trials cannot be retried now",
                              (long long)e->id);
    for (int64_t i = e->cap_trials - 1; i >= e->trials_lo; i--) {
        Trial *t = e->trials[i];
        if (t == NULL || t->state != TRIAL_FAILED)
            continue;
        core_set_state(core, t, TRIAL_PENDING, now);
        core_queue_front(e, t); /* reverse order: the lowest number ends up first */
        t->attempt++;
        t->lease_token[0] = '\0';
        t->started_at = t->ended_at = 0;
        core_reset_attempt(t);
        (*n)++;
    }
    core->counters.retries[RETRY_USER] += *n;
    /* A new chance: the failure rules count from here. */
    e->health.n_errors = 0;
    e->health.ended_reporting = 0;
    core_mark_exp(core, e);
    if (*n > 0 && !core_exp_active(e))
        core_set_exp_state(core, e, EXP_RUNNING, END_NONE, now);
    core->availability_changed = true;
    return 0;
}

int64_t core_tick(Core *core, int64_t now)
{
    core_gang_tick(core, now);
    int64_t n = 0;
    for (int64_t i = 0; i < core->n_exps; i++) {
        Experiment *e = core->exps[i];
        double budget = e->spec.stop_time_budget_s;
        if (e->state == EXP_RUNNING && budget > 0 &&
            (double)(now - e->created_at) >= budget * 1000.0) {
            core_end_experiment(core, e, EXP_COMPLETED, END_TIME_BUDGET, NULL, now);
            n++;
        }
    }
    return n;
}

/* A submitted experiment enters memory with its scheduler (sched_attach)
 * and joins the fair share. */
Experiment *core_experiment_add(Core *core, Spec *spec, int64_t now)
{
    Experiment *e = core_exp_new(core, core->next_exp_id, spec, now);
    sched_attach(e);
    core->exp_counts[EXP_RUNNING]++;
    core_join_share(core, e);
    core_mark_exp(core, e);
    core->availability_changed = true;
    return e;
}
