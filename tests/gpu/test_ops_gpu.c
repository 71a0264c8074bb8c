/* Every CUDA operation (kernels/cuda/ops_cuda.h) against its CPU twin
 * (kernels/ops_cpu.c), which is the specification: the same inputs go to
 * both, and every output must land within its case's error budget
 * |gpu - cpu| <= atol + rtol * |cpu| (ggml's test-backend-ops, one table).
 *
 * Budgets: the element-wise operations share their arithmetic with the CPU
 * (ops_math.h), so dropout and the bf16 rounding must match exactly; the
 * optimizers differ only where nvcc fuses a multiply and an add (one
 * rounding); GEMMs and sums differ in summation order; the softmax in
 * CUDA's expf (within 2 ulp) against glibc's (within 1), its sums in double
 * on both sides: a few ulp per term, inside 2e-5 relative (the label's
 * gradient comes from the other terms, so a confident row is not a
 * cancellation that float rounding decides). The bf16 cases compare with the CPU operation on
 * inputs rounded to bf16 the same way, which leaves only the fp32
 * accumulation order: a tight budget that catches a wrong layout or
 * transpose, which a loose bf16-vs-fp32 budget would not.
 *
 * Without a CUDA device (no driver, no GPU, or one too old for the built
 * kernels) it prints "skipped: no CUDA device" and exits with
 * RUNG_TEST_SKIPPED, which tests/gpu/gpu.cmake makes ctest count as
 * skipped, not passed: nothing was compared. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "data.h"
#include "ops.h"
#include "ops_cuda.h"
#include "ops_math.h"

/* The exit status ctest reads as "skipped" (SKIP_RETURN_CODE in gpu.cmake). */
#define RUNG_TEST_SKIPPED 77

#ifndef RUNG_CUDA_MIN_ARCH
#define RUNG_CUDA_MIN_ARCH 80
#endif

/* ---- Harness --------------------------------------------------------- */

typedef struct Ctx {
    cublasHandle_t blas;
    cudaStream_t s;
    int checks, failed;
    bool broken; /* a CUDA call failed: the remaining cases cannot run */
} Ctx;

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

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n + 1, size); /* never NULL for n = 0 */
    if (p == NULL) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    return p;
}

static float *fnew(size_t n)
{
    return xcalloc(n, sizeof(float));
}

static bool cuda_ok(Ctx *c, cudaError_t e, const char *what)
{
    if (e != cudaSuccess && !c->broken) {
        printf("FAIL  %s: %s\n", what, cudaGetErrorString(e));
        c->failed++;
        c->broken = true;
    }
    return e == cudaSuccess;
}

/* A device copy of host data (bytes), or NULL after a failure. */
static void *up(Ctx *c, const void *host, size_t bytes)
{
    void *d = NULL;
    if (!cuda_ok(c, cudaMalloc(&d, bytes ? bytes : 1), "cudaMalloc"))
        return NULL;
    if (host && !cuda_ok(c, cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy"))
        return NULL;
    return d;
}

static void down(Ctx *c, void *host, const void *dev, size_t bytes)
{
    cuda_ok(c, cudaStreamSynchronize(c->s), "cudaStreamSynchronize");
    if (bytes)
        cuda_ok(c, cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

/* An operation's return code: 0, or the failure ops_cuda_error() names. */
static bool op_ok(Ctx *c, int rc, const char *what)
{
    if (rc != 0 && !c->broken) {
        printf("FAIL  %s: %s\n", what, ops_cuda_error());
        c->failed++;
        c->broken = true;
    }
    return rc == 0;
}

/* One row of the table: the largest error and the worst error / budget. */
static void check(Ctx *c, const char *op, const char *shape, const char *out, const float *gpu,
                  const float *cpu, size_t n, double atol, double rtol)
{
    double max_err = 0.0, worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        /* Equal values (infinities included) have no error. */
        double err = gpu[i] == cpu[i] ? 0.0 : fabs((double)gpu[i] - (double)cpu[i]);
        double budget = atol + rtol * fabs((double)cpu[i]);
        double ratio = err == 0.0 ? 0.0 : budget > 0.0 ? err / budget : INFINITY;
        if (isnan(gpu[i]) != isnan(cpu[i]))
            ratio = INFINITY;
        if (err > max_err)
            max_err = err;
        if (ratio > worst || (isinf(ratio) && !isinf(worst))) {
            worst = ratio;
            at = i;
        }
    }
    bool pass = worst <= 1.0;
    c->checks++;
    c->failed += !pass;
    printf("%-5s %-22s %-22s %-8s %10.3g %10.3g", pass ? "ok" : "FAIL", op, shape, out, max_err,
           worst);
    if (!pass)
        printf("   [%zu] gpu %.9g cpu %.9g", at, (double)gpu[at], (double)cpu[at]);
    printf("\n");
}

static void check_int(Ctx *c, const char *op, const char *shape, const char *out, long long gpu,
                      long long cpu)
{
    bool pass = gpu == cpu;
    c->checks++;
    c->failed += !pass;
    printf("%-5s %-22s %-22s %-8s %10lld %10s", pass ? "ok" : "FAIL", op, shape, out, gpu - cpu,
           "exact");
    if (!pass)
        printf("   gpu %lld cpu %lld", gpu, cpu);
    printf("\n");
}

/* bf16 as the GPU rounds it: to nearest, ties to even (finite values). */
static uint16_t bf16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void round_bf16(const float *x, float *xr, uint16_t *bits, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t b = bf16_bits(x[i]);
        if (bits)
            bits[i] = b;
        xr[i] = bf16_value(b);
    }
}

/* Row-major transpose: T[c, r] = A[r, c] for A [rows, cols]. */
static void transpose(const float *A, float *T, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < cols; k++)
            T[(size_t)k * rows + r] = A[(size_t)r * cols + k];
}

static void cfree(void *d)
{
    if (d)
        cudaFree(d);
}

/* ---- Cases ------------------------------------------------------------ */

typedef struct Shape {
    int B, D, H;
} Shape;

/* GEMMs: every transpose combination the trainer uses, on ragged shapes,
 * in float32 and in bf16, against ops_gemm_naive. */
static void case_gemm(Ctx *c)
{
    static const Shape shapes[] = {{1, 1, 1}, {33, 65, 17}, {128, 784, 10}, {257, 5, 63}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !c->broken; si++) {
        int M = shapes[si].B, K = shapes[si].D, N = shapes[si].H;
        for (int mode = 0; mode < 6 && !c->broken; mode++) {
            bool ta = mode % 3 == 1, tb = mode % 3 == 2, bf16 = mode >= 3;
            size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
            float *A = fnew(na), *Bm = fnew(nb), *Ar = fnew(na), *Br = fnew(nb);
            float *As = fnew(na), *Bs = fnew(nb), *ref = fnew(nc), *got = fnew(nc);
            uint16_t *Ab = xcalloc(na, 2), *Bb = xcalloc(nb, 2);
            fill(A, na, 11 + si, -1.0f, 1.0f);
            fill(Bm, nb, 12 + si, -1.0f, 1.0f);
            round_bf16(A, Ar, Ab, na);
            round_bf16(Bm, Br, Bb, nb);
            const float *Au = bf16 ? Ar : A, *Bu = bf16 ? Br : Bm;
            ops_gemm_naive(Au, Bu, ref, M, N, K);
            /* Stored as the op expects: A^T [K, M] when ta, B^T [N, K] when tb. */
            if (ta)
                transpose(Au, As, M, K);
            else
                memcpy(As, Au, na * sizeof(float));
            if (tb)
                transpose(Bu, Bs, K, N);
            else
                memcpy(Bs, Bu, nb * sizeof(float));
            uint16_t *Asb = xcalloc(na, 2), *Bsb = xcalloc(nb, 2);
            float *tmp = fnew(na > nb ? na : nb);
            round_bf16(As, tmp, Asb, na); /* exact: As already holds bf16 values */
            round_bf16(Bs, tmp, Bsb, nb);
            void *dA = bf16 ? up(c, Asb, na * 2) : up(c, As, na * 4);
            void *dB = bf16 ? up(c, Bsb, nb * 2) : up(c, Bs, nb * 4);
            float *dC = up(c, NULL, nc * 4);
            if (!c->broken &&
                op_ok(c, ops_cuda_gemm(c->blas, c->s, ta, tb, M, N, K, dA, dB, dC, bf16),
                      "ops_cuda_gemm")) {
                down(c, got, dC, nc * 4);
                char op[32], shape[32];
                snprintf(op, sizeof op, "gemm%s%s %s", ta ? "T" : "N", tb ? "T" : "N",
                         bf16 ? "bf16" : "fp32");
                snprintf(shape, sizeof shape, "M%d N%d K%d", M, N, K);
                check(c, op, shape, "C", got, ref, nc, 1e-4, 1e-4);
            }
            cfree(dA), cfree(dB), cfree(dC);
            free(A), free(Bm), free(Ar), free(Br), free(As), free(Bs), free(ref), free(got);
            free(Ab), free(Bb), free(Asb), free(Bsb), free(tmp);
        }
    }
}

/* ops_cuda_linear_fwd and _bwd against ops_linear_fwd and _bwd, with and
 * without ReLU, with and without dX, an empty batch, and bf16 operands. */
static void case_linear(Ctx *c)
{
    static const Shape shapes[] = {
        {37, 50, 70}, {256, 784, 128}, {1, 3, 1}, {0, 20, 30}, {513, 64, 10}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !c->broken; si++) {
        int B = shapes[si].B, D = shapes[si].D, H = shapes[si].H;
        for (int mode = 0; mode < 4 && !c->broken; mode++) {
            bool relu = mode % 2 == 0, bf16 = mode >= 2;
            bool with_dx = si % 2 == 0 || mode == 1;
            size_t nx = (size_t)B * D, nw = (size_t)D * H, ny = (size_t)B * H;
            float *X = fnew(nx), *W = fnew(nw), *b = fnew(H), *dY = fnew(ny);
            float *Xr = fnew(nx), *Wr = fnew(nw);
            uint16_t *Xb = xcalloc(nx, 2), *Wb = xcalloc(nw, 2);
            fill(X, nx, 21 + si, -1.0f, 1.0f);
            fill(W, nw, 22 + si, -0.2f, 0.2f);
            fill(b, (size_t)H, 23 + si, -0.5f, 0.5f);
            fill(dY, ny, 24 + si, -1.0f, 1.0f);
            round_bf16(X, Xr, Xb, nx);
            round_bf16(W, Wr, Wb, nw);
            const float *Xu = bf16 ? Xr : X, *Wu = bf16 ? Wr : W;
            char shape[32], op[32];
            snprintf(shape, sizeof shape, "B%d D%d H%d", B, D, H);

            /* Forward. */
            float *Yc = fnew(ny), *Yg = fnew(ny);
            ops_linear_fwd(Xu, Wu, b, Yc, B, D, H, relu);
            float *dX_ = up(c, X, nx * 4), *dW_ = up(c, W, nw * 4), *db_ = up(c, b, (size_t)H * 4);
            uint16_t *dXb = up(c, Xb, nx * 2), *dWb = up(c, Wb, nw * 2);
            float *dYd = up(c, NULL, ny * 4);
            OpsCudaBf16 lp = {dXb, dWb, NULL};
            snprintf(op, sizeof op, "linear_fwd%s%s", relu ? " relu" : "", bf16 ? " bf16" : "");
            if (!c->broken && op_ok(c,
                                    ops_cuda_linear_fwd(c->blas, c->s, dX_, dW_, db_, dYd, B, D, H,
                                                        relu, bf16 ? &lp : NULL),
                                    "ops_cuda_linear_fwd")) {
                down(c, Yg, dYd, ny * 4);
                check(c, op, shape, "Y", Yg, Yc, ny, 1e-4, 1e-4);
            }

            /* Backward from the CPU's Y (so both see the same ReLU zeros). */
            float *dYc = fnew(ny), *dXc = fnew(nx), *dWc = fnew(nw), *dbc = fnew(H);
            memcpy(dYc, dY, ny * sizeof(float));
            ops_linear_bwd(Xu, Wu, Yc, dYc, with_dx ? dXc : NULL, dWc, dbc, B, D, H, relu);
            if (bf16) {
                /* The GPU rounds dY after the activation's gradient, then
                 * multiplies: the same on the CPU, in two calls. */
                float *dYr = fnew(ny), *junk = fnew(H);
                round_bf16(dYc, dYr, NULL, ny);
                ops_linear_bwd(Xr, Wr, Yc, dYr, with_dx ? dXc : NULL, dWc, junk, B, D, H, false);
                free(dYr), free(junk);
            }
            float *dYg = fnew(ny), *dXg = fnew(nx), *dWg = fnew(nw), *dbg = fnew(H);
            float *dYdev = up(c, dY, ny * 4), *Ydev = up(c, Yc, ny * 4);
            float *dXdev = up(c, NULL, nx * 4), *dWdev = up(c, NULL, nw * 4);
            float *dbdev = up(c, NULL, (size_t)H * 4);
            float *ws = up(c, NULL, (size_t)OPS_CUDA_DB_SPLIT * H * 4);
            uint16_t *gh = up(c, NULL, ny * 2);
            lp.dY = gh;
            snprintf(op, sizeof op, "linear_bwd%s%s%s", relu ? " relu" : "", with_dx ? "" : " noX",
                     bf16 ? " bf16" : "");
            if (!c->broken && op_ok(c,
                                    ops_cuda_linear_bwd(c->blas, c->s, dX_, dW_, Ydev, dYdev,
                                                        with_dx ? dXdev : NULL, dWdev, dbdev, ws, B,
                                                        D, H, relu, bf16 ? &lp : NULL),
                                    "ops_cuda_linear_bwd")) {
                down(c, dYg, dYdev, ny * 4);
                down(c, dWg, dWdev, nw * 4);
                down(c, dbg, dbdev, (size_t)H * 4);
                check(c, op, shape, "dY", dYg, dYc, ny, 0.0, 0.0);
                check(c, op, shape, "dW", dWg, dWc, nw, 1e-4, 1e-4);
                check(c, op, shape, "db", dbg, dbc, (size_t)H, 1e-4, 1e-4);
                if (with_dx) {
                    down(c, dXg, dXdev, nx * 4);
                    check(c, op, shape, "dX", dXg, dXc, nx, 1e-4, 1e-4);
                }
            }
            cfree(dX_), cfree(dW_), cfree(db_), cfree(dXb), cfree(dWb), cfree(dYd);
            cfree(dYdev), cfree(Ydev), cfree(dXdev), cfree(dWdev), cfree(dbdev), cfree(ws);
            cfree(gh);
            free(X), free(W), free(b), free(dY), free(Xr), free(Wr), free(Xb), free(Wb);
            free(Yc), free(Yg), free(dYc), free(dXc), free(dWc), free(dbc);
            free(dYg), free(dXg), free(dWg), free(dbg);
        }
    }
}

/* Dropout: the shared hash, so the factors must match bit for bit, for a
 * contiguous range and for a rank's strided rows. */
static void case_dropout(Ctx *c)
{
    const size_t n = 10007;
    const int B = 37, H = 50;
    const uint64_t seed = 0x1234abcdULL, first = 12345, first_row = 1000, stride = 3;
    float p_values[] = {0.0f, 0.3f, 0.9f};
    for (int pi = 0; pi < 3 && !c->broken; pi++) {
        float p = p_values[pi];
        char op[32], shape[40];
        float *x = fnew(n), *ref = fnew(n), *got = fnew(n);
        fill(x, n, 31, -2.0f, 2.0f);
        for (int dir = 0; dir < 2 && !c->broken; dir++) {
            memcpy(ref, x, n * sizeof(float));
            if (dir == 0)
                ops_dropout_fwd(ref, n, p, seed, first);
            else
                ops_dropout_bwd(ref, n, p, seed, first);
            float *d = up(c, x, n * 4);
            int rc = dir == 0 ? ops_cuda_dropout_fwd(d, n, p, seed, first, c->s)
                              : ops_cuda_dropout_bwd(d, n, p, seed, first, c->s);
            if (!c->broken && op_ok(c, rc, "ops_cuda_dropout")) {
                down(c, got, d, n * 4);
                snprintf(op, sizeof op, "dropout_%s p%.1f", dir ? "bwd" : "fwd", (double)p);
                snprintf(shape, sizeof shape, "n%zu first%llu", n, (unsigned long long)first);
                check(c, op, shape, "Y", got, ref, n, 0.0, 0.0);
            }
            cfree(d);

            /* Rows at first_row, first_row + stride, ...: ops_dropout_fwd of
             * each row at its global offset. */
            size_t nr = (size_t)B * H;
            memcpy(ref, x, nr * sizeof(float));
            for (int i = 0; i < B; i++)
                ops_dropout_fwd(ref + (size_t)i * H, (size_t)H, p, seed,
                                (first_row + (uint64_t)i * stride) * (uint64_t)H);
            d = up(c, x, nr * 4);
            rc = dir == 0 ? ops_cuda_dropout_rows_fwd(d, B, H, p, seed, first_row, stride, c->s)
                          : ops_cuda_dropout_rows_bwd(d, B, H, p, seed, first_row, stride, c->s);
            if (!c->broken && op_ok(c, rc, "ops_cuda_dropout_rows")) {
                down(c, got, d, nr * 4);
                snprintf(op, sizeof op, "dropout_rows_%s p%.1f", dir ? "bwd" : "fwd", (double)p);
                snprintf(shape, sizeof shape, "B%d H%d row%llu+%llu", B, H,
                         (unsigned long long)first_row, (unsigned long long)stride);
                check(c, op, shape, "Y", got, ref, nr, 0.0, 0.0);
            }
            cfree(d);
        }
        free(x), free(ref), free(got);
    }
}

/* Softmax cross-entropy: gradients, the loss sum and the hits, with ties
 * (first maximum wins), huge logits, and more classes than a warp. */
static void case_xent(Ctx *c)
{
    static const Shape shapes[] = {{300, 0, 10}, {5, 0, 1000}, {64, 0, 33}, {1, 0, 2}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !c->broken; si++) {
        int B = shapes[si].B, C = shapes[si].H;
        size_t n = (size_t)B * C;
        float *z = fnew(n), *dc = fnew(n), *dg = fnew(n);
        int32_t *y = xcalloc((size_t)B, sizeof(int32_t));
        fill(z, n, 41 + si, -4.0f, 4.0f);
        uint64_t s = 42 + si;
        for (int i = 0; i < B; i++)
            y[i] = (int32_t)(rng_next(&s) % (uint64_t)C);
        /* Ties: row 0 all equal (argmax 0); row 1 a tie between its last
         * two classes; row 2 huge logits; row 3 predicted right. */
        for (int j = 0; B > 0 && j < C; j++)
            z[j] = 0.5f;
        if (B > 1)
            z[(size_t)C + C - 1] = z[(size_t)C + C - 2] = 9.0f;
        for (int j = 0; B > 2 && j < C; j++)
            z[2 * (size_t)C + j] *= 250.0f;
        if (B > 3)
            z[3 * (size_t)C + y[3]] = 20.0f;
        float scale = 1.0f / (float)B;
        int64_t right = 0;
        double loss = ops_softmax_xent(z, y, dc, B, C, scale, &right);
        float *dz = up(c, z, n * 4), *dd = up(c, NULL, n * 4);
        int32_t *dy = up(c, y, (size_t)B * 4);
        double *dl = up(c, NULL, sizeof(double));
        unsigned long long *dr = up(c, NULL, sizeof(unsigned long long));
        char shape[32];
        snprintf(shape, sizeof shape, "B%d C%d", B, C);
        if (!c->broken) {
            cuda_ok(c, cudaMemset(dl, 0, sizeof(double)), "cudaMemset");
            cuda_ok(c, cudaMemset(dr, 0, sizeof(unsigned long long)), "cudaMemset");
        }
        /* Twice, the second time without gradients: the counters add up. */
        if (!c->broken &&
            op_ok(c, ops_cuda_softmax_xent(dz, dy, dd, B, C, scale, dl, dr, c->s),
                  "ops_cuda_softmax_xent") &&
            op_ok(c, ops_cuda_softmax_xent(dz, dy, NULL, B, C, 0.0f, dl, dr, c->s),
                  "ops_cuda_softmax_xent")) {
            double gl = 0;
            unsigned long long gr = 0;
            down(c, dg, dd, n * 4);
            down(c, &gl, dl, sizeof gl);
            down(c, &gr, dr, sizeof gr);
            check(c, "softmax_xent", shape, "dlogits", dg, dc, n, 1e-7, 2e-5);
            float lg = (float)gl, lc = (float)(2.0 * loss);
            check(c, "softmax_xent x2", shape, "loss", &lg, &lc, 1, 1e-6, 1e-5);
            check_int(c, "softmax_xent x2", shape, "correct", (long long)gr, 2 * (long long)right);
        }
        cfree(dz), cfree(dd), cfree(dy), cfree(dl), cfree(dr);
        free(z), free(dc), free(dg), free(y);
    }
}

/* Optimizers: three steps each, on a ragged length. */
static void case_optim(Ctx *c)
{
    const size_t n = 10007;
    for (int mode = 0; mode < 4 && !c->broken; mode++) {
        /* 0: sgd, 1: sgd momentum, 2: sgd nesterov, 3: adamw */
        float *w = fnew(n), *v = fnew(n), *m = fnew(n), *g = fnew(n);
        fill(w, n, 51, -1.0f, 1.0f);
        float *wc = fnew(n), *vc = fnew(n), *mc = fnew(n);
        float *wg = fnew(n), *vg = fnew(n), *mg = fnew(n);
        memcpy(wc, w, n * 4);
        float *dw = up(c, w, n * 4), *dv = up(c, v, n * 4), *dm = up(c, m, n * 4);
        float *dg = up(c, NULL, n * 4);
        float momentum = mode == 0 ? 0.0f : 0.9f;
        for (int t = 1; t <= 3 && !c->broken; t++) {
            fill(g, n, 52 + (uint64_t)t, -1.0f, 1.0f);
            float lr = 0.01f * (float)t;
            int rc;
            cuda_ok(c, cudaMemcpy(dg, g, n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
            if (mode < 3) {
                ops_sgd(wc, mode == 0 ? NULL : vc, g, n, lr, momentum, 1e-4f, mode == 2);
                rc = ops_cuda_sgd(dw, mode == 0 ? NULL : dv, dg, n, lr, momentum, 1e-4f, mode == 2,
                                  c->s);
            } else {
                ops_adamw(wc, mc, vc, g, n, lr, 0.9f, 0.999f, 1e-8f, 0.01f, t);
                rc = ops_cuda_adamw(dw, dm, dv, dg, n, lr, 0.9f, 0.999f, 1e-8f, 0.01f, t, c->s);
            }
            op_ok(c, rc, "ops_cuda optimizer");
        }
        if (!c->broken) {
            static const char *names[] = {"sgd", "sgd momentum", "sgd nesterov", "adamw"};
            down(c, wg, dw, n * 4);
            down(c, vg, dv, n * 4);
            down(c, mg, dm, n * 4);
            check(c, names[mode], "n10007 t1..3", "w", wg, wc, n, 1e-6, 1e-5);
            if (mode > 0)
                check(c, names[mode], "n10007 t1..3", mode == 3 ? "v" : "momentum", vg, vc, n, 1e-7,
                      1e-5);
            if (mode == 3)
                check(c, names[mode], "n10007 t1..3", "m", mg, mc, n, 1e-7, 1e-5);
        }
        cfree(dw), cfree(dv), cfree(dm), cfree(dg);
        free(w), free(v), free(m), free(g), free(wc), free(vc), free(mc), free(wg), free(vg);
        free(mg);
    }
}

/* bf16 rounding: ties to even, signs, subnormals, the largest finite. */
static void case_bf16(Ctx *c)
{
    const size_t n = 4099;
    float *x = fnew(n), *ref = fnew(n), *got = fnew(n);
    uint16_t *bits = xcalloc(n, 2), *gbits = xcalloc(n, 2);
    fill(x, n, 61, -1000.0f, 1000.0f);
    float special[] = {0.0f,        -0.0f,  1.0f,   1.00390625f /* tie, rounds to even */,
                       1.01171875f, 1e-40f, -3e38f, 3.389e38f,
                       65504.0f,    1e-3f};
    memcpy(x, special, sizeof special);
    round_bf16(x, ref, bits, n);
    float *dx = up(c, x, n * 4);
    uint16_t *dy = up(c, NULL, n * 2);
    if (!c->broken && op_ok(c, ops_cuda_to_bf16(dx, dy, n, c->s), "ops_cuda_to_bf16")) {
        down(c, gbits, dy, n * 2);
        for (size_t i = 0; i < n; i++)
            got[i] = bf16_value(gbits[i]);
        check(c, "to_bf16", "n4099", "y", got, ref, n, 0.0, 0.0);
    }
    cfree(dx), cfree(dy);
    free(x), free(ref), free(got), free(bits), free(gbits);
}

/* Element-wise kernels past their launch shapes' edges: more rows than a
 * grid's y dimension (65,535: the row kernels loop) and more columns than
 * a block (256), against the CPU's arithmetic (ops_math.h, ops_cpu.c). */
static void case_large(Ctx *c)
{
    const int B = 70001, H = 300;
    const size_t n = (size_t)B * H;
    char shape[32];
    snprintf(shape, sizeof shape, "B%d H%d", B, H);
    float *y = fnew(n), *b = fnew((size_t)H), *ref = fnew(n), *got = fnew(n);
    float *dyv = fnew(n), *dref = fnew(n), *dbr = fnew((size_t)H), *dbg = fnew((size_t)H);
    fill(y, n, 71, -1.0f, 1.0f);
    fill(b, (size_t)H, 72, -0.5f, 0.5f);
    fill(dyv, n, 73, -1.0f, 1.0f);
    /* Bias and ReLU. */
    for (size_t i = 0; i < n; i++)
        ref[i] = rung_relu(y[i] + b[i % H]);
    float *dy = up(c, y, n * 4), *dbias = up(c, b, (size_t)H * 4);
    if (!c->broken && op_ok(c, ops_cuda_bias_act(dy, dbias, B, H, true, c->s), "bias_act")) {
        down(c, got, dy, n * 4);
        check(c, "bias_act relu", shape, "Y", got, ref, n, 0.0, 0.0);
    }
    /* The ReLU gradient and the column sums (db) from that Y. */
    double *acc = xcalloc((size_t)H, sizeof(double));
    for (size_t i = 0; i < n; i++) {
        dref[i] = rung_relu_grad(ref[i], dyv[i]);
        acc[i % H] += dref[i];
    }
    for (int j = 0; j < H; j++)
        dbr[j] = (float)acc[j];
    float *dg = up(c, dyv, n * 4), *ddb = up(c, NULL, (size_t)H * 4);
    float *ws = up(c, NULL, (size_t)OPS_CUDA_DB_SPLIT * H * 4);
    if (!c->broken &&
        op_ok(c, ops_cuda_act_bwd(dy, dg, ddb, ws, B, H, true, c->s), "ops_cuda_act_bwd")) {
        down(c, got, dg, n * 4);
        down(c, dbg, ddb, (size_t)H * 4);
        check(c, "act_bwd relu", shape, "dY", got, dref, n, 0.0, 0.0);
        /* B terms of |x| <= 1 summed in float: sqrt(B) ulp-scale growth. */
        check(c, "act_bwd relu", shape, "db", dbg, dbr, (size_t)H, 2e-3, 1e-4);
    }
    /* Dropout of strided rows. */
    memcpy(ref, y, n * 4);
    for (int i = 0; i < B; i++)
        ops_dropout_fwd(ref + (size_t)i * H, (size_t)H, 0.4f, 99, (5 + (uint64_t)i * 3) * H);
    if (!c->broken && cuda_ok(c, cudaMemcpy(dy, y, n * 4, cudaMemcpyHostToDevice), "cudaMemcpy") &&
        op_ok(c, ops_cuda_dropout_rows_fwd(dy, B, H, 0.4f, 99, 5, 3, c->s), "dropout_rows")) {
        down(c, got, dy, n * 4);
        check(c, "dropout_rows p0.4", shape, "Y", got, ref, n, 0.0, 0.0);
    }
    cfree(dy), cfree(dbias), cfree(dg), cfree(ddb), cfree(ws);
    free(y), free(b), free(ref), free(got), free(dyv), free(dref), free(dbr), free(dbg), free(acc);

    /* Softmax cross-entropy over 70,001 rows: one warp a row, 8 a block. */
    const int C = 10;
    size_t nz = (size_t)B * C;
    float *z = fnew(nz), *dc = fnew(nz), *dgz = fnew(nz);
    int32_t *lab = xcalloc((size_t)B, sizeof(int32_t));
    fill(z, nz, 74, -6.0f, 6.0f);
    for (int i = 0; i < B; i++)
        lab[i] = (int32_t)((i * 7) % C);
    int64_t right = 0;
    double loss = ops_softmax_xent(z, lab, dc, B, C, 1.0f / (float)B, &right);
    float *dz = up(c, z, nz * 4), *dd = up(c, NULL, nz * 4);
    int32_t *dl = up(c, lab, (size_t)B * 4);
    double *dls = up(c, NULL, sizeof(double));
    unsigned long long *dr = up(c, NULL, sizeof(unsigned long long));
    snprintf(shape, sizeof shape, "B%d C%d", B, C);
    if (!c->broken && cuda_ok(c, cudaMemset(dls, 0, 8), "cudaMemset") &&
        cuda_ok(c, cudaMemset(dr, 0, 8), "cudaMemset") &&
        op_ok(c, ops_cuda_softmax_xent(dz, dl, dd, B, C, 1.0f / (float)B, dls, dr, c->s),
              "ops_cuda_softmax_xent")) {
        double gl = 0;
        unsigned long long gr = 0;
        down(c, dgz, dd, nz * 4);
        down(c, &gl, dls, sizeof gl);
        down(c, &gr, dr, sizeof gr);
        check(c, "softmax_xent", shape, "dlogits", dgz, dc, nz, 1e-12, 2e-5);
        float lg = (float)gl, lc = (float)loss;
        check(c, "softmax_xent", shape, "loss", &lg, &lc, 1, 1e-6, 1e-5);
        check_int(c, "softmax_xent", shape, "correct", (long long)gr, (long long)right);
    }
    cfree(dz), cfree(dd), cfree(dl), cfree(dls), cfree(dr);
    free(z), free(dc), free(dgz), free(lab);
}

/* The step clock: each _at operation against its host-argument twin (bit
 * for bit: the same kernel, its values read from the device), the clock's
 * advance, and the gather of a rank's rows, coded and float. */
static void case_clock(Ctx *c)
{
    OpsCudaClock hc = {3, 1000}, *dclk = up(c, &hc, sizeof hc);
    const int B = 37, H = 50;
    const size_t nr = (size_t)B * H;
    float *x = fnew(nr), *ref = fnew(nr), *got = fnew(nr);
    fill(x, nr, 81, -2.0f, 2.0f);
    /* Rows at 1000 + 3 * 64 + 2, then every 4th. */
    float *d1 = up(c, x, nr * 4), *d2 = up(c, x, nr * 4);
    if (!c->broken &&
        op_ok(c, ops_cuda_dropout_rows_fwd(d1, B, H, 0.3f, 5, 1000 + 3 * 64 + 2, 4, c->s), "dr") &&
        op_ok(c, ops_cuda_dropout_rows_at(d2, B, H, 0.3f, 5, dclk, 2, 64, 4, c->s), "dr_at")) {
        down(c, ref, d1, nr * 4);
        down(c, got, d2, nr * 4);
        check(c, "dropout_rows_at", "t3 row0 1000", "Y", got, ref, nr, 0.0, 0.0);
    }
    cfree(d1), cfree(d2);
    /* Optimizers: lr (and bias corrections) from tables at t = 3. */
    const size_t n = 1031;
    float lr_t[5] = {0.1f, 0.2f, 0.3f, 0.04f, 0.5f}, bc1[5], bc2[5];
    for (int t = 0; t < 5; t++)
        ops_cuda_adamw_corrections(0.9f, 0.999f, t + 1, &bc1[t], &bc2[t]);
    float *dlr = up(c, lr_t, sizeof lr_t), *db1 = up(c, bc1, sizeof bc1);
    float *db2 = up(c, bc2, sizeof bc2);
    fill(x, n, 82, -1.0f, 1.0f);
    float *g = fnew(n), *sq = fnew(n);
    fill(g, n, 83, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++)
        sq[i] = g[i] * g[i]; /* AdamW's v is a mean of squares */
    for (int mode = 0; mode < 2 && !c->broken; mode++) {
        float *w1 = up(c, x, n * 4), *w2 = up(c, x, n * 4), *dg = up(c, g, n * 4);
        float *m1 = up(c, g, n * 4), *m2 = up(c, g, n * 4), *v1 = up(c, sq, n * 4);
        float *v2 = up(c, sq, n * 4);
        int rc1, rc2;
        if (mode == 0) {
            rc1 = ops_cuda_sgd(w1, m1, dg, n, 0.04f, 0.9f, 1e-4f, true, c->s);
            rc2 = ops_cuda_sgd_at(w2, m2, dg, n, dlr, dclk, 0.9f, 1e-4f, true, c->s);
        } else {
            rc1 = ops_cuda_adamw(w1, m1, v1, dg, n, 0.04f, 0.9f, 0.999f, 1e-8f, 0.01f, 4, c->s);
            rc2 = ops_cuda_adamw_at(w2, m2, v2, dg, n, dlr, db1, db2, dclk, 0.9f, 0.999f, 1e-8f,
                                    0.01f, c->s);
        }
        if (!c->broken && op_ok(c, rc1, "optimizer") && op_ok(c, rc2, "optimizer_at")) {
            down(c, ref, w1, n * 4);
            down(c, got, w2, n * 4);
            check(c, mode ? "adamw_at" : "sgd_at", "t3 of 5", "w", got, ref, n, 0.0, 0.0);
        }
        cfree(w1), cfree(w2), cfree(dg), cfree(m1), cfree(m2), cfree(v1), cfree(v2);
    }
    free(g), free(sq);
    if (!c->broken && op_ok(c, ops_cuda_clock_advance(dclk, c->s), "ops_cuda_clock_advance")) {
        OpsCudaClock after = {0, 0};
        down(c, &after, dclk, sizeof after);
        check_int(c, "clock_advance", "t3", "t", after.t, 4);
        check_int(c, "clock_advance", "t3", "row0", after.row0, 1000);
    }
    /* Gather: 300 samples of 784 byte-coded features (and as floats), the
     * rows of rank 2 of 3 in step 3 of batch 64 of a permutation. */
    const int N = 300, D = 784, M = 21;
    Dataset set = {.n = N, .dim = D, .n_classes = 10};
    set.x = fnew((size_t)N * D);
    set.y = xcalloc((size_t)N, sizeof(int32_t));
    for (size_t i = 0; i < (size_t)N * D; i++)
        set.x[i] = ((float)((i * 131) % 256) / 255.0f - 0.29f) / 0.35f;
    int64_t *perm = xcalloc((size_t)N, sizeof(int64_t)), *idx = xcalloc((size_t)N, 8);
    for (int i = 0; i < N; i++) {
        set.y[i] = i % 10;
        perm[i] = (i * 7 + 3) % N;
    }
    int64_t m = data_shard(perm, N, 3 * 64, 64, 2, 3, idx);
    float *xr = fnew((size_t)m * D), *xg = fnew((size_t)M * D);
    int32_t *yr = xcalloc((size_t)m, 4), *yg = xcalloc((size_t)M, 4);
    data_gather(&set, idx, m, xr, yr);
    uint8_t *codes = xcalloc((size_t)N * D, 1);
    float lut[DATA_CODEBOOK_SIZE];
    const Dataset *sets[] = {&set};
    int used = data_codebook(sets, 1, lut, &codes);
    int64_t *dperm = up(c, perm, (size_t)N * 8);
    uint8_t *dcodes = up(c, codes, (size_t)N * D);
    float *dlut = up(c, lut, sizeof lut), *dx = up(c, set.x, (size_t)N * D * 4);
    int32_t *dyl = up(c, set.y, (size_t)N * 4), *dyo = up(c, NULL, (size_t)M * 4);
    float *dxo = up(c, NULL, (size_t)M * D * 4);
    OpsCudaClock c3 = {3, 0};
    if (!c->broken)
        cuda_ok(c, cudaMemcpy(dclk, &c3, sizeof c3, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_int(c, "gather", "N300 D784", "m", m, M);
    for (int coded = 0; coded < 2 && !c->broken && used > 0 && m == M; coded++) {
        OpsCudaData od = {coded ? dcodes : NULL, coded ? dlut : NULL, coded ? NULL : dx, dyl, N, D};
        if (op_ok(c, ops_cuda_gather(&od, dperm, 2, 3, dclk, 64, M, dxo, dyo, c->s), "gather")) {
            down(c, xg, dxo, (size_t)M * D * 4);
            down(c, yg, dyo, (size_t)M * 4);
            check(c, coded ? "gather codes" : "gather floats", "rank 2/3 step 3", "X", xg, xr,
                  (size_t)M * D, 0.0, 0.0);
            check_int(c, coded ? "gather codes" : "gather floats", "rank 2/3 step 3", "Y",
                      memcmp(yg, yr, (size_t)M * 4) == 0, 1);
        }
    }
    cfree(dclk), cfree(dlr), cfree(db1), cfree(db2), cfree(dperm), cfree(dcodes), cfree(dlut);
    cfree(dx), cfree(dyl), cfree(dyo), cfree(dxo);
    free(x), free(ref), free(got), free(set.x), free(set.y), free(perm), free(idx), free(xr);
    free(xg), free(yr), free(yg), free(codes);
}

typedef struct Case {
    const char *name;
    void (*run)(Ctx *c);
} Case;

static const Case cases[] = {
    {"gemm", case_gemm},         {"linear", case_linear},    {"dropout", case_dropout},
    {"softmax_xent", case_xent}, {"optimizers", case_optim}, {"bf16", case_bf16},
    {"large", case_large},       {"clock", case_clock},
};

int main(void)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        printf("skipped: no CUDA device (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "no GPU");
        return RUNG_TEST_SKIPPED;
    }
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess ||
        prop.major * 10 + prop.minor < RUNG_CUDA_MIN_ARCH) {
        printf("skipped: no CUDA device (GPU 0 is older than compute capability %d.%d)\n",
               RUNG_CUDA_MIN_ARCH / 10, RUNG_CUDA_MIN_ARCH % 10);
        return RUNG_TEST_SKIPPED;
    }
    printf("device: %s (compute capability %d.%d)\n", prop.name, prop.major, prop.minor);
    Ctx c;
    memset(&c, 0, sizeof c);
    if (cudaStreamCreate(&c.s) != cudaSuccess || cublasCreate(&c.blas) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL  cannot create a stream and a cuBLAS handle\n");
        return 1;
    }
    printf("%-5s %-22s %-22s %-8s %10s %10s\n", "", "op", "shape", "output", "max|err|",
           "err/budget");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cases[i].run(&c);
        if (c.broken) {
            printf("FAIL  %s: stopped after a CUDA error\n", cases[i].name);
            break;
        }
    }
    cublasDestroy(c.blas);
    cudaStreamDestroy(c.s);
    printf("%d checks, %d failed\n", c.checks, c.failed);
    return c.failed ? 1 : 0;
}
