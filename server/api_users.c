/* Users and tokens (docs/api.md, "Users, roles and tokens"): an admin adds
 * and removes users; everyone makes, lists and revokes their own tokens.
 * A token's text is in the reply that makes it and nowhere else: the store
 * keeps its SHA-256 (auth.h), the events and logs its id. */
#include "api_internal.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "jsonv.h"
#include "store.h"

#define A RUNG_E_INVALID_ARGUMENT
#define TOKEN_NAME_MAX 64
#define MAX_EXPIRY_DAYS 3650

/* The event of a person's change: actor is job's principal. */
static void user_event(Engine *e, const Job *job, const char *kind, json_t *detail)
{
    core_event_by(engine_core(e), engine_now(e), "user", job->who.name, kind, 0, 0, 0, detail);
}

static int body_of(const Job *job, const char *const *allowed, RungError *err)
{
    if (!json_is_object(job->body))
        return rung_error_set(err, RUNG_E_BAD_JSON, "", "body: must be a JSON object");
    return jsonv_only_keys(job->body, "", allowed, A, err);
}

/* "labels": {"key": "value"} binding a worker token to a pool, as a
 * worker's own labels (docs/api.md, "POST /api/v1/workers"). */
static int labels_ok(const json_t *labels, RungError *err)
{
    if (!json_is_object(labels))
        return rung_error_set(err, A, "labels", "labels: must be an object of strings");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)labels, key, v) {
        if (!spec_label_key_ok(key) || !json_is_string(v) ||
            json_string_length(v) > SPEC_MAX_LABEL_VALUE)
            return rung_error_set(err, A, "labels",
                                  "labels.%s: a key of 1 to %d of A-Z a-z 0-9 _ . - / and a "
                                  "string value of at most %d bytes",
                                  key, SPEC_MAX_LABEL_KEY, SPEC_MAX_LABEL_VALUE);
    }
    return 0;
}

/* A fresh token for user_id: its text goes into o as "token". */
static int make_token(Engine *e, const Job *job, int64_t user_id, const char *user,
                      const char *name, int64_t days, json_t *o, RungError *err)
{
    char token[AUTH_TOKEN_LEN + 1], hash[65];
    auth_token_new(token);
    auth_token_hash(token, hash);
    int64_t now = engine_now(e), id;
    int64_t expires = days > 0 ? now + days * 86400000LL : 0;
    if (store_token_add(engine_store(e), user_id, hash, name, now, expires, &id, err))
        return err->code;
    char when[32] = "";
    if (expires > 0)
        rung_time_format(expires, when, sizeof when);
    json_object_set_new(o, "token_id", json_integer(id));
    json_object_set_new(o, "token", json_string(token));
    json_object_set_new(o, "expires_at", expires > 0 ? json_string(when) : json_null());
    user_event(e, job, "token.created",
               json_pack("{s:I, s:s, s:s, s:o}", "token_id", (json_int_t)id, "user", user, "name",
                         name, "expires_at", expires > 0 ? json_string(when) : json_null()));
    return 0;
}

void api_user_create(Engine *e, Job *job)
{
    static const char *const allowed[] = {"name", "role", "labels", "expires_in_days", NULL};
    RungError err;
    rung_error_clear(&err);
    const char *name, *role_text;
    int64_t days = 0, id;
    Role role;
    json_t *labels = json_object_get(job->body, "labels");
    if (body_of(job, allowed, &err) ||
        jsonv_string(job->body, "", "name", JSONV_REQUIRED, AUTH_NAME_MAX, &name, A, &err) ||
        jsonv_string(job->body, "", "role", JSONV_REQUIRED, 16, &role_text, A, &err) ||
        jsonv_int(job->body, "", "expires_in_days", JSONV_OPTIONAL, 1, MAX_EXPIRY_DAYS, &days, A,
                  &err) ||
        (labels != NULL && !json_is_null(labels) && labels_ok(labels, &err))) {
        api_fail(job, &err);
        return;
    }
    if (!auth_user_name_ok(name)) {
        api_error(job, A, "name", "name: 1 to 64 characters of A-Z a-z 0-9 _ . - @");
        return;
    }
    if (role_parse(role_text, &role) != 0) {
        api_error(job, A, "role", "role: must be admin, member, viewer or worker");
        return;
    }
    if (labels != NULL && !json_is_null(labels) && role != ROLE_WORKER) {
        api_error(job, A, "labels", "labels: only a worker's token is bound to a pool's labels");
        return;
    }
    if (json_is_null(labels))
        labels = NULL;
    if (store_user_add(engine_store(e), name, role, labels, job->who.name, engine_now(e), &id,
                       &err)) {
        api_fail(job, &err);
        return;
    }
    user_event(e, job, "user.added",
               json_pack("{s:I, s:s, s:s}", "user_id", (json_int_t)id, "name", name, "role",
                         role_name(role)));
    json_t *o;
    if (store_user_get(engine_store(e), id, &o, &err) ||
        make_token(e, job, id, name, "first", days, o, &err)) {
        api_fail(job, &err);
        return;
    }
    api_reply(job, 201, o);
}

void api_user_list(Engine *e, Job *job)
{
    RungError err;
    json_t *items;
    if (store_user_list(engine_store(e), &items, &err)) {
        api_fail(job, &err);
        return;
    }
    api_reply(job, 200, api_list_json(items, (int64_t)json_array_size(items)));
}

void api_user_delete(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    json_t *o;
    if (store_user_remove(engine_store(e), job->ids[0], engine_now(e), &err) ||
        store_user_get(engine_store(e), job->ids[0], &o, &err)) {
        api_fail(job, &err);
        return;
    }
    user_event(e, job, "user.removed",
               json_pack("{s:I, s:O}", "user_id", (json_int_t)job->ids[0], "name",
                         json_object_get(o, "name")));
    api_reply(job, 200, o);
}

void api_token_create(Engine *e, Job *job)
{
    static const char *const allowed[] = {"name", "expires_in_days", NULL};
    RungError err;
    rung_error_clear(&err);
    const char *name = "token";
    int64_t days = 0;
    if ((job->body != NULL && body_of(job, allowed, &err)) ||
        jsonv_string(job->body, "", "name", JSONV_OPTIONAL, TOKEN_NAME_MAX, &name, A, &err) ||
        jsonv_int(job->body, "", "expires_in_days", JSONV_OPTIONAL, 1, MAX_EXPIRY_DAYS, &days, A,
                  &err)) {
        api_fail(job, &err);
        return;
    }
    if (job->who.user_id == 0) {
        api_error(job, RUNG_E_CONFLICT, "",
                  "rungd's own token (--token, --token-file) belongs to no user: add a user "
                  "(POST /api/v1/users, rung admin user add) and use that user's token");
        return;
    }
    json_t *o = json_pack("{s:s, s:s}", "user", job->who.name, "name", name);
    if (make_token(e, job, job->who.user_id, job->who.name, name, days, o, &err)) {
        json_decref(o);
        api_fail(job, &err);
        return;
    }
    api_reply(job, 201, o);
}

void api_token_list(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    const char *all = json_string_value(json_object_get(job->query, "all"));
    bool everyone = all != NULL && strcmp(all, "true") == 0;
    if (everyone && job->who.role != ROLE_ADMIN) {
        api_error(job, RUNG_E_FORBIDDEN, "all",
                  "rule admin: only an admin lists everyone's tokens");
        return;
    }
    json_t *items;
    if (store_token_list(engine_store(e), everyone ? -1 : job->who.user_id, &items, &err)) {
        api_fail(job, &err);
        return;
    }
    api_reply(job, 200, api_list_json(items, (int64_t)json_array_size(items)));
}

void api_token_delete(Engine *e, Job *job)
{
    RungError err;
    rung_error_clear(&err);
    int64_t whose = job->who.role == ROLE_ADMIN ? -1 : job->who.user_id;
    if (store_token_revoke(engine_store(e), job->ids[0], whose, engine_now(e), &err)) {
        api_fail(job, &err);
        return;
    }
    user_event(e, job, "token.revoked", json_pack("{s:I}", "token_id", (json_int_t)job->ids[0]));
    api_reply(job, 200, json_pack("{s:I, s:b}", "id", (json_int_t)job->ids[0], "revoked", 1));
}

void api_whoami(Engine *e, Job *job)
{
    (void)e;
    api_reply(job, 200,
              json_pack("{s:s, s:s, s:I, s:o}", "name", job->who.name, "role",
                        role_name(job->who.role), "user_id", (json_int_t)job->who.user_id,
                        "token_id",
                        job->who.token_id > 0 ? json_integer(job->who.token_id) : json_null()));
}
