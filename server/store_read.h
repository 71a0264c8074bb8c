/* The read side of the store: what the API shows of ended experiments,
 * ended trials and idle workers, which are not kept in memory (core.h).
 * Every query is paged and served by an index (schema/004_history.sql).
 * Objects in memory are newer than their rows for the fields a report
 * changes (step, last, best); callers show those from memory. Runs on the
 * engine thread, inside the batch's transaction. */
#ifndef RUNG_SERVER_STORE_READ_H
#define RUNG_SERVER_STORE_READ_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "rank.h"
#include "store.h"
#include "views.h"

/* An experiment's parsed spec (free with spec_close); RUNG_E_NOT_FOUND. */
int store_read_spec(Store *s, int64_t id, Spec *spec, RungError *err);

/* An experiment as the API shows it; RUNG_E_NOT_FOUND when absent. */
int store_read_experiment(Store *s, int64_t id, json_t **out, RungError *err);
/* Whether a stored experiment's trainable.working_dir is the blob
 * sha256_hex (blobs.h). */
int store_read_blob_referenced(Store *s, const char *sha256_hex, bool *referenced, RungError *err);
/* How many other completed trials of the experiment have a stored
 * best_value better than value (max: higher is better; ties go to the
 * lower id): *better. */
int store_read_trial_rank(Store *s, int64_t exp_id, int64_t trial_id, double value, bool max,
                          int64_t *better, RungError *err);
/* A trial's stored best_value: *has false when it has none. */
int store_read_trial_best(Store *s, int64_t trial_id, double *value, bool *has, RungError *err);

/* Experiments newest first: items[i] for ids[i] (ids: limit entries);
 * only those tagged tag unless it is NULL. */
int store_read_experiments(Store *s, const char *tag, int64_t limit, int64_t offset, json_t **items,
                           int64_t *ids, int64_t *total, RungError *err);

/* A trial; its experiment's spec (or NULL) gives its bracket and nodes.
 * *exp_id gets its experiment. */
int store_read_trial(Store *s, int64_t id, const Spec *spec, json_t **out, int64_t *exp_id,
                     RungError *err);

/* The trials of an experiment: those in state (or any when state < 0)
 * and tagged tag (or any when NULL), by number, or by best value (lower
 * loss first, none last) when by_value. */
int store_read_trial_ranks(Store *s, const Spec *spec, int64_t exp_id, int state, const char *tag,
                           TrialRank **out, int64_t *n, RungError *err);
int store_read_trials(Store *s, const Spec *spec, int64_t exp_id, int state, const char *tag,
                      int64_t limit, int64_t offset, json_t **items, int64_t *total,
                      RungError *err);

/* GET /api/v1/experiments/{id}/spec: the submitted body (new reference;
 * json null for an experiment stored before schema 015), and, when
 * effective is not NULL, the stored spec with its tags and notes. */
int store_read_submitted(Store *s, int64_t id, json_t **submitted, json_t **effective,
                         RungError *err);

/* GET /api/v1/experiments/{id}/timeline: the trials of exp_id that were
 * leased (started_at set), in no particular order: one row per trial's
 * current attempt; workers (an object) gets each one's worker's name
 * under its id. *rows is new (free). */
typedef struct TimelineRow {
    int64_t trial_id, attempt, worker_id, started_at, ended_at; /* ended_at 0: running */
    TrialState state;
} TimelineRow;
int store_read_timeline(Store *s, int64_t exp_id, TimelineRow **rows, int64_t *n, json_t *workers,
                        RungError *err);

/* What a worker's late call on an ended trial is answered from. */
typedef struct TrialLease {
    int64_t exp_id, attempt;
    TrialState state;
    char token[CORE_TOKEN_LEN + 1]; /* "" when none */
} TrialLease;
int store_read_trial_lease(Store *s, int64_t id, TrialLease *out, RungError *err);
/* The member of the trial's stored gang whose lease token is token: 1
 * with its *rank and the gang's *attempt, 0 when none is (or the trial
 * never ran as a gang), -1 with err when the store fails. */
int store_read_gang_member(Store *s, int64_t id, const char *token, int64_t *rank, int64_t *attempt,
                           RungError *err);
/* The answer a stored report got: 1 with *action set, 0 when none. */
int store_read_report_action(Store *s, int64_t trial_id, int64_t attempt, int64_t step,
                             ReportAction *action, RungError *err);

/* Writes the experiment's trials as CSV rows (no header) to out, calling
 * row(ctx, id) first for each: a trial in memory is written by the caller
 * (row returns true), the others from their rows here. */
int store_read_csv(Store *s, const Spec *spec, const json_t *names, int64_t exp_id, FILE *out,
                   bool (*row)(void *ctx, int64_t id, FILE *out), void *ctx, RungError *err);
/* Adds to the object `set` a key for each metric name in the last report
 * of any stored trial of the experiment (the metric:<name> columns). */
int store_read_metric_names(Store *s, int64_t exp_id, json_t *set, RungError *err);

/* One CSV field (RFC 4180 quoting; a leading ' where a spreadsheet would
 * read a formula), and a config or metric value as a field. */
void store_csv_field(FILE *out, const char *s);
void store_csv_value(FILE *out, const json_t *v);
/* One trial's CSV row: id, number, state, each search-space parameter,
 * best_value, the metric's last value, steps, then the last value of each
 * metric of names (an array of strings: the metric:<name> columns) (the
 * one writer, whether the trial is in memory or read from its row). last
 * may be NULL. */
void store_csv_row(FILE *out, const Spec *spec, const json_t *names, int64_t id, int64_t number,
                   const char *state, const json_t *config, bool has_best, double best,
                   const json_t *last, bool has_step, int64_t step);

/* The experiment's metric values that arrived at times in [from, before),
 * in arrival order, as "[trial_id,attempt,step,value]" items separated by
 * commas; stops after the time that reaches `limit` items. *next gets the
 * cursor to ask from next time. */
int store_read_curves(Store *s, int64_t exp_id, const char *metric, int64_t from, int64_t before,
                      int64_t limit, FILE *out, int64_t *next, RungError *err);

/* The whole curves (items as store_read_curves writes them) of the `best`
 * trials with the best values (the largest when max, else the smallest),
 * best first; *ranked gets how many trials of the experiment have a value
 * to rank by. Writes nothing when there are no more than `best` of them:
 * store_read_curves then gives them all. */
int store_read_curves_best(Store *s, int64_t exp_id, const char *metric, bool max, int64_t best,
                           FILE *out, int64_t *ranked, RungError *err);

/* Workers by id: a page of rows as JSON objects (without the live fields). */
/* Workers by id, those seen since seen_since (ms; 0: all) or holding a
 * running trial. */
int store_read_workers(Store *s, int64_t seen_since, int64_t limit, int64_t offset, json_t **items,
                       int64_t *total, RungError *err);

/* warm_start (warm.h): a new sealed Warm for spec from the finished trials
 * of experiment spec->warm_start_exp that ended at or before `before` (ms:
 * the new experiment's creation, so that reading it again at start gives
 * the same), spec->total_trials set for the grid searcher (warm_seal).
 * With `check` (at submission) the source must exist, have ended
 * (completed, canceled or failed) with none of its trials left to end, and
 * have every parameter of spec's search_space; otherwise, and for
 * warm_seal's refusals, RUNG_E_INVALID_SPEC naming warm_start.experiment
 * (or points_to_evaluate). */
int store_read_warm(Store *s, Spec *spec, int64_t before, bool check, struct Warm **out,
                    RungError *err);
/* When the store loads e (at start, or again after a failed write): reads
 * its warm_start trials into e->warm as at its submission (the trials that
 * ended before e was created). Fails only when the store does; a source
 * that no longer gives a Warm leaves e without one. */
int store_read_warm_attach(Store *s, Experiment *e, RungError *err);

/* An experiment's completed trials as an analysis reads them (docs/api.md,
 * "importance" and "surface"; server/analysis.h): in trial-number order,
 * each with its id, its config and last metrics as their stored JSON text
 * (malloc'd; last NULL before any report) and its best value. The text is
 * parsed on the analysis thread, not here on the engine thread. */
typedef struct StoreCompleted {
    int64_t id;
    char *config;
    char *last;
    double best;
    bool has_best;
} StoreCompleted;
int store_read_completed(Store *s, int64_t exp_id, StoreCompleted **rows, int64_t *n,
                         RungError *err);
void store_completed_free(StoreCompleted *rows, int64_t n);
/* How many of the experiment's stored trials are completed. */
int store_read_completed_count(Store *s, int64_t exp_id, int64_t *n, RungError *err);

#endif
