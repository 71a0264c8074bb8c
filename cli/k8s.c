/* `rung launch k8s`'s objects; see k8s.h. */
#include "k8s.h"

#include <stdio.h>
#include <string.h>

static json_t *labels(const K8sJob *j, const char *shape)
{
    /* The launcher lists its Jobs by these (kubectl get -l). */
    return json_pack("{s:s, s:s, s:s, s:s}", "app.kubernetes.io/name", "rung-worker",
                     "app.kubernetes.io/managed-by", "rung-launch", "rung.dev/launcher", j->prefix,
                     "rung.dev/shape", shape);
}

static json_t *env_var(const char *name, const char *value)
{
    return json_pack("{s:s, s:s}", "name", name, "value", value);
}

/* The worker's container: rung-worker with the shape's CPUs and GPUs,
 * requested and limited alike (a GPU cannot be shared), its token from the
 * Secret, and its address for a gang from the pod's own name. */
static json_t *container(const K8sJob *j)
{
    const SlurmShape *s = &j->shape;
    char cpus[32], gpus[32], idle[32];
    snprintf(cpus, sizeof cpus, "%lld", (long long)s->cpus);
    snprintf(gpus, sizeof gpus, "%lld", (long long)s->gpus);
    snprintf(idle, sizeof idle, "%lld", (long long)j->exit_idle_s);
    json_t *args = json_pack("[s, s, s, s, s, s, s, s, s, s]", "--exit-idle-s", idle,
                             "--on-sigterm", "give-back", "--cpu-slots", cpus, "--gpus",
                             s->gpus > 0 ? "auto" : "none", "--label", "k8s_job=$(RUNG_K8S_JOB)");
    json_t *env = json_array();
    json_array_append_new(env, env_var("RUNG_SERVER", j->server));
    json_array_append_new(env, env_var("RUNG_K8S_JOB", j->name));
    if (j->token_secret != NULL)
        json_array_append_new(env, json_pack("{s:s, s:{s:{s:s, s:s}}}", "name", "RUNG_TOKEN",
                                             "valueFrom", "secretKeyRef", "name", j->token_secret,
                                             "key", "token"));
    if (s->nodes > 1) {
        /* An Indexed Job's pod has the host name <job>-<index>, reached as
         * <job>-<index>.<service> under the Job's headless Service (its
         * subdomain). */
        json_array_append_new(
            env, json_pack("{s:s, s:{s:{s:s}}}", "name", "RUNG_NODE_INDEX", "valueFrom", "fieldRef",
                           "fieldPath",
                           "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
        char addr[300];
        snprintf(addr, sizeof addr, "%s-$(RUNG_NODE_INDEX).%s", j->name, j->name);
        json_array_append_new(args, json_string("--advertise-addr"));
        json_array_append_new(args, json_string(addr));
        /* Node 0's rendezvous port, the Service's. */
        json_array_append_new(args, json_string("--gang-ports"));
        json_array_append_new(args, json_string("29500"));
    }
    json_t *limits = json_pack("{s:s}", "cpu", cpus);
    json_t *requests = json_pack("{s:s}", "cpu", cpus);
    if (s->gpus > 0) {
        json_object_set_new(limits, "nvidia.com/gpu", json_string(gpus));
        json_object_set_new(requests, "nvidia.com/gpu", json_string(gpus));
    }
    return json_pack("{s:s, s:s, s:[s], s:o, s:o, s:{s:o, s:o}, s:s}", "name", "rung-worker",
                     "image", j->image, "command", "rung-worker", "args", args, "env", env,
                     "resources", "limits", limits, "requests", requests, "workingDir", "/tmp");
}

json_t *k8s_objects(const K8sJob *j)
{
    const SlurmShape *s = &j->shape;
    char shape[64];
    snprintf(shape, sizeof shape, "g%lld-c%lld-n%lld", (long long)s->gpus, (long long)s->cpus,
             (long long)s->nodes);
    json_t *pod_spec = json_pack("{s:s, s:I, s:[o]}", "restartPolicy", "Never",
                                 "terminationGracePeriodSeconds", (json_int_t)j->grace_s,
                                 "containers", container(j));
    json_t *job_spec = json_pack("{s:i, s:I, s:{s:{s:o}, s:o}}", "backoffLimit", 0,
                                 "ttlSecondsAfterFinished", (json_int_t)600, "template", "metadata",
                                 "labels", labels(j, shape), "spec", pod_spec);
    if (s->nodes > 1) {
        json_object_set_new(job_spec, "completionMode", json_string("Indexed"));
        json_object_set_new(job_spec, "completions", json_integer(s->nodes));
        json_object_set_new(job_spec, "parallelism", json_integer(s->nodes));
        json_object_set_new(pod_spec, "subdomain", json_string(j->name));
    }
    json_t *items = json_array();
    if (s->nodes > 1) {
        /* Headless: each pod's name resolves to its own address. */
        json_array_append_new(
            items, json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s, s:b, s:{s:s}, s:[{s:s, s:i}]}}",
                             "apiVersion", "v1", "kind", "Service", "metadata", "name", j->name,
                             "namespace", j->namespace_, "labels", labels(j, shape), "spec",
                             "clusterIP", "None", "publishNotReadyAddresses", 1, "selector",
                             "job-name", j->name, "ports", "name", "gang", "port", 29500));
    }
    json_array_append_new(items,
                          json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:o}", "apiVersion", "batch/v1",
                                    "kind", "Job", "metadata", "name", j->name, "namespace",
                                    j->namespace_, "labels", labels(j, shape), "spec", job_spec));
    return json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
}
