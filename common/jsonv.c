/* Strict JSON readers; see jsonv.h. */
#include "jsonv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void jsonv_path(char *buf, size_t size, const char *path, const char *key)
{
    if (path == NULL || path[0] == '\0')
        snprintf(buf, size, "%s", key);
    else
        snprintf(buf, size, "%s.%s", path, key);
}

int jsonv_object(const json_t *obj, const char *path, int code, RungError *err)
{
    if (json_is_object(obj))
        return 0;
    const char *name = (path && path[0]) ? path : "body";
    return rung_error_set(err, code, path, "%s: must be a JSON object", name);
}

int jsonv_only_keys(const json_t *obj, const char *path, const char *const *allowed, int code,
                    RungError *err)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        bool known = false;
        for (const char *const *a = allowed; *a != NULL; a++) {
            if (strcmp(*a, key) == 0) {
                known = true;
                break;
            }
        }
        if (!known) {
            char field[RUNG_FIELD_MAX];
            jsonv_path(field, sizeof field, path, key);
            return rung_error_set(err, code, field, "%s: unknown field", field);
        }
    }
    return 0;
}

/* Looks key up; returns 1 when present, 0 when absent and optional, or an
 * error when absent and required. */
static int lookup(const json_t *obj, const char *path, const char *key, JsonvNeed need,
                  json_t **out, char *field, size_t field_size, int code, RungError *err)
{
    jsonv_path(field, field_size, path, key);
    *out = json_object_get(obj, key);
    if (*out != NULL && !json_is_null(*out))
        return 1;
    if (need == JSONV_REQUIRED)
        return rung_error_set(err, code, field, "%s: required", field);
    return 0;
}

int jsonv_string(const json_t *obj, const char *path, const char *key, JsonvNeed need,
                 size_t max_len, const char **out, int code, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    json_t *v;
    int rc = lookup(obj, path, key, need, &v, field, sizeof field, code, err);
    if (rc <= 0)
        return rc;
    if (!json_is_string(v))
        return rung_error_set(err, code, field, "%s: must be a string", field);
    size_t len = json_string_length(v);
    if (len == 0)
        return rung_error_set(err, code, field, "%s: must not be empty", field);
    if (len > max_len)
        return rung_error_set(err, code, field, "%s: longer than %zu bytes", field, max_len);
    *out = json_string_value(v);
    return 0;
}

int jsonv_number(const json_t *obj, const char *path, const char *key, JsonvNeed need,
                 double *out, int code, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    json_t *v;
    int rc = lookup(obj, path, key, need, &v, field, sizeof field, code, err);
    if (rc <= 0)
        return rc;
    if (!json_is_number(v))
        return rung_error_set(err, code, field, "%s: must be a number", field);
    double d = json_number_value(v);
    if (!isfinite(d))
        return rung_error_set(err, code, field, "%s: must be finite", field);
    *out = d;
    return 0;
}

int jsonv_int(const json_t *obj, const char *path, const char *key, JsonvNeed need, int64_t min,
              int64_t max, int64_t *out, int code, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    json_t *v;
    int rc = lookup(obj, path, key, need, &v, field, sizeof field, code, err);
    if (rc <= 0)
        return rc;
    int64_t n;
    if (json_is_integer(v)) {
        n = (int64_t)json_integer_value(v);
    } else if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
               fabs(json_real_value(v)) < 9.0e15) {
        n = (int64_t)json_real_value(v);
    } else {
        return rung_error_set(err, code, field, "%s: must be an integer", field);
    }
    if (n < min || n > max)
        return rung_error_set(err, code, field, "%s: must be between %lld and %lld", field,
                              (long long)min, (long long)max);
    *out = n;
    return 0;
}

int jsonv_bool(const json_t *obj, const char *path, const char *key, JsonvNeed need, bool *out,
               int code, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    json_t *v;
    int rc = lookup(obj, path, key, need, &v, field, sizeof field, code, err);
    if (rc <= 0)
        return rc;
    if (!json_is_boolean(v))
        return rung_error_set(err, code, field, "%s: must be true or false", field);
    *out = json_is_true(v);
    return 0;
}
