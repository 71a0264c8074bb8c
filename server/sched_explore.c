/* pb2's explore as a request; see sched_explore.h. */
#include "sched_explore.h"

#include <stdlib.h>

#include "pb2.h"
#include "sampler.h"

PbtExplore *pbt_explore_new(int64_t n_obs)
{
    PbtExplore *x = calloc(1, sizeof *x);
    size_t n = (size_t)(n_obs > 0 ? n_obs : 1);
    if (x == NULL || (x->obs_config = calloc(n, sizeof *x->obs_config)) == NULL ||
        (x->obs_time = calloc(n, sizeof *x->obs_time)) == NULL ||
        (x->obs_change = calloc(n, sizeof *x->obs_change)) == NULL)
        abort();
    x->n_obs = n_obs;
    return x;
}

void pbt_explore_free(PbtExplore *x)
{
    if (x == NULL)
        return;
    for (int64_t i = 0; i < x->n_obs; i++)
        json_decref(x->obs_config[i]);
    free(x->obs_config);
    free(x->obs_time);
    free(x->obs_change);
    json_decref(x->mutations);
    json_decref(x->base);
    json_decref(x->result);
    free(x);
}

json_t *pbt_explore_compute(const PbtExplore *x)
{
    Space *space = NULL;
    RungError err;
    /* The spec validated these domains (spec_sched.c): this cannot fail. */
    if (space_parse(x->mutations, &space, &err) != 0)
        return NULL;
    int n = x->n_obs < PB2_MAX_OBS ? (int)x->n_obs : PB2_MAX_OBS;
    Pb2Obs *obs = malloc((size_t)(n > 0 ? n : 1) * sizeof *obs);
    if (obs == NULL)
        abort();
    for (int i = 0; i < n; i++)
        obs[i] = (Pb2Obs){.config = x->obs_config[i],
                          .time = x->obs_time[i],
                          .change = x->obs_change[i]};
    json_t *next = pb2_propose(space, x->base, obs, n, (double)x->milestone, x->seed,
                               (uint64_t)x->number, (uint64_t)x->milestone);
    free(obs);
    if (next == NULL) /* the GP failed numerically: explore as pbt does */
        next = space_mutate(space, x->base, x->resample, x->seed, (uint64_t)x->number,
                            (uint64_t)x->milestone);
    space_free(space);
    return next;
}
