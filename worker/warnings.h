/* A trial's invalid `@rung` lines, as rungd stores them (docs/api.md, the
 * trial object's `warnings`, and the `warnings` of POST
 * /api/v1/trials/{id}/finish and of the heartbeat). Pure.
 *
 * Counts every invalid line and keeps the last WARNINGS_LAST of them with
 * why each was refused, each cut so that the server's parser takes it: the
 * line to WARNINGS_LINE_MAX bytes, the reason to WARNINGS_WHY_MAX bytes, on
 * character boundaries, as valid UTF-8 without NUL bytes (a program may
 * print any bytes; JSON strings hold only UTF-8). The bounds are those of
 * server/request.h (REQUEST_MAX_WARN_*), checked equal in test_request.c.
 *
 * Besides invalid lines, a value that is not a number in a valid line
 * (kept as the report's info, reportline.h) is counted, once per name: a
 * program that prints its phase with every step would otherwise fill the
 * count and push every other warning out of the last 5. */
#ifndef RUNG_WORKER_WARNINGS_H
#define RUNG_WORKER_WARNINGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WARNINGS_LAST 5                /* lines quoted */
#define WARNINGS_LINE_MAX 512          /* bytes of a quoted line */
#define WARNINGS_WHY_MAX 256           /* bytes of its reason */
#define WARNINGS_COUNT_MAX (1LL << 53) /* a count stays exact in JSON */
/* Names remembered as warned once (warnings_add_once): 4 lines of 64 new
 * names each; a program that makes up more names than this is not helped
 * by more of the same warning, so the names past it are not counted. */
#define WARNINGS_NAMES_MAX 256
#define WARNINGS_NAME_MAX 64 /* bytes of a report line's key (reportline.c) */

typedef struct Warnings {
    int64_t count;                                   /* invalid lines so far */
    char line[WARNINGS_LAST][WARNINGS_LINE_MAX + 1]; /* a ring of the last ones, from first */
    char why[WARNINGS_LAST][WARNINGS_WHY_MAX + 1];
    int first, n;
    bool changed;                                          /* since warnings_take */
    char names[WARNINGS_NAMES_MAX][WARNINGS_NAME_MAX + 1]; /* warned once, in order */
    int n_names;
} Warnings;

void warnings_init(Warnings *w);

/* Counts one invalid line (len bytes, any bytes) refused for why (any
 * bytes, NUL-terminated) and keeps it among the last. */
void warnings_add(Warnings *w, const char *line, size_t len, const char *why);

/* warnings_add for the first value named name (1..WARNINGS_NAME_MAX bytes)
 * that is worth a warning; later ones, and names past WARNINGS_NAMES_MAX,
 * are not counted. Returns whether it counted this one. */
bool warnings_add_once(Warnings *w, const char *name, const char *line, size_t len,
                       const char *why);

/* {"count": N, "last": [{"line": ..., "why": ...}, ...]}, oldest first; a
 * new object, NULL when out of memory. */
json_t *warnings_json(const Warnings *w);

/* warnings_json when something was added since the last call that returned
 * an object (then clears changed), else NULL. */
json_t *warnings_take(Warnings *w);

/* Copies the longest head of in (len bytes, any bytes) that fits max bytes
 * into out (max + 1 bytes), as valid UTF-8: a byte that does not start a
 * valid character, and a NUL, becomes '?'. Returns the bytes written
 * (out is NUL-terminated). */
size_t warnings_clean(char *out, size_t max, const char *in, size_t len);

#endif
