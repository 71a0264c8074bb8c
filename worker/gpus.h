/* The machine's GPUs, through NVML opened at run time.
 *
 * The worker does not link CUDA or NVML (docs/architecture.md): it dlopen()s
 * libnvidia-ml.so.1, which ships with the driver, so one binary runs on GPU
 * and CPU-only machines alike. No library, a missing symbol or an NVML error
 * means zero GPUs, never a crash. NVML's own functions are thread-safe, so
 * one Gpus may serve the main, the heartbeat and the GPU watch thread.
 *
 * The environment variable RUNG_NVML_LIBRARY names another library to open
 * instead (a path, or a name for the dynamic linker to search): an NVML
 * that is not where the linker looks, or tests/fake_nvml's stand-in. */
#ifndef RUNG_WORKER_GPUS_H
#define RUNG_WORKER_GPUS_H

#include <stddef.h>
#include <stdint.h>

#define GPUS_NAME_MAX 96    /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define GPUS_MAX_PROCS 1024 /* processes read per GPU; more are not looked at */
#define GPUS_UNSUPPORTED -2 /* this NVML or GPU cannot answer that question */

typedef struct Gpus Gpus;

typedef struct GpuInfo {
    int index;                /* NVML index (PCI bus order) */
    char name[GPUS_NAME_MAX]; /* "NVIDIA H100 80GB HBM3" */
    int64_t memory_mb;        /* total memory, MiB */
} GpuInfo;

typedef struct GpuUsage {
    double util;             /* busy fraction of the last sample period, 0..1 */
    int64_t memory_used_mb;  /* MiB */
    int64_t memory_total_mb; /* MiB */
} GpuUsage;

/* A compute process on a GPU. */
typedef struct GpuProc {
    int64_t pid;       /* as the host numbers it */
    int64_t memory_mb; /* MiB of GPU memory it holds; -1 when NVML does not say */
} GpuProc;

/* A process's share of a GPU's time, from NVML's recent samples. */
typedef struct GpuProcUtil {
    int64_t pid;
    double util; /* busy fraction (SM), 0..1: the highest sample in the window */
} GpuProcUtil;

/* Opens NVML. NULL when there is none (why, of why_size bytes, says what
 * failed, for a log line); free with gpus_close. */
Gpus *gpus_open(char *why, size_t why_size);
/* Shuts NVML down; NULL is fine. */
void gpus_close(Gpus *g);

/* How many GPUs NVML sees; 0 for NULL. */
int gpus_count(const Gpus *g);
/* Name and memory of GPU index: 0, or -1 when NVML fails for it. */
int gpus_info(const Gpus *g, int index, GpuInfo *out);
/* Utilization and memory in use of GPU index: 0, or -1. */
int gpus_usage(const Gpus *g, int index, GpuUsage *out);
/* The compute processes on GPU index, at most max of them into out:
 * how many, GPUS_UNSUPPORTED, or -1 when NVML fails. */
int gpus_processes(const Gpus *g, int index, GpuProc *out, int max);
/* The processes that used GPU index within the last window_ms, with the
 * highest busy fraction NVML sampled for each, at most max of them: how
 * many (0 when none used it), GPUS_UNSUPPORTED, or -1. */
int gpus_process_util(const Gpus *g, int index, int64_t window_ms, GpuProcUtil *out, int max);

#endif
