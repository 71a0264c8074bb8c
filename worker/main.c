/* rung-worker: runs trials for rungd on this machine (docs/api.md, "Workers").
 *
 * Parses its options from one table, finds the GPUs (NVML, optional),
 * registers, then runs the lease and heartbeat threads (worker.h) and one
 * supervisor per trial (trial.h) until told to stop:
 *
 *   - SIGINT/SIGTERM once: no new lease requests (the long poll in flight
 *     ends by itself, within --lease-wait-s, and a trial it brings is run);
 *     running trials finish and their reports and finish are delivered;
 *     exit 0.
 *   - a second time: the trials' process groups get SIGTERM, what can be
 *     delivered within WORKER_HARD_STOP_S is, then exit (1 if something was
 *     left undelivered; the server retries those trials once their leases
 *     expire).
 *   - --once: exit 0 when a lease request made with nothing running got 204;
 *     --exit-idle-s N: the same once nothing ran for N s; --max-trials N:
 *     no lease request after the Nth trial, exit 0 once they end.
 *   - in a batch job (setup_batchjob, jobend.h): SIGTERM (--on-sigterm
 *     give-back, the default under Slurm) and --deadline's margin give the
 *     running trials back (each finishes preempted and is leased again)
 *     instead of letting them finish; exit 0 once that is delivered.
 *
 * Each trial runs in <workdir>/trials/<trial id> (RUNG_TRIAL_DIR), with its
 * stdout.log and stderr.log (every attempt appended after a header line).
 * The default workdir is ./rung-worker-<worker id> (or -2, -3, ... when that
 * exists), made in the folder the worker starts in; --workdir names another.
 * Once a trial ends, the folders of the trials this worker ran and that
 * ended are removed but for the newest --keep-trials (prune.h; paused
 * trials' folders stay for their resume). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "advertise.h"
#include "ckptxfer.h"
#include "client.h"
#include "gang.h"
#include "gpus.h"
#include "gpuwatch.h"
#include "hours.h"
#include "jobend.h"
#include "labels.h"
#include "log.h"
#include "options.h"
#include "secret.h"
#include "servers.h"
#include "setup.h"
#include "trial_code.h"
#include "trialdir.h"
#include "worker.h"

#define MAX_CPU_SLOTS 4096 /* as the server's SPEC_MAX_CPUS */
/* The daemon rung talks to when told nothing (cli/main.c): a worker started
 * beside rungd on one machine needs no --server either (README.md). */
#define DEFAULT_SERVER "http://127.0.0.1:8080"

enum {
    O_SERVER,
    O_TOKEN,
    O_TOKEN_FILE,
    O_CA,
    O_INSECURE,
    O_ALLOW_PLAIN_HTTP,
    O_NAME,
    O_LABEL,
    O_GPUS,
    O_CPU_SLOTS,
    O_WORKDIR,
    O_KEEP_TRIALS,
    O_ONCE,
    O_EXIT_IDLE,
    O_MAX_TRIALS,
    O_DEADLINE,
    O_DEADLINE_MARGIN,
    O_ON_SIGTERM,
    O_LEASE_WAIT,
    O_YIELD,
    O_IDLE_S,
    O_FOREIGN_MEM,
    O_FOREIGN_UTIL,
    O_HOURS,
    O_ADVERTISE_ADDR,
    O_GANG_PORTS,
    O_ENV,
    O_CACHE_DIR,
    O_CACHE_MB,
    O_PIP_INDEX,
    O_CONTAINER_RUNTIME,
    O_CONTAINER_ARG,
    O_CONTAINER_RUN_ARG,
    O__COUNT
};

/* The one table of options: validation and --help both come from it. */
static Option options[O__COUNT] = {
    [O_SERVER] = {"server", OPT_STRING, NULL, 0, 0, 0,
                  "rungd's address, http://HOST:PORT, or several comma-separated (a leader "
                  "and its standbys) (default: $RUNG_SERVER, else " DEFAULT_SERVER
                  ", as for rung)"},
    [O_TOKEN] = {"token", OPT_STRING, NULL, 0, 0, 0, "bearer token (default: $RUNG_TOKEN)"},
    [O_TOKEN_FILE] = {"token-file", OPT_STRING, NULL, 0, 0, 0,
                      "read the bearer token from this file instead (not shown by ps)"},
    [O_CA] = {"ca", OPT_STRING, NULL, 0, 0, 0,
              "the CA that verifies an https:// rungd (default: $RUNG_CA, else the system's)"},
    [O_INSECURE] = {"insecure", OPT_FLAG, NULL, 0, 0, 0,
                    "do not verify the https:// rungd's certificate ($RUNG_INSECURE=1)"},
    [O_ALLOW_PLAIN_HTTP] = {"allow-plain-http", OPT_FLAG, NULL, 0, 0, 0,
                            "send the token over http:// to another machine "
                            "($RUNG_ALLOW_PLAIN_HTTP=1)"},
    [O_NAME] = {"name", OPT_STRING, NULL, 0, 0, 0,
                "name shown for this worker (default: host name)"},
    /* Repeatable, so taken off the command line before the table parses it
     * (take_labels); listed here for --help. */
    [O_LABEL] = {"label", OPT_STRING, NULL, 0, 0, 0,
                 "key=value: a label rungd matches against worker_selector; repeatable"},
    [O_GPUS] = {"gpus", OPT_STRING, NULL, 0, 0, 0,
                "auto (every GPU NVML sees), none, or indices like 0,1 (default: in a Slurm "
                "job its GPUs, SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES, else auto)"},
    [O_CPU_SLOTS] = {"cpu-slots", OPT_INT, NULL, 0, 1, MAX_CPU_SLOTS,
                     "CPUs offered to trials (default: in a Slurm job SLURM_CPUS_ON_NODE, "
                     "else the online CPUs)"},
    [O_WORKDIR] = {"workdir", OPT_STRING, NULL, 0, 0, 0,
                   "folder for trial folders (default: ./rung-worker-<worker id>)"},
    [O_KEEP_TRIALS] = {"keep-trials", OPT_INT, NULL, 50, 0, 1000000000,
                       "folders of ended trials kept in the workdir, newest first (paused "
                       "trials' are always kept)"},
    [O_ONCE] = {"once", OPT_FLAG, NULL, 0, 0, 0, "exit when the server has no more work"},
    /* A worker in a batch job (batchjob.h, jobend.h; docs/workers.md, "On
     * Slurm"). */
    [O_EXIT_IDLE] = {"exit-idle-s", OPT_INT, NULL, 0, 0, 1LL << 31,
                     "exit after this many seconds without a trial to run (0: never)"},
    [O_MAX_TRIALS] = {"max-trials", OPT_INT, NULL, 0, 0, 1LL << 40,
                      "take at most this many trials, then exit once they end (0: no limit)"},
    [O_DEADLINE] = {"deadline", OPT_STRING, NULL, 0, 0, 0,
                    "when the job ends: seconds since the epoch, +N[s|m|h], "
                    "YYYY-MM-DDTHH:MM[:SS][Z], or auto (squeue's end of $SLURM_JOB_ID); "
                    "--deadline-margin-s before it, running trials are given back and the "
                    "worker exits (default: auto in a Slurm job)"},
    [O_DEADLINE_MARGIN] = {"deadline-margin-s", OPT_INT, NULL, 120, 0, 86400,
                           "seconds before --deadline that trials are given back"},
    [O_ON_SIGTERM] = {"on-sigterm", OPT_STRING, NULL, 0, 0, 0,
                      "finish: running trials run to their end; give-back: they are given "
                      "back at once and resume elsewhere (default: give-back in a Slurm job, "
                      "where scancel and the time limit send SIGTERM, else finish)"},
    [O_LEASE_WAIT] = {"lease-wait-s", OPT_INT, NULL, 10, 1, 30,
                      "long poll of one lease request, seconds"},
    /* Spare GPUs and working hours (gpuwatch.h; docs/workers.md). */
    [O_YIELD] = {"yield", OPT_STRING, "auto", 0, 0, 0,
                 "auto: a trial gives its GPU back when other processes want it, and every "
                 "trial outside --hours (it is preempted and resumes from its checkpoint); "
                 "never: trials run to their end"},
    [O_IDLE_S] = {"idle-s", OPT_INT, NULL, 60, 0, 86400,
                  "seconds a GPU must be free of other processes' use before trials get it"},
    [O_FOREIGN_MEM] = {"foreign-mem-mb", OPT_INT, NULL, 256, 1, 16777216,
                       "other processes holding this many MiB of a GPU are using it"},
    [O_FOREIGN_UTIL] = {"foreign-util", OPT_INT, NULL, 10, 1, 100,
                        "other processes using this percent of a GPU are using it"},
    [O_HOURS] = {"hours", OPT_STRING, NULL, 0, 0, 0,
                 "when to take trials, in local time, e.g. 'Mon-Fri 19:00-07:00,Sat-Sun' "
                 "(default: any time)"},
    [O_ADVERTISE_ADDR] = {"advertise-addr", OPT_STRING, NULL, 0, 0, 0,
                          "address other workers reach this one at, for gangs (default: this "
                          "machine's address on its route to --server)"},
    [O_GANG_PORTS] = {"gang-ports", OPT_STRING, NULL, 0, 0, 0,
                      "LO-HI or PORT: where MASTER_PORT is picked when this worker is a gang's "
                      "node 0 (default: any free port)"},
    /* A team's code (docs/workers.md, "Running a team's code"). --env and
     * the --container-* lists are repeatable: taken off the command line
     * by take_repeated, listed here for --help. */
    [O_ENV] = {"env", OPT_STRING, NULL, 0, 0, 0,
               "NAME=PATH: environment NAME's Python interpreter; trials naming NAME come "
               "here, and a bare python/python3 in their argv is PATH; repeatable, or "
               "several in one value separated by spaces"},
    [O_CACHE_DIR] = {"cache-dir", OPT_STRING, NULL, 0, 0, 0,
                     "working directories and virtualenvs (default: <workdir>/cache)"},
    [O_CACHE_MB] = {"cache-mb", OPT_INT, NULL, 10240, 1, 1LL << 40,
                    "MiB the cache may hold; least recently used removed first"},
    [O_PIP_INDEX] = {"pip-index", OPT_STRING, NULL, 0, 0, 0,
                     "package index a requirements.txt installs from (default: offline, from "
                     "the wheels in the working directory)"},
    [O_CONTAINER_RUNTIME] = {"container-runtime", OPT_STRING, NULL, 0, 0, 0,
                             "podman, docker or apptainer: offered for container trials; "
                             "repeatable (default: those found in PATH)"},
    [O_CONTAINER_ARG] = {"container-arg", OPT_STRING, NULL, 0, 0, 0,
                         "an option put before the runtime's `run`; repeatable"},
    [O_CONTAINER_RUN_ARG] = {"container-run-arg", OPT_STRING, NULL, 0, 0, 0,
                             "an option put after the runtime's `run`; repeatable"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: rung-worker [--server URL] [options]\n\n");
    options_usage(out, options, O__COUNT);
    fprintf(out, "\nSIGINT/SIGTERM: finish the running trials, then exit; "
                 "a second one ends them now. With --on-sigterm give-back (the default in a "
                 "Slurm job) SIGTERM gives them back at once.\n");
    fprintf(out, "\n--hours: comma-separated days (Mon, Mon-Fri), times (HH:MM-HH:MM, end not "
                 "included, 24:00 allowed) or both;\ntimes apply to each day, and 19:00-07:00 "
                 "means 00:00-07:00 and 19:00-24:00.\n");
}

/* Parses --gpus: "auto" and "none" set *mode; a list fills gpus. */
enum { GPUS_AUTO, GPUS_NONE, GPUS_LIST };

static int parse_gpus(const char *s, int *mode, int *gpus, int *n)
{
    *n = 0;
    if (strcmp(s, "auto") == 0) {
        *mode = GPUS_AUTO;
        return 0;
    }
    if (strcmp(s, "none") == 0) {
        *mode = GPUS_NONE;
        return 0;
    }
    *mode = GPUS_LIST;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1023 || (*end != ',' && *end != '\0'))
            goto bad;
        for (int i = 0; i < *n; i++)
            if (gpus[i] == v) {
                fprintf(stderr, "rung-worker: --gpus lists GPU %ld twice\n", v);
                return -1;
            }
        if (*n == SLOTS_MAX_GPUS) {
            fprintf(stderr, "rung-worker: --gpus lists more than %d GPUs\n", SLOTS_MAX_GPUS);
            return -1;
        }
        gpus[(*n)++] = (int)v;
        if (*end == '\0')
            return 0;
        p = end + 1;
    }
bad:
    fprintf(stderr, "rung-worker: --gpus must be auto, none or indices like 0,1, not '%s'\n", s);
    return -1;
}

/* The repeatable options, in the order of Repeated's lists (setup.h). */
static const int repeatable[SETUP_N_REPEATED] = {O_LABEL, O_ENV, O_CONTAINER_RUNTIME,
                                                 O_CONTAINER_ARG, O_CONTAINER_RUN_ARG};

/* Sets w->advertise_addr: --advertise-addr (an IPv6 literal may come in
 * brackets), or the local address of the route to the server
 * (advertise.h), or at worst the host name. 0, or -1 after a message. */
static int setup_advertise(WorkerState *w, const char *given)
{
    if (given != NULL) {
        char bare[GANG_ADDR_MAX + 1];
        if (gang_addr_unbracket(given, bare, sizeof bare) == 0)
            given = bare;
        if (!gang_addr_valid(given)) {
            fprintf(stderr,
                    "rung-worker: --advertise-addr must be a host name or IP address (1 to %d "
                    "bytes of letters, digits, '.', '-', ':', '_', '%%'; not starting with '-'), "
                    "not '%s'\n",
                    GANG_ADDR_MAX, given);
            return -1;
        }
        snprintf(w->advertise_addr, sizeof w->advertise_addr, "%s", given);
        return 0;
    }
    char why[512];
    /* The route to the first of rungd's addresses (a list: servers.h). */
    char first[RUNG_SERVER_URL_MAX];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(w->server, ","), w->server);
    if (advertise_route_addr(first, w->advertise_addr, sizeof w->advertise_addr, why, sizeof why) ==
            0 &&
        gang_addr_valid(w->advertise_addr))
        return 0;
    snprintf(w->advertise_addr, sizeof w->advertise_addr, "%s", w->hostname);
    if (!gang_addr_valid(w->advertise_addr)) {
        fprintf(stderr,
                "rung-worker: no address for gangs (%s) and the host name '%s' is none; "
                "give --advertise-addr\n",
                why, w->hostname);
        return -1;
    }
    LOG_WARN("no address on the route to the server (%s); gang members will be told the host "
             "name %s (--advertise-addr sets another)",
             why, w->advertise_addr);
    return 0;
}

/* Reads --yield, --idle-s, --foreign-mem-mb, --foreign-util and --hours
 * into w (hours is where the parsed --hours lives). 0, or -1 after a
 * message. */
static int setup_spare(WorkerState *w, Hours *hours)
{
    const char *yield = options[O_YIELD].value;
    if (strcmp(yield, "auto") != 0 && strcmp(yield, "never") != 0) {
        fprintf(stderr, "rung-worker: --yield must be auto or never, not '%s'\n", yield);
        return -1;
    }
    w->yield = strcmp(yield, "auto") == 0;
    w->spare = (SpareParams){.idle_ms = options[O_IDLE_S].ival * 1000,
                             .foreign_mem_mb = options[O_FOREIGN_MEM].ival,
                             .foreign_util = (double)options[O_FOREIGN_UTIL].ival / 100.0};
    const char *text = options[O_HOURS].value;
    if (text != NULL) {
        char why[256];
        if (hours_parse(text, hours, why, sizeof why) != 0) {
            fprintf(stderr, "rung-worker: --hours: %s\n", why);
            return -1;
        }
        w->hours = hours;
        w->hours_text = text;
    }
    return 0;
}

/* ---- signals ---- */

static sigset_t stop_signals;
static bool term_gives_back; /* --on-sigterm give-back; set before the thread starts */

/* Waits for SIGINT/SIGTERM (blocked in every thread) and escalates. Never
 * returns; the process ends with it. */
static void *signal_main(void *arg)
{
    WorkerState *w = arg;
    for (int count = 1;; count++) {
        int sig = 0;
        if (sigwait(&stop_signals, &sig) != 0)
            continue;
        LOG_INFO("%s received", sig == SIGINT ? "SIGINT" : "SIGTERM");
        if (count == 1 && sig == SIGTERM && term_gives_back)
            jobend_give_back(w, "SIGTERM (--on-sigterm give-back)");
        else
            worker_stop(w, count == 1 ? STOP_DRAIN : STOP_HARD);
    }
    return NULL;
}

/* ---- start-up ---- */

static bool register_cancel(void *arg)
{
    return worker_stopping(arg, STOP_DRAIN);
}

/* A hard stop cancels checkpoint uploads (ckptxfer.h). */
static bool upload_cancel(void *arg)
{
    return worker_stopping(arg, STOP_HARD);
}

/* Registers with the server, retrying while it cannot be reached. 0, 1
 * (stopped meanwhile) or -1 (refused). */
static int register_worker(WorkerState *w, const int *gpus, int n_gpus)
{
    Client *c = client_new(w->server, w->token);
    if (c == NULL) {
        fprintf(stderr, "rung-worker: out of memory\n");
        return -1;
    }
    json_t *list = json_array();
    for (int i = 0; i < n_gpus; i++) {
        GpuInfo info;
        if (gpus_info(w->gpus, gpus[i], &info) != 0) {
            snprintf(info.name, sizeof info.name, "GPU %d", gpus[i]);
            info.memory_mb = 0;
        }
        json_array_append_new(list, json_pack("{s:i, s:s, s:I}", "index", gpus[i], "name",
                                              info.name, "memory_mb", (json_int_t)info.memory_mb));
    }
    json_t *body = json_pack("{s:s, s:s, s:o, s:I, s:O}", "name", w->name, "hostname", w->hostname,
                             "gpus", list, "cpus", (json_int_t)w->slots.cpus, "labels", w->labels);
    setup_register_fields(w, body);
    ClientCall call = {.retry = true,
                       .cancel = register_cancel,
                       .cancel_arg = w,
                       .what = "register"};
    ClientReply reply;
    int rc = client_post(c, "/api/v1/workers", body, &call, &reply);
    if (rc == 0 && setup_register_refused(w, body, &reply)) {
        client_reply_clear(&reply);
        rc = client_post(c, "/api/v1/workers", body, &call, &reply);
    }
    json_decref(body);
    client_free(c);
    if (rc != 0) {
        client_reply_clear(&reply);
        return 1;
    }
    const json_t *id = json_object_get(reply.body, "worker_id");
    const json_t *hb = json_object_get(reply.body, "heartbeat_s");
    const json_t *lease = json_object_get(reply.body, "lease_s");
    if (reply.status != 201 && reply.status != 200) {
        fprintf(stderr, "rung-worker: registration refused: %s\n", reply.error);
        client_reply_clear(&reply);
        return -1;
    }
    if (!json_is_integer(id) || json_integer_value(id) <= 0) {
        fprintf(stderr, "rung-worker: registration reply has no worker_id\n");
        client_reply_clear(&reply);
        return -1;
    }
    w->id = json_integer_value(id);
    /* Defaults for a server that leaves them out: docs/api.md's example values. */
    w->heartbeat_s = json_is_number(hb) && json_number_value(hb) > 0 ? json_number_value(hb) : 5;
    w->lease_s = json_is_number(lease) && json_number_value(lease) > 0 ? json_number_value(lease)
                                                                       : 30;
    client_reply_clear(&reply);
    return 0;
}

/* mkdir -p of an absolute or relative path, 0700 for what it makes. */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Makes the workdir and its trials/ folder; w->workdir becomes absolute.
 *
 * A database never gives the same worker id twice, so a default folder that
 * already exists belongs to another database (a fresh one, or another
 * daemon): its trials/<id> are other trials, whose checkpoints a program
 * must not resume from. The default then takes the first free suffix. A
 * --workdir is used as given: sharing it between worker processes of one
 * database lets a retried trial find its earlier attempts' files. */
static int setup_workdir(WorkerState *w, const char *given)
{
    char dir[PATH_MAX];
    if (given) {
        snprintf(dir, sizeof dir, "%s", given);
    } else {
        for (int k = 1;; k++) {
            if (k == 1)
                snprintf(dir, sizeof dir, "rung-worker-%" PRId64, w->id);
            else
                snprintf(dir, sizeof dir, "rung-worker-%" PRId64 "-%d", w->id, k);
            if (mkdir(dir, 0700) == 0)
                break;
            if (errno != EEXIST || k == 1000) {
                fprintf(stderr, "rung-worker: cannot make %s: %s\n", dir, strerror(errno));
                return -1;
            }
        }
    }
    char trials[PATH_MAX + 8];
    snprintf(trials, sizeof trials, "%s/trials", dir);
    if (make_dirs(trials) != 0) {
        fprintf(stderr, "rung-worker: cannot make %s: %s\n", trials, strerror(errno));
        return -1;
    }
    if (realpath(dir, w->workdir) == NULL) {
        fprintf(stderr, "rung-worker: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    /* A worker upgraded in place from the .../trials/trials layout finds its
     * paused trials' folders where docs/workers.md says they are. */
    char why[512];
    int moved = trialdir_adopt_old_layout(trials, why, sizeof why);
    if (moved > 0)
        LOG_INFO("moved %d trial folder%s from %s/trials (the old layout) to %s", moved,
                 moved == 1 ? "" : "s", trials, trials);
    if (why[0] != '\0')
        LOG_WARN("old layout %s/trials: %s", trials, why);
    return 0;
}

/* The folder of this program, where rung-train lives beside it. */
static void find_exe_dir(WorkerState *w, const char *argv0)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
    } else if (realpath(argv0, exe) == NULL) {
        snprintf(exe, sizeof exe, "%s", argv0);
    }
    snprintf(w->exe_dir, sizeof w->exe_dir, "%s", dirname(exe));
}

int main(int argc, char **argv)
{
    /* File descriptors 0..2 must exist: the trial runner relies on new
     * descriptors being above them. */
    for (int fd = open("/dev/null", O_RDWR); fd >= 0 && fd <= 2; fd = open("/dev/null", O_RDWR)) {
    }
    /* Before any thread exists (NVML, curl's resolver), so all inherit it:
     * only the signal thread takes SIGINT/SIGTERM. */
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    static json_t *labels; /* static: still reachable on the early exits below */
    static Repeated repeated;
    labels = json_object();
    if (labels == NULL ||
        setup_take_repeated(&argc, argv, options, O__COUNT, repeatable, &repeated) != 0)
        return 2;
    int parsed = options_parse("rung-worker", options, O__COUNT, argc, argv);
    if (parsed == 1) {
        usage(stdout);
        return 0;
    }
    if (parsed == 2)
        return 0; /* --version */
    if (parsed != 0)
        return 2;
    /* common/log.c reads RUNG_LOG lazily, unguarded: let that first read
     * happen here, before any thread could race it. */
    LOG_DEBUG("rung-worker starting");
    const char *server = options[O_SERVER].value ? options[O_SERVER].value : getenv("RUNG_SERVER");
    const char *token = options[O_TOKEN].value ? options[O_TOKEN].value : getenv("RUNG_TOKEN");
    static SecretToken file_token[1];
    if (options[O_TOKEN_FILE].value != NULL) {
        if (options[O_TOKEN].value != NULL) {
            fprintf(stderr, "rung-worker: give --token or --token-file, not both\n");
            return 2;
        }
        int n;
        if (secret_load_tokens("rung-worker", options[O_TOKEN_FILE].value, file_token, 1, &n) != 0)
            return 2;
        token = file_token[0];
    }
    if (options[O_SERVER].value != NULL && options[O_SERVER].value[0] == '\0') {
        /* rung-worker.service passes --server "$RUNG_SERVER": an empty one
         * is a conf to fill in (packaging/etc/rung-worker.conf), not a
         * daemon on this machine. */
        fprintf(stderr, "rung-worker: --server is empty: give rungd's address, http://HOST:PORT "
                        "(the service: RUNG_SERVER in /etc/rung/rung-worker.conf)\n");
        return 2;
    }
    if (server == NULL || server[0] == '\0')
        server = DEFAULT_SERVER;
    /* "127.0.0.1:8080" is what people type, and rung takes it (cli/rest.c);
     * several, comma-separated: a leader and its standbys (servers.h). The
     * clients get the list; what needs one address (the route to rungd,
     * the token's refusal below) takes the first, and each is checked. */
    static RungServers servers;
    char list_why[300];
    if (rung_servers_parse(server, &servers, list_why, sizeof list_why) != 0) {
        fprintf(stderr, "rung-worker: --server: %s\n", list_why);
        return 2;
    }
    const char *server_list = server;
    server = servers.url[0];
    /* HTTPS (common/transport.h): every request of this process. */
    RungTransport transport = rung_transport_from_env();
    if (options[O_CA].value != NULL)
        transport.ca_file = options[O_CA].value;
    transport.insecure |= options[O_INSECURE].value != NULL;
    transport.allow_plain |= options[O_ALLOW_PLAIN_HTTP].value != NULL;
    for (int i = 0; i < servers.n; i++) {
        const char *refusal = rung_plain_token_refusal(servers.url[i], token && token[0],
                                                       &transport);
        if (refusal != NULL) {
            fprintf(stderr, "rung-worker: %s\n", refusal);
            return 2;
        }
    }
    client_set_transport(&transport);
    static BatchJob job;
    int64_t deadline_s;
    if (setup_batchjob(&job, options[O_ON_SIGTERM].value, options[O_DEADLINE].value,
                       &term_gives_back, &deadline_s) != 0)
        return 2;
    int mode, gpus[SLOTS_MAX_GPUS], n_gpus;
    if (options[O_GPUS].value == NULL && job.slurm) {
        /* The job's GPUs, none when it holds none. */
        mode = job.n_gpus > 0 ? GPUS_LIST : GPUS_NONE;
        n_gpus = job.n_gpus;
        memcpy(gpus, job.gpus, sizeof gpus);
    } else if (parse_gpus(options[O_GPUS].value ? options[O_GPUS].value : "auto", &mode, gpus,
                          &n_gpus) != 0) {
        return 2;
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t cpus = options[O_CPU_SLOTS].value ? options[O_CPU_SLOTS].ival
                   : job.cpus > 0             ? job.cpus
                                              : (online > 0 ? online : 1);
    if (cpus > MAX_CPU_SLOTS)
        cpus = MAX_CPU_SLOTS;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "rung-worker: cannot initialize libcurl\n");
        return 1;
    }
    static WorkerState w; /* static: the detached trial threads may outlive main's frame */
    if (worker_init(&w, NULL, 0, cpus) != 0) {
        fprintf(stderr, "rung-worker: cannot initialize locks\n");
        return 1;
    }
    envs_init(&w.envs);
    if (setup_labels_envs(&w, labels, &repeated) != 0)
        return 2;
    w.server = server_list;
    w.token = token && token[0] ? token : NULL;
    w.once = options[O_ONCE].value != NULL;
    w.exit_idle_s = options[O_EXIT_IDLE].ival;
    w.max_trials = options[O_MAX_TRIALS].ival;
    w.lease_wait_s = (int)options[O_LEASE_WAIT].ival;
    w.keep_trials = options[O_KEEP_TRIALS].ival;
    w.labels = labels;
    if (gethostname(w.hostname, sizeof w.hostname - 1) != 0)
        snprintf(w.hostname, sizeof w.hostname, "unknown");
    snprintf(w.name, sizeof w.name, "%s",
             options[O_NAME].value ? options[O_NAME].value : w.hostname);
    find_exe_dir(&w, argv[0]);
    if (setup_advertise(&w, options[O_ADVERTISE_ADDR].value) != 0)
        return 2;
    if (options[O_GANG_PORTS].value != NULL) {
        char why[256];
        if (gang_ports_parse(options[O_GANG_PORTS].value, &w.gang_port_lo, &w.gang_port_hi, why,
                             sizeof why) != 0) {
            fprintf(stderr, "rung-worker: --gang-ports %s\n", why);
            return 2;
        }
    }

    /* Where a list of GPUs came from, for the messages below. */
    const char *gpus_src = options[O_GPUS].value ? "--gpus" : job.gpus_from;
    if (mode != GPUS_NONE) {
        char why[256] = "";
        w.gpus = gpus_open(why, sizeof why);
        if (mode == GPUS_AUTO) {
            n_gpus = gpus_count(w.gpus);
            if (n_gpus > SLOTS_MAX_GPUS)
                n_gpus = SLOTS_MAX_GPUS;
            for (int i = 0; i < n_gpus; i++)
                gpus[i] = i;
            if (w.gpus == NULL)
                LOG_INFO("no GPUs: NVML is not available (%s)", why);
        } else if (w.gpus == NULL) {
            LOG_WARN("NVML is not available (%s); offering the GPUs of %s as given", why, gpus_src);
        } else {
            for (int i = 0; i < n_gpus; i++)
                if (gpus[i] >= gpus_count(w.gpus)) {
                    fprintf(stderr, "rung-worker: %s: no GPU %d (NVML sees %d)\n", gpus_src,
                            gpus[i], gpus_count(w.gpus));
                    return 2;
                }
        }
    }
    slots_init(&w.slots, gpus, n_gpus, cpus);
    static Hours hours; /* static: the threads read it until the end */
    tzset();            /* --hours is local time; read TZ once, before any thread */
    if (setup_spare(&w, &hours) != 0)
        return 2;
    w.watch = worker_watch_new(&w);

    pthread_t sig_thread;
    if (pthread_create(&sig_thread, NULL, signal_main, &w) != 0) {
        fprintf(stderr, "rung-worker: cannot start the signal thread\n");
        return 1;
    }
    pthread_detach(sig_thread);

    int rc = register_worker(&w, gpus, n_gpus);
    if (rc != 0) {
        gpus_close(w.gpus);
        return rc < 0 ? 1 : 0;
    }
    if (setup_workdir(&w, options[O_WORKDIR].value) != 0)
        return 1;
    setup_cache(&w, options[O_CACHE_DIR].value, options[O_CACHE_MB].ival,
                options[O_PIP_INDEX].value);
    trialcode_sweep(w.workdir);
    char gpu_text[SLOTS_MAX_GPUS * 8] = "";
    for (int i = 0, o = 0; i < n_gpus; i++)
        o += snprintf(gpu_text + o, sizeof gpu_text - (size_t)o, "%s%d", i ? "," : "", gpus[i]);
    LOG_INFO("registered with %s as worker %" PRId64 " (%s): gpus [%s], %" PRId64
             " cpu slots, heartbeat every %.3g s, lease %.3g s; trials in %s/trials; gang "
             "members reach it at %s",
             server_list, w.id, w.name, gpu_text, cpus, w.heartbeat_s, w.lease_s, w.workdir,
             w.advertise_addr);

    char why[512];
    w.uploader = uploader_new(server_list, w.token, w.workdir, w.id, upload_cancel, &w, why,
                              sizeof why);
    if (w.uploader == NULL)
        LOG_WARN("pbt: no checkpoint uploads from this worker (%s); trials on other workers "
                 "that exploit this worker's trials start without their checkpoints",
                 why);

    if (job.slurm)
        LOG_INFO("in Slurm job %s: gpus from %s, cpus from %s; SIGTERM %s", job.job_id,
                 options[O_GPUS].value ? "--gpus"
                 : job.gpus_from       ? job.gpus_from
                                       : "none held",
                 options[O_CPU_SLOTS].value ? "--cpu-slots"
                 : job.cpus > 0             ? "SLURM_CPUS_ON_NODE"
                                            : "the online CPUs",
                 term_gives_back ? "gives trials back" : "lets trials finish");
    if (deadline_s > 0 &&
        jobend_start_deadline(&w, deadline_s, options[O_DEADLINE_MARGIN].ival) != 0) {
        fprintf(stderr, "rung-worker: cannot start the deadline thread\n");
        return 1;
    }
    gpuwatch_look(w.watch);
    pthread_t lease_thread, heartbeat_thread, watch_thread;
    if ((w.watch != NULL && pthread_create(&watch_thread, NULL, gpuwatch_main, w.watch) != 0) ||
        pthread_create(&heartbeat_thread, NULL, worker_heartbeat_main, &w) != 0 ||
        pthread_create(&lease_thread, NULL, worker_lease_main, &w) != 0) {
        fprintf(stderr, "rung-worker: cannot start threads\n");
        return 1;
    }
    int left = worker_wait_idle(&w);
    /* Checkpoints other workers' trials wait for: uploaded before leaving,
     * while heartbeats go on (and may ask for more); a hard stop cancels. */
    if (left == 0 && w.uploader != NULL && uploader_pending(w.uploader) > 0) {
        LOG_INFO("waiting for %d checkpoint upload(s) before exiting (signal again to cancel)",
                 uploader_pending(w.uploader));
        uploader_wait_idle(w.uploader, upload_cancel, &w);
    }
    atomic_store(&w.exiting, true);
    pthread_mutex_lock(&w.mu);
    pthread_cond_broadcast(&w.cond);
    pthread_mutex_unlock(&w.mu);
    pthread_join(heartbeat_thread, NULL);
    pthread_join(lease_thread, NULL);
    if (w.watch != NULL)
        pthread_join(watch_thread, NULL);
    if (left > 0) {
        /* Hard stop past its deadline: end what is left and go. The server
         * fails and retries these trials when their leases expire. */
        LOG_ERROR("exiting with %d trial(s) not delivered", left);
        worker_kill_all_now(&w);
        fflush(stderr);
        _exit(1); /* their threads still run: no exit handlers under their feet */
    }
    uploader_free(w.uploader); /* cancels what a hard stop left, or a late request */
    w.uploader = NULL;
    LOG_INFO("exiting");
    gpuwatch_free(w.watch);
    gpus_close(w.gpus);
    worker_close(&w);
    curl_global_cleanup();
    return 0;
}
