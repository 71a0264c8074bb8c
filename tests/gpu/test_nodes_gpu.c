/* The CUDA trainer over two nodes (kernels/cuda/train_cuda.cu with
 * TrainNodes; docs/trainer.md, "Multi-node training"), on one machine: two
 * processes stand for the two nodes. Each gets its own NCCL_HOSTID, so
 * NCCL takes them for two hosts (it refuses two ranks of one host on one
 * GPU) and connects them through its socket transport on loopback, as it
 * connects two machines; both train on GPU 0. They join as rung-train
 * joins (the rendezvous carrying node 0's ncclUniqueId) and check:
 *
 * - the two nodes report, through node 0 alone, what the CPU trainer with
 *   2 ranks reports (float tolerance), with auto batch agreed on and only
 *   node 0 checkpointing;
 * - a run resumed after epoch 2 from node 0's checkpoint reports what the
 *   uninterrupted one did;
 * - node 1 killed (SIGKILL) mid-run: node 0 fails within seconds;
 * - SIGTERM to both: both end as stopped by a signal, within seconds.
 *
 * The parent process never touches CUDA (a CUDA context does not survive
 * fork): each child looks for a device, and without one the test prints
 * "skipped: no CUDA device" and exits with RUNG_TEST_SKIPPED, which
 * tests/gpu/gpu.cmake makes ctest count as skipped. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "data.h"
#include "rendezvous.h"
#include "train.h"

#define MAX_EPOCHS 8
#define RUNG_TEST_SKIPPED 77 /* SKIP_RETURN_CODE in gpu.cmake */

typedef struct Log {
    int n;
    TrainEpoch e[MAX_EPOCHS];
} Log;

/* What a node's process did, in memory shared with the parent. */
typedef struct Result {
    int skipped;   /* no CUDA device */
    int rc;        /* train_cuda's, or -1 when the join or the check failed */
    int signalled; /* train_stop_requested was set when it ended */
    char why[1024];
    Log log;
    volatile int reported; /* epochs reported so far */
    double ended_s;        /* CLOCK_MONOTONIC when it finished */
} Result;

static Result *results; /* two */

static int checks, failed;

static void expect(bool ok, const char *what, const char *detail)
{
    checks++;
    failed += !ok;
    printf("%-5s %s%s%s\n", ok ? "ok" : "FAIL", what, detail ? ": " : "", detail ? detail : "");
    fflush(stdout);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *s)
{
    return (float)((double)(rng_next(s) >> 11) * 0x1p-53);
}

/* Overlapping clusters, one per class (test_train_gpu.c's data). */
static Dataset synth(int64_t n, int dim, int classes, uint64_t seed)
{
    Dataset d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.dim = dim;
    d.n_classes = classes;
    d.x = malloc((size_t)n * (size_t)dim * sizeof(float));
    d.y = malloc((size_t)n * sizeof(int32_t));
    float *centers = malloc((size_t)classes * (size_t)dim * sizeof(float));
    if (d.x == NULL || d.y == NULL || centers == NULL) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    uint64_t s = 7;
    for (int i = 0; i < classes * dim; i++)
        centers[i] = 2.0f * uniform(&s) - 1.0f;
    s = seed;
    for (int64_t i = 0; i < n; i++) {
        int c = (int)(rng_next(&s) % (uint64_t)classes);
        d.y[i] = c;
        for (int j = 0; j < dim; j++)
            d.x[i * dim + j] = centers[c * dim + j] + 1.6f * uniform(&s) - 0.8f;
    }
    free(centers);
    return d;
}

static TrainConfig base_config(void)
{
    TrainConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_hidden = 2;
    cfg.hidden[0] = 64;
    cfg.hidden[1] = 32;
    cfg.dropout = 0.2f;
    cfg.optimizer = TRAIN_SGD;
    cfg.lr = 0.05f;
    cfg.momentum = 0.9f;
    cfg.nesterov = true;
    cfg.beta1 = 0.9f;
    cfg.beta2 = 0.999f;
    cfg.eps = 1e-8f;
    cfg.weight_decay = 5e-4f;
    cfg.batch_size = 96; /* 1000 samples: 10 full steps and a short one of 40 */
    cfg.epochs = 3;
    cfg.warmup_epochs = 0.5;
    cfg.seed = 17;
    cfg.precision = TRAIN_FP32;
    cfg.ranks = 1;
    cfg.threads = 1;
    return cfg;
}

static bool close_to(double got, double ref, double atol, double rtol)
{
    return fabs(got - ref) <= atol + rtol * fabs(ref);
}

/* Epoch by epoch: losses within rtol, accuracy within acc_tol. */
static void compare(const char *name, const Log *got, const Log *ref, double rtol, double acc_tol)
{
    bool ok = got->n == ref->n && got->n > 0;
    for (int i = 0; ok && i < got->n; i++) {
        const TrainEpoch *g = &got->e[i], *c = &ref->e[i];
        ok = g->epoch == c->epoch && close_to(g->train_loss, c->train_loss, 1e-5, rtol) &&
             close_to(g->val_loss, c->val_loss, 1e-5, rtol) &&
             fabs(g->val_acc - c->val_acc) <= acc_tol;
    }
    char detail[512];
    if (got->n > 0 && ref->n > 0) {
        const TrainEpoch *g = &got->e[got->n - 1], *c = &ref->e[ref->n - 1];
        snprintf(detail, sizeof detail,
                 "%d/%d epochs; epoch %lld: train loss %.6f / %.6f, val loss %.6f / %.6f, val "
                 "acc %.4f / %.4f (2 nodes / reference)",
                 got->n, ref->n, (long long)g->epoch, g->train_loss, c->train_loss, g->val_loss,
                 c->val_loss, g->val_acc, c->val_acc);
    } else {
        snprintf(detail, sizeof detail, "%d / %d epochs reported", got->n, ref->n);
    }
    expect(ok, name, detail);
}

static int record(const TrainEpoch *e, void *ctx)
{
    Result *res = ctx;
    if (res->log.n < MAX_EPOCHS)
        res->log.e[res->log.n++] = *e;
    res->reported = (int)e->epoch;
    return train_stop_requested != 0;
}

static void on_term(int sig)
{
    (void)sig;
    train_stop_requested = 1;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* One node, as rung-train runs it; never returns. */
static void node_main(int node, int port, TrainConfig cfg, const char *dir)
{
    alarm(300); /* a hang fails the test instead of stalling it */
    Result *res = &results[node];
    char host[64];
    snprintf(host, sizeof host, "rung-test-node-%d", node);
    setenv("NCCL_HOSTID", host, 1);
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    if (getenv("NCCL_SOCKET_IFNAME") == NULL)
        setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    res->rc = -1;
    if (train_cuda_devices() == 0) {
        res->skipped = 1;
        _exit(0);
    }
    Dataset train = synth(1000, 24, 5, 1), val = synth(300, 24, 5, 2);
    TrainNodes nodes;
    memset(&nodes, 0, sizeof nodes);
    nodes.node = node;
    nodes.nnodes = 2;
    cfg.checkpoint_dir = node == 0 ? dir : NULL;
    RdzvConfig rc = {.addr = "127.0.0.1", .port = port, .rank = node, .nranks = 2, .join_s = 30};
    Rdzv *r = NULL;
    if ((node != 0 || train_cuda_unique_id(nodes.nccl_id, res->why, sizeof res->why) == 0) &&
        rdzv_join(&rc, nodes.nccl_id, sizeof nodes.nccl_id, &r, res->why, sizeof res->why) == 0) {
        nodes.rdzv = r;
        cfg.nodes = &nodes;
        if (train_nodes_agree(&cfg, &train, &val, 1, true, res->why, sizeof res->why) == 0) {
            res->rc = train_cuda(&cfg, &train, &val, record, res, res->why, sizeof res->why);
            if (res->rc == 0 && rdzv_barrier(r, res->why, sizeof res->why) != 0)
                res->rc = -1;
        }
        if (res->rc == -1)
            rdzv_abort(r, res->why);
        rdzv_close(r);
    }
    res->ended_s = now_s();
    res->signalled = train_stop_requested != 0;
    data_free(&train);
    data_free(&val);
    _exit(0);
}

/* Runs both nodes; once node 0 has reported an epoch, sends sig (when not
 * 0) to the nodes in mask (bit i: node i) and returns when it was sent
 * through *sent_s. Returns false when a child could not run. */
static bool run_nodes(TrainConfig cfg, const char *dir, int sig, int mask, double *sent_s)
{
    memset(results, 0, 2 * sizeof *results);
    int port = free_port();
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        fflush(stdout);
        pid[i] = fork();
        if (pid[i] < 0)
            return false;
        if (pid[i] == 0)
            node_main(i, port, cfg, dir);
    }
    if (sig != 0) {
        for (int t = 0; t < 60000 && results[0].reported < 1 && !results[0].skipped; t++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        *sent_s = now_s();
        for (int i = 0; i < 2; i++)
            if (mask & (1 << i))
                kill(pid[i], sig);
    }
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        int st = 0;
        waitpid(pid[i], &st, 0);
        bool killed = sig == SIGKILL && (mask & (1 << i));
        if (!killed && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
            printf("FAIL  node %d ended with status %#x\n", i, st);
            ok = false;
        }
    }
    return ok;
}

static bool exists(const char *dir, int epoch)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ckpt-%d.bin", dir, epoch);
    return access(path, F_OK) == 0;
}

static void remove_dir(const char *dir)
{
    char path[4096];
    for (int e = 0; e <= 400; e++) {
        snprintf(path, sizeof path, "%s/ckpt-%d.bin", dir, e);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    results = mmap(NULL, 2 * sizeof *results, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    char dir[] = "/tmp/rung-test-nodes-gpu-XXXXXX";
    if (results == MAP_FAILED || mkdtemp(dir) == NULL) {
        printf("FAIL  setup\n");
        return 1;
    }
    Dataset train = synth(1000, 24, 5, 1), val = synth(300, 24, 5, 2);

    /* Two nodes of one GPU each against the CPU trainer with 2 ranks. */
    TrainConfig cfg = base_config();
    Log cpu = {0};
    Result ref;
    memset(&ref, 0, sizeof ref);
    TrainConfig two = cfg;
    two.ranks = 2;
    char why[512] = "";
    if (train_cpu(&two, &train, &val, record, &ref, why, sizeof why) != 0) {
        printf("FAIL  the CPU reference: %s\n", why);
        return 1;
    }
    cpu = ref.log;
    if (!run_nodes(cfg, dir, 0, 0, NULL)) {
        printf("%d checks, %d failed\n", checks, ++failed);
        return 1;
    }
    if (results[0].skipped || results[1].skipped) {
        printf("skipped: no CUDA device\n");
        remove_dir(dir);
        data_free(&train);
        data_free(&val);
        return RUNG_TEST_SKIPPED;
    }
    char detail[2200];
    snprintf(detail, sizeof detail, "rc %d (%s), %d (%s); node 1 reported %d epoch(s)",
             results[0].rc, results[0].why, results[1].rc, results[1].why, results[1].log.n);
    expect(results[0].rc == 0 && results[1].rc == 0 && results[1].log.n == 0,
           "two nodes train; only node 0 reports", detail);
    compare("2 nodes x 1 GPU against the CPU with 2 ranks", &results[0].log, &cpu, 2e-3, 0.02);
    expect(exists(dir, 3), "node 0 checkpoints", dir);
    Log full = results[0].log;

    /* Resumed after epoch 2 from node 0's checkpoint (node 1 has none). */
    cfg.resume_epoch = 2;
    run_nodes(cfg, dir, 0, 0, NULL);
    snprintf(detail, sizeof detail, "rc %d (%s), %d (%s)", results[0].rc, results[0].why,
             results[1].rc, results[1].why);
    expect(results[0].rc == 0 && results[1].rc == 0 && results[0].log.n == 1,
           "resume from node 0's checkpoint", detail);
    Log last = {.n = 1};
    last.e[0] = full.e[2];
    compare("resumed epoch 3 against the uninterrupted run", &results[0].log, &last, 1e-4, 0.01);

    /* Node 1 killed mid-run: node 0 gives up within seconds. */
    cfg = base_config();
    cfg.epochs = 400;
    double sent = 0;
    run_nodes(cfg, NULL, SIGKILL, 2, &sent);
    snprintf(detail, sizeof detail, "rc %d after %.2f s: %s", results[0].rc,
             results[0].ended_s - sent, results[0].why);
    expect(results[0].rc == -1 && results[0].ended_s - sent < 10, "node 1 killed: node 0 fails",
           detail);

    /* SIGTERM to both: both stop, halted or failing once their peer has
     * gone (rung-train exits 143 either way after a SIGTERM). */
    run_nodes(cfg, NULL, SIGTERM, 3, &sent);
    snprintf(detail, sizeof detail, "rc %d after %.2f s (%s), %d after %.2f s (%s)", results[0].rc,
             results[0].ended_s - sent, results[0].why, results[1].rc, results[1].ended_s - sent,
             results[1].why);
    bool stopped = true;
    for (int i = 0; i < 2; i++)
        stopped = stopped && results[i].rc != 0 && results[i].signalled &&
                  results[i].ended_s - sent < 10;
    expect(stopped, "SIGTERM to both nodes: both stop", detail);

    remove_dir(dir);
    data_free(&train);
    data_free(&val);
    printf("%d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
