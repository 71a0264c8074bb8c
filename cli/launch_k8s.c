/* `rung launch k8s`: the launcher's Jobs through kubectl (the user's
 * kubeconfig, or the pod's service account inside a cluster); see
 * launch.h. The objects are cli/k8s.c's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "launch.h"

int launch_k8s_list(const Launch *l, SlurmCount *jobs, LaunchQueued *queued)
{
    static char out[1 << 22];
    char selector[160];
    snprintf(selector, sizeof selector, "rung.dev/launcher=%s", l->prefix);
    char *argv[] = {"kubectl", "get",    "jobs", "-n",   (char *)l->kjob.namespace_,
                    "-l",      selector, "-o",   "json", NULL};
    int rc = launch_run(argv, NULL, out, sizeof out);
    json_error_t jerr;
    json_t *doc = rc == 0 ? json_loads(out, 0, &jerr) : NULL;
    if (doc == NULL) {
        fprintf(stderr, "rung launch: kubectl get jobs failed (exit status %d)\n", rc);
        return -1;
    }
    int n = 0;
    size_t i;
    json_t *job;
    json_array_foreach(json_object_get(doc, "items"), i, job) {
        const json_t *status = json_object_get(job, "status");
        int64_t active = json_integer_value(json_object_get(status, "active"));
        const json_t *ready = json_object_get(status, "ready");
        const char *name =
            json_string_value(json_object_get(json_object_get(job, "metadata"), "name"));
        const char *shape_text = json_string_value(
            json_object_get(json_object_get(json_object_get(job, "metadata"), "labels"),
                            "rung.dev/shape"));
        char full[160];
        SlurmShape s;
        snprintf(full, sizeof full, "%s-%s", l->prefix, shape_text ? shape_text : "");
        if (active == 0 || name == NULL || !slurm_parse_job_name(l->prefix, full, &s))
            continue; /* ended, or not one of ours */
        /* A pod that is ready holds its node; one that is not is still
         * waiting for one (or for its image). A cluster that does not say
         * (status.ready is Kubernetes 1.24's) has its Jobs counted as
         * running: never cancelled. */
        launch_count(jobs, queued, &n, &s, !json_is_integer(ready) || json_integer_value(ready) > 0,
                     name);
    }
    json_decref(doc);
    return n;
}

int launch_k8s_submit(const Launch *l, const SlurmShape *s, int64_t waiting)
{
    /* Each Job's own name: the shape's, with the time and a count. */
    static unsigned count;
    char base[128], name[160];
    slurm_job_name(l->prefix, s, base, sizeof base);
    snprintf(name, sizeof name, "%s-%lld-%u", base, (long long)time(NULL), ++count);
    K8sJob j = l->kjob;
    j.shape = *s;
    j.name = name;
    json_t *objects = k8s_objects(&j);
    char *text = objects ? json_dumps(objects, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(objects);
    if (text == NULL)
        return -1;
    if (l->dry_run) {
        printf("%s\n", text);
        free(text);
        return 0;
    }
    char out[1024];
    char *argv[] = {"kubectl", "create", "-f", "-", NULL};
    int rc = launch_run(argv, text, out, sizeof out);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "rung launch: kubectl create failed (exit status %d): %s\n", rc, out);
        return -1;
    }
    printf("created Job %s for %" PRId64 " waiting trial(s)\n", name, waiting);
    fflush(stdout);
    return 0;
}

int launch_k8s_cancel(const Launch *l, const char *name)
{
    char out[256];
    char *argv[] = {"kubectl",    "delete",       "job", "-n", (char *)l->kjob.namespace_,
                    (char *)name, "--wait=false", NULL};
    return launch_run(argv, NULL, out, sizeof out) == 0 ? 0 : -1;
}
