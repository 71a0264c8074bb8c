/* The dashboard's sessions (docs/api.md, "Sessions"): a token sent once,
 * in the Authorization header of POST /api/v1/session, becomes an HttpOnly,
 * SameSite=Strict cookie (Secure under TLS) that the page's later requests
 * carry instead, so no script of the page ever holds the token. Every
 * state-changing request of a session must also carry its CSRF token in
 * X-CSRF-Token. Sessions live in rungd's memory (a restart logs everyone
 * out) and end at logout, after SESSION_MS, or as soon as the token they
 * came from is revoked or its user removed. */
#include "api_internal.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ct.h"
#include "store.h"

#define SESSION_MAX 4096
#define SESSION_MS (12 * 3600 * 1000LL)

typedef struct Session {
    char id_hash[65]; /* SHA-256 of the cookie's value; "" for a free slot */
    char csrf[AUTH_TOKEN_LEN + 1];
    Principal who;
    int64_t expires_at; /* ms since the epoch */
} Session;

static Session sessions[SESSION_MAX]; /* the engine thread's alone */

static Session *find(const char *sid, int64_t now)
{
    char hash[65];
    auth_token_hash(sid, hash);
    for (int i = 0; i < SESSION_MAX; i++) {
        Session *s = &sessions[i];
        if (s->id_hash[0] == '\0')
            continue;
        if (s->expires_at <= now) {
            memset(s, 0, sizeof *s);
            continue;
        }
        if (strcmp(s->id_hash, hash) == 0)
            return s;
    }
    return NULL;
}

/* A free slot, else the one that expires first. */
static Session *slot(void)
{
    Session *best = &sessions[0];
    for (int i = 0; i < SESSION_MAX; i++) {
        if (sessions[i].id_hash[0] == '\0')
            return &sessions[i];
        if (sessions[i].expires_at < best->expires_at)
            best = &sessions[i];
    }
    return best;
}

int api_session_lookup(Engine *e, const char *sid, const char *csrf, bool unsafe, Principal *who,
                       RungError *err)
{
    Session *s = find(sid, engine_now(e));
    if (s == NULL)
        return rung_error_set(err, RUNG_E_UNAUTHORIZED, "",
                              "no such session (expired, or logged out): log in again");
    /* The token it came from must still be good: revoking it, or removing
     * its user, ends its sessions at once. rungd's own token is rungd's. */
    if (s->who.token_id > 0) {
        json_t *tokens;
        RungError why;
        bool active = false;
        if (store_token_list(engine_store(e), s->who.user_id, &tokens, &why) == 0) {
            size_t i;
            json_t *t;
            json_array_foreach(tokens, i, t) {
                if (json_integer_value(json_object_get(t, "id")) == s->who.token_id &&
                    json_is_null(json_object_get(t, "revoked_at")))
                    active = true;
            }
            json_decref(tokens);
        }
        if (!active) {
            memset(s, 0, sizeof *s);
            return rung_error_set(err, RUNG_E_UNAUTHORIZED, "",
                                  "the token this session came from was revoked: log in again");
        }
    }
    if (unsafe && !rung_ct_equal(csrf ? csrf : "", s->csrf, AUTH_TOKEN_LEN))
        return rung_error_set(err, RUNG_E_FORBIDDEN, "X-CSRF-Token",
                              "rule csrf: a session's change must carry its csrf token in the "
                              "X-CSRF-Token header");
    *who = s->who;
    memcpy(who->session, s->id_hash, sizeof who->session);
    return 0;
}

/* The cookie: HttpOnly (no script reads it), SameSite=Strict (no other
 * site's page sends it), Secure under TLS. */
static char *cookie(Engine *e, const char *value, int64_t max_age_s)
{
    char *c = NULL;
    if (asprintf(&c, "rung_session=%s; Path=/; Max-Age=%lld; HttpOnly; SameSite=Strict%s", value,
                 (long long)max_age_s, engine_config(e)->tls ? "; Secure" : "") < 0)
        abort();
    return c;
}

static json_t *session_json(const Session *s)
{
    char when[32];
    rung_time_format(s->expires_at, when, sizeof when);
    return json_pack("{s:s, s:s, s:s, s:s}", "name", s->who.name, "role", role_name(s->who.role),
                     "csrf", s->csrf, "expires_at", when);
}

void api_session_create(Engine *e, Job *job)
{
    if (job->who.session[0] != '\0') {
        api_error(job, RUNG_E_CONFLICT, "",
                  "log in with a token in the Authorization header, not with a session");
        return;
    }
    char sid[AUTH_TOKEN_LEN + 1];
    auth_token_new(sid);
    Session *s = slot();
    memset(s, 0, sizeof *s);
    auth_token_hash(sid, s->id_hash);
    auth_token_new(s->csrf);
    s->who = job->who;
    s->who.session[0] = '\0';
    s->expires_at = engine_now(e) + SESSION_MS;
    job->set_cookie = cookie(e, sid, SESSION_MS / 1000);
    api_event(e, job, "session.started", 0, 0, 0, NULL);
    api_reply(job, 201, session_json(s));
}

/* The session of the request's cookie (the dashboard after a reload). */
static Session *own(Engine *e, Job *job)
{
    if (job->who.session[0] == '\0') {
        api_error(job, RUNG_E_NOT_FOUND, "", "this request carries no session cookie");
        return NULL;
    }
    for (int i = 0; i < SESSION_MAX; i++)
        if (sessions[i].id_hash[0] != '\0' && strcmp(sessions[i].id_hash, job->who.session) == 0 &&
            sessions[i].expires_at > engine_now(e))
            return &sessions[i];
    api_error(job, RUNG_E_NOT_FOUND, "", "no such session");
    return NULL;
}

void api_session_get(Engine *e, Job *job)
{
    Session *s = own(e, job);
    if (s != NULL)
        api_reply(job, 200, session_json(s));
}

void api_session_delete(Engine *e, Job *job)
{
    Session *s = own(e, job);
    if (s == NULL)
        return;
    memset(s, 0, sizeof *s);
    job->set_cookie = cookie(e, "", 0);
    api_event(e, job, "session.ended", 0, 0, 0, NULL);
    api_reply(job, 200, json_pack("{s:b}", "logged_out", 1));
}
