/* A trial's working directory, environment and rung package (trial_code.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argv.h"
#include "blobcache.h"
#include "ckpt.h"
#include "client.h"
#include "clock.h"
#include "container.h"
#include "envs.h"
#include "log.h"
#include "sha256hex.h"
#include "trial_code.h"
#include "why.h"

void trialcode_init(TrialCode *tc)
{
    memset(tc, 0, sizeof *tc);
    tc->holder_fd = -1;
    tc->venv_fd = -1;
}

/* A download is given up when the trial is stopped meanwhile or the
 * worker gives up delivering. */
static bool download_cancel(void *arg)
{
    WTrial *t = arg;
    pthread_mutex_lock(&t->mu);
    bool stop = t->kill_reason != KILL_NONE && t->kill_reason != KILL_PREEMPT;
    pthread_mutex_unlock(&t->mu);
    return stop || t->hooks->gave_up(t->hooks->ctx);
}

/* Whether rel is a path inside a tree: relative, no ".." component. */
static bool inside_path(const char *rel)
{
    if (rel[0] == '/')
        return false;
    for (const char *s = rel; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return false;
        s += n;
        while (*s == '/')
            s++;
    }
    return true;
}

static void say(int log_fd, const char *line)
{
    if (log_fd >= 0 && write(log_fd, line, strlen(line)) < 0) {
        /* the log is best effort */
    }
}

/* Fetches blob sha256 and unpacks it into tc->tree. */
static int unpack_tree(WTrial *t, TrialCode *tc, const char *sha256, int log_fd, char *why,
                       size_t why_size)
{
    const TrialHooks *h = t->hooks;
    if (h->cache == NULL)
        return rung_why(why, why_size,
                        "this worker has no cache for working directories (see its log at start)");
    char code[PATH_MAX + 16];
    rung_why(code, sizeof code, "%s/%s", h->workdir, TRIALCODE_DIR);
    if (mkdir(code, 0700) != 0 && errno != EEXIST)
        return rung_why(why, why_size, "cannot make %s: %s", code, strerror(errno));
    if (snprintf(tc->holder, sizeof tc->holder, "%s/%" PRId64 "-XXXXXX", code, t->id) >=
            (int)sizeof tc->holder ||
        mkdtemp(tc->holder) == NULL) {
        tc->holder[0] = '\0';
        return rung_why(why, why_size, "cannot make a folder in %s: %s", code, strerror(errno));
    }
    tc->holder_fd = open(tc->holder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tc->holder_fd >= 0)
        flock(tc->holder_fd, LOCK_SH); /* trialcode_sweep passes it by */
    rung_why(tc->tree, sizeof tc->tree, "%s/wd", tc->holder);

    Client *c = client_new(h->server, h->token);
    if (c == NULL)
        return rung_why(why, why_size, "out of memory");
    ClientCall call = {.retry = true,
                       .max_retries = 4,
                       .cancel = download_cancel,
                       .cancel_arg = t,
                       .what = "download of a working directory"};
    char tar[PATH_MAX];
    int hold = -1;
    bool downloaded = false;
    int64_t t0 = rung_mono_ns();
    int rc = blobcache_get(h->cache, c, sha256, &call, tar, &hold, &downloaded, why, why_size);
    client_free(c);
    if (rc != 0)
        return -1;
    int64_t t1 = rung_mono_ns();
    char err[TRIAL_WHY_MAX];
    rc = ckpt_unpack_tree(tar, sha256, tc->tree, err, sizeof err);
    close(hold);
    if (rc != 0) {
        tc->tree[0] = '\0';
        return rung_why(why, why_size, "the working directory sha256:%s is refused: %s", sha256,
                        err);
    }
    char line[PATH_MAX + 256];
    snprintf(line, sizeof line,
             "rung-worker: working directory sha256:%.12s %s in %.2f s, unpacked in %.2f s into "
             "%s\n",
             sha256, downloaded ? "downloaded" : "found in the cache", (double)(t1 - t0) / 1e9,
             (double)(rung_mono_ns() - t1) / 1e9, tc->tree);
    say(log_fd, line);
    return 0;
}

int trialcode_prepare(WTrial *t, TrialCode *tc, int log_fd, char *why, size_t why_size)
{
    const json_t *tr = t->trainable;
    const TrialHooks *h = t->hooks;
    const json_t *envj = json_object_get(tr, "environment");
    const char *env_name = json_string_value(envj);
    const char *interp = NULL;
    if (envj != NULL && !json_is_null(envj)) {
        if (env_name == NULL || !envs_name_valid(env_name))
            return rung_why(why, why_size, "trainable.environment is not a valid name");
        interp = h->envs ? envs_path(h->envs, env_name) : NULL;
        if (interp == NULL) {
            char names[1024] = "none";
            if (h->envs)
                envs_names_text(h->envs, names, sizeof names);
            return rung_why(why, why_size,
                            "this worker has no environment '%s' (it offers: %s; rung-worker "
                            "--env NAME=PATH)",
                            env_name, names);
        }
        snprintf(tc->python, sizeof tc->python, "%s", interp);
    }
    const json_t *wd = json_object_get(tr, "working_dir");
    if (wd == NULL || json_is_null(wd))
        return 0;
    const char *value = json_string_value(wd);
    if (value == NULL || strncmp(value, "sha256:", 7) != 0 || !rung_is_sha256_hex(value + 7))
        return rung_why(why, why_size,
                        "trainable.working_dir must be \"sha256:\" and 64 hex digits, as rungd "
                        "stores it");
    char sha[65];
    for (int i = 0; i < 64; i++)
        sha[i] = (char)(value[7 + i] >= 'A' && value[7 + i] <= 'F' ? value[7 + i] + 32
                                                                   : value[7 + i]);
    sha[64] = '\0';
    const char *cwd = json_string_value(json_object_get(tr, "cwd"));
    if (cwd != NULL && !inside_path(cwd))
        return rung_why(why, why_size,
                        "trainable.cwd '%s' must be a relative path inside the working "
                        "directory, without '..'",
                        cwd);
    if (unpack_tree(t, tc, sha, log_fd, why, why_size) != 0)
        return -1;
    if (snprintf(tc->cwd, sizeof tc->cwd, "%s%s%s", tc->tree, cwd && cwd[0] ? "/" : "",
                 cwd ? cwd : "") >= (int)sizeof tc->cwd)
        return rung_why(why, why_size, "trainable.cwd makes too long a path");

    char req[PATH_MAX + 32];
    snprintf(req, sizeof req, "%s/requirements.txt", tc->tree);
    struct stat st;
    if (lstat(req, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    char base[PATH_MAX];
    if (interp == NULL) {
        /* No environment named: the python3 this worker finds. */
        if (envs_find_program("python3", base) != 0)
            return rung_why(why, why_size,
                            "requirements.txt needs a Python: the trainable names no "
                            "environment and there is no python3 in this worker's PATH");
        interp = base;
    }
    if (h->cache == NULL || blobcache_ensure(h->cache, why, why_size) != 0)
        return h->cache ? -1 : rung_why(why, why_size, "this worker has no cache for virtualenvs");
    return envs_venv(h->envs, h->cache->venvs, env_name ? env_name : "", interp, req, tc->tree,
                     h->pip_index, log_fd, tc->python, &tc->venv_fd, why, why_size);
}

/* trainable.wandb_compat (docs/api.md, "trainable"): the worker's copy of
 * the wandb stand-in first on PYTHONPATH, so that a W&B script's `import
 * wandb` finds it before any real wandb the environment has. */
static int put_wandb_first(const Envs *envs, Env *env, char *why, size_t why_size)
{
    if (envs == NULL || envs->rung_python[0] == '\0')
        return rung_why(why, why_size,
                        "trainable.wandb_compat: this worker has no copy of the Python package "
                        "rung, which holds the wandb stand-in (reinstall rung-worker)");
    const char *old = env_get(env, "PYTHONPATH");
    size_t n = (old ? strlen(old) : 0) + strlen(envs->rung_python) + 64;
    char *path = malloc(n);
    if (path == NULL)
        return rung_why(why, why_size, "out of memory");
    snprintf(path, n, "%s/rung/compat/wandb_shim%s%s", envs->rung_python, old && old[0] ? ":" : "",
             old && old[0] ? old : "");
    env_set(env, "PYTHONPATH", path);
    free(path);
    return 0;
}

int trialcode_apply(WTrial *t, TrialCode *tc, char **argv, Env *env, char *why, size_t why_size)
{
    Envs *envs = t->hooks->envs;
    if (json_is_true(json_object_get(t->trainable, "wandb_compat")) &&
        put_wandb_first(envs, env, why, why_size) != 0)
        return -1;
    bool bare = argv[0] != NULL && envs_is_bare_python(argv[0]);
    if (bare && tc->python[0] != '\0') {
        char *p = strdup(tc->python);
        if (p == NULL)
            return rung_why(why, why_size, "out of memory");
        free(argv[0]);
        argv[0] = p;
    }
    if (envs == NULL || envs->rung_python[0] == '\0' || argv[0] == NULL)
        return 0;
    /* The interpreter the argv runs, when it is one we can ask; any other
     * program (a shell script that starts python) gets the package too. */
    char found[PATH_MAX];
    const char *interp =
        tc->python[0] != '\0' && (bare || strcmp(argv[0], tc->python) == 0) ? tc->python : NULL;
    if (interp == NULL && bare && envs_find_program(argv[0], found) == 0)
        interp = found;
    if (interp != NULL && envs_has_rung(envs, interp))
        return 0;
    const char *old = env_get(env, "PYTHONPATH");
    size_t n = (old ? strlen(old) : 0) + strlen(envs->rung_python) + 2;
    char *path = malloc(n);
    if (path == NULL)
        return rung_why(why, why_size, "out of memory");
    snprintf(path, n, "%s%s%s", old && old[0] ? old : "", old && old[0] ? ":" : "",
             envs->rung_python);
    env_set(env, "PYTHONPATH", path);
    free(path);
    return 0;
}

bool trialcode_has_container(const WTrial *t)
{
    const json_t *c = json_object_get(t->trainable, "container");
    return c != NULL && !json_is_null(c);
}

/* The runtime for t's container: the trainable's when offered, else the
 * first offered; NULL with why. */
static const char *pick_runtime(const WTrial *t, const json_t *container, char *why,
                                size_t why_size)
{
    char *const *offered = t->hooks->container_runtimes;
    const char *want = json_string_value(json_object_get(container, "runtime"));
    if (offered == NULL || offered[0] == NULL) {
        rung_why(why, why_size,
                 "this worker offers no container runtime (none of podman, docker, apptainer "
                 "in its PATH; rung-worker --container-runtime)");
        return NULL;
    }
    if (want == NULL)
        return offered[0];
    for (char *const *r = offered; *r; r++)
        if (strcmp(*r, want) == 0)
            return *r;
    char names[256] = "";
    for (char *const *r = offered; *r; r++) {
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", *r);
    }
    rung_why(why, why_size, "this worker does not offer the container runtime '%s' (it offers: %s)",
             want, names);
    return NULL;
}

extern char **environ;

/* Whether NAME=VALUE is in the worker's own environment as it is. */
static bool inherited(const char *var)
{
    for (char **e = environ; *e; e++)
        if (strcmp(*e, var) == 0)
            return true;
    return false;
}

int trialcode_container(WTrial *t, TrialCode *tc, const char *trial_dir, const char *cwd,
                        char ***argv, char *const *envp, char *why, size_t why_size)
{
    const json_t *container = json_object_get(t->trainable, "container");
    const TrialHooks *h = t->hooks;
    const char *runtime = pick_runtime(t, container, why, why_size);
    if (runtime == NULL)
        return -1;
    /* The trial's variables go in; the worker's own (its PATH, HOME...)
     * are the host's, not the image's. */
    size_t n = 0;
    while (envp[n])
        n++;
    char **passed = calloc(n + 1, sizeof *passed);
    if (passed == NULL)
        return rung_why(why, why_size, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!inherited(envp[i]))
            passed[k++] = envp[i];
    ContainerCtx ctx = {.runtime = runtime,
                        .global_args = h->container_args,
                        .run_args = h->container_run_args,
                        .trial_dir = trial_dir,
                        .work_dir = tc->tree[0] != '\0' ? tc->tree : NULL,
                        .cwd = cwd,
                        .env = passed,
                        .gpus = t->gpus,
                        .n_gpus = t->n_gpus};
    char **wrapped = container_argv(container, &ctx, *argv, why, why_size);
    free(passed);
    if (wrapped == NULL)
        return -1;
    argv_free(*argv);
    /* Ours from now on, freed as argv_expand's are: copied into one. */
    size_t m = 0;
    while (wrapped[m])
        m++;
    char **copy = calloc(m + 1, sizeof *copy);
    bool ok = copy != NULL;
    for (size_t i = 0; ok && i < m; i++)
        ok = (copy[i] = strdup(wrapped[i])) != NULL;
    container_argv_free(wrapped);
    if (!ok) {
        argv_free(copy);
        *argv = NULL;
        return rung_why(why, why_size, "out of memory");
    }
    *argv = copy;
    return 0;
}

void trialcode_end(TrialCode *tc)
{
    if (tc->holder[0] != '\0' && envs_remove_tree(tc->holder) != 0)
        LOG_WARN("cannot remove %s: %s", tc->holder, strerror(errno));
    if (tc->holder_fd >= 0)
        close(tc->holder_fd);
    if (tc->venv_fd >= 0)
        close(tc->venv_fd);
    trialcode_init(tc);
}

void trialcode_sweep(const char *workdir)
{
    char code[PATH_MAX + 16];
    rung_why(code, sizeof code, "%s/%s", workdir, TRIALCODE_DIR);
    DIR *d = opendir(code);
    struct dirent *de;
    int removed = 0;
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", code, de->d_name);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (fd >= 0)
                close(fd); /* another worker's running trial */
            continue;
        }
        if (envs_remove_tree(path) == 0)
            removed++;
        close(fd);
    }
    if (d != NULL)
        closedir(d);
    if (removed > 0)
        LOG_INFO("removed %d working director%s left in %s by an earlier run", removed,
                 removed == 1 ? "y" : "ies", code);
}
