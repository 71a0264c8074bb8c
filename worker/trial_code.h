/* A trial's code (docs/workers.md, "Running a team's code"): its working
 * directory (trainable.working_dir, a blob of rungd's: blobcache.h),
 * unpacked for it alone into <workdir>/code/<trial id>-XXXXXX/wd (beside
 * its trial folder, not in it, so that pbt's copies and its artifacts do
 * not carry the tree) and removed when it ends; the folder its argv runs
 * in (trainable.cwd inside the tree); the interpreter of its environment
 * (trainable.environment) or of the virtualenv of the tree's
 * requirements.txt (envs.h), for a bare python or python3 in its argv; and
 * the worker's rung package on PYTHONPATH when that interpreter has none.
 * Part of the trial's supervisor (trial_supervise.c). */
#ifndef RUNG_WORKER_TRIAL_CODE_H
#define RUNG_WORKER_TRIAL_CODE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "env.h"
#include "trial.h"

#define TRIALCODE_DIR "code" /* <workdir>/code: the trees of running trials */

typedef struct TrialCode {
    char holder[PATH_MAX]; /* <workdir>/code/<id>-XXXXXX, "" none; removed at the end */
    int holder_fd;         /* its shared flock while the trial runs, or -1 */
    char tree[PATH_MAX];   /* holder/wd: the working directory, "" none */
    char cwd[PATH_MAX];    /* where the argv runs when there is a tree, else "" */
    char python[PATH_MAX]; /* the interpreter for a bare python/python3, "" none */
    int venv_fd;           /* a virtualenv's shared flock (envs.h), or -1 */
} TrialCode;

void trialcode_init(TrialCode *tc);

/* Reads t's trainable: an environment this worker lacks, a malformed
 * working_dir or cwd fail; the working directory is fetched (cache or
 * rungd), unpacked and its requirements.txt installed. log_fd (stderr.log)
 * gets a line for each step that took time. 0, or -1 with why. */
int trialcode_prepare(WTrial *t, TrialCode *tc, int log_fd, char *why, size_t why_size);

/* argv[0] (a bare python or python3) becomes tc->python when there is
 * one, and env's PYTHONPATH gets the worker's rung package at its end
 * unless the interpreter can import rung by itself; with
 * trainable.wandb_compat, the package's wandb stand-in at its start.
 * 0, or -1 with why. */
int trialcode_apply(WTrial *t, TrialCode *tc, char **argv, Env *env, char *why, size_t why_size);

/* Whether t's trainable runs in a container (trainable.container). */
bool trialcode_has_container(const WTrial *t);

/* For a container trial: *argv (a NULL-terminated malloc'd array, as
 * argv_expand makes it) is replaced by the runtime's command line that
 * runs it inside the image (container.h), with the trial folder
 * (trial_dir), the working directory's tree and cwd mounted, the
 * variables of envp set for the trial (those not inherited unchanged from
 * the worker) and its GPUs. The runtime: the trainable's, when this worker
 * offers it, else the first offered. 0, or -1 with why. */
int trialcode_container(WTrial *t, TrialCode *tc, const char *trial_dir, const char *cwd,
                        char ***argv, char *const *envp, char *why, size_t why_size);

/* Removes the tree and lets go of the virtualenv. */
void trialcode_end(TrialCode *tc);

/* At the worker's start: removes the trees under <workdir>/code that no
 * running trial holds (a worker killed before it removed them). */
void trialcode_sweep(const char *workdir);

#endif
