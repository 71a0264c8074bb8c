/* What the grid searcher enumerates for each parameter.
 *
 * Grid and choice parameters enumerate their values, an integer domain its
 * integers (when there are at most SPACE_MAX_GRID_POINTS of them), and a
 * domain given "grid_points": n its n points spaced like numpy's linspace from
 * low to high inclusive (in log space for log domains), rounded to the
 * domain's values and de-duplicated; for normal and qnormal, which have no
 * bounds, the n quantiles (i + 0.5) / n instead (each point the middle of
 * one n-th of the probability). The points are made once at parse time so
 * that enumerating is an array lookup. */
#include "sampler_internal.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>

static bool is_int_kind(SpaceKind kind)
{
    return kind == SPACE_RANDINT || kind == SPACE_QRANDINT || kind == SPACE_LOGRANDINT ||
           kind == SPACE_QLOGRANDINT;
}

/* Values are (ik0 + j) * iq: qrandint and qlograndint. */
static bool is_int_quant(SpaceKind kind)
{
    return kind == SPACE_QRANDINT || kind == SPACE_QLOGRANDINT;
}

/* Point i of n (n >= 2) of numpy's linspace(start, stop, n): start + i * step,
 * with the last point exactly stop. */
static double linspace(double start, double stop, int64_t i, int64_t n)
{
    if (i == n - 1)
        return stop;
    return (double)i * ((stop - start) / (double)(n - 1)) + start;
}

/* Point i of n of the domain, before de-duplication. */
static double grid_point(const SpaceParam *p, int64_t i, int64_t n)
{
    /* linspace with one point is [start]. */
    bool first = i == 0;
    switch (p->kind) {
    case SPACE_UNIFORM:
        return first ? p->low : linspace(p->low, p->high, i, n);
    case SPACE_QUNIFORM:
        return space__quantize(p, first ? p->low : linspace(p->low, p->high, i, n));
    case SPACE_LOGUNIFORM:
    case SPACE_QLOGUNIFORM: {
        /* Like numpy's geomspace: the ends are exactly low and high. */
        double x = p->high;
        if (first)
            x = p->low;
        else if (i < n - 1)
            x = exp(linspace(p->log_low, p->log_high, i, n));
        return p->kind == SPACE_QLOGUNIFORM ? space__quantize(p, x) : x;
    }
    case SPACE_RANDINT: {
        double top = (double)(p->ihigh - 1);
        return first ? (double)p->ilow : round(linspace((double)p->ilow, top, i, n));
    }
    case SPACE_QRANDINT: {
        /* Evenly spaced among the multiples of q. */
        double j = first ? 0.0 : round(linspace(0.0, (double)(p->count - 1), i, n));
        return (double)((p->ik0 + (int64_t)j) * p->iq);
    }
    case SPACE_LOGRANDINT: {
        double top = (double)(p->ihigh - 1);
        if (first)
            return (double)p->ilow;
        double x = round(exp(linspace(p->log_low, log(top), i, n)));
        return x < (double)p->ilow ? (double)p->ilow : (x > top ? top : x);
    }
    case SPACE_QLOGRANDINT: {
        /* geomspace from low to high, each the nearest multiple of q
         * within [low, high] (high is included). */
        double x = (double)p->ihigh;
        if (first)
            x = (double)p->ilow;
        else if (i < n - 1)
            x = exp(linspace(p->log_low, p->log_high, i, n));
        double k = round(x / (double)p->iq);
        double k0 = (double)p->ik0, k1 = (double)(p->ik0 + p->count - 1);
        return (k < k0 ? k0 : (k > k1 ? k1 : k)) * (double)p->iq;
    }
    case SPACE_NORMAL:
    case SPACE_QNORMAL: {
        double x = p->mean + gsl_cdf_gaussian_Pinv(((double)i + 0.5) / (double)n, p->sd);
        return p->kind == SPACE_QNORMAL ? space__quantize(p, x) : x;
    }
    default:
        return 0.0;
    }
}

int space__make_points(SpaceParam *p)
{
    int64_t n = p->grid_points;
    /* Asking for as many points as an integer domain has values, or more,
     * gives every value (log spacing would round some of them together). */
    bool every = is_int_kind(p->kind) && n >= p->count;
    if (every)
        n = p->count;
    p->points = malloc((size_t)n * sizeof *p->points);
    if (p->points == NULL)
        return -1;
    /* Rounding keeps the points ascending, so duplicates are neighbours. */
    p->npoints = 0;
    for (int64_t i = 0; i < n; i++) {
        double x;
        if (!every)
            x = grid_point(p, i, n);
        else if (is_int_quant(p->kind))
            x = (double)((p->ik0 + i) * p->iq);
        else
            x = (double)(p->ilow + i);
        if (p->npoints == 0 || x != p->points[p->npoints - 1])
            p->points[p->npoints++] = x;
    }
    return 0;
}

int64_t space__enum_count(const SpaceParam *p)
{
    switch (p->kind) {
    case SPACE_CONST:
        return 1;
    case SPACE_CHOICE:
    case SPACE_GRID:
        return p->count;
    case SPACE_RANDINT:
    case SPACE_QRANDINT:
    case SPACE_LOGRANDINT:
    case SPACE_QLOGRANDINT:
        if (p->npoints > 0)
            return p->npoints;
        return p->count <= SPACE_MAX_GRID_POINTS ? p->count : 0;
    default:
        return p->npoints; /* 0 without grid_points: not enumerable */
    }
}

json_t *space__enum_value(const SpaceParam *p, int64_t i)
{
    switch (p->kind) {
    case SPACE_CONST:
        return json_deep_copy(p->values);
    case SPACE_CHOICE:
    case SPACE_GRID:
        return json_deep_copy(json_array_get(p->values, (size_t)i));
    case SPACE_RANDINT:
    case SPACE_LOGRANDINT:
        if (p->npoints > 0)
            return json_integer((json_int_t)p->points[i]);
        return json_integer(p->ilow + i);
    case SPACE_QRANDINT:
    case SPACE_QLOGRANDINT:
        if (p->npoints > 0)
            return json_integer((json_int_t)p->points[i]);
        return json_integer((p->ik0 + i) * p->iq);
    default:
        return json_real(p->points[i]);
    }
}

/* Index i of the ascending points of p that equals x exactly, or -1. */
static int64_t point_index(const SpaceParam *p, double x)
{
    int64_t lo = 0, hi = p->npoints;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (p->points[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->npoints && p->points[lo] == x ? lo : -1;
}

/* The i with json_equal(space__enum_value(p, i), v), without making the
 * values; -1 when there is none. */
static int64_t enum_index(const SpaceParam *p, const json_t *v)
{
    switch (p->kind) {
    case SPACE_CONST:
        return json_equal(p->values, v) ? 0 : -1;
    case SPACE_CHOICE:
    case SPACE_GRID:
        for (size_t i = 0; i < json_array_size(p->values); i++)
            if (json_equal(json_array_get(p->values, i), v))
                return (int64_t)i;
        return -1;
    case SPACE_RANDINT:
    case SPACE_QRANDINT:
    case SPACE_LOGRANDINT:
    case SPACE_QLOGRANDINT: {
        if (!json_is_integer(v))
            return -1;
        int64_t x = json_integer_value(v);
        if (x < -SPACE_INT_LIMIT || x > SPACE_INT_LIMIT)
            return -1;
        if (p->npoints > 0)
            return point_index(p, (double)x); /* integers up to 2^40 are exact */
        int64_t i = x - p->ilow;
        if (is_int_quant(p->kind)) {
            if (x % p->iq != 0)
                return -1;
            i = x / p->iq - p->ik0;
        }
        return i >= 0 && i < p->count ? i : -1;
    }
    default:
        return json_is_real(v) && p->npoints > 0 ? point_index(p, json_real_value(v)) : -1;
    }
}

/* Saturating arithmetic at SAMPLER_MAX_TRIALS + 1: the grid searcher's
 * product can be astronomical, and a larger one is refused anyway. */
#define SAT (SAMPLER_MAX_TRIALS + 1)

static int64_t sat_mul(int64_t a, int64_t b)
{
    return a == 0 || b == 0 ? 0 : (a > SAT / b ? SAT : (a * b > SAT ? SAT : a * b));
}

static int64_t member_count(const Space *s, int i);

/* Combinations of the members of branch b of choice c (c = -1: the top):
 * the product of their counts. */
static int64_t scope_count(const Space *s, int c, int b)
{
    int64_t g = 1;
    for (int i = c + 1; i < s->nparams; i++)
        if (s->params[i].parent == c && s->params[i].branch == b)
            g = sat_mul(g, member_count(s, i));
    return g;
}

/* A parameter's count; a conditional choice's is the sum over its
 * branches (branches x their grids, one after the other). */
static int64_t member_count(const Space *s, int i)
{
    const SpaceParam *p = &s->params[i];
    if (!p->cond)
        return space__enum_count(p);
    int64_t n = 0;
    for (int b = 0; b < p->count; b++) {
        n += scope_count(s, i, b);
        if (n > SAT)
            n = SAT;
    }
    return n;
}

int64_t space__grid_combinations(const Space *space)
{
    return scope_count(space, -1, 0);
}

/* Mixed radix over the scope's members, read in `order` (the fastest digit
 * first). */
static void scope_decode(const Space *s, GridOrder order, int c, int b, int64_t combo, int64_t *idx)
{
    for (int j = 0; j < s->nparams; j++) {
        int i = space__digit_param(s, order, j);
        const SpaceParam *p = &s->params[i];
        if (i <= c || p->parent != c || p->branch != b)
            continue;
        int64_t n = member_count(s, i);
        int64_t k = combo % n;
        combo /= n;
        if (!p->cond) {
            idx[i] = k;
            continue;
        }
        for (int bb = 0; bb < p->count; bb++) {
            int64_t nb = scope_count(s, i, bb);
            if (k < nb) {
                idx[i] = bb;
                scope_decode(s, order, i, bb, k, idx);
                break;
            }
            k -= nb;
        }
    }
}

void space__grid_decode(const Space *space, GridOrder order, int64_t combo, int64_t *idx)
{
    for (int i = 0; i < space->nparams; i++)
        idx[i] = -1;
    scope_decode(space, order, -1, 0, combo, idx);
}

/* scope_decode's inverse: the digits from the slowest down. */
static int64_t scope_index(const Space *s, GridOrder order, int c, int b, const json_t *config,
                           const int *sel)
{
    int64_t g = 0;
    for (int k = s->nparams - 1; k >= 0; k--) {
        int i = space__digit_param(s, order, k);
        const SpaceParam *p = &s->params[i];
        if (i <= c || p->parent != c || p->branch != b)
            continue;
        int64_t n = member_count(s, i);
        int64_t d;
        if (p->cond) {
            d = scope_index(s, order, i, sel[i], config, sel);
            for (int bb = 0; d >= 0 && bb < sel[i]; bb++)
                d += scope_count(s, i, bb);
        } else {
            d = enum_index(p, json_object_get(config, p->name));
        }
        if (n < 1 || d < 0 || g > SAMPLER_MAX_TRIALS / n)
            return -1;
        g = g * n + d;
    }
    return g;
}

int64_t sampler_grid_index(const Space *space, const json_t *config, GridOrder order)
{
    /* Mixed radix in `order`, as sampler_config reads it. The grid
     * searcher's product is at most SAMPLER_MAX_TRIALS when it ran at all;
     * a larger one is refused at submission, so it is no index here. */
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    if (!json_is_object(config) || space__resolve(space, config, active, sel) != 0)
        return -1;
    return scope_index(space, order, -1, 0, config, sel);
}
