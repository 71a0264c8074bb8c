/* log Expected Improvement and its local maximization (see acq.h).
 *
 * log h(z), h(z) = z Phi(z) + phi(z), in three ranges:
 *
 * - z >= ACQ_DIRECT_MIN: the formula as written, with Phi from erfc. At
 *   z = -3 the two terms cancel to a twelfth of their size, so the result
 *   keeps all but about 4 bits.
 * - z < ACQ_DIRECT_MIN, t = -z: Phi(z) = phi(t) M(t) with Mills' ratio
 *   M(t) = Q(t) / phi(t), so h(z) = phi(t) (1 - t M(t)). Laplace's
 *   continued fraction M(t) = 1 / (t + 1 / (t + 2 / (t + 3 / (t + ...))))
 *   gives, with c = 1 / (t + 2 / (t + 3 / ...)), M = 1 / (t + c) and
 *   1 - t M = c / (t + c): the cancellation is gone, so
 *   log h = -t^2/2 - log sqrt(2 pi) + log c - log(t + c), and
 *   d log h / dz = Phi / h = M / (1 - t M) = 1 / c. Evaluated backward
 *   from ACQ_CF_TERMS terms, it converges to double precision for t >= 3
 *   (40 terms do at t = 3, fewer beyond).
 *
 * Both pieces are accurate to a few ulps of h, so log h is strictly
 * increasing across the switch too. */
#include "acq.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define ACQ_DIRECT_MIN (-3.0)
#define ACQ_CF_TERMS 64
/* |z| beyond this would overflow z^2; log EI is -5e199 there anyway. */
#define ACQ_Z_MAX 1e100
#define INV_SQRT_2PI 0.39894228040143267794
#define LOG_SQRT_2PI 0.91893853320467274178
/* Refinement: the penalty on leaving the box [0, 1] (per squared unit),
 * BFGS's first step (a few percent of the cube), its line tolerance, and
 * the gradient norm that ends a run. */
#define ACQ_BOX_PENALTY 1e3
#define ACQ_STEP 0.02
#define ACQ_LINE_TOL 0.1
#define ACQ_GRAD_TOL 1e-6

double acq_log_h(double z, double *dlog_h)
{
    if (z != z) { /* NaN: no improvement can be told */
        if (dlog_h != NULL)
            *dlog_h = 0.0;
        return -INFINITY;
    }
    if (z > ACQ_Z_MAX)
        z = ACQ_Z_MAX;
    if (z >= ACQ_DIRECT_MIN) {
        double Phi = 0.5 * erfc(-z * M_SQRT1_2);
        double phi = INV_SQRT_2PI * exp(-0.5 * z * z);
        double h = z * Phi + phi;
        if (dlog_h != NULL)
            *dlog_h = Phi / h;
        return log(h);
    }
    double t = z < -ACQ_Z_MAX ? ACQ_Z_MAX : -z;
    double c = 0.0;
    for (int k = ACQ_CF_TERMS; k >= 1; k--)
        c = (double)k / (t + c);
    if (dlog_h != NULL)
        *dlog_h = 1.0 / c;
    return -0.5 * t * t - LOG_SQRT_2PI + log(c) - log(t + c);
}

/* log EI and its derivatives with respect to mean and var. */
static double log_ei_of(double mean, double var, double best, double *d_mean, double *d_var)
{
    bool floored = !(var >= ACQ_VAR_MIN);
    double sd = sqrt(floored ? ACQ_VAR_MIN : var);
    double z = (best - mean) / sd;
    double g;
    double v = log(sd) + acq_log_h(z, &g);
    if (d_mean != NULL)
        *d_mean = -g / sd;
    if (d_var != NULL) /* d/dsd = (1 - g z) / sd, and dsd/dvar = 1 / (2 sd) */
        *d_var = floored ? 0.0 : (1.0 - g * z) / (2.0 * sd * sd);
    return v;
}

int acq_log_ei(Gp *gp, const double *x, double best, double *value, double *grad)
{
    int d = gp_dims(gp);
    double mean, var;
    double dm[GP_MAX_DIMS], dv[GP_MAX_DIMS];
    int rc = gp_predict(gp, x, &mean, &var, grad != NULL ? dm : NULL, grad != NULL ? dv : NULL);
    if (rc != 0)
        return rc;
    double a, b;
    *value = log_ei_of(mean, var, best, &a, &b);
    if (!isfinite(*value))
        return RUNG_E_INTERNAL;
    if (grad != NULL)
        for (int j = 0; j < d; j++)
            grad[j] = a * dm[j] + b * dv[j];
    return 0;
}

int acq_log_ei_many(Gp *gp, const double *x, int m, double best, double *values)
{
    if (m <= 0)
        return 0;
    double *var = malloc((size_t)m * sizeof *var);
    if (var == NULL)
        return RUNG_E_INTERNAL;
    int rc = gp_predict_many(gp, x, m, values, var);
    for (int r = 0; rc == 0 && r < m; r++) {
        values[r] = log_ei_of(values[r], var[r], best, NULL, NULL);
        if (!isfinite(values[r]))
            rc = RUNG_E_INTERNAL;
    }
    free(var);
    return rc;
}

/* A bound this far (relative) below the threshold may still reach it in
 * rounding; such points are computed. */
#define ACQ_TOP_SLACK 1e-9

typedef struct Ranked {
    double bound;
    int index;
} Ranked;

/* Highest bound first; the lower index first among equals. */
static int ranked_cmp(const void *pa, const void *pb)
{
    const Ranked *a = pa, *b = pb;
    if (a->bound != b->bound)
        return a->bound > b->bound ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Inserts v into the `top` largest values so far (kept descending, *have
 * of them) and returns the threshold a point must reach: the top-th, or
 * -INFINITY while fewer are known. */
static double keep_top(double *kept, int top, int *have, double v)
{
    int i;
    if (*have < top) {
        i = (*have)++;
    } else {
        if (v <= kept[top - 1])
            return kept[top - 1];
        i = top - 1;
    }
    while (i > 0 && kept[i - 1] < v) {
        kept[i] = kept[i - 1];
        i--;
    }
    kept[i] = v;
    return *have == top ? kept[top - 1] : -INFINITY;
}

int acq_log_ei_top(Gp *gp, const double *x, int m, double best, int top, double *values)
{
    if (m <= 0)
        return 0;
    if (top < 1 || top > m)
        return RUNG_E_INVALID_ARGUMENT;
    int d = gp_dims(gp);
    double *mean = malloc((size_t)m * sizeof *mean);
    double *var = malloc((size_t)m * sizeof *var);
    Ranked *order = malloc((size_t)m * sizeof *order);
    double *kept = malloc((size_t)top * sizeof *kept);
    int rc = RUNG_E_INTERNAL;
    if (mean == NULL || var == NULL || order == NULL || kept == NULL)
        goto out;
    rc = gp_predict_bound(gp, x, m, mean, var);
    for (int r = 0; rc == 0 && r < m; r++) {
        order[r] = (Ranked){log_ei_of(mean[r], var[r], best, NULL, NULL), r};
        values[r] = -INFINITY;
        if (!isfinite(order[r].bound))
            rc = RUNG_E_INTERNAL;
    }
    if (rc != 0)
        goto out;
    qsort(order, (size_t)m, sizeof *order, ranked_cmp);
    double threshold = -INFINITY;
    int have = 0;
    /* One point at a time (gp_predict), not a block solve: a point's value
     * then does not depend on which others share its block, so a model that
     * differs in the last bits orders the points as it did before. */
    for (int k = 0; k < m; k++) {
        if (order[k].bound < threshold - ACQ_TOP_SLACK * fmax(1.0, fabs(threshold)))
            break; /* sorted: none after it can reach it either */
        int r = order[k].index;
        double mu, v;
        rc = gp_predict(gp, x + (size_t)r * (size_t)d, &mu, &v, NULL, NULL);
        if (rc != 0)
            break;
        values[r] = log_ei_of(mu, v, best, NULL, NULL);
        if (!isfinite(values[r])) {
            rc = RUNG_E_INTERNAL;
            break;
        }
        threshold = keep_top(kept, top, &have, values[r]);
    }
out:
    free(mean);
    free(var);
    free(order);
    free(kept);
    return rc;
}

/* ---- refinement --------------------------------------------------------- */

typedef struct RefineCtx {
    Gp *gp;
    double best;
    int d;
    const int *map; /* free variable k is feature map[k] */
    double *x;      /* d: the point, held features fixed */
    double *grad;   /* d: scratch */
    bool failed;
} RefineCtx;

static double clamp01(double v)
{
    return v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
}

/* -log EI(clamp(t)) + penalty, and its gradient when g is not NULL. */
static double refine_eval(RefineCtx *ctx, const gsl_vector *t, gsl_vector *g)
{
    double pen = 0.0;
    for (size_t k = 0; k < t->size; k++) {
        double tk = gsl_vector_get(t, k);
        double c = clamp01(tk);
        ctx->x[ctx->map[k]] = c;
        pen += ACQ_BOX_PENALTY * (tk - c) * (tk - c);
    }
    double v;
    if (acq_log_ei(ctx->gp, ctx->x, ctx->best, &v, g != NULL ? ctx->grad : NULL) != 0) {
        ctx->failed = true;
        if (g != NULL)
            gsl_vector_set_zero(g);
        return 1e100; /* far worse than any real point, and finite */
    }
    if (g != NULL) {
        for (size_t k = 0; k < t->size; k++) {
            double tk = gsl_vector_get(t, k);
            double c = clamp01(tk);
            /* Outside the box the clamped objective is flat along k. */
            double gk = tk == c ? -ctx->grad[ctx->map[k]] : 0.0;
            gsl_vector_set(g, k, gk + 2.0 * ACQ_BOX_PENALTY * (tk - c));
        }
    }
    return -v + pen;
}

static double refine_f(const gsl_vector *t, void *params)
{
    return refine_eval(params, t, NULL);
}

static void refine_fdf(const gsl_vector *t, void *params, double *f, gsl_vector *g)
{
    *f = refine_eval(params, t, g);
}

static void refine_df(const gsl_vector *t, void *params, gsl_vector *g)
{
    refine_eval(params, t, g);
}

int acq_refine(Gp *gp, double best, const bool *free_dims, int max_iter, double *x, double *value)
{
    int d = gp_dims(gp);
    int map[GP_MAX_DIMS];
    int nf = 0;
    for (int j = 0; j < d; j++)
        if (free_dims[j])
            map[nf++] = j;
    double v0;
    int rc = acq_log_ei(gp, x, best, &v0, NULL);
    if (rc != 0)
        return rc;
    *value = v0;
    if (nf == 0 || max_iter < 1)
        return 0;
    double *work = malloc(2 * (size_t)d * sizeof *work);
    gsl_multimin_fdfminimizer *s =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, (size_t)nf);
    gsl_vector *t0 = gsl_vector_alloc((size_t)nf);
    if (work == NULL || s == NULL || t0 == NULL) {
        free(work);
        if (s != NULL)
            gsl_multimin_fdfminimizer_free(s);
        if (t0 != NULL)
            gsl_vector_free(t0);
        return RUNG_E_INTERNAL;
    }
    RefineCtx ctx = {
        .gp = gp, .best = best, .d = d, .map = map, .x = work, .grad = work + d, .failed = false};
    memcpy(ctx.x, x, (size_t)d * sizeof *x);
    for (int k = 0; k < nf; k++)
        gsl_vector_set(t0, (size_t)k, clamp01(x[map[k]]));
    gsl_multimin_function_fdf fdf = {
        .f = refine_f, .df = refine_df, .fdf = refine_fdf, .n = (size_t)nf, .params = &ctx};
    int status = gsl_multimin_fdfminimizer_set(s, &fdf, t0, ACQ_STEP, ACQ_LINE_TOL);
    for (int it = 0; status == GSL_SUCCESS && !ctx.failed && it < max_iter; it++) {
        /* GSL_ENOPROG: no better point along the line, a local maximum. */
        if (gsl_multimin_fdfminimizer_iterate(s) != GSL_SUCCESS)
            break;
        if (gsl_multimin_test_gradient(gsl_multimin_fdfminimizer_gradient(s), ACQ_GRAD_TOL) ==
            GSL_SUCCESS)
            break;
    }
    if (status == GSL_SUCCESS) {
        /* The minimizer's point, clamped, scored without the penalty. */
        const gsl_vector *tm = gsl_multimin_fdfminimizer_x(s);
        for (int k = 0; k < nf; k++)
            ctx.x[map[k]] = clamp01(gsl_vector_get(tm, (size_t)k));
        double v;
        if (acq_log_ei(gp, ctx.x, best, &v, NULL) == 0 && v > v0) {
            memcpy(x, ctx.x, (size_t)d * sizeof *x);
            *value = v;
        }
    }
    free(work);
    gsl_multimin_fdfminimizer_free(s);
    gsl_vector_free(t0);
    return 0;
}
