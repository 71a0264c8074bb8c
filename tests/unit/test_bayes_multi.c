/* Unit tests of the bayes searcher with constraints and several objectives
 * (sampler/bayes.c, docs/searchers.md "Several objectives and
 * constraints"): the log probability of feasibility against a dense
 * integral of the normal density, proposals that move into a small
 * feasible disk away from the unconstrained optimum, proposals on two and
 * on three conflicting objectives whose fronts beat quasi-random search's,
 * and a pending trial that moves the next proposal away. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "bayes.h"
#include "pareto.h"
#include "sampler.h"
#include "sampler_internal.h"
#include "space_testing.h"

static const char *SPACE2 = "{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                            " \"y\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}";

/* log Phi(z) against the trapezoid rule over the density on [-60, z]. */
static void test_log_pof_dense(void **state)
{
    (void)state;
    for (double z = -30.0; z <= 6.0; z += 0.37) {
        enum { N = 200000 };
        double lo = z - 12.0, h = (z - lo) / N, sum = 0.0;
        /* Scaled by the density at z, so the far tail does not underflow. */
        for (int i = 0; i <= N; i++) {
            double t = lo + i * h;
            double w = (i == 0 || i == N) ? 0.5 : 1.0;
            sum += w * exp(-0.5 * (t * t - z * z));
        }
        double dense = log(sum * h) - 0.5 * z * z - 0.5 * log(2.0 * M_PI);
        double got = bayes__log_cdf(z);
        if (fabs(got - dense) > 2e-4 * (1.0 + fabs(dense)))
            fail_msg("z = %g: log Phi %g, dense %g", z, got, dense);
    }
}

typedef struct Run {
    BayesObservation obs[128];
    json_t *owned[128];
    int n;
} Run;

static void run_free(Run *r)
{
    for (int i = 0; i < r->n; i++)
        json_decref(r->owned[i]);
}

static double get(const json_t *c, const char *k)
{
    return json_real_value(json_object_get(c, k));
}

/* Minimize x + y subject to (x - 0.7)^2 + (y - 0.7)^2 <= 0.04, a disk of
 * an eighth of the square away from the unconstrained optimum (0, 0). */
static void test_moves_to_feasible(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE2);
    SearcherSpec s = {.type = SEARCHER_BAYES, .seed = 5, .n_initial = 6};
    Run r = {0};
    int feasible_late = 0;
    double best = INFINITY;
    for (int t = 0; t < 30; t++) {
        BayesHistory h = {.obs = r.obs, .n_obs = r.n, .n_objectives = 1, .n_constraints = 1};
        json_t *c = NULL;
        RungError err;
        assert_int_equal(bayes_propose(space, &s, t, 1, &h, &c, &err), 0);
        double x = get(c, "x"), y = get(c, "y");
        double g = (x - 0.7) * (x - 0.7) + (y - 0.7) * (y - 0.7) - 0.04;
        r.owned[r.n] = c;
        r.obs[r.n] = (BayesObservation){.config = c, .loss = x + y, .cons = {g}};
        r.n++;
        /* The optimum lies on the disk's edge: proposals gather there. */
        if (t >= 20 && g <= 0.01)
            feasible_late++;
        if (g <= 0 && x + y < best)
            best = x + y;
    }
    /* Random search lands within 0.01 of the disk a sixth of the time. */
    if (feasible_late < 8)
        fail_msg("%d of the last 10 proposals (nearly) feasible", feasible_late);
    /* The constrained optimum: 1.4 - 0.2 sqrt 2 = 1.117. */
    if (!(best < 1.16))
        fail_msg("best feasible %g", best);
    run_free(&r);
    space_free(space);
}

/* Two objectives, f1 = x, f2 = 1 - sqrt(x) + y (ZDT1-like, front y = 0):
 * the hypervolume of 30 proposals beats random search's. */
static void test_two_objectives(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE2);
    double hv[2];
    for (int mode = 0; mode < 2; mode++) {
        SearcherSpec s = {.type = SEARCHER_BAYES, .seed = 9, .n_initial = mode == 0 ? 6 : 1000};
        Run r = {0};
        double y[30 * 2];
        for (int t = 0; t < 30; t++) {
            BayesHistory h = {.obs = r.obs, .n_obs = r.n, .n_objectives = 2};
            json_t *c = NULL;
            RungError err;
            assert_int_equal(bayes_propose(space, &s, t, 1, &h, &c, &err), 0);
            double f1 = get(c, "x"), f2 = 1.0 - sqrt(get(c, "x")) + get(c, "y");
            r.owned[r.n] = c;
            r.obs[r.n] = (BayesObservation){.config = c, .loss = f1, .more = {f2}};
            r.n++;
            y[t * 2] = f1;
            y[t * 2 + 1] = f2;
        }
        const double ref[2] = {1.1, 1.1};
        hv[mode] = pareto_hypervolume(y, 30, 2, ref);
        run_free(&r);
    }
    /* The front's hypervolume is 1.21 - 1/3 = 0.877. */
    if (!(hv[0] > hv[1] && hv[0] > 0.8))
        fail_msg("hypervolume: bayes %g, Sobol %g", hv[0], hv[1]);
    space_free(space);
}

/* Three objectives, DTLZ2 with d = 3 (x, y place the point on the unit
 * sphere's octant, z - 0.5 its distance): the hypervolume of 40 proposals
 * beats Sobol's, reference (1.1, 1.1, 1.1). */
static void dtlz2_3(const json_t *c, double *f)
{
    double x = get(c, "x"), y = get(c, "y"), z = get(c, "z");
    double g = (z - 0.5) * (z - 0.5);
    f[0] = (1 + g) * cos(x * M_PI / 2) * cos(y * M_PI / 2);
    f[1] = (1 + g) * cos(x * M_PI / 2) * sin(y * M_PI / 2);
    f[2] = (1 + g) * sin(x * M_PI / 2);
}

static void test_three_objectives(void **state)
{
    (void)state;
    Space *space = parse_space("{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"y\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"z\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    enum { N = 40 };
    double hv[2];
    for (int mode = 0; mode < 2; mode++) {
        SearcherSpec s = {.type = SEARCHER_BAYES, .seed = 4, .n_initial = mode == 0 ? 8 : 1000};
        Run r = {0};
        double y[N * 3];
        for (int t = 0; t < N; t++) {
            BayesHistory h = {.obs = r.obs, .n_obs = r.n, .n_objectives = 3};
            json_t *c = NULL;
            RungError err;
            assert_int_equal(bayes_propose(space, &s, t, 1, &h, &c, &err), 0);
            dtlz2_3(c, y + t * 3);
            r.owned[r.n] = c;
            r.obs[r.n] = (BayesObservation){.config = c,
                                            .loss = y[t * 3],
                                            .more = {y[t * 3 + 1], y[t * 3 + 2]}};
            r.n++;
        }
        const double ref[3] = {1.1, 1.1, 1.1};
        hv[mode] = pareto_hypervolume(y, N, 3, ref);
        run_free(&r);
    }
    /* The front's hypervolume is 1.331 - pi / 6 = 0.807. */
    if (!(hv[0] > hv[1] && hv[0] > 0.6))
        fail_msg("hypervolume: bayes %g, Sobol %g", hv[0], hv[1]);
    space_free(space);
}

/* A pending trial is a kriging believer: proposing again with the first
 * proposal pending moves away from it, on two objectives with a
 * constraint. */
static void test_pending_moves_away(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE2);
    SearcherSpec s = {.type = SEARCHER_BAYES, .seed = 2, .n_initial = 6};
    Run r = {0};
    for (int t = 0; t < 16; t++) {
        BayesHistory h = {.obs = r.obs, .n_obs = r.n, .n_objectives = 2, .n_constraints = 1};
        json_t *c = NULL;
        RungError err;
        assert_int_equal(bayes_propose(space, &s, t, 1, &h, &c, &err), 0);
        double x = get(c, "x"), yv = get(c, "y");
        r.owned[r.n] = c;
        r.obs[r.n] = (BayesObservation){.config = c,
                                        .loss = x,
                                        .more = {1 - sqrt(x) + yv},
                                        .cons = {x - 0.8}};
        r.n++;
    }
    json_t *alone = NULL, *again = NULL, *next = NULL;
    RungError err;
    BayesHistory h = {.obs = r.obs, .n_obs = r.n, .n_objectives = 2, .n_constraints = 1};
    assert_int_equal(bayes_propose(space, &s, 16, 1, &h, &alone, &err), 0);
    /* Deterministic: the same history gives the same proposal. */
    assert_int_equal(bayes_propose(space, &s, 16, 1, &h, &again, &err), 0);
    assert_true(json_equal(alone, again));
    const json_t *pending[1] = {alone};
    h.pending = pending;
    h.n_pending = 1;
    assert_int_equal(bayes_propose(space, &s, 16, 1, &h, &next, &err), 0);
    double dx = get(next, "x") - get(alone, "x"), dy = get(next, "y") - get(alone, "y");
    if (!(sqrt(dx * dx + dy * dy) > 0.02))
        fail_msg("with (%g, %g) pending the proposal is (%g, %g)", get(alone, "x"), get(alone, "y"),
                 get(next, "x"), get(next, "y"));
    json_decref(alone);
    json_decref(again);
    json_decref(next);
    run_free(&r);
    space_free(space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_pof_dense),      cmocka_unit_test(test_moves_to_feasible),
        cmocka_unit_test(test_two_objectives),     cmocka_unit_test(test_three_objectives),
        cmocka_unit_test(test_pending_moves_away),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
