/* Bayesian search (the `bayes` searcher of docs/api.md; docs/architecture.md "Bayesian
 * search"): a Gaussian process over the encoded search space and log
 * Expected Improvement, with pending trials as kriging-believer points.
 *
 * Pure: a function of (space, searcher, trial numbers, history). The same
 * seed and history give the same proposals. Called on rungd's proposer
 * thread, never on a request. */
#ifndef RUNG_SAMPLER_BAYES_H
#define RUNG_SAMPLER_BAYES_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"
#include "sampler.h"

/* One finished observation. loss is the objective sign-adjusted so that
 * lower is better (the metric for "min", its negation for "max"); +INFINITY
 * marks a trial that failed or diverged (the searcher treats it as the worst
 * value seen, so the GP steers away from it). */
typedef struct BayesObservation {
    const json_t *config; /* borrowed */
    double loss;
} BayesObservation;

/* What the experiment knows when it asks: observations in trial-number
 * order, and the configs of trials proposed or running that have no
 * observation yet (kriging-believer points, so parallel workers get
 * distinct configs). */
typedef struct BayesHistory {
    const BayesObservation *obs;
    int64_t n_obs;
    const json_t *const *pending; /* borrowed */
    int64_t n_pending;
} BayesHistory;

/* The most configs one call proposes: each joins the GP as a point. */
#define BAYES_MAX_BATCH 1024

/* Proposes the configs of trial numbers first .. first + count - 1 into
 * out[0 .. count-1] (new references; free with json_decref). Trials below
 * searcher->n_initial come from the scrambled Sobol sequence (as
 * sampler_config does for them); later ones from the GP. Each config of a
 * batch joins the pending points of the next. Grid parameters stay
 * enumerated as Ray does: trial n uses grid combination n mod G. Fails
 * (RUNG_E_INTERNAL) only on a numerical failure nothing could recover;
 * then out[] holds nothing. */
int bayes_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                  const BayesHistory *history, json_t **out, RungError *err);
/* More about bayes_propose (bayes.c's header has the whole method):
 * - count may be 0 (nothing happens) and at most BAYES_MAX_BATCH; history
 *   may be NULL (no observations); first, count or history's arrays out
 *   of range fail with RUNG_E_INVALID_ARGUMENT.
 * - Observations and pending configs that do not fit the space (a missing
 *   parameter, an unknown choice) are skipped; NaN losses count as failed.
 * - With more than 2,000 observations the GP sees the best 1,000 and the
 *   1,000 most recent others; with more than 1,024 pending, the most
 *   recent 1,024.
 * - Trials at or past n_initial with fewer than two usable observations
 *   also take sampler_config's Sobol config. */

#endif
