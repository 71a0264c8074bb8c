/* The SQLite store; see store.h.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char *const rung_migrations[];

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
    return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR;
}

int store_db_error(Store *s, RungError *err, const char *what)
{
    int code = sqlite3_extended_errcode(s->db);
    if (damage_code(code)) {
        store_set_fault(s, "SQLite found the database file %s damaged or unreadable (%s: %s)",
                        s->path, what, sqlite3_errmsg(s->db));
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "store: %s", s->fault);
    }
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: %s: %s", what, sqlite3_errmsg(s->db));
}

static int param(sqlite3_stmt *st, const char *name)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0) {
        fprintf(stderr, "store: no parameter %s in: %s\n", name, sqlite3_sql(st));
        abort();
    }
    return i;
}

static void bind_int(sqlite3_stmt *st, const char *name, int64_t v)
{
    sqlite3_bind_int64(st, param(st, name), v);
}

/* An owner's users.id (0: the bootstrap admin), or NULL for -1: none. */
static void bind_owner(sqlite3_stmt *st, int64_t v)
{
    if (v < 0)
        sqlite3_bind_null(st, param(st, ":owner_id"));
    else
        sqlite3_bind_int64(st, param(st, ":owner_id"), v);
}

/* Binds v, or NULL when v is 0 (times and ids that are not set yet). */
static void bind_int_or_null(sqlite3_stmt *st, const char *name, int64_t v)
{
    if (v == 0)
        sqlite3_bind_null(st, param(st, name));
    else
        sqlite3_bind_int64(st, param(st, name), v);
}

static void bind_real_or_null(sqlite3_stmt *st, const char *name, double v)
{
    if (v == 0)
        sqlite3_bind_null(st, param(st, name));
    else
        sqlite3_bind_double(st, param(st, name), v);
}

static void bind_text(sqlite3_stmt *st, const char *name, const char *v)
{
    if (v == NULL)
        sqlite3_bind_null(st, param(st, name));
    else
        sqlite3_bind_text(st, param(st, name), v, -1, SQLITE_TRANSIENT);
}

/* Binds the compact JSON text of v (NULL for no value). */
static void bind_json(sqlite3_stmt *st, const char *name, const json_t *v)
{
    if (v == NULL) {
        sqlite3_bind_null(st, param(st, name));
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        abort();
    sqlite3_bind_text(st, param(st, name), text, -1, free);
}

/* Runs a write statement once and resets it. */
static int run(Store *s, sqlite3_stmt *st, RungError *err, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        return store_db_error(s, err, what);
    return 0;
}

static int exec(Store *s, const char *sql, RungError *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        sqlite3_free(msg);
        return store_db_error(s, err, "exec");
    }
    return 0;
}

static int user_version(Store *s, int *out, RungError *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return store_db_error(s, err, "user_version");
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : store_db_error(s, err, "user_version");
}

/* Fails when a row refers to one that does not exist (run after each
 * migration, since they run with foreign keys off). */
static int foreign_keys_hold(Store *s, RungError *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA foreign_key_check", -1, &st, NULL) != SQLITE_OK)
        return store_db_error(s, err, "foreign_key_check");
    int rc = sqlite3_step(st);
    char table[128] = "";
    if (rc == SQLITE_ROW)
        snprintf(table, sizeof table, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "store: after migrating, table %s refers to missing rows", table);
    return rc == SQLITE_DONE ? 0 : store_db_error(s, err, "foreign_key_check");
}

/* Applies migrations user_version+1 … N, each in its own transaction. */
static int migrate(Store *s, RungError *err)
{
    int have, known = 0;
    while (rung_migrations[known] != NULL)
        known++;
    if (user_version(s, &have, err))
        return err->code;
    if (have > known)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "store: the database has schema version %d, newer than the %d "
                              "this rungd knows; use a newer rungd",
                              have, known);
    for (int v = have; v < known; v++) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
        if (exec(s, "BEGIN", err) || exec(s, rung_migrations[v], err) ||
            foreign_keys_hold(s, err) || exec(s, pragma, err) || exec(s, "COMMIT", err)) {
            exec(s, "ROLLBACK", NULL);
            return err->code;
        }
    }
    return 0;
}


int store_open(const char *path, const StoreOptions *opt, Store **out, RungError *err)
{
    if (store_file_before_open(path, opt, err) != 0)
        return err->code;
    Store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
    s->lock_fd = -1;
    snprintf(s->path, sizeof s->path, "%s", path);
    if (store_lock_database(s, path, err) != 0) {
        store_close(s);
        return err->code;
    }
    /* NOMUTEX: one thread at a time uses the connection (main.c opens and
     * loads it before the engine thread starts and closes it after that
     * thread ended; docs/architecture.md, "Threads"), so SQLite's own lock
     * around every call would only cost: a fifth of reading 100,000 rows. */
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: cannot open %s: %s", path,
                       s->db ? sqlite3_errmsg(s->db) : "out of memory");
        store_close(s);
        return RUNG_E_INTERNAL;
    }
    /* WAL: readers never block the writer, and a commit is one append.
     * synchronous=NORMAL in WAL loses nothing on a process crash, only on
     * power loss; FULL adds an fsync per commit. */
    const char *pragmas = opt->durable_full ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                            : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;";
    /* Foreign keys come on after the migrations: a migration that rebuilds a
     * table (002) drops the old one, which other tables refer to. */
    if (exec(s, pragmas, err) || exec(s, "PRAGMA busy_timeout=5000;", err) || migrate(s, err) ||
        exec(s, "PRAGMA foreign_keys=ON;", err)) {
        store_close(s);
        return err->code;
    }
    for (int i = 0; i < ST__COUNT; i++) {
        if (sqlite3_prepare_v3(s->db, sql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK) {
            store_db_error(s, err, sql_text[i]);
            store_close(s);
            return err->code;
        }
    }
    store_file_opened(s, path, opt);
    *out = s;
    return 0;
}

sqlite3 *store_db(Store *s)
{
    return s->db;
}

void store_close(Store *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < ST__COUNT; i++)
        sqlite3_finalize(s->st[i]);
    /* A store that stopped leaves its files as they are: the last close
     * would checkpoint into a file that left its path and delete the
     * -wal that the path names now, which may be another database's. */
    if (s->db != NULL && s->fault[0] != '\0' && s->serving)
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the lock */
    free(s);
}

int store_begin(Store *s, RungError *err)
{
    s->serving = true;
    if (s->fault[0] != '\0')
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "%s", s->fault);
    return run(s, s->st[ST_BEGIN], err, "begin");
}

int store_commit(Store *s, RungError *err)
{
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
    if (!sqlite3_get_autocommit(s->db))
        run(s, s->st[ST_ROLLBACK], NULL, "rollback");
    /* Outside the transaction now: the copy for the operator, once. */
    if (s->fault[0] != '\0' && s->serving && !s->rescued) {
        s->rescued = true;
        store_rescue(s);
    }
}

int store_savepoint(Store *s, RungError *err)
{
    return run(s, s->st[ST_SAVEPOINT], err, "savepoint");
}

int store_release_savepoint(Store *s, RungError *err)
{
    return run(s, s->st[ST_RELEASE], err, "release savepoint");
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
    sqlite3_stmt *st = s->st[e->stored ? ST_EXP_UPDATE : ST_EXP_INSERT];
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
    sqlite3_stmt *st = s->st[t->stored ? ST_TRIAL_UPDATE : ST_TRIAL_INSERT];
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
        sqlite3_bind_null(st, param(st, ":queue_pos"));
    if (t->has_step)
        bind_int(st, ":step", t->step);
    else
        sqlite3_bind_null(st, param(st, ":step"));
    bind_json(st, ":last", t->last);
    if (t->has_best) {
        sqlite3_bind_double(st, param(st, ":best_value"), t->best_value);
        bind_int(st, ":best_step", t->best_step);
    } else {
        sqlite3_bind_null(st, param(st, ":best_value"));
        sqlite3_bind_null(st, param(st, ":best_step"));
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
    sqlite3_stmt *st = s->st[w->stored ? ST_WORKER_UPDATE : ST_WORKER_INSERT];
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
    sqlite3_stmt *st = s->st[ST_REPORT_INSERT];
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
    sqlite3_stmt *st;
    if (store_prepare(
            s,
            "INSERT OR REPLACE INTO checkpoints (trial_id, step, sha256, size, stored_at) "
            "VALUES (?1, ?2, ?3, ?4, ?5)",
            &st, err, "write checkpoint"))
        return err->code;
    sqlite3_bind_int64(st, 1, c->trial_id);
    sqlite3_bind_int64(st, 2, c->step);
    sqlite3_bind_text(st, 3, c->sha256, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, c->size);
    sqlite3_bind_int64(st, 5, c->stored_at);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_db_error(s, err, "write checkpoint");
    sqlite3_finalize(st);
    return rc;
}

static int drop_checkpoint(Store *s, const CoreCheckpoint *c, RungError *err)
{
    sqlite3_stmt *st;
    if (store_prepare(s, "DELETE FROM checkpoints WHERE trial_id = ?1 AND step = ?2", &st, err,
                      "drop checkpoint"))
        return err->code;
    sqlite3_bind_int64(st, 1, c->trial_id);
    sqlite3_bind_int64(st, 2, c->step);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_db_error(s, err, "drop checkpoint");
    sqlite3_finalize(st);
    return rc;
}

/* One event of the log (schema 13), also written to the log at info
 * level (docs/operations.md, "Events"). */
static int write_event(Store *s, const CoreEvent *ev, RungError *err)
{
    sqlite3_stmt *st;
    if (store_prepare(s,
                      "INSERT INTO events (at, actor_kind, actor, kind, experiment_id, trial_id, "
                      "worker_id, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                      &st, err, "write event"))
        return err->code;
    sqlite3_bind_int64(st, 1, ev->at);
    sqlite3_bind_text(st, 2, ev->actor_kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, ev->actor, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, ev->kind, -1, SQLITE_STATIC);
    if (ev->experiment_id > 0)
        sqlite3_bind_int64(st, 5, ev->experiment_id);
    if (ev->trial_id > 0)
        sqlite3_bind_int64(st, 6, ev->trial_id);
    if (ev->worker_id > 0)
        sqlite3_bind_int64(st, 7, ev->worker_id);
    char *detail = ev->detail ? json_dumps(ev->detail, JSON_COMPACT) : NULL;
    if (detail)
        sqlite3_bind_text(st, 8, detail, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_db_error(s, err, "write event");
    sqlite3_finalize(st);
    if (rc == 0)
        ((CoreEvent *)ev)->id = sqlite3_last_insert_rowid(store_db(s)); /* the queue's own */
    if (rc == 0) /* docs/operations.md, "Logs": every event at info level */
        LOG_INFO("event %lld %s by %s %s%s%.0lld%s%.0lld%s%.0lld %s",
                 (long long)sqlite3_last_insert_rowid(store_db(s)), ev->kind, ev->actor_kind,
                 ev->actor, ev->experiment_id > 0 ? " experiment=" : "",
                 (long long)ev->experiment_id, ev->trial_id > 0 ? " trial=" : "",
                 (long long)ev->trial_id, ev->worker_id > 0 ? " worker=" : "",
                 (long long)ev->worker_id, detail ? detail : "");
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

json_t *store_column_json(sqlite3_stmt *st, int col)
{
    const char *text = (const char *)sqlite3_column_text(st, col);
    if (text == NULL)
        return NULL;
    return json_loads(text, JSON_DECODE_ANY, NULL);
}

/* Prepares sql, or fails naming what. */
int store_prepare(Store *s, const char *sql, sqlite3_stmt **st, RungError *err, const char *what)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return store_db_error(s, err, what);
    return 0;
}


bool store_has_checkpoint(Store *s, int64_t trial_id, int64_t step)
{
    sqlite3_stmt *st;
    RungError err;
    if (store_prepare(s, "SELECT 1 FROM checkpoints WHERE trial_id = ?1 AND step = ?2", &st, &err,
                      "checkpoint"))
        return true; /* cannot tell: keep it */
    sqlite3_bind_int64(st, 1, trial_id);
    sqlite3_bind_int64(st, 2, step);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc != SQLITE_DONE; /* a row, or an error: keep it */
}

int store_delete_experiment(Store *s, int64_t id, int64_t trial_counts[TRIAL__COUNT],
                            RungError *err)
{
    memset(trial_counts, 0, sizeof(int64_t) * TRIAL__COUNT);
    sqlite3_stmt *st;
    if (store_prepare(s,
                      "SELECT state, count(*) FROM trials WHERE experiment_id = ? GROUP BY state",
                      &st, err, "delete"))
        return err->code;
    sqlite3_bind_int64(st, 1, id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        TrialState ts;
        if (trial_state_parse((const char *)sqlite3_column_text(st, 0), &ts) == 0)
            trial_counts[ts] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    static const char *const sql[] = {
        /* The highest ids so far, kept before their rows may go (schema 011). */
        /* (WHERE true: an upsert's SELECT needs a WHERE to be parsed as one;
         * the id bound below is out of range here and ignored.) */
        "INSERT INTO id_floors (kind, max_id) SELECT 'experiments', coalesce(max(id), 0) FROM "
        "experiments WHERE true ON CONFLICT (kind) DO UPDATE SET max_id = "
        "max(max_id, excluded.max_id)",
        "INSERT INTO id_floors (kind, max_id) SELECT 'trials', coalesce(max(id), 0) FROM trials "
        "WHERE true ON CONFLICT (kind) DO UPDATE SET max_id = max(max_id, excluded.max_id)",
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
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
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
    sqlite3_stmt *st;
    if (store_prepare(s, "SELECT gang FROM trials WHERE id = ?", &st, err, "gang warnings"))
        return err->code;
    sqlite3_bind_int64(st, 1, trial_id);
    int rc = sqlite3_step(st);
    json_t *stored = rc == SQLITE_ROW ? store_column_json(st, 0) : NULL;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
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
        sqlite3_bind_int64(st, 3, trial_id);
        char *text = json_dumps(gang, JSON_COMPACT);
        char *merged_text = merged != NULL ? json_dumps(merged, JSON_COMPACT) : NULL;
        if (text == NULL || (merged != NULL && merged_text == NULL))
            abort(); /* as bind_json: no memory, no state to trust */
        sqlite3_bind_text(st, 1, text, -1, free);
        if (merged_text != NULL)
            sqlite3_bind_text(st, 2, merged_text, -1, free);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_db_error(s, err, "gang warnings");
        sqlite3_finalize(st);
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
    sqlite3_stmt *st = s->st[ST_REPORTS_OF];
    bind_int(st, ":trial", trial_id);
    bind_int(st, ":attempt", attempt);
    bind_int(st, ":after", after_step);
    bind_int(st, ":limit", limit);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char when[32];
        rung_time_format(sqlite3_column_int64(st, 1), when, sizeof when);
        json_t *metrics = store_column_json(st, 2);
        json_array_append_new(arr, json_pack("{s:I, s:s, s:o}", "step",
                                             (json_int_t)sqlite3_column_int64(st, 0), "time", when,
                                             "metrics", metrics ? metrics : json_object()));
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
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
    sqlite3_stmt *st;
    if (store_prepare(s, sql, &st, err, "set tags and notes"))
        return err->code;
    sqlite3_bind_int64(st, 1, id);
    bind_json(st, "?2", tags);
    if (notes != NULL)
        sqlite3_bind_text(st, 3, json_string_value(notes), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_db_error(s, err, "set tags and notes");
    if (rc == 0 && sqlite3_changes(s->db) == 0)
        rc = rung_error_set(err, RUNG_E_NOT_FOUND, NULL, "%s %lld not found",
                            table[0] == 'e' ? "experiment" : "trial", (long long)id);
    sqlite3_finalize(st);
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
