/* sampler_quality: how fast Rung's searchers find the minimum of five test
 * functions (bench/README.md, section 2).
 *
 * For each function (Branin, Hartmann6, Rosenbrock-4, Ackley-5, Levy-4, on
 * the boxes of bench/README.md; with --functions also the heavy-tailed
 * branin_exp and hartmann6_exp, whose regrets are Branin's and Hartmann6's)
 * and each searcher, it runs S seeds of E
 * sequential evaluations: build a search space with one uniform parameter
 * per dimension over the box, propose a config, evaluate it, and record the
 * simple regret (best value so far - f*). `random` and `quasi` take trial
 * n's config from sampler_config; `bayes` calls bayes_propose, `cmaes`
 * cmaes_propose and `tpe` tpe_propose with count 1 and the full history of
 * earlier configs and losses, as rungd's proposer does for one sequential
 * worker.
 *
 * It prints, per (function, searcher), the median and interquartile range
 * over seeds of the regret at 25, 50 and 100 evaluations and the median wall
 * time of one proposal; with --json also one JSON object per result line,
 * carrying the per-seed regrets so that a driver can compare like with like
 * (bench/sampler_quality.sh puts them beside Optuna's).
 *
 * Before any run it checks its own test functions: each must give f* at its
 * known minimizer, a few hand-computed values elsewhere, and nothing below
 * f* at many random points of its box. A wrong function would make every
 * figure below meaningless, so a failed check exits 1 at once.
 *
 * The bayes searcher is compiled in only when the build has it
 * (RUNG_BENCH_HAVE_BAYES, set by bench/CMakeLists.txt when the sampler
 * library has bayes.c); otherwise its rows say "not available". */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blascore.h"
#include "clock.h"
#include "error.h"
#include "gp.h"
#include "cmaes.h"
#include "auto.h"
#include "sampler.h"
#include "tpe.h"
#ifdef RUNG_BENCH_HAVE_BAYES
#include "bayes.h"
#endif

/* Set on the process that blascore_pick re-executed. */
#define BENCH_BLAS_PICKED_ENV "RUNG_BENCH_BLAS_CORE_PICKED"

/* The largest dimension of the five functions (Hartmann6). */
#define QB_MAX_DIMS 6
/* Seeds and evaluations per run: the benchmark uses 20 x 100; the caps only
 * keep a typo from asking for hours (bayes is O(n^3) per proposal). */
#define QB_MAX_SEEDS 1000
#define QB_MAX_EVALS 5000
/* Evaluations at which regret is reported (those <= --evals). */
static const int QB_CHECKPOINTS[] = {25, 50, 100, 200, 1000, 2000, 5000};
#define QB_NCHECK ((int)(sizeof QB_CHECKPOINTS / sizeof QB_CHECKPOINTS[0]))
/* Random points per function for the "nothing below f*" self-check. */
#define QB_CHECK_POINTS 200000

#define PI 3.14159265358979323846

typedef double (*Objective)(const double *x);

/* One test function with its box and its known optimum. */
typedef struct TestFunction {
    const char *name;          /* as given to --functions */
    int dims;                  /* 1..QB_MAX_DIMS */
    double low[QB_MAX_DIMS];   /* box, per dimension */
    double high[QB_MAX_DIMS];  /* low < high */
    double fstar;              /* global minimum on the box, full precision */
    double xstar[QB_MAX_DIMS]; /* a minimizer, for the self-check */
    double xstar_tol;          /* |f(xstar) - fstar| allowed (xstar is rounded) */
    Objective f;
    /* A heavy-tailed variant (extra: run only when --functions names it):
     * f is a monotone map of another function, and under(f) maps a value
     * back to it; f* and every regret are the other function's. NULL:
     * the identity. */
    double (*under)(double y);
    bool extra;
} TestFunction;

/* Branin-Hoo: a = 1, b = 5.1/(4 pi^2), c = 5/pi, r = 6, s = 10, t = 1/(8 pi).
 * Its three minima are 10/(8 pi) = 0.397887... */
static double branin(const double *x)
{
    const double b = 5.1 / (4.0 * PI * PI), c = 5.0 / PI, t = 1.0 / (8.0 * PI);
    double u = x[1] - b * x[0] * x[0] + c * x[0] - 6.0;
    return u * u + 10.0 * (1.0 - t) * cos(x[0]) + 10.0;
}

/* Hartmann 6-d with the usual A, P and alpha (Dixon and Szego 1978). */
static double hartmann6(const double *x)
{
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double a[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double p[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                   {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                   {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                   {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
    double sum = 0.0;
    for (int i = 0; i < 4; i++) {
        double inner = 0.0;
        for (int j = 0; j < 6; j++)
            inner += a[i][j] * (x[j] - p[i][j]) * (x[j] - p[i][j]);
        sum += alpha[i] * exp(-inner);
    }
    return -sum;
}

static double rosenbrock4(const double *x)
{
    double sum = 0.0;
    for (int i = 0; i < 3; i++) {
        double u = x[i + 1] - x[i] * x[i], v = x[i] - 1.0;
        sum += 100.0 * u * u + v * v;
    }
    return sum;
}

/* Ackley with a = 20, b = 0.2, c = 2 pi. */
static double ackley5(const double *x)
{
    double sq = 0.0, cs = 0.0;
    for (int i = 0; i < 5; i++) {
        sq += x[i] * x[i];
        cs += cos(2.0 * PI * x[i]);
    }
    return -20.0 * exp(-0.2 * sqrt(sq / 5.0)) - exp(cs / 5.0) + 20.0 + exp(1.0);
}

/* Levy: w_i = 1 + (x_i - 1) / 4. */
static double levy4(const double *x)
{
    double w[4];
    for (int i = 0; i < 4; i++)
        w[i] = 1.0 + (x[i] - 1.0) / 4.0;
    double s0 = sin(PI * w[0]);
    double sum = s0 * s0;
    for (int i = 0; i < 3; i++) {
        double si = sin(PI * w[i] + 1.0);
        sum += (w[i] - 1.0) * (w[i] - 1.0) * (1.0 + 10.0 * si * si);
    }
    double s3 = sin(2.0 * PI * w[3]);
    return sum + (w[3] - 1.0) * (w[3] - 1.0) * (1.0 + s3 * s3);
}

/* Heavy tails, as a validation MSE has (docs/searchers.md, "Heavy tails"):
 * exp(Branin / 10) spans 1.04 to 2e13, exp(5 (Hartmann6 + 3.33)) 1.04 to
 * 1.6e7. */
static double branin_exp(const double *x)
{
    return exp(branin(x) / 10.0);
}

static double branin_exp_under(double y)
{
    return 10.0 * log(y);
}

static double hartmann6_exp(const double *x)
{
    return exp(5.0 * (hartmann6(x) + 3.33));
}

static double hartmann6_exp_under(double y)
{
    return log(y) / 5.0 - 3.33;
}

/* The value a regret is measured on. */
static double underlying(const TestFunction *fn, double y)
{
    return fn->under != NULL ? fn->under(y) : y;
}

/* f* at full precision: Branin's is 10/(8 pi) exactly; Hartmann6's is the
 * literature value that bench/README.md rounds to -3.32237 (using the rounded
 * one would make late regrets negative). */
static const TestFunction FUNCTIONS[] = {
    {"branin", 2, {-5, 0}, {10, 15}, 10.0 / (8.0 * PI), {PI, 2.275}, 1e-12, branin, NULL, false},
    {"hartmann6",
     6,
     {0, 0, 0, 0, 0, 0},
     {1, 1, 1, 1, 1, 1},
     -3.32236801141551,
     {0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573},
     1e-5,
     hartmann6,
     NULL,
     false},
    {"rosenbrock4",
     4,
     {-5, -5, -5, -5},
     {10, 10, 10, 10},
     0.0,
     {1, 1, 1, 1},
     1e-12,
     rosenbrock4,
     NULL,
     false},
    {"ackley5",
     5,
     {-32.768, -32.768, -32.768, -32.768, -32.768},
     {32.768, 32.768, 32.768, 32.768, 32.768},
     0.0,
     {0, 0, 0, 0, 0},
     1e-12,
     ackley5,
     NULL,
     false},
    {"levy4",
     4,
     {-10, -10, -10, -10},
     {10, 10, 10, 10},
     0.0,
     {1, 1, 1, 1},
     1e-12,
     levy4,
     NULL,
     false},
    {"branin_exp",
     2,
     {-5, 0},
     {10, 15},
     10.0 / (8.0 * PI),
     {PI, 2.275},
     1e-9,
     branin_exp,
     branin_exp_under,
     true},
    {"hartmann6_exp",
     6,
     {0, 0, 0, 0, 0, 0},
     {1, 1, 1, 1, 1, 1},
     -3.32236801141551,
     {0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573},
     1e-5,
     hartmann6_exp,
     hartmann6_exp_under,
     true},
};
#define QB_NFUNCTIONS ((int)(sizeof FUNCTIONS / sizeof FUNCTIONS[0]))

typedef enum { QB_RANDOM, QB_QUASI, QB_BAYES, QB_CMAES, QB_TPE, QB_AUTO } SearcherKind;

static const char *const SEARCHER_NAMES[] = {"random", "quasi", "bayes", "cmaes", "tpe", "auto"};
#define QB_NSEARCHERS 6

typedef struct Options {
    bool functions[QB_NFUNCTIONS]; /* which to run */
    bool searchers[QB_NSEARCHERS]; /* which to run */
    int seeds;                     /* seeds 0 .. seeds-1, 1..QB_MAX_SEEDS */
    int evals;                     /* evaluations per run, 1..QB_MAX_EVALS */
    bool json;                     /* also one JSON object per result */
} Options;

/* A deterministic generator for the self-check only (splitmix64). */
static uint64_t check_state = 12345;
static double check_uniform(void)
{
    uint64_t z = (check_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

static bool check_value(const char *what, double got, double want, double tol)
{
    if (fabs(got - want) <= tol)
        return true;
    fprintf(stderr, "self-check FAILED: %s = %.12g, want %.12g (tol %g)\n", what, got, want, tol);
    return false;
}

/* The unit-style self-check of the test functions; false on any failure. */
static bool self_check(void)
{
    bool ok = true;
    for (int k = 0; k < QB_NFUNCTIONS; k++) {
        const TestFunction *fn = &FUNCTIONS[k];
        char what[96];
        snprintf(what, sizeof what, "%s(x*)", fn->name);
        ok &= check_value(what, underlying(fn, fn->f(fn->xstar)), fn->fstar, fn->xstar_tol);
        double lowest = INFINITY;
        for (int i = 0; i < QB_CHECK_POINTS; i++) {
            double x[QB_MAX_DIMS];
            for (int j = 0; j < fn->dims; j++)
                x[j] = fn->low[j] + (fn->high[j] - fn->low[j]) * check_uniform();
            double y = underlying(fn, fn->f(x));
            if (y < lowest)
                lowest = y;
        }
        if (!(lowest >= fn->fstar - 1e-9)) {
            fprintf(stderr, "self-check FAILED: %s has %.12g < f* = %.12g at a random point\n",
                    fn->name, lowest, fn->fstar);
            ok = false;
        }
    }
    /* bench/README.md's figure, and Branin's other two minima. */
    ok &= check_value("branin(pi, 2.275) vs 0.397887", branin((double[]){PI, 2.275}), 0.397887,
                      5e-7);
    ok &= check_value("branin(-pi, 12.275)", branin((double[]){-PI, 12.275}), 10.0 / (8.0 * PI),
                      1e-12);
    ok &= check_value("branin(9.42478, 2.475)", branin((double[]){9.42478, 2.475}),
                      10.0 / (8.0 * PI), 1e-9);
    ok &= check_value("hartmann6(x*) vs -3.32237", hartmann6(FUNCTIONS[1].xstar), -3.32237, 5e-6);
    /* Values worked by hand away from the minima. */
    ok &= check_value("rosenbrock4(0,0,0,0)", rosenbrock4((double[]){0, 0, 0, 0}), 3.0, 1e-12);
    ok &= check_value("rosenbrock4(-1,1,-1,1)", rosenbrock4((double[]){-1, 1, -1, 1}), 408.0, 1e-9);
    /* Ackley at (1,..,1): sqrt(mean x^2) = 1 and cos(2 pi) = 1. */
    ok &= check_value("ackley5(1,..,1)", ackley5((double[]){1, 1, 1, 1, 1}),
                      20.0 - 20.0 * exp(-0.2), 1e-12);
    /* Levy at x = 0: w = 3/4, sin^2(3 pi / 4) = 1/2, sin^2(3 pi / 2) = 1. */
    double s = sin(0.75 * PI + 1.0);
    ok &= check_value("levy4(0,0,0,0)", levy4((double[]){0, 0, 0, 0}),
                      0.5 + 3.0 * 0.0625 * (1.0 + 10.0 * s * s) + 0.0625 * 2.0, 1e-12);
    /* Hartmann6 at the centre of the cube, from a separate NumPy evaluation
     * of the same formula (the third term, alpha = 3, dominates). */
    ok &= check_value("hartmann6(0.5,..,0.5)", hartmann6((double[]){.5, .5, .5, .5, .5, .5}),
                      -0.5053149917022333, 1e-12);
    return ok;
}

/* Quantile p of sorted v[0..n-1] with linear interpolation between order
 * statistics (numpy's default), so the Python side computes the same. */
static double quantile(const double *sorted, int n, double p)
{
    double pos = p * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1)
        return sorted[n - 1];
    double frac = pos - i;
    return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n-1]; sorts v in place. */
static double median(double *v, int n)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return quantile(v, n, 0.5);
}

/* The search space of fn: {"x0": {"type": "uniform", "low": .., "high": ..}, ...}.
 * New reference. */
static json_t *space_json(const TestFunction *fn)
{
    json_t *space = json_object();
    for (int j = 0; j < fn->dims; j++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", j);
        json_object_set_new(space, name,
                            json_pack("{s:s, s:f, s:f}", "type", "uniform", "low", fn->low[j],
                                      "high", fn->high[j]));
    }
    return space;
}

/* Reads x[0..dims-1] from a config; false when a value is missing. */
static bool read_config(const json_t *config, int dims, double *x)
{
    for (int j = 0; j < dims; j++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", j);
        const json_t *v = json_object_get(config, name);
        if (!json_is_number(v))
            return false;
        x[j] = json_number_value(v);
    }
    return true;
}

/* The outcome of one (function, searcher) pair. */
typedef struct Result {
    int seeds, evals;
    double *regret;  /* seeds x evals, row per seed: best so far - f* */
    double *prop_ms; /* seeds x evals: wall time of each proposal */
    char error[512]; /* non-empty when the run failed */
    double wall_s;   /* the whole pair */
} Result;

/* --switch-after: the auto rows' searcher.switch_after (0: its default). */
static int64_t auto_switch_after;

/* One seed: fills row `seed` of r. Returns false (and r->error) on failure. */
static bool run_seed(const TestFunction *fn, const Space *space, SearcherKind kind, int seed,
                     Result *r)
{
    char spec_text[128];
    snprintf(spec_text, sizeof spec_text, "{\"type\": \"%s\", \"seed\": %d%s}",
             kind == QB_BAYES   ? "bayes"
             : kind == QB_CMAES ? "cmaes"
             : kind == QB_TPE   ? "tpe"
             : kind == QB_AUTO  ? "auto"
                                : "random",
             seed, kind == QB_QUASI ? ", \"quasi\": true" : "");
    json_t *spec_json = json_loads(spec_text, 0, NULL);
    SearcherSpec spec;
    RungError err;
    int rc = searcher_parse(spec_json, space, &spec, &err);
    json_decref(spec_json);
    if (rc != 0) {
        snprintf(r->error, sizeof r->error, "searcher_parse: %s", err.message);
        return false;
    }
    if (kind == QB_AUTO && auto_switch_after > 0)
        spec.switch_after = auto_switch_after;
    int evals = r->evals;
    json_t **configs = calloc((size_t)evals, sizeof *configs);
    BayesObservation *obs = calloc((size_t)evals, sizeof *obs);
    double best = INFINITY;
    bool ok = true;
    for (int n = 0; n < evals && ok; n++) {
        json_t *config = NULL;
        int64_t t0 = rung_mono_ns();
        /* auto: the searcher its rule picks after n results, as rungd's
         * proposer does (sampler/auto.h). */
        SearcherKind k = kind;
        SearcherSpec use = spec;
        if (kind == QB_AUTO) {
            SearcherType pick = auto_pick(space, &spec, n, 1, 0);
            use = auto_spec(&spec, pick);
            k = pick == SEARCHER_TPE ? QB_TPE : pick == SEARCHER_CMAES ? QB_CMAES : QB_BAYES;
        }
        if (k == QB_BAYES) {
#ifdef RUNG_BENCH_HAVE_BAYES
            BayesHistory history = {.obs = obs, .n_obs = n};
            rc = bayes_propose(space, &use, n, 1, &history, &config, &err);
            if (rc != 0) {
                snprintf(r->error, sizeof r->error, "bayes_propose(seed %d, trial %d): %s [%s]",
                         seed, n, err.message, rung_error_string(rc));
                config = NULL;
            }
#endif
        } else if (k == QB_CMAES) {
            BayesHistory history = {.obs = obs, .n_obs = n};
            rc = cmaes_propose(space, &use, n, 1, &history, &config, &err);
            if (rc != 0) {
                snprintf(r->error, sizeof r->error, "cmaes_propose(seed %d, trial %d): %s [%s]",
                         seed, n, err.message, rung_error_string(rc));
                config = NULL;
            }
        } else if (k == QB_TPE) {
            BayesHistory history = {.obs = obs, .n_obs = n};
            rc = tpe_propose(space, &use, n, 1, &history, &config, &err);
            if (rc != 0) {
                snprintf(r->error, sizeof r->error, "tpe_propose(seed %d, trial %d): %s [%s]", seed,
                         n, err.message, rung_error_string(rc));
                config = NULL;
            }
        } else {
            config = sampler_config(space, &use, n);
            if (config == NULL)
                snprintf(r->error, sizeof r->error, "sampler_config(seed %d, trial %d) failed",
                         seed, n);
        }
        int64_t t1 = rung_mono_ns();
        double x[QB_MAX_DIMS];
        if (config == NULL) {
            ok = false;
            break;
        }
        if (!read_config(config, fn->dims, x)) {
            char *text = json_dumps(config, JSON_COMPACT);
            snprintf(r->error, sizeof r->error, "seed %d trial %d: config without x0..x%d: %.300s",
                     seed, n, fn->dims - 1, text ? text : "?");
            free(text);
            json_decref(config);
            ok = false;
            break;
        }
        for (int j = 0; j < fn->dims; j++) {
            if (!(x[j] >= fn->low[j] && x[j] <= fn->high[j])) {
                snprintf(r->error, sizeof r->error, "seed %d trial %d: x%d = %g outside [%g, %g]",
                         seed, n, j, x[j], fn->low[j], fn->high[j]);
                ok = false;
            }
        }
        double y = fn->f(x);
        if (y < best)
            best = y;
        configs[n] = config;
        obs[n].config = config;
        obs[n].loss = y;
        r->regret[(size_t)seed * evals + n] = underlying(fn, best) - fn->fstar;
        r->prop_ms[(size_t)seed * evals + n] = (double)(t1 - t0) / 1e6;
    }
    for (int n = 0; n < evals; n++)
        json_decref(configs[n]);
    free(configs);
    free(obs);
    return ok;
}

/* Runs all seeds of one pair; r is allocated here (free with result_free). */
static void run_pair(const TestFunction *fn, SearcherKind kind, const Options *opt, Result *r)
{
    memset(r, 0, sizeof *r);
    r->seeds = opt->seeds;
    r->evals = opt->evals;
    r->regret = calloc((size_t)opt->seeds * opt->evals, sizeof *r->regret);
    r->prop_ms = calloc((size_t)opt->seeds * opt->evals, sizeof *r->prop_ms);
    if (r->regret == NULL || r->prop_ms == NULL) {
        snprintf(r->error, sizeof r->error, "out of memory");
        return;
    }
    json_t *sj = space_json(fn);
    Space *space = NULL;
    RungError err;
    if (space_parse(sj, &space, &err) != 0) {
        snprintf(r->error, sizeof r->error, "space_parse: %s", err.message);
        json_decref(sj);
        return;
    }
    json_decref(sj);
    int64_t t0 = rung_mono_ns();
    for (int s = 0; s < opt->seeds; s++) {
        if (!run_seed(fn, space, kind, s, r))
            break;
    }
    r->wall_s = (double)(rung_mono_ns() - t0) / 1e9;
    space_free(space);
}

static void result_free(Result *r)
{
    free(r->regret);
    free(r->prop_ms);
}

/* Regrets of every seed after `evals_done` evaluations, sorted, into out. */
static void regrets_at(const Result *r, int evals_done, double *out)
{
    for (int s = 0; s < r->seeds; s++)
        out[s] = r->regret[(size_t)s * r->evals + evals_done - 1];
}

/* Median proposal time over proposals whose history had n in [lo, hi). */
static double prop_median(const Result *r, int lo, int hi)
{
    if (hi > r->evals)
        hi = r->evals;
    if (lo >= hi)
        return NAN;
    int count = r->seeds * (hi - lo);
    double *v = malloc((size_t)count * sizeof *v);
    int k = 0;
    for (int s = 0; s < r->seeds; s++)
        for (int n = lo; n < hi; n++)
            v[k++] = r->prop_ms[(size_t)s * r->evals + n];
    double m = median(v, k);
    free(v);
    return m;
}

/* JSON has no NaN: a missing figure is null. */
static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static void report(const TestFunction *fn, SearcherKind kind, const Result *r, const Options *opt)
{
    const char *sname = SEARCHER_NAMES[kind];
    char label[32];
    snprintf(label, sizeof label, "rung-%s", sname);
    json_t *line = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:f, s:i, s:i}", "bench",
                             "sampler_quality", "label", label, "impl", "rung", "searcher", sname,
                             "function", fn->name, "dims", fn->dims, "fstar", fn->fstar, "seeds",
                             r->seeds, "evals", r->evals);
    printf("%-12s %-14s", fn->name, label);
    if (r->error[0] != '\0') {
        printf(" FAILED: %s\n", r->error);
        json_object_set_new(line, "failed", json_true());
        json_object_set_new(line, "error", json_string(r->error));
    } else {
        double *v = malloc((size_t)r->seeds * sizeof *v);
        for (int c = 0; c < QB_NCHECK; c++) {
            int at = QB_CHECKPOINTS[c];
            if (at > r->evals)
                continue;
            regrets_at(r, at, v);
            json_t *arr = json_array();
            for (int s = 0; s < r->seeds; s++)
                json_array_append_new(arr, json_real(v[s]));
            qsort(v, (size_t)r->seeds, sizeof *v, cmp_double);
            double q1 = quantile(v, r->seeds, 0.25), md = quantile(v, r->seeds, 0.5),
                   q3 = quantile(v, r->seeds, 0.75);
            printf("  @%d %9.3g [%.3g, %.3g]", at, md, q1, q3);
            char key[32];
            snprintf(key, sizeof key, "median_%d", at);
            json_object_set_new(line, key, json_real(md));
            snprintf(key, sizeof key, "q1_%d", at);
            json_object_set_new(line, key, json_real(q1));
            snprintf(key, sizeof key, "q3_%d", at);
            json_object_set_new(line, key, json_real(q3));
            snprintf(key, sizeof key, "regret_%d", at);
            json_object_set_new(line, key, arr);
        }
        free(v);
        double all = prop_median(r, 0, r->evals), late = prop_median(r, 50, 100);
        char late_text[32] = "n/a";
        if (isfinite(late))
            snprintf(late_text, sizeof late_text, "%.3g ms", late);
        printf("  prop %.3g ms (n 50-99: %s)  %.1f s\n", all, late_text, r->wall_s);
        json_object_set_new(line, "prop_ms_median", num_or_null(all));
        json_object_set_new(line, "prop_ms_median_n50_99", num_or_null(late));
        json_object_set_new(line, "wall_s", json_real(r->wall_s));
    }
    if (opt->json) {
        char *text = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(8));
        printf("%s\n", text);
        free(text);
    }
    json_decref(line);
    fflush(stdout);
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: sampler_quality [--functions LIST] [--searchers LIST] [--seeds N]\n"
            "                       [--evals N] [--json] [--check-only]\n"
            "  --functions  comma-separated: branin,hartmann6,rosenbrock4,ackley5,levy4 "
            "(default),\n"
            "               branin_exp,hartmann6_exp (heavy-tailed variants)\n"
            "  --searchers  comma-separated: random,quasi,bayes,cmaes,tpe,auto (default all)\n"
            "  --seeds N    seeds 0..N-1, at most %d (default 20)\n"
            "  --evals N    sequential evaluations per seed, at most %d (default 100)\n"
            "  --switch-after N  the auto rows' searcher.switch_after (default 200)\n"
            "  --json       also print one JSON object per result line\n"
            "  --check-only run the self-check of the test functions and exit\n",
            QB_MAX_SEEDS, QB_MAX_EVALS);
}

/* Parses a comma-separated list against names[0..n-1] into chosen[]. */
static bool parse_list(const char *arg, const char *const *names, int n, bool *chosen)
{
    for (int i = 0; i < n; i++)
        chosen[i] = false;
    char buf[256];
    if (strlen(arg) >= sizeof buf)
        return false;
    strcpy(buf, arg);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < n && strcmp(tok, names[i]) != 0)
            i++;
        if (i == n) {
            fprintf(stderr, "sampler_quality: unknown name \"%s\"\n", tok);
            return false;
        }
        chosen[i] = true;
    }
    return true;
}

static bool parse_int(const char *arg, int lo, int hi, int *out)
{
    char *end = NULL;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

int main(int argc, char **argv)
{
    Options opt = {.seeds = 20, .evals = 100};
    for (int i = 0; i < QB_NFUNCTIONS; i++)
        opt.functions[i] = !FUNCTIONS[i].extra;
    for (int i = 0; i < QB_NSEARCHERS; i++)
        opt.searchers[i] = true;
    const char *fnames[QB_NFUNCTIONS];
    for (int i = 0; i < QB_NFUNCTIONS; i++)
        fnames[i] = FUNCTIONS[i].name;
    bool check_only = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (strcmp(a, "--json") == 0) {
            opt.json = true;
            continue;
        } else if (strcmp(a, "--check-only") == 0) {
            check_only = true;
            continue;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (v == NULL) {
            ok = false;
        } else if (strcmp(a, "--functions") == 0) {
            ok = parse_list(v, fnames, QB_NFUNCTIONS, opt.functions);
        } else if (strcmp(a, "--searchers") == 0) {
            ok = parse_list(v, SEARCHER_NAMES, QB_NSEARCHERS, opt.searchers);
        } else if (strcmp(a, "--seeds") == 0) {
            ok = parse_int(v, 1, QB_MAX_SEEDS, &opt.seeds);
        } else if (strcmp(a, "--evals") == 0) {
            ok = parse_int(v, 1, QB_MAX_EVALS, &opt.evals);
        } else if (strcmp(a, "--switch-after") == 0) {
            int n = 0;
            ok = parse_int(v, 1, QB_MAX_EVALS, &n);
            auto_switch_after = n;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "sampler_quality: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }

    /* OpenBLAS's kernel as rungd picks it (server/main.c, common/blascore.h):
     * the proposals' bits and times are rungd's. */
    blascore_pick(argv, BENCH_BLAS_PICKED_ENV);
    if (!self_check()) {
        fprintf(stderr, "sampler_quality: the test functions are wrong; nothing measured\n");
        return 1;
    }
    printf("# self-check of the test functions: ok (f* at the minimizers, hand values, "
           "nothing below f* at %d random points each)\n",
           QB_CHECK_POINTS);
    if (check_only)
        return 0;
    printf("# sampler_quality: %d seeds x %d evaluations; regret median [q1, q3]; "
           "prop = median wall time of one proposal\n",
           opt.seeds, opt.evals);
    printf("# OpenBLAS core %s (%s), as rungd runs it\n", gp_blas_core(),
           blascore_origin(BENCH_BLAS_PICKED_ENV));

    int failures = 0;
    for (int k = 0; k < QB_NFUNCTIONS; k++) {
        if (!opt.functions[k])
            continue;
        for (int s = 0; s < QB_NSEARCHERS; s++) {
            if (!opt.searchers[s])
                continue;
#ifndef RUNG_BENCH_HAVE_BAYES
            if (s == QB_BAYES) {
                printf("%-12s %-14s not available: this build has no bayes searcher "
                       "(sampler/bayes.c)\n",
                       FUNCTIONS[k].name, "rung-bayes");
                if (opt.json)
                    printf("{\"bench\":\"sampler_quality\",\"label\":\"rung-bayes\","
                           "\"impl\":\"rung\",\"searcher\":\"bayes\",\"function\":\"%s\","
                           "\"available\":false}\n",
                           FUNCTIONS[k].name);
                fflush(stdout);
                continue;
            }
#endif
            Result r;
            run_pair(&FUNCTIONS[k], (SearcherKind)s, &opt, &r);
            if (r.error[0] != '\0')
                failures++;
            report(&FUNCTIONS[k], (SearcherKind)s, &r, &opt);
            result_free(&r);
        }
    }
    return failures == 0 ? 0 : 1;
}
