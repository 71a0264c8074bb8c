/* Gangs on the worker's side; see gang.h. */
#include "gang.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const GANG_ENV_NAMES[GANG_ENV_COUNT] = {
    "RUNG_NODE_RANK", "RUNG_NNODES", "MASTER_ADDR", "MASTER_PORT", "NNODES",
    "NODE_RANK",      "WORLD_SIZE",  "RANK",        "LOCAL_RANK",
};

/* The placeholders of argv, in docs/api.md's order. */
static const char *const PLACEHOLDERS[] = {"node_rank", "nnodes", "master_addr", "master_port"};
#define N_PLACEHOLDERS 4

void gang_single(GangInfo *g, int port)
{
    memset(g, 0, sizeof *g);
    g->rank = 0;
    g->nnodes = 1;
    /* One node meets itself: loopback always reaches it, and the port was
     * found free on every address (advertise.h). */
    snprintf(g->master_addr, sizeof g->master_addr, "127.0.0.1");
    g->master_port = port;
}

bool gang_addr_valid(const char *addr)
{
    size_t n = addr ? strlen(addr) : 0;
    if (n == 0 || n > GANG_ADDR_MAX || addr[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = addr[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == ':' || c == '_' || c == '%';
        if (!ok)
            return false;
    }
    return true;
}

bool gang_fields_refused(const json_t *reply_body)
{
    const char *field =
        json_string_value(json_object_get(json_object_get(reply_body, "error"), "field"));
    return field != NULL && (strcmp(field, "advertise_addr") == 0 || strcmp(field, "port") == 0);
}

int gang_addr_unbracket(const char *addr, char *out, size_t size)
{
    size_t n = strlen(addr);
    if (n < 2 || addr[0] != '[' || addr[n - 1] != ']' || n - 2 + 1 > size)
        return -1;
    memcpy(out, addr + 1, n - 2);
    out[n - 2] = '\0';
    return 0;
}

/* An integer member within [lo, hi] into *out; false otherwise. */
static bool int_in(const json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return false;
    *out = json_integer_value(v);
    return true;
}

/* master_addr and master_port of obj into g; false with why. */
static bool read_master(const json_t *obj, GangInfo *g, char *why, size_t why_size)
{
    const char *addr = json_string_value(json_object_get(obj, "master_addr"));
    char bare[GANG_ADDR_MAX + 1];
    if (addr != NULL && gang_addr_unbracket(addr, bare, sizeof bare) == 0)
        addr = bare;
    int64_t port;
    if (!gang_addr_valid(addr)) {
        snprintf(why, why_size,
                 "gang.master_addr is not an address (1 to %d bytes of letters, "
                 "digits, '.', '-', ':', '_', '%%')",
                 GANG_ADDR_MAX);
        return false;
    }
    if (!int_in(obj, "master_port", 1, GANG_PORT_MAX, &port)) {
        snprintf(why, why_size, "gang.master_port is not a port (1 to %d)", GANG_PORT_MAX);
        return false;
    }
    snprintf(g->master_addr, sizeof g->master_addr, "%s", addr);
    g->master_port = (int)port;
    return true;
}

/* The trial object's form: {"members": [{"rank", "worker_id"}, ...], ...}. */
static int from_members(const json_t *gang, int64_t worker_id, GangInfo *g, char *why,
                        size_t why_size)
{
    const json_t *members = json_object_get(gang, "members");
    size_t n = json_array_size(members);
    if (!json_is_array(members) || n < 1 || n > GANG_MAX_NODES) {
        snprintf(why, why_size, "gang.members must be an array of 1 to %d members", GANG_MAX_NODES);
        return -1;
    }
    GangInfo out = {.is_gang = true, .rank = -1, .nnodes = (int64_t)n};
    size_t i;
    const json_t *m;
    json_array_foreach(members, i, m) {
        int64_t rank, id;
        if (!int_in(m, "rank", 0, (int64_t)n - 1, &rank) ||
            !int_in(m, "worker_id", 1, INT64_MAX, &id)) {
            snprintf(why, why_size, "gang.members[%zu] needs a rank in [0, %zu) and a worker_id", i,
                     n);
            return -1;
        }
        if (id == worker_id)
            out.rank = rank;
    }
    if (out.rank < 0) {
        snprintf(why, why_size, "this worker (%" PRId64 ") is not among gang.members", worker_id);
        return -1;
    }
    if (!read_master(gang, &out, why, why_size))
        return -1;
    *g = out;
    return 1;
}

int gang_from_reply(const json_t *reply, int64_t worker_id, GangInfo *g, char *why, size_t why_size)
{
    const json_t *gang = json_object_get(reply, "gang");
    if (gang == NULL || json_is_null(gang))
        gang = json_object_get(json_object_get(reply, "trial"), "gang");
    if (gang == NULL || json_is_null(gang))
        return 0;
    if (!json_is_object(gang)) {
        snprintf(why, why_size, "gang is not an object");
        return -1;
    }
    if (json_object_get(gang, "members") != NULL)
        return from_members(gang, worker_id, g, why, why_size);
    GangInfo out = {.is_gang = true};
    if (!int_in(gang, "nnodes", 1, GANG_MAX_NODES, &out.nnodes)) {
        snprintf(why, why_size, "gang.nnodes is not an integer in [1, %d]", GANG_MAX_NODES);
        return -1;
    }
    if (!int_in(gang, "rank", 0, out.nnodes - 1, &out.rank)) {
        snprintf(why, why_size, "gang.rank is not an integer in [0, %" PRId64 ")", out.nnodes);
        return -1;
    }
    if (!read_master(gang, &out, why, why_size))
        return -1;
    *g = out;
    return 1;
}

void gang_env(Env *env, const GangInfo *g)
{
    if (!g->is_gang) {
        env_unset(env, "RUNG_NODE_RANK");
        env_unset(env, "RUNG_NNODES");
        return;
    }
    char rank[24], nnodes[24], port[16];
    snprintf(rank, sizeof rank, "%" PRId64, g->rank);
    snprintf(nnodes, sizeof nnodes, "%" PRId64, g->nnodes);
    snprintf(port, sizeof port, "%d", g->master_port);
    const char *values[GANG_ENV_COUNT] = {rank, nnodes, g->master_addr, port, nnodes,
                                          rank, nnodes, rank,           "0"};
    for (int i = 0; i < GANG_ENV_COUNT; i++)
        env_set(env, GANG_ENV_NAMES[i], values[i]);
}

/* Whether some string of argv holds "{name}". */
static bool argv_uses(const json_t *argv, const char *name)
{
    char needle[32];
    snprintf(needle, sizeof needle, "{%s}", name);
    size_t i;
    const json_t *a;
    json_array_foreach(argv, i, a) {
        const char *s = json_string_value(a);
        if (s != NULL && strstr(s, needle) != NULL)
            return true;
    }
    return false;
}

json_t *gang_argv_values(const GangInfo *g, const json_t *config, const json_t *argv, char *why,
                         size_t why_size)
{
    for (int k = 0; k < N_PLACEHOLDERS; k++)
        if (json_object_get(config, PLACEHOLDERS[k]) != NULL && argv_uses(argv, PLACEHOLDERS[k])) {
            snprintf(why, why_size,
                     "the parameter '%s' has the name of the placeholder {%s} that rung-worker "
                     "fills with the gang's value: trainable.argv's {%s} would be ambiguous; "
                     "rename the parameter",
                     PLACEHOLDERS[k], PLACEHOLDERS[k], PLACEHOLDERS[k]);
            return NULL;
        }
    json_t *values = json_is_object(config) ? json_copy((json_t *)config) : json_object();
    if (values == NULL ||
        json_object_set_new(values, "node_rank", json_integer((json_int_t)g->rank)) != 0 ||
        json_object_set_new(values, "nnodes", json_integer((json_int_t)g->nnodes)) != 0 ||
        json_object_set_new(values, "master_addr", json_string(g->master_addr)) != 0 ||
        (g->master_port > 0 &&
         json_object_set_new(values, "master_port", json_integer(g->master_port)) != 0)) {
        json_decref(values);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    return values;
}

int gang_url_host(const char *url, char *host, size_t size)
{
    const char *p = strstr(url, "://");
    if (p == NULL)
        return -1;
    p += 3;
    size_t auth = strcspn(p, "/?#"); /* the authority: [userinfo@]host[:port] */
    const char *at = memchr(p, '@', auth);
    if (at != NULL) {
        auth -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    size_t n;
    if (auth > 0 && p[0] == '[') {
        const char *close = memchr(p, ']', auth);
        if (close == NULL)
            return -1;
        p++;
        n = (size_t)(close - p);
    } else {
        const char *colon = memchr(p, ':', auth);
        n = colon ? (size_t)(colon - p) : auth;
    }
    if (n == 0 || n + 1 > size)
        return -1;
    memcpy(host, p, n);
    host[n] = '\0';
    return 0;
}

/* A port number of text's n bytes; -1 when it is none. */
static int port_of(const char *text, size_t n)
{
    if (n == 0 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        v = v * 10 + (text[i] - '0');
    }
    return v >= 1 && v <= GANG_PORT_MAX ? v : -1;
}

int gang_ports_parse(const char *text, int *lo, int *hi, char *why, size_t why_size)
{
    const char *dash = strchr(text, '-');
    size_t n = dash ? (size_t)(dash - text) : strlen(text);
    int a = port_of(text, n);
    int b = dash ? port_of(dash + 1, strlen(dash + 1)) : a;
    if (a < 0 || b < 0 || a > b) {
        snprintf(why, why_size, "must be LO-HI with 1 <= LO <= HI <= %d, or one port, not '%s'",
                 GANG_PORT_MAX, text);
        return -1;
    }
    *lo = a;
    *hi = b;
    return 0;
}

int gang_ports_nth(int lo, int hi, uint64_t start, int i)
{
    uint64_t size = (uint64_t)(hi - lo + 1);
    return lo + (int)((start % size + (uint64_t)i) % size);
}
