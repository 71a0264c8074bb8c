/* Unit tests of rung-train's config (kernels/train_main.c, parse_config):
 * every form of docs/trainer.md's "The config" gives the TrainConfig it
 * promises, the dotted keys of nested and conditional spaces set the field
 * of their last segment, per-layer widths hidden_1 ... hidden_n give the
 * layers one by one, and each wrong config is refused with the message that
 * names its keys. The program's file is compiled into this test (its main
 * renamed), so the test reads the very parser the program runs; that the
 * program exits with status 2 on these errors is test_train.py's. */
/* Before cmocka.h, whose fail() macro would rename the program's fail. */
#define main rung_train_main
#include "../../kernels/train_main.c"
#undef main

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Parses text (a JSON object) into *cfg; the return value of parse_config,
 * with why holding its message. */
static int parse(const char *text, TrainConfig *cfg, char *why, size_t size)
{
    json_error_t jerr;
    json_t *c = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (c == NULL)
        fail_msg("not JSON: %s: %s", text, jerr.text);
    why[0] = '\0';
    int rc = parse_config(c, cfg, why, size);
    json_decref(c);
    return rc;
}

static TrainConfig ok(const char *text)
{
    TrainConfig cfg;
    char why[1024];
    if (parse(text, &cfg, why, sizeof why) != 0)
        fail_msg("%s refused: %s", text, why);
    return cfg;
}

/* text is refused with exactly the message want. */
static void refused(const char *text, const char *want)
{
    TrainConfig cfg;
    char why[1024];
    if (parse(text, &cfg, why, sizeof why) == 0)
        fail_msg("%s accepted, expected: %s", text, want);
    if (strcmp(why, want) != 0)
        fail_msg("%s:\n  got      %s\n  expected %s", text, why, want);
}

static void assert_widths(const TrainConfig *cfg, int n, const int *widths)
{
    assert_int_equal(cfg->n_hidden, n);
    for (int l = 0; l < n; l++)
        assert_int_equal(cfg->hidden[l], widths[l]);
}

/* The forms that came before dotted keys, unchanged. */
static void test_existing_forms(void **state)
{
    (void)state;
    TrainConfig c = ok("{}");
    assert_widths(&c, 2, (int[]){512, 256});
    assert_int_equal(c.optimizer, TRAIN_SGD);
    assert_float_equal(c.lr, 0.05f, 0);
    assert_float_equal(c.momentum, 0.9f, 0);

    c = ok("{\"hidden\": [64, 32, 16], \"optimizer\": \"adamw\", \"beta2\": 0.99}");
    assert_widths(&c, 3, (int[]){64, 32, 16});
    assert_int_equal(c.optimizer, TRAIN_ADAMW);
    assert_float_equal(c.beta2, 0.99f, 0);

    c = ok("{\"hidden\": 128, \"layers\": 3}");
    assert_widths(&c, 3, (int[]){128, 128, 128});
    c = ok("{\"hidden\": 128}");
    assert_widths(&c, 1, (int[]){128});
    c = ok("{\"layers\": 2}");
    assert_widths(&c, 2, (int[]){256, 256});
    c = ok("{\"hidden\": []}");
    assert_int_equal(c.n_hidden, 0);
}

/* The configs of examples/fmnist-conditional.json's two optimizer branches
 * and its network branches. */
static void test_dotted_keys_set_their_last_segment(void **state)
{
    (void)state;
    TrainConfig c = ok("{\"opt.optimizer\": \"adamw\", \"opt.lr\": 0.01, \"opt.beta2\": 0.95, "
                       "\"opt.weight_decay\": 0.02, \"net.layers\": 2, \"net.hidden_1\": 128, "
                       "\"net.hidden_2\": 64.0, \"dropout\": 0.25, \"epochs\": 3}");
    assert_int_equal(c.optimizer, TRAIN_ADAMW);
    assert_float_equal(c.lr, 0.01f, 0);
    assert_float_equal(c.beta2, 0.95f, 0);
    assert_float_equal(c.weight_decay, 0.02f, 0);
    assert_float_equal(c.momentum, 0.9f, 0); /* not given: its default */
    assert_float_equal(c.dropout, 0.25f, 0);
    assert_int_equal(c.epochs, 3);
    assert_widths(&c, 2, (int[]){128, 64});

    c = ok("{\"opt.optimizer\": \"sgd\", \"opt.lr\": 0.2, \"opt.momentum\": 0.8, "
           "\"opt.nesterov\": true, \"net.layers\": 1, \"net.hidden_1\": 300}");
    assert_int_equal(c.optimizer, TRAIN_SGD);
    assert_float_equal(c.lr, 0.2f, 0);
    assert_float_equal(c.momentum, 0.8f, 0);
    assert_true(c.nesterov);
    assert_widths(&c, 1, (int[]){300});

    /* Any depth; the other forms of hidden under a dotted key too. */
    c = ok("{\"a.b.c.optimizer\": \"adamw\", \"model.hidden\": [40, 20]}");
    assert_int_equal(c.optimizer, TRAIN_ADAMW);
    assert_widths(&c, 2, (int[]){40, 20});
    c = ok("{\"net.hidden\": 96, \"net.layers\": 2}");
    assert_widths(&c, 2, (int[]){96, 96});
}

static void test_per_layer_widths(void **state)
{
    (void)state;
    /* Without layers: as many layers as widths, whatever the keys' order. */
    TrainConfig c = ok("{\"hidden_3\": 25, \"hidden_1\": 100, \"hidden_2\": 50}");
    assert_widths(&c, 3, (int[]){100, 50, 25});
    c = ok("{\"layers\": 3, \"net.hidden_1\": 100, \"net.hidden_2\": 50, \"x.hidden_3\": 25}");
    assert_widths(&c, 3, (int[]){100, 50, 25});
    char text[1024];
    int n = snprintf(text, sizeof text, "{");
    int widths[TRAIN_MAX_LAYERS];
    for (int l = 1; l <= TRAIN_MAX_LAYERS; l++) {
        widths[l - 1] = 10 * l;
        n += snprintf(text + n, sizeof text - (size_t)n, "%s\"hidden_%d\": %d", l > 1 ? ", " : "",
                      l, 10 * l);
    }
    snprintf(text + n, sizeof text - (size_t)n, "}");
    c = ok(text);
    assert_widths(&c, TRAIN_MAX_LAYERS, widths);
}

static void test_errors_name_the_keys(void **state)
{
    (void)state;
    /* Two keys of one field. */
    refused("{\"opt.lr\": 0.1, \"lr\": 0.2}", "config.opt.lr and config.lr: both set lr");
    refused("{\"a.optimizer\": \"sgd\", \"b.optimizer\": \"sgd\"}",
            "config.a.optimizer and config.b.optimizer: both set optimizer");
    refused("{\"hidden_1\": 8, \"net.hidden_2\": 64, \"hidden_2\": 32}",
            "config.net.hidden_2 and config.hidden_2: both set hidden_2");
    refused("{\"layers\": 2, \"net.layers\": 2}",
            "config.layers and config.net.layers: both set layers");
    /* Per-layer widths: a gap, a count that disagrees, with hidden, out of
     * range, a wrong width. */
    refused("{\"hidden_1\": 64, \"hidden_3\": 32}",
            "config.hidden_3: hidden_2 is missing (per-layer widths run from hidden_1 without a "
            "gap)");
    refused("{\"net.hidden_2\": 64}", "config.net.hidden_2: hidden_1 is missing (per-layer widths "
                                      "run from hidden_1 without a gap)");
    refused("{\"net.layers\": 3, \"net.hidden_1\": 64, \"net.hidden_2\": 32}",
            "config.net.layers: 3, but 2 per-layer width(s) are given (hidden_1 ... hidden_2)");
    refused("{\"layers\": 0, \"hidden_1\": 64}",
            "config.layers: 0, but 1 per-layer width(s) are given (hidden_1 ... hidden_1)");
    refused("{\"hidden\": [64], \"net.hidden_1\": 64}",
            "config.hidden and config.net.hidden_1: give either hidden or per-layer widths "
            "hidden_1 ... hidden_16, not both");
    refused("{\"hidden_17\": 64}", "config.hidden_17: per-layer widths are hidden_1 ... hidden_16");
    refused("{\"net.hidden_0\": 64}", "config.net.hidden_0: not a setting of the builtin mlp "
                                      "trainer");
    refused("{\"hidden_01\": 64}", "config.hidden_01: not a setting of the builtin mlp trainer");
    refused("{\"net.hidden_1\": 0}", "config.net.hidden_1: must be an integer in [1, 65536]");
    refused("{\"net.hidden_1\": 64.5}", "config.net.hidden_1: must be an integer in [1, 65536]");
    refused("{\"net.hidden_1\": \"64\"}", "config.net.hidden_1: must be an integer in [1, 65536]");
    /* A wrong value under a dotted key names that key. */
    refused("{\"opt.momentum\": 1.5}", "config.opt.momentum: must be a number in [0, 1)");
    refused("{\"opt.optimizer\": \"adam\"}", "config.opt.optimizer: must be \"sgd\" or \"adamw\"");
    refused("{\"net.hidden\": [64, 0]}", "config.net.hidden[1]: must be an integer in [1, 65536]");
    refused("{\"opt.learning_rate\": 0.1}",
            "config.opt.learning_rate: not a setting of the builtin mlp trainer");
    refused("{\"net.hidden\": [64], \"net.layers\": 2}",
            "config.net.layers: give either a list of widths in hidden, or one width and layers");
    /* The errors that came before, unchanged. */
    refused("{\"hidden\": [512, 0]}", "config.hidden[1]: must be an integer in [1, 65536]");
    refused("{\"lr\": -1}", "config.lr: must be a number in [0, 1000]");
    refused("{\"ranks\": 4, \"batch_size\": 2}", "config.batch_size: 2 is smaller than ranks (4)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_existing_forms),
        cmocka_unit_test(test_dotted_keys_set_their_last_segment),
        cmocka_unit_test(test_per_layer_widths),
        cmocka_unit_test(test_errors_name_the_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
