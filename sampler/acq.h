/* The acquisition function of the bayes searcher: log Expected Improvement
 * for minimization over a Gaussian process (gp.h), and its maximization in
 * a box.
 *
 * For a posterior N(mean, sd^2) and the best value so far `best`,
 *
 *   EI = sd h(z),  z = (best - mean) / sd,  h(z) = z Phi(z) + phi(z)
 *
 * Far from the best point z is very negative and h(z) underflows (h(-40)
 * is about 1e-351) while its naive formula cancels long before, which
 * leaves plain EI flat zero over most of the space. log h is computed
 * without either problem (see acq.c), so log EI ranks and has slopes
 * everywhere. */
#ifndef RUNG_SAMPLER_ACQ_H
#define RUNG_SAMPLER_ACQ_H

#include <stdbool.h>

#include "gp.h"

/* The posterior variance below which sd is held at its square root, so
 * that log EI stays finite at observed points. */
#define ACQ_VAR_MIN 1e-12

/* log h(z) for any finite z (z is held within +-1e100, where -z^2/2 is
 * still finite); *dlog_h (may be NULL) gets d log h / dz = Phi(z) / h(z),
 * which is positive: log h is strictly increasing. */
double acq_log_h(double z, double *dlog_h);

/* log EI at x (gp_dims values) of a factorized gp; grad (may be NULL) gets
 * its gradient with respect to x (0 for categorical features). */
int acq_log_ei(Gp *gp, const double *x, double best, double *value, double *grad);

/* log EI at m points (x is m x gp_dims, row-major) into values. */
int acq_log_ei_many(Gp *gp, const double *x, int m, double best, double *values);

/* acq_log_ei_many where only the `top` largest values matter (the starts
 * of a refinement): values gets log EI at every point that could be among
 * them and -INFINITY at the others, which cannot. A point is skipped when
 * log EI at its bound on the variance (gp_predict_bound; EI grows with the
 * variance) is below the top-th largest value computed so far; points are
 * computed in the order of that bound, so few are, each with gp_predict
 * (one point's value does not depend on the others'). The top (1 <= top <=
 * m) largest values and their points are those of acq_log_ei_many, the
 * values up to rounding. */
int acq_log_ei_top(Gp *gp, const double *x, int m, double best, int top, double *values);

/* Local maximization of log EI from x, over the features marked in `free_dims`
 * (values in [0, 1]), the others held: GSL's BFGS (vector_bfgs2) on
 * -log EI(clamp(t)) + a quadratic penalty on the distance of t from the box
 * [0, 1], at most max_iter iterations; the result is clamped into the box.
 * x is replaced by the best point seen (the start when nothing was better)
 * and *value by its log EI. */
int acq_refine(Gp *gp, double best, const bool *free_dims, int max_iter, double *x, double *value);

#endif
