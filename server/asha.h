/* Early stopping: the decision at each report. Pure: no I/O, no clock, no
 * global state; every draw comes from the seed. One Asha per experiment.
 *
 * Four rules (docs/api.md, "scheduler"):
 * - ASHA_ASHA: Ray Tune's ASHAScheduler. Bracket s has rungs at
 *   grace_period * rf^(k+s), k = 0 .. floor(log(max_t/grace_period)/log(rf)) - s.
 *   A trial joins a bracket drawn from (seed, trial number) with weights
 *   softmax(rung count). At a report, the highest rung the trial has reached
 *   but not yet been scored at records the value; the cutoff is the
 *   (1 - 1/rf) quantile (numpy's linear interpolation) of the values recorded
 *   there before, sign-flipped for `min` so that higher is better; a value
 *   strictly below the cutoff stops the trial. A report with time >= max_t
 *   completes it, unless open_end (the spec's "end_at_max_t": false): then
 *   max_t only bounds the rungs and the program's own end ends the trial,
 *   as in W&B's hyperband (docs/schedulers.md). When a trial ends
 *   (completed or stopped), its last result is recorded once more at the
 *   highest rung it reached but was not scored at, as Ray's
 *   on_trial_complete does.
 * - ASHA_HYPERBAND: the same with every bracket, floor(log_rf(max_t/grace)) + 1.
 * - ASHA_ASHA with promote: the paper's algorithm (Li et al., MLSys 2020).
 *   A trial that reaches a rung pauses there unless it ranks in the top
 *   floor(n/rf) of the n values recorded at that rung; paused trials are
 *   promoted (resumed from their checkpoint) as soon as they rank there.
 * - ASHA_MEDIAN: Ray's MedianStoppingRule: from time >= grace_period on, stop
 *   a trial whose best value so far is strictly worse than the median of the
 *   other trials' running means up to the same time, when at least
 *   min_samples other trials have reported that far. (An other trial with
 *   no result in [grace_period, time] has no mean and is left out; Ray's
 *   would be NaN, which stops every trial compared with it.)
 *
 * Several objectives (objectives >= 2; asha without promote, and hyperband;
 * docs/schedulers.md, "Several objectives"): a rung's records are ranked as
 * NSGA-II ranks a population (Deb et al. 2002): feasible records before
 * infeasible ones, then by non-dominated sorting, then by crowding distance
 * (larger first), each computed within the feasible and the infeasible
 * records apart (sampler/pareto.h; a tie in an objective's order goes by
 * trial number, so that the ranking does not depend on the order of
 * arrival). The record just made continues when
 * fewer than ceil(n/rf) of the n records there (its own included) rank
 * strictly above it; so the first trial at a rung continues, and ties go to
 * the trial being judged, as a tie with the cutoff does for one objective.
 *
 * Trials are named by their 0-based number within the experiment. A report
 * without the metric (has_value false) is never stopped. */
#ifndef RUNG_SERVER_ASHA_H
#define RUNG_SERVER_ASHA_H

#include <stdbool.h>
#include <stdint.h>

#define ASHA_MAX_RUNGS 64 /* rungs per bracket; spec validation keeps within it */
#define ASHA_MAX_BRACKETS ASHA_MAX_RUNGS
#define ASHA_MAX_OBJECTIVES 4 /* spec.h's SPEC_MAX_OBJECTIVES */

typedef enum { ASHA_FIFO, ASHA_ASHA, ASHA_HYPERBAND, ASHA_MEDIAN } AshaType;

typedef struct AshaParams {
    AshaType type;
    bool maximize;        /* the metric's mode is max */
    double max_t;         /* asha, hyperband: time that completes a trial */
    double grace_period;  /* asha, hyperband: the first rung; median: no stop before */
    double rf;            /* asha, hyperband: reduction factor, > 1 */
    int brackets;         /* asha: 1 .. asha_max_brackets(); hyperband: set by asha_new */
    bool promote;         /* asha: pause at rungs and promote (the paper's ASHA) */
    bool open_end;        /* asha: max_t only bounds the rungs ("end_at_max_t": false); zero,
                             the default, keeps Ray's rule */
    bool budget_brackets; /* "allocation": "budget": brackets drawn in proportion to Li et
                             al.'s bracket sizes (Optuna's); zero, the default, Ray's softmax */
    int64_t min_samples;  /* median: other trials needed at the same time */
    uint64_t seed;        /* bracket draws */
    int objectives;       /* 0 or 1: one (the value); 2 .. ASHA_MAX_OBJECTIVES: AshaPoints */
} AshaParams;

/* One report's objectives when there are several. */
typedef struct AshaPoint {
    double loss[ASHA_MAX_OBJECTIVES]; /* each objective, finite, lower is better (max negated) */
    bool feasible;                    /* no constraint violated in this report */
} AshaPoint;

typedef enum {
    ASHA_CONTINUE,
    ASHA_STOP,     /* below the cutoff: the trial ends as stopped */
    ASHA_COMPLETE, /* time >= max_t (unless open_end): the trial ends as completed */
    ASHA_PAUSE,    /* promote: paused at its rung until promoted */
} AshaDecision;

typedef struct Asha Asha;

/* How many brackets params allow: floor(log(max_t/grace_period)/log(rf)) + 1. */
int asha_max_brackets(const AshaParams *p);
/* The rungs of bracket b, ascending, into milestones; returns their count. */
int asha_rungs(const AshaParams *p, int b, double milestones[ASHA_MAX_RUNGS]);
/* The bracket trial number `trial` joins (pure: seed and number only). */
int asha_bracket(const AshaParams *p, int64_t trial);

Asha *asha_new(const AshaParams *p); /* NULL on OOM */
void asha_free(Asha *a);
const AshaParams *asha_params(const Asha *a);

/* A report of `trial` at `time` (the time_attr's value). *rung gets the
 * rung index (within the trial's bracket) that judged it, or -1. A paused
 * trial that reports again has been resumed. */
AshaDecision asha_report(Asha *a, int64_t trial, double time, bool has_value, double value,
                         int *rung);

/* The same with several objectives: pt (borrowed) is the report's point,
 * NULL when it lacks one. With objectives < 2, or under median, the first
 * objective is the value. */
AshaDecision asha_report_point(Asha *a, int64_t trial, double time, const AshaPoint *pt, int *rung);
void asha_replay_point(Asha *a, int64_t trial, double time, const AshaPoint *pt);
void asha_trial_end_point(Asha *a, int64_t trial, double time, const AshaPoint *pt);

/* Loading: records a stored report as asha_report did, deciding nothing
 * (rung records depend on each trial's own reports only, so replaying the
 * trials one after the other rebuilds them exactly). */
void asha_replay(Asha *a, int64_t trial, double time, bool has_value, double value);

/* The trial ended as completed or stopped; its last report was (time, value).
 * Records as Ray's on_trial_complete does; decides nothing. */
void asha_trial_end(Asha *a, int64_t trial, double time, bool has_value, double value);

/* The trial starts again from scratch (a retry): what it recorded is forgotten. */
void asha_trial_reset(Asha *a, int64_t trial);

/* The trial ended for good (completed, stopped or failed, its end recorded)
 * and leaves the daemon's memory: its per-trial entry goes. What later
 * decisions read of it stays: its rung records (asha, hyperband), and under
 * median its results from grace_period on (one time and one value each: a
 * running mean reads nothing before grace_period) with the time of its last
 * result. Decisions are those of an Asha that kept the entry; a forgotten
 * trial that reports again starts with no rung recorded, and
 * asha_trial_reset still drops what it left. */
void asha_trial_forget(Asha *a, int64_t trial);

/* How many trials have an entry (not forgotten): the trials in flight, once
 * the ended ones are forgotten. */
int64_t asha_trials_held(const Asha *a);

/* promote: marks a trial (loaded from the store in state paused) as paused
 * at rung index `rung` of its bracket, or, with -1 or a rung it has no value
 * at, at the highest rung it recorded a value at. */
void asha_trial_paused(Asha *a, int64_t trial, int rung);

/* The rung index of `milestone` in trial's bracket, or -1. */
int asha_rung_index(const Asha *a, int64_t trial, double milestone);

/* promote: the paused trials that rank in the top floor(n/rf) of their rung
 * now, highest rung first, then best value, then lowest number, at most cap
 * of them. They count as promoted from here on. Returns how many. */
int64_t asha_promotions(Asha *a, int64_t *trials, int64_t cap);

/* promote, when nothing runs and no new trial is left to start: the paused
 * trial to promote anyway, counted as promoted: of the paused trials that
 * rank in the top ceil(n/rf) of their rung, the one at the highest rung,
 * then best, then lowest number. -1 when none qualifies: the paused trials
 * should then end as stopped. */
int64_t asha_endgame(Asha *a);

/* The rung a paused trial waits at (its index in the bracket), or -1. */
int asha_paused_rung(const Asha *a, int64_t trial);

/* One value a rung recorded: what bayes's multi-fidelity model learns from
 * (sampler/bayes.h, BayesRungRecord). */
typedef struct AshaRecord {
    int64_t trial;
    double milestone;
    double loss; /* the value, negated for a max metric: lower is better */
} AshaRecord;

/* With one objective, asha or hyperband: every record of every rung (a
 * trial's records at the rungs it reached), bracket by bracket, rung by
 * rung, in arrival order, into out[0 .. cap-1]. Returns how many there
 * are (more than cap: call again with room); 0 for fifo and median. */
int64_t asha_records(const Asha *a, AshaRecord *out, int64_t cap);

#endif
