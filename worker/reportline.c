/* The report line parser (reportline.h): turns one line of a trial's stdout
 * into a report, a log line, or a warning.
 *
 * The work is done in three steps, each with one job:
 *   1. classify: only a line that starts, at its first byte, with the word
 *      "@rung" can be a report; everything else is the trial's log;
 *   2. rewrite: copy the JSON text, turning the bare tokens NaN, Infinity
 *      and -Infinity (outside strings) into marked strings that jansson can
 *      read, since strict JSON has no such tokens;
 *   3. parse and check: jansson reads the copy (duplicate keys rejected),
 *      then the object is checked field by field: numbers into a new
 *      metrics object, every other value into a new info object (with its
 *      marks undone) and a note for the trial's warnings.
 *
 * Why the rewritten tokens are marked: {"loss": NaN} must give the metric
 * "NaN" while {"note": "NaN"} is a string and so not a number. A bare token
 * becomes "\u0000NaN" (a NUL, then the token), parsed with JSON_ALLOW_NUL.
 * The trial cannot forge that mark: a \u0000 escape inside one of its
 * strings is doubled by the rewrite, and jansson refuses raw control bytes
 * and overlong UTF-8, so a string made of exactly one NUL and a token can
 * only come from the rewrite. Object keys never hold a NUL (jansson refuses
 * them even with JSON_ALLOW_NUL), so the mark cannot reach a metric name.
 *
 * Lines are short (a few hundred bytes) and come at most a few times a
 * second per trial; the parser favours being obviously correct over speed,
 * but is linear in the line's length. */
#include "reportline.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nonfinite.h"
#include "utf8.h"

#define PREFIX "@rung"
#define PREFIX_LEN 5

/* A report carries a handful of metrics; 64 is far above any real one and
 * keeps a runaway program from filling the reports table through one line. */
#define METRICS_MAX 64
/* Metric names are shown in the dashboard's columns and in CSV headers. */
#define METRIC_NAME_MAX 64
/* Every integer up to 2^53 is exact in a double, which is how JavaScript
 * (the dashboard) and most clients read JSON numbers. */
#define STEP_MAX ((int64_t)1 << 53)
/* Longest piece of a metric name quoted in a why message. */
#define WHY_NAME_MAX 40
#define STR_(x) #x
#define STR(x) STR_(x)

/* A bare token of Python's json.dumps and its two other forms. The tokens
 * are the spellings of common/nonfinite.h, the same strings that the
 * metrics carry on to rungd. */
typedef struct {
    const char *token;  /* as printed, outside strings */
    const char *json;   /* what the rewrite puts in its place */
    const char *parsed; /* what jansson makes of json: a NUL, then the token */
} Special;

#define SPECIAL(token)                                                                             \
    {                                                                                              \
        token, "\"\\u0000" token "\"", "\0" token                                                  \
    }
static const Special SPECIALS[] = {
    SPECIAL(RUNG_NONFINITE_NAN),
    SPECIAL(RUNG_NONFINITE_INF),
    SPECIAL(RUNG_NONFINITE_NEG_INF),
};
#undef SPECIAL
#define N_SPECIALS (sizeof SPECIALS / sizeof SPECIALS[0])

static void why_set(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void why_set(char *why, size_t why_size, const char *fmt, ...)
{
    if (why == NULL || why_size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
}

/* JSON's whitespace (RFC 8259), which may surround any token. */
static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A byte after which a JSON value may start (ignoring whitespace). */
static bool may_precede_value(char c)
{
    return is_json_space(c) || c == '[' || c == '{' || c == ':' || c == ',';
}

/* A byte that may directly follow a JSON value. */
static bool may_follow_value(char c)
{
    return is_json_space(c) || c == ',' || c == ']' || c == '}';
}

/* The special token that starts at in[i] as a whole token in a value's
 * place, or NULL. A token followed by ':' would be an object key: it is left
 * alone, so that {NaN: 1} stays the invalid JSON it is. */
static const Special *special_at(const char *in, size_t len, size_t i)
{
    if (i > 0 && !may_precede_value(in[i - 1]))
        return NULL;
    for (size_t k = 0; k < N_SPECIALS; k++) {
        const Special *s = &SPECIALS[k];
        size_t n = strlen(s->token);
        if (len - i < n || memcmp(in + i, s->token, n) != 0)
            continue;
        size_t j = i + n;
        if (j < len && !may_follow_value(in[j]))
            return NULL;
        while (j < len && is_json_space(in[j]))
            j++;
        return (j < len && in[j] == ':') ? NULL : s;
    }
    return NULL;
}

/* Appends bytes to out at *n when out is not NULL; counts them either way. */
static void emit(char *out, size_t *n, const char *bytes, size_t count)
{
    if (out != NULL)
        memcpy(out + *n, bytes, count);
    *n += count;
}

/* Copies in[0..len) into out with the rewrites described at the top of the
 * file and returns the copy's length. With out NULL it only measures, so a
 * caller sizes the buffer with a first call and fills it with a second. */
static size_t rewrite(const char *in, size_t len, char *out)
{
    static const char NUL_ESCAPE[] = "\\u0000";
    const size_t nul_len = sizeof NUL_ESCAPE - 1;
    size_t n = 0;
    bool in_string = false;
    size_t i = 0;
    while (i < len) {
        char c = in[i];
        if (in_string) {
            if (c == '\\' && len - i >= nul_len && memcmp(in + i, NUL_ESCAPE, nul_len) == 0) {
                emit(out, &n, NUL_ESCAPE, nul_len);
                emit(out, &n, NUL_ESCAPE, nul_len);
                i += nul_len;
            } else if (c == '\\' && i + 1 < len) {
                /* Copied as a pair so that \" does not end the string. */
                emit(out, &n, in + i, 2);
                i += 2;
            } else {
                in_string = c != '"';
                emit(out, &n, &c, 1);
                i++;
            }
            continue;
        }
        const Special *s = special_at(in, len, i);
        if (s != NULL) {
            emit(out, &n, s->json, strlen(s->json));
            i += strlen(s->token);
        } else {
            in_string = c == '"';
            emit(out, &n, &c, 1);
            i++;
        }
    }
    return n;
}

/* The special value that v holds as a marked string, or NULL. */
static const Special *special_of(const json_t *v)
{
    if (!json_is_string(v))
        return NULL;
    const char *str = json_string_value(v);
    size_t len = json_string_length(v);
    for (size_t k = 0; k < N_SPECIALS; k++) {
        const Special *s = &SPECIALS[k];
        if (len == 1 + strlen(s->token) && memcmp(str, s->parsed, len) == 0)
            return s;
    }
    return NULL;
}

/* Copies jansson's error text into why after "invalid JSON: ", undoing the
 * rewrite in the source text it quotes ("near '...'"), so the trial's author
 * sees NaN where they wrote NaN. */
static void why_json_error(char *why, size_t why_size, const char *text)
{
    char clean[JSON_ERROR_TEXT_LENGTH];
    size_t n = 0;
    size_t i = 0;
    size_t text_len = strlen(text);
    while (i < text_len && n + 1 < sizeof clean) {
        const char *piece = text + i;
        size_t used = 1;
        size_t piece_len = 1;
        for (size_t k = 0; k < N_SPECIALS; k++) {
            size_t json_len = strlen(SPECIALS[k].json);
            if (strncmp(text + i, SPECIALS[k].json, json_len) == 0) {
                piece = SPECIALS[k].token;
                piece_len = strlen(piece);
                used = json_len;
                break;
            }
        }
        if (used == 1 && strncmp(text + i, "\\u0000\\u0000", 12) == 0) {
            piece_len = 6; /* a doubled \u0000 of the trial's: show it once */
            used = 12;
        }
        if (piece_len > sizeof clean - 1 - n)
            piece_len = sizeof clean - 1 - n;
        memcpy(clean + n, piece, piece_len);
        n += piece_len;
        i += used;
    }
    clean[n] = '\0';
    why_set(why, why_size, "invalid JSON: %s", clean);
}

/* Writes a metric name into dst for a why message: control bytes become '?'
 * (the message goes to logs and terminals) and a long name is cut at a UTF-8
 * character boundary and marked with "...". */
static void quote_name(char *dst, size_t size, const char *name)
{
    size_t keep = rung_utf8_truncate_len(name, WHY_NAME_MAX);
    bool cut = name[keep] != '\0';
    size_t n = 0;
    for (size_t i = 0; i < keep && n + 1 < size; i++) {
        unsigned char c = (unsigned char)name[i];
        dst[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    for (size_t i = 0; cut && i < 3 && n + 1 < size; i++)
        dst[n++] = '.';
    dst[n] = '\0';
}

/* Reads "step": an integer in [0, STEP_MAX], or a real with such a value
 * (some programs print 3.0 for a float step). */
static bool read_step(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > STEP_MAX)
            return false;
        *out = (int64_t)i;
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        /* Written so that a NaN fails too (jansson makes none, but cheap). */
        if (!(d >= 0.0 && d <= (double)STEP_MAX))
            return false;
        int64_t i = (int64_t)d;
        if ((double)i != d)
            return false;
        *out = i;
        return true;
    }
    return false;
}

/* An info value as it goes on to rungd: a new value, or NULL with why
 * (a phrase, "it holds a NUL character") when it is left out. The bare
 * tokens inside arrays and objects become their plain strings (info holds
 * no numbers' marks); a string with a NUL is refused, as rungd's JSON
 * reader refuses \u0000. Recursion stops at REPORTLINE_INFO_DEPTH, so a
 * hostile line nested 2,000 deep costs 16 levels of stack. */
static json_t *info_copy(const json_t *v, int depth, const char **why)
{
    if (json_is_string(v)) {
        const Special *special = special_of(v);
        if (special != NULL)
            return json_string(special->token);
        if (memchr(json_string_value(v), '\0', json_string_length(v)) != NULL) {
            *why = "it holds a NUL character";
            return NULL;
        }
        return json_incref((json_t *)v);
    }
    if (!json_is_array(v) && !json_is_object(v))
        return json_incref((json_t *)v); /* a number inside, true, false, null */
    if (depth + 1 > REPORTLINE_INFO_DEPTH) {
        *why = "it nests deeper than " STR(REPORTLINE_INFO_DEPTH);
        return NULL;
    }
    json_t *copy = json_is_array(v) ? json_array() : json_object();
    size_t i;
    const char *key;
    json_t *item, *c = NULL;
    bool ok = copy != NULL;
    if (ok && json_is_array(v)) {
        json_array_foreach(v, i, item) {
            c = info_copy(item, depth + 1, why);
            if (c == NULL || json_array_append_new(copy, c) != 0) {
                ok = false;
                break;
            }
        }
    } else if (ok) {
        json_object_foreach((json_t *)v, key, item) {
            c = info_copy(item, depth + 1, why);
            if (c == NULL || json_object_set_new(copy, key, c) != 0) {
                ok = false;
                break;
            }
        }
    }
    if (!ok) {
        if (*why == NULL)
            *why = "out of memory";
        json_decref(copy);
        return NULL;
    }
    return copy;
}

/* Adds a note for the trial's warnings: "metric 'name' is not a number"
 * and the rest of the sentence. */
static int add_note(ReportLine *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int add_note(ReportLine *r, const char *key, const char *fmt, ...)
{
    char name[WHY_NAME_MAX + 4], rest[160], text[256];
    quote_name(name, sizeof name, key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rest, sizeof rest, fmt, ap);
    va_end(ap);
    snprintf(text, sizeof text, "metric '%s' is not a number%s", name, rest);
    return json_object_set_new(r->notes, key, json_string(text));
}

/* Takes one value that is not a number into r's info, or leaves it out
 * with a note saying why; *bytes counts the line's info so far. -1 only
 * when out of memory. */
static int take_info(ReportLine *r, const char *key, const json_t *value, size_t *bytes)
{
    const char *why = NULL;
    json_t *copy = info_copy(value, 0, &why);
    if (copy == NULL)
        return add_note(r, key, " and %s: left out of info", why);
    size_t n = json_dumpb(copy, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
    if (n > REPORTLINE_INFO_VALUE_MAX || *bytes + n > REPORTLINE_INFO_MAX) {
        json_decref(copy);
        if (n > REPORTLINE_INFO_VALUE_MAX)
            return add_note(r, key, " and its %zu bytes of JSON are more than %d: left out of info",
                            n, REPORTLINE_INFO_VALUE_MAX);
        return add_note(r, key, " and the line's info would pass %d bytes: left out of info",
                        REPORTLINE_INFO_MAX);
    }
    *bytes += n;
    bool done = strcmp(key, "done") == 0 && json_is_boolean(copy);
    if (done)
        r->done = json_is_true(copy);
    if (json_object_set_new(r->info, key, copy) != 0)
        return -1;
    return done ? 0 : add_note(r, key, ": kept as info");
}

/* Checks the parsed object and builds the report. Borrows root. */
static ReportLineKind check_report(json_t *root, int64_t next_step, ReportLine *out, char *why,
                                   size_t why_size)
{
    char name[WHY_NAME_MAX + 4];
    json_t *step_value = json_object_get(root, "step");
    size_t count = json_object_size(root) - (step_value != NULL ? 1 : 0);
    if (count == 0) {
        why_set(why, why_size, "nothing reported: no key but step");
        return REPORTLINE_INVALID;
    }
    if (count > METRICS_MAX) {
        why_set(why, why_size, "%zu metrics and info values, more than %d", count, METRICS_MAX);
        return REPORTLINE_INVALID;
    }
    int64_t s = next_step;
    if (step_value != NULL && !read_step(step_value, &s)) {
        why_set(why, why_size, "step must be an integer in [0, 2^53]");
        return REPORTLINE_INVALID;
    }

    ReportLine r = {.metrics = json_object(), .info = json_object(), .notes = json_object()};
    if (r.metrics == NULL || r.info == NULL || r.notes == NULL)
        goto oom;
    size_t info_bytes = 0;
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "step") == 0)
            continue;
        size_t key_len = strlen(key);
        if (key_len == 0) {
            why_set(why, why_size, "a metric name is empty");
            goto invalid;
        }
        if (key_len > METRIC_NAME_MAX) {
            quote_name(name, sizeof name, key);
            why_set(why, why_size, "metric name '%s' is longer than %d bytes", name,
                    METRIC_NAME_MAX);
            goto invalid;
        }
        const Special *special = special_of(value);
        double nonfinite;
        json_t *copy = NULL;
        if (json_is_number(value)) {
            copy = json_incref(value);
        } else if (special != NULL &&
                   rung_nonfinite_parse(special->token, strlen(special->token), &nonfinite)) {
            copy = rung_nonfinite_to_json(nonfinite);
        } else {
            if (take_info(&r, key, value, &info_bytes) != 0)
                goto oom;
            continue;
        }
        if (json_object_set_new(r.metrics, key, copy) != 0)
            goto oom;
    }
    r.step = s;
    *out = r;
    return REPORTLINE_OK;

oom:
    why_set(why, why_size, "out of memory");
invalid:
    reportline_clear(&r);
    return REPORTLINE_INVALID;
}

void reportline_clear(ReportLine *r)
{
    json_decref(r->metrics);
    json_decref(r->info);
    json_decref(r->notes);
    r->metrics = r->info = r->notes = NULL;
    r->done = false;
}

ReportLineKind reportline_parse(const char *line, size_t len, int64_t next_step, ReportLine *out,
                                char *why, size_t why_size)
{
    out->metrics = out->info = out->notes = NULL;
    out->done = false;
    why_set(why, why_size, "%s", "");
    if (line == NULL)
        return REPORTLINE_NONE;
    if (len > 0 && line[len - 1] == '\r')
        len--;

    /* Strict on purpose: the marker must be the line's first bytes, so that
     * log output that merely mentions "@rung" (indented, quoted, in a stack
     * trace) is never taken for a report. */
    if (len < PREFIX_LEN || memcmp(line, PREFIX, PREFIX_LEN) != 0)
        return REPORTLINE_NONE;
    if (len > PREFIX_LEN && line[PREFIX_LEN] != ' ' && line[PREFIX_LEN] != '\t') {
        /* "@rung{...}" is a report missing its space: worth a warning. Any
         * other byte makes another word ("@rungs", "@rung:"), so a log line. */
        if (line[PREFIX_LEN] == '{') {
            why_set(why, why_size, "'@rung' must be followed by a space");
            return REPORTLINE_INVALID;
        }
        return REPORTLINE_NONE;
    }
    if (len > REPORTLINE_MAX) {
        why_set(why, why_size, "line is longer than %d bytes", REPORTLINE_MAX);
        return REPORTLINE_INVALID;
    }
    size_t start = PREFIX_LEN;
    while (start < len && (line[start] == ' ' || line[start] == '\t'))
        start++;
    if (start == len) {
        why_set(why, why_size, "'@rung' is not followed by a JSON object");
        return REPORTLINE_INVALID;
    }

    const char *text = line + start;
    size_t text_len = len - start;
    /* No JSON text holds a raw NUL, and jansson's reader skips some of them
     * instead of failing ({"x": 1<NUL>} would pass), so they are refused here. */
    const char *nul = memchr(text, '\0', text_len);
    if (nul != NULL) {
        why_set(why, why_size, "NUL byte at byte %zu of the line", (size_t)(nul - line) + 1);
        return REPORTLINE_INVALID;
    }
    size_t buf_len = rewrite(text, text_len, NULL);
    char *buf = malloc(buf_len);
    if (buf == NULL) {
        why_set(why, why_size, "out of memory");
        return REPORTLINE_INVALID;
    }
    rewrite(text, text_len, buf);
    json_error_t jerr;
    json_t *root = json_loadb(buf, buf_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    free(buf);
    if (root == NULL) {
        why_json_error(why, why_size, jerr.text);
        return REPORTLINE_INVALID;
    }
    ReportLineKind kind;
    if (!json_is_object(root)) {
        why_set(why, why_size, "the report must be a JSON object");
        kind = REPORTLINE_INVALID;
    } else {
        kind = check_report(root, next_step, out, why, why_size);
    }
    json_decref(root);
    return kind;
}
