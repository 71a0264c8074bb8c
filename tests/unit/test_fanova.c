/* Unit tests of sampler/fanova.c: importances on functions whose variance
 * decomposition is known (by hand, exactly, where the trees can fit the
 * function exactly; by ranking, over 20 seeds of random trials, where they
 * cannot), categorical and conditional parameters, the sums, constant y,
 * bad input, and reproducibility. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fanova.h"

/* xorshift64*: a seeded stream of uniforms in [0, 1). */
static double uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double sum(const double *a, int d)
{
    double s = 0;
    for (int j = 0; j < d; j++)
        s += a[j];
    return s;
}

/* The parameter with the largest importance (the first of equals). */
static int first_of(const double *imp, int d)
{
    int best = 0;
    for (int j = 1; j < d; j++)
        if (imp[j] > imp[best])
            best = j;
    return best;
}

/* Are a and b (a != b) the two largest importances, each strictly above
 * every other parameter's? */
static bool top_two(const double *imp, int d, int a, int b)
{
    for (int j = 0; j < d; j++)
        if (j != a && j != b && !(imp[j] < imp[a] && imp[j] < imp[b]))
            return false;
    return true;
}

/* The known truth: y = 10 sin(pi x0) + 8 x1, x0 .. x5 uniform on [0, 1].
 * Var(10 sin(pi x0)) = 100 (1/2 - 4/pi^2) = 9.47 and Var(8 x1) = 64/12 =
 * 5.33, so the first-order (Sobol) indices are 0.64 and 0.36 and those of
 * x2 .. x5 are 0: the forest must find x0 and x1 first, from 200 random
 * trials, in each of 20 seeds. */
static void test_known_truth_ranks(void **state)
{
    (void)state;
    enum { N = 200, D = 6, SEEDS = 20 };
    static double x[N * D], y[N];
    int cats[D] = {0};
    double s0 = 100 * (0.5 - 4 / (M_PI * M_PI)), s1 = 64.0 / 12;
    double truth0 = s0 / (s0 + s1);
    int top = 0, x0_first = 0;
    double mean0 = 0;
    for (int seed = 0; seed < SEEDS; seed++) {
        uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(seed + 1);
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < D; j++)
                x[i * D + j] = uniform(&s);
            y[i] = 10 * sin(M_PI * x[i * D]) + 8 * x[i * D + 1];
        }
        FanovaData data = {N, D, x, cats, y};
        FanovaOptions o;
        fanova_options_default(&o);
        o.seed = (unsigned long long)seed;
        double imp[D], sd[D];
        int active[D];
        char why[200] = "";
        assert_int_equal(fanova_importance(&data, &o, imp, sd, active, why, sizeof why), 0);
        assert_true(fabs(sum(imp, D) - 1) < 1e-12);
        for (int j = 0; j < D; j++) {
            assert_true(imp[j] >= 0 && imp[j] <= 1);
            assert_true(sd[j] >= 0);
            assert_int_equal(active[j], N);
        }
        top += top_two(imp, D, 0, 1);
        x0_first += first_of(imp, D) == 0;
        mean0 += imp[0] / SEEDS;
        /* The two carry nearly all of it: what the others get is the
         * forest fitting their noise-free but irrelevant coordinates. */
        assert_true(imp[0] + imp[1] > 0.8);
    }
    assert_int_equal(top, SEEDS);
    assert_int_equal(x0_first, SEEDS);
    /* The share between the two is the truth's, within the forest's error. */
    assert_true(fabs(mean0 - truth0) < 0.1);
}

/* Grid points where a tree fits y exactly: x0, x1 in {0.25, 0.75} (every
 * split at 0.5), y = 1[x0 > 0.5] + 2 [x1 > 0.5], x2 irrelevant. The
 * marginals are steps of height 1 and 2 on halves of [0, 1]: variances
 * 1/4 and 1, total 5/4, so the importances are exactly 0.2, 0.8 and 0, in
 * every tree (std 0). */
static void test_exact_additive(void **state)
{
    (void)state;
    enum { N = 400, D = 3 };
    static double x[N * D], y[N];
    int cats[D] = {0};
    uint64_t s = 11;
    for (int i = 0; i < N; i++) {
        x[i * D] = (i & 1) ? 0.75 : 0.25;
        x[i * D + 1] = (i & 2) ? 0.75 : 0.25;
        x[i * D + 2] = uniform(&s);
        y[i] = (x[i * D] > 0.5) + 2.0 * (x[i * D + 1] > 0.5);
    }
    FanovaData data = {N, D, x, cats, y};
    double imp[D], sd[D];
    assert_int_equal(fanova_importance(&data, NULL, imp, sd, NULL, NULL, 0), 0);
    assert_true(fabs(imp[0] - 0.2) < 1e-12);
    assert_true(fabs(imp[1] - 0.8) < 1e-12);
    assert_true(fabs(imp[2]) < 1e-12);
    for (int j = 0; j < D; j++)
        assert_true(sd[j] < 1e-12);
}

/* The same with a categorical parameter of 3 categories: y = 3 [c = 2] +
 * 2 [x1 > 0.5]. The tree cuts {2} from {0, 1} (a box of measure 2/3), then
 * x1. c's marginal is (1, 1, 4), variance 2; x1's (1, 3), variance 1: the
 * importances are 2/3 and 1/3. */
static void test_exact_categorical(void **state)
{
    (void)state;
    enum { N = 600, D = 2 };
    static double x[N * D], y[N];
    int cats[D] = {3, 0};
    for (int i = 0; i < N; i++) {
        x[i * D] = i % 3;
        x[i * D + 1] = (i / 3) % 2 ? 0.75 : 0.25;
        y[i] = 3.0 * (x[i * D] == 2) + 2.0 * (x[i * D + 1] > 0.5);
    }
    FanovaData data = {N, D, x, cats, y};
    double imp[D];
    assert_int_equal(fanova_importance(&data, NULL, imp, NULL, NULL, NULL, 0), 0);
    assert_true(fabs(imp[0] - 2.0 / 3) < 1e-12);
    assert_true(fabs(imp[1] - 1.0 / 3) < 1e-12);
}

/* A categorical parameter that carries the variance is ranked first: y =
 * (0, 5, 1, 8)[c] + x1 with c of 4 categories, x1 .. x3 numeric, over 20
 * seeds of 200 random trials. */
static void test_categorical_first(void **state)
{
    (void)state;
    enum { N = 200, D = 4, SEEDS = 20 };
    static double x[N * D], y[N];
    int cats[D] = {4, 0, 0, 0};
    const double level[4] = {0, 5, 1, 8};
    for (int seed = 0; seed < SEEDS; seed++) {
        uint64_t s = 1000 + (uint64_t)seed;
        for (int i = 0; i < N; i++) {
            x[i * D] = floor(uniform(&s) * 4);
            for (int j = 1; j < D; j++)
                x[i * D + j] = uniform(&s);
            y[i] = level[(int)x[i * D]] + x[i * D + 1];
        }
        FanovaData data = {N, D, x, cats, y};
        FanovaOptions o;
        fanova_options_default(&o);
        o.seed = (unsigned long long)seed;
        double imp[D];
        assert_int_equal(fanova_importance(&data, &o, imp, NULL, NULL, NULL, 0), 0);
        assert_int_equal(first_of(imp, D), 0);
        assert_true(imp[0] > 0.8);
        assert_true(fabs(sum(imp, D) - 1) < 1e-12);
    }
}

/* A conditional parameter: x4 is active only where the categorical x5 is
 * 1 (half the rows), and there y = 10 x4; elsewhere y = 5 + 0.5 x0, whose
 * mean is near the other branch's, so little of the variance is between the
 * branches. x4 must come first with most of the importance, its active
 * count must be the rows where it was given, and a parameter never active
 * must get 0 without taking anything from the sum. */
static void test_conditional(void **state)
{
    (void)state;
    enum { N = 400, D = 7, SEEDS = 20 };
    static double x[N * D], y[N];
    int cats[D] = {0, 0, 0, 0, 0, 2, 0};
    for (int seed = 0; seed < SEEDS; seed++) {
        uint64_t s = 77 + (uint64_t)seed;
        int given = 0;
        for (int i = 0; i < N; i++) {
            double *row = x + i * D;
            for (int j = 0; j < 4; j++)
                row[j] = uniform(&s);
            row[5] = uniform(&s) < 0.5;
            row[4] = row[5] == 1 ? uniform(&s) : NAN;
            row[6] = NAN; /* never active */
            given += row[5] == 1;
            y[i] = row[5] == 1 ? 10 * row[4] : 5 + 0.5 * row[0];
        }
        FanovaData data = {N, D, x, cats, y};
        FanovaOptions o;
        fanova_options_default(&o);
        o.seed = (unsigned long long)seed;
        double imp[D], sd[D];
        int active[D];
        char why[200] = "";
        assert_int_equal(fanova_importance(&data, &o, imp, sd, active, why, sizeof why), 0);
        assert_int_equal(active[4], given);
        assert_int_equal(active[6], 0);
        assert_int_equal(active[0], N);
        assert_int_equal(active[5], N);
        assert_int_equal(first_of(imp, D), 4);
        assert_true(imp[4] > 0.7);
        assert_true(imp[6] == 0 && sd[6] == 0);
        assert_true(fabs(sum(imp, D) - 1) < 1e-12);
    }
}

/* When the branch itself decides y (the branches' means differ and the
 * conditional parameter does nothing), the branch is what matters. */
static void test_conditional_branch(void **state)
{
    (void)state;
    enum { N = 300, D = 3 };
    static double x[N * D], y[N];
    int cats[D] = {2, 0, 0};
    uint64_t s = 5;
    for (int i = 0; i < N; i++) {
        double *row = x + i * D;
        row[0] = uniform(&s) < 0.5;
        row[1] = row[0] == 1 ? uniform(&s) : NAN;
        row[2] = uniform(&s);
        y[i] = row[0] == 1 ? 10 + 0.01 * row[1] : 0.01 * row[2];
    }
    FanovaData data = {N, D, x, cats, y};
    double imp[D];
    assert_int_equal(fanova_importance(&data, NULL, imp, NULL, NULL, NULL, 0), 0);
    assert_int_equal(first_of(imp, D), 0);
    assert_true(imp[0] > 0.99);
}

static void test_constant_y(void **state)
{
    (void)state;
    enum { N = 50, D = 3 };
    double x[N * D], y[N];
    int cats[D] = {0, 3, 0};
    uint64_t s = 3;
    for (int i = 0; i < N; i++) {
        x[i * D] = uniform(&s);
        x[i * D + 1] = i % 3;
        x[i * D + 2] = i % 2 ? uniform(&s) : NAN;
        y[i] = 4.25;
    }
    FanovaData data = {N, D, x, cats, y};
    double imp[D], sd[D];
    int active[D];
    assert_int_equal(fanova_importance(&data, NULL, imp, sd, active, NULL, 0), 0);
    for (int j = 0; j < D; j++) {
        assert_true(imp[j] == 0);
        assert_true(sd[j] == 0);
    }
    assert_int_equal(active[0], N);
    assert_int_equal(active[2], N / 2);
}

/* The first line of why names what was wrong. */
static void expect_error(const FanovaData *data, const FanovaOptions *o, const char *names)
{
    double imp[8];
    char why[256] = "";
    assert_int_equal(fanova_importance(data, o, imp, NULL, NULL, why, sizeof why), -1);
    if (strstr(why, names) == NULL)
        fail_msg("why '%s' does not name '%s'", why, names);
}

static void test_bad_input(void **state)
{
    (void)state;
    enum { N = 10, D = 3 };
    double x[N * D], y[N];
    int cats[D] = {0, 4, 0};
    uint64_t s = 9;
    for (int i = 0; i < N; i++) {
        x[i * D] = uniform(&s);
        x[i * D + 1] = i % 4;
        x[i * D + 2] = uniform(&s);
        y[i] = uniform(&s);
    }
    FanovaData good = {N, D, x, cats, y};
    double imp[D];
    assert_int_equal(fanova_importance(&good, NULL, imp, NULL, NULL, NULL, 0), 0);

    FanovaData bad = good;
    bad.n = 1;
    expect_error(&bad, NULL, "n is 1");
    bad = good;
    bad.d = 0;
    expect_error(&bad, NULL, "d is 0");

    y[3] = NAN;
    expect_error(&good, NULL, "y[3] is nan");
    y[3] = INFINITY;
    expect_error(&good, NULL, "y[3] is inf");
    y[3] = 0.5;

    x[5 * D + 2] = 1.5;
    expect_error(&good, NULL, "x[5][2] is 1.5");
    x[5 * D + 2] = -0.25;
    expect_error(&good, NULL, "x[5][2] is -0.25");
    x[5 * D + 2] = INFINITY;
    expect_error(&good, NULL, "x[5][2] is inf");
    x[5 * D + 2] = 0.5;
    x[7 * D + 1] = 4;
    expect_error(&good, NULL, "x[7][1] is 4");
    x[7 * D + 1] = 1.5;
    expect_error(&good, NULL, "x[7][1] is 1.5");
    x[7 * D + 1] = 1;

    cats[2] = 1;
    expect_error(&good, NULL, "categories[2] is 1");
    cats[2] = 0;

    FanovaOptions o;
    fanova_options_default(&o);
    o.trees = 0;
    expect_error(&good, &o, "trees is 0");
    fanova_options_default(&o);
    o.min_split = 1;
    expect_error(&good, &o, "min_split is 1");

    /* NULL why is allowed. */
    bad = good;
    bad.n = 0;
    assert_int_equal(fanova_importance(&bad, NULL, imp, NULL, NULL, NULL, 0), -1);
    assert_int_equal(fanova_importance(&good, NULL, imp, NULL, NULL, NULL, 0), 0);
}

/* Same seed, same bits; another seed, another forest. 4,000 rows with 64
 * trees are enough work for the second thread, whose trees must not
 * change the result either. */
static void test_seed(void **state)
{
    (void)state;
    enum { N = 4000, D = 4 };
    static double x[N * D], y[N];
    int cats[D] = {0, 0, 5, 0};
    uint64_t s = 21;
    for (int i = 0; i < N; i++) {
        x[i * D] = uniform(&s);
        x[i * D + 1] = uniform(&s);
        x[i * D + 2] = floor(uniform(&s) * 5);
        x[i * D + 3] = i % 3 ? uniform(&s) : NAN;
        y[i] = x[i * D] * x[i * D + 1] + x[i * D + 2] * 0.1 + uniform(&s) * 0.2;
    }
    FanovaData data = {N, D, x, cats, y};
    FanovaOptions o;
    fanova_options_default(&o);
    o.seed = 12345;
    double a[D], b[D], c[D], sa[D], sb[D];
    assert_int_equal(fanova_importance(&data, &o, a, sa, NULL, NULL, 0), 0);
    assert_int_equal(fanova_importance(&data, &o, b, sb, NULL, NULL, 0), 0);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_equal(sa, sb, sizeof sa);
    o.seed = 54321;
    assert_int_equal(fanova_importance(&data, &o, c, NULL, NULL, NULL, 0), 0);
    assert_true(memcmp(a, c, sizeof a) != 0);
    for (int j = 0; j < D; j++)
        assert_true(fabs(a[j] - c[j]) < 0.05); /* the same answer within the forest's noise */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_truth_ranks),
        cmocka_unit_test(test_exact_additive),
        cmocka_unit_test(test_exact_categorical),
        cmocka_unit_test(test_categorical_first),
        cmocka_unit_test(test_conditional),
        cmocka_unit_test(test_conditional_branch),
        cmocka_unit_test(test_constant_y),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
