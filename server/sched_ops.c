/* Which scheduler an experiment has: the one place that names them all
 * (core_internal.h, SchedOps). A new scheduler is a new sched_*.c with its
 * table, and a line here. */
#include "core_internal.h"

void sched_attach(Experiment *e)
{
    if (e->spec.is_pbt)
        e->sched = &sched_pbt_ops;
    else if (e->spec.sched.type == ASHA_FIFO)
        e->sched = &sched_fifo_ops;
    else
        e->sched = &sched_asha_ops;
    e->sched->init(e);
}
