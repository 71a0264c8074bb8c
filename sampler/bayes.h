/* Bayesian search (the `bayes` searcher of docs/api.md; docs/searchers.md):
 * a Gaussian process over the encoded search space and log
 * Expected Improvement, with pending trials as kriging-believer points;
 * with several objectives a GP each and expected hypervolume improvement,
 * with constraints a GP each and the probability of feasibility.
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

/* Several objectives and constraints (docs/searchers.md, "Several
 * objectives and constraints"): spec.h's SPEC_MAX_OBJECTIVES, and
 * SPEC_MAX_CONSTRAINTS with both bounds given. */
#define BAYES_MAX_OBJECTIVES 4
#define BAYES_MAX_CONSTRAINTS 16

/* One finished observation. loss is the (first) objective sign-adjusted so
 * that lower is better (the metric for "min", its negation for "max");
 * +INFINITY marks a trial that failed or diverged (the searcher treats it
 * as the worst value seen, so the GP steers away from it). more holds the
 * other objectives the same way. cons holds one value per constraint
 * bound, g = value - max or min - value, feasible when g <= 0; NaN when
 * the trial did not report it (it failed, or lacked the metric), which the
 * searcher takes as the worst g seen: infeasible. */
typedef struct BayesObservation {
    const json_t *config; /* borrowed */
    double loss;
    double more[BAYES_MAX_OBJECTIVES - 1];
    double cons[BAYES_MAX_CONSTRAINTS];
} BayesObservation;

/* What the experiment knows when it asks: observations in trial-number
 * order, and the configs of trials proposed or running that have no
 * observation yet (kriging-believer points, so parallel workers get
 * distinct configs). n_objectives (0 counts as 1) and n_constraints say
 * how many of each observation's values count. */
typedef struct BayesHistory {
    const BayesObservation *obs;
    int64_t n_obs;
    const json_t *const *pending; /* borrowed */
    int64_t n_pending;
    int n_objectives;  /* 0 .. BAYES_MAX_OBJECTIVES */
    int n_constraints; /* 0 .. BAYES_MAX_CONSTRAINTS */
    /* Multi-fidelity (bayes_mf_propose): every trial's loss at each rung
     * level it reached; bayes_propose ignores them. */
    const struct BayesRungRecord *rungs;
    int64_t n_rungs;
} BayesHistory;

/* A trial's loss when it reached one rung level of its scheduler (asha,
 * hyperband and their promote variants): the value rung decisions use. */
typedef struct BayesRungRecord {
    const json_t *config; /* borrowed */
    double level;         /* the rung's milestone (time_attr units), > 0 */
    double loss;          /* minimized; NaN when the trial failed there */
    int64_t number;       /* the trial's number (tpe_mf_propose keeps their order) */
} BayesRungRecord;

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
 *   of range fail with RUNG_E_INVALID_ARGUMENT, as do n_objectives or
 *   n_constraints out of range.
 * - Observations and pending configs that do not fit the space (a missing
 *   parameter, an unknown choice) are skipped; NaN losses count as failed.
 * - With more than 2,000 observations the GP sees the best 1,000 and the
 *   1,000 most recent others; with more than 1,024 pending, the most
 *   recent 1,024.
 * - Trials at or past n_initial with fewer than two usable observations
 *   also take sampler_config's Sobol config. */

/* Multi-fidelity proposals (sampler/bayes_mf.c, docs/searchers.md
 * "Multi-fidelity"): the GP is fitted to the rung records of one level,
 * the highest that holds at least bayes_mf_min_records(space, searcher)
 * records (BOHB's rule), and proposes by log EI there, as bayes_propose
 * does for final results; history's obs are not used, its pending configs
 * are the believers (those with a record at the level are left out).
 * Without such a level it proposes as bayes_propose does with history's
 * obs. levels[k] (may be NULL) gets the level trial first + k was proposed
 * from, 0 when none. Same arguments and errors as bayes_propose; the
 * rung records must have a config and a finite level > 0. */
int bayes_mf_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                     const BayesHistory *history, json_t **out, double *levels, RungError *err);

/* The fidelity rule alone: the highest level of records[0 .. n-1] with at
 * least min_records records of finite loss; 0 when none has. */
double bayes_mf_level(const BayesRungRecord *records, int64_t n, int64_t min_records);

/* How many records a level needs: max(searcher->n_initial, dims + 2). */
int64_t bayes_mf_min_records(const Space *space, const SearcherSpec *searcher);

/* The model's mean loss at m points, for rungd's surface endpoint
 * (docs/api.md): the GP bayes_propose would fit on history's observations
 * (the first objective's loss only; its output transform, kernel and
 * hyperparameter fit), its mean at the cube points u (m x
 * space_cube_dims, row-major; grid parameters take base's values, base a
 * config of the space) back in loss units (the transform undone). Fails
 * with RUNG_E_INVALID_ARGUMENT when fewer than two observations fit the
 * space or nothing varies, RUNG_E_INTERNAL on a numerical failure. */
int bayes_predict(const Space *space, const SearcherSpec *searcher, const BayesHistory *history,
                  const json_t *base, const double *u, int m, double *loss, RungError *err);

#endif
