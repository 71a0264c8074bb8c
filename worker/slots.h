/* What a worker has free: its GPUs, one by one, and a count of CPU slots.
 * Pure bookkeeping; the caller locks.
 *
 * The worker offers everything free in each lease request; the server picks
 * the first resources_per_trial.gpu of the offered GPUs and the trial's CPUs.
 * What was granted is taken here until the trial's process ends, so GPUs are
 * split into slots of resources_per_trial.gpu without the worker knowing any
 * experiment's needs. */
#ifndef RUNG_WORKER_SLOTS_H
#define RUNG_WORKER_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

#define SLOTS_MAX_GPUS 64 /* as the server's CORE_MAX_LEASE_GPUS: no box has more */

typedef struct Slots {
    int n_gpus;                    /* GPUs offered, 0..SLOTS_MAX_GPUS */
    int gpu_index[SLOTS_MAX_GPUS]; /* device index (NVML/CUDA numbering), in offer order */
    bool gpu_busy[SLOTS_MAX_GPUS]; /* held by a running trial */
    bool gpu_used[SLOTS_MAX_GPUS]; /* not spare: someone else uses it (spare.h); not offered */
    int64_t cpus;                  /* CPU slots offered, >= 0 */
    int64_t cpus_busy;             /* held by running trials, 0..cpus */
} Slots;

/* Offers n_gpus GPUs (distinct indices; more than SLOTS_MAX_GPUS are cut)
 * and cpus CPU slots, all free. */
void slots_init(Slots *s, const int *gpus, int n_gpus, int64_t cpus);

/* Marks GPU index as used by someone else (not offered) or spare again;
 * an index not offered is ignored. Returns whether anything changed. */
bool slots_set_used(Slots *s, int index, bool used);
/* How many GPUs are marked used by someone else. */
int slots_n_used(const Slots *s);

/* Free spare GPU indices into out (at most max), in offer order; returns how many. */
int slots_free_gpus(const Slots *s, int *out, int max);
int64_t slots_free_cpus(const Slots *s);
/* Whether anything is free (a GPU only when spare too): a lease request is
 * worth making. */
bool slots_any_free(const Slots *s);

/* Takes a grant: the GPUs with these indices and cpus CPU slots. 0, or -1
 * (and nothing taken) when a GPU is unknown, busy or listed twice, or the
 * CPUs are not free. */
int slots_take(Slots *s, const int64_t *gpus, int n, int64_t cpus);
/* Gives back what slots_take took. */
void slots_release(Slots *s, const int64_t *gpus, int n, int64_t cpus);

#endif
