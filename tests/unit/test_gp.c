/* Unit tests of sampler/gp.c and sampler/acq.c: the GP posterior against a
 * dense textbook computation (explicit inverse by LU), the likelihood and
 * its gradient against a dense formula and central differences, jitter
 * recovery of a singular kernel matrix, the rank-one extension of the
 * factor, a fit that tells a relevant feature from an irrelevant one, and
 * log EI against its naive formula, far into the tail, with its slopes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_permutation.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acq.h"
#include "error.h"
#include "gp.h"
#include "splitmix.h"

/* ---- a dense reference ------------------------------------------------- */

/* The time feature of the tests that set one (gp_set_time_feature), or -1. */
static int ref_time = -1;

/* Matérn-5/2 with ARD, written out from the textbook (Rasmussen and
 * Williams, eq. 4.17) independently of gp.c: categorical features count 1
 * per mismatch. With a time feature t, that one is left out of r and the
 * kernel is multiplied by PB2's (1 - eps)^(|dt| / 2), eps = 1 - e^(-2/ls_t). */
static double ref_kernel(const double *a, const double *b, int d, const bool *cat, const double *ls,
                         double sf2)
{
    double r2 = 0.0, tv = 1.0;
    for (int j = 0; j < d; j++) {
        double diff = cat[j] ? (a[j] == b[j] ? 0.0 : 1.0) : a[j] - b[j];
        if (j == ref_time) {
            double eps = 1.0 - exp(-2.0 / ls[j]);
            tv = pow(1.0 - eps, fabs(diff) / 2.0);
            continue;
        }
        r2 += (diff / ls[j]) * (diff / ls[j]);
    }
    double r = sqrt(r2);
    return sf2 * (1.0 + sqrt(5.0) * r + 5.0 * r2 / 3.0) * exp(-sqrt(5.0) * r) * tv;
}

/* K + noise I and its inverse by LU, with log det. */
typedef struct Dense {
    int n;
    gsl_matrix *K, *Kinv;
    double logdet;
} Dense;

static Dense dense_new(const double *x, int n, int d, const bool *cat, const double *ls, double sf2,
                       double noise)
{
    Dense D = {.n = n, .K = gsl_matrix_alloc(n, n), .Kinv = gsl_matrix_alloc(n, n)};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            gsl_matrix_set(D.K, i, k,
                           ref_kernel(x + i * d, x + k * d, d, cat, ls, sf2) +
                               (i == k ? noise : 0.0));
    gsl_matrix *lu = gsl_matrix_alloc(n, n);
    gsl_permutation *perm = gsl_permutation_alloc(n);
    int sign = 0;
    gsl_matrix_memcpy(lu, D.K);
    assert_int_equal(gsl_linalg_LU_decomp(lu, perm, &sign), GSL_SUCCESS);
    assert_int_equal(gsl_linalg_LU_invert(lu, perm, D.Kinv), GSL_SUCCESS);
    D.logdet = gsl_linalg_LU_lndet(lu);
    gsl_matrix_free(lu);
    gsl_permutation_free(perm);
    return D;
}

static void dense_free(Dense *D)
{
    gsl_matrix_free(D->K);
    gsl_matrix_free(D->Kinv);
}

/* Posterior mean k^T K^-1 y and variance sf2 - k^T K^-1 k at xs. */
static void dense_predict(const Dense *D, const double *x, const double *y, int d, const bool *cat,
                          const double *ls, double sf2, const double *xs, double *mean, double *var)
{
    int n = D->n;
    double m = 0.0, v = sf2;
    for (int i = 0; i < n; i++) {
        double ki = ref_kernel(xs, x + i * d, d, cat, ls, sf2);
        for (int k = 0; k < n; k++) {
            double kk = ref_kernel(xs, x + k * d, d, cat, ls, sf2);
            double inv = gsl_matrix_get(D->Kinv, i, k);
            m += ki * inv * y[k];
            v -= ki * inv * kk;
        }
    }
    *mean = m;
    *var = v;
}

static void assert_close(double got, double want, double atol, double rtol, const char *what)
{
    if (!(fabs(got - want) <= atol + rtol * fabs(want)))
        fail_msg("%s: got %.17g, want %.17g (diff %.3g)", what, got, want, fabs(got - want));
}

/* ---- test data ----------------------------------------------------------- */

#define N1 9
#define D1 3
/* Feature 2 is categorical (values 0, 1, 2). */
static const bool CAT1[D1] = {false, false, true};
static const double X1[N1 * D1] = {
    0.10, 0.20, 0,    0.90, 0.15, 1,    0.40, 0.80, 2,    0.55, 0.55, 0,    0.05, 0.95,
    1,    0.75, 0.35, 2,    0.30, 0.60, 1,    0.85, 0.85, 0,    0.60, 0.05, 2,
};
static const double Y1[N1] = {0.3, -1.2, 0.8, -0.1, 1.5, -0.7, 0.2, 1.1, -1.9};
static const double XS1[5 * D1] = {
    0.12, 0.22, 0, 0.5, 0.5, 1, 0.99, 0.01, 2, 0.33, 0.77, 0, 0.7, 0.4, 2,
};

static Gp *gp_with_data(const double *ls, double sf2, double noise)
{
    Gp *gp = gp_new(D1, CAT1, N1 + 4);
    assert_non_null(gp);
    assert_int_equal(gp_set_time_feature(gp, ref_time), 0);
    assert_int_equal(gp_set_data(gp, X1, Y1, N1), 0);
    assert_int_equal(gp_set_hyper(gp, ls, sf2, noise), 0);
    return gp;
}

/* ---- tests -------------------------------------------------------------- */

static void test_posterior_matches_dense(void **state)
{
    (void)state;
    const double ls[D1] = {0.3, 0.7, 0.5};
    const double sf2 = 1.7, noise = 0.01;
    Gp *gp = gp_with_data(ls, sf2, noise);
    assert_true(gp_jitter(gp) == 0.0);
    Dense D = dense_new(X1, N1, D1, CAT1, ls, sf2, noise);
    double mean[5], var[5];
    assert_int_equal(gp_predict_many(gp, XS1, 5, mean, var), 0);
    for (int s = 0; s < 5; s++) {
        double m, v, rm, rv;
        dense_predict(&D, X1, Y1, D1, CAT1, ls, sf2, XS1 + s * D1, &rm, &rv);
        assert_int_equal(gp_predict(gp, XS1 + s * D1, &m, &v, NULL, NULL), 0);
        assert_close(m, rm, 1e-8, 1e-8, "mean");
        assert_close(v, rv, 1e-8, 1e-8, "variance");
        assert_close(mean[s], rm, 1e-8, 1e-8, "batch mean");
        assert_close(var[s], rv, 1e-8, 1e-8, "batch variance");
    }
    dense_free(&D);
    gp_free(gp);
}

static void test_prediction_gradients(void **state)
{
    (void)state;
    const double ls[D1] = {0.3, 0.7, 0.5};
    Gp *gp = gp_with_data(ls, 1.3, 1e-4);
    for (int s = 0; s < 5; s++) {
        double x[D1], m, v, dm[D1], dv[D1];
        memcpy(x, XS1 + s * D1, sizeof x);
        assert_int_equal(gp_predict(gp, x, &m, &v, dm, dv), 0);
        assert_true(dm[2] == 0.0 && dv[2] == 0.0); /* categorical */
        for (int j = 0; j < 2; j++) {
            const double h = 1e-6;
            double xp[D1], xm[D1], mp, vp, mm, vm;
            memcpy(xp, x, sizeof x);
            memcpy(xm, x, sizeof x);
            xp[j] += h;
            xm[j] -= h;
            assert_int_equal(gp_predict(gp, xp, &mp, &vp, NULL, NULL), 0);
            assert_int_equal(gp_predict(gp, xm, &mm, &vm, NULL, NULL), 0);
            assert_close(dm[j], (mp - mm) / (2 * h), 1e-6, 1e-5, "d mean / dx");
            assert_close(dv[j], (vp - vm) / (2 * h), 1e-6, 1e-5, "d var / dx");
        }
    }
    gp_free(gp);
}

/* theta = (log ls, log sf2, log(noise - min)) */
static void theta_of(const double *ls, double sf2, double noise, double *th)
{
    for (int j = 0; j < D1; j++)
        th[j] = log(ls[j]);
    th[D1] = log(sf2);
    th[D1 + 1] = log(noise - GP_NOISE_MIN);
}

static void test_likelihood_matches_dense(void **state)
{
    (void)state;
    const double ls[D1] = {0.4, 0.25, 0.9};
    const double sf2 = 0.8, noise = 0.05;
    Gp *gp = gp_with_data(ls, 1.0, 0.1);
    double th[D1 + 2], f;
    theta_of(ls, sf2, noise, th);
    assert_int_equal(gp_objective(gp, th, NULL, &f, NULL), 0);
    Dense D = dense_new(X1, N1, D1, CAT1, ls, sf2, noise);
    double quad = 0.0;
    for (int i = 0; i < N1; i++)
        for (int k = 0; k < N1; k++)
            quad += Y1[i] * gsl_matrix_get(D.Kinv, i, k) * Y1[k];
    double want = 0.5 * quad + 0.5 * D.logdet + 0.5 * N1 * log(2 * M_PI);
    assert_close(f, want, 1e-9, 1e-9, "negative log likelihood");
    /* The prior adds 0.5 z^2 per hyperparameter. */
    GpPrior pr = {.log_ls_mean = -1.0,
                  .log_ls_sd = 1.5,
                  .log_sf2_mean = 0.2,
                  .log_sf2_sd = 1.0,
                  .log_noise_mean = -6.0,
                  .log_noise_sd = 2.0};
    double fp;
    assert_int_equal(gp_objective(gp, th, &pr, &fp, NULL), 0);
    double extra = 0.0;
    for (int j = 0; j < D1; j++)
        extra += 0.5 * pow((th[j] + 1.0) / 1.5, 2);
    extra += 0.5 * pow((th[D1] - 0.2) / 1.0, 2) + 0.5 * pow((th[D1 + 1] + 6.0) / 2.0, 2);
    assert_close(fp, want + extra, 1e-9, 1e-9, "with the prior");
    dense_free(&D);
    gp_free(gp);
}

/* A weak prior for the gradient tests. */
static const GpPrior GRADIENT_PRIOR = {.log_ls_mean = -1.0,
                                       .log_ls_sd = 1.5,
                                       .log_sf2_mean = 0.0,
                                       .log_sf2_sd = 1.5,
                                       .log_noise_mean = -9.0,
                                       .log_noise_sd = 3.0};

static void test_likelihood_gradient(void **state)
{
    (void)state;
    const double ls0[D1] = {0.3, 0.7, 0.5};
    Gp *gp = gp_with_data(ls0, 1.0, 0.1);
    GpPrior pr = GRADIENT_PRIOR;
    const double points[3][D1 + 2] = {
        {log(0.3), log(0.7), log(0.5), log(1.7), log(0.01)},
        {log(0.05), log(2.0), log(0.2), log(0.3), log(1e-5)},
        {log(1.1), log(0.15), log(3.0), log(4.0), log(0.5)},
    };
    for (int p = 0; p < 3; p++) {
        for (int with_prior = 0; with_prior < 2; with_prior++) {
            const GpPrior *prior = with_prior ? &pr : NULL;
            double th[D1 + 2], g[D1 + 2], f;
            memcpy(th, points[p], sizeof th);
            assert_int_equal(gp_objective(gp, th, prior, &f, g), 0);
            for (int j = 0; j < D1 + 2; j++) {
                const double h = 1e-5;
                double tp[D1 + 2], tm[D1 + 2], fp, fm;
                memcpy(tp, th, sizeof th);
                memcpy(tm, th, sizeof th);
                tp[j] += h;
                tm[j] -= h;
                assert_int_equal(gp_objective(gp, tp, prior, &fp, NULL), 0);
                assert_int_equal(gp_objective(gp, tm, prior, &fm, NULL), 0);
                double fd = (fp - fm) / (2 * h);
                char what[64];
                snprintf(what, sizeof what, "gradient %d at point %d (prior %d)", j, p, with_prior);
                assert_close(g[j], fd, 1e-7, 1e-5, what);
            }
        }
    }
    gp_free(gp);
}

static void test_singular_matrix_recovers_with_jitter(void **state)
{
    (void)state;
    /* Points 0 and 2 coincide and there is no noise: K is singular. */
    const double x[4 * 2] = {0.2, 0.3, 0.7, 0.1, 0.2, 0.3, 0.5, 0.9};
    const double y[4] = {1.0, -0.5, 1.0, 0.3};
    const double ls[2] = {0.4, 0.4};
    Gp *gp = gp_new(2, NULL, 4);
    assert_non_null(gp);
    assert_int_equal(gp_set_data(gp, x, y, 4), 0);
    assert_int_equal(gp_set_hyper(gp, ls, 1.0, 0.0), 0);
    assert_true(gp_jitter(gp) > 0.0);
    assert_true(gp_jitter(gp) <= GP_JITTER_LAST);
    double m, v;
    assert_int_equal(gp_predict(gp, x, &m, &v, NULL, NULL), 0);
    assert_true(isfinite(m) && isfinite(v));
    assert_close(m, 1.0, 1e-3, 0.0, "mean at the duplicated point");
    assert_true(v < 1e-3);
    /* A duplicate that is told to be a different value stays finite too. */
    const double y2[4] = {1.0, -0.5, 0.0, 0.3};
    assert_int_equal(gp_set_data(gp, x, y2, 4), 0);
    assert_int_equal(gp_set_hyper(gp, ls, 1.0, 0.0), 0);
    assert_int_equal(gp_predict(gp, x, &m, &v, NULL, NULL), 0);
    assert_true(isfinite(m) && fabs(m - 0.5) < 1e-2);
    gp_free(gp);
}

static void test_add_point_equals_refactorization(void **state)
{
    (void)state;
    const double ls[D1] = {0.3, 0.7, 0.5};
    Gp *ext = gp_new(D1, CAT1, N1);
    Gp *full = gp_new(D1, CAT1, N1);
    assert_int_equal(gp_set_time_feature(ext, ref_time), 0);
    assert_int_equal(gp_set_time_feature(full, ref_time), 0);
    assert_int_equal(gp_set_data(ext, X1, Y1, N1 - 3), 0);
    assert_int_equal(gp_set_hyper(ext, ls, 1.4, 0.02), 0);
    for (int i = N1 - 3; i < N1; i++)
        assert_int_equal(gp_add_point(ext, X1 + i * D1, Y1[i]), 0);
    assert_int_equal(gp_count(ext), N1);
    assert_int_equal(gp_add_point(ext, X1, 0.0), RUNG_E_INVALID_ARGUMENT); /* full */
    assert_int_equal(gp_set_data(full, X1, Y1, N1), 0);
    assert_int_equal(gp_set_hyper(full, ls, 1.4, 0.02), 0);
    for (int s = 0; s < 5; s++) {
        double m1, v1, m2, v2;
        assert_int_equal(gp_predict(ext, XS1 + s * D1, &m1, &v1, NULL, NULL), 0);
        assert_int_equal(gp_predict(full, XS1 + s * D1, &m2, &v2, NULL, NULL), 0);
        assert_close(m1, m2, 1e-10, 1e-9, "mean");
        assert_close(v1, v2, 1e-10, 1e-9, "variance");
    }
    gp_free(ext);
    gp_free(full);
}

/* After test_time_feature, passed or not: the other tests have none. */
static int no_time_feature(void **state)
{
    (void)state;
    ref_time = -1;
    return 0;
}

/* PB2's time-varying kernel (feature 1 as the time): the same checks
 * against the dense reference, of the posterior, its slopes (the time's
 * too), the likelihood and its gradient (ls_t's too), and the rank-one
 * extension. */
static void test_time_feature(void **state)
{
    Gp *gp = gp_new(D1, CAT1, 2);
    assert_int_equal(gp_set_time_feature(gp, 2), RUNG_E_INVALID_ARGUMENT); /* categorical */
    assert_int_equal(gp_set_time_feature(gp, D1), RUNG_E_INVALID_ARGUMENT);
    gp_free(gp);
    ref_time = 1;
    test_posterior_matches_dense(state);
    test_prediction_gradients(state);
    test_likelihood_matches_dense(state);
    test_likelihood_gradient(state);
    test_add_point_equals_refactorization(state);
    ref_time = -1;
}

static void test_believer_keeps_mean_and_shrinks_variance(void **state)
{
    (void)state;
    const double ls[D1] = {0.3, 0.7, 0.5};
    Gp *gp = gp_with_data(ls, 1.0, 1e-4);
    const double *xs = XS1 + D1; /* (0.5, 0.5, 1) */
    double m0, v0, m1, v1, mo0, vo0, mo1, vo1;
    assert_int_equal(gp_predict(gp, xs, &m0, &v0, NULL, NULL), 0);
    assert_int_equal(gp_predict(gp, XS1, &mo0, &vo0, NULL, NULL), 0);
    assert_int_equal(gp_add_point(gp, xs, m0), 0);
    assert_int_equal(gp_predict(gp, xs, &m1, &v1, NULL, NULL), 0);
    assert_int_equal(gp_predict(gp, XS1, &mo1, &vo1, NULL, NULL), 0);
    assert_close(m1, m0, 1e-10, 1e-9, "mean at the believer");
    assert_close(mo1, mo0, 1e-10, 1e-9, "mean elsewhere");
    assert_true(v1 < 0.01 * v0);
    assert_true(vo1 <= vo0);
    gp_free(gp);
}

static void test_fit_finds_relevant_feature(void **state)
{
    (void)state;
    /* y depends on feature 0 only; the fit must give feature 1 the longer
     * length scale and reach a lower objective than its start. */
    enum { N = 40 };
    double x[N * 2], y[N];
    for (int i = 0; i < N; i++) {
        x[2 * i] = fmod(0.618034 * i, 1.0);
        x[2 * i + 1] = fmod(0.414214 * i + 0.3, 1.0);
        y[i] = sin(6.0 * x[2 * i]);
    }
    double mean = 0.0, ss = 0.0;
    for (int i = 0; i < N; i++)
        mean += y[i] / N;
    for (int i = 0; i < N; i++)
        ss += (y[i] - mean) * (y[i] - mean);
    for (int i = 0; i < N; i++)
        y[i] = (y[i] - mean) / sqrt(ss / (N - 1));
    Gp *gp = gp_new(2, NULL, N);
    assert_int_equal(gp_set_data(gp, x, y, N), 0);
    GpFitOptions opt = {
        .prior = {.log_ls_mean = log(0.5),
                  .log_ls_sd = 1.5,
                  .log_sf2_mean = 0.0,
                  .log_sf2_sd = 1.5,
                  .log_noise_mean = log(1e-4),
                  .log_noise_sd = 3.0},
        .n_raw = 4,
        .n_starts = 2,
        .max_iter = 100,
        .seed = 42,
    };
    double th0[4] = {log(0.5), log(0.5), 0.0, log(1e-4)}, f0, f1, th[4];
    assert_int_equal(gp_objective(gp, th0, &opt.prior, &f0, NULL), 0);
    assert_int_equal(gp_fit(gp, &opt, th), 0);
    assert_int_equal(gp_objective(gp, th, &opt.prior, &f1, NULL), 0);
    assert_true(f1 < f0 - 1.0);
    double ls[2], sf2, noise;
    gp_get_hyper(gp, ls, &sf2, &noise);
    assert_close(ls[0], exp(th[0]), 0.0, 1e-12, "fitted length scale");
    assert_true(ls[1] > 3.0 * ls[0]);
    assert_true(noise < 1e-2);
    /* Same data and seed: the same fit. */
    double th2[4];
    assert_int_equal(gp_fit(gp, &opt, th2), 0);
    assert_memory_equal(th, th2, sizeof th);
    gp_free(gp);
}

/* ---- log EI -------------------------------------------------------------- */

static double naive_h(double z)
{
    double Phi = 0.5 * erfc(-z / sqrt(2.0));
    double phi = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
    return z * Phi + phi;
}

static void test_log_h_matches_naive(void **state)
{
    (void)state;
    for (int i = -500; i <= 500; i++) {
        double z = i * 0.01;
        double d;
        double got = acq_log_h(z, &d);
        double want = log(naive_h(z));
        char what[64];
        snprintf(what, sizeof what, "log h(%g)", z);
        assert_close(got, want, 0.0, 1e-10, what);
        /* d log h / dz = Phi / h */
        assert_close(d, 0.5 * erfc(-z / sqrt(2.0)) / naive_h(z), 0.0, 1e-9, "slope");
    }
}

static void test_log_h_tail(void **state)
{
    (void)state;
    /* Finite and strictly increasing from 5 down to -40, with a positive
     * slope that agrees with the differences. */
    double prev = acq_log_h(5.0, NULL);
    for (int i = 1; i <= 45000; i++) {
        double z = 5.0 - i * 0.001;
        double d;
        double v = acq_log_h(z, &d);
        if (!isfinite(v) || !(v < prev) || !(d > 0.0))
            fail_msg("log h not finite and strictly increasing at z = %g: %g after %g", z, v, prev);
        prev = v;
    }
    for (double z = -39.0; z < 4.0; z += 0.37) {
        double d;
        acq_log_h(z, &d);
        double h = 1e-6;
        double fd = (acq_log_h(z + h, NULL) - acq_log_h(z - h, NULL)) / (2 * h);
        assert_close(d, fd, 1e-6, 1e-6, "slope of log h");
    }
    /* The asymptotic series at z = -40: h(z) = phi(z) / z^2 (1 - 3/z^2 +
     * 15/z^4 - 105/z^6 + 945/z^8 - ...). */
    double z = -40.0, u = 1.0 / (z * z);
    double series = 1.0 - 3 * u + 15 * u * u - 105 * u * u * u + 945 * u * u * u * u -
                    10395 * pow(u, 5) + 135135 * pow(u, 6);
    double want = -0.5 * z * z - 0.5 * log(2 * M_PI) + log(u) + log(series);
    assert_close(acq_log_h(z, NULL), want, 0.0, 1e-13, "log h(-40)");
    /* Far beyond, still finite. */
    assert_true(isfinite(acq_log_h(-1e6, NULL)));
    assert_true(isfinite(acq_log_h(-1e200, NULL)));
    assert_true(isfinite(acq_log_h(1e6, NULL)));
}

static void test_log_ei_and_gradient(void **state)
{
    (void)state;
    const double ls[D1] = {0.3, 0.7, 0.5};
    Gp *gp = gp_with_data(ls, 1.3, 1e-4);
    const double bests[3] = {-1.9, -3.0, -12.0}; /* z near 0, moderate, far tail */
    for (int b = 0; b < 3; b++) {
        for (int s = 0; s < 5; s++) {
            double x[D1], v, g[D1], m, var;
            memcpy(x, XS1 + s * D1, sizeof x);
            assert_int_equal(acq_log_ei(gp, x, bests[b], &v, g), 0);
            assert_int_equal(gp_predict(gp, x, &m, &var, NULL, NULL), 0);
            double sd = sqrt(var);
            assert_close(v, log(sd) + acq_log_h((bests[b] - m) / sd, NULL), 1e-12, 1e-12, "log EI");
            double many;
            assert_int_equal(acq_log_ei_many(gp, x, 1, bests[b], &many), 0);
            assert_close(many, v, 1e-9, 1e-9, "batch log EI");
            for (int j = 0; j < 2; j++) {
                const double h = 1e-6;
                double xp[D1], xm[D1], vp, vm;
                memcpy(xp, x, sizeof x);
                memcpy(xm, x, sizeof x);
                xp[j] += h;
                xm[j] -= h;
                assert_int_equal(acq_log_ei(gp, xp, bests[b], &vp, NULL), 0);
                assert_int_equal(acq_log_ei(gp, xm, bests[b], &vm, NULL), 0);
                assert_close(g[j], (vp - vm) / (2 * h), 1e-5, 1e-5, "d log EI / dx");
            }
        }
    }
    gp_free(gp);
}

/* Uniform draws in [0, 1) (common/splitmix.h): reproducible points. */
static double unit_draw(uint64_t *state)
{
    *state += RUNG_SPLITMIX_GAMMA;
    return (double)(rung_splitmix_mix(*state) >> 11) * 0x1p-53;
}

#define NTOP 80
#define DTOP 4
#define MTOP 700

/* acq_log_ei_top against acq_log_ei_many: the same top values at the same
 * points (ties to the lower index), every value it computed equal, every
 * point it skipped below the top-th; and gp_predict_bound's mean equal to
 * gp_predict_many's, its variance never below. The model has a duplicate
 * point added by gp_add_point (a raised pivot) and candidates on observed
 * points; it must skip most of 700 candidates when 5 are wanted. */
static void test_log_ei_top_matches_all(void **state)
{
    (void)state;
    static double x[(NTOP + 1) * DTOP], y[NTOP], c[MTOP * DTOP];
    uint64_t rng = 7;
    for (int i = 0; i < NTOP; i++) {
        double f = 0.0;
        for (int j = 0; j < DTOP; j++) {
            x[i * DTOP + j] = unit_draw(&rng);
            f += sin(3.0 * x[i * DTOP + j] + j);
        }
        y[i] = f;
    }
    for (int r = 0; r < MTOP * DTOP; r++)
        c[r] = unit_draw(&rng);
    memcpy(c, x, 10 * DTOP * sizeof *c); /* ten candidates on observations */
    const double ls[DTOP] = {0.4, 0.6, 0.3, 0.8};
    Gp *gp = gp_new(DTOP, NULL, NTOP + 1);
    assert_non_null(gp);
    assert_int_equal(gp_set_data(gp, x, y, NTOP), 0);
    assert_int_equal(gp_set_hyper(gp, ls, 1.2, 1e-6), 0);
    assert_int_equal(gp_add_point(gp, x, y[0]), 0);

    static double mean[MTOP], var[MTOP], mhi[MTOP], vhi[MTOP], all[MTOP], top[MTOP];
    assert_int_equal(gp_predict_many(gp, c, MTOP, mean, var), 0);
    assert_int_equal(gp_predict_bound(gp, c, MTOP, mhi, vhi), 0);
    for (int r = 0; r < MTOP; r++) {
        assert_close(mhi[r], mean[r], 1e-12, 1e-12, "bound's mean");
        if (!(vhi[r] >= var[r] - 1e-12))
            fail_msg("candidate %d: variance %.17g above its bound %.17g", r, var[r], vhi[r]);
    }
    const double bests[3] = {-4.0, -2.5, 0.0};
    const int tops[4] = {1, 5, 64, 65};
    for (int b = 0; b < 3; b++) {
        assert_int_equal(acq_log_ei_many(gp, c, MTOP, bests[b], all), 0);
        for (int t = 0; t < 4; t++) {
            int k = tops[t];
            assert_int_equal(acq_log_ei_top(gp, c, MTOP, bests[b], k, top), 0);
            int computed = 0;
            for (int r = 0; r < MTOP; r++)
                if (top[r] > -INFINITY) {
                    computed++;
                    assert_close(top[r], all[r], 1e-9, 1e-9, "computed log EI");
                }
            /* The k best of each, picked as bayes.c picks its starts. */
            for (int i = 0; i < k; i++) {
                int pa = -1, pt = -1;
                for (int r = 0; r < MTOP; r++) {
                    if (all[r] > -INFINITY && (pa < 0 || all[r] > all[pa]))
                        pa = r;
                    if (top[r] > -INFINITY && (pt < 0 || top[r] > top[pt]))
                        pt = r;
                }
                assert_int_equal(pt, pa);
                all[pa] = top[pt] = -INFINITY;
            }
            if (k == 5 && computed > MTOP / 4)
                fail_msg("best %g: %d of %d candidates computed for 5 starts", bests[b], computed,
                         MTOP);
            assert_int_equal(acq_log_ei_many(gp, c, MTOP, bests[b], all), 0);
        }
    }
    assert_int_equal(acq_log_ei_top(gp, c, MTOP, 0.0, 0, top), RUNG_E_INVALID_ARGUMENT);
    gp_free(gp);
}

/* The kernel's exp (gp.c's exp_nonpos) against libm's: within 2 ulp over
 * [-708, 0], exactly 1 at 0, 0 below -708 and at -inf, NaN kept. */
static void test_exp_nonpos(void **state)
{
    (void)state;
    double worst = 0.0, at = 0.0;
    for (int i = 0; i <= 708000; i++) {
        double x = -i * 1e-3 - (i % 7) * 1.3e-7;
        if (x < -708.0)
            break;
        double e = fabs(gp__exp_nonpos(x) - exp(x)) / exp(x);
        if (e > worst) {
            worst = e;
            at = x;
        }
    }
    if (worst > 4.5e-16)
        fail_msg("exp_nonpos(%.17g) is off by %.3g of exp", at, worst);
    assert_true(gp__exp_nonpos(0.0) == 1.0);
    assert_true(gp__exp_nonpos(-1e-300) == 1.0);
    assert_true(gp__exp_nonpos(-708.5) == 0.0);
    assert_true(gp__exp_nonpos(-INFINITY) == 0.0);
    assert_true(isnan(gp__exp_nonpos(NAN)));
}

/* A gradient asked right after the objective alone at the same theta
 * starts from the factor that call left (gp.c, obj_kept): it must give
 * the bits of a gradient computed from scratch, and a change of the model
 * in between (new hyperparameters, new points) must not be taken for the
 * kept factor. */
static void test_kept_factor_gives_fresh_bits(void **state)
{
    (void)state;
    const double ls[D1] = {0.3, 0.7, 0.5};
    Gp *gp = gp_with_data(ls, 1.0, 0.1);
    GpPrior pr = GRADIENT_PRIOR;
    const double th[D1 + 2] = {log(0.2), log(0.9), log(0.4), log(1.3), log(0.02)};
    const double other[D1 + 2] = {log(0.5), log(0.3), log(1.4), log(0.7), log(0.2)};
    double f0, g0[D1 + 2], f1, g1[D1 + 2], f2, g2[D1 + 2];
    /* From scratch: another theta's gradient in between. */
    assert_int_equal(gp_objective(gp, other, &pr, &f0, g0), 0);
    assert_int_equal(gp_objective(gp, th, &pr, &f0, g0), 0);
    /* After the objective alone at the same theta. */
    assert_int_equal(gp_objective(gp, th, &pr, &f1, NULL), 0);
    assert_int_equal(gp_objective(gp, th, &pr, &f1, g1), 0);
    assert_memory_equal(&f0, &f1, sizeof f0);
    assert_memory_equal(g0, g1, sizeof g0);
    /* The objective alone, then new hyperparameters: recomputed. */
    assert_int_equal(gp_objective(gp, th, &pr, &f2, NULL), 0);
    const double ls2[D1] = {0.9, 0.2, 0.6};
    assert_int_equal(gp_set_hyper(gp, ls2, 0.5, 0.3), 0);
    assert_int_equal(gp_objective(gp, th, &pr, &f2, g2), 0);
    assert_memory_equal(g0, g2, sizeof g0);
    /* ... and new points: the gradient is another one, that of a fresh
     * model with the same ten points. */
    assert_int_equal(gp_objective(gp, th, &pr, &f2, NULL), 0);
    const double xnew[D1] = {0.33, 0.44, 1};
    double x10[(N1 + 1) * D1], y10[N1 + 1];
    memcpy(x10, X1, sizeof X1);
    memcpy(x10 + N1 * D1, xnew, sizeof xnew);
    memcpy(y10, Y1, sizeof Y1);
    y10[N1] = 0.7;
    assert_int_equal(gp_set_data(gp, x10, y10, N1 + 1), 0);
    assert_int_equal(gp_objective(gp, th, &pr, &f2, g2), 0);
    Gp *fresh = gp_new(D1, CAT1, N1 + 4);
    assert_non_null(fresh);
    assert_int_equal(gp_set_data(fresh, x10, y10, N1 + 1), 0);
    double f3, g3[D1 + 2];
    assert_int_equal(gp_objective(fresh, th, &pr, &f3, g3), 0);
    assert_memory_equal(&f2, &f3, sizeof f2);
    assert_memory_equal(g2, g3, sizeof g2);
    gp_free(fresh);
    gp_free(gp);
}

/* gp_predict_bound hands half of a large batch to a second thread: every
 * point's mean and bound are the bits of the same point asked alone. */
static void test_bound_split_same_bits(void **state)
{
    (void)state;
    enum { M = 700, NB = 100 }; /* 70,000 kernel values: split */
    static double x[NB * DTOP], y[NB], c[M * DTOP], mean[M], vhi[M];
    uint64_t rng = 11;
    for (int i = 0; i < NB; i++) {
        for (int j = 0; j < DTOP; j++)
            x[i * DTOP + j] = unit_draw(&rng);
        y[i] = sin(5.0 * x[i * DTOP]) + x[i * DTOP + 1];
    }
    for (int r = 0; r < M * DTOP; r++)
        c[r] = unit_draw(&rng);
    const double ls[DTOP] = {0.3, 0.5, 0.9, 0.4};
    Gp *gp = gp_new(DTOP, NULL, NB);
    assert_non_null(gp);
    assert_int_equal(gp_set_data(gp, x, y, NB), 0);
    assert_int_equal(gp_set_hyper(gp, ls, 1.0, 1e-4), 0);
    assert_int_equal(gp_predict_bound(gp, c, M, mean, vhi), 0);
    for (int r = 0; r < M; r++) {
        double m1, v1;
        assert_int_equal(gp_predict_bound(gp, c + r * DTOP, 1, &m1, &v1), 0);
        assert_memory_equal(&m1, &mean[r], sizeof m1);
        assert_memory_equal(&v1, &vhi[r], sizeof v1);
    }
    gp_free(gp);
}

/* The BLAS kernels the GP runs pass rungd's start-up check. */
static void test_check_blas(void **state)
{
    (void)state;
    char why[256] = "";
    if (gp_check_blas(why, sizeof why) != 0)
        fail_msg("gp_check_blas: %s", why);
}

static void test_refine_improves_within_box(void **state)
{
    (void)state;
    const double ls[D1] = {0.3, 0.7, 0.5};
    Gp *gp = gp_with_data(ls, 1.0, 1e-4);
    const bool free_dims[D1] = {true, true, false};
    for (int s = 0; s < 5; s++) {
        double x[D1], v0, v;
        memcpy(x, XS1 + s * D1, sizeof x);
        assert_int_equal(acq_log_ei(gp, x, -1.9, &v0, NULL), 0);
        assert_int_equal(acq_refine(gp, -1.9, free_dims, 100, x, &v), 0);
        assert_true(v >= v0);
        assert_true(x[0] >= 0.0 && x[0] <= 1.0 && x[1] >= 0.0 && x[1] <= 1.0);
        assert_true(x[2] == XS1[s * D1 + 2]); /* held */
        double check;
        assert_int_equal(acq_log_ei(gp, x, -1.9, &check, NULL), 0);
        assert_close(check, v, 1e-12, 1e-12, "value of the refined point");
    }
    gp_free(gp);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_posterior_matches_dense),
        cmocka_unit_test(test_prediction_gradients),
        cmocka_unit_test(test_likelihood_matches_dense),
        cmocka_unit_test(test_likelihood_gradient),
        cmocka_unit_test(test_singular_matrix_recovers_with_jitter),
        cmocka_unit_test(test_add_point_equals_refactorization),
        cmocka_unit_test_teardown(test_time_feature, no_time_feature),
        cmocka_unit_test(test_believer_keeps_mean_and_shrinks_variance),
        cmocka_unit_test(test_fit_finds_relevant_feature),
        cmocka_unit_test(test_log_h_matches_naive),
        cmocka_unit_test(test_log_h_tail),
        cmocka_unit_test(test_log_ei_and_gradient),
        cmocka_unit_test(test_log_ei_top_matches_all),
        cmocka_unit_test(test_refine_improves_within_box),
        cmocka_unit_test(test_exp_nonpos),
        cmocka_unit_test(test_kept_factor_gives_fresh_bits),
        cmocka_unit_test(test_bound_split_same_bits),
        cmocka_unit_test(test_check_blas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
