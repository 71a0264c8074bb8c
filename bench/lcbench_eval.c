/* lcbench_eval: bench/lcbench.c's evaluator from the command line
 * (bench/README.md, "LCBench").
 *
 *   lcbench_eval --graph DIR --eval ROWS_FILE
 *       ROWS_FILE: one row a line, "x_cat x_cont[0] .. x_cont[7]"; prints
 *       each row's six outputs, one row a line (what
 *       `bench/lcbench_export.py check` compares with numpy's)
 *   lcbench_eval --graph DIR --speed [--seconds S]
 *       evaluations/s at batches of 1, 52 (one config's whole curve) and
 *       1024 rows, each for about S seconds (1) on random rows
 * DIR holds lcbench_graph.json and .bin (bench/lcbench_export.py export). */
#include "lcbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int eval_file(LcbGraph *g, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "lcbench_eval: %s: cannot open\n", path);
        return 1;
    }
    size_t cap = 1024, n = 0;
    int32_t *cat = malloc(cap * sizeof(*cat));
    float *cont = malloc(cap * LCB_X_CONT * sizeof(*cont));
    int c;
    float x[LCB_X_CONT];
    int rc = 0;
    int got;
    while ((got = fscanf(f, "%d %f %f %f %f %f %f %f %f", &c, &x[0], &x[1], &x[2], &x[3], &x[4],
                         &x[5], &x[6], &x[7])) == 9) {
        if (n == cap) {
            cap *= 2;
            cat = realloc(cat, cap * sizeof(*cat));
            cont = realloc(cont, cap * LCB_X_CONT * sizeof(*cont));
        }
        if (cat == NULL || cont == NULL) {
            fprintf(stderr, "lcbench_eval: out of memory\n");
            return 1;
        }
        cat[n] = c;
        memcpy(cont + n * LCB_X_CONT, x, sizeof(x));
        n++;
    }
    if (got != EOF) {
        fprintf(stderr, "lcbench_eval: %s: line %zu: needs 9 numbers\n", path, n + 1);
        rc = 1;
    }
    fclose(f);
    float *out = malloc((n ? n : 1) * LCB_OUTPUTS * sizeof(*out));
    char err[512];
    for (size_t i = 0; rc == 0 && i < n; i += LCB_MAX_ROWS) {
        int m = (int)(n - i < LCB_MAX_ROWS ? n - i : LCB_MAX_ROWS);
        if (lcb_eval(g, m, cat + i, cont + i * LCB_X_CONT, out + i * LCB_OUTPUTS, err,
                     sizeof(err)) != 0) {
            fprintf(stderr, "lcbench_eval: %s\n", err);
            rc = 1;
        }
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        for (int j = 0; j < LCB_OUTPUTS; j++)
            printf("%.9g%c", out[i * LCB_OUTPUTS + j], j + 1 < LCB_OUTPUTS ? ' ' : '\n');
    free(cat);
    free(cont);
    free(out);
    return rc;
}

static int speed(LcbGraph *g, double seconds)
{
    static const int batches[] = {1, 52, 1024};
    int max = 1024;
    int32_t *cat = malloc((size_t)max * sizeof(*cat));
    float *cont = malloc((size_t)max * LCB_X_CONT * sizeof(*cont));
    float *out = malloc((size_t)max * LCB_OUTPUTS * sizeof(*out));
    uint64_t s = 40;
    for (int i = 0; i < max; i++) {
        /* random rows inside config_space.json's box; the network's cost
         * does not depend on the values */
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        cat[i] = (int32_t)(1 + (s >> 33) % 35);
        float *x = cont + i * LCB_X_CONT;
        x[0] = (float)(1 + i % 52);
        x[1] = 91;
        x[2] = 0.003f;
        x[3] = 0.5f;
        x[4] = 0.01f;
        x[5] = 3;
        x[6] = 256;
        x[7] = 0.5f;
    }
    char err[512];
    for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
        int n = batches[b];
        long calls = 0;
        double t0 = now(), t;
        do {
            if (lcb_eval(g, n, cat, cont, out, err, sizeof(err)) != 0) {
                fprintf(stderr, "lcbench_eval: %s\n", err);
                return 1;
            }
            calls++;
            t = now();
        } while (t - t0 < seconds);
        printf("batch %5d: %10.0f evaluations/s (%ld calls in %.2f s)\n", n,
               (double)calls * n / (t - t0), calls, t - t0);
    }
    free(cat);
    free(cont);
    free(out);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: lcbench_eval --graph DIR (--eval ROWS_FILE | --speed [--seconds S])\n");
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *rows = NULL;
    int do_speed = 0;
    double seconds = 1.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--graph") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--eval") == 0 && i + 1 < argc) {
            rows = argv[++i];
        } else if (strcmp(argv[i], "--speed") == 0) {
            do_speed = 1;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
            if (!(seconds > 0)) {
                fprintf(stderr, "lcbench_eval: --seconds: must be > 0\n");
                return 2;
            }
        } else {
            usage();
            return 2;
        }
    }
    if (dir == NULL || (rows == NULL) == (do_speed == 0)) {
        usage();
        return 2;
    }
    char err[512];
    LcbGraph *g = lcb_load(dir, err, sizeof(err));
    if (g == NULL) {
        fprintf(stderr, "lcbench_eval: %s\n", err);
        return 1;
    }
    int rc = rows ? eval_file(g, rows) : speed(g, seconds);
    lcb_free(g);
    return rc;
}
