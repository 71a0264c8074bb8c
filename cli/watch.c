/* `rung watch ID`: an experiment's live status, redrawn every second, in
 * the manner of Ray Tune's CLIReporter: a header (name, state, progress
 * bar, counts, best trial) over a table with one row per trial.
 *
 * Polling is incremental, as the dashboard's is: the experiment object is
 * fetched on each tick (it is small), but trials are fetched only from the
 * first one that may still change. Trials are listed in creation order and
 * a trial in a terminal state never changes again (a retry puts a trial back
 * to pending before it would fail), so the finished prefix of the list is
 * never fetched twice.
 *
 * On a terminal the frame is redrawn in place; otherwise (a log file, a CI
 * job) a new snapshot is printed only when something changed, so the log
 * stays readable. A daemon that goes away is waited for ("reconnecting"),
 * because a restart keeps every experiment; only an error that retrying
 * cannot fix (unknown experiment, wrong token) ends the watch. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "commands.h"
#include "fmt.h"
#include "table.h"
#include "view.h"

/* docs/api.md's largest page: the fewest round trips per tick. */
#define PAGE 1000
/* Rows of the trial table at most; on a terminal fewer when it is short. */
#define DEFAULT_ROWS 30
/* Fewest rows shown even on a tiny terminal: less tells nothing. */
#define MIN_ROWS 5
/* Lines of the frame besides the table rows (header, best, table borders,
 * "… N more", errors, status), used to fit the table to the terminal. */
#define FRAME_LINES 16
/* Failed trials whose error is shown under the table. */
#define ERRORS_SHOWN 3
/* Longest error text shown: the first line of it, cut. */
#define ERROR_WIDTH 160
/* How long the daemon may stay unreachable before the watch gives up: long
 * enough for a restart or a short network outage, short enough that a
 * script watching a dead daemon ends. */
#define GIVE_UP_S 600
/* Bounds of --interval: faster than 0.1 s only loads the daemon; slower
 * than an hour is not watching. */
#define INTERVAL_MIN_S 0.1
#define INTERVAL_MAX_S 3600.0

/* The trials seen so far, in list (creation) order. */
typedef struct {
    json_t **items; /* trial objects, owned; items[i] is list position i */
    size_t n, cap;
    size_t open; /* first position whose trial is not yet terminal */
} TrialCache;

typedef struct {
    CliRest *h;
    int64_t id;
    bool tty;
    double interval_s;
    int max_rows;
    json_t *exp; /* the last experiment object, owned; NULL before the first */
    TrialCache cache;
    char *shown;  /* the last frame printed when not a TTY (for "changed?") */
    bool cleared; /* the screen was cleared once (TTY) */
} Watch;

static bool terminal_state(const char *s)
{
    return s && (strcmp(s, "completed") == 0 || strcmp(s, "stopped") == 0 ||
                 strcmp(s, "failed") == 0 || strcmp(s, "canceled") == 0);
}

static bool experiment_over(const json_t *exp)
{
    const char *s = cli_fmt_str(exp, "state", "");
    return strcmp(s, "completed") == 0 || strcmp(s, "canceled") == 0 ||
           strcmp(s, "failed") == 0; /* paused is not over: it can be resumed */
}

static void cache_put(TrialCache *c, size_t pos, json_t *trial)
{
    while (pos >= c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->items = cli_xrealloc(c->items, c->cap * sizeof *c->items);
    }
    while (c->n <= pos)
        c->items[c->n++] = NULL;
    json_decref(c->items[pos]);
    c->items[pos] = json_incref(trial);
}

static void cache_truncate(TrialCache *c, size_t n)
{
    while (c->n > n)
        json_decref(c->items[--c->n]);
    if (c->open > n)
        c->open = n;
}

static void cache_free(TrialCache *c)
{
    cache_truncate(c, 0);
    free(c->items);
}

/* One tick's requests: the experiment, then the trials from the first open
 * one to the end of the list. */
static int poll_once(Watch *w, CliError *err)
{
    char path[160];
    snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64, w->id);
    json_t *exp;
    if (cli_rest_json(w->h, "GET", path, NULL, 0, &exp, err) != 0)
        return -1;
    json_decref(w->exp);
    w->exp = exp;
    TrialCache *c = &w->cache;
    for (size_t offset = c->open;;) {
        snprintf(path, sizeof path, "/api/v1/experiments/%" PRId64 "/trials?limit=%d&offset=%zu",
                 w->id, PAGE, offset);
        json_t *page;
        if (cli_rest_json(w->h, "GET", path, NULL, 0, &page, err) != 0)
            return -1;
        json_t *items = json_object_get(page, "items");
        int64_t total = cli_fmt_int(page, "total", 0);
        size_t i;
        json_t *t;
        json_array_foreach(items, i, t) {
            cache_put(c, offset + i, t);
        }
        size_t got = json_array_size(items);
        json_decref(page); /* items went with it */
        offset += got;
        /* Fewer trials than we hold: the daemon was restarted on another
         * database; believe it. */
        if (total >= 0 && (size_t)total < c->n)
            cache_truncate(c, (size_t)total);
        if (got == 0 || total < 0 || offset >= (size_t)total)
            break;
    }
    while (c->open < c->n && c->items[c->open] != NULL &&
           terminal_state(cli_fmt_str(c->items[c->open], "state", NULL)))
        c->open++;
    return 0;
}

/* Display order of the table: running trials first (oldest first), then
 * those that ended, most recent first, then pending ones in the order they
 * will run. */
static int rank(const json_t *t)
{
    const char *s = cli_fmt_str(t, "state", "");
    if (strcmp(s, "running") == 0)
        return 0;
    return terminal_state(s) ? 1 : 2;
}

static int by_display(const void *pa, const void *pb)
{
    const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    int ra = rank(a), rb = rank(b);
    if (ra != rb)
        return ra - rb;
    int64_t na = cli_fmt_int(a, "number", 0), nb = cli_fmt_int(b, "number", 0);
    if (ra == 1) {
        /* RFC 3339 times of one format compare as strings. */
        int c = strcmp(cli_fmt_str(b, "ended_at", ""), cli_fmt_str(a, "ended_at", ""));
        if (c != 0)
            return c;
        return nb < na ? -1 : nb > na;
    }
    return na < nb ? -1 : na > nb;
}

static void terminal_size(int *rows, int *cols)
{
    struct winsize ws;
    *rows = 24;
    *cols = 80;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    }
}

/* "… 12 more (8 pending, 4 completed)": what the cut rows hold. */
static void more_what(json_t *const *rows, size_t from, size_t n, char *buf, size_t size)
{
    size_t o = (size_t)snprintf(buf, size, "(");
    const char *sep = "";
    for (int s = 0; s < CLI_FMT_N_STATES && o < size; s++) {
        size_t k = 0;
        for (size_t i = from; i < n; i++)
            k += strcmp(cli_fmt_str(rows[i], "state", ""), cli_fmt_states[s]) == 0;
        if (k > 0) {
            o += (size_t)snprintf(buf + o, size - o, "%s%zu %s", sep, k, cli_fmt_states[s]);
            sep = ", ";
        }
    }
    if (o < size)
        snprintf(buf + o, size - o, ")");
}

/* The last non-empty line of an error: a worker sends the last lines of
 * the trial's stderr, and a traceback ends with what went wrong. */
static const char *last_line(const char *e, size_t *len)
{
    const char *end = e + strlen(e);
    while (end > e && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > e && start[-1] != '\n')
        start--;
    *len = (size_t)(end - start);
    return start;
}

/* The most recent errors of failed trials, one line each. */
static void print_errors(FILE *out, json_t *const *rows, size_t n)
{
    int shown = 0;
    for (size_t i = 0; i < n && shown < ERRORS_SHOWN; i++) {
        const char *e = cli_fmt_str(rows[i], "error", NULL);
        if (e == NULL || strcmp(cli_fmt_str(rows[i], "state", ""), "failed") != 0)
            continue;
        if (shown++ == 0)
            fputs("errors:\n", out);
        size_t len;
        const char *line = last_line(e, &len);
        char cut[ERROR_WIDTH + 8], text[ERROR_WIDTH + 8];
        snprintf(cut, sizeof cut, "%.*s", (int)(len < ERROR_WIDTH ? len : ERROR_WIDTH), line);
        cli_fmt_sanitize(cut, text, sizeof text, false);
        fprintf(out, "  trial %" PRId64 ": %s%s\n", cli_fmt_int(rows[i], "id", 0), text,
                len > ERROR_WIDTH ? "…" : "");
    }
}

/* The whole picture of one tick, as text. status (may be NULL) is shown
 * last, for "(reconnecting…)". */
static char *render(Watch *w, int max_rows, const char *status)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == NULL)
        return cli_xstrdup("");
    const json_t *x = w->exp;
    char name[256], buf[CLI_FMT_VALUE_MAX];
    cli_fmt_sanitize(cli_fmt_str(x, "name", ""), name, sizeof name, false);
    fprintf(out, "== experiment %" PRId64 ": %s (%s) ==\n", w->id, name,
            cli_fmt_str(x, "state", "?"));
    cli_fmt_sanitize(cli_fmt_str(x, "metric", "?"), buf, sizeof buf, false);
    fprintf(out, "metric %s (%s), searcher %s, scheduler %s\n", buf, cli_fmt_str(x, "mode", "?"),
            cli_fmt_str(json_object_get(x, "searcher"), "type", "random"),
            cli_fmt_str(json_object_get(x, "scheduler"), "type", "fifo"));
    cli_view_progress(out, x);
    cli_view_best(out, x, "");
    fputc('\n', out);

    size_t n = 0;
    json_t **rows = cli_xmalloc((w->cache.n ? w->cache.n : 1) * sizeof *rows);
    for (size_t i = 0; i < w->cache.n; i++)
        if (w->cache.items[i] != NULL)
            rows[n++] = w->cache.items[i];
    qsort(rows, n, sizeof *rows, by_display);
    size_t shown = n < (size_t)max_rows ? n : (size_t)max_rows;
    /* Cutting one row to say "… 1 more" saves nothing. */
    if (shown + 1 == n)
        shown = n;
    if (n == 0) {
        fputs("no trials yet\n", out);
    } else {
        char what[200] = "";
        if (shown < n)
            more_what(rows, shown, n, what, sizeof what);
        cli_view_trials(out, x, rows, shown, CLI_TABLE_BOXED, n - shown, what);
    }
    print_errors(out, rows, n);
    free(rows);
    if (status != NULL)
        fprintf(out, "%s\n", status);
    fclose(out);
    return text;
}

/* Writes a frame on the terminal over the last one: each line cut to the
 * width (a wrapped line would shift everything below it) and cleared to its
 * end, then the rest of the screen cleared. */
static void draw_tty(Watch *w, const char *frame, int cols)
{
    if (!w->cleared) {
        fputs("\033[2J", stdout); /* once: later frames overwrite in place */
        w->cleared = true;
    }
    fputs("\033[H", stdout);
    for (const char *p = frame; *p;) {
        size_t len = strcspn(p, "\n");
        size_t keep = cli_fmt_prefix(p, len, cols > 1 ? (size_t)cols - 1 : 1);
        fwrite(p, 1, keep, stdout);
        fputs("\033[K\n", stdout);
        p += len + (p[len] == '\n');
    }
    fputs("\033[J", stdout);
    fflush(stdout);
}

/* Shows the current state: on a terminal always (in place), elsewhere only
 * when it differs from the last snapshot printed. */
static void show(Watch *w, const char *status)
{
    if (w->exp == NULL) {
        if (status) {
            printf("%s\n", status);
            fflush(stdout);
        }
        return;
    }
    if (w->tty) {
        int rows, cols;
        terminal_size(&rows, &cols);
        int fit = rows - FRAME_LINES;
        int max_rows = fit < w->max_rows ? fit : w->max_rows;
        char stamp[RUNG_TIME_LEN], line[RUNG_TIME_LEN + 64];
        if (status == NULL) {
            /* A clock that moves tells the user the picture is live. */
            rung_time_format(rung_now_ms(), stamp, sizeof stamp);
            snprintf(line, sizeof line, "updated %s, every %gs; Ctrl-C to stop", stamp,
                     w->interval_s);
            status = line;
        }
        char *frame = render(w, max_rows < MIN_ROWS ? MIN_ROWS : max_rows, status);
        draw_tty(w, frame, cols);
        free(frame);
        return;
    }
    char *frame = render(w, w->max_rows, NULL);
    if (w->shown != NULL && strcmp(frame, w->shown) == 0) {
        free(frame);
        return;
    }
    char stamp[RUNG_TIME_LEN];
    rung_time_format(rung_now_ms(), stamp, sizeof stamp);
    printf("%s[%s]\n%s", w->shown ? "\n" : "", stamp, frame);
    fflush(stdout);
    free(w->shown);
    w->shown = frame;
}

/* Sleeps until `deadline_ns` of the monotonic clock. */
static void sleep_until(int64_t deadline_ns)
{
    for (;;) {
        int64_t left = deadline_ns - rung_mono_ns();
        if (left <= 0)
            return;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        if (nanosleep(&ts, NULL) == 0)
            return;
        if (errno != EINTR)
            return;
    }
}

static int parse_args(Watch *w, int argc, char **argv)
{
    const char *id_arg = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if ((strcmp(a, "--interval") == 0 || strcmp(a, "--rows") == 0) && i + 1 < argc)
            val = argv[++i];
        else if (strncmp(a, "--interval=", 11) == 0 || strncmp(a, "--rows=", 7) == 0)
            val = strchr(a, '=') + 1;
        if (val != NULL) {
            char *end;
            double v = strtod(val, &end);
            if (*end != '\0' || end == val)
                return -1;
            if (strncmp(a, "--interval", 10) == 0) {
                if (!(v >= INTERVAL_MIN_S && v <= INTERVAL_MAX_S))
                    return -1;
                w->interval_s = v;
            } else {
                if (!(v >= 1 && v <= 100000) || v != (int)v)
                    return -1;
                w->max_rows = (int)v;
            }
        } else if (id_arg == NULL && a[0] != '-') {
            id_arg = a;
        } else {
            return -1;
        }
    }
    if (id_arg == NULL)
        return -1;
    return cli_cmd_parse_id("watch", id_arg, &w->id);
}

int cli_cmd_watch(CliRest *h, int argc, char **argv)
{
    Watch w;
    memset(&w, 0, sizeof w);
    w.h = h;
    w.interval_s = 1.0;
    w.max_rows = DEFAULT_ROWS;
    if (parse_args(&w, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    w.tty = isatty(STDOUT_FILENO) == 1;
    int rc = CLI_EXIT_ERROR;
    bool reached = false;    /* the daemon has answered at least once */
    int64_t down_since = -1; /* monotonic ns of the first failure in a row */
    const int64_t step_ns = (int64_t)(w.interval_s * 1e9);
    for (int64_t next = rung_mono_ns();; next += step_ns) {
        CliError err;
        if (poll_once(&w, &err) == 0) {
            if (down_since >= 0 && !w.tty) {
                printf("(reconnected)\n");
                fflush(stdout);
            }
            reached = true;
            down_since = -1;
            if (experiment_over(w.exp)) {
                char done[96];
                snprintf(done, sizeof done, "experiment %" PRId64 " %s", w.id,
                         cli_fmt_str(w.exp, "state", ""));
                show(&w, w.tty ? done : NULL); /* the final picture, once */
                rc = CLI_EXIT_OK;
                break;
            }
            show(&w, NULL);
        } else if (cli_error_transient(&err) && (reached || err.kind != CLI_ERR_CONNECT)) {
            /* A daemon that never answered is more likely a wrong URL than
             * a restart: that fails at once, below. */
            int64_t now = rung_mono_ns();
            if (down_since < 0) {
                down_since = now;
                if (!w.tty) {
                    printf("(reconnecting… %s)\n", err.message);
                    fflush(stdout);
                }
            }
            if (w.tty) {
                char status[sizeof err.message + 32];
                snprintf(status, sizeof status, "(reconnecting… %s)", err.message);
                show(&w, status);
            }
            if (now - down_since > (int64_t)GIVE_UP_S * 1000000000) {
                fprintf(stderr, "rung: watch: gave up after %d s without an answer\n", GIVE_UP_S);
                cli_cmd_fail(h, &err);
                break;
            }
        } else {
            cli_cmd_fail(h, &err);
            break;
        }
        /* A tick that overran (a slow daemon) does not make the next ones
         * come in a burst. */
        int64_t now = rung_mono_ns();
        if (next + step_ns < now)
            next = now;
        sleep_until(next + step_ns);
    }
    json_decref(w.exp);
    cache_free(&w.cache);
    free(w.shown);
    return rc;
}
