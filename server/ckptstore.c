/* The checkpoint store's files; see ckptstore.h. */
#include "ckptstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256hex.h"

#define SUBDIR "checkpoints"

static void say(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errsize, const char *fmt, ...)
{
    if (errsize == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsize, fmt, ap);
    va_end(ap);
}

static int sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) {
        errno = EIO;
        return -1;
    }
    rung_sha256_to_hex(md, hex);
    return 0;
}


int ckptstore_path(const char *data_dir, int64_t trial_id, int64_t step, char *out, size_t size)
{
    if (trial_id < 1 || step < 0) {
        errno = EINVAL;
        return -1;
    }
    int n = snprintf(out, size, "%s/" SUBDIR "/%" PRId64 "-%" PRId64 ".tar", data_dir, trial_id,
                     step);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
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

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int ckptstore_sync_dir(const char *data_dir)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/checkpoints", data_dir) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return sync_dir(dir);
}

int ckptstore_put(const char *data_dir, int64_t trial_id, int64_t step, const void *data,
                  size_t len, const char *expect_sha256_hex, char sha256_hex_out[65], char *err,
                  size_t errsize)
{
    say(err, errsize, "%s", "");
    char final[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX];
    if (ckptstore_path(data_dir, trial_id, step, final, sizeof final) != 0) {
        say(err, errsize, "checkpoint of trial %" PRId64 " at step %" PRId64 ": %s", trial_id, step,
            errno == EINVAL ? "not a trial id and step" : "its path is too long");
        return -1;
    }
    snprintf(dir, sizeof dir, "%s/" SUBDIR, data_dir); /* shorter than final */
    if (snprintf(tmp, sizeof tmp, "%s/.%" PRId64 "-%" PRId64 ".tar.XXXXXX", dir, trial_id, step) >=
        (int)sizeof tmp) {
        say(err, errsize, "the path %.200s... is too long", final);
        return -1;
    }
    char hex[65];
    if (sha256_hex(data == NULL && len == 0 ? "" : data, len, hex) != 0) {
        say(err, errsize, "SHA-256 of the checkpoint failed");
        return -1;
    }
    /* Checked before anything is made: a checkpoint damaged on its way is
     * refused, and the one stored before stays. */
    if (expect_sha256_hex != NULL &&
        (!rung_is_sha256_hex(expect_sha256_hex) || strcasecmp(hex, expect_sha256_hex) != 0)) {
        say(err, errsize,
            "checkpoint of trial %" PRId64 " at step %" PRId64
            ": its SHA-256 is %s, not the expected %.80s",
            trial_id, step, hex, expect_sha256_hex);
        return -1;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        say(err, errsize, "cannot make the folder %s: %s", dir, strerror(errno));
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        say(err, errsize, "cannot make a file in %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = -1;
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        say(err, errsize, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
    } else if (close(fd) != 0) {
        say(err, errsize, "cannot write %s: %s", tmp, strerror(errno));
    } else if (rename(tmp, final) != 0) {
        say(err, errsize, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
    } else if (sync_dir(dir) != 0) {
        /* in place, though a crash now might lose it */
        say(err, errsize, "cannot sync the folder %s: %s", dir, strerror(errno));
        return -1;
    } else {
        memcpy(sha256_hex_out, hex, sizeof hex);
        return 0;
    }
    unlink(tmp);
    return rc;
}

int ckptstore_get(const char *data_dir, int64_t trial_id, int64_t step, void **data, size_t *len,
                  char sha256_hex_out[65])
{
    *data = NULL;
    *len = 0;
    char path[PATH_MAX];
    if (ckptstore_path(data_dir, trial_id, step, path, sizeof path) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 1 : -1;
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        e = EINVAL; /* not a file put made */
    else if ((uint64_t)st.st_size > SIZE_MAX - 1)
        e = EFBIG;
    if (e != 0) {
        close(fd);
        errno = e;
        return -1;
    }
    /* A stored file is only ever replaced (rename), not rewritten: the
     * size read is the size of what fd holds. */
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size ? size : 1);
    if (buf == NULL) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            e = n < 0 ? errno : EIO; /* shorter than it was: not put's doing */
            free(buf);
            close(fd);
            errno = e;
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    if (sha256_hex(buf, size, sha256_hex_out) != 0) {
        free(buf);
        return -1;
    }
    *data = buf;
    *len = size;
    return 0;
}

/* Whether name is "<prefix><digits>.tar", followed by nothing (a
 * checkpoint) or by "." and anything (a put's temporary file). */
static bool matches(const char *name, const char *prefix, bool temporary)
{
    size_t p = strlen(prefix);
    if (strncmp(name, prefix, p) != 0)
        return false;
    const char *s = name + p;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    if (strncmp(s, ".tar", 4) != 0)
        return false;
    return temporary ? s[4] == '.' : s[4] == '\0';
}

/* <data_dir>/checkpoints for reading, its descriptor in *dfd (for
 * unlinkat; closedir closes both); NULL with errno set, ENOENT when the
 * folder is not there. */
static DIR *open_folder(const char *data_dir, int *dfd)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/" SUBDIR, data_dir) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    *dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*dfd < 0)
        return NULL;
    DIR *d = fdopendir(*dfd);
    if (d == NULL) {
        int e = errno;
        close(*dfd);
        errno = e;
    }
    return d;
}

int ckptstore_remove_trial(const char *data_dir, int64_t trial_id)
{
    if (trial_id < 1) {
        errno = EINVAL;
        return -1;
    }
    int dfd;
    DIR *d = open_folder(data_dir, &dfd);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    char stored[32], temporary[32];
    snprintf(stored, sizeof stored, "%" PRId64 "-", trial_id);
    snprintf(temporary, sizeof temporary, ".%" PRId64 "-", trial_id);
    int removed = 0, rc = 0;
    struct dirent *ent;
    /* (removing entries while reading the folder is allowed: each is
     * returned at most once) */
    while ((ent = readdir(d)) != NULL) {
        bool is_stored = matches(ent->d_name, stored, false);
        if (!is_stored && !matches(ent->d_name, temporary, true))
            continue;
        if (unlinkat(dfd, ent->d_name, 0) != 0) {
            if (errno == ENOENT)
                continue;
            rc = -1;
            break;
        }
        removed += is_stored;
    }
    int e = errno;
    closedir(d);
    if (rc != 0) {
        errno = e;
        return -1;
    }
    return removed;
}

int ckptstore_remove(const char *data_dir, int64_t trial_id, int64_t step)
{
    char path[PATH_MAX];
    if (ckptstore_path(data_dir, trial_id, step, path, sizeof path) != 0)
        return -1;
    return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

int ckptstore_sweep(const char *data_dir, bool (*keep)(void *ctx, int64_t trial_id, int64_t step),
                    void *ctx)
{
    int dfd;
    DIR *d = open_folder(data_dir, &dfd);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    int removed = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        const char *n = ent->d_name;
        /* "<trial>-<step>.tar" exactly, as ckptstore_path spells it. */
        long long trial = 0, step = 0;
        char canon[64];
        bool stored = sscanf(n, "%lld-%lld.tar", &trial, &step) == 2 && trial >= 1 && step >= 0 &&
                      snprintf(canon, sizeof canon, "%lld-%lld.tar", trial, step) > 0 &&
                      strcmp(canon, n) == 0;
        bool stale = n[0] == '.' && (strncmp(n, ".upload-", 8) == 0 || strstr(n, ".tar.") != NULL);
        if ((stored && keep(ctx, trial, step)) || (!stored && !stale))
            continue;
        if (unlinkat(dfd, n, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
