/* A training run of rung-train: its configuration (the trial's config plus
 * the trainable's model and dataset) and the backends that run it.
 *
 * The CPU backend (train_cpu.c) runs `ranks` data-parallel ranks as threads
 * with an all-reduce through shared memory; the CUDA backend
 * (cuda/train_cuda.cu, built where nvcc exists) runs one host thread per
 * GPU with NCCL. Both follow the same recipe, report through the same
 * callback once per epoch, and save the same checkpoint.
 *
 * Either may span several nodes (TrainNodes): one process per machine, each
 * with the same number of local ranks, joined by a TCP rendezvous
 * (rendezvous.h). The CUDA backend then forms one NCCL communicator over
 * every GPU of every node; the CPU backend sums gradients over the
 * rendezvous' connections. Data shards follow the global rank. */
#ifndef RUNG_KERNELS_TRAIN_H
#define RUNG_KERNELS_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "rendezvous.h"

#define TRAIN_MAX_LAYERS 16   /* hidden layers */
#define TRAIN_MAX_WIDTH 65536 /* units of one hidden layer */
#define TRAIN_MAX_RANKS 64
/* batch_size "auto" picks at most this many samples (max_batch_size
 * overrides it): a GPU fits far larger batches of a small MLP, but a batch
 * of the whole training set would make an epoch a few steps, and a trial
 * meaningless (docs/trainer.md, "GPUs"). */
#define TRAIN_AUTO_BATCH_CAP 1024

/* Nodes of one run: docs/api.md bounds a trial's resources_per_trial.nodes
 * by 64. */
#define TRAIN_MAX_NODES 64
/* sizeof(ncclUniqueId), which train_cuda.cu checks at compile time. */
#define TRAIN_NCCL_ID_BYTES 128

/* A run over several nodes (docs/trainer.md, "Multi-node training"): one
 * process per machine, each with the same number of local ranks (CPU
 * threads, or GPUs); local rank r of node i is global rank i * local + r,
 * which picks its data shard. Only node 0 reports and writes checkpoints; a
 * resumed run starts from node 0's checkpoint on every node. */
typedef struct TrainNodes {
    int node;   /* this process: 0..nnodes-1 (RUNG_NODE_RANK) */
    int nnodes; /* 2..TRAIN_MAX_NODES (RUNG_NNODES) */
    Rdzv *rdzv; /* borrowed: joined with the other nodes (rendezvous rank = node) */
    unsigned char nccl_id[TRAIN_NCCL_ID_BYTES]; /* CUDA: node 0's ncclUniqueId, rendezvoused */
} TrainNodes;

typedef enum { TRAIN_SGD, TRAIN_ADAMW } TrainOptimizer;
typedef enum { TRAIN_FP32, TRAIN_BF16 } TrainPrecision;

typedef struct TrainConfig {
    /* Model: input -> hidden[0] -> ... -> hidden[n_hidden-1] -> classes. */
    int n_hidden;
    int hidden[TRAIN_MAX_LAYERS];
    float dropout; /* after each hidden ReLU; [0, 1) */
    /* Optimization. */
    TrainOptimizer optimizer;
    float lr;                /* peak learning rate */
    float momentum;          /* sgd */
    bool nesterov;           /* sgd */
    float beta1, beta2, eps; /* adamw: 0.9, 0.999, 1e-8 */
    float weight_decay;
    int64_t batch_size;     /* global batch, split over ranks; 0 = "auto" (GPU) */
    int64_t max_batch_size; /* "auto" picks at most this; 0 = TRAIN_AUTO_BATCH_CAP */
    int64_t epochs;
    double warmup_epochs; /* linear warmup from 0, then cosine to 0 */
    uint64_t seed;
    TrainPrecision precision;
    /* Data. */
    int64_t train_samples; /* 0 = all */
    int64_t val_samples;   /* held out of the training set; default 5000 (or 10%) */
    /* Parallelism. */
    int ranks;           /* CPU ranks (threads) */
    int threads;         /* threads per rank (CPU): OpenBLAS's and the pool's */
    int gpus;            /* GPU ranks: the first gpus usable GPUs; 0 = every one (--gpus) */
    size_t bucket_bytes; /* GPU gradient buckets' size; 0 = the default (tests set it) */
    /* Checkpoints: folder (RUNG_TRIAL_DIR) or NULL; resume after this epoch. */
    const char *checkpoint_dir;
    int64_t resume_epoch;
    /* Several nodes, or NULL for one (borrowed). */
    const TrainNodes *nodes;
} TrainConfig;

/* One epoch's results, as the @rung line reports them. */
typedef struct TrainEpoch {
    int64_t epoch;            /* 1-based: the report's step */
    double train_loss;        /* mean over the epoch's training samples */
    double val_loss, val_acc; /* over the validation split, all ranks */
    double epoch_s;           /* wall time of the epoch's training steps */
    double samples_per_s;     /* training samples / epoch_s */
    int64_t batch_size;       /* the global batch the run trains with ("auto" resolved) */
} TrainEpoch;

/* Called after each epoch (from one thread; on node 0 only); a nonzero
 * return stops the run after that epoch (SIGTERM). */
typedef int (*TrainReportFn)(const TrainEpoch *e, void *ctx);

/* The learning rate at global step `step` (0-based) of `total` steps, with
 * `warmup` warmup steps: lr * (step+1)/warmup during warmup, then cosine
 * from lr to 0 over the rest. */
double train_lr_at(double lr, int64_t step, int64_t warmup, int64_t total);

/* Set (from a signal handler) to end a run after the step in progress; the
 * run then returns 1 with why filled. */
extern volatile sig_atomic_t train_stop_requested;

/* The dropout key of hidden layer `layer`: element j of the row at
 * position p of epoch e's order (data_epoch_order) is kept or dropped by
 * rung_dropout_scale(train_dropout_seed(seed, layer),
 *                    ((e - 1) * n_train + p) * width + j, dropout),
 * in every backend, whatever the split of the batch over ranks. */
uint64_t train_dropout_seed(uint64_t seed, int layer);

/* Initial weights and biases of one layer of D inputs and H outputs whose
 * parameters start at index `first` of the packed vector (W [D,H] then
 * b [H]): uniform in +-1/sqrt(D) (nn.Linear's bound) from a counter-based
 * hash of (seed, index), so every backend and rank count starts alike. */
void train_init_layer(uint64_t seed, int D, int H, size_t first, float *params);

/* Multi-node (cfg->nodes not NULL), once before training: checks that
 * every node runs the same config on the same data with as many local
 * ranks on the same backend. 0, or -1 with why naming the first node that
 * differs from node 0 (every node gets the same message). */
int train_nodes_agree(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
                      int local_ranks, bool cuda, char *why, size_t size);

/* The state a resumed run (cfg->resume_epoch > 0) starts from: the
 * checkpoint of that epoch, loaded by node 0 (or the only node) and sent to
 * every other node. Arrays of n floats. 0, or -1 with why filled. */
int train_resume_state(const TrainConfig *cfg, float *params, float *opt1, float *opt2, size_t n,
                       int64_t *step, char *why, size_t size);

/* Runs the CPU backend. Returns 0, 1 when stopped by train_stop_requested,
 * or -1 with why filled. */
int train_cpu(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
              TrainReportFn report, void *ctx, char *why, size_t size);

/* The CUDA backend (cuda/train_cuda.cu), in the module
 * librung-train-cuda.so that builds with nvcc make beside rung-train.
 * Runs on the visible GPUs; -1 with why filled on failure (no GPU, out of
 * memory with numbers). */
int train_cuda(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
               TrainReportFn report, void *ctx, char *why, size_t size);
/* How many CUDA devices are usable: 0 without a driver or a device. */
int train_cuda_devices(void);
/* A new ncclUniqueId (TRAIN_NCCL_ID_BYTES) for a multi-node run, made by
 * node 0 before the rendezvous; -1 with why filled on failure. */
int train_cuda_unique_id(unsigned char *id, char *why, size_t size);

/* What the module hands rung-train (cuda/train_cuda_module.c): its entry
 * points, behind a version that both sides check. */
#define TRAIN_CUDA_ABI 1
typedef struct TrainCudaBackend {
    int abi; /* TRAIN_CUDA_ABI of the module */
    int (*devices)(void);
    int (*train)(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
                 TrainReportFn report, void *ctx, char *why, size_t size);
    int (*unique_id)(unsigned char *id, char *why, size_t size);
    /* The module's train_stop_requested (it has its own copy of the CPU
     * trainer's pieces): rung-train's SIGTERM handler sets it too. */
    volatile sig_atomic_t *stop;
} TrainCudaBackend;
/* The module's one exported entry (looked up by name with dlsym). */
#define TRAIN_CUDA_BACKEND_SYMBOL "rung_train_cuda_backend"

/* rung-train's side (train_gpu.c): the CUDA backend, loaded on first use.
 * The CUDA libraries cost about 220 MB of memory in every process that
 * loads them, so they are loaded only where a GPU may be: not when
 * CUDA_VISIBLE_DEVICES is empty or -1, nor when the machine has no NVIDIA
 * device node (/dev/nvidiactl, or /dev/dxg under WSL). */
/* Usable GPUs: 0 without the module, a driver or a device. */
int train_gpu_devices(void);
/* train_cuda through the module; -1 with why when it cannot be loaded. */
int train_gpu(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
              TrainReportFn report, void *ctx, char *why, size_t size);
int train_gpu_unique_id(unsigned char *id, char *why, size_t size);
/* Why there is no backend ("" when there is, or it was not asked for yet). */
const char *train_gpu_absent(void);
/* Sets the loaded module's stop flag; async-signal-safe, a no-op without. */
void train_gpu_stop(void);
/* Loads the module at path now, whatever the machine has (tests): 0, or
 * -1 with why (dlerror's words: a missing library or symbol). */
int train_gpu_load(const char *path, char *why, size_t size);

#endif
