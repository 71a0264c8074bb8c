/* Unit tests of sampler/cmaes.c: one generation's update against values
 * computed by hand for a tiny case (checked against the cmaes package that
 * Optuna uses, docs/searchers.md "CMA-ES"), the replay's determinism, the
 * bounds of integer and quantized parameters, the IPOP restart rule, the
 * random fallback for choices and conditional spaces, the searcher's
 * fields, and search quality against random search on two 4-D functions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmaes.h"
#include "space_testing.h"

static void assert_near(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: got %.15g, want %.15g", what, got, want);
}

/* n = 2, lambda = 4, mean (0.5, 0.5), sigma 0.2, two generations. The
 * expected figures: the tutorial's formulas worked through by hand for this
 * case, and the same numbers from the cmaes package (0.9.1) that Optuna
 * 3.1 runs, told the same points. No step is longer than the injection
 * bound, so clipping plays no part. */
static void test_update_by_hand(void **state)
{
    (void)state;
    CmaesEs es;
    double m0[2] = {0.5, 0.5};
    assert_int_equal(cmaes__init(&es, 2, 4, m0, 0.2), 0);
    assert_int_equal(es.mu, 2);
    /* w'_i = ln(2.5) - ln(i + 1): 0.9163, 0.2231 (sum 1.1394) and -0.1823,
     * -0.4700 scaled to the negative total alpha = 1 + 2 mueff- / (mueff + 2). */
    const double w[4] = {0.80416286, 0.19583714, -0.55001629, -1.41787759};
    for (int i = 0; i < 4; i++)
        assert_near(es.w[i], w[i], 1e-8, "weight");
    assert_near(es.mueff, 1.459789888852586, 1e-12, "mueff");
    assert_near(es.c1, 0.16194607503446518, 1e-12, "c1");
    assert_near(es.cmu, 0.01658897163132102, 1e-12, "cmu");
    assert_near(es.cs, 0.4089687727837697, 1e-12, "c_sigma");
    assert_near(es.ds, 1.4089687727837696, 1e-12, "d_sigma");
    assert_near(es.cc, 0.6340520329526083, 1e-12, "cc");
    assert_near(es.chin, 1.254272742818995, 1e-12, "chi_n");

    /* Ranked (0.6, 0.4) f=1, (0.45, 0.7) f=2, (0.3, 0.55) f=3, (0.7, 0.62)
     * f=4: y_w = 0.80416 (0.5, -0.5) + 0.19584 (-0.25, 1) = (0.35312,
     * -0.20625), so the mean moves by sigma y_w to (0.57062, 0.45875). */
    const double x1[8] = {0.6, 0.4, 0.3, 0.55, 0.45, 0.7, 0.7, 0.62};
    const double f1[4] = {1.0, 3.0, 2.0, 4.0};
    assert_int_equal(cmaes__tell(&es, x1, f1), 0);
    assert_int_equal(es.g, 1);
    assert_near(es.mean[0], 0.57062443, 1e-8, "mean[0] after 1");
    assert_near(es.mean[1], 0.45875114, 1e-8, "mean[1] after 1");
    /* p_sigma = sqrt(cs (2 - cs) mueff) y_w (C = I): 0.97461 y_w. */
    assert_near(es.ps[0], 0.34415537, 1e-8, "p_sigma[0] after 1");
    assert_near(es.ps[1], -0.20100716, 1e-8, "p_sigma[1] after 1");
    /* sigma = 0.2 exp(cs / ds (|p_sigma| / chi_n - 1)) = 0.2 exp(0.29026
     * (0.39856 / 1.25427 - 1)) = 0.16407. */
    assert_near(es.sigma, 0.1640693558636759, 1e-12, "sigma after 1");
    assert_near(es.pc[0], 0.39705407, 1e-8, "p_c[0] after 1");
    assert_near(es.pc[1], -0.23190314, 1e-8, "p_c[1] after 1");
    assert_near(es.C[0], 0.83141463, 1e-8, "C00 after 1");
    assert_near(es.C[1], -0.03551912, 1e-8, "C01 after 1");
    assert_near(es.C[2], -0.03551912, 1e-8, "C10 after 1");
    assert_near(es.C[3], 0.85587759, 1e-8, "C11 after 1");

    /* The second generation goes through the eigendecomposition of C. */
    const double x2[8] = {0.62, 0.5, 0.5, 0.35, 0.75, 0.45, 0.55, 0.6};
    const double f2[4] = {0.5, 2.5, 0.25, 3.0};
    assert_int_equal(cmaes__tell(&es, x2, f2), 0);
    assert_near(es.mean[0], 0.72454117, 1e-8, "mean[0] after 2");
    assert_near(es.mean[1], 0.45979186, 1e-8, "mean[1] after 2");
    assert_near(es.sigma, 0.16241101321235998, 1e-12, "sigma after 2");
    assert_near(es.ps[0], 1.20693798, 1e-8, "p_sigma[0] after 2");
    assert_near(es.ps[1], -0.09113412, 1e-8, "p_sigma[1] after 2");
    assert_near(es.pc[0], 1.20013264, 1e-8, "p_c[0] after 2");
    assert_near(es.pc[1], -0.07773219, 1e-8, "p_c[1] after 2");
    assert_near(es.C[0], 0.95435051, 1e-8, "C00 after 2");
    assert_near(es.C[1], -0.04696057, 1e-8, "C01 after 2");
    assert_near(es.C[3], 0.68195562, 1e-8, "C11 after 2");
    cmaes__free(&es);
}

/* A far point is injected at the bound: its step is shortened to
 * Mahalanobis length sqrt(n) + 2n / (n + 2), so the mean moves by at most
 * that many sigmas whatever the point. */
static void test_injection_clipped(void **state)
{
    (void)state;
    CmaesEs es;
    double m0[2] = {0.5, 0.5};
    assert_int_equal(cmaes__init(&es, 2, 4, m0, 0.01), 0);
    const double x[8] = {1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    const double f[4] = {0, 1, 1, 1};
    assert_int_equal(cmaes__tell(&es, x, f), 0);
    double bound = sqrt(2.0) + 1.0;
    double moved = hypot(es.mean[0] - 0.5, es.mean[1] - 0.5);
    assert_near(moved, 0.01 * es.w[0] * bound, 1e-12, "clipped mean shift");
    cmaes__free(&es);
}

/* One objective history: obs[i] of configs[i] with loss[i]. */
typedef struct Hist {
    BayesObservation obs[4096];
    json_t *configs[4096];
    int n;
} Hist;

static void hist_add(Hist *h, json_t *config, double loss)
{
    assert_true(h->n < 4096);
    h->configs[h->n] = config;
    h->obs[h->n] = (BayesObservation){.config = config, .loss = loss};
    h->n++;
}

static void hist_free(Hist *h)
{
    for (int i = 0; i < h->n; i++)
        json_decref(h->configs[i]);
    h->n = 0;
}

static BayesHistory view(const Hist *h)
{
    return (BayesHistory){.obs = h->obs, .n_obs = h->n};
}

static json_t *propose_one(const Space *space, const SearcherSpec *s, int64_t number, const Hist *h)
{
    json_t *out = NULL;
    BayesHistory bh = view(h);
    RungError err;
    if (cmaes_propose(space, s, number, 1, &bh, &out, &err) != 0)
        fail_msg("cmaes_propose: %s", err.message);
    assert_non_null(out);
    return out;
}

static double num(const json_t *config, const char *key)
{
    const json_t *v = json_object_get(config, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static double sphere3(const json_t *c)
{
    double a = num(c, "a") - 0.3, b = log10(num(c, "b")) + 2, k = num(c, "k") - 7;
    return a * a + b * b + 0.01 * k * k;
}

/* Same seed and history, same configs; a batch equals its trials proposed
 * one at a time (a pending trial's config does not depend on which call
 * proposed it); trials proposed together differ; the search moves towards
 * the optimum. */
static void test_replay_deterministic(void **state)
{
    (void)state;
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"b\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1},"
                               " \"k\": {\"type\": \"randint\", \"low\": 0, \"high\": 20}}");
    SearcherSpec s = {.type = SEARCHER_CMAES, .seed = 11};
    static Hist h;
    for (int n = 0; n < 120; n++) {
        json_t *c = propose_one(space, &s, n, &h);
        hist_add(&h, c, sphere3(c));
    }
    CmaesSummary sum;
    RungError err;
    BayesHistory bh = view(&h);
    assert_int_equal(cmaes_replay(space, &s, &bh, &sum, &err), 0);
    assert_int_equal(sum.dims, 3);
    assert_int_equal(sum.popsize, 7); /* 4 + floor(3 ln 3) */
    assert_true(sum.generation >= 10);
    /* The mean found the optimum's region: a = 0.3, log10 b = -2 (cube
     * 0.5), k = 7 (cube 7.5 / 20). */
    assert_near(sum.mean[0], 0.3, 0.1, "mean of a");
    assert_near(sum.mean[1], 0.5, 0.1, "mean of b");

    json_t *batch[5];
    assert_int_equal(cmaes_propose(space, &s, 120, 5, &bh, batch, &err), 0);
    for (int k = 0; k < 5; k++) {
        json_t *again = propose_one(space, &s, 120 + k, &h);
        assert_true(json_equal(batch[k], again));
        json_decref(again);
        for (int j = 0; j < k; j++)
            assert_false(json_equal(batch[j], batch[k]));
    }
    for (int k = 0; k < 5; k++)
        json_decref(batch[k]);
    /* Another seed, other samples from the same history. */
    SearcherSpec s2 = s;
    s2.seed = 12;
    json_t *x = propose_one(space, &s, 120, &h), *y = propose_one(space, &s2, 120, &h);
    assert_false(json_equal(x, y));
    json_decref(x);
    json_decref(y);
    hist_free(&h);
    space_free(space);
}

/* Integers stay integers within their domain, quantized floats multiples
 * of q, everything inside its bounds, even with the widest step (most
 * samples leave the cube and are drawn again, or clipped). */
static void test_integers_and_bounds(void **state)
{
    (void)state;
    Space *space = parse_space(
        "{\"k\": {\"type\": \"randint\", \"low\": -3, \"high\": 4},"
        " \"q\": {\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": 0.25},"
        " \"l\": {\"type\": \"lograndint\", \"low\": 1, \"high\": 1000}}");
    SearcherSpec s = {.type = SEARCHER_CMAES, .seed = 3, .sigma0 = 1.0};
    static Hist h;
    for (int n = 0; n < 200; n++) {
        json_t *c = propose_one(space, &s, n, &h);
        const json_t *k = json_object_get(c, "k"), *l = json_object_get(c, "l");
        assert_true(json_is_integer(k) && json_is_integer(l));
        assert_in_range(json_integer_value(k) + 3, 0, 6);
        assert_in_range(json_integer_value(l), 1, 999);
        double q = num(c, "q");
        assert_true(q >= 0 && q <= 1 && fabs(q / 0.25 - round(q / 0.25)) < 1e-12);
        /* Push towards the edges: the best is k = 3, q = 1, l = 999. */
        hist_add(&h, c, -(double)json_integer_value(k) - q - log((double)json_integer_value(l)));
    }
    CmaesSummary sum;
    RungError err;
    BayesHistory bh = view(&h);
    assert_int_equal(cmaes_replay(space, &s, &bh, &sum, &err), 0);
    for (int j = 0; j < sum.dims; j++)
        assert_true(sum.mean[j] > 0.7); /* it went to the edge and stayed inside */
    hist_free(&h);
    space_free(space);
}

/* IPOP: on a flat function the losses' range is 0, so after 10 + ceil(30
 * n / lambda) generations the run stops and restarts with twice the
 * population; with restart "none" it never does. */
static void test_restart_doubles(void **state)
{
    (void)state;
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"b\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    SearcherSpec s = {.type = SEARCHER_CMAES, .seed = 5};
    static Hist h;
    /* lambda 4 + floor(3 ln 2) = 6, window 10 + 10 = 20: the test passes
     * at generation 21, so 21 x 6 results restart once. */
    for (int n = 0; n < 21 * 6; n++)
        hist_add(&h, propose_one(space, &s, n, &h), 1.0);
    CmaesSummary sum;
    RungError err;
    BayesHistory bh = view(&h);
    assert_int_equal(cmaes_replay(space, &s, &bh, &sum, &err), 0);
    assert_int_equal(sum.restarts, 1);
    assert_int_equal(sum.popsize, 12);
    assert_int_equal(sum.generation, 0);
    assert_int_equal(sum.used, 126);
    assert_near(sum.sigma, 1.0 / 6.0, 1e-15, "sigma0 after the restart");
    /* One generation fewer: no restart yet. */
    bh.n_obs = 20 * 6;
    assert_int_equal(cmaes_replay(space, &s, &bh, &sum, &err), 0);
    assert_int_equal(sum.restarts, 0);
    assert_int_equal(sum.popsize, 6);
    /* The second run needs 10 + ceil(60 / 12) = 15 generations of 12. */
    for (int n = 21 * 6; n < 21 * 6 + 16 * 12; n++)
        hist_add(&h, propose_one(space, &s, n, &h), 1.0);
    bh = view(&h);
    assert_int_equal(cmaes_replay(space, &s, &bh, &sum, &err), 0);
    assert_int_equal(sum.restarts, 2);
    assert_int_equal(sum.popsize, 24);
    SearcherSpec none = s;
    none.no_restart = true;
    assert_int_equal(cmaes_replay(space, &none, &bh, &sum, &err), 0);
    assert_int_equal(sum.restarts, 0);
    assert_int_equal(sum.popsize, 6);
    hist_free(&h);
    space_free(space);
}

/* A choice is drawn as the random searcher draws it; a conditional space
 * is the random searcher's altogether. */
static void test_categorical_fallback(void **state)
{
    (void)state;
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"c\": {\"type\": \"choice\", \"values\": [\"x\", \"y\", \"z\"]},"
                               " \"b\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    SearcherSpec s = {.type = SEARCHER_CMAES, .seed = 8};
    SearcherSpec r = {.type = SEARCHER_RANDOM, .seed = 8};
    static Hist h;
    for (int n = 0; n < 40; n++) {
        json_t *c = propose_one(space, &s, n, &h);
        json_t *rc = sampler_config(space, &r, n);
        assert_true(json_equal(json_object_get(c, "c"), json_object_get(rc, "c")));
        json_decref(rc);
        double a = num(c, "a") - 0.2, b = num(c, "b") - 0.8;
        hist_add(&h, c, a * a + b * b);
    }
    CmaesSummary sum;
    RungError err;
    BayesHistory bh = view(&h);
    assert_int_equal(cmaes_replay(space, &s, &bh, &sum, &err), 0);
    assert_int_equal(sum.dims, 2);
    assert_true(sum.generation >= 6);
    hist_free(&h);
    space_free(space);

    Space *cond = parse_space(
        "{\"opt\": {\"type\": \"choice\", \"values\": [{\"name\": \"sgd\", \"lr\": {\"type\": "
        "\"loguniform\", \"low\": 1e-4, \"high\": 1}}, {\"name\": \"adam\", \"beta\": {\"type\": "
        "\"uniform\", \"low\": 0.8, \"high\": 1}}]}, \"x\": {\"type\": \"uniform\", \"low\": 0, "
        "\"high\": 1}}");
    for (int n = 0; n < 20; n++) {
        json_t *c = propose_one(cond, &s, n, &h);
        json_t *rc = sampler_config(cond, &r, n);
        assert_true(json_equal(c, rc));
        json_decref(rc);
        hist_add(&h, c, num(c, "x"));
    }
    bh = view(&h);
    assert_int_equal(cmaes_replay(cond, &s, &bh, &sum, &err), 0);
    assert_int_equal(sum.dims, 0);
    hist_free(&h);
    space_free(cond);
}

/* The memo gives what the full replay gives: as results come one by one,
 * when an earlier trial's result arrives late (an entry in the middle),
 * when an early loss differs, and for another seed. */
static void expect_same(CmaesCache *cache, const Space *space, const SearcherSpec *s,
                        int64_t number, const BayesObservation *obs, int64_t nobs)
{
    BayesHistory bh = {.obs = obs, .n_obs = nobs};
    json_t *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
    RungError err;
    assert_int_equal(cmaes_propose(space, s, number, 2, &bh, a, &err), 0);
    assert_int_equal(cmaes_propose_cached(cache, space, s, number, 2, &bh, b, &err), 0);
    for (int k = 0; k < 2; k++) {
        if (!json_equal(a[k], b[k]))
            fail_msg("trial %lld after %lld results: the memo differs from the replay",
                     (long long)number + k, (long long)nobs);
        json_decref(a[k]);
        json_decref(b[k]);
    }
}

static void test_cache_same_as_replay(void **state)
{
    (void)state;
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"k\": {\"type\": \"randint\", \"low\": 0, \"high\": 9},"
                               " \"c\": {\"type\": \"choice\", \"values\": [1, 2]},"
                               " \"b\": {\"type\": \"loguniform\", \"low\": 0.01, \"high\": 1}}");
    SearcherSpec s = {.type = SEARCHER_CMAES, .seed = 21, .popsize = 4};
    static Hist h;
    CmaesCache *cache = cmaes_cache_new();
    assert_non_null(cache);
    for (int n = 0; n < 150; n++) {
        expect_same(cache, space, &s, n, h.obs, h.n);
        json_t *c = propose_one(space, &s, n, &h);
        hist_add(&h, c, fabs(num(c, "a") - 0.7) + fabs(log10(num(c, "b")) + 1));
    }
    expect_same(cache, space, &s, 150, h.obs, h.n);
    /* Trial 140's result arrives after 141 .. 149's. */
    static BayesObservation late[150];
    memcpy(late, h.obs, sizeof late);
    BayesObservation t140 = late[140];
    memmove(late + 140, late + 141, 9 * sizeof *late);
    expect_same(cache, space, &s, 150, late, 149);
    late[149] = t140;
    expect_same(cache, space, &s, 150, h.obs, 150);
    expect_same(cache, space, &s, 151, late, 150);
    /* Early losses changed (the first generation's ranking reversed):
     * another state, replayed from the start. */
    memcpy(late, h.obs, sizeof late);
    for (int i = 0; i < 4; i++)
        late[i].loss = h.obs[3 - i].loss;
    json_t *before[2], *after[2];
    BayesHistory hb = {.obs = h.obs, .n_obs = 150}, ha = {.obs = late, .n_obs = 150};
    RungError err;
    assert_int_equal(cmaes_propose(space, &s, 150, 1, &hb, before, &err), 0);
    assert_int_equal(cmaes_propose(space, &s, 150, 1, &ha, after, &err), 0);
    assert_false(json_equal(before[0], after[0]));
    json_decref(before[0]);
    json_decref(after[0]);
    expect_same(cache, space, &s, 150, late, 150);
    /* Fewer results than the cache saw, another seed, no history. */
    expect_same(cache, space, &s, 150, h.obs, 37);
    SearcherSpec s2 = s;
    s2.seed = 22;
    expect_same(cache, space, &s2, 150, h.obs, 150);
    expect_same(cache, space, &s2, 0, NULL, 0);
    cmaes_cache_free(cache);
    hist_free(&h);
    space_free(space);
}

/* One modeled coordinate (Optuna hands a 1-D space to its independent
 * sampler; the strategy works there too): it finds the minimum. */
static void test_one_dimension(void **state)
{
    (void)state;
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"c\": {\"type\": \"choice\", \"values\": [1, 2]}}");
    SearcherSpec s = {.type = SEARCHER_CMAES, .seed = 2};
    static Hist h;
    for (int n = 0; n < 60; n++) {
        json_t *c = propose_one(space, &s, n, &h);
        double a = num(c, "a");
        assert_true(a >= 0 && a <= 1);
        hist_add(&h, c, (a - 0.3) * (a - 0.3));
    }
    CmaesSummary sum;
    RungError err;
    BayesHistory bh = view(&h);
    assert_int_equal(cmaes_replay(space, &s, &bh, &sum, &err), 0);
    assert_int_equal(sum.dims, 1);
    assert_int_equal(sum.popsize, 4);
    assert_near(sum.mean[0], 0.3, 0.02, "1-D mean");
    hist_free(&h);
    space_free(space);
}

static int parse_searcher(const char *text, SearcherSpec *out, RungError *err)
{
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    json_t *j = load(text);
    int rc = searcher_parse(j, space, out, err);
    json_decref(j);
    space_free(space);
    return rc;
}

static void expect_field(const char *text, const char *field)
{
    SearcherSpec s;
    RungError err;
    rung_error_clear(&err);
    if (parse_searcher(text, &s, &err) == 0)
        fail_msg("accepted %s", text);
    assert_int_equal(err.code, RUNG_E_INVALID_SPEC);
    if (strcmp(err.field, field) != 0 || strncmp(err.message, field, strlen(field)) != 0)
        fail_msg("%s: field %s, message %s; want %s", text, err.field, err.message, field);
}

static void test_fields(void **state)
{
    (void)state;
    SearcherSpec s;
    RungError err;
    assert_int_equal(parse_searcher("{\"type\": \"cmaes\"}", &s, &err), 0);
    assert_int_equal(s.type, SEARCHER_CMAES);
    assert_true(s.sigma0 == 0 && s.popsize == 0 && !s.no_restart);
    assert_int_equal(parse_searcher("{\"type\": \"cmaes\", \"sigma0\": 0.3, \"popsize\": 16, "
                                    "\"restart\": \"none\", \"seed\": 4}",
                                    &s, &err),
                     0);
    assert_true(s.sigma0 == 0.3 && s.popsize == 16 && s.no_restart && s.seed == 4);
    expect_field("{\"type\": \"cmaes\", \"sigma0\": 0}", "searcher.sigma0");
    expect_field("{\"type\": \"cmaes\", \"sigma0\": 1.5}", "searcher.sigma0");
    expect_field("{\"type\": \"cmaes\", \"sigma0\": \"big\"}", "searcher.sigma0");
    expect_field("{\"type\": \"cmaes\", \"popsize\": 1}", "searcher.popsize");
    expect_field("{\"type\": \"cmaes\", \"popsize\": 2.5}", "searcher.popsize");
    expect_field("{\"type\": \"cmaes\", \"restart\": \"bipop\"}", "searcher.restart");
    expect_field("{\"type\": \"cmaes\", \"n_initial\": 5}", "searcher.n_initial");
    expect_field("{\"type\": \"bayes\", \"sigma0\": 0.2}", "searcher.sigma0");
    expect_field("{\"type\": \"random\", \"popsize\": 8}", "searcher.popsize");
    expect_field("{\"restart\": \"ipop\"}", "searcher.restart");

    /* Several objectives reach cmaes_propose only by mistake: refused. */
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    SearcherSpec c = {.type = SEARCHER_CMAES, .seed = 1};
    BayesHistory h = {.n_objectives = 2};
    json_t *out = NULL;
    assert_int_equal(cmaes_propose(space, &c, 0, 1, &h, &out, &err), RUNG_E_INVALID_ARGUMENT);
    assert_string_equal(err.field, "searcher.type");
    assert_null(out);
    space_free(space);
}

/* Search quality: 4-D sphere and Rosenbrock on [-5, 5]^4 (sphere shifted
 * to (1.5, -2, 0.5, 3)), 100 trials one at a time; over 20 seeds the
 * median best loss of CMA-ES is below random search's. */
static double sphere4(const double *x)
{
    static const double c[4] = {1.5, -2, 0.5, 3};
    double s = 0;
    for (int j = 0; j < 4; j++)
        s += (x[j] - c[j]) * (x[j] - c[j]);
    return s;
}

static double rosenbrock4(const double *x)
{
    double s = 0;
    for (int j = 0; j < 3; j++)
        s += 100 * (x[j + 1] - x[j] * x[j]) * (x[j + 1] - x[j] * x[j]) + (1 - x[j]) * (1 - x[j]);
    return s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double best_of(const Space *space, const SearcherSpec *s, double (*f)(const double *))
{
    static Hist h;
    static const char *const keys[4] = {"x0", "x1", "x2", "x3"};
    double best = INFINITY;
    for (int n = 0; n < 100; n++) {
        json_t *c = s->type == SEARCHER_CMAES ? propose_one(space, s, n, &h)
                                              : sampler_config(space, s, n);
        double x[4];
        for (int j = 0; j < 4; j++)
            x[j] = num(c, keys[j]);
        double v = f(x);
        best = fmin(best, v);
        hist_add(&h, c, v);
    }
    hist_free(&h);
    return best;
}

static void test_beats_random(void **state)
{
    (void)state;
    Space *space = parse_space("{\"x0\": {\"type\": \"uniform\", \"low\": -5, \"high\": 5},"
                               " \"x1\": {\"type\": \"uniform\", \"low\": -5, \"high\": 5},"
                               " \"x2\": {\"type\": \"uniform\", \"low\": -5, \"high\": 5},"
                               " \"x3\": {\"type\": \"uniform\", \"low\": -5, \"high\": 5}}");
    double (*fs[2])(const double *) = {sphere4, rosenbrock4};
    for (int k = 0; k < 2; k++) {
        double cm[20], rnd[20];
        for (int seed = 0; seed < 20; seed++) {
            SearcherSpec c = {.type = SEARCHER_CMAES, .seed = (uint64_t)seed + 100};
            SearcherSpec r = {.type = SEARCHER_RANDOM, .seed = (uint64_t)seed + 100};
            cm[seed] = best_of(space, &c, fs[k]);
            rnd[seed] = best_of(space, &r, fs[k]);
        }
        qsort(cm, 20, sizeof *cm, cmp_double);
        qsort(rnd, 20, sizeof *rnd, cmp_double);
        double mc = (cm[9] + cm[10]) / 2, mr = (rnd[9] + rnd[10]) / 2;
        print_message("%s: median regret cmaes %.4g, random %.4g\n", k ? "rosenbrock" : "sphere",
                      mc, mr);
        if (!(mc < mr))
            fail_msg("function %d: cmaes median %g not below random %g", k, mc, mr);
    }
    space_free(space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_update_by_hand),
        cmocka_unit_test(test_injection_clipped),
        cmocka_unit_test(test_replay_deterministic),
        cmocka_unit_test(test_integers_and_bounds),
        cmocka_unit_test(test_restart_doubles),
        cmocka_unit_test(test_categorical_fallback),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_beats_random),
        cmocka_unit_test(test_cache_same_as_replay),
        cmocka_unit_test(test_one_dimension),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
