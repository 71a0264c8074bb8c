/* Unit tests of the bayes searcher with constraints and several objectives
 * (sampler/bayes.c, docs/searchers.md "Several objectives and
 * constraints"): the log probability of feasibility against a dense
 * integral of the normal density, proposals that move into a small
 * feasible disk away from the unconstrained optimum, and proposals on two
 * conflicting objectives whose front beats random search's. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_pof_dense),
        cmocka_unit_test(test_moves_to_feasible),
        cmocka_unit_test(test_two_objectives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
