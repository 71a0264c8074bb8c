/* A flat JSON object read in place; see flatjson.h. The grammar is
 * jansson's (RFC 8259): a number is -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
 * an integer when it has neither fraction nor exponent. */
#include "flatjson.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A string without escapes at p (its opening quote): its bytes in *s, *len;
 * returns the position after the closing quote, or NULL. */
static const char *read_string(const char *p, const char **s, size_t *len)
{
    p++;
    const char *start = p;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c < 0x20 || c == '\\')
            return NULL; /* the end of the text, a control character or an escape */
        if (c < 0x80) {
            p++;
            continue;
        }
        /* jansson refuses invalid UTF-8; the text ends with its NUL, which
         * no multi-byte character holds. */
        size_t n = rung_utf8_char_len(p, strnlen(p, 4));
        if (n == 0)
            return NULL;
        p += n;
    }
    *s = start;
    *len = (size_t)(p - start);
    return p + 1;
}

/* A number at p into m; returns the position after it, or NULL. */
static const char *read_number(const char *p, FlatMember *m)
{
    const char *start = p;
    if (*p == '-')
        p++;
    if (*p == '0') {
        p++;
        if (is_digit(*p))
            return NULL;
    } else if (is_digit(*p)) {
        while (is_digit(*p))
            p++;
    } else {
        return NULL;
    }
    bool real = false;
    if (*p == '.') {
        real = true;
        p++;
        if (!is_digit(*p))
            return NULL;
        while (is_digit(*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        real = true;
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!is_digit(*p))
            return NULL;
        while (is_digit(*p))
            p++;
    }
    char *end;
    errno = 0;
    if (real) {
        m->kind = FLAT_REAL;
        m->r = strtod(start, &end);
    } else {
        m->kind = FLAT_INT;
        m->i = strtoll(start, &end, 10);
    }
    /* Out of range (jansson refuses an overflow), or read otherwise than
     * the grammar says (another locale's decimal point): jansson decides. */
    if (errno != 0 || end != p)
        return NULL;
    return p;
}

static const char *read_word(const char *p, const char *word, FlatKind kind, FlatMember *m)
{
    size_t n = strlen(word);
    if (strncmp(p, word, n) != 0)
        return NULL;
    m->kind = kind;
    return p + n;
}

int flatjson_read(const char *text, FlatMember *out, int max)
{
    const char *p = skip_ws(text);
    if (*p != '{')
        return -1;
    p = skip_ws(p + 1);
    int n = 0;
    if (*p == '}') {
        p++;
    } else {
        for (;;) {
            if (*p != '"' || n == max)
                return -1;
            FlatMember *m = &out[n];
            memset(m, 0, sizeof *m);
            p = read_string(p, &m->key, &m->key_len);
            if (p == NULL)
                return -1;
            p = skip_ws(p);
            if (*p != ':')
                return -1;
            p = skip_ws(p + 1);
            switch (*p) {
            case '"':
                m->kind = FLAT_STRING;
                p = read_string(p, &m->text, &m->len);
                break;
            case 't':
                p = read_word(p, "true", FLAT_TRUE, m);
                break;
            case 'f':
                p = read_word(p, "false", FLAT_FALSE, m);
                break;
            case 'n':
                p = read_word(p, "null", FLAT_NULL, m);
                break;
            default:
                p = read_number(p, m);
                break;
            }
            if (p == NULL)
                return -1;
            n++;
            p = skip_ws(p);
            if (*p == '}') {
                p++;
                break;
            }
            if (*p != ',')
                return -1;
            p = skip_ws(p + 1);
        }
    }
    return *skip_ws(p) == '\0' ? n : -1;
}

const FlatMember *flatjson_get(const FlatMember *members, int n, const char *key)
{
    size_t len = strlen(key);
    for (int i = n - 1; i >= 0; i--) {
        if (members[i].key_len == len && memcmp(members[i].key, key, len) == 0)
            return &members[i];
    }
    return NULL;
}
