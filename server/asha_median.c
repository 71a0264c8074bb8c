/* The median stopping rule (asha.h, ASHA_MEDIAN; Ray's MedianStoppingRule):
 * a trial stops when its best result is worse than the median of the
 * other trials' running means at the same time. */
#include "asha_internal.h"

#include "grow.h"

#include <math.h>
#include <stdlib.h>

void asha_result_add(AshaTrial *t, double time, double value)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->times = rung_realloc(t->times, t->cap, sizeof *t->times);
        t->values = rung_realloc(t->values, t->cap, sizeof *t->values);
    }
    t->times[t->n] = time;
    t->values[t->n] = value;
    t->n++;
}

/* The running mean of results (times, values)[0 .. n-1] over
 * [grace_period, time] into *mean; false when none is in that window (no
 * mean: Ray's would be NaN). */
static bool running_mean(const Asha *a, const double *times, const double *values, size_t n,
                         double time, double *mean)
{
    double sum = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) {
        if (times[i] >= a->p.grace_period && times[i] <= time) {
            sum += values[i];
            cnt++;
        }
    }
    *mean = cnt > 0 ? sum / (double)cnt : 0;
    return cnt > 0;
}

/* A report of trial (t its entry, which asha.c made) under the median rule. */
AshaDecision asha_median_report(Asha *a, AshaTrial *t, int64_t trial, double time, double value)
{
    asha_result_add(t, time, value);
    if (time < a->p.grace_period)
        return ASHA_CONTINUE;
    double *means = malloc((size_t)(a->trials.len + a->n_ended + 1) * sizeof *means);
    if (means == NULL)
        abort();
    size_t n = 0;
    /* The other trials' running means; a trial with no result in the window
     * is left out. The means are sorted below: the order of the tables does
     * not matter. */
    for (int64_t j = 0; j < a->trials.cap; j++) {
        const AshaTrial *o = a->trials.slots[j].ptr;
        if (a->trials.slots[j].id == 0 || a->trials.slots[j].id - 1 == trial || o->n == 0 ||
            o->times[o->n - 1] < time)
            continue;
        n += running_mean(a, o->times, o->values, o->n, time, &means[n]);
    }
    for (int64_t j = 0; j < a->n_ended; j++) {
        const AshaEnded *o = &a->ended[j];
        if (o->last_time >= time)
            n += running_mean(a, o->tv, o->tv + o->n, o->n, time, &means[n]);
    }
    AshaDecision d = ASHA_CONTINUE;
    if (n > 0 && (int64_t)n >= a->p.min_samples) {
        qsort(means, n, sizeof *means, asha_cmp_double);
        double median = n % 2 ? means[n / 2] : (means[n / 2 - 1] + means[n / 2]) / 2.0;
        double best = t->values[0];
        for (size_t i = 1; i < t->n; i++)
            best = a->p.maximize ? fmax(best, t->values[i]) : fmin(best, t->values[i]);
        if (a->p.maximize ? median > best : median < best)
            d = ASHA_STOP;
    }
    free(means);
    return d;
}
