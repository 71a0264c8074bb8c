/* Users, their tokens, owners and the event log in SQLite (schema 13;
 * docs/api.md, "Users, roles and tokens" and "Events"). Each call runs
 * inside the engine's open transaction, so a user, a token or an event
 * commits with the request that made it. */
#include "store_internal.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"

static json_t *time_or_null(DbStmt *st, int col)
{
    if (db_column_type(st, col) == DB_NULL)
        return json_null();
    char when[32];
    rung_time_format(db_column_int64(st, col), when, sizeof when);
    return json_string(when);
}

static json_t *int_or_null(DbStmt *st, int col)
{
    return db_column_type(st, col) == DB_NULL ? json_null()
                                              : json_integer(db_column_int64(st, col));
}

static json_t *text_of(DbStmt *st, int col)
{
    const char *t = db_column_text(st, col);
    return t ? json_string(t) : json_null();
}

/* Steps a prepared write to its end and finalizes it. */
static int step_done(Store *s, DbStmt *st, RungError *err, const char *what)
{
    int rc = db_step(st) == DB_DONE ? 0 : store_db_error(s, err, what);
    db_finalize(st);
    return rc;
}

/* ---- users ---- */

int store_user_add(Store *s, const char *name, Role role, const json_t *labels, const char *by,
                   int64_t now, int64_t *id, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "SELECT 1 FROM users WHERE name = ?", &st, err, "add user"))
        return err->code;
    db_bind_text(st, 1, name, -1, DB_STATIC);
    int found = db_step(st);
    db_finalize(st);
    if (found == DB_ROW)
        return rung_error_set(err, RUNG_E_CONFLICT, "name",
                              "name: a user named '%s' exists (or existed: names are not reused)",
                              name);
    if (store_prepare(s,
                      "INSERT INTO users (name, role, labels, created_at, created_by) "
                      "VALUES (?1, ?2, ?3, ?4, ?5)",
                      &st, err, "add user"))
        return err->code;
    db_bind_text(st, 1, name, -1, DB_STATIC);
    db_bind_text(st, 2, role_name(role), -1, DB_STATIC);
    char *text = labels ? json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (text)
        db_bind_text(st, 3, text, -1, free);
    db_bind_int64(st, 4, now);
    db_bind_text(st, 5, by, -1, DB_STATIC);
    if (step_done(s, st, err, "add user"))
        return err->code;
    *id = db_last_insert_id(store_db(s));
    return 0;
}

#define USER_COLUMNS                                                                               \
    "u.id, u.name, u.role, u.labels, u.created_at, u.created_by, u.removed_at, (SELECT count(*) "  \
    "FROM tokens t WHERE t.user_id = u.id AND t.revoked_at IS NULL)"

static json_t *user_row(DbStmt *st)
{
    json_t *labels = store_column_json(st, 3);
    char created[32];
    rung_time_format(db_column_int64(st, 4), created, sizeof created);
    return json_pack("{s:I, s:o, s:o, s:o, s:s, s:o, s:o, s:I}", "id",
                     (json_int_t)db_column_int64(st, 0), "name", text_of(st, 1), "role",
                     text_of(st, 2), "labels", labels ? labels : json_null(), "created_at", created,
                     "created_by", text_of(st, 5), "removed_at", time_or_null(st, 6),
                     "active_tokens", (json_int_t)db_column_int64(st, 7));
}

int store_user_list(Store *s, json_t **items, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "SELECT " USER_COLUMNS " FROM users u ORDER BY u.id", &st, err,
                      "list users"))
        return err->code;
    json_t *arr = json_array();
    int rc;
    while ((rc = db_step(st)) == DB_ROW)
        json_array_append_new(arr, user_row(st));
    db_finalize(st);
    if (rc != DB_DONE) {
        json_decref(arr);
        return store_db_error(s, err, "list users");
    }
    *items = arr;
    return 0;
}

int store_user_get(Store *s, int64_t id, json_t **out, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "SELECT " USER_COLUMNS " FROM users u WHERE u.id = ?", &st, err,
                      "read user"))
        return err->code;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    *out = rc == DB_ROW ? user_row(st) : NULL;
    db_finalize(st);
    if (rc == DB_DONE)
        return rung_error_set(err, RUNG_E_NOT_FOUND, "", "no user %lld", (long long)id);
    return rc == DB_ROW ? 0 : store_db_error(s, err, "read user");
}

int store_user_remove(Store *s, int64_t id, int64_t now, RungError *err)
{
    json_t *o;
    if (store_user_get(s, id, &o, err))
        return err->code;
    bool removed = !json_is_null(json_object_get(o, "removed_at"));
    json_decref(o);
    if (removed)
        return rung_error_set(err, RUNG_E_NOT_FOUND, "", "user %lld was removed already",
                              (long long)id);
    DbStmt *st;
    if (store_prepare(s, "UPDATE users SET removed_at = ?2 WHERE id = ?1", &st, err, "remove user"))
        return err->code;
    db_bind_int64(st, 1, id);
    db_bind_int64(st, 2, now);
    if (step_done(s, st, err, "remove user"))
        return err->code;
    if (store_prepare(s,
                      "UPDATE tokens SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL",
                      &st, err, "remove user"))
        return err->code;
    db_bind_int64(st, 1, id);
    db_bind_int64(st, 2, now);
    return step_done(s, st, err, "remove user");
}

/* ---- tokens ---- */

int store_token_add(Store *s, int64_t user_id, const char *hash, const char *name, int64_t now,
                    int64_t expires_at, int64_t *id, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "INSERT INTO tokens (user_id, hash, name, created_at, expires_at) "
                      "VALUES (?1, ?2, ?3, ?4, ?5)",
                      &st, err, "add token"))
        return err->code;
    db_bind_int64(st, 1, user_id);
    db_bind_text(st, 2, hash, -1, DB_STATIC);
    db_bind_text(st, 3, name, -1, DB_STATIC);
    db_bind_int64(st, 4, now);
    if (expires_at > 0)
        db_bind_int64(st, 5, expires_at);
    if (step_done(s, st, err, "add token"))
        return err->code;
    *id = db_last_insert_id(store_db(s));
    return 0;
}

int store_token_list(Store *s, int64_t user_id, json_t **items, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "SELECT t.id, u.name, t.name, t.created_at, t.expires_at, t.revoked_at "
                      "FROM tokens t JOIN users u ON u.id = t.user_id "
                      "WHERE ?1 < 0 OR t.user_id = ?1 ORDER BY t.id",
                      &st, err, "list tokens"))
        return err->code;
    db_bind_int64(st, 1, user_id);
    json_t *arr = json_array();
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        char created[32];
        rung_time_format(db_column_int64(st, 3), created, sizeof created);
        json_array_append_new(arr,
                              json_pack("{s:I, s:o, s:o, s:s, s:o, s:o}", "id",
                                        (json_int_t)db_column_int64(st, 0), "user", text_of(st, 1),
                                        "name", text_of(st, 2), "created_at", created, "expires_at",
                                        time_or_null(st, 4), "revoked_at", time_or_null(st, 5)));
    }
    db_finalize(st);
    if (rc != DB_DONE) {
        json_decref(arr);
        return store_db_error(s, err, "list tokens");
    }
    *items = arr;
    return 0;
}

int store_token_revoke(Store *s, int64_t id, int64_t user_id, int64_t now, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "UPDATE tokens SET revoked_at = ?3 WHERE id = ?1 AND (?2 < 0 OR user_id = "
                      "?2) AND revoked_at IS NULL",
                      &st, err, "revoke token"))
        return err->code;
    db_bind_int64(st, 1, id);
    db_bind_int64(st, 2, user_id);
    db_bind_int64(st, 3, now);
    if (step_done(s, st, err, "revoke token"))
        return err->code;
    if (db_changes(store_db(s)) == 0)
        return rung_error_set(err, RUNG_E_NOT_FOUND, "",
                              "no active token %lld of yours (an admin may revoke anyone's)",
                              (long long)id);
    return 0;
}

int store_token_lookup(Store *s, const char *hash, int64_t now, Principal *p, json_t **labels,
                       RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "SELECT t.id, t.user_id, u.name, u.role, u.labels, t.expires_at, "
                      "t.revoked_at, u.removed_at FROM tokens t JOIN users u ON u.id = t.user_id "
                      "WHERE t.hash = ?",
                      &st, err, "token"))
        return err->code;
    db_bind_text(st, 1, hash, -1, DB_STATIC);
    int rc = db_step(st);
    memset(p, 0, sizeof *p); /* token_id 0: unknown */
    if (rc != DB_ROW) {
        db_finalize(st);
        if (rc != DB_DONE)
            return store_db_error(s, err, "token");
        return rung_error_set(err, RUNG_E_UNAUTHORIZED, "",
                              "missing or wrong token: send Authorization: Bearer <token>");
    }
    int64_t expires = db_column_int64(st, 5);
    bool revoked = db_column_type(st, 6) != DB_NULL || db_column_type(st, 7) != DB_NULL;
    Role role = ROLE_VIEWER;
    role_parse(db_column_text(st, 3), &role);
    memset(p, 0, sizeof *p);
    p->token_id = db_column_int64(st, 0);
    p->user_id = db_column_int64(st, 1);
    p->role = role;
    snprintf(p->name, sizeof p->name, "%s", db_column_text(st, 2));
    if (labels)
        *labels = store_column_json(st, 4);
    db_finalize(st);
    if (revoked)
        return rung_error_set(err, RUNG_E_UNAUTHORIZED, "", "this token was revoked");
    if (expires > 0 && expires <= now)
        return rung_error_set(err, RUNG_E_UNAUTHORIZED, "", "this token has expired");
    return 0;
}

/* ---- owners ---- */

int store_experiment_owner(Store *s, int64_t id, int64_t *owner_id, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "SELECT owner_id FROM experiments WHERE id = ?", &st, err, "owner"))
        return err->code;
    db_bind_int64(st, 1, id);
    int rc = db_step(st);
    if (rc == DB_ROW)
        *owner_id = db_column_type(st, 0) == DB_NULL ? -1 : db_column_int64(st, 0);
    db_finalize(st);
    if (rc == DB_DONE)
        return rung_error_set(err, RUNG_E_NOT_FOUND, "", "no experiment %lld", (long long)id);
    return rc == DB_ROW ? 0 : store_db_error(s, err, "owner");
}

int store_trial_experiment(Store *s, int64_t trial_id, int64_t *exp_id, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "SELECT experiment_id FROM trials WHERE id = ?", &st, err, "trial"))
        return err->code;
    db_bind_int64(st, 1, trial_id);
    int rc = db_step(st);
    if (rc == DB_ROW)
        *exp_id = db_column_int64(st, 0);
    db_finalize(st);
    if (rc == DB_DONE)
        return rung_error_set(err, RUNG_E_NOT_FOUND, "", "no trial %lld", (long long)trial_id);
    return rc == DB_ROW ? 0 : store_db_error(s, err, "trial");
}

/* ---- events ---- */

/* The CASTs give PostgreSQL the type of a filter that a NULL turns off
 * (it cannot infer one from `$2 IS NULL`); SQLite reads them as they were. */
int store_read_events(Store *s, const EventFilter *f, json_t **items, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s,
                      "SELECT id, at, actor_kind, actor, kind, experiment_id, trial_id, worker_id, "
                      "detail FROM events WHERE id > ?1 AND (CAST(?2 AS TEXT) IS NULL OR kind = "
                      "?2 OR kind LIKE ?2 || '.%') AND (?3 = 0 OR experiment_id = ?3) AND "
                      "(CAST(?4 AS TEXT) IS NULL OR actor = ?4) AND (?5 = 0 OR trial_id = ?5) "
                      "ORDER BY id LIMIT ?6",
                      &st, err, "read events"))
        return err->code;
    db_bind_int64(st, 1, f->after);
    if (f->kind)
        db_bind_text(st, 2, f->kind, -1, DB_STATIC);
    db_bind_int64(st, 3, f->experiment_id);
    if (f->actor)
        db_bind_text(st, 4, f->actor, -1, DB_STATIC);
    db_bind_int64(st, 5, f->trial_id);
    db_bind_int64(st, 6, f->limit);
    json_t *arr = json_array();
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        char when[32];
        rung_time_format(db_column_int64(st, 1), when, sizeof when);
        json_t *detail = store_column_json(st, 8);
        json_array_append_new(arr, json_pack("{s:I, s:s, s:{s:o, s:o}, s:o, s:o, s:o, s:o, s:o}",
                                             "id", (json_int_t)db_column_int64(st, 0), "at", when,
                                             "actor", "kind", text_of(st, 2), "name",
                                             text_of(st, 3), "kind", text_of(st, 4),
                                             "experiment_id", int_or_null(st, 5), "trial_id",
                                             int_or_null(st, 6), "worker_id", int_or_null(st, 7),
                                             "detail", detail ? detail : json_object()));
    }
    db_finalize(st);
    if (rc != DB_DONE) {
        json_decref(arr);
        return store_db_error(s, err, "read events");
    }
    *items = arr;
    return 0;
}

int store_prune_events(Store *s, int64_t before_ms, RungError *err)
{
    DbStmt *st;
    if (store_prepare(s, "DELETE FROM events WHERE at < ?", &st, err, "prune events"))
        return err->code;
    db_bind_int64(st, 1, before_ms);
    return step_done(s, st, err, "prune events");
}
