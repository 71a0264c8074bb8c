/* Element-wise math of the trainer, shared by the CPU backend (ops_cpu.c)
 * and the CUDA kernels (cuda/ops_cuda.cu): one definition, so the CPU tests
 * check the same arithmetic the GPU runs (docs/trainer.md, "Data-parallel
 * training").
 *
 * Every function is RUNG_HD: __host__ __device__ inline under nvcc, static
 * inline in C. Nothing here allocates, loops over arrays or touches memory
 * beyond its arguments. Conventions follow PyTorch's so results compare:
 * SGD with momentum (dampening 0, weight decay added to the gradient,
 * Nesterov optional) and AdamW (decoupled weight decay). */
#ifndef RUNG_KERNELS_OPS_MATH_H
#define RUNG_KERNELS_OPS_MATH_H

#include <stdint.h>

#include "splitmix.h" /* defines RUNG_HD, the qualifiers of every function here */

/* The softmax's exponential: expf on both sides, not CUDA's __expf, whose
 * error grows with |x| (2 + 1.16|x| ulp) and which flushes subnormals.
 * CUDA's expf is within 2 ulp of the exact value and glibc's within 1, so
 * the two backends differ by a few ulp per term, not bit for bit
 * (docs/trainer.md, "GPUs"); tests/gpu/test_ops_gpu.c budgets for that. */
#include <math.h>
#define RUNG_EXPF expf

/* ReLU and its gradient, taken from the output y = relu(x). */
RUNG_HD float rung_relu(float x)
{
    return x > 0.0f ? x : 0.0f;
}

RUNG_HD float rung_relu_grad(float y, float dy)
{
    return y > 0.0f ? dy : 0.0f;
}

/* A counter-based 32-bit hash of (seed, index): the high half of output
 * index + 1 of the splitmix64 stream keyed by seed (common/splitmix.h).
 * Dropout masks depend on nothing but the seed and the element's global
 * index, so any split of a batch over ranks or threads draws the same mask. */
RUNG_HD uint32_t rung_hash32(uint64_t seed, uint64_t index)
{
    return (uint32_t)(rung_splitmix_at(seed, index + 1) >> 32);
}

/* Inverted dropout: the factor of one element, 0 (dropped, with
 * probability p) or 1/(1-p). p in [0, 1). */
RUNG_HD float rung_dropout_scale(uint64_t seed, uint64_t index, float p)
{
    float u = (float)(rung_hash32(seed, index) >> 8) * (1.0f / 16777216.0f); /* [0, 1) */
    return u < p ? 0.0f : 1.0f / (1.0f - p);
}

/* One parameter of SGD as torch.optim.SGD (dampening 0): g += wd*w;
 * v = momentum*v + g; step = nesterov ? g + momentum*v : v; w -= lr*step.
 * v starts at 0, which gives PyTorch's first step (v = g). */
RUNG_HD void rung_sgd_step(float *w, float *v, float g, float lr, float momentum, float wd,
                           int nesterov)
{
    g += wd * *w;
    if (momentum != 0.0f) {
        *v = momentum * *v + g;
        g = nesterov ? g + momentum * *v : *v;
    }
    *w -= lr * g;
}

/* One parameter of AdamW as torch.optim.AdamW: w *= 1 - lr*wd; then Adam
 * with bias corrections bc1 = 1 - b1^t, bc2 = 1 - b2^t (t = 1, 2, ...). */
RUNG_HD void rung_adamw_step(float *w, float *m, float *v, float g, float lr, float b1, float b2,
                             float eps, float wd, float bc1, float bc2)
{
    *w *= 1.0f - lr * wd;
    *m = b1 * *m + (1.0f - b1) * g;
    *v = b2 * *v + (1.0f - b2) * g * g;
    float mhat = *m / bc1, vhat = *v / bc2;
    *w -= lr * mhat / (sqrtf(vhat) + eps);
}

#endif
