/* NVML through dlopen; see gpus.h.
 *
 * The few NVML declarations we need are written out here (nvml.h is not
 * needed at build time): the types match NVML's public ABI, which NVIDIA
 * keeps stable across drivers for these versioned entry points. */
#include "gpus.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;
typedef struct {
    unsigned int gpu, memory; /* percent of the last sample period */
} nvmlUtilization_t;

#define NVML_LIBRARY "libnvidia-ml.so.1"

struct Gpus {
    void *lib; /* dlopen handle */
    int count;
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
    const char *(*error_string)(nvmlReturn_t);
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
    void *lib = dlopen(NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : NVML_LIBRARY ": cannot open");
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
        snprintf(why, why_size, "%s lacks an NVML function we need", NVML_LIBRARY);
        dlclose(lib);
        free(g);
        return NULL;
    }
    sym(lib, "nvmlErrorString", &g->error_string); /* optional: only for messages */
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
