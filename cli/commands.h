/* The commands of `rung`. Each takes the client and the arguments after its
 * name, prints what it has to say, and returns the program's exit status:
 * 0 done, 1 failed (the daemon said no, or could not be reached), 2 bad
 * arguments (main.c then prints the command's usage), 3 the trial that
 * logs --follow followed ended failed or canceled. */
#ifndef RUNG_CLI_COMMANDS_H
#define RUNG_CLI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rest.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_TRIAL_FAILED 3

int cli_cmd_submit(CliRest *h, int argc, char **argv);
int cli_cmd_ls(CliRest *h, int argc, char **argv);
int cli_cmd_show(CliRest *h, int argc, char **argv);
int cli_cmd_cancel(CliRest *h, int argc, char **argv);
int cli_cmd_export(CliRest *h, int argc, char **argv);
int cli_cmd_workers(CliRest *h, int argc, char **argv);
int cli_cmd_watch(CliRest *h, int argc, char **argv);
int cli_cmd_pause(CliRest *h, int argc, char **argv);
int cli_cmd_resume(CliRest *h, int argc, char **argv);
int cli_cmd_extend(CliRest *h, int argc, char **argv);
int cli_cmd_set(CliRest *h, int argc, char **argv);
int cli_cmd_stop_trial(CliRest *h, int argc, char **argv);
int cli_cmd_delete(CliRest *h, int argc, char **argv);
int cli_cmd_retry(CliRest *h, int argc, char **argv);
int cli_cmd_logs(CliRest *h, int argc, char **argv);
int cli_cmd_fetch(CliRest *h, int argc, char **argv);
int cli_cmd_admin(CliRest *h, int argc, char **argv);
int cli_cmd_token(CliRest *h, int argc, char **argv);
int cli_cmd_events(CliRest *h, int argc, char **argv);
int cli_cmd_importance(CliRest *h, int argc, char **argv);
int cli_cmd_tag(CliRest *h, int argc, char **argv);
int cli_cmd_note(CliRest *h, int argc, char **argv);
int cli_cmd_launch(CliRest *h, int argc, char **argv);

/* Prints v as indented JSON on stdout (--json: the API's objects, for
 * scripts); returns the exit status. */
int cli_cmd_print_json(const json_t *v);
/* The same for every item of a list endpoint (stolen) as the API's list
 * object, {"items": [...], "total": N}. */
int cli_cmd_print_list(json_t *items);
/* Takes "--NAME VALUE" out of argv wherever it stands; NULL when absent.
 * *bad is set when the flag has no value. */
const char *cli_cmd_take_value(int *argc, char **argv, const char *name, bool *bad);
/* Appends "&name=value" to q (size bytes) with value percent-encoded:
 * letters, digits and - _ . ~ stay as they are. */
void cli_cmd_add_query(char *q, size_t size, const char *name, const char *value);
/* An experiment's or trial's tags in one line, "a,b" ("-" for none):
 * tags hold no comma (docs/api.md, "Tags and notes"). */
void cli_cmd_join_tags(const json_t *tags, char *buf, size_t size);
/* Takes flag out of argv wherever it stands; whether it was there. */
bool cli_cmd_take_flag(int *argc, char **argv, const char *flag);

/* An experiment id argument: a positive decimal integer. Prints why not on
 * stderr (naming the command) and returns -1. */
int cli_cmd_parse_id(const char *command, const char *arg, int64_t *id);

/* Every item of a list endpoint, following the paging of docs/api.md (limit,
 * offset, total). path has no query string. *out is a new array. */
int cli_cmd_fetch_all(CliRest *h, const char *path, json_t **out, CliError *err);

/* Prints err (see cli_error_print) with the client's server; returns 1. */
int cli_cmd_fail(const CliRest *h, const CliError *err);

#endif
