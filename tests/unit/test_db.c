/* server/db.h: the store's SQL interface, each case on both databases: a
 * SQLite file, and a real PostgreSQL (tests/postgres/cluster.sh; the path
 * of its connection string in RUNG_TEST_PG, label `postgres`). Without
 * RUNG_TEST_PG the PostgreSQL cases fail: the test command always starts
 * one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "db.h"
#include "db_dialect.h"

#include <sqlite3.h>

static char conninfo[1024];
static char lite_path[] = "/tmp/rung-test-db-XXXXXX";

/* A fresh connection of kind k: a new SQLite file, or PostgreSQL with an
 * empty schema of its own (dropped and made again). */
static Db *open_fresh(DbKind k)
{
    Db *db = NULL;
    if (k == DB_SQLITE) {
        char path[64];
        snprintf(path, sizeof path, "%s/t.db", lite_path);
        unlink(path);
        assert_int_equal(db_open_sqlite(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &db),
                         DB_OK);
        return db;
    }
    assert_true(conninfo[0] != '\0'); /* RUNG_TEST_PG names the cluster's conninfo */
    int rc = db_open_postgres(conninfo, &db);
    if (rc != DB_OK)
        fail_msg("PostgreSQL: %s", db_errmsg(db));
    assert_int_equal(db_exec(db, "DROP SCHEMA IF EXISTS t CASCADE; CREATE SCHEMA t; "
                                 "SET search_path = t"),
                     DB_OK);
    return db;
}

static void exec_ok(Db *db, const char *sql)
{
    if (db_exec(db, sql) != DB_OK)
        fail_msg("%s: %s", sql, db_errmsg(db));
}

static DbStmt *prep(Db *db, const char *sql)
{
    DbStmt *st = NULL;
    if (db_prepare(db, sql, &st) != DB_OK)
        fail_msg("%s: %s", sql, db_errmsg(db));
    return st;
}

/* The value of a one-row, one-column query, as text (static buffer). */
static const char *scalar(Db *db, const char *sql)
{
    static char out[256];
    DbStmt *st = prep(db, sql);
    int rc = db_step(st);
    if (rc != DB_ROW)
        fail_msg("%s: %d %s", sql, rc, db_errmsg(db));
    const char *t = db_column_text(st, 0);
    snprintf(out, sizeof out, "%s", t ? t : "(null)");
    db_finalize(st);
    return out;
}

/* Numbers and text go in through every kind of placeholder and come back
 * as they went: int64's extremes, doubles to the last bit, NULL, quotes,
 * UTF-8; a '?' or ':x' inside a literal or a comment is not a parameter. */
static void round_trip(DbKind k)
{
    Db *db = open_fresh(k);
    exec_ok(db, "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, x DOUBLE PRECISION)");
    DbStmt *ins = prep(db, "INSERT INTO t (id, name, x) VALUES (?, ?, ?)");
    assert_int_equal(db_bind_parameter_count(ins), 3);
    const int64_t ids[] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    const double xs[] = {-1e308, 0.1, 1.0 / 3.0, 5e-324, 123456789.123456789};
    const char *names[] = {"plain", "it's \"quoted\"", "ünïcödé ✓", "a,b\nc", NULL};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(db_bind_int64(ins, 1, ids[i]), DB_OK);
        if (names[i])
            assert_int_equal(db_bind_text(ins, 2, names[i], -1, DB_TRANSIENT), DB_OK);
        else
            assert_int_equal(db_bind_null(ins, 2), DB_OK);
        assert_int_equal(db_bind_double(ins, 3, xs[i]), DB_OK);
        assert_int_equal(db_step(ins), DB_DONE);
        assert_int_equal(db_changes(db), 1);
        db_reset(ins);
        db_clear_bindings(ins);
    }
    db_finalize(ins);

    DbStmt *sel = prep(db, "SELECT id, name, x, '?1 :no -- ?' AS lit FROM t -- a ? comment\n"
                           "WHERE id >= ?1 AND id <= :hi ORDER BY id");
    assert_int_equal(db_bind_parameter_count(sel), 2);
    assert_int_equal(db_bind_parameter_index(sel, ":hi"), 2);
    assert_int_equal(db_bind_parameter_index(sel, ":no"), 0);
    assert_int_equal(db_bind_parameter_index(sel, "?1"), 1);
    assert_int_equal(db_bind_parameter_index(sel, "?3"), 0);
    db_bind_int64(sel, 1, INT64_MIN);
    db_bind_int64(sel, db_bind_parameter_index(sel, ":hi"), INT64_MAX);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(db_step(sel), DB_ROW);
        assert_int_equal(db_column_count(sel), 4);
        assert_int_equal(db_column_type(sel, 0), DB_INTEGER);
        assert_true(db_column_int64(sel, 0) == ids[i]);
        if (names[i]) {
            assert_int_equal(db_column_type(sel, 1), DB_TEXT);
            assert_string_equal(db_column_text(sel, 1), names[i]);
            assert_int_equal(db_column_bytes(sel, 1), (int)strlen(names[i]));
        } else {
            assert_int_equal(db_column_type(sel, 1), DB_NULL);
            assert_null(db_column_text(sel, 1));
        }
        assert_int_equal(db_column_type(sel, 2), DB_FLOAT);
        assert_true(db_column_double(sel, 2) == xs[i]); /* exact */
        assert_string_equal(db_column_text(sel, 3), "?1 :no -- ?");
    }
    assert_int_equal(db_step(sel), DB_DONE);
    /* Run again after a reset: the same rows. */
    db_reset(sel);
    assert_int_equal(db_step(sel), DB_ROW);
    assert_true(db_column_int64(sel, 0) == INT64_MIN);
    db_finalize(sel);
    db_close(db);
}

static void round_trip_sqlite(void **state)
{
    (void)state;
    round_trip(DB_SQLITE);
}

static void round_trip_postgres(void **state)
{
    (void)state;
    round_trip(DB_POSTGRES);
}

/* A request's writes inside a savepoint are rolled back alone, the
 * transaction's others kept: the store's promise for a failed request. A
 * broken constraint says DB_CONSTRAINT on both. */
static void savepoints(DbKind k)
{
    Db *db = open_fresh(k);
    exec_ok(db, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT NOT NULL)");
    assert_false(db_in_transaction(db));
    exec_ok(db, "BEGIN");
    assert_true(db_in_transaction(db));
    exec_ok(db, "INSERT INTO t VALUES (1, 'kept')");
    exec_ok(db, "SAVEPOINT req");
    exec_ok(db, "INSERT INTO t VALUES (2, 'undone')");
    DbStmt *dup = prep(db, "INSERT INTO t VALUES (?, ?)");
    db_bind_int64(dup, 1, 1);
    db_bind_text(dup, 2, "again", -1, DB_STATIC);
    int rc = db_step(dup);
    assert_int_equal(rc, DB_CONSTRAINT);
    assert_int_equal(db_errcode(db) & 0xff, DB_CONSTRAINT);
    assert_non_null(db_errmsg(db));
    db_finalize(dup);
    exec_ok(db, "ROLLBACK TO req");
    exec_ok(db, "RELEASE req");
    exec_ok(db, "INSERT INTO t VALUES (3, 'after')");
    exec_ok(db, "COMMIT");
    assert_false(db_in_transaction(db));
    assert_string_equal(scalar(db, "SELECT count(*) FROM t"), "2");
    assert_string_equal(scalar(db, "SELECT v FROM t WHERE id = 3"), "after");
    /* NOT NULL is a constraint too. */
    DbStmt *null = prep(db, "INSERT INTO t (id, v) VALUES (4, ?)");
    db_bind_null(null, 1);
    assert_int_equal(db_step(null), DB_CONSTRAINT);
    db_finalize(null);
    db_close(db);
}

static void savepoints_sqlite(void **state)
{
    (void)state;
    savepoints(DB_SQLITE);
}

static void savepoints_postgres(void **state)
{
    (void)state;
    savepoints(DB_POSTGRES);
}

/* db_step_later: statements that wait for the next one (on PostgreSQL in
 * its round trip) run before it, in order, with the values bound when they
 * were queued; a failure among them is the next call's failure, and nothing
 * after it runs (the COMMIT behind a failed lease renewal commits
 * nothing). */
static void later(DbKind k)
{
    Db *db = open_fresh(k);
    exec_ok(db, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT NOT NULL)");
    DbStmt *begin = NULL, *sp = NULL, *rel = NULL, *ins = NULL, *commit = NULL;
    assert_int_equal(db_prepare_persistent(db, "BEGIN", &begin), DB_OK);
    assert_int_equal(db_prepare_persistent(db, "SAVEPOINT req", &sp), DB_OK);
    assert_int_equal(db_prepare_persistent(db, "RELEASE req", &rel), DB_OK);
    assert_int_equal(db_prepare_persistent(db, "INSERT INTO t VALUES (?, ?)", &ins), DB_OK);
    assert_int_equal(db_prepare_persistent(db, "COMMIT", &commit), DB_OK);
    assert_int_equal(db_step_later(begin), DB_DONE);
    /* Values are taken when queued: binding again changes only the next. */
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(db_step_later(sp), DB_DONE);
        db_bind_int64(ins, 1, i);
        db_bind_text(ins, 2, i == 2 ? "two" : "other", -1, DB_TRANSIENT);
        assert_int_equal(db_step_later(ins), DB_DONE);
        db_clear_bindings(ins);
        assert_int_equal(db_step_later(rel), DB_DONE);
    }
    assert_true(db_in_transaction(db)); /* the queue went first */
    assert_string_equal(scalar(db, "SELECT v FROM t WHERE id = 2"), "two");
    assert_int_equal(db_step(commit), DB_DONE);
    db_reset(commit);
    assert_false(db_in_transaction(db));
    /* A broken constraint among the queued: the next statement says so
     * and does not run, nor does what was queued after the failure. */
    assert_int_equal(db_step_later(begin), DB_DONE);
    db_bind_int64(ins, 1, 1);
    db_bind_text(ins, 2, "again", -1, DB_STATIC);
    int rc = db_step_later(ins);
    db_clear_bindings(ins);
    if (k == DB_SQLITE) {
        assert_int_equal(rc, DB_CONSTRAINT); /* SQLite: at once */
    } else {
        assert_int_equal(rc, DB_DONE);
        db_bind_int64(ins, 1, 9);
        db_bind_text(ins, 2, "not run", -1, DB_STATIC);
        assert_int_equal(db_step_later(ins), DB_DONE);
        assert_int_equal(db_step(commit) & 0xff, DB_CONSTRAINT);
        db_reset(commit);
        assert_true(db_in_transaction(db)); /* failed, not committed */
        assert_true(strlen(db_errmsg(db)) > 0);
    }
    exec_ok(db, "ROLLBACK");
    assert_string_equal(scalar(db, "SELECT count(*) FROM t"), "3");
    assert_string_equal(scalar(db, "SELECT count(*) FROM t WHERE id = 9"), "0");
    /* A queued statement that is finalized is sent first: nothing is left
     * pointing at it. */
    assert_int_equal(db_step_later(begin), DB_DONE);
    db_finalize(begin);
    assert_true(db_in_transaction(db));
    db_finalize(sp);
    db_finalize(rel);
    db_finalize(ins);
    db_finalize(commit);
    db_close(db);
}

static void later_sqlite(void **state)
{
    (void)state;
    later(DB_SQLITE);
}

static void later_postgres(void **state)
{
    (void)state;
    later(DB_POSTGRES);
}

/* Numbered parameters the SQL skips (?1 and ?3, no ?2), and one that
 * stands only in `? IS NULL` with a CAST: PostgreSQL must be told their
 * types or it refuses the statement; both backends answer alike, bound or
 * NULL. */
static void skipped_numbers(DbKind k)
{
    Db *db = open_fresh(k);
    exec_ok(db, "CREATE TABLE t (id BIGINT, v TEXT)");
    exec_ok(db, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, NULL)");
    for (int persistent = 0; persistent < 2; persistent++) {
        DbStmt *st = NULL;
        const char *sql = "SELECT count(*) FROM t WHERE id >= ?1 AND (CAST(?3 AS TEXT) IS NULL "
                          "OR v = ?3)";
        int rc = persistent ? db_prepare_persistent(db, sql, &st) : db_prepare(db, sql, &st);
        if (rc != DB_OK)
            fail_msg("%s", db_errmsg(db));
        db_bind_int64(st, 1, 1);
        db_bind_text(st, 2, "never named", -1, DB_STATIC);
        if (db_step(st) != DB_ROW)
            fail_msg("%s", db_errmsg(db));
        assert_string_equal(db_column_text(st, 0), "3"); /* ?3 NULL: every row */
        db_reset(st);
        db_bind_text(st, 3, "b", -1, DB_STATIC);
        assert_int_equal(db_step(st), DB_ROW);
        assert_string_equal(db_column_text(st, 0), "1");
        db_finalize(st);
    }
    db_close(db);
}

static void skipped_numbers_sqlite(void **state)
{
    (void)state;
    skipped_numbers(DB_SQLITE);
}

static void skipped_numbers_postgres(void **state)
{
    (void)state;
    skipped_numbers(DB_POSTGRES);
}

/* A persistent statement runs many times with new bindings; changes and
 * the id the last insert took, in each dialect's table of a generated id. */
static void persistent(DbKind k)
{
    Db *db = open_fresh(k);
    exec_ok(db, k == DB_SQLITE ? "CREATE TABLE e (id INTEGER PRIMARY KEY, n BIGINT)"
                               : "CREATE TABLE e (id BIGSERIAL PRIMARY KEY, n BIGINT)");
    DbStmt *ins = NULL;
    assert_int_equal(db_prepare_persistent(db, "INSERT INTO e (n) VALUES (:n)", &ins), DB_OK);
    for (int i = 1; i <= 200; i++) {
        db_bind_int64(ins, db_bind_parameter_index(ins, ":n"), i * 10);
        assert_int_equal(db_step(ins), DB_DONE);
        db_reset(ins);
        assert_int_equal(db_last_insert_id(db), i);
    }
    db_finalize(ins);
    exec_ok(db, "UPDATE e SET n = n + 1 WHERE id > 150");
    assert_int_equal(db_changes(db), 50);
    assert_string_equal(scalar(db, "SELECT sum(n) FROM e"), "201050");
    /* A SELECT leaves the count of the last change as it was. */
    scalar(db, "SELECT count(*) FROM e");
    assert_int_equal(db_changes(db), 50);
    /* A parameter out of range, and SQL that does not parse. */
    DbStmt *st = prep(db, "SELECT n FROM e WHERE id = ?");
    assert_int_equal(db_bind_int64(st, 2, 1), DB_RANGE);
    db_finalize(st);
    st = NULL;
    int rc = db_prepare_persistent(db, "SELEC nonsense", &st);
    assert_int_not_equal(rc, DB_OK);
    assert_null(st);
    assert_true(strlen(db_errmsg(db)) > 0);
    db_close(db);
}

static void persistent_sqlite(void **state)
{
    (void)state;
    persistent(DB_SQLITE);
}

static void persistent_postgres(void **state)
{
    (void)state;
    persistent(DB_POSTGRES);
}

/* Text bound with a destructor is freed once, whether the statement ran;
 * text bound with an explicit length is cut there. */
static int freed;
static void count_free(void *p)
{
    freed++;
    free(p);
}

static void bound_text(DbKind k)
{
    Db *db = open_fresh(k);
    exec_ok(db, "CREATE TABLE t (v TEXT)");
    freed = 0;
    DbStmt *ins = prep(db, "INSERT INTO t VALUES (?)");
    db_bind_text(ins, 1, strdup("first"), -1, count_free);
    db_bind_text(ins, 1, strdup("second"), -1, count_free); /* the first is freed */
    assert_int_equal(db_step(ins), DB_DONE);
    db_reset(ins);
    db_bind_text(ins, 1, "cut here", 3, DB_STATIC);
    assert_int_equal(db_step(ins), DB_DONE);
    db_finalize(ins);
    assert_int_equal(freed, 2);
    assert_string_equal(scalar(db, "SELECT min(v) FROM t"), "cut");
    assert_string_equal(scalar(db, "SELECT max(v) FROM t"), "second");
    db_close(db);
}

static void bound_text_sqlite(void **state)
{
    (void)state;
    bound_text(DB_SQLITE);
}

static void bound_text_postgres(void **state)
{
    (void)state;
    bound_text(DB_POSTGRES);
}

/* The rows of sql (with up to two text parameters) as one text: cells
 * joined by '|', rows by ';'. NULL cells are "~". */
static char *rows_text(Db *db, const char *sql, const char *a, const char *b)
{
    DbStmt *st = prep(db, sql);
    if (a)
        db_bind_text(st, 1, a, -1, DB_STATIC);
    if (b)
        db_bind_text(st, 2, b, -1, DB_STATIC);
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        for (int c = 0; c < db_column_count(st); c++) {
            const char *t = db_column_text(st, c);
            len += (size_t)snprintf(out + len, cap - len, "%s%s", c ? "|" : "", t ? t : "~");
        }
        len += (size_t)snprintf(out + len, cap - len, ";");
        assert_true(len < cap);
    }
    if (rc != DB_DONE)
        fail_msg("%s: %s", sql, db_errmsg(db));
    db_finalize(st);
    return out;
}

/* db_pg_prelude's JSON functions answer as SQLite's own do, on the
 * documents and paths the store writes: values, types, validity, and
 * json_each's keys and values of an object and an array. */
static void json_functions_agree(void **state)
{
    (void)state;
    Db *lite = open_fresh(DB_SQLITE);
    Db *pg = open_fresh(DB_POSTGRES);
    exec_ok(pg, db_pg_prelude);
    const char *doc =
        "{\"a\":1,\"b\":2.5,\"c\":\"x y\",\"d\":null,\"e\":true,\"f\":[1,\"two\",3.5],"
        "\"g\":{\"h\":\"i\",\"n\":-7},\"k l\":3,\"q\\\"\":4,\"z\":false}";
    const char *paths[] = {"$.a",   "$.b",       "$.c",    "$.d",    "$.e",  "$.f", "$.g", "$.g.h",
                           "$.g.n", "$.\"k l\"", "$.f[1]", "$.f[2]", "$.zz", "$",   "$.z"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char *want = rows_text(lite, "SELECT json_extract(?1, ?2), json_type(?1, ?2)", doc,
                               paths[i]);
        char *got = rows_text(pg, "SELECT json_extract(?1, ?2), json_type(?1, ?2)", doc, paths[i]);
        if (strcmp(paths[i], "$") == 0 || strcmp(paths[i], "$.f") == 0 ||
            strcmp(paths[i], "$.g") == 0) {
            /* A container's JSON text: spaced differently, the same type. */
            assert_string_equal(strchr(want, '|'), strchr(got, '|'));
        } else {
            assert_string_equal(want, got);
        }
        free(want);
        free(got);
    }
    const char *texts[] = {"{}", "[1,2]", "\"s\"", "12", "{\"a\":", "not json", "[1,]"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char *want = rows_text(lite, "SELECT CASE WHEN json_valid(?1) THEN 'yes' ELSE 'no' END",
                               texts[i], NULL);
        char *got = rows_text(pg, "SELECT CASE WHEN json_valid(?1) THEN 'yes' ELSE 'no' END",
                              texts[i], NULL);
        assert_string_equal(want, got);
        free(want);
        free(got);
    }
    const char *each[] = {"{\"loss\":0.5,\"acc\":0.9,\"name\":\"r\",\"none\":null}",
                          "[\"x\",\"y\",3]", "[]"};
    for (size_t i = 0; i < sizeof each / sizeof each[0]; i++) {
        const char *sql = "SELECT key, value FROM json_each(?1) ORDER BY key";
        char *want = rows_text(lite, sql, each[i], NULL);
        char *got = rows_text(pg, sql, each[i], NULL);
        assert_string_equal(want, got);
        free(want);
        free(got);
    }
    /* Scalar max and min of two numbers (integers, reals). */
    const char *sql = "SELECT max(coalesce((SELECT 5 WHERE 1 = 0), 0), 3), min(7, 2), "
                      "max(2.5, 1.5), min(2.5, 1.5)";
    char *want = rows_text(lite, sql, NULL, NULL);
    char *got = rows_text(pg, sql, NULL, NULL);
    assert_string_equal(want, "3|2|2.5|1.5;");
    assert_string_equal(want, got);
    free(want);
    free(got);
    db_close(lite);
    db_close(pg);
}

/* Every migration of schema/ runs on PostgreSQL (db_pg_migration, or its
 * text in schema/pg/), and gives the tables and columns SQLite has. */
extern const char *const rung_migrations[];
extern const char *const rung_migrations_pg[];

static void migrations_on_both(void **state)
{
    (void)state;
    Db *lite = open_fresh(DB_SQLITE);
    Db *pg = open_fresh(DB_POSTGRES);
    exec_ok(pg, db_pg_prelude);
    int n = 0;
    for (; rung_migrations[n] != NULL; n++) {
        exec_ok(lite, rung_migrations[n]);
        char *sql = db_pg_migration(rung_migrations_pg[n] ? rung_migrations_pg[n]
                                                          : rung_migrations[n]);
        if (db_exec(pg, sql) != DB_OK)
            fail_msg("migration %d on PostgreSQL: %s", n + 1, db_errmsg(pg));
        free(sql);
    }
    assert_true(n >= 15);
    char *want =
        rows_text(lite,
                  "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p "
                  "WHERE m.type = 'table' ORDER BY m.name, p.name",
                  NULL, NULL);
    char *got = rows_text(
        pg,
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = 't' ORDER BY table_name COLLATE \"C\", column_name COLLATE \"C\"",
        NULL, NULL);
    assert_string_equal(want, got);
    free(want);
    free(got);
    db_close(lite);
    db_close(pg);
}

/* A server that is not there: an I/O error that says so, not a crash. */
static void postgres_unreachable(void **state)
{
    (void)state;
    Db *db = NULL;
    int rc = db_open_postgres("host=127.0.0.1 port=1 dbname=rung connect_timeout=2", &db);
    assert_int_equal(rc, DB_IOERR);
    assert_non_null(db);
    assert_non_null(strstr(db_errmsg(db), "cannot connect to PostgreSQL"));
    db_close(db);
}

int main(void)
{
    const char *pg = getenv("RUNG_TEST_PG");
    FILE *f = pg ? fopen(pg, "r") : NULL;
    if (f != NULL) {
        if (fgets(conninfo, sizeof conninfo, f) == NULL)
            conninfo[0] = '\0';
        conninfo[strcspn(conninfo, "\n")] = '\0';
        fclose(f);
    }
    if (mkdtemp(lite_path) == NULL)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_sqlite),      cmocka_unit_test(round_trip_postgres),
        cmocka_unit_test(savepoints_sqlite),      cmocka_unit_test(savepoints_postgres),
        cmocka_unit_test(later_sqlite),           cmocka_unit_test(later_postgres),
        cmocka_unit_test(skipped_numbers_sqlite), cmocka_unit_test(skipped_numbers_postgres),
        cmocka_unit_test(persistent_sqlite),      cmocka_unit_test(persistent_postgres),
        cmocka_unit_test(bound_text_sqlite),      cmocka_unit_test(bound_text_postgres),
        cmocka_unit_test(json_functions_agree),   cmocka_unit_test(migrations_on_both),
        cmocka_unit_test(postgres_unreachable),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/t.db", lite_path);
    unlink(path);
    rmdir(lite_path);
    return failed;
}
