/* PostgreSQL's side of the store's SQL connection (db.h), over libpq.
 *
 * SQLite's placeholders (?, ?N, :name) become $N when a statement is
 * prepared; parameters go as text (PostgreSQL infers each one's type from
 * where it stands) and results come back as text, which db.c's column
 * calls read as SQLite would convert them. The first db_step after a bind
 * or a reset runs the statement and keeps its whole result; the next steps
 * walk its rows. A persistent statement is prepared on the server once
 * (named s1, s2, … on this connection); the others are sent whole with
 * each run (PQexecParams), which costs no extra round trip. A statement of
 * db_step_later (BEGIN, a savepoint, the leader's renewal) waits in
 * Db.later and goes with the next one in libpq's pipeline mode: the
 * store's report is then one round trip where it was three
 * (docs/architecture.md, "The store's two databases"). */
#include "db_internal.h"

#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int db_pg_fail(Db *db, int code, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(db->msg);
    db->msg = strdup(buf);
    db->code = code;
    db->extended = code;
    return code;
}

void db_pg_ok(Db *db)
{
    db->code = DB_OK;
    db->extended = DB_OK;
}

/* Type OIDs (PostgreSQL's catalog, pg_type.dat): they are fixed. */
enum {
    OID_BOOL = 16,
    OID_BYTEA = 17,
    OID_INT8 = 20,
    OID_INT2 = 21,
    OID_INT4 = 23,
    OID_OID = 26,
    OID_FLOAT4 = 700,
    OID_FLOAT8 = 701,
    OID_NUMERIC = 1700,
    OID_TEXT = 25,
};

/* Notices ("relation exists, skipping") are not errors: not printed. */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* SQLite's code for a failed command's SQLSTATE, so that the store reads
 * failures alike on both: a broken constraint, a retryable conflict, a
 * connection or disk that failed. */
static int code_of(Db *db, const PGresult *res)
{
    if (PQstatus(db->pg) != CONNECTION_OK)
        return DB_IOERR;
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state == NULL)
        return DB_ERROR;
    if (strncmp(state, "23", 2) == 0)
        return DB_CONSTRAINT;
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0)
        return DB_BUSY;
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 ||
        strncmp(state, "58", 2) == 0)
        return DB_IOERR;
    if (strcmp(state, "53100") == 0)
        return DB_FULL;
    if (strcmp(state, "53200") == 0)
        return DB_NOMEM;
    return DB_ERROR;
}

/* Records res's failure on db (or none), and frees res unless keep. */
static int check(Db *db, PGresult *res, bool keep)
{
    ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        /* As sqlite3_changes: the rows of the last INSERT, UPDATE or
         * DELETE (PQcmdTuples also counts a SELECT's). */
        const char *cmd = PQcmdStatus(res), *n = PQcmdTuples(res);
        if (n != NULL && n[0] != '\0' &&
            (strncmp(cmd, "INSERT", 6) == 0 || strncmp(cmd, "UPDATE", 6) == 0 ||
             strncmp(cmd, "DELETE", 6) == 0))
            db->changes = strtoll(n, NULL, 10);
        db_pg_ok(db);
        if (!keep)
            PQclear(res);
        return DB_OK;
    }
    /* The server's own message without libpq's "ERROR:  " and CONTEXT
     * lines (a PL/pgSQL function's RAISE: the function and line), as
     * SQLite's are; libpq's when the server said nothing. */
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *msg = primary ? primary : res ? PQresultErrorMessage(res) : PQerrorMessage(db->pg);
    size_t len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
        len--; /* libpq ends its messages with a newline */
    int code = code_of(db, res);
    db_pg_fail(db, code, "%.*s", (int)len, msg);
    PQclear(res);
    return code;
}

static void drop_later(Db *db);

int db_pg_open(Db *db, const char *conninfo)
{
    db->pg = PQconnectdb(conninfo);
    if (db->pg == NULL)
        return db_pg_fail(db, DB_NOMEM, "out of memory");
    if (PQstatus(db->pg) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(db->pg);
        size_t len = strlen(msg);
        while (len > 0 && msg[len - 1] == '\n')
            len--;
        return db_pg_fail(db, DB_IOERR, "cannot connect to PostgreSQL: %.*s", (int)len, msg);
    }
    PQsetNoticeProcessor(db->pg, quiet, NULL);
    /* Text in and out is UTF-8, as SQLite's; times and numbers are ours. */
    return db_pg_exec(db, "SET client_encoding = 'UTF8'");
}

void db_pg_close(Db *db)
{
    drop_later(db); /* never sent: the connection's end rolls back its transaction */
    free(db->later);
    if (db->pg != NULL)
        PQfinish(db->pg);
}

/* ---- statements sent later (db_step_later) ---- */

/* A statement of db_step_later, with its parameters' values as they were
 * then (copies; NULL: SQL NULL). */
struct DbLater {
    DbStmt *st;
    char **values;
    int n; /* values */
};

static void drop_later(Db *db)
{
    for (int i = 0; i < db->n_later; i++) {
        for (int k = 0; k < db->later[i].n; k++)
            free(db->later[i].values[k]);
        free(db->later[i].values);
    }
    db->n_later = 0;
}

int db_pg_step_later(DbStmt *st)
{
    Db *db = st->db;
    if (db->n_later == db->cap_later) {
        int cap = db->cap_later ? 2 * db->cap_later : 8;
        struct DbLater *grown = realloc(db->later, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return db_pg_fail(db, DB_NOMEM, "out of memory");
        db->later = grown;
        db->cap_later = cap;
    }
    char **values = calloc(st->n_params ? (size_t)st->n_params : 1, sizeof *values);
    if (values == NULL)
        return db_pg_fail(db, DB_NOMEM, "out of memory");
    for (int k = 0; k < st->n_params; k++) {
        if (st->params[k].text != NULL && (values[k] = strdup(st->params[k].text)) == NULL) {
            while (k-- > 0)
                free(values[k]);
            free(values);
            return db_pg_fail(db, DB_NOMEM, "out of memory");
        }
    }
    db->later[db->n_later++] = (struct DbLater){st, values, st->n_params};
    db_pg_reset(st);
    return DB_DONE;
}

static bool send_stmt(Db *db, DbStmt *st, const char *const *values)
{
    return st->name[0] ? PQsendQueryPrepared(db->pg, st->name, st->n_params, values, NULL, NULL, 0)
                       : PQsendQueryParams(db->pg, st->pg_sql, st->n_params, st->types, values,
                                           NULL, NULL, 0);
}

/* Sends the statements of db_step_later and then cur with values (NULL:
 * none) in one pipeline, one round trip, and reads their results in turn:
 * DB_OK with *out cur's result (NULL without cur), or the first failure's
 * code and message on db; PostgreSQL runs nothing of the pipeline after a
 * failure (each later result is PGRES_PIPELINE_ABORTED). The statements
 * that waited are dropped either way. */
static int pipeline(Db *db, DbStmt *cur, const char *const *values, PGresult **out)
{
    *out = NULL;
    int rc = DB_OK;
    int sent = 0;
    if (PQenterPipelineMode(db->pg) != 1) {
        drop_later(db);
        return check(db, NULL, false);
    }
    for (int i = 0; i < db->n_later && rc == DB_OK; i++, sent++) {
        if (!send_stmt(db, db->later[i].st, (const char *const *)db->later[i].values))
            rc = check(db, NULL, false);
    }
    int cur_at = -1; /* cur's place among the results */
    if (rc == DB_OK && cur != NULL) {
        if (send_stmt(db, cur, values))
            cur_at = sent++;
        else
            rc = check(db, NULL, false);
    }
    if (PQpipelineSync(db->pg) != 1 && rc == DB_OK)
        rc = check(db, NULL, false);
    /* Each command's results end with a NULL; the pipeline's with its
     * sync. Two NULLs in a row: nothing more is coming (a connection that
     * broke). */
    int seen = 0;
    bool was_null = false;
    for (;;) {
        PGresult *res = PQgetResult(db->pg);
        if (res == NULL) {
            if (was_null)
                break;
            was_null = true;
            continue;
        }
        was_null = false;
        if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            break;
        }
        int at = seen++;
        if (rc != DB_OK) {
            PQclear(res);
        } else if ((rc = check(db, res, at == cur_at)) == DB_OK && at == cur_at) {
            *out = res;
        }
    }
    if (rc == DB_OK && seen < sent)
        rc = check(db, NULL, false); /* results that never came */
    if (PQexitPipelineMode(db->pg) != 1 && rc == DB_OK)
        rc = db_pg_fail(db, DB_IOERR, "PostgreSQL's pipeline did not end: %s",
                        PQerrorMessage(db->pg));
    if (rc != DB_OK && *out != NULL) {
        PQclear(*out);
        *out = NULL;
    }
    drop_later(db);
    return rc;
}

/* The statements of db_step_later, now: before any call that talks to the
 * server on its own. */
static int flush_later(Db *db)
{
    PGresult *none;
    return db->n_later > 0 ? pipeline(db, NULL, NULL, &none) : DB_OK;
}

int db_pg_exec(Db *db, const char *sql)
{
    int rc = flush_later(db);
    return rc != DB_OK ? rc : check(db, PQexec(db->pg, sql), false);
}

int64_t db_pg_last_insert_id(Db *db)
{
    if (flush_later(db) != DB_OK)
        return 0;
    PGresult *res = PQexec(db->pg, "SELECT lastval()");
    if (check(db, res, true) != DB_OK)
        return 0;
    int64_t id = PQntuples(res) == 1 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
    PQclear(res);
    return id;
}

bool db_pg_in_transaction(Db *db)
{
    flush_later(db); /* a failure leaves the transaction failed: still open */
    PGTransactionStatusType t = PQtransactionStatus(db->pg);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

/* ---- placeholders ---- */

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The number of the named parameter name[0..n), numbered on its first
 * use as SQLite numbers it (one more than the largest so far). */
static int named(DbStmt *st, const char *name, size_t n)
{
    for (int i = 0; i < st->n_params; i++)
        if (st->param_names[i] && strlen(st->param_names[i]) == n &&
            memcmp(st->param_names[i], name, n) == 0)
            return i + 1;
    int k = ++st->n_params;
    st->param_names = realloc(st->param_names, (size_t)k * sizeof *st->param_names);
    if (st->param_names == NULL)
        abort();
    st->param_names[k - 1] = strndup(name, n);
    return k;
}

/* Numbers up to k exist (unnamed ones between get no name). */
static void at_least(DbStmt *st, int k)
{
    if (k <= st->n_params)
        return;
    st->param_names = realloc(st->param_names, (size_t)k * sizeof *st->param_names);
    if (st->param_names == NULL)
        abort();
    for (int i = st->n_params; i < k; i++)
        st->param_names[i] = NULL;
    st->n_params = k;
}

/* Parameter k appears in the SQL: its type is PostgreSQL's to infer
 * (DbStmt.types); the numbers below it never seen so far are text. */
static void mark_named(DbStmt *st, int k)
{
    unsigned int *t = realloc(st->types, (size_t)st->n_params * sizeof *t);
    if (t == NULL)
        abort();
    for (int i = st->n_typed; i < st->n_params; i++)
        t[i] = OID_TEXT;
    st->n_typed = st->n_params;
    t[k - 1] = 0;
    st->types = t;
}

/* sql with ?, ?N and :name as $N, outside quotes and comments; sets the
 * statement's parameters. Returns false for a number out of range. */
static bool translate(DbStmt *st, const char *sql)
{
    /* The text is written to a memory stream (open_memstream). */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (f == NULL)
        abort();
    const char *p = sql;
    while (*p) {
        const char *q = p;
        if (*p == '\'' || *p == '"') {
            char end = *p;
            q++;
            while (*q && !(*q == end && q[1] != end))
                q += *q == end ? 2 : 1;
            if (*q)
                q++;
        } else if (p[0] == '-' && p[1] == '-') {
            q = p + strcspn(p, "\n");
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            q = e ? e + 2 : p + strlen(p);
        } else if (p[0] == ':' && p[1] == ':') {
            q = p + 2; /* a cast */
        } else if (*p == '?' || (*p == ':' && is_name_char(p[1]))) {
            int k;
            if (*p == '?') {
                q = p + 1;
                long v = 0;
                while (*q >= '0' && *q <= '9' && v < 100000)
                    v = v * 10 + (*q++ - '0');
                if (q > p + 1 && (v < 1 || v > 32766)) {
                    fclose(f);
                    free(out);
                    return false;
                }
                k = q > p + 1 ? (int)v : st->n_params + 1;
                at_least(st, k);
            } else {
                q = p + 1;
                while (is_name_char(*q))
                    q++;
                k = named(st, p, (size_t)(q - p));
            }
            mark_named(st, k);
            char t[16];
            int n = snprintf(t, sizeof t, "$%d", k);
            fwrite(t, 1, (size_t)n, f);
            p = q;
            continue;
        } else {
            q = p + 1;
        }
        fwrite(p, 1, (size_t)(q - p), f);
        p = q;
    }
    if (fclose(f) != 0)
        abort();
    st->pg_sql = out;
    return true;
}

int db_pg_prepare(Db *db, const char *sql, bool persistent, DbStmt *st)
{
    st->sql = strdup(sql);
    if (st->sql == NULL)
        return db_pg_fail(db, DB_NOMEM, "out of memory");
    if (!translate(st, sql))
        return db_pg_fail(db, DB_RANGE, "parameter number out of range in: %s", sql);
    st->params = calloc(st->n_params ? (size_t)st->n_params : 1, sizeof *st->params);
    if (st->params == NULL)
        return db_pg_fail(db, DB_NOMEM, "out of memory");
    if (persistent) {
        int rc = flush_later(db);
        if (rc != DB_OK)
            return rc;
        snprintf(st->name, sizeof st->name, "s%lu", ++db->named);
        PGresult *res = PQprepare(db->pg, st->name, st->pg_sql, st->n_params, st->types);
        rc = check(db, res, false);
        if (rc != DB_OK) {
            st->name[0] = '\0'; /* nothing to deallocate */
            return rc;
        }
    }
    db_pg_ok(db);
    return DB_OK;
}

/* ---- parameters, runs and rows ---- */

static void release(DbParam *p)
{
    if (p->free_fn != DB_STATIC && p->free_fn != DB_TRANSIENT)
        p->free_fn((void *)p->text);
    else if (p->free_fn == DB_TRANSIENT && p->text != p->own)
        free((void *)p->text);
    p->text = NULL;
    p->free_fn = DB_STATIC;
}

int db_pg_bind(DbStmt *st, int i, const char *text, int n, DbDestructor d)
{
    if (i < 1 || i > st->n_params) {
        if (d != DB_STATIC && d != DB_TRANSIENT && text != NULL)
            d((void *)text);
        return db_pg_fail(st->db, DB_RANGE, "column index out of range");
    }
    DbParam *p = &st->params[i - 1];
    release(p);
    if (text == NULL)
        return DB_OK;
    /* libpq reads a text parameter up to its NUL: a length shorter than
     * the string, or an unterminated one, is copied. */
    size_t len = n < 0 ? strlen(text) : (size_t)n;
    if (d == DB_TRANSIENT || n >= 0) {
        char *copy = len < sizeof p->own ? p->own : malloc(len + 1);
        if (copy == NULL)
            abort();
        memcpy(copy, text, len);
        copy[len] = '\0';
        if (d != DB_STATIC && d != DB_TRANSIENT)
            d((void *)text);
        p->text = copy;
        p->free_fn = DB_TRANSIENT;
    } else {
        p->text = text;
        p->free_fn = d;
    }
    return DB_OK;
}

void db_pg_reset(DbStmt *st)
{
    PQclear(st->res);
    st->res = NULL;
    st->row = st->rows = 0;
    st->ran = false;
}

void db_pg_finalize(DbStmt *st)
{
    flush_later(st->db); /* st may be among them */
    db_pg_reset(st);
    for (int i = 0; i < st->n_params; i++) {
        release(&st->params[i]);
        free(st->param_names[i]);
    }
    free(st->params);
    free(st->param_names);
    free(st->types);
    if (st->name[0] != '\0' && PQstatus(st->db->pg) == CONNECTION_OK) {
        char sql[48];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
        PQclear(PQexec(st->db->pg, sql));
    }
    free(st->sql);
    free(st->pg_sql);
}

int db_pg_step(DbStmt *st)
{
    Db *db = st->db;
    if (!st->ran) {
        const char *stack[16];
        const char **values = st->n_params <= 16 ? stack
                                                 : malloc((size_t)st->n_params * sizeof *values);
        if (values == NULL)
            abort();
        for (int i = 0; i < st->n_params; i++)
            values[i] = st->params[i].text;
        PGresult *res = NULL;
        int rc;
        if (db->n_later > 0) {
            rc = pipeline(db, st, values, &res); /* with the statements that waited */
        } else {
            res = st->name[0]
                      ? PQexecPrepared(db->pg, st->name, st->n_params, values, NULL, NULL, 0)
                      : PQexecParams(db->pg, st->pg_sql, st->n_params, st->types, values, NULL,
                                     NULL, 0);
            rc = check(db, res, true);
        }
        if (values != stack)
            free(values);
        st->ran = true;
        if (rc != DB_OK)
            return rc;
        st->res = res;
        st->rows = PQresultStatus(res) == PGRES_TUPLES_OK ? PQntuples(res) : 0;
        st->row = 0;
    }
    if (st->row < st->rows) {
        st->row++;
        return DB_ROW;
    }
    return DB_DONE;
}

int db_pg_column_count(DbStmt *st)
{
    return st->res ? PQnfields(st->res) : 0;
}

const char *db_pg_column_name(DbStmt *st, int col)
{
    return st->res && col >= 0 && col < PQnfields(st->res) ? PQfname(st->res, col) : NULL;
}

/* The row the last step reached, or -1. */
static int current(DbStmt *st, int col)
{
    if (st->res == NULL || st->row < 1 || st->row > st->rows || col < 0 ||
        col >= PQnfields(st->res))
        return -1;
    return st->row - 1;
}

int db_pg_column_type(DbStmt *st, int col)
{
    int r = current(st, col);
    if (r < 0 || PQgetisnull(st->res, r, col))
        return DB_NULL;
    switch (PQftype(st->res, col)) {
    case OID_BOOL:
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
    case OID_OID:
        return DB_INTEGER;
    case OID_FLOAT4:
    case OID_FLOAT8:
        return DB_FLOAT;
    case OID_NUMERIC: /* sum() of integers is a numeric: an integer when whole */
        return strpbrk(PQgetvalue(st->res, r, col), ".eEN") ? DB_FLOAT : DB_INTEGER;
    case OID_BYTEA:
        return DB_BLOB;
    default:
        return DB_TEXT;
    }
}

const char *db_pg_column_text(DbStmt *st, int col)
{
    int r = current(st, col);
    if (r < 0 || PQgetisnull(st->res, r, col))
        return NULL;
    return PQgetvalue(st->res, r, col);
}
