/* Spare GPUs: whether a GPU is free of other people's work, and whether a
 * trial on it must give way (docs/workers.md, "Spare GPUs").
 *
 * A process on a GPU is foreign when it is in none of the process groups of
 * the worker's running trials (each trial runs in a group of its own,
 * runner.h). A sample of a GPU crosses the thresholds when its foreign
 * processes hold at least foreign_mem_mb MiB, or use at least foreign_util
 * of it. A GPU is spare when no sample within the last idle_ms crossed: the
 * window covers only what this worker has seen, so at start a GPU with no
 * foreign use is spare at once. A trial on a GPU whose latest sample
 * crossed gives the GPU back (--yield auto).
 *
 * Pure: the caller samples NVML and the process groups and passes the time
 * in; nothing here does I/O, so tests/unit/test_spare.c drives it. */
#ifndef RUNG_WORKER_SPARE_H
#define RUNG_WORKER_SPARE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct SpareParams {
    int64_t idle_ms;        /* --idle-s: a GPU is spare after this long without a crossing */
    int64_t foreign_mem_mb; /* --foreign-mem-mb: foreign MiB that count as use, >= 1 */
    double foreign_util;    /* --foreign-util / 100: foreign busy fraction that counts, 0..1 */
} SpareParams;

/* A GPU's state as heartbeats show it (docs/api.md, the heartbeat's gpus). */
typedef enum {
    SPARE_SPARE,   /* offered in lease requests */
    SPARE_TRIAL,   /* held by a running trial */
    SPARE_BUSY,    /* foreign processes over the thresholds now */
    SPARE_WAITING, /* foreign use ended, but not idle_ms ago yet */
} SpareState;

/* What the worker knows of one GPU's recent foreign use. */
typedef struct SpareGpu {
    bool any_over;        /* some sample crossed since the worker started */
    int64_t last_over_ms; /* when the last one did (the caller's clock) */
    bool over;            /* the latest sample crossed */
    int64_t foreign_mb;   /* the latest sample: foreign MiB, >= 0 */
    double foreign_util;  /* the latest sample: foreign busy fraction, 0..1 */
} SpareGpu;

/* One process on a GPU, as the caller saw it. */
typedef struct SpareProc {
    int64_t pid;
    int64_t pgid;        /* its process group; -1 when unknown (gone, or not visible) */
    bool unknown_before; /* its group was unknown in the previous sample too */
    int64_t memory_mb;   /* -1 when NVML does not say */
    double util;         /* its busy fraction of the GPU, 0..1; -1 when unknown */
} SpareProc;

const char *spare_state_name(SpareState s);

/* Whether a process in group pgid is one of the trials' (pgids: the
 * groups of the running trials, n of them). An unknown group (-1) is not. */
bool spare_is_trial_process(int64_t pgid, const int64_t *pgids, int n);

/* The foreign use of one GPU from its processes (n of them) and, for the
 * processes NVML reports no utilization of, the GPU's own busy fraction
 * device_util (0..1). A foreign process whose memory NVML does not tell
 * counts as foreign_mem_mb (it may hold any amount). Utilization is the
 * sum of the foreign processes' when NVML gives per-process figures (util
 * >= 0 for at least one process, or per_process true); otherwise the GPU's
 * own figure counts as foreign when no trial holds it (held false), and as
 * none when one does (its trial's use cannot be told apart). */
void spare_foreign(const SpareParams *p, const SpareProc *procs, int n, const int64_t *pgids,
                   int n_pgids, bool per_process, double device_util, bool held,
                   int64_t *foreign_mb, double *foreign_util);

/* Whether foreign use of mb MiB and util crosses the thresholds. */
bool spare_crosses(const SpareParams *p, int64_t mb, double util);

void spare_init(SpareGpu *g);
/* Records a sample taken at now_ms (ms, non-decreasing). */
void spare_sample(SpareGpu *g, const SpareParams *p, int64_t now_ms, int64_t foreign_mb,
                  double foreign_util);
/* The GPU's state at now_ms; held: a running trial holds it. */
SpareState spare_state(const SpareGpu *g, const SpareParams *p, int64_t now_ms, bool held);
/* Whether a trial holding the GPU must give it back now: the latest sample
 * crossed (--yield auto). */
bool spare_must_yield(const SpareGpu *g);
/* Milliseconds from now_ms until the GPU turns spare if nothing crosses
 * meanwhile: 0 when it is spare (or held), -1 while the latest sample
 * crosses. */
int64_t spare_wait_ms(const SpareGpu *g, const SpareParams *p, int64_t now_ms);

#endif
