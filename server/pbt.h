/* Population Based Training's exploit rule (Jaderberg et al. 2017, "Population
 * Based Training of Neural Networks"; docs/schedulers.md, "pbt"). Pure: no
 * I/O, no clock; every draw comes from the seed. One Pbt per experiment.
 *
 * Milestones are the multiples of perturbation_interval (in steps). The
 * first report of a trial at or past milestone k (k >= 1, step >=
 * burn_in_period) records its value there and is judged against the values
 * recorded at k so far, its own included: with n of them, the bottom and
 * the top quantile hold q = ceil(n * quantile_fraction) each, at most
 * floor(n / 2) (Ray Tune's rule). A trial in the bottom q exploits one of
 * the top q, drawn from (seed, trial number, milestone): it continues from
 * that trial's checkpoint of the step recorded there. Ranks go by value
 * (max metrics sign-flipped), ties by trial number; a value that is not
 * finite (a diverged run) ranks below every finite one, and only members
 * of the top q with a finite value give (none: nobody exploits there). So
 * every trial is compared with others at the same point of training, and
 * each is judged once per milestone, when it gets there.
 *
 * With synch (Ray's `synch=True`), a report at a milestone only records
 * (PBT_SYNC): the core pauses the trial there until every live member has
 * recorded at the milestone, then pbt_exploits ranks them all at once and
 * every member in the bottom q exploits one of the top q. The paper's toy
 * problem is synchronous; with few members the asynchronous rule judges
 * the first to arrive at a milestone against nobody.
 *
 * Trials are named by their 0-based number within the experiment. */
#ifndef RUNG_SERVER_PBT_H
#define RUNG_SERVER_PBT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct PbtParams {
    int64_t interval; /* perturbation_interval, steps, >= 1 */
    double quantile;  /* quantile_fraction, in (0, 0.5] */
    int64_t burn_in;  /* burn_in_period: no exploit before this step */
    int64_t max_t;    /* a report at this step or later completes the trial; 0: none */
    bool synch;       /* judge a milestone once every live member recorded there */
    bool maximize;    /* the metric's mode is max */
    uint64_t seed;    /* donor draws */
} PbtParams;

typedef enum {
    PBT_CONTINUE,
    PBT_COMPLETE, /* step >= max_t */
    PBT_EXPLOIT,  /* in the bottom quantile: continue from the donor's checkpoint */
    PBT_SYNC,     /* synch: recorded at *milestone; wait there for the others */
} PbtDecision;

/* A trial at a report: what a receiver needs of it as a donor later,
 * when the trial itself may have left memory. */
typedef struct PbtMember {
    int64_t number; /* 0-based within the experiment */
    int64_t id;     /* the trial's id */
    int64_t worker; /* the worker that ran it, whose disk has its checkpoint */
    int64_t step;   /* the report's step */
    json_t *config; /* the config that step was trained with (borrowed) */
} PbtMember;

typedef struct Pbt Pbt;

/* NULL when out of memory. */
Pbt *pbt_new(const PbtParams *params);
void pbt_free(Pbt *pbt);
const PbtParams *pbt_params(const Pbt *pbt);

/* The decision for a report of trial `self` (has: it carries the metric,
 * value its value, possibly NaN or infinite). A record keeps a reference to self->config.
 * On PBT_EXPLOIT, *donor is the donor's record at the milestone (its step
 * the checkpoint to copy; its config borrowed, valid while pbt is) and
 * *milestone the milestone's step. A report without the metric only
 * completes or continues. */
PbtDecision pbt_report(Pbt *pbt, const PbtMember *self, bool has, double value, PbtMember *donor,
                       int64_t *milestone);

/* synch: whether trial `number` has recorded at milestone step
 * `milestone`, or at a later one (its reports skipped this one). */
bool pbt_reached(const Pbt *pbt, int64_t number, int64_t milestone);

/* synch: the exploits of milestone step `milestone` (every member in the
 * bottom q of its records and its donor, drawn as pbt_report draws):
 * receivers[i] (trial numbers) takes donors[i] (configs borrowed); at most
 * cap of them; returns how many. */
int64_t pbt_exploits(Pbt *pbt, int64_t milestone, int64_t *receivers, PbtMember *donors,
                     int64_t cap);

/* PB2's data (sampler/pb2.h): for each trial with records at two
 * consecutive milestones and the same config at both (no exploit between:
 * an exploit changes the config), the change of its score over that
 * interval (higher is better), the config it trained with, and the later
 * milestone's step. At most cap of them, the latest milestones first;
 * configs borrowed. Returns how many. */
typedef struct PbtChange {
    const json_t *config;
    int64_t milestone;
    double change;
} PbtChange;
int64_t pbt_changes(const Pbt *pbt, PbtChange *out, int64_t cap);

/* A stored report replayed at start: records what pbt_report would have,
 * decides nothing. */
void pbt_load(Pbt *pbt, const PbtMember *self, bool has, double value);

/* A retried trial starts over: its records are forgotten. */
void pbt_forget(Pbt *pbt, int64_t number);

#endif
