/* The search space and the searchers that draw configs from it.
 *
 * A Space is parsed once from an experiment's "search_space" (docs/api.md, table
 * "Search space") and is immutable afterwards, so the proposer thread and the
 * request thread may read it at once. Non-grid, non-constant parameters map
 * to one coordinate each of the unit cube [0, 1)^d ("cube dims"); grid
 * parameters are enumerated (Ray Tune's grid_search); constants pass through.
 *
 * Nested objects are sub-spaces and a choice whose values are objects is a
 * conditional choice (each value a sub-space, its "branch"); both are
 * flattened: a config is one flat object whose keys are dotted paths
 * ("model.lr", "opt.momentum") and holds only the parameters of the
 * branches it took (docs/api.md, "Nested and conditional spaces"). Every
 * sampled parameter of every branch has its cube coordinate, and each
 * conditional choice one more for its branch.
 *
 * Random and grid searchers are pure functions of (space, searcher, trial
 * number): trial n's config never depends on history, which makes a restart
 * resume exactly where it stopped and the same seed give the same sequence. */
#ifndef RUNG_SAMPLER_H
#define RUNG_SAMPLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* Limits on what a user controls, each with why. */
#define SPACE_MAX_PARAMS 256   /* a GP over more dims is hopeless anyway */
#define SPACE_MAX_VALUES 10000 /* choice/grid values: keeps specs small */
#define SPACE_MAX_NAME 64      /* docs/api.md: [A-Za-z_][A-Za-z0-9_.-]{0,63} */
/* A parameter's dotted path through sub-spaces ("model.opt.lr"): a few
 * names, short enough for an error's field and an argv placeholder. */
#define SPACE_MAX_PATH 128
/* Sub-spaces inside sub-spaces: deeper trees are no search anyone runs, and
 * the bound keeps the recursion of parsing and enumerating shallow. */
#define SPACE_MAX_DEPTH 8
#define SAMPLER_MAX_TRIALS 10000000LL /* num_samples x grid product, bounded */
/* grid_points at most, and the most values of an integer domain that the grid
 * searcher enumerates without them: a grid is for a handful of values. */
#define SPACE_MAX_GRID_POINTS 1000

typedef struct Space Space;

typedef enum {
    SEARCHER_RANDOM,
    SEARCHER_GRID,
    SEARCHER_BAYES,
    SEARCHER_CMAES,
    SEARCHER_TPE,
    SEARCHER_AUTO /* bayes, tpe or cmaes by sampler/auto.h's rule */
} SearcherType;

/* Whether the searcher learns from finished trials (bayes, cmaes, tpe, auto):
 * rungd then keeps their results (the history of sampler/bayes.h) and
 * passes them to it. */
bool searcher_uses_history(SearcherType type);

/* The order in which grid combinations are numbered (docs/api.md, "Grid
 * semantics"; "searcher.grid_order"). Ray Tune's: the enumerated parameters
 * sorted by path, compared key by key, the first in that order varying
 * fastest. The spec's: the first parameter in spec order varying slowest,
 * what rungd did before (an experiment stored then keeps it: spec_load). */
typedef enum { GRID_ORDER_RAY = 0, GRID_ORDER_SPEC } GridOrder;

typedef struct SearcherSpec {
    SearcherType type;
    uint64_t seed;     /* always set: from the spec, or drawn by the caller */
    bool has_seed;     /* whether the spec gave one */
    bool quasi;        /* random: Sobol points instead of pseudo-random ones */
    int64_t n_initial; /* bayes, tpe: quasi-random start points */
    /* bayes: model rung records (bayes_mf_propose): 1 or 0 as the spec
     * says, -1 when it does not (rungd decides with the scheduler). */
    int multi_fidelity;
    GridOrder grid_order; /* "grid_order": Ray's unless the spec says "spec" */
    /* "noisy": the objective is noisy, so a config may be worth trying
     * again; false: bayes never proposes a config already observed, running
     * or proposed while an unseen one is left (docs/searchers.md). */
    bool noisy;
    /* auto (sampler/auto.h): the results after which tpe or cmaes takes
     * over from bayes. */
    int64_t switch_after;
    /* cmaes (sampler/cmaes.h): the initial step in cube units (0: the
     * default, 1/6), the population (0: the default, 4 + floor(3 ln d)),
     * and "restart": "none" (IPOP restarts are the default). */
    double sigma0;
    int popsize;
    bool no_restart;
    /* tpe (sampler/tpe.h): joint kernels over the parameters of a block
     * (else one parameter at a time), blocks by conditional group (else
     * the always-active parameters and one per other), pending trials as
     * the worst results; searcher_parse sets all three true by default. */
    bool multivariate, group, constant_liar;
} SearcherSpec;

/* Parses and validates search_space (the object itself). Errors are
 * RUNG_E_INVALID_SPEC with the field's path, "search_space.<name>[.<key>]"
 * ("search_space.opt.values[1].beta2.low" inside a branch).
 * On success *out is new (free with space_free). */
int space_parse(const json_t *search_space, Space **out, RungError *err);
void space_free(Space *space);

/* Checks that value is one that parameter `name` of space can take
 * (docs/api.md, "points_to_evaluate"): a number within [low, high] for a
 * float domain; an integer within the domain for an integer one (high
 * excluded for randint and lograndint, a multiple of q for qrandint); one
 * of the values for choice and grid; the constant itself for a constant.
 * Fails with RUNG_E_INVALID_SPEC and `field` (a message starting with it)
 * when it is not, or when name is no parameter of space. */
int space_check_value(const Space *space, const char *name, const json_t *value, const char *field,
                      RungError *err);

/* value (borrowed; one space_check_value accepts) as a config of the space
 * holds it: an integer for a float domain becomes a real, as configs have
 * reals for the float domains (docs/api.md, "search_space"); any other
 * value is itself. A new reference; NULL when name is no parameter or out
 * of memory. */
json_t *space_config_value(const Space *space, const char *name, const json_t *value);

/* Whether an object of search_space without "type" (a sub-space) holds a
 * domain at some depth: one without any is refused, as it was a constant
 * object once (specs stored then keep it one: spec_load). */
bool space_has_domain(const json_t *sub_space);

/* Checks a config `point` (possibly partial, docs/api.md
 * "points_to_evaluate"): every key a parameter whose value it can take
 * (space_check_value) and some choice of branches under which all of them
 * are active together. field names the point ("points_to_evaluate[2]"). */
int space_check_point(const Space *space, const json_t *point, const char *field, RungError *err);

/* config (borrowed) as this space holds it: its branches resolved (a
 * config takes, at each conditional choice, the first branch whose
 * parameters it has with values they can take), its active parameters in
 * spec order, each one space_check_value accepts, converted by
 * space_config_value; keys of no active parameter dropped. New reference;
 * NULL when config does not fit (a parameter missing, a value outside its
 * domain, no branch fits) or out of memory. */
json_t *space_conform(const Space *space, const json_t *config);

/* config (borrowed) with point's values laid over it: point's keys choose
 * the branch at each conditional choice whose subtree they name (the
 * config's branch when it is one of those that fit them, else the first
 * that fits), each active parameter takes point's value (space_config_value),
 * else config's, else the middle of its domain (cube coordinate 0.5). New
 * reference in spec order; NULL when out of memory or nothing fits. */
json_t *space_lay_over(const Space *space, const json_t *config, const json_t *point);

/* Whether space has a conditional choice (a choice whose values are
 * sub-spaces). */
bool space_conditional(const Space *space);

/* Population Based Training's explore step (docs/schedulers.md, "pbt"):
 * config (borrowed) with each parameter of `mutations` that config holds
 * changed. With probability resample_p, or when its value is not one its
 * domain can take, it is drawn anew from the domain; otherwise a numeric
 * value is multiplied by 0.8 or 1.2 (even odds) and put back into the
 * domain (clamped to its bounds, rounded for integer and quantized
 * domains), and a choice moves to a neighbouring value (the first or last
 * stays put when the step would leave the list). Constants stay. Every
 * draw hashes (seed, a, b, the parameter): the same arguments give the
 * same config. New reference; NULL when out of memory. `mutations` has no
 * conditional choice (spec validation refuses one). */
json_t *space_mutate(const Space *mutations, const json_t *config, double resample_p, uint64_t seed,
                     uint64_t a, uint64_t b);

/* Whether name is a config key of space: a parameter of some branch. */
bool space_has_param(const Space *space, const char *name);

/* Number of unit-cube coordinates (sampled parameters). */
int space_cube_dims(const Space *space);
/* Number of config keys (constants and grids included, of every branch;
 * a name that several branches share counts once), and the i-th in spec
 * order (borrowed from space; NULL when i is out of range). */
int space_param_count(const Space *space);
const char *space_param_name(const Space *space, int i);
/* Product of the grid parameters' value counts (1 when there is none). */
int64_t space_grid_size(const Space *space);

/* Parses "searcher" (may be NULL: random). Validates against the space: the
 * grid searcher needs every parameter enumerable. Fields named
 * "searcher.<key>" or "search_space.<name>.grid_points". */
int searcher_parse(const json_t *searcher, const Space *space, SearcherSpec *out, RungError *err);

/* Number of trials an experiment has: grid combinations x num_samples, where
 * the grid searcher enumerates every parameter. Fails (invalid_spec, field
 * "num_samples") above SAMPLER_MAX_TRIALS. */
int sampler_total_trials(const Space *space, const SearcherSpec *searcher, int64_t num_samples,
                         int64_t *out, RungError *err);

/* The config of trial `number` (0-based) for random and grid searchers.
 * Returns a new reference (an object, parameters in spec order), or NULL when
 * out of memory. Trial n takes grid combination n mod G and repetition n / G
 * (G: the grid product, numbered in searcher->grid_order). Random
 * search draws trial n from (seed, n) alone; "quasi" (and bayes, which starts
 * quasi-random) takes point n / G of a Sobol sequence shifted by (seed, n mod
 * G). NULL too when number < 0 or the Sobol sequence is exhausted (2^30
 * points, beyond SAMPLER_MAX_TRIALS). */
json_t *sampler_config(const Space *space, const SearcherSpec *searcher, int64_t number);

/* Draw k (k >= 1) of trial `number` for the random searcher, when its
 * config, or an earlier redraw, was tried already (warm_start, docs/api.md
 * "searcher"): the grid combination stays the trial's (number mod G), the
 * sampled parameters are drawn pseudo-randomly from (seed, number, k) in a
 * stream of their own (never from the Sobol sequence, whose points belong
 * to other trials). A pure function like sampler_config. New reference;
 * NULL when number < 0, k < 1, for the grid searcher, or out of memory. */
json_t *sampler_redraw(const Space *space, const SearcherSpec *searcher, int64_t number, int64_t k);

/* The combination c of the grid searcher's enumeration in `order` (0 <= c <
 * G, G its number of combinations: sampler_total_trials with num_samples
 * 1) whose config, sampler_config(grid, c), equals config on every parameter under
 * JSON equality (json_equal: reals compared exactly, an integer never
 * equals a real). -1 when some value is none of its parameter's
 * enumerated values, a parameter is missing, or the space cannot be
 * enumerated. Keys of config beyond the space's are ignored. */
int64_t sampler_grid_index(const Space *space, const json_t *config, GridOrder order);

/* Unit-cube encoding of the sampled parameters: decode maps u (cube_dims
 * values in [0, 1]) plus a grid combination index (of the "grid"
 * parameters, numbered in `order`) to a config (new reference); encode
 * maps a config back to u. decode(encode(c)) == c.
 * decode clamps u into [0, 1] and returns NULL when grid_index is outside
 * [0, space_grid_size) or out of memory; u may be NULL when cube_dims is 0.
 * encode reads only the cube's parameters: a missing one, a value of the
 * wrong type or an unknown choice fails with RUNG_E_INVALID_ARGUMENT and
 * field "config.<name>"; numbers outside a domain are clamped into it. */
json_t *space_decode(const Space *space, const double *u, int64_t grid_index, GridOrder order);
int space_encode(const Space *space, const json_t *config, double *u, RungError *err);

/* Features (features.c): the parameters an analysis of finished trials
 * ranks or plots (rungd's importance and surface endpoints, docs/api.md),
 * one per config key that can vary (no constants, no single-valued choice
 * or grid, no conditional choice: its branches' parameters stand for it),
 * in spec order. A numeric feature is valued by its cube coordinate (a log
 * domain on its log scale, as the searchers see it), a categorical one
 * (choice, grid) by the index of its value. */
typedef struct SpaceFeature {
    const char *name; /* the config key (dotted path), borrowed from the space */
    int categories;   /* 0: numeric; k >= 2: categorical with k values */
    bool log;         /* numeric on a log scale */
    double low, high; /* numeric: the ends of its domain in its own units */
    int cube;         /* numeric: its cube coordinate (the first parameter of that name) */
} SpaceFeature;

/* Fills out (room for SPACE_MAX_PARAMS) and returns how many. */
int space_features(const Space *space, SpaceFeature *out);
/* config's value of each of the nf features f into x: NAN where the
 * config took a branch without it. -1 when config does not fit the space. */
int space_feature_row(const Space *space, const SpaceFeature *f, int nf, const json_t *config,
                      double *x);
/* The cube coordinate of value (in the feature's own units, clamped into
 * its domain) of numeric feature f; NAN for a categorical one. */
double space_feature_coord(const Space *space, const SpaceFeature *f, double value);

#endif
