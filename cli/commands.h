/* The commands of `rung`. Each takes the client and the arguments after its
 * name, prints what it has to say, and returns the program's exit status:
 * 0 done, 1 failed (the daemon said no, or could not be reached), 2 bad
 * arguments (main.c then prints the command's usage). */
#ifndef RUNG_CLI_COMMANDS_H
#define RUNG_CLI_COMMANDS_H

#include <stdint.h>

#include "http.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2

int cli_cmd_submit(CliHttp *h, int argc, char **argv);
int cli_cmd_ls(CliHttp *h, int argc, char **argv);
int cli_cmd_show(CliHttp *h, int argc, char **argv);
int cli_cmd_cancel(CliHttp *h, int argc, char **argv);
int cli_cmd_export(CliHttp *h, int argc, char **argv);
int cli_cmd_workers(CliHttp *h, int argc, char **argv);
int cli_cmd_watch(CliHttp *h, int argc, char **argv);

/* An experiment id argument: a positive decimal integer. Prints why not on
 * stderr (naming the command) and returns -1. */
int cli_cmd_parse_id(const char *command, const char *arg, int64_t *id);

/* Every item of a list endpoint, following the paging of docs/api.md (limit,
 * offset, total). path has no query string. *out is a new array. */
int cli_cmd_fetch_all(CliHttp *h, const char *path, json_t **out, CliError *err);

/* Prints err (see cli_error_print) with the client's server; returns 1. */
int cli_cmd_fail(const CliHttp *h, const CliError *err);

#endif
