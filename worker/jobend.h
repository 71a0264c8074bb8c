/* How a worker in a batch job ends (docs/workers.md, "On Slurm"): before
 * the job's time runs out, or when scancel sends SIGTERM, its trials are
 * given back as preemptions (each gets SIGTERM, may save a checkpoint, and
 * is leased again: docs/api.md, "Preempted trials") rather than run to
 * their end, which the job would not live to see. */
#ifndef RUNG_WORKER_JOBEND_H
#define RUNG_WORKER_JOBEND_H

#include <stdint.h>

#include "worker.h"

/* Gives every running trial back (SIGTERM now, SIGKILL after the grace;
 * each finishes "preempted") and stops leasing: the worker exits once they
 * are delivered. why is logged. Any thread. */
void jobend_give_back(WorkerState *w, const char *why);

/* Starts a thread that calls jobend_give_back margin_s seconds before
 * end_s (seconds since the epoch), or at once when that is past. It ends
 * with the worker (WorkerState.exiting). 0, or -1 when it cannot start. */
int jobend_start_deadline(WorkerState *w, int64_t end_s, int64_t margin_s);

#endif
