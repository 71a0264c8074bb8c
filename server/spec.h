/* An experiment's spec: validation of the submitted JSON (docs/api.md,
 * "The experiment spec") into a struct. Pure: no I/O, no global state. */
#ifndef RUNG_SERVER_SPEC_H
#define RUNG_SERVER_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "asha.h"
#include "pbt.h"
#include "sampler.h"

#define SPEC_MAX_NAME 256     /* experiment names are labels, not documents */
#define SPEC_MAX_METRIC 64    /* a metric name is an identifier */
#define SPEC_MAX_FAILURES 100 /* more retries than this hides a broken trainable */
#define SPEC_MAX_ARGV 256     /* argv entries of a command trainable */
#define SPEC_MAX_ARG 4096     /* bytes of one argv entry, env value or cwd */
#define SPEC_MAX_ENV 256      /* env entries of a command trainable */
#define SPEC_MAX_ENV_NAME 256 /* bytes of an env variable's name: stored, so bounded */
#define SPEC_MAX_GPUS 64      /* GPUs per trial; no box has more */
#define SPEC_MAX_CPUS 4096    /* CPUs per trial */

/* Gangs (docs/api.md, "Gangs"). */
#define SPEC_MAX_NODES 64           /* workers of one gang: each holds a lease and a connection */
#define SPEC_MAX_GANG_WAIT_S 3600   /* gang_wait_s: an hour of held workers at most */
#define SPEC_GANG_WAIT_DEFAULT_S 60 /* gang_wait_s when absent */

typedef enum { SPEC_MODE_MIN, SPEC_MODE_MAX } SpecMode;

/* Several objectives and constraints (docs/api.md, "Several objectives",
 * "Constraints"). Beyond four objectives a Pareto front is most of the
 * trials and hypervolume costs grow exponentially; eight constraints cover
 * memory, latency, size and the like with room to spare. */
#define SPEC_MAX_OBJECTIVES 4
#define SPEC_MAX_CONSTRAINTS 8

typedef struct SpecObjective {
    const char *name; /* borrowed: the objective's key in reports */
    SpecMode mode;
} SpecObjective;

/* A bound on a reported metric: feasible when min <= value <= max. */
typedef struct SpecConstraint {
    const char *metric; /* borrowed: the metric's key in reports */
    bool has_min, has_max;
    double min, max; /* finite; min <= max when both are given */
} SpecConstraint;

/* What runs a trial: a program (command), rung-train (builtin), or HTTP
 * workers of the user's own (external: rung-worker never leases those). */
typedef enum {
    SPEC_TRAINABLE_EXTERNAL,
    SPEC_TRAINABLE_COMMAND,
    SPEC_TRAINABLE_BUILTIN
} SpecTrainable;
#define SPEC_TRAINABLE_BIT(t) (1u << (t)) /* LeaseOffer.trainables */

#define SPEC_MAX_PRIORITY 1000000       /* priority in [-SPEC_MAX_PRIORITY, SPEC_MAX_PRIORITY] */
#define SPEC_MAX_SHARE 1e6              /* share in (0, SPEC_MAX_SHARE] */
#define SPEC_MAX_SELECTOR 64            /* worker_selector entries */
#define SPEC_MAX_NOTIFY 8               /* notifiers an experiment picks */
#define SPEC_MAX_LABEL_KEY 64           /* bytes of a label's key */
#define SPEC_MAX_LABEL_VALUE 256        /* bytes of a label's value */
#define SPEC_MAX_POINTS 10000           /* points_to_evaluate entries */
#define SPEC_MAX_CONCURRENT 1000000     /* max_concurrent_trials */
#define SPEC_MAX_FAILED_TRIALS 10000000 /* max_failed_trials */
#define SPEC_MAX_TIME_BUDGET_S 1e9      /* stop.time_budget_s: about 31 years */
/* Tags and notes (docs/api.md, "Tags and notes"): enough to label a run
 * and write a page about it, small enough that a listing of 1,000
 * experiments with their tags stays a few hundred KiB. */
#define SPEC_MAX_TAGS 32     /* tags of an experiment or trial */
#define SPEC_MAX_TAG 64      /* bytes of one tag */
#define SPEC_MAX_NOTES 65536 /* bytes of notes */

/* keep_artifacts: which completed trials' folders rungd keeps. */
typedef enum { SPEC_KEEP_BEST = 0, SPEC_KEEP_NONE, SPEC_KEEP_ALL } SpecKeep;
#define SPEC_MAX_KEEP 1000 /* keep_artifacts {"best": N} */

typedef struct Spec {
    const char *name;   /* borrowed from the spec JSON */
    const char *metric; /* borrowed: the objective's key in reports (the first's) */
    SpecMode mode;      /* the first objective's */
    int n_objectives;   /* 1 (metric/mode) .. SPEC_MAX_OBJECTIVES (metrics) */
    SpecObjective objectives[SPEC_MAX_OBJECTIVES];
    int n_constraints; /* 0 .. SPEC_MAX_CONSTRAINTS */
    SpecConstraint constraints[SPEC_MAX_CONSTRAINTS];
    Space *space; /* owned */
    SearcherSpec searcher;
    AshaParams sched; /* the scheduler; seed = the searcher's (fifo for pbt) */
    /* scheduler "pbt" (docs/schedulers.md, "pbt"): its rule, the
     * hyperparam_mutations as a space of their own (owned), and
     * resample_probability. */
    bool is_pbt;
    bool is_pb2; /* pb2: PB2 chooses the explored values (sampler/pb2.h) */
    PbtParams pbt;
    Space *mutations;
    json_t *mutations_json; /* owned: those domains as a search space, for pb2's explore
                               on the proposer thread (sched_explore.h) */
    double pbt_resample;
    const char *time_attr;  /* borrowed: report field counting progress */
    int64_t num_samples;    /* >= 1 */
    int64_t total_trials;   /* grid combinations x num_samples */
    int64_t max_concurrent; /* 0 = no limit */
    int64_t max_failures;   /* retries of one trial, 0..SPEC_MAX_FAILURES */
    int64_t cpus;           /* per trial, per node */
    int64_t gpus;           /* per trial, per node */
    int64_t nodes;          /* workers that run each trial together, 1..SPEC_MAX_NODES */
    double gang_wait_s;     /* how long holds wait for a gang to form, 1..SPEC_MAX_GANG_WAIT_S */
    SpecTrainable trainable;
    /* Where a command trainable's code and interpreter come from (docs/api.md,
     * "trainable"): each "" when the spec names none. */
    char working_dir[65];       /* the blob's SHA-256, 64 lowercase hex digits */
    char environment[65];       /* a name the worker maps to an interpreter */
    bool container;             /* runs inside trainable.container's image */
    char container_runtime[16]; /* podman, docker or apptainer; "": any */
    /* Which trials' folders come back (docs/api.md, "keep_artifacts"). */
    SpecKeep keep_artifacts;
    int64_t keep_count; /* SPEC_KEEP_BEST: how many */
    /* The admin's notifiers this experiment's events go to (docs/api.md,
     * "notify"), borrowed from json; NULL: every notifier whose events
     * match. rungd checks the names against its --notify-file at submit. */
    const json_t *notify;
    /* Failures that show (docs/api.md, "Top-level fields"). */
    int64_t max_failed_trials; /* the experiment fails after this many failed trials; 0 = never */
    bool best_last;            /* best_scope "last": a trial counts by its last value */
    /* Sharing workers. */
    int64_t priority;        /* higher is leased first; default 0 */
    double share;            /* fair share weight; default 1 */
    json_t *worker_selector; /* borrowed from json: labels a worker must carry, or NULL */
    /* Seeding the search. */
    json_t *points;         /* borrowed from json: points_to_evaluate (validated), or NULL */
    int64_t warm_start_exp; /* warm_start.experiment; 0 = none */
    /* Stop rules (the "stop" object); 0 / false = the rule is off. */
    double stop_time_budget_s;
    bool has_stop_threshold;
    double stop_threshold; /* a value at least this good ends the search */
    int64_t stop_patience; /* finished trials without a better best */
    json_t *json;          /* owned: the spec with defaults filled in, without tags and notes */
    /* What people say about it (spec_meta.c): kept apart from json, since
     * PATCH changes them on experiments of any state and they are stored
     * in columns of their own (schema 015). */
    json_t *tags;    /* owned: an array of distinct tags (spec_tag_ok), [] by default */
    json_t *notes;   /* owned: a string of at most SPEC_MAX_NOTES bytes, "" by default */
    char *submitted; /* owned: the POSTed body as compact JSON until stored, or NULL */
} Spec;

/* Validates spec_json and fills spec. Errors are RUNG_E_INVALID_SPEC (or
 * RUNG_E_BAD_JSON when the body is no object) with the field's path; a spec
 * nested deeper than JSONV_MAX_DEPTH (jsonv.h) is refused, naming the first
 * value too deep, and so is null for any string field ("name": null). When
 * the searcher has no seed, `seed` is used and written into spec->json.
 * On success free with spec_close; on failure nothing is left to free. */
int spec_parse(const json_t *spec_json, uint64_t seed, Spec *spec, RungError *err);

/* spec_parse for a spec read back from the store (its seed column as seed).
 * The checks added after specs were first stored are relaxed, so that a
 * spec an earlier rungd accepted never stops a later one from starting: a
 * null name, searcher.type, trainable.cwd, .model or .dataset counts as
 * absent (the default is filled in: a null name becomes "experiment"), an
 * absent or null trainable is {"type": "external"} (written in), a
 * search_space parameter that is an object without "type" is the constant
 * it always was, and neither the depth bound nor SPEC_MAX_ENV_NAME applies
 * (what SQLite stored was within its own depth limit). The spec->json of
 * every spec that spec_parse or spec_load accepted is accepted by both
 * again, and gives the same spec->json (tests/fuzz/fuzz_spec.c checks it);
 * the one exception is a stored nested-object parameter, which only
 * spec_load accepts. */
int spec_load(const json_t *stored, uint64_t seed, Spec *spec, RungError *err);
void spec_close(Spec *spec);

/* Whether name may name an environment (trainable.environment, and the
 * environments of POST /api/v1/workers): 1 ... 64 bytes of [A-Za-z0-9_.-],
 * the first a letter or digit. */
static inline bool spec_environment_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
            return false;
    }
    return true;
}

/* Whether key may name a worker label (worker_selector, and the labels of
 * POST /api/v1/workers): 1 ... SPEC_MAX_LABEL_KEY bytes of [A-Za-z0-9_./-]. */
static inline bool spec_label_key_ok(const char *key)
{
    size_t len = strlen(key);
    if (len == 0 || len > SPEC_MAX_LABEL_KEY)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = key[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-' || c == '/'))
            return false;
    }
    return true;
}

/* Whether s (len bytes) may be a tag: 1 ... SPEC_MAX_TAG bytes of valid,
 * printable UTF-8 (no control character) without a comma. */
bool spec_tag_ok(const char *s, size_t len);
/* Checks v as field's tags (an array of at most SPEC_MAX_TAGS distinct
 * tags) or notes (a string of at most SPEC_MAX_NOTES bytes without NUL);
 * errors have code and name the field ("tags[3]"). *out is new (free
 * with json_decref). */
int spec_tags_parse(const json_t *v, const char *field, int code, json_t **out, RungError *err);
int spec_notes_parse(const json_t *v, const char *field, int code, json_t **out, RungError *err);
/* The "tags" and "notes" of a PATCH body, checked (RUNG_E_INVALID_ARGUMENT
 * naming the field); each *out is new, or NULL when the body has none. */
int spec_meta_patch(const json_t *body, json_t **tags, json_t **notes, RungError *err);
/* Replaces spec's tags and notes by those given (stolen; NULL: keep). */
void spec_set_meta(Spec *spec, json_t *tags, json_t *notes);

/* PATCH /api/v1/experiments/{id}: {"num_samples", "priority",
 * "max_concurrent_trials", "share"}, every key optional, no other key.
 * Checks every value first (errors name the field, RUNG_E_INVALID_ARGUMENT;
 * num_samples below min_num_samples is refused); then applies them to spec
 * and spec->json (total_trials follows num_samples). On error spec is
 * unchanged. */
int spec_patch(Spec *spec, const json_t *patch, int64_t min_num_samples, RungError *err);

/* The objective of a report: sign-adjusted so that lower is better. */
static inline double spec_loss(const Spec *spec, double value)
{
    return spec->mode == SPEC_MODE_MIN ? value : -value;
}

/* A trial's objective values from one report (metrics, borrowed), each
 * sign-adjusted so that lower is better: true when the report carries every
 * objective as a number (possibly not finite). */
bool spec_losses(const Spec *spec, const json_t *metrics, double loss[SPEC_MAX_OBJECTIVES]);

/* Whether a report satisfies every constraint: a constraint metric the
 * report lacks, or that is not a finite number, violates its constraint
 * (docs/api.md, "Constraints"). True when the spec has no constraints. */
bool spec_feasible(const Spec *spec, const json_t *metrics);

/* The constraints of a report as values g that are <= 0 when satisfied,
 * one per bound in spec order (a constraint with min and max gives
 * min - value, then value - max): NaN where the report lacks the metric or
 * it is not finite. Returns how many (at most 2 x SPEC_MAX_CONSTRAINTS). */
int spec_constraint_values(const Spec *spec, const json_t *metrics, double *g);

/* How many values spec_constraint_values gives. */
int spec_constraint_count(const Spec *spec);

#endif
