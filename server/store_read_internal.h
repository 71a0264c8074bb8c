/* What the read side's files share (store_read.c, store_read_csv.c,
 * store_read_curves.c): statements prepared per call on the store's
 * connection, and their errors. */
#ifndef RUNG_SERVER_STORE_READ_INTERNAL_H
#define RUNG_SERVER_STORE_READ_INTERNAL_H

#include "db.h"
#include "store_read.h"

static inline int db_error(Store *s, RungError *err, const char *what)
{
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: %s: %s", what,
                          db_errmsg(store_db(s)));
}

static inline int prepare(Store *s, const char *sql, DbStmt **st, RungError *err)
{
    if (db_prepare(store_db(s), sql, st) != DB_OK)
        return db_error(s, err, sql);
    return 0;
}

static inline json_t *column_json(DbStmt *st, int col)
{
    const char *text = db_column_text(st, col);
    return text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
}

static inline int not_found(RungError *err, const char *what, int64_t id)
{
    return rung_error_set(err, RUNG_E_NOT_FOUND, "", "%s %lld not found", what, (long long)id);
}

/* The single integer of sql, with up to two parameters (arg, arg2). */
static inline int count(Store *s, const char *sql, int64_t arg, int arg2, int64_t *out,
                        RungError *err)
{
    DbStmt *st;
    if (prepare(s, sql, &st, err))
        return err->code;
    if (db_bind_parameter_count(st) >= 1)
        db_bind_int64(st, 1, arg);
    if (db_bind_parameter_count(st) >= 2)
        db_bind_int(st, 2, arg2);
    int rc = db_step(st);
    *out = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    db_finalize(st);
    return rc == DB_ROW ? 0 : db_error(s, err, "count");
}

#endif
