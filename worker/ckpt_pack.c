/* Packing a trial folder into a tar for another machine (ckpt.h). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "ckpt_internal.h"
#include "why.h"

typedef struct {
    const char *dir;
    RelPath path;
    struct archive *a;
    struct archive_entry *entry;
    int fd;        /* the temporary file */
    dev_t tmp_dev; /* and its identity, left out when it lies inside dir */
    ino_t tmp_ino;
    EVP_MD_CTX *sha; /* the bytes written, hashed as they go */
    int64_t written;
    int64_t entries; /* headers written, at most CKPT_MAX_ENTRIES */
    int64_t links;   /* symbolic links left out */
    char first_link[256];
    char *buf;
    char *err;
    size_t errsize;
} Pack;

/* libarchive's output: the file, and the hash of exactly what it gets. */
static la_ssize_t pack_write(struct archive *a, void *client, const void *data, size_t n)
{
    Pack *p = client;
    if (ckpt_write_all(p->fd, data, n) != 0) {
        archive_set_error(a, errno, "%s", strerror(errno));
        return -1;
    }
    if (EVP_DigestUpdate(p->sha, data, n) != 1) {
        archive_set_error(a, EIO, "SHA-256 failed");
        return -1;
    }
    p->written += (int64_t)n;
    return (la_ssize_t)n;
}

/* Writes the header of entry p->path (stat st: a file or a folder). */
static int pack_header(Pack *p, const struct stat *st)
{
    if (++p->entries > CKPT_MAX_ENTRIES) {
        rung_why(p->err, p->errsize,
                 "%s holds more than %d files and folders, the most a checkpoint may", p->dir,
                 CKPT_MAX_ENTRIES);
        return -1;
    }
    archive_entry_clear(p->entry);
    archive_entry_set_pathname(p->entry, p->path.rel);
    archive_entry_copy_stat(p->entry, st);
    /* ARCHIVE_WARN: e.g. a name not in UTF-8, written as it is */
    if (archive_write_header(p->a, p->entry) < ARCHIVE_WARN) {
        rung_why(p->err, p->errsize, "cannot pack %s/%s: %s", p->dir, p->path.rel,
                 archive_error_string(p->a));
        return -1;
    }
    return 0;
}

static int pack_file(Pack *p, int dfd, const char *name)
{
    int in = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0) {
        rung_why(p->err, p->errsize, "cannot open %s/%s: %s", p->dir, p->path.rel, strerror(errno));
        if (in >= 0)
            close(in);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        rung_why(p->err, p->errsize, "%s/%s changed while it was packed", p->dir, p->path.rel);
        close(in);
        return -1;
    }
    if (pack_header(p, &st) != 0) {
        close(in);
        return -1;
    }
    int64_t total = 0;
    for (;;) {
        ssize_t n = read(in, p->buf, BUF_SIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rung_why(p->err, p->errsize, "cannot read %s/%s: %s", p->dir, p->path.rel,
                     strerror(errno));
            close(in);
            return -1;
        }
        if (n == 0)
            break;
        total += n;
        if (total > st.st_size)
            break; /* grew: refused below */
        if (archive_write_data(p->a, p->buf, (size_t)n) < 0) {
            rung_why(p->err, p->errsize, "cannot pack %s/%s: %s", p->dir, p->path.rel,
                     archive_error_string(p->a));
            close(in);
            return -1;
        }
    }
    close(in);
    /* The header promised st_size bytes: a file being written meanwhile
     * would be packed cut or padded with zeros, a checkpoint nobody can
     * load. */
    if (total != st.st_size) {
        rung_why(p->err, p->errsize,
                 "%s/%s changed size while it was packed (%lld bytes, then %lld)", p->dir,
                 p->path.rel, (long long)st.st_size, (long long)total);
        return -1;
    }
    return 0;
}

static int pack_tree(Pack *p, int dfd, int depth)
{
    char **names;
    size_t n;
    if (ckpt_list_dir(dfd, depth == 0, &names, &n) != 0) {
        rung_why(p->err, p->errsize, "cannot read the folder %s/%s: %s", p->dir, p->path.rel,
                 strerror(errno));
        return -1;
    }
    int rc = 0;
    size_t at = p->path.len;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = names[i];
        if (ckpt_rel_push(&p->path, name) != 0) {
            rung_why(p->err, p->errsize, "a path in %s is too long: %s/%.100s...", p->dir,
                     p->path.rel, name);
            rc = -1;
            break;
        }
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) {
                rung_why(p->err, p->errsize, "cannot stat %s/%s: %s", p->dir, p->path.rel,
                         strerror(errno));
                rc = -1;
            }
        } else if (S_ISREG(st.st_mode)) {
            if (!(st.st_dev == p->tmp_dev && st.st_ino == p->tmp_ino)) /* the tar itself */
                rc = pack_file(p, dfd, name);
        } else if (S_ISLNK(st.st_mode)) {
            /* Left out: an unpack refuses links (ckpt.h), and what a
             * worker packs, a worker unpacks. */
            if (p->links++ == 0)
                snprintf(p->first_link, sizeof p->first_link, "%.255s", p->path.rel);
        } else if (S_ISDIR(st.st_mode)) {
            if (depth + 1 >= MAX_DEPTH) {
                rung_why(p->err, p->errsize, "%s/%s: folders nested deeper than %d", p->dir,
                         p->path.rel, MAX_DEPTH);
                rc = -1;
            } else if ((rc = pack_header(p, &st)) == 0) {
                int sub = openat(dfd, name, DIR_FLAGS);
                if (sub < 0) {
                    rung_why(p->err, p->errsize, "cannot open %s/%s: %s", p->dir, p->path.rel,
                             strerror(errno));
                    rc = -1;
                } else {
                    rc = pack_tree(p, sub, depth + 1);
                    close(sub);
                }
            }
        } /* else FIFOs, sockets, devices: left out */
        ckpt_rel_pop(&p->path, at);
    }
    ckpt_free_names(names, n);
    return rc;
}

/* fsyncs the folder that holds path, so that a rename into it lasts. */
static int sync_parent(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        strcpy(dir, ".");
    } else if (slash == path) {
        strcpy(dir, "/");
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int ckpt_pack(const char *dir, const char *tar_path, char *sha256_hex, int64_t *size, char *err,
              size_t errsize)
{
    rung_why(err, errsize, "%s", "");
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", tar_path) >= (int)sizeof tmp) {
        rung_why(err, errsize, "the path %.200s... is too long", tar_path);
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        rung_why(err, errsize, "cannot open the folder %s: %s", dir, strerror(errno));
        return -1;
    }
    Pack p = {.dir = dir, .err = err, .errsize = errsize, .fd = mkostemp(tmp, O_CLOEXEC)};
    if (p.fd < 0) {
        rung_why(err, errsize, "cannot make %s: %s", tmp, strerror(errno));
        close(dfd);
        return -1;
    }
    struct stat tst;
    int rc = -1;
    if (fstat(p.fd, &tst) != 0) {
        rung_why(err, errsize, "cannot stat %s: %s", tmp, strerror(errno));
        goto out;
    }
    p.tmp_dev = tst.st_dev;
    p.tmp_ino = tst.st_ino;
    p.sha = ckpt_sha256_start();
    p.buf = malloc(BUF_SIZE);
    p.a = archive_write_new();
    p.entry = archive_entry_new();
    if (p.sha == NULL || p.buf == NULL || p.a == NULL || p.entry == NULL) {
        rung_why(err, errsize, "out of memory packing %s", dir);
        goto out;
    }
    if (archive_write_set_format_pax_restricted(p.a) != ARCHIVE_OK ||
        archive_write_add_filter_none(p.a) != ARCHIVE_OK ||
        archive_write_open2(p.a, &p, NULL, pack_write, NULL, NULL) != ARCHIVE_OK) {
        rung_why(err, errsize, "cannot start the tar %s: %s", tmp, archive_error_string(p.a));
        goto out;
    }
    if (pack_tree(&p, dfd, 0) != 0)
        goto out;
    /* close writes the end-of-archive blocks, through pack_write */
    if (archive_write_close(p.a) != ARCHIVE_OK) {
        rung_why(err, errsize, "cannot finish the tar %s: %s", tmp, archive_error_string(p.a));
        goto out;
    }
    if (fsync(p.fd) != 0) {
        rung_why(err, errsize, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    EVP_MD_CTX *sha = p.sha;
    p.sha = NULL; /* freed by ckpt_sha256_final */
    if (ckpt_sha256_final(sha, sha256_hex) != 0) {
        rung_why(err, errsize, "SHA-256 of %s failed", tmp);
        goto out;
    }
    if (rename(tmp, tar_path) != 0) {
        rung_why(err, errsize, "cannot rename %s to %s: %s", tmp, tar_path, strerror(errno));
        goto out;
    }
    tmp[0] = '\0'; /* nothing to remove now */
    if (sync_parent(tar_path) != 0) {
        rung_why(err, errsize, "cannot sync the folder of %s: %s", tar_path, strerror(errno));
        goto out;
    }
    if (size)
        *size = p.written;
    if (p.links > 0)
        rung_why(err, errsize, "left out %lld symbolic link%s (%s%s): a checkpoint carries none",
                 (long long)p.links, p.links > 1 ? "s" : "", p.first_link,
                 p.links > 1 ? ", ..." : "");
    rc = 0;
out:
    if (p.a)
        archive_write_free(p.a); /* (after a failure, closes without the end blocks) */
    archive_entry_free(p.entry);
    EVP_MD_CTX_free(p.sha);
    free(p.buf);
    close(p.fd);
    if (tmp[0] != '\0')
        unlink(tmp);
    close(dfd);
    return rc;
}
