/* Opening the store (store.h, store_open): the SQLite file or the
 * PostgreSQL database, and the migrations (docs/architecture.md, "The
 * store's tables" and "The store's two databases"). */
#include "store_internal.h"

#include "db_dialect.h"
#include "log.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char *const rung_migrations[];
extern const char *const rung_migrations_pg[];

static int exec(Store *s, const char *sql, RungError *err)
{
    if (db_exec(s->db, sql) != DB_OK)
        return store_db_error(s, err, "exec");
    return 0;
}

/* PostgreSQL keeps the schema's version in a table of one row (SQLite in
 * its header: PRAGMA user_version). */
static int user_version(Store *s, int *out, RungError *err)
{
    DbStmt *st;
    bool pg = db_kind(s->db) == DB_POSTGRES;
    if (pg && (exec(s,
                    "CREATE TABLE IF NOT EXISTS rung_schema (version BIGINT NOT NULL); "
                    "INSERT INTO rung_schema SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM rung_schema)",
                    err)))
        return err->code;
    if (db_prepare(s->db, pg ? "SELECT max(version) FROM rung_schema" : "PRAGMA user_version",
                   &st) != DB_OK)
        return store_db_error(s, err, "user_version");
    int rc = db_step(st);
    *out = rc == DB_ROW ? db_column_int(st, 0) : 0;
    db_finalize(st);
    return rc == DB_ROW ? 0 : store_db_error(s, err, "user_version");
}

/* Fails when a row refers to one that does not exist (run after each
 * migration, since they run with foreign keys off). */
static int foreign_keys_hold(Store *s, RungError *err)
{
    DbStmt *st;
    if (db_prepare(s->db, "PRAGMA foreign_key_check", &st) != DB_OK)
        return store_db_error(s, err, "foreign_key_check");
    int rc = db_step(st);
    char table[128] = "";
    if (rc == DB_ROW)
        snprintf(table, sizeof table, "%s", db_column_text(st, 0));
    db_finalize(st);
    if (rc == DB_ROW)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "store: after migrating, table %s refers to missing rows", table);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "foreign_key_check");
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
    bool pg = db_kind(s->db) == DB_POSTGRES;
    for (int v = have; v < known; v++) {
        char pragma[64];
        snprintf(pragma, sizeof pragma,
                 pg ? "UPDATE rung_schema SET version = %d" : "PRAGMA user_version = %d", v + 1);
        /* PostgreSQL's text of the migration (db_dialect.h); its foreign
         * keys are not declared there, so there is nothing to check. */
        char *sql = pg ? db_pg_migration(rung_migrations_pg[v] ? rung_migrations_pg[v]
                                                               : rung_migrations[v])
                       : NULL;
        int rc = exec(s, "BEGIN", err) || exec(s, pg ? sql : rung_migrations[v], err) ||
                 (!pg && foreign_keys_hold(s, err)) || exec(s, pragma, err) ||
                 exec(s, "COMMIT", err);
        free(sql);
        if (rc) {
            exec(s, "ROLLBACK", NULL);
            return err->code;
        }
    }
    return 0;
}

/* The key of the advisory lock that rungd holds while it makes or migrates
 * the tables ("Rung" in ASCII): daemons that start together on one
 * database migrate it one after the other. */
#define PG_LOCK_KEY 0x52756e67

/* The store on PostgreSQL (opt->pg_conninfo): connected; under the
 * advisory lock, SQLite's JSON functions (db_pg_prelude, made again on
 * each start so that a newer rungd's apply), the migrations in
 * PostgreSQL's dialect and the leader's row (store_leader.c). Which rungd
 * leads is decided after (store_leader_claim). */
static int open_postgres(Store *s, const StoreOptions *opt, RungError *err)
{
    snprintf(s->path, sizeof s->path, "PostgreSQL");
    if (db_open_postgres(opt->pg_conninfo, &s->db) != DB_OK)
        return rung_error_set(err, RUNG_E_UNAVAILABLE, "database", "store: %s",
                              s->db ? db_errmsg(s->db) : "out of memory");
    char lock[96];
    snprintf(lock, sizeof lock, "SELECT pg_advisory_lock(%d)", PG_LOCK_KEY);
    DbStmt *st;
    if (db_prepare(s->db, lock, &st) != DB_OK || db_step(st) != DB_ROW) {
        db_finalize(st);
        return store_db_error(s, err, "advisory lock");
    }
    db_finalize(st);
    int rc = exec(s, db_pg_prelude, err) || migrate(s, err) || store_leader_table(s, err);
    snprintf(lock, sizeof lock, "SELECT pg_advisory_unlock(%d)", PG_LOCK_KEY);
    if (db_prepare(s->db, lock, &st) == DB_OK)
        db_step(st);
    db_finalize(st);
    return rc ? err->code : 0;
}

int store_open(const char *path, const StoreOptions *opt, Store **out, RungError *err)
{
    if (opt->pg_conninfo != NULL) {
        Store *s = calloc(1, sizeof *s);
        if (s == NULL)
            return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
        s->lock_fd = -1;
        if (open_postgres(s, opt, err) != 0 || store_prepare_all(s, err) != 0) {
            store_close(s);
            return err->code;
        }
        *out = s;
        return 0;
    }
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
    if (db_open_sqlite(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                       &s->db) != DB_OK) {
        rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: cannot open %s: %s", path,
                       s->db ? db_errmsg(s->db) : "out of memory");
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
    if (store_prepare_all(s, err) != 0) {
        store_close(s);
        return err->code;
    }
    store_file_opened(s, path, opt);
    *out = s;
    return 0;
}
