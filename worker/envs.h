/* Environments: the Python interpreters this worker offers by name
 * (--env NAME=PATH; docs/workers.md, "Running a team's code"), the
 * virtualenvs built from a working directory's requirements.txt, and the
 * worker's own copy of the rung Python package for trials that lack one.
 *
 * A trainable names its environment (trainable.environment), not an
 * interpreter path of the submitter's machine: rungd leases it only to
 * workers that registered that name, and here a bare "python" or
 * "python3" as its argv[0] becomes the environment's interpreter.
 *
 * requirements.txt: a virtualenv per (environment, SHA-256 of the file),
 * under <cache>/venvs/<environment>-<first 16 hex digits>, made with the
 * environment's interpreter, seeing the environment's site-packages after
 * its own (a .pth file: what the environment holds, torch say, stays
 * importable, also when it is a virtualenv itself) and filled by pip: from
 * --pip-index when given, else offline from the wheels in the working
 * directory (--no-index --find-links <tree>). Built once, under an
 * exclusive flock of <key>.lock (two trials, or two workers sharing the
 * cache, build it once between them), marked ready by a file .rung-ready
 * written last; a trial that uses it holds the lock shared, so the cache's
 * eviction (blobcache.h) passes it by. A failed build is removed; the trial
 * fails with the tail of pip's output. */
#ifndef RUNG_WORKER_ENVS_H
#define RUNG_WORKER_ENVS_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENVS_MAX 64              /* environments of one worker (as rungd takes at registration) */
#define ENVS_NAME_MAX 64         /* bytes of a name: [A-Za-z0-9_.-], starting alphanumeric */
#define ENVS_PROBES 64           /* interpreters whose "import rung" answer is remembered */
#define ENVS_PIP_TAIL 1500       /* bytes of pip's output quoted in a failed build's error */
#define ENVS_READY ".rung-ready" /* in a venv: written last; holds its size in bytes */

typedef struct Envs {
    struct {
        char name[ENVS_NAME_MAX + 1];
        char path[PATH_MAX]; /* absolute */
    } e[ENVS_MAX];
    int n;
    char rung_python[PATH_MAX]; /* the folder holding the worker's rung/ package, "" none */
    pthread_mutex_t mu;         /* guards probes */
    struct {
        char path[PATH_MAX];
        bool has_rung;
    } probes[ENVS_PROBES];
    int n_probes;
} Envs;

void envs_init(Envs *envs);

/* Whether name is a valid environment name (the spec's rule). */
bool envs_name_valid(const char *name);

/* Adds --env's value: NAME=PATH, or several separated by spaces (the
 * packaged conf's RUNG_WORKER_ENVS); "" adds nothing. PATH is absolute, or
 * a program found in PATH; it must be executable. A name given twice is
 * refused. 0, or -1 with why. */
int envs_add(Envs *envs, const char *value, char *why, size_t why_size);

/* The interpreter of environment name, or NULL when this worker has none. */
const char *envs_path(const Envs *envs, const char *name);

/* The names, a new JSON array (for the registration). */
json_t *envs_names_json(const Envs *envs);

/* The names, comma-separated, into buf ("none" when there are none). */
void envs_names_text(const Envs *envs, char *buf, size_t size);

/* Finds the worker's own rung package: <exe_dir>/../share/rung-worker/python
 * (the package rung-worker installs it there), else the source tree's
 * python/ (a build tree's worker). Sets envs->rung_python ("" when none). */
void envs_find_rung(Envs *envs, const char *exe_dir);

/* Whether interp can import rung by itself (python -I -c "import rung"),
 * asked once per interpreter and remembered. */
bool envs_has_rung(Envs *envs, const char *interp);

/* Whether argv0 is a bare python or python3, which an environment's
 * interpreter replaces. */
bool envs_is_bare_python(const char *argv0);

/* rm -rf path, not following links nor leaving its file system; 0 when it
 * is gone (or was not there), -1 with errno. */
int envs_remove_tree(const char *path);

/* path as given when it holds a '/', else the first executable of that
 * name in $PATH, into out (PATH_MAX bytes); -1 when there is none. */
int envs_find_program(const char *path, char *out);

/* The virtualenv of requirements file req (in the trial's tree `tree`)
 * for environment env_name with interpreter interp: built under
 * venvs_dir when not ready (log_fd, the trial's stderr.log, gets a line
 * saying built or reused, and how long it took), then held: *lock_fd
 * (close it when the trial ends) holds its flock shared. python gets its
 * interpreter (PATH_MAX bytes). pip_index: --pip-index, or NULL (offline).
 * 0, or -1 with why (pip's failure: its output's tail). */
int envs_venv(Envs *envs, const char *venvs_dir, const char *env_name, const char *interp,
              const char *req, const char *tree, const char *pip_index, int log_fd, char *python,
              int *lock_fd, char *why, size_t why_size);

#endif
