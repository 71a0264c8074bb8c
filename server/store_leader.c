/* Which rungd leads a PostgreSQL store (store.h, store_leader_claim;
 * docs/operations.md, "A standby rungd").
 *
 * One row, rung_leader, names the leader: its epoch (one more at each
 * change of leader), the URL clients reach it at, its connection's backend
 * pid and when its lease ends (PostgreSQL's clock, so that the daemons'
 * clocks never matter). The leader's every commit renews the lease in the
 * same transaction, on the condition that the epoch is still its own: a
 * leader that was replaced commits nothing more, whatever it believes. A
 * standby takes the lead once the lease has ended, after ending the old
 * leader's connection (pg_terminate_backend), so that a leader that hangs
 * (SIGSTOP) and wakes up later finds its connection gone, and the row
 * locks it held are freed. */
#include "store_internal.h"

#include <stdio.h>
#include <string.h>

/* A lease lasts this long after each commit (the engine commits at least
 * every 100 ms, engine.c) … */
#define LEASE "interval '2 seconds'"
/* … and this long after a claim, while the new leader loads the work in
 * flight (a store of 400,000 trials loads in about 1 s, docs/architecture.md). */
#define LOAD_LEASE "interval '10 seconds'"
/* A lead has ended when its lease ran out (the leader hangs or cannot
 * reach the database), or at once when the leader's connection is gone
 * (the process died: PostgreSQL ends its backend as the socket closes;
 * nothing can commit on a connection that is gone). */
#define ENDED                                                                                      \
    "(expires_at < clock_timestamp() OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE "       \
    "a.pid = rung_leader.backend_pid))"

static int exec(Store *s, const char *sql, RungError *err, const char *what)
{
    if (db_exec(s->db, sql) != DB_OK)
        return store_db_error(s, err, what);
    return 0;
}

int store_leader_table(Store *s, RungError *err)
{
    if (exec(s,
             "CREATE TABLE IF NOT EXISTS rung_leader (id INTEGER PRIMARY KEY CHECK (id = 1), "
             "epoch BIGINT NOT NULL, holder TEXT NOT NULL, backend_pid INTEGER NOT NULL, "
             "expires_at TIMESTAMPTZ NOT NULL); "
             "INSERT INTO rung_leader VALUES (1, 0, '', 0, '-infinity') ON CONFLICT (id) DO "
             "NOTHING",
             err, "leader table"))
        return err->code;
    /* A claim never waits long for a row lock that a stopped leader
     * holds: it tries again at its next turn. */
    if (exec(s, "SET lock_timeout = '2s'", err, "lock_timeout"))
        return err->code;
    /* The renewal fails, rather than change no row, when the epoch is
     * not this leader's any more: store_commit sends it with the COMMIT,
     * in one round trip, and PostgreSQL runs nothing after a failure. */
    if (exec(s,
             "CREATE OR REPLACE FUNCTION rung_renew_lead(e bigint) RETURNS void LANGUAGE plpgsql "
             "AS $$ BEGIN UPDATE rung_leader SET expires_at = clock_timestamp() + " LEASE
             " WHERE id = 1 AND epoch = e; IF NOT FOUND THEN RAISE EXCEPTION "
             "'" STORE_DEPOSED " (this one led epoch %)', e; END IF; END $$",
             err, "leader renewal"))
        return err->code;
    if (db_prepare_persistent(s->db, "SELECT rung_renew_lead(?)", &s->renew) != DB_OK)
        return store_db_error(s, err, "leader renewal");
    return 0;
}

bool store_has_leader(const Store *s)
{
    return db_kind(s->db) == DB_POSTGRES;
}

int64_t store_leader_epoch(const Store *s)
{
    return s->epoch;
}

/* The leader's row as it is now. */
static int read_row(Store *s, StoreLeader *out, int64_t *pid, bool *expired, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "SELECT epoch, holder, backend_pid, " ENDED " FROM rung_leader WHERE id = 1",
                      &st, err, "leader"))
        return err->code;
    int rc = db_step(st);
    if (rc == DB_ROW) {
        out->epoch = db_column_int64(st, 0);
        snprintf(out->holder, sizeof out->holder, "%s", db_column_text(st, 1));
        *pid = db_column_int64(st, 2);
        *expired = db_column_int(st, 3) != 0;
    }
    db_finalize(st);
    return rc == DB_ROW ? 0 : store_db_error(s, err, "leader");
}

int store_leader_claim(Store *s, const char *me, StoreLeader *out, RungError *err)
{
    memset(out, 0, sizeof *out);
    int64_t pid;
    bool expired;
    if (read_row(s, out, &pid, &expired, err))
        return -1;
    if (!expired)
        return 0; /* read_row counts a leader whose connection is gone as expired */
    DbStmt *st;
    /* The old leader's connection ends first: its locks go with it, and
     * nothing it still sends can commit. */
    if (pid != 0) {
        if (store_prepare(s,
                          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ? "
                          "AND pid <> pg_backend_pid()",
                          &st, err, "leader"))
            return -1;
        db_bind_int64(st, 1, pid);
        while (db_step(st) == DB_ROW) {
        }
        db_finalize(st);
    }
    if (store_prepare(s,
                      "UPDATE rung_leader SET epoch = epoch + 1, holder = ?, backend_pid = "
                      "pg_backend_pid(), expires_at = clock_timestamp() + " LOAD_LEASE
                      " WHERE id = 1 AND epoch = ? AND " ENDED,
                      &st, err, "leader"))
        return -1;
    db_bind_text(st, 1, me, -1, DB_STATIC);
    db_bind_int64(st, 2, out->epoch);
    int rc = db_step(st);
    db_finalize(st);
    if (rc == DB_BUSY)
        return 0; /* a row lock held still: the next turn */
    if (rc != DB_DONE) {
        store_db_error(s, err, "leader");
        return -1;
    }
    if (db_changes(s->db) != 1)
        return read_row(s, out, &pid, &expired, err) ? -1 : 0; /* another standby was first */
    s->epoch = out->epoch + 1;
    out->epoch = s->epoch;
    snprintf(out->holder, sizeof out->holder, "%s", me);
    return 1;
}

void store_leader_resign(Store *s)
{
    if (!store_has_leader(s) || s->epoch == 0 || s->fault[0] != '\0')
        return;
    DbStmt *st;
    RungError err;
    if (store_prepare(s,
                      "UPDATE rung_leader SET expires_at = '-infinity', holder = '' WHERE id = 1 "
                      "AND epoch = ?",
                      &st, &err, "leader") != 0)
        return;
    db_bind_int64(st, 1, s->epoch);
    db_step(st);
    db_finalize(st);
}
