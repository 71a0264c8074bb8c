/* SQLite's SQL on PostgreSQL: what the store needs to run the same schema
 * and queries on both databases (docs/architecture.md, "The store's two
 * databases"). Pure: no connection. */
#ifndef RUNG_SERVER_DB_DIALECT_H
#define RUNG_SERVER_DB_DIALECT_H

/* SQL run on a PostgreSQL database before its migrations: functions named
 * and behaving as SQLite's JSON functions (json_valid, json_type,
 * json_extract, json_each) and its scalar max and min, which the schema's
 * CHECKs and the store's queries call. */
extern const char db_pg_prelude[];

/* A migration (schema/NNN_*.sql, written for SQLite) in PostgreSQL's
 * dialect: INTEGER is BIGINT (times are milliseconds), INTEGER PRIMARY KEY
 * a BIGSERIAL (a rowid that an insert without it numbers), REAL DOUBLE
 * PRECISION, no WITHOUT ROWID, no REFERENCES (a foreign key), DROP TABLE …
 * CASCADE, and json_valid rung_json_ok (db_pg_prelude: the CHECKs' cheaper
 * kind). Quoted text and
 * comments are kept as they are. Returns malloc'ed text. */
char *db_pg_migration(const char *sql);

#endif
