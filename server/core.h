/* The trial state machine: experiments, trials, workers and leases.
 *
 * Pure: every function takes the time (ms since the epoch) and, where it
 * needs one, the lease token as arguments, and does no I/O. What a call
 * changed is queued on the Core (dirty experiments, trials, workers and new
 * reports) for the engine to write in the same transaction before any reply
 * goes out; core_take_changes hands that queue over.
 *
 * Everything lives in memory and is rebuilt from the store at start (the
 * tables are the truth). Objects are never freed before core_free, so the
 * pointers handed out stay valid for the daemon's life. One thread (the
 * engine's) owns a Core; nothing here locks. */
#ifndef RUNG_SERVER_CORE_H
#define RUNG_SERVER_CORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "asha.h"
#include "error.h"
#include "spec.h"

#define CORE_TOKEN_LEN 32       /* lease tokens: 128 random bits in hex */
#define CORE_MAX_ERROR 8192     /* bytes of a trial's error text kept */
#define CORE_MAX_METRICS 64     /* metrics per report */
#define CORE_MAX_LEASE_GPUS 64  /* GPU indices a worker may offer at once */

typedef enum {
    TRIAL_PENDING,
    TRIAL_RUNNING,
    TRIAL_COMPLETED,
    TRIAL_STOPPED,
    TRIAL_FAILED,
    TRIAL_CANCELED,
    TRIAL_PAUSED, /* asha with promote: waits at a rung to be promoted */
    TRIAL__COUNT
} TrialState;

typedef enum { EXP_RUNNING, EXP_COMPLETED, EXP_CANCELED } ExpState;

typedef enum { ACTION_CONTINUE, ACTION_STOP } ReportAction;

const char *trial_state_name(TrialState s);
int trial_state_parse(const char *name, TrialState *out); /* 0 or RUNG_E_INVALID_ARGUMENT */
const char *exp_state_name(ExpState s);
int exp_state_parse(const char *name, ExpState *out);
bool trial_state_terminal(TrialState s);

struct Experiment;

/* One step reported in the current attempt and the answer it got. */
typedef struct StepSeen {
    int64_t step;
    uint8_t action; /* ReportAction */
} StepSeen;

typedef struct Trial {
    int64_t id;                  /* >= 1, unique across experiments */
    struct Experiment *exp;      /* borrowed: the owner */
    int64_t number;              /* 0-based within the experiment */
    TrialState state;
    json_t *config;              /* owned: the parameters */
    int64_t attempt;             /* 1-based */
    int64_t worker_id;           /* 0 = never leased */
    char lease_token[CORE_TOKEN_LEN + 1]; /* "" = nobody may report */
    int64_t lease_expires_ms;    /* running only: when the lease runs out */
    json_t *resources;           /* owned, or NULL before a lease */
    bool stop_requested;         /* experiment canceled while running */
    char *error;                 /* owned, or NULL */
    int64_t created_at, started_at, ended_at; /* ms; 0 = not yet */
    /* Derived from the current attempt's reports (rebuilt at load). */
    bool has_step;
    int64_t step;                /* last reported time_attr */
    bool has_time;
    double time;                 /* last report's time_attr value, for the scheduler */
    double rung;                 /* milestone where the scheduler stopped or paused it; 0 = none */
    int64_t queue_pos;           /* pending only: place in the experiment's line, smaller first */
    char *log_tail;              /* owned: last log lines from the worker, or NULL (memory only) */
    size_t leased_seen;          /* n_seen when leased: a resumed trial's reports so far */
    bool has_best;
    double best_value;           /* in the metric's own sign */
    int64_t best_step;
    json_t *last;                /* owned: last metrics, or NULL */
    StepSeen *seen;              /* owned: steps of this attempt, ascending */
    size_t n_seen, cap_seen;
    /* Intrusive lists: the experiment's pending queue, or the core's running list. */
    struct Trial *prev, *next;
    bool dirty;                  /* queued for a store write */
    bool stored;                 /* has a row in the store (else: insert it) */
} Trial;

typedef struct TrialList {
    Trial *head, *tail;
    int64_t len;
} TrialList;

/* One value of an experiment's metric, as reported: the dashboard's
 * learning curves read these in arrival order from a cursor. */
typedef struct CurvePoint {
    int64_t trial_id;
    int32_t attempt;
    int32_t pad;
    int64_t step;
    double value;                /* the metric as reported (NaN when non-finite) */
} CurvePoint;

typedef struct Experiment {
    int64_t id;
    Spec spec;                   /* owned */
    ExpState state;
    int64_t created_at, ended_at;
    Trial **trials;              /* owned array, by number; [0, n_trials) */
    int64_t n_trials, cap_trials;
    int64_t counts[TRIAL__COUNT];
    TrialList pending;           /* pending trials, ascending queue_pos: those put back
                                    at the front (latest first), then new ones by number */
    int64_t proposing;           /* configs asked of the proposer, not yet added */
    Trial *best;                 /* borrowed: the trial with the best value, or NULL */
    struct Asha *asha;           /* owned: the scheduler's rung records */
    CurvePoint *curve;           /* owned: every reported metric value, arrival order
                                    (rebuilt at start in trial and step order) */
    int64_t n_curve, cap_curve;
    bool hold_endgame;           /* asha promote: no end game now (re-entry, or promotions first) */
    bool dirty;
    bool stored;
} Experiment;

typedef struct Worker {
    int64_t id;
    char *name, *hostname;       /* owned */
    json_t *gpus;                /* owned: as registered */
    int64_t cpus;
    int64_t registered_at, last_seen_at;
    json_t *heartbeat;           /* owned: last heartbeat body, or NULL */
    bool dirty;
    bool stored;
} Worker;

/* A report accepted by core_report, to be inserted by the engine. */
typedef struct NewReport {
    int64_t trial_id, attempt, step, time;
    json_t *metrics;             /* owned */
    ReportAction action;
} NewReport;

typedef struct Core {
    int64_t lease_ms;            /* lease length */
    Experiment **exps;           /* by id: exps[id], NULL holes allowed */
    int64_t n_exps, cap_exps;    /* n: highest id + 1 */
    Trial **trials;              /* by id */
    int64_t n_trials, cap_trials;
    Worker **workers;            /* by id */
    int64_t n_workers, cap_workers;
    TrialList running;           /* every running trial, by lease time */
    /* Set when a lease that failed before might now succeed. */
    bool availability_changed;
    /* Changes since core_take_changes. */
    Experiment **dirty_exps;
    int64_t n_dirty_exps, cap_dirty_exps;
    Trial **dirty_trials;
    int64_t n_dirty_trials, cap_dirty_trials;
    Worker **dirty_workers;
    int64_t n_dirty_workers, cap_dirty_workers;
    NewReport *reports;
    int64_t n_reports, cap_reports;
} Core;

Core *core_new(int64_t lease_ms);
void core_free(Core *core);

/* Lookups: borrowed pointers, NULL when absent. */
Experiment *core_experiment(Core *core, int64_t id);
Trial *core_trial(Core *core, int64_t id);
Worker *core_worker(Core *core, int64_t id);

/* Adds a new experiment with the next id; steals *spec (zeroed). */
Experiment *core_experiment_add(Core *core, Spec *spec, int64_t now);
/* Adds the next trial of exp (number exp->n_trials) with config (stolen). */
Trial *core_trial_add(Core *core, Experiment *exp, json_t *config, int64_t now);
/* How many configs exp still needs beyond its pending queue and what was asked. */
int64_t core_proposals_wanted(const Experiment *exp, int64_t target);

/* Registers a worker; name and hostname are copied, gpus stolen. */
Worker *core_worker_add(Core *core, const char *name, const char *hostname, json_t *gpus,
                        int64_t cpus, int64_t now);

/* A lease request: what the worker has free. */
typedef struct LeaseOffer {
    int64_t gpus[CORE_MAX_LEASE_GPUS];
    int64_t n_gpus;
    int64_t cpus;
} LeaseOffer;

/* Leases the first pending trial that fits the offer, by experiment id,
 * with the given token. Returns the trial (now running) or NULL. */
Trial *core_lease(Core *core, Worker *w, const LeaseOffer *offer, const char *token,
                  int64_t now);

/* Takes back a lease whose reply never reached the worker: the trial is
 * pending again, first in line, with the same attempt. Returns whether it
 * was taken back (false when the token is no longer the trial's). */
bool core_unlease(Core *core, Trial *t, const char *token, int64_t now);

/* A report on a trial. RUNG_E_LEASE_LOST for a token that is not the
 * trial's; *action gets the answer, the same for a repeated step. metrics is
 * borrowed (copied when stored). */
int core_report(Core *core, Trial *t, const char *token, int64_t step, json_t *metrics,
                int64_t now, ReportAction *action, RungError *err);

/* A trial's end as the worker tells it: completed, or failed with error
 * (may be NULL). Idempotent on terminal trials. */
int core_finish(Core *core, Trial *t, const char *token, bool completed, const char *error,
                int64_t now, RungError *err);

/* A heartbeat from w listing the trials it runs; renews their leases and
 * returns (new reference) the array of ids it must stop. */
json_t *core_heartbeat(Core *core, Worker *w, const int64_t *ids, int64_t n_ids,
                       json_t *heartbeat, int64_t now);

/* Cancels exp: pending trials canceled, running ones asked to stop.
 * RUNG_E_CONFLICT when it already completed. */
int core_cancel(Core *core, Experiment *exp, int64_t now, RungError *err);

/* Fails every running trial whose lease ran out ("worker lost") and retries
 * it when attempts remain. Returns how many expired. */
int64_t core_expire_leases(Core *core, int64_t now);

/* Marks w seen at now (kept in memory; written with the worker's next change). */
void core_worker_seen(Core *core, Worker *w, int64_t now);

/* Loading from the store: objects with their stored fields. */
Experiment *core_load_experiment(Core *core, int64_t id, Spec *spec, ExpState state,
                                 int64_t created_at, int64_t ended_at);
Trial *core_load_trial(Core *core, Experiment *exp, int64_t id, int64_t number, TrialState st,
                       json_t *config, int64_t attempt, int64_t worker_id, const char *token,
                       json_t *resources, bool stop_requested, const char *error,
                       int64_t created_at, int64_t started_at, int64_t ended_at);
/* Replays one stored report of the trial's current attempt (ascending step). */
void core_load_report(Core *core, Trial *t, int64_t step, json_t *metrics, ReportAction a);
/* Sets the rung a loaded trial was stopped or paused at (0 = none). */
void core_load_rung(Trial *t, double rung);
/* Sets a loaded pending trial's place in line (a row stored without one
 * keeps its number, a new trial's place). */
void core_load_queue_pos(Trial *t, int64_t pos);
Worker *core_load_worker(Core *core, int64_t id, const char *name, const char *hostname,
                         json_t *gpus, int64_t cpus, int64_t registered_at,
                         int64_t last_seen_at, json_t *heartbeat);
/* After loading: running trials get a fresh lease window from now, and
 * pending queues are ordered. */
void core_load_done(Core *core, int64_t now);

/* Hands the queued changes to the caller and clears the queue (the arrays
 * stay owned by the core; valid until the next core call). */
typedef struct CoreChanges {
    Experiment **exps;
    int64_t n_exps;
    Trial **trials;
    int64_t n_trials;
    Worker **workers;
    int64_t n_workers;
    NewReport *reports;
    int64_t n_reports;
} CoreChanges;
void core_changes(Core *core, CoreChanges *out);
void core_changes_clear(Core *core);

/* A trial's result for a searcher: its last reported objective,
 * sign-adjusted so that lower is better, or +INFINITY for a trial that
 * failed. False when it has none yet (pending or running) or was canceled
 * before reporting. */
bool core_trial_result(const Trial *t, double *loss);

/* The step a leased trial resumes after (its last reported step, when it
 * was paused and promoted), or 0 when it starts from the beginning. */
int64_t core_resume_step(const Trial *t);

/* The trial's scheduler bracket (0 unless asha or hyperband). */
int core_trial_bracket(const Trial *t);

/* The last lines of t's log, as its worker sends them with heartbeats and
 * the finish. Kept in memory for the dashboard; at most CORE_MAX_LOG bytes
 * (the tail end). */
#define CORE_MAX_LOG 8192
void core_trial_set_log(Trial *t, const char *text);

/* Counts of trials by state across experiments (for /metrics). */
void core_trial_counts(const Core *core, int64_t counts[TRIAL__COUNT]);

#endif
