/* pb2's explore as a request (docs/schedulers.md, "pb2"): what the fit of
 * PB2's GP needs, snapshot by the Core when a member exploits, so that the
 * fit runs on the proposer thread (propose.h) and no request of the
 * engine's batch waits for it. Every JSON it holds is an own reference to
 * an object nobody changes once made (json refcounts are atomic), so any
 * thread may compute it; the answer goes back to the Core
 * (core_pbt_explored), which applies it only if the member still waits. */
#ifndef RUNG_SERVER_SCHED_EXPLORE_H
#define RUNG_SERVER_SCHED_EXPLORE_H

#include <jansson.h>
#include <stdint.h>

typedef struct PbtExplore {
    int64_t exp_id, trial_id;
    int64_t number, milestone; /* the member's number, and where it exploited */
    json_t *mutations;         /* the explored parameters' domains, a search space */
    json_t *base;              /* the donor's config at the milestone */
    double resample;           /* resample_probability, for the fallback */
    uint64_t seed;             /* the experiment's; the draws are (seed, number, milestone) */
    /* PB2's data (pbt_changes): config, the interval's end, its score change. */
    int64_t n_obs;
    json_t **obs_config;
    double *obs_time, *obs_change;
    json_t *result; /* the answer (pbt_explore_compute), or NULL */
    struct PbtExplore *next;
} PbtExplore;

/* A request with room for n_obs observations (filled by the caller, each
 * config an own reference); aborts when out of memory. */
PbtExplore *pbt_explore_new(int64_t n_obs);
void pbt_explore_free(PbtExplore *x);
/* The member's new config: base with the mutated parameters chosen by
 * PB2's GP (pb2_propose), or, when the GP fails numerically, mutated as
 * pbt does (space_mutate). A new reference; NULL only when out of memory.
 * Pure: the same request gives the same config on any thread. */
json_t *pbt_explore_compute(const PbtExplore *x);

#endif
