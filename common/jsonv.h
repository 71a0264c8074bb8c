/* Strict JSON readers that name the offending field.
 *
 * Every reader takes the JSON path of the object it reads from ("" for the
 * top level, "search_space.lr" deeper) and, on failure, fills a RungError
 * with the given code, the full path of the field ("search_space.lr.low")
 * and a message that starts with that path. Absent optional fields leave
 * *out untouched, so callers set defaults first. */
#ifndef RUNG_COMMON_JSONV_H
#define RUNG_COMMON_JSONV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum { JSONV_OPTIONAL = 0, JSONV_REQUIRED = 1 } JsonvNeed;

/* Writes "path.key" (or "key" when path is empty) into buf. */
void jsonv_path(char *buf, size_t size, const char *path, const char *key);

/* Fails when obj is not an object; names path (or "body" when path is ""). */
int jsonv_object(const json_t *obj, const char *path, int code, RungError *err);

/* Fails on the first key of obj not in allowed (a NULL-terminated list):
 * unknown fields are errors so that typos never pass silently. */
int jsonv_only_keys(const json_t *obj, const char *path, const char *const *allowed, int code,
                    RungError *err);

/* A string of 1..max_len bytes. *out is borrowed from obj. */
int jsonv_string(const json_t *obj, const char *path, const char *key, JsonvNeed need,
                 size_t max_len, const char **out, int code, RungError *err);

/* A finite JSON number (integer or real). */
int jsonv_number(const json_t *obj, const char *path, const char *key, JsonvNeed need,
                 double *out, int code, RungError *err);

/* A JSON integer in [min, max]. A real with an integral value (3.0) is accepted. */
int jsonv_int(const json_t *obj, const char *path, const char *key, JsonvNeed need, int64_t min,
              int64_t max, int64_t *out, int code, RungError *err);

/* A JSON boolean. */
int jsonv_bool(const json_t *obj, const char *path, const char *key, JsonvNeed need, bool *out,
               int code, RungError *err);

#endif
