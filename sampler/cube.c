/* The unit cube: every sampled parameter is one coordinate u in [0, 1].
 *
 * Random search, Sobol points and (later) the GP all work in the cube, and
 * this file is the only place that knows how a coordinate becomes a value.
 * Decoding follows Ray Tune's samplers (log domains uniform in log space,
 * quantized floats rounded to multiples of q, integers floored, normals
 * through the inverse normal CDF). Encoding is its inverse; a discrete
 * value maps to the centre of the cell of u that decodes to it, so
 * decode(encode(c)) == c exactly for discrete domains. */
#include "sampler_internal.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>

#include "jsonv.h"

static double clamp01(double u)
{
    if (!(u >= 0.0)) /* NaN too */
        return 0.0;
    return u > 1.0 ? 1.0 : u;
}

/* Index floor(u * n) of the cell holding u, clamped into [0, n - 1] so that
 * u = 1 lands in the last cell. */
static int64_t cell(double u, int64_t n)
{
    int64_t k = (int64_t)floor(u * (double)n);
    if (k < 0)
        return 0;
    return k > n - 1 ? n - 1 : k;
}

/* The nearest integer to x within [lo, hi]; NaN gives lo. Clamping before
 * converting keeps huge doubles from overflowing the cast. */
static int64_t to_int(double x, int64_t lo, int64_t hi)
{
    if (!(x >= (double)lo))
        return lo;
    if (x > (double)hi)
        return hi;
    return (int64_t)llround(x);
}

/* Keeps x in [low, high): high is excluded like in Ray's uniform, but
 * low + u * (high - low) and exp() can round onto or past it. */
static double below_high(const SpaceParam *p, double x)
{
    if (x >= p->high)
        return nextafter(p->high, p->low);
    return x < p->low ? p->low : x;
}

double space__quantize(const SpaceParam *p, double x)
{
    double k = round(x / p->q);
    if (!(k >= p->kmin)) /* NaN too */
        k = p->kmin;
    if (k > p->kmax)
        k = p->kmax;
    double y = k * p->q;
    /* k * q can round a hair outside a bound that is itself a multiple. */
    if (y < p->low)
        y = p->low;
    if (y > p->high)
        y = p->high;
    return y + 0.0; /* no -0.0 in a config */
}

/* exp(log low + u * (log high - log low)): log-uniform in [low, high]. */
static double log_scale(const SpaceParam *p, double u)
{
    return exp(p->log_low + u * (p->log_high - p->log_low));
}

/* The inverse of log_scale, clamped into [0, 1]. */
static double log_unscale(const SpaceParam *p, double x)
{
    if (!(x > 0.0))
        return 0.0;
    return clamp01((log(x) - p->log_low) / (p->log_high - p->log_low));
}

/* mean + sd * the standard normal quantile of u, u kept off 0 and 1 by
 * SPACE_NORMAL_TAIL so that the value is finite. */
static double normal_scale(const SpaceParam *p, double u)
{
    if (u < SPACE_NORMAL_TAIL)
        u = SPACE_NORMAL_TAIL;
    if (u > 1.0 - SPACE_NORMAL_TAIL)
        u = 1.0 - SPACE_NORMAL_TAIL;
    return p->mean + gsl_cdf_gaussian_Pinv(u, p->sd);
}

/* The inverse of normal_scale: the normal CDF of x. */
static double normal_unscale(const SpaceParam *p, double x)
{
    return clamp01(gsl_cdf_gaussian_P(x - p->mean, p->sd));
}

/* qlograndint: the multiple of q nearest to log-uniform x, clamped to the
 * multiples within [low, high]. Rounded, not floored as lograndint is: high
 * is included, and exp(log(256)) is 255.99999999999994. */
static int64_t qlog_int(const SpaceParam *p, double x)
{
    return to_int(round(x / (double)p->iq), p->ik0, p->ik0 + p->count - 1) * p->iq;
}

json_t *space__decode_value(const SpaceParam *p, double u)
{
    u = clamp01(u);
    switch (p->kind) {
    case SPACE_UNIFORM:
        return json_real(below_high(p, p->low + u * (p->high - p->low)));
    case SPACE_LOGUNIFORM:
        return json_real(below_high(p, log_scale(p, u)));
    case SPACE_QUNIFORM:
        return json_real(space__quantize(p, p->low + u * (p->high - p->low)));
    case SPACE_QLOGUNIFORM:
        return json_real(space__quantize(p, log_scale(p, u)));
    case SPACE_RANDINT:
        return json_integer(p->ilow + cell(u, p->count));
    case SPACE_QRANDINT:
        return json_integer((p->ik0 + cell(u, p->count)) * p->iq);
    case SPACE_LOGRANDINT:
        return json_integer(to_int(floor(log_scale(p, u)), p->ilow, p->ihigh - 1));
    case SPACE_QLOGRANDINT:
        return json_integer(qlog_int(p, log_scale(p, u)));
    case SPACE_NORMAL:
        return json_real(normal_scale(p, u));
    case SPACE_QNORMAL:
        return json_real(space__quantize(p, normal_scale(p, u)));
    case SPACE_CHOICE:
        return json_deep_copy(json_array_get(p->values, (size_t)cell(u, p->count)));
    default: /* grids and constants have no coordinate */
        return NULL;
    }
}

/* Cube coordinate of the quantized value k * q: the centre of the range of
 * x that rounds to it (the end cells reach only to low and high). */
static double encode_quantized(const SpaceParam *p, double x)
{
    double k = round(x / p->q);
    if (!(k >= p->kmin))
        k = p->kmin;
    if (k > p->kmax)
        k = p->kmax;
    double lo = k == p->kmin ? p->low : (k - 0.5) * p->q;
    double hi = k == p->kmax ? p->high : (k + 0.5) * p->q;
    if (p->kind == SPACE_QUNIFORM)
        return clamp01(((lo + hi) / 2.0 - p->low) / (p->high - p->low));
    /* A normal's cells are measured in probability (the outer ones reach
     * past the clamped tails, which decode into them all the same). */
    if (p->kind == SPACE_QNORMAL)
        return (normal_unscale(p, lo) + normal_unscale(p, hi)) / 2.0;
    /* Cells of a log domain are measured in log space. */
    double mid = (log(lo) + log(hi)) / 2.0;
    return clamp01((mid - p->log_low) / (p->log_high - p->log_low));
}

static double encode_number(const SpaceParam *p, double x)
{
    switch (p->kind) {
    case SPACE_UNIFORM:
        return clamp01((x - p->low) / (p->high - p->low));
    case SPACE_LOGUNIFORM:
        return log_unscale(p, x);
    case SPACE_QUNIFORM:
    case SPACE_QLOGUNIFORM:
        return encode_quantized(p, x);
    case SPACE_RANDINT: {
        int64_t k = to_int(x, p->ilow, p->ihigh - 1) - p->ilow;
        return ((double)k + 0.5) / (double)p->count;
    }
    case SPACE_QRANDINT: {
        /* The nearest multiple of q, as an index into the multiples. */
        int64_t j = to_int(x / (double)p->iq, p->ik0, p->ik0 + p->count - 1) - p->ik0;
        return ((double)j + 0.5) / (double)p->count;
    }
    case SPACE_LOGRANDINT: {
        /* Integer k is drawn for log-uniform x in [k, k + 1). */
        int64_t k = to_int(x, p->ilow, p->ihigh - 1);
        double mid = (log((double)k) + log((double)k + 1.0)) / 2.0;
        return clamp01((mid - p->log_low) / (p->log_high - p->log_low));
    }
    case SPACE_QLOGRANDINT: {
        /* low == high: one value, and no range to measure in. */
        if (!(p->log_high > p->log_low))
            return 0.5;
        /* The centre, in log space, of the x that round to this multiple. */
        double k = (double)qlog_int(p, x) / (double)p->iq;
        double lo = fmax((double)p->ilow, (k - 0.5) * (double)p->iq);
        double hi = fmin((double)p->ihigh, (k + 0.5) * (double)p->iq);
        double mid = (log(lo) + log(hi)) / 2.0;
        return clamp01((mid - p->log_low) / (p->log_high - p->log_low));
    }
    case SPACE_NORMAL:
        return normal_unscale(p, x);
    case SPACE_QNORMAL:
        return encode_quantized(p, x);
    default:
        return 0.0;
    }
}

double space__encode_number(const SpaceParam *p, double x)
{
    return encode_number(p, x);
}

void space__active(const Space *space, const double *u, const int64_t *idx, bool *active, int *sel)
{
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        active[i] = p->parent < 0 || (active[p->parent] && sel[p->parent] == p->branch);
        sel[i] = -1;
        if (!p->cond || !active[i])
            continue;
        if (idx != NULL && idx[i] >= 0)
            sel[i] = (int)idx[i];
        else
            sel[i] = (int)cell(clamp01(u[p->cube]), p->count);
    }
}

/* Whether config has every direct parameter of branch b of choice c (those
 * of deeper choices are judged when their choice is) with a value it takes
 * (numbers only loosely: encoding clamps them). */
static bool branch_fits(const Space *space, int c, int b, const json_t *config)
{
    for (int i = c + 1; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (p->parent != c || p->branch != b || p->cond)
            continue;
        const json_t *v = json_object_get(config, p->name);
        if (v == NULL)
            return false;
        if (p->kind == SPACE_CONST || p->kind == SPACE_CHOICE || p->kind == SPACE_GRID) {
            if (!space__value_ok(p, v))
                return false;
        } else if (!json_is_number(v)) {
            return false;
        }
    }
    return true;
}

int space__resolve(const Space *space, const json_t *config, bool *active, int *sel)
{
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        active[i] = p->parent < 0 || (active[p->parent] && sel[p->parent] == p->branch);
        sel[i] = -1;
        if (!p->cond || !active[i])
            continue;
        for (int b = 0; b < p->count && sel[i] < 0; b++)
            if (branch_fits(space, i, b, config))
                sel[i] = b;
        if (sel[i] < 0)
            return -1;
    }
    return 0;
}

int space_encode(const Space *space, const json_t *config, double *u, RungError *err)
{
    if (!json_is_object(config))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "config",
                              "config: must be a JSON object");
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    int bad = space__resolve(space, config, active, sel);
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (bad == 0 && !active[i] && p->cube >= 0)
            u[p->cube] = SPACE_INACTIVE_U;
        if (p->cube < 0 || (bad == 0 && !active[i]))
            continue;
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, "config", p->name);
        if (p->cond) {
            if (bad != 0)
                return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, field,
                                      "%s: the config fits no branch of this choice", field);
            u[p->cube] = ((double)sel[i] + 0.5) / (double)p->count;
            continue;
        }
        const json_t *v = json_object_get(config, p->name);
        if (v == NULL)
            return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, field, "%s: required", field);
        if (p->kind == SPACE_CHOICE) {
            int64_t k = 0;
            while (k < p->count && !json_equal(json_array_get(p->values, (size_t)k), v))
                k++;
            if (k == p->count)
                return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, field,
                                      "%s: not one of the choices", field);
            u[p->cube] = ((double)k + 0.5) / (double)p->count;
            continue;
        }
        if (!json_is_number(v))
            return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, field, "%s: must be a number",
                                  field);
        u[p->cube] = encode_number(p, json_number_value(v));
    }
    return 0;
}

json_t *space__build(const Space *space, const double *u, const int64_t *idx)
{
    json_t *config = json_object();
    if (config == NULL)
        return NULL;
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    space__active(space, u, idx, active, sel);
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (!active[i] || p->cond)
            continue;
        json_t *v;
        if (p->kind == SPACE_CONST)
            v = json_deep_copy(p->values);
        else if (idx != NULL && idx[i] >= 0)
            v = space__enum_value(p, idx[i]);
        else
            v = space__decode_value(p, u[p->cube]);
        /* json_object_set_new steals v, also when it fails. */
        if (v == NULL || json_object_set_new(config, p->name, v) != 0) {
            json_decref(config);
            return NULL;
        }
    }
    return config;
}

void space__grid_indices(const Space *space, GridOrder order, int64_t combo, int64_t *idx)
{
    for (int i = 0; i < space->nparams; i++)
        idx[i] = -1;
    /* Mixed radix over the grid parameters, the fastest digit first. */
    for (int k = 0; k < space->nparams; k++) {
        int i = space__digit_param(space, order, k);
        const SpaceParam *p = &space->params[i];
        if (p->kind == SPACE_GRID) {
            idx[i] = combo % p->count;
            combo /= p->count;
        }
    }
}

json_t *space_decode(const Space *space, const double *u, int64_t grid_index, GridOrder order)
{
    if (grid_index < 0 || grid_index >= space->grid_size)
        return NULL;
    int64_t idx[SPACE_MAX_PARAMS];
    space__grid_indices(space, order, grid_index, idx);
    return space__build(space, u, idx);
}
