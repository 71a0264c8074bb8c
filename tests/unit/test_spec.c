/* Unit tests of server/spec.c's later fields (docs/api.md, "The experiment
 * spec"): the defaults GET shows, every bound and the field each refusal
 * names, points_to_evaluate against each kind of domain, the trainable
 * that submission requires and the stored specs that load without one,
 * nested objects in search_space, spec_patch, whose refusals leave the
 * spec as it was, and tags and notes (spec_meta.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

#define HEAD "\"metric\": \"loss\", \"mode\": \"min\""
#define SPACE "\"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}"
#define EXTERNAL "\"trainable\": {\"type\": \"external\"}"
/* A minimal spec, with room for more top-level fields after it. */
#define BASE HEAD ", " SPACE ", " EXTERNAL

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (j == NULL)
        fail_msg("bad test JSON (%s): %s", jerr.text, text);
    return j;
}

static json_int_t int_at(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("%s: not an integer", key);
    return json_integer_value(v);
}

/* Parses text, which must be accepted; checks that spec->json comes back the
 * same from spec_load and spec_parse (spec.h). */
static void accept(const char *text, Spec *spec)
{
    json_t *j = parse(text);
    RungError err;
    rung_error_clear(&err);
    if (spec_parse(j, 5, spec, &err) != 0)
        fail_msg("refused (%s): %s", err.message, text);
    json_decref(j);
    Spec again;
    if (spec_load(spec->json, 5, &again, &err) != 0)
        fail_msg("stored, refused (%s): %s", err.message, text);
    assert_true(json_equal(again.json, spec->json));
    spec_close(&again);
    if (spec_parse(spec->json, 5, &again, &err) != 0)
        fail_msg("submitted again, refused (%s): %s", err.message, text);
    assert_true(json_equal(again.json, spec->json));
    spec_close(&again);
}

/* text must be refused naming field, with a message that starts with it. */
static void refuse(const char *text, const char *field)
{
    json_t *j = parse(text);
    Spec spec;
    RungError err;
    rung_error_clear(&err);
    int rc = spec_parse(j, 5, &spec, &err);
    if (rc != RUNG_E_INVALID_SPEC)
        fail_msg("not refused (rc %d): %s", rc, text);
    if (strcmp(err.field, field) != 0)
        fail_msg("field %s, want %s (%s): %s", err.field, field, err.message, text);
    if (strncmp(err.message, field, strlen(field)) != 0)
        fail_msg("message does not start with %s: %s", field, err.message);
    static const Spec zero;
    assert_memory_equal(&spec, &zero, sizeof zero);
    json_decref(j);
}

static void test_defaults(void **state)
{
    (void)state;
    Spec spec;
    accept("{" BASE "}", &spec);
    assert_int_equal(spec.max_failed_trials, 5);
    assert_false(spec.best_last);
    assert_int_equal(spec.priority, 0);
    assert_true(spec.share == 1);
    assert_null(spec.worker_selector);
    assert_null(spec.points);
    assert_int_equal(spec.warm_start_exp, 0);
    assert_true(spec.stop_time_budget_s == 0);
    assert_false(spec.has_stop_threshold);
    assert_int_equal(spec.stop_patience, 0);
    assert_int_equal(spec.trainable, SPEC_TRAINABLE_EXTERNAL);
    /* What GET shows. */
    const json_t *j = spec.json;
    assert_int_equal(int_at(j, "max_failed_trials"), 5);
    assert_string_equal(json_string_value(json_object_get(j, "best_scope")), "all");
    assert_int_equal(int_at(j, "priority"), 0);
    assert_int_equal(int_at(j, "share"), 1);
    assert_int_equal(int_at(j, "max_concurrent_trials"), 0);
    assert_null(json_object_get(j, "worker_selector"));
    assert_null(json_object_get(j, "points_to_evaluate"));
    assert_null(json_object_get(j, "warm_start"));
    assert_null(json_object_get(j, "stop"));
    /* One node; the gang fields filled in all the same (docs/api.md, "Gangs"). */
    assert_int_equal(spec.nodes, 1);
    assert_true(spec.gang_wait_s == 60);
    const json_t *r = json_object_get(j, "resources_per_trial");
    assert_int_equal(int_at(r, "cpu"), 1);
    assert_int_equal(int_at(r, "gpu"), 0);
    assert_int_equal(int_at(r, "nodes"), 1);
    assert_int_equal(int_at(r, "gang_wait_s"), 60);
    spec_close(&spec);

    /* null is absent for the optional objects: not kept in the JSON. */
    accept("{" BASE ", \"worker_selector\": null, \"points_to_evaluate\": null,"
           " \"warm_start\": null, \"stop\": null, \"priority\": null}",
           &spec);
    assert_null(json_object_get(spec.json, "worker_selector"));
    assert_null(json_object_get(spec.json, "points_to_evaluate"));
    assert_null(json_object_get(spec.json, "warm_start"));
    assert_null(json_object_get(spec.json, "stop"));
    assert_int_equal(int_at(spec.json, "priority"), 0);
    spec_close(&spec);
}

static void test_fields_given(void **state)
{
    (void)state;
    Spec spec;
    accept("{" HEAD ", \"search_space\": {\"lr\": {\"type\": \"loguniform\", \"low\": 0.001,"
           " \"high\": 0.1}, \"b\": {\"type\": \"grid\", \"values\": [1, 2]}},"
           " \"num_samples\": 2, \"max_failed_trials\": 0, \"best_scope\": \"last\","
           " \"priority\": -7, \"share\": 0.25, \"worker_selector\": {\"gpu\": \"a100\","
           " \"team/x.y-z_1\": \"\"}, \"points_to_evaluate\": [{\"lr\": 0.01}, {\"b\": 2}, {}],"
           " \"warm_start\": {\"experiment\": 12.0}, \"stop\": {\"time_budget_s\": 3600,"
           " \"metric_threshold\": 0.5, \"patience\": 20},"
           " \"trainable\": {\"type\": \"builtin\"}}",
           &spec);
    assert_int_equal(spec.max_failed_trials, 0);
    assert_true(spec.best_last);
    assert_int_equal(spec.priority, -7);
    assert_true(spec.share == 0.25);
    assert_non_null(spec.worker_selector);
    assert_ptr_equal(spec.worker_selector, json_object_get(spec.json, "worker_selector"));
    assert_int_equal(json_object_size(spec.worker_selector), 2);
    assert_ptr_equal(spec.points, json_object_get(spec.json, "points_to_evaluate"));
    assert_int_equal(json_array_size(spec.points), 3);
    assert_int_equal(spec.warm_start_exp, 12);
    /* 12.0 is shown as the integer it is. */
    assert_int_equal(int_at(json_object_get(spec.json, "warm_start"), "experiment"), 12);
    assert_true(spec.stop_time_budget_s == 3600);
    assert_true(spec.has_stop_threshold);
    assert_true(spec.stop_threshold == 0.5);
    assert_int_equal(spec.stop_patience, 20);
    assert_int_equal(spec.trainable, SPEC_TRAINABLE_BUILTIN);
    assert_string_equal(json_string_value(json_object_get(spec.json, "best_scope")), "last");
    spec_close(&spec);

    accept("{" HEAD ", " SPACE ", \"trainable\": {\"type\": \"command\", \"argv\": [\"run\"]},"
           " \"worker_selector\": {}, \"points_to_evaluate\": [], \"stop\": {}}",
           &spec);
    assert_int_equal(spec.trainable, SPEC_TRAINABLE_COMMAND);
    assert_null(spec.worker_selector); /* empty: every worker */
    assert_null(spec.points);
    assert_int_equal(spec.stop_patience, 0);
    assert_false(spec.has_stop_threshold);
    spec_close(&spec);

    /* The bounds themselves are accepted. */
    accept("{" BASE ", \"max_failed_trials\": 10000000, \"priority\": 1000000,"
           " \"share\": 1000000, \"stop\": {\"time_budget_s\": 1e9, \"metric_threshold\": -3}}",
           &spec);
    assert_int_equal(spec.max_failed_trials, 10000000);
    assert_int_equal(spec.priority, SPEC_MAX_PRIORITY);
    assert_true(spec.share == SPEC_MAX_SHARE);
    assert_true(spec.stop_threshold == -3);
    spec_close(&spec);
    accept("{" BASE ", \"priority\": -1000000, \"share\": 0.001}", &spec);
    assert_int_equal(spec.priority, -SPEC_MAX_PRIORITY);
    spec_close(&spec);

    /* A gang: cpu and gpu per node; gang_wait_s a number, shown as given. */
    accept("{" BASE ", \"resources_per_trial\": {\"gpu\": 8, \"cpu\": 8, \"nodes\": 2,"
           " \"gang_wait_s\": 2.5}}",
           &spec);
    assert_int_equal(spec.nodes, 2);
    assert_int_equal(spec.gpus, 8);
    assert_int_equal(spec.cpus, 8);
    assert_true(spec.gang_wait_s == 2.5);
    const json_t *r = json_object_get(spec.json, "resources_per_trial");
    assert_true(json_real_value(json_object_get(r, "gang_wait_s")) == 2.5);
    assert_int_equal(int_at(r, "nodes"), 2);
    spec_close(&spec);
    accept("{" BASE ", \"resources_per_trial\": {\"nodes\": 64, \"gang_wait_s\": 3600}}", &spec);
    assert_int_equal(spec.nodes, SPEC_MAX_NODES);
    assert_true(spec.gang_wait_s == SPEC_MAX_GANG_WAIT_S);
    assert_int_equal(spec.cpus, 1); /* defaults per node */
    spec_close(&spec);
    accept("{" BASE ", \"resources_per_trial\": {\"nodes\": 2.0, \"gang_wait_s\": 1,"
           " \"cpu\": null}}",
           &spec);
    assert_int_equal(spec.nodes, 2);
    assert_true(spec.gang_wait_s == 1);
    spec_close(&spec);
}

static void test_bounds(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *field;
    } bad[] = {
        {"\"max_failed_trials\": -1", "max_failed_trials"},
        {"\"max_failed_trials\": 10000001", "max_failed_trials"},
        {"\"max_failed_trials\": 1.5", "max_failed_trials"},
        {"\"best_scope\": \"best\"", "best_scope"},
        {"\"best_scope\": null", "best_scope"},
        {"\"best_scope\": 1", "best_scope"},
        {"\"priority\": 1000001", "priority"},
        {"\"priority\": -1000001", "priority"},
        {"\"priority\": \"high\"", "priority"},
        {"\"share\": 0", "share"},
        {"\"share\": -1", "share"},
        {"\"share\": 1000000.5", "share"},
        {"\"share\": \"1\"", "share"},
        {"\"max_concurrent_trials\": 1000001", "max_concurrent_trials"},
        {"\"worker_selector\": [\"gpu\"]", "worker_selector"},
        {"\"worker_selector\": {\"\": \"a\"}", "worker_selector."},
        {"\"worker_selector\": {\"a b\": \"c\"}", "worker_selector.a b"},
        {"\"worker_selector\": {\"gpu\": 1}", "worker_selector.gpu"},
        {"\"worker_selector\": {\"gpu\": null}", "worker_selector.gpu"},
        {"\"points_to_evaluate\": {\"x\": 1}", "points_to_evaluate"},
        {"\"points_to_evaluate\": [{\"x\": 0.5}, 3]", "points_to_evaluate[1]"},
        {"\"points_to_evaluate\": [{\"y\": 0.5}]", "points_to_evaluate[0].y"},
        {"\"points_to_evaluate\": [{\"x\": 2}]", "points_to_evaluate[0].x"},
        {"\"points_to_evaluate\": [{\"x\": \"0.5\"}]", "points_to_evaluate[0].x"},
        /* num_samples 1: one trial, two points. */
        {"\"points_to_evaluate\": [{\"x\": 0.5}, {}]", "points_to_evaluate"},
        {"\"warm_start\": 3", "warm_start"},
        {"\"warm_start\": {}", "warm_start.experiment"},
        {"\"warm_start\": {\"experiment\": 0}", "warm_start.experiment"},
        {"\"warm_start\": {\"experiment\": \"3\"}", "warm_start.experiment"},
        {"\"warm_start\": {\"experiment\": 3, \"trials\": 10}", "warm_start.trials"},
        {"\"stop\": true", "stop"},
        {"\"stop\": {\"time_budget_s\": 0}", "stop.time_budget_s"},
        {"\"stop\": {\"time_budget_s\": -5}", "stop.time_budget_s"},
        {"\"stop\": {\"time_budget_s\": 2e9}", "stop.time_budget_s"},
        {"\"stop\": {\"metric_threshold\": \"0.9\"}", "stop.metric_threshold"},
        {"\"stop\": {\"patience\": 0}", "stop.patience"},
        {"\"stop\": {\"patience\": 2.5}", "stop.patience"},
        {"\"stop\": {\"max_t\": 3}", "stop.max_t"},
        {"\"resources_per_trial\": {\"nodes\": 0}", "resources_per_trial.nodes"},
        {"\"resources_per_trial\": {\"nodes\": 65}", "resources_per_trial.nodes"},
        {"\"resources_per_trial\": {\"nodes\": 1.5}", "resources_per_trial.nodes"},
        {"\"resources_per_trial\": {\"nodes\": \"2\"}", "resources_per_trial.nodes"},
        {"\"resources_per_trial\": {\"gang_wait_s\": 0.5}", "resources_per_trial.gang_wait_s"},
        {"\"resources_per_trial\": {\"gang_wait_s\": 3600.5}", "resources_per_trial.gang_wait_s"},
        {"\"resources_per_trial\": {\"gang_wait_s\": \"60\"}", "resources_per_trial.gang_wait_s"},
        {"\"resources_per_trial\": {\"nodes\": 2, \"hosts\": 2}", "resources_per_trial.hosts"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "{" BASE ", %s}", bad[i].extra);
        refuse(text, bad[i].field);
    }

    /* Counted limits. */
    json_t *j = parse("{" BASE "}");
    json_t *sel = json_object();
    for (int i = 0; i <= SPEC_MAX_SELECTOR; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        json_object_set_new(sel, key, json_string("v"));
    }
    json_object_set_new(j, "worker_selector", sel);
    char *text = json_dumps(j, 0);
    refuse(text, "worker_selector");
    free(text);
    json_object_del(sel, "k0"); /* SPEC_MAX_SELECTOR of them */
    text = json_dumps(j, 0);
    Spec spec;
    accept(text, &spec);
    spec_close(&spec);
    free(text);

    char key[SPEC_MAX_LABEL_KEY + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    char value[SPEC_MAX_LABEL_VALUE + 2];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    json_object_clear(sel);
    json_object_set_new(sel, key, json_string("v"));
    text = json_dumps(j, 0);
    char field[RUNG_FIELD_MAX];
    snprintf(field, sizeof field, "worker_selector.%s", key);
    refuse(text, field);
    free(text);
    json_object_clear(sel);
    json_object_set_new(sel, "gpu", json_string(value));
    text = json_dumps(j, 0);
    refuse(text, "worker_selector.gpu");
    free(text);
    key[SPEC_MAX_LABEL_KEY] = '\0';
    value[SPEC_MAX_LABEL_VALUE] = '\0';
    json_object_clear(sel);
    json_object_set_new(sel, key, json_string(value));
    text = json_dumps(j, 0);
    accept(text, &spec);
    spec_close(&spec);
    free(text);

    json_object_del(j, "worker_selector");
    json_t *points = json_array();
    for (int i = 0; i <= SPEC_MAX_POINTS; i++)
        json_array_append_new(points, json_object());
    json_object_set_new(j, "points_to_evaluate", points);
    json_object_set_new(j, "num_samples", json_integer(SPEC_MAX_POINTS + 1));
    text = json_dumps(j, 0);
    refuse(text, "points_to_evaluate");
    free(text);
    json_array_remove(points, 0);
    text = json_dumps(j, 0);
    accept(text, &spec);
    assert_int_equal(json_array_size(spec.points), SPEC_MAX_POINTS);
    spec_close(&spec);
    free(text);
    json_decref(j);

    assert_true(spec_label_key_ok("a"));
    assert_true(spec_label_key_ok("kubernetes.io/arch-x_1"));
    assert_false(spec_label_key_ok(""));
    assert_false(spec_label_key_ok("a=b"));
    assert_false(spec_label_key_ok("é"));
}

/* Each value of a point must be one its parameter's domain can take. */
static void test_points_domains(void **state)
{
    (void)state;
    static const struct {
        const char *domain, *value;
        bool ok;
    } cases[] = {
        {"{\"type\": \"uniform\", \"low\": -1, \"high\": 1}", "-1", true},
        {"{\"type\": \"uniform\", \"low\": -1, \"high\": 1}", "1", true},
        {"{\"type\": \"uniform\", \"low\": -1, \"high\": 1}", "0.25", true},
        {"{\"type\": \"uniform\", \"low\": -1, \"high\": 1}", "1.0001", false},
        {"{\"type\": \"uniform\", \"low\": -1, \"high\": 1}", "true", false},
        {"{\"type\": \"uniform\", \"low\": -1, \"high\": 1}", "null", false},
        {"{\"type\": \"loguniform\", \"low\": 0.001, \"high\": 0.1}", "0.01", true},
        {"{\"type\": \"loguniform\", \"low\": 0.001, \"high\": 0.1}", "0.0001", false},
        {"{\"type\": \"quniform\", \"low\": 0, \"high\": 1, \"q\": 0.1}", "0.3", true},
        {"{\"type\": \"qloguniform\", \"low\": 1, \"high\": 100, \"q\": 1}", "101", false},
        {"{\"type\": \"randint\", \"low\": 0, \"high\": 4}", "0", true},
        {"{\"type\": \"randint\", \"low\": 0, \"high\": 4}", "3", true},
        {"{\"type\": \"randint\", \"low\": 0, \"high\": 4}", "4", false}, /* high excluded */
        {"{\"type\": \"randint\", \"low\": 0, \"high\": 4}", "-1", false},
        {"{\"type\": \"randint\", \"low\": 0, \"high\": 4}", "1.5", false},
        {"{\"type\": \"randint\", \"low\": 0, \"high\": 4}", "2.0", false}, /* not an integer */
        {"{\"type\": \"lograndint\", \"low\": 1, \"high\": 1024}", "1023", true},
        {"{\"type\": \"lograndint\", \"low\": 1, \"high\": 1024}", "1024", false},
        {"{\"type\": \"qrandint\", \"low\": 8, \"high\": 64, \"q\": 8}", "64", true},
        {"{\"type\": \"qrandint\", \"low\": 8, \"high\": 64, \"q\": 8}", "8", true},
        {"{\"type\": \"qrandint\", \"low\": 8, \"high\": 64, \"q\": 8}", "12", false},
        {"{\"type\": \"qrandint\", \"low\": 8, \"high\": 64, \"q\": 8}", "72", false},
        {"{\"type\": \"choice\", \"values\": [\"sgd\", 1, true]}", "\"sgd\"", true},
        {"{\"type\": \"choice\", \"values\": [\"sgd\", 1, true]}", "true", true},
        {"{\"type\": \"choice\", \"values\": [\"sgd\", 1, true]}", "\"adam\"", false},
        {"{\"type\": \"choice\", \"values\": [\"sgd\", 1, true]}", "2", false},
        {"{\"type\": \"grid\", \"values\": [[1, 2], {\"a\": null}]}", "[1, 2]", true},
        {"{\"type\": \"grid\", \"values\": [[1, 2], {\"a\": null}]}", "{\"a\": null}", true},
        {"{\"type\": \"grid\", \"values\": [[1, 2], {\"a\": null}]}", "[2, 1]", false},
        {"27", "27", true},
        {"27", "28", false},
        {"\"relu\"", "\"relu\"", true},
        {"\"relu\"", "\"tanh\"", false},
        {"[1, 2]", "[1, 2]", true},
        /* normal and qnormal take any finite number (no bounds). */
        {"{\"type\": \"normal\", \"mean\": 0, \"sd\": 1}", "1e6", true},
        {"{\"type\": \"normal\", \"mean\": 0, \"sd\": 1}", "-2", true},
        {"{\"type\": \"normal\", \"mean\": 0, \"sd\": 1}", "\"a\"", false},
        {"{\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1, \"q\": 0.5}", "1.5", true},
        {"{\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1, \"q\": 0.5}", "null", false},
        /* qlograndint: a multiple of q within [low, high], both included. */
        {"{\"type\": \"qlograndint\", \"low\": 8, \"high\": 256, \"q\": 8}", "256", true},
        {"{\"type\": \"qlograndint\", \"low\": 8, \"high\": 256, \"q\": 8}", "8", true},
        {"{\"type\": \"qlograndint\", \"low\": 8, \"high\": 256, \"q\": 8}", "12", false},
        {"{\"type\": \"qlograndint\", \"low\": 8, \"high\": 256, \"q\": 8}", "264", false},
        {"{\"type\": \"qlograndint\", \"low\": 8, \"high\": 256, \"q\": 8}", "16.0", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{" HEAD ", " EXTERNAL ", \"search_space\": {\"x\": {\"type\": \"uniform\","
                 " \"low\": 0, \"high\": 1}, \"p\": %s}, \"num_samples\": 4,"
                 " \"points_to_evaluate\": [{\"x\": 0.5}, {\"x\": 0.1, \"p\": %s}]}",
                 cases[i].domain, cases[i].value);
        if (cases[i].ok) {
            Spec spec;
            accept(text, &spec);
            spec_close(&spec);
        } else {
            refuse(text, "points_to_evaluate[1].p");
        }
    }
    /* A bad field of the new domains is named through the spec too. */
    refuse("{" HEAD ", " EXTERNAL ", \"search_space\": {\"w\": {\"type\": \"normal\", \"mean\": 0,"
           " \"sd\": 0}}}",
           "search_space.w.sd");
    refuse("{" HEAD ", " EXTERNAL
           ", \"search_space\": {\"k\": {\"type\": \"qlograndint\", \"low\": 3,"
           " \"high\": 5}}}",
           "search_space.k.q");
}

/* Grid order (docs/api.md, "searcher"): a new spec takes Ray's and says so;
 * one stored by an earlier rungd, without grid_order, keeps the order it
 * was enumerated in (the first parameter slowest), and says so from then
 * on, so a restart neither repeats nor skips a combination. */
static void test_grid_order(void **state)
{
    (void)state;
    const char *text = "{" HEAD ", " EXTERNAL ", \"searcher\": {\"type\": \"grid\"},"
                       " \"search_space\": {\"a\": {\"type\": \"grid\", \"values\": [1, 2, 3]},"
                       " \"b\": {\"type\": \"grid\", \"values\": [\"p\", \"q\"]}}}";
    Spec spec;
    accept(text, &spec);
    const json_t *order = json_object_get(json_object_get(spec.json, "searcher"), "grid_order");
    assert_string_equal(json_string_value(order), "ray");
    assert_int_equal(spec.searcher.grid_order, GRID_ORDER_RAY);
    json_t *c = sampler_config(spec.space, &spec.searcher, 1);
    json_t *want = parse("{\"a\": 2, \"b\": \"p\"}"); /* a sorts first: fastest */
    assert_true(json_equal(c, want));
    json_decref(c);
    json_decref(want);
    spec_close(&spec);

    json_t *stored = parse(text);
    RungError err;
    rung_error_clear(&err);
    Spec old;
    assert_int_equal(spec_load(stored, 5, &old, &err), 0);
    json_decref(stored);
    order = json_object_get(json_object_get(old.json, "searcher"), "grid_order");
    assert_string_equal(json_string_value(order), "spec");
    assert_int_equal(old.searcher.grid_order, GRID_ORDER_SPEC);
    c = sampler_config(old.space, &old.searcher, 1);
    want = parse("{\"a\": 1, \"b\": \"q\"}"); /* a first in the spec: slowest */
    assert_true(json_equal(c, want));
    json_decref(c);
    json_decref(want);
    /* What it stores from then on loads, and submits, the same. */
    Spec again;
    assert_int_equal(spec_load(old.json, 5, &again, &err), 0);
    assert_int_equal(again.searcher.grid_order, GRID_ORDER_SPEC);
    assert_true(json_equal(again.json, old.json));
    spec_close(&again);
    assert_int_equal(spec_parse(old.json, 5, &again, &err), 0);
    assert_int_equal(again.searcher.grid_order, GRID_ORDER_SPEC);
    assert_true(json_equal(again.json, old.json));
    spec_close(&again);
    spec_close(&old);

    refuse("{" BASE ", \"searcher\": {\"grid_order\": \"fast\"}}", "searcher.grid_order");
    refuse("{" BASE ", \"searcher\": {\"grid_order\": 1}}", "searcher.grid_order");
}

static void test_trainable(void **state)
{
    (void)state;
    /* Submission requires one. */
    refuse("{" HEAD ", " SPACE "}", "trainable");
    refuse("{" HEAD ", " SPACE ", \"trainable\": null}", "trainable");
    json_t *j = parse("{" HEAD ", " SPACE "}");
    Spec spec;
    RungError err;
    assert_int_equal(spec_parse(j, 5, &spec, &err), RUNG_E_INVALID_SPEC);
    assert_non_null(strstr(err.message, "{\"type\": \"external\"}"));
    assert_non_null(strstr(err.message, "command"));
    assert_non_null(strstr(err.message, "builtin"));

    /* A stored spec without one loads as external, which it then says: the
     * JSON is accepted by both again and comes back the same. */
    assert_int_equal(spec_load(j, 5, &spec, &err), 0);
    assert_int_equal(spec.trainable, SPEC_TRAINABLE_EXTERNAL);
    json_t *want = parse("{\"type\": \"external\"}");
    assert_true(json_equal(json_object_get(spec.json, "trainable"), want));
    Spec again;
    assert_int_equal(spec_parse(spec.json, 5, &again, &err), 0);
    assert_true(json_equal(again.json, spec.json));
    spec_close(&again);
    assert_int_equal(spec_load(spec.json, 5, &again, &err), 0);
    assert_true(json_equal(again.json, spec.json));
    spec_close(&again);
    spec_close(&spec);
    json_object_set_new(j, "trainable", json_null());
    assert_int_equal(spec_load(j, 5, &spec, &err), 0);
    assert_int_equal(spec.trainable, SPEC_TRAINABLE_EXTERNAL);
    assert_true(json_equal(json_object_get(spec.json, "trainable"), want));
    spec_close(&spec);
    json_decref(want);
    json_decref(j);

    refuse("{" HEAD ", " SPACE ", \"trainable\": {\"type\": \"external\", \"argv\": [\"x\"]}}",
           "trainable.argv");
    refuse("{" HEAD ", " SPACE ", \"trainable\": {\"type\": \"docker\"}}", "trainable.type");
    refuse("{" HEAD ", " SPACE ", \"trainable\": {}}", "trainable.type");
    refuse("{" HEAD ", " SPACE ", \"trainable\": \"external\"}", "trainable");
}

/* Where a command's code comes from (docs/api.md, "trainable"): each
 * field read into the Spec, and each bad value refused naming its path. */
static void test_trainable_code(void **state)
{
    (void)state;
#define CMD(extra)                                                                                 \
    "{" HEAD ", " SPACE                                                                            \
    ", \"trainable\": {\"type\": \"command\", \"argv\": [\"python3\", \"t.py\"]" extra "}}"
#define SHA "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"
    Spec spec;
    accept(CMD(", \"working_dir\": \"sha256:" SHA "\", \"environment\": \"torch-2.3\","
               " \"cwd\": \"src/app\", \"container\": {\"image\": \"localhost/x:1\","
               " \"runtime\": \"podman\", \"mounts\": [\"/data:/data:ro\"],"
               " \"options\": [\"--shm-size=1g\"]}"),
           &spec);
    assert_string_equal(spec.working_dir,
                        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    /* Stored in one spelling: what the blob sweep and workers look for. */
    assert_string_equal(json_string_value(json_object_get(json_object_get(spec.json, "trainable"),
                                                          "working_dir")),
                        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    assert_string_equal(spec.environment, "torch-2.3");
    assert_true(spec.container);
    assert_string_equal(spec.container_runtime, "podman");
    spec_close(&spec);
    accept(CMD(""), &spec);
    assert_string_equal(spec.working_dir, "");
    assert_string_equal(spec.environment, "");
    assert_false(spec.container);
    spec_close(&spec);
    accept("{" HEAD ", " SPACE
           ", \"trainable\": {\"type\": \"builtin\", \"environment\": \"gpu\"}}",
           &spec);
    assert_string_equal(spec.environment, "gpu");
    spec_close(&spec);

    refuse(CMD(", \"working_dir\": \"./src\""), "trainable.working_dir");
    refuse(CMD(", \"working_dir\": \"sha256:abc\""), "trainable.working_dir");
    refuse(CMD(", \"working_dir\": \"sha256:" SHA "0\""), "trainable.working_dir");
    refuse(CMD(", \"working_dir\": \"sha256:" SHA "\", \"cwd\": \"/abs\""), "trainable.cwd");
    refuse(CMD(", \"working_dir\": \"sha256:" SHA "\", \"cwd\": \"a/../..\""), "trainable.cwd");
    refuse(CMD(", \"environment\": \"\""), "trainable.environment");
    refuse(CMD(", \"environment\": \"-x\""), "trainable.environment");
    refuse(CMD(", \"environment\": \"a b\""), "trainable.environment");
    refuse(CMD(", \"environment\": 3"), "trainable.environment");
    refuse(CMD(", \"container\": {}"), "trainable.container.image");
    refuse(CMD(", \"container\": \"img\""), "trainable.container");
    refuse(CMD(", \"container\": {\"image\": \"i\", \"runtime\": \"lxc\"}"),
           "trainable.container.runtime");
    refuse(CMD(", \"container\": {\"image\": \"i\", \"mounts\": [\"/nocolon\"]}"),
           "trainable.container.mounts");
    refuse(CMD(", \"container\": {\"image\": \"i\", \"mounts\": [\"/a:rel\"]}"),
           "trainable.container.mounts");
    refuse(CMD(", \"container\": {\"image\": \"i\", \"options\": [1]}"),
           "trainable.container.options");
    refuse(CMD(", \"container\": {\"image\": \"i\", \"gpus\": true}"), "trainable.container.gpus");
    refuse("{" HEAD ", " SPACE
           ", \"trainable\": {\"type\": \"builtin\", \"working_dir\": \"sha256:" SHA "\"}}",
           "trainable.working_dir");
#undef CMD
#undef SHA
}

static void test_nested_object(void **state)
{
    (void)state;
    const char *text = "{" HEAD ", " EXTERNAL ", \"search_space\": {\"x\": {\"type\": \"uniform\","
                       " \"low\": 0, \"high\": 1}, \"model\": {\"layers\": 2}}}";
    refuse(text, "search_space.model");
    json_t *j = parse(text);
    Spec spec;
    RungError err;
    assert_int_equal(spec_parse(j, 5, &spec, &err), RUNG_E_INVALID_SPEC);
    assert_non_null(strstr(err.message, "sub-space without any domain"));
    assert_non_null(strstr(err.message, "\"grid\""));
    /* Stored by an earlier rungd: the constant it always was. */
    assert_int_equal(spec_load(j, 5, &spec, &err), 0);
    json_t *config = sampler_config(spec.space, &spec.searcher, 0);
    assert_int_equal(int_at(json_object_get(config, "model"), "layers"), 2);
    json_decref(config);
    Spec again;
    assert_int_equal(spec_load(spec.json, 5, &again, &err), 0);
    assert_true(json_equal(again.json, spec.json));
    spec_close(&again);
    spec_close(&spec);
    json_decref(j);

    /* A sub-space with a domain: flat dotted keys, usable in argv. */
    accept("{" HEAD ", \"trainable\": {\"type\": \"command\", \"argv\": [\"t\", "
           "\"{model.opt.lr}\", \"{model.layers}\"]}, \"search_space\": {\"model\": "
           "{\"layers\": 2, \"opt\": {\"lr\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}}}}",
           &spec);
    config = sampler_config(spec.space, &spec.searcher, 0);
    assert_int_equal(json_integer_value(json_object_get(config, "model.layers")), 2);
    assert_true(json_is_real(json_object_get(config, "model.opt.lr")));
    json_decref(config);
    spec_close(&spec);
    refuse("{" HEAD ", \"trainable\": {\"type\": \"command\", \"argv\": [\"{model}\"]}, "
           "\"search_space\": {\"model\": {\"lr\": {\"type\": \"uniform\", \"low\": 0, "
           "\"high\": 1}}}}",
           "trainable.argv[0]");
    /* points_to_evaluate naming a branch, or two branches at once. */
    const char *cond = "{" HEAD ", " EXTERNAL ", \"search_space\": {\"opt\": {\"type\": "
                       "\"choice\", \"values\": [{\"name\": \"sgd\", \"m\": {\"type\": "
                       "\"uniform\", \"low\": 0, \"high\": 1}}, {\"name\": \"adamw\", \"b2\": "
                       "{\"type\": \"uniform\", \"low\": 0.9, \"high\": 1}}]}}, "
                       "\"num_samples\": 4, \"points_to_evaluate\": [%s]}";
    char buf[1024];
    snprintf(buf, sizeof buf, cond, "{\"opt.name\": \"adamw\"}, {\"opt.m\": 0.5}");
    accept(buf, &spec);
    spec_close(&spec);
    snprintf(buf, sizeof buf, cond, "{\"opt.name\": \"sgd\", \"opt.b2\": 0.95}");
    refuse(buf, "points_to_evaluate[0]");
    snprintf(buf, sizeof buf, cond, "{\"opt.b2\": 2}");
    refuse(buf, "points_to_evaluate[0].opt.b2");

    /* What the message suggests, and other constants, are accepted. */
    accept("{" HEAD ", " EXTERNAL ", \"search_space\": {\"model\": {\"type\": \"grid\","
           " \"values\": [{\"layers\": 2}]}, \"n\": [1, {\"a\": 2}], \"s\": \"x\", \"z\": null}}",
           &spec);
    spec_close(&spec);
    /* An object with a "type" is a domain, not a nested space. */
    refuse("{" HEAD ", " EXTERNAL ", \"search_space\": {\"x\": {\"type\": \"nested\"}}}",
           "search_space.x.type");
}

/* A spec for spec_patch: 2 grid combinations, 3 points. */
static void patch_spec(Spec *spec)
{
    accept("{" HEAD ", " EXTERNAL ", \"search_space\": {\"b\": {\"type\": \"grid\", \"values\":"
           " [1, 2]}}, \"num_samples\": 2, \"points_to_evaluate\": [{}, {}, {}]}",
           spec);
    assert_int_equal(spec->total_trials, 4);
}

static void test_patch(void **state)
{
    (void)state;
    Spec spec;
    patch_spec(&spec);
    RungError err;
    json_t *p = parse("{\"num_samples\": 5, \"priority\": 3, \"max_concurrent_trials\": 2,"
                      " \"share\": 2.5}");
    assert_int_equal(spec_patch(&spec, p, 2, &err), 0);
    json_decref(p);
    assert_int_equal(spec.num_samples, 5);
    assert_int_equal(spec.total_trials, 10);
    assert_int_equal(spec.priority, 3);
    assert_int_equal(spec.max_concurrent, 2);
    assert_true(spec.share == 2.5);
    assert_int_equal(int_at(spec.json, "num_samples"), 5);
    assert_int_equal(int_at(spec.json, "priority"), 3);
    assert_int_equal(int_at(spec.json, "max_concurrent_trials"), 2);
    assert_true(json_number_value(json_object_get(spec.json, "share")) == 2.5);
    /* The patched spec is a valid one, as stored. */
    Spec again;
    assert_int_equal(spec_load(spec.json, 5, &again, &err), 0);
    assert_true(json_equal(again.json, spec.json));
    assert_int_equal(again.total_trials, 10);
    spec_close(&again);

    /* One key alone leaves the others; {} changes nothing. */
    p = parse("{\"share\": 1}");
    assert_int_equal(spec_patch(&spec, p, 0, &err), 0);
    json_decref(p);
    assert_true(spec.share == 1);
    assert_int_equal(int_at(spec.json, "share"), 1);
    assert_int_equal(spec.num_samples, 5);
    assert_int_equal(spec.priority, 3);
    p = parse("{}");
    json_t *before = json_deep_copy(spec.json);
    assert_int_equal(spec_patch(&spec, p, 0, &err), 0);
    assert_true(json_equal(before, spec.json));
    json_decref(before);
    json_decref(p);
    spec_close(&spec);
}

static void test_patch_refused(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int64_t min;
        int code;
        const char *field;
    } bad[] = {
        {"[]", 0, RUNG_E_BAD_JSON, ""},
        {"3", 0, RUNG_E_BAD_JSON, ""},
        {"{\"metric\": \"x\"}", 0, RUNG_E_INVALID_ARGUMENT, "metric"},
        {"{\"num_samples\": 3, \"max_failures\": 1}", 0, RUNG_E_INVALID_ARGUMENT, "max_failures"},
        {"{\"num_samples\": 0}", 0, RUNG_E_INVALID_ARGUMENT, "num_samples"},
        {"{\"num_samples\": \"3\"}", 0, RUNG_E_INVALID_ARGUMENT, "num_samples"},
        {"{\"num_samples\": 3}", 4, RUNG_E_INVALID_ARGUMENT, "num_samples"},
        /* 2 combinations x 6,000,000 > 10,000,000 trials. */
        {"{\"num_samples\": 6000000}", 0, RUNG_E_INVALID_ARGUMENT, "num_samples"},
        {"{\"num_samples\": 10000001}", 0, RUNG_E_INVALID_ARGUMENT, "num_samples"},
        /* 2 trials, 3 points_to_evaluate. */
        {"{\"num_samples\": 1}", 0, RUNG_E_INVALID_ARGUMENT, "num_samples"},
        {"{\"priority\": 1000001}", 0, RUNG_E_INVALID_ARGUMENT, "priority"},
        {"{\"priority\": 1.5}", 0, RUNG_E_INVALID_ARGUMENT, "priority"},
        {"{\"max_concurrent_trials\": -1}", 0, RUNG_E_INVALID_ARGUMENT, "max_concurrent_trials"},
        {"{\"max_concurrent_trials\": 1000001}", 0, RUNG_E_INVALID_ARGUMENT,
         "max_concurrent_trials"},
        {"{\"share\": 0}", 0, RUNG_E_INVALID_ARGUMENT, "share"},
        {"{\"share\": 2000000}", 0, RUNG_E_INVALID_ARGUMENT, "share"},
        /* Valid values before an invalid one change nothing either. */
        {"{\"num_samples\": 9, \"priority\": 5, \"share\": -1}", 0, RUNG_E_INVALID_ARGUMENT,
         "share"},
        {"{\"priority\": 5, \"num_samples\": 9, \"max_concurrent_trials\": 7}", 10,
         RUNG_E_INVALID_ARGUMENT, "num_samples"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Spec spec;
        patch_spec(&spec);
        Spec copy = spec;
        json_t *before = json_deep_copy(spec.json);
        json_t *p = json_loads(bad[i].body, JSON_DECODE_ANY, NULL);
        assert_non_null(p);
        RungError err;
        rung_error_clear(&err);
        int rc = spec_patch(&spec, p, bad[i].min, &err);
        if (rc != bad[i].code)
            fail_msg("%s: rc %d, want %d", bad[i].body, rc, bad[i].code);
        if (strcmp(err.field, bad[i].field) != 0)
            fail_msg("%s: field %s, want %s (%s)", bad[i].body, err.field, bad[i].field,
                     err.message);
        if (bad[i].field[0] != '\0')
            assert_non_null(strstr(err.message, bad[i].field));
        assert_memory_equal(&spec, &copy, sizeof spec);
        assert_true(json_equal(before, spec.json));
        json_decref(before);
        json_decref(p);
        spec_close(&spec);
    }
}

/* argv's gang placeholders: always valid; a parameter of the same name that
 * argv uses is refused at submission, but a stored spec with one loads. */
static void test_gang_placeholders(void **state)
{
    (void)state;
    Spec spec;
    accept("{" HEAD ", " SPACE ", \"trainable\": {\"type\": \"command\", \"argv\": [\"torchrun\","
           " \"--nnodes={nnodes}\", \"--node_rank={node_rank}\", \"{master_addr}:{master_port}\","
           " \"--x={x}\"]}}",
           &spec);
    spec_close(&spec);
    /* A parameter of such a name that argv does not use is an ordinary one. */
    accept("{" HEAD ", \"search_space\": {\"nnodes\": 3}, \"trainable\": {\"type\": "
           "\"command\", \"argv\": [\"run\", \"{node_rank}\"]}}",
           &spec);
    spec_close(&spec);
    static const char *const names[] = {"node_rank", "nnodes", "master_addr", "master_port"};
    for (size_t i = 0; i < 4; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{" HEAD ", \"search_space\": {\"%s\": 2}, \"trainable\": {\"type\": "
                 "\"command\", \"argv\": [\"run\", \"--a={%s}\"]}}",
                 names[i], names[i]);
        refuse(text, "trainable.argv[1]");
        json_t *j = parse(text);
        RungError err;
        rung_error_clear(&err);
        assert_int_equal(spec_parse(j, 5, &spec, &err), RUNG_E_INVALID_SPEC);
        assert_non_null(strstr(err.message, "rename the parameter"));
        assert_int_equal(spec_load(j, 5, &spec, &err), 0);
        assert_int_equal(json_integer_value(
                             json_object_get(json_object_get(spec.json, "search_space"), names[i])),
                         2);
        spec_close(&spec);
        json_decref(j);
    }
    /* Other names still must be parameters. */
    refuse("{" HEAD ", " SPACE ", \"trainable\": {\"type\": \"command\", \"argv\": [\"run\","
           " \"{local_rank}\"]}}",
           "trainable.argv[1]");
}

/* Several objectives and constraints (docs/api.md, "Several objectives",
 * "Constraints"): the accepted forms, what GET shows, and each refusal by
 * field. */
#define MO                                                                                         \
    "\"metrics\": [{\"name\": \"loss\", \"mode\": \"min\"}, "                                      \
    "{\"name\": \"acc\", \"mode\": \"max\"}]"
static void test_objectives(void **state)
{
    (void)state;
    Spec spec;
    accept("{" MO ", " SPACE ", " EXTERNAL ", \"constraints\": [{\"metric\": \"mem\", "
           "\"max\": 16}, {\"metric\": \"lat\", \"min\": 1.5, \"max\": 20}]}",
           &spec);
    assert_int_equal(spec.n_objectives, 2);
    assert_string_equal(spec.metric, "loss");
    assert_string_equal(spec.objectives[1].name, "acc");
    assert_int_equal(spec.objectives[1].mode, SPEC_MODE_MAX);
    assert_int_equal(spec.n_constraints, 2);
    assert_false(spec.constraints[0].has_min);
    assert_true(spec.constraints[1].has_min);
    assert_true(spec.constraints[1].min == 1.5 && spec.constraints[1].max == 20);
    assert_null(json_object_get(spec.json, "best_scope"));
    assert_null(json_object_get(spec.json, "metric"));
    json_t *r = parse("{\"loss\": 2, \"acc\": 0.5, \"mem\": 3, \"lat\": 20}");
    double loss[SPEC_MAX_OBJECTIVES];
    assert_true(spec_losses(&spec, r, loss));
    assert_true(loss[0] == 2 && loss[1] == -0.5);
    assert_true(spec_feasible(&spec, r));
    json_object_set_new(r, "lat", json_real(20.5));
    assert_false(spec_feasible(&spec, r));
    json_object_del(r, "lat");
    assert_false(spec_feasible(&spec, r)); /* never reported: infeasible */
    json_object_del(r, "acc");
    assert_false(spec_losses(&spec, r, loss));
    json_decref(r);
    spec_close(&spec);

    /* asha and hyperband take several objectives (docs/schedulers.md). */
    accept("{" MO ", " SPACE ", " EXTERNAL ", \"scheduler\": {\"type\": \"asha\"}}", &spec);
    assert_int_equal(spec.sched.type, ASHA_ASHA);
    spec_close(&spec);
    accept("{" MO ", " SPACE ", " EXTERNAL ", \"scheduler\": {\"type\": \"hyperband\"}}", &spec);
    assert_int_equal(spec.sched.type, ASHA_HYPERBAND);
    spec_close(&spec);

    /* One objective: the single form fills objectives[0]; constraints apply. */
    accept("{" BASE ", \"constraints\": [{\"metric\": \"mem\", \"min\": 0}]}", &spec);
    assert_int_equal(spec.n_objectives, 1);
    assert_string_equal(spec.objectives[0].name, "loss");
    assert_int_equal(spec.n_constraints, 1);
    spec_close(&spec);

    static const struct {
        const char *text;
        const char *field;
    } bad[] = {
        {"{" HEAD ", " MO ", " SPACE ", " EXTERNAL "}", "metrics"},
        {"{\"metric\": \"loss\", " MO ", " SPACE ", " EXTERNAL "}", "metrics"},
        {"{\"metrics\": [{\"name\": \"a\", \"mode\": \"min\"}], " SPACE ", " EXTERNAL "}",
         "metrics"},
        {"{\"metrics\": {\"a\": \"min\"}, " SPACE ", " EXTERNAL "}", "metrics"},
        {"{\"metrics\": [{\"name\": \"a\", \"mode\": \"min\"}, {\"name\": \"b\", \"mode\": "
         "\"min\"}, {\"name\": \"c\", \"mode\": \"min\"}, {\"name\": \"d\", \"mode\": \"min\"}, "
         "{\"name\": \"e\", \"mode\": \"min\"}], " SPACE ", " EXTERNAL "}",
         "metrics"},
        {"{\"metrics\": [{\"name\": \"a\", \"mode\": \"min\"}, 3], " SPACE ", " EXTERNAL "}",
         "metrics[1]"},
        {"{\"metrics\": [{\"name\": \"a\", \"mode\": \"min\"}, {\"mode\": \"min\"}], " SPACE
         ", " EXTERNAL "}",
         "metrics[1].name"},
        {"{\"metrics\": [{\"name\": \"a\", \"mode\": \"min\"}, {\"name\": \"b\", \"mode\": "
         "\"low\"}], " SPACE ", " EXTERNAL "}",
         "metrics[1].mode"},
        {"{\"metrics\": [{\"name\": \"a\", \"mode\": \"min\"}, {\"name\": \"a\", \"mode\": "
         "\"max\"}], " SPACE ", " EXTERNAL "}",
         "metrics[1].name"},
        {"{\"metrics\": [{\"name\": \"a\", \"mode\": \"min\"}, {\"name\": \"b\", \"mode\": "
         "\"min\", \"goal\": 1}], " SPACE ", " EXTERNAL "}",
         "metrics[1].goal"},
        {"{" MO ", " SPACE ", " EXTERNAL ", \"best_scope\": \"last\"}", "best_scope"},
        {"{" MO ", " SPACE ", " EXTERNAL ", \"scheduler\": {\"type\": \"median\"}}",
         "scheduler.type"},
        {"{" MO ", " SPACE ", " EXTERNAL ", \"scheduler\": {\"type\": \"asha\", \"promote\": "
         "true}}",
         "scheduler.promote"},
        {"{" MO ", " SPACE ", " EXTERNAL ", \"stop\": {\"metric_threshold\": 1}}",
         "stop.metric_threshold"},
        {"{" MO ", " SPACE ", " EXTERNAL ", \"stop\": {\"patience\": 5}}", "stop.patience"},
        {"{" BASE ", \"constraints\": []}", "constraints"},
        {"{" BASE ", \"constraints\": {\"mem\": 3}}", "constraints"},
        {"{" BASE ", \"constraints\": [{\"metric\": \"mem\"}]}", "constraints[0]"},
        {"{" BASE ", \"constraints\": [{\"max\": 3}]}", "constraints[0].metric"},
        {"{" BASE ", \"constraints\": [{\"metric\": \"mem\", \"max\": \"3\"}]}",
         "constraints[0].max"},
        {"{" BASE ", \"constraints\": [{\"metric\": \"m\", \"min\": 4, \"max\": 3}]}",
         "constraints[0].max"},
        {"{" BASE ", \"constraints\": [{\"metric\": \"m\", \"max\": 3, \"le\": 1}]}",
         "constraints[0].le"},
        {"{" BASE ", \"constraints\": [{\"metric\": \"m\", \"max\": 3}], \"stop\": "
         "{\"metric_threshold\": 1}}",
         "stop.metric_threshold"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refuse(bad[i].text, bad[i].field);
}

/* scheduler.end_at_max_t (docs/schedulers.md): asha only, true unless
 * given, shown in the spec; false leaves trials running past max_t. */
static void test_end_at_max_t(void **state)
{
    (void)state;
    Spec spec;
    accept("{" BASE ", \"scheduler\": {\"type\": \"asha\"}}", &spec);
    assert_false(spec.sched.open_end);
    assert_true(
        json_is_true(json_object_get(json_object_get(spec.json, "scheduler"), "end_at_max_t")));
    spec_close(&spec);
    accept("{" BASE ", \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 3, "
           "\"reduction_factor\": 3, \"end_at_max_t\": false}}",
           &spec);
    assert_true(spec.sched.open_end);
    assert_true(
        json_is_false(json_object_get(json_object_get(spec.json, "scheduler"), "end_at_max_t")));
    spec_close(&spec);
    refuse("{" BASE ", \"scheduler\": {\"type\": \"asha\", \"end_at_max_t\": 0}}",
           "scheduler.end_at_max_t");
    refuse("{" BASE ", \"scheduler\": {\"type\": \"hyperband\", \"end_at_max_t\": false}}",
           "scheduler.end_at_max_t");
}

/* scheduler.allocation (docs/schedulers.md, "Brackets"): asha and
 * hyperband, "softmax" (Ray's) unless given and shown in the spec,
 * "budget" sets budget_brackets; any other value or scheduler is refused. */
/* Accepts scheduler `sched` with "allocation" given as `given` (NULL: left
 * out) and expects budget_brackets and the spec's shown value `want`. */
static void expect_allocation(const char *sched, const char *given, const char *want)
{
    char text[256];
    Spec spec;
    if (given)
        snprintf(text, sizeof text,
                 "{" BASE ", \"scheduler\": {\"type\": \"%s\", \"allocation\": \"%s\"}}", sched,
                 given);
    else
        snprintf(text, sizeof text, "{" BASE ", \"scheduler\": {\"type\": \"%s\"}}", sched);
    accept(text, &spec);
    assert_int_equal(spec.sched.budget_brackets, strcmp(want, "budget") == 0);
    assert_string_equal(json_string_value(
                            json_object_get(json_object_get(spec.json, "scheduler"), "allocation")),
                        want);
    spec_close(&spec);
}

static void test_scheduler_allocation_budget_or_softmax(void **state)
{
    (void)state;
    const char *sched[] = {"asha", "hyperband"};
    for (int i = 0; i < 2; i++) {
        expect_allocation(sched[i], NULL, "softmax");
        expect_allocation(sched[i], "budget", "budget");
        expect_allocation(sched[i], "softmax", "softmax");
    }
    refuse("{" BASE ", \"scheduler\": {\"type\": \"hyperband\", \"allocation\": \"optuna\"}}",
           "scheduler.allocation");
    refuse("{" BASE ", \"scheduler\": {\"type\": \"hyperband\", \"allocation\": 1}}",
           "scheduler.allocation");
    refuse("{" BASE ", \"scheduler\": {\"type\": \"median\", \"allocation\": \"budget\"}}",
           "scheduler.allocation");
    refuse("{" BASE ", \"scheduler\": {\"allocation\": \"budget\"}}", "scheduler.allocation");
}

/* searcher.multi_fidelity (docs/api.md, "searcher"): for bayes on under
 * hyperband and off under asha unless the spec says, for tpe on with rungs
 * unless it says no; allowed with rungs, one metric and no constraints;
 * shown in the spec. */
#define BAYES "\"searcher\": {\"type\": \"bayes\"}"
#define ASHA "\"scheduler\": {\"type\": \"asha\"}"
/* Accepts text; its searcher.multi_fidelity is want, and the spec shows
 * it as want (shown) or not at all. */
static void expect_mf(const char *text, int want, bool shown)
{
    Spec spec;
    accept(text, &spec);
    assert_int_equal(spec.searcher.multi_fidelity, want);
    const json_t *v = json_object_get(json_object_get(spec.json, "searcher"), "multi_fidelity");
    if (shown)
        assert_true(want ? json_is_true(v) : json_is_false(v));
    else
        assert_null(v);
    spec_close(&spec);
}

static void test_multi_fidelity(void **state)
{
    (void)state;
    expect_mf("{" BASE ", " BAYES ", " ASHA "}", 0, true);
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"bayes\", \"multi_fidelity\": true}, " ASHA "}",
              1, true);
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"bayes\", \"multi_fidelity\": true}, "
              "\"scheduler\": {\"type\": \"hyperband\"}}",
              1, true);
    /* bayes under hyperband: on unless the spec says no. */
    expect_mf("{" BASE ", " BAYES ", \"scheduler\": {\"type\": \"hyperband\"}}", 1, true);
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"bayes\", \"multi_fidelity\": false}, "
              "\"scheduler\": {\"type\": \"hyperband\"}}",
              0, true);
    /* No rungs, or constraints: off, and said so. */
    expect_mf("{" BASE ", " BAYES "}", 0, true);
    expect_mf("{" BASE ", " BAYES ", " ASHA ", \"constraints\": [{\"metric\": \"m\", \"max\": 1}]}",
              0, true);
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"bayes\", \"multi_fidelity\": false}, " ASHA
              "}",
              0, true);
    /* tpe with rungs: on unless the spec says (sampler/tpe_mf.c). */
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"tpe\"}, " ASHA "}", 1, true);
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"tpe\", \"multi_fidelity\": false}, "
              "\"scheduler\": {\"type\": \"hyperband\"}}",
              0, true);
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"tpe\"}}", 0, true);
    refuse("{" BASE ", \"searcher\": {\"type\": \"tpe\", \"multi_fidelity\": true}}",
           "searcher.multi_fidelity");
    /* auto with rungs: on for its tpe phase (sampler/auto.c), not shown;
     * random takes no such key, and shows none. */
    expect_mf("{" BASE ", \"searcher\": {\"type\": \"auto\"}, " ASHA "}", 1, false);
    expect_mf("{" BASE ", " ASHA "}", 0, false);

    refuse("{" BASE ", \"searcher\": {\"type\": \"random\", \"multi_fidelity\": true}}",
           "searcher.multi_fidelity");
    refuse("{" BASE ", \"searcher\": {\"type\": \"bayes\", \"multi_fidelity\": 1}, " ASHA "}",
           "searcher.multi_fidelity");
    refuse("{" BASE ", \"searcher\": {\"type\": \"bayes\", \"multi_fidelity\": true}}",
           "searcher.multi_fidelity");
    refuse("{" BASE ", \"searcher\": {\"type\": \"bayes\", \"multi_fidelity\": true}, " ASHA
           ", \"constraints\": [{\"metric\": \"m\", \"max\": 1}]}",
           "searcher.multi_fidelity");
    refuse("{" MO ", " SPACE ", " EXTERNAL ", \"searcher\": {\"type\": \"bayes\", "
           "\"multi_fidelity\": true}, " ASHA "}",
           "searcher.multi_fidelity");
}

/* scheduler "pbt" (docs/schedulers.md, "pbt"): Ray's defaults shown, a
 * list as a choice, and every refusal by its field. */
#define PBT_HEAD "\"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 4, "
#define PBT_X "\"hyperparam_mutations\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}"
static void test_pbt(void **state)
{
    (void)state;
    Spec spec;
    accept("{" BASE ", " PBT_HEAD PBT_X "}}", &spec);
    assert_true(spec.is_pbt);
    assert_int_equal(spec.sched.type, ASHA_FIFO); /* pbt stops nothing */
    assert_int_equal(spec.pbt.interval, 4);
    assert_true(spec.pbt.quantile == 0.25 && spec.pbt_resample == 0.25);
    assert_int_equal(spec.pbt.burn_in, 0);
    assert_int_equal(spec.pbt.max_t, 0);
    assert_false(spec.pbt.synch);
    const json_t *sc = json_object_get(spec.json, "scheduler");
    assert_string_equal(json_string_value(json_object_get(sc, "time_attr")), "step");
    assert_true(json_is_false(json_object_get(sc, "synch")));
    assert_true(json_real_value(json_object_get(sc, "quantile_fraction")) == 0.25);
    spec_close(&spec);
    accept("{" HEAD ", \"search_space\": {\"x\": {\"type\": \"choice\", \"values\": [1, 2, "
           "3]}}, " EXTERNAL ", " PBT_HEAD "\"hyperparam_mutations\": {\"x\": [1, 2, 3, 4]}, "
           "\"synch\": true, \"max_t\": 40, \"burn_in_period\": 8, \"quantile_fraction\": 0.5, "
           "\"resample_probability\": 0}}",
           &spec);
    assert_true(spec.pbt.synch);
    assert_int_equal(spec.pbt.max_t, 40);
    assert_int_equal(spec.pbt.burn_in, 8);
    assert_true(spec.pbt_resample == 0.0);
    assert_true(space_has_param(spec.mutations, "x"));
    spec_close(&spec);
    refuse("{" BASE ", \"scheduler\": {\"type\": \"pbt\", " PBT_X "}}",
           "scheduler.perturbation_interval");
    refuse("{" BASE ", " PBT_HEAD "\"grace_period\": 1, " PBT_X "}}", "scheduler.grace_period");
    refuse("{" BASE ", " PBT_HEAD "\"time_attr\": \"epoch\", " PBT_X "}}", "scheduler.time_attr");
    refuse("{" BASE ", " PBT_HEAD "\"quantile_fraction\": 0, " PBT_X "}}",
           "scheduler.quantile_fraction");
    refuse("{" BASE ", " PBT_HEAD "\"quantile_fraction\": 0.51, " PBT_X "}}",
           "scheduler.quantile_fraction");
    refuse("{" BASE ", " PBT_HEAD "\"resample_probability\": -0.1, " PBT_X "}}",
           "scheduler.resample_probability");
    refuse("{" BASE ", " PBT_HEAD "\"synch\": 1, " PBT_X "}}", "scheduler.synch");
    refuse("{" BASE ", " PBT_HEAD "\"hyperparam_mutations\": {}}}",
           "scheduler.hyperparam_mutations");
    refuse("{" BASE ", " PBT_HEAD "\"max_t\": 5}}", "scheduler.hyperparam_mutations");
    refuse("{" BASE ", " PBT_HEAD "\"hyperparam_mutations\": {\"y\": [1, 2]}}}",
           "scheduler.hyperparam_mutations.y");
    refuse("{" BASE ", " PBT_HEAD "\"hyperparam_mutations\": {\"x\": 3}}}",
           "scheduler.hyperparam_mutations.x");
    /* A domain's own error, as search_space's names its key, under the
     * scheduler's path. */
    json_t *j = parse("{" BASE ", " PBT_HEAD "\"hyperparam_mutations\": {\"x\": {\"type\": "
                      "\"uniform\", \"low\": 2, \"high\": 1}}}}");
    RungError err;
    assert_int_equal(spec_parse(j, 5, &spec, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "scheduler.hyperparam_mutations.x.high");
    assert_string_equal(err.message, "scheduler.hyperparam_mutations.x: high must be > low");
    json_decref(j);
    refuse("{" BASE ", " PBT_HEAD
           "\"hyperparam_mutations\": {\"x\": {\"type\": \"choice\", \"values\": [{\"a\": "
           "{\"type\": \"uniform\", \"low\": 0, \"high\": 1}}, {\"b\": 1}]}}}}",
           "scheduler.hyperparam_mutations");
    refuse("{" SPACE ", " EXTERNAL ", \"metrics\": [{\"name\": \"a\", \"mode\": "
           "\"min\"}, {\"name\": \"b\", \"mode\": \"min\"}], " PBT_HEAD PBT_X "}}",
           "scheduler.type");
    refuse("{" BASE ", \"resources_per_trial\": {\"nodes\": 2}, " PBT_HEAD PBT_X "}}",
           "resources_per_trial.nodes");
    /* pb2: Ray's hyperparam_bounds, [low, high] or a domain; no resampling. */
    accept("{" BASE ", \"scheduler\": {\"type\": \"pb2\", \"perturbation_interval\": 4, "
           "\"hyperparam_bounds\": {\"x\": [0.1, 0.9]}}}",
           &spec);
    assert_true(spec.is_pbt && spec.is_pb2);
    assert_null(json_object_get(json_object_get(spec.json, "scheduler"), "resample_probability"));
    spec_close(&spec);
    refuse("{" BASE ", \"scheduler\": {\"type\": \"pb2\", \"perturbation_interval\": 4, "
           "\"resample_probability\": 0.5, \"hyperparam_bounds\": {\"x\": [0, 1]}}}",
           "scheduler.resample_probability");
    refuse("{" BASE ", \"scheduler\": {\"type\": \"pb2\", \"perturbation_interval\": 4, "
           "\"hyperparam_mutations\": {\"x\": [0, 1]}}}",
           "scheduler.hyperparam_mutations");
    refuse("{" BASE ", \"scheduler\": {\"type\": \"pb2\", \"perturbation_interval\": 4}}",
           "scheduler.hyperparam_bounds");
    refuse("{" BASE ", \"scheduler\": {\"type\": \"pb2\", \"perturbation_interval\": 4, "
           "\"hyperparam_bounds\": {\"x\": \"wide\"}}}",
           "scheduler.hyperparam_bounds.x");
}


/* Tags and notes (docs/api.md, "Tags and notes"): defaults, kept apart
 * from spec->json, each refusal naming its field, and the same rules for
 * a PATCH body and a ?tag=. */
static void test_tags_notes(void **state)
{
    (void)state;
    Spec spec;
    accept("{" BASE "}", &spec);
    assert_int_equal(json_array_size(spec.tags), 0);
    assert_string_equal(json_string_value(spec.notes), "");
    assert_null(json_object_get(spec.json, "tags"));
    spec_close(&spec);
    accept("{" BASE ", \"tags\": [\"b\", \"a\", \"\u00e9 x\"], \"notes\": \"two\\nlines\"}", &spec);
    json_t *want = parse("[\"b\", \"a\", \"\u00e9 x\"]");
    assert_true(json_equal(spec.tags, want));
    json_decref(want);
    assert_string_equal(json_string_value(spec.notes), "two\nlines");
    assert_null(json_object_get(spec.json, "tags"));
    assert_null(json_object_get(spec.json, "notes"));
    spec_close(&spec);

    refuse("{" BASE ", \"tags\": \"a\"}", "tags");
    refuse("{" BASE ", \"tags\": null}", "tags");
    refuse("{" BASE ", \"tags\": [\"a\", 1]}", "tags[1]");
    refuse("{" BASE ", \"tags\": [\"a\", \"\"]}", "tags[1]");
    refuse("{" BASE ", \"tags\": [\"a\", \"b\", \"c,d\"]}", "tags[2]");
    refuse("{" BASE ", \"tags\": [\"a\\u0007\"]}", "tags[0]");
    refuse("{" BASE ", \"tags\": [\"a\\u007f\"]}", "tags[0]");
    refuse("{" BASE ", \"tags\": [\"a\\u0085\"]}", "tags[0]"); /* C1: NEL */
    refuse("{" BASE ", \"tags\": [\"x\", \"y\", \"x\"]}", "tags[2]");
    refuse("{" BASE ", \"notes\": 5}", "notes");
    /* 32 tags of 64 bytes pass, a 33rd tag or a 65th byte does not. */
    char text[4096];
    size_t n = (size_t)snprintf(text, sizeof text, "{" BASE ", \"tags\": [");
    for (int i = 0; i < 33; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"%02d%062d\"", i ? ", " : "", i, 0);
    snprintf(text + n, sizeof text - n, "]}");
    refuse(text, "tags");
    char *cut = strrchr(text, ',');
    snprintf(cut, (size_t)(text + sizeof text - cut), "]}");
    accept(text, &spec);
    assert_int_equal(json_array_size(spec.tags), 32);
    spec_close(&spec);

    char tag[80];
    memset(tag, 'x', sizeof tag);
    assert_true(spec_tag_ok(tag, 64));
    assert_false(spec_tag_ok(tag, 65));
    assert_false(spec_tag_ok(tag, 0));
    assert_true(spec_tag_ok("\xc3\xa9", 2));  /* é */
    assert_false(spec_tag_ok("\xc3", 1));     /* cut in half */
    assert_false(spec_tag_ok("\xff", 1));     /* not UTF-8 */
    assert_true(spec_tag_ok("\xc2\xa0", 2));  /* U+00A0, after the C1 range */
    assert_false(spec_tag_ok("\xc2\x9f", 2)); /* U+009F, C1 */

    /* PATCH bodies: the same rules, invalid_argument, nothing returned. */
    RungError err;
    json_t *tags, *notes;
    json_t *body = parse("{\"tags\": [\"a\", \"a\"], \"notes\": \"n\"}");
    assert_int_equal(spec_meta_patch(body, &tags, &notes, &err), RUNG_E_INVALID_ARGUMENT);
    assert_string_equal(err.field, "tags[1]");
    assert_null(tags);
    assert_null(notes);
    json_decref(body);
    body = parse("{\"tags\": [\"a\"], \"notes\": 1}");
    assert_int_equal(spec_meta_patch(body, &tags, &notes, &err), RUNG_E_INVALID_ARGUMENT);
    assert_string_equal(err.field, "notes");
    assert_null(tags);
    json_decref(body);
    body = parse("{\"notes\": \"only\"}");
    assert_int_equal(spec_meta_patch(body, &tags, &notes, &err), 0);
    assert_null(tags);
    assert_string_equal(json_string_value(notes), "only");
    json_decref(notes);
    json_decref(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_fidelity),
        cmocka_unit_test(test_end_at_max_t),
        cmocka_unit_test(test_scheduler_allocation_budget_or_softmax),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_fields_given),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_points_domains),
        cmocka_unit_test(test_grid_order),
        cmocka_unit_test(test_trainable),
        cmocka_unit_test(test_trainable_code),
        cmocka_unit_test(test_nested_object),
        cmocka_unit_test(test_patch),
        cmocka_unit_test(test_patch_refused),
        cmocka_unit_test(test_gang_placeholders),
        cmocka_unit_test(test_objectives),
        cmocka_unit_test(test_pbt),
        cmocka_unit_test(test_tags_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
