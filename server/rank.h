/* Ranking an experiment's trials by their best value (GET
 * .../trials?sort=value, docs/api.md): the order, and the first k of n in
 * it without sorting all n. Pure; api_experiments.c fills the ranks (store_read.c reads
 * them, memory's live values override). */
#ifndef RUNG_SERVER_RANK_H
#define RUNG_SERVER_RANK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct TrialRank {
    int64_t id, number;
    bool has_best;
    double loss; /* spec_loss of the best value: lower is better */
} TrialRank;

/* qsort's comparator of the order: best (lowest loss) first, trials without
 * a best value last, ties by number. */
int rank_cmp(const void *a, const void *b);

/* Puts the first k (0 <= k <= n) of ranks[0..n) in rank_cmp's order at its
 * front, sorted; the rest is left in some order. A page near the top of
 * 100,000 trials then costs one comparison per trial, not a sort. */
void rank_first(TrialRank *ranks, int64_t n, int64_t k);

#endif
