/* The store's database file (store.h: store_fault, store_check; docs/operations.md,
 * "The database file").
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
#include "store_internal.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

extern const char *const rung_migrations[];

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
 * the only copy of the acknowledged work. Outside a transaction. SQLite
 * only (VACUUM INTO, on its own handle). */
void store_rescue(Store *s)
{
    sqlite3 *lite = db_sqlite(s->db);
    char stamp[32], dest[PATH_MAX];
    now_text(stamp, sizeof stamp, ".rescued-%Y%m%dT%H%M%SZ");
    if (lite == NULL || !path_with(dest, sizeof dest, s->path, stamp))
        return;
    char *sql = sqlite3_mprintf("VACUUM INTO %Q", dest);
    char *msg = NULL;
    int rc = sql ? sqlite3_exec(lite, sql, NULL, NULL, &msg) : SQLITE_NOMEM;
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
void store_set_fault(Store *s, const char *fmt, ...)
{
    if (s->fault[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->fault, sizeof s->fault, fmt, ap);
    va_end(ap);
    if (!s->serving)
        return; /* at the open: the start fails with it */
    if (db_kind(s->db) == DB_POSTGRES) {
        /* No file to mark, and nothing this rungd still holds in memory may
         * be answered: it exits, its requests unanswered (none was said
         * kept), and its clients go on with the leader (a standby now, or
         * this one again once systemd restarts it: exit status 1;
         * docs/operations.md, "A standby rungd"). */
        LOG_ERROR("store: %s; rungd exits", s->fault);
        _exit(1);
    }
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
void store_note_own_writes(Store *s)
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
int store_guard(Store *s, bool content, RungError *err)
{
    if (s->fault[0] == '\0' && sqlite_damage[0] != '\0')
        store_set_fault(s, "SQLite found the database file %s damaged: %s", s->path, sqlite_damage);
    struct stat now, path_st;
    char wal[PATH_MAX];
    /* The open file first, the path after: a rename over the path between
     * the two calls is then seen as the path naming another file, never as
     * the open file unlinked while the path still named it. */
    bool fstat_ok = fstat(s->lock_fd, &now) == 0;
    if (s->fault[0] != '\0') {
        /* stopped already */
    } else if (stat(s->path, &path_st) != 0) {
        store_set_fault(s, "the database file %s was deleted or moved while rungd ran (%s)",
                        s->path, strerror(errno));
    } else if (!same_file(&path_st, &s->opened)) {
        store_set_fault(
            s, "%s names another file than the database rungd opened (replaced while it ran)",
            s->path);
    } else if (!fstat_ok || now.st_nlink == 0) {
        store_set_fault(s, "the database file %s was deleted while rungd ran", s->path);
    } else if (content && (now.st_size != s->size || now.st_mtim.tv_sec != s->mtime.tv_sec ||
                           now.st_mtim.tv_nsec != s->mtime.tv_nsec)) {
        store_set_fault(s, "another program wrote to the database file %s while rungd ran",
                        s->path);
    } else if (s->wal_known && path_with(wal, sizeof wal, s->path, "-wal")) {
        struct stat wal_st;
        if (stat(wal, &wal_st) != 0)
            store_set_fault(s, "the database's write-ahead log %s was deleted while rungd ran",
                            wal);
        else if (!same_file(&wal_st, &s->wal))
            store_set_fault(s, "%s names another file than the write-ahead log rungd opened", wal);
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
static int64_t print_rows(Db *db, const char *sql, const char *label, FILE *out)
{
    DbStmt *st;
    if (db_prepare(db, sql, &st) != DB_OK) {
        fprintf(out, "%s: %s\n", label, db_errmsg(db));
        return -1;
    }
    int64_t n = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        if (n++ >= 20)
            continue;
        fprintf(out, "%s:", label);
        for (int c = 0; c < db_column_count(st); c++) {
            const char *v = db_column_text(st, c);
            fprintf(out, " %s", v ? v : "NULL");
        }
        fputc('\n', out);
    }
    if (rc != DB_DONE)
        fprintf(out, "%s: %s\n", label, db_errmsg(db));
    db_finalize(st);
    return rc == DB_DONE ? n : -1;
}

/* The single integer that sql returns, or -1. */
static int64_t query_int(Db *db, const char *sql)
{
    DbStmt *st;
    if (db_prepare(db, sql, &st) != DB_OK)
        return -1;
    int64_t v = db_step(st) == DB_ROW ? db_column_int64(st, 0) : -1;
    db_finalize(st);
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
    /* SQLite only: a read-only connection of its own to the file. */
    Db *db = NULL;
    if (db_open_sqlite(path, SQLITE_OPEN_READONLY, &db) != DB_OK) {
        fprintf(out, "%s: cannot open: %s\n", path, db ? db_errmsg(db) : "out of memory");
        db_close(db);
        return 1;
    }
    sqlite3_busy_timeout(db_sqlite(db), 5000);
    /* integrity_check reads every page and index; its single row "ok"
     * means sound. */
    DbStmt *st;
    bool sound = false;
    if (db_prepare(db, "PRAGMA integrity_check(20)", &st) == DB_OK) {
        int rc;
        int64_t n = 0;
        while ((rc = db_step(st)) == DB_ROW) {
            const char *row = db_column_text(st, 0);
            n++;
            if (n == 1 && row != NULL && strcmp(row, "ok") == 0)
                sound = true;
            else
                sound = false;
            fprintf(out, "integrity_check: %s\n", row ? row : "NULL");
        }
        if (rc != DB_DONE) {
            fprintf(out, "integrity_check: %s\n", db_errmsg(db));
            sound = false;
        }
        db_finalize(st);
    } else {
        fprintf(out, "integrity_check: %s\n", db_errmsg(db));
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
    db_close(db);
    return sound ? 0 : 1;
}

/* st_size of path; 0 when it does not exist (a WAL checkpointed away). */
static int64_t file_bytes(const char *path, bool *exists)
{
    struct stat st;
    *exists = path != NULL && path[0] != '\0' && stat(path, &st) == 0;
    return *exists ? (int64_t)st.st_size : 0;
}

int64_t store_database_bytes(Store *s)
{
    /* SQLite only (its own handle): SQLite names its files (an absolute
     * path, "" for a database in memory); the shared-memory index (-shm)
     * is a cache, not data. */
    sqlite3 *lite = db_sqlite(s->db);
    if (lite == NULL)
        return -1;
    const char *db = sqlite3_db_filename(lite, "main");
    bool exists, wal_exists;
    int64_t bytes = file_bytes(db, &exists);
    if (!exists)
        return -1;
    return bytes + file_bytes(sqlite3_filename_wal(db), &wal_exists);
}

/* Takes an exclusive flock on the database file itself. Two daemons on one
 * database would each believe they own every trial; the second one must
 * refuse to start. The lock belongs to the file (its inode), so a symbolic
 * or hard link to a database in use is refused too, which a lock file
 * beside the path could not see. flock locks are separate from the POSIX
 * locks SQLite takes, so the database stays readable by other programs,
 * the sqlite3 shell included. */
int store_lock_database(Store *s, const char *path, RungError *err)
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

int store_file_before_open(const char *path, const StoreOptions *opt, RungError *err)
{
    /* Before the first call into SQLite (later calls are refused, harmless). */
    sqlite3_config(SQLITE_CONFIG_LOG, on_sqlite_log, NULL);
    if (!path_with((char[PATH_MAX]){0}, PATH_MAX, path, ".rescued-00000000T000000Z"))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "db", "the database path is too long");
    return check_start(path, opt, err);
}

void store_file_opened(Store *s, const char *path, const StoreOptions *opt)
{
    store_note_own_writes(s);
    mark_created(path);
    char fault_path[PATH_MAX];
    if (opt->init && path_with(fault_path, sizeof fault_path, path, ".fault") &&
        unlink(fault_path) == 0)
        LOG_INFO("store: --init: removed %s; rungd uses the database at %s again", fault_path,
                 path);
}
