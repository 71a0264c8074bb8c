/* An experiment's spec: validation of the submitted JSON (docs/api.md,
 * "The experiment spec") into a struct. Pure: no I/O, no global state. */
#ifndef RUNG_SERVER_SPEC_H
#define RUNG_SERVER_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "asha.h"
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

typedef enum { SPEC_MODE_MIN, SPEC_MODE_MAX } SpecMode;

typedef struct Spec {
    const char *name;   /* borrowed from the spec JSON */
    const char *metric; /* borrowed: the objective's key in reports */
    SpecMode mode;
    Space *space; /* owned */
    SearcherSpec searcher;
    AshaParams sched;       /* the scheduler; seed = the searcher's */
    const char *time_attr;  /* borrowed: report field counting progress */
    int64_t num_samples;    /* >= 1 */
    int64_t total_trials;   /* grid combinations x num_samples */
    int64_t max_concurrent; /* 0 = no limit */
    int64_t max_failures;   /* retries of one trial, 0..SPEC_MAX_FAILURES */
    int64_t cpus;           /* per trial */
    int64_t gpus;           /* per trial */
    json_t *json;           /* owned: the spec with defaults filled in */
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
 * absent (the default is filled in: a null name becomes "experiment"), and
 * neither the depth bound nor SPEC_MAX_ENV_NAME applies (what SQLite stored
 * was within its own depth limit). The spec->json of every spec that
 * spec_parse or spec_load accepted is accepted by both again, and gives the
 * same spec->json (tests/fuzz/fuzz_spec.c checks it). */
int spec_load(const json_t *stored, uint64_t seed, Spec *spec, RungError *err);
void spec_close(Spec *spec);

/* The objective of a report: sign-adjusted so that lower is better. */
static inline double spec_loss(const Spec *spec, double value)
{
    return spec->mode == SPEC_MODE_MIN ? value : -value;
}

#endif
