/* pbt's checkpoints kept in rungd's data folder (docs/schedulers.md,
 * "pbt"): which are stored, which a member still wants, which a worker owes
 * as an upload, and who may download one. */
#include "core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pbt: whether a trial of e still waits for, or is being given, trial_id's
 * stored checkpoint of step (its copy is owed until it reports past it). */
bool core_ckpt_wanted(const Experiment *e, int64_t trial_id, int64_t step)
{
    if (!core_exp_active(e))
        return false;
    for (int64_t i = e->trials_lo; i < e->cap_trials; i++) {
        const Trial *t = e->trials[i];
        if (t != NULL && t->from_trial == trial_id && t->from_step == step)
            return true;
    }
    return false;
}

/* Whether a trial of any experiment in memory wants trial_id's copy of
 * step: for a donor that already left memory (it ended and was released),
 * whose experiment the copy no longer names. Receivers never leave memory
 * while they want a copy (they are pending, paused or running). */
static bool wanted_anywhere(Core *core, int64_t trial_id, int64_t step)
{
    for (int64_t i = 0; i < core->n_exps; i++)
        if (core_ckpt_wanted(core->exps[i], trial_id, step))
            return true;
    return false;
}

/* pbt: drops e's stored checkpoints that no trial wants (all of them once
 * e ended), and those of donors no longer in memory that nobody wants:
 * the rows go with this batch, the files after its commit (engine.c). A
 * later exploit of the same donor and step asks its worker for the folder
 * again; members keep their milestones' checkpoints (docs/schedulers.md,
 * "pbt"). */
void core_drop_unneeded_ckpts(Core *core, const Experiment *e)
{
    for (int64_t i = 0; i < core->n_ckpts;) {
        const CoreCheckpoint *c = &core->ckpts[i];
        const Trial *donor = core_trial(core, c->trial_id);
        bool keep = donor != NULL ? donor->exp != e || core_ckpt_wanted(e, c->trial_id, c->step)
                                  : wanted_anywhere(core, c->trial_id, c->step);
        if (keep) {
            i++;
            continue;
        }
        rung_grow((void **)&core->dropped_ckpts, &core->cap_dropped_ckpts, core->n_dropped_ckpts,
                  sizeof *core->dropped_ckpts);
        core->dropped_ckpts[core->n_dropped_ckpts++] = *c;
        core->ckpts[i] = core->ckpts[--core->n_ckpts];
    }
}

const CoreCheckpoint *core_checkpoint(const Core *core, int64_t trial_id, int64_t step)
{
    for (int64_t i = 0; i < core->n_ckpts; i++)
        if (core->ckpts[i].trial_id == trial_id && core->ckpts[i].step == step)
            return &core->ckpts[i];
    return NULL;
}

/* Whether a pending trial of a pbt experiment waits for trial_id's
 * checkpoint of step. With worker_id > 0, only one that another worker
 * would take (core_ckpt_wanted) and whose copy is on worker_id's disk, while no
 * copy is stored: an upload that worker owes. Populations are small, so a
 * scan costs little. */
static bool owed(const Core *core, int64_t trial_id, int64_t step, int64_t worker_id)
{
    if (worker_id > 0 && core_checkpoint(core, trial_id, step) != NULL)
        return false;
    for (int64_t i = 0; i < core->n_exps; i++) {
        const Experiment *e = core->exps[i];
        if (e->pbt == NULL)
            continue;
        for (const Trial *t = e->pending.head; t != NULL; t = t->next)
            if (t->from_trial == trial_id && t->from_step == step &&
                (worker_id <= 0 || (t->ckpt_wanted && t->from_worker == worker_id)))
                return true;
    }
    return false;
}

bool core_checkpoint_owed(const Core *core, int64_t trial_id, int64_t step)
{
    return owed(core, trial_id, step, 0);
}

static CoreUpload *find_upload(const Core *core, int64_t trial_id, int64_t step, int64_t worker_id)
{
    for (int64_t i = 0; i < core->n_uploads; i++) {
        CoreUpload *u = &core->uploads[i];
        if (u->trial_id == trial_id && u->step == step && u->worker_id == worker_id)
            return u;
    }
    return NULL;
}

/* Forgets the uploads no longer owed by the worker asked (stored, no
 * receiver left, or the receivers wait for another worker now): their
 * tokens open nothing any more. */
static void prune_uploads(Core *core)
{
    for (int64_t i = 0; i < core->n_uploads;) {
        const CoreUpload *u = &core->uploads[i];
        if (owed(core, u->trial_id, u->step, u->worker_id))
            i++;
        else
            core->uploads[i] = core->uploads[--core->n_uploads];
    }
}

json_t *core_uploads_for(Core *core, const Worker *w, CoreTokenFn fresh_token)
{
    prune_uploads(core);
    json_t *list = json_array();
    for (int64_t i = 0; i < core->n_exps; i++) {
        const Experiment *e = core->exps[i];
        if (e->pbt == NULL)
            continue;
        for (const Trial *t = e->pending.head; t != NULL; t = t->next) {
            if (t->from_trial == 0 || !t->ckpt_wanted || t->from_worker != w->id ||
                core_checkpoint(core, t->from_trial, t->from_step) != NULL)
                continue;
            CoreUpload *u = find_upload(core, t->from_trial, t->from_step, w->id);
            if (u != NULL && u->listed)
                continue; /* two receivers of one copy: asked once */
            if (u == NULL) {
                rung_grow((void **)&core->uploads, &core->cap_uploads, core->n_uploads,
                          sizeof *core->uploads);
                u = &core->uploads[core->n_uploads++];
                *u = (CoreUpload){.trial_id = t->from_trial,
                                  .step = t->from_step,
                                  .worker_id = w->id};
                fresh_token(u->token); /* kept while owed: an upload under way stays valid */
            }
            u->listed = true;
            json_array_append_new(list,
                                  json_pack("{s:I, s:I, s:s}", "trial", (json_int_t)u->trial_id,
                                            "step", (json_int_t)u->step, "token", u->token));
        }
    }
    for (int64_t i = 0; i < core->n_uploads; i++)
        core->uploads[i].listed = false;
    return list;
}

int core_upload_check(const Core *core, int64_t trial_id, int64_t step, int64_t worker_id,
                      const char *token, RungError *err)
{
    if (!owed(core, trial_id, step, 0))
        return rung_error_set(err, RUNG_E_CONFLICT, NULL,
                              "no trial waits for trial %lld's checkpoint of step %lld",
                              (long long)trial_id, (long long)step);
    const CoreUpload *u = worker_id > 0 ? find_upload(core, trial_id, step, worker_id) : NULL;
    if (u == NULL || !owed(core, trial_id, step, worker_id))
        return rung_error_set(err, RUNG_E_FORBIDDEN, "worker",
                              "worker: %s%lld was not asked for trial %lld's checkpoint of step "
                              "%lld (only the worker a heartbeat reply asks uploads it)",
                              worker_id > 0 ? "worker " : "required; worker ", (long long)worker_id,
                              (long long)trial_id, (long long)step);
    if (!rung_ct_equal(token, u->token, CORE_TOKEN_LEN + 1))
        return rung_error_set(err, RUNG_E_FORBIDDEN, "upload_token",
                              "upload_token: %s the token of this upload (the heartbeat reply's "
                              "upload[].token)",
                              token == NULL ? "required; send" : "not");
    return 0;
}

int core_download_check(const Core *core, int64_t trial_id, int64_t step, int64_t worker_id,
                        const char *lease_token, RungError *err)
{
    if (worker_id <= 0)
        return rung_error_set(err, RUNG_E_FORBIDDEN, "worker",
                              "worker: required (the id of the worker that leased the trial "
                              "resuming from this checkpoint)");
    bool ok = false;
    for (const Trial *t = core->running.head; t != NULL; t = t->next)
        ok |= t->from_trial == trial_id && t->from_step == step && t->worker_id == worker_id &&
              rung_ct_equal(lease_token, t->lease_token, CORE_TOKEN_LEN + 1);
    if (!ok)
        return rung_error_set(err, RUNG_E_FORBIDDEN, "lease_token",
                              "lease_token: %s the lease of a trial of worker %lld that resumes "
                              "from trial %lld's checkpoint of step %lld",
                              lease_token == NULL ? "required; send" : "not", (long long)worker_id,
                              (long long)trial_id, (long long)step);
    return 0;
}

void core_load_checkpoint(Core *core, const CoreCheckpoint *c)
{
    rung_grow((void **)&core->ckpts, &core->cap_ckpts, core->n_ckpts, sizeof *core->ckpts);
    core->ckpts[core->n_ckpts++] = *c;
}

void core_checkpoint_stored(Core *core, const CoreCheckpoint *c)
{
    CoreCheckpoint *have = (CoreCheckpoint *)core_checkpoint(core, c->trial_id, c->step);
    if (have != NULL)
        *have = *c; /* uploaded again: the newer file replaced it */
    else
        core_load_checkpoint(core, c);
    prune_uploads(core); /* its upload token opens nothing any more */
    rung_grow((void **)&core->new_ckpts, &core->cap_new_ckpts, core->n_new_ckpts,
              sizeof *core->new_ckpts);
    core->new_ckpts[core->n_new_ckpts++] = *c;
    core->availability_changed = true; /* its receivers may be leased now */
    Trial *t = core_trial(core, c->trial_id);
    core_event(core, c->stored_at, "checkpoint.stored", t ? t->exp->id : 0, c->trial_id, 0,
               json_pack("{s:I, s:I, s:s}", "step", (json_int_t)c->step, "bytes",
                         (json_int_t)c->size, "sha256", c->sha256));
}
