/* The workers' routes (docs/api.md, "Workers"): register, list, lease
 * (a long poll) and heartbeat. */
#include "api_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "request.h"
#include "store_read.h"
#include "views.h"

#define MAX_TRIAL_IDS 1024 /* trials one heartbeat may list */

static void not_found(Job *job, const char *what, int64_t id)
{
    char msg[96];
    snprintf(msg, sizeof msg, "%s %lld not found", what, (long long)id);
    api_error(job, RUNG_E_NOT_FOUND, "", msg);
}

static json_t *time_json(int64_t ms)
{
    return view_time(ms);
}

/* Seconds as a JSON integer when whole (docs/api.md shows "heartbeat_s": 5), else
 * as a real, so short test leases still get a heartbeat several times per
 * lease. */
static json_t *seconds_json(int64_t ms)
{
    if (ms % 1000 == 0)
        return json_integer(ms / 1000);
    return json_real((double)ms / 1000.0);
}

/* A worker token bound to a pool (its user's labels, docs/api.md "Users,
 * roles and tokens") registers only workers that carry those labels, so
 * that one pool's token cannot pose as another's. */
static int pool_check(Engine *e, const Job *job, const json_t *labels, RungError *err)
{
    if (job->who.role != ROLE_WORKER)
        return 0;
    json_t *user;
    if (store_user_get(engine_store(e), job->who.user_id, &user, err))
        return err->code;
    json_t *bound = json_object_get(user, "labels");
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(bound, key, v) {
        json_t *have = json_object_get(labels, key);
        if (have == NULL || !json_equal(have, v)) {
            rc = rung_error_set(err, RUNG_E_FORBIDDEN, "labels",
                                "rule pool: labels.%s: this worker token is bound to %s=%s: "
                                "register with that label",
                                key, key, json_string_value(v));
            break;
        }
    }
    json_decref(user);
    return rc;
}

void api_worker_register(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    RegisterRequest rq;
    if (request_register_parse(job->body, &rq, &err) || pool_check(e, job, rq.labels, &err)) {
        api_fail(job, &err);
        return;
    }
    json_t *gpus = rq.gpus ? json_incref(rq.gpus) : json_array();
    Worker *w = core_worker_add(engine_core(e), rq.label, rq.hostname, gpus, rq.cpus,
                                engine_now(e));
    if (rq.labels != NULL)
        core_worker_set_labels(engine_core(e), w, json_incref(rq.labels));
    if (rq.environments != NULL || rq.containers != NULL) {
        json_t *caps = json_object();
        json_object_set_new(caps, "environments",
                            rq.environments ? json_incref(rq.environments) : json_array());
        json_object_set_new(caps, "containers",
                            rq.containers ? json_incref(rq.containers) : json_array());
        core_worker_set_caps(engine_core(e), w, caps);
    }
    core_set_worker_owner(w, job->who.user_id);
    api_event(e, job, "worker.joined", 0, 0, w->id,
              json_pack("{s:s, s:s}", "name", w->name, "hostname", w->hostname));
    const EngineConfig *cfg = engine_config(e);
    api_reply(job, 201,
              json_pack("{s:I, s:o, s:o}", "worker_id", (json_int_t)w->id, "heartbeat_s",
                        seconds_json(cfg->heartbeat_ms), "lease_s", seconds_json(cfg->lease_ms)));
}

void api_worker_list(Engine *e, Job *job)
{
    RungError err;
    int64_t limit, offset, total;
    if (api_query_int(job, "limit", LIST_DEFAULT, 1, LIST_MAX, &limit, &err) ||
        api_query_int(job, "offset", 0, 0, INT64_MAX, &offset, &err)) {
        api_fail(job, &err);
        return;
    }
    /* Gone workers drop out after --forget-workers-s; ?all=true lists them. */
    const char *all = json_string_value(json_object_get(job->query, "all"));
    if (all != NULL && strcmp(all, "true") != 0 && strcmp(all, "false") != 0) {
        api_error(job, RUNG_E_INVALID_ARGUMENT, "all", "all: must be true or false");
        return;
    }
    int64_t since = all != NULL && strcmp(all, "true") == 0
                        ? 0
                        : engine_now(e) - engine_config(e)->forget_workers_ms;
    json_t *items;
    if (store_read_workers(engine_store(e), since, limit, offset, &items, &total, &err)) {
        api_fail(job, &err);
        return;
    }
    Core *core = engine_core(e);
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o) {
        Worker *w = core_worker(core, json_integer_value(json_object_get(o, "id")));
        json_t *running = json_array();
        if (w != NULL) {
            /* Memory is newer than the row for what every call updates. */
            json_object_set_new(o, "last_seen_at", time_json(w->last_seen_at));
            json_object_set(o, "heartbeat", w->heartbeat ? w->heartbeat : json_null());
            int64_t ids[MAX_TRIAL_IDS];
            int64_t n = core_worker_trials(core, w->id, ids, MAX_TRIAL_IDS);
            for (int64_t k = 0; k < n; k++)
                json_array_append_new(running, json_integer(ids[k]));
        }
        bool alive = core_worker_alive(core, w, engine_now(e));
        json_object_set_new(o, "alive", json_boolean(alive));
        json_object_set_new(o, "state", json_string(alive ? "alive" : "gone"));
        json_object_set_new(o, "running_trials", running);
    }
    api_reply(job, 200, api_list_json(items, total));
}

/* A worker in memory, or read back from the store when it was released for
 * being idle and calls again. */
static Worker *find_worker(Engine *e, Job *job)
{
    Worker *w = core_worker(engine_core(e), job->ids[0]);
    RungError err;
    if (w == NULL && store_reload_worker(engine_store(e), engine_core(e), job->ids[0], &err) == 0)
        w = core_worker(engine_core(e), job->ids[0]);
    if (w == NULL)
        not_found(job, "worker", job->ids[0]);
    return w;
}

/* The lease's reply never reached the worker: give the trial back. */
static void lease_undelivered(Engine *e, Job *job)
{
    json_t *trial = json_object_get(job->reply, "trial");
    const char *token = json_string_value(json_object_get(trial, "lease_token"));
    Trial *t = core_trial(engine_core(e), json_integer_value(json_object_get(trial, "id")));
    if (t != NULL && token != NULL)
        core_unlease(engine_core(e), t, token, engine_now(e));
}

void api_worker_lease(Engine *e, Job *job)
{
    Worker *w = find_worker(e, job);
    if (w == NULL)
        return;
    LeaseRequest rq;
    RungError err;
    rung_error_clear(&err);
    if (request_lease_parse(job->body, w->cpus, &rq, &err) ||
        request_lease_check_gpus(&rq.offer, w->gpus, &err)) {
        api_fail(job, &err);
        return;
    }
    const LeaseOffer offer = rq.offer;
    double wait_s = rq.wait_s;
    char token[CORE_TOKEN_LEN + 1];
    engine_token(token);
    Trial *t = core_lease(engine_core(e), w, &offer, token, engine_now(e));
    if (t != NULL) {
        json_t *o = api_trial_json(t);
        json_t *trainable = json_object_get(t->exp->spec.json, "trainable");
        json_object_set(o, "trainable", trainable ? trainable : json_null());
        /* A gang member gets its own grant and its place (docs/api.md, "Gangs"). */
        int64_t rank = 0;
        const GangMember *m = core_gang_member(t, w->id, &rank);
        json_object_set(o, "resources", m ? m->resources : t->resources);
        json_object_set_new(o, "lease_token", json_string(token));
        /* A promoted trial goes on from its checkpoint after this step. */
        json_object_set_new(o, "resume_step", json_integer(core_resume_step(t)));
        /* pbt: which of its checkpoints other members may still ask for. */
        if (t->exp->spec.is_pbt)
            json_object_set_new(o, "keep_checkpoints_every",
                                json_integer(t->exp->spec.pbt.interval));
        /* pbt: the donor's folder to copy into this trial's first. */
        if (t->from_trial != 0) {
            json_t *from = json_pack("{s:I, s:I}", "trial", (json_int_t)t->from_trial, "step",
                                     (json_int_t)t->from_step);
            /* Another worker's donor: its folder comes from rungd. */
            const CoreCheckpoint *c = core_checkpoint(engine_core(e), t->from_trial, t->from_step);
            if (t->from_worker != w->id && c != NULL) {
                json_object_set_new(from, "sha256", json_string(c->sha256));
                json_object_set_new(from, "size", json_integer(c->size));
            }
            json_object_set_new(o, "checkpoint_from", from);
        }
        json_object_set_new(o, "gang",
                            m ? json_pack("{s:I, s:I, s:s, s:I}", "rank", (json_int_t)rank,
                                          "nnodes", (json_int_t)t->gang->nnodes, "master_addr",
                                          t->gang->master_addr, "master_port",
                                          (json_int_t)t->gang->master_port)
                              : json_null());
        api_reply(job, 200, json_pack("{s:o}", "trial", o));
        job->on_undelivered = lease_undelivered;
        return;
    }
    /* First call: set the deadline; later calls (re-runs) keep it. */
    if (job->deadline_ms == 0)
        job->deadline_ms = rung_mono_ns() / 1000000 + (int64_t)(wait_s * 1000.0);
    if (rung_mono_ns() / 1000000 < job->deadline_ms && engine_park(e, job, job->deadline_ms))
        return;
    job->status = 204;
}

void api_worker_heartbeat(Engine *e, Job *job)
{
    Worker *w = find_worker(e, job);
    if (w == NULL)
        return;
    RungError err;
    rung_error_clear(&err);
    HeartbeatRequest *rq = malloc(sizeof *rq); /* 8 KiB of ids: not on the stack */
    if (rq == NULL)
        abort();
    if (request_heartbeat_parse(job->body, rq, &err)) {
        free(rq);
        api_fail(job, &err);
        return;
    }
    /* Log tails for the dashboard: kept on the trials, not in the worker's
     * stored heartbeat; only the worker that runs a trial sets its log. */
    void *it = NULL;
    int64_t tid;
    const char *text;
    while (request_heartbeat_log(rq, &it, &tid, &text)) {
        Trial *t = core_trial(engine_core(e), tid);
        if (t != NULL)
            core_worker_log(engine_core(e), t, w->id, text);
    }
    json_object_del(job->body, "logs");
    json_t *warnings;
    it = NULL;
    while (request_heartbeat_warnings(rq, &it, &tid, &warnings)) {
        Trial *t = core_trial(engine_core(e), tid);
        if (t != NULL)
            core_worker_warnings(engine_core(e), t, w->id, warnings);
    }
    json_object_del(job->body, "warnings");
    json_t *stop = core_heartbeat(engine_core(e), w, rq->trials, rq->n_trials,
                                  json_incref(job->body), engine_now(e));
    free(rq);
    json_t *o = json_pack("{s:o}", "stop", stop);
    /* pbt: the donors' folders other workers wait for (docs/api.md). */
    json_t *upload = core_uploads_for(engine_core(e), w, engine_token);
    if (json_array_size(upload) > 0)
        json_object_set_new(o, "upload", upload);
    else
        json_decref(upload);
    api_reply(job, 200, o);
}
