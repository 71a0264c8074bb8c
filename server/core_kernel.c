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
 * The scheduler (asha.c) answers each report: `stop` ends a running trial as
 * stopped, a report at max_t ends it as completed, and with promote a trial
 * is paused at a rung (running --> paused) until it is promoted (paused -->
 * pending, first in line, resumed from its checkpoint) or the experiment's
 * end game stops it (paused --> stopped).
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

/* Whether a is a better value of exp's metric than b. */
bool core_better(const Experiment *e, double a, double b)
{
    return spec_loss(&e->spec, a) < spec_loss(&e->spec, b);
}

bool core_exp_active(const Experiment *e)
{
    return e->state == EXP_RUNNING || e->state == EXP_PAUSED;
}

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
    if (s == EXP_RUNNING)
        core_join_share(core, e);
    else
        core_holds_release(core, e); /* a paused or ended experiment forms no gang */
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

char *core_dup_str(const char *s)
{
    char *d = strdup(s ? s : "");
    if (d == NULL)
        abort();
    return d;
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
    if (e->pbt != NULL)
        core_drop_unneeded_ckpts(core, e);
}

void core_maybe_complete(Core *core, Experiment *e, int64_t now)
{
    if (e->state == EXP_RUNNING)
        sched_pbt_sync_check(core, e, now); /* pbt: a member that ended waits for nobody */
    if (e->state != EXP_RUNNING || e->n_trials < e->spec.total_trials)
        return;
    if (e->pbt != NULL && e->counts[TRIAL_PAUSED] > 0)
        return; /* pbt: paused members wait at a milestone; no end game */
    if (e->counts[TRIAL_PAUSED] > 0 && e->counts[TRIAL_PENDING] + e->counts[TRIAL_PREEMPTED] == 0 &&
        e->counts[TRIAL_RUNNING] == 0 && !e->hold_endgame)
        sched_asha_endgame(core, e, now);
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
}

Worker *core_owner_of(const Core *core, const Trial *t)
{
    return t->worker_id > 0 ? idmap_get(&core->workers, t->worker_id) : NULL;
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

void core_set_error(Trial *t, const char *error)
{
    free(t->error);
    t->error = NULL;
    if (error == NULL)
        return;
    /* Cut on a character boundary: a split character would make the text
     * invalid UTF-8, which JSON cannot carry. */
    size_t len = rung_utf8_truncate_len(error, CORE_MAX_ERROR);
    t->error = malloc(len + 1);
    if (t->error == NULL)
        abort();
    memcpy(t->error, error, len);
    t->error[len] = '\0';
}

/* Forgets what the current attempt reported, for a retry. */
void core_reset_attempt(Trial *t)
{
    asha_trial_reset(t->exp->asha, t->number);
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
    sched_asha_trial_end(t->exp, t);
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
        core_set_state(core, t, TRIAL_PENDING, now);
        /* Retries go first: they were promised before the trials behind them. */
        core_queue_front(e, t);
        t->attempt++;
        t->lease_token[0] = '\0';
        t->started_at = 0;
        core_reset_attempt(t);
        if (e->pbt != NULL) {
            /* A new attempt starts over with the config it has now. */
            pbt_forget(e->pbt, t->number);
            t->from_trial = t->from_step = t->from_worker = 0;
            core_drop_unneeded_ckpts(core, e);
        }
        core->availability_changed = true;
        sched_asha_promote_ready(core, e,
                                 now); /* its records are gone: others may rank higher now */
    } else {
        core_set_state(core, t, TRIAL_FAILED, now);
    }
}
