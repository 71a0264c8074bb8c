/* Unit tests of cli/wandb.c, the C port of python/rung/convert.py's
 * wandb_to_spec: every sweep of the shared corpus (tests/data/wandb/,
 * README.md there), read by cli/yaml.c in W&B mode, gives the spec of
 * NAME.json or is refused with a message starting as NAME.error says, as
 * tests/python/test_wandb_corpus.py checks of the Python converter. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wandb.h"
#include "yaml.h"

#ifndef RUNG_WANDB_CORPUS
#error "RUNG_WANDB_CORPUS: the folder of the W&B corpus (tests/unit/CMakeLists.txt)"
#endif

#define ERR_SIZE 1024
#define CORPUS_FILE_MAX (1 << 20)
#define CORPUS_NAME_MAX 256

/* The whole of path, NUL-terminated (free it); NULL when it does not exist. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = malloc(CORPUS_FILE_MAX + 1);
    assert_non_null(buf);
    *len = fread(buf, 1, CORPUS_FILE_MAX + 1, f);
    fclose(f);
    if (*len > CORPUS_FILE_MAX)
        fail_msg("%s: larger than %d bytes", path, CORPUS_FILE_MAX);
    buf[*len] = '\0';
    return buf;
}

/* One case; returns whether it passed, a failure printed. */
static bool corpus_case(const char *dir, const char *name)
{
    char path[2 * CORPUS_NAME_MAX + 16], err[ERR_SIZE] = "";
    size_t len;
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    char *doc = read_file(path, &len);
    assert_non_null(doc);
    json_t *sweep = cli_yaml_read(doc, len, CLI_YAML_WANDB, err, sizeof err);
    free(doc);
    if (sweep == NULL) {
        print_error("%s.yaml: not read: %s\n", name, err);
        return false;
    }
    bool ok = cli_wandb_is_sweep(sweep);
    if (!ok)
        print_error("%s.yaml: not recognized as a W&B sweep\n", name);
    json_t *got = cli_wandb_to_spec(sweep, err, sizeof err);
    json_decref(sweep);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    char *want = read_file(path, &len);
    if (want != NULL) {
        json_error_t jerr;
        json_t *expected = json_loads(want, JSON_REJECT_DUPLICATES, &jerr);
        if (expected == NULL)
            fail_msg("%s.json: %s", name, jerr.text);
        if (got == NULL) {
            print_error("%s.yaml: refused: %s\n", name, err);
            ok = false;
        } else if (!json_equal(got, expected)) {
            char *g = json_dumps(got, JSON_COMPACT);
            print_error("%s.yaml: got %s\n", name, g);
            free(g);
            ok = false;
        }
        json_decref(expected);
    } else {
        snprintf(path, sizeof path, "%s/%s.error", dir, name);
        want = read_file(path, &len);
        if (want == NULL)
            fail_msg("%s: neither %s.json nor %s.error", name, name, name);
        want[strcspn(want, "\n")] = '\0';
        if (got != NULL) {
            char *g = json_dumps(got, JSON_COMPACT);
            print_error("%s.yaml: accepted as %s\n", name, g);
            free(g);
            ok = false;
        } else if (strncmp(err, want, strlen(want)) != 0) {
            print_error("%s.yaml: '%s' does not start with '%s'\n", name, err, want);
            ok = false;
        }
    }
    free(want);
    json_decref(got);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void test_corpus(void **state)
{
    (void)state;
    const char *dir = RUNG_WANDB_CORPUS;
    DIR *d = opendir(dir);
    if (d == NULL)
        fail_msg("cannot open the corpus %s", dir);
    static char names[256][CORPUS_NAME_MAX];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        assert_true(n < sizeof names / sizeof names[0]);
        assert_true(len - 5 < CORPUS_NAME_MAX);
        snprintf(names[n++], CORPUS_NAME_MAX, "%.*s", (int)(len - 5), e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], by_name);
    assert_true(n >= 15); /* a corpus that vanished must not pass */
    size_t failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += !corpus_case(dir, names[i]);
    if (failed > 0)
        fail_msg("%zu of %zu W&B sweeps failed", failed, n);
}

/* What `rung submit` takes for a W&B sweep, and what it leaves to rungd. */
static void test_is_sweep(void **state)
{
    (void)state;
    json_t *j = json_pack("{s:s, s:{}}", "method", "grid", "parameters");
    assert_true(cli_wandb_is_sweep(j));
    json_object_set_new(j, "search_space", json_object());
    assert_false(cli_wandb_is_sweep(j));
    json_decref(j);
    j = json_pack("{s:s, s:s}", "program", "train.py", "method", "grid");
    assert_false(cli_wandb_is_sweep(j));
    json_decref(j);
    assert_false(cli_wandb_is_sweep(NULL));
}

/* Refusals beyond the corpus's, each naming its field. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *sweep, *prefix;
    } cases[] = {
        {"{\"method\": \"random\", \"parameters\": {\"x\": {\"min\": 1}}}", "parameters.x:"},
        {"{\"method\": \"random\", \"parameters\": {\"x\": {\"distribution\": \"q_uniform\", "
         "\"min\": 0, \"max\": 1, \"q\": 0}}}",
         "parameters.x.q:"},
        {"{\"method\": \"grid\", \"parameters\": {\"x\": {\"min\": 0.0, \"max\": 1.0}}}",
         "parameters.x.distribution:"},
        {"{\"method\": \"random\", \"metric\": {\"name\": \"l\"}, \"parameters\": {\"x\": "
         "{\"value\": 1}}, \"early_terminate\": {\"type\": \"hyperband\", \"max_iter\": 27}}",
         "early_terminate.s:"},
        {"{\"method\": \"random\", \"metric\": {\"name\": \"l\"}, \"parameters\": {\"x\": "
         "{\"value\": 1}}, \"early_terminate\": {\"type\": \"hyperband\", \"min_iter\": 3, "
         "\"strict\": \"no\"}}",
         "early_terminate.strict:"},
        {"{\"method\": \"random\", \"parameters\": {\"x\": {\"value\": 1}}, \"command\": "
         "[\"python\", \"--home=${envvar:HOME}\"]}",
         "command[1]:"},
        {"{\"method\": \"random\", \"parameters\": {\"f\": {\"values\": [true, false]}}, "
         "\"command\": [\"python\", \"${args_no_boolean_flags}\"]}",
         "command[1]:"},
        {"{\"method\": \"bayes\", \"parameters\": {\"x\": {\"value\": 1}}}", "metric:"},
        {"{\"method\": \"random\", \"parameters\": {\"x\": {\"min\": 0, \"max\": "
         "9223372036854775807}}}",
         "parameters.x:"},
        {"{\"method\": \"grid\", \"parameters\": {\"x\": {\"distribution\": \"q_uniform\", "
         "\"min\": -9223372036854775807, \"max\": 9223372036854775807, \"q\": 1}}}",
         "parameters.x:"},
        {"{\"method\": \"random\", \"parameters\": {\"x\": {\"distribution\": \"q_uniform\", "
         "\"min\": -1e300, \"max\": 1, \"q\": 1}}}",
         "parameters.x.min:"},
        {"{\"method\": \"random\", \"parameters\": {\"x\": {\"value\": 1}}, \"job\": \"j\"}",
         "job:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_loads(cases[i].sweep, 0, NULL);
        assert_non_null(j);
        char err[ERR_SIZE];
        json_t *spec = cli_wandb_to_spec(j, err, sizeof err);
        if (spec != NULL)
            fail_msg("accepted: %s", cases[i].sweep);
        if (strncmp(err, cases[i].prefix, strlen(cases[i].prefix)) != 0)
            fail_msg("'%s' does not start with '%s'", err, cases[i].prefix);
        json_decref(j);
    }
}

/* A q_uniform grid takes up to 10,000 values, as convert.py's. */
static void test_grid_bound(void **state)
{
    (void)state;
    char err[ERR_SIZE];
    for (int reals = 0; reals < 2; reals++) {
        for (int over = 0; over < 2; over++) {
            json_t *j = json_pack("{s:s, s:{s:{s:s, s:o, s:o, s:o}}}", "method", "grid",
                                  "parameters", "x", "distribution", "q_uniform", "min",
                                  reals ? json_real(0) : json_integer(0), "max",
                                  reals ? json_real(1000 + over * 0.05)
                                        : json_integer(10000 + over),
                                  "q", reals ? json_real(0.1) : json_integer(1));
            json_t *spec = cli_wandb_to_spec(j, err, sizeof err);
            if (over) {
                assert_null(spec);
                assert_true(strncmp(err, "parameters.x:", 13) == 0);
            } else {
                assert_non_null(spec);
                const json_t *values =
                    json_object_get(json_object_get(json_object_get(spec, "search_space"), "x"),
                                    "values");
                assert_int_equal(json_array_size(values), 10000);
            }
            json_decref(spec);
            json_decref(j);
        }
    }
}

/* A command's numbers become argv items as Python's str() writes them. */
static void test_command_numbers(void **state)
{
    (void)state;
    json_t *j = json_loads("{\"method\": \"random\", \"parameters\": {\"x\": {\"value\": 1}}, "
                           "\"command\": [\"run\", 3, 0.5, 1.0, 1e-05, 1e16]}",
                           0, NULL);
    char err[ERR_SIZE];
    json_t *spec = cli_wandb_to_spec(j, err, sizeof err);
    assert_non_null(spec);
    json_t *want = json_pack("[s, s, s, s, s, s]", "run", "3", "0.5", "1.0", "1e-05", "1e+16");
    assert_true(json_equal(json_object_get(json_object_get(spec, "trainable"), "argv"), want));
    json_decref(want);
    json_decref(spec);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),          cmocka_unit_test(test_is_sweep),
        cmocka_unit_test(test_refusals),        cmocka_unit_test(test_grid_bound),
        cmocka_unit_test(test_command_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
