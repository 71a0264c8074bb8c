/* What is said about experiments and trials, and what they were
 * (docs/api.md, "Tags and notes", "The submitted spec", "Timeline"):
 * PATCH of a trial's tags and notes, an experiment's spec as submitted
 * beside the one it runs with, and when and where its trials ran. The
 * experiments' PATCH of tags and notes is api_experiments.c's, beside
 * its other fields. */
#include "api_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmtnum.h"
#include "jsonv.h"
#include "store_read.h"

void api_trial_patch(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    static const char *const keys[] = {"tags", "notes", NULL};
    json_t *tags = NULL, *notes = NULL;
    if (jsonv_object(job->body, "", RUNG_E_BAD_JSON, &err) ||
        jsonv_only_keys(job->body, "", keys, RUNG_E_INVALID_ARGUMENT, &err) ||
        spec_meta_patch(job->body, &tags, &notes, &err)) {
        api_fail(job, &err);
        return;
    }
    Trial *t = core_trial(engine_core(e), job->ids[0]);
    if (t != NULL) {
        core_set_trial_meta(engine_core(e), t, tags, notes);
        api_event(e, job, "trial.patched", t->exp->id, t->id, 0, json_deep_copy(job->body));
        json_t *o = api_trial_json(t);
        api_artifacts_describe(e, t->id, o);
        api_reply(job, 200, o);
        return;
    }
    /* Not in memory: it ended, and only its row changes, in a savepoint of
     * the batch's transaction as an experiment's DELETE does. */
    Store *store = engine_store(e);
    int64_t exp_id = 0;
    int rc = store_trial_experiment(store, job->ids[0], &exp_id, &err);
    if (rc == 0 && (store_savepoint(store, &err) != 0 ||
                    store_set_trial_meta(store, job->ids[0], tags, notes, &err) != 0 ||
                    store_release_savepoint(store, &err) != 0)) {
        store_rollback_savepoint(store);
        rc = err.code;
    }
    json_decref(tags);
    json_decref(notes);
    if (rc != 0) {
        api_fail(job, &err);
        return;
    }
    api_event(e, job, "trial.patched", exp_id, job->ids[0], 0, json_deep_copy(job->body));
    api_trial_get(e, job); /* the row as it is now, in this transaction */
}

void api_experiment_spec(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    Experiment *x = core_experiment(engine_core(e), job->ids[0]);
    json_t *submitted = NULL, *effective = NULL;
    if (x != NULL && x->spec.submitted != NULL) {
        /* Submitted in this very batch: its row is not written yet. */
        submitted = json_loads(x->spec.submitted, 0, NULL);
    } else if (store_read_submitted(engine_store(e), job->ids[0], &submitted,
                                    x != NULL ? NULL : &effective, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    if (x != NULL) {
        /* In memory, the spec may be newer than its row. */
        effective = json_deep_copy(x->spec.json);
        json_object_set_new(effective, "tags", json_deep_copy(x->spec.tags));
        json_object_set(effective, "notes", x->spec.notes);
    }
    api_reply(job, 200,
              json_pack("{s:o, s:o}", "submitted", submitted ? submitted : json_null(), "effective",
                        effective));
}

static int by_start(const void *a, const void *b)
{
    const TimelineRow *x = a, *y = b;
    if (x->started_at != y->started_at)
        return x->started_at < y->started_at ? -1 : 1;
    return (x->trial_id > y->trial_id) - (x->trial_id < y->trial_id);
}

void api_experiment_timeline(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    Core *core = engine_core(e);
    Store *store = engine_store(e);
    Experiment *x = core_experiment(core, job->ids[0]);
    int64_t owner;
    if (x == NULL && store_experiment_owner(store, job->ids[0], &owner, &err) != 0) {
        api_fail(job, &err); /* 404 for no such experiment */
        return;
    }
    /* The store keeps each trial's current attempt only (its worker,
     * started_at and ended_at; an attempt that a retry or a lost worker
     * ended leaves no row of its own), so the timeline has one item per
     * trial that was leased. */
    json_t *workers = json_object();
    TimelineRow *rows = NULL;
    int64_t n = 0;
    if (store_read_timeline(store, job->ids[0], &rows, &n, workers, &err) != 0) {
        json_decref(workers);
        api_fail(job, &err);
        return;
    }
    /* A trial in memory is newer than its row (a lease or an end of this
     * batch): its values replace the row's. */
    for (int64_t i = 0; x != NULL && i < n; i++) {
        Trial *t = core_trial(core, rows[i].trial_id);
        if (t == NULL)
            continue;
        rows[i] = (TimelineRow){.trial_id = t->id,
                                .attempt = t->attempt,
                                .worker_id = t->worker_id,
                                .started_at = t->started_at,
                                .ended_at = t->ended_at,
                                .state = t->state};
    }
    if (n > 1) /* rows is NULL when there are none */
        qsort(rows, (size_t)n, sizeof *rows, by_start);
    /* Written as text, as the curves are: 50,000 items as jansson arrays
     * cost the engine thread several times more (docs/api.md gives the
     * time). Every value is a number, null or a state's name. */
    char *buf;
    size_t len;
    FILE *out = api_reply_stream(&buf, &len);
    fputs("{\"items\": [", out);
    const char *sep = "";
    for (int64_t i = 0; i < n; i++) {
        const TimelineRow *r = &rows[i];
        if (r->started_at == 0) /* retried since: pending again */
            continue;
        /* rung_fmt_i64, not fprintf: glibc's printf parsed the format of
         * each of 50,000 items anew, a third of the call's time. */
        char item[6 * RUNG_FMTNUM_MAX + 32];
        size_t used = 0;
        int64_t nums[5] = {r->trial_id, r->attempt, r->worker_id, r->started_at, r->ended_at};
        item[used++] = '[';
        for (int k = 0; k < 5; k++) {
            if (nums[k] > 0 || k == 3) {
                used += rung_fmt_i64(item + used, nums[k]);
            } else {
                memcpy(item + used, "null", 4); /* no worker; running */
                used += 4;
            }
            memcpy(item + used, ", ", 2);
            used += 2;
        }
        const char *state = trial_state_name(r->state); /* a short ASCII word */
        size_t n_state = strlen(state);
        item[used++] = '"';
        memcpy(item + used, state, n_state);
        used += n_state;
        memcpy(item + used, "\"]", 2);
        used += 2;
        fputs(sep, out);
        fwrite(item, 1, used, out);
        sep = ", ";
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)r->worker_id);
        Worker *w = r->worker_id > 0 && json_object_get(workers, key) == NULL
                        ? core_worker(core, r->worker_id)
                        : NULL;
        if (w != NULL)
            json_object_set_new(workers, key, json_string(w->name));
    }
    fputs("], \"workers\": ", out);
    json_dumpf(workers, out, JSON_COMPACT);
    fputs("}", out);
    fclose(out);
    json_decref(workers);
    free(rows);
    job->status = 200;
    job->text = buf;
    job->text_len = len;
    job->content_type = "application/json";
}
