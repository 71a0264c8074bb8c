/* The one error table of Rung.
 *
 * Every fallible function returns int: 0 on success, or a negative RUNG_E_*
 * code. The same X-macro gives each code its API string (the "code" of an
 * error reply, see docs/api.md) and its HTTP status, so a library error travels
 * to the wire without a translation table of its own. A RungError carries
 * the code, the JSON path of the offending input field (empty when no single
 * field is at fault) and a message for a person. */
#ifndef RUNG_COMMON_ERROR_H
#define RUNG_COMMON_ERROR_H

#include <stddef.h>

/* X(NAME, api string, HTTP status) */
#define RUNG_ERRORS(X)                                                                             \
    X(BAD_JSON, "bad_json", 400)                                                                   \
    X(INVALID_SPEC, "invalid_spec", 400)                                                           \
    X(INVALID_ARGUMENT, "invalid_argument", 400)                                                   \
    X(UNAUTHORIZED, "unauthorized", 401)                                                           \
    X(FORBIDDEN, "forbidden", 403)                                                                 \
    X(NOT_FOUND, "not_found", 404)                                                                 \
    X(METHOD_NOT_ALLOWED, "method_not_allowed", 405)                                               \
    X(CONFLICT, "conflict", 409)                                                                   \
    X(LEASE_LOST, "lease_lost", 409)                                                               \
    X(PAYLOAD_TOO_LARGE, "payload_too_large", 413)                                                 \
    X(UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", 415)                                       \
    X(TOO_MANY_REQUESTS, "too_many_requests", 429)                                                 \
    X(INTERNAL, "internal", 500)                                                                   \
    X(INSUFFICIENT_STORAGE, "insufficient_storage", 507)                                           \
    X(UNAVAILABLE, "unavailable", 503)

enum {
    RUNG_OK = 0,
#define RUNG_X_ENUM(name, str, status) RUNG_E_##name,
    RUNG_E__FIRST = -100,
    RUNG_ERRORS(RUNG_X_ENUM)
#undef RUNG_X_ENUM
        RUNG_E__LAST
};

/* Longest JSON path we report, e.g. "search_space.lr.low" (names are <= 64). */
#define RUNG_FIELD_MAX 192
/* Longest message; longer ones are truncated, never overflowed. */
#define RUNG_MESSAGE_MAX 320

typedef struct RungError {
    int code;                       /* a RUNG_E_* value, or RUNG_OK */
    char field[RUNG_FIELD_MAX];     /* JSON path of the faulty field, "" if none */
    char message[RUNG_MESSAGE_MAX]; /* for a person, names the field */
} RungError;

/* API string of a code ("invalid_spec"); "internal" for an unknown code. */
const char *rung_error_string(int code);
/* HTTP status of a code (400 for invalid_spec); 500 for an unknown code. */
int rung_error_status(int code);

/* Fills err (which may be NULL) and returns code, so callers can write
 * `return rung_error_set(err, RUNG_E_INVALID_SPEC, "mode", "mode must be ...")`.
 * field may be NULL. */
int rung_error_set(RungError *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clears err to RUNG_OK with empty field and message. */
void rung_error_clear(RungError *err);

#endif
