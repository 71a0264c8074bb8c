/* The JSON shapes of trials and experiments as the API shows them
 * (docs/api.md), built from plain values: one builder whether the object
 * is in memory (core.h) or read back from the store (store_read.h), so the
 * two can never disagree. */
#ifndef RUNG_SERVER_VIEWS_H
#define RUNG_SERVER_VIEWS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core.h"

typedef struct TrialView {
    int64_t id, exp_id, number;
    TrialState state;
    const json_t *config;
    int64_t attempt, worker_id; /* worker 0: never leased */
    bool has_step;
    int64_t step;
    const json_t *last; /* or NULL */
    bool has_best;
    double best_value;
    int64_t best_step;
    const char *error;    /* or NULL */
    double rung;          /* 0: none */
    int bracket;          /* -1: the scheduler has none */
    const char *log_tail; /* or NULL */
    int64_t created_at, started_at, ended_at;
    StoppedBy stopped_by;   /* a stopped trial's */
    bool user_paused;       /* a paused trial's */
    int64_t preemptions;    /* times its worker gave it back, >= 0 */
    int64_t worker_losses;  /* attempts that ended with its worker lost, >= 0 */
    const json_t *warnings; /* or NULL: none */
    const json_t *info;     /* the last values that are not numbers, or NULL: none */
    const json_t *tags;     /* an array of strings, or NULL: [] (schema 015) */
    const char *notes;      /* or NULL: "" */
    const json_t *lineage;  /* pbt's exploits (an array), or NULL: none */
    int64_t nodes;          /* resources_per_trial.nodes: workers per attempt */
    const json_t *gang;     /* its gang as stored (gang_members.h), or NULL: none formed */
    const Spec *spec;       /* its experiment's, or NULL: unknown (no values, no feasible) */
} TrialView;

typedef struct ExperimentView {
    int64_t id;
    const json_t *spec; /* the stored spec (defaults filled in) */
    ExpState state;
    int64_t created_at, ended_at, total_trials;
    int64_t counts[TRIAL__COUNT];
    BestRef best;
    json_t *pareto; /* owned by the view's maker: several objectives' front, or NULL */
    EndReason ended_reason;
    const char *error;  /* or NULL */
    const char *owner;  /* who submitted it, or NULL (before schema 13) */
    const json_t *tags; /* an array of strings, or NULL: [] (schema 015) */
    const char *notes;  /* or NULL: "" */
} ExperimentView;

json_t *view_trial(const TrialView *v);
/* A gang's public form, {"members": [{"rank", "worker_id"}], "master_addr",
 * "master_port"}, from its stored one (gang_members.h; borrowed): no tokens. */
json_t *view_gang(const json_t *stored);
json_t *view_experiment(const ExperimentView *v);

/* The views of what is in memory. out->pareto is a new reference (free
 * with json_decref). */
void view_of_trial(const Trial *t, TrialView *out);
void view_of_experiment(const Experiment *x, ExperimentView *out);

/* An event of the log as docs/api.md's "Events" shows it. */
json_t *view_event(const CoreEvent *ev);

/* Times as the API writes them (RFC 3339, UTC), null for 0. */
json_t *view_time(int64_t ms);
/* A metric value: a number, or "NaN" / "Infinity" / "-Infinity". */
json_t *view_value(double v);

#endif
