/* The SQLite store; see store.h.
 *
 * Workload: a stream of small writes (a report is one INSERT; a lease, a
 * finish or a retry one UPDATE of a trial row) from one thread, batched into
 * transactions by the engine (a savepoint per request), and reads of the
 * history (store_read.c). At start only the work in flight is read. Every
 * statement is prepared once and kept; parameters are bound by name and a
 * wrong name is a programming error that aborts at once. */
#include "store.h"

#include "clock.h"
#include "log.h"
#include "store_read.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern const char *const rung_migrations[];

enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    ST_EXP_INSERT,
    ST_EXP_UPDATE,
    ST_TRIAL_INSERT,
    ST_TRIAL_UPDATE,
    ST_REPORT_INSERT,
    ST_WORKER_INSERT,
    ST_WORKER_UPDATE,
    ST_REPORTS_OF,
    ST__COUNT
};

static const char *const sql_text[ST__COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SAVEPOINT] = "SAVEPOINT request",
    [ST_RELEASE] = "RELEASE request",
    [ST_ROLLBACK_TO] = "ROLLBACK TO request",
    [ST_EXP_INSERT] = "INSERT INTO experiments (id, name, spec, seed, state, total_trials, "
                      "created_at, ended_at, summary, error, ended_reason, health) VALUES (:id, "
                      ":name, :spec, :seed, :state, :total, :created_at, :ended_at, :summary, "
                      ":error, :ended_reason, :health)",
    [ST_EXP_UPDATE] = "UPDATE experiments SET state = :state, ended_at = :ended_at, "
                      "summary = :summary, error = :error, ended_reason = :ended_reason, "
                      "health = :health, spec = :spec, total_trials = :total WHERE id = :id",
    [ST_TRIAL_INSERT] =
        "INSERT INTO trials (id, experiment_id, number, state, config, attempt, worker_id, "
        "lease_token, resources, stop_requested, error, created_at, started_at, ended_at, "
        "rung, queue_pos, step, last_metrics, best_value, best_step, log_tail, stopped_by, "
        "stop_kind, user_paused, warnings, gang, preemptions, lineage, resume_from, worker_losses) "
        "VALUES (:id, :exp, :number, :state, :config, "
        ":attempt, :worker, :token, :resources, :stop, :error, :created_at, :started_at, "
        ":ended_at, :rung, :queue_pos, :step, :last, :best_value, :best_step, :log_tail, "
        ":stopped_by, :stop_kind, :user_paused, :warnings, :gang, :preemptions, :lineage, "
        ":resume_from, :worker_losses)",
    [ST_TRIAL_UPDATE] =
        "UPDATE trials SET state = :state, attempt = :attempt, worker_id = :worker, "
        "lease_token = :token, resources = :resources, stop_requested = :stop, error = :error, "
        "started_at = :started_at, ended_at = :ended_at, rung = :rung, queue_pos = :queue_pos, "
        "step = :step, last_metrics = :last, best_value = :best_value, best_step = :best_step, "
        "log_tail = :log_tail, stopped_by = :stopped_by, stop_kind = :stop_kind, "
        "user_paused = :user_paused, warnings = :warnings, gang = :gang, "
        "preemptions = :preemptions, worker_losses = :worker_losses, "
        "config = coalesce(:config, config), lineage = "
        "coalesce(:lineage, lineage), "
        "resume_from = :resume_from WHERE id = :id",
    [ST_REPORT_INSERT] = "INSERT INTO reports (trial_id, attempt, step, time, metrics, action) "
                         "VALUES (:trial, :attempt, :step, :time, :metrics, :action)",
    [ST_WORKER_INSERT] = "INSERT INTO workers (id, name, hostname, gpus, cpus, registered_at, "
                         "last_seen_at, heartbeat, labels) VALUES (:id, :name, :hostname, :gpus, "
                         ":cpus, :registered_at, :last_seen_at, :heartbeat, :labels)",
    [ST_WORKER_UPDATE] = "UPDATE workers SET last_seen_at = :last_seen_at, heartbeat = "
                         ":heartbeat, labels = :labels WHERE id = :id",
    [ST_REPORTS_OF] = "SELECT step, time, metrics FROM reports WHERE trial_id = :trial AND "
                      "attempt = :attempt AND step > :after ORDER BY step LIMIT :limit",
};

struct Store {
    sqlite3 *db;
    sqlite3_stmt *st[ST__COUNT];
    int lock_fd; /* the database file, flock'ed: one rungd per database */
    /* The guard (store_fault): which file the path named at the open, and
     * the database file's size and time after rungd's own last write. */
    char path[PATH_MAX];
    struct stat opened, wal;
    bool wal_known;
    off_t size;
    struct timespec mtime;
    char fault[RUNG_MESSAGE_MAX]; /* why the store stopped; "" while it works */
    bool serving;                 /* a transaction began: faults stop the daemon */
    bool rescued;                 /* rescue() ran */
};

static void set_fault(Store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* SQLite's words for a file it cannot trust: damaged, not a database, or
 * a read or write the system refused. SQLITE_FULL (the disk) is not one:
 * a later commit may succeed. */
static bool damage_code(int code)
{
    int primary = code & 0xff;
    return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR;
}

static int db_error(Store *s, RungError *err, const char *what)
{
    int code = sqlite3_extended_errcode(s->db);
    if (damage_code(code)) {
        set_fault(s, "SQLite found the database file %s damaged or unreadable (%s: %s)", s->path,
                  what, sqlite3_errmsg(s->db));
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "store: %s", s->fault);
    }
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: %s: %s", what, sqlite3_errmsg(s->db));
}

static int param(sqlite3_stmt *st, const char *name)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0) {
        fprintf(stderr, "store: no parameter %s in: %s\n", name, sqlite3_sql(st));
        abort();
    }
    return i;
}

static void bind_int(sqlite3_stmt *st, const char *name, int64_t v)
{
    sqlite3_bind_int64(st, param(st, name), v);
}

/* Binds v, or NULL when v is 0 (times and ids that are not set yet). */
static void bind_int_or_null(sqlite3_stmt *st, const char *name, int64_t v)
{
    if (v == 0)
        sqlite3_bind_null(st, param(st, name));
    else
        sqlite3_bind_int64(st, param(st, name), v);
}

static void bind_real_or_null(sqlite3_stmt *st, const char *name, double v)
{
    if (v == 0)
        sqlite3_bind_null(st, param(st, name));
    else
        sqlite3_bind_double(st, param(st, name), v);
}

static void bind_text(sqlite3_stmt *st, const char *name, const char *v)
{
    if (v == NULL)
        sqlite3_bind_null(st, param(st, name));
    else
        sqlite3_bind_text(st, param(st, name), v, -1, SQLITE_TRANSIENT);
}

/* Binds the compact JSON text of v (NULL for no value). */
static void bind_json(sqlite3_stmt *st, const char *name, const json_t *v)
{
    if (v == NULL) {
        sqlite3_bind_null(st, param(st, name));
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        abort();
    sqlite3_bind_text(st, param(st, name), text, -1, free);
}

/* Runs a write statement once and resets it. */
static int run(Store *s, sqlite3_stmt *st, RungError *err, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        return db_error(s, err, what);
    return 0;
}

static int exec(Store *s, const char *sql, RungError *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        sqlite3_free(msg);
        return db_error(s, err, "exec");
    }
    return 0;
}

static int user_version(Store *s, int *out, RungError *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return db_error(s, err, "user_version");
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "user_version");
}

/* Fails when a row refers to one that does not exist (run after each
 * migration, since they run with foreign keys off). */
static int foreign_keys_hold(Store *s, RungError *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA foreign_key_check", -1, &st, NULL) != SQLITE_OK)
        return db_error(s, err, "foreign_key_check");
    int rc = sqlite3_step(st);
    char table[128] = "";
    if (rc == SQLITE_ROW)
        snprintf(table, sizeof table, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "store: after migrating, table %s refers to missing rows", table);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "foreign_key_check");
}

/* Applies migrations user_version+1 … N, each in its own transaction. */
static int migrate(Store *s, RungError *err)
{
    int have, known = 0;
    while (rung_migrations[known] != NULL)
        known++;
    if (user_version(s, &have, err))
        return err->code;
    if (have > known)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "store: the database has schema version %d, newer than the %d "
                              "this rungd knows; use a newer rungd",
                              have, known);
    for (int v = have; v < known; v++) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
        if (exec(s, "BEGIN", err) || exec(s, rung_migrations[v], err) ||
            foreign_keys_hold(s, err) || exec(s, pragma, err) || exec(s, "COMMIT", err)) {
            exec(s, "ROLLBACK", NULL);
            return err->code;
        }
    }
    return 0;
}

/* ---- the database file (docs/operations.md, "The database file") ----
 *
 * SQLite keeps writing to the files it opened whatever their names become:
 * a database unlinked or replaced under rungd would take every later
 * report into a file that no start finds again. So each commit first
 * checks that the path still names the file opened (device and inode, a
 * link count above 0, the same for the -wal file) and that no other
 * program wrote to it (its size and time as rungd's own last write left
 * them), and the store stops at the first doubt. Beside the database,
 * PATH.created says that one was made here (a later start never makes a
 * new one in its place) and PATH.fault why a run stopped using it. */

/* SQLite's own log: corruption found by any statement of the process
 * (store_read.c's too), noted here and taken up by the next commit. */
static char sqlite_damage[256];

static void on_sqlite_log(void *arg, int code, const char *msg)
{
    (void)arg;
    int primary = code & 0xff;
    if ((primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) && sqlite_damage[0] == '\0')
        snprintf(sqlite_damage, sizeof sqlite_damage, "%s", msg ? msg : "corrupt");
}

/* PATH + suffix into out; false when it does not fit. */
static bool path_with(char *out, size_t cap, const char *path, const char *suffix)
{
    int n = snprintf(out, cap, "%s%s", path, suffix);
    return n > 0 && (size_t)n < cap;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void now_text(char *out, size_t cap, const char *fmt)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, fmt, &tm);
}

/* Writes text to path (created with mode 0600), replacing what was there. */
static int write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* What the connection still reads (the file it opened, its WAL) into
 * PATH.rescued-TIME, for the operator: after an unlink or a replace it is
 * the only copy of the acknowledged work. Outside a transaction. */
static void rescue(Store *s)
{
    char stamp[32], dest[PATH_MAX];
    now_text(stamp, sizeof stamp, ".rescued-%Y%m%dT%H%M%SZ");
    if (!path_with(dest, sizeof dest, s->path, stamp))
        return;
    char *sql = sqlite3_mprintf("VACUUM INTO %Q", dest);
    char *msg = NULL;
    int rc = sql ? sqlite3_exec(s->db, sql, NULL, NULL, &msg) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK) {
        LOG_ERROR("store: copied what rungd still reads of its database to %s "
                  "(docs/operations.md, \"Recover the database\")",
                  dest);
    } else {
        LOG_ERROR("store: could not copy what rungd still reads of its database to %s: %s", dest,
                  msg ? msg : sqlite3_errstr(rc));
        unlink(dest);
    }
    sqlite3_free(msg);
}

/* Stops the store for good, once: the reason goes to the log and, once the
 * daemon serves, to PATH.fault, which a later start reads. */
static void set_fault(Store *s, const char *fmt, ...)
{
    if (s->fault[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->fault, sizeof s->fault, fmt, ap);
    va_end(ap);
    if (!s->serving)
        return; /* at the open: the start fails with it */
    LOG_ERROR("store: %s; rungd takes no more writes (every request is answered 503) until it is "
              "restarted on a database that `rungd --check` accepts (docs/operations.md, "
              "\"Recover the database\")",
              s->fault);
    char when[32], note[RUNG_MESSAGE_MAX + 512], fault_path[PATH_MAX];
    now_text(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ");
    snprintf(note, sizeof note,
             "%s: %s\n"
             "rungd stopped taking writes then. It starts on this database again only with "
             "--init, once `rungd --check` accepts the file at this path (docs/operations.md, "
             "\"Recover the database\").\n",
             when, s->fault);
    if (!path_with(fault_path, sizeof fault_path, s->path, ".fault") ||
        write_text(fault_path, note) != 0)
        LOG_ERROR("store: cannot write %s.fault: %s", s->path, strerror(errno));
}

const char *store_fault(const Store *s)
{
    return s->fault[0] ? s->fault : NULL;
}

/* The state of the files after rungd's own write: a checkpoint that
 * follows a commit writes the database file, and a first commit may
 * create the -wal. */
static void note_own_writes(Store *s)
{
    struct stat st;
    if (fstat(s->lock_fd, &st) == 0) {
        s->size = st.st_size;
        s->mtime = st.st_mtim;
    }
    char wal[PATH_MAX];
    if (!s->wal_known && path_with(wal, sizeof wal, s->path, "-wal") && stat(wal, &s->wal) == 0)
        s->wal_known = true;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether the path still names the files rungd opened, untouched by other
 * programs since its own last write (content: false right after it). Two
 * stat(2) and an fstat(2): microseconds per commit. */
static int guard(Store *s, bool content, RungError *err)
{
    if (s->fault[0] == '\0' && sqlite_damage[0] != '\0')
        set_fault(s, "SQLite found the database file %s damaged: %s", s->path, sqlite_damage);
    struct stat now, path_st;
    char wal[PATH_MAX];
    if (s->fault[0] != '\0') {
        /* stopped already */
    } else if (stat(s->path, &path_st) != 0) {
        set_fault(s, "the database file %s was deleted or moved while rungd ran (%s)", s->path,
                  strerror(errno));
    } else if (!same_file(&path_st, &s->opened)) {
        set_fault(s, "%s names another file than the database rungd opened (replaced while it ran)",
                  s->path);
    } else if (fstat(s->lock_fd, &now) != 0 || now.st_nlink == 0) {
        set_fault(s, "the database file %s was deleted while rungd ran", s->path);
    } else if (content && (now.st_size != s->size || now.st_mtim.tv_sec != s->mtime.tv_sec ||
                           now.st_mtim.tv_nsec != s->mtime.tv_nsec)) {
        set_fault(s, "another program wrote to the database file %s while rungd ran", s->path);
    } else if (s->wal_known && path_with(wal, sizeof wal, s->path, "-wal")) {
        struct stat wal_st;
        if (stat(wal, &wal_st) != 0)
            set_fault(s, "the database's write-ahead log %s was deleted while rungd ran", wal);
        else if (!same_file(&wal_st, &s->wal))
            set_fault(s, "%s names another file than the write-ahead log rungd opened", wal);
    }
    if (s->fault[0] == '\0')
        return 0;
    return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "%s", s->fault);
}

/* The first line of PATH.fault (a newline-free copy), or "" when absent. */
static void read_fault(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    char fault_path[PATH_MAX];
    if (!path_with(fault_path, sizeof fault_path, path, ".fault"))
        return;
    FILE *f = fopen(fault_path, "re");
    if (f == NULL)
        return;
    if (fgets(out, (int)cap, f) == NULL)
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* Before the open: the first start creates the database; a later one
 * needs it (docs/operations.md, "The database file"). */
static int check_start(const char *path, const StoreOptions *opt, RungError *err)
{
    char fault[RUNG_MESSAGE_MAX];
    read_fault(path, fault, sizeof fault);
    if (fault[0] != '\0' && !opt->init)
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL,
                              "an earlier rungd stopped using the database %s (%s.fault: %s); "
                              "once the file at that path is sound, start once with --init",
                              path, path, fault);
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size > 0)
        return 0;
    const char *suffixes[] = {".created", "-wal", "-shm"};
    char sign[PATH_MAX] = "";
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes && sign[0] == '\0'; i++)
        if (!path_with(sign, sizeof sign, path, suffixes[i]) || !exists(sign))
            sign[0] = '\0';
    if (sign[0] == '\0' && opt->data_dir != NULL &&
        (!path_with(sign, sizeof sign, opt->data_dir, "/checkpoints") || !exists(sign)))
        sign[0] = '\0';
    if (sign[0] == '\0')
        return 0; /* a first start */
    if (!opt->init)
        return rung_error_set(err, RUNG_E_NOT_FOUND, NULL,
                              "the database %s is missing or empty, but %s shows that one was "
                              "there: rungd does not create a new, empty one in its place. "
                              "Restore it (docs/operations.md, \"Recover the database\"), or "
                              "start with --init to begin anew",
                              path, sign);
    /* A log left by the database that is gone would be played into the
     * new one. */
    char wal[PATH_MAX];
    if (path_with(wal, sizeof wal, path, "-wal") && exists(wal))
        return rung_error_set(err, RUNG_E_CONFLICT, NULL,
                              "%s belongs to the database that is gone; move it away before "
                              "--init creates a new one",
                              wal);
    return 0;
}

/* After the open: PATH.created marks the folder as holding a database (an
 * earlier rungd's database gets one at its first start by this one). */
static void mark_created(const char *path)
{
    char created[PATH_MAX];
    if (!path_with(created, sizeof created, path, ".created") || exists(created))
        return;
    char when[32], text[PATH_MAX + 512];
    now_text(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ");
    snprintf(text, sizeof text,
             "%s: rungd found or created its database %s.\n"
             "While this file is here, rungd refuses to start where that database is missing or "
             "empty instead of creating a new one (docs/operations.md, \"The database file\"); "
             "rungd --init begins anew.\n",
             when, path);
    if (write_text(created, text) != 0)
        LOG_WARN("store: cannot write %s: %s", created, strerror(errno));
}

/* One-column rows of sql on db, each printed as "label: row" (at most 20);
 * how many there were, or -1 when the statement failed (said too). */
static int64_t print_rows(sqlite3 *db, const char *sql, const char *label, FILE *out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(out, "%s: %s\n", label, sqlite3_errmsg(db));
        return -1;
    }
    int64_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n++ >= 20)
            continue;
        fprintf(out, "%s:", label);
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const unsigned char *v = sqlite3_column_text(st, c);
            fprintf(out, " %s", v ? (const char *)v : "NULL");
        }
        fputc('\n', out);
    }
    if (rc != SQLITE_DONE)
        fprintf(out, "%s: %s\n", label, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? n : -1;
}

/* The single integer that sql returns, or -1. */
static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

int store_check(const char *path, FILE *out)
{
    char fault[RUNG_MESSAGE_MAX];
    read_fault(path, fault, sizeof fault);
    if (fault[0] != '\0')
        fprintf(out, "%s.fault: an earlier rungd stopped using this database: %s\n", path, fault);
    struct stat file;
    if (stat(path, &file) != 0) {
        fprintf(out, "%s: %s: no database to check\n", path, strerror(errno));
        return 1;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(out, "%s: cannot open: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return 1;
    }
    sqlite3_busy_timeout(db, 5000);
    /* integrity_check reads every page and index; its single row "ok"
     * means sound. */
    sqlite3_stmt *st;
    bool sound = false;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(20)", -1, &st, NULL) == SQLITE_OK) {
        int rc;
        int64_t n = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *row = (const char *)sqlite3_column_text(st, 0);
            n++;
            if (n == 1 && row != NULL && strcmp(row, "ok") == 0)
                sound = true;
            else
                sound = false;
            fprintf(out, "integrity_check: %s\n", row ? row : "NULL");
        }
        if (rc != SQLITE_DONE) {
            fprintf(out, "integrity_check: %s\n", sqlite3_errmsg(db));
            sound = false;
        }
        sqlite3_finalize(st);
    } else {
        fprintf(out, "integrity_check: %s\n", sqlite3_errmsg(db));
    }
    int64_t orphans = print_rows(db, "PRAGMA foreign_key_check", "foreign_key_check", out);
    if (orphans != 0)
        sound = false;
    else
        fprintf(out, "foreign_key_check: ok\n");
    int known = 0;
    while (rung_migrations[known] != NULL)
        known++;
    int64_t version = query_int(db, "PRAGMA user_version");
    fprintf(out, "schema version: %lld (this rungd knows %d)\n", (long long)version, known);
    if (version < 0 || version > known)
        sound = false;
    if (sound) {
        fprintf(out, "%s: sound: %lld experiments, %lld trials, %lld reports\n", path,
                (long long)query_int(db, "SELECT count(*) FROM experiments"),
                (long long)query_int(db, "SELECT count(*) FROM trials"),
                (long long)query_int(db, "SELECT count(*) FROM reports"));
        if (fault[0] != '\0')
            fprintf(out, "Once this is the database to use, start rungd with --init once.\n");
    } else {
        fprintf(out,
                "%s: damaged; restore the last backup or recover what is readable "
                "(docs/operations.md, \"Recover the database\")\n",
                path);
    }
    sqlite3_close(db);
    return sound ? 0 : 1;
}

/* Takes an exclusive flock on the database file itself. Two daemons on one
 * database would each believe they own every trial; the second one must
 * refuse to start. The lock belongs to the file (its inode), so a symbolic
 * or hard link to a database in use is refused too, which a lock file
 * beside the path could not see. flock locks are separate from the POSIX
 * locks SQLite takes, so the database stays readable by other programs,
 * the sqlite3 shell included. */
static int lock_database(Store *s, const char *path, RungError *err)
{
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: cannot open %s: %s", path,
                              strerror(errno));
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return rung_error_set(err, RUNG_E_CONFLICT, NULL,
                              "store: %s is in use by another rungd (the file is locked, "
                              "maybe through another name or link)",
                              path);
    if (fstat(s->lock_fd, &s->opened) != 0)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: cannot stat %s: %s", path,
                              strerror(errno));
    return 0;
}

int store_open(const char *path, const StoreOptions *opt, Store **out, RungError *err)
{
    /* Before the first call into SQLite (later calls are refused, harmless). */
    sqlite3_config(SQLITE_CONFIG_LOG, on_sqlite_log, NULL);
    if (!path_with((char[PATH_MAX]){0}, PATH_MAX, path, ".rescued-00000000T000000Z"))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "db", "the database path is too long");
    if (check_start(path, opt, err) != 0)
        return err->code;
    Store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
    s->lock_fd = -1;
    snprintf(s->path, sizeof s->path, "%s", path);
    if (lock_database(s, path, err) != 0) {
        store_close(s);
        return err->code;
    }
    /* NOMUTEX: one thread at a time uses the connection (main.c opens and
     * loads it before the engine thread starts and closes it after that
     * thread ended; docs/architecture.md, "Threads"), so SQLite's own lock
     * around every call would only cost: a fifth of reading 100,000 rows. */
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: cannot open %s: %s", path,
                       s->db ? sqlite3_errmsg(s->db) : "out of memory");
        store_close(s);
        return RUNG_E_INTERNAL;
    }
    /* WAL: readers never block the writer, and a commit is one append.
     * synchronous=NORMAL in WAL loses nothing on a process crash, only on
     * power loss; FULL adds an fsync per commit. */
    const char *pragmas = opt->durable_full ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                            : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;";
    /* Foreign keys come on after the migrations: a migration that rebuilds a
     * table (002) drops the old one, which other tables refer to. */
    if (exec(s, pragmas, err) || exec(s, "PRAGMA busy_timeout=5000;", err) || migrate(s, err) ||
        exec(s, "PRAGMA foreign_keys=ON;", err)) {
        store_close(s);
        return err->code;
    }
    for (int i = 0; i < ST__COUNT; i++) {
        if (sqlite3_prepare_v3(s->db, sql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK) {
            db_error(s, err, sql_text[i]);
            store_close(s);
            return err->code;
        }
    }
    note_own_writes(s);
    mark_created(path);
    char fault_path[PATH_MAX];
    if (opt->init && path_with(fault_path, sizeof fault_path, path, ".fault") &&
        unlink(fault_path) == 0)
        LOG_INFO("store: --init: removed %s; rungd uses the database at %s again", fault_path,
                 path);
    *out = s;
    return 0;
}

sqlite3 *store_db(Store *s)
{
    return s->db;
}

void store_close(Store *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < ST__COUNT; i++)
        sqlite3_finalize(s->st[i]);
    /* A store that stopped leaves its files as they are: the last close
     * would checkpoint into a file that left its path and delete the
     * -wal that the path names now, which may be another database's. */
    if (s->db != NULL && s->fault[0] != '\0' && s->serving)
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the lock */
    free(s);
}

int store_begin(Store *s, RungError *err)
{
    s->serving = true;
    if (s->fault[0] != '\0')
        return rung_error_set(err, RUNG_E_UNAVAILABLE, NULL, "%s", s->fault);
    return run(s, s->st[ST_BEGIN], err, "begin");
}

int store_commit(Store *s, RungError *err)
{
    /* Nothing goes into a file that left its path, nor over another
     * program's writes (the caller rolls back). */
    if (guard(s, true, err) != 0)
        return err->code;
    int rc = run(s, s->st[ST_COMMIT], err, "commit");
    note_own_writes(s);
    /* A change during the commit: its replies must not say "kept". */
    if (rc == 0 && guard(s, false, err) != 0)
        return err->code;
    return rc;
}

void store_rollback(Store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        run(s, s->st[ST_ROLLBACK], NULL, "rollback");
    /* Outside the transaction now: the copy for the operator, once. */
    if (s->fault[0] != '\0' && s->serving && !s->rescued) {
        s->rescued = true;
        rescue(s);
    }
}

int store_savepoint(Store *s, RungError *err)
{
    return run(s, s->st[ST_SAVEPOINT], err, "savepoint");
}

int store_release_savepoint(Store *s, RungError *err)
{
    return run(s, s->st[ST_RELEASE], err, "release savepoint");
}

void store_rollback_savepoint(Store *s)
{
    /* ROLLBACK TO keeps the savepoint open; RELEASE then ends it, leaving
     * the batch's transaction as it was before the request. */
    RungError ignored;
    run(s, s->st[ST_ROLLBACK_TO], &ignored, "rollback to savepoint");
    run(s, s->st[ST_RELEASE], &ignored, "release savepoint");
}

static int write_exp(Store *s, Experiment *e, RungError *err)
{
    sqlite3_stmt *st = s->st[e->stored ? ST_EXP_UPDATE : ST_EXP_INSERT];
    bind_int(st, ":id", e->id);
    bind_text(st, ":state", exp_state_name(e->state));
    bind_int_or_null(st, ":ended_at", e->ended_at);
    /* Counts and best, so that an ended experiment is listed from its row. */
    json_t *counts = json_object();
    for (int k = 0; k < TRIAL__COUNT; k++)
        json_object_set_new(counts, trial_state_name((TrialState)k), json_integer(e->counts[k]));
    BestRef b;
    core_experiment_best(e, &b);
    json_t *summary = json_pack("{s:o, s:o}", "counts", counts, "best",
                                b.has ? json_pack("{s:I, s:f, s:I, s:O}", "trial_id",
                                                  (json_int_t)b.trial_id, "value", b.value, "step",
                                                  (json_int_t)b.step, "config", b.config)
                                      : json_null());
    json_t *pareto = core_experiment_pareto(e);
    if (pareto != NULL)
        json_object_set_new(summary, "pareto", pareto);
    bind_json(st, ":summary", summary);
    json_decref(summary);
    bind_text(st, ":error", e->error);
    bind_text(st, ":ended_reason", end_reason_name(e->ended_reason));
    json_t *health = core_health_json(e);
    bind_json(st, ":health", health);
    json_decref(health);
    bind_json(st, ":spec", e->spec.json); /* PATCH changes it */
    bind_int(st, ":total", e->spec.total_trials);
    if (!e->stored) {
        bind_text(st, ":name", e->spec.name);
        bind_int(st, ":seed", (int64_t)e->spec.searcher.seed);
        bind_int(st, ":created_at", e->created_at);
    }
    if (run(s, st, err, "write experiment"))
        return err->code;
    e->stored = true;
    return 0;
}

static int write_trial(Store *s, Trial *t, RungError *err)
{
    sqlite3_stmt *st = s->st[t->stored ? ST_TRIAL_UPDATE : ST_TRIAL_INSERT];
    bind_int(st, ":id", t->id);
    bind_text(st, ":state", trial_state_name(t->state));
    bind_int(st, ":attempt", t->attempt);
    bind_int_or_null(st, ":worker", t->worker_id);
    bind_text(st, ":token", t->lease_token[0] ? t->lease_token : NULL);
    bind_json(st, ":resources", t->resources);
    bind_int(st, ":stop", t->stop_kind != STOP_NONE);
    bind_text(st, ":stop_kind", stop_kind_name((StopKind)t->stop_kind));
    bind_text(st, ":stopped_by",
              t->state == TRIAL_STOPPED ? stopped_by_name((StoppedBy)t->stopped_by) : NULL);
    bind_int(st, ":user_paused", t->state == TRIAL_PAUSED && t->user_paused);
    bind_int(st, ":preemptions", t->preemptions);
    bind_int(st, ":worker_losses", t->worker_losses);
    bind_json(st, ":warnings", t->warnings);
    bind_json(st, ":gang", t->gang_json); /* members and their tokens (schema 006) */
    bind_text(st, ":error", t->error);
    bind_int_or_null(st, ":started_at", t->started_at);
    bind_int_or_null(st, ":ended_at", t->ended_at);
    bind_real_or_null(st, ":rung", t->rung);
    if (t->state == TRIAL_PENDING || t->state == TRIAL_PREEMPTED) /* in line */
        bind_int(st, ":queue_pos", t->queue_pos);
    else
        sqlite3_bind_null(st, param(st, ":queue_pos"));
    if (t->has_step)
        bind_int(st, ":step", t->step);
    else
        sqlite3_bind_null(st, param(st, ":step"));
    bind_json(st, ":last", t->last);
    if (t->has_best) {
        sqlite3_bind_double(st, param(st, ":best_value"), t->best_value);
        bind_int(st, ":best_step", t->best_step);
    } else {
        sqlite3_bind_null(st, param(st, ":best_value"));
        sqlite3_bind_null(st, param(st, ":best_step"));
    }
    bind_text(st, ":log_tail", t->log_tail);
    /* pbt's exploit changes a trial's config and lineage (schema 008);
     * NULL keeps the stored ones, which spares a report's write their
     * text (a lineage grows by a config per exploit). */
    bind_json(st, ":config", !t->stored || t->config_changed ? t->config : NULL);
    bind_json(st, ":lineage", !t->stored || t->config_changed ? t->lineage : NULL);
    json_t *from = t->from_trial != 0
                       ? json_pack("{s:I, s:I, s:I}", "trial", (json_int_t)t->from_trial, "step",
                                   (json_int_t)t->from_step, "worker", (json_int_t)t->from_worker)
                       : NULL;
    bind_json(st, ":resume_from", from);
    json_decref(from);
    if (!t->stored) {
        bind_int(st, ":exp", t->exp->id);
        bind_int(st, ":number", t->number);
        bind_int(st, ":created_at", t->created_at);
    }
    if (run(s, st, err, "write trial"))
        return err->code;
    t->stored = true;
    t->config_changed = false;
    return 0;
}

static int write_worker(Store *s, Worker *w, RungError *err)
{
    sqlite3_stmt *st = s->st[w->stored ? ST_WORKER_UPDATE : ST_WORKER_INSERT];
    bind_int(st, ":id", w->id);
    bind_int(st, ":last_seen_at", w->last_seen_at);
    bind_json(st, ":heartbeat", w->heartbeat);
    bind_json(st, ":labels", w->labels);
    if (!w->stored) {
        bind_text(st, ":name", w->name);
        bind_text(st, ":hostname", w->hostname);
        bind_json(st, ":gpus", w->gpus);
        bind_int(st, ":cpus", w->cpus);
        bind_int(st, ":registered_at", w->registered_at);
    }
    if (run(s, st, err, "write worker"))
        return err->code;
    w->stored = true;
    return 0;
}

static int write_report(Store *s, const NewReport *r, RungError *err)
{
    sqlite3_stmt *st = s->st[ST_REPORT_INSERT];
    bind_int(st, ":trial", r->trial_id);
    bind_int(st, ":attempt", r->attempt);
    bind_int(st, ":step", r->step);
    bind_int(st, ":time", r->time);
    bind_json(st, ":metrics", r->metrics);
    bind_text(st, ":action", r->action == ACTION_STOP ? "stop" : "continue");
    return run(s, st, err, "write report");
}

static int prepare(Store *s, const char *sql, sqlite3_stmt **st, RungError *err, const char *what);

/* pbt: a checkpoint file stored in the data folder (schema 009); its file
 * was renamed into place before. */
static int write_checkpoint(Store *s, const CoreCheckpoint *c, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s,
                "INSERT OR REPLACE INTO checkpoints (trial_id, step, sha256, size, stored_at) "
                "VALUES (?1, ?2, ?3, ?4, ?5)",
                &st, err, "write checkpoint"))
        return err->code;
    sqlite3_bind_int64(st, 1, c->trial_id);
    sqlite3_bind_int64(st, 2, c->step);
    sqlite3_bind_text(st, 3, c->sha256, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, c->size);
    sqlite3_bind_int64(st, 5, c->stored_at);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, err, "write checkpoint");
    sqlite3_finalize(st);
    return rc;
}

static int drop_checkpoint(Store *s, const CoreCheckpoint *c, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "DELETE FROM checkpoints WHERE trial_id = ?1 AND step = ?2", &st, err,
                "drop checkpoint"))
        return err->code;
    sqlite3_bind_int64(st, 1, c->trial_id);
    sqlite3_bind_int64(st, 2, c->step);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, err, "drop checkpoint");
    sqlite3_finalize(st);
    return rc;
}

int store_write_changes(Store *s, const CoreChanges *c, RungError *err)
{
    /* Parents first: foreign keys are checked row by row. */
    for (int64_t i = 0; i < c->n_exps; i++)
        if (write_exp(s, c->exps[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_workers; i++)
        if (write_worker(s, c->workers[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_trials; i++)
        if (write_trial(s, c->trials[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_reports; i++)
        if (write_report(s, &c->reports[i], err))
            return err->code;
    for (int64_t i = 0; i < c->n_ckpts; i++)
        if (write_checkpoint(s, &c->ckpts[i], err))
            return err->code;
    /* After the inserts: one stored and dropped in the same batch goes. */
    for (int64_t i = 0; i < c->n_dropped_ckpts; i++)
        if (drop_checkpoint(s, &c->dropped_ckpts[i], err))
            return err->code;
    return 0;
}

/* ---- loading ---- */

static json_t *column_json(sqlite3_stmt *st, int col)
{
    const char *text = (const char *)sqlite3_column_text(st, col);
    if (text == NULL)
        return NULL;
    return json_loads(text, JSON_DECODE_ANY, NULL);
}

/* Prepares sql, or fails naming what. */
static int prepare(Store *s, const char *sql, sqlite3_stmt **st, RungError *err, const char *what)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_error(s, err, what);
    return 0;
}

/* Loads the experiments that `where` selects (their rows, then every trial
 * of theirs, then the reports of each trial's current attempt). Only
 * experiments with work in flight are loaded: running ones, and canceled
 * ones whose running trials have not stopped yet. */
static int load_experiments(Store *s, Core *core, const char *where, int64_t id_arg, RungError *err)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT id, spec, seed, state, created_at, ended_at, ended_reason, error, health "
             "FROM experiments WHERE %s ORDER BY id",
             where);
    sqlite3_stmt *st;
    if (prepare(s, sql, &st, err, "load experiments"))
        return err->code;
    if (id_arg > 0)
        sqlite3_bind_int64(st, 1, id_arg);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        json_t *spec_json = column_json(st, 1);
        Spec spec;
        RungError why;
        ExpState state = EXP_RUNNING;
        exp_state_parse((const char *)sqlite3_column_text(st, 3), &state);
        if (spec_load(spec_json, (uint64_t)sqlite3_column_int64(st, 2), &spec, &why)) {
            json_decref(spec_json);
            sqlite3_finalize(st);
            return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                                  "store: experiment %lld has a spec this rungd rejects: %s",
                                  (long long)id, why.message);
        }
        json_decref(spec_json);
        Experiment *e = core_load_experiment(core, id, &spec, state, sqlite3_column_int64(st, 4),
                                             sqlite3_column_int64(st, 5));
        if (store_read_warm_attach(s, e, err)) {
            sqlite3_finalize(st);
            return err->code;
        }
        json_t *health = column_json(st, 8);
        core_load_experiment_ended(e, end_reason_parse((const char *)sqlite3_column_text(st, 6)),
                                   (const char *)sqlite3_column_text(st, 7), health);
        json_decref(health);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "load experiments");
}

/* The states of the trials in flight, which a running experiment holds as
 * objects (core.h, core_load_all_trials); and the ended ones. */
#define LIVE_STATES "('pending', 'running', 'paused', 'preempted')"
#define ENDED_STATES "('completed', 'stopped', 'failed', 'canceled')"

/* Loads e's trials: those in flight, or with all every one. */
static int load_trials(Store *s, Core *core, Experiment *e, bool all, RungError *err)
{
    sqlite3_stmt *st;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT id, experiment_id, number, state, config, attempt, worker_id, "
             "lease_token, resources, stop_requested, error, created_at, started_at, "
             "ended_at, rung, queue_pos, log_tail, stop_kind, stopped_by, user_paused, "
             "warnings, gang, preemptions, lineage, resume_from, worker_losses FROM trials WHERE "
             "experiment_id = ? %s ORDER BY number",
             all ? "" : "AND state IN " LIVE_STATES);
    if (prepare(s, sql, &st, err, "load trials"))
        return err->code;
    sqlite3_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        TrialState state = TRIAL_PENDING;
        trial_state_parse((const char *)sqlite3_column_text(st, 3), &state);
        json_t *config = column_json(st, 4);
        if (config == NULL) {
            sqlite3_finalize(st);
            return rung_error_set(err, RUNG_E_INTERNAL, NULL, "store: trial %lld is corrupt",
                                  (long long)sqlite3_column_int64(st, 0));
        }
        Trial *t = core_load_trial(
            core, e, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2), state, config,
            sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6),
            (const char *)sqlite3_column_text(st, 7), column_json(st, 8),
            sqlite3_column_int(st, 9) == 0
                ? STOP_NONE
                : (sqlite3_column_type(st, 17) == SQLITE_NULL
                       ? STOP_CANCEL /* the only kind before schema 005 */
                       : stop_kind_parse((const char *)sqlite3_column_text(st, 17))),
            (const char *)sqlite3_column_text(st, 10), sqlite3_column_int64(st, 11),
            sqlite3_column_int64(st, 12), sqlite3_column_int64(st, 13));
        core_load_rung(t, sqlite3_column_double(st, 14)); /* NULL reads as 0: none */
        if ((state == TRIAL_PENDING || state == TRIAL_PREEMPTED) &&
            sqlite3_column_type(st, 15) != SQLITE_NULL)
            core_load_queue_pos(t, sqlite3_column_int64(st, 15));
        if (sqlite3_column_type(st, 16) != SQLITE_NULL)
            core_trial_set_log(NULL, t, (const char *)sqlite3_column_text(st, 16));
        core_load_trial_control(t, stopped_by_parse((const char *)sqlite3_column_text(st, 18)),
                                sqlite3_column_int(st, 19) != 0, column_json(st, 20));
        core_load_trial_preemptions(t, sqlite3_column_int64(st, 22));
        core_load_trial_losses(t, sqlite3_column_int64(st, 25));
        json_t *from = column_json(st, 24);
        core_load_trial_pbt(t, column_json(st, 23), from);
        json_decref(from);
        json_t *gang = column_json(st, 21);
        core_load_gang(core, t, gang);
        json_decref(gang);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "load trials");
}

/* Replays the reports of the current attempt of e's trials, in step order. */
static int load_reports(Store *s, Core *core, Experiment *e, bool all, RungError *err)
{
    sqlite3_stmt *st;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT r.trial_id, r.step, r.metrics, r.action FROM trials t "
             "JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
             "WHERE t.experiment_id = ? %s ORDER BY r.trial_id, r.step",
             all ? "" : "AND t.state IN " LIVE_STATES);
    if (prepare(s, sql, &st, err, "load reports"))
        return err->code;
    sqlite3_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        Trial *t = core_trial(core, sqlite3_column_int64(st, 0));
        json_t *metrics = column_json(st, 2);
        const char *action = (const char *)sqlite3_column_text(st, 3);
        if (t != NULL && metrics != NULL)
            core_load_report(core, t, sqlite3_column_int64(st, 1), metrics,
                             strcmp(action, "stop") == 0 ? ACTION_STOP : ACTION_CONTINUE);
        json_decref(metrics);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "load reports");
}

/* e's counts of ended trials and its number of trials. */
static int load_ended_counts(Store *s, Core *core, Experiment *e, RungError *err)
{
    int64_t counts[TRIAL__COUNT] = {0}, n_trials = 0;
    sqlite3_stmt *st;
    if (prepare(
            s,
            "SELECT state, count(*) FROM trials WHERE experiment_id = ? AND state IN " ENDED_STATES
            " GROUP BY state",
            &st, err, "ended trials"))
        return err->code;
    sqlite3_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        TrialState ts;
        if (trial_state_parse((const char *)sqlite3_column_text(st, 0), &ts) == 0)
            counts[ts] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_error(s, err, "ended trials");
    if (prepare(s, "SELECT max(number) FROM trials WHERE experiment_id = ?", &st, err, "trials"))
        return err->code;
    sqlite3_bind_int64(st, 1, e->id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        n_trials = sqlite3_column_int64(st, 0) + 1;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return db_error(s, err, "trials");
    core_load_ended_counts(core, e, counts, n_trials);
    return 0;
}

/* Replays the current attempt's reports of e's ended trials, one trial at a
 * time, for the rung records they leave (nothing else of them is kept). In
 * number order: the (experiment_id, number) index gives it and the reports'
 * primary key the steps, where ORDER BY t.id sorted every report in a
 * temporary b-tree first (1.65 of a restart's 3.1 s at 400,000 asha trials
 * of 5 reports, bench/long_restart.py). */
static int load_ended_reports(Store *s, Core *core, Experiment *e, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s,
                "SELECT t.id, t.number, t.state, r.step, r.metrics, r.action FROM trials t "
                "JOIN reports r ON r.trial_id = t.id AND r.attempt = t.attempt "
                "WHERE t.experiment_id = ? AND t.state IN " ENDED_STATES
                " ORDER BY t.number, r.step",
                &st, err, "ended reports"))
        return err->code;
    sqlite3_bind_int64(st, 1, e->id);
    Trial *t = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (t != NULL && t->id != id) {
            core_load_ended_end(core, t, true, false);
            t = NULL;
        }
        if (t == NULL) {
            TrialState ts = TRIAL_COMPLETED;
            trial_state_parse((const char *)sqlite3_column_text(st, 2), &ts);
            t = core_load_ended_begin(e, id, sqlite3_column_int64(st, 1), ts, NULL);
        }
        json_t *metrics = column_json(st, 4);
        const char *action = (const char *)sqlite3_column_text(st, 5);
        if (metrics != NULL)
            core_load_report(core, t, sqlite3_column_int64(st, 3), metrics,
                             action && strcmp(action, "stop") == 0 ? ACTION_STOP : ACTION_CONTINUE);
        json_decref(metrics);
    }
    if (t != NULL)
        core_load_ended_end(core, t, true, false);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "ended reports");
}

/* The rows of e's ended trials for what they leave in memory (the best
 * value, a Pareto front, the searcher's history): every one when e needs
 * them (core_load_wants_ended_rows), else only the one with the best value
 * (the lowest number among equals, as a scan in number order keeps). */
static int load_ended_rows(Store *s, Core *core, Experiment *e, RungError *err)
{
    bool every = core_load_wants_ended_rows(e);
    char sql[768];
    snprintf(sql, sizeof sql,
             "SELECT t.id, t.number, t.state, t.config, t.last_metrics, t.best_value, t.best_step, "
             "(SELECT max(r.step) FROM reports r WHERE r.trial_id = t.id AND r.attempt = "
             "t.attempt) FROM trials t WHERE t.experiment_id = ? AND t.state IN " ENDED_STATES
             " %s",
             every ? "ORDER BY t.number"
                   : (e->spec.mode == SPEC_MODE_MAX
                          ? "AND t.best_value IS NOT NULL ORDER BY t.best_value DESC, "
                            "t.number LIMIT 1"
                          : "AND t.best_value IS NOT NULL ORDER BY t.best_value, "
                            "t.number LIMIT 1"));
    sqlite3_stmt *st;
    if (prepare(s, sql, &st, err, "ended trials"))
        return err->code;
    sqlite3_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        TrialState ts = TRIAL_COMPLETED;
        trial_state_parse((const char *)sqlite3_column_text(st, 2), &ts);
        json_t *config = column_json(st, 3);
        if (config == NULL)
            continue; /* cannot be a result; load_trials reports a corrupt live one */
        Trial *t = core_load_ended_begin(e, sqlite3_column_int64(st, 0),
                                         sqlite3_column_int64(st, 1), ts, config);
        bool has_best = sqlite3_column_type(st, 5) != SQLITE_NULL;
        core_load_ended_summary(t, column_json(st, 4), has_best, sqlite3_column_double(st, 5),
                                sqlite3_column_int64(st, 6),
                                sqlite3_column_type(st, 7) != SQLITE_NULL,
                                sqlite3_column_int64(st, 7));
        core_load_ended_end(core, t, false, true);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "ended trials");
}

/* Loads what e keeps in memory (core.h, "What lives in memory" in
 * docs/architecture.md): its trials in flight with their reports, and of
 * its history only what the scheduler and searcher use; a pbt experiment
 * whole. */
static int load_trials_and_history(Store *s, Core *core, Experiment *e, RungError *err)
{
    if (core_load_all_trials(e))
        return load_trials(s, core, e, true, err) || load_reports(s, core, e, true, err) ? err->code
                                                                                         : 0;
    if (load_trials(s, core, e, false, err) || load_reports(s, core, e, false, err) ||
        load_ended_counts(s, core, e, err) ||
        (core_load_wants_ended_reports(e) && load_ended_reports(s, core, e, err)) ||
        load_ended_rows(s, core, e, err))
        return err->code;
    return 0;
}

/* Workers seen within this long, or holding a running trial, are loaded at
 * start; the others are read back when they call again. */
#define WORKER_RECENT_MS (3600 * 1000LL)

static int load_workers(Store *s, Core *core, const char *where, int64_t arg, RungError *err)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT id, name, hostname, gpus, cpus, registered_at, last_seen_at, heartbeat, "
             "labels FROM workers WHERE %s ORDER BY id",
             where);
    sqlite3_stmt *st;
    if (prepare(s, sql, &st, err, "load workers"))
        return err->code;
    sqlite3_bind_int64(st, 1, arg);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (core_worker(core, sqlite3_column_int64(st, 0)) != NULL)
            continue;
        json_t *gpus = column_json(st, 3);
        Worker *w = core_load_worker(core, sqlite3_column_int64(st, 0),
                                     (const char *)sqlite3_column_text(st, 1),
                                     (const char *)sqlite3_column_text(st, 2),
                                     gpus ? gpus : json_array(), sqlite3_column_int64(st, 4),
                                     sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6),
                                     column_json(st, 7));
        w->labels = column_json(st, 8);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "load workers");
}

/* Counts of the whole store and the highest ids, for the core's totals. */
static int load_totals(Store *s, Core *core, RungError *err)
{
    int64_t tc[TRIAL__COUNT] = {0}, ec[EXP__COUNT] = {0}, max[3] = {0, 0, 0};
    sqlite3_stmt *st;
    if (prepare(s, "SELECT state, count(*) FROM trials GROUP BY state", &st, err, "counts"))
        return err->code;
    while (sqlite3_step(st) == SQLITE_ROW) {
        TrialState ts;
        if (trial_state_parse((const char *)sqlite3_column_text(st, 0), &ts) == 0)
            tc[ts] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (prepare(s, "SELECT state, count(*) FROM experiments GROUP BY state", &st, err, "counts"))
        return err->code;
    while (sqlite3_step(st) == SQLITE_ROW) {
        ExpState es;
        if (exp_state_parse((const char *)sqlite3_column_text(st, 0), &es) == 0)
            ec[es] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    /* The highest ids ever given, deleted ones too (schema 011): an id is
     * never given twice. */
    if (prepare(s,
                "SELECT max(coalesce((SELECT max(id) FROM experiments), 0), coalesce((SELECT "
                "max_id FROM id_floors WHERE kind = 'experiments'), 0)), max(coalesce((SELECT "
                "max(id) FROM trials), 0), coalesce((SELECT max_id FROM id_floors WHERE kind = "
                "'trials'), 0)), (SELECT max(id) FROM workers)",
                &st, err, "ids"))
        return err->code;
    if (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < 3; i++)
            max[i] = sqlite3_column_int64(st, i);
    sqlite3_finalize(st);
    core_load_totals(core, tc, ec, max[0], max[1], max[2]);
    return 0;
}

/* Loads trials and reports of every experiment loaded since index `from`. */
static int load_trials_of(Store *s, Core *core, int64_t from, RungError *err)
{
    for (int64_t i = from; i < core_n_experiments(core); i++) {
        Experiment *e = core_experiment_at(core, i);
        if (load_trials_and_history(s, core, e, err))
            return err->code;
    }
    return 0;
}

/* Writes what loading changed (experiments found complete), then lets the
 * core release what ended. */
static int write_load_changes(Store *s, Core *core, RungError *err)
{
    CoreChanges c;
    core_changes(core, &c);
    int rc = 0;
    if (c.n_exps + c.n_trials > 0) {
        rc = store_begin(s, err) || store_write_changes(s, &c, err) || store_commit(s, err);
        if (rc) {
            store_rollback(s);
            rc = err->code;
        }
    }
    core_changes_clear(core);
    core_release(core);
    return rc;
}

/* pbt: the checkpoints stored for trials of experiments still in memory
 * (the others' are not asked for again). */
static int load_checkpoints(Store *s, Core *core, RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT trial_id, step, sha256, size, stored_at FROM checkpoints", &st, err,
                "load checkpoints"))
        return err->code;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        CoreCheckpoint c = {.trial_id = sqlite3_column_int64(st, 0),
                            .step = sqlite3_column_int64(st, 1),
                            .size = sqlite3_column_int64(st, 3),
                            .stored_at = sqlite3_column_int64(st, 4)};
        const char *sha = (const char *)sqlite3_column_text(st, 2);
        snprintf(c.sha256, sizeof c.sha256, "%s", sha ? sha : "");
        core_load_checkpoint(core, &c);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "load checkpoints");
}

int store_load(Store *s, Core *core, int64_t now, RungError *err)
{
    if (load_totals(s, core, err) || load_checkpoints(s, core, err) ||
        load_experiments(s, core,
                         "state IN ('running', 'paused') OR id IN (SELECT experiment_id "
                         "FROM trials WHERE state = 'running')",
                         0, err) ||
        load_workers(s, core,
                     "last_seen_at >= ? OR id IN (SELECT worker_id FROM trials "
                     "WHERE state = 'running')",
                     now - WORKER_RECENT_MS, err) ||
        load_trials_of(s, core, 0, err))
        return err->code;
    core_load_done(core, now);
    return write_load_changes(s, core, err);
}

int store_reload_experiment(Store *s, Core *core, int64_t id, int64_t now, RungError *err)
{
    if (load_experiments(s, core, "id = ?", id, err))
        return err->code;
    Experiment *e = core_experiment(core, id);
    if (e == NULL)
        return 0; /* never stored: nothing to reload */
    if (load_trials_and_history(s, core, e, err))
        return err->code;
    core_load_experiment_done(core, e, now);
    return 0;
}

int store_revive_experiment(Store *s, Core *core, int64_t id, int64_t now, RungError *err)
{
    if (load_experiments(s, core, "id = ?", id, err))
        return err->code;
    Experiment *e = core_experiment(core, id);
    if (e == NULL)
        return rung_error_set(err, RUNG_E_NOT_FOUND, NULL, "experiment %lld not found",
                              (long long)id);
    if (load_trials_and_history(s, core, e, err))
        return err->code;
    core_load_revived(core, e, now);
    return 0;
}

int store_readd_failed(Store *s, Core *core, Experiment *e, RungError *err)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT id, number, config, attempt, worker_id, error, created_at, "
                      "started_at, ended_at FROM trials WHERE experiment_id = ? AND "
                      "state = 'failed' ORDER BY number";
    if (prepare(s, sql, &st, err, "failed trials"))
        return err->code;
    sqlite3_bind_int64(st, 1, e->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (core_trial(core, sqlite3_column_int64(st, 0)) != NULL)
            continue; /* still in memory */
        json_t *config = column_json(st, 2);
        if (config == NULL)
            continue;
        core_readd_trial(core, e, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                         TRIAL_FAILED, config, sqlite3_column_int64(st, 3),
                         sqlite3_column_int64(st, 4), (const char *)sqlite3_column_text(st, 5),
                         sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7),
                         sqlite3_column_int64(st, 8));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "failed trials");
}

bool store_has_checkpoint(Store *s, int64_t trial_id, int64_t step)
{
    sqlite3_stmt *st;
    RungError err;
    if (prepare(s, "SELECT 1 FROM checkpoints WHERE trial_id = ?1 AND step = ?2", &st, &err,
                "checkpoint"))
        return true; /* cannot tell: keep it */
    sqlite3_bind_int64(st, 1, trial_id);
    sqlite3_bind_int64(st, 2, step);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc != SQLITE_DONE; /* a row, or an error: keep it */
}

int store_delete_experiment(Store *s, int64_t id, int64_t trial_counts[TRIAL__COUNT],
                            RungError *err)
{
    memset(trial_counts, 0, sizeof(int64_t) * TRIAL__COUNT);
    sqlite3_stmt *st;
    if (prepare(s, "SELECT state, count(*) FROM trials WHERE experiment_id = ? GROUP BY state", &st,
                err, "delete"))
        return err->code;
    sqlite3_bind_int64(st, 1, id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        TrialState ts;
        if (trial_state_parse((const char *)sqlite3_column_text(st, 0), &ts) == 0)
            trial_counts[ts] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    static const char *const sql[] = {
        /* The highest ids so far, kept before their rows may go (schema 011). */
        /* (WHERE true: an upsert's SELECT needs a WHERE to be parsed as one;
         * the id bound below is out of range here and ignored.) */
        "INSERT INTO id_floors (kind, max_id) SELECT 'experiments', coalesce(max(id), 0) FROM "
        "experiments WHERE true ON CONFLICT (kind) DO UPDATE SET max_id = "
        "max(max_id, excluded.max_id)",
        "INSERT INTO id_floors (kind, max_id) SELECT 'trials', coalesce(max(id), 0) FROM trials "
        "WHERE true ON CONFLICT (kind) DO UPDATE SET max_id = max(max_id, excluded.max_id)",
        "DELETE FROM reports WHERE trial_id IN (SELECT id FROM trials WHERE experiment_id = ?)",
        /* pbt's stored checkpoints (their files: api.c, after this). */
        "DELETE FROM checkpoints WHERE trial_id IN (SELECT id FROM trials WHERE experiment_id = ?)",
        "DELETE FROM trials WHERE experiment_id = ?",
        "DELETE FROM experiments WHERE id = ?",
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (prepare(s, sql[i], &st, err, "delete"))
            return err->code;
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return db_error(s, err, "delete");
    }
    return 0;
}

/* The most lines a trial's merged warnings quote (request.h,
 * REQUEST_MAX_WARN_LAST), as core.c keeps them. */
#define GANG_WARN_LAST 5

int store_gang_warnings(Store *s, int64_t trial_id, const char *token, json_t *warnings,
                        RungError *err)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT gang FROM trials WHERE id = ?", &st, err, "gang warnings"))
        return err->code;
    sqlite3_bind_int64(st, 1, trial_id);
    int rc = sqlite3_step(st);
    json_t *stored = rc == SQLITE_ROW ? column_json(st, 0) : NULL;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_error(s, err, "gang warnings");
    Gang *g = stored != NULL ? members_from_json(stored) : NULL;
    json_decref(stored);
    GangMember *m = members_by_token(g, token);
    if (m == NULL || (m->warnings != NULL && json_equal(m->warnings, warnings))) {
        members_free(g);
        return 0;
    }
    json_decref(m->warnings);
    m->warnings = json_incref(warnings);
    json_t *gang = members_to_json(g);
    json_t *merged = members_warnings(g, GANG_WARN_LAST);
    members_free(g);
    if (prepare(s, "UPDATE trials SET gang = ?1, warnings = ?2 WHERE id = ?3", &st, err,
                "gang warnings") == 0) {
        sqlite3_bind_int64(st, 3, trial_id);
        char *text = json_dumps(gang, JSON_COMPACT);
        char *merged_text = merged != NULL ? json_dumps(merged, JSON_COMPACT) : NULL;
        if (text == NULL || (merged != NULL && merged_text == NULL))
            abort(); /* as bind_json: no memory, no state to trust */
        sqlite3_bind_text(st, 1, text, -1, free);
        if (merged_text != NULL)
            sqlite3_bind_text(st, 2, merged_text, -1, free);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, err, "gang warnings");
        sqlite3_finalize(st);
    } else {
        rc = err->code;
    }
    json_decref(gang);
    json_decref(merged);
    return rc;
}

int store_reload_worker(Store *s, Core *core, int64_t id, RungError *err)
{
    return load_workers(s, core, "id = ?", id, err);
}

int store_reports(Store *s, int64_t trial_id, int64_t attempt, int64_t after_step, int64_t limit,
                  json_t **items, RungError *err)
{
    sqlite3_stmt *st = s->st[ST_REPORTS_OF];
    bind_int(st, ":trial", trial_id);
    bind_int(st, ":attempt", attempt);
    bind_int(st, ":after", after_step);
    bind_int(st, ":limit", limit);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char when[32];
        rung_time_format(sqlite3_column_int64(st, 1), when, sizeof when);
        json_t *metrics = column_json(st, 2);
        json_array_append_new(arr, json_pack("{s:I, s:s, s:o}", "step",
                                             (json_int_t)sqlite3_column_int64(st, 0), "time", when,
                                             "metrics", metrics ? metrics : json_object()));
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return db_error(s, err, "read reports");
    }
    *items = arr;
    return 0;
}
