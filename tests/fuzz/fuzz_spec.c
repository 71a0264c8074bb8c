/* Fuzz target of server/spec.c, the experiment spec's validation (with the
 * sampler's search-space and searcher parsers it calls): the body of
 * POST /api/v1/experiments, as server/http.c parses it.
 *
 * Each input is a request body's bytes. Besides the sanitizers' checks and
 * those of fuzz_json.h, the target checks that:
 * - a refused spec leaves nothing behind (spec zeroed; leaks are ASan's);
 * - "name": null is refused, naming name;
 * - an accepted spec is what spec.h says (name, metric, counts in range)
 *   and its spec->json, written and read back as the store does, is
 *   accepted again by spec_load (a restart) and by spec_parse, giving the
 *   same JSON: a spec rungd stored must never stop it from starting;
 * - the configs of the first and the last trial are objects of the
 *   space's parameters, shallow enough to be stored.
 *
 * Built with libFuzzer under clang, or with fuzz_driver.c under gcc (see
 * CMakeLists.txt). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_json.h"
#include "sampler.h"
#include "spec.h"

#define SEED 42

/* The spec as GET shows it and the store keeps it. */
static void check_accepted(const Spec *spec)
{
    const json_t *j = spec->json;
    CHECK(json_is_object(j));
    CHECK(fuzz_depth(j) <= JSONV_MAX_DEPTH);
    const char *name = json_string_value(json_object_get(j, "name"));
    CHECK(name != NULL && strcmp(name, spec->name) == 0);
    CHECK(strlen(name) >= 1 && strlen(name) <= SPEC_MAX_NAME);
    const json_t *ms = json_object_get(j, "metrics");
    CHECK(spec->n_objectives >= 1 && spec->n_objectives <= SPEC_MAX_OBJECTIVES);
    CHECK(spec->n_objectives == (ms ? (int)json_array_size(ms) : 1));
    CHECK(spec->metric == json_string_value(ms ? json_object_get(json_array_get(ms, 0), "name")
                                               : json_object_get(j, "metric")));
    CHECK(spec->n_objectives == 1 || json_object_get(j, "metric") == NULL);
    CHECK(spec->n_constraints >= 0 && spec->n_constraints <= SPEC_MAX_CONSTRAINTS);
    for (int k = 0; k < spec->n_constraints; k++)
        CHECK(spec->constraints[k].has_min || spec->constraints[k].has_max);
    CHECK(strlen(spec->metric) >= 1 && strlen(spec->metric) <= SPEC_MAX_METRIC);
    CHECK(spec->time_attr != NULL && strlen(spec->time_attr) >= 1 &&
          strlen(spec->time_attr) <= SPEC_MAX_METRIC);
    CHECK(spec->num_samples >= 1 && spec->num_samples <= SAMPLER_MAX_TRIALS);
    CHECK(spec->total_trials >= 1 && spec->total_trials <= SAMPLER_MAX_TRIALS);
    CHECK(spec->total_trials % spec->num_samples == 0);
    CHECK(spec->max_failures >= 0 && spec->max_failures <= SPEC_MAX_FAILURES);
    CHECK(spec->cpus >= 0 && spec->cpus <= SPEC_MAX_CPUS);
    CHECK(spec->gpus >= 0 && spec->gpus <= SPEC_MAX_GPUS);
    CHECK(spec->searcher.has_seed);
    CHECK(spec->space != NULL);
    json_t *seed = json_object_get(json_object_get(j, "searcher"), "seed");
    CHECK(json_is_integer(seed) && (uint64_t)json_integer_value(seed) == spec->searcher.seed);
}

/* Trial `number`'s config, as the proposer makes it and the store keeps it. */
static void check_config(const Spec *spec, int64_t number)
{
    json_t *config = sampler_config(spec->space, &spec->searcher, number);
    CHECK(config != NULL);
    CHECK(json_is_object(config));
    CHECK(fuzz_depth(config) <= JSONV_MAX_DEPTH);
    /* Only the branches taken: every key a parameter, and the config its
     * own conformed form. */
    CHECK((int)json_object_size(config) <= space_param_count(spec->space));
    const char *key;
    json_t *v;
    json_object_foreach(config, key, v)
        CHECK(space_has_param(spec->space, key));
    json_t *conformed = space_conform(spec->space, config);
    CHECK(conformed != NULL && json_equal(conformed, config));
    json_decref(conformed);
    json_t *again = fuzz_reload(config);
    json_decref(again);
    json_decref(config);
}

/* spec->json as read back from the store at a restart. */
static void check_reload(const Spec *spec)
{
    json_t *stored = fuzz_reload(spec->json);
    Spec loaded, again;
    RungError err;
    rung_error_clear(&err);
    int rc = spec_load(stored, spec->searcher.seed, &loaded, &err);
    if (rc != 0)
        fprintf(stderr, "fuzz_spec: the stored spec is refused: %s\n", err.message);
    CHECK(rc == 0);
    CHECK(json_equal(loaded.json, spec->json));
    CHECK(loaded.total_trials == spec->total_trials);
    rung_error_clear(&err);
    rc = spec_parse(stored, spec->searcher.seed, &again, &err);
    if (rc != 0)
        fprintf(stderr, "fuzz_spec: the stored spec, submitted again, is refused: %s\n",
                err.message);
    CHECK(rc == 0);
    CHECK(json_equal(again.json, spec->json));
    spec_close(&again);
    spec_close(&loaded);
    json_decref(stored);
}

/* The body as a PATCH of a fixed experiment (spec_patch): refused, the
 * spec is as it was; accepted, it is a spec GET may show and the store
 * reloads, and num_samples never went down. */
static void check_patch(const json_t *body)
{
    static const char base_text[] =
        "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
        " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
        " \"g\": {\"type\": \"grid\", \"values\": [1, 2, 3]}},"
        " \"trainable\": {\"type\": \"external\"}}";
    json_t *base = json_loads(base_text, 0, NULL);
    CHECK(base != NULL);
    Spec spec;
    RungError err;
    rung_error_clear(&err);
    CHECK(spec_parse(base, SEED, &spec, &err) == 0);
    json_t *before = json_deep_copy(spec.json);
    int64_t total = spec.total_trials;
    int rc = spec_patch(&spec, body, spec.num_samples, &err);
    if (rc != 0) {
        CHECK(rc == RUNG_E_INVALID_ARGUMENT || rc == RUNG_E_BAD_JSON);
        CHECK(fuzz_str_valid(err.field, sizeof err.field));
        CHECK(err.message[0] != '\0');
        CHECK(json_equal(before, spec.json));
        CHECK(spec.total_trials == total);
    } else {
        CHECK(spec.num_samples >= 4);
        CHECK(spec.total_trials == 3 * spec.num_samples);
        check_accepted(&spec);
        check_reload(&spec);
    }
    json_decref(before);
    spec_close(&spec);
    json_decref(base);
}

static bool zeroed(const Spec *spec)
{
    static const Spec zero;
    return memcmp(spec, &zero, sizeof zero) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool skip;
    json_t *body = fuzz_body(data, size, &skip);
    if (skip)
        return 0; /* no JSON: http.c answers bad_json before spec_parse */
    Spec spec;
    RungError err;
    rung_error_clear(&err);
    int rc = spec_parse(body, SEED, &spec, &err);
    fuzz_check_answer(rc, &err, body, RUNG_E_INVALID_SPEC);
    if (rc != 0) {
        CHECK(zeroed(&spec));
    } else {
        check_accepted(&spec);
        check_reload(&spec);
        check_config(&spec, 0);
        check_config(&spec, spec.total_trials - 1);

        if (json_object_get(body, "name") != NULL) {
            json_t *nulled = json_deep_copy(body);
            CHECK(nulled != NULL);
            json_object_set_new(nulled, "name", json_null());
            Spec other;
            RungError err2;
            rung_error_clear(&err2);
            CHECK(spec_parse(nulled, SEED, &other, &err2) == RUNG_E_INVALID_SPEC);
            CHECK(strcmp(err2.field, "name") == 0);
            CHECK(zeroed(&other));
            /* An earlier rungd stored it so: loaded as the default name. */
            CHECK(spec_load(nulled, SEED, &other, &err2) == 0);
            CHECK(strcmp(other.name, "experiment") == 0);
            spec_close(&other);
            json_decref(nulled);
        }
        spec_close(&spec);
    }

    if (body != NULL)
        check_patch(body);
    if (body != NULL) {
        /* The same answer for the body written out and read back. */
        json_t *again = fuzz_reload(body);
        Spec other;
        RungError err2;
        rung_error_clear(&err2);
        int rc2 = spec_parse(again, SEED, &other, &err2);
        CHECK(rc2 == rc);
        if (rc2 == 0) {
            spec_close(&other);
        } else {
            CHECK(strcmp(err.field, err2.field) == 0);
            CHECK(strcmp(err.message, err2.message) == 0);
        }
        json_decref(again);
    }
    json_decref(body);
    return 0;
}
