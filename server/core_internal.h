/* What the files of the Core share (core*.c, sched_*.c): the Core itself and
 * the helpers one file defines and others call. core.h is the API; nothing
 * outside the Core includes this header. */
#ifndef RUNG_SERVER_CORE_INTERNAL_H
#define RUNG_SERVER_CORE_INTERNAL_H

#include "clock.h"
#include "ct.h"
#include "nonfinite.h"
#include "core.h"

#include "grow.h"
#include "pareto.h"
#include "pb2.h"
#include "pbt.h"
#include "utf8.h"
#include "warm.h"

struct Core {
    int64_t lease_ms;  /* lease length */
    Experiment **exps; /* in memory, ascending id */
    int64_t n_exps, cap_exps;
    IdMap trials;  /* id -> Trial, those in memory */
    IdMap workers; /* id -> Worker, those in memory */
    int64_t next_exp_id, next_trial_id, next_worker_id;
    /* Every trial and experiment by state, those in the store included. */
    int64_t trial_counts[TRIAL__COUNT];
    int64_t exp_counts[EXP__COUNT];
    TrialList running;     /* every running trial, by lease time */
    int64_t gangs_running; /* running trials that are gangs: 0 spares the lease a scan */
    /* Set when a lease that failed before might now succeed. */
    bool availability_changed;
    bool gang_formed; /* a gang formed since core_take_gang_formed */
    /* Changes since core_changes_clear (core_changes hands them over). */
    Experiment **dirty_exps;
    int64_t n_dirty_exps, cap_dirty_exps;
    Trial **dirty_trials;
    int64_t n_dirty_trials, cap_dirty_trials;
    Worker **dirty_workers;
    int64_t n_dirty_workers, cap_dirty_workers;
    NewReport *reports;
    int64_t n_reports, cap_reports;
    /* pbt: checkpoints stored in rungd's data folder; the first n_new_ckpts
     * of new_ckpts are not written yet. */
    CoreCheckpoint *ckpts;
    int64_t n_ckpts, cap_ckpts;
    CoreCheckpoint *new_ckpts;
    int64_t n_new_ckpts, cap_new_ckpts;
    /* Stored checkpoints nobody needs any more (drop_unneeded_ckpts): rows
     * to delete, then files to remove. */
    CoreCheckpoint *dropped_ckpts;
    int64_t n_dropped_ckpts, cap_dropped_ckpts;
    /* pbt: the uploads asked of workers (core_uploads_for), each with the
     * token its PUT must present; memory only. */
    CoreUpload *uploads;
    int64_t n_uploads, cap_uploads;
    /* Ended objects to release after their final state is committed. */
    Trial **rel_trials;
    int64_t n_rel_trials, cap_rel_trials;
    Experiment **rel_exps;
    int64_t n_rel_exps, cap_rel_exps;
    CoreCounters counters; /* for /metrics */
};

#endif
