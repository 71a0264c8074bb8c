/* The blob store's files (blobs.h). */
#include "blobs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool blobs_is_sha256(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++)
        if (!isxdigit((unsigned char)s[n]))
            return false;
    return n == 64;
}

static int blobs_dir(const char *data_dir, char *out, size_t size)
{
    if ((size_t)snprintf(out, size, "%s/blobs", data_dir) >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int blobs_path(const char *data_dir, const char *sha256_hex, char *out, size_t size)
{
    if (!blobs_is_sha256(sha256_hex)) {
        errno = EINVAL;
        return -1;
    }
    if ((size_t)snprintf(out, size, "%s/blobs/%s.tar", data_dir, sha256_hex) >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

bool blobs_held(const char *data_dir, const char *sha256_hex, int64_t *size)
{
    char path[PATH_MAX];
    struct stat st;
    if (blobs_path(data_dir, sha256_hex, path, sizeof path) != 0 || stat(path, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return false;
    if (size != NULL)
        *size = (int64_t)st.st_size;
    return true;
}

static int sync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int blobs_adopt(const char *data_dir, const char *from, const char *sha256_hex)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (blobs_dir(data_dir, dir, sizeof dir) != 0 ||
        blobs_path(data_dir, sha256_hex, path, sizeof path) != 0)
        return -1;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    if (chmod(from, 0600) != 0 || sync_path(from, O_RDONLY) != 0 || rename(from, path) != 0)
        return -1;
    return sync_path(dir, O_RDONLY | O_DIRECTORY);
}

/* Calls fn for each <sha>.tar in the blobs folder with its stat. */
static void blobs_each(const char *data_dir,
                       void (*fn)(void *arg, const char *dir, const char *name,
                                  const struct stat *st),
                       void *arg)
{
    char dir[PATH_MAX];
    if (blobs_dir(data_dir, dir, sizeof dir) != 0)
        return;
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        struct stat st;
        if (len != 64 + 4 || strcmp(n + 64, ".tar") != 0 ||
            fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        fn(arg, dir, n, &st);
    }
    closedir(d);
}

static void add_size(void *arg, const char *dir, const char *name, const struct stat *st)
{
    (void)dir;
    (void)name;
    *(int64_t *)arg += (int64_t)st->st_size;
}

int64_t blobs_total(const char *data_dir)
{
    int64_t total = 0;
    blobs_each(data_dir, add_size, &total);
    return total;
}

typedef struct {
    bool (*referenced)(void *ctx, const char *sha256_hex);
    void *ctx;
    int64_t now_s, grace_s;
    int removed;
} Sweep;

static void sweep_one(void *arg, const char *dir, const char *name, const struct stat *st)
{
    Sweep *s = arg;
    char sha[65];
    memcpy(sha, name, 64);
    sha[64] = '\0';
    if (s->now_s - (int64_t)st->st_mtime < s->grace_s || s->referenced(s->ctx, sha))
        return;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) < sizeof path && unlink(path) == 0)
        s->removed++;
}

int blobs_sweep(const char *data_dir, bool (*referenced)(void *ctx, const char *sha256_hex),
                void *ctx, int64_t now_s, int64_t grace_s)
{
    Sweep s = {referenced, ctx, now_s, grace_s, 0};
    blobs_each(data_dir, sweep_one, &s);
    return s.removed;
}
