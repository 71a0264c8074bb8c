/* Unit tests of worker/batchjob.c: what a Slurm job's environment says of
 * its CPUs and GPUs (and the clear error for a value Slurm would not
 * write), and the times --deadline takes; squeue's end of a job, with a
 * stand-in squeue on PATH. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batchjob.h"

/* The environment of one test: NAME=VALUE pairs, NULL-terminated. */
static const char *const *env_now;

static const char *fake_get(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = env_now; *e != NULL; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static int read_env(BatchJob *j, const char *const *env, char *why, size_t size)
{
    env_now = env;
    why[0] = '\0';
    return batchjob_read(j, fake_get, why, size);
}

static void outside_a_job_nothing_is_said(void **state)
{
    (void)state;
    BatchJob j;
    char why[256];
    const char *const env[] = {"CUDA_VISIBLE_DEVICES=0,1", "SLURM_CPUS_ON_NODE=4", NULL};
    assert_int_equal(read_env(&j, env, why, sizeof why), 0);
    assert_false(j.slurm);
    assert_int_equal(j.cpus, 0);
    assert_int_equal(j.n_gpus, 0);
    assert_null(j.gpus_from);
}

static void a_job_says_its_cpus_and_gpus(void **state)
{
    (void)state;
    BatchJob j;
    char why[256];
    const char *const env[] = {"SLURM_JOB_ID=4242", "SLURM_CPUS_ON_NODE=6",
                               "SLURM_JOB_GPUS=2,0-1,5", "CUDA_VISIBLE_DEVICES=0,1,2,3", NULL};
    assert_int_equal(read_env(&j, env, why, sizeof why), 0);
    assert_true(j.slurm);
    assert_string_equal(j.job_id, "4242");
    assert_int_equal(j.cpus, 6);
    /* SLURM_JOB_GPUS first: the node's own numbers. */
    assert_string_equal(j.gpus_from, "SLURM_JOB_GPUS");
    assert_int_equal(j.n_gpus, 4);
    int want[] = {2, 0, 1, 5};
    for (int i = 0; i < 4; i++)
        assert_int_equal(j.gpus[i], want[i]);
    /* Without it, CUDA_VISIBLE_DEVICES; with neither, no GPU. */
    const char *const cuda[] = {"SLURM_JOB_ID=7", "CUDA_VISIBLE_DEVICES=3", NULL};
    assert_int_equal(read_env(&j, cuda, why, sizeof why), 0);
    assert_string_equal(j.gpus_from, "CUDA_VISIBLE_DEVICES");
    assert_int_equal(j.n_gpus, 1);
    assert_int_equal(j.gpus[0], 3);
    assert_int_equal(j.cpus, 0);
    const char *const none[] = {"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=", NULL};
    assert_int_equal(read_env(&j, none, why, sizeof why), 0);
    assert_null(j.gpus_from);
    assert_int_equal(j.n_gpus, 0);
}

static void values_slurm_would_not_write_are_named(void **state)
{
    (void)state;
    BatchJob j;
    char why[256];
    const char *const cpus[] = {"SLURM_JOB_ID=1", "SLURM_CPUS_ON_NODE=four", NULL};
    assert_int_equal(read_env(&j, cpus, why, sizeof why), -1);
    assert_non_null(strstr(why, "SLURM_CPUS_ON_NODE"));
    const char *const uuid[] = {"SLURM_JOB_ID=1", "CUDA_VISIBLE_DEVICES=GPU-5f2c1a3b", NULL};
    assert_int_equal(read_env(&j, uuid, why, sizeof why), -1);
    assert_non_null(strstr(why, "CUDA_VISIBLE_DEVICES"));
    assert_non_null(strstr(why, "--gpus"));
    const char *const twice[] = {"SLURM_JOB_ID=1", "SLURM_JOB_GPUS=0,0", NULL};
    assert_int_equal(read_env(&j, twice, why, sizeof why), -1);
    assert_non_null(strstr(why, "SLURM_JOB_GPUS"));
}

static void deadlines_in_every_form(void **state)
{
    (void)state;
    int64_t t;
    char why[256];
    assert_int_equal(batchjob_parse_time("1800000000", 0, &t, why, sizeof why), 0);
    assert_int_equal(t, 1800000000);
    assert_int_equal(batchjob_parse_time("+90", 1000, &t, why, sizeof why), 0);
    assert_int_equal(t, 1090);
    assert_int_equal(batchjob_parse_time("+5m", 1000, &t, why, sizeof why), 0);
    assert_int_equal(t, 1300);
    assert_int_equal(batchjob_parse_time("+2h", 1000, &t, why, sizeof why), 0);
    assert_int_equal(t, 1000 + 7200);
    assert_int_equal(batchjob_parse_time("2027-01-02T03:04:05Z", 0, &t, why, sizeof why), 0);
    assert_int_equal(t, 1798859045);
    assert_int_equal(batchjob_parse_time("2027-01-02T03:04Z", 0, &t, why, sizeof why), 0);
    assert_int_equal(t, 1798859040);
    /* Local time, as squeue prints it: the same instant mktime gives. */
    struct tm tm = {.tm_year = 127,
                    .tm_mon = 0,
                    .tm_mday = 2,
                    .tm_hour = 3,
                    .tm_min = 4,
                    .tm_sec = 5,
                    .tm_isdst = -1};
    assert_int_equal(batchjob_parse_time("2027-01-02T03:04:05", 0, &t, why, sizeof why), 0);
    assert_int_equal(t, (int64_t)mktime(&tm));
    const char *bad[] = {"",  "soon", "+", "+5d", "+-3", "2027-01-02", "2027-01-02T03:04:05X",
                         "0", "12abc"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = '\0';
        if (batchjob_parse_time(bad[i], 0, &t, why, sizeof why) != -1)
            fail_msg("'%s' was taken as a time", bad[i]);
        assert_true(strlen(why) > 0);
    }
}

/* squeue -h -j ID -o %e, from a stand-in on PATH that prints what the test
 * says (and fails for an unknown job, as squeue does). */
static void slurm_end_from_squeue(void **state)
{
    (void)state;
    char dir[] = "/tmp/rung-test-squeue-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/squeue", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(
        f,
        "#!/bin/sh\n"
        "[ \"$1 $2 $3 $4 $5\" = \"-h -j 77 -o %%e\" ] && { echo 2027-01-02T03:04:05Z; exit 0; }\n"
        "[ \"$3\" = 78 ] && { echo Unknown; exit 0; }\n"
        "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n");
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    char newpath[4096];
    snprintf(newpath, sizeof newpath, "%s:%s", dir, old ? old : "/usr/bin:/bin");
    setenv("PATH", newpath, 1);
    assert_int_equal(batchjob_slurm_end("77"), 1798859045);
    assert_int_equal(batchjob_slurm_end("78"), -1);    /* no time limit */
    assert_int_equal(batchjob_slurm_end("79"), -1);    /* squeue fails */
    assert_int_equal(batchjob_slurm_end("77;rm"), -1); /* never passed on */
    if (saved) {
        setenv("PATH", saved, 1);
        free(saved);
    }
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(outside_a_job_nothing_is_said),
        cmocka_unit_test(a_job_says_its_cpus_and_gpus),
        cmocka_unit_test(values_slurm_would_not_write_are_named),
        cmocka_unit_test(deadlines_in_every_form),
        cmocka_unit_test(slurm_end_from_squeue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
