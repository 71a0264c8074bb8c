/* Placeholder substitution in argv; see argv.h. */
#include "argv.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes a double with the fewest significant digits that read back to the
 * same value, then in jansson's style: ".0" added to what would read as an
 * integer, and the exponent without '+' and leading zeros ("1e-05" -> "1e-5"). */
static void real_text(double v, char *buf, size_t size)
{
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    size_t o = 0;
    const char *e = strchr(tmp, 'e');
    size_t mant = e ? (size_t)(e - tmp) : strlen(tmp);
    for (size_t i = 0; i < mant && o + 1 < size; i++)
        buf[o++] = tmp[i];
    if (strpbrk(tmp, ".en") == NULL && o + 2 < size) { /* "n": nan and inf stay as they are */
        buf[o++] = '.';
        buf[o++] = '0';
    }
    if (e) {
        const char *p = e + 1;
        bool neg = *p == '-';
        if (*p == '+' || *p == '-')
            p++;
        while (*p == '0' && p[1] != '\0')
            p++;
        if (o + 1 < size)
            buf[o++] = 'e';
        if (neg && o + 1 < size)
            buf[o++] = '-';
        while (*p && o + 1 < size)
            buf[o++] = *p++;
    }
    buf[o] = '\0';
}

char *argv_value_text(const json_t *v)
{
    char buf[64];
    switch (json_typeof(v)) {
    case JSON_STRING:
        return strdup(json_string_value(v));
    case JSON_INTEGER:
        snprintf(buf, sizeof buf, "%" PRId64, (int64_t)json_integer_value(v));
        return strdup(buf);
    case JSON_REAL:
        real_text(json_real_value(v), buf, sizeof buf);
        return strdup(buf);
    case JSON_TRUE:
        return strdup("true");
    case JSON_FALSE:
        return strdup("false");
    case JSON_NULL:
        return strdup("null");
    default:
        return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    }
}

/* A growing string. */
typedef struct Buf {
    char *s;
    size_t len, cap;
    bool oom;
} Buf;

static void buf_add(Buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

char *argv_subst(const char *arg, const json_t *config)
{
    Buf b = {0};
    buf_add(&b, "", 0);
    const char *p = arg;
    while (*p) {
        const char *open = strchr(p, '{');
        if (open == NULL) {
            buf_add(&b, p, strlen(p));
            break;
        }
        buf_add(&b, p, (size_t)(open - p));
        /* The name runs to the first '}' and holds no '{': "{{lr}}" is "{" + "{lr}" + "}". */
        size_t n = strcspn(open + 1, "{}");
        json_t *v = NULL;
        if (open[1 + n] == '}' && n >= 1 && n <= ARGV_MAX_NAME) {
            char name[ARGV_MAX_NAME + 1];
            memcpy(name, open + 1, n);
            name[n] = '\0';
            v = json_object_get(config, name);
        }
        if (v == NULL) {
            buf_add(&b, "{", 1);
            p = open + 1;
            continue;
        }
        char *text = argv_value_text(v);
        if (text == NULL) {
            b.oom = true;
            break;
        }
        buf_add(&b, text, strlen(text));
        free(text);
        p = open + 1 + n + 1;
    }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

bool argv_names_inactive(const char *arg, const json_t *config)
{
    for (const char *open = strchr(arg, '{'); open != NULL; open = strchr(open + 1, '{')) {
        /* The name as argv_subst reads it: up to the first '}', with no '{'. */
        size_t n = strcspn(open + 1, "{}");
        if (open[1 + n] != '}' || n < 1 || n > ARGV_MAX_NAME)
            continue;
        const char *name = open + 1;
        bool path = isalpha((unsigned char)name[0]) || name[0] == '_', dot = false;
        for (size_t i = 0; i < n && path; i++) {
            unsigned char c = (unsigned char)name[i];
            dot |= c == '.';
            path = isalnum(c) || c == '_' || c == '.' || c == '-';
        }
        if (!path || !dot)
            continue;
        char key[ARGV_MAX_NAME + 1];
        memcpy(key, name, n);
        key[n] = '\0';
        if (json_object_get(config, key) == NULL)
            return true;
    }
    return false;
}

char **argv_expand(const json_t *argv, const json_t *config, char *why, size_t why_size)
{
    size_t n = json_array_size(argv);
    if (!json_is_array(argv) || n == 0 || n > ARGV_MAX_ARGS) {
        snprintf(why, why_size, "trainable.argv must be a non-empty array of at most %d strings",
                 ARGV_MAX_ARGS);
        return NULL;
    }
    char **out = calloc(n + 1, sizeof *out);
    if (out == NULL) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_array_get(argv, i));
        if (a == NULL) {
            snprintf(why, why_size, "trainable.argv[%zu] is not a string", i);
            argv_free(out);
            return NULL;
        }
        if (argv_names_inactive(a, config))
            continue;
        out[kept] = argv_subst(a, config);
        if (out[kept] == NULL) {
            snprintf(why, why_size, "out of memory");
            argv_free(out);
            return NULL;
        }
        kept++;
    }
    if (kept == 0) {
        snprintf(why, why_size,
                 "trainable.argv: every entry names a parameter this trial's config lacks");
        argv_free(out);
        return NULL;
    }
    return out;
}

void argv_free(char **argv)
{
    if (argv == NULL)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}
