/* The CUDA trainer (kernels/cuda/train_cuda.cu) against the CPU trainer
 * (kernels/train_cpu.c): the same configuration and data must give the same
 * epoch reports to float tolerance (same initial weights, sample order,
 * dropout masks, schedule and optimizer), on every visible GPU (k ranks
 * against one CPU rank: gradients averaged over the global batch either
 * way). Then the parameters themselves after N steps: the GPU's distance
 * from the CPU may be no larger than rounding makes it, which the CPU shows
 * against itself with another summation order (2 ranks against 1); runs
 * that repeat bit for bit (and with CUDA Graphs off); several gradient
 * buckets on a model wider than 256; then what only the CUDA backend does
 * or must survive: checkpoints read by the other backend, a resume of a
 * finished run, a report that stops the run, SIGTERM's flag, an
 * out-of-memory error with numbers, batch_size 0 and its cap. With two or
 * more GPUs also: a rank with no sample in the last step, and --gpus 1
 * (cfg.gpus) among several; with one they print "skip" lines.
 *
 * Without a CUDA device, train_cuda_devices() must say 0 and train_cuda()
 * must fail with a message, not crash; then it prints "skipped: no CUDA
 * device" and exits with RUNG_TEST_SKIPPED, which tests/gpu/gpu.cmake makes
 * ctest count as skipped, not passed: no run was compared. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "data.h"
#include "train.h"

#define MAX_EPOCHS 8
/* The exit status ctest reads as "skipped" (SKIP_RETURN_CODE in gpu.cmake). */
#define RUNG_TEST_SKIPPED 77

typedef struct Log {
    int n;
    TrainEpoch e[MAX_EPOCHS];
    int stop_after; /* nonzero: ask to stop after this many reports */
} Log;

static int record(const TrainEpoch *e, void *ctx)
{
    Log *log = ctx;
    if (log->n < MAX_EPOCHS)
        log->e[log->n++] = *e;
    return log->stop_after != 0 && log->n >= log->stop_after;
}

static int checks, failed;

static void expect(bool ok, const char *what, const char *detail)
{
    checks++;
    failed += !ok;
    printf("%-5s %s%s%s\n", ok ? "ok" : "FAIL", what, detail ? ": " : "", detail ? detail : "");
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *s)
{
    return (float)((double)(rng_next(s) >> 11) * 0x1p-53);
}

/* Overlapping clusters, one per class: learnable, not trivially. */
static Dataset synth(int64_t n, int dim, int classes, uint64_t seed)
{
    Dataset d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.dim = dim;
    d.n_classes = classes;
    d.x = malloc((size_t)n * (size_t)dim * sizeof(float));
    d.y = malloc((size_t)n * sizeof(int32_t));
    float *centers = malloc((size_t)classes * (size_t)dim * sizeof(float));
    if (d.x == NULL || d.y == NULL || centers == NULL) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    uint64_t s = 7;
    for (int i = 0; i < classes * dim; i++)
        centers[i] = 2.0f * uniform(&s) - 1.0f;
    s = seed;
    for (int64_t i = 0; i < n; i++) {
        int c = (int)(rng_next(&s) % (uint64_t)classes);
        d.y[i] = c;
        for (int j = 0; j < dim; j++)
            d.x[i * dim + j] = centers[c * dim + j] + 1.6f * uniform(&s) - 0.8f;
    }
    free(centers);
    return d;
}

static TrainConfig base_config(void)
{
    TrainConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_hidden = 2;
    cfg.hidden[0] = 64;
    cfg.hidden[1] = 32;
    cfg.dropout = 0.2f;
    cfg.optimizer = TRAIN_SGD;
    cfg.lr = 0.05f;
    cfg.momentum = 0.9f;
    cfg.nesterov = true;
    cfg.beta1 = 0.9f;
    cfg.beta2 = 0.999f;
    cfg.eps = 1e-8f;
    cfg.weight_decay = 5e-4f;
    cfg.batch_size = 96; /* 1000 samples: 10 full steps and a short one of 40 */
    cfg.epochs = 3;
    cfg.warmup_epochs = 0.5;
    cfg.seed = 17;
    cfg.precision = TRAIN_FP32;
    cfg.ranks = 1;
    cfg.threads = 1;
    return cfg;
}

static bool close_to(double got, double ref, double atol, double rtol)
{
    return fabs(got - ref) <= atol + rtol * fabs(ref);
}

/* Epoch by epoch: losses within rtol (relative), accuracy within acc_tol. */
static void compare(const char *name, const Log *gpu, const Log *cpu, double rtol, double acc_tol)
{
    char detail[512];
    bool ok = gpu->n == cpu->n && gpu->n > 0;
    int at = -1;
    for (int i = 0; ok && i < gpu->n; i++) {
        const TrainEpoch *g = &gpu->e[i], *c = &cpu->e[i];
        ok = g->epoch == c->epoch && close_to(g->train_loss, c->train_loss, 1e-5, rtol) &&
             close_to(g->val_loss, c->val_loss, 1e-5, rtol) &&
             fabs(g->val_acc - c->val_acc) <= acc_tol;
        at = i;
    }
    if (gpu->n > 0 && cpu->n > 0 && at >= 0) {
        const TrainEpoch *g = &gpu->e[at], *c = &cpu->e[at];
        snprintf(detail, sizeof detail,
                 "%d/%d epochs; epoch %lld: train loss %.6f / %.6f, val loss %.6f / %.6f, "
                 "val acc %.4f / %.4f (gpu / cpu), %.0f samples/s on the GPU",
                 gpu->n, cpu->n, (long long)g->epoch, g->train_loss, c->train_loss, g->val_loss,
                 c->val_loss, g->val_acc, c->val_acc, g->samples_per_s);
    } else {
        snprintf(detail, sizeof detail, "%d / %d epochs reported", gpu->n, cpu->n);
    }
    expect(ok, name, detail);
}

static int run_both(const char *name, const TrainConfig *cfg, const Dataset *train,
                    const Dataset *val, double rtol, double acc_tol)
{
    Log gpu = {0}, cpu = {0};
    char why[512] = "", why_cpu[512] = "";
    int rg = train_cuda(cfg, train, val, record, &gpu, why, sizeof why);
    int rc = train_cpu(cfg, train, val, record, &cpu, why_cpu, sizeof why_cpu);
    if (rg != 0 || rc != 0) {
        char detail[1100];
        snprintf(detail, sizeof detail, "train_cuda %d (%s), train_cpu %d (%s)", rg, why, rc,
                 why_cpu);
        expect(false, name, detail);
        return -1;
    }
    compare(name, &gpu, &cpu, rtol, acc_tol);
    return 0;
}

static void remove_dir(const char *dir)
{
    char path[4096];
    for (int e = 0; e <= MAX_EPOCHS; e++) {
        snprintf(path, sizeof path, "%s/ckpt-%d.bin", dir, e);
        unlink(path);
    }
    rmdir(dir);
}

/* The packed parameter count of cfg's model on data of dim features and
 * `classes` classes (W and b of each layer). */
static size_t n_params(const TrainConfig *cfg, int dim, int classes)
{
    size_t n = 0;
    int in = dim;
    for (int l = 0; l <= cfg->n_hidden; l++) {
        int out = l < cfg->n_hidden ? cfg->hidden[l] : classes;
        n += (size_t)in * (size_t)out + (size_t)out;
        in = out;
    }
    return n;
}

/* Parameters after one epoch of cfg on the GPU (cpu_ranks 0) or the CPU:
 * read back from the run's checkpoint into params (n floats). */
static int params_after(const TrainConfig *base, const Dataset *train, const Dataset *val,
                        int cpu_ranks, float *params, size_t n, char *why, size_t size)
{
    char dir[] = "/tmp/rung-test-train-gpu-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        snprintf(why, size, "mkdtemp failed");
        return -1;
    }
    TrainConfig cfg = *base;
    cfg.epochs = 1;
    cfg.checkpoint_dir = dir;
    cfg.ranks = cpu_ranks > 0 ? cpu_ranks : 1;
    Log log = {0};
    int rc = cpu_ranks > 0 ? train_cpu(&cfg, train, val, record, &log, why, size)
                           : train_cuda(&cfg, train, val, record, &log, why, size);
    int64_t step = 0;
    float *opt = calloc(2 * n + 1, sizeof(float)); /* read, not compared */
    if (rc == 0)
        rc = opt ? checkpoint_load(dir, 1, params, opt, opt + n, n, &step, why, size) : -1;
    free(opt);
    remove_dir(dir);
    return rc;
}

/* ||a - b|| / ||b||, and the largest |a - b| in *max_abs. */
static double rel_dist(const float *a, const float *b, size_t n, double *max_abs)
{
    double d = 0, r = 0;
    *max_abs = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)b[i];
        d += e * e;
        r += (double)b[i] * (double)b[i];
        if (fabs(e) > *max_abs)
            *max_abs = fabs(e);
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* The GPU's parameters after an epoch of `steps` steps against one CPU
 * rank's, next to the CPU's own spread (2 ranks against 1: the same
 * mathematics in another summation order). Float rounding alone moves the
 * GPU no further from the CPU than a small multiple of that spread (and a
 * floor of a few float ulps per step, for a spread that happens to be
 * tiny); a wrong transpose, mask, scale or schedule moves it by orders of
 * magnitude more. */
static void compare_params(const char *name, const TrainConfig *cfg, const Dataset *train,
                           const Dataset *val)
{
    size_t n = n_params(cfg, train->dim, train->n_classes);
    float *g = calloc(n, sizeof(float)), *c1 = calloc(n, sizeof(float));
    float *c2 = calloc(n, sizeof(float));
    char why[512] = "", detail[700];
    if (g == NULL || c1 == NULL || c2 == NULL) {
        expect(false, name, "out of host memory");
    } else if (params_after(cfg, train, val, 0, g, n, why, sizeof why) != 0 ||
               params_after(cfg, train, val, 1, c1, n, why, sizeof why) != 0 ||
               params_after(cfg, train, val, 2, c2, n, why, sizeof why) != 0) {
        expect(false, name, why);
    } else {
        int64_t b = cfg->batch_size < train->n ? cfg->batch_size : train->n;
        int64_t steps = (train->n + b - 1) / b;
        double gmax, cmax;
        double gd = rel_dist(g, c1, n, &gmax), cd = rel_dist(c2, c1, n, &cmax);
        double budget = 10.0 * cd + 1e-6 * (double)steps;
        snprintf(detail, sizeof detail,
                 "%lld steps, %zu parameters: |gpu - cpu| / |cpu| %.3g (max %.3g), cpu 2 ranks "
                 "against 1: %.3g (max %.3g); budget %.3g",
                 (long long)steps, n, gd, gmax, cd, cmax, budget);
        expect(gd <= budget, name, detail);
    }
    free(g), free(c1), free(c2);
}

/* Two GPU runs (the second with CUDA Graphs off when graphs_off) leave the
 * same parameters bit for bit. */
static void determinism(const char *name, const TrainConfig *cfg, const Dataset *train,
                        const Dataset *val, bool graphs_off)
{
    size_t n = n_params(cfg, train->dim, train->n_classes);
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    char why[512] = "";
    int ra = a && b ? params_after(cfg, train, val, 0, a, n, why, sizeof why) : -1;
    if (graphs_off)
        setenv("RUNG_CUDA_GRAPHS", "0", 1);
    int rb = ra == 0 ? params_after(cfg, train, val, 0, b, n, why, sizeof why) : -1;
    unsetenv("RUNG_CUDA_GRAPHS");
    size_t diff = 0;
    for (size_t i = 0; ra == 0 && rb == 0 && i < n; i++)
        diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    char detail[700];
    snprintf(detail, sizeof detail, "%zu of %zu parameters differ%s%s", diff, n, why[0] ? ": " : "",
             why);
    expect(ra == 0 && rb == 0 && diff == 0, name, detail);
    free(a), free(b);
}

/* GPU checkpoints resumed on the CPU, and the other way: the packed
 * layout, the optimizer state and the step count cross over. */
static void checkpoints(const Dataset *train, const Dataset *val)
{
    char dir[] = "/tmp/rung-test-train-gpu-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        expect(false, "checkpoints", "mkdtemp failed");
        return;
    }
    for (int way = 0; way < 2; way++) {
        TrainConfig cfg = base_config();
        cfg.optimizer = TRAIN_ADAMW;
        cfg.lr = 2e-3f;
        cfg.checkpoint_dir = dir;
        Log full = {0}, resumed = {0};
        char why[512] = "";
        /* way 0: the GPU runs 3 epochs with checkpoints, the CPU resumes
         * after epoch 2; way 1: the CPU writes, the GPU resumes. */
        int r1 = way == 0 ? train_cuda(&cfg, train, val, record, &full, why, sizeof why)
                          : train_cpu(&cfg, train, val, record, &full, why, sizeof why);
        cfg.resume_epoch = 2;
        int r2 = r1 != 0    ? -1
                 : way == 0 ? train_cpu(&cfg, train, val, record, &resumed, why, sizeof why)
                            : train_cuda(&cfg, train, val, record, &resumed, why, sizeof why);
        const char *name = way == 0 ? "checkpoint gpu -> cpu resume"
                                    : "checkpoint cpu -> gpu resume";
        if (r1 != 0 || r2 != 0 || resumed.n != 1 || full.n != 3) {
            char detail[700];
            snprintf(detail, sizeof detail, "runs %d %d, %d and %d reports: %s", r1, r2, full.n,
                     resumed.n, why);
            expect(false, name, detail);
        } else {
            Log last = {0};
            last.n = 1;
            last.e[0] = full.e[2];
            compare(name, way == 0 ? &last : &resumed, way == 0 ? &resumed : &last, 2e-3, 0.02);
        }
        if (way == 0) {
            /* Resumed after its last epoch: nothing to do, no report, and
             * no NCCL or GPU memory set up for it. */
            Log none = {0};
            cfg.resume_epoch = 3;
            int r3 = train_cuda(&cfg, train, val, record, &none, why, sizeof why);
            expect(r3 == 0 && none.n == 0, "resume of a finished run ends at once", why);
        }
        remove_dir(dir);
        if (mkdtemp(strcpy(dir, "/tmp/rung-test-train-gpu-XXXXXX")) == NULL)
            return;
    }
    remove_dir(dir);
}

int main(void)
{
    int k = train_cuda_devices();
    Dataset train = synth(1000, 24, 5, 1), val = synth(300, 24, 5, 2);
    if (k == 0) {
        /* The no-driver path must be an error with a message, not a crash. */
        TrainConfig cfg = base_config();
        Log log = {0};
        char why[512] = "";
        int rc = train_cuda(&cfg, &train, &val, record, &log, why, sizeof why);
        data_free(&train);
        data_free(&val);
        if (rc != -1 || why[0] == '\0' || log.n != 0) {
            printf("FAIL  train_cuda without a device returned %d (%s)\n", rc, why);
            return 1;
        }
        printf("skipped: no CUDA device (train_cuda_devices() = 0; train_cuda: %s)\n", why);
        return RUNG_TEST_SKIPPED;
    }
    printf("%d GPU rank(s)\n", k);

    TrainConfig cfg = base_config();
    run_both("sgd nesterov, dropout 0.2, fp32", &cfg, &train, &val, 2e-3, 0.02);

    cfg = base_config();
    cfg.optimizer = TRAIN_ADAMW;
    cfg.lr = 2e-3f;
    cfg.dropout = 0.0f;
    cfg.batch_size = 128;
    cfg.weight_decay = 0.01f;
    run_both("adamw, no dropout, fp32", &cfg, &train, &val, 2e-3, 0.02);

    cfg = base_config();
    cfg.momentum = 0.0f;
    cfg.nesterov = false;
    cfg.n_hidden = 0; /* softmax regression: the output layer alone */
    run_both("plain sgd, no hidden layer", &cfg, &train, &val, 2e-3, 0.02);

    cfg = base_config();
    cfg.precision = TRAIN_BF16;
    run_both("sgd, bf16 GEMMs against fp32 CPU", &cfg, &train, &val, 5e-2, 0.06);

    /* Parameters after N steps, and repeatability. */
    cfg = base_config();
    compare_params("parameters after an epoch, sgd nesterov dropout", &cfg, &train, &val);
    cfg.batch_size = 1000;
    compare_params("parameters after one step", &cfg, &train, &val);
    cfg = base_config();
    cfg.optimizer = TRAIN_ADAMW;
    cfg.lr = 2e-3f;
    compare_params("parameters after an epoch, adamw", &cfg, &train, &val);
    cfg = base_config();
    determinism("two GPU runs: the same parameters bit for bit", &cfg, &train, &val, false);
    determinism("CUDA Graphs off: the same parameters bit for bit", &cfg, &train, &val, true);

    /* Wider than 256 with buckets forced small: every layer its own
     * bucket (all-reduced with 2+ GPUs). */
    cfg = base_config();
    cfg.hidden[0] = 300;
    cfg.hidden[1] = 260;
    cfg.bucket_bytes = 4096;
    run_both("hidden 300-260, 4 KiB buckets", &cfg, &train, &val, 2e-3, 0.02);
    compare_params("parameters, hidden 300-260, 4 KiB buckets", &cfg, &train, &val);

    if (k >= 2) {
        /* 961 samples at batch 96: the last step has 1 sample, and ranks
         * 1..k-1 none (zeros, and the same collectives). */
        Dataset odd = synth(961, 24, 5, 3);
        cfg = base_config();
        run_both("a rank with no sample in the last step", &cfg, &odd, &val, 2e-3, 0.02);
        data_free(&odd);
        /* The first GPU alone among several. */
        cfg = base_config();
        cfg.gpus = 1;
        run_both("gpus 1 of several", &cfg, &train, &val, 2e-3, 0.02);
        compare_params("parameters, gpus 1 of several", &cfg, &train, &val);
    } else {
        printf("skip  a rank with no sample; gpus 1 of several (need 2 GPUs, have %d)\n", k);
    }

    checkpoints(&train, &val);

    /* A report that asks to stop ends the run after that epoch. */
    {
        cfg = base_config();
        Log log = {0};
        log.stop_after = 1;
        char why[512] = "";
        int rc = train_cuda(&cfg, &train, &val, record, &log, why, sizeof why);
        char detail[600];
        snprintf(detail, sizeof detail, "rc %d, %d report(s) %s", rc, log.n, why);
        expect(rc == 0 && log.n == 1, "report asks to stop after epoch 1", detail);
    }
    /* SIGTERM's flag: the ranks agree to stop after the step in progress. */
    {
        cfg = base_config();
        Log log = {0};
        char why[512] = "";
        train_stop_requested = 1;
        int rc = train_cuda(&cfg, &train, &val, record, &log, why, sizeof why);
        train_stop_requested = 0;
        expect(rc == 1 && log.n == 0 && strstr(why, "after step 1") != NULL,
               "train_stop_requested stops after one step", why);
    }
    /* Out of memory: an error with numbers, before anything is allocated. */
    {
        cfg = base_config();
        cfg.n_hidden = TRAIN_MAX_LAYERS;
        for (int l = 0; l < TRAIN_MAX_LAYERS; l++)
            cfg.hidden[l] = TRAIN_MAX_WIDTH;
        cfg.batch_size = 4096;
        Log log = {0};
        char why[512] = "";
        int rc = train_cuda(&cfg, &train, &val, record, &log, why, sizeof why);
        expect(rc == -1 && strncmp(why, "out of GPU memory at batch_size 4096: needs ~", 45) == 0 &&
                   strstr(why, "MiB free") != NULL,
               "out of GPU memory has numbers", why);
    }
    /* batch_size 0: the largest power of two that fits (here: 512). */
    {
        cfg = base_config();
        cfg.batch_size = 0;
        cfg.epochs = 1;
        Log log = {0};
        char why[512] = "";
        int rc = train_cuda(&cfg, &train, &val, record, &log, why, sizeof why);
        expect(rc == 0 && log.n == 1 && isfinite(log.e[0].train_loss) && log.e[0].batch_size == 512,
               "batch_size 0 (auto): 512 of 1000 samples", why);
        cfg.max_batch_size = 100;
        memset(&log, 0, sizeof log);
        rc = train_cuda(&cfg, &train, &val, record, &log, why, sizeof why);
        expect(rc == 0 && log.n == 1 && log.e[0].batch_size == 64,
               "batch_size 0 (auto) under max_batch_size 100: 64", why);
    }
    /* More GPUs than there are: an error. */
    {
        cfg = base_config();
        cfg.gpus = k + 1;
        Log log = {0};
        char why[512] = "";
        int rc = train_cuda(&cfg, &train, &val, record, &log, why, sizeof why);
        expect(rc == -1 && strstr(why, "usable") != NULL, "gpus more than usable", why);
    }

    data_free(&train);
    data_free(&val);
    printf("%d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
