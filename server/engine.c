/* The engine thread; see engine.h. The loop: the batch, savepoints, the
 * commit, parked long polls and the tick. What it asks the proposer thread
 * for, and how the answers become trials, is engine_propose.c. */
#include "errjson.h"
#include "engine_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ckptstore.h"
#include "clock.h"
#include "grow.h"
#include "log.h"
#include "notify.h"
#include "propose.h"
#include "views.h"

/* How often leases and long polls are checked: a lease expires at most this
 * late, and a 1 s lease in tests still fails within ~1.1 s. */
#define TICK_MS 100
/* Long polls parked at once: each holds a suspended connection. Beyond
 * this a lease is answered 503 at once and the worker backs off. */
#define MAX_PARKED 1024
/* Workers silent this long, holding nothing, leave memory (they are read
 * back from the store when they call again). */
#define WORKER_IDLE_MS (3600 * 1000LL)

static int64_t mono_ms(void)
{
    return rung_mono_ns() / 1000000;
}

/* Replaces job's reply with the error JSON. */
static void set_error_reply(Job *job, int code, const char *msg)
{
    json_decref(job->reply);
    job->reply = NULL;
    free(job->text);
    job->text = NULL;
    job->status = rung_error_status(code);
    job->reply = rung_error_json(code, NULL, msg);
}

Core *engine_core(Engine *e)
{
    return e->core;
}

Store *engine_store(Engine *e)
{
    return e->store;
}

Stats *engine_stats(Engine *e)
{
    return e->stats;
}

const EngineConfig *engine_config(Engine *e)
{
    return &e->cfg;
}

int64_t engine_now(Engine *e)
{
    return e->now;
}

int64_t engine_parked(Engine *e)
{
    return e->n_parked;
}

int64_t engine_generation(Engine *e)
{
    return e->generation;
}

void engine_token(char out[CORE_TOKEN_LEN + 1])
{
    unsigned char raw[CORE_TOKEN_LEN / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n <= 0)
            abort(); /* no randomness: tokens would be guessable */
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[CORE_TOKEN_LEN] = '\0';
}

int64_t engine_database_bytes(Engine *e)
{
    return store_database_bytes(e->store);
}

uint64_t engine_seed(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)rung_mono_ns();
    return v & ((1ULL << 53) - 1); /* exact as a JSON number everywhere */
}

bool engine_park(Engine *e, Job *job, int64_t deadline_ms)
{
    if (e->draining)
        return false;
    if (e->n_parked >= MAX_PARKED) {
        set_error_reply(job, RUNG_E_UNAVAILABLE, "too many long polls waiting; try again");
        return true; /* answered, not parked: the caller must not reply again */
    }
    job->parked = true;
    job->deadline_ms = deadline_ms;
    job->parked_at_ns = rung_mono_ns();
    return true;
}

/* ---- the batch ---- */

/* A request's writes were refused by the store: undo them in memory. The
 * experiments and workers they touched are dropped and read back from the
 * store (which the rollback to the request's savepoint left as it was
 * before the request); running trials keep their lease deadlines, so a
 * refused request never extends a lease. */
static void undo(Engine *e, const CoreChanges *c)
{
    int64_t n_exp = 0, n_w = 0, n_run = 0;
    size_t cap = (size_t)(c->n_exps + c->n_trials + c->n_reports + 1);
    int64_t *exps = calloc(cap, sizeof *exps);
    int64_t *workers = calloc((size_t)c->n_workers + 1, sizeof *workers);
    if (exps == NULL || workers == NULL)
        abort();
    for (int64_t i = 0; i < c->n_exps; i++)
        exps[n_exp++] = c->exps[i]->id;
    for (int64_t i = 0; i < c->n_trials; i++)
        exps[n_exp++] = c->trials[i]->exp->id;
    for (int64_t i = 0; i < c->n_reports; i++) {
        Trial *t = core_trial(e->core, c->reports[i].trial_id);
        if (t != NULL)
            exps[n_exp++] = t->exp->id;
    }
    for (int64_t i = 0; i < c->n_workers; i++)
        workers[n_w++] = c->workers[i]->id;
    core_changes_clear(e->core);
    for (int64_t i = 0; i < n_exp; i++) {
        Experiment *x = core_experiment(e->core, exps[i]);
        if (x == NULL)
            continue; /* done already (listed twice) */
        /* Every running trial of x, however many, keeps its deadline. */
        int64_t cap = x->counts[TRIAL_RUNNING] + 1;
        int64_t *ids = calloc((size_t)cap, sizeof *ids);
        int64_t *until = calloc((size_t)cap, sizeof *until);
        if (ids == NULL || until == NULL)
            abort();
        n_run = core_running_of(e->core, x, ids, cap);
        for (int64_t k = 0; k < n_run; k++)
            until[k] = core_trial(e->core, ids[k])->lease_expires_ms;
        core_forget_experiment(e->core, x);
        RungError err;
        if (store_reload_experiment(e->store, e->core, exps[i], e->now, &err) != 0) {
            LOG_ERROR("cannot read experiment %lld back from the store: %s; exiting",
                      (long long)exps[i], err.message);
            exit(1); /* the daemon cannot serve without a state it trusts */
        }
        for (int64_t k = 0; k < n_run; k++) {
            Trial *t = core_trial(e->core, ids[k]);
            if (t != NULL && t->state == TRIAL_RUNNING)
                core_set_lease_expiry(t, until[k]);
        }
        free(ids);
        free(until);
    }
    for (int64_t i = 0; i < n_w; i++) {
        Worker *w = core_worker(e->core, workers[i]);
        if (w != NULL && w->n_running == 0)
            core_forget_worker(e->core, w);
        RungError err;
        if (core_worker(e->core, workers[i]) == NULL &&
            store_reload_worker(e->store, e->core, workers[i], &err) != 0) {
            LOG_ERROR("cannot read worker %lld back from the store: %s; exiting",
                      (long long)workers[i], err.message);
            exit(1);
        }
    }
    free(exps);
    free(workers);
}

/* The batch's events as the notifiers will get them once it commits, with
 * the names their experiment picked (spec.notify). */
static void keep_notices(Engine *e, const CoreChanges *c)
{
    if (e->cfg.notify == NULL)
        return;
    if (e->notices == NULL)
        e->notices = json_array();
    for (int64_t i = 0; i < c->n_events; i++) {
        const CoreEvent *ev = &c->events[i];
        Experiment *x = ev->experiment_id > 0 ? core_experiment(e->core, ev->experiment_id) : NULL;
        const json_t *chosen = x ? x->spec.notify : NULL;
        json_array_append_new(e->notices, json_pack("{s:o, s:O}", "event", view_event(ev), "chosen",
                                                    chosen ? chosen : json_null()));
    }
}

/* After the batch's COMMIT: its events go to the notifiers (rc 0), or
 * nowhere (the batch was not kept). */
static void send_notices(Engine *e, int rc)
{
    size_t i;
    json_t *n;
    json_array_foreach(e->notices, i, n) {
        if (rc == 0) {
            json_t *chosen = json_object_get(n, "chosen");
            notify_event(e->cfg.notify, json_object_get(n, "event"),
                         json_is_array(chosen) ? chosen : NULL);
        }
    }
    json_array_clear(e->notices);
}

/* Each finished delivery becomes an event of the log (notify.delivered,
 * notify.failed), on the engine thread. */
static void drain_notices(Engine *e)
{
    NotifyOutcome out[64];
    size_t k;
    while ((k = notify_drain(e->cfg.notify, out, 64)) > 0) {
        for (size_t i = 0; i < k; i++) {
            json_t *d = json_pack("{s:s, s:I, s:s, s:i, s:I}", "notifier", out[i].notifier,
                                  "event_id", (json_int_t)out[i].event_id, "event_kind",
                                  out[i].kind, "attempts", out[i].attempts, "http_status",
                                  (json_int_t)out[i].http_status);
            if (!out[i].delivered)
                json_object_set_new(d, "error", json_string(out[i].error));
            core_event(e->core, e->now, out[i].delivered ? "notify.delivered" : "notify.failed", 0,
                       0, 0, d);
        }
    }
}

/* Writes what the core changed since the last flush, in a savepoint of the
 * batch's transaction. When the store refuses it, only that is undone and
 * only job (the request that made the changes; NULL for the engine's own
 * work) is answered with the error: the rest of the batch commits. */
static void flush(Engine *e, Job *job)
{
    CoreChanges c;
    core_changes(e->core, &c);
    if (c.n_exps + c.n_trials + c.n_workers + c.n_reports + c.n_ckpts + c.n_dropped_ckpts +
            c.n_events ==
        0) {
        e->counted = *core_counters(e->core);
        return;
    }
    RungError err;
    rung_error_clear(&err);
    int rc = store_savepoint(e->store, &err);
    if (rc == 0 && (rc = store_write_changes(e->store, &c, &err)) == 0)
        rc = store_release_savepoint(e->store, &err);
    if (rc == 0) {
        e->batch_reports += (uint64_t)c.n_reports;
        keep_notices(e, &c);
        for (int64_t i = 0; i < c.n_dropped_ckpts; i++) {
            rung_grow((void **)&e->unlink, &e->cap_unlink, e->n_unlink, sizeof *e->unlink);
            e->unlink[e->n_unlink++] = c.dropped_ckpts[i];
        }
        core_changes_clear(e->core);
        e->counted = *core_counters(e->core);
        return;
    }
    LOG_ERROR("the store refused a request's changes: %s", err.message);
    store_rollback_savepoint(e->store);
    if (store_fault(e->store) != NULL) {
        /* The file is not to be trusted: no reading back; the batch fails
         * (commit) and the daemon takes no more writes. */
        core_changes_clear(e->core);
        return;
    }
    undo(e, &c);
    core_set_counters(e->core, &e->counted);
    if (job != NULL) {
        char msg[RUNG_MESSAGE_MAX + 64];
        snprintf(msg, sizeof msg, "the store refused this request (%s); nothing of it was kept",
                 err.message);
        set_error_reply(job, RUNG_E_INTERNAL, msg);
        job->on_undelivered = NULL;
    }
}

/* Once a day (and at the first tick): the events past their retention go
 * (EngineConfig.event_retention_ms; docs/api.md, "Events"). */
static void prune_events(Engine *e)
{
    if (e->cfg.event_retention_ms <= 0 || mono_ms() < e->next_prune)
        return;
    e->next_prune = mono_ms() + 86400000LL;
    RungError err;
    if (store_prune_events(e->store, e->now - e->cfg.event_retention_ms, &err) != 0)
        LOG_WARN("pruning the event log: %s", err.message);
}

/* Runs job's handler and writes its changes; a job that parks joins the
 * parked list, the others the done list. */
static void run_job(Engine *e, Job *job)
{
    job->parked = false;
    job->next = NULL;
    job->fn(e, job);
    flush(e, job);
    if (job->parked && job->status == 0) {
        job->next = e->parked;
        e->parked = job;
        e->n_parked++;
    } else {
        job->parked = false;
        job->next = e->done;
        e->done = job;
    }
}

void engine_undelivered(Engine *e, Job *job)
{
    if (job->on_undelivered != NULL)
        job->on_undelivered(e, job);
}

/* Answers job 503 with the store's fault, without running it. */
static void answer_down(Engine *e, Job *job)
{
    set_error_reply(job, RUNG_E_UNAVAILABLE, store_fault(e->store));
    job->on_undelivered = NULL;
    job->parked = false;
    job->next = e->done;
    e->done = job;
}

void engine_submit(Engine *e, Job *job)
{
    e->in_flight++;
    if (store_fault(e->store) != NULL)
        answer_down(e, job); /* no handler runs: nothing changes that could not be kept */
    else
        run_job(e, job);
}

/* Re-runs parked jobs (oldest first) when trials may have become available,
 * and answers 204 to those past their deadline, or all when draining. */
static void serve_parked_once(Engine *e, bool tick)
{
    /* The list is newest first; reverse it to serve the oldest first. */
    Job *list = NULL;
    for (Job *j = e->parked, *next; j != NULL; j = next) {
        next = j->next;
        j->next = list;
        list = j;
    }
    e->parked = NULL;
    e->n_parked = 0;
    int64_t mono_ns = rung_mono_ns();
    int64_t mono = mono_ns / 1000000;
    for (Job *j = list, *next; j != NULL; j = next) {
        next = j->next;
        bool changed = j->wake ? j->wake(e, j) : core_availability_changed(e->core);
        bool gone = changed && j->client_gone && j->client_gone(j);
        bool answer = e->draining || gone || (tick && j->deadline_ms <= mono);
        if (answer || changed)
            j->parked_ns += mono_ns - j->parked_at_ns; /* it leaves the list; it may park again */
        if (answer) {
            j->parked = false;
            j->status = 204;
            j->next = e->done;
            e->done = j;
        } else if (changed) {
            run_job(e, j);
        } else {
            j->next = e->parked;
            e->parked = j;
            e->n_parked++;
        }
    }
}

/* serve_parked_once, and again while a re-run formed a gang: the members
 * whose requests were served earlier in the pass still wait, parked, for
 * their places (docs/api.md, "Gangs"). Each formation takes a parked
 * request, so the passes end. */
static void serve_parked(Engine *e, bool tick)
{
    core_take_gang_formed(e->core); /* a request before this batch's pass: the pass sees it */
    serve_parked_once(e, tick);
    for (int64_t pass = 0; pass < MAX_PARKED && core_take_gang_formed(e->core); pass++)
        serve_parked_once(e, false);
}

/* After a failed COMMIT (the disk, not a request: each request's writes
 * were checked in their savepoint): the state is read again from the
 * store, and running trials keep their lease deadlines. */
static void reload(Engine *e)
{
    Core *fresh = core_new(e->cfg.lease_ms);
    RungError err;
    if (fresh == NULL || store_load(e->store, fresh, e->now, &err) != 0) {
        LOG_ERROR("cannot reload the state from the store: %s; exiting",
                  fresh ? err.message : "out of memory");
        exit(1); /* the daemon cannot serve without a state it trusts */
    }
    for (int64_t i = 0; i < core_n_experiments(e->core); i++) {
        Experiment *x = core_experiment_at(e->core, i);
        int64_t cap = x->counts[TRIAL_RUNNING] + 1;
        int64_t *ids = calloc((size_t)cap, sizeof *ids);
        if (ids == NULL)
            abort();
        int64_t n = core_running_of(e->core, x, ids, cap);
        for (int64_t k = 0; k < n; k++) {
            Trial *t = core_trial(fresh, ids[k]);
            if (t != NULL && t->state == TRIAL_RUNNING)
                core_set_lease_expiry(t, core_trial(e->core, ids[k])->lease_expires_ms);
        }
        free(ids);
    }
    core_free(e->core);
    e->core = fresh;
    /* What the failed batch counted is undone with it. */
    core_set_counters(e->core, &e->committed);
    e->counted = e->committed;
}

/* Samples reports/s for GET /metrics about once a second. */
static void sample_rate(Engine *e)
{
    int64_t mono = mono_ms();
    if (mono - e->rate_at_ms < 1000)
        return;
    uint64_t reports = atomic_load(&e->stats->reports);
    if (e->rate_at_ms > 0)
        atomic_store(&e->stats->reports_per_s,
                     (double)(reports - e->rate_reports) * 1000.0 / (double)(mono - e->rate_at_ms));
    e->rate_at_ms = mono;
    e->rate_reports = reports;
}

/* Writes the batch's changes and commits; on failure every reply of the
 * batch says so and the state is rebuilt from the store. */
static void commit(Engine *e, int rc, RungError *err)
{
    flush(e, NULL); /* the engine's own changes (ticks, proposals) */
    if (rc == 0) {
        int64_t t0 = rung_mono_ns();
        rc = store_commit(e->store, err);
        stats_observe(&e->stats->commit_latency, rung_mono_ns() - t0);
        if (rc == 0) {
            atomic_fetch_add(&e->stats->reports, e->batch_reports);
            atomic_fetch_add(&e->stats->batches, 1);
        }
    }
    send_notices(e, rc);
    e->batch_reports = 0;
    int64_t n_unlink = e->n_unlink;
    e->n_unlink = 0; /* on a failure the rows stay, and reload() reads them back */
    for (int64_t i = 0; rc == 0 && i < n_unlink; i++) {
        const CoreCheckpoint *c = &e->unlink[i];
        if (ckptstore_remove(e->cfg.data_dir, c->trial_id, c->step) != 0)
            LOG_WARN("trial %lld: cannot remove its checkpoint of step %lld: %s (rungd removes "
                     "it at its next start)",
                     (long long)c->trial_id, (long long)c->step, strerror(errno));
    }
    if (rc != 0 && store_fault(e->store) != NULL) {
        /* The store stopped (store_fault; it logged why): no reply of the
         * batch says "kept", nor any later one (engine_submit). Memory is
         * not read back from a file that cannot be trusted. */
        store_rollback(e->store);
        for (Job *j = e->done; j != NULL; j = j->next) {
            set_error_reply(j, RUNG_E_UNAVAILABLE, store_fault(e->store));
            j->on_undelivered = NULL;
        }
        for (Job *j = e->parked, *next; j != NULL; j = next) {
            next = j->next;
            answer_down(e, j);
        }
        e->parked = NULL;
        e->n_parked = 0;
        core_changes_clear(e->core);
        return;
    }
    if (rc != 0) {
        LOG_ERROR("transaction failed: %s", err->message);
        store_rollback(e->store);
        for (Job *j = e->done; j != NULL; j = j->next)
            set_error_reply(j, RUNG_E_INTERNAL, "the store could not commit; nothing was changed");
        reload(e);
        return;
    }
    e->committed = *core_counters(e->core);
    /* What ended is in the store now: memory keeps only what is in flight. */
    core_release(e->core);
}

static void run_batch(Engine *e)
{
    /* The batch's time never goes back (the clock may): the dashboard's
     * curves read reports from a time cursor. */
    int64_t now = rung_now_ms();
    if (now > e->now)
        e->now = now;
    RungError err;
    rung_error_clear(&err);
    /* A store that stopped (store_fault) begins nothing: requests are still
     * read, and answered 503 (engine_submit). */
    bool down = store_fault(e->store) != NULL;
    int rc = down ? RUNG_E_UNAVAILABLE : store_begin(e->store, &err);
    if (rc != 0 && !down) {
        LOG_ERROR("cannot begin a transaction: %s", err.message);
        usleep(100 * 1000); /* requests wait rather than spin the loop */
    }
    /* Requests are read only inside a transaction: their writes need one. */
    if (rc == 0 || down)
        e->front.run(e->front.ctx);
    pthread_mutex_lock(&e->mu);
    Job *inbox = e->inbox;
    e->inbox = NULL;
    pthread_mutex_unlock(&e->mu);
    for (Job *j = inbox, *next; j != NULL; j = next) {
        next = j->next;
        if (rc == 0) {
            j->fn(e, j); /* internal: frees itself */
            flush(e, NULL);
        } else {
            engine_job_discard(j);
        }
    }
    if (rc == 0) {
        bool tick = mono_ms() >= e->next_tick;
        if (tick) {
            e->next_tick = mono_ms() + TICK_MS;
            core_expire_leases(e->core, e->now);
            core_tick(e->core, e->now); /* stop.time_budget_s */
            flush(e, NULL);
            core_release_idle_workers(e->core, e->now, WORKER_IDLE_MS);
            prune_events(e);
            drain_notices(e);
            sample_rate(e);
            engine_analysis_tick(e);
            if (e->front.tick)
                e->front.tick(e->front.ctx);
        }
        serve_parked(e, tick);
        core_availability_seen(e->core);
        engine_request_proposals(e);
    } else if (down && mono_ms() >= e->next_tick) {
        e->next_tick = mono_ms() + TICK_MS;
        if (e->front.tick)
            e->front.tick(e->front.ctx); /* the front's own timeouts and limits */
    }
    if (down) {
        e->batch_reports = 0;
    } else {
        commit(e, rc, &err);
    }
    /* Only now may the replies go out. */
    Job *done = e->done;
    e->done = NULL;
    e->resumed = done != NULL;
    for (Job *j = done, *next; j != NULL; j = next) {
        next = j->next;
        e->in_flight--;
        j->on_done(j);
    }
}

/* Waits for requests, proposals, the tick or HTTP timeouts. */
static void wait_events(Engine *e)
{
    int64_t timeout = e->next_tick - mono_ms();
    int64_t http = e->front.timeout_ms(e->front.ctx);
    if (http >= 0 && http < timeout)
        timeout = http;
    if (e->draining && timeout > 10)
        timeout = 10; /* shutting down: look again soon */
    if (e->resumed || timeout < 0)
        timeout = 0; /* resumed connections must be run again at once */
    struct epoll_event ev[4];
    int n = epoll_wait(e->epfd, ev, 4, (int)timeout);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.fd == e->wake_fd) {
            uint64_t count;
            if (read(e->wake_fd, &count, sizeof count) < 0) {
                /* EAGAIN: another read took it. */
            }
        }
    }
}

/* How long requests in flight may take to finish at shutdown. */
#define DRAIN_MS 2000

static void *engine_main(void *arg)
{
    Engine *e = arg;
    e->next_tick = mono_ms() + TICK_MS;
    int64_t drain_until = 0;
    int flush_turns = 0;
    for (;;) {
        if (atomic_load(&e->stop_requested) && !e->draining) {
            e->draining = true;
            e->front.quiesce(e->front.ctx); /* no new connections */
            drain_until = mono_ms() + DRAIN_MS;
        }
        if (e->draining && e->in_flight == 0 && !e->resumed) {
            /* A few more turns let the last replies reach their sockets. */
            if (++flush_turns > 3 || mono_ms() > drain_until)
                break;
        }
        if (e->draining && mono_ms() > drain_until + DRAIN_MS)
            break;
        wait_events(e);
        run_batch(e);
    }
    return NULL;
}

Engine *engine_new(Store *store, Core *core, const EngineConfig *cfg, Stats *stats)
{
    Engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->store = store;
    e->core = core;
    e->cfg = *cfg;
    e->stats = stats;
    e->epfd = e->wake_fd = -1;
    e->generation = rung_now_ms();
    pthread_mutex_init(&e->mu, NULL);
    atomic_init(&e->stop_requested, false);
    e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    e->proposer = proposer_start(engine_on_proposals, engine_on_explored, e);
    e->analysis = analysis_start(engine_on_analysis, e);
    if (e->wake_fd < 0 || e->epfd < 0 || e->proposer == NULL || e->analysis == NULL) {
        engine_free(e);
        return NULL;
    }
    return e;
}

int engine_start(Engine *e, const EngineFront *front)
{
    e->front = *front;
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.fd = front->epoll_fd(front->ctx);
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0)
        return -1;
    ev.data.fd = e->wake_fd;
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wake_fd, &ev) != 0)
        return -1;
    if (pthread_create(&e->thread, NULL, engine_main, e) != 0)
        return -1;
    e->started = true;
    return 0;
}

void engine_stop(Engine *e)
{
    if (e == NULL || !e->started)
        return;
    atomic_store(&e->stop_requested, true);
    engine_wake(e);
    pthread_join(e->thread, NULL);
    e->started = false;
}

void engine_free(Engine *e)
{
    if (e == NULL)
        return;
    engine_stop(e);
    proposer_stop(e->proposer);
    engine_analysis_free(e);
    /* Proposals that arrived after the last batch are dropped: they are
     * asked for again after a restart. */
    for (Job *j = e->inbox, *next; j != NULL; j = next) {
        next = j->next;
        engine_job_discard(j);
    }
    json_decref(e->notices);
    /* A clean stop hands the lead over at once (PostgreSQL: a standby
     * takes it without waiting for the lease to end). */
    store_leader_resign(e->store);
    store_close(e->store);
    core_free(e->core);
    if (e->wake_fd >= 0)
        close(e->wake_fd);
    if (e->epfd >= 0)
        close(e->epfd);
    pthread_mutex_destroy(&e->mu);
    free(e->unlink);
    free(e);
}
