/* What asha.c shares with the median rule (asha_median.c) and the ranking
 * of several objectives (asha_points.c): the rung records' types and the
 * helpers they call. asha.h is the API; nothing else includes this. */
#ifndef RUNG_SERVER_ASHA_INTERNAL_H
#define RUNG_SERVER_ASHA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "asha.h"
#include "idmap.h"

/* A record in compact form (16 bytes): a long experiment keeps one per
 * trial and rung it reached, so the point of several objectives lives in a
 * parallel array that one objective never allocates. */
typedef struct AshaRec {
    int64_t trial;
    double score; /* higher is better: the value, sign-flipped for min; 0 with points */
} AshaRec;

typedef struct AshaRung {
    double milestone;
    AshaRec *recs;  /* arrival order */
    AshaPoint *pts; /* several objectives: recs[i]'s point at pts[i]; else NULL */
    double *sorted; /* the same scores, ascending unless `unsorted` */
    size_t n, cap;
    bool unsorted; /* replayed scores appended: sorted at the rung's next use */
} AshaRung;

typedef struct AshaBracket {
    int n_rungs;
    AshaRung rungs[ASHA_MAX_RUNGS]; /* ascending milestones */
} AshaBracket;

typedef struct AshaTrial {
    int bracket;
    uint64_t recorded; /* bit k: recorded at rung k */
    int paused;        /* rung index it is paused at, or -1 */
    /* median: every result, in arrival order */
    double *times, *values;
    size_t n, cap;
} AshaTrial;

/* median: a forgotten trial's results from grace_period on, which are all
 * that the running means of later reports read (median_report), and the
 * time of its last result, which says whether it reported that far. */
typedef struct AshaEnded {
    int64_t trial;
    double last_time;
    double *tv; /* n times, then their n values, in arrival order */
    size_t n;
} AshaEnded;

struct Asha {
    AshaParams p;
    AshaBracket *brackets; /* p.brackets of them; NULL for fifo and median */
    IdMap trials;          /* number + 1 -> AshaTrial *: the trials not forgotten */
    AshaEnded *ended;      /* median: the forgotten trials with a result from grace_period on */
    int64_t n_ended, cap_ended;
    int64_t *paused; /* numbers of paused trials, unordered */
    int64_t n_paused, cap_paused;
};

/* Ascending doubles, for qsort (a copy in each file: no call back into
 * asha.c from the files it calls). */
static inline int asha_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* asha_median.c */
void asha_result_add(AshaTrial *t, double time, double value);
AshaDecision asha_median_report(Asha *a, AshaTrial *t, int64_t trial, double time, double value);

/* asha_points.c */
bool asha_points_continue(const Asha *a, const AshaRung *r, size_t mine);

#endif
