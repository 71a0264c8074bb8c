/* Validation of an experiment's spec (docs/api.md, "The experiment spec").
 *
 * The submitted JSON is deep-copied, checked field by field with the path of
 * the first offending field in the error, and completed with the defaults
 * that apply, so that GET shows exactly what runs. Unknown fields anywhere
 * are errors: a typo never passes silently.
 *
 * This file holds the top level and the smaller parts; the scheduler, the
 * trainable and the objectives have files of their own (spec_sched.c,
 * spec_trainable.c, spec_objectives.c; spec_internal.h). */
#include "spec_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"

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
                                       "keep_artifacts",
                                       "notify",
                                       "tags",
                                       "notes",
                                       NULL};


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

static int parse_searcher(json_t *j, uint64_t seed, bool stored, Spec *spec, RungError *err)
{
    json_t *s = json_object_get(j, "searcher");
    if (json_is_null(s))
        s = NULL;
    if (searcher_parse(s, spec->space, &spec->searcher, err))
        return err->code;
    /* Grid combinations were numbered the spec's way (the first parameter
     * slowest) until rungd took Ray's order and wrote "grid_order" into
     * every spec it accepted: a stored spec without it is one of those,
     * and a running grid search must go on in its order, neither repeating
     * nor skipping a combination (docs/api.md, "searcher"). */
    if (stored && json_object_get(s, "grid_order") == NULL)
        spec->searcher.grid_order = GRID_ORDER_SPEC;
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
    const char *order = spec->searcher.grid_order == GRID_ORDER_SPEC ? "spec" : "ray";
    json_object_set_new(s, "grid_order", json_string(order));
    return 0;
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
        spec_parse_objectives(j, spec, err) || spec_parse_constraints(j, spec, err))
        goto fail;
    json_t *space = json_object_get(j, "search_space");
    if (space == NULL || json_is_null(space)) {
        rung_error_set(err, E, "search_space", "search_space: required");
        goto fail;
    }
    if (stored && json_is_object(space))
        keep_constant_objects(space);
    if (jsonv_object(space, "search_space", E, err) || space_parse(space, &spec->space, err) ||
        parse_searcher(j, seed, stored, spec, err) || spec_parse_scheduler(j, spec, err) ||
        parse_counts(j, spec, err) || parse_best_scope(j, spec, err) ||
        parse_resources(j, spec, err) || parse_selector(j, spec, err) ||
        spec_parse_trainable(j, stored, spec, err) || spec_parse_keep(j, spec, err) ||
        spec_parse_notify(j, spec, err) || spec_parse_meta(j, spec, err) ||
        sampler_total_trials(spec->space, &spec->searcher, spec->num_samples, &spec->total_trials,
                             err) ||
        parse_points(j, spec, err) || parse_warm_start(j, spec, err) || parse_stop(j, spec, err) ||
        spec_check_objective_rules(spec_json, spec, err))
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
    json_decref(spec->mutations_json);
    json_decref(spec->json);
    json_decref(spec->tags);
    json_decref(spec->notes);
    free(spec->submitted);
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
