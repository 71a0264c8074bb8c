/* What an experiment's completed trials say (docs/api.md,
 * "GET /api/v1/experiments/{id}/importance" and ".../surface"): the
 * handlers check the request, build the snapshot the analysis thread
 * computes from (analysis.h) and answer from its cache (engine.h,
 * engine_analysis.c). A request whose fresh result is not cached yet is
 * parked, as a long poll is, until the thread's answer is in: the engine
 * thread never computes one. */
#include "api_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "clock.h"
#include "store_read.h"

#define A RUNG_E_INVALID_ARGUMENT
/* How long a request waits for its result before 503: below the clients'
 * 30 s timeout (python/rung/client.py), far above the 0.4 s a fANOVA of
 * 10,000 trials takes (docs/architecture.md, "The analysis thread"). */
#define ANALYSIS_WAIT_MS (25 * 1000)
/* The request is re-run this long before the engine's deadline (which
 * answers 204), to answer 503 itself. */
#define ANALYSIS_MARGIN_MS 500
#define SURFACE_N_DEFAULT 32
#define SURFACE_N_MAX 100

static int64_t mono_ms(void)
{
    return rung_mono_ns() / 1000000;
}

static const char *query_text(const json_t *query, const char *name)
{
    const char *v = json_string_value(json_object_get(query, name));
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The cache's key of a request: the endpoint, the experiment and the query
 * arguments that name its result, as sent (a wake computes it again). */
static char *key_of(AnalysisKind kind, int64_t exp_id, const json_t *query)
{
    char *key = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&key, &len);
    if (f == NULL)
        abort();
    const char *metric = query_text(query, "metric");
    fprintf(f, "%s\x1f%lld\x1f%s", kind == ANALYSIS_IMPORTANCE ? "importance" : "surface",
            (long long)exp_id, metric ? metric : "");
    if (kind == ANALYSIS_SURFACE) {
        const char *x = query_text(query, "x"), *y = query_text(query, "y"),
                   *n = query_text(query, "n");
        fprintf(f, "\x1f%s\x1f%s\x1f%s", x ? x : "", y ? y : "", n ? n : "");
    }
    fclose(f);
    return key;
}

/* The metrics a request is about (analysis.h's targets): with no metric,
 * every objective then every constraint in spec order; else that one (an
 * objective or constraint by its kind, any other reported key a "metric";
 * the analysis thread says 400 when no completed trial reported it). A
 * single objective's value is the trial's best, as its ranking uses. */
static int targets_of(const Spec *spec, const char *metric, bool first_only, AnalysisTarget *t)
{
    int n = 0;
    for (int k = 0; k < spec->n_objectives; k++) {
        if (metric != NULL && strcmp(metric, spec->objectives[k].name) != 0)
            continue;
        AnalysisTarget *x = &t[n++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", spec->objectives[k].name);
        x->kind = TARGET_OBJECTIVE;
        x->mode = spec->objectives[k].mode == SPEC_MODE_MAX ? 1 : 0;
        x->use_best = spec->n_objectives == 1;
        if (metric != NULL || first_only)
            return n;
    }
    for (int k = 0; k < spec->n_constraints; k++) {
        if (metric != NULL && strcmp(metric, spec->constraints[k].metric) != 0)
            continue;
        AnalysisTarget *x = &t[n++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", spec->constraints[k].metric);
        x->kind = TARGET_CONSTRAINT;
        x->mode = -1;
        if (metric != NULL)
            return n;
    }
    if (metric != NULL) {
        AnalysisTarget *x = &t[n++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", metric);
        x->kind = TARGET_METRIC;
        x->mode = -1;
    }
    return n;
}

/* The snapshot of experiment exp_id for query, at version: the spec from
 * memory or the store, the completed trials' rows from the store (the
 * trials in memory were written there by their request's savepoint).
 * NULL when a read fails. */
static AnalysisJob *build(Engine *e, AnalysisKind kind, int64_t exp_id, const json_t *query,
                          int64_t version)
{
    Spec own;
    bool owned = false;
    const Spec *spec;
    Experiment *x = core_experiment(engine_core(e), exp_id);
    RungError err;
    if (x != NULL) {
        spec = &x->spec;
    } else if (store_read_spec(engine_store(e), exp_id, &own, &err) == 0) {
        spec = &own;
        owned = true;
    } else {
        return NULL;
    }
    AnalysisJob *job = calloc(1, sizeof *job);
    if (job == NULL)
        abort();
    job->kind = kind;
    job->exp_id = exp_id;
    job->version = version;
    job->key = key_of(kind, exp_id, query);
    job->space = json_incref(json_object_get(spec->json, "search_space"));
    job->searcher = spec->searcher;
    const char *metric = query_text(query, "metric");
    job->n_targets = targets_of(spec, metric, kind == ANALYSIS_SURFACE, job->targets);
    if (kind == ANALYSIS_SURFACE) {
        const char *x = query_text(query, "x"), *y = query_text(query, "y");
        snprintf(job->x, sizeof job->x, "%s", x ? x : "");
        snprintf(job->y, sizeof job->y, "%s", y ? y : "");
        const char *n = query_text(query, "n");
        job->grid_n = n ? atoi(n) : SURFACE_N_DEFAULT;
    }
    if (owned)
        spec_close(&own);
    if (store_read_completed(engine_store(e), exp_id, &job->rows, &job->n_rows, &err) != 0) {
        analysis_job_free(job);
        return NULL;
    }
    return job;
}

static AnalysisJob *build_importance(Engine *e, int64_t exp_id, const json_t *query,
                                     int64_t version)
{
    return build(e, ANALYSIS_IMPORTANCE, exp_id, query, version);
}

static AnalysisJob *build_surface(Engine *e, int64_t exp_id, const json_t *query, int64_t version)
{
    return build(e, ANALYSIS_SURFACE, exp_id, query, version);
}

/* A parked request runs again when no job for its result is queued or
 * running any more (its answer is in, or the entry went), or just before
 * its deadline. */
static bool wake_of(Engine *e, const Job *job, AnalysisKind kind)
{
    if (mono_ms() >= job->deadline_ms - ANALYSIS_MARGIN_MS)
        return true;
    char *key = key_of(kind, job->ids[0], job->query);
    bool running = engine_analysis_running(e, key, job->mark);
    free(key);
    return !running;
}

static bool wake_importance(Engine *e, const Job *job)
{
    return wake_of(e, job, ANALYSIS_IMPORTANCE);
}

static bool wake_surface(Engine *e, const Job *job)
{
    return wake_of(e, job, ANALYSIS_SURFACE);
}

/* Answers from the cache when the result there is fresh (computed from at
 * least the trials completed when the request came), else hands the
 * thread a snapshot unless one for it is on its way, and parks. */
static void serve(Engine *e, Job *job, AnalysisKind kind)
{
    int64_t id = job->ids[0];
    bool rerun = job->wake != NULL;
    int64_t version = engine_analysis_version(e, id);
    if (version < 0) {
        api_error(job, RUNG_E_INTERNAL, "", "the experiment's trials could not be read");
        return;
    }
    int64_t min_version = rerun ? job->mark : version;
    char *key = key_of(kind, id, job->query);
    int status = 0;
    json_t *cached = engine_analysis_cached(e, key, min_version, &status);
    if (cached != NULL) {
        free(key);
        api_reply(job, status, cached);
        return;
    }
    if (rerun && mono_ms() >= job->deadline_ms - ANALYSIS_MARGIN_MS) {
        free(key);
        api_error(job, RUNG_E_UNAVAILABLE, "",
                  "the analysis is still being computed; ask again in a while");
        return;
    }
    if (!engine_analysis_running(e, key, min_version)) {
        AnalysisBuild b = kind == ANALYSIS_IMPORTANCE ? build_importance : build_surface;
        AnalysisJob *a = b(e, id, job->query, version);
        if (a == NULL) {
            free(key);
            api_error(job, RUNG_E_INTERNAL, "", "the experiment's trials could not be read");
            return;
        }
        engine_analysis_submit(e, a, job->query, b);
    }
    free(key);
    int64_t deadline = rerun ? job->deadline_ms : mono_ms() + ANALYSIS_WAIT_MS;
    job->wake = kind == ANALYSIS_IMPORTANCE ? wake_importance : wake_surface;
    job->mark = min_version;
    if (!engine_park(e, job, deadline))
        api_error(job, RUNG_E_UNAVAILABLE, "", "rungd is shutting down");
}

void api_experiment_importance(Engine *e, Job *job)
{
    Spec own;
    bool owned;
    const Spec *spec = api_spec_of(e, job, job->ids[0], &own, &owned);
    if (spec == NULL)
        return;
    if (owned)
        spec_close(&own);
    serve(e, job, ANALYSIS_IMPORTANCE);
}

/* x or y: a numeric parameter of the space (a feature, sampler.h). */
static bool numeric_param(const Spec *spec, const char *name)
{
    SpaceFeature f[SPACE_MAX_PARAMS];
    int n = space_features(spec->space, f);
    for (int k = 0; k < n; k++)
        if (strcmp(f[k].name, name) == 0)
            return f[k].categories == 0;
    return false;
}

void api_experiment_surface(Engine *e, Job *job)
{
    Spec own;
    bool owned;
    const Spec *spec = api_spec_of(e, job, job->ids[0], &own, &owned);
    if (spec == NULL)
        return;
    RungError err;
    rung_error_clear(&err);
    int64_t n;
    const char *axes[2] = {"x", "y"};
    for (int k = 0; k < 2 && err.code == 0; k++) {
        const char *v = query_text(job->query, axes[k]);
        if (v == NULL)
            rung_error_set(&err, A, axes[k],
                           "%s: required: a numeric parameter of the search space", axes[k]);
        else if (!numeric_param(spec, v))
            rung_error_set(&err, A, axes[k],
                           "%s: %s is no numeric parameter of the search space (a choice, a "
                           "constant or no parameter at all)",
                           axes[k], v);
    }
    if (err.code == 0 && strcmp(query_text(job->query, "x"), query_text(job->query, "y")) == 0)
        rung_error_set(&err, A, "y", "y: must be another parameter than x");
    if (err.code == 0)
        api_query_int(job, "n", SURFACE_N_DEFAULT, 2, SURFACE_N_MAX, &n, &err);
    if (owned)
        spec_close(&own);
    if (err.code != 0) {
        api_fail(job, &err);
        return;
    }
    serve(e, job, ANALYSIS_SURFACE);
}
