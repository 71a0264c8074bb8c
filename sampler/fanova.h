/* Parameter importance by fANOVA (docs/searchers.md, "Parameter importance"):
 * how much of the variance of a metric over the search space each single
 * parameter explains. Pure: no I/O, no clocks, no globals; the forest's
 * randomness comes from the caller's seed alone.
 *
 * fANOVA importance (Hutter, Hoos, Leyton-Brown, ICML 2014): a random forest of regression trees
 * fitted to (x, y); per tree the variance of y explained by each single parameter's marginal
 * over the tree's partition of the (bounded) space, as a fraction of the tree's total variance,
 * averaged over trees. */
#ifndef RUNG_SAMPLER_FANOVA_H
#define RUNG_SAMPLER_FANOVA_H

#include <stddef.h>

/* Most categories of one categorical parameter: above a choice's
 * SPACE_MAX_VALUES (10,000, sampler.h); the forest keeps a few numbers per
 * category per thread. */
#define FANOVA_MAX_CATEGORIES 65536
/* Most trees and the deepest tree: bounds on the work and on the
 * recursion depth of the importance pass (one frame per level). */
#define FANOVA_MAX_TREES 4096
#define FANOVA_MAX_DEPTH 1024

typedef struct {
    int n;                 /* observations */
    int d;                 /* parameters */
    const double *x;       /* n*d, row-major. Numeric: a coordinate in [0,1] (the searcher's cube
                              coordinate: log domains already logged). Categorical: the category
                              index 0..k-1 as a double. NAN: inactive (a conditional parameter the
                              trial did not take) */
    const int *categories; /* d entries: 0 numeric, k >= 2 categorical with k categories */
    const double *y;       /* n finite values */
} FanovaData;

typedef struct {
    int trees;     /* default 64 (Optuna's FanovaImportanceEvaluator default) */
    int max_depth; /* default 64 */
    int min_leaf;  /* default 1 */
    int min_split; /* default 2 */
    unsigned long long seed;
} FanovaOptions;

void fanova_options_default(FanovaOptions *o);

/* importance[j] (sums to 1 over the parameters that have a value, unless every y is equal:
 * then all 0), std[j] (standard deviation over trees, may be NULL), active[j] = how many rows
 * have parameter j active (may be NULL). Returns 0, or -1 with a reason in why (n < 2, d < 1,
 * a non-finite y, x out of range). Thread-safe (no globals): rungd runs it off its engine thread.
 *
 * Conditional parameters (docs/searchers.md, "Parameter importance"): the
 * parameters active in exactly the same rows form a group; each group's
 * importances come from a forest fitted to those rows alone (features: every
 * parameter active in all of them), weighted by the group's share of the
 * total sum of squares of y, and the whole vector is then normalised. A
 * parameter never active, or active in fewer than 2 rows, gets 0 (its
 * active count tells it apart). std[j] is on the scale of importance[j].
 * opt NULL means the defaults. Arrays are borrowed; importance, std and
 * active have d entries. */
int fanova_importance(const FanovaData *data, const FanovaOptions *opt, double *importance,
                      double *std, int *active, char *why, size_t why_size);

#endif
