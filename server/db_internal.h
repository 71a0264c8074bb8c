/* What db.c (the calls, and SQLite's side) and db_pg.c (PostgreSQL's side)
 * share; see db.h. */
#ifndef RUNG_SERVER_DB_INTERNAL_H
#define RUNG_SERVER_DB_INTERNAL_H

#include "db.h"

#include <sqlite3.h>

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

struct Db {
    DbKind kind;
    sqlite3 *lite;
    /* PostgreSQL */
    PGconn *pg;
    int code, extended;  /* the last failure's codes (DB_OK after a success) */
    char *msg;           /* its message (malloc'ed), or NULL */
    int64_t changes;     /* rows the last command changed */
    unsigned long named; /* persistent statements prepared: their names */
    /* Statements of db_step_later waiting for the next one (db_pg.c). */
    struct DbLater *later;
    int n_later, cap_later;
};

/* A parameter's value on PostgreSQL: text, or NULL. */
typedef struct DbParam {
    const char *text; /* NULL: SQL NULL */
    DbDestructor free_fn;
    char own[32]; /* a number's text */
} DbParam;

struct DbStmt {
    Db *db;
    sqlite3_stmt *lite;
    /* PostgreSQL */
    char *sql;     /* as given */
    char *pg_sql;  /* placeholders as $1…$N */
    char name[24]; /* a persistent statement's server-side name, or "" */
    int n_params;
    char **param_names; /* [n_params]: ":name" of each, or NULL */
    DbParam *params;    /* [n_params] */
    /* [n_params]: 0 (PostgreSQL infers the type from where it stands), or
     * text's OID for a number the SQL never names (SQLite's ?4 with no ?2:
     * PostgreSQL cannot type $2 otherwise, and refuses the statement). */
    unsigned int *types;
    int n_typed;   /* entries of types set so far */
    PGresult *res; /* the run's result while stepping */
    int row, rows; /* the next row to step to; rows in res */
    bool ran;
};

/* db_pg.c */
int db_pg_open(Db *db, const char *conninfo);
void db_pg_close(Db *db);
int db_pg_exec(Db *db, const char *sql);
int64_t db_pg_last_insert_id(Db *db);
bool db_pg_in_transaction(Db *db);
int db_pg_prepare(Db *db, const char *sql, bool persistent, DbStmt *st);
void db_pg_finalize(DbStmt *st);
void db_pg_reset(DbStmt *st);
int db_pg_bind(DbStmt *st, int i, const char *text, int n, DbDestructor d);
int db_pg_step(DbStmt *st);
int db_pg_step_later(DbStmt *st);
int db_pg_column_count(DbStmt *st);
const char *db_pg_column_name(DbStmt *st, int col);
int db_pg_column_type(DbStmt *st, int col);
const char *db_pg_column_text(DbStmt *st, int col);

/* Records a failure on db (message copied) and returns code; db_pg_ok:
 * the last call succeeded. */
int db_pg_fail(Db *db, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void db_pg_ok(Db *db);

#endif
