/* The worker in a batch job (docs/workers.md, "On Slurm"): what the job's
 * environment says of its CPUs, GPUs and end, read without side effects
 * (the environment comes through a function, so that tests hand in their
 * own), and the times --deadline takes.
 *
 * Slurm sets SLURM_JOB_ID in every job; SLURM_CPUS_ON_NODE, the CPUs the
 * job holds on this node; SLURM_JOB_GPUS, the GPUs it holds as the node
 * numbers them (NVML's indices; with --gres=gpu:N), and CUDA_VISIBLE_DEVICES
 * for its programs. A worker started in a job offers exactly those, so that
 * it never runs trials on what other jobs hold. */
#ifndef RUNG_WORKER_BATCHJOB_H
#define RUNG_WORKER_BATCHJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slots.h"

typedef struct BatchJob {
    bool slurm;      /* SLURM_JOB_ID is set */
    char job_id[32]; /* its value */
    int64_t cpus;    /* SLURM_CPUS_ON_NODE; 0: not said */
    int gpus[SLOTS_MAX_GPUS];
    int n_gpus;            /* from SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES (indices) */
    const char *gpus_from; /* the variable they came from, or NULL: the job holds none */
} BatchJob;

/* Fills j from the environment that get reads (getenv). 0, or -1 with why
 * naming the variable whose value is not what Slurm writes. */
int batchjob_read(BatchJob *j, const char *(*get)(const char *name), char *why, size_t size);

/* A point in time, seconds since the epoch, from text: an integer (seconds
 * since the epoch), "+N" with an optional unit s, m or h (from now_s), or
 * YYYY-MM-DDTHH:MM[:SS] in local time as squeue prints it, or with a
 * trailing Z for UTC. 0, or -1 with why. */
int batchjob_parse_time(const char *text, int64_t now_s, int64_t *out, char *why, size_t size);

/* The end of Slurm job job_id, seconds since the epoch, as squeue says
 * (`squeue -h -j ID -o %e`); -1 when squeue is missing, fails or prints no
 * time (a job without a time limit prints "Unknown" or "NONE"). */
int64_t batchjob_slurm_end(const char *job_id);

#endif
