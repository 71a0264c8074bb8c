/* Multi-fidelity bayes (docs/searchers.md, "Multi-fidelity"): with a
 * scheduler that has rungs, a trial's last value may be its loss after one
 * epoch or after 27, and mixing the two misleads a GP fitted to "final"
 * results. Here the GP sees the losses of one rung level only: the highest
 * level that holds enough records to fit (the rule of BOHB, Falkner et al.
 * 2018, there with a kernel density estimate per budget, and of the
 * per-level models of Hyper-Tune, Li et al. 2022). Early on that is the
 * lowest rung, whose records every trial makes; as trials are promoted the
 * model moves up to levels that rank configs as their final results do.
 * The GP, its log EI and the believers are bayes_propose's own: this file
 * only chooses the level and hands its records over as observations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bayes.h"
#include "sampler_internal.h"

double bayes_mf_level(const BayesRungRecord *records, int64_t n, int64_t min_records)
{
    double best = 0;
    for (int64_t i = 0; i < n; i++) {
        double level = records[i].level;
        if (level <= best || !isfinite(records[i].loss))
            continue;
        /* A level is counted once it beats best: few levels, few recounts. */
        int64_t count = 0;
        for (int64_t j = 0; j < n && count < min_records; j++)
            count += records[j].level == level && isfinite(records[j].loss);
        if (count >= min_records)
            best = level;
    }
    return best;
}

int64_t bayes_mf_min_records(const Space *space, const SearcherSpec *searcher)
{
    int64_t d = space_cube_dims(space) + 2;
    return searcher->n_initial > d ? searcher->n_initial : d;
}

static bool has_record(const BayesRungRecord *r, int64_t n, double level, const json_t *config)
{
    for (int64_t i = 0; i < n; i++)
        if (r[i].level == level && json_equal(r[i].config, config))
            return true;
    return false;
}

static int cmp_loss(const void *a, const void *b)
{
    double x = ((const BayesObservation *)a)->loss, y = ((const BayesObservation *)b)->loss;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y); /* failed last */
    return (x > y) - (x < y);
}

/* A level with more than BAYES_MF_MAX_RECORDS records (the lowest rung of
 * a wide experiment, early on) keeps its best third and its most recent
 * others: a GP on 1,000 records costs a proposal about 0.3 s, on 150 a
 * tenth of that (bench/sampler_speed), and the rest of a low rung says
 * little that these do not. In place; returns the new count. */
#define BAYES_MF_MAX_RECORDS 150
static int64_t keep_some(BayesObservation *obs, int64_t n)
{
    if (n <= BAYES_MF_MAX_RECORDS)
        return n;
    int64_t recent = BAYES_MF_MAX_RECORDS * 2 / 3, best = BAYES_MF_MAX_RECORDS - recent;
    BayesObservation *tail = malloc((size_t)recent * sizeof *tail);
    if (tail == NULL)
        return n; /* all of them: slower, still right */
    memcpy(tail, obs + n - recent, (size_t)recent * sizeof *tail);
    qsort(obs, (size_t)(n - recent), sizeof *obs, cmp_loss);
    memcpy(obs + best, tail, (size_t)recent * sizeof *tail);
    free(tail);
    return BAYES_MF_MAX_RECORDS;
}

int bayes_mf_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                     const BayesHistory *history, json_t **out, double *levels, RungError *err)
{
    if (history != NULL &&
        (history->n_rungs < 0 || (history->n_rungs > 0 && history->rungs == NULL)))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, NULL,
                              "bayes: n_rungs must be >= 0, with an array of that many");
    for (int64_t i = 0; history != NULL && i < history->n_rungs; i++)
        if (history->rungs[i].config == NULL || !(history->rungs[i].level > 0) ||
            !isfinite(history->rungs[i].level))
            return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, NULL,
                                  "bayes: rung record %lld needs a config and a level > 0",
                                  (long long)i);
    /* Several objectives or constraints: rung records carry one loss, so
     * the final results decide (docs/searchers.md). */
    double level = 0;
    if (history != NULL && history->n_objectives <= 1 && history->n_constraints == 0)
        level = bayes_mf_level(history->rungs, history->n_rungs,
                               bayes_mf_min_records(space, searcher));
    int rc;
    if (level == 0) {
        rc = bayes_propose(space, searcher, first, count, history, out, err);
    } else {
        const BayesRungRecord *r = history->rungs;
        int64_t n = history->n_rungs, nobs = 0, npend = 0;
        BayesObservation *obs = malloc((size_t)n * sizeof *obs);
        const json_t **pend = malloc((size_t)(history->n_pending + 1) * sizeof *pend);
        if (obs == NULL || pend == NULL) {
            free(obs);
            free(pend);
            return rung_error_set(err, RUNG_E_INTERNAL, NULL, "bayes: out of memory");
        }
        for (int64_t i = 0; i < n; i++)
            if (r[i].level == level)
                obs[nobs++] = (BayesObservation){.config = r[i].config, .loss = r[i].loss};
        nobs = keep_some(obs, nobs);
        /* A running trial past this level is an observation, not a
         * believer. */
        for (int64_t i = 0; i < history->n_pending; i++)
            if (!has_record(r, n, level, history->pending[i]))
                pend[npend++] = history->pending[i];
        BayesHistory at = {.obs = obs, .n_obs = nobs, .pending = pend, .n_pending = npend};
        rc = bayes_propose(space, searcher, first, count, &at, out, err);
        free(obs);
        free(pend);
    }
    if (rc == 0 && levels != NULL)
        for (int64_t k = 0; k < count; k++)
            levels[k] = first + k < searcher->n_initial ? 0 : level;
    return rc;
}
