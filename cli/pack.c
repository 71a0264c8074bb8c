/* Packing a working directory (pack.h). */
#include "pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ignore.h"

#define IGNORE_FILE ".rungignore"
#define IGNORE_MAX (1 << 20) /* bytes of a .rungignore read */

typedef struct {
    const char *dir;
    CliIgnore *ig;
    struct archive *a;
    EVP_MD_CTX *sha;
    int fd;
    CliPack *out;
    char *why;
    size_t why_size;
    int64_t entries;
} Pack;

static la_ssize_t on_write(struct archive *a, void *client, const void *data, size_t n)
{
    Pack *p = client;
    for (size_t off = 0; off < n;) {
        ssize_t w = write(p->fd, (const char *)data + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            archive_set_error(a, errno, "%s", strerror(errno));
            return -1;
        }
        off += (size_t)w;
    }
    EVP_DigestUpdate(p->sha, data, n);
    p->out->size += (int64_t)n;
    return (la_ssize_t)n;
}

static int fail(Pack *p, const char *fmt, const char *a, const char *b)
{
    snprintf(p->why, p->why_size, fmt, a, b);
    return -1;
}

static int by_name(const struct dirent **x, const struct dirent **y)
{
    return strcmp((*x)->d_name, (*y)->d_name);
}

/* Whether the link at rel (relative to the top), pointing to target,
 * stays inside the tree: relative, and never above the top. */
static bool link_inside(const char *rel, const char *target)
{
    if (target[0] == '/' || target[0] == '\0')
        return false;
    int depth = 0;
    for (const char *s = rel; *s; s++)
        depth += *s == '/'; /* the folders above the link */
    for (const char *t = target; *t;) {
        size_t n = strcspn(t, "/");
        if (n == 2 && t[0] == '.' && t[1] == '.') {
            if (--depth < 0)
                return false;
        } else if (n > 0 && !(n == 1 && t[0] == '.')) {
            depth++;
        }
        t += n;
        while (*t == '/')
            t++;
    }
    return true;
}

static int header(Pack *p, const char *rel, mode_t type, mode_t perm, int64_t size,
                  const char *link)
{
    if (++p->entries > CLI_PACK_MAX_ENTRIES) {
        char n[32];
        snprintf(n, sizeof n, "%d", CLI_PACK_MAX_ENTRIES);
        return fail(p, "%s holds more than %s files and folders: leave some out in .rungignore",
                    p->dir, n);
    }
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm);
    archive_entry_set_size(e, size);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    archive_entry_set_mtime(e, 0, 0);
    if (link != NULL)
        archive_entry_set_symlink(e, link);
    int rc = archive_write_header(p->a, e);
    archive_entry_free(e);
    if (rc != ARCHIVE_OK)
        return fail(p, "cannot pack %s: %s", rel, archive_error_string(p->a));
    return 0;
}

static int add_file(Pack *p, const char *full, const char *rel, const struct stat *st)
{
    int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(p, "cannot read %s: %s", rel, strerror(errno));
    mode_t perm = (st->st_mode & 0111) ? 0755 : 0644;
    int rc = header(p, rel, AE_IFREG, perm, (int64_t)st->st_size, NULL);
    char buf[64 * 1024];
    int64_t left = (int64_t)st->st_size;
    while (rc == 0 && left > 0) {
        ssize_t n = read(fd, buf, sizeof buf < (size_t)left ? sizeof buf : (size_t)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = fail(p, "%s changed while it was packed (%s)", rel,
                      n < 0 ? strerror(errno) : "it became shorter");
            break;
        }
        if (archive_write_data(p->a, buf, (size_t)n) != n)
            rc = fail(p, "cannot pack %s: %s", rel, archive_error_string(p->a));
        left -= n;
    }
    close(fd);
    p->out->files++;
    p->out->bytes += (int64_t)st->st_size;
    return rc;
}

/* Packs the folder rel ("" for the top) below p->dir, entries by name. */
static int walk(Pack *p, const char *rel)
{
    char full[PATH_MAX];
    snprintf(full, sizeof full, "%s%s%s", p->dir, rel[0] ? "/" : "", rel);
    struct dirent **names;
    int n = scandir(full, &names, NULL, by_name);
    if (n < 0)
        return fail(p, "cannot list %s: %s", rel[0] ? rel : p->dir, strerror(errno));
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (rc != 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        char child[PATH_MAX], path[PATH_MAX];
        if ((size_t)snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", name) >=
                sizeof child ||
            (size_t)snprintf(path, sizeof path, "%s/%s", p->dir, child) >= sizeof path) {
            rc = fail(p, "%s/%s: the path is too long", rel, name);
            continue;
        }
        struct stat st;
        if (lstat(path, &st) != 0) {
            rc = fail(p, "cannot read %s: %s", child, strerror(errno));
            continue;
        }
        bool is_dir = S_ISDIR(st.st_mode);
        char cfg[PATH_MAX + 16];
        snprintf(cfg, sizeof cfg, "%s/pyvenv.cfg", path);
        bool venv = is_dir && access(cfg, F_OK) == 0;
        if (!cli_ignore_packed(p->ig, child, is_dir, venv))
            continue;
        if (is_dir) {
            rc = header(p, child, AE_IFDIR, 0755, 0, NULL);
            if (rc == 0)
                rc = walk(p, child);
        } else if (S_ISREG(st.st_mode)) {
            rc = add_file(p, path, child, &st);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlink(path, target, sizeof target - 1);
            if (len < 0) {
                rc = fail(p, "cannot read the link %s: %s", child, strerror(errno));
                continue;
            }
            target[len] = '\0';
            if (!link_inside(child, target))
                rc = fail(p,
                          "%s is a symbolic link to %s, outside the working directory: a "
                          "worker could not follow it; copy the file in, or leave the link "
                          "out in .rungignore",
                          child, target);
            else if ((rc = header(p, child, AE_IFLNK, 0777, 0, target)) == 0)
                p->out->files++;
        } else {
            rc = fail(p,
                      "%s is not a file, folder or link (a FIFO, socket or device): leave it "
                      "out in .rungignore%s",
                      child, "");
        }
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* The text of dir/.rungignore, or NULL when there is none. */
static char *read_ignore(const char *dir, size_t *len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, IGNORE_FILE);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = malloc(IGNORE_MAX);
    *len = text ? fread(text, 1, IGNORE_MAX, f) : 0;
    fclose(f);
    return text;
}

int cli_pack_dir(const char *dir, const char *tar_path, CliPack *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, why_size, "%s: not a folder (%s)", dir, errno ? strerror(errno) : "a file");
        return -1;
    }
    size_t len = 0;
    char *text = read_ignore(dir, &len);
    Pack p = {.dir = dir, .out = out, .why = why, .why_size = why_size};
    p.ig = cli_ignore_new(text, len);
    free(text);
    p.sha = EVP_MD_CTX_new();
    p.a = archive_write_new();
    p.fd = open(tar_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = -1;
    if (p.ig == NULL || p.sha == NULL || p.a == NULL ||
        EVP_DigestInit_ex(p.sha, EVP_sha256(), NULL) != 1) {
        snprintf(why, why_size, "out of memory");
    } else if (p.fd < 0) {
        snprintf(why, why_size, "cannot write %s: %s", tar_path, strerror(errno));
    } else if (archive_write_set_format_pax_restricted(p.a) != ARCHIVE_OK ||
               archive_write_set_bytes_in_last_block(p.a, 1) != ARCHIVE_OK ||
               archive_write_open(p.a, &p, NULL, on_write, NULL) != ARCHIVE_OK) {
        snprintf(why, why_size, "cannot start the tar: %s", archive_error_string(p.a));
    } else {
        rc = walk(&p, "");
        if (archive_write_close(p.a) != ARCHIVE_OK && rc == 0)
            rc = fail(&p, "cannot finish the tar: %s%s", archive_error_string(p.a), "");
    }
    if (rc == 0) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        EVP_DigestFinal_ex(p.sha, md, &md_len);
        for (unsigned i = 0; i < 32; i++)
            snprintf(out->sha256 + 2 * i, 3, "%02x", md[i]);
    }
    if (p.a != NULL)
        archive_write_free(p.a);
    EVP_MD_CTX_free(p.sha);
    cli_ignore_free(p.ig);
    if (p.fd >= 0 && close(p.fd) != 0 && rc == 0)
        rc = fail(&p, "cannot write %s: %s", tar_path, strerror(errno));
    if (rc != 0 && p.fd >= 0)
        unlink(tar_path);
    return rc;
}
