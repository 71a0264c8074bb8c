/* The trials' routes (docs/api.md, "Trials"): get, stop, metrics, and the
 * worker's report and finish, with the answers to a worker's late calls on
 * a trial that has ended and left memory. */
#include "api_internal.h"

#include <stdio.h>

#include "ct.h"
#include "request.h"
#include "store_read.h"

#define METRICS_MAX 10000 /* reports per metrics call; page with after_step */

void api_trial_get(Engine *e, Job *job)
{
    Trial *t = core_trial(engine_core(e), job->ids[0]);
    if (t) {
        json_t *o = api_trial_json(t);
        api_artifacts_describe(e, t->id, o);
        api_reply(job, 200, o);
        return;
    }
    RungError err;
    TrialLease tl;
    Spec own;
    bool owned;
    if (store_read_trial_lease(engine_store(e), job->ids[0], &tl, &err)) {
        api_fail(job, &err);
        return;
    }
    const Spec *spec = api_spec_of(e, job, tl.exp_id, &own, &owned);
    if (spec == NULL)
        return;
    json_t *o = api_trial_view(e, spec, job->ids[0], &err);
    if (owned)
        spec_close(&own);
    api_artifacts_describe(e, job->ids[0], o);
    if (o == NULL)
        api_fail(job, &err);
    else
        api_reply(job, 200, o);
}

void api_trial_stop(Engine *e, Job *job)
{
    Trial *t = core_trial(engine_core(e), job->ids[0]);
    RungError err;
    rung_error_clear(&err);
    if (t == NULL) {
        /* Not in memory: it ended (or never was). */
        TrialLease tl;
        if (store_read_trial_lease(engine_store(e), job->ids[0], &tl, &err) == 0)
            rung_error_set(&err, RUNG_E_CONFLICT, NULL, "trial %lld has ended already",
                           (long long)job->ids[0]);
        api_fail(job, &err);
        return;
    }
    if (core_stop_trial(engine_core(e), t, engine_now(e), &err) != 0) {
        api_fail(job, &err);
        return;
    }
    api_event(e, job, "trial.stopped", t->exp->id, t->id, 0, NULL);
    api_reply(job, 200, api_trial_json(t));
}

void api_trial_metrics(Engine *e, Job *job)
{
    RungError err;
    TrialLease tl;
    if (store_read_trial_lease(engine_store(e), job->ids[0], &tl, &err)) {
        api_fail(job, &err);
        return;
    }
    int64_t after, limit;
    if (api_query_int(job, "after_step", -1, -1, INT64_MAX, &after, &err) ||
        api_query_int(job, "limit", METRICS_MAX, 1, METRICS_MAX, &limit, &err)) {
        api_fail(job, &err);
        return;
    }
    json_t *items;
    if (store_reports(engine_store(e), job->ids[0], tl.attempt, after, limit, &items, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    api_reply(job, 200, json_pack("{s:o, s:I}", "items", items, "attempt", (json_int_t)tl.attempt));
}

/* Whose token a late call on an ended trial carries: the trial's lease
 * (a gang's rank 0), another member of its last gang, or a member of a
 * gang attempt before its last. */
typedef enum { LATE_LEASE, LATE_MEMBER, LATE_PAST } LateCaller;

/* A worker's late call on a trial no longer in memory (it ended): the
 * answers a trial in memory would give, from its row. */
static bool ended_trial_lease(Engine *e, Job *job, const char *token, TrialLease *tl,
                              LateCaller *who)
{
    RungError err;
    if (store_read_trial_lease(engine_store(e), job->ids[0], tl, &err)) {
        api_fail(job, &err);
        return false;
    }
    *who = LATE_LEASE;
    if (tl->token[0] != '\0' && rung_ct_equal(token, tl->token, CORE_TOKEN_LEN))
        return true;
    int64_t rank = 0, attempt = 0;
    int found = store_read_gang_member(engine_store(e), job->ids[0], token, &rank, &attempt, &err);
    if (found < 0) {
        api_fail(job, &err);
        return false;
    }
    if (found) {
        *who = attempt != tl->attempt ? LATE_PAST : rank > 0 ? LATE_MEMBER : LATE_LEASE;
        return true;
    }
    char msg[160];
    snprintf(msg, sizeof msg,
             "trial %lld: lease_token is not this trial's current lease (it expired, or the "
             "trial was retried); end the trial",
             (long long)job->ids[0]);
    api_error(job, RUNG_E_LEASE_LOST, "lease_token", msg);
    return false;
}

static void ended_trial_report(Engine *e, Job *job, const char *token, int64_t step)
{
    TrialLease tl;
    LateCaller who;
    if (!ended_trial_lease(e, job, token, &tl, &who))
        return;
    if (who == LATE_MEMBER) { /* as core_report answers it */
        char msg[128];
        snprintf(msg, sizeof msg, "trial %lld: only node 0 reports", (long long)job->ids[0]);
        api_error(job, RUNG_E_CONFLICT, "lease_token", msg);
        return;
    }
    if (who == LATE_PAST) {
        api_reply(job, 200, json_pack("{s:s}", "action", "stop"));
        return;
    }
    RungError err;
    ReportAction action = ACTION_STOP; /* it ended: the worker must end it too */
    if (store_read_report_action(engine_store(e), job->ids[0], tl.attempt, step, &action, &err) <
        0) {
        api_fail(job, &err);
        return;
    }
    api_reply(job, 200, json_pack("{s:s}", "action", action == ACTION_STOP ? "stop" : "continue"));
}

static void ended_trial_finish(Engine *e, Job *job, const char *token, json_t *warnings)
{
    TrialLease tl;
    LateCaller who;
    if (!ended_trial_lease(e, job, token, &tl, &who))
        return;
    RungError err;
    /* A gang member that finishes after rank 0 ended the trial: its refused
     * @rung lines still join the trial's (docs/api.md, "Gangs"). Nothing
     * else changes. */
    if (who == LATE_MEMBER && warnings != NULL &&
        store_gang_warnings(engine_store(e), job->ids[0], token, warnings, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    Spec own;
    bool owned;
    const Spec *spec = api_spec_of(e, job, tl.exp_id, &own, &owned);
    if (spec == NULL)
        return;
    json_t *o = api_trial_view(e, spec, job->ids[0], &err);
    if (owned)
        spec_close(&own);
    if (o == NULL)
        api_fail(job, &err);
    else
        api_reply(job, 200, o); /* finishing again changes nothing */
}

void api_trial_report(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    ReportRequest rq;
    if (request_report_parse(job->body, &rq, &err)) {
        api_fail(job, &err);
        return;
    }
    Trial *t = core_trial(engine_core(e), job->ids[0]);
    if (t == NULL) {
        ended_trial_report(e, job, rq.lease_token, rq.step);
        return;
    }
    /* The info first, so that the report that ends the trial leaves its
     * info; a report of info alone is nothing more (core.h). */
    ReportAction action = ACTION_CONTINUE;
    if (rq.info != NULL && core_report_info(engine_core(e), t, rq.lease_token, rq.info,
                                            engine_now(e), &action, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    bool info_only = rq.info != NULL && json_object_size(rq.metrics) == 0;
    if (!info_only && core_report(engine_core(e), t, rq.lease_token, rq.step, rq.metrics,
                                  engine_now(e), &action, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    api_reply(job, 200, json_pack("{s:s}", "action", action == ACTION_STOP ? "stop" : "continue"));
}

void api_trial_finish(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    FinishRequest rq;
    if (request_finish_parse(job->body, &rq, &err)) {
        api_fail(job, &err);
        return;
    }
    Trial *t = core_trial(engine_core(e), job->ids[0]);
    if (t == NULL) {
        ended_trial_finish(e, job, rq.lease_token, rq.warnings);
        return;
    }
    /* Whose finish: a gang member's log and warnings are its own (core.h). */
    int64_t from = core_token_worker(t, rq.lease_token);
    /* preempted: given back by its worker, to resume from its checkpoint. */
    int rc = rq.preempted ? core_preempt(engine_core(e), t, rq.lease_token, engine_now(e), &err)
                          : core_finish(engine_core(e), t, rq.lease_token, rq.completed, rq.error,
                                        engine_now(e), &err);
    if (rc != 0) {
        api_fail(job, &err);
        return;
    }
    core_worker_log(engine_core(e), t, from, rq.log); /* the log's last lines (dashboard) */
    core_worker_warnings(engine_core(e), t, from, rq.warnings);
    json_t *reply = api_trial_json(t);
    /* Its folder comes back when keep_artifacts wants it; from node 0 of a
     * gang only (docs/api.md, "Artifacts"). */
    const Experiment *x = t->exp;
    json_t *want = x != NULL && from == t->worker_id ? api_artifacts_wanted(e, t, &x->spec) : NULL;
    if (want != NULL)
        json_object_set_new(reply, "artifacts", want);
    api_reply(job, 200, reply);
}
