/* An experiment's health (docs/api.md, "The experiment object"): the
 * errors counted and how they are summed up, the metric keys its trials
 * reported, a trial's score for the best; stored with the experiment. The
 * stop rules that read it are the kernel's (core_trial_ended). */
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

void core_count_error(ExpHealth *h, const char *error)
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

void core_add_keys(ExpHealth *h, const json_t *metrics)
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

/* A trial's value for the experiment's best, by best_scope: its best
 * finite value ("all"), or its last one ("last"), with that step. */
bool core_trial_score(const Trial *t, double *v, int64_t *step)
{
    const Experiment *e = t->exp;
    /* Several objectives have no single best; an infeasible trial is never
     * one (docs/api.md, "Several objectives and constraints"). */
    if (e->spec.n_objectives > 1 ||
        (e->spec.n_constraints > 0 && (t->last == NULL || !spec_feasible(&e->spec, t->last))))
        return false;
    if (!e->spec.best_last) {
        *v = t->best_value;
        *step = t->best_step;
        return t->has_best;
    }
    if (t->last == NULL || core_exp_objective(e, t->last, v) != 1 || !isfinite(*v))
        return false;
    *step = t->n_seen > 0 ? t->seen[t->n_seen - 1].step : 0;
    return true;
}
