/* W&B sweeps as Rung specs: see wandb.h. Each function mirrors the one of
 * python/rung/convert.py named in its comment, check for check, so that
 * both refuse the same sweeps naming the same field. */
#include "wandb.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INTERPRETER "python3"            /* what ${interpreter} becomes (convert.py) */
#define GRID_VALUES_MAX 10000            /* values of one grid domain (docs/api.md) */
#define EXACT_INT_MAX 9007199254740992.0 /* 2^53: integer bounds a double holds */
#define PATH_MAX_LEN 320

typedef struct {
    char *buf; /* the caller's */
    size_t len;
} Err;

static int fail(Err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (e->len > 0)
        vsnprintf(e->buf, e->len, fmt, ap);
    va_end(ap);
    return -1;
}

/* A double as Python's repr writes it (the shortest digits that read back
 * the same), so that messages and argv items match convert.py's. */
static void fmt_double(double x, char *out, size_t size)
{
    char digits[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(digits, sizeof digits, "%.*e", p - 1, x);
        if (strtod(digits, NULL) == x)
            break;
    }
    snprintf(digits, sizeof digits, "%.*e", p - 1, x);
    int exp10 = atoi(strchr(digits, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16) {
        int decimals = p - 1 - exp10 > 0 ? p - 1 - exp10 : 0;
        snprintf(out, size, "%.*f%s", decimals, x, decimals == 0 ? ".0" : "");
    } else {
        snprintf(out, size, "%s", digits);
    }
}

/* A JSON number as convert.py's messages write it. */
static void fmt_json_num(const json_t *v, char *out, size_t size)
{
    if (json_is_integer(v))
        snprintf(out, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        fmt_double(json_number_value(v), out, size);
}

static bool is_number(const json_t *v)
{
    return json_is_integer(v) || json_is_real(v);
}

/* convert.py's _describe, for "not X" in messages. */
static void describe(const json_t *v, char *out, size_t size)
{
    if (v == NULL || json_is_null(v))
        snprintf(out, size, "null");
    else if (json_is_boolean(v))
        snprintf(out, size, "the boolean %s", json_is_true(v) ? "true" : "false");
    else if (json_is_string(v))
        snprintf(out, size, "the string '%.60s'", json_string_value(v));
    else if (json_is_array(v))
        snprintf(out, size, "a list");
    else if (json_is_object(v))
        snprintf(out, size, "a mapping");
    else if (json_is_integer(v))
        snprintf(out, size, "int %" JSON_INTEGER_FORMAT, json_integer_value(v));
    else {
        char num[40];
        fmt_double(json_real_value(v), num, sizeof num);
        snprintf(out, size, "float %s", num);
    }
}

/* convert.py's _number: v must be a number. */
static int number(const json_t *v, const char *path, double *out, Err *e)
{
    char d[96];
    if (!is_number(v)) {
        describe(v, d, sizeof d);
        return fail(e, "%s: must be a number, not %s", path, d);
    }
    *out = json_number_value(v);
    return 0;
}

/* convert.py's _integer: an integer, or a real that is one. */
static int integer(const json_t *v, const char *path, json_int_t *out, Err *e)
{
    double d;
    if (number(v, path, &d, e) != 0)
        return -1;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (d != floor(d) || fabs(d) > EXACT_INT_MAX) {
        char num[40];
        fmt_double(d, num, sizeof num);
        return fail(e, "%s: must be an integer, not %s", path, num);
    }
    *out = (json_int_t)d;
    return 0;
}

static json_t *number_json(double x, bool as_integer)
{
    return as_integer ? json_integer((json_int_t)x) : json_real(x);
}

/* ---- metric: convert.py's _wandb_metric ---- */

static int wandb_metric(const json_t *m, json_t *spec, json_t **stop, Err *e)
{
    char d[96];
    if (!json_is_object(m)) {
        describe(m, d, sizeof d);
        return fail(e, "metric: must be a mapping with name and goal, not %s", d);
    }
    static const char *const keys[] = {"name", "goal", "target", "impute", "impute_while_running",
                                       NULL};
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)m, key, v) {
        bool known = false;
        for (int i = 0; keys[i] != NULL; i++)
            known |= strcmp(key, keys[i]) == 0;
        if (!known)
            return fail(e,
                        "metric.%s: not a key of a W&B metric (name, goal, target, impute, "
                        "impute_while_running)",
                        key);
    }
    const json_t *name = json_object_get(m, "name");
    if (!json_is_string(name) || json_string_length(name) == 0) {
        describe(name, d, sizeof d);
        return fail(e, "metric.name: the metric's name is required (a string), not %s", d);
    }
    const json_t *goal = json_object_get(m, "goal");
    const char *g = goal == NULL ? "minimize" : json_string_value(goal);
    if (g == NULL || (strcmp(g, "minimize") != 0 && strcmp(g, "maximize") != 0)) {
        describe(goal, d, sizeof d);
        return fail(e, "metric.goal: must be minimize or maximize, not %s", d);
    }
    json_object_set_new(spec, "metric", json_copy((json_t *)name));
    json_object_set_new(spec, "mode", json_string(strcmp(g, "minimize") == 0 ? "min" : "max"));
    const json_t *target = json_object_get(m, "target");
    if (target != NULL && !json_is_null(target)) {
        double t;
        if (number(target, "metric.target", &t, e) != 0)
            return -1;
        *stop = json_pack("{s:O}", "metric_threshold", target);
    }
    const json_t *impute = json_object_get(m, "impute");
    if (impute != NULL &&
        !(json_is_string(impute) && strcmp(json_string_value(impute), "worst") == 0)) {
        describe(impute, d, sizeof d);
        return fail(e,
                    "metric.impute: Rung's bayes searcher counts a failed trial as the worst "
                    "value seen (impute: worst); %s is not supported",
                    d);
    }
    const json_t *running = json_object_get(m, "impute_while_running");
    if (running != NULL && !json_is_false(running) &&
        !(json_is_string(running) && strcmp(json_string_value(running), "false") == 0))
        return fail(e, "metric.impute_while_running: not supported (Rung's bayes searcher takes "
                       "running trials into account by itself)");
    return 0;
}

/* ---- parameters: convert.py's _wandb_parameter ---- */

typedef struct {
    const char *name;
    const char *keys[4];   /* allowed besides distribution; NULL-ended */
    int required;          /* how many of keys, from the first, are required */
    const char *no_domain; /* Rung has no such domain: its words; else NULL */
} Distribution;

static const Distribution DISTRIBUTIONS[] = {
    {"constant", {"value", NULL}, 1, NULL},
    {"categorical", {"values", "probabilities", NULL}, 1, NULL},
    {"categorical_w_probabilities", {"values", "probabilities", NULL}, 2, NULL},
    {"int_uniform", {"min", "max", NULL}, 2, NULL},
    {"uniform", {"min", "max", NULL}, 2, NULL},
    {"q_uniform", {"min", "max", "q", NULL}, 2, NULL},
    {"log_uniform", {"min", "max", NULL}, 2, NULL},
    {"log_uniform_values", {"min", "max", NULL}, 2, NULL},
    {"q_log_uniform", {"min", "max", "q", NULL}, 2, NULL},
    {"q_log_uniform_values", {"min", "max", "q", NULL}, 2, NULL},
    {"inv_log_uniform", {"min", "max", NULL}, 2, NULL},
    {"inv_log_uniform_values", {"min", "max", NULL}, 2, NULL},
    {"normal", {"mu", "sigma", NULL}, 0, NULL},
    {"q_normal", {"mu", "sigma", "q", NULL}, 0, NULL},
    {"log_normal", {"mu", "sigma", NULL}, 0, "log-normal"},
    {"q_log_normal", {"mu", "sigma", "q", NULL}, 0, "quantized log-normal"},
    {"beta", {"a", "b", NULL}, 0, "beta"},
    {"q_beta", {"a", "b", "q", NULL}, 0, "quantized beta"},
};
#define N_DISTRIBUTIONS (sizeof DISTRIBUTIONS / sizeof DISTRIBUTIONS[0])

static const char DIST_NAMES[] =
    "constant, categorical, categorical_w_probabilities, int_uniform, uniform, q_uniform, "
    "log_uniform, log_uniform_values, q_log_uniform, q_log_uniform_values, inv_log_uniform, "
    "inv_log_uniform_values, normal, q_normal, log_normal, q_log_normal, beta, q_beta";
static const char RUNG_DOMAINS[] =
    "its domains are uniform, quniform, loguniform, qloguniform, randint, qrandint, "
    "lograndint, qlograndint, normal, qnormal, choice and grid (docs/api.md, search_space)";

static const Distribution *find_distribution(const char *name)
{
    for (size_t i = 0; i < N_DISTRIBUTIONS; i++)
        if (strcmp(DISTRIBUTIONS[i].name, name) == 0)
            return &DISTRIBUTIONS[i];
    return NULL;
}

/* convert.py's _infer_distribution. */
static const char *infer_distribution(const json_t *p, const char *path, Err *e)
{
    if (json_object_get(p, "values") != NULL)
        return json_object_get(p, "probabilities") != NULL ? "categorical_w_probabilities"
                                                           : "categorical";
    if (json_object_get(p, "value") != NULL)
        return "constant";
    const json_t *lo = json_object_get(p, "min"), *hi = json_object_get(p, "max");
    if (lo != NULL && hi != NULL)
        return json_is_integer(lo) && json_is_integer(hi) ? "int_uniform" : "uniform";
    fail(e, "%s: a parameter needs values, value, min and max, or a distribution", path);
    return NULL;
}

/* A constant as the API writes it: a mapping as a grid of one value. */
static json_t *constant_domain(const json_t *v)
{
    json_t *c = json_deep_copy(v);
    if (json_is_object(c))
        return json_pack("{s:s, s:[o]}", "type", "grid", "values", c);
    return c;
}

/* x as an exact decimal, mant · 10^exp10, from its shortest repr (as
 * convert.py's Decimal(repr(x))). */
static void decimal_of(double x, long long *mant, int *exp10)
{
    char digits[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(digits, sizeof digits, "%.*e", p - 1, x);
        if (strtod(digits, NULL) == x)
            break;
    }
    snprintf(digits, sizeof digits, "%.*e", p - 1, x);
    long long m = 0;
    const char *c = digits;
    bool neg = *c == '-';
    c += neg;
    for (; *c != 'e'; c++)
        if (*c >= '0' && *c <= '9')
            m = m * 10 + (*c - '0');
    *mant = neg ? -m : m;
    *exp10 = atoi(c + 1) - (p - 1);
}

/* convert.py's _decimal_steps: numpy.arange(lo, hi, q) without its
 * rounding noise, lo + k*q below hi in decimal arithmetic. */
static json_t *decimal_steps(const json_t *jlo, const json_t *jhi, const json_t *jq,
                             const char *path, Err *e)
{
    json_t *out = json_array();
    if (json_is_integer(jlo) && json_is_integer(jhi) && json_is_integer(jq)) {
        json_int_t lo = json_integer_value(jlo), hi = json_integer_value(jhi),
                   q = json_integer_value(jq), span;
        bool wide = __builtin_sub_overflow(hi, lo, &span);
        json_int_t count = wide || span <= 0 ? 0 : span / q + (span % q != 0);
        if (wide || count > GRID_VALUES_MAX) {
            json_decref(out);
            fail(e, "%s: %.0f grid values, more than Rung's %d for one parameter", path,
                 ceil(((double)hi - (double)lo) / (double)q), GRID_VALUES_MAX);
            return NULL;
        }
        for (json_int_t k = 0; k < count; k++) /* lo + k*q < hi: no overflow */
            json_array_append_new(out, json_integer(lo + k * q));
        return out;
    }
    long long m[3];
    int x[3];
    decimal_of(json_number_value(jlo), &m[0], &x[0]);
    decimal_of(json_number_value(jhi), &m[1], &x[1]);
    decimal_of(json_number_value(jq), &m[2], &x[2]);
    int common = x[0] < x[1] ? x[0] : x[1];
    common = x[2] < common ? x[2] : common;
    for (int i = 0; i < 3; i++) {
        for (int k = x[i]; k > common; k--) {
            if (__builtin_mul_overflow(m[i], 10LL, &m[i])) {
                json_decref(out);
                fail(e, "%s: min, max and q are too far apart for a grid", path);
                return NULL;
            }
        }
    }
    long long span;
    bool wide = __builtin_sub_overflow(m[1], m[0], &span);
    long long count = wide ? GRID_VALUES_MAX + 1 : span <= 0 ? 0 : span / m[2] + (span % m[2] != 0);
    if (count > GRID_VALUES_MAX) {
        json_decref(out);
        fail(e, "%s: %lld grid values, more than Rung's %d for one parameter", path, count,
             GRID_VALUES_MAX);
        return NULL;
    }
    for (long long k = 0; k < count; k++) {
        char text[64];
        snprintf(text, sizeof text, "%llde%d", m[0] + k * m[2], common);
        json_array_append_new(out, json_real(strtod(text, NULL)));
    }
    return out;
}

/* convert.py's _exp: exp(x), refused where a double cannot hold it. */
static int exp_of(double x, const char *path, double *out, Err *e)
{
    *out = exp(x);
    if (*out == 0.0 || !isfinite(*out)) {
        char num[40];
        fmt_double(x, num, sizeof num);
        return fail(e,
                    "%s: exp(%s) is out of a double's range (W&B's log_uniform takes "
                    "natural-log exponents; log_uniform_values takes the values)",
                    path, num);
    }
    return 0;
}

/* convert.py's _integer_q: a q_ distribution whose q is an integer, over
 * the multiples of q W&B can draw (round(x / q) * q, halves to even: rint). */
static json_t *integer_q(double low, double high, json_int_t q, const char *kind, const char *path,
                         Err *e)
{
    double lo_r = rint(low / (double)q), hi_r = rint(high / (double)q);
    char num[40];
    if (fabs(lo_r * (double)q) > EXACT_INT_MAX) {
        fmt_double(low, num, sizeof num);
        fail(e, "%s.min: %s rounds to %.0f, too large for an integer domain (at most 2^53)", path,
             num, lo_r * (double)q);
        return NULL;
    }
    if (fabs(hi_r * (double)q) > EXACT_INT_MAX) {
        fmt_double(high, num, sizeof num);
        fail(e, "%s.max: %s rounds to %.0f, too large for an integer domain (at most 2^53)", path,
             num, hi_r * (double)q);
        return NULL;
    }
    json_int_t lo_q = (json_int_t)lo_r * q, hi_q = (json_int_t)hi_r * q;
    if (strcmp(kind, "qlograndint") == 0 && lo_q <= 0) {
        fmt_double(low, num, sizeof num);
        fail(e,
             "%s.min: %s rounds to %lld with q %lld, which W&B can draw but a log-uniform "
             "integer domain cannot hold (its values are > 0); raise min to q or more",
             path, num, (long long)lo_q, (long long)q);
        return NULL;
    }
    if (lo_q == hi_q)
        return json_integer(lo_q);
    return json_pack("{s:s, s:I, s:I, s:I}", "type", kind, "low", (json_int_t)lo_q, "high",
                     (json_int_t)hi_q, "q", q);
}

/* convert.py's _wandb_normal: normal and q_normal, W&B's defaults. */
static json_t *wandb_normal(const json_t *p, const char *path, const json_t *q, Err *e)
{
    char field[PATH_MAX_LEN + 16];
    const json_t *mu = json_object_get(p, "mu"), *sigma = json_object_get(p, "sigma");
    json_t *mean = mu ? json_copy((json_t *)mu) : number_json(0, q != NULL);
    json_t *sd = sigma ? json_copy((json_t *)sigma) : number_json(1, q != NULL);
    double m, s;
    snprintf(field, sizeof field, "%s.mu", path);
    int rc = number(mean, field, &m, e);
    snprintf(field, sizeof field, "%s.sigma", path);
    if (rc == 0)
        rc = number(sd, field, &s, e);
    if (rc == 0 && !(s > 0)) {
        char num[40];
        fmt_json_num(sd, num, sizeof num);
        rc = fail(e, "%s.sigma: must be > 0, not %s", path, num);
    }
    if (rc != 0) {
        json_decref(mean);
        json_decref(sd);
        return NULL;
    }
    if (q == NULL)
        return json_pack("{s:s, s:o, s:o}", "type", "normal", "mean", mean, "sd", sd);
    return json_pack("{s:s, s:o, s:o, s:O}", "type", "qnormal", "mean", mean, "sd", sd, "q", q);
}

/* values of a categorical parameter. */
static json_t *categorical(const json_t *values, const char *path, bool grid, Err *e)
{
    char d[96];
    if (!json_is_array(values) || json_array_size(values) == 0) {
        describe(values, d, sizeof d);
        fail(e, "%s.values: must be a non-empty list, not %s", path, d);
        return NULL;
    }
    if (grid) {
        if (json_array_size(values) > GRID_VALUES_MAX) {
            fail(e, "%s.values: %zu values, more than Rung's %d for one parameter", path,
                 json_array_size(values), GRID_VALUES_MAX);
            return NULL;
        }
        return json_pack("{s:s, s:o}", "type", "grid", "values", json_deep_copy(values));
    }
    size_t i;
    const json_t *v;
    json_array_foreach(values, i, v) {
        if (json_is_null(v) || json_is_array(v) || json_is_object(v)) {
            describe(v, d, sizeof d);
            fail(e, "%s.values[%zu]: Rung's choice takes numbers, strings and booleans, not %s",
                 path, i, d);
            return NULL;
        }
    }
    return json_pack("{s:s, s:o}", "type", "choice", "values", json_deep_copy(values));
}

/* The numeric distributions, min and max given (the rest of _wandb_parameter). */
static json_t *numeric(const json_t *p, const char *dist, const char *path, bool grid,
                       const json_t *q, Err *e)
{
    char field[PATH_MAX_LEN + 16], num[40], num2[40];
    const json_t *jlo = json_object_get(p, "min"), *jhi = json_object_get(p, "max");
    double lo, hi;
    snprintf(field, sizeof field, "%s.min", path);
    if (number(jlo, field, &lo, e) != 0)
        return NULL;
    snprintf(field, sizeof field, "%s.max", path);
    if (number(jhi, field, &hi, e) != 0)
        return NULL;
    if (strcmp(dist, "int_uniform") == 0) {
        json_int_t ilo, ihi;
        snprintf(field, sizeof field, "%s.min", path);
        if (integer(jlo, field, &ilo, e) != 0)
            return NULL;
        snprintf(field, sizeof field, "%s.max", path);
        if (integer(jhi, field, &ihi, e) != 0)
            return NULL;
        if (fabs((double)ilo) > EXACT_INT_MAX || fabs((double)ihi) > EXACT_INT_MAX) {
            fail(e, "%s: min and max must be within 2^53", path);
            return NULL;
        }
        if (ilo > ihi) {
            fail(e, "%s.max: must be >= min (%lld), not %lld", path, (long long)ilo,
                 (long long)ihi);
            return NULL;
        }
        if (grid) {
            if (ihi - ilo + 1 > GRID_VALUES_MAX) {
                fail(e, "%s: %lld grid values, more than Rung's %d for one parameter", path,
                     (long long)(ihi - ilo + 1), GRID_VALUES_MAX);
                return NULL;
            }
            json_t *values = json_array();
            for (json_int_t v = ilo; v <= ihi; v++)
                json_array_append_new(values, json_integer(v));
            return json_pack("{s:s, s:o}", "type", "grid", "values", values);
        }
        /* W&B includes max; Rung's randint excludes its high. */
        return json_pack("{s:s, s:I, s:I}", "type", "randint", "low", ilo, "high", ihi + 1);
    }
    if (strcmp(dist, "q_uniform") == 0 && grid) {
        json_t *values = decimal_steps(jlo, jhi, q, path, e);
        if (values == NULL)
            return NULL;
        if (json_array_size(values) == 0) {
            json_decref(values);
            fmt_json_num(jlo, num, sizeof num);
            fmt_json_num(jhi, num2, sizeof num2);
            fail(e, "%s.max: no grid value: min (%s) is not below max (%s)", path, num, num2);
            return NULL;
        }
        return json_pack("{s:s, s:o}", "type", "grid", "values", values);
    }
    if (grid) {
        fail(e,
             "%s.distribution: method grid enumerates values, value, int_uniform and q_uniform "
             "parameters (as W&B's grid search), not %s",
             path, dist);
        return NULL;
    }
    if (lo >= hi) {
        fmt_json_num(jlo, num, sizeof num);
        fmt_json_num(jhi, num2, sizeof num2);
        fail(e, "%s.max: must be greater than min (%s), not %s", path, num, num2);
        return NULL;
    }
    if (strcmp(dist, "uniform") == 0)
        return json_pack("{s:s, s:O, s:O}", "type", "uniform", "low", jlo, "high", jhi);
    if (strcmp(dist, "q_uniform") == 0) {
        if (json_is_integer(q))
            return integer_q(lo, hi, json_integer_value(q), "qrandint", path, e);
        return json_pack("{s:s, s:O, s:O, s:O}", "type", "quniform", "low", jlo, "high", jhi, "q",
                         q);
    }
    json_t *low, *high;
    if (strstr(dist, "_values") != NULL) {
        if (!(lo > 0)) {
            fmt_double(lo, num, sizeof num);
            fail(e, "%s.min: must be > 0 for %s, not %s", path, dist, num);
            return NULL;
        }
        low = json_copy((json_t *)jlo);
        high = json_copy((json_t *)jhi);
    } else {
        bool inv = strncmp(dist, "inv_", 4) == 0;
        double a, b;
        char fa[PATH_MAX_LEN + 16], fb[PATH_MAX_LEN + 16];
        snprintf(fa, sizeof fa, "%s.%s", path, inv ? "max" : "min");
        snprintf(fb, sizeof fb, "%s.%s", path, inv ? "min" : "max");
        if (exp_of(inv ? -hi : lo, fa, &a, e) != 0 || exp_of(inv ? -lo : hi, fb, &b, e) != 0)
            return NULL;
        low = json_real(a);
        high = json_real(b);
    }
    if (strncmp(dist, "q_", 2) == 0) {
        if (json_is_integer(q)) {
            json_t *d = integer_q(json_number_value(low), json_number_value(high),
                                  json_integer_value(q), "qlograndint", path, e);
            json_decref(low);
            json_decref(high);
            return d;
        }
        return json_pack("{s:s, s:o, s:o, s:O}", "type", "qloguniform", "low", low, "high", high,
                         "q", q);
    }
    return json_pack("{s:s, s:o, s:o}", "type", "loguniform", "low", low, "high", high);
}

static json_t *wandb_parameter(const char *name, const json_t *p, bool grid, Err *e)
{
    char path[PATH_MAX_LEN], d[96];
    snprintf(path, sizeof path, "parameters.%s", name);
    if (!json_is_object(p)) {
        describe(p, d, sizeof d);
        fail(e, "%s: a parameter is a mapping (values, value, distribution, min, max, ...), not %s",
             path, d);
        return NULL;
    }
    if (json_object_get(p, "parameters") != NULL) {
        fail(e,
             "%s.parameters: nested parameters (W&B's nested search spaces) are not supported "
             "by Rung yet in a sweep file: give each nested parameter its own top-level name, or "
             "write the experiment as Rung's spec, whose search_space takes sub-spaces "
             "(docs/api.md, \"Nested and conditional spaces\")",
             path);
        return NULL;
    }
    const json_t *jdist = json_object_get(p, "distribution");
    const char *dist;
    if (jdist == NULL || json_is_null(jdist)) {
        dist = infer_distribution(p, path, e);
        if (dist == NULL)
            return NULL;
    } else if (!json_is_string(jdist) || find_distribution(json_string_value(jdist)) == NULL) {
        describe(jdist, d, sizeof d);
        fail(e, "%s.distribution: %s is not a W&B distribution (%s)", path, d, DIST_NAMES);
        return NULL;
    } else {
        dist = json_string_value(jdist);
    }
    const Distribution *dd = find_distribution(dist);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)p, key, v) {
        bool ok = strcmp(key, "distribution") == 0;
        for (int i = 0; dd->keys[i] != NULL; i++)
            ok |= strcmp(key, dd->keys[i]) == 0;
        if (!ok) {
            char allowed[64] = "";
            for (int i = 0; dd->keys[i] != NULL; i++)
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s",
                         i ? ", " : "", dd->keys[i]);
            fail(e, "%s.%s: distribution %s takes %s, not %s", path, key, dist, allowed, key);
            return NULL;
        }
    }
    if (dd->no_domain != NULL) {
        fail(e, "%s.distribution: %s: Rung has no %s domain yet; %s", path, dist, dd->no_domain,
             RUNG_DOMAINS);
        return NULL;
    }
    for (int i = 0; i < dd->required; i++) {
        if (json_object_get(p, dd->keys[i]) == NULL) {
            fail(e, "%s.%s: required by distribution %s", path, dd->keys[i], dist);
            return NULL;
        }
    }
    if (json_object_get(p, "probabilities") != NULL) {
        fail(e,
             "%s.probabilities: Rung draws a choice's values with equal probability; weighted "
             "values are not supported yet",
             path);
        return NULL;
    }
    if (strcmp(dist, "constant") == 0)
        return constant_domain(json_object_get(p, "value"));
    if (strcmp(dist, "categorical") == 0)
        return categorical(json_object_get(p, "values"), path, grid, e);

    /* W&B's q defaults to 1.0, a real: its values are then reals. */
    bool has_q = false;
    for (int i = 0; dd->keys[i] != NULL; i++)
        has_q |= strcmp(dd->keys[i], "q") == 0;
    json_t *q = NULL;
    if (has_q) {
        const json_t *jq = json_object_get(p, "q");
        q = jq ? json_copy((json_t *)jq) : json_real(1.0);
        char field[PATH_MAX_LEN + 8];
        snprintf(field, sizeof field, "%s.q", path);
        double qv;
        if (number(q, field, &qv, e) != 0 || !(qv > 0)) {
            char num[40];
            fmt_json_num(q, num, sizeof num);
            if (is_number(q))
                fail(e, "%s.q: must be > 0, not %s", path, num);
            json_decref(q);
            return NULL;
        }
    }
    json_t *out;
    if (strcmp(dist, "normal") == 0 || strcmp(dist, "q_normal") == 0)
        out = wandb_normal(p, path, q, e);
    else
        out = numeric(p, dist, path, grid, q, e);
    json_decref(q);
    return out;
}

/* ---- early_terminate: convert.py's _wandb_scheduler ---- */

static int optional_integer(const json_t *et, const char *key, json_int_t *out, bool *given, Err *e)
{
    const json_t *v = json_object_get(et, key);
    *given = v != NULL && !json_is_null(v);
    if (!*given)
        return 0;
    char field[64];
    snprintf(field, sizeof field, "early_terminate.%s", key);
    if (integer(v, field, out, e) != 0)
        return -1;
    if (*out < 1 && strcmp(key, "s") != 0)
        return fail(e, "%s: must be >= 1, not %lld", field, (long long)*out);
    return 0;
}

static json_t *wandb_scheduler(const json_t *et, Err *e)
{
    char d[96], num[40];
    if (!json_is_object(et)) {
        describe(et, d, sizeof d);
        fail(e, "early_terminate: must be a mapping, not %s", d);
        return NULL;
    }
    static const char *const keys[] = {"type", "min_iter", "max_iter", "s", "eta", "strict", NULL};
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)et, key, v) {
        bool known = false;
        for (int i = 0; keys[i] != NULL; i++)
            known |= strcmp(key, keys[i]) == 0;
        if (!known) {
            fail(e,
                 "early_terminate.%s: not a key of W&B's hyperband (type, min_iter, max_iter, s, "
                 "eta, strict)",
                 key);
            return NULL;
        }
    }
    const json_t *type = json_object_get(et, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "hyperband") != 0) {
        describe(type, d, sizeof d);
        fail(e, "early_terminate.type: W&B's stopping algorithm is hyperband, not %s", d);
        return NULL;
    }
    const json_t *jeta = json_object_get(et, "eta");
    json_t *eta_json = jeta ? json_copy((json_t *)jeta) : json_integer(3);
    double eta;
    if (number(eta_json, "early_terminate.eta", &eta, e) != 0 || !(eta > 1)) {
        if (is_number(eta_json)) {
            fmt_json_num(eta_json, num, sizeof num);
            fail(e, "early_terminate.eta: must be > 1, not %s", num);
        }
        json_decref(eta_json);
        return NULL;
    }
    const json_t *strict = json_object_get(et, "strict"); /* W&B's default: true */
    const char *why = NULL;
    if (strict != NULL && !json_is_boolean(strict)) {
        describe(strict, d, sizeof d);
        fail(e, "early_terminate.strict: must be a boolean, not %s", d);
        why = "";
    } else if (json_is_false(strict)) {
        why = "";
        fail(e, "early_terminate.strict: false is W&B's lenient rule (a run's best value so far "
                "against a band's threshold), which Rung's schedulers do not have; Rung's asha "
                "judges the value at the rung, as W&B's strict: true (its default): leave strict "
                "out or set it true");
    }
    json_int_t min_iter = 0, max_iter = 0, s = 0;
    bool has_min, has_max, has_s;
    if (why != NULL || optional_integer(et, "min_iter", &min_iter, &has_min, e) != 0 ||
        optional_integer(et, "max_iter", &max_iter, &has_max, e) != 0) {
        json_decref(eta_json);
        return NULL;
    }
    has_s = json_object_get(et, "s") != NULL && !json_is_null(json_object_get(et, "s"));
    json_t *grace = NULL, *max_t = NULL;
    if (has_max && has_s) {
        /* W&B's bands: int(max_iter / eta^i), i = 1 ... s, while >= 1. */
        if (optional_integer(et, "s", &s, &has_s, e) != 0) {
            json_decref(eta_json);
            return NULL;
        }
        double band = (double)max_iter;
        long long lowest = 0, highest = 0;
        for (json_int_t i = 0; i < s; i++) {
            band /= eta;
            if (band < 1)
                break;
            long long b = (long long)band;
            if (highest == 0)
                highest = b;
            lowest = b;
        }
        if (highest == 0) {
            fmt_json_num(eta_json, num, sizeof num);
            fail(e,
                 "early_terminate.s: no bracket: max_iter / eta (%lld / %s) is below 1, or s "
                 "< 1",
                 (long long)max_iter, num);
            json_decref(eta_json);
            return NULL;
        }
        grace = json_integer(lowest);
        max_t = json_integer(highest);
    } else if (!has_min && has_max) {
        fail(e, "early_terminate.s: W&B's hyperband needs s (its number of brackets) with "
                "max_iter and no min_iter");
    } else if (!has_min) {
        fail(e, "early_terminate.min_iter: W&B's hyperband needs min_iter, or max_iter and s");
    } else if (has_max) {
        if (max_iter < min_iter)
            fail(e, "early_terminate.max_iter: must be >= min_iter (%lld), not %lld",
                 (long long)min_iter, (long long)max_iter);
        else {
            grace = json_integer(min_iter);
            max_t = json_integer(max_iter);
        }
    } else {
        /* W&B's bands go on: rungs up to past 10^9, within 40 of them. */
        double k = ceil(log(1e9 / (double)min_iter) / log(eta));
        k = k < 1 ? 1 : (k > 40 ? 40 : k);
        double t = (double)min_iter * pow(eta, k); /* exact while below 2^53 */
        if (t > EXACT_INT_MAX)
            fail(e, "early_terminate.min_iter: %lld·eta^k is past 2^53", (long long)min_iter);
        else {
            grace = json_integer(min_iter);
            max_t = number_json(t, json_is_integer(eta_json));
        }
    }
    if (grace == NULL) {
        json_decref(eta_json);
        return NULL;
    }
    return json_pack("{s:s, s:o, s:o, s:o, s:b}", "type", "asha", "grace_period", grace,
                     "reduction_factor", eta_json, "max_t", max_t, "end_at_max_t", 0);
}

/* ---- program and command: convert.py's _wandb_argv ---- */

static bool can_be_bool(const json_t *p)
{
    if (!json_is_object(p))
        return false;
    if (json_is_boolean(json_object_get(p, "value")))
        return true;
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(p, "values"), i, v) {
        if (json_is_boolean(v))
            return true;
    }
    return false;
}

static void append_args(json_t *argv, const json_t *params, const char *prefix)
{
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)params, name, v) {
        json_array_append_new(argv, json_sprintf("%s%s={%s}", prefix, name, name));
    }
}

/* One command item's ${...} macros replaced; NULL on error. */
static json_t *substitute(const char *item, const char *path, const char *program,
                          const json_t *params, Err *e)
{
    size_t cap = strlen(item) * 2 + 64, len = 0;
    char *out = malloc(cap);
    if (out == NULL) {
        fail(e, "out of memory");
        return NULL;
    }
    const char *c = item;
    while (*c != '\0') {
        const char *end = strncmp(c, "${", 2) == 0 ? strchr(c + 2, '}') : NULL;
        if (end == NULL) {
            out[len++] = *c++;
            if (len + 1 >= cap)
                out = realloc(out, cap *= 2);
            continue;
        }
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(end - c - 2), c + 2);
        const char *rep = NULL;
        char braced[260];
        if (strcmp(key, "interpreter") == 0) {
            rep = INTERPRETER;
        } else if (strcmp(key, "program") == 0) {
            if (program == NULL) {
                free(out);
                fail(e, "%s: ${program} but the sweep has no program", path);
                return NULL;
            }
            rep = program;
        } else if (strcmp(key, "args_json") == 0 || strcmp(key, "args_json_file") == 0) {
            free(out);
            fail(e,
                 "%s: ${%s} is not supported: rung-worker gives the trial its config as JSON in "
                 "$RUNG_CONFIG (rung.config() reads it)",
                 path, key);
            return NULL;
        } else if (strncmp(key, "envvar", 6) == 0) {
            free(out);
            fail(e,
                 "%s: ${%s} is not supported: Rung passes argv without a shell; set the variable "
                 "in the trainable's env",
                 path, key);
            return NULL;
        } else if (strcmp(key, "env") == 0 || strcmp(key, "args") == 0 ||
                   strcmp(key, "args_no_hyphens") == 0 ||
                   strcmp(key, "args_no_boolean_flags") == 0) {
            free(out);
            fail(e, "%s: ${%s} must be a whole command item", path, key);
            return NULL;
        } else if (json_object_get(params, key) != NULL) {
            snprintf(braced, sizeof braced, "{%s}", key);
            rep = braced;
        } else {
            free(out);
            fail(e, "%s: ${%s} is neither a W&B command macro nor a parameter of the sweep", path,
                 key);
            return NULL;
        }
        size_t n = strlen(rep);
        while (len + n + 1 >= cap)
            out = realloc(out, cap *= 2);
        memcpy(out + len, rep, n);
        len += n;
        c = end + 1;
    }
    out[len] = '\0';
    json_t *s = json_string(out);
    free(out);
    return s;
}

/* Python's str.strip() of ASCII whitespace, as a copy. */
static void stripped(const char *s, char *out, size_t size)
{
    while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r')))
        n--;
    snprintf(out, size, "%.*s", (int)n, s);
}

static int wandb_argv(const json_t *sweep, const json_t *params, json_t **out, Err *e)
{
    char d[96];
    *out = NULL;
    const json_t *jprogram = json_object_get(sweep, "program");
    const char *program = NULL;
    if (jprogram != NULL && !json_is_null(jprogram)) {
        if (!json_is_string(jprogram) || json_string_length(jprogram) == 0) {
            describe(jprogram, d, sizeof d);
            return fail(e, "program: must be a file name (a string), not %s", d);
        }
        program = json_string_value(jprogram);
    }
    const json_t *command = json_object_get(sweep, "command");
    if (command == NULL || json_is_null(command)) {
        if (program == NULL)
            return 0;
        *out = json_pack("[s, s]", INTERPRETER, program);
        append_args(*out, params, "--");
        return 0;
    }
    if (!json_is_array(command) || json_array_size(command) == 0) {
        describe(command, d, sizeof d);
        return fail(e, "command: must be a non-empty list, not %s", d);
    }
    json_t *argv = json_array();
    size_t i;
    const json_t *item;
    json_array_foreach(command, i, item) {
        char path[48], text[64], whole[4096];
        snprintf(path, sizeof path, "command[%zu]", i);
        const char *s;
        if (json_is_integer(item)) {
            snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(item));
            s = text;
        } else if (json_is_real(item)) {
            fmt_double(json_real_value(item), text, sizeof text);
            s = text;
        } else if (json_is_string(item)) {
            s = json_string_value(item);
        } else {
            describe(item, d, sizeof d);
            json_decref(argv);
            return fail(e, "%s: must be a string, not %s", path, d);
        }
        stripped(s, whole, sizeof whole);
        if (strcmp(whole, "${env}") == 0)
            continue; /* /usr/bin/env: rung-worker looks argv[0] up in PATH itself */
        if (strcmp(whole, "${args}") == 0 || strcmp(whole, "${args_no_hyphens}") == 0 ||
            strcmp(whole, "${args_no_boolean_flags}") == 0) {
            if (strcmp(whole, "${args_no_boolean_flags}") == 0) {
                char flags[256] = "";
                const char *name;
                const json_t *p;
                json_object_foreach((json_t *)params, name, p) {
                    if (can_be_bool(p))
                        snprintf(flags + strlen(flags), sizeof flags - strlen(flags), "%s%s",
                                 flags[0] ? ", " : "", name);
                }
                if (flags[0] != '\0') {
                    json_decref(argv);
                    return fail(e,
                                "%s: ${args_no_boolean_flags} is not supported with boolean "
                                "parameters (%s): Rung cannot leave an argument out by its "
                                "value; use ${args}",
                                path, flags);
                }
            }
            append_args(argv, params, strcmp(whole, "${args_no_hyphens}") == 0 ? "" : "--");
            continue;
        }
        json_t *arg = substitute(s, path, program, params, e);
        if (arg == NULL) {
            json_decref(argv);
            return -1;
        }
        json_array_append_new(argv, arg);
    }
    if (json_array_size(argv) == 0) {
        json_decref(argv);
        return fail(e, "command: nothing to run once ${env} is left out");
    }
    *out = argv;
    return 0;
}

/* ---- the sweep: convert.py's wandb_to_spec ---- */

bool cli_wandb_is_sweep(const json_t *doc)
{
    return json_is_object(doc) && json_object_get(doc, "method") != NULL &&
           json_object_get(doc, "parameters") != NULL &&
           json_object_get(doc, "search_space") == NULL;
}

static int check_keys(const json_t *sweep, Err *e)
{
    static const char *const used[] = {"name",       "method",          "metric",
                                       "parameters", "early_terminate", "run_cap",
                                       "program",    "command",         NULL};
    static const char *const ignored[] = {"description", "entity", "project", "controller",
                                          "apiVersion",  "kind",   NULL};
    static const char *const refused[][2] = {
        {"job", "W&B Launch jobs are not supported: give the program to run as `program` or "
                "`command`, or pass trainable="},
        {"image_uri", "W&B Launch images are not supported: give the program to run as "
                      "`program` or `command`, or pass trainable="},
        {"metrics", "Rung optimizes one metric: give it as `metric`"},
        {"scheduler", "W&B's custom scheduler engines are not supported: use method grid, "
                      "random or bayes"},
    };
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)sweep, key, v) {
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            if (strcmp(key, refused[i][0]) == 0)
                return fail(e, "%s: %s", key, refused[i][1]);
        bool known = false;
        for (int i = 0; used[i] != NULL; i++)
            known |= strcmp(key, used[i]) == 0;
        for (int i = 0; ignored[i] != NULL; i++)
            known |= strcmp(key, ignored[i]) == 0;
        if (!known)
            return fail(e,
                        "%s: not a key of a W&B sweep config (they are name, method, metric, "
                        "parameters, early_terminate, run_cap, program, command, description, "
                        "entity, project, controller, apiVersion, kind)",
                        key);
    }
    return 0;
}

/* The number of grid combinations of a search space. */
static double combinations(const json_t *space)
{
    double n = 1;
    const char *name;
    const json_t *d;
    json_object_foreach((json_t *)space, name, d) {
        const json_t *type = json_object_get(d, "type");
        if (json_is_object(d) && json_is_string(type) &&
            strcmp(json_string_value(type), "grid") == 0)
            n *= (double)json_array_size(json_object_get(d, "values"));
    }
    return n;
}

static int convert(const json_t *sweep, json_t *spec, Err *e)
{
    char d[96];
    if (!json_is_object(sweep)) {
        describe(sweep, d, sizeof d);
        return fail(e, "a W&B sweep config is a mapping, not %s", d);
    }
    if (check_keys(sweep, e) != 0)
        return -1;
    const json_t *jmethod = json_object_get(sweep, "method");
    if (jmethod == NULL || json_is_null(jmethod))
        return fail(e, "method: required (grid, random or bayes)");
    const char *method = json_string_value(jmethod);
    if (method == NULL || (strcmp(method, "grid") != 0 && strcmp(method, "random") != 0 &&
                           strcmp(method, "bayes") != 0)) {
        describe(jmethod, d, sizeof d);
        return fail(e, "method: must be grid, random or bayes, not %s", d);
    }
    bool grid = strcmp(method, "grid") == 0;
    const json_t *name = json_object_get(sweep, "name");
    if (name != NULL && !json_is_null(name)) {
        if (!json_is_string(name)) {
            describe(name, d, sizeof d);
            return fail(e, "name: must be a string, not %s", d);
        }
        json_object_set_new(spec, "name", json_copy((json_t *)name));
    }
    json_t *stop = NULL;
    const json_t *metric = json_object_get(sweep, "metric");
    if (metric != NULL && !json_is_null(metric)) {
        if (wandb_metric(metric, spec, &stop, e) != 0) {
            json_decref(stop);
            return -1;
        }
    } else if (strcmp(method, "bayes") == 0) {
        return fail(e, "metric: method bayes needs a metric to optimize");
    }
    int rc = -1;
    const json_t *params = json_object_get(sweep, "parameters");
    if (!json_is_object(params) || json_object_size(params) == 0) {
        describe(params, d, sizeof d);
        fail(e, "parameters: required, a mapping of at least one parameter, not %s", d);
        goto done;
    }
    json_t *space = json_object();
    json_object_set_new(spec, "search_space", space);
    const char *pname;
    const json_t *param;
    json_object_foreach((json_t *)params, pname, param) {
        json_t *domain = wandb_parameter(pname, param, grid, e);
        if (domain == NULL)
            goto done;
        json_object_set_new(space, pname, domain);
    }
    json_object_set_new(spec, "searcher", json_pack("{s:s}", "type", method));
    const json_t *et = json_object_get(sweep, "early_terminate");
    if (et != NULL && !json_is_null(et)) {
        if (json_object_get(spec, "metric") == NULL) {
            fail(e, "metric: early_terminate needs a metric to compare runs by");
            goto done;
        }
        json_t *sched = wandb_scheduler(et, e);
        if (sched == NULL)
            goto done;
        json_object_set_new(spec, "scheduler", sched);
    }
    const json_t *jcap = json_object_get(sweep, "run_cap");
    json_int_t run_cap = 0;
    bool has_cap = jcap != NULL && !json_is_null(jcap);
    if (has_cap) {
        if (integer(jcap, "run_cap", &run_cap, e) != 0)
            goto done;
        if (run_cap < 1) {
            fail(e, "run_cap: must be >= 1, not %lld", (long long)run_cap);
            goto done;
        }
    }
    if (grid) {
        double n = combinations(space);
        if (has_cap && (double)run_cap < n) {
            fail(e,
                 "run_cap: %lld is below the grid's %.0f combinations, and Rung runs the whole "
                 "grid; leave run_cap out or cut the grid",
                 (long long)run_cap, n);
            goto done;
        }
        json_object_set_new(spec, "num_samples", json_integer(1));
    } else if (has_cap) {
        json_object_set_new(spec, "num_samples", json_integer(run_cap));
    }
    if (stop != NULL) { /* the spec's usual order: stop after the search */
        json_object_set_new(spec, "stop", stop);
        stop = NULL;
    }
    json_t *argv;
    if (wandb_argv(sweep, params, &argv, e) != 0)
        goto done;
    if (argv != NULL)
        json_object_set_new(spec, "trainable",
                            json_pack("{s:s, s:o}", "type", "command", "argv", argv));
    rc = 0;
done:
    json_decref(stop);
    return rc;
}

json_t *cli_wandb_to_spec(const json_t *sweep, char *err, size_t errlen)
{
    Err e = {err, errlen};
    if (errlen > 0)
        err[0] = '\0';
    json_t *spec = json_object();
    if (convert(sweep, spec, &e) != 0) {
        json_decref(spec);
        return NULL;
    }
    return spec;
}
