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

#define E RUNG_E_INVALID_SPEC

static const char *const top_keys[] = {"name",         "metric",
                                       "mode",         "search_space",
                                       "searcher",     "scheduler",
                                       "num_samples",  "max_concurrent_trials",
                                       "max_failures", "resources_per_trial",
                                       "trainable",    NULL};

/* A number as JSON: integral values print as integers (27, not 27.0). */
static json_t *number_json(double v)
{
    if (v == floor(v) && fabs(v) < 9e15)
        return json_integer((json_int_t)v);
    return json_real(v);
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
                              "scheduler.type: '%s' is not one of fifo, asha, hyperband, median",
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

static int parse_resources(json_t *spec_json, Spec *spec, RungError *err)
{
    json_t *r = json_object_get(spec_json, "resources_per_trial");
    spec->cpus = 1;
    spec->gpus = 0;
    if (r != NULL && !json_is_null(r)) {
        if (jsonv_object(r, "resources_per_trial", E, err))
            return err->code;
        const char *allowed[] = {"cpu", "gpu", NULL};
        if (jsonv_only_keys(r, "resources_per_trial", allowed, E, err) ||
            jsonv_int(r, "resources_per_trial", "cpu", JSONV_OPTIONAL, 0, SPEC_MAX_CPUS,
                      &spec->cpus, E, err) ||
            jsonv_int(r, "resources_per_trial", "gpu", JSONV_OPTIONAL, 0, SPEC_MAX_GPUS,
                      &spec->gpus, E, err))
            return err->code;
    }
    json_object_set_new(spec_json, "resources_per_trial",
                        json_pack("{s:I, s:I}", "cpu", (json_int_t)spec->cpus, "gpu",
                                  (json_int_t)spec->gpus));
    return 0;
}

/* Checks that every "{name}" in an argv entry names a parameter, so a typo in
 * a placeholder fails at submit instead of reaching the program verbatim. */
static int check_placeholders(const char *arg, const char *field, const json_t *space,
                              RungError *err)
{
    for (const char *p = strchr(arg, '{'); p != NULL; p = strchr(p + 1, '{')) {
        const char *end = strchr(p + 1, '}');
        if (end == NULL)
            break;
        size_t len = (size_t)(end - p - 1);
        if (len == 0 || len > SPACE_MAX_NAME || !(isalpha((unsigned char)p[1]) || p[1] == '_'))
            continue;
        bool ident = true;
        for (const char *c = p + 1; c < end; c++)
            if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != '-')
                ident = false;
        if (!ident)
            continue;
        char name[SPACE_MAX_NAME + 1];
        memcpy(name, p + 1, len);
        name[len] = '\0';
        if (json_object_get(space, name) == NULL)
            return rung_error_set(err, E, field, "%s: {%s} names no parameter of search_space",
                                  field, name);
    }
    return 0;
}

static int parse_command(json_t *t, const json_t *space, bool stored, RungError *err)
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
        if (check_placeholders(json_string_value(a), field, space, err))
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

static int parse_trainable(json_t *spec_json, bool stored, RungError *err)
{
    json_t *t = json_object_get(spec_json, "trainable");
    if (t == NULL || json_is_null(t))
        return 0; /* workers of one's own (the pull API) need none */
    if (jsonv_object(t, "trainable", E, err))
        return err->code;
    const char *type;
    if (jsonv_string(t, "trainable", "type", JSONV_REQUIRED, 32, &type, E, err))
        return err->code;
    if (strcmp(type, "command") == 0)
        return parse_command(t, json_object_get(spec_json, "search_space"), stored, err);
    if (strcmp(type, "builtin") == 0) {
        const char *allowed[] = {"type", "model", "dataset", NULL};
        const char *s;
        if (jsonv_only_keys(t, "trainable", allowed, E, err) ||
            jsonv_string(t, "trainable", "model", JSONV_OPTIONAL, 64, &s, E, err) ||
            jsonv_string(t, "trainable", "dataset", JSONV_OPTIONAL, 256, &s, E, err))
            return err->code;
        return 0;
    }
    return rung_error_set(err, E, "trainable.type",
                          "trainable.type: must be command or builtin, not '%s'", type);
}

static int parse_counts(json_t *j, Spec *spec, RungError *err)
{
    spec->num_samples = 1;
    spec->max_concurrent = 0;
    spec->max_failures = 0;
    if (jsonv_int(j, "", "num_samples", JSONV_OPTIONAL, 1, SAMPLER_MAX_TRIALS, &spec->num_samples,
                  E, err) ||
        jsonv_int(j, "", "max_concurrent_trials", JSONV_OPTIONAL, 0, 1000000, &spec->max_concurrent,
                  E, err) ||
        jsonv_int(j, "", "max_failures", JSONV_OPTIONAL, 0, SPEC_MAX_FAILURES, &spec->max_failures,
                  E, err))
        return err->code;
    json_object_set_new(j, "num_samples", json_integer(spec->num_samples));
    json_object_set_new(j, "max_concurrent_trials", json_integer(spec->max_concurrent));
    json_object_set_new(j, "max_failures", json_integer(spec->max_failures));
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

/* Deletes key from obj (when obj is an object) when its value is null. */
static void drop_null(json_t *obj, const char *key)
{
    if (json_is_null(json_object_get(obj, key)))
        json_object_del(obj, key);
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
    const char *mode;
    spec->name = "experiment";
    if (jsonv_only_keys(j, "", top_keys, E, err) ||
        jsonv_string(j, "", "name", JSONV_OPTIONAL, SPEC_MAX_NAME, &spec->name, E, err) ||
        jsonv_string(j, "", "metric", JSONV_REQUIRED, SPEC_MAX_METRIC, &spec->metric, E, err) ||
        jsonv_string(j, "", "mode", JSONV_REQUIRED, 8, &mode, E, err))
        goto fail;
    if (strcmp(mode, "min") != 0 && strcmp(mode, "max") != 0) {
        rung_error_set(err, E, "mode", "mode: must be min or max, not '%s'", mode);
        goto fail;
    }
    spec->mode = strcmp(mode, "min") == 0 ? SPEC_MODE_MIN : SPEC_MODE_MAX;
    json_t *space = json_object_get(j, "search_space");
    if (space == NULL || json_is_null(space)) {
        rung_error_set(err, E, "search_space", "search_space: required");
        goto fail;
    }
    if (jsonv_object(space, "search_space", E, err) || space_parse(space, &spec->space, err) ||
        parse_searcher(j, seed, spec, err) || parse_scheduler(j, spec, err) ||
        parse_counts(j, spec, err) || parse_resources(j, spec, err) ||
        parse_trainable(j, stored, err) ||
        sampler_total_trials(spec->space, &spec->searcher, spec->num_samples, &spec->total_trials,
                             err))
        goto fail;
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
    json_decref(spec->json);
    memset(spec, 0, sizeof *spec);
}
