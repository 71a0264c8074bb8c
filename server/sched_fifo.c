/* fifo: no scheduler judges the reports; every trial runs to its end
 * (docs/schedulers.md). Its hooks are the kernel's defaults; it keeps the
 * rung records every experiment has, which judge nothing here. */
#include "core_internal.h"

static ReportAction report(Core *core, Trial *t, const ReportRead *r, const json_t *metrics,
                           int64_t now)
{
    (void)core, (void)t, (void)r, (void)metrics, (void)now;
    return ACTION_CONTINUE;
}

const SchedOps sched_fifo_ops = {
    .name = "fifo",
    .init = sched_asha_init,
    .fini = sched_asha_fini,
    .report = report,
};
