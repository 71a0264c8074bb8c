/* Spare GPUs; see spare.h. */
#include "spare.h"

#include <string.h>

static const char *const state_names[] = {"spare", "trial", "busy", "waiting"};

const char *spare_state_name(SpareState s)
{
    return s >= SPARE_SPARE && s <= SPARE_WAITING ? state_names[s] : "unknown";
}

bool spare_is_trial_process(int64_t pgid, const int64_t *pgids, int n)
{
    if (pgid <= 0)
        return false;
    for (int i = 0; i < n; i++)
        if (pgids[i] == pgid)
            return true;
    return false;
}

void spare_foreign(const SpareParams *p, const SpareProc *procs, int n, const int64_t *pgids,
                   int n_pgids, bool per_process, double device_util, bool held,
                   int64_t *foreign_mb, double *foreign_util)
{
    int64_t mb = 0;
    double util = 0;
    for (int i = 0; i < n; i++) {
        if (procs[i].util >= 0)
            per_process = true;
        if (spare_is_trial_process(procs[i].pgid, pgids, n_pgids))
            continue;
        if (procs[i].pgid < 0 && !procs[i].unknown_before)
            continue; /* just gone, or seen once: the next sample tells */
        mb += procs[i].memory_mb >= 0 ? procs[i].memory_mb : p->foreign_mem_mb;
        if (procs[i].util > 0)
            util += procs[i].util;
    }
    if (!per_process)
        util = held ? 0 : device_util;
    if (util < 0)
        util = 0;
    *foreign_mb = mb;
    *foreign_util = util > 1 ? 1 : util;
}

bool spare_crosses(const SpareParams *p, int64_t mb, double util)
{
    return mb >= p->foreign_mem_mb || util >= p->foreign_util;
}

void spare_init(SpareGpu *g)
{
    memset(g, 0, sizeof *g);
}

void spare_sample(SpareGpu *g, const SpareParams *p, int64_t now_ms, int64_t foreign_mb,
                  double foreign_util)
{
    g->foreign_mb = foreign_mb;
    g->foreign_util = foreign_util;
    g->over = spare_crosses(p, foreign_mb, foreign_util);
    if (g->over) {
        g->any_over = true;
        g->last_over_ms = now_ms;
    }
}

int64_t spare_wait_ms(const SpareGpu *g, const SpareParams *p, int64_t now_ms)
{
    if (g->over)
        return -1;
    if (!g->any_over)
        return 0;
    int64_t left = g->last_over_ms + p->idle_ms - now_ms;
    return left > 0 ? left : 0;
}

SpareState spare_state(const SpareGpu *g, const SpareParams *p, int64_t now_ms, bool held)
{
    if (held)
        return SPARE_TRIAL;
    if (g->over)
        return SPARE_BUSY;
    return spare_wait_ms(g, p, now_ms) > 0 ? SPARE_WAITING : SPARE_SPARE;
}

bool spare_must_yield(const SpareGpu *g)
{
    return g->over;
}
