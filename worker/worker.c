/* The worker's shared state, the lease thread and the heartbeat thread;
 * see worker.h. */
#include "worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "advertise.h"
#include "backoff.h"
#include "ckptxfer.h"
#include "client.h"
#include "clock.h"
#include "gpuwatch.h"
#include "log.h"
#include "trial.h"
#include "trialdir.h"

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define LEASE_SLACK_MS 15000 /* a lease request may take its long poll plus this */
#define WAIT_SLICE_MS 200    /* main's wait re-checks the hard-stop deadline this often */
/* Long poll while some of our resources are busy. The offer is then partial
 * and grows when a trial ends, but a request in flight cannot be changed, and
 * aborting it could drop a trial the server just granted. Short polls bound
 * how long freed resources wait for a trial that needs more than the old
 * offer (one cheap request per second while busy). */
#define LEASE_BUSY_WAIT_S 1
/* Outside --hours, the lease thread looks at the clock at least this often
 * (in case the clock is set meanwhile). */
#define HOURS_RECHECK_MS 60000

int worker_init(WorkerState *w, const int *gpus, int n_gpus, int64_t cpus)
{
    pthread_condattr_t ca;
    if (pthread_mutex_init(&w->mu, NULL) != 0 || pthread_condattr_init(&ca) != 0)
        return -1;
    /* Timed waits measure durations: immune to the wall clock being set. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return -1;
    slots_init(&w->slots, gpus, n_gpus, cpus);
    w->trials = NULL;
    w->n_trials = 0;
    w->lease_done = false;
    w->ended = NULL;
    w->n_ended = w->cap_ended = 0;
    w->pruning = 0;
    w->uploader = NULL;
    atomic_init(&w->stop, STOP_NONE);
    atomic_init(&w->hard_deadline_ns, 0);
    atomic_init(&w->exiting, false);
    return 0;
}

void worker_close(WorkerState *w)
{
    free(w->ended);
    json_decref(w->labels);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->mu);
}

/* Waits on w->cond for at most ms. Caller holds w->mu. */
static void timed_wait(WorkerState *w, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (ms % 1000) * NS_PER_MS;
    ts.tv_sec += (time_t)(ms / 1000 + ns / NS_PER_S);
    ts.tv_nsec = (long)(ns % NS_PER_S);
    pthread_cond_timedwait(&w->cond, &w->mu, &ts);
}

bool worker_stopping(WorkerState *w, StopLevel level)
{
    return atomic_load(&w->stop) >= (int)level;
}

bool worker_gave_up(WorkerState *w)
{
    return atomic_load(&w->stop) >= STOP_HARD &&
           rung_mono_ns() >= atomic_load(&w->hard_deadline_ns);
}

void worker_stop(WorkerState *w, StopLevel level)
{
    if (atomic_load(&w->stop) >= (int)level)
        return;
    if (level == STOP_HARD)
        atomic_store(&w->hard_deadline_ns, rung_mono_ns() + WORKER_HARD_STOP_S * NS_PER_S);
    atomic_store(&w->stop, (int)level);
    pthread_mutex_lock(&w->mu);
    if (level == STOP_HARD) {
        if (w->n_trials > 0)
            LOG_WARN("stopping now: ending %d trial(s); %d s to deliver what they sent",
                     w->n_trials, WORKER_HARD_STOP_S);
        for (WTrial *t = w->trials; t != NULL; t = t->next)
            wtrial_kill(t, KILL_SHUTDOWN);
    } else if (w->n_trials > 0) {
        LOG_INFO("stopping: no new trials; waiting for %d running trial(s) to end "
                 "(signal again to end them now)",
                 w->n_trials);
    } else {
        LOG_INFO("stopping");
    }
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

int worker_wait_idle(WorkerState *w)
{
    pthread_mutex_lock(&w->mu);
    while (!(w->lease_done && w->n_trials == 0 && w->pruning == 0) && !worker_gave_up(w))
        timed_wait(w, WAIT_SLICE_MS);
    int n = w->n_trials;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void worker_kill_all_now(WorkerState *w)
{
    pthread_mutex_lock(&w->mu);
    for (WTrial *t = w->trials; t != NULL; t = t->next)
        wtrial_kill_now(t);
    pthread_mutex_unlock(&w->mu);
}

/* The trials' calls back (trial.h's TrialHooks); ctx is the WorkerState. */

static bool hook_gave_up(void *ctx)
{
    return worker_gave_up(ctx);
}

static bool hook_older_running(void *ctx, const WTrial *t)
{
    WorkerState *w = ctx;
    bool busy = false;
    pthread_mutex_lock(&w->mu);
    for (WTrial *o = w->trials; o != NULL && !busy; o = o->next) {
        if (o == t || o->id != t->id)
            continue;
        pthread_mutex_lock(&o->mu);
        busy = o->runner.pid > 0 && !o->group_gone;
        pthread_mutex_unlock(&o->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return busy;
}

static void hook_released(void *ctx, WTrial *t)
{
    WorkerState *w = ctx;
    pthread_mutex_lock(&w->mu);
    if (t->holds_slots) {
        slots_release(&w->slots, t->gpus, t->n_gpus, t->cpus);
        t->holds_slots = false;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->mu);
}

/* ---- what the GPU watch asks of the trials (gpuwatch.h's GpuWatchHost;
 * ctx is the WorkerState, w->mu held) ---- */

static int watch_groups(void *ctx, int64_t *pgids, int max)
{
    WorkerState *w = ctx;
    int n = 0;
    for (WTrial *t = w->trials; t != NULL && n < max; t = t->next) {
        pthread_mutex_lock(&t->mu);
        if (t->runner.pid > 0)
            pgids[n++] = t->runner.pid; /* the group's id is its leader's pid (runner.h) */
        pthread_mutex_unlock(&t->mu);
    }
    return n;
}

/* The trial holding GPU index, or NULL. */
static WTrial *gpu_holder(WorkerState *w, int index)
{
    for (WTrial *t = w->trials; t != NULL; t = t->next)
        if (t->holds_slots)
            for (int k = 0; k < t->n_gpus; k++)
                if (t->gpus[k] == index)
                    return t;
    return NULL;
}

static int64_t watch_holder(void *ctx, int index)
{
    WTrial *t = gpu_holder(ctx, index);
    return t != NULL ? t->id : 0;
}

/* Gives t back: SIGTERM now, SIGKILL after the grace; its finish says
 * "preempted" (trial.h). */
static void give_back(WTrial *t, const char *why)
{
    if (wtrial_kill(t, KILL_PREEMPT))
        LOG_INFO("trial %" PRId64 ": %s: giving it back (SIGTERM; it resumes from its "
                 "checkpoint)",
                 t->id, why);
}

static void watch_give_back(void *ctx, int index, const char *why)
{
    WorkerState *w = ctx;
    if (index >= 0) {
        WTrial *t = gpu_holder(w, index);
        if (t != NULL)
            give_back(t, why);
        return;
    }
    for (WTrial *t = w->trials; t != NULL; t = t->next)
        if (t->holds_slots)
            give_back(t, why);
}

static int watch_n_trials(void *ctx)
{
    return ((WorkerState *)ctx)->n_trials;
}

GpuWatch *worker_watch_new(WorkerState *w)
{
    w->watch_host = (GpuWatchHost){.gpus = w->gpus,
                                   .slots = &w->slots,
                                   .spare = &w->spare,
                                   .yield = w->yield,
                                   .hours = w->hours,
                                   .hours_text = w->hours_text,
                                   .mu = &w->mu,
                                   .cond = &w->cond,
                                   .exiting = &w->exiting,
                                   .ctx = w,
                                   .groups = watch_groups,
                                   .holder = watch_holder,
                                   .give_back = watch_give_back,
                                   .n_trials = watch_n_trials};
    return gpuwatch_new(&w->watch_host);
}

/* Index of trial id in w->ended, or w->n_ended. Caller holds w->mu. */
static size_t ended_index(const WorkerState *w, int64_t id)
{
    size_t i = 0;
    while (i < w->n_ended && w->ended[i].id != id)
        i++;
    return i;
}

/* Lists t as ended, unless another attempt of it runs here. Caller holds
 * w->mu. false when out of memory (then its folder is simply kept). */
static bool list_ended(WorkerState *w, WTrial *t)
{
    for (WTrial *o = w->trials; o != NULL; o = o->next)
        if (o->id == t->id)
            return true; /* running again: not ended */
    pthread_mutex_lock(&t->mu);
    bool paused = t->paused;
    pthread_mutex_unlock(&t->mu);
    size_t i = ended_index(w, t->id);
    if (i == w->n_ended) {
        if (w->n_ended == w->cap_ended) {
            size_t cap = w->cap_ended ? 2 * w->cap_ended : 64;
            PruneEntry *p = realloc(w->ended, cap * sizeof *p);
            if (p == NULL)
                return false;
            w->ended = p;
            w->cap_ended = cap;
        }
        w->n_ended++;
    }
    w->ended[i] = (PruneEntry){.id = t->id, .ended = rung_mono_ns(), .paused = paused};
    return true;
}

/* Removes the folders of the trials listed in ids (n of them). Called
 * without w->mu, with w->pruning counting this call. */
static void remove_folders(WorkerState *w, const int64_t *ids, size_t n)
{
    char trials[PATH_MAX + 8];
    snprintf(trials, sizeof trials, "%s/trials", w->workdir);
    for (size_t i = 0; i < n; i++) {
        char why[512];
        int rc = trialdir_remove(trials, ids[i], why, sizeof why);
        if (rc == 0)
            LOG_DEBUG("trial %" PRId64 ": folder removed (--keep-trials %" PRId64 ")", ids[i],
                      w->keep_trials);
        else if (rc > 0)
            LOG_INFO("trial %" PRId64 ": folder in use by another attempt; kept", ids[i]);
        else
            LOG_WARN("trial %" PRId64 ": cannot remove its folder %s/%" PRId64 ": %s", ids[i],
                     trials, ids[i], why);
    }
}

/* Takes t off the list (and releases its resources if that was not done).
 * With folder (the trial's folder was made), the trial is listed as ended
 * (paused when its finish said so), and the folders of ended trials beyond
 * the newest keep_trials are removed, by the calling thread, before it
 * returns (prune.h, trialdir.h). */
static void hook_done(void *ctx, WTrial *t, bool folder)
{
    WorkerState *w = ctx;
    pthread_mutex_lock(&w->mu);
    if (t->prev)
        t->prev->next = t->next;
    else
        w->trials = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    w->n_trials--;
    if (t->holds_slots)
        slots_release(&w->slots, t->gpus, t->n_gpus, t->cpus);
    t->holds_slots = false;
    /* The folders to remove leave the list here, under the lock, so each
     * is removed by one thread; w->pruning keeps main from exiting under it. */
    int64_t *remove = NULL;
    size_t n_remove = 0;
    if (folder && list_ended(w, t)) {
        size_t keep = prune_select(w->ended, w->n_ended, (size_t)w->keep_trials);
        if (keep < w->n_ended && (remove = malloc((w->n_ended - keep) * sizeof *remove))) {
            for (size_t i = keep; i < w->n_ended; i++)
                remove[n_remove++] = w->ended[i].id;
            w->n_ended = keep;
            w->pruning++;
        }
    }
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    if (remove == NULL)
        return;
    remove_folders(w, remove, n_remove);
    free(remove);
    pthread_mutex_lock(&w->mu);
    w->pruning--;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

/* ---- leasing ---- */

/* A lease request in flight is aborted only by a hard stop. rungd keeps a
 * parked long poll until its wait_s is over even when the worker has gone,
 * and a trial it hands to that poll is lost until its lease expires (and
 * then counts as a failed attempt). So a draining worker lets its last long
 * poll end, and runs what it brings. */
static bool lease_cancel(void *arg)
{
    return worker_stopping(arg, STOP_HARD);
}

/* "0,1" from a list of GPU indices. */
static void gpu_list(const int64_t *gpus, int n, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t o = 0;
    for (int i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64, i ? "," : "", gpus[i]);
}

/* The trial's place in a gang from the lease reply (gang.h), and the port
 * this worker offered (port_fd, bound; -1 when none was): kept bound for
 * the program when it is the rendezvous port (rank 0 of a gang, or a
 * 1-node trial's {master_port}), else closed. Steals port_fd. */
static void read_gang(WorkerState *w, WTrial *t, const json_t *reply, int port_fd, int port)
{
    char why[256];
    gang_single(&t->gang, port_fd >= 0 ? port : 0);
    int rc = gang_from_reply(reply, w->id, &t->gang, why, sizeof why);
    if (rc < 0 && t->prefail[0] == '\0')
        snprintf(t->prefail, sizeof t->prefail, "the lease reply's gang is malformed: %s", why);
    bool ours = port_fd >= 0 && t->gang.rank == 0 && t->gang.master_port == port;
    if (ours)
        t->port_fd = port_fd;
    else if (port_fd >= 0)
        close(port_fd);
    if (t->gang.is_gang && t->gang.rank == 0 && !ours)
        LOG_WARN("trial %" PRId64 ": node 0 of its gang, but the gang meets at port %d, not the "
                 "port %d this worker offered; that port may be taken meanwhile",
                 t->id, t->gang.master_port, port);
}

/* Takes a granted trial: marks its resources busy and starts it. Steals
 * port_fd (the port offered with the request, -1 when none). */
static void take_trial(WorkerState *w, const json_t *reply, int port_fd, int port)
{
    char why[256];
    WTrial *t = wtrial_new(&w->trial_hooks, json_object_get(reply, "trial"), why, sizeof why);
    if (t == NULL) {
        LOG_ERROR("lease: unusable reply (%s); the server will expire that lease", why);
        if (port_fd >= 0)
            close(port_fd);
        return;
    }
    read_gang(w, t, reply, port_fd, port);
    char gpus[SLOTS_MAX_GPUS * 8];
    gpu_list(t->gpus, t->n_gpus, gpus, sizeof gpus);
    pthread_mutex_lock(&w->mu);
    if (slots_take(&w->slots, t->gpus, t->n_gpus, t->cpus) == 0)
        t->holds_slots = true;
    else if (t->prefail[0] == '\0')
        snprintf(t->prefail, sizeof t->prefail,
                 "the server granted resources this worker does not have free "
                 "(gpus [%s], cpus %" PRId64 ")",
                 gpus, t->cpus);
    /* Running again here (a retry, a resume): its folder is no longer an
     * ended trial's. */
    size_t i = ended_index(w, t->id);
    if (i < w->n_ended)
        w->ended[i] = w->ended[--w->n_ended];
    t->prev = NULL;
    t->next = w->trials;
    if (w->trials)
        w->trials->prev = t;
    w->trials = t;
    w->n_trials++;
    pthread_mutex_unlock(&w->mu);

    char *config = json_dumps(t->config, JSON_COMPACT);
    char gang[GANG_ADDR_MAX + 64] = "";
    if (t->gang.is_gang)
        snprintf(gang, sizeof gang, "; node %" PRId64 " of %" PRId64 ", master %s:%d", t->gang.rank,
                 t->gang.nnodes, t->gang.master_addr, t->gang.master_port);
    LOG_INFO("trial %" PRId64 " leased (experiment %" PRId64 ", attempt %" PRId64
             "): config %.600s; gpus [%s], cpus %" PRId64 "%s",
             t->id, t->experiment_id, t->attempt, config ? config : "?", gpus, t->cpus, gang);
    free(config);
    if (t->prefail[0])
        LOG_ERROR("trial %" PRId64 ": %s", t->id, t->prefail);
    else if (worker_stopping(w, STOP_DRAIN))
        LOG_INFO("trial %" PRId64 ": leased while stopping; running it to its end", t->id);
    if (wtrial_start(t) != 0) {
        LOG_ERROR("trial %" PRId64 ": cannot start a thread; the server will expire its lease",
                  t->id);
        hook_done(w, t, false);
        wtrial_free(t);
    }
}

/* Finds the port this lease request offers (advertise.h): a socket bound
 * to it, -1 when none could be found (then the request offers no address
 * and is never given a gang trial). Warns when that starts and when it
 * ends, not on every request. */
static int offer_port(WorkerState *w, uint64_t *rng, int *port, bool *failing)
{
    char why[256];
    int fd = advertise_port_open(w->gang_port_lo, w->gang_port_hi, backoff_random(rng), port, why,
                                 sizeof why);
    if (fd < 0 && !*failing)
        LOG_WARN("lease: %s; asking for 1-node trials only until one is free", why);
    else if (fd >= 0 && *failing)
        LOG_INFO("lease: port %d free again; gang trials may come", *port);
    *failing = fd < 0;
    return fd;
}

void *worker_lease_main(void *arg)
{
    WorkerState *w = arg;
    w->trial_hooks = (TrialHooks){.server = w->server,
                                  .token = w->token,
                                  .worker_id = w->id,
                                  .hostname = w->hostname,
                                  .workdir = w->workdir,
                                  .exe_dir = w->exe_dir,
                                  .cache = w->cache_ok ? &w->cache : NULL,
                                  .envs = &w->envs,
                                  .pip_index = w->pip_index,
                                  .container_runtimes = w->container_runtimes,
                                  .container_args = w->container_args,
                                  .container_run_args = w->container_run_args,
                                  .ctx = w,
                                  .gave_up = hook_gave_up,
                                  .older_running = hook_older_running,
                                  .released = hook_released,
                                  .done = hook_done};
    Client *c = client_new(w->server, w->token);
    char path[96];
    snprintf(path, sizeof path, "/api/v1/workers/%" PRId64 "/lease", w->id);
    uint64_t rng = backoff_seed((uint64_t)rung_mono_ns() ^ (uint64_t)w->id);
    int refusals = 0;
    int64_t taken = 0, idle_since = rung_mono_ns(); /* --max-trials, --exit-idle-s */
    bool port_failing = false;
    bool gangs_off = false; /* this rungd refused the gang fields: it predates gangs */
    if (c == NULL)
        LOG_ERROR("lease: out of memory for an HTTP client; no trials will be run");
    while (c != NULL) {
        pthread_mutex_lock(&w->mu);
        /* Something free (GPUs only when spare), within --hours. */
        while (!worker_stopping(w, STOP_DRAIN)) {
            int64_t closed_ms = gpuwatch_closed_ms(w->hours);
            if (closed_ms > 0)
                timed_wait(w, closed_ms < HOURS_RECHECK_MS ? closed_ms : HOURS_RECHECK_MS);
            else if (!slots_any_free(&w->slots))
                pthread_cond_wait(&w->cond, &w->mu);
            else
                break;
        }
        if (worker_stopping(w, STOP_DRAIN) || (w->max_trials > 0 && taken >= w->max_trials)) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        int free_gpus[SLOTS_MAX_GPUS];
        int ng = slots_free_gpus(&w->slots, free_gpus, SLOTS_MAX_GPUS);
        int64_t cpus = slots_free_cpus(&w->slots);
        int held = w->n_trials;
        if (held > 0)
            idle_since = rung_mono_ns();
        int64_t idle_left = w->exit_idle_s - (rung_mono_ns() - idle_since) / NS_PER_S;
        /* GPUs someone else uses make the offer partial as well. */
        bool partial = held > 0 || slots_n_used(&w->slots) > 0;
        pthread_mutex_unlock(&w->mu);

        json_t *gpus = json_array();
        for (int i = 0; i < ng; i++)
            json_array_append_new(gpus, json_integer(free_gpus[i]));
        int wait_s = !partial || w->lease_wait_s < LEASE_BUSY_WAIT_S ? w->lease_wait_s
                                                                     : LEASE_BUSY_WAIT_S;
        /* No trial granted after --hours end. */
        int64_t open_s = gpuwatch_open_left_s(w->hours);
        if (open_s < wait_s)
            wait_s = open_s > 1 ? (int)open_s : 1;
        if (w->exit_idle_s > 0 && held == 0 && idle_left < wait_s)
            wait_s = idle_left > 1 ? (int)idle_left : 1;
        /* Never an external experiment's trial: nothing here would run it
         * (docs/api.md, POST /api/v1/workers/{id}/lease). */
        json_t *body = json_pack("{s:o, s:I, s:i, s:[s, s]}", "gpus", gpus, "cpus",
                                 (json_int_t)cpus, "wait_s", wait_s, "trainables", "command",
                                 "builtin");
        /* Where gang members would meet this worker as node 0: found anew
         * for every request, since the last one's may be taken by now. */
        int port = 0;
        int port_fd = gangs_off ? -1 : offer_port(w, &rng, &port, &port_failing);
        bool offered = port_fd >= 0;
        if (offered) {
            json_object_set_new(body, "advertise_addr", json_string(w->advertise_addr));
            json_object_set_new(body, "port", json_integer(port));
        }
        /* A full cache disk: no trial that needs a download (blobcache.h). */
        int64_t cache_free;
        bool cache_full = !w->cache_ok;
        if (w->cache_ok)
            blobcache_space(&w->cache, &cache_free, &cache_full);
        if (cache_full)
            json_object_set_new(body, "downloads", json_false());
        ClientCall call = {.timeout_ms = wait_s * 1000L + LEASE_SLACK_MS,
                           .retry = true,
                           .cancel = lease_cancel,
                           .cancel_arg = w,
                           .what = "lease"};
        ClientReply reply;
        int rc = client_post(c, path, body, &call, &reply);
        json_decref(body);
        if (rc != 0 || reply.status != 200) {
            if (port_fd >= 0)
                close(port_fd);
            port_fd = -1;
        }
        if (rc != 0) { /* stopping */
            client_reply_clear(&reply);
            break;
        }
        if (reply.status == 200) {
            refusals = 0;
            taken++;
            take_trial(w, reply.body, port_fd, port);
        } else if (reply.status == 204) {
            refusals = 0;
            bool idle_out = w->exit_idle_s > 0 && held == 0 &&
                            rung_mono_ns() - idle_since >= w->exit_idle_s * NS_PER_S;
            if (held == 0 && (w->once || idle_out)) {
                LOG_INFO("no more work for this worker (%s)", w->once ? "--once" : "--exit-idle-s");
                client_reply_clear(&reply);
                break;
            }
        } else if (offered && reply.status == 400 && gang_fields_refused(reply.body)) {
            LOG_WARN("lease refused: %s; this rungd predates gangs: asking without "
                     "advertise_addr and port, for 1-node trials only",
                     reply.error);
            gangs_off = true;
        } else {
            /* A final 4xx: our request is wrong (or the server lost us, 404);
             * asking again at once would only spin. */
            LOG_ERROR("lease refused: %s", reply.error);
            int64_t ms = backoff_delay_ms(refusals++, 1000, 30000, &rng);
            pthread_mutex_lock(&w->mu);
            if (!worker_stopping(w, STOP_DRAIN))
                timed_wait(w, ms);
            pthread_mutex_unlock(&w->mu);
        }
        client_reply_clear(&reply);
    }
    if (w->max_trials > 0 && taken >= w->max_trials)
        LOG_INFO("took %" PRId64 " trials (--max-trials): no more", taken);
    client_free(c);
    pthread_mutex_lock(&w->mu);
    w->lease_done = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- heartbeats ---- */

static bool heartbeat_cancel(void *arg)
{
    WorkerState *w = arg;
    return atomic_load(&w->exiting);
}

/* The offered GPUs: usage from NVML where it answers, and each one's state
 * (spare, held by a trial, busy with other people's work: gpuwatch.h);
 * NULL when none is offered. */
static json_t *gpu_usage(WorkerState *w)
{
    if (w->slots.n_gpus == 0)
        return NULL;
    json_t *a = json_array();
    for (int i = 0; i < w->slots.n_gpus; i++) {
        GpuUsage u;
        int index = w->slots.gpu_index[i]; /* read-only after start: no lock needed */
        json_t *item = json_pack("{s:i}", "index", index);
        if (gpus_usage(w->gpus, index, &u) == 0) {
            json_object_set_new(item, "util", json_real(u.util));
            json_object_set_new(item, "memory_used_mb", json_integer(u.memory_used_mb));
            json_object_set_new(item, "memory_total_mb", json_integer(u.memory_total_mb));
        }
        json_array_append_new(a, item);
    }
    gpuwatch_annotate(w->watch, &w->watch_host, a);
    return a;
}

/* pbt: the folders rungd asks for, [{"trial", "step", "token"}, ...],
 * queued for the uploader thread (a big checkpoint must not delay
 * heartbeats); the token is what rungd takes the upload with. */
static void take_uploads(WorkerState *w, const json_t *upload)
{
    size_t i;
    const json_t *item;
    json_array_foreach(upload, i, item) {
        const json_t *trial = json_object_get(item, "trial");
        const json_t *step = json_object_get(item, "step");
        const char *token = json_string_value(json_object_get(item, "token"));
        if (!json_is_integer(trial) || json_integer_value(trial) <= 0 || !json_is_integer(step) ||
            json_integer_value(step) < 0 || token == NULL || token[0] == '\0' ||
            strlen(token) > CKPTXFER_TOKEN_MAX) {
            LOG_WARN("heartbeat: an item of \"upload\" is not {\"trial\", \"step\", "
                     "\"token\"}; ignored");
            continue;
        }
        if (w->uploader == NULL) {
            LOG_WARN("heartbeat: rungd asks for trial %" PRId64 "'s folder, but this worker "
                     "cannot upload (no uploader thread)",
                     (int64_t)json_integer_value(trial));
            continue;
        }
        uploader_request(w->uploader, json_integer_value(trial), json_integer_value(step), token);
    }
}

void *worker_heartbeat_main(void *arg)
{
    WorkerState *w = arg;
    Client *c = client_new(w->server, w->token);
    if (c == NULL) {
        LOG_ERROR("heartbeat: out of memory for an HTTP client; leases will expire");
        return NULL;
    }
    char path[96];
    snprintf(path, sizeof path, "/api/v1/workers/%" PRId64 "/heartbeat", w->id);
    /* Long enough for a busy daemon, short enough to beat again well within a lease. */
    long timeout_ms = (long)(w->lease_s * 500);
    bool cache_refused = false; /* rungd said "cache: unknown field" */
    timeout_ms = timeout_ms < 1000 ? 1000 : (timeout_ms > 10000 ? 10000 : timeout_ms);
    int64_t period_ns = (int64_t)(w->heartbeat_s * NS_PER_S);
    long last_status = 200;
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->exiting)) {
        int64_t next = rung_mono_ns() + period_ns;
        /* The attempts listed, by lease token: a "stop" answers for those,
         * not for a new attempt of the same trial leased meanwhile. */
        json_t *ids = json_array(), *listed = json_object(), *logs = json_object();
        json_t *warnings = json_object();
        for (WTrial *t = w->trials; t != NULL; t = t->next) {
            json_array_append_new(ids, json_integer(t->id));
            json_object_set_new(listed, t->lease_token, json_true());
            /* The dashboard shows each trial's last log lines: sent when new. */
            char *log = wtrial_take_log(t);
            if (log != NULL) {
                char key[24];
                snprintf(key, sizeof key, "%" PRId64, t->id);
                json_t *text = json_string(log);
                if (text == NULL) { /* not UTF-8: keep the ASCII, mark the rest */
                    for (char *p = log; *p; p++)
                        if ((unsigned char)*p >= 0x80)
                            *p = '?';
                    text = json_string(log);
                }
                if (text != NULL)
                    json_object_set_new(logs, key, text);
                free(log);
            }
            /* So are its invalid report lines. */
            json_t *warn = wtrial_take_warnings(t);
            if (warn != NULL) {
                char key[24];
                snprintf(key, sizeof key, "%" PRId64, t->id);
                json_object_set_new(warnings, key, warn);
            }
        }
        pthread_mutex_unlock(&w->mu);

        json_t *body = json_pack("{s:o}", "trials", ids);
        if (json_object_size(logs) > 0)
            json_object_set_new(body, "logs", logs);
        else
            json_decref(logs);
        if (json_object_size(warnings) > 0)
            json_object_set_new(body, "warnings", warnings);
        else
            json_decref(warnings);
        json_t *usage = gpu_usage(w);
        if (usage)
            json_object_set_new(body, "gpus", usage);
        gpuwatch_hours_json(w->hours, w->hours_text, body);
        if (w->cache_ok && !cache_refused) {
            int64_t free_bytes;
            bool full;
            blobcache_space(&w->cache, &free_bytes, &full);
            json_object_set_new(body, "cache",
                                json_pack("{s:I, s:b}", "free_bytes", (json_int_t)free_bytes,
                                          "full", full));
        }
        ClientCall call = {.timeout_ms = timeout_ms,
                           .cancel = heartbeat_cancel,
                           .cancel_arg = w,
                           .what = "heartbeat"};
        ClientReply reply;
        client_post(c, path, body, &call, &reply);
        if (reply.status == 400 && strstr(reply.error, "cache: unknown") != NULL) {
            /* A rungd from before "cache" (blobcache.h): beat without it. */
            cache_refused = true;
            json_object_del(body, "cache");
            client_reply_clear(&reply);
            client_post(c, path, body, &call, &reply);
        }
        json_decref(body);
        if (reply.status == 200) {
            if (last_status != 200)
                LOG_INFO("heartbeat: the server answers again");
            const json_t *stop = json_object_get(reply.body, "stop");
            size_t i;
            const json_t *id;
            pthread_mutex_lock(&w->mu);
            json_array_foreach(stop, i, id) {
                for (WTrial *t = w->trials; t != NULL; t = t->next)
                    if (t->id == json_integer_value(id) &&
                        json_object_get(listed, t->lease_token) != NULL &&
                        wtrial_kill(t, KILL_SERVER))
                        LOG_INFO("trial %" PRId64 ": the server asks to stop it; ending its "
                                 "process group",
                                 t->id);
            }
            pthread_mutex_unlock(&w->mu);
            take_uploads(w, json_object_get(reply.body, "upload"));
        } else if (reply.status == 404 && last_status != 404) {
            LOG_ERROR("heartbeat: the server does not know this worker (%s); was its database "
                      "replaced? Restart the worker to register again",
                      reply.error);
        } else if (reply.status != 404 && reply.status != last_status &&
                   !atomic_load(&w->exiting)) {
            LOG_WARN("heartbeat failed: %s; trying again every %.3g s",
                     reply.error[0] ? reply.error : "no reply", w->heartbeat_s);
        }
        json_decref(listed);
        last_status = reply.status;
        client_reply_clear(&reply);
        pthread_mutex_lock(&w->mu);
        while (!atomic_load(&w->exiting)) {
            int64_t left = next - rung_mono_ns();
            if (left <= 0)
                break;
            timed_wait(w, left / NS_PER_MS + 1);
        }
    }
    pthread_mutex_unlock(&w->mu);
    client_free(c);
    return NULL;
}
