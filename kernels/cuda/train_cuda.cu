/* The CUDA backend of rung-train (train.h): the MLP of train_cpu.c trained
 * data-parallel over the visible GPUs, one host thread per GPU, gradients
 * averaged with NCCL (docs/trainer.md, "Data-parallel training").
 *
 * Same recipe as the CPU backend, so that the two give the same numbers to
 * float tolerance: the same initial parameters (train_cpu.c's formula), the
 * same epoch order (data_epoch_order with the 1-based epoch) and shards
 * (data_shard), the same dropout masks (train.h: train_dropout_seed(seed,
 * layer) at index ((epoch-1) * n_train + position) * width + j, computed
 * from the row's position in the epoch's order, so the split over GPUs does
 * not change them), the same learning-rate schedule (train_lr_at), the same
 * optimizer arithmetic (ops_math.h), the same checkpoints (checkpoint.h, in
 * train_cpu.c's packed parameter order) and the same reports.
 *
 * Gradient averaging: rank r's loss gradient is scaled by k / n_step, where
 * n_step is the number of samples in the global step (the last one may be
 * short) and k the number of ranks, and ncclAllReduce(ncclAvg) divides the
 * sum by k: the result is sum over the global batch / n_step, the
 * global-batch mean, however the samples fell over the ranks (a rank with
 * no sample in a short last step contributes zeros). One rank skips NCCL:
 * its gradient already is that mean.
 *
 * A step on rank r (streams: compute, copy, comm):
 *   host      shard and gather batch t+1 into pinned buffer (t+1)%2
 *   copy      H2D of batch t+1, after compute has finished with that slot
 *   compute   forward and loss of batch t, then backward from the last
 *             layer; when a bucket of layers is done, an event lets ...
 *   comm      ... ncclAllReduce(ncclAvg) of that bucket while compute goes
 *             on with the earlier layers
 *   compute   waits for the last bucket, optimizer, bf16 copy of weights
 * The host never waits for a step; it waits only for a pinned buffer to
 * come free (two steps back), so it stays about two steps ahead. Every wait
 * polls, and gives up when another rank has failed: a rank that fails sets
 * a flag, and every other one aborts its NCCL communicator instead of
 * hanging in an all-reduce that will never complete.
 *
 * Ranks agree on every decision that changes the sequence of collectives
 * (stop after this step on SIGTERM; stop after this epoch) at a host
 * barrier whose last arrival samples the flags, so all ranks see the same
 * values at the same step.
 *
 * Several nodes (cfg->nodes; docs/trainer.md, "Multi-node training"): node
 * 0 made an ncclUniqueId before the rendezvous, which handed it to every
 * node; each process creates the communicators of its k GPUs with
 * ncclCommInitRank(nnodes * k, id, node * k + r) in one group, so that one
 * communicator spans every GPU of every node, and everything above that
 * depends on the rank count (shards, scale, validation rows, dropout rows)
 * uses the global rank and count. The host decisions stay per node, with
 * two additions: a batch of "auto" is the smallest that every node chose,
 * and the decision to stop after an epoch goes through the rendezvous. A
 * SIGTERM, or a peer node's failure (rdzv_check, polled while waiting),
 * aborts the communicators at once: node-local barriers cannot make nodes
 * agree on a step, and a collective some node never joins would hang.
 *
 * Memory: every device buffer of a rank lives in one allocation whose size
 * is computed before anything is allocated; "out of GPU memory" is reported
 * with that size, what the GPU has free, and the batch size, and batch_size
 * 0 picks the largest power of two that fits. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nccl.h>

#include "ops_cuda.h"

extern "C" {
#include "checkpoint.h"
#include "data.h"
#include "train.h"
}

#ifndef RUNG_CUDA_MIN_ARCH
#define RUNG_CUDA_MIN_ARCH 80 /* cuda.cmake passes the oldest architecture it built */
#endif

#define ncclCheck(call)                                                                            \
    do {                                                                                           \
        ncclResult_t res_ = (call);                                                                \
        if (res_ != ncclSuccess)                                                                   \
            return ops_cuda__fail(__FILE__, __LINE__, #call, ncclGetErrorString(res_));            \
    } while (0)

/* Gradient buckets close once they hold this much: NCCL reaches most of
 * its bus bandwidth from a few MiB, and each all-reduce call costs tens of
 * microseconds of latency, so smaller buckets would be latency-bound. */
#define TRAIN_CUDA_BUCKET_BYTES ((size_t)4 << 20)
/* Memory that is not in the arena but is needed after it: cuBLAS's
 * workspace (32 MiB per handle on Hopper) and the kernels' modules, loaded
 * lazily. NCCL's buffers are allocated before free memory is measured. */
#define TRAIN_CUDA_RESERVE_BYTES ((size_t)128 << 20)
/* Buffers in the arena start on 256-byte boundaries, and tensors in the
 * parameter vector on 64-float ones: aligned operands for every GEMM. */
#define TRAIN_CUDA_ALIGN ((size_t)256)
#define TRAIN_CUDA_PAD ((size_t)64)
/* The largest batch that "auto" tries: rows and widths stay ints (cuBLAS
 * dimensions) far from overflow. */
#define TRAIN_CUDA_AUTO_MAX ((int64_t)1 << 30)
/* How often a waiting rank looks at the other nodes' connections: a poll()
 * per peer, cheap; a failed node is noticed within this. */
#define TRAIN_CUDA_NODE_CHECK_S 0.01

#define NONE SIZE_MAX /* an arena buffer that this run does not need */

#define MIB(bytes) (((bytes) + ((size_t)1 << 20) - 1) >> 20) /* rounded up */

typedef struct Layer {
    int D, H;    /* inputs, outputs */
    size_t w, b; /* device offsets (floats) of W [D, H] and b [H] */
    size_t pw;   /* offset of W in the packed vector of train_cpu.c; b follows W there */
} Layer;

typedef struct Bucket {
    size_t off, len; /* a range of the gradient vector (floats): whole layers */
} Bucket;

/* An epoch's counters, on the device. */
typedef struct DevStats {
    double train_loss; /* sum over this rank's training samples */
    double val_loss;   /* sum over its validation samples */
    unsigned long long val_correct;
    unsigned long long pad;
    double reduced[4]; /* the three above as doubles, summed over ranks */
} DevStats;

/* Byte offsets of a rank's buffers in its arena, NONE when unused. */
typedef struct Arena {
    size_t params, grads, opt1, opt2;   /* n_dev floats each; opt1: momentum or m, opt2: v */
    size_t params_h;                    /* n_dev bf16: the GEMMs' copy of the weights */
    size_t xin[2], yin[2];              /* two input slots: rows x dim floats, rows labels */
    size_t act[TRAIN_MAX_LAYERS + 1];   /* layer outputs, rows x H (after ReLU and dropout) */
    size_t act_h[TRAIN_MAX_LAYERS + 1]; /* bf16 layer inputs, rows x D */
    size_t g[2], gh;                    /* gradient ping-pong, rows x max_h; its bf16 copy */
    size_t ws;                          /* db partial sums: OPS_CUDA_DB_SPLIT x max_h */
    size_t stats;                       /* DevStats */
    size_t total;                       /* bytes */
} Arena;

/* One run, shared by the rank threads: the plan is written by the main
 * thread before they start and only read after; the rest is under mu. */
typedef struct Shared {
    const TrainConfig *cfg;
    const Dataset *train, *val;
    TrainReportFn report;
    void *ctx;
    int k;                   /* ranks of this process = its GPUs */
    int K;                   /* ranks of the run: k times the nodes */
    int g0;                  /* global rank of this process's rank 0: node * k */
    const TrainNodes *nodes; /* NULL: one node */
    int L;                   /* layers: hidden + output */
    Layer layer[TRAIN_MAX_LAYERS + 1];
    int dim, C, max_h;      /* input width, classes, widest layer output */
    size_t n_packed, n_dev; /* parameters: as train_cpu.c packs them; with padding */
    int n_buckets;
    Bucket bucket[TRAIN_MAX_LAYERS + 1];
    int closes[TRAIN_MAX_LAYERS + 1]; /* bucket that layer l's backward completes, or -1 */
    bool adam, momentum, bf16;
    int64_t batch; /* global batch */
    int64_t rows;  /* rows a rank holds: ceil(min(batch, n) / k) */
    Arena arena;
    size_t need; /* arena + reserve, bytes */
    int64_t steps_per_epoch, total_steps, warmup_steps;
    int64_t first_epoch, step0;       /* where this run starts (resume) */
    float *init[3];                   /* packed start state: params, opt1, opt2 */
    ncclComm_t comm[TRAIN_MAX_RANKS]; /* made by the main thread, each owned by its rank */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived; /* at the barrier, this generation */
    unsigned long long generation;
    int snapshot; /* flags sampled by the barrier's last arrival */
    int failed;   /* atomic: a rank failed; why has the first reason */
    char why[512];
    bool stop;                     /* rank 0: no more epochs */
    bool halted;                   /* stopped by train_stop_requested ... */
    int64_t halt_epoch, halt_step; /* ... in this epoch, after this many steps */
} Shared;

#define SNAP_SIGNAL 1 /* train_stop_requested was set */
#define SNAP_STOP 2   /* rank 0 ended the run */

typedef struct Rank {
    Shared *sh;
    int r;             /* local rank = the GPU's index */
    int grank;         /* global rank: g0 + r */
    bool halted;       /* stopped by a signal at a step's barrier */
    double checked_at; /* multi-node: when the other nodes were last checked on */
    ncclComm_t comm;   /* owned; NULL with one rank */
    char *arena;       /* device, owned */
    float *params, *grads, *opt1, *opt2;
    uint16_t *params_h;
    float *xin[2];
    int32_t *yin[2];
    float *act[TRAIN_MAX_LAYERS + 1];
    uint16_t *act_h[TRAIN_MAX_LAYERS + 1];
    float *g[2], *ws;
    uint16_t *gh;
    DevStats *stats;
    cudaStream_t compute, copy, comm_s;
    cudaEvent_t copy_done[2];    /* slot's H2D finished: pinned buffer free, input ready */
    cudaEvent_t compute_done[2]; /* slot's input no longer read */
    cudaEvent_t bucket_ev[TRAIN_MAX_LAYERS + 1];
    cudaEvent_t comm_done, stats_ev, host_done, train_done;
    bool streams, events, blas_made;
    cublasHandle_t blas;
    float *hx[2]; /* pinned input slots */
    int32_t *hy[2];
    double *hstats; /* pinned: the reduced sums */
    int64_t *perm, *idx;
    int64_t m[2], start[2], len[2]; /* the batch in each slot: rows here, position, global size */
    int next_slot;
    int64_t step;   /* global steps done */
    float *save[3]; /* rank 0: packed host copies for checkpoints */
} Rank;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* ---- Devices ------------------------------------------------------------ */

int train_cuda_devices(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        /* cudaErrorInsufficientDriver without a driver, cudaErrorNoDevice
         * without a GPU: zero GPUs, and a clean error state. */
        (void)cudaGetLastError();
        return 0;
    }
    /* Devices 0..usable-1, stopping at the first that cannot run the
     * kernels this build has (rank r uses device r). */
    int usable = 0;
    while (usable < n && usable < TRAIN_MAX_RANKS) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, usable) !=
                cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, usable) !=
                cudaSuccess) {
            (void)cudaGetLastError();
            break;
        }
        if (major * 10 + minor < RUNG_CUDA_MIN_ARCH)
            break;
        usable++;
    }
    return usable;
}

/* ---- The plan ----------------------------------------------------------- */

/* Layers, the parameter vector (padded on the device, packed as train_cpu.c
 * and checkpoints have it) and the gradient buckets, last layer first. */
static void plan_model(Shared *sh)
{
    const TrainConfig *cfg = sh->cfg;
    sh->L = cfg->n_hidden + 1;
    sh->dim = sh->train->dim;
    sh->C = sh->train->n_classes;
    size_t off = 0, poff = 0;
    int in = sh->dim;
    sh->max_h = 0;
    for (int l = 0; l < sh->L; l++) {
        Layer *ly = &sh->layer[l];
        ly->D = in;
        ly->H = l < cfg->n_hidden ? cfg->hidden[l] : sh->C;
        ly->w = off;
        ly->b = round_up(off + (size_t)ly->D * (size_t)ly->H, TRAIN_CUDA_PAD);
        off = round_up(ly->b + (size_t)ly->H, TRAIN_CUDA_PAD);
        ly->pw = poff;
        poff += (size_t)ly->D * (size_t)ly->H + (size_t)ly->H;
        if (ly->H > sh->max_h)
            sh->max_h = ly->H;
        in = ly->H;
    }
    sh->n_dev = off;
    sh->n_packed = poff;
    /* Buckets: layers L-1, L-2, ... join the open bucket until it holds
     * TRAIN_CUDA_BUCKET_BYTES; layer 0 closes the last one. Layer l's
     * parameters are [w_l, w_{l+1}), so a bucket is one contiguous range. */
    sh->n_buckets = 0;
    size_t end = sh->n_dev;
    for (int l = sh->L - 1; l >= 0; l--) {
        sh->closes[l] = -1;
        size_t begin = sh->layer[l].w;
        if ((end - begin) * sizeof(float) >= TRAIN_CUDA_BUCKET_BYTES || l == 0) {
            sh->bucket[sh->n_buckets] = (Bucket){begin, end - begin};
            sh->closes[l] = sh->n_buckets++;
            end = begin;
        }
    }
    sh->adam = cfg->optimizer == TRAIN_ADAMW;
    sh->momentum = cfg->optimizer == TRAIN_SGD && cfg->momentum != 0.0f;
    sh->bf16 = cfg->precision == TRAIN_BF16;
}

static size_t place(size_t *at, size_t bytes)
{
    size_t off = *at;
    *at += round_up(bytes, TRAIN_CUDA_ALIGN);
    return off;
}

/* The arena of a rank holding `rows` rows; returns its size in bytes. */
static size_t plan_arena(const Shared *sh, int64_t rows, Arena *a)
{
    size_t at = 0, n = sh->n_dev, R = (size_t)rows, F = sizeof(float), H2 = sizeof(uint16_t);
    a->params = place(&at, n * F);
    a->grads = place(&at, n * F);
    a->opt1 = sh->adam || sh->momentum ? place(&at, n * F) : NONE;
    a->opt2 = sh->adam ? place(&at, n * F) : NONE;
    a->params_h = sh->bf16 ? place(&at, n * H2) : NONE;
    for (int s = 0; s < 2; s++) {
        a->xin[s] = place(&at, R * (size_t)sh->dim * F);
        a->yin[s] = place(&at, R * sizeof(int32_t));
    }
    for (int l = 0; l < sh->L; l++) {
        a->act[l] = place(&at, R * (size_t)sh->layer[l].H * F);
        a->act_h[l] = sh->bf16 ? place(&at, R * (size_t)sh->layer[l].D * H2) : NONE;
    }
    for (int s = 0; s < 2; s++)
        a->g[s] = place(&at, R * (size_t)sh->max_h * F);
    a->gh = sh->bf16 ? place(&at, R * (size_t)sh->max_h * H2) : NONE;
    a->ws = place(&at, (size_t)OPS_CUDA_DB_SPLIT * (size_t)sh->max_h * F);
    a->stats = place(&at, sizeof(DevStats));
    a->total = at;
    return at;
}

/* The same start as train_cpu.c (train_init_layer), in the packed layout. */
static void init_params(const Shared *sh, float *params)
{
    for (int l = 0; l < sh->L; l++)
        train_init_layer(sh->cfg->seed, sh->layer[l].D, sh->layer[l].H, sh->layer[l].pw, params);
}

/* ---- Coordination ------------------------------------------------------- */

static bool shared_failed(Shared *sh)
{
    return __atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE) != 0;
}

/* Records the first failure of the run and wakes every waiting rank. */
static void shared_fail(Shared *sh, const char *why)
{
    pthread_mutex_lock(&sh->mu);
    if (!sh->failed) {
        snprintf(sh->why, sizeof sh->why, "%s", why);
        __atomic_store_n(&sh->failed, 1, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

/* A barrier that a failure breaks: 0, with the flags sampled by the last
 * rank to arrive (the same for every rank: none can sample the next
 * generation before all have left this one), or -1 once any rank failed. */
static int barrier(Shared *sh, int *snap)
{
    pthread_mutex_lock(&sh->mu);
    unsigned long long gen = sh->generation;
    if (++sh->arrived == sh->k) {
        sh->arrived = 0;
        sh->generation++;
        sh->snapshot = (train_stop_requested ? SNAP_SIGNAL : 0) | (sh->stop ? SNAP_STOP : 0);
        pthread_cond_broadcast(&sh->cv);
    } else {
        while (sh->generation == gen && !sh->failed)
            pthread_cond_wait(&sh->cv, &sh->mu);
    }
    int failed = sh->failed, s = sh->snapshot;
    pthread_mutex_unlock(&sh->mu);
    if (failed)
        return ops_cuda__failf("stopped: another GPU's rank failed");
    if (snap)
        *snap = s;
    return 0;
}

/* Multi-node, while a rank waits: a SIGTERM stops it now (the other nodes
 * may stop at another step: a collective could wait forever), and so does
 * a peer node's failure or exit, which the rendezvous' connections show
 * (checked every TRAIN_CUDA_NODE_CHECK_S). */
static int wait_nodes(Rank *R)
{
    if (train_stop_requested)
        return ops_cuda__failf("stopped by a signal");
    double t = now_s();
    if (t - R->checked_at < TRAIN_CUDA_NODE_CHECK_S)
        return 0;
    R->checked_at = t;
    char why[512];
    if (rdzv_check(R->sh->nodes->rdzv, why, sizeof why) != 0)
        return ops_cuda__failf("%s", why);
    return 0;
}

/* Waits for an event without blocking in the driver: gives up when another
 * rank failed (its peers' collectives would never complete), NCCL reports
 * an asynchronous error, or (several nodes) wait_nodes says so. */
static int wait_event(Rank *R, cudaEvent_t ev)
{
    for (unsigned spins = 0;; spins++) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return ops_cuda__fail(__FILE__, __LINE__, "cudaEventQuery", cudaGetErrorString(e));
        if (shared_failed(R->sh))
            return ops_cuda__failf("stopped: another GPU's rank failed");
        if (R->sh->nodes != NULL && wait_nodes(R) != 0)
            return -1;
        if (R->comm) {
            ncclResult_t st = ncclSuccess;
            ncclCheck(ncclCommGetAsyncError(R->comm, &st));
            if (st != ncclSuccess && st != ncclInProgress)
                return ops_cuda__failf("NCCL on GPU %d: %s", R->r, ncclGetErrorString(st));
        }
        if (spins < 1000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50 * 1000}; /* 50 us: a step takes milliseconds */
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- Rank setup and teardown ---------------------------------------------- */

static int oom(const Shared *sh, int device, size_t free_bytes)
{
    return ops_cuda__failf("out of GPU memory at batch_size %lld: needs ~%zu MiB, %zu MiB free "
                           "(GPU %d; %lld rows per GPU, %zu parameters%s)",
                           (long long)sh->batch, MIB(sh->need), free_bytes >> 20, device,
                           (long long)sh->rows, sh->n_packed, sh->bf16 ? ", bf16" : "");
}

/* Host <-> device copies of a parameter-shaped vector between the packed
 * layout and the padded one (synchronous: setup and checkpoints only). */
static int copy_tensors(const Shared *sh, float *host, float *dev, bool to_device)
{
    for (int l = 0; l < sh->L; l++) {
        const Layer *ly = &sh->layer[l];
        size_t nw = (size_t)ly->D * (size_t)ly->H, nb = (size_t)ly->H;
        if (to_device) {
            cudaCheck(
                cudaMemcpy(dev + ly->w, host + ly->pw, nw * sizeof(float), cudaMemcpyHostToDevice));
            cudaCheck(cudaMemcpy(dev + ly->b, host + ly->pw + nw, nb * sizeof(float),
                                 cudaMemcpyHostToDevice));
        } else {
            cudaCheck(
                cudaMemcpy(host + ly->pw, dev + ly->w, nw * sizeof(float), cudaMemcpyDeviceToHost));
            cudaCheck(cudaMemcpy(host + ly->pw + nw, dev + ly->b, nb * sizeof(float),
                                 cudaMemcpyDeviceToHost));
        }
    }
    return 0;
}

static void *carve(Rank *R, size_t off)
{
    return off == NONE ? NULL : R->arena + off;
}

static int rank_setup(Rank *R)
{
    Shared *sh = R->sh;
    const Arena *a = &sh->arena;
    cudaCheck(cudaSetDevice(R->r));
    cudaError_t e = cudaMalloc((void **)&R->arena, a->total);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        size_t free_bytes = 0, total = 0;
        if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
            (void)cudaGetLastError();
        R->arena = NULL;
        return oom(sh, R->r, free_bytes);
    }
    cudaCheck(e);
    R->params = (float *)carve(R, a->params);
    R->grads = (float *)carve(R, a->grads);
    R->opt1 = (float *)carve(R, a->opt1);
    R->opt2 = (float *)carve(R, a->opt2);
    R->params_h = (uint16_t *)carve(R, a->params_h);
    for (int s = 0; s < 2; s++) {
        R->xin[s] = (float *)carve(R, a->xin[s]);
        R->yin[s] = (int32_t *)carve(R, a->yin[s]);
        R->g[s] = (float *)carve(R, a->g[s]);
    }
    for (int l = 0; l < sh->L; l++) {
        R->act[l] = (float *)carve(R, a->act[l]);
        R->act_h[l] = (uint16_t *)carve(R, a->act_h[l]);
    }
    R->gh = (uint16_t *)carve(R, a->gh);
    R->ws = (float *)carve(R, a->ws);
    R->stats = (DevStats *)carve(R, a->stats);

    R->streams = true; /* rank_free skips the ones not made (NULL) */
    cudaCheck(cudaStreamCreateWithFlags(&R->compute, cudaStreamNonBlocking));
    cudaCheck(cudaStreamCreateWithFlags(&R->copy, cudaStreamNonBlocking));
    cudaCheck(cudaStreamCreateWithFlags(&R->comm_s, cudaStreamNonBlocking));
    cudaEvent_t *evs[] = {&R->copy_done[0],    &R->copy_done[1], &R->compute_done[0],
                          &R->compute_done[1], &R->comm_done,    &R->stats_ev,
                          &R->host_done,       &R->train_done};
    R->events = true; /* likewise */
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        cudaCheck(cudaEventCreateWithFlags(evs[i], cudaEventDisableTiming));
    for (int b = 0; b < sh->n_buckets; b++)
        cudaCheck(cudaEventCreateWithFlags(&R->bucket_ev[b], cudaEventDisableTiming));
    cublasCheck(cublasCreate(&R->blas));
    R->blas_made = true;
    cublasCheck(cublasSetStream(R->blas, R->compute));

    /* Pinned input slots: the only memory the copy engine reads
     * asynchronously. */
    size_t rows = (size_t)sh->rows;
    for (int s = 0; s < 2; s++) {
        cudaCheck(cudaHostAlloc((void **)&R->hx[s], rows * (size_t)sh->dim * sizeof(float),
                                cudaHostAllocDefault));
        cudaCheck(cudaHostAlloc((void **)&R->hy[s], rows * sizeof(int32_t), cudaHostAllocDefault));
    }
    cudaCheck(cudaHostAlloc((void **)&R->hstats, 4 * sizeof(double), cudaHostAllocDefault));
    R->perm = (int64_t *)malloc((size_t)sh->train->n * sizeof(int64_t));
    R->idx = (int64_t *)malloc(rows * sizeof(int64_t));
    if (R->perm == NULL || R->idx == NULL)
        return ops_cuda__failf("out of host memory for the sample order (%lld samples)",
                               (long long)sh->train->n);
    if (R->r == 0 && sh->g0 == 0 && sh->cfg->checkpoint_dir != NULL) {
        for (int i = 0; i < 3; i++)
            if ((R->save[i] = (float *)calloc(sh->n_packed, sizeof(float))) == NULL)
                return ops_cuda__failf("out of host memory for checkpoints (%zu parameters)",
                                       sh->n_packed);
    }

    /* The start state: zeros everywhere (padding included, which then stays
     * zero: its gradient is zero), then the packed vectors. The legacy
     * stream's memset and copies finish before the non-blocking streams run. */
    cudaCheck(cudaMemset(R->arena, 0, a->total));
    if (copy_tensors(sh, sh->init[0], R->params, true) != 0)
        return -1;
    if (R->opt1 && copy_tensors(sh, sh->init[1], R->opt1, true) != 0)
        return -1;
    if (R->opt2 && copy_tensors(sh, sh->init[2], R->opt2, true) != 0)
        return -1;
    cudaCheck(cudaDeviceSynchronize());
    if (sh->bf16 && ops_cuda_to_bf16(R->params, R->params_h, sh->n_dev, R->compute) != 0)
        return -1;
    R->step = sh->step0;
    return 0;
}

/* Frees what rank_setup made, whatever it got to; errors are ignored. After
 * a failure the communicator is aborted, which ends collectives that wait
 * for peers, before anything waits for the GPU. */
static void rank_free(Rank *R, bool failed)
{
    Shared *sh = R->sh;
    (void)cudaSetDevice(R->r);
    if (R->comm) {
        if (failed)
            (void)ncclCommAbort(R->comm);
        else
            (void)ncclCommDestroy(R->comm);
        R->comm = NULL;
    }
    cudaStream_t streams[] = {R->compute, R->copy, R->comm_s};
    for (int i = 0; R->streams && i < 3; i++)
        if (streams[i])
            (void)cudaStreamSynchronize(streams[i]);
    if (R->blas_made)
        (void)cublasDestroy(R->blas);
    if (R->events) {
        cudaEvent_t evs[] = {R->copy_done[0],    R->copy_done[1], R->compute_done[0],
                             R->compute_done[1], R->comm_done,    R->stats_ev,
                             R->host_done,       R->train_done};
        for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
            if (evs[i])
                (void)cudaEventDestroy(evs[i]);
        for (int b = 0; b < sh->n_buckets; b++)
            if (R->bucket_ev[b])
                (void)cudaEventDestroy(R->bucket_ev[b]);
    }
    for (int i = 0; R->streams && i < 3; i++)
        if (streams[i])
            (void)cudaStreamDestroy(streams[i]);
    for (int s = 0; s < 2; s++) {
        if (R->hx[s])
            (void)cudaFreeHost(R->hx[s]);
        if (R->hy[s])
            (void)cudaFreeHost(R->hy[s]);
    }
    if (R->hstats)
        (void)cudaFreeHost(R->hstats);
    if (R->arena)
        (void)cudaFree(R->arena);
    (void)cudaGetLastError();
    free(R->perm);
    free(R->idx);
    for (int i = 0; i < 3; i++)
        free(R->save[i]);
}

/* ---- Batches ------------------------------------------------------------ */

/* Gathers rows idx[0..m) of d into the next pinned slot and queues their
 * copy to the device; returns the slot through *slot. start and len: the
 * batch's position in the epoch's order and its global size. */
static int load_batch(Rank *R, const Dataset *d, int64_t m, int64_t start, int64_t len, int *slot)
{
    Shared *sh = R->sh;
    int s = R->next_slot;
    R->next_slot ^= 1;
    /* The slot's previous copy (two batches back) is done: its pinned
     * buffer can be overwritten. */
    if (wait_event(R, R->copy_done[s]) != 0)
        return -1;
    data_gather(d, R->idx, m, R->hx[s], R->hy[s]);
    R->m[s] = m;
    R->start[s] = start;
    R->len[s] = len;
    if (m > 0) {
        /* ... and compute no longer reads the slot's device buffers. */
        cudaCheck(cudaStreamWaitEvent(R->copy, R->compute_done[s], 0));
        cudaCheck(cudaMemcpyAsync(R->xin[s], R->hx[s], (size_t)m * (size_t)sh->dim * sizeof(float),
                                  cudaMemcpyHostToDevice, R->copy));
        cudaCheck(cudaMemcpyAsync(R->yin[s], R->hy[s], (size_t)m * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, R->copy));
    }
    cudaCheck(cudaEventRecord(R->copy_done[s], R->copy));
    *slot = s;
    return 0;
}

/* One pass over batches: an epoch of training steps, or this rank's share
 * of the validation set (rows [n*r/k, n*(r+1)/k), as train_cpu.c). */
typedef struct Pass {
    bool training;
    int64_t epoch; /* 1-based */
    int64_t batches;
    int64_t lo, hi; /* validation rows of this rank */
} Pass;

static int load_pass_batch(Rank *R, const Pass *p, int64_t t, int *slot)
{
    Shared *sh = R->sh;
    if (p->training) {
        int64_t n = sh->train->n, start = t * sh->batch;
        int64_t len = n - start < sh->batch ? n - start : sh->batch;
        int64_t m = data_shard(R->perm, n, start, len, R->grank, sh->K, R->idx);
        return load_batch(R, sh->train, m, start, len, slot);
    }
    int64_t s0 = p->lo + t * sh->rows;
    int64_t m = p->hi - s0 < sh->rows ? p->hi - s0 : sh->rows;
    for (int64_t i = 0; i < m; i++)
        R->idx[i] = s0 + i;
    return load_batch(R, sh->val, m, s0, m, slot);
}

/* ---- Forward, backward, step ---------------------------------------------- */

static OpsCudaBf16 *bf16_operands(Rank *R, int l, OpsCudaBf16 *lp)
{
    if (!R->sh->bf16)
        return NULL;
    lp->X = R->act_h[l];
    lp->W = R->params_h + R->sh->layer[l].w;
    lp->dY = R->gh;
    return lp;
}

/* Forward of the m rows in slot s; the logits land in act[L-1]. In
 * training, dropout after each hidden layer: row i of this rank is global
 * row first_row + i * k (train.h's mask index, in units of rows). */
static int forward(Rank *R, int s, int m, bool training, uint64_t first_row)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    for (int l = 0; l < sh->L; l++) {
        const Layer *ly = &sh->layer[l];
        bool hidden = l < sh->L - 1;
        const float *X = l == 0 ? R->xin[s] : R->act[l - 1];
        OpsCudaBf16 lp;
        OpsCudaBf16 *plp = bf16_operands(R, l, &lp);
        if (plp && ops_cuda_to_bf16(X, R->act_h[l], (size_t)m * (size_t)ly->D, R->compute) != 0)
            return -1;
        if (ops_cuda_linear_fwd(R->blas, R->compute, X, R->params + ly->w, R->params + ly->b,
                                R->act[l], m, ly->D, ly->H, hidden, plp) != 0)
            return -1;
        if (hidden && training && cfg->dropout > 0.0f &&
            ops_cuda_dropout_rows_fwd(R->act[l], m, ly->H, cfg->dropout,
                                      train_dropout_seed(cfg->seed, l), first_row, (uint64_t)sh->K,
                                      R->compute) != 0)
            return -1;
    }
    return 0;
}

/* All-reduces bucket b once compute has written it, on the comm stream. */
static int reduce_bucket(Rank *R, int b)
{
    Shared *sh = R->sh;
    if (sh->K == 1)
        return 0; /* one rank: its gradient is the global-batch mean already */
    const Bucket *bk = &sh->bucket[b];
    cudaCheck(cudaEventRecord(R->bucket_ev[b], R->compute));
    cudaCheck(cudaStreamWaitEvent(R->comm_s, R->bucket_ev[b], 0));
    ncclCheck(ncclAllReduce(R->grads + bk->off, R->grads + bk->off, bk->len, ncclFloat, ncclAvg,
                            R->comm, R->comm_s));
    return 0;
}

/* Backward from dlogits in g[0], last layer first; each bucket is
 * all-reduced as soon as its layers are done. */
static int backward(Rank *R, int s, int m, uint64_t first_row)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    int cur = 0;
    for (int l = sh->L - 1; l >= 0; l--) {
        const Layer *ly = &sh->layer[l];
        bool hidden = l < sh->L - 1;
        float *dY = R->g[cur];
        if (hidden && cfg->dropout > 0.0f &&
            ops_cuda_dropout_rows_bwd(dY, m, ly->H, cfg->dropout, train_dropout_seed(cfg->seed, l),
                                      first_row, (uint64_t)sh->K, R->compute) != 0)
            return -1;
        const float *X = l == 0 ? R->xin[s] : R->act[l - 1];
        float *dX = l > 0 ? R->g[cur ^ 1] : NULL;
        OpsCudaBf16 lp;
        if (ops_cuda_linear_bwd(R->blas, R->compute, X, R->params + ly->w, R->act[l], dY, dX,
                                R->grads + ly->w, R->grads + ly->b, R->ws, m, ly->D, ly->H, hidden,
                                bf16_operands(R, l, &lp)) != 0)
            return -1;
        cur ^= 1;
        if (sh->closes[l] >= 0 && reduce_bucket(R, sh->closes[l]) != 0)
            return -1;
    }
    return 0;
}

/* One training step on the batch in slot s. */
static int train_step(Rank *R, int s, int64_t epoch)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    cudaStream_t cs = R->compute;
    int m = (int)R->m[s];
    cudaCheck(cudaStreamWaitEvent(cs, R->copy_done[s], 0));
    uint64_t first_row = (uint64_t)(epoch - 1) * (uint64_t)sh->train->n +
                         (uint64_t)(R->start[s] + R->grank);
    if (m > 0) {
        if (forward(R, s, m, true, first_row) != 0)
            return -1;
        /* K / n_step, then ncclAvg's 1/K: the global-batch mean. */
        float scale = (float)sh->K / (float)R->len[s];
        if (ops_cuda_softmax_xent(R->act[sh->L - 1], R->yin[s], R->g[0], m, sh->C, scale,
                                  &R->stats->train_loss, NULL, cs) != 0)
            return -1;
        if (backward(R, s, m, first_row) != 0)
            return -1;
    } else {
        /* No sample here in a short last step: zeros, and the same
         * collectives as every other rank. */
        cudaCheck(cudaMemsetAsync(R->grads, 0, sh->n_dev * sizeof(float), cs));
        for (int b = 0; b < sh->n_buckets; b++)
            if (reduce_bucket(R, b) != 0)
                return -1;
    }
    cudaCheck(cudaEventRecord(R->compute_done[s], cs));
    if (sh->K > 1) {
        /* The optimizer waits for the last bucket. */
        cudaCheck(cudaEventRecord(R->comm_done, R->comm_s));
        cudaCheck(cudaStreamWaitEvent(cs, R->comm_done, 0));
    }
    float lr = (float)train_lr_at(cfg->lr, R->step, sh->warmup_steps, sh->total_steps);
    if (sh->adam) {
        if (ops_cuda_adamw(R->params, R->opt1, R->opt2, R->grads, sh->n_dev, lr, cfg->beta1,
                           cfg->beta2, cfg->eps, cfg->weight_decay, R->step + 1, cs) != 0)
            return -1;
    } else if (ops_cuda_sgd(R->params, R->opt1, R->grads, sh->n_dev, lr, cfg->momentum,
                            cfg->weight_decay, cfg->nesterov, cs) != 0) {
        return -1;
    }
    if (sh->bf16 && ops_cuda_to_bf16(R->params, R->params_h, sh->n_dev, cs) != 0)
        return -1;
    R->step++;
    return 0;
}

/* Validation of the batch in slot s: loss and hits into the counters. */
static int eval_batch(Rank *R, int s)
{
    Shared *sh = R->sh;
    int m = (int)R->m[s];
    cudaCheck(cudaStreamWaitEvent(R->compute, R->copy_done[s], 0));
    if (forward(R, s, m, false, 0) != 0)
        return -1;
    if (ops_cuda_softmax_xent(R->act[sh->L - 1], R->yin[s], NULL, m, sh->C, 0.0f,
                              &R->stats->val_loss, &R->stats->val_correct, R->compute) != 0)
        return -1;
    cudaCheck(cudaEventRecord(R->compute_done[s], R->compute));
    return 0;
}

/* Runs a pass with batch t+1 loading while batch t computes. In training,
 * the ranks agree before each step whether it is the last (SIGTERM). */
static int run_pass(Rank *R, const Pass *p, bool *halted)
{
    if (p->batches == 0)
        return 0;
    int cur = 0, next = 0;
    if (load_pass_batch(R, p, 0, &cur) != 0)
        return -1;
    for (int64_t t = 0; t < p->batches; t++) {
        if (t + 1 < p->batches && load_pass_batch(R, p, t + 1, &next) != 0)
            return -1;
        if (p->training) {
            int snap = 0;
            if (barrier(R->sh, &snap) != 0 || train_step(R, cur, p->epoch) != 0)
                return -1;
            if (snap & SNAP_SIGNAL) {
                *halted = true;
                return 0;
            }
        } else if (eval_batch(R, cur) != 0) {
            return -1;
        }
        cur = next;
    }
    return 0;
}

/* ---- Epochs ------------------------------------------------------------- */

__global__ void pack_stats_kernel(DevStats *st)
{
    st->reduced[0] = st->train_loss;
    st->reduced[1] = st->val_loss;
    st->reduced[2] = (double)st->val_correct;
}

/* The epoch's sums over all ranks into R->hstats: training loss,
 * validation loss, validation hits. */
static int epoch_sums(Rank *R)
{
    Shared *sh = R->sh;
    pack_stats_kernel<<<1, 1, 0, R->compute>>>(R->stats);
    cudaCheck(cudaGetLastError());
    cudaStream_t out = R->compute;
    if (sh->K > 1) {
        cudaCheck(cudaEventRecord(R->stats_ev, R->compute));
        cudaCheck(cudaStreamWaitEvent(R->comm_s, R->stats_ev, 0));
        ncclCheck(ncclAllReduce(R->stats->reduced, R->stats->reduced, 3, ncclDouble, ncclSum,
                                R->comm, R->comm_s));
        out = R->comm_s;
    }
    cudaCheck(cudaMemcpyAsync(R->hstats, R->stats->reduced, 3 * sizeof(double),
                              cudaMemcpyDeviceToHost, out));
    cudaCheck(cudaEventRecord(R->host_done, out));
    return wait_event(R, R->host_done);
}

/* Rank 0 after an epoch, as train_cpu.c: checkpoint and report (node 0),
 * and whether the run goes on (into sh->stop, which the next barrier hands
 * out; with several nodes, agreed between them). */
static int end_epoch(Rank *R, int64_t epoch, double epoch_s)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    int64_t n = sh->train->n, nv = sh->val ? sh->val->n : 0;
    TrainEpoch e;
    memset(&e, 0, sizeof e);
    e.epoch = epoch;
    e.train_loss = R->hstats[0] / (double)n;
    e.val_loss = nv ? R->hstats[1] / (double)nv : NAN;
    e.val_acc = nv ? R->hstats[2] / (double)nv : NAN;
    e.epoch_s = epoch_s;
    e.samples_per_s = (double)n / epoch_s;
    bool node0 = sh->g0 == 0;
    if (node0 && cfg->checkpoint_dir != NULL) {
        /* The GPU is idle: epoch_sums waited for everything before it. */
        if (copy_tensors(sh, R->save[0], R->params, false) != 0 ||
            (R->opt1 && copy_tensors(sh, R->save[1], R->opt1, false) != 0) ||
            (R->opt2 && copy_tensors(sh, R->save[2], R->opt2, false) != 0))
            return -1;
        char why[512];
        if (checkpoint_save(cfg->checkpoint_dir, epoch, R->save[0], R->save[1], R->save[2],
                            sh->n_packed, R->step, why, sizeof why) != 0)
            return ops_cuda__failf("%s", why);
    }
    bool stop = (node0 && sh->report(&e, sh->ctx) != 0) || epoch >= cfg->epochs;
    bool halted = false;
    if (sh->nodes != NULL) {
        /* Every node stops when any does; when any was asked to by a
         * signal, every node ends as stopped by a signal, so that none
         * reports a finished run that was cut short (train_cpu.c alike). */
        char why[512];
        int64_t code = train_stop_requested ? 2 : stop ? 1 : 0;
        if (rdzv_allreduce(sh->nodes->rdzv, &code, 1, RDZV_MAX_I64, why, sizeof why) != 0)
            return ops_cuda__failf("%s", why);
        stop = code != 0;
        halted = code == 2;
    }
    pthread_mutex_lock(&sh->mu);
    sh->stop = stop;
    if (halted) {
        sh->halted = true;
        sh->halt_epoch = epoch;
        sh->halt_step = R->step;
    }
    pthread_mutex_unlock(&sh->mu);
    return 0;
}

static int rank_train(Rank *R)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    int64_t n = sh->train->n, nv = sh->val ? sh->val->n : 0;
    Pass vp;
    memset(&vp, 0, sizeof vp);
    vp.lo = nv * R->grank / sh->K;
    vp.hi = nv * (R->grank + 1) / sh->K;
    vp.batches = (vp.hi - vp.lo + sh->rows - 1) / sh->rows;
    for (int64_t epoch = sh->first_epoch; epoch <= cfg->epochs; epoch++) {
        data_epoch_order(n, cfg->seed, epoch, R->perm);
        cudaCheck(cudaMemsetAsync(R->stats, 0, sizeof(DevStats), R->compute));
        double t0 = now_s();
        Pass tp;
        memset(&tp, 0, sizeof tp);
        tp.training = true;
        tp.epoch = epoch;
        tp.batches = sh->steps_per_epoch;
        bool halted = false;
        if (run_pass(R, &tp, &halted) != 0)
            return -1;
        cudaCheck(cudaEventRecord(R->train_done, R->compute));
        if ((R->r == 0 || halted) && wait_event(R, R->train_done) != 0)
            return -1;
        double t1 = now_s();
        if (halted) {
            R->halted = true;
            if (R->r == 0) {
                pthread_mutex_lock(&sh->mu);
                sh->halted = true;
                sh->halt_epoch = epoch;
                sh->halt_step = R->step;
                pthread_mutex_unlock(&sh->mu);
            }
            return 0;
        }
        vp.epoch = epoch;
        if (run_pass(R, &vp, NULL) != 0 || epoch_sums(R) != 0)
            return -1;
        if (R->r == 0 && end_epoch(R, epoch, t1 - t0) != 0)
            return -1;
        int snap = 0;
        if (barrier(sh, &snap) != 0)
            return -1;
        if (snap & SNAP_STOP)
            break;
    }
    return 0;
}

static void *rank_main(void *arg)
{
    Rank *R = (Rank *)arg;
    int rc = rank_setup(R);
    if (rc == 0)
        rc = barrier(R->sh, NULL); /* every rank is set up before any collective */
    if (rc == 0)
        rc = rank_train(R);
    if (rc != 0)
        shared_fail(R->sh, ops_cuda_error());
    /* Across nodes, a halted rank aborts too: its peers elsewhere may be
     * in a collective it will not join, which destroying could wait for. */
    rank_free(R, rc != 0 || (R->halted && R->sh->nodes != NULL));
    return NULL;
}

/* ---- The run ------------------------------------------------------------ */

static int check_config(const TrainConfig *cfg, const Dataset *train, const Dataset *val, char *why,
                        size_t size)
{
    if (train == NULL || train->n < 1 || train->dim < 1 || train->n_classes < 2) {
        snprintf(why, size, "train_cuda: no training data");
        return -1;
    }
    if (val != NULL && val->n > 0 && val->dim != train->dim) {
        snprintf(why, size, "train_cuda: validation rows have %d features, training rows %d",
                 val->dim, train->dim);
        return -1;
    }
    if (cfg->n_hidden < 0 || cfg->n_hidden > TRAIN_MAX_LAYERS) {
        snprintf(why, size, "train_cuda: %d hidden layers (at most %d)", cfg->n_hidden,
                 TRAIN_MAX_LAYERS);
        return -1;
    }
    for (int l = 0; l < cfg->n_hidden; l++) {
        if (cfg->hidden[l] < 1 || cfg->hidden[l] > TRAIN_MAX_WIDTH) {
            snprintf(why, size, "train_cuda: hidden layer %d has %d units (1 to %d)", l,
                     cfg->hidden[l], TRAIN_MAX_WIDTH);
            return -1;
        }
    }
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f) || cfg->batch_size < 0 || cfg->epochs < 0) {
        snprintf(why, size,
                 "train_cuda: bad configuration (dropout %g, batch_size %lld, "
                 "epochs %lld)",
                 (double)cfg->dropout, (long long)cfg->batch_size, (long long)cfg->epochs);
        return -1;
    }
    return 0;
}

/* The batch: want if it fits every GPU, else an error with numbers; want
 * 0: the largest power of two (at most the training set) that fits. */
static int choose_batch(Shared *sh, int64_t want, size_t free_min, int dev_min, char *why,
                        size_t size)
{
    int64_t n = sh->train->n, k = sh->K;
    int64_t b = want;
    if (want == 0) {
        int64_t cap = n < TRAIN_CUDA_AUTO_MAX ? n : TRAIN_CUDA_AUTO_MAX;
        for (b = 1; b * 2 <= cap; b *= 2)
            ;
    }
    for (;;) {
        int64_t eff = b < n ? b : n;
        sh->batch = b;
        sh->rows = (eff + k - 1) / k;
        sh->need = plan_arena(sh, sh->rows, &sh->arena) + TRAIN_CUDA_RESERVE_BYTES;
        if (sh->need <= free_min)
            return 0;
        if (want != 0 || b == 1)
            break;
        b /= 2;
    }
    snprintf(why, size,
             "out of GPU memory at batch_size %lld: needs ~%zu MiB, %zu MiB free "
             "(GPU %d; %lld rows per GPU, %zu parameters%s%s)",
             (long long)sh->batch, MIB(sh->need), free_min >> 20, dev_min, (long long)sh->rows,
             sh->n_packed, sh->bf16 ? ", bf16" : "",
             want == 0 ? "; batch_size 0 tried every power of two" : "");
    return -1;
}

/* The communicators of this process's k GPUs, none with one rank in all.
 * One node: ncclCommInitAll. Several: global ranks g0 .. g0+k-1 of K from
 * node 0's unique id, created in one group (a process that initialises
 * several ranks must, or each ncclCommInitRank would wait for the others),
 * after a rendezvous barrier, so that no node waits in NCCL's
 * initialisation for a node that has already failed. */
static int make_comms(Shared *sh, char *why, size_t size)
{
    if (sh->K == 1)
        return 0;
    ncclResult_t res;
    if (sh->nodes == NULL) {
        res = ncclCommInitAll(sh->comm, sh->k, NULL);
    } else {
        if (rdzv_barrier(sh->nodes->rdzv, why, size) != 0)
            return -1;
        ncclUniqueId id;
        static_assert(sizeof id == TRAIN_NCCL_ID_BYTES, "the rendezvous carries the whole id");
        memcpy(&id, sh->nodes->nccl_id, sizeof id);
        res = ncclGroupStart();
        if (res == ncclSuccess) {
            for (int r = 0; r < sh->k && res == ncclSuccess; r++) {
                cudaError_t e = cudaSetDevice(r);
                if (e != cudaSuccess) {
                    (void)cudaGetLastError();
                    res = ncclUnhandledCudaError;
                    break;
                }
                res = ncclCommInitRank(&sh->comm[r], sh->K, id, sh->g0 + r);
            }
            ncclResult_t end = ncclGroupEnd();
            if (res == ncclSuccess)
                res = end;
        }
    }
    if (res != ncclSuccess) {
        memset(sh->comm, 0, sizeof sh->comm);
        if (sh->nodes != NULL)
            snprintf(why, size, "NCCL: cannot connect %d GPUs on %d nodes (this is node %d): %s",
                     sh->K, sh->nodes->nnodes, sh->nodes->node, ncclGetErrorString(res));
        else
            snprintf(why, size, "NCCL: cannot connect %d GPUs: %s", sh->k, ncclGetErrorString(res));
        return -1;
    }
    return 0;
}

/* Frees the run. Communicators never handed to a rank ran no collective:
 * aborting them is local, where destroying one may wait for its peers. */
static void shared_free(Shared *sh)
{
    for (int r = 0; r < TRAIN_MAX_RANKS; r++)
        if (sh->comm[r])
            (void)ncclCommAbort(sh->comm[r]);
    for (int i = 0; i < 3; i++)
        free(sh->init[i]);
    pthread_cond_destroy(&sh->cv);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
}

int train_cuda(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
               TrainReportFn report, void *ctx, char *why, size_t size)
{
    int k = train_cuda_devices();
    if (k == 0) {
        snprintf(why, size, "no usable CUDA device (compute capability %d.%d or newer)",
                 RUNG_CUDA_MIN_ARCH / 10, RUNG_CUDA_MIN_ARCH % 10);
        return -1;
    }
    if (check_config(cfg, train, val, why, size) != 0)
        return -1;
    Shared *sh = (Shared *)calloc(1, sizeof *sh);
    if (sh == NULL) {
        snprintf(why, size, "out of host memory");
        return -1;
    }
    pthread_mutex_init(&sh->mu, NULL);
    pthread_cond_init(&sh->cv, NULL);
    sh->cfg = cfg;
    sh->train = train;
    sh->val = val;
    sh->report = report;
    sh->ctx = ctx;
    sh->k = k;
    sh->nodes = cfg->nodes;
    sh->K = k * (cfg->nodes ? cfg->nodes->nnodes : 1);
    sh->g0 = k * (cfg->nodes ? cfg->nodes->node : 0);
    plan_model(sh);

    /* NCCL first, so that the free memory measured next is what is left
     * for the arena; then the batch, before any large allocation. */
    if (make_comms(sh, why, size) != 0) {
        shared_free(sh);
        return -1;
    }
    size_t free_min = SIZE_MAX;
    int dev_min = 0;
    for (int d = 0; d < k; d++) {
        size_t f = 0, t = 0;
        cudaError_t e = cudaSetDevice(d);
        if (e == cudaSuccess)
            e = cudaMemGetInfo(&f, &t);
        if (e != cudaSuccess) {
            snprintf(why, size, "GPU %d: %s", d, cudaGetErrorString(e));
            (void)cudaGetLastError();
            shared_free(sh);
            return -1;
        }
        if (f < free_min) {
            free_min = f;
            dev_min = d;
        }
    }
    if (choose_batch(sh, cfg->batch_size, free_min, dev_min, why, size) != 0) {
        shared_free(sh);
        return -1;
    }
    if (sh->nodes != NULL) {
        /* One batch for every node: "auto" found what fits each node's
         * GPUs, and the smallest fits all (a fixed batch is the same
         * everywhere). This is also where every node learns that the
         * others have set up, or why one has not. */
        int64_t b = sh->batch;
        if (rdzv_allreduce(sh->nodes->rdzv, &b, 1, RDZV_MIN_I64, why, size) != 0 ||
            (b != sh->batch && choose_batch(sh, b, free_min, dev_min, why, size) != 0)) {
            shared_free(sh);
            return -1;
        }
    }

    /* The start state, on the host in the packed layout: fresh, or the
     * checkpoint of resume_epoch (node 0's, with several nodes). */
    for (int i = 0; i < 3; i++) {
        if ((sh->init[i] = (float *)calloc(sh->n_packed, sizeof(float))) == NULL) {
            snprintf(why, size, "out of host memory for %zu parameters", sh->n_packed);
            shared_free(sh);
            return -1;
        }
    }
    init_params(sh, sh->init[0]);
    sh->first_epoch = 1;
    if (cfg->resume_epoch > 0) {
        if (train_resume_state(cfg, sh->init[0], sh->init[1], sh->init[2], sh->n_packed, &sh->step0,
                               why, size) != 0) {
            shared_free(sh);
            return -1;
        }
        sh->first_epoch = cfg->resume_epoch + 1;
    }
    if (sh->first_epoch > cfg->epochs) {
        shared_free(sh);
        return 0;
    }
    sh->steps_per_epoch = (train->n + sh->batch - 1) / sh->batch;
    sh->total_steps = sh->steps_per_epoch * cfg->epochs;
    sh->warmup_steps = (int64_t)llround(cfg->warmup_epochs * (double)sh->steps_per_epoch);

    /* One thread per GPU; each owns its communicator from here on. */
    Rank *ranks = (Rank *)calloc((size_t)k, sizeof *ranks);
    pthread_t th[TRAIN_MAX_RANKS];
    bool started[TRAIN_MAX_RANKS] = {false};
    if (ranks == NULL) {
        shared_fail(sh, "out of host memory");
    } else {
        for (int r = 0; r < k; r++) {
            ranks[r].sh = sh;
            ranks[r].r = r;
            ranks[r].grank = sh->g0 + r;
            ranks[r].comm = sh->comm[r];
            sh->comm[r] = NULL;
            started[r] = !shared_failed(sh) &&
                         pthread_create(&th[r], NULL, rank_main, &ranks[r]) == 0;
            if (!started[r]) {
                /* The started ranks stop at their first barrier; the
                 * communicators of the others are aborted here. */
                shared_fail(sh, "cannot start a thread per GPU");
                if (ranks[r].comm)
                    (void)ncclCommAbort(ranks[r].comm);
            }
        }
    }
    for (int r = 0; r < k; r++)
        if (started[r])
            pthread_join(th[r], NULL);
    free(ranks); /* without ranks, shared_free aborts the communicators */

    int rc = 0;
    if (sh->failed) {
        snprintf(why, size, "%s", sh->why);
        rc = -1;
    } else if (sh->halted) {
        snprintf(why, size, "stopped by a signal in epoch %lld, after step %lld",
                 (long long)sh->halt_epoch, (long long)sh->halt_step);
        rc = 1;
    }
    shared_free(sh);
    return rc;
}

int train_cuda_unique_id(unsigned char *id, char *why, size_t size)
{
    ncclUniqueId u;
    static_assert(sizeof u == TRAIN_NCCL_ID_BYTES, "train.h's size of the id");
    ncclResult_t res = ncclGetUniqueId(&u);
    if (res != ncclSuccess) {
        snprintf(why, size, "NCCL: cannot make a unique id for the nodes: %s",
                 ncclGetErrorString(res));
        return -1;
    }
    memcpy(id, &u, sizeof u);
    return 0;
}
