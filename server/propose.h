/* The proposer thread: computes configs for new trials off the request
 * path, so that no request waits on a sampler (a GP fit can take a while).
 *
 * The engine asks for `count` configs of an experiment starting at trial
 * number `first`; the proposer answers through the `done` callback, in the
 * order asked. A request carries its own reference to the search space JSON
 * and parses it itself, so it never points into the engine's state; it
 * holds its own references to the experiment's points_to_evaluate and its
 * warm_start trials (warm.h) too, both never changed once made.
 *
 * Trial n's config is the searcher's (warm_config: random and grid skip
 * what the warm_start source tried; bayes_propose, its history holding the
 * warm_start trials first) with, for n < len(points_to_evaluate), point n's
 * values laid over it (docs/api.md, "points_to_evaluate").
 *
 * It also fits pb2's GP for a member's explore (sched_explore.h), answered
 * through `explored`: the member waits paused, no request waits for it
 * (docs/schedulers.md, "pb2"). */
#ifndef RUNG_SERVER_PROPOSE_H
#define RUNG_SERVER_PROPOSE_H

#include <jansson.h>
#include <stdint.h>

#include "bayes.h"
#include "sampler.h"
#include "sched_explore.h"
#include "warm.h"

typedef struct Proposals {
    int64_t exp_id;
    int64_t first; /* trial number of configs[0] */
    int64_t count;
    json_t **configs; /* owned: count new references (NULL entries on failure) */
} Proposals;

void proposals_free(Proposals *p);

/* Receives finished proposals and takes ownership of them. */
typedef void (*ProposeDone)(void *ctx, Proposals *p);

/* What a bayes experiment knew when it asked: its observations and its
 * pending configs, each config an own reference (json refcounts are atomic,
 * and configs are never changed, so the proposer may read them). */
typedef struct ProposeHistory {
    BayesObservation *obs; /* owned array; each config an own reference */
    int64_t n_obs;
    json_t **pending; /* owned array of own references */
    int64_t n_pending;
    int n_objectives, n_constraints; /* BayesHistory's */
    /* searcher.multi_fidelity: the scheduler's rung records, each config
     * an own reference (bayes_mf_propose). */
    BayesRungRecord *rungs;
    int64_t n_rungs;
} ProposeHistory;

void propose_history_free(ProposeHistory *h);

/* Receives a computed pb2 explore (x->result set) and takes ownership. */
typedef void (*ExploreDone)(void *ctx, PbtExplore *x);

typedef struct Proposer Proposer;

/* Starts the thread; NULL when it cannot. */
Proposer *proposer_start(ProposeDone done, ExploreDone explored, void *ctx);
/* Queues a request; search_space, points (the spec's points_to_evaluate
 * array, or NULL) and warm (or NULL) are borrowed (a reference to each is
 * taken); history (bayes experiments only, else NULL) is stolen. For bayes
 * the searcher's n_initial is what the trials still need (warm_n_initial). */
void proposer_request(Proposer *p, int64_t exp_id, json_t *search_space,
                      const SearcherSpec *searcher, json_t *points, Warm *warm, int64_t first,
                      int64_t count, ProposeHistory *history);

/* Queues pb2's explore x (stolen; sched_explore.h): its GP is fitted on
 * this thread like every other model, in the order asked. */
void proposer_explore(Proposer *p, PbtExplore *x);

/* config (a new reference, stolen) of space with the values of point
 * (borrowed, a validated points_to_evaluate entry) laid over it
 * (space_lay_over: the point may choose a conditional choice's branch),
 * keys in the space's order and each value as a config holds it
 * (space_config_value): a new reference, NULL when config is NULL or out
 * of memory. */
json_t *propose_lay_over(const Space *space, json_t *config, const json_t *point);
/* Finishes the request in progress, drops the rest, joins the thread. */
void proposer_stop(Proposer *p);

#endif
