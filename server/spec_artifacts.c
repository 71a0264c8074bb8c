/* The spec's keep_artifacts (docs/api.md, "Top-level fields"): which
 * completed trials' folders (their artifacts/ and checkpoints) rungd asks
 * their workers for and keeps. */
#include "spec_internal.h"

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
