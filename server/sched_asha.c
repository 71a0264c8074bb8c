/* The asha family (asha, hyperband, median; fifo judges nothing) inside
 * the Core: a report is judged by asha.c's rung records (continue, pause at
 * a rung, stop, complete), paused trials are promoted, and the end game
 * settles the last paused ones (docs/schedulers.md). */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The milestone of rung k of t's bracket. */
static double milestone(const Trial *t, int k)
{
    double m[ASHA_MAX_RUNGS];
    const AshaParams *p = asha_params(t->exp->asha);
    int n = asha_rungs(p, asha_bracket(p, t->number), m);
    return k >= 0 && k < n ? m[k] : 0;
}

/* Promotes the paused trials that now rank in the top of their rung. They
 * come highest rung first; pushing to the front in reverse keeps that order. */
static void promote_ready(Core *core, Experiment *e, int64_t now)
{
    if (e->counts[TRIAL_PAUSED] == 0)
        return;
    int64_t n = e->counts[TRIAL_PAUSED];
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    if (ids == NULL)
        abort();
    n = asha_promotions(e->asha, ids, n);
    for (int64_t i = n - 1; i >= 0; i--) {
        Trial *t = core_exp_trial(e, ids[i]);
        if (t != NULL && t->state == TRIAL_PAUSED)
            core_trial_resume(core, t, now);
    }
    free(ids);
}

/* Several objectives: the scheduler's point of a report (every objective,
 * as a loss, and whether it meets the constraints; docs/schedulers.md,
 * "Several objectives") into pt, which it returns; NULL when the report
 * lacks an objective or one is not finite (never judged, as a report
 * without the metric). */
static const AshaPoint *sched_point(const Experiment *e, const json_t *metrics, AshaPoint *pt)
{
    double loss[SPEC_MAX_OBJECTIVES];
    if (metrics == NULL || !spec_losses(&e->spec, metrics, loss))
        return NULL;
    for (int k = 0; k < e->spec.n_objectives; k++) {
        if (!isfinite(loss[k]))
            return NULL;
        pt->loss[k] = loss[k];
    }
    pt->feasible = spec_feasible(&e->spec, metrics);
    return pt;
}

/* What a trial that ended as completed or stopped leaves in the rung
 * records at its end, from its last report (Ray's on_trial_complete):
 * when it ends here, and again for an ended trial a restart loads. */
static void trial_end(Experiment *e, const Trial *t)
{
    double v;
    AshaPoint pt;
    bool has = t->last != NULL && core_exp_objective(e, t->last, &v) == 1 && isfinite(v);
    if (e->spec.n_objectives > 1)
        asha_trial_end_point(e->asha, t->number, t->time,
                             t->has_time ? sched_point(e, t->last, &pt) : NULL);
    else
        asha_trial_end(e->asha, t->number, t->time, has && t->has_time, has ? v : 0);
}

/* Nothing runs, nothing is pending and no new trial will come, yet trials
 * are paused: promote the one the end game picks, or stop them all. */
static void endgame(Core *core, Experiment *e, int64_t now)
{
    e->hold_endgame = true;
    int64_t n = asha_endgame(e->asha);
    Trial *chosen = n >= 0 ? core_exp_trial(e, n) : NULL;
    if (chosen != NULL && chosen->state == TRIAL_PAUSED) {
        core_trial_resume(core, chosen, now);
    } else {
        for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
            Trial *t = e->trials[i];
            if (t != NULL && t->state == TRIAL_PAUSED)
                core_end_for_scheduler(core, t, TRIAL_STOPPED, now);
        }
    }
    e->hold_endgame = false;
}

/* The scheduler's answer to a report of a running trial, with the state
 * change it brings. */
static ReportAction report(Core *core, Trial *t, const ReportRead *r, const json_t *metrics,
                           int64_t now)
{
    Experiment *e = t->exp;
    if (!r->has_time)
        return ACTION_CONTINUE;
    double time = r->time, v = r->value;
    bool has = r->has_value;
    int rung;
    AshaPoint pt;
    AshaDecision d = e->spec.n_objectives > 1
                         ? asha_report_point(e->asha, t->number, time,
                                             has ? sched_point(e, metrics, &pt) : NULL, &rung)
                         : asha_report(e->asha, t->number, time, has, has ? v : 0, &rung);
    /* The trial's last time and value are this report's from here on. */
    t->time = time;
    t->has_time = true;
    json_decref(t->last);
    t->last = json_incref((json_t *)metrics);
    ReportAction a = ACTION_STOP;
    e->hold_endgame = true; /* promotions first, then the end game */
    switch (d) {
    case ASHA_CONTINUE:
        a = ACTION_CONTINUE;
        break;
    case ASHA_STOP:
        t->rung = milestone(t, rung);
        core_end_for_scheduler(core, t, TRIAL_STOPPED, now);
        break;
    case ASHA_COMPLETE:
        core_end_for_scheduler(core, t, TRIAL_COMPLETED, now);
        break;
    case ASHA_PAUSE:
        t->rung = milestone(t, rung);
        core_set_state(core, t, TRIAL_PAUSED, now);
        break;
    }
    e->hold_endgame = false;
    /* A value recorded at a rung (by the report, or by the trial's end)
     * can lift paused trials. */
    promote_ready(core, e, now);
    core_maybe_complete(core, e, now);
    return a;
}

static void attempt_reset(Experiment *e, const Trial *t)
{
    asha_trial_reset(e->asha, t->number);
}

static void forget(Experiment *e, const Trial *t)
{
    asha_trial_forget(e->asha, t->number);
}

/* A stored report replayed into the rung records, as it was judged. */
static void load_report(Trial *t, const ReportRead *r, const json_t *metrics)
{
    Experiment *e = t->exp;
    AshaPoint pt;
    if (e->spec.n_objectives > 1 && r->has_time && r->has_value)
        asha_replay_point(e->asha, t->number, r->time, sched_point(e, metrics, &pt));
    else if (r->has_time && r->has_value && isfinite(r->value))
        asha_replay(e->asha, t->number, r->time, true, r->value);
}

/* A loaded trial the scheduler paused waits at its rung again. */
static void load_paused(Experiment *e, const Trial *t)
{
    asha_trial_paused(e->asha, t->number, asha_rung_index(e->asha, t->number, t->rung));
}

/* The rung records every experiment has (core_trial_bracket reads their
 * parameters; fifo's and pbt's judge nothing). */
void sched_asha_init(Experiment *e)
{
    AshaParams sched = e->spec.sched;
    sched.objectives = e->spec.n_objectives;
    e->asha = asha_new(&sched);
    if (e->asha == NULL)
        abort();
}

void sched_asha_fini(Experiment *e)
{
    asha_free(e->asha);
}

const SchedOps sched_asha_ops = {
    .name = "asha",
    .init = sched_asha_init,
    .fini = sched_asha_fini,
    .report = report,
    .trial_end = trial_end,
    .promote = promote_ready,
    .idle = endgame,
    .attempt_reset = attempt_reset,
    .forget = forget,
    .load_report = load_report,
    .load_paused = load_paused,
    .wants_ended_reports = true,
};
