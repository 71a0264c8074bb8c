/* Error reply bodies; see errjson.h. */
#include "errjson.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* s as a JSON string, with every byte that does not belong to a valid UTF-8
 * character replaced by '?'. */
static json_t *text_json(const char *s)
{
    size_t len = strlen(s);
    size_t i = 0, n;
    while (i < len && (n = rung_utf8_char_len(s + i, len - i)) > 0)
        i += n;
    if (i == len)
        return json_stringn(s, len);
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return NULL;
    memcpy(copy, s, len + 1);
    while (i < len) {
        n = rung_utf8_char_len(copy + i, len - i);
        if (n == 0) {
            copy[i] = '?';
            n = 1;
        }
        i += n;
    }
    json_t *j = json_stringn(copy, len);
    free(copy);
    return j;
}

json_t *rung_error_json(int code, const char *field, const char *message)
{
    json_t *error = json_object();
    if (error == NULL)
        return NULL;
    /* Keys in the order docs/api.md shows them: code, message, field.
     * json_object_set_new takes the value even when it fails (or is NULL). */
    if (json_object_set_new(error, "code", json_string(rung_error_string(code))) != 0 ||
        json_object_set_new(error, "message", text_json(message ? message : "")) != 0 ||
        (field != NULL && field[0] != '\0' &&
         json_object_set_new(error, "field", text_json(field)) != 0)) {
        json_decref(error);
        return NULL;
    }
    json_t *body = json_object();
    if (json_object_set_new(body, "error", error) != 0) {
        json_decref(body); /* NULL-safe */
        return NULL;
    }
    return body;
}

json_t *rung_error_json_from(const RungError *err)
{
    return rung_error_json(err->code, err->field, err->message);
}
