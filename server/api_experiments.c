/* The experiments' routes (docs/api.md, "Experiments"): create, list,
 * get, the user's verbs (cancel, pause, resume, patch, retry-failed,
 * delete), and the history of one experiment's trials (the list, the CSV
 * and the learning curves). */
#include "api_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blobs.h"
#include "notify.h"
#include "rank.h"
#include "store_read.h"
#include "views.h"

#define A RUNG_E_INVALID_ARGUMENT
#define CURVES_MAX 250000     /* metric values per curves call; page with after */
#define CURVES_BEST_MAX 10000 /* curves?best=K: at most this many trials' curves */

static json_t *experiment_json(const Experiment *x)
{
    ExperimentView v;
    view_of_experiment(x, &v);
    json_t *o = view_experiment(&v);
    json_decref(v.pareto);
    return o;
}

void api_experiment_create(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    Spec spec;
    if (spec_parse(job->body, engine_seed(), &spec, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    /* A working directory is uploaded before the experiment that runs it. */
    if (spec.working_dir[0] != '\0' &&
        !blobs_held(engine_config(e)->data_dir, spec.working_dir, NULL)) {
        rung_error_set(&err, RUNG_E_INVALID_SPEC, "trainable.working_dir",
                       "trainable.working_dir: rungd holds no blob sha256:%s: upload it first "
                       "(PUT /api/v1/blobs/%s; the rung clients do)",
                       spec.working_dir, spec.working_dir);
        spec_close(&spec);
        api_fail(job, &err);
        return;
    }
    /* notify: only names of the admin's notifiers (docs/api.md, "notify"). */
    const json_t *chosen = spec.notify;
    for (size_t i = 0; i < json_array_size(chosen); i++) {
        const char *name = json_string_value(json_array_get(chosen, i));
        const struct Notify *n = engine_config(e)->notify;
        if (n == NULL || notify_find(notify_config(n), name) == NULL) {
            char field[40];
            snprintf(field, sizeof field, "notify[%zu]", i);
            rung_error_set(&err, RUNG_E_INVALID_SPEC, field,
                           "%s: rungd has no notifier '%s' (an admin names them in "
                           "--notify-file)",
                           field, name);
            spec_close(&spec);
            api_fail(job, &err);
            return;
        }
    }
    /* warm_start: its source's trials, read before the experiment exists. */
    struct Warm *warm = NULL;
    if (spec.warm_start_exp > 0 &&
        store_read_warm(engine_store(e), &spec, engine_now(e), true, &warm, &err) != 0) {
        spec_close(&spec);
        api_fail(job, &err);
        return;
    }
    /* The body as submitted (GET .../spec), stored with the row. */
    spec.submitted = json_dumps(job->body, JSON_COMPACT);
    Experiment *x = core_experiment_add(engine_core(e), &spec, engine_now(e));
    core_experiment_set_warm(x, warm);
    core_set_owner(x, job->who.user_id, job->who.name);
    api_event(e, job, "experiment.submitted", x->id, 0, 0,
              json_pack("{s:s, s:I}", "name", x->spec.name, "trials",
                        (json_int_t)x->spec.total_trials));
    api_reply(job, 201, experiment_json(x));
}

void api_experiment_list(Engine *e, Job *job)
{
    RungError err;
    int64_t limit, offset;
    if (api_query_int(job, "limit", LIST_DEFAULT, 1, LIST_MAX, &limit, &err) ||
        api_query_int(job, "offset", 0, 0, INT64_MAX, &offset, &err)) {
        api_fail(job, &err);
        return;
    }
    const char *tag;
    if (api_query_tag(job, &tag))
        return;
    int64_t ids[LIST_MAX], total;
    json_t *items;
    if (store_read_experiments(engine_store(e), tag, limit, offset, &items, ids, &total, &err)) {
        api_fail(job, &err);
        return;
    }
    /* Those in memory are newer than their rows. */
    for (size_t i = 0; i < json_array_size(items); i++) {
        Experiment *x = core_experiment(engine_core(e), ids[i]);
        if (x != NULL)
            json_array_set_new(items, i, experiment_json(x));
    }
    api_reply(job, 200, api_list_json(items, total));
}

void api_experiment_get(Engine *e, Job *job)
{
    Experiment *x = core_experiment(engine_core(e), job->ids[0]);
    if (x) {
        api_reply(job, 200, experiment_json(x));
        return;
    }
    RungError err;
    json_t *o;
    if (store_read_experiment(engine_store(e), job->ids[0], &o, &err))
        api_fail(job, &err);
    else
        api_reply(job, 200, o);
}

/* 409 for an experiment (o, stolen) that has ended and cannot be `what`. */
static void ended_conflict(Job *job, json_t *o, const char *what)
{
    char msg[160];
    snprintf(msg, sizeof msg, "experiment %lld is %s: it cannot be %s",
             (long long)json_integer_value(json_object_get(o, "id")),
             json_string_value(json_object_get(o, "state")), what);
    json_decref(o);
    api_error(job, RUNG_E_CONFLICT, "", msg);
}

void api_experiment_cancel(Engine *e, Job *job)
{
    Experiment *x = core_experiment(engine_core(e), job->ids[0]);
    if (x == NULL) {
        /* Not in memory: it ended (or never was). */
        RungError err;
        json_t *o;
        if (store_read_experiment(engine_store(e), job->ids[0], &o, &err)) {
            api_fail(job, &err);
            return;
        }
        const char *state = json_string_value(json_object_get(o, "state"));
        if (state != NULL && strcmp(state, "canceled") == 0)
            api_reply(job, 200, o);
        else
            ended_conflict(job, o, "canceled");
        return;
    }
    RungError err;
    if (core_cancel(engine_core(e), x, engine_now(e), &err) != 0) {
        api_fail(job, &err);
        return;
    }
    api_event(e, job, "experiment.canceled", x->id, 0, 0, NULL);
    api_reply(job, 200, experiment_json(x));
}

/* The experiment of job->ids[0] when it is in memory (running, paused, or
 * ended with trials still stopping). Otherwise it has ended (or never
 * was): the reply is set, 409 naming its state or 404, and NULL returned. */
static Experiment *active_experiment(Engine *e, Job *job, const char *what)
{
    Experiment *x = core_experiment(engine_core(e), job->ids[0]);
    if (x != NULL)
        return x;
    RungError err;
    json_t *o;
    if (store_read_experiment(engine_store(e), job->ids[0], &o, &err))
        api_fail(job, &err);
    else
        ended_conflict(job, o, what);
    return NULL;
}

/* The experiment of job->ids[0], read back into memory when it ended and
 * left it (to run again). NULL with the reply set when there is none. */
static Experiment *revived_experiment(Engine *e, Job *job)
{
    Experiment *x = core_experiment(engine_core(e), job->ids[0]);
    RungError err;
    if (x == NULL && store_revive_experiment(engine_store(e), engine_core(e), job->ids[0],
                                             engine_now(e), &err) != 0) {
        api_fail(job, &err);
        return NULL;
    }
    return x ? x : core_experiment(engine_core(e), job->ids[0]);
}

void api_experiment_pause(Engine *e, Job *job)
{
    const char *running = json_string_value(json_object_get(job->query, "running"));
    if (running != NULL && strcmp(running, "pause") != 0 && strcmp(running, "finish") != 0) {
        api_error(job, RUNG_E_INVALID_ARGUMENT, "running",
                  "running: must be pause (pause the running trials too) or finish (the "
                  "default: let them finish)");
        return;
    }
    Experiment *x = active_experiment(e, job, "paused");
    if (x == NULL)
        return;
    RungError err;
    bool running_too = running != NULL && strcmp(running, "pause") == 0;
    if (core_pause(engine_core(e), x, running_too, engine_now(e), &err) != 0) {
        api_fail(job, &err);
        return;
    }
    api_event(e, job, "experiment.paused", x->id, 0, 0,
              json_pack("{s:s}", "running", running_too ? "pause" : "finish"));
    api_reply(job, 200, experiment_json(x));
}

void api_experiment_resume(Engine *e, Job *job)
{
    Experiment *x = active_experiment(e, job, "resumed");
    if (x == NULL)
        return;
    RungError err;
    if (core_resume(engine_core(e), x, engine_now(e), &err) != 0) {
        api_fail(job, &err);
        return;
    }
    api_event(e, job, "experiment.resumed", x->id, 0, 0, NULL);
    api_reply(job, 200, experiment_json(x));
}

/* Tags and notes of an experiment that is not in memory: written to its
 * row alone, in a savepoint of the batch's transaction (as DELETE does),
 * without reading it back in. */
static void patch_stored_meta(Engine *e, Job *job, json_t *tags, json_t *notes)
{
    Store *store = engine_store(e);
    RungError err;
    rung_error_clear(&err);
    json_t *o = NULL;
    if (store_savepoint(store, &err) != 0 ||
        store_set_experiment_meta(store, job->ids[0], tags, notes, &err) != 0 ||
        store_release_savepoint(store, &err) != 0 ||
        store_read_experiment(store, job->ids[0], &o, &err) != 0) {
        store_rollback_savepoint(store);
        api_fail(job, &err);
    } else {
        api_event(e, job, "experiment.patched", job->ids[0], 0, 0, json_deep_copy(job->body));
        api_reply(job, 200, o);
    }
    json_decref(tags);
    json_decref(notes);
}

void api_experiment_patch(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    /* tags and notes (docs/api.md, "Tags and notes") are checked first,
     * so that a body with a bad one changes nothing; they may change on
     * an experiment of any state, the other fields only as before. */
    json_t *tags = NULL, *notes = NULL;
    if (json_is_object(job->body) && spec_meta_patch(job->body, &tags, &notes, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    json_t *rest = json_is_object(job->body) ? json_copy(job->body) : json_incref(job->body);
    json_object_del(rest, "tags");
    json_object_del(rest, "notes");
    bool meta_only = (tags != NULL || notes != NULL) && json_object_size(rest) == 0;
    Experiment *x = meta_only ? core_experiment(engine_core(e), job->ids[0])
                              : revived_experiment(e, job);
    if (x == NULL && meta_only) {
        json_decref(rest);
        patch_stored_meta(e, job, tags, notes);
        return;
    }
    if (x == NULL ||
        (!meta_only && core_patch(engine_core(e), x, rest, engine_now(e), &err) != 0)) {
        if (x != NULL)
            api_fail(job, &err);
        json_decref(rest);
        json_decref(tags);
        json_decref(notes);
        return;
    }
    json_decref(rest);
    if (tags != NULL || notes != NULL)
        core_set_exp_meta(engine_core(e), x, tags, notes);
    api_event(e, job, "experiment.patched", x->id, 0, 0, json_deep_copy(job->body));
    api_reply(job, 200, experiment_json(x));
}

void api_experiment_retry_failed(Engine *e, Job *job)
{
    Experiment *x = revived_experiment(e, job);
    if (x == NULL)
        return;
    RungError err;
    rung_error_clear(&err);
    int64_t n = 0;
    if (store_readd_failed(engine_store(e), engine_core(e), x, &err) != 0 ||
        core_retry_failed(engine_core(e), x, engine_now(e), &n, &err) != 0) {
        api_fail(job, &err);
        return;
    }
    api_event(e, job, "experiment.retried", x->id, 0, 0,
              json_pack("{s:I}", "trials", (json_int_t)n));
    api_reply(job, 200,
              json_pack("{s:I, s:o}", "retried", (json_int_t)n, "experiment", experiment_json(x)));
}

void api_experiment_delete(Engine *e, Job *job)
{
    int64_t id = job->ids[0];
    Core *core = engine_core(e);
    Experiment *x = core_experiment(core, id);
    RungError err;
    rung_error_clear(&err);
    if (x != NULL) {
        /* In memory: it runs, is paused, has trials still stopping, or
         * ended in this very batch (it leaves memory once committed). */
        char msg[160];
        if (x->state == EXP_RUNNING || x->state == EXP_PAUSED)
            snprintf(msg, sizeof msg, "experiment %lld is %s: cancel it first", (long long)id,
                     exp_state_name(x->state));
        else if (x->counts[TRIAL_RUNNING] > 0)
            snprintf(msg, sizeof msg,
                     "experiment %lld is %s with running trials: wait for them to stop",
                     (long long)id, exp_state_name(x->state));
        else
            snprintf(msg, sizeof msg, "experiment %lld has just ended: try again", (long long)id);
        api_error(job, RUNG_E_CONFLICT, "", msg);
        return;
    }
    json_t *o;
    if (store_read_experiment(engine_store(e), id, &o, &err)) {
        api_fail(job, &err);
        return;
    }
    ExpState state = EXP_COMPLETED;
    exp_state_parse(json_string_value(json_object_get(o, "state")), &state);
    json_decref(o);
    if (core_warm_source_in_use(core, id)) {
        char msg[128];
        snprintf(msg, sizeof msg, "experiment %lld: a running experiment warm-starts from it",
                 (long long)id);
        api_error(job, RUNG_E_CONFLICT, "", msg);
        return;
    }
    /* Several statements in the batch's transaction, outside the savepoint
     * the engine writes the core's changes in: all of them or none, or a
     * failure part-way would commit the rows deleted before it. */
    Store *store = engine_store(e);
    int64_t counts[TRIAL__COUNT];
    if (store_savepoint(store, &err) != 0 || store_delete_experiment(store, id, counts, &err) ||
        store_release_savepoint(store, &err) != 0) {
        store_rollback_savepoint(store);
        api_fail(job, &err);
        return;
    }
    core_forget_deleted(core, state, counts);
    api_blob_sweep(e);             /* its working directory, when nothing else runs it (blobs.h) */
    api_artifacts_forget(e, id);   /* its trials' kept folders */
    engine_analysis_forget(e, id); /* its cached importance and surfaces */
    int64_t n = 0;
    for (int k = 0; k < TRIAL__COUNT; k++)
        n += counts[k];
    api_event(e, job, "experiment.deleted", id, 0, 0, json_pack("{s:I}", "trials", (json_int_t)n));
    api_reply(job, 200,
              json_pack("{s:I, s:I}", "deleted", (json_int_t)id, "trials", (json_int_t)n));
}

void api_experiment_trials(Engine *e, Job *job)
{
    RungError err;
    int64_t limit, offset;
    if (api_query_int(job, "limit", LIST_DEFAULT, 1, LIST_MAX, &limit, &err) ||
        api_query_int(job, "offset", 0, 0, INT64_MAX, &offset, &err)) {
        api_fail(job, &err);
        return;
    }
    const char *state_s = json_string_value(json_object_get(job->query, "state"));
    const char *sort = json_string_value(json_object_get(job->query, "sort"));
    TrialState state = TRIAL_PENDING;
    bool filter = state_s != NULL && state_s[0] != '\0';
    if (filter && trial_state_parse(state_s, &state) != 0) {
        api_error(job, A, "state",
                  "state: must be pending, running, completed, stopped, failed, canceled or "
                  "paused");
        return;
    }
    if (sort && sort[0] && strcmp(sort, "value") != 0 && strcmp(sort, "number") != 0) {
        api_error(job, A, "sort", "sort: must be number or value");
        return;
    }
    const char *tag;
    if (api_query_tag(job, &tag))
        return;
    Spec own;
    bool owned;
    const Spec *spec = api_spec_of(e, job, job->ids[0], &own, &owned);
    if (spec == NULL)
        return;
    Store *store = engine_store(e);
    int st = filter ? (int)state : -1;
    json_t *items = NULL;
    int64_t total = 0;
    int rc = 0;
    if (sort && strcmp(sort, "value") == 0) {
        /* Ranked here: trials in memory have newer bests than their rows. */
        TrialRank *ranks;
        rc = store_read_trial_ranks(store, spec, job->ids[0], st, tag, &ranks, &total, &err);
        if (rc == 0) {
            for (int64_t i = 0; i < total; i++) {
                Trial *t = core_trial(engine_core(e), ranks[i].id);
                if (t != NULL) {
                    ranks[i].has_best = t->has_best;
                    ranks[i].loss = t->has_best ? spec_loss(spec, t->best_value) : 0;
                }
            }
            rank_first(ranks, total, offset < total - limit ? offset + limit : total);
            items = json_array();
            for (int64_t i = offset; i < total && i < offset + limit && rc == 0; i++) {
                json_t *o = api_trial_view(e, spec, ranks[i].id, &err);
                if (o == NULL)
                    rc = err.code;
                else
                    json_array_append_new(items, o);
            }
            free(ranks);
        }
    } else {
        rc = store_read_trials(store, spec, job->ids[0], st, tag, limit, offset, &items, &total,
                               &err);
        for (size_t i = 0; rc == 0 && i < json_array_size(items); i++) {
            json_int_t id = json_integer_value(json_object_get(json_array_get(items, i), "id"));
            Trial *t = core_trial(engine_core(e), id);
            if (t != NULL)
                json_array_set_new(items, i, api_trial_json(t));
        }
    }
    if (owned)
        spec_close(&own);
    if (rc != 0) {
        json_decref(items);
        api_fail(job, &err);
        return;
    }
    api_reply(job, 200, api_list_json(items, total));
}

typedef struct CsvCtx {
    Engine *e;
    const Spec *spec;
    const json_t *names;
} CsvCtx;

/* Writes the CSV row of a trial in memory; false for the others. */
static bool csv_row(void *ctx, int64_t id, FILE *out)
{
    CsvCtx *c = ctx;
    const Trial *t = core_trial(engine_core(c->e), id);
    if (t == NULL)
        return false;
    store_csv_row(out, c->spec, c->names, t->id, t->number, trial_state_name(t->state), t->config,
                  t->has_best, t->best_value, t->last, t->has_step, t->step);
    return true;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of every metric in the last report of any of the experiment's
 * trials, stored or in memory, sorted: the metric:<name> columns. */
static json_t *metric_names(Engine *e, int64_t exp_id, RungError *err)
{
    json_t *set = json_object();
    if (store_read_metric_names(engine_store(e), exp_id, set, err) != 0) {
        json_decref(set);
        return NULL;
    }
    const Experiment *x = core_experiment(engine_core(e), exp_id);
    for (int64_t i = x ? x->trials_lo : 0; x && i < x->n_trials - x->trials_base; i++) {
        const Trial *t = x->trials[i];
        const char *key;
        json_t *v;
        if (t != NULL && t->last != NULL)
            json_object_foreach(t->last, key, v)
                json_object_set_new(set, key, json_true());
    }
    size_t n = json_object_size(set), k = 0;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    const char *key;
    json_t *v;
    json_object_foreach(set, key, v)
        keys[k++] = key;
    qsort(keys, n, sizeof *keys, by_name);
    json_t *names = json_array();
    for (k = 0; k < n; k++)
        json_array_append_new(names, json_string(keys[k]));
    free(keys);
    json_decref(set);
    return names;
}

void api_experiment_csv(Engine *e, Job *job)
{
    Spec own;
    bool owned;
    const Spec *spec = api_spec_of(e, job, job->ids[0], &own, &owned);
    if (spec == NULL)
        return;
    RungError err;
    json_t *names = metric_names(e, job->ids[0], &err);
    if (names == NULL) {
        if (owned)
            spec_close(&own);
        api_fail(job, &err);
        return;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = api_reply_stream(&buf, &len);
    fputs("id,number,state", out);
    for (int i = 0; i < space_param_count(spec->space); i++) {
        fputc(',', out);
        store_csv_field(out, space_param_name(spec->space, i));
    }
    /* Several objectives: a column of each one's last value instead of
     * best_value and last_value; constraints: feasible (docs/api.md). */
    if (spec->n_objectives > 1) {
        for (int k = 0; k < spec->n_objectives; k++) {
            fputc(',', out);
            store_csv_field(out, spec->objectives[k].name);
        }
    } else {
        fputs(",best_value,last_value", out);
    }
    fputs(spec->n_constraints > 0 ? ",feasible,steps" : ",steps", out);
    /* Every metric reported: "metric:" never begins a parameter path. */
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n) {
        size_t len = strlen(json_string_value(n)) + 8;
        char *col = malloc(len);
        snprintf(col, len, "metric:%s", json_string_value(n));
        fputc(',', out);
        store_csv_field(out, col);
        free(col);
    }
    fputc('\n', out);
    CsvCtx ctx = {e, spec, names};
    int rc = store_read_csv(engine_store(e), spec, names, job->ids[0], out, csv_row, &ctx, &err);
    fclose(out);
    json_decref(names);
    if (owned)
        spec_close(&own);
    if (rc != 0) {
        free(buf);
        api_fail(job, &err);
        return;
    }
    job->status = 200;
    job->text = buf;
    job->text_len = len;
    job->content_type = "text/csv; charset=utf-8";
}

/* The experiment's metric values in arrival order from a cursor, for the
 * dashboard's learning curves: {"metric", "generation", "from", "next",
 * "items": [[trial_id, attempt, step, value], ...]}. The cursor is a time
 * (ms) at which reports were committed: the client asks again with
 * after=next and gets only what arrived since. "generation" is the daemon
 * run; a cursor of another run starts over. Values have nine significant
 * digits (a float's precision: enough to draw) and are null when not
 * finite. Written by hand: 200,000 rows are a few MB, and jansson would
 * build them as objects first.
 *
 * With best=K, an experiment with more than K trials that have a value
 * answers instead with the whole curves of its K best (by each trial's
 * best value), "best": K and "ranked": how many have a value; "from" is 0
 * and "next" the cursor a later call would start from. A page that cannot
 * draw every curve of a large experiment asks this way (docs/api.md). */
void api_experiment_curves(Engine *e, Job *job)
{
    RungError err;
    int64_t after, limit, gen, best;
    if (api_query_int(job, "after", 0, 0, INT64_MAX, &after, &err) ||
        api_query_int(job, "limit", CURVES_MAX, 1, CURVES_MAX, &limit, &err) ||
        api_query_int(job, "generation", 0, 0, INT64_MAX, &gen, &err) ||
        api_query_int(job, "best", 0, 0, CURVES_BEST_MAX, &best, &err)) {
        api_fail(job, &err);
        return;
    }
    /* ?metric=: the curves of any reported metric (default: the objective). */
    const char *asked = json_string_value(json_object_get(job->query, "metric"));
    if (asked != NULL && (asked[0] == '\0' || strlen(asked) > SPEC_MAX_METRIC)) {
        api_error(job, RUNG_E_INVALID_ARGUMENT, "metric", "metric: 1 to 64 bytes, a metric's name");
        return;
    }
    Spec own;
    bool owned;
    const Spec *spec = api_spec_of(e, job, job->ids[0], &own, &owned);
    if (spec == NULL)
        return;
    const char *metric_name = asked ? asked : spec->metric;
    int64_t generation = engine_generation(e);
    if (gen != generation)
        after = 0; /* another daemon run: from the start */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = api_reply_stream(&buf, &len);
    /* Reports of this batch carry its time and may still come: up to it. */
    int64_t next = 0;
    char *items = NULL;
    size_t items_len = 0;
    FILE *io = api_reply_stream(&items, &items_len);
    int64_t ranked = 0;
    int rc = 0;
    if (best > 0)
        rc = store_read_curves_best(engine_store(e), job->ids[0], metric_name,
                                    spec->mode == SPEC_MODE_MAX, best, io, &ranked, &err);
    bool best_mode = rc == 0 && best > 0 && ranked > best;
    if (best_mode) {
        after = 0;
        next = engine_now(e);
    } else if (rc == 0) {
        rc = store_read_curves(engine_store(e), job->ids[0], metric_name, after, engine_now(e),
                               limit, io, &next, &err);
    }
    fclose(io);
    /* Several objectives have no "metric" in the spec: the curves are of the
     * first objective (spec->metric), named here either way. */
    json_t *metric = metric_name ? json_string(metric_name) : json_null();
    fputs("{\"metric\": ", out);
    json_dumpf(metric, out, JSON_ENCODE_ANY);
    json_decref(metric);
    fprintf(out, ", \"generation\": %lld, \"from\": %lld, \"next\": %lld, ", (long long)generation,
            (long long)after, (long long)next);
    if (best_mode)
        fprintf(out, "\"best\": %lld, \"ranked\": %lld, ", (long long)best, (long long)ranked);
    fputs("\"items\": [", out);
    fwrite(items, 1, items_len, out);
    fputs("]}", out);
    fclose(out);
    free(items);
    if (owned)
        spec_close(&own);
    if (rc != 0) {
        free(buf);
        api_fail(job, &err);
        return;
    }
    job->status = 200;
    job->text = buf;
    job->text_len = len;
    job->content_type = "application/json";
}
