/* A gang trial's members; see gang_members.h. */
#include "gang_members.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct.h"
#include "spec.h"

Gang *members_new(int64_t nnodes, int64_t attempt)
{
    Gang *g = calloc(1, sizeof *g + (size_t)nnodes * sizeof g->members[0]);
    if (g == NULL)
        abort(); /* as core.c: a daemon without memory cannot keep its state */
    g->nnodes = nnodes;
    g->attempt = attempt;
    return g;
}

void members_free(Gang *g)
{
    if (g == NULL)
        return;
    for (int64_t i = 0; i < g->nnodes; i++) {
        json_decref(g->members[i].resources);
        json_decref(g->members[i].warnings);
    }
    free(g);
}

GangMember *members_of(Gang *g, int64_t worker_id)
{
    for (int64_t i = 0; g != NULL && i < g->nnodes; i++)
        if (g->members[i].worker_id == worker_id)
            return &g->members[i];
    return NULL;
}

GangMember *members_by_token(Gang *g, const char *token)
{
    GangMember *found = NULL;
    /* Every member is compared, so the time says nothing of which matched. */
    for (int64_t i = 0; g != NULL && i < g->nnodes; i++) {
        GangMember *m = &g->members[i];
        if (m->lease_token[0] != '\0' && rung_ct_equal(token, m->lease_token, GANG_TOKEN_LEN))
            found = m;
    }
    return found;
}

int64_t members_expiry(const Gang *g)
{
    int64_t at = INT64_MAX;
    for (int64_t i = 0; i < g->nnodes; i++)
        if (!g->members[i].done && g->members[i].lease_expires_ms < at)
            at = g->members[i].lease_expires_ms;
    return at;
}

json_t *members_warnings(const Gang *g, size_t keep)
{
    json_int_t count = 0;
    json_t *last = json_array();
    bool any = false;
    for (int64_t i = 0; i < g->nnodes; i++) {
        const json_t *w = g->members[i].warnings;
        if (w == NULL)
            continue;
        any = true;
        count += json_integer_value(json_object_get(w, "count"));
        json_array_extend(last, json_object_get(w, "last"));
    }
    while (json_array_size(last) > keep)
        json_array_remove(last, 0);
    if (!any) {
        json_decref(last);
        return NULL;
    }
    return json_pack("{s:I, s:o}", "count", count, "last", last);
}

json_t *members_to_json(const Gang *g)
{
    json_t *members = json_array();
    for (int64_t i = 0; i < g->nnodes; i++) {
        const GangMember *m = &g->members[i];
        json_t *o = json_pack("{s:I, s:I, s:b}", "rank", (json_int_t)i, "worker_id",
                              (json_int_t)m->worker_id, "done", m->done);
        json_object_set_new(o, "lease_token",
                            m->lease_token[0] ? json_string(m->lease_token) : json_null());
        json_object_set_new(o, "resources", m->resources ? json_incref(m->resources) : json_null());
        json_object_set_new(o, "warnings", m->warnings ? json_incref(m->warnings) : json_null());
        json_array_append_new(members, o);
    }
    return json_pack("{s:I, s:s, s:I, s:o}", "attempt", (json_int_t)g->attempt, "master_addr",
                     g->master_addr, "master_port", (json_int_t)g->master_port, "members", members);
}

/* An integer member of o within [min, max], or -1. */
static int64_t int_in(const json_t *o, const char *key, int64_t min, int64_t max)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return -1;
    return json_integer_value(v);
}

/* Reads member i from its stored object; false when malformed. */
static bool member_from_json(GangMember *m, const json_t *o, int64_t i)
{
    json_t *token = json_object_get(o, "lease_token");
    json_t *resources = json_object_get(o, "resources");
    json_t *warnings = json_object_get(o, "warnings"); /* absent: none */
    if (!json_is_object(o) || int_in(o, "rank", i, i) != i ||
        (m->worker_id = int_in(o, "worker_id", 1, INT64_MAX)) < 1 ||
        !json_is_boolean(json_object_get(o, "done")) ||
        !(json_is_null(token) ||
          (json_is_string(token) && json_string_length(token) == GANG_TOKEN_LEN)) ||
        !(json_is_null(resources) || json_is_object(resources)) ||
        !(warnings == NULL || json_is_null(warnings) || json_is_object(warnings)))
        return false;
    m->done = json_is_true(json_object_get(o, "done"));
    if (json_is_string(token))
        memcpy(m->lease_token, json_string_value(token), GANG_TOKEN_LEN + 1);
    m->resources = json_is_object(resources) ? json_incref(resources) : NULL;
    m->warnings = json_is_object(warnings) ? json_incref(warnings) : NULL;
    return true;
}

Gang *members_from_json(const json_t *stored)
{
    json_t *members = json_object_get(stored, "members");
    const char *addr = json_string_value(json_object_get(stored, "master_addr"));
    int64_t attempt = int_in(stored, "attempt", 1, INT64_MAX);
    int64_t port = int_in(stored, "master_port", 1, 65535);
    size_t n = json_array_size(members);
    if (!json_is_array(members) || n < 2 || n > SPEC_MAX_NODES || addr == NULL ||
        strlen(addr) > GANG_MAX_ADDR || attempt < 1 || port < 1)
        return NULL;
    Gang *g = members_new((int64_t)n, attempt);
    snprintf(g->master_addr, sizeof g->master_addr, "%s", addr);
    g->master_port = port;
    for (size_t i = 0; i < n; i++) {
        if (!member_from_json(&g->members[i], json_array_get(members, i), (int64_t)i)) {
            members_free(g);
            return NULL;
        }
    }
    return g;
}
