/* PB2, Population Based Bandits (Parker-Holder, Nguyen and Roberts,
 * "Provably Efficient Online Hyperparameter Optimization with
 * Population-Based Bandits", NeurIPS 2020; docs/schedulers.md, "pb2"): the
 * explore step of PBT chosen by a GP bandit instead of random perturbation.
 *
 * Data: for each interval between two milestones that a member trained
 * through with one config, the change of its score (higher is better),
 * the config, and the time (the later milestone's step). A GP (sampler/gp.h)
 * models the change with PB2's time-varying kernel: Matérn-5/2 with ARD over
 * the mutated parameters' unit cube coordinates, times (1 - eps)^(|dt| / 2)
 * over the time scaled to [0, 1] across the data's span, eps fitted with the
 * rest, so older intervals count less as fast as the data says the best
 * config drifts. The new config maximizes the upper confidence bound mean +
 * kappa * sd at the newest time, over random candidates in the cube. Pure:
 * no I/O; draws from (seed, a, b). */
#ifndef RUNG_SAMPLER_PB2_H
#define RUNG_SAMPLER_PB2_H

#include <jansson.h>
#include <stdint.h>

#include "sampler.h"

/* UCB's kappa: PB2's GP-UCB schedule (beta ~ 2 log(...)) comes to about
 * 2 to 3 for a few hundred observations; a constant keeps it simple. */
#define PB2_KAPPA 2.0
/* The most observations the GP sees: the latest ones (PB2 keeps a
 * window of recent data too). */
#define PB2_MAX_OBS 256
/* Candidates scored per proposal. */
#define PB2_CANDIDATES 2048

typedef struct Pb2Obs {
    const json_t *config; /* borrowed: a config holding the mutated parameters */
    double time;          /* the interval's end, in steps */
    double change;        /* score change over the interval, higher is better */
} Pb2Obs;

/* base (borrowed, the donor's config) with each parameter of `mutations`
 * replaced by PB2's choice for time `now`. With fewer than 2 usable
 * observations (or no spread in their changes) the choice is a uniform
 * draw in the cube. New reference; NULL when out of memory or when the GP
 * fails numerically (the caller then explores as PBT does). */
json_t *pb2_propose(const Space *mutations, const json_t *base, const Pb2Obs *obs, int n,
                    double now, uint64_t seed, uint64_t a, uint64_t b);

#endif
