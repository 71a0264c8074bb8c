/* Environments, requirements' virtualenvs and the worker's rung package
 * (envs.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"
#include "clock.h"
#include "envs.h"
#include "log.h"
#include "why.h"

extern char **environ;

#define PROBE_TIMEOUT_S 30 /* an "import rung" that takes longer counts as no */

void envs_init(Envs *envs)
{
    memset(envs, 0, sizeof *envs);
    pthread_mutex_init(&envs->mu, NULL);
}

bool envs_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > ENVS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
            return false;
    }
    return true;
}

int envs_find_program(const char *path, char *out)
{
    if (strchr(path, '/') != NULL) {
        /* Made absolute, but not resolved: a virtualenv's bin/python is a
         * link to its base interpreter, and only its own path finds the
         * virtualenv's pyvenv.cfg. */
        char cwd[PATH_MAX];
        if (path[0] != '/' && getcwd(cwd, sizeof cwd) == NULL)
            return -1;
        if (snprintf(out, PATH_MAX, "%s%s%s", path[0] == '/' ? "" : cwd, path[0] == '/' ? "" : "/",
                     path) >= PATH_MAX)
            return -1;
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    const char *dirs = getenv("PATH");
    if (dirs == NULL)
        dirs = "/usr/local/bin:/usr/bin:/bin";
    for (const char *d = dirs; *d;) {
        const char *end = strchr(d, ':');
        size_t n = end ? (size_t)(end - d) : strlen(d);
        char cand[PATH_MAX];
        if (n > 0 && snprintf(cand, sizeof cand, "%.*s/%s", (int)n, d, path) < (int)sizeof cand &&
            access(cand, X_OK) == 0) {
            snprintf(out, PATH_MAX, "%s", cand);
            return 0;
        }
        d += n;
        if (*d == ':')
            d++;
    }
    return -1;
}

/* Adds one NAME=PATH. */
static int add_one(Envs *envs, const char *item, size_t len, char *why, size_t why_size)
{
    const char *eq = memchr(item, '=', len);
    if (eq == NULL || eq == item || eq + 1 == item + len)
        return rung_why(why, why_size, "'%.*s' is not NAME=PATH", (int)len, item);
    char name[ENVS_NAME_MAX + 2], path[PATH_MAX];
    size_t nlen = (size_t)(eq - item), plen = len - nlen - 1;
    if (nlen > ENVS_NAME_MAX || plen >= sizeof path)
        return rung_why(why, why_size, "'%.*s' is too long", (int)len, item);
    memcpy(name, item, nlen);
    name[nlen] = '\0';
    memcpy(path, eq + 1, plen);
    path[plen] = '\0';
    if (!envs_name_valid(name))
        return rung_why(why, why_size,
                        "environment name '%s': 1 to %d letters, digits, '_', '.' or '-', "
                        "starting with a letter or digit",
                        name, ENVS_NAME_MAX);
    if (envs_path(envs, name) != NULL)
        return rung_why(why, why_size, "environment '%s' is given twice", name);
    if (envs->n == ENVS_MAX)
        return rung_why(why, why_size, "more than %d environments", ENVS_MAX);
    char found[PATH_MAX];
    if (envs_find_program(path, found) != 0)
        return rung_why(why, why_size, "environment '%s': %s is not an executable program", name,
                        path);
    memcpy(envs->e[envs->n].name, name, nlen + 1);
    snprintf(envs->e[envs->n].path, sizeof envs->e[envs->n].path, "%s", found);
    envs->n++;
    return 0;
}

int envs_add(Envs *envs, const char *value, char *why, size_t why_size)
{
    for (const char *s = value; *s;) {
        while (*s == ' ' || *s == '\t')
            s++;
        size_t n = strcspn(s, " \t");
        if (n > 0 && add_one(envs, s, n, why, why_size) != 0)
            return -1;
        s += n;
    }
    return 0;
}

const char *envs_path(const Envs *envs, const char *name)
{
    for (int i = 0; i < envs->n; i++)
        if (strcmp(envs->e[i].name, name) == 0)
            return envs->e[i].path;
    return NULL;
}

json_t *envs_names_json(const Envs *envs)
{
    json_t *a = json_array();
    for (int i = 0; a != NULL && i < envs->n; i++)
        json_array_append_new(a, json_string(envs->e[i].name));
    return a;
}

void envs_names_text(const Envs *envs, char *buf, size_t size)
{
    snprintf(buf, size, "%s", envs->n == 0 ? "none" : "");
    for (int i = 0, o = 0; i < envs->n && o >= 0 && (size_t)o < size; i++)
        o += snprintf(buf + o, size - (size_t)o, "%s%s", i ? ", " : "", envs->e[i].name);
}

static bool has_package(const char *dir)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/rung/__init__.py", dir);
    return access(p, R_OK) == 0;
}

void envs_find_rung(Envs *envs, const char *exe_dir)
{
    char cand[PATH_MAX + 64], real[PATH_MAX];
    snprintf(cand, sizeof cand, "%s/../share/rung-worker/python", exe_dir);
    envs->rung_python[0] = '\0';
    if (realpath(cand, real) != NULL && has_package(real)) {
        snprintf(envs->rung_python, sizeof envs->rung_python, "%s", real);
        return;
    }
#ifdef RUNG_SOURCE_PYTHON_DIR
    /* A worker run from its build tree (tests, a developer's machine). */
    if (has_package(RUNG_SOURCE_PYTHON_DIR))
        snprintf(envs->rung_python, sizeof envs->rung_python, "%s", RUNG_SOURCE_PYTHON_DIR);
#endif
}

/* Runs argv (its output to out_fd, or /dev/null when -1) in cwd (NULL:
 * here) with the worker's environment less PYTHONPATH and PYTHONHOME,
 * ended by SIGKILL after timeout_s (0: none). Its exit status as waitpid
 * gives it, or -1 when it could not be started. */
static int run(char *const *argv, const char *cwd, int out_fd, int timeout_s)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
        int in = open("/dev/null", O_RDONLY);
        if (fd < 0 || in < 0 || dup2(in, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        if (cwd != NULL && chdir(cwd) != 0)
            _exit(126);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        if (timeout_s > 0)
            alarm((unsigned)timeout_s); /* kept across exec: SIGALRM ends it */
        unsetenv("PYTHONPATH");
        unsetenv("PYTHONHOME");
        setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1", 1);
        setenv("PIP_NO_INPUT", "1", 1);
        unsetenv("RUNG_TOKEN");
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

bool envs_has_rung(Envs *envs, const char *interp)
{
    pthread_mutex_lock(&envs->mu);
    for (int i = 0; i < envs->n_probes; i++)
        if (strcmp(envs->probes[i].path, interp) == 0) {
            bool has = envs->probes[i].has_rung;
            pthread_mutex_unlock(&envs->mu);
            return has;
        }
    pthread_mutex_unlock(&envs->mu);
    /* -I: without PYTHONPATH and the user's site: what the environment
     * itself holds (a venv's packages count). */
    char *argv[] = {(char *)interp, "-I", "-c", "import rung", NULL};
    int status = run(argv, "/", -1, PROBE_TIMEOUT_S);
    bool has = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    pthread_mutex_lock(&envs->mu);
    if (envs->n_probes < ENVS_PROBES) {
        snprintf(envs->probes[envs->n_probes].path, PATH_MAX, "%s", interp);
        envs->probes[envs->n_probes++].has_rung = has;
    }
    pthread_mutex_unlock(&envs->mu);
    return has;
}

bool envs_is_bare_python(const char *argv0)
{
    return strcmp(argv0, "python") == 0 || strcmp(argv0, "python3") == 0;
}

/* ---- virtualenvs ---- */

static int64_t walked_bytes;

static int add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path;
    (void)flag;
    (void)ftw;
    walked_bytes += (int64_t)st->st_blocks * 512;
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int envs_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static pthread_mutex_t walk_mu = PTHREAD_MUTEX_INITIALIZER;

/* Bytes a folder takes on disk (its blocks). */
static int64_t tree_bytes(const char *path)
{
    pthread_mutex_lock(&walk_mu); /* walked_bytes is one for all */
    walked_bytes = 0;
    nftw(path, add_size, 16, FTW_PHYS | FTW_MOUNT);
    int64_t n = walked_bytes;
    pthread_mutex_unlock(&walk_mu);
    return n;
}

/* The last bytes of file path (at most ENVS_PIP_TAIL) into buf. */
static void file_tail(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    size_t want = size - 1 < ENVS_PIP_TAIL ? size - 1 : ENVS_PIP_TAIL;
    off_t from = end > (off_t)want ? end - (off_t)want : 0;
    ssize_t n = pread(fd, buf, (size_t)(end - from), from);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
}

static void say(int log_fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line into the trial's stderr.log. */
static void say(int log_fd, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (log_fd >= 0 && n > 0 &&
        write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) {
        /* the log is best effort */
    }
}

/* The environment's own packages, for a virtualenv made from it: its
 * site-packages folders, listed in a .pth file of the virtualenv's (after
 * the virtualenv's own, so that requirements win). --system-site-packages
 * alone is not enough when the environment is itself a virtualenv (a
 * conda env, /opt/venvs/torch/bin/python): the new one would see the base
 * interpreter's packages, not the environment's. */
static int link_sites(const char *dir, const char *interp, const char *python, const char *tree,
                      int out)
{
    char sites[PATH_MAX + 32];
    snprintf(sites, sizeof sites, "%s/.rung-env-sites", dir);
    char *list[] = {(char *)interp, "-c",
                    "import site, sys; open(sys.argv[1], 'w').write("
                    "'\\n'.join(site.getsitepackages()) + '\\n')",
                    sites, NULL};
    char *pth[] = {(char *)python, "-c",
                   "import sys, sysconfig; p = sysconfig.get_paths()['purelib']; "
                   "open(p + '/_rung_environment.pth', 'w').write(open(sys.argv[1]).read())",
                   sites, NULL};
    int st = run(list, tree, out, PROBE_TIMEOUT_S);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    st = run(pth, tree, out, PROBE_TIMEOUT_S);
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Makes the virtualenv at dir and installs req into it; -1 with why. */
static int build(const char *dir, const char *interp, const char *req, const char *tree,
                 const char *pip_index, const char *log_path, char *why, size_t why_size)
{
    int out = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0)
        return rung_why(why, why_size, "cannot write %s: %s", log_path, strerror(errno));
    /* Without pip of its own: with --system-site-packages the
     * environment's pip serves it (0.1 s, not the 3 s of ensurepip); an
     * environment without pip gets ensurepip's. */
    char *mk[] = {(char *)interp,  "-m",        "venv", "--system-site-packages",
                  "--without-pip", (char *)dir, NULL};
    int st = run(mk, tree, out, 0);
    char python[PATH_MAX + 16];
    snprintf(python, sizeof python, "%s/bin/python", dir);
    char *probe[] = {python, "-m", "pip", "--version", NULL};
    char *ensure[] = {python, "-m", "ensurepip", "--default-pip", NULL};
    int rc = -1;
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rung_why(why, why_size, "%s -m venv failed", interp);
    } else if ((st = run(probe, tree, out, 0), !WIFEXITED(st) || WEXITSTATUS(st) != 0) &&
               (st = run(ensure, tree, out, 0), !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
        rung_why(why, why_size, "the environment %s has no pip, and ensurepip failed", interp);
    } else if (link_sites(dir, interp, python, tree, out) != 0) {
        rung_why(why, why_size, "cannot give the virtualenv the packages of %s", interp);
    } else {
        char wheels[PATH_MAX + 16];
        snprintf(wheels, sizeof wheels, "%s/wheels", tree);
        char *pip[16] = {python, "-m", "pip", "install", "--no-input", "-r", (char *)req};
        int k = 7;
        if (pip_index != NULL) {
            pip[k++] = "--index-url";
            pip[k++] = (char *)pip_index;
        } else {
            pip[k++] = "--no-index";
        }
        /* wheels shipped in the working directory, offline or not */
        pip[k++] = "--find-links";
        pip[k++] = (char *)tree;
        struct stat ws;
        if (stat(wheels, &ws) == 0 && S_ISDIR(ws.st_mode)) {
            pip[k++] = "--find-links";
            pip[k++] = wheels;
        }
        pip[k] = NULL;
        st = run(pip, tree, out, 0);
        if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            rc = 0;
        else
            rung_why(why, why_size, "pip install -r requirements.txt failed");
    }
    close(out);
    if (rc != 0) {
        char tail[ENVS_PIP_TAIL + 1];
        file_tail(log_path, tail, sizeof tail);
        size_t n = strlen(why);
        if (n < why_size)
            snprintf(why + n, why_size - n, ":\n%s", tail);
    }
    return rc;
}

int envs_venv(Envs *envs, const char *venvs_dir, const char *env_name, const char *interp,
              const char *req, const char *tree, const char *pip_index, int log_fd, char *python,
              int *lock_fd, char *why, size_t why_size)
{
    (void)envs;
    *lock_fd = -1;
    char hex[65];
    if (ckpt_sha256_file(req, hex, NULL) != 0)
        return rung_why(why, why_size, "cannot read %s: %s", req, strerror(errno));
    if (mkdir(venvs_dir, 0700) != 0 && errno != EEXIST)
        return rung_why(why, why_size, "cannot make %s: %s", venvs_dir, strerror(errno));
    char dir[PATH_MAX], lock[PATH_MAX + 8], ready[PATH_MAX + 16], log_path[PATH_MAX + 8];
    if (snprintf(dir, sizeof dir, "%s/%s-%.16s", venvs_dir, env_name[0] ? env_name : "_", hex) >=
        (int)sizeof dir)
        return rung_why(why, why_size, "the path of a virtualenv in %s is too long", venvs_dir);
    snprintf(lock, sizeof lock, "%s.lock", dir);
    snprintf(ready, sizeof ready, "%s/%s", dir, ENVS_READY);
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    rung_why(python, PATH_MAX, "%s/bin/python", dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return rung_why(why, why_size, "cannot open %s: %s", lock, strerror(errno));
    if (flock(fd, LOCK_EX) != 0) {
        rung_why(why, why_size, "cannot lock %s: %s", lock, strerror(errno));
        close(fd);
        return -1;
    }
    int64_t t0 = rung_mono_ns();
    if (utimensat(AT_FDCWD, ready, NULL, 0) == 0) { /* ready: used now (the LRU's clock) */
        flock(fd, LOCK_SH);
        *lock_fd = fd;
        say(log_fd, "rung-worker: requirements.txt: reusing the virtualenv %s\n", dir);
        return 0;
    }
    if (envs_remove_tree(dir) != 0) {
        rung_why(why, why_size, "cannot remove the unfinished virtualenv %s: %s", dir,
                 strerror(errno));
        close(fd);
        return -1;
    }
    say(log_fd, "rung-worker: requirements.txt: building the virtualenv %s (%s)\n", dir,
        pip_index ? pip_index : "offline: wheels of the working directory");
    if (build(dir, interp, req, tree, pip_index, log_path, why, why_size) != 0) {
        envs_remove_tree(dir);
        close(fd);
        return -1;
    }
    FILE *f = fopen(ready, "w");
    if (f == NULL || fprintf(f, "%" PRId64 "\n", tree_bytes(dir)) < 0 || fclose(f) != 0) {
        rung_why(why, why_size, "cannot write %s: %s", ready, strerror(errno));
        envs_remove_tree(dir);
        close(fd);
        return -1;
    }
    double secs = (double)(rung_mono_ns() - t0) / 1e9;
    say(log_fd, "rung-worker: requirements.txt: virtualenv built in %.1f s\n", secs);
    LOG_INFO("requirements.txt: virtualenv %s built in %.1f s", dir, secs);
    flock(fd, LOCK_SH);
    *lock_fd = fd;
    return 0;
}
