/* The read side of the store; see store_read.h. Statements are prepared per
 * call (sqlite3_prepare_v2 costs microseconds against a page of rows). The
 * CSV and the curves have files of their own (store_read_csv.c,
 * store_read_curves.c). */
#include "store_read_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "warm.h"

/* ---- experiments ---- */

int store_read_spec(Store *s, int64_t id, Spec *spec, RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT spec, seed FROM experiments WHERE id = ?", &st, err))
        return err->code;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    if (rc != DB_ROW) {
        db_finalize(st);
        return rc == DB_DONE ? not_found(err, "experiment", id) : db_error(s, err, "spec");
    }
    json_t *json = column_json(st, 0);
    rc = spec_load(json, (uint64_t)db_column_int64(st, 1), spec, err);
    json_decref(json);
    db_finalize(st);
    return rc;
}

/* Counts and best of an experiment whose row has no summary (written
 * before schema version 4, or still running). */
static void summary_from_trials(Store *s, int64_t id, const json_t *spec, ExperimentView *v)
{
    DbStmt *st;
    RungError ignored;
    if (prepare(s, "SELECT state, count(*) FROM trials WHERE experiment_id = ? GROUP BY state", &st,
                &ignored) == 0) {
        db_bind_int64(st, 1, id);
        while (db_step(st) == DB_ROW) {
            TrialState ts;
            if (trial_state_parse(db_column_text(st, 0), &ts) == 0)
                v->counts[ts] = db_column_int64(st, 1);
        }
        db_finalize(st);
    }
    const char *mode = json_string_value(json_object_get(spec, "mode"));
    const char *sql = mode && strcmp(mode, "max") == 0
                          ? "SELECT id, best_value, best_step, config FROM trials WHERE "
                            "experiment_id = ? AND best_value IS NOT NULL ORDER BY best_value "
                            "DESC, number LIMIT 1"
                          : "SELECT id, best_value, best_step, config FROM trials WHERE "
                            "experiment_id = ? AND best_value IS NOT NULL ORDER BY best_value, "
                            "number LIMIT 1";
    if (prepare(s, sql, &st, &ignored) == 0) {
        db_bind_int64(st, 1, id);
        if (db_step(st) == DB_ROW)
            v->best = (BestRef){.has = true,
                                .trial_id = db_column_int64(st, 0),
                                .value = db_column_double(st, 1),
                                .step = db_column_int64(st, 2),
                                .config = column_json(st, 3)}; /* owned here */
        db_finalize(st);
    }
}

/* The experiment of the current row of st: EXP_COLUMNS. */
static json_t *experiment_of_row(Store *s, DbStmt *st)
{
    ExperimentView v = {.id = db_column_int64(st, 0)};
    json_t *spec = column_json(st, 1);
    if (spec == NULL)
        spec = json_object();
    v.spec = spec;
    exp_state_parse(db_column_text(st, 2), &v.state);
    v.created_at = db_column_int64(st, 3);
    v.ended_at = db_column_int64(st, 4);
    v.total_trials = db_column_int64(st, 5);
    v.ended_reason = end_reason_parse(db_column_text(st, 7));
    v.error = db_column_text(st, 8);
    v.owner = db_column_text(st, 9);
    json_t *tags = column_json(st, 10); /* schema 015 */
    v.tags = tags;
    v.notes = db_column_text(st, 11);
    json_t *summary = column_json(st, 6);
    if (summary != NULL) {
        json_t *counts = json_object_get(summary, "counts");
        for (int k = 0; k < TRIAL__COUNT; k++)
            v.counts[k] = json_integer_value(json_object_get(counts, trial_state_name(k)));
        json_t *b = json_object_get(summary, "best");
        if (json_is_object(b))
            v.best = (BestRef){.has = true,
                               .trial_id = json_integer_value(json_object_get(b, "trial_id")),
                               .value = json_number_value(json_object_get(b, "value")),
                               .step = json_integer_value(json_object_get(b, "step")),
                               .config = json_incref(json_object_get(b, "config"))};
        json_t *pareto = json_object_get(summary, "pareto");
        v.pareto = json_is_array(pareto) ? json_incref(pareto) : NULL;
    } else {
        summary_from_trials(s, v.id, spec, &v);
    }
    /* Several objectives and no front stored yet: an empty one. */
    if (v.pareto == NULL && json_is_array(json_object_get(spec, "metrics")))
        v.pareto = json_array();
    json_t *o = view_experiment(&v);
    json_decref(v.pareto);
    json_decref(v.best.config);
    json_decref(summary);
    json_decref(spec);
    json_decref(tags);
    return o;
}

#define EXP_COLUMNS                                                                                \
    "id, spec, state, created_at, ended_at, total_trials, summary, ended_reason, error, owner, "   \
    "tags, notes"

int store_read_experiment(Store *s, int64_t id, json_t **out, RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT " EXP_COLUMNS " FROM experiments WHERE id = ?", &st, err))
        return err->code;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    if (rc == DB_ROW)
        *out = experiment_of_row(s, st);
    db_finalize(st);
    if (rc == DB_DONE)
        return not_found(err, "experiment", id);
    return rc == DB_ROW ? 0 : db_error(s, err, "experiment");
}

int store_read_blob_referenced(Store *s, const char *sha256_hex, bool *referenced, RungError *err)
{
    DbStmt *st;
    if (prepare(s,
                "SELECT 1 FROM experiments WHERE "
                "json_extract(spec, '$.trainable.working_dir') = 'sha256:' || ? LIMIT 1",
                &st, err))
        return err->code;
    db_bind_text(st, 1, sha256_hex, -1, DB_STATIC);
    int rc = db_step(st);
    db_finalize(st);
    *referenced = rc == DB_ROW;
    return rc == DB_ROW || rc == DB_DONE ? 0 : db_error(s, err, "experiments");
}

int store_read_trial_rank(Store *s, int64_t exp_id, int64_t trial_id, double value, bool max,
                          int64_t *better, RungError *err)
{
    DbStmt *st;
    const char *sql = max ? "SELECT count(*) FROM trials WHERE experiment_id = ?1 AND id != ?2 AND "
                            "state = 'completed' AND best_value IS NOT NULL AND (best_value > ?3 "
                            "OR (best_value = ?3 AND id < ?2))"
                          : "SELECT count(*) FROM trials WHERE experiment_id = ?1 AND id != ?2 AND "
                            "state = 'completed' AND best_value IS NOT NULL AND (best_value < ?3 "
                            "OR (best_value = ?3 AND id < ?2))";
    if (prepare(s, sql, &st, err))
        return err->code;
    db_bind_int64(st, 1, exp_id);
    db_bind_int64(st, 2, trial_id);
    db_bind_double(st, 3, value);
    int rc = db_step(st);
    if (rc == DB_ROW)
        *better = db_column_int64(st, 0);
    db_finalize(st);
    return rc == DB_ROW ? 0 : db_error(s, err, "trials");
}

int store_read_trial_best(Store *s, int64_t trial_id, double *value, bool *has, RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT best_value FROM trials WHERE id = ?", &st, err))
        return err->code;
    db_bind_int64(st, 1, trial_id);
    int rc = db_step(st);
    *has = rc == DB_ROW && db_column_type(st, 0) != DB_NULL;
    *value = *has ? db_column_double(st, 0) : 0;
    db_finalize(st);
    return rc == DB_ROW || rc == DB_DONE ? 0 : db_error(s, err, "trials");
}

/* The condition that a row's tags (a JSON array) hold the tag bound to
 * parameter n (docs/api.md, "?tag="): an exact match. */
#define HAS_TAG(n) " EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?" #n ")"

int store_read_experiments(Store *s, const char *tag, int64_t limit, int64_t offset, json_t **items,
                           int64_t *ids, int64_t *total, RungError *err)
{
    const char *where = tag ? " WHERE" HAS_TAG(3) : "";
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM experiments%s", where);
    DbStmt *st;
    if (prepare(s, sql, &st, err))
        return err->code;
    if (tag)
        db_bind_text(st, 3, tag, -1, DB_STATIC);
    int rc = db_step(st);
    *total = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    db_finalize(st);
    if (rc != DB_ROW)
        return db_error(s, err, "experiments");
    snprintf(sql, sizeof sql,
             "SELECT " EXP_COLUMNS " FROM experiments%s ORDER BY id DESC LIMIT ?1 OFFSET ?2",
             where);
    if (prepare(s, sql, &st, err))
        return err->code;
    db_bind_int64(st, 1, limit);
    db_bind_int64(st, 2, offset);
    if (tag)
        db_bind_text(st, 3, tag, -1, DB_STATIC);
    json_t *arr = json_array();
    int64_t n = 0;
    while ((rc = db_step(st)) == DB_ROW) {
        ids[n++] = db_column_int64(st, 0);
        json_array_append_new(arr, experiment_of_row(s, st));
    }
    db_finalize(st);
    if (rc != DB_DONE) {
        json_decref(arr);
        return db_error(s, err, "experiments");
    }
    *items = arr;
    return 0;
}

/* ---- trials ---- */

#define TRIAL_COLUMNS                                                                              \
    "id, experiment_id, number, state, config, attempt, worker_id, step, last_metrics, "           \
    "best_value, best_step, error, rung, log_tail, created_at, started_at, ended_at, stopped_by, " \
    "user_paused, warnings, gang, preemptions, lineage, worker_losses, info, tags, notes"

static json_t *trial_of_row(DbStmt *st, const Spec *spec)
{
    TrialView v = {.id = db_column_int64(st, 0),
                   .exp_id = db_column_int64(st, 1),
                   .number = db_column_int64(st, 2),
                   .attempt = db_column_int64(st, 5),
                   .worker_id = db_column_int64(st, 6),
                   .has_step = db_column_type(st, 7) != DB_NULL,
                   .step = db_column_int64(st, 7),
                   .has_best = db_column_type(st, 9) != DB_NULL,
                   .best_value = db_column_double(st, 9),
                   .best_step = db_column_int64(st, 10),
                   .error = db_column_text(st, 11),
                   .rung = db_column_double(st, 12),
                   .bracket = -1,
                   .log_tail = db_column_text(st, 13),
                   .created_at = db_column_int64(st, 14),
                   .started_at = db_column_int64(st, 15),
                   .ended_at = db_column_int64(st, 16),
                   .stopped_by = stopped_by_parse(db_column_text(st, 17)),
                   .user_paused = db_column_int(st, 18) != 0,
                   .preemptions = db_column_int64(st, 21),
                   .worker_losses = db_column_int64(st, 23)};
    trial_state_parse(db_column_text(st, 3), &v.state);
    json_t *config = column_json(st, 4);
    json_t *last = column_json(st, 8);
    json_t *warnings = column_json(st, 19);
    json_t *gang = column_json(st, 20);
    json_t *lineage = column_json(st, 22);
    json_t *info = column_json(st, 24);
    json_t *tags = column_json(st, 25); /* schema 015 */
    v.tags = tags;
    v.notes = db_column_text(st, 26);
    v.lineage = lineage;
    v.info = info;
    v.warnings = warnings;
    v.gang = gang;
    v.config = config ? config : json_object();
    v.last = last;
    const AshaParams *sched = spec != NULL ? &spec->sched : NULL;
    if (sched != NULL && (sched->type == ASHA_ASHA || sched->type == ASHA_HYPERBAND))
        v.bracket = asha_bracket(sched, v.number);
    /* The spec's nodes; without one, a gang's size tells. */
    v.spec = spec;
    v.nodes = spec != NULL ? spec->nodes
                           : (int64_t)json_array_size(json_object_get(gang, "members"));
    json_t *o = view_trial(&v);
    json_decref((json_t *)v.config);
    json_decref(last);
    json_decref(warnings);
    json_decref(gang);
    json_decref(lineage);
    json_decref(info);
    json_decref(tags);
    return o;
}

int store_read_trial(Store *s, int64_t id, const Spec *spec, json_t **out, int64_t *exp_id,
                     RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT " TRIAL_COLUMNS " FROM trials WHERE id = ?", &st, err))
        return err->code;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        *exp_id = db_column_int64(st, 1);
        *out = trial_of_row(st, spec);
    }
    db_finalize(st);
    if (rc == DB_DONE)
        return not_found(err, "trial", id);
    return rc == DB_ROW ? 0 : db_error(s, err, "trial");
}

int store_read_trial_ranks(Store *s, const Spec *spec, int64_t exp_id, int state, const char *tag,
                           TrialRank **out, int64_t *n, RungError *err)
{
    DbStmt *st;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT id, number, best_value FROM trials WHERE experiment_id = ?1%s%s "
             "ORDER BY number",
             state < 0 ? "" : " AND state = ?2", tag ? " AND" HAS_TAG(3) : "");
    if (prepare(s, sql, &st, err))
        return err->code;
    db_bind_int64(st, 1, exp_id);
    if (state >= 0)
        db_bind_text(st, 2, trial_state_name((TrialState)state), -1, DB_STATIC);
    if (tag)
        db_bind_text(st, 3, tag, -1, DB_STATIC);
    TrialRank *v = NULL;
    int64_t len = 0, cap = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        rung_grow((void **)&v, &cap, len, sizeof *v);
        bool has = db_column_type(st, 2) != DB_NULL;
        v[len++] = (TrialRank){.id = db_column_int64(st, 0),
                               .number = db_column_int64(st, 1),
                               .has_best = has,
                               .loss = has ? spec_loss(spec, db_column_double(st, 2)) : 0};
    }
    db_finalize(st);
    if (rc != DB_DONE) {
        free(v);
        return db_error(s, err, "trial ranks");
    }
    *out = v;
    *n = len;
    return 0;
}

int store_read_trials(Store *s, const Spec *spec, int64_t exp_id, int state, const char *tag,
                      int64_t limit, int64_t offset, json_t **items, int64_t *total, RungError *err)
{
    /* The conditions as SQL text, so that each query reads the index that
     * fits it (trials_by_experiment_state for a state). */
    char where[256];
    snprintf(where, sizeof where, "experiment_id = ?1%s%s", state < 0 ? "" : " AND state = ?4",
             tag ? " AND" HAS_TAG(5) : "");
    char sql[1024];
    DbStmt *st;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            snprintf(sql, sizeof sql, "SELECT count(*) FROM trials WHERE %s", where);
        else
            snprintf(sql, sizeof sql,
                     "SELECT " TRIAL_COLUMNS " FROM trials WHERE %s ORDER BY number "
                     "LIMIT ?2 OFFSET ?3",
                     where);
        if (prepare(s, sql, &st, err))
            return err->code;
        /* Binding a number the count does not use is an SQLITE_RANGE
         * that changes nothing. */
        db_bind_int64(st, 1, exp_id);
        db_bind_int64(st, 2, limit);
        db_bind_int64(st, 3, offset);
        if (state >= 0)
            db_bind_text(st, 4, trial_state_name((TrialState)state), -1, DB_STATIC);
        if (tag)
            db_bind_text(st, 5, tag, -1, DB_STATIC);
        if (pass == 1)
            break;
        int rc = db_step(st);
        *total = rc == DB_ROW ? db_column_int64(st, 0) : 0;
        db_finalize(st);
        if (rc != DB_ROW)
            return db_error(s, err, "trials");
    }
    json_t *arr = json_array();
    int rc;
    while ((rc = db_step(st)) == DB_ROW)
        json_array_append_new(arr, trial_of_row(st, spec));
    db_finalize(st);
    if (rc != DB_DONE) {
        json_decref(arr);
        return db_error(s, err, "trials");
    }
    *items = arr;
    return 0;
}

int store_read_trial_lease(Store *s, int64_t id, TrialLease *out, RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT experiment_id, attempt, state, lease_token FROM trials WHERE id = ?",
                &st, err))
        return err->code;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        out->exp_id = db_column_int64(st, 0);
        out->attempt = db_column_int64(st, 1);
        trial_state_parse(db_column_text(st, 2), &out->state);
        const char *tok = db_column_text(st, 3);
        snprintf(out->token, sizeof out->token, "%s", tok ? tok : "");
    }
    db_finalize(st);
    if (rc == DB_DONE)
        return not_found(err, "trial", id);
    return rc == DB_ROW ? 0 : db_error(s, err, "trial");
}

int store_read_gang_member(Store *s, int64_t id, const char *token, int64_t *rank, int64_t *attempt,
                           RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT gang FROM trials WHERE id = ?", &st, err))
        return -1;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    json_t *stored = rc == DB_ROW ? column_json(st, 0) : NULL;
    db_finalize(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        db_error(s, err, "trial");
        return -1;
    }
    Gang *g = stored != NULL ? members_from_json(stored) : NULL;
    json_decref(stored);
    GangMember *m = members_by_token(g, token);
    if (m != NULL) {
        *rank = members_rank(g, m);
        *attempt = g->attempt;
    }
    members_free(g);
    return m != NULL;
}

int store_read_report_action(Store *s, int64_t trial_id, int64_t attempt, int64_t step,
                             ReportAction *action, RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT action FROM reports WHERE trial_id = ? AND attempt = ? AND step = ?",
                &st, err))
        return -1;
    db_bind_int64(st, 1, trial_id);
    db_bind_int64(st, 2, attempt);
    db_bind_int64(st, 3, step);
    int rc = db_step(st);
    if (rc == DB_ROW)
        *action = strcmp(db_column_text(st, 0), "stop") == 0 ? ACTION_STOP : ACTION_CONTINUE;
    db_finalize(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        db_error(s, err, "report");
        return -1;
    }
    return rc == DB_ROW;
}
/* ---- workers ---- */

#define WORKERS_SHOWN                                                                              \
    " FROM workers WHERE last_seen_at >= ?1 OR id IN (SELECT worker_id FROM trials WHERE "         \
    "state = 'running') "

int store_read_workers(Store *s, int64_t seen_since, int64_t limit, int64_t offset, json_t **items,
                       int64_t *total, RungError *err)
{
    if (count(s, "SELECT count(*)" WORKERS_SHOWN, seen_since, 0, total, err))
        return err->code;
    DbStmt *st;
    if (prepare(s,
                "SELECT id, name, hostname, gpus, cpus, registered_at, last_seen_at, heartbeat, "
                "labels, caps" WORKERS_SHOWN "ORDER BY id LIMIT ?2 OFFSET ?3",
                &st, err))
        return err->code;
    db_bind_int64(st, 1, seen_since);
    db_bind_int64(st, 2, limit);
    db_bind_int64(st, 3, offset);
    json_t *arr = json_array();
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        json_t *gpus = column_json(st, 3);
        json_t *hb = column_json(st, 7);
        json_array_append_new(
            arr, json_pack("{s:I, s:s, s:s, s:o, s:I, s:o, s:o, s:o}", "id",
                           (json_int_t)db_column_int64(st, 0), "name", db_column_text(st, 1),
                           "hostname", db_column_text(st, 2), "gpus", gpus ? gpus : json_array(),
                           "cpus", (json_int_t)db_column_int64(st, 4), "registered_at",
                           view_time(db_column_int64(st, 5)), "last_seen_at",
                           view_time(db_column_int64(st, 6)), "heartbeat", hb ? hb : json_null()));
        json_t *labels = column_json(st, 8);
        json_t *o = json_array_get(arr, json_array_size(arr) - 1);
        json_object_set_new(o, "labels", labels ? labels : json_object());
        /* What code it can run (docs/api.md, "The worker object"). */
        json_t *caps = column_json(st, 9);
        json_t *envs = caps ? json_object_get(caps, "environments") : NULL;
        json_t *ctrs = caps ? json_object_get(caps, "containers") : NULL;
        json_object_set_new(o, "environments",
                            json_is_array(envs) ? json_incref(envs) : json_array());
        json_object_set_new(o, "containers",
                            json_is_array(ctrs) ? json_incref(ctrs) : json_array());
        json_decref(caps);
    }
    db_finalize(st);
    if (rc != DB_DONE) {
        json_decref(arr);
        return db_error(s, err, "workers");
    }
    *items = arr;
    return 0;
}

/* ---- warm_start ---- */

/* Whether the source's search_space (its stored spec) has every parameter
 * of spec's; else the error names the first missing one. */
static int warm_check_space(int64_t source, const json_t *src_spec, const Spec *spec,
                            RungError *err)
{
    /* Parameter paths, not the spec's keys: sub-spaces flatten to them. */
    Space *src = NULL;
    RungError ignored;
    if (space_parse(json_object_get(src_spec, "search_space"), &src, &ignored) != 0)
        src = NULL;
    for (int i = 0; i < space_param_count(spec->space); i++) {
        const char *name = space_param_name(spec->space, i);
        if (src == NULL || !space_has_param(src, name)) {
            space_free(src);
            return rung_error_set(err, RUNG_E_INVALID_SPEC, "warm_start.experiment",
                                  "warm_start.experiment: experiment %lld has no parameter "
                                  "\"%s\" in its search_space",
                                  (long long)source, name);
        }
    }
    space_free(src);
    return 0;
}

/* At submission: the source exists, has ended, nothing of it can change,
 * and it has every parameter of spec. */
static int warm_check_source(Store *s, int64_t source, const Spec *spec, RungError *err)
{
    const char *field = "warm_start.experiment";
    DbStmt *st;
    if (prepare(s,
                "SELECT state, spec, (SELECT count(*) FROM trials WHERE experiment_id = ?1 AND "
                "state IN ('pending', 'running', 'paused')) FROM experiments WHERE id = ?1",
                &st, err))
        return err->code;
    db_bind_int64(st, 1, source);
    int rc = db_step(st);
    if (rc != DB_ROW) {
        db_finalize(st);
        if (rc != DB_DONE)
            return db_error(s, err, "warm_start");
        return rung_error_set(err, RUNG_E_INVALID_SPEC, field,
                              "warm_start.experiment: experiment %lld not found",
                              (long long)source);
    }
    const char *state = db_column_text(st, 0);
    json_t *src_spec = column_json(st, 1);
    int64_t unfinished = db_column_int64(st, 2);
    if (state == NULL || (strcmp(state, "completed") != 0 && strcmp(state, "canceled") != 0 &&
                          strcmp(state, "failed") != 0))
        rc = rung_error_set(err, RUNG_E_INVALID_SPEC, field,
                            "warm_start.experiment: experiment %lld is %s; only an experiment "
                            "that has ended (completed, canceled or failed) can warm-start "
                            "another",
                            (long long)source, state ? state : "in an unknown state");
    else if (unfinished > 0)
        rc = rung_error_set(err, RUNG_E_INVALID_SPEC, field,
                            "warm_start.experiment: experiment %lld has ended, but %lld of its "
                            "trials have not stopped yet",
                            (long long)source, (long long)unfinished);
    else
        rc = warm_check_space(source, src_spec, spec, err);
    json_decref(src_spec);
    db_finalize(st);
    return rc;
}

int store_read_warm(Store *s, Spec *spec, int64_t before, bool check, Warm **out, RungError *err)
{
    *out = NULL;
    int64_t source = spec->warm_start_exp;
    if (check && warm_check_source(s, source, spec, err))
        return err->code;
    DbStmt *st;
    if (prepare(s,
                "SELECT state, config, last_metrics FROM trials WHERE experiment_id = ? AND "
                "state IN ('completed', 'stopped', 'failed') AND (ended_at IS NULL OR "
                "ended_at <= ?) ORDER BY number",
                &st, err))
        return err->code;
    db_bind_int64(st, 1, source);
    db_bind_int64(st, 2, before);
    Warm *w = warm_new(spec, source);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        TrialState state;
        if (trial_state_parse(db_column_text(st, 0), &state) != 0)
            continue;
        json_t *config = column_json(st, 1);
        json_t *last = column_json(st, 2);
        warm_add(w, spec, state, config, last);
        json_decref(config);
        json_decref(last);
    }
    db_finalize(st);
    if (rc != DB_DONE) {
        warm_free(w);
        return db_error(s, err, "warm_start trials");
    }
    if (warm_seal(w, spec, err) != 0) {
        warm_free(w);
        return err->code;
    }
    *out = w;
    return 0;
}

int store_read_warm_attach(Store *s, Experiment *e, RungError *err)
{
    if (e->spec.warm_start_exp <= 0 || e->warm != NULL)
        return 0;
    RungError why;
    rung_error_clear(&why);
    if (store_read_warm(s, &e->spec, e->created_at, false, &e->warm, &why) == 0)
        return 0;
    if (why.code == RUNG_E_INVALID_SPEC)
        return 0; /* the source changed since (warm.h): e runs without */
    *err = why;
    return err->code;
}

/* ---- the submitted spec and the timeline (schema 015) ---- */

int store_read_submitted(Store *s, int64_t id, json_t **submitted, json_t **effective,
                         RungError *err)
{
    DbStmt *st;
    if (prepare(s, "SELECT submitted, spec, tags, notes FROM experiments WHERE id = ?", &st, err))
        return err->code;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        json_t *sub = column_json(st, 0);
        *submitted = sub ? sub : json_null();
        if (effective != NULL) {
            json_t *spec = column_json(st, 1);
            *effective = spec ? spec : json_object();
            json_t *tags = column_json(st, 2);
            json_object_set_new(*effective, "tags", tags ? tags : json_array());
            json_object_set_new(*effective, "notes", json_string(db_column_text(st, 3)));
        }
    }
    db_finalize(st);
    if (rc == DB_DONE)
        return not_found(err, "experiment", id);
    return rc == DB_ROW ? 0 : db_error(s, err, "experiment");
}

int store_read_timeline(Store *s, int64_t exp_id, TimelineRow **rows, int64_t *n, json_t *workers,
                        RungError *err)
{
    /* One query over the experiment's rows, in the order of an index on
     * experiment_id; the caller sorts them by start (an ORDER BY here
     * sorted 50,000 rows in SQLite's sorter, which spilled to a
     * temporary file). */
    DbStmt *st;
    if (prepare(s,
                "SELECT t.id, t.attempt, t.worker_id, t.started_at, t.ended_at, t.state, w.name "
                "FROM trials t LEFT JOIN workers w ON w.id = t.worker_id "
                "WHERE t.experiment_id = ? AND t.started_at IS NOT NULL",
                &st, err))
        return err->code;
    db_bind_int64(st, 1, exp_id);
    TimelineRow *v = NULL;
    int64_t len = 0, cap = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        rung_grow((void **)&v, &cap, len, sizeof *v);
        TimelineRow *r = &v[len++];
        *r = (TimelineRow){.trial_id = db_column_int64(st, 0),
                           .attempt = db_column_int64(st, 1),
                           .worker_id = db_column_int64(st, 2),
                           .started_at = db_column_int64(st, 3),
                           .ended_at = db_column_int64(st, 4)};
        trial_state_parse(db_column_text(st, 5), &r->state);
        const char *name = db_column_text(st, 6);
        if (name != NULL && r->worker_id > 0) {
            char key[24];
            snprintf(key, sizeof key, "%lld", (long long)r->worker_id);
            if (json_object_get(workers, key) == NULL)
                json_object_set_new(workers, key, json_string(name));
        }
    }
    db_finalize(st);
    if (rc != DB_DONE) {
        free(v);
        return db_error(s, err, "timeline");
    }
    *rows = v;
    *n = len;
    return 0;
}
/* ---- what an analysis reads (store_read.h) ---- */

static char *dup_text(DbStmt *st, int col)
{
    const char *t = db_column_text(st, col);
    if (t == NULL)
        return NULL;
    char *copy = strdup(t);
    if (copy == NULL)
        abort();
    return copy;
}

int store_read_completed(Store *s, int64_t exp_id, StoreCompleted **rows, int64_t *n,
                         RungError *err)
{
    *rows = NULL;
    *n = 0;
    int64_t cap = 0;
    if (store_read_completed_count(s, exp_id, &cap, err))
        return err->code;
    DbStmt *st;
    if (prepare(s,
                "SELECT id, config, last_metrics, best_value FROM trials WHERE experiment_id = ? "
                "AND state = 'completed' ORDER BY number",
                &st, err))
        return err->code;
    StoreCompleted *r = calloc((size_t)(cap > 0 ? cap : 1), sizeof *r);
    if (r == NULL)
        abort();
    db_bind_int64(st, 1, exp_id);
    int64_t k = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW && k < cap) {
        r[k].id = db_column_int64(st, 0);
        r[k].config = dup_text(st, 1);
        r[k].last = dup_text(st, 2);
        r[k].has_best = db_column_type(st, 3) != DB_NULL;
        r[k].best = r[k].has_best ? db_column_double(st, 3) : 0.0;
        k++;
    }
    db_finalize(st);
    if (rc != DB_ROW && rc != DB_DONE) {
        store_completed_free(r, k);
        return db_error(s, err, "completed trials");
    }
    *rows = r;
    *n = k;
    return 0;
}

void store_completed_free(StoreCompleted *rows, int64_t n)
{
    for (int64_t i = 0; rows != NULL && i < n; i++) {
        free(rows[i].config);
        free(rows[i].last);
    }
    free(rows);
}

int store_read_completed_count(Store *s, int64_t exp_id, int64_t *n, RungError *err)
{
    return count(s, "SELECT count(*) FROM trials WHERE experiment_id = ? AND state = 'completed'",
                 exp_id, 0, n, err);
}
