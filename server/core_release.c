/* What leaves memory: ended trials and experiments are released once their
 * final state is committed (core_release), keeping what they leave behind
 * (the best value, the Pareto front of released trials, the searcher's
 * history, capped as bayes's selection allows); and the whole Core at
 * exit (core_free). */
#include "core_internal.h"
#include "warm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void core_forget_deleted(Core *core, ExpState state, const int64_t trial_counts[TRIAL__COUNT])
{
    core->exp_counts[state]--;
    for (int s = 0; s < TRIAL__COUNT; s++)
        core->trial_counts[s] -= trial_counts[s];
}

static double hist_key(const HistEntry *h)
{
    return h->obs.loss == h->obs.loss ? h->obs.loss : INFINITY; /* NaN: failed (bayes.c) */
}

static int cmp_hist_number(const void *x, const void *y)
{
    const HistEntry *a = x, *b = y;
    return (a->number > b->number) - (a->number < b->number);
}

typedef struct HistRank {
    double key;
    int64_t i;
} HistRank;

static int cmp_hist_rank(const void *x, const void *y)
{
    const HistRank *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* The searcher's history capped (core.h, CORE_HIST_HALF): keeps what
 * bayes's selection (sampler/bayes.h: past 2,000 observations, the best
 * 1,000 and the 1,000 most recent others, by trial number) takes from the
 * history alone. An entry it drops ranks below 1,000 kept ones and is older
 * than 1,000 other kept ones, so no later history, which only adds entries,
 * would ever select it: proposals stay what they were. */
static void hist_prune(Experiment *e)
{
    int64_t n = e->n_hist;
    qsort(e->hist, (size_t)n, sizeof *e->hist, cmp_hist_number);
    HistRank *r = malloc((size_t)n * sizeof *r);
    bool *keep = calloc((size_t)n, sizeof *keep);
    if (r == NULL || keep == NULL)
        abort();
    for (int64_t i = 0; i < n; i++)
        r[i] = (HistRank){hist_key(&e->hist[i]), i};
    qsort(r, (size_t)n, sizeof *r, cmp_hist_rank);
    for (int64_t i = 0; i < CORE_HIST_HALF; i++)
        keep[r[i].i] = true;
    int64_t left = CORE_HIST_HALF;
    for (int64_t i = n - 1; i >= 0 && left > 0; i--)
        if (!keep[i]) {
            keep[i] = true;
            left--;
        }
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++) {
        if (keep[i])
            e->hist[w++] = e->hist[i];
        else
            json_decref((json_t *)e->hist[i].obs.config);
    }
    e->n_hist = w;
    free(r);
    free(keep);
}

/* Keeps what a released trial leaves behind: its best value and, for a
 * model-based searcher, its result. */
void core_keep_result(Experiment *e, const Trial *t)
{
    double v;
    int64_t step;
    if (core_trial_score(t, &v, &step) &&
        (!e->best_done.has || core_better(e, v, e->best_done.value))) {
        json_decref(e->best_done.config);
        e->best_done = (BestRef){.has = true,
                                 .trial_id = t->id,
                                 .value = v,
                                 .step = step,
                                 .config = json_incref(t->config)};
    }
    if (e->spec.n_objectives > 1)
        core_pareto_keep(e, t);
    BayesObservation o;
    if (searcher_uses_history(e->spec.searcher.type) && core_trial_observation(t, &o)) {
        rung_grow((void **)&e->hist, &e->cap_hist, e->n_hist, sizeof *e->hist);
        o.config = json_incref(t->config);
        e->hist[e->n_hist++] = (HistEntry){.number = t->number, .obs = o};
        /* cmaes replays every result (sampler/cmaes.h), and auto may go
         * on with cmaes: never pruned. */
        if (e->n_hist > 4 * CORE_HIST_HALF && e->spec.searcher.multi_fidelity != 1 &&
            e->spec.searcher.type != SEARCHER_CMAES && e->spec.searcher.type != SEARCHER_AUTO)
            hist_prune(e);
    }
}

/* Frees t, which is in no list (terminal), or is taken out of its list. */
static void drop_trial(Core *core, Trial *t)
{
    Experiment *e = t->exp;
    if (t->state == TRIAL_RUNNING) {
        core_list_remove(&core->running, t);
        if (t->gang != NULL)
            core->gangs_running--;
    } else if (core_in_line(t->state)) {
        core_list_remove(&e->pending, t);
    }
    if (core_exp_trial(e, t->number) == t) {
        e->trials[t->number - e->trials_base] = NULL;
        core_window_shrink(e);
    }
    idmap_remove(&core->trials, t->id);
    core_trial_free(t);
}

static void remove_exp(Core *core, Experiment *e)
{
    while (e->trials_lo < e->cap_trials) { /* the window moves as it empties */
        Trial *t = e->trials[e->trials_lo];
        if (t == NULL)
            e->trials_lo++;
        else
            drop_trial(core, t);
    }
    int64_t at = core_exp_lower_bound(core, e->id);
    if (at < core->n_exps && core->exps[at] == e) {
        memmove(&core->exps[at], &core->exps[at + 1],
                (size_t)(core->n_exps - at - 1) * sizeof *core->exps);
        core->n_exps--;
    }
    core_exp_free(e);
}

void core_release(Core *core)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < core->n_rel_trials; i++) {
        Trial *t = core->rel_trials[i];
        if (!trial_state_terminal(t->state)) { /* retried: it stays */
            t->releasing = false;
            continue;
        }
        if (t->dirty) { /* not written yet: next time */
            core->rel_trials[kept++] = t;
            continue;
        }
        core_keep_result(t->exp, t);
        /* Its rung records stay; its entry in the scheduler goes (asha.h). */
        if (t->exp->sched->forget != NULL)
            t->exp->sched->forget(t->exp, t);
        drop_trial(core, t);
    }
    core->n_rel_trials = kept;
    kept = 0;
    for (int64_t i = 0; i < core->n_rel_exps; i++) {
        Experiment *e = core->rel_exps[i];
        if (core_exp_active(e)) { /* runs again (extended, retried) */
            e->releasing = false;
            continue;
        }
        /* A canceled experiment waits for its running trials to stop. */
        if (e->dirty || e->counts[TRIAL_RUNNING] > 0 || e->pending.len > 0) {
            core->rel_exps[kept++] = e;
            continue;
        }
        remove_exp(core, e);
    }
    core->n_rel_exps = kept;
}

void core_forget_experiment(Core *core, Experiment *e)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < core->n_rel_trials; i++)
        if (core->rel_trials[i]->exp != e)
            core->rel_trials[kept++] = core->rel_trials[i];
    core->n_rel_trials = kept;
    kept = 0;
    for (int64_t i = 0; i < core->n_rel_exps; i++)
        if (core->rel_exps[i] != e)
            core->rel_exps[kept++] = core->rel_exps[i];
    core->n_rel_exps = kept;
    /* The totals go back to what the store says of e (the reload adds it). */
    for (int s = 0; s < TRIAL__COUNT; s++)
        core->trial_counts[s] -= e->counts[s];
    core->exp_counts[e->state]--;
    for (Trial *t = core->running.head; t != NULL; t = t->next)
        if (t->exp == e)
            core_count_slots(core, t, -1);
    remove_exp(core, e);
}

void core_forget_worker(Core *core, Worker *w)
{
    idmap_remove(&core->workers, w->id);
    core_worker_free(w);
}

int64_t core_release_idle_workers(Core *core, int64_t now, int64_t idle_ms)
{
    Worker *idle[64];
    int64_t n = 0;
    for (int64_t i = 0; i < core->workers.cap && n < 64; i++) {
        Worker *w = core->workers.slots[i].ptr;
        if (core->workers.slots[i].id != 0 && w->n_running == 0 && !w->dirty && w->stored &&
            now - w->last_seen_at > idle_ms)
            idle[n++] = w;
    }
    for (int64_t i = 0; i < n; i++)
        core_forget_worker(core, idle[i]);
    return n;
}

void core_trial_free(Trial *t)
{
    json_decref(t->config);
    json_decref(t->resources);
    json_decref(t->last);
    json_decref(t->warnings);
    json_decref(t->info);
    json_decref(t->tags);
    json_decref(t->notes);
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
    free(e->owner);
    e->sched->fini(e);
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
    json_decref(w->caps);
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
    free(core->events);
    free(core->ckpts);
    free(core->new_ckpts);
    free(core->dropped_ckpts);
    free(core->uploads);
    free(core->rel_trials);
    free(core->rel_exps);
    free(core);
}
