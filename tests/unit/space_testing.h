/* Helpers the sampler's unit tests share: JSON text to a json_t or to a
 * parsed Space, failing the test (not crashing) on bad input. Include after
 * <cmocka.h>. */
#ifndef RUNG_TESTS_SPACE_TESTING_H
#define RUNG_TESTS_SPACE_TESTING_H

#include <jansson.h>

#include "error.h"
#include "sampler.h"

static inline json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *json = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (json == NULL)
        fail_msg("bad JSON in test: %s: %s", text, jerr.text);
    return json;
}

static inline Space *parse_space(const char *text)
{
    json_t *json = load(text);
    Space *space = NULL;
    RungError err;
    rung_error_clear(&err);
    int rc = space_parse(json, &space, &err);
    json_decref(json);
    if (rc != 0)
        fail_msg("space_parse(%s): %s", text, err.message);
    assert_non_null(space);
    return space;
}

#endif
