/* The SQLite store: schema migrations, prepared statements, transactions.
 *
 * One connection, owned by the engine thread. Writes of a batch of requests
 * go in one transaction (group commit) and every reply waits for its commit:
 * WAL with synchronous=NORMAL survives kill -9 of the process, and
 * `durable_full` adds an fsync per commit for power loss. */
#ifndef RUNG_SERVER_STORE_H
#define RUNG_SERVER_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "auth.h"
#include "core.h"
#include "error.h"

typedef struct Store Store;

typedef struct StoreOptions {
    bool durable_full;    /* --durability full: an fsync per commit */
    bool init;            /* --init: may create where an earlier database was, and
                             starts on a database that an earlier run stopped using */
    const char *data_dir; /* its checkpoints/ is a sign of an earlier database */
    /* Not NULL: the store is this PostgreSQL database (a libpq connection
     * string; db.h), not the SQLite file at path. */
    const char *pg_conninfo;
} StoreOptions;

/* PostgreSQL: which rungd leads the database (store_leader.c;
 * docs/operations.md, "A standby rungd"). */
typedef struct StoreLeader {
    int64_t epoch;    /* the leader's epoch: one more at each change of leader */
    char holder[256]; /* the URL clients reach the leader at ("" when none) */
} StoreLeader;

/* Whether the store has a leader to elect (PostgreSQL: several rungd may
 * share it, one leads); a SQLite file has one rungd, its flock's. */
bool store_has_leader(const Store *s);
/* Tries to lead as `me` (the URL clients reach this rungd at): 1 when this
 * rungd leads now (*out: its epoch), 0 when another one leads (*out: its
 * URL and epoch), -1 on an error (err). A leader whose lease ran out (no
 * commit for 2 s: it died, hangs or lost its connection) is replaced, its
 * connection ended first. */
int store_leader_claim(Store *s, const char *me, StoreLeader *out, RungError *err);
/* The epoch this rungd leads; 0 when it does not. */
int64_t store_leader_epoch(const Store *s);
/* Gives the lead up at a clean stop: a standby takes it at once. */
void store_leader_resign(Store *s);

/* Copies every table of `from` into `to` (both open at the newest schema;
 * `to` empty) in one transaction of `to`, then checks the copy: each
 * table's row count, and a sample of rows found column by column. Lines
 * for a person go to log. (`rungd migrate`: server/migrate.c.) */
int store_copy(Store *from, Store *to, FILE *log, RungError *err);

/* Opens the database at path and applies the migrations it lacks. *out is
 * new (free with store_close). A missing database is created only on a
 * first start: where signs of an earlier one remain (PATH.created, its
 * -wal or -shm, the data folder's checkpoints/) or PATH.fault says that an
 * earlier run stopped using it, the start is refused unless opt->init
 * (docs/operations.md, "The database file"). Errors: RUNG_E_NOT_FOUND for
 * a missing database, RUNG_E_UNAVAILABLE for a damaged one or a
 * PATH.fault, RUNG_E_CONFLICT when another rungd holds it. */
int store_open(const char *path, const StoreOptions *opt, Store **out, RungError *err);
void store_close(Store *store);

/* Why the store stopped taking writes, or NULL while it works. It stops
 * for good, once, when its path no longer names the file it opened
 * (unlinked, replaced, moved), when another program wrote to that file,
 * or when SQLite finds it damaged or cannot read or write it
 * (SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_IOERR). Then it logs the reason
 * at error level, writes it to PATH.fault (which a later start reads),
 * copies what its connection still reads to PATH.rescued-TIME when it
 * can, and refuses every later transaction. */
const char *store_fault(const Store *store);

/* rungd --check: reads the database at path without changing it (PRAGMA
 * integrity_check, foreign_key_check, the schema version) and prints what
 * it found to out. 0 when sound, 1 otherwise. */
int store_check(const char *path, FILE *out);

/* Both fail (RUNG_E_UNAVAILABLE) once store_fault says why; store_commit
 * checks the file before and after the COMMIT, so that nothing is
 * committed into a file that left its path and a commit it could not
 * trust is reported failed. */
int store_begin(Store *store, RungError *err);
int store_commit(Store *store, RungError *err);
void store_rollback(Store *store);

/* Writes every queued change of the core (inserts and updates) and marks
 * the objects stored. Call inside a transaction. */
int store_write_changes(Store *store, const CoreChanges *changes, RungError *err);

/* Loads into core what is in flight (running experiments with their trials
 * and reports, recent workers) and the totals of the whole store. */
int store_load(Store *store, Core *core, int64_t now, RungError *err);

/* After a failed write and core_forget_*: reads one experiment (if it runs
 * and was stored) or one worker back into core. A worker released for
 * being idle comes back the same way when it calls again. */
int store_reload_experiment(Store *store, Core *core, int64_t id, int64_t now, RungError *err);
int store_reload_worker(Store *store, Core *core, int64_t id, RungError *err);

/* Reads an ended experiment that left memory back in, with all its trials,
 * to run again (retry-failed, PATCH num_samples). RUNG_E_NOT_FOUND when
 * the store has none. */
int store_revive_experiment(Store *store, Core *core, int64_t id, int64_t now, RungError *err);
/* Puts e's failed trials that left memory back in (core_readd_trial). */
int store_readd_failed(Store *store, Core *core, Experiment *e, RungError *err);
/* Whether the checkpoints table has trial_id's row of step (pbt's copies
 * stored in rungd; ckptstore_sweep keeps only those at start). */
bool store_has_checkpoint(Store *store, int64_t trial_id, int64_t step);
/* Deletes an experiment with its trials and their reports; trial_counts
 * gets how many trials it had by state. Inside the batch's transaction. */
int store_delete_experiment(Store *store, int64_t id, int64_t trial_counts[TRIAL__COUNT],
                            RungError *err);

/* Tags and notes of a row not in memory (schema 015), inside the batch's
 * transaction: tags and notes as given (borrowed; NULL: keep).
 * RUNG_E_NOT_FOUND when there is no such row. */
int store_set_experiment_meta(Store *s, int64_t id, const json_t *tags, const json_t *notes,
                              RungError *err);
int store_set_trial_meta(Store *s, int64_t id, const json_t *tags, const json_t *notes,
                         RungError *err);

/* A late finish's warnings from a member of an ended trial's stored gang
 * whose token is token (borrowed): kept as that member's, and the trial's
 * warnings become every member's added up (members_warnings). Nothing
 * changes for a token of no member. Inside the batch's transaction. */
int store_gang_warnings(Store *store, int64_t trial_id, const char *token, json_t *warnings,
                        RungError *err);

/* Savepoints inside the batch's transaction: one per request that writes,
 * so that a write the store refuses is undone alone. */
int store_savepoint(Store *store, RungError *err);
int store_release_savepoint(Store *store, RungError *err);
void store_rollback_savepoint(Store *store);

/* Reports of a trial's attempt with step > after_step, ascending, at most
 * limit: *items is a new array of {"step","time","metrics"}. */
int store_reports(Store *store, int64_t trial_id, int64_t attempt, int64_t after_step,
                  int64_t limit, json_t **items, RungError *err);

/* Bytes of the database on disk: its file plus its -wal file (stat(2), so
 * it costs no query); -1 when there is no file to measure. */
int64_t store_database_bytes(Store *store);

/* The connection, for the read side of this module only (store_read*.c). */
struct Db *store_db(Store *store);

/* ---- users, tokens, owners, events (store_users.c; schema 13) ---- */

/* A new user (RUNG_E_CONFLICT, field "name", when the name was ever used);
 * labels (borrowed, or NULL) bind a worker token to a pool. */
int store_user_add(Store *store, const char *name, Role role, const json_t *labels, const char *by,
                   int64_t now, int64_t *id, RungError *err);
int store_user_list(Store *store, json_t **items, RungError *err);
int store_user_get(Store *store, int64_t id, json_t **out, RungError *err);
/* Marks the user removed and revokes every token of theirs. */
int store_user_remove(Store *store, int64_t id, int64_t now, RungError *err);
/* A token, kept as the SHA-256 hex of its text (auth_token_hash);
 * expires_at 0: never. */
int store_token_add(Store *store, int64_t user_id, const char *hash, const char *name, int64_t now,
                    int64_t expires_at, int64_t *id, RungError *err);
/* user_id's tokens (-1: everyone's), without their secrets. */
int store_token_list(Store *store, int64_t user_id, json_t **items, RungError *err);
/* Revokes token id if it is user_id's (-1: anyone's); RUNG_E_NOT_FOUND else. */
int store_token_revoke(Store *store, int64_t id, int64_t user_id, int64_t now, RungError *err);
/* The principal a token's hash stands for; *labels (new reference, may be
 * NULL) its user's pool labels. RUNG_E_UNAUTHORIZED for an unknown,
 * revoked or expired token (p is still filled for the last two). */
int store_token_lookup(Store *store, const char *hash, int64_t now, Principal *p, json_t **labels,
                       RungError *err);
/* An experiment's owner_id (-1: none recorded); RUNG_E_NOT_FOUND. */
int store_experiment_owner(Store *store, int64_t id, int64_t *owner_id, RungError *err);
int store_trial_experiment(Store *store, int64_t trial_id, int64_t *exp_id, RungError *err);

typedef struct EventFilter {
    int64_t after;         /* ids greater than this */
    const char *kind;      /* "trial.failed", or a family "trial"; NULL: any */
    int64_t experiment_id; /* 0: any */
    int64_t trial_id;      /* 0: any */
    const char *actor;     /* a name; NULL: any */
    int64_t limit;
} EventFilter;
/* The events f selects, oldest first, as docs/api.md's event objects. */
int store_read_events(Store *store, const EventFilter *f, json_t **items, RungError *err);
/* Deletes the events older than before_ms (--event-retention-days). */
int store_prune_events(Store *store, int64_t before_ms, RungError *err);

#endif
