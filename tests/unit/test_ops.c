/* Tests of kernels/ops_cpu.c and kernels/blas.c.
 *
 * One table-driven parity test in the manner of ggml's test-backend-ops:
 * every op runs on deterministic inputs beside a naive reference written
 * here in double precision (PyTorch's documented update rules for the
 * optimizers), and each output must land within the case's error budget
 * |got - ref| <= atol + rtol * |ref|. Then what a table cannot say: dropout's
 * mask properties, the backward of a small MLP built from the ops against
 * central finite differences of its loss, and the BLAS kernel pick and
 * check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "blascore.h"
#include "ops.h"
#include "ops_math.h"

/* ---- helpers ---------------------------------------------------------- */

/* splitmix64: test data independent of the hash under test. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static void fill(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)((double)(rng_next(&s) >> 11) * 0x1p-53);
}

/* Buffers never NULL, even for zero elements (an empty batch is a case). */
static float *fnew(size_t n)
{
    float *x = calloc(n + 1, sizeof *x);
    assert_non_null(x);
    return x;
}

static double *dnew(size_t n)
{
    double *x = calloc(n + 1, sizeof *x);
    assert_non_null(x);
    return x;
}

/* ---- double-precision references ------------------------------------- */

/* C[M,N] = A[M,K] B[K,N], textbook triple loop. */
static void ref_gemm(const float *A, const float *B, double *C, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++)
                s += (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
            C[(size_t)i * N + j] = s;
        }
}

static void ref_linear_fwd(const float *X, const float *W, const float *b, double *Y, int B, int D,
                           int H, bool relu)
{
    ref_gemm(X, W, Y, B, H, D);
    for (int i = 0; i < B; i++)
        for (int j = 0; j < H; j++) {
            double y = Y[(size_t)i * H + j] + b[j];
            Y[(size_t)i * H + j] = relu && y < 0.0 ? 0.0 : y;
        }
}

/* dP = the pre-activation gradient; dW = X^T dP, db = sum_b dP, dX = dP W^T. */
static void ref_linear_bwd(const float *X, const float *W, const float *Y, const float *dY,
                           double *dP, double *dX, double *dW, double *db, int B, int D, int H,
                           bool relu)
{
    for (size_t i = 0; i < (size_t)B * H; i++)
        dP[i] = relu && !(Y[i] > 0.0f) ? 0.0 : dY[i];
    for (int d = 0; d < D; d++)
        for (int h = 0; h < H; h++) {
            double s = 0.0;
            for (int r = 0; r < B; r++)
                s += (double)X[(size_t)r * D + d] * dP[(size_t)r * H + h];
            dW[(size_t)d * H + h] = s;
        }
    for (int h = 0; h < H; h++) {
        double s = 0.0;
        for (int r = 0; r < B; r++)
            s += dP[(size_t)r * H + h];
        db[h] = s;
    }
    for (int r = 0; r < B; r++)
        for (int d = 0; d < D; d++) {
            double s = 0.0;
            for (int h = 0; h < H; h++)
                s += dP[(size_t)r * H + h] * W[(size_t)d * H + h];
            dX[(size_t)r * D + d] = s;
        }
}

/* The mask's definition: element `index` is dropped when the top 24 bits of
 * its hash, as a fraction of 2^24, fall below p; kept ones scale by 1/(1-p). */
static double ref_dropout_factor(uint64_t seed, uint64_t index, double p)
{
    double u = (double)(rung_hash32(seed, index) >> 8) / 16777216.0;
    return u < p ? 0.0 : 1.0 / (1.0 - p);
}

/* Returns the loss sum; fills dz (times scale) and *correct. */
static double ref_softmax_xent(const float *z, const int32_t *labels, double *dz, int B, int C,
                               double scale, int64_t *correct)
{
    double loss = 0.0;
    *correct = 0;
    for (int i = 0; i < B; i++) {
        const float *row = z + (size_t)i * C;
        int arg = 0;
        for (int j = 1; j < C; j++)
            if (row[j] > row[arg])
                arg = j;
        *correct += arg == labels[i];
        double max = row[arg], sum = 0.0;
        for (int j = 0; j < C; j++)
            sum += exp((double)row[j] - max);
        loss += log(sum) + max - row[labels[i]];
        for (int j = 0; j < C; j++)
            dz[(size_t)i * C + j] =
                (exp((double)row[j] - max) / sum - (j == labels[i] ? 1.0 : 0.0)) * scale;
    }
    return loss;
}

/* torch.optim.SGD as documented (dampening tau = 0, maximize off), step t
 * from 1:  g <- g + wd*theta; if mu != 0: b <- (t > 1 ? mu*b + g : g),
 * g <- (nesterov ? g + mu*b : b); theta <- theta - lr*g. */
static void ref_sgd(double *theta, double *buf, const float *grad, size_t n, int t, double lr,
                    double mu, double wd, bool nesterov)
{
    for (size_t i = 0; i < n; i++) {
        double g = grad[i] + wd * theta[i];
        if (mu != 0.0) {
            buf[i] = t > 1 ? mu * buf[i] + g : g;
            g = nesterov ? g + mu * buf[i] : buf[i];
        }
        theta[i] -= lr * g;
    }
}

/* torch.optim.AdamW as documented (amsgrad and maximize off):
 * theta <- theta - lr*wd*theta; m <- b1*m + (1-b1)*g; v <- b2*v + (1-b2)*g^2;
 * mhat = m/(1-b1^t); vhat = v/(1-b2^t); theta <- theta - lr*mhat/(sqrt(vhat)+eps). */
static void ref_adamw(double *theta, double *m, double *v, const float *grad, size_t n, int t,
                      double lr, double b1, double b2, double eps, double wd)
{
    for (size_t i = 0; i < n; i++) {
        double g = grad[i];
        theta[i] -= lr * wd * theta[i];
        m[i] = b1 * m[i] + (1.0 - b1) * g;
        v[i] = b2 * v[i] + (1.0 - b2) * g * g;
        double mhat = m[i] / (1.0 - pow(b1, t)), vhat = v[i] / (1.0 - pow(b2, t));
        theta[i] -= lr * mhat / (sqrt(vhat) + eps);
    }
}

/* ---- the parity table ------------------------------------------------- */

typedef struct OpCase OpCase;
struct OpCase {
    const char *name;
    int (*run)(const OpCase *c); /* returns the number of elements over budget */
    int B, D, H;                 /* batch, inputs, outputs; gemm M, K, N; softmax B, -, C;
                                    dropout and optimizers: n = H */
    bool relu;                   /* linear: ReLU; sgd: nesterov */
    bool with_dx;                /* linear bwd: compute dX (else NULL) */
    float p, lr, momentum, wd;   /* dropout rate; optimizer settings */
    double atol, rtol;           /* the budget: |got - ref| <= atol + rtol * |ref| */
};

/* The largest |err| / budget of the case that runs, for the report. */
static double case_worst;

static void note_worst(double err, double limit)
{
    double r = limit > 0.0 ? err / limit : (err > 0.0 ? INFINITY : 0.0);
    case_worst = r > case_worst ? r : case_worst;
}

/* Compares n outputs with their references under the case's budget; prints
 * the first few misses and returns how many there were. Non-finite outputs
 * always miss. */

static int check_close(const OpCase *c, const char *what, const float *got, const double *ref,
                       size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]), limit = c->atol + c->rtol * fabs(ref[i]);
        note_worst(err, limit);
        if (isfinite(got[i]) && err <= limit)
            continue;
        if (bad < 3)
            print_error("  %s: %s[%zu] = %.9g, reference %.9g (|err| %.3g, budget %.3g)\n", c->name,
                        what, i, (double)got[i], ref[i], err, limit);
        bad++;
    }
    return bad;
}

static int check_scalar(const OpCase *c, const char *what, double got, double ref)
{
    double err = fabs(got - ref), limit = c->atol + c->rtol * fabs(ref);
    note_worst(err, limit);
    if (isfinite(got) && err <= limit)
        return 0;
    print_error("  %s: %s = %.12g, reference %.12g\n", c->name, what, got, ref);
    return 1;
}

static int run_gemm_naive(const OpCase *c)
{
    int M = c->B, K = c->D, N = c->H;
    float *A = fnew((size_t)M * K), *B = fnew((size_t)K * N), *C = fnew((size_t)M * N);
    double *ref = dnew((size_t)M * N);
    fill(A, (size_t)M * K, 1, -1, 1);
    fill(B, (size_t)K * N, 2, -1, 1);
    ops_gemm_naive(A, B, C, M, N, K);
    ref_gemm(A, B, ref, M, N, K);
    int bad = check_close(c, "C", C, ref, (size_t)M * N);
    free(A), free(B), free(C), free(ref);
    return bad;
}

static int run_linear_fwd(const OpCase *c)
{
    int B = c->B, D = c->D, H = c->H;
    float *X = fnew((size_t)B * D), *W = fnew((size_t)D * H), *b = fnew(H);
    float *Y = fnew((size_t)B * H);
    double *ref = dnew((size_t)B * H);
    fill(X, (size_t)B * D, 3, -1, 1);
    fill(W, (size_t)D * H, 4, -1, 1);
    fill(b, H, 5, -1, 1);
    for (size_t i = 0; i < (size_t)B * H; i++)
        Y[i] = NAN; /* the GEMM's beta is 0: the output's old contents never matter */
    ops_linear_fwd(X, W, b, Y, B, D, H, c->relu);
    ref_linear_fwd(X, W, b, ref, B, D, H, c->relu);
    int bad = check_close(c, "Y", Y, ref, (size_t)B * H);
    free(X), free(W), free(b), free(Y), free(ref);
    return bad;
}

static int run_linear_bwd(const OpCase *c)
{
    int B = c->B, D = c->D, H = c->H;
    size_t nx = (size_t)B * D, nw = (size_t)D * H, ny = (size_t)B * H;
    float *X = fnew(nx), *W = fnew(nw), *b = fnew(H), *Y = fnew(ny), *dY = fnew(ny);
    float *dX = fnew(nx), *dW = fnew(nw), *db = fnew(H);
    double *rdP = dnew(ny), *rdX = dnew(nx), *rdW = dnew(nw), *rdb = dnew(H);
    fill(X, nx, 6, -1, 1);
    fill(W, nw, 7, -1, 1);
    fill(b, H, 8, -0.5f, 0.5f);
    fill(dY, ny, 9, -1, 1);
    ops_linear_fwd(X, W, b, Y, B, D, H, c->relu);
    int bad = 0;
    if (c->relu && ny > 1) {
        /* The ReLU's zeros are what this case is about. */
        size_t zeros = 0;
        for (size_t i = 0; i < ny; i++)
            zeros += Y[i] == 0.0f;
        if (zeros == 0 || zeros == ny) {
            print_error("  %s: %zu of %zu ReLU outputs are zero\n", c->name, zeros, ny);
            bad++;
        }
    }
    ref_linear_bwd(X, W, Y, dY, rdP, rdX, rdW, rdb, B, D, H, c->relu);
    for (size_t i = 0; i < nx; i++)
        dX[i] = NAN;
    for (size_t i = 0; i < nw; i++)
        dW[i] = NAN; /* overwritten, not accumulated */
    for (int i = 0; i < H; i++)
        db[i] = NAN;
    /* Y is read only with the ReLU: NULL without it holds the op to that. */
    ops_linear_bwd(X, W, c->relu ? Y : NULL, dY, c->with_dx ? dX : NULL, dW, db, B, D, H, c->relu);
    bad += check_close(c, "dY (pre-activation)", dY, rdP, ny);
    bad += check_close(c, "dW", dW, rdW, nw);
    bad += check_close(c, "db", db, rdb, H);
    if (c->with_dx) {
        bad += check_close(c, "dX", dX, rdX, nx);
    } else {
        for (size_t i = 0; i < nx; i++)
            if (!isnan(dX[i])) {
                print_error("  %s: dX was NULL, yet its buffer changed\n", c->name);
                bad++;
                break;
            }
    }
    free(X), free(W), free(b), free(Y), free(dY), free(dX), free(dW), free(db);
    free(rdP), free(rdX), free(rdW), free(rdb);
    return bad;
}

static int run_dropout(const OpCase *c)
{
    size_t n = c->H;
    const uint64_t seed = 77, first = 123456789;
    float *x = fnew(n), *g = fnew(n);
    double *rx = dnew(n), *rg = dnew(n);
    fill(x, n, 10, -2, 2);
    fill(g, n, 11, -2, 2);
    for (size_t i = 0; i < n; i++) {
        double f = ref_dropout_factor(seed, first + i, c->p);
        rx[i] = x[i] * f;
        rg[i] = g[i] * f;
    }
    ops_dropout_fwd(x, n, c->p, seed, first);
    ops_dropout_bwd(g, n, c->p, seed, first);
    int bad = check_close(c, "fwd", x, rx, n) + check_close(c, "bwd", g, rg, n);
    free(x), free(g), free(rx), free(rg);
    return bad;
}

/* Rows of random logits, plus rows that test the edges when B >= 4: huge
 * logits (exp would overflow unshifted), and two ties for the maximum
 * labelled with a later one of the tied, so not correct (a two-way tie
 * labelled second and a three-way tie labelled in the middle: a "last
 * maximum" argmax would count the first and miss the second). */
static int run_softmax_xent(const OpCase *c)
{
    int B = c->B, C = c->H;
    size_t nz = (size_t)B * C;
    float *z = fnew(nz), *dz = fnew(nz);
    int32_t *labels = calloc((size_t)B + 1, sizeof *labels);
    assert_non_null(labels);
    double *rdz = dnew(nz);
    fill(z, nz, 12, -4, 4);
    uint64_t s = 13;
    for (int i = 0; i < B; i++)
        labels[i] = (int32_t)(rng_next(&s) % (uint64_t)C);
    if (B >= 4 && C >= 3) {
        for (int j = 0; j < C; j++)
            z[j] = 3e4f * (float)(j % 3) - 1e4f; /* -1e4, 2e4, 5e4, ... */
        z[(size_t)1 * C + 0] = z[(size_t)1 * C + 2] = 9.0f;
        labels[1] = 2;
        z[(size_t)2 * C + 0] = z[(size_t)2 * C + 1] = z[(size_t)2 * C + 2] = 9.0f;
        labels[2] = 1;
        labels[0] = 1;
    }
    double scale = 1.0 / B;
    int64_t correct = -1, rcorrect = 0, correct2 = -1;
    double loss = ops_softmax_xent(z, labels, dz, B, C, (float)scale, &correct);
    double rloss = ref_softmax_xent(z, labels, rdz, B, C, scale, &rcorrect);
    double loss2 = ops_softmax_xent(z, labels, NULL, B, C, (float)scale, &correct2);
    int bad = check_scalar(c, "loss", loss, rloss) +
              check_scalar(c, "loss without dlogits", loss2, rloss);
    bad += check_close(c, "dlogits", dz, rdz, nz);
    if (correct != rcorrect || correct2 != rcorrect) {
        print_error("  %s: correct = %lld and %lld, reference %lld\n", c->name, (long long)correct,
                    (long long)correct2, (long long)rcorrect);
        bad++;
    }
    free(z), free(dz), free(labels), free(rdz);
    return bad;
}

/* Five steps from the same start, a fresh gradient each step. */
#define OPT_STEPS 5

static int run_sgd(const OpCase *c)
{
    size_t n = c->H;
    float *w = fnew(n), *v = fnew(n), *g = fnew(n);
    double *rw = dnew(n), *rv = dnew(n);
    fill(w, n, 14, -1, 1);
    for (size_t i = 0; i < n; i++)
        rw[i] = w[i];
    for (int t = 1; t <= OPT_STEPS; t++) {
        fill(g, n, 100 + (uint64_t)t, -1, 1);
        ops_sgd(w, c->momentum != 0.0f ? v : NULL, g, n, c->lr, c->momentum, c->wd, c->relu);
        ref_sgd(rw, rv, g, n, t, c->lr, c->momentum, c->wd, c->relu);
    }
    int bad = check_close(c, "w", w, rw, n);
    if (c->momentum != 0.0f)
        bad += check_close(c, "momentum buffer", v, rv, n);
    free(w), free(v), free(g), free(rw), free(rv);
    return bad;
}

static int run_adamw(const OpCase *c)
{
    size_t n = c->H;
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    float *w = fnew(n), *m = fnew(n), *v = fnew(n), *g = fnew(n);
    double *rw = dnew(n), *rm = dnew(n), *rv = dnew(n);
    fill(w, n, 15, -1, 1);
    for (size_t i = 0; i < n; i++)
        rw[i] = w[i];
    for (int t = 1; t <= OPT_STEPS; t++) {
        fill(g, n, 200 + (uint64_t)t, -1, 1);
        ops_adamw(w, m, v, g, n, c->lr, b1, b2, eps, c->wd, t);
        /* The reference takes the same float hyperparameters, widened. */
        ref_adamw(rw, rm, rv, g, n, t, c->lr, b1, b2, eps, c->wd);
    }
    int bad = check_close(c, "w", w, rw, n) + check_close(c, "m", m, rm, n) +
              check_close(c, "v", v, rv, n);
    free(w), free(m), free(v), free(g), free(rw), free(rm), free(rv);
    return bad;
}

/* Budgets: float32 rounding is ~6e-8 relative per operation; a K-long dot
 * product of values in [-1, 1] errs by about sqrt(K) * 6e-8 * sqrt(K/3),
 * so 1e-5 covers K in the tens and 1e-4 the K = 784 of MNIST's first layer.
 * Element-wise ops are held to a few roundings. */
static const OpCase op_cases[] = {
    /* Double sums in the same order: only the final rounding to float (an ulp). */
    {"gemm_naive 5x7 . 7x130", run_gemm_naive, 5, 7, 130, .atol = 0, .rtol = 1.2e-7},
    {"gemm_naive 3x200 . 200x64", run_gemm_naive, 3, 200, 64, .atol = 0, .rtol = 1.2e-7},
    {"linear_fwd 7x13 -> 11", run_linear_fwd, 7, 13, 11, .atol = 1e-5, .rtol = 1e-5},
    {"linear_fwd 7x13 -> 11 relu", run_linear_fwd, 7, 13, 11, .relu = true, .atol = 1e-5,
     .rtol = 1e-5},
    {"linear_fwd 1x1 -> 1 relu", run_linear_fwd, 1, 1, 1, .relu = true, .atol = 1e-6, .rtol = 1e-6},
    {"linear_fwd 64x784 -> 128 relu", run_linear_fwd, 64, 784, 128, .relu = true, .atol = 1e-4,
     .rtol = 1e-4},
    {"linear_bwd 7x13 -> 11", run_linear_bwd, 7, 13, 11, .with_dx = true, .atol = 1e-5,
     .rtol = 1e-5},
    {"linear_bwd 7x13 -> 11 relu", run_linear_bwd, 7, 13, 11, .relu = true, .with_dx = true,
     .atol = 1e-5, .rtol = 1e-5},
    {"linear_bwd 9x5 -> 33 relu, no dX", run_linear_bwd, 9, 5, 33, .relu = true, .atol = 1e-5,
     .rtol = 1e-5},
    {"linear_bwd 0x3 -> 4 (empty batch)", run_linear_bwd, 0, 3, 4, .relu = true, .with_dx = true,
     .atol = 0, .rtol = 0},
    {"linear_bwd 64x784 -> 128 relu", run_linear_bwd, 64, 784, 128, .relu = true, .with_dx = true,
     .atol = 1e-4, .rtol = 1e-4},
    {"dropout p=0.25", run_dropout, .H = 1000, .p = 0.25f, .atol = 0, .rtol = 2e-7},
    {"dropout p=0.9", run_dropout, .H = 1000, .p = 0.9f, .atol = 0, .rtol = 2e-7},
    {"dropout p=0", run_dropout, .H = 100, .p = 0.0f, .atol = 0, .rtol = 0},
    {"softmax_xent 6x10", run_softmax_xent, 6, 0, 10, .atol = 1e-6, .rtol = 1e-5},
    {"softmax_xent 33x3", run_softmax_xent, 33, 0, 3, .atol = 1e-6, .rtol = 1e-5},
    {"softmax_xent 2x1", run_softmax_xent, 2, 0, 1, .atol = 1e-7, .rtol = 1e-6},
    {"sgd", run_sgd, .H = 257, .lr = 0.1f, .atol = 1e-6, .rtol = 1e-5},
    {"sgd wd", run_sgd, .H = 257, .lr = 0.1f, .wd = 0.05f, .atol = 1e-6, .rtol = 1e-5},
    {"sgd momentum", run_sgd, .H = 257, .lr = 0.1f, .momentum = 0.9f, .atol = 1e-6, .rtol = 1e-5},
    {"sgd momentum nesterov", run_sgd, .H = 257, .relu = true, .lr = 0.1f, .momentum = 0.9f,
     .atol = 1e-6, .rtol = 1e-5},
    {"sgd momentum nesterov wd", run_sgd, .H = 257, .relu = true, .lr = 0.05f, .momentum = 0.8f,
     .wd = 0.05f, .atol = 1e-6, .rtol = 1e-5},
    {"adamw", run_adamw, .H = 257, .lr = 1e-3f, .atol = 1e-7, .rtol = 1e-5},
    {"adamw wd", run_adamw, .H = 257, .lr = 1e-2f, .wd = 0.1f, .atol = 1e-7, .rtol = 1e-5},
};

static void test_ops_parity(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof op_cases / sizeof op_cases[0]; i++) {
        const OpCase *c = &op_cases[i];
        case_worst = 0.0;
        int bad = c->run(c);
        print_message("  %-36s %s: worst %.3f of atol %.2g + rtol %.2g |ref|\n", c->name,
                      bad ? "FAIL" : "ok", case_worst, c->atol, c->rtol);
        failed += bad > 0;
    }
    assert_int_equal(failed, 0);
}

/* ---- dropout's mask --------------------------------------------------- */

static void test_dropout_mask(void **state)
{
    (void)state;
    const size_t n = 200000;
    const uint64_t seed = 2024;
    float *y = fnew(n), *g = fnew(n), *part = fnew(n);
    const float ps[] = {0.1f, 0.5f, 0.9f};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        float p = ps[k];
        for (size_t i = 0; i < n; i++)
            y[i] = g[i] = 1.0f;
        ops_dropout_fwd(y, n, p, seed, 0);
        ops_dropout_bwd(g, n, p, seed, 0);
        /* Forward and backward apply the same factors. */
        assert_memory_equal(y, g, n * sizeof *y);
        /* Drop rate within 5 sigma of p; survivors scaled by 1/(1-p). */
        size_t dropped = 0;
        for (size_t i = 0; i < n; i++) {
            if (y[i] == 0.0f) {
                dropped++;
                continue;
            }
            assert_true(fabs(y[i] - 1.0 / (1.0 - p)) <= 1e-6 / (1.0 - p));
        }
        double mean = (double)n * p, sigma = sqrt((double)n * p * (1.0 - p));
        print_message("  p = %.1f: %zu of %zu dropped (expected %.0f +- %.0f)\n", p, dropped, n,
                      mean, sigma);
        assert_true(fabs((double)dropped - mean) <= 5.0 * sigma);
    }

    /* The mask depends on (seed, index) only: any split with the matching
     * `first` offsets gives the whole's result. */
    const float p = 0.3f;
    const uint64_t first = 5000;
    fill(y, n, 16, -1, 1);
    memcpy(g, y, n * sizeof *y);
    ops_dropout_fwd(y, n, p, seed, first);
    const size_t splits[] = {1, 37, n / 2, n - 1};
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
        size_t at = splits[k];
        memcpy(part, g, n * sizeof *part);
        ops_dropout_fwd(part + at, n - at, p, seed, first + at);
        ops_dropout_fwd(part, at, p, seed, first);
        assert_memory_equal(part, y, n * sizeof *y);
    }
    /* Another seed, or another offset, draws another mask. */
    size_t differ_seed = 0, differ_first = 0;
    memcpy(part, g, n * sizeof *part);
    ops_dropout_fwd(part, n, p, seed + 1, first);
    for (size_t i = 0; i < n; i++)
        differ_seed += (part[i] == 0.0f) != (y[i] == 0.0f);
    memcpy(part, g, n * sizeof *part);
    ops_dropout_fwd(part, n, p, seed, first + 1);
    for (size_t i = 0; i < n; i++)
        differ_first += (part[i] == 0.0f) != (y[i] == 0.0f);
    /* Independent masks disagree on 2p(1-p) = 42% of elements. */
    assert_true(differ_seed > n / 4);
    assert_true(differ_first > n / 4);
    /* p = 0 leaves the values alone, bit for bit. */
    memcpy(part, g, n * sizeof *part);
    ops_dropout_fwd(part, n, 0.0f, seed, first);
    ops_dropout_bwd(part, n, 0.0f, seed, first);
    assert_memory_equal(part, g, n * sizeof *g);
    free(y), free(g), free(part);
}

/* ---- backward against finite differences ------------------------------ */

/* A 2-layer MLP from the ops: X[B,D] -> linear+ReLU -> dropout -> linear ->
 * softmax cross-entropy, loss summed over rows (grad_scale 1). */
enum { FD_B = 4, FD_D = 5, FD_H = 6, FD_C = 3 };
#define FD_P 0.25f
#define FD_SEED 99
/* Central differences with step FD_STEP in float: truncation ~ h^2/6 |L'''|
 * and rounding ~ 1e-7 |L| / h, both near 1e-5 here. */
#define FD_STEP 1e-2f

typedef struct FdNet {
    float X[FD_B * FD_D], W1[FD_D * FD_H], b1[FD_H], W2[FD_H * FD_C], b2[FD_C];
    int32_t labels[FD_B];
    float a1[FD_B * FD_H], h[FD_B * FD_H], z[FD_B * FD_C]; /* activations */
    float dX[FD_B * FD_D], dW1[FD_D * FD_H], db1[FD_H], dW2[FD_H * FD_C], db2[FD_C];
    float dh[FD_B * FD_H], dz[FD_B * FD_C];
} FdNet;

static double fd_forward(FdNet *n, bool grads)
{
    ops_linear_fwd(n->X, n->W1, n->b1, n->a1, FD_B, FD_D, FD_H, true);
    memcpy(n->h, n->a1, sizeof n->h);
    ops_dropout_fwd(n->h, FD_B * FD_H, FD_P, FD_SEED, 0);
    ops_linear_fwd(n->h, n->W2, n->b2, n->z, FD_B, FD_H, FD_C, false);
    int64_t correct;
    return ops_softmax_xent(n->z, n->labels, grads ? n->dz : NULL, FD_B, FD_C, 1.0f, &correct);
}

static void fd_backward(FdNet *n)
{
    fd_forward(n, true);
    ops_linear_bwd(n->h, n->W2, n->z, n->dz, n->dh, n->dW2, n->db2, FD_B, FD_H, FD_C, false);
    ops_dropout_bwd(n->dh, FD_B * FD_H, FD_P, FD_SEED, 0);
    ops_linear_bwd(n->X, n->W1, n->a1, n->dh, n->dX, n->dW1, n->db1, FD_B, FD_D, FD_H, true);
}

/* Inputs whose first-layer pre-activations all lie farther than 2h from 0,
 * so no perturbation of size h moves one across the ReLU's kink, with some
 * units off and some dropped (or those paths go untested). */
static bool fd_pick(FdNet *n, uint64_t seed)
{
    memset(n, 0, sizeof *n);
    fill(n->X, FD_B * FD_D, seed, -1, 1);
    fill(n->W1, FD_D * FD_H, seed + 1, -1, 1);
    fill(n->b1, FD_H, seed + 2, -0.5f, 0.5f);
    fill(n->W2, FD_H * FD_C, seed + 3, -1, 1);
    fill(n->b2, FD_C, seed + 4, -0.5f, 0.5f);
    uint64_t s = seed + 5;
    for (int i = 0; i < FD_B; i++)
        n->labels[i] = (int32_t)(rng_next(&s) % FD_C);
    double pre[FD_B * FD_H];
    ref_linear_fwd(n->X, n->W1, n->b1, pre, FD_B, FD_D, FD_H, false);
    int off = 0, dropped_on = 0;
    for (int i = 0; i < FD_B * FD_H; i++) {
        if (fabs(pre[i]) < 2.5 * FD_STEP)
            return false;
        off += pre[i] < 0.0;
        dropped_on += pre[i] > 0.0 && rung_dropout_scale(FD_SEED, (uint64_t)i, FD_P) == 0.0f;
    }
    return off > 0 && off < FD_B * FD_H && dropped_on > 0;
}

/* Central difference of the loss along one float parameter; the step
 * actually taken (after float rounding) is the divisor. */
static double fd_grad(FdNet *n, float *x)
{
    float keep = *x;
    float up = keep + FD_STEP, down = keep - FD_STEP;
    *x = up;
    double lu = fd_forward(n, false);
    *x = down;
    double ld = fd_forward(n, false);
    *x = keep;
    return (lu - ld) / ((double)up - (double)down);
}

static int fd_check(FdNet *n, const char *what, float *param, const float *grad, int count,
                    double *worst)
{
    const double atol = 1e-4, rtol = 1e-3;
    int bad = 0;
    for (int i = 0; i < count; i++) {
        double fd = fd_grad(n, &param[i]), err = fabs(grad[i] - fd);
        double limit = atol + rtol * fabs(fd);
        *worst = err / limit > *worst ? err / limit : *worst;
        if (err <= limit)
            continue;
        print_error("  %s[%d]: backward %.7g, finite difference %.7g\n", what, i, (double)grad[i],
                    fd);
        bad++;
    }
    return bad;
}

static void test_backward_finite_differences(void **state)
{
    (void)state;
    static FdNet net;
    uint64_t seed = 1;
    while (!fd_pick(&net, seed) && seed < 10000)
        seed += 10;
    assert_true(fd_pick(&net, seed));
    fd_backward(&net);
    /* Gradients copied before fd_check's forwards overwrite scratch. */
    static FdNet g;
    g = net;
    double worst = 0.0;
    int bad = fd_check(&net, "dW1", net.W1, g.dW1, FD_D * FD_H, &worst);
    bad += fd_check(&net, "db1", net.b1, g.db1, FD_H, &worst);
    bad += fd_check(&net, "dW2", net.W2, g.dW2, FD_H * FD_C, &worst);
    bad += fd_check(&net, "db2", net.b2, g.db2, FD_C, &worst);
    bad += fd_check(&net, "dX", net.X, g.dX, FD_B * FD_D, &worst);
    print_message("  seed %llu: worst error %.2f of the budget (atol 1e-4, rtol 1e-3)\n",
                  (unsigned long long)seed, worst);
    assert_int_equal(bad, 0);
}

/* ---- the BLAS kernel -------------------------------------------------- */

static void test_blas_best_core(void **state)
{
    (void)state;
    const char *core = blascore_best();
    print_message("  best core %s; OpenBLAS runs %s\n", core ? core : "(none)", blas_core_name());
    assert_non_null(blas_core_name());
#if defined(__x86_64__) || defined(__i386__)
    /* libgcc's view of the CPU (it also checks the OS's XCR0) as the oracle. */
    __builtin_cpu_init();
    const char *want = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    else if (__builtin_cpu_supports("avx"))
        want = "Sandybridge";
    /* Every x86-64 machine this runs on has AVX. */
    assert_non_null(want);
    assert_non_null(core);
    assert_string_equal(core, want);
#endif
}

static void test_blas_check(void **state)
{
    (void)state;
    char why[256] = "";
    const int threads[] = {1, 2};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        blas_set_threads(threads[i]);
        bool ok = blas_check(why, sizeof why);
        if (!ok)
            print_error("  %d threads: %s\n", threads[i], why);
        assert_true(ok);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_parity),
        cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_backward_finite_differences),
        cmocka_unit_test(test_blas_best_core),
        cmocka_unit_test(test_blas_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
