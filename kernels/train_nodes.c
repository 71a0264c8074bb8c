/* The parts of a multi-node run that both backends share (train.h,
 * docs/trainer.md "Multi-node training"): the check that every node trains
 * the same thing, and the start state of a resumed run, which only node 0
 * has on its disk. */
#include "train.h"

#include <stdio.h>
#include <string.h>

#include "checkpoint.h"
#include "splitmix.h"

/* What each node sends the others once, before training. Plain int64s:
 * the rendezvous has checked that every node has the same byte order. */
typedef struct NodeInfo {
    uint64_t config; /* hash of the hyperparameters */
    uint64_t data;   /* hash of the training and validation samples */
    int64_t n_train, n_val, dim, classes;
    int64_t local_ranks;
    int64_t cuda; /* 1: GPUs, 0: the CPU */
} NodeInfo;

static uint64_t mix(uint64_t h, uint64_t v)
{
    return rung_splitmix_mix(h ^ rung_splitmix_mix(v + RUNG_SPLITMIX_GAMMA));
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = mix(h, w);
    }
    uint64_t tail = 0;
    memcpy(&tail, b + i, n - i);
    return mix(h, tail ^ (uint64_t)n);
}

static uint64_t mix_double(uint64_t h, double d)
{
    return mix_bytes(h, &d, sizeof d);
}

/* Every field that shapes the training, field by field (a struct's padding
 * is not data). ranks and threads are left out: local ranks are compared on
 * their own, with a clearer message, and threads change no result. */
static uint64_t config_hash(const TrainConfig *c)
{
    uint64_t h = 0x636f6e666967ULL;
    h = mix(h, (uint64_t)c->n_hidden);
    for (int l = 0; l < c->n_hidden && l < TRAIN_MAX_LAYERS; l++)
        h = mix(h, (uint64_t)c->hidden[l]);
    h = mix_double(h, c->dropout);
    h = mix(h, (uint64_t)c->optimizer);
    h = mix_double(h, c->lr);
    h = mix_double(h, c->momentum);
    h = mix(h, (uint64_t)c->nesterov);
    h = mix_double(h, c->beta1);
    h = mix_double(h, c->beta2);
    h = mix_double(h, c->eps);
    h = mix_double(h, c->weight_decay);
    h = mix(h, (uint64_t)c->batch_size);
    h = mix(h, (uint64_t)c->max_batch_size);
    h = mix(h, (uint64_t)c->bucket_bytes);
    h = mix(h, (uint64_t)c->epochs);
    h = mix_double(h, c->warmup_epochs);
    h = mix(h, c->seed);
    h = mix(h, (uint64_t)c->precision);
    h = mix(h, (uint64_t)c->train_samples);
    return mix(h, (uint64_t)c->val_samples);
}

static uint64_t data_hash(uint64_t h, const Dataset *d)
{
    if (d == NULL || d->n == 0)
        return mix(h, 0);
    h = mix(h, (uint64_t)d->n);
    size_t values = (size_t)d->n * (size_t)d->dim;
    if (d->code != NULL) /* a byte per feature and its table (data.h) */
        h = mix_bytes(mix_bytes(h, d->code, values), d->lut, DATA_CODEBOOK_SIZE * sizeof(float));
    else
        h = mix_bytes(h, d->x, values * sizeof(float));
    return mix_bytes(h, d->y, (size_t)d->n * sizeof(int32_t));
}

int train_nodes_agree(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
                      int local_ranks, bool cuda, char *why, size_t size)
{
    const TrainNodes *nodes = cfg->nodes;
    if (nodes == NULL)
        return 0;
    NodeInfo mine = {
        .config = config_hash(cfg),
        .data = data_hash(data_hash(0x64617461ULL, train), val),
        .n_train = train->n,
        .n_val = val ? val->n : 0,
        .dim = train->dim,
        .classes = train->n_classes,
        .local_ranks = local_ranks,
        .cuda = cuda,
    };
    NodeInfo all[TRAIN_MAX_NODES];
    if (nodes->nnodes > TRAIN_MAX_NODES) {
        snprintf(why, size, "nodes: %d nodes (at most %d)", nodes->nnodes, TRAIN_MAX_NODES);
        return -1;
    }
    if (rdzv_allgather(nodes->rdzv, &mine, sizeof mine, all, why, size) != 0)
        return -1;
    /* Every node has every NodeInfo: each finds the same first difference. */
    const NodeInfo *z = &all[0];
    for (int i = 1; i < nodes->nnodes; i++) {
        const NodeInfo *o = &all[i];
        if (o->cuda != z->cuda) {
            snprintf(why, size,
                     "nodes: node %d trains on %s, node 0 on %s: every node of a run must use "
                     "the same backend",
                     i, o->cuda ? "GPUs" : "the CPU", z->cuda ? "GPUs" : "the CPU");
        } else if (o->local_ranks != z->local_ranks) {
            snprintf(why, size,
                     "nodes: node %d has %lld %s, node 0 has %lld: every node of a run must have "
                     "as many",
                     i, (long long)o->local_ranks, z->cuda ? "GPUs" : "CPU ranks",
                     (long long)z->local_ranks);
        } else if (o->config != z->config) {
            snprintf(why, size,
                     "nodes: node %d's config differs from node 0's: every node must get the "
                     "same config",
                     i);
        } else if (o->n_train != z->n_train || o->n_val != z->n_val || o->dim != z->dim ||
                   o->classes != z->classes) {
            snprintf(why, size,
                     "nodes: node %d has %lld training and %lld validation samples of %lld "
                     "features in %lld classes, node 0 %lld and %lld of %lld in %lld: every "
                     "node must load the same dataset",
                     i, (long long)o->n_train, (long long)o->n_val, (long long)o->dim,
                     (long long)o->classes, (long long)z->n_train, (long long)z->n_val,
                     (long long)z->dim, (long long)z->classes);
        } else if (o->data != z->data) {
            snprintf(why, size,
                     "nodes: node %d's samples differ from node 0's (their sizes agree): every "
                     "node must load the same dataset files",
                     i);
        } else {
            continue;
        }
        return -1;
    }
    return 0;
}

int train_resume_state(const TrainConfig *cfg, float *params, float *opt1, float *opt2, size_t n,
                       int64_t *step, char *why, size_t size)
{
    const TrainNodes *nodes = cfg->nodes;
    if ((nodes == NULL || nodes->node == 0) &&
        checkpoint_load(cfg->checkpoint_dir, cfg->resume_epoch, params, opt1, opt2, n, step, why,
                        size) != 0)
        return -1; /* the caller tells the other nodes (rdzv_abort) */
    if (nodes == NULL)
        return 0;
    size_t bytes = n * sizeof(float);
    if (rdzv_bcast(nodes->rdzv, params, bytes, why, size) != 0 ||
        rdzv_bcast(nodes->rdzv, opt1, bytes, why, size) != 0 ||
        rdzv_bcast(nodes->rdzv, opt2, bytes, why, size) != 0 ||
        rdzv_bcast(nodes->rdzv, step, sizeof *step, why, size) != 0)
        return -1;
    return 0;
}
