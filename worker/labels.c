/* Worker labels from the command line; see labels.h. */
#include "labels.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-' || c == '/';
}

int labels_add(json_t *labels, const char *arg, char *why, size_t why_size)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL) {
        snprintf(why, why_size, "'%.80s' is not key=value", arg);
        return -1;
    }
    size_t klen = (size_t)(eq - arg);
    if (klen == 0 || klen > LABELS_KEY_MAX) {
        snprintf(why, why_size, "the key of '%.80s' must be 1 to %d characters", arg,
                 LABELS_KEY_MAX);
        return -1;
    }
    for (size_t i = 0; i < klen; i++)
        if (!key_char(arg[i])) {
            snprintf(why, why_size,
                     "the key '%.*s' may only have the characters A-Z a-z 0-9 _ . - /", (int)klen,
                     arg);
            return -1;
        }
    char key[LABELS_KEY_MAX + 1];
    memcpy(key, arg, klen);
    key[klen] = '\0';
    const char *value = eq + 1;
    if (strlen(value) > LABELS_VALUE_MAX) {
        snprintf(why, why_size, "the value of label '%s' is longer than %d bytes", key,
                 LABELS_VALUE_MAX);
        return -1;
    }
    if (json_object_get(labels, key) != NULL) {
        snprintf(why, why_size, "label '%s' is given twice", key);
        return -1;
    }
    if (json_object_size(labels) >= LABELS_MAX) {
        snprintf(why, why_size, "more than %d labels", LABELS_MAX);
        return -1;
    }
    json_t *v = json_string(value); /* NULL for text that is not UTF-8 */
    if (v == NULL) {
        snprintf(why, why_size, "the value of label '%s' is not UTF-8 text", key);
        return -1;
    }
    if (json_object_set_new(labels, key, v) != 0) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    return 0;
}
