/* The trial state machine; see core.h for the contract.
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

/* ---- intrusive lists ---- */

void core_list_push_back(TrialList *l, Trial *t)
{
    t->next = NULL;
    t->prev = l->tail;
    if (l->tail)
        l->tail->next = t;
    else
        l->head = t;
    l->tail = t;
    l->len++;
}

static void list_push_front(TrialList *l, Trial *t)
{
    t->prev = NULL;
    t->next = l->head;
    if (l->head)
        l->head->prev = t;
    else
        l->tail = t;
    l->head = t;
    l->len++;
}

void core_list_remove(TrialList *l, Trial *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        l->head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    else
        l->tail = t->prev;
    t->prev = t->next = NULL;
    l->len--;
}

/* The pending line, in ascending queue_pos. A new trial joins at the back,
 * at its number (above every number before it); a trial put back (retried,
 * given back, promoted) goes to the front, one below the head. queue_pos is
 * stored, so a restart rebuilds the same line. */
/* Whether a trial in state s waits in its experiment's pending line:
 * pending, or preempted (given back by its worker, leasable alike). */
bool core_in_line(TrialState s)
{
    return s == TRIAL_PENDING || s == TRIAL_PREEMPTED;
}

void core_queue_back(Experiment *e, Trial *t)
{
    t->queue_pos = t->number;
    core_list_push_back(&e->pending, t);
}

void core_queue_front(Experiment *e, Trial *t)
{
    t->queue_pos = e->pending.head ? e->pending.head->queue_pos - 1 : t->number;
    list_push_front(&e->pending, t);
}

/* ---- change queue ---- */

void core_mark_trial(Core *core, Trial *t)
{
    if (t->dirty)
        return;
    t->dirty = true;
    rung_grow((void **)&core->dirty_trials, &core->cap_dirty_trials, core->n_dirty_trials,
              sizeof(Trial *));
    core->dirty_trials[core->n_dirty_trials++] = t;
}

void core_mark_exp(Core *core, Experiment *e)
{
    if (e->dirty)
        return;
    e->dirty = true;
    rung_grow((void **)&core->dirty_exps, &core->cap_dirty_exps, core->n_dirty_exps,
              sizeof(Experiment *));
    core->dirty_exps[core->n_dirty_exps++] = e;
}

void core_mark_worker(Core *core, Worker *w)
{
    if (w->dirty)
        return;
    w->dirty = true;
    rung_grow((void **)&core->dirty_workers, &core->cap_dirty_workers, core->n_dirty_workers,
              sizeof(Worker *));
    core->dirty_workers[core->n_dirty_workers++] = w;
}

void core_changes(Core *core, CoreChanges *out)
{
    out->exps = core->dirty_exps;
    out->n_exps = core->n_dirty_exps;
    out->trials = core->dirty_trials;
    out->n_trials = core->n_dirty_trials;
    out->workers = core->dirty_workers;
    out->n_workers = core->n_dirty_workers;
    out->reports = core->reports;
    out->n_reports = core->n_reports;
    out->ckpts = core->new_ckpts;
    out->n_ckpts = core->n_new_ckpts;
    out->dropped_ckpts = core->dropped_ckpts;
    out->n_dropped_ckpts = core->n_dropped_ckpts;
}

void core_changes_clear(Core *core)
{
    for (int64_t i = 0; i < core->n_dirty_exps; i++)
        core->dirty_exps[i]->dirty = false;
    for (int64_t i = 0; i < core->n_dirty_trials; i++)
        core->dirty_trials[i]->dirty = false;
    for (int64_t i = 0; i < core->n_dirty_workers; i++)
        core->dirty_workers[i]->dirty = false;
    for (int64_t i = 0; i < core->n_reports; i++)
        json_decref(core->reports[i].metrics);
    core->n_dirty_exps = core->n_dirty_trials = core->n_dirty_workers = core->n_reports = 0;
    core->n_new_ckpts = core->n_dropped_ckpts = 0;
}

/* ---- lifecycle ---- */

Core *core_new(int64_t lease_ms)
{
    Core *core = calloc(1, sizeof *core);
    if (core == NULL)
        return NULL;
    core->lease_ms = lease_ms;
    core->next_exp_id = core->next_trial_id = core->next_worker_id = 1;
    return core;
}

void core_trial_free(Trial *t)
{
    json_decref(t->config);
    json_decref(t->resources);
    json_decref(t->last);
    json_decref(t->warnings);
    members_free(t->gang);
    json_decref(t->gang_json);
    json_decref(t->lineage);
    free(t->error);
    free(t->seen);
    free(t->log_tail);
    free(t);
}

/* Frees an experiment's own parts; its trials are freed by the caller. */
void core_exp_free(Experiment *e)
{
    spec_close(&e->spec);
    asha_free(e->asha);
    pbt_free(e->pbt);
    warm_free(e->warm);
    json_decref(e->best_done.config);
    for (int64_t i = 0; i < e->n_pareto_done; i++)
        json_decref(e->pareto_done[i].config);
    free(e->pareto_done);
    json_decref(e->health.keys);
    free(e->error);
    for (int64_t i = 0; i < e->n_hist; i++)
        json_decref((json_t *)e->hist[i].obs.config);
    free(e->hist);
    free(e->trials);
    free(e->gang.holds);
    free(e);
}

void core_worker_free(Worker *w)
{
    free(w->name);
    free(w->hostname);
    json_decref(w->gpus);
    json_decref(w->heartbeat);
    json_decref(w->labels);
    free(w);
}

void core_free(Core *core)
{
    if (core == NULL)
        return;
    core_changes_clear(core);
    for (int64_t i = 0; i < core->trials.cap; i++)
        if (core->trials.slots[i].id != 0)
            core_trial_free(core->trials.slots[i].ptr);
    for (int64_t i = 0; i < core->n_exps; i++)
        core_exp_free(core->exps[i]);
    for (int64_t i = 0; i < core->workers.cap; i++)
        if (core->workers.slots[i].id != 0)
            core_worker_free(core->workers.slots[i].ptr);
    idmap_free(&core->trials);
    idmap_free(&core->workers);
    free(core->exps);
    free(core->dirty_exps);
    free(core->dirty_trials);
    free(core->dirty_workers);
    free(core->reports);
    free(core->ckpts);
    free(core->new_ckpts);
    free(core->dropped_ckpts);
    free(core->uploads);
    free(core->rel_trials);
    free(core->rel_exps);
    free(core);
}

/* Index of the first in-memory experiment with id >= id. */
int64_t core_exp_lower_bound(const Core *core, int64_t id)
{
    int64_t lo = 0, hi = core->n_exps;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (core->exps[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

Experiment *core_experiment(Core *core, int64_t id)
{
    int64_t i = core_exp_lower_bound(core, id);
    return i < core->n_exps && core->exps[i]->id == id ? core->exps[i] : NULL;
}

Trial *core_trial(Core *core, int64_t id)
{
    return idmap_get(&core->trials, id);
}

Worker *core_worker(Core *core, int64_t id)
{
    return idmap_get(&core->workers, id);
}

/* ---- experiments and trials ---- */

static void put_exp(Core *core, int64_t id, Experiment *e)
{
    rung_grow((void **)&core->exps, &core->cap_exps, core->n_exps, sizeof(Experiment *));
    int64_t at = core_exp_lower_bound(core, id);
    memmove(&core->exps[at + 1], &core->exps[at], (size_t)(core->n_exps - at) * sizeof *core->exps);
    core->exps[at] = e;
    core->n_exps++;
    if (id >= core->next_exp_id)
        core->next_exp_id = id + 1;
}

Trial *core_exp_trial(const Experiment *e, int64_t number)
{
    int64_t i = number - e->trials_base;
    return i >= e->trials_lo && i < e->cap_trials ? e->trials[i] : NULL;
}

/* Makes e's window of trials by number cover `number` (a new trial at the
 * end, or a trial loaded or put back below the window). */
static void window_cover(Experiment *e, int64_t number)
{
    if (e->cap_trials == 0 || e->trials_lo == e->cap_trials) { /* empty: start at number */
        e->trials_base = number;
        e->trials_lo = 0;
        rung_grow((void **)&e->trials, &e->cap_trials, 0, sizeof(Trial *));
        memset(e->trials, 0, (size_t)e->cap_trials * sizeof(Trial *));
    }
    if (number < e->trials_base) {
        int64_t shift = e->trials_base - number, old = e->cap_trials;
        rung_grow((void **)&e->trials, &e->cap_trials, old + shift - 1, sizeof(Trial *));
        memmove(&e->trials[shift], &e->trials[0], (size_t)old * sizeof(Trial *));
        memset(&e->trials[0], 0, (size_t)shift * sizeof(Trial *));
        e->trials_base = number;
        e->trials_lo += shift;
    }
    rung_grow((void **)&e->trials, &e->cap_trials, number - e->trials_base, sizeof(Trial *));
    if (number - e->trials_base < e->trials_lo)
        e->trials_lo = number - e->trials_base;
}

/* After a slot was emptied: moves trials_lo past the empty slots, and once
 * they are most of the window, moves the window down over them (amortized
 * O(1) per trial: each live slot moves at most once per halving). */
void core_window_shrink(Experiment *e)
{
    int64_t used = e->n_trials - e->trials_base; /* slots at or past it are empty */
    while (e->trials_lo < used && e->trials[e->trials_lo] == NULL)
        e->trials_lo++;
    if (e->trials_lo >= used) { /* nothing left: the next trial starts a window */
        memset(e->trials, 0, (size_t)e->cap_trials * sizeof(Trial *));
        e->trials_base = e->n_trials;
        e->trials_lo = 0;
        return;
    }
    if (e->trials_lo < 64 || e->trials_lo * 2 < used)
        return;
    memmove(&e->trials[0], &e->trials[e->trials_lo],
            (size_t)(e->cap_trials - e->trials_lo) * sizeof(Trial *));
    memset(&e->trials[e->cap_trials - e->trials_lo], 0, (size_t)e->trials_lo * sizeof(Trial *));
    e->trials_base += e->trials_lo;
    e->trials_lo = 0;
}

void core_put_trial(Core *core, Experiment *e, Trial *t)
{
    idmap_put(&core->trials, t->id, t);
    if (t->id >= core->next_trial_id)
        core->next_trial_id = t->id + 1;
    window_cover(e, t->number);
    e->trials[t->number - e->trials_base] = t;
    if (t->number >= e->n_trials)
        e->n_trials = t->number + 1;
    e->counts[t->state]++;
}

Experiment *core_exp_new(Core *core, int64_t id, Spec *spec, int64_t now)
{
    Experiment *e = calloc(1, sizeof *e);
    if (e == NULL)
        abort();
    e->id = id;
    e->spec = *spec;
    memset(spec, 0, sizeof *spec);
    e->state = EXP_RUNNING;
    e->created_at = now;
    AshaParams sched = e->spec.sched;
    sched.objectives = e->spec.n_objectives;
    e->asha = asha_new(&sched);
    if (e->asha == NULL)
        abort();
    if (e->spec.is_pbt && (e->pbt = pbt_new(&e->spec.pbt)) == NULL)
        abort();
    put_exp(core, id, e);
    return e;
}

/* An experiment that starts running (submitted, resumed, extended) joins
 * the others at the lowest pass among them, as stride scheduling does: it
 * is neither owed the leases given before it came nor behind for them. */
static void join_share(Core *core, Experiment *e)
{
    bool any = false;
    double low = 0;
    for (int64_t i = 0; i < core->n_exps; i++) {
        const Experiment *o = core->exps[i];
        if (o != e && o->state == EXP_RUNNING && (!any || o->pass < low)) {
            low = o->pass;
            any = true;
        }
    }
    if (any && e->pass < low)
        e->pass = low;
}

Experiment *core_experiment_add(Core *core, Spec *spec, int64_t now)
{
    Experiment *e = core_exp_new(core, core->next_exp_id, spec, now);
    core->exp_counts[EXP_RUNNING]++;
    join_share(core, e);
    core_mark_exp(core, e);
    core->availability_changed = true;
    return e;
}

Trial *core_trial_add(Core *core, Experiment *exp, json_t *config, int64_t now)
{
    Trial *t = calloc(1, sizeof *t);
    if (t == NULL)
        abort();
    t->id = core->next_trial_id;
    t->exp = exp;
    t->number = exp->n_trials;
    t->state = TRIAL_PENDING;
    t->config = config;
    t->attempt = 1;
    t->created_at = now;
    core_put_trial(core, exp, t);
    core->trial_counts[TRIAL_PENDING]++;
    core_queue_back(exp, t);
    core_mark_trial(core, t);
    core->availability_changed = true;
    return t;
}

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
        join_share(core, e);
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
