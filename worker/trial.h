/* One leased trial attempt on this worker: its process, its report queue
 * and its delivery.
 *
 * Two threads per trial:
 *   - the supervisor makes <workdir>/trials/<id> (trialdir.h), starts the process
 *     (runner.h), polls its stdout, stderr and exit; stdout lines go to
 *     stdout.log and through reportline_parse, reports into the queue,
 *     invalid report lines into the warnings (warnings.h);
 *     stderr lines go to stderr.log and a bounded tail (tail.h); it enforces
 *     timeout_s and escalates a kill from SIGTERM to SIGKILL after
 *     TRIAL_KILL_GRACE_S; when the process has ended and its pipes are
 *     drained it frees the trial's GPUs and CPUs, records the outcome, joins
 *     the sender, and hands the trial back to the worker;
 *   - the sender POSTs the queued reports in order, each retried until
 *     acknowledged (client.h), acts on the answer ("stop", 409 lease_lost),
 *     and, once the outcome is known and the queue is empty, POSTs finish.
 *
 * Kill reasons decide the finish: a timeout or a shutdown fails the trial
 * with that reason; a lost lease sends nothing more; a stop from the
 * scheduler or the server ends it with its exit status (the server has
 * already ended it and ignores the finish); a preemption (gpuwatch.h)
 * finishes it as "preempted", whatever its exit, to run again from its
 * checkpoint; a report line with "done": true finishes it as "completed",
 * whatever its exit after the SIGTERM (docs/api.md, "The line"). */
#ifndef RUNG_WORKER_TRIAL_H
#define RUNG_WORKER_TRIAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gang.h"
#include "runner.h"
#include "slots.h"
#include "tail.h"
#include "warnings.h"

#define TRIAL_KILL_GRACE_S 10 /* SIGTERM, then SIGKILL this much later (docs/api.md) */
#define TRIAL_QUEUE_MAX                                                                            \
    10000                   /* reports waiting; beyond it stdout is not read                       \
                               (the program blocks on its pipe: nothing is lost) */
#define TRIAL_TOKEN_MAX 128 /* lease token bytes; the server's are 32 */
#define TRIAL_WHY_MAX 768   /* a reason the trial could not run (paths included) */

struct WTrial;

/* What the worker lends each of its trials (worker.c fills it before the
 * first lease; it outlives them all): the facts the trial's threads need
 * and their calls back into the worker. The trial's files name no WorkerState
 * and include no worker.h: worker.c includes trial.h, never the other way
 * round. */
typedef struct TrialHooks {
    const char *server;   /* rungd's base URL */
    const char *token;    /* bearer token, or NULL */
    int64_t worker_id;    /* as registered */
    const char *hostname; /* for the logs' header */
    const char *workdir;  /* trial folders in <workdir>/trials/<id> */
    const char *exe_dir;  /* the folder of rung-worker, where rung-train lives */
    /* A team's code (trial_code.h): the cache of working directories and
     * virtualenvs (NULL: none could be made), the environments, and
     * --pip-index (NULL: offline). */
    struct BlobCache *cache;
    struct Envs *envs;
    const char *pip_index;
    /* Containers (container.h): the runtimes offered, first the default,
     * and --container-arg and --container-run-arg; NULL-terminated. */
    char *const *container_runtimes;
    char *const *container_args;
    char *const *container_run_args;
    void *ctx; /* passed to each call (the WorkerState) */
    /* Whether a hard stop's delivery deadline passed: give up sending.
     * Lock-free: curl's progress callbacks call it. */
    bool (*gave_up)(void *ctx);
    /* Whether another held trial with t's id (its previous lease on this
     * worker) still has processes in its group. */
    bool (*older_running)(void *ctx, const struct WTrial *t);
    /* t's process has ended: its GPUs and CPUs are free again (the trial
     * stays held, and heartbeats renew its lease, until its results are
     * delivered). Idempotent. */
    void (*released)(void *ctx, struct WTrial *t);
    /* The supervisor is done with t (folder: the trial's folder was made);
     * t is freed after this returns. */
    void (*done)(void *ctx, struct WTrial *t, bool folder);
} TrialHooks;

typedef enum {
    KILL_NONE,
    KILL_STOP,       /* a report was answered "stop" */
    KILL_SERVER,     /* a heartbeat listed the trial under "stop" */
    KILL_LEASE_LOST, /* 409 lease_lost: end it, tell nothing */
    KILL_TIMEOUT,    /* trainable.timeout_s passed */
    KILL_SHUTDOWN,   /* the worker is stopping hard */
    KILL_LEFTOVER,   /* the program exited; what it left in its group is ended */
    KILL_PREEMPT,    /* its GPU is wanted, or --hours ended: finished as preempted */
    KILL_DONE,       /* it reported "done": true (Ray Tune's word): finished as completed */
} KillReason;

typedef struct Report {
    struct Report *next;
    int64_t step;
    json_t *metrics; /* owned; may be empty when info is not */
    json_t *info;    /* owned: the values that are not numbers, or NULL for none */
} Report;

/* A trial as this worker runs it: named WTrial (and its functions wtrial_)
 * apart from rungd's Trial of server/core.h, the trial's record. */
typedef struct WTrial {
    /* Set by wtrial_new; read-only afterwards. */
    const TrialHooks *hooks; /* borrowed; outlives the trial */
    int64_t id, experiment_id, attempt;
    int64_t resume_step; /* promoted trial: its checkpoint is at this step; 0 = fresh */
    int64_t keep_every;  /* pbt: keep checkpoints of multiples of it (0: no such rule) */
    int64_t from_trial;  /* pbt: copy this trial's folder into this one's first; 0 = none */
    int64_t from_step;   /* pbt: the step of that trial's checkpoint (resume_step when the
                            lease reply leaves it out) */
    /* pbt, the donor ran on another worker: its checkpoint is stored in rungd
     * and downloaded (ckptxfer.h) instead of copied. from_sha256 is "" and
     * from_size -1 when the lease reply's are malformed (the download is then
     * not tried, and the trial's stderr.log says why). */
    bool from_rungd;
    char from_sha256[65]; /* 64 lowercase hex digits */
    int64_t from_size;    /* bytes of the tar */
    char lease_token[TRIAL_TOKEN_MAX + 1];
    json_t *config;               /* owned */
    json_t *trainable;            /* owned; json null when the experiment has none */
    int64_t gpus[SLOTS_MAX_GPUS]; /* granted GPU indices */
    int n_gpus;
    int64_t cpus;                /* granted CPUs */
    bool holds_slots;            /* under WorkerState.mu: the grant is taken from the slots */
    char prefail[TRIAL_WHY_MAX]; /* non-empty: do not run; fail with this */
    /* Set by the lease thread before wtrial_start (gang.h): its place in a
     * gang, or the gang of one of a 1-node trial; a rank > 0 sends no
     * reports. port_fd holds the port this worker offered bound until the
     * program starts (rank 0 and 1-node trials), then the supervisor
     * closes it; -1 when there is none. */
    GangInfo gang;
    int port_fd;

    struct WTrial *prev, *next; /* the worker's list, under its lock */

    pthread_mutex_t mu;  /* guards what follows */
    pthread_cond_t cond; /* the sender waits here for reports or the outcome */
    Report *head, *tail; /* queue, oldest first */
    int64_t queued;
    int64_t reports_sent; /* acknowledged */
    bool outcome_known;   /* process ended and drained: completed/error set */
    bool completed;
    char *error;               /* owned: the finish error, NULL when completed */
    bool stop_received;        /* "stop": later reports are dropped */
    bool abandoned;            /* lease lost: nothing more is sent */
    KillReason kill_reason;    /* the first reason a kill was asked for */
    int64_t kill_at_ns;        /* when SIGTERM was asked (monotonic), 0 = never */
    bool term_sent, kill_sent; /* SIGTERM / SIGKILL went to the group */
    Runner runner;             /* pid 0 until started */
    bool group_gone;           /* leader reaped and nothing of the group left */
    int wake_fd;               /* eventfd: wakes the supervisor's poll */
    Tail log;                  /* last lines of stdout (not reports) and stderr, for
                                  the dashboard: sent with heartbeats */
    bool log_changed;          /* since the last heartbeat took it */
    Warnings warnings;         /* invalid @rung lines: sent with heartbeats and the finish */
    bool paused;               /* the finish's reply says the trial is paused or
                                  preempted (a resume will want its folder) */
    bool preempted;            /* outcome: given back (KILL_PREEMPT), not failed */
} WTrial;

/* The log's last lines when they changed since the last call (new string,
 * free it), else NULL. Called by the heartbeat thread. */
char *wtrial_take_log(WTrial *t);

/* The trial's warnings object when new invalid report lines came since
 * the last call (new object), else NULL. Called by the heartbeat thread. */
json_t *wtrial_take_warnings(WTrial *t);

/* Reads a lease reply's "trial" object (borrowed). NULL with why when it
 * lacks an id or a lease token (then it cannot even be finished); other
 * defects make a trial whose prefail says what is wrong. */
WTrial *wtrial_new(const TrialHooks *hooks, const json_t *leased, char *why, size_t why_size);
/* Frees t; its threads must have ended. NULL is fine. */
void wtrial_free(WTrial *t);

/* Starts the supervisor (detached). 0, or -1 when no thread could be made
 * (then t is still the caller's). */
int wtrial_start(WTrial *t);

/* Asks for the trial's process group to end: SIGTERM now (or as soon as
 * it starts), SIGKILL TRIAL_KILL_GRACE_S later if anything is left. Safe
 * from any thread, any number of times; the first reason is kept. Returns
 * whether this call was the first. */
bool wtrial_kill(WTrial *t, KillReason reason);
/* SIGKILL to the group now, if it is still there. */
void wtrial_kill_now(WTrial *t);

#endif
