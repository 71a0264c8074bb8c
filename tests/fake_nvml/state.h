/* The state file of the fake NVML (tests/fake_nvml/CMakeLists.txt): the
 * GPUs and their processes, as a test scripts them.
 *
 * One line per GPU or process; blank lines and lines starting with # are
 * skipped; fields are separated by spaces:
 *
 *   gpu INDEX MEMORY_MB UTIL NAME...      INDEX 0, 1, ... in order; UTIL in percent
 *   proc GPU PID MEMORY_MB|- UTIL|-       a compute process on GPU; "-": NVML does
 *                                          not say (memory), or no sample (util)
 *
 * e.g.
 *
 *   gpu 0 81559 0 NVIDIA H100 80GB HBM3
 *   proc 0 4242 2048 35
 *
 * Pure: parses text; fake_nvml.c reads the file on every NVML call. */
#ifndef RUNG_TESTS_FAKE_NVML_STATE_H
#define RUNG_TESTS_FAKE_NVML_STATE_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_MAX_GPUS 16     /* a test needs a few */
#define FAKE_MAX_PROCS 256   /* processes across all GPUs */
#define FAKE_MAX_FILE 65536  /* bytes of a state file */
#define FAKE_NAME_MAX 96     /* as NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define FAKE_MAX_MB 16777216 /* 16 TiB in MiB: no GPU holds more */

typedef struct FakeGpu {
    char name[FAKE_NAME_MAX]; /* 1..FAKE_NAME_MAX - 1 bytes */
    int64_t memory_mb;        /* total, 1..FAKE_MAX_MB */
    int util;                 /* percent, 0..100 */
} FakeGpu;

typedef struct FakeProc {
    int gpu;           /* index of a gpu line above it */
    uint32_t pid;      /* 1..2^31 - 1 */
    int64_t memory_mb; /* 0..FAKE_MAX_MB, or -1 ("-") */
    int util;          /* percent 0..100, or -1 ("-": no sample) */
} FakeProc;

typedef struct FakeState {
    int n_gpus;
    FakeGpu gpus[FAKE_MAX_GPUS];
    int n_procs;
    FakeProc procs[FAKE_MAX_PROCS];
} FakeState;

/* Parses len bytes of text. 0, or -1 with why naming the line and field,
 * e.g. "line 3: proc: pid 'x' is not a number". */
int fake_state_parse(const char *text, size_t len, FakeState *out, char *why, size_t why_size);

#endif
