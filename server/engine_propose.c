/* The engine's proposal policy (engine_internal.h): how many configs each
 * running experiment is asked for ahead, what a model-based searcher sees
 * (history_of: its own results, the warm_start trials, the pending
 * configs, rung records), and the answers added as trials in trial-number
 * order; pb2's explores handed to the proposer and applied when they come
 * back. The proposer thread that runs the samplers is propose.c. */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

/* Configs kept proposed ahead per experiment: enough for a burst of leases
 * from many workers between two proposer round trips. */
#define PENDING_TARGET 256

static void apply_proposals(Engine *e, Job *job)
{
    Proposals *p = job->data;
    Experiment *exp = core_experiment(e->core, p->exp_id);
    if (exp != NULL) {
        core_proposing_add(exp, -p->count);
        /* Configs are added in trial-number order; anything else (an
         * experiment canceled meanwhile) is dropped. */
        for (int64_t i = 0; i < p->count; i++) {
            if (exp->state != EXP_RUNNING || p->configs[i] == NULL || p->first + i != exp->n_trials)
                break;
            core_trial_add(e->core, exp, p->configs[i], e->now);
            p->configs[i] = NULL;
        }
    }
    proposals_free(p);
    free(job);
}

/* On the proposer thread: queue the result as an internal job. */
void engine_on_proposals(void *ctx, Proposals *p)
{
    Engine *e = ctx;
    Job *job = calloc(1, sizeof *job);
    if (job == NULL)
        abort();
    job->fn = apply_proposals;
    job->data = p;
    engine_inbox_push(e, job);
}

/* pb2: a member's explore computed on the proposer thread; the Core
 * applies it if the member still waits (core_pbt_explored). */
static void apply_explored(Engine *e, Job *job)
{
    PbtExplore *x = job->data;
    json_t *config = x->result;
    x->result = NULL;
    core_pbt_explored(e->core, x->trial_id, x->milestone, config, e->now);
    pbt_explore_free(x);
    free(job);
}

/* On the proposer thread: queue the explore as an internal job. */
void engine_on_explored(void *ctx, PbtExplore *x)
{
    Engine *e = ctx;
    Job *job = calloc(1, sizeof *job);
    if (job == NULL)
        abort();
    job->fn = apply_explored;
    job->data = x;
    engine_inbox_push(e, job);
}

void engine_job_discard(Job *job)
{
    if (job->fn == engine_analysis_apply)
        engine_analysis_discard(job); /* asked again by whoever wants it */
    else if (job->fn == apply_explored)
        pbt_explore_free(job->data); /* its member is reloaded waiting: it asks again */
    else
        proposals_free(job->data);
    free(job);
}

/* One finished trial's observation with its number: the searcher's history
 * (exp->hist, the released trials) and the trials in memory, sorted by
 * number; among equal numbers the one in memory (src 1) comes last and
 * wins. */
typedef struct NumberedObs {
    int64_t number;
    int src; /* 0: exp->hist; 1: a trial in memory */
    BayesObservation obs;
} NumberedObs;

static int cmp_numbered(const void *x, const void *y)
{
    const NumberedObs *a = x, *b = y;
    if (a->number != b->number)
        return a->number < b->number ? -1 : 1;
    return a->src - b->src;
}

/* The config of finished trial `number` in obs[0 .. n-1] (sorted, one per
 * number), or NULL. */
static const json_t *numbered_config(const NumberedObs *obs, size_t n, int64_t number)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (obs[mid].number < number)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && obs[lo].number == number ? obs[lo].obs.config : NULL;
}

/* searcher.multi_fidelity: the scheduler's rung records with each
 * trial's config (from memory, or from obs for trials released from it),
 * for bayes_mf_propose. */
static void rung_records(const Experiment *exp, const NumberedObs *obs, size_t n_obs,
                         ProposeHistory *h)
{
    int64_t n = asha_records(exp->asha, NULL, 0);
    AshaRecord *recs = malloc((size_t)(n > 0 ? n : 1) * sizeof *recs);
    h->rungs = calloc((size_t)(n > 0 ? n : 1), sizeof *h->rungs);
    if (recs == NULL || h->rungs == NULL)
        abort();
    asha_records(exp->asha, recs, n);
    for (int64_t i = 0; i < n; i++) {
        int64_t num = recs[i].trial;
        if (num < 0 || num >= exp->n_trials)
            continue;
        const Trial *t = core_exp_trial(exp, num);
        const json_t *config = t != NULL ? t->config : numbered_config(obs, n_obs, num);
        if (config == NULL)
            continue;
        h->rungs[h->n_rungs++] = (BayesRungRecord){json_incref((json_t *)config), recs[i].milestone,
                                                   recs[i].loss, num};
    }
    free(recs);
    if (exp->spec.searcher.type == SEARCHER_BAYES)
        return;
    /* tpe ranks by the deepest level reached: a trial that ran to max_t
     * gets a record there, above those stopped at the last rung (max_t is
     * not always a rung: 52 epochs under rf 3). Trials released from
     * memory are left at their last rung. */
    double max_t = asha_params(exp->asha)->max_t;
    int64_t lo = exp->trials_base + exp->trials_lo;
    int64_t window = exp->n_trials > lo ? exp->n_trials - lo : 0;
    BayesRungRecord *grown = realloc(h->rungs, (size_t)(h->n_rungs + window + 1) * sizeof *grown);
    if (grown == NULL)
        abort();
    h->rungs = grown;
    for (int64_t i = lo; i < exp->n_trials; i++) {
        const Trial *t = core_exp_trial(exp, i);
        double loss;
        if (t != NULL && t->state == TRIAL_COMPLETED && t->has_time && t->time >= max_t &&
            core_trial_result(t, &loss))
            h->rungs[h->n_rungs++] = (BayesRungRecord){json_incref(t->config), max_t, loss, i};
    }
}

/* What a bayes experiment knows now: the trials of its warm_start source
 * (warm.h), then the results of its own finished trials (those released
 * from memory keep theirs in exp->hist) and the configs of the others,
 * pending or running; its observations in trial-number order, so that a
 * restart (which rebuilds them in that order) proposes the same. Its
 * arrays are sized by what it passes (the capped history and the trials in
 * memory), not by the experiment's number of trials: at 400,000 trials,
 * arrays by number took about 67 MB for each proposal. */
static ProposeHistory *history_of(const Experiment *exp)
{
    ProposeHistory *h = calloc(1, sizeof *h);
    int64_t lo = exp->trials_base + exp->trials_lo; /* the window of trials in memory */
    size_t window = (size_t)(exp->n_trials > lo ? exp->n_trials - lo : 0);
    size_t cap = (size_t)exp->n_hist + window + 1;
    int64_t n_warm = exp->warm ? warm_count(exp->warm) : 0;
    NumberedObs *all = malloc(cap * sizeof *all);
    if (h == NULL || all == NULL ||
        (h->obs = calloc(cap + (size_t)n_warm, sizeof *h->obs)) == NULL ||
        (h->pending = calloc(window + 1, sizeof *h->pending)) == NULL)
        abort();
    h->n_objectives = exp->spec.n_objectives;
    h->n_constraints = spec_constraint_count(&exp->spec);
    for (int64_t i = 0; i < n_warm; i++) {
        h->obs[h->n_obs] = warm_observations(exp->warm)[i];
        json_incref((json_t *)h->obs[h->n_obs].config);
        h->n_obs++;
    }
    size_t n = 0;
    for (int64_t i = 0; i < exp->n_hist; i++)
        all[n++] = (NumberedObs){exp->hist[i].number, 0, exp->hist[i].obs};
    for (int64_t i = lo; i < exp->n_trials; i++) {
        const Trial *t = core_exp_trial(exp, i);
        if (t == NULL)
            continue;
        if (core_trial_observation(t, &all[n].obs)) {
            all[n].number = i;
            all[n++].src = 1;
        } else if (!trial_state_terminal(t->state)) {
            h->pending[h->n_pending++] = json_incref(t->config);
        }
    }
    qsort(all, n, sizeof *all, cmp_numbered);
    size_t kept = 0; /* one per number: the last of equal numbers */
    for (size_t i = 0; i < n; i++) {
        if (kept > 0 && all[kept - 1].number == all[i].number)
            kept--;
        all[kept++] = all[i];
    }
    for (size_t i = 0; i < kept; i++) {
        h->obs[h->n_obs] = all[i].obs;
        json_incref((json_t *)h->obs[h->n_obs].config);
        h->n_obs++;
    }
    if (exp->spec.searcher.multi_fidelity == 1 && exp->asha != NULL)
        rung_records(exp, all, kept, h);
    free(all);
    return h;
}

void engine_request_proposals(Engine *e)
{
    Core *core = e->core;
    /* pb2's explores first: a member waits paused for each. */
    for (PbtExplore *x = core_take_explores(core), *next; x != NULL; x = next) {
        next = x->next;
        proposer_explore(e->proposer, x);
    }
    for (int64_t i = 0; i < core_n_experiments(core); i++) {
        Experiment *exp = core_experiment_at(core, i);
        /* bayes: the warm_start trials count toward n_initial. */
        SearcherSpec adjusted = exp->spec.searcher;
        adjusted.n_initial = warm_n_initial(exp->warm, &adjusted);
        const SearcherSpec *searcher = &adjusted;
        int64_t first = exp->n_trials + exp->proposing;
        /* auto starts as bayes does (sampler/auto.h). */
        bool bayes = searcher->type == SEARCHER_BAYES || searcher->type == SEARCHER_TPE ||
                     searcher->type == SEARCHER_AUTO;
        /* cmaes is a model from its first trial: its distribution moves
         * with each generation of results. */
        bool model = searcher->type == SEARCHER_CMAES || (bayes && first >= searcher->n_initial);
        /* A model-based proposal should see every result that came in, so
         * only one waits ready ahead; the quasi-random start points and the
         * other searchers are proposed in bulk. */
        int64_t want = core_proposals_wanted(exp, model ? 1 : PENDING_TARGET);
        if (want <= 0)
            continue;
        if (bayes && !model && first + want > searcher->n_initial)
            want = searcher->n_initial - first; /* the model's part comes next */
        /* Ask in chunks, so that one answer is not one long transaction and
         * the proposer is not woken per trial; the end of the experiment is
         * asked for whatever it is. */
        if (!bayes && !model && want < PENDING_TARGET / 4 && first + want < exp->spec.total_trials)
            continue;
        core_proposing_add(exp, want);
        proposer_request(e->proposer, exp->id, json_object_get(exp->spec.json, "search_space"),
                         searcher, exp->spec.points, exp->warm, first, want,
                         model ? history_of(exp) : NULL);
    }
}
