/* The kernel of the trial state machine (see core.h for the contract): a
 * trial's and an experiment's state changes, retries, what a stop asks,
 * and when an experiment completes.
 *
 * Trial lifecycle:
 *
 *   pending --lease--> running --finish ok--> completed
 *      ^                  |  \--report NaN / finish failed, no retry left--> failed
 *      |                  |  \--cancel, at its next report or heartbeat--> canceled
 *      +--retry (attempt+1): finish failed or lease expired, attempt <= max_failures
 *
 * The scheduler answers each report through its hooks (SchedOps in
 * core_internal.h; this file names no scheduler): `stop` ends a running
 * trial as stopped, a report at max_t ends it as completed, and a trial may
 * be paused (running --> paused) at an asha rung until it is promoted
 * (paused --> pending, first in line, resumed from its checkpoint) or the
 * end game stops it (paused --> stopped), or at a pbt milestone until the
 * other members reach it.
 *
 * A trial asked to stop while it runs (stop_kind) becomes, at its next
 * report, heartbeat or finish: canceled (its experiment was canceled),
 * stopped (its user stopped it, or its experiment ended), or paused (its
 * experiment was paused with running=pause; it resumes from its checkpoint
 * when the experiment is resumed, like a promoted trial).
 *
 * A trial its worker gave back (finish "preempted": someone else's work
 * wanted its GPU, or the worker's --hours ended) waits in state preempted at
 * the front of its line, leasable like a pending one, with the same attempt
 * and its reports, and resumes after its last reported step on the same
 * worker while that worker is alive (may_take); it is never a failure.
 *
 * An experiment is completed once all its trials exist and are terminal,
 * or when a stop rule ends it (stop: time budget, metric threshold,
 * patience); it fails when max_failed_trials trials failed, or when its
 * first trials report but never the metric. Paused, it leases nothing
 * and does not complete; see docs/api.md, "The experiment object". */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Moves e to state s. An ended state stamps the time and the reason and
 * queues e for release; running or paused again (resumed, extended,
 * retried) forgets how it ended. */
void core_set_exp_state(Core *core, Experiment *e, ExpState s, EndReason why, int64_t now)
{
    core->exp_counts[e->state]--;
    core->exp_counts[s]++;
    e->state = s;
    core_mark_exp(core, e);
    core->availability_changed = true;
    core_place_exp_state(core, e); /* fair share, or its gang's held workers go free */
    if (core_exp_active(e)) {
        e->ended_at = 0;
        e->ended_reason = END_NONE;
        free(e->error);
        e->error = NULL;
        return;
    }
    e->ended_at = now;
    e->ended_reason = why;
    core_release_exp(core, e);
}

/* The event of e's end (docs/api.md, "Events"): experiment.failed when it
 * failed, else experiment.ended, with its state, reason and error. */
static void ended_event(Core *core, const Experiment *e, int64_t now)
{
    json_t *d = json_pack("{s:s, s:s}", "state", exp_state_name(e->state), "reason",
                          end_reason_name(e->ended_reason));
    if (e->error != NULL)
        json_object_set_new(d, "error", json_string(e->error));
    core_event(core, now, e->state == EXP_FAILED ? "experiment.failed" : "experiment.ended", e->id,
               0, 0, d);
}

/* The first line of a trial's error, at most 200 bytes (events quote it). */
static json_t *first_line(const char *error)
{
    if (error == NULL)
        return json_null();
    size_t n = strcspn(error, "\n");
    if (n > 200)
        n = 200;
    while (n > 0 && ((unsigned char)error[n] & 0xC0) == 0x80)
        n--; /* not inside a UTF-8 character */
    return json_stringn(error, n);
}

/* Ends an active experiment before all its trials ran: pending trials are
 * canceled; paused ones canceled (s canceled) or stopped; running ones are
 * asked to do the same at their next report or heartbeat. */
void core_end_experiment(Core *core, Experiment *e, ExpState s, EndReason why, const char *error,
                         int64_t now)
{
    core_set_exp_state(core, e, s, why, now);
    if (error != NULL)
        e->error = core_dup_str(error);
    ended_event(core, e, now);
    while (e->pending.head != NULL) {
        Trial *t = e->pending.head;
        if (t->state == TRIAL_PREEMPTED && s != EXP_CANCELED) {
            /* It ran and reported, as a paused trial did. */
            t->stopped_by = BY_EXPERIMENT;
            core_end_for_scheduler(core, t, TRIAL_STOPPED, now);
        } else {
            core_set_state(core, t, TRIAL_CANCELED, now);
        }
    }
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        Trial *t = e->trials[i];
        if (t == NULL)
            continue;
        if (t->state == TRIAL_PAUSED && s == EXP_CANCELED) {
            core_set_state(core, t, TRIAL_CANCELED, now);
        } else if (t->state == TRIAL_PAUSED) {
            t->stopped_by = BY_EXPERIMENT;
            t->user_paused = false;
            core_end_for_scheduler(core, t, TRIAL_STOPPED, now);
        } else if (t->state == TRIAL_RUNNING) {
            t->stop_kind = s == EXP_CANCELED ? STOP_CANCEL : STOP_EXPERIMENT;
            core_mark_trial(core, t);
        }
    }
    if (e->sched->exp_end != NULL)
        e->sched->exp_end(core, e);
}

void core_maybe_complete(Core *core, Experiment *e, int64_t now)
{
    if (e->state == EXP_RUNNING && e->sched->settle != NULL)
        e->sched->settle(core, e, now); /* a trial that ended waits for nobody */
    if (e->state != EXP_RUNNING || e->n_trials < e->spec.total_trials)
        return;
    if (e->counts[TRIAL_PAUSED] > 0 && e->counts[TRIAL_PENDING] + e->counts[TRIAL_PREEMPTED] == 0 &&
        e->counts[TRIAL_RUNNING] == 0 && !e->hold_endgame && e->sched->idle != NULL)
        e->sched->idle(core, e, now);
    /* A trial still paused is not terminal, so the count below stays short:
     * e completes once the last one ended. */
    if (e->state != EXP_RUNNING)
        return;
    int64_t terminal = e->counts[TRIAL_COMPLETED] + e->counts[TRIAL_STOPPED] +
                       e->counts[TRIAL_FAILED] + e->counts[TRIAL_CANCELED];
    if (terminal < e->spec.total_trials)
        return;
    if (e->counts[TRIAL_FAILED] == terminal && terminal > 0) {
        /* Every trial failed: nothing worked, whatever max_failed_trials
         * says (it may exceed the trials there are). */
        const ErrorCount *top = core_top_error(&e->health);
        char msg[CORE_HEALTH_ERROR_LEN + 120];
        snprintf(msg, sizeof msg,
                 "all %lld trials failed; the most frequent error, in %lld of them: %s",
                 (long long)terminal, (long long)(top ? top->n : 0), top ? top->text : "(none)");
        core_end_experiment(core, e, EXP_FAILED, END_MAX_FAILED, msg, now);
        return;
    }
    core_set_exp_state(core, e, EXP_COMPLETED, END_ALL_TRIALS, now);
    ended_event(core, e, now);
}

/* Adds delta (+1 or -1) to the trials that t's workers hold: its owner,
 * or every member of its gang. Workers not in memory are skipped. */
void core_count_slots(Core *core, const Trial *t, int64_t delta)
{
    int64_t n = t->gang != NULL ? t->gang->nnodes : 1;
    for (int64_t i = 0; i < n; i++) {
        Worker *w = t->gang != NULL ? core_worker(core, t->gang->members[i].worker_id)
                                    : core_owner_of(core, t);
        if (w != NULL && (delta > 0 || w->n_running > 0))
            w->n_running += delta;
    }
}

/* Moves t to state s, keeping counts, lists and times in step. */
void core_set_state(Core *core, Trial *t, TrialState s, int64_t now)
{
    Experiment *e = t->exp;
    if (t->state == TRIAL_RUNNING) {
        core_list_remove(&core->running, t);
        core->availability_changed = true; /* a concurrency slot is free */
        core_count_slots(core, t, -1);
        if (t->gang != NULL)
            core->gangs_running--;
    } else if (core_in_line(t->state)) {
        core_list_remove(&e->pending, t);
    }
    if (s == TRIAL_RUNNING)
        t->leased_from = (uint8_t)t->state;
    e->counts[t->state]--;
    e->counts[s]++;
    core->trial_counts[t->state]--;
    core->trial_counts[s]++;
    t->state = s;
    if (s == TRIAL_RUNNING) {
        core_list_push_back(&core->running, t);
        if (t->gang != NULL)
            core->gangs_running++;
        t->started_at = now;
        t->ended_at = 0;
    }
    if (trial_state_terminal(s)) {
        t->ended_at = now;
        if (!t->releasing) {
            t->releasing = true;
            rung_grow((void **)&core->rel_trials, &core->cap_rel_trials, core->n_rel_trials,
                      sizeof(Trial *));
            core->rel_trials[core->n_rel_trials++] = t;
        }
    }
    if (s != TRIAL_PAUSED)
        t->user_paused = false;
    if (s != TRIAL_RUNNING)
        t->stop_kind = STOP_NONE;
    core_mark_trial(core, t);
    if (e->state != EXP_RUNNING)
        core_mark_exp(core, e); /* its stored counts follow its last trials */
    if (trial_state_terminal(s)) {
        core_trial_ended(core, t, now);
        core_maybe_complete(core, e, now);
    }
}

/* Forgets what the current attempt reported, for a retry. */
void core_reset_attempt(Trial *t)
{
    if (t->exp->sched->attempt_reset != NULL)
        t->exp->sched->attempt_reset(t->exp, t);
    t->has_step = t->has_best = t->has_time = false;
    t->rung = 0;
    t->stopped_by = BY_NONE;
    t->leased_seen = 0;
    t->step = t->best_step = 0;
    t->best_value = 0;
    json_decref(t->last);
    t->last = NULL;
    t->n_seen = 0;
}

/* A paused trial goes back in line, at the front: promotions come before
 * new trials, as in the paper's get_job. */
void core_trial_resume(Core *core, Trial *t, int64_t now)
{
    core_set_state(core, t, TRIAL_PENDING, now);
    core_queue_front(t->exp, t);
    t->rung = 0;
    core->availability_changed = true;
}

/* Ends t as stopped or completed for the scheduler, which records its last
 * result once more as Ray's on_trial_complete does. */
void core_end_for_scheduler(Core *core, Trial *t, TrialState s, int64_t now)
{
    if (t->exp->sched->trial_end != NULL)
        t->exp->sched->trial_end(t->exp, t);
    if (s == TRIAL_STOPPED && t->stopped_by == BY_NONE)
        t->stopped_by = BY_SCHEDULER;
    core_set_state(core, t, s, now);
}

/* A running trial asked to stop (t->stop_kind) becomes what it was asked. */
void core_apply_stop(Core *core, Trial *t, int64_t now)
{
    switch ((StopKind)t->stop_kind) {
    case STOP_USER:
    case STOP_EXPERIMENT:
        t->stopped_by = t->stop_kind == STOP_USER ? BY_USER : BY_EXPERIMENT;
        core_end_for_scheduler(core, t, TRIAL_STOPPED, now);
        break;
    case STOP_PAUSE:
        /* Like a trial the scheduler paused, but at no rung: it waits for
         * its experiment's resume, not for a promotion. */
        core_set_state(core, t, TRIAL_PAUSED, now);
        t->user_paused = true;
        break;
    case STOP_CANCEL:
    default:
        core_set_state(core, t, TRIAL_CANCELED, now);
        break;
    }
}

/* A failed attempt: retried as the same trial while attempts remain; why
 * says which retries counter counts it. A lost worker is no fault of the
 * trial (on spare machines workers come and go): its first
 * CORE_MAX_WORKER_LOSSES losses are retried apart from max_failures, whose
 * budget counts the other attempts (attempt - worker_losses). */
void core_fail_or_retry(Core *core, Trial *t, const char *error, RetryReason why, int64_t now)
{
    core_set_error(t, error);
    bool loss = why == RETRY_WORKER_LOST && t->worker_losses < CORE_MAX_WORKER_LOSSES;
    if (loss)
        t->worker_losses++;
    if (loss || t->attempt - t->worker_losses <= t->exp->spec.max_failures) {
        Experiment *e = t->exp;
        core->counters.retries[why]++;
        core_event(core, now, "trial.retried", e->id, t->id, t->worker_id,
                   json_pack("{s:I, s:s, s:o}", "attempt", (json_int_t)t->attempt + 1, "reason",
                             retry_reason_name(why), "error", first_line(error)));
        core_set_state(core, t, TRIAL_PENDING, now);
        /* Retries go first: they were promised before the trials behind them. */
        core_queue_front(e, t);
        t->attempt++;
        t->lease_token[0] = '\0';
        t->started_at = 0;
        core_reset_attempt(t);
        if (e->sched->retry != NULL)
            e->sched->retry(core, t);
        core->availability_changed = true;
        if (e->sched->promote != NULL) /* its records are gone: others may rank higher now */
            e->sched->promote(core, e, now);
    } else {
        core_event(core, now, "trial.failed", t->exp->id, t->id, t->worker_id,
                   json_pack("{s:I, s:o}", "attempt", (json_int_t)t->attempt, "error",
                             first_line(error)));
        core_set_state(core, t, TRIAL_FAILED, now);
    }
}

/* The rules that end an experiment when one of its trials ends
 * (docs/api.md, "The experiment object"). */
void core_trial_ended(Core *core, Trial *t, int64_t now)
{
    Experiment *e = t->exp;
    if (!core_exp_active(e))
        return;
    ExpHealth *h = &e->health;
    core_mark_exp(core, e); /* its health is stored with it */
    if (t->state == TRIAL_FAILED)
        core_count_error(h, t->error);
    if (!h->metric_seen && t->last != NULL && t->state != TRIAL_CANCELED) {
        h->ended_reporting++;
        if (t->last != NULL)
            core_add_keys(h, t->last);
    }
    if (t->state == TRIAL_COMPLETED || t->state == TRIAL_STOPPED) {
        double v;
        int64_t step;
        if (core_trial_score(t, &v, &step) &&
            (!h->has_best_finished || core_better(e, v, h->best_finished))) {
            h->has_best_finished = true;
            h->best_finished = v;
            h->since_better = 0;
        } else {
            h->since_better++;
        }
    }
    const Spec *sp = &e->spec;
    int64_t need = sp->total_trials < 5 ? sp->total_trials : 5;
    if (sp->max_failed_trials > 0 && e->counts[TRIAL_FAILED] >= sp->max_failed_trials) {
        const ErrorCount *top = core_top_error(h);
        char msg[CORE_HEALTH_ERROR_LEN + 160];
        snprintf(msg, sizeof msg,
                 "%lld trials failed (max_failed_trials is %lld); the most frequent error, "
                 "in %lld of them: %s",
                 (long long)e->counts[TRIAL_FAILED], (long long)sp->max_failed_trials,
                 (long long)(top ? top->n : 0), top ? top->text : "(none)");
        core_end_experiment(core, e, EXP_FAILED, END_MAX_FAILED, msg, now);
    } else if (!h->metric_seen && h->ended_reporting >= need) {
        char msg[SPEC_MAX_OBJECTIVES * (SPEC_MAX_METRIC + 4) + CORE_HEALTH_KEYS * 72 + 96];
        int n;
        if (sp->n_objectives == 1) {
            n = snprintf(msg, sizeof msg,
                         "no trial reported metric '%s'; trials reported: ", sp->metric);
        } else {
            n = snprintf(msg, sizeof msg, "no trial reported metrics ");
            for (int k = 0; k < sp->n_objectives && n > 0 && (size_t)n < sizeof msg; k++)
                n += snprintf(msg + n, sizeof msg - (size_t)n, "%s'%s'", k ? ", " : "",
                              sp->objectives[k].name);
            if (n > 0 && (size_t)n < sizeof msg)
                n += snprintf(msg + n, sizeof msg - (size_t)n, " in one report; trials reported: ");
        }
        size_t i;
        json_t *k;
        json_array_foreach(h->keys, i, k) {
            if (n > 0 && (size_t)n < sizeof msg)
                n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%s", i ? ", " : "",
                              json_string_value(k));
        }
        core_end_experiment(core, e, EXP_FAILED, END_METRIC_MISSING, msg, now);
    } else if (sp->stop_patience > 0 && h->since_better >= sp->stop_patience) {
        core_end_experiment(core, e, EXP_COMPLETED, END_PATIENCE, NULL, now);
    }
}
