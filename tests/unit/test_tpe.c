/* Unit tests of sampler/tpe.c (docs/searchers.md, "TPE"): the Parzen
 * estimators' densities, bandwidths and weights against values worked out
 * independently (Optuna 3.1's estimator with its defaults, on the same
 * observations: the method tpe.c follows), the good/bad split, the
 * constant liar, determinism, conditional spaces, the searcher's fields,
 * the multi-fidelity ranking (tpe_mf.c),
 * and that it beats random search on a quadratic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "space_testing.h"
#include "tpe.h"

#define TOL 1e-7

/* One numeric dimension, observations 0.2, 0.5, 0.9: the univariate rule
 * gives 0.3 (the gap to its inner neighbour: the first), 0.3 (the larger
 * gap; the prior's 0.5 is a neighbour at 0), 0.4 (the last), the prior 1;
 * the clip's floor is 1 / min(100, 5) = 0.2. */
static void test_parzen_univariate(void **state)
{
    (void)state;
    TpeDim d = {0, 0};
    double x[] = {0.2, 0.5, 0.9};
    TpeParzen *pe = tpe__parzen_new(&d, 1, x, 3, false);
    assert_non_null(pe);
    double want[] = {0.3, 0.3, 0.4, 1.0};
    for (int k = 0; k < 4; k++) {
        assert_true(fabs(tpe__parzen_sigma(pe, k, 0) - want[k]) < TOL);
        assert_true(fabs(tpe__parzen_weight(pe, k) - 0.25) < TOL);
    }
    assert_true(fabs(tpe__parzen_mu(pe, 3, 0) - 0.5) < TOL); /* the prior's mean */
    double at[] = {0.3, 0.75, 0.0}, logp[] = {-0.64307155, -0.66580066, -0.97215255};
    for (int i = 0; i < 3; i++)
        assert_true(fabs(tpe__parzen_log_pdf(pe, &at[i]) - logp[i]) < TOL);
    tpe__parzen_free(pe);
}

/* Two numeric dimensions, two observations: Scott's rule gives
 * 0.2 * 2^(-1/6) = 0.178, below the clip's floor 1 / min(100, 4). */
static void test_parzen_multivariate(void **state)
{
    (void)state;
    TpeDim d[2] = {{0, 0}, {0, 0}};
    double x[] = {0.1, 0.8, 0.4, 0.3};
    TpeParzen *pe = tpe__parzen_new(d, 2, x, 2, true);
    assert_non_null(pe);
    for (int j = 0; j < 2; j++) {
        assert_true(fabs(tpe__parzen_sigma(pe, 0, j) - 0.25) < TOL);
        assert_true(fabs(tpe__parzen_sigma(pe, 2, j) - 1.0) < TOL);
    }
    double at[] = {0.2, 0.5};
    assert_true(fabs(tpe__parzen_log_pdf(pe, at) - -0.85351719) < TOL);
    tpe__parzen_free(pe);

    /* With many observations Scott's rule is above the floor. */
    enum { N = 400 };
    double *many = malloc(2 * N * sizeof *many);
    for (int i = 0; i < 2 * N; i++)
        many[i] = (double)(i % 97) / 97.0;
    pe = tpe__parzen_new(d, 2, many, N, true);
    assert_true(fabs(tpe__parzen_sigma(pe, 7, 1) - 0.2 * pow(N, -1.0 / 6.0)) < TOL);
    tpe__parzen_free(pe);
    free(many);
}

/* Categorical kernels: each observation puts 1/(n+1) on every value and 1
 * more on its own (normalized), the prior is uniform. */
static void test_parzen_categorical(void **state)
{
    (void)state;
    TpeDim d = {3, 0};
    double x[] = {0, 2, 2};
    TpeParzen *pe = tpe__parzen_new(&d, 1, x, 3, true);
    double two = 2, one = 1;
    assert_true(fabs(tpe__parzen_log_pdf(pe, &two) - -0.74193734) < TOL);
    assert_true(fabs(tpe__parzen_log_pdf(pe, &one) - -1.65822808) < TOL);
    /* (0.25 * 0.1429 + 0.25 * 0.7143 * 2 + 0.25 / 3) in closed form. */
    double p2 = 0.25 * (1.0 / 7.0) + 0.5 * (5.0 / 7.0) + 0.25 / 3.0;
    assert_true(fabs(tpe__parzen_log_pdf(pe, &two) - log(p2)) < TOL);
    tpe__parzen_free(pe);

    /* A numeric and a categorical dimension in one product kernel. */
    TpeDim mix[2] = {{0, 0}, {3, 0}};
    double xm[] = {0.1, 0, 0.4, 2};
    pe = tpe__parzen_new(mix, 2, xm, 2, true);
    double at[] = {0.2, 2};
    assert_true(fabs(tpe__parzen_log_pdf(pe, at) - -1.55783067) < TOL);
    /* Draws from the categorical kernels keep their weights: value 2 is
     * drawn with probability exp(log_pdf(2)). */
    uint64_t rng = 7;
    int hits = 0;
    for (int i = 0; i < 20000; i++) {
        double s[2];
        tpe__parzen_sample(pe, &rng, s);
        assert_true(s[0] >= 0.0 && s[0] <= 1.0);
        hits += s[1] == 2.0;
    }
    /* Three kernels of weight 1/3: value 0's puts 1/6 on 2, value 2's puts
     * 2/3 on it, the prior 1/3. */
    double p = (1.0 / 6.0 + 2.0 / 3.0 + 1.0 / 3.0) / 3.0;
    assert_true(fabs(hits / 20000.0 - p) < 0.015);
    tpe__parzen_free(pe);
}

/* An integer domain 0..4 is 5 cells of the cube (Optuna's -0.5 .. 4.5);
 * values 1 and 3 sit at 0.3 and 0.7; a kernel weighs its mass over the
 * cell of the value. */
static void test_parzen_integer(void **state)
{
    (void)state;
    TpeDim d = {0, 5};
    double x[] = {0.3, 0.7};
    TpeParzen *pe = tpe__parzen_new(&d, 1, x, 2, true);
    assert_true(fabs(tpe__parzen_sigma(pe, 0, 0) - 0.25) < TOL); /* Optuna's 1.25 of 5 */
    double at2 = 0.5, at0 = 0.1;
    assert_true(fabs(tpe__parzen_log_pdf(pe, &at2) - -1.41575698) < TOL);
    assert_true(fabs(tpe__parzen_log_pdf(pe, &at0) - -1.84291134) < TOL);
    tpe__parzen_free(pe);
}

/* Weights: beyond 25 observations the older ones ramp from 1/n up to 1;
 * the magic clip keeps sigmas at least 1 / min(100, n + 2). */
static void test_weights_and_clip(void **state)
{
    (void)state;
    TpeDim d = {0, 0};
    enum { N = 30 };
    double x[N];
    for (int i = 0; i < N; i++)
        x[i] = (i + 0.5) / N;
    TpeParzen *pe = tpe__parzen_new(&d, 1, x, N, false);
    double sum = (1.0 / 30 + 0.275 + 0.51666667 + 0.75833333 + 1.0) + 25.0 + 1.0;
    assert_true(fabs(tpe__parzen_weight(pe, 0) - (1.0 / 30) / sum) < 1e-6);
    assert_true(fabs(tpe__parzen_weight(pe, 1) - 0.275 / sum) < 1e-6);
    assert_true(fabs(tpe__parzen_weight(pe, 4) - 1.0 / sum) < 1e-6);
    assert_true(fabs(tpe__parzen_weight(pe, N) - 1.0 / sum) < 1e-6); /* the prior */
    tpe__parzen_free(pe);

    enum { M = 200 };
    double y[M];
    for (int i = 0; i < M; i++)
        y[i] = 0.01 + 0.98 * i / (M - 1);
    pe = tpe__parzen_new(&d, 1, y, M, false);
    double lo = 1.0;
    for (int k = 0; k < M; k++)
        lo = fmin(lo, tpe__parzen_sigma(pe, k, 0));
    assert_true(fabs(lo - 0.01) < TOL); /* gaps of 0.0049, clipped to 1/100 */
    tpe__parzen_free(pe);
}

/* gamma(n) = min(ceil(n / 10), 25); the split takes the lowest losses,
 * ties in index order, failed (NaN, +inf) and pending ones last. */
static void test_gamma_split(void **state)
{
    (void)state;
    assert_int_equal(tpe__gamma(1), 1);
    assert_int_equal(tpe__gamma(10), 1);
    assert_int_equal(tpe__gamma(11), 2);
    assert_int_equal(tpe__gamma(249), 25);
    assert_int_equal(tpe__gamma(100000), 25);
    double loss[20];
    for (int i = 0; i < 20; i++)
        loss[i] = 10.0 + i;
    loss[5] = 1.0;
    loss[9] = 1.0; /* a tie: index 5 first, then 9 */
    loss[0] = NAN;
    bool below[25];
    tpe__split(loss, 20, 5, below); /* gamma(20) = 2 */
    for (int i = 0; i < 25; i++)
        assert_int_equal(below[i], i == 5 || i == 9);
    loss[9] = 2.0;
    loss[3] = 1.0;
    tpe__split(loss, 11, 0, below); /* gamma(11) = 2: 3 and 5 */
    for (int i = 0; i < 11; i++)
        assert_int_equal(below[i], i == 3 || i == 5);
    /* All failed: still gamma(n) good ones, in index order; never pending. */
    for (int i = 0; i < 20; i++)
        loss[i] = INFINITY;
    tpe__split(loss, 3, 2, below);
    assert_true(below[0] && !below[1] && !below[2] && !below[3] && !below[4]);
}

static const char *const SPACE_2D = "{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                                    " \"y\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}";

static SearcherSpec tpe_spec(uint64_t seed)
{
    return (SearcherSpec){.type = SEARCHER_TPE,
                          .seed = seed,
                          .n_initial = 10,
                          .multivariate = true,
                          .group = true,
                          .constant_liar = true};
}

static double quad(const json_t *c)
{
    double x = json_real_value(json_object_get(c, "x")),
           y = json_real_value(json_object_get(c, "y"));
    return (x - 0.3) * (x - 0.3) + (y - 0.7) * (y - 0.7);
}

/* Runs n sequential trials of searcher s on f; best loss seen. configs[]
 * (may be NULL) keeps them (new references). */
static double run(const Space *space, const SearcherSpec *s, int n, double (*f)(const json_t *),
                  json_t **configs)
{
    BayesObservation *obs = calloc((size_t)n, sizeof *obs);
    json_t **keep = calloc((size_t)n, sizeof *keep);
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        BayesHistory h = {.obs = obs, .n_obs = i};
        RungError err;
        if (s->type == SEARCHER_TPE)
            assert_int_equal(tpe_propose(space, s, i, 1, &h, &keep[i], &err), 0);
        else
            keep[i] = sampler_config(space, s, i);
        assert_non_null(keep[i]);
        obs[i].config = keep[i];
        obs[i].loss = f(keep[i]);
        best = fmin(best, obs[i].loss);
    }
    for (int i = 0; i < n; i++) {
        if (configs != NULL)
            configs[i] = keep[i];
        else
            json_decref(keep[i]);
    }
    free(keep);
    free(obs);
    return best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* On a 2-D quadratic, TPE's median regret after 50 trials over 20 seeds is
 * below random search's (bench/sampler_quality.sh measures the real
 * functions). */
static void test_beats_random(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_2D);
    enum { SEEDS = 20, N = 50 };
    double t[SEEDS], r[SEEDS];
    for (int s = 0; s < SEEDS; s++) {
        SearcherSpec ts = tpe_spec((uint64_t)s + 1);
        SearcherSpec rs = {.type = SEARCHER_RANDOM, .seed = (uint64_t)s + 1};
        t[s] = run(space, &ts, N, quad, NULL);
        r[s] = run(space, &rs, N, quad, NULL);
    }
    qsort(t, SEEDS, sizeof *t, cmp_double);
    qsort(r, SEEDS, sizeof *r, cmp_double);
    double mt = (t[9] + t[10]) / 2, mr = (r[9] + r[10]) / 2;
    print_message("median regret @%d: tpe %.3g, random %.3g\n", N, mt, mr);
    assert_true(mt < 0.5 * mr);
    space_free(space);
}

/* The same seed and history give the same configs; another seed others. */
static void test_determinism(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_2D);
    json_t *a[30], *b[30], *c[30];
    SearcherSpec s1 = tpe_spec(3), s2 = tpe_spec(4);
    run(space, &s1, 30, quad, a);
    run(space, &s1, 30, quad, b);
    run(space, &s2, 30, quad, c);
    int differ = 0;
    for (int i = 0; i < 30; i++) {
        assert_true(json_equal(a[i], b[i]));
        differ += !json_equal(a[i], c[i]);
        json_decref(a[i]);
        json_decref(b[i]);
        json_decref(c[i]);
    }
    assert_true(differ >= 25);
    space_free(space);
}

/* Pending trials count as the worst results (the constant liar): a batch
 * of 8 gets 8 distinct configs spread apart, and a config that is pending
 * is not proposed again; without the liar, pending trials are ignored. */
static void test_constant_liar(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_2D);
    json_t *cfg[20];
    SearcherSpec s = tpe_spec(9);
    run(space, &s, 20, quad, cfg);
    BayesObservation obs[20];
    for (int i = 0; i < 20; i++)
        obs[i] = (BayesObservation){.config = cfg[i], .loss = quad(cfg[i])};
    BayesHistory h = {.obs = obs, .n_obs = 20};
    RungError err;
    json_t *batch[8];
    assert_int_equal(tpe_propose(space, &s, 20, 8, &h, batch, &err), 0);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < i; j++)
            assert_false(json_equal(batch[i], batch[j]));

    /* Trial 20 alone, then with 30 pending copies of its config: the bad
     * set's density at that point rises and the next proposal moves away. */
    json_t *alone;
    assert_int_equal(tpe_propose(space, &s, 20, 1, &h, &alone, &err), 0);
    const json_t *pend[30];
    for (int i = 0; i < 30; i++)
        pend[i] = alone;
    BayesHistory hp = {.obs = obs, .n_obs = 20, .pending = pend, .n_pending = 30};
    json_t *moved, *ignored;
    assert_int_equal(tpe_propose(space, &s, 20, 1, &hp, &moved, &err), 0);
    assert_false(json_equal(moved, alone));
    SearcherSpec no_liar = s;
    no_liar.constant_liar = false;
    assert_int_equal(tpe_propose(space, &no_liar, 20, 1, &hp, &ignored, &err), 0);
    assert_true(json_equal(ignored, alone));
    json_decref(alone);
    json_decref(moved);
    json_decref(ignored);
    for (int i = 0; i < 8; i++)
        json_decref(batch[i]);
    for (int i = 0; i < 20; i++)
        json_decref(cfg[i]);
    space_free(space);
}

/* Multi-fidelity (tpe_mf_propose): 40 trials, x spread over [0, 1]. Those
 * with x > 0.5 are slow starters that reached level 9 (loss there 0.3 + x
 * / 10); those with x < 0.5 looked best at level 1 (loss 0.01) and were
 * stopped there. Ranked by the rung reached, the good set is the slow
 * starters and the proposals go to x > 0.5; from the last values alone
 * (tpe_propose) they would go to x < 0.5. A trial running with a record
 * counts as pending, not as ranked (the constant liar, as Optuna's). A
 * trial with no record (failed before its first rung) ranks below all. */
static void test_multi_fidelity(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_2D);
    enum { N = 40 };
    json_t *cfg[N];
    BayesObservation obs[N];
    BayesRungRecord rec[2 * N];
    int nr = 0;
    for (int i = 0; i < N; i++) {
        double x = (i + 0.5) / N;
        cfg[i] = json_pack("{s:f, s:f}", "x", x, "y", 0.5);
        bool slow = x > 0.5;
        double last = slow ? 0.3 + x / 10 : 0.01;
        obs[i] = (BayesObservation){.config = cfg[i], .loss = last};
        rec[nr++] = (BayesRungRecord){cfg[i], 1, slow ? 0.5 : 0.01, i};
        if (slow)
            rec[nr++] = (BayesRungRecord){cfg[i], 9, last, i};
    }
    SearcherSpec s = tpe_spec(5);
    BayesHistory h = {.obs = obs, .n_obs = N, .rungs = rec, .n_rungs = nr};
    BayesHistory last_only = {.obs = obs, .n_obs = N};
    RungError err;
    int mf_high = 0, last_high = 0;
    for (int k = 0; k < 20; k++) {
        json_t *a, *b;
        assert_int_equal(tpe_mf_propose(space, &s, N + k, 1, &h, &a, &err), 0);
        assert_int_equal(tpe_propose(space, &s, N + k, 1, &last_only, &b, &err), 0);
        mf_high += json_real_value(json_object_get(a, "x")) > 0.5;
        last_high += json_real_value(json_object_get(b, "x")) > 0.5;
        json_decref(a);
        json_decref(b);
    }
    print_message("x > 0.5 in 20 proposals: ranked by rung %d, by last value %d\n", mf_high,
                  last_high);
    assert_true(mf_high >= 14);
    assert_true(last_high <= 4);

    /* Without records it is tpe_propose. */
    BayesHistory none = {.obs = obs, .n_obs = N};
    json_t *p, *q;
    assert_int_equal(tpe_mf_propose(space, &s, N, 1, &none, &p, &err), 0);
    assert_int_equal(tpe_propose(space, &s, N, 1, &none, &q, &err), 0);
    assert_true(json_equal(p, q));
    json_decref(p);
    json_decref(q);

    /* The slow starters all running (pending, each with its records): they
     * are liars, so the good set is the fast starters' again. */
    const json_t *pend[N];
    int np = 0;
    for (int i = N / 2; i < N; i++)
        pend[np++] = cfg[i];
    BayesHistory running = {
        .obs = obs, .n_obs = N / 2, .pending = pend, .n_pending = np, .rungs = rec, .n_rungs = nr};
    int run_high = 0;
    for (int k = 0; k < 20; k++) {
        json_t *a;
        assert_int_equal(tpe_mf_propose(space, &s, N + k, 1, &running, &a, &err), 0);
        run_high += json_real_value(json_object_get(a, "x")) > 0.5;
        json_decref(a);
    }
    assert_true(run_high <= 4);

    BayesHistory bad = {.obs = NULL, .n_obs = 3, .rungs = rec, .n_rungs = nr};
    assert_int_equal(tpe_mf_propose(space, &s, N, 1, &bad, &p, &err), RUNG_E_INVALID_ARGUMENT);
    for (int i = 0; i < N; i++)
        json_decref(cfg[i]);
    space_free(space);
}

/* A conditional space: optimizer sgd (lr, momentum) or adam (lr, beta),
 * and a nested choice inside adam. Every config is one the space holds
 * exactly (space_conform gives it back: no parameter of a branch not
 * taken), and the searcher learns which branch is better. */
static const char *const SPACE_COND =
    "{\"width\": {\"type\": \"randint\", \"low\": 1, \"high\": 9},"
    " \"opt\": {\"type\": \"choice\", \"values\": ["
    "   {\"name\": \"sgd\", \"lr\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1},"
    "    \"momentum\": {\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": 0.1}},"
    "   {\"name\": \"adam\", \"lr\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1},"
    "    \"beta\": {\"type\": \"uniform\", \"low\": 0.5, \"high\": 1},"
    "    \"sched\": {\"type\": \"choice\", \"values\": ["
    "       {\"kind\": \"step\", \"gamma\": {\"type\": \"qrandint\", \"low\": 2, \"high\": 20, "
    "\"q\": 2}},"
    "       {\"kind\": \"cos\"}]}}]}}";

static double cond_loss(const json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "opt.name"));
    double lr = json_real_value(json_object_get(c, "opt.lr"));
    double w = (double)json_integer_value(json_object_get(c, "width"));
    double v = fabs(log10(lr) + 2.0) + 0.1 * fabs(w - 6.0);
    if (name != NULL && strcmp(name, "adam") == 0) {
        double beta = json_real_value(json_object_get(c, "opt.beta"));
        v += 4.0 * fabs(beta - 0.9);
    } else {
        v += 1.0;
    }
    return v;
}

static void test_conditional(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_COND);
    for (int mode = 0; mode < 3; mode++) {
        SearcherSpec s = tpe_spec(11);
        s.group = mode == 0;
        s.multivariate = mode != 2;
        enum { N = 60 };
        json_t *cfg[N];
        run(space, &s, N, cond_loss, cfg);
        int adam = 0;
        for (int i = 0; i < N; i++) {
            json_t *c = space_conform(space, cfg[i]);
            assert_non_null(c);
            assert_true(json_equal(c, cfg[i]));
            json_decref(c);
            const char *name = json_string_value(json_object_get(cfg[i], "opt.name"));
            bool is_adam = strcmp(name, "adam") == 0;
            assert_int_equal(json_object_get(cfg[i], "opt.momentum") != NULL, !is_adam);
            assert_int_equal(json_object_get(cfg[i], "opt.beta") != NULL, is_adam);
            if (i >= 30)
                adam += is_adam;
            json_decref(cfg[i]);
        }
        /* adam's floor is 1 lower: the model part picks it mostly. */
        print_message("mode %d: adam in %d of the last 30\n", mode, adam);
        assert_true(adam >= 20);
    }
    space_free(space);
}

/* Every domain: proposals are values the space can take (integers,
 * multiples of q, choices), the grid parameter follows trial n mod G, and
 * failed trials (NaN, +inf) and configs that do not fit are taken in
 * stride; a batch proposes distinct configs. */
static const char *const SPACE_ALL =
    "{\"g\": {\"type\": \"grid\", \"values\": [\"a\", \"b\", \"c\"]},"
    " \"n\": {\"type\": \"normal\", \"mean\": 1, \"sd\": 2},"
    " \"qn\": {\"type\": \"qnormal\", \"mean\": 0, \"sd\": 3, \"q\": 0.5},"
    " \"li\": {\"type\": \"lograndint\", \"low\": 1, \"high\": 1000},"
    " \"ql\": {\"type\": \"qloguniform\", \"low\": 0.001, \"high\": 1, \"q\": 0.001},"
    " \"qi\": {\"type\": \"qrandint\", \"low\": 0, \"high\": 100, \"q\": 5},"
    " \"c\": {\"type\": \"choice\", \"values\": [1, \"two\", true, \"four\"]},"
    " \"k\": 7}";

static double all_loss(const json_t *c)
{
    double n = json_real_value(json_object_get(c, "n"));
    double li = (double)json_integer_value(json_object_get(c, "li"));
    return (n - 2) * (n - 2) + fabs(log(li) - 3.0) +
           (json_is_true(json_object_get(c, "c")) ? 0 : 1);
}

static void test_all_domains(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_ALL);
    SearcherSpec s = tpe_spec(21);
    s.n_initial = 5;
    enum { N = 40 };
    BayesObservation obs[N + 1];
    json_t *cfg[N];
    for (int i = 0; i < N; i++) {
        BayesHistory h = {.obs = obs, .n_obs = i};
        RungError err;
        assert_int_equal(tpe_propose(space, &s, i, 1, &h, &cfg[i], &err), 0);
        json_t *c = space_conform(space, cfg[i]);
        assert_non_null(c);
        assert_true(json_equal(c, cfg[i]));
        json_decref(c);
        const char *g = json_string_value(json_object_get(cfg[i], "g"));
        assert_int_equal(g[0] - 'a', i % 3);
        obs[i] = (BayesObservation){.config = cfg[i], .loss = all_loss(cfg[i])};
        if (i % 7 == 3)
            obs[i].loss = i % 2 ? NAN : INFINITY; /* failed */
    }
    /* A config of another space is skipped, not an error. */
    json_t *alien = load("{\"zzz\": 1}");
    obs[N] = (BayesObservation){.config = alien, .loss = -100.0};
    BayesHistory h = {.obs = obs, .n_obs = N + 1};
    json_t *batch[6];
    RungError err;
    assert_int_equal(tpe_propose(space, &s, N, 6, &h, batch, &err), 0);
    for (int i = 0; i < 6; i++) {
        json_t *c = space_conform(space, batch[i]);
        assert_true(c != NULL && json_equal(c, batch[i]));
        json_decref(c);
        for (int j = 0; j < i; j++)
            assert_false(json_equal(batch[i], batch[j]));
    }
    for (int i = 0; i < 6; i++)
        json_decref(batch[i]);
    for (int i = 0; i < N; i++)
        json_decref(cfg[i]);
    json_decref(alien);
    space_free(space);
}

/* The spec's fields: defaults, refusals naming the field. */
/* 4 x 5 = 20 configs, one best (b = 2, a = "c"). */
static const char *const SPACE_DISCRETE =
    "{\"a\": {\"type\": \"choice\", \"values\": [\"a\", \"b\", \"c\", \"d\"]},"
    " \"b\": {\"type\": \"randint\", \"low\": 0, \"high\": 5}}";

static double discrete_loss(const json_t *c)
{
    double b = (double)json_integer_value(json_object_get(c, "b"));
    const char *a = json_string_value(json_object_get(c, "a"));
    return (b - 2.0) * (b - 2.0) + (strcmp(a, "c") == 0 ? 0.0 : 1.0 + (double)(a[0] - 'a'));
}

/* Repeats among 18 sequential trials of s (of the 20 configs). */
static int repeats(const Space *space, const SearcherSpec *s)
{
    json_t *c[18];
    run(space, s, 18, discrete_loss, c);
    int n = 0;
    for (int i = 0; i < 18; i++) {
        for (int k = 0; k < i; k++)
            if (json_equal(c[i], c[k])) {
                n++;
                break;
            }
    }
    for (int i = 0; i < 18; i++)
        json_decref(c[i]);
    return n;
}

/* searcher.noisy false: once the model proposes, no config is tried
 * twice while one is left; declared noisy, TPE's draws from the good
 * configs repeat them. */
static void test_no_repeats_unless_noisy(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_DISCRETE);
    int quiet = 0, noisy = 0;
    for (uint64_t seed = 0; seed < 5; seed++) {
        SearcherSpec s = tpe_spec(seed);
        s.n_initial = 4;
        quiet += repeats(space, &s);
        s.noisy = true;
        noisy += repeats(space, &s);
    }
    assert_int_equal(quiet, 0);
    assert_true(noisy > 0);
    space_free(space);
}

static void test_parse(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE_2D);
    SearcherSpec s;
    RungError err;
    json_t *j = load("{\"type\": \"tpe\"}");
    assert_int_equal(searcher_parse(j, space, &s, &err), 0);
    assert_int_equal(s.type, SEARCHER_TPE);
    assert_int_equal(s.n_initial, 10);
    assert_true(s.multivariate && s.group && s.constant_liar);
    assert_true(searcher_uses_history(SEARCHER_TPE) && searcher_uses_history(SEARCHER_BAYES));
    assert_false(searcher_uses_history(SEARCHER_RANDOM));
    json_decref(j);
    j = load("{\"type\": \"tpe\", \"multivariate\": false, \"constant_liar\": false, "
             "\"n_initial\": 3, \"seed\": 5}");
    assert_int_equal(searcher_parse(j, space, &s, &err), 0);
    assert_true(!s.multivariate && !s.group && !s.constant_liar && s.n_initial == 3);
    assert_int_equal(s.multi_fidelity, -1); /* rungd decides with the scheduler */
    json_decref(j);
    j = load("{\"type\": \"tpe\", \"multi_fidelity\": false}");
    assert_int_equal(searcher_parse(j, space, &s, &err), 0);
    assert_int_equal(s.multi_fidelity, 0);
    json_decref(j);
    struct {
        const char *spec, *field;
    } bad[] = {
        {"{\"type\": \"tpe\", \"multivariate\": 1}", "searcher.multivariate"},
        {"{\"type\": \"tpe\", \"group\": \"yes\"}", "searcher.group"},
        {"{\"type\": \"tpe\", \"multivariate\": false, \"group\": true}", "searcher.group"},
        {"{\"type\": \"tpe\", \"n_initial\": 0}", "searcher.n_initial"},
        {"{\"type\": \"random\", \"constant_liar\": true}", "searcher.constant_liar"},
        {"{\"type\": \"bayes\", \"group\": false}", "searcher.group"},
        {"{\"type\": \"tpe\", \"quasi\": true}", "searcher.quasi"},
        {"{\"type\": \"tpee\"}", "searcher.type"},
        {"{\"type\": \"tpe\", \"multi_fidelity\": 1}", "searcher.multi_fidelity"},
        {"{\"type\": \"cmaes\", \"multi_fidelity\": true}", "searcher.multi_fidelity"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = load(bad[i].spec);
        rung_error_clear(&err);
        assert_int_not_equal(searcher_parse(j, space, &s, &err), 0);
        if (strcmp(err.field, bad[i].field) != 0)
            fail_msg("%s: field %s, want %s (%s)", bad[i].spec, err.field, bad[i].field,
                     err.message);
        json_decref(j);
    }
    /* Bad arguments fail cleanly. */
    json_t *out[1];
    SearcherSpec ts = tpe_spec(1);
    assert_int_not_equal(tpe_propose(space, &ts, -1, 1, NULL, out, &err), 0);
    assert_int_not_equal(tpe_propose(space, &ts, 0, TPE_MAX_BATCH + 1, NULL, out, &err), 0);
    space_free(space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parzen_univariate),
        cmocka_unit_test(test_parzen_multivariate),
        cmocka_unit_test(test_parzen_categorical),
        cmocka_unit_test(test_parzen_integer),
        cmocka_unit_test(test_weights_and_clip),
        cmocka_unit_test(test_gamma_split),
        cmocka_unit_test(test_beats_random),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_constant_liar),
        cmocka_unit_test(test_conditional),
        cmocka_unit_test(test_all_domains),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_no_repeats_unless_noisy),
        cmocka_unit_test(test_multi_fidelity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
