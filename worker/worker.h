/* The worker's shared state and its two long-lived threads.
 *
 * Threads of rung-worker, each with its own curl handle where it talks HTTP:
 *
 *   main        options, registration, then waits for the end (main.c)
 *   signals     sigwait for SIGINT/SIGTERM: 1st = drain, 2nd = kill (main.c)
 *   lease       while something is free and we are not stopping: one lease
 *               long poll offering what is free (lease_wait_s when nothing
 *               runs, 1 s while the offer is partial); a granted trial is
 *               marked busy in the slots and handed to a new supervisor;
 *               nothing outside --hours
 *   GPU watch   every 0.5 s: which GPUs are spare, which trials give way to
 *               other people's processes or to --hours (gpuwatch.h)
 *   heartbeat   every heartbeat_s: the held trials and GPU usage; kills
 *               the trials the server lists under "stop", queues the
 *               uploads it lists under "upload"
 *   uploader    packs and PUTs the trial folders rungd asks for (pbt's
 *               checkpoints for other workers: ckptxfer.h)
 *   per trial   a supervisor (pipes, report lines, exit, kill escalation)
 *               and a sender (reports in order, then finish): trial.h
 *
 * Locking: WorkerState.mu guards the slots, the trial list and the flags below
 * it; a WTrial's own mutex guards its queue and process state. Order:
 * WorkerState.mu before WTrial.mu, never the other way round. Stop level, hard
 * deadline and exiting are atomics as well, so that curl's progress
 * callbacks can read them without the lock to abort a request in flight. */
#ifndef RUNG_WORKER_WORKER_H
#define RUNG_WORKER_WORKER_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "blobcache.h"
#include "envs.h"
#include "gang.h"
#include "gpus.h"
#include "gpuwatch.h"
#include "hours.h"
#include "prune.h"
#include "slots.h"
#include "spare.h"
#include "trial.h"

#define WORKER_HARD_STOP_S 5 /* after a 2nd signal: how long undelivered results may take */

typedef enum { STOP_NONE = 0, STOP_DRAIN = 1, STOP_HARD = 2 } StopLevel;

/* This rung-worker's shared state: named WorkerState apart from rungd's
 * Worker of server/core.h, the record of a registered worker. */
typedef struct WorkerState {
    /* Set before the threads start; read-only afterwards. */
    const char *server; /* base URL */
    const char *token;  /* bearer token, or NULL */
    char name[256];     /* as registered */
    char hostname[256];
    int64_t id;             /* worker id from the server */
    double heartbeat_s;     /* from the server, > 0 */
    double lease_s;         /* from the server, > 0 */
    int lease_wait_s;       /* long poll of one lease request, 1..30 */
    bool once;              /* --once */
    int64_t exit_idle_s;    /* --exit-idle-s: exit after this long without a trial; 0: never */
    int64_t max_trials;     /* --max-trials: trials taken at most; 0: no limit */
    char workdir[PATH_MAX]; /* absolute; trials in <workdir>/trials/<id> */
    char exe_dir[PATH_MAX]; /* folder of this binary, where rung-train lives */
    Gpus *gpus;             /* NVML, or NULL; for names and usage */
    json_t *labels;         /* --label key=value: an object, sent at registration */
    int64_t keep_trials;    /* --keep-trials: folders of ended trials kept (prune.h) */
    /* Spare GPUs and working hours (gpuwatch.h; docs/workers.md). */
    SpareParams spare;       /* --idle-s, --foreign-mem-mb, --foreign-util */
    bool yield;              /* --yield auto: trials give way to other people's work */
    const Hours *hours;      /* --hours, or NULL: any time */
    const char *hours_text;  /* --hours as given, or NULL */
    struct GpuWatch *watch;  /* the GPU watch, or NULL when nothing is watched */
    GpuWatchHost watch_host; /* what the watch is lent (worker_watch_new) */
    /* Gangs (gang.h, advertise.h): every lease request offers this address
     * and a port found free for it, held bound while the request is out. */
    char advertise_addr[GANG_ADDR_MAX + 1]; /* --advertise-addr, or the route's to the server */
    int gang_port_lo, gang_port_hi;         /* --gang-ports; 0, 0: any free port */
    /* pbt: uploads of trial folders rungd asks for in heartbeat replies
     * (ckptxfer.h), on their own thread; NULL when it could not start. */
    struct Uploader *uploader;
    /* A team's code (trial_code.h): --env's environments, the cache of
     * working directories and virtualenvs (--cache-dir, --cache-mb; unused
     * when cache_ok is false), --pip-index (NULL: offline), and the
     * container runtimes offered (--container-runtime, or those found in
     * PATH) with --container-arg and --container-run-arg (NULL-terminated). */
    Envs envs;
    BlobCache cache;
    bool cache_ok;
    const char *pip_index;
    char **container_runtimes, **container_args, **container_run_args;
    /* What each trial is lent (trial.h): filled by the lease thread before
     * its first request. */
    TrialHooks trial_hooks;

    pthread_mutex_t mu;    /* guards what follows */
    pthread_cond_t cond;   /* broadcast when any of it changes (CLOCK_MONOTONIC) */
    Slots slots;           /* what is free */
    struct WTrial *trials; /* held trials (leased, not yet delivered), a list */
    int n_trials;
    bool lease_done;   /* the lease thread has ended */
    PruneEntry *ended; /* trials this worker ran that ended, whose folders remain */
    size_t n_ended, cap_ended;
    int pruning; /* supervisors removing trial folders (main waits for them) */

    atomic_int stop;               /* StopLevel */
    atomic_llong hard_deadline_ns; /* STOP_HARD: give up delivering after this (monotonic) */
    atomic_bool exiting;           /* main is ending: heartbeats stop */
} WorkerState;

/* Sets up the lock, the condition and the slots (gpus: offered indices). */
int worker_init(WorkerState *w, const int *gpus, int n_gpus, int64_t cpus);
void worker_close(WorkerState *w);

/* Thread bodies; arg is the WorkerState. */
void *worker_lease_main(void *arg);
void *worker_heartbeat_main(void *arg);

/* Called by the signal thread: STOP_DRAIN starts no new lease request (the
 * one in flight ends by itself, at most lease_wait_s, and what it brings is
 * run) and lets running trials end; STOP_HARD aborts the lease request,
 * kills the trials and bounds delivery by WORKER_HARD_STOP_S. */
void worker_stop(WorkerState *w, StopLevel level);
/* Whether the stop level is at least level (lock-free). */
bool worker_stopping(WorkerState *w, StopLevel level);
/* Whether a hard stop's delivery deadline has passed: give up sending. */
bool worker_gave_up(WorkerState *w);

/* Waits until the lease thread ended and no trial is held, or a hard stop's
 * deadline passed. Returns how many trials are still held. */
int worker_wait_idle(WorkerState *w);
/* SIGKILLs the groups of every held trial (last resort before exiting). */
void worker_kill_all_now(WorkerState *w);

/* Fills w->watch_host from w (its GPUs, slots, --hours, --yield and the
 * spare thresholds set) and makes the GPU watch (gpuwatch_new): NULL when
 * there is nothing to watch. */
GpuWatch *worker_watch_new(WorkerState *w);

#endif
