/* Strict JSON readers; see jsonv.h. */
#include "jsonv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

size_t jsonv_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    /* s[n] exists (n < len); a continuation byte 10xxxxxx there means the
     * character it belongs to began before n: cut before that beginning. */
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* A path being written into a fixed buffer. Once a piece had to be cut,
 * nothing more is appended: a later ".key" after a cut would name a field
 * that does not exist. */
typedef struct PathBuf {
    char *buf;
    size_t size, len;
    bool cut;
} PathBuf;

static void path_add(PathBuf *p, const char *s, size_t n)
{
    if (p->cut || p->size == 0)
        return;
    size_t room = p->size - 1 - p->len;
    if (n > room) {
        n = jsonv_utf8_cut(s, n, room);
        p->cut = true;
    }
    memcpy(p->buf + p->len, s, n);
    p->len += n;
    p->buf[p->len] = '\0';
}

void jsonv_path(char *buf, size_t size, const char *path, const char *key)
{
    PathBuf p = {.buf = buf, .size = size};
    if (size > 0)
        buf[0] = '\0';
    if (path != NULL && path[0] != '\0') {
        path_add(&p, path, strlen(path));
        path_add(&p, ".", 1);
    }
    path_add(&p, key, strlen(key));
}

/* One step of the way down to a value: an object's key, or an array's index
 * (key NULL). The steps live in the walk's stack frames, linked upwards, so
 * the path is written only for the value at fault. */
typedef struct PathStep {
    const struct PathStep *up;
    const char *key;
    size_t index;
} PathStep;

typedef struct DepthWalk {
    int max_depth;
    const char *path;
    int code;
    RungError *err;
} DepthWalk;

static void path_steps(PathBuf *p, const PathStep *step)
{
    if (step == NULL)
        return;
    path_steps(p, step->up); /* as deep as the walk: at most max_depth + 1 */
    if (step->key != NULL) {
        if (p->len > 0)
            path_add(p, ".", 1);
        path_add(p, step->key, strlen(step->key));
    } else {
        char index[32];
        int n = snprintf(index, sizeof index, "[%zu]", step->index);
        path_add(p, index, (size_t)n);
    }
}

static int too_deep(const DepthWalk *w, const PathStep *step)
{
    char field[RUNG_FIELD_MAX];
    PathBuf p = {.buf = field, .size = sizeof field};
    field[0] = '\0';
    if (w->path != NULL)
        path_add(&p, w->path, strlen(w->path));
    path_steps(&p, step);
    return rung_error_set(w->err, w->code, field, "%s: nested deeper than %d levels",
                          field[0] ? field : "body", w->max_depth);
}

/* depth: arrays and objects around v. Returns the error code or 0. */
static int walk_depth(const DepthWalk *w, const json_t *v, int depth, const PathStep *step)
{
    if (!json_is_object(v) && !json_is_array(v))
        return 0;
    if (++depth > w->max_depth)
        return too_deep(w, step);
    if (json_is_object(v)) {
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)v, key, value) {
            PathStep next = {.up = step, .key = key};
            int rc = walk_depth(w, value, depth, &next);
            if (rc != 0)
                return rc;
        }
    } else {
        size_t i;
        json_t *value;
        json_array_foreach(v, i, value) {
            PathStep next = {.up = step, .index = i};
            int rc = walk_depth(w, value, depth, &next);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int jsonv_check_depth(const json_t *v, int max_depth, const char *path, int code, RungError *err)
{
    DepthWalk w = {.max_depth = max_depth < 0 ? 0 : max_depth,
                   .path = path,
                   .code = code,
                   .err = err};
    return walk_depth(&w, v, 0, NULL);
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
        if (!known && key[0] == '\0')
            return rung_error_set(err, code, path, "%s: unknown field \"\"",
                                  (path && path[0]) ? path : "body");
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
    if (rc < 0)
        return rc;
    if (rc == 0) {
        if (json_is_null(json_object_get(obj, key))) /* see jsonv.h: null is no string */
            return rung_error_set(err, code, field, "%s: must be a string", field);
        return 0;
    }
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

int jsonv_number(const json_t *obj, const char *path, const char *key, JsonvNeed need, double *out,
                 int code, RungError *err)
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
