/* Checkpoint copies between folders of this machine, and what packs and
 * unpacks share (hashes, listing a folder, clearing one); see ckpt.h. */
#include "ckpt.h"

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

#include "ckpt_internal.h"
#include "sha256hex.h"
#include "why.h"

int ckpt_write_all(int fd, const void *data, size_t n)
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
int ckpt_sha256_final(EVP_MD_CTX *ctx, char hex[65])
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

EVP_MD_CTX *ckpt_sha256_start(void)
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
int ckpt_sha256_fd(int fd, char hex[65], int64_t *size)
{
    EVP_MD_CTX *ctx = ckpt_sha256_start();
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
    if (ckpt_sha256_final(ctx, hex) != 0)
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
    int rc = ckpt_sha256_fd(fd, hex, size);
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

void ckpt_free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The names in folder fd, sorted (a pack of the same files is the same
 * tar), without "." and "..", and at the top without the trial's logs. */
int ckpt_list_dir(int fd, bool top, char ***names_out, size_t *n_out)
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
        ckpt_free_names(names, n);
        errno = e;
        return -1;
    }
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    *names_out = names;
    *n_out = n;
    return 0;
}

int ckpt_rel_push(RelPath *r, const char *name)
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

void ckpt_rel_pop(RelPath *r, size_t len)
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
int ckpt_remove_entry(int dfd, const char *name, dev_t dev, int depth)
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
    int rc = ckpt_list_dir(sub, false, &names, &n);
    int e = errno;
    if (rc == 0) {
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = ckpt_remove_entry(sub, names[i], dev, depth + 1);
        e = errno;
        ckpt_free_names(names, n);
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
        if (ckpt_write_all(out, c->buf, (size_t)n) != 0) {
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
    if (ckpt_list_dir(sfd, depth == 0, &names, &n) != 0) {
        rung_why(c->err, c->errsize, "cannot read the folder %s/%s: %s", c->from, c->path.rel,
                 strerror(errno));
        return -1;
    }
    int rc = 0;
    size_t at = c->path.len;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = names[i];
        if (ckpt_rel_push(&c->path, name) != 0) {
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
        } else if (ckpt_remove_entry(dfd, name, ddev, 0) != 0) {
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
        ckpt_rel_pop(&c->path, at);
    }
    ckpt_free_names(names, n);
    return rc;
}

/* Whether folder outer holds folder inner, at any depth (paths without
 * links compared: a folder has one parent). */
bool ckpt_holds(const char *outer, const char *inner)
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
int ckpt_clear_dir(int dfd, const char *to, dev_t dev, char *err, size_t errsize)
{
    char **mine;
    size_t n;
    if (ckpt_list_dir(dfd, true, &mine, &n) != 0) {
        rung_why(err, errsize, "cannot read the folder %s: %s", to, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (ckpt_remove_entry(dfd, mine[i], dev, 0) != 0) {
            rung_why(err, errsize, "cannot remove %s/%s: %s", to, mine[i], strerror(errno));
            rc = -1;
        }
    ckpt_free_names(mine, n);
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
    } else if (ckpt_holds(to, from)) {
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
        rc = ckpt_clear_dir(dfd, to, dst.st_dev, err, errsize);
        if (rc == 0)
            rc = copy_tree(&c, sfd, dfd, dst.st_dev, 0);
    }
    free(c.buf);
    close(dfd);
    close(sfd);
    return rc;
}
