/* NVML through dlopen; see gpus.h.
 *
 * The few NVML declarations we need are written out here (nvml.h is not
 * needed at build time): the types match NVML's public ABI, which NVIDIA
 * keeps stable across drivers for these versioned entry points. One
 * exception: nvmlDeviceGetComputeRunningProcesses_v3 took a larger struct
 * in some R535 drivers (with usedGpuCcProtectedMemory) and the v2 struct
 * again later, so the _v2 entry point, whose struct never changed, is
 * preferred and _v3 is only a fallback for a library without it. */
#include "gpus.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;
typedef struct {
    unsigned int gpu, memory; /* percent of the last sample period */
} nvmlUtilization_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;                   /* microseconds since the epoch */
    unsigned int smUtil, memUtil, encUtil, decUtil; /* percent */
} nvmlProcessUtilizationSample_t;

#define NVML_LIBRARY "libnvidia-ml.so.1"
#define NVML_LIBRARY_ENV "RUNG_NVML_LIBRARY" /* another library to open (gpus.h) */
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6

struct Gpus {
    void *lib; /* dlopen handle */
    int count;
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
    const char *(*error_string)(nvmlReturn_t);
    /* Optional: NULL when the library lacks them (GPUS_UNSUPPORTED). */
    nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *);
    nvmlReturn_t (*process_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                                 unsigned long long);
};

/* dlsym into a function pointer without the object/function cast warning. */
static int sym(void *lib, const char *name, void *fn_ptr)
{
    void *p = dlsym(lib, name);
    if (p == NULL)
        return -1;
    memcpy(fn_ptr, &p, sizeof p);
    return 0;
}

Gpus *gpus_open(char *why, size_t why_size)
{
    const char *path = getenv(NVML_LIBRARY_ENV);
    if (path == NULL || path[0] == '\0')
        path = NVML_LIBRARY;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : "cannot open the NVML library");
        return NULL;
    }
    Gpus *g = calloc(1, sizeof *g);
    if (g == NULL) {
        snprintf(why, why_size, "out of memory");
        dlclose(lib);
        return NULL;
    }
    g->lib = lib;
    nvmlReturn_t (*init)(void) = NULL;
    nvmlReturn_t (*count)(unsigned int *) = NULL;
    if (sym(lib, "nvmlInit_v2", &init) || sym(lib, "nvmlShutdown", &g->shutdown) ||
        sym(lib, "nvmlDeviceGetCount_v2", &count) ||
        sym(lib, "nvmlDeviceGetHandleByIndex_v2", &g->handle_by_index) ||
        sym(lib, "nvmlDeviceGetName", &g->name) ||
        sym(lib, "nvmlDeviceGetMemoryInfo", &g->memory) ||
        sym(lib, "nvmlDeviceGetUtilizationRates", &g->utilization)) {
        snprintf(why, why_size, "%s lacks an NVML function we need", path);
        dlclose(lib);
        free(g);
        return NULL;
    }
    sym(lib, "nvmlErrorString", &g->error_string); /* optional: only for messages */
    if (sym(lib, "nvmlDeviceGetComputeRunningProcesses_v2", &g->processes) != 0)
        sym(lib, "nvmlDeviceGetComputeRunningProcesses_v3", &g->processes);
    sym(lib, "nvmlDeviceGetProcessUtilization", &g->process_util);
    nvmlReturn_t rc = init();
    if (rc != 0) {
        snprintf(why, why_size, "nvmlInit failed: %s",
                 g->error_string ? g->error_string(rc) : "error");
        dlclose(lib);
        free(g);
        return NULL;
    }
    unsigned int n = 0;
    rc = count(&n);
    if (rc != 0) {
        snprintf(why, why_size, "nvmlDeviceGetCount failed: %s",
                 g->error_string ? g->error_string(rc) : "error");
        g->shutdown();
        dlclose(lib);
        free(g);
        return NULL;
    }
    g->count = (int)n;
    return g;
}

void gpus_close(Gpus *g)
{
    if (g == NULL)
        return;
    g->shutdown();
    dlclose(g->lib);
    free(g);
}

int gpus_count(const Gpus *g)
{
    return g ? g->count : 0;
}

static int device(const Gpus *g, int index, nvmlDevice_t *dev)
{
    if (g == NULL || index < 0 || index >= g->count)
        return -1;
    return g->handle_by_index((unsigned int)index, dev) == 0 ? 0 : -1;
}

int gpus_info(const Gpus *g, int index, GpuInfo *out)
{
    memset(out, 0, sizeof *out);
    out->index = index;
    nvmlDevice_t dev;
    if (device(g, index, &dev) != 0)
        return -1;
    if (g->name(dev, out->name, sizeof out->name) != 0)
        snprintf(out->name, sizeof out->name, "GPU %d", index);
    out->name[sizeof out->name - 1] = '\0';
    nvmlMemory_t mem;
    if (g->memory(dev, &mem) == 0)
        out->memory_mb = (int64_t)(mem.total / (1024 * 1024));
    return 0;
}

int gpus_usage(const Gpus *g, int index, GpuUsage *out)
{
    memset(out, 0, sizeof *out);
    nvmlDevice_t dev;
    nvmlMemory_t mem;
    nvmlUtilization_t util;
    if (device(g, index, &dev) != 0 || g->memory(dev, &mem) != 0 || g->utilization(dev, &util) != 0)
        return -1;
    out->util = util.gpu / 100.0;
    out->memory_used_mb = (int64_t)(mem.used / (1024 * 1024));
    out->memory_total_mb = (int64_t)(mem.total / (1024 * 1024));
    return 0;
}

int gpus_processes(const Gpus *g, int index, GpuProc *out, int max)
{
    nvmlDevice_t dev;
    if (device(g, index, &dev) != 0)
        return -1;
    if (g->processes == NULL)
        return GPUS_UNSUPPORTED;
    unsigned int n = GPUS_MAX_PROCS;
    nvmlProcessInfo_v2_t *info = calloc(n, sizeof *info);
    if (info == NULL)
        return -1;
    nvmlReturn_t rc = g->processes(dev, &n, info);
    int got = -1;
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
        got = GPUS_UNSUPPORTED;
    } else if (rc == 0) {
        got = 0;
        for (unsigned int i = 0; i < n && i < GPUS_MAX_PROCS && got < max; i++) {
            unsigned long long bytes = info[i].usedGpuMemory;
            out[got++] = (GpuProc){
                .pid = info[i].pid,
                .memory_mb = bytes == NVML_VALUE_NOT_AVAILABLE ? -1
                                                               : (int64_t)(bytes / (1024 * 1024)),
            };
        }
    }
    free(info);
    return got;
}

int gpus_process_util(const Gpus *g, int index, int64_t window_ms, GpuProcUtil *out, int max)
{
    nvmlDevice_t dev;
    if (device(g, index, &dev) != 0)
        return -1;
    if (g->process_util == NULL)
        return GPUS_UNSUPPORTED;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* NVML stamps samples with wall-clock microseconds */
    long long now_us = (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    long long since = now_us - window_ms * 1000;
    unsigned int n = GPUS_MAX_PROCS;
    nvmlProcessUtilizationSample_t *s = calloc(n, sizeof *s);
    if (s == NULL)
        return -1;
    nvmlReturn_t rc = g->process_util(dev, s, &n, since > 0 ? (unsigned long long)since : 0);
    int got = -1;
    if (rc == NVML_ERROR_NOT_FOUND) {
        got = 0; /* no process used the GPU since then */
    } else if (rc == NVML_ERROR_NOT_SUPPORTED) {
        got = GPUS_UNSUPPORTED;
    } else if (rc == 0) {
        /* One sample per process and period: keep each process's highest. */
        got = 0;
        for (unsigned int i = 0; i < n && i < GPUS_MAX_PROCS; i++) {
            double util = (s[i].smUtil > 100 ? 100 : s[i].smUtil) / 100.0;
            int k = 0;
            while (k < got && out[k].pid != (int64_t)s[i].pid)
                k++;
            if (k < got) {
                if (util > out[k].util)
                    out[k].util = util;
            } else if (got < max) {
                out[got++] = (GpuProcUtil){.pid = s[i].pid, .util = util};
            }
        }
    }
    free(s);
    return got;
}
