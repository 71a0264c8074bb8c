/* How the rung client writes values for a person; see fmt.h. */
#include "fmt.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "paused": asha with promote, waiting at a rung to be promoted;
 * "preempted": given back by its worker, waiting to resume. */
const char *const cli_fmt_states[CLI_FMT_N_STATES] = {"running", "pending",   "preempted",
                                                      "paused",  "completed", "stopped",
                                                      "failed",  "canceled"};

void *cli_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL) {
        fputs("rung: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *cli_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (p == NULL) {
        fputs("rung: out of memory\n", stderr);
        abort();
    }
    return p;
}

char *cli_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(cli_xmalloc(n), s, n);
}

char *cli_fmt_number(double v, char *buf, size_t size)
{
    snprintf(buf, size, "%.6g", v);
    return buf;
}

char *cli_fmt_value(const json_t *v, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (v == NULL || json_is_null(v)) {
        snprintf(buf, size, "-");
    } else if (json_is_integer(v)) {
        snprintf(buf, size, "%" PRId64, (int64_t)json_integer_value(v));
    } else if (json_is_real(v)) {
        cli_fmt_number(json_real_value(v), buf, size);
    } else if (json_is_string(v)) {
        cli_fmt_sanitize(json_string_value(v), buf, size, false);
    } else if (json_is_boolean(v)) {
        snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
    } else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        cli_fmt_sanitize(text ? text : "?", buf, size, false);
        size_t n = strlen(buf);
        if (text && strlen(text) > n && n >= 3) {
            /* Cut short: say so, on a character boundary. */
            size_t cut = n - 3;
            while (cut > 0 && ((unsigned char)buf[cut] & 0xC0) == 0x80)
                cut--;
            memcpy(buf + cut, "...", 4);
        }
        free(text);
    }
    return buf;
}

char *cli_fmt_config(const json_t *config)
{
    if (!json_is_object(config) || json_object_size(config) == 0)
        return cli_xstrdup("-");
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (f == NULL)
        return cli_xstrdup("-");
    const char *key;
    json_t *v;
    const char *sep = "";
    json_object_foreach((json_t *)config, key, v) {
        char name[CLI_FMT_VALUE_MAX], val[CLI_FMT_VALUE_MAX];
        cli_fmt_sanitize(key, name, sizeof name, false);
        fprintf(f, "%s%s=%s", sep, name, cli_fmt_value(v, val, sizeof val));
        sep = ", ";
    }
    fclose(f);
    return out;
}

int64_t cli_fmt_parse_time(const char *s)
{
    if (s == NULL)
        return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (rest == NULL)
        return -1;
    int64_t ms = 0;
    if (*rest == '.') {
        /* Fractional seconds: keep milliseconds, ignore finer digits. */
        int64_t scale = 100;
        for (rest++; *rest >= '0' && *rest <= '9'; rest++) {
            ms += (*rest - '0') * scale;
            scale /= 10;
        }
    }
    if (strcmp(rest, "Z") != 0)
        return -1;
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return -1;
    return (int64_t)t * 1000 + ms;
}

char *cli_fmt_age(const char *rfc3339, int64_t now_ms, char *buf, size_t size)
{
    int64_t t = cli_fmt_parse_time(rfc3339);
    if (t < 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    /* A clock a little behind the daemon's reads as "just now", not as a
     * time in the future. */
    int64_t s = now_ms > t ? (now_ms - t) / 1000 : 0;
    if (s < 60)
        snprintf(buf, size, "%" PRId64 "s ago", s);
    else if (s < 3600)
        snprintf(buf, size, "%" PRId64 "m ago", s / 60);
    else if (s < 86400)
        snprintf(buf, size, "%" PRId64 "h ago", s / 3600);
    else
        snprintf(buf, size, "%" PRId64 "d ago", s / 86400);
    return buf;
}

void cli_fmt_bar(FILE *out, int64_t done, int64_t total, int width)
{
    int64_t filled = total > 0 ? done * width / total : 0;
    if (filled > width)
        filled = width;
    if (filled < 0)
        filled = 0;
    fputc('[', out);
    for (int i = 0; i < width; i++)
        fputc(i < filled ? '#' : '.', out);
    fputc(']', out);
}

int64_t cli_fmt_int(const json_t *obj, const char *key, int64_t def)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

const char *cli_fmt_str(const json_t *obj, const char *key, const char *def)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : def;
}

int64_t cli_fmt_done(const json_t *counts)
{
    return cli_fmt_int(counts, "completed", 0) + cli_fmt_int(counts, "stopped", 0) +
           cli_fmt_int(counts, "failed", 0) + cli_fmt_int(counts, "canceled", 0);
}

int64_t cli_fmt_total(const json_t *experiment)
{
    int64_t total = cli_fmt_int(experiment, "total_trials", -1);
    if (total >= 0)
        return total;
    /* An older daemon without total_trials: num_samples is a lower bound
     * (grids multiply it), and the trials that exist are another. */
    const json_t *counts = json_object_get(experiment, "counts");
    int64_t sum = 0;
    for (int i = 0; i < CLI_FMT_N_STATES; i++)
        sum += cli_fmt_int(counts, cli_fmt_states[i], 0);
    int64_t samples = cli_fmt_int(experiment, "num_samples", 1);
    return sum > samples ? sum : samples;
}

void cli_fmt_counts(FILE *out, const json_t *counts)
{
    const char *sep = "";
    for (int i = 0; i < CLI_FMT_N_STATES; i++) {
        int64_t n = cli_fmt_int(counts, cli_fmt_states[i], 0);
        if (n == 0)
            continue;
        fprintf(out, "%s%" PRId64 " %s", sep, n, cli_fmt_states[i]);
        sep = ", ";
    }
    if (sep[0] == '\0')
        fputs("no trials yet", out);
}

/* Bytes in the UTF-8 sequence that starts with byte c (1 for a stray
 * continuation byte, so that bad input still advances). */
static size_t utf8_len(unsigned char c)
{
    if (c >= 0xF0)
        return 4;
    if (c >= 0xE0)
        return 3;
    if (c >= 0xC0)
        return 2;
    return 1;
}

void cli_fmt_sanitize(const char *src, char *dst, size_t size, bool keep_newlines)
{
    if (size == 0)
        return;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p;) {
        size_t n = utf8_len(*p);
        if (o + n >= size)
            break; /* cut at a code point boundary, never in the middle */
        if (*p == '\n' && keep_newlines) {
            dst[o++] = '\n';
            p++;
        } else if (*p == '\t') {
            dst[o++] = ' ';
            p++;
        } else if (*p < 0x20 || *p == 0x7F) {
            dst[o++] = '?'; /* ESC, CR, BEL...: never reach the terminal */
            p++;
        } else {
            size_t i = 0;
            while (i < n && p[i] != '\0')
                dst[o++] = (char)p[i++];
            p += i;
        }
    }
    dst[o] = '\0';
}

size_t cli_fmt_width(const char *s, size_t len)
{
    size_t cols = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            cols++;
    return cols;
}

size_t cli_fmt_prefix(const char *s, size_t len, size_t cols)
{
    size_t i = 0, used = 0;
    while (i < len) {
        size_t n = utf8_len((unsigned char)s[i]);
        if (used + 1 > cols || i + n > len)
            break;
        i += n;
        used++;
    }
    return i;
}
