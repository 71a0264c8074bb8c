/* rung-worker's start-up for a team's code and for a batch job (setup.h). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blobcache.h"
#include "container.h"
#include "envs.h"
#include "labels.h"
#include "log.h"
#include "setup.h"

int setup_take_repeated(int *argc, char **argv, const Option *options, int n_options,
                        const int *repeatable, Repeated *rep)
{
    int out = 1;
    int counts[SETUP_N_REPEATED] = {0};
    for (size_t k = 0; k < SETUP_N_REPEATED; k++)
        if ((rep->values[k] = calloc((size_t)*argc + 1, sizeof(char *))) == NULL) {
            fprintf(stderr, "rung-worker: out of memory\n");
            return -1;
        }
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        }
        int which = -1;
        const char *value = NULL;
        for (size_t k = 0; k < SETUP_N_REPEATED && which < 0; k++) {
            const char *name = options[repeatable[k]].name;
            size_t n = strlen(name);
            if (strncmp(argv[i], "--", 2) != 0 || strncmp(argv[i] + 2, name, n) != 0)
                continue;
            if (argv[i][2 + n] == '\0') {
                if (i + 1 >= *argc) {
                    fprintf(stderr, "rung-worker: --%s needs a value\n", name);
                    return -1;
                }
                which = (int)k;
                value = argv[++i];
            } else if (argv[i][2 + n] == '=') {
                which = (int)k;
                value = argv[i] + 3 + n;
            }
        }
        if (which >= 0) {
            rep->values[which][counts[which]++] = (char *)value;
            continue;
        }
        argv[out++] = argv[i];
        /* The value of another option is never taken for a repeatable one. */
        if (strncmp(argv[i], "--", 2) == 0 && strchr(argv[i], '=') == NULL && i + 1 < *argc) {
            for (int k = 0; k < n_options; k++)
                if (options[k].kind != OPT_FLAG && strcmp(argv[i] + 2, options[k].name) == 0) {
                    argv[out++] = argv[++i];
                    break;
                }
        }
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

int setup_labels_envs(WorkerState *w, json_t *labels, Repeated *rep)
{
    char why[512];
    for (char **v = rep->values[0]; *v; v++)
        if (labels_add(labels, *v, why, sizeof why) != 0) {
            fprintf(stderr, "rung-worker: --label: %s\n", why);
            return -1;
        }
    for (char **v = rep->values[1]; *v; v++)
        if (envs_add(&w->envs, *v, why, sizeof why) != 0) {
            fprintf(stderr, "rung-worker: --env: %s\n", why);
            return -1;
        }
    static const char *const known[] = {"podman", "docker", "apptainer"};
    for (char **v = rep->values[2]; *v; v++) {
        bool ok = false;
        for (size_t k = 0; k < 3; k++)
            ok = ok || strcmp(*v, known[k]) == 0;
        if (!ok) {
            fprintf(stderr,
                    "rung-worker: --container-runtime must be podman, docker or apptainer, not "
                    "'%s'\n",
                    *v);
            return -1;
        }
    }
    if (rep->values[2][0] == NULL) {
        /* Those found in PATH (container.h). */
        char **found = container_detect();
        if (found != NULL) {
            free(rep->values[2]);
            rep->values[2] = found; /* kept for the worker's life */
        }
    }
    w->container_runtimes = rep->values[2];
    w->container_args = rep->values[3];
    w->container_run_args = rep->values[4];
    return 0;
}

void setup_cache(WorkerState *w, const char *given, int64_t mb, const char *pip_index)
{
    char dir[PATH_MAX + 8], why[512];
    snprintf(dir, sizeof dir, "%s", given ? given : "");
    if (given == NULL)
        snprintf(dir, sizeof dir, "%s/cache", w->workdir);
    w->cache_ok = blobcache_open(&w->cache, dir, mb << 20, why, sizeof why) == 0;
    if (!w->cache_ok)
        LOG_WARN("no cache for working directories (%s): trials that have one are not taken", why);
    w->pip_index = pip_index;
    envs_find_rung(&w->envs, w->exe_dir);
    char names[1024];
    envs_names_text(&w->envs, names, sizeof names);
    LOG_INFO("environments: %s; cache %s (%" PRId64 " MiB); rung package for trials: %s", names,
             w->cache_ok ? w->cache.dir : "none", mb,
             w->envs.rung_python[0] ? w->envs.rung_python : "none found");
}

void setup_register_fields(const WorkerState *w, json_t *body)
{
    if (w->envs.n > 0)
        json_object_set_new(body, "environments", envs_names_json(&w->envs));
    if (w->container_runtimes != NULL && w->container_runtimes[0] != NULL) {
        json_t *containers = json_array();
        for (char **r = w->container_runtimes; *r; r++)
            json_array_append_new(containers, json_string(*r));
        json_object_set_new(body, "containers", containers);
    }
}

bool setup_register_refused(const WorkerState *w, json_t *body, const ClientReply *reply)
{
    (void)w;
    if (reply->status != 400 || strstr(reply->error, "unknown field") == NULL ||
        (strstr(reply->error, "environments") == NULL &&
         strstr(reply->error, "containers") == NULL))
        return false;
    LOG_WARN("registration: %s; this rungd predates environments and containers: registering "
             "without them (it cannot route trials by environment)",
             reply->error);
    json_object_del(body, "environments");
    json_object_del(body, "containers");
    return true;
}

static const char *getenv_text(const char *name)
{
    return getenv(name);
}

int setup_batchjob(BatchJob *job, const char *on_sigterm, const char *deadline,
                   bool *term_gives_back, int64_t *deadline_s)
{
    char why[400];
    *deadline_s = 0;
    if (batchjob_read(job, getenv_text, why, sizeof why) != 0) {
        fprintf(stderr, "rung-worker: %s\n", why);
        return -1;
    }
    const char *term = on_sigterm ? on_sigterm : job->slurm ? "give-back" : "finish";
    if (strcmp(term, "give-back") != 0 && strcmp(term, "finish") != 0) {
        fprintf(stderr, "rung-worker: --on-sigterm is '%s': give finish or give-back\n", term);
        return -1;
    }
    *term_gives_back = strcmp(term, "give-back") == 0;
    if (deadline == NULL && !job->slurm)
        return 0;
    if (deadline == NULL || strcmp(deadline, "auto") == 0) {
        if (!job->slurm) {
            fprintf(stderr, "rung-worker: --deadline auto: not in a Slurm job (no SLURM_JOB_ID)\n");
            return -1;
        }
        *deadline_s = batchjob_slurm_end(job->job_id);
        if (*deadline_s < 0) {
            LOG_WARN("Slurm job %s: squeue does not say when it ends; no --deadline (trials run "
                     "until the job is cancelled)",
                     job->job_id);
            *deadline_s = 0;
        }
        return 0;
    }
    if (batchjob_parse_time(deadline, (int64_t)time(NULL), deadline_s, why, sizeof why) != 0) {
        fprintf(stderr, "rung-worker: --deadline %s\n", why);
        return -1;
    }
    return 0;
}
