/* Trial and experiment JSON; see views.h. */
#include "nonfinite.h"
#include "views.h"

#include <math.h>

#include "clock.h"

json_t *view_time(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    char buf[RUNG_TIME_LEN];
    rung_time_format(ms, buf, sizeof buf);
    return json_string(buf);
}

json_t *view_value(double v)
{
    return rung_nonfinite_to_json(v);
}

/* Tags and notes (docs/api.md, "Tags and notes"), copied: a PATCH
 * replaces them in memory while the reply may still be on its way. */
static void view_meta(json_t *o, const json_t *tags, const char *notes)
{
    json_object_set_new(o, "tags", tags ? json_deep_copy(tags) : json_array());
    json_object_set_new(o, "notes", json_string(notes ? notes : ""));
}

json_t *view_trial(const TrialView *v)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:s, s:O, s:I}", "id", (json_int_t)v->id,
                          "experiment_id", (json_int_t)v->exp_id, "number", (json_int_t)v->number,
                          "state", trial_state_name(v->state), "config", v->config, "attempt",
                          (json_int_t)v->attempt);
    json_object_set_new(o, "worker_id",
                        v->worker_id > 0 ? json_integer(v->worker_id) : json_null());
    json_object_set_new(o, "step", v->has_step ? json_integer(v->step) : json_null());
    json_object_set_new(o, "last", v->last ? json_incref((json_t *)v->last) : json_null());
    json_object_set_new(o, "best",
                        v->has_best ? json_pack("{s:o, s:I}", "value", view_value(v->best_value),
                                                "step", (json_int_t)v->best_step)
                                    : json_null());
    json_object_set_new(o, "error", v->error ? json_string(v->error) : json_null());
    /* The error in one line, as the experiment's failure counts it: tables
     * show this rather than "exit status 1" alone. */
    char line[CORE_ERROR_SUMMARY_LEN + 1];
    if (v->error)
        core_error_summary(v->error, line, sizeof line);
    json_object_set_new(o, "error_summary", v->error ? json_string(line) : json_null());
    /* Early stopping: the rung (a time_attr milestone) where the scheduler
     * stopped or paused the trial, and its bracket under asha/hyperband. */
    json_object_set_new(o, "rung",
                        v->rung <= 0                ? json_null()
                        : v->rung == floor(v->rung) ? json_integer((json_int_t)v->rung)
                                                    : json_real(v->rung));
    if (v->bracket >= 0)
        json_object_set_new(o, "bracket", json_integer(v->bracket));
    json_t *log = v->log_tail ? json_string(v->log_tail) : NULL;
    json_object_set_new(o, "log_tail", log ? log : json_null());
    json_object_set_new(o, "created_at", view_time(v->created_at));
    json_object_set_new(o, "started_at", view_time(v->started_at));
    json_object_set_new(o, "ended_at", view_time(v->ended_at));
    const char *by = v->state == TRIAL_STOPPED ? stopped_by_name(v->stopped_by) : NULL;
    json_object_set_new(o, "stopped_by", by ? json_string(by) : json_null());
    json_object_set_new(o, "preemptions", json_integer(v->preemptions));
    json_object_set_new(o, "worker_losses", json_integer(v->worker_losses));
    json_object_set_new(o, "paused_by",
                        v->state != TRIAL_PAUSED
                            ? json_null()
                            : json_string(v->user_paused ? "user" : "scheduler"));
    json_object_set_new(o, "warnings",
                        v->warnings ? json_incref((json_t *)v->warnings)
                                    : json_pack("{s:i, s:[]}", "count", 0, "last"));
    /* The last value of each key its reports carried that was not a
     * number ({"phase": "train", "done": true}); {} before any. */
    json_object_set_new(o, "info", v->info ? json_incref((json_t *)v->info) : json_object());
    view_meta(o, v->tags, v->notes);
    /* Several objectives and constraints (docs/api.md, "The trial object"):
     * judged on the last report. */
    if (v->spec != NULL && v->spec->n_objectives > 1) {
        json_t *values = core_values_json(v->spec, v->last);
        json_object_set_new(o, "values", values ? values : json_null());
    }
    if (v->spec != NULL && v->spec->n_constraints > 0)
        json_object_set_new(o, "feasible",
                            v->last ? json_boolean(spec_feasible(v->spec, v->last)) : json_null());
    /* pbt (docs/schedulers.md, "pbt"): the trial's exploits, oldest first. */
    if (v->lineage != NULL || (v->spec != NULL && v->spec->is_pbt))
        json_object_set_new(o, "lineage",
                            v->lineage ? json_incref((json_t *)v->lineage) : json_array());
    json_object_set_new(o, "nodes", json_integer(v->nodes > 0 ? v->nodes : 1));
    json_object_set_new(o, "gang", v->gang ? view_gang(v->gang) : json_null());
    return o;
}

json_t *view_gang(const json_t *stored)
{
    json_t *addr = json_object_get(stored, "master_addr");
    json_t *port = json_object_get(stored, "master_port");
    if (!json_is_string(addr) || !json_is_integer(port))
        return json_null(); /* not a gang rungd wrote: nothing to show */
    json_t *members = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(stored, "members"), i, m) {
        json_t *rank = json_object_get(m, "rank"), *worker = json_object_get(m, "worker_id");
        if (json_is_integer(rank) && json_is_integer(worker))
            json_array_append_new(members,
                                  json_pack("{s:O, s:O}", "rank", rank, "worker_id", worker));
    }
    return json_pack("{s:o, s:O, s:O}", "members", members, "master_addr", addr, "master_port",
                     port);
}

json_t *view_event(const CoreEvent *ev)
{
    return json_pack("{s:I, s:o, s:{s:s, s:s}, s:s, s:o, s:o, s:o, s:o}", "id", (json_int_t)ev->id,
                     "at", view_time(ev->at), "actor", "kind", ev->actor_kind, "name", ev->actor,
                     "kind", ev->kind, "experiment_id",
                     ev->experiment_id > 0 ? json_integer(ev->experiment_id) : json_null(),
                     "trial_id", ev->trial_id > 0 ? json_integer(ev->trial_id) : json_null(),
                     "worker_id", ev->worker_id > 0 ? json_integer(ev->worker_id) : json_null(),
                     "detail", ev->detail ? json_incref(ev->detail) : json_object());
}

json_t *view_experiment(const ExperimentView *v)
{
    json_t *o = json_copy((json_t *)v->spec); /* shallow: the spec's members are shared */
    json_object_set_new(o, "id", json_integer(v->id));
    json_object_set_new(o, "state", json_string(exp_state_name(v->state)));
    const char *why = end_reason_name(v->ended_reason);
    json_object_set_new(o, "ended_reason", why ? json_string(why) : json_null());
    json_object_set_new(o, "error", v->error ? json_string(v->error) : json_null());
    json_object_set_new(o, "owner", v->owner ? json_string(v->owner) : json_null());
    json_object_set_new(o, "created_at", view_time(v->created_at));
    json_object_set_new(o, "ended_at", view_time(v->ended_at));
    json_object_set_new(o, "total_trials", json_integer(v->total_trials));
    json_t *c = json_object();
    for (int s = 0; s < TRIAL__COUNT; s++)
        json_object_set_new(c, trial_state_name((TrialState)s), json_integer(v->counts[s]));
    json_object_set_new(o, "counts", c);
    const BestRef *b = &v->best;
    json_object_set_new(o, "best",
                        b->has ? json_pack("{s:I, s:o, s:O, s:I}", "trial_id",
                                           (json_int_t)b->trial_id, "value", view_value(b->value),
                                           "config", b->config, "step", (json_int_t)b->step)
                               : json_null());
    if (v->pareto != NULL)
        json_object_set(o, "pareto", v->pareto);
    view_meta(o, v->tags, v->notes);
    return o;
}

void view_of_trial(const Trial *t, TrialView *out)
{
    AshaType sched = t->exp->spec.sched.type;
    *out = (TrialView){.id = t->id,
                       .exp_id = t->exp->id,
                       .number = t->number,
                       .state = t->state,
                       .config = t->config,
                       .attempt = t->attempt,
                       .worker_id = t->worker_id,
                       .has_step = t->has_step,
                       .step = t->step,
                       .last = t->last,
                       .has_best = t->has_best,
                       .best_value = t->best_value,
                       .best_step = t->best_step,
                       .error = t->error,
                       .rung = t->rung,
                       .bracket = sched == ASHA_ASHA || sched == ASHA_HYPERBAND
                                      ? core_trial_bracket(t)
                                      : -1,
                       .log_tail = t->log_tail,
                       .stopped_by = (StoppedBy)t->stopped_by,
                       .user_paused = t->user_paused,
                       .preemptions = t->preemptions,
                       .worker_losses = t->worker_losses,
                       .warnings = t->warnings,
                       .info = t->info,
                       .tags = t->tags,
                       .notes = json_string_value(t->notes),
                       .lineage = t->lineage,
                       .nodes = t->exp->spec.nodes,
                       .gang = t->gang_json,
                       .spec = &t->exp->spec,
                       .created_at = t->created_at,
                       .started_at = t->started_at,
                       .ended_at = t->ended_at};
}

void view_of_experiment(const Experiment *x, ExperimentView *out)
{
    *out = (ExperimentView){.id = x->id,
                            .spec = x->spec.json,
                            .state = x->state,
                            .created_at = x->created_at,
                            .ended_at = x->ended_at,
                            .total_trials = x->spec.total_trials,
                            .ended_reason = x->ended_reason,
                            .error = x->error,
                            .owner = x->owner,
                            .tags = x->spec.tags,
                            .notes = json_string_value(x->spec.notes)};
    for (int s = 0; s < TRIAL__COUNT; s++)
        out->counts[s] = x->counts[s];
    core_experiment_best(x, &out->best);
    out->pareto = core_experiment_pareto(x);
}
