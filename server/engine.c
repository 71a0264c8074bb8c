/* The engine thread; see engine.h. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "propose.h"

/* How often leases and long polls are checked: a lease expires at most this
 * late, and a 1 s lease in tests still fails within ~1.1 s. */
#define TICK_MS 100
/* Configs kept proposed ahead per experiment: enough for a burst of leases
 * from many workers between two proposer round trips. */
#define PENDING_TARGET 256

struct Engine {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    Job *head, *tail;        /* queued jobs, under mu */
    bool draining, stopping; /* under mu */
    /* Engine thread only: */
    Store *store;
    Core *core;
    EngineConfig cfg;
    Stats *stats;
    Proposer *proposer;
    Job *parked;             /* parked jobs, oldest first */
    int64_t now;
    int64_t next_tick;
    int64_t rate_at_ms;      /* monotonic ms of the last reports/s sample */
    uint64_t rate_reports;   /* reports committed at that sample */
};

static int64_t mono_ms(void)
{
    return rung_mono_ns() / 1000000;
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

uint64_t engine_seed(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)rung_mono_ns();
    return v & ((1ULL << 53) - 1); /* exact as a JSON number everywhere */
}

bool engine_park(Engine *e, Job *job, int64_t deadline_ms)
{
    pthread_mutex_lock(&e->mu);
    bool draining = e->draining;
    pthread_mutex_unlock(&e->mu);
    if (draining)
        return false;
    job->parked = true;
    job->deadline_ms = deadline_ms;
    return true;
}

/* ---- proposals ---- */

static void apply_proposals(Engine *e, Job *job)
{
    Proposals *p = job->data;
    Experiment *exp = core_experiment(e->core, p->exp_id);
    if (exp != NULL) {
        exp->proposing -= p->count;
        if (exp->proposing < 0)
            exp->proposing = 0;
        /* Configs are added in trial-number order; anything else (an
         * experiment canceled meanwhile) is dropped. */
        for (int64_t i = 0; i < p->count; i++) {
            if (exp->state != EXP_RUNNING || p->configs[i] == NULL ||
                p->first + i != exp->n_trials)
                break;
            core_trial_add(e->core, exp, p->configs[i], e->now);
            p->configs[i] = NULL;
        }
    }
    proposals_free(p);
    free(job);
}

/* Called on the proposer thread: queue the result as an internal job. */
static void on_proposals(void *ctx, Proposals *p)
{
    Engine *e = ctx;
    Job *job = calloc(1, sizeof *job);
    if (job == NULL)
        abort();
    job->fn = apply_proposals;
    job->data = p;
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        proposals_free(p);
        free(job);
        return;
    }
    if (e->tail)
        e->tail->next = job;
    else
        e->head = job;
    e->tail = job;
    pthread_cond_signal(&e->cond);
    pthread_mutex_unlock(&e->mu);
}

static void request_proposals(Engine *e)
{
    Core *core = e->core;
    for (int64_t id = 1; id < core->n_exps; id++) {
        Experiment *exp = core->exps[id];
        if (exp == NULL)
            continue;
        int64_t want = core_proposals_wanted(exp, PENDING_TARGET);
        /* Ask in chunks so that a fast sampler's answer is not one long
         * transaction; below a quarter of the target, wait for more need. */
        if (want <= 0 || (want < PENDING_TARGET / 4 &&
                          exp->n_trials + exp->proposing + want < exp->spec.total_trials))
            continue;
        int64_t first = exp->n_trials + exp->proposing;
        exp->proposing += want;
        proposer_request(e->proposer, exp->id, json_object_get(exp->spec.json, "search_space"),
                         &exp->spec.searcher, first, want);
    }
}

/* ---- the batch ---- */

/* Appends job to the list *done (a singly linked list through next). */
static void push(Job **list, Job *job)
{
    job->next = *list;
    *list = job;
}

static void set_internal_error(Job *job, const char *msg)
{
    json_decref(job->reply);
    free(job->text);
    job->text = NULL;
    job->status = 500;
    job->reply = json_pack("{s:{s:s, s:s}}", "error", "code", "internal", "message", msg);
}

/* Runs job's handler; a job that parks joins the parked list, the others
 * the done list. Internal jobs free themselves. */
static void run_job(Engine *e, Job *job, Job **done)
{
    bool internal = job->fn == apply_proposals;
    job->parked = false;
    job->next = NULL;
    job->fn(e, job);
    if (internal)
        return;
    if (job->parked) {
        job->next = e->parked;
        e->parked = job;
    } else {
        push(done, job);
    }
}

/* Re-runs parked jobs (oldest first) while trials may have become available,
 * and answers 204 to those past their deadline or when draining. */
static void serve_parked(Engine *e, Job **done, bool tick, bool draining)
{
    /* The list is newest first; reverse it to serve the oldest first. */
    Job *list = NULL;
    for (Job *j = e->parked, *next; j != NULL; j = next) {
        next = j->next;
        j->next = list;
        list = j;
    }
    e->parked = NULL;
    int64_t mono = mono_ms();
    for (Job *j = list, *next; j != NULL; j = next) {
        next = j->next;
        if (draining || (tick && j->deadline_ms <= mono)) {
            j->parked = false;
            j->status = 204;
            push(done, j);
        } else if (e->core->availability_changed) {
            run_job(e, j, done);
        } else {
            j->next = e->parked;
            e->parked = j;
        }
    }
}

static void reload(Engine *e)
{
    Core *fresh = core_new(e->cfg.lease_ms);
    RungError err;
    if (fresh == NULL || store_load(e->store, fresh, rung_now_ms(), &err) != 0) {
        LOG_ERROR("cannot reload the state from the store: %s; exiting",
                  fresh ? err.message : "out of memory");
        exit(1); /* only the program exits; this is the program's engine */
    }
    core_free(e->core);
    e->core = fresh;
}

/* Samples reports/s for GET /metrics about once a second. */
static void sample_rate(Engine *e)
{
    int64_t mono = mono_ms();
    if (mono - e->rate_at_ms < 1000)
        return;
    uint64_t reports = atomic_load(&e->stats->reports);
    if (e->rate_at_ms > 0)
        atomic_store(&e->stats->reports_per_s, (double)(reports - e->rate_reports) * 1000.0 /
                                                   (double)(mono - e->rate_at_ms));
    e->rate_at_ms = mono;
    e->rate_reports = reports;
}

static void run_batch(Engine *e, Job *batch, bool draining)
{
    Job *done = NULL;
    e->now = rung_now_ms();
    RungError err;
    rung_error_clear(&err);
    int rc = store_begin(e->store, &err);
    if (rc == 0) {
        for (Job *j = batch, *next; j != NULL; j = next) {
            next = j->next;
            run_job(e, j, &done);
        }
        bool tick = mono_ms() >= e->next_tick;
        if (tick) {
            e->next_tick = mono_ms() + TICK_MS;
            core_expire_leases(e->core, e->now);
            sample_rate(e);
        }
        serve_parked(e, &done, tick, draining);
        e->core->availability_changed = false;
        request_proposals(e);
        CoreChanges changes;
        core_changes(e->core, &changes);
        int64_t reports = changes.n_reports;
        rc = store_write_changes(e->store, &changes, &err);
        core_changes_clear(e->core);
        if (rc == 0) {
            int64_t t0 = rung_mono_ns();
            rc = store_commit(e->store, &err);
            stats_observe(&e->stats->commit_latency, rung_mono_ns() - t0);
            if (rc == 0) {
                atomic_fetch_add(&e->stats->reports, (uint64_t)reports);
                atomic_fetch_add(&e->stats->batches, 1);
            }
        }
    } else {
        for (Job *j = batch, *next; j != NULL; j = next) {
            next = j->next;
            if (j->fn == apply_proposals) {
                proposals_free(j->data);
                free(j);
            } else {
                push(&done, j);
            }
        }
    }
    if (rc != 0) {
        /* Nothing of this batch is durable: say so to every request, and
         * rebuild the state from what the store does hold. */
        LOG_ERROR("transaction failed: %s", err.message);
        store_rollback(e->store);
        for (Job *j = done; j != NULL; j = j->next)
            set_internal_error(j, "the store could not commit; nothing was changed");
        reload(e);
    }
    /* One semaphore per job: waking 64 waiters must not make them queue
     * on a shared mutex. */
    for (Job *j = done, *next; j != NULL; j = next) {
        next = j->next;
        sem_post(&j->done);
    }
}

static void *engine_main(void *arg)
{
    Engine *e = arg;
    e->next_tick = mono_ms() + TICK_MS;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (e->head == NULL && !e->stopping && mono_ms() < e->next_tick) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t wait_ms = e->next_tick - mono_ms();
            if (wait_ms < 1)
                wait_ms = 1;
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (wait_ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&e->cond, &e->mu, &ts);
        }
        Job *batch = e->head;
        e->head = e->tail = NULL;
        bool stopping = e->stopping, draining = e->draining;
        pthread_mutex_unlock(&e->mu);
        run_batch(e, batch, draining);
        pthread_mutex_lock(&e->mu);
        if (stopping && e->head == NULL)
            break;
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

Engine *engine_start(Store *store, Core *core, const EngineConfig *cfg, Stats *stats)
{
    Engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->store = store;
    e->core = core;
    e->cfg = *cfg;
    e->stats = stats;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cond, NULL);
    e->proposer = proposer_start(on_proposals, e);
    if (e->proposer == NULL || pthread_create(&e->thread, NULL, engine_main, e) != 0) {
        proposer_stop(e->proposer);
        free(e);
        return NULL;
    }
    return e;
}

void engine_submit(Engine *e, Job *job)
{
    sem_init(&job->done, 0, 0);
    job->next = NULL;
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        job->status = 503;
        job->reply = json_pack("{s:{s:s, s:s}}", "error", "code", "unavailable", "message",
                               "rungd is shutting down");
        sem_destroy(&job->done);
        return;
    }
    bool was_empty = e->head == NULL;
    if (e->tail)
        e->tail->next = job;
    else
        e->head = job;
    e->tail = job;
    /* The engine only sleeps on an empty queue. */
    if (was_empty)
        pthread_cond_signal(&e->cond);
    pthread_mutex_unlock(&e->mu);
    while (sem_wait(&job->done) != 0)
        ; /* EINTR: keep waiting, the reply is coming */
    sem_destroy(&job->done);
}

void engine_drain(Engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->draining = true;
    /* Force a tick so parked jobs are answered at once. */
    pthread_cond_signal(&e->cond);
    pthread_mutex_unlock(&e->mu);
}

void engine_stop(Engine *e)
{
    if (e == NULL)
        return;
    /* The proposer first: its answers go through our queue. */
    proposer_stop(e->proposer);
    pthread_mutex_lock(&e->mu);
    e->draining = e->stopping = true;
    pthread_cond_signal(&e->cond);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    /* Parked jobs were answered by the last batch (draining). */
    store_close(e->store);
    core_free(e->core);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cond);
    free(e);
}
