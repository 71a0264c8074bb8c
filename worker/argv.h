/* A command trainable's argv with the trial's config filled in (docs/api.md: in
 * `argv`, `{name}` is replaced by the parameter's value). Pure.
 *
 * A value is inserted as text: a string raw (no quotes), an integer as an
 * integer, a real with the fewest digits that read back to the same double
 * (17 at most), written the way jansson writes JSON reals ("3.0", "1e-5"),
 * booleans as true/false, null as null, arrays and objects as compact JSON.
 * A placeholder naming no key of the config is left as it is, so a program
 * that takes literal braces ("{}", "{x:1}") still gets them; argv_expand
 * drops instead every entry naming a parameter of a branch the trial did not
 * take (docs/api.md, "Nested and conditional spaces"). */
#ifndef RUNG_WORKER_ARGV_H
#define RUNG_WORKER_ARGV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ARGV_MAX_ARGS 256 /* as the server's SPEC_MAX_ARGV */
#define ARGV_MAX_NAME 128 /* longest parameter path, SPACE_MAX_PATH (docs/api.md) */

/* The text of one value, as above. New string (free with free), NULL when
 * out of memory. */
char *argv_value_text(const json_t *value);

/* arg with every {name} that names a key of config (borrowed) replaced.
 * New string (free with free), NULL when out of memory. */
char *argv_subst(const char *arg, const json_t *config);

/* Whether arg holds a placeholder of a parameter that config (borrowed)
 * lacks: a name shaped like a parameter path ([A-Za-z_][A-Za-z0-9_.-]*, at
 * most ARGV_MAX_NAME bytes) with a dot in it, naming no key of config. rungd
 * refuses at submission a placeholder of that shape naming no parameter, and
 * a parameter missing from a config sits in a branch of a conditional choice,
 * whose path has the choice's name and a dot before it; the gang's
 * placeholders (gang.h) have no dot. */
bool argv_names_inactive(const char *arg, const json_t *config);

/* The whole argv: a NULL-terminated array of new strings (free with
 * argv_free), each entry substituted, the entries for which
 * argv_names_inactive holds left out ("--momentum={opt.momentum}" goes as a
 * whole). NULL when argv is not a non-empty array of at most ARGV_MAX_ARGS
 * strings, or when nothing is left of it, with why (why_size bytes) saying
 * so. */
char **argv_expand(const json_t *argv, const json_t *config, char *why, size_t why_size);

/* Frees what argv_expand made; NULL is fine. */
void argv_free(char **argv);

#endif
