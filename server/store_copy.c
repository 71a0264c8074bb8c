/* Copying a store into another (store.h, store_copy; `rungd migrate`,
 * docs/operations.md "PostgreSQL"): every table, row by row, in one
 * transaction of the destination, then checked by counts and a sample of
 * rows looked up column by column. Both stores are open at the newest
 * schema (store_open migrated them), so their tables are the same. */
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLES 64
#define MAX_COLUMNS 64
#define NAME_MAX_LEN 64
/* Rows looked up again in the destination, per table, at most. */
#define SAMPLE 64

/* Tables in an order that keeps SQLite's foreign keys satisfied as rows
 * arrive (experiments and workers before trials, trials before their
 * reports, users before tokens); others after them. The stores' own
 * bookkeeping (rung_schema, rung_leader) is not copied. */
static const char *const first[] = {"experiments", "workers", "trials", "reports",
                                    "checkpoints", "users",   "tokens", NULL};

static int tables_of(Store *s, char names[MAX_TABLES][NAME_MAX_LEN], int *n, RungError *err)
{
    DbStmt *st;
    const char *sql =
        db_kind(s->db) == DB_SQLITE
            ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
              "ORDER BY name"
            : "SELECT table_name FROM information_schema.tables WHERE table_schema = "
              "current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name";
    if (store_prepare(s, sql, &st, err, "tables"))
        return err->code;
    *n = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        const char *t = db_column_text(st, 0);
        if (strcmp(t, "rung_schema") == 0 || strcmp(t, "rung_leader") == 0)
            continue;
        if (*n == MAX_TABLES || strlen(t) >= NAME_MAX_LEN) {
            db_finalize(st);
            return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: too many tables to copy");
        }
        snprintf(names[(*n)++], NAME_MAX_LEN, "%s", t);
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(s, err, "tables");
}

static int64_t count_rows(Store *s, const char *table, RungError *err)
{
    char sql[NAME_MAX_LEN + 64];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    DbStmt *st;
    if (store_prepare(s, sql, &st, err, "count"))
        return -1;
    int64_t n = db_step(st) == DB_ROW ? db_column_int64(st, 0) : -1;
    db_finalize(st);
    if (n < 0)
        store_db_error(s, err, "count");
    return n;
}

/* Binds column c of the row src stands on to parameter i of dst. */
static void bind_as(DbStmt *dst, int i, DbStmt *src, int c)
{
    switch (db_column_type(src, c)) {
    case DB_NULL:
        db_bind_null(dst, i);
        break;
    case DB_INTEGER:
        db_bind_int64(dst, i, db_column_int64(src, c));
        break;
    case DB_FLOAT:
        db_bind_double(dst, i, db_column_double(src, c));
        break;
    default:
        db_bind_text(dst, i, db_column_text(src, c), db_column_bytes(src, c), DB_TRANSIENT);
        break;
    }
}

/* One table: every row of from inserted into to; *rows gets how many, and
 * up to SAMPLE of them are looked up in to afterwards (checked). */
static int copy_table(Store *from, Store *to, const char *table, int64_t *rows, RungError *err)
{
    char sql[NAME_MAX_LEN + 32];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", table);
    DbStmt *src;
    if (store_prepare(from, sql, &src, err, table))
        return err->code;
    int64_t total = count_rows(from, table, err);
    if (total < 0) {
        db_finalize(src);
        return err->code;
    }
    int64_t every = total / SAMPLE + 1;
    DbStmt *ins = NULL, *look = NULL;
    int cols = 0, rc;
    char names[MAX_COLUMNS][NAME_MAX_LEN];
    *rows = 0;
    while ((rc = db_step(src)) == DB_ROW) {
        if (ins == NULL) {
            /* The columns, known from the first row on (PostgreSQL). */
            cols = db_column_count(src);
            if (cols < 1 || cols > MAX_COLUMNS) {
                db_finalize(src);
                return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: table %s has %d columns",
                                      table, cols);
            }
            char text[MAX_COLUMNS * (NAME_MAX_LEN + 8) + 128];
            size_t k = (size_t)snprintf(text, sizeof text, "INSERT INTO %s (", table);
            for (int c = 0; c < cols; c++) {
                snprintf(names[c], NAME_MAX_LEN, "%s", db_column_name(src, c));
                k += (size_t)snprintf(text + k, sizeof text - k, "%s%s", c ? ", " : "", names[c]);
            }
            k += (size_t)snprintf(text + k, sizeof text - k, ") VALUES (");
            for (int c = 0; c < cols; c++)
                k += (size_t)snprintf(text + k, sizeof text - k, "%s?%d", c ? ", " : "", c + 1);
            snprintf(text + k, sizeof text - k, ")");
            if (store_prepare(to, text, &ins, err, table)) {
                db_finalize(src);
                return err->code;
            }
        }
        for (int c = 0; c < cols; c++)
            bind_as(ins, c + 1, src, c);
        int irc = db_step(ins);
        db_reset(ins);
        db_clear_bindings(ins);
        if (irc != DB_DONE) {
            store_db_error(to, err, table);
            db_finalize(ins);
            db_finalize(src);
            return err->code;
        }
        (*rows)++;
    }
    db_finalize(ins);
    db_finalize(src);
    if (rc != DB_DONE)
        return store_db_error(from, err, table);
    /* The sample: every `every`-th row of a second scan, found in `to` by
     * each of its columns (= for a value, IS NULL for none). */
    if (store_prepare(from, sql, &src, err, table))
        return err->code;
    int64_t row = 0;
    while (rc == DB_DONE && db_step(src) == DB_ROW) {
        if (row++ % every != 0)
            continue;
        char text[MAX_COLUMNS * (NAME_MAX_LEN + 24) + 128];
        size_t k = (size_t)snprintf(text, sizeof text, "SELECT count(*) FROM %s WHERE ", table);
        for (int c = 0; c < cols; c++)
            k += (size_t)snprintf(text + k, sizeof text - k, "%s%s %s", c ? " AND " : "", names[c],
                                  db_column_type(src, c) == DB_NULL ? "IS NULL" : "= ?");
        if (store_prepare(to, text, &look, err, table)) {
            db_finalize(src);
            return err->code;
        }
        for (int c = 0, i = 1; c < cols; c++)
            if (db_column_type(src, c) != DB_NULL)
                bind_as(look, i++, src, c);
        bool found = db_step(look) == DB_ROW && db_column_int64(look, 0) >= 1;
        db_finalize(look);
        if (!found) {
            db_finalize(src);
            return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                                  "store: row %lld of table %s is not the same in the copy",
                                  (long long)row, table);
        }
    }
    db_finalize(src);
    return 0;
}

/* PostgreSQL: each id sequence (a BIGSERIAL: db_dialect.h) goes on from
 * the highest id copied, as SQLite's rowid does. */
static int sequences_follow(Store *to, const char *table, RungError *err)
{
    char sql[3 * NAME_MAX_LEN + 160];
    snprintf(sql, sizeof sql,
             "SELECT setval(pg_get_serial_sequence('%s', 'id'), coalesce(max(id), 0) + 1, false) "
             "FROM %s WHERE pg_get_serial_sequence('%s', 'id') IS NOT NULL",
             table, table, table);
    DbStmt *st;
    if (store_prepare(to, sql, &st, err, "sequence"))
        return err->code;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
    }
    db_finalize(st);
    return rc == DB_DONE ? 0 : store_db_error(to, err, "sequence");
}

/* PostgreSQL: whether table has a column named id (asked of the catalog:
 * a failed statement would end the copy's transaction). */
static bool has_id(Store *s, const char *table)
{
    DbStmt *st;
    if (db_prepare(s->db,
                   "SELECT 1 FROM information_schema.columns WHERE table_schema = "
                   "current_schema() AND table_name = ? AND column_name = 'id'",
                   &st) != DB_OK)
        return false;
    db_bind_text(st, 1, table, -1, DB_STATIC);
    bool ok = db_step(st) == DB_ROW;
    db_finalize(st);
    return ok;
}

int store_copy(Store *from, Store *to, FILE *log, RungError *err)
{
    char a[MAX_TABLES][NAME_MAX_LEN], b[MAX_TABLES][NAME_MAX_LEN];
    int na, nb;
    if (tables_of(from, a, &na, err) || tables_of(to, b, &nb, err))
        return err->code;
    bool same = na == nb;
    for (int i = 0; same && i < na; i++)
        same = strcmp(a[i], b[i]) == 0;
    if (!same)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "store: the two stores have different tables (schema versions?)");
    for (int i = 0; i < nb; i++) {
        int64_t n = count_rows(to, b[i], err);
        if (n < 0)
            return err->code;
        if (n > 0)
            return rung_error_set(err, RUNG_E_CONFLICT, "to",
                                  "the destination is not empty (table %s has %lld rows): copy "
                                  "into a new database",
                                  b[i], (long long)n);
    }
    /* The known tables in their order, then the rest. */
    const char *order[MAX_TABLES];
    int n = 0;
    for (int k = 0; first[k] != NULL; k++)
        for (int i = 0; i < na; i++)
            if (strcmp(a[i], first[k]) == 0)
                order[n++] = a[i];
    for (int i = 0; i < na; i++) {
        bool listed = false;
        for (int k = 0; first[k] != NULL; k++)
            listed |= strcmp(a[i], first[k]) == 0;
        if (!listed)
            order[n++] = a[i];
    }
    if (store_begin(to, err))
        return err->code;
    int64_t all = 0;
    for (int i = 0; i < n; i++) {
        int64_t rows = 0;
        if (copy_table(from, to, order[i], &rows, err) ||
            (db_kind(store_db(to)) == DB_POSTGRES && has_id(to, order[i]) &&
             sequences_follow(to, order[i], err))) {
            store_rollback(to);
            return err->code;
        }
        int64_t there = count_rows(to, order[i], err);
        if (there != rows) {
            store_rollback(to);
            return there < 0 ? err->code
                             : rung_error_set(err, RUNG_E_INTERNAL, NULL,
                                              "store: table %s: %lld rows read, %lld in the copy",
                                              order[i], (long long)rows, (long long)there);
        }
        fprintf(log, "rungd migrate: %s: %lld rows copied, counted and sampled\n", order[i],
                (long long)rows);
        all += rows;
    }
    if (store_commit(to, err)) {
        store_rollback(to);
        return err->code;
    }
    fprintf(log, "rungd migrate: %d tables, %lld rows\n", n, (long long)all);
    return 0;
}
