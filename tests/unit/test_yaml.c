/* Unit tests of cli/yaml.c, YAML specs turned into JSON for `rung submit`:
 * whole specs against the same spec written in JSON, a table of scalars and
 * what each resolves to, keys taken as written, a table of refused
 * documents with the line each error must name, the depth bound at and just
 * past JSONV_MAX_DEPTH, and error buffers of every size; then every
 * document of the corpus the Python reader must pass too (tests/data/yaml/,
 * its README.md says how a case is written). Run under ASan too, so a leak
 * on any error path fails. */
#include <dirent.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"
#include "yaml.h"

#define ERR_SIZE 512

/* Converts text; fails the test with the message when it is refused. */
static json_t *convert(const char *text)
{
    char err[ERR_SIZE];
    json_t *v = cli_yaml_to_json(text, strlen(text), err, sizeof err);
    if (v == NULL)
        fail_msg("refused: %s\n--- document:\n%s", err, text);
    return v;
}

static json_t *parse_json(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (v == NULL)
        fail_msg("bad expected JSON %s: %s", text, jerr.text);
    return v;
}

static void assert_same(json_t *got, const char *want_json, const char *what)
{
    json_t *want = parse_json(want_json);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        fail_msg("%s: got %s, want %s", what, g, want_json);
    }
    json_decref(want);
}

/* Strict UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF), what jansson accepts; the messages must be. */
static bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p, cp, min;
        size_t len;
        if (c < 0x80) {
            p++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, min = 0x80, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, min = 0x800, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, min = 0x10000, cp = c & 0x07;
        } else {
            return false;
        }
        for (size_t k = 1; k < len; k++) {
            if ((p[k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        p += len;
    }
    return true;
}

/* ---- whole specs -------------------------------------------------------- */

/* examples/branin-random.json, and the same in YAML as a user writes it. */
static const char BRANIN_JSON[] =
    "{\"name\": \"branin-sobol\", \"metric\": \"loss\", \"mode\": \"min\","
    " \"search_space\": {"
    "  \"x1\": {\"type\": \"uniform\", \"low\": -5, \"high\": 10},"
    "  \"x2\": {\"type\": \"uniform\", \"low\": 0, \"high\": 15},"
    "  \"steps\": 10},"
    " \"searcher\": {\"type\": \"random\", \"seed\": 1, \"quasi\": true},"
    " \"num_samples\": 40, \"max_concurrent_trials\": 4, \"max_failures\": 1,"
    " \"trainable\": {\"type\": \"external\"}}";

static const char BRANIN_YAML[] = "# Branin by quasi-random search\n"
                                  "name: branin-sobol\n"
                                  "metric: loss\n"
                                  "mode: min\n"
                                  "search_space:\n"
                                  "  x1: {type: uniform, low: -5, high: 10}\n"
                                  "  x2:\n"
                                  "    type: uniform\n"
                                  "    low: 0\n"
                                  "    high: 15\n"
                                  "  steps: 10\n"
                                  "searcher: {type: random, seed: 1, quasi: true}\n"
                                  "num_samples: 40\n"
                                  "max_concurrent_trials: 4\n"
                                  "max_failures: 1\n"
                                  "trainable:\n"
                                  "  type: external\n";

/* A spec with every kind of value: reals in each spelling, a list of argv,
 * null, nested objects in block and flow style, quoted strings that look
 * like numbers, a block scalar, keys that need quotes. */
static const char FULL_JSON[] =
    "{\"name\": \"logreg asha\", \"metric\": \"val_loss\", \"mode\": \"min\","
    " \"search_space\": {"
    "  \"lr\": {\"type\": \"loguniform\", \"low\": 0.0001, \"high\": 0.5},"
    "  \"momentum\": {\"type\": \"uniform\", \"low\": 0.5, \"high\": 0.99},"
    "  \"hidden\": {\"type\": \"choice\", \"values\": [8, 16, 32]},"
    "  \"act\": {\"type\": \"choice\", \"values\": [\"relu\", \"tanh\", \"1e-4\", \"true\"]},"
    "  \"epochs\": 27},"
    " \"searcher\": {\"type\": \"bayes\", \"seed\": -12, \"n_initial\": 8},"
    " \"scheduler\": {\"type\": \"asha\", \"reduction_factor\": 3, \"grace_period\": 1,"
    "   \"max_t\": 27, \"promote\": false},"
    " \"num_samples\": 40, \"max_failed_trials\": null,"
    " \"stop\": {\"metric_threshold\": -2500.0, \"time_budget_s\": 0.5},"
    " \"worker_selector\": {\"gpu\": \"a100\", \"zone\": \"\"},"
    " \"trainable\": {\"type\": \"command\","
    "   \"argv\": [\"python3\", \"examples/trainables/logreg.py\", \"--lr\", \"{lr}\"],"
    "   \"env\": {\"NOTE\": \"line one\\nline two\\n\", \"x: y\": \"#not a comment\"}}}";

static const char FULL_YAML[] = "name: logreg asha\n"
                                "metric: val_loss\n"
                                "mode: min\n"
                                "search_space:\n"
                                "  lr: {type: loguniform, low: 1e-4, high: .5}\n"
                                "  momentum:\n"
                                "    type: uniform\n"
                                "    low: 0.5\n"
                                "    high: 9.9E-1\n"
                                "  hidden: {type: choice, values: [8, 16, 0x20]}\n"
                                "  act:\n"
                                "    type: choice\n"
                                "    values:\n"
                                "      - relu\n"
                                "      - 'tanh'\n"
                                "      - \"1e-4\"\n"
                                "      - 'true'\n"
                                "  epochs: 27\n"
                                "searcher: {type: bayes, seed: -12, n_initial: 8}\n"
                                "scheduler:\n"
                                "  type: asha\n"
                                "  reduction_factor: 3\n"
                                "  grace_period: +1\n"
                                "  max_t: 27\n"
                                "  promote: False\n"
                                "num_samples: 40   # trailing comment\n"
                                "max_failed_trials: ~\n"
                                "stop: {metric_threshold: -2.5e+3, time_budget_s: 5e-1}\n"
                                "worker_selector:\n"
                                "  gpu: a100\n"
                                "  zone: ''\n"
                                "trainable:\n"
                                "  type: command\n"
                                "  argv: [python3, examples/trainables/logreg.py, --lr, '{lr}']\n"
                                "  env:\n"
                                "    NOTE: |\n"
                                "      line one\n"
                                "      line two\n"
                                "    'x: y': '#not a comment'\n";

static void test_spec_equals_json(void **state)
{
    (void)state;
    json_t *got = convert(BRANIN_YAML);
    assert_same(got, BRANIN_JSON, "branin");
    /* Keys keep the document's order, as the JSON path sends them. */
    char keys[256] = "";
    const char *key;
    json_t *value;
    json_object_foreach(got, key, value) {
        strcat(keys, keys[0] ? " " : "");
        strcat(keys, key);
    }
    assert_string_equal(keys, "name metric mode search_space searcher num_samples "
                              "max_concurrent_trials max_failures trainable");
    json_decref(got);

    got = convert(FULL_YAML);
    assert_same(got, FULL_JSON, "full spec");
    json_decref(got);

    /* JSON is YAML's flow style: the JSON spec itself reads the same. */
    got = convert(FULL_JSON);
    assert_same(got, FULL_JSON, "JSON read as YAML");
    json_decref(got);

    /* Explicit document markers and a UTF-8 byte order mark change nothing. */
    char marked[sizeof BRANIN_YAML + 32];
    snprintf(marked, sizeof marked, "\xEF\xBB\xBF---\n%s...\n", BRANIN_YAML);
    got = convert(marked);
    assert_same(got, BRANIN_JSON, "with --- and ...");
    json_decref(got);
}

/* ---- scalars ------------------------------------------------------------ */

typedef struct {
    const char *yaml; /* the value in "v: <yaml>" */
    const char *json; /* what v must be */
} ScalarCase;

static const ScalarCase scalars[] = {
    /* null */
    {"", "null"},
    {"~", "null"},
    {"null", "null"},
    {"Null", "null"},
    {"NULL", "null"},
    {"nULL", "\"nULL\""},
    {"!!null ''", "null"},
    /* booleans: YAML 1.2's only; YAML 1.1's yes/no/on/off are strings */
    {"true", "true"},
    {"True", "true"},
    {"TRUE", "true"},
    {"false", "false"},
    {"False", "false"},
    {"FALSE", "false"},
    {"tRUE", "\"tRUE\""},
    {"yes", "\"yes\""},
    {"no", "\"no\""},
    {"on", "\"on\""},
    {"off", "\"off\""},
    {"y", "\"y\""},
    /* integers */
    {"0", "0"},
    {"42", "42"},
    {"-7", "-7"},
    {"+3", "3"},
    {"007", "7"},
    {"-0", "0"},
    {"0o17", "15"},
    {"0x1F", "31"},
    {"0xff", "255"},
    {"9223372036854775807", "9223372036854775807"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"0x7FFFFFFFFFFFFFFF", "9223372036854775807"},
    {"1_000", "\"1_000\""},
    {"0x", "\"0x\""},
    {"0o8", "\"0o8\""},
    {"0b101", "\"0b101\""},
    {"-0x10", "\"-0x10\""},
    {"12abc", "\"12abc\""},
    {"1 2", "\"1 2\""},
    /* floats */
    {"1.5", "1.5"},
    {".5", "0.5"},
    {"-.5", "-0.5"},
    {"1.", "1.0"},
    {"1e-4", "0.0001"},
    {"1E3", "1000.0"},
    {"-2.5E+3", "-2500.0"},
    {"+0.25", "0.25"},
    {"1e-400", "0.0"},
    {".", "\".\""},
    {"1e", "\"1e\""},
    {"e5", "\"e5\""},
    {"1.2.3", "\"1.2.3\""},
    {"nan", "\"nan\""},
    {"inf", "\"inf\""},
    {"Infinity", "\"Infinity\""},
    {"0x1p3", "\"0x1p3\""},
    /* quoted and block scalars are strings, whatever they spell */
    {"'1e-4'", "\"1e-4\""},
    {"\"1e-4\"", "\"1e-4\""},
    {"'true'", "\"true\""},
    {"\"null\"", "\"null\""},
    {"''", "\"\""},
    {"\"42\"", "\"42\""},
    {"'.inf'", "\".inf\""},
    {"\"tab\\there \\u00e9\"", "\"tab\\there \\u00e9\""},
    {"'it''s'", "\"it's\""},
    {"|\n  two\n  lines\n", "\"two\\nlines\\n\""},
    {">-\n  folded\n  text\n", "\"folded text\""},
    {"plain text, no", "\"plain text, no\""},
    {"größe", "\"größe\""},
    /* tags */
    {"!!str 12", "\"12\""},
    {"!!str true", "\"true\""},
    {"! 12", "\"12\""},
    {"!!int \"12\"", "12"},
    {"!!float 1", "1.0"},
    {"!!float '2.5'", "2.5"},
    {"!!bool 'false'", "false"},
    {"!!seq [1]", "[1]"},
    {"!!map {a: 1}", "{\"a\": 1}"},
    {"! [1]", "[1]"},
    /* collections */
    {"[]", "[]"},
    {"{}", "{}"},
    {"[1, [2, {a: [3]}]]", "[1, [2, {\"a\": [3]}]]"},
    {"\n  - 1\n  - a\n  -\n", "[1, \"a\", null]"},
};

static void test_scalars(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        char doc[256];
        snprintf(doc, sizeof doc, "v: %s\n", scalars[i].yaml);
        json_t *got = convert(doc);
        json_t *v = json_object_get(got, "v");
        assert_non_null(v);
        assert_same(v, scalars[i].json, scalars[i].yaml);
        json_decref(got);
    }
}

/* A whole document that is a scalar or a sequence is converted too; the
 * client then refuses it as no object. */
static void test_documents_of_any_type(void **state)
{
    (void)state;
    json_t *v = convert("42\n");
    assert_same(v, "42", "a number");
    json_decref(v);
    v = convert("- 1\n- 2\n");
    assert_same(v, "[1, 2]", "a list");
    json_decref(v);
    v = convert("'text'");
    assert_same(v, "\"text\"", "a string");
    json_decref(v);
}

/* Keys are strings taken as written, whatever they would mean as values. */
static void test_keys_as_written(void **state)
{
    (void)state;
    json_t *v = convert("1: a\ntrue: b\nnull: c\n.inf: d\n~: e\n'0x10': f\n'': g\n"
                        "99999999999999999999: h\n!!str s: i\n");
    assert_same(v,
                "{\"1\": \"a\", \"true\": \"b\", \"null\": \"c\", \".inf\": \"d\", \"~\": \"e\","
                " \"0x10\": \"f\", \"\": \"g\", \"99999999999999999999\": \"h\", \"s\": \"i\"}",
                "keys");
    json_decref(v);
}

/* ---- errors ------------------------------------------------------------- */

typedef struct {
    const char *yaml;
    size_t len;       /* 0: strlen(yaml) */
    const char *want; /* the message starts with this */
} ErrorCase;

#define BILLION_LAUGHS                                                                             \
    "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"                                        \
    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"                                                 \
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"                                                 \
    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"                                                 \
    "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"

static const ErrorCase errors[] = {
    /* duplicate keys, at any depth, however quoted */
    {"name: a\nmetric: loss\nname: b\n", 0, "line 3: duplicate key 'name'"},
    {"search_space:\n  lr: 1\n  x: 2\n  lr: 3\n", 0, "line 4: duplicate key 'lr'"},
    {"a: {b: 1, c: 2, b: 3}\n", 0, "line 1: duplicate key 'b'"},
    {"1: a\n'1': b\n", 0, "line 2: duplicate key '1'"},
    {"a:\n  - x: 1\n    x: 2\n", 0, "line 3: duplicate key 'x'"},
    /* libyaml's own: bad indentation, unclosed brackets and quotes, tabs */
    {"a:\n  b: 1\n c: 2\n", 0,
     "line 3, column 2: did not find expected key (while parsing a block mapping at line 1)"},
    {"name: x\n  metric: loss\n", 0,
     "line 2, column 9: mapping values are not allowed in this context"},
    {"x: [1, 2\ny: 3\n", 0, "line 2, column 2: did not find expected ',' or ']'"},
    {"x: \"abc\n", 0, "line 2, column 1: found unexpected end of stream"},
    {"\tx: 1\n", 0, "line 1, column 1: found character that cannot start any token"},
    {"a: 1\nb: \xff\n", 0, "line 2, column 4: invalid leading UTF-8 octet (0xFF)"},
    {"a: b\x01\n", 0, "line 1, column 5: control characters are not allowed (0x1)"},
    {"a: \"\\ud800\"\n", 0, "line 1, column "},
    /* anchors and aliases, before any expansion */
    {"a: &x 1\nb: *x\n", 0, "line 1: anchors (&x) are not supported; write the value out"},
    {"a: 1\nb: *x\n", 0, "line 2: aliases (*x) are not supported"},
    {"base: &base {lr: 1}\n", 0, "line 1: anchors (&base)"},
    {"a: 1\n<<: *base\n", 0, "line 2: aliases (*base)"},
    {"*a : 1\n", 0, "line 1: aliases (*a)"},
    {"&k a: 1\n", 0, "line 1: anchors (&k)"},
    {"a:\n  - &x [1]\n", 0, "line 2: anchors (&x)"},
    {BILLION_LAUGHS, 0, "line 1: anchors (&a)"},
    /* documents */
    {"a: 1\n---\nb: 2\n", 0, "line 2: a second document (---): a spec is one document"},
    {"---\na: 1\n...\n---\n", 0, "line 4: a second document"},
    {"", 0, "line 1: empty document"},
    {"\n\n", 0, "line 1: empty document"},
    {"# only a comment\n", 0, "line 1: empty document"},
    {"---\n", 0, "line 1: empty document"},
    {"--- # empty\n...\n", 0, "line 1: empty document"},
    /* numbers a spec cannot carry */
    {"x: .inf\n", 0, "line 1: .inf: infinite and NaN numbers are not allowed"},
    {"a: 1\nx: -.Inf\n", 0, "line 2: -.Inf: infinite and NaN"},
    {"x: [1, .NaN]\n", 0, "line 1: .NaN: infinite and NaN"},
    {"x: !!float .nan\n", 0, "line 1: .nan: infinite and NaN"},
    {"x: 9223372036854775808\n", 0, "line 1: 9223372036854775808 is out of range"},
    {"x: -9223372036854775809\n", 0, "line 1: -9223372036854775809 is out of range"},
    {"x: 0x8000000000000000\n", 0, "line 1: 0x8000000000000000 is out of range"},
    {"x: 1e999\n", 0, "line 1: 1e999 is out of range"},
    {"x: -1e400\n", 0, "line 1: -1e400 is out of range"},
    /* tags */
    {"x: !foo 1\n", 0, "line 1: tag '!foo' is not supported on a scalar"},
    {"x: !!binary aGVsbG8=\n", 0, "line 1: tag 'tag:yaml.org,2002:binary' is not supported"},
    {"x: !!timestamp 2001-12-14\n", 0, "line 1: tag 'tag:yaml.org,2002:timestamp'"},
    {"x: !!map [1]\n", 0, "line 1: tag 'tag:yaml.org,2002:map' is not supported on a sequence"},
    {"x: !!seq {a: 1}\n", 0, "line 1: tag 'tag:yaml.org,2002:seq' is not supported on a mapping"},
    {"x: !!set {a: 1}\n", 0, "line 1: tag 'tag:yaml.org,2002:set'"},
    {"x: !!int abc\n", 0, "line 1: 'abc' is not a !!int"},
    {"x: !!int 1.5\n", 0, "line 1: '1.5' is not a !!int"},
    {"x: !!bool yes\n", 0, "line 1: 'yes' is not a !!bool"},
    {"x: !!null 0\n", 0, "line 1: '0' is not a !!null"},
    {"x: !!float abc\n", 0, "line 1: 'abc' is not a !!float"},
    {"!!int 1: a\n", 0, "line 1: tag 'tag:yaml.org,2002:int' is not supported on a key"},
    /* keys that are no JSON key, NUL */
    {"? [a]\n: 1\n", 0, "line 1: a key must be a scalar, not a sequence"},
    {"a: 1\n? {b: 1}\n: 2\n", 0, "line 2: a key must be a scalar, not a mapping"},
    {"x: \"a\\0b\"\n", 0, "line 1: a string holds a NUL character"},
    {"\"a\\0\": 1\n", 0, "line 1: a key holds a NUL character"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        const ErrorCase *c = &errors[i];
        char err[ERR_SIZE];
        memset(err, 'X', sizeof err);
        size_t len = c->len ? c->len : strlen(c->yaml);
        json_t *v = cli_yaml_to_json(c->yaml, len, err, sizeof err);
        if (v != NULL) {
            char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            fail_msg("accepted as %s:\n%s", got, c->yaml);
        }
        if (strncmp(err, c->want, strlen(c->want)) != 0)
            fail_msg("message\n  %s\nshould start with\n  %s\n--- document:\n%s", err, c->want,
                     c->yaml);
        assert_true(utf8_valid(err));
    }
}

/* A long key is quoted cut to CLI_YAML_QUOTE_MAX bytes on a character
 * boundary, then "...". */
static void test_long_key_is_cut(void **state)
{
    (void)state;
    char key[201] = "";
    for (int i = 0; i < 100; i++)
        strcat(key, "\xC3\xA9"); /* é, two bytes */
    char doc[512];
    snprintf(doc, sizeof doc, "%s: 1\n%s: 2\n", key, key);
    char err[ERR_SIZE];
    assert_null(cli_yaml_to_json(doc, strlen(doc), err, sizeof err));
    char want[256];
    snprintf(want, sizeof want, "line 2: duplicate key '%.*s...'", CLI_YAML_QUOTE_MAX, key);
    assert_string_equal(err, want);
}

/* Every error buffer size gives a NUL-terminated head of the message that
 * is valid UTF-8; 0 writes nothing. */
static void test_error_buffer_sizes(void **state)
{
    (void)state;
    const char *doc = "\xC3\xA9t\xC3\xA9: 1\n\xC3\xA9t\xC3\xA9: 2\n";
    char full[ERR_SIZE];
    assert_null(cli_yaml_to_json(doc, strlen(doc), full, sizeof full));
    assert_string_equal(full, "line 2: duplicate key '\xC3\xA9t\xC3\xA9'");
    for (size_t size = 1; size <= strlen(full) + 1; size++) {
        char err[ERR_SIZE];
        memset(err, 'X', sizeof err);
        assert_null(cli_yaml_to_json(doc, strlen(doc), err, size));
        size_t n = strlen(err);
        assert_true(n < size);
        assert_true(n + 4 > size); /* cut at most one character short */
        assert_memory_equal(err, full, n);
        assert_true(utf8_valid(err));
        assert_int_equal(err[size], 'X');
    }
    char untouched = 'X';
    assert_null(cli_yaml_to_json(doc, strlen(doc), &untouched, 0));
    assert_int_equal(untouched, 'X');
}

/* Nesting: JSONV_MAX_DEPTH collections pass, one more is refused on the
 * line where it starts, in block and in flow style. */
static void test_depth_bound(void **state)
{
    (void)state;
    char flow_want[64];
    snprintf(flow_want, sizeof flow_want, "line 1: nested deeper than %d levels", JSONV_MAX_DEPTH);
    for (int depth = JSONV_MAX_DEPTH; depth <= JSONV_MAX_DEPTH + 1; depth++) {
        /* Block: the mapping of level i (1 = the document) starts on line i. */
        char doc[8192] = "";
        size_t len = 0;
        for (int i = 0; i < depth - 1; i++)
            len += (size_t)snprintf(doc + len, sizeof doc - len, "%*sk%d:\n", i, "", i);
        snprintf(doc + len, sizeof doc - len, "%*sleaf: 1\n", depth - 1, "");
        char err[ERR_SIZE];
        json_t *v = cli_yaml_to_json(doc, strlen(doc), err, sizeof err);
        if (depth <= JSONV_MAX_DEPTH) {
            assert_non_null(v);
            /* as jsonv counts it: the leaf's object is the deepest */
            RungError rerr;
            assert_int_equal(jsonv_check_depth(v, JSONV_MAX_DEPTH, "", 1, &rerr), 0);
            json_decref(v);
        } else {
            assert_null(v);
            char want[64];
            snprintf(want, sizeof want, "line %d: nested deeper than %d levels",
                     JSONV_MAX_DEPTH + 1, JSONV_MAX_DEPTH);
            assert_string_equal(err, want);
        }
        /* Flow: [[...[1]...]] on one line. */
        len = 0;
        for (int i = 0; i < depth; i++)
            doc[len++] = '[';
        doc[len++] = '1';
        for (int i = 0; i < depth; i++)
            doc[len++] = ']';
        doc[len] = '\0';
        v = cli_yaml_to_json(doc, len, err, sizeof err);
        if (depth <= JSONV_MAX_DEPTH) {
            assert_non_null(v);
            json_decref(v);
        } else {
            assert_null(v);
            assert_string_equal(err, flow_want);
        }
    }
    /* Far deeper: refused as soon as the bound is passed. */
    static char deep[200001];
    memset(deep, '[', 100000);
    memset(deep + 100000, ']', 100000);
    char err[ERR_SIZE];
    assert_null(cli_yaml_to_json(deep, 200000, err, sizeof err));
    assert_string_equal(err, flow_want);
}

/* ---- the shared corpus ------------------------------------------------- */

#ifndef RUNG_YAML_CORPUS
#error "RUNG_YAML_CORPUS: the folder of the shared corpus (tests/unit/CMakeLists.txt)"
#endif

/* The corpus files are small; a larger one is a mistake in the corpus. */
#define CORPUS_FILE_MAX (1 << 20)
#define CORPUS_NAME_MAX 256

/* The whole of path into a NUL-terminated buffer (free it); NULL when it
 * does not exist. */
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

/* A .err file is "line N", optionally ": FRAGMENT", on its first line: the
 * message must start with "line N: " (or libyaml's "line N, column C: ")
 * and hold FRAGMENT after that. */
static bool error_matches(const char *err, const char *want, char *why, size_t size)
{
    char line[64];
    size_t n = strcspn(want, ":\n");
    if (strncmp(want, "line ", 5) != 0 || n >= sizeof line) {
        snprintf(why, size, "bad .err file: %s", want);
        return false;
    }
    memcpy(line, want, n);
    line[n] = '\0';
    char pattern[128];
    snprintf(pattern, sizeof pattern, "^%s(, column [0-9]+)?: ", line);
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED), 0);
    regmatch_t m;
    bool head = regexec(&re, err, 1, &m, 0) == 0;
    regfree(&re);
    if (!head) {
        snprintf(why, size, "does not start with '%s: '", line);
        return false;
    }
    if (want[n] == ':') {
        const char *frag = want + n + 1 + (want[n + 1] == ' ');
        size_t flen = strcspn(frag, "\n");
        char fragment[256];
        snprintf(fragment, sizeof fragment, "%.*s", (int)flen, frag);
        if (strstr(err + m.rm_eo, fragment) == NULL) {
            snprintf(why, size, "does not hold '%s'", fragment);
            return false;
        }
    }
    return true;
}

/* NAME's answer: NAME.json, else NAME.err (*is_err set), each first as
 * NAME.wandb.* in W&B mode; NULL when there is none. */
static char *corpus_answer(const char *dir, const char *name, bool wandb, bool *is_err)
{
    char path[2 * CORPUS_NAME_MAX + 16];
    size_t len;
    for (int mode = wandb ? 1 : 0; mode >= 0; mode--) {
        for (int err = 0; err < 2; err++) {
            snprintf(path, sizeof path, "%s/%s%s.%s", dir, name, mode ? ".wandb" : "",
                     err ? "err" : "json");
            char *text = read_file(path, &len);
            if (text != NULL) {
                *is_err = err;
                return text;
            }
        }
    }
    return NULL;
}

/* One case: NAME.yaml against NAME.json or NAME.err (in W&B mode, against
 * NAME.wandb.* where there is one). Returns whether it passed; a failure
 * is printed. */
static bool corpus_case(const char *dir, const char *name, bool wandb)
{
    char path[2 * CORPUS_NAME_MAX + 16];
    size_t len;
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    char *doc = read_file(path, &len);
    assert_non_null(doc);
    char err[ERR_SIZE];
    json_t *got = cli_yaml_read(doc, len, wandb ? CLI_YAML_WANDB : 0, err, sizeof err);
    free(doc);
    bool expect_error = false;
    char *want = corpus_answer(dir, name, wandb, &expect_error);
    if (want == NULL) {
        print_error("%s: neither %s.json nor %s.err\n", name, name, name);
        json_decref(got);
        return false;
    }
    bool ok;
    char why[2 * ERR_SIZE] = "";
    if (expect_error && got != NULL) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(why, sizeof why, "accepted as %.400s", g);
        free(g);
        ok = false;
    } else if (expect_error) {
        ok = error_matches(err, want, why, sizeof why);
        if (!ok) {
            size_t used = strlen(why);
            snprintf(why + used, sizeof why - used, ": %.*s", ERR_SIZE - 1, err);
        }
    } else if (got == NULL) {
        snprintf(why, sizeof why, "refused: %.*s", ERR_SIZE - 1, err);
        ok = false;
    } else {
        json_error_t jerr;
        json_t *expected = json_loads(want, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
        if (expected == NULL)
            fail_msg("%s.json: %s", name, jerr.text);
        ok = json_equal(got, expected);
        if (!ok) {
            char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
            snprintf(why, sizeof why, "got %.400s", g);
            free(g);
        }
        json_decref(expected);
    }
    if (!ok)
        print_error("%s.yaml%s: %s\n", name, wandb ? " (W&B mode)" : "", why);
    json_decref(got);
    free(want);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* Every NAME.yaml of the corpus, in name order; all failures are printed
 * before the test fails. */
static void test_corpus(void **state)
{
    (void)state;
    const char *dir = RUNG_YAML_CORPUS;
    DIR *d = opendir(dir);
    if (d == NULL)
        fail_msg("cannot open the corpus %s", dir);
    static char names[512][CORPUS_NAME_MAX];
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
    assert_true(n >= 40); /* a corpus that vanished must not pass */
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        failed += !corpus_case(dir, names[i], false);
        failed += !corpus_case(dir, names[i], true);
    }
    if (failed > 0)
        fail_msg("%zu of %zu corpus documents failed", failed, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_equals_json),
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_documents_of_any_type),
        cmocka_unit_test(test_keys_as_written),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_long_key_is_cut),
        cmocka_unit_test(test_error_buffer_sizes),
        cmocka_unit_test(test_depth_bound),
        cmocka_unit_test(test_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
