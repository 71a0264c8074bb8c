/* Unit tests of kernels/train_cpu.c and checkpoint.c: the learning-rate
 * schedule; k data-parallel ranks with batch B/k each against one rank with
 * batch B (same parameters after 50 steps, dropout on); a rank's threads
 * against one (the same bits); a resumed run
 * against an uninterrupted one (identical weights); and a real run on a
 * 10,000-sample subset of Fashion-MNIST. Final parameters are read back from
 * the checkpoint files the runs write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "data.h"
#include "train.h"
#include "train_testing.h"

static int quiet(const TrainEpoch *e, void *ctx)
{
    TrainEpoch *last = ctx;
    if (last != NULL)
        *last = *e;
    return 0;
}

/* Stops the run after the epoch *ctx. */
static int stop_at(const TrainEpoch *e, void *ctx)
{
    return e->epoch >= *(int64_t *)ctx;
}

/* Runs c on d, checkpointing into a fresh folder; returns the parameters
 * (and optimizer state) after `epoch`. */
static float *run_and_read(TrainConfig *c, const Dataset *d, int64_t epoch, float **opt1)
{
    char *dir = temp_dir("rung-test-train");
    c->checkpoint_dir = dir;
    char why[512];
    if (train_cpu(c, d, NULL, quiet, NULL, why, sizeof why) != 0)
        fail_msg("train_cpu: %s", why);
    size_t n = n_params_of(c, d);
    float *p = malloc(n * sizeof(float)), *o1 = malloc(n * sizeof(float)),
          *o2 = malloc(n * sizeof(float));
    int64_t step;
    if (checkpoint_load(dir, epoch, p, o1, o2, n, &step, why, sizeof why) != 0)
        fail_msg("%s", why);
    remove_dir(dir);
    c->checkpoint_dir = NULL;
    free(o2);
    if (opt1 != NULL)
        *opt1 = o1;
    else
        free(o1);
    return p;
}

static void test_lr_schedule(void **state)
{
    (void)state;
    /* warmup 10 of 110 steps: 0.1 at step 0, lr at step 9, then cosine. */
    assert_true(fabs(train_lr_at(1.0, 0, 10, 110) - 0.1) < 1e-12);
    assert_true(fabs(train_lr_at(1.0, 9, 10, 110) - 1.0) < 1e-12);
    assert_true(fabs(train_lr_at(1.0, 10, 10, 110) - 1.0) < 1e-12);
    assert_true(fabs(train_lr_at(1.0, 60, 10, 110) - 0.5) < 1e-12);
    assert_true(train_lr_at(1.0, 109, 10, 110) < 0.001);
    assert_true(fabs(train_lr_at(0.3, 5, 0, 0) - 0.3) < 1e-12); /* nothing to schedule */
}

/* 640 samples, batch 64: 10 steps an epoch, 5 epochs = 50 steps. */
static void test_ranks_match_one_rank(void **state)
{
    (void)state;
    Dataset d = {0};
    make_blobs(&d, 640, 3);
    TrainConfig c = small_config(5);
    float *one = run_and_read(&c, &d, 5, NULL);
    size_t n = n_params_of(&c, &d);
    static const int ks[] = {2, 4};
    for (int i = 0; i < 2; i++) {
        c.ranks = ks[i];
        float *many = run_and_read(&c, &d, 5, NULL);
        double worst = 0;
        for (size_t j = 0; j < n; j++)
            worst = fmax(worst, fabs((double)many[j] - (double)one[j]));
        print_message("ranks %d: max |difference| from 1 rank after 50 steps: %.3g\n", ks[i],
                      worst);
        assert_true(worst <= 1e-5);
        free(many);
    }
    /* And the runs did train: the parameters moved from their start. */
    c.ranks = 1;
    c.epochs = 1;
    c.lr = 0;
    float *still = run_and_read(&c, &d, 1, NULL);
    double moved = 0;
    for (size_t j = 0; j < n; j++)
        moved = fmax(moved, fabs((double)still[j] - (double)one[j]));
    assert_true(moved > 1e-2);
    free(still);
    free(one);
    data_free(&d);
}

/* A rank's threads (the pool that gathers its rows and updates its slice,
 * kernels/pool.h) change no bit: 1, 2 and 3 threads per rank, one rank and
 * two, SGD and AdamW, give the same parameters after 50 steps. */
static void test_threads_give_the_same_bits(void **state)
{
    (void)state;
    Dataset d = {0};
    make_blobs(&d, 640, 5);
    size_t n = 0;
    for (int opt = 0; opt < 2; opt++) {
        for (int ranks = 1; ranks <= 2; ranks++) {
            TrainConfig c = small_config(5);
            c.optimizer = opt == 0 ? TRAIN_SGD : TRAIN_ADAMW;
            c.ranks = ranks;
            n = n_params_of(&c, &d);
            c.threads = 1;
            float *one = run_and_read(&c, &d, 5, NULL);
            for (int t = 2; t <= 3; t++) {
                c.threads = t;
                float *many = run_and_read(&c, &d, 5, NULL);
                if (memcmp(one, many, n * sizeof *one) != 0)
                    fail_msg("%s, %d rank(s): %d threads differ from 1", opt ? "adamw" : "sgd",
                             ranks, t);
                free(many);
            }
            free(one);
        }
    }
    assert_true(n > 0);
    data_free(&d);
}

static void test_resume_matches_uninterrupted(void **state)
{
    (void)state;
    Dataset d = {0};
    make_blobs(&d, 640, 5);
    static const TrainOptimizer opts[] = {TRAIN_SGD, TRAIN_ADAMW};
    for (int o = 0; o < 2; o++) {
        TrainConfig c = small_config(5);
        c.optimizer = opts[o];
        c.lr = opts[o] == TRAIN_ADAMW ? 0.003f : 0.05f;
        c.epochs = 4;
        c.ranks = 2;
        float *m_full;
        float *full = run_and_read(&c, &d, 4, &m_full);

        /* A run of the same config told to stop after epoch 2 (as a
         * paused trial is), then a new run resuming after epoch 2. */
        char *dir = temp_dir("rung-test-train");
        char why[512];
        c.checkpoint_dir = dir;
        int64_t stop_after = 2;
        assert_int_equal(train_cpu(&c, &d, NULL, stop_at, &stop_after, why, sizeof why), 0);
        c.resume_epoch = 2;
        TrainEpoch last = {0};
        if (train_cpu(&c, &d, NULL, quiet, &last, why, sizeof why) != 0)
            fail_msg("resume: %s", why);
        assert_int_equal(last.epoch, 4);
        size_t n = n_params_of(&c, &d);
        float *p = malloc(n * sizeof(float)), *o1 = malloc(n * sizeof(float)),
              *o2 = malloc(n * sizeof(float));
        int64_t step;
        assert_int_equal(checkpoint_load(dir, 4, p, o1, o2, n, &step, why, sizeof why), 0);
        assert_int_equal(step, 40);
        assert_memory_equal(p, full, n * sizeof(float));
        assert_memory_equal(o1, m_full, n * sizeof(float));
        /* Every epoch's checkpoint is kept until pruned; a missing one is an
         * error. */
        assert_int_equal(checkpoint_load(dir, 3, p, o1, o2, n, &step, why, sizeof why), 0);
        /* pbt's members keep every multiple of the interval (here 2). */
        checkpoint_prune(dir, 4, 2);
        assert_int_not_equal(checkpoint_load(dir, 3, p, o1, o2, n, &step, why, sizeof why), 0);
        assert_int_not_equal(checkpoint_load(dir, 1, p, o1, o2, n, &step, why, sizeof why), 0);
        assert_int_equal(checkpoint_load(dir, 2, p, o1, o2, n, &step, why, sizeof why), 0);
        assert_int_equal(step, 20);
        checkpoint_prune(dir, 4, 0);
        assert_int_not_equal(checkpoint_load(dir, 2, p, o1, o2, n, &step, why, sizeof why), 0);
        assert_non_null(strstr(why, "ckpt-2.bin"));
        assert_int_equal(checkpoint_load(dir, 4, p, o1, o2, n, &step, why, sizeof why), 0);
        c.resume_epoch = 1;
        assert_int_equal(train_cpu(&c, &d, NULL, quiet, NULL, why, sizeof why), -1);
        assert_non_null(strstr(why, "epoch 1"));
        /* A checkpoint of another model size is refused. */
        c.resume_epoch = 4;
        c.hidden[0] = 33;
        assert_int_equal(train_cpu(&c, &d, NULL, quiet, NULL, why, sizeof why), -1);
        assert_non_null(strstr(why, "not a checkpoint of this model"));
        remove_dir(dir);
        free(p);
        free(o1);
        free(o2);
        free(full);
        free(m_full);
    }
    data_free(&d);
}

/* The check: 3 epochs on the first 10,000 Fashion-MNIST training
 * samples reach val_acc >= 0.80 (1,000 of them held out). */
static void test_fashion_mnist_subset(void **state)
{
    (void)state;
    Dataset train = {0}, val = {0};
    char why[512];
    if (data_load_named("fashion-mnist", NULL, "train", &train, why, sizeof why) != 0)
        fail_msg("%s (scripts/deps.sh installs Debian's dataset-fashion-mnist)", why);
    data_truncate(&train, 10000);
    assert_int_equal(data_split(&train, 1000, 1, &val, why, sizeof why), 0);
    Dataset *others[1] = {&val};
    double mean, sd;
    data_normalize(&train, others, 1, &mean, &sd);
    TrainConfig c = small_config(5);
    c.hidden[0] = 256;
    c.hidden[1] = 128;
    c.dropout = 0;
    c.nesterov = false;
    c.weight_decay = 0;
    c.warmup_epochs = 0;
    c.epochs = 3;
    c.batch_size = 128;
    c.ranks = 2;
    TrainEpoch last = {0};
    assert_int_equal(train_cpu(&c, &train, &val, quiet, &last, why, sizeof why), 0);
    print_message("fashion-mnist 10k, 3 epochs: val_acc %.4f, val_loss %.4f, %.0f samples/s\n",
                  last.val_acc, last.val_loss, last.samples_per_s);
    assert_int_equal(last.epoch, 3);
    assert_true(last.val_acc >= 0.80);
    data_free(&train);
    data_free(&val);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lr_schedule),
        cmocka_unit_test(test_ranks_match_one_rank),
        cmocka_unit_test(test_threads_give_the_same_bits),
        cmocka_unit_test(test_resume_matches_uninterrupted),
        cmocka_unit_test(test_fashion_mnist_subset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
