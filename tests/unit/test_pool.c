/* Unit tests of kernels/pool.c, the CPU trainer's fork-join pool: the
 * parts of a range cover it in order, every part of a job runs once with
 * the pool's count of parts, part 0 on the caller and the others on other
 * threads, thousands of jobs in a row lose none, and a pool of one thread
 * (NULL) runs the job as one part on the caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "pool.h"

static void test_range_covers_in_order(void **state)
{
    (void)state;
    static const size_t ns[] = {0, 1, 2, 3, 7, 64, 535818};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        for (int parts = 1; parts <= 9; parts++) {
            size_t next = 0, smallest = SIZE_MAX, largest = 0;
            for (int part = 0; part < parts; part++) {
                size_t lo, hi;
                pool_range(ns[i], part, parts, &lo, &hi);
                assert_int_equal(lo, next); /* contiguous, in order */
                assert_true(hi >= lo);
                next = hi;
                smallest = hi - lo < smallest ? hi - lo : smallest;
                largest = hi - lo > largest ? hi - lo : largest;
            }
            assert_int_equal(next, ns[i]); /* the whole range */
            assert_true(largest - smallest <= 1);
        }
    }
}

typedef struct Job {
    int parts_seen[8];
    atomic_int runs[8];
    pthread_t who[8];
    long sum[8];
} Job;

static void record(void *arg, int part, int parts)
{
    Job *j = arg;
    j->parts_seen[part] = parts;
    atomic_fetch_add(&j->runs[part], 1);
    j->who[part] = pthread_self();
    /* Work on the part's own slots, as the trainer's loops do. */
    size_t lo, hi;
    pool_range(1000, part, parts, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        j->sum[part] += (long)i;
}

static void test_every_part_once(void **state)
{
    (void)state;
    for (int threads = 2; threads <= 4; threads++) {
        Pool *p = pool_new(threads);
        assert_non_null(p);
        assert_int_equal(pool_parts(p), threads);
        Job j;
        memset(&j, 0, sizeof j);
        pool_run(p, record, &j);
        long total = 0;
        for (int part = 0; part < threads; part++) {
            assert_int_equal(atomic_load(&j.runs[part]), 1);
            assert_int_equal(j.parts_seen[part], threads);
            total += j.sum[part];
            /* Part 0 on the caller, every other part on a thread of its own. */
            assert_int_equal(pthread_equal(j.who[part], pthread_self()) != 0, part == 0);
            for (int q = 1; q < part; q++)
                assert_false(pthread_equal(j.who[part], j.who[q]));
        }
        assert_int_equal(total, 999L * 1000 / 2);
        pool_free(p);
    }
}

static void count(void *arg, int part, int parts)
{
    (void)parts;
    atomic_fetch_add(&((atomic_int *)arg)[part], 1);
}

static void test_many_jobs_lose_none(void **state)
{
    (void)state;
    Pool *p = pool_new(3);
    assert_non_null(p);
    atomic_int runs[3] = {0, 0, 0};
    for (int i = 0; i < 20000; i++)
        pool_run(p, count, runs);
    for (int part = 0; part < 3; part++)
        assert_int_equal(atomic_load(&runs[part]), 20000);
    pool_free(p);
}

static void test_one_thread_runs_inline(void **state)
{
    (void)state;
    assert_null(pool_new(1));
    assert_null(pool_new(0));
    assert_int_equal(pool_parts(NULL), 1);
    Job j;
    memset(&j, 0, sizeof j);
    pool_run(NULL, record, &j);
    assert_int_equal(j.parts_seen[0], 1);
    assert_int_equal(atomic_load(&j.runs[0]), 1);
    assert_true(pthread_equal(j.who[0], pthread_self()));
    assert_int_equal(j.sum[0], 999L * 1000 / 2);
    pool_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_covers_in_order),
        cmocka_unit_test(test_every_part_once),
        cmocka_unit_test(test_many_jobs_lose_none),
        cmocka_unit_test(test_one_thread_runs_inline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
