/* `rung launch k8s`'s objects, without I/O (cli/launch.c creates them with
 * kubectl; docs/workers.md, "On Kubernetes"): for a shape of waiting
 * trials (cli/slurm.h's SlurmShape: GPUs and CPUs per node, nodes), a
 * batch/v1 Job whose pod runs rung-worker with the shape's resources,
 * which leaves once idle (--exit-idle-s) and gives its trial back on the
 * pod's SIGTERM (--on-sigterm give-back). A gang of N nodes is an Indexed
 * Job of N pods started together, each a worker that advertises its stable
 * name under a headless Service, so that the gang's members reach node 0
 * (docs/api.md, "Gangs"). */
#ifndef RUNG_CLI_K8S_H
#define RUNG_CLI_K8S_H

#include <jansson.h>
#include <stdint.h>

#include "slurm.h"

typedef struct K8sJob {
    SlurmShape shape;
    const char *name;         /* the Job's (and a gang's Service's) name */
    const char *namespace_;   /* metadata.namespace */
    const char *image;        /* a container image with rung-worker on its PATH */
    const char *server;       /* rungd's address(es), for the workers */
    const char *token_secret; /* a Secret with the workers' token under key "token", or NULL */
    const char *prefix;       /* the launcher's name: label rung.dev/launcher */
    int64_t exit_idle_s;      /* the workers' --exit-idle-s */
    int64_t grace_s;          /* terminationGracePeriodSeconds: a trial's checkpoint on SIGTERM */
} K8sJob;

/* The objects to create for j, as a v1 List (a Job, and for a gang its
 * headless Service first): a new reference, NULL when out of memory. */
json_t *k8s_objects(const K8sJob *j);

#endif
