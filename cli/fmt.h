/* How the rung client writes values for a person.
 *
 * Everything the daemon answers is shown through these helpers, so numbers,
 * configs, times and trial counts read the same in `ls`, `show` and `watch`.
 * Strings that came from the daemon are user input (experiment names, trial
 * errors, parameter values): they pass through cli_fmt_sanitize before they
 * reach a terminal, so a name cannot carry escape sequences that clear the
 * screen or retitle the window. */
#ifndef RUNG_CLI_FMT_H
#define RUNG_CLI_FMT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Room for one formatted scalar: "%.6g" of a double needs at most 13 bytes;
 * strings are cut to fit. */
#define CLI_FMT_VALUE_MAX 128

/* The trial states of docs/api.md, in the order they are shown. */
#define CLI_FMT_N_STATES 8
extern const char *const cli_fmt_states[CLI_FMT_N_STATES];

/* Allocation that cannot fail: only programs exit, and this is a program
 * (an out-of-memory in a command line client has no better answer). */
void *cli_xmalloc(size_t size);
void *cli_xrealloc(void *ptr, size_t size);
char *cli_xstrdup(const char *s);

/* A JSON scalar compactly: numbers as %.6g (integers exactly), strings as
 * they are, true/false, "-" for null or NULL, other values as compact JSON
 * (cut to fit). Writes a NUL-terminated string into buf and returns buf. */
char *cli_fmt_value(const json_t *v, char *buf, size_t size);

/* A double as %.6g. Returns buf. */
char *cli_fmt_number(double v, char *buf, size_t size);

/* "lr=0.001, hidden=256" for a config object; "-" when it is not one.
 * New string (free with free()). */
char *cli_fmt_config(const json_t *config);

/* Parses an RFC 3339 UTC time ("2026-11-21T23:40:02.125Z") into ms since the
 * epoch; -1 when s is NULL or not such a time. */
int64_t cli_fmt_parse_time(const char *s);

/* Compact age of an RFC 3339 time relative to now_ms: "12s ago", "5m ago",
 * "3h ago", "2d ago"; "-" when the time is absent or unreadable. */
char *cli_fmt_age(const char *rfc3339, int64_t now_ms, char *buf, size_t size);

/* A progress bar "[#####.....]" of `width` cells for done out of total. */
void cli_fmt_bar(FILE *out, int64_t done, int64_t total, int width);

/* Trials done (in a terminal state) from an experiment's "counts" object. */
int64_t cli_fmt_done(const json_t *counts);
/* Trials the experiment will have: "total_trials" when the daemon gives it,
 * else the larger of num_samples and the sum of the counts. */
int64_t cli_fmt_total(const json_t *experiment);

/* "4 running, 8 pending, 10 completed" from a counts object: the states with
 * a non-zero count, in cli_fmt_states order; "no trials yet" when all are 0. */
void cli_fmt_counts(FILE *out, const json_t *counts);

/* Copies src into dst (size bytes, always NUL-terminated, cut at a UTF-8
 * boundary) replacing control characters with '?'. A '\n' is kept when
 * keep_newlines, so that table cells can span lines. */
void cli_fmt_sanitize(const char *src, char *dst, size_t size, bool keep_newlines);

/* Display width of UTF-8 text: one column per code point (no wide glyphs
 * appear in what we print besides user names, where this is close enough). */
size_t cli_fmt_width(const char *s, size_t len);

/* Byte length of the longest prefix of s (len bytes) that is at most
 * `cols` columns wide and ends on a code point boundary. */
size_t cli_fmt_prefix(const char *s, size_t len, size_t cols);

/* The member `key` of obj as an int64; def when absent or not an integer. */
int64_t cli_fmt_int(const json_t *obj, const char *key, int64_t def);
/* The member `key` of obj as a string; def when absent or not a string. */
const char *cli_fmt_str(const json_t *obj, const char *key, const char *def);

#endif
