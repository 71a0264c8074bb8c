/* Parameter importance (bench/importance.sh, bench/README.md "Parameter
 * importance"): Rung's fANOVA (sampler/fanova.h) on random trials of a
 * function whose variance decomposition is known, written to a CSV file
 * that bench/importance_peer.py hands to Optuna's FanovaImportanceEvaluator,
 * so that both tools see the same trials. One JSON line per run: the
 * importances, and the wall and CPU time of fanova_importance alone (the
 * median of --repeat runs).
 *
 * The function, d >= 6 parameters uniform on [0, 1] except c5, a
 * categorical of 3 values uniform over them:
 *
 *   y = 10 sin(pi x0) + 8 x1 + 4 x2^2 + 2 x3 + x4 + (0, 2, 1)[c5]
 *
 * additive, so its first-order variances are exact: 100 (1/2 - 4/pi^2) =
 * 9.47, 64/12 = 5.33, 16 (1/5 - 1/9) = 1.42, 4/12 = 0.333, 1/12 = 0.083
 * and 2/3 = 0.667 for c5 (the levels' variance); parameters 6 .. d-1 do
 * nothing. The truth's order: x0, x1, x2, c5, x3, x4.
 *
 * Usage: importance_bench --seed S [--n N] [--d D] [--csv FILE] [--repeat R] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fanova.h"
#include "splitmix.h"

#define CATEGORICAL 5 /* the categorical parameter's column */
#define LEVELS 3

static const double LEVEL[LEVELS] = {0, 2, 1};

static double draw(unsigned long long seed, unsigned long long k)
{
    return (double)(rung_splitmix_at(seed, k) >> 11) * 0x1.0p-53;
}

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    long long seed = -1;
    int n = 200, d = 6, repeat = 1;
    const char *csv = NULL;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--seed") == 0)
            seed = atoll(argv[a + 1]);
        else if (strcmp(argv[a], "--n") == 0)
            n = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--d") == 0)
            d = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--repeat") == 0)
            repeat = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--csv") == 0)
            csv = argv[a + 1];
        else
            seed = -2;
    }
    if (seed < 0 || n < 2 || d < 6 || repeat < 1 || argc % 2 == 0) {
        fprintf(stderr, "usage: importance_bench --seed S [--n N>=2] [--d D>=6] [--csv FILE] "
                        "[--repeat R]\n");
        return 2;
    }
    double *x = malloc((size_t)n * d * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    int *cats = calloc((size_t)d, sizeof *cats);
    double *imp = malloc((size_t)d * sizeof *imp), *sd = malloc((size_t)d * sizeof *sd);
    double *wall = malloc((size_t)repeat * sizeof *wall),
           *cpu = malloc((size_t)repeat * sizeof *cpu);
    if (!x || !y || !cats || !imp || !sd || !wall || !cpu) {
        fprintf(stderr, "importance_bench: out of memory\n");
        return 1;
    }
    cats[CATEGORICAL] = LEVELS;
    unsigned long long key = rung_splitmix64((unsigned long long)seed);
    for (int i = 0; i < n; i++) {
        double *r = x + (size_t)i * d;
        for (int j = 0; j < d; j++)
            r[j] = draw(key, (unsigned long long)i * d + j + 1);
        r[CATEGORICAL] = floor(r[CATEGORICAL] * LEVELS);
        y[i] = 10 * sin(M_PI * r[0]) + 8 * r[1] + 4 * r[2] * r[2] + 2 * r[3] + r[4] +
               LEVEL[(int)r[CATEGORICAL]];
    }
    if (csv != NULL) {
        FILE *f = fopen(csv, "w");
        if (f == NULL) {
            perror(csv);
            return 1;
        }
        /* Columns x<j> numeric, c<j>_<k> categorical of k values, then y. */
        for (int j = 0; j < d; j++) {
            if (cats[j] != 0)
                fprintf(f, "c%d_%d,", j, cats[j]);
            else
                fprintf(f, "x%d,", j);
        }
        fprintf(f, "y\n");
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++)
                fprintf(f, "%.17g,", x[(size_t)i * d + j]);
            fprintf(f, "%.17g\n", y[i]);
        }
        if (fclose(f) != 0) {
            perror(csv);
            return 1;
        }
    }
    FanovaData data = {n, d, x, cats, y};
    FanovaOptions o;
    fanova_options_default(&o);
    o.seed = (unsigned long long)seed;
    char why[256];
    for (int r = 0; r < repeat; r++) {
        double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (fanova_importance(&data, &o, imp, sd, NULL, why, sizeof why) != 0) {
            fprintf(stderr, "importance_bench: %s\n", why);
            return 1;
        }
        wall[r] = seconds(CLOCK_MONOTONIC) - w0;
        cpu[r] = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    qsort(wall, (size_t)repeat, sizeof *wall, cmp_double);
    qsort(cpu, (size_t)repeat, sizeof *cpu, cmp_double);
    printf("{\"bench\": \"importance\", \"tool\": \"rung\", \"seed\": %lld, \"n\": %d, \"d\": %d, "
           "\"wall_s\": %.4f, \"cpu_s\": %.4f, \"repeat\": %d, \"importance\": [",
           seed, n, d, wall[repeat / 2], cpu[repeat / 2], repeat);
    for (int j = 0; j < d; j++)
        printf("%s%.6g", j ? ", " : "", imp[j]);
    printf("], \"std\": [");
    for (int j = 0; j < d; j++)
        printf("%s%.6g", j ? ", " : "", sd[j]);
    printf("]}\n");
    free(x);
    free(y);
    free(cats);
    free(imp);
    free(sd);
    free(wall);
    free(cpu);
    return 0;
}
