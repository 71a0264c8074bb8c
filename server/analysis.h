/* The analysis thread: what rungd computes from an experiment's completed
 * trials for GET /api/v1/experiments/{id}/importance and .../surface
 * (docs/api.md), off the engine thread, as the proposer computes configs
 * (propose.h): a random forest's fANOVA or a GP fit takes from milliseconds
 * to seconds, and no request may wait on one inside a batch.
 *
 * The engine hands it an AnalysisJob: an immutable snapshot of what the
 * answer depends on (the search space JSON, the searcher, each completed
 * trial's id, config and last metrics as stored text, which this thread
 * parses, and what to compute); the thread computes the reply and gives
 * the job back through `done` (the engine's inbox: engine_analysis.c),
 * which caches it (docs/architecture.md, "The analysis thread"). */
#ifndef RUNG_SERVER_ANALYSIS_H
#define RUNG_SERVER_ANALYSIS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler.h"
#include "store_read.h"

typedef enum { ANALYSIS_IMPORTANCE, ANALYSIS_SURFACE } AnalysisKind;

/* Where a metric's value comes from: the trial's best value (a single
 * objective: what ranks it), else its last report's key `name`. */
typedef enum { TARGET_OBJECTIVE, TARGET_CONSTRAINT, TARGET_METRIC } AnalysisTargetKind;
#define ANALYSIS_MAX_TARGETS 16 /* spec.h: 4 objectives + 8 constraints, or one metric */
#define ANALYSIS_NAME_MAX 256

typedef struct AnalysisTarget {
    char name[ANALYSIS_NAME_MAX];
    AnalysisTargetKind kind;
    int mode;      /* -1: none (constraint, metric); 0: min; 1: max */
    bool use_best; /* the best_value column rather than the last report */
} AnalysisTarget;

typedef struct AnalysisJob {
    /* Set by the engine, then never changed. */
    AnalysisKind kind;
    int64_t exp_id;
    int64_t version; /* completed trials when the snapshot was read */
    char *key;       /* the cache's key (engine_analysis.c), owned */
    json_t *space;   /* the search_space JSON, own reference */
    SearcherSpec searcher;
    StoreCompleted *rows; /* owned */
    int64_t n_rows;
    AnalysisTarget targets[ANALYSIS_MAX_TARGETS];
    int n_targets;
    char x[SPACE_MAX_PATH + 1], y[SPACE_MAX_PATH + 1]; /* surface: numeric features */
    int grid_n;                                        /* surface: 2..100 */
    /* Set by the thread. */
    int status;    /* 200, or an error's status */
    json_t *reply; /* the reply body (an error's JSON when status != 200) */
    struct AnalysisJob *next;
} AnalysisJob;

void analysis_job_free(AnalysisJob *job);

/* Computes job->status and job->reply from the snapshot; pure but for the
 * clock (computed_at). Runs on the analysis thread. */
void analysis_compute(AnalysisJob *job);

typedef void (*AnalysisDone)(void *ctx, AnalysisJob *job);
typedef struct Analysis Analysis;

/* Starts the thread; NULL when it cannot. done takes ownership of each job. */
Analysis *analysis_start(AnalysisDone done, void *ctx);
/* Queues job (stolen): computed in the order queued. */
void analysis_submit(Analysis *a, AnalysisJob *job);
/* Finishes the job in progress, drops the rest, joins the thread. */
void analysis_stop(Analysis *a);

#endif
