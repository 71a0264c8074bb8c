/* Several objectives and constraints (bench/multiobjective.sh): Rung's bayes
 * searcher in-process on BraninCurrin, ZDT1-3 (d = 6), DTLZ2 (3 objectives,
 * d = 6), constrained Branin (Gardner et al. 2014) and C2-DTLZ2 (2
 * objectives, d = 6, r = 0.2), one JSON line per problem: for each seed the
 * hypervolume of the feasible points after 50, 86 and 100 evaluations (the
 * reference points of bench/README.md), or for constrained Branin the
 * regret of the best feasible point.
 *
 * Usage: multiobjective_bench SEEDS EVALS [PROBLEM...] */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bayes.h"
#include "pareto.h"
#include "sampler.h"

#define D 6

typedef struct Problem {
    const char *name;
    int d, m, ncon;
    double ref[3];
} Problem;

static const Problem PROBLEMS[] = {
    {"branincurrin", 2, 2, 0, {18.0, 6.0}}, {"zdt1", D, 2, 0, {11.0, 11.0}},
    {"zdt2", D, 2, 0, {11.0, 11.0}},        {"zdt3", D, 2, 0, {11.0, 11.0}},
    {"dtlz2", D, 3, 0, {1.1, 1.1, 1.1}},    {"cbranin", 2, 1, 1, {0}},
    {"c2dtlz2", D, 2, 1, {1.1, 1.1}},
};
#define BRANIN_MIN 0.397887357729739

static double branin(double a, double b)
{
    double x1 = 15 * a - 5, x2 = 15 * b;
    double t = x2 - 5.1 / (4 * M_PI * M_PI) * x1 * x1 + 5 / M_PI * x1 - 6;
    return t * t + 10 * (1 - 1 / (8 * M_PI)) * cos(x1) + 10;
}

static void dtlz2(const double *x, int d, int m, double *f)
{
    double g = 0;
    for (int i = m - 1; i < d; i++)
        g += (x[i] - 0.5) * (x[i] - 0.5);
    for (int k = 0; k < m; k++) {
        double v = 1 + g;
        for (int i = 0; i < m - 1 - k; i++)
            v *= cos(x[i] * M_PI / 2);
        if (k > 0)
            v *= sin(x[m - 1 - k] * M_PI / 2);
        f[k] = v;
    }
}

/* Objectives f (minimized) and constraint g (feasible when <= 0). */
static void evaluate(const Problem *p, const double *x, double *f, double *g)
{
    const char *n = p->name;
    if (strcmp(n, "branincurrin") == 0) {
        f[0] = branin(x[0], x[1]);
        double a = x[0], b = x[1] > 1e-12 ? x[1] : 1e-12;
        f[1] = (1 - exp(-1 / (2 * b))) * (2300 * a * a * a + 1900 * a * a + 2092 * a + 60) /
               (100 * a * a * a + 500 * a * a + 4 * a + 20);
    } else if (strncmp(n, "zdt", 3) == 0) {
        double s = 0;
        for (int i = 1; i < p->d; i++)
            s += x[i];
        double gg = 1 + 9 * s / (p->d - 1), r = x[0] / gg;
        f[0] = x[0];
        if (n[3] == '1')
            f[1] = gg * (1 - sqrt(r));
        else if (n[3] == '2')
            f[1] = gg * (1 - r * r);
        else
            f[1] = gg * (1 - sqrt(r) - r * sin(10 * M_PI * x[0]));
    } else if (strcmp(n, "dtlz2") == 0) {
        dtlz2(x, p->d, 3, f);
    } else if (strcmp(n, "cbranin") == 0) {
        f[0] = branin(x[0], x[1]);
        double x1 = 15 * x[0] - 5, x2 = 15 * x[1];
        g[0] = (x1 - 2.5) * (x1 - 2.5) + (x2 - 7.5) * (x2 - 7.5) - 50;
    } else { /* c2dtlz2, Deb et al. (2001), r = 0.2 */
        dtlz2(x, p->d, 2, f);
        double r = 0.2, best = INFINITY, c = 0;
        for (int i = 0; i < 2; i++) {
            double v = (f[i] - 1) * (f[i] - 1) + f[1 - i] * f[1 - i] - r * r;
            best = v < best ? v : best;
        }
        for (int i = 0; i < 2; i++)
            c += (f[i] - 1 / sqrt(2.0)) * (f[i] - 1 / sqrt(2.0));
        g[0] = fmin(best, c - r * r);
    }
}

int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 0, evals = argc > 2 ? atoi(argv[2]) : 0;
    if (seeds < 1 || evals < 1) {
        fprintf(stderr, "usage: multiobjective_bench SEEDS EVALS [PROBLEM...]\n");
        return 2;
    }
    for (size_t pi = 0; pi < sizeof PROBLEMS / sizeof PROBLEMS[0]; pi++) {
        const Problem *p = &PROBLEMS[pi];
        bool want = argc <= 3;
        for (int a = 3; a < argc; a++)
            want = want || strcmp(argv[a], p->name) == 0;
        if (!want)
            continue;
        char text[1024] = "{";
        for (int i = 0; i < p->d; i++)
            snprintf(text + strlen(text), sizeof text - strlen(text),
                     "%s\"x%d\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}", i ? ", " : "",
                     i);
        strcat(text, "}");
        json_t *sj = json_loads(text, 0, NULL);
        Space *space = NULL;
        RungError err;
        if (sj == NULL || space_parse(sj, &space, &err) != 0) {
            fprintf(stderr, "multiobjective: space\n");
            return 1;
        }
        printf("{\"searcher\": \"rung-bayes\", \"problem\": \"%s\", \"at\": {", p->name);
        int at[3] = {50, 86, 100};
        double *res = calloc((size_t)seeds * 3, sizeof *res);
        for (int seed = 0; seed < seeds; seed++) {
            char st[64];
            snprintf(st, sizeof st, "{\"type\": \"bayes\", \"seed\": %d}", seed);
            json_t *sjs = json_loads(st, 0, NULL);
            SearcherSpec spec;
            if (searcher_parse(sjs, space, &spec, &err) != 0)
                return 1;
            json_decref(sjs);
            BayesObservation *obs = calloc((size_t)evals, sizeof *obs);
            double *y = calloc((size_t)evals * 3, sizeof *y);
            int nf = 0;
            double best = INFINITY;
            for (int n = 0; n < evals; n++) {
                json_t *c = NULL;
                BayesHistory h = {.obs = obs,
                                  .n_obs = n,
                                  .n_objectives = p->m,
                                  .n_constraints = p->ncon};
                if (bayes_propose(space, &spec, n, 1, &h, &c, &err) != 0) {
                    fprintf(stderr, "multiobjective: %s seed %d: %s\n", p->name, seed, err.message);
                    return 1;
                }
                double x[D], f[3], g[1] = {-1};
                for (int i = 0; i < p->d; i++) {
                    char k[16]; /* "x" and any int: -Wformat-truncation under -O1 */
                    snprintf(k, sizeof k, "x%d", i);
                    x[i] = json_real_value(json_object_get(c, k));
                }
                evaluate(p, x, f, g);
                obs[n] = (BayesObservation){.config = c, .loss = f[0], .cons = {g[0]}};
                for (int k = 1; k < p->m; k++)
                    obs[n].more[k - 1] = f[k];
                if (g[0] <= 0) {
                    memcpy(y + (size_t)nf * p->m, f, (size_t)p->m * sizeof *f);
                    nf++;
                    best = f[0] < best ? f[0] : best;
                }
                for (int a = 0; a < 3; a++)
                    if (n + 1 == at[a])
                        res[seed * 3 + a] = p->m == 1 ? best - BRANIN_MIN
                                                      : pareto_hypervolume(y, nf, p->m, p->ref);
            }
            for (int n = 0; n < evals; n++)
                json_decref((json_t *)obs[n].config);
            free(obs);
            free(y);
        }
        for (int a = 0; a < 3; a++) {
            printf("%s\"%d\": [", a ? ", " : "", at[a]);
            for (int s = 0; s < seeds; s++)
                printf("%s%.8g", s ? ", " : "", res[s * 3 + a]);
            printf("]");
        }
        printf("}}\n");
        fflush(stdout);
        free(res);
        space_free(space);
        json_decref(sj);
    }
    return 0;
}
