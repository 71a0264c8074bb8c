/* The CPU backend of rung-train: an MLP trained data-parallel over `ranks`
 * threads of one process.
 *
 * Structure: one parameter vector (weights and biases of every layer, one
 * after the other) shared by all ranks, one gradient vector per rank. A step:
 * each rank runs forward and backward on its shard of the global batch
 * (DistributedSampler order), with its loss gradient scaled by 1/(global
 * batch); a barrier; then rank r sums slice r of every rank's gradient and
 * applies the optimizer to slice r of the parameters (a reduce-scatter and
 * the update in one pass over shared memory, no copy of the model); a
 * barrier. The sum runs in rank order, so every run with the same ranks is
 * bit-identical, and k ranks with batch B/k each match 1 rank with batch B
 * up to float rounding.
 *
 * Dropout masks are keyed by (seed, layer) and the sample's position in the
 * epoch's order, so they do not depend on how a batch is split.
 *
 * Several nodes (cfg->nodes): each process runs its k ranks as above, as
 * global ranks node * k .. node * k + k-1 of nnodes * k, which pick the data
 * shards. A step's reduction then goes in three parts: slice r of the
 * node's sum into rank 0's gradient; rank 0 sums that vector over the nodes
 * through the rendezvous (a TCP all-reduce through node 0, in node order;
 * a halt flag rides in its last element, so a SIGTERM on any node stops
 * every node after the same step); then each rank updates its slice. The
 * epoch's sums and the decision to stop go the same way. With one rank per
 * node the sum is the one a single process of nnodes ranks computes, bit for
 * bit; with more, the same up to float rounding (the order of addition
 * differs). Only node 0 reports and writes checkpoints. */
#include "train.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "checkpoint.h"
#include "ops.h"
#include "pool.h"
#include "splitmix.h"

double train_lr_at(double lr, int64_t step, int64_t warmup, int64_t total)
{
    if (warmup > 0 && step < warmup)
        return lr * (double)(step + 1) / (double)warmup;
    int64_t span = total - warmup;
    if (span <= 0)
        return lr;
    double progress = (double)(step - warmup) / (double)span;
    return lr * 0.5 * (1.0 + cos(M_PI * progress));
}

volatile sig_atomic_t train_stop_requested;

uint64_t train_dropout_seed(uint64_t seed, int layer)
{
    return seed * 0x100000001b3ULL + 0x5851f42d4c957f2dULL * (uint64_t)(layer + 1);
}

typedef struct Layer {
    int D, H;
    size_t w, b; /* offsets of W [D, H] and b [H] in the parameter vector */
} Layer;

typedef struct Run Run;

typedef struct Rank {
    Run *run;
    int r;         /* local rank: 0..k-1 */
    int g;         /* global rank: node * k + r */
    float *grad;   /* n_params, and one more: the halt flag of a multi-node step */
    float **act;   /* act[0] = input rows, act[l+1] = layer l's output */
    float **delta; /* gradients of act[l], l >= 1 */
    int32_t *y;
    int64_t *idx;
    Pool *pool;      /* the rank's threads for its elementwise work; NULL: its own alone */
    double loss_sum; /* this epoch's training loss, summed over its samples */
    double val_loss;
    int64_t val_correct;
} Rank;

struct Run {
    const TrainConfig *cfg;
    const Dataset *train, *val;
    int n_layers;
    Layer layers[TRAIN_MAX_LAYERS + 1];
    size_t n_params;
    float *params;
    float *opt1, *opt2; /* sgd: velocity; adamw: m and v */
    int64_t adam_t;
    int k;                   /* ranks of this process */
    int K;                   /* ranks of the run: k times the nodes */
    const TrainNodes *nodes; /* NULL: one node */
    Rank ranks[TRAIN_MAX_RANKS];
    pthread_barrier_t barrier;
    int64_t *perm;
    int64_t epoch; /* being trained, 1-based */
    int64_t step;  /* global step, 0-based */
    int64_t steps_per_epoch, total_steps, warmup_steps;
    float lr_now;
    int64_t batch_start, batch_len;
    bool stop; /* set by rank 0 after a report asked to stop */
    bool halt; /* set by rank 0: stop after this step (SIGTERM) */
    TrainReportFn report;
    void *ctx;
    int failed;
    char why[512];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void train_init_layer(uint64_t seed, int D, int H, size_t first, float *params)
{
    uint64_t key = seed ^ 0x696e6974ULL;
    float bound = 1.0f / sqrtf((float)D);
    size_t n = (size_t)D * (size_t)H + (size_t)H;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = rung_splitmix_at(key, first + i + 1);
        double u = (double)(x >> 11) * 0x1.0p-53;
        params[first + i] = (float)((2.0 * u - 1.0) * bound);
    }
}

static void init_params(Run *run)
{
    for (int l = 0; l < run->n_layers; l++) {
        const Layer *L = &run->layers[l];
        train_init_layer(run->cfg->seed, L->D, L->H, L->w, run->params);
    }
}

/* Forward of rows x[m] through the net; returns the logits (act[last]). In
 * training, dropout after each hidden layer, row i being at position pos[i]
 * of the epoch's order. */
static float *forward(Run *run, Rank *rk, int64_t m, bool training, const int64_t *pos)
{
    const TrainConfig *cfg = run->cfg;
    for (int l = 0; l < run->n_layers; l++) {
        const Layer *L = &run->layers[l];
        bool hidden = l < run->n_layers - 1;
        ops_linear_fwd(rk->act[l], run->params + L->w, run->params + L->b, rk->act[l + 1], (int)m,
                       L->D, L->H, hidden);
        if (hidden && training && cfg->dropout > 0) {
            uint64_t key = train_dropout_seed(cfg->seed, l);
            uint64_t base = (uint64_t)(run->epoch - 1) * (uint64_t)run->train->n;
            for (int64_t i = 0; i < m; i++)
                ops_dropout_fwd(rk->act[l + 1] + i * L->H, (size_t)L->H, cfg->dropout, key,
                                (base + (uint64_t)pos[i]) * (uint64_t)L->H);
        }
    }
    return rk->act[run->n_layers];
}

static void backward(Run *run, Rank *rk, int64_t m, const int64_t *pos)
{
    const TrainConfig *cfg = run->cfg;
    for (int l = run->n_layers - 1; l >= 0; l--) {
        const Layer *L = &run->layers[l];
        bool hidden = l < run->n_layers - 1;
        if (hidden && cfg->dropout > 0) {
            uint64_t key = train_dropout_seed(cfg->seed, l);
            uint64_t base = (uint64_t)(run->epoch - 1) * (uint64_t)run->train->n;
            for (int64_t i = 0; i < m; i++)
                ops_dropout_bwd(rk->delta[l + 1] + i * L->H, (size_t)L->H, cfg->dropout, key,
                                (base + (uint64_t)pos[i]) * (uint64_t)L->H);
        }
        ops_linear_bwd(rk->act[l], run->params + L->w, rk->act[l + 1], rk->delta[l + 1],
                       l > 0 ? rk->delta[l] : NULL, rk->grad + L->w, rk->grad + L->b, (int)m, L->D,
                       L->H, hidden);
    }
}

/* A batch's rows gathered by the rank's threads, each a run of rows. */
typedef struct GatherJob {
    const Dataset *d;
    const int64_t *idx;
    int64_t m;
    float *x;
    int32_t *y;
} GatherJob;

static void gather_part(void *arg, int part, int parts)
{
    const GatherJob *j = arg;
    size_t lo, hi;
    pool_range((size_t)j->m, part, parts, &lo, &hi);
    data_gather(j->d, j->idx + lo, (int64_t)(hi - lo), j->x + lo * (size_t)j->d->dim, j->y + lo);
}

static void gather(Rank *rk, const Dataset *d, int64_t m)
{
    GatherJob j = {.d = d, .idx = rk->idx, .m = m, .x = rk->act[0], .y = rk->y};
    pool_run(rk->pool, gather_part, &j);
}

/* Slice r of the parameters: [lo, hi), split evenly over the ranks. */
static void slice_of(const Run *run, int r, size_t *lo, size_t *hi)
{
    size_t per = (run->n_params + (size_t)run->k - 1) / (size_t)run->k;
    *lo = per * (size_t)r < run->n_params ? per * (size_t)r : run->n_params;
    *hi = *lo + per < run->n_params ? *lo + per : run->n_params;
}

/* Slice r of the sum of every local rank's gradient, in rank order, into
 * rank 0's (after the barrier). */
static void reduce_slice(Run *run, int r)
{
    size_t lo, hi;
    slice_of(run, r, &lo, &hi);
    float *g = run->ranks[0].grad;
    for (int q = 1; q < run->k; q++) {
        const float *gq = run->ranks[q].grad;
        for (size_t i = lo; i < hi; i++)
            g[i] += gq[i];
    }
}

/* The optimizer on parameters [lo, hi), from the summed gradient in rank
 * 0's. */
static void update_range(Run *run, size_t lo, size_t hi)
{
    const TrainConfig *cfg = run->cfg;
    if (hi <= lo)
        return;
    float *g = run->ranks[0].grad;
    if (cfg->optimizer == TRAIN_SGD)
        ops_sgd(run->params + lo, run->opt1 + lo, g + lo, hi - lo, run->lr_now, cfg->momentum,
                cfg->weight_decay, cfg->nesterov);
    else
        ops_adamw(run->params + lo, run->opt1 + lo, run->opt2 + lo, g + lo, hi - lo, run->lr_now,
                  cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay, run->adam_t);
}

typedef struct UpdateJob {
    Run *run;
    size_t lo, hi;
} UpdateJob;

static void update_part(void *arg, int part, int parts)
{
    const UpdateJob *j = arg;
    size_t a, b;
    pool_range(j->hi - j->lo, part, parts, &a, &b);
    update_range(j->run, j->lo + a, j->lo + b);
}

/* The optimizer on slice r, by rank r's threads. */
static void update_slice(Run *run, int r)
{
    UpdateJob j = {.run = run};
    slice_of(run, r, &j.lo, &j.hi);
    pool_run(run->ranks[r].pool, update_part, &j);
}

/* Multi-node, on rank 0 between the barriers: this node's summed gradient
 * becomes the sum over every node, and the halt flag (its last element)
 * whether any node was asked to stop. A failure stops this node at once;
 * train_main tells the others (rdzv_abort). */
static void exchange_step(Run *run)
{
    float *g = run->ranks[0].grad;
    g[run->n_params] = run->halt ? 1.0f : 0.0f;
    if (rdzv_allreduce(run->nodes->rdzv, g, run->n_params + 1, RDZV_SUM_F32, run->why,
                       sizeof run->why) != 0) {
        run->failed = 1;
        run->halt = true;
        return;
    }
    run->halt = g[run->n_params] > 0.0f;
}

/* Validation: global rank g takes rows [g*n/K, (g+1)*n/K) in batches. */
static void validate(Run *run, Rank *rk)
{
    const Dataset *v = run->val;
    rk->val_loss = 0;
    rk->val_correct = 0;
    if (v == NULL || v->n == 0)
        return;
    int64_t lo = v->n * rk->g / run->K, hi = v->n * (rk->g + 1) / run->K;
    int64_t bs = run->cfg->batch_size;
    int C = run->layers[run->n_layers - 1].H;
    for (int64_t s = lo; s < hi; s += bs) {
        int64_t m = hi - s < bs ? hi - s : bs;
        for (int64_t i = 0; i < m; i++)
            rk->idx[i] = s + i;
        gather(rk, v, m);
        float *logits = forward(run, rk, m, false, NULL);
        int64_t correct = 0;
        rk->val_loss += ops_softmax_xent(logits, rk->y, NULL, (int)m, C, 0, &correct);
        rk->val_correct += correct;
    }
}

static void *rank_main(void *arg)
{
    Rank *rk = arg;
    Run *run = rk->run;
    const TrainConfig *cfg = run->cfg;
    int C = run->layers[run->n_layers - 1].H;
    int64_t n = run->train->n;
    for (;;) {
        /* Rank 0 has set up the epoch (order, or stop) before this barrier. */
        pthread_barrier_wait(&run->barrier);
        if (run->stop)
            break;
        double t0 = now_s();
        rk->loss_sum = 0;
        for (int64_t start = 0; start < n; start += cfg->batch_size) {
            int64_t len = n - start < cfg->batch_size ? n - start : cfg->batch_size;
            int64_t m = data_shard(run->perm, n, start, len, rk->g, run->K, rk->idx);
            /* Positions in the epoch's order, for the dropout masks. */
            int64_t *where = rk->idx + cfg->batch_size; /* second half of idx */
            for (int64_t i = 0; i < m; i++)
                where[i] = start + rk->g + i * run->K;
            gather(rk, run->train, m);
            if (m > 0) {
                float *logits = forward(run, rk, m, true, where);
                int64_t correct;
                rk->loss_sum += ops_softmax_xent(logits, rk->y, rk->delta[run->n_layers], (int)m, C,
                                                 1.0f / (float)len, &correct);
                backward(run, rk, m, where);
            } else {
                memset(rk->grad, 0, run->n_params * sizeof *rk->grad);
            }
            if (rk->r == 0) {
                run->lr_now = (float)train_lr_at(cfg->lr, run->step, run->warmup_steps,
                                                 run->total_steps);
                run->adam_t = run->step + 1;
                run->halt = train_stop_requested != 0; /* SIGTERM: this step is the last */
            }
            pthread_barrier_wait(&run->barrier); /* every gradient is in */
            reduce_slice(run, rk->r);
            if (run->nodes != NULL) {
                pthread_barrier_wait(&run->barrier); /* this node's sum is in */
                if (rk->r == 0)
                    exchange_step(run);
                pthread_barrier_wait(&run->barrier); /* every node's */
            }
            if (!run->failed)
                update_slice(run, rk->r);
            pthread_barrier_wait(&run->barrier); /* the parameters are updated */
            if (rk->r == 0)
                run->step++;
            if (run->halt)
                break;
        }
        if (run->halt)
            break;
        double t1 = now_s();
        validate(run, rk);
        pthread_barrier_wait(&run->barrier); /* validation done */
        if (rk->r == 0) {
            TrainEpoch e = {.epoch = run->epoch, .batch_size = cfg->batch_size};
            /* Training loss, validation loss, hits: this node's ranks in
             * order, then summed over the nodes. */
            double sums[3] = {0, 0, 0};
            for (int q = 0; q < run->k; q++) {
                sums[0] += run->ranks[q].loss_sum;
                sums[1] += run->ranks[q].val_loss;
                sums[2] += (double)run->ranks[q].val_correct;
            }
            bool node0 = run->nodes == NULL || run->nodes->node == 0;
            if (run->nodes != NULL && rdzv_allreduce(run->nodes->rdzv, sums, 3, RDZV_SUM_F64,
                                                     run->why, sizeof run->why) != 0) {
                run->failed = 1;
                run->stop = true;
            }
            e.train_loss = sums[0] / (double)n;
            int64_t nv = run->val ? run->val->n : 0;
            e.val_loss = nv ? sums[1] / (double)nv : NAN;
            e.val_acc = nv ? sums[2] / (double)nv : NAN;
            e.epoch_s = t1 - t0;
            e.samples_per_s = (double)n / (t1 - t0);
            if (!run->failed && node0 && cfg->checkpoint_dir != NULL &&
                checkpoint_save(cfg->checkpoint_dir, run->epoch, run->params, run->opt1, run->opt2,
                                run->n_params, run->step, run->why, sizeof run->why) != 0) {
                run->failed = 1;
                run->stop = true;
            }
            if (!run->stop && node0 && run->report(&e, run->ctx) != 0)
                run->stop = true;
            if (run->epoch >= cfg->epochs)
                run->stop = true;
            if (run->nodes != NULL && !run->failed) {
                /* Every node stops when any does; when any was asked to
                 * by a signal, every node ends as stopped by a signal, so
                 * that none reports a finished run that was cut short. */
                int64_t code = train_stop_requested ? 2 : run->stop ? 1 : 0;
                if (rdzv_allreduce(run->nodes->rdzv, &code, 1, RDZV_MAX_I64, run->why,
                                   sizeof run->why) != 0) {
                    run->failed = 1;
                    code = 1;
                }
                run->stop = code != 0;
                run->halt = code == 2;
            }
            if (!run->stop) {
                run->epoch++;
                data_epoch_order(n, cfg->seed, run->epoch, run->perm);
            }
        }
    }
    return NULL;
}

static void run_free(Run *run)
{
    for (int r = 0; r < TRAIN_MAX_RANKS; r++) {
        Rank *rk = &run->ranks[r];
        free(rk->grad);
        for (int l = 0; rk->act && l <= run->n_layers; l++)
            free(rk->act[l]);
        for (int l = 0; rk->delta && l <= run->n_layers; l++)
            free(rk->delta[l]);
        free(rk->act);
        free(rk->delta);
        free(rk->y);
        free(rk->idx);
        pool_free(rk->pool);
    }
    free(run->params);
    free(run->opt1);
    free(run->opt2);
    free(run->perm);
}

int train_cpu(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
              TrainReportFn report, void *ctx, char *why, size_t size)
{
    int nnodes = cfg->nodes ? cfg->nodes->nnodes : 1;
    if (cfg->ranks < 1 || cfg->ranks > TRAIN_MAX_RANKS || nnodes < 1 || nnodes > TRAIN_MAX_NODES ||
        cfg->batch_size < (int64_t)cfg->ranks * nnodes || cfg->n_hidden < 0 ||
        cfg->n_hidden > TRAIN_MAX_LAYERS || train->n < 1) {
        snprintf(why, size,
                 "train_cpu: bad configuration (ranks %d on %d node(s), batch_size %lld, %lld "
                 "samples)",
                 cfg->ranks, nnodes, (long long)cfg->batch_size, (long long)train->n);
        return -1;
    }
    Run *run = calloc(1, sizeof *run);
    if (run == NULL) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    run->cfg = cfg;
    run->train = train;
    run->val = val;
    run->k = cfg->ranks;
    run->K = cfg->ranks * nnodes;
    run->nodes = cfg->nodes;
    run->report = report;
    run->ctx = ctx;
    /* Layout: input -> hidden... -> classes. */
    int in = train->dim;
    size_t off = 0;
    run->n_layers = cfg->n_hidden + 1;
    int max_width = in;
    for (int l = 0; l < run->n_layers; l++) {
        int H = l < cfg->n_hidden ? cfg->hidden[l] : train->n_classes;
        run->layers[l] = (Layer){.D = in, .H = H, .w = off, .b = off + (size_t)in * (size_t)H};
        off += (size_t)in * (size_t)H + (size_t)H;
        in = H;
        if (H > max_width)
            max_width = H;
    }
    run->n_params = off;
    int64_t local = (cfg->batch_size + run->k - 1) / run->k;
    bool ok = (run->params = calloc(off, sizeof(float))) != NULL &&
              (run->opt1 = calloc(off, sizeof(float))) != NULL &&
              (run->opt2 = calloc(off, sizeof(float))) != NULL &&
              (run->perm = malloc((size_t)train->n * sizeof(int64_t))) != NULL;
    for (int r = 0; ok && r < run->k; r++) {
        Rank *rk = &run->ranks[r];
        rk->run = run;
        rk->r = r;
        rk->g = (cfg->nodes ? cfg->nodes->node : 0) * run->k + r;
        int64_t rows = local > cfg->batch_size ? local : cfg->batch_size; /* validation batches */
        ok = (rk->grad = calloc(off + 1, sizeof(float))) != NULL &&
             (rk->act = calloc((size_t)run->n_layers + 1, sizeof(float *))) != NULL &&
             (rk->delta = calloc((size_t)run->n_layers + 1, sizeof(float *))) != NULL &&
             (rk->y = malloc((size_t)rows * sizeof(int32_t))) != NULL &&
             (rk->idx = malloc((size_t)rows * 2 * sizeof(int64_t))) != NULL;
        for (int l = 0; ok && l <= run->n_layers; l++) {
            int w = l == 0 ? train->dim : run->layers[l - 1].H;
            ok = (rk->act[l] = malloc((size_t)rows * (size_t)w * sizeof(float))) != NULL &&
                 (rk->delta[l] = malloc((size_t)rows * (size_t)w * sizeof(float))) != NULL;
        }
    }
    (void)max_width;
    if (!ok) {
        snprintf(why, size, "out of memory for a %zu-parameter model at batch_size %lld", off,
                 (long long)cfg->batch_size);
        run_free(run);
        free(run);
        return -1;
    }
    run->steps_per_epoch = (train->n + cfg->batch_size - 1) / cfg->batch_size;
    run->total_steps = run->steps_per_epoch * cfg->epochs;
    run->warmup_steps = (int64_t)llround(cfg->warmup_epochs * (double)run->steps_per_epoch);
    run->epoch = 1;
    init_params(run);
    if (cfg->resume_epoch > 0) {
        int64_t step;
        if (train_resume_state(cfg, run->params, run->opt1, run->opt2, run->n_params, &step, why,
                               size) != 0) {
            run_free(run);
            free(run);
            return -1;
        }
        run->step = step;
        run->epoch = cfg->resume_epoch + 1;
    }
    if (run->epoch > cfg->epochs) {
        run_free(run);
        free(run);
        return 0;
    }
    data_epoch_order(train->n, cfg->seed, run->epoch, run->perm);
    blas_set_threads(cfg->threads > 0 ? cfg->threads : 1);
    for (int r = 0; r < run->k; r++)
        run->ranks[r].pool = pool_new(cfg->threads); /* NULL (one thread) on failure */
    pthread_barrier_init(&run->barrier, NULL, (unsigned)run->k);
    pthread_t th[TRAIN_MAX_RANKS];
    int started = 0;
    for (int r = 1; r < run->k; r++) {
        if (pthread_create(&th[r], NULL, rank_main, &run->ranks[r]) != 0)
            break;
        started++;
    }
    if (started != run->k - 1) {
        /* Cannot happen short of resource exhaustion; the barrier would hang. */
        snprintf(why, size, "cannot start %d rank threads", run->k - 1);
        abort();
    }
    rank_main(&run->ranks[0]);
    for (int r = 1; r < run->k; r++)
        pthread_join(th[r], NULL);
    pthread_barrier_destroy(&run->barrier);
    int rc = 0;
    if (run->halt) {
        snprintf(why, size, "stopped by a signal in epoch %lld, after step %lld",
                 (long long)run->epoch, (long long)run->step);
        rc = 1;
    }
    if (run->failed) {
        snprintf(why, size, "%s", run->why);
        rc = -1;
    }
    run_free(run);
    free(run);
    return rc;
}
