/* Checkpoint copies, packs and unpacks; see ckpt.h. */
#include "ckpt.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
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

#include "sha256hex.h"
#include "why.h"

#define MAX_DEPTH 128          /* folders inside folders (a descriptor each) */
#define BUF_SIZE (256 * 1024)  /* a read's size when bytes are copied or hashed */
#define READ_BLOCK (64 * 1024) /* libarchive's reads of a tar */
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static int write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}


/* Finishes ctx (and frees it) into hex. */
static int sha256_final(EVP_MD_CTX *ctx, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    int ok = EVP_DigestFinal_ex(ctx, md, &len) == 1 && len == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        errno = EIO;
        return -1;
    }
    rung_sha256_to_hex(md, hex);
    return 0;
}

static EVP_MD_CTX *sha256_start(void)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        ctx = NULL;
    }
    if (ctx == NULL)
        errno = ENOMEM;
    return ctx;
}

/* Hashes what fd holds from its offset to its end. */
static int sha256_fd(int fd, char hex[65], int64_t *size)
{
    EVP_MD_CTX *ctx = sha256_start();
    char *buf = malloc(BUF_SIZE);
    if (ctx == NULL || buf == NULL) {
        EVP_MD_CTX_free(ctx);
        free(buf);
        errno = ENOMEM;
        return -1;
    }
    int64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, BUF_SIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)) {
            int e = n < 0 ? errno : EIO;
            EVP_MD_CTX_free(ctx);
            free(buf);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        total += n;
    }
    free(buf);
    if (sha256_final(ctx, hex) != 0)
        return -1;
    if (size)
        *size = total;
    return 0;
}

int ckpt_sha256_file(const char *path, char hex[65], int64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = sha256_fd(fd, hex, size);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* ---- walking a folder ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The names in folder fd, sorted (a pack of the same files is the same
 * tar), without "." and "..", and at the top without the trial's logs. */
static int list_dir(int fd, bool top, char ***names_out, size_t *n_out)
{
    int copy = dup(fd);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    if (d == NULL) {
        int e = errno;
        if (copy >= 0)
            close(copy);
        errno = e;
        return -1;
    }
    rewinddir(d); /* the copy shares fd's offset */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    int rc = 0;
    errno = 0;
    while ((ent = readdir(d)) != NULL) {
        const char *name = ent->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (top && (strcmp(name, CKPT_STDOUT_LOG) == 0 || strcmp(name, CKPT_STDERR_LOG) == 0))
            continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 16;
            char **grown = realloc(names, c * sizeof *grown);
            if (grown == NULL) {
                rc = -1;
                break;
            }
            names = grown;
            cap = c;
        }
        if ((names[n] = strdup(name)) == NULL) {
            rc = -1;
            break;
        }
        n++;
        errno = 0;
    }
    if (rc == 0 && errno != 0)
        rc = -1; /* readdir failed */
    int e = rc ? (errno ? errno : ENOMEM) : 0;
    closedir(d);
    if (rc != 0) {
        free_names(names, n);
        errno = e;
        return -1;
    }
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    *names_out = names;
    *n_out = n;
    return 0;
}

/* The path of the entry being worked on, relative to the folder walked,
 * for entry names in a tar and for messages. */
typedef struct {
    char rel[PATH_MAX];
    size_t len;
} RelPath;

static int rel_push(RelPath *r, const char *name)
{
    size_t n = strlen(name), sep = r->len > 0;
    if (r->len + sep + n + 1 > sizeof r->rel) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (sep)
        r->rel[r->len++] = '/';
    memcpy(r->rel + r->len, name, n + 1);
    r->len += n;
    return 0;
}

static void rel_pop(RelPath *r, size_t len)
{
    r->len = len;
    r->rel[len] = '\0';
}

/* ---- copying ---- */

typedef struct {
    const char *from, *to;
    RelPath path;
    dev_t to_dev; /* `to` itself, left out when it lies inside `from` */
    ino_t to_ino;
    char *buf; /* BUF_SIZE bytes for copies */
    char *err;
    size_t errsize;
} Copy;

/* Removes entry name of folder dfd, a whole folder included; it does not
 * follow links or leave file system dev. */
static int remove_entry(int dfd, const char *name, dev_t dev, int depth)
{
    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    int sub = openat(dfd, name, DIR_FLAGS);
    struct stat st;
    if (sub < 0 || fstat(sub, &st) != 0) {
        int e = errno;
        if (sub >= 0)
            close(sub);
        errno = e;
        return -1;
    }
    if (st.st_dev != dev || depth >= MAX_DEPTH) {
        close(sub);
        errno = st.st_dev != dev ? EXDEV : ELOOP;
        return -1;
    }
    /* (a read-only folder is emptied all the same; when this fails,
     * removing its entries says why) */
    if ((st.st_mode & S_IRWXU) != S_IRWXU)
        (void)fchmod(sub, (st.st_mode & 07777) | S_IRWXU);
    char **names;
    size_t n;
    int rc = list_dir(sub, false, &names, &n);
    int e = errno;
    if (rc == 0) {
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = remove_entry(sub, names[i], dev, depth + 1);
        e = errno;
        free_names(names, n);
    }
    close(sub);
    if (rc != 0) {
        errno = e;
        return -1;
    }
    return unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* Copies the bytes of regular file name (stat st) from sfd to dfd. */
static int copy_bytes(Copy *c, int sfd, int dfd, const char *name, const struct stat *st)
{
    int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0 && errno == ENOENT)
        return 0; /* renamed or removed since it was listed: a temporary name */
    if (in < 0) {
        rung_why(c->err, c->errsize, "cannot open %s/%s: %s", c->from, c->path.rel,
                 strerror(errno));
        return -1;
    }
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
        rung_why(c->err, c->errsize, "cannot make %s/%s: %s", c->to, c->path.rel, strerror(errno));
        close(in);
        return -1;
    }
    int rc = 0;
    /* A copy-on-write clone where the file system has them (btrfs, XFS):
     * instant, and still the receiver's own file. */
    bool cloned = ioctl(out, FICLONE, in) == 0;
    for (; !cloned;) {
        ssize_t n = read(in, c->buf, BUF_SIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rung_why(c->err, c->errsize, "cannot read %s/%s: %s", c->from, c->path.rel,
                     strerror(errno));
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        if (write_all(out, c->buf, (size_t)n) != 0) {
            rung_why(c->err, c->errsize, "cannot write %s/%s: %s", c->to, c->path.rel,
                     strerror(errno));
            rc = -1;
            break;
        }
    }
    /* The mode and times of the original, as a link would have them. */
    const struct timespec times[2] = {st->st_atim, st->st_mtim};
    if (rc == 0 && (fchmod(out, st->st_mode & 07777) != 0 || futimens(out, times) != 0)) {
        rung_why(c->err, c->errsize, "cannot set the mode or times of %s/%s: %s", c->to,
                 c->path.rel, strerror(errno));
        rc = -1;
    }
    if (close(out) != 0 && rc == 0) {
        rung_why(c->err, c->errsize, "cannot write %s/%s: %s", c->to, c->path.rel, strerror(errno));
        rc = -1;
    }
    close(in);
    return rc;
}

static int copy_tree(Copy *c, int sfd, int dfd, dev_t ddev, int depth)
{
    char **names;
    size_t n;
    if (list_dir(sfd, depth == 0, &names, &n) != 0) {
        rung_why(c->err, c->errsize, "cannot read the folder %s/%s: %s", c->from, c->path.rel,
                 strerror(errno));
        return -1;
    }
    int rc = 0;
    size_t at = c->path.len;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = names[i];
        if (rel_push(&c->path, name) != 0) {
            rung_why(c->err, c->errsize, "a path in %s is too long: %s/%.100s...", c->from,
                     c->path.rel, name);
            rc = -1;
            break;
        }
        struct stat st;
        if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) { /* (ENOENT: removed since it was listed) */
                rung_why(c->err, c->errsize, "cannot stat %s/%s: %s", c->from, c->path.rel,
                         strerror(errno));
                rc = -1;
            }
        } else if (S_ISDIR(st.st_mode) && st.st_dev == c->to_dev && st.st_ino == c->to_ino) {
            /* `to` inside `from`: copying it would copy the copy */
        } else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
            /* FIFOs, sockets, devices: not a checkpoint's */
        } else if (remove_entry(dfd, name, ddev, 0) != 0) {
            rung_why(c->err, c->errsize, "cannot replace %s/%s: %s", c->to, c->path.rel,
                     strerror(errno));
            rc = -1;
        } else if (S_ISREG(st.st_mode)) {
            /* Never a hard link: a program that opens an existing name for
             * writing (torch.save, or open(tmp, "w") on a temporary name
             * the copy took mid-write) would write through it into the
             * donor's checkpoint. A copy (a reflink where the file system
             * has them) is the receiver's own. */
            rc = copy_bytes(c, sfd, dfd, name, &st);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlinkat(sfd, name, target, sizeof target);
            if (len < 0 || (size_t)len >= sizeof target) {
                rung_why(c->err, c->errsize, "cannot read the link %s/%s: %s", c->from, c->path.rel,
                         len < 0 ? strerror(errno) : "target too long");
                rc = -1;
            } else {
                target[len] = '\0';
                if (symlinkat(target, dfd, name) != 0) {
                    rung_why(c->err, c->errsize, "cannot make the link %s/%s: %s", c->to,
                             c->path.rel, strerror(errno));
                    rc = -1;
                }
            }
        } else if (depth + 1 >= MAX_DEPTH) {
            rung_why(c->err, c->errsize, "%s/%s: folders nested deeper than %d", c->from,
                     c->path.rel, MAX_DEPTH);
            rc = -1;
        } else {
            int ssub = openat(sfd, name, DIR_FLAGS);
            int dsub = -1;
            if (ssub < 0) {
                rung_why(c->err, c->errsize, "cannot open %s/%s: %s", c->from, c->path.rel,
                         strerror(errno));
                rc = -1;
            } else if (mkdirat(dfd, name, 0700) != 0 || (dsub = openat(dfd, name, DIR_FLAGS)) < 0) {
                rung_why(c->err, c->errsize, "cannot make %s/%s: %s", c->to, c->path.rel,
                         strerror(errno));
                rc = -1;
            } else {
                /* Made writable (0700) for the copy, given the original's
                 * mode and times after it. */
                rc = copy_tree(c, ssub, dsub, ddev, depth + 1);
                const struct timespec times[2] = {st.st_atim, st.st_mtim};
                if (rc == 0 &&
                    (fchmod(dsub, st.st_mode & 07777) != 0 || futimens(dsub, times) != 0)) {
                    rung_why(c->err, c->errsize, "cannot set the mode or times of %s/%s: %s", c->to,
                             c->path.rel, strerror(errno));
                    rc = -1;
                }
            }
            if (ssub >= 0)
                close(ssub);
            if (dsub >= 0)
                close(dsub);
        }
        rel_pop(&c->path, at);
    }
    free_names(names, n);
    return rc;
}

/* Whether folder outer holds folder inner, at any depth (paths without
 * links compared: a folder has one parent). */
static bool holds(const char *outer, const char *inner)
{
    char *o = realpath(outer, NULL), *i = realpath(inner, NULL);
    bool in = false;
    if (o && i) {
        size_t n = strlen(o);
        in = strcmp(o, "/") == 0 || (strncmp(o, i, n) == 0 && i[n] == '/');
    }
    free(o);
    free(i);
    return in;
}

/* Removes every entry of folder dfd (named `to` in messages) but the two
 * logs at its top (ckpt.h, "Replacement"). */
static int clear_dir(int dfd, const char *to, dev_t dev, char *err, size_t errsize)
{
    char **mine;
    size_t n;
    if (list_dir(dfd, true, &mine, &n) != 0) {
        rung_why(err, errsize, "cannot read the folder %s: %s", to, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (remove_entry(dfd, mine[i], dev, 0) != 0) {
            rung_why(err, errsize, "cannot remove %s/%s: %s", to, mine[i], strerror(errno));
            rc = -1;
        }
    free_names(mine, n);
    return rc;
}

int ckpt_copy_dir(const char *from, const char *to, char *err, size_t errsize)
{
    rung_why(err, errsize, "%s", "");
    Copy c = {.from = from, .to = to, .err = err, .errsize = errsize};
    int sfd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0) {
        rung_why(err, errsize, "cannot open the folder %s: %s", from, strerror(errno));
        return -1;
    }
    if (mkdir(to, 0700) != 0 && errno != EEXIST) {
        rung_why(err, errsize, "cannot make the folder %s: %s", to, strerror(errno));
        close(sfd);
        return -1;
    }
    int dfd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat sst, dst;
    if (dfd < 0 || fstat(dfd, &dst) != 0 || fstat(sfd, &sst) != 0) {
        rung_why(err, errsize, "cannot open the folder %s: %s", to, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        close(sfd);
        return -1;
    }
    int rc = -1;
    if (sst.st_dev == dst.st_dev && sst.st_ino == dst.st_ino) {
        rung_why(err, errsize, "cannot copy the folder %s into itself (%s)", from, to);
    } else if (holds(to, from)) {
        /* replacing an entry of `to` could remove `from` itself */
        rung_why(err, errsize, "cannot copy the folder %s into %s, which holds it", from, to);
    } else if ((c.buf = malloc(BUF_SIZE)) == NULL) {
        rung_why(err, errsize, "out of memory copying %s", from);
    } else {
        c.to_dev = dst.st_dev;
        c.to_ino = dst.st_ino;
        /* The receiver's own files go first (its logs stay): a checkpoint
         * the donor no longer has must not be found in the receiver's
         * folder, where it would be the receiver's own weights under the
         * donor's config; without it the program says it starts over. */
        rc = clear_dir(dfd, to, dst.st_dev, err, errsize);
        if (rc == 0)
            rc = copy_tree(&c, sfd, dfd, dst.st_dev, 0);
    }
    free(c.buf);
    close(dfd);
    close(sfd);
    return rc;
}

/* ---- packing ---- */

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
    if (write_all(p->fd, data, n) != 0) {
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
    if (list_dir(dfd, depth == 0, &names, &n) != 0) {
        rung_why(p->err, p->errsize, "cannot read the folder %s/%s: %s", p->dir, p->path.rel,
                 strerror(errno));
        return -1;
    }
    int rc = 0;
    size_t at = p->path.len;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = names[i];
        if (rel_push(&p->path, name) != 0) {
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
        rel_pop(&p->path, at);
    }
    free_names(names, n);
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
    p.sha = sha256_start();
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
    p.sha = NULL; /* freed by sha256_final */
    if (sha256_final(sha, sha256_hex) != 0) {
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

/* ---- unpacking ---- */

/* One unpack: the tar, its descriptor and what its entries add up to
 * (ckpt.h, "What an unpack accepts"). */
typedef struct {
    const char *tar_path;
    int fd;
    int64_t limit;    /* file bytes at most: the tar's own size */
    int64_t entries;  /* headers read */
    int64_t declared; /* the sum of their sizes */
    char *err;
    size_t errsize;
} Unpack;

/* The compression whose magic number opens fd, or NULL. ckpt_pack writes
 * plain tar, and a compressed one is refused by name rather than as "not
 * a tar": its contents are bounded by nothing (a gzip bomb). */
static const char *compression(int fd)
{
    unsigned char m[6];
    ssize_t n = pread(fd, m, sizeof m, 0);
    if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b)
        return "gzip";
    if (n >= 2 && m[0] == 0x1f && (m[1] == 0x9d || m[1] == 0xa0))
        return "compress";
    if (n >= 3 && memcmp(m, "BZh", 3) == 0)
        return "bzip2";
    if (n >= 6 && memcmp(m,
                         "\xfd"
                         "7zXZ\0",
                         6) == 0)
        return "xz";
    if (n >= 4 && memcmp(m, "\x28\xb5\x2f\xfd", 4) == 0)
        return "zstd";
    if (n >= 4 && memcmp(m, "\x04\x22\x4d\x18", 4) == 0)
        return "lz4";
    return NULL;
}

/* Why entry e may not be extracted, or NULL when it may. Links of either
 * kind are refused outright, wherever they point: a link that stays
 * inside today is a name a program writes through tomorrow, and the
 * worker's own tars hold none (ckpt_pack leaves them out). */
static const char *entry_refused(struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e);
    if (name == NULL || name[0] == '\0')
        return "has no name";
    if (name[0] == '/')
        return "has an absolute name";
    for (const char *s = name; *s;) {
        const char *end = strchr(s, '/');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return "has a \"..\" in its name";
        s += n;
        while (*s == '/')
            s++;
    }
    /* (a link's target may come with any type: libarchive makes a link
     * of an entry that has one) */
    if (archive_entry_hardlink(e) != NULL)
        return "is a hard link";
    if (archive_entry_symlink(e) != NULL || archive_entry_filetype(e) == AE_IFLNK)
        return "is a symbolic link";
    if (archive_entry_filetype(e) != AE_IFREG && archive_entry_filetype(e) != AE_IFDIR)
        return "is not a regular file or a folder";
    if (archive_entry_sparse_count(e) > 0)
        return "is a sparse file (its size is not what the tar holds)";
    if (archive_entry_size(e) < 0)
        return "has no size";
    return NULL;
}

/* Counts entry e against the limits: -1, err naming it, when it is
 * refused or goes over them. An uncompressed tar holds each file's bytes
 * after its header, so the sum of the sizes its headers say is less than
 * the tar's own size; a header that says more lies. */
static int entry_check(Unpack *u, struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e);
    const char *why = entry_refused(e);
    if (why) {
        rung_why(u->err, u->errsize, "%s: the entry \"%.200s\" %s; nothing extracted", u->tar_path,
                 name ? name : "?", why);
        return -1;
    }
    if (++u->entries > CKPT_MAX_ENTRIES) {
        rung_why(u->err, u->errsize,
                 "%s: the entry \"%.200s\" makes more than %d entries; nothing "
                 "extracted",
                 u->tar_path, name, CKPT_MAX_ENTRIES);
        return -1;
    }
    int64_t size = archive_entry_size(e);
    if (size > u->limit - u->declared) {
        rung_why(
            u->err, u->errsize,
            "%s: the entry \"%.200s\" says %lld bytes, which makes more than the tar's own %lld "
            "bytes can hold; nothing extracted",
            u->tar_path, name, (long long)size, (long long)u->limit);
        return -1;
    }
    u->declared += size;
    return 0;
}

/* A reader of the tar on u->fd, from its start: plain tar only, no filter
 * (archive_read_support_filter_none adds none: it is always there). */
static struct archive *open_reader(Unpack *u)
{
    if (lseek(u->fd, 0, SEEK_SET) != 0) {
        rung_why(u->err, u->errsize, "cannot read %s: %s", u->tar_path, strerror(errno));
        return NULL;
    }
    struct archive *a = archive_read_new();
    if (a == NULL) {
        rung_why(u->err, u->errsize, "out of memory reading %s", u->tar_path);
        return NULL;
    }
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_filter_none(a) != ARCHIVE_OK ||
        archive_read_open_fd(a, u->fd, READ_BLOCK) != ARCHIVE_OK) {
        rung_why(u->err, u->errsize, "cannot read %s: %s; nothing extracted", u->tar_path,
                 archive_error_string(a));
        archive_read_free(a);
        return NULL;
    }
    u->entries = u->declared = 0;
    return a;
}

/* Reads every header; -1 at the first entry refused. */
static int check_entries(Unpack *u)
{
    struct archive *a = open_reader(u);
    if (a == NULL)
        return -1;
    int rc = 0;
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "cannot read %s: %s; nothing extracted", u->tar_path,
                     archive_error_string(a));
            rc = -1;
            break;
        }
        if (entry_check(u, e) != 0) {
            rc = -1;
            break;
        }
    }
    archive_read_free(a);
    return rc;
}

/* Copies the data of entry e (named name) from a to disk, each block
 * bounded by the entry's size and all of them by the tar's. */
static int extract_data(Unpack *u, struct archive *a, struct archive *disk, struct archive_entry *e,
                        const char *name, int64_t *written)
{
    int64_t size = archive_entry_size(e);
    const void *block;
    size_t len;
    la_int64_t offset;
    int r;
    while ((r = archive_read_data_block(a, &block, &len, &offset)) == ARCHIVE_OK) {
        if (offset < 0 || (int64_t)len > size - offset || (int64_t)len > u->limit - *written) {
            rung_why(
                u->err, u->errsize,
                "%s: the entry \"%.200s\" holds more than the %lld bytes its header says; nothing "
                "extracted",
                u->tar_path, name, (long long)size);
            return -1;
        }
        *written += (int64_t)len;
        if (archive_write_data_block(disk, block, len, offset) < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "%s: cannot write the entry \"%.200s\": %s", u->tar_path,
                     name, archive_error_string(disk));
            return -1;
        }
    }
    if (r != ARCHIVE_EOF) {
        rung_why(u->err, u->errsize, "%s: cannot read the entry \"%.200s\": %s; nothing extracted",
                 u->tar_path, name, archive_error_string(a));
        return -1;
    }
    return 0;
}

/* Extracts the tar into folder base, an absolute path without links. */
static int extract(Unpack *u, const char *base)
{
    struct archive *a = open_reader(u);
    if (a == NULL)
        return -1;
    /* Entries are extracted to base/<name>, since libarchive extracts
     * relative to the working folder and a chdir would move every thread
     * of the worker. Hence no ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS,
     * which would refuse every such name: entry_refused refuses absolute
     * names itself, before base is prefixed. base is a folder made empty
     * for this unpack, and no link is ever extracted into it, so the
     * SECURE_ checks below are a second line. Neither the owner
     * (ARCHIVE_EXTRACT_OWNER) nor the set-id and sticky bits
     * (ARCHIVE_EXTRACT_PERM) nor ACLs, attributes or flags are restored:
     * a file gets its permission bits less the umask. */
    struct archive *disk = archive_write_disk_new();
    if (disk == NULL) {
        rung_why(u->err, u->errsize, "out of memory extracting %s", u->tar_path);
        archive_read_free(a);
        return -1;
    }
    archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_UNLINK |
                                             ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_SECURE_SYMLINKS);
    int rc = 0;
    int64_t written = 0;
    char full[PATH_MAX];
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "cannot read %s: %s; nothing extracted", u->tar_path,
                     archive_error_string(a));
            rc = -1;
            break;
        }
        /* again: the file may have changed since it was checked */
        if (entry_check(u, e) != 0) {
            rc = -1;
            break;
        }
        const char *name = archive_entry_pathname(e);
        if (snprintf(full, sizeof full, "%s/%s", base, name) >= (int)sizeof full) {
            rung_why(u->err, u->errsize, "%s: the entry \"%.200s...\" makes too long a path",
                     u->tar_path, name);
            rc = -1;
            break;
        }
        /* (a copy: name points into the entry, which set_pathname frees) */
        char shown[256];
        snprintf(shown, sizeof shown, "%.255s", name);
        archive_entry_set_pathname(e, full);
        archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
        if (archive_write_header(disk, e) < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "%s: cannot extract the entry \"%s\": %s", u->tar_path,
                     shown, archive_error_string(disk));
            rc = -1;
            break;
        }
        if (extract_data(u, a, disk, e, shown, &written) != 0) {
            rc = -1;
            break;
        }
        if (archive_write_finish_entry(disk) < ARCHIVE_WARN) {
            rung_why(u->err, u->errsize, "%s: cannot write the entry \"%s\": %s", u->tar_path,
                     shown, archive_error_string(disk));
            rc = -1;
            break;
        }
    }
    /* close sets the folders' times and modes, deferred until their
     * entries are in */
    if (archive_write_close(disk) < ARCHIVE_WARN && rc == 0) {
        rung_why(u->err, u->errsize, "cannot finish extracting %s: %s", u->tar_path,
                 archive_error_string(disk));
        rc = -1;
    }
    archive_write_free(disk);
    archive_read_free(a);
    return rc;
}

/* Splits path into its folder (parent, PATH_MAX bytes) and last name
 * (name, NAME_MAX + 1 bytes), trailing slashes aside. */
static int split_path(const char *path, char *parent, char *name)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/')
        start--;
    if (n - start == 0 || n - start > NAME_MAX || start >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(name, path + start, n - start);
    name[n - start] = '\0';
    if (start == 0) {
        strcpy(parent, ".");
    } else {
        size_t p = start > 1 ? start - 1 : 1; /* "/x": "/" */
        memcpy(parent, path, p);
        parent[p] = '\0';
    }
    return 0;
}

/* Moves the entries of folder tfd (the unpacked tar) into folder `to`,
 * made (0700) when missing, after emptying it but for its logs. A tar's own
 * logs at its top are left out, as ckpt_pack leaves them out: each trial
 * keeps its own. */
static int install(int tfd, const char *to, char *err, size_t errsize)
{
    if (mkdir(to, 0700) != 0 && errno != EEXIST) {
        rung_why(err, errsize, "cannot make the folder %s: %s", to, strerror(errno));
        return -1;
    }
    int dfd = open(to, DIR_FLAGS);
    struct stat st, tst;
    if (dfd < 0 || fstat(dfd, &st) != 0 || fstat(tfd, &tst) != 0) {
        rung_why(err, errsize, "cannot open the folder %s: %s", to,
                 errno == ENOTDIR || errno == ELOOP ? "not a folder" : strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    if (st.st_dev != tst.st_dev) { /* before anything is removed */
        rung_why(err, errsize, "the folder %s is on another file system than its parent", to);
        close(dfd);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    int rc = clear_dir(dfd, to, st.st_dev, err, errsize);
    if (rc == 0 && (rc = list_dir(tfd, true, &names, &n)) != 0) {
        rung_why(err, errsize, "cannot read the folder unpacked for %s: %s", to, strerror(errno));
        names = NULL;
        n = 0;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (renameat(tfd, names[i], dfd, names[i]) == 0)
            continue;
        /* Linux moves a folder into another only when it may write it
         * (its ".." changes): a read-only one is made writable meanwhile. */
        struct stat es;
        if (errno == EACCES && fstatat(tfd, names[i], &es, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(es.st_mode) &&
            fchmodat(tfd, names[i], (es.st_mode & 07777) | S_IWUSR, 0) == 0) {
            if (renameat(tfd, names[i], dfd, names[i]) == 0) {
                (void)fchmodat(dfd, names[i], es.st_mode & 07777, 0);
                continue;
            }
        }
        rung_why(err, errsize, "cannot move %s into %s: %s", names[i], to, strerror(errno));
        rc = -1;
    }
    free_names(names, n);
    close(dfd);
    return rc;
}

int ckpt_unpack(const char *tar_path, const char *expect_sha256_hex, const char *to, char *err,
                size_t errsize)
{
    rung_why(err, errsize, "%s", "");
    if (!rung_is_sha256_hex(expect_sha256_hex)) {
        rung_why(err, errsize, "the expected SHA-256 of %s is not 64 hex digits", tar_path);
        return -1;
    }
    Unpack u = {.tar_path = tar_path, .err = err, .errsize = errsize};
    u.fd = open(tar_path, O_RDONLY | O_CLOEXEC);
    if (u.fd < 0) {
        rung_why(err, errsize, "cannot open %s: %s", tar_path, strerror(errno));
        return -1;
    }
    char hex[65], parent[PATH_MAX], name[NAME_MAX + 1], tmp[PATH_MAX];
    const char *z;
    int rc = -1;
    if (sha256_fd(u.fd, hex, &u.limit) != 0) {
        rung_why(err, errsize, "cannot read %s: %s", tar_path, strerror(errno));
    } else if (strcasecmp(hex, expect_sha256_hex) != 0) {
        rung_why(err, errsize, "%s: its SHA-256 is %s, not the expected %s; nothing extracted",
                 tar_path, hex, expect_sha256_hex);
    } else if ((z = compression(u.fd)) != NULL) {
        rung_why(err, errsize,
                 "%s is compressed (%s): only a plain tar is unpacked, as a worker packs; nothing "
                 "extracted",
                 tar_path, z);
    } else if (check_entries(&u) != 0) {
        /* err says which entry */
    } else if (split_path(to, parent, name) != 0 ||
               snprintf(tmp, sizeof tmp, "%s/.%s.unpack-XXXXXX", parent, name) >= (int)sizeof tmp) {
        rung_why(err, errsize, "the path %.200s is too long", to);
    } else if (mkdtemp(tmp) == NULL) {
        rung_why(err, errsize, "cannot make a folder to unpack into (%s): %s", tmp,
                 strerror(errno));
    } else {
        /* Unpacked beside `to`, on its file system, and moved in only
         * whole: a refusal halfway leaves `to` as it was. */
        char *base = realpath(tmp, NULL);
        int tfd = base != NULL ? open(base, DIR_FLAGS) : -1;
        if (tfd < 0)
            rung_why(err, errsize, "cannot open the folder %s: %s", tmp, strerror(errno));
        else if (extract(&u, base) == 0)
            rc = install(tfd, to, err, errsize);
        struct stat st;
        int pfd = open(parent, DIR_FLAGS);
        const char *tname = strrchr(tmp, '/') + 1;
        if ((pfd < 0 || fstat(pfd, &st) != 0 || remove_entry(pfd, tname, st.st_dev, 0) != 0) &&
            rc == 0) /* (a failure's own message comes first) */
            rung_why(err, errsize, "unpacked, but cannot remove %s: %s", tmp, strerror(errno));
        if (pfd >= 0)
            close(pfd);
        if (tfd >= 0)
            close(tfd);
        free(base);
    }
    close(u.fd);
    return rc;
}
