/* The Core's loading API (server/core.h is the rest): how store_load.c
 * (and the reload after a failed write, and retry-failed) hands the Core
 * the objects of the store, with their stored fields. Counts and the next
 * ids come from the whole store; objects only for what runs. */
#ifndef RUNG_CORE_LOAD_H
#define RUNG_CORE_LOAD_H

#include "core.h"

void core_load_totals(Core *core, const int64_t trial_counts[TRIAL__COUNT],
                      const int64_t exp_counts[EXP__COUNT], int64_t max_exp_id,
                      int64_t max_trial_id, int64_t max_worker_id);
Experiment *core_load_experiment(Core *core, int64_t id, Spec *spec, ExpState state,
                                 int64_t created_at, int64_t ended_at);
/* A trial's stored row, as loading hands it to the Core: config and
 * resources are stolen, token and error copied (NULL for none). */
typedef struct CoreTrialRow {
    int64_t id, number;
    TrialState state;
    json_t *config;
    int64_t attempt;
    int64_t worker_id; /* its lease's worker (0: none) */
    const char *token; /* its lease token */
    json_t *resources; /* what its lease granted */
    StopKind stop_kind;
    const char *error;
    int64_t created_at, started_at, ended_at;
} CoreTrialRow;
Trial *core_load_trial(Core *core, Experiment *exp, const CoreTrialRow *row);
/* Sets a loaded trial's gang from its stored form (borrowed; NULL or a
 * malformed value: none). */
void core_load_gang(Core *core, Trial *t, const json_t *stored);
/* Replays one stored report of the trial's current attempt (ascending step). */
void core_load_report(Core *core, Trial *t, int64_t step, json_t *metrics, ReportAction a);
/* The columns of schema 005 (stolen JSON; NULL for none). */
void core_load_experiment_ended(Experiment *e, EndReason reason, const char *error,
                                const json_t *health);
void core_load_trial_control(Trial *t, StoppedBy by, bool paused, json_t *warnings, json_t *info);
/* The column of schema 007: how many times the trial was preempted. */

void core_load_trial_preemptions(Trial *t, int64_t n);
void core_load_trial_losses(Trial *t, int64_t n);
/* pbt's stored lineage (taken) and resume_from (borrowed; either NULL). */
void core_load_trial_pbt(Trial *t, json_t *lineage, const json_t *resume_from);
/* Puts back in memory a trial of exp that was released (ended) while exp
 * stayed: it is still in exp's counts, and leaves the searcher's history.
 * For retry-failed. */
Trial *core_readd_trial(Core *core, Experiment *exp, const CoreTrialRow *row);
/* Loading a running experiment without its history (store_load.c): its ended
 * trials do not become objects. Unless core_load_all_trials (pbt, whose
 * populations are small), the store loads the trials in flight (pending,
 * running, paused, preempted) with their current attempt's reports, then
 * gives e's counts of ended trials and its number of trials
 * (core_load_ended_counts), replays the reports of its ended trials when
 * the scheduler's rung records need them (core_load_wants_ended_reports:
 * asha, hyperband, median) and gives the rows the best value and the
 * searcher need (core_load_wants_ended_rows: every ended row; else the one
 * with the best value): for each, core_load_ended_begin, then
 * core_load_report of each report or core_load_ended_summary of the row,
 * then core_load_ended_end, which keeps what the trial leaves (scheduler:
 * its end in the rung records; result: its best value, Pareto front and
 * searcher history) and frees it. */
bool core_load_all_trials(const Experiment *e);
void core_load_ended_counts(Core *core, Experiment *e, const int64_t counts[TRIAL__COUNT],
                            int64_t n_trials);
bool core_load_wants_ended_reports(const Experiment *e);
bool core_load_wants_ended_rows(const Experiment *e);
/* config (taken) may be NULL when only reports are replayed. */
Trial *core_load_ended_begin(Experiment *e, int64_t id, int64_t number, TrialState st,
                             json_t *config);
/* The row's summary of its current attempt: last metrics (taken), best
 * value, and its last reported step. */
void core_load_ended_summary(Trial *t, json_t *last, bool has_best, double best_value,
                             int64_t best_step, bool has_step, int64_t step);
void core_load_ended_end(Core *core, Trial *t, bool scheduler, bool result);
/* Sets the rung a loaded trial was stopped or paused at (0 = none). */
void core_load_rung(Trial *t, double rung);
/* Sets a loaded pending trial's place in line (a row stored without one
 * keeps its number, a new trial's place). */
void core_load_queue_pos(Trial *t, int64_t pos);
Worker *core_load_worker(Core *core, int64_t id, const char *name, const char *hostname,
                         json_t *gpus, int64_t cpus, int64_t registered_at, int64_t last_seen_at,
                         json_t *heartbeat);
/* Sets a loaded worker's stored labels (stolen; NULL for none), which it
 * need not write again (core_worker_set_labels would). */
void core_load_worker_labels(Worker *w, json_t *labels);
/* The same for its stored environments and container runtimes. */
void core_load_worker_caps(Worker *w, json_t *caps);
/* After loading: running trials get a fresh lease window from now, and
 * pending queues are ordered. */
void core_load_done(Core *core, int64_t now);
/* The same for one experiment reloaded after a failed write: it joins the
 * totals, and its running trials' leases are set by the caller. */
void core_load_experiment_done(Core *core, Experiment *e, int64_t now);
/* The same for an ended experiment read back to run again (retry-failed,
 * PATCH): it is in the totals already. */
void core_load_revived(Core *core, Experiment *e, int64_t now);

#endif
