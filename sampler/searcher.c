/* The searchers' spec, the trial count, and the config of trial n.
 *
 * Grid semantics are Ray Tune's: the enumerated parameters form a cartesian
 * product of G combinations that is repeated num_samples times, trial n
 * taking combination n mod G in repetition n / G. The combinations are
 * numbered as Ray does (parameters sorted by path, the first fastest), or
 * as rungd did before for experiments stored then (GridOrder).
 * The random searcher enumerates only "grid" parameters and draws the rest;
 * the grid searcher enumerates every parameter. Nothing here keeps state, so
 * a config is a pure function of (space, searcher, n). */
#include "sampler_internal.h"

#include <stdio.h>
#include <string.h>

#include "auto.h"
#include "cmaes.h"
#include "jsonv.h"

#define INVALID RUNG_E_INVALID_SPEC

/* Seeds go up to 2^53 so that they survive a trip through a JSON double. */
#define SEARCHER_MAX_SEED (INT64_C(1) << 53)

static const char *const SEARCHER_KEYS[] = {"type",          "seed",           "quasi",
                                            "n_initial",     "multi_fidelity", "grid_order",
                                            "noisy",         "sigma0",         "popsize",
                                            "restart",       "multivariate",   "group",
                                            "constant_liar", "switch_after",   NULL};

bool searcher_uses_history(SearcherType type)
{
    return type == SEARCHER_BAYES || type == SEARCHER_CMAES || type == SEARCHER_TPE ||
           type == SEARCHER_AUTO;
}

/* tpe's booleans (docs/api.md, "searcher"): each defaults to true, and only
 * tpe takes them. group joins kernels, so it needs multivariate. */
static int parse_tpe_flags(const json_t *searcher, SearcherSpec *out, RungError *err)
{
    static const char *const names[] = {"multivariate", "group", "constant_liar"};
    bool *flags[] = {&out->multivariate, &out->group, &out->constant_liar};
    for (int i = 0; i < 3; i++) {
        char field[RUNG_FIELD_MAX];
        snprintf(field, sizeof field, "searcher.%s", names[i]);
        const json_t *v = json_object_get(searcher, names[i]);
        if (v != NULL && out->type != SEARCHER_TPE)
            return rung_error_set(err, INVALID, field, "%s: only the tpe searcher takes %s", field,
                                  names[i]);
        *flags[i] = out->type == SEARCHER_TPE;
        int rc = jsonv_bool(searcher, "searcher", names[i], JSONV_OPTIONAL, flags[i], INVALID, err);
        if (rc != 0)
            return rc;
    }
    if (out->group && !out->multivariate) {
        if (json_object_get(searcher, "group") != NULL)
            return rung_error_set(
                err, INVALID, "searcher.group",
                "searcher.group: needs multivariate (groups are sampled jointly)");
        out->group = false;
    }
    return 0;
}

/* The cmaes searcher's fields (docs/api.md, "searcher"): sigma0 in cube
 * units, popsize, restart; other searchers refuse them. */
static int parse_cmaes(const json_t *searcher, SearcherSpec *out, RungError *err)
{
    static const char *const keys[] = {"sigma0", "popsize", "restart"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        if (out->type != SEARCHER_CMAES && json_object_get(searcher, keys[i]) != NULL) {
            char field[RUNG_FIELD_MAX];
            jsonv_path(field, sizeof field, "searcher", keys[i]);
            return rung_error_set(err, INVALID, field, "%s: only the cmaes searcher takes %s",
                                  field, keys[i]);
        }
    }
    if (out->type != SEARCHER_CMAES)
        return 0;
    double sigma0 = 0;
    int rc = jsonv_number(searcher, "searcher", "sigma0", JSONV_OPTIONAL, &sigma0, INVALID, err);
    if (rc != 0)
        return rc;
    if (json_object_get(searcher, "sigma0") != NULL && !(sigma0 > 0 && sigma0 <= 1))
        return rung_error_set(err, INVALID, "searcher.sigma0",
                              "searcher.sigma0: must be > 0 and <= 1 (the unit cube's width)");
    out->sigma0 = sigma0;
    int64_t popsize = 0;
    rc = jsonv_int(searcher, "searcher", "popsize", JSONV_OPTIONAL, 2, CMAES_MAX_POPSIZE, &popsize,
                   INVALID, err);
    if (rc != 0)
        return rc;
    out->popsize = (int)popsize;
    const char *restart = "ipop";
    rc = jsonv_string(searcher, "searcher", "restart", JSONV_OPTIONAL, 16, &restart, INVALID, err);
    if (rc != 0)
        return rc;
    if (strcmp(restart, "none") == 0)
        out->no_restart = true;
    else if (strcmp(restart, "ipop") != 0)
        return rung_error_set(err, INVALID, "searcher.restart",
                              "searcher.restart: unknown restart \"%s\" (ipop or none)", restart);
    return 0;
}

/* Fails on the first parameter the grid searcher cannot enumerate. */
static int check_enumerable(const Space *space, RungError *err)
{
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (space__enum_count(p) > 0)
            continue;
        char path[RUNG_FIELD_MAX];
        char field[RUNG_FIELD_MAX];
        jsonv_path(path, sizeof path, "search_space", p->name);
        jsonv_path(field, sizeof field, path, "grid_points");
        if (p->count > 0)
            return rung_error_set(err, INVALID, field,
                                  "%s: the grid searcher needs grid_points for an integer "
                                  "domain of %lld values (at most %d are enumerated)",
                                  path, (long long)p->count, SPACE_MAX_GRID_POINTS);
        return rung_error_set(err, INVALID, field,
                              "%s: the grid searcher needs grid_points for a continuous domain",
                              path);
    }
    return 0;
}

int searcher_parse(const json_t *searcher, const Space *space, SearcherSpec *out, RungError *err)
{
    memset(out, 0, sizeof *out);
    out->type = SEARCHER_RANDOM;
    int dims = space->dims;
    if (searcher == NULL || json_is_null(searcher))
        return 0;
    int rc = jsonv_object(searcher, "searcher", INVALID, err);
    if (rc == 0)
        rc = jsonv_only_keys(searcher, "searcher", SEARCHER_KEYS, INVALID, err);
    const char *type = "random";
    if (rc == 0)
        rc = jsonv_string(searcher, "searcher", "type", JSONV_OPTIONAL, 16, &type, INVALID, err);
    if (rc != 0)
        return rc;
    if (strcmp(type, "random") == 0)
        out->type = SEARCHER_RANDOM;
    else if (strcmp(type, "grid") == 0)
        out->type = SEARCHER_GRID;
    else if (strcmp(type, "bayes") == 0)
        out->type = SEARCHER_BAYES;
    else if (strcmp(type, "cmaes") == 0)
        out->type = SEARCHER_CMAES;
    else if (strcmp(type, "tpe") == 0)
        out->type = SEARCHER_TPE;
    else if (strcmp(type, "auto") == 0)
        out->type = SEARCHER_AUTO;
    else
        return rung_error_set(err, INVALID, "searcher.type",
                              "searcher.type: unknown searcher \"%s\" (random, grid, bayes, "
                              "cmaes, tpe or auto)",
                              type);

    int64_t seed = -1;
    rc = jsonv_int(searcher, "searcher", "seed", JSONV_OPTIONAL, 0, SEARCHER_MAX_SEED, &seed,
                   INVALID, err);
    if (rc != 0)
        return rc;
    /* Without a seed the caller draws one and stores it with the experiment. */
    out->has_seed = seed >= 0;
    out->seed = out->has_seed ? (uint64_t)seed : 0;

    const json_t *quasi = json_object_get(searcher, "quasi");
    if (quasi != NULL && out->type != SEARCHER_RANDOM)
        return rung_error_set(err, INVALID, "searcher.quasi",
                              "searcher.quasi: only the random searcher takes quasi");
    rc = jsonv_bool(searcher, "searcher", "quasi", JSONV_OPTIONAL, &out->quasi, INVALID, err);
    if (rc != 0)
        return rc;
    if (out->quasi && dims > SOBOL_MAX_DIMS)
        return rung_error_set(err, INVALID, "searcher.quasi",
                              "searcher.quasi: Sobol points have at most %d dimensions, the "
                              "search space samples %d parameters",
                              SOBOL_MAX_DIMS, dims);

    const json_t *n_initial = json_object_get(searcher, "n_initial");
    if (n_initial != NULL && out->type != SEARCHER_BAYES && out->type != SEARCHER_TPE &&
        out->type != SEARCHER_AUTO)
        return rung_error_set(err, INVALID, "searcher.n_initial",
                              "searcher.n_initial: only the bayes, tpe and auto searchers take "
                              "n_initial");
    if (out->type == SEARCHER_TPE) {
        out->n_initial = 10; /* Optuna's n_startup_trials (docs/api.md) */
        rc = jsonv_int(searcher, "searcher", "n_initial", JSONV_OPTIONAL, 1, SAMPLER_MAX_TRIALS,
                       &out->n_initial, INVALID, err);
        if (rc != 0)
            return rc;
    }
    rc = parse_tpe_flags(searcher, out, err);
    if (rc != 0)
        return rc;
    if (out->type == SEARCHER_BAYES || out->type == SEARCHER_AUTO) {
        out->n_initial = 2 * (int64_t)dims > 5 ? 2 * (int64_t)dims : 5; /* docs/api.md default */
        rc = jsonv_int(searcher, "searcher", "n_initial", JSONV_OPTIONAL, 1, SAMPLER_MAX_TRIALS,
                       &out->n_initial, INVALID, err);
        if (rc != 0)
            return rc;
    }
    out->multi_fidelity = -1;
    const json_t *mf = json_object_get(searcher, "multi_fidelity");
    if (mf != NULL && out->type != SEARCHER_BAYES && out->type != SEARCHER_TPE)
        return rung_error_set(err, INVALID, "searcher.multi_fidelity",
                              "searcher.multi_fidelity: only the bayes and tpe searchers take "
                              "multi_fidelity");
    if (mf != NULL) {
        bool on = false;
        rc = jsonv_bool(searcher, "searcher", "multi_fidelity", JSONV_OPTIONAL, &on, INVALID, err);
        if (rc != 0)
            return rc;
        out->multi_fidelity = on;
    }
    rc = jsonv_bool(searcher, "searcher", "noisy", JSONV_OPTIONAL, &out->noisy, INVALID, err);
    if (rc != 0)
        return rc;
    if (json_object_get(searcher, "switch_after") != NULL && out->type != SEARCHER_AUTO)
        return rung_error_set(err, INVALID, "searcher.switch_after",
                              "searcher.switch_after: only the auto searcher takes switch_after");
    out->switch_after = AUTO_GP_MAX_OBS;
    rc = jsonv_int(searcher, "searcher", "switch_after", JSONV_OPTIONAL, 1, SAMPLER_MAX_TRIALS,
                   &out->switch_after, INVALID, err);
    if (rc != 0)
        return rc;
    rc = parse_cmaes(searcher, out, err);
    if (rc != 0)
        return rc;
    const char *order = "ray";
    rc = jsonv_string(searcher, "searcher", "grid_order", JSONV_OPTIONAL, 16, &order, INVALID, err);
    if (rc != 0)
        return rc;
    if (strcmp(order, "spec") == 0)
        out->grid_order = GRID_ORDER_SPEC;
    else if (strcmp(order, "ray") != 0)
        return rung_error_set(err, INVALID, "searcher.grid_order",
                              "searcher.grid_order: unknown order \"%s\" (ray or spec)", order);
    if (out->type == SEARCHER_GRID)
        return check_enumerable(space, err);
    return 0;
}

/* Number of combinations the searcher enumerates, saturated at
 * SAMPLER_MAX_TRIALS + 1 (the grid searcher's product can be astronomical);
 * 0 when some parameter cannot be enumerated. */
static int64_t combinations(const Space *space, const SearcherSpec *searcher)
{
    if (searcher->type != SEARCHER_GRID)
        return space->grid_size;
    return space__grid_combinations(space);
}

int sampler_total_trials(const Space *space, const SearcherSpec *searcher, int64_t num_samples,
                         int64_t *out, RungError *err)
{
    *out = 0;
    if (num_samples < 1)
        return rung_error_set(err, INVALID, "num_samples", "num_samples: must be >= 1");
    if (searcher->type == SEARCHER_GRID) {
        int rc = check_enumerable(space, err);
        if (rc != 0)
            return rc;
    }
    int64_t g = combinations(space, searcher);
    if (g > SAMPLER_MAX_TRIALS / num_samples)
        return rung_error_set(err, INVALID, "num_samples",
                              "num_samples: %lld samples of %s%lld grid combinations are more "
                              "than %lld trials",
                              (long long)num_samples, g > SAMPLER_MAX_TRIALS ? "over " : "",
                              (long long)(g > SAMPLER_MAX_TRIALS ? SAMPLER_MAX_TRIALS : g),
                              SAMPLER_MAX_TRIALS);
    *out = g * num_samples;
    return 0;
}

json_t *sampler_config(const Space *space, const SearcherSpec *searcher, int64_t number)
{
    bool all = searcher->type == SEARCHER_GRID;
    int64_t g = combinations(space, searcher);
    if (number < 0 || g < 1 || g > SAMPLER_MAX_TRIALS)
        return NULL;
    int64_t combo = number % g;
    int64_t rep = number / g;

    /* Mixed radix over the enumerated parameters, in the searcher's order. */
    int64_t idx[SPACE_MAX_PARAMS];
    if (all) {
        space__grid_decode(space, searcher->grid_order, combo, idx);
        return space__build(space, NULL, idx);
    }
    space__grid_indices(space, searcher->grid_order, combo, idx);

    double u[SPACE_MAX_PARAMS];
    int dims = space->dims;
    /* bayes starts from Sobol points too, where there are enough dimensions. */
    bool quasi = searcher->type == SEARCHER_RANDOM ? searcher->quasi : dims <= SOBOL_MAX_DIMS;
    if (dims > 0 && quasi) {
        /* Each grid combination gets its own shifted sequence and walks it
         * with the repetition index: every k-th point of one shared sequence
         * (k = G) would not be spread at all when k is a power of two. */
        if (sampler__sobol_point((uint64_t)rep, dims, searcher->seed, (uint64_t)combo, u) != 0)
            return NULL;
    } else {
        for (int j = 0; j < dims; j++)
            u[j] = sampler__uniform(searcher->seed, (uint64_t)number, (uint64_t)j);
    }
    return space__build(space, u, idx);
}

json_t *sampler_redraw(const Space *space, const SearcherSpec *searcher, int64_t number, int64_t k)
{
    if (number < 0 || k < 1 || searcher->type == SEARCHER_GRID || space->grid_size < 1)
        return NULL;
    double u[SPACE_MAX_PARAMS];
    for (int j = 0; j < space->dims; j++) {
        /* (k, j) as one key: at most SPACE_MAX_PARAMS coordinates per draw. */
        uint64_t key = (uint64_t)k * SPACE_MAX_PARAMS + (uint64_t)j;
        uint64_t bits = sampler__hash(searcher->seed, SAMPLER_STREAM_REDRAW, (uint64_t)number, key);
        u[j] = (double)(bits >> 11) * 0x1.0p-53; /* [0, 1), as sampler__uniform */
    }
    return space_decode(space, u, number % space->grid_size, searcher->grid_order);
}
