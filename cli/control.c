/* Steering a running search: pause, resume, extend, set, stop-trial,
 * delete, retry, and a trial's log (docs/api.md, "Experiments" and
 * "Command lines"). Each is one request; what the daemon answers is shown
 * in a line. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "fmt.h"

/* logs --follow polls at most this often and at least this rarely, as
 * watch does. */
#define INTERVAL_MIN_S 0.1
#define INTERVAL_MAX_S 3600.0

/* "experiment 3: paused (2 running, 5 pending)". */
static void print_state(const json_t *x)
{
    printf("experiment %" PRId64 ": %s (", cli_fmt_int(x, "id", 0), cli_fmt_str(x, "state", "?"));
    cli_fmt_counts(stdout, json_object_get(x, "counts"));
    printf(")\n");
}

/* POST path of an experiment, printing its new state. */
static int post_experiment(CliRest *h, const char *path)
{
    CliError err;
    json_t *x;
    if (cli_rest_json(h, "POST", path, NULL, 0, &x, &err) != 0)
        return cli_cmd_fail(h, &err);
    print_state(x);
    json_decref(x);
    return CLI_EXIT_OK;
}

int cli_cmd_pause(CliRest *h, int argc, char **argv)
{
    bool running = cli_cmd_take_flag(&argc, argv, "--running");
    int64_t id;
    if (argc != 1 || cli_cmd_parse_id("pause", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/pause%s", id,
             running ? "?running=pause" : "");
    int rc = post_experiment(h, path);
    if (rc == CLI_EXIT_OK)
        printf(running ? "running trials pause at their next report and resume from their "
                         "checkpoints with 'rung resume %" PRId64 "'\n"
                       : "running trials run to their end; 'rung resume %" PRId64
                         "' leases the rest\n",
               id);
    return rc;
}

int cli_cmd_resume(CliRest *h, int argc, char **argv)
{
    int64_t id;
    if (argc != 1 || cli_cmd_parse_id("resume", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/resume", id);
    return post_experiment(h, path);
}

/* PATCH an experiment with body (a JSON object, stolen). */
static int patch(CliRest *h, int64_t id, json_t *body)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64, id);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    CliError err;
    json_t *x;
    int rc = cli_rest_json(h, "PATCH", path, text, text ? strlen(text) : 0, &x, &err);
    free(text);
    if (rc != 0)
        return cli_cmd_fail(h, &err);
    print_state(x);
    printf("  num_samples %" PRId64 " (%" PRId64 " trials in all), priority %" PRId64
           ", share %g, max_concurrent_trials %" PRId64 "\n",
           cli_fmt_int(x, "num_samples", 0), cli_fmt_int(x, "total_trials", 0),
           cli_fmt_int(x, "priority", 0), json_number_value(json_object_get(x, "share")),
           cli_fmt_int(x, "max_concurrent_trials", 0));
    json_decref(x);
    return CLI_EXIT_OK;
}

/* A number argument: the whole of arg. */
static bool parse_number(const char *command, const char *what, const char *arg, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(arg, &end);
    if (arg[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(*out)) {
        char shown[64];
        cli_fmt_sanitize(arg, shown, sizeof shown, false);
        fprintf(stderr, "rung: %s: %s must be a number, got '%s'\n", command, what, shown);
        return false;
    }
    return true;
}

int cli_cmd_extend(CliRest *h, int argc, char **argv)
{
    int64_t id, n;
    if (argc != 2 || cli_cmd_parse_id("extend", argv[0], &id) != 0 ||
        cli_cmd_parse_id("extend", argv[1], &n) != 0)
        return CLI_EXIT_USAGE;
    return patch(h, id, json_pack("{s:I}", "num_samples", (json_int_t)n));
}

int cli_cmd_set(CliRest *h, int argc, char **argv)
{
    static const struct {
        const char *flag, *key;
        bool integer;
    } opts[] = {{"--priority", "priority", true},
                {"--max-concurrent", "max_concurrent_trials", true},
                {"--share", "share", false},
                {"--num-samples", "num_samples", true}};
    int64_t id;
    if (argc < 2 || cli_cmd_parse_id("set", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    json_t *body = json_object();
    for (int i = 1; i < argc; i++) {
        /* "--priority 5" or "--priority=5" */
        const char *eq = strchr(argv[i], '=');
        size_t name_len = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
        size_t k = 0;
        while (k < sizeof opts / sizeof opts[0] &&
               !(strlen(opts[k].flag) == name_len && strncmp(argv[i], opts[k].flag, name_len) == 0))
            k++;
        if (k == sizeof opts / sizeof opts[0]) {
            char shown[64];
            cli_fmt_sanitize(argv[i], shown, sizeof shown, false);
            fprintf(stderr, "rung: set: unknown option '%s'\n", shown);
            json_decref(body);
            return CLI_EXIT_USAGE;
        }
        const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        double v;
        if (val == NULL || !parse_number("set", opts[k].flag, val, &v)) {
            json_decref(body);
            return CLI_EXIT_USAGE;
        }
        /* The daemon checks the bounds and names the field; a whole number
         * goes as a JSON integer (4, not 4.0) where the field is one. */
        json_object_set_new(body, opts[k].key,
                            opts[k].integer && fabs(v) < 1e15 && v == (double)(json_int_t)v
                                ? json_integer((json_int_t)v)
                                : json_real(v));
    }
    return patch(h, id, body);
}

int cli_cmd_stop_trial(CliRest *h, int argc, char **argv)
{
    int64_t id;
    if (argc != 1 || cli_cmd_parse_id("stop-trial", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/trials/%" PRId64 "/stop", id);
    CliError err;
    json_t *t;
    if (cli_rest_json(h, "POST", path, NULL, 0, &t, &err) != 0)
        return cli_cmd_fail(h, &err);
    const char *state = cli_fmt_str(t, "state", "?");
    if (strcmp(state, "running") == 0)
        printf("trial %" PRId64 ": stops at its next report or heartbeat\n", id);
    else
        printf("trial %" PRId64 ": %s\n", id, state);
    json_decref(t);
    return CLI_EXIT_OK;
}

int cli_cmd_delete(CliRest *h, int argc, char **argv)
{
    int64_t id;
    if (argc != 1 || cli_cmd_parse_id("delete", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64, id);
    CliError err;
    json_t *r;
    if (cli_rest_json(h, "DELETE", path, NULL, 0, &r, &err) != 0)
        return cli_cmd_fail(h, &err);
    printf("experiment %" PRId64 " deleted, with its %" PRId64 " trials and their reports\n", id,
           cli_fmt_int(r, "trials", 0));
    json_decref(r);
    return CLI_EXIT_OK;
}

int cli_cmd_retry(CliRest *h, int argc, char **argv)
{
    int64_t id;
    if (argc != 1 || cli_cmd_parse_id("retry", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/retry-failed", id);
    CliError err;
    json_t *r;
    if (cli_rest_json(h, "POST", path, NULL, 0, &r, &err) != 0)
        return cli_cmd_fail(h, &err);
    int64_t n = cli_fmt_int(r, "retried", 0);
    printf("%" PRId64 " failed trial%s back in line\n", n, n == 1 ? "" : "s");
    print_state(json_object_get(r, "experiment"));
    json_decref(r);
    return CLI_EXIT_OK;
}

/* Prints len bytes of text, sanitized (it is the trainable's output: no
 * escape sequence reaches the terminal) with its newlines kept, so a line
 * the trainable has not ended yet goes on where the next poll adds to it.
 * Sanitizing never lengthens text. Returns the last byte printed, or 0. */
static char print_log(const char *text, size_t len)
{
    if (len == 0)
        return 0;
    char *raw = malloc(len + 1), *clean = malloc(len + 1);
    if (raw == NULL || clean == NULL)
        abort();
    memcpy(raw, text, len);
    raw[len] = '\0'; /* a NUL inside the tail ends it, as it would any C string */
    cli_fmt_sanitize(raw, clean, len + 1, true);
    fputs(clean, stdout);
    size_t n = strlen(clean);
    char last = n > 0 ? clean[n - 1] : 0;
    free(raw);
    free(clean);
    return last;
}

/* How much of new's head repeats old's tail: the tail is a window that
 * slides over the log, so the new lines are what follows the overlap. */
static size_t overlap(const char *old, size_t old_len, const char *new, size_t new_len)
{
    for (size_t k = old_len < new_len ? old_len : new_len; k > 0; k--)
        if (memcmp(old + old_len - k, new, k) == 0)
            return k;
    return 0;
}

static bool trial_over(const char *state)
{
    return strcmp(state, "completed") == 0 || strcmp(state, "stopped") == 0 ||
           strcmp(state, "failed") == 0 || strcmp(state, "canceled") == 0;
}

/* A followed trial that ended without its result (failed, or canceled with
 * its experiment) makes logs --follow exit CLI_EXIT_TRIAL_FAILED, so that
 * `rung logs 17 -f && next-step` stops there (docs/api.md, "rung"); stderr
 * says how it ended and its error in one line (error_summary: the exit and
 * the exception line). */
static int trial_outcome(int64_t id, const json_t *t)
{
    const char *state = cli_fmt_str(t, "state", "");
    if (strcmp(state, "failed") != 0 && strcmp(state, "canceled") != 0)
        return CLI_EXIT_OK;
    const char *error = cli_fmt_str(t, "error_summary", NULL);
    if (error == NULL)
        error = cli_fmt_str(t, "error", ""); /* an older rungd: its first line */
    char line[256], clean[256];
    size_t n = strcspn(error, "\n");
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, error, n);
    line[n] = '\0';
    cli_fmt_sanitize(line, clean, sizeof clean, false);
    fflush(stdout);
    fprintf(stderr, "rung: trial %" PRId64 " %s%s%s\n", id, state, clean[0] != '\0' ? ": " : "",
            clean);
    return CLI_EXIT_TRIAL_FAILED;
}

/* logs' arguments: TRIAL_ID, --follow (-f), --interval S (--interval=S),
 * in any order. Returns -1 when they are wrong. */
static int logs_args(int argc, char **argv, int64_t *id, bool *follow, double *interval)
{
    const char *id_arg = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (strcmp(a, "--follow") == 0 || strcmp(a, "-f") == 0)
            *follow = true;
        else if (strcmp(a, "--interval") == 0 && i + 1 < argc)
            val = argv[++i];
        else if (strncmp(a, "--interval=", 11) == 0)
            val = a + 11;
        else if (id_arg == NULL && a[0] != '-')
            id_arg = a;
        else
            return -1;
        if (val != NULL && (!parse_number("logs", "--interval", val, interval) ||
                            !(*interval >= INTERVAL_MIN_S && *interval <= INTERVAL_MAX_S))) {
            fprintf(stderr, "rung: logs: --interval is %g to %g seconds\n", INTERVAL_MIN_S,
                    INTERVAL_MAX_S);
            return -1;
        }
    }
    if (id_arg == NULL)
        return -1;
    return cli_cmd_parse_id("logs", id_arg, id);
}

int cli_cmd_logs(CliRest *h, int argc, char **argv)
{
    bool follow = false;
    double interval = 1.0;
    int64_t id;
    if (logs_args(argc, argv, &id, &follow, &interval) != 0)
        return CLI_EXIT_USAGE;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/trials/%" PRId64, id);
    char *shown = NULL; /* the tail printed so far */
    size_t shown_len = 0;
    int64_t shown_attempt = 0; /* the attempt whose log that is */
    bool anew = false;         /* a new attempt's next tail is printed whole */
    char last = 0;             /* the last byte printed */
    int rc = CLI_EXIT_OK;
    for (;;) {
        CliError err;
        json_t *t;
        if (cli_rest_json(h, "GET", path, NULL, 0, &t, &err) != 0) {
            if (follow && shown != NULL && cli_error_transient(&err))
                goto wait; /* rungd restarting: the log is kept, so go on */
            if (last != 0 && last != '\n')
                putchar('\n');
            free(shown);
            return cli_cmd_fail(h, &err);
        }
        const char *text = cli_fmt_str(t, "log_tail", "");
        size_t len = strlen(text);
        int64_t attempt = cli_fmt_int(t, "attempt", 0);
        if (shown != NULL && attempt != shown_attempt) {
            /* A retry runs the trainable again: its log starts anew (the
             * tail stays the last attempt's until the new one sends one). */
            if (last != 0 && last != '\n')
                putchar('\n');
            fflush(stdout);
            fprintf(stderr, "rung: trial %" PRId64 ": attempt %" PRId64 "\n", id, attempt);
            shown_attempt = attempt;
            anew = true;
        }
        /* Nothing new: the tail printed, or, within one attempt, part of it
         * (an older tail: rungd restarted and lost the lines sent since it
         * last stored the trial). What was printed stays the reference, so
         * no line is printed twice. */
        bool stale = shown != NULL && (anew ? len == shown_len && memcmp(shown, text, len) == 0
                                            : memmem(shown, shown_len, text, len) != NULL);
        if (!stale) {
            size_t skip = shown != NULL && !anew ? overlap(shown, shown_len, text, len) : 0;
            char c = print_log(text + skip, len - skip);
            if (c != 0)
                last = c;
            free(shown);
            shown = strdup(text);
            if (shown == NULL)
                abort();
            shown_len = len;
            shown_attempt = attempt;
            anew = false;
        }
        fflush(stdout);
        const char *state = cli_fmt_str(t, "state", "");
        bool over = trial_over(state);
        if (follow && over) {
            if (last != 0 && last != '\n')
                putchar('\n');
            last = 0;
            rc = trial_outcome(id, t);
        }
        json_decref(t);
        if (!follow || over)
            break;
    wait:;
        struct timespec ts = {(time_t)interval,
                              (long)((interval - (double)(time_t)interval) * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (last != 0 && last != '\n')
        putchar('\n'); /* the prompt on a line of its own */
    free(shown);
    return rc;
}
