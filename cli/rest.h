/* The rung client's only way to the daemon: requests over libcurl.
 *
 * One CliRest holds one curl handle (reused, so `watch` keeps its
 * connection alive between polls), the daemon's base URL and the token.
 * A request either succeeds with a 2xx reply or fills a CliError that says
 * which of three things went wrong: the daemon could not be reached (worth
 * retrying: it may be restarting), it answered with an docs/api.md error (its
 * code, message and field), or its reply made no sense. cli_error_print
 * writes every error the same way, so scripts and people see one format. */
#ifndef RUNG_CLI_REST_H
#define RUNG_CLI_REST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "transport.h"

/* Longest base URL we accept: a host, a port and a path prefix. */
#define CLI_URL_MAX 1024
/* Longest token: it goes into one header line. */
#define CLI_TOKEN_MAX 4096

typedef enum {
    CLI_ERR_NONE = 0,
    CLI_ERR_CONNECT, /* no HTTP answer: refused, timed out, reset, unresolved */
    CLI_ERR_API,     /* an HTTP error answer (docs/api.md error shape when it has one) */
    CLI_ERR_REPLY,   /* a 2xx answer that is not what the API promises */
    CLI_ERR_LOCAL,   /* on this side: a file, an argument, memory */
} CliErrorKind;

typedef struct CliError {
    CliErrorKind kind;
    long status;                /* HTTP status; 0 when there was no answer */
    char code[48];              /* API code ("invalid_spec"), "" when none */
    char field[RUNG_FIELD_MAX]; /* API field, "" when none */
    char message[1024];         /* for a person; already sanitized */
} CliError;

typedef struct CliReply {
    long status; /* the 2xx status */
    char *body;  /* NUL-terminated (a NUL inside is the daemon's problem) */
    size_t len;  /* bytes in body, without the terminator */
} CliReply;

typedef struct CliRest CliRest;

/* Checks server and token and makes a client (free with cli_rest_free).
 * server may omit "http://". Returns NULL and fills err (CLI_ERR_LOCAL) on a
 * bad URL or a token with characters a header cannot carry. */
CliRest *cli_rest_new(const char *server, const char *token, CliError *err);
/* Accepts NULL. */
void cli_rest_free(CliRest *h);
/* How https:// servers are verified (copied; common/transport.h). */
void cli_rest_set_transport(CliRest *h, const RungTransport *t);
/* The normalized base URL, without a trailing '/'. Borrowed. */
const char *cli_rest_server(const CliRest *h);

/* One request. method is any HTTP method (GET, POST, PATCH, DELETE: every
 * one but GET sends body, an empty one when NULL). body (len bytes, may be
 * NULL) is sent as JSON. On a 2xx
 * answer fills reply (free with cli_rest_reply_free) and returns 0; else
 * fills err and returns -1, leaving reply empty. */
int cli_rest_request(CliRest *h, const char *method, const char *path, const char *body, size_t len,
                     CliReply *reply, CliError *err);
void cli_rest_reply_free(CliReply *reply);

/* HEAD path: *status gets the answer's status (200, 404, ...). 0 when
 * there was an answer, else -1 with err (CLI_ERR_CONNECT). */
int cli_rest_head(CliRest *h, const char *path, long *status, CliError *err);

/* PUT path with the file at file_path as the body (Content-Type
 * content_type, Content-Length its size): as cli_rest_json. */
int cli_rest_put_file(CliRest *h, const char *path, const char *file_path, const char *content_type,
                      json_t **out, CliError *err);

/* A request whose 2xx answer must be a JSON object: *out is a new
 * reference (json_decref). */
int cli_rest_json(CliRest *h, const char *method, const char *path, const char *body, size_t len,
                  json_t **out, CliError *err);

/* Worth retrying after a pause: no answer at all, or the daemon said it is
 * unavailable (503) or a proxy in front of it could not reach it (502, 504). */
bool cli_error_transient(const CliError *err);

/* Fills err as a CLI_ERR_LOCAL error; returns -1. */
int cli_error_local(CliError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line (two for 401, with a hint) on stderr: "rung: CODE: MESSAGE
 * (field F)", or "rung: cannot reach rungd at URL: ...". server may be NULL. */
void cli_error_print(const CliError *err, const char *server);

#endif
