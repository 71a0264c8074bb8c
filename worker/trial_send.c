/* A trial's sender thread: its reports in order, each retried until
 * acknowledged, then the finish (trial.h). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckptxfer.h"
#include "client.h"
#include "log.h"
#include "trial.h"
#include "trial_internal.h"
#include "warnings.h"

static bool sender_cancel(void *arg)
{
    WTrial *t = arg;
    return t->hooks->gave_up(t->hooks->ctx);
}

/* The first line of s, at most n bytes, for a log line. */
static int first_line_len(const char *s, int n)
{
    int len = (int)strcspn(s, "\n");
    return len < n ? len : n;
}

/* rungd keeps this completed trial's folder (keep_artifacts): packed and
 * PUT as the trial's artifacts now, on the trial's own sender thread, while
 * the trial still holds its folder (ckptxfer_upload locks it). */
static void send_artifacts(WTrial *t, Client *c, const char *token)
{
    const TrialHooks *h = t->hooks;
    char dir[PATH_MAX], tar[PATH_MAX + 64], sha[65], err[512];
    snprintf(dir, sizeof dir, "%s/trials/%" PRId64, h->workdir, t->id);
    snprintf(tar, sizeof tar, "%s/%s", h->workdir, CKPTXFER_UPLOADS);
    mkdir(tar, 0700);
    snprintf(tar, sizeof tar, "%s/%s/artifacts-%" PRId64 "-%" PRId64 ".tar", h->workdir,
             CKPTXFER_UPLOADS, h->worker_id, t->id);
    ClientCall call = {.retry = true,
                       .cancel = sender_cancel,
                       .cancel_arg = t,
                       .what = "upload of a trial's artifacts"};
    int64_t size = 0;
    long status = 0;
    XferResult r = ckptxfer_upload(c, dir, tar, t->id, CKPTXFER_ARTIFACTS, h->worker_id, token,
                                   &call, sha, &size, &status, err, sizeof err);
    if (r == XFER_OK)
        LOG_INFO("trial %" PRId64 ": artifacts uploaded (%" PRId64 " bytes)", t->id, size);
    else
        LOG_WARN("trial %" PRId64 ": artifacts not uploaded: %s", t->id, err);
}

static void send_finish(WTrial *t, Client *c)
{
    char *log = wtrial_take_log(t); /* the lines since the last heartbeat */
    pthread_mutex_lock(&t->mu);
    bool completed = t->completed, preempted = t->preempted;
    json_t *body = json_pack("{s:s, s:s}", "lease_token", t->lease_token, "status",
                             completed   ? "completed"
                             : preempted ? "preempted"
                                         : "failed");
    if (!completed && !preempted && body)
        json_object_set_new(body, "error", json_string(t->error ? t->error : "failed"));
    json_t *log_json = log ? json_string(log) : NULL; /* NULL when not UTF-8: left out */
    if (body && log_json)
        json_object_set_new(body, "log", log_json);
    else
        json_decref(log_json);
    free(log);
    json_t *warnings = t->warnings.count > 0 ? warnings_json(&t->warnings) : NULL;
    if (body && warnings)
        json_object_set_new(body, "warnings", warnings);
    else
        json_decref(warnings);
    int64_t sent = t->reports_sent;
    pthread_mutex_unlock(&t->mu);
    if (body == NULL) {
        LOG_ERROR("trial %" PRId64 ": out of memory; not finished", t->id);
        return;
    }
    char path[96], what[96];
    snprintf(path, sizeof path, "/api/v1/trials/%" PRId64 "/finish", t->id);
    snprintf(what, sizeof what, "finish of trial %" PRId64, t->id);
    ClientCall call = {.retry = true, .cancel = sender_cancel, .cancel_arg = t, .what = what};
    ClientReply reply;
    int rc = client_post(c, path, body, &call, &reply);
    json_decref(body);
    if (rc != 0) {
        LOG_WARN("trial %" PRId64 ": finish not delivered (worker shutting down)", t->id);
    } else if (reply.status == 200) {
        /* The reply is the trial: paused, it waits to resume from the
         * checkpoint in its folder, which --keep-trials then keeps. */
        const char *state = json_string_value(json_object_get(reply.body, "state"));
        bool paused = state != NULL &&
                      (strcmp(state, "paused") == 0 || strcmp(state, "preempted") == 0);
        pthread_mutex_lock(&t->mu);
        t->paused = paused;
        pthread_mutex_unlock(&t->mu);
        if (paused)
            LOG_INFO("trial %" PRId64 " (attempt %" PRId64 ") is %s; its folder is kept", t->id,
                     t->attempt, state);
        else if (completed)
            LOG_INFO("trial %" PRId64 " (attempt %" PRId64 ") finished: completed (%" PRId64
                     " reports)",
                     t->id, t->attempt, sent);
        else if (state == NULL || strcmp(state, "failed") == 0)
            LOG_INFO("trial %" PRId64 " (attempt %" PRId64 ") finished: failed: %.*s", t->id,
                     t->attempt, first_line_len(t->error ? t->error : "", 300),
                     t->error ? t->error : "");
        else /* stopped by rungd's word (asha, an exploit under pbt): not a failure */
            LOG_INFO("trial %" PRId64 " (attempt %" PRId64 ") ended here: %s in rungd (the "
                     "program: %.*s)",
                     t->id, t->attempt, state, first_line_len(t->error ? t->error : "", 300),
                     t->error ? t->error : "");
        const char *token = json_string_value(
            json_object_get(json_object_get(reply.body, "artifacts"), "upload_token"));
        if (completed && token != NULL)
            send_artifacts(t, c, token);
    } else if (reply.status == 409) {
        LOG_DEBUG("trial %" PRId64 ": finish refused (%s)", t->id, reply.error);
    } else {
        LOG_ERROR("trial %" PRId64 ": finish refused: %s", t->id, reply.error);
    }
    client_reply_clear(&reply);
}

/* Sends one report; returns false when the trial must send nothing more. */
static bool send_report(WTrial *t, Client *c, const Report *r)
{
    json_t *body = json_pack("{s:s, s:I, s:O}", "lease_token", t->lease_token, "step",
                             (json_int_t)r->step, "metrics", r->metrics);
    /* The line's values that are not numbers (docs/api.md, the report's info). */
    if (body != NULL && r->info != NULL && json_object_set(body, "info", r->info) != 0) {
        json_decref(body);
        body = NULL;
    }
    if (body == NULL) {
        LOG_ERROR("trial %" PRId64 ": out of memory; report of step %" PRId64 " dropped", t->id,
                  r->step);
        return true;
    }
    char path[96], what[128];
    snprintf(path, sizeof path, "/api/v1/trials/%" PRId64 "/report", t->id);
    snprintf(what, sizeof what, "report of trial %" PRId64 " step %" PRId64, t->id, r->step);
    ClientCall call = {.retry = true, .cancel = sender_cancel, .cancel_arg = t, .what = what};
    ClientReply reply;
    int rc = client_post(c, path, body, &call, &reply);
    json_decref(body);
    bool go_on = true;
    if (rc != 0) {
        LOG_WARN("trial %" PRId64 ": reports from step %" PRId64
                 " on not delivered (worker shutting down)",
                 t->id, r->step);
        go_on = false;
    } else if (reply.status == 200) {
        const char *action = json_string_value(json_object_get(reply.body, "action"));
        pthread_mutex_lock(&t->mu);
        t->reports_sent++;
        bool stop = action && strcmp(action, "stop") == 0 && !t->stop_received;
        if (stop) {
            t->stop_received = true;
            wtrial_drop_queue(t);
        }
        pthread_mutex_unlock(&t->mu);
        if (stop) {
            LOG_INFO("trial %" PRId64 ": stop at step %" PRId64 "; ending its process group", t->id,
                     r->step);
            wtrial_kill(t, KILL_STOP);
        }
    } else if (reply.status == 409) {
        LOG_WARN("trial %" PRId64 ": lease lost (%s); ending it without finishing", t->id,
                 reply.error);
        pthread_mutex_lock(&t->mu);
        t->abandoned = true;
        wtrial_drop_queue(t);
        pthread_mutex_unlock(&t->mu);
        wtrial_kill(t, KILL_LEASE_LOST);
        go_on = false;
    } else {
        /* A final 4xx (a metric the server refuses, ...): retrying cannot help. */
        LOG_WARN("trial %" PRId64 ": report of step %" PRId64 " refused, dropped: %s", t->id,
                 r->step, reply.error);
    }
    client_reply_clear(&reply);
    return go_on;
}

/* Pops the oldest queued report (NULL when none or when the trial was
 * abandoned). Caller holds t->mu. */
static Report *pop_report(WTrial *t)
{
    Report *r = t->head;
    if (r == NULL || t->abandoned)
        return NULL;
    t->head = r->next;
    if (t->head == NULL)
        t->tail = NULL;
    if (t->queued-- >= TRIAL_QUEUE_MAX)
        wtrial_wake(t); /* stdout was paused on a full queue */
    r->next = NULL;
    return r;
}

void *wtrial_sender_main(void *arg)
{
    WTrial *t = arg;
    Client *c = client_new(t->hooks->server, t->hooks->token);
    if (c == NULL) {
        LOG_ERROR("trial %" PRId64 ": out of memory for an HTTP client; its results are lost",
                  t->id);
        pthread_mutex_lock(&t->mu);
        t->abandoned = true;
        wtrial_drop_queue(t);
        pthread_mutex_unlock(&t->mu);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&t->mu);
        while (t->head == NULL && !t->outcome_known && !t->abandoned)
            pthread_cond_wait(&t->cond, &t->mu);
        /* Taken off the queue: the sender owns it until it is acknowledged
         * (or refused), so a wtrial_drop_queue meanwhile cannot free it. */
        Report *r = pop_report(t);
        bool done = t->outcome_known, abandoned = t->abandoned;
        pthread_mutex_unlock(&t->mu);
        if (abandoned)
            break;
        if (r == NULL) {
            if (done)
                send_finish(t, c);
            break;
        }
        bool go_on = send_report(t, c, r);
        json_decref(r->metrics);
        json_decref(r->info);
        free(r);
        if (!go_on)
            break;
    }
    client_free(c);
    return NULL;
}
