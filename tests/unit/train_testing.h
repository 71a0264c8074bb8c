/* Helpers shared by the CPU trainer's unit tests (test_train.c,
 * test_train_nodes.c): a small synthetic task, the model config they
 * train on it, and scratch folders for checkpoints. Header-only, as
 * space_testing.h; include after cmocka.h. */
#ifndef RUNG_TESTS_TRAIN_TESTING_H
#define RUNG_TESTS_TRAIN_TESTING_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "train.h"

/* 4 classes of Gaussian blobs in 20 dimensions. */
static inline void make_blobs(Dataset *d, int64_t n, uint64_t seed)
{
    *d = (Dataset){0}; /* floats: no code */
    d->n = n;
    d->dim = 20;
    d->n_classes = 4;
    d->x = malloc((size_t)n * 20 * sizeof(float));
    d->y = malloc((size_t)n * sizeof(int32_t));
    assert_non_null(d->x);
    assert_non_null(d->y);
    srand((unsigned)seed);
    for (int64_t i = 0; i < n; i++) {
        int c = (int)(i % 4);
        d->y[i] = c;
        for (int j = 0; j < 20; j++) {
            double u = (rand() + 1.0) / (RAND_MAX + 2.0), v = (rand() + 1.0) / (RAND_MAX + 2.0);
            double g = sqrt(-2 * log(u)) * cos(2 * M_PI * v);
            d->x[i * 20 + j] = (float)(g + (j % 4 == c ? 1.5 : 0.0));
        }
    }
}

/* 20 -> 32 -> 16 -> 4, SGD with Nesterov momentum, dropout on. */
static inline TrainConfig small_config(int64_t epochs)
{
    TrainConfig c;
    memset(&c, 0, sizeof c);
    c.n_hidden = 2;
    c.hidden[0] = 32;
    c.hidden[1] = 16;
    c.optimizer = TRAIN_SGD;
    c.lr = 0.05f;
    c.momentum = 0.9f;
    c.nesterov = true;
    c.weight_decay = 1e-4f;
    c.dropout = 0.2f;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    c.batch_size = 64;
    c.epochs = epochs;
    c.warmup_epochs = 1;
    c.seed = 11;
    c.ranks = 1;
    c.threads = 1;
    return c;
}

/* Parameters of the model c describes on d. */
static inline size_t n_params_of(const TrainConfig *c, const Dataset *d)
{
    size_t n = 0;
    int in = d->dim;
    for (int l = 0; l <= c->n_hidden; l++) {
        int h = l < c->n_hidden ? c->hidden[l] : d->n_classes;
        n += (size_t)in * (size_t)h + (size_t)h;
        in = h;
    }
    return n;
}

/* A fresh folder under /tmp whose name starts with prefix. */
static inline char *temp_dir(const char *prefix)
{
    char *dir = malloc(strlen(prefix) + 16);
    assert_non_null(dir);
    sprintf(dir, "/tmp/%s-XXXXXX", prefix);
    assert_non_null(mkdtemp(dir));
    return dir;
}

static inline void remove_dir(char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

#endif
