/* gemm_share: the GEMMs of one rung-train step alone, through OpenBLAS
 * sgemm, as a samples/s bound (bench/README.md, section 4).
 *
 *   gemm_share [--batches 64,256,1024] [--threads T] [--ranks K]
 *              [--hidden 512,256] [--layout rung|torch] [--min-time S] [--big]
 *
 * For an MLP 784-H1-...-10 at batch B, one step is, per layer l (D inputs,
 * H outputs, kernels/ops_cpu.c):
 *   forward  Y[B,H]  = X[B,D] W[D,H]          sgemm NN  M=B N=H K=D
 *   dW       dW[D,H] = X[B,D]^T dY[B,H]       sgemm TN  M=D N=H K=B
 *   dX       dX[B,D] = dY[B,H] W[D,H]^T       sgemm NT  M=B N=D K=H  (not layer 0)
 * --layout torch runs the transposes PyTorch's Linear runs with W stored
 * [H,D] (forward NT, dW = dY^T X as TN with M=H N=D, dX = dY W as NN), to
 * tell a layout's cost from the arithmetic's.
 *
 * With --ranks K, K threads each run the step for their B/K rows at once,
 * each with OpenBLAS set to T threads, between barriers, as rung-train's
 * ranks do. The time of a step is the best mean over rounds of at least
 * --min-time seconds (default 0.3) after a warm-up; the bound is B / that.
 * It prints, per batch, one line for a person and one JSON object:
 *   {"bench": "trainer", "tool": "gemm", "batch": B, "threads": T,
 *    "ranks": K, "layout": "rung", "core": "SkylakeX", "step_s": ...,
 *    "samples_per_s": ..., "gflops": ..., "shapes": [{"op": "fwd0",
 *    "m": ..., "n": ..., "k": ..., "s": ...}, ...]}
 * (per-shape times measured one shape at a time on rank 0's sizes). --big
 * also prints sgemm 2048^3 GFLOP/s, bench/README.md's reference figure.
 *
 * OpenBLAS reads OPENBLAS_CORETYPE when it loads: set it in the environment
 * to choose the kernel; the core it runs is in every line. */
#include <cblas.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LAYERS 8   /* hidden layers, as far as anyone benchmarks */
#define MAX_BATCHES 16 /* entries of --batches */
#define MAX_RANKS 16   /* --ranks, as rung-train's TRAIN_MAX_RANKS at most */
#define MAX_GEMMS (3 * (MAX_LAYERS + 1))
#define IN_DIM 784
#define CLASSES 10

typedef struct Gemm {
    char op[8]; /* "fwd0", "dw0", "dx1", ... */
    bool ta, tb;
    int m, n, k;
    int lda, ldb, ldc;
    size_t a, b, c; /* which buffers: indices into Rank.buf */
} Gemm;

typedef struct Rank {
    float *buf[3 * MAX_GEMMS]; /* a, b, c of each GEMM, sized for it */
    Gemm gemms[MAX_GEMMS];
    int n_gemms;
} Rank;

typedef struct Shared {
    Rank ranks[MAX_RANKS];
    int k;
    int threads;
    int64_t steps; /* steps each rank runs in the round */
    pthread_barrier_t barrier;
} Shared;

typedef struct Worker {
    Shared *sh;
    int r;
} Worker;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static float *alloc_fill(size_t n)
{
    float *p = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
    if (p == NULL) {
        fprintf(stderr, "gemm_share: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    return p;
}

/* Adds C[m,n] = op(A) op(B), inner k, row-major, with its buffers. */
static void add_gemm(Rank *rk, const char *op, bool ta, bool tb, int m, int n, int k)
{
    Gemm *g = &rk->gemms[rk->n_gemms];
    snprintf(g->op, sizeof g->op, "%s", op);
    g->ta = ta;
    g->tb = tb;
    g->m = m;
    g->n = n;
    g->k = k;
    g->lda = ta ? m : k;
    g->ldb = tb ? k : n;
    g->ldc = n;
    size_t i = (size_t)rk->n_gemms * 3;
    rk->buf[i] = alloc_fill((size_t)m * k);
    rk->buf[i + 1] = alloc_fill((size_t)k * n);
    rk->buf[i + 2] = alloc_fill((size_t)m * n);
    g->a = i;
    g->b = i + 1;
    g->c = i + 2;
    rk->n_gemms++;
}

static void build_step(Rank *rk, int rows, const int *hidden, int n_hidden, bool torch)
{
    int dims[MAX_LAYERS + 2];
    dims[0] = IN_DIM;
    for (int l = 0; l < n_hidden; l++)
        dims[l + 1] = hidden[l];
    dims[n_hidden + 1] = CLASSES;
    char name[16];
    for (int l = 0; l <= n_hidden; l++) {
        int D = dims[l], H = dims[l + 1];
        snprintf(name, sizeof name, "fwd%d", l);
        add_gemm(rk, name, false, torch, rows, H, D);
    }
    for (int l = n_hidden; l >= 0; l--) {
        int D = dims[l], H = dims[l + 1];
        snprintf(name, sizeof name, "dw%d", l);
        if (torch)
            add_gemm(rk, name, true, false, H, D, rows);
        else
            add_gemm(rk, name, true, false, D, H, rows);
        if (l > 0) {
            snprintf(name, sizeof name, "dx%d", l);
            add_gemm(rk, name, false, !torch, rows, D, H);
        }
    }
}

static void run_gemm(Rank *rk, const Gemm *g)
{
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
                g->m, g->n, g->k, 1.0f, rk->buf[g->a], g->lda, rk->buf[g->b], g->ldb, 0.0f,
                rk->buf[g->c], g->ldc);
}

static void run_step(Rank *rk)
{
    for (int i = 0; i < rk->n_gemms; i++)
        run_gemm(rk, &rk->gemms[i]);
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    Shared *sh = w->sh;
    for (int64_t s = 0; s < sh->steps; s++) {
        run_step(&sh->ranks[w->r]);
        pthread_barrier_wait(&sh->barrier);
    }
    return NULL;
}

/* Seconds per step of the K ranks running `steps` steps together. */
static double round_of(Shared *sh, int64_t steps)
{
    sh->steps = steps;
    pthread_t th[MAX_RANKS];
    Worker w[MAX_RANKS];
    double t0 = now_s();
    for (int r = 1; r < sh->k; r++) {
        w[r] = (Worker){sh, r};
        if (pthread_create(&th[r], NULL, worker_main, &w[r]) != 0) {
            fprintf(stderr, "gemm_share: cannot start a rank thread\n");
            exit(1);
        }
    }
    w[0] = (Worker){sh, 0};
    worker_main(&w[0]);
    for (int r = 1; r < sh->k; r++)
        pthread_join(th[r], NULL);
    return (now_s() - t0) / (double)steps;
}

/* Best mean over `rounds` rounds of at least min_time seconds each. */
static double best_time(Shared *sh, double min_time, int rounds)
{
    double per = round_of(sh, 3); /* warm-up, and a first estimate */
    int64_t steps = (int64_t)(min_time / (per > 1e-7 ? per : 1e-7)) + 1;
    double best = 1e30;
    for (int i = 0; i < rounds; i++) {
        double t = round_of(sh, steps);
        best = t < best ? t : best;
    }
    return best;
}

static double time_one(Rank *rk, const Gemm *g, double min_time)
{
    for (int i = 0; i < 3; i++)
        run_gemm(rk, g);
    double best = 1e30;
    for (int round = 0; round < 3; round++) {
        int64_t reps = 0;
        double t0 = now_s(), t;
        do {
            run_gemm(rk, g);
            reps++;
            t = now_s() - t0;
        } while (t < min_time / 3);
        best = t / (double)reps < best ? t / (double)reps : best;
    }
    return best;
}

static int parse_list(const char *text, int *out, int max, int lo, int hi, const char *what)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < lo || v > hi || n >= max) {
            fprintf(stderr,
                    "gemm_share: %s: a comma-separated list of integers in [%d, %d] "
                    "(at most %d), not '%s'\n",
                    what, lo, hi, max, text);
            exit(2);
        }
        out[n++] = (int)v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p) {
            fprintf(stderr, "gemm_share: %s: unexpected '%s'\n", what, p);
            exit(2);
        }
    }
    return n;
}

static void big_gemm(void)
{
    int n = 2048;
    float *a = alloc_fill((size_t)n * n), *b = alloc_fill((size_t)n * n),
          *c = alloc_fill((size_t)n * n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double best = 1e30;
    for (int i = 0; i < 3; i++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                    n);
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    double gf = 2.0 * n * n * (double)n / best / 1e9;
    printf("sgemm 2048^3: %.1f GFLOP/s (core %s, %d threads)\n", gf, openblas_get_corename(),
           openblas_get_num_threads());
    printf("{\"bench\": \"trainer\", \"tool\": \"gemm\", \"kind\": \"big\", \"core\": \"%s\", "
           "\"threads\": %d, \"gflops\": %.2f}\n",
           openblas_get_corename(), openblas_get_num_threads(), gf);
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv)
{
    int batches[MAX_BATCHES] = {64, 256, 1024}, n_batches = 3;
    int hidden[MAX_LAYERS] = {512, 256}, n_hidden = 2;
    int threads = 1, ranks = 1;
    double min_time = 0.3;
    bool torch = false, big = false;
    for (int i = 1; i < argc; i++) {
        bool more = i + 1 < argc;
        if (strcmp(argv[i], "--batches") == 0 && more)
            n_batches = parse_list(argv[++i], batches, MAX_BATCHES, 1, 1 << 20, "--batches");
        else if (strcmp(argv[i], "--hidden") == 0 && more)
            n_hidden = parse_list(argv[++i], hidden, MAX_LAYERS, 1, 1 << 16, "--hidden");
        else if (strcmp(argv[i], "--threads") == 0 && more)
            parse_list(argv[++i], &threads, 1, 1, 1024, "--threads");
        else if (strcmp(argv[i], "--ranks") == 0 && more)
            parse_list(argv[++i], &ranks, 1, 1, MAX_RANKS, "--ranks");
        else if (strcmp(argv[i], "--layout") == 0 && more) {
            i++;
            if (strcmp(argv[i], "torch") == 0)
                torch = true;
            else if (strcmp(argv[i], "rung") != 0) {
                fprintf(stderr, "gemm_share: --layout: rung or torch, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--min-time") == 0 && more) {
            min_time = strtod(argv[++i], NULL);
            if (!(min_time > 0 && min_time < 60)) {
                fprintf(stderr, "gemm_share: --min-time: seconds in (0, 60)\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--big") == 0) {
            big = true;
        } else {
            fprintf(stderr, "usage: gemm_share [--batches 64,256,1024] [--threads T] [--ranks K] "
                            "[--hidden 512,256] [--layout rung|torch] [--min-time S] [--big]\n");
            return 2;
        }
    }
    openblas_set_num_threads(threads);
    if (big)
        big_gemm();
    for (int bi = 0; bi < n_batches; bi++) {
        int B = batches[bi];
        if (B < ranks) {
            fprintf(stderr, "gemm_share: batch %d has fewer rows than ranks (%d)\n", B, ranks);
            return 2;
        }
        Shared *sh = calloc(1, sizeof *sh);
        if (sh == NULL)
            return 1;
        sh->k = ranks;
        sh->threads = threads;
        for (int r = 0; r < ranks; r++) {
            /* rank r's rows of the batch, as data_shard splits it */
            int rows = B / ranks + (r < B % ranks ? 1 : 0);
            build_step(&sh->ranks[r], rows, hidden, n_hidden, torch);
        }
        pthread_barrier_init(&sh->barrier, NULL, (unsigned)ranks);
        double step = best_time(sh, min_time, 3);
        pthread_barrier_destroy(&sh->barrier);
        double flops = 0;
        Rank *r0 = &sh->ranks[0];
        for (int r = 0; r < ranks; r++)
            for (int i = 0; i < sh->ranks[r].n_gemms; i++) {
                const Gemm *g = &sh->ranks[r].gemms[i];
                flops += 2.0 * g->m * (double)g->n * g->k;
            }
        printf("gemm step: batch %d, %d rank(s) x %d thread(s), %s layout, core %s: %.1f us, "
               "%.0f samples/s, %.1f GFLOP/s\n",
               B, ranks, threads, torch ? "torch" : "rung", openblas_get_corename(), step * 1e6,
               B / step, flops / step / 1e9);
        printf("{\"bench\": \"trainer\", \"tool\": \"gemm\", \"kind\": \"step\", \"batch\": %d, "
               "\"threads\": %d, \"ranks\": %d, \"layout\": \"%s\", \"core\": \"%s\", "
               "\"step_s\": %.9g, \"samples_per_s\": %.6g, \"gflops\": %.4g, \"shapes\": [",
               B, threads, ranks, torch ? "torch" : "rung", openblas_get_corename(), step, B / step,
               flops / step / 1e9);
        /* Shape by shape, rank 0's sizes, one rank running (with --ranks
         * the step above is the figure that counts). */
        for (int i = 0; i < r0->n_gemms; i++) {
            const Gemm *g = &r0->gemms[i];
            double t = time_one(r0, g, min_time / 4);
            printf("%s{\"op\": \"%s\", \"t\": \"%c%c\", \"m\": %d, \"n\": %d, \"k\": %d, "
                   "\"s\": %.9g}",
                   i ? ", " : "", g->op, g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n, g->k, t);
        }
        printf("]}\n");
        fflush(stdout);
        for (int r = 0; r < ranks; r++)
            for (int i = 0; i < 3 * sh->ranks[r].n_gemms; i++)
                free(sh->ranks[r].buf[i]);
        free(sh);
    }
    return 0;
}
