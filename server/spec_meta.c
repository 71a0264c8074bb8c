/* An experiment's and a trial's tags and notes (docs/api.md, "Tags and
 * notes"): what people write about their runs, not what runs them. They
 * are checked here for the spec (spec_parse), for the PATCH bodies of
 * experiments and trials, and for the ?tag= of the listings, with the
 * same rules everywhere, so that whatever one route accepts the others
 * accept too. They stay out of spec->json: the spec column stores what
 * runs (the golden Core test hashes it), the tags and notes columns of
 * schema 015 what is said about it, and PATCH rewrites only the latter. */
#include "spec_internal.h"

#include <stdio.h>
#include <string.h>

#include "utf8.h"

bool spec_tag_ok(const char *s, size_t len)
{
    if (len == 0 || len > SPEC_MAX_TAG)
        return false;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = rung_utf8_char_len(s + i, len - i);
        if (n == 0)
            return false;
        /* Printable: no C0 or C1 control character, no DEL; no comma,
         * which separates tags where they are written in one string (the
         * CLI's tag column, the CSV). */
        if (c < 0x20 || c == 0x7f || c == ',')
            return false;
        if (n == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)
            return false;
        i += n;
    }
    return true;
}

int spec_tags_parse(const json_t *v, const char *field, int code, json_t **out, RungError *err)
{
    *out = NULL;
    if (!json_is_array(v))
        return rung_error_set(err, code, field, "%s: must be an array of strings", field);
    if (json_array_size(v) > SPEC_MAX_TAGS)
        return rung_error_set(err, code, field, "%s: at most %d tags, not %zu", field,
                              SPEC_MAX_TAGS, json_array_size(v));
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *t = json_array_get(v, i);
        char path[RUNG_FIELD_MAX];
        snprintf(path, sizeof path, "%s[%zu]", field, i);
        if (!json_is_string(t))
            return rung_error_set(err, code, path, "%s: must be a string", path);
        if (!spec_tag_ok(json_string_value(t), json_string_length(t)))
            return rung_error_set(err, code, path,
                                  "%s: must be 1 to %d bytes of printable UTF-8 without commas",
                                  path, SPEC_MAX_TAG);
        /* A duplicate is refused rather than dropped, so that what is
         * stored is what was sent (at most 32 tags: quadratic is fine). */
        for (size_t k = 0; k < i; k++)
            if (json_equal((json_t *)t, json_array_get(v, k)))
                return rung_error_set(err, code, path, "%s: '%s' is %s[%zu] already", path,
                                      json_string_value(t), field, k);
    }
    *out = json_deep_copy(v);
    if (*out == NULL)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
    return 0;
}

int spec_notes_parse(const json_t *v, const char *field, int code, json_t **out, RungError *err)
{
    *out = NULL;
    if (!json_is_string(v))
        return rung_error_set(err, code, field, "%s: must be a string", field);
    size_t len = json_string_length(v);
    if (len > SPEC_MAX_NOTES)
        return rung_error_set(err, code, field, "%s: at most %d bytes, not %zu", field,
                              SPEC_MAX_NOTES, len);
    /* Stored as SQLite text and printed by the CLI: a NUL would cut it. */
    if (strlen(json_string_value(v)) != len)
        return rung_error_set(err, code, field, "%s: must not contain \\u0000", field);
    *out = json_incref((json_t *)v);
    return 0;
}

int spec_meta_patch(const json_t *body, json_t **tags, json_t **notes, RungError *err)
{
    const int A = RUNG_E_INVALID_ARGUMENT;
    *tags = *notes = NULL;
    const json_t *t = json_object_get(body, "tags");
    const json_t *n = json_object_get(body, "notes");
    if (t != NULL && spec_tags_parse(t, "tags", A, tags, err))
        return err->code;
    if (n != NULL && spec_notes_parse(n, "notes", A, notes, err)) {
        json_decref(*tags);
        *tags = NULL;
        return err->code;
    }
    return 0;
}

int spec_parse_meta(json_t *j, Spec *spec, RungError *err)
{
    json_t *t = json_object_get(j, "tags");
    json_t *n = json_object_get(j, "notes");
    if (t != NULL && spec_tags_parse(t, "tags", E, &spec->tags, err))
        return err->code;
    if (n != NULL && spec_notes_parse(n, "notes", E, &spec->notes, err))
        return err->code;
    if (spec->tags == NULL)
        spec->tags = json_array();
    if (spec->notes == NULL)
        spec->notes = json_string("");
    if (spec->tags == NULL || spec->notes == NULL)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
    json_object_del(j, "tags");
    json_object_del(j, "notes");
    return 0;
}

void spec_set_meta(Spec *spec, json_t *tags, json_t *notes)
{
    if (tags != NULL) {
        json_decref(spec->tags);
        spec->tags = tags;
    }
    if (notes != NULL) {
        json_decref(spec->notes);
        spec->notes = notes;
    }
}
