/* worker/container.c: the argv that runs a trial in an image, for podman
 * and apptainer, with mounts, variables, GPUs and options; a missing image
 * or runtime refused with a reason. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "container.h"

static char *joined(char **v)
{
    static char buf[4096];
    buf[0] = '\0';
    for (size_t i = 0; v[i]; i++) {
        strcat(buf, i ? " " : "");
        strcat(buf, v[i]);
    }
    return buf;
}

static void test_podman_with_gpus(void **state)
{
    (void)state;
    json_t *c = json_loads("{\"image\": \"localhost/x:1\", \"mounts\": [\"/data:/data:ro\"],"
                           " \"options\": [\"--shm-size=1g\"]}",
                           0, NULL);
    char *global[] = {"--runtime=runc", NULL}, *run[] = {"--ulimit=nofile=1024:1024", NULL};
    char *env[] = {"RUNG_TRIAL_ID=7", "CUDA_VISIBLE_DEVICES=2,5", NULL};
    int64_t gpus[] = {2, 5};
    ContainerCtx ctx = {.runtime = "podman",
                        .global_args = global,
                        .run_args = run,
                        .trial_dir = "/w/trials/7",
                        .work_dir = "/w/code/7/wd",
                        .cwd = "/w/code/7/wd",
                        .env = env,
                        .gpus = gpus,
                        .n_gpus = 2};
    char *argv[] = {"python3", "train.py", NULL};
    char why[256];
    char **v = container_argv(c, &ctx, argv, why, sizeof why);
    assert_non_null(v);
    assert_string_equal(joined(v),
                        "podman --runtime=runc run --rm --init --ulimit=nofile=1024:1024 "
                        "-v /w/trials/7:/w/trials/7 -v /w/code/7/wd:/w/code/7/wd "
                        "-v /data:/data:ro -w /w/code/7/wd --device nvidia.com/gpu=2 "
                        "--device nvidia.com/gpu=5 -e RUNG_TRIAL_ID=7 "
                        "-e CUDA_VISIBLE_DEVICES=0,1 --shm-size=1g localhost/x:1 python3 "
                        "train.py");
    container_argv_free(v);
    json_decref(c);
}

static void test_apptainer_and_refusals(void **state)
{
    (void)state;
    json_t *c = json_loads("{\"image\": \"/img/t.sif\"}", 0, NULL);
    char *env[] = {"RUNG_TRIAL_ID=7", NULL};
    int64_t gpus[] = {3};
    ContainerCtx ctx = {.runtime = "apptainer",
                        .trial_dir = "/t",
                        .cwd = "/t",
                        .env = env,
                        .gpus = gpus,
                        .n_gpus = 1};
    char *argv[] = {"sh", NULL};
    char why[256];
    char **v = container_argv(c, &ctx, argv, why, sizeof why);
    assert_non_null(v);
    assert_string_equal(joined(v), "apptainer exec --bind /t:/t --pwd /t --nv --env "
                                   "RUNG_TRIAL_ID=7 --env CUDA_VISIBLE_DEVICES=3 /img/t.sif sh");
    container_argv_free(v);
    ctx.runtime = NULL;
    assert_null(container_argv(c, &ctx, argv, why, sizeof why));
    assert_non_null(strstr(why, "--container-runtime"));
    json_decref(c);
    c = json_loads("{}", 0, NULL);
    ctx.runtime = "podman";
    assert_null(container_argv(c, &ctx, argv, why, sizeof why));
    assert_non_null(strstr(why, "trainable.container.image"));
    json_decref(c);
    char **found = container_detect();
    assert_non_null(found);
    container_argv_free(found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_podman_with_gpus),
        cmocka_unit_test(test_apptainer_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
