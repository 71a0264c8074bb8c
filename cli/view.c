/* Shared pieces of `show` and `watch`; see view.h. */
#include "view.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* A parameter value is a short thing; a long string (a path, say) is cut so
 * that one parameter cannot push the metric columns off the screen. */
#define PARAM_WIDTH 16
#define ERROR_WIDTH 48 /* the first line of a trial's error, cut to fit a terminal */
/* A gang's members as worker ids by rank: 64 nodes (spec.c's bound) would
 * take a whole line, so the column is cut; the API's `gang` has them all. */
#define MEMBERS_WIDTH 32

void cli_view_progress(FILE *out, const json_t *exp)
{
    const json_t *counts = json_object_get(exp, "counts");
    int64_t done = cli_fmt_done(counts);
    int64_t total = cli_fmt_total(exp);
    cli_fmt_bar(out, done, total, CLI_VIEW_BAR);
    fprintf(out, " %" PRId64 "/%" PRId64 " trials  ", done, total);
    cli_fmt_counts(out, counts);
    fputc('\n', out);
}

/* Several objectives (docs/api.md, "Several objectives and constraints"):
 * the Pareto front, one trial a line with each objective's value. */
static void view_pareto(FILE *out, const json_t *exp, const json_t *pareto, const char *indent)
{
    const json_t *metrics = json_object_get(exp, "metrics");
    if (json_array_size(pareto) == 0) {
        fprintf(out, "%spareto front: none yet\n", indent);
        return;
    }
    fprintf(out, "%spareto front (%zu trials):\n", indent, json_array_size(pareto));
    size_t i;
    json_t *p;
    json_array_foreach((json_t *)pareto, i, p) {
        fprintf(out, "%s  trial %" PRId64 ":", indent, cli_fmt_int(p, "trial_id", 0));
        size_t k;
        json_t *m;
        json_array_foreach((json_t *)metrics, k, m) {
            char name[CLI_FMT_VALUE_MAX], value[CLI_FMT_VALUE_MAX];
            const char *raw = cli_fmt_str(m, "name", "?");
            cli_fmt_sanitize(raw, name, sizeof name, false);
            fprintf(out, "%s %s %s", k ? "," : "", name,
                    cli_fmt_value(json_object_get(json_object_get(p, "values"), raw), value,
                                  sizeof value));
        }
        char *config = cli_fmt_config(json_object_get(p, "config"));
        fprintf(out, "  config: %s\n", config);
        free(config);
    }
}

void cli_view_best(FILE *out, const json_t *exp, const char *indent)
{
    const json_t *pareto = json_object_get(exp, "pareto");
    if (json_is_array(pareto)) {
        view_pareto(out, exp, pareto, indent);
        return;
    }
    const json_t *best = json_object_get(exp, "best");
    char metric[CLI_FMT_VALUE_MAX];
    cli_fmt_sanitize(cli_fmt_str(exp, "metric", "value"), metric, sizeof metric, false);
    if (!json_is_object(best)) {
        fprintf(out, "%sbest %s: none yet\n", indent, metric);
        return;
    }
    char value[CLI_FMT_VALUE_MAX];
    fprintf(out, "%sbest %s: %s (trial %" PRId64, indent, metric,
            cli_fmt_value(json_object_get(best, "value"), value, sizeof value),
            cli_fmt_int(best, "trial_id", 0));
    int64_t step = cli_fmt_int(best, "step", -1);
    if (step >= 0)
        fprintf(out, ", step %" PRId64, step);
    char *config = cli_fmt_config(json_object_get(best, "config"));
    fprintf(out, ")\n%s  config: %s\n", indent, config);
    free(config);
}

/* The values of the mutated parameters in config: "h_0 0.5, h_1 1". */
static void schedule_values(FILE *out, const json_t *mutations, const json_t *config)
{
    const char *key;
    json_t *v;
    bool first = true;
    json_object_foreach((json_t *)mutations, key, v) {
        char name[CLI_FMT_VALUE_MAX], value[CLI_FMT_VALUE_MAX];
        cli_fmt_sanitize(key, name, sizeof name, false);
        fprintf(out, "%s%s %s", first ? "" : ", ", name,
                cli_fmt_value(json_object_get(config, key), value, sizeof value));
        first = false;
    }
}

void cli_view_schedule(FILE *out, const json_t *exp, const json_t *trial, const char *indent)
{
    const json_t *sched = json_object_get(exp, "scheduler");
    const json_t *mutations = json_object_get(sched, "hyperparam_mutations");
    if (mutations == NULL) /* pb2 */
        mutations = json_object_get(sched, "hyperparam_bounds");
    const json_t *lineage = json_object_get(trial, "lineage");
    if (!json_is_object(mutations) || !json_is_array(lineage))
        return;
    size_t n = json_array_size(lineage);
    fprintf(out, "%sschedule of trial %" PRId64 " (%zu exploit%s):\n", indent,
            cli_fmt_int(trial, "id", 0), n, n == 1 ? "" : "s");
    const json_t *first = n > 0 ? json_object_get(json_array_get(lineage, 0), "from")
                                : json_object_get(trial, "config");
    fprintf(out, "%s  from step 1: ", indent);
    schedule_values(out, mutations, first);
    fputc('\n', out);
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)lineage, i, x) {
        fprintf(out,
                "%s  from step %" PRId64 " (trial %" PRId64 "'s checkpoint of step %" PRId64 "): ",
                indent, cli_fmt_int(x, "step", 0) + 1, cli_fmt_int(x, "donor", 0),
                cli_fmt_int(x, "donor_step", 0));
        schedule_values(out, mutations, json_object_get(x, "config"));
        fputc('\n', out);
    }
}

/* Nested and conditional spaces (docs/api.md, "Nested and conditional
 * spaces") reach 8 levels, and a trial's config is flat with dotted paths of
 * at most 128 bytes; a spec deeper or longer than that was refused. */
#define SPACE_DEPTH_MAX 8
#define SPACE_PATH_MAX 256

static bool is_domain(const json_t *v)
{
    return json_is_object(v) && json_is_string(json_object_get(v, "type"));
}

/* A conditional choice: a choice whose values are objects (its branches). */
static bool is_conditional(const json_t *v)
{
    return is_domain(v) && strcmp(cli_fmt_str(v, "type", ""), "choice") == 0 &&
           json_is_object(json_array_get(json_object_get(v, "values"), 0));
}

/* Walks a (sub-)space in spec order: appends to `cols` each path that gets a
 * column, and marks in `known` every path the spec names. A searched
 * parameter gets a column; so does a constant inside a branch, which tells
 * the branches apart (`opt.name`); other constants are the same in every
 * trial and would only widen the table. Branches may share a name: one
 * column. */
static void space_paths(const json_t *space, const char *prefix, bool in_branch, int depth,
                        json_t *cols, json_t *known)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)space, key, v) {
        char path[SPACE_PATH_MAX];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        bool fresh = json_object_get(known, path) == NULL;
        json_object_set_new(known, path, json_true());
        if (is_conditional(v) && depth < SPACE_DEPTH_MAX) {
            size_t i;
            json_t *branch;
            json_array_foreach(json_object_get(v, "values"), i, branch) {
                if (json_is_object(branch))
                    space_paths(branch, path, true, depth + 1, cols, known);
            }
        } else if (!is_domain(v) && json_is_object(v) && depth < SPACE_DEPTH_MAX) {
            space_paths(v, path, in_branch, depth + 1, cols, known);
        } else if (fresh && (is_domain(v) || in_branch)) {
            json_array_append_new(cols, json_string(path));
        }
    }
}

/* The parameter columns of a trial table: the flattened config keys the
 * shown trials hold, in spec order, then any key the spec does not name;
 * new reference (free with json_decref). */
static json_t *param_columns(const json_t *space, json_t *const *trials, size_t n)
{
    json_t *spec = json_array(), *known = json_object(), *held = json_object();
    json_t *cols = json_array();
    space_paths(space, "", false, 0, spec, known);
    json_t *extra = json_array();
    for (size_t i = 0; i < n; i++) {
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(trials[i], "config"), key, v) {
            if (json_object_get(held, key) != NULL)
                continue;
            json_object_set_new(held, key, json_true());
            if (json_object_get(known, key) == NULL)
                json_array_append_new(extra, json_string(key));
        }
    }
    size_t i;
    json_t *path;
    json_array_foreach(spec, i, path) {
        if (json_object_get(held, json_string_value(path)) != NULL)
            json_array_append(cols, path);
    }
    json_array_extend(cols, extra);
    json_decref(extra);
    json_decref(held);
    json_decref(known);
    json_decref(spec);
    return cols;
}

int64_t cli_view_nodes(const json_t *exp)
{
    return cli_fmt_int(json_object_get(exp, "resources_per_trial"), "nodes", 1);
}

/* "3,4": the worker ids of a running gang trial's members, by rank (its
 * `gang`, docs/api.md); "" when it runs on no gang now. A trial that is not
 * running keeps its last gang for inspection, which names workers that no
 * longer run it, so only a running trial's members are shown. */
static void members_cell(CliTable *t, const json_t *trial)
{
    const json_t *members = json_object_get(json_object_get(trial, "gang"), "members");
    if (strcmp(cli_fmt_str(trial, "state", ""), "running") != 0 || json_array_size(members) == 0) {
        cli_table_cell(t, "");
        return;
    }
    char buf[CLI_FMT_VALUE_MAX * 4] = "";
    size_t o = 0;
    size_t i;
    json_t *m;
    json_array_foreach(members, i, m) {
        int n = snprintf(buf + o, sizeof buf - o, "%s%" PRId64, i ? "," : "",
                         cli_fmt_int(m, "worker_id", 0));
        if (n < 0 || (size_t)n >= sizeof buf - o)
            break; /* the column cuts it long before */
        o += (size_t)n;
    }
    cli_table_cell(t, buf);
}

void cli_view_trials(FILE *out, const json_t *exp, json_t *const *trials, size_t n,
                     CliTableStyle style, size_t more, const char *more_what)
{
    const json_t *space = json_object_get(exp, "search_space");
    /* Several objectives: the first's column (the others are in `last`). */
    const json_t *first = json_array_get(json_object_get(exp, "metrics"), 0);
    const char *metric = first ? cli_fmt_str(first, "name", "value")
                               : cli_fmt_str(exp, "metric", "value");
    const char *time_attr = cli_fmt_str(json_object_get(exp, "scheduler"), "time_attr", "step");
    CliTable *t = cli_table_new();
    cli_table_column(t, "trial", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "state", CLI_ALIGN_LEFT, 0);
    /* Gangs (docs/api.md, "Gangs"): how many workers run each trial, and
     * which run it now; nothing for the 1-node trials of most experiments. */
    bool gang = cli_view_nodes(exp) > 1;
    if (gang) {
        cli_table_column(t, "nodes", CLI_ALIGN_RIGHT, 0);
        cli_table_column(t, "members", CLI_ALIGN_LEFT, MEMBERS_WIDTH);
    }
    /* Columns from the trials' flattened configs: a conditional space's
     * branch parameters each get one, empty where a trial took another
     * branch; a nested space gets one per leaf, never one for the tree. */
    json_t *params = param_columns(space, trials, n);
    size_t k;
    json_t *param;
    json_array_foreach(params, k, param)
        cli_table_column(t, json_string_value(param), CLI_ALIGN_AUTO, PARAM_WIDTH);
    cli_table_column(t, time_attr, CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, metric, CLI_ALIGN_AUTO, 0);
    cli_table_column(t, "best", CLI_ALIGN_AUTO, 0);
    /* Refused @rung lines (a typo in the report line shows here) and the
     * first line of the error: what went wrong, without opening the trial. */
    cli_table_column(t, "warn", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "error", CLI_ALIGN_LEFT, ERROR_WIDTH);
    for (size_t i = 0; i < n; i++) {
        const json_t *tr = trials[i];
        char buf[CLI_FMT_VALUE_MAX];
        cli_table_cellf(t, "%" PRId64, cli_fmt_int(tr, "id", 0));
        cli_table_cell(t, cli_fmt_str(tr, "state", "?"));
        if (gang) {
            cli_table_cellf(t, "%" PRId64, cli_fmt_int(tr, "nodes", cli_view_nodes(exp)));
            members_cell(t, tr);
        }
        const json_t *config = json_object_get(tr, "config");
        json_array_foreach(params, k, param) {
            const json_t *v = json_object_get(config, json_string_value(param));
            cli_table_cell(t, v ? cli_fmt_value(v, buf, sizeof buf) : "");
        }
        cli_table_cell(t, cli_fmt_value(json_object_get(tr, "step"), buf, sizeof buf));
        const json_t *last = json_object_get(json_object_get(tr, "last"), metric);
        cli_table_cell(t, cli_fmt_value(last, buf, sizeof buf));
        const json_t *best = json_object_get(json_object_get(tr, "best"), "value");
        cli_table_cell(t, cli_fmt_value(best, buf, sizeof buf));
        /* Older daemons send no warnings: nothing to count. */
        int64_t warn = cli_fmt_int(json_object_get(tr, "warnings"), "count", 0);
        if (warn > 0)
            cli_table_cellf(t, "%" PRId64, warn);
        else
            cli_table_cell(t, "");
        /* The error in one line with its cause (the exception line);
         * older daemons send only the error: its first line. */
        const char *error = cli_fmt_str(tr, "error_summary", NULL);
        if (error == NULL)
            error = cli_fmt_str(tr, "error", "");
        snprintf(buf, sizeof buf, "%.*s", (int)strcspn(error, "\n"), error);
        cli_table_cell(t, buf);
    }
    cli_table_print(t, out, style);
    cli_table_free(t);
    json_decref(params);
    if (more > 0)
        fprintf(out, "… %zu more%s%s\n", more, more_what ? " " : "", more_what ? more_what : "");
}
