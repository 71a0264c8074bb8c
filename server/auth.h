/* Who may do what (docs/api.md, "Users, roles and tokens"): the roles,
 * the principal a request acts as, each route's access rule, the tokens'
 * form, and the slowing of repeated bad tokens. Pure logic: no SQL, no
 * sockets. api_access.c asks the store and the core for the facts (whose
 * experiment, whose worker) and this file decides. */
#ifndef RUNG_SERVER_AUTH_H
#define RUNG_SERVER_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

typedef enum { ROLE_ADMIN, ROLE_MEMBER, ROLE_VIEWER, ROLE_WORKER, ROLE__COUNT } Role;

const char *role_name(Role r);
/* 0 and *out, or -1 for a name that is none of the four. */
int role_parse(const char *name, Role *out);

#define AUTH_NAME_MAX 64 /* a user's name: 1 to 64 of A-Z a-z 0-9 _ . - @ */
bool auth_user_name_ok(const char *name);

/* What a request acts as. user_id 0 is the bootstrap admin: rungd's
 * --token / --token-file (or, with no token set, a loopback client). */
typedef struct Principal {
    Role role;
    int64_t user_id;
    int64_t token_id; /* 0: the bootstrap token, or none */
    char name[AUTH_NAME_MAX + 1];
    char session[65]; /* the dashboard session it came by (its id's hash), or "" */
} Principal;

/* Each route's rule (server/api_routes.c; the table in docs/api.md). */
typedef enum {
    ACCESS_PUBLIC,       /* anyone, no token: /metrics */
    ACCESS_READ,         /* admin, member, viewer */
    ACCESS_READ_WORKER,  /* those and worker tokens: blobs, a checkpoint's download */
    ACCESS_SUBMIT,       /* admin, member: new experiments, uploads of working dirs */
    ACCESS_STEER_EXP,    /* admin; a member who owns the experiment {id} */
    ACCESS_STEER_TRIAL,  /* admin; a member who owns the trial {id}'s experiment */
    ACCESS_WORKER,       /* admin, worker: a worker's registration */
    ACCESS_WORKER_ID,    /* admin; the worker token that registered worker {id} */
    ACCESS_WORKER_TRIAL, /* admin; a worker token whose worker holds trial {id} */
    ACCESS_ADMIN,        /* admin: users */
    ACCESS_SELF,         /* any token: one's own tokens */
    ACCESS__COUNT
} Access;

const char *access_name(Access a);

/* The facts a rule may need, found by the caller (-1: unknown, no such). */
typedef struct AccessFacts {
    int64_t owner_id; /* the experiment's owner (STEER_*); -1: none recorded */
    bool holds;       /* WORKER_ID / WORKER_TRIAL: p owns that worker / a holder */
} AccessFacts;

/* Whether p may use a route of rule a: 0, or RUNG_E_FORBIDDEN with the rule
 * named in err's message. */
int auth_decide(const Principal *p, Access a, const AccessFacts *f, RungError *err);
/* Whether rule a needs AccessFacts (so the caller looks them up). */
bool access_needs_owner(Access a);
bool access_needs_holder(Access a);

/* Tokens: "rung_" and 43 characters of base64url, 256 random bits. */
#define AUTH_TOKEN_PREFIX "rung_"
#define AUTH_TOKEN_LEN (5 + 43)
void auth_token_new(char out[AUTH_TOKEN_LEN + 1]);
/* The SHA-256 of a token, in hex: all the store keeps of it. */
void auth_token_hash(const char *token, char hex[65]);

/* Repeated unknown tokens from one address (Conn's 16-byte key) are
 * slowed: from the AUTH_FREE_FAILURES-th in a window on, each failure
 * starts a wait of a doubling time (1 s, 2 s, ...) up to AUTH_MAX_BLOCK_S,
 * during which every request from the address gets 429. A fixed table: an address that loses its
 * slot to another starts over, which costs an attacker more than it saves. */
#define AUTH_FREE_FAILURES 5
#define AUTH_WINDOW_MS 60000
#define AUTH_MAX_BLOCK_S 60
#define AUTH_THROTTLE_SLOTS 256

typedef struct AuthSlot {
    unsigned char key[16];
    int64_t first_ms;      /* the window's start */
    int failures;          /* in the window */
    int64_t blocked_until; /* ms */
    bool used;
} AuthSlot;

typedef struct AuthThrottle {
    AuthSlot slots[AUTH_THROTTLE_SLOTS];
} AuthThrottle;

/* Seconds the address must wait before another try, or 0. */
int64_t auth_throttle_wait(const AuthThrottle *t, const unsigned char key[16], int64_t now_ms);
/* A bad token from key: counts it, and may start a wait. */
void auth_throttle_fail(AuthThrottle *t, const unsigned char key[16], int64_t now_ms);

#endif
