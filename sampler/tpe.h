/* The Tree-structured Parzen Estimator searcher (the `tpe` searcher of
 * docs/api.md; docs/searchers.md, "TPE"), the method of Optuna 3.1's
 * TPESampler: the finished trials are split by loss into a good set (the
 * best gamma(n) = min(ceil(n / 10), 25) of n) and a bad one, each becomes a
 * Parzen estimator (a weighted mixture of truncated normals and
 * categorical kernels, one kernel per trial, plus a prior), 24 candidates
 * are drawn from the good estimator l(x) and the one with the largest
 * log l(x) - log g(x) is proposed.
 *
 * Pure: a function of (space, searcher, trial numbers, history), no I/O,
 * no globals, so it is thread-safe and the same seed and history give the
 * same proposals. Called on rungd's proposer thread, never on a request. */
#ifndef RUNG_SAMPLER_TPE_H
#define RUNG_SAMPLER_TPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bayes.h"
#include "error.h"
#include "sampler.h"

/* Candidates drawn from l(x) per proposal, and the most good-set members
 * (Optuna's n_ei_candidates and the cap of its default gamma). */
#define TPE_CANDIDATES 24
#define TPE_MAX_GOOD 25
/* The most configs one call proposes (as bayes: each joins the next as a
 * pending trial). */
#define TPE_MAX_BATCH 1024

/* Proposes the configs of trial numbers first .. first + count - 1 into
 * out[0 .. count-1] (new references). Trials below searcher->n_initial,
 * and every trial while fewer than n_initial observations are finished,
 * take sampler_config's config (quasi-random start points); later ones the
 * TPE's. history's obs are the finished trials in trial-number order (loss
 * +INFINITY or NaN: failed, always in the bad set); with
 * searcher->constant_liar its pending configs join the bad set as the worst
 * values (so parallel workers get distinct configs); each config of a batch
 * joins the pending ones of the next. Only the first objective is read.
 * Grid parameters stay enumerated: trial n uses combination n mod G.
 * count 0..TPE_MAX_BATCH; history may be NULL. Fails with
 * RUNG_E_INVALID_ARGUMENT on arguments out of range; out[] then holds
 * nothing. Observations that do not fit the space are skipped. */
int tpe_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                const BayesHistory *history, json_t **out, RungError *err);

/* Multi-fidelity TPE (sampler/tpe_mf.c; docs/searchers.md,
 * "Multi-fidelity"): with history's rung records (history->rungs), every
 * trial that reached a rung is an observation, ranked by the deepest rung
 * it reached (deeper is better), then by its loss there; history's obs
 * add only the trials with no record (below all others, by their loss),
 * and its pending configs are pending whether they have records or not
 * (a running trial is a liar, not ranked). Records and pending configs
 * are matched by pointer: pass the same json_t for one trial. Without
 * records it is tpe_propose. Same arguments and errors as tpe_propose. */
int tpe_mf_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                   const BayesHistory *history, json_t **out, RungError *err);

/* The pieces, for the unit tests (tests/unit/test_tpe.c). */

/* Optuna's default gamma: the size of the good set of n observations. */
int64_t tpe__gamma(int64_t n);

/* Which of n_obs losses (then n_pending pending trials, ranked after every
 * observation, failed ones included) go to the good set: below[i] true for
 * the tpe__gamma(n_obs) lowest losses, ties in index order, NaN as
 * +INFINITY. below has n_obs + n_pending entries. */
void tpe__split(const double *loss, int64_t n_obs, int64_t n_pending, bool *below);

/* One dimension of an estimator: numeric on [0, 1] (categories 0; with
 * cells > 0 an integer domain of that many equal cells, whose kernel mass
 * is taken over the cell as Optuna does for a stepped domain), or
 * categorical with categories >= 1 values (x holds the index). */
typedef struct TpeDim {
    int categories;
    int64_t cells;
} TpeDim;

typedef struct TpeParzen TpeParzen;

/* The Parzen estimator of n observations x (n x nd, row-major) in
 * chronological order: one kernel each plus the prior (mean 0.5, sigma 1,
 * uniform categories), weighted by Optuna's default weights (older ones
 * ramped down beyond 25) and prior weight 1. multivariate: every sigma is
 * 0.2 n^(-1/(nd+4)) (Scott's rule as Optuna); else each observation's
 * sigma is the larger gap to its neighbours among the sorted means and the
 * ends (not the ends at the extremes). Then clipped into
 * [1 / min(100, n + 2), 1] (the magic clip). NULL when out of memory. */
TpeParzen *tpe__parzen_new(const TpeDim *dims, int nd, const double *x, int64_t n,
                           bool multivariate);
void tpe__parzen_free(TpeParzen *pe);
/* log density at x: the weighted sum over kernels of the product over
 * dimensions of a kernel's mass on an integer or categorical dimension,
 * and on a numeric one its truncated normal's density without the
 * 1/sigma, as Optuna 3.1 scores it (docs/searchers.md, "TPE"). */
double tpe__parzen_log_pdf(const TpeParzen *pe, const double *x);
/* Component k's (0 .. n; n is the prior) mean, sigma of dimension j and weight. */
double tpe__parzen_mu(const TpeParzen *pe, int64_t k, int j);
double tpe__parzen_sigma(const TpeParzen *pe, int64_t k, int j);
double tpe__parzen_weight(const TpeParzen *pe, int64_t k);
/* A draw from the estimator, from the 64-bit state *rng (advanced). */
void tpe__parzen_sample(const TpeParzen *pe, uint64_t *rng, double *x);

#endif
