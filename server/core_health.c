/* An experiment's health and the stop rules that end it when a trial ends
 * (docs/api.md, "The experiment object"): max_failed_trials, a metric never
 * reported, stop.patience; the errors counted and how they are summed up. */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first line of a trial's error, and its last non-empty line when it
 * has more (the worker writes "exit status 1" and then the program's
 * stderr, whose last line usually names the cause). */
void core_error_summary(const char *error, char *out, size_t size)
{
    const char *nl = strchr(error, '\n');
    size_t first = nl ? (size_t)(nl - error) : strlen(error);
    const char *last = NULL;
    size_t last_len = 0;
    for (const char *p = nl; p != NULL && p[0] != '\0'; p = strchr(p + 1, '\n')) {
        const char *q = p + 1;
        size_t len = strcspn(q, "\n");
        size_t k = len;
        while (k > 0 && (q[k - 1] == ' ' || q[k - 1] == '\r' || q[k - 1] == '\t'))
            k--;
        if (k > 0) {
            last = q;
            last_len = k;
        }
    }
    if (last != NULL)
        snprintf(out, size, "%.*s: %.*s", (int)first, error, (int)last_len, last);
    else
        snprintf(out, size, "%.*s", (int)first, error);
    out[rung_utf8_truncate_len(out, size - 1)] = '\0';
}

static void count_error(ExpHealth *h, const char *error)
{
    char text[CORE_HEALTH_ERROR_LEN + 1];
    core_error_summary(error ? error : "the trial failed", text, sizeof text);
    for (int i = 0; i < h->n_errors; i++) {
        if (strcmp(h->errors[i].text, text) == 0) {
            h->errors[i].n++;
            return;
        }
    }
    if (h->n_errors < CORE_HEALTH_ERRORS) {
        snprintf(h->errors[h->n_errors].text, sizeof h->errors[0].text, "%s", text);
        h->errors[h->n_errors++].n = 1;
    }
}

/* The most frequent of the errors counted, or NULL. */
const ErrorCount *core_top_error(const ExpHealth *h)
{
    const ErrorCount *top = NULL;
    for (int i = 0; i < h->n_errors; i++)
        if (top == NULL || h->errors[i].n > top->n)
            top = &h->errors[i];
    return top;
}

static void add_keys(ExpHealth *h, const json_t *metrics)
{
    if (h->keys == NULL)
        h->keys = json_array();
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)metrics, key, v) {
        if (json_array_size(h->keys) >= CORE_HEALTH_KEYS)
            return;
        bool have = false;
        size_t i;
        json_t *k;
        json_array_foreach(h->keys, i, k)
            have = have || strcmp(json_string_value(k), key) == 0;
        if (!have)
            json_array_append_new(h->keys, json_string(key));
    }
}

/* The rules that end an experiment when one of its trials ends
 * (docs/api.md, "The experiment object"). */
void core_trial_ended(Core *core, Trial *t, int64_t now)
{
    Experiment *e = t->exp;
    if (!core_exp_active(e))
        return;
    ExpHealth *h = &e->health;
    core_mark_exp(core, e); /* its health is stored with it */
    if (t->state == TRIAL_FAILED)
        count_error(h, t->error);
    if (!h->metric_seen && t->last != NULL && t->state != TRIAL_CANCELED) {
        h->ended_reporting++;
        if (t->last != NULL)
            add_keys(h, t->last);
    }
    if (t->state == TRIAL_COMPLETED || t->state == TRIAL_STOPPED) {
        double v;
        int64_t step;
        if (core_trial_score(t, &v, &step) &&
            (!h->has_best_finished || core_better(e, v, h->best_finished))) {
            h->has_best_finished = true;
            h->best_finished = v;
            h->since_better = 0;
        } else {
            h->since_better++;
        }
    }
    const Spec *sp = &e->spec;
    int64_t need = sp->total_trials < 5 ? sp->total_trials : 5;
    if (sp->max_failed_trials > 0 && e->counts[TRIAL_FAILED] >= sp->max_failed_trials) {
        const ErrorCount *top = core_top_error(h);
        char msg[CORE_HEALTH_ERROR_LEN + 160];
        snprintf(msg, sizeof msg,
                 "%lld trials failed (max_failed_trials is %lld); the most frequent error, "
                 "in %lld of them: %s",
                 (long long)e->counts[TRIAL_FAILED], (long long)sp->max_failed_trials,
                 (long long)(top ? top->n : 0), top ? top->text : "(none)");
        core_end_experiment(core, e, EXP_FAILED, END_MAX_FAILED, msg, now);
    } else if (!h->metric_seen && h->ended_reporting >= need) {
        char msg[SPEC_MAX_OBJECTIVES * (SPEC_MAX_METRIC + 4) + CORE_HEALTH_KEYS * 72 + 96];
        int n;
        if (sp->n_objectives == 1) {
            n = snprintf(msg, sizeof msg,
                         "no trial reported metric '%s'; trials reported: ", sp->metric);
        } else {
            n = snprintf(msg, sizeof msg, "no trial reported metrics ");
            for (int k = 0; k < sp->n_objectives && n > 0 && (size_t)n < sizeof msg; k++)
                n += snprintf(msg + n, sizeof msg - (size_t)n, "%s'%s'", k ? ", " : "",
                              sp->objectives[k].name);
            if (n > 0 && (size_t)n < sizeof msg)
                n += snprintf(msg + n, sizeof msg - (size_t)n, " in one report; trials reported: ");
        }
        size_t i;
        json_t *k;
        json_array_foreach(h->keys, i, k) {
            if (n > 0 && (size_t)n < sizeof msg)
                n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%s", i ? ", " : "",
                              json_string_value(k));
        }
        core_end_experiment(core, e, EXP_FAILED, END_METRIC_MISSING, msg, now);
    } else if (sp->stop_patience > 0 && h->since_better >= sp->stop_patience) {
        core_end_experiment(core, e, EXP_COMPLETED, END_PATIENCE, NULL, now);
    }
}

json_t *core_health_json(const Experiment *e)
{
    const ExpHealth *h = &e->health;
    json_t *errors = json_array();
    for (int i = 0; i < h->n_errors; i++)
        json_array_append_new(errors, json_pack("{s:s, s:I}", "text", h->errors[i].text, "n",
                                                (json_int_t)h->errors[i].n));
    return json_pack("{s:b, s:I, s:o, s:o, s:o, s:I}", "metric_seen", h->metric_seen,
                     "ended_reporting", (json_int_t)h->ended_reporting, "keys",
                     h->keys ? json_incref(h->keys) : json_array(), "errors", errors,
                     "best_finished",
                     h->has_best_finished ? json_real(h->best_finished) : json_null(),
                     "since_better", (json_int_t)h->since_better);
}
