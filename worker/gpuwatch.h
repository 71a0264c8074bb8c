/* The GPU watch: which GPUs are spare, which trials must give theirs back,
 * and the working hours (docs/workers.md, "Spare GPUs").
 *
 * A thread of its own samples every GPUWATCH_PERIOD_MS: each offered GPU's
 * compute processes and their utilization (NVML, gpus.h), each process's
 * group against the running trials' groups, and the clock against --hours.
 * What it finds goes through spare.h's rules:
 *
 *   - a GPU that is not spare is marked used in the slots (slots.h), so the
 *     lease thread offers only spare ones;
 *   - with --yield auto, a trial on a GPU whose latest sample crossed the
 *     thresholds, and every trial once --hours ends, is stopped with
 *     KILL_PREEMPT (trial.h): SIGTERM, SIGKILL after the grace, and a
 *     finish with status "preempted", so rungd gives it back to run again
 *     from its checkpoint;
 *   - outside --hours the lease thread asks for nothing (gpuwatch_closed_ms).
 *
 * Heartbeats carry each GPU's state and the hours (gpuwatch_annotate,
 * gpuwatch_hours_json). The watch's state is guarded by the worker's lock.
 *
 * The watch names no WorkerState and no trial: what it reads of the worker and
 * what it asks of the trials go through a GpuWatchHost (worker.c fills it),
 * so worker.c includes this header and never the other way round. */
#ifndef RUNG_WORKER_GPUWATCH_H
#define RUNG_WORKER_GPUWATCH_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpus.h"
#include "hours.h"
#include "slots.h"
#include "spare.h"

/* Sampling period: a foreign process is seen, and its trial told to go,
 * within this (the issue asks for a preemption within 2 s). */
#define GPUWATCH_PERIOD_MS 500
/* NVML's per-process utilization samples looked at: a little more than a
 * period, so no sample falls between two looks. */
#define GPUWATCH_UTIL_WINDOW_MS 1000

/* What the worker lends the watch (it outlives the watch): its state, read
 * and written under *mu, and calls for what only the worker knows, its
 * trials. Each call is made with *mu held; ctx is passed to each. */
typedef struct GpuWatchHost {
    Gpus *gpus;               /* NVML, or NULL; for the processes on each GPU */
    Slots *slots;             /* the offered GPUs; which are used is set here */
    const SpareParams *spare; /* --idle-s, --foreign-mem-mb, --foreign-util */
    bool yield;               /* --yield auto: trials give way */
    const Hours *hours;       /* --hours, or NULL: any time */
    const char *hours_text;   /* --hours as given, or NULL */
    pthread_mutex_t *mu;      /* the worker's lock */
    pthread_cond_t *cond;     /* broadcast when GPUs become free to offer */
    atomic_bool *exiting;     /* the thread returns once it is set */
    void *ctx;
    /* The process groups of the running trials' programs into pgids (at
     * most max); how many. */
    int (*groups)(void *ctx, int64_t *pgids, int max);
    /* The id of the trial holding GPU index, or 0 when none does. */
    int64_t (*holder)(void *ctx, int index);
    /* Gives back, as preempted (KILL_PREEMPT, trial.h), the trial holding
     * GPU index, or with index -1 every trial holding resources; why is for
     * the log. */
    void (*give_back)(void *ctx, int index, const char *why);
    /* How many trials are held. */
    int (*n_trials)(void *ctx);
} GpuWatchHost;

typedef struct GpuWatch GpuWatch;

/* The watch of host's offered GPUs (host->gpus, NVML, for their processes)
 * and of host->hours; NULL when there is nothing to watch (no NVML and no
 * --hours) or no memory. Free with gpuwatch_free once its thread ended. */
GpuWatch *gpuwatch_new(const GpuWatchHost *host);
void gpuwatch_free(GpuWatch *gw);

/* One look now, before the lease thread starts: no GPU is offered before
 * the watch has seen whether someone else uses it. gw may be NULL. */
void gpuwatch_look(GpuWatch *gw);
/* The thread body; arg is the GpuWatch. Returns once *host->exiting is
 * set. */
void *gpuwatch_main(void *arg);

/* Milliseconds until hours allows leasing (0: now, or hours NULL).
 * Called by the lease thread; reads only the clock and hours. */
int64_t gpuwatch_closed_ms(const Hours *hours);
/* Seconds the current allowed stretch has left (INT32_MAX: no end). */
int64_t gpuwatch_open_left_s(const Hours *hours);

/* Adds a GPU's "state", "trial_id" and, when known, "foreign_mb" and
 * "foreign_util" to each item of gpus (the heartbeat's array of
 * {"index": ...} objects). gw is NULL when nothing is watched; host is
 * the worker's all the same. Locks *host->mu itself. */
void gpuwatch_annotate(const GpuWatch *gw, const GpuWatchHost *host, json_t *gpus);
/* Adds "hours" (hours_text or null) and "next_lease_at" (an RFC 3339
 * time, or null when leasing is allowed now or always) to a heartbeat. */
void gpuwatch_hours_json(const Hours *hours, const char *hours_text, json_t *body);

#endif
