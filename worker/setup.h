/* Parts of rung-worker's start-up (main.c) for a team's code
 * (docs/workers.md, "Running a team's code"): the repeatable options,
 * environments and container runtimes, the cache, and what registration
 * tells rungd of them. */
#ifndef RUNG_WORKER_SETUP_H
#define RUNG_WORKER_SETUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "batchjob.h"
#include "client.h"
#include "options.h"
#include "worker.h"

/* --label, --env, --container-runtime, --container-arg, --container-run-arg */
#define SETUP_N_REPEATED 5

typedef struct {
    char **values[SETUP_N_REPEATED]; /* NULL-terminated, pointing into argv */
} Repeated;

/* Takes every option named by repeatable (indices into options, in
 * Repeated's order), given as --NAME VALUE or --NAME=VALUE, off argv (argc
 * shrinks) into rep; the value of another option is never taken for one.
 * 0, or -1 after a message. */
int setup_take_repeated(int *argc, char **argv, const Option *options, int n_options,
                        const int *repeatable, Repeated *rep);

/* Checks the labels into labels and the environments into w->envs; the
 * container runtimes (given, else those of podman, docker and apptainer
 * found in PATH) and their arguments into w. 0, or -1 after a message. */
int setup_labels_envs(WorkerState *w, json_t *labels, Repeated *rep);

/* The cache of working directories and virtualenvs in dir (NULL:
 * <workdir>/cache), of at most mb MiB; --pip-index; the worker's rung
 * package. A cache that cannot be made is warned about, and the worker
 * goes on without it. */
void setup_cache(WorkerState *w, const char *dir, int64_t mb, const char *pip_index);

/* Adds "environments" and "containers" to a registration body, when the
 * worker has any. */
void setup_register_fields(const WorkerState *w, json_t *body);

/* Whether reply refuses those fields (a rungd from before them): then
 * they are taken off body, with a warning, to register again without. */
bool setup_register_refused(const WorkerState *w, json_t *body, const ClientReply *reply);

/* A worker in a batch job (batchjob.h; docs/workers.md, "On Slurm"):
 * reads the job's environment into job (main takes the defaults of --gpus
 * and --cpu-slots from it), --on-sigterm into *term_gives_back (default:
 * give-back in a Slurm job), and --deadline into *deadline_s, seconds since
 * the epoch (default in a Slurm job: squeue's end of it; 0: none). 0, or
 * -1 after a message. */
int setup_batchjob(BatchJob *job, const char *on_sigterm, const char *deadline,
                   bool *term_gives_back, int64_t *deadline_s);

#endif
