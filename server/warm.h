/* warm_start (docs/api.md, "warm_start"): what an experiment knows of an
 * earlier, ended one before its own first trial.
 *
 * A Warm holds the source experiment's finished trials (completed, stopped,
 * failed) as the new experiment sees them: each config restricted to the
 * new search space's parameters, in its order, and its loss the last
 * reported value of the new experiment's metric, sign-adjusted for the new
 * mode (lower is better; a failed trial +INFINITY, as core_trial_result
 * counts it). Trials whose values lie outside the new domains, or that
 * never reported the metric, are left out. The searchers use it three ways:
 *
 *   - bayes: the trials are observations before the experiment's own
 *     (history_of in engine_propose.c puts them first), and they count toward
 *     n_initial (warm_n_initial);
 *   - random (quasi too): a trial whose drawn config was tried draws again,
 *     deterministically (sampler_redraw), up to WARM_MAX_REDRAWS times;
 *   - grid: the enumeration skips the tried combinations, so the experiment
 *     has fewer trials (warm_seal sets spec->total_trials).
 *
 * The store builds one (store_read_warm) at submission and again when it
 * loads the experiment at start: the source has ended, so both readings
 * agree and a restart proposes the same configs. Once sealed a Warm never
 * changes, so the proposer thread reads it while the engine thread holds
 * it; each holder has a reference (warm_ref, warm_free: atomic counts). */
#ifndef RUNG_SERVER_WARM_H
#define RUNG_SERVER_WARM_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bayes.h"
#include "core.h"
#include "error.h"
#include "sampler.h"
#include "spec.h"

/* A random trial whose config was tried draws at most this many more times,
 * then keeps its last draw: a space whose every config was tried must still
 * propose (a choice-only space of a few values, say), and the chance that
 * 100 uniform draws all hit tried configs while 1% of the space is untried
 * is below 0.37, at 10% untried 3e-5. */
#define WARM_MAX_REDRAWS 100

typedef struct Warm Warm;

/* An empty Warm for an experiment with spec (borrowed: only read here,
 * never kept) warm-starting from experiment `source`. Aborts when out of
 * memory, like the core's tables. */
Warm *warm_new(const Spec *spec, int64_t source);
/* One trial of the source: its state, config and last report's metrics
 * (both borrowed; last may be NULL). Returns whether it was taken (a
 * finished trial with the metric, or failed, whose values all lie in the
 * new domains). Only before warm_seal. */
bool warm_add(Warm *w, const Spec *spec, TrialState state, const json_t *config,
              const json_t *last);
/* Ends the adding. For the grid searcher, spec->total_trials becomes the
 * untried combinations times num_samples; fails (invalid_spec, field
 * warm_start.experiment) when every combination was tried, and (field
 * points_to_evaluate) when there are then fewer trials than points. */
int warm_seal(Warm *w, Spec *spec, RungError *err);

/* Another reference to w (NULL gives NULL); warm_free drops one. */
Warm *warm_ref(Warm *w);
void warm_free(Warm *w);

/* The source experiment's id. */
int64_t warm_source(const Warm *w);
/* The observations (borrowed; valid while w is), in the source's trial
 * order. */
int64_t warm_count(const Warm *w);
const BayesObservation *warm_observations(const Warm *w);

/* bayes: the n_initial that the experiment's own trials still need, the
 * warm observations counting toward it (0 when they are n_initial or more:
 * the model proposes from the first trial). w may be NULL. */
int64_t warm_n_initial(const Warm *w, const SearcherSpec *searcher);

/* For spec->total_trials after a change of num_samples (PATCH): the number
 * of trials spec has with w, from spec->num_samples (w may be NULL). */
int64_t warm_total_trials(const Warm *w, const Spec *spec);

/* The config of trial `number` of a random or grid searcher with w (may be
 * NULL: sampler_config): random draws again while the draw was tried
 * (sampler_redraw), grid takes the untried combination `number mod G'`
 * (G': the untried ones). A new reference, NULL as sampler_config. Pure,
 * and safe on any thread. */
json_t *warm_config(const Warm *w, const Space *space, const SearcherSpec *searcher,
                    int64_t number);

#endif
