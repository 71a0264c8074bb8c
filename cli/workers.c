/* `rung workers`: the workers the daemon knows, with their GPUs as the last
 * heartbeat described them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "commands.h"
#include "fmt.h"
#include "table.h"

/* A GPU name longer than this is cut ("NVIDIA H100 80GB HBM3" fits). */
#define GPU_NAME_WIDTH 24
/* A worker with more running trials than this shows the first ones and
 * "+N": the rest is in the experiment's own view. */
#define RUNNING_SHOWN 8

/* The heartbeat's entry for GPU `index`, or NULL. */
static const json_t *gpu_status(const json_t *heartbeat, int64_t index)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(heartbeat, "gpus"), i, g) {
        if (cli_fmt_int(g, "index", -1) == index)
            return g;
    }
    return NULL;
}

/* One line per GPU: "0 NVIDIA H100 97% 40211/81559 MiB"; the utilization
 * and memory in use only when the last heartbeat carried them. */
static char *gpus_cell(const json_t *worker)
{
    const json_t *gpus = json_object_get(worker, "gpus");
    const json_t *heartbeat = json_object_get(worker, "heartbeat");
    if (json_array_size(gpus) == 0)
        return cli_xstrdup("-");
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (f == NULL)
        return cli_xstrdup("?");
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        int64_t index = cli_fmt_int(g, "index", (int64_t)i);
        char name[GPU_NAME_WIDTH + 8];
        cli_fmt_sanitize(cli_fmt_str(g, "name", "GPU"), name, sizeof name, false);
        fprintf(f, "%s%" PRId64 " %s", i ? "\n" : "", index, name);
        const json_t *st = gpu_status(heartbeat, index);
        const json_t *util = json_object_get(st, "util");
        if (json_is_number(util)) {
            /* docs/api.md sends a fraction (0.97); a worker that sends percent
             * (97) is shown as it meant. */
            double u = json_number_value(util);
            fprintf(f, " %.0f%%", u <= 1.0 ? u * 100.0 : u);
        }
        const json_t *used = json_object_get(st, "memory_used_mb");
        int64_t total = cli_fmt_int(g, "memory_mb", -1);
        if (json_is_number(used))
            fprintf(f, " %.0f", json_number_value(used));
        if (total >= 0)
            fprintf(f, "%s%" PRId64 " MiB", json_is_number(used) ? "/" : " ", total);
        else if (json_is_number(used))
            fputs(" MiB", f);
    }
    fclose(f);
    return out;
}

static void running_cell(CliTable *t, const json_t *worker)
{
    const json_t *running = json_object_get(worker, "running_trials");
    size_t n = json_array_size(running);
    if (n == 0) {
        cli_table_cell(t, "-");
        return;
    }
    char buf[256];
    size_t o = 0;
    for (size_t i = 0; i < n && i < RUNNING_SHOWN; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%" PRId64, i ? "," : "",
                              (int64_t)json_integer_value(json_array_get(running, i)));
    if (n > RUNNING_SHOWN)
        snprintf(buf + o, sizeof buf - o, " +%zu", n - RUNNING_SHOWN);
    cli_table_cell(t, buf);
}

int cli_cmd_workers(CliHttp *h, int argc, char **argv)
{
    bool as_json = cli_cmd_take_flag(&argc, argv, "--json");
    bool all = cli_cmd_take_flag(&argc, argv, "--all");
    if (argc != 0)
        return CLI_EXIT_USAGE;
    CliError err;
    json_t *items;
    if (cli_cmd_fetch_all(h, all ? "/api/v1/workers?all=true" : "/api/v1/workers", &items, &err) !=
        0)
        return cli_cmd_fail(h, &err);
    if (as_json)
        return cli_cmd_print_list(items);
    if (json_array_size(items) == 0) {
        fputs("no workers registered (start one with: rung-worker --server URL)\n", stderr);
        json_decref(items);
        return CLI_EXIT_OK;
    }
    int64_t now = rung_now_ms();
    CliTable *t = cli_table_new();
    cli_table_column(t, "ID", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "NAME", CLI_ALIGN_LEFT, 24);
    cli_table_column(t, "HOST", CLI_ALIGN_LEFT, 24);
    cli_table_column(t, "STATE", CLI_ALIGN_LEFT, 0);
    cli_table_column(t, "CPUS", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "GPUS", CLI_ALIGN_LEFT, 0);
    cli_table_column(t, "RUNNING", CLI_ALIGN_LEFT, 0);
    cli_table_column(t, "LAST SEEN", CLI_ALIGN_LEFT, 0);
    size_t i;
    json_t *w;
    json_array_foreach(items, i, w) {
        char buf[64];
        cli_table_cellf(t, "%" PRId64, cli_fmt_int(w, "id", 0));
        cli_table_cell(t, cli_fmt_str(w, "name", ""));
        cli_table_cell(t, cli_fmt_str(w, "hostname", ""));
        /* "gone" from daemons that say it; older ones only say alive. */
        cli_table_cell(t,
                       cli_fmt_str(w, "state",
                                   json_is_true(json_object_get(w, "alive")) ? "alive" : "gone"));
        cli_table_cell(t, cli_fmt_value(json_object_get(w, "cpus"), buf, sizeof buf));
        char *gpus = gpus_cell(w);
        cli_table_cell(t, gpus);
        free(gpus);
        running_cell(t, w);
        cli_table_cell(t, cli_fmt_age(cli_fmt_str(w, "last_seen_at", NULL), now, buf, sizeof buf));
    }
    cli_table_print(t, stdout, CLI_TABLE_PLAIN);
    cli_table_free(t);
    json_decref(items);
    return CLI_EXIT_OK;
}
