/* .rungignore rules (ignore.h). */
#include "ignore.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *glob;    /* without '!', the leading '/' and the trailing '/' */
    bool negate;   /* '!': a match packs it */
    bool dir_only; /* a trailing '/' */
    bool anchored; /* a '/' at the start or in the middle: matched from the top */
    bool fixed;    /* a default no rule may undo (.git) */
} Rule;

struct CliIgnore {
    Rule *rules;
    size_t n, cap;
};

/* One character class at *g ("[...]"), against c; *g moves past it.
 * Returns -1 when the class is not closed (then '[' is literal). */
static int class_match(const char **g, char c)
{
    const char *p = *g + 1;
    bool neg = *p == '!' || *p == '^';
    if (neg)
        p++;
    bool hit = false;
    const char *first = p;
    for (; *p != '\0' && (*p != ']' || p == first); p++) {
        char lo = *p;
        if (lo == '\\' && p[1] != '\0')
            lo = *++p;
        if (p[1] == '-' && p[2] != ']' && p[2] != '\0') {
            char hi = p[2];
            p += 2;
            if (c >= lo && c <= hi)
                hit = true;
        } else if (c == lo) {
            hit = true;
        }
    }
    if (*p != ']')
        return -1;
    *g = p + 1;
    return hit != neg && c != '/';
}

bool cli_ignore_glob(const char *g, const char *s)
{
    while (*g != '\0') {
        if (g[0] == '*' && g[1] == '*' && (g[2] == '/' || g[2] == '\0')) {
            if (g[2] == '\0')
                return true; /* trailing "**": everything below */
            /* "**" followed by '/': zero or more folders */
            for (const char *t = s;; t++) {
                if ((t == s || t[-1] == '/') && cli_ignore_glob(g + 3, t))
                    return true;
                if (*t == '\0')
                    return false;
            }
        }
        if (*g == '*') {
            while (*g == '*')
                g++;
            for (const char *t = s;; t++) {
                if (cli_ignore_glob(g, t))
                    return true;
                if (*t == '\0' || *t == '/')
                    return false;
            }
        }
        if (*s == '\0')
            return false;
        if (*g == '?') {
            if (*s == '/')
                return false;
            g++;
            s++;
            continue;
        }
        if (*g == '[') {
            const char *after = g;
            int m = class_match(&after, *s);
            if (m >= 0) {
                if (!m)
                    return false;
                g = after;
                s++;
                continue;
            }
        }
        if (*g == '\\' && g[1] != '\0')
            g++;
        if (*g != *s)
            return false;
        g++;
        s++;
    }
    return *s == '\0';
}

static void add_rule(CliIgnore *ig, const char *line, size_t len, bool fixed)
{
    Rule r = {0};
    r.fixed = fixed;
    while (len > 0 && line[len - 1] == ' ' && (len < 2 || line[len - 2] != '\\'))
        len--;
    if (len == 0 || line[0] == '#')
        return;
    if (line[0] == '!') {
        r.negate = true;
        line++;
        len--;
    } else if (line[0] == '\\' && len > 1 && (line[1] == '#' || line[1] == '!')) {
        line++;
        len--;
    }
    if (len > 0 && line[len - 1] == '/') {
        r.dir_only = true;
        len--;
    }
    if (len == 0)
        return;
    r.anchored = memchr(line, '/', len) != NULL;
    if (line[0] == '/') {
        line++;
        len--;
    }
    if (len == 0)
        return;
    /* A leading "**" + '/' matches at any depth: the same as unanchored. */
    if (len > 3 && memcmp(line, "**/", 3) == 0 && memchr(line + 3, '/', len - 3) == NULL) {
        line += 3;
        len -= 3;
        r.anchored = false;
    }
    r.glob = malloc(len + 1);
    if (r.glob == NULL)
        return;
    memcpy(r.glob, line, len);
    r.glob[len] = '\0';
    if (ig->n == ig->cap) {
        size_t cap = ig->cap ? ig->cap * 2 : 16;
        Rule *grown = realloc(ig->rules, cap * sizeof *grown);
        if (grown == NULL) {
            free(r.glob);
            return;
        }
        ig->rules = grown;
        ig->cap = cap;
    }
    ig->rules[ig->n++] = r;
}

CliIgnore *cli_ignore_new(const char *text, size_t len)
{
    CliIgnore *ig = calloc(1, sizeof *ig);
    if (ig == NULL)
        return NULL;
    static const char *const defaults[] = {"__pycache__/", "*.pyc", ".venv/", "venv/"};
    add_rule(ig, ".git/", 5, true);
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        add_rule(ig, defaults[i], strlen(defaults[i]), false);
    for (size_t at = 0; text != NULL && at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - at;
        if (n > 0 && text[at + n - 1] == '\r')
            n--;
        add_rule(ig, text + at, n, false);
        at = end + 1;
    }
    return ig;
}

void cli_ignore_free(CliIgnore *ig)
{
    if (ig == NULL)
        return;
    for (size_t i = 0; i < ig->n; i++)
        free(ig->rules[i].glob);
    free(ig->rules);
    free(ig);
}

static bool rule_matches(const Rule *r, const char *path, bool is_dir)
{
    if (r->dir_only && !is_dir)
        return false;
    if (r->anchored)
        return cli_ignore_glob(r->glob, path);
    const char *base = strrchr(path, '/');
    return cli_ignore_glob(r->glob, base ? base + 1 : path);
}

bool cli_ignore_packed(const CliIgnore *ig, const char *path, bool is_dir, bool venv)
{
    bool packed = !(is_dir && venv);
    for (size_t i = 0; i < ig->n; i++) {
        const Rule *r = &ig->rules[i];
        if (!rule_matches(r, path, is_dir))
            continue;
        if (r->fixed)
            return false;
        packed = r->negate;
    }
    return packed;
}
