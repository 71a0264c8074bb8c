/* See rank.h. */
#include "rank.h"

#include <stdlib.h>

int rank_cmp(const void *pa, const void *pb)
{
    const TrialRank *a = pa, *b = pb;
    if (a->has_best != b->has_best)
        return a->has_best ? -1 : 1;
    if (a->has_best && a->loss != b->loss)
        return a->loss < b->loss ? -1 : 1;
    return a->number < b->number ? -1 : (a->number > b->number);
}

/* Sinks ranks[i] in the heap ranks[0..n) whose top is the last in order. */
static void sift(TrialRank *ranks, int64_t n, int64_t i)
{
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && rank_cmp(&ranks[c + 1], &ranks[c]) > 0)
            c++;
        if (rank_cmp(&ranks[c], &ranks[i]) <= 0)
            return;
        TrialRank tmp = ranks[i];
        ranks[i] = ranks[c];
        ranks[c] = tmp;
        i = c;
    }
}

void rank_first(TrialRank *ranks, int64_t n, int64_t k)
{
    if (k >= n / 4) { /* most of them: a plain sort */
        qsort(ranks, (size_t)n, sizeof *ranks, rank_cmp);
        return;
    }
    /* A heap of the first k so far, topped by the last of them: a trial
     * behind it is passed over after one comparison. */
    for (int64_t i = k / 2 - 1; i >= 0; i--)
        sift(ranks, k, i);
    for (int64_t i = k; i < n; i++) {
        if (rank_cmp(&ranks[i], &ranks[0]) >= 0)
            continue;
        TrialRank tmp = ranks[0];
        ranks[0] = ranks[i];
        ranks[i] = tmp;
        sift(ranks, k, 0);
    }
    qsort(ranks, (size_t)k, sizeof *ranks, rank_cmp);
}
