/* The store; see store.h. SQL through db.h, on the SQLite file or on
 * PostgreSQL; opening it and the migrations are store_open.c.
 *
 * Workload: a stream of small writes (a report is one INSERT; a lease, a
 * finish or a retry one UPDATE of a trial row) from one thread, batched into
 * transactions by the engine (a savepoint per request), and reads of the
 * history (store_read.c). At start only the work in flight is read
 * (store_load.c); the database file is guarded by store_file.c. Every
 * statement is prepared once and kept; parameters are bound by name and a
 * wrong name is a programming error that aborts at once. */
#include "store_internal.h"

#include "clock.h"
#include "log.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static const char *const sql_text[ST__COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SAVEPOINT] = "SAVEPOINT request",
    [ST_RELEASE] = "RELEASE request",
    [ST_ROLLBACK_TO] = "ROLLBACK TO request",
    [ST_EXP_INSERT] =
        "INSERT INTO experiments (id, name, spec, seed, state, total_trials, "
        "created_at, ended_at, summary, error, ended_reason, health, owner_id, owner, tags, notes, "
        "submitted) VALUES (:id, :name, :spec, :seed, :state, :total, :created_at, :ended_at, "
        ":summary, :error, :ended_reason, :health, :owner_id, :owner, coalesce(:tags, '[]'), "
        "coalesce(:notes, ''), :submitted)",
    [ST_EXP_UPDATE] = "UPDATE experiments SET state = :state, ended_at = :ended_at, "
                      "summary = :summary, error = :error, ended_reason = :ended_reason, "
                      "health = :health, spec = :spec, total_trials = :total, "
                      "tags = coalesce(:tags, tags), notes = coalesce(:notes, notes) "
                      "WHERE id = :id",
    [ST_TRIAL_INSERT] =
        "INSERT INTO trials (id, experiment_id, number, state, config, attempt, worker_id, "
        "lease_token, resources, stop_requested, error, created_at, started_at, ended_at, "
        "rung, queue_pos, step, last_metrics, best_value, best_step, log_tail, stopped_by, "
        "stop_kind, user_paused, warnings, gang, preemptions, lineage, resume_from, worker_losses, "
        "info, tags, notes) VALUES (:id, :exp, :number, :state, :config, "
        ":attempt, :worker, :token, :resources, :stop, :error, :created_at, :started_at, "
        ":ended_at, :rung, :queue_pos, :step, :last, :best_value, :best_step, :log_tail, "
        ":stopped_by, :stop_kind, :user_paused, :warnings, :gang, :preemptions, :lineage, "
        ":resume_from, :worker_losses, :info, coalesce(:tags, '[]'), coalesce(:notes, ''))",
    [ST_TRIAL_UPDATE] =
        "UPDATE trials SET state = :state, attempt = :attempt, worker_id = :worker, "
        "lease_token = :token, resources = :resources, stop_requested = :stop, error = :error, "
        "started_at = :started_at, ended_at = :ended_at, rung = :rung, queue_pos = :queue_pos, "
        "step = :step, last_metrics = :last, best_value = :best_value, best_step = :best_step, "
        "log_tail = :log_tail, stopped_by = :stopped_by, stop_kind = :stop_kind, "
        "user_paused = :user_paused, warnings = :warnings, info = :info, gang = :gang, "
        "preemptions = :preemptions, worker_losses = :worker_losses, "
        "config = coalesce(:config, config), lineage = "
        "coalesce(:lineage, lineage), "
        "resume_from = :resume_from, tags = coalesce(:tags, tags), "
        "notes = coalesce(:notes, notes) WHERE id = :id",
    [ST_REPORT_INSERT] = "INSERT INTO reports (trial_id, attempt, step, time, metrics, action) "
                         "VALUES (:trial, :attempt, :step, :time, :metrics, :action)",
    [ST_WORKER_INSERT] = "INSERT INTO workers (id, name, hostname, gpus, cpus, registered_at, "
                         "last_seen_at, heartbeat, labels, caps, owner_id) VALUES (:id, :name, "
                         ":hostname, :gpus, :cpus, :registered_at, :last_seen_at, :heartbeat, "
                         ":labels, :caps, :owner_id)",
    [ST_WORKER_UPDATE] = "UPDATE workers SET last_seen_at = :last_seen_at, heartbeat = "
                         ":heartbeat, labels = :labels, caps = :caps WHERE id = :id",
    [ST_REPORTS_OF] = "SELECT step, time, metrics FROM reports WHERE trial_id = :trial AND "
                      "attempt = :attempt AND step > :after ORDER BY step LIMIT :limit",
};


/* SQLite's words for a file it cannot trust: damaged, not a database, or
 * a read or write the system refused. SQLITE_FULL (the disk) is not one:
 * a later commit may succeed. */
static bool damage_code(int code)
{
    int primary = code & 0xff;
    return primary == DB_CORRUPT || primary == DB_NOTADB || primary == DB_IOERR;
}

int store_db_error(Store *s, RungError *err, const char *what)
{
    int code = db_extended_errcode(s->db);
    /* PostgreSQL's I/O error is a connection that broke or a server that
     * stopped: the store stops as for a damaged file (nothing after it may
     * say "kept"), and the operator finds why in the message. */
    if (db_kind(s->db) == DB_POSTGRES && (code & 0xff) == DB_IOERR) {
        store_set_fault(s, "the connection to PostgreSQL failed (%s: %s)", what, db_errmsg(s->db));
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "store: %s", s->fault);
    }
    if (damage_code(code)) {
        store_set_fault(s, "SQLite found the database file %s damaged or unreadable (%s: %s)",
                        s->path, what, db_errmsg(s->db));
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "store: %s", s->fault);
    }
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: %s: %s", what, db_errmsg(s->db));
}

static int param(DbStmt *st, const char *name)
{
    int i = db_bind_parameter_index(st, name);
    if (i == 0) {
        fprintf(stderr, "store: no parameter %s in: %s\n", name, db_sql(st));
        abort();
    }
    return i;
}

static void bind_int(DbStmt *st, const char *name, int64_t v)
{
    db_bind_int64(st, param(st, name), v);
}

/* An owner's users.id (0: the bootstrap admin), or NULL for -1: none. */
static void bind_owner(DbStmt *st, int64_t v)
{
    if (v < 0)
        db_bind_null(st, param(st, ":owner_id"));
    else
        db_bind_int64(st, param(st, ":owner_id"), v);
}

/* Binds v, or NULL when v is 0 (times and ids that are not set yet). */
static void bind_int_or_null(DbStmt *st, const char *name, int64_t v)
{
    if (v == 0)
        db_bind_null(st, param(st, name));
    else
        db_bind_int64(st, param(st, name), v);
}

static void bind_real_or_null(DbStmt *st, const char *name, double v)
{
    if (v == 0)
        db_bind_null(st, param(st, name));
    else
        db_bind_double(st, param(st, name), v);
}

static void bind_text(DbStmt *st, const char *name, const char *v)
{
    if (v == NULL)
        db_bind_null(st, param(st, name));
    else
        db_bind_text(st, param(st, name), v, -1, DB_TRANSIENT);
}

/* Binds the compact JSON text of v (NULL for no value) to parameter i. */
static void bind_json_at(DbStmt *st, int i, const json_t *v)
{
    if (v == NULL) {
        db_bind_null(st, i);
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        abort();
    db_bind_text(st, i, text, -1, free);
}

static void bind_json(DbStmt *st, const char *name, const json_t *v)
{
    bind_json_at(st, param(st, name), v);
}

/* Runs a write statement once and resets it. */
static int run(Store *s, DbStmt *st, RungError *err, const char *what)
{
    int rc = db_step(st);
    db_reset(st);
    db_clear_bindings(st);
    if (rc != DB_DONE)
        return store_db_error(s, err, what);
    return 0;
}


/* The statements every commit runs, prepared once. */
int store_prepare_all(Store *s, RungError *err)
{
    for (int i = 0; i < ST__COUNT; i++) {
        /* PostgreSQL's BEGIN has no IMMEDIATE: one rungd writes (the
         * advisory lock), so there is no other writer to wait for. */
        const char *sql = i == ST_BEGIN && db_kind(s->db) == DB_POSTGRES ? "BEGIN" : sql_text[i];
        if (db_prepare_persistent(s->db, sql, &s->st[i]) != DB_OK)
            return store_db_error(s, err, sql);
    }
    return 0;
}

Db *store_db(Store *s)
{
    return s->db;
}

void store_close(Store *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < ST__COUNT; i++)
        db_finalize(s->st[i]);
    db_finalize(s->renew);
    /* A store that stopped leaves its files as they are: the last close
     * would checkpoint into a file that left its path and delete the
     * -wal that the path names now, which may be another database's.
     * (SQLite only: its own handle.) */
    sqlite3 *lite = s->db != NULL ? db_sqlite(s->db) : NULL;
    if (lite != NULL && s->fault[0] != '\0' && s->serving)
        sqlite3_db_config(lite, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    db_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the lock */
    free(s);
}

/* Runs a statement whose answer matters only if it fails, at the latest
 * with the next one (db_step_later: on PostgreSQL in the same round trip). */
static int run_later(Store *s, DbStmt *st, RungError *err, const char *what)
{
    int rc = db_step_later(st);
    db_clear_bindings(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, what);
}

int store_begin(Store *s, RungError *err)
{
    s->serving = true;
    if (s->fault[0] != '\0')
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "%s", s->fault);
    return run_later(s, s->st[ST_BEGIN], err, "begin");
}

int store_commit(Store *s, RungError *err)
{
    if (db_kind(s->db) == DB_POSTGRES) {
        if (s->fault[0] != '\0')
            return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "%s", s->fault);
        if (s->epoch == 0)
            return run(s, s->st[ST_COMMIT], err, "commit");
        /* Only while this rungd still leads: the renewal of its lease
         * (store_leader.c, rung_renew_lead) fails when another rungd took
         * the lead, and PostgreSQL then runs nothing after it in the
         * round trip, the COMMIT least of all. */
        db_bind_int64(s->renew, 1, s->epoch);
        if (run_later(s, s->renew, err, "leader renewal") == 0 &&
            run(s, s->st[ST_COMMIT], err, "commit") == 0)
            return 0;
        /* A deposed leader stops (store_set_fault: on PostgreSQL rungd
         * exits, the batch unanswered): nothing more it does may say
         * "kept". Another failure (a statement of the batch that failed)
         * is the engine's to roll back, as on SQLite. */
        if (s->fault[0] == '\0' && strstr(db_errmsg(s->db), STORE_DEPOSED) != NULL)
            store_set_fault(s, "%s", db_errmsg(s->db));
        return err->code;
    }
    /* Nothing goes into a file that left its path, nor over another
     * program's writes (the caller rolls back). */
    if (store_guard(s, true, err) != 0)
        return err->code;
    int rc = run(s, s->st[ST_COMMIT], err, "commit");
    store_note_own_writes(s);
    /* A change during the commit: its replies must not say "kept". */
    if (rc == 0 && store_guard(s, false, err) != 0)
        return err->code;
    return rc;
}

void store_rollback(Store *s)
{
    if (db_in_transaction(s->db))
        run(s, s->st[ST_ROLLBACK], NULL, "rollback");
    /* Outside the transaction now: the copy for the operator, once. */
    if (s->fault[0] != '\0' && s->serving && !s->rescued) {
        s->rescued = true;
        store_rescue(s);
    }
}

int store_savepoint(Store *s, RungError *err)
{
    return run_later(s, s->st[ST_SAVEPOINT], err, "savepoint");
}

int store_release_savepoint(Store *s, RungError *err)
{
    return run_later(s, s->st[ST_RELEASE], err, "release savepoint");
}

void store_rollback_savepoint(Store *s)
{
    /* ROLLBACK TO keeps the savepoint open; RELEASE then ends it, leaving
     * the batch's transaction as it was before the request. */
    RungError ignored;
    run(s, s->st[ST_ROLLBACK_TO], &ignored, "rollback to savepoint");
    run(s, s->st[ST_RELEASE], &ignored, "release savepoint");
}

static int write_exp(Store *s, Experiment *e, RungError *err)
{
    DbStmt *st = s->st[e->stored ? ST_EXP_UPDATE : ST_EXP_INSERT];
    bind_int(st, ":id", e->id);
    bind_text(st, ":state", exp_state_name(e->state));
    bind_int_or_null(st, ":ended_at", e->ended_at);
    /* Counts and best, so that an ended experiment is listed from its row. */
    json_t *counts = json_object();
    for (int k = 0; k < TRIAL__COUNT; k++)
        json_object_set_new(counts, trial_state_name((TrialState)k), json_integer(e->counts[k]));
    BestRef b;
    core_experiment_best(e, &b);
    json_t *summary = json_pack("{s:o, s:o}", "counts", counts, "best",
                                b.has ? json_pack("{s:I, s:f, s:I, s:O}", "trial_id",
                                                  (json_int_t)b.trial_id, "value", b.value, "step",
                                                  (json_int_t)b.step, "config", b.config)
                                      : json_null());
    json_t *pareto = core_experiment_pareto(e);
    if (pareto != NULL)
        json_object_set_new(summary, "pareto", pareto);
    bind_json(st, ":summary", summary);
    json_decref(summary);
    bind_text(st, ":error", e->error);
    bind_text(st, ":ended_reason", end_reason_name(e->ended_reason));
    json_t *health = core_health_json(e);
    bind_json(st, ":health", health);
    json_decref(health);
    bind_json(st, ":spec", e->spec.json); /* PATCH changes it */
    bind_int(st, ":total", e->spec.total_trials);
    /* Tags and notes (schema 015) only when new or changed: notes may be
     * 64 KiB, and an experiment's row is written at every trial's end. */
    bool meta = !e->stored || e->meta_changed;
    bind_json(st, ":tags", meta ? e->spec.tags : NULL);
    bind_text(st, ":notes", meta ? json_string_value(e->spec.notes) : NULL);
    if (!e->stored) {
        bind_text(st, ":submitted", e->spec.submitted);
        bind_text(st, ":name", e->spec.name);
        bind_int(st, ":seed", (int64_t)e->spec.searcher.seed);
        bind_int(st, ":created_at", e->created_at);
        bind_owner(st, e->owner_id);
        bind_text(st, ":owner", e->owner);
    }
    if (run(s, st, err, "write experiment"))
        return err->code;
    core_experiment_stored(e);
    return 0;
}

static int write_trial(Store *s, Trial *t, RungError *err)
{
    DbStmt *st = s->st[t->stored ? ST_TRIAL_UPDATE : ST_TRIAL_INSERT];
    bind_int(st, ":id", t->id);
    bind_text(st, ":state", trial_state_name(t->state));
    bind_int(st, ":attempt", t->attempt);
    bind_int_or_null(st, ":worker", t->worker_id);
    bind_text(st, ":token", t->lease_token[0] ? t->lease_token : NULL);
    bind_json(st, ":resources", t->resources);
    bind_int(st, ":stop", t->stop_kind != STOP_NONE);
    bind_text(st, ":stop_kind", stop_kind_name((StopKind)t->stop_kind));
    bind_text(st, ":stopped_by",
              t->state == TRIAL_STOPPED ? stopped_by_name((StoppedBy)t->stopped_by) : NULL);
    bind_int(st, ":user_paused", t->state == TRIAL_PAUSED && t->user_paused);
    bind_int(st, ":preemptions", t->preemptions);
    bind_int(st, ":worker_losses", t->worker_losses);
    bind_json(st, ":warnings", t->warnings);
    bind_json(st, ":info", t->info);      /* the last values that are not numbers (schema 014) */
    bind_json(st, ":gang", t->gang_json); /* members and their tokens (schema 006) */
    bind_text(st, ":error", t->error);
    bind_int_or_null(st, ":started_at", t->started_at);
    bind_int_or_null(st, ":ended_at", t->ended_at);
    bind_real_or_null(st, ":rung", t->rung);
    if (t->state == TRIAL_PENDING || t->state == TRIAL_PREEMPTED) /* in line */
        bind_int(st, ":queue_pos", t->queue_pos);
    else
        db_bind_null(st, param(st, ":queue_pos"));
    if (t->has_step)
        bind_int(st, ":step", t->step);
    else
        db_bind_null(st, param(st, ":step"));
    bind_json(st, ":last", t->last);
    if (t->has_best) {
        db_bind_double(st, param(st, ":best_value"), t->best_value);
        bind_int(st, ":best_step", t->best_step);
    } else {
        db_bind_null(st, param(st, ":best_value"));
        db_bind_null(st, param(st, ":best_step"));
    }
    bind_text(st, ":log_tail", t->log_tail);
    /* Tags and notes (schema 015): NULL keeps the stored ones, as for the
     * config, so that a report's write does not carry 64 KiB of notes. */
    bool meta = !t->stored || t->meta_changed;
    bind_json(st, ":tags", meta ? t->tags : NULL);
    bind_text(st, ":notes", meta ? json_string_value(t->notes) : NULL);
    /* pbt's exploit changes a trial's config and lineage (schema 008);
     * NULL keeps the stored ones, which spares a report's write their
     * text (a lineage grows by a config per exploit). */
    bind_json(st, ":config", !t->stored || t->config_changed ? t->config : NULL);
    bind_json(st, ":lineage", !t->stored || t->config_changed ? t->lineage : NULL);
    json_t *from = t->from_trial != 0
                       ? json_pack("{s:I, s:I, s:I}", "trial", (json_int_t)t->from_trial, "step",
                                   (json_int_t)t->from_step, "worker", (json_int_t)t->from_worker)
                       : NULL;
    if (from != NULL && t->explore_at != 0) /* pb2: it waits for its explore */
        json_object_set_new(from, "explore", json_integer((json_int_t)t->explore_at));
    bind_json(st, ":resume_from", from);
    json_decref(from);
    if (!t->stored) {
        bind_int(st, ":exp", t->exp->id);
        bind_int(st, ":number", t->number);
        bind_int(st, ":created_at", t->created_at);
    }
    if (run(s, st, err, "write trial"))
        return err->code;
    core_trial_stored(t);
    return 0;
}

static int write_worker(Store *s, Worker *w, RungError *err)
{
    DbStmt *st = s->st[w->stored ? ST_WORKER_UPDATE : ST_WORKER_INSERT];
    bind_int(st, ":id", w->id);
    bind_int(st, ":last_seen_at", w->last_seen_at);
    bind_json(st, ":heartbeat", w->heartbeat);
    bind_json(st, ":labels", w->labels);
    bind_json(st, ":caps", w->caps);
    if (!w->stored) {
        bind_text(st, ":name", w->name);
        bind_text(st, ":hostname", w->hostname);
        bind_json(st, ":gpus", w->gpus);
        bind_int(st, ":cpus", w->cpus);
        bind_int(st, ":registered_at", w->registered_at);
        bind_owner(st, w->owner_id);
    }
    if (run(s, st, err, "write worker"))
        return err->code;
    core_worker_stored(w);
    return 0;
}

static int write_report(Store *s, const NewReport *r, RungError *err)
{
    DbStmt *st = s->st[ST_REPORT_INSERT];
    bind_int(st, ":trial", r->trial_id);
    bind_int(st, ":attempt", r->attempt);
    bind_int(st, ":step", r->step);
    bind_int(st, ":time", r->time);
    bind_json(st, ":metrics", r->metrics);
    bind_text(st, ":action", r->action == ACTION_STOP ? "stop" : "continue");
    return run(s, st, err, "write report");
}

/* pbt: a checkpoint file stored in the data folder (schema 009); its file
 * was renamed into place before. */
static int write_checkpoint(Store *s, const CoreCheckpoint *c, RungError *err)
{
    DbStmt *st;
    if (store_prepare(
            s,
            "INSERT OR REPLACE INTO checkpoints (trial_id, step, sha256, size, stored_at) "
            "VALUES (?1, ?2, ?3, ?4, ?5)",
            &st, err, "write checkpoint"))
        return err->code;
    db_bind_int64(st, 1, c->trial_id);
    db_bind_int64(st, 2, c->step);
    db_bind_text(st, 3, c->sha256, -1, DB_TRANSIENT);
    db_bind_int64(st, 4, c->size);
    db_bind_int64(st, 5, c->stored_at);
    int rc = db_step(st) == DB_DONE ? 0 : store_db_error(s, err, "write checkpoint");
    db_finalize(st);
    return rc;
}

static int drop_checkpoint(Store *s, const CoreCheckpoint *c, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "DELETE FROM checkpoints WHERE trial_id = ?1 AND step = ?2", &st, err,
                      "drop checkpoint"))
        return err->code;
    db_bind_int64(st, 1, c->trial_id);
    db_bind_int64(st, 2, c->step);
    int rc = db_step(st) == DB_DONE ? 0 : store_db_error(s, err, "drop checkpoint");
    db_finalize(st);
    return rc;
}

/* One event of the log (schema 13), also written to the log at info
 * level (docs/operations.md, "Events"). */
static int write_event(Store *s, const CoreEvent *ev, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "INSERT INTO events (at, actor_kind, actor, kind, experiment_id, trial_id, "
                      "worker_id, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                      &st, err, "write event"))
        return err->code;
    db_bind_int64(st, 1, ev->at);
    db_bind_text(st, 2, ev->actor_kind, -1, DB_STATIC);
    db_bind_text(st, 3, ev->actor, -1, DB_STATIC);
    db_bind_text(st, 4, ev->kind, -1, DB_STATIC);
    if (ev->experiment_id > 0)
        db_bind_int64(st, 5, ev->experiment_id);
    if (ev->trial_id > 0)
        db_bind_int64(st, 6, ev->trial_id);
    if (ev->worker_id > 0)
        db_bind_int64(st, 7, ev->worker_id);
    char *detail = ev->detail ? json_dumps(ev->detail, JSON_COMPACT) : NULL;
    if (detail)
        db_bind_text(st, 8, detail, -1, DB_TRANSIENT);
    int rc = db_step(st) == DB_DONE ? 0 : store_db_error(s, err, "write event");
    db_finalize(st);
    if (rc == 0)
        ((CoreEvent *)ev)->id = db_last_insert_id(store_db(s)); /* the queue's own */
    if (rc == 0) /* docs/operations.md, "Logs": every event at info level */
        LOG_INFO("event %lld %s by %s %s%s%.0lld%s%.0lld%s%.0lld %s",
                 (long long)db_last_insert_id(store_db(s)), ev->kind, ev->actor_kind, ev->actor,
                 ev->experiment_id > 0 ? " experiment=" : "", (long long)ev->experiment_id,
                 ev->trial_id > 0 ? " trial=" : "", (long long)ev->trial_id,
                 ev->worker_id > 0 ? " worker=" : "", (long long)ev->worker_id,
                 detail ? detail : "");
    free(detail);
    return rc;
}

int store_write_changes(Store *s, const CoreChanges *c, RungError *err)
{
    /* Parents first: foreign keys are checked row by row. */
    for (int64_t i = 0; i < c->n_exps; i++)
        if (write_exp(s, c->exps[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_workers; i++)
        if (write_worker(s, c->workers[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_trials; i++)
        if (write_trial(s, c->trials[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_reports; i++)
        if (write_report(s, &c->reports[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_ckpts; i++)
        if (write_checkpoint(s, &c->ckpts[i], err))
            return err->code;
    /* After the inserts: one stored and dropped in the same batch goes. */
    for (int64_t i = 0; i < c->n_dropped_ckpts; i++)
        if (drop_checkpoint(s, &c->dropped_ckpts[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_events; i++)
        if (write_event(s, &c->events[i], err))
            return err->code;
    return 0;
}

json_t *store_column_json(DbStmt *st, int col)
{
    const char *text = db_column_text(st, col);
    if (text == NULL)
        return NULL;
    return json_loads(text, JSON_DECODE_ANY, NULL);
}

/* Prepares sql, or fails naming what. */
int store_prepare(Store *s, const char *sql, DbStmt **st, RungError *err, const char *what)
{
    if (db_prepare(s->db, sql, st) != DB_OK)
        return store_db_error(s, err, what);
    return 0;
}


bool store_has_checkpoint(Store *s, int64_t trial_id, int64_t step)
{
    DbStmt *st;
    RungError err;
    if (store_prepare(s, "SELECT 1 FROM checkpoints WHERE trial_id = ?1 AND step = ?2", &st, &err,
                      "checkpoint"))
        return true; /* cannot tell: keep it */
    db_bind_int64(st, 1, trial_id);
    db_bind_int64(st, 2, step);
    int rc = db_step(st);
    db_finalize(st);
    return rc != DB_DONE; /* a row, or an error: keep it */
}

int store_delete_experiment(Store *s, int64_t id, int64_t trial_counts[TRIAL__COUNT],
                            RungError *err)
{
    memset(trial_counts, 0, sizeof(int64_t) * TRIAL__COUNT);
    DbStmt *st;
    if (store_prepare(s,
                      "SELECT state, count(*) FROM trials WHERE experiment_id = ? GROUP BY state",
                      &st, err, "delete"))
        return err->code;
    db_bind_int64(st, 1, id);
    while (db_step(st) == DB_ROW) {
        TrialState ts;
        if (trial_state_parse(db_column_text(st, 0), &ts) == 0)
            trial_counts[ts] = db_column_int64(st, 1);
    }
    db_finalize(st);
    static const char *const sql[] = {
        /* The highest ids so far, kept before their rows may go (schema 011). */
        /* (WHERE true: an upsert's SELECT needs a WHERE to be parsed as one;
         * the id bound below is out of range here and ignored.) */
        "INSERT INTO id_floors (kind, max_id) SELECT 'experiments', coalesce(max(id), 0) FROM "
        "experiments WHERE true ON CONFLICT (kind) DO UPDATE SET max_id = "
        "CASE WHEN id_floors.max_id > excluded.max_id THEN id_floors.max_id "
        "ELSE excluded.max_id END",
        "INSERT INTO id_floors (kind, max_id) SELECT 'trials', coalesce(max(id), 0) FROM trials "
        "WHERE true ON CONFLICT (kind) DO UPDATE SET max_id = CASE WHEN id_floors.max_id > "
        "excluded.max_id THEN id_floors.max_id ELSE excluded.max_id END",
        "DELETE FROM reports WHERE trial_id IN (SELECT id FROM trials WHERE experiment_id = ?)",
        /* pbt's stored checkpoints (their files, which nothing reads once
         * their rows are gone, are removed by ckptstore_sweep at the next
         * start: main.c). */
        "DELETE FROM checkpoints WHERE trial_id IN (SELECT id FROM trials WHERE experiment_id = ?)",
        "DELETE FROM trials WHERE experiment_id = ?",
        "DELETE FROM experiments WHERE id = ?",
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (store_prepare(s, sql[i], &st, err, "delete"))
            return err->code;
        db_bind_int64(st, 1, id);
        int rc = db_step(st);
        db_finalize(st);
        if (rc != DB_DONE)
            return store_db_error(s, err, "delete");
    }
    return 0;
}

/* The most lines a trial's merged warnings quote (request.h,
 * REQUEST_MAX_WARN_LAST), as core_report.c keeps them. */
#define GANG_WARN_LAST 5

int store_gang_warnings(Store *s, int64_t trial_id, const char *token, json_t *warnings,
                        RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "SELECT gang FROM trials WHERE id = ?", &st, err, "gang warnings"))
        return err->code;
    db_bind_int64(st, 1, trial_id);
    int rc = db_step(st);
    json_t *stored = rc == DB_ROW ? store_column_json(st, 0) : NULL;
    db_finalize(st);
    if (rc != DB_ROW && rc != DB_DONE)
        return store_db_error(s, err, "gang warnings");
    Gang *g = stored != NULL ? members_from_json(stored) : NULL;
    json_decref(stored);
    GangMember *m = members_by_token(g, token);
    if (m == NULL || (m->warnings != NULL && json_equal(m->warnings, warnings))) {
        members_free(g);
        return 0;
    }
    json_decref(m->warnings);
    m->warnings = json_incref(warnings);
    json_t *gang = members_to_json(g);
    json_t *merged = members_warnings(g, GANG_WARN_LAST);
    members_free(g);
    if (store_prepare(s, "UPDATE trials SET gang = ?1, warnings = ?2 WHERE id = ?3", &st, err,
                      "gang warnings") == 0) {
        db_bind_int64(st, 3, trial_id);
        char *text = json_dumps(gang, JSON_COMPACT);
        char *merged_text = merged != NULL ? json_dumps(merged, JSON_COMPACT) : NULL;
        if (text == NULL || (merged != NULL && merged_text == NULL))
            abort(); /* as bind_json: no memory, no state to trust */
        db_bind_text(st, 1, text, -1, free);
        if (merged_text != NULL)
            db_bind_text(st, 2, merged_text, -1, free);
        rc = db_step(st) == DB_DONE ? 0 : store_db_error(s, err, "gang warnings");
        db_finalize(st);
    } else {
        rc = err->code;
    }
    json_decref(gang);
    json_decref(merged);
    return rc;
}
int store_reports(Store *s, int64_t trial_id, int64_t attempt, int64_t after_step, int64_t limit,
                  json_t **items, RungError *err)
{
    DbStmt *st = s->st[ST_REPORTS_OF];
    bind_int(st, ":trial", trial_id);
    bind_int(st, ":attempt", attempt);
    bind_int(st, ":after", after_step);
    bind_int(st, ":limit", limit);
    json_t *arr = json_array();
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        char when[32];
        rung_time_format(db_column_int64(st, 1), when, sizeof when);
        json_t *metrics = store_column_json(st, 2);
        json_array_append_new(arr, json_pack("{s:I, s:s, s:o}", "step",
                                             (json_int_t)db_column_int64(st, 0), "time", when,
                                             "metrics", metrics ? metrics : json_object()));
    }
    db_reset(st);
    db_clear_bindings(st);
    if (rc != DB_DONE) {
        json_decref(arr);
        return store_db_error(s, err, "read reports");
    }
    *items = arr;
    return 0;
}

/* ---- tags and notes of rows not in memory (schema 015) ---- */

static int set_meta(Store *s, const char *table, int64_t id, const json_t *tags,
                    const json_t *notes, RungError *err)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "UPDATE %s SET tags = coalesce(?2, tags), notes = coalesce(?3, notes) WHERE id = ?1",
             table);
    DbStmt *st;
    if (store_prepare(s, sql, &st, err, "set tags and notes"))
        return err->code;
    db_bind_int64(st, 1, id);
    bind_json_at(st, 2, tags);
    if (notes != NULL)
        db_bind_text(st, 3, json_string_value(notes), -1, DB_TRANSIENT);
    int rc = db_step(st) == DB_DONE ? 0 : store_db_error(s, err, "set tags and notes");
    if (rc == 0 && db_changes(s->db) == 0)
        rc = rung_error_set(err, RUNG_E_NOT_FOUND, NULL, "%s %lld not found",
                            table[0] == 'e' ? "experiment" : "trial", (long long)id);
    db_finalize(st);
    return rc;
}

int store_set_experiment_meta(Store *s, int64_t id, const json_t *tags, const json_t *notes,
                              RungError *err)
{
    return set_meta(s, "experiments", id, tags, notes, err);
}

int store_set_trial_meta(Store *s, int64_t id, const json_t *tags, const json_t *notes,
                         RungError *err)
{
    return set_meta(s, "trials", id, tags, notes, err);
}
