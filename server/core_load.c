/* What enters memory: the store's rows handed to the Core at start, when
 * an experiment is revived or a failed trial re-added (store_load.c calls these;
 * core.h, "Loading"), and what the scheduler's records rebuild from them. */
#include "core_internal.h"
#include "core_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ---- */

void core_load_totals(Core *core, const int64_t trial_counts[TRIAL__COUNT],
                      const int64_t exp_counts[EXP__COUNT], int64_t max_exp_id,
                      int64_t max_trial_id, int64_t max_worker_id)
{
    memcpy(core->trial_counts, trial_counts, sizeof core->trial_counts);
    memcpy(core->exp_counts, exp_counts, sizeof core->exp_counts);
    if (max_exp_id >= core->next_exp_id)
        core->next_exp_id = max_exp_id + 1;
    if (max_trial_id >= core->next_trial_id)
        core->next_trial_id = max_trial_id + 1;
    if (max_worker_id >= core->next_worker_id)
        core->next_worker_id = max_worker_id + 1;
}

Experiment *core_load_experiment(Core *core, int64_t id, Spec *spec, ExpState state,
                                 int64_t created_at, int64_t ended_at)
{
    Experiment *e = core_exp_new(core, id, spec, created_at);
    sched_attach(e);
    e->state = state;
    e->ended_at = ended_at;
    e->stored = true;
    return e;
}

Trial *core_load_trial(Core *core, Experiment *exp, const CoreTrialRow *row)
{
    Trial *t = calloc(1, sizeof *t);
    if (t == NULL)
        abort();
    TrialState st = row->state;
    t->id = row->id;
    t->exp = exp;
    t->number = row->number;
    t->state = st;
    t->config = row->config;
    t->attempt = row->attempt;
    t->worker_id = row->worker_id;
    snprintf(t->lease_token, sizeof t->lease_token, "%s", row->token ? row->token : "");
    t->resources = row->resources;
    t->stop_kind = (uint8_t)row->stop_kind;
    core_set_error(t, row->error);
    t->created_at = row->created_at;
    t->started_at = row->started_at;
    t->ended_at = row->ended_at;
    t->stored = true;
    core_put_trial(core, exp, t);
    if (core_in_line(st))
        core_queue_back(exp, t); /* in number order; core_load_done sorts by queue_pos */
    else if (st == TRIAL_RUNNING)
        core_list_push_back(&core->running, t);
    return t;
}

void core_load_gang(Core *core, Trial *t, const json_t *stored)
{
    Gang *g = stored != NULL ? members_from_json(stored) : NULL;
    if (g == NULL)
        return;
    if (t->state == TRIAL_RUNNING && t->gang == NULL)
        core->gangs_running++; /* a running trial's gang is its current attempt's */
    members_free(t->gang);
    json_decref(t->gang_json);
    t->gang = g;
    t->gang_json = members_to_json(g);
}

void core_load_report(Core *core, Trial *t, int64_t step, json_t *metrics, ReportAction a)
{
    (void)core;
    Experiment *e = t->exp;
    const ReportRead r = core_report_read(e, step, metrics);
    core_record_report(t, &r, metrics, a);
    if (e->sched->load_report != NULL)
        e->sched->load_report(t, &r, metrics);
}

void core_load_experiment_ended(Experiment *e, EndReason reason, const char *error,
                                const json_t *health)
{
    e->ended_reason = reason;
    free(e->error);
    e->error = error ? core_dup_str(error) : NULL;
    ExpHealth *h = &e->health;
    if (!json_is_object(health))
        return;
    h->metric_seen = json_is_true(json_object_get(health, "metric_seen"));
    h->ended_reporting = json_integer_value(json_object_get(health, "ended_reporting"));
    json_t *keys = json_object_get(health, "keys");
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        if (json_is_string(k) && i < CORE_HEALTH_KEYS) {
            if (h->keys == NULL)
                h->keys = json_array();
            json_array_append(h->keys, k);
        }
    }
    json_array_foreach(json_object_get(health, "errors"), i, k) {
        const char *text = json_string_value(json_object_get(k, "text"));
        if (text == NULL || h->n_errors >= CORE_HEALTH_ERRORS)
            continue;
        snprintf(h->errors[h->n_errors].text, sizeof h->errors[0].text, "%s", text);
        h->errors[h->n_errors++].n = json_integer_value(json_object_get(k, "n"));
    }
    json_t *best = json_object_get(health, "best_finished");
    h->has_best_finished = json_is_number(best);
    h->best_finished = json_number_value(best);
    h->since_better = json_integer_value(json_object_get(health, "since_better"));
}

void core_load_trial_control(Trial *t, StoppedBy by, bool user_paused, json_t *warnings,
                             json_t *info)
{
    t->stopped_by = (uint8_t)by;
    t->user_paused = user_paused;
    json_decref(t->warnings);
    t->warnings = warnings;
    json_decref(t->info); /* schema 014: its reports' info, an object or NULL */
    t->info = json_is_object(info) ? info : NULL;
    if (t->info == NULL)
        json_decref(info);
}

void core_load_trial_preemptions(Trial *t, int64_t n)
{
    t->preemptions = n > 0 ? n : 0;
}

void core_load_trial_losses(Trial *t, int64_t n)
{
    t->worker_losses = n > 0 ? n : 0;
}

Trial *core_readd_trial(Core *core, Experiment *exp, const CoreTrialRow *row)
{
    /* An ended trial holds no lease: its token, resources (stolen, freed
     * here) and stop kind are none. */
    CoreTrialRow ended = *row;
    json_decref(row->resources);
    ended.token = NULL;
    ended.resources = NULL;
    ended.stop_kind = STOP_NONE;
    Trial *t = core_load_trial(core, exp, &ended);
    int64_t number = row->number;
    exp->counts[row->state]--; /* it never left them */
    int64_t kept = 0;          /* nor the searcher's history, which it leaves now */
    for (int64_t i = 0; i < exp->n_hist; i++) {
        if (exp->hist[i].number == number)
            json_decref((json_t *)exp->hist[i].obs.config);
        else
            exp->hist[kept++] = exp->hist[i];
    }
    exp->n_hist = kept;
    return t;
}

void core_load_trial_pbt(Trial *t, json_t *lineage, const json_t *resume_from)
{
    json_decref(t->lineage);
    t->lineage = json_is_array(lineage) ? lineage : NULL;
    if (t->lineage == NULL)
        json_decref(lineage);
    t->from_trial = json_integer_value(json_object_get(resume_from, "trial"));
    t->from_step = json_integer_value(json_object_get(resume_from, "step"));
    t->from_worker = json_integer_value(json_object_get(resume_from, "worker"));
    /* pb2: it waits for its explore (sched_pbt.c's load_paused asks again). */
    t->explore_at = json_integer_value(json_object_get(resume_from, "explore"));
}

void core_load_rung(Trial *t, double rung)
{
    t->rung = rung;
}

void core_load_queue_pos(Trial *t, int64_t pos)
{
    t->queue_pos = pos;
}

Worker *core_load_worker(Core *core, int64_t id, const char *name, const char *hostname,
                         json_t *gpus, int64_t cpus, int64_t registered_at, int64_t last_seen_at,
                         json_t *heartbeat)
{
    Worker *w = core_worker_new(core, id, name, hostname, gpus, cpus, registered_at);
    w->last_seen_at = last_seen_at;
    w->heartbeat = heartbeat;
    w->stored = true;
    return w;
}

static int cmp_queue_pos(const void *x, const void *y)
{
    const Trial *a = *(Trial *const *)x, *b = *(Trial *const *)y;
    if (a->queue_pos != b->queue_pos)
        return a->queue_pos < b->queue_pos ? -1 : 1;
    return (a->number > b->number) - (a->number < b->number);
}

/* Puts e's pending line, loaded in number order, in queue_pos order. */
static void queue_sort(Experiment *e)
{
    int64_t n = e->pending.len;
    Trial **v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (v == NULL)
        abort();
    int64_t i = 0;
    for (Trial *t = e->pending.head; t != NULL; t = t->next)
        v[i++] = t;
    qsort(v, (size_t)n, sizeof *v, cmp_queue_pos);
    e->pending = (TrialList){0};
    for (i = 0; i < n; i++)
        core_list_push_back(&e->pending, v[i]);
    free(v);
}

bool core_load_all_trials(const Experiment *e)
{
    return e->sched->loads_all_trials;
}

void core_load_ended_counts(Core *core, Experiment *e, const int64_t counts[TRIAL__COUNT],
                            int64_t n_trials)
{
    (void)core;
    for (int st = 0; st < TRIAL__COUNT; st++)
        if (trial_state_terminal((TrialState)st))
            e->counts[st] += counts[st];
    if (n_trials > e->n_trials) {
        if (e->trials_lo >= e->n_trials - e->trials_base) /* no trial in the window */
            e->trials_base = n_trials;
        e->n_trials = n_trials;
    }
}

bool core_load_wants_ended_reports(const Experiment *e)
{
    return e->sched->wants_ended_reports;
}

bool core_load_wants_ended_rows(const Experiment *e)
{
    const Spec *sp = &e->spec;
    return sp->searcher.type == SEARCHER_BAYES || sp->searcher.type == SEARCHER_CMAES ||
           sp->n_objectives > 1 || sp->n_constraints > 0 || sp->best_last;
}

Trial *core_load_ended_begin(Experiment *e, int64_t id, int64_t number, TrialState st,
                             json_t *config)
{
    Trial *t = calloc(1, sizeof *t);
    if (t == NULL)
        abort();
    *t = (Trial){.id = id, .exp = e, .number = number, .state = st, .config = config};
    return t;
}

void core_load_ended_summary(Trial *t, json_t *last, bool has_best, double best_value,
                             int64_t best_step, bool has_step, int64_t step)
{
    json_decref(t->last);
    t->last = last;
    t->has_best = has_best;
    t->best_value = best_value;
    t->best_step = best_step;
    if (has_step)
        core_seen_insert(t, step, ACTION_CONTINUE); /* core_trial_score's step for best_last */
}

void core_load_ended_end(Core *core, Trial *t, bool scheduler, bool result)
{
    (void)core;
    const SchedOps *ops = t->exp->sched;
    if (scheduler && (t->state == TRIAL_COMPLETED || t->state == TRIAL_STOPPED) &&
        ops->trial_end != NULL)
        ops->trial_end(t->exp, t);
    if (scheduler && ops->forget != NULL) /* replayed for its records only */
        ops->forget(t->exp, t);
    if (result)
        core_keep_result(t->exp, t);
    core_trial_free(t);
}

/* The per-experiment part of loading: the pending line's order and the
 * scheduler's state beyond the replayed reports. */
static void load_experiment_done(Core *core, Experiment *e, int64_t now)
{
    queue_sort(e);
    /* What ended for the scheduler (Ray's on_trial_complete) and what waits
     * at a rung. A resumed trial, pending or running, leases with the
     * reports it had. */
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        Trial *t = e->trials[i];
        if (t == NULL)
            continue;
        if (trial_state_terminal(t->state) && !t->releasing) {
            t->releasing = true; /* loaded for the records it leaves */
            rung_grow((void **)&core->rel_trials, &core->cap_rel_trials, core->n_rel_trials,
                      sizeof(Trial *));
            core->rel_trials[core->n_rel_trials++] = t;
        }
        if (t->state == TRIAL_COMPLETED || t->state == TRIAL_STOPPED) {
            if (e->sched->trial_end != NULL)
                e->sched->trial_end(e, t);
        } else if (t->state == TRIAL_PAUSED && !t->user_paused) {
            if (e->sched->load_paused != NULL)
                e->sched->load_paused(e, t);
        } else if (t->state == TRIAL_RUNNING) {
            t->leased_seen = t->n_seen; /* unknown; no report is taken back */
            /* The daemon was down: nobody could heartbeat, so every lease
             * starts afresh rather than expiring the moment we are back. */
            if (t->lease_expires_ms == 0)
                t->lease_expires_ms = now + core->lease_ms;
            for (int64_t k = 0; t->gang != NULL && k < t->gang->nnodes; k++)
                if (t->gang->members[k].lease_expires_ms == 0)
                    t->gang->members[k].lease_expires_ms = now + core->lease_ms;
            core_count_slots(core, t, +1);
        }
    }
    core_maybe_complete(core, e, now);
    if (!core_exp_active(e))
        core_release_exp(core, e);
}

void core_load_done(Core *core, int64_t now)
{
    for (int64_t k = 0; k < core->n_exps; k++)
        load_experiment_done(core, core->exps[k], now);
    core->availability_changed = true;
}

void core_load_experiment_done(Core *core, Experiment *e, int64_t now)
{
    for (int st = 0; st < TRIAL__COUNT; st++)
        core->trial_counts[st] += e->counts[st];
    core->exp_counts[e->state]++;
    load_experiment_done(core, e, now);
    core->availability_changed = true;
}

void core_load_revived(Core *core, Experiment *e, int64_t now)
{
    load_experiment_done(core, e, now);
}

void core_set_lease_expiry(Trial *t, int64_t expires_ms)
{
    t->lease_expires_ms = expires_ms;
}

void core_load_worker_labels(Worker *w, json_t *labels)
{
    json_decref(w->labels);
    w->labels = labels;
}

void core_set_owner(Experiment *e, int64_t owner_id, const char *owner)
{
    e->owner_id = owner_id;
    free(e->owner);
    e->owner = owner ? core_dup_str(owner) : NULL;
}

void core_set_worker_owner(Worker *w, int64_t owner_id)
{
    w->owner_id = owner_id;
}

void core_load_worker_caps(Worker *w, json_t *caps)
{
    json_decref(w->caps);
    w->caps = caps;
}
