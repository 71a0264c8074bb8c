/* sampler_speed: the wall time of one bayes proposal, and of one tpe
 * proposal (first, cells of their own: run_tpe) (bench/README.md, section 2,
 * "bench/sampler_speed").
 *
 * For n observations in d uniform parameters on [0, 1] it builds a history
 * of n random configs with a smooth synthetic loss, then times
 * bayes_propose(first = n, count = 1) with that history: the work rungd's
 * proposer thread does for one sequential worker once n trials are done.
 * Cells: n = 50, 200, 1000 by d = 2, 6, 20, and n = 100, d = 6 (a target),
 * with one objective and with two (m = 2: a second loss whose basin sits
 * at the mirror image of the first's, so the two conflict; a target too),
 * and multi-fidelity (m = 0 in the table: bayes_mf_propose with n = 1,000
 * rung records, d = 7, a target): the records of an asha with reduction
 * factor 3 and rungs 1, 3, 9, 27, trial k reaching rung j when 3^j
 * divides k, with the loss plus 1/level; the fidelity rule then models the
 * highest level with max(n_initial, d + 2) records (27, 25 records); and
 * m = -1, the worst case: all 1,000 records at one level (early in a wide
 * experiment), which fits the GP to a subset as for n = 1,000 results.
 *
 * Each repetition uses another searcher seed (the same history), so the
 * median spans several optimizer paths rather than one replayed path. The
 * n = 1000 cells take fewer repetitions, and every cell stops repeating once
 * it has spent its time budget, so the whole run stays within minutes even
 * on a slow implementation.
 *
 * Then the cmaes searcher after n = 1,000 and 10,000 observations of d = 6
 * and 20 (the same histories): cmaes_propose_cached(first = n, count = 1)
 * with the memo of the proposal before it (trial n - 1 after n - 1
 * results), as rungd's proposer runs it, and cold: cmaes_propose, the
 * replay of the whole history (a memo evicted, or rungd just restarted).
 * bench/optuna_cmaes_speed.py puts the n = 1,000, d = 6 cell beside
 * Optuna's CmaEsSampler; --cmaes-only measures these cells alone.
 *
 * Prints a table, one JSON object per cell with --json, and last the target
 * lines of bench/README.md section 5. Without the bayes searcher in the build
 * (RUNG_BENCH_HAVE_BAYES unset) it says so and prints the targets as n/a. */
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
#include "sampler.h"
#include "tpe.h"
#ifdef RUNG_BENCH_HAVE_BAYES
#include "bayes.h"
#include "cmaes.h"
#endif

/* The largest d of the cells; SPACE_MAX_PARAMS bounds it anyway. */
#define SPEED_MAX_DIMS 20
/* Repetitions: a cell stops early once it has spent its budget. */
#define SPEED_MAX_REPS 1000
#define SPEED_DEFAULT_REPS 9
#define SPEED_DEFAULT_REPS_LARGE 3 /* n >= SPEED_LARGE_N: seconds each, maybe */
#define SPEED_LARGE_N 1000
#define SPEED_DEFAULT_BUDGET_S 30.0
/* Set on the process that blascore_pick re-executed. */
#define BENCH_BLAS_PICKED_ENV "RUNG_BENCH_BLAS_CORE_PICKED"

typedef struct Cell {
    int n; /* observations in the history */
    int d; /* uniform parameters */
    int m; /* objectives: 1 or 2; 0: n rung records of asha's shape; -1: all at level 1;
            * the cmaes searcher: 3 with a memo, 4 cold (the whole replay) */
} Cell;

/* The target cells come first so that a run cut short still has them. */
static const Cell CELLS[] = {{100, 6, 1},  {100, 6, 2},  {1000, 7, 0}, {1000, 7, -1}, {50, 2, 1},
                             {50, 6, 1},   {50, 20, 1},  {200, 2, 1},  {200, 6, 1},   {200, 20, 1},
                             {1000, 2, 1}, {1000, 6, 1}, {1000, 20, 1}};
#define SPEED_NCELLS ((int)(sizeof CELLS / sizeof CELLS[0]))

typedef struct Options {
    int reps;        /* repetitions for n < SPEED_LARGE_N */
    int reps_large;  /* repetitions for n >= SPEED_LARGE_N */
    double budget_s; /* per cell: no new repetition after this much time */
    int cells;       /* only the first this many cells */
    bool json;       /* one JSON object per cell */
    bool cmaes_only; /* only the cmaes cells */
} Options;

/* The cmaes cells: (n, d); many repetitions, as a proposal takes ms. */
static const int CMAES_CELLS[][2] = {{1000, 6}, {10000, 6}, {1000, 20}, {10000, 20}};
#define CMAES_NCELLS ((int)(sizeof CMAES_CELLS / sizeof CMAES_CELLS[0]))

typedef struct CellResult {
    int reps;         /* repetitions done; 0 = not measured */
    double median_ms; /* median wall time of one proposal */
    double min_ms, max_ms;
    char error[512]; /* non-empty when a proposal failed */
} CellResult;

/* splitmix64: the histories' configs, reproducible from the cell alone. */
static double next_uniform(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* A smooth loss with one basin off-centre and a gentle ripple, so the GP has
 * real structure to fit in every dimension (weights fall with j). */
static double synthetic_loss(const double *u, int d)
{
    double sum = 0.0;
    for (int j = 0; j < d; j++) {
        double w = 1.0 / (1.0 + 0.25 * j);
        double c = 0.2 + 0.6 * (double)((j * 7) % 10) / 10.0;
        sum += w * (u[j] - c) * (u[j] - c);
    }
    return sum + 0.05 * sin(6.0 * u[0]) * cos(4.0 * u[d > 1 ? 1 : 0]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* tpe: the same history shape (n random configs, the synthetic loss),
 * tpe_propose(first = n, count = 1) timed; n = 1,000 and 10,000, d = 2, 6
 * and 20. It needs no BLAS and no bayes.c. The goal is at least 20
 * times Optuna's per-proposal time at n = 1,000 (bench/README.md). */
typedef struct TpeCell {
    int n, d;
} TpeCell;
static const TpeCell TPE_CELLS[] = {{1000, 6},  {10000, 6}, {1000, 2},
                                    {1000, 20}, {10000, 2}, {10000, 20}};
#define TPE_NCELLS ((int)(sizeof TPE_CELLS / sizeof TPE_CELLS[0]))

static void measure_tpe(const TpeCell *cell, const Options *opt, CellResult *r)
{
    memset(r, 0, sizeof *r);
    int n = cell->n, d = cell->d;
    json_t *sj = json_object();
    for (int j = 0; j < d; j++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", j);
        json_object_set_new(sj, name,
                            json_pack("{s:s, s:f, s:f}", "type", "uniform", "low", 0.0, "high",
                                      1.0));
    }
    Space *space = NULL;
    RungError err;
    int rc = space_parse(sj, &space, &err);
    json_decref(sj);
    if (rc != 0) {
        snprintf(r->error, sizeof r->error, "space_parse: %s", err.message);
        return;
    }
    json_t **configs = calloc((size_t)n, sizeof *configs);
    BayesObservation *obs = calloc((size_t)n, sizeof *obs);
    uint64_t state = (uint64_t)n * 1000003u + (uint64_t)d;
    for (int i = 0; i < n; i++) {
        double u[SPEED_MAX_DIMS];
        configs[i] = json_object();
        for (int j = 0; j < d; j++) {
            char name[16];
            snprintf(name, sizeof name, "x%d", j);
            u[j] = next_uniform(&state);
            json_object_set_new(configs[i], name, json_real(u[j]));
        }
        obs[i].config = configs[i];
        obs[i].loss = synthetic_loss(u, d);
    }
    BayesHistory history = {.obs = obs, .n_obs = n};
    int reps = opt->reps > 5 ? opt->reps : 5;
    double times[SPEED_MAX_REPS];
    int64_t start = rung_mono_ns();
    for (int k = 0; k < reps; k++) {
        SearcherSpec spec = {.type = SEARCHER_TPE,
                             .seed = (uint64_t)k,
                             .n_initial = 10,
                             .multivariate = true,
                             .group = true,
                             .constant_liar = true};
        json_t *out = NULL;
        int64_t t0 = rung_mono_ns();
        rc = tpe_propose(space, &spec, n, 1, &history, &out, &err);
        int64_t t1 = rung_mono_ns();
        if (rc != 0) {
            snprintf(r->error, sizeof r->error, "tpe_propose (seed %d): %s", k, err.message);
            break;
        }
        json_decref(out);
        times[r->reps++] = (double)(t1 - t0) / 1e6;
        if ((double)(rung_mono_ns() - start) / 1e9 > opt->budget_s)
            break;
    }
    if (r->reps > 0) {
        qsort(times, (size_t)r->reps, sizeof times[0], cmp_double);
        int m = r->reps;
        r->median_ms = m % 2 ? times[m / 2] : 0.5 * (times[m / 2 - 1] + times[m / 2]);
        r->min_ms = times[0];
        r->max_ms = times[m - 1];
    }
    for (int i = 0; i < n; i++)
        json_decref(configs[i]);
    free(configs);
    free(obs);
    space_free(space);
}

static void run_tpe(const Options *opt, CellResult *tpe_results)
{
    printf("\n# tpe: wall time of one tpe_propose(count = 1) after n observations of d uniform "
           "parameters (multivariate, group, constant liar)\n");
    printf("%6s %4s %5s %11s %10s %10s\n", "n", "d", "reps", "median_ms", "min_ms", "max_ms");
    for (int c = 0; c < TPE_NCELLS; c++) {
        CellResult *r = &tpe_results[c];
        measure_tpe(&TPE_CELLS[c], opt, r);
        if (r->error[0] != '\0')
            printf("%6d %4d FAILED: %s\n", TPE_CELLS[c].n, TPE_CELLS[c].d, r->error);
        else
            printf("%6d %4d %5d %11.3f %10.3f %10.3f\n", TPE_CELLS[c].n, TPE_CELLS[c].d, r->reps,
                   r->median_ms, r->min_ms, r->max_ms);
        if (opt->json && r->error[0] == '\0')
            printf("{\"bench\":\"sampler_speed\",\"searcher\":\"tpe\",\"n\":%d,\"d\":%d,"
                   "\"reps\":%d,\"median_ms\":%.6g,\"min_ms\":%.6g,\"max_ms\":%.6g}\n",
                   TPE_CELLS[c].n, TPE_CELLS[c].d, r->reps, r->median_ms, r->min_ms, r->max_ms);
        fflush(stdout);
    }
}

#ifdef RUNG_BENCH_HAVE_BAYES
/* Measures one cell into r. */
static void measure(const Cell *cell, const Options *opt, CellResult *r)
{
    memset(r, 0, sizeof *r);
    int n = cell->n, d = cell->d;
    json_t *sj = json_object();
    for (int j = 0; j < d; j++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", j);
        json_object_set_new(sj, name,
                            json_pack("{s:s, s:f, s:f}", "type", "uniform", "low", 0.0, "high",
                                      1.0));
    }
    Space *space = NULL;
    RungError err;
    int rc = space_parse(sj, &space, &err);
    json_decref(sj);
    if (rc != 0) {
        snprintf(r->error, sizeof r->error, "space_parse: %s", err.message);
        return;
    }
    bool cmaes = cell->m >= 3, cold = cell->m == 4;
    json_t **configs = calloc((size_t)n, sizeof *configs);
    BayesObservation *obs = calloc((size_t)n, sizeof *obs);
    BayesRungRecord *recs = calloc((size_t)n, sizeof *recs);
    uint64_t state = (uint64_t)n * 1000003u + (uint64_t)d;
    for (int i = 0; i < n; i++) {
        double u[SPEED_MAX_DIMS];
        configs[i] = json_object();
        for (int j = 0; j < d; j++) {
            char name[16];
            snprintf(name, sizeof name, "x%d", j);
            u[j] = next_uniform(&state);
            json_object_set_new(configs[i], name, json_real(u[j]));
        }
        obs[i].config = configs[i];
        obs[i].loss = synthetic_loss(u, d);
        for (int j = 0; j < d; j++)
            u[j] = 1.0 - u[j];
        obs[i].more[0] = synthetic_loss(u, d);
    }
    BayesHistory history = {.obs = obs, .n_obs = n, .n_objectives = cmaes ? 1 : cell->m};
    if (cell->m <= 0) {
        /* Rung records: trial k's config at each rung 3^j (j < 4) that 3^j
         * divides k, until there are n records. */
        int nr = 0;
        for (int k = 0; nr < n; k++)
            for (int j = 0, level = 1; j < (cell->m == 0 ? 4 : 1) && nr < n && k % level == 0;
                 j++, level *= 3)
                recs[nr++] = (BayesRungRecord){obs[k].config, level, obs[k].loss + 1.0 / level, k};
        history = (BayesHistory){.rungs = recs, .n_rungs = nr};
    }

    int reps = cmaes ? 25 : n >= SPEED_LARGE_N ? opt->reps_large : opt->reps;
    double times[SPEED_MAX_REPS];
    int64_t start = rung_mono_ns();
    for (int k = 0; k < reps; k++) {
        char text[64];
        snprintf(text, sizeof text, "{\"type\": \"%s\", \"seed\": %d}", cmaes ? "cmaes" : "bayes",
                 k);
        json_t *spec_json = json_loads(text, 0, NULL);
        SearcherSpec spec;
        rc = searcher_parse(spec_json, space, &spec, &err);
        json_decref(spec_json);
        if (rc != 0) {
            snprintf(r->error, sizeof r->error, "searcher_parse: %s", err.message);
            break;
        }
        json_t *out = NULL;
        CmaesCache *memo = NULL;
        if (cmaes && !cold) {
            /* The memo as the proposal of trial n - 1 left it. */
            BayesHistory before = history;
            before.n_obs = n - 1;
            memo = cmaes_cache_new();
            if (memo == NULL ||
                cmaes_propose_cached(memo, space, &spec, n - 1, 1, &before, &out, &err) != 0) {
                snprintf(r->error, sizeof r->error, "cmaes memo: %s", err.message);
                cmaes_cache_free(memo);
                break;
            }
            json_decref(out);
            out = NULL;
        }
        int64_t t0 = rung_mono_ns();
        rc = cmaes          ? cmaes_propose_cached(memo, space, &spec, n, 1, &history, &out, &err)
             : cell->m <= 0 ? bayes_mf_propose(space, &spec, n, 1, &history, &out, NULL, &err)
                            : bayes_propose(space, &spec, n, 1, &history, &out, &err);
        int64_t t1 = rung_mono_ns();
        cmaes_cache_free(memo);
        if (rc != 0) {
            snprintf(r->error, sizeof r->error, "%s (seed %d): %s [%s]",
                     cmaes ? "cmaes_propose" : "bayes_propose", k, err.message,
                     rung_error_string(rc));
            break;
        }
        json_decref(out);
        times[r->reps++] = (double)(t1 - t0) / 1e6;
        if ((double)(rung_mono_ns() - start) / 1e9 > opt->budget_s)
            break;
    }
    if (r->reps > 0) {
        qsort(times, (size_t)r->reps, sizeof times[0], cmp_double);
        int m = r->reps;
        r->median_ms = m % 2 ? times[m / 2] : 0.5 * (times[m / 2 - 1] + times[m / 2]);
        r->min_ms = times[0];
        r->max_ms = times[m - 1];
    }
    for (int i = 0; i < n; i++)
        json_decref(configs[i]);
    free(configs);
    free(obs);
    free(recs);
    space_free(space);
}
#endif

static bool parse_number(const char *arg, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: sampler_speed [--reps N] [--reps-large N] [--budget-s S] [--cells K] [--json]\n"
            "                     [--cmaes-only] [--tpe-only]\n"
            "  --reps N        proposals timed per cell with n < %d (default %d)\n"
            "  --reps-large N  proposals timed per cell with n >= %d (default %d)\n"
            "  --budget-s S    no new repetition in a cell after S seconds (default %g)\n"
            "  --cells K       only the first K cells (the targets' come first)\n"
            "  --json          also print one JSON object per cell\n"
            "  --cmaes-only    only the cmaes cells\n"
            "  --tpe-only      only the tpe cells\n",
            SPEED_LARGE_N, SPEED_DEFAULT_REPS, SPEED_LARGE_N, SPEED_DEFAULT_REPS_LARGE,
            SPEED_DEFAULT_BUDGET_S);
}

/* Prints a target line: value in ms against an upper bound. */
static void target(const char *name, const CellResult *r, double goal)
{
    if (r == NULL || r->reps == 0 || r->error[0] != '\0') {
        printf("target %s: n/a (goal <= %g) short\n", name, goal);
        return;
    }
    printf("target %s: %.3g (goal <= %g) %s\n", name, r->median_ms, goal,
           r->median_ms <= goal ? "ok" : "short");
}

int main(int argc, char **argv)
{
    Options opt = {SPEED_DEFAULT_REPS,
                   SPEED_DEFAULT_REPS_LARGE,
                   SPEED_DEFAULT_BUDGET_S,
                   SPEED_NCELLS,
                   false,
                   false};
    bool tpe_only = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x = 0;
        bool ok = true;
        if (strcmp(a, "--json") == 0) {
            opt.json = true;
            continue;
        } else if (strcmp(a, "--tpe-only") == 0) {
            tpe_only = true;
            continue;
        } else if (strcmp(a, "--cmaes-only") == 0) {
            opt.cmaes_only = true;
            continue;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (v == NULL) {
            ok = false;
        } else if (strcmp(a, "--reps") == 0 && (ok = parse_number(v, 1, SPEED_MAX_REPS, &x))) {
            opt.reps = (int)x;
        } else if (strcmp(a, "--reps-large") == 0 &&
                   (ok = parse_number(v, 1, SPEED_MAX_REPS, &x))) {
            opt.reps_large = (int)x;
        } else if (strcmp(a, "--budget-s") == 0 && (ok = parse_number(v, 0, 3600, &x))) {
            opt.budget_s = x;
        } else if (strcmp(a, "--cells") == 0 && (ok = parse_number(v, 1, SPEED_NCELLS, &x))) {
            opt.cells = (int)x;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "sampler_speed: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }

    /* OpenBLAS's kernel as rungd picks it (server/main.c, common/blascore.h). */
    blascore_pick(argv, BENCH_BLAS_PICKED_ENV);
    CellResult results[SPEED_NCELLS], cmaes_results[2 * CMAES_NCELLS];
    memset(results, 0, sizeof results);
    memset(cmaes_results, 0, sizeof cmaes_results);
    int failures = 0;
    CellResult tpe_results[TPE_NCELLS];
    memset(tpe_results, 0, sizeof tpe_results);
    if (!opt.cmaes_only)
        run_tpe(&opt, tpe_results);
    for (int c = 0; c < TPE_NCELLS; c++)
        failures += tpe_results[c].error[0] != '\0';
    if (tpe_only) {
        printf("\n");
        target("tpe_proposal_ms_n1000_d6", &tpe_results[0], 10);
        return failures == 0 ? 0 : 1;
    }
#ifdef RUNG_BENCH_HAVE_BAYES
    printf("# sampler_speed: wall time of one bayes_propose(count = 1) after n observations "
           "of d uniform parameters\n");
    printf("# OpenBLAS core %s (%s), as rungd runs it\n", gp_blas_core(),
           blascore_origin(BENCH_BLAS_PICKED_ENV));
    printf("%6s %4s %2s %5s %11s %10s %10s\n", "n", "d", "m", "reps", "median_ms", "min_ms",
           "max_ms");
    fflush(stdout);
    for (int c = 0; c < (opt.cmaes_only ? 0 : opt.cells); c++) {
        CellResult *r = &results[c];
        measure(&CELLS[c], &opt, r);
        if (r->error[0] != '\0') {
            failures++;
            printf("%6d %4d %2d FAILED: %s\n", CELLS[c].n, CELLS[c].d, CELLS[c].m, r->error);
        } else {
            printf("%6d %4d %2d %5d %11.3f %10.3f %10.3f\n", CELLS[c].n, CELLS[c].d, CELLS[c].m,
                   r->reps, r->median_ms, r->min_ms, r->max_ms);
        }
        if (opt.json) {
            json_t *line = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "bench", "sampler_speed",
                                     "searcher", "bayes", "n", CELLS[c].n, "d", CELLS[c].d, "m",
                                     CELLS[c].m, "reps", r->reps);
            if (r->error[0] != '\0') {
                json_object_set_new(line, "failed", json_true());
                json_object_set_new(line, "error", json_string(r->error));
            } else {
                json_object_set_new(line, "median_ms", json_real(r->median_ms));
                json_object_set_new(line, "min_ms", json_real(r->min_ms));
                json_object_set_new(line, "max_ms", json_real(r->max_ms));
            }
            char *text = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(6));
            printf("%s\n", text);
            free(text);
            json_decref(line);
        }
        fflush(stdout);
    }
    printf("\n# cmaes: one proposal (count = 1) after n observations of d uniform parameters; "
           "memo: with the memo of the proposal before, as rungd; cold: the whole replay\n");
    printf("%6s %4s %5s %5s %11s %10s %10s\n", "n", "d", "kind", "reps", "median_ms", "min_ms",
           "max_ms");
    for (int c = 0; c < 2 * CMAES_NCELLS; c++) {
        Cell cell = {CMAES_CELLS[c / 2][0], CMAES_CELLS[c / 2][1], 3 + c % 2};
        CellResult *r = &cmaes_results[c];
        measure(&cell, &opt, r);
        const char *kind = cell.m == 4 ? "cold" : "memo";
        if (r->error[0] != '\0') {
            failures++;
            printf("%6d %4d %5s FAILED: %s\n", cell.n, cell.d, kind, r->error);
        } else {
            printf("%6d %4d %5s %5d %11.4f %10.4f %10.4f\n", cell.n, cell.d, kind, r->reps,
                   r->median_ms, r->min_ms, r->max_ms);
        }
        if (opt.json && r->error[0] == '\0')
            printf("{\"bench\":\"sampler_speed\",\"searcher\":\"cmaes\",\"kind\":\"%s\","
                   "\"n\":%d,\"d\":%d,\"reps\":%d,\"median_ms\":%.6g,\"min_ms\":%.6g,"
                   "\"max_ms\":%.6g}\n",
                   kind, cell.n, cell.d, r->reps, r->median_ms, r->min_ms, r->max_ms);
        fflush(stdout);
    }
#else
    printf("# sampler_speed: bayes searcher not available in this build (sampler/bayes.c); "
           "nothing measured\n");
    if (opt.json)
        printf("{\"bench\":\"sampler_speed\",\"searcher\":\"bayes\",\"available\":false}\n");
#endif
    const CellResult *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL, *t5 = NULL;
    for (int c = 0; c < SPEED_NCELLS; c++) {
        if (CELLS[c].n == 100 && CELLS[c].d == 6 && CELLS[c].m == 1)
            t1 = &results[c];
        if (CELLS[c].n == 100 && CELLS[c].d == 6 && CELLS[c].m == 2)
            t3 = &results[c];
        if (CELLS[c].n == 1000 && CELLS[c].d == 20)
            t2 = &results[c];
        if (CELLS[c].m == 0)
            t4 = &results[c];
        if (CELLS[c].m == -1)
            t5 = &results[c];
    }
    printf("\n");
    if (!opt.cmaes_only) { /* the bayes cells were not measured */
        target("proposal_ms_n100_d6", t1, 10);
        target("proposal_ms_n1000_d20", t2, 1000);
        target("proposal_ms_n100_d6_two_objectives", t3, 50);
        target("proposal_ms_1000_rung_records_d7", t4, 50);
        target("proposal_ms_1000_rung_records_d7_one_level", t5, 50);
    }
    /* cmaes (bench/README.md section 5): the cold replay of 10,000 results
     * stays well under a trial's time; the memo's proposal at n = 1,000
     * beside Optuna's is bench/optuna_cmaes_speed.py's target. */
    target("cmaes_cold_proposal_ms_n10000_d6", &cmaes_results[3], 50);
    if (!opt.cmaes_only)
        target("tpe_proposal_ms_n1000_d6", &tpe_results[0], 10);
    return failures == 0 ? 0 : 1;
}
