/* The fake NVML: its state file's parser, and worker/gpus.c over the
 * library itself (opened through RUNG_NVML_LIBRARY), with the file changed
 * between calls as an integration test changes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpus.h"
#include "state.h"

static void parse_bad(const char *text, const char *want)
{
    FakeState *st = malloc(sizeof *st);
    char why[256] = "";
    assert_int_equal(fake_state_parse(text, strlen(text), st, why, sizeof why), -1);
    if (strstr(why, want) == NULL)
        fail_msg("'%s': got '%s', want '%s'", text, why, want);
    free(st);
}

static void test_state_parse(void **state)
{
    (void)state;
    FakeState *st = malloc(sizeof *st);
    const char *text = "# two GPUs\n\n"
                       "gpu 0 81559 3 NVIDIA H100 80GB HBM3  \n"
                       "gpu 1 24576 0 RTX\n"
                       "  proc 1 4242 2048 35\n"
                       "proc 0 7 - -\n";
    char why[256] = "";
    assert_int_equal(fake_state_parse(text, strlen(text), st, why, sizeof why), 0);
    assert_int_equal(st->n_gpus, 2);
    assert_string_equal(st->gpus[0].name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(st->gpus[0].memory_mb, 81559);
    assert_int_equal(st->gpus[0].util, 3);
    assert_string_equal(st->gpus[1].name, "RTX");
    assert_int_equal(st->n_procs, 2);
    assert_int_equal(st->procs[0].gpu, 1);
    assert_int_equal(st->procs[0].pid, 4242);
    assert_int_equal(st->procs[0].memory_mb, 2048);
    assert_int_equal(st->procs[0].util, 35);
    assert_int_equal(st->procs[1].memory_mb, -1);
    assert_int_equal(st->procs[1].util, -1);
    assert_int_equal(fake_state_parse("", 0, st, why, sizeof why), 0);
    assert_int_equal(st->n_gpus, 0);
    free(st);

    parse_bad("gpu 1 100 0 X\n", "line 1: gpu: index '1' is not the next one, 0");
    parse_bad("gpu 0 100 0\n", "line 1: gpu: want gpu INDEX MEMORY_MB UTIL NAME");
    parse_bad("gpu 0 0 0 X\n", "memory '0' is not 1..");
    parse_bad("gpu 0 100 101 X\n", "util '101' is not 0..100");
    parse_bad("gpu 0 100 0 X\nproc 1 5 0 0\n", "line 2: proc: no gpu '1' above it");
    parse_bad("gpu 0 100 0 X\nproc 0 x 0 0\n", "line 2: proc: pid 'x' is not a number");
    parse_bad("gpu 0 100 0 X\nproc 0 5 -1 0\n", "memory '-1' is not");
    parse_bad("gpu 0 100 0 X\nproc 0 5 1 --\n", "util '--' is not 0..100 or -");
    parse_bad("gpu 0 100 0 X\nproc 0 5 1 0 extra\n", "line 2: proc: want proc GPU PID");
    parse_bad("gpus 0 100 0 X\n", "line 1: 'gpus' is neither gpu nor proc");
    parse_bad("gpu 0 100 0 X\tY\n", "line 1: byte 14 is not printable ASCII");
    parse_bad("gpu 0 99999999999999 0 X\n", "memory '99999999999999' is not");
    char big[FAKE_NAME_MAX + 32];
    snprintf(big, sizeof big, "gpu 0 1 0 %0*d\n", FAKE_NAME_MAX, 0);
    parse_bad(big, "name longer than");
}

static char state_path[] = "/tmp/test_fake_nvml_XXXXXX";

static void write_state(const char *text)
{
    char tmp[sizeof state_path + 8];
    snprintf(tmp, sizeof tmp, "%s.new", state_path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, state_path), 0); /* as a test does: whole files only */
}

static void test_gpus_over_the_fake(void **state)
{
    (void)state;
    int fd = mkstemp(state_path);
    assert_true(fd >= 0);
    close(fd);
    setenv("RUNG_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("RUNG_FAKE_NVML_STATE", state_path, 1);
    write_state("gpu 0 81559 0 Fake H100\ngpu 1 1024 7 Fake small\n");
    char why[256] = "";
    Gpus *g = gpus_open(why, sizeof why);
    if (g == NULL)
        fail_msg("gpus_open: %s", why);
    assert_int_equal(gpus_count(g), 2);
    GpuInfo info;
    assert_int_equal(gpus_info(g, 0, &info), 0);
    assert_string_equal(info.name, "Fake H100");
    assert_int_equal(info.memory_mb, 81559);
    assert_int_equal(gpus_info(g, 2, &info), -1);
    GpuUsage u;
    assert_int_equal(gpus_usage(g, 1, &u), 0);
    assert_true(u.util > 0.069 && u.util < 0.071);
    assert_int_equal(u.memory_used_mb, 0);
    GpuProc procs[8];
    GpuProcUtil utils[8];
    assert_int_equal(gpus_processes(g, 0, procs, 8), 0);
    assert_int_equal(gpus_process_util(g, 0, 1000, utils, 8), 0);

    /* Someone starts two processes on GPU 0; the next calls see them. */
    write_state("gpu 0 81559 0 Fake H100\ngpu 1 1024 7 Fake small\n"
                "proc 0 4242 2048 35\nproc 0 4243 - -\nproc 1 9 10 1\n");
    assert_int_equal(gpus_processes(g, 0, procs, 8), 2);
    assert_int_equal(procs[0].pid, 4242);
    assert_int_equal(procs[0].memory_mb, 2048);
    assert_int_equal(procs[1].pid, 4243);
    assert_int_equal(procs[1].memory_mb, -1);
    assert_int_equal(gpus_processes(g, 0, procs, 1), 1); /* at most max */
    assert_int_equal(gpus_process_util(g, 0, 1000, utils, 8), 1);
    assert_int_equal(utils[0].pid, 4242);
    assert_true(utils[0].util > 0.349 && utils[0].util < 0.351);
    assert_int_equal(gpus_usage(g, 0, &u), 0);
    assert_int_equal(u.memory_used_mb, 2048);
    assert_true(u.util > 0.349 && u.util < 0.351);

    /* They leave. */
    write_state("gpu 0 81559 0 Fake H100\ngpu 1 1024 7 Fake small\n");
    assert_int_equal(gpus_processes(g, 0, procs, 8), 0);
    /* A broken file is an NVML error, not a crash. */
    write_state("gpu 0 x\n");
    assert_int_equal(gpus_processes(g, 0, procs, 8), -1);
    assert_int_equal(gpus_usage(g, 0, &u), -1);
    gpus_close(g);

    /* No state file: NVML cannot start, and says why. */
    unlink(state_path);
    g = gpus_open(why, sizeof why);
    assert_null(g);
    if (strstr(why, "cannot open") == NULL)
        fail_msg("why: %s", why);
    /* No library at all. */
    setenv("RUNG_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_null(gpus_open(why, sizeof why));
    assert_true(strlen(why) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_parse),
        cmocka_unit_test(test_gpus_over_the_fake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
