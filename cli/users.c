/* `rung admin user ...`, `rung token ...` and `rung events` (docs/api.md,
 * "Users, roles and tokens" and "Events"): users and their tokens, and the
 * log of who did what. A new token is printed alone on the last line of
 * the output, so that a script takes it with `tail -n 1`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "fmt.h"
#include "table.h"

const char *cli_cmd_take_value(int *argc, char **argv, const char *name, bool *bad)
{
    for (int i = 0; i < *argc; i++) {
        if (strcmp(argv[i], name) != 0)
            continue;
        if (i + 1 >= *argc) {
            *bad = true;
            return NULL;
        }
        const char *v = argv[i + 1];
        memmove(argv + i, argv + i + 2, (size_t)(*argc - i - 2) * sizeof *argv);
        *argc -= 2;
        return v;
    }
    return NULL;
}

void cli_cmd_add_query(char *q, size_t size, const char *name, const char *value)
{
    size_t n = strlen(q);
    n += (size_t)snprintf(q + n, size > n ? size - n : 0, "&%s=", name);
    for (const unsigned char *p = (const unsigned char *)value; *p && n + 4 < size; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~", *p) != NULL)
            q[n++] = (char)*p;
        else
            n += (size_t)snprintf(q + n, size - n, "%%%02X", *p);
    }
    q[n < size ? n : size - 1] = '\0';
}

/* A positive whole number of days, or -1 with a message naming flag. */
static int64_t parse_days(const char *flag, const char *text)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (*end != '\0' || v < 1 || v > 3650) {
        fprintf(stderr, "rung: %s: a whole number of days, 1 to 3650, not '%s'\n", flag, text);
        return -1;
    }
    return v;
}

static void print_new_token(const json_t *r)
{
    const char *expires = cli_fmt_str(r, "expires_at", NULL);
    printf("token %" PRId64 " of %s%s%s (shown once: keep it now)\n", cli_fmt_int(r, "token_id", 0),
           cli_fmt_str(r, "user", cli_fmt_str(r, "name", "?")), expires ? ", expires " : "",
           expires ? expires : "");
    printf("%s\n", cli_fmt_str(r, "token", ""));
}

static int user_add(CliRest *h, int argc, char **argv)
{
    bool bad = false;
    const char *role = cli_cmd_take_value(&argc, argv, "--role", &bad);
    const char *expires = cli_cmd_take_value(&argc, argv, "--expires-days", &bad);
    const char *pool = cli_cmd_take_value(&argc, argv, "--pool", &bad);
    if (bad || argc != 1 || role == NULL)
        return CLI_EXIT_USAGE;
    json_t *body = json_pack("{s:s, s:s}", "name", argv[0], "role", role);
    if (expires != NULL) {
        int64_t days = parse_days("--expires-days", expires);
        if (days < 0) {
            json_decref(body);
            return CLI_EXIT_USAGE;
        }
        json_object_set_new(body, "expires_in_days", json_integer(days));
    }
    if (pool != NULL) {
        /* --pool KEY=VALUE: the worker token registers only workers with it. */
        const char *eq = strchr(pool, '=');
        if (eq == NULL || eq == pool) {
            fprintf(stderr, "rung: --pool: KEY=VALUE, not '%s'\n", pool);
            json_decref(body);
            return CLI_EXIT_USAGE;
        }
        json_t *labels = json_object();
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - pool), pool);
        json_object_set_new(labels, key, json_string(eq + 1));
        json_object_set_new(body, "labels", labels);
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    CliError err;
    json_t *r;
    int rc = cli_rest_json(h, "POST", "/api/v1/users", text, strlen(text), &r, &err);
    free(text);
    if (rc != 0)
        return cli_cmd_fail(h, &err);
    printf("user %" PRId64 " %s added, role %s\n", cli_fmt_int(r, "id", 0),
           cli_fmt_str(r, "name", "?"), cli_fmt_str(r, "role", "?"));
    json_object_set(r, "user", json_object_get(r, "name"));
    print_new_token(r);
    json_decref(r);
    return CLI_EXIT_OK;
}

static int user_list(CliRest *h, int argc, char **argv)
{
    bool json = cli_cmd_take_flag(&argc, argv, "--json");
    if (argc != 0)
        return CLI_EXIT_USAGE;
    CliError err;
    json_t *r;
    if (cli_rest_json(h, "GET", "/api/v1/users", NULL, 0, &r, &err) != 0)
        return cli_cmd_fail(h, &err);
    if (json) {
        int rc = cli_cmd_print_json(r);
        json_decref(r);
        return rc;
    }
    CliTable *t = cli_table_new();
    static const char *const heads[] = {"ID", "NAME", "ROLE", "POOL", "TOKENS", "STATE"};
    for (int c = 0; c < 6; c++)
        cli_table_column(t, heads[c], c == 0 || c == 4 ? CLI_ALIGN_RIGHT : CLI_ALIGN_LEFT, 0);
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(r, "items"), i, u) {
        char id[24], n[24], pool[160] = "-";
        snprintf(id, sizeof id, "%" PRId64, cli_fmt_int(u, "id", 0));
        snprintf(n, sizeof n, "%" PRId64, cli_fmt_int(u, "active_tokens", 0));
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(u, "labels"), key, v)
            snprintf(pool, sizeof pool, "%s=%s", key, json_string_value(v));
        bool removed = !json_is_null(json_object_get(u, "removed_at"));
        const char *cells[] = {id, cli_fmt_str(u, "name", "?"),   cli_fmt_str(u, "role", "?"), pool,
                               n,  removed ? "removed" : "active"};
        for (int c = 0; c < 6; c++)
            cli_table_cell(t, cells[c]);
    }
    cli_table_print(t, stdout, CLI_TABLE_PLAIN);
    cli_table_free(t);
    json_decref(r);
    return CLI_EXIT_OK;
}

/* DELETE /api/v1/COLLECTION/ID for argv's one id: 0 with *reply (new
 * reference), or the exit status. */
static int delete_one(CliRest *h, const char *command, const char *collection, int argc,
                      char **argv, int64_t *id, json_t **reply)
{
    if (argc != 1 || cli_cmd_parse_id(command, argv[0], id) != 0)
        return CLI_EXIT_USAGE;
    char path[96];
    snprintf(path, sizeof path, "/api/v1/%s/%" PRId64, collection, *id);
    CliError err;
    if (cli_rest_json(h, "DELETE", path, NULL, 0, reply, &err) != 0)
        return cli_cmd_fail(h, &err);
    return CLI_EXIT_OK;
}

static int user_remove(CliRest *h, int argc, char **argv)
{
    int64_t id;
    json_t *r;
    int rc = delete_one(h, "admin user remove", "users", argc, argv, &id, &r);
    if (rc != CLI_EXIT_OK)
        return rc;
    printf("user %" PRId64 " %s removed; every token of theirs is revoked\n", id,
           cli_fmt_str(r, "name", "?"));
    json_decref(r);
    return CLI_EXIT_OK;
}

int cli_cmd_admin(CliRest *h, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[0], "user") != 0)
        return CLI_EXIT_USAGE;
    if (strcmp(argv[1], "add") == 0)
        return user_add(h, argc - 2, argv + 2);
    if (strcmp(argv[1], "list") == 0)
        return user_list(h, argc - 2, argv + 2);
    if (strcmp(argv[1], "remove") == 0)
        return user_remove(h, argc - 2, argv + 2);
    return CLI_EXIT_USAGE;
}

static int token_create(CliRest *h, int argc, char **argv)
{
    bool bad = false;
    const char *expires = cli_cmd_take_value(&argc, argv, "--expires-days", &bad);
    if (bad || argc > 1)
        return CLI_EXIT_USAGE;
    json_t *body = json_pack("{s:s}", "name", argc == 1 ? argv[0] : "token");
    if (expires != NULL) {
        int64_t days = parse_days("--expires-days", expires);
        if (days < 0) {
            json_decref(body);
            return CLI_EXIT_USAGE;
        }
        json_object_set_new(body, "expires_in_days", json_integer(days));
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    CliError err;
    json_t *r;
    int rc = cli_rest_json(h, "POST", "/api/v1/tokens", text, strlen(text), &r, &err);
    free(text);
    if (rc != 0)
        return cli_cmd_fail(h, &err);
    print_new_token(r);
    json_decref(r);
    return CLI_EXIT_OK;
}

static int token_list(CliRest *h, int argc, char **argv)
{
    bool all = cli_cmd_take_flag(&argc, argv, "--all");
    bool json = cli_cmd_take_flag(&argc, argv, "--json");
    if (argc != 0)
        return CLI_EXIT_USAGE;
    CliError err;
    json_t *r;
    if (cli_rest_json(h, "GET", all ? "/api/v1/tokens?all=true" : "/api/v1/tokens", NULL, 0, &r,
                      &err) != 0)
        return cli_cmd_fail(h, &err);
    if (json) {
        int rc = cli_cmd_print_json(r);
        json_decref(r);
        return rc;
    }
    CliTable *t = cli_table_new();
    static const char *const heads[] = {"ID", "USER", "NAME", "CREATED", "EXPIRES", "STATE"};
    for (int c = 0; c < 6; c++)
        cli_table_column(t, heads[c], c == 0 ? CLI_ALIGN_RIGHT : CLI_ALIGN_LEFT, 0);
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(r, "items"), i, k) {
        char id[24];
        snprintf(id, sizeof id, "%" PRId64, cli_fmt_int(k, "id", 0));
        bool revoked = !json_is_null(json_object_get(k, "revoked_at"));
        const char *cells[] = {id,
                               cli_fmt_str(k, "user", "?"),
                               cli_fmt_str(k, "name", "?"),
                               cli_fmt_str(k, "created_at", "?"),
                               cli_fmt_str(k, "expires_at", "never"),
                               revoked ? "revoked" : "active"};
        for (int c = 0; c < 6; c++)
            cli_table_cell(t, cells[c]);
    }
    cli_table_print(t, stdout, CLI_TABLE_PLAIN);
    cli_table_free(t);
    json_decref(r);
    return CLI_EXIT_OK;
}

static int token_revoke(CliRest *h, int argc, char **argv)
{
    int64_t id;
    json_t *r;
    int rc = delete_one(h, "token revoke", "tokens", argc, argv, &id, &r);
    if (rc != CLI_EXIT_OK)
        return rc;
    printf("token %" PRId64 " revoked\n", id);
    json_decref(r);
    return CLI_EXIT_OK;
}

int cli_cmd_token(CliRest *h, int argc, char **argv)
{
    if (argc < 1)
        return CLI_EXIT_USAGE;
    if (strcmp(argv[0], "create") == 0)
        return token_create(h, argc - 1, argv + 1);
    if (strcmp(argv[0], "list") == 0)
        return token_list(h, argc - 1, argv + 1);
    if (strcmp(argv[0], "revoke") == 0)
        return token_revoke(h, argc - 1, argv + 1);
    return CLI_EXIT_USAGE;
}

/* One event as a line: "2026-11-28T20:00:00.000Z #42 alice experiment.paused
 * experiment=3 {detail}". */
static void print_event(const json_t *ev)
{
    const json_t *actor = json_object_get(ev, "actor");
    printf("%s #%" PRId64 " %s %s", cli_fmt_str(ev, "at", "?"), cli_fmt_int(ev, "id", 0),
           cli_fmt_str(actor, "name", "?"), cli_fmt_str(ev, "kind", "?"));
    static const char *const ids[] = {"experiment_id", "trial_id", "worker_id"};
    static const char *const names[] = {"experiment", "trial", "worker"};
    for (int k = 0; k < 3; k++)
        if (cli_fmt_int(ev, ids[k], 0) > 0)
            printf(" %s=%" PRId64, names[k], cli_fmt_int(ev, ids[k], 0));
    const json_t *detail = json_object_get(ev, "detail");
    if (json_object_size(detail) > 0) {
        char *text = json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS);
        char clean[1024];
        cli_fmt_sanitize(text ? text : "", clean, sizeof clean, false);
        printf(" %s", clean);
        free(text);
    }
    putchar('\n');
}

int cli_cmd_events(CliRest *h, int argc, char **argv)
{
    bool follow = cli_cmd_take_flag(&argc, argv, "--follow");
    bool json = cli_cmd_take_flag(&argc, argv, "--json");
    bool bad = false;
    const char *experiment = cli_cmd_take_value(&argc, argv, "--experiment", &bad);
    const char *kind = cli_cmd_take_value(&argc, argv, "--kind", &bad);
    const char *actor = cli_cmd_take_value(&argc, argv, "--actor", &bad);
    if (bad || argc != 0)
        return CLI_EXIT_USAGE;
    int64_t exp_id = 0;
    if (experiment != NULL && cli_cmd_parse_id("events --experiment", experiment, &exp_id) != 0)
        return CLI_EXIT_USAGE;
    char filter[512] = "";
    if (exp_id > 0)
        snprintf(filter, sizeof filter, "&experiment=%" PRId64, exp_id);
    if (kind != NULL)
        cli_cmd_add_query(filter, sizeof filter, "kind", kind);
    if (actor != NULL)
        cli_cmd_add_query(filter, sizeof filter, "actor", actor);
    int64_t after = 0;
    for (;;) {
        char path[700];
        snprintf(path, sizeof path, "/api/v1/events?after=%" PRId64 "&limit=1000%s%s", after,
                 follow ? "&wait_s=30" : "", filter);
        CliError err;
        CliReply reply;
        if (cli_rest_request(h, "GET", path, NULL, 0, &reply, &err) != 0)
            return cli_cmd_fail(h, &err);
        json_t *r = reply.len > 0 ? json_loadb(reply.body, reply.len, 0, NULL) : NULL;
        cli_rest_reply_free(&reply);
        json_t *items = json_object_get(r, "items");
        size_t i;
        json_t *ev;
        json_array_foreach(items, i, ev) {
            if (json) {
                char *text = json_dumps(ev, JSON_COMPACT);
                printf("%s\n", text ? text : "{}");
                free(text);
            } else {
                print_event(ev);
            }
        }
        if (r != NULL)
            after = cli_fmt_int(r, "next_after", after);
        bool more = json_array_size(items) == 1000;
        json_decref(r);
        fflush(stdout);
        if (!more && !follow)
            return CLI_EXIT_OK;
    }
}
