/* `rung launch slurm`: submits Slurm jobs that run rung-worker while trials
 * wait that no worker takes, and cancels the queued ones that nothing waits
 * for any more (docs/workers.md, "On Slurm"). It is a client of rungd like
 * any other: each pass lists the experiments (GET /api/v1/experiments),
 * lists its own jobs (squeue, by their names), decides with cli/slurm.c,
 * and runs sbatch and scancel. Its jobs' workers leave by themselves once
 * idle (--exit-idle-s), so a finished search leaves nothing allocated.
 * `rung launch k8s` makes the same passes with Kubernetes Jobs
 * (cli/launch_k8s.c, cli/k8s.c). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "launch.h"

#define JOBS_MAX 4096 /* of the launcher's own, listed in one pass */
#define EXTRA_MAX 16  /* --sbatch-arg */

static volatile sig_atomic_t stop_asked;

static void on_stop(int sig)
{
    (void)sig;
    stop_asked = 1;
}

int launch_run(char *const argv[], const char *input, char *out, size_t size)
{
    int in[2], res[2];
    if (pipe(in) != 0)
        return -1;
    if (pipe(res) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]), close(in[1]), close(res[0]), close(res[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(res[1], STDOUT_FILENO);
        close(in[0]), close(in[1]), close(res[0]), close(res[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "rung launch: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(res[1]);
    /* The whole input first, then the output: the inputs (a job script,
     * a Job's JSON) fit in a pipe's buffer, whatever the program does
     * before reading them. */
    if (input != NULL) {
        size_t len = strlen(input), done = 0;
        while (done < len) {
            ssize_t w = write(in[1], input + done, len - done);
            if (w <= 0)
                break;
            done += (size_t)w;
        }
    }
    close(in[1]);
    size_t n = 0;
    ssize_t r;
    char sink[512];
    while ((r = read(res[0], n < size - 1 ? out + n : sink,
                     n < size - 1 ? size - 1 - n : sizeof sink)) > 0)
        if (n < size - 1)
            n += (size_t)r;
    out[n] = '\0';
    close(res[0]);
    int status = 0;
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    return got == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The launcher's jobs from squeue, by shape, and the ids of the queued
 * ones. Returns the number of shapes, or -1. */
static int list_slurm(const char *prefix, SlurmCount *jobs, LaunchQueued *queued)
{
    static char out[1 << 20];
    char *argv[] = {"squeue", "--me", "-h", "-o", "%i|%j|%T", NULL};
    int rc = launch_run(argv, NULL, out, sizeof out);
    if (rc != 0) {
        fprintf(stderr, "rung launch: squeue failed (exit status %d)\n", rc);
        return -1;
    }
    int n = 0;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char name[256], state[64];
        long long id;
        SlurmShape s;
        if (sscanf(line, "%lld|%255[^|]|%63s", &id, name, state) != 3 ||
            !slurm_parse_job_name(prefix, name, &s))
            continue;
        char text[32];
        snprintf(text, sizeof text, "%lld", id);
        /* RUNNING, CONFIGURING, COMPLETING: holding nodes. */
        launch_count(jobs, queued, &n, &s, strcmp(state, "PENDING") != 0, text);
    }
    return n;
}

void launch_count(SlurmCount *jobs, LaunchQueued *queued, int *n, const SlurmShape *s, bool running,
                  const char *id)
{
    int k = 0;
    while (k < *n && !(jobs[k].shape.gpus == s->gpus && jobs[k].shape.cpus == s->cpus &&
                       jobs[k].shape.nodes == s->nodes))
        k++;
    if (k == *n) {
        if (*n == SLURM_SHAPES_MAX)
            return; /* more shapes than looked at in one pass: the next */
        jobs[k] = (SlurmCount){.shape = *s};
        queued[k].n = 0;
        (*n)++;
    }
    jobs[k].n++;
    if (running)
        jobs[k].running++;
    else if (queued[k].n < LAUNCH_QUEUED_MAX)
        snprintf(queued[k].id[queued[k].n++], sizeof queued[k].id[0], "%s", id);
}

/* Submits one job of shape s: its id, or -1. */
static long long submit_slurm(const Launch *l, const SlurmShape *s, int64_t waiting)
{
    char name[128];
    slurm_job_name(l->prefix, s, name, sizeof name);
    SlurmJob j = l->job;
    j.shape = *s;
    j.name = name;
    char *script = slurm_script(&j);
    if (script == NULL)
        return -1;
    if (l->dry_run) {
        printf("%s", script);
        free(script);
        return 0;
    }
    char out[256];
    char *argv[] = {"sbatch", "--parsable", NULL};
    int rc = launch_run(argv, script, out, sizeof out);
    free(script);
    long long id = -1;
    if (rc != 0 || sscanf(out, "%lld", &id) != 1) {
        fprintf(stderr, "rung launch: sbatch failed (exit status %d): %s\n", rc, out);
        return -1;
    }
    printf("submitted job %lld (%s) for %" PRId64 " waiting trial(s)\n", id, name, waiting);
    fflush(stdout);
    return id;
}

/* One pass: 0, or -1 when rungd or the jobs could not be read. */
static int pass(CliRest *h, const Launch *l, SlurmCount *prev, int *n_prev)
{
    json_t *doc;
    CliError err;
    if (cli_rest_json(h, "GET", "/api/v1/experiments?limit=1000", NULL, 0, &doc, &err) != 0) {
        cli_error_print(&err, cli_rest_server(h));
        return -1;
    }
    SlurmCount now[SLURM_SHAPES_MAX], waiting[SLURM_SHAPES_MAX];
    int n_now = slurm_waiting(json_object_get(doc, "items"), now, SLURM_SHAPES_MAX);
    json_decref(doc);
    /* What waited in this pass and the one before (--once: this one). */
    int n_waiting = 0;
    for (int i = 0; i < n_now; i++) {
        int64_t before = l->once ? now[i].n : 0;
        for (int k = 0; k < *n_prev; k++)
            if (prev[k].shape.gpus == now[i].shape.gpus &&
                prev[k].shape.cpus == now[i].shape.cpus &&
                prev[k].shape.nodes == now[i].shape.nodes)
                before = prev[k].n;
        waiting[n_waiting] = now[i];
        waiting[n_waiting++].n = now[i].n < before ? now[i].n : before;
    }
    memcpy(prev, now, sizeof now);
    *n_prev = n_now;
    SlurmCount jobs[SLURM_SHAPES_MAX];
    static LaunchQueued queued[SLURM_SHAPES_MAX];
    int n_jobs = l->dry_run ? 0
                 : l->k8s   ? launch_k8s_list(l, jobs, queued)
                            : list_slurm(l->prefix, jobs, queued);
    if (n_jobs < 0)
        return -1;
    int64_t add[SLURM_SHAPES_MAX], cancel[SLURM_SHAPES_MAX];
    slurm_plan(waiting, n_waiting, jobs, n_jobs, l->max_jobs, add, cancel);
    for (int j = 0; j < n_jobs; j++) {
        /* The newest queued first: they are the furthest from starting. */
        for (int64_t k = 0; k < cancel[j] && k < queued[j].n; k++) {
            const char *id = queued[j].id[queued[j].n - 1 - k];
            char *argv[] = {"scancel", (char *)id, NULL};
            char out[64];
            if (l->k8s ? launch_k8s_cancel(l, id) == 0
                       : launch_run(argv, NULL, out, sizeof out) == 0)
                printf("cancelled queued job %s: no trial waits for it\n", id);
        }
    }
    for (int i = 0; i < n_waiting; i++)
        for (int64_t k = 0; k < add[i]; k++)
            if ((l->k8s ? launch_k8s_submit(l, &waiting[i].shape, waiting[i].n)
                        : submit_slurm(l, &waiting[i].shape, waiting[i].n)) < 0)
                return -1;
    fflush(stdout);
    return 0;
}

static int take_int(int *argc, char **argv, const char *name, int64_t dflt, int64_t lo, int64_t hi,
                    int64_t *out)
{
    bool bad = false;
    const char *v = cli_cmd_take_value(argc, argv, name, &bad);
    *out = dflt;
    if (bad)
        return -1;
    if (v == NULL)
        return 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || x < lo || x > hi) {
        fprintf(stderr, "rung launch: %s is '%s': give %" PRId64 " to %" PRId64 "\n", name, v, lo,
                hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* Slurm's options (docs/workers.md, "rung launch slurm"). */
static int setup_slurm(Launch *l, int *argc, char **argv)
{
    bool bad = false;
    static const char *extra[EXTRA_MAX + 1];
    int n_extra = 0;
    const char *v;
    while ((v = cli_cmd_take_value(argc, argv, "--sbatch-arg", &bad)) != NULL) {
        if (n_extra == EXTRA_MAX || strchr(v, '\n') != NULL) {
            fprintf(stderr, "rung launch: --sbatch-arg: at most %d, each one line\n", EXTRA_MAX);
            return CLI_EXIT_USAGE;
        }
        extra[n_extra++] = v;
    }
    SlurmJob *j = &l->job;
    j->extra = extra;
    j->partition = cli_cmd_take_value(argc, argv, "--partition", &bad);
    j->account = cli_cmd_take_value(argc, argv, "--account", &bad);
    j->time = cli_cmd_take_value(argc, argv, "--time", &bad);
    j->token_file = cli_cmd_take_value(argc, argv, "--worker-token-file", &bad);
    j->worker = cli_cmd_take_value(argc, argv, "--worker", &bad);
    j->output_dir = cli_cmd_take_value(argc, argv, "--dir", &bad);
    if (bad)
        return CLI_EXIT_USAGE;
    /* #SBATCH lines are read up to the line's end, without a shell. */
    const char *lined[] = {j->partition, j->account, j->time, j->output_dir};
    const char *names[] = {"--partition", "--account", "--time", "--dir"};
    for (int i = 0; i < 4; i++)
        if (lined[i] != NULL && (lined[i][0] == '\0' || strpbrk(lined[i], " \t\n") != NULL)) {
            fprintf(stderr, "rung launch: %s is '%s': one word\n", names[i], lined[i]);
            return CLI_EXIT_USAGE;
        }
    if (j->time == NULL)
        j->time = "01:00:00";
    static char dir[4096], worker[4096];
    if (j->output_dir == NULL) {
        const char *home = getenv("HOME");
        snprintf(dir, sizeof dir, "%s/rung-slurm", home ? home : ".");
        j->output_dir = dir;
    }
    if (j->output_dir[0] != '/') {
        fprintf(stderr, "rung launch: --dir is '%s': an absolute path (the nodes see it)\n",
                j->output_dir);
        return CLI_EXIT_USAGE;
    }
    if (!l->dry_run && mkdir(j->output_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "rung launch: cannot make --dir %s: %s\n", j->output_dir, strerror(errno));
        return CLI_EXIT_ERROR;
    }
    if (j->worker == NULL) {
        /* rung-worker beside this rung (a build tree, or /usr/bin). */
        ssize_t n = readlink("/proc/self/exe", worker, sizeof worker - 32);
        char *slash = n > 0 ? memrchr(worker, '/', (size_t)n) : NULL;
        if (slash != NULL)
            strcpy(slash + 1, "rung-worker");
        j->worker = slash != NULL && access(worker, X_OK) == 0 ? worker : "rung-worker";
    }
    return 0;
}

/* Kubernetes's options (docs/workers.md, "On Kubernetes"). */
static int setup_k8s(Launch *l, int *argc, char **argv)
{
    bool bad = false;
    K8sJob *j = &l->kjob;
    j->namespace_ = cli_cmd_take_value(argc, argv, "--namespace", &bad);
    j->image = cli_cmd_take_value(argc, argv, "--image", &bad);
    j->token_secret = cli_cmd_take_value(argc, argv, "--token-secret", &bad);
    if (bad || take_int(argc, argv, "--grace-s", 60, 1, 3600, &j->grace_s) != 0)
        return CLI_EXIT_USAGE;
    if (j->image == NULL) {
        fprintf(stderr, "rung launch k8s: give --image, one with rung-worker on its PATH\n");
        return CLI_EXIT_USAGE;
    }
    if (j->namespace_ == NULL)
        j->namespace_ = "default";
    return 0;
}

int cli_cmd_launch(CliRest *h, int argc, char **argv)
{
    if (argc < 1 || (strcmp(argv[0], "slurm") != 0 && strcmp(argv[0], "k8s") != 0)) {
        fprintf(stderr, "rung launch: give slurm or k8s\n");
        return CLI_EXIT_USAGE;
    }
    Launch l = {.prefix = "rung", .k8s = strcmp(argv[0], "k8s") == 0};
    argc--, argv++;
    bool bad = false;
    const char *prefix = cli_cmd_take_value(&argc, argv, "--name", &bad);
    l.once = cli_cmd_take_flag(&argc, argv, "--once");
    l.dry_run = cli_cmd_take_flag(&argc, argv, "--dry-run");
    int64_t idle;
    if (bad || take_int(&argc, argv, "--max-jobs", 8, 1, 10000, &l.max_jobs) != 0 ||
        take_int(&argc, argv, "--interval-s", 10, 1, 3600, &l.interval_s) != 0 ||
        take_int(&argc, argv, "--exit-idle-s", 120, 1, 86400, &idle) != 0)
        return CLI_EXIT_USAGE;
    int rc = l.k8s ? setup_k8s(&l, &argc, argv) : setup_slurm(&l, &argc, argv);
    if (rc != 0)
        return rc;
    if (argc != 0) {
        fprintf(stderr, "rung launch: unexpected '%s'\n", argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (prefix != NULL)
        l.prefix = prefix;
    /* A job's name, and a Kubernetes object's: lower-case letters, digits
     * and '-', from a letter. */
    bool ok = l.prefix[0] >= 'a' && l.prefix[0] <= 'z' && strlen(l.prefix) <= 32;
    for (const char *p = l.prefix; *p; p++)
        ok &= (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-';
    if (!ok) {
        fprintf(stderr,
                "rung launch: --name is '%s': up to 32 lower-case letters, digits and "
                "'-', from a letter\n",
                l.prefix);
        return CLI_EXIT_USAGE;
    }
    l.job.server = l.kjob.server = cli_rest_server(h);
    l.job.exit_idle_s = l.kjob.exit_idle_s = idle;
    l.kjob.prefix = l.prefix;
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a program that exits before reading its input */
    if (l.k8s)
        printf("rung launch k8s: Jobs labelled rung.dev/launcher=%s in namespace %s, at most "
               "%" PRId64 " at once, image %s, every %" PRId64 " s\n",
               l.prefix, l.kjob.namespace_, l.max_jobs, l.kjob.image, l.interval_s);
    else
        printf("rung launch slurm: jobs named %s-g*-c*-n*, at most %" PRId64
               " at once, workers from %s, every %" PRId64 " s\n",
               l.prefix, l.max_jobs, l.job.worker, l.interval_s);
    fflush(stdout);
    SlurmCount prev[SLURM_SHAPES_MAX];
    int n_prev = 0;
    for (;;) {
        rc = pass(h, &l, prev, &n_prev);
        if (l.once || l.dry_run)
            return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
        for (int64_t t = 0; t < l.interval_s * 10 && !stop_asked; t++)
            usleep(100 * 1000);
        if (stop_asked) {
            printf("stopping: the jobs submitted run on, and end once idle\n");
            return CLI_EXIT_OK;
        }
    }
}
