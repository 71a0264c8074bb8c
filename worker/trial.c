/* One leased trial, the object: what the lease reply says, its report
 * queue, and the kills; its threads are in trial_supervise.c and
 * trial_send.c (trial.h, trial_internal.h). */
#include "trial.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "tail.h"
#include "trial_internal.h"
#include "warnings.h"

static int64_t int_or(const json_t *v, int64_t def)
{
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

/* Reads resources {"gpus":[...], "cpus":n}; false when malformed. */
static bool read_resources(WTrial *t, const json_t *res)
{
    if (res == NULL || json_is_null(res))
        return true; /* nothing granted: a trial that needs nothing */
    if (!json_is_object(res))
        return false;
    const json_t *gpus = json_object_get(res, "gpus");
    if (gpus != NULL && !json_is_null(gpus)) {
        if (!json_is_array(gpus) || json_array_size(gpus) > SLOTS_MAX_GPUS)
            return false;
        size_t i;
        const json_t *g;
        json_array_foreach(gpus, i, g) {
            if (!json_is_integer(g) || json_integer_value(g) < 0)
                return false;
            t->gpus[t->n_gpus++] = json_integer_value(g);
        }
    }
    const json_t *cpus = json_object_get(res, "cpus");
    if (cpus != NULL && (!json_is_integer(cpus) || json_integer_value(cpus) < 0))
        return false;
    t->cpus = int_or(cpus, 0);
    return true;
}

/* pbt's checkpoint_from: {"trial", "step"} for a copy of a folder on this
 * machine, with "sha256" and "size" for a checkpoint stored in rungd. */
static void read_checkpoint_from(WTrial *t, const json_t *from)
{
    t->from_trial = int_or(json_object_get(from, "trial"), 0);
    if (t->from_trial < 0)
        t->from_trial = 0;
    t->from_step = int_or(json_object_get(from, "step"), t->resume_step);
    const json_t *sha = json_object_get(from, "sha256");
    t->from_rungd = t->from_trial > 0 && sha != NULL && !json_is_null(sha);
    t->from_sha256[0] = '\0';
    t->from_size = -1;
    if (!t->from_rungd)
        return;
    const char *hex = json_string_value(sha);
    bool ok = hex != NULL && strlen(hex) == 64;
    for (int i = 0; ok && i < 64; i++)
        ok = isxdigit((unsigned char)hex[i]) != 0;
    if (ok) {
        for (int i = 0; i < 64; i++)
            t->from_sha256[i] = (char)tolower((unsigned char)hex[i]);
        t->from_sha256[64] = '\0';
    }
    const json_t *size = json_object_get(from, "size");
    if (json_is_integer(size) && json_integer_value(size) >= 0)
        t->from_size = json_integer_value(size);
}

WTrial *wtrial_new(const TrialHooks *hooks, const json_t *o, char *why, size_t why_size)
{
    const json_t *id = json_object_get(o, "id");
    const char *token = json_string_value(json_object_get(o, "lease_token"));
    if (!json_is_integer(id) || json_integer_value(id) <= 0 || token == NULL || token[0] == '\0' ||
        strlen(token) > TRIAL_TOKEN_MAX) {
        snprintf(why, why_size, "the lease reply has no trial id or lease token");
        return NULL;
    }
    WTrial *t = calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (t->wake_fd < 0) {
        snprintf(why, why_size, "eventfd: %s", strerror(errno));
        free(t);
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    tail_init(&t->log);
    warnings_init(&t->warnings);
    pthread_cond_init(&t->cond, NULL);
    t->hooks = hooks;
    t->runner.out_fd = t->runner.err_fd = t->runner.pidfd = -1;
    t->port_fd = -1;
    gang_single(&t->gang, 0);
    t->id = json_integer_value(id);
    t->experiment_id = int_or(json_object_get(o, "experiment_id"), 0);
    t->attempt = int_or(json_object_get(o, "attempt"), 1);
    t->resume_step = int_or(json_object_get(o, "resume_step"), 0);
    if (t->resume_step < 0)
        t->resume_step = 0;
    t->keep_every = int_or(json_object_get(o, "keep_checkpoints_every"), 0);
    if (t->keep_every < 0)
        t->keep_every = 0;
    read_checkpoint_from(t, json_object_get(o, "checkpoint_from"));
    snprintf(t->lease_token, sizeof t->lease_token, "%s", token);
    json_t *config = json_object_get(o, "config");
    t->config = json_is_object(config) ? json_incref(config) : json_object();
    json_t *trainable = json_object_get(o, "trainable");
    t->trainable = trainable ? json_incref(trainable) : json_null();
    if (!json_is_object(config))
        snprintf(t->prefail, sizeof t->prefail, "the lease reply has no config object");
    if (!read_resources(t, json_object_get(o, "resources"))) {
        snprintf(t->prefail, sizeof t->prefail, "the lease reply has malformed resources");
        t->n_gpus = 0; /* take nothing from the slots for it */
        t->cpus = 0;
    }
    return t;
}

void wtrial_free(WTrial *t)
{
    if (t == NULL)
        return;
    for (Report *r = t->head, *next; r != NULL; r = next) {
        next = r->next;
        json_decref(r->metrics);
        json_decref(r->info);
        free(r);
    }
    json_decref(t->config);
    json_decref(t->trainable);
    free(t->error);
    tail_close(&t->log);
    runner_close(&t->runner);
    if (t->wake_fd >= 0)
        close(t->wake_fd);
    if (t->port_fd >= 0)
        close(t->port_fd);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cond);
    free(t);
}

void wtrial_wake(WTrial *t)
{
    uint64_t one = 1;
    if (write(t->wake_fd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is already non-zero, the supervisor will wake */
    }
}

/* Sends SIGTERM if a kill was asked, the process runs and none went yet.
 * Caller holds t->mu. */
void wtrial_term_if_asked(WTrial *t)
{
    if (t->kill_reason == KILL_NONE || t->term_sent || t->runner.pid <= 0 || t->group_gone)
        return;
    runner_signal(&t->runner, SIGTERM);
    t->term_sent = true;
    t->kill_at_ns = rung_mono_ns();
}

bool wtrial_kill(WTrial *t, KillReason reason)
{
    pthread_mutex_lock(&t->mu);
    bool first = t->kill_reason == KILL_NONE;
    if (first)
        t->kill_reason = reason;
    wtrial_term_if_asked(t);
    pthread_mutex_unlock(&t->mu);
    wtrial_wake(t);
    return first;
}

void wtrial_kill_now(WTrial *t)
{
    pthread_mutex_lock(&t->mu);
    if (t->runner.pid > 0 && !t->group_gone) {
        runner_signal(&t->runner, SIGKILL);
        t->kill_sent = true;
    }
    pthread_mutex_unlock(&t->mu);
}

/* Drops every queued report. Caller holds t->mu. */
void wtrial_drop_queue(WTrial *t)
{
    for (Report *r = t->head, *next; r != NULL; r = next) {
        next = r->next;
        json_decref(r->metrics);
        json_decref(r->info);
        free(r);
    }
    t->head = t->tail = NULL;
    t->queued = 0;
    wtrial_wake(t); /* stdout may have been paused on a full queue */
}

json_t *wtrial_take_warnings(WTrial *t)
{
    pthread_mutex_lock(&t->mu);
    json_t *w = warnings_take(&t->warnings);
    pthread_mutex_unlock(&t->mu);
    return w;
}

char *wtrial_take_log(WTrial *t)
{
    char *text = NULL;
    pthread_mutex_lock(&t->mu);
    if (t->log_changed) {
        text = tail_text(&t->log);
        t->log_changed = text == NULL; /* out of memory: try again next time */
    }
    pthread_mutex_unlock(&t->mu);
    return text;
}
