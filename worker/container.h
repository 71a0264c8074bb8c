/* Running a trial's program inside a container image (docs/api.md,
 * "trainable": container; docs/workers.md, "Containers"): the argv that
 * asks podman, docker or apptainer to run it, with the trial's folder and
 * its working directory mounted at the same paths, the trial's own
 * variables, and its GPUs. Pure: strings in, strings out; the supervisor
 * (trial_supervise.c) runs the result as it runs any program, so a
 * pause, a stop or a preemption reaches the program through the runtime
 * (`--init` and the runtime's signal proxy forward SIGTERM; `--rm` leaves
 * no container behind). */
#ifndef RUNG_WORKER_CONTAINER_H
#define RUNG_WORKER_CONTAINER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ContainerCtx {
    const char *runtime;      /* podman, docker or apptainer: the spec's, or the first offered */
    char *const *global_args; /* --container-arg: before `run`; NULL-terminated, may be NULL */
    char *const *run_args;    /* --container-run-arg: after `run`; NULL-terminated, may be NULL */
    const char *trial_dir;    /* mounted read-write at the same path */
    const char *work_dir;     /* the trial's copy of its working directory, or NULL */
    const char *cwd;          /* where the program starts (a path inside the container) */
    char *const *env;         /* NAME=VALUE: the trial's own variables, NULL-terminated */
    const int64_t *gpus;      /* the trial's GPU indices, n_gpus of them */
    int n_gpus;
} ContainerCtx;

/* The argv (malloc'd, NULL-terminated; free with container_argv_free) that
 * runs argv in container->image ({"image", "runtime", "mounts", "options"},
 * as docs/api.md says), or NULL with why. With podman or docker each GPU is
 * passed as its CDI device nvidia.com/gpu=N and CUDA_VISIBLE_DEVICES inside
 * becomes 0..n-1 (the devices are renumbered); apptainer gets --nv and the
 * indices as they are. */
char **container_argv(const json_t *container, const ContainerCtx *ctx, char *const *argv,
                      char *why, size_t why_size);
void container_argv_free(char **argv);

/* The runtimes found on PATH, in the order podman, docker, apptainer
 * (malloc'd names, NULL-terminated; free with container_argv_free). */
char **container_detect(void);

#endif
