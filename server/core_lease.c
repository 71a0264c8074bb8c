/* Workers and leases: who may take which trial (placement, fair share,
 * priority), the lease itself, its renewal by heartbeats and reports, a
 * lease given back (unlease, preempt) and one that ran out. */
#include "core_internal.h"

#include "clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- workers and leases ---- */

Worker *core_worker_new(Core *core, int64_t id, const char *name, const char *hostname,
                        json_t *gpus, int64_t cpus, int64_t registered_at)
{
    Worker *w = calloc(1, sizeof *w);
    if (w == NULL)
        abort();
    w->id = id;
    w->name = core_dup_str(name);
    w->hostname = core_dup_str(hostname);
    w->gpus = gpus;
    w->cpus = cpus;
    w->registered_at = w->last_seen_at = registered_at;
    w->owner_id = -1;
    idmap_put(&core->workers, id, w);
    if (id >= core->next_worker_id)
        core->next_worker_id = id + 1;
    return w;
}

Worker *core_worker_add(Core *core, const char *name, const char *hostname, json_t *gpus,
                        int64_t cpus, int64_t now)
{
    Worker *w = core_worker_new(core, core->next_worker_id, name, hostname, gpus, cpus, now);
    core_mark_worker(core, w);
    return w;
}

void core_worker_set_labels(Core *core, Worker *w, json_t *labels)
{
    json_decref(w->labels);
    w->labels = labels;
    core_mark_worker(core, w);
}

void core_worker_set_caps(Core *core, Worker *w, json_t *caps)
{
    json_decref(w->caps);
    w->caps = caps;
    core_mark_worker(core, w);
}

void core_worker_seen(Core *core, Worker *w, int64_t now)
{
    (void)core;
    if (now > w->last_seen_at)
        w->last_seen_at = now;
}

bool core_worker_alive(const Core *core, const Worker *w, int64_t now)
{
    return w != NULL && now - w->last_seen_at <= core->lease_ms;
}

/* Whether a goes before b for the next slot: higher priority, then fewer
 * running trials for its share (fair share of the slots held now), then
 * fewer leases for its share (`pass`: fair share over time, which decides
 * when slots free up one at a time and running counts tie), then the
 * older. */
static bool leases_before(const Experiment *a, const Experiment *b)
{
    if (a->spec.priority != b->spec.priority)
        return a->spec.priority > b->spec.priority;
    double ua = (double)a->counts[TRIAL_RUNNING] / a->spec.share;
    double ub = (double)b->counts[TRIAL_RUNNING] / b->spec.share;
    if (ua != ub)
        return ua < ub;
    if (a->pass != b->pass)
        return a->pass < b->pass;
    return a->id < b->id;
}

/* Whether w may take pending trial t. A promoted trial resumes from the
 * checkpoint in its trial folder, which is on the worker that paused it:
 * it waits for that worker while the worker is alive (seen within a lease
 * time); after that any worker may take it, and the program finds no
 * checkpoint and starts over. */
static bool may_take(const Core *core, const Worker *w, const Trial *t, int64_t now)
{
    if (t->from_trial != 0) {
        /* pbt: the donor's checkpoint is on the donor's worker's disk, or
         * stored in rungd once that worker uploaded it. */
        if (t->from_worker == w->id || core_checkpoint(core, t->from_trial, t->from_step) != NULL)
            return true;
        const Worker *d = core_worker((Core *)core, t->from_worker);
        return d == NULL || !core_worker_alive(core, d, now);
    }
    if (t->n_seen == 0 || t->worker_id == w->id)
        return true;
    return !core_worker_alive(core, core_owner_of(core, t), now);
}

/* A sign of life from worker_id on running trial t renews its lease: the
 * trial's, or that member's in a gang. */
void core_renew(Core *core, Trial *t, int64_t worker_id, int64_t now)
{
    int64_t until = now + core->lease_ms;
    if (t->gang == NULL) {
        t->lease_expires_ms = until;
        return;
    }
    GangMember *m = members_of(t->gang, worker_id);
    if (m != NULL)
        m->lease_expires_ms = until;
    core_gang_sync_expiry(t);
}

/* Whether worker_id holds running trial t: its lease, or a place in its
 * gang that has not finished. */
bool core_holds_trial(const Trial *t, int64_t worker_id)
{
    if (t->gang == NULL)
        return t->worker_id == worker_id;
    const GangMember *m = members_of(t->gang, worker_id);
    return m != NULL && !m->done;
}

/* The best experiment with a pending trial that w may take with this
 * offer (core_lease's order), and that trial; *e NULL when none. A gang's
 * trials go only to gang-capable offers, and not while it is passed over. */
static void pick(Core *core, Worker *w, const LeaseOffer *offer, int64_t now, Experiment **e,
                 Trial **t)
{
    *e = NULL;
    *t = NULL;
    for (int64_t i = 0; i < core->n_exps; i++) {
        Experiment *c = core->exps[i];
        if (c->state != EXP_RUNNING || c->pending.head == NULL || !core_fits(c, w, offer))
            continue;
        if (core_is_gang(c) && (offer->advertise_addr == NULL || now < c->gang.passed_over_until))
            continue;
        if (*e != NULL && !leases_before(c, *e))
            continue;
        /* A gang starts where its members are: no checkpoint waits on one worker. */
        Trial *take = c->pending.head;
        while (take != NULL && !core_is_gang(c) && !may_take(core, w, take, now)) {
            /* pbt: this worker would run it: the donor's worker uploads. */
            if (take->from_trial != 0 && !take->ckpt_wanted) {
                take->ckpt_wanted = true;
                core->availability_changed = true;
            }
            take = take->next;
        }
        if (take != NULL) {
            *e = c;
            *t = take;
        }
    }
}

static Trial *lease(Core *core, Worker *w, const LeaseOffer *offer, const char *token, int64_t now)
{
    core_worker_seen(core, w, now);
    w->gang_capable = offer->advertise_addr != NULL;
    w->lease_trainables = offer->trainables;
    /* A gang that formed without this request: its place first. */
    Trial *t = core_gang_undelivered(core, w);
    if (t != NULL)
        return core_gang_deliver(core, t, w, offer, token, now) ? t : NULL;
    if (w->held_for != 0) {
        Experiment *held = core_experiment(core, w->held_for);
        if (core_hold_renew(held, w, offer))
            return NULL; /* held: it takes nothing else while the hold lasts */
        if (held != NULL)
            core_hold_drop(core, held, w->id);
        w->held_for = 0;
    }
    /* The experiments in memory are few (those running): one pass per
     * lease picks the best that has a trial this worker may take. */
    Experiment *e;
    pick(core, w, offer, now, &e, &t);
    if (t == NULL)
        return NULL;
    if (core_is_gang(e)) {
        core_hold_add(e, w, offer, now);
        if (e->gang.n_holds < e->spec.nodes)
            return NULL;
        t = core_gang_form(core, e, now);
        core_gang_deliver(core, t, w, offer, token, now); /* pick checked that the offer fits */
        return t;
    }
    e->pass += 1.0 / e->spec.share;
    core_set_state(core, t, TRIAL_RUNNING, now);
    t->leased_seen = t->n_seen;
    t->worker_id = w->id;
    w->n_running++;
    snprintf(t->lease_token, sizeof t->lease_token, "%s", token);
    t->lease_expires_ms = now + core->lease_ms;
    json_decref(t->resources);
    t->resources = core_grant(e, offer);
    return t;
}

Trial *core_lease(Core *core, Worker *w, const LeaseOffer *offer, const char *token, int64_t now)
{
    /* Counted here, once per trial handed out, whichever way lease() found it. */
    Trial *t = lease(core, w, offer, token, now);
    if (t != NULL)
        core->counters.leases_granted++;
    return t;
}

static bool unlease(Core *core, Trial *t, const char *token, int64_t now)
{
    if (t->gang != NULL)
        return core_gang_unlease(core, t, token);
    if (t->state != TRIAL_RUNNING || t->lease_token[0] == '\0' ||
        !core_token_equal(token, t->lease_token) || t->n_seen > t->leased_seen)
        return false;
    /* Back as it was: a preempted trial stays one. */
    core_set_state(core, t, t->leased_from == TRIAL_PREEMPTED ? TRIAL_PREEMPTED : TRIAL_PENDING,
                   now);
    core_queue_front(t->exp, t);
    t->lease_token[0] = '\0';
    t->started_at = 0;
    core->availability_changed = true;
    return true;
}

bool core_unlease(Core *core, Trial *t, const char *token, int64_t now)
{
    bool taken = unlease(core, t, token, now);
    if (taken)
        core->counters.leases_undelivered++;
    return taken;
}

int core_preempt(Core *core, Trial *t, const char *token, int64_t now, RungError *err)
{
    if (t->gang != NULL) {
        /* Any member's worker may give a gang back: the gang stops as one. */
        if (members_by_token(t->gang, token) == NULL)
            return core_lease_lost(t, err);
        if (t->gang->attempt != t->attempt)
            return 0; /* that attempt is over */
    } else if (t->lease_token[0] == '\0' || !core_token_equal(token, t->lease_token)) {
        return core_lease_lost(t, err);
    }
    if (t->state != TRIAL_RUNNING)
        return 0; /* already ended or given back: nothing changes */
    if (t->stop_kind != STOP_NONE) {
        core_apply_stop(core, t, now); /* asked to stop meanwhile: that wins */
        return 0;
    }
    /* Same attempt, same reports: it resumes after its last step, first in
     * line, on its worker while that one is alive (may_take). */
    core_event(core, now, "trial.preempted", t->exp->id, t->id, t->worker_id, NULL);
    core_set_state(core, t, TRIAL_PREEMPTED, now);
    core_queue_front(t->exp, t);
    t->preemptions++;
    t->lease_token[0] = '\0';
    t->started_at = 0;
    core->availability_changed = true;
    return 0;
}

json_t *core_heartbeat(Core *core, Worker *w, const int64_t *ids, int64_t n_ids, json_t *heartbeat,
                       int64_t now)
{
    core_worker_seen(core, w, now);
    json_decref(w->heartbeat);
    w->heartbeat = heartbeat;
    core_mark_worker(core, w);
    json_t *stop = json_array();
    for (int64_t i = 0; i < n_ids; i++) {
        Trial *t = core_trial(core, ids[i]);
        if (t != NULL && t->state == TRIAL_RUNNING && core_holds_trial(t, w->id)) {
            if (t->stop_kind != STOP_NONE)
                core_apply_stop(core, t, now); /* a gang's stop reaches every member this way */
            else
                core_renew(core, t, w->id, now);
        }
        /* Whatever this worker no longer holds, it must stop. */
        if (t == NULL || t->state != TRIAL_RUNNING || !core_holds_trial(t, w->id))
            json_array_append_new(stop, json_integer(ids[i]));
    }
    return stop;
}

/* Why a trial whose lease ran out fails: its worker was lost, or in a gang
 * the first member whose lease ran out (one that never took its place, or
 * went silent). */
static void lost_message(const Core *core, const Trial *t, int64_t now, char *msg, size_t size)
{
    double s = (double)core->lease_ms / 1000.0;
    snprintf(msg, size, "worker lost: no heartbeat from worker %lld for %.1f s",
             (long long)t->worker_id, s);
    for (int64_t i = 0; t->gang != NULL && i < t->gang->nnodes; i++) {
        const GangMember *m = &t->gang->members[i];
        if (m->done || m->lease_expires_ms > now)
            continue;
        if (m->lease_token[0] == '\0')
            snprintf(msg, size,
                     "worker lost: worker %lld did not take its place in the gang (node %lld) "
                     "within %.1f s",
                     (long long)m->worker_id, (long long)i, s);
        else
            snprintf(msg, size,
                     "worker lost: no heartbeat from worker %lld (node %lld of the gang) for "
                     "%.1f s",
                     (long long)m->worker_id, (long long)i, s);
        return;
    }
}

/* A lease ran out because its worker stopped calling: the event that the
 * worker went gone, once per worker in one pass (noted). */
#define GONE_NOTED_MAX 64
static void gone_event(Core *core, const Trial *t, int64_t now, int64_t *noted, int *n_noted)
{
    Worker *w = core_worker(core, t->worker_id);
    if (w == NULL || core_worker_alive(core, w, now))
        return;
    for (int i = 0; i < *n_noted; i++)
        if (noted[i] == w->id)
            return;
    if (*n_noted < GONE_NOTED_MAX)
        noted[(*n_noted)++] = w->id;
    char last[32];
    rung_time_format(w->last_seen_at, last, sizeof last);
    core_event(core, now, "worker.gone", 0, 0, w->id,
               json_pack("{s:s, s:s}", "name", w->name, "last_seen_at", last));
}

int64_t core_expire_leases(Core *core, int64_t now)
{
    int64_t noted[GONE_NOTED_MAX];
    int n_noted = 0;
    int64_t n = 0;
    Trial *next;
    for (Trial *t = core->running.head; t != NULL; t = next) {
        next = t->next;
        if (t->gang != NULL)
            core_gang_sync_expiry(t); /* its members' leases are the truth */
        if (t->lease_expires_ms > now)
            continue;
        n++;
        core->counters.leases_expired++;
        t->lease_token[0] = '\0';
        gone_event(core, t, now, noted, &n_noted);
        core_event(core, now, "lease.expired", t->exp->id, t->id, t->worker_id, NULL);
        if (t->stop_kind != STOP_NONE) {
            core_apply_stop(core, t, now);
        } else if (t->exp->sched->resumes_lost && t->n_seen > 0 && t->gang == NULL &&
                   t->lost_resumes < CORE_PBT_LOST_RESUMES) {
            /* pbt: a member is a population's progress, not a config to
             * try again: it goes back to the front of the line, keeping its
             * steps, and resumes from its checkpoint of its last reported
             * step. A worker restarted with the same --workdir finds that
             * checkpoint (any other worker starts the program over without
             * it, and its repeated steps are not stored). */
            t->lost_resumes++;
            core_set_state(core, t, TRIAL_PENDING, now);
            core_queue_front(t->exp, t);
            t->started_at = 0;
            core->availability_changed = true;
        } else {
            char msg[160];
            lost_message(core, t, now, msg, sizeof msg);
            core_fail_or_retry(core, t, msg, RETRY_WORKER_LOST, now);
        }
    }
    return n;
}

int64_t core_token_worker(const Trial *t, const char *token)
{
    if (t->gang != NULL && t->gang->attempt == t->attempt) {
        const GangMember *m = members_by_token(t->gang, token);
        return m != NULL ? m->worker_id : 0;
    }
    return t->lease_token[0] != '\0' && core_token_equal(token, t->lease_token) ? t->worker_id : 0;
}
