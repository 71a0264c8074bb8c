/* Unit tests of a multi-node run of the CPU backend (kernels/train_cpu.c,
 * train_nodes.c, over rendezvous.c): real processes (fork), one per node,
 * joined on loopback as rung-train joins them. n nodes of one rank each
 * end with the very parameters of one process with n ranks (bit for bit,
 * dropout on), 2 nodes of 2 ranks with those of 4 ranks to float rounding;
 * only node 0 reports and checkpoints; a resumed run starts from node 0's
 * checkpoint on every node; nodes that disagree (config, ranks, data) are
 * refused with the node named; a SIGTERM on one node stops every node
 * after the same step; a node that dies is named by node 0 at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "data.h"
#include "rendezvous.h"
#include "train.h"
#include "train_testing.h"

#define MAX_NODES 4
#define N_VAL 203 /* validation samples: an uneven split over any rank count */

/* What a node's process did, in memory shared with the test. */
typedef struct Result {
    int rc;          /* of train_cpu (or -1 when the join or check failed) */
    char why[1024];  /* its message */
    int reports;     /* report calls */
    TrainEpoch last; /* the last one */
    volatile int epochs_reported;
} Result;

static Result *results;

/* How a node runs: its config, its data (seed and size), and node 0's
 * folder for checkpoints. */
typedef struct Node {
    TrainConfig cfg;
    uint64_t data_seed;
    int64_t n;
    const char *dir;
} Node;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int count_report(const TrainEpoch *e, void *ctx)
{
    Result *res = ctx;
    res->reports++;
    res->last = *e;
    res->epochs_reported = (int)e->epoch;
    return train_stop_requested != 0;
}

static void on_term(int sig)
{
    (void)sig;
    train_stop_requested = 1;
}

/* One node's process, as rung-train runs it: join, agree, train, then wait
 * for every node (or tell them why not). Never returns. */
static void node_main(int node, int nnodes, int port, const Node *spec)
{
    alarm(60); /* a hang fails the test instead of stalling it */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    Result *res = &results[node];
    Dataset d = {0}, val = {0};
    make_blobs(&d, spec->n, spec->data_seed);
    make_blobs(&val, N_VAL, 9);
    TrainConfig cfg = spec->cfg;
    cfg.checkpoint_dir = node == 0 ? spec->dir : NULL;
    TrainNodes nodes;
    memset(&nodes, 0, sizeof nodes);
    nodes.node = node;
    nodes.nnodes = nnodes;
    RdzvConfig rc = {
        .addr = "127.0.0.1", .port = port, .rank = node, .nranks = nnodes, .join_s = 10};
    Rdzv *r = NULL;
    res->rc = -1;
    if (rdzv_join(&rc, nodes.nccl_id, sizeof nodes.nccl_id, &r, res->why, sizeof res->why) == 0) {
        nodes.rdzv = r;
        cfg.nodes = &nodes;
        if (train_nodes_agree(&cfg, &d, &val, cfg.ranks, false, res->why, sizeof res->why) == 0) {
            res->rc = train_cpu(&cfg, &d, &val, count_report, res, res->why, sizeof res->why);
            if (res->rc == 0 && rdzv_barrier(r, res->why, sizeof res->why) != 0)
                res->rc = -1;
        }
        if (res->rc == -1)
            rdzv_abort(r, res->why);
        rdzv_close(r);
    }
    data_free(&d);
    data_free(&val);
    _exit(0);
}

/* Runs nnodes node processes and waits for them; node `target` (>= 0) gets
 * signal sig once node 0 has reported its first epoch. */
static void run_nodes(int nnodes, const Node *specs, int target, int sig)
{
    memset(results, 0, MAX_NODES * sizeof *results);
    int port = free_port();
    pid_t pid[MAX_NODES];
    for (int i = 0; i < nnodes; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0)
            node_main(i, nnodes, port, &specs[i]);
    }
    if (target >= 0) {
        for (int t = 0; t < 20000 && results[0].epochs_reported < 1; t++)
            sleep_s(0.001);
        kill(pid[target], sig);
    }
    int kill_node = sig == SIGKILL ? target : -1;
    for (int i = 0; i < nnodes; i++) {
        int st = 0;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        if (i != kill_node && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
            fail_msg("node %d ended with status %#x", i, st);
        if (i != kill_node)
            print_message("  node %d: rc %d%s%s\n", i, results[i].rc, results[i].rc ? ": " : "",
                          results[i].rc ? results[i].why : "");
    }
}

/* The parameters in dir's checkpoint of epoch e. */
static float *read_params(const char *dir, int64_t e, size_t n)
{
    float *p = malloc(n * sizeof(float)), *o1 = malloc(n * sizeof(float)),
          *o2 = malloc(n * sizeof(float));
    int64_t step;
    char why[512];
    if (checkpoint_load(dir, e, p, o1, o2, n, &step, why, sizeof why) != 0)
        fail_msg("%s", why);
    free(o1);
    free(o2);
    return p;
}

/* One process with k ranks: the reference. */
static float *one_process(TrainConfig c, int k, int64_t n_samples, TrainEpoch *last)
{
    Dataset d = {0}, val = {0};
    make_blobs(&d, n_samples, 3);
    make_blobs(&val, N_VAL, 9);
    char *dir = temp_dir("rung-test-nodes");
    c.ranks = k;
    c.checkpoint_dir = dir;
    Result r;
    memset(&r, 0, sizeof r);
    char why[512];
    if (train_cpu(&c, &d, &val, count_report, &r, why, sizeof why) != 0)
        fail_msg("train_cpu: %s", why);
    float *p = read_params(dir, c.epochs, n_params_of(&c, &d));
    *last = r.last;
    remove_dir(dir);
    data_free(&d);
    data_free(&val);
    return p;
}

static void test_nodes_match_one_process(void **state)
{
    (void)state;
    TrainConfig c = small_config(4);
    Dataset shape = {.dim = 20, .n_classes = 4};
    size_t n = n_params_of(&c, &shape);
    static const struct {
        int nnodes, ranks;
        bool exact;
    } cases[] = {{2, 1, true}, {4, 1, true}, {2, 2, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int nn = cases[i].nnodes, k = cases[i].ranks;
        TrainEpoch ref_last;
        float *ref = one_process(c, nn * k, 640, &ref_last);
        char *dir = temp_dir("rung-test-nodes");
        Node specs[MAX_NODES];
        for (int j = 0; j < nn; j++) {
            specs[j] = (Node){.cfg = c, .data_seed = 3, .n = 640, .dir = dir};
            specs[j].cfg.ranks = k;
        }
        run_nodes(nn, specs, -1, 0);
        for (int j = 0; j < nn; j++) {
            assert_int_equal(results[j].rc, 0);
            /* Only node 0 reports. */
            assert_int_equal(results[j].reports, j == 0 ? (int)c.epochs : 0);
        }
        float *got = read_params(dir, c.epochs, n);
        double worst = 0;
        for (size_t q = 0; q < n; q++)
            worst = fmax(worst, fabs((double)got[q] - (double)ref[q]));
        print_message("%d nodes x %d ranks against 1 process x %d ranks: max |difference| %.3g; "
                      "val_loss %.9g and %.9g\n",
                      nn, k, nn * k, worst, results[0].last.val_loss, ref_last.val_loss);
        if (cases[i].exact) {
            assert_memory_equal(got, ref, n * sizeof(float));
            assert_true(results[0].last.train_loss == ref_last.train_loss);
            assert_true(results[0].last.val_loss == ref_last.val_loss);
            assert_true(results[0].last.val_acc == ref_last.val_acc);
        } else {
            assert_true(worst <= 1e-5);
        }
        free(got);
        free(ref);
        remove_dir(dir);
    }
}

/* A run resumed after epoch 2 on 2 nodes, of which only node 0 has the
 * checkpoint (the one of an uninterrupted run on one process): the same
 * parameters as that run's after the last epoch. */
static void test_nodes_resume(void **state)
{
    (void)state;
    TrainConfig c = small_config(4);
    Dataset d = {0};
    make_blobs(&d, 640, 3);
    size_t n = n_params_of(&c, &d);
    char *dir = temp_dir("rung-test-nodes");
    TrainConfig one = c;
    one.ranks = 2;
    one.checkpoint_dir = dir;
    Dataset val = {0};
    make_blobs(&val, N_VAL, 9);
    Result r;
    memset(&r, 0, sizeof r);
    char why[512];
    assert_int_equal(train_cpu(&one, &d, &val, count_report, &r, why, sizeof why), 0);
    data_free(&val);
    float *full = read_params(dir, c.epochs, n);
    /* What a run paused after epoch 2 leaves behind. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm '%s/ckpt-3.bin' '%s/ckpt-4.bin'", dir, dir);
    assert_int_equal(system(cmd), 0);
    Node specs[2];
    for (int j = 0; j < 2; j++) {
        specs[j] = (Node){.cfg = c, .data_seed = 3, .n = 640, .dir = dir};
        specs[j].cfg.resume_epoch = 2; /* node 1 has no folder: it gets node 0's state */
    }
    run_nodes(2, specs, -1, 0);
    assert_int_equal(results[0].rc, 0);
    assert_int_equal(results[1].rc, 0);
    assert_int_equal(results[0].reports, 2); /* epochs 3 and 4 */
    assert_int_equal(results[0].last.epoch, 4);
    float *got = read_params(dir, c.epochs, n);
    assert_memory_equal(got, full, n * sizeof(float));
    free(got);
    free(full);
    remove_dir(dir);
    data_free(&d);
}

static void test_nodes_disagree(void **state)
{
    (void)state;
    TrainConfig c = small_config(4);
    Node specs[3];
    for (int j = 0; j < 3; j++)
        specs[j] = (Node){.cfg = c, .data_seed = 3, .n = 640};
    specs[2].cfg.lr = 0.1f;
    run_nodes(3, specs, -1, 0);
    for (int j = 0; j < 3; j++)
        assert_string_equal(results[j].why, "nodes: node 2's config differs from node 0's: every "
                                            "node must get the same config");

    specs[2].cfg = c;
    specs[1].cfg.ranks = 2;
    run_nodes(3, specs, -1, 0);
    for (int j = 0; j < 3; j++)
        assert_string_equal(results[j].why, "nodes: node 1 has 2 CPU ranks, node 0 has 1: every "
                                            "node of a run must have as many");

    specs[1].cfg = c;
    specs[1].data_seed = 4; /* same sizes, other samples */
    run_nodes(3, specs, -1, 0);
    for (int j = 0; j < 3; j++)
        assert_string_equal(results[j].why,
                            "nodes: node 1's samples differ from node 0's (their sizes agree): "
                            "every node must load the same dataset files");

    specs[1].data_seed = 3;
    specs[1].n = 600;
    run_nodes(3, specs, -1, 0);
    for (int j = 0; j < 3; j++)
        assert_non_null(strstr(results[j].why, "nodes: node 1 has 600 training and 203 validation "
                                               "samples of 20 features in 4 classes, node 0 640"));
}

/* A SIGTERM on node 1 alone: both nodes stop after the same step, both as
 * stopped by a signal. */
static void test_nodes_sigterm(void **state)
{
    (void)state;
    TrainConfig c = small_config(4);
    c.epochs = 1000; /* far longer than the test */
    Node specs[2];
    for (int j = 0; j < 2; j++)
        specs[j] = (Node){.cfg = c, .data_seed = 3, .n = 6400};
    run_nodes(2, specs, 1, SIGTERM);
    for (int j = 0; j < 2; j++) {
        assert_int_equal(results[j].rc, 1);
        assert_non_null(strstr(results[j].why, "stopped by a signal in epoch "));
    }
    assert_string_equal(results[0].why, results[1].why);
}

/* Node 1 killed mid-run: node 0 names it at once. */
static void test_node_dies(void **state)
{
    (void)state;
    TrainConfig c = small_config(4);
    c.epochs = 1000;
    Node specs[3];
    for (int j = 0; j < 3; j++)
        specs[j] = (Node){.cfg = c, .data_seed = 3, .n = 640};
    run_nodes(3, specs, 1, SIGKILL);
    assert_int_equal(results[0].rc, -1);
    assert_non_null(strstr(results[0].why, "rendezvous: rank 1 (127.0.0.1:"));
    assert_non_null(strstr(results[0].why, ") closed its connection"));
    /* Node 2 hears it from node 0. */
    assert_int_equal(results[2].rc, -1);
    assert_non_null(strstr(results[2].why, "rendezvous: rank 0 failed: rank 1 (127.0.0.1:"));
}

int main(void)
{
    results = mmap(NULL, MAX_NODES * sizeof *results, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (results == MAP_FAILED)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_match_one_process),
        cmocka_unit_test(test_nodes_resume),
        cmocka_unit_test(test_nodes_disagree),
        cmocka_unit_test(test_nodes_sigterm),
        cmocka_unit_test(test_node_dies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
