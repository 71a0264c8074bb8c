/* Pareto fronts of several objectives, all minimized (docs/searchers.md,
 * "Several objectives"): which points are non-dominated, non-dominated
 * sorting and crowding distance (NSGA-II's ranking, Deb et al. 2002), the
 * hypervolume a front dominates, and the expected hypervolume improvement
 * of a Gaussian posterior over two objectives. Pure: no I/O, no state.
 *
 * Points are rows of y, n x m, row-major; m is 1 .. PARETO_MAX_M. a
 * dominates b when a <= b in every objective and a < b in one. */
#ifndef RUNG_SAMPLER_PARETO_H
#define RUNG_SAMPLER_PARETO_H

#include <stdbool.h>

#define PARETO_MAX_M 4 /* objectives: spec.h's SPEC_MAX_OBJECTIVES */

bool pareto_dominates(const double *a, const double *b, int m);

/* on_front[i] = no other point dominates point i. Points with a non-finite
 * value are never on the front and dominate nothing. O(n log n + n f) for
 * a front of f points. Returns the front's size, or -1 when out of memory. */
int pareto_front(const double *y, int n, int m, bool *on_front);

/* Non-dominated sorting: rank[i] = 0 for the front, 1 for the front of the
 * rest, and so on. Returns the number of ranks, or -1 when out of memory. */
int pareto_ranks(const double *y, int n, int m, int *rank);

/* NSGA-II's crowding distance of each point within its rank: the sum over
 * objectives of the gap between its two neighbours, divided by that rank's
 * range; the extremes of each objective get INFINITY. Returns 0, or -1
 * when out of memory. */
int pareto_crowding(const double *y, int n, int m, const int *rank, double *crowd);

/* The hypervolume of the points that dominate ref (m of them), bounded by
 * ref; points not dominating ref add nothing. Exact, by slicing the last
 * objective (O(n^(m-1) log n): meant for m <= 4 and fronts of hundreds).
 * Returns -1 when out of memory. */
double pareto_hypervolume(const double *y, int n, int m, const double *ref);

/* Expected hypervolume improvement over the front (k points, 2 columns;
 * dominated points and points not dominating ref are ignored) of a point
 * whose two objectives are independent N(mean[j], sd[j]^2), bounded by ref.
 * Exact: the non-dominated region below ref is a union of k + 1 cells
 * [a_i, b_i) x (-inf, u_i), over which EHVI = sum_i (psi_1(b_i) -
 * psi_1(a_i)) psi_2(u_i) with psi_j(x) = E[(x - Y_j)^+]
 * = (x - mean) Phi(z) + sd phi(z), z = (x - mean) / sd (Emmerich et al.
 * 2006; Yang et al. 2019). sd[j] > 0. */
double pareto_ehvi2(const double *front, int k, const double *ref, const double *mean,
                    const double *sd);

/* The same expectation for 2 .. PARETO_MAX_M objectives, each independent
 * N(mean[j], sd[j]^2): the non-dominated region below ref is cut by the
 * front's coordinates in the first m - 1 objectives into cells, each a box
 * times (-inf, u) in the last objective, u the least last coordinate of
 * the points that dominate the cell's corner (ref's when none), so that
 * EHVI = sum over cells of prod_{j < m-1} (psi_j(b_j) - psi_j(a_j)) psi_m(u),
 * the formula of pareto_ehvi2 in m dimensions. The cells depend on the
 * front alone: made once, they serve every posterior. */
typedef struct ParetoCells ParetoCells;
/* Most distinct coordinates per objective (front points + 1). */
#define PARETO_CELLS_MAX_LINES 1025
/* New (free with pareto_cells_free), or NULL when out of memory, m outside
 * 2 .. PARETO_MAX_M, more than max_cells cells (the product over the first
 * m - 1 objectives of the front's distinct coordinates + 1) or more than
 * PARETO_CELLS_MAX_LINES - 1 front points. Dominated points and points not
 * dominating ref are ignored. */
ParetoCells *pareto_cells_new(const double *front, int k, int m, const double *ref, int max_cells);
void pareto_cells_free(ParetoCells *cells); /* accepts NULL */
int pareto_cells_count(const ParetoCells *cells);
/* EHVI of a point whose objectives are independent N(mean[j], sd[j]^2),
 * sd[j] > 0. O(cells x m). */
double pareto_cells_ehvi(const ParetoCells *cells, const double *mean, const double *sd);

#endif
