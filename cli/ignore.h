/* Which files of a working directory the clients pack (docs/workers.md,
 * "Running a team's code"): the rules of a `.rungignore` at the folder's
 * top, in .gitignore's syntax, after default rules that leave out what a
 * trial never needs. Pure: patterns and a relative path in, a verdict out;
 * cli/pack.c walks the folder. The Python client (python/rung/_pack.py)
 * implements the same rules, and both pass tests/data/rungignore/cases.json.
 *
 * The syntax, as git's: blank lines and lines starting with '#' are
 * skipped (a leading "\#" or "\!" is literal); trailing spaces are dropped;
 * '!' negates; a trailing '/' matches folders only; a pattern with a '/' at
 * its start or in its middle is anchored at the top, one without matches
 * the name at any depth; '*', '?' and "[...]" (with '!' or '^' to negate)
 * never match '/'; two stars and a slash at the start match in every
 * folder, a slash and two stars at the end everything inside, and slash,
 * two stars, slash between two names zero or more folders; the last rule
 * that matches decides. A file inside a folder
 * left out is left out whatever a later '!' says (the walk never enters
 * the folder), as with git.
 *
 * Default rules, before the file's: `.git/` (never packed, whatever the
 * file says), `__pycache__/`, `*.pyc`, `.venv/`, `venv/`; and a folder
 * holding a `pyvenv.cfg` (a virtualenv) is left out unless a '!' rule
 * names it. */
#ifndef RUNG_CLI_IGNORE_H
#define RUNG_CLI_IGNORE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct CliIgnore CliIgnore;

/* Rules from the text of a .rungignore (may be NULL: the defaults only). */
CliIgnore *cli_ignore_new(const char *text, size_t len);
void cli_ignore_free(CliIgnore *ig);

/* Whether `path` (relative to the top, '/'-separated, no leading "./"; a
 * folder's without its trailing '/') is packed, by the rules alone.
 * is_dir: it is a folder. venv: it is a folder holding a pyvenv.cfg. */
bool cli_ignore_packed(const CliIgnore *ig, const char *path, bool is_dir, bool venv);

/* Whether glob matches str as .gitignore's rules do ('*' and '?' stop at
 * '/', "**" as above); exposed for the tests. */
bool cli_ignore_glob(const char *glob, const char *str);

#endif
