/* The engine's side of the analysis thread (analysis.h; engine.h): the
 * cache of its results, what is handed to it, its answers applied from the
 * inbox, and the background refresh. Engine thread only, but for
 * engine_on_analysis, which runs on the analysis thread and only pushes an
 * internal job (engine_inbox.c).
 *
 * The cache holds the latest result per key (an endpoint, an experiment
 * and the query that names a result: the metric, and for a surface x, y
 * and n), at most ANALYSIS_MAX_ENTRIES of them (the least recently used
 * goes first), each with the version it was computed at: how many of its
 * experiment's trials were completed then. A completed trial never changes
 * (docs/api.md, "The trial object"), so the count tells a fresh result
 * from a stale one. */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "clock.h"
#include "log.h"

/* Bounds the cache's memory: a result is at most a surface of 100 x 100
 * values and the points of the trials (about 1 MB at 10,000 trials). */
#define ANALYSIS_MAX_ENTRIES 64
/* A result is recomputed in the background at most this often when trials
 * of its experiment complete, and only while someone asked for it within
 * ANALYSIS_KEEP_WARM_MS (a dashboard polls every few seconds). */
#define ANALYSIS_REFRESH_MS 1000
#define ANALYSIS_KEEP_WARM_MS (10 * 60 * 1000)

struct AnalysisEntry {
    char *key;
    int64_t exp_id;
    int64_t done_version; /* -1: no result yet */
    int status;
    json_t *reply;
    int64_t running_version; /* a job queued or running for it; -1: none */
    int64_t started_ms;      /* monotonic: when the last job was handed out */
    int64_t used_ms;         /* monotonic: when a request last asked */
    json_t *query;           /* the request's query, for the refresh */
    AnalysisBuild build;
};

static int64_t mono_ms(void)
{
    return rung_mono_ns() / 1000000;
}

static void entry_clear(AnalysisEntry *x)
{
    free(x->key);
    json_decref(x->reply);
    json_decref(x->query);
    memset(x, 0, sizeof *x);
}

static AnalysisEntry *find(Engine *e, const char *key)
{
    for (int64_t i = 0; i < e->n_analyses; i++)
        if (strcmp(e->analyses[i].key, key) == 0)
            return &e->analyses[i];
    return NULL;
}

static void drop_at(Engine *e, int64_t i)
{
    entry_clear(&e->analyses[i]);
    e->analyses[i] = e->analyses[--e->n_analyses];
}

int64_t engine_analysis_version(Engine *e, int64_t exp_id)
{
    Experiment *x = core_experiment(e->core, exp_id);
    if (x != NULL)
        return x->counts[TRIAL_COMPLETED];
    int64_t n = 0;
    RungError err;
    if (store_read_completed_count(e->store, exp_id, &n, &err) != 0)
        return -1;
    return n;
}

json_t *engine_analysis_cached(Engine *e, const char *key, int64_t min_version, int *status)
{
    AnalysisEntry *x = find(e, key);
    if (x == NULL)
        return NULL;
    x->used_ms = mono_ms();
    if (x->reply == NULL || x->done_version < min_version)
        return NULL;
    *status = x->status;
    return json_incref(x->reply);
}

bool engine_analysis_running(Engine *e, const char *key, int64_t min_version)
{
    AnalysisEntry *x = find(e, key);
    return x != NULL && x->running_version >= 0 && x->running_version >= min_version;
}

void engine_analysis_submit(Engine *e, AnalysisJob *job, const json_t *query, AnalysisBuild build)
{
    AnalysisEntry *x = find(e, job->key);
    if (x == NULL) {
        if (e->n_analyses == ANALYSIS_MAX_ENTRIES) {
            int64_t lru = 0;
            for (int64_t i = 1; i < e->n_analyses; i++)
                if (e->analyses[i].used_ms < e->analyses[lru].used_ms)
                    lru = i;
            drop_at(e, lru); /* its job's answer, if one runs, finds no entry */
        }
        if (e->analyses == NULL) {
            e->analyses = calloc(ANALYSIS_MAX_ENTRIES, sizeof *e->analyses);
            if (e->analyses == NULL)
                abort();
        }
        x = &e->analyses[e->n_analyses++];
        x->key = strdup(job->key);
        if (x->key == NULL)
            abort();
        x->exp_id = job->exp_id;
        x->done_version = -1;
        x->used_ms = mono_ms();
    }
    if (query != x->query) {
        json_decref(x->query);
        x->query = json_deep_copy(query);
    }
    x->build = build;
    x->running_version = job->version;
    x->started_ms = mono_ms();
    analysis_submit(e->analysis, job);
}

void engine_analysis_forget(Engine *e, int64_t exp_id)
{
    for (int64_t i = e->n_analyses - 1; i >= 0; i--)
        if (e->analyses[i].exp_id == exp_id)
            drop_at(e, i);
}

/* The analysis thread's answer, on the engine thread: cached, unless a
 * newer one is already there or its entry went (the experiment was
 * deleted, or the entry evicted). Parked requests see it at the batch's
 * serve_parked (their wake: api_analysis.c). */
void engine_analysis_apply(Engine *e, Job *job)
{
    AnalysisJob *a = job->data;
    AnalysisEntry *x = find(e, a->key);
    if (x != NULL) {
        if (a->version >= x->done_version) {
            json_decref(x->reply);
            x->reply = a->reply;
            a->reply = NULL;
            x->status = a->status;
            x->done_version = a->version;
        }
        if (x->running_version <= a->version)
            x->running_version = -1;
    }
    analysis_job_free(a);
    free(job);
}

void engine_on_analysis(void *ctx, AnalysisJob *a)
{
    Engine *e = ctx;
    Job *job = calloc(1, sizeof *job);
    if (job == NULL)
        abort();
    job->fn = engine_analysis_apply;
    job->data = a;
    engine_inbox_push(e, job);
}

void engine_analysis_discard(Job *job)
{
    analysis_job_free(job->data); /* engine_job_discard frees job */
    job->data = NULL;
}

void engine_analysis_tick(Engine *e)
{
    int64_t now = mono_ms();
    for (int64_t i = 0; i < e->n_analyses; i++) {
        AnalysisEntry *x = &e->analyses[i];
        if (x->build == NULL || x->running_version >= 0 ||
            now - x->started_ms < ANALYSIS_REFRESH_MS || now - x->used_ms > ANALYSIS_KEEP_WARM_MS)
            continue;
        /* Only an experiment in memory gets new trials; one that ended is
         * read from the store when asked. */
        Experiment *exp = core_experiment(e->core, x->exp_id);
        if (exp == NULL || exp->counts[TRIAL_COMPLETED] <= x->done_version)
            continue;
        AnalysisJob *job = x->build(e, x->exp_id, x->query, exp->counts[TRIAL_COMPLETED]);
        if (job == NULL) {
            x->started_ms = now; /* tried: not again before the next period */
            continue;
        }
        engine_analysis_submit(e, job, x->query, x->build);
    }
}

void engine_analysis_free(Engine *e)
{
    analysis_stop(e->analysis);
    e->analysis = NULL;
    for (int64_t i = 0; i < e->n_analyses; i++)
        entry_clear(&e->analyses[i]);
    free(e->analyses);
    e->analyses = NULL;
    e->n_analyses = 0;
}
