/* The SQL connection the store talks through: one interface over SQLite
 * (the default: a file beside rungd) and PostgreSQL (libpq), so that the
 * store's code (store*.c) is written once for both (docs/architecture.md,
 * "The store's two databases").
 *
 * The calls are SQLite's own, renamed: a statement is prepared once, its
 * parameters bound (?, ?N or :name), stepped row by row and reset or
 * finalized; the codes and column types have SQLite's values, so that
 * `db_step(st) == DB_ROW` reads as `sqlite3_step(st) == SQLITE_ROW` did.
 *
 * On PostgreSQL (db_pg.c) the placeholders are rewritten to $1…$N when the
 * statement is prepared, parameters and results travel as text, and the
 * first db_step after a bind or reset runs the statement and keeps its
 * whole result, which the following steps walk. What only SQLite has (the
 * file's pragmas, online backup, integrity_check) stays in store_file.c on
 * db_sqlite()'s handle. */
#ifndef RUNG_SERVER_DB_H
#define RUNG_SERVER_DB_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sqlite3 sqlite3;

typedef struct Db Db;
typedef struct DbStmt DbStmt;

typedef enum { DB_SQLITE, DB_POSTGRES } DbKind;

/* Result codes: SQLite's primary codes (sqlite3.h), which the SQLite side
 * passes through unchanged (extended codes from db_extended_errcode). */
enum {
    DB_OK = 0,
    DB_ERROR = 1,
    DB_BUSY = 5,
    DB_NOMEM = 7,
    DB_IOERR = 10,
    DB_CORRUPT = 11,
    DB_FULL = 13,
    DB_CONSTRAINT = 19,
    DB_RANGE = 25,
    DB_NOTADB = 26,
    DB_ROW = 100,
    DB_DONE = 101,
};

/* Column types (SQLite's fundamental types). */
enum { DB_INTEGER = 1, DB_FLOAT = 2, DB_TEXT = 3, DB_BLOB = 4, DB_NULL = 5 };

/* What db_bind_text does with the text: DB_STATIC, it stays valid until
 * the statement is stepped and reset; DB_TRANSIENT, it is copied now; any
 * other function frees it once the statement is done with it. */
typedef void (*DbDestructor)(void *);
#define DB_STATIC ((DbDestructor)0)
#define DB_TRANSIENT ((DbDestructor)-1)

/* ---- connections ---- */

/* Opens a SQLite file with sqlite3_open_v2's flags. Like sqlite3_open_v2,
 * *out is set even on failure (NULL only when out of memory) so that
 * db_errmsg can say why; close it with db_close. */
int db_open_sqlite(const char *path, int sqlite_flags, Db **out);
/* Connects to PostgreSQL (a libpq connection string or postgresql:// URI).
 * *out is set even on failure, as above. */
int db_open_postgres(const char *conninfo, Db **out);
/* Closes the connection; statements must be finalized first. NULL: no-op. */
void db_close(Db *db);

DbKind db_kind(const Db *db);
/* The SQLite handle, for what only SQLite has; NULL on PostgreSQL. */
sqlite3 *db_sqlite(Db *db);

/* The last failure's message, primary and extended code. */
const char *db_errmsg(Db *db);
int db_errcode(Db *db);
int db_extended_errcode(Db *db);

/* Runs one or more statements without results (no parameters). */
int db_exec(Db *db, const char *sql);
/* Rows the last INSERT, UPDATE or DELETE changed. */
int64_t db_changes(Db *db);
/* The id the last INSERT gave its row: SQLite's rowid, PostgreSQL's
 * lastval() (the last sequence value this connection took). */
int64_t db_last_insert_id(Db *db);
/* Whether a transaction is open. */
bool db_in_transaction(Db *db);

/* ---- statements ---- */

/* Prepares one statement; *out is NULL on failure. persistent: kept for
 * the connection's life (SQLITE_PREPARE_PERSISTENT; on PostgreSQL a
 * server-side prepared statement, else the text is sent with each run). */
int db_prepare(Db *db, const char *sql, DbStmt **out);
int db_prepare_persistent(Db *db, const char *sql, DbStmt **out);
/* Frees the statement. NULL: no-op. Returns DB_OK. */
int db_finalize(DbStmt *st);
/* Ready to run again with the same bindings. */
int db_reset(DbStmt *st);
/* Every parameter back to NULL. */
int db_clear_bindings(DbStmt *st);
/* The statement's SQL as given to db_prepare. */
const char *db_sql(DbStmt *st);

/* Parameters are numbered from 1. */
int db_bind_parameter_count(DbStmt *st);
/* The number of parameter `name` (with its ':'), 0 when none. */
int db_bind_parameter_index(DbStmt *st, const char *name);
int db_bind_null(DbStmt *st, int i);
int db_bind_int64(DbStmt *st, int i, int64_t v);
int db_bind_int(DbStmt *st, int i, int v);
int db_bind_double(DbStmt *st, int i, double v);
/* n < 0: up to the NUL. */
int db_bind_text(DbStmt *st, int i, const char *v, int n, DbDestructor d);

/* DB_ROW while there is a row, then DB_DONE, or an error code. */
int db_step(DbStmt *st);
/* Runs st, a statement whose rows and changes are not read (BEGIN, a
 * savepoint), at the latest together with the next statement, and resets
 * it: on PostgreSQL it is sent with the next db_step, db_exec or commit in
 * one round trip (libpq's pipeline mode) and its failure is that call's
 * failure; on SQLite it runs now. Its parameters are copied now. DB_DONE,
 * or an error code (SQLite's at once; PostgreSQL's only when out of room
 * or memory). */
int db_step_later(DbStmt *st);

/* Columns are numbered from 0. On PostgreSQL, known once stepped. */
int db_column_count(DbStmt *st);
const char *db_column_name(DbStmt *st, int col);
int db_column_type(DbStmt *st, int col);
int64_t db_column_int64(DbStmt *st, int col);
int db_column_int(DbStmt *st, int col);
double db_column_double(DbStmt *st, int col);
/* NULL for a NULL value; valid until the next step, reset or finalize. */
const char *db_column_text(DbStmt *st, int col);
/* The bytes of the text (without its NUL). */
int db_column_bytes(DbStmt *st, int col);

#endif
