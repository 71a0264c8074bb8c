/* Unit tests of sampler/pareto.c against trivially correct references: the
 * front and non-dominated sorting against all-pairs dominance, crowding
 * distance by hand, hypervolume against a dense grid count, and 2-D EHVI
 * against a Monte Carlo estimate of E[HV(front + y) - HV(front)]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "pareto.h"

/* xorshift64*: a seeded stream of uniforms in [0, 1). */
static double uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double normal(uint64_t *s)
{
    double u = uniform(s), v = uniform(s);
    return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static void test_front_and_ranks(void **state)
{
    (void)state;
    uint64_t s = 7;
    enum { N = 200 };
    double y[N * 3];
    bool on[N];
    int rank[N];
    for (int m = 2; m <= 3; m++) {
        for (int i = 0; i < N * m; i++)
            y[i] = floor(uniform(&s) * 20); /* ties and duplicates on purpose */
        y[5 * m] = NAN;
        int f = pareto_front(y, N, m, on);
        int count = 0;
        for (int i = 0; i < N; i++) {
            bool dominated = i == 5;
            for (int k = 0; k < N && !dominated; k++)
                dominated = k != 5 && pareto_dominates(y + k * m, y + i * m, m);
            assert_int_equal(on[i], !dominated);
            count += on[i];
        }
        assert_int_equal(f, count);
        int nr = pareto_ranks(y, N, m, rank);
        assert_true(nr >= 2);
        assert_int_equal(rank[5], nr - 1); /* the NaN row last */
        for (int i = 0; i < N; i++) {
            if (i == 5)
                continue;
            assert_int_equal(rank[i] == 0, on[i]);
            /* Rank r: dominated by some point of rank r - 1, by none of
             * rank r or later. */
            bool below = rank[i] == 0;
            for (int k = 0; k < N; k++) {
                if (k == 5 || !pareto_dominates(y + k * m, y + i * m, m))
                    continue;
                assert_true(rank[k] < rank[i]);
                below = below || rank[k] == rank[i] - 1;
            }
            assert_true(below);
        }
    }
}

static void test_crowding(void **state)
{
    (void)state;
    /* One front of four points on a line, and one point of rank 1. */
    double y[] = {0, 4, 1, 2, 3, 1, 4, 0, 5, 5};
    int rank[5];
    double crowd[5];
    assert_int_equal(pareto_ranks(y, 5, 2, rank), 2);
    assert_int_equal(rank[4], 1);
    assert_int_equal(pareto_crowding(y, 5, 2, rank, crowd), 0);
    assert_true(isinf(crowd[0]) && isinf(crowd[3]) && isinf(crowd[4]));
    /* Point 1: (3 - 0) / 4 + (4 - 1) / 4; point 2: (4 - 1) / 4 + (2 - 0) / 4. */
    assert_float_equal(crowd[1], 1.5, 1e-12);
    assert_float_equal(crowd[2], 1.25, 1e-12);
}

static void test_hypervolume(void **state)
{
    (void)state;
    double y2[] = {1, 3, 2, 2, 3, 1, 2.5, 2.5, 5, 0};
    double ref2[] = {4, 4};
    /* Staircase: 3x1 + 2x1 + 1x1 (the fifth point is beyond ref). */
    assert_float_equal(pareto_hypervolume(y2, 5, 2, ref2), 6, 1e-12);
    uint64_t s = 3;
    for (int m = 3; m <= 4; m++) {
        enum { N = 12, G = 40 };
        double y[N * 4], ref[4];
        for (int j = 0; j < m; j++)
            ref[j] = 1;
        for (int i = 0; i < N * m; i++)
            y[i] = uniform(&s);
        double hv = pareto_hypervolume(y, N, m, ref);
        /* Dense grid: cell centres dominated by some point. */
        long count = 0, cells = 1;
        for (int j = 0; j < m; j++)
            cells *= G;
        for (long c = 0; c < cells; c++) {
            double z[4];
            long r = c;
            for (int j = 0; j < m; j++) {
                z[j] = ((double)(r % G) + 0.5) / G;
                r /= G;
            }
            bool dom = false;
            for (int i = 0; i < N && !dom; i++) {
                bool all = true;
                for (int j = 0; j < m && all; j++)
                    all = y[i * m + j] <= z[j];
                dom = all;
            }
            count += dom;
        }
        assert_float_equal(hv, (double)count / (double)cells, 0.02);
    }
}

static void test_ehvi2(void **state)
{
    (void)state;
    double front[] = {0.2, 0.9, 0.5, 0.5, 0.8, 0.3, 0.6, 0.7 /* dominated */};
    double ref[] = {1.2, 1.1};
    const double cases[][4] = {
        {0.4, 0.4, 0.1, 0.2},   /* mean, sd: inside the dominated region's edge */
        {0.9, 0.9, 0.3, 0.3},   /* behind the front: small but positive */
        {0.0, 0.0, 0.05, 0.05}, /* far ahead: about the box to the origin */
        {1.5, 0.2, 0.2, 0.1},
    };
    uint64_t s = 11;
    double base = pareto_hypervolume(front, 4, 2, ref);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const double mean[2] = {cases[c][0], cases[c][1]};
        const double sd[2] = {cases[c][2], cases[c][3]};
        double exact = pareto_ehvi2(front, 4, ref, mean, sd);
        enum { S = 200000 };
        double sum = 0, sum2 = 0;
        double pts[5 * 2];
        for (int i = 0; i < 8; i++)
            pts[i] = front[i];
        for (int k = 0; k < S; k++) {
            pts[8] = mean[0] + sd[0] * normal(&s);
            pts[9] = mean[1] + sd[1] * normal(&s);
            double hvi = pareto_hypervolume(pts, 5, 2, ref) - base;
            sum += hvi;
            sum2 += hvi * hvi;
        }
        double mc = sum / S, se = sqrt((sum2 / S - mc * mc) / S);
        if (fabs(exact - mc) > 4 * se + 1e-9)
            fail_msg("case %zu: exact %g, Monte Carlo %g +- %g", c, exact, mc, se);
    }
    /* An empty front: the expected box [y, ref]. */
    const double mean[2] = {0.5, 0.5}, sd[2] = {1e-6, 1e-6};
    assert_float_equal(pareto_ehvi2(front, 0, ref, mean, sd), 0.7 * 0.6, 1e-5);
}

/* The cell decomposition's EHVI: equal to pareto_ehvi2 in two objectives,
 * and within four standard errors of a Monte Carlo estimate in three. */
static void test_cells_ehvi(void **state)
{
    (void)state;
    double front2[] = {0.2, 0.9, 0.5, 0.5, 0.8, 0.3, 0.6, 0.7};
    double ref2[] = {1.2, 1.1};
    ParetoCells *c2 = pareto_cells_new(front2, 4, 2, ref2, 1 << 16);
    assert_non_null(c2);
    const double cases2[][4] = {{0.4, 0.4, 0.1, 0.2},
                                {0.9, 0.9, 0.3, 0.3},
                                {0.0, 0.0, 0.05, 0.05},
                                {1.5, 0.2, 0.2, 0.1}};
    for (size_t k = 0; k < sizeof cases2 / sizeof cases2[0]; k++) {
        const double mean[2] = {cases2[k][0], cases2[k][1]};
        const double sd[2] = {cases2[k][2], cases2[k][3]};
        assert_float_equal(pareto_cells_ehvi(c2, mean, sd), pareto_ehvi2(front2, 4, ref2, mean, sd),
                           1e-12);
    }
    pareto_cells_free(c2);

    uint64_t s = 23;
    enum { K = 12 };
    double front[(K + 1) * 3];
    for (int i = 0; i < K; i++) {
        /* Points near the sphere |y| = 1 in the positive orthant. */
        double a = uniform(&s) + 0.05, b = uniform(&s) + 0.05, c = uniform(&s) + 0.05;
        double r = sqrt(a * a + b * b + c * c);
        front[i * 3] = a / r;
        front[i * 3 + 1] = b / r;
        front[i * 3 + 2] = c / r;
    }
    double ref[] = {1.1, 1.1, 1.1};
    ParetoCells *c3 = pareto_cells_new(front, K, 3, ref, 1 << 16);
    assert_non_null(c3);
    double base = pareto_hypervolume(front, K, 3, ref);
    const double cases[][6] = {
        {0.5, 0.5, 0.5, 0.1, 0.2, 0.1},
        {0.2, 0.3, 0.9, 0.2, 0.2, 0.2},
        {1.0, 1.0, 1.0, 0.3, 0.3, 0.3},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double exact = pareto_cells_ehvi(c3, cases[k], cases[k] + 3);
        enum { S = 40000 };
        double sum = 0, sum2 = 0;
        for (int i = 0; i < S; i++) {
            for (int j = 0; j < 3; j++)
                front[K * 3 + j] = cases[k][j] + cases[k][3 + j] * normal(&s);
            double hvi = pareto_hypervolume(front, K + 1, 3, ref) - base;
            sum += hvi;
            sum2 += hvi * hvi;
        }
        double mc = sum / S, se = sqrt((sum2 / S - mc * mc) / S);
        if (fabs(exact - mc) > 4 * se + 1e-9)
            fail_msg("case %zu: exact %g, Monte Carlo %g +- %g", k, exact, mc, se);
    }
    pareto_cells_free(c3);
    /* Too many cells: refused. */
    assert_null(pareto_cells_new(front, K, 3, ref, 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_front_and_ranks), cmocka_unit_test(test_crowding),
        cmocka_unit_test(test_hypervolume),     cmocka_unit_test(test_ehvi2),
        cmocka_unit_test(test_cells_ehvi),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
