/* A Gaussian process regression model for the bayes searcher.
 *
 * Zero prior mean (the caller standardizes its targets) and a Matérn-5/2
 * kernel with one length scale per feature (ARD), optionally times an
 * exponential kernel of one time feature (gp_set_time_feature):
 *
 *   k(a, b) = sf2 (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r),  r^2 = sum_j delta_j / ls_j^2
 *
 * where delta_j = (a_j - b_j)^2 for a continuous feature and [a_j != b_j]
 * (a Hamming term) for a categorical one, whose values are category indices.
 * Observations carry Gaussian noise of variance `noise`.
 *
 * The model holds up to `capacity` points. gp_set_hyper factorizes
 * K + (noise + jitter) I by Cholesky, retrying with a growing jitter when the
 * matrix is not numerically positive definite; gp_add_point extends the
 * factor by one row in O(n^2), which is how pending trials join as
 * kriging-believer points. gp_fit maximizes the log marginal likelihood plus
 * log-normal priors over the log hyperparameters with GSL's BFGS.
 *
 * Hyperparameter vector theta (gp_theta_size = d + 2 values):
 *   theta[j]     = log ls_j                 j < d
 *   theta[d]     = log sf2
 *   theta[d + 1] = log(noise - GP_NOISE_MIN)
 * so a fitted noise is never below GP_NOISE_MIN.
 *
 * Not thread-safe: a Gp has scratch space inside; use one per thread. Every
 * fallible function returns 0 or a negative RUNG_E_* code (RUNG_E_INTERNAL
 * for a numerical failure or out of memory, RUNG_E_INVALID_ARGUMENT for a
 * bad argument); nothing prints or exits. */
#ifndef RUNG_SAMPLER_GP_H
#define RUNG_SAMPLER_GP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Lower bound of a fitted noise variance (in the standardized units of the
 * targets): keeps K well conditioned when observations are noise-free. */
#define GP_NOISE_MIN 1e-6
/* The first jitter tried, and the last, relative to sf2 (x10 per retry). */
#define GP_JITTER_FIRST 1e-10
#define GP_JITTER_LAST 1e-2
/* The most features a Gp takes; beyond it a GP is no help anyway. */
#define GP_MAX_DIMS 1024
/* The most points; an n x n factor of this size is 128 MiB. */
#define GP_MAX_POINTS 4096

typedef struct Gp Gp;

/* Independent normal priors on the log hyperparameters (means and standard
 * deviations in log space); the noise prior is on log(noise - GP_NOISE_MIN). */
typedef struct GpPrior {
    double log_ls_mean, log_ls_sd;
    double log_sf2_mean, log_sf2_sd;
    double log_noise_mean, log_noise_sd;
} GpPrior;

typedef struct GpFitOptions {
    GpPrior prior;
    const double *theta0; /* borrowed; a start (gp_theta_size values), or NULL: prior means */
    int n_raw;            /* random thetas scored once each to choose more starts, >= 0 */
    int n_starts;         /* BFGS runs, from the best of theta0 and the raw ones, >= 1 */
    int max_iter;         /* BFGS iterations per run, >= 1 */
    uint64_t seed;        /* draws of the raw thetas */
} GpFitOptions;

/* A model of d features (1 <= d <= GP_MAX_DIMS) holding at most capacity
 * points (1 <= capacity <= GP_MAX_POINTS); cat (d flags, borrowed, may be
 * NULL for none) marks the categorical features. Hyperparameters start at
 * ls = 1, sf2 = 1, noise = GP_NOISE_MIN. New (free with gp_free), or NULL on
 * bad arguments or out of memory. */
Gp *gp_new(int d, const bool *cat, int capacity);
/* Accepts NULL. */
void gp_free(Gp *gp);

/* Makes continuous feature j (or none, j = -1) the model's time: it leaves
 * the Matérn term and multiplies the kernel by exp(-|a_j - b_j| / ls_j),
 * PB2's time-varying kernel (1 - eps)^(|dt| / 2) with eps = 1 - exp(-2 /
 * ls_j): old observations count less the further they are in time, and the
 * fit learns how fast (sampler/pb2.c). ls_j keeps its slot in theta. Call
 * before setting the hyperparameters. */
int gp_set_time_feature(Gp *gp, int j);

int gp_dims(const Gp *gp);
int gp_count(const Gp *gp);
int gp_theta_size(const Gp *gp);
/* The jitter (absolute, added to every diagonal element besides the noise)
 * of the last factorization: 0 when none was needed. */
double gp_jitter(const Gp *gp);
/* The current hyperparameters: ls (d values; may be NULL), sf2, noise. */
void gp_get_hyper(const Gp *gp, double *ls, double *sf2, double *noise);
/* The current hyperparameters as theta (noise clamped up to GP_NOISE_MIN). */
void gp_get_theta(const Gp *gp, double *theta);

/* Replaces the points: x is n x d row-major, y n targets (both copied).
 * 0 <= n <= capacity. The model is not factorized afterwards. */
int gp_set_data(Gp *gp, const double *x, const double *y, int n);

/* Sets the hyperparameters (ls_j > 0, sf2 > 0, noise >= 0) and factorizes
 * the kernel matrix of the points held. Fails when no jitter up to
 * GP_JITTER_LAST * sf2 makes it positive definite. */
int gp_set_hyper(Gp *gp, const double *ls, double sf2, double noise);

/* The negative log marginal likelihood of the points held at theta, minus
 * the log prior density (prior may be NULL: none; the prior's constant
 * terms are left out), into *value; its gradient into grad (may be NULL).
 * Thetas outside the bounds the fit allows are clamped into them, with a
 * quadratic penalty on the distance. Needs n >= 1; keeps the distances of
 * every pair per feature between calls (n(n-1)/2 x d doubles, until the
 * points change) and uses the factor's storage as scratch, so the model
 * must be factorized again afterwards (gp_set_hyper; gp_fit does). */
int gp_objective(Gp *gp, const double *theta, const GpPrior *prior, double *value, double *grad);

/* Fits the hyperparameters to the points held (n >= 1) and factorizes with
 * them. theta_out (may be NULL) receives the chosen theta. */
int gp_fit(Gp *gp, const GpFitOptions *opt, double *theta_out);

/* Posterior of the latent function at x (d values): mean and variance
 * (clamped at >= 0). dmean and dvar (d values each, may be NULL) receive
 * the gradients with respect to x (0 for categorical features). Needs a
 * factorized model. */
int gp_predict(Gp *gp, const double *x, double *mean, double *var, double *dmean, double *dvar);

/* gp_predict for m points (x is m x d row-major) without gradients, with
 * level-3 BLAS: one triangular solve for a block of points at a time. */
int gp_predict_many(Gp *gp, const double *x, int m, double *mean, double *var);

/* For m points (x is m x d row-major): the posterior mean, as
 * gp_predict_many gives it, and an upper bound on the posterior variance
 * without its triangular solve: the variance given the one observation i
 * that explains most of it, sf2 - max_i k_i^2 / K_ii (conditioning on all
 * of them can only lower it: a Schur complement of K is positive
 * semi-definite). Costs the kernel row, not the O(n^2) solve; acq.c's
 * acq_log_ei_top uses it to skip points that cannot win. */
int gp_predict_bound(Gp *gp, const double *x, int m, double *mean, double *var_hi);

/* Adds the point (x, y) to a factorized model, extending the Cholesky
 * factor by one row (the new diagonal element gets the current noise and
 * jitter). Fails when the model is full. */
int gp_add_point(Gp *gp, const double *x, double y);

/* OpenBLAS runs a small GP's calls on one thread (gp.c says why):
 * gp_blas_threads_for(n) sets OpenBLAS's thread count for a GP of n
 * points, one below GP_BLAS_THREADS_FROM, OpenBLAS's own count from there.
 * The count is the process's, so two threads must not propose at once
 * (rungd has one proposer thread). */
void gp_blas_threads_for(int n);

/* Checks the BLAS kernels the GP runs (a Cholesky factor and its inverse
 * of a 67x67 matrix, through GSL) against plain loops: 0, or -1 with why
 * filled. rungd runs it at start, as it may have picked OpenBLAS's kernel
 * itself (common/blascore.h). */
int gp_check_blas(char *why, size_t size);

/* The OpenBLAS core running (openblas_get_corename()). */
const char *gp_blas_core(void);

/* The exponential the kernel uses, for x <= 0 (gp.c says how): exposed for
 * test_gp, which compares it with exp. */
double gp__exp_nonpos(double x);

#endif
