/* rungd: the scheduler daemon. Parses its options from one table, opens the
 * store, loads the state, starts the engine and the HTTP front, and runs
 * until SIGINT or SIGTERM, then shuts down cleanly: parked long polls are
 * answered, requests in flight complete, and the last batch commits. Running
 * trials keep their leases and are picked up again after a restart. */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api.h"
#include "blascore.h"
#include "ckptstore.h"
#include "clock.h"
#include "core.h"
#include "engine.h"
#include "gp.h"
#include "http.h"
#include "http_tls.h"
#include "log.h"
#include "migrate.h"
#include "notify.h"
#include "options.h"
#include "sdnotify.h"
#include "standby.h"
#include "secret.h"
#include "stats.h"
#include "store.h"

#ifndef RUNG_WEB_DIR
#define RUNG_WEB_DIR "web"
#endif
/* Set on the process that blascore_pick re-executed. */
#define BLAS_PICKED_ENV "RUNGD_BLAS_CORE_PICKED"

static int signal_pipe[2];

static void on_signal(int signo)
{
    int saved = errno;
    unsigned char b = (unsigned char)signo;
    if (write(signal_pipe[1], &b, 1) < 0) {
        /* The pipe is full: a shutdown is already on its way. */
    }
    errno = saved;
}

enum {
    O_BIND,
    O_PORT,
    O_DB,
    O_DATABASE,
    O_DATABASE_FILE,
    O_ADVERTISE_URL,
    O_TOKEN,
    O_TOKEN_FILE,
    O_WEB_DIR,
    O_LEASE_S,
    O_MAX_BODY,
    O_DURABILITY,
    O_FORGET_WORKERS_S,
    O_DATA_DIR,
    O_MAX_CHECKPOINT_MB,
    O_MAX_BLOB_MB,
    O_BLOB_QUOTA_MB,
    O_ARTIFACT_QUOTA_MB,
    O_EVENT_RETENTION_DAYS,
    O_NOTIFY_FILE,
    O_TLS_CERT,
    O_TLS_KEY,
    O_INIT,
    O_CHECK,
    O__COUNT
};

/* The one table of options: validation and --help both come from it. */
static Option options[O__COUNT] = {
    [O_BIND] = {"bind", OPT_STRING, "127.0.0.1", 0, 0, 0,
                "address to listen on (non-loopback needs a token)"},
    [O_PORT] = {"port", OPT_INT, NULL, 8080, 0, 65535, "port; 0 picks a free one"},
    [O_DB] = {"db", OPT_STRING, "rung.db", 0, 0, 0, "SQLite database file"},
    [O_DATABASE] = {"database", OPT_STRING, NULL, 0, 0, 0,
                    "the store on PostgreSQL instead of --db: a postgresql:// URI or libpq "
                    "connection string without its password (that from ~/.pgpass or "
                    "PGPASSFILE, or use --database-file)"},
    [O_DATABASE_FILE] = {"database-file", OPT_STRING, NULL, 0, 0, 0,
                         "read --database from this file's first line, password included (not "
                         "shown by ps; keep it mode 600)"},
    [O_ADVERTISE_URL] = {"advertise-url", OPT_STRING, NULL, 0, 0, 0,
                         "with --database: the URL clients reach this rungd at, which a standby "
                         "names to them (default: http(s)://BIND:PORT, the host's name for a "
                         "wildcard --bind)"},
    [O_TOKEN] = {"token", OPT_STRING, NULL, 0, 0, 0,
                 "bearer token for /api/v1 (default: $RUNG_TOKEN)"},
    [O_TOKEN_FILE] = {"token-file", OPT_STRING, NULL, 0, 0, 0,
                      "read the bearer token from this file instead (not shown by ps); a second "
                      "line: an old token still accepted"},
    [O_WEB_DIR] = {"web-dir", OPT_STRING, RUNG_WEB_DIR, 0, 0, 0, "the dashboard's files"},
    [O_LEASE_S] = {"lease-s", OPT_INT, NULL, 30, 1, 3600,
                   "seconds without heartbeat before a trial's worker counts as lost"},
    [O_MAX_BODY] = {"max-body", OPT_INT, NULL, 1048576, 1024, 64 * 1048576LL,
                    "largest request body in bytes"},
    [O_DURABILITY] = {"durability", OPT_STRING, "normal", 0, 0, 0,
                      "normal (survives kill -9) or full (fsync per commit: power loss)"},
    [O_FORGET_WORKERS_S] = {"forget-workers-s", OPT_INT, NULL, 86400, 1, 10LL * 365 * 86400,
                            "gone workers leave GET /api/v1/workers after this many seconds"},
    [O_DATA_DIR] = {"data-dir", OPT_STRING, NULL, 0, 0, 0,
                    "folder for pbt's checkpoint copies (default: the database's folder)"},
    [O_MAX_CHECKPOINT_MB] = {"max-checkpoint-mb", OPT_INT, NULL, 1024, 1, 1048576,
                             "largest checkpoint a worker may upload, in MiB"},
    [O_MAX_BLOB_MB] = {"max-blob-mb", OPT_INT, NULL, 1024, 1, 1048576,
                       "largest working directory (blob) a client may upload, in MiB"},
    [O_BLOB_QUOTA_MB] = {"blob-quota-mb", OPT_INT, NULL, 20480, 1, 1LL << 30,
                         "MiB all blobs together may take in the data folder"},
    [O_ARTIFACT_QUOTA_MB] = {"artifact-quota-mb", OPT_INT, NULL, 20480, 1, 1LL << 30,
                             "MiB all trials' kept artifacts together may take in the data folder"},
    [O_EVENT_RETENTION_DAYS] = {"event-retention-days", OPT_INT, NULL, 90, 0, 36500,
                                "days the event log keeps an event (0: forever)"},
    [O_NOTIFY_FILE] = {"notify-file", OPT_STRING, NULL, 0, 0, 0,
                       "webhooks: a JSON file of notifiers (docs/operations.md, "
                       "\"Notifications\")"},
    [O_TLS_CERT] = {"tls-cert", OPT_STRING, NULL, 0, 0, 0,
                    "serve HTTPS with this PEM certificate chain (with --tls-key; re-read on "
                    "SIGHUP)"},
    [O_TLS_KEY] = {"tls-key", OPT_STRING, NULL, 0, 0, 0,
                   "the PEM private key of --tls-cert (unencrypted; keep it mode 600)"},
    [O_INIT] = {"init", OPT_FLAG, NULL, 0, 0, 0,
                "create the database where an earlier one is missing, or use one that an earlier "
                "run stopped using (--db's .fault); a first start needs no --init"},
    [O_CHECK] = {"check", OPT_FLAG, NULL, 0, 0, 0,
                 "check the database (--db) without changing it, print what was found, and exit: "
                 "0 sound, 1 damaged or missing"},
};

/* Exit status of a start refused for the database's sake (missing,
 * damaged, or stopped by an earlier run): an operator must look, so the
 * unit does not restart (RestartPreventExitStatus, packaging/systemd). */
#define EXIT_DATABASE 3

static bool keep_checkpoint(void *store, int64_t trial_id, int64_t step)
{
    return store_has_checkpoint(store, trial_id, step);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: rungd [options]\n\n");
    options_usage(out, options, O__COUNT);
}

/* The dashboard's files: installed, they sit in ../share/rung/web beside
 * the program's folder (/usr/bin/rungd, /usr/share/rung/web: packaging/
 * README.md); in a build tree, in the source tree's web/. */
static void default_web_dir(void)
{
    static char dir[PATH_MAX];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL)
        return;
    *slash = '\0';
    char index[PATH_MAX + 64];
    snprintf(index, sizeof index, "%s/../share/rung/web/index.html", exe);
    if (access(index, R_OK) == 0 &&
        snprintf(dir, sizeof dir, "%s/../share/rung/web", exe) < (int)sizeof dir)
        options[O_WEB_DIR].value = dir;
}

/* Whether a connection string carries a password: password=… or a URI's
 * user:password@. */
static bool has_password(const char *conninfo)
{
    if (strcasestr(conninfo, "password") != NULL)
        return true;
    const char *scheme = strstr(conninfo, "://");
    if (scheme == NULL)
        return false;
    const char *at = strchr(scheme + 3, '@');
    const char *colon = strchr(scheme + 3, ':');
    const char *slash = strchr(scheme + 3, '/');
    return at != NULL && colon != NULL && colon < at && (slash == NULL || at < slash);
}

/* --database-file's first line, or NULL after saying why. */
static const char *read_conninfo(const char *path)
{
    static char line[4096];
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "rungd: --database-file: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[got ? strcspn(line, "\r\n") : 0] = '\0';
    if (line[0] == '\0') {
        fprintf(stderr, "rungd: --database-file: %s holds no connection string\n", path);
        return NULL;
    }
    return line;
}

/* The URL this rungd is reached at, which a standby names to clients:
 * --advertise-url, else the scheme, --bind (the host's name for a
 * wildcard) and the port. */
static void advertise_url(char *out, size_t n, bool tls, int port)
{
    if (options[O_ADVERTISE_URL].value != NULL) {
        snprintf(out, n, "%s", options[O_ADVERTISE_URL].value);
        return;
    }
    const char *bind = options[O_BIND].value;
    char host[256];
    if (strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0) {
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = '\0';
    } else {
        snprintf(host, sizeof host, strchr(bind, ':') ? "[%s]" : "%s", bind);
    }
    snprintf(out, n, "%s://%s:%d", tls ? "https" : "http", host, port);
}

/* PostgreSQL: listens at once, and waits as a standby (standby.h) while
 * another rungd leads; *listen_fd is the socket the front serves on once
 * this one leads. 1: it leads; 0: a signal stopped it; -1: an error. */
static int lead_or_stand_by(Store *store, const char *token, bool tls, int *listen_fd)
{
    HttpConfig lcfg = {.bind = options[O_BIND].value,
                       .port = (int)options[O_PORT].ival,
                       .token = token};
    RungError err;
    int port;
    if (http_listen(&lcfg, listen_fd, &port, &err) != 0) {
        fprintf(stderr, "rungd: %s\n", err.message);
        return -1;
    }
    char me[512];
    advertise_url(me, sizeof me, tls, port);
    StoreLeader leader;
    int rc = store_leader_claim(store, me, &leader, &err);
    if (rc == 0) {
        /* Clients find a standby where they look for rungd: listening. */
        bool v6 = strchr(options[O_BIND].value, ':') != NULL;
        printf("listening on %s://%s%s%s:%d (standby)\n", tls ? "https" : "http", v6 ? "[" : "",
               options[O_BIND].value, v6 ? "]" : "", port);
        sdnotify_send("READY=1\nSTATUS=standby");
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGHUP);
        pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
        StandbyConfig sc = {.store = store,
                            .listen_fd = *listen_fd,
                            .me = me,
                            .stop_fd = signal_pipe[0]};
        rc = standby_run(&sc, &err);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    }
    if (rc < 0) {
        fprintf(stderr, "rungd: %s\n", err.message);
        return -1;
    }
    if (rc == 1)
        LOG_INFO("rungd: leads the database as %s (epoch %lld)", me,
                 (long long)store_leader_epoch(store));
    return rc;
}

static int check_args(void)
{
    if (options[O_DATABASE].value && options[O_DATABASE_FILE].value) {
        fprintf(stderr, "rungd: give --database or --database-file, not both\n");
        return -1;
    }
    if (options[O_DATABASE].value && has_password(options[O_DATABASE].value)) {
        fprintf(stderr, "rungd: --database: no password on the command line (every user sees it "
                        "with ps); put it in ~/.pgpass or the file of --database-file\n");
        return -1;
    }
    if ((options[O_DATABASE].value || options[O_DATABASE_FILE].value) &&
        options[O_DATA_DIR].value == NULL) {
        fprintf(stderr, "rungd: --database: give --data-dir too (the folder for checkpoints, "
                        "working directories and artifacts, which PostgreSQL does not hold)\n");
        return -1;
    }
    if ((options[O_DATABASE].value || options[O_DATABASE_FILE].value) &&
        options[O_CHECK].value != NULL) {
        fprintf(stderr, "rungd: --check reads a SQLite file (--db); check PostgreSQL with its own "
                        "tools (docs/operations.md, \"PostgreSQL\")\n");
        return -1;
    }
    if (options[O_TOKEN].value && options[O_TOKEN_FILE].value) {
        fprintf(stderr, "rungd: give --token or --token-file, not both\n");
        return -1;
    }
    const char *d = options[O_DURABILITY].value;
    if (strcmp(d, "normal") != 0 && strcmp(d, "full") != 0) {
        fprintf(stderr, "rungd: --durability must be normal or full, not '%s'\n", d);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* `rungd migrate`: a copy of a store, not a daemon (migrate.h). */
    if (argc >= 2 && strcmp(argv[1], "migrate") == 0)
        return migrate_main(argc - 1, argv + 1);
    default_web_dir();
    int parsed = options_parse("rungd", options, O__COUNT, argc, argv);
    if (parsed == 1) {
        usage(stdout);
        return 0;
    }
    if (parsed == 2)
        return 0; /* --version */
    if (parsed != 0 || check_args() != 0)
        return 2;
    if (options[O_CHECK].value != NULL)
        return store_check(options[O_DB].value, stdout);
    /* The bayes searcher's Gaussian process runs on OpenBLAS: its best
     * kernel for this CPU, which Debian's OpenBLAS may not know (a
     * re-execution; common/blascore.h), checked before it is trusted. */
    blascore_pick(argv, BLAS_PICKED_ENV);
    char blas_why[256];
    if (gp_check_blas(blas_why, sizeof blas_why) != 0) {
        if (blascore_picked(BLAS_PICKED_ENV)) {
            LOG_WARN(
                "rungd: the OpenBLAS core %s failed its check (%s); using OpenBLAS's own choice",
                getenv("OPENBLAS_CORETYPE"), blas_why);
            blascore_unpick(argv);
        }
        fprintf(stderr, "rungd: OpenBLAS gives wrong results: %s\n", blas_why);
        return 1;
    }
    LOG_INFO("rungd: OpenBLAS core %s (%s)", gp_blas_core(), blascore_origin(BLAS_PICKED_ENV));
    const char *token = options[O_TOKEN].value;
    /* The file may hold a second, older token, still accepted while a new
     * one is rotated in (docs/operations.md, "Rotate the token"). */
    static SecretToken file_tokens[SECRET_TOKENS_MAX];
    const char *old_token = NULL;
    if (options[O_TOKEN_FILE].value != NULL) {
        int n;
        if (secret_load_tokens("rungd", options[O_TOKEN_FILE].value, file_tokens, SECRET_TOKENS_MAX,
                               &n) != 0)
            return 2;
        token = file_tokens[0];
        old_token = n > 1 ? file_tokens[1] : NULL;
    }
    if (token == NULL)
        token = getenv("RUNG_TOKEN");

    /* Every connection holds a descriptor, up to 4,096 of them (http_internal.h),
     * beyond the soft limit of 1,024 that shells and services start with. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }

    /* SIGINT and SIGTERM write to a pipe that the main thread reads. A mask
     * alone is not enough: libraries start threads of their own before main
     * (OpenBLAS's pool), and a signal delivered to one of them must still
     * mean "shut down cleanly", never the default death. Our own threads
     * block the signals so that system calls there are not interrupted. */
    if (pipe(signal_pipe) != 0) {
        perror("rungd: pipe");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* re-read --tls-cert and --tls-key */
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    /* pbt's checkpoint copies sit beside the database unless told. */
    char data_dir[PATH_MAX];
    if (options[O_DATA_DIR].value != NULL) {
        snprintf(data_dir, sizeof data_dir, "%s", options[O_DATA_DIR].value);
    } else {
        snprintf(data_dir, sizeof data_dir, "%s", options[O_DB].value);
        char *slash = strrchr(data_dir, '/');
        if (slash == NULL)
            snprintf(data_dir, sizeof data_dir, ".");
        else if (slash == data_dir)
            slash[1] = '\0'; /* "/rung.db": the root */
        else
            *slash = '\0';
    }
    RungError err;
    rung_error_clear(&err);
    Store *store;
    StoreOptions sopt = {.durable_full = strcmp(options[O_DURABILITY].value, "full") == 0,
                         .init = options[O_INIT].value != NULL,
                         .data_dir = data_dir,
                         .pg_conninfo = options[O_DATABASE].value};
    if (options[O_DATABASE_FILE].value != NULL &&
        (sopt.pg_conninfo = read_conninfo(options[O_DATABASE_FILE].value)) == NULL)
        return 2;
    int rc = store_open(options[O_DB].value, &sopt, &store, &err);
    if (rc != 0) {
        fprintf(stderr, "rungd: %s\n", err.message);
        if (rc == RUNG_E_UNAVAILABLE && sopt.pg_conninfo != NULL)
            fprintf(stderr, "rungd: check that PostgreSQL runs and takes the connection string "
                            "of --database (docs/operations.md, \"PostgreSQL\")\n");
        else if (rc == RUNG_E_UNAVAILABLE)
            fprintf(stderr,
                    "rungd: nothing was changed; check the database with `rungd --check --db %s` "
                    "and see docs/operations.md, \"Recover the database\"\n",
                    options[O_DB].value);
        /* PostgreSQL that is not up yet (a reboot) is worth another try:
         * the unit restarts on 1, not on EXIT_DATABASE. */
        if (sopt.pg_conninfo != NULL)
            return 1;
        return rc == RUNG_E_NOT_FOUND || rc == RUNG_E_UNAVAILABLE ? EXIT_DATABASE : 1;
    }
    /* PostgreSQL: several rungd may share it; one leads, the others wait. */
    int listen_fd = -1;
    if (store_has_leader(store)) {
        int led = lead_or_stand_by(store, token, options[O_TLS_CERT].value != NULL, &listen_fd);
        if (led != 1) {
            store_close(store);
            return led == 0 ? 0 : 1;
        }
    }
    /* Copies nobody will fetch: dropped before a stop, never committed, or
     * half uploaded. */
    int swept = ckptstore_sweep(data_dir, keep_checkpoint, store);
    if (swept > 0)
        LOG_INFO("removed %d checkpoint file(s) no trial needs from %s/checkpoints", swept,
                 data_dir);
    int64_t lease_ms = options[O_LEASE_S].ival * 1000;
    Core *core = core_new(lease_ms);
    if (core == NULL || store_load(store, core, rung_now_ms(), &err) != 0) {
        fprintf(stderr, "rungd: %s\n", core ? err.message : "out of memory");
        bool damaged = core != NULL && store_fault(store) != NULL;
        if (damaged)
            fprintf(stderr,
                    "rungd: nothing was changed; check the database with `rungd --check --db %s` "
                    "and see docs/operations.md, \"Recover the database\"\n",
                    options[O_DB].value);
        core_free(core);
        store_close(store);
        return damaged ? EXIT_DATABASE : 1;
    }
    /* HTTPS (http_tls.h): both files or neither, checked before anything
     * else is started. */
    const char *tls_cert = options[O_TLS_CERT].value, *tls_key = options[O_TLS_KEY].value;
    if ((tls_cert == NULL) != (tls_key == NULL)) {
        fprintf(stderr, "rungd: give --tls-cert and --tls-key together\n");
        core_free(core);
        store_close(store);
        return 2;
    }
    if (tls_cert != NULL && http_tls_load(tls_cert, tls_key, &err) != 0) {
        fprintf(stderr, "rungd: %s\n", err.message);
        core_free(core);
        store_close(store);
        return 2;
    }
    /* Webhooks (notify.h): the file is read once, at start. */
    Notify *notify = NULL;
    if (options[O_NOTIFY_FILE].value != NULL) {
        NotifyConfig ncfg;
        if (notify_config_load(options[O_NOTIFY_FILE].value, &ncfg, &err) != 0) {
            fprintf(stderr, "rungd: --notify-file %s: %s\n", options[O_NOTIFY_FILE].value,
                    err.message);
            core_free(core);
            store_close(store);
            return 2;
        }
        curl_global_init(CURL_GLOBAL_DEFAULT);
        LOG_INFO("rungd: %d notifier%s from %s", ncfg.n, ncfg.n == 1 ? "" : "s",
                 options[O_NOTIFY_FILE].value);
        notify = notify_start(&ncfg);
    }
    static Stats stats;
    /* Workers heartbeat several times per lease, so one lost packet is no loss. */
    EngineConfig ecfg = {.lease_ms = lease_ms,
                         .heartbeat_ms = lease_ms / 6,
                         .forget_workers_ms = options[O_FORGET_WORKERS_S].ival * 1000,
                         .data_dir = data_dir,
                         .blob_quota = options[O_BLOB_QUOTA_MB].ival << 20,
                         .artifact_quota = options[O_ARTIFACT_QUOTA_MB].ival << 20,
                         .event_retention_ms = options[O_EVENT_RETENTION_DAYS].ival * 86400000LL,
                         .notify = notify,
                         .tls = tls_cert != NULL};
    /* Working directories no experiment refers to any more (blobs.h). */
    api_blob_sweep_now(core, store, data_dir, rung_now_ms());
    Engine *engine = engine_new(store, core, &ecfg, &stats);
    if (engine == NULL) {
        fprintf(stderr, "rungd: cannot start the proposer thread\n");
        return 1;
    }
    HttpConfig hcfg = {.bind = options[O_BIND].value,
                       .port = (int)options[O_PORT].ival,
                       .token = token,
                       .old_token = old_token,
                       .web_dir = options[O_WEB_DIR].value,
                       .max_body = (size_t)options[O_MAX_BODY].ival,
                       .data_dir = data_dir,
                       .max_checkpoint = (size_t)options[O_MAX_CHECKPOINT_MB].ival << 20,
                       .max_blob = (size_t)options[O_MAX_BLOB_MB].ival << 20,
                       .routes = api_routes,
                       .n_routes = api_n_routes,
                       .tls = tls_cert != NULL,
                       .lookup = api_access_lookup,
                       .check = api_access_check,
                       .session = api_session_lookup,
                       .listen_fd = listen_fd};
    Http *http;
    int port;
    if (http_start(&hcfg, engine, &stats, &http, &port, &err) != 0) {
        fprintf(stderr, "rungd: %s\n", err.message);
        engine_free(engine);
        return 2;
    }
    EngineFront front;
    http_front(http, &front);
    if (engine_start(engine, &front) != 0) {
        fprintf(stderr, "rungd: cannot start the engine thread\n");
        return 1;
    }
    const char *host = hcfg.bind;
    bool v6 = strchr(host, ':') != NULL;
    const char *scheme = tls_cert != NULL ? "https" : "http";
    printf("listening on %s://%s%s%s:%d\n", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port);
    printf("dashboard: %s://%s%s%s:%d/\n", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port);
    LOG_INFO("rungd: database %s, lease %llds, %s",
             sopt.pg_conninfo ? "on PostgreSQL" : options[O_DB].value,
             (long long)options[O_LEASE_S].ival,
             !(token && token[0]) ? "no token"
             : old_token          ? "token required (the new one or the old one)"
                                  : "token required");
    /* Type=notify units: dependents start once rungd answers. */
    char ready[160];
    snprintf(ready, sizeof ready, "READY=1\nSTATUS=listening on port %d", port);
    if (sdnotify_send(ready) < 0)
        LOG_WARN("rungd: could not tell systemd it is ready ($NOTIFY_SOCKET)");

    pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
    /* Wake now and then even without a byte: sanitizers deliver a signal to
     * its handler only when the thread returns from a call. */
    unsigned char sig = 0;
    for (;;) {
        struct pollfd pfd = {.fd = signal_pipe[0], .events = POLLIN};
        if (poll(&pfd, 1, 250) <= 0 || read(signal_pipe[0], &sig, 1) != 1)
            continue;
        if (sig != SIGHUP)
            break;
        /* A renewed certificate: served from the next connection on; a
         * bad one leaves the old in place (docs/operations.md, "TLS"). */
        if (tls_cert == NULL)
            LOG_INFO("rungd: SIGHUP: no --tls-cert to re-read");
        else if (http_tls_load(tls_cert, tls_key, &err) != 0)
            LOG_ERROR("rungd: SIGHUP: %s; still serving the certificate loaded before",
                      err.message);
        else
            LOG_INFO("rungd: SIGHUP: certificate %s reloaded", tls_cert);
    }
    LOG_INFO("rungd: %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    sdnotify_send("STOPPING=1");
    engine_stop(engine);
    http_stop(http);
    engine_free(engine);
    notify_stop(notify);
    http_tls_free();
    LOG_INFO("rungd: stopped");
    return 0;
}
