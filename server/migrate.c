/* `rungd migrate --from STORE --to STORE`: a copy of a whole store into a
 * new one, SQLite to PostgreSQL or back (docs/operations.md, "PostgreSQL";
 * store_copy does the copy and its checks). */
#include "migrate.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: rungd migrate --from STORE --to STORE\n\n"
                 "Copies every table of one store into a new, empty one, then checks the copy\n"
                 "(row counts, and a sample of rows found column by column). Stop every rungd\n"
                 "on both first. STORE is one of:\n"
                 "  sqlite:PATH         a SQLite file (the source must exist)\n"
                 "  postgresql://...    a PostgreSQL database, without its password (that from\n"
                 "                      ~/.pgpass or PGPASSFILE)\n"
                 "  pgfile:PATH         a file whose first line is the connection string,\n"
                 "                      password included\n");
}

/* Opens `spec` (see usage) as a store at the newest schema; on PostgreSQL
 * it takes the lead, so that no rungd starts on it during the copy. */
static Store *open_spec(const char *which, const char *spec, bool source)
{
    static char line[2][4096];
    StoreOptions opt = {.durable_full = true};
    const char *path = NULL;
    if (strncmp(spec, "sqlite:", 7) == 0) {
        path = spec + 7;
        if (source && access(path, R_OK) != 0) {
            fprintf(stderr, "rungd migrate: --%s: no SQLite file %s\n", which, path);
            return NULL;
        }
    } else if (strncmp(spec, "postgresql://", 13) == 0 || strncmp(spec, "postgres://", 11) == 0) {
        if (strstr(spec, "password") != NULL ||
            (strchr(spec + 11, '@') && strchr(spec + 11, ':') < strchr(spec + 11, '@'))) {
            fprintf(stderr,
                    "rungd migrate: --%s: no password on the command line; use ~/.pgpass "
                    "or pgfile:PATH\n",
                    which);
            return NULL;
        }
        opt.pg_conninfo = spec;
    } else if (strncmp(spec, "pgfile:", 7) == 0) {
        char *buf = line[source ? 0 : 1];
        FILE *f = fopen(spec + 7, "r");
        if (f == NULL || fgets(buf, sizeof line[0], f) == NULL) {
            fprintf(stderr, "rungd migrate: --%s: cannot read a connection string from %s\n", which,
                    spec + 7);
            if (f)
                fclose(f);
            return NULL;
        }
        fclose(f);
        buf[strcspn(buf, "\r\n")] = '\0';
        opt.pg_conninfo = buf;
    } else {
        fprintf(stderr,
                "rungd migrate: --%s: '%s' is none of sqlite:PATH, postgresql://..., "
                "pgfile:PATH\n",
                which, spec);
        return NULL;
    }
    Store *s;
    RungError err;
    if (store_open(path, &opt, &s, &err) != 0) {
        fprintf(stderr, "rungd migrate: --%s: %s\n", which, err.message);
        return NULL;
    }
    if (store_has_leader(s)) {
        StoreLeader leader;
        int rc = store_leader_claim(s, "rungd migrate", &leader, &err);
        if (rc != 1) {
            if (rc == 0)
                fprintf(stderr,
                        "rungd migrate: --%s: a rungd leads that database (%s): stop "
                        "every rungd on it first\n",
                        which, leader.holder);
            else
                fprintf(stderr, "rungd migrate: --%s: %s\n", which, err.message);
            store_close(s);
            return NULL;
        }
    }
    return s;
}

int migrate_main(int argc, char **argv)
{
    const char *from = NULL, *to = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (i + 1 < argc && strcmp(argv[i], "--from") == 0) {
            from = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--to") == 0) {
            to = argv[++i];
        } else {
            fprintf(stderr, "rungd migrate: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (from == NULL || to == NULL) {
        fprintf(stderr, "rungd migrate: give --from and --to\n");
        usage(stderr);
        return 2;
    }
    Store *src = open_spec("from", from, true);
    if (src == NULL)
        return 1;
    Store *dst = open_spec("to", to, false);
    if (dst == NULL) {
        store_leader_resign(src);
        store_close(src);
        return 1;
    }
    RungError err;
    int rc = store_copy(src, dst, stdout, &err);
    if (rc != 0)
        fprintf(stderr, "rungd migrate: %s; the destination was left as it was\n", err.message);
    store_leader_resign(src);
    store_leader_resign(dst);
    store_close(src);
    store_close(dst);
    return rc == 0 ? 0 : 1;
}
