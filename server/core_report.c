/* What a running trial's worker sends: reports (read once, recorded on
 * the trial, judged by the scheduler and the stop rules), its finish, and
 * its log tail and warnings. */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Index in t->seen of the first entry with step >= step. */
static size_t seen_lower_bound(const Trial *t, int64_t step)
{
    size_t lo = 0, hi = t->n_seen;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->seen[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void core_seen_insert(Trial *t, int64_t step, ReportAction a)
{
    size_t at = seen_lower_bound(t, step);
    if (t->n_seen == t->cap_seen) {
        size_t cap = t->cap_seen ? t->cap_seen * 2 : 8;
        StepSeen *p = realloc(t->seen, cap * sizeof *p);
        if (p == NULL)
            abort();
        t->seen = p;
        t->cap_seen = cap;
    }
    memmove(&t->seen[at + 1], &t->seen[at], (t->n_seen - at) * sizeof *t->seen);
    t->seen[at].step = step;
    t->seen[at].action = (uint8_t)a;
    t->n_seen++;
}

/* The report's progress for the scheduler: its step, or the time_attr
 * field when that is not "step". False when the report lacks it. */
static bool report_time(const Experiment *e, int64_t step, const json_t *metrics, double *time)
{
    if (strcmp(e->spec.time_attr, "step") == 0) {
        *time = (double)step;
        return true;
    }
    json_t *ta = json_object_get(metrics, e->spec.time_attr);
    if (!json_is_number(ta))
        return false;
    *time = json_number_value(ta);
    return true;
}

/* With several objectives a report has a value when it carries all of them
 * (docs/api.md, "Several objectives and constraints"); value is the first's,
 * or the first one that is not finite. */
ReportRead core_report_read(const Experiment *e, int64_t step, const json_t *metrics)
{
    const Spec *sp = &e->spec;
    ReportRead r = {.step = step, .bad_name = sp->metric};
    r.has_time = report_time(e, step, metrics, &r.time);
    r.has_value = core_exp_objective(e, metrics, &r.value) == 1;
    for (int k = 1; k < sp->n_objectives && r.has_value; k++) {
        double v;
        r.has_value = rung_nonfinite_from_json(json_object_get(metrics, sp->objectives[k].name),
                                               &v);
        if (r.has_value && !isfinite(v) && isfinite(r.value)) {
            r.value = v;
            r.bad_name = sp->objectives[k].name;
        }
    }
    return r;
}

void core_record_report(Trial *t, const ReportRead *r, json_t *metrics, ReportAction a)
{
    Experiment *e = t->exp;
    int64_t step = r->step;
    json_t *ta = json_object_get(metrics, e->spec.time_attr);
    t->step = (strcmp(e->spec.time_attr, "step") != 0 && json_is_integer(ta))
                  ? (int64_t)json_integer_value(ta)
                  : step;
    t->has_step = true;
    t->has_time = r->has_time;
    t->time = r->time;
    json_decref(t->last);
    t->last = json_incref(metrics);
    double v = r->value;
    if (r->has_value && isfinite(v) && (!t->has_best || core_better(e, v, t->best_value))) {
        t->has_best = true;
        t->best_value = v;
        t->best_step = step;
    }
    core_seen_insert(t, step, a);
}

/* Keys a trial's info keeps: a report carries at most 64 (request.h); a
 * program that makes up new names keeps its first 64, so a stored row stays
 * within 64 values of REQUEST_MAX_INFO_VALUE bytes (docs/api.md, the trial
 * object's info). */
#define CORE_MAX_INFO_KEYS 64

/* Merges info into t's: each key's last value; a key t does not hold yet
 * only while it holds fewer than CORE_MAX_INFO_KEYS. Returns whether t's
 * info changed. */
static bool merge_info(Trial *t, const json_t *info)
{
    bool changed = false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)info, key, v) {
        if (t->info == NULL && (t->info = json_object()) == NULL)
            abort();
        json_t *old = json_object_get(t->info, key);
        if (old != NULL && json_equal(old, v))
            continue;
        if (old == NULL && json_object_size(t->info) >= CORE_MAX_INFO_KEYS)
            continue;
        json_object_set(t->info, key, v); /* values are never changed in place: shared */
        changed = true;
    }
    return changed;
}

/* A report's info (core.h): the lease checks of core_report, then, while t
 * runs, the lease renewed and the info merged; *action is stop when t no
 * longer runs. A report without metrics is this alone (api_trial_report):
 * neither judged nor stored as a report, so no row of empty metrics. One
 * with both calls this first, so that the report that ends t (a scheduler's
 * stop, done) leaves its info. */
int core_report_info(Core *core, Trial *t, const char *token, const json_t *info, int64_t now,
                     ReportAction *action, RungError *err)
{
    *action = ACTION_CONTINUE;
    if (t->gang != NULL) {
        int rc = core_gang_report_gate(t, token, action, err);
        if (rc != 0)
            return rc > 0 ? 0 : rc;
    }
    if (t->lease_token[0] == '\0' || !core_token_equal(token, t->lease_token))
        return core_lease_lost(t, err);
    if (t->state != TRIAL_RUNNING) {
        *action = ACTION_STOP; /* it ended meanwhile; the worker must end it too */
        return 0;
    }
    core_renew(core, t, t->worker_id, now); /* a report proves the worker alive */
    if (merge_info(t, info))
        core_mark_trial(core, t);
    return 0;
}

int core_report(Core *core, Trial *t, const char *token, int64_t step, json_t *metrics, int64_t now,
                ReportAction *action, RungError *err)
{
    if (t->gang != NULL) {
        int rc = core_gang_report_gate(t, token, action, err);
        if (rc != 0)
            return rc > 0 ? 0 : rc;
    }
    if (t->lease_token[0] == '\0' || !core_token_equal(token, t->lease_token))
        return core_lease_lost(t, err);
    if (t->state == TRIAL_RUNNING && t->leased_seen > 0 &&
        step <= t->seen[t->leased_seen - 1].step) {
        /* A resumed trial reporting a step it had reached before (it found
         * no checkpoint and started over): those reports stand; the repeats
         * are neither judged nor stored. */
        *action = ACTION_CONTINUE;
        return 0;
    }
    size_t at = seen_lower_bound(t, step);
    if (at < t->n_seen && t->seen[at].step == step) {
        *action = (ReportAction)t->seen[at].action; /* a retry: same answer, stored once */
        return 0;
    }
    if (t->state != TRIAL_RUNNING) {
        *action = ACTION_STOP; /* it ended meanwhile; the worker must end it too */
        return 0;
    }
    Experiment *e = t->exp;
    core_renew(core, t, t->worker_id, now); /* a report proves the worker alive */
    if (t->from_trial != 0 && step > t->from_step) {
        /* pbt: the program went on from the copied checkpoint (or started
         * over without it); no copy is owed any more. */
        t->from_trial = t->from_step = t->from_worker = 0;
        core_mark_trial(core, t);
        core_drop_unneeded_ckpts(core, t->exp);
    }
    ReportAction a = ACTION_CONTINUE;
    bool recorded = false;
    const ReportRead r = core_report_read(e, step, metrics);
    double v = r.value;
    if (r.has_value && !isfinite(v) && !e->sched->ranks_nonfinite) {
        /* (A scheduler that ranks it, pbt, ranks it last at its next milestone.) */
        char msg[SPEC_MAX_METRIC + 96];
        snprintf(msg, sizeof msg, "%s is %s at step %lld", r.bad_name, rung_nonfinite_format(v),
                 (long long)step);
        core_set_error(t, msg);
        /* Seen, though not finite: the metric's name is right. */
        e->health.metric_seen = true;
        core_set_state(core, t, TRIAL_FAILED, now); /* a diverged run is not retried */
        a = ACTION_STOP;
    } else if (t->stop_kind != STOP_NONE) {
        core_record_report(t, &r, metrics,
                           ACTION_STOP); /* first: a paused trial resumes after it */
        recorded = true;
        core_apply_stop(core, t, now);
        a = ACTION_STOP;
    } else {
        if (r.has_value && !e->health.metric_seen) {
            e->health.metric_seen = true;
            core_mark_exp(core, e);
        }
        a = e->sched->report(core, t, &r, metrics, now);
        /* stop.metric_threshold: a value at least this good ends the search. */
        if (r.has_value && isfinite(v) && e->spec.has_stop_threshold && core_exp_active(e) &&
            !core_better(e, e->spec.stop_threshold, v)) {
            core_end_experiment(core, e, EXP_COMPLETED, END_THRESHOLD, NULL, now);
            if (t->state == TRIAL_RUNNING) {
                core_apply_stop(core, t, now);
                a = ACTION_STOP;
            }
        }
    }
    if (!recorded)
        core_record_report(t, &r, metrics, a);
    rung_grow((void **)&core->reports, &core->cap_reports, core->n_reports, sizeof(NewReport));
    core->reports[core->n_reports++] = (NewReport){
        .trial_id = t->id,
        .attempt = t->attempt,
        .step = step,
        .time = now,
        .metrics = json_incref(metrics),
        .action = a,
    };
    *action = a;
    return 0;
}

int core_finish(Core *core, Trial *t, const char *token, bool completed, const char *error,
                int64_t now, RungError *err)
{
    if (t->gang != NULL) {
        GangMember *m = members_by_token(t->gang, token);
        if (m == NULL)
            return core_lease_lost(t, err);
        if (t->gang->attempt != t->attempt || t->state != TRIAL_RUNNING)
            return 0; /* the attempt is over: finishing changes nothing */
        if (members_rank(t->gang, m) > 0) {
            core_gang_member_finish(core, t, m, completed, error, now);
            return 0;
        }
    }
    if (t->lease_token[0] == '\0' || !core_token_equal(token, t->lease_token))
        return core_lease_lost(t, err);
    if (t->state != TRIAL_RUNNING)
        return 0; /* already ended: finishing again changes nothing */
    if (t->stop_kind != STOP_NONE && !(completed && t->stop_kind == STOP_PAUSE)) {
        core_apply_stop(core, t,
                        now); /* a trial that ended before its pause reached it completes */
    } else if (completed) {
        core_set_error(t, NULL);
        Experiment *e = t->exp;
        e->hold_endgame = true; /* promotions first, then the end game */
        core_end_for_scheduler(core, t, TRIAL_COMPLETED, now);
        e->hold_endgame = false;
        if (e->sched->promote != NULL) /* its last value may have been recorded */
            e->sched->promote(core, e, now);
        core_maybe_complete(core, e, now);
    } else {
        core_fail_or_retry(core, t, (error && error[0]) ? error : "the trial failed", RETRY_FAILED,
                           now);
    }
    return 0;
}

void core_trial_set_log(Core *core, Trial *t, const char *text)
{
    size_t len = strlen(text);
    const char *from = len > CORE_MAX_LOG ? text + (len - CORE_MAX_LOG) : text;
    while (((unsigned char)*from & 0xC0) == 0x80)
        from++; /* start on a whole UTF-8 character */
    char *copy = strdup(from);
    if (copy == NULL)
        abort();
    bool same = t->log_tail != NULL && strcmp(t->log_tail, copy) == 0;
    free(t->log_tail);
    t->log_tail = copy;
    if (!same && core != NULL)
        core_mark_trial(core, t);
}

void core_trial_set_warnings(Core *core, Trial *t, json_t *warnings)
{
    if (t->warnings != NULL && json_equal(t->warnings, warnings))
        return;
    json_decref(t->warnings);
    t->warnings = json_incref(warnings);
    core_mark_trial(core, t);
}

void core_worker_log(Core *core, Trial *t, int64_t worker_id, const char *text)
{
    if (text != NULL && worker_id != 0 && worker_id == t->worker_id)
        core_trial_set_log(core, t, text);
}

/* The most invalid lines a trial's warnings quote (request.h,
 * REQUEST_MAX_WARN_LAST): a gang's merged warnings keep as many. */
#define GANG_WARN_LAST 5

void core_worker_warnings(Core *core, Trial *t, int64_t worker_id, json_t *warnings)
{
    if (warnings == NULL || worker_id == 0)
        return;
    if (t->gang == NULL || t->gang->attempt != t->attempt) {
        if (worker_id == t->worker_id)
            core_trial_set_warnings(core, t, warnings);
        return;
    }
    GangMember *m = members_of(t->gang, worker_id);
    if (m == NULL || (m->warnings != NULL && json_equal(m->warnings, warnings)))
        return;
    json_decref(m->warnings);
    m->warnings = json_incref(warnings);
    core_gang_changed(core, t);
    json_t *merged = members_warnings(t->gang, GANG_WARN_LAST);
    core_trial_set_warnings(core, t, merged);
    json_decref(merged);
}
