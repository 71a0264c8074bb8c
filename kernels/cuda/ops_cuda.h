/* The trainer's operations on a CUDA device (ops_cuda.cu): ops.h's
 * operations on device pointers, each queued on a stream, with the
 * element-wise math taken from ops_math.h so that the CPU tests check the
 * arithmetic the GPU runs (docs/trainer.md, "Data-parallel training").
 * tests/gpu/ compares every one with its CPU twin.
 *
 * Shapes, named once: B = batch rows, D = a layer's inputs, H = its outputs,
 * C = classes. A linear layer holds W [D, H] and b [H]: Y = X W + b.
 * Everything is row-major float32; bf16 values (TRAIN_BF16) are passed as
 * their 16-bit patterns (uint16_t), so this header is plain C.
 *
 * Functions do not allocate and do not synchronize. Each returns 0, or -1
 * when CUDA or cuBLAS refused a call; ops_cuda_error() then says which call,
 * where and why. Launch errors surface at once; faults inside a kernel
 * surface at the caller's next synchronization, as with any CUDA code.
 *
 * Handles: a cublasHandle_t belongs to one thread (docs/architecture.md, convention 4);
 * the GEMM operations bind it to the stream they are given. */
#ifndef RUNG_KERNELS_OPS_CUDA_H
#define RUNG_KERNELS_OPS_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Row blocks of the bias-gradient reduction, at most: ops_cuda_linear_bwd
 * sums each column of dY in up to this many partial sums (as many as fill
 * the device, so that the pass over B x H fills the GPU), then adds them
 * up in a fixed order, so db is the same bit for bit on every run on the
 * same device. Its workspace holds OPS_CUDA_DB_SPLIT * H floats. */
#define OPS_CUDA_DB_SPLIT 32

/* Values of a training step that change from step to step, kept on the
 * device so that a step captured once in a CUDA Graph replays with the
 * right ones: the kernels of the _at functions below read them when they
 * run. The trainer sets both fields at an epoch's start; t advances at the
 * end of every step (ops_cuda_clock_advance). */
typedef struct OpsCudaClock {
    int64_t t;    /* the step of the epoch, 0-based: the index into per-step tables */
    int64_t row0; /* global row number of the epoch's position 0: (epoch - 1) * n_train */
} OpsCudaClock;

/* The codebook of a byte-coded dataset (data_codebook): 256 floats. */
#define OPS_CUDA_LUT_SIZE 256

/* A dataset resident on the device (device pointers, borrowed): features
 * as byte codes into lut (a quarter of their float size), or as floats
 * when codes is NULL; labels as int32. */
typedef struct OpsCudaData {
    const uint8_t *codes; /* [n, dim], or NULL */
    const float *lut;     /* [OPS_CUDA_LUT_SIZE] with codes */
    const float *x;       /* [n, dim] without codes */
    const int32_t *y;     /* [n] */
    int64_t n;
    int dim;
} OpsCudaData;

/* What the last failed ops_cuda_ call of this thread (or one of the check
 * macros below) refused: "file:line: call: reason". Borrowed; valid until
 * the thread's next failure. */
const char *ops_cuda_error(void);

/* Records a failure for ops_cuda_error() and returns -1: the macros below
 * and the trainer use these; not for other callers. */
int ops_cuda__fail(const char *file, int line, const char *call, const char *reason);
int ops_cuda__failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* llm.c's check macros, carrying file and line, except that library code
 * does not exit: a failed call records why and returns -1 from the
 * enclosing function (which must return int). */
#define cudaCheck(call)                                                                            \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess)                                                                   \
            return ops_cuda__fail(__FILE__, __LINE__, #call, cudaGetErrorString(err_));            \
    } while (0)

#define cublasCheck(call)                                                                          \
    do {                                                                                           \
        cublasStatus_t st_ = (call);                                                               \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                          \
            return ops_cuda__fail(__FILE__, __LINE__, #call, cublasGetStatusString(st_));          \
    } while (0)

/* bf16 copies of a linear layer's GEMM operands (TRAIN_BF16): the GEMMs
 * read these (cuBLAS, fp32 accumulation and fp32 outputs) instead of the
 * float32 arrays. Pass NULL for float32 GEMMs. */
typedef struct OpsCudaBf16 {
    const uint16_t *X; /* [B, D]: X rounded to bf16 (ops_cuda_to_bf16) */
    const uint16_t *W; /* [D, H]: W rounded to bf16 */
    uint16_t *dY;      /* [B, H]: scratch; the backward writes dY rounded here */
} OpsCudaBf16;

/* C[M,N] = op(A)[M,K] op(B)[K,N], row-major, overwritten: A is stored
 * [M,K] (or [K,M] when ta), B is stored [K,N] (or [N,K] when tb). A and B
 * are float, or bf16 patterns when bf16 (fp32 accumulation either way). */
int ops_cuda_gemm(cublasHandle_t h, cudaStream_t s, bool ta, bool tb, int M, int N, int K,
                  const void *A, const void *B, float *C, bool bf16);

/* Y[B,H] = act(Y + b), act = ReLU when relu: the epilogue of the forward
 * GEMM, one pass. */
int ops_cuda_bias_act(float *Y, const float *b, int B, int H, bool relu, cudaStream_t s);

/* dY[B,H] = rung_relu_grad(Y, dY) when relu (in place), and db[H] = the
 * column sums of the result: one pass, then OPS_CUDA_DB_SPLIT partials per
 * column added in order. ws: OPS_CUDA_DB_SPLIT * H floats of scratch. */
int ops_cuda_act_bwd(const float *Y, float *dY, float *db, float *ws, int B, int H, bool relu,
                     cudaStream_t s);

/* ops_linear_fwd on the device: Y[B,H] = act(X[B,D] W[D,H] + b[H]). */
int ops_cuda_linear_fwd(cublasHandle_t h, cudaStream_t s, const float *X, const float *W,
                        const float *b, float *Y, int B, int D, int H, bool relu,
                        const OpsCudaBf16 *lp);

/* ops_linear_bwd on the device, with the same contract: dY is overwritten
 * with the gradient before the activation; dW[D,H] and db[H] are
 * overwritten; dX[B,D] = dY W^T unless dX is NULL. ws as for
 * ops_cuda_act_bwd. */
int ops_cuda_linear_bwd(cublasHandle_t h, cudaStream_t s, const float *X, const float *W,
                        const float *Y, float *dY, float *dX, float *dW, float *db, float *ws,
                        int B, int D, int H, bool relu, const OpsCudaBf16 *lp);

/* ops_dropout_fwd/bwd on the device: element i's factor is
 * rung_dropout_scale(seed, first + i, p); p = 0 does nothing. */
int ops_cuda_dropout_fwd(float *Y, size_t n, float p, uint64_t seed, uint64_t first,
                         cudaStream_t s);
int ops_cuda_dropout_bwd(float *dY, size_t n, float p, uint64_t seed, uint64_t first,
                         cudaStream_t s);

/* Dropout of a rank's rows Y[B,H] whose rows sit at global row numbers
 * first_row, first_row + stride, ... (DistributedSampler's every k-th
 * sample): element (i, j) is rung_dropout_scale(seed,
 * (first_row + i * stride) * H + j, p), which is ops_dropout_fwd of each
 * row with first = (first_row + i * stride) * H. One launch for the batch. */
int ops_cuda_dropout_rows_fwd(float *Y, int B, int H, float p, uint64_t seed, uint64_t first_row,
                              uint64_t stride, cudaStream_t s);
int ops_cuda_dropout_rows_bwd(float *dY, int B, int H, float p, uint64_t seed, uint64_t first_row,
                              uint64_t stride, cudaStream_t s);

/* ops_cuda_dropout_rows_fwd (and _bwd, the same factors) with the first
 * row at first_row + clk->row0 + clk->t * per_step: a rank's rows in the
 * step that the device clock names. */
int ops_cuda_dropout_rows_at(float *Y, int B, int H, float p, uint64_t seed,
                             const OpsCudaClock *clk, uint64_t first_row, uint64_t per_step,
                             uint64_t stride, cudaStream_t s);

/* ops_softmax_xent on the device. Instead of returning the loss it adds
 * the sum over rows of -log softmax(z)[label] to *loss_sum and the rows
 * whose argmax (first maximum on ties) is the label to *correct: device
 * counters, so a whole epoch adds up without a synchronization. Either may
 * be NULL. dlogits (or NULL) gets (softmax(z) - onehot(label)) * grad_scale
 * computed as the CPU does. Labels must be in 0..C-1. */
int ops_cuda_softmax_xent(const float *logits, const int32_t *labels, float *dlogits, int B, int C,
                          float grad_scale, double *loss_sum, unsigned long long *correct,
                          cudaStream_t s);

/* ops_sgd and ops_adamw on the device (rung_sgd_step, rung_adamw_step);
 * v may be NULL when momentum is 0. t = the step number, from 1. */
int ops_cuda_sgd(float *w, float *v, const float *g, size_t n, float lr, float momentum, float wd,
                 bool nesterov, cudaStream_t s);
int ops_cuda_adamw(float *w, float *m, float *v, const float *g, size_t n, float lr, float b1,
                   float b2, float eps, float wd, int64_t t, cudaStream_t s);

/* The same with the learning rate lr[clk->t] (and AdamW's bias
 * corrections bc1[clk->t], bc2[clk->t], as ops_cuda_adamw_corrections makes
 * them): device tables indexed by the device clock. */
int ops_cuda_sgd_at(float *w, float *v, const float *g, size_t n, const float *lr,
                    const OpsCudaClock *clk, float momentum, float wd, bool nesterov,
                    cudaStream_t s);
int ops_cuda_adamw_at(float *w, float *m, float *v, const float *g, size_t n, const float *lr,
                      const float *bc1, const float *bc2, const OpsCudaClock *clk, float b1,
                      float b2, float eps, float wd, cudaStream_t s);

/* AdamW's bias corrections at step t (from 1): 1 - b^t in double, rounded
 * to float, as ops_adamw and ops_cuda_adamw compute them. Host code. */
void ops_cuda_adamw_corrections(float b1, float b2, int64_t t, float *bc1, float *bc2);

/* clk->t += 1, queued on s (the last kernel of a training step). */
int ops_cuda_clock_advance(OpsCudaClock *clk, cudaStream_t s);

/* X[i, :] and Y[i] = the features and label of sample order[pos(i)] of d
 * (sample pos(i) when order is NULL), for i < m, where pos(i) = first +
 * i * stride, plus clk->t * per_step when clk is not NULL: a rank's shard
 * of the step that the device clock names (data_shard's rule with first =
 * start + rank, stride = ranks). A position or sample outside d gives label
 * -1, whose loss is NaN. */
int ops_cuda_gather(const OpsCudaData *d, const int64_t *order, int64_t first, int64_t stride,
                    const OpsCudaClock *clk, int64_t per_step, int m, float *X, int32_t *Y,
                    cudaStream_t s);

/* y[n] = x rounded to bf16 (to nearest, ties to even). */
int ops_cuda_to_bf16(const float *x, uint16_t *y, size_t n, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
