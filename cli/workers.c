/* `rung workers`: the workers the daemon knows, with their GPUs as the last
 * heartbeat described them: usage, and whether each is spare, held by a
 * trial, busy with other people's work or waiting to be idle long enough
 * (docs/workers.md), and when a worker outside its --hours leases next. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ", trial 17", ", spare", ", busy: others hold 2048 MiB, use 40%",
 * ", waiting": the GPU's state from the heartbeat, when it has one. */
static void gpu_state(FILE *f, const json_t *st)
{
    const char *state = cli_fmt_str(st, "state", NULL);
    if (state == NULL)
        return;
    char text[32];
    cli_fmt_sanitize(state, text, sizeof text, false);
    int64_t mb = cli_fmt_int(st, "foreign_mb", 0);
    const json_t *util = json_object_get(st, "foreign_util");
    double pct = json_is_number(util) ? json_number_value(util) * 100.0 : 0;
    if (strcmp(text, "trial") == 0 && cli_fmt_int(st, "trial_id", 0) > 0)
        fprintf(f, ", trial %" PRId64, cli_fmt_int(st, "trial_id", 0));
    else
        fprintf(f, ", %s", text);
    /* Other people's use: why it is busy, or what a trial shares it with. */
    if (strcmp(text, "busy") == 0 || mb > 0 || pct >= 1)
        fprintf(f, "%sothers hold %" PRId64 " MiB, use %.0f%%",
                strcmp(text, "busy") == 0 ? ": " : " (", mb, pct);
    if (strcmp(text, "busy") != 0 && (mb > 0 || pct >= 1))
        fputc(')', f);
}

/* One line per GPU: "0 NVIDIA H100 97% 40211/81559 MiB, trial 17"; the
 * utilization, memory in use and state only when the last heartbeat
 * carried them. */
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
        gpu_state(f, st);
    }
    fclose(f);
    return out;
}

/* The state cell: alive or gone, and for a worker outside its --hours when
 * it leases next, in local time ("alive\nnext lease Mon 19:00"). */
static void state_cell(CliTable *t, const json_t *w)
{
    /* "gone" from daemons that say it; older ones only say alive. */
    const char *state = cli_fmt_str(w, "state",
                                    json_is_true(json_object_get(w, "alive")) ? "alive" : "gone");
    const json_t *heartbeat = json_object_get(w, "heartbeat");
    int64_t next = cli_fmt_parse_time(cli_fmt_str(heartbeat, "next_lease_at", NULL));
    char when[64];
    struct tm tm;
    time_t secs = (time_t)(next / 1000);
    if (strcmp(state, "alive") != 0 || next <= 0 || localtime_r(&secs, &tm) == NULL ||
        strftime(when, sizeof when, "%a %H:%M", &tm) == 0) {
        cli_table_cell(t, state);
        return;
    }
    cli_table_cellf(t, "%s\nnext lease %s", state, when);
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

int cli_cmd_workers(CliRest *h, int argc, char **argv)
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
        state_cell(t, w);
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
