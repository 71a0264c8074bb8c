/* lc4, the synthetic learning curves of the early-stopping benchmarks
 * (bench/asha.c's header defines them; bench/multifidelity.c replays them
 * with configs a searcher proposed). One definition, so that both draw the
 * very same numbers.
 *
 * A config x in [0, 1]^4 has the noise-free loss at time t
 *   lc4_clean(x, t) = f(x) + a(x) exp(-t / b(x)),
 *   f(x) = 0.05 + 0.5(x0 - 0.7)^2 + 0.3(x1 - 0.3)^2 + 0.2(x2 - 0.5)^2 + 0.1(x3 - 0.6)^2,
 *   a(x) = 0.3 + 0.7 x3, b(x) = 1 + 20 x0,
 * and reports lc4_clean(x, t) + LC4_NOISE eps_t at t = 1 .. LC4_STEPS. */
#ifndef RUNG_BENCH_LC4_H
#define RUNG_BENCH_LC4_H

#include <stdint.h>

#define LC4_STEPS 81
#define LC4_DIMS 4
#define LC4_NOISE 0.01

double lc4_clean(const double *x, double t);

/* Trial `trial` of `seed`, from its own splitmix64 stream (asha.c's
 * header): its four coordinates into x, eps_1 .. eps_81 into eps[1 ..]
 * (eps[0] = 0), and its step duration, 1 .. jitter, returned. */
int lc4_draw(int seed, int64_t trial, int jitter, double x[LC4_DIMS], double eps[LC4_STEPS + 1]);

/* g* = min over x of lc4_clean(x, LC4_STEPS), and a minimizer (xstar may
 * be NULL): x1 = 0.3, x2 = 0.5, (x0, x3) from a 201 x 201 grid over
 * [0, 1]^2, then zooms, each a 41 x 41 grid over +-2 cells of the last one
 * around the best point so far, with cells 10 times smaller. */
double lc4_gstar(double xstar[LC4_DIMS]);

/* A uniform double in [0, 1) from a splitmix64 state (the top 53 bits). */
double lc4_uniform(uint64_t *state);

#endif
