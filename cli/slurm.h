/* `rung launch slurm`'s decisions, without I/O (cli/launch.c does the
 * requests, squeue, sbatch and scancel; docs/workers.md, "On Slurm"):
 *
 * - what trials wait, by shape (GPUs and CPUs per node, nodes), from the
 *   running experiments that rungd lists: pending and preempted trials,
 *   as many as max_concurrent_trials still lets run, of command and
 *   builtin trainables (the ones workers run);
 * - how many jobs of each shape to submit, or to cancel while still
 *   queued, given the launcher's own jobs that squeue lists;
 * - the job script of a shape: one rung-worker per node of the allocation
 *   (srun for a gang's nodes), which leaves once idle (--exit-idle-s) and
 *   gives its trial back before the job's time runs out (the worker's own
 *   Slurm mode, worker/batchjob.h). */
#ifndef RUNG_CLI_SLURM_H
#define RUNG_CLI_SLURM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLURM_SHAPES_MAX 32 /* distinct shapes looked at in one pass */

typedef struct SlurmShape {
    int64_t gpus;  /* per node */
    int64_t cpus;  /* per node */
    int64_t nodes; /* 1, or a gang's */
} SlurmShape;

typedef struct SlurmCount {
    SlurmShape shape;
    int64_t n;       /* waiting trials, or jobs */
    int64_t running; /* jobs only: those squeue says run */
} SlurmCount;

/* The trials that wait, by shape, from GET /api/v1/experiments's items
 * (an array of experiment objects). Returns how many shapes (at most max). */
int slurm_waiting(const json_t *experiments, SlurmCount *out, int max);

/* A job's name for its shape, "PREFIX-g1-c4-n2" (sbatch --job-name), and
 * back; false when name is not one of PREFIX's. */
void slurm_job_name(const char *prefix, const SlurmShape *s, char *buf, size_t size);
bool slurm_parse_job_name(const char *prefix, const char *name, SlurmShape *s);

/* The plan of one pass: for each shape that waits, submit[i] jobs more
 * (waiting trials not yet covered by a queued job of that shape, within
 * max_jobs in all); for each shape of jobs, cancel[j] of its queued jobs
 * that no waiting trial needs any more. waiting: what waited in this pass
 * and in the one before (the smaller of the two per shape: a trial that a
 * worker takes within one pass asks for no job). */
void slurm_plan(const SlurmCount *waiting, int n_waiting, const SlurmCount *jobs, int n_jobs,
                int64_t max_jobs, int64_t *submit, int64_t *cancel);

/* What a job script is made of (slurm_script). NULL strings: not said. */
typedef struct SlurmJob {
    SlurmShape shape;
    const char *name;         /* --job-name */
    const char *partition;    /* --partition */
    const char *account;      /* --account */
    const char *time;         /* --time, e.g. "01:00:00" */
    const char *output_dir;   /* the job's folder (--chdir): its log, the workers' folders */
    const char *worker;       /* the rung-worker program on the nodes */
    const char *server;       /* rungd's address(es), for the workers */
    const char *token_file;   /* the workers' --token-file */
    int64_t exit_idle_s;      /* the workers' --exit-idle-s */
    const char *const *extra; /* more #SBATCH options, NULL-terminated, or NULL */
} SlurmJob;

/* The sbatch script of j (malloc'ed); NULL when out of memory. Every value
 * is shell-quoted where the shell reads it. */
char *slurm_script(const SlurmJob *j);

#endif
