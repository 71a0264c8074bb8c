/* Strict JSON readers that name the offending field.
 *
 * Every reader takes the JSON path of the object it reads from ("" for the
 * top level, "search_space.lr" deeper) and, on failure, fills a RungError
 * with the given code, the full path of the field ("search_space.lr.low")
 * and a message that starts with that path. Absent optional fields leave
 * *out untouched, so callers set defaults first; an optional number, integer
 * or boolean given as null counts as absent, an optional string given as
 * null does not (see jsonv_string).
 *
 * Paths are cut to RUNG_FIELD_MAX - 1 bytes on a UTF-8 character boundary:
 * the field and the message that holds it go into an error reply as JSON
 * strings, and jansson refuses to build one from a split character. */
#ifndef RUNG_COMMON_JSONV_H
#define RUNG_COMMON_JSONV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum { JSONV_OPTIONAL = 0, JSONV_REQUIRED = 1 } JsonvNeed;

/* The deepest nesting a JSON document rungd stores may have: the request
 * bodies and the experiment spec are checked against it before anything is
 * written. SQLite's json_valid() (the CHECK constraints of schema/001_init.sql)
 * refuses a document nested deeper than its JSON_MAX_DEPTH (2000 in SQLite
 * 3.40, Debian 12's: 2000 nested arrays pass, 2001 do not), and jansson's
 * parser accepts JSON_PARSER_MAX_DEPTH (2048 in jansson 2.14), so without a
 * bound of its own a body 2001 to 2048 deep reached the store and failed
 * the write it was in. 32 is far more than any spec, report or heartbeat
 * needs, and far below both. */
#define JSONV_MAX_DEPTH 32

/* Writes "path.key" (or "key" when path is empty) into buf, cut on a UTF-8
 * character boundary when it does not fit. */
void jsonv_path(char *buf, size_t size, const char *path, const char *key);

/* The length of the longest head of s (len bytes of valid UTF-8, as jansson's
 * strings are) that is at most max bytes and ends on a character boundary:
 * where to cut s so that the head stays valid UTF-8. */
size_t jsonv_utf8_cut(const char *s, size_t len, size_t max);

/* Fails when v nests arrays and objects deeper than max_depth. The depth of
 * a value is the number of arrays and objects it is or is inside of: 0 for a
 * number, 1 for {} and for [1, 2], 2 for {"a": []}. The error names the
 * path of the first (in document order) value that is too deep, starting
 * from path: "gpus[2].x" for a value of the top-level field "gpus" when path
 * is "", "search_space.lr.values[0]" from path "search_space"; when v itself
 * is too deep the field is path and the message says "body" for "". Walks
 * at most max_depth + 1 levels, whatever v's depth. */
int jsonv_check_depth(const json_t *v, int max_depth, const char *path, int code, RungError *err);

/* Fails when obj is not an object; names path (or "body" when path is ""). */
int jsonv_object(const json_t *obj, const char *path, int code, RungError *err);

/* Fails on the first key of obj not in allowed (a NULL-terminated list):
 * unknown fields are errors so that typos never pass silently. */
int jsonv_only_keys(const json_t *obj, const char *path, const char *const *allowed, int code,
                    RungError *err);

/* A string of 1..max_len bytes. *out is borrowed from obj. A null value is
 * "required" when the field is required and "must be a string" when it is
 * optional: no string field of the API has a null value, and taking null
 * for absent once let "name": null into the stored spec while the
 * experiment ran as "experiment". */
int jsonv_string(const json_t *obj, const char *path, const char *key, JsonvNeed need,
                 size_t max_len, const char **out, int code, RungError *err);

/* A finite JSON number (integer or real). */
int jsonv_number(const json_t *obj, const char *path, const char *key, JsonvNeed need, double *out,
                 int code, RungError *err);

/* A JSON integer in [min, max]. A real with an integral value (3.0) is accepted. */
int jsonv_int(const json_t *obj, const char *path, const char *key, JsonvNeed need, int64_t min,
              int64_t max, int64_t *out, int code, RungError *err);

/* A JSON boolean. */
int jsonv_bool(const json_t *obj, const char *path, const char *key, JsonvNeed need, bool *out,
               int code, RungError *err);

#endif
