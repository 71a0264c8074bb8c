/* The Core object: its experiments, trials and workers in memory (lookups
 * by id, an experiment's window of trials by number), the intrusive lists
 * (the running trials, each experiment's pending line) and the change queue
 * the engine writes (core.h, core_changes); new trials enter here
 * (core_trial_add). It calls no other file of the family: the state
 * machine is core_kernel.c's, a new experiment a user's verb
 * (core_verbs.c). */
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
    out->events = core->events;
    out->n_events = core->n_events;
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
    for (int64_t i = 0; i < core->n_events; i++)
        json_decref(core->events[i].detail);
    core->n_events = 0;
    core->n_dirty_exps = core->n_dirty_trials = core->n_dirty_workers = core->n_reports = 0;
    core->n_new_ckpts = core->n_dropped_ckpts = 0;
}

void core_experiment_stored(Experiment *e)
{
    e->stored = true;
    e->meta_changed = false;
    /* The submitted body is read from the store from now on
     * (GET /api/v1/experiments/{id}/spec), not kept in memory. */
    free(e->spec.submitted);
    e->spec.submitted = NULL;
}

void core_trial_stored(Trial *t)
{
    t->stored = true;
    t->config_changed = false;
    t->meta_changed = false;
}

void core_worker_stored(Worker *w)
{
    w->stored = true;
}

/* ---- a new Core (what frees it is core_release.c's) ---- */

Core *core_new(int64_t lease_ms)
{
    Core *core = calloc(1, sizeof *core);
    if (core == NULL)
        return NULL;
    core->lease_ms = lease_ms;
    core->next_exp_id = core->next_trial_id = core->next_worker_id = 1;
    return core;
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
    e->owner_id = -1;
    put_exp(core, id, e);
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

void core_proposing_add(Experiment *exp, int64_t n)
{
    exp->proposing += n;
    if (exp->proposing < 0)
        exp->proposing = 0;
}

void core_experiment_set_warm(Experiment *exp, struct Warm *warm)
{
    exp->warm = warm;
}

/* ---- small facts every file of the family reads ---- */

/* Whether a is a better value of exp's metric than b. */
bool core_better(const Experiment *e, double a, double b)
{
    return spec_loss(&e->spec, a) < spec_loss(&e->spec, b);
}

bool core_exp_active(const Experiment *e)
{
    return e->state == EXP_RUNNING || e->state == EXP_PAUSED;
}

char *core_dup_str(const char *s)
{
    char *d = strdup(s ? s : "");
    if (d == NULL)
        abort();
    return d;
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

Worker *core_owner_of(const Core *core, const Trial *t)
{
    return t->worker_id > 0 ? idmap_get(&core->workers, t->worker_id) : NULL;
}

int core_exp_objective(const Experiment *e, const json_t *metrics, double *v)
{
    return core_objective(&e->spec, metrics, v);
}

int core_objective(const Spec *spec, const json_t *metrics, double *v)
{
    return rung_nonfinite_from_json(json_object_get(metrics, spec->metric), v) ? 1 : 0;
}

/* Compares lease tokens in time that does not depend on where they differ,
 * so a client cannot guess a token byte by byte. */
bool core_token_equal(const char *given, const char *expected)
{
    return rung_ct_equal(given, expected, CORE_TOKEN_LEN);
}

int core_lease_lost(const Trial *t, RungError *err)
{
    return rung_error_set(err, RUNG_E_LEASE_LOST, "lease_token",
                          "trial %lld: lease_token is not this trial's current lease "
                          "(it expired, or the trial was retried); end the trial",
                          (long long)t->id);
}

/* Queues an ended experiment for core_release. */
void core_release_exp(Core *core, Experiment *e)
{
    if (e->releasing)
        return;
    e->releasing = true;
    rung_grow((void **)&core->rel_exps, &core->cap_rel_exps, core->n_rel_exps,
              sizeof(Experiment *));
    core->rel_exps[core->n_rel_exps++] = e;
}

/* ---- the event log's queue (core_events.h) ---- */

void core_event_by(Core *core, int64_t now, const char *actor_kind, const char *actor,
                   const char *kind, int64_t experiment_id, int64_t trial_id, int64_t worker_id,
                   json_t *detail)
{
    rung_grow((void **)&core->events, &core->cap_events, core->n_events, sizeof *core->events);
    CoreEvent *ev = &core->events[core->n_events++];
    ev->at = now;
    ev->actor_kind = actor_kind;
    snprintf(ev->actor, sizeof ev->actor, "%s", actor ? actor : "");
    ev->kind = kind;
    ev->experiment_id = experiment_id;
    ev->trial_id = trial_id;
    ev->worker_id = worker_id;
    ev->detail = detail;
    core->events_total++;
}

void core_event(Core *core, int64_t now, const char *kind, int64_t experiment_id, int64_t trial_id,
                int64_t worker_id, json_t *detail)
{
    core_event_by(core, now, "rungd", "rungd", kind, experiment_id, trial_id, worker_id, detail);
}

int64_t core_events_total(const Core *core)
{
    return core->events_total;
}
