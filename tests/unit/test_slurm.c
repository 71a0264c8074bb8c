/* Unit tests of cli/slurm.c and cli/k8s.c, `rung launch`'s decisions:
 * which trials wait, by shape; the jobs' names; the plan (submit, cancel
 * queued); and the Slurm job scripts and Kubernetes objects of a 1-node, a
 * multi-GPU and a gang trial against the golden files in tests/data/slurm/
 * and tests/data/k8s/ (RUNG_GOLDEN_UPDATE=1 writes them anew: then read
 * the diff). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "slurm.h"

static json_t *experiment(const char *state, const char *type, int pending, int preempted,
                          int running, int cap, int gpu, int cpu, int nodes)
{
    return json_pack("{s:s, s:{s:s}, s:{s:i, s:i, s:i}, s:i, s:{s:i, s:i, s:i}}", "state", state,
                     "trainable", "type", type, "counts", "pending", pending, "preempted",
                     preempted, "running", running, "max_concurrent_trials", cap,
                     "resources_per_trial", "gpu", gpu, "cpu", cpu, "nodes", nodes);
}

static const SlurmCount *find(const SlurmCount *c, int n, int64_t g, int64_t cpu, int64_t k)
{
    for (int i = 0; i < n; i++)
        if (c[i].shape.gpus == g && c[i].shape.cpus == cpu && c[i].shape.nodes == k)
            return &c[i];
    return NULL;
}

static void waiting_trials_by_shape(void **state)
{
    (void)state;
    json_t *xs = json_array();
    json_array_append_new(xs, experiment("running", "command", 3, 1, 0, 0, 1, 4, 1));
    json_array_append_new(xs, experiment("running", "builtin", 2, 0, 0, 0, 1, 4, 1));
    /* max_concurrent_trials 3 with 2 running: one more may run. */
    json_array_append_new(xs, experiment("running", "command", 50, 0, 2, 3, 0, 1, 1));
    json_array_append_new(xs, experiment("running", "command", 1, 0, 0, 0, 2, 8, 2));
    /* Not for workers, or not running: nothing waits. */
    json_array_append_new(xs, experiment("running", "external", 9, 0, 0, 0, 0, 1, 1));
    json_array_append_new(xs, experiment("paused", "command", 9, 0, 0, 0, 0, 1, 1));
    json_array_append_new(xs, experiment("completed", "command", 0, 0, 0, 0, 0, 1, 1));
    /* Full already (3 running of 3). */
    json_array_append_new(xs, experiment("running", "command", 7, 0, 3, 3, 0, 2, 1));
    SlurmCount c[SLURM_SHAPES_MAX];
    int n = slurm_waiting(xs, c, SLURM_SHAPES_MAX);
    assert_int_equal(n, 3);
    assert_int_equal(find(c, n, 1, 4, 1)->n, 6);
    assert_int_equal(find(c, n, 0, 1, 1)->n, 1);
    assert_int_equal(find(c, n, 2, 8, 2)->n, 1);
    assert_null(find(c, n, 0, 2, 1));
    json_decref(xs);
}

static void job_names_round_trip(void **state)
{
    (void)state;
    char buf[64];
    SlurmShape s = {.gpus = 2, .cpus = 16, .nodes = 4}, back;
    slurm_job_name("rung", &s, buf, sizeof buf);
    assert_string_equal(buf, "rung-g2-c16-n4");
    assert_true(slurm_parse_job_name("rung", buf, &back));
    assert_int_equal(back.gpus, 2);
    assert_int_equal(back.cpus, 16);
    assert_int_equal(back.nodes, 4);
    const char *others[] = {"rungx-g2-c16-n4",
                            "rung-g2-c16-n4x",
                            "rung-g-1-c1-n1",
                            "rung-g02-c1-n1",
                            "rung-g0-c0-n1",
                            "other-g0-c1-n1",
                            "rung"};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (slurm_parse_job_name("rung", others[i], &back))
            fail_msg("'%s' taken for one of the launcher's jobs", others[i]);
}

static void the_plan(void **state)
{
    (void)state;
    SlurmShape a = {0, 1, 1}, b = {1, 4, 1}, c = {0, 2, 2};
    /* 5 of a wait, 2 queued jobs of a: 3 more; 2 of b wait, none queued:
     * 2; but max_jobs 6 with 1 running job of c and the 2 of a: 3 left. */
    SlurmCount waiting[] = {{.shape = a, .n = 5}, {.shape = b, .n = 2}};
    SlurmCount jobs[] = {{.shape = a, .n = 2}, {.shape = c, .n = 1, .running = 1}};
    int64_t submit[2], cancel[2];
    slurm_plan(waiting, 2, jobs, 2, 6, submit, cancel);
    assert_int_equal(submit[0], 3);
    assert_int_equal(submit[1], 0); /* the room went to a, listed first */
    assert_int_equal(cancel[0], 0);
    assert_int_equal(cancel[1], 0); /* c's job runs: never cancelled */
    slurm_plan(waiting, 2, jobs, 2, 100, submit, cancel);
    assert_int_equal(submit[0], 3);
    assert_int_equal(submit[1], 2);
    /* Nothing waits any more: the queued jobs go, the running stay. */
    SlurmCount more[] = {{.shape = a, .n = 4, .running = 1}, {.shape = c, .n = 2, .running = 1}};
    slurm_plan(NULL, 0, more, 2, 100, submit, cancel);
    assert_int_equal(cancel[0], 3);
    assert_int_equal(cancel[1], 1);
    /* One trial of a still waits: one queued job of a is kept. */
    SlurmCount one[] = {{.shape = a, .n = 1}};
    slurm_plan(one, 1, more, 2, 100, submit, cancel);
    assert_int_equal(cancel[0], 2);
    assert_int_equal(submit[0], 0);
}

/* text (freed here) against the golden file dir/name. */
static void golden_text(const char *dir, const char *name, char *text)
{
    assert_non_null(text);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (getenv("RUNG_GOLDEN_UPDATE") != NULL) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
    }
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail_msg("no golden file %s (RUNG_GOLDEN_UPDATE=1 writes it)", path);
    static char want[8192];
    size_t n = fread(want, 1, sizeof want - 1, f);
    want[n] = '\0';
    fclose(f);
    if (strcmp(text, want) != 0)
        fail_msg("%s differs from the text made now:\n%s", path, text);
    free(text);
}

static void golden(const char *name, const SlurmJob *j)
{
    golden_text(RUNG_SLURM_GOLDEN, name, slurm_script(j));
}

static void golden_k8s(const char *name, const K8sJob *j)
{
    json_t *objects = k8s_objects(j);
    assert_non_null(objects);
    char *text = json_dumps(objects, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(objects);
    size_t n = strlen(text);
    text = realloc(text, n + 2);
    strcpy(text + n, "\n");
    golden_text(RUNG_K8S_GOLDEN, name, text);
}

/* The Kubernetes objects of the same three shapes. */
static void k8s_objects_match_the_golden_files(void **state)
{
    (void)state;
    K8sJob j = {.shape = {0, 1, 1},
                .name = "rung-g0-c1-n1-1796000000-1",
                .namespace_ = "ml",
                .image = "registry.lan/rung-worker:1.0",
                .server = "http://rungd.ml.svc:8080",
                .prefix = "rung",
                .exit_idle_s = 120,
                .grace_s = 60};
    golden_k8s("one_node.json", &j);
    j.shape = (SlurmShape){4, 32, 1};
    j.name = "rung-g4-c32-n1-1796000000-2";
    j.token_secret = "rung-worker-token";
    golden_k8s("multi_gpu.json", &j);
    j.shape = (SlurmShape){2, 16, 4};
    j.name = "rung-g2-c16-n4-1796000000-3";
    golden_k8s("gang.json", &j);
}

static void scripts_match_the_golden_files(void **state)
{
    (void)state;
    SlurmJob j = {.shape = {0, 1, 1},
                  .name = "rung-g0-c1-n1",
                  .time = "01:00:00",
                  .output_dir = "/home/ana/rung-slurm",
                  .worker = "/usr/bin/rung-worker",
                  .server = "https://head.lan:8443",
                  .exit_idle_s = 120};
    golden("one_node.sbatch", &j);
    const char *extra[] = {"--qos=short", "--constraint=a100", NULL};
    j = (SlurmJob){.shape = {4, 32, 1},
                   .name = "rung-g4-c32-n1",
                   .partition = "gpu",
                   .account = "ml-team",
                   .time = "04:00:00",
                   .output_dir = "/scratch/ana/rung",
                   .worker = "/opt/rung/bin/rung-worker",
                   .server = "https://head.lan:8443,https://standby.lan:8443",
                   .token_file = "/home/ana/.rung/worker token's file",
                   .exit_idle_s = 300,
                   .extra = extra};
    golden("multi_gpu.sbatch", &j);
    j = (SlurmJob){.shape = {2, 16, 4},
                   .name = "rung-g2-c16-n4",
                   .partition = "gpu",
                   .time = "12:00:00",
                   .output_dir = "/scratch/ana/rung",
                   .worker = "/usr/bin/rung-worker",
                   .server = "https://head.lan:8443",
                   .token_file = "/home/ana/.rung/worker-token",
                   .exit_idle_s = 120};
    golden("gang.sbatch", &j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waiting_trials_by_shape),
        cmocka_unit_test(job_names_round_trip),
        cmocka_unit_test(the_plan),
        cmocka_unit_test(scripts_match_the_golden_files),
        cmocka_unit_test(k8s_objects_match_the_golden_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
