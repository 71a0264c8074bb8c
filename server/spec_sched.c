/* The experiment spec's "scheduler" (docs/api.md, "scheduler";
 * docs/schedulers.md): each scheduler's fields, bounds and defaults. */
#include "spec_internal.h"

#include <string.h>

#include "jsonv.h"

/* An error of space_parse on hyperparam_mutations (or pb2's
 * hyperparam_bounds) names "search_space...": it is about `to`
 * ("scheduler.hyperparam_mutations...") instead. */
static int reprefix(RungError *err, const char *to)
{
    static const char from[] = "search_space";
    char buf[sizeof err->message + RUNG_FIELD_MAX];
    if (strncmp(err->field, from, strlen(from)) == 0) {
        snprintf(buf, sizeof buf, "%s%s", to, err->field + strlen(from));
        memcpy(err->field, buf, sizeof err->field - 1); /* cut, as rung_error_set would */
        err->field[sizeof err->field - 1] = '\0';
    }
    if (strncmp(err->message, from, strlen(from)) == 0) {
        snprintf(buf, sizeof buf, "%s%s", to, err->message + strlen(from));
        memcpy(err->message, buf, sizeof err->message - 1);
        err->message[sizeof err->message - 1] = '\0';
    }
    return err->code;
}

/* scheduler "pbt" (docs/schedulers.md, "pbt"): Ray Tune's
 * PopulationBasedTraining fields and defaults, with time_attr "step" only
 * (a checkpoint is named by the step it was saved at) and
 * perturbation_interval required (Ray's default, 60, counts seconds). The
 * search space runs as fifo: PBT changes configs, it stops no trial. */
static int parse_pbt(json_t *s, Spec *spec, bool pb2, RungError *err)
{
    static const char *const pb2_keys[] = {"type",
                                           "time_attr",
                                           "perturbation_interval",
                                           "quantile_fraction",
                                           "hyperparam_bounds",
                                           "burn_in_period",
                                           "max_t",
                                           "synch",
                                           NULL};
    static const char *const keys[] = {"type",
                                       "time_attr",
                                       "perturbation_interval",
                                       "quantile_fraction",
                                       "resample_probability",
                                       "hyperparam_mutations",
                                       "burn_in_period",
                                       "max_t",
                                       "synch",
                                       NULL};
    PbtParams *p = &spec->pbt;
    *p = (PbtParams){.quantile = 0.25,
                     .maximize = spec->mode == SPEC_MODE_MAX,
                     .seed = spec->searcher.seed};
    spec->pbt_resample = 0.25;
    /* pbt explores within hyperparam_mutations, pb2 within Ray's
     * hyperparam_bounds; the rest is the same. */
    const char *mkey = pb2 ? "hyperparam_bounds" : "hyperparam_mutations";
    char mfield[64];
    snprintf(mfield, sizeof mfield, "scheduler.%s", mkey);
    if (jsonv_only_keys(s, "scheduler", pb2 ? pb2_keys : keys, E, err) ||
        jsonv_string(s, "scheduler", "time_attr", JSONV_OPTIONAL, SPEC_MAX_METRIC, &spec->time_attr,
                     E, err) ||
        jsonv_int(s, "scheduler", "perturbation_interval", JSONV_REQUIRED, 1, INT32_MAX,
                  &p->interval, E, err) ||
        jsonv_number(s, "scheduler", "quantile_fraction", JSONV_OPTIONAL, &p->quantile, E, err) ||
        jsonv_number(s, "scheduler", "resample_probability", JSONV_OPTIONAL, &spec->pbt_resample, E,
                     err) ||
        jsonv_int(s, "scheduler", "burn_in_period", JSONV_OPTIONAL, 0, INT32_MAX, &p->burn_in, E,
                  err) ||
        jsonv_int(s, "scheduler", "max_t", JSONV_OPTIONAL, 0, INT32_MAX, &p->max_t, E, err) ||
        jsonv_bool(s, "scheduler", "synch", JSONV_OPTIONAL, &p->synch, E, err))
        return err->code;
    if (strcmp(spec->time_attr, "step") != 0)
        return rung_error_set(err, E, "scheduler.time_attr",
                              "scheduler.time_attr: %s counts steps ('step'), not '%s': a "
                              "checkpoint is named by its step",
                              pb2 ? "pb2" : "pbt", spec->time_attr);
    if (!(p->quantile > 0 && p->quantile <= 0.5))
        return rung_error_set(err, E, "scheduler.quantile_fraction",
                              "scheduler.quantile_fraction: must be in (0, 0.5], not %g",
                              p->quantile);
    if (!(spec->pbt_resample >= 0 && spec->pbt_resample <= 1))
        return rung_error_set(err, E, "scheduler.resample_probability",
                              "scheduler.resample_probability: must be in [0, 1], not %g",
                              spec->pbt_resample);
    json_t *m = json_object_get(s, mkey);
    if (m == NULL)
        return rung_error_set(err, E, mfield,
                              "%s: required for %s: the parameters to explore and their domains",
                              mfield, pb2 ? "pb2" : "pbt");
    if (!json_is_object(m) || json_object_size(m) == 0)
        return rung_error_set(err, E, mfield,
                              "%s: must be an object naming at least one parameter of "
                              "search_space",
                              mfield);
    /* A list is a choice among its values, as in Ray's PBT; for pb2, as in
     * Ray's PB2, the bounds [low, high] of a uniform domain. */
    json_t *domains = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v) {
        json_t *d = json_incref(v);
        if (json_is_array(v) && !pb2) {
            json_decref(d);
            d = json_pack("{s:s, s:O}", "type", "choice", "values", v);
        } else if (json_is_array(v) && json_array_size(v) == 2 &&
                   json_is_number(json_array_get(v, 0)) && json_is_number(json_array_get(v, 1))) {
            json_decref(d);
            d = json_pack("{s:s, s:O, s:O}", "type", "uniform", "low", json_array_get(v, 0), "high",
                          json_array_get(v, 1));
        }
        json_object_set_new(domains, key, d);
    }
    int rc = space_parse(domains, &spec->mutations, err);
    json_decref(spec->mutations_json);
    spec->mutations_json = domains;
    if (rc != 0)
        return reprefix(err, mfield);
    json_object_foreach(m, key, v) {
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, mfield, key);
        if (!json_is_object(v) && !json_is_array(v))
            return rung_error_set(err, E, field, "%s: must be a domain object or %s", field,
                                  pb2 ? "[low, high]" : "a list of values");
        if (!space_has_param(spec->space, key))
            return rung_error_set(err, E, field, "%s: '%s' is not a parameter of search_space",
                                  field, key);
    }
    if (space_conditional(spec->mutations))
        return rung_error_set(err, E, mfield,
                              "%s: a choice of sub-spaces cannot mutate; name the branch's "
                              "parameters themselves",
                              mfield);
    spec->is_pbt = true;
    spec->is_pb2 = pb2;
    json_object_set_new(s, "type", json_string(pb2 ? "pb2" : "pbt"));
    json_object_set_new(s, "time_attr", json_string(spec->time_attr));
    json_object_set_new(s, "perturbation_interval", json_integer(p->interval));
    json_object_set_new(s, "quantile_fraction", number_json(p->quantile));
    if (!pb2)
        json_object_set_new(s, "resample_probability", number_json(spec->pbt_resample));
    json_object_set_new(s, "burn_in_period", json_integer(p->burn_in));
    json_object_set_new(s, "max_t", json_integer(p->max_t));
    json_object_set_new(s, "synch", json_boolean(p->synch));
    spec->time_attr = json_string_value(json_object_get(s, "time_attr"));
    return 0;
}

/* The scheduler's fields and defaults (docs/api.md, "scheduler"): Ray Tune's
 * ASHAScheduler defaults for asha and hyperband; MedianStoppingRule's
 * min_samples_required for median, with grace_period counted in time_attr
 * units like ASHA's (Ray's default of 60 assumes seconds). */
int spec_parse_scheduler(json_t *spec_json, Spec *spec, RungError *err)
{
    json_t *s = json_object_get(spec_json, "scheduler");
    AshaParams *p = &spec->sched;
    *p = (AshaParams){.type = ASHA_FIFO,
                      .maximize = spec->mode == SPEC_MODE_MAX,
                      .max_t = 100,
                      .grace_period = 1,
                      .rf = 4,
                      .brackets = 1,
                      .min_samples = 3,
                      .seed = spec->searcher.seed};
    spec->time_attr = "step";
    if (s == NULL || json_is_null(s)) {
        /* Every default shown, as for a scheduler given: the same JSON as
         * this spec gets when it is parsed again from the store. */
        json_object_set_new(spec_json, "scheduler",
                            json_pack("{s:s, s:s}", "type", "fifo", "time_attr", spec->time_attr));
        return 0;
    }
    if (jsonv_object(s, "scheduler", E, err))
        return err->code;
    /* The type first: the fields allowed depend on it. */
    const char *type = "fifo";
    if (jsonv_string(s, "scheduler", "type", JSONV_OPTIONAL, 32, &type, E, err))
        return err->code;
    static const char *const fifo_keys[] = {"type", "time_attr", NULL};
    static const char *const asha_keys[] = {
        "type",     "time_attr", "max_t",        "grace_period", "reduction_factor",
        "brackets", "promote",   "end_at_max_t", "allocation",   NULL};
    /* hyperband uses every bracket, and the stored spec says how many: a
     * spec is parsed again from the store at every start, so "brackets" is
     * allowed here, when it is that number (checked below). */
    static const char *const hyperband_keys[] = {
        "type",     "time_attr",  "max_t", "grace_period", "reduction_factor",
        "brackets", "allocation", NULL};
    static const char *const median_keys[] = {"type", "time_attr", "grace_period",
                                              "min_samples_required", NULL};
    if (strcmp(type, "pbt") == 0 || strcmp(type, "pb2") == 0)
        return parse_pbt(s, spec, strcmp(type, "pb2") == 0, err);
    const char *const *allowed;
    if (strcmp(type, "fifo") == 0) {
        allowed = fifo_keys;
    } else if (strcmp(type, "asha") == 0) {
        p->type = ASHA_ASHA;
        allowed = asha_keys;
    } else if (strcmp(type, "hyperband") == 0) {
        p->type = ASHA_HYPERBAND;
        allowed = hyperband_keys;
    } else if (strcmp(type, "median") == 0) {
        p->type = ASHA_MEDIAN;
        allowed = median_keys;
    } else {
        return rung_error_set(err, E, "scheduler.type",
                              "scheduler.type: '%s' is not one of fifo, asha, hyperband, median, "
                              "pbt, pb2",
                              type);
    }
    int64_t brackets = 1;
    bool end_at_max_t = true;
    const char *allocation = "softmax";
    if (jsonv_only_keys(s, "scheduler", allowed, E, err) ||
        jsonv_string(s, "scheduler", "time_attr", JSONV_OPTIONAL, SPEC_MAX_METRIC, &spec->time_attr,
                     E, err) ||
        jsonv_number(s, "scheduler", "max_t", JSONV_OPTIONAL, &p->max_t, E, err) ||
        jsonv_number(s, "scheduler", "grace_period", JSONV_OPTIONAL, &p->grace_period, E, err) ||
        jsonv_number(s, "scheduler", "reduction_factor", JSONV_OPTIONAL, &p->rf, E, err) ||
        jsonv_int(s, "scheduler", "brackets", JSONV_OPTIONAL, 1, ASHA_MAX_BRACKETS, &brackets, E,
                  err) ||
        jsonv_bool(s, "scheduler", "promote", JSONV_OPTIONAL, &p->promote, E, err) ||
        jsonv_bool(s, "scheduler", "end_at_max_t", JSONV_OPTIONAL, &end_at_max_t, E, err) ||
        jsonv_int(s, "scheduler", "min_samples_required", JSONV_OPTIONAL, 1, INT32_MAX,
                  &p->min_samples, E, err) ||
        jsonv_string(s, "scheduler", "allocation", JSONV_OPTIONAL, 16, &allocation, E, err))
        return err->code;
    /* How a trial's bracket is drawn (docs/schedulers.md, "Brackets"):
     * Ray's softmax over rung counts, or Hyperband's budget (Li et al.'s
     * bracket sizes, as Optuna's HyperbandPruner). */
    if (strcmp(allocation, "budget") == 0)
        p->budget_brackets = true;
    else if (strcmp(allocation, "softmax") != 0)
        return rung_error_set(err, E, "scheduler.allocation",
                              "scheduler.allocation: '%s' is not one of softmax, budget",
                              allocation);
    p->brackets = (int)brackets;
    p->open_end = !end_at_max_t;
    if (p->type == ASHA_MEDIAN) {
        if (!(p->grace_period >= 0))
            return rung_error_set(err, E, "scheduler.grace_period",
                                  "scheduler.grace_period: must be >= 0, not %g", p->grace_period);
        json_object_set_new(s, "grace_period", number_json(p->grace_period));
        json_object_set_new(s, "min_samples_required", json_integer(p->min_samples));
    } else if (p->type != ASHA_FIFO) {
        if (!(p->grace_period > 0))
            return rung_error_set(err, E, "scheduler.grace_period",
                                  "scheduler.grace_period: must be > 0, not %g", p->grace_period);
        if (!(p->rf > 1))
            return rung_error_set(err, E, "scheduler.reduction_factor",
                                  "scheduler.reduction_factor: must be > 1, not %g", p->rf);
        if (!(p->max_t >= p->grace_period))
            return rung_error_set(err, E, "scheduler.max_t",
                                  "scheduler.max_t: must be >= grace_period (%g), not %g",
                                  p->grace_period, p->max_t);
        int max = asha_max_brackets(p);
        double rungs = log(p->max_t / p->grace_period) / log(p->rf) + 1;
        if (rungs >= ASHA_MAX_RUNGS + 1)
            return rung_error_set(err, E, "scheduler.reduction_factor",
                                  "scheduler.reduction_factor: %g gives %.0f rungs from "
                                  "grace_period %g to max_t %g; at most %d",
                                  p->rf, floor(rungs), p->grace_period, p->max_t, ASHA_MAX_RUNGS);
        if (p->type == ASHA_HYPERBAND) {
            if (json_object_get(s, "brackets") != NULL && p->brackets != max)
                return rung_error_set(err, E, "scheduler.brackets",
                                      "scheduler.brackets: hyperband uses every bracket, %d "
                                      "with these max_t, grace_period and reduction_factor; "
                                      "leave it out",
                                      max);
            p->brackets = max;
        } else if (p->brackets > max)
            return rung_error_set(err, E, "scheduler.brackets",
                                  "scheduler.brackets: %d, but grace_period %g, reduction_factor "
                                  "%g and max_t %g leave room for at most %d",
                                  p->brackets, p->grace_period, p->rf, p->max_t, max);
        json_object_set_new(s, "max_t", number_json(p->max_t));
        json_object_set_new(s, "grace_period", number_json(p->grace_period));
        json_object_set_new(s, "reduction_factor", number_json(p->rf));
        json_object_set_new(s, "brackets", json_integer(p->brackets));
        json_object_set_new(s, "allocation",
                            json_string(p->budget_brackets ? "budget" : "softmax"));
        if (p->type == ASHA_ASHA) {
            json_object_set_new(s, "promote", json_boolean(p->promote));
            json_object_set_new(s, "end_at_max_t", json_boolean(end_at_max_t));
        }
    }
    json_object_set_new(s, "type", json_string(type));
    json_object_set_new(s, "time_attr", json_string(spec->time_attr));
    spec->time_attr = json_string_value(json_object_get(s, "time_attr")); /* the new copy */
    return 0;
}
