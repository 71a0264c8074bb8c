/* What the store's files share (store.c, store_file.c, store_load.c; not
 * for the rest of the daemon, which uses store.h): the prepared statements,
 * the Store itself, and the helpers that run SQL and turn SQLite's errors
 * into RungError. */
#ifndef RUNG_SERVER_STORE_INTERNAL_H
#define RUNG_SERVER_STORE_INTERNAL_H

#include "db.h"
#include "store.h"

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    ST_EXP_INSERT,
    ST_EXP_UPDATE,
    ST_TRIAL_INSERT,
    ST_TRIAL_UPDATE,
    ST_REPORT_INSERT,
    ST_WORKER_INSERT,
    ST_WORKER_UPDATE,
    ST_REPORTS_OF,
    ST__COUNT
};

struct Store {
    Db *db;
    DbStmt *st[ST__COUNT];
    int lock_fd; /* the database file, flock'ed: one rungd per database */
    /* The guard (store_fault): which file the path named at the open, and
     * the database file's size and time after rungd's own last write. */
    char path[PATH_MAX];
    struct stat opened, wal;
    bool wal_known;
    off_t size;
    struct timespec mtime;
    char fault[RUNG_MESSAGE_MAX]; /* why the store stopped; "" while it works */
    bool serving;                 /* a transaction began: faults stop the daemon */
    bool rescued;                 /* store_rescue() ran */
    /* PostgreSQL: the epoch this rungd leads (0: not the leader) and the
     * statement that renews its lease in each commit (store_leader.c). */
    int64_t epoch;
    DbStmt *renew;
};

/* ---- store.c ---- */

/* Fails with SQLite's error of the last call, naming what; a damaged or
 * unreadable file stops the store (store_set_fault). */
int store_db_error(Store *s, RungError *err, const char *what);
/* ---- store_leader.c (PostgreSQL) ---- */

/* The start of the error rung_renew_lead raises when another rungd took
 * the lead (store_leader.c): store_commit stops the store on it. */
#define STORE_DEPOSED "another rungd leads the database now"

/* Makes the leader's row where it is missing, and prepares Store.renew
 * (which store_commit runs). */
int store_leader_table(Store *s, RungError *err);

/* Prepares the statements every commit runs (Store.st). */
int store_prepare_all(Store *s, RungError *err);
/* Prepares sql, or fails naming what. */
int store_prepare(Store *s, const char *sql, DbStmt **st, RungError *err, const char *what);
/* The JSON of a text column (new reference), or NULL for NULL or bad text. */
json_t *store_column_json(DbStmt *st, int col);

/* ---- store_file.c: the database file (docs/operations.md, "The database
 * file") ---- */

/* Before the open: SQLite's log hook, the path's length, and whether this
 * start may open or create the database at path (check_start). */
int store_file_before_open(const char *path, const StoreOptions *opt, RungError *err);
/* Takes the exclusive flock on the database file (one rungd per database)
 * and notes which file the path names. */
int store_lock_database(Store *s, const char *path, RungError *err);
/* After the open: notes the files' state, writes PATH.created, and with
 * --init removes PATH.fault. */
void store_file_opened(Store *s, const char *path, const StoreOptions *opt);
/* Stops the store for good, once (store.h, store_fault). */
void store_set_fault(Store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether the path still names the files opened, untouched by others
 * (content: false right after rungd's own write). */
int store_guard(Store *s, bool content, RungError *err);
/* The state of the files after rungd's own write. */
void store_note_own_writes(Store *s);
/* What the connection still reads into PATH.rescued-TIME. Outside a
 * transaction. */
void store_rescue(Store *s);

#endif
