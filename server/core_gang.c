/* Gangs (docs/api.md, "Gangs"): a trial of several nodes forms once enough
 * workers hold for it, runs on all of them at once, and ends as one. Holds,
 * their expiry and the reservation of an experiment passed over twice are
 * here; the members' value is gang_members.c's. */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gangs (docs/api.md, "Gangs") ---- */

bool core_is_gang(const Experiment *e)
{
    return e->spec.nodes > 1;
}

static int64_t gang_wait_ms(const Experiment *e)
{
    return (int64_t)(e->spec.gang_wait_s * 1000.0);
}

/* A held worker asks again at least once per long poll (30 s at most,
 * docs/api.md "Long polls") and heartbeats every lease/6: one silent for a
 * lease and a long poll more is gone, and its hold with it. */
#define HOLD_SILENT_MS(core) ((core)->lease_ms + 30000)

/* After any change to t's gang: its stored form follows, and t is written. */
void core_gang_changed(Core *core, Trial *t)
{
    json_decref(t->gang_json);
    t->gang_json = t->gang != NULL ? members_to_json(t->gang) : NULL;
    core_mark_trial(core, t);
}

/* A gang trial's lease runs out with the first of its members' leases. */
void core_gang_sync_expiry(Trial *t)
{
    int64_t at = members_expiry(t->gang);
    if (at != INT64_MAX)
        t->lease_expires_ms = at;
}

const GangMember *core_gang_member(const Trial *t, int64_t worker_id, int64_t *rank)
{
    if (t->gang == NULL || t->gang->attempt != t->attempt)
        return NULL;
    GangMember *m = members_of(t->gang, worker_id);
    if (m != NULL)
        *rank = members_rank(t->gang, m);
    return m;
}

bool core_take_gang_formed(Core *core)
{
    bool formed = core->gang_formed;
    core->gang_formed = false;
    return formed;
}

/* Whether the offer has what one node of e needs. */
static bool offer_fits(const Experiment *e, const LeaseOffer *offer)
{
    return e->spec.gpus <= offer->n_gpus && e->spec.cpus <= offer->cpus &&
           (offer->trainables & SPEC_TRAINABLE_BIT(e->spec.trainable)) != 0;
}

/* The holds ran out (or the gang cannot form): released, and the gang
 * passed over for gang_wait_s so that smaller trials fill the slots. */
static void gang_pass_over(Core *core, Experiment *e, int64_t now)
{
    core_holds_release(core, e);
    e->gang.passed_over_until = now + gang_wait_ms(e);
    e->gang.reserving = false;
}

/* Holds w for e's next gang, with where the other members reach it. */
void core_hold_add(Experiment *e, Worker *w, const LeaseOffer *offer, int64_t now)
{
    GangWait *g = &e->gang;
    if (g->holds == NULL && (g->holds = calloc((size_t)e->spec.nodes, sizeof *g->holds)) == NULL)
        abort();
    GangHold *h = &g->holds[g->n_holds++];
    h->worker_id = w->id;
    snprintf(h->addr, sizeof h->addr, "%s", offer->advertise_addr);
    h->port = offer->port;
    if (g->n_holds == 1)
        g->first_hold_ms = now;
    w->held_for = e->id;
}

/* Whether w's hold on e stands with this offer (e still gathers, and could
 * start the gang on it now); the hold then takes the offer's address and
 * port, which are the latest. */
bool core_hold_renew(const Experiment *e, const Worker *w, const LeaseOffer *offer)
{
    if (e == NULL || e->state != EXP_RUNNING || e->pending.head == NULL ||
        offer->advertise_addr == NULL || !core_fits(e, w, offer))
        return false;
    for (int64_t i = 0; i < e->gang.n_holds; i++) {
        GangHold *h = &e->gang.holds[i];
        if (h->worker_id == w->id) {
            snprintf(h->addr, sizeof h->addr, "%s", offer->advertise_addr);
            h->port = offer->port;
            return true;
        }
    }
    return false;
}

/* The last hold came: the head of e's pending line starts on every held
 * worker at once, rank 0 the first held. Each member's lease is given with
 * its next lease request (core_gang_deliver); until then its token is empty. */
Trial *core_gang_form(Core *core, Experiment *e, int64_t now)
{
    GangWait *g = &e->gang;
    Trial *t = e->pending.head;
    Gang *gang = members_new(e->spec.nodes, t->attempt);
    snprintf(gang->master_addr, sizeof gang->master_addr, "%s", g->holds[0].addr);
    gang->master_port = g->holds[0].port;
    for (int64_t i = 0; i < gang->nnodes; i++) {
        gang->members[i].worker_id = g->holds[i].worker_id;
        gang->members[i].lease_expires_ms = now + core->lease_ms;
        Worker *w = core_worker(core, g->holds[i].worker_id);
        if (w != NULL)
            w->held_for = 0;
    }
    members_free(t->gang); /* the last attempt's, kept until now for inspection */
    t->gang = gang;
    e->pass += 1.0 / e->spec.share; /* one lease of the experiment, as a 1-node trial's */
    core_set_state(core, t, TRIAL_RUNNING, now);
    t->leased_seen = t->n_seen;
    t->worker_id = gang->members[0].worker_id;
    t->lease_token[0] = '\0'; /* rank 0's, once its lease is given */
    t->lease_expires_ms = now + core->lease_ms;
    json_decref(t->resources);
    t->resources = NULL;
    core_count_slots(core, t, +1);
    g->n_holds = 0;
    g->first_hold_ms = 0;
    g->releases = 0;
    g->reserving = false;
    g->passed_over_until = 0;
    core_gang_changed(core, t);
    /* Every other member's parked lease request must run again now. */
    core->availability_changed = true;
    core->gang_formed = true;
    return t;
}

/* Gives worker w its place in running gang t with this lease's token.
 * False when this offer cannot run it now (the worker asks again; its
 * lease runs out meanwhile like any other). */
bool core_gang_deliver(Core *core, Trial *t, Worker *w, const LeaseOffer *offer, const char *token,
                       int64_t now)
{
    GangMember *m = members_of(t->gang, w->id);
    if (m == NULL || offer->advertise_addr == NULL || !offer_fits(t->exp, offer))
        return false;
    snprintf(m->lease_token, sizeof m->lease_token, "%s", token);
    m->lease_expires_ms = now + core->lease_ms;
    json_decref(m->resources);
    m->resources = core_grant(t->exp, offer);
    if (members_rank(t->gang, m) == 0) {
        snprintf(t->lease_token, sizeof t->lease_token, "%s", token);
        json_decref(t->resources);
        t->resources = json_incref(m->resources);
    }
    core_gang_sync_expiry(t);
    core_gang_changed(core, t);
    return true;
}

/* The running gang trial in which w has a place it was not given yet. */
Trial *core_gang_undelivered(const Core *core, const Worker *w)
{
    if (core->gangs_running == 0)
        return NULL;
    for (Trial *t = core->running.head; t != NULL; t = t->next) {
        const GangMember *m = t->gang != NULL ? members_of(t->gang, w->id) : NULL;
        if (m != NULL && m->lease_token[0] == '\0' && !m->done)
            return t;
    }
    return NULL;
}

/* Whether w is alive and could ever take one node of e: heard of within
 * HOLD_SILENT_MS (a worker waiting in a long poll is not heard of until
 * it ends), gang-capable, running e's trainable type, carrying its labels,
 * and registered with the resources of a node. */
static bool capable(const Core *core, const Experiment *e, const Worker *w, int64_t now)
{
    return now - w->last_seen_at <= HOLD_SILENT_MS(core) && w->gang_capable &&
           (w->lease_trainables & SPEC_TRAINABLE_BIT(e->spec.trainable)) != 0 &&
           core_selected(e, w) && w->cpus >= e->spec.cpus &&
           (int64_t)json_array_size(w->gpus) >= e->spec.gpus;
}

static bool enough_capable(const Core *core, const Experiment *e, int64_t now)
{
    int64_t n = 0;
    for (int64_t i = 0; i < core->workers.cap; i++)
        if (core->workers.slots[i].id != 0 && capable(core, e, core->workers.slots[i].ptr, now) &&
            ++n >= e->spec.nodes)
            return true;
    return false;
}

/* Rule 3 and 4 of the gangs, once per tick: holds run out, silent holders
 * lose theirs, and one gang released twice (the oldest experiment's)
 * reserves its workers while enough capable workers are alive. */
void core_gang_tick(Core *core, int64_t now)
{
    bool reserved = false;
    for (int64_t i = 0; i < core->n_exps; i++) {
        Experiment *e = core->exps[i];
        GangWait *g = &e->gang;
        if (!core_is_gang(e))
            continue;
        if (e->state != EXP_RUNNING || e->pending.head == NULL) {
            core_holds_release(core, e);
            g->reserving = false;
            continue;
        }
        for (int64_t k = g->n_holds - 1; k >= 0; k--) {
            const Worker *w = core_worker(core, g->holds[k].worker_id);
            if (w == NULL || now - w->last_seen_at > HOLD_SILENT_MS(core)) {
                core_hold_drop(core, e, g->holds[k].worker_id);
                core->availability_changed = true;
            }
        }
        if (g->reserving) {
            if (enough_capable(core, e, now))
                reserved = true;
            else
                gang_pass_over(core, e, now);
        } else if (g->n_holds > 0 && now - g->first_hold_ms >= gang_wait_ms(e)) {
            g->releases++;
            gang_pass_over(core, e, now);
        }
    }
    for (int64_t i = 0; i < core->n_exps && !reserved; i++) {
        Experiment *e = core->exps[i]; /* ascending id: the oldest first */
        if (core_is_gang(e) && e->state == EXP_RUNNING && e->pending.head != NULL &&
            e->gang.releases >= 2 && enough_capable(core, e, now)) {
            e->gang.reserving = true;
            e->gang.passed_over_until = 0; /* it gathers again at once, and keeps what it holds */
            core->availability_changed = true;
            reserved = true;
        }
    }
}

/* A gang member's lease reply never reached it: its place is given again
 * with its next lease request; the gang runs on. */
bool core_gang_unlease(Core *core, Trial *t, const char *token)
{
    GangMember *m = members_by_token(t->gang, token);
    bool rank0 = m != NULL && members_rank(t->gang, m) == 0;
    if (m == NULL || t->state != TRIAL_RUNNING || t->gang->attempt != t->attempt ||
        (rank0 && t->n_seen > t->leased_seen))
        return false;
    m->lease_token[0] = '\0';
    json_decref(m->resources);
    m->resources = NULL;
    if (rank0)
        t->lease_token[0] = '\0';
    core_gang_changed(core, t);
    core->availability_changed = true;
    return true;
}

/* Who may report on a gang trial: rank 0 of the current attempt goes on
 * (0); rank 0 of an attempt that ended is told to stop (1); another member
 * is refused, and so is a token of no member. */
int core_gang_report_gate(const Trial *t, const char *token, ReportAction *action, RungError *err)
{
    GangMember *m = members_by_token(t->gang, token);
    if (m == NULL)
        return core_lease_lost(t, err);
    int64_t rank = members_rank(t->gang, m);
    if (rank != 0)
        return rung_error_set(err, RUNG_E_CONFLICT, "lease_token",
                              "trial %lld: only node 0 reports (this lease_token is node %lld's)",
                              (long long)t->id, (long long)rank);
    if (t->gang->attempt != t->attempt) {
        *action = ACTION_STOP; /* another member failed or was lost: the attempt is over */
        return 1;
    }
    return 0;
}

/* The finish of a gang member other than rank 0: `completed` marks it
 * done (rank 0's finish decides the trial); a failure ends the attempt
 * for every member, and the trial is retried as one. */
void core_gang_member_finish(Core *core, Trial *t, GangMember *m, bool completed, const char *error,
                             int64_t now)
{
    if (completed) {
        m->done = true;
        core_gang_sync_expiry(t);
        core_gang_changed(core, t);
        return;
    }
    if (t->stop_kind != STOP_NONE) {
        core_apply_stop(core, t, now); /* it ended because the gang was asked to stop */
        return;
    }
    /* The member's error after what says which node it was; core_set_error cuts
     * the whole on a character boundary. */
    char msg[CORE_MAX_ERROR + 96];
    snprintf(msg, sizeof msg, "node %lld (worker %lld) failed: %s",
             (long long)members_rank(t->gang, m), (long long)m->worker_id,
             (error && error[0]) ? error : "the trial failed");
    core_fail_or_retry(core, t, msg, RETRY_FAILED, now);
}
