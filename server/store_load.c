/* What enters memory from the store (store.h: store_load, store_reload_*,
 * store_revive_experiment, store_readd_failed): the rows of the work in
 * flight, read into the core through its core_load_* calls, and what a
 * revived experiment or a failed write brings back. */
#include "core_load.h"
#include "store_internal.h"

#include "store_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loads the experiments that `where` selects (their rows, then every trial
 * of theirs, then the reports of each trial's current attempt). Only
 * experiments with work in flight are loaded: running ones, and canceled
 * ones whose running trials have not stopped yet. */
static int load_experiments(Store *s, Core *core, const char *where, int64_t id_arg, RungError *err)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT id, spec, seed, state, created_at, ended_at, ended_reason, error, health, "
             "owner_id, owner, tags, notes FROM experiments WHERE %s ORDER BY id",
             where);
    DbStmt *st;
    if (store_prepare(s, sql, &st, err, "load experiments"))
        return err->code;
    if (id_arg > 0)
        db_bind_int64(st, 1, id_arg);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        int64_t id = db_column_int64(st, 0);
        json_t *spec_json = store_column_json(st, 1);
        Spec spec;
        RungError why;
        ExpState state = EXP_RUNNING;
        exp_state_parse(db_column_text(st, 3), &state);
        if (spec_load(spec_json, (uint64_t)db_column_int64(st, 2), &spec, &why)) {
            json_decref(spec_json);
            db_finalize(st);
            return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                                  "store: experiment %lld has a spec this rungd rejects: %s",
                                  (long long)id, why.message);
        }
        json_decref(spec_json);
        Experiment *e = core_load_experiment(core, id, &spec, state, db_column_int64(st, 4),
                                             db_column_int64(st, 5));
        if (store_read_warm_attach(s, e, err)) {
            db_finalize(st);
            return err->code;
        }
        json_t *health = store_column_json(st, 8);
        core_load_experiment_ended(e, end_reason_parse(db_column_text(st, 6)),
                                   db_column_text(st, 7), health);
        json_decref(health);
        core_set_owner(e, db_column_type(st, 9) == DB_NULL ? -1 : db_column_int64(st, 9),
                       db_column_text(st, 10));
        /* Schema 015: what people wrote about it (NOT NULL columns). */
        json_t *tags = store_column_json(st, 11);
        core_set_exp_meta(NULL, e, json_is_array(tags) ? tags : NULL,
                          json_string(db_column_text(st, 12)));
        if (!json_is_array(tags))
            json_decref(tags);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "load experiments");
}

/* The states of the trials in flight, which a running experiment holds as
 * objects (core.h, core_load_all_trials); and the ended ones. */
#define LIVE_STATES "('pending', 'running', 'paused', 'preempted')"
#define ENDED_STATES "('completed', 'stopped', 'failed', 'canceled')"

/* Loads e's trials: those in flight, or with all every one. */
static int load_trials(Store *s, Core *core, Experiment *e, bool all, RungError *err)
{
    DbStmt *st;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT id, experiment_id, number, state, config, attempt, worker_id, "
             "lease_token, resources, stop_requested, error, created_at, started_at, "
             "ended_at, rung, queue_pos, log_tail, stop_kind, stopped_by, user_paused, "
             "warnings, gang, preemptions, lineage, resume_from, worker_losses, info, tags, notes "
             "FROM trials "
             "WHERE "
             "experiment_id = ? %s ORDER BY number",
             all ? "" : "AND state IN " LIVE_STATES);
    if (store_prepare(s, sql, &st, err, "load trials"))
        return err->code;
    db_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        TrialState state = TRIAL_PENDING;
        trial_state_parse(db_column_text(st, 3), &state);
        json_t *config = store_column_json(st, 4);
        if (config == NULL) {
            db_finalize(st);
            return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: trial %lld is corrupt",
                                  (long long)db_column_int64(st, 0));
        }
        CoreTrialRow row = {
            .id = db_column_int64(st, 0),
            .number = db_column_int64(st, 2),
            .state = state,
            .config = config,
            .attempt = db_column_int64(st, 5),
            .worker_id = db_column_int64(st, 6),
            .token = db_column_text(st, 7),
            .resources = store_column_json(st, 8),
            .stop_kind = db_column_int(st, 9) == 0
                             ? STOP_NONE
                             : (db_column_type(st, 17) == DB_NULL
                                    ? STOP_CANCEL /* the only kind before schema 005 */
                                    : stop_kind_parse(db_column_text(st, 17))),
            .error = db_column_text(st, 10),
            .created_at = db_column_int64(st, 11),
            .started_at = db_column_int64(st, 12),
            .ended_at = db_column_int64(st, 13),
        };
        Trial *t = core_load_trial(core, e, &row);
        core_load_rung(t, db_column_double(st, 14)); /* NULL reads as 0: none */
        if ((state == TRIAL_PENDING || state == TRIAL_PREEMPTED) &&
            db_column_type(st, 15) != DB_NULL)
            core_load_queue_pos(t, db_column_int64(st, 15));
        if (db_column_type(st, 16) != DB_NULL)
            core_trial_set_log(NULL, t, db_column_text(st, 16));
        core_load_trial_control(t, stopped_by_parse(db_column_text(st, 18)),
                                db_column_int(st, 19) != 0, store_column_json(st, 20),
                                store_column_json(st, 26));
        core_load_trial_preemptions(t, db_column_int64(st, 22));
        /* Schema 015: tags and notes; NULL in memory for [] and "". */
        json_t *tags = store_column_json(st, 27);
        const char *notes = db_column_text(st, 28);
        if (json_array_size(tags) == 0) {
            json_decref(tags);
            tags = NULL;
        }
        core_set_trial_meta(NULL, t, tags, notes && notes[0] ? json_string(notes) : NULL);
        core_load_trial_losses(t, db_column_int64(st, 25));
        json_t *from = store_column_json(st, 24);
        core_load_trial_pbt(t, store_column_json(st, 23), from);
        json_decref(from);
        json_t *gang = store_column_json(st, 21);
        core_load_gang(core, t, gang);
        json_decref(gang);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "load trials");
}

/* Replays the reports of the current attempt of e's trials, in step order. */
static int load_reports(Store *s, Core *core, Experiment *e, bool all, RungError *err)
{
    DbStmt *st;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT r.trial_id, r.step, r.metrics, r.action FROM trials t "
             "JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
             "WHERE t.experiment_id = ? %s ORDER BY r.trial_id, r.step",
             all ? "" : "AND t.state IN " LIVE_STATES);
    if (store_prepare(s, sql, &st, err, "load reports"))
        return err->code;
    db_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        Trial *t = core_trial(core, db_column_int64(st, 0));
        json_t *metrics = store_column_json(st, 2);
        const char *action = db_column_text(st, 3);
        if (t != NULL && metrics != NULL)
            core_load_report(core, t, db_column_int64(st, 1), metrics,
                             strcmp(action, "stop") == 0 ? ACTION_STOP : ACTION_CONTINUE);
        json_decref(metrics);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "load reports");
}

/* e's counts of ended trials and its number of trials. */
static int load_ended_counts(Store *s, Core *core, Experiment *e, RungError *err)
{
    int64_t counts[TRIAL__COUNT] = {0}, n_trials = 0;
    DbStmt *st;
    if (store_prepare(
            s,
            "SELECT state, count(*) FROM trials WHERE experiment_id = ? AND state IN " ENDED_STATES
            " GROUP BY state",
            &st, err, "ended trials"))
        return err->code;
    db_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        TrialState ts;
        if (trial_state_parse(db_column_text(st, 0), &ts) == 0)
            counts[ts] = db_column_int64(st, 1);
    }
    db_finalize(st);
    if (rc != DB_DONE)
        return store_db_error(s, err, "ended trials");
    if (store_prepare(s, "SELECT max(number) FROM trials WHERE experiment_id = ?", &st, err,
                      "trials"))
        return err->code;
    db_bind_int64(st, 1, e->id);
    rc = db_step(st);
    if (rc == DB_ROW && db_column_type(st, 0) != DB_NULL)
        n_trials = db_column_int64(st, 0) + 1;
    db_finalize(st);
    if (rc != DB_ROW)
        return store_db_error(s, err, "trials");
    core_load_ended_counts(core, e, counts, n_trials);
    return 0;
}

/* Replays the current attempt's reports of e's ended trials, one trial at a
 * time, for the rung records they leave (nothing else of them is kept). In
 * number order: the (experiment_id, number) index gives it and the reports'
 * primary key the steps, where ORDER BY t.id sorted every report in a
 * temporary b-tree first (1.65 of a restart's 3.1 s at 400,000 asha trials
 * of 5 reports, bench/long_restart.py). */
static int load_ended_reports(Store *s, Core *core, Experiment *e, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "SELECT t.id, t.number, t.state, r.step, r.metrics, r.action FROM trials t "
                      "JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
                      "WHERE t.experiment_id = ? AND t.state IN " ENDED_STATES
                      " ORDER BY t.number, r.step",
                      &st, err, "ended reports"))
        return err->code;
    db_bind_int64(st, 1, e->id);
    Trial *t = NULL;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        int64_t id = db_column_int64(st, 0);
        if (t != NULL && t->id != id) {
            core_load_ended_end(core, t, true, false);
            t = NULL;
        }
        if (t == NULL) {
            TrialState ts = TRIAL_COMPLETED;
            trial_state_parse(db_column_text(st, 2), &ts);
            t = core_load_ended_begin(e, id, db_column_int64(st, 1), ts, NULL);
        }
        json_t *metrics = store_column_json(st, 4);
        const char *action = db_column_text(st, 5);
        if (metrics != NULL)
            core_load_report(core, t, db_column_int64(st, 3), metrics,
                             action && strcmp(action, "stop") == 0 ? ACTION_STOP : ACTION_CONTINUE);
        json_decref(metrics);
    }
    if (t != NULL)
        core_load_ended_end(core, t, true, false);
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "ended reports");
}

/* The rows of e's ended trials for what they leave in memory (the best
 * value, a Pareto front, the searcher's history): every one when e needs
 * them (core_load_wants_ended_rows), else only the one with the best value
 * (the lowest number among equals, as a scan in number order keeps). */
static int load_ended_rows(Store *s, Core *core, Experiment *e, RungError *err)
{
    bool every = core_load_wants_ended_rows(e);
    char sql[768];
    snprintf(sql, sizeof sql,
             "SELECT t.id, t.number, t.state, t.config, t.last_metrics, t.best_value, t.best_step, "
             "(SELECT max(r.step) FROM reports r WHERE r.trial_id = t.id AND r.attempt = "
             "t.attempt) FROM trials t WHERE t.experiment_id = ? AND t.state IN " ENDED_STATES
             " %s",
             every ? "ORDER BY t.number"
                   : (e->spec.mode == SPEC_MODE_MAX
                          ? "AND t.best_value IS NOT NULL ORDER BY t.best_value DESC, "
                            "t.number LIMIT 1"
                          : "AND t.best_value IS NOT NULL ORDER BY t.best_value, "
                            "t.number LIMIT 1"));
    DbStmt *st;
    if (store_prepare(s, sql, &st, err, "ended trials"))
        return err->code;
    db_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        TrialState ts = TRIAL_COMPLETED;
        trial_state_parse(db_column_text(st, 2), &ts);
        json_t *config = store_column_json(st, 3);
        if (config == NULL)
            continue; /* cannot be a result; load_trials reports a corrupt live one */
        Trial *t = core_load_ended_begin(e, db_column_int64(st, 0), db_column_int64(st, 1), ts,
                                         config);
        bool has_best = db_column_type(st, 5) != DB_NULL;
        core_load_ended_summary(t, store_column_json(st, 4), has_best, db_column_double(st, 5),
                                db_column_int64(st, 6), db_column_type(st, 7) != DB_NULL,
                                db_column_int64(st, 7));
        core_load_ended_end(core, t, false, true);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "ended trials");
}

/* Loads what e keeps in memory (core.h, "What lives in memory" in
 * docs/architecture.md): its trials in flight with their reports, and of
 * its history only what the scheduler and searcher use; a pbt experiment
 * whole. */
static int load_trials_and_history(Store *s, Core *core, Experiment *e, RungError *err)
{
    if (core_load_all_trials(e))
        return load_trials(s, core, e, true, err) || load_reports(s, core, e, true, err) ? err->code
                                                                                         : 0;
    if (load_trials(s, core, e, false, err) || load_reports(s, core, e, false, err) ||
        load_ended_counts(s, core, e, err) ||
        (core_load_wants_ended_reports(e) && load_ended_reports(s, core, e, err)) ||
        load_ended_rows(s, core, e, err))
        return err->code;
    return 0;
}

/* Workers seen within this long, or holding a running trial, are loaded at
 * start; the others are read back when they call again. */
#define WORKER_RECENT_MS (3600 * 1000LL)

static int load_workers(Store *s, Core *core, const char *where, int64_t arg, RungError *err)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT id, name, hostname, gpus, cpus, registered_at, last_seen_at, heartbeat, "
             "labels, caps, owner_id FROM workers WHERE %s ORDER BY id",
             where);
    DbStmt *st;
    if (store_prepare(s, sql, &st, err, "load workers"))
        return err->code;
    db_bind_int64(st, 1, arg);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if (core_worker(core, db_column_int64(st, 0)) != NULL)
            continue;
        json_t *gpus = store_column_json(st, 3);
        Worker *w = core_load_worker(core, db_column_int64(st, 0), db_column_text(st, 1),
                                     db_column_text(st, 2), gpus ? gpus : json_array(),
                                     db_column_int64(st, 4), db_column_int64(st, 5),
                                     db_column_int64(st, 6), store_column_json(st, 7));
        core_load_worker_labels(w, store_column_json(st, 8));
        core_load_worker_caps(w, store_column_json(st, 9));
        core_set_worker_owner(w, db_column_type(st, 10) == DB_NULL ? -1 : db_column_int64(st, 10));
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "load workers");
}

/* Counts of the whole store and the highest ids, for the core's totals. */
static int load_totals(Store *s, Core *core, RungError *err)
{
    int64_t tc[TRIAL__COUNT] = {0}, ec[EXP__COUNT] = {0}, max[3] = {0, 0, 0};
    DbStmt *st;
    if (store_prepare(s, "SELECT state, count(*) FROM trials GROUP BY state", &st, err, "counts"))
        return err->code;
    while (db_step(st) == DB_ROW) {
        TrialState ts;
        if (trial_state_parse(db_column_text(st, 0), &ts) == 0)
            tc[ts] = db_column_int64(st, 1);
    }
    db_finalize(st);
    if (store_prepare(s, "SELECT state, count(*) FROM experiments GROUP BY state", &st, err,
                      "counts"))
        return err->code;
    while (db_step(st) == DB_ROW) {
        ExpState es;
        if (exp_state_parse(db_column_text(st, 0), &es) == 0)
            ec[es] = db_column_int64(st, 1);
    }
    db_finalize(st);
    /* The highest ids ever given, deleted ones too (schema 011): an id is
     * never given twice. */
    if (store_prepare(
            s,
            "SELECT max(coalesce((SELECT max(id) FROM experiments), 0), coalesce((SELECT "
            "max_id FROM id_floors WHERE kind = 'experiments'), 0)), max(coalesce((SELECT "
            "max(id) FROM trials), 0), coalesce((SELECT max_id FROM id_floors WHERE kind = "
            "'trials'), 0)), (SELECT max(id) FROM workers)",
            &st, err, "ids"))
        return err->code;
    int rc = db_step(st);
    if (rc == DB_ROW)
        for (int i = 0; i < 3; i++)
            max[i] = db_column_int64(st, i);
    db_finalize(st);
    if (rc != DB_ROW)
        return store_db_error(s, err, "ids");
    core_load_totals(core, tc, ec, max[0], max[1], max[2]);
    return 0;
}

/* Loads trials and reports of every experiment loaded since index `from`. */
static int load_trials_of(Store *s, Core *core, int64_t from, RungError *err)
{
    for (int64_t i = from; i < core_n_experiments(core); i++) {
        Experiment *e = core_experiment_at(core, i);
        if (load_trials_and_history(s, core, e, err))
            return err->code;
    }
    return 0;
}

/* Writes what loading changed (experiments found complete), then lets the
 * core release what ended. */
static int write_load_changes(Store *s, Core *core, RungError *err)
{
    CoreChanges c;
    core_changes(core, &c);
    int rc = 0;
    if (c.n_exps + c.n_trials > 0) {
        rc = store_begin(s, err) || store_write_changes(s, &c, err) || store_commit(s, err);
        if (rc) {
            store_rollback(s);
            rc = err->code;
        }
    }
    core_changes_clear(core);
    core_release(core);
    return rc;
}

/* pbt: the checkpoints stored for trials of experiments still in memory
 * (the others' are not asked for again). */
static int load_checkpoints(Store *s, Core *core, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "SELECT trial_id, step, sha256, size, stored_at FROM checkpoints", &st,
                      err, "load checkpoints"))
        return err->code;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        CoreCheckpoint c = {.trial_id = db_column_int64(st, 0),
                            .step = db_column_int64(st, 1),
                            .size = db_column_int64(st, 3),
                            .stored_at = db_column_int64(st, 4)};
        const char *sha = db_column_text(st, 2);
        snprintf(c.sha256, sizeof c.sha256, "%s", sha ? sha : "");
        core_load_checkpoint(core, &c);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "load checkpoints");
}

int store_load(Store *s, Core *core, int64_t now, RungError *err)
{
    if (load_totals(s, core, err) || load_checkpoints(s, core, err) ||
        load_experiments(s, core,
                         "state IN ('running', 'paused') OR id IN (SELECT experiment_id "
                         "FROM trials WHERE state = 'running')",
                         0, err) ||
        load_workers(s, core,
                     "last_seen_at >= ? OR id IN (SELECT worker_id FROM trials "
                     "WHERE state = 'running')",
                     now - WORKER_RECENT_MS, err) ||
        load_trials_of(s, core, 0, err))
        return err->code;
    core_load_done(core, now);
    return write_load_changes(s, core, err);
}

int store_reload_experiment(Store *s, Core *core, int64_t id, int64_t now, RungError *err)
{
    if (load_experiments(s, core, "id = ?", id, err))
        return err->code;
    Experiment *e = core_experiment(core, id);
    if (e == NULL)
        return 0; /* never stored: nothing to reload */
    if (load_trials_and_history(s, core, e, err))
        return err->code;
    core_load_experiment_done(core, e, now);
    return 0;
}

int store_revive_experiment(Store *s, Core *core, int64_t id, int64_t now, RungError *err)
{
    if (load_experiments(s, core, "id = ?", id, err))
        return err->code;
    Experiment *e = core_experiment(core, id);
    if (e == NULL)
        return rung_error_set(err, RUNG_E_NOT_FOUND, NULL, "experiment %lld not found",
                              (long long)id);
    if (load_trials_and_history(s, core, e, err))
        return err->code;
    core_load_revived(core, e, now);
    return 0;
}

int store_readd_failed(Store *s, Core *core, Experiment *e, RungError *err)
{
    DbStmt *st;
    const char *sql = "SELECT id, number, config, attempt, worker_id, error, created_at, "
                      "started_at, ended_at FROM trials WHERE experiment_id = ? AND "
                      "state = 'failed' ORDER BY number";
    if (store_prepare(s, sql, &st, err, "failed trials"))
        return err->code;
    db_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if (core_trial(core, db_column_int64(st, 0)) != NULL)
            continue; /* still in memory */
        json_t *config = store_column_json(st, 2);
        if (config == NULL)
            continue;
        CoreTrialRow row = {.id = db_column_int64(st, 0),
                            .number = db_column_int64(st, 1),
                            .state = TRIAL_FAILED,
                            .config = config,
                            .attempt = db_column_int64(st, 3),
                            .worker_id = db_column_int64(st, 4),
                            .error = db_column_text(st, 5),
                            .created_at = db_column_int64(st, 6),
                            .started_at = db_column_int64(st, 7),
                            .ended_at = db_column_int64(st, 8)};
        core_readd_trial(core, e, &row);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "failed trials");
}

int store_reload_worker(Store *s, Core *core, int64_t id, RungError *err)
{
    return load_workers(s, core, "id = ?", id, err);
}
