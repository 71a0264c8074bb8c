/* The experiment commands of `rung`: submit, ls, show, cancel, export.
 * Each is one or two requests and a printout; `watch` has its own file. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "commands.h"
#include "fmt.h"
#include "table.h"
#include "view.h"
#include "wandb.h"
#include "workdir.h"
#include "yaml.h"

/* Largest spec file we read: the daemon's default body limit is 1 MiB and
 * it can be raised, so this only guards against reading a disk image by
 * mistake. */
#define SPEC_MAX ((size_t)64 << 20)
/* Page size of list requests: docs/api.md's maximum, so a listing takes the
 * fewest round trips. */
#define PAGE 1000
/* Trials `show` lists: the best ones; `export` has them all. */
#define TAGS_WIDTH 32 /* ls: the TAGS column, cut with "…" beyond */
#define SHOW_TRIALS 20
/* Longest experiment name shown in `ls`: the rest is in `show`. */
#define NAME_WIDTH 32

int cli_cmd_parse_id(const char *command, const char *arg, int64_t *id)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || v <= 0) {
        char shown[64];
        cli_fmt_sanitize(arg, shown, sizeof shown, false);
        fprintf(stderr, "rung: %s: ID must be a positive integer, got '%s'\n", command, shown);
        return -1;
    }
    *id = v;
    return 0;
}

int cli_cmd_fail(const CliRest *h, const CliError *err)
{
    cli_error_print(err, h ? cli_rest_server(h) : NULL);
    return CLI_EXIT_ERROR;
}

/* Reads all of f (at most SPEC_MAX bytes) into a new buffer. */
static int read_all(FILE *f, const char *name, char **out, size_t *out_len, CliError *err)
{
    size_t cap = 64 * 1024, len = 0;
    char *buf = cli_xmalloc(cap);
    for (;;) {
        if (len == cap) {
            if (cap >= SPEC_MAX) {
                free(buf);
                return cli_error_local(err, "%s: larger than %zu MiB; is it a spec?", name,
                                       SPEC_MAX >> 20);
            }
            cap *= 2;
            buf = cli_xrealloc(buf, cap);
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                int e = errno;
                free(buf);
                return cli_error_local(err, "cannot read %s: %s", name, strerror(e));
            }
            break;
        }
    }
    *out = buf;
    *out_len = len;
    return 0;
}

/* Whether path names a YAML spec: its name ends in .yaml or .yml, in any
 * case (docs/api.md, "Command lines"); anything else, stdin included, is
 * JSON unless `--yaml` says otherwise. */
static bool yaml_name(const char *path)
{
    size_t n = strlen(path);
    return (n > 5 && strcasecmp(path + n - 5, ".yaml") == 0) ||
           (n > 4 && strcasecmp(path + n - 4, ".yml") == 0);
}

/* What `rung submit` adds to a W&B sweep: --num-samples, --name. */
typedef struct {
    const char *num_samples; /* NULL: the sweep's run_cap */
    const char *name;        /* NULL: the sweep's name, else the file's stem */
    bool was_sweep;          /* set by load_spec: the file was a W&B sweep */
} SweepArgs;

/* The file name of path without its folder and extension. */
static void file_stem(const char *path, char *out, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    snprintf(out, size, "%.*s", (int)n, base);
}

/* A W&B sweep (doc, replaced) as a Rung spec, as python/rung/convert.py's
 * from_wandb makes one (python/README.md, "Coming from W&B"): the program
 * runs in the sweep file's folder, where W&B's agent would find it. */
static int sweep_to_spec(const char *path, json_t **doc, SweepArgs *sa, CliError *err)
{
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    char why[1024], text[1024];
    json_t *spec = cli_wandb_to_spec(*doc, why, sizeof why);
    json_decref(*doc);
    *doc = spec;
    if (spec == NULL) {
        cli_fmt_sanitize(why, text, sizeof text, false);
        return cli_error_local(err, "%s: a W&B sweep Rung cannot run: %s", name, text);
    }
    if (json_object_get(spec, "trainable") == NULL)
        return cli_error_local(err,
                               "%s: program: the sweep has no program or command to run; "
                               "add one",
                               name);
    if (json_object_get(spec, "metric") == NULL)
        return cli_error_local(err,
                               "%s: metric: the sweep has none and Rung needs one: add "
                               "metric: {name: ..., goal: minimize}",
                               name);
    if (sa->num_samples != NULL) {
        char *end;
        long long n = strtoll(sa->num_samples, &end, 10);
        if (*end != '\0' || n < 1 || sa->num_samples[0] == '\0')
            return cli_error_local(err, "--num-samples: a positive integer, not '%.40s'",
                                   sa->num_samples);
        json_object_set_new(spec, "num_samples", json_integer(n));
    }
    if (json_object_get(spec, "num_samples") == NULL)
        return cli_error_local(err,
                               "%s: run_cap: W&B's random and bayes searches run until "
                               "stopped, a Rung search has a size: add run_cap to the "
                               "sweep, or pass --num-samples N",
                               name);
    char stem[256];
    file_stem(name, stem, sizeof stem);
    const char *exp_name = sa->name ? sa->name : json_string_value(json_object_get(spec, "name"));
    json_object_set_new(spec, "name", json_string(exp_name ? exp_name : stem));
    char *dir = strcmp(path, "-") == 0 ? NULL : realpath(path, NULL);
    if (dir != NULL) {
        char *slash = strrchr(dir, '/');
        if (slash != NULL)
            slash[slash == dir ? 1 : 0] = '\0';
        json_object_set_new(json_object_get(spec, "trainable"), "cwd", json_string(dir));
        free(dir);
    }
    sa->was_sweep = true;
    return 0;
}

/* Reads and checks a spec file ("-" for stdin): it must be one JSON object
 * without duplicate keys (with duplicates, which one wins is up to the
 * parser, so a typo'd override would pass silently). The bytes of a JSON
 * spec are sent as they are, so the daemon sees exactly what the user
 * wrote; a YAML spec (yaml: true) is turned into JSON by cli/yaml.c, which
 * refuses duplicates too, and sent as compact JSON. A W&B sweep file (YAML
 * read again in W&B mode, cli/yaml.h) is converted by cli/wandb.c and sent
 * as compact JSON too. */
static int load_spec(const char *path, bool yaml, SweepArgs *sa, char **body, size_t *len,
                     CliError *err)
{
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL)
        return cli_error_local(err, "cannot open %s: %s", name, strerror(errno));
    int rc = read_all(f, name, body, len, err);
    if (f != stdin)
        fclose(f);
    if (rc != 0)
        return rc;
    json_t *doc;
    if (yaml) {
        char why[512], text[512];
        doc = cli_yaml_to_json(*body, *len, why, sizeof why);
        /* W&B reads its sweep files as PyYAML does: read such a file again
         * in W&B mode (cli/yaml.h). */
        if (doc != NULL && cli_wandb_is_sweep(doc)) {
            json_decref(doc);
            doc = cli_yaml_read(*body, *len, CLI_YAML_WANDB, why, sizeof why);
        }
        free(*body);
        *body = NULL;
        if (doc == NULL) {
            cli_fmt_sanitize(why, text, sizeof text, false);
            return cli_error_local(err, "%s: %s", name, text);
        }
    } else {
        json_error_t jerr;
        doc = json_loadb(*body, *len, JSON_REJECT_DUPLICATES, &jerr);
        if (doc == NULL) {
            free(*body);
            *body = NULL;
            char text[sizeof jerr.text];
            cli_fmt_sanitize(jerr.text, text, sizeof text, false);
            if (jerr.line > 0)
                return cli_error_local(err, "%s:%d:%d: invalid JSON: %s", name, jerr.line,
                                       jerr.column, text);
            return cli_error_local(err, "%s: invalid JSON: %s", name, text);
        }
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        free(*body);
        *body = NULL;
        return cli_error_local(err, "%s: a spec must be a JSON object ({...})", name);
    }
    if (cli_wandb_is_sweep(doc)) {
        free(*body);
        *body = NULL;
        if (sweep_to_spec(path, &doc, sa, err) != 0) {
            json_decref(doc);
            return -1;
        }
        yaml = true; /* sent as compact JSON */
    } else if (sa->num_samples != NULL || sa->name != NULL) {
        json_decref(doc);
        free(*body);
        *body = NULL;
        return cli_error_local(err, "--num-samples and --name are for W&B sweep files; a "
                                    "spec gives num_samples and name itself");
    }
    if (yaml) {
        *body = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        if (*body == NULL)
            return cli_error_local(err, "%s: out of memory", name);
        *len = strlen(*body);
        return 0;
    }
    json_decref(doc);
    return 0;
}

/* Whether rungd's error names a field of W&B's sweeps that no spec has. */
static bool wandb_field(const char *field)
{
    return strcmp(field, "program") == 0 || strcmp(field, "method") == 0 ||
           strcmp(field, "parameters") == 0 || strcmp(field, "command") == 0 ||
           strcmp(field, "early_terminate") == 0 || strcmp(field, "run_cap") == 0;
}

int cli_cmd_submit(CliRest *h, int argc, char **argv)
{
    bool quiet = false, yaml = false;
    const char *path = NULL, *working_dir = NULL;
    SweepArgs sa = {0};
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0)
            quiet = true;
        else if (strcmp(argv[i], "--num-samples") == 0 && i + 1 < argc)
            sa.num_samples = argv[++i];
        else if (strncmp(argv[i], "--num-samples=", 14) == 0)
            sa.num_samples = argv[i] + 14;
        else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
            sa.name = argv[++i];
        else if (strncmp(argv[i], "--name=", 7) == 0)
            sa.name = argv[i] + 7;
        else if (strcmp(argv[i], "--working-dir") == 0 && i + 1 < argc)
            working_dir = argv[++i];
        else if (strncmp(argv[i], "--working-dir=", 14) == 0)
            working_dir = argv[i] + 14;
        else if (strcmp(argv[i], "--yaml") == 0)
            yaml = true;
        else if (path == NULL && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0))
            path = argv[i];
        else
            return CLI_EXIT_USAGE;
    }
    if (path == NULL)
        return CLI_EXIT_USAGE;
    CliError err;
    char *body = NULL;
    size_t len = 0;
    if (load_spec(path, yaml || yaml_name(path), &sa, &body, &len, &err) != 0)
        return cli_cmd_fail(h, &err);
    /* A local working directory travels as a blob (workdir.h). */
    json_t *doc = json_loadb(body, len, 0, NULL);
    const char *given =
        json_string_value(json_object_get(json_object_get(doc, "trainable"), "working_dir"));
    if (working_dir != NULL || (given != NULL && strncmp(given, "sha256:", 7) != 0)) {
        int wrc = cli_workdir_attach(h, doc, working_dir, path, quiet ? stderr : stdout, &err);
        free(body);
        body = wrc == 0 ? json_dumps(doc, JSON_COMPACT) : NULL;
        json_decref(doc);
        if (wrc != 0)
            return cli_cmd_fail(h, &err);
        len = body ? strlen(body) : 0;
    } else {
        json_decref(doc);
    }
    json_t *exp;
    int rc = cli_rest_json(h, "POST", "/api/v1/experiments", body, len, &exp, &err);
    free(body);
    if (rc != 0) {
        int code = cli_cmd_fail(h, &err);
        if (!sa.was_sweep && wandb_field(err.field))
            fputs("rung: a W&B sweep file? `rung submit` converts one that has method and "
                  "parameters at the top level (python/README.md, \"Coming from W&B\")\n",
                  stderr);
        return code;
    }
    int64_t id = cli_fmt_int(exp, "id", 0);
    if (quiet) {
        printf("%" PRId64 "\n", id);
    } else {
        char name[256];
        cli_fmt_sanitize(cli_fmt_str(exp, "name", "(unnamed)"), name, sizeof name, false);
        int64_t total = cli_fmt_total(exp);
        printf("experiment %" PRId64 " submitted: %s, %" PRId64 " trial%s\n", id, name, total,
               total == 1 ? "" : "s");
    }
    json_decref(exp);
    return CLI_EXIT_OK;
}

int cli_cmd_fetch_all(CliRest *h, const char *path, json_t **out, CliError *err)
{
    json_t *all = json_array();
    for (int64_t offset = 0;;) {
        char url[512];
        snprintf(url, sizeof url, "%s%climit=%d&offset=%" PRId64, path,
                 strchr(path, '?') ? '&' : '?', PAGE, offset);
        json_t *page;
        if (cli_rest_json(h, "GET", url, NULL, 0, &page, err) != 0) {
            json_decref(all);
            return -1;
        }
        json_t *items = json_object_get(page, "items");
        int64_t total = cli_fmt_int(page, "total", 0);
        size_t n = json_array_size(items);
        json_array_extend(all, items);
        json_decref(page);
        offset += (int64_t)n;
        if (n == 0 || offset >= total)
            break;
    }
    *out = all;
    return 0;
}

int cli_cmd_print_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text == NULL)
        return CLI_EXIT_ERROR;
    puts(text);
    free(text);
    return CLI_EXIT_OK;
}

int cli_cmd_print_list(json_t *items)
{
    json_t *list = json_pack("{s:o, s:I}", "items", items, "total",
                             (json_int_t)json_array_size(items));
    int rc = cli_cmd_print_json(list);
    json_decref(list);
    return rc;
}

bool cli_cmd_take_flag(int *argc, char **argv, const char *flag)
{
    for (int i = 0; i < *argc; i++) {
        if (strcmp(argv[i], flag) == 0) {
            memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i - 1) * sizeof *argv);
            (*argc)--;
            return true;
        }
    }
    return false;
}

int cli_cmd_ls(CliRest *h, int argc, char **argv)
{
    bool as_json = cli_cmd_take_flag(&argc, argv, "--json");
    bool bad = false;
    const char *tag = cli_cmd_take_value(&argc, argv, "--tag", &bad);
    if (argc != 0 || bad)
        return CLI_EXIT_USAGE;
    CliError err;
    json_t *items;
    /* --tag T: the daemon filters (docs/api.md, "?tag="). */
    char path[512] = "/api/v1/experiments";
    if (tag != NULL) {
        char q[400] = "";
        cli_cmd_add_query(q, sizeof q, "tag", tag);
        snprintf(path, sizeof path, "/api/v1/experiments?%s", q + 1);
    }
    if (cli_cmd_fetch_all(h, path, &items, &err) != 0)
        return cli_cmd_fail(h, &err);
    if (as_json)
        return cli_cmd_print_list(items);
    if (json_array_size(items) == 0 && tag != NULL) {
        fputs("no experiment has this tag\n", stderr);
        json_decref(items);
        return CLI_EXIT_OK;
    }
    if (json_array_size(items) == 0) {
        fputs("no experiments yet (submit one with: rung submit SPEC.json)\n", stderr);
        json_decref(items);
        return CLI_EXIT_OK;
    }
    int64_t now = rung_now_ms();
    CliTable *t = cli_table_new();
    cli_table_column(t, "ID", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "NAME", CLI_ALIGN_LEFT, NAME_WIDTH);
    cli_table_column(t, "STATE", CLI_ALIGN_LEFT, 0);
    cli_table_column(t, "DONE", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "BEST", CLI_ALIGN_RIGHT, 0);
    cli_table_column(t, "METRIC", CLI_ALIGN_LEFT, 0);
    cli_table_column(t, "SEARCHER", CLI_ALIGN_LEFT, 0);
    cli_table_column(t, "CREATED", CLI_ALIGN_LEFT, 0);
    cli_table_column(t, "TAGS", CLI_ALIGN_LEFT, TAGS_WIDTH);
    size_t i;
    json_t *x;
    json_array_foreach(items, i, x) {
        char buf[CLI_FMT_VALUE_MAX];
        cli_table_cellf(t, "%" PRId64, cli_fmt_int(x, "id", 0));
        cli_table_cell(t, cli_fmt_str(x, "name", ""));
        cli_table_cell(t, cli_fmt_str(x, "state", "?"));
        cli_table_cellf(t, "%" PRId64 "/%" PRId64, cli_fmt_done(json_object_get(x, "counts")),
                        cli_fmt_total(x));
        cli_table_cell(t, cli_fmt_value(json_object_get(json_object_get(x, "best"), "value"), buf,
                                        sizeof buf));
        const json_t *first = json_array_get(json_object_get(x, "metrics"), 0);
        if (first != NULL) /* several objectives: the first, and how many */
            cli_table_cellf(t, "%s (%s) +%zu", cli_fmt_str(first, "name", "?"),
                            cli_fmt_str(first, "mode", "?"),
                            json_array_size(json_object_get(x, "metrics")) - 1);
        else
            cli_table_cellf(t, "%s (%s)", cli_fmt_str(x, "metric", "?"),
                            cli_fmt_str(x, "mode", "?"));
        cli_table_cell(t, cli_fmt_str(json_object_get(x, "searcher"), "type", "random"));
        cli_table_cell(t, cli_fmt_age(cli_fmt_str(x, "created_at", NULL), now, buf, sizeof buf));
        cli_cmd_join_tags(json_object_get(x, "tags"), buf, sizeof buf);
        cli_table_cell(t, buf);
    }
    cli_table_print(t, stdout, CLI_TABLE_PLAIN);
    cli_table_free(t);
    json_decref(items);
    return CLI_EXIT_OK;
}

/* "bayes (seed 1, n_initial 10)": an object's type and its other members. */
static void describe(FILE *out, const json_t *obj, const char *def)
{
    if (!json_is_object(obj)) {
        char buf[CLI_FMT_VALUE_MAX];
        fputs(obj ? cli_fmt_value(obj, buf, sizeof buf) : def, out);
        return;
    }
    char buf[CLI_FMT_VALUE_MAX], key[CLI_FMT_VALUE_MAX];
    fputs(cli_fmt_value(json_object_get(obj, "type"), buf, sizeof buf), out);
    const char *sep = " (";
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (strcmp(k, "type") == 0)
            continue;
        cli_fmt_sanitize(k, key, sizeof key, false);
        fprintf(out, "%s%s %s", sep, key, cli_fmt_value(v, buf, sizeof buf));
        sep = ", ";
    }
    if (sep[0] == ',')
        fputc(')', out);
}


/* pbt, pb2: the best member's schedule (its trial object has the lineage). */
static void show_schedule(CliRest *h, const json_t *x)
{
    const char *type = cli_fmt_str(json_object_get(x, "scheduler"), "type", "");
    int64_t best = cli_fmt_int(json_object_get(x, "best"), "trial_id", 0);
    if ((strcmp(type, "pbt") != 0 && strcmp(type, "pb2") != 0) || best <= 0)
        return;
    char path[96];
    snprintf(path, sizeof path, "/api/v1/trials/%" PRId64, best);
    json_t *t;
    CliError err;
    if (cli_rest_json(h, "GET", path, NULL, 0, &t, &err) != 0)
        return; /* the rest of show stands without it */
    cli_view_schedule(stdout, x, t, "");
    json_decref(t);
}

/* "cpu 1, gpu 0" per trial; for a gang (docs/api.md, "Gangs") "2 nodes,
 * each cpu 1, gpu 0 (gang_wait_s 60)". */
static void show_resources(FILE *out, const json_t *exp)
{
    const json_t *r = json_object_get(exp, "resources_per_trial");
    int64_t nodes = cli_view_nodes(exp);
    if (nodes > 1)
        fprintf(out, "%" PRId64 " nodes, each ", nodes);
    fprintf(out, "cpu %" PRId64 ", gpu %" PRId64, cli_fmt_int(r, "cpu", 1),
            cli_fmt_int(r, "gpu", 0));
    char wait[CLI_FMT_VALUE_MAX];
    if (nodes > 1) /* a number of seconds, not always whole */
        fprintf(out, " (gang_wait_s %s)",
                cli_fmt_value(json_object_get(r, "gang_wait_s"), wait, sizeof wait));
    fputc('\n', out);
}

static void show_time(FILE *out, const char *label, const char *rfc3339, int64_t now)
{
    char age[64];
    if (rfc3339 == NULL) {
        fprintf(out, "  %-12s-\n", label);
        return;
    }
    char shown[64];
    cli_fmt_sanitize(rfc3339, shown, sizeof shown, false);
    fprintf(out, "  %-12s%s (%s)\n", label, shown, cli_fmt_age(rfc3339, now, age, sizeof age));
}

/* Tags on a line, notes on as many as they have, each indented under
 * the labels (docs/api.md, "Tags and notes"). */
static void show_meta(FILE *out, const json_t *x)
{
    char raw[4096], shown[4096];
    cli_cmd_join_tags(json_object_get(x, "tags"), raw, sizeof raw);
    cli_fmt_sanitize(raw, shown, sizeof shown, false);
    fprintf(out, "  %-12s%s\n", "tags:", shown);
    const char *notes = cli_fmt_str(x, "notes", "");
    if (notes[0] == '\0')
        return;
    size_t size = strlen(notes) + 1;
    char *text = cli_xmalloc(size);
    cli_fmt_sanitize(notes, text, size, true);
    fprintf(out, "  %-12s", "notes:");
    for (const char *p = text; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(out, "%s%.*s\n", p == text ? "" : "              ", len, p);
        p += len + (nl != NULL);
    }
    free(text);
}

int cli_cmd_show(CliRest *h, int argc, char **argv)
{
    int64_t id;
    bool as_json = cli_cmd_take_flag(&argc, argv, "--json");
    if (argc != 1)
        return CLI_EXIT_USAGE;
    if (cli_cmd_parse_id("show", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    CliError err;
    char path[128];
    json_t *x, *page;
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64, id);
    if (cli_rest_json(h, "GET", path, NULL, 0, &x, &err) != 0)
        return cli_cmd_fail(h, &err);
    if (as_json) { /* the API's experiment object */
        int rc = cli_cmd_print_json(x);
        json_decref(x);
        return rc;
    }
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/trials?sort=value&limit=%d", id,
             SHOW_TRIALS);
    if (cli_rest_json(h, "GET", path, NULL, 0, &page, &err) != 0) {
        json_decref(x);
        return cli_cmd_fail(h, &err);
    }
    int64_t now = rung_now_ms();
    char name[256], buf[CLI_FMT_VALUE_MAX];
    cli_fmt_sanitize(cli_fmt_str(x, "name", ""), name, sizeof name, false);
    printf("experiment %" PRId64 ": %s\n", id, name);
    printf("  %-12s%s", "state:", cli_fmt_str(x, "state", "?"));
    const char *why = cli_fmt_str(x, "ended_reason", NULL);
    if (why != NULL && strcmp(why, cli_fmt_str(x, "state", "")) != 0) {
        cli_fmt_sanitize(why, buf, sizeof buf, false);
        printf(" (%s)", buf);
    }
    putchar('\n');
    const char *error = cli_fmt_str(x, "error", NULL);
    if (error != NULL) {
        char text[1024];
        cli_fmt_sanitize(error, text, sizeof text, false);
        printf("  %-12s%s\n", "error:", text);
    }
    show_meta(stdout, x);
    const json_t *objectives = json_object_get(x, "metrics");
    if (json_is_array(objectives)) {
        /* Several objectives and constraints (docs/api.md). */
        printf("  %-12s", "metrics:");
        size_t k;
        json_t *m;
        json_array_foreach(objectives, k, m) {
            cli_fmt_sanitize(cli_fmt_str(m, "name", "?"), buf, sizeof buf, false);
            printf("%s%s (%s)", k ? ", " : "", buf, cli_fmt_str(m, "mode", "?"));
        }
        putchar('\n');
    } else {
        cli_fmt_sanitize(cli_fmt_str(x, "metric", "?"), buf, sizeof buf, false);
        printf("  %-12s%s (%s)\n", "metric:", buf, cli_fmt_str(x, "mode", "?"));
    }
    const json_t *constraints = json_object_get(x, "constraints");
    if (json_is_array(constraints)) {
        printf("  %-13s", "constraints:"); /* one wider than the other labels */
        size_t k;
        json_t *c;
        json_array_foreach(constraints, k, c) {
            char lo[CLI_FMT_VALUE_MAX], hi[CLI_FMT_VALUE_MAX];
            cli_fmt_sanitize(cli_fmt_str(c, "metric", "?"), buf, sizeof buf, false);
            const json_t *min = json_object_get(c, "min"), *max = json_object_get(c, "max");
            printf("%s%s%s%s%s%s", k ? ", " : "", min ? cli_fmt_value(min, lo, sizeof lo) : "",
                   min ? " <= " : "", buf, max ? " <= " : "",
                   max ? cli_fmt_value(max, hi, sizeof hi) : "");
        }
        putchar('\n');
    }
    printf("  %-12s", "searcher:");
    describe(stdout, json_object_get(x, "searcher"), "random");
    printf("\n  %-12s", "scheduler:");
    describe(stdout, json_object_get(x, "scheduler"), "fifo");
    printf("\n  %-12s", "trainable:");
    describe(stdout, json_object_get(x, "trainable"), "-");
    printf("\n  %-12s", "resources:");
    show_resources(stdout, x);
    printf("  %-12s%" PRId64 " (%" PRId64 " trials in all)\n",
           "samples:", cli_fmt_int(x, "num_samples", 1), cli_fmt_total(x));
    show_time(stdout, "created:", cli_fmt_str(x, "created_at", NULL), now);
    show_time(stdout, "ended:", cli_fmt_str(x, "ended_at", NULL), now);
    printf("  %-12s", "progress:");
    cli_view_progress(stdout, x);
    printf("  search space:\n");
    const char *param;
    json_t *domain;
    json_object_foreach(json_object_get(x, "search_space"), param, domain) {
        cli_fmt_sanitize(param, buf, sizeof buf, false);
        printf("    %-14s", buf);
        if (json_is_object(domain) && json_object_get(domain, "type"))
            describe(stdout, domain, "");
        else
            printf("%s (constant)", cli_fmt_value(domain, buf, sizeof buf));
        putchar('\n');
    }
    cli_view_best(stdout, x, "");
    show_schedule(h, x);
    json_t *items = json_object_get(page, "items");
    size_t n = json_array_size(items);
    int64_t total = cli_fmt_int(page, "total", (int64_t)n);
    if (n > 0) {
        json_t **rows = cli_xmalloc(n * sizeof *rows);
        for (size_t i = 0; i < n; i++)
            rows[i] = json_array_get(items, i);
        /* With several objectives a trial's best value is its first
         * objective's (docs/api.md, the trials' sort=value). */
        const json_t *first = json_array_get(json_object_get(x, "metrics"), 0);
        cli_fmt_sanitize(first ? cli_fmt_str(first, "name", "value")
                               : cli_fmt_str(x, "metric", "value"),
                         buf, sizeof buf, false);
        printf("\ntrials (%s%zu of %" PRId64 ", by best %s):\n", (int64_t)n < total ? "first " : "",
               n, total, buf);
        cli_view_trials(stdout, x, rows, n, CLI_TABLE_PLAIN, 0, NULL);
        free(rows);
    } else {
        printf("\nno trials yet\n");
    }
    json_decref(page);
    json_decref(x);
    return CLI_EXIT_OK;
}

int cli_cmd_cancel(CliRest *h, int argc, char **argv)
{
    int64_t id;
    if (argc != 1)
        return CLI_EXIT_USAGE;
    if (cli_cmd_parse_id("cancel", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    CliError err;
    char path[128];
    json_t *x;
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/cancel", id);
    if (cli_rest_json(h, "POST", path, NULL, 0, &x, &err) != 0)
        return cli_cmd_fail(h, &err);
    printf("experiment %" PRId64 ": %s (", id, cli_fmt_str(x, "state", "?"));
    cli_fmt_counts(stdout, json_object_get(x, "counts"));
    printf(")\n");
    int64_t running = cli_fmt_int(json_object_get(x, "counts"), "running", 0);
    if (running > 0)
        printf("%" PRId64 " running trial%s will stop at their next report\n", running,
               running == 1 ? "" : "s");
    json_decref(x);
    return CLI_EXIT_OK;
}

/* Rows of a CSV text (RFC 4180: a newline inside quotes is not a row end). */
static size_t csv_rows(const char *s, size_t len)
{
    size_t rows = 0;
    bool quoted = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"')
            quoted = !quoted;
        else if (s[i] == '\n' && !quoted)
            rows++;
    }
    if (len > 0 && s[len - 1] != '\n')
        rows++;
    return rows;
}

int cli_cmd_export(CliRest *h, int argc, char **argv)
{
    const char *id_arg = NULL, *file = NULL;
    for (int i = 0; i < argc; i++) {
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc)
            file = argv[++i];
        else if (strncmp(argv[i], "--output=", 9) == 0)
            file = argv[i] + 9;
        else if (id_arg == NULL && argv[i][0] != '-')
            id_arg = argv[i];
        else
            return CLI_EXIT_USAGE;
    }
    int64_t id;
    if (id_arg == NULL || (file != NULL && file[0] == '\0'))
        return CLI_EXIT_USAGE;
    if (cli_cmd_parse_id("export", id_arg, &id) != 0)
        return CLI_EXIT_USAGE;
    CliError err;
    CliReply reply;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/trials.csv", id);
    if (cli_rest_request(h, "GET", path, NULL, 0, &reply, &err) != 0)
        return cli_cmd_fail(h, &err);
    /* The file is opened only once the CSV is here, so a failed request
     * never truncates an earlier export. */
    bool to_stdout = file == NULL || strcmp(file, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(file, "wb");
    if (out == NULL) {
        cli_error_local(&err, "cannot write %s: %s", file, strerror(errno));
        cli_rest_reply_free(&reply);
        return cli_cmd_fail(h, &err);
    }
    size_t wrote = fwrite(reply.body, 1, reply.len, out);
    int closed = to_stdout ? fflush(out) : fclose(out);
    if (wrote != reply.len || closed != 0) {
        cli_error_local(&err, "cannot write %s: %s", to_stdout ? "stdout" : file, strerror(errno));
        cli_rest_reply_free(&reply);
        return cli_cmd_fail(h, &err);
    }
    if (!to_stdout) {
        size_t rows = csv_rows(reply.body, reply.len);
        rows = rows > 0 ? rows - 1 : 0; /* the header */
        printf("exported %zu trial%s of experiment %" PRId64 " to %s\n", rows, rows == 1 ? "" : "s",
               id, file);
    }
    cli_rest_reply_free(&reply);
    return CLI_EXIT_OK;
}
