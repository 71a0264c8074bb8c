/* Roles, access rules, tokens and the slowing of bad tokens; see auth.h. */
#include "auth.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "sha256hex.h"

static const char *const role_names[ROLE__COUNT] = {[ROLE_ADMIN] = "admin",
                                                    [ROLE_MEMBER] = "member",
                                                    [ROLE_VIEWER] = "viewer",
                                                    [ROLE_WORKER] = "worker"};

const char *role_name(Role r)
{
    return r >= 0 && r < ROLE__COUNT ? role_names[r] : "?";
}

int role_parse(const char *name, Role *out)
{
    for (int r = 0; name != NULL && r < ROLE__COUNT; r++)
        if (strcmp(name, role_names[r]) == 0) {
            *out = (Role)r;
            return 0;
        }
    return -1;
}

bool auth_user_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n >= 1 && n <= AUTH_NAME_MAX &&
           strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-@") == n;
}

static const char *const access_names[ACCESS__COUNT] = {
    [ACCESS_PUBLIC] = "public",
    [ACCESS_READ] = "read",
    [ACCESS_READ_WORKER] = "read-or-worker",
    [ACCESS_SUBMIT] = "submit",
    [ACCESS_STEER_EXP] = "owner-or-admin",
    [ACCESS_STEER_TRIAL] = "owner-or-admin",
    [ACCESS_WORKER] = "worker",
    [ACCESS_WORKER_ID] = "own-worker",
    [ACCESS_WORKER_TRIAL] = "own-worker",
    [ACCESS_ADMIN] = "admin",
    [ACCESS_SELF] = "self",
};

const char *access_name(Access a)
{
    return a >= 0 && a < ACCESS__COUNT ? access_names[a] : "?";
}

bool access_needs_owner(Access a)
{
    return a == ACCESS_STEER_EXP || a == ACCESS_STEER_TRIAL;
}

bool access_needs_holder(Access a)
{
    return a == ACCESS_WORKER_ID || a == ACCESS_WORKER_TRIAL;
}

#define FORBID(...) rung_error_set(err, RUNG_E_FORBIDDEN, "", __VA_ARGS__)

int auth_decide(const Principal *p, Access a, const AccessFacts *f, RungError *err)
{
    Role r = p->role;
    const char *who = role_name(r);
    switch (a) {
    case ACCESS_PUBLIC:
    case ACCESS_SELF:
        return 0;
    case ACCESS_READ:
        if (r == ROLE_WORKER)
            return FORBID("rule read: a worker token may use only the worker protocol");
        return 0;
    case ACCESS_READ_WORKER:
        return 0;
    case ACCESS_SUBMIT:
        if (r == ROLE_ADMIN || r == ROLE_MEMBER)
            return 0;
        return FORBID("rule submit: only an admin or a member may do this; you are a %s", who);
    case ACCESS_STEER_EXP:
    case ACCESS_STEER_TRIAL:
        if (r == ROLE_ADMIN)
            return 0;
        if (r != ROLE_MEMBER)
            return FORBID("rule owner-or-admin: a %s may not steer experiments", who);
        if (f->owner_id != p->user_id)
            return FORBID("rule owner-or-admin: only the experiment's owner or an admin may "
                          "steer it");
        return 0;
    case ACCESS_WORKER:
        if (r == ROLE_ADMIN || r == ROLE_WORKER)
            return 0;
        return FORBID("rule worker: only a worker token (or an admin) may use the worker "
                      "protocol; you are a %s",
                      who);
    case ACCESS_WORKER_ID:
    case ACCESS_WORKER_TRIAL:
        if (r == ROLE_ADMIN)
            return 0;
        if (r != ROLE_WORKER)
            return FORBID("rule own-worker: only a worker token (or an admin) may use the "
                          "worker protocol; you are a %s",
                          who);
        if (!f->holds)
            return FORBID(a == ACCESS_WORKER_ID
                              ? "rule own-worker: that worker was registered with another token"
                              : "rule own-worker: that trial is not held by a worker of this "
                                "token's");
        return 0;
    case ACCESS_ADMIN:
        if (r == ROLE_ADMIN)
            return 0;
        return FORBID("rule admin: only an admin may do this; you are a %s", who);
    default:
        return FORBID("no access rule");
    }
}

void auth_token_new(char out[AUTH_TOKEN_LEN + 1])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[33]; /* 256 random bits; the 33rd byte pads to whole sextets */
    size_t got = 0;
    while (got < 32) {
        ssize_t n = getrandom(raw + got, 32 - got, 0);
        if (n <= 0)
            abort(); /* no randomness: tokens would be guessable */
        got += (size_t)n;
    }
    raw[32] = 0;
    memcpy(out, AUTH_TOKEN_PREFIX, 5);
    char *o = out + 5;
    for (int i = 0; i < 33; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
        *o++ = b64[(v >> 18) & 63];
        *o++ = b64[(v >> 12) & 63];
        *o++ = b64[(v >> 6) & 63];
        *o++ = b64[v & 63];
    }
    /* 44 sextets carry 264 bits; the last one holds only padding bits. */
    out[AUTH_TOKEN_LEN] = '\0';
}

void auth_token_hash(const char *token, char hex[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    if (!EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL) || n != 32)
        abort();
    rung_sha256_to_hex(md, hex);
}

/* ---- slowing bad tokens ---- */

static size_t slot_of(const unsigned char key[16])
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % AUTH_THROTTLE_SLOTS;
}

int64_t auth_throttle_wait(const AuthThrottle *t, const unsigned char key[16], int64_t now_ms)
{
    const AuthSlot *s = &t->slots[slot_of(key)];
    if (!s->used || memcmp(s->key, key, 16) != 0 || s->blocked_until <= now_ms)
        return 0;
    return (s->blocked_until - now_ms + 999) / 1000;
}

void auth_throttle_fail(AuthThrottle *t, const unsigned char key[16], int64_t now_ms)
{
    AuthSlot *s = &t->slots[slot_of(key)];
    if (!s->used || memcmp(s->key, key, 16) != 0 || now_ms - s->first_ms > AUTH_WINDOW_MS) {
        memset(s, 0, sizeof *s);
        memcpy(s->key, key, 16);
        s->used = true;
        s->first_ms = now_ms;
    }
    s->failures++;
    int over = s->failures - AUTH_FREE_FAILURES + 1; /* the 5th starts the first wait */
    if (over > 0) {
        int64_t wait_s = over >= 7 ? AUTH_MAX_BLOCK_S : (int64_t)1 << (over - 1);
        if (wait_s > AUTH_MAX_BLOCK_S)
            wait_s = AUTH_MAX_BLOCK_S;
        s->blocked_until = now_ms + wait_s * 1000;
        s->first_ms = now_ms; /* the window runs on while the tries go on */
    }
}
