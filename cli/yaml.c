/* YAML experiment specs: one YAML document to the JSON value it means
 * (yaml.h says what becomes what).
 *
 * libyaml's event parser reads the document; parse_node() builds the value
 * of one node from its events and recurses into collections at most
 * JSONV_MAX_DEPTH deep, so the stack stays bounded whatever the input, and
 * since anchors and aliases are refused, every node of the document is
 * built once: the value is never larger than the text. */
#include "yaml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "jsonv.h"

/* The prefix of the standard tags: "!!int" is "tag:yaml.org,2002:int". */
#define TAG_PREFIX "tag:yaml.org,2002:"
/* Longest message before it is cut to the caller's errlen: a line and
 * column, a quoted piece (CLI_YAML_QUOTE_MAX) and libyaml's problem and
 * context, which are short constant sentences. */
#define MESSAGE_MAX 512

typedef struct {
    yaml_parser_t parser;
    yaml_event_t event; /* the current event, while have_event */
    bool have_event;
    const char *buf; /* borrowed: the document, to find a reader error's line */
    size_t len;
    char *err; /* borrowed: the caller's buffer, errlen bytes */
    size_t errlen;
    bool wandb; /* CLI_YAML_WANDB: yes/no/on/off are booleans too */
} Reader;

/* What a scalar's text means under the core schema (resolve()). */
typedef enum {
    RESOLVED_STR,       /* none of the others: a string */
    RESOLVED_NULL,      /* "", ~, null, Null, NULL */
    RESOLVED_BOOL,      /* true, false in three spellings each (W&B mode: yes, no, on, off too) */
    RESOLVED_INT,       /* decimal, 0o octal, 0x hexadecimal, within int64 */
    RESOLVED_FLOAT,     /* a finite float */
    RESOLVED_NONFINITE, /* .inf, -.inf, .nan: refused */
    RESOLVED_RANGE,     /* an integer outside int64 or a float that overflows */
} ResolvedKind;

typedef struct {
    ResolvedKind kind;
    bool boolean;
    json_int_t integer;
    double real;
} Resolved;

/* vsnprintf into buf (size bytes), and when the text was cut, the cut
 * moved back to a character boundary: every piece of a message is valid
 * UTF-8 (see quote()), and so is the message. */
static void format_utf8(char *buf, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, size, fmt, ap);
    if (n < 0) {
        buf[0] = '\0';
        return;
    }
    size_t have = strlen(buf);
    if ((size_t)n > have && have > 0)
        buf[jsonv_utf8_cut(buf, have, have - 1)] = '\0';
}

/* Writes the message into the caller's buffer, cut on a character boundary.
 * Returns -1. */
static int set_err(Reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_err(Reader *r, const char *fmt, ...)
{
    if (r->errlen == 0)
        return -1;
    char full[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_utf8(full, sizeof full, fmt, ap);
    va_end(ap);
    size_t have = strlen(full);
    size_t keep = jsonv_utf8_cut(full, have, r->errlen - 1);
    memcpy(r->err, full, keep);
    r->err[keep] = '\0';
    return -1;
}

/* "line N: " and the message; line0 is libyaml's 0-based line. */
static int fail(Reader *r, size_t line0, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(Reader *r, size_t line0, const char *fmt, ...)
{
    char what[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_utf8(what, sizeof what, fmt, ap);
    va_end(ap);
    return set_err(r, "line %zu: %s", line0 + 1, what);
}

/* Copies s (n bytes of valid UTF-8, as libyaml gives) into out for an error
 * message: at most CLI_YAML_QUOTE_MAX bytes, cut on a character boundary,
 * then "..." when cut. A NUL inside s ends the copy where it stands. */
static void quote(char out[CLI_YAML_QUOTE_MAX + 4], const char *s, size_t n)
{
    size_t keep = jsonv_utf8_cut(s, n, CLI_YAML_QUOTE_MAX);
    memcpy(out, s, keep);
    strcpy(out + keep, keep < n ? "..." : "");
}

/* libyaml's own error: the reader's (bad encoding, control characters) at
 * a byte offset, the scanner's and parser's (syntax) at a line and column. */
static int parser_error(Reader *r)
{
    const yaml_parser_t *p = &r->parser;
    const char *problem = p->problem ? p->problem : "cannot read this as YAML";
    if (p->error == YAML_MEMORY_ERROR)
        return fail(r, p->mark.line, "out of memory");
    if (p->error == YAML_READER_ERROR) {
        size_t end = p->problem_offset < r->len ? p->problem_offset : r->len;
        size_t line = 1, start = 0;
        for (size_t i = 0; i < end; i++) {
            if (r->buf[i] == '\n') {
                line++;
                start = i + 1;
            }
        }
        /* The value is the octet or the character at fault. */
        if (p->problem_value >= 0)
            return set_err(r, "line %zu, column %zu: %s (0x%X)", line, end - start + 1, problem,
                           (unsigned)p->problem_value);
        return set_err(r, "line %zu, column %zu: %s", line, end - start + 1, problem);
    }
    if (p->context != NULL)
        return set_err(r, "line %zu, column %zu: %s (%s at line %zu)", p->problem_mark.line + 1,
                       p->problem_mark.column + 1, problem, p->context, p->context_mark.line + 1);
    return set_err(r, "line %zu, column %zu: %s", p->problem_mark.line + 1,
                   p->problem_mark.column + 1, problem);
}

/* Moves to the next event; the current one is freed. */
static int next(Reader *r)
{
    if (r->have_event) {
        yaml_event_delete(&r->event);
        r->have_event = false;
    }
    if (!yaml_parser_parse(&r->parser, &r->event))
        return parser_error(r);
    r->have_event = true;
    return 0;
}

static bool one_of(const char *s, size_t n, const char *const *words)
{
    for (; *words != NULL; words++) {
        if (strlen(*words) == n && memcmp(s, *words, n) == 0)
            return true;
    }
    return false;
}

/* How many bytes of s[i..n) are in the class: 10 decimal digits, 8 octal,
 * 16 hexadecimal. */
static size_t run_of(const char *s, size_t n, size_t i, int base)
{
    size_t k = i;
    for (; k < n; k++) {
        char c = s[k];
        bool ok = base == 8    ? (c >= '0' && c <= '7')
                  : base == 10 ? (c >= '0' && c <= '9')
                               : ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                                  (c >= 'A' && c <= 'F'));
        if (!ok)
            break;
    }
    return k - i;
}

/* Whether s is a float of the core schema:
 * [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static bool is_float(const char *s, size_t n)
{
    size_t i = n > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    size_t whole = run_of(s, n, i, 10);
    i += whole;
    size_t frac = 0;
    if (i < n && s[i] == '.') {
        i++;
        frac = run_of(s, n, i, 10);
        i += frac;
    }
    if (whole == 0 && frac == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        size_t exp = run_of(s, n, i, 10);
        if (exp == 0)
            return false;
        i += exp;
    }
    return i == n;
}

/* What the text s (n bytes, NUL-terminated at n, no NUL inside) means under
 * YAML 1.2's core schema; with wandb, YAML 1.1's further booleans in the
 * spellings PyYAML takes, as W&B reads its sweep files with PyYAML. */
static Resolved resolve(const char *s, size_t n, bool wandb)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    static const char *const trues11[] = {"yes", "Yes", "YES", "on", "On", "ON", NULL};
    static const char *const falses11[] = {"no", "No", "NO", "off", "Off", "OFF", NULL};
    static const char *const infinities[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                             "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                             ".NaN",  ".NAN",  NULL};
    Resolved v = {.kind = RESOLVED_STR};
    if (one_of(s, n, nulls)) {
        v.kind = RESOLVED_NULL;
    } else if (one_of(s, n, trues) || one_of(s, n, falses)) {
        v.kind = RESOLVED_BOOL;
        v.boolean = one_of(s, n, trues);
    } else if (wandb && (one_of(s, n, trues11) || one_of(s, n, falses11))) {
        v.kind = RESOLVED_BOOL;
        v.boolean = one_of(s, n, trues11);
    } else if (one_of(s, n, infinities)) {
        v.kind = RESOLVED_NONFINITE;
    } else if (n > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x') &&
               run_of(s, n, 2, s[1] == 'o' ? 8 : 16) == n - 2) {
        errno = 0;
        unsigned long long u = strtoull(s + 2, NULL, s[1] == 'o' ? 8 : 16);
        v.kind = errno == ERANGE || u > INT64_MAX ? RESOLVED_RANGE : RESOLVED_INT;
        v.integer = (json_int_t)u;
    } else {
        size_t sign = n > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
        if (n > sign && run_of(s, n, sign, 10) == n - sign) {
            errno = 0;
            long long i = strtoll(s, NULL, 10);
            v.kind = errno == ERANGE ? RESOLVED_RANGE : RESOLVED_INT;
            v.integer = i;
        } else if (is_float(s, n)) {
            /* Underflow (1e-400) gives 0 or a subnormal, as jansson reads
             * it; only overflow is refused. */
            errno = 0;
            double d = strtod(s, NULL);
            bool overflow = errno == ERANGE && (d > 1.0 || d < -1.0);
            v.kind = overflow ? RESOLVED_RANGE : RESOLVED_FLOAT;
            v.real = d;
        }
    }
    return v;
}

/* The JSON value of a scalar event. */
static int scalar(Reader *r, json_t **out)
{
    const yaml_event_t *ev = &r->event;
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    size_t line = ev->start_mark.line;
    const char *tag = (const char *)ev->data.scalar.tag;
    char shown[CLI_YAML_QUOTE_MAX + 4];
    quote(shown, s, n);
    if (memchr(s, '\0', n) != NULL)
        return fail(r, line, "a string holds a NUL character (\\0), which a spec cannot carry");

    /* Which type the scalar must have: "" for whatever its text means. */
    static const char *const scalar_tags[] = {"str", "null", "bool", "int", "float", NULL};
    const char *want = "";
    if (tag == NULL) {
        want = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? "" : "str";
    } else if (strcmp(tag, "!") == 0) {
        want = "str";
    } else {
        size_t plen = strlen(TAG_PREFIX);
        want = tag + plen;
        if (strncmp(tag, TAG_PREFIX, plen) != 0 || !one_of(want, strlen(want), scalar_tags)) {
            char t[CLI_YAML_QUOTE_MAX + 4];
            quote(t, tag, strlen(tag));
            return fail(r, line,
                        "tag '%s' is not supported on a scalar (!!str, !!int, !!float, !!bool, "
                        "!!null are)",
                        t);
        }
    }

    json_t *v = NULL;
    if (strcmp(want, "str") == 0) {
        v = json_stringn(s, n);
        if (v == NULL)
            return fail(r, line, "'%s' is not valid UTF-8", shown);
        *out = v;
        return 0;
    }
    Resolved res = resolve(s, n, r->wandb);
    if (res.kind == RESOLVED_NONFINITE)
        return fail(r, line,
                    "%s: infinite and NaN numbers are not allowed (a spec's numbers are "
                    "finite)",
                    shown);
    if (res.kind == RESOLVED_RANGE)
        return fail(r, line, "%s is out of range (integers: -2^63 to 2^63-1; numbers: finite)",
                    shown);
    if (want[0] != '\0') {
        bool fits = (strcmp(want, "null") == 0 && res.kind == RESOLVED_NULL) ||
                    (strcmp(want, "bool") == 0 && res.kind == RESOLVED_BOOL) ||
                    (strcmp(want, "int") == 0 && res.kind == RESOLVED_INT) ||
                    (strcmp(want, "float") == 0 &&
                     (res.kind == RESOLVED_FLOAT || res.kind == RESOLVED_INT));
        if (!fits)
            return fail(r, line, "'%s' is not a !!%s", shown, want);
        if (strcmp(want, "float") == 0 && res.kind == RESOLVED_INT) {
            res.kind = RESOLVED_FLOAT;
            res.real = (double)res.integer;
        }
    }
    switch (res.kind) {
    case RESOLVED_NULL:
        v = json_null();
        break;
    case RESOLVED_BOOL:
        v = json_boolean(res.boolean);
        break;
    case RESOLVED_INT:
        v = json_integer(res.integer);
        break;
    case RESOLVED_FLOAT:
        v = json_real(res.real);
        break;
    default:
        v = json_stringn(s, n);
        if (v == NULL)
            return fail(r, line, "'%s' is not valid UTF-8", shown);
        break;
    }
    if (v == NULL)
        return fail(r, line, "out of memory");
    *out = v;
    return 0;
}

/* Refuses what no node of a spec may carry: an anchor (and so any alias),
 * a tag that is not the collection's own. kind is "seq" or "map". */
static int check_collection(Reader *r, const yaml_char_t *anchor, const yaml_char_t *tag,
                            const char *kind, int depth)
{
    size_t line = r->event.start_mark.line;
    if (anchor != NULL) {
        char a[CLI_YAML_QUOTE_MAX + 4];
        quote(a, (const char *)anchor, strlen((const char *)anchor));
        return fail(r, line, "anchors (&%s) are not supported; write the value out", a);
    }
    if (tag != NULL && strcmp((const char *)tag, "!") != 0) {
        const char *t = (const char *)tag;
        size_t plen = strlen(TAG_PREFIX);
        if (strncmp(t, TAG_PREFIX, plen) != 0 || strcmp(t + plen, kind) != 0) {
            char q[CLI_YAML_QUOTE_MAX + 4];
            quote(q, t, strlen(t));
            return fail(r, line, "tag '%s' is not supported on a %s (!!%s is)", q,
                        strcmp(kind, "seq") == 0 ? "sequence" : "mapping", kind);
        }
    }
    if (depth + 1 > JSONV_MAX_DEPTH)
        return fail(r, line, "nested deeper than %d levels", JSONV_MAX_DEPTH);
    return 0;
}

static int parse_node(Reader *r, int depth, json_t **out);

/* A key (the current event, a scalar) is taken as written, whatever its text
 * would mean as a value ("1", "null" and ".inf" are keys like any other);
 * its tag may only say it is a string. */
static int check_key(Reader *r)
{
    const yaml_event_t *ev = &r->event;
    const char *k = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    size_t line = ev->start_mark.line;
    if (memchr(k, '\0', n) != NULL)
        return fail(r, line, "a key holds a NUL character (\\0), which a spec cannot carry");
    if (tag != NULL && strcmp(tag, "!") != 0 && strcmp(tag, TAG_PREFIX "str") != 0) {
        char t[CLI_YAML_QUOTE_MAX + 4];
        quote(t, tag, strlen(tag));
        return fail(r, line, "tag '%s' is not supported on a key (keys are strings: !!str)", t);
    }
    return 0;
}

/* A sequence, from its start event to its end event. */
static int sequence(Reader *r, int depth, json_t **out)
{
    json_t *arr = json_array();
    if (arr == NULL)
        return fail(r, r->event.start_mark.line, "out of memory");
    for (;;) {
        if (next(r) != 0)
            goto fail;
        if (r->event.type == YAML_SEQUENCE_END_EVENT)
            break;
        json_t *item;
        if (parse_node(r, depth + 1, &item) != 0)
            goto fail;
        if (json_array_append_new(arr, item) != 0) {
            fail(r, r->event.start_mark.line, "out of memory");
            goto fail;
        }
    }
    *out = arr;
    return 0;
fail:
    json_decref(arr);
    return -1;
}

/* A mapping, from its start event to its end event. */
static int mapping(Reader *r, int depth, json_t **out)
{
    json_t *obj = json_object();
    char *key = NULL;
    if (obj == NULL)
        return fail(r, r->event.start_mark.line, "out of memory");
    for (;;) {
        if (next(r) != 0)
            goto fail;
        const yaml_event_t *ev = &r->event;
        if (ev->type == YAML_MAPPING_END_EVENT)
            break;
        size_t line = ev->start_mark.line;
        if (ev->type != YAML_SCALAR_EVENT) {
            /* An alias says so; a collection as a key is no JSON key. */
            if (ev->type == YAML_ALIAS_EVENT) {
                parse_node(r, depth + 1, NULL);
                goto fail;
            }
            fail(r, line, "a key must be a scalar, not a %s",
                 ev->type == YAML_MAPPING_START_EVENT ? "mapping" : "sequence");
            goto fail;
        }
        if (ev->data.scalar.anchor != NULL) {
            parse_node(r, depth + 1, NULL);
            goto fail;
        }
        if (check_key(r) != 0)
            goto fail;
        const char *k = (const char *)ev->data.scalar.value;
        size_t klen = ev->data.scalar.length;
        char shown[CLI_YAML_QUOTE_MAX + 4];
        quote(shown, k, klen);
        if (json_object_get(obj, k) != NULL) {
            fail(r, line, "duplicate key '%s'", shown);
            goto fail;
        }
        key = malloc(klen + 1);
        if (key == NULL) {
            fail(r, line, "out of memory");
            goto fail;
        }
        memcpy(key, k, klen + 1);
        if (next(r) != 0)
            goto fail;
        json_t *value;
        if (parse_node(r, depth + 1, &value) != 0)
            goto fail;
        if (json_object_set_new(obj, key, value) != 0) {
            fail(r, line, "key '%s' cannot be stored (not valid UTF-8?)", shown);
            goto fail;
        }
        free(key);
        key = NULL;
    }
    *out = obj;
    return 0;
fail:
    free(key);
    json_decref(obj);
    return -1;
}

/* The value of the node whose first event is the current one; the current
 * event is its last one on return. depth: the collections it is inside.
 * out may be NULL only for a node that is refused (an alias, an anchor). */
static int parse_node(Reader *r, int depth, json_t **out)
{
    const yaml_event_t *ev = &r->event;
    size_t line = ev->start_mark.line;
    switch (ev->type) {
    case YAML_ALIAS_EVENT: {
        char a[CLI_YAML_QUOTE_MAX + 4];
        const char *name = (const char *)ev->data.alias.anchor;
        quote(a, name, strlen(name));
        return fail(r, line, "aliases (*%s) are not supported; write the value out", a);
    }
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor != NULL) {
            char a[CLI_YAML_QUOTE_MAX + 4];
            const char *name = (const char *)ev->data.scalar.anchor;
            quote(a, name, strlen(name));
            return fail(r, line, "anchors (&%s) are not supported; write the value out", a);
        }
        return scalar(r, out);
    case YAML_SEQUENCE_START_EVENT:
        if (check_collection(r, ev->data.sequence_start.anchor, ev->data.sequence_start.tag, "seq",
                             depth) != 0)
            return -1;
        return sequence(r, depth, out);
    case YAML_MAPPING_START_EVENT:
        if (check_collection(r, ev->data.mapping_start.anchor, ev->data.mapping_start.tag, "map",
                             depth) != 0)
            return -1;
        return mapping(r, depth, out);
    default: /* libyaml gives only nodes here */
        return fail(r, line, "unexpected YAML event %d", (int)ev->type);
    }
}

json_t *cli_yaml_to_json(const char *buf, size_t len, char *err, size_t errlen)
{
    return cli_yaml_read(buf, len, 0, err, errlen);
}

json_t *cli_yaml_read(const char *buf, size_t len, int flags, char *err, size_t errlen)
{
    Reader r;
    memset(&r, 0, sizeof r);
    r.wandb = (flags & CLI_YAML_WANDB) != 0;
    r.buf = buf;
    r.len = len;
    r.err = err;
    r.errlen = errlen;
    if (errlen > 0)
        err[0] = '\0';
    if (!yaml_parser_initialize(&r.parser)) {
        fail(&r, 0, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)(len > 0 ? buf : ""), len);

    json_t *doc = NULL;
    /* STREAM-START, then DOCUMENT-START or, for no document, STREAM-END. */
    if (next(&r) != 0 || next(&r) != 0)
        goto fail;
    if (r.event.type == YAML_STREAM_END_EVENT) { /* blank, or comments only */
        fail(&r, 0, "empty document: a spec is a mapping (name: ...)");
        goto fail;
    }
    size_t doc_line = r.event.start_mark.line; /* where "---" is, or the content */
    if (next(&r) != 0)
        goto fail;
    const yaml_event_t *root = &r.event;
    if (root->type == YAML_SCALAR_EVENT && root->data.scalar.length == 0 &&
        root->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && root->data.scalar.tag == NULL &&
        root->data.scalar.anchor == NULL) {
        fail(&r, doc_line, "empty document: a spec is a mapping (name: ...)");
        goto fail;
    }
    if (parse_node(&r, 0, &doc) != 0)
        goto fail;
    /* DOCUMENT-END, then STREAM-END: a second document is refused rather
     * than ignored, since the user meant it to count. */
    if (next(&r) != 0 || next(&r) != 0)
        goto fail;
    if (r.event.type != YAML_STREAM_END_EVENT) {
        fail(&r, r.event.start_mark.line, "a second document (---): a spec is one document");
        goto fail;
    }
    yaml_event_delete(&r.event);
    yaml_parser_delete(&r.parser);
    return doc;
fail:
    json_decref(doc);
    if (r.have_event)
        yaml_event_delete(&r.event);
    yaml_parser_delete(&r.parser);
    if (errlen > 0 && err[0] == '\0')
        set_err(&r, "line 1: cannot read this as YAML");
    return NULL;
}
