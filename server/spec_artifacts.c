/* What an experiment's results leave behind and whom they tell
 * (docs/api.md, "Top-level fields"): keep_artifacts, which completed
 * trials' folders (their artifacts/ and checkpoints) rungd asks their
 * workers for and keeps; and notify, which of the admin's notifiers hear
 * of its events. */
#include "spec_internal.h"

#include <stdio.h>
#include <string.h>

#include "jsonv.h"

int spec_parse_keep(json_t *spec_json, Spec *spec, RungError *err)
{
    json_t *k = json_object_get(spec_json, "keep_artifacts");
    spec->keep_artifacts = SPEC_KEEP_BEST;
    spec->keep_count = 1;
    if (k == NULL || json_is_null(k))
        return 0;
    const char *s = json_string_value(k);
    if (s != NULL && strcmp(s, "none") == 0) {
        spec->keep_artifacts = SPEC_KEEP_NONE;
        return 0;
    }
    if (s != NULL && strcmp(s, "all") == 0) {
        spec->keep_artifacts = SPEC_KEEP_ALL;
        return 0;
    }
    if (s != NULL && strcmp(s, "best") == 0)
        return 0;
    if (json_is_object(k) && json_object_size(k) == 1) {
        json_t *n = json_object_get(k, "best");
        if (json_is_integer(n) && json_integer_value(n) >= 1 &&
            json_integer_value(n) <= SPEC_MAX_KEEP) {
            spec->keep_count = json_integer_value(n);
            return 0;
        }
        if (n != NULL)
            return rung_error_set(err, E, "keep_artifacts.best",
                                  "keep_artifacts.best: an integer from 1 to %d", SPEC_MAX_KEEP);
    }
    return rung_error_set(err, E, "keep_artifacts",
                          "keep_artifacts: \"none\", \"all\", \"best\" or {\"best\": N}");
}

/* notify: ["team-slack", ...], 1 to SPEC_MAX_NOTIFY names of notifiers
 * (1 to 64 of A-Z a-z 0-9 _ . -), none twice. Names only: a member picks
 * among what an admin configured and never names a URL. */
int spec_parse_notify(json_t *spec_json, Spec *spec, RungError *err)
{
    json_t *n = json_object_get(spec_json, "notify");
    spec->notify = NULL;
    if (n == NULL || json_is_null(n))
        return 0;
    if (!json_is_array(n) || json_array_size(n) < 1 || json_array_size(n) > SPEC_MAX_NOTIFY)
        return rung_error_set(err, E, "notify",
                              "notify: an array of 1 to %d notifier names (rungd's "
                              "--notify-file)",
                              SPEC_MAX_NOTIFY);
    size_t i;
    json_t *v;
    json_array_foreach(n, i, v) {
        char field[40];
        snprintf(field, sizeof field, "notify[%zu]", i);
        const char *s = json_string_value(v);
        size_t len = s ? strlen(s) : 0;
        if (len < 1 || len > 64 ||
            strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
            return rung_error_set(err, E, field,
                                  "%s: a notifier's name, 1 to 64 of A-Z a-z 0-9 _ . -", field);
        for (size_t k = 0; k < i; k++)
            if (json_equal(json_array_get(n, k), v))
                return rung_error_set(err, E, field, "%s: '%s' is listed twice", field, s);
    }
    spec->notify = n;
    return 0;
}
