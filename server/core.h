/* The trial state machine: experiments, trials, workers and leases.
 *
 * Pure: every function takes the time (ms since the epoch) and, where it
 * needs one, the lease token as arguments, and does no I/O. What a call
 * changed is queued on the Core (dirty experiments, trials, workers and new
 * reports) for the engine to write in the same transaction before any reply
 * goes out; core_changes hands that queue over.
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
#include "core_events.h"
#include "bayes.h"
#include "gang_members.h"
#include "idmap.h"
#include "error.h"
#include "spec.h"

#define CORE_TOKEN_LEN 32           /* lease tokens: 128 random bits in hex */
#define CORE_MAX_ERROR 8192         /* bytes of a trial's error text kept */
#define CORE_MAX_METRICS 64         /* metrics per report */
#define CORE_MAX_LEASE_GPUS 64      /* GPU indices a worker may offer at once */
#define CORE_MAX_ADDR GANG_MAX_ADDR /* bytes of a worker's advertise_addr */

typedef enum {
    TRIAL_PENDING,
    TRIAL_RUNNING,
    TRIAL_COMPLETED,
    TRIAL_STOPPED,
    TRIAL_FAILED,
    TRIAL_CANCELED,
    TRIAL_PAUSED,    /* asha with promote: waits at a rung to be promoted */
    TRIAL_PREEMPTED, /* its worker gave it back (finish "preempted"): waits in line, like a
                        pending trial, to resume from its checkpoint */
    TRIAL__COUNT
} TrialState;

/* An experiment: running; paused by its user (nothing new is leased); or
 * ended: completed, failed (a rule of docs/api.md, "The experiment
 * object"), canceled. Completed and failed ones can run again (PATCH
 * num_samples, retry-failed). The order is the store's and the API's. */
typedef enum {
    EXP_RUNNING,
    EXP_COMPLETED,
    EXP_CANCELED,
    EXP_FAILED,
    EXP_PAUSED,
    EXP__COUNT
} ExpState;

/* Why an experiment ended (its `ended_reason`); END_NONE while it runs. */
typedef enum {
    END_NONE,
    END_ALL_TRIALS,     /* every trial ended */
    END_CANCELED,       /* its user canceled it */
    END_MAX_FAILED,     /* max_failed_trials trials failed */
    END_METRIC_MISSING, /* trials report, but never the metric */
    END_TIME_BUDGET,    /* stop.time_budget_s */
    END_THRESHOLD,      /* stop.metric_threshold */
    END_PATIENCE,       /* stop.patience */
    END__COUNT
} EndReason;

/* What a running trial becomes at its next report, heartbeat or finish,
 * once something asked it to stop. */
typedef enum {
    STOP_NONE,
    STOP_CANCEL,     /* its experiment was canceled: canceled */
    STOP_USER,       /* its user stopped it: stopped, stopped_by user */
    STOP_EXPERIMENT, /* its experiment ended (a stop rule, a failure): stopped */
    STOP_PAUSE,      /* its experiment was paused with running=pause: paused */
    STOP__COUNT
} StopKind;

/* Who stopped a stopped trial. */
typedef enum { BY_NONE, BY_SCHEDULER, BY_USER, BY_EXPERIMENT, BY__COUNT } StoppedBy;

typedef enum { ACTION_CONTINUE, ACTION_STOP } ReportAction;

const char *trial_state_name(TrialState s);
int trial_state_parse(const char *name, TrialState *out); /* 0 or RUNG_E_INVALID_ARGUMENT */
const char *exp_state_name(ExpState s);
int exp_state_parse(const char *name, ExpState *out);
/* Names as stored and shown; NULL for END_NONE / STOP_NONE / BY_NONE.
 * The parsers give the NONE value for NULL or an unknown name. */
const char *end_reason_name(EndReason r);
EndReason end_reason_parse(const char *name);
const char *stop_kind_name(StopKind k);
StopKind stop_kind_parse(const char *name);
const char *stopped_by_name(StoppedBy b);
StoppedBy stopped_by_parse(const char *name);
bool trial_state_terminal(TrialState s);

struct Experiment;

/* A worker held for an experiment's next gang, with where it said it is
 * reached (its lease request's advertise_addr and port, the latest). */
typedef struct GangHold {
    int64_t worker_id;
    char addr[CORE_MAX_ADDR + 1];
    int64_t port;
} GangHold;

/* The holds of an experiment whose trials are gangs, gathering for its
 * next gang trial (the head of its pending line when the last hold comes).
 * Memory only: a restart starts the gathering over. */
typedef struct GangWait {
    GangHold *holds; /* owned: in hold order, [0, n_holds), at most nodes - 1 */
    int64_t n_holds;
    int64_t first_hold_ms;     /* when the first of these holds came; 0 = none */
    int64_t passed_over_until; /* ms: no holds before this (the back-off after a release) */
    int64_t releases;          /* times its holds ran out since its last gang formed */
    bool reserving;            /* the reserving gang: its holds do not run out */
} GangWait;

/* One step reported in the current attempt and the answer it got. */
typedef struct StepSeen {
    int64_t step;
    uint8_t action; /* ReportAction */
} StepSeen;

/* pbt: how many times a member whose worker is lost goes back in line with
 * its steps (core_expire_leases) before a loss counts as a failure. */
#define CORE_PBT_LOST_RESUMES 3

/* How many times a trial whose worker is lost (its lease ran out) is
 * retried as a new attempt without counting against max_failures; a loss
 * beyond these counts as a failure (docs/api.md, "The trial object"). */
#define CORE_MAX_WORKER_LOSSES 3

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
    uint8_t stop_kind;                        /* StopKind: asked to stop while running */
    uint8_t stopped_by;                       /* StoppedBy: a stopped trial's */
    bool user_paused;                         /* paused by its user, not at a rung */
    int64_t preemptions;                      /* finishes "preempted" so far, >= 0 */
    int64_t worker_losses;                    /* attempts ended by a lost worker, retried apart from
                                                 max_failures (CORE_MAX_WORKER_LOSSES), >= 0 */
    uint8_t leased_from;                      /* TrialState it was last leased from */
    json_t *warnings, *info;                  /* owned, or NULL: bad @rung lines; reports' info */
    json_t *tags, *notes;                     /* owned, or NULL for [] and "": what people wrote
                                                 about it (PATCH /api/v1/trials/{id}, schema 015) */
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
    json_t *last; /* owned: last metrics, or NULL */
    Gang *gang;   /* owned: the members of a gang trial's current or last attempt, or NULL */
    /* pbt (docs/schedulers.md, "pbt"): the exploits of this trial, oldest
     * first ({"step", "donor", "donor_step", "from", "config", "time"}), or
     * NULL; and while a copy is owed, the donor's checkpoint to resume from
     * (from_trial 0: none) and the worker whose disk holds it. */
    json_t *lineage;
    int64_t from_trial, from_step, from_worker;
    bool config_changed; /* config and lineage are not the stored ones (an exploit): write them */
    bool ckpt_wanted;    /* another worker would take it: the donor's worker uploads (memory) */
    int lost_resumes;    /* pbt: times its worker was lost and it went back in line (memory) */
    /* pb2: the milestone whose explore it waits for, paused (its fit runs on
     * the proposer thread: core_take_explores), stored in resume_from; 0: none. */
    int64_t explore_at;
    json_t *gang_json; /* owned: gang as stored (tokens included), or NULL; follows gang */
    StepSeen *seen;    /* owned: steps of this attempt, ascending */
    size_t n_seen, cap_seen;
    /* Intrusive lists: the experiment's pending queue, or the core's running list. */
    struct Trial *prev, *next;
    bool dirty;        /* queued for a store write */
    bool stored;       /* has a row in the store (else: insert it) */
    bool meta_changed; /* tags or notes are not the stored ones: write them */
    bool releasing;    /* terminal: queued for core_release */
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

/* A released trial on an experiment's Pareto front (several objectives):
 * its objective values from its last report (docs/api.md, "Several
 * objectives"). */
typedef struct ParetoRef {
    int64_t trial_id;
    double loss[SPEC_MAX_OBJECTIVES]; /* sign-adjusted: lower is better */
    json_t *config;                   /* owned: the trial's config */
} ParetoRef;

/* The bayes history of released trials is capped at 4 x CORE_HIST_HALF
 * entries, pruned to the 2 x CORE_HIST_HALF that bayes's selection can
 * still take (sampler/bayes.h: with more than 2,000 observations the GP
 * sees the best 1,000 and the 1,000 most recent others): a long bayes
 * experiment holds at most 4,000 results, not one per trial. Not with
 * searcher.multi_fidelity, whose rung records take their configs from it,
 * nor with the cmaes searcher, which replays every result;
 * a retry-failed, which takes entries out, may leave a little less than
 * the selection would have seen. tpe gets the same history (its bad set
 * then loses its oldest members: docs/searchers.md, "TPE"). */
#define CORE_HIST_HALF 1000

/* A released trial's result, for the searcher (bayes only). */
typedef struct HistEntry {
    int64_t number;
    BayesObservation obs; /* core_trial_observation's; its config owned */
} HistEntry;

/* The counters of the rules that end an experiment (docs/api.md, "The
 * experiment object"), stored with it as JSON (core_health_json). */
#define CORE_HEALTH_KEYS 16  /* metric keys remembered for the metric_missing error */
#define CORE_HEALTH_ERRORS 8 /* distinct trial errors counted */
#define CORE_HEALTH_ERROR_LEN 200
typedef struct ErrorCount {
    char text[CORE_HEALTH_ERROR_LEN + 1]; /* the error's first line */
    int64_t n;
} ErrorCount;
typedef struct ExpHealth {
    bool metric_seen;        /* some report carried the metric */
    int64_t ended_reporting; /* trials that reported and ended while !metric_seen */
    json_t *keys;            /* owned array: what those trials reported instead */
    ErrorCount errors[CORE_HEALTH_ERRORS];
    int n_errors;
    bool has_best_finished; /* the best of the finished trials, by best_scope */
    double best_finished;
    int64_t since_better; /* finished trials since it last improved (patience) */
} ExpHealth;

typedef struct Experiment {
    int64_t id;
    Spec spec; /* owned */
    ExpState state;
    EndReason ended_reason;
    char *error; /* owned: why it failed, or NULL */
    ExpHealth health;
    int64_t created_at, ended_at;
    int64_t owner_id; /* who submitted it (users.id; 0: bootstrap admin; -1: none, schema < 13) */
    char *owner;      /* owned: that user's name, or NULL */
    /* The trials in memory by number (core_exp_trial): trials[i] is number
     * trials_base + i, NULL once released. A window over the live numbers,
     * not over history: its dead prefix is dropped as trials are released,
     * so a long experiment holds a slot per trial in flight, not per trial
     * it ran (docs/architecture.md, "What lives in memory"). */
    Trial **trials;
    int64_t trials_base, trials_lo; /* trials_lo: index before which every slot is NULL */
    int64_t cap_trials;
    int64_t n_trials; /* trials created so far: the next trial's number */
    int64_t counts[TRIAL__COUNT];
    TrialList pending;      /* pending trials, ascending queue_pos: those put back
                               at the front (latest first), then new ones by number */
    int64_t proposing;      /* configs asked of the proposer, not yet added */
    BestRef best_done;      /* the best of its released trials */
    ParetoRef *pareto_done; /* several objectives: the front of its released trials */
    int64_t n_pareto_done, cap_pareto_done;
    HistEntry *hist; /* bayes: results of released trials */
    int64_t n_hist, cap_hist;
    struct Asha *asha;            /* owned: the scheduler's rung records */
    struct Pbt *pbt;              /* owned: pbt's records (spec.is_pbt), or NULL */
    struct PbtExplore *explores;  /* owned: pb2's explores not yet taken, oldest first */
    const struct SchedOps *sched; /* its scheduler's hooks (core_internal.h) */
    struct Warm *warm;            /* owned: warm_start's trials (warm.h), or NULL */
    bool hold_endgame; /* no idle hook now (its scheduler is mid-answer: promotions first) */
    double pass;       /* leases given, each 1/share, since it last started running: fair share
                          over time (stride scheduling) when running counts tie; memory only */
    GangWait gang;     /* spec.nodes > 1: the holds gathering for its next gang */
    bool dirty;
    bool stored;
    bool meta_changed; /* spec.tags or spec.notes are not the stored ones: write them */
    bool releasing;    /* ended: queued for core_release */
} Experiment;

typedef struct Worker {
    int64_t id;
    char *name, *hostname; /* owned */
    json_t *gpus;          /* owned: as registered */
    int64_t cpus;
    int64_t registered_at, last_seen_at;
    json_t *heartbeat; /* owned: last heartbeat body, or NULL */
    json_t *labels;    /* owned: {"key": "value"} as registered, or NULL */
    /* owned: {"environments": [...], "containers": [...]} as registered
     * (docs/api.md, "The worker object"), or NULL: what code it can run. */
    json_t *caps;
    int64_t owner_id;  /* the user whose token registered it, as Experiment's (auth.h) */
    int64_t n_running; /* trials it holds now (a gang trial counts on each member) */
    /* From its last lease request (memory only): whether it may join a
     * gang, and the trainable types it runs; for the reserving gang's count
     * of workers that could ever take it. */
    bool gang_capable;
    unsigned lease_trainables;
    int64_t held_for; /* id of the experiment whose next gang holds it; 0 = none */
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

/* Why a trial went back in line as a new attempt (attempt + 1). */
typedef enum {
    RETRY_FAILED,      /* its attempt failed (a finish "failed", a gang member's failure) */
    RETRY_WORKER_LOST, /* its lease ran out (core_expire_leases) */
    RETRY_USER,        /* POST .../retry-failed */
    RETRY__COUNT
} RetryReason;

/* Names as /metrics shows them: "failed", "worker_lost", "user". */
const char *retry_reason_name(RetryReason r);

/* Events counted where they happen, for GET /metrics (docs/api.md, "GET
 * /metrics"). Memory only: each rungd starts them at 0. */
typedef struct CoreCounters {
    int64_t leases_granted;        /* core_lease handed out a trial (a gang: one per member) */
    int64_t leases_undelivered;    /* core_unlease took one back: its reply never arrived */
    int64_t leases_expired;        /* running trials whose lease ran out (a gang counts once) */
    int64_t retries[RETRY__COUNT]; /* trials put back in line as a new attempt */
} CoreCounters;

Core *core_new(int64_t lease_ms);
void core_free(Core *core);

/* Lookups of what is in memory: borrowed pointers, NULL when absent
 * (never created, or released: ask the store). */
Trial *core_exp_trial(const Experiment *e, int64_t number);
Experiment *core_experiment(Core *core, int64_t id);
Trial *core_trial(Core *core, int64_t id);
Worker *core_worker(Core *core, int64_t id);

/* Adds a new experiment with the next id; steals *spec (zeroed). */
Experiment *core_experiment_add(Core *core, Spec *spec, int64_t now);
/* Adds the next trial of exp (number exp->n_trials) with config (stolen). */
Trial *core_trial_add(Core *core, Experiment *exp, json_t *config, int64_t now);
/* How many configs exp still needs beyond its pending queue and what was asked. */
int64_t core_proposals_wanted(const Experiment *exp, int64_t target);
/* Counts n more configs asked of the proposer for exp (negative: n came
 * back, or were dropped); never below 0. */
void core_proposing_add(Experiment *exp, int64_t n);
/* pb2 (docs/schedulers.md, "pb2"): the explores its members wait for,
 * oldest first, handed over (the caller frees them, sched_explore.h), of
 * every experiment in memory; the engine has them computed on the proposer
 * thread. NULL: none. */
struct PbtExplore *core_take_explores(Core *core);
/* An explore computed (config stolen; NULL: explore on this thread): the
 * member resumes with it from the donor's checkpoint, its lineage telling
 * the exploit. Dropped (false) when trial_id no longer waits for the
 * explore of that milestone (stopped, canceled, reloaded meanwhile). */
bool core_pbt_explored(Core *core, int64_t trial_id, int64_t milestone, json_t *config,
                       int64_t now);
/* Gives a new exp the warm_start trials read for it (stolen; warm.h). */
void core_experiment_set_warm(Experiment *exp, struct Warm *warm);

/* Registers a worker; name and hostname are copied, gpus stolen. */
Worker *core_worker_add(Core *core, const char *name, const char *hostname, json_t *gpus,
                        int64_t cpus, int64_t now);
/* Sets w's labels (stolen; NULL for none). */
void core_worker_set_labels(Core *core, Worker *w, json_t *labels);
/* Sets w's environments and container runtimes (stolen; NULL for none). */
void core_worker_set_caps(Core *core, Worker *w, json_t *caps);

/* A lease request: what the worker has free. */
typedef struct LeaseOffer {
    int64_t gpus[CORE_MAX_LEASE_GPUS];
    int64_t n_gpus;
    int64_t cpus;
    unsigned trainables; /* SPEC_TRAINABLE_BIT mask of what the worker runs */
    bool no_downloads;   /* its cache is full: nothing with a working_dir */
    /* Where the other members of a gang reach this worker: both set, or
     * NULL and 0 for a request that may not join a gang (docs/api.md,
     * "Gangs"). advertise_addr is borrowed, 1..CORE_MAX_ADDR bytes. */
    const char *advertise_addr;
    int64_t port; /* 1..65535: free on it now, the rendezvous port of a rank 0 */
} LeaseOffer;

/* Leases a pending trial that fits the offer (resources, the trainable
 * types the worker runs, the experiment's worker_selector against w's
 * labels) with the given token: of the running experiments that have one,
 * the highest priority first, then the one with the fewest running trials
 * for its share, then the oldest. Returns the trial (now running) or NULL.
 *
 * Gangs (docs/api.md, "Gangs"): a worker that is a member of a gang that
 * formed without it gets that trial first; a worker held for a gang gets
 * nothing else (NULL) while the hold lasts; a gang-capable offer whose best
 * experiment is a gang's holds the worker (NULL), and the hold that makes
 * `nodes` forms the gang: the trial runs, and this worker gets it. Each
 * member's rank and grant: core_gang_member. */
Trial *core_lease(Core *core, Worker *w, const LeaseOffer *offer, const char *token, int64_t now);

/* The member of t's current gang that worker_id is (*rank set), or NULL
 * for a 1-node trial or a worker that is none of its members. */
const GangMember *core_gang_member(const Trial *t, int64_t worker_id, int64_t *rank);

/* Whether a gang formed since the last call (the engine then serves the
 * parked lease requests again, so every member gets its place). */
bool core_take_gang_formed(Core *core);

/* Takes back a lease whose reply never reached the worker: the trial is
 * pending again, first in line, with the same attempt. Returns whether it
 * was taken back (false when the token is no longer the trial's). */
bool core_unlease(Core *core, Trial *t, const char *token, int64_t now);

/* A report on a trial. RUNG_E_LEASE_LOST for a token that is not the
 * trial's; *action gets the answer, the same for a repeated step. metrics is
 * borrowed (copied when stored). A gang trial takes reports from rank 0
 * only: another member's token is RUNG_E_CONFLICT; rank 0 of an attempt
 * that ended gets ACTION_STOP. core_report_info: a report's info (core_report.c). */
int core_report(Core *core, Trial *t, const char *token, int64_t step, json_t *metrics, int64_t now,
                ReportAction *action, RungError *err);
int core_report_info(Core *core, Trial *t, const char *token, const json_t *info, int64_t now,
                     ReportAction *action, RungError *err);

/* A trial's end as the worker tells it: completed, or failed with error
 * (may be NULL). Idempotent on terminal trials. In a gang, rank 0's finish
 * decides; another member's `completed` only marks it done, its failure
 * ends the attempt for all (retried as one); a member of an attempt that
 * ended changes nothing. */
int core_finish(Core *core, Trial *t, const char *token, bool completed, const char *error,
                int64_t now, RungError *err);

/* Its worker gave t back (finish "preempted": other work wanted its GPU,
 * or the worker's hours ended): t waits at the front of its line in state
 * preempted, with the same attempt and preemptions + 1, and resumes from
 * its last reported step on the same worker while that worker is alive
 * (core_lease). A trial asked to stop becomes what it was asked instead.
 * Any member of a gang may give it back: the whole gang stops, and forms
 * again when the trial is leased. RUNG_E_LEASE_LOST for a token that is not
 * the trial's (a member's); idempotent once it is no longer running. */
int core_preempt(Core *core, Trial *t, const char *token, int64_t now, RungError *err);

/* A heartbeat from w listing the trials it runs; renews their leases and
 * returns (new reference) the array of ids it must stop. */
json_t *core_heartbeat(Core *core, Worker *w, const int64_t *ids, int64_t n_ids, json_t *heartbeat,
                       int64_t now);

/* Cancels exp: pending trials canceled, running ones asked to stop.
 * RUNG_E_CONFLICT when it already completed. */
int core_cancel(Core *core, Experiment *exp, int64_t now, RungError *err);

/* Pauses exp: nothing more is leased; with running_too, each running trial
 * is paused at its next report or heartbeat (paused_by user), to resume
 * from its checkpoint. Idempotent; RUNG_E_CONFLICT once exp ended. */
int core_pause(Core *core, Experiment *exp, bool running_too, int64_t now, RungError *err);
/* Resumes a paused exp: its user-paused trials go back in line first.
 * Idempotent on a running one; RUNG_E_CONFLICT once exp ended. */
int core_resume(Core *core, Experiment *exp, int64_t now, RungError *err);
/* PATCH: applies patch (spec_patch) to exp; raising num_samples of a
 * completed experiment makes it run again. RUNG_E_CONFLICT for a canceled
 * or failed one. */
int core_patch(Core *core, Experiment *exp, const json_t *patch, int64_t now, RungError *err);
/* The user stops t: a pending or paused trial at once, a running one at
 * its next report or heartbeat (stopped_by user). RUNG_E_CONFLICT when t
 * has ended. */
int core_stop_trial(Core *core, Trial *t, int64_t now, RungError *err);
/* Puts exp's failed trials back in line (attempt + 1); an ended exp runs
 * again. RUNG_E_CONFLICT for a canceled one. *n gets how many. Every
 * trial of exp must be in memory (store_revive_experiment). */
int core_retry_failed(Core *core, Experiment *exp, int64_t now, int64_t *n, RungError *err);
/* Whether a running or paused experiment warm-starts from exp_id. */
bool core_warm_source_in_use(const Core *core, int64_t exp_id);
/* Whether an experiment in memory names the blob sha256_hex (64 lowercase
 * hex digits) as its trainable.working_dir (blobs.h; ended experiments are
 * the store's: store_read_blob_referenced). */
bool core_blob_referenced(const Core *core, const char *sha256_hex);
/* After the store deleted an ended experiment that is not in memory:
 * takes its trials (counts by state) and itself out of the totals. */
void core_forget_deleted(Core *core, ExpState state, const int64_t trial_counts[TRIAL__COUNT]);
/* The clock's rules: ends running experiments whose stop.time_budget_s ran
 * out, and the gangs' rules (docs/api.md, "Gangs"): holds that ran out are
 * released and their gang passed over for gang_wait_s; holds of workers
 * silent too long are dropped; the reserving gang is chosen, or released
 * when too few alive workers could ever take it. Returns how many
 * experiments ended. */
int64_t core_tick(Core *core, int64_t now);

/* Fails every running trial whose lease ran out ("worker lost") and retries
 * it when attempts remain. Returns how many expired. */
int64_t core_expire_leases(Core *core, int64_t now);

/* Marks w seen at now (kept in memory; written with the worker's next change). */
void core_worker_seen(Core *core, Worker *w, int64_t now);

/* The one rule for a worker being alive: seen within a lease length (a
 * worker heartbeats several times per lease). */
bool core_worker_alive(const Core *core, const Worker *w, int64_t now);

/* The best value any trial of exp reported (config borrowed). With
 * several objectives there is none (out->has is false); with constraints
 * only feasible trials count. */
void core_experiment_best(const Experiment *exp, BestRef *out);

/* Several objectives: the experiment's Pareto front, a new array (free with
 * json_decref) of {"trial_id", "values": {name: value}, "config"}, by the
 * first objective, best first; NULL for one objective. Only feasible
 * trials whose last report carries every objective count. */
json_t *core_experiment_pareto(const Experiment *exp);

/* Several objectives: {name: value} of the objectives in a report
 * (borrowed), a new object; NULL when one is missing or there is one. */
json_t *core_values_json(const Spec *spec, const json_t *metrics);

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

/* A trial's error in one line: its first line, and its last non-empty line
 * when it has more (the worker writes "exit status 1" and then the
 * program's stderr, whose last line usually names the cause: the
 * exception). Cut to size - 1 bytes of whole UTF-8 characters. */
#define CORE_ERROR_SUMMARY_LEN 200
void core_error_summary(const char *error, char *out, size_t size);

/* Who submitted e, or registered w (docs/api.md, "Users, roles and
 * tokens"): set before they are first stored, and at load. */
void core_set_owner(Experiment *e, int64_t owner_id, const char *owner);
/* Replaces the tags and notes of an experiment or trial by those given
 * (stolen; NULL: keep), as PATCH does or store_load reads them, and queues
 * the write (core NULL: loading, nothing to write). */
void core_set_exp_meta(Core *core, Experiment *e, json_t *tags, json_t *notes);
void core_set_trial_meta(Core *core, Trial *t, json_t *tags, json_t *notes);
void core_set_worker_owner(Worker *w, int64_t owner_id);
void core_set_lease_expiry(Trial *t, int64_t expires_ms);

/* Reading the core without reaching into it. */
int64_t core_n_experiments(const Core *core);          /* in memory, ascending id */
Experiment *core_experiment_at(Core *core, int64_t i); /* 0 <= i < core_n_experiments */
const int64_t *core_exp_counts(const Core *core);      /* [EXP__COUNT]: the whole store */
/* Whether a lease that found nothing might now succeed; _seen resets it. */
bool core_availability_changed(const Core *core);
void core_availability_seen(Core *core);
/* Ids of the running trials of a worker, or of an experiment (at most cap). */
int64_t core_worker_trials(const Core *core, int64_t worker_id, int64_t *ids, int64_t cap);
int64_t core_running_of(const Core *core, const Experiment *e, int64_t *ids, int64_t cap);

/* Hands the queued changes to the caller and clears the queue (the arrays
 * stay owned by the core; valid until the next core call). */
/* A donor's folder stored in rungd's data folder (docs/schedulers.md, "pbt";
 * schema 009): trial_id's folder holding its checkpoint of `step`. */
typedef struct CoreCheckpoint {
    int64_t trial_id, step;
    char sha256[65]; /* lowercase hex */
    int64_t size;    /* bytes */
    int64_t stored_at;
} CoreCheckpoint;

typedef struct CoreChanges {
    CoreCheckpoint *ckpts; /* stored since the last clear: rows to insert */
    int64_t n_ckpts;
    /* No longer needed since the last clear: rows to delete, and files to
     * remove once that is committed. */
    CoreCheckpoint *dropped_ckpts;
    int64_t n_dropped_ckpts;
    Experiment **exps;
    int64_t n_exps;
    Trial **trials;
    int64_t n_trials;
    Worker **workers;
    int64_t n_workers;
    NewReport *reports;
    int64_t n_reports;
    CoreEvent *events; /* to append to the event log */
    int64_t n_events;
} CoreChanges;
void core_changes(Core *core, CoreChanges *out);
void core_changes_clear(Core *core);
/* The store wrote the object's row: from now on it updates the row (and a
 * trial's pbt config and lineage are written). */
void core_experiment_stored(Experiment *e);
void core_trial_stored(Trial *t);
void core_worker_stored(Worker *w);

/* A trial's result for a searcher: its last reported objective,
 * sign-adjusted so that lower is better, or +INFINITY for a trial that
 * failed. False when it has none yet (pending or running) or was canceled
 * before reporting. */
bool core_trial_result(const Trial *t, double *loss);
/* The same for the bayes searcher with several objectives and constraints:
 * o's loss and more (each objective, +INFINITY for all when the trial
 * failed) and cons (spec_constraint_values of the last report; NaN for a
 * failed trial); o's config is t's, borrowed. False as core_trial_result. */
bool core_trial_observation(const Trial *t, BayesObservation *o);

/* pbt's copies through rungd. Whether a pending trial waits for trial_id's
 * checkpoint of step (so an upload of it is wanted); the stored one, or
 * NULL; a stored one joins (the store writes its row with the next
 * commit, core_changes); at load, one read back. */
bool core_checkpoint_owed(const Core *core, int64_t trial_id, int64_t step);
const CoreCheckpoint *core_checkpoint(const Core *core, int64_t trial_id, int64_t step);
void core_checkpoint_stored(Core *core, const CoreCheckpoint *c);
void core_load_checkpoint(Core *core, const CoreCheckpoint *c);

/* An upload asked of a worker (core_uploads_for): trial_id's folder for
 * its checkpoint of step, accepted from worker_id only, with token
 * (docs/api.md, "PBT's checkpoints through rungd"). Memory only: after a
 * restart the next heartbeat reply asks again with a fresh token. */
typedef struct CoreUpload {
    int64_t trial_id, step, worker_id;
    char token[CORE_TOKEN_LEN + 1];
    bool listed; /* scratch of core_uploads_for */
} CoreUpload;

/* Writes a fresh random token (engine_token). */
typedef void (*CoreTokenFn)(char out[CORE_TOKEN_LEN + 1]);

/* The uploads worker w is asked for in its heartbeat reply: a JSON array
 * of {"trial", "step", "token"} (new reference). An upload keeps its token
 * while it is owed; a new one gets fresh_token's. */
json_t *core_uploads_for(Core *core, const Worker *w, CoreTokenFn fresh_token);

/* Whether worker_id may upload trial_id's checkpoint of step with token:
 * 0; RUNG_E_CONFLICT when no trial waits for it; RUNG_E_FORBIDDEN (field
 * "worker" or "upload_token") when that worker was not asked for it or the
 * token is not the upload's. */
int core_upload_check(const Core *core, int64_t trial_id, int64_t step, int64_t worker_id,
                      const char *token, RungError *err);

/* Whether worker_id may download trial_id's checkpoint of step: 0 when
 * lease_token is its lease of a running trial that resumes from that
 * checkpoint; else RUNG_E_FORBIDDEN (field "worker" or "lease_token"). */
int core_download_check(const Core *core, int64_t trial_id, int64_t step, int64_t worker_id,
                        const char *lease_token, RungError *err);

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
/* Sets t's warnings (a new reference is taken); written when they changed. */
void core_trial_set_warnings(Core *core, Trial *t, json_t *warnings);
/* The worker whose lease token on t this is: t's worker, or a member of its
 * current gang; 0 for none. */
int64_t core_token_worker(const Trial *t, const char *token);
/* What worker_id sends about t (a heartbeat's or finish's log and warnings),
 * kept when it runs t: t's log_tail is its worker's (a gang's rank 0's);
 * its warnings are its worker's, or in a gang every member's together
 * (members_warnings). Borrowed; text and warnings may be NULL. */
void core_worker_log(Core *core, Trial *t, int64_t worker_id, const char *text);
void core_worker_warnings(Core *core, Trial *t, int64_t worker_id, json_t *warnings);

/* An experiment's health as stored (a new object), and read back. */
json_t *core_health_json(const Experiment *e);

/* Counts of trials by state across experiments (for /metrics). */
void core_trial_counts(const Core *core, int64_t counts[TRIAL__COUNT]);

/* The events counted since this Core was made (for /metrics); _set lets
 * the engine carry them over when it rebuilds the Core or undoes what a
 * refused write counted, so that they count what was committed. */
const CoreCounters *core_counters(const Core *core);
void core_set_counters(Core *core, const CoreCounters *c);
/* Trials waiting in the pending lines (pending and preempted) of the
 * running experiments: what workers could lease now (for /metrics). */
int64_t core_queue_len(const Core *core);
/* Workers in memory that are alive (core_worker_alive) and that are not
 * (for /metrics). */
void core_worker_counts(const Core *core, int64_t now, int64_t *alive, int64_t *gone);

/* Reads the objective from metrics: 1 with *v set, 0 when absent.
 * Non-finite values travel as the strings "NaN", "Infinity", "-Infinity". */
int core_objective(const Spec *spec, const json_t *metrics, double *v);

#endif
