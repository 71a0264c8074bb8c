/* Gaussian process regression with a Matérn-5/2 ARD kernel (see gp.h).
 *
 * Storage: the points are rows of x (capacity x d), and columns of xt (d x
 * capacity), over which the kernel loops run; the Cholesky factor L of
 * K + (noise + jitter) I lives in the lower triangle of a capacity x
 * capacity matrix, of which the leading n x n block is in use, so adding a
 * point is writing one more row. gsl_linalg_cholesky_decomp1 keeps the
 * original matrix in the upper triangle, which is what a retry with more
 * jitter starts again from.
 *
 * The likelihood is evaluated many times per fit on the same points, so
 * the per-feature distances of every pair are computed once (the "pair
 * cache", d x n(n-1)/2) and each evaluation is a matrix-vector product
 * plus one exp per pair. The kernel's loops are the vectorizable kind
 * (kernel_row, pair_kernels, exp_nonpos): a proposal spends most of its
 * time in them and in the factor (docs/searchers.md, "The time of a
 * proposal"). With W = K^-1 - alpha alpha^T (alpha = K^-1 y),
 * the gradient of the negative log likelihood is 0.5 tr(W dK/dtheta):
 *
 *   d/d log ls_j  : sum_{i<k} W_ik c_ik delta_ikj / ls_j^2
 *   d/d log sf2   : sum_{i<k} W_ik Kf_ik + 0.5 sf2 tr(W)
 *   d/d log(noise - min) : 0.5 (noise - min) tr(W)
 *
 * with Kf the noise-free kernel and c(r) = 5/3 sf2 (1 + sqrt5 r) exp(-sqrt5 r),
 * for which dk/dr = -c(r) r: no division by r, so coincident points are
 * fine. */
#include "gp.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sampler_internal.h"

/* OpenBLAS's own (its cblas.h would clash with GSL's declarations). */
int openblas_get_num_threads(void);
void openblas_set_num_threads(int n);
char *openblas_get_corename(void);

#define SQRT5 2.23606797749978969641
/* The kernel loops are built three times on x86-64 with gcc, for
 * AVX-512, AVX2 and the baseline, and the loader picks one for the CPU (an
 * ifunc): eight or four doubles a step instead of two. None of them fuses
 * a multiply and an add (no FMA target), so all give the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GP_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GP_VECTOR_CLONES
#endif
/* log(2 pi) / 2 */
#define HALF_LOG_2PI 0.91893853320467274178

/* Bounds of theta during a fit: length scales from 1e-3 to 1e3 of the unit
 * cube (shorter is noise, longer is "feature unused"), a signal variance
 * within e^+-9 of the standardized targets' 1, a noise from GP_NOISE_MIN up
 * to about 20 (all noise). Outside them the objective is evaluated at the
 * clamped theta plus GP_BOUND_PENALTY times the squared distance, which
 * keeps BFGS's line search smooth enough to come back. */
#define GP_LOG_LS_MIN (-6.907755278982137)
#define GP_LOG_LS_MAX 6.907755278982137
#define GP_LOG_SF2_MIN (-9.0)
#define GP_LOG_SF2_MAX 9.0
#define GP_LOG_NOISE_MIN (-30.0)
#define GP_LOG_NOISE_MAX 3.0
#define GP_BOUND_PENALTY 100.0
/* A Cholesky pivot L_ii^2 below this fraction of sf2 counts as a failure:
 * the matrix is singular to working precision and its solves are noise. */
#define GP_PIVOT_MIN 1e-12
/* Below this many points a GP's BLAS calls run on one thread: at 100
 * points a Cholesky factor took 60 us on one thread and 60 to 260 us on
 * two (OpenBLAS wakes its other thread for every call, and on a busy host
 * waits for it), so a proposal went from about 12 to 18 ms with the second
 * thread (docs/searchers.md, "The time of a proposal"). */
#define GP_BLAS_THREADS_FROM 512
/* gp_predict_bound hands half of its points to a second thread from this
 * many kernel values on (points times observations): a thread costs some
 * 50 us, 2,560 candidates at 100 observations about 2 ms. */
#define GP_BOUND_SPLIT_FROM 65536
/* Points per block of gp_predict_many's triangular solve. */
#define GP_PREDICT_BLOCK 256
/* BFGS settings for the hyperparameters: the first step (in log units);
 * the line search's curvature condition (bfgs2's sigma: GSL suggests 0.1,
 * but 0.5 takes 42 evaluations where 0.1 takes 60 to the same likelihood
 * at 100 points, and a fit is most of a proposal's time); and the gradient
 * norm below which a fit has converged, per sqrt(point). */
#define GP_FIT_STEP 0.1
#define GP_FIT_LINE_TOL 0.5
#define GP_FIT_GRAD_TOL 1e-3
/* The random starts are drawn this many prior standard deviations around
 * the prior means, uniformly. */
#define GP_RAW_SPREAD 1.5

struct Gp {
    int d;         /* features, 1 .. GP_MAX_DIMS */
    int cap;       /* points at most */
    int n;         /* points held */
    bool *cat;     /* d: categorical (Hamming) features */
    int tdim;      /* the time feature (gp_set_time_feature), or -1 */
    double *x;     /* cap x d, row-major */
    double *xt;    /* d x cap: x by feature, so kernel_row's loops run over points */
    double *y;     /* cap targets */
    double *ls;    /* d length scales, > 0 */
    double *w;     /* d: 1 / ls^2; 0 for the time feature (not in r^2) */
    double sf2;    /* signal variance, > 0 */
    double noise;  /* noise variance, >= 0 */
    double jitter; /* of the last factorization, absolute */
    bool ready;    /* L and alpha hold the factorization of the n points */
    gsl_matrix *L; /* cap x cap: L in the lower triangle of the n x n block */
    double *alpha; /* cap: K^-1 y */
    double *kv;    /* cap: scratch for k(x, X) */
    double *kw;    /* cap: scratch for L^-1 k, then K^-1 k */
    double *kc;    /* cap: scratch for c(r) of each point */
    /* The pair cache of gp_objective: valid for pair_n points (-1: none). */
    int pair_n;
    double *pairs; /* d x n(n-1)/2: each feature's distances, pair by pair */
    double *pkf;   /* n(n-1)/2: Kf of each pair at the last theta */
    double *pc;    /* n(n-1)/2: c(r) of each pair, then W c */
    double *gtmp;  /* d: scratch for the length-scale gradient */
    /* gp_objective without a gradient leaves L, alpha, pkf and pc as they
     * are at obj_theta; a gradient asked next at the same theta starts
     * from them (GSL's line search asks f, then df, at each point it
     * keeps). Anything else that writes L or the points clears it. */
    bool obj_kept;
    double obj_theta[GP_MAX_DIMS + 2];
};

static double uniform(uint64_t seed, uint64_t a, uint64_t b)
{
    return (double)(sampler__hash(seed, SAMPLER_STREAM_GP_FIT, a, b) >> 11) * 0x1.0p-53;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

Gp *gp_new(int d, const bool *cat, int capacity)
{
    if (d < 1 || d > GP_MAX_DIMS || capacity < 1 || capacity > GP_MAX_POINTS)
        return NULL;
    /* Library code never aborts: GSL reports through return values. */
    gsl_set_error_handler_off();
    Gp *gp = calloc(1, sizeof *gp);
    if (gp == NULL)
        return NULL;
    gp->d = d;
    gp->tdim = -1;
    gp->cap = capacity;
    gp->pair_n = -1;
    size_t ud = (size_t)d, uc = (size_t)capacity;
    gp->cat = calloc(ud, sizeof *gp->cat);
    gp->x = calloc(uc * ud, sizeof *gp->x);
    gp->xt = calloc(uc * ud, sizeof *gp->xt);
    gp->y = calloc(uc, sizeof *gp->y);
    gp->ls = calloc(ud, sizeof *gp->ls);
    gp->w = calloc(ud, sizeof *gp->w);
    gp->gtmp = calloc(ud, sizeof *gp->gtmp);
    gp->alpha = calloc(uc, sizeof *gp->alpha);
    gp->kv = calloc(uc, sizeof *gp->kv);
    gp->kw = calloc(uc, sizeof *gp->kw);
    gp->kc = calloc(uc, sizeof *gp->kc);
    gp->L = gsl_matrix_calloc(uc, uc);
    if (gp->cat == NULL || gp->x == NULL || gp->xt == NULL || gp->y == NULL || gp->ls == NULL ||
        gp->w == NULL || gp->gtmp == NULL || gp->alpha == NULL || gp->kv == NULL ||
        gp->kw == NULL || gp->kc == NULL || gp->L == NULL) {
        gp_free(gp);
        return NULL;
    }
    for (int j = 0; j < d; j++) {
        gp->cat[j] = cat != NULL && cat[j];
        gp->ls[j] = 1.0;
        gp->w[j] = 1.0;
    }
    gp->sf2 = 1.0;
    gp->noise = GP_NOISE_MIN;
    return gp;
}

void gp_free(Gp *gp)
{
    if (gp == NULL)
        return;
    free(gp->cat);
    free(gp->x);
    free(gp->xt);
    free(gp->y);
    free(gp->ls);
    free(gp->w);
    free(gp->gtmp);
    free(gp->alpha);
    free(gp->kv);
    free(gp->kw);
    free(gp->kc);
    free(gp->pairs);
    free(gp->pkf);
    free(gp->pc);
    if (gp->L != NULL)
        gsl_matrix_free(gp->L);
    free(gp);
}

int gp_set_time_feature(Gp *gp, int j)
{
    if (j < -1 || j >= gp->d || (j >= 0 && gp->cat[j]))
        return RUNG_E_INVALID_ARGUMENT;
    if (gp->tdim >= 0)
        gp->w[gp->tdim] = 1.0 / (gp->ls[gp->tdim] * gp->ls[gp->tdim]);
    gp->tdim = j;
    if (j >= 0)
        gp->w[j] = 0.0;
    gp->ready = false;
    gp->pair_n = -1;
    gp->obj_kept = false;
    return 0;
}

int gp_dims(const Gp *gp)
{
    return gp->d;
}

int gp_count(const Gp *gp)
{
    return gp->n;
}

int gp_theta_size(const Gp *gp)
{
    return gp->d + 2;
}

double gp_jitter(const Gp *gp)
{
    return gp->jitter;
}

void gp_get_hyper(const Gp *gp, double *ls, double *sf2, double *noise)
{
    if (ls != NULL)
        memcpy(ls, gp->ls, (size_t)gp->d * sizeof *ls);
    *sf2 = gp->sf2;
    *noise = gp->noise;
}

void gp_get_theta(const Gp *gp, double *theta)
{
    for (int j = 0; j < gp->d; j++)
        theta[j] = log(gp->ls[j]);
    theta[gp->d] = log(gp->sf2);
    double excess = gp->noise - GP_NOISE_MIN;
    theta[gp->d + 1] = excess > exp(GP_LOG_NOISE_MIN) ? log(excess) : GP_LOG_NOISE_MIN;
}

int gp_set_data(Gp *gp, const double *x, const double *y, int n)
{
    if (n < 0 || n > gp->cap || (n > 0 && (x == NULL || y == NULL)))
        return RUNG_E_INVALID_ARGUMENT;
    if (n > 0) {
        memcpy(gp->x, x, (size_t)n * (size_t)gp->d * sizeof *x);
        memcpy(gp->y, y, (size_t)n * sizeof *y);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < gp->d; j++)
            gp->xt[(size_t)j * (size_t)gp->cap + (size_t)i] =
                x[(size_t)i * (size_t)gp->d + (size_t)j];
    gp->n = n;
    gp->ready = false;
    gp->pair_n = -1;
    gp->obj_kept = false;
    return 0;
}

/* e^x for x <= 0, written so that a loop of it vectorizes (glibc's exp is
 * a call per value, and the kernel's exps are most of a proposal's time:
 * docs/searchers.md, "The time of a proposal"). x = k ln2 + r with |r| <=
 * ln2/2 (ln2 in two parts, so k ln2 is exact), e^r by its Taylor series to
 * r^13 (the rest is below 1e-17 of it), and 2^k written into the exponent
 * bits: k is in the low bits of x log2(e) + 1.5 2^52, rounded there by the
 * addition. Within a few ulp of exp (test_gp compares them); NaN stays NaN,
 * and below -708 (where 2^k would not be a normal number) it is 0: e^-708
 * is 3e-308, nil beside any kernel value. */
static inline double exp_nonpos(double x)
{
    const double shifter = 0x1.8p52;
    double kd = x * 1.44269504088896338700 + shifter;
    uint64_t bits;
    memcpy(&bits, &kd, sizeof bits);
    kd -= shifter;
    double r = (x - kd * 6.93147180369123816490e-01) - kd * 1.90821492927058770002e-10;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    bits = (bits + 1023u) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return x < -708.0 ? 0.0 : p * scale;
}

double gp__exp_nonpos(double x)
{
    return exp_nonpos(x);
}

/* k(x, x_i) of the first `count` points into k[i], and c(r) times the time
 * factor (the part of dk/dx_j that the Matérn term gives) into c[i] when c
 * is not NULL. Feature by feature over the points (xt), so each loop
 * vectorizes; r^2 sums the features in their order, as gp_objective's pair
 * cache does, so both give the same bits. */
GP_VECTOR_CLONES static void kernel_row(const Gp *gp, const double *x, int count,
                                        double *restrict k, double *restrict c)
{
    size_t cap = (size_t)gp->cap;
    for (int i = 0; i < count; i++)
        k[i] = 0.0;
    for (int j = 0; j < gp->d; j++) {
        const double *restrict col = gp->xt + (size_t)j * cap;
        double xj = x[j], w = gp->w[j];
        if (gp->cat[j]) {
            for (int i = 0; i < count; i++)
                k[i] += (xj != col[i] ? 1.0 : 0.0) * w;
        } else {
            for (int i = 0; i < count; i++) {
                double t = xj - col[i];
                k[i] += t * t * w;
            }
        }
    }
    double sf2 = gp->sf2;
    if (c != NULL) {
        for (int i = 0; i < count; i++) {
            double r2 = k[i], r = sqrt(r2);
            double e = exp_nonpos(-SQRT5 * r);
            c[i] = (5.0 / 3.0) * sf2 * (1.0 + SQRT5 * r) * e;
            k[i] = sf2 * (1.0 + SQRT5 * r + (5.0 / 3.0) * r2) * e;
        }
    } else {
        for (int i = 0; i < count; i++) {
            double r2 = k[i], r = sqrt(r2);
            k[i] = sf2 * (1.0 + SQRT5 * r + (5.0 / 3.0) * r2) * exp_nonpos(-SQRT5 * r);
        }
    }
    int td = gp->tdim;
    if (td >= 0) {
        /* The time factor exp(-|x_t - x_it| / ls_t). */
        const double *col = gp->xt + (size_t)td * cap;
        for (int i = 0; i < count; i++) {
            double tf = exp_nonpos(-fabs(x[td] - col[i]) / gp->ls[td]);
            k[i] *= tf;
            if (c != NULL)
                c[i] *= tf;
        }
    }
}

/* Factorizes the n x n block whose strictly lower triangle holds the
 * kernel, with `diag` (sf2 + noise) plus a jitter growing from 0 through
 * GP_JITTER_FIRST .. GP_JITTER_LAST times sf2 on the diagonal. */
static int factor_with_jitter(Gp *gp, int n, double diag, double sf2, double *jitter_out)
{
    *jitter_out = 0.0;
    if (n == 0) /* GSL has no empty matrices; nothing to factorize */
        return 0;
    gsl_matrix_view A = gsl_matrix_submatrix(gp->L, 0, 0, (size_t)n, (size_t)n);
    double *a = gp->L->data;
    size_t tda = gp->L->tda;
    double jitter = 0.0;
    for (int attempt = 0;; attempt++) {
        if (attempt > 0) {
            /* decomp1 saved the original lower triangle in the upper one. */
            for (int i = 1; i < n; i++)
                for (int j = 0; j < i; j++)
                    a[(size_t)i * tda + (size_t)j] = a[(size_t)j * tda + (size_t)i];
        }
        for (int i = 0; i < n; i++)
            a[(size_t)i * tda + (size_t)i] = diag + jitter;
        int status = gsl_linalg_cholesky_decomp1(&A.matrix);
        if (status != GSL_SUCCESS && status != GSL_EDOM)
            return RUNG_E_INTERNAL;
        bool ok = status == GSL_SUCCESS;
        for (int i = 0; ok && i < n; i++) {
            double p = a[(size_t)i * tda + (size_t)i];
            ok = p * p >= GP_PIVOT_MIN * sf2 && isfinite(p);
        }
        if (ok) {
            *jitter_out = jitter;
            return 0;
        }
        jitter = jitter == 0.0 ? GP_JITTER_FIRST * sf2 : jitter * 10.0;
        if (jitter > GP_JITTER_LAST * sf2 * (1.0 + 1e-9))
            return RUNG_E_INTERNAL;
    }
}

/* alpha = (L L^T)^-1 y over the first n points. */
static int solve_alpha(Gp *gp, int n)
{
    if (n == 0)
        return 0;
    gsl_matrix_view A = gsl_matrix_submatrix(gp->L, 0, 0, (size_t)n, (size_t)n);
    gsl_vector_view al = gsl_vector_view_array(gp->alpha, (size_t)n);
    memcpy(gp->alpha, gp->y, (size_t)n * sizeof *gp->y);
    if (gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, &A.matrix, &al.vector) != 0 ||
        gsl_blas_dtrsv(CblasLower, CblasTrans, CblasNonUnit, &A.matrix, &al.vector) != 0)
        return RUNG_E_INTERNAL;
    for (int i = 0; i < n; i++)
        if (!isfinite(gp->alpha[i]))
            return RUNG_E_INTERNAL;
    return 0;
}

int gp_set_hyper(Gp *gp, const double *ls, double sf2, double noise)
{
    if (!(sf2 > 0.0) || !isfinite(sf2) || !(noise >= 0.0) || !isfinite(noise))
        return RUNG_E_INVALID_ARGUMENT;
    for (int j = 0; j < gp->d; j++)
        if (!(ls[j] > 0.0) || !isfinite(ls[j]))
            return RUNG_E_INVALID_ARGUMENT;
    for (int j = 0; j < gp->d; j++) {
        gp->ls[j] = ls[j];
        gp->w[j] = j == gp->tdim ? 0.0 : 1.0 / (ls[j] * ls[j]);
    }
    gp->sf2 = sf2;
    gp->noise = noise;
    gp->ready = false;
    gp->obj_kept = false;
    int n = gp->n;
    double *a = gp->L->data;
    size_t tda = gp->L->tda;
    for (int i = 1; i < n; i++)
        kernel_row(gp, gp->x + (size_t)i * (size_t)gp->d, i, a + (size_t)i * tda, NULL);
    int rc = factor_with_jitter(gp, n, sf2 + noise, sf2, &gp->jitter);
    if (rc == 0)
        rc = solve_alpha(gp, n);
    gp->ready = rc == 0;
    return rc;
}

/* Builds the pair cache for the n points held. */
static int build_pairs(Gp *gp)
{
    if (gp->pair_n == gp->n)
        return 0;
    int n = gp->n, d = gp->d;
    size_t np = (size_t)n * (size_t)(n - 1) / 2;
    size_t alloc = np > 0 ? np : 1;
    free(gp->pairs);
    free(gp->pkf);
    free(gp->pc);
    gp->pairs = malloc(alloc * (size_t)d * sizeof *gp->pairs);
    gp->pkf = malloc(alloc * sizeof *gp->pkf);
    gp->pc = malloc(alloc * sizeof *gp->pc);
    if (gp->pairs == NULL || gp->pkf == NULL || gp->pc == NULL) {
        gp->pair_n = -1;
        return RUNG_E_INTERNAL;
    }
    for (int j = 0; j < d; j++) {
        double *col = gp->pairs + (size_t)j * np;
        const double *xj = gp->xt + (size_t)j * (size_t)gp->cap;
        size_t p = 0;
        for (int i = 1; i < n; i++) {
            for (int k = 0; k < i; k++, p++) {
                double t = xj[i] - xj[k];
                col[p] = gp->cat[j] ? (xj[i] != xj[k] ? 1.0 : 0.0) : t * t;
                if (j == gp->tdim)
                    col[p] = fabs(t); /* the time factor's |dt| */
            }
        }
    }
    gp->pair_n = n;
    return 0;
}

/* Kf and c(r) (times the time factor vt = 1 / ls_t) of every pair of the
 * cache into pkf and pc, at the weights w: r^2 summed feature by feature,
 * as kernel_row does, so both give the same bits. */
GP_VECTOR_CLONES static void pair_kernels(Gp *gp, size_t np, double sf2, double vt)
{
    double *restrict r2 = gp->pkf, *restrict pc = gp->pc;
    for (size_t p = 0; p < np; p++)
        r2[p] = 0.0;
    for (int j = 0; j < gp->d; j++) {
        const double *restrict col = gp->pairs + (size_t)j * np;
        double w = gp->w[j];
        for (size_t p = 0; p < np; p++)
            r2[p] += col[p] * w;
    }
    for (size_t p = 0; p < np; p++) {
        double r = sqrt(r2[p]);
        double e = exp_nonpos(-SQRT5 * r);
        pc[p] = (5.0 / 3.0) * sf2 * (1.0 + SQRT5 * r) * e;
        r2[p] = sf2 * (1.0 + SQRT5 * r + (5.0 / 3.0) * r2[p]) * e; /* now Kf */
    }
    if (gp->tdim >= 0) {
        const double *col = gp->pairs + (size_t)gp->tdim * np;
        for (size_t p = 0; p < np; p++) {
            double tf = exp_nonpos(-col[p] * vt);
            r2[p] *= tf;
            pc[p] *= tf;
        }
    }
}

/* Bounds of theta[j]. */
static void theta_bounds(const Gp *gp, int j, double *lo, double *hi)
{
    if (j < gp->d) {
        *lo = GP_LOG_LS_MIN;
        *hi = GP_LOG_LS_MAX;
    } else if (j == gp->d) {
        *lo = GP_LOG_SF2_MIN;
        *hi = GP_LOG_SF2_MAX;
    } else {
        *lo = GP_LOG_NOISE_MIN;
        *hi = GP_LOG_NOISE_MAX;
    }
}

int gp_objective(Gp *gp, const double *theta_in, const GpPrior *prior, double *value, double *grad)
{
    int n = gp->n, d = gp->d, nt = d + 2;
    if (n < 1)
        return RUNG_E_INVALID_ARGUMENT;
    for (int j = 0; j < nt; j++)
        if (!isfinite(theta_in[j]))
            return RUNG_E_INVALID_ARGUMENT;
    bool kept = grad != NULL && gp->obj_kept && gp->pair_n == n &&
                memcmp(theta_in, gp->obj_theta, (size_t)nt * sizeof *theta_in) == 0;
    gp->obj_kept = false;
    int rc = build_pairs(gp);
    if (rc != 0)
        return rc;
    gp->ready = false;

    /* Clamp into the bounds; the penalty and its gradient are added last. */
    double th[GP_MAX_DIMS + 2];
    for (int j = 0; j < nt; j++) {
        double lo, hi;
        theta_bounds(gp, j, &lo, &hi);
        th[j] = clampd(theta_in[j], lo, hi);
    }
    for (int j = 0; j < d; j++)
        gp->w[j] = j == gp->tdim ? 0.0 : exp(-2.0 * th[j]);
    int td = gp->tdim;
    double vt = td >= 0 ? exp(-th[td]) : 0.0; /* 1 / ls_t */
    double sf2 = exp(th[d]);
    double noise_x = exp(th[d + 1]);
    double noise = GP_NOISE_MIN + noise_x;

    /* The kernel of every pair, then into the strictly lower triangle,
     * factorized (unless the last call left that at this theta). */
    size_t np = (size_t)n * (size_t)(n - 1) / 2;
    double *a = gp->L->data;
    size_t tda = gp->L->tda;
    size_t p = 0;
    if (!kept) {
        pair_kernels(gp, np, sf2, vt);
        for (int i = 1; i < n; i++) {
            memcpy(a + (size_t)i * tda, gp->pkf + p, (size_t)i * sizeof *a);
            p += (size_t)i;
        }
        double jitter = 0.0;
        rc = factor_with_jitter(gp, n, sf2 + noise, sf2, &jitter);
        if (rc == 0)
            rc = solve_alpha(gp, n);
        if (rc != 0)
            return rc;
    }

    double f = HALF_LOG_2PI * n;
    for (int i = 0; i < n; i++)
        f += 0.5 * gp->y[i] * gp->alpha[i] + log(a[(size_t)i * tda + (size_t)i]);

    if (grad != NULL) {
        /* K^-1 in place of L (both triangles). */
        gsl_matrix_view A = gsl_matrix_submatrix(gp->L, 0, 0, (size_t)n, (size_t)n);
        if (gsl_linalg_cholesky_invert(&A.matrix) != GSL_SUCCESS)
            return RUNG_E_INTERNAL;
        double tr_w = 0.0;
        for (int i = 0; i < n; i++)
            tr_w += a[(size_t)i * tda + (size_t)i] - gp->alpha[i] * gp->alpha[i];
        double g_sf2 = 0.5 * sf2 * tr_w, g_t = 0.0;
        p = 0;
        for (int i = 1; i < n; i++) {
            double ai = gp->alpha[i];
            const double *inv_row = a + (size_t)i * tda;
            for (int k = 0; k < i; k++, p++) {
                double wik = inv_row[k] - ai * gp->alpha[k];
                g_sf2 += wik * gp->pkf[p];
                gp->pc[p] *= wik;
                /* dk/dlog ls_t = k |dt| / ls_t */
                if (td >= 0)
                    g_t += wik * gp->pkf[p] * gp->pairs[(size_t)td * np + p];
            }
        }
        /* Length scales: pairs (W c), scaled by w_j. */
        for (int j = 0; j < d; j++)
            gp->gtmp[j] = 0.0;
        if (np > 0) {
            gsl_matrix_const_view P = gsl_matrix_const_view_array(gp->pairs, (size_t)d, np);
            gsl_vector_const_view u = gsl_vector_const_view_array(gp->pc, np);
            gsl_vector_view g = gsl_vector_view_array(gp->gtmp, (size_t)d);
            if (gsl_blas_dgemv(CblasNoTrans, 1.0, &P.matrix, &u.vector, 0.0, &g.vector) != 0)
                return RUNG_E_INTERNAL;
        }
        for (int j = 0; j < d; j++)
            grad[j] = gp->gtmp[j] * gp->w[j];
        if (td >= 0)
            grad[td] = g_t * vt;
        grad[d] = g_sf2;
        grad[d + 1] = 0.5 * noise_x * tr_w;
        /* A clamped coordinate does not move the clamped objective. */
        for (int j = 0; j < nt; j++)
            if (th[j] != theta_in[j])
                grad[j] = 0.0;
    }

    if (prior != NULL) {
        for (int j = 0; j < nt; j++) {
            double mean = prior->log_ls_mean, sd = prior->log_ls_sd;
            if (j == d) {
                mean = prior->log_sf2_mean;
                sd = prior->log_sf2_sd;
            } else if (j == d + 1) {
                mean = prior->log_noise_mean;
                sd = prior->log_noise_sd;
            }
            double z = (th[j] - mean) / sd;
            f += 0.5 * z * z;
            if (grad != NULL && th[j] == theta_in[j])
                grad[j] += z / sd;
        }
    }
    for (int j = 0; j < nt; j++) {
        double dist = theta_in[j] - th[j];
        f += GP_BOUND_PENALTY * dist * dist;
        if (grad != NULL)
            grad[j] += 2.0 * GP_BOUND_PENALTY * dist;
    }
    if (!isfinite(f))
        return RUNG_E_INTERNAL;
    if (grad != NULL)
        for (int j = 0; j < nt; j++)
            if (!isfinite(grad[j]))
                return RUNG_E_INTERNAL;
    *value = f;
    if (grad == NULL) {
        gp->obj_kept = true;
        memcpy(gp->obj_theta, theta_in, (size_t)nt * sizeof *theta_in);
    }
    return 0;
}

/* ---- fitting ------------------------------------------------------------ */

typedef struct FitCtx {
    Gp *gp;
    const GpPrior *prior;
    bool failed; /* an evaluation failed: the run's result is not trusted */
} FitCtx;

/* What GSL's line search sees where the objective cannot be evaluated: far
 * worse than anything real, yet finite so its interpolation stays finite. */
#define GP_FIT_BAD 1e100

static double fit_f(const gsl_vector *v, void *params)
{
    FitCtx *ctx = params;
    double th[GP_MAX_DIMS + 2], f;
    for (size_t j = 0; j < v->size; j++)
        th[j] = gsl_vector_get(v, j);
    if (gp_objective(ctx->gp, th, ctx->prior, &f, NULL) != 0) {
        ctx->failed = true;
        return GP_FIT_BAD;
    }
    return f;
}

static void fit_fdf(const gsl_vector *v, void *params, double *f, gsl_vector *g)
{
    FitCtx *ctx = params;
    double th[GP_MAX_DIMS + 2], gr[GP_MAX_DIMS + 2];
    for (size_t j = 0; j < v->size; j++)
        th[j] = gsl_vector_get(v, j);
    if (gp_objective(ctx->gp, th, ctx->prior, f, gr) != 0) {
        ctx->failed = true;
        *f = GP_FIT_BAD;
        gsl_vector_set_zero(g);
        return;
    }
    for (size_t j = 0; j < v->size; j++)
        gsl_vector_set(g, j, gr[j]);
}

static void fit_df(const gsl_vector *v, void *params, gsl_vector *g)
{
    double f;
    fit_fdf(v, params, &f, g);
}

/* One BFGS run from theta (updated in place to the best point found);
 * *f_out gets its objective, +inf when the run failed. */
static int bfgs_run(FitCtx *ctx, double *theta, int max_iter, double *f_out)
{
    size_t nt = (size_t)gp_theta_size(ctx->gp);
    *f_out = INFINITY;
    gsl_multimin_fdfminimizer *s =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, nt);
    gsl_vector *x0 = gsl_vector_alloc(nt);
    if (s == NULL || x0 == NULL) {
        if (s != NULL)
            gsl_multimin_fdfminimizer_free(s);
        if (x0 != NULL)
            gsl_vector_free(x0);
        return RUNG_E_INTERNAL;
    }
    for (size_t j = 0; j < nt; j++)
        gsl_vector_set(x0, j, theta[j]);
    gsl_multimin_function_fdf fdf = {
        .f = fit_f, .df = fit_df, .fdf = fit_fdf, .n = nt, .params = ctx};
    ctx->failed = false;
    int status = gsl_multimin_fdfminimizer_set(s, &fdf, x0, GP_FIT_STEP, GP_FIT_LINE_TOL);
    double gtol = GP_FIT_GRAD_TOL * sqrt((double)ctx->gp->n);
    for (int it = 0; status == GSL_SUCCESS && !ctx->failed && it < max_iter; it++) {
        /* GSL_ENOPROG (no better point along the line) ends a run as
         * converged; so does any other status: we keep the best point. */
        if (gsl_multimin_fdfminimizer_iterate(s) != GSL_SUCCESS)
            break;
        if (gsl_multimin_test_gradient(gsl_multimin_fdfminimizer_gradient(s), gtol) == GSL_SUCCESS)
            break;
    }
    if (status == GSL_SUCCESS) {
        double f = gsl_multimin_fdfminimizer_minimum(s);
        const gsl_vector *xm = gsl_multimin_fdfminimizer_x(s);
        bool finite = isfinite(f) && f < GP_FIT_BAD;
        for (size_t j = 0; j < nt && finite; j++)
            finite = isfinite(gsl_vector_get(xm, j));
        if (finite) {
            for (size_t j = 0; j < nt; j++)
                theta[j] = gsl_vector_get(xm, j);
            *f_out = f;
        }
    }
    gsl_multimin_fdfminimizer_free(s);
    gsl_vector_free(x0);
    return 0;
}

int gp_fit(Gp *gp, const GpFitOptions *opt, double *theta_out)
{
    int d = gp->d, nt = d + 2;
    if (gp->n < 1 || opt->n_raw < 0 || opt->n_starts < 1 || opt->max_iter < 1)
        return RUNG_E_INVALID_ARGUMENT;
    const GpPrior *pr = &opt->prior;
    /* Candidate starts: theta0 (or the prior means), then n_raw draws. */
    int ncand = 1 + opt->n_raw;
    double *cand = malloc((size_t)ncand * (size_t)nt * sizeof *cand);
    double *fval = malloc((size_t)ncand * sizeof *fval);
    int *order = malloc((size_t)ncand * sizeof *order);
    if (cand == NULL || fval == NULL || order == NULL) {
        free(cand);
        free(fval);
        free(order);
        return RUNG_E_INTERNAL;
    }
    for (int j = 0; j < nt; j++) {
        double mean = j < d ? pr->log_ls_mean : (j == d ? pr->log_sf2_mean : pr->log_noise_mean);
        cand[j] = opt->theta0 != NULL ? opt->theta0[j] : mean;
    }
    for (int c = 1; c < ncand; c++) {
        for (int j = 0; j < nt; j++) {
            double mean = pr->log_ls_mean, sd = pr->log_ls_sd;
            if (j == d) {
                mean = pr->log_sf2_mean;
                sd = pr->log_sf2_sd;
            } else if (j == d + 1) {
                mean = pr->log_noise_mean;
                sd = pr->log_noise_sd;
            }
            double lo, hi;
            theta_bounds(gp, j, &lo, &hi);
            double u = uniform(opt->seed, (uint64_t)c, (uint64_t)j);
            cand[(size_t)c * (size_t)nt + (size_t)j] =
                clampd(mean + GP_RAW_SPREAD * sd * (2.0 * u - 1.0), lo, hi);
        }
    }
    int rc = 0;
    for (int c = 0; c < ncand; c++) {
        order[c] = c;
        /* An unusable start is simply not chosen. */
        if (gp_objective(gp, cand + (size_t)c * (size_t)nt, pr, &fval[c], NULL) != 0)
            fval[c] = INFINITY;
    }
    /* Runs start from the best starts (insertion sort: there are few; a
     * tie keeps the earlier, so theta0 first). */
    for (int c = 1; c < ncand; c++) {
        int k = order[c];
        int i = c - 1;
        while (i >= 0 && fval[order[i]] > fval[k]) {
            order[i + 1] = order[i];
            i--;
        }
        order[i + 1] = k;
    }
    double best_f = INFINITY;
    double best[GP_MAX_DIMS + 2], th[GP_MAX_DIMS + 2];
    memcpy(best, cand, (size_t)nt * sizeof *best);
    int runs = opt->n_starts < ncand ? opt->n_starts : ncand;
    FitCtx ctx = {.gp = gp, .prior = pr, .failed = false};
    for (int r = 0; r < runs && rc == 0; r++) {
        int c = order[r];
        if (r > 0 && !isfinite(fval[c]))
            break; /* an unusable start: so are the rest */
        memcpy(th, cand + (size_t)c * (size_t)nt, (size_t)nt * sizeof *th);
        double f;
        rc = bfgs_run(&ctx, th, opt->max_iter, &f);
        if (rc == 0 && f < best_f) {
            best_f = f;
            memcpy(best, th, (size_t)nt * sizeof *best);
        }
    }
    free(cand);
    free(fval);
    free(order);
    if (rc != 0)
        return rc;
    /* Every run failed: keep the start, which the caller's defaults made. */
    double ls[GP_MAX_DIMS];
    for (int j = 0; j < nt; j++) {
        double lo, hi;
        theta_bounds(gp, j, &lo, &hi);
        best[j] = clampd(best[j], lo, hi);
    }
    for (int j = 0; j < d; j++)
        ls[j] = exp(best[j]);
    if (theta_out != NULL)
        memcpy(theta_out, best, (size_t)nt * sizeof *best);
    return gp_set_hyper(gp, ls, exp(best[d]), GP_NOISE_MIN + exp(best[d + 1]));
}

/* ---- prediction --------------------------------------------------------- */

int gp_predict(Gp *gp, const double *x, double *mean, double *var, double *dmean, double *dvar)
{
    if (!gp->ready)
        return RUNG_E_INVALID_ARGUMENT;
    int n = gp->n, d = gp->d;
    bool grads = dmean != NULL || dvar != NULL;
    double mu = 0.0;
    kernel_row(gp, x, n, gp->kv, grads ? gp->kc : NULL);
    for (int i = 0; i < n; i++)
        mu += gp->kv[i] * gp->alpha[i];
    double v = gp->sf2;
    if (n > 0) {
        memcpy(gp->kw, gp->kv, (size_t)n * sizeof *gp->kw);
        gsl_matrix_view A = gsl_matrix_submatrix(gp->L, 0, 0, (size_t)n, (size_t)n);
        gsl_vector_view kw = gsl_vector_view_array(gp->kw, (size_t)n);
        if (gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, &A.matrix, &kw.vector) != 0)
            return RUNG_E_INTERNAL;
        double vv = 0.0;
        for (int i = 0; i < n; i++)
            vv += gp->kw[i] * gp->kw[i];
        v -= vv;
        if (dvar != NULL &&
            gsl_blas_dtrsv(CblasLower, CblasTrans, CblasNonUnit, &A.matrix, &kw.vector) != 0)
            return RUNG_E_INTERNAL;
    }
    if (!isfinite(mu) || !isfinite(v))
        return RUNG_E_INTERNAL;
    *mean = mu;
    *var = v > 0.0 ? v : 0.0;
    if (!grads)
        return 0;
    /* dk_i/dx_j = -c_i (x_j - x_ij) / ls_j^2; the mean's gradient sums it
     * with alpha, the variance's with -2 K^-1 k (now in kw). */
    for (int j = 0; j < d; j++) {
        if (dmean != NULL)
            dmean[j] = 0.0;
        if (dvar != NULL)
            dvar[j] = 0.0;
    }
    for (int i = 0; i < n; i++) {
        const double *xi = gp->x + (size_t)i * (size_t)d;
        double ci = gp->kc[i];
        double am = -ci * gp->alpha[i];
        double av = dvar != NULL ? 2.0 * ci * gp->kw[i] : 0.0;
        for (int j = 0; j < d; j++) {
            if (gp->cat[j])
                continue;
            if (j == gp->tdim) {
                /* dk_i/dx_t = -k_i sign(x_t - x_it) / ls_t */
                double diff = x[j] - xi[j];
                double dk = -gp->kv[i] * (diff > 0 ? 1.0 : (diff < 0 ? -1.0 : 0.0)) / gp->ls[j];
                if (dmean != NULL)
                    dmean[j] += gp->alpha[i] * dk;
                if (dvar != NULL)
                    dvar[j] -= 2.0 * gp->kw[i] * dk;
                continue;
            }
            double t = (x[j] - xi[j]) * gp->w[j];
            if (dmean != NULL)
                dmean[j] += am * t;
            if (dvar != NULL)
                dvar[j] += av * t;
        }
    }
    /* The clamp at 0 has no slope. */
    if (dvar != NULL && !(v > 0.0))
        for (int j = 0; j < d; j++)
            dvar[j] = 0.0;
    return 0;
}

int gp_predict_many(Gp *gp, const double *x, int m, double *mean, double *var)
{
    if (!gp->ready || m < 0)
        return RUNG_E_INVALID_ARGUMENT;
    int n = gp->n, d = gp->d;
    if (n == 0) {
        for (int r = 0; r < m; r++) {
            mean[r] = 0.0;
            var[r] = gp->sf2;
        }
        return 0;
    }
    int block = m < GP_PREDICT_BLOCK ? m : GP_PREDICT_BLOCK;
    if (block == 0)
        return 0;
    gsl_matrix *ks = gsl_matrix_alloc((size_t)block, (size_t)n);
    if (ks == NULL)
        return RUNG_E_INTERNAL;
    gsl_matrix_view A = gsl_matrix_submatrix(gp->L, 0, 0, (size_t)n, (size_t)n);
    int rc = 0;
    for (int r0 = 0; r0 < m && rc == 0; r0 += block) {
        int b = m - r0 < block ? m - r0 : block;
        gsl_matrix_view kb = gsl_matrix_submatrix(ks, 0, 0, (size_t)b, (size_t)n);
        for (int r = 0; r < b; r++) {
            const double *xr = x + (size_t)(r0 + r) * (size_t)d;
            double *row = gsl_matrix_ptr(&kb.matrix, (size_t)r, 0);
            double mu = 0.0;
            kernel_row(gp, xr, n, row, NULL);
            for (int i = 0; i < n; i++)
                mu += row[i] * gp->alpha[i];
            mean[r0 + r] = mu;
        }
        /* Row r of K* L^-T is (L^-1 k_r)^T. */
        if (gsl_blas_dtrsm(CblasRight, CblasLower, CblasTrans, CblasNonUnit, 1.0, &A.matrix,
                           &kb.matrix) != 0) {
            rc = RUNG_E_INTERNAL;
            break;
        }
        for (int r = 0; r < b; r++) {
            const double *row = gsl_matrix_const_ptr(&kb.matrix, (size_t)r, 0);
            double vv = 0.0;
            for (int i = 0; i < n; i++)
                vv += row[i] * row[i];
            double v = gp->sf2 - vv;
            if (!isfinite(v) || !isfinite(mean[r0 + r])) {
                rc = RUNG_E_INTERNAL;
                break;
            }
            var[r0 + r] = v > 0.0 ? v : 0.0;
        }
    }
    gsl_matrix_free(ks);
    return rc;
}

/* gp_predict_bound's rows r0 .. r1-1, with `row` (n doubles) as scratch;
 * the result of a part is in rc. */
typedef struct BoundPart {
    const Gp *gp;
    const double *x, *kii;
    int r0, r1;
    double *mean, *var_hi, *row;
    int rc;
} BoundPart;

static void *bound_part(void *arg)
{
    BoundPart *p = arg;
    const Gp *gp = p->gp;
    int n = gp->n;
    p->rc = 0;
    for (int r = p->r0; r < p->r1; r++) {
        kernel_row(gp, p->x + (size_t)r * (size_t)gp->d, n, p->row, NULL);
        double mu = 0.0, most = 0.0;
        for (int i = 0; i < n; i++) {
            double k = p->row[i];
            mu += k * gp->alpha[i];
            double e = k * k / p->kii[i];
            if (e > most)
                most = e;
        }
        double v = gp->sf2 - most;
        if (!isfinite(v) || !isfinite(mu)) {
            p->rc = RUNG_E_INTERNAL;
            break;
        }
        p->mean[r] = mu;
        p->var_hi[r] = v > 0.0 ? v : 0.0;
    }
    return NULL;
}

int gp_predict_bound(Gp *gp, const double *x, int m, double *mean, double *var_hi)
{
    if (!gp->ready || m < 0)
        return RUNG_E_INVALID_ARGUMENT;
    int n = gp->n;
    /* K_ii as factored (with noise, jitter, or a pivot gp_add_point
     * raised): the squares of L's row i, which sum to it. */
    double *kii = gp->kv;
    const double *a = gp->L->data;
    size_t tda = gp->L->tda;
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int j = 0; j <= i; j++)
            s += a[(size_t)i * tda + (size_t)j] * a[(size_t)i * tda + (size_t)j];
        kii[i] = s;
    }
    /* Each point is computed alone, so the second half can go to a thread
     * of its own where that pays (the same bits either way); when the
     * thread cannot be had, this one does all. */
    BoundPart parts[2] = {
        {gp, x, kii, 0, m, mean, var_hi, gp->kw, 0},
        {gp, x, kii, m, m, mean, var_hi, NULL, 0},
    };
    pthread_t helper;
    bool split = (int64_t)m * n >= GP_BOUND_SPLIT_FROM &&
                 (parts[1].row = malloc((size_t)n * sizeof *parts[1].row)) != NULL;
    if (split) {
        parts[0].r1 = parts[1].r0 = m / 2;
        if (pthread_create(&helper, NULL, bound_part, &parts[1]) != 0) {
            parts[0].r1 = m;
            split = false;
        }
    }
    bound_part(&parts[0]);
    if (split)
        pthread_join(helper, NULL);
    free(parts[1].row);
    return parts[0].rc != 0 ? parts[0].rc : parts[1].rc;
}

int gp_add_point(Gp *gp, const double *x, double y)
{
    if (!gp->ready || gp->n >= gp->cap || !isfinite(y))
        return RUNG_E_INVALID_ARGUMENT;
    int n = gp->n, d = gp->d;
    double *a = gp->L->data;
    size_t tda = gp->L->tda;
    kernel_row(gp, x, n, gp->kw, NULL);
    double vv = 0.0;
    if (n > 0) {
        gsl_matrix_view A = gsl_matrix_submatrix(gp->L, 0, 0, (size_t)n, (size_t)n);
        gsl_vector_view kw = gsl_vector_view_array(gp->kw, (size_t)n);
        if (gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, &A.matrix, &kw.vector) != 0)
            return RUNG_E_INTERNAL;
        for (int i = 0; i < n; i++)
            vv += gp->kw[i] * gp->kw[i];
    }
    /* The new pivot: what the other points leave unexplained, plus noise.
     * A point the others determine exactly (a duplicate without noise)
     * gets the smallest pivot a factorization accepts. */
    double piv2 = gp->sf2 + gp->noise + gp->jitter - vv;
    if (!(piv2 >= GP_PIVOT_MIN * gp->sf2))
        piv2 = GP_PIVOT_MIN * gp->sf2;
    for (int i = 0; i < n; i++)
        a[(size_t)n * tda + (size_t)i] = gp->kw[i];
    a[(size_t)n * tda + (size_t)n] = sqrt(piv2);
    memcpy(gp->x + (size_t)n * (size_t)d, x, (size_t)d * sizeof *x);
    for (int j = 0; j < d; j++)
        gp->xt[(size_t)j * (size_t)gp->cap + (size_t)n] = x[j];
    gp->y[n] = y;
    gp->n = n + 1;
    gp->pair_n = -1;
    gp->obj_kept = false;
    int rc = solve_alpha(gp, gp->n);
    gp->ready = rc == 0;
    return rc;
}

const char *gp_blas_core(void)
{
    return openblas_get_corename();
}

void gp_blas_threads_for(int n)
{
    /* OpenBLAS's own count, read once: what a large GP gets. Not given back
     * after each proposal: raising the count wakes OpenBLAS's threads, which
     * then spin for a while on the other core. */
    static int threads_default;
    if (threads_default == 0)
        threads_default = openblas_get_num_threads();
    int want = n >= GP_BLAS_THREADS_FROM ? threads_default : 1;
    if (openblas_get_num_threads() != want)
        openblas_set_num_threads(want);
}

/* A symmetric positive definite test matrix: a Gaussian kernel of width 8
 * over 0 .. n-1 plus 0.1 on the diagonal. */
static double check_entry(int i, int j)
{
    double t = (i - j) / 8.0;
    return exp(-t * t) + (i == j ? 0.1 : 0.0);
}

int gp_check_blas(char *why, size_t size)
{
    enum { N = 67 }; /* not a multiple of any kernel's tile */
    static double a[N * N], inv[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            a[i * N + j] = check_entry(i, j);
    gsl_matrix_view A = gsl_matrix_view_array(a, N, N);
    if (gsl_linalg_cholesky_decomp1(&A.matrix) != GSL_SUCCESS) {
        snprintf(why, size, "the Cholesky factor of a positive definite %dx%d matrix failed", N, N);
        return -1;
    }
    /* L L^T against the matrix. */
    double worst = 0.0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0.0;
            for (int k = 0; k <= j; k++)
                s += a[i * N + k] * a[j * N + k];
            worst = fmax(worst, fabs(s - check_entry(i, j)));
        }
    if (worst > 1e-10) {
        snprintf(why, size, "the Cholesky factor of a %dx%d matrix is off by %g", N, N, worst);
        return -1;
    }
    memcpy(inv, a, sizeof inv);
    gsl_matrix_view I = gsl_matrix_view_array(inv, N, N);
    if (gsl_linalg_cholesky_invert(&I.matrix) != GSL_SUCCESS) {
        snprintf(why, size, "the inverse of a %dx%d matrix from its Cholesky factor failed", N, N);
        return -1;
    }
    /* The inverse times the matrix against the identity. */
    worst = 0.0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < N; k++)
                s += inv[i * N + k] * check_entry(k, j);
            worst = fmax(worst, fabs(s - (i == j ? 1.0 : 0.0)));
        }
    if (worst > 1e-8) {
        snprintf(why, size, "the inverse of a %dx%d matrix is off by %g", N, N, worst);
        return -1;
    }
    return 0;
}
