/* `rung importance ID [--metric NAME] [--json]`: which parameters matter
 * (docs/api.md, "GET /api/v1/experiments/{id}/importance"): per metric a
 * table of the parameters in the API's order, most important first. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "fmt.h"
#include "table.h"

/* "?metric=" with value percent-encoded (letters, digits, - _ . ~ as they
 * are), into q of size bytes. */
static void metric_query(char *q, size_t size, const char *value)
{
    size_t n = (size_t)snprintf(q, size, "?metric=");
    for (const unsigned char *p = (const unsigned char *)value; *p && n + 4 < size; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~", *p) != NULL)
            q[n++] = (char)*p;
        else
            n += (size_t)snprintf(q + n, size - n, "%%%02X", *p);
    }
    q[n < size ? n : size - 1] = '\0';
}

static void print_metric(const json_t *m)
{
    char name[256];
    cli_fmt_sanitize(cli_fmt_str(m, "name", "?"), name, sizeof name, false);
    const char *mode = cli_fmt_str(m, "mode", NULL);
    printf("%s (%s%s%s, %" PRId64 " trials)\n", name, cli_fmt_str(m, "kind", "?"), mode ? ", " : "",
           mode ? mode : "", cli_fmt_int(m, "trials", 0));
    const json_t *list = json_object_get(m, "importance");
    if (json_array_size(list) == 0) {
        char why[512];
        cli_fmt_sanitize(cli_fmt_str(m, "reason", "no importance"), why, sizeof why, false);
        printf("  %s\n", why);
        return;
    }
    CliTable *t = cli_table_new();
    cli_table_column(t, "PARAM", CLI_ALIGN_LEFT, 64);
    cli_table_column(t, "IMPORTANCE", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "STD", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "TRIALS", CLI_ALIGN_RIGHT, 0);
    size_t i;
    const json_t *p;
    json_array_foreach(list, i, p) {
        char buf[64];
        cli_table_cell(t, cli_fmt_str(p, "param", "?"));
        cli_table_cellf(t, "%.3f", json_number_value(json_object_get(p, "importance")));
        cli_table_cellf(t, "%.3f", json_number_value(json_object_get(p, "std")));
        cli_table_cell(t, cli_fmt_value(json_object_get(p, "trials"), buf, sizeof buf));
    }
    cli_table_print(t, stdout, CLI_TABLE_PLAIN);
    cli_table_free(t);
}

int cli_cmd_importance(CliRest *h, int argc, char **argv)
{
    bool json = cli_cmd_take_flag(&argc, argv, "--json");
    const char *metric = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--metric") != 0)
            continue;
        if (i + 1 >= argc)
            return CLI_EXIT_USAGE;
        metric = argv[i + 1];
        memmove(argv + i, argv + i + 2, (size_t)(argc - i - 2) * sizeof *argv);
        argc -= 2;
        break;
    }
    int64_t id;
    if (argc != 1)
        return CLI_EXIT_USAGE;
    if (cli_cmd_parse_id("importance", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char query[600] = "";
    if (metric != NULL)
        metric_query(query, sizeof query, metric);
    char path[700];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/importance%s", id, query);
    CliError err;
    CliReply reply;
    if (cli_rest_request(h, "GET", path, NULL, 0, &reply, &err) != 0)
        return cli_cmd_fail(h, &err);
    json_t *r = reply.len > 0 ? json_loadb(reply.body, reply.len, 0, NULL) : NULL;
    cli_rest_reply_free(&reply);
    if (r == NULL) {
        fprintf(stderr, "rung importance: the reply is not JSON\n");
        return CLI_EXIT_ERROR;
    }
    int rc = CLI_EXIT_OK;
    if (json) {
        rc = cli_cmd_print_json(r);
    } else {
        size_t i;
        const json_t *m;
        json_array_foreach(json_object_get(r, "metrics"), i, m) {
            if (i > 0)
                printf("\n");
            print_metric(m);
        }
    }
    json_decref(r);
    return rc;
}
