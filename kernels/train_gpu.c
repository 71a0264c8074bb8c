/* rung-train's CUDA backend, loaded on first use (train.h, "rung-train's
 * side"): the module librung-train-cuda.so beside the program (the build's
 * bin/), or in RUNG_CUDA_MODULE_REL_DIR from it (an installed layout:
 * /usr/bin/rung-train, /usr/lib/rung/librung-train-cuda.so; the path comes
 * from kernels/CMakeLists.txt). A build without nvcc has no module: every GPU
 * question is answered "none". */
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"

#define MODULE_NAME "librung-train-cuda.so"
#ifndef RUNG_CUDA_MODULE_REL_DIR /* programs other than rung-train (unit tests) */
#define RUNG_CUDA_MODULE_REL_DIR "../lib/rung/"
#endif

static const TrainCudaBackend *volatile backend;
static bool tried;
static char no_backend[640] = ""; /* room for "no CUDA backend: " and a why */

int train_gpu_load(const char *path, char *why, size_t size)
{
    /* RTLD_NOW: a symbol the module lacks is said now, by name. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(why, size, "%s", dlerror());
        return -1;
    }
    const TrainCudaBackend *(*get)(void) = NULL;
    *(void **)&get = dlsym(h, TRAIN_CUDA_BACKEND_SYMBOL);
    const TrainCudaBackend *b = get != NULL ? get() : NULL;
    if (b == NULL || b->abi != TRAIN_CUDA_ABI) {
        snprintf(why, size, "%s: %s", path,
                 b == NULL ? "not rung-train's CUDA backend"
                           : "a CUDA backend of another rung-train version");
        dlclose(h);
        return -1;
    }
    backend = b; /* kept loaded for the life of the process */
    return 0;
}

/* Whether this machine may have a GPU for this process at all. */
static bool gpu_possible(void)
{
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible != NULL && (visible[0] == '\0' || strcmp(visible, "-1") == 0))
        return false;
    return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/dxg", F_OK) == 0;
}

/* The folder of the running program, with a trailing '/'. */
static bool program_dir(char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0)
        return false;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return false;
    slash[1] = '\0';
    return true;
}

static const TrainCudaBackend *get_backend(void)
{
    if (tried)
        return backend;
    tried = true;
    if (!gpu_possible()) {
        snprintf(no_backend, sizeof no_backend, "no NVIDIA device on this machine");
        return NULL;
    }
    char dir[PATH_MAX], path[PATH_MAX + 64], why[512] = "";
    if (!program_dir(dir, sizeof dir)) {
        snprintf(no_backend, sizeof no_backend, "cannot find rung-train's own folder");
        return NULL;
    }
    const char *places[] = {"", RUNG_CUDA_MODULE_REL_DIR};
    for (size_t i = 0; i < sizeof places / sizeof places[0] && backend == NULL; i++) {
        snprintf(path, sizeof path, "%s%s%s", dir, places[i], MODULE_NAME);
        if (access(path, F_OK) == 0 && train_gpu_load(path, why, sizeof why) != 0)
            break; /* there, but unusable: say why */
    }
    if (backend == NULL)
        snprintf(no_backend, sizeof no_backend, "no CUDA backend: %s",
                 why[0] ? why : "this rung-train was built without CUDA (no nvcc at build time)");
    return backend;
}

int train_gpu_devices(void)
{
    const TrainCudaBackend *b = get_backend();
    return b != NULL ? b->devices() : 0;
}

int train_gpu(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
              TrainReportFn report, void *ctx, char *why, size_t size)
{
    const TrainCudaBackend *b = get_backend();
    if (b == NULL) {
        snprintf(why, size, "%s", no_backend);
        return -1;
    }
    return b->train(cfg, train, val, report, ctx, why, size);
}

int train_gpu_unique_id(unsigned char *id, char *why, size_t size)
{
    const TrainCudaBackend *b = get_backend();
    if (b == NULL) {
        snprintf(why, size, "%s", no_backend);
        return -1;
    }
    return b->unique_id(id, why, size);
}

const char *train_gpu_absent(void)
{
    return no_backend;
}

void train_gpu_stop(void)
{
    const TrainCudaBackend *b = backend;
    if (b != NULL)
        *b->stop = 1;
}
