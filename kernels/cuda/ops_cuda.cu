/* The trainer's operations on a CUDA device (ops_cuda.h): GEMMs go to
 * cuBLAS, everything around them is one fused kernel that calls the
 * element-wise math of ops_math.h, so that it computes what ops_cpu.c
 * computes, operation for operation.
 *
 * Workload: an MLP such as 784-512-256-10 at a batch of a few hundred to a
 * few thousand rows per GPU. The GEMMs take nearly all of a step; the
 * kernels here are memory-bound passes that touch each value once (bias and
 * ReLU; ReLU gradient and bias gradient; dropout; softmax, loss and its
 * gradient; the optimizer). Layouts are row-major float32, as on the CPU.
 *
 * Launch shapes, used throughout: element-wise kernels loop over their
 * array with a grid-stride loop (any n, any grid); kernels over a [B, H]
 * matrix give each thread a column j and loop over rows, so a warp reads
 * 32 consecutive floats of a row (coalesced) and no thread divides by H.
 * Every kernel checks its own bounds, so no launcher needs B or H to be a
 * multiple of anything; the launchers assert what they do assume and check
 * cudaGetLastError() after each launch. */
#include "ops_cuda.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cuda_bf16.h>

#include "ops_math.h"

/* ---- Errors ---------------------------------------------------------- */

/* One message per thread: every rank thread owns its own (docs/architecture.md,
 * convention 4), and nothing is shared. */
static thread_local char ops_why[512];

const char *ops_cuda_error(void)
{
    return ops_why;
}

int ops_cuda__fail(const char *file, int line, const char *call, const char *reason)
{
    const char *base = strrchr(file, '/');
    snprintf(ops_why, sizeof ops_why, "%s:%d: %s: %s", base ? base + 1 : file, line, call, reason);
    return -1;
}

int ops_cuda__failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ops_why, sizeof ops_why, fmt, ap);
    va_end(ap);
    return -1;
}

/* After every launch: a bad configuration (too many threads, no kernel
 * image for this GPU) is reported here, at the launch's file and line. */
#define launchCheck() cudaCheck(cudaGetLastError())

/* ---- Launch shapes --------------------------------------------------- */

#define EW_THREADS 256      /* element-wise kernels: 8 warps a block */
#define EW_MAX_BLOCKS 65536 /* 16M threads: more than any GPU runs at once */
#define GRID_Y_MAX 65535    /* CUDA's limit on gridDim.y */

static unsigned ew_blocks(size_t n)
{
    size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (unsigned)(b < EW_MAX_BLOCKS ? b : EW_MAX_BLOCKS);
}

/* Row kernels: a block of `cols` threads (a multiple of 32, at most 256,
 * no wider than H needs) per column strip; grid.y blocks share the rows. */
typedef struct RowShape {
    dim3 grid, block;
} RowShape;

static RowShape row_shape(int B, int H)
{
    int cols = H >= EW_THREADS ? EW_THREADS : (H + 31) / 32 * 32;
    RowShape s;
    s.block = dim3((unsigned)cols);
    s.grid = dim3((unsigned)((H + cols - 1) / cols), (unsigned)(B < GRID_Y_MAX ? B : GRID_Y_MAX));
    return s;
}

/* ---- GEMM ------------------------------------------------------------ */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
 * reads each row-major array as its transpose, so the operands swap places
 * and keep their own op flags. */
int ops_cuda_gemm(cublasHandle_t h, cudaStream_t s, bool ta, bool tb, int M, int N, int K,
                  const void *A, const void *B, float *C, bool bf16)
{
    assert(M >= 0 && N >= 0 && K >= 0);
    if (M == 0 || N == 0)
        return 0;
    if (K == 0) {
        /* An empty sum; BLAS libraries may skip k = 0 products. */
        cudaCheck(cudaMemsetAsync(C, 0, (size_t)M * (size_t)N * sizeof(float), s));
        return 0;
    }
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = ta ? M : K; /* row length of A as stored */
    int ldb = tb ? K : N;
    /* cublasSetStream also resets the handle's workspace to cuBLAS's own
     * pool, which a captured graph must not allocate from: bind only when
     * the stream changes (the trainer binds its one stream once). */
    cudaStream_t bound = NULL;
    cublasCheck(cublasGetStream(h, &bound));
    if (bound != s)
        cublasCheck(cublasSetStream(h, s));
    if (bf16) {
        /* bf16 inputs, fp32 accumulation and output: TRAIN_BF16. */
        cublasCheck(cublasGemmEx(h, op_b, op_a, N, M, K, &one, B, CUDA_R_16BF, ldb, A, CUDA_R_16BF,
                                 lda, &zero, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
    } else {
        cublasCheck(cublasSgemm(h, op_b, op_a, N, M, K, &one, (const float *)B, ldb,
                                (const float *)A, lda, &zero, C, N));
    }
    return 0;
}

/* ---- Bias and activation -------------------------------------------- */

/* Y[i, j] = act(Y[i, j] + b[j]); thread column j, rows blockIdx.y + k *
 * gridDim.y. The same expression as ops_linear_fwd's pass. */
__global__ void bias_act_kernel(float *Y, const float *b, int B, int H, bool relu)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= H)
        return;
    float bj = b[j];
    for (int i = blockIdx.y; i < B; i += gridDim.y) {
        float *y = Y + (size_t)i * H + j;
        *y = relu ? rung_relu(*y + bj) : *y + bj;
    }
}

int ops_cuda_bias_act(float *Y, const float *b, int B, int H, bool relu, cudaStream_t s)
{
    assert(B >= 0 && H >= 0);
    if (B == 0 || H == 0)
        return 0;
    RowShape rs = row_shape(B, H);
    bias_act_kernel<<<rs.grid, rs.block, 0, s>>>(Y, b, B, H, relu);
    launchCheck();
    return 0;
}

/* The ReLU gradient in place and the first half of db: block (DB_COLS,
 * DB_LANES) takes 32 columns of row block blockIdx.y (rows [lo, hi));
 * each of its DB_LANES row lanes sums every DB_LANES-th row, the lanes are
 * added in shared memory, and ws[blockIdx.y, j] gets the block's sum. */
#define DB_COLS 32
#define DB_LANES 8

__global__ void act_bwd_kernel(const float *Y, float *dY, float *ws, int B, int H, int chunk,
                               bool relu)
{
    __shared__ float part[DB_LANES][DB_COLS + 1]; /* +1: no bank conflicts */
    int j = blockIdx.x * DB_COLS + threadIdx.x;
    long long lo = (long long)blockIdx.y * chunk;
    long long hi = lo + chunk < B ? lo + chunk : B;
    float acc = 0.0f;
    if (j < H) {
        for (long long i = lo + threadIdx.y; i < hi; i += DB_LANES) {
            size_t at = (size_t)i * H + j;
            float d = dY[at];
            if (relu) {
                d = rung_relu_grad(Y[at], d);
                dY[at] = d;
            }
            acc += d;
        }
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < H) {
        float sum = 0.0f;
        for (int q = 0; q < DB_LANES; q++)
            sum += part[q][threadIdx.x];
        ws[(size_t)blockIdx.y * H + j] = sum;
    }
}

/* db[j] = the `split` partial sums of column j, in order. */
__global__ void db_sum_kernel(const float *ws, float *db, int H, int split)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= H)
        return;
    float sum = 0.0f;
    for (int p = 0; p < split; p++)
        sum += ws[(size_t)p * H + j];
    db[j] = sum;
}

/* Row blocks of the db reduction: enough blocks to give every SM of this
 * device two (a narrow layer needs many row blocks, a wide one few), no
 * more than OPS_CUDA_DB_SPLIT, and no row lane with fewer than 4 rows. A
 * function of (B, H, the device) alone, so db repeats bit for bit. */
static int db_split(int B, int H)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        sms = OPS_CUDA_DB_SPLIT; /* launch errors surface at the launch itself */
    }
    int col_blocks = (H + DB_COLS - 1) / DB_COLS;
    int want = (2 * sms + col_blocks - 1) / col_blocks;
    int by_rows = (B + 4 * DB_LANES - 1) / (4 * DB_LANES);
    int split = want < by_rows ? want : by_rows;
    split = split < OPS_CUDA_DB_SPLIT ? split : OPS_CUDA_DB_SPLIT;
    return split > 1 ? split : 1;
}

int ops_cuda_act_bwd(const float *Y, float *dY, float *db, float *ws, int B, int H, bool relu,
                     cudaStream_t s)
{
    assert(B >= 0 && H >= 0);
    if (H == 0)
        return 0;
    /* chunk * split >= B: the row blocks cover every row; with B = 0
     * every partial is 0 and so is db, as on the CPU. */
    int split = db_split(B, H);
    int chunk = (B + split - 1) / split;
    assert((long long)chunk * split >= B && split <= OPS_CUDA_DB_SPLIT);
    dim3 grid((unsigned)((H + DB_COLS - 1) / DB_COLS), (unsigned)split);
    dim3 block(DB_COLS, DB_LANES);
    act_bwd_kernel<<<grid, block, 0, s>>>(Y, dY, ws, B, H, chunk, relu);
    launchCheck();
    db_sum_kernel<<<(H + EW_THREADS - 1) / EW_THREADS, EW_THREADS, 0, s>>>(ws, db, H, split);
    launchCheck();
    return 0;
}

/* ---- Linear layers ---------------------------------------------------- */

int ops_cuda_linear_fwd(cublasHandle_t h, cudaStream_t s, const float *X, const float *W,
                        const float *b, float *Y, int B, int D, int H, bool relu,
                        const OpsCudaBf16 *lp)
{
    assert(B >= 0 && D >= 0 && H >= 0);
    assert(lp == NULL || (lp->X != NULL && lp->W != NULL));
    if (B == 0 || H == 0)
        return 0;
    /* Y = X W (into Y), then bias and activation in one pass. */
    const void *x = lp ? (const void *)lp->X : X, *w = lp ? (const void *)lp->W : W;
    if (ops_cuda_gemm(h, s, false, false, B, H, D, x, w, Y, lp != NULL) != 0)
        return -1;
    return ops_cuda_bias_act(Y, b, B, H, relu, s);
}

int ops_cuda_linear_bwd(cublasHandle_t h, cudaStream_t s, const float *X, const float *W,
                        const float *Y, float *dY, float *dX, float *dW, float *db, float *ws,
                        int B, int D, int H, bool relu, const OpsCudaBf16 *lp)
{
    assert(B >= 0 && D >= 0 && H >= 0);
    assert(lp == NULL || (lp->X != NULL && lp->W != NULL && lp->dY != NULL));
    if (H == 0)
        return 0;
    /* dY becomes the pre-activation gradient, and db its column sums. */
    if (ops_cuda_act_bwd(Y, dY, db, ws, B, H, relu, s) != 0)
        return -1;
    if (D == 0)
        return 0;
    const void *g = dY, *x = X, *w = W;
    if (lp) {
        if (ops_cuda_to_bf16(dY, lp->dY, (size_t)B * (size_t)H, s) != 0)
            return -1;
        g = lp->dY, x = lp->X, w = lp->W;
    }
    bool bf16 = lp != NULL;
    /* dW[D,H] = X^T dY: X is stored [B, D], so op(A) = X^T with ta. An
     * empty batch (K = B = 0) gives dW = 0 inside ops_cuda_gemm. */
    if (ops_cuda_gemm(h, s, true, false, D, H, B, x, g, dW, bf16) != 0)
        return -1;
    /* dX[B,D] = dY W^T: W is stored [D, H], so op(B) = W^T with tb. */
    if (dX && ops_cuda_gemm(h, s, false, true, B, D, H, g, w, dX, bf16) != 0)
        return -1;
    return 0;
}

/* ---- Dropout --------------------------------------------------------- */

/* Y[i] *= rung_dropout_scale(seed, first + i, p): ops_dropout_fwd. */
__global__ void dropout_kernel(float *Y, size_t n, float p, uint64_t seed, uint64_t first)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        Y[i] *= rung_dropout_scale(seed, first + i, p);
}

/* Row i of Y[B,H] is global row first_row + i * stride, plus clk->row0 +
 * clk->t * per_step when a clock is given. */
__global__ void dropout_rows_kernel(float *Y, int B, int H, float p, uint64_t seed,
                                    uint64_t first_row, uint64_t stride, const OpsCudaClock *clk,
                                    uint64_t per_step)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= H)
        return;
    if (clk)
        first_row += (uint64_t)clk->row0 + (uint64_t)clk->t * per_step;
    for (int i = blockIdx.y; i < B; i += gridDim.y) {
        uint64_t index = (first_row + (uint64_t)i * stride) * (uint64_t)H + (uint64_t)j;
        Y[(size_t)i * H + j] *= rung_dropout_scale(seed, index, p);
    }
}

int ops_cuda_dropout_fwd(float *Y, size_t n, float p, uint64_t seed, uint64_t first, cudaStream_t s)
{
    assert(p >= 0.0f && p < 1.0f);
    if (p == 0.0f || n == 0)
        return 0;
    dropout_kernel<<<ew_blocks(n), EW_THREADS, 0, s>>>(Y, n, p, seed, first);
    launchCheck();
    return 0;
}

int ops_cuda_dropout_bwd(float *dY, size_t n, float p, uint64_t seed, uint64_t first,
                         cudaStream_t s)
{
    /* Same factors as the forward: y = x * s gives dx = dy * s. */
    return ops_cuda_dropout_fwd(dY, n, p, seed, first, s);
}

int ops_cuda_dropout_rows_fwd(float *Y, int B, int H, float p, uint64_t seed, uint64_t first_row,
                              uint64_t stride, cudaStream_t s)
{
    assert(p >= 0.0f && p < 1.0f && B >= 0 && H >= 0);
    if (p == 0.0f || B == 0 || H == 0)
        return 0;
    RowShape rs = row_shape(B, H);
    dropout_rows_kernel<<<rs.grid, rs.block, 0, s>>>(Y, B, H, p, seed, first_row, stride, NULL, 0);
    launchCheck();
    return 0;
}

int ops_cuda_dropout_rows_at(float *Y, int B, int H, float p, uint64_t seed,
                             const OpsCudaClock *clk, uint64_t first_row, uint64_t per_step,
                             uint64_t stride, cudaStream_t s)
{
    assert(p >= 0.0f && p < 1.0f && B >= 0 && H >= 0 && clk != NULL);
    if (p == 0.0f || B == 0 || H == 0)
        return 0;
    RowShape rs = row_shape(B, H);
    dropout_rows_kernel<<<rs.grid, rs.block, 0, s>>>(Y, B, H, p, seed, first_row, stride, clk,
                                                     per_step);
    launchCheck();
    return 0;
}

int ops_cuda_dropout_rows_bwd(float *dY, int B, int H, float p, uint64_t seed, uint64_t first_row,
                              uint64_t stride, cudaStream_t s)
{
    return ops_cuda_dropout_rows_fwd(dY, B, H, p, seed, first_row, stride, s);
}

/* ---- Softmax cross-entropy -------------------------------------------- */

/* One warp per row, XENT_WARPS rows per block. The warp's lanes stride the
 * C logits; maxima, argmaxima and sums are combined with butterfly
 * shuffles, which leave every lane with the same bits (IEEE addition
 * commutes, and (value, lowest index) is a total order). Per block, the
 * rows' losses and hits are added in shared memory and go to the device
 * counters in one atomic each. */
#define XENT_WARPS 8

__global__ void xent_kernel(const float *logits, const int32_t *labels, float *dlogits, int B,
                            int C, float grad_scale, double *loss_sum, unsigned long long *correct)
{
    __shared__ double s_loss[XENT_WARPS];
    __shared__ unsigned s_hits[XENT_WARPS];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row = blockIdx.x * XENT_WARPS + warp;
    double loss = 0.0;
    unsigned hit = 0;
    if (row < B) { /* warp-uniform: the shuffles below see all 32 lanes */
        const float *z = logits + (size_t)row * C;
        int label = labels[row];
        /* The maximum, first on ties: a lane keeps its first maximum; lanes
         * with no logit carry (-inf, INT_MAX), which never wins a tie. */
        float max = -INFINITY;
        int arg = INT_MAX;
        for (int j = lane; j < C; j += 32) {
            float v = z[j];
            if (arg == INT_MAX || v > max) {
                max = v;
                arg = j;
            }
        }
        for (int off = 16; off > 0; off /= 2) {
            float m2 = __shfl_xor_sync(0xffffffffu, max, off);
            int a2 = __shfl_xor_sync(0xffffffffu, arg, off);
            if (m2 > max || (m2 == max && a2 < arg)) {
                max = m2;
                arg = a2;
            }
        }
        /* The exps summed in double, and the label's gradient from the
         * other terms: ops_softmax_xent's formula (a confident row's
         * gradient is not rounded away). */
        double sum = 0.0;
        for (int j = lane; j < C; j += 32)
            sum += (double)RUNG_EXPF(z[j] - max);
        for (int off = 16; off > 0; off /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, off);
        bool valid = label >= 0 && label < C; /* a bad label gives NaN, not a fault */
        if (dlogits) {
            float *dz = dlogits + (size_t)row * C;
            double k = (double)grad_scale / sum;
            for (int j = lane; j < C; j += 32) {
                float e = RUNG_EXPF(z[j] - max);
                dz[j] = j == label ? (float)(-(sum - (double)e) * k) : (float)((double)e * k);
            }
        }
        if (lane == 0) {
            /* -log softmax(z)[label] = log(sum) + max - z[label], in double. */
            loss = valid ? log(sum) + ((double)max - (double)z[label]) : (double)NAN;
            hit = arg == label;
        }
    }
    if (lane == 0) {
        s_loss[warp] = loss;
        s_hits[warp] = hit;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double block_loss = 0.0;
        unsigned block_hits = 0;
        for (int w = 0; w < XENT_WARPS; w++) {
            block_loss += s_loss[w];
            block_hits += s_hits[w];
        }
        if (loss_sum)
            atomicAdd(loss_sum, block_loss);
        if (correct && block_hits)
            atomicAdd(correct, (unsigned long long)block_hits);
    }
}

int ops_cuda_softmax_xent(const float *logits, const int32_t *labels, float *dlogits, int B, int C,
                          float grad_scale, double *loss_sum, unsigned long long *correct,
                          cudaStream_t s)
{
    assert(B >= 0 && C >= 0);
    if (B == 0 || C == 0)
        return 0;
    unsigned blocks = (unsigned)((B + XENT_WARPS - 1) / XENT_WARPS);
    xent_kernel<<<blocks, XENT_WARPS * 32, 0, s>>>(logits, labels, dlogits, B, C, grad_scale,
                                                   loss_sum, correct);
    launchCheck();
    return 0;
}

/* ---- Optimizers ------------------------------------------------------ */

/* The optimizers take lr (and AdamW its bias corrections) as values, or,
 * with a clock, from per-step tables at clk->t. */
__global__ void sgd_kernel(float *w, float *v, const float *g, size_t n, float lr, float momentum,
                           float wd, int nesterov, const float *lr_t, const OpsCudaClock *clk)
{
    if (clk)
        lr = lr_t[clk->t];
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float wi = w[i], vi = v ? v[i] : 0.0f;
        rung_sgd_step(&wi, &vi, g[i], lr, momentum, wd, nesterov);
        w[i] = wi;
        if (v)
            v[i] = vi;
    }
}

int ops_cuda_sgd(float *w, float *v, const float *g, size_t n, float lr, float momentum, float wd,
                 bool nesterov, cudaStream_t s)
{
    assert(v != NULL || momentum == 0.0f);
    if (n == 0)
        return 0;
    sgd_kernel<<<ew_blocks(n), EW_THREADS, 0, s>>>(w, momentum != 0.0f ? v : NULL, g, n, lr,
                                                   momentum, wd, nesterov ? 1 : 0, NULL, NULL);
    launchCheck();
    return 0;
}

int ops_cuda_sgd_at(float *w, float *v, const float *g, size_t n, const float *lr,
                    const OpsCudaClock *clk, float momentum, float wd, bool nesterov,
                    cudaStream_t s)
{
    assert((v != NULL || momentum == 0.0f) && lr != NULL && clk != NULL);
    if (n == 0)
        return 0;
    sgd_kernel<<<ew_blocks(n), EW_THREADS, 0, s>>>(w, momentum != 0.0f ? v : NULL, g, n, 0.0f,
                                                   momentum, wd, nesterov ? 1 : 0, lr, clk);
    launchCheck();
    return 0;
}

__global__ void adamw_kernel(float *w, float *m, float *v, const float *g, size_t n, float lr,
                             float b1, float b2, float eps, float wd, float bc1, float bc2,
                             const float *lr_t, const float *bc1_t, const float *bc2_t,
                             const OpsCudaClock *clk)
{
    if (clk) {
        lr = lr_t[clk->t];
        bc1 = bc1_t[clk->t];
        bc2 = bc2_t[clk->t];
    }
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float wi = w[i], mi = m[i], vi = v[i];
        rung_adamw_step(&wi, &mi, &vi, g[i], lr, b1, b2, eps, wd, bc1, bc2);
        w[i] = wi;
        m[i] = mi;
        v[i] = vi;
    }
}

int ops_cuda_adamw(float *w, float *m, float *v, const float *g, size_t n, float lr, float b1,
                   float b2, float eps, float wd, int64_t t, cudaStream_t s)
{
    assert(t >= 1);
    if (n == 0)
        return 0;
    float bc1, bc2;
    ops_cuda_adamw_corrections(b1, b2, t, &bc1, &bc2);
    adamw_kernel<<<ew_blocks(n), EW_THREADS, 0, s>>>(w, m, v, g, n, lr, b1, b2, eps, wd, bc1, bc2,
                                                     NULL, NULL, NULL, NULL);
    launchCheck();
    return 0;
}

void ops_cuda_adamw_corrections(float b1, float b2, int64_t t, float *bc1, float *bc2)
{
    /* In double, as ops_adamw (and PyTorch) compute them. */
    *bc1 = (float)(1.0 - pow((double)b1, (double)t));
    *bc2 = (float)(1.0 - pow((double)b2, (double)t));
}

int ops_cuda_adamw_at(float *w, float *m, float *v, const float *g, size_t n, const float *lr,
                      const float *bc1, const float *bc2, const OpsCudaClock *clk, float b1,
                      float b2, float eps, float wd, cudaStream_t s)
{
    assert(lr != NULL && bc1 != NULL && bc2 != NULL && clk != NULL);
    if (n == 0)
        return 0;
    adamw_kernel<<<ew_blocks(n), EW_THREADS, 0, s>>>(w, m, v, g, n, 0.0f, b1, b2, eps, wd, 0.0f,
                                                     0.0f, lr, bc1, bc2, clk);
    launchCheck();
    return 0;
}

/* ---- The step clock and the data ------------------------------------- */

__global__ void clock_advance_kernel(OpsCudaClock *clk)
{
    clk->t++;
}

int ops_cuda_clock_advance(OpsCudaClock *clk, cudaStream_t s)
{
    clock_advance_kernel<<<1, 1, 0, s>>>(clk);
    launchCheck();
    return 0;
}

/* Block i (of a grid-stride loop over rows) copies one row: the byte codes
 * through the codebook in shared memory, or the floats. A position or
 * sample out of range gives label -1 (a NaN loss), not a fault. */
__global__ void gather_kernel(OpsCudaData d, const int64_t *order, int64_t first, int64_t stride,
                              const OpsCudaClock *clk, int64_t per_step, int m, float *X,
                              int32_t *Y)
{
    __shared__ float lut[OPS_CUDA_LUT_SIZE];
    if (d.codes)
        for (int i = threadIdx.x; i < OPS_CUDA_LUT_SIZE; i += blockDim.x)
            lut[i] = d.lut[i];
    __syncthreads();
    int64_t base = first + (clk ? clk->t * per_step : 0);
    for (int i = blockIdx.x; i < m; i += gridDim.x) {
        int64_t pos = base + (int64_t)i * stride;
        int64_t src = pos >= 0 && pos < d.n && order ? order[pos] : pos;
        float *x = X + (size_t)i * d.dim;
        bool ok = src >= 0 && src < d.n;
        if (!ok) {
            if (threadIdx.x == 0)
                Y[i] = -1;
            continue;
        }
        if (d.codes) {
            const uint8_t *c = d.codes + (size_t)src * d.dim;
            for (int j = threadIdx.x; j < d.dim; j += blockDim.x)
                x[j] = lut[c[j]];
        } else {
            const float *f = d.x + (size_t)src * d.dim;
            for (int j = threadIdx.x; j < d.dim; j += blockDim.x)
                x[j] = f[j];
        }
        if (threadIdx.x == 0)
            Y[i] = d.y[src];
    }
}

int ops_cuda_gather(const OpsCudaData *d, const int64_t *order, int64_t first, int64_t stride,
                    const OpsCudaClock *clk, int64_t per_step, int m, float *X, int32_t *Y,
                    cudaStream_t s)
{
    assert(m >= 0 && stride >= 1 && d->dim >= 1 && (d->codes == NULL || d->lut != NULL));
    if (m == 0)
        return 0;
    gather_kernel<<<ew_blocks((size_t)m * EW_THREADS), EW_THREADS, 0, s>>>(*d, order, first, stride,
                                                                           clk, per_step, m, X, Y);
    launchCheck();
    return 0;
}

/* ---- bf16 ------------------------------------------------------------ */

__global__ void to_bf16_kernel(const float *x, __nv_bfloat16 *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16_rn(x[i]);
}

int ops_cuda_to_bf16(const float *x, uint16_t *y, size_t n, cudaStream_t s)
{
    if (n == 0)
        return 0;
    /* uint16_t and __nv_bfloat16 are both 2 bytes, 2-byte aligned. */
    static_assert(sizeof(__nv_bfloat16) == sizeof(uint16_t), "bf16 is 16 bits");
    to_bf16_kernel<<<ew_blocks(n), EW_THREADS, 0, s>>>(x, reinterpret_cast<__nv_bfloat16 *>(y), n);
    launchCheck();
    return 0;
}
