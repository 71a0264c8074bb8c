/* Several objectives in a rung (asha.h, "Several objectives"): whether a
 * record continues, by non-dominated rank and crowding distance
 * (sampler/pareto.h), feasible records first. */
#include "asha_internal.h"

#include "pareto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Records of a rung in trial-number order (qsort without context). */
typedef struct AshaByTrial {
    int64_t trial;
    size_t i; /* index in the rung's recs */
} AshaByTrial;

static int cmp_by_trial(const void *x, const void *y)
{
    const AshaByTrial *a = x, *b = y;
    return (a->trial > b->trial) - (a->trial < b->trial);
}

/* Whether record `mine` of rung r continues (asha.h): fewer than
 * ceil(n/rf) of the rung's n records rank strictly above it. Ranks and
 * crowding distances are computed over the feasible and the infeasible
 * records apart, each set in trial-number order, so that pareto_crowding
 * breaks a tie in an objective by trial number: the ranking does not depend
 * on the order reports came in, and a restart, which replays one trial after
 * the other, rebuilds the same decisions. */
bool asha_points_continue(const Asha *a, const AshaRung *r, size_t mine)
{
    size_t n = r->n;
    int m = a->p.objectives;
    double *y = malloc(n * (size_t)m * sizeof *y), *crowd = malloc(n * sizeof *crowd);
    double *c_of = malloc(n * sizeof *c_of);
    int *rank = malloc(n * sizeof *rank), *r_of = malloc(n * sizeof *r_of);
    AshaByTrial *order = malloc(n * sizeof *order);
    size_t *idx = malloc(n * sizeof *idx);
    if (y == NULL || crowd == NULL || c_of == NULL || rank == NULL || r_of == NULL ||
        order == NULL || idx == NULL)
        abort();
    for (size_t i = 0; i < n; i++)
        order[i] = (AshaByTrial){r->recs[i].trial, i};
    qsort(order, n, sizeof *order, cmp_by_trial);
    for (int pass = 0; pass < 2; pass++) {
        int c = 0;
        for (size_t k = 0; k < n; k++) {
            size_t i = order[k].i;
            if (r->pts[i].feasible != (pass == 0))
                continue;
            idx[c] = i;
            memcpy(&y[(size_t)c * m], r->pts[i].loss, (size_t)m * sizeof *y);
            c++;
        }
        if (c == 0)
            continue;
        if (pareto_ranks(y, c, m, rank) < 0 || pareto_crowding(y, c, m, rank, crowd) < 0)
            abort();
        for (int k = 0; k < c; k++) {
            r_of[idx[k]] = rank[k];
            c_of[idx[k]] = crowd[k];
        }
    }
    const AshaPoint *p = &r->pts[mine];
    size_t above = 0;
    for (size_t i = 0; i < n; i++) {
        const AshaPoint *q = &r->pts[i];
        if (q->feasible != p->feasible)
            above += q->feasible;
        else if (r_of[i] != r_of[mine])
            above += r_of[i] < r_of[mine];
        else
            above += c_of[i] > c_of[mine];
    }
    free(y);
    free(crowd);
    free(c_of);
    free(rank);
    free(r_of);
    free(order);
    free(idx);
    return (double)above < ceil((double)n / a->p.rf);
}
