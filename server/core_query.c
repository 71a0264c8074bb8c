/* Read-only queries of the Core: counts, the best trial, a trial's result
 * for the searcher, and the lookups the engine and the API read (they
 * change nothing). The Pareto front is core_pareto.c's. */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t core_proposals_wanted(const Experiment *exp, int64_t target)
{
    if (exp->state != EXP_RUNNING)
        return 0;
    int64_t left = exp->spec.total_trials - exp->n_trials - exp->proposing;
    int64_t want = target - exp->pending.len - exp->proposing;
    if (want > left)
        want = left;
    return want > 0 ? want : 0;
}

bool core_warm_source_in_use(const Core *core, int64_t exp_id)
{
    for (int64_t i = 0; i < core->n_exps; i++)
        if (core_exp_active(core->exps[i]) && core->exps[i]->spec.warm_start_exp == exp_id)
            return true;
    return false;
}

bool core_blob_referenced(const Core *core, const char *sha256_hex)
{
    for (int64_t i = 0; i < core->n_exps; i++)
        if (strcmp(core->exps[i]->spec.working_dir, sha256_hex) == 0)
            return true;
    return false;
}

int64_t core_n_experiments(const Core *core)
{
    return core->n_exps;
}

Experiment *core_experiment_at(Core *core, int64_t i)
{
    return i >= 0 && i < core->n_exps ? core->exps[i] : NULL;
}

const int64_t *core_exp_counts(const Core *core)
{
    return core->exp_counts;
}

bool core_availability_changed(const Core *core)
{
    return core->availability_changed;
}

void core_availability_seen(Core *core)
{
    core->availability_changed = false;
}

int64_t core_worker_trials(const Core *core, int64_t worker_id, int64_t *ids, int64_t cap)
{
    int64_t n = 0;
    for (const Trial *t = core->running.head; t != NULL; t = t->next)
        if (core_holds_trial(t, worker_id) && n < cap)
            ids[n++] = t->id;
    return n;
}

int64_t core_running_of(const Core *core, const Experiment *e, int64_t *ids, int64_t cap)
{
    int64_t n = 0;
    for (const Trial *t = core->running.head; t != NULL; t = t->next)
        if (t->exp == e && n < cap)
            ids[n++] = t->id;
    return n;
}

void core_experiment_best(const Experiment *e, BestRef *out)
{
    *out = e->best_done;
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        const Trial *t = e->trials[i];
        double v;
        int64_t step;
        if (t != NULL && core_trial_score(t, &v, &step) &&
            (!out->has || core_better(e, v, out->value)))
            *out = (BestRef){
                .has = true, .trial_id = t->id, .value = v, .step = step, .config = t->config};
    }
}

int64_t core_resume_step(const Trial *t)
{
    if (t->from_trial != 0)
        return t->from_step; /* pbt: the donor's checkpoint */
    return t->leased_seen > 0 ? t->seen[t->leased_seen - 1].step : 0;
}

int core_trial_bracket(const Trial *t)
{
    const AshaParams *p = asha_params(t->exp->asha);
    return p->type == ASHA_ASHA || p->type == ASHA_HYPERBAND ? asha_bracket(p, t->number) : 0;
}

bool core_trial_result(const Trial *t, double *loss)
{
    if (t->state == TRIAL_FAILED) {
        *loss = INFINITY;
        return true;
    }
    if (!trial_state_terminal(t->state) || t->last == NULL)
        return false;
    double v;
    if (!core_exp_objective(t->exp, t->last, &v))
        return false;
    *loss = isfinite(v) ? spec_loss(&t->exp->spec, v) : INFINITY;
    return true;
}

bool core_trial_observation(const Trial *t, BayesObservation *o)
{
    *o = (BayesObservation){.config = t->config};
    if (!core_trial_result(t, &o->loss))
        return false;
    const Spec *sp = &t->exp->spec;
    double loss[SPEC_MAX_OBJECTIVES];
    bool ok = t->state != TRIAL_FAILED && spec_losses(sp, t->last, loss);
    for (int k = 1; k < sp->n_objectives; k++)
        o->more[k - 1] = ok && isfinite(loss[k]) ? loss[k] : INFINITY;
    if (t->state == TRIAL_FAILED) {
        for (int k = 0; k < BAYES_MAX_CONSTRAINTS; k++)
            o->cons[k] = NAN;
    } else {
        spec_constraint_values(sp, t->last, o->cons);
    }
    return true;
}

void core_trial_counts(const Core *core, int64_t counts[TRIAL__COUNT])
{
    memcpy(counts, core->trial_counts, sizeof(int64_t) * TRIAL__COUNT);
}

const CoreCounters *core_counters(const Core *core)
{
    return &core->counters;
}

void core_set_counters(Core *core, const CoreCounters *c)
{
    core->counters = *c;
}

int64_t core_queue_len(const Core *core)
{
    /* A paused experiment's line waits for its user, not for workers. */
    int64_t n = 0;
    for (int64_t i = 0; i < core->n_exps; i++)
        if (core->exps[i]->state == EXP_RUNNING)
            n += core->exps[i]->pending.len;
    return n;
}

void core_worker_counts(const Core *core, int64_t now, int64_t *alive, int64_t *gone)
{
    *alive = *gone = 0;
    for (int64_t i = 0; i < core->workers.cap; i++) {
        if (core->workers.slots[i].id == 0)
            continue;
        if (core_worker_alive(core, core->workers.slots[i].ptr, now))
            (*alive)++;
        else
            (*gone)++;
    }
}
