/* The trial state machine: experiments, trials, workers and leases.
 *
 * Pure: every function takes the time (ms since the epoch) and, where it
 * needs one, the lease token as arguments, and does no I/O. What a call
 * changed is queued on the Core (dirty experiments, trials, workers and new
 * reports) for the engine to write in the same transaction before any reply
 * goes out; core_take_changes hands that queue over.
 *
 * Memory holds the work in flight, not the history: running experiments
 * with their pending line, their running and paused trials, the rung
 * records of their scheduler and the searcher's history; workers seen
 * lately. A trial that ends is released once its final state is committed
 * (core_release); an experiment that ends, once nothing of it runs. What is
 * released is read from the store on request (store_read.h). At start only
 * the running experiments are loaded. One thread (the engine's) owns a
 * Core; nothing here locks. Objects are reached through the core_* lookups;
 * a pointer is valid until the next core_release. */
#ifndef RUNG_SERVER_CORE_H
#define RUNG_SERVER_CORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "asha.h"
#include "idmap.h"
#include "error.h"
#include "spec.h"

#define CORE_TOKEN_LEN 32      /* lease tokens: 128 random bits in hex */
#define CORE_MAX_ERROR 8192    /* bytes of a trial's error text kept */
#define CORE_MAX_METRICS 64    /* metrics per report */
#define CORE_MAX_LEASE_GPUS 64 /* GPU indices a worker may offer at once */

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
    int64_t id;             /* >= 1, unique across experiments */
    struct Experiment *exp; /* borrowed: the owner */
    int64_t number;         /* 0-based within the experiment */
    TrialState state;
    json_t *config;                           /* owned: the parameters */
    int64_t attempt;                          /* 1-based */
    int64_t worker_id;                        /* 0 = never leased */
    char lease_token[CORE_TOKEN_LEN + 1];     /* "" = nobody may report */
    int64_t lease_expires_ms;                 /* running only: when the lease runs out */
    json_t *resources;                        /* owned, or NULL before a lease */
    bool stop_requested;                      /* experiment canceled while running */
    char *error;                              /* owned, or NULL */
    int64_t created_at, started_at, ended_at; /* ms; 0 = not yet */
    /* Derived from the current attempt's reports (rebuilt at load). */
    bool has_step;
    int64_t step; /* last reported time_attr */
    bool has_time;
    double time;        /* last report's time_attr value, for the scheduler */
    double rung;        /* milestone where the scheduler stopped or paused it; 0 = none */
    int64_t queue_pos;  /* pending only: place in the experiment's line, smaller first */
    char *log_tail;     /* owned: last log lines from the worker, or NULL (memory only) */
    size_t leased_seen; /* n_seen when leased: a resumed trial's reports so far */
    bool has_best;
    double best_value; /* in the metric's own sign */
    int64_t best_step;
    json_t *last;   /* owned: last metrics, or NULL */
    StepSeen *seen; /* owned: steps of this attempt, ascending */
    size_t n_seen, cap_seen;
    /* Intrusive lists: the experiment's pending queue, or the core's running list. */
    struct Trial *prev, *next;
    bool dirty;     /* queued for a store write */
    bool stored;    /* has a row in the store (else: insert it) */
    bool releasing; /* terminal: queued for core_release */
} Trial;

typedef struct TrialList {
    Trial *head, *tail;
    int64_t len;
} TrialList;

/* The best value an experiment's trials reported, with where it came from. */
typedef struct BestRef {
    bool has;
    int64_t trial_id;
    double value; /* in the metric's own sign */
    int64_t step;
    json_t *config; /* the trial's config: owned in Experiment.best_done,
                       borrowed in core_experiment_best's answer */
} BestRef;

/* A released trial's result, for the searcher (bayes only). */
typedef struct HistEntry {
    int64_t number;
    double loss;    /* lower is better; +INFINITY for a failed trial */
    json_t *config; /* owned */
} HistEntry;

typedef struct Experiment {
    int64_t id;
    Spec spec; /* owned */
    ExpState state;
    int64_t created_at, ended_at;
    Trial **trials; /* owned array, by number; [0, n_trials); NULL once
                       the trial is released */
    int64_t n_trials, cap_trials;
    int64_t counts[TRIAL__COUNT];
    TrialList pending; /* pending trials, ascending queue_pos: those put back
                          at the front (latest first), then new ones by number */
    int64_t proposing; /* configs asked of the proposer, not yet added */
    BestRef best_done; /* the best of its released trials */
    HistEntry *hist;   /* bayes: results of released trials */
    int64_t n_hist, cap_hist;
    struct Asha *asha; /* owned: the scheduler's rung records */
    bool hold_endgame; /* asha promote: no end game now (re-entry, or promotions first) */
    bool dirty;
    bool stored;
    bool releasing; /* ended: queued for core_release */
} Experiment;

typedef struct Worker {
    int64_t id;
    char *name, *hostname; /* owned */
    json_t *gpus;          /* owned: as registered */
    int64_t cpus;
    int64_t registered_at, last_seen_at;
    json_t *heartbeat; /* owned: last heartbeat body, or NULL */
    int64_t n_running; /* trials it holds now */
    bool dirty;
    bool stored;
} Worker;

/* A report accepted by core_report, to be inserted by the engine. */
typedef struct NewReport {
    int64_t trial_id, attempt, step, time;
    json_t *metrics; /* owned */
    ReportAction action;
} NewReport;

/* The state of the daemon's work in flight; closed: other files use the
 * functions below, never its fields. */
typedef struct Core Core;

Core *core_new(int64_t lease_ms);
void core_free(Core *core);

/* Lookups of what is in memory: borrowed pointers, NULL when absent
 * (never created, or released: ask the store). */
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
Trial *core_lease(Core *core, Worker *w, const LeaseOffer *offer, const char *token, int64_t now);

/* Takes back a lease whose reply never reached the worker: the trial is
 * pending again, first in line, with the same attempt. Returns whether it
 * was taken back (false when the token is no longer the trial's). */
bool core_unlease(Core *core, Trial *t, const char *token, int64_t now);

/* A report on a trial. RUNG_E_LEASE_LOST for a token that is not the
 * trial's; *action gets the answer, the same for a repeated step. metrics is
 * borrowed (copied when stored). */
int core_report(Core *core, Trial *t, const char *token, int64_t step, json_t *metrics, int64_t now,
                ReportAction *action, RungError *err);

/* A trial's end as the worker tells it: completed, or failed with error
 * (may be NULL). Idempotent on terminal trials. */
int core_finish(Core *core, Trial *t, const char *token, bool completed, const char *error,
                int64_t now, RungError *err);

/* A heartbeat from w listing the trials it runs; renews their leases and
 * returns (new reference) the array of ids it must stop. */
json_t *core_heartbeat(Core *core, Worker *w, const int64_t *ids, int64_t n_ids, json_t *heartbeat,
                       int64_t now);

/* Cancels exp: pending trials canceled, running ones asked to stop.
 * RUNG_E_CONFLICT when it already completed. */
int core_cancel(Core *core, Experiment *exp, int64_t now, RungError *err);

/* Fails every running trial whose lease ran out ("worker lost") and retries
 * it when attempts remain. Returns how many expired. */
int64_t core_expire_leases(Core *core, int64_t now);

/* Marks w seen at now (kept in memory; written with the worker's next change). */
void core_worker_seen(Core *core, Worker *w, int64_t now);

/* The one rule for a worker being alive: seen within a lease length (a
 * worker heartbeats several times per lease). */
bool core_worker_alive(const Core *core, const Worker *w, int64_t now);
/* How many workers are alive (for /metrics). */
int64_t core_workers_alive(const Core *core, int64_t now);

/* The best value any trial of exp reported (config borrowed). */
void core_experiment_best(const Experiment *exp, BestRef *out);

/* After a commit: frees the trials that ended and the experiments that
 * ended with nothing left running, keeping what their searcher and
 * best value need. Every pointer to them is invalid afterwards. */
void core_release(Core *core);

/* Undoes what a failed write left in memory: drops the objects whose ids
 * are given (the store is then asked for them again, see store_reload_*). */
void core_forget_experiment(Core *core, Experiment *e);
void core_forget_worker(Core *core, Worker *w);

/* Drops the workers not seen for `idle_ms` that hold no trial and have
 * nothing to write: they are read from the store when they come back. */
int64_t core_release_idle_workers(Core *core, int64_t now, int64_t idle_ms);

/* Loading from the store: objects with their stored fields. Counts and the
 * next ids come from the whole store; objects only for what runs. */
void core_load_totals(Core *core, const int64_t trial_counts[TRIAL__COUNT],
                      const int64_t exp_counts[3], int64_t max_exp_id, int64_t max_trial_id,
                      int64_t max_worker_id);
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
                         json_t *gpus, int64_t cpus, int64_t registered_at, int64_t last_seen_at,
                         json_t *heartbeat);
/* After loading: running trials get a fresh lease window from now, and
 * pending queues are ordered. */
void core_load_done(Core *core, int64_t now);
/* The same for one experiment reloaded after a failed write: it joins the
 * totals, and its running trials' leases are set by the caller. */
void core_load_experiment_done(Core *core, Experiment *e, int64_t now);
void core_set_lease_expiry(Trial *t, int64_t expires_ms);

/* Reading the core without reaching into it. */
int64_t core_n_experiments(const Core *core);          /* in memory, ascending id */
Experiment *core_experiment_at(Core *core, int64_t i); /* 0 <= i < core_n_experiments */
const int64_t *core_exp_counts(const Core *core);      /* [ExpState]: the whole store */
/* Whether a lease that found nothing might now succeed; _seen resets it. */
bool core_availability_changed(const Core *core);
void core_availability_seen(Core *core);
/* Ids of the running trials of a worker, or of an experiment (at most cap). */
int64_t core_worker_trials(const Core *core, int64_t worker_id, int64_t *ids, int64_t cap);
int64_t core_running_of(const Core *core, const Experiment *e, int64_t *ids, int64_t cap);

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
 * the finish: at most CORE_MAX_LOG bytes (the tail end), stored with the
 * trial's row (so they outlive the trial's time in memory and restarts). */
#define CORE_MAX_LOG 8192
void core_trial_set_log(Core *core, Trial *t, const char *text);

/* Counts of trials by state across experiments (for /metrics). */
void core_trial_counts(const Core *core, int64_t counts[TRIAL__COUNT]);

/* Reads the objective from metrics: 1 with *v set, 0 when absent.
 * Non-finite values travel as the strings "NaN", "Infinity", "-Infinity". */
int core_objective(const Spec *spec, const json_t *metrics, double *v);

#endif
