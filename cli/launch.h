/* What `rung launch`'s two launchers share (cli/launch.c: the command, the
 * passes, Slurm's squeue, sbatch and scancel; cli/launch_k8s.c:
 * Kubernetes's kubectl). Each lists its own jobs by shape, submits one, and
 * cancels a queued one; cli/slurm.c's plan decides for both. */
#ifndef RUNG_CLI_LAUNCH_H
#define RUNG_CLI_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s.h"
#include "slurm.h"

#define LAUNCH_QUEUED_MAX 64 /* queued jobs of one shape that may be cancelled */

/* A launcher's queued jobs of each shape (Slurm job ids, Kubernetes Job
 * names), oldest first. */
typedef struct LaunchQueued {
    char id[LAUNCH_QUEUED_MAX][128];
    int n;
} LaunchQueued;

typedef struct Launch {
    bool k8s;
    SlurmJob job; /* Slurm: the job script's parts */
    K8sJob kjob;  /* Kubernetes: the Job's parts */
    const char *prefix;
    int64_t max_jobs, interval_s;
    bool once, dry_run;
} Launch;

/* Runs argv (PATH searched) with input on its stdin (NULL: none) and its
 * stdout into out (size bytes, NUL-terminated; stderr passes through):
 * the exit status, or -1 when it could not run. */
int launch_run(char *const argv[], const char *input, char *out, size_t size);

/* Counts one of the launcher's jobs of shape s in jobs[0..*n) (a shape
 * not there yet is added, up to SLURM_SHAPES_MAX), and a queued one's id
 * in queued. */
void launch_count(SlurmCount *jobs, LaunchQueued *queued, int *n, const SlurmShape *s, bool running,
                  const char *id);

/* cli/launch_k8s.c: the launcher's Jobs from kubectl, by shape (a Job with
 * a ready pod runs; one whose pods are not ready yet is queued): the
 * number of shapes, or -1. Creates one Job of shape s: 0 or -1. Deletes a
 * queued Job: 0 or -1. */
int launch_k8s_list(const Launch *l, SlurmCount *jobs, LaunchQueued *queued);
int launch_k8s_submit(const Launch *l, const SlurmShape *s, int64_t waiting);
int launch_k8s_cancel(const Launch *l, const char *name);

#endif
