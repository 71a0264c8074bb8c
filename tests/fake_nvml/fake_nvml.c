/* A stand-in for NVML (libnvidia-ml.so.1) whose GPUs and processes come
 * from a state file (state.h) named by $RUNG_FAKE_NVML_STATE, read again on
 * every call: a test edits the file (write a new one, rename it over) to
 * make foreign processes appear and leave while rung-worker runs. It
 * exports what worker/gpus.c looks up, with NVML's signatures and
 * structs; rung-worker opens it through RUNG_NVML_LIBRARY (gpus.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state.h"

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct nvmlDevice *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* NVML's codes (nvml.h, nvmlReturn_t). */
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_UNKNOWN = 999,
};
#define MIB (1024ULL * 1024ULL)
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

/* Why the last read of the state file failed, for nvmlErrorString. */
static __thread char last_error[512];

static nvmlReturn_t read_state(FakeState *st, char *text);

/* Reads the state file into *st (a new FakeState: free it, also on
 * failure); NVML_SUCCESS or NVML_ERROR_UNKNOWN (last_error). */
static nvmlReturn_t load(FakeState **out)
{
    FakeState *st = *out = calloc(1, sizeof *st);
    char *text = malloc(FAKE_MAX_FILE + 1);
    nvmlReturn_t rc = st && text ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
    if (rc != NVML_SUCCESS)
        snprintf(last_error, sizeof last_error, "fake NVML: out of memory");
    if (rc == NVML_SUCCESS)
        rc = read_state(st, text);
    free(text);
    return rc;
}

/* The state file into st, through text (FAKE_MAX_FILE + 1 bytes). */
static nvmlReturn_t read_state(FakeState *st, char *text)
{
    const char *path = getenv("RUNG_FAKE_NVML_STATE");
    if (path == NULL || path[0] == '\0') {
        snprintf(last_error, sizeof last_error, "fake NVML: RUNG_FAKE_NVML_STATE is not set");
        return NVML_ERROR_UNKNOWN;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(last_error, sizeof last_error, "fake NVML: cannot open %s", path);
        return NVML_ERROR_UNKNOWN;
    }
    size_t n = fread(text, 1, FAKE_MAX_FILE + 1, f);
    fclose(f);
    char why[256];
    if (fake_state_parse(text, n, st, why, sizeof why) != 0) {
        snprintf(last_error, sizeof last_error, "fake NVML: %s: %s", path, why);
        return NVML_ERROR_UNKNOWN;
    }
    return NVML_SUCCESS;
}

/* The GPU a handle stands for (handles are index + 1), or -1. */
static int gpu_of(const FakeState *st, nvmlDevice_t dev)
{
    intptr_t i = (intptr_t)dev - 1;
    return i >= 0 && i < st->n_gpus ? (int)i : -1;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    FakeState *st;
    nvmlReturn_t rc = load(&st);
    free(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
    if (rc == NVML_ERROR_UNKNOWN && last_error[0])
        return last_error;
    return rc == NVML_SUCCESS ? "Success" : "fake NVML error";
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    FakeState *st;
    nvmlReturn_t rc = load(&st);
    if (rc == NVML_SUCCESS)
        *count = (unsigned int)st->n_gpus;
    free(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
    FakeState *st;
    nvmlReturn_t rc = load(&st);
    if (rc == NVML_SUCCESS && index >= (unsigned int)st->n_gpus)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *dev = (nvmlDevice_t)(intptr_t)(index + 1);
    free(st);
    return rc;
}

/* Reads the state and finds dev's GPU: NVML_SUCCESS with *st (free it)
 * and *g set, or an error (and *st NULL). */
static nvmlReturn_t device(nvmlDevice_t dev, FakeState **st, int *g)
{
    nvmlReturn_t rc = load(st);
    *g = rc == NVML_SUCCESS ? gpu_of(*st, dev) : -1;
    if (rc == NVML_SUCCESS && *g < 0)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc != NVML_SUCCESS) {
        free(*st);
        *st = NULL;
    }
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length)
{
    FakeState *st;
    int g;
    nvmlReturn_t rc = device(dev, &st, &g);
    if (rc == NVML_SUCCESS && length == 0)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        snprintf(name, length, "%s", st->gpus[g].name);
    free(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
    FakeState *st;
    int g;
    nvmlReturn_t rc = device(dev, &st, &g);
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned long long used = 0;
    for (int i = 0; i < st->n_procs; i++)
        if (st->procs[i].gpu == g && st->procs[i].memory_mb > 0)
            used += (unsigned long long)st->procs[i].memory_mb * MIB;
    mem->total = (unsigned long long)st->gpus[g].memory_mb * MIB;
    mem->used = used < mem->total ? used : mem->total;
    mem->free = mem->total - mem->used;
    free(st);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util)
{
    FakeState *st;
    int g;
    nvmlReturn_t rc = device(dev, &st, &g);
    if (rc != NVML_SUCCESS)
        return rc;
    int sum = 0;
    for (int i = 0; i < st->n_procs; i++)
        if (st->procs[i].gpu == g && st->procs[i].util > 0)
            sum += st->procs[i].util;
    int busy = st->gpus[g].util > sum ? st->gpus[g].util : sum;
    util->gpu = (unsigned int)(busy > 100 ? 100 : busy);
    util->memory = util->gpu / 2;
    free(st);
    return NVML_SUCCESS;
}

static nvmlReturn_t processes(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_v2_t *infos)
{
    FakeState *st;
    int g;
    nvmlReturn_t rc = device(dev, &st, &g);
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned int n = 0;
    for (int i = 0; i < st->n_procs; i++)
        n += st->procs[i].gpu == g;
    rc = NVML_SUCCESS;
    if (count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (infos == NULL || *count < n) {
        *count = n;
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        unsigned int k = 0;
        for (int i = 0; i < st->n_procs; i++) {
            const FakeProc *p = &st->procs[i];
            if (p->gpu != g)
                continue;
            infos[k++] = (nvmlProcessInfo_v2_t){
                .pid = p->pid,
                .usedGpuMemory = p->memory_mb < 0 ? NVML_VALUE_NOT_AVAILABLE
                                                  : (unsigned long long)p->memory_mb * MIB,
            };
        }
        *count = n;
    }
    free(st);
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count,
                                                            nvmlProcessInfo_v2_t *infos)
{
    return processes(dev, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                                            nvmlProcessInfo_v2_t *infos)
{
    return processes(dev, count, infos);
}

/* One sample per process with a utilization, stamped now: NVML keeps
 * samples of the last few seconds and returns those after last_seen. */
EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev,
                                                    nvmlProcessUtilizationSample_t *samples,
                                                    unsigned int *count,
                                                    unsigned long long last_seen)
{
    FakeState *st;
    int g;
    nvmlReturn_t rc = device(dev, &st, &g);
    if (rc != NVML_SUCCESS)
        return rc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long now = (unsigned long long)ts.tv_sec * 1000000ULL +
                             (unsigned long long)ts.tv_nsec / 1000ULL;
    unsigned int n = 0;
    for (int i = 0; i < st->n_procs; i++)
        n += st->procs[i].gpu == g && st->procs[i].util >= 0;
    if (count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (n == 0 || last_seen >= now) {
        rc = NVML_ERROR_NOT_FOUND;
    } else if (samples == NULL || *count < n) {
        *count = n;
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        unsigned int k = 0;
        for (int i = 0; i < st->n_procs; i++) {
            const FakeProc *p = &st->procs[i];
            if (p->gpu == g && p->util >= 0)
                samples[k++] = (nvmlProcessUtilizationSample_t){.pid = p->pid,
                                                                .timeStamp = now,
                                                                .smUtil = (unsigned int)p->util};
        }
        *count = n;
    }
    free(st);
    return rc;
}
