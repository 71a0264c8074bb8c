/* Unit tests of sampler/: every domain's bounds and unit-cube round trip,
 * the log-uniform distribution, Ray Tune's grid expansion, the validation
 * errors with their exact field paths, seeded reproducibility, and the Sobol
 * points (against GSL's own generator, and against pseudo-random spread). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_qrng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto.h"
#include "sampler.h"
#include "sampler_internal.h"
#include "space_testing.h"

/* ---- helpers ---------------------------------------------------------- */

static SearcherSpec searcher_ok(const char *text, const Space *space)
{
    json_t *json = text ? load(text) : NULL;
    SearcherSpec s;
    RungError err;
    rung_error_clear(&err);
    int rc = searcher_parse(json, space, &s, &err);
    json_decref(json);
    if (rc != 0)
        fail_msg("searcher_parse(%s): %s", text ? text : "NULL", err.message);
    return s;
}

static int64_t total_ok(const Space *space, const SearcherSpec *s, int64_t num_samples)
{
    int64_t total = -1;
    RungError err;
    rung_error_clear(&err);
    if (sampler_total_trials(space, s, num_samples, &total, &err) != 0)
        fail_msg("sampler_total_trials: %s", err.message);
    return total;
}

/* Compact JSON with sorted keys: a canonical key for counting. */
static char *dump(const json_t *json)
{
    char *text = json_dumps(json, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    assert_non_null(text);
    return text;
}

/* A small multiset of strings, enough to count distinct values. */
typedef struct {
    char *keys[4096];
    int counts[4096];
    int n;
} Tally;

static void tally_add(Tally *t, char *key) /* steals key */
{
    for (int i = 0; i < t->n; i++) {
        if (strcmp(t->keys[i], key) == 0) {
            t->counts[i]++;
            free(key);
            return;
        }
    }
    assert_true(t->n < 4096);
    t->keys[t->n] = key;
    t->counts[t->n++] = 1;
}

static void tally_free(Tally *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->keys[i]);
    t->n = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov statistic of xs (sorted in place) against the uniform
 * distribution on [a, b]. */
static double ks_uniform(double *xs, int n, double a, double b)
{
    qsort(xs, (size_t)n, sizeof *xs, cmp_double);
    double d = 0.0;
    for (int i = 0; i < n; i++) {
        double f = (xs[i] - a) / (b - a);
        double above = (double)(i + 1) / n - f;
        double below = f - (double)i / n;
        d = fmax(d, fmax(above, below));
    }
    return d;
}

/* ---- every domain: bounds, integrality, quantization, round trip ------ */

typedef struct {
    const char *domain; /* the domain object of parameter "x" */
    double low, high;   /* every value in [low, high] */
    bool high_open;     /* ... and below high */
    bool integer;       /* values are JSON integers (else reals, or choices) */
    double q;           /* values are multiples of q (0: no constraint) */
    bool log;           /* continuous values compare relative to themselves */
    int distinct;       /* exact number of distinct values seen (0: skip) */
} DomainCase;

static const DomainCase DOMAIN_CASES[] = {
    {"{\"type\": \"uniform\", \"low\": -2, \"high\": 3}", -2, 3, true, false, 0, false, 0},
    {"{\"type\": \"uniform\", \"low\": 0, \"high\": 1, \"grid_points\": 3}", 0, 1, true, false, 0,
     false, 0},
    {"{\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": 0.1}", 0, 1, false, false, 0.1,
     false, 11},
    {"{\"type\": \"quniform\", \"low\": 0.05, \"high\": 0.95, \"q\": 0.1}", 0.05, 0.95, false,
     false, 0.1, false, 9},
    {"{\"type\": \"quniform\", \"low\": -1, \"high\": 1, \"q\": 0.5}", -1, 1, false, false, 0.5,
     false, 5},
    {"{\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1}", 1e-4, 1, true, false, 0, true, 0},
    {"{\"type\": \"loguniform\", \"low\": 1e-300, \"high\": 1e300}", 1e-300, 1e300, true, false, 0,
     true, 0},
    {"{\"type\": \"qloguniform\", \"low\": 1, \"high\": 1000, \"q\": 5}", 1, 1000, false, false, 5,
     false, 0},
    {"{\"type\": \"qloguniform\", \"low\": 0.001, \"high\": 0.1, \"q\": 0.001}", 0.001, 0.1, false,
     false, 0.001, false, 0},
    {"{\"type\": \"randint\", \"low\": -3, \"high\": 4}", -3, 4, true, true, 1, false, 7},
    {"{\"type\": \"randint\", \"low\": 0, \"high\": 1099511627776}", 0, 1099511627776.0, true, true,
     1, false, 0},
    {"{\"type\": \"qrandint\", \"low\": 0, \"high\": 10, \"q\": 5}", 0, 10, false, true, 5, false,
     3},
    {"{\"type\": \"qrandint\", \"low\": -7, \"high\": 7, \"q\": 3}", -7, 7, false, true, 3, false,
     5},
    {"{\"type\": \"lograndint\", \"low\": 1, \"high\": 100}", 1, 100, true, true, 1, false, 99},
    {"{\"type\": \"lograndint\", \"low\": 1, \"high\": 1099511627776}", 1, 1099511627776.0, true,
     true, 1, false, 0},
    /* Both ends of qlograndint and qloguniform are reached (exp(log(256)) is
     * 255.99999999999994: rounded, not floored). */
    {"{\"type\": \"qlograndint\", \"low\": 1, \"high\": 64, \"q\": 8}", 1, 64, false, true, 8,
     false, 8},
    {"{\"type\": \"qlograndint\", \"low\": 32, \"high\": 256, \"q\": 1}", 32, 256, false, true, 1,
     false, 225},
    {"{\"type\": \"qloguniform\", \"low\": 32, \"high\": 256, \"q\": 1}", 32, 256, false, false, 1,
     false, 225},
    {"{\"type\": \"choice\", \"values\": [\"a\", 2, true, 1.5]}", 0, 0, false, false, 0, false, 4},
};

/* Checks one value of a case; returns whether the value is an integer. */
static void check_value(const DomainCase *c, const json_t *v)
{
    if (c->low == c->high) { /* choice */
        assert_true(json_is_string(v) || json_is_number(v) || json_is_boolean(v));
        return;
    }
    if (c->integer)
        assert_true(json_is_integer(v));
    else
        assert_true(json_is_real(v));
    double x = json_number_value(v);
    if (x < c->low || x > c->high || (c->high_open && x >= c->high))
        fail_msg("%s: %.17g outside the domain", c->domain, x);
    if (c->q > 0.0) {
        double k = x / c->q;
        /* a bound may stand for its multiple (0.05 for 0.1 * 0 would not) */
        if (fabs(k - round(k)) > 1e-9 && x != c->low && x != c->high)
            fail_msg("%s: %.17g is not a multiple of %g", c->domain, x, c->q);
    }
}

static void check_round_trip(const DomainCase *c, const Space *space, const json_t *config)
{
    double u[1];
    RungError err;
    rung_error_clear(&err);
    assert_int_equal(space_encode(space, config, u, &err), 0);
    assert_true(u[0] >= 0.0 && u[0] <= 1.0);
    json_t *again = space_decode(space, u, 0, GRID_ORDER_RAY);
    assert_non_null(again);
    const json_t *a = json_object_get(config, "x");
    const json_t *b = json_object_get(again, "x");
    bool continuous = c->low != c->high && !c->integer && c->q == 0.0;
    if (!continuous) {
        if (!json_equal(a, b))
            fail_msg("%s: decode(encode(%.17g)) = %.17g", c->domain, json_number_value(a),
                     json_number_value(b));
    } else {
        double x = json_number_value(a), y = json_number_value(b);
        double scale = c->log ? fabs(x) : fmax(fabs(c->low), fabs(c->high));
        if (fabs(x - y) > 1e-12 * scale)
            fail_msg("%s: decode(encode(%.17g)) = %.17g", c->domain, x, y);
    }
    json_decref(again);
}

static void test_domains_bounds_and_round_trip(void **state)
{
    (void)state;
    const int n = 10000;
    for (size_t ci = 0; ci < sizeof DOMAIN_CASES / sizeof DOMAIN_CASES[0]; ci++) {
        const DomainCase *c = &DOMAIN_CASES[ci];
        char text[512];
        snprintf(text, sizeof text, "{\"x\": %s}", c->domain);
        Space *space = parse_space(text);
        assert_int_equal(space_cube_dims(space), 1);
        assert_int_equal(space_grid_size(space), 1);
        /* Pseudo-random and Sobol draws both stay inside the domain. */
        const char *searchers[] = {"{\"seed\": 11}", "{\"seed\": 12, \"quasi\": true}"};
        for (int si = 0; si < 2; si++) {
            SearcherSpec s = searcher_ok(searchers[si], space);
            Tally seen = {.n = 0};
            for (int i = 0; i < n; i++) {
                json_t *config = sampler_config(space, &s, i);
                assert_non_null(config);
                assert_int_equal(json_object_size(config), 1);
                const json_t *v = json_object_get(config, "x");
                assert_non_null(v);
                check_value(c, v);
                check_round_trip(c, space, config);
                if (c->distinct > 0)
                    tally_add(&seen, dump(v));
                json_decref(config);
            }
            if (c->distinct > 0 && seen.n != c->distinct)
                fail_msg("%s: %d distinct values, expected %d", c->domain, seen.n, c->distinct);
            tally_free(&seen);
        }
        space_free(space);
    }
}

/* The ends of the cube map to the ends of each domain. */
static void test_decode_edges(void **state)
{
    (void)state;
    Space *space = parse_space(
        "{\"u\": {\"type\": \"uniform\", \"low\": 1, \"high\": 2},"
        " \"r\": {\"type\": \"randint\", \"low\": 0, \"high\": 4},"
        " \"l\": {\"type\": \"lograndint\", \"low\": 2, \"high\": 9},"
        " \"q\": {\"type\": \"qrandint\", \"low\": 1, \"high\": 9, \"q\": 4},"
        " \"c\": {\"type\": \"choice\", \"values\": [\"a\", \"b\"]}}");
    double lo[5] = {0, 0, 0, 0, 0}, hi[5] = {1, 1, 1, 1, 1};
    json_t *a = space_decode(space, lo, 0, GRID_ORDER_RAY);
    json_t *b = space_decode(space, hi, 0, GRID_ORDER_RAY);
    json_t *want_a = load("{\"u\": 1.0, \"r\": 0, \"l\": 2, \"q\": 4, \"c\": \"a\"}");
    assert_true(json_equal(a, want_a));
    assert_true(json_real_value(json_object_get(b, "u")) < 2.0);
    assert_true(json_real_value(json_object_get(b, "u")) > 1.999999);
    assert_int_equal(json_integer_value(json_object_get(b, "r")), 3);
    assert_int_equal(json_integer_value(json_object_get(b, "l")), 8);
    assert_int_equal(json_integer_value(json_object_get(b, "q")), 8);
    assert_string_equal(json_string_value(json_object_get(b, "c")), "b");
    /* Out-of-range coordinates are clamped, a bad grid index refused. */
    double wild[5] = {-3, NAN, 7, 0.5, 2};
    json_t *w = space_decode(space, wild, 0, GRID_ORDER_RAY);
    assert_non_null(w);
    assert_int_equal(json_integer_value(json_object_get(w, "r")), 0);
    assert_null(space_decode(space, lo, 1, GRID_ORDER_RAY));
    assert_null(space_decode(space, lo, -1, GRID_ORDER_RAY));
    json_decref(a);
    json_decref(b);
    json_decref(w);
    json_decref(want_a);
    space_free(space);
}

/* ---- distributions --------------------------------------------------- */

static void test_loguniform_is_uniform_in_log_space(void **state)
{
    (void)state;
    const int n = 10000;
    const double a = 1e-4, b = 1.0;
    /* Critical value of the KS statistic at alpha = 0.01 for large n. */
    const double crit = 1.63 / sqrt((double)n);
    Space *space = parse_space("{\"lr\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1}}");
    const char *searchers[] = {"{\"seed\": 3}", "{\"seed\": 3, \"quasi\": true}"};
    double *logs = malloc(n * sizeof *logs);
    double *raw = malloc(n * sizeof *raw);
    assert_non_null(logs);
    assert_non_null(raw);
    for (int si = 0; si < 2; si++) {
        SearcherSpec s = searcher_ok(searchers[si], space);
        for (int i = 0; i < n; i++) {
            json_t *config = sampler_config(space, &s, i);
            raw[i] = json_real_value(json_object_get(config, "lr"));
            logs[i] = log(raw[i]);
            json_decref(config);
        }
        double d_log = ks_uniform(logs, n, log(a), log(b));
        double d_raw = ks_uniform(raw, n, a, b);
        print_message("%s: KS log %.4f, raw %.4f, critical %.4f\n", searchers[si], d_log, d_raw,
                      crit);
        assert_true(d_log < crit);
        /* The same test on raw values must reject: it is able to fail. */
        assert_true(d_raw > crit);
    }
    free(logs);
    free(raw);
    space_free(space);
}

/* Chi-square over randint's 10 values and a lograndint's decades. */
static void test_integer_distributions(void **state)
{
    (void)state;
    const int n = 10000;
    Space *space = parse_space("{\"r\": {\"type\": \"randint\", \"low\": 0, \"high\": 10},"
                               " \"l\": {\"type\": \"lograndint\", \"low\": 1, \"high\": 10000}}");
    SearcherSpec s = searcher_ok("{\"seed\": 5}", space);
    int r_counts[10] = {0}, l_counts[4] = {0};
    for (int i = 0; i < n; i++) {
        json_t *config = sampler_config(space, &s, i);
        r_counts[json_integer_value(json_object_get(config, "r"))]++;
        json_int_t l = json_integer_value(json_object_get(config, "l"));
        l_counts[l < 10 ? 0 : l < 100 ? 1 : l < 1000 ? 2 : 3]++;
        json_decref(config);
    }
    double chi_r = 0.0, chi_l = 0.0;
    for (int k = 0; k < 10; k++)
        chi_r += pow(r_counts[k] - n / 10.0, 2) / (n / 10.0);
    /* Log-uniform on [1, 10^4): a quarter of the mass per decade. */
    for (int k = 0; k < 4; k++)
        chi_l += pow(l_counts[k] - n / 4.0, 2) / (n / 4.0);
    /* Critical values at alpha = 0.001: 27.88 (9 dof), 16.27 (3 dof). */
    assert_true(chi_r < 27.88);
    assert_true(chi_l < 16.27);
    space_free(space);
}

/* normal and qnormal over several seeds and Sobol points: the mean and sd
 * of the draws, their normal CDF uniform (KS), qnormal's on multiples of q,
 * and the round trip through the cube. */
static void test_normal_distributions(void **state)
{
    (void)state;
    const int n = 5000;
    const double crit = 1.63 / sqrt((double)n); /* KS at alpha = 0.01 */
    Space *space = parse_space("{\"w\": {\"type\": \"normal\", \"mean\": 3, \"sd\": 2},"
                               " \"k\": {\"type\": \"qnormal\", \"mean\": -1, \"sd\": 0.5,"
                               " \"q\": 0.25}}");
    assert_int_equal(space_cube_dims(space), 2);
    const char *searchers[] = {"{\"seed\": 1}", "{\"seed\": 2}", "{\"seed\": 3}",
                               "{\"seed\": 4, \"quasi\": true}"};
    double *cdf = malloc(n * sizeof *cdf);
    assert_non_null(cdf);
    for (int si = 0; si < 4; si++) {
        SearcherSpec s = searcher_ok(searchers[si], space);
        double sw = 0, sww = 0, sk = 0;
        for (int i = 0; i < n; i++) {
            json_t *config = sampler_config(space, &s, i);
            const json_t *w = json_object_get(config, "w"), *k = json_object_get(config, "k");
            assert_true(json_is_real(w) && json_is_real(k));
            double x = json_real_value(w), y = json_real_value(k);
            sw += x;
            sww += x * x;
            sk += y;
            cdf[i] = 0.5 * erfc(-(x - 3.0) / (2.0 * sqrt(2.0)));
            assert_true(fabs(y / 0.25 - round(y / 0.25)) < 1e-9);
            double u[2];
            assert_int_equal(space_encode(space, config, u, NULL), 0);
            json_t *back = space_decode(space, u, 0, GRID_ORDER_RAY);
            assert_true(fabs(json_real_value(json_object_get(back, "w")) - x) < 1e-9);
            assert_true(json_equal(json_object_get(back, "k"), k));
            json_decref(back);
            json_decref(config);
        }
        double mean = sw / n, sd = sqrt(sww / n - mean * mean);
        double d = ks_uniform(cdf, n, 0.0, 1.0);
        print_message("%s: mean %.4f sd %.4f (3, 2), qnormal mean %.4f, KS %.4f\n", searchers[si],
                      mean, sd, sk / n, d);
        assert_true(fabs(mean - 3.0) < 5 * 2.0 / sqrt((double)n));
        assert_true(fabs(sd - 2.0) < 0.1);
        assert_true(fabs(sk / n + 1.0) < 5 * 0.5 / sqrt((double)n));
        assert_true(d < crit);
    }
    free(cdf);
    /* The ends of the cube stay finite, about 7 sd out. */
    double lo[2] = {0, 0}, hi[2] = {1, 1};
    json_t *a = space_decode(space, lo, 0, GRID_ORDER_RAY),
           *b = space_decode(space, hi, 0, GRID_ORDER_RAY);
    double wa = json_real_value(json_object_get(a, "w")),
           wb = json_real_value(json_object_get(b, "w"));
    assert_true(wa > 3.0 - 2.0 * 7.1 && wa < 3.0 - 2.0 * 7.0);
    assert_true(wb < 3.0 + 2.0 * 7.1 && wb > 3.0 + 2.0 * 7.0);
    json_decref(a);
    json_decref(b);
    space_free(space);
}

/* qlograndint: only multiples of q within [low, high] (low itself is
 * none here), both end multiples reached, log-uniformly spread. */
static void test_qlograndint(void **state)
{
    (void)state;
    Space *space =
        parse_space("{\"x\": {\"type\": \"qlograndint\", \"low\": 3, \"high\": 100, \"q\": 10}}");
    int counts[11] = {0};
    for (uint64_t seed = 1; seed <= 5; seed++) {
        char text[64];
        snprintf(text, sizeof text, "{\"seed\": %llu}", (unsigned long long)seed);
        SearcherSpec s = searcher_ok(text, space);
        for (int i = 0; i < 2000; i++) {
            json_t *config = sampler_config(space, &s, i);
            const json_t *v = json_object_get(config, "x");
            assert_true(json_is_integer(v));
            json_int_t x = json_integer_value(v);
            if (x < 10 || x > 100 || x % 10 != 0)
                fail_msg("qlograndint gave %lld", (long long)x);
            counts[x / 10]++;
            json_decref(config);
        }
    }
    for (int k = 1; k <= 10; k++)
        assert_true(counts[k] > 0);
    /* Log-uniform: 10 (x in [3, 15)) far more often than 100 ([95, 100]). */
    assert_true(counts[1] > 10 * counts[10]);
    space_free(space);

    /* The top of the cube is high itself, for qloguniform too. */
    space = parse_space(
        "{\"a\": {\"type\": \"qlograndint\", \"low\": 32, \"high\": 256, \"q\": 1},"
        " \"b\": {\"type\": \"qloguniform\", \"low\": 32, \"high\": 256, \"q\": 1},"
        " \"c\": {\"type\": \"qlograndint\", \"low\": 1, \"high\": 1099511627776,"
        " \"q\": 1},"
        " \"d\": {\"type\": \"qlograndint\", \"low\": 256, \"high\": 256, \"q\": 256}}");
    double hi[4] = {1, 1, 1, 1}, lo[4] = {0, 0, 0, 0};
    json_t *top = space_decode(space, hi, 0, GRID_ORDER_RAY),
           *bottom = space_decode(space, lo, 0, GRID_ORDER_RAY);
    json_t *want_top = load("{\"a\": 256, \"b\": 256.0, \"c\": 1099511627776, \"d\": 256}");
    json_t *want_bottom = load("{\"a\": 32, \"b\": 32.0, \"c\": 1, \"d\": 256}");
    assert_true(json_equal(top, want_top));
    assert_true(json_equal(bottom, want_bottom));
    /* Round trips, the single value included. */
    double u[4];
    assert_int_equal(space_encode(space, top, u, NULL), 0);
    assert_true(u[3] == 0.5);
    json_t *again = space_decode(space, u, 0, GRID_ORDER_RAY);
    assert_true(json_equal(again, top));
    json_decref(again);
    json_decref(top);
    json_decref(bottom);
    json_decref(want_top);
    json_decref(want_bottom);
    space_free(space);
}

/* points_to_evaluate's check (space_check_value) for the new domains. */
static void test_check_value_new_domains(void **state)
{
    (void)state;
    Space *space = parse_space(
        "{\"w\": {\"type\": \"normal\", \"mean\": 0, \"sd\": 1},"
        " \"k\": {\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1, \"q\": 0.5},"
        " \"x\": {\"type\": \"qlograndint\", \"low\": 3, \"high\": 100,"
        " \"q\": 10}}");
    static const struct {
        const char *name, *value;
        bool ok;
    } CASES[] = {
        {"w", "1e6", true}, {"w", "-3", true},    {"w", "\"a\"", false}, {"k", "0.3", true},
        {"k", "2", true},   {"k", "null", false}, {"x", "10", true},     {"x", "100", true},
        {"x", "3", false},  {"x", "110", false},  {"x", "0", false},     {"x", "20.0", false},
        {"x", "25", false},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        json_t *v = load(CASES[i].value);
        RungError err;
        rung_error_clear(&err);
        int rc = space_check_value(space, CASES[i].name, v, "points_to_evaluate[0].p", &err);
        if ((rc == 0) != CASES[i].ok)
            fail_msg("%s = %s: rc %d (%s)", CASES[i].name, CASES[i].value, rc, err.message);
        if (rc != 0)
            assert_string_equal(err.field, "points_to_evaluate[0].p");
        json_decref(v);
    }
    /* An integer for a normal is a real in the config. */
    json_t *two = json_integer(2);
    json_t *c = space_config_value(space, "w", two);
    assert_true(json_is_real(c) && json_real_value(c) == 2.0);
    json_decref(c);
    json_decref(two);
    space_free(space);
}

/* ---- grid expansion (Ray Tune's semantics) ---------------------------- */

/* Runs every trial and checks that each combination of the `keys` params
 * appears exactly num_samples times; returns the number of trials. */
static int64_t check_grid(const char *space_text, const char *searcher_text, int64_t num_samples,
                          const char *const *keys, int64_t combos)
{
    Space *space = parse_space(space_text);
    SearcherSpec s = searcher_ok(searcher_text, space);
    int64_t total = total_ok(space, &s, num_samples);
    Tally tally = {.n = 0};
    for (int64_t t = 0; t < total; t++) {
        json_t *config = sampler_config(space, &s, t);
        assert_non_null(config);
        assert_int_equal(json_object_size(config), space_param_count(space));
        json_t *combo = json_object();
        for (const char *const *k = keys; *k != NULL; k++)
            json_object_set(combo, *k, json_object_get(config, *k));
        tally_add(&tally, dump(combo));
        json_decref(combo);
        json_decref(config);
    }
    assert_int_equal(tally.n, combos);
    for (int i = 0; i < tally.n; i++)
        assert_int_equal(tally.counts[i], num_samples);
    tally_free(&tally);
    space_free(space);
    return total;
}

static void test_grid_trial_counts(void **state)
{
    (void)state;
    const char *two_grids = "{\"a\": {\"type\": \"grid\", \"values\": [1, 2, 3]},"
                            " \"k\": 7,"
                            " \"b\": {\"type\": \"grid\", \"values\": [\"x\", {\"y\": 1}]}}";
    const char *ab[] = {"a", "b", NULL};
    assert_int_equal(check_grid(two_grids, NULL, 1, ab, 6), 6);
    assert_int_equal(check_grid(two_grids, NULL, 3, ab, 6), 18);

    const char *grid_and_log = "{\"a\": {\"type\": \"grid\", \"values\": [0.1, 0.2]},"
                               " \"lr\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 0.1}}";
    const char *a[] = {"a", NULL};
    assert_int_equal(check_grid(grid_and_log, "{\"seed\": 1}", 5, a, 2), 10);
    assert_int_equal(check_grid(grid_and_log, "{\"seed\": 1, \"quasi\": true}", 5, a, 2), 10);

    const char *all = "{\"c\": {\"type\": \"choice\", \"values\": [\"relu\", \"tanh\", \"gelu\"]},"
                      " \"n\": {\"type\": \"randint\", \"low\": 0, \"high\": 4},"
                      " \"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1,"
                      " \"grid_points\": 5}}";
    const char *cnx[] = {"c", "n", "x", NULL};
    assert_int_equal(check_grid(all, "{\"type\": \"grid\"}", 1, cnx, 60), 60);
    assert_int_equal(check_grid(all, "{\"type\": \"grid\"}", 2, cnx, 60), 120);
}

/* Trials 0 .. 6 of space (grids a and b, uniform x) under s: their grid
 * values are want[t] ("1p": a 1, b "p"), space_decode agrees, and x moves. */
static void check_grid_order(const Space *space, const SearcherSpec *s, const char *const *want)
{
    double xs[7];
    for (int t = 0; t < 7; t++) {
        json_t *config = sampler_config(space, s, t);
        char got[16];
        snprintf(got, sizeof got, "%lld%s",
                 (long long)json_integer_value(json_object_get(config, "a")),
                 json_string_value(json_object_get(config, "b")));
        assert_string_equal(got, want[t]);
        xs[t] = json_real_value(json_object_get(config, "x"));
        /* space_decode with the same grid index agrees on the grid values. */
        double u[1] = {0.5};
        json_t *decoded = space_decode(space, u, t % 6, s->grid_order);
        assert_true(json_equal(json_object_get(decoded, "a"), json_object_get(config, "a")));
        assert_true(json_equal(json_object_get(decoded, "b"), json_object_get(config, "b")));
        json_decref(decoded);
        json_decref(config);
    }
    for (int t = 1; t < 7; t++)
        assert_true(xs[t] != xs[0]);
}

/* Trial n takes combination n mod G (Ray's order: a before b, so a varies
 * fastest; the spec's order: the first in the spec slowest), and the
 * sampled parameters differ between trials. */
static void test_grid_order(void **state)
{
    (void)state;
    Space *space = parse_space("{\"b\": {\"type\": \"grid\", \"values\": [\"p\", \"q\"]},"
                               " \"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"a\": {\"type\": \"grid\", \"values\": [1, 2, 3]}}");
    assert_int_equal(space_grid_size(space), 6);
    assert_int_equal(space_cube_dims(space), 1);
    for (int order = 0; order < 2; order++) {
        SearcherSpec s = searcher_ok(order == 0 ? "{\"seed\": 9}"
                                                : "{\"seed\": 9, \"grid_order\": \"spec\"}",
                                     space);
        const char *ray[] = {"1p", "2p", "3p", "1q", "2q", "3q", "1p"};
        const char *spec[] = {"1p", "2p", "3p", "1q", "2q", "3q", "1p"};
        check_grid_order(space, &s, order == 0 ? ray : spec);
    }
    space_free(space);
    /* With a listed before b in the spec, the two orders differ. */
    space = parse_space("{\"a\": {\"type\": \"grid\", \"values\": [1, 2, 3]},"
                        " \"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                        " \"b\": {\"type\": \"grid\", \"values\": [\"p\", \"q\"]}}");
    for (int order = 0; order < 2; order++) {
        SearcherSpec s = searcher_ok(order == 0 ? "{\"seed\": 9}"
                                                : "{\"seed\": 9, \"grid_order\": \"spec\"}",
                                     space);
        const char *ray[] = {"1p", "2p", "3p", "1q", "2q", "3q", "1p"};
        const char *spec[] = {"1p", "1q", "2p", "2q", "3p", "3q", "1p"};
        check_grid_order(space, &s, order == 0 ? ray : spec);
    }
    space_free(space);
}

/* Ray's order on three grids, one nested (docs/api.md, "Grid semantics"):
 * the paths sorted key by key are ("a",), ("b",), ("m", "lr"), and a, the
 * first, varies fastest; the list is written out by hand from that rule. */
static void test_grid_order_ray_nested(void **state)
{
    (void)state;
    Space *space = parse_space("{\"b\": {\"type\": \"grid\", \"values\": [1, 2]},"
                               " \"a\": {\"type\": \"grid\", \"values\": [\"x\", \"y\"]},"
                               " \"m\": {\"lr\": {\"type\": \"grid\", \"values\": [0.1, 0.2]}}}");
    static const char *const WANT[] = {
        "{\"b\": 1, \"a\": \"x\", \"m.lr\": 0.1}", "{\"b\": 1, \"a\": \"y\", \"m.lr\": 0.1}",
        "{\"b\": 2, \"a\": \"x\", \"m.lr\": 0.1}", "{\"b\": 2, \"a\": \"y\", \"m.lr\": 0.1}",
        "{\"b\": 1, \"a\": \"x\", \"m.lr\": 0.2}", "{\"b\": 1, \"a\": \"y\", \"m.lr\": 0.2}",
        "{\"b\": 2, \"a\": \"x\", \"m.lr\": 0.2}", "{\"b\": 2, \"a\": \"y\", \"m.lr\": 0.2}",
    };
    /* The old order (an experiment stored before grid_order): b slowest. */
    static const char *const OLD[] = {
        "{\"b\": 1, \"a\": \"x\", \"m.lr\": 0.1}", "{\"b\": 1, \"a\": \"x\", \"m.lr\": 0.2}",
        "{\"b\": 1, \"a\": \"y\", \"m.lr\": 0.1}", "{\"b\": 1, \"a\": \"y\", \"m.lr\": 0.2}",
        "{\"b\": 2, \"a\": \"x\", \"m.lr\": 0.1}", "{\"b\": 2, \"a\": \"x\", \"m.lr\": 0.2}",
        "{\"b\": 2, \"a\": \"y\", \"m.lr\": 0.1}", "{\"b\": 2, \"a\": \"y\", \"m.lr\": 0.2}",
    };
    const char *searchers[] = {"{\"seed\": 1}", "{\"type\": \"grid\"}", "{\"type\": \"bayes\"}",
                               "{\"type\": \"grid\", \"grid_order\": \"spec\"}",
                               "{\"seed\": 1, \"grid_order\": \"spec\"}"};
    for (int si = 0; si < 5; si++) {
        SearcherSpec s = searcher_ok(searchers[si], space);
        const char *const *want = si < 3 ? WANT : OLD;
        assert_int_equal(total_ok(space, &s, 2), 16);
        for (int t = 0; t < 16; t++) {
            json_t *config = sampler_config(space, &s, t);
            json_t *w = load(want[t % 8]);
            if (!json_equal(config, w)) {
                char *got = dump(config);
                fail_msg("%s: trial %d is %s, want %s", searchers[si], t, got, want[t % 8]);
            }
            /* sampler_grid_index and space_decode number them alike. */
            assert_int_equal(sampler_grid_index(space, config, s.grid_order), t % 8);
            json_t *decoded = space_decode(space, NULL, t % 8, s.grid_order);
            assert_true(json_equal(decoded, w));
            json_decref(decoded);
            json_decref(w);
            json_decref(config);
        }
    }
    space_free(space);

    /* Key by key: the path ("a", "b") sorts before ("a-c",), though the
     * string "a.b" sorts after "a-c" ('.' > '-'); a top-level name that
     * holds a dot is one key, compared whole: ("a.b",) after ("a-c",). */
    space = parse_space("{\"a-c\": {\"type\": \"grid\", \"values\": [1, 2]},"
                        " \"a\": {\"b\": {\"type\": \"grid\", \"values\": [3, 4]}}}");
    SearcherSpec s = searcher_ok("{\"type\": \"grid\"}", space);
    json_t *c1 = sampler_config(space, &s, 1);
    /* a.b (path ("a", "b")) is first, so fastest: trial 1 moves it. */
    assert_int_equal(json_integer_value(json_object_get(c1, "a.b")), 4);
    assert_int_equal(json_integer_value(json_object_get(c1, "a-c")), 1);
    json_decref(c1);
    space_free(space);
    space = parse_space("{\"a-c\": {\"type\": \"grid\", \"values\": [1, 2]},"
                        " \"a.b\": {\"type\": \"grid\", \"values\": [3, 4]}}");
    s = searcher_ok("{\"type\": \"grid\"}", space);
    c1 = sampler_config(space, &s, 1);
    /* The one key "a.b" sorts after "a-c" ('.' > '-'): a-c is fastest. */
    assert_int_equal(json_integer_value(json_object_get(c1, "a.b")), 3);
    assert_int_equal(json_integer_value(json_object_get(c1, "a-c")), 2);
    json_decref(c1);
    space_free(space);
}

/* The values the grid searcher enumerates for one parameter. */
static void check_enumeration(const char *domain, const char *want_text)
{
    char text[512];
    snprintf(text, sizeof text, "{\"x\": %s}", domain);
    Space *space = parse_space(text);
    SearcherSpec s = searcher_ok("{\"type\": \"grid\"}", space);
    json_t *want = load(want_text);
    int64_t total = total_ok(space, &s, 1);
    if (total != (int64_t)json_array_size(want))
        fail_msg("%s: %lld points, expected %zu", domain, (long long)total, json_array_size(want));
    for (int64_t i = 0; i < total; i++) {
        json_t *config = sampler_config(space, &s, i);
        const json_t *got = json_object_get(config, "x");
        const json_t *w = json_array_get(want, (size_t)i);
        assert_int_equal(json_typeof(got), json_typeof(w));
        double g = json_number_value(got), e = json_number_value(w);
        if (fabs(g - e) > 1e-12 * fabs(e))
            fail_msg("%s: point %lld is %.17g, expected %.17g", domain, (long long)i, g, e);
        json_decref(config);
    }
    json_decref(want);
    space_free(space);
}

static void test_grid_points(void **state)
{
    (void)state;
    check_enumeration("{\"type\": \"uniform\", \"low\": 0, \"high\": 1, \"grid_points\": 5}",
                      "[0.0, 0.25, 0.5, 0.75, 1.0]");
    check_enumeration("{\"type\": \"uniform\", \"low\": 2, \"high\": 3, \"grid_points\": 1}",
                      "[2.0]");
    check_enumeration("{\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1, \"grid_points\": 5}",
                      "[1e-4, 1e-3, 1e-2, 1e-1, 1.0]");
    check_enumeration("{\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": 0.5,"
                      " \"grid_points\": 5}",
                      "[0.0, 0.5, 1.0]");
    check_enumeration("{\"type\": \"qloguniform\", \"low\": 1, \"high\": 100, \"q\": 1,"
                      " \"grid_points\": 3}",
                      "[1.0, 10.0, 100.0]");
    check_enumeration("{\"type\": \"randint\", \"low\": 0, \"high\": 4}", "[0, 1, 2, 3]");
    check_enumeration("{\"type\": \"randint\", \"low\": 0, \"high\": 100, \"grid_points\": 3}",
                      "[0, 50, 99]");
    check_enumeration("{\"type\": \"randint\", \"low\": 0, \"high\": 5000, \"grid_points\": 2}",
                      "[0, 4999]");
    check_enumeration("{\"type\": \"lograndint\", \"low\": 1, \"high\": 1001, \"grid_points\": 4}",
                      "[1, 10, 100, 1000]");
    check_enumeration("{\"type\": \"lograndint\", \"low\": 1, \"high\": 5, \"grid_points\": 4}",
                      "[1, 2, 3, 4]");
    check_enumeration("{\"type\": \"qrandint\", \"low\": 0, \"high\": 100, \"q\": 10,"
                      " \"grid_points\": 20}",
                      "[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]");
    check_enumeration("{\"type\": \"qrandint\", \"low\": 1, \"high\": 20, \"q\": 3}",
                      "[3, 6, 9, 12, 15, 18]");
    check_enumeration("{\"type\": \"choice\", \"values\": [3, 1, 2]}", "[3, 1, 2]");
    /* normal and qnormal: the quantiles (i + 0.5) / n. */
    check_enumeration("{\"type\": \"normal\", \"mean\": 0, \"sd\": 1, \"grid_points\": 3}",
                      "[-0.9674215661017014, 0.0, 0.9674215661017014]");
    check_enumeration("{\"type\": \"normal\", \"mean\": 5, \"sd\": 2, \"grid_points\": 1}",
                      "[5.0]");
    check_enumeration("{\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1, \"q\": 0.5,"
                      " \"grid_points\": 4}",
                      "[-1.0, -0.5, 0.5, 1.0]");
    /* qlograndint: geomspace rounded to the multiples within [low, high]. */
    check_enumeration("{\"type\": \"qlograndint\", \"low\": 1, \"high\": 100, \"q\": 5,"
                      " \"grid_points\": 3}",
                      "[5, 10, 100]");
    check_enumeration("{\"type\": \"qlograndint\", \"low\": 1, \"high\": 20, \"q\": 5}",
                      "[5, 10, 15, 20]");
    check_enumeration("{\"type\": \"qlograndint\", \"low\": 32, \"high\": 256, \"q\": 32,"
                      " \"grid_points\": 50}",
                      "[32, 64, 96, 128, 160, 192, 224, 256]");
}

/* ---- validation: the exact field of every error ---------------------- */

typedef struct {
    const char *spec;
    const char *field;
} BadCase;

static const BadCase BAD_SPACES[] = {
    {"[]", "search_space"},
    {"3", "search_space"},
    {"{\"1x\": 1}", "search_space.1x"},
    {"{\"\": 1}", "search_space."},
    {"{\"a b\": 1}", "search_space.a b"},
    {"{\"a/b\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}", "search_space.a/b"},
    {"{\"x\": {\"type\": \"lognormal\"}}", "search_space.x.type"},
    {"{\"x\": {\"type\": 3}}", "search_space.x.type"},
    {"{\"x\": {\"type\": \"\"}}", "search_space.x.type"},
    {"{\"x\": {\"type\": \"uniform\", \"low\": 0}}", "search_space.x.high"},
    {"{\"x\": {\"type\": \"uniform\", \"high\": 1}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"uniform\", \"low\": 1, \"high\": 1}}", "search_space.x.high"},
    {"{\"x\": {\"type\": \"uniform\", \"low\": \"0\", \"high\": 1}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1, \"q\": 0.1}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"uniform\", \"low\": -1e308, \"high\": 1e308}}", "search_space.x.high"},
    {"{\"x\": {\"type\": \"loguniform\", \"low\": 0, \"high\": 1}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"loguniform\", \"low\": -1, \"high\": 1}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"loguniform\", \"low\": 1, \"high\": 0.5}}", "search_space.x.high"},
    {"{\"x\": {\"type\": \"loguniform\", \"low\": 1e-3, \"high\": 1, \"base\": 10}}",
     "search_space.x.base"},
    {"{\"x\": {\"type\": \"quniform\", \"low\": 0, \"high\": 1}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": 0}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": -0.5}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"quniform\", \"low\": 0.1, \"high\": 0.2, \"q\": 1}}",
     "search_space.x.q"},
    {"{\"x\": {\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": 1e-300}}",
     "search_space.x.q"},
    {"{\"x\": {\"type\": \"qloguniform\", \"low\": 0, \"high\": 1, \"q\": 0.1}}",
     "search_space.x.low"},
    {"{\"x\": {\"type\": \"randint\", \"low\": 0.5, \"high\": 3}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"randint\", \"low\": 3, \"high\": 3}}", "search_space.x.high"},
    {"{\"x\": {\"type\": \"randint\", \"low\": 0, \"high\": 1e300}}", "search_space.x.high"},
    {"{\"x\": {\"type\": \"randint\", \"low\": 0, \"high\": 2000000000000}}",
     "search_space.x.high"},
    {"{\"x\": {\"type\": \"lograndint\", \"low\": 0, \"high\": 10}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"normal\", \"mean\": 0}}", "search_space.x.sd"},
    {"{\"x\": {\"type\": \"normal\", \"sd\": 1}}", "search_space.x.mean"},
    {"{\"x\": {\"type\": \"normal\", \"mean\": 0, \"sd\": 0}}", "search_space.x.sd"},
    {"{\"x\": {\"type\": \"normal\", \"mean\": 0, \"sd\": -1}}", "search_space.x.sd"},
    {"{\"x\": {\"type\": \"normal\", \"mean\": 0, \"sd\": 1e308}}", "search_space.x.sd"},
    {"{\"x\": {\"type\": \"normal\", \"mean\": \"0\", \"sd\": 1}}", "search_space.x.mean"},
    {"{\"x\": {\"type\": \"normal\", \"mean\": 0, \"sd\": 1, \"q\": 1}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"normal\", \"low\": 0, \"high\": 1}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1, \"q\": 0}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1, \"q\": 1e-300}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"qnormal\", \"mean\": 0, \"sd\": 0, \"q\": 1}}", "search_space.x.sd"},
    {"{\"x\": {\"type\": \"qlograndint\", \"low\": 0, \"high\": 10, \"q\": 1}}",
     "search_space.x.low"},
    {"{\"x\": {\"type\": \"qlograndint\", \"low\": 1.5, \"high\": 10, \"q\": 1}}",
     "search_space.x.low"},
    {"{\"x\": {\"type\": \"qlograndint\", \"low\": 5, \"high\": 4, \"q\": 1}}",
     "search_space.x.high"},
    {"{\"x\": {\"type\": \"qlograndint\", \"low\": 1, \"high\": 1099511627777, \"q\": 1}}",
     "search_space.x.high"},
    {"{\"x\": {\"type\": \"qlograndint\", \"low\": 1, \"high\": 10}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"qlograndint\", \"low\": 1, \"high\": 10, \"q\": 0}}",
     "search_space.x.q"},
    {"{\"x\": {\"type\": \"qlograndint\", \"low\": 3, \"high\": 5, \"q\": 10}}",
     "search_space.x.q"},
    {"{\"x\": {\"type\": \"randn\", \"mean\": 0, \"sd\": 1}}", "search_space.x.type"},
    {"{\"x\": {\"type\": \"qrandint\", \"low\": 1, \"high\": 10, \"q\": 0}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"qrandint\", \"low\": 0, \"high\": 10, \"q\": 2.5}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"qrandint\", \"low\": 1, \"high\": 3, \"q\": 5}}", "search_space.x.q"},
    {"{\"x\": {\"type\": \"qrandint\", \"low\": 5, \"high\": 1, \"q\": 1}}", "search_space.x.high"},
    {"{\"x\": {\"type\": \"choice\"}}", "search_space.x.values"},
    {"{\"x\": {\"type\": \"choice\", \"values\": []}}", "search_space.x.values"},
    {"{\"x\": {\"type\": \"choice\", \"values\": 3}}", "search_space.x.values"},
    {"{\"x\": {\"type\": \"choice\", \"values\": [1, [2]]}}", "search_space.x.values[1]"},
    {"{\"x\": {\"type\": \"choice\", \"values\": [\"a\", null]}}", "search_space.x.values[1]"},
    {"{\"x\": {\"type\": \"choice\", \"values\": [1, 2], \"grid_points\": 2}}",
     "search_space.x.grid_points"},
    {"{\"x\": {\"type\": \"grid\", \"values\": []}}", "search_space.x.values"},
    {"{\"x\": {\"type\": \"grid\", \"values\": [1], \"low\": 0}}", "search_space.x.low"},
    {"{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1, \"grid_points\": 0}}",
     "search_space.x.grid_points"},
    {"{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1, \"grid_points\": 1001}}",
     "search_space.x.grid_points"},
    {"{\"x\": {\"type\": \"randint\", \"low\": 0, \"high\": 9, \"grid_points\": 2.5}}",
     "search_space.x.grid_points"},
    {"{\"ok\": 1, \"y\": {\"type\": \"uniform\", \"low\": 2, \"high\": 1}}", "search_space.y.high"},
    /* Sub-spaces and conditional choices: the path through them. */
    {"{\"opt\": {\"type\": \"choice\", \"values\": [{\"o\": \"sgd\"}, {\"o\": \"adamw\", "
     "\"beta2\": {\"type\": \"loguniform\", \"low\": 0, \"high\": 1}}]}}",
     "search_space.opt.values[1].beta2.low"},
    {"{\"opt\": {\"type\": \"choice\", \"values\": [{\"a\": 1}, 2]}}",
     "search_space.opt.values[1]"},
    {"{\"opt\": {\"type\": \"choice\", \"values\": [{}]}}", "search_space.opt.values[0]"},
    {"{\"m\": {\"x\": 1, \"y\": {\"z\": [1]}}}", "search_space.m"},
    {"{\"m\": {\"x\": {\"type\": \"uniform\", \"low\": 0}}}", "search_space.m.x.high"},
    {"{\"m\": {\"1x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}}", "search_space.m.1x"},
    {"{\"m.x\": 1, \"m\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}}",
     "search_space.m.x"},
    {"{\"o\": {\"type\": \"choice\", \"values\": [{\"a\": 1}, {\"a\": 2}]}, \"o.a\": 3}",
     "search_space.o.a"},
    {"{\"o\": {\"type\": \"choice\", \"values\": [{\"g\": {\"type\": \"grid\", \"values\": "
     "[1]}}]}}",
     "search_space.o.values[0].g"},
    {"{\"a\": {\"b\": {\"c\": {\"d\": {\"e\": {\"f\": {\"g\": {\"h\": {\"i\": {\"j\": "
     "{\"type\": \"uniform\", \"low\": 0, \"high\": 1}}}}}}}}}}}",
     "search_space.a.b.c.d.e.f.g.h.i"},
};

static void expect_bad_space(const json_t *json, const char *what, const char *field)
{
    Space *space = (Space *)&space; /* must be reset to NULL */
    RungError err;
    rung_error_clear(&err);
    int rc = space_parse(json, &space, &err);
    if (rc != RUNG_E_INVALID_SPEC || strcmp(err.field, field) != 0)
        fail_msg("%s: rc %d field \"%s\" (%s), expected field \"%s\"", what, rc, err.field,
                 err.message, field);
    assert_null(space);
    /* The message names the path, so a person can find the field. */
    assert_true(strncmp(err.message, "search_space", 12) == 0);
}

static void test_invalid_spaces(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof BAD_SPACES / sizeof BAD_SPACES[0]; i++) {
        json_t *json = load(BAD_SPACES[i].spec);
        expect_bad_space(json, BAD_SPACES[i].spec, BAD_SPACES[i].field);
        json_decref(json);
    }

    /* docs/api.md's own example, message included. */
    json_t *json = load("{\"lr\": {\"type\": \"loguniform\", \"low\": 0, \"high\": 0.3}}");
    Space *space = NULL;
    RungError err;
    assert_int_equal(space_parse(json, &space, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "search_space.lr.low");
    assert_string_equal(err.message, "search_space.lr: low must be > 0 for loguniform");
    json_decref(json);

    /* A name of 64 characters is fine, 65 is not. */
    char name[70];
    memset(name, 'n', sizeof name);
    name[64] = '\0';
    json = json_pack("{s:i}", name, 1);
    assert_int_equal(space_parse(json, &space, &err), 0);
    space_free(space);
    json_decref(json);
    name[64] = 'n';
    name[65] = '\0';
    char field[100];
    snprintf(field, sizeof field, "search_space.%s", name);
    json = json_pack("{s:i}", name, 1);
    expect_bad_space(json, "65-character name", field);
    json_decref(json);

    /* SPACE_MAX_PARAMS parameters are fine, one more is not. */
    json = json_object();
    for (int i = 0; i < SPACE_MAX_PARAMS; i++) {
        char key[16];
        snprintf(key, sizeof key, "p%d", i);
        json_object_set_new(json, key,
                            json_pack("{s:s, s:i, s:i}", "type", "uniform", "low", 0, "high", 1));
    }
    assert_int_equal(space_parse(json, &space, &err), 0);
    assert_int_equal(space_cube_dims(space), SPACE_MAX_PARAMS);
    space_free(space);
    json_object_set_new(json, "one_more", json_integer(1));
    expect_bad_space(json, "too many parameters", "search_space");
    json_decref(json);

    /* SPACE_MAX_VALUES choices are fine, one more is not. */
    json_t *values = json_array();
    for (int i = 0; i < SPACE_MAX_VALUES; i++)
        json_array_append_new(values, json_integer(i));
    json = json_pack("{s:{s:s, s:O}}", "c", "type", "choice", "values", values);
    assert_int_equal(space_parse(json, &space, &err), 0);
    space_free(space);
    json_decref(json);
    json_array_append_new(values, json_integer(-1));
    json = json_pack("{s:{s:s, s:O}}", "c", "type", "choice", "values", values);
    expect_bad_space(json, "too many values", "search_space.c.values");
    json_decref(json);
    json_decref(values);

    /* Three grids of 1000 values: 10^9 combinations, over the trial limit. */
    values = json_array();
    for (int i = 0; i < 1000; i++)
        json_array_append_new(values, json_integer(i));
    json = json_pack("{s:{s:s, s:O}, s:{s:s, s:O}, s:{s:s, s:O}}", "a", "type", "grid", "values",
                     values, "b", "type", "grid", "values", values, "c", "type", "grid", "values",
                     values);
    expect_bad_space(json, "grid product", "search_space.c.values");
    json_decref(json);
    json_decref(values);
}

static const BadCase BAD_SEARCHERS[] = {
    {"3", "searcher"},
    {"{\"type\": \"sobol\"}", "searcher.type"},
    {"{\"type\": 1}", "searcher.type"},
    {"{\"seed\": -1}", "searcher.seed"},
    {"{\"seed\": 1.5}", "searcher.seed"},
    {"{\"seed\": \"1\"}", "searcher.seed"},
    {"{\"seed\": 9007199254740993}", "searcher.seed"},
    {"{\"quasi\": 1}", "searcher.quasi"},
    {"{\"type\": \"grid\", \"quasi\": true}", "searcher.quasi"},
    {"{\"type\": \"bayes\", \"quasi\": false}", "searcher.quasi"},
    {"{\"n_initial\": 3}", "searcher.n_initial"},
    {"{\"type\": \"bayes\", \"n_initial\": 0}", "searcher.n_initial"},
    {"{\"type\": \"bayes\", \"n_initial\": true}", "searcher.n_initial"},
    {"{\"type\": \"bayes\", \"noisy\": 1}", "searcher.noisy"},
    {"{\"type\": \"auto\", \"multivariate\": true}", "searcher.multivariate"},
    {"{\"type\": \"auto\", \"sigma0\": 0.2}", "searcher.sigma0"},
    {"{\"type\": \"auto\", \"multi_fidelity\": true}", "searcher.multi_fidelity"},
    {"{\"type\": \"autos\"}", "searcher.type"},
    {"{\"type\": \"auto\", \"switch_after\": 0}", "searcher.switch_after"},
    {"{\"type\": \"bayes\", \"switch_after\": 10}", "searcher.switch_after"},
    {"{\"type\": \"bayes\", \"noisy\": \"yes\"}", "searcher.noisy"},
    {"{\"typo\": 1}", "searcher.typo"},
    {"{\"type\": \"grid\"}", "search_space.lr.grid_points"},
};

/* auto's rule (sampler/auto.h): the GP first, then tpe where there is a
 * choice or a condition, cmaes otherwise; bayes alone for several
 * objectives or constraints, and for none past 40 parameters. */
static void test_auto_rule(void **state)
{
    (void)state;
    Space *flat = parse_space("{\"a\":{\"type\":\"uniform\",\"low\":0,\"high\":1},"
                              "\"b\":{\"type\":\"randint\",\"low\":0,\"high\":9}}");
    Space *choice = parse_space("{\"a\":{\"type\":\"uniform\",\"low\":0,\"high\":1},"
                                "\"c\":{\"type\":\"choice\",\"values\":[\"x\",\"y\"]}}");
    Space *branch = parse_space(
        "{\"m\":{\"type\":\"choice\",\"values\":[{\"k\":\"a\",\"lr\":{\"type\":"
        "\"uniform\",\"low\":0,\"high\":1}},{\"k\":\"b\"}]}}");
    SearcherSpec a0 = searcher_ok("{\"type\":\"auto\"}", flat);
    assert_int_equal(a0.switch_after, AUTO_GP_MAX_OBS);
    const SearcherSpec *d0 = &a0;
    assert_int_equal(auto_pick(flat, d0, 0, 1, 0), SEARCHER_BAYES);
    assert_int_equal(auto_pick(flat, d0, AUTO_GP_MAX_OBS - 1, 1, 0), SEARCHER_BAYES);
    assert_int_equal(auto_pick(flat, d0, AUTO_GP_MAX_OBS, 1, 0), SEARCHER_CMAES);
    assert_int_equal(auto_pick(choice, d0, AUTO_GP_MAX_OBS - 1, 1, 0), SEARCHER_BAYES);
    assert_int_equal(auto_pick(choice, d0, AUTO_GP_MAX_OBS, 1, 0), SEARCHER_TPE);
    assert_int_equal(auto_pick(branch, d0, 5000, 1, 0), SEARCHER_TPE);
    assert_int_equal(auto_pick(flat, d0, 5000, 2, 0), SEARCHER_BAYES);
    assert_int_equal(auto_pick(flat, d0, 5000, 1, 1), SEARCHER_BAYES);
    char big[8192];
    int o = snprintf(big, sizeof big, "{");
    for (int i = 0; i <= AUTO_GP_MAX_DIMS; i++)
        o += snprintf(big + o, sizeof big - (size_t)o,
                      "%s\"x%d\":{\"type\":\"uniform\",\"low\":0,\"high\":1}", i ? "," : "", i);
    snprintf(big + o, sizeof big - (size_t)o, "}");
    Space *wide = parse_space(big);
    assert_int_equal(auto_pick(wide, d0, 0, 1, 0), SEARCHER_CMAES);
    /* The line is the spec's to move. */
    SearcherSpec early = searcher_ok("{\"type\":\"auto\",\"switch_after\":10}", choice);
    assert_int_equal(auto_pick(choice, &early, 9, 1, 0), SEARCHER_BAYES);
    assert_int_equal(auto_pick(choice, &early, 10, 1, 0), SEARCHER_TPE);

    /* What the pick runs with: auto's seed and start, the pick's defaults. */
    SearcherSpec a = searcher_ok("{\"type\":\"auto\",\"seed\":7,\"n_initial\":9}", choice);
    assert_true(searcher_uses_history(a.type));
    SearcherSpec t = auto_spec(&a, SEARCHER_TPE);
    assert_int_equal(t.type, SEARCHER_TPE);
    assert_true(t.multivariate && t.group && t.constant_liar);
    assert_int_equal(t.seed, 7);
    assert_int_equal(t.n_initial, 9);
    assert_int_equal(t.multi_fidelity, 0);
    SearcherSpec c = auto_spec(&a, SEARCHER_CMAES);
    assert_true(c.sigma0 == 0.0 && c.popsize == 0 && !c.no_restart && !c.multivariate);
    /* Under rungs (rungd sets auto's multi_fidelity): tpe ranks by rung,
     * bayes keeps last values. */
    a.multi_fidelity = 1;
    assert_int_equal(auto_spec(&a, SEARCHER_TPE).multi_fidelity, 1);
    assert_int_equal(auto_spec(&a, SEARCHER_BAYES).multi_fidelity, 0);
    SearcherSpec d = searcher_ok("{\"type\":\"auto\"}", flat);
    assert_int_equal(d.n_initial, 5); /* max(5, 2 d), as bayes */
    space_free(flat);
    space_free(choice);
    space_free(branch);
    space_free(wide);
}

static void expect_bad_searcher(const char *searcher_text, const Space *space, const char *field)
{
    json_t *json = load(searcher_text);
    SearcherSpec s;
    RungError err;
    rung_error_clear(&err);
    int rc = searcher_parse(json, space, &s, &err);
    if (rc != RUNG_E_INVALID_SPEC || strcmp(err.field, field) != 0)
        fail_msg("%s: rc %d field \"%s\" (%s), expected field \"%s\"", searcher_text, rc, err.field,
                 err.message, field);
    assert_true(strstr(err.message, field) != NULL ||
                strncmp(err.message, "search_space", 12) == 0);
    json_decref(json);
}

static void test_invalid_searchers(void **state)
{
    (void)state;
    Space *space = parse_space("{\"lr\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1},"
                               " \"c\": {\"type\": \"choice\", \"values\": [1, 2]}}");
    for (size_t i = 0; i < sizeof BAD_SEARCHERS / sizeof BAD_SEARCHERS[0]; i++)
        expect_bad_searcher(BAD_SEARCHERS[i].spec, space, BAD_SEARCHERS[i].field);
    space_free(space);

    /* An integer domain the grid searcher would have to enumerate whole. */
    space = parse_space("{\"lr\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1,"
                        " \"grid_points\": 3}, \"n\": {\"type\": \"randint\", \"low\": 0,"
                        " \"high\": 1001}}");
    expect_bad_searcher("{\"type\": \"grid\"}", space, "search_space.n.grid_points");
    space_free(space);
    space = parse_space("{\"n\": {\"type\": \"randint\", \"low\": 0, \"high\": 1000}}");
    SearcherSpec s = searcher_ok("{\"type\": \"grid\"}", space);
    assert_int_equal(total_ok(space, &s, 2), 2000);
    space_free(space);

    /* Sobol points have 40 dimensions at most. */
    json_t *json = json_object();
    for (int i = 0; i < SOBOL_MAX_DIMS + 1; i++) {
        char key[16];
        snprintf(key, sizeof key, "p%d", i);
        json_object_set_new(json, key,
                            json_pack("{s:s, s:i, s:i}", "type", "uniform", "low", 0, "high", 1));
        if (i == SOBOL_MAX_DIMS - 1) {
            Space *forty = NULL;
            assert_int_equal(space_parse(json, &forty, NULL), 0);
            s = searcher_ok("{\"quasi\": true}", forty);
            assert_true(s.quasi);
            space_free(forty);
        }
    }
    RungError err;
    assert_int_equal(space_parse(json, &space, &err), 0);
    expect_bad_searcher("{\"quasi\": true}", space, "searcher.quasi");
    json_decref(json);
    space_free(space);
}

static void test_total_trials_limits(void **state)
{
    (void)state;
    Space *space = parse_space("{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    SearcherSpec s = searcher_ok(NULL, space);
    int64_t total = 0;
    RungError err;
    assert_int_equal(sampler_total_trials(space, &s, 0, &total, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "num_samples");
    assert_int_equal(total_ok(space, &s, SAMPLER_MAX_TRIALS), SAMPLER_MAX_TRIALS);
    assert_int_equal(sampler_total_trials(space, &s, SAMPLER_MAX_TRIALS + 1, &total, &err),
                     RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "num_samples");
    space_free(space);

    /* Eight choices of ten values: the grid searcher's 10^8 combinations
     * are refused even with one sample. */
    json_t *json = json_object();
    for (int i = 0; i < 8; i++) {
        char key[16];
        snprintf(key, sizeof key, "c%d", i);
        json_object_set_new(json, key,
                            load("{\"type\": \"choice\", \"values\": [0,1,2,3,4,5,6,7,8,9]}"));
    }
    assert_int_equal(space_parse(json, &space, &err), 0);
    json_decref(json);
    s = searcher_ok("{\"type\": \"grid\"}", space);
    assert_int_equal(sampler_total_trials(space, &s, 1, &total, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "num_samples");
    assert_true(strncmp(err.message, "num_samples", 11) == 0);
    /* The random searcher samples choices: no product at all. */
    s = searcher_ok("{\"type\": \"random\"}", space);
    assert_int_equal(total_ok(space, &s, 10), 10);
    space_free(space);

    /* A grid of 10^4 values repeated 1001 times is over the limit. */
    json_t *values = json_array();
    for (int i = 0; i < 10000; i++)
        json_array_append_new(values, json_integer(i));
    json = json_pack("{s:{s:s, s:o}}", "g", "type", "grid", "values", values);
    assert_int_equal(space_parse(json, &space, &err), 0);
    json_decref(json);
    s = searcher_ok(NULL, space);
    assert_int_equal(total_ok(space, &s, 1000), SAMPLER_MAX_TRIALS);
    assert_int_equal(sampler_total_trials(space, &s, 1001, &total, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "num_samples");
    space_free(space);
}

/* ---- searcher spec, constants, order ---------------------------------- */

static void test_searcher_defaults(void **state)
{
    (void)state;
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"b\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    SearcherSpec s = searcher_ok(NULL, space);
    assert_int_equal(s.type, SEARCHER_RANDOM);
    assert_false(s.has_seed);
    assert_int_equal(s.seed, 0);
    assert_false(s.quasi);
    s = searcher_ok("null", space);
    assert_int_equal(s.type, SEARCHER_RANDOM);
    s = searcher_ok("{\"type\": \"random\", \"seed\": 9007199254740992, \"quasi\": true}", space);
    assert_true(s.has_seed);
    assert_true(s.seed == UINT64_C(9007199254740992));
    assert_true(s.quasi);
    s = searcher_ok("{\"seed\": 0}", space);
    assert_true(s.has_seed);
    assert_int_equal(s.seed, 0);
    /* bayes: n_initial defaults to max(5, 2 d). */
    s = searcher_ok("{\"type\": \"bayes\"}", space);
    assert_int_equal(s.type, SEARCHER_BAYES);
    assert_int_equal(s.n_initial, 5);
    s = searcher_ok("{\"type\": \"bayes\", \"n_initial\": 12, \"seed\": 4}", space);
    assert_int_equal(s.n_initial, 12);
    /* Its start points are Sobol points, inside the space. */
    json_t *c = sampler_config(space, &s, 3);
    assert_non_null(c);
    assert_int_equal(json_object_size(c), 2);
    json_decref(c);
    space_free(space);
    space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1,"
                        " \"grid_points\": 3},"
                        " \"b\": {\"type\": \"randint\", \"low\": 0, \"high\": 3},"
                        " \"g\": {\"type\": \"grid\", \"values\": [1, 2]}, \"k\": 5,"
                        " \"c\": {\"type\": \"choice\", \"values\": [1, 2]},"
                        " \"d\": {\"type\": \"lograndint\", \"low\": 1, \"high\": 3}}");
    assert_int_equal(space_cube_dims(space), 4);
    s = searcher_ok("{\"type\": \"bayes\"}", space);
    assert_int_equal(s.n_initial, 8);
    s = searcher_ok("{\"type\": \"grid\", \"seed\": 3}", space);
    assert_int_equal(s.type, SEARCHER_GRID);
    /* a: 3 points, b: 3 integers, g: 2, c: 2, d: 2 (lograndint 1..2). */
    assert_int_equal(total_ok(space, &s, 1), 3 * 3 * 2 * 2 * 2);
    space_free(space);
}

static void test_constants_and_order(void **state)
{
    (void)state;
    const char *text = "{\"z\": 1, \"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                       " \"m\": [{\"k\": [1, 2]}], \"n\": null, \"s\": \"str\", \"f\": 2.5,"
                       " \"g\": {\"type\": \"grid\", \"values\": [{\"x\": 1}, [1], null]},"
                       " \"t\": [1, {\"type\": \"uniform\"}], \"b\": false}";
    const char *order[] = {"z", "a", "m", "n", "s", "f", "g", "t", "b"};
    Space *space = parse_space(text);
    assert_int_equal(space_param_count(space), 9);
    assert_int_equal(space_cube_dims(space), 1);
    assert_int_equal(space_grid_size(space), 3);
    for (int i = 0; i < 9; i++)
        assert_string_equal(space_param_name(space, i), order[i]);
    assert_null(space_param_name(space, 9));
    json_t *spec = load(text);
    const char *searchers[] = {NULL, "{\"type\": \"grid\"}"};
    SearcherSpec s = searcher_ok(searchers[0], space);
    assert_int_equal(total_ok(space, &s, 2), 6);
    for (int t = 0; t < 6; t++) {
        json_t *config = sampler_config(space, &s, t);
        /* Every parameter in spec order; constants unchanged. */
        int i = 0;
        const char *key;
        json_t *value;
        json_object_foreach(config, key, value) {
            assert_string_equal(key, order[i++]);
            if (strcmp(key, "a") != 0 && strcmp(key, "g") != 0)
                assert_true(json_equal(value, json_object_get(spec, key)));
        }
        assert_int_equal(i, 9);
        const json_t *g = json_array_get(json_object_get(json_object_get(spec, "g"), "values"),
                                         (size_t)(t % 3));
        assert_true(json_equal(json_object_get(config, "g"), g));
        json_decref(config);
    }
    /* The grid searcher needs grid_points for "a". */
    json_t *grid = load(searchers[1]);
    RungError err;
    assert_int_equal(searcher_parse(grid, space, &s, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "search_space.a.grid_points");
    json_decref(grid);
    json_decref(spec);
    space_free(space);

    /* An empty space: every trial is the empty config. */
    space = parse_space("{}");
    assert_int_equal(space_cube_dims(space), 0);
    assert_int_equal(space_grid_size(space), 1);
    for (int si = 0; si < 3; si++) {
        const char *texts[] = {NULL, "{\"type\": \"grid\"}", "{\"quasi\": true}"};
        s = searcher_ok(texts[si], space);
        assert_int_equal(total_ok(space, &s, 4), 4);
        json_t *config = sampler_config(space, &s, 3);
        assert_non_null(config);
        assert_int_equal(json_object_size(config), 0);
        json_decref(config);
    }
    json_t *empty = space_decode(space, NULL, 0, GRID_ORDER_RAY);
    assert_int_equal(json_object_size(empty), 0);
    json_decref(empty);
    space_free(space);
    space_free(NULL);
}

static void test_encode_errors(void **state)
{
    (void)state;
    Space *space = parse_space("{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"c\": {\"type\": \"choice\", \"values\": [\"a\", \"b\"]},"
                               " \"g\": {\"type\": \"grid\", \"values\": [1, 2]}}");
    double u[2];
    RungError err;
    const BadCase bad[] = {
        {"[]", "config"},
        {"{\"c\": \"a\"}", "config.x"},
        {"{\"x\": \"0.5\", \"c\": \"a\"}", "config.x"},
        {"{\"x\": 0.5, \"c\": \"z\"}", "config.c"},
        {"{\"x\": 0.5}", "config.c"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *config = load(bad[i].spec);
        rung_error_clear(&err);
        assert_int_equal(space_encode(space, config, u, &err), RUNG_E_INVALID_ARGUMENT);
        assert_string_equal(err.field, bad[i].field);
        json_decref(config);
    }
    /* Grid parameters are not in the cube; numbers outside are clamped. */
    json_t *config = load("{\"x\": 7, \"c\": \"b\"}");
    assert_int_equal(space_encode(space, config, u, &err), 0);
    assert_true(u[0] == 1.0);
    assert_true(u[1] == 0.75);
    json_decref(config);
    space_free(space);
}

/* ---- reproducibility -------------------------------------------------- */

#define REPRO_N 200

static void draw(const Space *space, const char *searcher_text, json_t **out)
{
    SearcherSpec s = searcher_ok(searcher_text, space);
    for (int i = 0; i < REPRO_N; i++) {
        out[i] = sampler_config(space, &s, i);
        assert_non_null(out[i]);
    }
}

static int count_equal(json_t **a, json_t **b)
{
    int same = 0;
    for (int i = 0; i < REPRO_N; i++)
        same += json_equal(a[i], b[i]);
    return same;
}

static void release(json_t **configs)
{
    for (int i = 0; i < REPRO_N; i++)
        json_decref(configs[i]);
}

static void test_reproducible(void **state)
{
    (void)state;
    Space *space = parse_space("{\"lr\": {\"type\": \"loguniform\", \"low\": 1e-5, \"high\": 1},"
                               " \"m\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"h\": {\"type\": \"qrandint\", \"low\": 8, \"high\": 512,"
                               " \"q\": 8}, \"c\": {\"type\": \"choice\", \"values\": [1, 2, 3]}}");
    const char *pairs[][3] = {
        {"{\"seed\": 42}", "{\"seed\": 42}", "{\"seed\": 43}"},
        {"{\"seed\": 42, \"quasi\": true}", "{\"seed\": 42, \"quasi\": true}",
         "{\"seed\": 43, \"quasi\": true}"},
        {"{\"type\": \"bayes\", \"seed\": 1}", "{\"type\": \"bayes\", \"seed\": 1}",
         "{\"type\": \"bayes\", \"seed\": 2}"},
    };
    for (int p = 0; p < 3; p++) {
        json_t *a[REPRO_N], *b[REPRO_N], *c[REPRO_N];
        draw(space, pairs[p][0], a);
        draw(space, pairs[p][1], b);
        draw(space, pairs[p][2], c);
        assert_int_equal(count_equal(a, b), REPRO_N);
        assert_int_equal(count_equal(a, c), 0);
        /* Within one sequence, trials differ too. */
        assert_false(json_equal(a[0], a[1]));
        /* Trial n alone, asked in any order, is the same: a pure function. */
        SearcherSpec s = searcher_ok(pairs[p][0], space);
        for (int i = REPRO_N - 1; i >= 0; i -= 7) {
            json_t *again = sampler_config(space, &s, i);
            assert_true(json_equal(again, a[i]));
            json_decref(again);
        }
        release(a);
        release(b);
        release(c);
    }
    space_free(space);
}

/* ---- Sobol ------------------------------------------------------------ */

/* Our indexed points are GSL's stepped ones, in all 40 dimensions. */
static void test_sobol_matches_gsl(void **state)
{
    (void)state;
    gsl_set_error_handler_off();
    gsl_qrng *gen = gsl_qrng_alloc(gsl_qrng_sobol, SOBOL_MAX_DIMS);
    assert_non_null(gen);
    double x[SOBOL_MAX_DIMS];
    uint32_t ours[SOBOL_MAX_DIMS];
    /* Point 0 is the origin GSL starts from; point i its i-th output. */
    assert_int_equal(sampler__sobol_raw(0, SOBOL_MAX_DIMS, ours), 0);
    for (int j = 0; j < SOBOL_MAX_DIMS; j++)
        assert_int_equal(ours[j], 0);
    const uint64_t far = 70000; /* past the first table of 2^12 points */
    for (uint64_t i = 1; i <= far; i++) {
        assert_int_equal(gsl_qrng_get(gen, x), GSL_SUCCESS);
        if (i > 5000 && i != far)
            continue;
        assert_int_equal(sampler__sobol_raw(i, SOBOL_MAX_DIMS, ours), 0);
        for (int j = 0; j < SOBOL_MAX_DIMS; j++) {
            if (ldexp((double)ours[j], -SOBOL_BITS) != x[j])
                fail_msg("point %llu dim %d: %.17g, GSL %.17g", (unsigned long long)i, j,
                         ldexp((double)ours[j], -SOBOL_BITS), x[j]);
        }
    }
    gsl_qrng_free(gen);
    assert_int_equal(sampler__sobol_raw(0, SOBOL_MAX_DIMS + 1, ours), -1);
    assert_int_equal(sampler__sobol_raw(UINT64_C(1) << 30, 2, ours), -1);

    /* Shifted points are in [0, 1) and depend on the seed. */
    double u[SOBOL_MAX_DIMS], v[SOBOL_MAX_DIMS];
    for (uint64_t i = 0; i < 1000; i++) {
        assert_int_equal(sampler__sobol_point(i, SOBOL_MAX_DIMS, 7, 0, u), 0);
        assert_int_equal(sampler__sobol_point(i, SOBOL_MAX_DIMS, 8, 0, v), 0);
        int same = 0;
        for (int j = 0; j < SOBOL_MAX_DIMS; j++) {
            assert_true(u[j] >= 0.0 && u[j] < 1.0);
            same += u[j] == v[j];
        }
        assert_true(same < SOBOL_MAX_DIMS);
    }
}

/* Largest |count - expected| over 16 bins of each of `dims` coordinates,
 * and the number of occupied cells of a 16 x 16 grid over the first two. */
static void spread(const char *searcher_text, int *max_dev, int *cells)
{
    enum { DIMS = 4, POINTS = 256, BINS = 16 };
    Space *space = parse_space("{\"a\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"b\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"c\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"d\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    SearcherSpec s = searcher_ok(searcher_text, space);
    int counts[DIMS][BINS] = {{0}};
    int grid[BINS][BINS] = {{0}};
    const char *names[DIMS] = {"a", "b", "c", "d"};
    for (int i = 0; i < POINTS; i++) {
        json_t *config = sampler_config(space, &s, i);
        int bin[DIMS];
        for (int j = 0; j < DIMS; j++) {
            double x = json_real_value(json_object_get(config, names[j]));
            assert_true(x >= 0.0 && x < 1.0);
            bin[j] = (int)(x * BINS);
            counts[j][bin[j]]++;
        }
        grid[bin[0]][bin[1]]++;
        json_decref(config);
    }
    *max_dev = 0;
    *cells = 0;
    for (int j = 0; j < DIMS; j++)
        for (int k = 0; k < BINS; k++)
            *max_dev = abs(counts[j][k] - POINTS / BINS) > *max_dev
                           ? abs(counts[j][k] - POINTS / BINS)
                           : *max_dev;
    for (int k = 0; k < BINS; k++)
        for (int l = 0; l < BINS; l++)
            *cells += grid[k][l] > 0;
    space_free(space);
}

static void test_sobol_spread(void **state)
{
    (void)state;
    int dev, cells;
    for (int seed = 1; seed <= 3; seed++) {
        char text[64];
        snprintf(text, sizeof text, "{\"seed\": %d, \"quasi\": true}", seed);
        spread(text, &dev, &cells);
        print_message("sobol seed %d: max bin deviation %d, cells %d/256\n", seed, dev, cells);
        assert_true(dev <= 2);
        /* The first two Sobol coordinates form a (0, m, 2)-net. */
        assert_int_equal(cells, 256);
    }
    /* Pseudo-random points miss both marks: the checks can fail. */
    spread("{\"seed\": 1}", &dev, &cells);
    print_message("random: max bin deviation %d, cells %d/256\n", dev, cells);
    assert_true(dev > 2);
    assert_true(cells < 200);
}

/* ---- warm_start's helpers: redraws and grid indices ------------------- */

/* sampler_grid_index inverts the grid searcher's enumeration on every kind
 * of enumerable parameter, and refuses values it does not enumerate. */
static void test_grid_index(void **state)
{
    (void)state;
    Space *space = parse_space(
        "{\"g\": {\"type\": \"grid\", \"values\": [{\"k\": 1}, \"s\"]},"
        " \"c\": {\"type\": \"choice\", \"values\": [1, 2.5, true]},"
        " \"r\": {\"type\": \"randint\", \"low\": -2, \"high\": 2},"
        " \"q\": {\"type\": \"qrandint\", \"low\": -6, \"high\": 6, \"q\": 3},"
        " \"l\": {\"type\": \"lograndint\", \"low\": 1, \"high\": 1000, \"grid_points\": 4},"
        " \"u\": {\"type\": \"loguniform\", \"low\": 0.001, \"high\": 1, \"grid_points\": 3},"
        " \"k\": \"const\"}");
    SearcherSpec grid = searcher_ok("{\"type\": \"grid\"}", space);
    int64_t g = total_ok(space, &grid, 1);
    assert_int_equal(g, 2 * 3 * 4 * 5 * 4 * 3);
    for (int64_t n = 0; n < g; n++) {
        json_t *c = sampler_config(space, &grid, n);
        assert_int_equal(sampler_grid_index(space, c, GRID_ORDER_RAY), n);
        json_decref(c);
    }
    json_t *c = sampler_config(space, &grid, 77);
    /* An integer is not the real 2.5's neighbour, nor 1.0 the integer 1. */
    json_t *bad = json_deep_copy(c);
    json_object_set_new(bad, "c", json_real(1.0));
    assert_int_equal(sampler_grid_index(space, bad, GRID_ORDER_RAY), -1);
    json_object_set_new(bad, "c", json_integer(1));
    json_object_set_new(bad, "u", json_real(0.5)); /* in the domain, not a grid point */
    assert_int_equal(sampler_grid_index(space, bad, GRID_ORDER_RAY), -1);
    json_object_set_new(bad, "u", json_real(1.0));
    json_object_set_new(bad, "q", json_integer(4)); /* not a multiple of q */
    assert_int_equal(sampler_grid_index(space, bad, GRID_ORDER_RAY), -1);
    json_object_set_new(bad, "q", json_integer(3));
    json_object_set_new(bad, "k", json_string("other"));
    assert_int_equal(sampler_grid_index(space, bad, GRID_ORDER_RAY), -1);
    json_object_del(bad, "k");
    assert_int_equal(sampler_grid_index(space, bad, GRID_ORDER_RAY), -1);
    json_object_set_new(bad, "k", json_string("const"));
    json_object_set_new(bad, "extra", json_true()); /* ignored */
    assert_true(sampler_grid_index(space, bad, GRID_ORDER_RAY) >= 0);
    json_decref(bad);
    json_decref(c);
    space_free(space);
}

/* A redraw keeps the trial's grid combination, stays in the domains, is a
 * pure function of (seed, number, k), and differs from the first draw. */
static void test_redraw(void **state)
{
    (void)state;
    Space *space = parse_space("{\"g\": {\"type\": \"grid\", \"values\": [1, 2, 3]},"
                               " \"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"c\": {\"type\": \"choice\", \"values\": [\"a\", \"b\"]}}");
    for (int quasi = 0; quasi < 2; quasi++) {
        SearcherSpec s = searcher_ok(quasi ? "{\"seed\": 4, \"quasi\": true}" : "{\"seed\": 4}",
                                     space);
        for (int64_t n = 0; n < 30; n++) {
            json_t *first = sampler_config(space, &s, n);
            for (int64_t k = 1; k <= 3; k++) {
                json_t *a = sampler_redraw(space, &s, n, k);
                json_t *b = sampler_redraw(space, &s, n, k);
                assert_non_null(a);
                assert_true(json_equal(a, b));
                assert_true(json_equal(json_object_get(a, "g"), json_object_get(first, "g")));
                double x = json_real_value(json_object_get(a, "x"));
                assert_true(x >= 0.0 && x < 1.0);
                assert_true(x != json_real_value(json_object_get(first, "x")));
                json_decref(a);
                json_decref(b);
            }
            json_decref(first);
        }
        assert_null(sampler_redraw(space, &s, 0, 0));
        assert_null(sampler_redraw(space, &s, -1, 1));
    }
    Space *one = parse_space("{\"a\": 1}");
    SearcherSpec grid = searcher_ok("{\"type\": \"grid\"}", one);
    assert_null(sampler_redraw(space, &grid, 0, 1));
    space_free(one);
    space_free(space);
}

/* space_config_value: a point's integer for a float domain is a real. */
static void test_config_value(void **state)
{
    (void)state;
    Space *space = parse_space("{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 9},"
                               " \"n\": {\"type\": \"randint\", \"low\": 0, \"high\": 9},"
                               " \"c\": {\"type\": \"choice\", \"values\": [1, 2.5]}}");
    json_t *one = json_integer(1);
    json_t *v = space_config_value(space, "x", one);
    assert_true(json_is_real(v) && json_real_value(v) == 1.0);
    json_decref(v);
    v = space_config_value(space, "n", one);
    assert_ptr_equal(v, one);
    json_decref(v);
    v = space_config_value(space, "c", one);
    assert_ptr_equal(v, one);
    json_decref(v);
    assert_null(space_config_value(space, "nope", one));
    json_decref(one);
    space_free(space);
}

/* ---- nested and conditional spaces ------------------------------------ */

static const char *COND_SPACE =
    "{\"lr\": {\"type\": \"loguniform\", \"low\": 1e-4, \"high\": 1},"
    " \"model\": {\"layers\": {\"type\": \"randint\", \"low\": 1, \"high\": 4}, \"act\": \"relu\"},"
    " \"opt\": {\"type\": \"choice\", \"values\": ["
    "  {\"name\": \"sgd\", \"momentum\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
    "  {\"name\": \"adamw\", \"beta2\": {\"type\": \"uniform\", \"low\": 0.9, \"high\": 1},"
    "   \"wd\": {\"type\": \"choice\", \"values\": [0, 0.01]}}]}}";

/* The branch a config of COND_SPACE took: 0 sgd, 1 adamw; -1 neither. */
static int cond_branch(const json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "opt.name"));
    bool m = json_object_get(c, "opt.momentum") != NULL;
    bool b = json_object_get(c, "opt.beta2") != NULL && json_object_get(c, "opt.wd") != NULL;
    if (name != NULL && strcmp(name, "sgd") == 0 && m && !b && json_object_size(c) == 5)
        return 0;
    if (name != NULL && strcmp(name, "adamw") == 0 && b && !m && json_object_size(c) == 6)
        return 1;
    return -1;
}

static void test_conditional_flatten(void **state)
{
    (void)state;
    Space *space = parse_space(COND_SPACE);
    /* Every key of every branch once, in spec order; the choice itself is
     * no key but has a coordinate (its branch). */
    const char *keys[] = {"lr",           "model.layers", "model.act", "opt.name",
                          "opt.momentum", "opt.beta2",    "opt.wd"};
    assert_int_equal(space_param_count(space), 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(space_param_name(space, i), keys[i]);
    assert_int_equal(space_cube_dims(space), 6);
    assert_true(space_has_param(space, "opt.wd"));
    assert_false(space_has_param(space, "opt"));
    const char *searchers[] = {"{\"seed\": 4}", "{\"seed\": 4, \"quasi\": true}"};
    for (int s = 0; s < 2; s++) {
        SearcherSpec sp = searcher_ok(searchers[s], space);
        int seen[2] = {0, 0};
        for (int t = 0; t < 200; t++) {
            json_t *c = sampler_config(space, &sp, t);
            int b = cond_branch(c);
            assert_true(b >= 0);
            seen[b]++;
            assert_string_equal(json_string_value(json_object_get(c, "model.act")), "relu");
            /* Encoding: the branch's cell, inactive coordinates fixed, and
             * back to the same config. */
            double u[6];
            RungError err;
            assert_int_equal(space_encode(space, c, u, &err), 0);
            assert_true((u[2] < 0.5) == (b == 0));
            if (b == 0) {
                assert_true(u[4] == SPACE_INACTIVE_U && u[5] == SPACE_INACTIVE_U);
            } else {
                assert_true(u[3] == SPACE_INACTIVE_U);
            }
            json_t *back = space_decode(space, u, 0, GRID_ORDER_RAY);
            assert_true(json_equal(back, c));
            /* conform keeps it; keys of the other branch are dropped. */
            json_t *extra = json_deep_copy(c);
            json_object_set_new(extra, b == 0 ? "opt.beta2" : "opt.momentum", json_real(0.95));
            json_t *conf = space_conform(space, extra);
            assert_true(json_equal(conf, c));
            json_decref(conf);
            json_decref(extra);
            json_decref(back);
            json_decref(c);
        }
        assert_true(seen[0] > 60 && seen[1] > 60);
    }
    /* A config of no branch: conform and encode fail, naming the choice. */
    json_t *bad = load("{\"lr\": 0.1, \"model.layers\": 2, \"model.act\": \"relu\","
                       " \"opt.name\": \"adam\", \"opt.momentum\": 0.5}");
    assert_null(space_conform(space, bad));
    double u[6];
    RungError err;
    assert_int_equal(space_encode(space, bad, u, &err), RUNG_E_INVALID_ARGUMENT);
    assert_string_equal(err.field, "config.opt");
    json_decref(bad);
    space_free(space);
}

static void test_conditional_points(void **state)
{
    (void)state;
    Space *space = parse_space(COND_SPACE);
    json_t *sgd = load("{\"lr\": 0.1, \"model.layers\": 2, \"model.act\": \"relu\","
                       " \"opt.name\": \"sgd\", \"opt.momentum\": 0.5}");
    /* A point that names the other branch brings its parameters (the
     * middle of their domains) and drops the config's branch. */
    json_t *point = load("{\"opt.name\": \"adamw\", \"lr\": 0.01}");
    json_t *c = space_lay_over(space, sgd, point);
    assert_int_equal(cond_branch(c), 1);
    assert_true(json_real_value(json_object_get(c, "lr")) == 0.01);
    assert_true(json_real_value(json_object_get(c, "opt.beta2")) == 0.95);
    assert_true(json_real_value(json_object_get(c, "opt.wd")) == 0.01);
    json_decref(c);
    json_decref(point);
    /* A point of the config's own branch keeps the rest of it. */
    point = load("{\"opt.momentum\": 0.25}");
    c = space_lay_over(space, sgd, point);
    assert_int_equal(cond_branch(c), 0);
    assert_true(json_real_value(json_object_get(c, "opt.momentum")) == 0.25);
    assert_true(json_integer_value(json_object_get(c, "model.layers")) == 2);
    json_decref(c);
    json_decref(point);
    /* Checks: a point may name one branch, never two. */
    RungError err;
    point = load("{\"opt.beta2\": 0.95, \"opt.wd\": 0}");
    assert_int_equal(space_check_point(space, point, "points_to_evaluate[0]", &err), 0);
    json_decref(point);
    point = load("{\"opt.momentum\": 0.5, \"opt.beta2\": 0.95}");
    assert_int_equal(space_check_point(space, point, "points_to_evaluate[1]", &err),
                     RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "points_to_evaluate[1]");
    json_decref(point);
    point = load("{\"opt.name\": \"sgd\", \"opt.wd\": 0}");
    assert_int_equal(space_check_point(space, point, "p", &err), RUNG_E_INVALID_SPEC);
    json_decref(point);
    json_decref(sgd);
    space_free(space);
}

/* The grid searcher: each branch's own product, one branch after another. */
static void test_conditional_grid(void **state)
{
    (void)state;
    Space *space = parse_space(
        "{\"a\": {\"type\": \"choice\", \"values\": [1, 2]},"
        " \"opt\": {\"type\": \"choice\", \"values\": ["
        "  {\"n\": \"sgd\", \"m\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1, "
        "\"grid_points\": 3}},"
        "  {\"n\": \"adam\", \"b\": {\"type\": \"choice\", \"values\": [1, 2]},"
        "   \"sub\": {\"type\": \"choice\", \"values\": [{\"k\": 0}, {\"k\": 1, \"w\": "
        "{\"type\": \"randint\", \"low\": 0, \"high\": 2}}]}}]}}");
    for (int order = 0; order < 2; order++) {
        SearcherSpec s = searcher_ok(order == 0 ? "{\"type\": \"grid\"}"
                                                : "{\"type\": \"grid\", \"grid_order\": \"spec\"}",
                                     space);
        assert_int_equal(s.grid_order, order == 0 ? GRID_ORDER_RAY : GRID_ORDER_SPEC);
        /* 2 x (3 + 2 x (1 + 2)) */
        int64_t total = total_ok(space, &s, 1);
        assert_int_equal(total, 18);
        json_t *all[18];
        for (int t = 0; t < 18; t++) {
            all[t] = sampler_config(space, &s, t);
            assert_non_null(all[t]);
            assert_int_equal(sampler_grid_index(space, all[t], s.grid_order), t);
            for (int k = 0; k < t; k++)
                assert_false(json_equal(all[k], all[t]));
        }
        if (order == 0) {
            /* Ray's: a fastest (a < opt); opt's digit runs through the sgd
             * branch's three points, then adam's six, where b (opt.b <
             * opt.n < opt.sub) is the fastest. */
            assert_int_equal(json_integer_value(json_object_get(all[0], "a")), 1);
            assert_int_equal(json_integer_value(json_object_get(all[1], "a")), 2);
            assert_string_equal(json_string_value(json_object_get(all[5], "opt.n")), "sgd");
            assert_string_equal(json_string_value(json_object_get(all[6], "opt.n")), "adam");
            assert_int_equal(json_integer_value(json_object_get(all[6], "opt.b")), 1);
            assert_int_equal(json_integer_value(json_object_get(all[8], "opt.b")), 2);
            assert_null(json_object_get(all[8], "opt.sub.w"));
            assert_non_null(json_object_get(all[10], "opt.sub.w"));
        } else {
            /* The spec's: the first parameter slowest; the sgd branch's
             * three points first. */
            assert_int_equal(json_integer_value(json_object_get(all[8], "a")), 1);
            assert_int_equal(json_integer_value(json_object_get(all[9], "a")), 2);
            assert_string_equal(json_string_value(json_object_get(all[2], "opt.n")), "sgd");
            assert_string_equal(json_string_value(json_object_get(all[3], "opt.n")), "adam");
            assert_null(json_object_get(all[3], "opt.sub.w"));
            assert_non_null(json_object_get(all[4], "opt.sub.w"));
        }
        for (int t = 0; t < 18; t++)
            json_decref(all[t]);
    }
    space_free(space);
}

/* space_features (rungd's importance and surface): a feature per config
 * key that varies, in spec order (no constant, single-valued choice or
 * conditional choice); a config's row holds cube coordinates (a log
 * domain's on its log scale), category indices and NAN where its branch
 * lacks the parameter. */
static void test_features(void **state)
{
    (void)state;
    Space *space = parse_space(
        "{\"lr\":{\"type\":\"loguniform\",\"low\":1e-4,\"high\":1},"
        "\"k\":3,\"one\":{\"type\":\"choice\",\"values\":[\"x\"]},"
        "\"opt\":{\"type\":\"choice\",\"values\":[\"sgd\",\"adam\",\"rms\"]},"
        "\"n\":{\"type\":\"randint\",\"low\":1,\"high\":5},"
        "\"m\":{\"type\":\"choice\",\"values\":[{\"p\":{\"type\":\"uniform\","
        "\"low\":0,\"high\":2}},{\"q\":{\"type\":\"uniform\",\"low\":0,\"high\":1}}]}}");
    SpaceFeature f[SPACE_MAX_PARAMS];
    int nf = space_features(space, f);
    const char *names[] = {"lr", "opt", "n", "m.p", "m.q"};
    assert_int_equal(nf, 5);
    for (int k = 0; k < nf; k++)
        assert_string_equal(f[k].name, names[k]);
    assert_true(f[0].log);
    assert_int_equal(f[0].categories, 0);
    assert_int_equal(f[1].categories, 3);
    assert_false(f[2].log);
    assert_true(f[2].low == 1.0 && f[2].high == 4.0); /* randint excludes high */
    assert_true(f[3].low == 0.0 && f[3].high == 2.0);
    json_t *c = load("{\"lr\":0.01,\"k\":3,\"one\":\"x\",\"opt\":\"rms\",\"n\":2,\"m.p\":0.5}");
    double x[5];
    assert_int_equal(space_feature_row(space, f, nf, c, x), 0);
    assert_true(fabs(x[0] - 0.5) < 1e-12); /* log10(0.01) is half way from -4 to 0 */
    assert_true(x[1] == 2.0);
    assert_true(x[2] > 0.25 && x[2] < 0.5); /* 2 of 1..4: the second of four cells */
    assert_true(fabs(x[3] - 0.25) < 1e-12);
    assert_true(isnan(x[4]));
    assert_true(fabs(space_feature_coord(space, &f[0], 0.01) - 0.5) < 1e-12);
    assert_true(fabs(space_feature_coord(space, &f[3], 1.0) - 0.5) < 1e-12);
    assert_true(isnan(space_feature_coord(space, &f[1], 1.0)));
    json_decref(c);
    c = load("{\"lr\":0.01,\"opt\":\"none\",\"n\":2,\"m.p\":0.5}");
    assert_int_equal(space_feature_row(space, f, nf, c, x), -1);
    json_decref(c);
    space_free(space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_domains_bounds_and_round_trip),
        cmocka_unit_test(test_decode_edges),
        cmocka_unit_test(test_loguniform_is_uniform_in_log_space),
        cmocka_unit_test(test_integer_distributions),
        cmocka_unit_test(test_normal_distributions),
        cmocka_unit_test(test_qlograndint),
        cmocka_unit_test(test_check_value_new_domains),
        cmocka_unit_test(test_grid_trial_counts),
        cmocka_unit_test(test_grid_order),
        cmocka_unit_test(test_grid_order_ray_nested),
        cmocka_unit_test(test_grid_points),
        cmocka_unit_test(test_invalid_spaces),
        cmocka_unit_test(test_invalid_searchers),
        cmocka_unit_test(test_total_trials_limits),
        cmocka_unit_test(test_searcher_defaults),
        cmocka_unit_test(test_constants_and_order),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_sobol_matches_gsl),
        cmocka_unit_test(test_sobol_spread),
        cmocka_unit_test(test_grid_index),
        cmocka_unit_test(test_redraw),
        cmocka_unit_test(test_config_value),
        cmocka_unit_test(test_conditional_flatten),
        cmocka_unit_test(test_conditional_points),
        cmocka_unit_test(test_conditional_grid),
        cmocka_unit_test(test_auto_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
