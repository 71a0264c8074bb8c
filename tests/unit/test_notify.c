/* server/notify.c's pure parts: the notifiers file (each refusal names its
 * field), which kinds a notifier wants, the readable line, the bodies, and
 * the signature (RFC 4231, test case 2). Delivery itself is
 * test_notify_delivery.c's, and tests/integration/test_notify.py's through
 * rungd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "notify.h"

static const char *refusal(const char *text)
{
    static RungError err;
    rung_error_clear(&err);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    NotifyConfig c;
    int rc = notify_config_parse(j, &c, &err);
    json_decref(j);
    if (rc == 0) {
        notify_config_free(&c);
        return NULL;
    }
    assert_int_equal(rc, RUNG_E_INVALID_ARGUMENT);
    return err.field;
}

#define ONE(extra)                                                                                 \
    "{\"notifiers\": [{\"name\": \"n\", \"url\": \"https://h/x\", \"secret\": "                    \
    "\"0123456789abcdef\", \"events\": [\"*\"]" extra "}]}"

static void test_config(void **state)
{
    (void)state;
    assert_null(refusal(ONE("")));
    assert_null(refusal("{\"notifiers\": []}"));
    assert_string_equal(refusal("{\"notifier\": []}"), "notifier");
    assert_string_equal(refusal(ONE(", \"format\": \"xml\"")), "notifiers[0].format");
    assert_null(refusal(ONE(", \"format\": \"slack\", \"max_attempts\": 20")));
    assert_string_equal(refusal("{\"notifiers\": {}}"), "notifiers");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"secret\": "
                                "\"0123456789abcdef\", \"events\": [\"*\"]}]}"),
                        "notifiers[0].url");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"url\": \"http://h\", "
                                "\"events\": [\"*\"]}]}"),
                        "notifiers[0].secret");
    assert_string_equal(refusal("{\"notifiers\": [{\"url\": \"http://h\", \"secret\": "
                                "\"0123456789abcdef\", \"events\": [\"*\"]}]}"),
                        "notifiers[0].name");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"url\": \"http://h\", "
                                "\"secret\": \"0123456789abcdef\"}]}"),
                        "notifiers[0].events");
    assert_string_equal(refusal(ONE(", \"max_attempts\": 21")), "notifiers[0].max_attempts");
    assert_string_equal(refusal(ONE(", \"max_attempts\": 0")), "notifiers[0].max_attempts");
    assert_string_equal(refusal(ONE(", \"retry_base_ms\": 1")), "notifiers[0].retry_base_ms");
    assert_string_equal(refusal(ONE(", \"colour\": 1")), "notifiers[0].colour");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"url\": \"ftp://h\", "
                                "\"secret\": \"0123456789abcdef\", \"events\": [\"*\"]}]}"),
                        "notifiers[0].url");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"url\": \"http://h\", "
                                "\"secret\": \"short\", \"events\": [\"*\"]}]}"),
                        "notifiers[0].secret");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"url\": \"http://h\", "
                                "\"secret\": \"0123456789abcdef\", \"events\": []}]}"),
                        "notifiers[0].events");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"url\": \"http://h\", "
                                "\"secret\": \"0123456789abcdef\", \"events\": [\"Trial\"]}]}"),
                        "notifiers[0].events[0]");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"a b\", \"url\": \"http://h\", "
                                "\"secret\": \"0123456789abcdef\", \"events\": [\"*\"]}]}"),
                        "notifiers[0].name");
    assert_string_equal(refusal("{\"notifiers\": [{\"name\": \"n\", \"url\": \"http://h\", "
                                "\"secret\": \"0123456789abcdef\", \"events\": [\"*\"]}, "
                                "{\"name\": \"n\", \"url\": \"http://g\", "
                                "\"secret\": \"0123456789abcdef\", \"events\": [\"*\"]}]}"),
                        "notifiers[1].name");
}

static Notifier wanting(char **kinds, int n)
{
    Notifier nt = {.n_kinds = n};
    for (int i = 0; i < n; i++)
        nt.kinds[i] = kinds[i];
    return nt;
}

static void test_wants(void **state)
{
    (void)state;
    char *a[] = {"experiment.ended", "trial"};
    Notifier n = wanting(a, 2);
    assert_true(notify_wants(&n, "experiment.ended"));
    assert_false(notify_wants(&n, "experiment.ended_x"));
    assert_false(notify_wants(&n, "experiment.failed"));
    assert_true(notify_wants(&n, "trial.failed"));
    assert_false(notify_wants(&n, "trials.failed"));
    char *all[] = {"*"};
    n = wanting(all, 1);
    assert_true(notify_wants(&n, "worker.gone"));
}

static void test_text_and_bodies(void **state)
{
    (void)state;
    json_t *ev = json_loads("{\"id\": 9, \"kind\": \"experiment.failed\", \"experiment_id\": 3, "
                            "\"trial_id\": null, \"actor\": {\"kind\": \"rungd\", \"name\": "
                            "\"rungd\"}, \"detail\": {\"state\": \"failed\", \"reason\": "
                            "\"max_failed_trials\", \"error\": \"5 trials failed\"}}",
                            0, NULL);
    assert_non_null(ev);
    char *text = notify_text(ev);
    assert_string_equal(text, "Rung: experiment 3 failed (failed, max_failed_trials): 5 trials "
                              "failed");
    char *slack = notify_body(ev, NOTIFY_SLACK);
    json_t *b = json_loads(slack, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(b, "text")), text);
    assert_true(json_equal(json_object_get(b, "event"), ev));
    assert_int_equal(json_object_size(b), 2);
    json_decref(b);
    char *plain = notify_body(ev, NOTIFY_JSON);
    b = json_loads(plain, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(b, "text")), text);
    json_object_del(b, "text");
    assert_true(json_equal(b, ev));
    json_decref(b);
    free(text);
    free(slack);
    free(plain);
    json_decref(ev);
}

static char *line(const char *event)
{
    json_t *ev = json_loads(event, 0, NULL);
    assert_non_null(ev);
    char *text = notify_text(ev);
    json_decref(ev);
    return text;
}

/* One line per kind of event: the subject, the state and reason when the
 * detail has them, who did it when not rungd itself, the error. */
static void test_text_lines(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"{\"kind\": \"experiment.ended\", \"experiment_id\": 3, \"actor\": {\"name\": "
         "\"rungd\"}, \"detail\": {\"state\": \"completed\", \"reason\": \"all_trials_ended\"}}",
         "Rung: experiment 3 ended (completed, all_trials_ended)"},
        {"{\"kind\": \"experiment.paused\", \"experiment_id\": 4, \"actor\": {\"kind\": "
         "\"user\", \"name\": \"alice\"}, \"detail\": {}}",
         "Rung: experiment 4 paused by alice"},
        {"{\"kind\": \"trial.failed\", \"experiment_id\": 4, \"trial_id\": 17, \"detail\": "
         "{\"error\": \"exit status 1\"}}",
         "Rung: trial 17 of experiment 4 failed: exit status 1"},
        {"{\"kind\": \"worker.gone\", \"worker_id\": 2}", "Rung: worker.gone"},
        {"{}", "Rung: event"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = line(cases[i][0]);
        assert_string_equal(text, cases[i][1]);
        free(text);
    }
}

static void test_signature(void **state)
{
    (void)state;
    /* RFC 4231, test case 2. */
    const char *data = "what do ya want for nothing?";
    char sig[72];
    notify_signature("Jefe", data, strlen(data), sig);
    assert_string_equal(sig, "sha256=5bdcc146bf60754e6a042426089575c7"
                             "5a003f089d2739839dec58b964ec3843");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),          cmocka_unit_test(test_wants),
        cmocka_unit_test(test_text_and_bodies), cmocka_unit_test(test_text_lines),
        cmocka_unit_test(test_signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
