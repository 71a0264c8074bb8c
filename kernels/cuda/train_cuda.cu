/* The CUDA backend of rung-train (train.h): the MLP of train_cpu.c trained
 * data-parallel over the visible GPUs (or the first cfg->gpus of them), one
 * host thread per GPU, gradients averaged with NCCL (docs/trainer.md,
 * "GPUs").
 *
 * Same recipe as the CPU backend, so that the two give the same numbers to
 * float tolerance: the same initial parameters (train_cpu.c's formula), the
 * same epoch order (data_epoch_order with the 1-based epoch) and shards
 * (data_shard's rule), the same dropout masks (train.h: train_dropout_seed(
 * seed, layer) at index ((epoch-1) * n_train + position) * width + j,
 * computed from the row's position in the epoch's order, so the split over
 * GPUs does not change them), the same learning-rate schedule
 * (train_lr_at), the same optimizer arithmetic (ops_math.h), the same
 * checkpoints (checkpoint.h, in train_cpu.c's packed parameter order) and
 * the same reports.
 *
 * Gradient averaging: rank r's loss gradient is scaled by k / n_step, where
 * n_step is the number of samples in the global step (the last one may be
 * short) and k the number of ranks, and ncclAllReduce(ncclAvg) divides the
 * sum by k: the result is sum over the global batch / n_step, the
 * global-batch mean, however the samples fell over the ranks (a rank with
 * no sample in a short last step contributes zeros). One rank skips NCCL:
 * its gradient already is that mean.
 *
 * Data: the training and validation sets live on every GPU for the whole
 * run, as byte codes into a 256-value codebook when their features take no
 * more values than that (IDX images: data_codebook), else as floats. At an
 * epoch's start the host uploads the epoch's order, the per-step learning
 * rates (and AdamW's bias corrections) and the step clock (ops_cuda.h's
 * OpsCudaClock); a step then needs nothing from the host: its first kernel
 * gathers the rank's rows of the step the clock names.
 *
 * A step on rank r, all on the compute stream but the all-reduces:
 *   gather the rank's rows, forward, loss, then backward from the last
 *   layer: when a bucket's layers have their weight and bias gradients, an
 *   event lets the comm stream (high priority) all-reduce that bucket while
 *   compute goes on with the layer's input gradient and the earlier
 *   layers; compute waits for the last bucket, runs the optimizer, the bf16
 *   copy of the weights, and advances the clock.
 * Since nothing in a step depends on the host, a single rank's step is
 * captured once in a CUDA Graph (one per batch shape: full steps, and the
 * short last step) and replayed: one launch instead of ~25, and no cuBLAS
 * call on the host. A shape's first step runs uncaptured (it loads what it
 * needs, outside a capture); RUNG_CUDA_GRAPHS=0 runs every step
 * uncaptured, and so do several ranks (plan_model says why).
 * The host stays at most TRAIN_CUDA_AHEAD steps ahead of the GPU. Every
 * wait polls, and gives up when another rank has failed: a rank that fails
 * sets a flag, and every other one aborts its NCCL communicator instead of
 * hanging in an all-reduce that will never complete.
 *
 * First collective: CUDA loads kernels lazily (the default since CUDA
 * 12.2), and loading a kernel on a device while an NCCL kernel spins there
 * waiting for a peer can deadlock with one host thread per GPU. So every
 * rank first runs each kernel and GEMM shape it will use (a step and a
 * validation batch without NCCL), synchronizes, and meets the others at a
 * barrier; only then does any collective start.
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
 * Memory: NCCL allocates its buffers at a communicator's first collectives,
 * so a warm-up all-reduce of the largest bucket runs on every communicator
 * before free memory is measured. The dataset comes next; then every
 * device buffer of a rank lives in one allocation (the arena, cuBLAS's
 * workspace included) sized from the batch, with TRAIN_CUDA_RESERVE_BYTES
 * plus 1/TRAIN_CUDA_MARGIN_DIV of the GPU's memory kept free for what is
 * not in it (kernel images, cuBLAS's handle, graphs). The arena is
 * allocated for real before any thread starts: a fixed batch that does not
 * fit is "out of GPU memory" with numbers, and "auto" (batch_size 0) tries
 * powers of two from TRAIN_AUTO_BATCH_CAP (or cfg->max_batch_size) down,
 * freeing and halving after each failed allocation (plan.h). */
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
#include "plan.h"
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

/* Gradient buckets close once they hold this much. Small enough that the
 * default model (784-512-256-10: 1.6 MB in layer 0, 0.5 MB above it) has
 * two buckets, the upper layers' all-reduce running while layer 0's
 * backward does; large enough that a call's latency (tens of
 * microseconds) is not most of its time. cfg->bucket_bytes overrides it
 * (tests force many buckets on small models). */
#define TRAIN_CUDA_BUCKET_BYTES ((size_t)512 << 10)
/* Memory that is not in the arena but is needed after it is sized: kernel
 * images (loaded by the warm-up, after sizing), cuBLAS's handle, the
 * instantiated graphs, NCCL's lazily made connections beyond the warm-up's.
 * A fixed part and a share of the GPU's memory, since several of these
 * grow with the device (more SMs, more channels). */
#define TRAIN_CUDA_RESERVE_BYTES ((size_t)256 << 20)
#define TRAIN_CUDA_MARGIN_DIV 32
/* cuBLAS's workspace, in the arena: what NVIDIA's cuBLAS documentation
 * recommends for Hopper (32 MiB; 4 MiB suffices elsewhere). Given to the
 * handle with cublasSetWorkspace, so that a captured GEMM never allocates. */
#define TRAIN_CUDA_BLAS_WS ((size_t)32 << 20)
/* Buffers in the arena start on 256-byte boundaries, and tensors in the
 * parameter vector on 64-float ones: aligned operands for every GEMM. */
#define TRAIN_CUDA_ALIGN ((size_t)256)
#define TRAIN_CUDA_PAD ((size_t)64)
/* Validation batches, rows per GPU: forward only, so far larger than a
 * training batch costs little memory; 5,000 validation samples are one
 * batch. */
#define TRAIN_CUDA_VAL_ROWS ((int64_t)8192)
/* Steps the host may queue ahead of the GPU: enough to hide a launch, few
 * enough that a failure or SIGTERM is seen within a few steps. */
#define TRAIN_CUDA_AHEAD 4
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
    size_t xin, yin;                    /* the input: fwd_rows x dim floats, fwd_rows labels */
    size_t act[TRAIN_MAX_LAYERS + 1];   /* layer outputs, fwd_rows x H (after ReLU, dropout) */
    size_t act_h[TRAIN_MAX_LAYERS + 1]; /* bf16 layer inputs, fwd_rows x D */
    size_t g[2], gh;                    /* gradient ping-pong, rows x max_h; its bf16 copy */
    size_t ws;                          /* db partial sums: OPS_CUDA_DB_SPLIT x max_h */
    size_t stats;                       /* DevStats */
    size_t clock;                       /* OpsCudaClock */
    size_t order;                       /* the epoch's order: n_train int64 */
    size_t lr, bc1, bc2;                /* per step of an epoch: steps_per_epoch floats */
    size_t blas_ws;                     /* cuBLAS's workspace */
    size_t total;                       /* bytes */
} Arena;

/* A GPU's copy of the datasets: one allocation. */
typedef struct DevData {
    void *mem; /* device, owned (freed by shared_free) */
    OpsCudaData train, val;
} DevData;

/* A training step's batch shape on one rank: full steps, and the short
 * last step of an epoch when the training set does not divide. */
enum { STEP_FULL, STEP_LAST, STEP_SHAPES };

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
    size_t n_dev, n_packed; /* parameters: with padding; as train_cpu.c packs them */
    int n_buckets;
    PlanBucket bucket[TRAIN_MAX_LAYERS + 1];
    int closes[TRAIN_MAX_LAYERS + 1]; /* bucket that layer l's backward completes, or -1 */
    bool adam, momentum, bf16, graphs;
    int64_t batch;    /* global batch */
    int64_t rows;     /* training rows a rank holds at most: ceil(min(batch, n) / K) */
    int64_t val_rows; /* validation rows per batch and rank */
    int64_t fwd_rows; /* the larger of the two: the forward buffers' rows */
    Arena arena;
    size_t need; /* arena + reserve, bytes */
    int64_t steps_per_epoch, total_steps, warmup_steps;
    int64_t last_len;                 /* samples in an epoch's last step */
    int64_t first_epoch, step0;       /* where this run starts (resume) */
    float *init[3];                   /* packed start state: params, opt1, opt2 */
    ncclComm_t comm[TRAIN_MAX_RANKS]; /* made by the main thread, each owned by its rank */
    char *arena_mem[TRAIN_MAX_RANKS]; /* allocated by the main thread, owned by the ranks */
    DevData data[TRAIN_MAX_RANKS];
    size_t free_min;   /* the least free memory of the GPUs once data and NCCL are in */
    size_t reserve;    /* kept free: TRAIN_CUDA_RESERVE_BYTES and the margin */
    int dev_min;       /* the GPU with free_min */
    char oom_why[512]; /* the last "auto" attempt that did not fit */
    uint8_t *codes[2]; /* host: byte codes of train and val, until uploaded */
    float lut[OPS_CUDA_LUT_SIZE];
    bool coded;

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
    float *xin;
    int32_t *yin;
    float *act[TRAIN_MAX_LAYERS + 1];
    uint16_t *act_h[TRAIN_MAX_LAYERS + 1];
    float *g[2], *ws;
    uint16_t *gh;
    DevStats *stats;
    OpsCudaClock *clock;
    int64_t *order;
    float *lr, *bc1, *bc2;
    cudaStream_t compute, comm_s;
    cudaEvent_t bucket_ev[TRAIN_MAX_LAYERS + 1];
    cudaEvent_t ahead[TRAIN_CUDA_AHEAD]; /* step t's end, recorded in slot t % AHEAD */
    cudaEvent_t comm_done, stats_ev, host_done, train_done;
    bool streams, events, blas_made;
    cublasHandle_t blas;
    double *hstats;           /* pinned: the reduced sums */
    int64_t *horder;          /* pinned: the epoch's order */
    float *hsched;            /* pinned: lr, bc1, bc2 of the epoch's steps */
    OpsCudaClock *hclock;     /* pinned */
    int64_t m[STEP_SHAPES];   /* this rank's rows in each step shape */
    int64_t len[STEP_SHAPES]; /* the global step's samples */
    cudaGraphExec_t graph[STEP_SHAPES];
    int64_t uses[STEP_SHAPES];
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
    size_t off = 0, poff = 0, begin[TRAIN_MAX_LAYERS + 1];
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
        begin[l] = ly->w;
        in = ly->H;
    }
    sh->n_dev = off;
    sh->n_packed = poff;
    /* Layer l's parameters are [w_l, w_{l+1}): a bucket of whole layers is
     * one contiguous range. */
    size_t bytes = cfg->bucket_bytes ? cfg->bucket_bytes : TRAIN_CUDA_BUCKET_BYTES;
    sh->n_buckets = plan_buckets(begin, sh->L, sh->n_dev, bytes, sh->bucket, sh->closes);
    sh->adam = cfg->optimizer == TRAIN_ADAMW;
    sh->momentum = cfg->optimizer == TRAIN_SGD && cfg->momentum != 0.0f;
    sh->bf16 = cfg->precision == TRAIN_BF16;
    /* Graphs with one rank only: a step whose captured NCCL all-reduce
     * replays hung in tests/gpu/test_nodes_gpu.c (two ranks over NCCL's
     * socket transport), where the same step uncaptured runs; several
     * ranks run their steps uncaptured until that is understood
     * (docs/trainer.md, "GPUs"). */
    const char *graphs = getenv("RUNG_CUDA_GRAPHS");
    sh->graphs = sh->K == 1 && (graphs == NULL || strcmp(graphs, "0") != 0);
}

static size_t place(size_t *at, size_t bytes)
{
    size_t off = *at;
    *at += round_up(bytes, TRAIN_CUDA_ALIGN);
    return off;
}

/* The arena of a rank for the batch in sh (rows, fwd_rows, steps per
 * epoch); returns its size in bytes. */
static size_t plan_arena(const Shared *sh, Arena *a)
{
    size_t at = 0, n = sh->n_dev, F = sizeof(float), H2 = sizeof(uint16_t);
    size_t R = (size_t)sh->rows, RF = (size_t)sh->fwd_rows, S = (size_t)sh->steps_per_epoch;
    a->params = place(&at, n * F);
    a->grads = place(&at, n * F);
    a->opt1 = sh->adam || sh->momentum ? place(&at, n * F) : NONE;
    a->opt2 = sh->adam ? place(&at, n * F) : NONE;
    a->params_h = sh->bf16 ? place(&at, n * H2) : NONE;
    a->xin = place(&at, RF * (size_t)sh->dim * F);
    a->yin = place(&at, RF * sizeof(int32_t));
    for (int l = 0; l < sh->L; l++) {
        a->act[l] = place(&at, RF * (size_t)sh->layer[l].H * F);
        a->act_h[l] = sh->bf16 ? place(&at, RF * (size_t)sh->layer[l].D * H2) : NONE;
    }
    for (int s = 0; s < 2; s++)
        a->g[s] = place(&at, R * (size_t)sh->max_h * F);
    a->gh = sh->bf16 ? place(&at, R * (size_t)sh->max_h * H2) : NONE;
    a->ws = place(&at, (size_t)OPS_CUDA_DB_SPLIT * (size_t)sh->max_h * F);
    a->stats = place(&at, sizeof(DevStats));
    a->clock = place(&at, sizeof(OpsCudaClock));
    a->order = place(&at, (size_t)sh->train->n * sizeof(int64_t));
    a->lr = place(&at, S * F);
    a->bc1 = sh->adam ? place(&at, S * F) : NONE;
    a->bc2 = sh->adam ? place(&at, S * F) : NONE;
    a->blas_ws = place(&at, TRAIN_CUDA_BLAS_WS);
    a->total = at;
    return at;
}

/* Everything that follows from the global batch b: rows per rank, the
 * validation batch, steps, the arena and what the GPU must have free. */
static void plan_batch(Shared *sh, int64_t b)
{
    int64_t n = sh->train->n, K = sh->K, nv = sh->val ? sh->val->n : 0;
    int64_t eff = b < n ? b : n;
    sh->batch = b;
    sh->rows = (eff + K - 1) / K;
    int64_t val_share = (nv + K - 1) / K;
    int64_t vr = val_share < TRAIN_CUDA_VAL_ROWS ? val_share : TRAIN_CUDA_VAL_ROWS;
    sh->val_rows = vr > sh->rows ? vr : sh->rows;
    sh->fwd_rows = sh->val_rows;
    sh->steps_per_epoch = (n + b - 1) / b;
    sh->last_len = n - (sh->steps_per_epoch - 1) * b;
    sh->need = plan_arena(sh, &sh->arena) + sh->reserve;
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
            struct timespec ts = {0, 20 * 1000}; /* 20 us: a step takes tens of them */
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- Rank setup and teardown ---------------------------------------------- */

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
    R->params = (float *)carve(R, a->params);
    R->grads = (float *)carve(R, a->grads);
    R->opt1 = (float *)carve(R, a->opt1);
    R->opt2 = (float *)carve(R, a->opt2);
    R->params_h = (uint16_t *)carve(R, a->params_h);
    R->xin = (float *)carve(R, a->xin);
    R->yin = (int32_t *)carve(R, a->yin);
    for (int s = 0; s < 2; s++)
        R->g[s] = (float *)carve(R, a->g[s]);
    for (int l = 0; l < sh->L; l++) {
        R->act[l] = (float *)carve(R, a->act[l]);
        R->act_h[l] = (uint16_t *)carve(R, a->act_h[l]);
    }
    R->gh = (uint16_t *)carve(R, a->gh);
    R->ws = (float *)carve(R, a->ws);
    R->stats = (DevStats *)carve(R, a->stats);
    R->clock = (OpsCudaClock *)carve(R, a->clock);
    R->order = (int64_t *)carve(R, a->order);
    R->lr = (float *)carve(R, a->lr);
    R->bc1 = (float *)carve(R, a->bc1);
    R->bc2 = (float *)carve(R, a->bc2);

    /* The all-reduces on a high-priority stream: a bucket's NCCL kernel
     * gets SMs as soon as it is ready instead of queueing behind the
     * backward's GEMMs, which it would otherwise delay for the rest. */
    int least = 0, greatest = 0;
    cudaCheck(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    R->streams = true; /* rank_free skips the ones not made (NULL) */
    cudaCheck(cudaStreamCreateWithFlags(&R->compute, cudaStreamNonBlocking));
    cudaCheck(cudaStreamCreateWithPriority(&R->comm_s, cudaStreamNonBlocking, greatest));
    cudaEvent_t *evs[] = {&R->comm_done, &R->stats_ev, &R->host_done, &R->train_done};
    R->events = true; /* likewise */
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        cudaCheck(cudaEventCreateWithFlags(evs[i], cudaEventDisableTiming));
    for (int i = 0; i < TRAIN_CUDA_AHEAD; i++)
        cudaCheck(cudaEventCreateWithFlags(&R->ahead[i], cudaEventDisableTiming));
    for (int b = 0; b < sh->n_buckets; b++)
        cudaCheck(cudaEventCreateWithFlags(&R->bucket_ev[b], cudaEventDisableTiming));
    cublasCheck(cublasCreate(&R->blas));
    R->blas_made = true;
    /* One stream for every GEMM, bound once; then the workspace, which
     * cublasSetStream would reset to cuBLAS's own pool. */
    cublasCheck(cublasSetStream(R->blas, R->compute));
    cublasCheck(cublasSetWorkspace(R->blas, R->arena + a->blas_ws, TRAIN_CUDA_BLAS_WS));

    /* Pinned: what the host uploads at each epoch's start, and the sums. */
    size_t S = (size_t)sh->steps_per_epoch;
    cudaCheck(cudaHostAlloc((void **)&R->hstats, 4 * sizeof(double), cudaHostAllocDefault));
    cudaCheck(cudaHostAlloc((void **)&R->horder, (size_t)sh->train->n * sizeof(int64_t),
                            cudaHostAllocDefault));
    cudaCheck(cudaHostAlloc((void **)&R->hsched, 3 * S * sizeof(float), cudaHostAllocDefault));
    cudaCheck(cudaHostAlloc((void **)&R->hclock, sizeof(OpsCudaClock), cudaHostAllocDefault));
    if (R->r == 0 && sh->g0 == 0 && sh->cfg->checkpoint_dir != NULL) {
        for (int i = 0; i < 3; i++)
            if ((R->save[i] = (float *)calloc(sh->n_packed, sizeof(float))) == NULL)
                return ops_cuda__failf("out of host memory for checkpoints (%zu parameters)",
                                       sh->n_packed);
    }

    /* This rank's rows in each step shape (data_shard's rule). */
    R->len[STEP_FULL] = sh->batch < sh->train->n ? sh->batch : sh->train->n;
    R->len[STEP_LAST] = sh->last_len;
    for (int v = 0; v < STEP_SHAPES; v++)
        R->m[v] = plan_shard_rows(R->len[v], R->grank, sh->K);

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
    cudaStream_t streams[] = {R->compute, R->comm_s};
    for (int i = 0; R->streams && i < 2; i++)
        if (streams[i])
            (void)cudaStreamSynchronize(streams[i]);
    for (int v = 0; v < STEP_SHAPES; v++)
        if (R->graph[v])
            (void)cudaGraphExecDestroy(R->graph[v]);
    if (R->blas_made)
        (void)cublasDestroy(R->blas);
    if (R->events) {
        cudaEvent_t evs[] = {R->comm_done, R->stats_ev, R->host_done, R->train_done};
        for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
            if (evs[i])
                (void)cudaEventDestroy(evs[i]);
        for (int i = 0; i < TRAIN_CUDA_AHEAD; i++)
            if (R->ahead[i])
                (void)cudaEventDestroy(R->ahead[i]);
        for (int b = 0; b < sh->n_buckets; b++)
            if (R->bucket_ev[b])
                (void)cudaEventDestroy(R->bucket_ev[b]);
    }
    for (int i = 0; R->streams && i < 2; i++)
        if (streams[i])
            (void)cudaStreamDestroy(streams[i]);
    void *pinned[] = {R->hstats, R->horder, R->hsched, R->hclock};
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i])
            (void)cudaFreeHost(pinned[i]);
    if (R->arena)
        (void)cudaFree(R->arena);
    (void)cudaGetLastError();
    for (int i = 0; i < 3; i++)
        free(R->save[i]);
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

/* Forward of the m rows in xin; the logits land in act[L-1]. In training,
 * dropout after each hidden layer: row i of this rank is global row clock
 * row0 + t * batch + grank + i * K (train.h's mask index, in rows). */
static int forward(Rank *R, int m, bool training)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    for (int l = 0; l < sh->L; l++) {
        const Layer *ly = &sh->layer[l];
        bool hidden = l < sh->L - 1;
        const float *X = l == 0 ? R->xin : R->act[l - 1];
        OpsCudaBf16 lp;
        OpsCudaBf16 *plp = bf16_operands(R, l, &lp);
        if (plp && ops_cuda_to_bf16(X, R->act_h[l], (size_t)m * (size_t)ly->D, R->compute) != 0)
            return -1;
        if (ops_cuda_linear_fwd(R->blas, R->compute, X, R->params + ly->w, R->params + ly->b,
                                R->act[l], m, ly->D, ly->H, hidden, plp) != 0)
            return -1;
        if (hidden && training && cfg->dropout > 0.0f &&
            ops_cuda_dropout_rows_at(R->act[l], m, ly->H, cfg->dropout,
                                     train_dropout_seed(cfg->seed, l), R->clock, (uint64_t)R->grank,
                                     (uint64_t)sh->batch, (uint64_t)sh->K, R->compute) != 0)
            return -1;
    }
    return 0;
}

/* All-reduces bucket b once compute has written it, on the comm stream. */
static int reduce_bucket(Rank *R, int b)
{
    Shared *sh = R->sh;
    const PlanBucket *bk = &sh->bucket[b];
    cudaCheck(cudaEventRecord(R->bucket_ev[b], R->compute));
    cudaCheck(cudaStreamWaitEvent(R->comm_s, R->bucket_ev[b], 0));
    ncclCheck(ncclAllReduce(R->grads + bk->off, R->grads + bk->off, bk->len, ncclFloat, ncclAvg,
                            R->comm, R->comm_s));
    return 0;
}

/* Backward from dlogits in g[0], last layer first: each layer's activation
 * gradient and db, dW, then (its bucket all-reducing meanwhile when the
 * layer closes one, unless comm is false) dX for the layer below. */
static int backward(Rank *R, int m, bool comm)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    cudaStream_t cs = R->compute;
    int cur = 0;
    for (int l = sh->L - 1; l >= 0; l--) {
        const Layer *ly = &sh->layer[l];
        bool hidden = l < sh->L - 1;
        float *dY = R->g[cur];
        if (hidden && cfg->dropout > 0.0f &&
            ops_cuda_dropout_rows_at(dY, m, ly->H, cfg->dropout, train_dropout_seed(cfg->seed, l),
                                     R->clock, (uint64_t)R->grank, (uint64_t)sh->batch,
                                     (uint64_t)sh->K, cs) != 0)
            return -1;
        const float *X = l == 0 ? R->xin : R->act[l - 1];
        OpsCudaBf16 lp;
        OpsCudaBf16 *plp = bf16_operands(R, l, &lp);
        /* ops_cuda_linear_bwd in its three parts, so that the bucket
         * starts between dW and dX. */
        if (ops_cuda_act_bwd(R->act[l], dY, R->grads + ly->b, R->ws, m, ly->H, hidden, cs) != 0)
            return -1;
        const void *g = dY, *x = X, *w = R->params + ly->w;
        if (plp) {
            if (ops_cuda_to_bf16(dY, R->gh, (size_t)m * (size_t)ly->H, cs) != 0)
                return -1;
            g = R->gh, x = plp->X, w = plp->W;
        }
        if (ops_cuda_gemm(R->blas, cs, true, false, ly->D, ly->H, m, x, g, R->grads + ly->w,
                          plp != NULL) != 0)
            return -1;
        if (comm && sh->K > 1 && sh->closes[l] >= 0 && reduce_bucket(R, sh->closes[l]) != 0)
            return -1;
        if (l > 0 && ops_cuda_gemm(R->blas, cs, false, true, m, ly->D, ly->H, g, w, R->g[cur ^ 1],
                                   plp != NULL) != 0)
            return -1;
        cur ^= 1;
    }
    return 0;
}

/* Queues a training step of shape v on the compute stream (and the comm
 * stream): everything per step comes from the device clock and tables. */
static int enqueue_step(Rank *R, int v)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    cudaStream_t cs = R->compute;
    int m = (int)R->m[v];
    if (m > 0) {
        if (ops_cuda_gather(&sh->data[R->r].train, R->order, R->grank, sh->K, R->clock, sh->batch,
                            m, R->xin, R->yin, cs) != 0 ||
            forward(R, m, true) != 0)
            return -1;
        /* K / n_step, then ncclAvg's 1/K: the global-batch mean. */
        float scale = (float)sh->K / (float)R->len[v];
        if (ops_cuda_softmax_xent(R->act[sh->L - 1], R->yin, R->g[0], m, sh->C, scale,
                                  &R->stats->train_loss, NULL, cs) != 0 ||
            backward(R, m, true) != 0)
            return -1;
    } else {
        /* No sample here in a short last step: zeros, and the same
         * collectives as every other rank. */
        cudaCheck(cudaMemsetAsync(R->grads, 0, sh->n_dev * sizeof(float), cs));
        for (int b = 0; sh->K > 1 && b < sh->n_buckets; b++)
            if (reduce_bucket(R, b) != 0)
                return -1;
    }
    if (sh->K > 1) {
        /* The optimizer waits for the last bucket. */
        cudaCheck(cudaEventRecord(R->comm_done, R->comm_s));
        cudaCheck(cudaStreamWaitEvent(cs, R->comm_done, 0));
    }
    if (sh->adam) {
        if (ops_cuda_adamw_at(R->params, R->opt1, R->opt2, R->grads, sh->n_dev, R->lr, R->bc1,
                              R->bc2, R->clock, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay,
                              cs) != 0)
            return -1;
    } else if (ops_cuda_sgd_at(R->params, R->opt1, R->grads, sh->n_dev, R->lr, R->clock,
                               cfg->momentum, cfg->weight_decay, cfg->nesterov, cs) != 0) {
        return -1;
    }
    if (sh->bf16 && ops_cuda_to_bf16(R->params, R->params_h, sh->n_dev, cs) != 0)
        return -1;
    return ops_cuda_clock_advance(R->clock, cs);
}

/* Captures shape v's step into a graph (its first step ran uncaptured). */
static int capture_step(Rank *R, int v)
{
    cudaCheck(cudaStreamBeginCapture(R->compute, cudaStreamCaptureModeThreadLocal));
    int rc = enqueue_step(R, v);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(R->compute, &g);
    if (rc != 0) {
        if (g)
            (void)cudaGraphDestroy(g);
        (void)cudaGetLastError();
        return -1;
    }
    cudaCheck(e);
    e = cudaGraphInstantiate(&R->graph[v], g, 0);
    (void)cudaGraphDestroy(g);
    cudaCheck(e);
    return 0;
}

/* One training step of shape v: uncaptured the first time, then from its
 * graph. */
static int train_step(Rank *R, int v)
{
    if (!R->sh->graphs || R->uses[v]++ == 0)
        return enqueue_step(R, v);
    if (R->graph[v] == NULL && capture_step(R, v) != 0)
        return -1;
    cudaCheck(cudaGraphLaunch(R->graph[v], R->compute));
    return 0;
}

/* The epoch's order, learning rates (bias corrections) and clock, queued
 * for upload; the host buffers were last read by the previous epoch's
 * uploads, which epoch_sums waited past. */
static int epoch_begin(Rank *R, int64_t epoch)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    int64_t n = sh->train->n, S = sh->steps_per_epoch;
    data_epoch_order(n, cfg->seed, epoch, R->horder);
    float *lr = R->hsched, *bc1 = lr + S, *bc2 = bc1 + S;
    for (int64_t t = 0; t < S; t++) {
        int64_t step = R->step + t;
        lr[t] = (float)train_lr_at(cfg->lr, step, sh->warmup_steps, sh->total_steps);
        if (sh->adam)
            ops_cuda_adamw_corrections(cfg->beta1, cfg->beta2, step + 1, &bc1[t], &bc2[t]);
    }
    R->hclock->t = 0;
    R->hclock->row0 = (epoch - 1) * n;
    cudaStream_t cs = R->compute;
    size_t fb = (size_t)S * sizeof(float);
    cudaCheck(cudaMemcpyAsync(R->order, R->horder, (size_t)n * sizeof(int64_t),
                              cudaMemcpyHostToDevice, cs));
    cudaCheck(cudaMemcpyAsync(R->lr, lr, fb, cudaMemcpyHostToDevice, cs));
    if (sh->adam) {
        cudaCheck(cudaMemcpyAsync(R->bc1, bc1, fb, cudaMemcpyHostToDevice, cs));
        cudaCheck(cudaMemcpyAsync(R->bc2, bc2, fb, cudaMemcpyHostToDevice, cs));
    }
    cudaCheck(
        cudaMemcpyAsync(R->clock, R->hclock, sizeof(OpsCudaClock), cudaMemcpyHostToDevice, cs));
    cudaCheck(cudaMemsetAsync(R->stats, 0, sizeof(DevStats), cs));
    return 0;
}

/* Validation of the rows [lo, hi) of the validation set: loss and hits
 * into the counters, in batches of val_rows. */
static int validate(Rank *R, int64_t lo, int64_t hi)
{
    Shared *sh = R->sh;
    for (int64_t s0 = lo; s0 < hi; s0 += sh->val_rows) {
        int m = (int)(hi - s0 < sh->val_rows ? hi - s0 : sh->val_rows);
        if (ops_cuda_gather(&sh->data[R->r].val, NULL, s0, 1, NULL, 0, m, R->xin, R->yin,
                            R->compute) != 0 ||
            forward(R, m, false) != 0 ||
            ops_cuda_softmax_xent(R->act[sh->L - 1], R->yin, NULL, m, sh->C, 0.0f,
                                  &R->stats->val_loss, &R->stats->val_correct, R->compute) != 0)
            return -1;
    }
    return 0;
}

/* This rank's validation rows, as train_cpu.c splits them. */
static void val_share(const Rank *R, int64_t *lo, int64_t *hi)
{
    int64_t nv = R->sh->val ? R->sh->val->n : 0;
    *lo = nv * R->grank / R->sh->K;
    *hi = nv * (R->grank + 1) / R->sh->K;
}

__global__ void pack_stats_kernel(DevStats *st)
{
    st->reduced[0] = st->train_loss;
    st->reduced[1] = st->val_loss;
    st->reduced[2] = (double)st->val_correct;
}

/* Before any collective: every kernel and GEMM shape of the run once, on
 * this rank alone (no NCCL), so that CUDA's lazy loading has loaded them
 * all; then the GPU is idle. The results are thrown away: the gradients
 * and activations are scratch, the optimizers run on the db workspace, the
 * counters and the clock are set again at the epoch's start. */
static int warm_up(Rank *R)
{
    Shared *sh = R->sh;
    const TrainConfig *cfg = sh->cfg;
    cudaStream_t cs = R->compute;
    if (epoch_begin(R, sh->first_epoch) != 0)
        return -1;
    for (int v = 0; v < STEP_SHAPES; v++) {
        int m = (int)R->m[v];
        if (m == 0 || (v == STEP_LAST && m == R->m[STEP_FULL]))
            continue;
        if (ops_cuda_gather(&sh->data[R->r].train, R->order, R->grank, sh->K, R->clock, sh->batch,
                            m, R->xin, R->yin, cs) != 0 ||
            forward(R, m, true) != 0 ||
            ops_cuda_softmax_xent(R->act[sh->L - 1], R->yin, R->g[0], m, sh->C, 1.0f,
                                  &R->stats->train_loss, NULL, cs) != 0 ||
            backward(R, m, false) != 0)
            return -1;
    }
    int64_t lo, hi;
    val_share(R, &lo, &hi);
    int64_t last = hi - lo > 0 ? (hi - lo - 1) % sh->val_rows + 1 : 0;
    if (validate(R, lo, lo + (hi - lo < sh->val_rows ? hi - lo : sh->val_rows)) != 0 ||
        (last != sh->val_rows && validate(R, lo, lo + last) != 0))
        return -1;
    float *w = R->ws, *o1 = w + 16, *o2 = w + 32, *g = w + 48; /* 64 <= ws's 32 * max_h */
    if (sh->adam ? ops_cuda_adamw_at(w, o1, o2, g, 16, R->lr, R->bc1, R->bc2, R->clock, cfg->beta1,
                                     cfg->beta2, cfg->eps, 0.0f, cs)
                 : ops_cuda_sgd_at(w, o1, g, 16, R->lr, R->clock, 0.5f, 0.0f, false, cs))
        return -1;
    if (sh->bf16 && ops_cuda_to_bf16(w, (uint16_t *)o1, 16, cs) != 0)
        return -1;
    if (ops_cuda_clock_advance(R->clock, cs) != 0)
        return -1;
    pack_stats_kernel<<<1, 1, 0, cs>>>(R->stats);
    cudaCheck(cudaGetLastError());
    cudaCheck(cudaEventRecord(R->host_done, cs));
    return wait_event(R, R->host_done);
}

/* Runs an epoch's training steps (halted: stopped after a step by a
 * SIGTERM that every rank agreed on). */
static int train_epoch(Rank *R, bool *halted)
{
    Shared *sh = R->sh;
    for (int64_t t = 0; t < sh->steps_per_epoch; t++) {
        int snap = 0;
        if (barrier(sh, &snap) != 0)
            return -1;
        /* At most TRAIN_CUDA_AHEAD steps queued: step t - AHEAD is done. */
        cudaEvent_t slot = R->ahead[t % TRAIN_CUDA_AHEAD];
        if (wait_event(R, slot) != 0)
            return -1;
        int v = t == sh->steps_per_epoch - 1 ? STEP_LAST : STEP_FULL;
        if (train_step(R, v) != 0)
            return -1;
        cudaCheck(cudaEventRecord(slot, R->compute));
        R->step++;
        if (snap & SNAP_SIGNAL) {
            *halted = true;
            return 0;
        }
    }
    return 0;
}

/* ---- Epochs ------------------------------------------------------------- */

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
    if (wait_event(R, R->host_done) != 0)
        return -1;
    /* The compute stream's next work (the next epoch's uploads) comes
     * after the comm stream's read of the sums. */
    if (out != R->compute)
        cudaCheck(cudaStreamWaitEvent(R->compute, R->host_done, 0));
    return 0;
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
    e.batch_size = sh->batch;
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
    int64_t vlo, vhi;
    val_share(R, &vlo, &vhi);
    for (int64_t epoch = sh->first_epoch; epoch <= cfg->epochs; epoch++) {
        /* The order and the tables are made and queued before the clock
         * starts: epoch_s counts the training steps alone. */
        if (epoch_begin(R, epoch) != 0)
            return -1;
        double t0 = now_s();
        bool halted = false;
        if (train_epoch(R, &halted) != 0)
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
        if (validate(R, vlo, vhi) != 0 || epoch_sums(R) != 0)
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
        rc = warm_up(R);
    if (rc == 0)
        rc = barrier(R->sh, NULL); /* every rank is set up and warm before any collective */
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
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f) || cfg->batch_size < 0 || cfg->epochs < 0 ||
        cfg->gpus < 0 || cfg->max_batch_size < 0) {
        snprintf(why, size,
                 "train_cuda: bad configuration (dropout %g, batch_size %lld, epochs %lld, "
                 "gpus %d, max_batch_size %lld)",
                 (double)cfg->dropout, (long long)cfg->batch_size, (long long)cfg->epochs,
                 cfg->gpus, (long long)cfg->max_batch_size);
        return -1;
    }
    return 0;
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
        int devs[TRAIN_MAX_RANKS];
        for (int r = 0; r < sh->k; r++)
            devs[r] = r;
        res = ncclCommInitAll(sh->comm, sh->k, devs);
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

/* Aborts the communicators in comm[0..k) that are not NULL, in one group
 * (a thread that owns several must group them), and clears them. */
static void abort_comms(ncclComm_t *comm, int k)
{
    (void)ncclGroupStart();
    for (int r = 0; r < k; r++)
        if (comm[r])
            (void)ncclCommAbort(comm[r]);
    (void)ncclGroupEnd();
    for (int r = 0; r < k; r++)
        comm[r] = NULL;
}

/* NCCL allocates its buffers and connections at a communicator's first
 * collectives (since 2.22; before, at init): one all-reduce of the largest
 * bucket's size and one of the epoch sums' on every communicator, driven
 * from this thread in a group, so that the free memory measured next is
 * what is left for the arena. The GPUs run nothing else yet, so no kernel
 * is loaded while NCCL's spin. */
static int nccl_warm_up(Shared *sh, char *why, size_t size)
{
    if (sh->K == 1)
        return 0;
    size_t len = 2 * sizeof(double); /* floats: room for the sums' 3 doubles */
    for (int b = 0; b < sh->n_buckets; b++)
        if (sh->bucket[b].len > len)
            len = sh->bucket[b].len;
    float *buf[TRAIN_MAX_RANKS] = {NULL};
    cudaStream_t st[TRAIN_MAX_RANKS] = {NULL};
    cudaError_t e = cudaSuccess;
    ncclResult_t res = ncclSuccess;
    for (int r = 0; r < sh->k && e == cudaSuccess; r++) {
        e = cudaSetDevice(r);
        if (e == cudaSuccess)
            e = cudaMalloc((void **)&buf[r], len * sizeof(float));
        if (e == cudaSuccess)
            e = cudaMemset(buf[r], 0, len * sizeof(float));
        if (e == cudaSuccess)
            e = cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking);
    }
    for (int pass = 0; pass < 2 && e == cudaSuccess && res == ncclSuccess; pass++) {
        res = ncclGroupStart();
        for (int r = 0; r < sh->k && res == ncclSuccess; r++)
            res = pass == 0
                      ? ncclAllReduce(buf[r], buf[r], len, ncclFloat, ncclAvg, sh->comm[r], st[r])
                      : ncclAllReduce(buf[r], buf[r], 3, ncclDouble, ncclSum, sh->comm[r], st[r]);
        ncclResult_t end = ncclGroupEnd();
        if (res == ncclSuccess)
            res = end;
    }
    for (int r = 0; r < sh->k; r++) {
        cudaError_t e2 = cudaSetDevice(r);
        if (e2 == cudaSuccess && st[r])
            e2 = cudaStreamSynchronize(st[r]);
        if (e == cudaSuccess)
            e = e2;
        if (st[r])
            (void)cudaStreamDestroy(st[r]);
        if (buf[r])
            (void)cudaFree(buf[r]);
    }
    if (e != cudaSuccess || res != ncclSuccess) {
        snprintf(why, size, "NCCL: the first all-reduce over %d GPUs failed: %s", sh->K,
                 e != cudaSuccess ? cudaGetErrorString(e) : ncclGetErrorString(res));
        (void)cudaGetLastError();
        return -1;
    }
    return 0;
}

/* The datasets on every GPU: byte codes and their codebook when the
 * features take at most 256 values, else floats; labels as int32. */
static int upload_data(Shared *sh, char *why, size_t size)
{
    const Dataset *sets[2] = {sh->train, sh->val && sh->val->n > 0 ? sh->val : NULL};
    size_t nfeat[2], nlab[2];
    for (int s = 0; s < 2; s++) {
        nfeat[s] = sets[s] ? (size_t)sets[s]->n * (size_t)sets[s]->dim : 0;
        nlab[s] = sets[s] ? (size_t)sets[s]->n : 0;
    }
    sh->coded = false;
    if ((sh->codes[0] = (uint8_t *)malloc(nfeat[0] + 1)) != NULL &&
        (sh->codes[1] = (uint8_t *)malloc(nfeat[1] + 1)) != NULL)
        sh->coded = data_codebook(sets, 2, sh->lut, sh->codes) > 0;
    if (!sh->coded && ((sets[0] != NULL && sets[0]->code != NULL) ||
                       (sets[1] != NULL && sets[1]->code != NULL))) {
        /* Byte-coded sets (images) always fit a codebook; without one there
         * are no floats to upload (kernels/data.h). */
        snprintf(why, size, "cannot code the dataset in bytes (no memory, or over %d values)",
                 DATA_CODEBOOK_SIZE);
        return -1;
    }
    size_t at = 0, off_x[2], off_y[2], off_lut = 0;
    size_t fsize = sh->coded ? 1 : sizeof(float);
    if (sh->coded)
        off_lut = place(&at, OPS_CUDA_LUT_SIZE * sizeof(float));
    for (int s = 0; s < 2; s++) {
        off_x[s] = place(&at, nfeat[s] * fsize);
        off_y[s] = place(&at, nlab[s] * sizeof(int32_t));
    }
    for (int r = 0; r < sh->k; r++) {
        DevData *dd = &sh->data[r];
        cudaError_t e = cudaSetDevice(r);
        if (e == cudaSuccess)
            e = cudaMalloc(&dd->mem, at);
        char *base = (char *)dd->mem;
        for (int s = 0; s < 2 && e == cudaSuccess; s++) {
            OpsCudaData *od = s == 0 ? &dd->train : &dd->val;
            od->n = (int64_t)nlab[s];
            od->dim = sh->dim;
            od->y = (const int32_t *)(base + off_y[s]);
            if (sh->coded) {
                od->codes = (const uint8_t *)(base + off_x[s]);
                od->lut = (const float *)(base + off_lut);
            } else {
                od->x = (const float *)(base + off_x[s]);
            }
            if (nlab[s] == 0)
                continue;
            e = cudaMemcpy(base + off_x[s], sh->coded ? (const void *)sh->codes[s] : sets[s]->x,
                           nfeat[s] * fsize, cudaMemcpyHostToDevice);
            if (e == cudaSuccess)
                e = cudaMemcpy(base + off_y[s], sets[s]->y, nlab[s] * sizeof(int32_t),
                               cudaMemcpyHostToDevice);
        }
        if (e == cudaSuccess && sh->coded)
            e = cudaMemcpy(base + off_lut, sh->lut, sizeof sh->lut, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            snprintf(why, size, "GPU %d: cannot hold the dataset (%zu MiB%s): %s", r, MIB(at),
                     sh->coded ? ", a byte per feature" : "", cudaGetErrorString(e));
            (void)cudaGetLastError();
            return -1;
        }
    }
    for (int s = 0; s < 2; s++) {
        free(sh->codes[s]);
        sh->codes[s] = NULL;
    }
    return 0;
}

/* Frees the arenas allocated so far (none handed to a rank yet). */
static void free_arenas(Shared *sh)
{
    for (int r = 0; r < sh->k; r++) {
        if (sh->arena_mem[r]) {
            (void)cudaSetDevice(r);
            (void)cudaFree(sh->arena_mem[r]);
            sh->arena_mem[r] = NULL;
        }
    }
}

static void oom_message(Shared *sh, char *why, size_t size)
{
    snprintf(why, size,
             "out of GPU memory at batch_size %lld: needs ~%zu MiB, %zu MiB free "
             "(GPU %d; %lld rows per GPU, %zu parameters%s)",
             (long long)sh->batch, MIB(sh->need), sh->free_min >> 20, sh->dev_min,
             (long long)sh->rows, sh->n_packed, sh->bf16 ? ", bf16" : "");
}

/* plan_auto_batch's attempt, and a fixed batch's: plans batch b, and when
 * the plan fits what every GPU has free, allocates the arena on each. 0:
 * allocated; 1: does not fit (what was allocated is freed); -1: another
 * CUDA error, in oom_why. */
static int try_batch(int64_t b, void *ctx)
{
    Shared *sh = (Shared *)ctx;
    plan_batch(sh, b);
    if (sh->need > sh->free_min) {
        oom_message(sh, sh->oom_why, sizeof sh->oom_why);
        return 1;
    }
    for (int r = 0; r < sh->k; r++) {
        cudaError_t e = cudaSetDevice(r);
        if (e == cudaSuccess)
            e = cudaMalloc((void **)&sh->arena_mem[r], sh->arena.total);
        if (e == cudaSuccess)
            continue;
        (void)cudaGetLastError();
        sh->arena_mem[r] = NULL;
        free_arenas(sh);
        if (e == cudaErrorMemoryAllocation) {
            oom_message(sh, sh->oom_why, sizeof sh->oom_why);
            return 1;
        }
        snprintf(sh->oom_why, sizeof sh->oom_why, "GPU %d: %s", r, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* The batch, with each GPU's arena allocated: cfg->batch_size if it fits,
 * else an error with numbers; 0 ("auto"): plan_auto_batch under the cap. */
static int choose_batch(Shared *sh, int64_t want, char *why, size_t size)
{
    int64_t n = sh->train->n;
    if (want > 0) {
        int rc = try_batch(want, sh);
        if (rc != 0)
            snprintf(why, size, "%s", sh->oom_why);
        return rc == 0 ? 0 : -1;
    }
    int64_t cap = sh->cfg->max_batch_size > 0 ? sh->cfg->max_batch_size : TRAIN_AUTO_BATCH_CAP;
    int64_t b = plan_auto_batch(cap, n, try_batch, sh);
    if (b > 0)
        return 0;
    snprintf(why, size, "%s%s", sh->oom_why, b == 0 ? "; batch_size \"auto\" tried down to 1" : "");
    return -1;
}

/* Frees the run. Communicators never handed to a rank ran no collective of
 * a rank thread: aborting them is local, where destroying one may wait for
 * its peers. */
static void shared_free(Shared *sh)
{
    abort_comms(sh->comm, TRAIN_MAX_RANKS);
    free_arenas(sh);
    for (int r = 0; r < TRAIN_MAX_RANKS; r++) {
        if (sh->data[r].mem) {
            (void)cudaSetDevice(r);
            (void)cudaFree(sh->data[r].mem);
        }
    }
    (void)cudaGetLastError();
    for (int s = 0; s < 2; s++)
        free(sh->codes[s]);
    for (int i = 0; i < 3; i++)
        free(sh->init[i]);
    pthread_cond_destroy(&sh->cv);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
}

/* Free memory of this process's GPUs now: the least of them, and the
 * reserve (from the smallest GPU's total). */
static int measure_free(Shared *sh, char *why, size_t size)
{
    sh->free_min = SIZE_MAX;
    size_t total_min = SIZE_MAX;
    for (int d = 0; d < sh->k; d++) {
        size_t f = 0, t = 0;
        cudaError_t e = cudaSetDevice(d);
        if (e == cudaSuccess)
            e = cudaMemGetInfo(&f, &t);
        if (e != cudaSuccess) {
            snprintf(why, size, "GPU %d: %s", d, cudaGetErrorString(e));
            (void)cudaGetLastError();
            return -1;
        }
        if (f < sh->free_min) {
            sh->free_min = f;
            sh->dev_min = d;
        }
        if (t < total_min)
            total_min = t;
    }
    sh->reserve = TRAIN_CUDA_RESERVE_BYTES + total_min / TRAIN_CUDA_MARGIN_DIV;
    return 0;
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
    if (cfg->gpus > k) {
        snprintf(why, size, "%d GPUs asked for, %d usable", cfg->gpus, k);
        return -1;
    }
    if (cfg->gpus > 0)
        k = cfg->gpus;
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

    /* A run resumed after its last epoch ends here, before NCCL or any
     * GPU memory (every node has node 0's resume_epoch). */
    if (cfg->resume_epoch >= cfg->epochs) {
        shared_free(sh);
        return 0;
    }

    /* NCCL and its first collectives, then the data, then free memory and
     * the batch, before any thread starts. */
    if (make_comms(sh, why, size) != 0 || nccl_warm_up(sh, why, size) != 0 ||
        upload_data(sh, why, size) != 0 || measure_free(sh, why, size) != 0 ||
        choose_batch(sh, cfg->batch_size, why, size) != 0) {
        shared_free(sh);
        return -1;
    }
    if (sh->nodes != NULL) {
        /* One batch for every node: "auto" found what fits each node's
         * GPUs, and the smallest fits all (a fixed batch is the same
         * everywhere). This is also where every node learns that the
         * others have set up, or why one has not. */
        int64_t b = sh->batch;
        if (rdzv_allreduce(sh->nodes->rdzv, &b, 1, RDZV_MIN_I64, why, size) != 0) {
            shared_free(sh);
            return -1;
        }
        if (b != sh->batch) {
            free_arenas(sh);
            if (choose_batch(sh, b, why, size) != 0) {
                shared_free(sh);
                return -1;
            }
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
    sh->total_steps = sh->steps_per_epoch * cfg->epochs;
    sh->warmup_steps = (int64_t)llround(cfg->warmup_epochs * (double)sh->steps_per_epoch);

    /* One thread per GPU; each owns its communicator and arena from here. */
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
            ranks[r].arena = sh->arena_mem[r];
            started[r] = !shared_failed(sh) &&
                         pthread_create(&th[r], NULL, rank_main, &ranks[r]) == 0;
            if (started[r]) {
                sh->comm[r] = NULL;
                sh->arena_mem[r] = NULL;
            } else {
                /* The started ranks stop at their first barrier; the
                 * others' communicators and arenas stay with sh, which
                 * frees them. */
                ranks[r].comm = NULL;
                ranks[r].arena = NULL;
                shared_fail(sh, "cannot start a thread per GPU");
            }
        }
    }
    for (int r = 0; r < k; r++)
        if (started[r])
            pthread_join(th[r], NULL);
    free(ranks);

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
