/* An experiment's Pareto front, with several objectives (docs/api.md,
 * "Several objectives and constraints"): a trial's losses, the front of its
 * released trials kept as they leave memory, and the front shown. The one
 * file of the Core that calls the sampler's ranking (sampler/pareto.h). */
#include "core_internal.h"
#include "pareto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Adds a released trial to the front of released trials, when no member
 * dominates it, and drops the members it dominates. */
void core_pareto_keep(Experiment *e, const Trial *t)
{
    int m = e->spec.n_objectives;
    double loss[SPEC_MAX_OBJECTIVES];
    if (!core_trial_losses(t, loss))
        return;
    int64_t w = 0;
    for (int64_t i = 0; i < e->n_pareto_done; i++) {
        ParetoRef *p = &e->pareto_done[i];
        if (pareto_dominates(p->loss, loss, m))
            return; /* nothing dropped yet: members only go after this loop */
    }
    for (int64_t i = 0; i < e->n_pareto_done; i++) {
        ParetoRef *p = &e->pareto_done[i];
        if (pareto_dominates(loss, p->loss, m))
            json_decref(p->config);
        else
            e->pareto_done[w++] = *p;
    }
    e->n_pareto_done = w;
    rung_grow((void **)&e->pareto_done, &e->cap_pareto_done, e->n_pareto_done,
              sizeof *e->pareto_done);
    ParetoRef *p = &e->pareto_done[e->n_pareto_done++];
    *p = (ParetoRef){.trial_id = t->id, .config = json_incref(t->config)};
    memcpy(p->loss, loss, sizeof p->loss);
}
