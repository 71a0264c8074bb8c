/* bench/warm_start: the warm_start target of bayes (docs/searchers.md,
 * "Warm start: measured"), on the very source points bench/warm_start_peers.py
 * gives its peers.
 *
 * The protocol is warm_start_peers.py's: Branin over x1 in [-5, 10], x2 in
 * [0, 15]; per seed, 30 uniform random source points (numpy's
 * RandomState(seed), written by `warm_start_peers.py --dump-sources FILE`,
 * one JSON line per seed) are the warm observations, then 10 new trials;
 * the regret is the best new value minus f* = 0.397887. bayes_propose is
 * called as rungd calls it for a warm-started experiment: the 30 results
 * first in the history, n_initial lowered by their number to 0 (warm.c's
 * warm_n_initial), the searcher seeded by the seed. Two ways to ask:
 *
 *   sequential  each new trial proposed with every result before it (one
 *               worker that waits for each proposal: what the peers do)
 *   ahead       each proposed while the trial before it still runs (its
 *               config a pending point): what rungd does with one worker,
 *               since it proposes the next trial ahead of the lease
 *
 * Output: per way a line as warm_start_peers.py prints (median, quartiles,
 * the share of seeds at or below 0.01, the worst), and with --json one JSON
 * object with every seed's regret.
 *
 * Usage: warm_start_bench --sources FILE [--ways sequential,ahead] [--json] */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#ifdef RUNG_BENCH_HAVE_BAYES
#include "bayes.h"
#endif

#define N_SOURCE 30
#define N_NEW 10
#define MAX_SEEDS 1000
#define F_STAR 0.397887357729738
#define GOAL 0.01

#ifdef RUNG_BENCH_HAVE_BAYES
static double branin(double x1, double x2)
{
    const double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
    double a = x2 - b * x1 * x1 + c * x1 - 6;
    return a * a + 10 * (1 - t) * cos(x1) + 10;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.quantile's linear rule over sorted v[0 .. n-1]. */
static double quantile(const double *v, int n, double q)
{
    double i = q * (n - 1);
    int lo = (int)floor(i);
    return lo + 1 < n ? v[lo] + (i - lo) * (v[lo + 1] - v[lo]) : v[n - 1];
}

/* One seed: the regret of the best of N_NEW trials after the sources. */
static int run_seed(const Space *space, int64_t seed, const json_t *points, bool ahead,
                    double *regret)
{
    char text[96];
    snprintf(text, sizeof text, "{\"type\": \"bayes\", \"seed\": %lld}", (long long)seed);
    json_t *sj = json_loads(text, 0, NULL);
    SearcherSpec spec;
    RungError err;
    int rc = searcher_parse(sj, space, &spec, &err);
    json_decref(sj);
    if (rc != 0) {
        fprintf(stderr, "warm_start: %s\n", err.message);
        return -1;
    }
    spec.n_initial = 0; /* warm_n_initial: 30 warm results use up the default 5 */
    BayesObservation obs[N_SOURCE + N_NEW];
    json_t *configs[N_SOURCE + N_NEW];
    int n = 0;
    memset(obs, 0, sizeof obs);
    for (size_t i = 0; i < json_array_size(points) && n < N_SOURCE; i++) {
        json_t *p = json_array_get(points, i);
        double x1 = json_number_value(json_array_get(p, 0)),
               x2 = json_number_value(json_array_get(p, 1));
        configs[n] = json_pack("{s:f, s:f}", "x1", x1, "x2", x2);
        obs[n].config = configs[n];
        obs[n].loss = branin(x1, x2);
        n++;
    }
    double best = INFINITY;
    rc = 0;
    for (int k = 0; k < N_NEW && rc == 0; k++) {
        BayesHistory h = {.obs = obs, .n_obs = n};
        if (ahead && k > 0) {
            /* asked before trial k - 1 reported: its config is pending */
            h.n_obs = n - 1;
            h.pending = (const json_t *const *)&configs[n - 1];
            h.n_pending = 1;
        }
        json_t *out = NULL;
        rc = bayes_propose(space, &spec, k, 1, &h, &out, &err);
        if (rc != 0) {
            fprintf(stderr, "warm_start: seed %lld: %s\n", (long long)seed, err.message);
            break;
        }
        double v = branin(json_real_value(json_object_get(out, "x1")),
                          json_real_value(json_object_get(out, "x2")));
        best = fmin(best, v);
        configs[n] = out;
        obs[n].config = out;
        obs[n].loss = v;
        n++;
    }
    for (int i = 0; i < n; i++)
        json_decref(configs[i]);
    *regret = best - F_STAR;
    return rc;
}

#endif

int main(int argc, char **argv)
{
#ifndef RUNG_BENCH_HAVE_BAYES
    (void)argc, (void)argv;
    fprintf(stderr, "warm_start: not available: this build's sampler has no bayes\n");
    return 2;
#else
    const char *sources = NULL, *ways = "sequential,ahead";
    bool as_json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sources") == 0 && i + 1 < argc)
            sources = argv[++i];
        else if (strcmp(argv[i], "--ways") == 0 && i + 1 < argc)
            ways = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            as_json = true;
        else {
            sources = NULL; /* anything else: the usage */
            break;
        }
    }
    if (sources == NULL) {
        fprintf(stderr, "usage: warm_start_bench --sources FILE (warm_start_peers.py "
                        "--dump-sources FILE) [--ways sequential,ahead] [--json]\n");
        return 2;
    }
    FILE *f = fopen(sources, "r");
    if (f == NULL) {
        perror(sources);
        return 2;
    }
    static int64_t seeds[MAX_SEEDS];
    static json_t *points[MAX_SEEDS];
    int n_seeds = 0;
    char line[8192];
    while (n_seeds < MAX_SEEDS && fgets(line, sizeof line, f)) {
        json_error_t je;
        json_t *row = json_loads(line, 0, &je);
        json_t *p = json_object_get(row, "points");
        if (!json_is_integer(json_object_get(row, "seed")) || json_array_size(p) != N_SOURCE) {
            fprintf(stderr,
                    "warm_start: %s line %d: want {\"seed\": N, \"points\": [30 x [x1, x2]]}\n",
                    sources, n_seeds + 1);
            return 2;
        }
        seeds[n_seeds] = json_integer_value(json_object_get(row, "seed"));
        points[n_seeds++] = json_incref(p);
        json_decref(row);
    }
    fclose(f);

    json_t *space_json = json_pack("{s:{s:s, s:i, s:i}, s:{s:s, s:i, s:i}}", "x1", "type",
                                   "uniform", "low", -5, "high", 10, "x2", "type", "uniform", "low",
                                   0, "high", 15);
    Space *space;
    RungError err;
    if (space_parse(space_json, &space, &err) != 0) {
        fprintf(stderr, "warm_start: %s\n", err.message);
        return 1;
    }
    printf("# Branin, %d source points + %d new, %d seeds from %s; goal <= %g\n", N_SOURCE, N_NEW,
           n_seeds, sources, GOAL);
    printf("%-22s %5s %9s %9s %9s %7s %8s\n", "way", "seeds", "median", "q1", "q3", "<=0.01",
           "worst");
    char *list = strdup(ways);
    for (char *way = strtok(list, ","); way; way = strtok(NULL, ",")) {
        bool ahead = strcmp(way, "ahead") == 0;
        if (!ahead && strcmp(way, "sequential") != 0) {
            fprintf(stderr, "warm_start: --ways: '%s' is not sequential or ahead\n", way);
            return 2;
        }
        static double regret[MAX_SEEDS], sorted[MAX_SEEDS];
        int hit = 0;
        for (int s = 0; s < n_seeds; s++) {
            if (run_seed(space, seeds[s], points[s], ahead, &regret[s]) != 0)
                return 1;
            hit += regret[s] <= GOAL;
        }
        memcpy(sorted, regret, (size_t)n_seeds * sizeof *sorted);
        qsort(sorted, (size_t)n_seeds, sizeof *sorted, cmp_double);
        char name[32];
        snprintf(name, sizeof name, "rung-bayes-%s", way);
        printf("%-22s %5d %9.5f %9.5f %9.5f %6.1f%% %8.4f\n", name, n_seeds,
               quantile(sorted, n_seeds, 0.5), quantile(sorted, n_seeds, 0.25),
               quantile(sorted, n_seeds, 0.75), 100.0 * hit / n_seeds, sorted[n_seeds - 1]);
        if (as_json) {
            json_t *r = json_array();
            for (int s = 0; s < n_seeds; s++)
                json_array_append_new(r, json_real(round(regret[s] * 1e6) / 1e6));
            json_t *o = json_pack("{s:s, s:s, s:i, s:f, s:f, s:o}", "bench", "warm_start", "method",
                                  name, "seeds", n_seeds, "median", quantile(sorted, n_seeds, 0.5),
                                  "frac_le_0.01", (double)hit / n_seeds, "regrets", r);
            char *text = json_dumps(o, JSON_COMPACT);
            printf("%s\n", text);
            free(text);
            json_decref(o);
        }
    }
    free(list);
    for (int s = 0; s < n_seeds; s++)
        json_decref(points[s]);
    space_free(space);
    json_decref(space_json);
    return 0;
#endif
}
