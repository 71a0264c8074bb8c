/* Read-only queries of the Core: counts, the best trial and the Pareto
 * front, a trial's result for the searcher, and the lookups the engine and
 * the API read (they change nothing). */
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

/* A trial's objective values for the Pareto front: from its last report,
 * when that carries every objective as a finite number and meets every
 * constraint (docs/api.md, "Several objectives and constraints"). */
bool core_trial_losses(const Trial *t, double loss[SPEC_MAX_OBJECTIVES])
{
    const Spec *sp = &t->exp->spec;
    if (t->last == NULL || t->state == TRIAL_FAILED || !spec_losses(sp, t->last, loss) ||
        !spec_feasible(sp, t->last))
        return false;
    for (int k = 0; k < sp->n_objectives; k++)
        if (!isfinite(loss[k]))
            return false;
    return true;
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

json_t *core_values_json(const Spec *spec, const json_t *metrics)
{
    double loss[SPEC_MAX_OBJECTIVES];
    if (spec->n_objectives < 2 || metrics == NULL || !spec_losses(spec, metrics, loss))
        return NULL;
    json_t *o = json_object();
    for (int k = 0; k < spec->n_objectives; k++) {
        double v = spec->objectives[k].mode == SPEC_MODE_MIN ? loss[k] : -loss[k];
        json_object_set_new(o, spec->objectives[k].name, rung_nonfinite_to_json(v));
    }
    return o;
}

/* Orders front members by their first objective, then by trial id. */
static int pareto_ref_cmp(const void *pa, const void *pb)
{
    const ParetoRef *a = pa, *b = pb;
    if (a->loss[0] != b->loss[0])
        return a->loss[0] < b->loss[0] ? -1 : 1;
    return a->trial_id < b->trial_id ? -1 : a->trial_id > b->trial_id;
}

json_t *core_experiment_pareto(const Experiment *e)
{
    const Spec *sp = &e->spec;
    int m = sp->n_objectives;
    if (m < 2)
        return NULL;
    /* Candidates: the released trials' front and every trial in memory. */
    int64_t n = e->n_pareto_done;
    ParetoRef *c = malloc((size_t)(n + e->cap_trials + 1) * sizeof *c);
    if (c == NULL)
        abort();
    if (n > 0) /* pareto_done is NULL until a front member is released */
        memcpy(c, e->pareto_done, (size_t)n * sizeof *c);
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        const Trial *t = e->trials[i];
        if (t != NULL && core_trial_losses(t, c[n].loss)) {
            c[n].trial_id = t->id;
            c[n].config = t->config;
            n++;
        }
    }
    double *y = malloc((size_t)(n + 1) * (size_t)m * sizeof *y);
    bool *on = malloc((size_t)(n + 1) * sizeof *on);
    if (y == NULL || on == NULL)
        abort();
    for (int64_t i = 0; i < n; i++)
        memcpy(y + i * m, c[i].loss, (size_t)m * sizeof *y);
    if (pareto_front(y, (int)n, m, on) < 0)
        abort();
    int64_t f = 0;
    for (int64_t i = 0; i < n; i++)
        if (on[i])
            c[f++] = c[i];
    qsort(c, (size_t)f, sizeof *c, pareto_ref_cmp);
    json_t *arr = json_array();
    for (int64_t i = 0; i < f; i++) {
        json_t *values = json_object();
        for (int k = 0; k < m; k++) {
            double v = sp->objectives[k].mode == SPEC_MODE_MIN ? c[i].loss[k] : -c[i].loss[k];
            json_object_set_new(values, sp->objectives[k].name, json_real(v));
        }
        json_array_append_new(arr,
                              json_pack("{s:I, s:o, s:O}", "trial_id", (json_int_t)c[i].trial_id,
                                        "values", values, "config", c[i].config));
    }
    free(y);
    free(on);
    free(c);
    return arr;
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
