/* Command-line options from one declarative table: the parser and --help
 * both come from it, so validation and documentation never disagree.
 * Options are `--name VALUE` or `--name=VALUE`; flags take no value. */
#ifndef RUNG_COMMON_OPTIONS_H
#define RUNG_COMMON_OPTIONS_H

#include <stdio.h>

typedef enum { OPT_STRING, OPT_INT, OPT_FLAG } OptKind;

typedef struct Option {
    const char *name; /* without the leading "--" */
    OptKind kind;
    const char *value;        /* strings: the value (default or given); ints: as given; flags:
                                 non-NULL when given */
    long long ival, min, max; /* ints: the value (default or given) and its bounds */
    const char *help;
} Option;

/* Parses argv into opts (n of them). Unknown options, missing values and
 * integers out of bounds print a message naming `prog` and the option to
 * stderr and return -1. --help / -h returns 1 (the caller prints usage);
 * --version prints "prog <version>" to stdout and returns 2 (the caller
 * exits 0). */
int options_parse(const char *prog, Option *opts, int n, int argc, char **argv);

/* Prints one line per option: name, kind, help and default. */
void options_usage(FILE *out, const Option *opts, int n);

#endif
