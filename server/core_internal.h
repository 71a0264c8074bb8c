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
#include "pbt.h"
#include "utf8.h"

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
    CoreEvent *events; /* queued for the event log (core_events.c) */
    int64_t n_events, cap_events;
    int64_t events_total; /* queued since start: long polls wait for it to move */
    /* pbt: checkpoints stored in rungd's data folder; the first n_new_ckpts
     * of new_ckpts are not written yet. */
    CoreCheckpoint *ckpts;
    int64_t n_ckpts, cap_ckpts;
    CoreCheckpoint *new_ckpts;
    int64_t n_new_ckpts, cap_new_ckpts;
    /* Stored checkpoints nobody needs any more (core_drop_unneeded_ckpts): rows
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

/* Records a report's values on the trial (both live and at load). */
/* What the core reads of one report, read once (core_report_read). */
typedef struct ReportRead {
    int64_t step; /* the report's step */
    bool has_time;
    double time; /* its time_attr for the scheduler */
    bool has_value;
    double value;         /* its (first) objective, possibly not finite */
    const char *bad_name; /* the objective whose value is not finite, or the first's */
} ReportRead;

/* ---- schedulers' hooks ---- */

/* A scheduler plugs into the kernel through this table (as Ray Tune's
 * TrialScheduler and Optuna's pruners do): the kernel, the reports and the
 * loading call these and name no scheduler. sched_attach (sched_ops.c)
 * picks an experiment's table from its spec: sched_fifo.c, sched_asha.c
 * (asha, hyperband, median), sched_pbt.c (pbt, pb2). A NULL hook does
 * nothing. */
typedef struct SchedOps {
    const char *name;
    /* Its state on e (e->asha, e->pbt), made when e enters memory and freed
     * with e. */
    void (*init)(Experiment *e);
    void (*fini)(Experiment *e);
    /* The answer to a report of running trial t (r read once), with the
     * state change it brings: continue; or stop, t paused, stopped or
     * completed. */
    ReportAction (*report)(Core *core, Trial *t, const ReportRead *r, const json_t *metrics,
                           int64_t now);
    /* t ended as completed or stopped, live or loaded at a restart: what it
     * leaves in the scheduler's records (Ray's on_trial_complete). */
    void (*trial_end)(Experiment *e, const Trial *t);
    /* A value was recorded or a record dropped: paused trials that may go
     * on now go back in line (asha's promotions). */
    void (*promote)(Core *core, Experiment *e, int64_t now);
    /* Whenever e may have changed while running: trials that waited for
     * others go on (pbt's synch barrier). */
    void (*settle)(Core *core, Experiment *e, int64_t now);
    /* Nothing of e runs or waits in line and every trial exists, yet some
     * are paused: promote one or stop them (asha's end game). */
    void (*idle)(Core *core, Experiment *e, int64_t now);
    /* t's attempt ended and another starts (fail_or_retry, retry-failed):
     * forget what the attempt reported. */
    void (*attempt_reset)(Experiment *e, const Trial *t);
    /* t goes back in line for a new attempt after a failure (fail_or_retry). */
    void (*retry)(Core *core, Trial *t);
    /* e ended before all its trials ran (canceled, failed, a stop rule). */
    void (*exp_end)(Core *core, Experiment *e);
    /* The trial's record in the scheduler goes once it is released; its
     * rung records stay (asha.h). */
    void (*forget)(Experiment *e, const Trial *t);
    /* Loading: a stored report replayed into the records, and a trial that
     * waits at a rung. */
    void (*load_report)(Trial *t, const ReportRead *r, const json_t *metrics);
    void (*load_paused)(Experiment *e, const Trial *t);
    bool ranks_nonfinite;     /* a value that is not finite is ranked (last), not a failure */
    bool resumes_lost;        /* a trial whose worker was lost resumes rather than retries */
    bool loads_all_trials;    /* its records want every trial in memory (core_load_all_trials) */
    bool wants_ended_reports; /* its records want the ended trials' reports replayed */
} SchedOps;

extern const SchedOps sched_fifo_ops, sched_asha_ops, sched_pbt_ops;

/* Gives e the scheduler its spec names, with its state (sched_ops.c). */
void sched_attach(Experiment *e);

/* core.c */
void core_list_push_back(TrialList *l, Trial *t);
void core_list_remove(TrialList *l, Trial *t);
bool core_in_line(TrialState s);
void core_queue_back(Experiment *e, Trial *t);
void core_queue_front(Experiment *e, Trial *t);
void core_mark_trial(Core *core, Trial *t);
void core_mark_exp(Core *core, Experiment *e);
void core_mark_worker(Core *core, Worker *w);
int64_t core_exp_lower_bound(const Core *core, int64_t id);
void core_window_shrink(Experiment *e);
void core_put_trial(Core *core, Experiment *e, Trial *t);
Experiment *core_exp_new(Core *core, int64_t id, Spec *spec, int64_t now);
bool core_better(const Experiment *e, double a, double b);
bool core_exp_active(const Experiment *e);
char *core_dup_str(const char *s);
void core_set_error(Trial *t, const char *error);
Worker *core_owner_of(const Core *core, const Trial *t);
int core_exp_objective(const Experiment *e, const json_t *metrics, double *v);
bool core_token_equal(const char *given, const char *expected);
int core_lease_lost(const Trial *t, RungError *err);
void core_release_exp(Core *core, Experiment *e);

/* core_place.c */
void core_place_exp_state(Core *core, Experiment *e);
void core_join_share(Core *core, Experiment *e);
bool core_selected(const Experiment *e, const Worker *w);
bool core_fits(const Experiment *e, const Worker *w, const LeaseOffer *offer);
json_t *core_grant(const Experiment *e, const LeaseOffer *offer);
void core_hold_drop(Core *core, Experiment *e, int64_t worker_id);
void core_holds_release(Core *core, Experiment *e);

/* core_health.c */
void core_count_error(ExpHealth *h, const char *error);
const ErrorCount *core_top_error(const ExpHealth *h);
void core_add_keys(ExpHealth *h, const json_t *metrics);
bool core_trial_score(const Trial *t, double *v, int64_t *step);

/* core_kernel.c */
void core_set_exp_state(Core *core, Experiment *e, ExpState s, EndReason why, int64_t now);
void core_end_experiment(Core *core, Experiment *e, ExpState s, EndReason why, const char *error,
                         int64_t now);
void core_maybe_complete(Core *core, Experiment *e, int64_t now);
void core_count_slots(Core *core, const Trial *t, int64_t delta);
void core_set_state(Core *core, Trial *t, TrialState s, int64_t now);
void core_reset_attempt(Trial *t);
void core_trial_resume(Core *core, Trial *t, int64_t now);
void core_end_for_scheduler(Core *core, Trial *t, TrialState s, int64_t now);
void core_apply_stop(Core *core, Trial *t, int64_t now);
void core_fail_or_retry(Core *core, Trial *t, const char *error, RetryReason why, int64_t now);
void core_trial_ended(Core *core, Trial *t, int64_t now);

/* core_ckpt.c */
bool core_ckpt_wanted(const Experiment *e, int64_t trial_id, int64_t step);
void core_drop_unneeded_ckpts(Core *core, const Experiment *e);

/* core_report.c */
void core_seen_insert(Trial *t, int64_t step, ReportAction a);
ReportRead core_report_read(const Experiment *e, int64_t step, const json_t *metrics);
void core_record_report(Trial *t, const ReportRead *r, json_t *metrics, ReportAction a);

/* core_lease.c */
Worker *core_worker_new(Core *core, int64_t id, const char *name, const char *hostname,
                        json_t *gpus, int64_t cpus, int64_t registered_at);
void core_renew(Core *core, Trial *t, int64_t worker_id, int64_t now);
bool core_holds_trial(const Trial *t, int64_t worker_id);

/* core_gang.c */
bool core_is_gang(const Experiment *e);
void core_gang_changed(Core *core, Trial *t);
void core_gang_sync_expiry(Trial *t);
void core_hold_add(Experiment *e, Worker *w, const LeaseOffer *offer, int64_t now);
bool core_hold_renew(const Experiment *e, const Worker *w, const LeaseOffer *offer);
Trial *core_gang_form(Core *core, Experiment *e, int64_t now);
bool core_gang_deliver(Core *core, Trial *t, Worker *w, const LeaseOffer *offer, const char *token,
                       int64_t now);
Trial *core_gang_undelivered(const Core *core, const Worker *w);
void core_gang_tick(Core *core, int64_t now);
bool core_gang_unlease(Core *core, Trial *t, const char *token);
int core_gang_report_gate(const Trial *t, const char *token, ReportAction *action, RungError *err);
void core_gang_member_finish(Core *core, Trial *t, GangMember *m, bool completed, const char *error,
                             int64_t now);

/* core_release.c */
void core_keep_result(Experiment *e, const Trial *t);
void core_trial_free(Trial *t);
void core_exp_free(Experiment *e);
void core_worker_free(Worker *w);

/* core_pareto.c */
bool core_trial_losses(const Trial *t, double loss[SPEC_MAX_OBJECTIVES]);
void core_pareto_keep(Experiment *e, const Trial *t);

/* sched_asha.c */
void sched_asha_init(Experiment *e);
void sched_asha_fini(Experiment *e);

#endif
