/* A trial's invalid report lines; see warnings.h. */
#include "warnings.h"

#include <string.h>

#include "utf8.h"

void warnings_init(Warnings *w)
{
    memset(w, 0, sizeof *w);
}

size_t warnings_clean(char *out, size_t max, const char *in, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t c = rung_utf8_char_len(in + i, len - i);
        if (c == 0 || in[i] == '\0') {
            if (o + 1 > max)
                break;
            out[o++] = '?';
            i++;
            continue;
        }
        if (o + c > max)
            break;
        memcpy(out + o, in + i, c);
        o += c;
        i += c;
    }
    out[o] = '\0';
    return o;
}

void warnings_add(Warnings *w, const char *line, size_t len, const char *why)
{
    if (w->count < WARNINGS_COUNT_MAX)
        w->count++;
    int slot;
    if (w->n < WARNINGS_LAST) {
        slot = (w->first + w->n) % WARNINGS_LAST;
        w->n++;
    } else {
        slot = w->first;
        w->first = (w->first + 1) % WARNINGS_LAST;
    }
    if (warnings_clean(w->line[slot], WARNINGS_LINE_MAX, line, len) == 0)
        strcpy(w->line[slot], "?"); /* the server takes no empty line */
    if (warnings_clean(w->why[slot], WARNINGS_WHY_MAX, why, strlen(why)) == 0)
        strcpy(w->why[slot], "invalid report line");
    w->changed = true;
}

bool warnings_add_once(Warnings *w, const char *name, const char *line, size_t len, const char *why)
{
    /* A linear search: a few names per line, a few lines a second. */
    for (int i = 0; i < w->n_names; i++) {
        if (strcmp(w->names[i], name) == 0)
            return false;
    }
    if (w->n_names >= WARNINGS_NAMES_MAX || strlen(name) > WARNINGS_NAME_MAX)
        return false;
    strcpy(w->names[w->n_names++], name);
    warnings_add(w, line, len, why);
    return true;
}

json_t *warnings_json(const Warnings *w)
{
    json_t *last = json_array();
    json_t *o = json_pack("{s:I, s:o}", "count", (json_int_t)w->count, "last", last);
    if (o == NULL)
        return NULL;
    for (int k = 0; k < w->n; k++) {
        int slot = (w->first + k) % WARNINGS_LAST;
        json_t *item = json_pack("{s:s, s:s}", "line", w->line[slot], "why", w->why[slot]);
        if (item == NULL || json_array_append_new(last, item) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

json_t *warnings_take(Warnings *w)
{
    if (!w->changed)
        return NULL;
    json_t *o = warnings_json(w);
    if (o != NULL)
        w->changed = false;
    return o;
}
