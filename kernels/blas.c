/* Which OpenBLAS kernel the trainer runs, and whether to trust it (blas.h).
 *
 * rung-train sets OPENBLAS_CORETYPE from cpuid before OpenBLAS loads
 * (common/blascore.h); blas_check() then compares the chosen kernel with a
 * naive GEMM on the shapes and transpositions the trainer uses. */
#include "blas.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"
#include "ops_math.h"

const char *blas_core_name(void)
{
    return openblas_get_corename();
}

void blas_set_threads(int n)
{
    openblas_set_num_threads(n);
}

/* One product of the check: C[M,N] = op(A) op(B) with K inner, op = the
 * transpose where ta/tb are set, as the trainer calls it (forward NN,
 * dW = X^T dY as TN, dX = dY W^T as NT). */
typedef struct CheckShape {
    int M, N, K;
    bool ta, tb;
} CheckShape;

static const CheckShape check_shapes[] = {
    {64, 512, 784, false, false},  /* a first layer's forward */
    {784, 512, 64, true, false},   /* its dW */
    {64, 784, 512, false, true},   /* a dX */
    {256, 256, 512, false, false}, /* a hidden layer's forward at batch 256 */
    {17, 9, 33, false, false},     /* ragged: no dimension a multiple of a kernel tile */
    {33, 9, 17, true, false},      {17, 33, 9, false, true}, {5, 3, 1, true, true},
};

/* Deterministic values in [-1, 1). */
static void check_fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(rung_hash32(seed, i) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

/* dst[cols, rows] = src[rows, cols]^T */
static void check_transpose(const float *src, float *dst, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* Checks one shape with the buffers given (each large enough for the
 * largest shape). */
static bool check_one(const CheckShape *s, float *A, float *B, float *At, float *Bt, float *C,
                      float *ref, char *why, size_t size)
{
    int M = s->M, N = s->N, K = s->K;
    /* A as stored: [M,K], or [K,M] when transposed; likewise B. */
    check_fill(A, (size_t)M * K, 1000 + (uint64_t)M);
    check_fill(B, (size_t)K * N, 2000 + (uint64_t)N);
    const float *An = A, *Bn = B;
    if (s->ta) {
        check_transpose(A, At, K, M);
        An = At;
    }
    if (s->tb) {
        check_transpose(B, Bt, N, K);
        Bn = Bt;
    }
    ops_gemm_naive(An, Bn, ref, M, N, K);
    for (size_t i = 0; i < (size_t)M * N; i++)
        C[i] = NAN; /* beta = 0 must overwrite, not scale */
    cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans,
                M, N, K, 1.0f, A, s->ta ? M : K, B, s->tb ? K : N, 0.0f, C, N);
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double got = C[(size_t)i * N + j], want = ref[(size_t)i * N + j];
            if (!(fabs(got - want) <= 1e-4 + 1e-4 * fabs(want))) {
                snprintf(why, size,
                         "sgemm (%s) %s%s M=%d N=%d K=%d: C[%d,%d] = %.9g, naive GEMM gives "
                         "%.9g",
                         blas_core_name(), s->ta ? "T" : "N", s->tb ? "T" : "N", M, N, K, i, j, got,
                         want);
                return false;
            }
        }
    }
    return true;
}

bool blas_check(char *why, size_t size)
{
    size_t most = 0;
    for (size_t i = 0; i < sizeof check_shapes / sizeof check_shapes[0]; i++) {
        const CheckShape *s = &check_shapes[i];
        size_t sizes[3] = {(size_t)s->M * s->K, (size_t)s->K * s->N, (size_t)s->M * s->N};
        for (int k = 0; k < 3; k++)
            most = sizes[k] > most ? sizes[k] : most;
    }
    float *buf = malloc(6 * most * sizeof *buf);
    if (!buf) {
        snprintf(why, size, "out of memory for the BLAS check (%zu bytes)", 6 * most * sizeof *buf);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof check_shapes / sizeof check_shapes[0]; i++)
        ok = check_one(&check_shapes[i], buf, buf + most, buf + 2 * most, buf + 3 * most,
                       buf + 4 * most, buf + 5 * most, why, size);
    free(buf);
    return ok;
}
