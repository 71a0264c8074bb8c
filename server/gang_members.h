/* A gang trial's members: the value the Core keeps on a Trial, its stored
 * JSON form and the lookups the rules need. The rules themselves (holds,
 * formation, who may report, what ends an attempt) are core_gang.c's
 * (docs/api.md, "Gangs").
 *
 * A gang trial (resources_per_trial.nodes > 1) runs on `nodes` workers at
 * once, one member each. Rank 0 is the worker held first; only it
 * reports, and its finish decides the trial; any member's failure or lost
 * lease ends the attempt for all. The members of the current (or last)
 * attempt are stored with the trial, tokens included, so a restart keeps
 * them. Pure: no I/O. */
#ifndef RUNG_SERVER_GANG_MEMBERS_H
#define RUNG_SERVER_GANG_MEMBERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define GANG_TOKEN_LEN 32 /* CORE_TOKEN_LEN: a member's lease token */
#define GANG_MAX_ADDR 255 /* bytes of an advertise_addr: a DNS name's limit */

typedef struct GangMember {
    int64_t worker_id;
    char lease_token[GANG_TOKEN_LEN + 1]; /* "" until its lease reply was given */
    int64_t lease_expires_ms;             /* when its lease runs out (memory only) */
    json_t *resources;                    /* owned: what its lease granted, or NULL before */
    json_t
        *warnings; /* owned: its program's refused @rung lines as its worker sent them, or NULL */
    bool done;     /* rank > 0 that finished completed: not heard of again */
} GangMember;

typedef struct Gang {
    int64_t attempt;                     /* the trial's attempt these members run (or ran) */
    int64_t nnodes;                      /* members, 2..SPEC_MAX_NODES; the rank is the index */
    char master_addr[GANG_MAX_ADDR + 1]; /* rank 0's advertise_addr */
    int64_t master_port;                 /* rank 0's port, 1..65535 */
    GangMember members[];
} Gang;

/* A new gang of nnodes members with no worker yet (free with members_free). */
Gang *members_new(int64_t nnodes, int64_t attempt);
void members_free(Gang *g);

/* The member that worker_id is, or NULL. */
GangMember *members_of(Gang *g, int64_t worker_id);
/* The member whose lease token is token (compared in constant time), or
 * NULL; members without a token yet match nothing. */
GangMember *members_by_token(Gang *g, const char *token);
static inline int64_t members_rank(const Gang *g, const GangMember *m)
{
    return m - g->members;
}
/* When the first lease of a member not done runs out; INT64_MAX for none. */
int64_t members_expiry(const Gang *g);

/* The trial's warnings from its members' (a new object): the counts
 * summed, and the last lines of each, rank 0's first, of which the last
 * `keep` stay; NULL when no member sent any. */
json_t *members_warnings(const Gang *g, size_t keep);

/* The stored form (a new object): {"attempt", "master_addr",
 * "master_port", "members": [{"rank", "worker_id", "lease_token" (or
 * null), "resources" (or null), "warnings" (or null), "done"}]}. Leases'
 * expiry times are not stored: a restart gives every lease a fresh
 * window. */
json_t *members_to_json(const Gang *g);
/* Reads the stored form back (borrowed); NULL when it is malformed. */
Gang *members_from_json(const json_t *stored);

#endif
