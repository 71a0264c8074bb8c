/* CMA-ES search (the `cmaes` searcher of docs/api.md; docs/searchers.md,
 * "CMA-ES"): the covariance matrix adaptation evolution strategy on the unit
 * cube of the continuous and integer parameters, with IPOP restarts.
 *
 * Pure: a function of (space, searcher, trial numbers, history), like the
 * other searchers. rungd keeps no optimizer state: every call rebuilds the
 * strategy by replaying the completed observations in trial-number order in
 * batches of the population size, one generation per full batch, and trial
 * n's config is a sample of the replayed distribution drawn from (seed, n)
 * (quasi-random: point n of a Sobol sequence shifted by the seed).
 * The same seed and history give the same proposals; a restarted rungd
 * rebuilds the same history and goes on where it stopped. Called on rungd's
 * proposer thread, never on a request. */
#ifndef RUNG_SAMPLER_CMAES_H
#define RUNG_SAMPLER_CMAES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bayes.h"
#include "error.h"
#include "sampler.h"

/* The most configs one call proposes, as bayes. */
#define CMAES_MAX_BATCH 1024
/* IPOP doubles the population at each restart; it stops doubling here
 * (a generation then needs this many results before the next update). */
#define CMAES_MAX_POPSIZE 4096

/* Proposes the configs of trial numbers first .. first + count - 1 into
 * out[0 .. count-1] (new references; free with json_decref). Only the first
 * objective's loss of history->obs is used (NaN or +INFINITY: a failed
 * trial, ranked last); history->pending is not needed (each trial number
 * draws its own sample, so running trials never share a config). Grid
 * parameters are enumerated as the random searcher does (trial n takes
 * combination n mod G); choices, and every parameter of a conditional
 * space, are drawn as the random searcher draws them (sampler_config).
 * count may be 0 and at most CMAES_MAX_BATCH; history may be NULL. Fails
 * with RUNG_E_INVALID_ARGUMENT on arguments out of range or with several
 * objectives or constraints (spec validation refuses those), with
 * RUNG_E_INTERNAL on a numerical failure; then out[] holds nothing. */
int cmaes_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                  const BayesHistory *history, json_t **out, RungError *err);

/* A memo of replays, so that a proposal after one more result does not
 * replay them all (cmaes_propose_cached). It holds the history it saw
 * (a reference to each config, and each loss) and the strategy's state at
 * the last CMAES_CACHE_CHECKPOINTS generation boundaries. One per
 * experiment (its space and searcher), used by one thread at a time. */
typedef struct CmaesCache CmaesCache;
#define CMAES_CACHE_CHECKPOINTS 16

CmaesCache *cmaes_cache_new(void);        /* NULL when out of memory */
void cmaes_cache_free(CmaesCache *cache); /* accepts NULL */

/* cmaes_propose, the same configs for the same arguments, resuming the
 * replay from cache (may be NULL: a full replay). A history whose first
 * entries are those of the cache's last call (the same config objects,
 * which rungd never changes, and the same losses) resumes from the last
 * generation boundary within them; any other history, or another searcher
 * or space, replays from the start. The configs of history->obs must not
 * change while the cache holds them (it holds a reference to each). */
int cmaes_propose_cached(CmaesCache *cache, const Space *space, const SearcherSpec *searcher,
                         int64_t first, int64_t count, const BayesHistory *history, json_t **out,
                         RungError *err);

/* What the replay of a history ends in (for tests, logs and benches). */
typedef struct CmaesSummary {
    int dims;                      /* coordinates the strategy models (0: all drawn at random) */
    int popsize;                   /* lambda of the current run */
    int restarts;                  /* IPOP restarts so far */
    int64_t generation;            /* updates of the current run */
    int64_t used;                  /* observations fed into full batches (all runs) */
    double sigma;                  /* step size, cube units */
    double mean[SPACE_MAX_PARAMS]; /* the current mean, dims of them */
} CmaesSummary;

/* Replays history as cmaes_propose does and summarizes the state. */
int cmaes_replay(const Space *space, const SearcherSpec *searcher, const BayesHistory *history,
                 CmaesSummary *out, RungError *err);

/* The strategy itself on plain vectors, for the unit tests' hand-computed
 * cases (cmaes.c's header has the method). Not for other callers. */
typedef struct CmaesEs {
    int n;      /* dimensions, >= 1 */
    int lambda; /* population size, >= 2 */
    int mu;     /* parents: lambda / 2 */
    double *w;  /* lambda recombination weights (active: the last ones negative) */
    double mueff, cc, cs, c1, cmu, ds, chin;
    double *mean, *ps, *pc; /* n each */
    double *C, *B,
        *D; /* covariance (n x n, row-major), its eigenvectors (columns), sqrt eigenvalues */
    double *isqrtC; /* C^-1/2 = B D^-1 B^T */
    double sigma, sigma0;
    int64_t g;       /* generation (updates so far) */
    int term;        /* tolfun's window of generations */
    double *funhist; /* 2 x term: best and worst loss of each recent generation */
    double *work;    /* scratch: lambda x n steps, lambda losses, indices */
} CmaesEs;

int cmaes__init(CmaesEs *es, int n, int lambda, const double *mean, double sigma);
void cmaes__free(CmaesEs *es);
/* One generation: x holds lambda points (row-major lambda x n), f their
 * losses (NaN ranks as +INFINITY). Returns 0, or -1 on a numerical failure. */
int cmaes__tell(CmaesEs *es, const double *x, const double *f);
/* Whether the run has converged or stalled (IPOP's restart conditions). */
bool cmaes__should_stop(const CmaesEs *es);
/* x = mean + sigma B D z for a standard normal z (n values). */
void cmaes__sample(const CmaesEs *es, const double *z, double *x);

#endif
