/* Validation of an experiment's spec (docs/api.md, "The experiment spec").
 *
 * The submitted JSON is deep-copied, checked field by field with the path of
 * the first offending field in the error, and completed with the defaults
 * that apply, so that GET shows exactly what runs. Unknown fields anywhere
 * are errors: a typo never passes silently. */
#include "spec.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#include "jsonv.h"
#include "nonfinite.h"

#define E RUNG_E_INVALID_SPEC

static const char *const top_keys[] = {"name",
                                       "metric",
                                       "mode",
                                       "metrics",
                                       "constraints",
                                       "search_space",
                                       "searcher",
                                       "scheduler",
                                       "num_samples",
                                       "max_concurrent_trials",
                                       "max_failures",
                                       "max_failed_trials",
                                       "best_scope",
                                       "priority",
                                       "share",
                                       "worker_selector",
                                       "points_to_evaluate",
                                       "warm_start",
                                       "stop",
                                       "resources_per_trial",
                                       "trainable",
                                       NULL};

/* A number as JSON: integral values print as integers (27, not 27.0). */
static json_t *number_json(double v)
{
    if (v == floor(v) && fabs(v) < 9e15)
        return json_integer((json_int_t)v);
    return json_real(v);
}

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
    json_decref(domains);
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
static int parse_scheduler(json_t *spec_json, Spec *spec, RungError *err)
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
        "type",     "time_attr", "max_t", "grace_period", "reduction_factor",
        "brackets", "promote",   NULL};
    /* hyperband uses every bracket, and the stored spec says how many: a
     * spec is parsed again from the store at every start, so "brackets" is
     * allowed here, when it is that number (checked below). */
    static const char *const hyperband_keys[] = {
        "type", "time_attr", "max_t", "grace_period", "reduction_factor", "brackets", NULL};
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
    if (jsonv_only_keys(s, "scheduler", allowed, E, err) ||
        jsonv_string(s, "scheduler", "time_attr", JSONV_OPTIONAL, SPEC_MAX_METRIC, &spec->time_attr,
                     E, err) ||
        jsonv_number(s, "scheduler", "max_t", JSONV_OPTIONAL, &p->max_t, E, err) ||
        jsonv_number(s, "scheduler", "grace_period", JSONV_OPTIONAL, &p->grace_period, E, err) ||
        jsonv_number(s, "scheduler", "reduction_factor", JSONV_OPTIONAL, &p->rf, E, err) ||
        jsonv_int(s, "scheduler", "brackets", JSONV_OPTIONAL, 1, ASHA_MAX_BRACKETS, &brackets, E,
                  err) ||
        jsonv_bool(s, "scheduler", "promote", JSONV_OPTIONAL, &p->promote, E, err) ||
        jsonv_int(s, "scheduler", "min_samples_required", JSONV_OPTIONAL, 1, INT32_MAX,
                  &p->min_samples, E, err))
        return err->code;
    p->brackets = (int)brackets;
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
        if (p->type == ASHA_ASHA)
            json_object_set_new(s, "promote", json_boolean(p->promote));
    }
    json_object_set_new(s, "type", json_string(type));
    json_object_set_new(s, "time_attr", json_string(spec->time_attr));
    spec->time_attr = json_string_value(json_object_get(s, "time_attr")); /* the new copy */
    return 0;
}

/* resources_per_trial: cpu and gpu per node, and for a gang (nodes > 1)
 * how many workers run each trial together and how long their holds wait
 * for one another (docs/api.md, "Gangs"). */
static int parse_resources(json_t *spec_json, Spec *spec, RungError *err)
{
    json_t *r = json_object_get(spec_json, "resources_per_trial");
    spec->cpus = 1;
    spec->gpus = 0;
    spec->nodes = 1;
    spec->gang_wait_s = SPEC_GANG_WAIT_DEFAULT_S;
    if (r != NULL && !json_is_null(r)) {
        if (jsonv_object(r, "resources_per_trial", E, err))
            return err->code;
        const char *allowed[] = {"cpu", "gpu", "nodes", "gang_wait_s", NULL};
        if (jsonv_only_keys(r, "resources_per_trial", allowed, E, err) ||
            jsonv_int(r, "resources_per_trial", "cpu", JSONV_OPTIONAL, 0, SPEC_MAX_CPUS,
                      &spec->cpus, E, err) ||
            jsonv_int(r, "resources_per_trial", "gpu", JSONV_OPTIONAL, 0, SPEC_MAX_GPUS,
                      &spec->gpus, E, err) ||
            jsonv_int(r, "resources_per_trial", "nodes", JSONV_OPTIONAL, 1, SPEC_MAX_NODES,
                      &spec->nodes, E, err) ||
            jsonv_number(r, "resources_per_trial", "gang_wait_s", JSONV_OPTIONAL,
                         &spec->gang_wait_s, E, err))
            return err->code;
        if (spec->gang_wait_s < 1 || spec->gang_wait_s > SPEC_MAX_GANG_WAIT_S)
            return rung_error_set(err, E, "resources_per_trial.gang_wait_s",
                                  "resources_per_trial.gang_wait_s: must be between 1 and %d "
                                  "seconds, not %g",
                                  SPEC_MAX_GANG_WAIT_S, spec->gang_wait_s);
    }
    json_t *o = json_pack("{s:I, s:I, s:I}", "cpu", (json_int_t)spec->cpus, "gpu",
                          (json_int_t)spec->gpus, "nodes", (json_int_t)spec->nodes);
    json_object_set_new(o, "gang_wait_s", number_json(spec->gang_wait_s));
    json_object_set_new(spec_json, "resources_per_trial", o);
    return 0;
}

/* The placeholders rung-worker fills with the trial's place in its gang
 * (docs/api.md, "trainable"; worker/gang.h), in every trial's argv. */
static bool gang_placeholder(const char *name)
{
    static const char *const names[] = {"node_rank", "nnodes", "master_addr", "master_port"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* Checks that every "{name}" in an argv entry names a parameter or a gang
 * placeholder, so a typo in a placeholder fails at submit instead of
 * reaching the program verbatim; and that no parameter used there has a
 * gang placeholder's name, which would leave {name} ambiguous (a stored
 * spec keeps loading: rung-worker refuses such a trial instead). */
static int check_placeholders(const char *arg, const char *field, const Space *space, bool stored,
                              RungError *err)
{
    for (const char *p = strchr(arg, '{'); p != NULL; p = strchr(p + 1, '{')) {
        const char *end = strchr(p + 1, '}');
        if (end == NULL)
            break;
        size_t len = (size_t)(end - p - 1);
        if (len == 0 || len > SPACE_MAX_PATH || !(isalpha((unsigned char)p[1]) || p[1] == '_'))
            continue;
        bool ident = true;
        for (const char *c = p + 1; c < end; c++)
            if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != '-')
                ident = false;
        if (!ident)
            continue;
        char name[SPACE_MAX_PATH + 1];
        memcpy(name, p + 1, len);
        name[len] = '\0';
        if (gang_placeholder(name)) {
            if (space_has_param(space, name) && !stored)
                return rung_error_set(err, E, field,
                                      "%s: {%s} is the trial's place in its gang, filled in by "
                                      "the worker, and search_space has a parameter '%s' too: "
                                      "rename the parameter",
                                      field, name, name);
            continue;
        }
        if (!space_has_param(space, name))
            return rung_error_set(err, E, field, "%s: {%s} names no parameter of search_space",
                                  field, name);
    }
    return 0;
}

static int parse_command(json_t *t, const Space *space, bool stored, RungError *err)
{
    const char *allowed[] = {"type", "argv", "env", "cwd", "timeout_s", NULL};
    if (jsonv_only_keys(t, "trainable", allowed, E, err))
        return err->code;
    json_t *argv = json_object_get(t, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0)
        return rung_error_set(err, E, "trainable.argv",
                              "trainable.argv: required, a non-empty array of strings");
    if (json_array_size(argv) > SPEC_MAX_ARGV)
        return rung_error_set(err, E, "trainable.argv", "trainable.argv: more than %d entries",
                              SPEC_MAX_ARGV);
    size_t i;
    json_t *a;
    json_array_foreach(argv, i, a) {
        char field[RUNG_FIELD_MAX];
        snprintf(field, sizeof field, "trainable.argv[%zu]", i);
        if (!json_is_string(a) || json_string_length(a) > SPEC_MAX_ARG)
            return rung_error_set(err, E, field, "%s: must be a string of at most %d bytes", field,
                                  SPEC_MAX_ARG);
        if (check_placeholders(json_string_value(a), field, space, stored, err))
            return err->code;
    }
    json_t *env = json_object_get(t, "env");
    if (env != NULL && !json_is_null(env)) {
        if (jsonv_object(env, "trainable.env", E, err))
            return err->code;
        if (json_object_size(env) > SPEC_MAX_ENV)
            return rung_error_set(err, E, "trainable.env", "trainable.env: more than %d entries",
                                  SPEC_MAX_ENV);
        const char *key;
        json_t *v;
        json_object_foreach(env, key, v) {
            char field[RUNG_FIELD_MAX];
            jsonv_path(field, sizeof field, "trainable.env", key);
            if (key[0] == '\0' || strchr(key, '=') != NULL)
                return rung_error_set(err, E, field, "%s: not a valid variable name", field);
            if (!stored && strlen(key) > SPEC_MAX_ENV_NAME)
                return rung_error_set(err, E, field, "%s: a name longer than %d bytes", field,
                                      SPEC_MAX_ENV_NAME);
            if (!json_is_string(v) || json_string_length(v) > SPEC_MAX_ARG)
                return rung_error_set(err, E, field, "%s: must be a string of at most %d bytes",
                                      field, SPEC_MAX_ARG);
        }
    }
    const char *cwd;
    double timeout = 0;
    if (jsonv_string(t, "trainable", "cwd", JSONV_OPTIONAL, SPEC_MAX_ARG, &cwd, E, err) ||
        jsonv_number(t, "trainable", "timeout_s", JSONV_OPTIONAL, &timeout, E, err))
        return err->code;
    if (json_object_get(t, "timeout_s") && timeout <= 0)
        return rung_error_set(err, E, "trainable.timeout_s", "trainable.timeout_s: must be > 0");
    return 0;
}

/* docs/api.md, "trainable". At submission a trainable is required: an
 * experiment without one used to wait for workers that never came when the
 * user meant rung-worker to run it. Earlier rungds stored specs without one
 * (workers of one's own): those load as {"type": "external"}, written in. */
static int parse_trainable(json_t *spec_json, bool stored, Spec *spec, RungError *err)
{
    json_t *t = json_object_get(spec_json, "trainable");
    spec->trainable = SPEC_TRAINABLE_EXTERNAL;
    if (t == NULL || json_is_null(t)) {
        if (!stored)
            return rung_error_set(err, E, "trainable",
                                  "trainable: required: give a command, a builtin, or "
                                  "{\"type\": \"external\"} for workers of your own");
        json_object_set_new(spec_json, "trainable", json_pack("{s:s}", "type", "external"));
        return 0;
    }
    if (jsonv_object(t, "trainable", E, err))
        return err->code;
    const char *type;
    if (jsonv_string(t, "trainable", "type", JSONV_REQUIRED, 32, &type, E, err))
        return err->code;
    if (strcmp(type, "command") == 0) {
        spec->trainable = SPEC_TRAINABLE_COMMAND;
        return parse_command(t, spec->space, stored, err);
    }
    if (strcmp(type, "builtin") == 0) {
        const char *allowed[] = {"type", "model", "dataset", NULL};
        const char *s;
        spec->trainable = SPEC_TRAINABLE_BUILTIN;
        if (jsonv_only_keys(t, "trainable", allowed, E, err) ||
            jsonv_string(t, "trainable", "model", JSONV_OPTIONAL, 64, &s, E, err) ||
            jsonv_string(t, "trainable", "dataset", JSONV_OPTIONAL, 256, &s, E, err))
            return err->code;
        return 0;
    }
    if (strcmp(type, "external") == 0) {
        const char *allowed[] = {"type", NULL};
        return jsonv_only_keys(t, "trainable", allowed, E, err);
    }
    return rung_error_set(err, E, "trainable.type",
                          "trainable.type: must be command, builtin or external, not '%s'", type);
}

static int parse_counts(json_t *j, Spec *spec, RungError *err)
{
    spec->num_samples = 1;
    spec->max_concurrent = 0;
    spec->max_failures = 0;
    spec->max_failed_trials = 5;
    spec->priority = 0;
    spec->share = 1;
    if (jsonv_int(j, "", "num_samples", JSONV_OPTIONAL, 1, SAMPLER_MAX_TRIALS, &spec->num_samples,
                  E, err) ||
        jsonv_int(j, "", "max_concurrent_trials", JSONV_OPTIONAL, 0, SPEC_MAX_CONCURRENT,
                  &spec->max_concurrent, E, err) ||
        jsonv_int(j, "", "max_failures", JSONV_OPTIONAL, 0, SPEC_MAX_FAILURES, &spec->max_failures,
                  E, err) ||
        jsonv_int(j, "", "max_failed_trials", JSONV_OPTIONAL, 0, SPEC_MAX_FAILED_TRIALS,
                  &spec->max_failed_trials, E, err) ||
        jsonv_int(j, "", "priority", JSONV_OPTIONAL, -SPEC_MAX_PRIORITY, SPEC_MAX_PRIORITY,
                  &spec->priority, E, err) ||
        jsonv_number(j, "", "share", JSONV_OPTIONAL, &spec->share, E, err))
        return err->code;
    if (!(spec->share > 0 && spec->share <= SPEC_MAX_SHARE))
        return rung_error_set(err, E, "share", "share: must be > 0 and at most %g, not %g",
                              SPEC_MAX_SHARE, spec->share);
    json_object_set_new(j, "num_samples", json_integer(spec->num_samples));
    json_object_set_new(j, "max_concurrent_trials", json_integer(spec->max_concurrent));
    json_object_set_new(j, "max_failures", json_integer(spec->max_failures));
    json_object_set_new(j, "max_failed_trials", json_integer(spec->max_failed_trials));
    json_object_set_new(j, "priority", json_integer(spec->priority));
    json_object_set_new(j, "share", number_json(spec->share));
    return 0;
}

static int parse_best_scope(json_t *j, Spec *spec, RungError *err)
{
    if (spec->n_objectives > 1)
        return 0; /* refused by check_objective_rules when given */
    const char *scope = "all";
    if (jsonv_string(j, "", "best_scope", JSONV_OPTIONAL, 8, &scope, E, err))
        return err->code;
    if (strcmp(scope, "all") != 0 && strcmp(scope, "last") != 0)
        return rung_error_set(err, E, "best_scope", "best_scope: must be all or last, not '%s'",
                              scope);
    spec->best_last = strcmp(scope, "last") == 0;
    json_object_set_new(j, "best_scope", json_string(spec->best_last ? "last" : "all"));
    return 0;
}

/* Deletes key from obj (when obj is an object) when its value is null. */
static void drop_null(json_t *obj, const char *key)
{
    if (json_is_null(json_object_get(obj, key)))
        json_object_del(obj, key);
}

/* worker_selector: labels a worker must carry (docs/api.md, "Sharing
 * workers"). Null is absent; an empty object selects every worker. */
static int parse_selector(json_t *j, Spec *spec, RungError *err)
{
    drop_null(j, "worker_selector");
    json_t *sel = json_object_get(j, "worker_selector");
    if (sel == NULL)
        return 0;
    if (jsonv_object(sel, "worker_selector", E, err))
        return err->code;
    if (json_object_size(sel) > SPEC_MAX_SELECTOR)
        return rung_error_set(err, E, "worker_selector", "worker_selector: more than %d labels",
                              SPEC_MAX_SELECTOR);
    const char *key;
    json_t *v;
    json_object_foreach(sel, key, v) {
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, "worker_selector", key);
        if (!spec_label_key_ok(key))
            return rung_error_set(err, E, field,
                                  "%s: a label's name is 1 ... %d bytes of A-Z a-z 0-9 _ . - /",
                                  field, SPEC_MAX_LABEL_KEY);
        if (!json_is_string(v) || json_string_length(v) > SPEC_MAX_LABEL_VALUE)
            return rung_error_set(err, E, field, "%s: must be a string of at most %d bytes", field,
                                  SPEC_MAX_LABEL_VALUE);
    }
    spec->worker_selector = json_object_size(sel) > 0 ? sel : NULL;
    return 0;
}

/* points_to_evaluate: configs, possibly partial, that the first trials
 * take; each value one its parameter's domain can take. Their number is
 * checked against total_trials by the caller. */
static int parse_points(json_t *j, Spec *spec, RungError *err)
{
    drop_null(j, "points_to_evaluate");
    json_t *pts = json_object_get(j, "points_to_evaluate");
    if (pts == NULL)
        return 0;
    if (!json_is_array(pts))
        return rung_error_set(err, E, "points_to_evaluate",
                              "points_to_evaluate: must be an array of objects");
    if (json_array_size(pts) > SPEC_MAX_POINTS)
        return rung_error_set(err, E, "points_to_evaluate",
                              "points_to_evaluate: more than %d points", SPEC_MAX_POINTS);
    size_t i;
    json_t *pt;
    json_array_foreach(pts, i, pt) {
        char path[RUNG_FIELD_MAX];
        snprintf(path, sizeof path, "points_to_evaluate[%zu]", i);
        if (!json_is_object(pt))
            return rung_error_set(err, E, path, "%s: must be an object of parameter values", path);
        if (space_check_point(spec->space, pt, path, err))
            return err->code;
    }
    spec->points = json_array_size(pts) > 0 ? pts : NULL;
    return 0;
}

static int parse_warm_start(json_t *j, Spec *spec, RungError *err)
{
    drop_null(j, "warm_start");
    json_t *w = json_object_get(j, "warm_start");
    if (w == NULL)
        return 0;
    static const char *const keys[] = {"experiment", NULL};
    if (jsonv_object(w, "warm_start", E, err) || jsonv_only_keys(w, "warm_start", keys, E, err) ||
        jsonv_int(w, "warm_start", "experiment", JSONV_REQUIRED, 1, INT64_MAX,
                  &spec->warm_start_exp, E, err))
        return err->code;
    json_object_set_new(w, "experiment", json_integer(spec->warm_start_exp));
    return 0;
}

static int parse_stop(json_t *j, Spec *spec, RungError *err)
{
    drop_null(j, "stop");
    json_t *s = json_object_get(j, "stop");
    if (s == NULL)
        return 0;
    static const char *const keys[] = {"time_budget_s", "metric_threshold", "patience", NULL};
    if (jsonv_object(s, "stop", E, err) || jsonv_only_keys(s, "stop", keys, E, err))
        return err->code;
    for (int k = 0; keys[k] != NULL; k++)
        drop_null(s, keys[k]);
    if (jsonv_number(s, "stop", "time_budget_s", JSONV_OPTIONAL, &spec->stop_time_budget_s, E,
                     err) ||
        jsonv_number(s, "stop", "metric_threshold", JSONV_OPTIONAL, &spec->stop_threshold, E,
                     err) ||
        jsonv_int(s, "stop", "patience", JSONV_OPTIONAL, 1, SAMPLER_MAX_TRIALS,
                  &spec->stop_patience, E, err))
        return err->code;
    if (json_object_get(s, "time_budget_s") != NULL) {
        if (!(spec->stop_time_budget_s > 0 && spec->stop_time_budget_s <= SPEC_MAX_TIME_BUDGET_S))
            return rung_error_set(err, E, "stop.time_budget_s",
                                  "stop.time_budget_s: must be > 0 and at most %g, not %g",
                                  SPEC_MAX_TIME_BUDGET_S, spec->stop_time_budget_s);
        json_object_set_new(s, "time_budget_s", number_json(spec->stop_time_budget_s));
    }
    if (json_object_get(s, "metric_threshold") != NULL) {
        spec->has_stop_threshold = true;
        json_object_set_new(s, "metric_threshold", number_json(spec->stop_threshold));
    }
    if (json_object_get(s, "patience") != NULL)
        json_object_set_new(s, "patience", json_integer(spec->stop_patience));
    return 0;
}

static int parse_searcher(json_t *j, uint64_t seed, Spec *spec, RungError *err)
{
    json_t *s = json_object_get(j, "searcher");
    if (json_is_null(s))
        s = NULL;
    if (searcher_parse(s, spec->space, &spec->searcher, err))
        return err->code;
    if (!spec->searcher.has_seed) {
        spec->searcher.seed = seed;
        spec->searcher.has_seed = true;
    }
    if (s == NULL) {
        s = json_pack("{s:s}", "type", "random");
        json_object_set_new(j, "searcher", s);
    } else if (json_object_get(s, "type") == NULL) {
        json_object_set_new(s, "type", json_string("random"));
    }
    json_object_set_new(s, "seed", json_integer((json_int_t)spec->searcher.seed));
    return 0;
}

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
static int parse_objectives(json_t *j, Spec *spec, RungError *err)
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
static int parse_constraints(json_t *j, Spec *spec, RungError *err)
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
 * (searcher.multi_fidelity): not yet; bench/multifidelity.sh measured it
 * no better than last values under asha (docs/searchers.md). */
#define SPEC_MULTI_FIDELITY_DEFAULT false

static int check_objective_rules(const json_t *j, Spec *spec, RungError *err)
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
    if (spec->searcher.multi_fidelity == 1 && !rungs)
        return rung_error_set(err, E, "searcher.multi_fidelity",
                              "searcher.multi_fidelity: needs a scheduler with rungs (asha or "
                              "hyperband)");
    if (spec->searcher.multi_fidelity == 1 && !one_loss)
        return rung_error_set(err, E, "searcher.multi_fidelity",
                              "searcher.multi_fidelity: models one metric; not with several "
                              "objectives or constraints");
    if (spec->searcher.multi_fidelity < 0)
        spec->searcher.multi_fidelity = spec->searcher.type == SEARCHER_BAYES && rungs &&
                                        one_loss && SPEC_MULTI_FIDELITY_DEFAULT;
    /* Shown, and stored: a later rungd with another default goes on as
     * the experiment started. */
    if (spec->searcher.type == SEARCHER_BAYES)
        json_object_set_new(json_object_get(spec->json, "searcher"), "multi_fidelity",
                            json_boolean(spec->searcher.multi_fidelity == 1));
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

/* An object without "type" and without any domain in it was a constant
 * object before sub-spaces (docs/api.md, "Nested and conditional spaces");
 * such an object is refused at submission now, so in a stored spec it is
 * one of those: it stays the constant it was, as a grid of one value. */
static void keep_constant_objects(json_t *space)
{
    const char *name;
    json_t *v;
    json_object_foreach(space, name, v) {
        if (json_is_object(v) && json_object_get(v, "type") == NULL && !space_has_domain(v))
            json_object_set_new(space, name,
                                json_pack("{s:s, s:[O]}", "type", "grid", "values", v));
    }
}

/* spec_parse, or spec_load when stored. */
static int parse(const json_t *spec_json, uint64_t seed, bool stored, Spec *spec, RungError *err)
{
    memset(spec, 0, sizeof *spec);
    if (!json_is_object(spec_json))
        return rung_error_set(err, RUNG_E_BAD_JSON, NULL, "body: must be a JSON object");
    /* The spec is stored as JSON text (search_space and trainable with it,
     * and trial configs come from search_space): bounded in depth before
     * anything is copied, see JSONV_MAX_DEPTH. */
    if (!stored && jsonv_check_depth(spec_json, JSONV_MAX_DEPTH, "", E, err) != 0)
        return err->code;
    json_t *j = json_deep_copy(spec_json);
    if (j == NULL)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
    spec->json = j;
    if (stored) {
        /* The string fields that earlier rungds stored as null, having taken
         * null for absent: absent they are, and get their defaults. */
        drop_null(j, "name");
        drop_null(json_object_get(j, "searcher"), "type");
        json_t *t = json_object_get(j, "trainable");
        drop_null(t, "cwd");
        drop_null(t, "model");
        drop_null(t, "dataset");
    }
    spec->name = "experiment";
    if (jsonv_only_keys(j, "", top_keys, E, err) ||
        jsonv_string(j, "", "name", JSONV_OPTIONAL, SPEC_MAX_NAME, &spec->name, E, err) ||
        parse_objectives(j, spec, err) || parse_constraints(j, spec, err))
        goto fail;
    json_t *space = json_object_get(j, "search_space");
    if (space == NULL || json_is_null(space)) {
        rung_error_set(err, E, "search_space", "search_space: required");
        goto fail;
    }
    if (stored && json_is_object(space))
        keep_constant_objects(space);
    if (jsonv_object(space, "search_space", E, err) || space_parse(space, &spec->space, err) ||
        parse_searcher(j, seed, spec, err) || parse_scheduler(j, spec, err) ||
        parse_counts(j, spec, err) || parse_best_scope(j, spec, err) ||
        parse_resources(j, spec, err) || parse_selector(j, spec, err) ||
        parse_trainable(j, stored, spec, err) ||
        sampler_total_trials(spec->space, &spec->searcher, spec->num_samples, &spec->total_trials,
                             err) ||
        parse_points(j, spec, err) || parse_warm_start(j, spec, err) || parse_stop(j, spec, err) ||
        check_objective_rules(spec_json, spec, err))
        goto fail;
    if (spec->points != NULL && (int64_t)json_array_size(spec->points) > spec->total_trials) {
        rung_error_set(err, E, "points_to_evaluate",
                       "points_to_evaluate: %zu points, but the experiment has %lld trials",
                       json_array_size(spec->points), (long long)spec->total_trials);
        goto fail;
    }
    if (json_object_get(j, "name") == NULL)
        json_object_set_new(j, "name", json_string(spec->name));
    return 0;
fail:
    spec_close(spec);
    return err->code ? err->code : E;
}

int spec_parse(const json_t *spec_json, uint64_t seed, Spec *spec, RungError *err)
{
    return parse(spec_json, seed, false, spec, err);
}

int spec_load(const json_t *stored, uint64_t seed, Spec *spec, RungError *err)
{
    return parse(stored, seed, true, spec, err);
}

void spec_close(Spec *spec)
{
    if (spec == NULL)
        return;
    space_free(spec->space);
    space_free(spec->mutations);
    json_decref(spec->json);
    memset(spec, 0, sizeof *spec);
}

int spec_patch(Spec *spec, const json_t *patch, int64_t min_num_samples, RungError *err)
{
    const int A = RUNG_E_INVALID_ARGUMENT;
    if (!json_is_object(patch))
        return rung_error_set(err, RUNG_E_BAD_JSON, NULL, "body: must be a JSON object");
    static const char *const keys[] = {"num_samples", "priority", "max_concurrent_trials", "share",
                                       NULL};
    int64_t num_samples = spec->num_samples;
    int64_t priority = spec->priority;
    int64_t max_concurrent = spec->max_concurrent;
    double share = spec->share;
    if (jsonv_only_keys(patch, "", keys, A, err) ||
        jsonv_int(patch, "", "num_samples", JSONV_OPTIONAL, 1, SAMPLER_MAX_TRIALS, &num_samples, A,
                  err) ||
        jsonv_int(patch, "", "priority", JSONV_OPTIONAL, -SPEC_MAX_PRIORITY, SPEC_MAX_PRIORITY,
                  &priority, A, err) ||
        jsonv_int(patch, "", "max_concurrent_trials", JSONV_OPTIONAL, 0, SPEC_MAX_CONCURRENT,
                  &max_concurrent, A, err) ||
        jsonv_number(patch, "", "share", JSONV_OPTIONAL, &share, A, err))
        return err->code;
    if (num_samples < min_num_samples)
        return rung_error_set(err, A, "num_samples", "num_samples: must be at least %lld, not %lld",
                              (long long)min_num_samples, (long long)num_samples);
    if (!(share > 0 && share <= SPEC_MAX_SHARE))
        return rung_error_set(err, A, "share", "share: must be > 0 and at most %g, not %g",
                              SPEC_MAX_SHARE, share);
    /* total_trials as spec_parse counts it, for the new num_samples. */
    int64_t total_trials;
    RungError why;
    rung_error_clear(&why);
    if (sampler_total_trials(spec->space, &spec->searcher, num_samples, &total_trials, &why))
        return rung_error_set(err, A, "num_samples", "%s", why.message);
    if (spec->points != NULL && (int64_t)json_array_size(spec->points) > total_trials)
        return rung_error_set(err, A, "num_samples",
                              "num_samples: %lld trials are fewer than the %zu "
                              "points_to_evaluate",
                              (long long)total_trials, json_array_size(spec->points));
    /* Every value checked. spec_parse wrote all four keys into spec->json,
     * and replacing an existing key's value allocates nothing in jansson:
     * only the new values themselves can fail to be made. */
    json_t *values[4] = {json_integer(num_samples), json_integer(priority),
                         json_integer(max_concurrent), number_json(share)};
    int rc = 0;
    for (int k = 0; k < 4; k++)
        if (values[k] == NULL)
            rc = rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
    for (int k = 0; k < 4 && rc == 0; k++)
        if (json_object_set(spec->json, keys[k], values[k]))
            rc = rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
    for (int k = 0; k < 4; k++)
        json_decref(values[k]);
    if (rc != 0)
        return rc;
    spec->num_samples = num_samples;
    spec->total_trials = total_trials;
    spec->priority = priority;
    spec->max_concurrent = max_concurrent;
    spec->share = share;
    return 0;
}
