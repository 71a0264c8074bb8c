/* What the files of sampler/ share and nobody else should use.
 *
 * A Space is an array of parameters in spec order. Each parameter is one of
 * the domains of docs/api.md's table; its bounds are kept in the form the unit
 * cube mapping needs (logs precomputed, quantized and integer domains as an
 * ordered set of `count` values), so decoding a config is arithmetic only.
 * Names with two underscores (`space__x`, `sampler__x`) cross files of this
 * library; the unit tests use a few of them to compare against references. */
#ifndef RUNG_SAMPLER_INTERNAL_H
#define RUNG_SAMPLER_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "bayes.h"
#include "gp.h"
#include "sampler.h"

/* Streams of sampler__hash, so that draws for different purposes from the
 * same (seed, number, dimension) are independent. */
#define SAMPLER_STREAM_RANDOM 1
#define SAMPLER_STREAM_SOBOL_SHIFT 2
/* bayes (gp.c, bayes.c): the random starts of a hyperparameter fit, the
 * shift of a proposal's candidate points, the random fill of candidates
 * beyond Sobol's dimensions and around the best points, and the choice of
 * the points a fit sees when there are too many. */
#define SAMPLER_STREAM_GP_FIT 3
#define SAMPLER_STREAM_BAYES_CANDIDATES 4
#define SAMPLER_STREAM_BAYES_FILL 5
#define SAMPLER_STREAM_BAYES_SUBSET 6
/* sampler_redraw: the further draws of a trial whose config was tried. */
#define SAMPLER_STREAM_REDRAW 7
/* space_mutate: PBT's explore step. */
#define SAMPLER_STREAM_MUTATE 8
/* pb2_propose: its candidates and its draws without a model. */
#define SAMPLER_STREAM_PB2 9
/* tpe_propose: the draws from l(x), per trial and block. */
#define SAMPLER_STREAM_TPE 11
/* cmaes_propose: the normal draws of a trial's sample (and its resamples
 * outside the cube), and the random mean of an IPOP restart. */
#define SAMPLER_STREAM_CMAES_SAMPLE 20
#define SAMPLER_STREAM_CMAES_RESTART 21

/* Integer bounds are kept within +-2^40 so that every value, every count and
 * every cell centre of the unit cube is exact in a double, and log-uniform
 * integer cells stay wide enough to round-trip (a seed range of 2^32 fits). */
#define SPACE_INT_LIMIT (INT64_C(1) << 40)
/* Quantized floats keep |bound / q| below 2^50: the multiples k*q are then
 * told apart by a double and their count fits an int64. */
#define SPACE_QUANT_LIMIT 1125899906842624.0
/* normal and qnormal: a cube coordinate is clamped into [SPACE_NORMAL_TAIL,
 * 1 - SPACE_NORMAL_TAIL] before the inverse normal CDF, so that every value
 * is finite: within SPACE_NORMAL_Z standard deviations of the mean (the
 * quantile of 1 - 1e-12 is 7.0345). */
#define SPACE_NORMAL_TAIL 1e-12
#define SPACE_NORMAL_Z 7.04
/* GSL's Sobol generator goes up to 40 dimensions. */
#define SOBOL_MAX_DIMS 40
/* GSL's Sobol numerators have 30 bits: points are k / 2^30. */
#define SOBOL_BITS 30

typedef enum {
    SPACE_CONST,
    SPACE_UNIFORM,
    SPACE_QUNIFORM,
    SPACE_LOGUNIFORM,
    SPACE_QLOGUNIFORM,
    SPACE_RANDINT,
    SPACE_QRANDINT,
    SPACE_LOGRANDINT,
    SPACE_QLOGRANDINT,
    SPACE_NORMAL,
    SPACE_QNORMAL,
    SPACE_CHOICE,
    SPACE_GRID,
} SpaceKind;

typedef struct SpaceParam {
    char name[SPACE_MAX_PATH + 1]; /* the config key: the dotted path, NUL-terminated */
    char field[RUNG_FIELD_MAX];    /* its place in the spec, "search_space.opt.values[1].lr" */
    /* name with '\1' between its keys instead of '.': strcmp compares two
     * such paths key by key, as Ray compares its tuples of keys (a key may
     * itself hold a dot, and '\1' sorts below every character of a key). */
    char sortkey[SPACE_MAX_PATH + 1];
    SpaceKind kind;
    /* Where it sits: the conditional choice (an index into the space's
     * params, before this one) whose branch `branch` holds it, or -1 and 0
     * when it is always active. Parents come before their children. */
    int parent;
    int branch;
    /* A conditional choice (kind SPACE_CHOICE, count branches, values the
     * sub-space objects): it has a cube coordinate, its branch, but no key
     * in a config; its branches' parameters follow it. */
    bool cond;
    /* Float domains (uniform, quniform, loguniform, qloguniform, normal,
     * qnormal). normal and qnormal keep in low and high the values that
     * the clamped tails decode to (mean -+ SPACE_NORMAL_Z sd; for qnormal
     * widened to the multiples kmin * q and kmax * q), not bounds a value
     * must keep to. */
    double low, high;         /* bounds as given; low < high */
    double log_low, log_high; /* log(low), log(high) for log domains (qlograndint too) */
    double q;                 /* quantized floats: the step, > 0 */
    double kmin, kmax;        /* quantized floats: values are k*q, k integral in [kmin, kmax] */
    double mean, sd;          /* normal, qnormal: sd > 0 */
    /* Integer domains (randint, qrandint, lograndint, qlograndint). */
    int64_t ilow, ihigh; /* bounds as given (ihigh exclusive for randint and lograndint) */
    int64_t iq;          /* qrandint, qlograndint: the step, >= 1 */
    int64_t ik0;         /* qrandint, qlograndint: values are (ik0 + j) * iq, j in [0, count) */
    /* Discrete domains: number of distinct values (integers, choice, grid);
     * 1 for a constant, 0 for a continuous domain. */
    int64_t count;
    /* "grid_points" as given (0 when absent), and the points the grid
     * searcher enumerates then: ascending, de-duplicated, npoints of them.
     * Integer domains hold exact integers here. */
    int64_t grid_points;
    double *points;
    int64_t npoints;
    /* choice/grid: the "values" array; constant: the value. Own reference. */
    json_t *values;
    int cube; /* coordinate in the unit cube; -1 for grid and constant */
} SpaceParam;

struct Space {
    SpaceParam *params; /* nparams of them, in spec order (a branch's after its choice) */
    int nparams;
    int *keys;   /* params index of each distinct config key, first occurrence, spec order */
    int *sorted; /* params indices by sortkey (ties in spec order): Ray's grid order */
    int nkeys;
    bool conditional;  /* some conditional choice */
    int dims;          /* unit-cube coordinates */
    int64_t grid_size; /* product of the grid parameters' counts, >= 1 */
};

/* Value of p at cube coordinate u (clamped into [0, 1]); p is not a grid or
 * a constant. New reference, NULL when out of memory. */
json_t *space__decode_value(const SpaceParam *p, double u);

/* The cube coordinate of number x for a numeric domain p, x clamped into
 * the domain (integers and multiples rounded to the nearest). */
double space__encode_number(const SpaceParam *p, double x);

/* Number of values the grid searcher enumerates for p; 0 when p cannot be
 * enumerated (continuous without grid_points, or an integer domain with more
 * than SPACE_MAX_GRID_POINTS values and no grid_points). */
int64_t space__enum_count(const SpaceParam *p);
/* The i-th enumerated value of p (0 <= i < space__enum_count). New
 * reference, NULL when out of memory. */
json_t *space__enum_value(const SpaceParam *p, int64_t i);

/* Whether p's values are reals in a config (the float domains). */
static inline bool space__is_float(const SpaceParam *p)
{
    return p->kind == SPACE_UNIFORM || p->kind == SPACE_QUNIFORM || p->kind == SPACE_LOGUNIFORM ||
           p->kind == SPACE_QLOGUNIFORM || p->kind == SPACE_NORMAL || p->kind == SPACE_QNORMAL;
}

/* The cube coordinate an inactive parameter encodes to (space_encode): any
 * fixed value would do, the middle keeps it inside the cube. */
#define SPACE_INACTIVE_U 0.5

/* Which parameters are active when each conditional choice takes the
 * branch idx[i] (when idx != NULL and idx[i] >= 0) or else the branch its
 * cube coordinate u[cube] falls in. active has nparams entries; sel too
 * (the branch of each active conditional choice, -1 elsewhere). */
void space__active(const Space *space, const double *u, const int64_t *idx, bool *active, int *sel);

/* The branches a config took (space_conform's rule): fills active and sel
 * as space__active. Returns 0, or -1 when some active conditional choice
 * has no branch that fits config. */
int space__resolve(const Space *space, const json_t *config, bool *active, int *sel);

/* Whether v is a value p can take (space_check_value for one parameter). */
bool space__value_ok(const SpaceParam *p, const json_t *v);

/* The k-th parameter (0 <= k < nparams) in the order in which the digits
 * of a grid combination are read, the fastest first: for Ray's order the
 * parameters sorted by path, for the spec's the spec order backwards (the
 * first parameter slowest). A mixed-radix decoding walks k upwards taking
 * combo % count; an encoding walks it downwards. */
static inline int space__digit_param(const Space *s, GridOrder order, int k)
{
    return order == GRID_ORDER_RAY ? s->sorted[k] : s->nparams - 1 - k;
}

/* The index of every "grid" parameter in combination combo of their
 * product (0 <= combo < grid_size) in `order`; -1 for the others. */
void space__grid_indices(const Space *space, GridOrder order, int64_t combo, int64_t *idx);

/* The grid searcher's enumeration: its number of combinations (saturated
 * at SAMPLER_MAX_TRIALS + 1; 0 when some parameter cannot be enumerated),
 * and the enumerated index of every parameter in combination combo (a
 * conditional choice's is its branch; -1 for the parameters of branches not
 * taken). Within each scope (the top, or a branch) the members are read as
 * space__digit_param orders them; a conditional choice runs through its
 * branches one after the other, each with its own product. */
int64_t space__grid_combinations(const Space *space);
void space__grid_decode(const Space *space, GridOrder order, int64_t combo, int64_t *idx);

/* Fills p->points / p->npoints from p->grid_points (p's bounds must be set).
 * Returns 0, or -1 when out of memory. */
int space__make_points(SpaceParam *p);

/* round(x / q) * q for a quantized float domain, clamped into [low, high] by
 * stepping to the nearest multiple inside (kmin or kmax). */
double space__quantize(const SpaceParam *p, double x);

/* Builds a config in spec order: parameter i takes its enumerated value
 * idx[i] when idx[i] >= 0, else its value at cube coordinate u[cube].
 * Constants are copied. New reference, NULL when out of memory. */
json_t *space__build(const Space *space, const double *u, const int64_t *idx);

/* 64 random bits that depend only on the four keys (splitmix64 of each in
 * turn): the stream of trial `number` never depends on another trial. */
uint64_t sampler__hash(uint64_t seed, uint64_t stream, uint64_t number, uint64_t dim);
/* sampler__hash(seed, SAMPLER_STREAM_RANDOM, number, dim) as a double in [0, 1). */
double sampler__uniform(uint64_t seed, uint64_t number, uint64_t dim);

/* Point `index` (0-based) of GSL's Sobol sequence in `dims` dimensions
 * (dims <= SOBOL_MAX_DIMS), as 30-bit numerators: point = x / 2^30. Index i
 * is the point GSL's generator holds after i calls of gsl_qrng_get (index 0
 * is the origin it starts from). Returns 0, or -1 when GSL fails or
 * index >= 2^30 (GSL's sequence ends there). Thread-safe. */
int sampler__sobol_raw(uint64_t index, int dims, uint32_t *x);

/* Point `index` of the Sobol sequence, digitally shifted: each coordinate's
 * 30 bits XOR-ed with bits drawn from (seed, shift_key, dimension), so
 * different seeds give different sequences with the same spread. Values in
 * [0, 1). Returns 0 or -1 as sampler__sobol_raw. */
int sampler__sobol_point(uint64_t index, int dims, uint64_t seed, uint64_t shift_key, double *u);

/* Output transforms of the bayes searcher, applied to the losses (after
 * failed trials are set to the worst finite loss) before standardizing. */
typedef enum {
    BAYES_OUTPUT_NONE,   /* standardize only */
    BAYES_OUTPUT_BOXCOX, /* Box-Cox of loss - min + delta, lambda in [0, 1] by likelihood */
} BayesOutput;

/* The settings of the bayes searcher in one place, so that a tuning driver
 * can vary them; bayes_propose uses bayes__default_tuning's. */
typedef struct BayesTuning {
    int candidates;       /* scrambled Sobol (or random) candidates per proposal */
    int local_candidates; /* more candidates around the best observations */
    double local_scale;   /* their spread, in cube units (largest of a mixture) */
    int refine_starts;    /* the best candidates refined by BFGS */
    int refine_iter;      /* BFGS iterations per refinement */
    int fit_max;          /* most observations a hyperparameter fit sees */
    int fit_raw;          /* random hyperparameters scored to choose restarts */
    int fit_starts;       /* BFGS runs of the fit (the prior means, then random starts) */
    int fit_starts_max_n; /* ... up to this many observations; one run beyond */
    int fit_iter;         /* BFGS iterations per run */
    BayesOutput output;   /* transform of the losses */
    double boxcox_delta;  /* BAYES_OUTPUT_BOXCOX: delta, a fraction of the losses' spread */
    /* BAYES_OUTPUT_BOXCOX: when > 0 and every loss is positive with
     * max / min >= log_span, the transform sees log(loss) instead. */
    double log_span;
    GpPrior prior; /* log_ls_mean is for one feature: it grows by log(d) / 2 */
} BayesTuning;

void bayes__default_tuning(BayesTuning *tuning);
/* log Phi(z), the log probability of feasibility of one constraint. */
double bayes__log_cdf(double z);
/* bayes_propose with the given settings. */
int bayes__propose_tuned(const Space *space, const SearcherSpec *searcher, int64_t first,
                         int64_t count, const BayesHistory *history, const BayesTuning *tuning,
                         json_t **out, RungError *err);

#endif
