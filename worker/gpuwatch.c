/* The GPU watch; see gpuwatch.h. */
#include "gpuwatch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define NS_PER_MS 1000000LL
#define GPUWATCH_MAX_UNKNOWN 64 /* processes of unknown group remembered per GPU */
#define GPUWATCH_MAX_PGIDS 1024 /* trials' groups looked at: more trials than any box runs */

/* One offered GPU, by its position in the slots. */
typedef struct WatchGpu {
    SpareGpu spare;
    bool sampled;                          /* spare holds at least one sample */
    bool unsupported;                      /* NVML cannot list its processes: never marked used */
    bool failing;                          /* the last read failed (logged once per streak) */
    bool used;                             /* marked used in the slots (logged on change) */
    int64_t unknown[GPUWATCH_MAX_UNKNOWN]; /* pids whose group was unknown last time */
    int n_unknown;
} WatchGpu;

struct GpuWatch {
    GpuWatchHost h;                /* the worker's, copied */
    WatchGpu gpus[SLOTS_MAX_GPUS]; /* under *h.mu once the thread runs */
    bool open_known, open;         /* --hours allowed leasing at the last look */
    /* The watch thread's own buffers. */
    GpuProc *procs;
    GpuProcUtil *utils;
    SpareProc *seen;
};

GpuWatch *gpuwatch_new(const GpuWatchHost *host)
{
    if (host->hours == NULL && (host->gpus == NULL || host->slots->n_gpus == 0))
        return NULL;
    GpuWatch *gw = calloc(1, sizeof *gw);
    if (gw == NULL)
        return NULL;
    gw->h = *host;
    gw->procs = malloc(GPUS_MAX_PROCS * sizeof *gw->procs);
    gw->utils = malloc(GPUS_MAX_PROCS * sizeof *gw->utils);
    gw->seen = malloc(2 * GPUS_MAX_PROCS * sizeof *gw->seen);
    if (gw->procs == NULL || gw->utils == NULL || gw->seen == NULL) {
        gpuwatch_free(gw);
        return NULL;
    }
    for (int i = 0; i < SLOTS_MAX_GPUS; i++)
        spare_init(&gw->gpus[i].spare);
    return gw;
}

void gpuwatch_free(GpuWatch *gw)
{
    if (gw == NULL)
        return;
    free(gw->procs);
    free(gw->utils);
    free(gw->seen);
    free(gw);
}

/* ---- working hours ---- */

int64_t gpuwatch_closed_ms(const Hours *hours)
{
    if (hours == NULL)
        return 0;
    int64_t now_ms = rung_now_ms();
    time_t next = hours_next_allowed(hours, (time_t)(now_ms / 1000));
    int64_t left = (int64_t)next * 1000 - now_ms;
    return left > 0 ? left : 0;
}

int64_t gpuwatch_open_left_s(const Hours *hours)
{
    if (hours == NULL)
        return INT32_MAX;
    time_t now = time(NULL);
    time_t end = hours_end(hours, now);
    if (end == 0)
        return gpuwatch_closed_ms(hours) > 0 ? 0 : INT32_MAX;
    return end > now ? (int64_t)(end - now) : 0;
}

/* "Mon 2026-11-23 19:00 CET": a local time for log lines. */
static void local_text(time_t t, char *buf, size_t size)
{
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(buf, size, "%a %Y-%m-%d %H:%M %Z", &tm) == 0)
        snprintf(buf, size, "%lld", (long long)t);
}

void gpuwatch_hours_json(const Hours *hours, const char *hours_text, json_t *body)
{
    json_object_set_new(body, "hours", hours_text ? json_string(hours_text) : json_null());
    int64_t closed = gpuwatch_closed_ms(hours);
    json_t *next = json_null();
    if (closed > 0) {
        char buf[RUNG_TIME_LEN];
        rung_time_format(rung_now_ms() + closed, buf, sizeof buf);
        next = json_string(buf);
    }
    json_object_set_new(body, "next_lease_at", next);
}

/* ---- sampling ---- */

static bool was_unknown(const WatchGpu *g, int64_t pid)
{
    for (int i = 0; i < g->n_unknown; i++)
        if (g->unknown[i] == pid)
            return true;
    return false;
}

/* Reads one GPU's processes into gw->seen; how many, GPUS_UNSUPPORTED, or
 * -1. *per_process: NVML gave per-process utilization; *device_util: the
 * GPU's own busy fraction. Called without the lock (NVML and /proc only). */
static int read_gpu(GpuWatch *gw, int index, const WatchGpu *g, bool *per_process,
                    double *device_util)
{
    int n = gpus_processes(gw->h.gpus, index, gw->procs, GPUS_MAX_PROCS);
    if (n < 0)
        return n;
    int m = gpus_process_util(gw->h.gpus, index, GPUWATCH_UTIL_WINDOW_MS, gw->utils,
                              GPUS_MAX_PROCS);
    *per_process = m >= 0;
    GpuUsage usage;
    *device_util = gpus_usage(gw->h.gpus, index, &usage) == 0 ? usage.util : 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        gw->seen[k++] =
            (SpareProc){.pid = gw->procs[i].pid, .memory_mb = gw->procs[i].memory_mb, .util = -1};
    /* Utilization of processes NVML does not list as compute ones (a
     * desktop's graphics): they hold no memory we know of. */
    for (int j = 0; j < m; j++) {
        int i = 0;
        while (i < k && gw->seen[i].pid != gw->utils[j].pid)
            i++;
        if (i == k)
            gw->seen[k++] = (SpareProc){.pid = gw->utils[j].pid, .memory_mb = 0, .util = -1};
        gw->seen[i].util = gw->utils[j].util;
    }
    for (int i = 0; i < k; i++) {
        pid_t pgid = getpgid((pid_t)gw->seen[i].pid);
        gw->seen[i].pgid = pgid > 0 ? pgid : -1;
        gw->seen[i].unknown_before = gw->seen[i].pgid < 0 && was_unknown(g, gw->seen[i].pid);
    }
    return k;
}

/* Remembers which processes' groups were unknown this time. */
static void keep_unknown(WatchGpu *g, const SpareProc *seen, int n)
{
    g->n_unknown = 0;
    for (int i = 0; i < n && g->n_unknown < GPUWATCH_MAX_UNKNOWN; i++)
        if (seen[i].pgid < 0)
            g->unknown[g->n_unknown++] = seen[i].pid;
}

/* What a sample of GPU position i (offered index) found; caller holds the
 * lock. */
static bool apply_sample(GpuWatch *gw, WatchGpu *g, int index, int64_t now, int64_t mb, double util)
{
    const GpuWatchHost *h = &gw->h;
    const SpareParams *p = h->spare;
    spare_sample(&g->spare, p, now, mb, util);
    g->sampled = true;
    bool used = spare_wait_ms(&g->spare, p, now) != 0;
    if (used != g->used) {
        if (used)
            LOG_INFO("GPU %d: in use by other processes (%" PRId64
                     " MiB, %.0f%%; thresholds %" PRId64
                     " MiB, %.0f%%): not offered until it is idle for %" PRId64 " s",
                     index, mb, util * 100, p->foreign_mem_mb, p->foreign_util * 100,
                     p->idle_ms / 1000);
        else
            LOG_INFO("GPU %d: spare again (no other use for %" PRId64 " s)", index,
                     p->idle_ms / 1000);
        g->used = used;
    }
    bool changed = slots_set_used(h->slots, index, used);
    if (h->yield && spare_must_yield(&g->spare) && h->holder(h->ctx, index) != 0) {
        char why[160];
        snprintf(why, sizeof why,
                 "GPU %d is wanted (other processes hold %" PRId64 " MiB and use %.0f%% of it)",
                 index, mb, util * 100);
        h->give_back(h->ctx, index, why);
    }
    return changed;
}

/* Looks at --hours; gives every running trial back when they end (--yield
 * auto). Returns whether leasing became allowed. Caller holds the lock. */
static bool check_hours(GpuWatch *gw)
{
    const GpuWatchHost *h = &gw->h;
    if (h->hours == NULL)
        return false;
    int64_t closed = gpuwatch_closed_ms(h->hours);
    bool open = closed == 0;
    bool opened = open && gw->open_known && !gw->open;
    if (!gw->open_known || open != gw->open) {
        if (open) {
            LOG_INFO("within --hours '%s': taking trials", h->hours_text);
        } else {
            char when[64];
            local_text((time_t)((rung_now_ms() + closed) / 1000), when, sizeof when);
            LOG_INFO("outside --hours '%s': no new trials until %s%s", h->hours_text, when,
                     h->yield && h->n_trials(h->ctx) > 0 ? "; giving the running ones back" : "");
        }
        gw->open = open;
        gw->open_known = true;
    }
    if (!open && h->yield)
        h->give_back(h->ctx, -1, "outside --hours");
    return opened;
}

/* One look at every GPU and the clock. */
static void watch_once(GpuWatch *gw)
{
    const GpuWatchHost *h = &gw->h;
    int64_t pgids[GPUWATCH_MAX_PGIDS];
    bool held[SLOTS_MAX_GPUS];
    int n_gpus = h->gpus != NULL ? h->slots->n_gpus : 0; /* read-only after start */
    pthread_mutex_lock(h->mu);
    int n_pgids = h->groups(h->ctx, pgids, GPUWATCH_MAX_PGIDS);
    for (int i = 0; i < n_gpus; i++)
        held[i] = h->slots->gpu_busy[i];
    pthread_mutex_unlock(h->mu);

    bool changed = false;
    for (int i = 0; i < n_gpus; i++) {
        WatchGpu *g = &gw->gpus[i];
        int index = h->slots->gpu_index[i];
        if (g->unsupported)
            continue;
        bool per_process = false;
        double device_util = 0;
        int n = read_gpu(gw, index, g, &per_process, &device_util);
        if (n == GPUS_UNSUPPORTED) {
            LOG_WARN("GPU %d: NVML cannot list its processes; it is offered whoever uses it",
                     index);
            g->unsupported = true;
            continue;
        }
        if (n < 0) {
            if (!g->failing)
                LOG_WARN("GPU %d: NVML cannot read its processes now; keeping its last state",
                         index);
            g->failing = true;
            continue;
        }
        g->failing = false;
        int64_t mb;
        double util;
        spare_foreign(h->spare, gw->seen, n, pgids, n_pgids, per_process, device_util, held[i], &mb,
                      &util);
        keep_unknown(g, gw->seen, n);
        pthread_mutex_lock(h->mu);
        changed |= apply_sample(gw, g, index, rung_mono_ns() / NS_PER_MS, mb, util);
        pthread_mutex_unlock(h->mu);
    }
    pthread_mutex_lock(h->mu);
    changed |= check_hours(gw);
    if (changed)
        pthread_cond_broadcast(h->cond); /* the lease thread may offer more now */
    pthread_mutex_unlock(h->mu);
}

void gpuwatch_look(GpuWatch *gw)
{
    if (gw != NULL)
        watch_once(gw);
}

void *gpuwatch_main(void *arg)
{
    GpuWatch *gw = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(gw->h.exiting)) {
        watch_once(gw);
        next.tv_nsec += GPUWATCH_PERIOD_MS * NS_PER_MS;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + 1)
            next = now; /* fell behind (a stopped process): no burst of catching up */
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
    }
    return NULL;
}

/* ---- heartbeats ---- */

void gpuwatch_annotate(const GpuWatch *gw, const GpuWatchHost *h, json_t *gpus)
{
    size_t i;
    json_t *item;
    int64_t now = rung_mono_ns() / NS_PER_MS;
    pthread_mutex_lock(h->mu);
    json_array_foreach(gpus, i, item) {
        int index = (int)json_integer_value(json_object_get(item, "index"));
        int pos = 0;
        while (pos < h->slots->n_gpus && h->slots->gpu_index[pos] != index)
            pos++;
        if (pos == h->slots->n_gpus)
            continue;
        int64_t trial = h->holder(h->ctx, index);
        bool held = h->slots->gpu_busy[pos];
        const WatchGpu *g = gw ? &gw->gpus[pos] : NULL;
        SpareState st = held ? SPARE_TRIAL : SPARE_SPARE;
        if (g != NULL && g->sampled)
            st = spare_state(&g->spare, h->spare, now, held);
        json_object_set_new(item, "state", json_string(spare_state_name(st)));
        if (st == SPARE_TRIAL && trial != 0)
            json_object_set_new(item, "trial_id", json_integer(trial));
        if (g != NULL && g->sampled) {
            json_object_set_new(item, "foreign_mb", json_integer(g->spare.foreign_mb));
            json_object_set_new(item, "foreign_util", json_real(g->spare.foreign_util));
        }
    }
    pthread_mutex_unlock(h->mu);
}
