/* Tags and notes (docs/api.md, "Tags and notes"): `rung tag` and `rung
 * note` of an experiment, or of a trial with --trial. A tag change reads
 * the tags and PATCHes the whole new list, so two people tagging the same
 * experiment at the same moment may lose one's change (the API takes the
 * list, not a change to it); each prints what the daemon kept. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "fmt.h"

/* Notes read from stdin are cut here: the daemon refuses more
 * (SPEC_MAX_NOTES, docs/api.md) and says so, naming notes. */
#define NOTES_READ_MAX (65536 + 1)

void cli_cmd_join_tags(const json_t *tags, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(tags) && n + 1 < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "," : "",
                              json_string_value(json_array_get(tags, i)));
    if (n == 0)
        snprintf(buf, size, "-");
}

/* The API path of an experiment or trial. */
static void object_path(bool trial, int64_t id, char *path, size_t size)
{
    snprintf(path, size, "/api/v1/%s/%" PRId64, trial ? "trials" : "experiments", id);
}

static void print_tags(bool trial, int64_t id, const json_t *o)
{
    char raw[4096], shown[4096];
    cli_cmd_join_tags(json_object_get(o, "tags"), raw, sizeof raw);
    cli_fmt_sanitize(raw, shown, sizeof shown, false);
    printf("%s %" PRId64 ": tags %s\n", trial ? "trial" : "experiment", id, shown);
}

/* PATCH of path with body (stolen); *out the object the daemon answers. */
static int patch(CliRest *h, const char *path, json_t *body, json_t **out)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    CliError err;
    int rc = cli_rest_json(h, "PATCH", path, text, text ? strlen(text) : 0, out, &err);
    free(text);
    return rc != 0 ? cli_cmd_fail(h, &err) : CLI_EXIT_OK;
}

/* Index of the string s in the array a, or -1. */
static long find_tag(const json_t *a, const char *s)
{
    for (size_t i = 0; i < json_array_size(a); i++)
        if (strcmp(json_string_value(json_array_get(a, i)), s) == 0)
            return (long)i;
    return -1;
}

int cli_cmd_tag(CliRest *h, int argc, char **argv)
{
    bool trial = cli_cmd_take_flag(&argc, argv, "--trial");
    int64_t id;
    if (argc < 1 || cli_cmd_parse_id("tag", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    object_path(trial, id, path, sizeof path);
    CliError err;
    json_t *o;
    if (cli_rest_json(h, "GET", path, NULL, 0, &o, &err) != 0)
        return cli_cmd_fail(h, &err);
    if (argc == 1) {
        print_tags(trial, id, o);
        json_decref(o);
        return CLI_EXIT_OK;
    }
    json_t *tags = json_deep_copy(json_object_get(o, "tags"));
    json_decref(o);
    if (!json_is_array(tags)) {
        json_decref(tags);
        tags = json_array();
    }
    for (int i = 1; i < argc; i++) {
        /* "+T" and "T" add T (once), "-T" removes it; the daemon checks
         * what a tag may be and names the one it refuses. */
        const char *a = argv[i];
        bool remove = a[0] == '-';
        const char *t = a[0] == '+' || a[0] == '-' ? a + 1 : a;
        long at = find_tag(tags, t);
        if (remove && at >= 0)
            json_array_remove(tags, (size_t)at);
        else if (!remove && at < 0 && json_array_append_new(tags, json_string(t)) != 0) {
            fprintf(stderr, "rung: tag: '%s' is not UTF-8 text\n", "?");
            json_decref(tags);
            return CLI_EXIT_USAGE;
        }
    }
    int rc = patch(h, path, json_pack("{s:o}", "tags", tags), &o);
    if (rc == CLI_EXIT_OK) {
        print_tags(trial, id, o);
        json_decref(o);
    }
    return rc;
}

/* All of stdin, at most NOTES_READ_MAX bytes; NULL when it cannot be read. */
static char *read_stdin(void)
{
    char *buf = cli_xmalloc(NOTES_READ_MAX + 1);
    size_t n = fread(buf, 1, NOTES_READ_MAX, stdin);
    if (ferror(stdin)) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

int cli_cmd_note(CliRest *h, int argc, char **argv)
{
    bool trial = cli_cmd_take_flag(&argc, argv, "--trial");
    int64_t id;
    if (argc < 1 || argc > 2 || cli_cmd_parse_id("note", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    object_path(trial, id, path, sizeof path);
    CliError err;
    json_t *o;
    if (argc == 1) {
        if (cli_rest_json(h, "GET", path, NULL, 0, &o, &err) != 0)
            return cli_cmd_fail(h, &err);
        /* The notes as they are (newlines kept), for a pipe or a pager. */
        const char *notes = cli_fmt_str(o, "notes", "");
        size_t size = strlen(notes) + 1;
        char *shown = cli_xmalloc(size);
        cli_fmt_sanitize(notes, shown, size, true);
        fputs(shown, stdout);
        if (shown[0] != '\0' && shown[strlen(shown) - 1] != '\n')
            putchar('\n');
        free(shown);
        json_decref(o);
        return CLI_EXIT_OK;
    }
    char *text = strcmp(argv[1], "-") == 0 ? read_stdin() : NULL;
    if (strcmp(argv[1], "-") == 0 && text == NULL) {
        fputs("rung: note: cannot read stdin\n", stderr);
        return CLI_EXIT_ERROR;
    }
    json_t *notes = json_string(text ? text : argv[1]);
    free(text);
    if (notes == NULL) {
        fputs("rung: note: the notes must be UTF-8 text\n", stderr);
        return CLI_EXIT_USAGE;
    }
    int rc = patch(h, path, json_pack("{s:o}", "notes", notes), &o);
    if (rc == CLI_EXIT_OK) {
        printf("%s %" PRId64 ": notes set (%zu bytes)\n", trial ? "trial" : "experiment", id,
               strlen(cli_fmt_str(o, "notes", "")));
        json_decref(o);
    }
    return rc;
}
