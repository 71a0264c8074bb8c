/* A trial's supervisor thread: its folder and logs, its process, its pipes
 * and report lines, the kill escalation, and its outcome (trial.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argv.h"
#include "clock.h"
#include "env.h"
#include "linebuf.h"
#include "log.h"
#include "reportline.h"
#include "tail.h"
#include "trial.h"
#include "trial_code.h"
#include "trial_internal.h"
#include "trialdir.h"
#include "warnings.h"
#include "why.h"

extern char **environ;

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
/* How often to look at a process without a pidfd, or at a group whose
 * leader is gone (nothing signals either). */
#define POLL_TICK_MS 100
#define IDLE_POLL_MS 1000      /* longest poll; every wake-up cause has its own fd */
#define LEFTOVER_GRACE_MS 1000 /* after the program exited, its group may close by itself */
/* After SIGKILL, pipes still held (a process stuck in the kernel) are given up. */
#define FORCE_CLOSE_MS 2000
#define READ_CHUNK 65536  /* bytes per read() of a pipe */
#define READS_PER_WAKE 16 /* reads of one pipe per poll round, so neither pipe starves */
#define SNIPPET 120       /* bytes of an offending line quoted in a warning */

/* The supervisor's own state (not shared). */
typedef struct Sup {
    WTrial *t;
    char dir[PATH_MAX];   /* <workdir>/trials/<id> */
    int dir_fd;           /* the folder, locked shared while we hold it (trialdir.h); or -1 */
    int out_log, err_log; /* stdout.log, stderr.log; -1 when they could not be opened */
    bool log_failed;      /* a write failed: warned once */
    Linebuf out_lines, err_lines;
    Tail tail;         /* of stderr */
    int64_t line_no;   /* stdout lines so far */
    int64_t next_step; /* the step of a report without one */
    char *buf;         /* READ_CHUNK bytes */
    char **argv, **envp;
    const char *cwd;  /* borrowed from the trainable */
    double timeout_s; /* 0 = none */
    bool said_rank;   /* a gang's node > 0: its first report line was logged */
    bool done;        /* a report said "done": true; later report lines are not sent */
    TrialCode code;   /* its working directory, environment, virtualenv (trial_code.h) */
} Sup;

static void write_log(Sup *s, int fd, const char *data, size_t n)
{
    while (fd >= 0 && n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!s->log_failed)
                LOG_WARN("trial %" PRId64 ": cannot write its log in %s: %s", s->t->id, s->dir,
                         strerror(errno));
            s->log_failed = true;
            return;
        }
        data += w;
        n -= (size_t)w;
    }
}

/* Queues a report for the sender; takes metrics and info (NULL: none). */
static void enqueue(WTrial *t, int64_t step, json_t *metrics, json_t *info)
{
    pthread_mutex_lock(&t->mu);
    if (t->abandoned || t->stop_received) {
        pthread_mutex_unlock(&t->mu);
        json_decref(metrics); /* the server ended the trial: nothing more is stored */
        json_decref(info);
        return;
    }
    Report *r = malloc(sizeof *r);
    if (r == NULL) {
        pthread_mutex_unlock(&t->mu);
        LOG_ERROR("trial %" PRId64 ": out of memory; report of step %" PRId64 " dropped", t->id,
                  step);
        json_decref(metrics);
        json_decref(info);
        return;
    }
    r->next = NULL;
    r->step = step;
    r->metrics = metrics;
    r->info = info;
    if (t->tail)
        t->tail->next = r;
    else
        t->head = r;
    t->tail = r;
    t->queued++;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->mu);
}

static void log_line(WTrial *t, const char *line, size_t len);

/* Counts an invalid report line for the heartbeats and the finish
 * (docs/api.md, the trial object's warnings). */
static void add_warning(WTrial *t, const char *line, size_t len, const char *why)
{
    pthread_mutex_lock(&t->mu);
    warnings_add(&t->warnings, line, len, why);
    pthread_mutex_unlock(&t->mu);
}

/* A report of a gang's node other than 0: only node 0's count (docs/api.md,
 * "Gangs"), so it is not sent but counted in the trial's warnings; the
 * first one is logged. */
static void not_node_0(Sup *s, const char *line, size_t len)
{
    WTrial *t = s->t;
    char why[64];
    snprintf(why, sizeof why, "only node 0 reports (this is node %" PRId64 ")", t->gang.rank);
    if (!s->said_rank)
        LOG_INFO("trial %" PRId64 ": node %" PRId64
                 " of its gang printed a report line (line %" PRId64
                 "); only node 0 reports: counted in the trial's warnings, not sent",
                 t->id, t->gang.rank, s->line_no);
    s->said_rank = true;
    add_warning(t, line, len, why);
}

/* Counts each value of the line that is not a number in the trial's
 * warnings, once per name (warnings.h): "metric 'phase' is not a number:
 * kept as info"; logged when counted, so once per name too. */
static void add_notes(Sup *s, const char *line, size_t len, const json_t *notes)
{
    WTrial *t = s->t;
    const char *key;
    json_t *why;
    json_object_foreach((json_t *)notes, key, why) {
        pthread_mutex_lock(&t->mu);
        bool counted = warnings_add_once(&t->warnings, key, line, len, json_string_value(why));
        pthread_mutex_unlock(&t->mu);
        if (counted)
            LOG_WARN("trial %" PRId64 ": stdout line %" PRId64 ": %s", t->id, s->line_no,
                     json_string_value(why));
    }
}

/* A valid report line: queued for rungd with its info; its notes counted;
 * "done": true ends the program, and the trial is finished as completed
 * once the reports before it are delivered (docs/api.md, "The line"). */
static void on_report(Sup *s, const char *line, size_t len, ReportLine *rep)
{
    WTrial *t = s->t;
    if (s->done)
        return; /* the program said it was finished: what it prints while ending is log */
    /* A line of info alone does not move the step counter, so the next
     * line's metrics take the step they would have had without it. */
    bool has_metrics = json_object_size(rep->metrics) > 0;
    if (has_metrics)
        s->next_step = rep->step + 1;
    if (t->gang.rank > 0) {
        not_node_0(s, line, len);
        return;
    }
    add_notes(s, line, len, rep->notes);
    if (has_metrics || json_object_size(rep->info) > 0) {
        enqueue(t, rep->step, rep->metrics, json_object_size(rep->info) > 0 ? rep->info : NULL);
        rep->metrics = NULL; /* taken by the queue */
        if (json_object_size(rep->info) > 0)
            rep->info = NULL;
    }
    if (rep->done) {
        s->done = true;
        LOG_INFO("trial %" PRId64 ": reported done at step %" PRId64 " (line %" PRId64
                 "); ending its process group, to finish it completed",
                 t->id, rep->step, s->line_no);
        wtrial_kill(t, KILL_DONE);
    }
}

static void on_stdout_line(void *arg, const char *line, size_t len, bool cut)
{
    Sup *s = arg;
    WTrial *t = s->t;
    s->line_no++;
    if (cut) {
        if (len >= 5 && memcmp(line, "@rung", 5) == 0) {
            char why[64];
            snprintf(why, sizeof why, "longer than %d bytes", REPORTLINE_MAX);
            LOG_WARN("trial %" PRId64 ": stdout line %" PRId64 " is not a valid report: %s", t->id,
                     s->line_no, why);
            add_warning(t, line, len, why);
        }
        return;
    }
    ReportLine rep;
    char why[256] = "";
    ReportLineKind kind = reportline_parse(line, len, s->next_step, &rep, why, sizeof why);
    if (kind == REPORTLINE_INVALID) {
        LOG_WARN("trial %" PRId64 ": stdout line %" PRId64 " is not a valid report (%s): %.*s",
                 t->id, s->line_no, why, (int)(len < SNIPPET ? len : SNIPPET), line);
        add_warning(t, line, len, why);
        return;
    }
    if (kind != REPORTLINE_OK) {
        log_line(t, line, len); /* an ordinary log line */
        return;
    }
    on_report(s, line, len, &rep);
    reportline_clear(&rep);
}

/* Adds a line to the log tail the heartbeats carry. */
static void log_line(WTrial *t, const char *line, size_t len)
{
    pthread_mutex_lock(&t->mu);
    tail_add(&t->log, line, len);
    t->log_changed = true;
    pthread_mutex_unlock(&t->mu);
}

static void on_stderr_line(void *arg, const char *line, size_t len, bool cut)
{
    (void)cut;
    Sup *s = arg;
    tail_add(&s->tail, line, len);
    log_line(s->t, line, len);
}

static bool queue_full(WTrial *t)
{
    pthread_mutex_lock(&t->mu);
    bool full = t->queued >= TRIAL_QUEUE_MAX;
    pthread_mutex_unlock(&t->mu);
    return full;
}

/* Reads what a pipe has now; closes it at EOF. */
static void pump(Sup *s, int *fd, bool is_stdout)
{
    Linebuf *lb = is_stdout ? &s->out_lines : &s->err_lines;
    LinebufFn fn = is_stdout ? on_stdout_line : on_stderr_line;
    for (int round = 0; round < READS_PER_WAKE && *fd >= 0; round++) {
        if (is_stdout && queue_full(s->t))
            return;
        ssize_t n = read(*fd, s->buf, READ_CHUNK);
        if (n > 0) {
            write_log(s, is_stdout ? s->out_log : s->err_log, s->buf, (size_t)n);
            linebuf_feed(lb, s->buf, (size_t)n, fn, s);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        linebuf_flush(lb, fn, s); /* EOF (or a read error, taken as one) */
        runner_close_fd(fd);
    }
}

/* Makes the trial folder and opens the logs, with a header per attempt. */
static int open_logs(Sup *s, char *why, size_t why_size)
{
    WTrial *t = s->t;
    const TrialHooks *h = t->hooks;
    char trials[PATH_MAX + 8];
    rung_why(trials, sizeof trials, "%s/trials", h->workdir);
    s->dir_fd = trialdir_open(trials, t->id, s->dir, sizeof s->dir, why, why_size);
    if (s->dir_fd < 0)
        return -1;
    char path[PATH_MAX + 16];
    char when[RUNG_TIME_LEN];
    rung_time_format(rung_now_ms(), when, sizeof when);
    char header[512], gang[GANG_ADDR_MAX + 64] = "";
    if (t->gang.is_gang)
        snprintf(gang, sizeof gang, ", node %" PRId64 " of %" PRId64 " (master %s:%d)",
                 t->gang.rank, t->gang.nnodes, t->gang.master_addr, t->gang.master_port);
    int hlen = snprintf(header, sizeof header,
                        "==== rung-worker: trial %" PRId64 ", attempt %" PRId64 ", worker %" PRId64
                        " (%s)%s, %s ====\n",
                        t->id, t->attempt, h->worker_id, h->hostname, gang, when);
    if (hlen < 0 || hlen >= (int)sizeof header)
        hlen = (int)strlen(header);
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, k == 0 ? "stdout.log" : "stderr.log");
        int fd = openat(s->dir_fd, k == 0 ? "stdout.log" : "stderr.log",
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            rung_why(why, why_size, "cannot open %s: %s", path, strerror(errno));
            return -1;
        }
        *(k == 0 ? &s->out_log : &s->err_log) = fd;
        write_log(s, fd, header, (size_t)hlen);
    }
    if (t->from_trial > 0) {
        char line[1536];
        wtrial_donor_fetch(t, trials, s->dir, line, sizeof line);
        write_log(s, s->err_log, line, strlen(line));
    }
    return 0;
}

/* Decides argv, environment, cwd and timeout from the trainable. */
static int prepare(Sup *s, char *why, size_t why_size)
{
    WTrial *t = s->t;
    const json_t *tr = t->trainable;
    if (tr == NULL || json_is_null(tr)) {
        snprintf(why, why_size, "the experiment has no trainable");
        return -1;
    }
    const char *type = json_string_value(json_object_get(tr, "type"));
    bool builtin = type && strcmp(type, "builtin") == 0;
    if (type == NULL || (!builtin && strcmp(type, "command") != 0)) {
        snprintf(why, why_size, "trainable.type '%s' is not one this worker runs",
                 type ? type : "(none)");
        return -1;
    }
    /* The team's code: environment, working directory, requirements. */
    if (trialcode_prepare(t, &s->code, s->err_log, why, why_size) != 0)
        return -1;
    if (builtin) {
        /* The built-in trainer is a program beside this one (docs/architecture.md). */
        char exe[PATH_MAX + 16];
        snprintf(exe, sizeof exe, "%s/rung-train", t->hooks->exe_dir);
        if (access(exe, X_OK) != 0) {
            rung_why(why, why_size,
                     "builtin trainable: the trainer rung-train is not installed next to "
                     "rung-worker (%s: %s)",
                     exe, strerror(errno));
            return -1;
        }
        s->argv = calloc(2, sizeof *s->argv);
        if (s->argv == NULL || (s->argv[0] = strdup(exe)) == NULL) {
            snprintf(why, why_size, "out of memory");
            return -1;
        }
    } else {
        /* The config's values and the gang's placeholders (gang.h). */
        const json_t *argv = json_object_get(tr, "argv");
        json_t *values = gang_argv_values(&t->gang, t->config, argv, why, why_size);
        if (values == NULL)
            return -1;
        s->argv = argv_expand(argv, values, why, why_size);
        json_decref(values);
        if (s->argv == NULL)
            return -1;
        const json_t *cwd = json_object_get(tr, "cwd");
        if (cwd && !json_is_null(cwd)) {
            if (!json_is_string(cwd)) {
                snprintf(why, why_size, "trainable.cwd is not a string");
                return -1;
            }
            s->cwd = json_string_value(cwd);
        }
        if (s->code.tree[0] != '\0') /* trainable.cwd is inside the tree */
            s->cwd = s->code.cwd;
        const json_t *timeout = json_object_get(tr, "timeout_s");
        if (json_is_number(timeout) && json_number_value(timeout) > 0)
            s->timeout_s = json_number_value(timeout);
    }
    char *config = json_dumps(t->config, JSON_COMPACT);
    char gpus[SLOTS_MAX_GPUS * 8] = "";
    for (int i = 0, o = 0; i < t->n_gpus; i++)
        o += snprintf(gpus + o, sizeof gpus - (size_t)o, "%s%" PRId64, i ? "," : "", t->gpus[i]);
    char num[5][24];
    snprintf(num[0], sizeof num[0], "%" PRId64, t->id);
    snprintf(num[1], sizeof num[1], "%" PRId64, t->experiment_id);
    snprintf(num[2], sizeof num[2], "%" PRId64, t->attempt);
    snprintf(num[3], sizeof num[3], "%" PRId64, t->resume_step);
    snprintf(num[4], sizeof num[4], "%" PRId64, t->keep_every);
    Env env;
    env_init(&env);
    /* CUDA numbers GPUs fastest first unless told otherwise; NVML (and so
     * the indices we lease) goes by PCI bus; Python buffers a pipe. A
     * trainable may still override either (env.h). */
    env_trial_base(&env, environ);
    bool env_ok = builtin || env_set_json(&env, json_object_get(tr, "env"));
    env_set(&env, "CUDA_VISIBLE_DEVICES", gpus);
    env_set(&env, "RUNG_TRIAL_ID", num[0]);
    env_set(&env, "RUNG_EXPERIMENT_ID", num[1]);
    env_set(&env, "RUNG_ATTEMPT", num[2]);
    env_set(&env, "RUNG_CONFIG", config ? config : "{}");
    env_set(&env, "RUNG_TRIAL_DIR", s->dir);
    /* A promoted trial: its checkpoint in RUNG_TRIAL_DIR is at this step. */
    if (t->resume_step > 0)
        env_set(&env, "RUNG_RESUME_STEP", num[3]);
    else
        env_unset(&env, "RUNG_RESUME_STEP");
    /* pbt: the steps whose checkpoints the population may still copy. */
    if (t->keep_every > 0)
        env_set(&env, "RUNG_KEEP_CHECKPOINTS_EVERY", num[4]);
    else
        env_unset(&env, "RUNG_KEEP_CHECKPOINTS_EVERY");
    /* A gang member's place: RUNG_NODE_RANK, MASTER_ADDR, RANK, ... */
    gang_env(&env, &t->gang);
    if (builtin) {
        char *trainable = json_dumps(tr, JSON_COMPACT);
        env_set(&env, "RUNG_TRAINABLE", trainable ? trainable : "{}");
        free(trainable);
    }
    bool config_ok = config != NULL;
    free(config);
    /* A bare python becomes the environment's; rung on PYTHONPATH (not in
     * a container: the image has its own). */
    bool container = !builtin && trialcode_has_container(t);
    if (!builtin && !container && env_ok &&
        trialcode_apply(t, &s->code, s->argv, &env, why, why_size) != 0) {
        env_close(&env);
        return -1;
    }
    s->envp = env_take(&env);
    env_close(&env);
    if (!env_ok) {
        snprintf(why, why_size, "trainable.env must be an object of strings");
        return -1;
    }
    if (s->envp == NULL || !config_ok) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    if (container)
        return trialcode_container(t, &s->code, s->dir, s->cwd, &s->argv, s->envp, why, why_size);
    return 0;
}

/* The loop of a started process: returns when it exited, its pipes are
 * drained and its group is gone (or given up on after SIGKILL). Sets
 * *reason_at_exit to the kill reason when the leader ended. */
static void watch(Sup *s, KillReason *reason_at_exit)
{
    WTrial *t = s->t;
    Runner *r = &t->runner;
    int64_t started = rung_mono_ns();
    int64_t timeout_at = s->timeout_s > 0 ? started + (int64_t)(s->timeout_s * NS_PER_S) : 0;
    int64_t exited_at = 0, kill_sent_at = 0;
    for (;;) {
        int64_t now = rung_mono_ns();
        if (!r->reaped && runner_exited(r)) {
            pthread_mutex_lock(&t->mu);
            runner_reap(r); /* under the lock: nobody signals the group in between */
            *reason_at_exit = t->kill_reason;
            pthread_mutex_unlock(&t->mu);
            exited_at = now;
        }
        pthread_mutex_lock(&t->mu);
        if (r->reaped && !t->group_gone) {
            /* Zombies of the group that are our children (we are PID 1 in a
             * container, or they were never orphaned) are ours to reap. */
            while (waitpid(-r->pid, NULL, WNOHANG) > 0) {
            }
            if (!runner_group_alive(r))
                t->group_gone = true;
        }
        bool gone = t->group_gone;
        KillReason reason = t->kill_reason;
        if (t->term_sent && !t->kill_sent && !gone &&
            now >= t->kill_at_ns + TRIAL_KILL_GRACE_S * NS_PER_S) {
            LOG_INFO("trial %" PRId64 ": still running %d s after SIGTERM; SIGKILL", t->id,
                     TRIAL_KILL_GRACE_S);
            runner_signal(r, SIGKILL);
            t->kill_sent = true;
        }
        if (t->kill_sent && kill_sent_at == 0)
            kill_sent_at = now;
        bool term_sent = t->term_sent, kill_sent = t->kill_sent;
        int64_t kill_at = t->kill_at_ns;
        pthread_mutex_unlock(&t->mu);

        if (timeout_at && !r->reaped && reason == KILL_NONE && now >= timeout_at) {
            LOG_WARN("trial %" PRId64 ": timed out after %g s; ending its process group", t->id,
                     s->timeout_s);
            wtrial_kill(t, KILL_TIMEOUT);
            continue;
        }
        if (r->reaped && !gone && !term_sent && now >= exited_at + LEFTOVER_GRACE_MS * NS_PER_MS) {
            LOG_INFO("trial %" PRId64 ": the program exited but left processes in its group; "
                     "ending them",
                     t->id);
            wtrial_kill(t, KILL_LEFTOVER);
            continue;
        }
        bool pipes_open = r->out_fd >= 0 || r->err_fd >= 0;
        if (r->reaped && !pipes_open && gone)
            return;
        if (r->reaped && kill_sent_at && now >= kill_sent_at + FORCE_CLOSE_MS * NS_PER_MS) {
            if (pipes_open || !gone)
                LOG_WARN("trial %" PRId64 ": its processes do not go away after SIGKILL; "
                         "leaving them",
                         t->id);
            linebuf_flush(&s->out_lines, on_stdout_line, s);
            linebuf_flush(&s->err_lines, on_stderr_line, s);
            runner_close_fd(&r->out_fd);
            runner_close_fd(&r->err_fd);
            return;
        }

        int64_t wait_ms = IDLE_POLL_MS;
        if ((!r->reaped && r->pidfd < 0) || (r->reaped && !gone) || kill_sent)
            wait_ms = POLL_TICK_MS;
        if (timeout_at && !r->reaped && reason == KILL_NONE) {
            int64_t left = (timeout_at - now) / NS_PER_MS + 1;
            wait_ms = left < wait_ms ? left : wait_ms;
        }
        if (term_sent && !kill_sent) {
            int64_t left = (kill_at + TRIAL_KILL_GRACE_S * NS_PER_S - now) / NS_PER_MS + 1;
            wait_ms = left < wait_ms ? left : wait_ms;
        }
        if (wait_ms < 1)
            wait_ms = 1;
        struct pollfd fds[4];
        int n = 0, i_out = -1, i_err = -1;
        if (r->out_fd >= 0 && !queue_full(t)) {
            i_out = n;
            fds[n++] = (struct pollfd){.fd = r->out_fd, .events = POLLIN};
        }
        if (r->err_fd >= 0) {
            i_err = n;
            fds[n++] = (struct pollfd){.fd = r->err_fd, .events = POLLIN};
        }
        if (!r->reaped && r->pidfd >= 0)
            fds[n++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
        fds[n++] = (struct pollfd){.fd = t->wake_fd, .events = POLLIN};
        if (poll(fds, (nfds_t)n, (int)wait_ms) < 0 && errno != EINTR) {
            LOG_ERROR("trial %" PRId64 ": poll: %s", t->id, strerror(errno));
            struct timespec ts = {.tv_sec = 0, .tv_nsec = POLL_TICK_MS * NS_PER_MS};
            nanosleep(&ts, NULL);
        }
        uint64_t count;
        if (read(t->wake_fd, &count, sizeof count) < 0) {
            /* EAGAIN: nobody woke us */
        }
        if (i_out >= 0 && fds[i_out].revents)
            pump(s, &r->out_fd, true);
        if (i_err >= 0 && fds[i_err].revents)
            pump(s, &r->err_fd, false);
    }
}

/* The finish's error text: head, then the stderr tail when there is one.
 * New string. */
static char *error_text(Sup *s, const char *head)
{
    char *tail = tail_text(&s->tail);
    size_t n = strlen(head) + (tail ? strlen(tail) : 0) + 2;
    char *e = malloc(n);
    if (e)
        snprintf(e, n, "%s%s%s", head, tail && tail[0] ? "\n" : "", tail ? tail : "");
    free(tail);
    return e;
}

/* How long a new lease of a trial waits for the program of its previous
 * lease on this worker to be gone: its kill's grace and a margin. */
#define OLDER_WAIT_NS ((int64_t)(TRIAL_KILL_GRACE_S + 5) * 1000000000LL)

/* A trial leased again on this worker (promoted, resumed at a pbt
 * milestone, exploiting, given back) while its previous program is still
 * ending (a "stop" answer reached it moments ago): that program may still
 * write checkpoints into the folder, which the new one reads (and a pbt
 * copy replaces). So the new one starts once the old process group is
 * gone. */
static void wait_for_older(WTrial *t)
{
    int64_t deadline = rung_mono_ns() + OLDER_WAIT_NS;
    for (;;) {
        if (!t->hooks->older_running(t->hooks->ctx, t))
            return;
        if (rung_mono_ns() > deadline) {
            LOG_WARN("trial %" PRId64 ": its previous program on this worker is still running; "
                     "starting anyway",
                     t->id);
            return;
        }
        usleep(20 * 1000);
    }
}

static void *supervise(void *arg)
{
    WTrial *t = arg;
    Sup s = {.t = t, .out_log = -1, .err_log = -1, .dir_fd = -1, .next_step = t->resume_step + 1};
    trialcode_init(&s.code);
    tail_init(&s.tail);
    char why[TRIAL_WHY_MAX];
    snprintf(why, sizeof why, "%s", t->prefail);
    s.buf = malloc(READ_CHUNK);
    /* One byte over the parser's limit, so that it sees (and names) an
     * over-long report line itself. */
    if (s.buf == NULL || linebuf_init(&s.out_lines, REPORTLINE_MAX + 1) != 0 ||
        linebuf_init(&s.err_lines, TAIL_MAX_BYTES) != 0)
        snprintf(why, sizeof why, "out of memory");
    if (why[0] == '\0')
        wait_for_older(t);
    if (why[0] == '\0')
        open_logs(&s, why, sizeof why);
    if (why[0] == '\0')
        prepare(&s, why, sizeof why);

    pthread_t sender;
    bool sender_running = pthread_create(&sender, NULL, wtrial_sender_main, t) == 0;
    if (!sender_running && why[0] == '\0')
        snprintf(why, sizeof why, "cannot start a thread for the trial's reports");

    KillReason reason_at_exit = KILL_NONE;
    bool preempted = false;
    if (why[0] == '\0') {
        pthread_mutex_lock(&t->mu);
        KillReason early = t->kill_reason;
        pthread_mutex_unlock(&t->mu);
        if (early == KILL_PREEMPT) {
            preempted = true; /* given back before it started */
        } else if (early != KILL_NONE) {
            snprintf(why, sizeof why, "%s before it started",
                     early == KILL_SHUTDOWN ? "the worker shut down" : "stopped");
        } else {
            RunnerSpec spec = {.argv = s.argv, .envp = s.envp, .cwd = s.cwd};
            Runner r;
            /* The rendezvous port is the program's from now on. */
            if (t->port_fd >= 0) {
                close(t->port_fd);
                t->port_fd = -1;
            }
            if (runner_start(&spec, &r, why, sizeof why) == 0) {
                pthread_mutex_lock(&t->mu);
                t->runner = r;
                wtrial_term_if_asked(t); /* a kill asked while it was starting */
                pthread_mutex_unlock(&t->mu);
                LOG_DEBUG("trial %" PRId64 ": started pid %d", t->id, (int)r.pid);
                watch(&s, &reason_at_exit);
            }
        }
    }

    /* The process is gone: its GPUs and CPUs may take the next trial while
     * its last reports and the finish are still on their way. Its copy of
     * the working directory goes with it. */
    trialcode_end(&s.code);
    t->hooks->released(t->hooks->ctx, t);
    bool completed = false;
    char *error = NULL;
    if (why[0] != '\0') {
        error = strdup(why);
    } else if (preempted || reason_at_exit == KILL_PREEMPT) {
        /* Given back: however it exited, it runs again from its checkpoint. */
        preempted = true;
        LOG_DEBUG("trial %" PRId64 ": preempted; process ended: %s", t->id,
                  t->runner.reaped ? "after SIGTERM" : "never started");
    } else {
        char desc[160];
        runner_describe(t->runner.status, desc, sizeof desc);
        char head[256];
        if (reason_at_exit == KILL_TIMEOUT) {
            snprintf(head, sizeof head, "timed out after %g s", s.timeout_s);
            error = error_text(&s, head);
        } else if (reason_at_exit == KILL_DONE || (s.done && reason_at_exit == KILL_NONE)) {
            /* It said done: the SIGTERM that ended it is ours, and an exit
             * of its own after the line (before the kill) changes nothing. */
            completed = true;
        } else if (reason_at_exit == KILL_SHUTDOWN) {
            snprintf(head, sizeof head, "the worker shut down and ended the trial (%s)", desc);
            error = error_text(&s, head);
        } else if (WIFEXITED(t->runner.status) && WEXITSTATUS(t->runner.status) == 0) {
            completed = true;
        } else {
            error = error_text(&s, desc);
        }
        LOG_DEBUG("trial %" PRId64 ": process ended: %s", t->id, desc);
    }
    if (!completed && !preempted && error == NULL)
        error = strdup("failed (out of memory describing why)");
    pthread_mutex_lock(&t->mu);
    t->completed = completed;
    t->preempted = preempted;
    t->error = error;
    t->outcome_known = true;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->mu);

    if (sender_running)
        pthread_join(sender, NULL);
    else
        wtrial_sender_main(t); /* no reports went out (none were made): the finish still goes */

    if (s.out_log >= 0)
        close(s.out_log);
    if (s.err_log >= 0)
        close(s.err_log);
    linebuf_close(&s.out_lines);
    linebuf_close(&s.err_lines);
    tail_close(&s.tail);
    free(s.buf);
    argv_free(s.argv);
    env_free(s.envp);
    bool had_folder = s.dir_fd >= 0;
    if (had_folder)
        close(s.dir_fd); /* --keep-trials may remove it now */
    t->hooks->done(t->hooks->ctx, t, had_folder);
    wtrial_free(t);
    return NULL;
}

int wtrial_start(WTrial *t)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc = pthread_create(&th, &attr, supervise, t);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}
