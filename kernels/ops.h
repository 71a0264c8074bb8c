/* The trainer's operations on the CPU backend (ops_cpu.c), float32,
 * row-major. The CUDA backend (cuda/ops_cuda.h) has the same operations on
 * device pointers, with the same element-wise math (ops_math.h).
 *
 * Shapes, named once: B = batch rows, D = a layer's inputs, H = its outputs,
 * C = classes. A linear layer holds W [D, H] and b [H]: Y = X W + b.
 *
 * GEMMs go to OpenBLAS (cblas_sgemm); everything else is one fused pass over
 * the data. Functions do not allocate and cannot fail. */
#ifndef RUNG_KERNELS_OPS_H
#define RUNG_KERNELS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Y[B,H] = act(X[B,D] W[D,H] + b[H]), act = ReLU when relu, else identity.
 * The bias (and ReLU) are fused into one pass after the GEMM. */
void ops_linear_fwd(const float *X, const float *W, const float *b, float *Y, int B, int D, int H,
                    bool relu);

/* Backward of ops_linear_fwd. Y is the forward output (after ReLU; read
 * only when relu), dY the gradient with respect to it; dY is overwritten
 * with the gradient before the activation. dW[D,H] = X^T dY and db[H] =
 * column sums of dY are overwritten (not accumulated); dX[B,D] = dY W^T,
 * skipped when dX is NULL (the first layer). */
void ops_linear_bwd(const float *X, const float *W, const float *Y, float *dY, float *dX, float *dW,
                    float *db, int B, int D, int H, bool relu);

/* Inverted dropout of n values in place; element i's mask is
 * rung_dropout_scale(seed, first + i, p). The backward applies the same
 * factors to the gradient. p = 0 does nothing. */
void ops_dropout_fwd(float *Y, size_t n, float p, uint64_t seed, uint64_t first);
void ops_dropout_bwd(float *dY, size_t n, float p, uint64_t seed, uint64_t first);

/* Softmax cross-entropy of logits[B,C] against labels[B] (0..C-1). Returns
 * the sum over rows of -log softmax(z)[label] (in double); *correct gets the
 * rows whose argmax is the label (first maximum on ties). When dlogits is
 * not NULL it gets (softmax(z) - onehot(label)) * grad_scale; grad_scale is
 * 1 / (global batch) so that ranks' gradients sum to the batch mean.
 * correct may be NULL. */
double ops_softmax_xent(const float *logits, const int32_t *labels, float *dlogits, int B, int C,
                        float grad_scale, int64_t *correct);

/* Optimizer updates over n parameters (ops_math.h has the per-element rule).
 * SGD's momentum buffer v is neither read nor written when momentum is 0,
 * and may then be NULL. */
void ops_sgd(float *w, float *v, const float *g, size_t n, float lr, float momentum, float wd,
             bool nesterov);
/* t = the step number, from 1. */
void ops_adamw(float *w, float *m, float *v, const float *g, size_t n, float lr, float b1, float b2,
               float eps, float wd, int64_t t);

/* Naive references, for tests and the start-up check of the BLAS kernel:
 * C[M,N] = A[M,K] B[K,N] in double accumulation. */
void ops_gemm_naive(const float *A, const float *B, float *C, int M, int N, int K);

#endif
