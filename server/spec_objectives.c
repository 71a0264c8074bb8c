/* The experiment spec's objectives and constraints (docs/api.md, "Several
 * objectives and constraints"), and what the rest of the daemon asks of
 * them (spec.h: spec_losses, spec_feasible, spec_constraint_*). */
#include "spec_internal.h"

#include <string.h>

#include "jsonv.h"
#include "nonfinite.h"

static int parse_mode(const char *mode, const char *field, SpecMode *out, RungError *err)
{
    if (strcmp(mode, "min") != 0 && strcmp(mode, "max") != 0)
        return rung_error_set(err, E, field, "%s: must be min or max, not '%s'", field, mode);
    *out = strcmp(mode, "min") == 0 ? SPEC_MODE_MIN : SPEC_MODE_MAX;
    return 0;
}

/* The objectives: "metric" and "mode" (one), or "metrics" (2 ..
 * SPEC_MAX_OBJECTIVES of {"name", "mode"}), never both (docs/api.md,
 * "Several objectives"). spec->metric and spec->mode are the first's. */
int spec_parse_objectives(json_t *j, Spec *spec, RungError *err)
{
    drop_null(j, "metrics");
    json_t *ms = json_object_get(j, "metrics");
    if (ms == NULL) {
        const char *mode;
        if (jsonv_string(j, "", "metric", JSONV_REQUIRED, SPEC_MAX_METRIC, &spec->metric, E, err) ||
            jsonv_string(j, "", "mode", JSONV_REQUIRED, 8, &mode, E, err) ||
            parse_mode(mode, "mode", &spec->mode, err))
            return err->code;
        spec->n_objectives = 1;
        spec->objectives[0] = (SpecObjective){spec->metric, spec->mode};
        return 0;
    }
    if (json_object_get(j, "metric") != NULL || json_object_get(j, "mode") != NULL)
        return rung_error_set(err, E, "metrics",
                              "metrics: give either metric and mode (one objective) or metrics "
                              "(several), not both");
    if (!json_is_array(ms) || json_array_size(ms) < 2 || json_array_size(ms) > SPEC_MAX_OBJECTIVES)
        return rung_error_set(err, E, "metrics",
                              "metrics: must be an array of 2 to %d objectives {\"name\", "
                              "\"mode\"}; one objective is metric and mode",
                              SPEC_MAX_OBJECTIVES);
    static const char *const keys[] = {"name", "mode", NULL};
    size_t i;
    json_t *m;
    json_array_foreach(ms, i, m) {
        char path[32], field[RUNG_FIELD_MAX];
        snprintf(path, sizeof path, "metrics[%d]", (int)i);
        const char *mode;
        SpecObjective *o = &spec->objectives[i];
        if (jsonv_object(m, path, E, err) || jsonv_only_keys(m, path, keys, E, err) ||
            jsonv_string(m, path, "name", JSONV_REQUIRED, SPEC_MAX_METRIC, &o->name, E, err) ||
            jsonv_string(m, path, "mode", JSONV_REQUIRED, 8, &mode, E, err))
            return err->code;
        snprintf(field, sizeof field, "metrics[%d].mode", (int)i);
        if (parse_mode(mode, field, &o->mode, err))
            return err->code;
        snprintf(field, sizeof field, "metrics[%d].name", (int)i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(spec->objectives[k].name, o->name) == 0)
                return rung_error_set(err, E, field, "%s: '%s' is metrics[%zu] too", field, o->name,
                                      k);
    }
    spec->n_objectives = (int)json_array_size(ms);
    spec->metric = spec->objectives[0].name;
    spec->mode = spec->objectives[0].mode;
    return 0;
}

/* constraints: 1 .. SPEC_MAX_CONSTRAINTS of {"metric", "min", "max"}, at
 * least one bound each (docs/api.md, "Constraints"). */
int spec_parse_constraints(json_t *j, Spec *spec, RungError *err)
{
    drop_null(j, "constraints");
    json_t *cs = json_object_get(j, "constraints");
    if (cs == NULL)
        return 0;
    if (!json_is_array(cs) || json_array_size(cs) < 1 || json_array_size(cs) > SPEC_MAX_CONSTRAINTS)
        return rung_error_set(err, E, "constraints",
                              "constraints: must be an array of 1 to %d constraints "
                              "{\"metric\", \"min\", \"max\"}",
                              SPEC_MAX_CONSTRAINTS);
    static const char *const keys[] = {"metric", "min", "max", NULL};
    size_t i;
    json_t *c;
    json_array_foreach(cs, i, c) {
        char path[32], field[RUNG_FIELD_MAX];
        snprintf(path, sizeof path, "constraints[%d]", (int)i);
        SpecConstraint *k = &spec->constraints[i];
        if (jsonv_object(c, path, E, err) || jsonv_only_keys(c, path, keys, E, err))
            return err->code;
        drop_null(c, "min");
        drop_null(c, "max");
        if (jsonv_string(c, path, "metric", JSONV_REQUIRED, SPEC_MAX_METRIC, &k->metric, E, err) ||
            jsonv_number(c, path, "min", JSONV_OPTIONAL, &k->min, E, err) ||
            jsonv_number(c, path, "max", JSONV_OPTIONAL, &k->max, E, err))
            return err->code;
        k->has_min = json_object_get(c, "min") != NULL;
        k->has_max = json_object_get(c, "max") != NULL;
        if (!k->has_min && !k->has_max)
            return rung_error_set(err, E, path, "%s: give min, max or both", path);
        snprintf(field, sizeof field, "constraints[%d].%s", (int)i, k->has_min ? "min" : "max");
        if ((k->has_min && !isfinite(k->min)) || (k->has_max && !isfinite(k->max)))
            return rung_error_set(err, E, field, "%s: must be a finite number", field);
        if (k->has_min && k->has_max && k->min > k->max) {
            snprintf(field, sizeof field, "constraints[%d].max", (int)i);
            return rung_error_set(err, E, field, "%s: %g is below min %g", field, k->max, k->min);
        }
        if (k->has_min)
            json_object_set_new(c, "min", number_json(k->min));
        if (k->has_max)
            json_object_set_new(c, "max", number_json(k->max));
    }
    spec->n_constraints = (int)json_array_size(cs);
    return 0;
}

/* What several objectives or constraints rule out: rules defined on one
 * metric's value (docs/api.md, "Several objectives"). Stored specs are
 * never refused here: none could have both. */
/* Whether bayes models rung records when the spec does not say
 * (searcher.multi_fidelity): under hyperband, where bench/multifidelity.sh
 * measured it ahead of last values and of Optuna's TPE with Hyperband on
 * LCBench; not under asha, where it measured no better than last values
 * (docs/searchers.md, "Multi-fidelity"). */
static bool bayes_mf_default(const Spec *spec)
{
    return spec->sched.type == ASHA_HYPERBAND;
}

int spec_check_objective_rules(const json_t *j, Spec *spec, RungError *err)
{
    const json_t *stop = json_object_get(j, "stop");
    /* pbt ranks one metric, and copies one folder per trial. */
    if (spec->is_pbt && (spec->n_objectives > 1 || spec->n_constraints > 0))
        return rung_error_set(err, E, "scheduler.type",
                              "scheduler.type: pbt ranks one metric; not with several objectives "
                              "or constraints");
    if (spec->is_pbt && spec->nodes > 1)
        return rung_error_set(err, E, "resources_per_trial.nodes",
                              "resources_per_trial.nodes: pbt copies one trial folder; a trial "
                              "on several workers cannot take another's checkpoint");
    if (spec->n_objectives > 1) {
        if (json_object_get(j, "best_scope") != NULL)
            return rung_error_set(err, E, "best_scope",
                                  "best_scope: applies to one metric; with several objectives "
                                  "a trial counts by its last report");
        /* asha and hyperband rank a rung as NSGA-II does (docs/schedulers.md,
         * "Several objectives"); the median and the promote order need one
         * value. */
        if (spec->sched.type == ASHA_MEDIAN)
            return rung_error_set(err, E, "scheduler.type",
                                  "scheduler.type: with several objectives fifo, asha or "
                                  "hyperband; median compares one metric");
        if (spec->sched.promote)
            return rung_error_set(err, E, "scheduler.promote",
                                  "scheduler.promote: not with several objectives (asha "
                                  "without promote ranks them)");
        if (spec->has_stop_threshold)
            return rung_error_set(err, E, "stop.metric_threshold",
                                  "stop.metric_threshold: applies to one metric, not to "
                                  "several objectives");
        if (json_object_get(stop, "patience") != NULL)
            return rung_error_set(err, E, "stop.patience",
                                  "stop.patience: counts trials without a better best, and "
                                  "several objectives have no single best");
    }
    /* bayes's rung-level model (docs/searchers.md, "Multi-fidelity") needs
     * rungs and one loss per record. */
    bool rungs = spec->sched.type == ASHA_ASHA || spec->sched.type == ASHA_HYPERBAND;
    bool one_loss = spec->n_objectives <= 1 && spec->n_constraints == 0;
    /* cmaes ranks one loss (docs/searchers.md, "CMA-ES"). */
    if (spec->searcher.type == SEARCHER_CMAES && !one_loss)
        return rung_error_set(err, E, "searcher.type",
                              "searcher.type: cmaes optimizes one objective; not with several "
                              "objectives or constraints");
    if (spec->searcher.multi_fidelity == 1 && !rungs)
        return rung_error_set(err, E, "searcher.multi_fidelity",
                              "searcher.multi_fidelity: needs a scheduler with rungs (asha or "
                              "hyperband)");
    if (spec->searcher.multi_fidelity == 1 && !one_loss)
        return rung_error_set(err, E, "searcher.multi_fidelity",
                              "searcher.multi_fidelity: models one metric; not with several "
                              "objectives or constraints");
    /* tpe ranks its trials: with rungs it ranks them by the rung they
     * reached first (sampler/tpe_mf.c), as Optuna's TPE does under a pruner;
     * last values alone mix fidelities (docs/searchers.md, "Multi-fidelity").
     * auto's tpe phase too (auto_spec; not shown: auto takes no such key). */
    if (spec->searcher.multi_fidelity < 0)
        spec->searcher.multi_fidelity =
            rungs && one_loss &&
            (spec->searcher.type == SEARCHER_TPE || spec->searcher.type == SEARCHER_AUTO ||
             (spec->searcher.type == SEARCHER_BAYES && bayes_mf_default(spec)));
    /* Shown, and stored: a later rungd with another default goes on as
     * the experiment started. */
    if (spec->searcher.type == SEARCHER_BAYES || spec->searcher.type == SEARCHER_TPE)
        json_object_set_new(json_object_get(spec->json, "searcher"), "multi_fidelity",
                            json_boolean(spec->searcher.multi_fidelity == 1));
    /* tpe models one loss; several objectives (MOTPE) are later work. */
    if (spec->searcher.type == SEARCHER_TPE && !one_loss)
        return rung_error_set(err, E, "searcher.type",
                              "searcher.type: tpe models one metric; not with several objectives "
                              "or constraints (use bayes)");
    if (spec->n_constraints > 0 && spec->has_stop_threshold)
        return rung_error_set(err, E, "stop.metric_threshold",
                              "stop.metric_threshold: not with constraints (a value may come "
                              "from an infeasible trial)");
    return 0;
}

bool spec_losses(const Spec *spec, const json_t *metrics, double loss[SPEC_MAX_OBJECTIVES])
{
    for (int k = 0; k < spec->n_objectives; k++) {
        double v;
        if (!rung_nonfinite_from_json(json_object_get(metrics, spec->objectives[k].name), &v))
            return false;
        loss[k] = spec->objectives[k].mode == SPEC_MODE_MIN ? v : -v;
    }
    return true;
}

bool spec_feasible(const Spec *spec, const json_t *metrics)
{
    for (int k = 0; k < spec->n_constraints; k++) {
        const SpecConstraint *c = &spec->constraints[k];
        json_t *v = json_object_get(metrics, c->metric);
        if (!json_is_number(v))
            return false;
        double x = json_number_value(v);
        if (!isfinite(x) || (c->has_min && x < c->min) || (c->has_max && x > c->max))
            return false;
    }
    return true;
}

int spec_constraint_values(const Spec *spec, const json_t *metrics, double *g)
{
    int n = 0;
    for (int k = 0; k < spec->n_constraints; k++) {
        const SpecConstraint *c = &spec->constraints[k];
        json_t *v = json_object_get(metrics, c->metric);
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!isfinite(x))
            x = NAN;
        if (c->has_min)
            g[n++] = c->min - x;
        if (c->has_max)
            g[n++] = x - c->max;
    }
    return n;
}

int spec_constraint_count(const Spec *spec)
{
    int n = 0;
    for (int k = 0; k < spec->n_constraints; k++)
        n += spec->constraints[k].has_min + spec->constraints[k].has_max;
    return n;
}
