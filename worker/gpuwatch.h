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
 * gpuwatch_hours_json). The watch's state is guarded by Worker.mu. */
#ifndef RUNG_WORKER_GPUWATCH_H
#define RUNG_WORKER_GPUWATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hours.h"
#include "spare.h"

/* Sampling period: a foreign process is seen, and its trial told to go,
 * within this (the issue asks for a preemption within 2 s). */
#define GPUWATCH_PERIOD_MS 500
/* NVML's per-process utilization samples looked at: a little more than a
 * period, so no sample falls between two looks. */
#define GPUWATCH_UTIL_WINDOW_MS 1000

struct Worker;
typedef struct GpuWatch GpuWatch;

/* The watch of w's offered GPUs (with w->gpus, NVML, for their processes)
 * and of w->hours; NULL when there is nothing to watch (no NVML and no
 * --hours) or no memory. Free with gpuwatch_free once its thread ended. */
GpuWatch *gpuwatch_new(struct Worker *w);
void gpuwatch_free(GpuWatch *gw);

/* One look now, before the lease thread starts: no GPU is offered before
 * the watch has seen whether someone else uses it. */
void gpuwatch_look(struct Worker *w);
/* The thread body; arg is the Worker (w->watch set). Returns once
 * w->exiting is set. */
void *gpuwatch_main(void *arg);

/* Milliseconds until --hours allows leasing (0: now, or no --hours).
 * Called by the lease thread; reads only the clock and w->hours. */
int64_t gpuwatch_closed_ms(const struct Worker *w);
/* Seconds the current allowed stretch has left (INT32_MAX: no end). */
int64_t gpuwatch_open_left_s(const struct Worker *w);

/* Adds a GPU's "state", "trial_id" and, when known, "foreign_mb" and
 * "foreign_util" to each item of gpus (the heartbeat's array of
 * {"index": ...} objects). Locks Worker.mu itself. */
void gpuwatch_annotate(struct Worker *w, json_t *gpus);
/* Adds "hours" (the --hours text or null) and "next_lease_at" (an RFC 3339
 * time, or null when leasing is allowed now or always) to a heartbeat. */
void gpuwatch_hours_json(const struct Worker *w, json_t *body);

#endif
