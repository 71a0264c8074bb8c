/* Unit tests of worker/: --env's environments (envs.h), argv
 * substitution, the layered environment, gangs (a lease reply's gang, its
 * environment and argv placeholders, addresses and port ranges; the route
 * to a loopback server and held ports on real sockets), labels, a
 * trial's warnings, which trial folders --keep-trials removes and their
 * removal (real files: links not followed), slots
 * bookkeeping, the backoff schedule, line splitting, the stderr tail, and
 * the process runner (real fork/exec of /bin/sh: exit status, exec and
 * chdir failures, a process group ended as a whole). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "envs.h"
#include "advertise.h"
#include "argv.h"
#include "backoff.h"
#include "env.h"
#include "gang.h"
#include "gpuwatch.h"
#include "hours.h"
#include "labels.h"
#include "linebuf.h"
#include "prune.h"
#include "runner.h"
#include "slots.h"
#include "tail.h"
#include "trialdir.h"
#include "warnings.h"

/* ---- argv ---- */

static void assert_text(json_t *v, const char *want)
{
    char *got = argv_value_text(v);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    json_decref(v);
}

static void test_argv_value_types(void **state)
{
    (void)state;
    assert_text(json_string("adam"), "adam");
    assert_text(json_string("a b \"c\""), "a b \"c\"");
    assert_text(json_integer(128), "128");
    assert_text(json_integer(-7), "-7");
    assert_text(json_integer(9007199254740993LL), "9007199254740993");
    assert_text(json_real(0.1), "0.1");
    assert_text(json_real(3.0), "3.0");
    assert_text(json_real(-2.5), "-2.5");
    assert_text(json_real(1e-5), "1e-5");
    assert_text(json_real(1e20), "1e20");
    assert_text(json_real(0.30000000000000004), "0.30000000000000004");
    assert_text(json_real(1.0 / 3.0), "0.3333333333333333");
    assert_text(json_true(), "true");
    assert_text(json_false(), "false");
    assert_text(json_null(), "null");
    assert_text(json_pack("[i, s]", 1, "x"), "[1,\"x\"]");
    assert_text(json_pack("{s:i}", "a", 1), "{\"a\":1}");
}

static void test_argv_real_round_trips(void **state)
{
    (void)state;
    /* Whatever digits are printed, they read back to the same double. */
    double values[] = {0.1,
                       1e-4,
                       0.3,
                       123456.789,
                       2.0 / 3.0,
                       1e-300,
                       5e-324,
                       1.7976931348623157e308,
                       0.0001234567890123456789,
                       42.0};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        json_t *v = json_real(values[i]);
        char *text = argv_value_text(v);
        assert_non_null(text);
        assert_true(strtod(text, NULL) == values[i]);
        free(text);
        json_decref(v);
    }
}

static void assert_subst(const char *arg, const json_t *config, const char *want)
{
    char *got = argv_subst(arg, config);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_argv_subst(void **state)
{
    (void)state;
    json_t *c = json_pack("{s:f, s:i, s:s, s:b, s:f}", "lr", 0.01, "hidden", 256, "opt", "sgd",
                          "nesterov", 1, "model.dropout", 0.5);
    assert_subst("--lr={lr}", c, "--lr=0.01");
    assert_subst("{hidden}", c, "256");
    assert_subst("--opt={opt},h={hidden},lr={lr}", c, "--opt=sgd,h=256,lr=0.01");
    assert_subst("{hidden}{hidden}", c, "256256");
    assert_subst("{nesterov}", c, "true");
    assert_subst("{model.dropout}", c, "0.5");
    /* Unknown placeholders and braces that name nothing stay as they are. */
    assert_subst("{unknown}", c, "{unknown}");
    assert_subst("--x={unknown}-{hidden}", c, "--x={unknown}-256");
    assert_subst("{}", c, "{}");
    assert_subst("{{lr}}", c, "{0.01}");
    assert_subst("{lr", c, "{lr");
    assert_subst("lr}", c, "lr}");
    assert_subst("{\"a\": {hidden}}", c, "{\"a\": 256}");
    assert_subst("no placeholders", c, "no placeholders");
    assert_subst("", c, "");
    json_decref(c);
}

static void test_argv_expand(void **state)
{
    (void)state;
    json_t *c = json_pack("{s:i}", "n", 3);
    json_t *argv = json_pack("[s, s, s]", "python3", "train.py", "--n={n}");
    char why[128] = "";
    char **out = argv_expand(argv, c, why, sizeof why);
    assert_non_null(out);
    assert_string_equal(out[0], "python3");
    assert_string_equal(out[1], "train.py");
    assert_string_equal(out[2], "--n=3");
    assert_null(out[3]);
    argv_free(out);
    json_decref(argv);

    argv = json_pack("[s, i]", "x", 1);
    assert_null(argv_expand(argv, c, why, sizeof why));
    assert_non_null(strstr(why, "argv[1]"));
    json_decref(argv);
    argv = json_array();
    assert_null(argv_expand(argv, c, why, sizeof why));
    json_decref(argv);
    assert_null(argv_expand(NULL, c, why, sizeof why));
    json_decref(c);
}

/* A conditional space's config holds only the branch taken (docs/api.md,
 * "Nested and conditional spaces"): entries naming a parameter of another
 * branch are left out whole; the rest is substituted as ever. */
static void test_argv_expand_inactive(void **state)
{
    (void)state;
    json_t *c = json_pack("{s:s, s:f, s:i}", "opt.name", "sgd", "opt.momentum", 0.9, "n", 3);
    json_t *argv = json_pack("[s, s, s, s, s, s, s, s, s]", "train", "--opt={opt.name}",
                             "--momentum={opt.momentum}", "--beta2={opt.beta2}", "{opt.beta2}",
                             "--n={n},b={opt.beta2}", "{x:1}", "{}", "{unknown}");
    char why[128] = "";
    char **out = argv_expand(argv, c, why, sizeof why);
    assert_non_null(out);
    const char *want[] = {"train", "--opt=sgd", "--momentum=0.9", "{x:1}", "{}", "{unknown}"};
    size_t n = 0;
    while (out[n] != NULL)
        n++;
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(out[i], want[i]);
    argv_free(out);

    /* What decides: a dotted path-shaped name that the config lacks. */
    assert_true(argv_names_inactive("{opt.beta2}", c));
    assert_true(argv_names_inactive("x{n}{opt.beta2}", c));
    assert_true(argv_names_inactive("{{opt.beta2}}", c));
    assert_false(argv_names_inactive("{opt.momentum}", c));
    assert_false(argv_names_inactive("{master_port}", c)); /* the gang's, no dot */
    assert_false(argv_names_inactive("{a.b:1}", c));
    assert_false(argv_names_inactive("{1.5}", c));
    assert_false(argv_names_inactive("{opt.beta2", c));
    json_decref(argv);

    /* Nothing left to run is an error. */
    argv = json_pack("[s]", "{opt.beta2}");
    assert_null(argv_expand(argv, c, why, sizeof why));
    assert_non_null(strstr(why, "lacks"));
    json_decref(argv);
    json_decref(c);
}

/* ---- env ---- */

static void test_env_layers(void **state)
{
    (void)state;
    Env env;
    env_init(&env);
    env_set(&env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    char *base[] = {"PATH=/usr/bin", "HOME=/home/u",
                    "EMPTY=",        "CUDA_DEVICE_ORDER=FASTEST_FIRST",
                    "NOEQUALS",      NULL};
    env_set_list(&env, base);
    assert_string_equal(env_get(&env, "CUDA_DEVICE_ORDER"), "FASTEST_FIRST");
    assert_string_equal(env_get(&env, "EMPTY"), "");
    assert_null(env_get(&env, "NOEQUALS"));
    json_t *user = json_pack("{s:s, s:s}", "OMP_NUM_THREADS", "1", "HOME", "/srv");
    assert_true(env_set_json(&env, user));
    json_decref(user);
    env_set(&env, "CUDA_VISIBLE_DEVICES", "");
    env_set(&env, "A=B", "ignored");
    env_set(&env, "", "ignored");
    env_unset(&env, "PATH");
    env_unset(&env, "NOT_THERE");
    assert_string_equal(env_get(&env, "HOME"), "/srv");
    assert_string_equal(env_get(&env, "OMP_NUM_THREADS"), "1");
    assert_string_equal(env_get(&env, "CUDA_VISIBLE_DEVICES"), "");
    assert_null(env_get(&env, "PATH"));
    /* A name that is a prefix of another does not match it. */
    env_set(&env, "HOM", "x");
    assert_string_equal(env_get(&env, "HOME"), "/srv");

    char **vars = env_take(&env);
    assert_non_null(vars);
    size_t n = 0;
    for (char **v = vars; *v; v++)
        n++;
    /* CUDA_DEVICE_ORDER, HOME, EMPTY, OMP_NUM_THREADS, CUDA_VISIBLE_DEVICES, HOM */
    assert_int_equal(n, 6);
    assert_string_equal(vars[0], "CUDA_DEVICE_ORDER=FASTEST_FIRST"); /* replaced in place */
    env_free(vars);
    env_close(&env);
}

static void test_env_json_checked(void **state)
{
    (void)state;
    Env env;
    env_init(&env);
    json_t *bad = json_pack("{s:s, s:i}", "A", "1", "B", 2);
    assert_false(env_set_json(&env, bad));
    assert_null(env_get(&env, "A")); /* all or nothing */
    json_decref(bad);
    json_t *arr = json_array();
    assert_false(env_set_json(&env, arr));
    json_decref(arr);
    assert_true(env_set_json(&env, NULL));
    assert_true(env_set_json(&env, json_null()));
    char **vars = env_take(&env);
    assert_non_null(vars);
    assert_null(vars[0]);
    env_free(vars);
    env_close(&env);
}

/* The layers under the trainable's env: PYTHONUNBUFFERED=1 over the
 * worker's own environment, RUNG_TOKEN dropped; the trainable's env wins. */
static void test_env_trial_base(void **state)
{
    (void)state;
    char *base[] = {"PATH=/usr/bin", "RUNG_TOKEN=secret", "PYTHONUNBUFFERED=", NULL};
    Env env;
    env_init(&env);
    env_trial_base(&env, base);
    assert_string_equal(env_get(&env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    assert_string_equal(env_get(&env, "PATH"), "/usr/bin");
    assert_null(env_get(&env, "RUNG_TOKEN"));
    assert_string_equal(env_get(&env, "PYTHONUNBUFFERED"), "1");
    env_close(&env);

    char *none[] = {NULL};
    env_init(&env);
    env_trial_base(&env, none);
    assert_string_equal(env_get(&env, "PYTHONUNBUFFERED"), "1");
    json_t *user = json_pack("{s:s}", "PYTHONUNBUFFERED", "");
    assert_true(env_set_json(&env, user));
    assert_string_equal(env_get(&env, "PYTHONUNBUFFERED"), "");
    json_decref(user);
    user = json_pack("{s:s}", "OMP_NUM_THREADS", "2");
    assert_true(env_set_json(&env, user));
    assert_string_equal(env_get(&env, "PYTHONUNBUFFERED"), ""); /* the trainable's, still */
    json_decref(user);
    env_close(&env);

    env_init(&env);
    char *worker_own[] = {"CUDA_DEVICE_ORDER=FASTEST_FIRST", NULL};
    env_trial_base(&env, worker_own);
    assert_string_equal(env_get(&env, "CUDA_DEVICE_ORDER"), "FASTEST_FIRST");
    env_close(&env);
}

/* ---- labels ---- */

static void test_labels(void **state)
{
    (void)state;
    json_t *labels = json_object();
    char why[256];
    assert_int_equal(labels_add(labels, "gpu=a100", why, sizeof why), 0);
    assert_int_equal(labels_add(labels, "team/vision.v-2_X=", why, sizeof why), 0);
    assert_int_equal(labels_add(labels, "eq=a=b", why, sizeof why), 0);
    assert_int_equal(labels_add(labels, "zone=\xce\xb4", why, sizeof why), 0);
    assert_string_equal(json_string_value(json_object_get(labels, "gpu")), "a100");
    assert_string_equal(json_string_value(json_object_get(labels, "team/vision.v-2_X")), "");
    assert_string_equal(json_string_value(json_object_get(labels, "eq")), "a=b");
    assert_int_equal(json_object_size(labels), 4);

    static const struct {
        const char *arg, *why;
    } bad[] = {
        {"gpu", "'gpu' is not key=value"},
        {"=x", "the key of '=x' must be 1 to 64 characters"},
        {"a b=x", "the key 'a b' may only have the characters A-Z a-z 0-9 _ . - /"},
        {"a:b=x", "the key 'a:b' may only have the characters A-Z a-z 0-9 _ . - /"},
        {"\xce\xb4=x", NULL},
        {"gpu=h100", "label 'gpu' is given twice"},
        {"bad=\xff", "the value of label 'bad' is not UTF-8 text"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        assert_int_equal(labels_add(labels, bad[i].arg, why, sizeof why), -1);
        if (bad[i].why)
            assert_string_equal(why, bad[i].why);
        else
            assert_true(why[0] != '\0');
    }
    assert_int_equal(json_object_size(labels), 4);

    /* Keys of LABELS_KEY_MAX bytes and values of LABELS_VALUE_MAX pass, one
     * more byte of either does not. */
    char arg[LABELS_KEY_MAX + LABELS_VALUE_MAX + 8];
    memset(arg, 'k', LABELS_KEY_MAX);
    arg[LABELS_KEY_MAX] = '=';
    memset(arg + LABELS_KEY_MAX + 1, 'v', LABELS_VALUE_MAX);
    arg[LABELS_KEY_MAX + 1 + LABELS_VALUE_MAX] = '\0';
    assert_int_equal(labels_add(labels, arg, why, sizeof why), 0);
    json_object_clear(labels);
    arg[LABELS_KEY_MAX + 1 + LABELS_VALUE_MAX] = 'v';
    arg[LABELS_KEY_MAX + 2 + LABELS_VALUE_MAX] = '\0';
    assert_int_equal(labels_add(labels, arg, why, sizeof why), -1);
    assert_non_null(strstr(why, "longer than 256 bytes"));
    memmove(arg + 1, arg, LABELS_KEY_MAX + 1); /* a key of 65 */
    arg[LABELS_KEY_MAX + 2] = 'v';
    arg[LABELS_KEY_MAX + 3] = '\0';
    assert_int_equal(labels_add(labels, arg, why, sizeof why), -1);
    assert_non_null(strstr(why, "must be 1 to 64 characters"));

    /* LABELS_MAX labels, not one more. */
    json_object_clear(labels);
    for (int i = 0; i < LABELS_MAX; i++) {
        char kv[32];
        snprintf(kv, sizeof kv, "l%d=x", i);
        assert_int_equal(labels_add(labels, kv, why, sizeof why), 0);
    }
    assert_int_equal(labels_add(labels, "one-more=x", why, sizeof why), -1);
    assert_string_equal(why, "more than 64 labels");
    json_decref(labels);
}

/* ---- warnings ---- */

static void test_warnings_clean(void **state)
{
    (void)state;
    char out[16];
    /* Valid text is copied whole when it fits. */
    assert_int_equal(warnings_clean(out, 15, "@rung {\xce\xb4}", 10), 10);
    assert_string_equal(out, "@rung {\xce\xb4}");
    /* Cut on a character boundary: a 2-byte character that would end past
     * the limit goes whole. */
    assert_int_equal(warnings_clean(out, 8, "@rung {\xce\xb4}", 10), 7);
    assert_string_equal(out, "@rung {");
    assert_int_equal(warnings_clean(out, 9, "@rung {\xce\xb4}", 10), 9);
    assert_string_equal(out, "@rung {\xce\xb4");
    /* Invalid bytes and NUL become '?'. */
    assert_int_equal(warnings_clean(out, 15,
                                    "a\xff\x00"
                                    "b\xce",
                                    5),
                     5);
    assert_string_equal(out, "a??b?");
    /* An overlong form and a surrogate are not UTF-8 (as jansson says). */
    assert_int_equal(warnings_clean(out, 15, "\xc0\xaf\xed\xa0\x80", 5), 5);
    assert_string_equal(out, "?????");
    /* 4-byte characters: kept whole or not at all. */
    assert_int_equal(warnings_clean(out, 6, "\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 8), 4);
    assert_int_equal(warnings_clean(out, 0, "abc", 3), 0);
    assert_string_equal(out, "");
    /* What comes out always makes a JSON string. */
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    char big[300];
    size_t n = warnings_clean(big, 299, (const char *)all, sizeof all);
    json_t *j = json_stringn(big, n);
    assert_non_null(j);
    json_decref(j);
}

/* A value that is not a number is warned once per name (warnings.h): a
 * program printing its phase every step counts 1, not one per line; names
 * past WARNINGS_NAMES_MAX are not counted. */
static void test_warnings_once(void **state)
{
    (void)state;
    static Warnings w;
    warnings_init(&w);
    const char *line = "@rung {\"loss\": 0.3, \"phase\": \"warmup\"}";
    for (int i = 0; i < 100; i++)
        assert_int_equal(warnings_add_once(&w, "phase", line, strlen(line), "kept as info"),
                         i == 0);
    assert_true(warnings_add_once(&w, "note", line, strlen(line), "kept as info"));
    json_t *j = warnings_take(&w);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 2);
    assert_int_equal(json_array_size(json_object_get(j, "last")), 2);
    json_decref(j);
    for (int i = 2; i < WARNINGS_NAMES_MAX + 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(warnings_add_once(&w, name, line, strlen(line), "kept as info"),
                         i < WARNINGS_NAMES_MAX);
    }
    assert_int_equal(w.count, WARNINGS_NAMES_MAX);
    /* A name longer than a report line's key is never one. */
    char long_name[WARNINGS_NAME_MAX + 2];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    warnings_init(&w);
    assert_false(warnings_add_once(&w, long_name, line, strlen(line), "kept as info"));
}

static void test_warnings_last(void **state)
{
    (void)state;
    static Warnings w;
    warnings_init(&w);
    assert_null(warnings_take(&w));
    json_t *j = warnings_json(&w);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "last")), 0);
    json_decref(j);

    for (int i = 1; i <= 7; i++) {
        char line[32];
        int len = snprintf(line, sizeof line, "@rung {%d", i);
        warnings_add(&w, line, (size_t)len, "not JSON");
    }
    j = warnings_take(&w);
    assert_non_null(j);
    assert_null(warnings_take(&w)); /* nothing new since */
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 7);
    json_t *last = json_object_get(j, "last");
    assert_int_equal(json_array_size(last), WARNINGS_LAST);
    for (size_t k = 0; k < WARNINGS_LAST; k++) { /* the last five, oldest first */
        char want[32];
        snprintf(want, sizeof want, "@rung {%zu", k + 3);
        json_t *item = json_array_get(last, k);
        assert_int_equal(json_object_size(item), 2);
        assert_string_equal(json_string_value(json_object_get(item, "line")), want);
        assert_string_equal(json_string_value(json_object_get(item, "why")), "not JSON");
    }
    json_decref(j);

    /* A long line is cut to WARNINGS_LINE_MAX bytes on a character; a long
     * reason to WARNINGS_WHY_MAX; bytes that are not UTF-8 are replaced. */
    char line[WARNINGS_LINE_MAX * 2];
    memcpy(line, "@rung ", 6);
    for (size_t i = 6; i + 2 <= sizeof line; i += 2)
        memcpy(line + i, "\xce\xb4", 2);
    line[6] = '\xff'; /* then a stray continuation byte */
    char why[WARNINGS_WHY_MAX * 2];
    memset(why, 'y', sizeof why - 1);
    why[sizeof why - 1] = '\0';
    warnings_add(&w, line, sizeof line, why);
    j = warnings_take(&w);
    json_t *item = json_array_get(json_object_get(j, "last"), WARNINGS_LAST - 1);
    const char *l = json_string_value(json_object_get(item, "line"));
    assert_non_null(l);
    assert_true(strlen(l) <= WARNINGS_LINE_MAX && strlen(l) >= WARNINGS_LINE_MAX - 1);
    assert_memory_equal(l, "@rung ??\xce\xb4", 10);
    assert_int_equal(strlen(json_string_value(json_object_get(item, "why"))), WARNINGS_WHY_MAX);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 8);
    json_decref(j);

    /* The server takes no empty line or reason: never sent empty. */
    warnings_init(&w);
    warnings_add(&w, "", 0, "");
    j = warnings_json(&w);
    item = json_array_get(json_object_get(j, "last"), 0);
    assert_true(strlen(json_string_value(json_object_get(item, "line"))) > 0);
    assert_true(strlen(json_string_value(json_object_get(item, "why"))) > 0);
    json_decref(j);
}

/* ---- prune ---- */

static void test_prune_select(void **state)
{
    (void)state;
    assert_int_equal(prune_select(NULL, 0, 3), 0);
    PruneEntry e[] = {
        {.id = 1, .ended = 10},
        {.id = 2, .ended = 40},
        {.id = 3, .ended = 20, .paused = true},
        {.id = 4, .ended = 30},
        {.id = 5, .ended = 5},
        {.id = 6, .ended = 30},
        {.id = 7, .ended = 1, .paused = true},
    };
    size_t n = sizeof e / sizeof e[0];
    /* Keep 2: both paused ones, then 2 (ended 40) and 6 (30, the higher id
     * of a tie); remove 4, 1, 5, newest first. */
    size_t keep = prune_select(e, n, 2);
    assert_int_equal(keep, 4);
    assert_true(e[0].paused && e[1].paused);
    assert_int_equal(e[0].id, 3);
    assert_int_equal(e[1].id, 7);
    assert_int_equal(e[2].id, 2);
    assert_int_equal(e[3].id, 6);
    assert_int_equal(e[4].id, 4);
    assert_int_equal(e[5].id, 1);
    assert_int_equal(e[6].id, 5);
    /* Keep as many as there are, or more: nothing goes. */
    assert_int_equal(prune_select(e, n, 5), n);
    assert_int_equal(prune_select(e, n, 1000), n);
    /* Keep 0: every ended folder goes, the paused ones stay. */
    keep = prune_select(e, n, 0);
    assert_int_equal(keep, 2);
    for (size_t i = 0; i < n; i++)
        assert_true(e[i].paused == (i < keep));
    /* Only paused ones. */
    PruneEntry p[] = {{.id = 9, .ended = 1, .paused = true}};
    assert_int_equal(prune_select(p, 1, 0), 1);
}

/* ---- trial folders (real files) ---- */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void test_trialdir(void **state)
{
    (void)state;
    char root[] = "/tmp/rung-test-trialdir-XXXXXX";
    assert_non_null(mkdtemp(root));
    char trials[PATH_MAX], outside[PATH_MAX], path[PATH_MAX + 64], why[512];
    snprintf(trials, sizeof trials, "%s/trials", root);
    snprintf(outside, sizeof outside, "%s/outside", root);
    assert_int_equal(mkdir(trials, 0700), 0);
    assert_int_equal(mkdir(outside, 0700), 0);
    snprintf(path, sizeof path, "%s/keep.txt", outside);
    write_file(path, "not the trial's");

    /* A folder with files, nested folders, a read-only folder, and links
     * out of it (to a folder and to a file) that must not be followed. */
    char dir[PATH_MAX];
    int fd = trialdir_open(trials, 17, dir, sizeof dir, why, sizeof why);
    assert_true(fd >= 0);
    snprintf(path, sizeof path, "%s/17", trials);
    assert_string_equal(dir, path);
    snprintf(path, sizeof path, "%s/stdout.log", dir);
    write_file(path, "x");
    snprintf(path, sizeof path, "%s/ckpt", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/ckpt/deep", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/ckpt/deep/step-3.bin", dir);
    write_file(path, "weights");
    snprintf(path, sizeof path, "%s/ro", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/ro/f", dir);
    write_file(path, "f");
    snprintf(path, sizeof path, "%s/ro", dir);
    assert_int_equal(chmod(path, 0500), 0);
    snprintf(path, sizeof path, "%s/link-dir", dir);
    assert_int_equal(symlink(outside, path), 0);
    char target[PATH_MAX + 16];
    snprintf(target, sizeof target, "%s/keep.txt", outside);
    snprintf(path, sizeof path, "%s/ckpt/link-file", dir);
    assert_int_equal(symlink(target, path), 0);

    /* Held (the trial runs): left as it is. */
    assert_int_equal(trialdir_remove(trials, 17, why, sizeof why), 1);
    assert_true(exists(dir));
    /* A second holder (another attempt) shares the lock. */
    char dir2[PATH_MAX];
    int fd2 = trialdir_open(trials, 17, dir2, sizeof dir2, why, sizeof why);
    assert_true(fd2 >= 0);
    close(fd2);
    close(fd);

    assert_int_equal(trialdir_remove(trials, 17, why, sizeof why), 0);
    assert_false(exists(dir));
    assert_true(exists(target)); /* nothing outside was touched */
    assert_true(exists(outside));
    /* Gone already: fine. */
    assert_int_equal(trialdir_remove(trials, 17, why, sizeof why), 0);

    /* A link named as a trial folder: the link goes, not its target. */
    snprintf(path, sizeof path, "%s/18", trials);
    assert_int_equal(symlink(outside, path), 0);
    assert_int_equal(trialdir_remove(trials, 18, why, sizeof why), 0);
    assert_false(exists(path));
    assert_true(exists(target));
    /* Nor does trialdir_open follow one. */
    assert_int_equal(symlink(outside, path), 0);
    assert_int_equal(trialdir_open(trials, 18, dir, sizeof dir, why, sizeof why), -1);
    assert_non_null(strstr(why, "not a folder"));
    assert_int_equal(unlink(path), 0);

    /* No trials folder: an error that says so. */
    snprintf(path, sizeof path, "%s/none", root);
    assert_int_equal(trialdir_remove(path, 1, why, sizeof why), -1);
    assert_non_null(strstr(why, "cannot open"));

    unlink(target);
    rmdir(outside);
    rmdir(trials);
    assert_int_equal(rmdir(root), 0);
}

/* ---- slots ---- */

static void test_slots(void **state)
{
    (void)state;
    Slots s;
    int gpus[] = {0, 1, 2, 3};
    slots_init(&s, gpus, 4, 8);
    int out[SLOTS_MAX_GPUS];
    assert_int_equal(slots_free_gpus(&s, out, SLOTS_MAX_GPUS), 4);
    assert_int_equal(slots_free_cpus(&s), 8);
    assert_true(slots_any_free(&s));

    int64_t two[] = {0, 1};
    assert_int_equal(slots_take(&s, two, 2, 2), 0);
    assert_int_equal(slots_free_gpus(&s, out, SLOTS_MAX_GPUS), 2);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 3);
    assert_int_equal(slots_free_cpus(&s), 6);

    int64_t busy[] = {1, 2};
    assert_int_equal(slots_take(&s, busy, 2, 1), -1); /* GPU 1 is held: nothing taken */
    assert_int_equal(slots_free_gpus(&s, out, SLOTS_MAX_GPUS), 2);
    assert_int_equal(slots_free_cpus(&s), 6);
    int64_t unknown[] = {7};
    assert_int_equal(slots_take(&s, unknown, 1, 1), -1);
    int64_t twice[] = {2, 2};
    assert_int_equal(slots_take(&s, twice, 2, 1), -1);
    assert_int_equal(slots_take(&s, NULL, 0, 7), -1); /* only 6 CPUs free */
    assert_int_equal(slots_take(&s, NULL, 0, 6), 0);
    assert_int_equal(slots_free_cpus(&s), 0);
    assert_true(slots_any_free(&s)); /* GPUs 2 and 3 */

    int64_t rest[] = {3, 2};
    assert_int_equal(slots_take(&s, rest, 2, 0), 0);
    assert_false(slots_any_free(&s));

    slots_release(&s, two, 2, 2);
    assert_int_equal(slots_free_gpus(&s, out, 1), 1); /* max respected */
    assert_int_equal(out[0], 0);
    assert_int_equal(slots_free_cpus(&s), 2);
    slots_release(&s, rest, 2, 0);
    slots_release(&s, NULL, 0, 6);
    assert_int_equal(slots_free_gpus(&s, out, SLOTS_MAX_GPUS), 4);
    assert_int_equal(slots_free_cpus(&s), 8);
}

static void test_slots_cpu_only(void **state)
{
    (void)state;
    Slots s;
    slots_init(&s, NULL, 0, 2);
    int out[4];
    assert_int_equal(slots_free_gpus(&s, out, 4), 0);
    assert_int_equal(slots_take(&s, NULL, 0, 1), 0);
    assert_int_equal(slots_take(&s, NULL, 0, 1), 0);
    assert_false(slots_any_free(&s));
    int64_t g[] = {0};
    slots_release(&s, g, 1, 1); /* unknown GPUs in a release are ignored */
    assert_int_equal(slots_free_cpus(&s), 1);
}

/* ---- backoff ---- */

static void test_backoff_schedule(void **state)
{
    (void)state;
    uint64_t rng = backoff_seed(42);
    for (int round = 0; round < 200; round++) {
        for (int retry = 0; retry < 40; retry++) {
            int64_t d = BACKOFF_BASE_MS;
            for (int i = 0; i < retry && d < BACKOFF_CAP_MS; i++)
                d *= 2;
            if (d > BACKOFF_CAP_MS)
                d = BACKOFF_CAP_MS;
            int64_t ms = backoff_delay_ms(retry, BACKOFF_BASE_MS, BACKOFF_CAP_MS, &rng);
            assert_true(ms >= d / 2);
            assert_true(ms <= d);
            assert_true(ms <= BACKOFF_CAP_MS);
        }
    }
    /* Huge retry counts neither overflow nor pass the cap. */
    int64_t ms = backoff_delay_ms(1 << 30, 100, 4000, &rng);
    assert_true(ms >= 2000 && ms <= 4000);
    /* First retries: 50..100 ms, then 100..200, 200..400. */
    ms = backoff_delay_ms(0, 100, 4000, &rng);
    assert_true(ms >= 50 && ms <= 100);
    ms = backoff_delay_ms(2, 100, 4000, &rng);
    assert_true(ms >= 200 && ms <= 400);
}

static void test_backoff_jitter(void **state)
{
    (void)state;
    /* Same seed, same schedule; different seeds, different schedules. */
    uint64_t a = backoff_seed(7), b = backoff_seed(7), c = backoff_seed(8);
    bool differ = false;
    for (int i = 0; i < 50; i++) {
        int64_t x = backoff_delay_ms(10, 100, 4000, &a);
        int64_t y = backoff_delay_ms(10, 100, 4000, &b);
        int64_t z = backoff_delay_ms(10, 100, 4000, &c);
        assert_int_equal(x, y);
        differ |= x != z;
    }
    assert_true(differ);
    /* The jitter covers its range: not one value over and over. */
    uint64_t r = backoff_seed(1);
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t v = backoff_delay_ms(20, 100, 4000, &r);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    assert_true(lo < 2200);
    assert_true(hi > 3800);
    assert_int_not_equal(backoff_seed(0), 0);
}

/* ---- linebuf ---- */

typedef struct Lines {
    char text[16][128];
    bool cut[16];
    int n;
} Lines;

static void collect(void *arg, const char *line, size_t len, bool cut)
{
    Lines *l = arg;
    assert_true(l->n < 16);
    snprintf(l->text[l->n], sizeof l->text[l->n], "%.*s", (int)len, line);
    l->cut[l->n++] = cut;
}

static void test_linebuf_split(void **state)
{
    (void)state;
    Linebuf lb;
    assert_int_equal(linebuf_init(&lb, 16), 0);
    Lines l = {0};
    linebuf_feed(&lb, "ab", 2, collect, &l);
    assert_int_equal(l.n, 0);
    linebuf_feed(&lb, "c\nde\n\nf", 7, collect, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.text[0], "abc");
    assert_string_equal(l.text[1], "de");
    assert_string_equal(l.text[2], "");
    linebuf_flush(&lb, collect, &l);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.text[3], "f");
    linebuf_flush(&lb, collect, &l); /* nothing left */
    assert_int_equal(l.n, 4);
    linebuf_close(&lb);
}

static void test_linebuf_long_lines(void **state)
{
    (void)state;
    Linebuf lb;
    assert_int_equal(linebuf_init(&lb, 8), 0);
    Lines l = {0};
    /* Exactly the maximum is whole; one more is cut once and skipped to '\n'. */
    linebuf_feed(&lb, "12345678\n", 9, collect, &l);
    linebuf_feed(&lb, "123456789abc", 12, collect, &l);
    linebuf_feed(&lb, "defgh", 5, collect, &l);
    linebuf_feed(&lb, "ij\nok\n", 6, collect, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.text[0], "12345678");
    assert_false(l.cut[0]);
    assert_string_equal(l.text[1], "12345678");
    assert_true(l.cut[1]);
    assert_string_equal(l.text[2], "ok");
    assert_false(l.cut[2]);
    /* A cut line at the end of the stream is not handed over twice. */
    linebuf_feed(&lb, "0123456789", 10, collect, &l);
    linebuf_flush(&lb, collect, &l);
    assert_int_equal(l.n, 4);
    linebuf_close(&lb);
}

/* ---- tail ---- */

static void test_tail_bounds(void **state)
{
    (void)state;
    Tail t;
    tail_init(&t);
    char *empty = tail_text(&t);
    assert_string_equal(empty, "");
    free(empty);
    char line[32];
    for (int i = 0; i < 100; i++) {
        int n = snprintf(line, sizeof line, "line %d\r", i);
        tail_add(&t, line, (size_t)n);
    }
    char *text = tail_text(&t);
    assert_int_equal(t.n, TAIL_MAX_LINES);
    assert_true(strncmp(text, "line 60\nline 61\n", 16) == 0);
    assert_non_null(strstr(text, "line 99"));
    assert_null(strstr(text, "\r"));
    assert_int_equal(strlen(text), t.bytes);
    assert_true(text[strlen(text) - 1] == '9'); /* no trailing newline */
    free(text);

    /* Bytes bound: long lines push out old ones. */
    char big[1500];
    memset(big, 'x', sizeof big);
    for (int i = 0; i < 5; i++)
        tail_add(&t, big, sizeof big);
    text = tail_text(&t);
    assert_true(strlen(text) <= TAIL_MAX_BYTES);
    assert_int_equal(t.n, 2);
    free(text);

    /* A line over the bound keeps its head, alone. */
    char *huge = malloc(10000);
    memset(huge, 'y', 10000);
    huge[0] = 'H';
    tail_add(&t, huge, 10000);
    free(huge);
    text = tail_text(&t);
    assert_int_equal(strlen(text), TAIL_MAX_BYTES);
    assert_int_equal(text[0], 'H');
    free(text);
    tail_close(&t);
}

/* ---- runner ---- */

/* Reads both pipes to EOF into out/err (NUL-terminated, truncated). */
static void drain(Runner *r, char *out, size_t out_size, char *err, size_t err_size)
{
    size_t no = 0, ne = 0;
    while (r->out_fd >= 0 || r->err_fd >= 0) {
        struct pollfd fds[2];
        int n = 0;
        int *which[2];
        if (r->out_fd >= 0) {
            which[n] = &r->out_fd;
            fds[n++] = (struct pollfd){.fd = r->out_fd, .events = POLLIN};
        }
        if (r->err_fd >= 0) {
            which[n] = &r->err_fd;
            fds[n++] = (struct pollfd){.fd = r->err_fd, .events = POLLIN};
        }
        assert_true(poll(fds, (nfds_t)n, 10000) > 0);
        for (int i = 0; i < n; i++) {
            if (!fds[i].revents)
                continue;
            bool is_out = which[i] == &r->out_fd;
            char *buf = is_out ? out + no : err + ne;
            size_t room = is_out ? out_size - 1 - no : err_size - 1 - ne;
            ssize_t got = read(*which[i], buf, room);
            if (got > 0)
                *(is_out ? &no : &ne) += (size_t)got;
            else if (got == 0 || (errno != EAGAIN && errno != EINTR))
                runner_close_fd(which[i]);
        }
    }
    out[no] = '\0';
    err[ne] = '\0';
}

static void test_runner_exit_status_and_env(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "echo out:$RUNG_X; echo err >&2; pwd; exit 3", NULL};
    char *envp[] = {"RUNG_X=42", "PATH=/usr/bin:/bin", NULL};
    RunnerSpec spec = {.argv = argv, .envp = envp, .cwd = "/"};
    Runner r;
    char why[256] = "";
    assert_int_equal(runner_start(&spec, &r, why, sizeof why), 0);
    assert_true(r.pid > 0);
    char out[256], err[256];
    drain(&r, out, sizeof out, err, sizeof err);
    runner_reap(&r);
    assert_true(runner_exited(&r));
    assert_string_equal(out, "out:42\n/\n");
    assert_string_equal(err, "err\n");
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 3);
    char desc[64];
    runner_describe(r.status, desc, sizeof desc);
    assert_string_equal(desc, "exit status 3");
    runner_close(&r);
}

static void test_runner_exec_failures(void **state)
{
    (void)state;
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    char *missing[] = {"rung-no-such-program", NULL};
    RunnerSpec spec = {.argv = missing, .envp = envp};
    Runner r;
    char why[256] = "";
    assert_int_equal(runner_start(&spec, &r, why, sizeof why), -1);
    assert_string_equal(why, "cannot run 'rung-no-such-program': No such file or directory");

    char *ok[] = {"true", NULL};
    spec = (RunnerSpec){.argv = ok, .envp = envp, .cwd = "/no/such/folder"};
    assert_int_equal(runner_start(&spec, &r, why, sizeof why), -1);
    assert_string_equal(why,
                        "cannot enter the folder '/no/such/folder': No such file or directory");
    /* No child is left behind to reap. */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void test_runner_group_kill(void **state)
{
    (void)state;
    /* The program ignores SIGTERM and leaves a grandchild that does too:
     * SIGTERM to the group ends neither, SIGKILL to the group ends both. */
    char *argv[] = {"sh", "-c", "trap '' TERM; sleep 30 & echo started; wait", NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    RunnerSpec spec = {.argv = argv, .envp = envp};
    Runner r;
    char why[256] = "";
    assert_int_equal(runner_start(&spec, &r, why, sizeof why), 0);
    char line[16] = "";
    struct pollfd p = {.fd = r.out_fd, .events = POLLIN};
    assert_true(poll(&p, 1, 10000) == 1);
    assert_true(read(r.out_fd, line, sizeof line - 1) > 0);
    assert_int_equal(runner_signal(&r, SIGTERM), 0);
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
    nanosleep(&ts, NULL);
    assert_false(runner_exited(&r));
    assert_true(runner_group_alive(&r));
    assert_int_equal(runner_signal(&r, SIGKILL), 0);
    runner_reap(&r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGKILL);
    char desc[64];
    runner_describe(r.status, desc, sizeof desc);
    assert_string_equal(desc, "killed by signal 9 (Killed)");
    /* The grandchild was orphaned; it dies of the same SIGKILL. Wait for
     * whoever reaps it. */
    for (int i = 0; i < 100 && runner_group_alive(&r); i++)
        nanosleep(&ts, NULL);
    assert_false(runner_group_alive(&r));
    runner_close(&r);
}

/* ---- gangs (gang.h, advertise.h) ---- */

static json_t *reply_with_gang(const char *gang_json)
{
    json_error_t e;
    json_t *gang = json_loads(gang_json, JSON_DECODE_ANY, &e);
    assert_non_null(gang);
    return json_pack("{s:{s:i, s:s}, s:o}", "trial", "id", 7, "lease_token", "t", "gang", gang);
}

/* gang_from_reply on reply JSON; returns its result, *g filled. */
static int gang_of(const char *gang_json, GangInfo *g, char *why, size_t why_size)
{
    json_t *reply = reply_with_gang(gang_json);
    int rc = gang_from_reply(reply, 3, g, why, why_size);
    json_decref(reply);
    return rc;
}

static void test_gang_from_reply(void **state)
{
    (void)state;
    GangInfo g;
    char why[256] = "";
    /* A 1-node trial: null or absent, and *g is left alone. */
    gang_single(&g, 4242);
    assert_int_equal(gang_of("null", &g, why, sizeof why), 0);
    json_t *plain = json_pack("{s:{s:i}}", "trial", "id", 7);
    assert_int_equal(gang_from_reply(plain, 3, &g, why, sizeof why), 0);
    json_decref(plain);
    assert_false(g.is_gang);
    assert_int_equal(g.nnodes, 1);
    assert_string_equal(g.master_addr, "127.0.0.1");
    assert_int_equal(g.master_port, 4242);

    assert_int_equal(gang_of("{\"rank\": 1, \"nnodes\": 2, \"master_addr\": \"10.0.0.5\", "
                             "\"master_port\": 29500}",
                             &g, why, sizeof why),
                     1);
    assert_true(g.is_gang);
    assert_int_equal(g.rank, 1);
    assert_int_equal(g.nnodes, 2);
    assert_string_equal(g.master_addr, "10.0.0.5");
    assert_int_equal(g.master_port, 29500);

    /* In the trial object, as rungd sends it. */
    json_t *r = json_pack("{s:{s:i, s:{s:i, s:i, s:s, s:i}}}", "trial", "id", 7, "gang", "rank", 1,
                          "nnodes", 4, "master_addr", "gpu-b", "master_port", 29501);
    memset(&g, 0, sizeof g);
    assert_int_equal(gang_from_reply(r, 3, &g, why, sizeof why), 1);
    assert_true(g.is_gang);
    assert_int_equal(g.rank, 1);
    assert_int_equal(g.nnodes, 4);
    assert_string_equal(g.master_addr, "gpu-b");
    assert_int_equal(g.master_port, 29501);
    json_decref(r);

    /* The trial object's form: this worker (3) found among the members. */
    r = json_pack("{s:{s:i, s:{s:[{s:i, s:i}, {s:i, s:i}, {s:i, s:i}], s:s, s:i}}}", "trial", "id",
                  7, "gang", "members", "rank", 0, "worker_id", 9, "rank", 1, "worker_id", 4,
                  "rank", 2, "worker_id", 3, "master_addr", "gpu-a", "master_port", 40000);
    memset(&g, 0, sizeof g);
    assert_int_equal(gang_from_reply(r, 3, &g, why, sizeof why), 1);
    assert_true(g.is_gang);
    assert_int_equal(g.rank, 2);
    assert_int_equal(g.nnodes, 3);
    assert_string_equal(g.master_addr, "gpu-a");
    assert_int_equal(g.master_port, 40000);
    assert_int_equal(gang_from_reply(r, 5, &g, why, sizeof why), -1);
    assert_non_null(strstr(why, "not among gang.members"));
    json_decref(r);
    /* An IPv6 literal in brackets (another worker's advertise_addr) loses them. */
    r = json_pack("{s:{s:i}, s:{s:i, s:i, s:s, s:i}}", "trial", "id", 7, "gang", "rank", 0,
                  "nnodes", 2, "master_addr", "[fd00::5]", "master_port", 29500);
    assert_int_equal(gang_from_reply(r, 3, &g, why, sizeof why), 1);
    assert_string_equal(g.master_addr, "fd00::5");
    json_decref(r);

    /* Malformed: each refused with the field named, *g untouched. */
    static const struct {
        const char *gang, *why;
    } bad[] = {
        {"[]", "not an object"},
        {"{\"rank\": 2, \"nnodes\": 2, \"master_addr\": \"a\", \"master_port\": 1}", "gang.rank"},
        {"{\"rank\": -1, \"nnodes\": 2, \"master_addr\": \"a\", \"master_port\": 1}", "gang.rank"},
        {"{\"rank\": 0, \"nnodes\": 0, \"master_addr\": \"a\", \"master_port\": 1}", "gang.nnodes"},
        {"{\"rank\": 0, \"nnodes\": 65, \"master_addr\": \"a\", \"master_port\": 1}",
         "gang.nnodes"},
        {"{\"rank\": 0, \"nnodes\": 2, \"master_addr\": \"-a\", \"master_port\": 1}",
         "gang.master_addr"},
        {"{\"rank\": 0, \"nnodes\": 2, \"master_addr\": \"a b\", \"master_port\": 1}",
         "gang.master_addr"},
        {"{\"rank\": 0, \"nnodes\": 2, \"master_port\": 1}", "gang.master_addr"},
        {"{\"rank\": 0, \"nnodes\": 2, \"master_addr\": \"a\", \"master_port\": 0}",
         "gang.master_port"},
        {"{\"rank\": 0, \"nnodes\": 2, \"master_addr\": \"a\", \"master_port\": 65536}",
         "gang.master_port"},
        {"{\"rank\": 0, \"nnodes\": 2, \"master_addr\": \"a\", \"master_port\": \"1\"}",
         "gang.master_port"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gang_single(&g, 1);
        why[0] = '\0';
        assert_int_equal(gang_of(bad[i].gang, &g, why, sizeof why), -1);
        assert_non_null(strstr(why, bad[i].why));
        assert_false(g.is_gang);
    }
}

static void test_gang_env(void **state)
{
    (void)state;
    GangInfo g = {.is_gang = true, .rank = 1, .nnodes = 2, .master_port = 29500};
    snprintf(g.master_addr, sizeof g.master_addr, "10.0.0.5");
    Env env;
    env_init(&env);
    /* The worker's and the trainable's own values lose to the gang's. */
    char *base[] = {"MASTER_ADDR=elsewhere", "RANK=7", "PATH=/usr/bin", NULL};
    env_trial_base(&env, base);
    json_t *user = json_pack("{s:s, s:s}", "WORLD_SIZE", "8", "OMP_NUM_THREADS", "1");
    assert_true(env_set_json(&env, user));
    json_decref(user);
    gang_env(&env, &g);
    static const char *const want[][2] = {
        {"RUNG_NODE_RANK", "1"},  {"RUNG_NNODES", "2"}, {"MASTER_ADDR", "10.0.0.5"},
        {"MASTER_PORT", "29500"}, {"NNODES", "2"},      {"NODE_RANK", "1"},
        {"WORLD_SIZE", "2"},      {"RANK", "1"},        {"LOCAL_RANK", "0"},
    };
    assert_int_equal(sizeof want / sizeof want[0], GANG_ENV_COUNT);
    for (size_t i = 0; i < GANG_ENV_COUNT; i++) {
        assert_string_equal(GANG_ENV_NAMES[i], want[i][0]);
        assert_string_equal(env_get(&env, want[i][0]), want[i][1]);
    }
    assert_string_equal(env_get(&env, "OMP_NUM_THREADS"), "1");
    assert_string_equal(env_get(&env, "PATH"), "/usr/bin");
    env_close(&env);

    /* No gang: Rung's own names are not inherited; the generic ones are
     * whatever the worker or the trainable set. */
    env_init(&env);
    char *inside[] = {"RUNG_NODE_RANK=3", "RUNG_NNODES=4", "MASTER_PORT=1234", NULL};
    env_trial_base(&env, inside);
    gang_single(&g, 5555);
    gang_env(&env, &g);
    assert_null(env_get(&env, "RUNG_NODE_RANK"));
    assert_null(env_get(&env, "RUNG_NNODES"));
    assert_string_equal(env_get(&env, "MASTER_PORT"), "1234");
    assert_null(env_get(&env, "WORLD_SIZE"));
    assert_null(env_get(&env, "RANK"));
    env_close(&env);
}

/* argv_expand over gang_argv_values: the placeholders next to the config's. */
static char **gang_argv(const GangInfo *g, const char *argv_json, const char *config_json,
                        char *why, size_t why_size)
{
    json_error_t e;
    json_t *argv = json_loads(argv_json, 0, &e);
    json_t *config = json_loads(config_json, 0, &e);
    assert_non_null(argv);
    assert_non_null(config);
    json_t *values = gang_argv_values(g, config, argv, why, why_size);
    char **out = values ? argv_expand(argv, values, why, why_size) : NULL;
    json_decref(values);
    json_decref(argv);
    json_decref(config);
    return out;
}

static void test_gang_placeholders(void **state)
{
    (void)state;
    char why[512] = "";
    GangInfo g = {.is_gang = true, .rank = 2, .nnodes = 4, .master_port = 29511};
    snprintf(g.master_addr, sizeof g.master_addr, "gpu-a.lan");
    char **a = gang_argv(&g,
                         "[\"torchrun\", \"--nnodes={nnodes}\", \"--node_rank={node_rank}\", "
                         "\"--master_addr\", \"{master_addr}\", \"--master_port={master_port}\", "
                         "\"train.py\", \"--lr={lr}\", \"{unknown}\"]",
                         "{\"lr\": 0.1}", why, sizeof why);
    assert_non_null(a);
    const char *want[] = {"torchrun",      "--nnodes=4", "--node_rank=2",
                          "--master_addr", "gpu-a.lan",  "--master_port=29511",
                          "train.py",      "--lr=0.1",   "{unknown}"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_string_equal(a[i], want[i]);
    assert_null(a[sizeof want / sizeof want[0]]);
    argv_free(a);

    /* A 1-node trial is a gang of one on this machine. */
    gang_single(&g, 40001);
    a = gang_argv(&g, "[\"run\", \"{node_rank}/{nnodes}@{master_addr}:{master_port}\"]", "{}", why,
                  sizeof why);
    assert_non_null(a);
    assert_string_equal(a[1], "0/1@127.0.0.1:40001");
    argv_free(a);
    /* Without a port (none could be found), {master_port} stays as it is. */
    gang_single(&g, 0);
    a = gang_argv(&g, "[\"run\", \"{master_port}\"]", "{}", why, sizeof why);
    assert_non_null(a);
    assert_string_equal(a[1], "{master_port}");
    argv_free(a);

    /* A parameter named like a placeholder that argv uses: refused, named. */
    static const char *const names[] = {"node_rank", "nnodes", "master_addr", "master_port"};
    for (size_t i = 0; i < 4; i++) {
        char argv_json[128], config_json[128];
        snprintf(argv_json, sizeof argv_json, "[\"run\", \"--x={%s}\"]", names[i]);
        snprintf(config_json, sizeof config_json, "{\"%s\": 3}", names[i]);
        why[0] = '\0';
        assert_null(gang_argv(&g, argv_json, config_json, why, sizeof why));
        char quoted[64];
        snprintf(quoted, sizeof quoted, "parameter '%s'", names[i]);
        assert_non_null(strstr(why, quoted));
    }
    /* ... but one argv does not use is no conflict, and stays a parameter
     * for the program (RUNG_CONFIG). */
    a = gang_argv(&g, "[\"run\", \"{lr}\"]", "{\"nnodes\": 3, \"lr\": 1}", why, sizeof why);
    assert_non_null(a);
    assert_string_equal(a[1], "1");
    argv_free(a);
}

static void test_gang_addresses(void **state)
{
    (void)state;
    /* A rungd from before gangs names the first field it does not know. */
    json_t *e = json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "invalid_argument", "message",
                          "advertise_addr: unknown field", "field", "advertise_addr");
    assert_true(gang_fields_refused(e));
    json_object_set_new(json_object_get(e, "error"), "field", json_string("port"));
    assert_true(gang_fields_refused(e));
    json_object_set_new(json_object_get(e, "error"), "field", json_string("gpus[0]"));
    assert_false(gang_fields_refused(e));
    json_decref(e);
    assert_false(gang_fields_refused(NULL));

    assert_true(gang_addr_valid("127.0.0.1"));
    assert_true(gang_addr_valid("gpu-box-1.lan"));
    assert_true(gang_addr_valid("fe80::1%eth0"));
    assert_true(gang_addr_valid("host_name"));
    assert_false(gang_addr_valid(NULL));
    assert_false(gang_addr_valid(""));
    assert_false(gang_addr_valid("-oops"));
    assert_false(gang_addr_valid("a b"));
    assert_false(gang_addr_valid("a;b"));
    assert_false(gang_addr_valid("[::1]"));
    char bare[8];
    assert_int_equal(gang_addr_unbracket("[::1]", bare, sizeof bare), 0);
    assert_string_equal(bare, "::1");
    assert_int_equal(gang_addr_unbracket("::1", bare, sizeof bare), -1);
    assert_int_equal(gang_addr_unbracket("[::1", bare, sizeof bare), -1);
    assert_int_equal(gang_addr_unbracket("[]", bare, sizeof bare), 0);
    assert_string_equal(bare, "");
    assert_int_equal(gang_addr_unbracket("[1234:5678]", bare, sizeof bare), -1); /* too long */
    char longest[GANG_ADDR_MAX + 2];
    memset(longest, 'a', sizeof longest);
    longest[GANG_ADDR_MAX] = '\0';
    assert_true(gang_addr_valid(longest));
    longest[GANG_ADDR_MAX] = 'a';
    longest[GANG_ADDR_MAX + 1] = '\0';
    assert_false(gang_addr_valid(longest));

    static const char *const urls[][2] = {
        {"http://127.0.0.1:8080", "127.0.0.1"},
        {"http://rung.lan", "rung.lan"},
        {"https://rung.lan:443/api", "rung.lan"},
        {"http://user:pw@rung.lan:80/", "rung.lan"},
        {"http://[::1]:8080/", "::1"},
        {"http://[fe80::1%25eth0]", "fe80::1%25eth0"},
        {"http://host?x=1", "host"},
    };
    char host[64];
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        assert_int_equal(gang_url_host(urls[i][0], host, sizeof host), 0);
        assert_string_equal(host, urls[i][1]);
    }
    assert_int_equal(gang_url_host("rung.lan:8080", host, sizeof host), -1);
    assert_int_equal(gang_url_host("http://:8080", host, sizeof host), -1);
    assert_int_equal(gang_url_host("http://[::1", host, sizeof host), -1);
    assert_int_equal(gang_url_host("http://", host, sizeof host), -1);
    assert_int_equal(gang_url_host("http://abcdef", host, 6), -1); /* does not fit */
    assert_int_equal(gang_url_host("http://abcde", host, 6), 0);
}

static void test_gang_ports(void **state)
{
    (void)state;
    int lo = 0, hi = 0;
    char why[256];
    assert_int_equal(gang_ports_parse("29500-29599", &lo, &hi, why, sizeof why), 0);
    assert_int_equal(lo, 29500);
    assert_int_equal(hi, 29599);
    assert_int_equal(gang_ports_parse("29500", &lo, &hi, why, sizeof why), 0);
    assert_int_equal(lo, 29500);
    assert_int_equal(hi, 29500);
    assert_int_equal(gang_ports_parse("1-65535", &lo, &hi, why, sizeof why), 0);
    static const char *const bad[] = {"",       "0",      "0-10", "10-9",   "1-65536", "a-b",
                                      "29500-", "-29500", "1--2", "123456", " 1",      "1-2-3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gang_ports_parse(bad[i], &lo, &hi, why, sizeof why), -1);
        assert_non_null(strstr(why, "LO-HI"));
    }
    /* Each port of the range once, from the start offset, wrapping. */
    bool seen[10] = {false};
    for (int i = 0; i < 10; i++) {
        int p = gang_ports_nth(100, 109, 123, i);
        assert_true(p >= 100 && p <= 109);
        assert_false(seen[p - 100]);
        seen[p - 100] = true;
    }
    assert_int_equal(gang_ports_nth(100, 109, 123, 0), 103);
    assert_int_equal(gang_ports_nth(100, 109, 123, 7), 100);
    assert_int_equal(gang_ports_nth(5, 5, UINT64_MAX, 0), 5);
}

/* Real sockets on this machine: the route to a loopback server, and ports
 * held while bound. */
static void test_advertise(void **state)
{
    (void)state;
    char addr[GANG_ADDR_MAX + 1], why[256];
    assert_int_equal(advertise_route_addr("http://127.0.0.1:8080", addr, sizeof addr, why,
                                          sizeof why),
                     0);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(advertise_route_addr("http://[::1", addr, sizeof addr, why, sizeof why), -1);
    assert_non_null(strstr(why, "no host"));

    int port = 0;
    int fd = advertise_port_open(0, 0, 0, &port, why, sizeof why);
    assert_true(fd >= 0);
    assert_true(port > 0 && port <= 65535);
    /* Held: the range of only that port has nothing free. */
    int other = 0;
    assert_int_equal(advertise_port_open(port, port, 0, &other, why, sizeof why), -1);
    assert_non_null(strstr(why, "no free TCP port"));
    /* Nor does the kernel hand it out again meanwhile. */
    int fd2 = advertise_port_open(0, 0, 0, &other, why, sizeof why);
    assert_true(fd2 >= 0);
    assert_int_not_equal(other, port);
    close(fd2);
    close(fd);
    /* Closed: free again, for the program that will listen on it. */
    fd = advertise_port_open(port, port, 0, &other, why, sizeof why);
    assert_true(fd >= 0);
    assert_int_equal(other, port);
    close(fd);
}

/* ---- the GPU watch's host (gpuwatch.h): the watch reaches the worker's
 * trials only through these calls ---- */

typedef struct FakeHost {
    int64_t holder_of[8]; /* GPU index -> trial id, 0: none */
    int give_backs, last_index;
    char last_why[64];
} FakeHost;

static int fake_groups(void *ctx, int64_t *pgids, int max)
{
    (void)ctx;
    (void)pgids;
    (void)max;
    return 0;
}

static int64_t fake_holder(void *ctx, int index)
{
    FakeHost *f = ctx;
    return index >= 0 && index < 8 ? f->holder_of[index] : 0;
}

static void fake_give_back(void *ctx, int index, const char *why)
{
    FakeHost *f = ctx;
    f->give_backs++;
    f->last_index = index;
    snprintf(f->last_why, sizeof f->last_why, "%s", why);
}

static int fake_n_trials(void *ctx)
{
    (void)ctx;
    return 1;
}

static void test_gpuwatch_host(void **state)
{
    (void)state;
    static Slots slots;
    static SpareParams spare;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    static atomic_bool exiting;
    FakeHost f = {.holder_of = {[1] = 42}};
    int gpus[] = {0, 1};
    slots_init(&slots, gpus, 2, 4);
    int64_t one = 1;
    assert_int_equal(slots_take(&slots, &one, 1, 1), 0);
    GpuWatchHost h = {.slots = &slots,
                      .spare = &spare,
                      .yield = true,
                      .mu = &mu,
                      .cond = &cond,
                      .exiting = &exiting,
                      .ctx = &f,
                      .groups = fake_groups,
                      .holder = fake_holder,
                      .give_back = fake_give_back,
                      .n_trials = fake_n_trials};
    /* No NVML and no --hours: nothing to watch. */
    assert_null(gpuwatch_new(&h));

    /* A heartbeat's GPUs without a watch: held by the trial the worker
     * names, or spare. */
    json_t *a = json_pack("[{s:i}, {s:i}, {s:i}]", "index", 0, "index", 1, "index", 7);
    gpuwatch_annotate(NULL, &h, a);
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "state")), "spare");
    assert_null(json_object_get(json_array_get(a, 0), "trial_id"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "state")), "trial");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 1), "trial_id")), 42);
    assert_null(json_object_get(json_array_get(a, 2), "state")); /* not offered */
    json_decref(a);

    /* Outside --hours (a whole day two days from today) with --yield auto:
     * one look gives every trial back through the host. */
    static const char *days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    static Hours hours;
    char why[128];
    assert_int_equal(hours_parse(days[(tm.tm_wday + 2) % 7], &hours, why, sizeof why), 0);
    h.hours = &hours;
    h.hours_text = days[(tm.tm_wday + 2) % 7];
    assert_true(gpuwatch_closed_ms(&hours) > 0);
    GpuWatch *gw = gpuwatch_new(&h);
    assert_non_null(gw);
    gpuwatch_look(gw);
    assert_int_equal(f.give_backs, 1);
    assert_int_equal(f.last_index, -1);
    assert_string_equal(f.last_why, "outside --hours");
    json_t *body = json_object();
    gpuwatch_hours_json(&hours, h.hours_text, body);
    assert_string_equal(json_string_value(json_object_get(body, "hours")), h.hours_text);
    assert_true(json_is_string(json_object_get(body, "next_lease_at")));
    json_decref(body);
    gpuwatch_free(gw);
}

/* --env: NAME=PATH pairs, one or several to a value; names checked as
 * rungd checks trainable.environment; a program found in PATH; a name
 * given twice, a missing program, a malformed pair refused, naming it. */
static void test_envs(void **state)
{
    (void)state;
    static Envs envs; /* large: not on the stack */
    envs_init(&envs);
    char why[512];
    assert_int_equal(envs_add(&envs, "", why, sizeof why), 0);
    assert_int_equal(envs.n, 0);
    assert_int_equal(envs_add(&envs, "base=/bin/sh  torch2.1=sh", why, sizeof why), 0);
    assert_int_equal(envs.n, 2);
    assert_non_null(envs_path(&envs, "base"));
    assert_non_null(strstr(envs_path(&envs, "torch2.1"), "/sh"));
    assert_null(envs_path(&envs, "nope"));
    json_t *names = envs_names_json(&envs);
    char *text = json_dumps(names, JSON_COMPACT);
    assert_string_equal(text, "[\"base\",\"torch2.1\"]");
    free(text);
    json_decref(names);
    assert_int_equal(envs_add(&envs, "base=/bin/sh", why, sizeof why), -1);
    assert_non_null(strstr(why, "'base' is given twice"));
    assert_int_equal(envs_add(&envs, "-x=/bin/sh", why, sizeof why), -1);
    assert_non_null(strstr(why, "'-x'"));
    assert_int_equal(envs_add(&envs, "gone=/nonexistent/python", why, sizeof why), -1);
    assert_non_null(strstr(why, "/nonexistent/python is not an executable"));
    assert_int_equal(envs_add(&envs, "justname", why, sizeof why), -1);
    assert_non_null(strstr(why, "NAME=PATH"));
    assert_true(envs_name_valid("a"));
    assert_false(envs_name_valid("a b"));
    assert_false(envs_name_valid(".a"));
    assert_true(envs_is_bare_python("python3"));
    assert_true(envs_is_bare_python("python"));
    assert_false(envs_is_bare_python("/usr/bin/python3"));
    assert_false(envs_is_bare_python("python3.11"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envs),
        cmocka_unit_test(test_argv_value_types),
        cmocka_unit_test(test_argv_real_round_trips),
        cmocka_unit_test(test_argv_subst),
        cmocka_unit_test(test_argv_expand),
        cmocka_unit_test(test_argv_expand_inactive),
        cmocka_unit_test(test_env_layers),
        cmocka_unit_test(test_env_json_checked),
        cmocka_unit_test(test_env_trial_base),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_warnings_clean),
        cmocka_unit_test(test_warnings_last),
        cmocka_unit_test(test_warnings_once),
        cmocka_unit_test(test_prune_select),
        cmocka_unit_test(test_trialdir),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_slots_cpu_only),
        cmocka_unit_test(test_backoff_schedule),
        cmocka_unit_test(test_backoff_jitter),
        cmocka_unit_test(test_linebuf_split),
        cmocka_unit_test(test_linebuf_long_lines),
        cmocka_unit_test(test_tail_bounds),
        cmocka_unit_test(test_runner_exit_status_and_env),
        cmocka_unit_test(test_runner_exec_failures),
        cmocka_unit_test(test_runner_group_kill),
        cmocka_unit_test(test_gang_from_reply),
        cmocka_unit_test(test_gang_env),
        cmocka_unit_test(test_gang_placeholders),
        cmocka_unit_test(test_gang_addresses),
        cmocka_unit_test(test_gang_ports),
        cmocka_unit_test(test_advertise),
        cmocka_unit_test(test_gpuwatch_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
