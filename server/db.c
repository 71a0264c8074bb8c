/* The store's SQL connection (db.h): the calls, each passed to SQLite as it
 * is or to PostgreSQL's side (db_pg.c). */
#include "db_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int db_open_sqlite(const char *path, int sqlite_flags, Db **out)
{
    Db *db = calloc(1, sizeof *db);
    *out = db;
    if (db == NULL)
        return DB_NOMEM;
    db->kind = DB_SQLITE;
    return sqlite3_open_v2(path, &db->lite, sqlite_flags, NULL);
}

int db_open_postgres(const char *conninfo, Db **out)
{
    Db *db = calloc(1, sizeof *db);
    *out = db;
    if (db == NULL)
        return DB_NOMEM;
    db->kind = DB_POSTGRES;
    return db_pg_open(db, conninfo);
}

void db_close(Db *db)
{
    if (db == NULL)
        return;
    if (db->kind == DB_SQLITE)
        sqlite3_close(db->lite);
    else
        db_pg_close(db);
    free(db->msg);
    free(db);
}

DbKind db_kind(const Db *db)
{
    return db->kind;
}

sqlite3 *db_sqlite(Db *db)
{
    return db->kind == DB_SQLITE ? db->lite : NULL;
}

const char *db_errmsg(Db *db)
{
    if (db->kind == DB_SQLITE)
        return db->lite ? sqlite3_errmsg(db->lite) : "out of memory";
    return db->msg && db->code != DB_OK ? db->msg : "not an error";
}

int db_errcode(Db *db)
{
    return db->kind == DB_SQLITE ? sqlite3_errcode(db->lite) : db->code;
}

int db_extended_errcode(Db *db)
{
    return db->kind == DB_SQLITE ? sqlite3_extended_errcode(db->lite) : db->extended;
}

int db_exec(Db *db, const char *sql)
{
    if (db->kind == DB_SQLITE)
        return sqlite3_exec(db->lite, sql, NULL, NULL, NULL);
    return db_pg_exec(db, sql);
}

int64_t db_changes(Db *db)
{
    return db->kind == DB_SQLITE ? sqlite3_changes64(db->lite) : db->changes;
}

int64_t db_last_insert_id(Db *db)
{
    return db->kind == DB_SQLITE ? sqlite3_last_insert_rowid(db->lite) : db_pg_last_insert_id(db);
}

bool db_in_transaction(Db *db)
{
    return db->kind == DB_SQLITE ? !sqlite3_get_autocommit(db->lite) : db_pg_in_transaction(db);
}

static int prepare(Db *db, const char *sql, bool persistent, DbStmt **out)
{
    *out = NULL;
    DbStmt *st = calloc(1, sizeof *st);
    if (st == NULL)
        return db->kind == DB_SQLITE ? SQLITE_NOMEM : db_pg_fail(db, DB_NOMEM, "out of memory");
    st->db = db;
    int rc;
    if (db->kind == DB_SQLITE)
        rc = sqlite3_prepare_v3(db->lite, sql, -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0,
                                &st->lite, NULL);
    else
        rc = db_pg_prepare(db, sql, persistent, st);
    /* SQLite gives no statement for text without one (a comment): an
     * error here, as nothing would run. */
    if (rc == DB_OK && db->kind == DB_SQLITE && st->lite == NULL)
        rc = SQLITE_MISUSE;
    if (rc != DB_OK) {
        db_finalize(st);
        return rc;
    }
    *out = st;
    return DB_OK;
}

int db_prepare(Db *db, const char *sql, DbStmt **out)
{
    return prepare(db, sql, false, out);
}

int db_prepare_persistent(Db *db, const char *sql, DbStmt **out)
{
    return prepare(db, sql, true, out);
}

int db_finalize(DbStmt *st)
{
    if (st == NULL)
        return DB_OK;
    if (st->db->kind == DB_SQLITE)
        sqlite3_finalize(st->lite);
    else
        db_pg_finalize(st);
    free(st);
    return DB_OK;
}

int db_reset(DbStmt *st)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_reset(st->lite);
    db_pg_reset(st);
    return DB_OK;
}

int db_clear_bindings(DbStmt *st)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_clear_bindings(st->lite);
    for (int i = 1; i <= st->n_params; i++)
        db_pg_bind(st, i, NULL, 0, DB_STATIC);
    return DB_OK;
}

const char *db_sql(DbStmt *st)
{
    return st->db->kind == DB_SQLITE ? sqlite3_sql(st->lite) : st->sql;
}

int db_bind_parameter_count(DbStmt *st)
{
    return st->db->kind == DB_SQLITE ? sqlite3_bind_parameter_count(st->lite) : st->n_params;
}

int db_bind_parameter_index(DbStmt *st, const char *name)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_bind_parameter_index(st->lite, name);
    /* "?N" is parameter N, as SQLite names it. */
    if (name[0] == '?' && name[1] >= '1' && name[1] <= '9') {
        char *end;
        long k = strtol(name + 1, &end, 10);
        return *end == '\0' && k <= st->n_params ? (int)k : 0;
    }
    for (int i = 0; i < st->n_params; i++)
        if (st->param_names[i] != NULL && strcmp(st->param_names[i], name) == 0)
            return i + 1;
    return 0;
}

int db_bind_null(DbStmt *st, int i)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_bind_null(st->lite, i);
    return db_pg_bind(st, i, NULL, 0, DB_STATIC);
}

int db_bind_int64(DbStmt *st, int i, int64_t v)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_bind_int64(st->lite, i, v);
    char t[32];
    int n = snprintf(t, sizeof t, "%lld", (long long)v);
    return db_pg_bind(st, i, t, n, DB_TRANSIENT);
}

int db_bind_int(DbStmt *st, int i, int v)
{
    return db_bind_int64(st, i, v);
}

int db_bind_double(DbStmt *st, int i, double v)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_bind_double(st->lite, i, v);
    char t[32];
    /* %.17g reads back as the same double; PostgreSQL spells the
     * non-finite ones as words. */
    int n = isnan(v)   ? snprintf(t, sizeof t, "NaN")
            : isinf(v) ? snprintf(t, sizeof t, v > 0 ? "Infinity" : "-Infinity")
                       : snprintf(t, sizeof t, "%.17g", v);
    return db_pg_bind(st, i, t, n, DB_TRANSIENT);
}

int db_bind_text(DbStmt *st, int i, const char *v, int n, DbDestructor d)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_bind_text(st->lite, i, v, n, d);
    if (v == NULL) {
        if (d != DB_STATIC && d != DB_TRANSIENT)
            d((void *)v);
        return db_pg_bind(st, i, NULL, 0, DB_STATIC);
    }
    return db_pg_bind(st, i, v, n, d);
}

int db_step(DbStmt *st)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_step(st->lite);
    return db_pg_step(st);
}

int db_step_later(DbStmt *st)
{
    if (st->db->kind == DB_SQLITE) {
        int rc = sqlite3_step(st->lite);
        sqlite3_reset(st->lite);
        return rc;
    }
    return db_pg_step_later(st);
}

int db_column_count(DbStmt *st)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_column_count(st->lite);
    return db_pg_column_count(st);
}

const char *db_column_name(DbStmt *st, int col)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_column_name(st->lite, col);
    return db_pg_column_name(st, col);
}

int db_column_type(DbStmt *st, int col)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_column_type(st->lite, col);
    return db_pg_column_type(st, col);
}

const char *db_column_text(DbStmt *st, int col)
{
    if (st->db->kind == DB_SQLITE)
        return (const char *)sqlite3_column_text(st->lite, col);
    return db_pg_column_text(st, col);
}

int db_column_bytes(DbStmt *st, int col)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_column_bytes(st->lite, col);
    const char *t = db_pg_column_text(st, col);
    return t ? (int)strlen(t) : 0;
}

/* PostgreSQL's text of a number: an integer, a real, or a boolean (t/f);
 * SQLite's conversions for the rest (0). */
int64_t db_column_int64(DbStmt *st, int col)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_column_int64(st->lite, col);
    const char *t = db_pg_column_text(st, col);
    if (t == NULL)
        return 0;
    if (t[0] == 't' && t[1] == '\0')
        return 1;
    char *end;
    long long v = strtoll(t, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E') {
        double d = strtod(t, NULL);
        return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : 0;
    }
    return v;
}

int db_column_int(DbStmt *st, int col)
{
    return (int)db_column_int64(st, col);
}

double db_column_double(DbStmt *st, int col)
{
    if (st->db->kind == DB_SQLITE)
        return sqlite3_column_double(st->lite, col);
    const char *t = db_pg_column_text(st, col);
    return t ? strtod(t, NULL) : 0.0;
}
