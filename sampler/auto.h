/* The auto searcher (docs/searchers.md, "auto"; docs/api.md, "searcher"):
 * which of bayes, tpe and cmaes proposes an experiment's next trial, by a
 * rule of the space and of how many results there are, so that an
 * experiment starts with the Gaussian process and goes on with a cheaper
 * model once the GP's cost grows. Pure: the same space and counts give the
 * same pick, so a restarted rungd picks as before. */
#ifndef RUNG_SAMPLER_AUTO_H
#define RUNG_SAMPLER_AUTO_H

#include <stdint.h>

#include "sampler.h"

/* searcher.switch_after's default: the GP proposes while the experiment
 * has fewer results than this. Up to 200 results bayes beat what took
 * over from it (at 200 evaluations, switching at 100 was worse on
 * Hartmann-6, Ackley-5 and Levy-4); past a few hundred it plateaus where
 * CMA-ES goes on refining (Rosenbrock-4 at 1,000: 2.3 switching at 1,000,
 * 3e-5 at 200, 2e-5 for cmaes alone). docs/searchers.md, "auto", has the
 * table; a GP proposal at 200 results takes about 35-50 ms. */
#define AUTO_GP_MAX_OBS 200
/* The GP takes at most this many sampled parameters under auto. */
#define AUTO_GP_MAX_DIMS 40

/* The searcher for a proposal of the auto spec `a` made after n_obs
 * results: bayes for several objectives or constraints (the only one that
 * models them), and while n_obs < a->switch_after with at most
 * AUTO_GP_MAX_DIMS parameters; then tpe where the space is conditional or
 * has a choice (CMA-ES would leave those to random draws), else cmaes. */
SearcherType auto_pick(const Space *space, const SearcherSpec *a, int64_t n_obs, int n_objectives,
                       int n_constraints);

/* The spec that `pick` runs with under the auto spec `a`: its seed,
 * n_initial, noisy, grid_order and multi_fidelity (auto takes none: off),
 * every other field at pick's default. */
SearcherSpec auto_spec(const SearcherSpec *a, SearcherType pick);

#endif
