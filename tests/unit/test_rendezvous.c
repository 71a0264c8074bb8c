/* Unit tests of kernels/rendezvous.c: real processes (fork) on loopback.
 * Four ranks exchange 128 random bytes and run every collective (sums
 * compared bit for bit with one process adding in rank order); a missing
 * rank, a late rank 0, a wrong rank count, a rank that arrives twice, a
 * stray connection and a port that is not a rendezvous; a rank that fails
 * or dies after the join (the others learn which and why), collectives out
 * of step, and a peer too slow for a collective's deadline. Deadlines are
 * short, so the whole file runs in a few seconds. */
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

#include "rendezvous.h"

#define MAX_PROCS 8
#define PAYLOAD 128
#define N_F32 1000
#define BIG ((size_t)1 << 20) /* a broadcast far larger than a socket's buffer */
#define LOOPBACK "127.0.0.1"

typedef enum {
    S_JOIN,         /* join, then close */
    S_COLLECTIVES,  /* join, then every collective */
    S_ABORT,        /* join, then fail and say why */
    S_EXIT,         /* join, then exit without a word */
    S_REDUCE,       /* join, then an allreduce; a failure is passed on (rdzv_abort) */
    S_CHECK,        /* join, then rdzv_check until it reports a failure */
    S_BCAST,        /* join, then a broadcast (out of step with S_REDUCE) */
    S_SLOW_BARRIER, /* join, sleep, then a barrier */
    S_BARRIER,      /* join, then a barrier */
} Script;

typedef struct Rank {
    int rank, nranks;
    double delay_s, join_s, op_s;
    Script script;
} Rank;

/* What a child did: written by it into shared memory, read by the test. */
typedef struct Result {
    int joined;       /* rdzv_join returned 0 */
    int rc;           /* 0, or -1 with why */
    double elapsed_s; /* from its start (after its delay) to its failure or end */
    char why[1024];
    unsigned char payload[PAYLOAD];
    float f32[N_F32];
    double f64[3];
    int64_t imax, imin;
    int64_t gathered[MAX_PROCS];
    int big_ok;
} Result;

static Result *results; /* MAX_PROCS of them, shared with the children */
static unsigned char secret[PAYLOAD];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* A loopback port that was free a moment ago. */
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

/* Rank r's contribution to the f32 sum: values whose sum depends on the
 * order of addition. */
static float f32_value(int rank, int i)
{
    return (float)(rank + 1) * 0.1f + (float)i * 1e-3f + (rank % 2 ? 1e4f : 0.0f);
}

static int collectives(Rdzv *r, Result *res)
{
    int rank = rdzv_rank(r);
    char *why = res->why;
    size_t size = sizeof res->why;
    for (int i = 0; i < N_F32; i++)
        res->f32[i] = f32_value(rank, i);
    if (rdzv_allreduce(r, res->f32, N_F32, RDZV_SUM_F32, why, size) != 0)
        return -1;
    res->f64[0] = rank + 0.5;
    res->f64[1] = -rank;
    res->f64[2] = 1e-3;
    if (rdzv_allreduce(r, res->f64, 3, RDZV_SUM_F64, why, size) != 0)
        return -1;
    res->imax = res->imin = 100 - 7 * rank;
    if (rdzv_allreduce(r, &res->imax, 1, RDZV_MAX_I64, why, size) != 0 ||
        rdzv_allreduce(r, &res->imin, 1, RDZV_MIN_I64, why, size) != 0)
        return -1;
    int64_t mine = 1000 + rank * rank;
    if (rdzv_allgather(r, &mine, sizeof mine, res->gathered, why, size) != 0)
        return -1;
    unsigned char *big = malloc(BIG);
    assert_non_null(big);
    for (size_t i = 0; i < BIG; i++)
        big[i] = rank == 0 ? (unsigned char)(i * 31 + 7) : 0;
    int rc = rdzv_bcast(r, big, BIG, why, size);
    res->big_ok = 1;
    for (size_t i = 0; rc == 0 && i < BIG; i++)
        res->big_ok &= big[i] == (unsigned char)(i * 31 + 7);
    free(big);
    if (rc == 0)
        rc = rdzv_barrier(r, why, size);
    return rc;
}

/* A child's whole life: it never returns. */
static void child(int slot, int port, const Rank *k)
{
    alarm(30); /* a hang fails the test instead of stalling it */
    Result *res = &results[slot];
    sleep_s(k->delay_s);
    double t0 = now_s();
    RdzvConfig c = {.addr = LOOPBACK,
                    .port = port,
                    .rank = k->rank,
                    .nranks = k->nranks,
                    .join_s = k->join_s,
                    .op_s = k->op_s};
    unsigned char payload[PAYLOAD];
    memcpy(payload, secret, PAYLOAD);
    if (k->rank != 0)
        memset(payload, 0, PAYLOAD);
    Rdzv *r = NULL;
    res->rc = rdzv_join(&c, payload, PAYLOAD, &r, res->why, sizeof res->why);
    res->joined = res->rc == 0;
    if (res->rc == 0) {
        memcpy(res->payload, payload, PAYLOAD);
        float two[2] = {1, 2};
        switch (k->script) {
        case S_JOIN:
            break;
        case S_COLLECTIVES:
            res->rc = collectives(r, res);
            break;
        case S_ABORT:
            rdzv_abort(r, "out of GPU memory at batch_size 4096");
            break;
        case S_EXIT:
            _exit(0); /* as a kill -9 would: the connection just closes */
        case S_REDUCE:
            res->rc = rdzv_allreduce(r, two, 2, RDZV_SUM_F32, res->why, sizeof res->why);
            if (res->rc != 0)
                rdzv_abort(r, res->why); /* as rung-train does */
            break;
        case S_CHECK:
            while ((res->rc = rdzv_check(r, res->why, sizeof res->why)) == 0 && now_s() - t0 < 10)
                sleep_s(0.005);
            break;
        case S_BCAST:
            res->rc = rdzv_bcast(r, two, sizeof two, res->why, sizeof res->why);
            break;
        case S_SLOW_BARRIER:
            sleep_s(1.0);
            /* fall through */
        case S_BARRIER:
            res->rc = rdzv_barrier(r, res->why, sizeof res->why);
            break;
        }
    }
    res->elapsed_s = now_s() - t0;
    rdzv_close(r);
    _exit(0);
}

/* Shows what child i said, so that the log shows each message as a user
 * would read it. */
static void show(int i)
{
    print_message("  child %d: %s\n", i, results[i].rc ? results[i].why : "ok");
}

/* Runs one child per entry of ranks (n of them) on port, and waits for
 * all. */
static void run(int port, const Rank *ranks, int n)
{
    memset(results, 0, MAX_PROCS * sizeof *results);
    pid_t pid[MAX_PROCS];
    for (int i = 0; i < n; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0)
            child(i, port, &ranks[i]);
    }
    for (int i = 0; i < n; i++) {
        int st = 0;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("child %d (rank %d) ended with status %#x", i, ranks[i].rank, st);
    }
    for (int i = 0; i < n; i++)
        show(i);
}

static void expect_ok(int i)
{
    if (results[i].rc != 0)
        fail_msg("child %d: %s", i, results[i].why);
    assert_memory_equal(results[i].payload, secret, PAYLOAD);
}

/* ---- The tests ------------------------------------------------------------ */

static void test_four_ranks(void **state)
{
    (void)state;
    int port = free_port();
    /* Ranks start in a shuffled order; rank 0 is not first. */
    Rank ranks[4] = {{2, 4, 0.00, 5, 5, S_COLLECTIVES},
                     {0, 4, 0.05, 5, 5, S_COLLECTIVES},
                     {3, 4, 0.02, 5, 5, S_COLLECTIVES},
                     {1, 4, 0.10, 5, 5, S_COLLECTIVES}};
    run(port, ranks, 4);
    float want[N_F32];
    for (int i = 0; i < N_F32; i++) {
        want[i] = f32_value(0, i);
        for (int q = 1; q < 4; q++)
            want[i] += f32_value(q, i);
    }
    for (int i = 0; i < 4; i++) {
        expect_ok(i);
        /* Bit for bit: rank 0 folds in rank order, as the loop above. */
        assert_memory_equal(results[i].f32, want, sizeof want);
        assert_true(results[i].f64[0] == 0.5 + 1.5 + 2.5 + 3.5);
        assert_true(results[i].f64[1] == -6.0);
        assert_true(results[i].f64[2] == 1e-3 + 1e-3 + 1e-3 + 1e-3);
        assert_int_equal(results[i].imax, 100);
        assert_int_equal(results[i].imin, 100 - 21);
        for (int q = 0; q < 4; q++)
            assert_int_equal(results[i].gathered[q], 1000 + q * q);
        assert_int_equal(results[i].big_ok, 1);
    }
}

static void test_missing_ranks(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[2] = {{0, 4, 0, 0.5, 5, S_JOIN}, {1, 4, 0, 0.5, 5, S_JOIN}};
    run(port, ranks, 2);
    char want[256];
    snprintf(want, sizeof want,
             "rendezvous: ranks 2, 3 of 4 did not arrive within 0.5 s at " LOOPBACK ":%d", port);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(results[i].rc, -1);
        assert_string_equal(results[i].why, want); /* rank 1 hears rank 0's words */
    }
    assert_true(results[0].elapsed_s >= 0.5 && results[0].elapsed_s < 1.5);

    /* One missing rank: singular. */
    port = free_port();
    Rank three[2] = {{0, 3, 0, 0.3, 5, S_JOIN}, {2, 3, 0, 0.3, 5, S_JOIN}};
    run(port, three, 2);
    snprintf(want, sizeof want,
             "rendezvous: rank 1 of 3 did not arrive within 0.3 s at " LOOPBACK ":%d", port);
    assert_string_equal(results[0].why, want);
}

static void test_late_rank_zero(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[4] = {{1, 4, 0, 5, 5, S_BARRIER},
                     {2, 4, 0, 5, 5, S_BARRIER},
                     {3, 4, 0, 5, 5, S_BARRIER},
                     {0, 4, 0.4, 5, 5, S_BARRIER}};
    run(port, ranks, 4);
    for (int i = 0; i < 4; i++)
        expect_ok(i);
    /* The others kept trying while rank 0 was absent. */
    assert_true(results[0].elapsed_s >= 0.35);
}

static void test_nobody_listening(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[1] = {{1, 2, 0, 0.3, 5, S_JOIN}};
    run(port, ranks, 1);
    char want[256];
    snprintf(want, sizeof want,
             "rendezvous: rank 0 at " LOOPBACK ":%d did not answer within 0.3 s (rank 1 of 2 "
             "kept trying: Connection refused)",
             port);
    assert_string_equal(results[0].why, want);
    assert_true(results[0].elapsed_s < 1.3);
}

static void test_wrong_nranks(void **state)
{
    (void)state;
    int port = free_port();
    /* Rank 2 is told of 4 ranks, the others of 3; it comes last. */
    Rank ranks[3] = {{0, 3, 0, 5, 5, S_JOIN}, {1, 3, 0, 5, 5, S_JOIN}, {2, 4, 0.3, 5, 5, S_JOIN}};
    run(port, ranks, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(results[i].rc, -1);
        assert_non_null(strstr(results[i].why, "rendezvous: rank 2 (" LOOPBACK ":"));
        assert_non_null(
            strstr(results[i].why, ") was told there are 4 ranks, rank 0 that there are 3"));
    }
    assert_true(results[0].elapsed_s < 2);
}

static void test_duplicate_rank(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[3] = {{0, 3, 0, 5, 5, S_JOIN}, {1, 3, 0, 5, 5, S_JOIN}, {1, 3, 0.3, 5, 5, S_JOIN}};
    run(port, ranks, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(results[i].rc, -1);
        assert_non_null(
            strstr(results[i].why, "rendezvous: rank 1 arrived twice (from " LOOPBACK ":"));
    }
}

/* A connection that is not a rendezvous is dropped; the join goes on. */
static void test_stray_connection(void **state)
{
    (void)state;
    int port = free_port();
    pid_t stray = fork();
    assert_true(stray >= 0);
    if (stray == 0) {
        sleep_s(0.1);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            const char *get = "GET / HTTP/1.1\r\n\r\n";
            (void)!write(fd, get, strlen(get));
            sleep_s(1.0);
        }
        _exit(0);
    }
    Rank ranks[2] = {{0, 2, 0, 5, 5, S_BARRIER}, {1, 2, 0.4, 5, 5, S_BARRIER}};
    run(port, ranks, 2);
    waitpid(stray, NULL, 0);
    expect_ok(0);
    expect_ok(1);

    /* With a rank missing as well, the timeout's message mentions it. */
    port = free_port();
    stray = fork();
    if (stray == 0) {
        sleep_s(0.1);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            (void)!write(fd, "SSH-2.0-x\r\n", 11);
        sleep_s(1.0);
        _exit(0);
    }
    Rank alone[1] = {{0, 2, 0, 0.4, 5, S_JOIN}};
    run(port, alone, 1);
    waitpid(stray, NULL, 0);
    assert_non_null(strstr(results[0].why, "rank 1 of 2 did not arrive within 0.4 s"));
    assert_non_null(strstr(results[0].why, "; 1 other connection (from " LOOPBACK ":"));
}

/* MASTER_PORT that is another program's: the rank says so. */
static void test_not_a_rendezvous(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    pid_t server = fork();
    assert_true(server >= 0);
    if (server == 0) {
        int fd = accept(lfd, NULL, NULL);
        const char *reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        (void)!write(fd, reply, strlen(reply));
        sleep_s(1.0);
        _exit(0);
    }
    close(lfd);
    Rank ranks[1] = {{1, 2, 0, 2, 5, S_JOIN}};
    run(ntohs(a.sin_port), ranks, 1);
    waitpid(server, NULL, 0);
    assert_int_equal(results[0].rc, -1);
    assert_non_null(strstr(results[0].why, "is not a rendezvous"));
}

/* A rank that fails tells everyone why; rank 0 passes it on. */
static void test_failure_reaches_everyone(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[4] = {{0, 4, 0, 5, 5, S_REDUCE},
                     {1, 4, 0, 5, 5, S_REDUCE},
                     {2, 4, 0, 5, 5, S_ABORT},
                     {3, 4, 0, 5, 5, S_REDUCE}};
    run(port, ranks, 4);
    assert_int_equal(results[2].rc, 0);
    for (int i = 0; i < 4; i++) {
        if (i == 2)
            continue;
        assert_int_equal(results[i].rc, -1);
        assert_string_equal(results[i].why,
                            "rendezvous: rank 2 failed: out of GPU memory at batch_size 4096");
        assert_true(results[i].elapsed_s < 3);
    }
}

/* A rank that dies (no word): rank 0 sees its connection close, names it,
 * and the others hear that from rank 0. rdzv_check sees it too. */
static void test_rank_dies(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[4] = {{0, 4, 0, 5, 5, S_REDUCE},
                     {1, 4, 0, 5, 5, S_REDUCE},
                     {2, 4, 0, 5, 5, S_REDUCE},
                     {3, 4, 0, 5, 5, S_EXIT}};
    run(port, ranks, 4);
    assert_int_equal(results[0].rc, -1);
    assert_non_null(strstr(results[0].why, "rendezvous: rank 3 (" LOOPBACK ":"));
    assert_non_null(strstr(results[0].why, ") closed its connection"));
    for (int i = 1; i < 3; i++) {
        assert_int_equal(results[i].rc, -1);
        assert_non_null(strstr(results[i].why, "rendezvous: rank 0 failed: rank 3 ("));
    }

    port = free_port();
    Rank check[3] = {{0, 3, 0, 5, 5, S_CHECK}, {1, 3, 0, 5, 5, S_CHECK}, {2, 3, 0, 5, 5, S_EXIT}};
    run(port, check, 3);
    assert_int_equal(results[0].rc, -1);
    assert_non_null(strstr(results[0].why, "rendezvous: rank 2 (" LOOPBACK ":"));
    assert_true(results[0].elapsed_s < 2);
    /* Rank 1 is connected to rank 0 only: it sees rank 0 close once rank
     * 0's check has failed. */
    assert_int_equal(results[1].rc, -1);
    assert_non_null(strstr(results[1].why, "rank 0 at " LOOPBACK));
    assert_true(results[1].elapsed_s < 3);
}

static void test_out_of_step(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[2] = {{0, 2, 0, 5, 5, S_BCAST}, {1, 2, 0, 5, 5, S_REDUCE}};
    run(port, ranks, 2);
    assert_int_equal(results[0].rc, -1);
    assert_non_null(strstr(results[0].why, "is out of step: it sent sum(f32) #0 of 8 bytes where "
                                           "rank 0 expected bcast #0 of 0 bytes"));
    assert_int_equal(results[1].rc, -1);
}

static void test_collective_deadline(void **state)
{
    (void)state;
    int port = free_port();
    Rank ranks[2] = {{0, 2, 0, 5, 0.3, S_BARRIER}, {1, 2, 0, 5, 5, S_SLOW_BARRIER}};
    run(port, ranks, 2);
    assert_int_equal(results[0].rc, -1);
    assert_non_null(strstr(results[0].why, "rendezvous: no answer from rank 1 ("));
    assert_non_null(strstr(results[0].why, ") within 0.3 s"));
    assert_true(results[0].elapsed_s < 1.0);
}

static void test_one_rank(void **state)
{
    (void)state;
    RdzvConfig c = {.addr = LOOPBACK, .port = 1, .rank = 0, .nranks = 1};
    unsigned char p[4] = {1, 2, 3, 4};
    Rdzv *r = NULL;
    char why[256];
    assert_int_equal(rdzv_join(&c, p, sizeof p, &r, why, sizeof why), 0);
    float v[2] = {1.5f, 2.5f};
    assert_int_equal(rdzv_allreduce(r, v, 2, RDZV_SUM_F32, why, sizeof why), 0);
    assert_true(v[0] == 1.5f && v[1] == 2.5f);
    int64_t all[1], mine = 9;
    assert_int_equal(rdzv_allgather(r, &mine, sizeof mine, all, why, sizeof why), 0);
    assert_int_equal(all[0], 9);
    assert_int_equal(rdzv_barrier(r, why, sizeof why), 0);
    assert_int_equal(rdzv_check(r, why, sizeof why), 0);
    rdzv_abort(r, "nothing to tell");
    rdzv_close(r);

    c.rank = 1;
    assert_int_equal(rdzv_join(&c, p, sizeof p, &r, why, sizeof why), -1);
    assert_null(r);
    assert_non_null(strstr(why, "rendezvous: bad arguments (rank 1 of 1"));
    rdzv_close(NULL);
    rdzv_abort(NULL, "x");
}

int main(void)
{
    results = mmap(NULL, MAX_PROCS * sizeof *results, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (results == MAP_FAILED)
        return 1;
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    for (int i = 0; i < PAYLOAD; i++)
        secret[i] = (unsigned char)(rand() >> 7);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_ranks),
        cmocka_unit_test(test_missing_ranks),
        cmocka_unit_test(test_late_rank_zero),
        cmocka_unit_test(test_nobody_listening),
        cmocka_unit_test(test_wrong_nranks),
        cmocka_unit_test(test_duplicate_rank),
        cmocka_unit_test(test_stray_connection),
        cmocka_unit_test(test_not_a_rendezvous),
        cmocka_unit_test(test_failure_reaches_everyone),
        cmocka_unit_test(test_rank_dies),
        cmocka_unit_test(test_out_of_step),
        cmocka_unit_test(test_collective_deadline),
        cmocka_unit_test(test_one_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
