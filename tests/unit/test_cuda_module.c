/* Unit test of kernels/train_gpu.c with the CUDA module of this build
 * (librung-train-cuda.so, built wherever nvcc is): the module loads with
 * every library and symbol it needs, its version is rung-train's, it
 * answers how many GPUs there are without needing one, and the stop flag
 * reaches it. A machine without a GPU runs it too: it checks the module,
 * not the device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "train.h"

static void test_module_loads_and_answers(void **state)
{
    (void)state;
    char why[512] = "";
    if (train_gpu_load(RUNG_CUDA_MODULE, why, sizeof why) != 0)
        fail_msg("%s: %s", RUNG_CUDA_MODULE, why);
    int n = train_gpu_devices();
    assert_true(n >= 0);
    /* The module's own flag: it has a copy of the CPU trainer's pieces. */
    void *h = dlopen(RUNG_CUDA_MODULE, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    const TrainCudaBackend *(*get)(void) = NULL;
    *(void **)&get = dlsym(h, TRAIN_CUDA_BACKEND_SYMBOL);
    assert_non_null(get);
    const TrainCudaBackend *b = get();
    assert_int_equal(b->abi, TRAIN_CUDA_ABI);
    assert_int_equal(*b->stop, 0);
    train_gpu_stop();
    assert_int_equal(*b->stop, 1);
    *b->stop = 0;
    dlclose(h);
    /* Without a GPU, training says so rather than crashing. */
    if (n == 0) {
        TrainConfig cfg = {0};
        Dataset d = {0};
        assert_int_equal(train_gpu(&cfg, &d, NULL, NULL, NULL, why, sizeof why), -1);
        assert_true(why[0] != '\0');
    }
}

static void test_a_file_that_is_not_the_module_is_refused(void **state)
{
    (void)state;
    char why[512] = "";
    assert_int_equal(train_gpu_load("/nonexistent/librung-train-cuda.so", why, sizeof why), -1);
    assert_non_null(strstr(why, "librung-train-cuda.so"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_file_that_is_not_the_module_is_refused),
        cmocka_unit_test(test_module_loads_and_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
