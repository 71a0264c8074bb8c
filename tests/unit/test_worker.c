/* Unit tests of worker/: argv substitution, the layered environment, slots
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argv.h"
#include "backoff.h"
#include "env.h"
#include "linebuf.h"
#include "runner.h"
#include "slots.h"
#include "tail.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv_value_types),
        cmocka_unit_test(test_argv_real_round_trips),
        cmocka_unit_test(test_argv_subst),
        cmocka_unit_test(test_argv_expand),
        cmocka_unit_test(test_env_layers),
        cmocka_unit_test(test_env_json_checked),
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
