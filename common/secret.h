/* Reading a bearer token from a file (--token-file of rungd and
 * rung-worker), so that it never shows on a command line, where `ps` and
 * /proc/PID/cmdline show it to every user of the machine. Under systemd the
 * file is a credential (LoadCredential=, docs/operations.md). */
#ifndef RUNG_COMMON_SECRET_H
#define RUNG_COMMON_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/* Longest token read from a file; a hex-encoded 32-byte token is 64. */
#define SECRET_TOKEN_MAX 1024

/* Reads the token in `path` into out (cap bytes, NUL-terminated): the
 * file's text without its trailing newline and blanks. An unreadable file,
 * an empty token, one longer than SECRET_TOKEN_MAX or with a control
 * character or a blank inside is refused, with the reason in why (naming
 * the path). *loose is set when the file can be read by its group or
 * others, which the caller warns about. Returns 0 or -1. */
int secret_read_token(const char *path, char *out, size_t cap, bool *loose, char *why,
                      size_t why_cap);

#endif
