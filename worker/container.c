/* The argv of a container run (container.h). */
#include "container.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char **v;
    size_t n, cap;
    bool failed;
} Args;

static void add(Args *a, const char *s)
{
    if (a->failed)
        return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 32;
        char **v = realloc(a->v, cap * sizeof *v);
        if (v == NULL) {
            a->failed = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    if ((a->v[a->n] = strdup(s)) == NULL) {
        a->failed = true;
        return;
    }
    a->v[++a->n] = NULL;
}

static void add2(Args *a, const char *flag, const char *value)
{
    add(a, flag);
    add(a, value);
}

void container_argv_free(char **argv)
{
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++)
        free(argv[i]);
    free(argv);
}

/* "src:dst" for a path mounted at the same place. */
static void add_bind(Args *a, const char *flag, const char *path)
{
    size_t len = 2 * strlen(path) + 2;
    char *m = malloc(len);
    if (m == NULL) {
        a->failed = true;
        return;
    }
    snprintf(m, len, "%s:%s", path, path);
    add2(a, flag, m);
    free(m);
}

char **container_argv(const json_t *container, const ContainerCtx *ctx, char *const *argv,
                      char *why, size_t why_size)
{
    const char *image = json_string_value(json_object_get(container, "image"));
    if (image == NULL || image[0] == '\0') {
        snprintf(why, why_size, "trainable.container.image: required");
        return NULL;
    }
    const char *rt = ctx->runtime;
    bool apptainer = rt != NULL && strcmp(rt, "apptainer") == 0;
    if (rt == NULL || (!apptainer && strcmp(rt, "podman") != 0 && strcmp(rt, "docker") != 0)) {
        snprintf(why, why_size,
                 "no container runtime for this trial: this worker offers none of podman, "
                 "docker, apptainer (rung-worker --container-runtime)");
        return NULL;
    }
    Args a = {0};
    const char *bind = apptainer ? "--bind" : "-v";
    add(&a, rt);
    for (size_t i = 0; ctx->global_args && ctx->global_args[i]; i++)
        add(&a, ctx->global_args[i]);
    add(&a, apptainer ? "exec" : "run");
    if (!apptainer) {
        add(&a, "--rm");
        add(&a, "--init");
    }
    for (size_t i = 0; ctx->run_args && ctx->run_args[i]; i++)
        add(&a, ctx->run_args[i]);
    add_bind(&a, bind, ctx->trial_dir);
    if (ctx->work_dir != NULL)
        add_bind(&a, bind, ctx->work_dir);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(container, "mounts"), i, m)
        add2(&a, bind, json_string_value(m));
    if (ctx->cwd != NULL)
        add2(&a, apptainer ? "--pwd" : "-w", ctx->cwd);
    /* The devices: CDI names, renumbered inside; apptainer sees them all. */
    char visible[16 * 24] = "";
    for (int g = 0, o = 0; g < ctx->n_gpus; g++) {
        char dev[48];
        snprintf(dev, sizeof dev, "nvidia.com/gpu=%" PRId64, ctx->gpus[g]);
        if (!apptainer)
            add2(&a, "--device", dev);
        o += snprintf(visible + o, sizeof visible - (size_t)o, "%s%" PRId64, g ? "," : "",
                      apptainer ? ctx->gpus[g] : (int64_t)g);
    }
    if (apptainer && ctx->n_gpus > 0)
        add(&a, "--nv");
    for (size_t k = 0; ctx->env && ctx->env[k]; k++) {
        if (strncmp(ctx->env[k], "CUDA_VISIBLE_DEVICES=", 21) == 0)
            continue;
        add2(&a, apptainer ? "--env" : "-e", ctx->env[k]);
    }
    char cvd[sizeof visible + 32];
    snprintf(cvd, sizeof cvd, "CUDA_VISIBLE_DEVICES=%s", visible);
    add2(&a, apptainer ? "--env" : "-e", cvd);
    json_array_foreach(json_object_get(container, "options"), i, m)
        add(&a, json_string_value(m));
    add(&a, image);
    for (size_t k = 0; argv && argv[k]; k++)
        add(&a, argv[k]);
    if (a.failed) {
        container_argv_free(a.v);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    return a.v;
}

/* Whether name is an executable file in a folder of PATH. */
static bool on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        return false;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char full[4096];
        if (n > 0 &&
            (size_t)snprintf(full, sizeof full, "%.*s/%s", (int)n, p, name) < sizeof full &&
            access(full, X_OK) == 0)
            return true;
        p += n;
        if (*p == ':')
            p++;
    }
    return false;
}

char **container_detect(void)
{
    static const char *const names[] = {"podman", "docker", "apptainer"};
    Args a = {0};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (on_path(names[i]))
            add(&a, names[i]);
    if (a.v == NULL)
        a.v = calloc(1, sizeof *a.v);
    return a.v;
}
