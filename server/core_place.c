/* Placement's facts, which the kernel, the lease and the gangs read: the
 * fair share an experiment joins when it runs, whether a worker and an
 * offer fit an experiment, what a lease grants, and the workers a gang
 * holds, released when its experiment stops running. It changes no trial's
 * state, so the kernel may call it without a cycle. */
#include "core_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Placement follows e's new state: running, it joins the fair share;
 * paused or ended, it forms no gang and its held workers go free. */
void core_place_exp_state(Core *core, Experiment *e)
{
    if (e->state == EXP_RUNNING)
        core_join_share(core, e);
    else
        core_holds_release(core, e);
}

/* An experiment that starts running (submitted, resumed, extended) joins
 * the others at the lowest pass among them, as stride scheduling does: it
 * is neither owed the leases given before it came nor behind for them. */
void core_join_share(Core *core, Experiment *e)
{
    bool any = false;
    double low = 0;
    for (int64_t i = 0; i < core->n_exps; i++) {
        const Experiment *o = core->exps[i];
        if (o != e && o->state == EXP_RUNNING && (!any || o->pass < low)) {
            low = o->pass;
            any = true;
        }
    }
    if (any && e->pass < low)
        e->pass = low;
}

/* Whether the array `key` of w's caps holds name ("" : any entry). */
static bool offers(const Worker *w, const char *key, const char *name)
{
    json_t *list = w->caps ? json_object_get(w->caps, key) : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (name[0] == '\0' || strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

/* Whether w carries every label of the experiment's worker_selector, and
 * offers the environment and container runtime its trainable names
 * (docs/api.md, "trainable"). */
bool core_selected(const Experiment *e, const Worker *w)
{
    if (e->spec.environment[0] != '\0' && !offers(w, "environments", e->spec.environment))
        return false;
    if (e->spec.container && !offers(w, "containers", e->spec.container_runtime))
        return false;
    const char *key;
    json_t *want;
    json_object_foreach(e->spec.worker_selector, key, want) {
        json_t *have = w->labels ? json_object_get(w->labels, key) : NULL;
        if (!json_is_string(have) || strcmp(json_string_value(have), json_string_value(want)) != 0)
            return false;
    }
    return true;
}

bool core_fits(const Experiment *e, const Worker *w, const LeaseOffer *offer)
{
    if (e->spec.max_concurrent > 0 && e->counts[TRIAL_RUNNING] >= e->spec.max_concurrent)
        return false;
    if ((offer->trainables & SPEC_TRAINABLE_BIT(e->spec.trainable)) == 0 || !core_selected(e, w))
        return false;
    if (offer->no_downloads && e->spec.working_dir[0] != '\0')
        return false; /* its cache disk is full (docs/api.md, "lease") */
    return e->spec.gpus <= offer->n_gpus && e->spec.cpus <= offer->cpus;
}

/* What a lease grants on one worker: the first spec.gpus of the offered
 * GPUs, in the offer's order, and spec.cpus CPUs (a new object). */
json_t *core_grant(const Experiment *e, const LeaseOffer *offer)
{
    json_t *gpus = json_array();
    for (int64_t i = 0; i < e->spec.gpus; i++)
        json_array_append_new(gpus, json_integer(offer->gpus[i]));
    return json_pack("{s:o, s:I}", "gpus", gpus, "cpus", (json_int_t)e->spec.cpus);
}

/* Takes worker_id's hold off e's gathering, keeping the others' order. */
void core_hold_drop(Core *core, Experiment *e, int64_t worker_id)
{
    GangWait *g = &e->gang;
    int64_t kept = 0;
    for (int64_t i = 0; i < g->n_holds; i++)
        if (g->holds[i].worker_id != worker_id)
            g->holds[kept++] = g->holds[i];
    g->n_holds = kept;
    if (kept == 0)
        g->first_hold_ms = 0; /* the next hold starts the wait afresh */
    Worker *w = core_worker(core, worker_id);
    if (w != NULL && w->held_for == e->id)
        w->held_for = 0;
}

/* Releases every hold of e: its workers may take other trials now. */
void core_holds_release(Core *core, Experiment *e)
{
    GangWait *g = &e->gang;
    for (int64_t i = 0; i < g->n_holds; i++) {
        Worker *w = core_worker(core, g->holds[i].worker_id);
        if (w != NULL && w->held_for == e->id)
            w->held_for = 0;
    }
    if (g->n_holds > 0)
        core->availability_changed = true; /* their parked leases look again */
    g->n_holds = 0;
    g->first_hold_ms = 0;
}
