/* The trainer's operations on the CPU backend (ops.h): GEMMs go to OpenBLAS,
 * and everything around them is one fused pass over the data, with the
 * element-wise math taken from ops_math.h so that the CUDA kernels run the
 * same arithmetic.
 *
 * Workload: an MLP such as 784-512-256-10 at batch 256 on one or two cores.
 * The GEMMs are nearly all of a step's time; the passes here exist to touch
 * each activation and parameter as few times as possible (once for bias and
 * ReLU, once for the ReLU gradient and the bias gradient together, once per
 * optimizer step). Loops are plain, over restrict parameters, with loop-
 * invariant choices hoisted out so that the compiler vectorizes them
 * (ops.cmake builds this file with -O3 outside Debug for that reason).
 *
 * Shapes: B = batch rows, D = a layer's inputs, H = its outputs, C = classes.
 * Everything is row-major float32. Nothing here allocates. */
#include "ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "ops_math.h"

/* The passes below take restrict parameters (rather than restrict locals),
 * which is what lets GCC vectorize them without a run-time overlap check. */

/* y[n] = act(y + b) */
static void bias_act_row(float *restrict y, const float *restrict b, int n, bool relu)
{
    if (relu) {
        for (int j = 0; j < n; j++)
            y[j] = rung_relu(y[j] + b[j]);
    } else {
        for (int j = 0; j < n; j++)
            y[j] += b[j];
    }
}

/* dy[n] = relu'(y) dy, and db += dy. */
static void relu_grad_row(float *restrict dy, const float *restrict y, float *restrict db, int n)
{
    for (int j = 0; j < n; j++) {
        float d = rung_relu_grad(y[j], dy[j]);
        dy[j] = d;
        db[j] += d;
    }
}

/* db += dy (no activation) */
static void sum_row(const float *restrict dy, float *restrict db, int n)
{
    for (int j = 0; j < n; j++)
        db[j] += dy[j];
}

void ops_linear_fwd(const float *X, const float *W, const float *b, float *Y, int B, int D, int H,
                    bool relu)
{
    if (B <= 0 || H <= 0)
        return;
    /* Y = X W, then bias and activation in one pass while Y is warm. */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, H, D, 1.0f, X, D, W, H, 0.0f, Y, H);
    for (int i = 0; i < B; i++)
        bias_act_row(Y + (size_t)i * H, b, H, relu);
}

void ops_linear_bwd(const float *X, const float *W, const float *Y, float *dY, float *dX, float *dW,
                    float *db, int B, int D, int H, bool relu)
{
    if (H <= 0)
        return;
    /* One row-major pass: dY becomes the pre-activation gradient and its
     * column sums build up in db, row after row (contiguous in both; db's
     * H floats stay in L1). */
    memset(db, 0, (size_t)H * sizeof *db);
    for (int i = 0; i < B; i++) {
        if (relu)
            relu_grad_row(dY + (size_t)i * H, Y + (size_t)i * H, db, H);
        else
            sum_row(dY + (size_t)i * H, db, H);
    }
    if (D <= 0)
        return;
    if (B <= 0) {
        /* An empty batch has zero gradients; BLAS may skip k = 0 products. */
        memset(dW, 0, (size_t)D * H * sizeof *dW);
        return;
    }
    /* dW[D,H] = X^T dY */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, H, B, 1.0f, X, D, dY, H, 0.0f, dW, H);
    /* dX[B,D] = dY W^T */
    if (dX)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, D, H, 1.0f, dY, H, W, H, 0.0f, dX,
                    D);
}

void ops_dropout_fwd(float *Y, size_t n, float p, uint64_t seed, uint64_t first)
{
    if (p == 0.0f)
        return;
    for (size_t i = 0; i < n; i++)
        Y[i] *= rung_dropout_scale(seed, first + i, p);
}

void ops_dropout_bwd(float *dY, size_t n, float p, uint64_t seed, uint64_t first)
{
    /* Same factors as the forward: y = x * s gives dx = dy * s. */
    ops_dropout_fwd(dY, n, p, seed, first);
}

double ops_softmax_xent(const float *logits, const int32_t *labels, float *dlogits, int B, int C,
                        float grad_scale, int64_t *correct)
{
    double loss = 0.0;
    int64_t right = 0;
    for (int i = 0; i < B && C > 0; i++) {
        const float *restrict z = logits + (size_t)i * C;
        int label = labels[i];
        /* The maximum (first on ties) is both the prediction and the shift
         * that keeps every exp in (0, 1], so huge logits stay finite. */
        int arg = 0;
        float max = z[0];
        for (int j = 1; j < C; j++) {
            if (z[j] > max) {
                max = z[j];
                arg = j;
            }
        }
        right += arg == label;
        /* The exps are summed in double: a float sum of C terms next to a
         * large one (a confident row) loses the small ones, and the
         * gradient at the label, scale * (p - 1), is exactly that tail. */
        double sum = 0.0;
        if (dlogits) {
            /* Keep the exps in dlogits, then scale them in place; at the
             * label, -(the other terms) / sum, so that no cancellation
             * (p - 1 with p near 1) rounds the gradient away. */
            float *restrict dz = dlogits + (size_t)i * C;
            for (int j = 0; j < C; j++) {
                dz[j] = RUNG_EXPF(z[j] - max);
                sum += dz[j];
            }
            double k = (double)grad_scale / sum;
            bool valid = label >= 0 && label < C;
            double at_label = valid ? dz[label] : 0.0;
            for (int j = 0; j < C; j++)
                dz[j] = (float)(dz[j] * k);
            if (valid)
                dz[label] = (float)(-(sum - at_label) * k);
        } else {
            for (int j = 0; j < C; j++)
                sum += RUNG_EXPF(z[j] - max);
        }
        /* -log softmax(z)[label] = log(sum) + max - z[label] */
        loss += log(sum) + ((double)max - (double)z[label]);
    }
    if (correct)
        *correct = right;
    return loss;
}

/* Constant momentum and nesterov arguments let the compiler fold
 * rung_sgd_step's branches, so each variant is one straight loop. */
static void sgd_plain(float *restrict w, const float *restrict g, size_t n, float lr, float wd)
{
    for (size_t i = 0; i < n; i++) {
        float unused = 0.0f; /* no momentum buffer is read or written */
        rung_sgd_step(&w[i], &unused, g[i], lr, 0.0f, wd, 0);
    }
}

static void sgd_momentum(float *restrict w, float *restrict v, const float *restrict g, size_t n,
                         float lr, float momentum, float wd)
{
    for (size_t i = 0; i < n; i++)
        rung_sgd_step(&w[i], &v[i], g[i], lr, momentum, wd, 0);
}

static void sgd_nesterov(float *restrict w, float *restrict v, const float *restrict g, size_t n,
                         float lr, float momentum, float wd)
{
    for (size_t i = 0; i < n; i++)
        rung_sgd_step(&w[i], &v[i], g[i], lr, momentum, wd, 1);
}

void ops_sgd(float *w, float *v, const float *g, size_t n, float lr, float momentum, float wd,
             bool nesterov)
{
    if (momentum == 0.0f)
        sgd_plain(w, g, n, lr, wd); /* v is not used, and may be NULL */
    else if (nesterov)
        sgd_nesterov(w, v, g, n, lr, momentum, wd);
    else
        sgd_momentum(w, v, g, n, lr, momentum, wd);
}

static void adamw_loop(float *restrict w, float *restrict m, float *restrict v,
                       const float *restrict g, size_t n, float lr, float b1, float b2, float eps,
                       float wd, float bc1, float bc2)
{
    for (size_t i = 0; i < n; i++)
        rung_adamw_step(&w[i], &m[i], &v[i], g[i], lr, b1, b2, eps, wd, bc1, bc2);
}

void ops_adamw(float *w, float *m, float *v, const float *g, size_t n, float lr, float b1, float b2,
               float eps, float wd, int64_t t)
{
    /* Bias corrections in double, as PyTorch computes them (Python floats). */
    float bc1 = (float)(1.0 - pow((double)b1, (double)t));
    float bc2 = (float)(1.0 - pow((double)b2, (double)t));
    adamw_loop(w, m, v, g, n, lr, b1, b2, eps, wd, bc1, bc2);
}

/* Output columns per block of the naive GEMM: a row block of doubles that
 * stays on the stack and in L1 while B is read row by row. */
#define GEMM_NAIVE_BLOCK 64

void ops_gemm_naive(const float *A, const float *B, float *C, int M, int N, int K)
{
    double acc[GEMM_NAIVE_BLOCK];
    for (int i = 0; i < M; i++) {
        for (int j0 = 0; j0 < N; j0 += GEMM_NAIVE_BLOCK) {
            int nb = N - j0 < GEMM_NAIVE_BLOCK ? N - j0 : GEMM_NAIVE_BLOCK;
            for (int j = 0; j < nb; j++)
                acc[j] = 0.0;
            for (int k = 0; k < K; k++) {
                double a = A[(size_t)i * K + k];
                const float *b = B + (size_t)k * N + j0;
                for (int j = 0; j < nb; j++)
                    acc[j] += a * b[j];
            }
            for (int j = 0; j < nb; j++)
                C[(size_t)i * N + j0 + j] = (float)acc[j];
        }
    }
}
