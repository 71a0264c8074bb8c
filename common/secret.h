/* Reading bearer tokens from a file (--token-file of rungd and
 * rung-worker), so that they never show on a command line, where `ps` and
 * /proc/PID/cmdline show them to every user of the machine. Under systemd
 * the file is a credential (LoadCredential=, docs/operations.md). */
#ifndef RUNG_COMMON_SECRET_H
#define RUNG_COMMON_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/* Longest token read from a file; a hex-encoded 32-byte token is 64. */
#define SECRET_TOKEN_MAX 1024
/* Most tokens one file may hold: rungd's holds the new and the old one
 * while a token is rotated (docs/operations.md, "Rotate the token"). */
#define SECRET_TOKENS_MAX 2

typedef char SecretToken[SECRET_TOKEN_MAX + 1];

/* Reads the tokens in `path`, one per line (blank lines and trailing
 * blanks ignored), into out[0 .. *n - 1]; at most `max` (1 or
 * SECRET_TOKENS_MAX) are allowed. An unreadable file, no token, more than
 * `max`, one longer than SECRET_TOKEN_MAX or with a blank or control
 * character inside is refused with the reason in why, naming the path.
 * *loose is set when the file can be read by its group or others, which
 * the caller warns about. Returns 0 or -1. */
int secret_read_tokens(const char *path, SecretToken *out, int max, int *n, bool *loose, char *why,
                       size_t why_cap);

/* secret_read_tokens for a program's --token-file: a refusal is printed to
 * stderr as "prog: reason", a loose file logged as a warning. Returns 0 or
 * -1 (the program exits 2). */
int secret_load_tokens(const char *prog, const char *path, SecretToken *out, int max, int *n);

#endif
